"""Probes: scikit-learn estimators on activations, LYNX cue events and conformal early exit.

Modules (import what you need; nothing is imported here, so ``import probes`` stays cheap):

- ``estimators``: LinearProbe, RidgeProbe, DiffMeanProbe, LynxMLPProbe and the ``PROBES`` registry
  (``mlp``: the LYNX MLP; ``numerics``: label encoding, class weights, standardisation, links)
- ``io``: save_probe / load_probe (safetensors + JSON, never pickle)
- ``conformal``: Mondrian split conformal calibration and the validity curve
- ``lynx``: LynxConfig, cue events, feature layers per depth, probe training
- ``exits``: the exit rule, LYNX and baseline policies, Pareto data, label base rate
- ``datasets``: event features, forced-exit labels and layer sweeps from a HookedModel
  (``forced``: features and labels from one pass per rollout)
- ``value_dataset``: states at every word of a reasoning text, with the running value
- ``intention``: intention entropy, effective dimensionality, recoverability
- ``rollouts``: rollouts generated one cached batch at a time
- ``lynx_splits``, ``lynx_result``: the LYNX job's splits and its result files
- ``figures``: plotly figures of the above (``figure_<what>``)
- ``jobs``: ``thinklens run lynx`` and ``thinklens run probe``
"""

"""Probes: scikit-learn estimators on activations, LYNX cue events and conformal early exit.

Modules (import what you need; nothing is imported here, so ``import probes`` stays cheap):

- ``estimators``: LinearProbe, RidgeProbe, DiffMeanProbe, LynxMLPProbe and the ``PROBES`` registry
- ``io``: save_probe / load_probe (safetensors + JSON, never pickle)
- ``conformal``: Mondrian split conformal calibration and the validity curve
- ``lynx``: LynxConfig, cue events, feature layers per depth, probe training
- ``exits``: the exit rule, LYNX and baseline policies, Pareto data, label base rate
- ``datasets``: event features, forced-exit labels and layer sweeps from a HookedModel
- ``intention``: intention entropy, effective dimensionality, recoverability
- ``figures``: plotly figures of the above
"""

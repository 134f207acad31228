"""Probes: scikit-learn estimators on activations, LYNX cue events and conformal early exit.

Modules (the public names below import from the package, ``from probes import LinearProbe``; each loads its
module on first use, so ``import probes`` stays cheap):

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

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "LinearProbe": "probes.estimators", "RidgeProbe": "probes.estimators", "DiffMeanProbe": "probes.estimators",
    "PROBES": "probes.estimators",
    "LynxMLPProbe": "probes.mlp",
    "save_probe": "probes.io", "load_probe": "probes.io", "read_probe_meta": "probes.io",
    "MondrianCalibrator": "probes.conformal", "ValidityCurve": "probes.conformal",
    "validity_curve": "probes.conformal", "prediction_sets": "probes.conformal",
    "LynxConfig": "probes.lynx", "CueEvent": "probes.lynx", "find_cue_events": "probes.lynx",
    "lynx_layers": "probes.lynx", "lynx_sites": "probes.lynx", "train_lynx_probe": "probes.lynx",
    "RolloutTable": "probes.exits", "EventTable": "probes.exits", "ExitReport": "probes.exits",
    "evaluate_exit_policies": "probes.exits", "pareto_front": "probes.exits",
    "event_features": "probes.datasets", "forced_exit_labels": "probes.datasets", "ForcedExits": "probes.datasets",
    "layer_sweep": "probes.datasets", "LayerSweep": "probes.datasets", "prompt_states": "probes.datasets",
    "intention_entropy": "probes.intention", "effective_dimensionality": "probes.intention",
    "recoverability": "probes.intention", "Recoverability": "probes.intention",
    "ProbeJobConfig": "probes.jobs.probe",
    "LynxJobConfig": "probes.config",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import probes`` loads none of them,
``from probes import X`` loads X's module only, and ``dir(probes)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

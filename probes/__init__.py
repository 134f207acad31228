"""Probes: scikit-learn estimators on activations, LYNX cue events and conformal early exit.

Modules (the public names below import from the package, ``from thinklens.probes import LinearProbe``; each loads its
module on first use, so ``import thinklens.probes`` stays cheap):

- ``estimators``: LinearProbe, RidgeProbe, DiffMeanProbe, LynxMLPProbe and the ``PROBES`` registry
  (``mlp``: the LYNX MLP; ``numerics``: label encoding, class weights, standardisation, links)
- ``io``: save_probe / load_probe (safetensors + JSON, never pickle)
- ``conformal``: Mondrian split conformal calibration and the validity curve
- ``lynx``: LynxConfig, cue events, feature layers per depth, probe training
- ``exits``: the exit rule, LYNX and baseline policies, Pareto data, label base rate
- ``exit_gate``: the discrimination gate of LYNX's exits (an uninformative probe abstains)
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
    "LinearProbe": "thinklens.probes.estimators", "RidgeProbe": "thinklens.probes.estimators",
    "DiffMeanProbe": "thinklens.probes.estimators",
    "PROBES": "thinklens.probes.estimators",
    "LynxMLPProbe": "thinklens.probes.mlp",
    "save_probe": "thinklens.probes.io", "load_probe": "thinklens.probes.io", "read_probe_meta": "thinklens.probes.io",
    "MondrianCalibrator": "thinklens.probes.conformal", "ValidityCurve": "thinklens.probes.conformal",
    "validity_curve": "thinklens.probes.conformal", "prediction_sets": "thinklens.probes.conformal",
    "LynxConfig": "thinklens.probes.lynx", "CueEvent": "thinklens.probes.lynx", "find_cue_events": "thinklens.probes.lynx",
    "lynx_layers": "thinklens.probes.lynx", "lynx_sites": "thinklens.probes.lynx", "train_lynx_probe": "thinklens.probes.lynx",
    "RolloutTable": "thinklens.probes.exits", "EventTable": "thinklens.probes.exits", "ExitReport": "thinklens.probes.exits",
    "evaluate_exit_policies": "thinklens.probes.exits", "pareto_front": "thinklens.probes.exits",
    "event_features": "thinklens.probes.datasets", "forced_exit_labels": "thinklens.probes.datasets",
    "ForcedExits": "thinklens.probes.datasets",
    "layer_sweep": "thinklens.probes.datasets", "LayerSweep": "thinklens.probes.datasets", "prompt_states": "thinklens.probes.datasets",
    "intention_entropy": "thinklens.probes.intention", "effective_dimensionality": "thinklens.probes.intention",
    "recoverability": "thinklens.probes.intention", "Recoverability": "thinklens.probes.intention",
    "ProbeJobConfig": "thinklens.probes.jobs.probe",
    "LynxJobConfig": "thinklens.probes.config",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import thinklens.probes`` loads none of them,
``from thinklens.probes import X`` loads X's module only, and ``dir(probes)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

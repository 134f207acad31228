"""Analyses: held-out evaluation, the explorer (entropy, logit lens) and MI peaks (:mod:`analyses.mi`).

The public names below are importable from the package (``from analyses import ExploreResult, summarize_eval``); each loads
its module on first use, and ``analyses.mi`` holds the MI-peaks names.
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ExploreResult": "analyses.explore",
    "summarize_eval": "analyses.evaluation",
    "EvalJobConfig": "analyses.jobs.eval",
    "MIPeaksJobConfig": "analyses.mi.config",
    "mi": "analyses.mi",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import analyses`` loads none of them,
``from analyses import X`` loads X's module only, and ``dir(analyses)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

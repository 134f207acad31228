"""Analyses: held-out evaluation, the explorer (entropy, logit lens), MI peaks (:mod:`thinklens.analyses.mi`) and the
lenses (:mod:`thinklens.analyses.lens`).

The public names below are importable from the package (``from thinklens.analyses import ExploreResult, summarize_eval``); each loads
its module on first use, and ``thinklens.analyses.mi`` holds the MI-peaks names.
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ExploreResult": "thinklens.analyses.explore",
    "summarize_eval": "thinklens.analyses.evaluation",
    "EvalJobConfig": "thinklens.analyses.jobs.eval",
    "MIPeaksJobConfig": "thinklens.analyses.mi.config",
    "mi": "thinklens.analyses.mi",
    "lens": "thinklens.analyses.lens",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import thinklens.analyses`` loads none of them,
``from thinklens.analyses import X`` loads X's module only, and ``dir(analyses)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

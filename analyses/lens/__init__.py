"""Lenses: the logit lens and the tuned lens (Belrose et al. 2023, arXiv 2303.08112), measured against each other on
held-out text and read along a trace's steps and blocks (``thinklens run tuned-lens``; docs/lens.md).

The public names below are importable from the package; each loads its module on first use.

Example:
    >>> from thinklens.analyses.lens import TunedLens
    >>> TunedLens(d_model=8, n_layers=3).layers
    (0, 1)
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "AnswerLens": "thinklens.analyses.lens.along_trace",
    "FinalDistribution": "thinklens.analyses.lens.lens_training",
    "LensTexts": "thinklens.analyses.lens.lens_training",
    "TunedLens": "thinklens.analyses.lens.translators",
    "answer_target": "thinklens.analyses.lens.along_trace",
    "collect_states": "thinklens.analyses.lens.lens_training",
    "figure_answer_lens": "thinklens.analyses.lens.figures",
    "figure_kl_by_layer": "thinklens.analyses.lens.figures",
    "kl_by_layer": "thinklens.analyses.lens.lens_training",
    "lens_logits": "thinklens.analyses.lens.translators",
    "load_lens": "thinklens.analyses.lens.translators",
    "read_along": "thinklens.analyses.lens.along_trace",
    "trace_states": "thinklens.analyses.lens.along_trace",
    "train_translators": "thinklens.analyses.lens.lens_training",
}
"""Public name -> defining module, imported on first use (PEP 562)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

"""thinklens: see how language models reason from the inside, and act on it.

Names are imported on first use (torch loads only when a model-facing name is touched), so the CLI
starts fast.

Example:
    >>> from thinklens import HookedModel, Site
    >>> Site.parse("resid_post.2")
    Site(kind='resid_post', layer=2)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from thinklens.errors import ThinklensError

if TYPE_CHECKING:
    from thinklens.formats import PromptFormat, format_for
    from thinklens.interventions import AddVector, HookFn, InjectEmbeddings, RepeatBlock, ReplaceActivation
    from thinklens.jobs import JobResult, run_job
    from thinklens.model import HookedModel
    from thinklens.sites import Site, parse_sites
    from thinklens.trace import ActivationBatch, Trace

_LAZY = {
    "ActivationBatch": "thinklens.trace", "Trace": "thinklens.trace",
    "AddVector": "thinklens.interventions", "HookFn": "thinklens.interventions",
    "InjectEmbeddings": "thinklens.interventions", "RepeatBlock": "thinklens.interventions",
    "ReplaceActivation": "thinklens.interventions", "HookedModel": "thinklens.model",
    "Site": "thinklens.sites", "parse_sites": "thinklens.sites", "run_job": "thinklens.jobs",
    "JobResult": "thinklens.jobs", "format_for": "thinklens.formats", "PromptFormat": "thinklens.formats",
}

__all__ = [
    "ActivationBatch", "AddVector", "HookFn", "HookedModel", "InjectEmbeddings", "JobResult", "PromptFormat",
    "RepeatBlock", "ReplaceActivation",
    "Site", "ThinklensError", "Trace", "format_for", "parse_sites", "run_job",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'thinklens' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy names too, so ``dir(thinklens)`` and tab completion (Jupyter, IPython) list them before use."""
    return sorted(set(globals()) | set(_LAZY))

"""thinklens: see how language models reason from the inside, and act on it.

The core, from the bottom layer up (docs/architecture.md, "Layers", which a test holds): :mod:`thinklens.tasks`
(the synthetic task) and :mod:`thinklens.data` (problems, prompt formats, answers), :mod:`thinklens.engine` (any HF
causal LM behind one hook layer), :mod:`thinklens.generation` (traced, KV-cached decoding), then
:class:`~thinklens.engine.model.HookedModel` over them, :mod:`thinklens.runs` (the job contract; its run folders and
config groups sit at the bottom), :mod:`thinklens.calibration` (planted/null settings; its statistics and findings sit
at the bottom) and :mod:`thinklens.zoo` (the embedded models). The capabilities, above the core and side by side:
:mod:`thinklens.probes`, :mod:`thinklens.steering`, :mod:`thinklens.latent` and :mod:`thinklens.analyses`, whose
sources are the repository's ``probes/``, ``steering/``, ``latent/`` and ``analyses/`` folders (pyproject's
``package-dir`` maps them).

Names are imported on first use (torch loads only when a model-facing name is touched), so the CLI
starts fast.

Example:
    >>> from thinklens import HookedModel, Site
    >>> Site.parse("resid_post.2")
    Site(kind='resid_post', layer=2)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.lazy import CAPABILITIES  # the package's own module: no capability is imported before the finder


class _CheckoutFinder(importlib.abc.MetaPathFinder):
    """``thinklens.<capability>`` from the repository's ``<capability>/`` folder, for a source checkout used
    without installing (``PYTHONPATH=.``, as the GPU machine runs it): the mapping pyproject's ``package-dir``
    makes for an install. Only those four names, and only beside this checkout's pyproject.toml. (``thinklens/probes``
    etc. are also links to those folders, for editors that read the file tree; this finder comes first, so a module's
    ``__file__`` is its folder's, never the link's.) ``import probes`` by the folder's own name is refused
    (:func:`thinklens.lazy.refuse_generic_name`), as an install has no such name."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        head, _, name = fullname.partition(".")
        if head != __name__ or name not in CAPABILITIES:
            return None
        init = self.root / name / "__init__.py"
        if not init.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(init.parent)])


def _install_checkout_finder() -> None:
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and not any(isinstance(f, _CheckoutFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _CheckoutFinder(root))


_install_checkout_finder()

from thinklens.errors import ThinklensError  # noqa: E402

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat, format_for
    from thinklens.engine.interventions import AddVector, HookFn, InjectEmbeddings, RepeatBlock, ReplaceActivation
    from thinklens.engine.model import HookedModel
    from thinklens.engine.sites import Site, parse_sites
    from thinklens.generation.trace import ActivationBatch, Trace
    from thinklens.runs.jobs import JobResult, run_job

_LAZY = {
    "ActivationBatch": "thinklens.generation.trace", "Trace": "thinklens.generation.trace",
    "AddVector": "thinklens.engine.interventions", "HookFn": "thinklens.engine.interventions",
    "InjectEmbeddings": "thinklens.engine.interventions", "RepeatBlock": "thinklens.engine.interventions",
    "ReplaceActivation": "thinklens.engine.interventions", "HookedModel": "thinklens.engine.model",
    "Site": "thinklens.engine.sites", "parse_sites": "thinklens.engine.sites", "run_job": "thinklens.runs.jobs",
    "JobResult": "thinklens.runs.jobs", "format_for": "thinklens.data.formats", "PromptFormat": "thinklens.data.formats",
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
    """The public names, lazy ones included, so ``dir(thinklens)`` and tab completion (Jupyter, IPython) list them
    before use, and not this module's own imports (``Any``, ``Path``, ``sys``)."""
    return sorted({*__all__, "CAPABILITIES", "__version__"})

"""A run as the pages name it: ``<kind>/<run id>``, the folder relative to the runs root (the trace viewer's
``run=``), or a validation setting's own run inside its validate run; what kind of run it is.

The trace viewer (``traces``) and its model-side part (``trace_lens``) both read it, so it sits below them.

Example:
    >>> run_kind("lynx/demo")
    'lynx'
"""

from __future__ import annotations

import json
from pathlib import Path

from thinklens.errors import ThinklensError
from thinklens.runs.folders import validate_id


def run_kind(run: str, root: Path | None = None) -> str:
    """The kind of a run given as ``<kind>/<run id>`` (or, for a validation setting's own run, the path of its folder
    under the runs root, ``validate/<id>/settings/<key>/<run>``, whose meta.json names its kind); a clear error for
    anything else."""
    parts = Path(run).parts
    try:
        if len(parts) < 2 or any(p in ("..", ".") for p in parts):
            raise ValueError(run)
        for p in parts:
            validate_id(p, "run path part")
    except (ValueError, ThinklensError):
        raise ThinklensError.of("run", run, "<kind>/<run id> (a run folder under the runs root)",
                                "open the viewer from a page's link, or pick a run in its run box") from None
    if len(parts) == 2 or root is None:
        return parts[0]
    meta = Path(root) / run / "meta.json"
    try:
        return str(json.loads(meta.read_text()).get("kind") or parts[-2])
    except (OSError, ValueError):
        return parts[-2]

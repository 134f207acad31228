"""The entry points of a registry group (jobs, validation settings), the same from an install and from a checkout.

Installed, a group's entry points come from each distribution's metadata. A source checkout used without installing
(``PYTHONPATH=.``, ``python -m thinklens`` from the repository root) has no metadata for thinklens, and an install
older than the checkout has stale metadata; so when thinklens is imported from a checkout (a ``pyproject.toml``
naming the project ``thinklens`` beside the package), that file's ``[project.entry-points]`` stand for the thinklens
distribution's, and other distributions' entry points (plugins) are kept.

Example:
    >>> names = {ep.name for ep in entry_points("thinklens.jobs")}
    >>> {"capture", "import-traces", "validate"} <= names
    True
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

#: The project's name in pyproject.toml and in the installed metadata.
PROJECT = "thinklens"


def checkout_pyproject() -> Path | None:
    """The ``pyproject.toml`` of the checkout thinklens is imported from, or None for an installed package."""
    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    return path if path.is_file() else None


def _checkout_entry_points(group: str) -> list[metadata.EntryPoint] | None:
    """This checkout's entry points of ``group`` from its pyproject.toml; None when not in a checkout of thinklens."""
    path = checkout_pyproject()
    if path is None:
        return None
    try:
        import tomllib  # lazy: optional dependency (tomllib: Python 3.11+)
    except ImportError:  # Python 3.10: no TOML reader in the standard library; the installed metadata answers
        return None
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if project.get("name") != PROJECT:
        return None
    table = project.get("entry-points", {}).get(group, {})
    return [metadata.EntryPoint(name, value, group) for name, value in table.items()]


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The entry points of ``group``: this checkout's own (from its pyproject.toml) and other distributions', or, for
    an installed thinklens, every installed distribution's."""
    installed = list(metadata.entry_points(group=group))
    own = _checkout_entry_points(group)
    if own is None:
        return installed
    names = {ep.name for ep in own}
    others = [ep for ep in installed if not (getattr(ep, "dist", None) is not None and ep.dist.name == PROJECT)
              and ep.name not in names]
    return [*own, *others]

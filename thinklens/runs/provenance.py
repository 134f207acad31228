"""The code version a run was computed with, and the resume check that compares it with the code running now.

Every run folder's meta.json gets a ``code`` record when the folder is created (:func:`code_version`): a
content hash of the installed package's source (the ``.py`` files of thinklens's own folder and of its
capability subpackages, whose folders sit beside it, so two dirty trees on one commit are told apart),
the hash of each package, the git commit and dirty flag when the code runs from a git checkout ("unknown"
otherwise), and the versions of torch, transformers, sae-lens, nnsight and thinklens. Resuming a run whose
recorded source hash differs from the running code's is refused (:func:`check_resume`) unless ``allow_stale``
is given, which is then recorded.

Everything is computed once per process (about 300 files read) and never raises: what cannot be found
is written as "unknown".

Example:
    >>> code = code_version()
    >>> sorted(code)
    ['git_commit', 'git_dirty', 'package_hashes', 'source_files', 'source_hash', 'versions']
    >>> check_resume({"source_hash": code["source_hash"]}, code, where="runs/demo/r1") is None
    True
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from thinklens.errors import ThinklensError, opt
from thinklens.lazy import CAPABILITIES, package_dir

PACKAGES = ("thinklens", *(f"thinklens.{name}" for name in CAPABILITIES))
"""The packages whose ``.py`` files make up the source hash."""
DISTRIBUTIONS = ("torch", "transformers", "sae-lens", "nnsight", "thinklens")
"""The installed distributions whose versions a run records."""
UNKNOWN = "unknown"


def _hash_tree(root: Path) -> tuple[str, int]:
    """sha256 over the sorted relative paths and contents of every ``.py`` file under ``root``, and the file count."""
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        try:
            h.update(p.read_bytes())
        except OSError:  # a file removed while we read: the hash still differs from a clean tree's
            h.update(b"<unreadable>")
        h.update(b"\0")
    return h.hexdigest(), len(files)


@functools.lru_cache(maxsize=None)
def _trees(packages: tuple[str, ...]) -> dict[str, tuple[str, int]]:
    """(source hash, .py file count) per package, read once per process."""
    out = {}
    for name in packages:
        d = package_dir(name)
        out[name] = _hash_tree(d) if d is not None else ("not installed", 0)
    return out


def package_hashes(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Each package's source hash (its ``.py`` files), "not installed" for a missing one; cached per process."""
    return {k: h for k, (h, _) in _trees(packages).items()}


def source_hash(packages: tuple[str, ...] = PACKAGES) -> str:
    """One hash over every package's source hash: equal exactly when no ``.py`` file of them changed."""
    per = package_hashes(packages)
    return hashlib.sha256("".join(f"{k}={v}\n" for k, v in sorted(per.items())).encode()).hexdigest()


def _source_files(packages: tuple[str, ...] = PACKAGES) -> int:
    return sum(n for _, n in _trees(packages).values())


def _git(root: Path, *args: str) -> str | None:
    try:  # --no-optional-locks: never take .git/index.lock, so a concurrent commit in the checkout is not blocked
        res = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def git_state() -> dict[str, Any]:
    """``{"git_commit": sha, "git_dirty": bool}`` of the checkout the thinklens package runs from, else "unknown"."""
    here = package_dir("thinklens")
    root = here.parent if here is not None else None
    if root is None or not (root / ".git").exists():
        return {"git_commit": UNKNOWN, "git_dirty": UNKNOWN}
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain")
    return {"git_commit": commit.strip() if commit else UNKNOWN,
            "git_dirty": bool(status.strip()) if status is not None else UNKNOWN}


@functools.lru_cache(maxsize=None)
def versions() -> dict[str, str]:
    """The installed version of each of :data:`DISTRIBUTIONS` ("not installed" when absent)."""
    out = {}
    for name in DISTRIBUTIONS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def code_version() -> dict[str, Any]:
    """What meta.json's ``code`` records: source hash (and per package), file count, git state, versions."""
    return {"source_hash": source_hash(), "package_hashes": package_hashes(),
            "source_files": _source_files(), **git_state(), "versions": dict(versions())}


def changed_packages(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The packages whose source hash differs between two code records (all of them when one lacks the detail)."""
    old, new = recorded.get("package_hashes") or {}, current.get("package_hashes") or {}
    if not old or not new:
        return sorted(new or old)
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def check_resume(recorded: dict[str, Any] | None, current: dict[str, Any], *, where: str,
                 allow_stale: bool = False) -> dict[str, Any] | None:
    """Compare the code a run was started with (``recorded``) with the code running now (``current``).

    Returns None when they are the same, or when the run predates code records (nothing to compare).
    A difference raises a :class:`ThinklensError` that names what changed, unless ``allow_stale``: then it
    returns the record of the stale resume (what changed, old and new hashes and commits) for meta.json.

    Example:
        >>> old = {"source_hash": "a" * 64, "package_hashes": {"probes": "1", "zoo": "2"}, "git_commit": "c1"}
        >>> new = {"source_hash": "b" * 64, "package_hashes": {"probes": "1", "zoo": "3"}, "git_commit": "c1"}
        >>> check_resume(old, new, where="runs/x/r", allow_stale=True)["changed"]
        ['zoo']
        >>> check_resume(old, new, where="runs/x/r")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        thinklens.errors.ThinklensError: bad resume of runs/x/r: received code whose source changed since the run started
        (packages changed: zoo; source hash aaaaaaaaaaaa -> bbbbbbbbbbbb; git commit c1 -> c1); expected the code the
        cached work was computed with; fix: pass allow_stale=True to reuse the cached work anyway, or a new run_id= to
        start over
    """
    old = (recorded or {}).get("source_hash")
    new = current.get("source_hash")
    if not old or old == UNKNOWN or old == new:
        return None
    changed = changed_packages(recorded or {}, current)
    what = (f"packages changed: {', '.join(changed) or 'none named'}; source hash {old[:12]} -> {str(new)[:12]}; "
            f"git commit {str((recorded or {}).get('git_commit', UNKNOWN))[:12]} -> {str(current.get('git_commit', UNKNOWN))[:12]}")
    if not allow_stale:
        raise ThinklensError(
            f"bad resume of {where}: received code whose source changed since the run started ({what}); "
            "expected the code the cached work was computed with; "
            f"fix: pass {opt('allow_stale', True)} to reuse the cached work anyway, or a new {opt('run_id')} to start over")
    return {"changed": changed, "from_source_hash": old, "to_source_hash": new,
            "from_git_commit": (recorded or {}).get("git_commit", UNKNOWN),
            "to_git_commit": current.get("git_commit", UNKNOWN)}

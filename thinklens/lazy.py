"""Lazy package exports (PEP 562): ``from thinklens.probes import LinearProbe`` imports ``thinklens.probes.estimators`` only then.

A capability package lists its public names and their modules; the package's ``__getattr__`` imports a
module on first use of one of its names, and ``__dir__`` lists every name, so ``dir()`` and tab completion
in Jupyter show them before any is imported.

Example:
    >>> import sys, types
    >>> pkg = types.ModuleType("demo_pkg"); sys.modules["demo_pkg"] = pkg
    >>> pkg.__getattr__, pkg.__dir__, pkg.__all__ = lazy_exports("demo_pkg", {"sqrt": "math"})
    >>> "sqrt" in dir(pkg), pkg.sqrt(9.0), "sqrt" in vars(pkg)
    (True, 3.0, True)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

CAPABILITIES = ("probes", "steering", "latent", "analyses")
"""Subpackages of thinklens whose sources sit in the repository's top-level folders of these names (exported as
``thinklens.CAPABILITIES``)."""


def package_dir(name: str) -> Path | None:
    """The folder of an installed package (a subpackage imports its parent), or None when it is not installed."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def refuse_generic_name(package: str) -> None:
    """Refuse a capability folder imported by its folder's name (``import probes.conformal`` from a checkout's root,
    where the folder sits on ``sys.path``): it would load a second copy of ``thinklens.probes.conformal``, with its
    own classes and state. Installed, the name does not exist at all; from a checkout it says which name to use.

    Example:
        >>> refuse_generic_name("thinklens.probes")
        >>> refuse_generic_name("probes")
        Traceback (most recent call last):
        ...
        ImportError: 'probes' is thinklens's folder of thinklens.probes, not a package: import thinklens.probes
    """
    if package in CAPABILITIES:
        raise ImportError(f"{package!r} is thinklens's folder of thinklens.{package}, not a package: import thinklens.{package}",
                          name=package)


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` from ``exports`` (public name -> defining module).

    A name is imported from its module on first access and cached in the package (the next access is a
    plain attribute lookup). A name whose target is ``<package>.<name>`` is that submodule (``"mi": "thinklens.analyses.mi"``):
    a function named like its own module (``thinklens.analyses.explore.explore``) is not exported, since importing the
    submodule would rebind the package attribute to the module.
    """
    refuse_generic_name(package)
    table = dict(exports)

    def __getattr__(name: str) -> object:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        target = table[name]
        module = importlib.import_module(target)
        value = module if target == f"{package}.{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__, sorted(table)

"""The layers of thinklens (docs/architecture.md, "Layers"): the import graph of the package and the capability folders
has no circle, and no module imports a layer above its own.

Every import counts, at module top, inside a function or under ``if TYPE_CHECKING:`` (a function-local import is
still a dependency, and a type-only one says the module knows the other's types). Relative imports are resolved;
``from a import b`` is an edge to the module ``a.b`` when there is one, else to ``a``. Dynamic imports
(``importlib.import_module``, entry points, the packages' lazy exports) are not edges: that is how the core reaches
the capabilities' jobs without importing them.

``LAYERS`` below is the one definition of the order; the docs draw it.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CAPABILITIES = ("probes", "steering", "latent", "analyses")

#: Low to high. A module belongs to the layer of the longest name in the list that is it or a package above it
#: (``thinklens`` itself, the package's front, matches itself only). One entry of several names is a rank of layers
#: side by side: the capabilities, none of which imports another. A module may import its own layer and any layer
#: of a lower rank, never a higher one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("thinklens.errors", "thinklens.lazy")),
    # what everything writes and checks with: config groups and their CLI, run folders and their provenance, resumable
    # stages, the statistics and findings, the names of the zoo
    ("foundations", ("thinklens.runs.configcli", "thinklens.runs.folders", "thinklens.runs.provenance",
                     "thinklens.runs.stages", "thinklens.runs.interrupts", "thinklens.runs.entry_points",
                     "thinklens.runs.headlines", "thinklens.runs.listing", "thinklens.calibration.stats",
                     "thinklens.calibration.tost", "thinklens.calibration.findings", "thinklens.zoo.registry")),
    ("problems", ("thinklens.tasks", "thinklens.data")),
    # sites, adapters, the base model every part below HookedModel takes, hooks, interventions, training, real models
    ("engine", ("thinklens.engine",)),
    # the decode loop and everything that generates or streams: traces, budgets, the nnsight backend, the store
    ("generation", ("thinklens.generation", "thinklens.engine.nnsight_backend", "thinklens.engine.activation_store")),
    ("model", ("thinklens.engine.model",)),
    # the job contract and the jobs of the core packages (capture, import-traces, validate)
    ("jobs", ("thinklens.runs", "thinklens.calibration", "thinklens.engine.capture", "thinklens.data.import_traces")),
    ("zoo", ("thinklens.zoo",)),
    ("probes | steering | latent | analyses", tuple(f"thinklens.{c}" for c in CAPABILITIES)),
    ("front", ("thinklens", "thinklens.cli", "thinklens.__main__")),
)
ABOVE = ("tools", "app", "bench", "results", "tests")
"""The repository's folders above the package: nothing in it imports them."""


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of thinklens/ and the capability folders (installed as thinklens.<c>)."""
    out = {}
    roots = [(ROOT / "thinklens", "thinklens")] + [(ROOT / c, f"thinklens.{c}") for c in CAPABILITIES]
    for base, prefix in roots:
        for f in sorted(base.rglob("*.py")):
            parts = f.relative_to(base).with_suffix("").parts
            if "__pycache__" in parts or (prefix == "thinklens" and parts[0] in CAPABILITIES):  # the links, not the folders
                continue
            out[".".join((prefix, *parts[:-1])) if parts[-1] == "__init__" else ".".join((prefix, *parts))] = f
    return out


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int

    def where(self, mods: dict[str, Path]) -> str:
        return f"{mods[self.source].relative_to(ROOT)}:{self.line} imports {self.target}"


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported name, line)`` of every import statement in the file, wherever it sits (relative ones resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module, node.lineno) for a in node.names]
    return found


def graph() -> tuple[dict[str, Path], list[Edge], list[str]]:
    """The modules, the edges between them (each once per line), and the imports of the folders above the package."""
    mods = modules()
    edges, above = set(), []
    for name, path in mods.items():
        for target, line in imports(name, path, mods):
            if target.split(".")[0] in ABOVE:
                above.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
            parts = target.split(".")
            while parts and ".".join(parts) not in mods:  # thinklens.engine.model.HookedModel -> thinklens.engine.model
                parts.pop()
            if parts and ".".join(parts) != name:
                edges.add(Edge(name, ".".join(parts), line))
    return mods, sorted(edges, key=lambda e: (e.source, e.line, e.target)), above


def circles(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    succ = defaultdict(list)
    for e in edges:
        succ[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def layer_of(module: str) -> tuple[int, str] | None:
    """``(rank, the name it matched)`` of a module: the longest name of :data:`LAYERS` that is it or a package above it."""
    best = None
    for rank, (_, names) in enumerate(LAYERS):
        for n in names:
            if module == n or (n != "thinklens" and module.startswith(n + ".")):
                if best is None or len(n) > len(best[1]):
                    best = (rank, n)
    return best


def _side(module: str) -> str | None:
    """Which capability a module belongs to (they share a rank and may not import each other)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in CAPABILITIES else None


def upward(mods: dict[str, Path], edges: list[Edge]) -> list[str]:
    bad = []
    for e in edges:
        (src, _), (dst, _) = layer_of(e.source), layer_of(e.target)
        if dst > src or (dst == src and _side(e.source) != _side(e.target)):
            bad.append(f"{e.where(mods)} ({LAYERS[src][0]} -> {LAYERS[dst][0]})")
    return bad


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """Top, function-local, ``TYPE_CHECKING`` and relative imports are all edges; a module named in ``from`` wins."""
    f = tmp_path / "mod.py"
    f.write_text("from typing import TYPE_CHECKING\nimport thinklens.errors\nfrom . import base\n"
                 "if TYPE_CHECKING:\n    from thinklens.engine.model import HookedModel\n"
                 "def f():\n    from ..generation.trace import Trace\n    from thinklens.engine import hooks\n")
    mods = {"thinklens.engine.base": f, "thinklens.engine.hooks": f}
    got = imports("thinklens.engine.x", f, mods)
    assert [name for name, _ in got] == ["typing", "thinklens.errors", "thinklens.engine.base", "thinklens.engine.model",
                                         "thinklens.generation.trace", "thinklens.engine.hooks"], got
    cycle = [Edge("a", "b", 1), Edge("b", "c", 1), Edge("c", "a", 1), Edge("c", "d", 1)]
    assert circles(["a", "b", "c", "d"], cycle) == [["a", "b", "c"]]
    assert layer_of("thinklens.engine.model")[1] == "thinklens.engine.model"
    assert layer_of("thinklens.engine.sites")[1] == "thinklens.engine" and layer_of("thinklens")[1] == "thinklens"


def test_every_module_has_a_layer():
    mods = modules()
    assert len(mods) > 200
    assert not [m for m in mods if layer_of(m) is None], "add the module's package to LAYERS"


def test_the_import_graph_has_no_circle():
    """Strongly connected components of the module graph are single modules: no file reaches back to itself."""
    mods, edges, _ = graph()
    found = circles(list(mods), edges)
    detail = [[e.where(mods) for e in edges if e.source in c and e.target in c] for c in found]
    assert not found, "\n\n".join(f"circle of {len(c)} modules:\n  " + "\n  ".join(d) for c, d in zip(found, detail))


def test_no_module_imports_a_layer_above_its_own():
    mods, edges, _ = graph()
    bad = upward(mods, edges)
    assert not bad, f"{len(bad)} upward imports (tests/core/test_layers.py LAYERS, docs/architecture.md):\n" + "\n".join(bad)


def test_nothing_in_the_package_imports_the_folders_above_it():
    assert not graph()[2]


def test_the_docs_draw_the_layers_in_this_order():
    """docs/architecture.md's "Layers" picture names every layer, top (front) to bottom (ground)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    picture = section.split("```", 2)[1]
    names = [line.split()[0] for line in picture.splitlines() if re.match(r"[a-z]", line)]
    expected = [n.split()[0] for n, _ in reversed(LAYERS)]
    assert names == expected, (names, expected)


if __name__ == "__main__":  # python tests/core/test_layers.py: the counts, and every circle and upward import
    mods, edges, above = graph()
    found, bad = circles(list(mods), edges), upward(mods, edges)
    print(f"modules={len(mods)} edges={len(edges)} circles={len(found)} "
          f"modules_in_circles={sum(map(len, found))} upward_imports={len(bad)}")
    for c in found:
        print("circle:", " ".join(c))
    print(*bad, *above, sep="\n", file=sys.stdout if bad or above else sys.stderr)

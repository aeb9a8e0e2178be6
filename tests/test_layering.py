"""Dependencies point one way: no import circle anywhere in the package, the packages in their
order (core <- inspect <- viz <- widgets <- magics, spark beside), the rooms of the core in theirs,
and the core never imports UI or Spark libraries.

The import graph is read from the source (every `import` and `from ... import`, whether at the
top of a module, inside a function or under `TYPE_CHECKING`: each is a dependency).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import deltaexplore

PACKAGE = Path(deltaexplore.__file__).parent

#: what each package may import besides itself (the front door, `deltaexplore/__init__.py`,
#: `_accessors.py` and `cli.py`, may import anything and is imported by nothing)
PACKAGES: dict[str, set[str]] = {
    "errors": set(),
    "storage": {"errors"},
    "core": {"errors", "storage"},
    "inspect": {"errors", "storage", "core"},
    "spark": {"errors", "storage", "core", "inspect"},
    "viz": {"errors", "storage", "core", "inspect"},
    "widgets": {"errors", "storage", "core", "inspect", "viz", "spark"},
    "magics": {"errors", "storage", "core", "inspect", "viz", "widgets", "spark"},
    "labserver": {"errors", "storage", "core"},  # the Jupyter server extension: which folders are tables
}
FRONT_DOOR = {"deltaexplore", "deltaexplore._accessors", "deltaexplore.cli"}

#: the rooms of the core, lowest first: a module imports only from its own floor and below
CORE_FLOORS: list[tuple[str, ...]] = [
    ("arguments", "arrow"),  # checks of public arguments, Arrow helpers
    ("protocol", "config", "deletion_vectors", "features", "partitions", "predicates", "schema"),  # + old paths
    ("log",),
    ("scan",),
    ("files", "history", "cdf"),
    ("snapshot",),
    ("table",),
    ("write",),
    ("operations",),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (a name imported from a package counts as the
    package, a submodule imported from it as the submodule)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [owner(a.name) or "" for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in modules else owner(base) or "")
            graph[module].update(t for t in targets if t.startswith("deltaexplore") and t != module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and module not in FRONT_DOOR else None


def _core_floor(module: str) -> int:
    room = module.split(".")[2]
    for floor, rooms in enumerate(CORE_FLOORS):
        if room in rooms:
            return floor
    raise AssertionError(f"{module} is in no room of CORE_FLOORS: place it there")


def test_the_graph_sees_imports_at_the_top_in_functions_and_under_type_checking():
    graph = import_graph()
    assert "deltaexplore.core.snapshot" in graph["deltaexplore.core.table"]  # at the top
    assert "deltaexplore.inspect" in graph["deltaexplore._accessors"]  # inside a function
    assert "deltaexplore.core.scan.stats_search" in graph["deltaexplore.core.scan.stats"]  # a submodule by name


def test_no_import_circle_anywhere_in_the_package():
    assert _cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_packages_import_only_the_layers_below_them():
    wrong = []
    for module, targets in import_graph().items():
        package = _package(module)
        for target in targets:
            if target in FRONT_DOOR and module not in FRONT_DOOR:
                wrong.append(f"{module} -> {target} (the front door imports, it is not imported)")
            target_package = _package(target)
            if package is None or target_package is None or target_package == package:
                continue
            if target_package not in PACKAGES[package]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_every_package_has_its_place():
    placed = set(PACKAGES) | {m.split(".")[1] for m in FRONT_DOOR if "." in m}
    assert {_module_name(p).split(".")[1] for p in PACKAGE.glob("*.py") if p.name != "__init__.py"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    } <= placed


def test_the_core_rooms_import_only_their_floor_and_below():
    wrong = []
    for module, targets in import_graph().items():
        if not module.startswith("deltaexplore.core."):
            continue
        floor = _core_floor(module)
        for target in targets:
            if target.startswith("deltaexplore.core.") and _core_floor(target) > floor:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_core_import_leaves_ui_and_spark_out():
    code = (
        "import sys, deltaexplore, deltaexplore.core.table, deltaexplore.core.scan.plan, deltaexplore.core.cdf,"
        " deltaexplore.core.operations;"
        "bad=[m for m in ('IPython','altair','ipywidgets','anywidget','pyspark') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

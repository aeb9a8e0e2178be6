"""Dependencies point one way: no import circle anywhere in the package, the packages in their
order (core <- inspect <- viz <- widgets <- magics, spark beside), the rooms of the core in theirs,
and the core never imports UI or Spark libraries.

The import graph is read from the source (every `import` and `from ... import`, whether at the
top of a module, inside a function or under `TYPE_CHECKING`: each is a dependency, so a circle
cannot hide behind a late import).

A function imports inside itself only what defers a heavy or optional library (`DEFERRABLE`):
every other import stands at the top of its module, where a reader sees what the module needs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
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
    ("protocol",),
    ("log",),
    ("scan",),
    ("files", "history", "cdf"),
    ("snapshot",),
    ("table",),
    ("follow",),  # a table followed as it changes
    ("write",),
    ("operations",),
]


#: third-party modules that a function may import when it runs rather than when its module is
#: imported: the optional extras of pyproject.toml and the required libraries that are slow to
#: import (`import deltaexplore` stays light: see tests/viz/test_viz_charts.py)
DEFERRABLE: dict[str, str] = {
    "pyspark": "extra spark",
    "pandas": "extra spark",
    "IPython": "extra notebook",
    "ipywidgets": "extra widgets",
    "anywidget": "extras viz, widgets",
    "altair": "extras viz, widgets",
    "vl_convert": "extras viz, widgets",
    "jupyter_server": "the JupyterLab server extension",
    "tornado": "the JupyterLab server extension",
    "s3fs": "extra s3",
    "gcsfs": "extra gcs",
    "adlfs": "extra azure",
    "deltalake": "peer engine (dev)",
    "duckdb": "peer engine (dev)",
    "fsspec": "object stores only (local tables never need it)",
    "polars": "required, but slow to import: the core reads a table without it",
    "pyarrow.dataset": "required, but slow to import: only a few writes need it",
    "pyarrow.parquet": "required, but slow to import: a log without checkpoints is read without it",
    "pyarrow.fs": "required, but slow to import (with pyarrow.parquet): opening a table needs no Arrow filesystem",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class Import:
    """One import statement: the names it imports (package modules resolved to their module, a
    submodule imported from a package to the submodule) and where it stands."""

    module: str
    line: int
    names: tuple[str, ...]
    where: str
    #: each name imported, whole (`from a.b import c` -> `a.b.c`)
    whole: tuple[str, ...] = ()  # "top" (runs on import), "function" (runs on call) or "type_checking" (never runs)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


_PACKAGES_WITH_INIT = {_module_name(p) for p in PACKAGE.rglob("__init__.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """Every import of one module, placed."""

    def owner(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Import] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                names = tuple(owner(a.name) or a.name for a in child.names)
                out.append(Import(module, child.lineno, names, where, tuple(a.name for a in child.names)))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, *([child.module] if child.module else [])])
                names = []
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    names.append(sub if sub in modules or not base.startswith("deltaexplore") else owner(base) or base)
                out.append(Import(module, child.lineno, tuple(names), where, tuple(f"{base}.{a.name}" for a in child.names)))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "function")
            elif isinstance(child, ast.If) and _is_type_checking(child) and where == "top":
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), "type_checking")
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), "top")
            else:
                visit(child, where)

    visit(ast.parse(path.read_text(encoding="utf-8")), "top")
    return out


def all_imports() -> list[Import]:
    modules = _modules()
    return [i for module, path in modules.items() for i in imports_of(module, path, modules)]


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, wherever the import stands."""
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for i in all_imports():
        graph[i.module].update(n for n in i.names if n.startswith("deltaexplore") and n != i.module)
    return graph


def _deferrable(name: str) -> str | None:
    for lib in DEFERRABLE:
        if name == lib or name.startswith(lib + "."):
            return lib
    return None


def _packages_of(module: str) -> list[str]:
    """A module and the packages Python imports before it (`a.b.c` -> `a`, `a.b`, `a.b.c`)."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def heavy_loads() -> dict[str, set[str]]:
    """module -> the `DEFERRABLE` libraries that importing it loads: through the imports that run
    on import, in it, in the packages Python imports before it and in everything they import."""
    modules = _modules()
    top: dict[str, set[str]] = {m: set() for m in modules}
    for i in all_imports():
        if i.where == "top":
            top[i.module].update(i.names)

    def loads(module: str) -> set[str]:
        out: set[str] = set()
        seen: set[str] = set()
        todo = [module]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for name in top.get(current, set()) | set(_packages_of(current)):
                if name.startswith("deltaexplore"):
                    todo.extend(p for p in _packages_of(name) if p in modules)
                elif (lib := _deferrable(name)) is not None:
                    out.add(lib)
        return out

    return {m: loads(m) for m in modules}


def late_imports_that_defer_nothing(imports: list[Import], loads: dict[str, set[str]]) -> list[str]:
    """`file:line name` of every import inside a function that loads no `DEFERRABLE` library
    which its module does not load already."""
    wrong = []
    for i in imports:
        if i.where != "function":
            continue
        for name in i.names:
            if name.startswith("deltaexplore"):
                deferred = loads.get(name, set()) - loads[i.module]
            else:
                lib = _deferrable(name)
                deferred = {lib} - loads[i.module] if lib else set()
            if not deferred:
                path = i.module.replace(".", "/") + ("/__init__.py" if i.module in _PACKAGES_WITH_INIT else ".py")
                wrong.append(f"{path}:{i.line} imports {name} inside a function")
    return wrong


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

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)  # other tests of this process (deep JSON) rely on the default
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
    assert "deltaexplore.core.table" in graph["deltaexplore.core.operations.vacuum"]  # under TYPE_CHECKING only
    placed = {(i.module, n): i.where for i in all_imports() for n in i.names}
    assert placed["deltaexplore.core.operations.vacuum", "deltaexplore.core.table"] == "type_checking"
    assert placed["deltaexplore._accessors", "deltaexplore.inspect"] == "function"


def test_no_import_circle_anywhere_in_the_package():
    assert _cycles(import_graph()) == []


def test_functions_import_only_what_defers_a_heavy_or_optional_library():
    wrong = late_imports_that_defer_nothing(all_imports(), heavy_loads())
    assert wrong == [], (
        "move these imports to the top of their module (a function imports only what defers a library of"
        " DEFERRABLE that its module does not load already; an import circle is fixed in the structure):\n" + "\n".join(wrong)
    )


def test_the_late_import_check_finds_an_import_that_defers_nothing():
    loads = {"deltaexplore.viz.files": {"altair", "polars"}, "deltaexplore.inspect": {"polars"}, "deltaexplore.x": set()}
    imports = [
        Import("deltaexplore.viz.files", 20, ("deltaexplore.inspect",), "function"),  # viz loads polars already
        Import("deltaexplore.viz.files", 21, ("textwrap",), "function"),  # the standard library
        Import("deltaexplore.x", 22, ("deltaexplore.inspect",), "function"),  # defers polars: fine
        Import("deltaexplore.x", 23, ("pyspark.sql",), "function"),  # optional: fine
        Import("deltaexplore.x", 24, ("textwrap",), "top"),
    ]
    assert late_imports_that_defer_nothing(imports, loads) == [
        "deltaexplore/viz/files.py:20 imports deltaexplore.inspect inside a function",
        "deltaexplore/viz/files.py:21 imports textwrap inside a function",
    ]


def test_the_late_import_check_knows_what_a_module_loads():
    loads = heavy_loads()
    assert loads["deltaexplore"] == set()  # `import deltaexplore` stays light
    assert "polars" in loads["deltaexplore.inspect.formatting"]  # through the package deltaexplore.inspect
    assert "polars" in loads["deltaexplore.viz.files"]
    assert "altair" not in loads["deltaexplore.viz.files"] | loads["deltaexplore.widgets.views"]  # specs are dicts
    assert "pyspark" not in loads["deltaexplore.spark.reader"]
    assert "fsspec" in loads["deltaexplore.storage.fsspec_store"] and "fsspec" not in loads["deltaexplore.storage"]


def private_imports_across_packages(imports: list[Import]) -> list[str]:
    """`module:line -> name` of every private name (a `_` part) imported from another package."""
    wrong = []
    for i in imports:
        for name in i.whole:
            if not name.startswith("deltaexplore.") or name == "deltaexplore.core.scan._stats_kernel":
                continue
            private = any(part.startswith("_") and not part.startswith("__") for part in name.split(".")[1:])
            if private and _package(name) != _package(i.module):
                wrong.append(f"{i.module}:{i.line} -> {name}")
    return wrong


def test_no_module_imports_a_private_name_of_another_package():
    # e.g. the core's VACUUM lists files through the `Storage` interface, never a private of a store
    assert private_imports_across_packages(all_imports()) == []
    planted = Import("deltaexplore.core.operations.vacuum", 1, (), "top", ("deltaexplore.storage.fsspec_store._walk",))
    assert private_imports_across_packages([planted]) == [
        "deltaexplore.core.operations.vacuum:1 -> deltaexplore.storage.fsspec_store._walk"
    ]


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

"""The package's modules import one another without a cycle, counting imports
inside functions too (a cycle hidden in a function is still a tangle), but not
a module's imports of the packages that contain it."""
import ast
import pathlib

import rowformat

PACKAGE = pathlib.Path(rowformat.__file__).resolve().parent


def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    modules = {}
    for f in root.rglob("*.py"):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for m, f in modules.items():
        package = m.split(".") if f.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                name = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{name}.{a.name}" if f"{name}.{a.name}" in modules else name
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[m].update(t for t in targets
                            if t in modules and t != m and not m.startswith(t + "."))
    return graph


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()

    def walk(node, path):
        for t in graph[node]:
            if t in path:
                found.add(tuple(sorted(path[path.index(t):])))
            elif len(path) < len(graph):
                walk(t, path + [t])
    done: set[str] = set()
    for m in graph:
        if m not in done:
            walk(m, [m])
            done.add(m)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}


def test_no_import_cycle_in_the_package():
    if not (PACKAGE / "row" / "reader.py").exists():
        raise AssertionError(f"unexpected package layout at {PACKAGE}")
    assert cycles(import_graph(PACKAGE)) == set()


def test_the_row_codecs_old_import_paths_still_work():
    import importlib
    for name in ("footer", "block_index", "block_cache", "reader", "writer", "verify", "java_frames"):
        assert importlib.import_module(f"rowformat.{name}") is importlib.import_module(
            f"rowformat.row.{name}")
    from rowformat.reader import RowFileReader
    from rowformat.verify import verify
    assert RowFileReader is rowformat.RowFileReader and verify is rowformat.verify


def test_spark_and_the_cli_reach_paimon_only_through_tables():
    """Paimon knowledge lives behind rowformat.paimon.tables: neither the
    Spark source nor the CLI imports a private rowformat.paimon._ module."""
    graph = import_graph(PACKAGE)
    private = {m: sorted(t for t in targets if t.startswith("rowformat.paimon._"))
               for m, targets in graph.items()
               if m.startswith(("rowformat.spark", "rowformat.cli"))}
    assert {m: t for m, t in private.items() if t} == {}


# The floors of the package (docs/development.md, "Layers"): each may import
# only the floors below it. The core is the type model, Arrow and errors.
CORE = {"errors", "datatypes", "arrow_types", "arrow_cast", "arrow_data", "arrow_pylist",
        "schema_json", "row_numbers"}
MAY_IMPORT = {
    "core": {"core"},
    "io": {"core"},
    "row": {"core", "io"},
    "blob": {"core", "io"},
    "fory": {"core", "io"},
    "paimon": {"core", "io", "row", "blob"},
    "dataset": {"core", "io", "row", "paimon"},
    "cli": {"core", "io", "row", "blob", "fory", "paimon"},
    "spark": {"core", "io", "row", "blob", "fory", "paimon"},
}


def floor(module: str) -> str:
    part = module.split(".")[1] if "." in module else ""
    return "core" if part in CORE else part


def test_each_floor_imports_only_the_floors_below_it():
    graph = import_graph(PACKAGE)
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                   if floor(m) in MAY_IMPORT and floor(t) != floor(m)
                   and floor(t) not in MAY_IMPORT[floor(m)])
    assert wrong == []
    # every module is on a floor, but the package's top and __main__
    assert {floor(m) for m in graph} - set(MAY_IMPORT) == {"", "__main__"}

"""The .pyi stubs are installed beside the compiled modules and name what they define."""
import ast
import importlib
import pathlib

import pytest

COMPILED = ["rowformat._rowcodec", "rowformat._blockindex", "rowformat._blob", "rowformat.fory._row",
            "rowformat._pyrows"]


def _stub(module):
    mod = importlib.import_module(module)
    package, name = module.rsplit(".", 1)
    # beside the package's .py files (in a wheel, also beside the compiled module)
    stub = pathlib.Path(importlib.import_module(package).__file__).parent / (name + ".pyi")
    assert stub.exists(), f"{stub} is not installed"
    return mod, ast.parse(stub.read_text())


def test_py_typed_is_installed():
    import rowformat
    assert (pathlib.Path(rowformat.__file__).parent / "py.typed").exists()


@pytest.mark.parametrize("module", COMPILED)
def test_stub_names_exist_in_the_module(module):
    mod, tree = _stub(module)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            assert hasattr(mod, node.name), f"{module}.{node.name} is in the stub but not the module"
            if isinstance(node, ast.ClassDef):
                cls = getattr(mod, node.name)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("__"):
                        assert hasattr(cls, item.name), f"{module}.{node.name}.{item.name}"


@pytest.mark.parametrize("module", COMPILED)
def test_public_names_are_in_the_stub(module):
    mod, tree = _stub(module)
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    public = {name for name, v in vars(mod).items()
              if not name.startswith("_") and (callable(v) or isinstance(v, type))
              and getattr(v, "__module__", module) == module}
    assert public <= stubbed, f"not in the stub: {sorted(public - stubbed)}"

"""Type stubs of the compiled rows-as-dicts helper (src/rowformat/_pyrows.pyx)."""
from typing import Any

def rows_as_dicts(names: list[str], columns: list[list[Any]]) -> list[dict[str, Any]]: ...

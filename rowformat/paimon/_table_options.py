"""Table options checked when rowformat creates a table
(:func:`rowformat.paimon.tables.create_table`), before anything is written:
a value pypaimon would refuse only later (a ``bucket`` the commit cannot
store, leaving ``manifest/`` behind; an integer option that is not one,
which made ``schema-0`` unreadable) is a :class:`TableOptionError` naming
the option; and names Paimon does not know are told apart from its own
(:func:`unknown`), with the closest known name, for a caller to warn of:
a table may hold user options, as Paimon allows, so they are stored."""
from __future__ import annotations

import difflib
from datetime import timedelta
from enum import Enum
from functools import lru_cache

from ..errors import TableOptionError
from ._option_names import JAVA_CORE, JAVA_FLINK, JAVA_PREFIXES


class TableOptionWarning(UserWarning):
    """A table option that Paimon does not know (a misspelt one, most often)."""


INT32_MAX = (1 << 31) - 1       # Paimon's bucket is a Java int (and the manifests' Avro int)
# rowformat's own table options
ROWFORMAT_OPTIONS = ("rowformat.blob-reference-roots",)


@lru_cache(maxsize=1)
def _pypaimon_options() -> dict:
    """pypaimon's table options: name -> ConfigOption."""
    from pypaimon.common.options.config_option import ConfigOption
    from pypaimon.common.options.core_options import CoreOptions
    return {v.key(): v for v in vars(CoreOptions).values() if isinstance(v, ConfigOption)}


@lru_cache(maxsize=1)
def known_names() -> dict[str, str]:
    """Every table option name Paimon knows, lower-cased -> as Paimon spells it."""
    names = [*_pypaimon_options(), *JAVA_CORE, *JAVA_FLINK, *ROWFORMAT_OPTIONS]
    return {n.lower(): n for n in names}


def canonical(key: str) -> str:
    """``key`` as Paimon spells it (Spark lower-cases option names, and
    Paimon reads ``variant.shreddingSchema`` case-sensitively), else as given."""
    return known_names().get(key.lower(), key)


def unknown(options: dict[str, str]) -> dict[str, str | None]:
    """The names of ``options`` that Paimon does not know -> the closest
    known name (None when nothing is close)."""
    known = known_names()
    out = {}
    for key in options:
        low = key.lower()
        if low in known or low.startswith(JAVA_PREFIXES):
            continue
        close = difflib.get_close_matches(low, known, n=1)
        out[key] = known[close[0]] if close else None
    return out


def check_bucket(value: str | None, primary_keys) -> None:
    """Paimon's ``bucket``: -1 (dynamic; an append table without buckets),
    -2 (postponed: primary-key tables only, pypaimon writes no other), or a
    count from 1 to 2**31 - 1 (a Java int: a larger one fails only at the
    commit, when the manifest list cannot store it)."""
    if value is None:
        return
    try:
        n = int(str(value).strip())
    except ValueError:
        n = None
    if n is not None and (n == -1 or 1 <= n <= INT32_MAX or (n == -2 and primary_keys)):
        return
    postponed = ", -2 (postponed buckets, with primary keys)" if primary_keys else ""
    raise TableOptionError(f"table option 'bucket' = {value!r}: expected -1 (dynamic "
                           f"buckets){postponed} or a number of buckets from 1 to {INT32_MAX}")


def _expected(clazz) -> str:
    if isinstance(clazz, type) and issubclass(clazz, Enum):
        return f"one of {[e.value for e in clazz]}"
    return {bool: "true or false", int: "an integer", float: "a number",
            timedelta: "a duration such as '30 s' or '10 min'"}.get(
        clazz, "a size such as '128 mb'")


def check_values(options: dict[str, str], primary_keys=()) -> None:
    """Raises TableOptionError for a value pypaimon could not parse as its
    option's type (it would fail when the table is opened, after ``schema-0``
    is written) and for a ``bucket`` Paimon refuses."""
    from pypaimon.common.memory_size import MemorySize
    from pypaimon.common.options.options_utils import OptionsUtils
    check_bucket(options.get("bucket"), primary_keys)
    known = _pypaimon_options()
    for key, value in options.items():
        option = known.get(key)
        clazz = option.get_clazz() if option is not None else None
        if not (clazz in (bool, int, float, MemorySize, timedelta)
                or isinstance(clazz, type) and issubclass(clazz, Enum)):
            continue                     # a string, or a map pypaimon parses itself
        try:
            OptionsUtils.convert_value(value, clazz)
        except (ValueError, TypeError) as e:
            raise TableOptionError(f"table option {key!r} = {value!r}: expected "
                                   f"{_expected(clazz)} ({e})") from None


def int_option(options, key: str, default: int, least: int | None = None) -> int:
    """The integer table option ``key`` (``default`` when unset); a
    TableOptionError naming it when it is not an integer or is below ``least``."""
    text = options.get(key)
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise TableOptionError(f"table option {key!r} = {text!r}: expected an integer") from None
    if least is not None and value < least:
        raise TableOptionError(f"table option {key!r} = {text!r}: expected at least {least}")
    return value


def bool_option(options, key: str, default: bool) -> bool:
    """The boolean table option ``key`` (``default`` when unset); a
    TableOptionError naming it when it is neither true nor false."""
    text = options.get(key)
    if text is None:
        return default
    value = str(text).strip().lower()
    if value not in ("true", "false"):
        raise TableOptionError(f"table option {key!r} = {text!r}: expected true or false")
    return value == "true"


def ratio_option(options, key: str, default: float) -> float:
    """The table option ``key`` as a ratio in (0, 1] (``default`` when unset)."""
    text = options.get(key)
    if text is None:
        return default
    try:
        value = float(str(text).strip())
    except ValueError:
        raise TableOptionError(f"table option {key!r} = {text!r}: expected a number") from None
    if not 0 < value <= 1:
        raise TableOptionError(f"table option {key!r} = {text!r}: expected a ratio in (0, 1]")
    return value

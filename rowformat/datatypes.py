"""The Paimon type model and its SQL type text.

``schema("id BIGINT NOT NULL, name STRING")`` parses a field list into a
:class:`RowType`; ``str()`` prints it back in the canonical spelling Paimon
uses (``INT`` not ``INTEGER``, ``STRING`` for ``VARCHAR(2147483647)``,
``TIMESTAMP(6) WITH LOCAL TIME ZONE`` for ``TIMESTAMP_LTZ(6)``), so canonical
text round-trips exactly. No type stores its precision or scale in a ``.row``
file, which is why a reader needs the writer's exact schema.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import ClassVar, Iterator, NoReturn

from .errors import SchemaError

MAX_LENGTH = 2147483647  # VARCHAR/VARBINARY maximum, spelled STRING/BYTES

# The deepest nesting of types accepted anywhere: schema text, schema JSON,
# Arrow, Spark and Fory schemas, types built in code. Levels are counted as
# in the type's Arrow form: a type without children is one level, ARRAY<INT>
# two, MAP and MULTISET add two (an Arrow map is a list of key-value
# structs), VARIANT is two (a struct of two binaries), and a schema is itself
# a ROW, one level, so its columns may nest 63 more. 64 is the deepest record
# batch Arrow C++ imports through the C data interface (which the readers and
# Fory's decode_batch use) and about what its IPC accepts
# (ipc::kMaxNestingDepth), so every schema accepted reads and writes through
# Arrow. It also bounds every walk over a type (printing, JSON, the Arrow,
# Spark and Fory mappings, the codecs' plans), which recurses once per level,
# to a few hundred Python frames, well inside the default recursion limit of
# 1000. Paimon and Spark schemas in practice nest a handful of levels.
MAX_NESTING = 64

__all__ = [
    "DataType", "AtomicType", "CharType", "DecimalType", "TimeType", "TimestampType",
    "ArrayType", "MultisetType", "MapType", "VectorType", "DataField", "RowType", "schema",
    "parse_type", "MAX_NESTING",
]


def nesting_error(what: str = "type") -> SchemaError:
    """The error for a schema or type nested deeper than MAX_NESTING."""
    return SchemaError(f"{what} is nested deeper than {MAX_NESTING} levels "
                       f"(the limit, rowformat.datatypes.MAX_NESTING)")


@dataclass(frozen=True)
class DataType:
    """Base of every Paimon type. ``nullable`` is False for ``NOT NULL``."""

    nullable: bool = field(default=True, kw_only=True)

    root: ClassVar[str] = ""  # Paimon's type root, e.g. "DECIMAL"
    # Levels of nesting, counted as MAX_NESTING says: 1 for a type without
    # children; types with children (and VARIANT) set their own on
    # construction (_nest), so none deeper than MAX_NESTING can exist.
    depth: ClassVar[int] = 1

    def copy(self, nullable: bool) -> "DataType":
        return replace(self, nullable=nullable)

    def _sql(self) -> str:  # the type without NOT NULL
        raise NotImplementedError

    def __str__(self) -> str:
        return self._sql() if self.nullable else self._sql() + " NOT NULL"


def _nest(t: DataType, children, levels: int = 1) -> None:
    """Sets ``t.depth``: ``levels`` (2 for a MAP) over its deepest child;
    raises past MAX_NESTING."""
    depth = levels + max((c.depth for c in children), default=0)
    if depth > MAX_NESTING:
        raise nesting_error()
    object.__setattr__(t, "depth", depth)


def _root(name):
    def deco(cls):
        cls.root = name
        return cls
    return deco


@dataclass(frozen=True)
class AtomicType(DataType):
    """A parameterless type: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT,
    DOUBLE, DATE, VARIANT or BLOB."""

    name: str = "INT"

    def __post_init__(self):
        if self.name not in _ATOMIC:
            raise SchemaError(f"unknown atomic type {self.name!r}")
        if self.name == "VARIANT":    # a struct of two binaries in Arrow
            _nest(self, (), levels=2)

    @property
    def root(self):
        return self.name

    def _sql(self):
        return self.name


_ATOMIC = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE",
           "VARIANT", "BLOB")


@dataclass(frozen=True)
class CharType(DataType):
    """CHAR(n), VARCHAR(n) (STRING when n is the maximum), BINARY(n) and
    VARBINARY(n) (BYTES). All are a varint length plus bytes on the wire;
    CHAR is not padded and BINARY is not fixed-width in ``.row`` files."""

    kind: str = "VARCHAR"
    length: int = MAX_LENGTH

    def __post_init__(self):
        if self.kind not in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            raise SchemaError(f"unknown string type {self.kind!r}")
        if not 1 <= self.length <= MAX_LENGTH:
            raise SchemaError(f"{self.kind} length must be in [1, {MAX_LENGTH}], got {self.length}")

    @property
    def root(self):
        return self.kind

    @property
    def is_string(self) -> bool:
        return self.kind in ("CHAR", "VARCHAR")

    def _sql(self):
        if self.length == MAX_LENGTH and self.kind == "VARCHAR":
            return "STRING"
        if self.length == MAX_LENGTH and self.kind == "VARBINARY":
            return "BYTES"
        return f"{self.kind}({self.length})"


@_root("DECIMAL")
@dataclass(frozen=True)
class DecimalType(DataType):
    """DECIMAL(p, s), 1 <= p <= 38. p <= 18 is stored as an int64 unscaled
    value, p > 18 as minimal big-endian two's complement bytes."""

    precision: int = 10
    scale: int = 0

    def __post_init__(self):
        if not 1 <= self.precision <= 38:
            raise SchemaError(f"DECIMAL precision must be in [1, 38], got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise SchemaError(f"DECIMAL scale must be in [0, {self.precision}], got {self.scale}")

    @property
    def compact(self) -> bool:
        return self.precision <= 18

    def _sql(self):
        return f"DECIMAL({self.precision}, {self.scale})"


@_root("TIME")
@dataclass(frozen=True)
class TimeType(DataType):
    """TIME(p): stored as int32 milliseconds of the day whatever p is."""

    precision: int = 0

    def __post_init__(self):
        if not 0 <= self.precision <= 9:
            raise SchemaError(f"TIME precision must be in [0, 9], got {self.precision}")

    def _sql(self):
        return f"TIME({self.precision})"


@dataclass(frozen=True)
class TimestampType(DataType):
    """TIMESTAMP(p) and TIMESTAMP(p) WITH LOCAL TIME ZONE (``ltz``). p <= 3 is
    int64 epoch millis; p > 3 adds a varint of the nanosecond of the milli."""

    precision: int = 6
    ltz: bool = False

    def __post_init__(self):
        if not 0 <= self.precision <= 9:
            raise SchemaError(f"TIMESTAMP precision must be in [0, 9], got {self.precision}")

    @property
    def root(self):
        return "TIMESTAMP_LTZ" if self.ltz else "TIMESTAMP"

    @property
    def compact(self) -> bool:
        return self.precision <= 3

    def _sql(self):
        if self.ltz:
            return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        return f"TIMESTAMP({self.precision})"


@_root("ARRAY")
@dataclass(frozen=True)
class ArrayType(DataType):
    element: DataType = field(default_factory=lambda: AtomicType(name="INT"))

    def __post_init__(self):
        _nest(self, (self.element,))

    def _sql(self):
        return f"ARRAY<{self.element}>"


@_root("MULTISET")
@dataclass(frozen=True)
class MultisetType(DataType):
    """MULTISET<T>: on the wire exactly MAP<T, INT NOT NULL> (element counts)."""

    element: DataType = field(default_factory=lambda: AtomicType(name="INT"))

    def __post_init__(self):
        _nest(self, (self.element,), levels=2)    # a map in Arrow

    def _sql(self):
        return f"MULTISET<{self.element}>"


@_root("MAP")
@dataclass(frozen=True)
class MapType(DataType):
    key: DataType = field(default_factory=lambda: AtomicType(name="INT"))
    value: DataType = field(default_factory=lambda: AtomicType(name="INT"))

    def __post_init__(self):
        _nest(self, (self.key, self.value), levels=2)    # a list of key-value structs in Arrow

    def _sql(self):
        return f"MAP<{self.key}, {self.value}>"


_VECTOR_ELEMENTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE")


@_root("VECTOR")
@dataclass(frozen=True)
class VectorType(DataType):
    """VECTOR<T, n> (also written VECTOR(n, T)): n primitive elements, a size
    varint and no null bitmap. Prints as Paimon does, ``VECTOR<FLOAT, 4>``."""

    length: int = 1
    element: DataType = field(default_factory=lambda: AtomicType(name="FLOAT"))

    def __post_init__(self):
        if self.length < 1:
            raise SchemaError(f"VECTOR length must be positive, got {self.length}")
        if self.element.root not in _VECTOR_ELEMENTS:
            raise SchemaError(
                f"VECTOR elements must be one of {', '.join(_VECTOR_ELEMENTS)}, got {self.element}")
        _nest(self, (self.element,))

    def _sql(self):
        return f"VECTOR<{self.element}, {self.length}>"


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class DataField:
    name: str
    type: DataType
    description: str | None = None

    def __str__(self):
        name = self.name if _IDENT.match(self.name) and self.name.upper() not in _KEYWORDS \
            else "`" + self.name.replace("`", "``") + "`"
        text = f"{name} {self.type}"
        if self.description is not None:
            text += " COMMENT '" + self.description.replace("'", "''") + "'"
        return text


@_root("ROW")
@dataclass(frozen=True)
class RowType(DataType):
    """ROW<...>, and the schema of a file. A schema parsed from a bare field
    list prints as a field list (``top_level``); equality ignores that."""

    fields: tuple[DataField, ...] = ()
    top_level: bool = field(default=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        seen = set()
        for f in self.fields:
            if f.name in seen:
                raise SchemaError(f"duplicate field name {f.name!r}")
            seen.add(f.name)
        _nest(self, (f.type for f in self.fields))

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def __len__(self):
        return len(self.fields)

    def __iter__(self) -> Iterator[DataField]:
        return iter(self.fields)

    def __getitem__(self, key: int | str) -> DataField:
        if isinstance(key, str):
            for f in self.fields:
                if f.name == key:
                    return f
            raise KeyError(key)
        return self.fields[key]

    def index(self, name: str) -> int:
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise KeyError(name)

    def _sql(self):
        inner = ", ".join(str(f) for f in self.fields)
        return inner if self.top_level else f"ROW<{inner}>"

    def __str__(self):
        if self.top_level:
            return self._sql()
        return super().__str__()


# ---------------------------------------------------------------------------
# Parser: a tokenizer and a recursive descent over Paimon's type grammar.

_TOKEN = re.compile(r"""\s*(?:
    (?P<quoted>`(?:[^`]|``)*`) |
    (?P<string>'(?:[^']|'')*') |
    (?P<number>\d+) |
    (?P<word>[A-Za-z_][A-Za-z0-9_]*) |
    (?P<punct>[<>(),:])
)""", re.VERBOSE)

_KEYWORDS = {
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "REAL",
    "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "CHAR", "VARCHAR", "STRING", "BINARY",
    "VARBINARY", "BYTES", "DECIMAL", "DEC", "NUMERIC", "ARRAY", "MAP", "MULTISET", "ROW",
    "VARIANT", "BLOB", "VECTOR", "NOT", "NULL", "WITH", "LOCAL", "ZONE", "COMMENT",
}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise SchemaError(f"unexpected character {text[pos]!r} at position {pos} in {text!r}")
            kind = m.lastgroup
            assert kind is not None   # every alternative is a named group
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0
        # The parser recurses once per bracket level, so the brackets are
        # counted first. A type is nested at least as deep as its brackets
        # (the types built check the exact depth).
        depth = 0
        for kind, value, _ in self.tokens:
            if kind == "punct" and value in "<(":
                depth += 1
                if depth > MAX_NESTING:
                    raise nesting_error("type text")
            elif kind == "punct" and value in ">)":
                depth -= 1

    def peek(self, ahead=0):
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else ("end", "", len(self.text))

    def fail(self, expected: str) -> NoReturn:
        kind, value, pos = self.peek()
        found = "end of text" if kind == "end" else repr(value)
        raise SchemaError(f"expected {expected} at position {pos} of {self.text!r}, found {found}")

    def word(self, *choices: str) -> bool:
        kind, value, _ = self.peek()
        if kind == "word" and value.upper() in choices:
            self.i += 1
            return True
        return False

    def punct(self, ch: str, required=True) -> bool:
        kind, value, _ = self.peek()
        if kind == "punct" and value == ch:
            self.i += 1
            return True
        if required:
            self.fail(repr(ch))
        return False

    def number(self) -> int:
        kind, value, _ = self.peek()
        if kind != "number":
            self.fail("a number")
        self.i += 1
        return int(value)

    def at_end(self):
        return self.peek()[0] == "end"

    def params(self, *defaults: int) -> list[int]:
        """Optional ``(a[, b])``; returns the given values or the defaults."""
        if not self.punct("(", required=False):
            return list(defaults)
        values = [self.number()]
        while self.punct(",", required=False):
            values.append(self.number())
        self.punct(")")
        if len(values) > len(defaults):
            self.fail(f"at most {len(defaults)} parameters")
        return values + list(defaults[len(values):])

    def data_type(self) -> DataType:
        t = self._base_type()
        if self.word("NOT"):
            if not self.word("NULL"):
                self.fail("NULL after NOT")
            t = t.copy(nullable=False)
        else:
            self.word("NULL")
        return t

    def _base_type(self) -> DataType:
        kind, value, _ = self.peek()
        if kind != "word":
            self.fail("a type name")
        name = value.upper()
        self.i += 1
        if name in ("BOOLEAN", "TINYINT", "SMALLINT", "BIGINT", "DATE", "VARIANT", "BLOB", "FLOAT"):
            return AtomicType(name=name)
        if name in ("INT", "INTEGER"):
            return AtomicType(name="INT")
        if name in ("DOUBLE", "REAL"):
            self.word("PRECISION")
            return AtomicType(name="DOUBLE")
        if name == "STRING":
            return CharType(kind="VARCHAR", length=MAX_LENGTH)
        if name == "BYTES":
            return CharType(kind="VARBINARY", length=MAX_LENGTH)
        if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            (n,) = self.params(1)
            return CharType(kind=name, length=n)
        if name in ("DECIMAL", "DEC", "NUMERIC"):
            p, s = self.params(10, 0)
            return DecimalType(precision=p, scale=s)
        if name == "TIME":
            (p,) = self.params(0)
            self._without_time_zone()
            return TimeType(precision=p)
        if name == "TIMESTAMP":
            (p,) = self.params(6)
            if self.word("WITH"):
                if not (self.word("LOCAL") and self.word("TIME") and self.word("ZONE")):
                    self.fail("LOCAL TIME ZONE")
                return TimestampType(precision=p, ltz=True)
            self._without_time_zone()
            return TimestampType(precision=p)
        if name == "TIMESTAMP_LTZ":
            (p,) = self.params(6)
            return TimestampType(precision=p, ltz=True)
        if name in ("ARRAY", "MULTISET"):
            self.punct("<")
            element = self.data_type()
            self.punct(">")
            return ArrayType(element=element) if name == "ARRAY" else MultisetType(element=element)
        if name == "MAP":
            self.punct("<")
            key = self.data_type()
            self.punct(",")
            value = self.data_type()
            self.punct(">")
            return MapType(key=key, value=value)
        if name == "VECTOR":
            # VECTOR(n, T); VECTOR<T, n> is accepted as well.
            if self.punct("(", required=False):
                n = self.number()
                self.punct(",")
                element = self.data_type()
                self.punct(")")
            else:
                self.punct("<")
                element = self.data_type()
                self.punct(",")
                n = self.number()
                self.punct(">")
            return VectorType(length=n, element=element)
        if name == "ROW":
            if self.punct("<", required=False):
                close = ">"
            else:
                self.punct("(")
                close = ")"
            if self.punct(close, required=False):
                return RowType(fields=())
            fields = self.field_list()
            self.punct(close)
            return RowType(fields=tuple(fields))
        if name in ("GEOMETRY", "GEOGRAPHY"):
            raise SchemaError(f"{name} is not supported by the .row format (Paimon rejects it too)")
        self.i -= 1
        self.fail("a type name")

    def _without_time_zone(self):
        if self.word("WITHOUT"):
            if not (self.word("TIME") and self.word("ZONE")):
                self.fail("TIME ZONE")

    def field_list(self) -> list[DataField]:
        fields = [self.field()]
        while self.punct(",", required=False):
            fields.append(self.field())
        return fields

    def field(self) -> DataField:
        kind, value, _ = self.peek()
        if kind == "quoted":
            name = value[1:-1].replace("``", "`")
        elif kind == "word":
            name = value
        else:
            self.fail("a field name")
        self.i += 1
        self.punct(":", required=False)
        t = self.data_type()
        description = None
        if self.word("COMMENT"):
            kind, value, _ = self.peek()
            if kind != "string":
                self.fail("a quoted comment")
            self.i += 1
            description = value[1:-1].replace("''", "'")
        return DataField(name, t, description)


def parse_type(text: str) -> DataType:
    """Parses one Paimon type, e.g. ``"MAP<STRING, ARRAY<INT>> NOT NULL"``."""
    p = _Parser(text)
    t = p.data_type()
    if not p.at_end():
        p.fail("end of type")
    return t


def schema(text: str) -> RowType:
    """Parses a schema: a field list (``"id BIGINT NOT NULL, name STRING"``)
    or a single ``ROW<...>`` type. Prints back to the same canonical text."""
    if not isinstance(text, str):
        raise SchemaError(f"schema text must be a str, got {type(text).__name__}")
    p = _Parser(text)
    kind, value, _ = p.peek()
    if kind == "word" and value.upper() == "ROW" and p.peek(1)[1] in ("<", "("):
        t = p.data_type()
        if p.at_end() and isinstance(t, RowType):
            return t
        p.i = 0
    fields = p.field_list()
    if not p.at_end():
        p.fail("',' or end of schema")
    return RowType(fields=tuple(fields), top_level=True)

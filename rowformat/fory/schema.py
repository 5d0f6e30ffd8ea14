"""Fory row schemas: pyarrow types -> layout tree, schema bytes and schema hash.

Everything here runs once per schema; the per-row work happens in the
compiled ``rowformat.fory._row`` module, which copies the ``Layout`` tree
built here into C structs.

Schema bytes and the hash follow what pyfory 1.7.7 (C++ ``schema.cc``) and
Fory Java (``DataTypes.serializeSchema`` / ``computeSchemaHash``) produce;
they use Fory's unified xlang type ids.
"""
from __future__ import annotations

import pyarrow as pa

from rowformat.arrow_types import arrow_depth
from rowformat.errors import SchemaError
from rowformat.fory._row import Kind
from rowformat.datatypes import MAX_NESTING, nesting_error

# The kinds, declared once: the cpdef enum Kind in src/rowformat/fory/_row.pxd.
K_BOOL, K_I8, K_I16, K_I32, K_I64 = Kind.K_BOOL, Kind.K_I8, Kind.K_I16, Kind.K_I32, Kind.K_I64
K_F16, K_F32, K_F64 = Kind.K_F16, Kind.K_F32, Kind.K_F64
K_DATE, K_TS, K_DUR = Kind.K_DATE, Kind.K_TS, Kind.K_DUR
K_STR, K_BIN, K_DEC = Kind.K_STR, Kind.K_BIN, Kind.K_DEC
K_LIST, K_MAP, K_STRUCT = Kind.K_LIST, Kind.K_MAP, Kind.K_STRUCT

# Fory xlang type ids (org.apache.fory.type.Types == pyfory TypeId).
TYPE_IDS = {
    K_BOOL: 1, K_I8: 2, K_I16: 3, K_I32: 4, K_I64: 6, K_F16: 17, K_F32: 19, K_F64: 20,
    K_STR: 21, K_LIST: 22, K_MAP: 24, K_STRUCT: 27, K_DUR: 37, K_TS: 38, K_DATE: 39,
    K_DEC: 40, K_BIN: 41,
}

# Natural byte width of the fixed-width kinds (row value and array element).
NATURAL_WIDTH = {
    K_BOOL: 1, K_I8: 1, K_I16: 2, K_I32: 4, K_I64: 8, K_F16: 2, K_F32: 4, K_F64: 8,
    K_DATE: 4, K_TS: 8, K_DUR: 8,
}

LAYOUTS = ("standard", "compact")


def _round8(n: int) -> int:
    return (n + 7) & ~7


class Layout:
    """One node of a schema laid out for one row format.

    Structs carry their children in *layout* order (declaration order for
    Standard, Java's sorted order for Compact) with the byte offset of each
    child's slot, the null-bitmap position and the fixed-region size. Lists
    have one child (the element), maps two (key, value).
    """

    __slots__ = ("name", "kind", "nullable", "arrow_type", "children", "decl",
                 "slots", "bitmap_off", "bitmap_bytes", "fixed", "width",
                 "space", "elem_width", "inline", "hdr_round", "precision",
                 "scale", "dec256", "elem_nullable")

    def __init__(self, name, kind, nullable, arrow_type):
        self.name = name
        self.kind = kind
        self.nullable = nullable
        self.arrow_type = arrow_type
        self.children = []
        self.decl = []          # declaration index -> layout index
        self.slots = []         # layout index -> slot offset in the row
        self.bitmap_off = 0
        self.bitmap_bytes = 0
        self.fixed = 0          # fixed region incl. bitmap (and rounding)
        self.width = NATURAL_WIDTH.get(kind, 0)
        self.space = 8          # bytes this node takes in a parent row slot
        self.elem_width = 8     # bytes this node takes as an array element
        self.inline = False     # Compact fixed-size struct, stored in place
        self.hdr_round = False  # Compact array header rounded to 8
        self.precision = 0
        self.scale = 0
        self.dec256 = False
        self.elem_nullable = True

    @property
    def type_id(self) -> int:
        return TYPE_IDS[self.kind]


def _kind_of(t: pa.DataType) -> int:
    if pa.types.is_boolean(t):
        return K_BOOL
    if pa.types.is_int8(t):
        return K_I8
    if pa.types.is_int16(t):
        return K_I16
    if pa.types.is_int32(t):
        return K_I32
    if pa.types.is_int64(t):
        return K_I64
    if pa.types.is_float16(t):
        return K_F16
    if pa.types.is_float32(t):
        return K_F32
    if pa.types.is_float64(t):
        return K_F64
    if pa.types.is_string(t):
        return K_STR
    if pa.types.is_binary(t):
        return K_BIN
    if pa.types.is_date32(t):
        return K_DATE
    if pa.types.is_timestamp(t):
        if t.unit != "us":
            raise SchemaError(f"Fory timestamps are microseconds; got {t} (cast to timestamp('us'))")
        return K_TS
    if pa.types.is_duration(t):
        if t.unit != "us":
            raise SchemaError(f"Fory durations are microseconds; got {t} (cast to duration('us'))")
        return K_DUR
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return K_DEC
    if pa.types.is_map(t):
        return K_MAP
    if pa.types.is_list(t):
        return K_LIST
    if pa.types.is_struct(t):
        return K_STRUCT
    raise SchemaError(f"type {t} has no Fory row-format mapping (supported: bool, int8-64, "
                      "float16/32/64, utf8, binary, date32, timestamp[us], duration[us], "
                      "decimal, list, map, struct)")


def _build(name: str, t: pa.DataType, nullable: bool, compact: bool) -> Layout:
    node = Layout(name, _kind_of(t), nullable, t)
    k = node.kind
    if k == K_DEC:
        node.precision, node.scale = t.precision, t.scale
        node.dec256 = pa.types.is_decimal256(t)
        if not 0 < t.precision <= 76:
            raise SchemaError(f"decimal precision {t.precision} does not fit Fory's 32-byte decimal")
    elif k == K_LIST:
        vf = t.value_field
        node.children = [_build(vf.name, vf.type, vf.nullable, compact)]
    elif k == K_MAP:
        node.children = [_build(t.key_field.name, t.key_type, False, compact),
                         _build(t.item_field.name, t.item_type, t.item_field.nullable, compact)]
    elif k == K_STRUCT:
        node.children = [_build(f.name, f.type, f.nullable, compact) for f in t]
    _lay_out(node, compact)
    return node


def _fixed_width(node: Layout) -> int:
    """Java ``fixedWidthFor``: natural width, inline struct width, else -1."""
    if node.kind in NATURAL_WIDTH:
        return node.width
    if node.kind == K_STRUCT and node.inline:
        return node.fixed
    return -1


def _sort_key(node: Layout):
    # Java FieldAlignmentComparator: 2, 4 and multiples of 8 first, then the
    # rest; larger space first within a group (stable sort keeps ties).
    s = node.space
    return (0 if (s == 2 or s == 4 or s % 8 == 0) else 1, -s)


def _lay_out_struct(node: Layout, compact: bool) -> None:
    decl = list(node.children)
    if compact:
        node.children = sorted(decl, key=_sort_key)
    node.decl = [node.children.index(c) for c in decl]
    n = len(node.children)
    if not compact:
        node.bitmap_off = 0
        node.bitmap_bytes = ((n + 63) // 64) * 8
        node.slots = [node.bitmap_bytes + 8 * i for i in range(n)]
        node.fixed = node.bitmap_bytes + 8 * n
        return
    off = 0
    node.slots = []
    for c in node.children:
        node.slots.append(off)
        off += c.space
    node.bitmap_off = off
    any_nullable = any(c.nullable for c in node.children)
    node.bitmap_bytes = (n + 7) // 8 if any_nullable else 0
    fixed = off + node.bitmap_bytes
    has_var = any(_fixed_width(c) < 0 for c in node.children)
    node.fixed = _round8(fixed) if has_var else fixed
    node.inline = not has_var


def _lay_out(node: Layout, compact: bool) -> None:
    k = node.kind
    if k == K_STRUCT:
        _lay_out_struct(node, compact)
    if compact:
        fw = _fixed_width(node)
        node.space = fw if fw >= 0 else 8
        node.elem_width = node.space
    else:
        node.space = 8
        node.elem_width = node.width if k in NATURAL_WIDTH else 8
        node.inline = False
    # An array of this node has its header rounded to 8 (Compact only) when
    # the element's fixed width is a multiple of 8, 0 included (an empty
    # struct: Java's CompactBinaryArray.calculateHeaderInBytes tests
    # fixedWidth % 8 == 0). Variable elements have fixedWidth -1 and
    # -1 % 8 != 0 in Java, so they are never rounded.
    fw = _fixed_width(node) if compact else -1
    node.hdr_round = compact and fw >= 0 and fw % 8 == 0


def build_layout(schema: pa.Schema, layout: str = "standard") -> Layout:
    """The root struct Layout of ``schema`` for ``layout``."""
    if layout not in LAYOUTS:
        raise SchemaError(f"layout must be 'standard' or 'compact', not {layout!r}")
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"expected a pyarrow.Schema, got {type(schema).__name__}")
    compact = layout == "compact"
    root_type = pa.struct(list(schema))
    # _build and the schema hash and bytes recurse once per level: bounded
    # first, by a walk that does not recurse (the schema is one level).
    if arrow_depth(root_type) > MAX_NESTING:
        raise nesting_error("Fory schema")
    root = Layout("", K_STRUCT, False, root_type)
    root.children = [_build(f.name, f.type, f.nullable, compact) for f in schema]
    _lay_out(root, compact)
    return root


# ---------------------------------------------------------------------------
# Schema hash (Java DataTypes.computeSchemaHash / pyfory compute_schema_hash)

_I64_MAX = (1 << 63) - 1


def _hash_type(h: int, node: Layout) -> int:
    while True:
        nh = h * 31 + node.type_id
        if nh > _I64_MAX:
            h >>= 2
        else:
            h = nh
            break
    for c in node.children:   # list: element; map: key, value; struct: fields
        h = _hash_type(h, c)
    return h


def schema_hash(root: Layout) -> int:
    """The 8-byte schema hash, over the fields in layout order (Compact hashes
    the sorted schema, as Java's compact encoder does)."""
    h = 17
    for c in root.children:
        h = _hash_type(h, c)
    return h


# ---------------------------------------------------------------------------
# Schema bytes (C++ schema.cc / Java SchemaEncoder)

_ENC_UTF8, _ENC_ALL_TO_LOWER, _ENC_LUDS = 0, 1, 2


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _pack_bits(values, bits: int) -> bytes:
    # Fory meta string: a leading "strip last char" flag bit, then each char
    # in `bits` bits, most significant first.
    total = len(values) * bits + 1
    out = bytearray((total + 7) // 8)
    pos = 1
    for v in values:
        for i in range(bits - 1, -1, -1):
            if v >> i & 1:
                out[pos >> 3] |= 0x80 >> (pos & 7)
            pos += 1
    if len(out) * 8 >= total + bits:
        out[0] |= 0x80
    return bytes(out)


def _is_lower(c): return "a" <= c <= "z"
def _is_upper(c): return "A" <= c <= "Z"
def _is_digit(c): return "0" <= c <= "9"


def encode_field_name(name: str) -> tuple[int, bytes]:
    """(encoding index, bytes) the way Fory's row schema encodes a field name:
    only UTF8, ALL_TO_LOWER_SPECIAL and LOWER_UPPER_DIGIT_SPECIAL (specials
    '$' and '_'), ASCII character classes."""
    if not name:
        return _ENC_UTF8, b""
    luds = all(_is_lower(c) or _is_upper(c) or _is_digit(c) or c in "$_" for c in name)
    if not luds:
        return _ENC_UTF8, name.encode("utf-8")
    digits = sum(1 for c in name if _is_digit(c))
    uppers = sum(1 for c in name if _is_upper(c))
    if digits == 0 and (len(name) + uppers) * 5 < len(name) * 6:
        vals = []
        for c in name:
            if _is_upper(c):
                vals.append(29)                       # '|' marks an upper-case letter
                vals.append(ord(c) - 65)
            elif _is_lower(c):
                vals.append(ord(c) - 97)
            else:
                vals.append(28 if c == "$" else 27)
        return _ENC_ALL_TO_LOWER, _pack_bits(vals, 5)
    vals = []
    for c in name:
        if _is_lower(c):
            vals.append(ord(c) - 97)
        elif _is_upper(c):
            vals.append(ord(c) - 65 + 26)
        elif _is_digit(c):
            vals.append(ord(c) - 48 + 52)
        else:
            vals.append(62 if c == "$" else 63)
    return _ENC_LUDS, _pack_bits(vals, 6)


def _field_bytes(node: Layout, out: bytearray) -> None:
    enc, data = encode_field_name(node.name)
    n = len(data)
    header = enc | (0x40 if node.nullable else 0)
    if n == 0:
        raise SchemaError("Fory schema bytes cannot encode an empty field name")
    if n <= 15:
        out.append(header | ((n - 1) << 2))
    else:
        out.append(header | (15 << 2))
        out += _uvarint(n - 15)
    out += data
    _type_bytes(node, out)


def _type_bytes(node: Layout, out: bytearray) -> None:
    out.append(node.type_id)
    if node.kind == K_DEC:
        out.append(node.precision)
        out.append(node.scale)
    elif node.kind in (K_LIST, K_MAP):
        for c in node.children:
            _field_bytes(c, out)
    elif node.kind == K_STRUCT:
        out += _uvarint(len(node.children))
        for c in node.children:
            _field_bytes(c, out)


def schema_bytes(root: Layout) -> bytes:
    """``Schema.to_bytes()``: version 1, varuint32 field count, fields."""
    out = bytearray([1])
    out += _uvarint(len(root.children))
    for c in root.children:
        _field_bytes(c, out)
    return bytes(out)

"""Every vector in fory-vectors.json: exact bytes both ways, through every
path (Python values, Arrow batches, views), plus schema hash and bytes."""
import struct

import pyarrow as pa
import pytest

from rowformat.fory import RowEncoder, RowView, schema_bytes, schema_hash


def _setup(vector, fv):
    schema = fv.arrow_schema(vector["schema"])
    value = fv.py_row(vector["schema"], vector["value"])
    return schema, value, bytes.fromhex(vector["hex"])


def test_vector_count(fv):
    vs = fv.load_vectors()
    assert len(vs) == 18
    assert {v["variant"] for v in vs} == {"standard", "compact"}


def test_encode_exact_bytes(vector, fv):
    schema, value, expected = _setup(vector, fv)
    enc = RowEncoder(schema, layout=vector["variant"])
    got = enc.encode(value)
    assert len(got) == vector["size"]
    assert got.hex() == expected.hex()


def test_encode_from_tuple_and_object(vector, fv):
    schema, value, expected = _setup(vector, fv)
    enc = RowEncoder(schema, layout=vector["variant"])
    assert enc.encode(tuple(value[n] for n in schema.names)) == expected

    class Obj:
        pass
    o = Obj()
    for k, v in value.items():
        setattr(o, k, v)
    assert enc.encode(o) == expected


def test_decode_value(vector, fv):
    schema, value, data = _setup(vector, fv)
    enc = RowEncoder(schema, layout=vector["variant"])
    assert enc.decode(data) == value
    assert enc.decode(bytearray(data)) == value
    assert enc.decode(memoryview(b"\xee" * 5 + data)[5:]) == value


def test_null_slots_are_zero_and_ignored(vector, fv):
    schema, value, data = _setup(vector, fv)
    enc = RowEncoder(schema, layout=vector["variant"])
    for off, n in vector.get("null_slot_ranges", []):
        assert data[off:off + n] == bytes(n)
    # pyfory's raw output (garbage in null slots) decodes to the same value
    raw = vector.get("pyfory_raw_hex_example")
    if raw:
        assert enc.decode(bytes.fromhex(raw)) == value


def test_batch_round_trip(vector, fv):
    schema, value, data = _setup(vector, fv)
    enc = RowEncoder(schema, layout=vector["variant"])
    batch = pa.RecordBatch.from_pylist([value, value, value], schema=schema)
    rows = enc.encode_batch(batch.slice(1))
    assert rows.type == pa.binary()
    assert rows.to_pylist() == [data, data]
    back = enc.decode_batch(pa.array([data, data, data], pa.binary()).slice(1))
    back.validate(full=True)
    assert back.schema == schema
    assert back.to_pylist() == [value, value]
    # large_binary input is accepted too
    assert enc.decode_batch(pa.array([data], pa.large_binary())).to_pylist() == [value]


def test_view_reads_every_field(vector, fv):
    schema, value, data = _setup(vector, fv)
    view = RowView(schema, data, layout=vector["variant"])
    assert view.to_dict() == value
    for i, name in enumerate(schema.names):
        v = view[i]
        by_name = view[name]
        for got in (v, by_name):
            if hasattr(got, "to_list"):
                got = got.to_list()
            elif hasattr(got, "to_dict"):
                got = got.to_dict()
            assert got == value[name]
        assert view.is_null(i) == (value[name] is None)


def test_schema_hash_and_bytes(vector, fv):
    schema = fv.arrow_schema(vector["schema"])
    if "schema_hash" not in vector:
        pytest.skip("compact vectors carry no hash (Java computes it over the sorted schema)")
    assert schema_hash(schema) == vector["schema_hash"] == vector["pyfory_compute_schema_hash"]
    assert schema_bytes(schema).hex() == vector["schema_to_bytes_hex"]
    enc = RowEncoder(schema)
    assert enc.schema_bytes().hex() == vector["schema_to_bytes_hex"]
    _, value, data = _setup(vector, fv)
    framed = enc.encode_with_hash(value)
    assert framed == struct.pack("<q", vector["schema_hash"]) + data
    assert enc.decode_with_hash(framed) == value


def test_compact_sorted_order(vector, fv):
    if vector["variant"] != "compact":
        pytest.skip("standard keeps declaration order")
    schema = fv.arrow_schema(vector["schema"])
    enc = RowEncoder(schema, layout="compact")
    assert [c.name for c in enc._plan.layout.children] == vector["sorted_field_order"]

# Included by _rowcodec.pyx. Error codes and their messages: every C-level
# failure in the encoder and decoder is one negative code (E_*), returned up
# the call chain and turned into a rowformat exception at the Python edge, with
# the message from _ERRORS (error_message, _decode_error).

# Error codes (negative). Messages live in _ERRORS.
cdef enum:
    E_OOM = -1
    E_TRUNC = -2
    E_VARINT = -3
    E_DEC_OVERFLOW = -4
    E_VARIANT_NULL = -5
    E_VECTOR_NULL = -6
    E_VECTOR_SIZE = -7
    E_ROW_TOO_BIG = -8
    E_UTF8 = -9
    E_TS_RANGE = -10
    E_NANO = -11
    E_MAP_SIZE = -12
    E_NULL_KEY = -13
    E_NOT_NULL = -14
    E_BATCH_TOO_BIG = -15
    E_DEC_EMPTY = -16
    E_ROW_LIMIT = -17
    E_EXPAND_LIMIT = -18
    E_TIME_RANGE = -19
    E_EXPAND_CALL = -20
    E_PY_LIMIT = -21

_ERRORS = {
    E_OOM: "out of memory",
    E_TRUNC: "row bytes end in the middle of a value",
    E_VARINT: "malformed varint (longer than 5 bytes or out of range)",
    E_DEC_OVERFLOW: "decimal value does not fit the column's precision",
    E_VARIANT_NULL: "VARIANT value and metadata must not be null",
    E_VECTOR_NULL: "VECTOR elements must not be null",
    E_VECTOR_SIZE: "VECTOR size differs from the declared length",
    E_ROW_TOO_BIG: "row or block larger than 2 GiB",
    E_UTF8: "string is not valid UTF-8",
    E_TS_RANGE: "timestamp out of range for its Arrow unit",
    E_NANO: "nano-of-millisecond out of range [0, 999999]",
    E_MAP_SIZE: "map has different key and value counts",
    E_NULL_KEY: "map key is null, which Arrow maps cannot hold (use reader.get for such rows)",
    E_NOT_NULL: "null in a NOT NULL field",
    E_BATCH_TOO_BIG: "more than 2 GiB of string/binary data in one batch; use a smaller batch_size",
    E_DEC_EMPTY: "decimal with zero bytes",
    E_ROW_LIMIT: "row larger than max_row_size",
    E_TIME_RANGE: "TIME value outside one day [0, 86400000) ms, which Arrow's time types cannot hold",
    E_EXPAND_LIMIT: "the row's nulls expand to more than max_row_size bytes of Arrow placeholders",
    E_EXPAND_CALL: ("the rows' nulls expand to more Arrow placeholders than their bytes pay for, "
                    "by more than max_row_size bytes in one read"),
    E_PY_LIMIT: "the row's Python values would take more memory than its bytes and max_row_size allow",
}

# What the expansion messages add: why a null costs more than its bytes.
_EXPAND_WHY = ("a null VECTOR or ROW, or a null in an array, is one bit in the file but its "
               "full width in Arrow")


def error_message(int code):
    return _ERRORS.get(code, f"error {code}")


def expansion_message(int rc, int64_t max_row_size):
    """The message of E_EXPAND_LIMIT or E_EXPAND_CALL, with the limit."""
    if rc == E_EXPAND_LIMIT:
        return (f"the row's nulls expand to more than max_row_size={max_row_size} bytes of "
                f"Arrow placeholders ({_EXPAND_WHY})")
    return (f"the rows' nulls expand to more Arrow placeholders than their bytes pay for, by "
            f"more than the max_row_size={max_row_size} bytes one read allows ({_EXPAND_WHY})")


def _decode_error(int rc, row, column):
    cls = RowLimitError if rc in (E_ROW_LIMIT, E_EXPAND_LIMIT, E_EXPAND_CALL, E_PY_LIMIT) \
        else RowMemoryError if rc == E_OOM else RowDecodeError
    return cls(error_message(rc), row, column)

# Declarations of the rowformat.fory._row module (its .pyx sees them as its
# own). The value kinds of a Fory schema node, declared once: _row.pyx switches
# on them in C, and as a cpdef enum the module exposes them to Python as
# rowformat.fory._row.Kind (an IntEnum), from which rowformat.fory.schema
# takes its K_* names. The numbers are internal (not on the wire), but the
# order matters: kinds up to K_DUR are fixed-width values of 1 to 8 bytes.

cpdef enum Kind:
    K_BOOL = 1
    K_I8 = 2
    K_I16 = 3
    K_I32 = 4
    K_I64 = 5
    K_F16 = 6
    K_F32 = 7
    K_F64 = 8
    K_DATE = 9
    K_TS = 10
    K_DUR = 11
    K_STR = 12
    K_BIN = 13
    K_DEC = 14
    K_LIST = 15
    K_MAP = 16
    K_STRUCT = 17

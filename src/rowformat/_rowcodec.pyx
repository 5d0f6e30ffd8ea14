# cython: language_level=3
"""Paimon row bytes <-> Arrow, in C.

A schema becomes a tree of ``Node`` structs (a "plan"). The encoder binds
the plan to an Arrow RecordBatch exported through the Arrow C data interface
and serializes rows into a block buffer with the GIL released. The decoder
parses row bytes into growable per-node builders and hands the finished
buffers to Arrow through the same interface, so no Python object is made per
value. ``decode_row`` is the one path that builds Python values, for
``reader.get(i)``.

Every read of row bytes is bounds-checked; every failure is an error code,
turned into a rowformat exception at the Python edge.
"""
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t, INT32_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcmp, memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_AS_STRING
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.datetime cimport import_datetime, datetime_new

from rowformat._wire cimport *
# Growable byte buffers: src/rowformat/_buf.pxd.
from rowformat._buf cimport *
# Another object's buffer held out of the collector's sight: src/rowformat/_held.pxd.
from rowformat._held cimport *

import datetime as _dt
import decimal as _decimal
import sys as _sys

import numpy as _np
import pyarrow as pa

from rowformat.errors import (CorruptFileError, LimitExceededError, RowDecodeError, RowLimitError,
                              RowMemoryError, ValueConversionError)


# The module is one namespace split by concern into textual includes, so a
# cdef inline function in one stays inlinable in the others.
include "_rowcodec_errors.pxi"      # error codes and messages
include "_rowcodec_plan.pxi"        # schema -> Node tree
include "_rowcodec_stats.pxi"       # column statistics collected while encoding
include "_rowcodec_encode.pxi"      # Arrow -> row bytes (BlockEncoder)
include "_rowcodec_decode.pxi"      # row bytes -> Arrow (Block, RowDecoder)
include "_rowcodec_pyvalues.pxi"    # row bytes -> Python values (decode_row)
include "_rowcodec_prefix.pxi"      # a block's first rows without decompressing the rest
include "_rowcodec_take.pxi"        # a random batch's blocks, decompressed on several threads

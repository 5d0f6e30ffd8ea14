# cython: language_level=3
"""Fory row format (Standard and Java Compact) in C.

A ``Layout`` tree from ``rowformat.fory.schema`` is copied into a tree of
``Node`` structs (a "plan"). Four paths run over it:

* Python values -> row bytes (``enc_*``), and row bytes -> Python values
  (``dec_*``), used by ``RowEncoder.encode/decode`` and the views;
* Arrow RecordBatch -> rows (``aenc_*``) and rows -> Arrow builders
  (``bdec_*``), nogil, no Python object per value, through the Arrow C data
  interface.

Row bytes are untrusted: every slot offset, size and element count is checked
against the region that contains it before it is followed, so a malformed
row raises MalformedRowError and nothing is read out of bounds.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t, INT32_MAX
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_Check
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_CheckExact
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_CheckExact, PyList_GET_SIZE, PyList_GET_ITEM
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_SIZE, PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from cpython.long cimport PyLong_Check
from cpython.float cimport PyFloat_CheckExact
from cpython.ref cimport PyObject, Py_INCREF
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
cimport cpython.datetime as cdt
cimport cython

from rowformat._wire cimport *
# Growable byte buffers: src/rowformat/_buf.pxd.
from rowformat._buf cimport *
# Another object's buffer held out of the collector's sight: src/rowformat/_held.pxd.
from rowformat._held cimport *

import threading as _threading
import decimal as _decimal
import pyarrow as pa

from rowformat.errors import MalformedRowError, ValueConversionError, SchemaError

cdt.import_datetime()


cdef extern from *:
    """
    #define FORY_U32_MAX ((int64_t)0xFFFFFFFFLL)
    #define FORY_US_PER_DAY ((int64_t)86400000000LL)
    """
    int64_t U32_MAX "FORY_U32_MAX"
    int64_t US_PER_DAY "FORY_US_PER_DAY"


cdef extern from "Python.h":
    int PyFloat_Pack2(double x, char *p, int le) except -1
    double PyFloat_Unpack2(const char *p, int le) except? -1.0
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    long long PyLong_AsLongLongAndOverflow(object v, int *overflow) except? -1
    double PyFloat_AsDouble(object v) except? -1.0
    double PyFloat_AS_DOUBLE(object v)
    object PyFloat_FromDouble(double v)
    object PyLong_FromLongLong(long long v)
    object PyBool_FromLong(long v)
    PyObject *PyObject_GetAttr(object o, object name)
    void PyErr_Clear()


# The module is one namespace split by concern into textual includes, so a
# cdef inline function in one stays inlinable in the others.
include "_row_plan.pxi"             # Layout -> Node tree, layout helpers
include "_row_errors.pxi"           # error codes, messages, the value budget
include "_row_pyencode.pxi"         # Python values -> row bytes
include "_row_pydecode.pxi"         # row bytes -> Python values
include "_row_api.pxi"              # Plan: the Python entry point
include "_row_arrow_encode.pxi"     # Arrow -> rows (encode_batch)
include "_row_arrow_decode.pxi"     # rows -> Arrow (decode_batch)
include "_row_views.pxi"            # StructView, ArrayView, MapView

# C declarations of src/include/rf_wire.h (wire primitives) and rf_arrow.h.
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t

cdef extern from "rf_wire.h" nogil:
    ctypedef long long rf_i128 "rf_i128"
    int16_t rf_ld_i16(const uint8_t *p)
    int32_t rf_ld_i32(const uint8_t *p)
    int64_t rf_ld_i64(const uint8_t *p)
    void rf_st_i16(uint8_t *p, int16_t v)
    void rf_st_i32(uint8_t *p, int32_t v)
    void rf_st_i64(uint8_t *p, int64_t v)
    int rf_read_uvarint(const uint8_t *buf, int64_t *pos, int64_t end, int max_bytes, uint64_t *out)
    int rf_read_len(const uint8_t *buf, int64_t *pos, int64_t end, int64_t *out)
    int rf_write_uvarint(uint8_t *dst, uint64_t v)
    int rf_uvarint_size(uint64_t v)
    uint64_t rf_zigzag64(int64_t v)
    int64_t rf_unzigzag64(uint64_t v)
    int64_t rf_delta_encode(const int64_t *v, int64_t n, uint8_t *dst)
    int64_t rf_delta_count(const uint8_t *buf, int64_t n)
    int rf_delta_decode(const uint8_t *buf, int64_t n, int64_t *out, int64_t *count)
    int64_t rf_floordiv(int64_t a, int64_t b)
    int64_t rf_floormod(int64_t a, int64_t b)
    int rf_mul_add_i64(int64_t a, int64_t m, int64_t add, int64_t *out)
    int rf_ts_units(int64_t ms, int64_t upm, int64_t sub, int64_t *out)
    int rf_dec_fits(rf_i128 v, int precision)
    rf_i128 rf_ld_i128(const uint8_t *p)
    void rf_st_i128(uint8_t *p, rf_i128 v)
    int64_t rf_i128_hi(rf_i128 v)
    uint64_t rf_i128_lo(rf_i128 v)
    int rf_i128_fits_i64(rf_i128 v)
    int rf_i128_to_be_minimal(rf_i128 v, uint8_t *out)
    int rf_be_to_i128(const uint8_t *p, int64_t n, rf_i128 *out)
    int rf_utf8_valid(const uint8_t *s, int64_t n)
    void rf_copy(uint8_t *d, const uint8_t *s, int64_t n)
    void rf_civil_from_days(int64_t z, int *year, int *month, int *day)
    enum: RF_PAD
    int rf_ascii_padded(const uint8_t *s, int64_t n)
    int64_t rf_ascii_run(const uint8_t *s, int64_t n)
    void rf_copy_padded(uint8_t *d, const uint8_t *s)

cdef extern from "rf_arrow.h" nogil:
    struct ArrowSchema:
        const char *format
        const char *name
        int64_t n_children
        ArrowSchema **children
        void (*release)(ArrowSchema *)
    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        int64_t n_children
        const void **buffers
        ArrowArray **children
        ArrowArray *dictionary
        void (*release)(ArrowArray *)
        void *private_data
    void rf_arrow_release(ArrowArray *a)
    ArrowArray *rf_arrow_new(int64_t n_buffers, int64_t n_children)
    void rf_buf_free(void *p)
    void *rf_buf_reuse(size_t want, size_t *size)
    void rf_stash_scan(int delta)

/* Kafka records decoded into columns, in C: the consumer's hot path without a Python object
 * per record.
 *
 * `Columns` collects records as Arrow lays them out (offsets, timestamps, keys and values as
 * one data buffer plus end positions, headers as a list of key/value pairs), so a chunk becomes
 * an Arrow record batch by wrapping these buffers, and `messages()` makes the `Message` tuples of
 * per-record iteration straight from them. The parsing loops run without the GIL: the consuming
 * thread goes on while the fetch thread decodes.
 *
 * What is parsed here: message sets in formats v0 and v1 (uncompressed, or the message set found
 * inside a compressed wrapper) and the records section of a v2 batch (uncompressed or after
 * decompression). The walk that tells the entries apart (`walk`) is here too, since a v0/v1 log
 * has one entry per record. Batch headers, transactions, codecs and errors with names are
 * handled in Python (`zkconsumer.records.columns`), once per batch.
 *
 * Lengths and offsets are checked against the data before every read: a corrupt or hostile
 * response is a ValueError, never a read out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* -- byte order and checksums ------------------------------------------------------------ */

static inline int64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8)
                     | (uint32_t)p[3]);
}

/* Slicing-by-8 tables: CRC-32 (IEEE, formats v0/v1) and CRC-32C (Castagnoli, format v2). */
static uint32_t crc32_table[8][256];
static uint32_t crc32c_table[8][256];

static void make_table(uint32_t table[8][256], uint32_t polynomial) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? polynomial ^ (c >> 1) : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
}

/* The table method from state `c` on (no inversions: see crc_sliced). */
static uint32_t crc_sliced_from(uint32_t table[8][256], uint32_t c, const unsigned char *p,
                                size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        low = __builtin_bswap32(low);
        high = __builtin_bswap32(high);
#endif
        low ^= c;
        c = table[7][low & 0xff] ^ table[6][(low >> 8) & 0xff] ^ table[5][(low >> 16) & 0xff]
            ^ table[4][low >> 24] ^ table[3][high & 0xff] ^ table[2][(high >> 8) & 0xff]
            ^ table[1][(high >> 16) & 0xff] ^ table[0][high >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

static uint32_t crc_sliced(uint32_t table[8][256], const unsigned char *p, size_t n) {
    return crc_sliced_from(table, 0xffffffffu, p, n) ^ 0xffffffffu;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
/* The SSE 4.2 instruction, about ten times the table's speed; chosen at import if the CPU has
 * it. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(const unsigned char *p, size_t n) {
    uint64_t c = 0xffffffffu;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c ^ 0xffffffffu;
}
static int have_sse42 = 0;

#include <wmmintrin.h>
#include <smmintrin.h>
/* CRC-32 (IEEE) by carry-less multiplication, about three times the table's speed on the
 * 100-byte messages of a typical v0/v1 log, where the CRC was most of decoding's time. Four
 * 128-bit lanes take 64 bytes per step; they are folded into one, which takes the remaining
 * whole 16-byte blocks, and the 128 bits left are reduced to 32 (a fold, then Barrett's
 * method). The constants are x^k mod P for the distances folded over, bit-reflected as the
 * CRC is; fewer than 64 bytes, and the last n % 16, go through the table. */
static inline __attribute__((target("pclmul,sse4.1")))
__m128i crc_fold(__m128i lanes, __m128i constants, __m128i next) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(lanes, constants, 0x00),
                                       _mm_clmulepi64_si128(lanes, constants, 0x11)), next);
}

__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_pclmul(const unsigned char *p, size_t n) {
    if (n < 64) return crc_sliced(crc32_table, p, n);
    const __m128i over_64 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i over_16 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i over_4 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);  /* mu, P */
    const __m128i low_32 = _mm_set_epi32(0, 0, 0, -1);
    const __m128i *q = (const __m128i *)p;
    size_t blocks = n / 16;
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128(q), _mm_cvtsi32_si128((int)0xffffffffu));
    __m128i x1 = _mm_loadu_si128(q + 1), x2 = _mm_loadu_si128(q + 2);
    __m128i x3 = _mm_loadu_si128(q + 3);
    q += 4;
    blocks -= 4;
    for (; blocks >= 4; blocks -= 4, q += 4) {
        x0 = crc_fold(x0, over_64, _mm_loadu_si128(q));
        x1 = crc_fold(x1, over_64, _mm_loadu_si128(q + 1));
        x2 = crc_fold(x2, over_64, _mm_loadu_si128(q + 2));
        x3 = crc_fold(x3, over_64, _mm_loadu_si128(q + 3));
    }
    x0 = crc_fold(crc_fold(crc_fold(x0, over_16, x1), over_16, x2), over_16, x3);
    for (; blocks; blocks--, q++) x0 = crc_fold(x0, over_16, _mm_loadu_si128(q));
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, over_16, 0x10), _mm_srli_si128(x0, 8));
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, low_32), over_4, 0x00),
                       _mm_srli_si128(x0, 4));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x0, low_32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low_32), barrett, 0x00);
    uint32_t c = (uint32_t)_mm_extract_epi32(_mm_xor_si128(x0, t), 1);
    return crc_sliced_from(crc32_table, c, (const unsigned char *)q, n % 16) ^ 0xffffffffu;
}
static int have_pclmul = 0;
#endif

static uint32_t crc32_ieee(const unsigned char *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_pclmul) return crc32_pclmul(p, n);
#endif
    return crc_sliced(crc32_table, p, n);
}

static uint32_t crc32c(const unsigned char *p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_sse42) return crc32c_sse42(p, n);
#endif
    return crc_sliced(crc32c_table, p, n);
}

/* -- growable buffers (raw allocator: used without the GIL) ------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    char *grown = PyMem_RawRealloc(b->data, (size_t)cap);
    if (!grown) return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->data + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

static inline int buf_i64(Buf *b, int64_t v) { return buf_put(b, &v, 8); }
static inline int buf_i32(Buf *b, int32_t v) { return buf_put(b, &v, 4); }
static inline int buf_u8(Buf *b, uint8_t v) { return buf_put(b, &v, 1); }

static void buf_free(Buf *b) {
    PyMem_RawFree(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* One binary column: data, Arrow's int32 offsets (count + 1 of them) and a null flag each. */
typedef struct {
    Buf data, ends, nulls;
    Py_ssize_t null_count;
} Binary;

static int binary_init(Binary *c) { return buf_i32(&c->ends, 0); }

static int binary_put(Binary *c, const unsigned char *p, int64_t n) {
    if (n < 0) {
        c->null_count++;
        if (buf_u8(&c->nulls, 1)) return -1;
    } else {
        if (buf_u8(&c->nulls, 0) || buf_put(&c->data, p, (Py_ssize_t)n)) return -1;
    }
    if (c->data.len > INT32_MAX) return -1;
    return buf_i32(&c->ends, (int32_t)c->data.len);
}

static void binary_free(Binary *c) {
    buf_free(&c->data);
    buf_free(&c->ends);
    buf_free(&c->nulls);
}

/* -- the Columns object ---------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;       /* records held */
    Buf offsets;            /* int64 */
    Buf timestamps;         /* int64, negative: none */
    Binary keys, values;
    Buf header_ends;        /* int32: headers of records before and including each, from 0 */
    Binary header_keys, header_values;
    Py_ssize_t header_count;
    int busy; /* a parse runs without the GIL: nothing else may touch the buffers */
    int lent; /* buffers lent to Arrow (see Region): no more records may be added */
} Columns;

/* Where every buffer ended before a parse, to go back to if the parse fails: a failure part
 * way through a message set or batch must leave no half record behind. */
#define BUFFERS 15
typedef struct {
    Py_ssize_t count, header_count, lengths[BUFFERS], null_counts[4];
} Snapshot;

static void parts_of(Columns *c, Buf **buffers, Binary **binaries) {
    binaries[0] = &c->keys;
    binaries[1] = &c->values;
    binaries[2] = &c->header_keys;
    binaries[3] = &c->header_values;
    buffers[0] = &c->offsets;
    buffers[1] = &c->timestamps;
    buffers[2] = &c->header_ends;
    for (int i = 0; i < 4; i++) {
        buffers[3 + 3 * i] = &binaries[i]->data;
        buffers[4 + 3 * i] = &binaries[i]->ends;
        buffers[5 + 3 * i] = &binaries[i]->nulls;
    }
}

static void take_snapshot(Columns *c, Snapshot *snapshot) {
    Buf *buffers[BUFFERS];
    Binary *binaries[4];
    parts_of(c, buffers, binaries);
    snapshot->count = c->count;
    snapshot->header_count = c->header_count;
    for (int i = 0; i < BUFFERS; i++) snapshot->lengths[i] = buffers[i]->len;
    for (int i = 0; i < 4; i++) snapshot->null_counts[i] = binaries[i]->null_count;
}

static void restore(Columns *c, const Snapshot *snapshot) {
    Buf *buffers[BUFFERS];
    Binary *binaries[4];
    parts_of(c, buffers, binaries);
    c->count = snapshot->count;
    c->header_count = snapshot->header_count;
    for (int i = 0; i < BUFFERS; i++) buffers[i]->len = snapshot->lengths[i];
    for (int i = 0; i < 4; i++) binaries[i]->null_count = snapshot->null_counts[i];
}

/* What went wrong, raised as ValueError(offset, text): the offset of the entry (or -1) and
 * what is wrong with it, for the caller to say where. */
typedef struct {
    long long offset;
    char text[200];
} Failure;

#define FAIL(f, at, ...) \
    ((f)->offset = (at), snprintf((f)->text, sizeof((f)->text), __VA_ARGS__), -1)
#define NO_MEMORY(f) FAIL(f, -1, "out of memory (or a chunk over 2 GiB) decoding records")

static int columns_init(Columns *self, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ":Columns")) return -1;
    if (self->keys.ends.len) return 0; /* __init__ called twice: keep what is there */
    if (binary_init(&self->keys) || binary_init(&self->values)
            || buf_i32(&self->header_ends, 0) || binary_init(&self->header_keys)
            || binary_init(&self->header_values)) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void columns_dealloc(Columns *self) {
    buf_free(&self->offsets);
    buf_free(&self->timestamps);
    binary_free(&self->keys);
    binary_free(&self->values);
    buf_free(&self->header_ends);
    binary_free(&self->header_keys);
    binary_free(&self->header_values);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(Columns *self) {
    if (!self->keys.ends.len) {
        PyErr_SetString(PyExc_RuntimeError, "Columns.__init__ was not called");
        return 0;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Columns used while another thread fills it");
        return 0;
    }
    return 1;
}

static inline int add_record(Columns *self, int64_t offset, int64_t timestamp,
                             const unsigned char *key, int64_t key_length,
                             const unsigned char *value, int64_t value_length) {
    if (buf_i64(&self->offsets, offset) || buf_i64(&self->timestamps, timestamp)
            || binary_put(&self->keys, key, key_length)
            || binary_put(&self->values, value, value_length))
        return -1;
    self->count++;
    return 0;
}

static inline int end_headers(Columns *self) {
    if (self->header_count > INT32_MAX) return -1;
    return buf_i32(&self->header_ends, (int32_t)self->header_count);
}

/* An int64 argument that may be None. */
typedef struct {
    int given;
    int64_t value;
} Optional;

static int optional_int64(PyObject *arg, void *out) {
    Optional *optional = out;
    optional->given = arg != Py_None;
    optional->value = optional->given ? PyLong_AsLongLong(arg) : 0;
    return !(optional->given && optional->value == -1 && PyErr_Occurred());
}

/* Offsets and timestamps come from the data: sums wrap around as Java's long does (and as
 * aiokafka's reader gives them) rather than overflow, which C leaves undefined. */
static inline int64_t wrapping_add(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Message set of format v0/v1 messages, each complete. `relative_to` given: the offsets are
 * relative (inside a v1 compressed wrapper) and the last one is this, the wrapper's offset.
 * `log_append_time` given: every message gets this timestamp (the wrapper's). Bytes after a
 * message's value are left alone, as Kafka's own readers leave them. */
static int parse_message_set(Columns *self, const unsigned char *data, Py_ssize_t length,
                             int check_crcs, Optional relative_to, Optional log_append_time,
                             Failure *f) {
    Py_ssize_t position = 0;
    Py_ssize_t first = self->count;
    while (position < length) {
        if (length - position < 12) return FAIL(f, -1, "ends inside a message");
        const unsigned char *entry = data + position;
        int64_t offset = be64(entry);
        int32_t size = be32(entry + 8);
        if (size < 14 || size > length - position - 12)
            return FAIL(f, offset, "has a size of %d bytes, %s", size,
                        size < 14 ? "too short" : "past its end");
        const unsigned char *p = entry + 12;
        const unsigned char *end = p + size;
        uint32_t crc = (uint32_t)be32(p);
        int magic = p[4], attributes = p[5];
        if (magic > 1)
            return FAIL(f, offset, "is in an unknown format (magic %d)", magic);
        if (attributes & 0x07)
            return FAIL(f, offset, "is compressed inside a compressed message");
        if (check_crcs && crc32_ieee(p + 4, (size_t)(size - 4)) != crc)
            return FAIL(f, offset, "fails its CRC check");
        p += 6;
        int64_t timestamp = -1;
        if (magic == 1) {
            if (end - p < 8) return FAIL(f, offset, "is cut short");
            timestamp = log_append_time.given ? log_append_time.value : be64(p);
            p += 8;
        }
        const unsigned char *field[2];
        int64_t field_length[2];
        for (int i = 0; i < 2; i++) {
            if (end - p < 4) return FAIL(f, offset, "is cut short");
            int32_t n = be32(p);
            p += 4;
            if (n < -1 || n > end - p)
                return FAIL(f, offset, "has a %s of %d bytes, past its end",
                            i ? "value" : "key", n);
            field[i] = p;
            field_length[i] = n;
            if (n > 0) p += n;
        }
        if (add_record(self, offset, timestamp, field[0], field_length[0], field[1],
                       field_length[1]) || end_headers(self))
            return NO_MEMORY(f);
        position += 12 + size;
    }
    if (relative_to.given && self->count > first) {
        int64_t *offsets = (int64_t *)self->offsets.data;
        int64_t shift = (int64_t)((uint64_t)relative_to.value
                                  - (uint64_t)offsets[self->count - 1]);
        for (Py_ssize_t i = first; i < self->count; i++)
            offsets[i] = wrapping_add(offsets[i], shift);
    }
    return 0;
}

/* Zigzag varints, as format v2 writes every length and delta. */
static inline int varlong(const unsigned char **p, const unsigned char *end, int64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end) return -1;
        unsigned char b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 0;
        }
    }
    return -1;
}

static inline int varint(const unsigned char **p, const unsigned char *end, int64_t *out) {
    if (varlong(p, end, out)) return -1;
    return (*out < INT32_MIN || *out > INT32_MAX) ? -1 : 0;
}

/* Nullable bytes with a varint length: -1 is null. */
static inline int var_bytes(const unsigned char **p, const unsigned char *end,
                            const unsigned char **out, int64_t *length) {
    if (varint(p, end, length) || *length < -1 || *length > end - *p) return -1;
    *out = *p;
    if (*length > 0) *p += *length;
    return 0;
}

/* The `count` records of a v2 batch, filling the records section exactly. */
static int parse_v2_records(Columns *self, const unsigned char *data, Py_ssize_t length,
                            int64_t count, int64_t base_offset, int64_t first_timestamp,
                            int64_t max_timestamp, int log_append_time, Failure *f) {
    const unsigned char *p = data, *end = data + length;
    if (count < 0) return FAIL(f, -1, "a record count of %lld", (long long)count);
    for (int64_t i = 0; i < count; i++) { /* a record takes a byte at least: the data ends it */
        int64_t size, timestamp_delta, offset_delta, header_count;
        if (varint(&p, end, &size) || size < 1 || size > end - p)
            return FAIL(f, -1, "record %lld has no valid length", (long long)i);
        const unsigned char *record_end = p + size;
        p++; /* record attributes: none in use */
        const unsigned char *key, *value;
        int64_t key_length, value_length;
        if (varlong(&p, record_end, &timestamp_delta) || varint(&p, record_end, &offset_delta)
                || var_bytes(&p, record_end, &key, &key_length)
                || var_bytes(&p, record_end, &value, &value_length)
                || varint(&p, record_end, &header_count) || header_count < 0)
            return FAIL(f, -1, "record %lld runs past its length", (long long)i);
        if (add_record(self, wrapping_add(base_offset, offset_delta),
                       log_append_time ? max_timestamp
                                       : wrapping_add(first_timestamp, timestamp_delta),
                       key, key_length, value, value_length))
            return NO_MEMORY(f);
        for (int64_t h = 0; h < header_count; h++) {
            const unsigned char *header_key, *header_value;
            int64_t header_key_length, header_value_length;
            if (var_bytes(&p, record_end, &header_key, &header_key_length)
                    || header_key_length < 0
                    || var_bytes(&p, record_end, &header_value, &header_value_length))
                return FAIL(f, -1, "a header of record %lld runs past its length",
                            (long long)i);
            if (binary_put(&self->header_keys, header_key, header_key_length)
                    || binary_put(&self->header_values, header_value, header_value_length))
                return NO_MEMORY(f);
            self->header_count++;
        }
        if (end_headers(self)) return NO_MEMORY(f);
        if (p != record_end)
            return FAIL(f, -1, "record %lld has %zd bytes after its headers", (long long)i,
                        (Py_ssize_t)(record_end - p));
    }
    if (p != end)
        return FAIL(f, -1, "%zd bytes after the last record", (Py_ssize_t)(end - p));
    return 0;
}

/* Whether data[start:end], given as arguments, lies inside the data. */
static int span(Py_buffer *view, Py_ssize_t start, Py_ssize_t end) {
    return start >= 0 && end >= start && end <= view->len;
}

static PyObject *failed(Failure *f) {
    PyObject *args = Py_BuildValue("(Ls)", f->offset, f->text);
    if (args) {
        PyErr_SetObject(PyExc_ValueError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* Before a parse: the columns as they are (to go back to on failure) and marked busy; or the
 * buffer let go and an error set if they may take no more records. */
static int begin_parse(Columns *self, Py_buffer *view, Snapshot *before) {
    if (self->lent) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_RuntimeError, "Columns lent to Arrow take no more records");
        return 0;
    }
    take_snapshot(self, before);
    self->busy = 1;
    return 1;
}

/* After a parse of view[start:end]: the buffer let go, the columns as they were before it
 * if it failed, and None or the failure raised. */
static PyObject *parsed(Columns *self, const Snapshot *before, Py_buffer *view, int result,
                        Failure *f) {
    PyBuffer_Release(view);
    self->busy = 0;
    if (result) {
        restore(self, before);
        return failed(f);
    }
    Py_RETURN_NONE;
}

static PyObject *columns_add_message_set(Columns *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    int check_crcs, result = -1;
    Optional relative_to, log_append_time;
    Failure f = {-1, "the span asked for lies outside the data"};
    Snapshot before;
    if (!ready(self) || !PyArg_ParseTuple(args, "y*nnpO&O&:add_message_set", &view, &start,
                                          &end, &check_crcs, optional_int64, &relative_to,
                                          optional_int64, &log_append_time))
        return NULL;
    if (!begin_parse(self, &view, &before)) return NULL;
    if (span(&view, start, end)) {
        Py_BEGIN_ALLOW_THREADS
        result = parse_message_set(self, (const unsigned char *)view.buf + start, end - start,
                                   check_crcs, relative_to, log_append_time, &f);
        Py_END_ALLOW_THREADS
    }
    return parsed(self, &before, &view, result, &f);
}

static PyObject *columns_add_records(Columns *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    long long count, base_offset, first_timestamp, max_timestamp;
    int log_append_time, result = -1;
    Failure f = {-1, "the span asked for lies outside the data"};
    Snapshot before;
    if (!ready(self) || !PyArg_ParseTuple(args, "y*nnLLLLp:add_records", &view, &start, &end,
                                          &count, &base_offset, &first_timestamp,
                                          &max_timestamp, &log_append_time))
        return NULL;
    if (!begin_parse(self, &view, &before)) return NULL;
    if (span(&view, start, end)) {
        Py_BEGIN_ALLOW_THREADS
        result = parse_v2_records(self, (const unsigned char *)view.buf + start, end - start,
                                  count, base_offset, first_timestamp, max_timestamp,
                                  log_append_time, &f);
        Py_END_ALLOW_THREADS
    }
    return parsed(self, &before, &view, result, &f);
}

static PyObject *columns_count_before(Columns *self, PyObject *arg) {
    if (!ready(self)) return NULL;
    long long offset = PyLong_AsLongLong(arg);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    const int64_t *offsets = (const int64_t *)self->offsets.data;
    Py_ssize_t n = 0;
    while (n < self->count && offsets[n] < offset) n++;
    return PyLong_FromSsize_t(n);
}

static Py_ssize_t columns_len(Columns *self) { return self->count; }

/* start:stop of the records, checked. */
static int records_span(Columns *self, Py_ssize_t start, Py_ssize_t stop) {
    if (start < 0 || stop < start || stop > self->count) {
        PyErr_Format(PyExc_IndexError, "records %zd:%zd outside %zd", start, stop, self->count);
        return 0;
    }
    return 1;
}

static PyObject *columns_offset_at(Columns *self, PyObject *arg) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if ((i == -1 && PyErr_Occurred()) || !ready(self)) return NULL;
    if (i < 0 || i >= self->count) {
        PyErr_SetString(PyExc_IndexError, "record index out of range");
        return NULL;
    }
    return PyLong_FromLongLong(((const int64_t *)self->offsets.data)[i]);
}

static PyObject *columns_payload_bytes(Columns *self, PyObject *args) {
    Py_ssize_t start, stop;
    if (!ready(self) || !PyArg_ParseTuple(args, "nn:payload_bytes", &start, &stop)
            || !records_span(self, start, stop))
        return NULL;
    const int32_t *key_ends = (const int32_t *)self->keys.ends.data;
    const int32_t *value_ends = (const int32_t *)self->values.ends.data;
    return PyLong_FromSsize_t((Py_ssize_t)key_ends[stop] - key_ends[start] + value_ends[stop]
                              - value_ends[start]);
}

static PyObject *binary_item(Binary *c, Py_ssize_t i) {
    if (c->nulls.data[i]) Py_RETURN_NONE;
    const int32_t *ends = (const int32_t *)c->ends.data;
    return PyBytes_FromStringAndSize(c->data.data + ends[i], ends[i + 1] - ends[i]);
}

/* Header keys as Java's consumer reads them (`new String(bytes, UTF_8)`): bytes that are not
 * UTF-8 become U+FFFD rather than stopping the partition. */
static PyObject *headers_of(Columns *self, Py_ssize_t i, PyObject *no_headers) {
    const int32_t *ends = (const int32_t *)self->header_ends.data;
    Py_ssize_t first = ends[i], last = ends[i + 1];
    if (first == last) {
        Py_INCREF(no_headers);
        return no_headers;
    }
    PyObject *headers = PyTuple_New(last - first);
    if (!headers) return NULL;
    const int32_t *key_ends = (const int32_t *)self->header_keys.ends.data;
    for (Py_ssize_t h = first; h < last; h++) {
        PyObject *key = PyUnicode_DecodeUTF8(self->header_keys.data.data + key_ends[h],
                                             key_ends[h + 1] - key_ends[h], "replace");
        PyObject *value = key ? binary_item(&self->header_values, h) : NULL;
        PyObject *pair = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (!pair) {
            Py_DECREF(headers);
            return NULL;
        }
        PyObject_GC_UnTrack(pair);
        PyTuple_SET_ITEM(headers, h - first, pair);
    }
    PyObject_GC_UnTrack(headers);
    return headers;
}

/* messages(message_type, topic, partition, start, stop): records start:stop as tuples of
 * `message_type` (a NamedTuple of seven fields), made without calling its Python __new__.
 *
 * The tuples are left out of the cyclic garbage collector: they hold only numbers, bytes, text
 * and tuples of those, so they can be in no cycle, and a million of them tracked made the
 * collector's passes cost four fifths of consuming (1.1 M tuples/s, against 6.0 M untracked). */
static PyObject *columns_messages(Columns *self, PyObject *args) {
    PyTypeObject *message_type;
    PyObject *topic, *partition;
    Py_ssize_t from, stop;
    if (!ready(self) || !PyArg_ParseTuple(args, "O!OOnn:messages", &PyType_Type, &message_type,
                                          &topic, &partition, &from, &stop)
            || !records_span(self, from, stop))
        return NULL;
    if (!PyType_IsSubtype(message_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "message_type must be a tuple type");
        return NULL;
    }
    PyObject *list = PyList_New(stop - from);
    PyObject *no_headers = PyTuple_New(0);
    if (!list || !no_headers) goto error;
    const int64_t *offsets = (const int64_t *)self->offsets.data;
    const int64_t *timestamps = (const int64_t *)self->timestamps.data;
    for (Py_ssize_t i = from; i < stop; i++) {
        PyObject *message = message_type->tp_alloc(message_type, 7);
        if (!message) goto error;
        PyList_SET_ITEM(list, i - from, message);
        Py_INCREF(topic);
        PyTuple_SET_ITEM(message, 0, topic);
        Py_INCREF(partition);
        PyTuple_SET_ITEM(message, 1, partition);
        PyObject *fields[5];
        fields[0] = PyLong_FromLongLong(offsets[i]);
        fields[1] = binary_item(&self->keys, i);
        fields[2] = binary_item(&self->values, i);
        if (timestamps[i] >= 0) {
            fields[3] = PyLong_FromLongLong(timestamps[i]);
        } else {
            Py_INCREF(Py_None);
            fields[3] = Py_None;
        }
        fields[4] = headers_of(self, i, no_headers);
        int complete = 1;
        for (int k = 0; k < 5; k++) {
            if (!fields[k]) complete = 0;
            PyTuple_SET_ITEM(message, 2 + k, fields[k]);
        }
        if (!complete) {
            for (int k = 0; k < 5; k++) {
                if (!fields[k]) {
                    Py_INCREF(Py_None);
                    PyTuple_SET_ITEM(message, 2 + k, Py_None);
                }
            }
            goto error;
        }
        PyObject_GC_UnTrack(message);
    }
    Py_DECREF(no_headers);
    return list;
error:
    Py_XDECREF(list);
    Py_XDECREF(no_headers);
    return NULL;
}

/* A buffer of a Columns lent to Arrow without a copy: it keeps the Columns alive, and the
 * Columns takes no more records once lent (a realloc would move the memory). */
typedef struct {
    PyObject_HEAD
    PyObject *owner;
    const char *data;
    Py_ssize_t len;
} Region;

static int region_getbuffer(Region *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, (void *)self->data, self->len, 1, flags);
}

static void region_dealloc(Region *self) {
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs region_as_buffer = {(getbufferproc)region_getbuffer, NULL};

static PyTypeObject RegionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zkconsumer.records._columns.Region",
    .tp_basicsize = sizeof(Region),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only view of one of a Columns' buffers.",
    .tp_dealloc = (destructor)region_dealloc,
    .tp_as_buffer = &region_as_buffer,
};

static PyObject *lend(Columns *owner, const Buf *b) {
    Region *region = PyObject_New(Region, &RegionType);
    if (!region) return NULL;
    Py_INCREF(owner);
    region->owner = (PyObject *)owner;
    region->data = b->data ? b->data : "";
    region->len = b->len;
    owner->lent = 1;
    return (PyObject *)region;
}

/* Arrow's validity bitmap (bit set: a value) of the null flags, or None without nulls. */
static PyObject *validity(const Binary *c, Py_ssize_t count) {
    if (!c->null_count) Py_RETURN_NONE;
    PyObject *bitmap = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
    if (!bitmap) return NULL;
    unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(bitmap);
    memset(bits, 0, (size_t)(count + 7) / 8);
    for (Py_ssize_t i = 0; i < count; i++)
        if (!c->nulls.data[i]) bits[i >> 3] |= (unsigned char)(1u << (i & 7));
    return bitmap;
}

/* Timestamps as (data, validity or None, null count): a negative one is none (brokers before
 * 0.10 keep none), null to Arrow. */
static PyObject *timestamp_buffers(Columns *self) {
    const int64_t *timestamps = (const int64_t *)self->timestamps.data;
    Py_ssize_t count = self->count, nulls = 0;
    for (Py_ssize_t i = 0; i < count; i++) nulls += timestamps[i] < 0;
    PyObject *bitmap = Py_None;
    Py_INCREF(Py_None);
    if (nulls) {
        Py_DECREF(Py_None);
        bitmap = PyBytes_FromStringAndSize(NULL, (count + 7) / 8);
        if (!bitmap) return NULL;
        unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(bitmap);
        memset(bits, 0, (size_t)(count + 7) / 8);
        for (Py_ssize_t i = 0; i < count; i++)
            if (timestamps[i] >= 0) bits[i >> 3] |= (unsigned char)(1u << (i & 7));
    }
    return Py_BuildValue("(NNn)", lend(self, &self->timestamps), bitmap, nulls);
}

/* buffers(): every column's buffers, lent (see Region), for `pyarrow.Array.from_buffers`:
 * (count, offsets, timestamps, keys, values, header_ends, header_count, header_keys,
 * header_values), each binary column as (data, ends, validity or None, null count), the
 * timestamps as (data, validity or None, null count). */
static PyObject *binary_buffers(Columns *owner, const Binary *c, Py_ssize_t count) {
    return Py_BuildValue("(NNNn)", lend(owner, &c->data), lend(owner, &c->ends),
                         validity(c, count), c->null_count);
}

static PyObject *columns_buffers(Columns *self, PyObject *unused) {
    if (!ready(self)) return NULL;
    return Py_BuildValue("(nNNNNNnNN)", self->count, lend(self, &self->offsets),
                         timestamp_buffers(self), binary_buffers(self, &self->keys, self->count),
                         binary_buffers(self, &self->values, self->count),
                         lend(self, &self->header_ends), self->header_count,
                         binary_buffers(self, &self->header_keys, self->header_count),
                         binary_buffers(self, &self->header_values, self->header_count));
}

static PyMethodDef columns_methods[] = {
    {"add_message_set", (PyCFunction)columns_add_message_set, METH_VARARGS,
     "add_message_set(data, start, end, check_crcs, relative_to, log_append_time): the v0/v1 "
     "(relative_to, log_append_time: the wrapper's offset and timestamp, or None) "
     "messages of data[start:end], every one complete and uncompressed."},
    {"add_records", (PyCFunction)columns_add_records, METH_VARARGS,
     "add_records(data, start, end, count, base_offset, first_timestamp, max_timestamp, "
     "log_append_time): the records section of a v2 batch, decompressed."},
    {"count_before", (PyCFunction)columns_count_before, METH_O,
     "How many leading records are before this offset (a fetch may start inside a batch)."},
    {"offset_at", (PyCFunction)columns_offset_at, METH_O, "The offset of record i."},
    {"payload_bytes", (PyCFunction)columns_payload_bytes, METH_VARARGS,
     "payload_bytes(start, stop): bytes of the keys and values of records start:stop."},
    {"messages", (PyCFunction)columns_messages, METH_VARARGS,
     "messages(message_type, topic, partition, start, stop): records start:stop as tuples."},
    {"buffers", (PyCFunction)columns_buffers, METH_NOARGS, "The columns' buffers, for Arrow."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods columns_as_sequence = {
    .sq_length = (lenfunc)columns_len,
};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "zkconsumer.records._columns.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Decoded records of one partition's fetch, column by column.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)columns_init,
    .tp_dealloc = (destructor)columns_dealloc,
    .tp_methods = columns_methods,
    .tp_as_sequence = &columns_as_sequence,
};

/* -- the walk over entries ------------------------------------------------------------------ */

/* walk(data): (runs, complete) where `runs` lists the complete entries as (start, end, magic,
 * codec), consecutive uncompressed v0/v1 messages of one magic merged into one run, every
 * compressed message and every v2 batch a run of its own; `complete` is where the complete
 * entries end (a broker cuts a response at the byte limit asked for). Sizes and magics are
 * checked here. */
static PyObject *walk(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t length = view.len, position = 0, run_start = 0;
    int run_magic = -1;
    PyObject *runs = PyList_New(0);
    if (!runs) goto error;
    while (length - position >= 18) {
        const unsigned char *entry = data + position;
        int32_t size = be32(entry + 8);
        int magic = entry[16], codec = entry[17] & 0x07;
        if (size >= 0 && size > length - position - 12) break;
        Failure f;
        if (magic > 2 || size < (magic == 2 ? 49 : 14)) {
            (void)(magic > 2 ? FAIL(&f, be64(entry), "is in an unknown format (magic %d)", magic)
                             : FAIL(&f, be64(entry), "is too short (%d bytes)", size));
            failed(&f);
            goto error;
        }
        Py_ssize_t following = position + 12 + size;
        int alone = magic == 2 || codec;
        if (run_magic >= 0 && (alone || magic != run_magic)) {
            PyObject *run = Py_BuildValue("(nnii)", run_start, position, run_magic, 0);
            if (!run || PyList_Append(runs, run)) {
                Py_XDECREF(run);
                goto error;
            }
            Py_DECREF(run);
            run_magic = -1;
        }
        if (alone) {
            PyObject *run = Py_BuildValue("(nnii)", position, following, magic,
                                          magic == 2 ? 0 : codec);
            if (!run || PyList_Append(runs, run)) {
                Py_XDECREF(run);
                goto error;
            }
            Py_DECREF(run);
        } else if (run_magic < 0) {
            run_start = position;
            run_magic = magic;
        }
        position = following;
    }
    if (run_magic >= 0) {
        PyObject *run = Py_BuildValue("(nnii)", run_start, position, run_magic, 0);
        if (!run || PyList_Append(runs, run)) {
            Py_XDECREF(run);
            goto error;
        }
        Py_DECREF(run);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", runs, position);
error:
    Py_XDECREF(runs);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *checksum(PyObject *args, int castagnoli) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (!span(&view, start, end)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "the span asked for lies outside the data");
        return NULL;
    }
    uint32_t crc;
    const unsigned char *p = (const unsigned char *)view.buf + start;
    Py_BEGIN_ALLOW_THREADS
    crc = castagnoli ? crc32c(p, (size_t)(end - start)) : crc32_ieee(p, (size_t)(end - start));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *crc32c_of(PyObject *module, PyObject *args) { return checksum(args, 1); }
static PyObject *crc32_of(PyObject *module, PyObject *args) { return checksum(args, 0); }

static PyMethodDef module_methods[] = {
    {"walk", walk, METH_O, "The complete entries of a fetched log slice, as runs of one kind."},
    {"crc32c", crc32c_of, METH_VARARGS, "crc32c(data, start, end): CRC-32C of data[start:end]."},
    {"crc32", crc32_of, METH_VARARGS, "crc32(data, start, end): CRC-32 of data[start:end]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_columns",
    "Kafka records decoded into columns (see zkconsumer.records.columns).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__columns(void) {
    make_table(crc32_table, 0xEDB88320u);
    make_table(crc32c_table, 0x82F63B78u);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
    have_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    if (PyType_Ready(&ColumnsType) < 0 || PyType_Ready(&RegionType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (!module) return NULL;
    Py_INCREF(&ColumnsType);
    if (PyModule_AddObject(module, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(&ColumnsType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

/*
 * Locating one column's values in per-file stats JSON: the compiled kernel of core.stats_search.
 *
 * `locate` does in one pass per stats string what `stats_search._locate` otherwise does with
 * polars searches and numpy windows: it finds the `"minValues":{`, `"maxValues":{`,
 * `"nullCount":{` headers (first occurrence each) and every `"<column>":` key, follows the
 * document's strings and braces (`structure`) to check that it is one whole object and that each
 * key lies inside the object of the nearest header before it at the column's depth, and
 * delimits four values per file (numRecords, min, max, null count). It only locates: the caller
 * casts the values with Arrow and sends rows flagged `redo` (and values flagged `unsure`) to the
 * core's JSON parser. The rules are the Python path's, except that this one follows escapes and
 * braces inside strings exactly where the Python path sends such documents to the core (tests
 * compare the two, and both with the core). A key seen more than MAX_KEYS times or a document
 * with more than MAX_EVENTS braces also goes to the core.
 *
 * Output layout: value k of file i is at index 4 * i + k. The GIL is released while scanning.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_KEYS 8

static const char *HEADERS[3] = {"\"minValues\":{", "\"maxValues\":{", "\"nullCount\":{"};
static const Py_ssize_t HEADER_LEN = 13; /* each header; the bare form `"minValues"` is 11 */
static const char LEAD[] = "{\"numRecords\":";
static const Py_ssize_t LEAD_LEN = 14;

static inline uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

typedef struct {
    const uint8_t *key;
    Py_ssize_t key_len;
    uint32_t key4;
    int64_t header[3];
    uint8_t bare[3];
    int64_t keys[MAX_KEYS];
    int nkeys;
} Row;

/* The quote at `p` (the string ends at `limit`): a key occurrence, a header or neither. Returns
 * where scanning goes on (past a key: no quote inside it starts anything). */
static inline int64_t check(const uint8_t *text, int64_t p, int64_t limit, Row *row) {
    int64_t room = limit - p;
    /* the key: its first 4 bytes as one word first (keys are at least `"x":`) */
    if (room >= row->key_len && load32(text + p) == row->key4 &&
        memcmp(text + p + 4, row->key + 4, (size_t)(row->key_len - 4)) == 0) {
        if (row->nkeys < MAX_KEYS) row->keys[row->nkeys] = p;
        row->nkeys++;
        return p + row->key_len;
    }
    if (room < HEADER_LEN - 2) return p + 1;
    for (int h = 0; h < 3; h++) {
        if (memcmp(text + p, HEADERS[h], 11) == 0) {
            if (room >= HEADER_LEN && text[p + 11] == ':' && text[p + 12] == '{') {
                if (row->header[h] < 0) row->header[h] = p;
            } else {
                row->bare[h] = 1;
            }
            break;
        }
    }
    return p + 1;
}

#if defined(__SSE2__)
/* For the 64 bytes from `text`: bit j of `*quotes` set where text[j] is `"`, of the result
 * where text[j] is one of a, b, c. */
static inline uint64_t masks64(const uint8_t *text, __m128i a, __m128i b, __m128i c, uint64_t *quotes) {
    const __m128i quote = _mm_set1_epi8('"');
    uint64_t q = 0, any = 0;
    for (int j = 0; j < 4; j++) {
        __m128i block = _mm_loadu_si128((const __m128i *)(text + 16 * j));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, a), _mm_cmpeq_epi8(block, b)), _mm_cmpeq_epi8(block, c));
        q |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, quote)) << (16 * j);
        any |= (uint64_t)(uint16_t)_mm_movemask_epi8(hit) << (16 * j);
    }
    *quotes = q;
    return any;
}
#endif

static inline uint64_t prefix_xor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

#define MAX_EVENTS 512

/* The braces of a document that stand outside strings: position and depth after each. */
typedef struct {
    int64_t pos[MAX_EVENTS];
    int32_t depth[MAX_EVENTS];
    int count;
    int32_t level;
} Braces;

static inline int brace(Braces *b, int64_t pos, int open) {
    b->level += open ? 1 : -1;
    if (b->count == MAX_EVENTS) return 0;
    b->pos[b->count] = pos;
    b->depth[b->count++] = b->level;
    return 1;
}

/* Bytes [from, to) of a document, one at a time. */
static inline int structure_bytes(const uint8_t *text, int64_t from, int64_t to, int *inside, int *escaped, Braces *b) {
    for (int64_t p = from; p < to; p++) {
        uint8_t c = text[p];
        if (*escaped) {
            *escaped = 0;
        } else if (*inside) {
            if (c == '\\') *escaped = 1;
            else if (c == '"') *inside = 0;
        } else if (c == '"') {
            *inside = 1;
        } else if ((c == '{' || c == '}') && !brace(b, p, c == '{')) {
            return 0;
        }
    }
    return 1;
}

/* Whether [s, limit) looks like one whole JSON object — it starts with `{` and ends with `}`,
 * every string is closed, every `}` outside strings closes an open `{` and none stays open —
 * and its braces outside strings (into `b`). Truncated documents fail (the core's parse gives
 * them no stats). Strings are followed 64 bytes at a time (a prefix XOR of the quotes) unless a
 * block holds a backslash. */
static int structure(const uint8_t *text, Py_ssize_t size, int64_t s, int64_t limit, Braces *b) {
    b->count = 0;
    b->level = 0;
    if (limit - s < 2 || text[s] != '{' || text[limit - 1] != '}') return 0;
    int inside = 0, escaped = 0;
    int64_t p = s;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
    for (; p < limit && p + 64 <= size; p += 64) {
        int64_t len = limit - p < 64 ? limit - p : 64;
        uint64_t valid = len == 64 ? ~UINT64_C(0) : (UINT64_C(1) << len) - 1;
        uint64_t q = 0, bs = 0, lo = 0, hi = 0;
        for (int j = 0; j < 4; j++) {
            __m128i block = _mm_loadu_si128((const __m128i *)(text + p + 16 * j));
            q |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, quote)) << (16 * j);
            bs |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, slash)) << (16 * j);
            lo |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, open)) << (16 * j);
            hi |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, close)) << (16 * j);
        }
        if ((bs & valid) || escaped) {
            if (!structure_bytes(text, p, p + len, &inside, &escaped, b)) return 0;
            continue;
        }
        uint64_t in = prefix_xor(q & valid) ^ (inside ? ~UINT64_C(0) : 0);
        uint64_t events = (lo | hi) & valid & ~in;
        while (events) {
            int j = __builtin_ctzll(events);
            if (!brace(b, p + j, (int)((lo >> j) & 1))) return 0;
            events &= events - 1;
        }
        inside = (int)((in >> (len - 1)) & 1);
    }
#endif
    if (!structure_bytes(text, p, limit, &inside, &escaped, b)) return 0;
    if (inside || escaped || b->level != 0) return 0;
    for (int e = 0; e < b->count; e++) {
        if (b->depth[e] < 0 || (b->depth[e] == 0 && e != b->count - 1)) return 0;
    }
    return 1;
}

/* Depth at `pos`: after the last brace before it. */
static inline int32_t depth_at(const Braces *b, int64_t pos) {
    int32_t d = 0;
    for (int e = 0; e < b->count && b->pos[e] < pos; e++) d = b->depth[e];
    return d;
}

/* Every key occurrence and header of the string [s, limit) of `text` (`size` bytes). Only quotes
 * followed by the key's first character, `m` or `n` can start one: with SSE2 those candidates
 * are found 64 bytes at a time (reading past the string, never past the buffer). */
static void scan(const uint8_t *text, Py_ssize_t size, int64_t s, int64_t limit, Row *row) {
    int64_t p = s;
#if defined(__SSE2__)
    const uint8_t k1 = row->key[1];
    const __m128i first = _mm_set1_epi8((char)k1), m = _mm_set1_epi8('m'), n = _mm_set1_epi8('n');
    for (; p < limit && p + 65 <= size; p += 64) {
        uint64_t quotes, chars = masks64(text + p, first, m, n, &quotes);
        uint8_t after = text[p + 64];
        uint64_t carry = (uint64_t)(after == k1 || after == 'm' || after == 'n') << 63;
        uint64_t cand = quotes & ((chars >> 1) | carry);
        if (limit - p < 64) cand &= (UINT64_C(1) << (limit - p)) - 1;
        while (cand) {
            int64_t at = p + __builtin_ctzll(cand);
            int64_t resume = check(text, at, limit, row);
            cand &= cand - 1;
            if (resume - p >= 64) {
                p = resume - 64; /* the loop adds 64 */
                break;
            }
            if (resume > at + 1) cand &= ~((UINT64_C(1) << (resume - p)) - 1);
        }
    }
#endif
    for (; p < limit; p++) {
        if (text[p] == '"') p = check(text, p, limit, row) - 1;
    }
}

typedef struct {
    int64_t *first, *length;
    uint8_t *quoted, *unsure;
    uint64_t *head;
} Values;

/* The JSON value starting at `s` (the string ends at `limit`) into slot `j` of `out`. */
static void span(const uint8_t *data, Py_ssize_t size, int64_t s, int64_t limit, Values *out, Py_ssize_t j) {
    uint64_t words[2] = {0, 0};
    out->first[j] = s;
    out->length[j] = 0;
    out->quoted[j] = 0;
    out->unsure[j] = 1;
    if (s >= 0 && s < size) {
        Py_ssize_t take = size - s < 16 ? size - s : 16;
        memcpy(words, data + s, (size_t)take);
    }
    out->head[2 * j] = words[0];
    out->head[2 * j + 1] = words[1];
    if (s < 0 || s >= limit) {
        return;
    }
    if (data[s] == '"') {
        const uint8_t *close = memchr(data + s + 1, '"', (size_t)(limit - s - 1));
        if (close != NULL) {
            out->first[j] = s + 1;
            out->length[j] = (close - data) - s - 1;
            out->quoted[j] = 1;
            out->unsure[j] = 0;
        }
        return;
    }
    for (int64_t p = s; p < limit; p++) {
        uint8_t c = data[p];
        if (c == ',' || c == '}' || c == ']' || c <= ' ') {
            out->length[j] = p - s;
            out->unsure[j] = 0;
            return;
        }
    }
}

static PyObject *locate(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, starts, limits, has, needle, first, length, quoted, unsure, head, at, redo;
    int target_depth;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*iw*w*w*w*w*w*w*", &data, &starts, &limits, &has, &needle, &target_depth, &first,
                          &length, &quoted, &unsure, &head, &at, &redo)) {
        return NULL;
    }
    Py_buffer *all[] = {&data, &starts, &limits, &has, &needle, &first, &length, &quoted, &unsure, &head, &at, &redo};
    const Py_ssize_t count = sizeof(all) / sizeof(all[0]);
    Py_ssize_t n = starts.len / 8;
    int ok = starts.len == 8 * n && limits.len == 8 * n && has.len == n && first.len == 32 * n && length.len == 32 * n &&
             quoted.len == 4 * n && unsure.len == 4 * n && head.len == 64 * n && at.len == 4 * n && redo.len == n &&
             needle.len >= 4 && ((const uint8_t *)needle.buf)[0] == '"';
    if (!ok) {
        for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
        PyErr_SetString(PyExc_ValueError, "locate: buffers of inconsistent sizes");
        return NULL;
    }
    const uint8_t *text = data.buf, *key = needle.buf;
    const Py_ssize_t size = data.len, key_len = needle.len;
    const int64_t *st = starts.buf, *li = limits.buf;
    const uint8_t *hs = has.buf;
    Values out = {first.buf, length.buf, quoted.buf, unsure.buf, head.buf};
    uint8_t *found = at.buf, *again = redo.buf;
    int bad_bounds = 0;
    const uint32_t key4 = load32(key);
    Braces braces;

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = st[i], limit = li[i];
        int64_t value_at[4] = {limit, limit, limit, limit};
        uint8_t at_k[4] = {0, 0, 0, 0};
        uint8_t again_i = 0;
        if (!hs[i] || s < 0 || limit > size || s > limit) {
            if (hs[i]) bad_bounds = 1;
            goto emit;
        }
        Row row = {key, key_len, key4, {-1, -1, -1}, {0, 0, 0}, {0}, 0};
        if (limit - s >= LEAD_LEN && memcmp(text + s, LEAD, (size_t)LEAD_LEN) == 0) {
            at_k[0] = 1;
            value_at[0] = s + LEAD_LEN;
        }
        scan(text, size, s, limit, &row);
        const int64_t *header = row.header, *keys = row.keys;
        int nkeys = row.nkeys;
        for (int h = 0; h < 3; h++) {
            if (header[h] < 0 && row.bare[h]) again_i = 1; /* written another way: the core */
        }
        if (nkeys > MAX_KEYS) {
            again_i = 1;
            nkeys = MAX_KEYS;
        }
        if (!structure(text, size, s, limit, &braces)) {
            again_i = 1; /* not one whole object: the core */
            goto emit;
        }
        /* each header's object: its `{` opens depth 2 (a top-level key), it ends where depth 1 returns */
        int64_t end[3] = {-1, -1, -1};
        for (int h = 0; h < 3; h++) {
            if (header[h] < 0) continue;
            int e = 0;
            while (e < braces.count && braces.pos[e] < header[h] + HEADER_LEN - 1) e++;
            if (e == braces.count || braces.pos[e] != header[h] + HEADER_LEN - 1 || braces.depth[e] != 2) {
                again_i = 1; /* a header that is not a top-level key */
                continue;
            }
            while (e < braces.count && braces.depth[e] != 1) e++;
            end[h] = e < braces.count ? braces.pos[e] : -1;
        }
        int previous = -1;
        for (int k = 0; k < nkeys; k++) {
            int kind = -1;
            int64_t nearest = -1;
            for (int h = 0; h < 3; h++) {
                if (header[h] >= 0 && header[h] < keys[k] && header[h] > nearest) {
                    nearest = header[h];
                    kind = h;
                }
            }
            if (kind < 0 || keys[k] > end[kind] || depth_at(&braces, keys[k]) != target_depth) {
                again_i = 1; /* outside the three objects, or not at the column's level */
                continue;
            }
            if (kind == previous) again_i = 1; /* twice in one object */
            previous = kind;
            at_k[kind + 1] = 1;
            value_at[kind + 1] = keys[k] + key_len;
        }
    emit:
        for (int k = 0; k < 4; k++) {
            span(text, size, value_at[k], limit, &out, 4 * i + k);
            found[4 * i + k] = at_k[k];
        }
        again[i] = again_i;
    }
    Py_END_ALLOW_THREADS

    for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
    if (bad_bounds) {
        PyErr_SetString(PyExc_ValueError, "locate: a string lies outside the data buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* numRecords of each text that starts with `{"numRecords":` and 1-19 digits followed by a
 * non-digit or its end, the value fitting an int64 (`scan.stats._LEADING_RE`); found 0 for
 * every other text (the caller reads those another way). `starts`/`limits`: int64 byte
 * bounds of each text in `data`; `has`: 1 where a text is present. */
static PyObject *leading_records(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, starts, limits, has, values, found;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*", &data, &starts, &limits, &has, &values, &found)) return NULL;
    Py_buffer *all[] = {&data, &starts, &limits, &has, &values, &found};
    const Py_ssize_t count = sizeof(all) / sizeof(all[0]);
    Py_ssize_t n = starts.len / 8;
    if (starts.len != 8 * n || limits.len != 8 * n || has.len != n || values.len != 8 * n || found.len != n) {
        for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
        PyErr_SetString(PyExc_ValueError, "leading_records: buffers of inconsistent sizes");
        return NULL;
    }
    const uint8_t *text = data.buf, *hs = has.buf;
    const int64_t *st = starts.buf, *li = limits.buf;
    const Py_ssize_t size = data.len;
    int64_t *out = values.buf;
    uint8_t *got = found.buf;
    int bad_bounds = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = st[i], limit = li[i];
        out[i] = 0;
        got[i] = 0;
        if (!hs[i]) continue;
        if (s < 0 || limit > size || s > limit) {
            bad_bounds = 1;
            continue;
        }
        if (limit - s <= LEAD_LEN || memcmp(text + s, LEAD, (size_t)LEAD_LEN) != 0) continue;
        const uint8_t *p = text + s + LEAD_LEN, *end = text + limit;
        uint64_t v = 0;
        int digits = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
            v = v * 10 + (uint64_t)(*p - '0'); /* 19 digits fit a uint64 */
            p++;
            digits++;
        }
        if (digits == 0 || digits > 19 || v > (uint64_t)INT64_MAX) continue;
        out[i] = (int64_t)v;
        got[i] = 1;
    }
    Py_END_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
    if (bad_bounds) {
        PyErr_SetString(PyExc_ValueError, "leading_records: a string lies outside the data buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"leading_records", leading_records, METH_VARARGS,
     "leading_records(data, starts, limits, has, values, found): numRecords of the texts that start with it "
     "(see core.scan.stats)."},
    {"locate", locate, METH_VARARGS,
     "locate(data, starts, limits, has, needle, depth, first, length, quoted, unsure, head, at, redo): "
     "the four stats values of each file (see core.stats_search)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stats_kernel", "Compiled stats search of deltaexplore.core.stats_search.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__stats_kernel(void) { return PyModule_Create(&module); }

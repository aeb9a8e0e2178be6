/*
 * The counts history needs from add/remove lines, read straight off the commit text: the
 * compiled path of `core.scan.action_counts` (built by setup.py where a C compiler exists).
 *
 * `scan` walks each line once with a strict JSON reader. A line it follows is
 * `{"add"|"remove": {...}}` (one top-level key) whose action has a string `path` and whose
 * `size` (integer or null), `stats` (string or null) and `deletionVector` (object with a string
 * `storageType`, or null) are what the Arrow parse reads; every other key of the action is
 * skipped (checked to be valid JSON). numRecords is read from the stats text by the rules of
 * `scan.stats.num_records` (the first `"numRecords"\s*:\s*-?\d+`, at most 17 digits here). Any
 * line it is not sure about (escapes other than \" in stats, a repeated key, a number that is
 * not a plain integer where one is read, deep nesting, malformed JSON, another top-level key)
 * gets flag 0: the caller parses those lines the ordinary way.
 *
 * Output per line i: flags[i] (bit 0 read, bit 1 size known, bit 2 numRecords known, bit 3 DV
 * present), size[i], records[i], cardinality[i] (0 when the DV has none). GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64

typedef struct {
    const uint8_t *p, *end;
} Cur;

static inline void ws(Cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n')) c->p++;
}

/* after an object's or array's item: 1 at a ',' (another item follows), 2 at `close` (the
 * container ended), 0 at anything else; whitespace before and the mark itself are consumed */
static inline int next_item(Cur *c, uint8_t close) {
    ws(c);
    if (c->p < c->end && (*c->p == ',' || *c->p == close)) return *c->p++ == ',' ? 1 : 2;
    return 0;
}

static inline int hexd(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* a string at c->p (the opening quote); sets [*s, *e) to its raw inside and *esc to 0 (no
 * escapes), 1 (only \" escapes) or 2 (others); 0 when malformed (control characters, bad
 * escapes, unterminated). Runs of plain bytes are skipped 16 at a time where SSE2 is there. */
static int string(Cur *c, const uint8_t **s, const uint8_t **e, int *esc) {
    if (c->p >= c->end || *c->p != '"') return 0;
    const uint8_t *p = c->p + 1, *end = c->end;
    *s = p;
    *esc = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x1F);
#endif
    while (p < end) {
#if defined(__SSE2__)
        while (end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, slash)),
                                       _mm_cmpeq_epi8(_mm_max_epu8(x, low), low));
            unsigned mask = (unsigned)_mm_movemask_epi8(hit);
            if (!mask) {
                p += 16;
                continue;
            }
            unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, quote));
            unsigned b = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, slash));
            unsigned stop = mask & ~q & ~b; /* control characters */
            stop |= q & ~(b << 1);          /* a quote not escaped: the end */
            stop |= b & ~(q >> 1);          /* a backslash not before a quote (or last): done byte by byte */
            if (!stop) {
                if (b && !*esc) *esc = 1;
                p += 16;
                continue;
            }
            unsigned first = (unsigned)__builtin_ctz(stop);
            if ((b & ((1u << first) - 1)) && !*esc) *esc = 1;
            p += first;
            break;
        }
        if (p >= end) return 0;
#endif
        uint8_t ch = *p;
        if (ch == '"') {
            *e = p;
            c->p = p + 1;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch == '\\') {
            if (p + 1 >= end) return 0;
            uint8_t x = p[1];
            if (x == 'u') {
                if (p + 5 >= end || !hexd(p[2]) || !hexd(p[3]) || !hexd(p[4]) || !hexd(p[5])) return 0;
                *esc = 2;
                p += 6;
                continue;
            }
            if (x == 0 || !strchr("\"\\/bfnrt", x)) return 0;
            if (x != '"') *esc = 2;
            else if (!*esc) *esc = 1;
            p += 2;
            continue;
        }
        p++;
    }
    return 0;
}

/* a JSON number by the grammar; *integer says it was -?digits only, *digits how many */
static int number(Cur *c, int *integer, int *digits) {
    const uint8_t *p = c->p, *end = c->end;
    *integer = 1;
    if (p < end && *p == '-') p++;
    const uint8_t *d = p;
    if (p >= end || *p < '0' || *p > '9') return 0;
    if (*p == '0') p++;
    else while (p < end && *p >= '0' && *p <= '9') p++;
    *digits = (int)(p - d);
    if (p < end && *p == '.') {
        *integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    c->p = p;
    return 1;
}

static int literal(Cur *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* any JSON value, checked and skipped */
static int skip(Cur *c, int depth) {
    if (depth > MAX_DEPTH || c->p >= c->end) return 0;
    const uint8_t *s, *e;
    int esc, integer, digits;
    switch (*c->p) {
    case '"':
        return string(c, &s, &e, &esc);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    case '{':
        c->p++;
        ws(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 1;
        }
        for (;;) {
            ws(c);
            if (!string(c, &s, &e, &esc)) return 0;
            ws(c);
            if (c->p >= c->end || *c->p != ':') return 0;
            c->p++;
            ws(c);
            if (!skip(c, depth + 1)) return 0;
            int next = next_item(c, '}');
            if (next != 1) return next == 2;
        }
    case '[':
        c->p++;
        ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return 1;
        }
        for (;;) {
            ws(c);
            if (!skip(c, depth + 1)) return 0;
            int next = next_item(c, ']');
            if (next != 1) return next == 2;
        }
    default:
        return number(c, &integer, &digits);
    }
}

static inline int key_is(const uint8_t *s, const uint8_t *e, const char *name) {
    size_t n = strlen(name);
    return (size_t)(e - s) == n && memcmp(s, name, n) == 0;
}

/* an integer value (at most 17 digits) or null: 1 integer, 2 null, 0 anything else */
static int int_or_null(Cur *c, int64_t *out) {
    if (c->p < c->end && *c->p == 'n') return literal(c, "null") ? 2 : 0;
    const uint8_t *start = c->p;
    int integer, digits;
    if (!number(c, &integer, &digits) || !integer || digits > 17) return 0;
    int neg = *start == '-';
    int64_t v = 0;
    for (const uint8_t *p = start + neg; p < c->p; p++) v = v * 10 + (*p - '0');
    *out = neg ? -v : v;
    return 1;
}

/* numRecords from a stats text [s, e) whose only escapes are \" (1 found, 2 none, 0 unsure) */
static int records_of(const uint8_t *s, const uint8_t *e, int64_t *out) {
    static const char KEY[] = "\\\"numRecords\\\""; /* as it stands in the line */
    const size_t n = sizeof(KEY) - 1;
    for (const uint8_t *p = s; p + n <= e; p++) {
        if (*p != '\\' || memcmp(p, KEY, n) != 0) continue;
        const uint8_t *q = p + n;
        while (q < e && *q == ' ') q++;
        if (q >= e || *q != ':') continue;
        q++;
        while (q < e && *q == ' ') q++;
        int neg = 0;
        if (q < e && *q == '-') {
            neg = 1;
            q++;
        }
        const uint8_t *d = q;
        int64_t v = 0;
        while (q < e && *q >= '0' && *q <= '9') {
            if (q - d >= 17) return 0;
            v = v * 10 + (*q - '0');
            q++;
        }
        if (q == d) continue;
        *out = neg ? -v : v;
        return 1;
    }
    return 2;
}

/* the deletionVector object at c->p: 1 read (cardinality in *card, 0 if none), 0 unsure */
static int dv_object(Cur *c, int64_t *card) {
    const uint8_t *s, *e;
    int esc, seen = 0, got;
    int64_t v;
    *card = 0;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') return 0; /* {}: no DV, the Arrow path's rule */
    for (;;) {
        ws(c);
        if (!string(c, &s, &e, &esc) || esc) return 0;
        ws(c);
        if (c->p >= c->end || *c->p != ':') return 0;
        c->p++;
        ws(c);
        int bit = key_is(s, e, "storageType") ? 1 : key_is(s, e, "pathOrInlineDv") ? 2 : key_is(s, e, "offset") ? 4
                : key_is(s, e, "sizeInBytes") ? 8 : key_is(s, e, "cardinality") ? 16 : 0;
        if (bit & seen) return 0;
        seen |= bit;
        const uint8_t *vs, *ve;
        int vesc;
        if (bit == 1) {
            if (!string(c, &vs, &ve, &vesc)) return 0;
        } else if (bit == 2) {
            if (c->p < c->end && *c->p == 'n') {
                if (!literal(c, "null")) return 0;
            } else if (!string(c, &vs, &ve, &vesc)) return 0;
        } else if (bit == 4 || bit == 8) {
            got = int_or_null(c, &v);
            if (!got || (got == 1 && (v < INT32_MIN || v > INT32_MAX))) return 0;
        } else if (bit == 16) {
            got = int_or_null(c, &v);
            if (!got) return 0;
            if (got == 1) *card = v;
        } else if (!skip(c, 1)) {
            return 0;
        }
        int next = next_item(c, '}');
        if (next != 1) return next == 2 && (seen & 1);
    }
}

static uint8_t scan_line(const uint8_t *p, const uint8_t *end, int64_t *size, int64_t *records, int64_t *card) {
    Cur c = {p, end};
    const uint8_t *s, *e;
    int esc, seen = 0, got;
    uint8_t flags = 1;
    *size = *records = *card = 0;
    ws(&c);
    if (c.p >= c.end || *c.p != '{') return 0;
    c.p++;
    ws(&c);
    if (!string(&c, &s, &e, &esc) || esc || !(key_is(s, e, "add") || key_is(s, e, "remove"))) return 0;
    ws(&c);
    if (c.p >= c.end || *c.p != ':') return 0;
    c.p++;
    ws(&c);
    if (c.p >= c.end || *c.p != '{') return 0;
    c.p++;
    ws(&c);
    if (c.p < c.end && *c.p == '}') return 0; /* no path */
    for (;;) {
        ws(&c);
        if (!string(&c, &s, &e, &esc)) return 0;
        if (esc) return 0; /* a key with escapes might spell one of ours */
        ws(&c);
        if (c.p >= c.end || *c.p != ':') return 0;
        c.p++;
        ws(&c);
        int bit = key_is(s, e, "path") ? 1 : key_is(s, e, "size") ? 2 : key_is(s, e, "stats") ? 4
                : key_is(s, e, "deletionVector") ? 8 : 0;
        if (bit & seen) return 0;
        seen |= bit;
        const uint8_t *vs, *ve;
        int vesc;
        if (bit == 1) {
            if (!string(&c, &vs, &ve, &vesc)) return 0;
        } else if (bit == 2) {
            got = int_or_null(&c, size);
            if (!got) return 0;
            if (got == 1) flags |= 2;
        } else if (bit == 4) {
            if (c.p < c.end && *c.p == 'n') {
                if (!literal(&c, "null")) return 0;
            } else {
                if (!string(&c, &vs, &ve, &vesc) || vesc == 2) return 0; /* only \" escapes are followed */
                got = records_of(vs, ve, records);
                if (!got) return 0;
                if (got == 1) flags |= 4;
            }
        } else if (bit == 8) {
            if (c.p < c.end && *c.p == 'n') {
                if (!literal(&c, "null")) return 0;
            } else {
                if (c.p >= c.end || *c.p != '{' || !dv_object(&c, card)) return 0;
                flags |= 8;
            }
        } else if (!skip(&c, 1)) {
            return 0;
        }
        int next = next_item(&c, '}');
        if (next == 2) break;
        if (next != 1) return 0;
    }
    if (!(seen & 1)) return 0;
    ws(&c);
    if (c.p >= c.end || *c.p != '}') return 0; /* another top-level key: the ordinary parse */
    c.p++;
    ws(&c);
    if (c.p != c.end) return 0;
    return flags;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, starts, ends, flags, size, records, card;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*w*w*", &data, &starts, &ends, &flags, &size, &records, &card)) return NULL;
    Py_buffer *all[] = {&data, &starts, &ends, &flags, &size, &records, &card};
    const Py_ssize_t count = sizeof(all) / sizeof(all[0]);
    Py_ssize_t n = starts.len / 8;
    if (starts.len != 8 * n || ends.len != 8 * n || flags.len != n || size.len != 8 * n || records.len != 8 * n ||
        card.len != 8 * n) {
        for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
        PyErr_SetString(PyExc_ValueError, "scan: buffers of inconsistent sizes");
        return NULL;
    }
    const uint8_t *text = data.buf;
    const int64_t *st = starts.buf, *en = ends.buf;
    uint8_t *fl = flags.buf;
    int64_t *sz = size.buf, *rc = records.buf, *cd = card.buf;
    const Py_ssize_t total = data.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] < 0 || en[i] > total || st[i] > en[i]) {
            fl[i] = 0;
            sz[i] = rc[i] = cd[i] = 0;
            continue;
        }
        fl[i] = scan_line(text + st[i], text + en[i], &sz[i], &rc[i], &cd[i]);
    }
    Py_END_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, starts, ends, flags, size, records, cardinality): the counts of each add/remove line "
     "(see core.scan.action_counts)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_count_kernel", "Compiled add/remove counts of deltaexplore.core.scan.action_counts.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__count_kernel(void) { return PyModule_Create(&module); }

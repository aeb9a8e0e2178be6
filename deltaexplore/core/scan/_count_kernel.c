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
 *
 * `count_files` does the reading too (local commit files, `action_counts.commit_counts`): each
 * file is read whole into one reused buffer, split at its newlines, each line's kind read as
 * `json_log._KIND_RE` does, and each add/remove line `scan` reads is summed into its file's
 * counts (no per-line output); every other line, and the lines `scan` is unsure of, are copied
 * out for the caller to parse. Strings are checked to be UTF-8 (the Arrow split's check).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#if !defined(_WIN32)
#define HAVE_FILES 1 /* count_files: POSIX open/read */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 64

/* what `action_rows` reads of a line besides the counts (raw spans of the line; escapes refused) */
typedef struct {
    const uint8_t *path_s, *path_e;
    const uint8_t *st_s, *st_e, *dv_s, *dv_e; /* the DV's storageType, pathOrInlineDv (dv_s NULL: null) */
    int64_t offset;
    int has_offset;
    const uint8_t *pv_s, *pv_e; /* the partitionValues object's text (NULL: absent or null) */
    int nested_pv;              /* a "partitionValues" key inside another value: the regex could take it */
} Extra;

typedef struct {
    const uint8_t *p, *end; /* the line left to read */
    const uint8_t *lim;     /* bytes up to here may be loaded (>= end): blocks look past the line */
    Extra *x;               /* NULL: counts only */
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

/* [p, end) is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF) */
static int utf8_ok(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        uint8_t c = *p;
        if (c < 0x80) {
            p++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) return 0;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) return 0;
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

#if defined(__SSE2__)
/* bit i of each mask: byte p[i] is a quote, a backslash, a control character (< 0x20) or >= 0x80
 * (one signed comparison finds both: rare, told apart only when there) */
static inline void block_masks(const uint8_t *p, uint64_t *q, uint64_t *b, uint64_t *odd) {
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    uint64_t Q = 0, B = 0, O = 0;
    for (int k = 0; k < 4; k++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        Q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, quote)) << (16 * k);
        B |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, slash)) << (16 * k);
        O |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(x, space)) << (16 * k);
    }
    *q = Q;
    *b = B;
    *odd = O;
}

/* bit i: byte p[i] is >= 0x80 */
static inline uint64_t block_high(const uint8_t *p) {
    uint64_t H = 0;
    for (int k = 0; k < 4; k++) H |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * k))) << (16 * k);
    return H;
}
#endif

/* a string at c->p (the opening quote); sets [*s, *e) to its raw inside and *esc to 0 (no
 * escapes), 1 (only \" escapes) or 2 (others); 0 when malformed (control characters, bad
 * escapes, unterminated, not UTF-8). Where SSE2 is there, 64 bytes at a time while every
 * backslash escapes a quote (the stats text: `\"` around each key); any other escape and any
 * control character is read by the byte loop, which then hands back to the blocks. */
static int string(Cur *c, const uint8_t **s, const uint8_t **e, int *esc) {
    if (c->p >= c->end || *c->p != '"') return 0;
    const uint8_t *p = c->p + 1, *end = c->end;
    int high = 0;
    *s = p;
    *esc = 0;
    while (p < end) {
#if defined(__SSE2__)
        while (c->lim - p >= 64 && p < end) {
            uint64_t q, b, odd, ctl = 0, hi = 0;
            block_masks(p, &q, &b, &odd);
            ptrdiff_t left = end - p;
            uint64_t valid = left >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << left) - 1);
            q &= valid, b &= valid, odd &= valid;
            if (odd) {
                hi = block_high(p) & valid;
                ctl = odd & ~hi;
            }
            /* a backslash at bit 63 is left to the next block, which starts at it */
            const uint64_t last = (uint64_t)1 << 63;
            uint64_t bad = (b & ~(q >> 1) & ~last) | ctl;
            uint64_t closing = q & ~(b << 1);
            uint64_t stop = closing | bad;
            if (!stop) {
                if (b && !*esc) *esc = 1;
                high |= hi != 0;
                p += (b & last) ? 63 : 64;
                continue;
            }
            unsigned first = (unsigned)__builtin_ctzll(stop);
            uint64_t before = ((uint64_t)1 << first) - 1;
            if ((b & before) && !*esc) *esc = 1;
            high |= (hi & before) != 0;
            p += first;
            if (closing & ((uint64_t)1 << first)) goto closed;
            break; /* an escape other than \" or a control character: the byte loop */
        }
        if (p >= end) return 0;
#endif
        uint8_t ch = *p;
        if (ch == '"') goto closed;
        if (ch < 0x20) return 0;
        if (ch >= 0x80) high = 1;
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
closed:
    if (high && !utf8_ok(*s, p)) return 0;
    *e = p;
    c->p = p + 1;
    return 1;
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

static inline int key_is(const uint8_t *s, const uint8_t *e, const char *name) {
    size_t n = strlen(name);
    return (size_t)(e - s) == n && memcmp(s, name, n) == 0;
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
            if (c->x && key_is(s, e, "partitionValues")) c->x->nested_pv = 1;
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
            if (c->x) {
                if (vesc) return 0;
                c->x->st_s = vs, c->x->st_e = ve;
            }
        } else if (bit == 2) {
            if (c->p < c->end && *c->p == 'n') {
                if (!literal(c, "null")) return 0;
            } else {
                if (!string(c, &vs, &ve, &vesc)) return 0;
                if (c->x) {
                    if (vesc) return 0;
                    c->x->dv_s = vs, c->x->dv_e = ve;
                }
            }
        } else if (bit == 4 || bit == 8) {
            got = int_or_null(c, &v);
            if (!got || (got == 1 && (v < INT32_MIN || v > INT32_MAX))) return 0;
            if (bit == 4 && got == 1 && c->x) c->x->offset = v, c->x->has_offset = 1;
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

static uint8_t scan_line(const uint8_t *p, const uint8_t *end, const uint8_t *lim, int64_t *size, int64_t *records,
                         int64_t *card, Extra *x) {
    Cur c = {p, end, lim, x};
    if (x) memset(x, 0, sizeof(*x));
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
                : key_is(s, e, "deletionVector") ? 8 : (x && key_is(s, e, "partitionValues")) ? 16 : 0;
        if (bit & seen) return 0;
        seen |= bit;
        const uint8_t *vs, *ve;
        int vesc;
        if (bit == 1) {
            if (!string(&c, &vs, &ve, &vesc)) return 0;
            if (x) {
                if (vesc) return 0;
                x->path_s = vs, x->path_e = ve;
            }
        } else if (bit == 16) {
            /* the text `json_log._map_texts` cuts out: a flat object (no braces, no escapes) */
            if (c.p < c.end && *c.p == 'n') {
                if (!literal(&c, "null")) return 0;
            } else {
                const uint8_t *from = c.p;
                if (from >= c.end || *from != '{' || !skip(&c, 1)) return 0;
                for (const uint8_t *q = from + 1; q < c.p - 1; q++)
                    if (*q == '{' || *q == '}' || *q == '\\') return 0;
                x->pv_s = from, x->pv_e = c.p;
            }
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
    if (!(seen & 1) || (x && x->nested_pv)) return 0;
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
        fl[i] = scan_line(text + st[i], text + en[i], text + total, &sz[i], &rc[i], &cd[i], NULL);
    }
    Py_END_ALLOW_THREADS
    for (Py_ssize_t b = 0; b < count; b++) PyBuffer_Release(all[b]);
    Py_RETURN_NONE;
}

/* ---- whole commit files: read, split into lines, counted per file ------------------------ */
#if defined(HAVE_FILES)

/* the kind of a line as `json_log._KIND_RE` reads it (`^\s*\{\s*"([A-Za-z_][A-Za-z0-9_]*)"`,
 * RE2's \s: [\t\n\f\r ]): 1 add, 2 remove, 0 any other or none */
static int line_kind(const uint8_t *p, const uint8_t *end) {
#define RE_WS(x) ((x) == ' ' || (x) == '\t' || (x) == '\n' || (x) == '\f' || (x) == '\r')
    while (p < end && RE_WS(*p)) p++;
    if (p >= end || *p++ != '{') return 0;
    while (p < end && RE_WS(*p)) p++;
    if (p >= end || *p++ != '"') return 0;
    const uint8_t *s = p;
    while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (p > s && *p >= '0' && *p <= '9')))
        p++;
    if (p >= end || *p != '"') return 0;
    if (p - s == 3 && memcmp(s, "add", 3) == 0) return 1;
    if (p - s == 6 && memcmp(s, "remove", 6) == 0) return 2;
    return 0;
#undef RE_WS
}

/* per file, for adds (k = 0) then removes (k = 1), at [file * NCOUNTS + k * 6 + j]: */
enum { FILES, BYTES, BYTES_UNKNOWN, ROWS, ROWS_UNKNOWN, DVS, NCOUNTS = 12 };
#define PAD 64 /* bytes after a file's text that block loads may touch */

typedef struct {
    uint8_t *buf;
    size_t len, cap;
} Bytes;

static int grow(Bytes *b, size_t need) {
    if (b->len + need <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + need) cap *= 2;
    uint8_t *buf = realloc(b->buf, cap);
    if (!buf) return 0;
    b->buf = buf;
    b->cap = cap;
    return 1;
}

static int append(Bytes *b, const void *data, size_t n) {
    if (!grow(b, n)) return 0;
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    return 1;
}

/* the whole file at `path` into `text` (from 0, PAD zero bytes after): 0, or an errno */
static int read_file(const char *path, Bytes *text) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno ? errno : EIO;
    struct stat st;
    size_t want = (fstat(fd, &st) == 0 && st.st_size > 0) ? (size_t)st.st_size : 0;
    text->len = 0;
    for (;;) {
        if (!grow(text, (want > text->len ? want - text->len : 0) + 1 + PAD)) {
            close(fd);
            return ENOMEM;
        }
        ssize_t got = read(fd, text->buf + text->len, text->cap - text->len - PAD);
        if (got < 0) {
            if (errno == EINTR) continue;
            int err = errno ? errno : EIO;
            close(fd);
            return err;
        }
        if (got == 0) break;
        text->len += (size_t)got; /* a file that grew since its stat is read to its end */
    }
    close(fd);
    memset(text->buf + text->len, 0, PAD);
    return 0;
}

/* one file's lines: add/remove lines the scanner reads are counted into `counts`; every other
 * line (and every line it is unsure of) goes to `rest`, with (file, line number, end offset in
 * rest) in `index`. 0, or ENOMEM. */
static int count_text(const uint8_t *text, size_t len, int64_t file, int64_t *counts, Bytes *rest, Bytes *index) {
    const uint8_t *p = text, *end = text + len, *lim = text + len + PAD;
    int64_t line = 0;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *stop = nl ? nl + 1 : end;
        int kind = line_kind(p, stop);
        uint8_t flags = 0;
        int64_t size, records, card;
        if (kind) flags = scan_line(p, stop, lim, &size, &records, &card, NULL);
        if (flags) {
            int64_t *k = counts + file * NCOUNTS + (kind - 1) * 6;
            k[FILES] += 1;
            k[BYTES] += size; /* 0 where null */
            k[BYTES_UNKNOWN] += !(flags & 2);
            if (flags & 4) k[ROWS] += records - card;
            k[ROWS_UNKNOWN] += !(flags & 4);
            k[DVS] += (flags & 8) != 0;
        } else {
            if (!append(rest, p, (size_t)(stop - p))) return ENOMEM;
            if (!nl && !append(rest, "\n", 1)) return ENOMEM; /* a last line without one: as the split adds */
            int64_t row[3] = {file, line, (int64_t)rest->len};
            if (!append(index, row, sizeof(row))) return ENOMEM;
        }
        line++;
        p = stop;
    }
    return 0;
}

/* The one argument of `name`, a list of bytes paths, as a tuple of our own (the list may change
   while the GIL is free); NULL with a TypeError set if it is not one. */
static PyObject *path_tuple(PyObject *args, const char *name) {
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list)) return NULL;
    PyObject *paths = PySequence_Tuple(list);
    if (!paths) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(paths); i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(paths, i))) {
            Py_DECREF(paths);
            PyErr_Format(PyExc_TypeError, "%s: paths must be bytes", name);
            return NULL;
        }
    }
    return paths;
}

static PyObject *count_files(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *paths = path_tuple(args, "count_files");
    if (!paths) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(paths);
    int64_t *counts = calloc((size_t)n * NCOUNTS + 1, sizeof(int64_t));
    int32_t *status = calloc((size_t)n + 1, sizeof(int32_t));
    Bytes text = {0}, rest = {0}, index = {0};
    int oom = !counts || !status;
    if (!oom) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && !oom; i++) {
            int err = read_file(PyBytes_AS_STRING(PyTuple_GET_ITEM(paths, i)), &text);
            if (err == ENOMEM) oom = 1;
            else if (err) status[i] = err; /* the caller reads the log the ordinary way (typed errors) */
            else if (count_text(text.buf, text.len, i, counts, &rest, &index)) oom = 1;
        }
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(paths);
    PyObject *out = NULL;
    if (oom) {
        PyErr_NoMemory();
    } else {
        out = Py_BuildValue("(y#y#y#y#)", (const char *)counts, (Py_ssize_t)(n * NCOUNTS * sizeof(int64_t)),
                            (const char *)status, (Py_ssize_t)(n * sizeof(int32_t)), (const char *)(rest.buf ? rest.buf : (uint8_t *)""),
                            (Py_ssize_t)rest.len, (const char *)(index.buf ? index.buf : (uint8_t *)""), (Py_ssize_t)index.len);
    }
    free(counts);
    free(status);
    free(text.buf);
    free(rest.buf);
    free(index.buf);
    return out;
}

/* action_rows: per add/remove line read, a row (kind, file, line, size, records, cardinality,
 * flags), its replay key `path \0 dv id` (`replay.dv_unique_id`: storageType pathOrInlineDv
 * [@offset]) and its partitionValues text; other and unsure lines to `rest` as in count_files */
enum { ROW_KIND, ROW_FILE, ROW_LINE, ROW_SIZE, ROW_RECORDS, ROW_CARD, ROW_FLAGS, ROW_WIDTH };

typedef struct {
    Bytes rows[2], keys[2], key_ends[2], parts, part_ends, rest, index; /* [0] adds, [1] removes */
} Rows;

static int rows_of_text(const uint8_t *text, size_t len, int64_t file, Rows *o) {
    const uint8_t *p = text, *end = text + len, *lim = text + len + PAD;
    int64_t line = 0;
    Extra x;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *stop = nl ? nl + 1 : end;
        int kind = line_kind(p, stop);
        uint8_t flags = 0;
        int64_t size, records, card;
        if (kind) flags = scan_line(p, stop, lim, &size, &records, &card, &x);
        if (flags) {
            int k = kind - 1;
            Bytes *keys = &o->keys[k];
            int64_t row[ROW_WIDTH] = {kind, file, line, size, (flags & 4) ? records : 0, card, flags | (x.pv_s ? 16 : 0)};
            if (!append(&o->rows[k], row, sizeof(row))) return ENOMEM;
            if (!append(keys, x.path_s, (size_t)(x.path_e - x.path_s)) || !append(keys, "", 1)) return ENOMEM;
            if ((flags & 8) && x.dv_s) {
                if (!append(keys, x.st_s, (size_t)(x.st_e - x.st_s)) || !append(keys, x.dv_s, (size_t)(x.dv_e - x.dv_s)))
                    return ENOMEM;
                if (x.has_offset) {
                    char digits[32];
                    int n = snprintf(digits, sizeof(digits), "@%lld", (long long)x.offset);
                    if (!append(keys, digits, (size_t)n)) return ENOMEM;
                }
            }
            int64_t key_end = (int64_t)keys->len;
            if (!append(&o->key_ends[k], &key_end, sizeof(key_end))) return ENOMEM;
            if (k == 0) {
                if (x.pv_s && !append(&o->parts, x.pv_s, (size_t)(x.pv_e - x.pv_s))) return ENOMEM;
                int64_t part_end = (int64_t)o->parts.len;
                if (!append(&o->part_ends, &part_end, sizeof(part_end))) return ENOMEM;
            }
        } else {
            if (!append(&o->rest, p, (size_t)(stop - p))) return ENOMEM;
            if (!nl && !append(&o->rest, "\n", 1)) return ENOMEM;
            int64_t row[3] = {file, line, (int64_t)o->rest.len};
            if (!append(&o->index, row, sizeof(row))) return ENOMEM;
        }
        line++;
        p = stop;
    }
    return 0;
}

/* a read-only buffer owning a malloc'd block: the kernel's outputs handed over without a copy
 * (a copy of 200 MB costs as much as a third of the pass: fresh pages, zeroed, then filled) */
typedef struct {
    PyObject_HEAD
    uint8_t *buf;
    Py_ssize_t len;
} Owned;

static void owned_dealloc(Owned *self) {
    free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(Owned *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->buf ? self->buf : (uint8_t *)"", self->len, 1, flags);
}

static Py_ssize_t owned_length(Owned *self) { return self->len; }

static PyBufferProcs owned_as_buffer = {(getbufferproc)owned_getbuffer, NULL};
static PySequenceMethods owned_as_sequence = {.sq_length = (lenfunc)owned_length};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_count_kernel.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_as_sequence = &owned_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only buffer the count kernel filled (its memory freed with it).",
};

/* `b`'s block as an `Owned` (b is emptied: the object frees it) */
static PyObject *as_bytes(Bytes *b) {
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) return NULL;
    o->buf = b->buf;
    o->len = (Py_ssize_t)b->len;
    b->buf = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

static PyObject *action_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *paths = path_tuple(args, "action_rows");
    if (!paths) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(paths);
    int32_t *status = calloc((size_t)n + 1, sizeof(int32_t));
    Bytes text = {0};
    Rows o;
    memset(&o, 0, sizeof(o));
    int oom = !status;
    if (!oom) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && !oom; i++) {
            int err = read_file(PyBytes_AS_STRING(PyTuple_GET_ITEM(paths, i)), &text);
            if (err == ENOMEM) oom = 1;
            else if (err) status[i] = err;
            else if (rows_of_text(text.buf, text.len, i, &o)) oom = 1;
        }
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(paths);
    PyObject *out = NULL;
    if (oom) {
        PyErr_NoMemory();
    } else {
        Bytes st = {(uint8_t *)status, (size_t)n * sizeof(int32_t), 0};
        status = NULL; /* handed over with `st` */
        Bytes *parts[11] = {&o.rows[0], &o.keys[0], &o.key_ends[0], &o.parts, &o.part_ends, &o.rows[1], &o.keys[1],
                            &o.key_ends[1], &st, &o.rest, &o.index};
        out = PyTuple_New(11);
        for (int k = 0; out && k < 11; k++) {
            PyObject *item = as_bytes(parts[k]);
            if (!item) {
                Py_CLEAR(out);
                break;
            }
            PyTuple_SET_ITEM(out, k, item);
        }
        free(st.buf); /* NULL once handed over */
    }
    free(status);
    free(text.buf);
    Bytes *all[] = {&o.rows[0], &o.rows[1], &o.keys[0], &o.keys[1], &o.key_ends[0], &o.key_ends[1], &o.parts, &o.part_ends, &o.rest, &o.index};
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) free(all[k]->buf);
    return out;
}

#endif /* HAVE_FILES */

/* ---- hash_strings: a 64-bit hash per string (the timeline's replay keys) ------------------- */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ mix64(w)) * 0x9e3779b97f4a7c15ULL;
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    return mix64(h ^ mix64(tail ^ (n - i)));
}

static PyObject *hash_strings(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer offsets, data, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &offsets, &data, &out)) return NULL;
    Py_ssize_t n = out.len / 8;
    const int64_t *off = offsets.buf;
    int ok = out.len == 8 * n && offsets.len == 8 * (n + 1);
    for (Py_ssize_t i = 0; ok && i < n; i++) ok = off[i] >= 0 && off[i] <= off[i + 1] && off[i + 1] <= data.len;
    if (ok) {
        const uint8_t *text = data.buf;
        uint64_t *h = out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) h[i] = hash_bytes(text + off[i], (size_t)(off[i + 1] - off[i]));
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    PyBuffer_Release(&out);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "hash_strings: offsets (int64, n + 1) do not fit the data and the output (uint64, n)");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, starts, ends, flags, size, records, cardinality): the counts of each add/remove line "
     "(see core.scan.action_counts)."},
#if defined(HAVE_FILES)
    {"count_files", count_files, METH_VARARGS,
     "count_files(paths): read each commit file (bytes paths) and count its add/remove lines: (counts int64[n, 12], "
     "status int32[n] (0 or an errno), rest (the lines not counted), index int64[m, 3] (file, line, end in rest))."},
    {"action_rows", action_rows, METH_VARARGS,
     "action_rows(paths): read each commit file (bytes paths) and return its add/remove actions: (add rows int64[m, 7] "
     "(kind, file, line, size, records, cardinality, flags), their keys, key ends int64[m], partition texts, their ends, "
     "remove rows, keys, key ends, status int32[n], rest, index int64[k, 3]) (see scan.action_rows)."},
#endif
    {"hash_strings", hash_strings, METH_VARARGS,
     "hash_strings(offsets, data, out): a 64-bit hash of each string (int64 offsets, n + 1) into out (uint64, n)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_count_kernel", "Compiled add/remove counts of deltaexplore.core.scan.action_counts.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__count_kernel(void) {
#if defined(HAVE_FILES)
    if (PyType_Ready(&OwnedType) < 0) return NULL;
#endif
    return PyModule_Create(&module);
}

"""The text kernels behind :mod:`cyrank.io`: one-pass reader and writer of LETOR/SVMlight text, the ``key = value``
pairs of its comments, and the TREC run/qrels reader (which shares the number parser).

Format, one example per line (blank lines and lines holding only a comment are skipped)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

Tokens are separated by ASCII whitespace (space, \\t, \\r, \\v, \\f); ``#`` starts a comment running to the end of
the line. ``label`` and ``value`` are decimal floats as Python's ``float()`` reads them (sign, digits, point,
exponent, ``inf``/``infinity``/``nan`` in any case; no ``_`` separators, no hex); ``index`` is a non-negative
integer, strictly increasing along a line; ``qid`` an int64. The result equals scikit-learn's
``load_svmlight_file(..., query_id=True)``: values are correctly rounded (Clinger's exact fast path, else C
``strtod``), float32 data are the float64 values rounded once to float32.

:func:`parse_svmlight` runs without the GIL in one pass over the bytes, into malloc'ed buffers grown by doubling,
and raises ``ValueError`` naming the line of the first malformed token. :func:`comment_pairs` and
:func:`span_strings` read the comments (LETOR's ``#docid = GX029-35-5894638 inc = 1 prob = 0.0``) in a second pass
over the spans the reader records when asked; :func:`parse_trec` reads TREC runs and qrels into dicts.
"""
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc, strtod
from libc.string cimport memchr, memcmp, memcpy, strlen
from cpython.unicode cimport PyUnicode_AsUTF8AndSize

import numpy as np

# Character codes (no DEF: an anonymous enum).
cdef enum:
    C_TAB = 9
    C_LF = 10
    C_VT = 11
    C_FF = 12
    C_CR = 13
    C_SPACE = 32
    C_HASH = 35
    C_PLUS = 43
    C_MINUS = 45
    C_DOT = 46
    C_ZERO = 48
    C_COLON = 58
    C_EQUALS = 61

# Error codes of parse_buffer.
cdef enum:
    E_OK = 0
    E_LABEL = 1            # label is not a number
    E_FEATURE = 2          # feature token is not index:value
    E_QID = 3              # qid:<int64> malformed
    E_QID_POSITION = 4     # qid token after a feature
    E_QID_MIXED = 5        # some lines with qid, some without
    E_INDEX_INVALID = 6    # negative index, or 0 when indices are one-based
    E_ORDER = 7            # index not larger than the previous one on its line
    E_INDEX_RANGE = 8      # index beyond 2**62
    E_NOMEM = 9

cdef int64_t MAX_INDEX = 4611686018427387904  # 2**62
cdef uint64_t TWO53 = 9007199254740992

# 10**0 .. 10**22, each exact in binary64 (5**22 < 2**53); built by exact multiplications.
cdef double POW10[23]
cdef int _k
POW10[0] = 1.0
for _k in range(1, 23):
    POW10[_k] = POW10[_k - 1] * 10.0


cdef struct Parsed:
    double *data64
    float *data32
    int64_t *indices
    int64_t *indptr
    double *labels
    int64_t *qids
    int64_t nnz
    int64_t cap_nnz
    int64_t rows
    int64_t cap_rows
    int64_t min_index
    int64_t max_index
    int has_qid          # -1 until the first row, then 0 or 1
    int64_t qid_line     # line of the first row (the one that fixed has_qid)
    int error
    int64_t err_line
    int64_t err_pos      # byte offset of the offending token
    int64_t err_aux      # previous index (E_ORDER), offending index (E_INDEX_INVALID)
    int64_t *row_end     # NULL, or where each row's data ends (its '#' comment, newline or the end of the text)


cdef inline bint is_blank(unsigned char c) noexcept nogil:
    return c == C_SPACE or c == C_TAB or c == C_CR or c == C_VT or c == C_FF


cdef inline bint is_delim(const unsigned char *p, const unsigned char *end) noexcept nogil:
    """True where a token ends: whitespace, newline, comment, or the end of the buffer."""
    if p >= end:
        return True
    return is_blank(p[0]) or p[0] == C_LF or p[0] == C_HASH


cdef inline bint match_lower(const unsigned char *p, const char *word) noexcept nogil:
    """p starts with the lowercase ASCII ``word`` (any case). Stops at the first mismatch (NUL-safe)."""
    cdef int i = 0
    while word[i] != 0:
        if (p[i] | 0x20) != <unsigned char> word[i]:
            return False
        i += 1
    return True


cdef double slow_strtod(const unsigned char *start, const unsigned char *stop, unsigned char dp,
                        bint *ok) noexcept nogil:
    """strtod on [start, stop) (validated decimal syntax); '.' is swapped for the locale's decimal point."""
    cdef char small[128]
    cdef char *tmp = small
    cdef char *endp
    cdef int64_t n = stop - start
    cdef int64_t i
    cdef double v
    if dp == C_DOT:                      # strtod stops where the validated token stops
        v = strtod(<const char *> start, &endp)
        ok[0] = <const unsigned char *> endp == stop
        return v
    if n + 1 > 128:
        tmp = <char *> malloc(n + 1)
        if tmp == NULL:
            ok[0] = False
            return 0.0
    for i in range(n):
        tmp[i] = <char> (dp if start[i] == C_DOT else start[i])
    tmp[n] = 0
    v = strtod(tmp, &endp)
    ok[0] = endp == tmp + n
    if tmp != small:
        free(tmp)
    return v


cdef inline const unsigned char *parse_double(const unsigned char *p, double *out, unsigned char dp) noexcept nogil:
    """Parse a float at p as Python's float() does; return the end of the number, or NULL if there is none.

    Exact: when the significand has at most 19 digits and is <= 2**53 and |exponent| <= 22, the value is one
    correctly rounded IEEE product/quotient of two exact doubles (Clinger's fast path); otherwise strtod.
    """
    cdef const unsigned char *start = p
    cdef bint neg = False
    cdef bint many = False
    cdef bint any_digit = False
    cdef bint eneg = False
    cdef bint ok = True
    cdef uint64_t m = 0
    cdef int nd = 0
    cdef int64_t e10 = 0
    cdef int64_t ex = 0
    cdef unsigned int d
    cdef double v
    if p[0] == C_MINUS:
        neg = True
        p += 1
    elif p[0] == C_PLUS:
        p += 1
    d = <unsigned int> p[0] - C_ZERO
    if d >= 10 and p[0] != C_DOT:
        if match_lower(p, b"inf"):
            p += 3
            if match_lower(p, b"inity"):
                p += 5
            v = INFINITY
        elif match_lower(p, b"nan"):
            p += 3
            v = NAN
        else:
            return NULL
        out[0] = -v if neg else v
        return p
    while d < 10:
        any_digit = True
        if m == 0 and d == 0:
            pass                      # leading zero
        elif nd < 19:
            m = m * 10 + d
            nd += 1
        else:
            many = True               # digit beyond 19 significant ones: exact path not possible
            e10 += 1
        p += 1
        d = <unsigned int> p[0] - C_ZERO
    if p[0] == C_DOT:
        p += 1
        d = <unsigned int> p[0] - C_ZERO
        while d < 10:
            any_digit = True
            if m == 0 and d == 0:
                e10 -= 1
            elif nd < 19:
                m = m * 10 + d
                nd += 1
                e10 -= 1
            else:
                many = True
            p += 1
            d = <unsigned int> p[0] - C_ZERO
    if not any_digit:
        return NULL
    if (p[0] | 0x20) == 101:          # 'e' or 'E'
        p += 1
        if p[0] == C_MINUS:
            eneg = True
            p += 1
        elif p[0] == C_PLUS:
            p += 1
        d = <unsigned int> p[0] - C_ZERO
        if d >= 10:
            return NULL               # "1e", "1e+": not a number for Python either
        while d < 10:
            if ex < 100000000:
                ex = ex * 10 + d
            p += 1
            d = <unsigned int> p[0] - C_ZERO
        e10 += -ex if eneg else ex
    if m == 0:
        v = 0.0
    elif not many and m <= TWO53 and -22 <= e10 <= 22:
        v = <double> m
        if e10 >= 0:
            v = v * POW10[e10]
        else:
            v = v / POW10[-e10]
    else:
        v = slow_strtod(start, p, dp, &ok)   # includes the sign
        if not ok:
            return NULL
        out[0] = v
        return p
    out[0] = -v if neg else v
    return p


cdef inline const unsigned char *parse_int(const unsigned char *p, int64_t *out, bint *overflow) noexcept nogil:
    """Parse [+-]digits as an int64; return the end, or NULL without digits. Sets overflow beyond int64."""
    cdef bint neg = False
    cdef uint64_t v = 0
    cdef uint64_t limit
    cdef unsigned int d
    overflow[0] = False
    if p[0] == C_MINUS:
        neg = True
        p += 1
    elif p[0] == C_PLUS:
        p += 1
    limit = (<uint64_t> 9223372036854775807) + (1 if neg else 0)
    d = <unsigned int> p[0] - C_ZERO
    if d >= 10:
        return NULL
    while d < 10:
        if v > (limit - d) // 10:
            overflow[0] = True
        else:
            v = v * 10 + d
        p += 1
        d = <unsigned int> p[0] - C_ZERO
    if neg:
        out[0] = -(<int64_t> (v - 1)) - 1 if v > 0 else 0
    else:
        out[0] = <int64_t> v
    return p


cdef int grow_nnz(Parsed *P, bint want32) noexcept nogil:
    cdef int64_t cap = P.cap_nnz * 2 if P.cap_nnz > 0 else 1024
    cdef void *a
    cdef void *b
    if want32:
        a = realloc(P.data32, cap * sizeof(float))
        if a == NULL:
            return -1
        P.data32 = <float *> a
    else:
        a = realloc(P.data64, cap * sizeof(double))
        if a == NULL:
            return -1
        P.data64 = <double *> a
    b = realloc(P.indices, cap * sizeof(int64_t))
    if b == NULL:
        return -1
    P.indices = <int64_t *> b
    P.cap_nnz = cap
    return 0


cdef int fail(Parsed *P, int code, int64_t line, const unsigned char *tok, const unsigned char *buf,
              int64_t aux) noexcept nogil:
    P.error = code
    P.err_line = line
    P.err_pos = tok - buf
    P.err_aux = aux
    return code


cdef int parse_buffer(const unsigned char *buf, int64_t n, bint want32, bint allow_zero, unsigned char dp,
                      Parsed *P) noexcept nogil:
    """Parse buf[0:n] (buf[n] == 0) into P; return an error code (E_OK on success)."""
    cdef const unsigned char *p = buf
    cdef const unsigned char *end = buf + n
    cdef const unsigned char *tok
    cdef const unsigned char *row_start
    cdef const unsigned char *q
    cdef const void *nl
    cdef int64_t line = 1
    cdef int64_t prev, idx, qid
    cdef double label, value
    cdef bint first, row_has_qid, overflow
    cdef unsigned char c

    P.indptr[0] = 0
    while p < end:
        c = p[0]
        if c == C_LF:
            line += 1
            p += 1
            continue
        if is_blank(c):
            p += 1
            continue
        if c == C_HASH:
            nl = memchr(p, C_LF, end - p)
            p = end if nl == NULL else <const unsigned char *> nl
            continue
        # ---- a data line: label first
        tok = p
        row_start = p
        q = parse_double(p, &label, dp)
        if q == NULL or not is_delim(q, end):
            return fail(P, E_LABEL, line, tok, buf, 0)
        p = q
        prev = -1
        qid = 0
        first = True
        row_has_qid = False
        while True:
            while p < end and is_blank(p[0]):
                p += 1
            if p >= end or p[0] == C_LF or p[0] == C_HASH:
                break
            tok = p
            if p[0] == 113 and p[1] == 105 and p[2] == 100:      # "qid"
                if not first:
                    return fail(P, E_QID_POSITION, line, tok, buf, 0)
                if p[3] != C_COLON:
                    return fail(P, E_QID, line, tok, buf, 0)
                q = parse_int(p + 4, &qid, &overflow)
                if q == NULL or overflow or not is_delim(q, end):
                    return fail(P, E_QID, line, tok, buf, 0)
                row_has_qid = True
                first = False
                p = q
                continue
            first = False
            q = parse_int(p, &idx, &overflow)
            if q == NULL or q[0] != C_COLON:
                return fail(P, E_FEATURE, line, tok, buf, 0)
            if overflow or idx > MAX_INDEX:
                return fail(P, E_INDEX_RANGE, line, tok, buf, 0)
            if idx < 0 or (idx == 0 and not allow_zero):
                return fail(P, E_INDEX_INVALID, line, tok, buf, idx)
            if idx <= prev:
                return fail(P, E_ORDER, line, tok, buf, prev)
            p = q + 1
            q = parse_double(p, &value, dp)
            if q == NULL or not is_delim(q, end):
                return fail(P, E_FEATURE, line, tok, buf, 0)
            p = q
            if P.nnz == P.cap_nnz:
                if grow_nnz(P, want32) != 0:
                    return fail(P, E_NOMEM, line, tok, buf, 0)
            if want32:
                P.data32[P.nnz] = <float> value
            else:
                P.data64[P.nnz] = value
            P.indices[P.nnz] = idx
            P.nnz += 1
            if idx < P.min_index:
                P.min_index = idx
            if idx > P.max_index:
                P.max_index = idx
            prev = idx
        # ---- end of the row (p is at '\n', '#' or the end; the outer loop consumes them)
        if P.has_qid < 0:
            P.has_qid = row_has_qid
            P.qid_line = line
        elif P.has_qid != row_has_qid:
            return fail(P, E_QID_MIXED, line, row_start, buf, P.qid_line)
        P.labels[P.rows] = label
        P.qids[P.rows] = qid
        if P.row_end != NULL:
            P.row_end[P.rows] = p - buf
        P.rows += 1
        P.indptr[P.rows] = P.nnz
    return E_OK


cdef int64_t count_lines(const unsigned char *buf, int64_t n) noexcept nogil:
    """Number of '\\n' in buf[0:n], plus one (an upper bound on the number of rows)."""
    cdef const unsigned char *p = buf
    cdef const unsigned char *end = buf + n
    cdef const void *nl
    cdef int64_t count = 1
    while p < end:
        nl = memchr(p, C_LF, end - p)
        if nl == NULL:
            break
        count += 1
        p = <const unsigned char *> nl + 1
    return count


def _token_at(bytes data, Py_ssize_t pos):
    """The whitespace/comment-delimited token starting at byte ``pos`` (at most 60 bytes), as text."""
    stop = pos
    while stop < len(data) and stop - pos < 60 and data[stop] not in b" \t\r\v\f\n#":
        stop += 1
    return data[pos:stop].decode("ascii", "backslashreplace")


def _feature_problem(str tok):
    """Say what is wrong with a feature token that is not ``index:value``."""
    if ":" not in tok:
        return f"feature {tok!r} has no ':' (expected index:value)"
    index, value = tok.split(":", 1)
    try:
        int(index.replace("_", "!"))
    except ValueError:
        return f"feature index {index!r} in {tok!r} is not an integer"
    return f"feature value {value!r} in {tok!r} is not a number"


def _error_message(bytes data, int code, int64_t line, int64_t pos, int64_t aux):
    tok = _token_at(data, pos)
    if code == E_LABEL:
        what = f"label {tok!r} is not a number"
        if ":" in tok:
            what += " (each line must start with its label)"
    elif code == E_FEATURE:
        what = _feature_problem(tok)
    elif code == E_QID:
        what = f"bad query id {tok!r} (expected qid:<integer within int64>)"
    elif code == E_QID_POSITION:
        what = f"{tok!r}: qid must come right after the label"
    elif code == E_QID_MIXED:
        what = (f"lines with and without qid are mixed (line {aux} and this line differ); "
                "give every line a qid or none")
    elif code == E_INDEX_INVALID:
        what = (f"invalid feature index {aux} in {tok!r}"
                + (" (indices are one-based here: pass zero_based=True or 'auto' for zero-based files)"
                   if aux == 0 else " (indices must be >= 0)"))
    elif code == E_ORDER:
        what = (f"feature index in {tok!r} is not larger than the previous index {aux} on the line; "
                "indices must be sorted and unique")
    elif code == E_INDEX_RANGE:
        what = f"feature index in {tok!r} is too large"
    else:
        what = "out of memory"
    return f"line {line}: {what}"


cdef object _to_numpy(void *src, Py_ssize_t count, dtype):
    cdef Py_ssize_t itemsize = np.dtype(dtype).itemsize
    arr = np.empty(count, dtype=dtype)
    cdef unsigned char[::1] view
    if count > 0:
        view = arr.view(np.uint8)
        memcpy(&view[0], src, count * itemsize)
    return arr


def parse_svmlight(bytes data, bint float32=False, bint allow_zero=True, bytes decimal_point=b".",
                   bint row_ends=False):
    """Parse LETOR/SVMlight ``data`` (module docstring) into CSR pieces, without the GIL.

    Returns ``(values, indices, indptr, labels, qid, min_index, max_index, row_end)``: values float64 (float32 if
    ``float32``), int64 indices as written in the file (not shifted), int64 indptr, float64 labels, int64 qid
    (None when no line has a qid); min/max index over all features (-1, -1 without any feature); with
    ``row_ends``, the int64 byte offset where each row's data ends (at its ``#`` when it has a comment: the input
    of :func:`comment_pairs`), else None.
    ``allow_zero=False`` rejects index 0 (one-based files). ``decimal_point`` is the C locale's decimal point
    (a single byte), used only by the strtod fallback. Raises ValueError("line N: ...") on malformed input.
    """
    cdef const unsigned char *buf = <const unsigned char *> (<const char *> data)
    cdef int64_t n = len(data)
    cdef unsigned char dp
    cdef Parsed P
    cdef int code = E_OK
    cdef int64_t rows_cap
    if len(decimal_point) != 1:
        raise ValueError("decimal_point must be a single byte")
    dp = decimal_point[0]
    P.data64 = NULL
    P.data32 = NULL
    P.indices = NULL
    P.indptr = NULL
    P.labels = NULL
    P.qids = NULL
    P.nnz = 0
    P.cap_nnz = 0
    P.rows = 0
    P.min_index = MAX_INDEX + 1
    P.max_index = -1
    P.has_qid = -1
    P.qid_line = 0
    P.error = E_OK
    P.err_line = 0
    P.err_pos = 0
    P.err_aux = 0
    P.row_end = NULL
    try:
        with nogil:
            rows_cap = count_lines(buf, n)
            P.cap_rows = rows_cap
            P.indptr = <int64_t *> malloc((rows_cap + 1) * sizeof(int64_t))
            P.labels = <double *> malloc(rows_cap * sizeof(double))
            P.qids = <int64_t *> malloc(rows_cap * sizeof(int64_t))
            if row_ends:
                P.row_end = <int64_t *> malloc(rows_cap * sizeof(int64_t))
            if P.indptr == NULL or P.labels == NULL or P.qids == NULL or (row_ends and P.row_end == NULL):
                code = E_NOMEM
            else:
                P.cap_nnz = n // 8 + 64      # a feature token takes >= 4 bytes; grown by doubling if needed
                if grow_nnz(&P, float32) != 0:
                    code = E_NOMEM
                else:
                    code = parse_buffer(buf, n, float32, allow_zero, dp, &P)
        if code == E_NOMEM:
            raise MemoryError("not enough memory to parse the SVMlight data")
        if code != E_OK:
            raise ValueError(_error_message(data, code, P.err_line, P.err_pos, P.err_aux))
        if float32:
            values = _to_numpy(P.data32, P.nnz, np.float32)
        else:
            values = _to_numpy(P.data64, P.nnz, np.float64)
        indices = _to_numpy(P.indices, P.nnz, np.int64)
        indptr = _to_numpy(P.indptr, P.rows + 1, np.int64)
        labels = _to_numpy(P.labels, P.rows, np.float64)
        qid = _to_numpy(P.qids, P.rows, np.int64) if P.has_qid == 1 else None
        row_end = _to_numpy(P.row_end, P.rows, np.int64) if row_ends else None
    finally:
        free(P.row_end)
        free(P.data64)
        free(P.data32)
        free(P.indices)
        free(P.indptr)
        free(P.labels)
        free(P.qids)
    min_index = P.min_index if P.nnz > 0 else -1
    return values, indices, indptr, labels, qid, min_index, P.max_index, row_end


def _parse_float(bytes token, bytes decimal_point=b"."):
    """Parse one number token exactly as the reader does (for tests); ValueError if it is not one."""
    cdef double v = 0.0
    cdef const unsigned char *buf = <const unsigned char *> (<const char *> token)
    cdef const unsigned char *q
    q = parse_double(buf, &v, decimal_point[0])
    if q == NULL or q != buf + len(token):
        raise ValueError(f"not a number: {token!r}")
    return v


# ------------------------------------------------------------------------------------- comment key = value pairs
cdef enum:
    MAX_COMMENT_KEYS = 64


cdef struct Pair:
    int64_t row
    int64_t key
    int64_t start
    int64_t stop


cdef inline const unsigned char *skip_blanks(const unsigned char *p, const unsigned char *end) noexcept nogil:
    while p < end and is_blank(p[0]):
        p += 1
    return p


cdef int64_t find_key(const unsigned char *buf, const unsigned char *k, int64_t klen, int64_t *key_start,
                      int64_t *key_len, int64_t *n_keys) noexcept nogil:
    """Index of the key buf... ``k[0:klen]`` among the keys seen so far (added when new); -1 past the cap."""
    cdef int64_t j
    for j in range(n_keys[0]):
        if key_len[j] == klen and memcmp(buf + key_start[j], k, klen) == 0:
            return j
    if n_keys[0] == MAX_COMMENT_KEYS:
        return -1
    key_start[n_keys[0]] = k - buf
    key_len[n_keys[0]] = klen
    n_keys[0] += 1
    return n_keys[0] - 1


def comment_pairs(bytes data, const int64_t[::1] row_end):
    """The ``key = value`` pairs of each row's comment (LETOR's ``#docid = GX000-00-0000000 inc = 1 prob = 0.0``).

    ``row_end``: :func:`parse_svmlight`'s offsets (a row has a comment when ``data[row_end[i]]`` is ``#``). A pair
    is a key (bytes other than whitespace and ``=``), ``=`` with optional blanks around it, and a value (bytes other
    than whitespace); a row's pairs stop at the first text that is not one (free text ends them). The first
    occurrence of a key on a row counts. Returns ``(keys, start, stop)``: the distinct keys (bytes) in order of
    first appearance, and int64 arrays of shape (n_keys, n_rows) with the value's byte span, -1 where a row lacks
    the key. At most 64 distinct keys (ValueError naming the line beyond).
    """
    cdef const unsigned char *buf = <const unsigned char *> (<const char *> data)
    cdef const unsigned char *end = buf + len(data)
    cdef const unsigned char *p
    cdef const unsigned char *k
    cdef const unsigned char *v
    cdef int64_t n_rows = row_end.shape[0]
    cdef int64_t key_start[MAX_COMMENT_KEYS]
    cdef int64_t key_len[MAX_COMMENT_KEYS]
    cdef int64_t n_keys = 0
    cdef int64_t n_pairs = 0
    cdef int64_t cap = 0
    cdef int64_t i, j, klen
    cdef Pair *pairs = NULL
    cdef void *grown
    cdef int status = 0                     # 1: out of memory, 2: too many keys
    cdef int64_t bad_row = -1
    try:
        with nogil:
            for i in range(n_rows):
                p = buf + row_end[i]
                if p >= end or p[0] != C_HASH:
                    continue
                p += 1
                while True:
                    p = skip_blanks(p, end)
                    k = p
                    while p < end and p[0] != C_LF and p[0] != C_EQUALS and not is_blank(p[0]):
                        p += 1
                    klen = p - k
                    p = skip_blanks(p, end)
                    if klen == 0 or p >= end or p[0] != C_EQUALS:
                        break
                    p = skip_blanks(p + 1, end)
                    v = p
                    while p < end and p[0] != C_LF and not is_blank(p[0]):
                        p += 1
                    if p == v:
                        break
                    j = find_key(buf, k, klen, key_start, key_len, &n_keys)
                    if j < 0:
                        status = 2
                        bad_row = i
                        break
                    if n_pairs == cap:
                        cap = 2 * cap + 1024
                        grown = realloc(pairs, cap * sizeof(Pair))
                        if grown == NULL:
                            status = 1
                            break
                        pairs = <Pair *> grown
                    pairs[n_pairs].row = i
                    pairs[n_pairs].key = j
                    pairs[n_pairs].start = v - buf
                    pairs[n_pairs].stop = p - buf
                    n_pairs += 1
                if status != 0:
                    break
        if status == 1:
            raise MemoryError("not enough memory for the comments' key = value pairs")
        if status == 2:
            line = data.count(b"\n", 0, row_end[bad_row]) + 1
            raise ValueError(f"line {line}: more than {MAX_COMMENT_KEYS} "
                             "distinct comment keys; the comments are not LETOR's 'key = value' pairs")
        keys = [data[key_start[j]:key_start[j] + key_len[j]] for j in range(n_keys)]
        start = np.full((n_keys, n_rows), -1, dtype=np.int64)
        stop = np.full((n_keys, n_rows), -1, dtype=np.int64)
        scatter_pairs(pairs, n_pairs, start, stop)
    finally:
        free(pairs)
    return keys, start, stop


cdef void scatter_pairs(const Pair *pairs, int64_t n_pairs, int64_t[:, ::1] start, int64_t[:, ::1] stop) noexcept:
    cdef int64_t t
    with nogil:
        for t in range(n_pairs):
            if start[pairs[t].key, pairs[t].row] < 0:        # the first occurrence on the row counts
                start[pairs[t].key, pairs[t].row] = pairs[t].start
                stop[pairs[t].key, pairs[t].row] = pairs[t].stop


def span_strings(bytes data, const int64_t[::1] start, const int64_t[::1] stop):
    """``data[start[i]:stop[i]]`` for every i as a numpy str array (UTF-8; "" where ``start[i] < 0``)."""
    cdef const unsigned char *buf = <const unsigned char *> (<const char *> data)
    cdef int64_t n = start.shape[0]
    cdef int64_t width = 1
    cdef int64_t i, k
    cdef bint ascii = True
    cdef unsigned char[:, ::1] out
    with nogil:
        for i in range(n):
            if start[i] >= 0 and stop[i] - start[i] > width:
                width = stop[i] - start[i]
    strings = np.zeros(n, dtype=f"S{width}")
    if n == 0:
        return strings.astype(str)
    out = strings.view(np.uint8).reshape(n, width)
    with nogil:
        for i in range(n):
            if start[i] < 0:
                continue
            for k in range(stop[i] - start[i]):
                out[i, k] = buf[start[i] + k]
                ascii = ascii and buf[start[i] + k] < 128
    return strings.astype(str) if ascii else np.char.decode(strings, "utf-8")


# ------------------------------------------------------------------------------------------ TREC run and qrels
cdef inline const unsigned char *token_end(const unsigned char *p, const unsigned char *end) noexcept nogil:
    while p < end and p[0] != C_LF and not is_blank(p[0]):
        p += 1
    return p


cdef str _text(const unsigned char *a, const unsigned char *b):
    """The bytes [a, b) (at most 60) as text, for error messages."""
    return (<const char *> a)[:min(b - a, 60)].decode("utf-8", "backslashreplace")


def parse_trec(bytes data, bint run):
    """A TREC run (``run=True``: ``qid Q0 docid rank score tag`` lines) or qrels file (``qid iter docid rel``) as
    nested dicts, in one pass over the bytes.

    Fields are separated by ASCII whitespace; blank lines are skipped. Run: ``{qid: {docid: score}}`` (score a
    finite float, read as the SVMlight reader reads numbers; the Q0 and rank fields are not read: trec_eval orders
    by score); qrels: ``{qid: {docid: rel}}`` (rel an int64; the iter field is not read). Query and document ids
    are UTF-8 text. Returns ``(dict, tag of the first line or None, number of lines read)``; raises
    ``ValueError("line N: ...")`` for a line with another number of fields, a score that is not a finite number, a
    relevance that is not an integer, a document twice in one query, or an id that is not UTF-8.
    """
    cdef const unsigned char *buf = <const unsigned char *> (<const char *> data)
    cdef const unsigned char *end = buf + len(data)
    cdef const unsigned char *p = buf
    cdef const unsigned char *tok[7]
    cdef const unsigned char *tok_end[7]
    cdef const unsigned char *q
    cdef const unsigned char *prev_qid = NULL
    cdef int64_t prev_qid_len = -1
    cdef int n_fields = 6 if run else 4
    cdef int value_field = 4 if run else 3
    cdef int count
    cdef int64_t line = 0
    cdef int64_t rel = 0
    cdef double score = 0.0
    cdef bint overflow
    cdef Py_ssize_t before
    cdef dict result = {}
    cdef dict inner = None
    cdef object value, qid, doc
    tag = None
    while p < end:
        line += 1
        count = 0
        while True:
            p = skip_blanks(p, end)
            if p >= end or p[0] == C_LF:
                break
            if count < 7:
                tok[count] = p
                p = token_end(p, end)
                tok_end[count] = p
            else:
                p = token_end(p, end)
            count += 1
        p += 1                                # past the newline
        if count == 0:
            continue
        if count != n_fields:
            what = "qid Q0 docid rank score tag" if run else "qid iter docid rel"
            raise ValueError(f"line {line}: {count} fields, expected {n_fields} ({what})")
        try:
            if tok_end[0] - tok[0] != prev_qid_len or memcmp(tok[0], prev_qid, prev_qid_len) != 0:
                qid = (<const char *> tok[0])[:tok_end[0] - tok[0]].decode("utf-8")
                inner = result.get(qid)
                if inner is None:
                    inner = {}
                    result[qid] = inner
                prev_qid, prev_qid_len = tok[0], tok_end[0] - tok[0]
            doc = (<const char *> tok[2])[:tok_end[2] - tok[2]].decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"line {line}: the query or document id is not UTF-8 text") from None
        if run:
            q = parse_double(tok[4], &score, C_DOT)
            if q != tok_end[4]:
                raise ValueError(f"line {line}: score {_text(tok[4], tok_end[4])!r} is not a number")
            if score != score or score - score != 0.0:
                raise ValueError(f"line {line}: score {_text(tok[4], tok_end[4])!r} is not finite")
            value = score
            if tag is None:
                tag = _text(tok[5], tok_end[5])
        else:
            q = parse_int(tok[3], &rel, &overflow)
            if q != tok_end[3] or overflow:
                raise ValueError(f"line {line}: relevance {_text(tok[3], tok_end[3])!r} is not an integer "
                                 "(trec_eval reads integer relevance levels)")
            value = rel
        before = len(inner)
        inner[doc] = value
        if len(inner) == before:
            raise ValueError(f"line {line}: document {doc!r} appears twice for query "
                             f"{_text(tok[0], tok_end[0])!r}")
    return result, tag, line


# ---------------------------------------------------------------------------------------------- writer
cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) except NULL
    void PyMem_Free(void *p)


cdef struct OutBuf:
    char *p
    Py_ssize_t n
    Py_ssize_t cap


cdef int ob_reserve(OutBuf *b, Py_ssize_t extra) noexcept nogil:
    cdef Py_ssize_t cap = b.cap
    cdef void *a
    if b.n + extra <= b.cap:
        return 0
    while cap < b.n + extra:
        cap = cap * 2 + 256
    a = realloc(b.p, cap)
    if a == NULL:
        return -1
    b.p = <char *> a
    b.cap = cap
    return 0


cdef void ob_put_int(OutBuf *b, int64_t v) noexcept nogil:
    """Append the decimal digits of v (24 bytes must be reserved)."""
    cdef char tmp[24]
    cdef int k = 0
    cdef uint64_t u
    if v < 0:
        b.p[b.n] = b"-"
        b.n += 1
        u = <uint64_t> (-(v + 1)) + 1
    else:
        u = <uint64_t> v
    while True:
        tmp[k] = <char> (C_ZERO + u % 10)
        k += 1
        u //= 10
        if u == 0:
            break
    while k > 0:
        k -= 1
        b.p[b.n] = tmp[k]
        b.n += 1


cdef int ob_put_repr(OutBuf *b, double v) except -1:
    """Append the shortest decimal string that reads back as exactly v (Python's repr, no '.0' added)."""
    cdef char *s = PyOS_double_to_string(v, b"r", 0, 0, NULL)
    cdef Py_ssize_t k = strlen(s)
    if ob_reserve(b, k + 64) != 0:
        PyMem_Free(s)
        raise MemoryError()
    memcpy(b.p + b.n, s, k)
    b.n += k
    PyMem_Free(s)
    return 0


def format_rows(const double[::1] values, const int64_t[::1] indices, const int64_t[::1] indptr,
                const double[::1] labels, const int64_t[::1] qid, bint has_qid, int64_t index_offset,
                Py_ssize_t start, Py_ssize_t stop):
    """Lines ``start:stop`` of CSR data as SVMlight bytes: ``label [qid:q] index:value ...\\n``.

    Floats are written with the shortest repr that reads back exactly (no '.0' suffix: ``2``, ``0.89``,
    ``1e-07``); column ``j`` is written as ``j + index_offset``.
    """
    cdef OutBuf b
    cdef Py_ssize_t i
    cdef int64_t k
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        for i in range(start, stop):
            ob_put_repr(&b, labels[i])
            if has_qid:
                memcpy(b.p + b.n, b" qid:", 5)
                b.n += 5
                ob_put_int(&b, qid[i])
            for k in range(indptr[i], indptr[i + 1]):
                if ob_reserve(&b, 64) != 0:
                    raise MemoryError()
                b.p[b.n] = b" "
                b.n += 1
                ob_put_int(&b, indices[k] + index_offset)
                b.p[b.n] = b":"
                b.n += 1
                ob_put_repr(&b, values[k])
            b.p[b.n] = b"\n"        # ob_put_repr reserved 64 spare bytes
            b.n += 1
        return b.p[:b.n] if b.n > 0 else b""
    finally:
        free(b.p)


def format_run(str qid, list ranked, str tag):
    """TREC run lines ``qid Q0 docid rank score tag`` as UTF-8 bytes, one per ``(score, doc id)`` pair of ``ranked``
    (already in rank order; ranks 1, 2, ...), the scores as the shortest decimal that reads back exactly."""
    cdef OutBuf b
    cdef Py_ssize_t qn, tn, dn, i
    cdef const char *qs = PyUnicode_AsUTF8AndSize(qid, &qn)
    cdef const char *ts = PyUnicode_AsUTF8AndSize(tag, &tn)
    cdef const char *ds
    cdef tuple item
    b.p = NULL
    b.n = 0
    b.cap = 0
    try:
        for i in range(len(ranked)):
            item = <tuple> ranked[i]
            ds = PyUnicode_AsUTF8AndSize(item[1], &dn)
            if ob_reserve(&b, qn + dn + 64) != 0:
                raise MemoryError()
            memcpy(b.p + b.n, qs, qn)
            b.n += qn
            memcpy(b.p + b.n, b" Q0 ", 4)
            b.n += 4
            memcpy(b.p + b.n, ds, dn)
            b.n += dn
            b.p[b.n] = b" "
            b.n += 1
            ob_put_int(&b, i + 1)
            b.p[b.n] = b" "
            b.n += 1
            ob_put_repr(&b, <double> item[0])
            if ob_reserve(&b, tn + 2) != 0:
                raise MemoryError()
            b.p[b.n] = b" "
            b.n += 1
            memcpy(b.p + b.n, ts, tn)
            b.n += tn
            b.p[b.n] = b"\n"
            b.n += 1
        return b.p[:b.n] if b.n > 0 else b""
    finally:
        free(b.p)

# Sorting of (key, index) records for the kernels (RankSVM's order statistics, MLR's separation oracles): increasing
# key, equal keys (-0.0 == +0.0) by increasing index, a total order, so the result never depends on the input order
# or the algorithm. Inline, noexcept nogil.
#
# * introsort: quicksort (median of three, Hoare partition, recursion on the smaller part only: stack depth
#   O(log n)), heapsort once the recursion is deeper than 2 log2 n (O(n log n) worst case), insertion sort below
#   INSERTION_MAX items;
# * radix_sort: an LSD radix sort (3 passes of 8 bits, a pass whose digit is the same for every item skipped) on the
#   top 24 bits of the order-preserving uint64 image of the doubles, then an introsort of each run of equal top
#   bits (mostly runs of one or two items). 24 bits measured fastest on MLR's WDBC oracles (32 bits: 7% slower,
#   16 bits: 40% slower: longer runs); 2.4x faster than the introsort alone there.
# * sort_records: the radix sort from RADIX_MIN items (when scratch is given), else the introsort.
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy, memset

from cyrank._typedefs cimport intp_t


cdef struct KeyIndex:
    double key
    intp_t index


cdef enum:
    RADIX_MIN = 64        # the radix sort from this many items
    INSERTION_MAX = 16    # the insertion sort below this many


cdef inline bint key_before(const KeyIndex* a, const KeyIndex* b) noexcept nogil:
    """a comes before b: smaller key, or equal keys and smaller index."""
    return a.key < b.key or (a.key == b.key and a.index < b.index)


cdef inline void _swap(KeyIndex* a, intp_t i, intp_t j) noexcept nogil:
    cdef KeyIndex t = a[i]
    a[i] = a[j]
    a[j] = t


cdef inline void _insertion_sort(KeyIndex* a, intp_t n) noexcept nogil:
    cdef intp_t i, j
    cdef KeyIndex v
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and key_before(&v, &a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


cdef inline void _sift_down(KeyIndex* a, intp_t root, intp_t n) noexcept nogil:
    cdef intp_t child
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and key_before(&a[child], &a[child + 1]):
            child += 1
        if not key_before(&a[root], &a[child]):
            return
        _swap(a, root, child)
        root = child


cdef inline void _heapsort(KeyIndex* a, intp_t n) noexcept nogil:
    cdef intp_t i
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(a, i, n)
    for i in range(n - 1, 0, -1):
        _swap(a, 0, i)
        _sift_down(a, 0, i)


cdef inline void _introsort(KeyIndex* a, intp_t n, int depth) noexcept nogil:
    cdef intp_t mid, i, j
    cdef KeyIndex pivot
    while n > INSERTION_MAX:
        if depth == 0:
            _heapsort(a, n)
            return
        depth -= 1
        mid = n // 2
        # median of a[0], a[mid], a[n-1] moved to a[mid]
        if key_before(&a[mid], &a[0]):
            _swap(a, mid, 0)
        if key_before(&a[n - 1], &a[mid]):
            _swap(a, n - 1, mid)
            if key_before(&a[mid], &a[0]):
                _swap(a, mid, 0)
        pivot = a[mid]
        # Hoare partition: [0, j] <= pivot <= [j + 1, n), 0 <= j < n - 1
        i = -1
        j = n
        while True:
            i += 1
            while key_before(&a[i], &pivot):
                i += 1
            j -= 1
            while key_before(&pivot, &a[j]):
                j -= 1
            if i >= j:
                break
            _swap(a, i, j)
        if j + 1 < n - j - 1:             # recurse into the smaller part, loop on the larger
            _introsort(a, j + 1, depth)
            a += j + 1
            n -= j + 1
        else:
            _introsort(a + j + 1, n - j - 1, depth)
            n = j + 1
    _insertion_sort(a, n)


cdef inline void introsort(KeyIndex* a, intp_t n) noexcept nogil:
    """Sort a[:n] in place (see the top of this file), O(n log n) worst case."""
    cdef int depth = 0
    cdef intp_t m = n
    while m > 1:
        depth += 2
        m >>= 1
    _introsort(a, n, depth)


cdef inline uint32_t _top_bits(double key) noexcept nogil:
    """Top 24 bits of the order-preserving uint64 image v(x) of a finite double (x < y implies
    _top_bits(x) <= _top_bits(y)), -0.0 mapped as +0.0: v(x) = NOT bits(x) for x < 0, bits(x) with the sign bit
    set for x >= 0."""
    cdef uint64_t b
    if key == 0.0:
        key = 0.0
    memcpy(&b, &key, 8)
    b ^= (0 - (b >> 63)) | (<uint64_t>1 << 63)
    return <uint32_t>(b >> 40)


cdef inline KeyIndex* radix_sort(KeyIndex* a, KeyIndex* tmp, intp_t n) noexcept nogil:
    """Sort a[:n] (finite keys) with tmp as scratch of n records; returns a or tmp, whichever holds the result."""
    cdef intp_t hist[3][256]
    cdef intp_t i, j, p, total, c
    cdef uint32_t h, d
    cdef KeyIndex* src = a
    cdef KeyIndex* dst = tmp
    cdef KeyIndex* t
    if n < 2:
        return a
    memset(hist, 0, sizeof(hist))
    for i in range(n):
        h = _top_bits(a[i].key)
        hist[0][h & 255] += 1
        hist[1][(h >> 8) & 255] += 1
        hist[2][h >> 16] += 1
    for p in range(3):
        if hist[p][(_top_bits(a[0].key) >> (8 * p)) & 255] == n:
            continue
        total = 0
        for j in range(256):
            c = hist[p][j]
            hist[p][j] = total
            total += c
        for i in range(n):
            d = (_top_bits(src[i].key) >> (8 * p)) & 255
            dst[hist[p][d]] = src[i]
            hist[p][d] += 1
        t = src
        src = dst
        dst = t
    i = 0
    while i < n:
        h = _top_bits(src[i].key)
        j = i + 1
        while j < n and _top_bits(src[j].key) == h:
            j += 1
        if j - i > 1:
            introsort(src + i, j - i)
        i = j
    return src


cdef inline KeyIndex* sort_records(KeyIndex* a, KeyIndex* tmp, intp_t n) noexcept nogil:
    """Sort a[:n]: the radix sort from RADIX_MIN items when ``tmp`` (n records of scratch) is given, else the
    introsort. Returns a or tmp, whichever holds the result."""
    if tmp != NULL and n >= RADIX_MIN:
        return radix_sort(a, tmp, n)
    introsort(a, n)
    return a


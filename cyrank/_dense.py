"""The one rule for when a kernel reads sparse X as a dense array.

A sparse X is densified when at least ``min_share`` of its entries are stored and the dense copy takes at most
``max_bytes``. Each kernel sets the share at which its dense path wins, measured on the LightGBM LETOR data
(bench/HISTORY.md):

* block products through BLAS (DominationRank's Newton products): 0.2, a dense float64 entry costs about a
  tenth of a sparse one;
* row by row dot products and axpys (RankSVM's linear kernels): the density at which the dense array takes no
  more memory than the CSR arrays, itemsize / (itemsize + index size) (1/2 to 2/3); a dense row is read without
  index loads, about twice as fast per entry, and memory use never grows;
* Gram blocks of a kernel matrix (RankSVM rbf/poly): 0, dense BLAS always wins; only memory limits it.
"""
import scipy.sparse as sp


def dense_bytes(X, itemsize=None):
    """Bytes of X as a dense array (of ``itemsize`` bytes per entry; default X's own)."""
    return X.shape[0] * X.shape[1] * (itemsize or X.dtype.itemsize)


def memory_neutral_share(X):
    """The density at which dense X takes as much memory as its CSR data and indices."""
    item, index = X.dtype.itemsize, X.indices.dtype.itemsize
    return item / (item + index)


def should_densify(X, *, min_share, max_bytes, itemsize=None):
    """True when sparse X has at least ``min_share`` of its entries stored and its dense form (``itemsize``
    bytes per entry) fits in ``max_bytes``; False for dense X (nothing to do)."""
    if not sp.issparse(X):
        return False
    n_entries = X.shape[0] * X.shape[1]
    return X.nnz >= min_share * n_entries and dense_bytes(X, itemsize) <= max_bytes

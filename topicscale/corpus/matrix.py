"""Document-term matrices from Python (numpy arrays, scipy.sparse in any format) as the shards
hold them: CSR rows with int64 offsets, int32 word ids ascending within a row, whole counts.

The values of a matrix are word counts. Fractional values are rounded to the nearest whole
number (numpy.rint: halves to even), because a corpus stores whole counts, and entries that
round to zero are dropped. `as_rows` keeps every row (an empty one gets the local step's
proportions of an empty document); `write_corpus` skips empty rows, as `topicscale prepare`
skips empty documents, so that a corpus written from a matrix equals one prepared from it.
"""
import numpy as np
import scipy.sparse as sp

from .shards import CorpusWriter, Rows

INT32_MAX = 2**31 - 1
BLOCK_DOCS = 10_000          # as Corpus.blocks


def as_rows(X):
    """X (2-D, finite, non-negative; checked by the caller) as Rows of the shards' dtypes:
    fresh, writable, C-ordered int64 offsets, int32 word ids and float64 whole counts (the
    kernels' specialisations for a prepared corpus, whatever X's dtype, format or memory)."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()                                  # sorts the word ids of each row too
    X.data = np.rint(X.data)
    X.eliminate_zeros()
    if X.shape[1] > INT32_MAX + 1:
        raise ValueError(f"X has {X.shape[1]} columns: at most 2^31 words are supported")
    if X.nnz and X.data.min() < 0:
        raise ValueError("Negative values in data: X must hold word counts")
    if X.nnz and X.data.max() > INT32_MAX:
        raise ValueError(f"X holds a count of {X.data.max():.0f}, more than 2^31 - 1")
    return Rows(np.arange(X.shape[0], dtype=np.int64), np.array(X.indptr, dtype=np.int64),
                np.array(X.indices, dtype=np.int32), np.array(X.data, dtype=np.float64))


def blocks(rows, block_docs=BLOCK_DOCS):
    """Rows in consecutive blocks of at most `block_docs` documents (fresh arrays, offsets from 0)."""
    for start in range(0, rows.n_docs, block_docs):
        stop = min(start + block_docs, rows.n_docs)
        a, b = rows.indptr[start], rows.indptr[stop]
        yield Rows(rows.rows[start:stop].copy(), rows.indptr[start:stop + 1] - a,
                   rows.indices[a:b].copy(), rows.counts[a:b].copy())


def write_corpus(path, rows, vocab):
    """Write the non-empty rows of `rows` as the corpus `path` (ids: their row numbers from 0);
    returns the number of documents written."""
    lengths = np.diff(rows.indptr)
    kept = np.flatnonzero(lengths)
    indptr = np.zeros(kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths[kept], out=indptr[1:])           # empty rows hold no entries
    with CorpusWriter(path, vocab, source=[{"input": "<matrix>", "format": "matrix"}]) as writer:
        writer.add_block([str(i) for i in kept], indptr, rows.indices, rows.counts.astype(np.int32))
        writer.stats = {"skipped_empty": int(rows.n_docs - kept.shape[0])}
    return int(kept.shape[0])


def write_counted_corpus(path, rows, vocab):
    """write_corpus, refusing (ValueError) a matrix that holds no counts."""
    n_docs = write_corpus(path, rows, vocab)
    if n_docs == 0:
        raise ValueError("X holds no counts: every row is zero once rounded to whole counts")
    return n_docs

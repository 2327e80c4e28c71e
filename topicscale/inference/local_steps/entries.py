"""Helpers shared by local steps whose statistics are per-entry topic vectors (CVB0, Gibbs).

Those local steps cannot use Hoffman's factorisation of the mean-field statistics (one scalar
per entry), so their kernels write one K-vector per CSR entry. To bound that memory, a
minibatch is processed in blocks of documents holding at most `block_floats` entry values;
the blocks depend only on the data, so results do not depend on threads.
"""
import numba
import numpy as np

from ...kernels.accumulate import add_entries_by_word
from ...kernels.minibatch import word_major
from ...kernels.special import digamma_array

BLOCK_FLOATS = 1 << 22          # 32 MiB of float64 per block of per-entry vectors

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def mix64(x):
    """SplitMix64 finaliser, vectorised over uint64 (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        return x ^ (x >> np.uint64(31))


def document_seeds(seed, keys):
    """One uint64 seed per document from an integer seed and per-document integer keys."""
    with np.errstate(over="ignore"):
        base = mix64(np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF) + _GOLDEN)
    with np.errstate(over="ignore"):
        return mix64(base ^ mix64(np.asarray(keys).astype(np.uint64) * _GOLDEN + np.uint64(1)))


def content_keys(indptr, indices, counts):
    """A key per document of a CSR block from its (word id, count) entries, in any order: `infer`
    seeds a sampler by it, so a document gets the same proportions wherever it sits in the input."""
    counts = np.asarray(counts, dtype=np.float64)
    entries = mix64(mix64(np.asarray(indices).astype(np.uint64)) ^ counts.view(np.uint64))
    sums = np.zeros(len(indptr) - 1, dtype=np.uint64)
    lengths = np.diff(indptr)
    with np.errstate(over="ignore"):
        np.add.at(sums, np.repeat(np.arange(len(lengths)), lengths), entries)
    return sums


def step_seed(seed, step):
    """A per-minibatch seed from the local step's seed and the model's step counter."""
    return int(document_seeds(seed, np.array([step]))[0])


class EntryBuffer:
    """Scratch for a block's per-entry K-vectors, reused from minibatch to minibatch: a fresh
    array pays a page fault per 4 KiB on first touch, which took 40% of CVB0's kernel time on
    GCIDE minibatches (K=50). The rows it hands out are valid until the next call."""

    def __init__(self):
        self._flat = np.empty(0)

    def rows(self, n_entries, n_topics):
        if self._flat.shape[0] < n_entries * n_topics:
            self._flat = np.empty(n_entries * n_topics)
        return self._flat[:n_entries * n_topics].reshape(n_entries, n_topics)


def n_chunks_for(n_docs):
    return max(1, min(n_docs, 4 * numba.get_num_threads()))


def document_blocks(indptr, n_topics, block_floats=BLOCK_FLOATS):
    """[(d0, d1), ...] covering all documents, each with nnz * K <= block_floats (or one doc)."""
    D = indptr.shape[0] - 1
    cap = max(1, block_floats // max(n_topics, 1))
    blocks, d0 = [], 0
    while d0 < D:
        d1 = int(np.searchsorted(indptr, indptr[d0] + cap, side="right")) - 1
        d1 = min(max(d1, d0 + 1), D)
        blocks.append((d0, d1))
        d0 = d1
    return blocks or [(0, 0)]


def sub_block(indptr, indices, counts, d0, d1):
    lo, hi = indptr[d0], indptr[d1]
    return indptr[d0:d1 + 1] - lo, indices[lo:hi], counts[lo:hi]


def add_word_statistics(local_ids, entry_rows, out, first_block):
    """out[j] += sum of entry_rows over the entries whose local word id is j (document order);
    for the first block, out[j] = that sum, so `out` can be np.empty. The entries are grouped by
    word with word_major's counting sort (np.argsort took 0.6 ms of a 500-document GCIDE
    minibatch)."""
    one_block = np.array([0, local_ids.shape[0]], dtype=np.int64)
    word_ptr, order, _ = word_major(one_block, local_ids, out.shape[0])
    add_entries_by_word(word_ptr, order, entry_rows, out, first_block)


def exp_dirichlet_expectations(gamma):
    """exp(E[log theta]) for each row of gamma (D x K), theta ~ Dir(gamma_d)."""
    if gamma.shape[0] == 0:
        return np.empty_like(gamma)
    return np.exp(digamma_array(np.ascontiguousarray(gamma))
                  - digamma_array(gamma.sum(axis=1))[:, None])


def check_topics_rows(topics, n_words, n_topics):
    topics = np.ascontiguousarray(topics, dtype=np.float64)
    if topics.shape != (n_words, n_topics):
        raise ValueError(f"topics for the minibatch must be {n_words} x {n_topics} "
                         f"(one row per distinct word, ascending), got {topics.shape}")
    return topics


def dirichlet_prior(prior):
    """The Dirichlet prior vector (K) of the LDA document steps from a model's local_prior():
    LDA's alpha itself; the HDP's alpha0 E[sigma_k(V)] (HDPPrior.dirichlet, the direct-assignment
    view of inference/global_steps/hdp.py)."""
    return np.ascontiguousarray(getattr(prior, "dirichlet", prior), dtype=np.float64)


def local_prior(model):
    """The document-level Dirichlet prior of the local step (LDA: alpha)."""
    return dirichlet_prior(model.local_prior() if hasattr(model, "local_prior") else model.alpha)

"""Local step "gibbs": collapsed Gibbs sampling of z given fixed topics, theta integrated out
(Mimno, Hoffman and Blei 2012; the local step of SSMF-A, Hoffman and Blei 2015, Algorithm 2).
Kernel: topicscale.kernels.gibbs.

Randomness: each document gets its own uint64 seed, a hash of a minibatch seed and the
document's key (its global row number in `statistics`; in `fit`, its position in the block, or
the key given: `infer` gives a hash of its words and counts);
the kernel draws from a SplitMix64 stream started at that seed. Results are therefore the
same whatever the number of threads.
"""
import numpy as np

from ...kernels import gibbs as kernel
from ...kernels.minibatch import distinct_words
from ...stats import SufficientStats
from .base import LocalResult
from .entries import (BLOCK_FLOATS, EntryBuffer, add_word_statistics, check_topics_rows,
                      document_blocks, document_seeds, local_prior,
                      n_chunks_for, step_seed, sub_block)


class Gibbs:
    """`sweeps` Gibbs sweeps per document (the first initialises z), the first `burn_in`
    discarded, document-topic counts averaged over the rest (defaults 5 and 2).

    statistics() samples given the topics it is handed: by default (estep_topics) the model's
    own (LDA: exp(E[log beta]), as Mimno et al. 2012 do); SSMF-A hands it a sampled beta. Counts
    must be whole numbers (tokens are sampled). `seed` seeds fit() and, mixed with the model's
    step, statistics() when the global step passes no seed. LocalResult: gamma = alpha + averaged counts; exp_elog_theta under Dir(gamma);
    token_weight empty; sweeps = Gibbs sweeps per document.
    """
    name = "gibbs"

    def __init__(self, sweeps=5, burn_in=2, seed=0, block_floats=BLOCK_FLOATS):
        if not 0 <= int(burn_in) < int(sweeps):
            raise ValueError("need 0 <= burn_in < sweeps (at least one sweep is kept)")
        self.sweeps = int(sweeps)
        self.burn_in = int(burn_in)
        self.seed = int(seed)
        self.block_floats = int(block_floats)
        self._entries = EntryBuffer()

    def estep_topics(self, model, words=None):
        """The topics this step samples given by default: the model's own local-step topics
        (LDA: exp(E[log beta])), rows V' x K for the given words (all when None)."""
        return model.estep_topics(words)

    def run(self, indptr, indices, counts, topics, alpha, seeds, want_entries=False, want_z=False):
        """Kernel call: (gamma, entry_topic or None, z or None, threads used). entry_topic is
        this local step's scratch, valid until its next call."""
        D, K = indptr.shape[0] - 1, topics.shape[1]
        counts = np.ascontiguousarray(counts, dtype=np.float64)
        whole = np.rint(counts)
        if np.any(whole != counts) or np.any(whole < 1):
            raise ValueError("Gibbs sampling needs whole-number counts >= 1")
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        entry_ptr = np.zeros(whole.shape[0] + 1, dtype=np.int64)
        np.cumsum(whole.astype(np.int64), out=entry_ptr[1:])
        token_ptr = entry_ptr[indptr]
        n_chunks = n_chunks_for(D)
        gamma = np.empty((D, K))
        entry_topic = self._entries.rows(indices.shape[0] if want_entries else 0, K)
        z = np.empty(token_ptr[-1] if want_z else 0, dtype=np.int32)
        chunk_thread = np.full(n_chunks, -1, dtype=np.int64)
        kernel.gibbs_batch(indptr, indices, counts, token_ptr, np.ascontiguousarray(topics, dtype=np.float64),
                           np.ascontiguousarray(alpha, dtype=np.float64), self.sweeps, self.burn_in,
                           np.ascontiguousarray(seeds, dtype=np.uint64), n_chunks, gamma, entry_topic,
                           z, chunk_thread)
        return (gamma, entry_topic if want_entries else None, z if want_z else None,
                len(np.unique(chunk_thread[chunk_thread >= 0])))

    def _result(self, gamma, threads):
        return LocalResult(gamma, None, np.empty(0),
                           np.full(gamma.shape[0], self.sweeps, dtype=np.int64), threads)

    keyed = True        # fit takes each document's key (infer: entries.content_keys)

    def fit(self, indptr, indices, counts, topics, alpha, seed=None, keys=None):
        """Gibbs on a CSR block whose `indices` index rows of `topics` (V' x K); a document's
        draws are seeded by its key in `keys` (default: its place in the block)."""
        D = indptr.shape[0] - 1
        seeds = document_seeds(self.seed if seed is None else seed, np.arange(D) if keys is None else keys)
        gamma, _, _, threads = self.run(indptr, indices, counts, topics, alpha, seeds)
        return self._result(gamma, threads)

    def minibatch_seed(self, model):
        """The seed statistics() uses when the global step passes none: (seed, model.step)."""
        return step_seed(self.seed, model.step)

    def statistics(self, batch, model, topics, seed=None):
        """Gibbs on a minibatch (Rows) and its averaged topic-word counts per word.

        topics: rows for the batch's sorted distinct words (estep_topics, or a sampled beta);
        seed: the minibatch's seed (default: from this step's seed and model.step).
        """
        words, local = distinct_words(batch.indices)
        K = model.n_topics
        topics = check_topics_rows(topics, words.shape[0], K)
        if seed is None:
            seed = self.minibatch_seed(model)
        seeds = document_seeds(seed, batch.rows)
        prior = local_prior(model)
        word_topic = np.empty((words.shape[0], K))      # the first block overwrites it
        gammas, threads = [], 0
        for b, (d0, d1) in enumerate(document_blocks(batch.indptr, K, self.block_floats)):
            ptr, idx, cnt = sub_block(batch.indptr, local, batch.counts, d0, d1)
            g, entry_topic, _, t = self.run(ptr, idx, cnt, topics, prior, seeds[d0:d1],
                                            want_entries=True)
            add_word_statistics(idx, entry_topic, word_topic, first_block=b == 0)
            gammas.append(g)
            threads = max(threads, t)
        stats = SufficientStats(words, word_topic, batch.n_docs, batch.n_tokens)
        return stats, self._result(np.concatenate(gammas), threads)

"""A minibatch's local step in fixed chunks of documents, the chunks' statistics summed in chunk
order: the same bits in one process as on any number of dask workers (DESIGN, "Scale beyond one
machine"; the workers' side is topicscale/distributed.py).

The rule: chunk c of a minibatch of D documents is its documents [c C, min((c + 1) C, D)) in
stream order, C = --chunk-docs (CHUNK_DOCS by default), whatever runs it; a rule on measured
time would change the summation order. Each chunk's local step runs alone, on the topic rows of
the chunk's own distinct words (ascending); the minibatch's statistics are the chunks' added over
the minibatch's distinct words, chunk after chunk (stats.summed). The local steps' random
numbers are keyed by seed, step and document row (Gibbs: entries.document_seeds of the global
row), never by chunk or worker, so that the chunks change only the order of the sums. A minibatch
of at most C documents is one chunk: the local step on it, exactly as without chunks.

`Minibatch` is a minibatch in this process; a distributed run's minibatches
(distributed.RemoteMinibatch) offer the same `words`, `n_docs`, `n_tokens`, `statistics` and
`apply`, and the global steps reach either through local_steps/base.py.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..corpus.shards import Rows
from ..options import CHUNK_DOCS


def chunk_spans(n_docs, chunk_docs=CHUNK_DOCS):
    """[(d0, d1), ...]: the chunks of a minibatch of n_docs documents (one, maybe empty, at least)."""
    chunk_docs = int(chunk_docs)
    if chunk_docs < 1:
        raise ValueError(f"chunk_docs must be at least 1, not {chunk_docs}")
    return [(d0, min(d0 + chunk_docs, n_docs)) for d0 in range(0, n_docs, chunk_docs)] or [(0, 0)]


def chunk_rows(batch, d0, d1):
    """Documents d0..d1 - 1 of a CSR block (Rows) as a Rows of their own."""
    lo, hi = batch.indptr[d0], batch.indptr[d1]
    return Rows(batch.rows[d0:d1], batch.indptr[d0:d1 + 1] - lo, batch.indices[lo:hi], batch.counts[lo:hi])


def distinct(indices):
    """The ascending distinct word ids (int64) of a block's entries."""
    from ..kernels.minibatch import distinct_words
    return distinct_words(indices)[0]


def rows_for(words, topics, sub_words):
    """The rows of `topics` (one per word of `words`, ascending) at `sub_words` (a subset, ascending)."""
    return topics[np.searchsorted(words, sub_words)]


@dataclass(frozen=True)
class DocumentSide:
    """What a local step reads of the model (K and the document prior): sent to workers instead
    of the model, whose topics stay on the client."""
    n_topics: int
    prior: object

    @classmethod
    def of(cls, model):
        prior = model.local_prior() if hasattr(model, "local_prior") else model.alpha
        return cls(int(model.n_topics), prior)

    def local_prior(self):
        return self.prior


def keeps_gamma(model):
    """Whether the global step reads the documents' gamma (it learns alpha: priors.update_alpha)."""
    return bool((getattr(model, "settings", None) or {}).get("alpha_auto"))


@dataclass
class ChunkResult:
    """What a global step reads of a local step's result (step_metrics, the learned alpha), for a
    chunk or, joined, a minibatch: per-document sweeps, threads used, documents redone in double
    (mean-field), and gamma (D x K) when the model learns alpha, else None."""
    sweeps: np.ndarray
    threads_used: int
    redone: np.ndarray = None
    gamma: np.ndarray = None

    @classmethod
    def of(cls, result, keep_gamma):
        return cls(result.sweeps, int(result.threads_used), getattr(result, "redone", None),
                   getattr(result, "gamma", None) if keep_gamma else None)

    @classmethod
    def joined(cls, parts):
        """The parts' documents in order: arrays concatenated, the most threads any part used."""
        def cat(name):
            arrays = [getattr(p, name) for p in parts]
            return None if any(a is None for a in arrays) else np.concatenate(arrays)
        return cls(cat("sweeps"), max(p.threads_used for p in parts), cat("redone"), cat("gamma"))


def with_alpha_gamma(local, documents, topics, prior, result):
    """`result` holding the documents' variational Dirichlets that the alpha step reads
    (priors.update_alpha): a mean-field step's own gamma; for CVB0 and Gibbs, the gamma of a
    mean-field document step on the same topic rows. Their alpha + N^Theta is no variational
    posterior of theta: it spreads a document over several times the topics mean-field's does,
    and Minka's step on it raises alpha until every document holds every topic."""
    if local.name == "meanfield":
        return result
    from ..kernels.minibatch import distinct_words
    from .local_steps.meanfield import MeanField
    ids = distinct_words(documents.indices)[1]
    gamma = MeanField().fit(documents.indptr, ids, documents.counts, topics, prior, topics.astype(np.float32)).gamma
    return replace(result, gamma=gamma)


def chunk_statistics(local, chunk, side, topics, seed=None, keep_gamma=False):
    """One chunk's task: `local`'s statistics on the chunk (Rows) given `topics`, the rows of
    the chunk's distinct words, and its ChunkResult (with_alpha_gamma when keep_gamma)."""
    stats, result = local.statistics(chunk, side, topics, seed=seed)
    if keep_gamma:
        result = with_alpha_gamma(local, chunk, topics, side.local_prior(), result)
    return stats, ChunkResult.of(result, keep_gamma)


def summed(words, parts):
    """A minibatch's (stats, ChunkResult) from its chunks' (stats, ChunkResult) in chunk order."""
    stats = type(parts[0][0]).summed(words, [p[0] for p in parts])
    return stats, ChunkResult.joined([p[1] for p in parts])


class Minibatch:
    """A minibatch in this process: its documents (Rows) cut into chunks by the rule above."""

    def __init__(self, documents, chunk_docs=CHUNK_DOCS):
        self.documents = documents
        self.chunk_docs = int(chunk_docs)
        self._words = None

    @property
    def n_docs(self):
        return self.documents.n_docs

    @property
    def n_tokens(self):
        return self.documents.n_tokens

    @property
    def words(self):
        """The minibatch's distinct word ids, ascending."""
        if self._words is None:
            self._words = distinct(self.documents.indices)
        return self._words

    def statistics(self, local, model, topics, seed=None):
        """`local` on the minibatch given `topics` (rows of `words`): (stats, result), summed over
        the chunks in order; one chunk is `local.statistics` itself (with_alpha_gamma when the model
        learns alpha)."""
        spans = chunk_spans(self.n_docs, self.chunk_docs)
        if len(spans) == 1:
            stats, result = local.statistics(self.documents, model, topics, seed=seed)
            if keeps_gamma(model):
                result = with_alpha_gamma(local, self.documents, topics, model.local_prior(), result)
            return stats, result
        side, keep, parts = DocumentSide.of(model), keeps_gamma(model), []
        for d0, d1 in spans:
            chunk = chunk_rows(self.documents, d0, d1)
            parts.append(chunk_statistics(local, chunk, side, rows_for(self.words, topics, distinct(chunk.indices)),
                                          seed, keep))
        return summed(self.words, parts)

    def apply(self, fn, *args):
        """fn(the minibatch's documents as Rows, *args)."""
        return fn(self.documents, *args)


class InProcess:
    """Documents read and their local steps run in this process (distributed.Executor: on dask
    workers, with the same methods)."""

    def __init__(self, corpus=None, chunk_docs=CHUNK_DOCS):
        self.corpus = corpus
        self.chunk_docs = int(chunk_docs)

    def minibatches(self, stream, start):
        """Yield (position, Minibatch) from `stream` (corpus.stream.MinibatchStream) at `start`."""
        for position, rows in stream.positions(start):
            yield position, Minibatch(self.corpus.rows(rows), self.chunk_docs)

    def map_blocks(self, corpus, row_blocks, fn, args_for):
        """Yield fn(block, *args_for(words)) for each block of row numbers of `corpus`, in order:
        block is the documents (Rows), words their distinct word ids (ascending), and args_for
        gives what fn needs of the model at those words (e.g. topic rows)."""
        for rows in row_blocks:
            block = corpus.rows(rows)
            yield fn(block, *args_for(distinct(block.indices)))

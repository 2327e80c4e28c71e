"""A corpus less some of its documents: what `fit` trains on when it holds documents aside to
decide how long to train (convergence.py)."""
import numpy as np


class CorpusWithout:
    """`corpus` without the documents `aside` (row numbers). Row numbers stay the corpus's own,
    so a dask worker reading them from the corpus's location reads the same documents; n_docs,
    nnz and n_tokens count the documents kept, and `kept_rows` maps 0..n_docs-1 onto their row
    numbers in order (MinibatchStream deals that range)."""

    def __init__(self, corpus, aside):
        self.corpus = corpus
        self.aside = np.unique(np.asarray(aside, dtype=np.int64))
        held = corpus.rows(self.aside)
        self.n_docs = corpus.n_docs - self.aside.shape[0]
        self.nnz = corpus.nnz - held.indices.shape[0]
        self.n_tokens = corpus.n_tokens - held.n_tokens
        self.vocab, self.n_words, self.location = corpus.vocab, corpus.n_words, corpus.location
        self.manifest = corpus.manifest             # what a worker reading the location finds
        # kept position i is row i + (the number of aside rows r with r - (its rank) <= i)
        self._shift = self.aside - np.arange(self.aside.shape[0])

    def kept_rows(self, positions):
        positions = np.asarray(positions, dtype=np.int64)
        return positions + np.searchsorted(self._shift, positions, side="right")

    def rows(self, rows):
        return self.corpus.rows(rows)

    def row_blocks(self, block_docs=10_000):
        for start in range(0, self.n_docs, block_docs):
            yield self.kept_rows(np.arange(start, min(start + block_docs, self.n_docs)))

    def blocks(self, block_docs=10_000):
        for rows in self.row_blocks(block_docs):
            yield self.rows(rows)

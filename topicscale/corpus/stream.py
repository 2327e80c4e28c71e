"""Minibatch streams over a disk-backed corpus.

SVI samples documents uniformly (SVI paper, figure 6, step 4). Uniform random access into a
corpus larger than memory would thrash the disk, so each epoch shuffles in two levels: the
corpus is cut into contiguous blocks of `block_docs` rows, the blocks are permuted, and the
rows of each window of `window_blocks` consecutive (permuted) blocks are shuffled together
and dealt into minibatches. Every document is visited once per epoch.

The order is a pure function of (seed, epoch), so a stream position is just
(epoch, batch index) and a resumed run sees exactly the minibatches it would have seen. Over a
corpus.subset.CorpusWithout the order deals its kept documents, by their row numbers.
"""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StreamPosition:
    epoch: int = 0
    batch: int = 0


class MinibatchStream:
    def __init__(self, corpus, batch_size, seed, block_docs=1024, window_blocks=64):
        self.corpus = corpus
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.block_docs = int(block_docs)
        self.window_blocks = int(window_blocks)
        self.kept_rows = getattr(corpus, "kept_rows", None)

    def epoch_order(self, epoch):
        """The permutation of 0..n_docs-1 dealt in `epoch` (the row numbers, but over a CorpusWithout)."""
        rng = np.random.default_rng([self.seed, epoch, 0x5EED])
        n = self.corpus.n_docs
        n_blocks = -(-n // self.block_docs)
        blocks = rng.permutation(n_blocks)
        parts = []
        for w in range(0, n_blocks, self.window_blocks):
            rows = np.concatenate([np.arange(b * self.block_docs, min((b + 1) * self.block_docs, n))
                                   for b in blocks[w:w + self.window_blocks]])
            rng.shuffle(rows)
            parts.append(rows)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def batches_per_epoch(self):
        return -(-self.corpus.n_docs // self.batch_size)

    def positions(self, start=StreamPosition()):
        """Yield (position, row numbers of the minibatch) forever, starting at `start`: what a
        distributed run sends its workers, which read the documents themselves."""
        epoch, batch = start.epoch, start.batch
        while True:
            order = self.epoch_order(epoch)
            if self.kept_rows is not None:
                order = self.kept_rows(order)
            for b in range(batch, self.batches_per_epoch()):
                yield StreamPosition(epoch, b), order[b * self.batch_size:(b + 1) * self.batch_size]
            epoch, batch = epoch + 1, 0

    def __call__(self, start=StreamPosition()):
        """Yield (position, Rows) forever, starting at `start`; position is that of the batch."""
        for position, rows in self.positions(start):
            yield position, self.corpus.rows(rows)

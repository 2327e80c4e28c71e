"""`topicscale synth`: stream a synthetic corpus drawn from LDA with given topics to shards.

Topics fitted on a real corpus keep the word statistics realistic; document lengths are
Poisson around the mean (at least one token). Memory holds one block of documents.
"""
import numpy as np
from tqdm import tqdm

from ..kernels.synth import draw_documents
from .shards import SHARD_DOCS, CorpusWriter

BLOCK_DOCS = 10_000


def synthesize(beta, vocab, output, n_docs, doc_length, alpha, seed=0, progress=False,
               shard_docs=SHARD_DOCS, id_prefix="s", drawn_from=None):
    """Write `n_docs` documents drawn from LDA(beta (K x V), alpha) to the corpus `output`, their
    ids `id_prefix` and their number; `drawn_from` ({"model": folder, "topics": its topic numbers,
    beta's rows}) is recorded in the manifest's source beside the draw's settings."""
    beta = np.asarray(beta, dtype=np.float64)
    cumulative = np.cumsum(beta, axis=1)
    alpha = np.full(beta.shape[0], float(alpha))
    rng = np.random.default_rng([seed, 0x5717])
    written = 0
    with CorpusWriter(output, vocab, shard_docs=shard_docs,
                      source=[{"synthetic": "lda", "docs": n_docs, "doc_length": doc_length,
                               "alpha": float(alpha[0]), "seed": seed, **(drawn_from or {})}]) as writer, \
            tqdm(total=n_docs, unit="doc", disable=not progress, leave=False) as bar:
        for block, start in enumerate(range(0, n_docs, BLOCK_DOCS)):
            lengths = np.maximum(rng.poisson(doc_length, size=min(BLOCK_DOCS, n_docs - start)), 1)
            indptr = np.empty(lengths.shape[0] + 1, dtype=np.int64)
            indices = np.empty(int(lengths.sum()), dtype=np.int32)
            counts = np.empty(int(lengths.sum()), dtype=np.int32)
            nnz = draw_documents(int(rng.integers(2**31)), lengths, alpha, cumulative, indptr, indices, counts)
            writer.add_block([f"{id_prefix}{start + i}" for i in range(lengths.shape[0])], indptr,
                             indices[:nnz], counts[:nnz])
            written += lengths.shape[0]
            bar.update(lengths.shape[0])
    return {"output": str(output), "documents": written, "topics": beta.shape[0], "vocabulary": len(vocab)}

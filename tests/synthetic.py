"""Synthetic corpora drawn from the LDA generative process, with their planted topics."""
import numpy as np
from scipy.optimize import linear_sum_assignment

from topicscale.corpus.shards import CorpusWriter


def planted_topics(n_topics, n_words, rng, words_per_topic=None):
    """Topics with (mostly) disjoint supports, so they are well separated and identifiable."""
    words_per_topic = words_per_topic or n_words // n_topics
    beta = np.full((n_topics, n_words), 1e-4)
    for k in range(n_topics):
        support = np.arange(k * words_per_topic, (k + 1) * words_per_topic) % n_words
        beta[k, support] += rng.dirichlet(np.full(support.shape[0], 1.0))
    return beta / beta.sum(axis=1, keepdims=True)


def random_csr(rng, n_docs, n_words, max_len=30):
    """A random CSR block (indptr int64, indices int32 ascending within a document, counts
    float64 in 1..5) of n_docs documents of 1..max_len - 1 distinct words out of n_words."""
    lengths = rng.integers(1, max_len, size=n_docs)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(n_words, size=n, replace=False)) for n in lengths])
    counts = rng.integers(1, 6, size=indptr[-1]).astype(np.float64)
    return indptr, indices.astype(np.int32), counts


def lda_documents(beta, n_docs, doc_length, alpha, rng):
    """Yield (word_ids, counts) of documents drawn from LDA with topics beta (K x V)."""
    K, V = beta.shape
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(K, alpha))
        words = rng.choice(V, size=doc_length, p=theta @ beta)
        ids, counts = np.unique(words, return_counts=True)
        yield ids.astype(np.int32), counts.astype(np.int32)


def write_corpus(path, docs, n_words, shard_docs=10_000):
    vocab = [f"w{i}" for i in range(n_words)]
    with CorpusWriter(path, vocab, shard_docs=shard_docs) as w:
        for i, (ids, counts) in enumerate(docs):
            w.add(f"d{i}", ids, counts)
    from topicscale.corpus.shards import Corpus
    return Corpus(path)


def matched_tv(estimated, planted):
    """Mean total-variation distance between topics matched by the Hungarian assignment."""
    tv = 0.5 * np.abs(estimated[:, None, :] - planted[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    return tv[rows, cols].mean()

"""Synthetic corpora drawn from the correlated topic model, with a planted topic correlation."""
import numpy as np


def planted_covariance(n_topics, pair=(0, 1), correlation=0.9, sd=1.5):
    """Sigma_0 with standard deviations `sd` (a number, or one per topic), `correlation` between
    the two topics of `pair` and none elsewhere."""
    sd = np.broadcast_to(np.asarray(sd, dtype=np.float64), (n_topics,))
    corr = np.eye(n_topics)
    i, j = pair
    corr[i, j] = corr[j, i] = correlation
    return corr * np.outer(sd, sd)


def ctm_documents(beta, n_docs, doc_length, mu0, sigma0, rng):
    """Yield (word_ids, counts) of documents drawn from the CTM: theta ~ N(mu0, sigma0),
    z_n ~ Mult(softmax(theta)), w_n ~ Mult(beta_{z_n}); beta is K x V."""
    K, V = beta.shape
    L = np.linalg.cholesky(sigma0)
    for _ in range(n_docs):
        theta = mu0 + L @ rng.standard_normal(K)
        p = np.exp(theta - theta.max())
        p /= p.sum()
        words = rng.choice(V, size=doc_length, p=p @ beta)
        ids, counts = np.unique(words, return_counts=True)
        yield ids.astype(np.int32), counts.astype(np.int32)

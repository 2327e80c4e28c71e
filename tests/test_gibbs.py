"""Collapsed Gibbs local step: same uniforms as tests/reference.py give the same z and counts;
the sampler draws from the right conditional; threads and blocks do not change results."""
import numba
import numpy as np
import pytest

import reference
from test_kernels import random_csr
from topicscale.corpus.shards import Rows
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.entries import document_seeds
from topicscale.inference.local_steps.gibbs import Gibbs
from topicscale.kernels.gibbs import uniforms
from topicscale.models.lda import LDAModel


def test_kernel_stream_is_splitmix64():
    for seed in (0, 1, 2 ** 63 + 12345, 2 ** 64 - 1):
        assert uniforms(np.uint64(seed), 50).tolist() == reference.splitmix64_uniforms(seed, 50)


@pytest.mark.parametrize("K, sweeps, burn_in", [(1, 3, 1), (4, 5, 2), (12, 4, 0)])
def test_gibbs_kernel_matches_reference_exactly(K, sweeps, burn_in):
    rng = np.random.default_rng(K * 100 + sweeps)
    V, D = 35, 20
    indptr, indices, counts = random_csr(rng, D, V)
    topics = rng.gamma(0.5, 1.0, size=(V, K))
    topics[3] = 0.0                                   # a word no topic can emit: prior fallback
    alpha = rng.uniform(0.05, 0.5, size=K)
    seeds = document_seeds(7, np.arange(D))
    local = Gibbs(sweeps=sweeps, burn_in=burn_in)
    gamma, entry_topic, z, _ = local.run(indptr, indices, counts, topics, alpha, seeds,
                                         want_entries=True, want_z=True)
    token_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)[indptr]
    for d in range(D):
        a, b = indptr[d], indptr[d + 1]
        g, hist, zz = reference.gibbs_document(indices[a:b], counts[a:b], topics, alpha, sweeps,
                                               burn_in, int(seeds[d]))
        assert np.array_equal(z[token_ptr[d]:token_ptr[d + 1]], zz)
        assert np.array_equal(entry_topic[a:b], hist)
        assert np.array_equal(gamma[d], g)
    # the averaged counts of each entry add up to its count
    assert np.allclose(entry_topic.sum(axis=1), counts)


def test_single_token_draws_follow_the_conditional():
    """With one token, p(z = k) = alpha_k beta_wk / sum_j alpha_j beta_wj."""
    D = 20000
    topics = np.array([[0.1, 0.4, 0.2, 0.3]])
    alpha = np.array([0.5, 0.1, 0.3, 0.1])
    indptr = np.arange(D + 1, dtype=np.int64)
    gamma = Gibbs(sweeps=1, burn_in=0).fit(indptr, np.zeros(D, dtype=np.int32), np.ones(D), topics,
                                           alpha, seed=3).gamma
    freq = (gamma - alpha).mean(axis=0)
    expected = alpha * topics[0] / (alpha * topics[0]).sum()
    assert np.allclose(freq, expected, atol=4 * np.sqrt(expected * (1 - expected) / D))


def test_gibbs_statistics_deterministic_across_threads_and_blocks():
    rng = np.random.default_rng(11)
    V, K, D = 70, 6, 48
    indptr, indices, counts = random_csr(rng, D, V)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    batch = Rows(np.arange(100, 100 + D), indptr, indices, counts)
    out = []
    try:
        for threads, block_floats in ((1, 1 << 22), (2, 1 << 22), (2, 5 * K)):
            numba.set_num_threads(threads)
            out.append(estep_statistics(Gibbs(seed=4, block_floats=block_floats), batch, model))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    (s1, r1), (s2, r2), (s3, r3) = out
    assert r1.threads_used == 1 and r2.threads_used == 2
    assert np.array_equal(s1.word_topic, s2.word_topic) and np.array_equal(r1.gamma, r2.gamma)
    assert np.allclose(s3.word_topic, s1.word_topic, rtol=1e-12) and np.array_equal(r3.gamma, r1.gamma)
    assert np.isclose(s1.word_topic.sum(), counts.sum())
    assert np.all(s1.word_topic >= 0)
    # the statistics are the per-word sums of the reference's averaged histograms
    words, local = np.unique(indices, return_inverse=True)
    seeds = document_seeds(Gibbs(seed=4).minibatch_seed(model), batch.rows)
    expected = np.zeros((words.shape[0], K))
    topics = model.exp_elog_beta(words)
    for d in range(D):
        a, b = indptr[d], indptr[d + 1]
        _, hist, _ = reference.gibbs_document(local[a:b], counts[a:b], topics, model.alpha, 5, 2,
                                              int(seeds[d]))
        np.add.at(expected, local[a:b], hist)
    assert np.allclose(s1.word_topic, expected, rtol=1e-12)
    # the per-entry scratch is reused from minibatch to minibatch: a step that ran a larger
    # minibatch before gives the same statistics
    local_step, half = Gibbs(seed=4), indptr[D // 2]
    first = Rows(batch.rows[:D // 2], indptr[:D // 2 + 1], indices[:half], counts[:half])
    estep_statistics(local_step, batch, model)
    again, _ = estep_statistics(local_step, first, model)
    assert np.array_equal(again.word_topic, estep_statistics(Gibbs(seed=4), first, model)[0].word_topic)
    # another model step draws other numbers
    model.step += 1
    assert not np.array_equal(estep_statistics(Gibbs(seed=4), batch, model)[0].word_topic, s1.word_topic)


def test_gibbs_rejects_fractional_counts_and_bad_settings():
    with pytest.raises(ValueError):
        Gibbs(sweeps=2, burn_in=2)
    with pytest.raises(ValueError):
        Gibbs().fit(np.array([0, 1]), np.array([0], dtype=np.int32), np.array([1.5]),
                    np.ones((1, 2)), np.full(2, 0.1))


def test_infer_and_transform_give_a_document_the_same_proportions_wherever_it_sits():
    """A sampler's document step is seeded by the document's words and counts in `infer` and
    `transform`, not its place in the input; content_keys ignores the entries' order."""
    from scipy.sparse import csr_matrix
    from topicscale import LDA
    from topicscale.inference.local_steps.entries import content_keys
    rng = np.random.default_rng(0)
    X = csr_matrix(rng.poisson(0.3, size=(300, 60)))
    m = LDA(n_components=5, local="gibbs", passes=2, threads=1, seed=0).fit(X)
    theta = m.transform(X[:40])
    assert np.array_equal(np.vstack([m.transform(X[i]) for i in range(40)]), theta)
    assert np.array_equal(m.transform(X[:40][::-1])[::-1], theta)
    assert not np.array_equal(theta[0], theta[1])
    keys = content_keys(np.array([0, 2, 4, 5]), np.array([3, 7, 7, 3, 3]), np.array([1.0, 2.0, 2.0, 1.0, 1.0]))
    assert keys[0] == keys[1] != keys[2]            # the same entries in another order; a different document

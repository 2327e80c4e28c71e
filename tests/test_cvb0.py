"""CVB0 local step (SCVB0 eqs. 5, 6, 9): kernel against tests/reference.py, statistics, blocks."""
import numba
import numpy as np
import pytest

import reference
from test_kernels import random_csr
from topicscale.corpus.shards import Rows
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.cvb0 import CVB0
from topicscale.kernels.lanes import blend_weigh
from topicscale.models.lda import LDAModel


@pytest.mark.parametrize("K, burn_in", [(1, 1), (3, 0), (16, 1), (7, 3)])
def test_cvb0_kernel_matches_reference(K, burn_in):
    rng = np.random.default_rng(K + 10 * burn_in)
    V = 40
    indptr, indices, counts = random_csr(rng, 25, V)
    topics = rng.gamma(0.5, 1.0, size=(V, K))
    alpha = rng.uniform(0.05, 0.5, size=K)
    local = CVB0(burn_in=burn_in, theta_s=1.0, theta_tau=10.0, theta_kappa=0.9)
    result = local.fit(indptr, indices, counts, topics, alpha)
    assert np.all(result.sweeps == burn_in + 1)
    for d in range(25):
        a, b = indptr[d], indptr[d + 1]
        gamma, _ = reference.cvb0_document(indices[a:b], counts[a:b], topics, alpha, burn_in=burn_in)
        assert np.allclose(result.gamma[d], gamma, rtol=1e-8, atol=1e-10)
        # eq. 9 is a convex combination: N_theta keeps summing to the document's length
        assert np.isclose((result.gamma[d] - alpha).sum(), counts[a:b].sum(), rtol=1e-12)


def test_cvb0_refuses_alpha_or_an_entry_buffer_of_another_k():
    """The kernel writes K topics per row: alpha or an entry buffer of another width is refused
    before it runs."""
    rng = np.random.default_rng(2)
    indptr, indices, counts = random_csr(rng, 5, 40)
    topics = rng.gamma(0.5, 1.0, size=(40, 4))
    with pytest.raises(ValueError, match="K = 4"):
        CVB0().fit(indptr, indices, counts, topics, np.full(3, 0.1))
    with pytest.raises(ValueError, match="K = 4"):
        CVB0()._run(indptr, indices, counts, topics, np.full(4, 0.1), np.empty((len(indices), 5)))


def test_cvb0_step_sizes_off_the_table_match_reference():
    """rho_t comes from a table for integer t below kernels.cvb0.STEP_TABLE_MAX; fractional counts
    and documents longer than the table compute it where needed, with the same result."""
    from topicscale.kernels.cvb0 import STEP_TABLE_MAX
    rng = np.random.default_rng(3)
    V, K = 30, 5
    indptr = np.array([0, 4, 7, 9], dtype=np.int64)
    indices = np.array([1, 5, 9, 20, 0, 3, 7, 2, 29], dtype=np.int32)
    counts = np.array([1.5, 0.25, 3.0, 1.0, 2.0, 1.0, 4.75, 1.0, 1.0])           # t not integral
    counts[7:] = STEP_TABLE_MAX                                          # past the table in pass 1
    topics = rng.gamma(0.5, 1.0, size=(V, K))
    alpha = np.full(K, 0.1)
    result = CVB0().fit(indptr, indices, counts, topics, alpha)
    for d in range(3):
        a, b = indptr[d], indptr[d + 1]
        gamma, _ = reference.cvb0_document(indices[a:b], counts[a:b], topics, alpha)
        assert np.allclose(result.gamma[d], gamma, rtol=1e-8, atol=1e-10)


@numba.njit
def _blend_weigh_parts(n_theta, keep, scale, g, out, share, row, alpha, parts):
    if parts == 0:
        return blend_weigh(n_theta, keep, scale, g, out, share, row, alpha)
    if parts == 1:
        return blend_weigh(n_theta, keep, scale, g, None, None, row, alpha)
    if parts == 2:
        return blend_weigh(n_theta, None, None, g, None, None, row, alpha)
    if parts == 3:
        return blend_weigh(n_theta, keep, scale, g, out, share, None, alpha)
    return blend_weigh(n_theta, keep, scale, g, None, None, None, alpha)


@pytest.mark.parametrize("K", list(range(0, 34)) + [50, 200])
def test_blend_weigh_matches_numpy_bit_for_bit(K):
    """Each combination of blend_weigh's parts against numpy: the entry statistic, eq. 9's update,
    eq. 5's weights for the next row and their sum in the documented lane order (reference.lane_sum),
    all exact; nothing past K is written."""
    rng = np.random.default_rng(K)
    keep, scale, share = 0.3, 1.7, 2.5
    for parts in range(5):
        n_theta, g, row, alpha = (np.append(rng.random(K) * 10, -1.0) for _ in range(4))
        out = np.full(K + 1, -1.0)
        with_out, with_blend, with_row = parts in (0, 3), parts in (0, 1, 3, 4), parts <= 2
        want_out = share * g[:K]
        want_theta = keep * n_theta[:K] + scale * g[:K] if with_blend else n_theta[:K].copy()
        want_g = row[:K] * (want_theta + alpha[:K]) if with_row else g[:K].copy()
        total = _blend_weigh_parts(n_theta[:K], keep, scale, g[:K], out[:K], share, row[:K], alpha[:K], parts)
        assert np.array_equal(n_theta[:K], want_theta) and np.array_equal(g[:K], want_g)
        assert np.array_equal(out[:K], want_out) if with_out else np.all(out == -1.0)
        assert total == (reference.lane_sum(want_g) if with_row else 0.0)
        assert n_theta[K] == g[K] == out[K] == -1.0


def test_keep_power_matches_pow_for_whole_and_fractional_counts():
    """(1 - rho)^m by repeated squaring for whole counts below 64 (and pow otherwise) agrees with
    pow to a few ulp; m = 0 and counts from 64 up take pow."""
    from topicscale.kernels.cvb0 import keep_power
    for x in (0.0, 1e-3, 0.31, 0.5, 0.9, 0.999999, 1.0):
        for m in [float(n) for n in range(0, 70)] + [0.25, 1.5, 2.75, 63.5, 1e4]:
            assert np.isclose(keep_power(x, m), x ** m, rtol=1e-14, atol=0.0), (x, m)
    assert keep_power(0.7, 64.0) == 0.7 ** 64.0 and keep_power(0.7, 2.5) == 0.7 ** 2.5


def test_cvb0_statistics_match_reference_and_blocks_do_not_matter():
    rng = np.random.default_rng(5)
    V, K = 60, 8
    indptr, indices, counts = random_csr(rng, 40, V)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.2, 0.01, rng)
    model.lam = rng.gamma(0.3, 5.0, size=(V, K)) + 0.01         # uneven topics
    batch = Rows(np.arange(40), indptr, indices, counts)
    stats, result = estep_statistics(CVB0(), batch, model)
    ref_stats, ref_gamma = reference.cvb0_statistics(indptr, indices, counts, model.expected_beta(),
                                                     model.alpha, V)
    assert np.array_equal(stats.words, np.unique(indices))
    assert np.allclose(stats.word_topic, ref_stats[stats.words], rtol=1e-8, atol=1e-12)
    assert np.allclose(result.gamma, ref_gamma, rtol=1e-8)
    assert np.isclose(stats.word_topic.sum(), counts.sum())
    assert (stats.n_docs, stats.n_tokens) == (40, counts.sum())
    # tiny blocks of per-entry vectors: same statistics (different summation grouping only)
    small, small_result = estep_statistics(CVB0(block_floats=3 * K), batch, model)
    assert np.allclose(small.word_topic, stats.word_topic, rtol=1e-12, atol=1e-12)
    assert np.array_equal(small_result.gamma, result.gamma)
    # the per-entry scratch is reused from minibatch to minibatch: a step that ran a larger
    # minibatch before gives the same statistics
    local, half = CVB0(), indptr[20]
    first = Rows(np.arange(20), indptr[:21], indices[:half], counts[:half])
    estep_statistics(local, batch, model)
    again, _ = estep_statistics(local, first, model)
    fresh, _ = estep_statistics(CVB0(), first, model)
    assert np.array_equal(again.word_topic, fresh.word_topic)


def test_cvb0_topics_override_and_estep_topics():
    rng = np.random.default_rng(1)
    V, K = 30, 4
    indptr, indices, counts = random_csr(rng, 10, V)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    local = CVB0()
    assert np.allclose(local.estep_topics(model), model.expected_beta())
    words = np.unique(indices)
    rows = rng.gamma(1.0, 1.0, size=(words.shape[0], K))
    batch = Rows(np.arange(10), indptr, indices, counts)
    stats, _ = local.statistics(batch, model, topics=rows)
    ref_stats, _ = reference.cvb0_statistics(indptr, np.searchsorted(words, indices), counts, rows,
                                             model.alpha, words.shape[0])
    assert np.allclose(stats.word_topic, ref_stats, rtol=1e-8, atol=1e-12)
    with pytest.raises(ValueError):
        local.statistics(batch, model, topics=rows[:-1])


def test_cvb0_same_result_with_one_and_two_threads():
    rng = np.random.default_rng(9)
    V, K = 80, 6
    indptr, indices, counts = random_csr(rng, 64, V)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    batch = Rows(np.arange(64), indptr, indices, counts)
    out = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            out.append(estep_statistics(CVB0(), batch, model))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    (s1, r1), (s2, r2) = out
    assert r1.threads_used == 1 and r2.threads_used == 2
    assert np.array_equal(s1.word_topic, s2.word_topic) and np.array_equal(r1.gamma, r2.gamma)


@pytest.mark.parametrize("threads", [1, 2])
def test_word_statistics_overwrite_the_first_block_and_add_the_rest(threads):
    """add_word_statistics sums per-entry vectors per word in document order; the first block
    overwrites (its output comes from np.empty: words without entries there must become 0)."""
    from topicscale.inference.local_steps.entries import add_word_statistics
    rng = np.random.default_rng(threads)
    n_local, K = 30, 7
    first_ids = rng.integers(0, n_local // 2, size=40).astype(np.int32)   # half the words absent
    later_ids = rng.integers(0, n_local, size=25).astype(np.int32)
    first_rows, later_rows = rng.random((40, K)), rng.random((25, K))
    expected = np.zeros((n_local, K))
    for ids, rows in ((first_ids, first_rows), (later_ids, later_rows)):
        for i, j in enumerate(ids):
            expected[j] += rows[i]
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        out = np.full((n_local, K), np.nan)
        add_word_statistics(first_ids, first_rows, out, first_block=True)
        add_word_statistics(later_ids, later_rows, out, first_block=False)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(out, expected)

"""Numba kernels against their numpy twins in tests/reference.py."""
import numba
import numpy as np
import pytest
from numba import njit
from scipy.special import digamma as scipy_digamma

import reference
from synthetic import random_csr
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.kernels import meanfield, topic_matrix
from topicscale.kernels.lanes import add_scaled_rows
from topicscale.kernels.minibatch import distinct_words, word_major
from topicscale.kernels.special import (digamma, digamma_array, exp_dirichlet_expectation, exp_dirichlet_expectation32,
                                        exp_dirichlet_lanes, sum_digamma, vexp, vexp32)
from topicscale.corpus.shards import Rows
from topicscale.models.lda import LDAModel


def test_digamma_matches_scipy_from_1e_minus_6_to_1e6():
    x = np.logspace(-6, 6, 20001)
    ours = digamma_array(x)
    ref = scipy_digamma(x)
    assert np.max(np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))) < 1e-12


def test_digamma_matches_scipy_at_the_extremes():
    """Tiny arguments (psi ~ -1/x) and huge ones, across the x > 1e40 switch of the shift."""
    x = np.concatenate([np.logspace(-300, -6, 2000), np.logspace(6, 300, 2000), [1e40, 1.0000001e40]])
    ref = scipy_digamma(x)
    assert np.max(np.abs(digamma_array(x) - ref) / np.abs(ref)) < 1e-13


def test_digamma_of_non_positive_is_nan():
    assert np.isnan(digamma(0.0)) and np.isnan(digamma(-1.0)) and np.isnan(digamma(np.nan))


def test_sum_digamma_matches_scipy_and_gives_the_same_bits_on_one_thread_or_two():
    """The eta Newton step's sum of psi over lambda (V x K; fewer rows than chunks included)."""
    rng = np.random.default_rng(3)
    for shape in [(1000, 37), (5, 3)]:
        x = rng.gamma(0.1, 10.0, size=shape) + 1e-3
        ref = np.sum(scipy_digamma(x))
        assert abs(sum_digamma(x) - ref) < 1e-12 * np.sum(np.abs(scipy_digamma(x)))
        two = sum_digamma(x)
        numba.set_num_threads(1)
        try:
            assert sum_digamma(x) == two
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_vexp_matches_numpy_exp():
    """Within 2 ulp of np.exp over the normal range; 0 below -708, inf on overflow, nan for nan."""
    @njit(error_model="numpy")
    def vexp_array(x, out):
        for i in range(x.shape[0]):
            out[i] = vexp(x[i])
    x = np.concatenate([np.linspace(-707.9, 709.78, 400_001), np.random.default_rng(5).uniform(-40, 5, 100_000),
                        [0.0, -0.0, 1e-300, -1e-300]])
    got = np.empty_like(x)
    vexp_array(x, got)
    expected = np.exp(x)
    assert np.max(np.abs(got - expected) / expected) <= 2 * np.finfo(float).eps
    edges = np.array([-np.inf, -1e4, -708.5, 709.8, 1e4, np.inf, np.nan])
    got = np.empty_like(edges)
    vexp_array(edges, got)
    assert np.array_equal(got[:3], np.zeros(3)) and np.all(np.isposinf(got[3:6])) and np.isnan(got[6])


def test_exp_dirichlet_expectation():
    g = np.array([0.3, 2.0, 17.5])
    out = np.empty(3)
    exp_dirichlet_expectation(g, out)
    assert np.allclose(out, np.exp(scipy_digamma(g) - scipy_digamma(g.sum())), rtol=1e-13)


def test_vexp32_matches_exp_within_one_ulp():
    """float32 exp: within 1 ulp (of float32) of exp from -86.9 to 88.7; 0 at or below -87, inf
    above 88.72, nan for nan."""
    @njit(error_model="numpy")
    def vexp32_array(x, out):
        for i in range(x.shape[0]):
            out[i] = vexp32(x[i])
    x = np.concatenate([np.linspace(-86.9, 88.7, 400_001), np.random.default_rng(6).uniform(-30, 2, 100_000),
                        [0.0, -0.0, 1e-30, -1e-30]]).astype(np.float32)
    got = np.empty_like(x)
    vexp32_array(x, got)
    expected = np.exp(x.astype(np.float64))
    assert np.max(np.abs(got - expected) / expected) <= 2.0 ** -23
    edges = np.array([-np.inf, -1e4, -87.0, 88.8, 1e4, np.inf, np.nan], dtype=np.float32)
    got = np.empty_like(edges)
    vexp32_array(edges, got)
    assert np.array_equal(got[:3], np.zeros(3)) and np.all(np.isposinf(got[3:6])) and np.isnan(got[6])


def test_exp_dirichlet_expectation32_matches_scipy_to_float32_accuracy():
    """Relative error at most |psi(gamma_k) - psi(sum)| x 2^-22 + 2^-22 (the float32 rounding of a
    value of that size), which is below 1e-6 for gamma_k >= 0.5; gammas from 1e-3 to 1e7 (across
    the switch of the shift sum at 1e5), and a sum below 1 (the digamma-difference path)."""
    rng = np.random.default_rng(8)
    cases = [rng.gamma(0.1, 1.0, 50) + 0.02, rng.gamma(2.0, 30.0, 200), np.logspace(-3, 7, 64),
             np.array([1e5 * (1 - 1e-7), 1e5 * (1 + 1e-7), 3.0]), np.full(8, 0.05)]
    for gamma in cases:
        out = np.empty(gamma.shape[0], dtype=np.float32)
        exp_dirichlet_expectation32(gamma, out)
        log_ratio = scipy_digamma(gamma) - scipy_digamma(gamma.sum())
        expected = np.exp(log_ratio)
        keep = expected > 1e-36                 # float32 flushes smaller values towards 0
        error = np.abs(out[keep] - expected[keep]) / expected[keep]
        assert np.all(error <= (np.abs(log_ratio[keep]) + 1.0) * 2.0 ** -22)
        assert np.all(out[~keep] <= 1e-36)
        if np.any(gamma >= 0.5):
            assert np.max(error[gamma[keep] >= 0.5]) < 1e-6


def test_exp_dirichlet_lanes_computes_in_the_precision_of_its_output():
    """Inside a kernel, a float64 output gets exp_dirichlet_expectation and a float32 output
    exp_dirichlet_expectation32, bit for bit (the dispatch is by type, at compile time)."""
    @njit(error_model="numpy")
    def in_kernel(gamma, out):
        exp_dirichlet_lanes(gamma, out)
    gamma = np.random.default_rng(9).gamma(0.5, 2.0, 37) + 0.01
    for dtype, direct in ((np.float64, exp_dirichlet_expectation), (np.float32, exp_dirichlet_expectation32)):
        got, expected = np.empty(37, dtype), np.empty(37, dtype)
        in_kernel(gamma, got)
        direct(gamma, expected)
        assert np.array_equal(got, expected)


def test_exp_elog_beta_matches_scipy():
    """exp(psi(lam) - psi(column sum)) for chosen rows, including tiny and huge lambdas."""
    rng = np.random.default_rng(2)
    model = LDAModel.initial([f"w{i}" for i in range(200)], 7, 0.1, 0.01, rng)
    lam = model.lam.copy()
    lam[:5] = rng.gamma(0.05, 1.0, size=(5, 7))
    lam[5:9] *= 1e6
    model.lam = lam
    expected = np.exp(scipy_digamma(model.lam) - scipy_digamma(model.lam.sum(axis=0)))
    np.testing.assert_allclose(model.exp_elog_beta(), expected, rtol=1e-12, atol=0)
    words = np.array([0, 3, 5, 8, 199])
    np.testing.assert_allclose(model.exp_elog_beta(words), expected[words], rtol=1e-12, atol=0)
    lam = lam.copy()
    lam[:, 2] *= 1e-9                   # a column sum below 1: the digamma-difference path
    model.lam = lam
    expected = np.exp(scipy_digamma(model.lam) - scipy_digamma(model.lam.sum(axis=0)))
    np.testing.assert_allclose(model.exp_elog_beta(words), expected[words], rtol=1e-12, atol=0)


def test_minibatch_bookkeeping_matches_numpy():
    """distinct_words = np.unique(return_inverse); word_major = a stable argsort of the local ids
    with each entry's document, on random CSR blocks (empty documents and blocks included)."""
    rng = np.random.default_rng(4)
    for _ in range(30):
        lengths = rng.integers(0, 9, size=rng.integers(0, 25))
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = rng.integers(0, 40, size=indptr[-1]).astype(np.int32)
        words, local = distinct_words(indices)
        expected_words, expected_local = np.unique(indices, return_inverse=True)
        assert words.dtype == np.int64 and local.dtype == np.int32
        np.testing.assert_array_equal(words, expected_words)
        np.testing.assert_array_equal(local, expected_local.ravel())
        word_ptr, order, doc = word_major(indptr, local, words.shape[0])
        expected_order = np.argsort(local, kind="stable")
        np.testing.assert_array_equal(order, expected_order)
        np.testing.assert_array_equal(doc, np.repeat(np.arange(lengths.shape[0]), lengths)[expected_order])
        np.testing.assert_array_equal(word_ptr[1:], np.cumsum(np.bincount(local, minlength=words.shape[0])))


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("K", [1, 3, 16])
def test_estep_matches_numpy_reference(K, accelerate):
    rng = np.random.default_rng(K)
    V = 40
    indptr, indices, counts = random_csr(rng, 25, V)
    topics = rng.gamma(0.5, 1.0, size=(V, K))
    alpha = np.full(K, 0.3)
    result = MeanField(max_iter=50, tol=1e-6, accelerate=accelerate).fit(indptr, indices, counts, topics, alpha)
    for d in range(25):
        a, b = indptr[d], indptr[d + 1]
        gamma, eet, phi, sweeps = reference.estep_document(indices[a:b], counts[a:b], topics, alpha, 50, 1e-6,
                                                           accelerate)
        assert result.sweeps[d] == sweeps
        assert np.allclose(result.gamma[d], gamma, rtol=1e-8, atol=1e-10)
        assert np.allclose(result.exp_elog_theta[d], eet, rtol=1e-8)
        # token weights reproduce phi: phi_nk = r_n / c_n * exp(E log theta_k) * B[w_n, k]
        phi_kernel = (result.token_weight[a:b] / counts[a:b])[:, None] * eet[None, :] * topics[indices[a:b]]
        assert np.allclose(phi_kernel, phi, rtol=1e-8, atol=1e-12)
        # gamma is the sweep of that phi: gamma = alpha + sum_n c_n phi_n (eq. 34)
        own_phi = ((result.token_weight[a:b] / counts[a:b])[:, None] * result.exp_elog_theta[d]
                   * topics[indices[a:b]])
        np.testing.assert_allclose(alpha + counts[a:b] @ own_phi, result.gamma[d], rtol=1e-12)


def test_estep_takes_topics_in_any_memory_order():
    """MeanField.fit hands the kernels C-contiguous rows whatever the caller's layout (Fortran order,
    a strided view): the same gamma, in both precisions."""
    rng = np.random.default_rng(11)
    V, K = 40, 20
    indptr, indices, counts = random_csr(rng, 12, V)
    topics = rng.gamma(0.5, 1.0, size=(V, 2 * K))
    alpha = np.full(K, 0.3)
    local = MeanField(max_iter=50, tol=1e-6)
    want = local.fit(indptr, indices, counts, np.ascontiguousarray(topics[:, ::2]), alpha)
    for rows in (np.asfortranarray(topics[:, ::2]), topics[:, ::2]):
        assert np.array_equal(local.fit(indptr, indices, counts, rows, alpha).gamma, want.gamma)
        single = local.fit(indptr, indices, counts, rows, alpha, rows.astype(np.float32, order="F"))
        assert np.allclose(single.gamma, want.gamma, rtol=1e-3)


def random_document(seed, K, n, V=200):
    """n distinct word ids of V, counts 1-4, V x K Gamma(0.5) topics, alpha 0.1."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(V, n, replace=False)).astype(np.int32)
    counts = rng.integers(1, 5, n).astype(np.float64)
    return ids, counts, rng.gamma(0.5, 1.0, size=(V, K)), np.full(K, 0.1)


def run_document(ids, counts, topics, alpha, block_words, safe_norm=0.0, max_iter=200, tol=1e-10):
    """meanfield.estep_document with fresh scratch in the precision of topics."""
    K = topics.shape[1]
    gamma, eet, token_weight = np.empty(K), np.empty(K), np.empty(ids.shape[0])
    lanes, weight, block = (np.empty((2, K), topics.dtype), np.empty(ids.shape[0], topics.dtype),
                            np.empty((K, block_words), topics.dtype))
    start_theta = np.empty(K, topics.dtype)
    single = topics.dtype == np.float32
    (exp_dirichlet_expectation32 if single else exp_dirichlet_expectation)(np.ones(K), start_theta)
    sweeps = meanfield.estep_document(ids, counts, topics, alpha, max_iter, tol, False, safe_norm,
                                      start_theta, gamma, eet, token_weight, np.empty((3, K)), lanes,
                                      weight, block)
    return sweeps, gamma, token_weight


def test_long_documents_take_the_row_path_with_the_same_result():
    """A document longer than its chunk's block (block.shape[1] < n) uses one dot product per
    word instead of the topic-major block: same fixed point, to rounding."""
    ids, counts, topics, alpha = random_document(11, K=12, n=30)
    (_, blocked, _), (_, rows, _) = (run_document(ids, counts, topics, alpha, m) for m in (30, 0))
    reference_gamma = reference.estep_document(ids, counts, topics, alpha, 200, 1e-10, False)[0]
    np.testing.assert_allclose(blocked, rows, rtol=1e-9)
    np.testing.assert_allclose(rows, reference_gamma, rtol=1e-8)


@pytest.mark.parametrize("block_words", [30, 0])
def test_single_precision_document_matches_reference(block_words):
    """float32 topic rows: the same fixed point as the float64 reference to float32 rounding,
    on both the block and the row path."""
    ids, counts, topics, alpha = random_document(12, K=16, n=30)
    sweeps, gamma, weight = run_document(ids, counts, topics.astype(np.float32), alpha, block_words,
                                         meanfield.SAFE_NORM_SINGLE, tol=1e-6)
    ref_gamma, ref_eet = reference.estep_document(ids, counts, topics, alpha, 200, 1e-6, False)[:2]
    assert sweeps > 1
    np.testing.assert_allclose(gamma, ref_gamma, rtol=1e-4)
    np.testing.assert_allclose(weight, counts / (topics[ids] @ ref_eet), rtol=1e-4)


def test_single_precision_refuses_a_document_whose_normalisers_underflow_and_redoes_it_in_double():
    """A word every topic gives about 1e-40 (an unseen word under a small eta) makes its
    normaliser subnormal in float32: that document is redone in float64 from scratch (so it
    equals the double run bit for bit); the other documents stay single."""
    rng = np.random.default_rng(13)
    V, K = 50, 8
    indptr, indices, counts = random_csr(rng, 30, V)
    topics = rng.gamma(0.5, 1.0, size=(V, K))
    topics[7] *= 1e-40
    alpha = np.full(K, 0.2)
    local = MeanField(max_iter=100, tol=1e-6)
    double = local.fit(indptr, indices, counts, topics, alpha)
    single = local.fit(indptr, indices, counts, topics, alpha, topics.astype(np.float32))
    has_word = np.array([7 in indices[a:b] for a, b in zip(indptr[:-1], indptr[1:])])
    assert has_word.any() and not has_word.all()
    assert np.array_equal(single.redone, has_word)
    assert not double.redone.any()
    assert np.array_equal(single.gamma[has_word], double.gamma[has_word])
    assert np.array_equal(single.exp_elog_theta[has_word], double.exp_elog_theta[has_word])
    assert np.array_equal(single.sweeps[has_word], double.sweeps[has_word])
    entries = np.repeat(has_word, np.diff(indptr))
    assert np.array_equal(single.token_weight[entries], double.token_weight[entries])
    assert not np.array_equal(single.gamma[~has_word], double.gamma[~has_word])
    np.testing.assert_allclose(single.gamma, double.gamma, rtol=1e-4)


@pytest.mark.parametrize("precision, rtol", [("double", 1e-8), ("single", 1e-4)])
def test_minibatch_statistics_match_reference(precision, rtol):
    rng = np.random.default_rng(7)
    V, K = 60, 8
    indptr, indices, counts = random_csr(rng, 40, V)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.2, 0.01, rng)
    stats, result = estep_statistics(MeanField(max_iter=30, tol=1e-7, precision=precision),
                                     Rows(np.arange(40), indptr, indices, counts), model)
    ref_stats, ref_gamma = reference.minibatch_statistics(indptr, indices, counts, model.exp_elog_beta(),
                                                          model.alpha, 30, 1e-7, V)
    assert np.array_equal(stats.words, np.unique(indices))
    assert np.allclose(stats.word_topic, ref_stats[stats.words], rtol=rtol, atol=1e-12)
    assert np.allclose(result.gamma, ref_gamma, rtol=rtol)
    # each document's phi sums to its token count, and the statistics are those of the phi
    # that gave gamma: per topic, they sum to sum_d (gamma_d - alpha) (max_iter 30 stops some
    # documents before convergence, where phi of the final gamma would not add up)
    assert np.isclose(stats.word_topic.sum(), counts.sum(), rtol=rtol)
    np.testing.assert_allclose(stats.word_topic.sum(axis=0), (result.gamma - model.alpha).sum(axis=0),
                               rtol=1e-6 if precision == "single" else 1e-12)


def test_completion_log_likelihood_matches_reference():
    rng = np.random.default_rng(3)
    V, K = 30, 5
    indptr, indices, counts = random_csr(rng, 12, V)
    theta = rng.dirichlet(np.ones(K), size=12)
    topics = rng.dirichlet(np.ones(V), size=K).T.copy()
    out = np.empty(12)
    meanfield.completion_log_likelihood(indptr, indices, counts, theta, topics, out)
    assert np.allclose(out, reference.completion_log_likelihood(indptr, indices, counts, theta, topics),
                       rtol=1e-12)


@pytest.mark.parametrize("cap", [1, 2, 5])
def test_estep_stops_at_max_iter_and_reports_sweeps(cap):
    rng = np.random.default_rng(0)
    indptr, indices, counts = random_csr(rng, 5, 20, max_len=10)
    topics = rng.gamma(1.0, 1.0, size=(20, 4))
    for accelerate in (False, True):
        r = MeanField(max_iter=cap, tol=0.0, accelerate=accelerate).fit(indptr, indices, counts, topics,
                                                                        np.full(4, 0.1))
        assert np.all(r.sweeps == cap)


def test_acceleration_needs_fewer_sweeps_for_a_bound_at_least_as_high():
    """SQUAREM stops (same tolerance) after far fewer sweeps, at a document bound no lower than
    plain sweeps reach (it may even find better local optima)."""
    rng = np.random.default_rng(11)
    V, K = 200, 20
    indptr, indices, counts = random_csr(rng, 60, V, max_len=80)
    topics = rng.gamma(0.3, 1.0, size=(V, K))
    alpha = np.full(K, 0.05)
    results = {acc: MeanField(max_iter=1000, tol=1e-3, accelerate=acc).fit(indptr, indices, counts, topics, alpha)
               for acc in (False, True)}

    def mean_bound(r):
        return np.mean([reference.document_bound(r.gamma[d], indices[a:b], counts[a:b], topics, alpha)
                        for d, (a, b) in enumerate(zip(indptr[:-1], indptr[1:]))])

    assert results[True].sweeps.sum() < 0.5 * results[False].sweeps.sum()
    assert mean_bound(results[True]) >= mean_bound(results[False])


def test_step_towards_equals_the_numpy_update_bit_for_bit():
    """The topic update in numba: the same roundings as numpy's
    lam *= 1 - rho; lam += rho eta; lam[words] += scale * word_topic, at 1 and 2 threads."""
    rng = np.random.default_rng(21)
    lam = rng.gamma(1.0, 1.0, size=(300, 7))
    words = np.sort(rng.choice(300, 40, replace=False)).astype(np.int64)
    word_topic = rng.gamma(1.0, 3.0, size=(40, 7))
    rho, eta, scale = 0.137, 0.01, 0.137 * 1234 / 50
    expected = lam.copy()
    expected *= 1.0 - rho
    expected += rho * eta
    expected[words] += scale * word_topic
    for threads in (1, 2):
        numba.set_num_threads(threads)
        got = lam.copy()
        topic_matrix.step_towards(got, rho, eta, words, scale, word_topic)
        assert np.array_equal(got, expected)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


@pytest.mark.parametrize("V", [5, 300, 1001])
def test_affine_step_summed_equals_step_towards_then_column_sums_bit_for_bit(V):
    """The fused update (LDAModel's settling step): the same lam as step_towards and the same
    column sums as column_sums of the new lam, exactly, at 1 and 2 threads; minibatch words at
    the edges of the row blocks, or none."""
    rng = np.random.default_rng(V)
    lam = rng.gamma(1.0, 1.0, size=(V, 7))
    edges = [b * V // topic_matrix.SUM_BLOCKS for b in range(topic_matrix.SUM_BLOCKS)] + [V - 1]
    words = np.unique(np.concatenate([edges, rng.choice(V, min(V, 40), replace=False)])).astype(np.int64)
    word_topic = rng.gamma(1.0, 3.0, size=(words.shape[0], 7))
    rho, eta, scale = 0.137, 0.01, 0.137 * 1234 / 50
    for w, stats in ((words, word_topic), (np.zeros(0, dtype=np.int64), np.zeros((0, 7)))):
        expected = lam.copy()
        topic_matrix.step_towards(expected, rho, eta, w, scale, stats)
        for threads in (1, 2):
            numba.set_num_threads(threads)
            got = lam.copy()
            totals = topic_matrix.affine_step_summed(got, 1.0 - rho, rho * eta, w, scale, stats)
            assert np.array_equal(got, expected)
            assert np.array_equal(totals, topic_matrix.column_sums(expected))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_kept_column_totals_follow_every_change_of_lambda():
    """The store changes only through update_topics (which updates its kept column sums),
    settle() (which recomputes them) and `lam = new` (which drops them): column_totals is the
    column sums of lambda after each, and neither settle() nor `lam` hands out a writable store.
    update_topics leaves the step count to the global step (schedule.advance)."""
    from topicscale.models.lda import LDAModel
    rng = np.random.default_rng(4)
    model = LDAModel.initial([f"w{i}" for i in range(50)], 3, 0.1, 0.01, rng)

    def assert_totals_are_lambdas():
        assert np.allclose(model.column_totals(), topic_matrix.column_sums(model.lam.copy()), rtol=1e-13)
    for t in range(3):
        model.update_topics(0.3, np.array([2, 7 + t], dtype=np.int64), 5.0, rng.gamma(1.0, 1.0, size=(2, 3)))
        assert_totals_are_lambdas()
    assert (model.step, model.docs_seen) == (0, 0) and model._lazy
    settled = model.settle()
    assert not model._lazy
    assert_totals_are_lambdas()
    for read in (settled, model.lam, model.settle()):
        with pytest.raises(ValueError):
            read[0, 0] += 100.0
    new = model.lam.copy()                                # a new lambda
    new[0, 0] += 100.0
    before = model.column_totals()[0]
    model.lam = new
    assert np.isclose(model.column_totals()[0], before + 100.0, rtol=1e-13)
    assert_totals_are_lambdas()
    new = model.lam.copy()
    new[0, 0] = np.nan
    model.lam = new
    assert not model.is_finite()


def _eager_steps(lam, eta, steps):
    """The global step as written (SVI paper eq. 27), one numpy pass a step."""
    lam = lam.copy()
    for rho, words, scale, word_topic in steps:
        lam = (1.0 - rho) * lam + rho * eta
        lam[words] += scale * word_topic
    return lam


def _random_steps(rng, V, K, n, first_rho=None):
    out = []
    for t in range(n):
        words = np.sort(rng.choice(V, size=rng.integers(1, V // 2), replace=False)).astype(np.int64)
        rho = first_rho if (t == 0 and first_rho is not None) else (10.0 + t) ** -0.7
        out.append((rho, words, float(rng.uniform(1, 50)), rng.gamma(0.5, 1.0, size=(words.shape[0], K))))
    return out


@pytest.mark.parametrize("settle_below", [1e-30, 0.5])
def test_lazy_global_step_matches_the_eager_update(monkeypatch, settle_below):
    """lambda = scale * store + shift with the minibatch's rows updated (LDAModel.update_topics)
    is the eager update of every entry, to rounding; rho = 1 and a scale under SETTLE_BELOW
    settle (0.5: every few steps); column totals, E[beta] rows and exp(E[log beta]) rows read
    the lazy form without settling it."""
    import topicscale.models.lda as lda
    import topicscale.models.topics as topics
    monkeypatch.setattr(topics, "SETTLE_BELOW", settle_below)
    rng = np.random.default_rng(11)
    V, K = 80, 6
    model = lda.LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    start = model.lam.copy()
    steps = _random_steps(rng, V, K, 40, first_rho=1.0)
    for rho, words, scale, word_topic in steps:
        model.update_topics(rho, words, scale, word_topic)
    expected = _eager_steps(start, 0.01, steps)
    assert (model._scale, model._shift) != (1.0, 0.0)          # still lazy: the reads below must not settle
    words = np.array([3, 17, 40], dtype=np.int64)
    lazy = (model.column_totals().copy(), model.mean_rows(words), model.exp_elog_beta(words), model.expected_beta())
    assert (model._scale, model._shift) != (1.0, 0.0)
    totals = expected.sum(axis=0)
    assert np.allclose(lazy[0], totals, rtol=1e-12)
    assert np.allclose(lazy[1], expected[words] / totals, rtol=1e-12)
    assert np.allclose(lazy[2], np.exp(scipy_digamma(expected[words]) - scipy_digamma(totals)), rtol=1e-11)
    assert np.allclose(lazy[3], expected / totals, rtol=1e-12)
    assert np.allclose(model.lam, expected, rtol=1e-12)         # reading lam does not settle
    assert (model._scale, model._shift) != (1.0, 0.0)
    read = model.lam
    model.settle()
    assert (model._scale, model._shift) == (1.0, 0.0)
    assert np.array_equal(model.lam, read)                      # the same bits as settled
    assert np.allclose(model.column_totals(), totals, rtol=1e-12)


def test_lazy_lambda_survives_a_checkpoint_bit_for_bit(tmp_path):
    """stored() keeps the lazy form (a checkpoint neither settles it nor rounds it), so a model
    restored from it continues exactly as the original; save() writes lambda itself and leaves
    the model in memory lazy."""
    from topicscale.models import load_model
    from topicscale.models.lda import LDAModel
    rng = np.random.default_rng(12)
    V, K = 60, 4
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    steps = _random_steps(rng, V, K, 30)
    for step in steps[:20]:
        model.update_topics(*step)
    meta, arrays = model.stored()
    assert "lambda_scale_shift" in meta
    restored = LDAModel.from_stored(meta, {k: v.copy() for k, v in arrays.items()}, model.vocab)
    scale = model._scale
    model.save(tmp_path / "m")
    assert model._scale == scale
    saved = load_model(tmp_path / "m")
    assert saved._scale == 1.0 and np.array_equal(saved.lam, model._scale * model._store + model._shift)
    for step in steps[20:]:
        model.update_topics(*step)
        restored.update_topics(*step)
    assert np.array_equal(restored.lam, model.lam)
    assert np.array_equal(restored.column_totals(), model.column_totals())


def test_reading_lam_leaves_a_lazy_model_unchanged(tmp_path):
    """Reading lambda is side-effect free: a lazy model keeps its scale, shift and store (bits),
    its checkpoint and model file are byte-identical to those of a twin never read, and the array
    read is lambda, read-only; settle() is what folds the lazy form into the store."""
    from topicscale.models import store
    from topicscale.models.lda import LDAModel
    rng = np.random.default_rng(13)
    V, K = 70, 5
    start = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
    twins = [LDAModel(start.lam.copy(), start.alpha.copy(), start.eta, start.vocab) for _ in range(2)]
    for step in _random_steps(rng, V, K, 25):
        for m in twins:
            m.update_topics(*step)
    read, untouched = twins
    assert read._lazy
    before = (read._scale, read._shift, read._store.copy(), read._store_sums.copy())
    lam = read.lam
    assert np.array_equal(lam, read._scale * read._store + read._shift)
    assert (read._scale, read._shift) == before[:2]
    assert np.array_equal(read._store, before[2]) and np.array_equal(read._store_sums, before[3])
    read.topic_weights()
    assert (read._scale, read._shift) == before[:2] and np.array_equal(read._store, before[2])
    with pytest.raises(ValueError):
        lam[0, 0] = 1.0                                  # a read is not a way to write lambda
    for m, name in ((read, "read"), (untouched, "untouched")):
        store.save(tmp_path / name, *m.stored(), m.vocab, filename="checkpoint.npz")
        m.save(tmp_path / name)
    for filename in ("checkpoint.npz", "model.npz"):
        assert (tmp_path / "read" / filename).read_bytes() == (tmp_path / "untouched" / filename).read_bytes()
    # settling (what a global step that writes lambda in place calls) gives the same lambda
    assert np.shares_memory(read.settle(), read._store) and not read._lazy
    assert np.array_equal(read.lam, lam)
    with pytest.raises(ValueError):
        read.lam[0, 0] = 1.0                             # settled: a read-only view of the store


@pytest.mark.parametrize("kind", ["hdp", "ctm"])
def test_hdp_and_ctm_finiteness_checks_every_parameter(kind):
    """is_finite (the driver's divergence guard) sees a NaN anywhere in lambda and an infinity
    in the other global parameters."""
    from topicscale.models.ctm import CTMModel
    from topicscale.models.hdp import HDPModel
    vocab = [f"w{i}" for i in range(40)]
    rng = np.random.default_rng(5)
    model = (HDPModel.initial(vocab, 6, 1.0, 1.0, 0.01, rng) if kind == "hdp"
             else CTMModel.initial(vocab, 6, 0.01, rng))
    assert model.is_finite()
    others = ("a", "b") if kind == "hdp" else ("mu0", "sigma0")
    for name in ("lam",) + others:
        original = getattr(model, name).copy()
        broken = original.copy()                 # (an HDP's lam is read-only: it is assigned)
        broken.flat[-1] = np.nan if name == "lam" else np.inf
        setattr(model, name, broken)
        assert not model.is_finite(), name
        setattr(model, name, original)
        assert model.is_finite()


def test_mean_topic_rows_equal_numpy_gather_and_division_bit_for_bit():
    """E[beta] rows for a minibatch's words (divided_rows: one parallel pass) against numpy's
    lam[words] / totals, for repeated and unsorted words, with 1 and 2 threads; all rows when
    words is None; a word id out of range is refused."""
    rng = np.random.default_rng(8)
    lam = rng.gamma(0.5, 2.0, size=(300, 7))
    totals = lam.sum(axis=0)
    words = np.array([299, 0, 17, 17, 150, 3], dtype=np.int64)
    for threads in (1, 2):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        assert np.array_equal(topic_matrix.mean_topic_rows(lam, words, totals), lam[words] / totals[None, :])
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert np.array_equal(topic_matrix.mean_topic_rows(lam, list(words[:2]), totals), lam[[299, 0]] / totals)
    assert np.array_equal(topic_matrix.mean_topic_rows(lam), lam / topic_matrix.column_sums(lam)[None, :])
    assert topic_matrix.mean_topic_rows(lam, np.zeros(0, dtype=np.int64), totals).shape == (0, 7)
    with pytest.raises(IndexError):
        topic_matrix.mean_topic_rows(lam, [300], totals)


def test_column_sums_match_numpy_and_do_not_depend_on_threads():
    rng = np.random.default_rng(22)
    lam = rng.gamma(0.3, 1.0, size=(1001, 5))
    sums = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        sums.append(topic_matrix.column_sums(lam))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert np.array_equal(sums[0], sums[1])
    np.testing.assert_allclose(sums[0], lam.sum(axis=0), rtol=1e-13)
    lam[17, 3] = np.inf
    assert not np.isfinite(topic_matrix.column_sums(lam)[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_prefetch_row_emits_prefetches_and_changes_nothing(dtype, index_type):
    """The hint CVB0's kernel gives before it gathers a row: it compiles to llvm.prefetch calls
    (else the kernel silently loses its memory overlap) and leaves the matrix and results alone."""
    from topicscale.kernels.prefetch import prefetch_row

    @njit
    def touch(matrix, i):
        prefetch_row(matrix, i)
        return matrix[i].sum()

    matrix = np.arange(7 * 50, dtype=dtype).reshape(7, 50)
    before = matrix.copy()
    for i in range(7):
        assert touch(matrix, index_type(i)) == matrix[i].sum()
    assert np.array_equal(matrix, before)
    llvm = next(iter(touch.inspect_llvm().values()))
    assert "@llvm.prefetch" in llvm


@njit
def _add_scaled_rows(y, a, x):
    add_scaled_rows(y, a[0], x[0], a[1], x[1], a[2], x[2], a[3], x[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_scaled_rows_equals_the_loop_bit_for_bit(dtype):
    """The mean-field kernels' four-row multiply-add in 512-bit blocks (the last masked): the same
    bits as the scalar loop in the same order, for lengths around the block sizes, with rows
    longer than y; nothing past y is written."""
    rng = np.random.default_rng(7)
    for n in list(range(0, 50)) + [200, 203]:
        y = rng.random(n + 1).astype(dtype)
        x = rng.random((4, n + 5)).astype(dtype)
        a = rng.random(4).astype(dtype)
        want = y[:n].copy()
        for i in range(n):
            want[i] = (((want[i] + a[0] * x[0, i]) + a[1] * x[1, i]) + a[2] * x[2, i]) + a[3] * x[3, i]
        end = y[n]
        _add_scaled_rows(y[:n], a, x)
        assert np.array_equal(y[:n], want) and y[n] == end, n

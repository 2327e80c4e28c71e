"""Correlated topic model (Wang and Blei 2013): the Laplace and delta-method document steps against
their numpy twins (tests/reference_ctm.py), finite differences and an independent optimiser; the
M-step; determinism with 1 and 2 threads; save / load; recovery of a planted correlation; the CLI.

The conformance suite (test_conformance.py) runs every accepted ctm combination through the CLI too.
"""
import json
import subprocess
import sys

import numba
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment, minimize
from scipy.special import softmax

from clirun import run, run_stopped
import reference_ctm as ref
from synthetic import lda_documents, matched_tv, planted_topics, write_corpus
from synthetic_ctm import ctm_documents, planted_covariance
from topicscale.corpus.shards import Rows
from topicscale.evaluate import evaluate_model
from topicscale.inference.global_steps.ctm import CTMBatch, CTMSVI, seed_topics
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.ctm import Delta, Laplace
from topicscale.kernels import ctm as kernel
from topicscale.models import load_model
from topicscale.models.ctm import CTMModel, CTMPrior, shrink_covariance
from topicscale.stats import CTMStats, SufficientStats
from topicscale.train import RunLimits, train

LOCALS = {"laplace": Laplace, "delta": Delta}


# ------------------------------------------------------------------------------ helpers
def prior_of(mu0, sigma0):
    lam = np.linalg.inv(sigma0)
    return CTMPrior(np.asarray(mu0, dtype=float), 0.5 * (lam + lam.T), float(np.linalg.slogdet(sigma0)[1]))


def random_problem(seed, K, V=40, D=12, max_len=25):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len, size=D)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(V, size=n, replace=False)) for n in lengths]).astype(np.int32)
    counts = rng.integers(1, 6, size=indptr[-1]).astype(np.float64)
    beta = np.ascontiguousarray(rng.dirichlet(np.full(V, 0.3), size=K).T)
    A = rng.normal(size=(K, K))
    sigma0 = A @ A.T / K + 0.5 * np.eye(K)
    return indptr, indices, counts, beta, prior_of(rng.normal(size=K), sigma0)


def one_document(seed=3, K=5, V=30, length=60):
    rng = np.random.default_rng(seed)
    beta = np.ascontiguousarray(rng.dirichlet(np.full(V, 0.2), size=K).T)
    words = rng.choice(V, size=length, p=beta @ rng.dirichlet(np.full(K, 0.5)))
    ids, counts = np.unique(words, return_counts=True)
    A = rng.normal(size=(K, K))
    return ids.astype(np.int32), counts.astype(np.float64), beta, prior_of(0.3 * rng.normal(size=K),
                                                                            A @ A.T / K + np.eye(K))


def q_theta(method, s, prior, start, gtol=1e-11):
    """kernel.update_q_theta for a given s, from `start`; returns (mu, nu)."""
    K = s.shape[0]
    mu, nu = start.copy(), np.zeros(K)
    w = np.empty((6, K))
    m = np.empty((2, K, K))
    kernel.update_q_theta(method, s, s.sum(), prior.mu0, prior.precision, 100, gtol, mu, w[0], nu, w[1],
                          w[2], w[3], m[0], m[1], w[4], w[5])
    return mu, nu


def fd_gradient(fun, x, h=1e-5):
    e = np.eye(x.shape[0]) * h
    return np.array([(fun(x + e[i]) - fun(x - e[i])) / (2 * h) for i in range(x.shape[0])])


def kernel_state(method, theta, s, prior):
    """gradient_and_factor at theta: (grad, negH lower triangle, L)."""
    K = theta.shape[0]
    w = np.empty((4, K))
    negH, L = np.zeros((K, K)), np.zeros((K, K))
    grad = np.empty(K)
    kernel.gradient_and_factor(method, theta.copy(), s, s.sum(), prior.mu0, prior.precision, w[0], w[1],
                               grad, negH, L, w[2], w[3])
    return grad, np.tril(negH), L


# ------------------------------------------------------------------------------ the kernel
@pytest.mark.parametrize("name", ["laplace", "delta"])
@pytest.mark.parametrize("K", [1, 3, 8])
def test_document_step_matches_numpy_reference(name, K):
    indptr, indices, counts, beta, prior = random_problem(K, K)
    local = LOCALS[name](max_iter=400, tol=1e-7, samples=64, seed=5, gtol=1e-10)
    r, second = local.run(indptr, indices, counts, beta, prior, moments=True)
    mc = local.fit(indptr, indices, counts, beta, prior)
    expected_second = np.zeros((K, K))
    for d in range(len(indptr) - 1):
        a, b = indptr[d], indptr[d + 1]
        mu, Sigma, phi, sweeps, bound = ref.fit_document(name, indices[a:b], counts[a:b], beta,
                                                         prior.mu0, prior.precision, 400, 1e-7)
        assert np.allclose(r.mu[d], mu, atol=1e-6)
        assert abs(r.sweeps[d] - sweeps) <= 1
        assert r.bound[d] == pytest.approx(bound, abs=1e-6)
        assert np.allclose(r.var[d], np.diag(Sigma), rtol=1e-5)
        # token weights reproduce phi: phi_nk = r_n / c_n pi_k beta_{w_n k}
        phi_kernel = (r.token_weight[a:b] / counts[a:b])[:, None] * r.theta_paper[d] * beta[indices[a:b]]
        assert np.allclose(phi_kernel, phi, atol=1e-6)
        # E_q[softmax(theta)] from the same draws
        assert np.allclose(mc.theta[d], ref.completion_theta(mu, Sigma, local.draws(K)), atol=1e-6)
        expected_second += Sigma + np.outer(mu, mu)
    assert np.allclose(second.sum(axis=0), expected_second, rtol=1e-5, atol=1e-6)
    assert np.allclose(mc.theta.sum(axis=1), 1.0) and np.all(mc.theta > 0)


def test_gradient_and_hessian_of_f_match_finite_differences():
    """App. B: grad f = s - N pi - Lambda (theta - mu_0), -hess f = N (diag pi - pi pi') + Lambda."""
    rng = np.random.default_rng(1)
    K = 6
    _, _, _, _, prior = random_problem(2, K)
    s = rng.gamma(2.0, 5.0, size=K)
    theta = rng.normal(size=K)
    K_ = kernel.objective(kernel.LAPLACE, theta, s, s.sum(), prior.mu0, prior.precision,
                          np.empty(K), np.empty(K), np.empty(K))
    assert K_ == pytest.approx(ref.f_value(theta, s, prior.mu0, prior.precision), rel=1e-12)
    grad, negH, L = kernel_state(kernel.LAPLACE, theta, s, prior)
    assert np.allclose(grad, fd_gradient(lambda t: ref.f_value(t, s, prior.mu0, prior.precision), theta),
                       atol=1e-6)
    fd_hessian = np.array([fd_gradient(lambda t: kernel_state(kernel.LAPLACE, t, s, prior)[0][i], theta)
                           for i in range(K)])
    assert np.allclose(negH, np.tril(-fd_hessian), atol=1e-6)
    assert np.allclose(L @ L.T, negH + np.tril(negH, -1).T, atol=1e-10)


def test_delta_newton_system_is_the_hessian_of_the_profiled_eq17():
    """The delta step maximises g(mu) = eq. 17 at its optimal diagonal Sigma; its gradient and
    Hessian (the Newton system of fill_neg_hessian_delta) against finite differences of g."""
    rng = np.random.default_rng(4)
    K = 5
    _, _, _, _, prior = random_problem(3, K)
    s = rng.gamma(2.0, 4.0, size=K)
    theta = rng.normal(size=K)
    g = lambda t: ref._profiled("delta", t, s, prior.mu0, prior.precision)   # noqa: E731
    grad, _, _ = kernel_state(kernel.DELTA, theta, s, prior)
    assert np.allclose(grad, fd_gradient(g, theta), atol=1e-6)
    negH = np.zeros((K, K))
    kernel.fill_neg_hessian_delta(s.sum(), softmax(theta), prior.precision, negH, np.empty(K))
    fd_hessian = np.array([fd_gradient(lambda t: kernel_state(kernel.DELTA, t, s, prior)[0][i], theta)
                           for i in range(K)])
    assert np.allclose(np.tril(negH), np.tril(-fd_hessian), atol=1e-6)


def test_delta_mean_is_a_stationary_point_of_eq17_and_differs_from_laplace():
    ids, counts, beta, prior = one_document()
    indptr = np.array([0, ids.shape[0]], dtype=np.int64)
    fitted = Delta(max_iter=1000, tol=1e-12).fit(indptr, ids, counts, beta, prior).mu[0]
    phi = softmax(fitted) * beta[ids]
    s = counts @ (phi / phi.sum(axis=1, keepdims=True))               # E_q(z)[t(z)] at the fit
    mu, nu = q_theta(kernel.DELTA, s, prior, fitted)
    assert np.max(np.abs(mu - fitted)) < 1e-6                          # a fixed point of figure 1
    eq17 = lambda m, v: ref.eq17(m, v, s, prior.mu0, prior.precision)  # noqa: E731
    assert np.max(np.abs(fd_gradient(lambda m: eq17(m, nu), mu, h=1e-6))) < 1e-6
    assert np.max(np.abs(fd_gradient(lambda v: eq17(mu, v), nu, h=1e-7))) < 1e-6   # Sigma optimal too
    # Laplace's mean maximises f instead: it is not stationary for eq. 17, and differs
    mu_l, _ = q_theta(kernel.LAPLACE, s, prior, prior.mu0)
    assert np.max(np.abs(fd_gradient(lambda m: ref.f_value(m, s, prior.mu0, prior.precision), mu_l))) < 1e-6
    nu_l = 1.0 / np.diag(-ref.f_hessian(mu_l, s, prior.mu0, prior.precision))
    assert np.max(np.abs(fd_gradient(lambda m: eq17(m, nu_l), mu_l))) > 1e-3
    assert np.max(np.abs(mu - mu_l)) > 1e-2


def test_laplace_mean_is_the_map_of_the_document_posterior():
    """Alternating q(z) and the Laplace step is EM for argmax_theta log p(theta) + sum_n c_n log
    (pi(theta) . beta_{w_n}); an independent optimiser finds the same point."""
    ids, counts, beta, prior = one_document(seed=8, K=6)
    indptr = np.array([0, ids.shape[0]], dtype=np.int64)
    mu = Laplace(max_iter=2000, tol=1e-13).fit(indptr, ids, counts, beta, prior).mu[0]

    def negative_log_posterior(t):
        d = t - prior.mu0
        return -(counts @ np.log(beta[ids] @ softmax(t)) - 0.5 * d @ prior.precision @ d)

    best = minimize(negative_log_posterior, prior.mu0, method="BFGS", options={"gtol": 1e-10})
    assert np.allclose(mu, best.x, atol=2e-5)


def test_bound_rises_and_theta_sums_to_one_whatever_the_predictive():
    indptr, indices, counts, beta, prior = random_problem(11, 6, D=20)
    for cls in (Laplace, Delta):
        bounds = [cls(max_iter=it, tol=0.0).fit(indptr, indices, counts, beta, prior).bound for it in (1, 3, 20)]
        assert np.all(bounds[1] >= bounds[0] - 1e-9) and np.all(bounds[2] >= bounds[1] - 1e-9)
        mean = cls(samples=2000).fit(indptr, indices, counts, beta, prior)
        paper = cls(predictive="paper").fit(indptr, indices, counts, beta, prior)
        assert np.allclose(paper.theta, softmax(mean.mu, axis=1)) and np.allclose(paper.theta, mean.theta_paper)
        assert np.allclose(mean.theta.sum(axis=1), 1.0) and not np.allclose(mean.theta, paper.theta, atol=1e-3)
        # the Monte Carlo estimate is close to a much larger independent one
        rng = np.random.default_rng(0)
        d = 0
        draws = rng.multivariate_normal(mean.mu[d], np.diag(mean.var[d]) if cls is Delta else
                                        ref.sigma_of("laplace", mean.mu[d], *_s_of(mean, d, indptr, indices,
                                                                                    counts, beta, prior)),
                                        size=200_000)
        assert np.allclose(mean.theta[d], softmax(draws, axis=1).mean(axis=0), atol=5e-3)


def _s_of(result, d, indptr, indices, counts, beta, prior):
    a, b = indptr[d], indptr[d + 1]
    phi = softmax(result.mu[d]) * beta[indices[a:b]]
    return counts[a:b] @ (phi / phi.sum(axis=1, keepdims=True)), prior.mu0, prior.precision


# ------------------------------------------------------------------------------ statistics and M-step
def small_model(seed=0, K=5, V=40):
    model = CTMModel.initial([f"w{i}" for i in range(V)], K, 0.01, np.random.default_rng(seed))
    A = np.random.default_rng(seed + 1).normal(size=(K, K))
    model.set_moments(np.zeros(K), A @ A.T / K + np.eye(K), 1000)
    return model


def test_minibatch_statistics_match_reference():
    indptr, indices, counts, _, _ = random_problem(7, 5, V=40, D=30)
    model = small_model()
    batch = Rows(np.arange(30), indptr, indices, counts)
    stats, result = estep_statistics(Laplace(max_iter=300, tol=1e-10), batch, model)
    beta, prior = model.expected_beta(), model.local_prior()
    word_topic = np.zeros((40, 5))
    second = np.zeros((5, 5))
    for d in range(30):
        a, b = indptr[d], indptr[d + 1]
        mu, Sigma, phi, _, _ = ref.fit_document("laplace", indices[a:b], counts[a:b], beta, prior.mu0,
                                                prior.precision, 300, 1e-10)
        np.add.at(word_topic, indices[a:b], counts[a:b, None] * phi)
        second += Sigma + np.outer(mu, mu)
    assert np.array_equal(stats.topics.words, np.unique(indices))
    assert np.allclose(stats.topics.word_topic, word_topic[stats.topics.words], atol=1e-6)
    assert np.isclose(stats.topics.word_topic.sum(), counts.sum())
    assert np.allclose(stats.mu_sum, result.mu.sum(axis=0)) and np.allclose(stats.second_sum, second, atol=1e-5)
    assert stats.bound == pytest.approx(result.bound.sum())
    merged = stats.merge(stats.scaled(2.0))
    assert np.allclose(merged.second_sum, 3 * stats.second_sum) and merged.n_docs == 60


def test_m_step_of_the_prior_centres_fixes_the_gauge_and_shrinks():
    K = 4
    model = small_model(K=K)
    rng = np.random.default_rng(0)
    mus = rng.normal(size=(50, K)) + 3.0                 # a common offset: invisible to softmax
    sigmas = [np.diag(rng.uniform(0.1, 0.5, size=K)) for _ in range(50)]
    second = np.mean([S + np.outer(m, m) for S, m in zip(sigmas, mus)], axis=0)
    model.set_moments(mus.mean(axis=0), second, 50)
    C = np.eye(K) - 1.0 / K
    scatter = C @ (np.mean(sigmas, axis=0) + np.cov(mus.T, bias=True)) @ C
    G = scatter + np.trace(scatter) / (K - 1) / K
    assert np.allclose(model.mu0, C @ mus.mean(axis=0)) and abs(model.mu0.sum()) < 1e-12
    assert np.allclose(model.sigma0, (50 * G + K * np.diag(np.diag(G))) / (50 + K))
    # independent topics (isotropic centred scatter) come out uncorrelated
    model.set_moments(np.zeros(K), 2.0 * C + 7.0, 10)
    assert np.allclose(model.sigma0, 2.0 * np.eye(K))
    # positive definite with fewer documents than topics (a rank-one scatter)
    S = shrink_covariance(np.outer([1.0, 2, 3, 4], [1.0, 2, 3, 4]) + 1e-3 * np.eye(4), 2)
    assert np.all(np.linalg.eigvalsh(S) > 0)


def test_svi_update_is_an_online_average_of_the_statistics():
    K, V = 3, 6
    model = small_model(K=K, V=V)
    lam0, m1, m2 = model.lam.copy(), model.mu0.copy(), model.moment2.copy()
    svi = CTMSVI(model, Laplace(), corpus_docs=100, tau=1.0, kappa=1.0)
    model.step = 1                                      # rho = 0.5
    word_topic = np.array([[4.0, 0.0, 1.0]])
    mu_sum, second_sum = np.array([1.0, -2.0, 4.0]), np.eye(K) * 10
    svi.update(CTMStats(SufficientStats(np.array([2]), word_topic, 10, 5.0), mu_sum, second_sum, -3.0))
    expected = 0.5 * lam0 + 0.5 * 0.01
    expected[2] += 0.5 * 10 * word_topic[0]
    assert np.allclose(model.lam, expected)
    reference = small_model(K=K, V=V)
    reference.set_moments(0.5 * m1 + 0.5 * mu_sum / 10, 0.5 * m2 + 0.5 * second_sum / 10, 100)
    assert np.allclose(model.mu0, reference.mu0) and np.allclose(model.sigma0, reference.sigma0)
    assert (model.step, model.docs_seen) == (2, 10)


def test_seeded_topics_come_from_clusters_of_the_first_minibatch():
    rng = np.random.default_rng(0)
    beta = planted_topics(4, 80, rng)
    docs = list(lda_documents(beta, 200, 60, 0.05, rng))
    indptr = np.concatenate([[0], np.cumsum([len(i) for i, _ in docs])]).astype(np.int64)
    batch = Rows(np.arange(200), indptr, np.concatenate([i for i, _ in docs]),
                 np.concatenate([c for _, c in docs]).astype(np.float64))
    for seed in (1, 2, 3):
        words, lam = seed_topics(batch, 4, 0.01, np.random.default_rng(seed))
        topics = np.zeros((4, 80))
        topics[:, words] = (lam / lam.sum(axis=0)).T
        assert matched_tv(topics, beta) < 0.2      # random topics: about 0.9


# ------------------------------------------------------------------------------ training
@pytest.fixture(scope="module")
def planted_ctm(tmp_path_factory):
    """2,000 documents of 200 words from a CTM with 6 topics; topics 0 and 1 correlated 0.9 (sd 4,
    the others sd 2, so the pair's log-ratio still varies enough to tell its topics apart)."""
    rng = np.random.default_rng(1)
    K, V = 6, 300
    beta = planted_topics(K, V, rng)
    sd = np.full(K, 2.0)
    sd[:2] = 4.0
    sigma = planted_covariance(K, pair=(0, 1), correlation=0.9, sd=sd)
    root = tmp_path_factory.mktemp("ctm")
    train_corpus = write_corpus(root / "train", ctm_documents(beta, 2000, 200, np.zeros(K), sigma, rng), V)
    heldout = write_corpus(root / "heldout", ctm_documents(beta, 200, 200, np.zeros(K), sigma, rng), V)
    return beta, train_corpus, heldout


def fit(corpus, algorithm="batch", local="laplace", passes=2, seed=0, threads=None, K=6, model=None,
        batch_size=500, heldout=None):
    if threads:
        numba.set_num_threads(threads)
    try:
        model = model or CTMModel.initial(corpus.vocab, K, 0.01, np.random.default_rng(seed))
        step = LOCALS[local](seed=seed)
        algo = (CTMBatch(model, step, corpus.n_docs, seed=seed) if algorithm == "batch"
                else CTMSVI(model, step, corpus.n_docs, tau=1.0, kappa=0.7, seed=seed))
        summary, _ = train(algo, corpus, RunLimits(batch_size=batch_size, passes=passes), seed,
                           evaluate=(lambda m: evaluate_model(m, heldout, local=step)) if heldout else None,
                           progress=False)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return model, summary


@pytest.mark.parametrize("algorithm, local, passes, bound", [("batch", "laplace", 15, 0.04),
                                                              ("batch", "delta", 15, 0.04),
                                                              ("svi", "laplace", 5, 0.08)])
def test_recovers_planted_topics_and_their_correlation(planted_ctm, algorithm, local, passes, bound):
    beta, corpus, heldout = planted_ctm
    model, summary = fit(corpus, algorithm, local, passes=passes, heldout=heldout)
    fitted = model.expected_beta().T
    random_topics = np.random.default_rng(0).dirichlet(np.ones(beta.shape[1]), size=beta.shape[0])
    assert matched_tv(fitted, beta) < bound < 0.2 * matched_tv(random_topics, beta)
    tv = 0.5 * np.abs(fitted[:, None, :] - beta[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    fitted_of = dict(zip(cols, rows))
    corr = model.correlations()
    i, j = fitted_of[0], fitted_of[1]
    assert corr[i, j] >= 0.5
    others = np.abs(corr[np.triu_indices(6, k=1)])
    assert np.sort(others)[-2] < 0.35                   # independent topics come out uncorrelated
    assert model.strongest_pairs(1)[0][:2] == (min(i, j), max(i, j))
    assert summary["heldout"]["per_word_ll"] > -5.2


@pytest.mark.parametrize("algorithm, local", [("svi", "laplace"), ("batch", "delta")])
def test_same_seed_same_model_bit_for_bit_with_one_and_two_threads(planted_ctm, algorithm, local):
    _, corpus, heldout = planted_ctm
    one, s1 = fit(corpus, algorithm, local, passes=1, threads=1, batch_size=250)
    two, s2 = fit(corpus, algorithm, local, passes=1, threads=2, batch_size=250)
    assert (s1["threads_used"], s2["threads_used"]) == (1, 2)
    for name in ("lam", "mu0", "sigma0", "moment2"):
        assert np.array_equal(getattr(one, name), getattr(two, name))
    numba.set_num_threads(1)
    try:
        theta1 = LOCALS[local](seed=0).fit(*_block(heldout), one.estep_topics(), one.local_prior()).theta
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    theta2 = LOCALS[local](seed=0).fit(*_block(heldout), one.estep_topics(), one.local_prior()).theta
    assert np.array_equal(theta1, theta2)
    other, _ = fit(corpus, algorithm, local, passes=1, seed=2, batch_size=250)
    assert not np.array_equal(one.lam, other.lam)


def _block(corpus):
    rows = corpus.rows(np.arange(corpus.n_docs))
    return rows.indptr, rows.indices, rows.counts


def test_save_load_round_trip_and_continued_training(planted_ctm, tmp_path):
    _, corpus, heldout = planted_ctm
    model, _ = fit(corpus, "svi", "laplace", passes=0.5)
    model.settings.update(algorithm="svi", local="laplace", seed=0)
    model.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.kind == "ctm" and loaded.settings == model.settings
    for name in ("lam", "mu0", "sigma0", "moment2"):
        assert np.array_equal(getattr(loaded, name), getattr(model, name))
    assert (loaded.eta, loaded.step, loaded.docs_seen) == (model.eta, model.step, model.docs_seen)
    assert evaluate_model(loaded, heldout) == evaluate_model(model, heldout)
    a, _ = fit(corpus, "svi", "laplace", passes=0.5, model=model, seed=3)
    b, _ = fit(corpus, "svi", "laplace", passes=0.5, model=loaded, seed=3)
    assert np.array_equal(a.lam, b.lam) and np.array_equal(a.sigma0, b.sigma0)


def test_batch_em_resumes_mid_epoch_identically(planted_ctm):
    _, corpus, _ = planted_ctm
    blocks = [corpus.rows(np.arange(a, a + 500)) for a in range(0, 2000, 500)] * 2

    def run(split):
        model = CTMModel.initial(corpus.vocab, 6, 0.01, np.random.default_rng(0))
        algo = CTMBatch(model, Laplace(), corpus.n_docs)
        updated = [algo.step(b)["updated"] for b in blocks[:split]]
        if split < len(blocks):
            state = {k: v.copy() for k, v in algo.checkpoint_state().items()}
            algo = CTMBatch(model, Laplace(), corpus.n_docs)
            algo.restore_state(state)
            updated += [algo.step(b)["updated"] for b in blocks[split:]]
        return model, updated

    whole, updated = run(len(blocks))
    resumed, _ = run(5)
    assert updated == [False, False, False, True] * 2 and whole.step == 2
    assert np.array_equal(whole.lam, resumed.lam) and np.array_equal(whole.sigma0, resumed.sigma0)


def test_model_module_does_not_import_numba():
    code = "import sys, topicscale.models, topicscale.models.ctm; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------ command line

def test_cli_end_to_end(planted_ctm, tmp_path):
    _, corpus, heldout = planted_ctm
    fits = {}
    for algorithm in ("batch", "svi"):
        for local in ("laplace", "delta"):
            out = tmp_path / f"{algorithm}-{local}"
            summary = json.loads(run("fit", corpus.path, "--model", "ctm", "--algorithm", algorithm, "--local",
                                     local, "-k", "6", "--passes", "2", "--batch-size", "500", "--heldout",
                                     heldout.path, "--json", "-q", "-o", out).output)
            assert summary["docs"] == 4000 and summary["heldout"]["per_word_ll"] > -5.6
            fits[algorithm, local] = out
    info = json.loads(run("info", fits["svi", "laplace"], "--json").output)
    assert info["model"] == "ctm" and info["local"] == "laplace" and info["tau"] == 1.0
    model = load_model(fits["batch", "laplace"])
    # topics --correlations: the topics, then pairs, highest correlation first
    lines = run("topics", fits["batch", "laplace"], "-n", "3", "--correlations", "4").output.splitlines()
    assert len(lines) == 6 + 4
    pairs = [line.split() for line in lines[6:]]
    assert all(p[0] == "topic" and p[2] == "topic" for p in pairs)
    values = [float(p[4]) for p in pairs]
    assert values == sorted(values, reverse=True)
    corr = model.correlations()
    assert values[0] == pytest.approx(corr[int(pairs[0][1]), int(pairs[0][3])], abs=1e-3)
    assert len(run("topics", fits["batch", "laplace"], "--correlations").output.splitlines()) == 6 + 10
    payload = json.loads(run("topics", fits["batch", "laplace"], "--json", "--correlations", "2").output)
    assert np.allclose(payload["correlations"], corr) and len(payload["topics"]) == 6
    assert [p["topics"] for p in payload["pairs"]] == [list(p[:2]) for p in model.strongest_pairs(2)]
    assert isinstance(json.loads(run("topics", fits["batch", "laplace"], "--json").output), list)
    # eval: E_q[softmax(theta)] from the model's own local step, as during fit
    ev = json.loads(run("eval", fits["svi", "delta"], heldout.path, "--json").output)
    assert ev["per_word_ll"] == pytest.approx(
        json.loads((fits["svi", "delta"] / "metrics.jsonl").read_text().splitlines()[-1])["heldout"]["per_word_ll"],
        rel=1e-12)
    # the paper's plug-in predictive softmax(E[theta]) is reported beside it, and differs
    assert np.isfinite(ev["per_word_ll_paper_predictive"])
    assert ev["per_word_ll_paper_predictive"] != ev["per_word_ll"]
    run("infer", fits["svi", "delta"], heldout.path, "-o", tmp_path / "theta.npy")
    theta = np.load(tmp_path / "theta.npy")
    assert theta.shape == (200, 6) and np.allclose(theta.sum(axis=1), 1.0)
    run("export", fits["svi", "delta"], "-o", tmp_path / "topics.npy")
    assert np.allclose(np.load(tmp_path / "topics.npy"), load_model(fits["svi", "delta"]).expected_beta().T)


def test_cli_refuses_what_does_not_apply(planted_ctm, tmp_path):
    _, corpus, _ = planted_ctm
    run("fit", corpus.path, "-k", "3", "--max-docs", "100", "-q", "-o", tmp_path / "lda")
    r = run("topics", tmp_path / "lda", "--correlations", ok=False)
    assert r.exit_code == 2 and "--model ctm" in r.output and len(r.output.splitlines()) == 1
    r = run("fit", corpus.path, "--model", "ctm", "--alpha", "0.1", "-q", "-o", tmp_path / "x", ok=False)
    assert r.exit_code == 2 and "--alpha" in r.output
    r = run("fit", corpus.path, "--model", "ctm", "--local", "meanfield", "-q", "-o", tmp_path / "y", ok=False)
    assert r.exit_code == 2


@pytest.mark.parametrize("algorithm, local", [("svi", "laplace"), ("batch", "delta")])
def test_cli_stop_and_resume_is_bit_identical(planted_ctm, tmp_path, monkeypatch, algorithm, local):
    """Stopped mid-epoch (as by a signal) and resumed: the model an uninterrupted run writes (batch
    EM's partial sums and the seeding travel in the checkpoint)."""
    _, corpus, _ = planted_ctm
    args = ["fit", str(corpus.path), "--model", "ctm", "--algorithm", algorithm, "--local", local, "-k", "6",
            "--batch-size", "300", "--passes", "2", "--seed", "3", "-q"]
    run(*args, "-o", tmp_path / "whole")
    r, _ = run_stopped(monkeypatch, 5, *args, "-o", tmp_path / "cut")
    assert r.exit_code == 0 and "partial model" in r.output
    run("fit", "--resume", tmp_path / "cut")
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()

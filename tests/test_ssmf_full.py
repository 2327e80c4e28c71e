"""Full SSMF (Hoffman and Blei 2015, Algorithm 1 for LDA): the quantile derivative (eq. 15) and the
Fisher inverse (eq. 38) against dense numpy, unbiasedness of the natural gradient (eq. 27), the
projection, determinism, planted topics, held-out improvement, resume."""
import numba
import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import gammaincinv, gammainccinv, polygamma

from clirun import run_stopped
import reference
from synthetic import matched_tv
from topicscale.cli import cli
from topicscale.evaluate import evaluate_model, evaluate_topics
from topicscale.inference.global_steps.ssmf import SSMF, log_normalise, natural_gradient
from topicscale.inference.global_steps.ssmf_a import log_gamma_variates
from topicscale.inference.local_steps.base import LocalResult
from topicscale.inference.local_steps.gibbs import Gibbs
from topicscale.kernels.ssmf import dlog_quantile_dshape, trigamma
from topicscale.models import load_model
from topicscale.models.lda import LDAModel
from topicscale.runs import with_defaults
from topicscale.stats import SufficientStats
from topicscale.train import RunLimits, train


# ------------------------------------------------------------------------ eq. 15 and eq. 38 pieces
@pytest.mark.parametrize("a", [0.01, 0.03, 0.1, 0.5, 1.0, 1.7, 10.0, 100.0, 1000.0])
def test_quantile_derivative_matches_finite_differences_of_the_cdf(a):
    for u in [1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-6]:
        x = gammaincinv(a, u) if u < 0.5 else gammainccinv(a, 1 - u)
        if x < 1e-300:
            continue
        expected = reference.gamma_quantile_shape_derivative(a, x) / x       # d log R / d a
        assert dlog_quantile_dshape(a, np.log(x)) == pytest.approx(expected, rel=1e-8)


def test_quantile_derivative_in_log_space_where_the_draw_underflows():
    a = 0.01
    x = 1e-280                                                   # still representable: compare
    assert dlog_quantile_dshape(a, np.log(x)) == pytest.approx(
        reference.gamma_quantile_shape_derivative(a, x) / x, rel=1e-8)
    for log_x in (-800.0, -5000.0):                              # exp(log_x) == 0: the limit
        from scipy.special import digamma
        assert dlog_quantile_dshape(a, log_x) == pytest.approx(-(log_x - digamma(a + 1)) / a, rel=1e-14)
    assert dlog_quantile_dshape(a, -np.inf) == 0.0


def test_trigamma_matches_scipy():
    for x in [1e-8, 1e-3, 0.01, 0.3, 1.0, 2.5, 9.99, 10.0, 10.01, 137.0, 1e4, 1e9]:
        assert trigamma(x) == pytest.approx(polygamma(1, x), rel=1e-14)
    assert np.isnan(trigamma(0.0)) and np.isnan(trigamma(-1.0))


# ------------------------------------------------------------------------ one update vs dense numpy
class FixedCounts:
    """A stand-in local step: records the topics it is given and returns fixed statistics."""

    def __init__(self, stats):
        self.stats = stats
        self.topics = None

    def statistics(self, batch, model, topics=None, seed=None):
        self.topics = topics
        n = self.stats.n_docs
        return self.stats, LocalResult(np.ones((n, model.n_topics)), np.ones((n, model.n_topics)),
                                       np.empty(0), np.ones(n, dtype=np.int64), 1)


class Batch:
    def __init__(self, indices, n_docs):
        self.indices = np.asarray(indices, dtype=np.int32)
        self.n_docs = n_docs


def test_one_update_agrees_with_dense_equations_34_35_38():
    """SSMF.step (eq. 26: O(V) eq. 35 and Sherman-Morrison for eq. 38) against V x V numpy
    matrices of eqs. 34, 35 and 38 with the quantile derivatives of reference.py, to 1e-8."""
    rng = np.random.default_rng(7)
    V, K = 16, 3
    lam = rng.uniform(0.15, 30.0, size=(V, K))
    lam[2, 1] = 400.0
    words = np.array([0, 2, 3, 7, 11, 12])
    counts = rng.integers(0, 9, size=(words.shape[0], K)).astype(float)
    stats = SufficientStats(words, counts, n_docs=20, n_tokens=float(counts.sum()))
    model = LDAModel(lam=lam.copy(), alpha=np.full(K, 0.1), eta=0.05, vocab=[f"w{i}" for i in range(V)],
                     step=4, docs_seen=60)
    local = FixedCounts(stats)
    algo = SSMF(model, local, corpus_docs=200, tau=1.0, kappa=0.75, seed=11)
    metrics = algo.step(Batch(words, 20))

    draws = np.random.default_rng([11, 4])                  # the step's own stream
    log_x = log_gamma_variates(lam, draws)
    log_beta = log_normalise(log_x)[words]
    assert np.array_equal(local.topics, np.exp(log_beta - log_beta.max(axis=1, keepdims=True)))
    rho, n_t = (1.0 + 4) ** -0.75, 80
    assert metrics["rho"] == rho and metrics["n_t"] == n_t
    c = np.zeros((V, K))
    c[words] = counts
    expected = np.empty((V, K))
    for k in range(K):
        ng = reference.ssmf_natural_gradient_dense(lam[:, k], np.exp(log_x[:, k]), c[:, k])
        expected[:, k] = (1 - rho) * lam[:, k] + rho * (0.05 + n_t / 20 * ng)
    assert np.all(expected > 0.05 / 100) and metrics["projected"] == 0   # no projection here
    np.testing.assert_allclose(model.lam, expected, rtol=1e-8, atol=0)
    assert model.step == 5 and model.docs_seen == 80


def test_natural_gradient_is_unbiased_for_fixed_counts():
    """E[F^-1 J^T c] = F^-1 E[J]^T c = c since E[J] = F (eq. 27): many independent draws of one
    topic (as columns) average to the counts, within 5 standard errors."""
    rng = np.random.default_rng(3)
    lam_col = np.array([0.01, 0.05, 0.3, 1.0, 2.0, 5.0, 40.0, 0.5])
    c_col = np.array([0.0, 1.0, 3.0, 0.0, 5.0, 2.0, 7.0, 1.0])
    R = 40_000
    lam = np.repeat(lam_col[:, None], R, axis=1)
    ng = natural_gradient(lam, log_gamma_variates(lam, rng), np.repeat(c_col[:, None], R, axis=1))
    mean, se = ng.mean(axis=1), ng.std(axis=1) / np.sqrt(R)
    assert np.all(np.abs(mean - c_col) < 5 * se + 1e-9)


# ------------------------------------------------------------------------ projection
def test_projection_keeps_lambda_positive_and_is_counted():
    """rho_1 = 1 and few counts: the natural gradient sends entries below zero; they are set to
    min_lambda (default eta / 100) and counted in metrics["projected"]."""
    rng = np.random.default_rng(5)
    V, K = 40, 4
    lam = rng.gamma(100.0, 0.01, size=(V, K))
    words = np.arange(0, V, 3)
    counts = rng.integers(0, 3, size=(words.shape[0], K)).astype(float)
    stats = SufficientStats(words, counts, n_docs=5, n_tokens=float(counts.sum()))
    model = LDAModel(lam=lam.copy(), alpha=np.full(K, 0.1), eta=0.01, vocab=[f"w{i}" for i in range(V)])
    algo = SSMF(model, FixedCounts(stats), corpus_docs=50, tau=1.0, kappa=0.75, seed=2)
    metrics = algo.step(Batch(words, 5))
    log_x = log_gamma_variates(lam, np.random.default_rng([2, 0]))
    c = np.zeros((V, K))
    c[words] = counts
    unprojected = 0.01 + natural_gradient(lam, log_x, c)          # rho = 1, N_1 = |S|
    below = unprojected < 1e-4
    assert below.sum() > 0 and metrics["projected"] == below.sum()
    assert metrics["projected_share"] == below.sum() / (V * K)
    assert np.all(model.lam[below] == 1e-4) and np.allclose(model.lam[~below], unprojected[~below])
    assert model.lam.min() >= 1e-4
    # an explicit floor
    model2 = LDAModel(lam=lam.copy(), alpha=np.full(K, 0.1), eta=0.01, vocab=model.vocab)
    m2 = SSMF(model2, FixedCounts(stats), corpus_docs=50, tau=1.0, seed=2, min_lambda=1e-3).step(Batch(words, 5))
    assert m2["projected"] == (unprojected < 1e-3).sum() and model2.lam.min() == 1e-3
    with pytest.raises(ValueError):
        SSMF(model2, None, corpus_docs=50, min_lambda=0.0)


# ------------------------------------------------------------------------ training
def fit(corpus, passes=3, seed=2, threads=None, heldout=None, eval_every=0, K=10, tau=10.0):
    if threads:
        numba.set_num_threads(threads)
    try:
        model = LDAModel.initial(corpus.vocab, K, 1.0 / K, 0.01, np.random.default_rng(seed))
        algo = SSMF(model, Gibbs(), corpus.n_docs, tau=tau, kappa=0.75, seed=seed)
        records = []
        summary, _ = train(algo, corpus, RunLimits(batch_size=100, passes=passes, eval_every=eval_every),
                           seed, evaluate=(lambda m: evaluate_model(m, heldout, fold_in="own", local=algo.local))
                           if heldout else None, on_record=records.append, progress=False)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return model, summary, records


def test_recovers_planted_topics_and_counts_projections(planted):
    beta, train_corpus, heldout = planted
    model, summary, records = fit(train_corpus, heldout=heldout)
    fitted = model.expected_beta().T
    random_topics = np.random.default_rng(0).dirichlet(np.ones(beta.shape[1]), size=beta.shape[0])
    assert matched_tv(fitted, beta) < 0.15                      # thresholds of test_matrix.py
    assert matched_tv(fitted, beta) < 0.2 * matched_tv(random_topics, beta)
    truth = evaluate_topics(beta, heldout, alpha=0.2)["per_word_ll"]
    assert summary["heldout"]["per_word_ll"] > truth - 0.2
    projected = [r["projected"] for r in records if r["event"] == "batch"]
    assert len(projected) == 90 and all(isinstance(p, int) and p >= 0 for p in projected)
    assert model.lam.min() >= model.eta / 100


def test_heldout_likelihood_improves_with_training(planted):
    _, train_corpus, heldout = planted
    _, _, records = fit(train_corpus, passes=2, seed=1, heldout=heldout, eval_every=5)
    scores = [r["per_word_ll"] for r in records if r["event"] == "eval"]
    assert len(scores) >= 4
    assert scores[-1] > scores[0] + 0.05


def test_same_seed_same_model_bit_for_bit_with_one_and_two_threads(planted):
    _, train_corpus, _ = planted
    one, s1, _ = fit(train_corpus, passes=1, seed=1, threads=1)
    two, s2, _ = fit(train_corpus, passes=1, seed=1, threads=2)
    assert s1["threads_used"] == 1 and s2["threads_used"] == 2
    assert np.array_equal(one.lam, two.lam)
    other, _, _ = fit(train_corpus, passes=1, seed=3)
    assert not np.array_equal(one.lam, other.lam)


# ------------------------------------------------------------------------ CLI: defaults, matrix, resume
def test_cli_defaults_are_the_papers_and_the_matrix_accepts_three_local_steps():
    config = {"model": "lda", "algorithm": "ssmf", "local": "gibbs", "tau": None, "kappa": None,
              "batch_size": None, "alpha": None, "eta": None}
    filled = with_defaults(config)
    assert (filled["tau"], filled["kappa"], filled["batch_size"], filled["alpha"]) == (10.0, 0.75, 1000, 0.1)
    for local in ("meanfield", "cvb0"):
        with_defaults(dict(config, local=local))


def test_stop_and_resume_is_bit_identical(planted, tmp_path, monkeypatch):
    _, corpus, _ = planted
    args = ["fit", str(corpus.path), "--algorithm", "ssmf", "-k", "6", "--batch-size", "200",
            "--passes", "2", "--tau", "10", "--seed", "3"]
    r = CliRunner().invoke(cli, args + ["-o", str(tmp_path / "whole")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    r, _ = run_stopped(monkeypatch, 7, *args, "-o", tmp_path / "cut")
    assert r.exit_code == 0 and "partial model" in r.output
    assert load_model(tmp_path / "cut").step < load_model(tmp_path / "whole").step
    r = CliRunner().invoke(cli, ["fit", "--resume", str(tmp_path / "cut")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()

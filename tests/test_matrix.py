"""The inference matrix (SSMF paper sec. 2.5): every global step of the registry with its default
local step must recover planted topics, improve held-out likelihood, be deterministic under a
seed whatever the thread count, and keep its state in LDAModel (save/load round trip); every
(global, local) pair must run. Plus the update rules of SCVB0, SSMF-A and batch VB."""
import sys

import numba
import numpy as np
import pytest

from synthetic import matched_tv
from topicscale import registry
from topicscale.evaluate import evaluate_model, evaluate_topics
from topicscale.inference import schedule
from topicscale.inference.global_steps.batch import BatchVB
from topicscale.inference.global_steps.scvb0 import SCVB0, scvb0_step_size
from topicscale.inference.global_steps.ssmf_a import SSMFA, ramp, sample_topic_rows
from topicscale.inference.global_steps.svi import SVI
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.models import load_model
from topicscale.models.lda import LDAModel
from topicscale.stats import SufficientStats
from topicscale.train import RunLimits, train

# Schedules for the 3,000-document planted corpus (30 minibatches of 100 per pass). The papers'
# defaults are tuned for millions of documents (SCVB0's tau = 1000 would barely move in 90
# steps), so the delays are shortened; everything else is the algorithms' own.
SETTINGS = {
    "svi": dict(tau=1.0, kappa=0.7),
    "scvb0": dict(tau=100.0, kappa=0.9, s=10.0),
    "ssmf-a": dict(tau=10.0, kappa=0.75),
    "ssmf": dict(tau=10.0, kappa=0.75),
    "batch": dict(),
}
PASSES = {"svi": 3, "scvb0": 3, "ssmf-a": 3, "ssmf": 3, "batch": 10}


ALGORITHMS = sorted(c.algorithm for c in registry.MATRIX if c.model == "lda")
LOCAL_STEPS = sorted({n for c in registry.MATRIX if c.model == "lda" for n in c.locals})


def default_local(name):
    return registry.cell("lda", name).locals[0]


def local_class(name):
    return registry.local_step_class(name)


def make(name, model, corpus, local=None, seed=0):
    cls = registry.global_step_class("lda", name)
    local_cls = local_class(local or default_local(name))
    kwargs = dict(SETTINGS[name])
    if name == "scvb0":
        kwargs["corpus_tokens"] = corpus.n_tokens
    if name != "svi":
        kwargs["seed"] = seed
    return cls(model, local_cls(), corpus.n_docs, **kwargs)


def fit(name, corpus, passes=None, seed=1, threads=None, heldout=None, eval_every=0, model=None,
        local=None, K=10):
    if threads:
        numba.set_num_threads(threads)
    try:
        model = model or LDAModel.initial(corpus.vocab, K, 1.0 / K, 0.01, np.random.default_rng(seed))
        algo = make(name, model, corpus, local=local, seed=seed)
        records = []
        summary, _ = train(algo, corpus, RunLimits(batch_size=100, passes=passes or PASSES[name],
                                                   eval_every=eval_every), seed,
                           evaluate=(lambda m: evaluate_model(m, heldout, fold_in="own", local=algo.local))
                           if heldout else None, on_record=records.append, progress=False)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return model, summary, records


@pytest.mark.parametrize("name", ALGORITHMS)
def test_recovers_planted_topics(planted, name):
    beta, train_corpus, heldout = planted
    # seed 2: an initialisation from which no algorithm merges two topics (from seed 1 every
    # algorithm, SVI included, merges one pair: matched TV about 0.2), so the bounds can be tight
    model, summary, _ = fit(name, train_corpus, heldout=heldout, seed=2)
    fitted = model.expected_beta().T
    random_topics = np.random.default_rng(0).dirichlet(np.ones(beta.shape[1]), size=beta.shape[0])
    assert matched_tv(fitted, beta) < 0.15
    assert matched_tv(fitted, beta) < 0.2 * matched_tv(random_topics, beta)
    truth = evaluate_topics(beta, heldout, alpha=0.2)["per_word_ll"]
    assert summary["heldout"]["per_word_ll"] > truth - 0.2


@pytest.mark.parametrize("name", ALGORITHMS)
def test_heldout_likelihood_improves_with_training(planted, name):
    _, train_corpus, heldout = planted
    batches_per_pass = -(-train_corpus.n_docs // 100)
    passes, every = (5, batches_per_pass) if name == "batch" else (2, 5)
    _, _, records = fit(name, train_corpus, passes=passes, heldout=heldout, eval_every=every)
    scores = [r["per_word_ll"] for r in records if r["event"] == "eval"]
    assert len(scores) >= 4
    assert scores[-1] > scores[0] + 0.05


@pytest.mark.parametrize("name", ALGORITHMS)
def test_same_seed_same_model_bit_for_bit_with_one_and_two_threads(planted, name):
    _, train_corpus, _ = planted
    one, s1, _ = fit(name, train_corpus, passes=1, threads=1)
    two, s2, _ = fit(name, train_corpus, passes=1, threads=2)
    assert s1["threads_used"] == 1
    assert s2["threads_used"] == 2
    assert np.array_equal(one.lam, two.lam)
    other, _, _ = fit(name, train_corpus, passes=1, seed=2)
    assert not np.array_equal(one.lam, other.lam)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_save_load_round_trip_and_continued_training(planted, tmp_path, name):
    _, train_corpus, heldout = planted
    model, _, _ = fit(name, train_corpus, passes=1)
    model.settings.update(algorithm=name, local=default_local(name))
    model.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert np.array_equal(loaded.lam, model.lam) and np.array_equal(loaded.alpha, model.alpha)
    assert (loaded.eta, loaded.step, loaded.docs_seen) == (model.eta, model.step, model.docs_seen)
    assert loaded.settings == model.settings
    local = local_class(default_local(name))()
    assert (evaluate_model(loaded, heldout, fold_in="own", local=local)
            == evaluate_model(model, heldout, fold_in="own", local=local))
    # the algorithm's whole state is in the model: training on from either gives the same model
    # (the file holds lambda settled, so the lazy form in memory is settled likewise)
    model.settle()
    a, _, _ = fit(name, train_corpus, passes=1, model=model, seed=3)
    b, _, _ = fit(name, train_corpus, passes=1, model=loaded, seed=3)
    assert np.array_equal(a.lam, b.lam)


@pytest.mark.parametrize("local", LOCAL_STEPS)
@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_global_step_runs_with_every_local_step(planted, name, local):
    _, train_corpus, heldout = planted
    model = LDAModel.initial(train_corpus.vocab, 5, 0.2, 0.01, np.random.default_rng(0))
    algo = make(name, model, train_corpus, local=local)
    algo.corpus_docs = 400                     # so that batch VB completes its epoch
    for start in range(0, 400, 100):
        metrics = algo.step(train_corpus.rows(np.arange(start, start + 100)))
        assert metrics["threads_used"] >= 1
    assert model.step >= 1 and model.docs_seen == 400
    assert np.all(np.isfinite(model.lam)) and np.all(model.lam > 0)
    assert np.isfinite(evaluate_model(model, heldout, fold_in="own", local=algo.local)["per_word_ll"])


# ------------------------------------------------------------------------ update rules
def test_scvb0_update_follows_equations_7_and_8():
    """N_phi <- (1 - rho) N_phi + rho C/|M| hat N_phi with lam = N_phi + eta; N_Z = colsum."""
    lam = np.array([[2.0, 1.0], [3.0, 5.0], [0.5, 0.5]])
    model = LDAModel(lam=lam.copy(), alpha=np.full(2, 0.1), eta=0.1, vocab=["a", "b", "c"], step=9)
    scvb0 = SCVB0(model, None, corpus_docs=50, tau=1.0, kappa=1.0, s=5.0, corpus_tokens=400.0)
    rho = scvb0_step_size(9, 5.0, 1.0, 1.0)
    assert rho == 0.5
    nhat = np.array([[6.0, 2.0]])
    scvb0.update(SufficientStats(np.array([1]), nhat, n_docs=2, n_tokens=8.0))
    n_phi = (1 - rho) * (lam - 0.1)
    n_phi[1] += rho * 400.0 / 8.0 * nhat[0]
    assert np.allclose(model.lam, n_phi + 0.1)
    n_z = (1 - rho) * (lam - 0.1).sum(axis=0) + rho * 400.0 / 8.0 * nhat.sum(axis=0)   # eq. 8
    assert np.allclose(model.lam.sum(axis=0) - 3 * 0.1, n_z)
    assert model.step == 10 and model.docs_seen == 2
    assert scvb0_step_size(0, 10.0, 1.0, 0.9) == 1.0           # capped


def test_scvb0_estimates_corpus_tokens_without_them():
    model = LDAModel(lam=np.ones((3, 2)), alpha=np.full(2, 0.1), eta=0.01, vocab=["a", "b", "c"])
    scvb0 = SCVB0(model, None, corpus_docs=1000)
    scvb0.update(SufficientStats(np.array([0]), np.array([[10.0, 2.0]]), n_docs=4, n_tokens=12.0))
    scvb0.update(SufficientStats(np.array([2]), np.array([[1.0, 3.0]]), n_docs=4, n_tokens=4.0))
    assert scvb0.corpus_size() == 1000 * 16.0 / 8
    assert SCVB0.DEFAULTS == {"alpha": 0.1, "eta": 0.01, "batch_size": 100, "tau": 1000.0,
                              "kappa": 0.9, "s": 10.0}


def test_ssmf_update_uses_the_ramp():
    """lambda <- (1 - rho) lambda + rho (eta + N_t/|S| counts), N_t = min(t |S|, N)."""
    model = LDAModel(lam=np.full((3, 2), 2.0), alpha=np.full(2, 0.1), eta=0.1, vocab=["a", "b", "c"])
    ssmf = SSMFA(model, None, corpus_docs=25, tau=1.0, kappa=1.0)
    counts = np.array([[4.0, 0.0]])
    for t, n_t in [(1, 10), (2, 20), (3, 25), (4, 25)]:
        before = model.lam.copy()
        rho = (1.0 + t - 1) ** -1.0
        ssmf.update(SufficientStats(np.array([1]), counts, n_docs=10, n_tokens=4.0))
        expected = (1 - rho) * before + rho * 0.1
        expected[1] += rho * n_t / 10 * counts[0]
        assert ssmf.last_n == n_t and np.allclose(model.lam, expected)
    assert ramp(5, 3) == 3 and ramp(2, 3) == 2


def test_sampled_topics_are_an_exact_dirichlet_draw():
    rng = np.random.default_rng(0)
    lam = rng.gamma(0.5, 2.0, size=(30, 3)) + 0.01
    lam[4] = 0.01                                                  # near-eta shapes: log space
    words = np.array([1, 4, 7, 20])
    draws = np.array([np.exp(sample_topic_rows(lam, words, rng)[0]) for _ in range(4000)])
    expected = lam[words] / lam.sum(axis=0)
    assert np.allclose(draws.mean(axis=0), expected, rtol=0.1, atol=2e-3)
    # Dirichlet variance a (a0 - a) / (a0^2 (a0 + 1)) of the aggregated marginal
    a0 = lam.sum(axis=0)
    var = lam[words] * (a0 - lam[words]) / (a0 ** 2 * (a0 + 1))
    assert np.allclose(draws.var(axis=0), var, rtol=0.25, atol=1e-5)
    log_beta, rows = sample_topic_rows(lam, words, rng)
    assert np.all(np.isfinite(log_beta)) and np.allclose(rows.max(axis=1), 1.0)
    # all words: each topic's sample sums to one
    log_all, _ = sample_topic_rows(lam, np.arange(30), rng)
    assert np.allclose(np.exp(log_all).sum(axis=0), 1.0)


def test_batch_vb_sets_lambda_to_eta_plus_the_epoch_statistics(planted):
    _, train_corpus, _ = planted
    model = LDAModel.initial(train_corpus.vocab, 6, 0.2, 0.01, np.random.default_rng(0))
    start = model.lam.copy()
    vb = BatchVB(model, MeanField(), corpus_docs=300)
    updated = [vb.step(train_corpus.rows(np.arange(a, a + 100)))["updated"] for a in (0, 100, 200)]
    assert updated == [False, False, True] and model.step == 1 and model.docs_seen == 300
    whole, _ = estep_statistics(MeanField(), train_corpus.rows(np.arange(300)),
                                LDAModel(start, model.alpha, model.eta, model.vocab))
    expected = np.full_like(start, model.eta)
    expected[whole.words] += whole.word_topic
    assert np.allclose(model.lam, expected, rtol=1e-10)


def test_svi_with_mean_topics_in_the_estep_recovers_planted_topics(planted):
    """--estep-beta mean (E[beta] instead of exp(E[log beta]) in eq. 33): the same recovery
    bounds as every algorithm, and the E-step runs on exactly E[beta]'s rows."""
    beta, train_corpus, heldout = planted
    model = LDAModel.initial(train_corpus.vocab, 10, 0.1, 0.01, np.random.default_rng(2))
    local = MeanField(estep_beta="mean")
    words = np.array([3, 7, 400])
    assert np.allclose(local.estep_topics(model, words), model.expected_beta()[words], rtol=1e-12)
    algo = SVI(model, local, train_corpus.n_docs, **SETTINGS["svi"])
    summary, _ = train(algo, train_corpus, RunLimits(batch_size=100, passes=PASSES["svi"]), 2,
                       evaluate=lambda m: evaluate_model(m, heldout, fold_in="own", local=local), progress=False)
    assert matched_tv(model.expected_beta().T, beta) < 0.15
    truth = evaluate_topics(beta, heldout, alpha=0.2)["per_word_ll"]
    assert summary["heldout"]["per_word_ll"] > truth - 0.2


def _guard_counters(model, counting):
    """Make `model` refuse a write of step or docs_seen from anywhere but schedule.advance
    (`counting` is its code)."""
    class Guarded(type(model)):
        def __setattr__(self, name, value):
            if name in ("step", "docs_seen") and sys._getframe(1).f_code is not counting:
                raise AssertionError(f"model.{name} changed outside schedule.advance "
                                     f"({sys._getframe(1).f_code.co_qualname})")
            super().__setattr__(name, value)
    model.__class__ = Guarded
    return model


@pytest.mark.parametrize("cell,local", [(c, n) for c in registry.MATRIX for n in c.locals],
                         ids=lambda x: x if isinstance(x, str) else f"{x.model}-{x.algorithm}")
def test_global_steps_count_only_through_schedule_advance(planted, monkeypatch, cell, local):
    """Every registered global step counts its minibatch by calling schedule.advance exactly
    once in `step(batch)` (docs_seen += the minibatch's documents; step += 1 when the global
    parameters changed: every minibatch, or for batch VB / EM the one that completes an epoch),
    and nothing else writes model.step or model.docs_seen (nor does warm_up count anything)."""
    _, train_corpus, _ = planted
    original = schedule.advance
    step_cls = registry.global_step_class(cell.model, cell.algorithm)
    calls = []

    def counted(model, n_docs, updated=True):
        calls.append((n_docs, updated))
        original(model, n_docs, updated)
    monkeypatch.setattr(schedule, "advance", counted)
    for name, module in list(sys.modules.items()):       # modules that imported the name itself
        if name.startswith("topicscale.") and getattr(module, "advance", None) is original:
            monkeypatch.setattr(module, "advance", counted)
    model = registry.model_class(cell.model).from_config(
        train_corpus.vocab, {"n_topics": 4, "corpus_docs": 50}, np.random.default_rng(0))
    model = _guard_counters(model, original.__code__)
    algo = registry.build(step_cls, model, registry.build(registry.local_step_class(local)), 50)
    if hasattr(algo, "warm_up"):
        algo.warm_up()
    assert calls == [] and (model.step, model.docs_seen) == (0, 0)
    epoch_steps = cell.algorithm == "batch"
    for i, start in enumerate(range(0, 100, 25)):
        batch = train_corpus.rows(np.arange(start, start + 25))
        before = (model.step, model.docs_seen)
        metrics = algo.step(batch)
        updated = metrics["updated"] if epoch_steps else True
        assert calls == [(25, updated)], calls
        assert (model.step, model.docs_seen) == (before[0] + updated, before[1] + 25)
        calls.clear()
    assert model.step == (2 if epoch_steps else 4)

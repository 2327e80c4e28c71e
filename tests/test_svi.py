"""SVI for LDA: recovery of planted topics, determinism, held-out improvement, statistics."""
import numba
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from topicscale.evaluate import evaluate_model, evaluate_topics
from topicscale.inference.local import MeanField
from topicscale.inference.schedule import robbins_monro
from topicscale.inference.svi import SVI
from topicscale.models.lda import LDAModel
from topicscale.stats import SufficientStats
from topicscale.train import RunLimits, train


def fit(corpus, K=10, passes=3, seed=1, threads=None, heldout=None, eval_every=0, batch_size=100):
    if threads:
        numba.set_num_threads(threads)
    try:
        model = LDAModel.initial(corpus.vocab, K, 1.0 / K, 0.01,
                                 np.random.default_rng(seed))
        records = []
        summary, _ = train(SVI(model, MeanField(), corpus.n_docs, tau=1.0, kappa=0.7), corpus,
                        RunLimits(batch_size=batch_size, passes=passes, eval_every=eval_every), seed,
                        evaluate=(lambda m: evaluate_model(m, heldout)) if heldout else None,
                        on_record=records.append, progress=False)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return model, summary, records


def matched_tv(estimated, planted):
    tv = 0.5 * np.abs(estimated[:, None, :] - planted[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    return tv[rows, cols].mean()


def test_recovers_planted_topics(planted):
    beta, train_corpus, heldout = planted
    model, summary, _ = fit(train_corpus, heldout=heldout)
    fitted = model.expected_beta().T
    random_topics = np.random.default_rng(0).dirichlet(np.ones(beta.shape[1]), size=beta.shape[0])
    assert matched_tv(fitted, beta) < 0.3
    assert matched_tv(fitted, beta) < 0.35 * matched_tv(random_topics, beta)
    # the fitted model predicts held-out words nearly as well as the true topics
    truth = evaluate_topics(beta, heldout, alpha=0.2)["per_word_ll"]
    assert summary["heldout"]["per_word_ll"] > truth - 0.25


def test_heldout_likelihood_improves_with_training(planted):
    _, train_corpus, heldout = planted
    _, _, records = fit(train_corpus, passes=2, heldout=heldout, eval_every=5)
    scores = [r["per_word_ll"] for r in records if r["event"] == "eval"]
    assert len(scores) >= 4
    assert scores[-1] > scores[0] + 0.05


def test_same_seed_same_model_bit_for_bit_with_one_and_two_threads(planted):
    _, train_corpus, _ = planted
    one, s1, _ = fit(train_corpus, passes=1, threads=1)
    two, s2, _ = fit(train_corpus, passes=1, threads=2)
    assert s1["threads_used"] == 1
    assert s2["threads_used"] == 2          # two threads really ran
    assert np.array_equal(one.lam, two.lam)
    other, _, _ = fit(train_corpus, passes=1, seed=2)
    assert not np.array_equal(one.lam, other.lam)


def test_minibatches_cover_every_document_once_per_pass(planted):
    _, train_corpus, _ = planted
    _, summary, records = fit(train_corpus, passes=1, batch_size=128)
    assert summary["docs"] == train_corpus.n_docs
    assert summary["batches"] == -(-train_corpus.n_docs // 128)


def test_step_size_schedule():
    assert robbins_monro(0, 1.0, 0.9) == 1.0
    assert np.isclose(robbins_monro(9, 1.0, 0.5), 10 ** -0.5)


def test_sufficient_stats_merge_and_scale():
    a = SufficientStats(np.array([1, 4]), np.array([[1.0, 2.0], [3.0, 4.0]]), 2, 10.0)
    b = SufficientStats(np.array([0, 4]), np.array([[5.0, 6.0], [7.0, 8.0]]), 3, 15.0)
    m = a.merge(b)
    assert m.words.tolist() == [0, 1, 4]
    assert m.word_topic.tolist() == [[5, 6], [1, 2], [10, 12]]
    assert (m.n_docs, m.n_tokens) == (5, 25.0)
    assert a.scaled(2.0).word_topic.tolist() == [[2, 4], [6, 8]]


def test_svi_update_follows_figure_6():
    """lambda_t = (1 - rho) lambda_{t-1} + rho (eta + D/|S| * stats), on the batch's words and the rest."""
    model = LDAModel(lam=np.full((3, 2), 2.0), alpha=np.full(2, 0.5), eta=0.1, vocab=["a", "b", "c"])
    svi = SVI(model, MeanField(), corpus_docs=100, tau=1.0, kappa=1.0)
    model.step = 1                                  # rho = (1 + 1)^-1 = 0.5
    svi.update(SufficientStats(np.array([1]), np.array([[4.0, 0.0]]), n_docs=10, n_tokens=4.0))
    assert np.allclose(model.lam[0], 0.5 * 2.0 + 0.5 * 0.1)
    assert np.allclose(model.lam[1], [0.5 * 2.0 + 0.5 * (0.1 + 10 * 4.0), 0.5 * 2.0 + 0.5 * 0.1])
    assert model.step == 2 and model.docs_seen == 10

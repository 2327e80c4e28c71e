"""SVI for LDA: the update of figure 6, step sizes, sufficient statistics, minibatch coverage.

Recovery, determinism and held-out improvement of every algorithm are in test_matrix.py and
test_conformance.py."""
import numba
import numpy as np
import pytest

from synthetic import matched_tv  # noqa: F401  (other test files import it from here too)
from topicscale.evaluate import evaluate_model
from topicscale.inference.global_steps.scvb0 import SCVB0
from topicscale.inference.global_steps.ssmf_a import SSMFA
from topicscale.inference.global_steps.svi import SVI
from topicscale.inference.local_steps.cvb0 import CVB0
from topicscale.inference.local_steps.gibbs import Gibbs
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.inference.schedule import robbins_monro
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


def test_minibatches_cover_every_document_once_per_pass(planted):
    _, train_corpus, _ = planted
    _, summary, records = fit(train_corpus, passes=1, batch_size=128)
    assert summary["docs"] == train_corpus.n_docs
    assert summary["batches"] == -(-train_corpus.n_docs // 128)


class _WithoutWarmUp:
    """An algorithm as the driver sees it, minus the optional warm_up hook."""
    def __init__(self, algorithm):
        self.model, self.step = algorithm.model, algorithm.step


@pytest.mark.parametrize("algorithm, local, settings", [(SVI, MeanField, None), (SVI, CVB0, None),
                                                        (SVI, Gibbs, None), (SVI, CVB0, {"eta_auto": True}),
                                                        (SCVB0, CVB0, None), (SSMFA, Gibbs, None)])
def test_kernel_warm_up_leaves_the_model_and_the_fit_unchanged(planted, algorithm, local, settings):
    """The driver's warm-up (kernel loading, not timed as training) must not touch the model:
    a run with it ends at exactly the topics (and learned eta) of a run without it, for every
    LDA local step and the stochastic global steps that offer it."""
    _, corpus, _ = planted
    fitted = []
    for warm in (True, False):
        model = LDAModel.initial(corpus.vocab, 10, 0.1, 0.01, np.random.default_rng(3), settings=settings)
        before = model.lam.copy()
        algo = algorithm(model, local(), corpus.n_docs, tau=1.0, kappa=0.7)
        if warm:
            algo.warm_up()
            assert np.array_equal(model.lam, before) and model.step == 0
        summary, _ = train(algo if warm else _WithoutWarmUp(algo), corpus,
                           RunLimits(batch_size=100, passes=1), 5, progress=False)
        assert (summary["kernel_load_seconds"] is None) != warm
        fitted.append((model.lam, model.eta))
    assert np.array_equal(fitted[0][0], fitted[1][0]) and fitted[0][1] == fitted[1][1]
    assert (fitted[0][1] != 0.01) == bool(settings)


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

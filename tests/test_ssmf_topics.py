"""Local steps take their topics explicitly: statistics(batch, model, topics, seed=None).

SSMF and SSMF-A (Hoffman and Blei 2015, Algorithms 1 and 2, step 6) run the local step on a
sample of beta from q, whatever topics the step would choose itself; the other global steps
hand it its own (estep_topics). The model gives a local step only its document prior and K.
"""
import inspect

import numpy as np
import pytest

from test_kernels import random_csr
from topicscale import registry
from topicscale.corpus.shards import Rows
from topicscale.inference.global_steps.ssmf import SSMF, log_normalise
from topicscale.inference.global_steps.ssmf_a import SSMFA, sample_topic_rows, log_gamma_variates
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.inference.schedule import advance
from topicscale.models.ctm import CTMModel
from topicscale.models.hdp import HDPModel
from topicscale.models.lda import LDAModel

V, K = 60, 5


def _batch(seed=3, D=30):
    rng = np.random.default_rng(seed)
    indptr, indices, counts = random_csr(rng, D, V)
    return Rows(np.arange(D), indptr, indices, counts)


def _fitted_with_mean_topics(seed=1):
    """An LDA model as `--init` loads it from a fit with `--estep-beta mean` (uneven topics,
    a few steps taken, still in the lazy form)."""
    rng = np.random.default_rng(seed)
    model = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng,
                             settings={"algorithm": "svi", "local": "meanfield", "estep_beta": "mean"})
    model.lam = rng.gamma(0.3, 5.0, size=(V, K)) + 0.01
    for t in range(3):
        words = np.sort(rng.choice(V, size=20, replace=False)).astype(np.int64)
        model.update_topics((10.0 + t) ** -0.7, words, 30.0, rng.gamma(0.5, 1.0, size=(20, K)))
        advance(model, 20)
    return model


def _copy(model):
    return LDAModel(model.lam.copy(), model.alpha.copy(), model.eta, list(model.vocab), step=model.step,
                    docs_seen=model.docs_seen, settings=dict(model.settings))


def _sampled_rows(name, lam, words, seed, step):
    """The rows step 5 of each algorithm hands the local step (drawn as the global step draws)."""
    rng = np.random.default_rng([seed, step])
    if name == "ssmf-a":
        return sample_topic_rows(lam, words, rng)[1]
    log_beta = log_normalise(log_gamma_variates(lam, rng))[words]
    return np.exp(log_beta - log_beta.max(axis=1, keepdims=True))


@pytest.mark.parametrize("name, cls", [("ssmf-a", SSMFA), ("ssmf", SSMF)])
def test_ssmf_meanfield_runs_on_the_sampled_topics_even_with_estep_beta_mean(name, cls):
    model = _fitted_with_mean_topics()
    local = MeanField(estep_beta=model.settings["estep_beta"])
    assert local.estep_beta == "mean"
    before = _copy(model)
    batch = _batch()
    algo = cls(model, local, corpus_docs=1000, tau=10.0, kappa=0.75, seed=7)
    seen = []
    update = algo.update
    algo.update = lambda stats, *rest: (seen.append(stats), update(stats, *rest))[1]
    algo.step(batch)
    (stats,) = seen
    words = np.unique(batch.indices).astype(np.int64)
    rows = _sampled_rows(name, before.lam, words, 7, before.step)
    on_sample, _ = MeanField(estep_beta="mean").statistics(batch, before, rows)
    on_mean, _ = MeanField(estep_beta="mean").statistics(batch, before, before.mean_rows(words))
    assert np.array_equal(stats.words, words)
    assert np.array_equal(stats.word_topic, on_sample.word_topic)
    assert not np.allclose(stats.word_topic, on_mean.word_topic, rtol=1e-3)


def test_every_local_step_takes_its_topics_explicitly():
    for name in registry.LOCAL_STEPS:
        cls = registry.local_step_class(name)
        params = inspect.signature(cls.statistics).parameters
        assert list(params) == ["self", "batch", "model", "topics", "seed"], name
        assert params["topics"].default is inspect.Parameter.empty and params["seed"].default is None, name
        params = inspect.signature(cls.estep_topics).parameters
        assert list(params) == ["self", "model", "words"] and params["words"].default is None, name


def _twins(kind, rng):
    """Two models with the same document prior and K but different topics."""
    if kind == "lda":
        a = LDAModel.initial([f"w{i}" for i in range(V)], K, 0.1, 0.01, rng)
        b = LDAModel(rng.gamma(0.3, 5.0, size=(V, K)) + 0.01, a.alpha.copy(), a.eta, a.vocab)
    elif kind == "hdp":
        a = HDPModel.initial([f"w{i}" for i in range(V)], K, 0.8, 1.5, 0.05, rng, corpus_docs=500)
        b = HDPModel.initial([f"w{i}" for i in range(V)], K, 0.8, 1.5, 0.05, rng, corpus_docs=500)
        b.a, b.b = a.a.copy(), a.b.copy()
    else:
        a = CTMModel.initial([f"w{i}" for i in range(V)], K, 0.01, rng)
        b = CTMModel.initial([f"w{i}" for i in range(V)], K, 0.01, rng)
    assert not np.allclose(a.expected_beta(), b.expected_beta())
    return a, b


@pytest.mark.parametrize("name", sorted(registry.LOCAL_STEPS))
def test_statistics_depend_on_the_given_topics_not_the_models(name):
    """Given the same topic rows, two models with different topics give the same statistics; the
    step's own topics (estep_topics) are what registry.local_topics returns."""
    kind = {"hdp": "hdp", "laplace": "ctm", "delta": "ctm", "bbvi": "ctm"}.get(name, "lda")
    rng = np.random.default_rng(5)
    a, b = _twins(kind, rng)
    local = registry.local_step_class(name)(**({"bbvi_iter": 5} if name == "bbvi" else {}))
    batch = _batch(D=12)
    words = np.unique(batch.indices).astype(np.int64)
    topics = local.estep_topics(a, words)
    assert np.array_equal(local.estep_topics(a)[words], topics)
    assert np.array_equal(registry.local_topics(local, a), local.estep_topics(a))
    first, _ = local.statistics(batch, a, topics, seed=11)
    second, _ = local.statistics(batch, b, topics, seed=11)
    pick = (lambda s: s.topics) if kind == "ctm" else (lambda s: s)
    assert np.array_equal(pick(first).word_topic, pick(second).word_topic)
    other, _ = local.statistics(batch, a, local.estep_topics(b, words), seed=11)
    assert not np.array_equal(pick(other).word_topic, pick(first).word_topic)
    with pytest.raises(ValueError):
        local.statistics(batch, a, topics[:-1], seed=11)

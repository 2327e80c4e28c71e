"""Numerical robustness: extreme priors, K from 1 to 2000, documents of 1 and 1e5 tokens."""
import numpy as np
import pytest

from synthetic import write_corpus
from topicscale.evaluate import evaluate_model
from topicscale.inference.global_steps.svi import SVI
from topicscale.inference.local_steps.meanfield import MeanField
from topicscale.models.lda import LDAModel
from topicscale.train import RunLimits, train


@pytest.fixture(scope="module")
def extreme_corpus(tmp_path_factory):
    """Documents of one token, ordinary ones, and one of 100,000 tokens, over 300 words."""
    rng = np.random.default_rng(0)
    V = 300
    docs = [(np.array([i % V], np.int32), np.array([1], np.int32)) for i in range(20)]
    for _ in range(60):
        ids = np.sort(rng.choice(V, 25, replace=False)).astype(np.int32)
        docs.append((ids, rng.integers(1, 4, 25).astype(np.int32)))
    big = rng.multinomial(100_000, rng.dirichlet(np.ones(V) * 0.1))
    docs.append((np.flatnonzero(big).astype(np.int32), big[big > 0].astype(np.int32)))
    root = tmp_path_factory.mktemp("extreme")
    return write_corpus(root / "c", docs, V), write_corpus(root / "h", docs[15:40] + docs[-1:], V)


@pytest.mark.parametrize("K, alpha, eta", [
    (1, 1e-6, 1e-6), (1, 1e3, 1e3), (5, 1e-6, 1e3), (5, 1e3, 1e-6), (40, 1e-6, 1e-6),
    (40, 1e3, 1e3), (2000, 1e-6, 1e-6), (2000, 1e3, 1e-6),
])
def test_no_nan_or_inf_anywhere(extreme_corpus, K, alpha, eta):
    corpus, heldout = extreme_corpus
    model = LDAModel.initial(corpus.vocab, K, alpha, eta, np.random.default_rng(1))
    summary, finished = train(SVI(model, MeanField(max_iter=50), corpus.n_docs), corpus,
                              RunLimits(batch_size=27, passes=2), seed=0, progress=False)
    assert finished and summary["docs"] == 2 * corpus.n_docs
    assert np.all(np.isfinite(model.lam)) and np.all(model.lam > 0)
    assert np.all(np.isfinite(model.expected_beta()))
    theta = MeanField().fit(*(lambda b: (b.indptr, b.indices, b.counts))(corpus.rows(np.arange(corpus.n_docs))),
                            model.exp_elog_beta(), model.alpha).gamma
    assert np.all(np.isfinite(theta)) and np.all(theta > 0)
    score = evaluate_model(model, heldout)["per_word_ll"]
    assert np.isfinite(score) and score < 0

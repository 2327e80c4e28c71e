"""BBVI as the correlated topic model's document step (`--model ctm --local bbvi`)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import planted_topics, write_corpus
from synthetic_ctm import ctm_documents, planted_covariance
from topicscale import registry
from topicscale.cli import cli
from topicscale.inference.local_steps.bbvi import BBVI
from topicscale.inference.local_steps.ctm import Laplace
from topicscale.models.ctm import CTMPrior


@pytest.fixture(scope="module")
def block():
    rng = np.random.default_rng(0)
    K, V = 5, 200
    beta = planted_topics(K, V, rng)
    sigma0 = planted_covariance(K)
    docs = list(ctm_documents(beta, 30, 80, np.zeros(K), sigma0, rng))
    indptr = np.cumsum([0] + [len(d[0]) for d in docs]).astype(np.int64)
    indices = np.concatenate([d[0] for d in docs]).astype(np.int32)
    counts = np.concatenate([d[1] for d in docs]).astype(np.float64)
    prior = CTMPrior(np.zeros(K), np.linalg.inv(sigma0), float(np.linalg.slogdet(sigma0)[1]))
    return indptr, indices, counts, np.ascontiguousarray(beta.T), prior


def test_bbvi_document_step_agrees_with_laplace(block):
    indptr, indices, counts, topics, prior = block
    lap = Laplace().fit(indptr, indices, counts, topics, prior)
    r = BBVI(seed=1).fit(indptr, indices, counts, topics, prior)
    D, K = lap.mu.shape
    assert r.mu.shape == (D, K) and r.var.shape == (D, K) and np.all(r.var > 0)
    np.testing.assert_allclose(r.theta.sum(axis=1), 1.0)
    assert np.max(np.abs(r.theta - lap.theta)) < 0.05
    # the posterior mean up to softmax's free direction (the prior pins it only weakly)
    centred = lambda m: m - m.mean(axis=1, keepdims=True)
    assert np.mean(np.abs(centred(r.mu) - centred(lap.mu))) < 0.15
    # an ELBO (z summed out): below the log evidence, near Laplace's approximate bound
    assert np.all(np.abs(r.bound - lap.bound) < 0.05 * np.abs(lap.bound))


def test_bbvi_statistics_follow_the_ctm_contract(block):
    indptr, indices, counts, topics, prior = block
    r, second = BBVI(seed=1).run(indptr, indices, counts, topics, prior, moments=True, proportions=False)
    pi = r.mean_proportions
    np.testing.assert_allclose(pi, np.exp(r.mu) / np.exp(r.mu).sum(1, keepdims=True))
    doc = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    # token weights make phi_nk = w_n pi_dk beta_wk a distribution over topics for each token
    phi_mass = r.token_weight * np.einsum("nk,nk->n", pi[doc], topics[indices])
    np.testing.assert_allclose(phi_mass, counts)
    np.testing.assert_allclose(second[0], np.diag(r.var.sum(0)) + r.mu.T @ r.mu)


def test_bbvi_document_step_is_deterministic_under_its_seed(block):
    indptr, indices, counts, topics, prior = block
    a = BBVI(seed=3, bbvi_iter=50).fit(indptr, indices, counts, topics, prior)
    b = BBVI(seed=3, bbvi_iter=50).fit(indptr, indices, counts, topics, prior)
    c = BBVI(seed=4, bbvi_iter=50).fit(indptr, indices, counts, topics, prior)
    assert np.array_equal(a.mu, b.mu) and not np.array_equal(a.mu, c.mu)


def test_registered_and_fits_a_ctm_from_the_command_line(tmp_path):
    assert registry.local_step_class("bbvi") is BBVI
    rng = np.random.default_rng(5)
    K, V = 4, 120
    beta = planted_topics(K, V, rng)
    docs = ctm_documents(beta, 300, 60, np.zeros(K), planted_covariance(K), rng)
    corpus = write_corpus(tmp_path / "c", docs, V)
    held = write_corpus(tmp_path / "h", ctm_documents(beta, 60, 60, np.zeros(K), planted_covariance(K), rng), V)
    runner = CliRunner()
    r = runner.invoke(cli, ["fit", str(corpus.path), "--model", "ctm", "--algorithm", "svi", "--local", "bbvi",
                            "-k", "4", "--batch-size", "100", "--passes", "2", "--heldout", str(held.path),
                            "--eval-every", "3", "-q", "--json", "-o", str(tmp_path / "m")],
                      catch_exceptions=False)
    assert r.exit_code == 0, r.output
    records = [json.loads(l) for l in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    evals = [x["per_word_ll"] for x in records if x["event"] == "eval"]
    assert len(evals) >= 2 and evals[-1] > evals[0] and np.isfinite(evals[-1])
    info = json.loads(runner.invoke(cli, ["info", str(tmp_path / "m"), "--json"]).output)
    assert info["local"] == "bbvi" and info["model"] == "ctm"

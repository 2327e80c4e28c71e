"""Online HDP (SVI paper sec. 3.3, figs. 8-9): the document kernel against its numpy twin, the
global step, determinism, save/load, recovery of planted topics and of their number, the CLI."""
import json
import subprocess
import sys

import numba
import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import digamma

import reference
from synthetic import lda_documents, planted_topics, random_csr, write_corpus
from topicscale.cli import cli
from topicscale.corpus.shards import Rows
from topicscale.evaluate import evaluate_model, evaluate_topics, split_block
from topicscale.inference.global_steps.hdp import HDPSVI
from topicscale.inference.local_steps.base import estep_statistics
from topicscale.inference.local_steps.hdp import HDPLocal
from topicscale.models import load_model, store
from topicscale.models.hdp import HDPModel, HDPPrior, carried, carrying, stick_expectations
from topicscale.stats import HDPStats
from topicscale.train import RunLimits, train

# A topic "matches" a planted one when their total variation is below MATCH. The planted topics
# have disjoint supports, so a blend of two of them at ratio r : 1 - r is at TV >= min(r, 1 - r)
# from both, and a random topic is at about 0.85; fitted topics that found a planted one sit at
# 0.1 to 0.15 (eta smoothing, finite data). Below 0.4: at least 60% of the topic is one planted
# topic, so no even-ish merge of two topics passes.
MATCH = 0.4


def random_corpus_level(rng, V, K):
    lam = rng.gamma(0.3, 1.0, size=(V, K)) + 0.01
    elog_beta = digamma(lam) - digamma(lam.sum(axis=0))
    a, b = rng.gamma(2.0, 5.0, size=K - 1) + 1, rng.gamma(2.0, 20.0, size=K - 1) + 1
    return lam, elog_beta, stick_expectations(a, b)[1]


@pytest.fixture(scope="module")
def hdp_corpus(tmp_path_factory):
    """8 planted topics over 200 words (25 each), 3,000 training and 300 held-out documents."""
    rng = np.random.default_rng(11)
    beta = planted_topics(8, 200, rng)
    root = tmp_path_factory.mktemp("hdp")
    train_corpus = write_corpus(root / "train", lda_documents(beta, 3000, 80, 0.2, rng), 200, shard_docs=900)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 300, 80, 0.2, rng), 200)
    return beta, train_corpus, heldout


def fit(corpus, K=50, T=15, passes=3, seed=1, threads=None, model=None, batch_size=100):
    if threads:
        numba.set_num_threads(threads)
    try:
        model = model or HDPModel.initial(corpus.vocab, K, 1.0, 1.0, 0.01, np.random.default_rng(seed),
                                          corpus_docs=corpus.n_docs)
        model.settings.setdefault("local", "hdp")       # the paper's step (not the default)
        summary, _ = train(HDPSVI(model, HDPLocal(doc_truncation=T), corpus.n_docs, tau=64.0, kappa=0.7),
                           corpus, RunLimits(batch_size=batch_size, passes=passes), seed, progress=False)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return model, summary


# ---------------------------------------------------------------- document kernel
@pytest.mark.parametrize("K, T", [(12, 5), (3, 8), (30, 1), (40, 15)])
def test_document_step_matches_numpy_reference(K, T):
    rng = np.random.default_rng(K + T)
    V = 50
    indptr, indices, counts = random_csr(rng, 30, V)
    _, elog_beta, elog_sigma = random_corpus_level(rng, V, K)
    result = HDPLocal(max_iter=60, tol=1e-7, doc_truncation=T).fit(
        indptr, indices, counts, elog_beta, HDPPrior(elog_sigma, 0.7), keep=True)
    assert np.allclose(result.theta.sum(axis=1), 1.0)
    for d in range(30):
        a, b = indptr[d], indptr[d + 1]
        zeta, phi, theta, occupied, sweeps = reference.hdp_document(
            indices[a:b], counts[a:b], elog_beta, elog_sigma, 0.7, T, 60, 1e-7)
        assert result.sweeps[d] == sweeps
        assert np.allclose(result.zeta[d], zeta, rtol=1e-8, atol=1e-10)
        assert np.allclose(result.phi[a:b], phi, rtol=1e-8, atol=1e-10)
        assert np.allclose(result.theta[d], theta, rtol=1e-8, atol=1e-12)
        assert np.allclose(result.tables[d], occupied @ zeta, rtol=1e-8, atol=1e-10)


def test_minibatch_statistics_match_reference():
    rng = np.random.default_rng(5)
    V, K, T = 60, 10, 6
    indptr, indices, counts = random_csr(rng, 40, V)
    model = HDPModel.initial([f"w{i}" for i in range(V)], K, 0.8, 1.5, 0.05, rng, corpus_docs=500)
    model.a, model.b = rng.gamma(2.0, 5.0, size=K - 1) + 1, rng.gamma(2.0, 20.0, size=K - 1) + 1
    stats, result = estep_statistics(HDPLocal(max_iter=40, tol=1e-7, doc_truncation=T),
                                     Rows(np.arange(40), indptr, indices, counts), model)
    ref_stats, ref_tables, ref_theta = reference.hdp_statistics(
        indptr, indices, counts, model.elog_beta(), model.local_prior().elog_sigma, 0.8, T, 40, 1e-7, V)
    assert np.array_equal(stats.words, np.unique(indices))
    assert np.allclose(stats.word_topic, ref_stats[stats.words], rtol=1e-8, atol=1e-10)
    assert np.allclose(stats.tables, ref_tables, rtol=1e-8)
    assert np.allclose(result.theta, ref_theta, rtol=1e-8, atol=1e-12)
    assert np.isclose(stats.word_topic.sum(), counts.sum())      # every token is assigned once
    assert np.all(stats.tables <= 40 * T) and stats.tables.sum() >= 40  # >= 1 occupied slot per document


def test_a_two_topic_document_gets_two_slots():
    """The symmetry of fig. 9 step 5 is broken: a document drawn from two of the topics ends up
    with slots pointing at each of them (a topic may hold several slots, as a dish may be served
    at several tables), and E[theta] recovers its proportions."""
    rng = np.random.default_rng(0)
    beta = planted_topics(6, 120, rng)
    words = np.concatenate([rng.choice(120, 300, p=beta[1]), rng.choice(120, 100, p=beta[4])])
    ids, cts = np.unique(words, return_counts=True)
    elog_beta = np.log(beta.T)
    prior = HDPPrior(np.full(6, -np.log(6.0)), 1.0)
    r = HDPLocal(doc_truncation=10).fit(np.array([0, ids.size]), ids.astype(np.int32), cts.astype(float),
                                        elog_beta, prior, keep=True)
    slot_tokens = cts @ r.phi
    used = np.flatnonzero(slot_tokens > 1.0)
    assert {int(np.argmax(r.zeta[0, i])) for i in used} == {1, 4}
    assert np.all(r.zeta[0, used].max(axis=1) > 0.99)
    assert np.allclose(r.theta[0][[1, 4]], [0.75, 0.25], atol=0.03)


def test_stick_expectations():
    rng = np.random.default_rng(1)
    a, b = rng.gamma(2.0, 2.0, 7) + 0.1, rng.gamma(2.0, 2.0, 7) + 0.1
    sigma, elog_sigma = stick_expectations(a, b)
    assert np.isclose(sigma.sum(), 1.0)
    v = rng.beta(a, b, size=(200_000, 7))
    draws = np.concatenate([v, np.ones((200_000, 1))], axis=1) * np.concatenate(
        [np.ones((200_000, 1)), np.cumprod(1 - v, axis=1)], axis=1)
    assert np.allclose(sigma, draws.mean(axis=0), atol=3e-3)
    assert np.allclose(elog_sigma, np.log(draws).mean(axis=0), atol=2e-2)
    # the initial sticks: every topic equally likely, in expectation and in E[log sigma]
    model = HDPModel.initial(["a", "b"], 6, 1.0, 1.0, 0.01, rng)
    sigma, elog_sigma = stick_expectations(model.a, model.b)
    assert np.allclose(sigma, 1 / 6) and np.allclose(elog_sigma, digamma(1) - digamma(6))


def test_carrying_and_display_order():
    assert carrying([0.5, 0.3, 0.15, 0.04, 0.01], 0.95) == 3
    assert carrying([0.5, 0.3, 0.15, 0.04, 0.01], 0.99) == 4
    assert carrying([0.01, 0.5, 0.49], 0.99) == 2
    model = HDPModel.initial([f"w{i}" for i in range(5)], 5, 1.0, 1.0, 0.01, np.random.default_rng(0))
    model.a, model.b = np.array([1.0, 300.0, 1.0, 1.0]), np.array([600.0, 100.0, 100.0, 1.0])
    w = model.topic_weights()
    order = model.display_order(True)
    assert sorted(order) == list(range(5)) and np.all(np.diff(w[order]) <= 0)
    lam = np.full((5, 5), 0.01)
    lam[:, order] += np.array([75.0, 12.0, 12.0, 0.6, 0.4])       # tokens follow the weights
    model.lam, model.residual = lam, np.zeros(5)
    shown = model.display_order(False)
    assert np.array_equal(shown, order[:len(shown)])
    assert w[shown].sum() >= 0.99 > w[shown[:-1]].sum()
    # the lightest topic holds a third of the tokens: listed too, in its place by weight
    lam[:, order[-1]] += 50.0
    model.lam = lam
    assert np.array_equal(model.display_order(False), np.append(shown, order[-1]))
    # unless that is what is left of its initial topic
    model.residual = np.zeros(5)
    model.residual[order[-1]] = 250.0
    assert np.array_equal(model.display_order(False), shown)
    model.residual = np.zeros(5)
    assert np.array_equal(model.display_order(False), np.append(shown, order[-1]))
    assert np.array_equal(carried(w, model.token_weights()), np.append(shown, order[-1]))
    assert np.array_equal(carried(np.array([0.6, 0.395, 0.004, 0.001]), np.array([0.1, 0.1, 0.0, 0.8])),
                          [0, 1, 3])
    assert np.array_equal(carried(np.array([0.7, 0.299, 0.001]), np.array([0.5, 0.5, 0.0])), [0, 1])


# ---------------------------------------------------------------- global step
def test_global_step_follows_figure_9():
    """lambda, a, b <- (1 - rho) old + rho (eta + D/|S| word stats, 1 + D/|S| m_k, omega + D/|S| sum_{l>k} m_l)."""
    model = HDPModel(lam=np.full((3, 3), 2.0), a=np.array([1.0, 1.0]), b=np.array([2.0, 1.0]), alpha=1.0,
                     omega=0.5, eta=0.1, vocab=["a", "b", "c"], step=1)
    svi = HDPSVI(model, None, corpus_docs=100, tau=1.0, kappa=1.0)     # rho = (1 + 1)^-1 = 0.5
    tables = np.array([3.0, 1.0, 2.0])
    svi.update(HDPStats(np.array([2]), np.array([[4.0, 0.0, 1.0]]), n_docs=10, n_tokens=5.0, tables=tables))
    assert np.allclose(model.lam[0], 0.5 * 2.0 + 0.5 * 0.1)
    assert np.allclose(model.lam[2], 0.5 * 2.0 + 0.5 * (0.1 + 10 * np.array([4.0, 0.0, 1.0])))
    assert np.allclose(model.a, 0.5 * 1.0 + 0.5 * (1 + 10 * tables[:2]))
    assert np.allclose(model.b, 0.5 * np.array([2.0, 1.0]) + 0.5 * (0.5 + 10 * np.array([3.0, 2.0])))
    assert model.step == 2 and model.docs_seen == 10


def test_token_weights_leave_out_what_remains_of_the_initial_topics():
    """lambda - eta = residual + the counts' moving average: starting from the initial topics, the
    column sums less eta V less the residual equal the counts averaged by the same rho."""
    rng = np.random.default_rng(2)
    model = HDPModel.initial([f"w{i}" for i in range(6)], 4, 1.0, 1.0, 0.1, rng, corpus_docs=50)
    assert np.allclose(model.residual, model.lam.sum(axis=0) - 0.1 * 6) and np.all(model.residual > 0)
    svi = HDPSVI(model, None, corpus_docs=50, tau=4.0, kappa=0.6)
    counts = np.zeros(4)
    for _ in range(30):
        words = np.sort(rng.choice(6, size=3, replace=False))
        stats = rng.gamma(1.0, 1.0, size=(3, 4)) * np.array([1.0, 1.0, 0.1, 0.0])   # topic 3 never used
        svi.update(HDPStats(words, stats, n_docs=5, n_tokens=stats.sum(), tables=np.ones(4)))
        counts = (1 - svi.last_rho) * counts + svi.last_rho * 10 * stats.sum(axis=0)
    assert np.allclose(model.lam.sum(axis=0) - 0.1 * 6 - model.residual, counts)
    assert np.allclose(model.token_weights(), counts / counts.sum()) and model.token_weights()[3] < 1e-12
    before = model.lam.sum(axis=0) - 0.1 * 6
    assert before[3] > 0.01 * before.sum()     # without the residual, among those carrying 99%


def test_stats_merge_and_scale():
    a = HDPStats(np.array([1]), np.array([[1.0, 2.0]]), 2, 3.0, np.array([1.0, 0.5]))
    b = HDPStats(np.array([0, 1]), np.array([[1.0, 1.0], [2.0, 2.0]]), 1, 4.0, np.array([0.0, 2.0]))
    m = a.merge(b)
    assert m.words.tolist() == [0, 1] and m.word_topic.tolist() == [[1, 1], [3, 4]]
    assert m.tables.tolist() == [1.0, 2.5] and (m.n_docs, m.n_tokens) == (3, 7.0)
    assert a.scaled(2.0).tables.tolist() == [2.0, 1.0]


# ---------------------------------------------------------------- training
def test_same_seed_same_model_bit_for_bit_with_one_and_two_threads(hdp_corpus):
    _, corpus, _ = hdp_corpus
    one, s1 = fit(corpus, K=20, passes=0.5, threads=1)
    two, s2 = fit(corpus, K=20, passes=0.5, threads=2)
    assert s1["threads_used"] == 1 and s2["threads_used"] == 2
    assert np.array_equal(one.lam, two.lam) and np.array_equal(one.a, two.a) and np.array_equal(one.b, two.b)
    other, _ = fit(corpus, K=20, passes=0.5, seed=2)
    assert not np.array_equal(one.lam, other.lam)


def test_save_load_round_trip_and_continued_training(hdp_corpus, tmp_path):
    _, corpus, heldout = hdp_corpus
    model, _ = fit(corpus, K=20, passes=0.3)
    model.settings.update(algorithm="svi", local="hdp", doc_truncation=15)
    model.save(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert isinstance(loaded, HDPModel)
    for name in ("lam", "a", "b", "residual"):
        assert np.array_equal(getattr(loaded, name), getattr(model, name))
    assert (loaded.alpha, loaded.omega, loaded.eta, loaded.step, loaded.docs_seen, loaded.settings) == \
        (model.alpha, model.omega, model.eta, model.step, model.docs_seen, model.settings)
    assert evaluate_model(loaded, heldout) == evaluate_model(model, heldout)
    model.settle()          # the file holds lambda settled (models/topics.py), so settle the model too
    a, _ = fit(corpus, passes=0.2, model=model, seed=3)
    b, _ = fit(corpus, passes=0.2, model=loaded, seed=3)
    assert np.array_equal(a.lam, b.lam) and np.array_equal(a.a, b.a)


def test_recovers_the_planted_topics_and_their_number(hdp_corpus):
    """K = 50 topics available, 8 planted: the weight goes to the planted ones."""
    beta, corpus, heldout = hdp_corpus
    model, _ = fit(corpus, K=50, passes=3)
    weights = model.topic_weights()
    tv = 0.5 * np.abs(model.expected_beta().T[:, None, :] - beta[None, :, :]).sum(-1)   # K x 8
    matched = tv.min(axis=1) < MATCH
    assert weights[matched].sum() >= 0.9
    assert len(set(tv[matched].argmin(axis=1))) == 8              # every planted topic is found
    describe = model.describe()
    assert 6 <= describe["effective_topics_95"] <= describe["effective_topics_99"] <= 12
    tokens = np.sort(model.token_weights())[::-1]
    n = describe["effective_topics_99_tokens"]
    assert tokens[:n].sum() >= 0.99 > tokens[:n - 1].sum()
    # held-out prediction close to the true topics' (with the true alpha)
    truth = evaluate_topics(beta, heldout, alpha=0.2)["per_word_ll"]
    assert evaluate_model(model, heldout)["per_word_ll"] > truth - 0.15


def test_a_model_file_without_the_residual_lists_topics_by_their_weight(tmp_path):
    """Files written before the residual was kept: unknown (None), kept unknown by training,
    topics listed by the weight alone; a polish's counts make it known (zero)."""
    rng = np.random.default_rng(3)
    model = HDPModel.initial([f"w{i}" for i in range(6)], 5, 1.0, 1.0, 0.01, rng)
    model.lam = np.array(model.lam) + np.array([0.0, 0.0, 0.0, 0.0, 500.0])    # heavy by tokens only
    model.a, model.b = np.array([9.0, 9.0, 9.0, 1.0]), np.array([1.0, 1.0, 1.0, 900.0])
    model.save(tmp_path / "m")
    meta, arrays, vocab = store.load(tmp_path / "m")
    del arrays["residual"]
    old = HDPModel.from_stored(meta, arrays, vocab)
    assert old.residual is None and 4 not in old.display_order(False)
    assert 4 in model.display_order(False)
    old.save(tmp_path / "old")
    assert load_model(tmp_path / "old").residual is None
    HDPSVI(old, None, corpus_docs=10).update(HDPStats(np.array([0]), np.ones((1, 5)), 1, 5.0, np.ones(5)))
    assert old.residual is None


def test_evaluation_uses_the_two_level_stick_predictive(hdp_corpus, tmp_path):
    """eval: theta from the document step (sum over slots of E[sigma_i(pi)] zeta_i) on the observed
    half, times E[beta], scored on the held-out half; here with the reference document step."""
    _, corpus, heldout = hdp_corpus
    model, _ = fit(corpus, K=12, passes=0.2)
    model.settings.update(algorithm="svi", local="hdp", doc_truncation=15)
    rows = heldout.rows(np.arange(40))
    few = write_corpus(tmp_path / "few", ((rows.indices[a:b], rows.counts[a:b].astype(np.int32))
                                          for a, b in zip(rows.indptr[:-1], rows.indptr[1:])), 200)
    block = next(few.blocks())
    (optr, oind, ocnt), (hptr, hind, hcnt) = split_block(block, 0)
    beta, elog_beta, elog_sigma = model.expected_beta(), model.elog_beta(), model.local_prior().elog_sigma
    total, tokens = 0.0, 0.0
    for d in range(block.n_docs):
        theta = reference.hdp_document(oind[optr[d]:optr[d + 1]], ocnt[optr[d]:optr[d + 1]], elog_beta,
                                       elog_sigma, model.alpha, 15, 100, 1e-3)[2]
        held = slice(hptr[d], hptr[d + 1])
        total += hcnt[held] @ np.log(beta[hind[held]] @ theta)
        tokens += hcnt[held].sum()
    result = evaluate_model(model, few)
    assert result["heldout_tokens"] == tokens > 0
    assert np.isclose(result["per_word_ll"], total / tokens, rtol=1e-6)


def test_topics_and_info_do_not_import_numba(cli_model):
    """`topicscale topics` and `info` load the model, its weights, order and E[beta] without numba."""
    out, _ = cli_model
    code = ("import sys; from topicscale.models import load_model; m = load_model(sys.argv[1]); "
            "m.display_order(False); m.display_order(True); m.expected_beta(); m.describe(); "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code, str(out)], check=True)


# ---------------------------------------------------------------- command line
def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def cli_model(hdp_corpus, tmp_path_factory):
    _, corpus, heldout = hdp_corpus
    out = tmp_path_factory.mktemp("hdp-cli") / "model"
    summary = json.loads(run("fit", corpus.path, "--model", "hdp", "-k", "30", "--doc-truncation", "10",
                             "--omega", "2", "--passes", "2", "--batch-size", "200", "--seed", "3",
                             "--heldout", heldout.path, "--eval-every", "10", "--json", "-o", out))
    return out, summary


def test_cli_fit_info_and_eval(hdp_corpus, cli_model):
    _, _, heldout = hdp_corpus
    out, summary = cli_model
    info = json.loads(run("info", out, "--json"))
    assert info["model"] == "hdp" and info["topics"] == 30 and info["doc_truncation"] == 10
    assert info["omega"] == 2.0 and info["alpha"] == 1.0 and info["local"] == "hdp"
    shown = json.loads(run("topics", out, "--json", "-n", "1"))       # the topics carrying 99%
    assert 1 <= info["effective_topics_95"] <= info["effective_topics_99"] == len(shown) < 30
    assert "effective_topics_99" in run("info", out)
    ev = json.loads(run("eval", out, heldout.path, "--json"))
    assert ev["per_word_ll"] == pytest.approx(summary["heldout"]["per_word_ll"], rel=1e-12)
    assert -6 < ev["per_word_ll"] < -3


def test_cli_topics_default_shows_the_topics_that_carry_the_mass(cli_model):
    out, _ = cli_model
    shown = json.loads(run("topics", out, "--json", "-n", "4"))
    every = json.loads(run("topics", out, "--json", "-n", "4", "--all"))
    assert len(every) == 30 and sorted(r["topic"] for r in every) == list(range(30))
    weights = [r["weight"] for r in every]
    assert weights == sorted(weights, reverse=True) and sum(weights) == pytest.approx(1.0)
    listed = carried(np.array(weights), load_model(out).token_weights()[[r["topic"] for r in every]])
    assert shown == [every[i] for i in listed] and len(shown) < 30
    listed_ids = {r["topic"] for r in shown}                  # repeats counted among these alone
    assert all(set(r["repeats"]) <= listed_ids and (r["topic"] in listed_ids or not r["repeats"]) for r in every)
    assert sum(r["weight"] for r in shown) >= 0.99
    assert len(run("topics", out).splitlines()) == len(shown)
    model = load_model(out)                     # weight: the stick weight; tokens: the tokens' share
    ids = [r["topic"] for r in every]
    assert np.allclose(weights, model.topic_weights()[ids]) and np.allclose([r["tokens"] for r in every],
                                                                           model.token_weights()[ids])
    assert not np.allclose(model.topic_weights(), model.token_weights(), atol=1e-3)


def test_cli_infer_and_export(hdp_corpus, cli_model, tmp_path):
    _, _, heldout = hdp_corpus
    out, _ = cli_model
    run("infer", out, heldout.path, "-o", tmp_path / "theta.npy")
    theta = np.load(tmp_path / "theta.npy")
    assert theta.shape == (heldout.n_docs, 30) and np.allclose(theta.sum(axis=1), 1.0)
    run("export", out, "-o", tmp_path / "topics.npy")
    beta = np.load(tmp_path / "topics.npy")
    assert beta.shape == (30, 200) and np.allclose(beta.sum(axis=1), 1.0)
    rows = (tmp_path / "topics.weights.tsv").read_text().splitlines()[1:]
    weights = [float(r.split("\t")[1]) for r in rows]
    assert len(rows) == 30 and weights == sorted(weights, reverse=True)
    model = load_model(out)
    first = int(rows[0].split("\t")[0])
    assert np.allclose(beta[0], model.expected_beta()[:, first])


def test_cli_hdp_paper_preset(hdp_corpus, tmp_path):
    _, corpus, _ = hdp_corpus
    run("fit", corpus.path, "--config", "hdp-paper", "--max-docs", "500", "-o", tmp_path / "m")
    info = json.loads(run("info", tmp_path / "m", "--json"))
    assert (info["model"], info["topics"], info["doc_truncation"], info["omega"], info["alpha"]) == \
        ("hdp", 300, 20, 1.0, 1.0)
    assert (info["eta"], info["kappa"], info["batch_size"], info["tau"]) == (0.01, 0.9, 500, 2.0)
    assert info["polish"] == 0                          # the paper's algorithm, without sweeps
    rho = [json.loads(line).get("rho") for line in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    assert rho[0] == pytest.approx(2 ** -0.9)          # the paper's first step: (1 + 1)^-0.9, t from 1


@pytest.mark.parametrize("K, T, alpha, omega, eta", [
    (1, 1, 1.0, 1.0, 0.01), (1, 15, 1e-3, 1e3, 1e-6), (5, 3, 1e3, 1e-3, 1e3), (60, 15, 1e-3, 1e-3, 1e-6),
    (200, 20, 1.0, 1.0, 0.01),
])
def test_no_nan_or_inf_anywhere(tmp_path, K, T, alpha, omega, eta):
    """Documents of one token, ordinary ones and one of 100,000 tokens; extreme priors and K."""
    rng = np.random.default_rng(0)
    V = 300
    docs = [(np.array([i % V], np.int32), np.array([1], np.int32)) for i in range(20)]
    for _ in range(60):
        ids = np.sort(rng.choice(V, 25, replace=False)).astype(np.int32)
        docs.append((ids, rng.integers(1, 4, 25).astype(np.int32)))
    big = rng.multinomial(100_000, rng.dirichlet(np.ones(V) * 0.1))
    docs.append((np.flatnonzero(big).astype(np.int32), big[big > 0].astype(np.int32)))
    corpus = write_corpus(tmp_path / "c", docs, V)
    heldout = write_corpus(tmp_path / "h", docs[15:40] + docs[-1:], V)
    model = HDPModel.initial(corpus.vocab, K, alpha, omega, eta, np.random.default_rng(1), corpus_docs=81)
    local = HDPLocal(max_iter=50, doc_truncation=T)
    summary, finished = train(HDPSVI(model, local, corpus.n_docs, tau=1.0, kappa=0.7), corpus,
                              RunLimits(batch_size=27, passes=2), seed=0, progress=False)
    assert finished and model.is_finite() and np.all(model.lam > 0) and np.all(model.a > 0)
    weights = model.topic_weights()
    assert np.all(np.isfinite(weights)) and np.isclose(weights.sum(), 1.0)
    rows = corpus.rows(np.arange(corpus.n_docs))
    theta = local.fit(rows.indptr, rows.indices, rows.counts, model.estep_topics(), model.local_prior()).theta
    assert np.all(np.isfinite(theta)) and np.allclose(theta.sum(axis=1), 1.0)
    score = evaluate_model(model, heldout, local=local)["per_word_ll"]
    assert np.isfinite(score) and score < 0

"""Learned priors (--alpha auto, --eta auto): the Newton steps, recovery of planted priors, and
every LDA global step learning them through `fit`."""
import json

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from clirun import run
from synthetic import planted_topics, write_corpus
from topicscale.inference import priors
from topicscale.models import load_model



def test_newton_steps_recover_a_dirichlet_from_its_draws():
    rng = np.random.default_rng(0)
    alpha = np.array([2.0, 0.5, 0.1, 0.05, 1.0])
    p = rng.dirichlet(alpha, size=20_000)
    mean_log = np.log(np.maximum(p, 1e-300)).mean(axis=0)
    estimate = np.full(5, 0.2)
    for _ in range(50):
        estimate = priors.damped(estimate, priors.dirichlet_newton_step(estimate, mean_log), 1.0)
    assert estimate == pytest.approx(alpha, rel=0.05)
    # at the maximum the step vanishes
    assert np.abs(priors.dirichlet_newton_step(estimate, mean_log)).max() < 1e-8


def test_symmetric_newton_step_recovers_eta():
    """Topics drawn from Dir(eta) and lambda a large multiple of them, so E[log beta] is close to
    log beta: eta comes back from far on either side."""
    rng = np.random.default_rng(1)
    V, K, eta = 400, 30, 0.3
    beta = rng.dirichlet(np.full(V, eta), size=K)
    total = K * V * np.mean(np.log(np.maximum(beta, 1e-300)))
    for start in (0.01, 3.0):
        estimate = np.array([start])
        for _ in range(60):
            step = priors.symmetric_newton_step(estimate[0], V, K, total)
            estimate = priors.damped(estimate, np.array([step]), 1.0)
        assert estimate[0] == pytest.approx(eta, rel=0.05)


def test_damped_halves_a_step_that_would_leave_the_positive_values():
    assert priors.damped(np.array([1.0, 1.0]), np.array([-4.0, 0.0]), 1.0).tolist() == [0.5, 1.0]
    assert priors.damped(np.array([1.0]), np.array([-1.0]), 1.0).tolist() == [0.5]


def asymmetric_corpus(path, alpha, rng, n_docs=2000, V=300, length=80):
    beta = planted_topics(len(alpha), V, rng)
    docs = []
    for _ in range(n_docs):
        words = rng.choice(V, size=length, p=rng.dirichlet(alpha) @ beta)
        ids, counts = np.unique(words, return_counts=True)
        docs.append((ids.astype(np.int32), counts.astype(np.int32)))
    return beta, write_corpus(path, docs, V)


def fit_planted_alpha(tmp_path, algorithm, passes=20):
    """(planted alpha, learned alpha matched to the planted topics, topics' TV distances)."""
    rng = np.random.default_rng(7)
    alpha = np.array([1.0, 0.5, 0.25, 0.12])
    beta, corpus = asymmetric_corpus(tmp_path / "c", alpha, rng, n_docs=3000, V=200)
    run("fit", corpus.path, "-o", tmp_path / "m", "-k", 4, "--algorithm", algorithm, "--alpha", "auto",
        "--passes", passes, "--batch-size", 100, "--seed", 0, "-q")
    m = load_model(tmp_path / "m")
    assert m.settings["alpha_auto"] is True and "eta_auto" not in m.settings
    tv = 0.5 * np.abs(m.expected_beta().T[:, None, :] - beta[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    learned, distance = np.empty(4), np.empty(4)          # in the planted topics' order
    learned[cols], distance[cols] = m.alpha[rows], tv[rows, cols]
    return alpha, learned, distance, m


def test_batch_vb_with_alpha_auto_recovers_a_planted_asymmetric_alpha(tmp_path):
    """Documents whose four topics have priors 1 to 0.12: batch VB recovers the topics and, with
    its full Newton step each epoch, the prior within 15%."""
    alpha, learned, tv, m = fit_planted_alpha(tmp_path, "batch")
    assert tv.max() < 0.1
    assert learned == pytest.approx(alpha, rel=0.15)
    info = json.loads(run("info", tmp_path / "m", "--json").stdout)
    assert info["alpha"] == pytest.approx(m.alpha.tolist()) and info["alpha_auto"] is True


@pytest.mark.parametrize("algorithm", ["svi", "scvb0"])
def test_stochastic_alpha_auto_ranks_the_planted_topics(tmp_path, algorithm):
    """The stochastic steps recover the rarest topic more slowly (its alpha is then too high), but
    rank the frequent ones as planted."""
    alpha, learned, tv, _ = fit_planted_alpha(tmp_path, algorithm)
    assert tv[:3].max() < 0.2
    assert np.argmax(learned) == 0 and learned[0] > learned[1] > learned[2]


@pytest.mark.parametrize("algorithm,local", [("svi", "cvb0"), ("scvb0", "cvb0"), ("svi", "gibbs")])
def test_alpha_auto_keeps_short_documents_sparse_under_cvb0_and_gibbs(tmp_path, algorithm, local):
    """Short documents of few topics among many (planted alpha 0.05 each, sum 1): alpha stays near
    the planted one and most topics are recovered. Minka's step on CVB0's own alpha + N^Theta,
    which spreads a document over many topics, raised the sum to 14 (svi) and 9 (scvb0), the
    median topic then 0.27 and 0.53 from its planted one in total variation."""
    rng = np.random.default_rng(11)
    K = 20
    beta, corpus = asymmetric_corpus(tmp_path / "c", np.full(K, 0.05), rng, n_docs=4000, V=400, length=15)
    run("fit", corpus.path, "-o", tmp_path / "m", "-k", K, "--algorithm", algorithm, "--local", local,
        "--alpha", "auto", "--passes", 10, "--batch-size", 200, "--seed", 0, "-q")
    m = load_model(tmp_path / "m")
    assert 0.5 < m.alpha.sum() < 2.0
    tv = 0.5 * np.abs(m.expected_beta().T[:, None, :] - beta[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    assert np.median(tv[rows, cols]) < 0.4


@pytest.mark.parametrize("algorithm,local", [("svi", "meanfield"), ("svi", "cvb0"), ("svi", "gibbs"),
                                             ("scvb0", "cvb0"), ("ssmf-a", "gibbs"), ("ssmf", "gibbs"),
                                             ("batch", "meanfield")])
def test_every_lda_global_step_learns_both_priors(planted, tmp_path, algorithm, local):
    _, corpus, _ = planted
    passes = 2 if algorithm == "batch" else 0.5
    common = ["fit", corpus.path, "-k", 10, "--algorithm", algorithm, "--local", local,
              "--passes", passes, "--batch-size", 100, "--seed", 3, "-q"]
    run(*common, "-o", tmp_path / "fixed")
    run(*common, "--alpha", "auto", "--eta", "auto", "-o", tmp_path / "auto")
    fixed, auto = load_model(tmp_path / "fixed"), load_model(tmp_path / "auto")
    assert auto.settings["alpha_auto"] and auto.settings["eta_auto"]
    assert np.ptp(auto.alpha) > 0 and np.all(auto.alpha > 0)
    assert auto.eta != fixed.eta and auto.eta > 0
    # the same seed learns the same priors, bit for bit
    run(*common, "--alpha", "auto", "--eta", "auto", "-o", tmp_path / "again")
    again = load_model(tmp_path / "again")
    assert np.array_equal(again.alpha, auto.alpha) and again.eta == auto.eta
    assert np.array_equal(again.lam, auto.lam)


def test_a_run_shorter_than_the_eta_interval_learns_eta(planted, tmp_path):
    """eta moves from the first minibatch on, so a run of fewer than ETA_EVERY minibatches
    learns it."""
    _, corpus, _ = planted
    steps = priors.ETA_EVERY - 1
    run("fit", corpus.path, "-k", 10, "--eta", "auto", "--passes", steps * 100 / corpus.n_docs,
        "--batch-size", 100, "--polish", "0", "-q", "-o", tmp_path / "m")
    m = load_model(tmp_path / "m")
    assert m.step == steps and m.eta != 0.01


def test_learned_alpha_is_the_prior_of_infer_and_of_the_own_fold_in(planted, tmp_path):
    """The own fold-in of a model trained with mean-field on E[beta] is the common one but for
    alpha: equal with a fixed alpha = 1/K, different with a learned one."""
    _, corpus, heldout = planted
    scores = {}
    for name, extra in (("fixed", []), ("m", ["--alpha", "auto"])):
        run("fit", corpus.path, "-k", 10, "--local", "meanfield", "--passes", 1, "--batch-size", 100,
            *extra, "-o", tmp_path / name, "-q")
        scores[name] = [json.loads(run("eval", tmp_path / name, heldout.path, *f, "--json").stdout)["per_word_ll"]
                        for f in ([], ["--fold-in", "own"])]
    assert scores["fixed"][0] == scores["fixed"][1]
    assert scores["m"][0] != scores["m"][1]
    m = load_model(tmp_path / "m")
    # --init continues learning: the flags stay with the model
    run("fit", corpus.path, "--init", tmp_path / "m", "--passes", 0.2, "--batch-size", 100,
        "-o", tmp_path / "m2", "-q")
    m2 = load_model(tmp_path / "m2")
    assert m2.settings["alpha_auto"] and not np.array_equal(m2.alpha, m.alpha)


@pytest.mark.parametrize("args", [["--model", "hdp", "--alpha", "auto"], ["--model", "hdp", "--eta", "auto"],
                                  ["--model", "ctm", "--eta", "auto"]])
def test_learned_priors_are_refused_outside_lda(planted, tmp_path, args):
    _, corpus, _ = planted
    result = run("fit", corpus.path, "-o", tmp_path / "m", *args, ok=False)
    assert result.exit_code == 2 and "auto goes with --model lda" in result.output
    assert not (tmp_path / "m").exists()


def test_alpha_must_be_a_positive_number_or_auto(planted, tmp_path):
    _, corpus, _ = planted
    for bad in ("0", "-1", "learn"):
        result = run("fit", corpus.path, "-o", tmp_path / "m", "--alpha", bad, ok=False)
        assert result.exit_code == 2 and "--alpha" in result.output

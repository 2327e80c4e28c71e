"""`eval --fold-in gibbs`: document completion with the proportions' posterior mean that collapsed
Gibbs sampling gives, checked against the exact posterior predictive (every assignment of a
short observed half enumerated), and mean-field's error beside it."""
import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import gammaln

from clirun import run
from synthetic import lda_documents, write_corpus
from topicscale.evaluate import evaluate_topics, split_block


def exact_completion(beta, corpus, alpha, seed=0):
    """Per-word log likelihood of the held-out halves under p(w | observed half) = sum over the
    observed half's assignments z of p(z | words) sum_k E[theta_k | z] beta_kw, with
    p(z | words) proportional to prod_i beta[z_i, w_i] prod_k Gamma(alpha + n_k), E[theta_k | z] =
    (alpha + n_k) / (K alpha + n)."""
    K = beta.shape[0]
    total = tokens = 0.0
    for block in corpus.blocks():
        (optr, oind, ocnt), (hptr, hind, hcnt) = split_block(block, seed)
        for d in range(block.n_docs):
            if hptr[d + 1] == hptr[d]:
                continue
            words = np.repeat(oind[optr[d]:optr[d + 1]], ocnt[optr[d]:optr[d + 1]].astype(int))
            log_w, theta = [], []
            for z in itertools.product(range(K), repeat=len(words)):
                n = np.bincount(z, minlength=K)
                log_w.append(np.log(beta[list(z), words]).sum() + gammaln(alpha + n).sum())
                theta.append((alpha + n) / (K * alpha + len(words)))
            post = np.exp(np.array(log_w) - max(log_w))
            mean_theta = (post / post.sum()) @ np.array(theta)
            held, counts = hind[hptr[d]:hptr[d + 1]], hcnt[hptr[d]:hptr[d + 1]]
            total += float(counts @ np.log(mean_theta @ beta[:, held]))
            tokens += counts.sum()
    return total / tokens


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Three sharp topics over 12 words and 60 documents of 10 tokens, each a mixture."""
    rng = np.random.default_rng(11)
    beta = rng.dirichlet(np.full(12, 0.15), size=3)
    corpus = write_corpus(tmp_path_factory.mktemp("small") / "c", lda_documents(beta, 60, 10, 0.5, rng), 12)
    return beta, corpus


def test_the_gibbs_fold_in_is_the_exact_posterior_predictive_and_mean_field_is_not(small):
    beta, corpus = small
    exact = exact_completion(beta, corpus, 1 / 3)
    gibbs = evaluate_topics(beta, corpus, fold_in="gibbs")["per_word_ll"]
    mean_field = evaluate_topics(beta, corpus)["per_word_ll"]
    assert abs(gibbs - exact) < 0.01
    assert abs(mean_field - exact) > 3 * abs(gibbs - exact)


def test_eval_fold_in_gibbs_is_repeatable_by_its_seed_and_named(small, tmp_path):
    beta, corpus = small
    folder = tmp_path / "m"
    run("fit", corpus.path, "-k", "3", "--passes", "3", "--seed", "2", "-q", "-o", folder)
    scores = [json.loads(run("eval", folder, corpus.path, "--fold-in", "gibbs", "--json", *seed).output)
              for seed in ([], ["--seed", "0"], ["--seed", "5"])]
    assert scores[0] == scores[1] and scores[0]["protocol"] == "gibbs"
    assert scores[2]["per_word_ll"] != scores[0]["per_word_ll"] and math.isfinite(scores[2]["per_word_ll"])
    text = run("eval", folder, corpus.path, "--fold-in", "gibbs").output
    assert text.startswith("protocol: gibbs (collapsed Gibbs fold-in on E[beta], alpha = 1/K")


def test_the_samplers_seed_not_only_the_split_changes_the_gibbs_score(small):
    from topicscale.evaluate import GIBBS_BURN_IN, GIBBS_SWEEPS, document_completion
    from topicscale.inference.local_steps.gibbs import Gibbs
    beta, corpus = small
    topics, alpha = np.ascontiguousarray(beta.T), np.full(3, 1 / 3)
    score = lambda sampler_seed: document_completion(corpus, topics, topics, alpha, seed=0, local=Gibbs(
        GIBBS_SWEEPS, GIBBS_BURN_IN, seed=sampler_seed))["per_word_ll"]
    assert score(0) == evaluate_topics(beta, corpus, fold_in="gibbs")["per_word_ll"] == score(0)
    assert score(1) != score(0)
    with pytest.raises(ValueError, match="not 'own'"):
        evaluate_topics(beta, corpus, fold_in="own")

"""Held-out evaluation by document completion (SVI paper, section 4).

Each held-out document's distinct words are split at random into two disjoint halves. The
document's variational parameters are fitted on the observed half with the model's own local
step, the topics held fixed; the other half is scored under the predictive distribution
p(w_new | w_obs) ~ sum_k E[theta_k] E[beta_kw]. The score is the total log probability of the
held-out tokens divided by their number (per-word predictive log likelihood).

The split is a hash of (seed, row, word id), so it does not depend on block sizes or threads;
documents with fewer than two distinct words cannot be split and are not scored.
"""
import math

import numpy as np

from . import registry
from .errors import InputError
from .inference.local import MeanField
from .kernels.meanfield import completion_log_likelihood

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _hash(x):
    """splitmix64 finaliser, vectorised over uint64."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        return x ^ (x >> np.uint64(31))


def split_block(block, seed):
    """Split a CSR block into (observed, held-out) CSR triples over the same documents."""
    lengths = np.diff(block.indptr)
    doc = np.repeat(np.arange(block.n_docs), lengths)
    with np.errstate(over="ignore"):
        key = _hash(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
                    ^ _hash(block.rows[doc].astype(np.uint64) + np.uint64(1))
                    ^ (block.indices.astype(np.uint64) << np.uint64(20)))
    order = np.lexsort((key, doc))          # by document, then by key
    rank = np.empty_like(doc)
    rank[order] = np.arange(doc.shape[0]) - block.indptr[doc[order]]
    observed = (rank < lengths[doc] // 2)
    scored = lengths[doc] >= 2

    def part(mask):
        ptr = np.zeros(block.n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc[mask], minlength=block.n_docs), out=ptr[1:])
        return ptr, block.indices[mask], block.counts[mask]

    return part(observed & scored), part(~observed & scored)


def check_vocabulary(vocab, corpus):
    if corpus.n_words != len(vocab) or corpus.vocab != list(vocab):
        raise InputError(corpus.path / "vocab.txt", None,
                         "vocabulary differs from the model's; prepare this corpus with "
                         "`topicscale prepare ... --vocab MODEL` so its columns match")


def document_completion(heldout, estep_topics, score_topics, prior, local=None, seed=0,
                        block_docs=4096):
    """Per-word predictive log likelihood of `heldout` (a Corpus).

    estep_topics (V x K) drive the local step (exp(E[log beta]) for a variational model, or a
    point estimate of beta) with its document-level `prior`; the local step's E[theta] and
    score_topics (V x K, E[beta]) form the predictive sum.
    """
    local = local or MeanField()
    total, paper, tokens, docs = 0.0, 0.0, 0.0, 0
    for block in heldout.blocks(block_docs):
        (optr, oind, ocnt), (hptr, hind, hcnt) = split_block(block, seed)
        result = local.fit(optr, oind, ocnt, estep_topics, prior)
        ll = np.empty(block.n_docs)
        completion_log_likelihood(hptr, hind, hcnt, np.ascontiguousarray(result.theta), score_topics, ll)
        total += math.fsum(ll)
        if hasattr(result, "theta_paper"):     # CTM: the paper's plug-in softmax(E[theta]) as well
            completion_log_likelihood(hptr, hind, hcnt, np.ascontiguousarray(result.theta_paper),
                                      score_topics, ll)
            paper += math.fsum(ll)
        tokens += float(hcnt.sum())
        docs += int(np.count_nonzero(np.diff(hptr)))
    per_word = total / tokens if tokens else float("nan")
    out = {"per_word_ll": per_word, "perplexity": math.exp(-per_word) if tokens else float("nan"),
           "documents": docs, "heldout_tokens": tokens}
    if paper and tokens:
        out["per_word_ll_paper_predictive"] = paper / tokens
    return out


def evaluate_model(model, heldout, local=None, seed=0):
    """Document completion with the model's own local step (by default the one it was trained
    with) and E[beta]."""
    check_vocabulary(model.vocab, heldout)
    local = local or registry.local_step_for(model)
    return document_completion(heldout, registry.local_topics(local, model), model.expected_beta(),
                               model.local_prior(), local=local, seed=seed)


def evaluate_topics(beta, heldout, alpha=None, seed=0, max_iter=100, tol=1e-3, accelerate=False):
    """Fold-in score of any K x V row-stochastic topic matrix (e.g. another tool's topics):
    the mean-field local step with beta as a point estimate, alpha = 1/K unless given."""
    beta = np.ascontiguousarray(np.asarray(beta, dtype=np.float64).T)
    K = beta.shape[1]
    alpha = np.full(K, 1.0 / K if alpha is None else float(alpha))
    return document_completion(heldout, beta, beta, alpha, MeanField(max_iter, tol, accelerate), seed=seed)

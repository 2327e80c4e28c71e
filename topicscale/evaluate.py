"""Held-out evaluation by document completion (SVI paper, section 4).

Each held-out document's distinct words are split at random into two disjoint halves. The
document's topic proportions are fitted on the observed half, the topics held fixed; the other
half is scored under the predictive distribution p(w_new | w_obs) ~ sum_k E[theta_k] E[beta_kw].
The score is the total log probability of the held-out tokens divided by their number
(per-word predictive log likelihood).

Three fold-ins (`evaluate_model(fold_in=...)`):
- "common" (the default for LDA models, and `evaluate_topics` for any K x V matrix): the
  mean-field local step (max_iter 100, tol 1e-3, double precision) on E[beta] with alpha = 1/K,
  whatever the model was trained with, so that scores of different fits compare;
- "gibbs": as common, but the proportions are the posterior mean that collapsed Gibbs sampling
  of the observed half's topic assignments gives (GIBBS_SWEEPS sweeps a document, the first
  GIBBS_BURN_IN discarded): the posterior predictive itself, up to Monte Carlo error, which the
  mean-field step approximates. Mean-field's exp(E[log theta]) with alpha = 1/K puts a short
  document on one or two topics, which favours blurred topics that each cover many words over
  sharp ones; Gibbs does not;
- "own": the model's own local step (the one it was trained with) and prior. HDP and CTM models
  are always scored by their own predictive.

The split is a hash of (seed, row, word id), so it does not depend on block sizes or threads;
documents with fewer than two distinct words cannot be split and are not scored.
"""
import math

import numpy as np

from . import registry
from .corpus.shards import as_corpus
from .errors import InputError, TopicscaleError
from .inference.local_steps.gibbs import Gibbs
from .inference.local_steps.meanfield import MeanField
from .kernels.meanfield import completion_log_likelihood

FOLD_INS = ("common", "gibbs", "own")
GIBBS_SWEEPS, GIBBS_BURN_IN = 200, 50
# model kinds scored by the common fold-in when asked; the others (HDP, CTM) by their own predictive
COMMON_KINDS = ("lda",)
ROW_SUM_TOLERANCE = 1e-4        # |sum_w beta_kw - 1| accepted by evaluate_topics
COMMON_MAX_ITER, COMMON_TOL = 100, 1e-3     # the common fold-in's mean-field step



class EvaluationError(TopicscaleError, ValueError):
    """Topics, prior and held-out corpus that do not go together, or topics that are not a
    distribution: refused before any kernel runs (which would read out of range or score NaN)."""


_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _hash(x):
    """splitmix64 finaliser, vectorised over uint64."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        return x ^ (x >> np.uint64(31))


def split_masks(block, seed):
    """(document of each entry, observed entries, held-out entries) of a CSR block: a document's
    distinct words ordered by a hash of (seed, row number, word id), the first half observed
    (kernels/split.py); a document of one word is not scored."""
    from .kernels.split import observed_entries
    lengths = np.diff(block.indptr)
    doc = np.repeat(np.arange(block.n_docs), lengths)
    with np.errstate(over="ignore"):
        key = _hash(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
                    ^ _hash(block.rows[doc].astype(np.uint64) + np.uint64(1))
                    ^ (block.indices.astype(np.uint64) << np.uint64(20)))
    observed = observed_entries(block.indptr, key)
    return doc, observed, ~observed & (lengths[doc] >= 2)


def split_block(block, seed, indices=None):
    """Split a CSR block into (observed, held-out) CSR triples over the same documents
    (split_masks), their indices taken from `indices` (default: the block's word ids)."""
    doc, observed, heldout = split_masks(block, seed)
    indices = block.indices if indices is None else indices

    def part(mask):
        ptr = np.zeros(block.n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(doc[mask], minlength=block.n_docs), out=ptr[1:])
        return ptr, indices[mask], block.counts[mask]

    return part(observed), part(heldout)


def check_vocabulary(vocab, corpus, of="the model's", prepare_with="MODEL"):
    """Refuse a corpus whose vocabulary is not `vocab` (of the model, or of `of`)."""
    if corpus.n_words != len(vocab) or corpus.vocab != list(vocab):
        raise InputError(corpus.path / "vocab.txt", None,
                         f"vocabulary differs from {of}; prepare this corpus with "
                         f"`topicscale prepare ... --vocab {prepare_with}` so its columns match")


def check_scorable(heldout):
    """Refuse (EvaluationError) a held-out corpus of which document completion scores nothing:
    a document needs two distinct words to be split, and with none the score would be NaN."""
    for i in range(len(heldout.shards)):
        if np.diff(heldout.shard(i)[0]).max(initial=0) >= 2:
            return
    raise EvaluationError(f"{heldout.path}: no document has two distinct words, so document completion "
                          "has nothing to score (each document's words are split in two halves)")


def _prior_vectors(prior):
    """(name, length) of a document-level prior's vectors over the topics: alpha itself (a K
    vector), or the 1-D arrays of a structured prior (HDP's elog_sigma, CTM's mu)."""
    if isinstance(prior, tuple) and hasattr(prior, "_asdict"):
        fields = prior._asdict()
    elif hasattr(prior, "__dataclass_fields__"):
        fields = {name: getattr(prior, name) for name in prior.__dataclass_fields__}
    else:
        alpha = np.asarray(prior, dtype=np.float64)
        if alpha.ndim != 1:
            raise EvaluationError(f"the prior alpha must be a vector of one value per topic, "
                                  f"not of shape {alpha.shape}")
        return [("alpha", alpha.shape[0])]
    return [(name, v.shape[0]) for name, v in fields.items() if isinstance(v, np.ndarray) and v.ndim == 1]


def check_shapes(heldout, estep_topics, score_topics, prior):
    """Refuse (EvaluationError) topics and a prior that do not fit each other or `heldout`."""
    shape, score_shape = np.shape(estep_topics), np.shape(score_topics)
    if len(shape) != 2:
        raise EvaluationError(f"the E-step topics must be a V x K matrix, not of shape {shape}")
    if score_shape != shape:
        raise EvaluationError(f"the E-step topics ({shape[0]} x {shape[1]}) and the scoring topics "
                              f"({' x '.join(map(str, score_shape))}) differ in shape")
    V, K = shape
    if V != heldout.n_words:
        raise EvaluationError(f"the topics cover {V} words, but the held-out corpus {heldout.path} "
                              f"has a vocabulary of {heldout.n_words} words")
    for name, length in _prior_vectors(prior):
        if length != K:
            raise EvaluationError(f"the prior's {name} has {length} values, but there are K = {K} topics")


def completion_split(block, seed):
    """A CSR block (Rows) made ready for document completion: (its distinct words, ascending;
    the observed and held-out halves as CSR triples whose indices point into those words). The
    split hashes the global word ids."""
    from .kernels.minibatch import distinct_words
    words, local = distinct_words(block.indices)
    return (words, *split_block(block, seed, indices=local))


def complete_documents(observed, heldout, local, estep_rows, score_rows, prior):
    """Document completion of the CSR halves of some documents whose indices point into the
    topics' rows (estep_rows for the local step, score_rows for the predictive): (each document's
    held-out log likelihood, the local step's result)."""
    optr, oind, ocnt = observed
    hptr, hind, hcnt = heldout
    result = local.fit(optr, oind, ocnt, estep_rows, prior)
    ll = np.empty(optr.shape[0] - 1)
    completion_log_likelihood(hptr, hind, hcnt, np.ascontiguousarray(result.theta), score_rows, ll)
    return ll, result


def completion_block(block, local, estep_rows, score_rows, prior, seed):
    """Document completion of one CSR block (Rows) whose topics are given as rows of its distinct
    words (ascending): (sum of the held-out tokens' log likelihood, the same with the paper's
    plug-in or None, held-out tokens, documents scored)."""
    _, observed, heldout = completion_split(block, seed)
    ll, result = complete_documents(observed, heldout, local, estep_rows, score_rows, prior)
    total, paper = math.fsum(ll), None
    if hasattr(result, "theta_paper"):         # CTM: the paper's plug-in softmax(E[theta]) as well
        completion_log_likelihood(*heldout, np.ascontiguousarray(result.theta_paper), score_rows, ll)
        paper = math.fsum(ll)
    return total, paper, float(heldout[2].sum()), int(np.count_nonzero(np.diff(heldout[0])))


def document_completion(heldout, estep_topics, score_topics, prior, local=None, seed=0,
                        block_docs=4096, executor=None):
    """Per-word predictive log likelihood of `heldout` (a Corpus).

    estep_topics (V x K) drive the local step (exp(E[log beta]) for a variational model, or a
    point estimate of beta) with its document-level `prior`; the local step's E[theta] and
    score_topics (V x K, E[beta]) form the predictive sum. Shapes are checked first
    (EvaluationError): both V x K alike, V the held-out vocabulary's size, the prior over K topics.
    Blocks of block_docs documents are scored by completion_block, in this process or on dask
    workers (executor: distributed.Executor), and summed in block order: the same score.
    """
    from .inference.chunks import InProcess
    check_shapes(heldout, estep_topics, score_topics, prior)
    local = local or MeanField()
    executor = executor or InProcess(heldout)
    estep_topics, score_topics = np.asarray(estep_topics), np.asarray(score_topics)
    args = lambda words: (local, np.ascontiguousarray(estep_topics[words], dtype=np.float64),
                          np.ascontiguousarray(score_topics[words], dtype=np.float64), prior, seed)
    total, paper, tokens, docs, with_paper = 0.0, 0.0, 0.0, 0, False
    documents = getattr(heldout, "corpus", heldout)          # a convergence.RowSample's corpus
    for block_total, block_paper, block_tokens, block_docs_scored in executor.map_blocks(
            documents, heldout.row_blocks(block_docs), completion_block, args):
        total += block_total
        if block_paper is not None:
            paper += block_paper
            with_paper = True
        tokens += block_tokens
        docs += block_docs_scored
    per_word = total / tokens if tokens else float("nan")
    out = {"per_word_ll": per_word, "perplexity": math.exp(-per_word) if tokens else float("nan"),
           "documents": docs, "heldout_tokens": int(tokens)}
    if with_paper and paper and tokens:
        out["per_word_ll_paper_predictive"] = paper / tokens
    return out


def evaluate_model(model, heldout, fold_in="common", seed=0, local=None, executor=None):
    """Document completion (SVI paper, sec. 4) of a model: {per_word_ll, perplexity, documents,
    heldout_tokens, protocol}.

    fold_in="common" (the default): an LDA model is scored by the common protocol, mean-field
    fold-in (max_iter 100, tol 1e-3, double) on E[beta] with alpha = 1/K, which is exactly
    evaluate_topics of its E[beta]; fold_in="gibbs" likewise by collapsed Gibbs sampling (module
    docstring). fold_in="own": its own local step (`local`, by default the
    one it was trained with) and prior on its E-step topics, scored with E[beta]. HDP and CTM
    models are scored by their own predictive under any choice (protocol "own"). executor:
    where the blocks are scored (document_completion).
    """
    if fold_in not in FOLD_INS:
        raise ValueError(f"fold_in must be one of {FOLD_INS}, not {fold_in!r}")
    check_vocabulary(model.vocab, heldout)
    if fold_in != "own" and model.kind in COMMON_KINDS:
        if local is not None:
            raise ValueError(f"local= is the local step of fold_in='own', not of {fold_in!r}")
        return dict(evaluate_topics(model.expected_beta().T, heldout, seed=seed, executor=executor,
                                    fold_in=fold_in), protocol=fold_in)
    local = local or registry.local_step_for(model)
    result = document_completion(heldout, registry.local_topics(local, model), model.expected_beta(),
                                 model.local_prior(), local=local, seed=seed, executor=executor)
    return dict(result, protocol="own")


def evaluate_exported(model, heldout, seed=0, executor=None, fold_in="common"):
    """The common (or Gibbs) fold-in (evaluate_topics) of the topics `export` writes (HDP: those
    carrying 99% of the weight or of the tokens): how another tool scores them."""
    from .exports import exported_topics
    beta = np.ascontiguousarray(model.expected_beta()[:, exported_topics(model)].T)
    return dict(evaluate_topics(beta, heldout, seed=seed, executor=executor, fold_in=fold_in),
                protocol=fold_in, topics=int(beta.shape[0]))


def describe_protocol(model, protocol):
    """The fold-in behind a score of `model`, in words (one line of `eval`'s output)."""
    on = "E[beta]" if model.kind in COMMON_KINDS else f"the topics `export` writes of the {model.kind} model"
    if protocol == "common":
        return f"common (mean-field fold-in on {on}, alpha = 1/K)"
    if protocol == "gibbs":
        return (f"gibbs (collapsed Gibbs fold-in on {on}, alpha = 1/K, {GIBBS_SWEEPS} sweeps, "
                f"the first {GIBBS_BURN_IN} discarded)")
    if model.kind not in COMMON_KINDS:
        return f"own predictive of the {model.kind} model ({local_in_words(model)})"
    return f"own (the model's {local_in_words(model)}, and its prior)"


def local_in_words(model):
    """The local step an own fold-in runs; CVB0's with its passes a document (burn_in + 1, as in
    training), which decide its score: it runs a fixed number, far from converged."""
    local = registry.local_step_for(model)
    if local.name == "cvb0":
        return f"local step cvb0, {local.burn_in + 1} passes a document"
    return f"local step {local.name}"


def check_topic_matrix(beta, n_words):
    """Refuse (EvaluationError) a topic matrix that is not K x n_words, finite, non-negative and
    row-stochastic (each row within ROW_SUM_TOLERANCE of 1)."""
    if beta.ndim != 2 or 0 in beta.shape:
        raise EvaluationError(f"beta must be a K x V matrix of topics, not of shape {beta.shape}")
    K, V = beta.shape
    if V != n_words:
        raise EvaluationError(f"beta has {V} columns (words), but the held-out corpus has a "
                              f"vocabulary of {n_words} words")
    finite = np.isfinite(beta)
    if not finite.all():
        raise EvaluationError(f"beta has {beta.size - np.count_nonzero(finite)} entries that are NaN "
                              f"or infinite (first in row {int(np.argmin(finite.all(axis=1)))})")
    if beta.min() < 0:
        raise EvaluationError(f"beta has {np.count_nonzero(beta < 0)} negative entries "
                              f"(smallest {beta.min():.6g})")
    sums = beta.sum(axis=1)
    worst = int(np.argmax(np.abs(sums - 1.0)))
    if abs(sums[worst] - 1.0) > ROW_SUM_TOLERANCE:
        raise EvaluationError(f"beta's rows must each sum to 1 (a distribution over the words); row "
                              f"{worst} sums to {sums[worst]:.6g} (normalise: beta / beta.sum(axis=1, "
                              f"keepdims=True))")


def evaluate_topics(beta, heldout, alpha=None, seed=0, max_iter=COMMON_MAX_ITER, tol=COMMON_TOL, accelerate=False,
                    executor=None, fold_in="common"):
    """Fold-in score of any K x V row-stochastic topic matrix (e.g. another tool's topics) on
    `heldout` (a Corpus, or the folder or URL of a prepared one): the mean-field local step
    (fold_in="gibbs": collapsed Gibbs sampling, module docstring) with beta as a point estimate,
    alpha = 1/K unless given (one value or K). The common protocol of evaluate_model. Refuses
    (EvaluationError) a matrix that is not K x V (V: the held-out vocabulary), finite,
    non-negative and row-stochastic."""
    if fold_in not in ("common", "gibbs"):
        raise ValueError(f"evaluate_topics fits by the common or the gibbs fold-in, not {fold_in!r}")
    heldout = as_corpus(heldout)
    beta = np.asarray(beta, dtype=np.float64)
    check_topic_matrix(beta, heldout.n_words)
    K = beta.shape[0]
    beta = np.ascontiguousarray(beta.T)
    alpha = np.full(K, 1.0 / K) if alpha is None else np.asarray(alpha, dtype=np.float64)
    if alpha.ndim == 0:
        alpha = np.full(K, float(alpha))
    if not (np.all(np.isfinite(alpha)) and np.all(alpha > 0)):
        raise EvaluationError(f"alpha must be positive and finite, not {alpha}")
    local = (Gibbs(GIBBS_SWEEPS, GIBBS_BURN_IN, seed=seed) if fold_in == "gibbs"
             else MeanField(max_iter, tol, accelerate))
    return document_completion(heldout, beta, beta, alpha, local, seed=seed, executor=executor)

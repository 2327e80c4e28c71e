"""pyLDAvis's prepared data for a model and a corpus: the JSON `pyLDAvis.save_json` writes, computed
here with numpy (no pyLDAvis needed), and a pyLDAvis PreparedData for `display` / `save_html`
(pip install topicscale[pyldavis]).

LDAvis (Sievert & Shirley 2014) from the topics phi (K x V, rows sum to one) and the expected tokens of
each topic n_k = sum_d N_d theta_dk (N_d the length of document d, theta_d its topic proportions), as
pyLDAvis.prepare defines them (R = 30 terms, lambda on the grid 0, 0.01, ..., 1):

    topics in decreasing n_k; their proportions p_k = n_k / sum n; term-topic counts c_kw = n_k phi_kw
    and term counts c_w = sum_k c_kw (pyLDAvis recomputes them so; the corpus's own counts are not used)
    mdsDat   x, y: the intertopic map of phi (topic_map.py; pyLDAvis's may differ by the sign of an axis),
             topics 1..K, cluster 1, Freq 100 p_k
    tinfo    Default: the R terms of highest saliency c_w / sum c * sum_k P(k|w) log(P(k|w) / p_k), with
             P(k|w) = phi_kw / sum_l phi_lw; Freq = Total = floor(c_w), logprob = loglift = R..1.
             Topic j: the terms among the R most relevant for some lambda, relevance =
             lambda log phi_kw + (1 - lambda) log(phi_kw / (c_w / sum c)), in order of first appearance
             (lambda ascending, relevance descending, ties by term number); Freq c_kw, Total c_w,
             logprob, loglift rounded to 4 decimals
    token.table  for every term in tinfo and topic with c_kw >= 0.5: Freq round(c_kw) / c_w, sorted by
             term then topic
    topic.order  the original number (1-based) of each topic in the order shown

Topics are those `topics` lists by default (exports.exported_topics; for HDP the theta of each document
is renormalised over them), numbered by their position in that list. The corpus is read once, block
by block; the documents' proportions come from the model's own local step, as `topicscale infer`.
"""
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..atomic import atomic_file, check_not_owned
from ..topic_map import intertopic_coordinates
from . import exported_topics, left_out, require

R_TERMS = 30
LAMBDA_STEP = 0.01
PLOT_OPTS = {"xlab": "PC1", "ylab": "PC2"}


def corpus_topic_tokens(model, corpus, topics):
    """n_k = sum_d N_d theta_dk over the corpus for the exported `topics`, theta renormalised over
    them; one streamed pass (infer.proportion_blocks)."""
    from ..infer import proportion_blocks
    out = np.zeros(len(topics))
    for block, theta in proportion_blocks(model, corpus):
        kept = theta[:, topics]
        kept = kept / kept.sum(axis=1, keepdims=True)
        rows = np.repeat(np.arange(block.n_docs), np.diff(block.indptr))
        lengths = np.bincount(rows, weights=block.counts, minlength=block.n_docs)     # N_d
        out += lengths @ kept
    return out


def _largest(values, n):
    """Indices of the n largest values, largest first, ties by index (pandas' nlargest)."""
    if n >= values.shape[0]:
        cand = np.arange(values.shape[0])
    else:
        threshold = np.partition(values, values.shape[0] - n)[values.shape[0] - n]
        cand = np.flatnonzero(values >= threshold)
    return cand[np.lexsort((cand, -values[cand]))][:n]


def prepared_dict(topic_word, topic_tokens, vocab, R=R_TERMS, lambda_step=LAMBDA_STEP):
    """The dictionary pyLDAvis's PreparedData.to_dict() gives for topics phi (K x V) whose
    documents hold n_k = topic_tokens[k] tokens (see the module docstring)."""
    phi_all = np.asarray(topic_word, dtype=np.float64)
    n_all = np.asarray(topic_tokens, dtype=np.float64)
    K, V = phi_all.shape
    vocab = list(vocab)
    R = min(R, V)
    proportion_all = n_all / n_all.sum()
    order = np.argsort(-proportion_all, kind="stable")
    phi, n, proportion = phi_all[order], n_all[order], proportion_all[order]
    term_topic = phi * n[:, None]                               # c_kw
    term_count = term_topic.sum(axis=0)                         # c_w
    term_share = term_count / term_count.sum()

    given_term = phi / phi.sum(axis=0)                          # P(k | w)
    with np.errstate(divide="ignore", invalid="ignore"):
        kernel = given_term * np.log(given_term / proportion[:, None])
    saliency = term_share * np.nansum(kernel, axis=0)
    default = np.argsort(-saliency, kind="stable")[:R]
    tinfo = {"Term": [vocab[w] for w in default], "Freq": np.floor(term_count[default]).tolist(),
             "Total": np.floor(term_count[default]).tolist(), "Category": ["Default"] * R,
             "logprob": [float(r) for r in range(R, 0, -1)], "loglift": [float(r) for r in range(R, 0, -1)]}

    with np.errstate(divide="ignore"):
        log_phi = np.log(phi)
        log_lift = np.log(phi / term_share)
    lambdas = np.arange(0, 1 + lambda_step, lambda_step)
    shown = [set(default.tolist())]
    for k in range(K):
        seen, terms = set(), []
        for lam in lambdas:
            relevance = lam * log_phi[k] + (1 - lam) * log_lift[k]
            for w in _largest(relevance, R).tolist():
                if w not in seen:
                    seen.add(w)
                    terms.append(w)
        terms = np.array(terms, dtype=np.int64)
        shown.append(seen)
        tinfo["Term"] += [vocab[w] for w in terms]
        tinfo["Freq"] += term_topic[k, terms].tolist()
        tinfo["Total"] += term_count[terms].tolist()
        tinfo["Category"] += [f"Topic{k + 1}"] * len(terms)
        tinfo["logprob"] += np.round(log_phi[k, terms], 4).tolist()
        tinfo["loglift"] += np.round(log_lift[k, terms], 4).tolist()

    table_terms = np.array(sorted(set().union(*shown)), dtype=np.int64)
    rows = [(vocab[w], k + 1, np.round(term_topic[k, w]) / term_count[w])
            for w in table_terms.tolist() for k in range(K) if term_topic[k, w] >= 0.5]
    rows.sort(key=lambda r: (r[0], r[1]))
    xy = intertopic_coordinates(phi)
    return {"mdsDat": {"x": xy[:, 0].tolist(), "y": xy[:, 1].tolist(), "topics": list(range(1, K + 1)),
                       "cluster": [1] * K, "Freq": (proportion * 100).tolist()},
            "tinfo": tinfo,
            "token.table": {"Topic": [r[1] for r in rows], "Freq": [float(r[2]) for r in rows],
                            "Term": [r[0] for r in rows]},
            "R": R, "lambda.step": lambda_step, "plot.opts": dict(PLOT_OPTS),
            "topic.order": [int(k) + 1 for k in order]}


def model_prepared_dict(model, corpus, R=R_TERMS, lambda_step=LAMBDA_STEP):
    """prepared_dict of a topicscale model and a prepared corpus (one pass over it)."""
    topics = exported_topics(model)
    phi = np.ascontiguousarray(model.expected_beta()[:, topics].T)
    return prepared_dict(phi, corpus_topic_tokens(model, corpus, topics), model.vocab, R, lambda_step)


def write_json(model, corpus, output):
    """OUT.json as pyLDAvis.save_json writes it; returns the summary `export --json` prints."""
    check_not_owned(output)
    data = model_prepared_dict(model, corpus)
    with atomic_file(output, "w") as fh:
        json.dump(data, fh)
    topics = exported_topics(model)
    not_carried = left_out(model, topics)
    if model.kind == "ctm":
        not_carried.append("the CTM topic correlations (Sigma_0): LDAvis shows the topics' words and sizes")
    return {"format": "pyldavis", "output": output, "topics": len(topics), "topic_ids": topics.tolist(),
            "vocabulary": model.n_words, "corpus": str(corpus.path), "files": [output],
            "not_carried": not_carried}


def pyldavis_data(model, corpus, R=R_TERMS, lambda_step=LAMBDA_STEP):
    """A pyLDAvis PreparedData of `model` (a model, its folder, or a fitted estimator: LDA, HDP,
    CTM) on `corpus` (a Corpus, a prepared corpus folder, or a document-term matrix of counts over
    the model's words: numpy or scipy.sparse), for pyLDAvis.display / save_html; needs pip install
    topicscale[pyldavis]."""
    pyldavis = require("pyLDAvis", "pyldavis", "pyldavis_data")
    pd = require("pandas", "pyldavis", "pyldavis_data")
    from ..corpus.shards import as_corpus
    model = _model(model)
    if isinstance(corpus, (str, os.PathLike)) or hasattr(corpus, "blocks"):
        d = model_prepared_dict(model, as_corpus(corpus), R, lambda_step)
    else:
        with tempfile.TemporaryDirectory(prefix="topicscale-ldavis-") as tmp:
            d = model_prepared_dict(model, _matrix_corpus(corpus, model, Path(tmp) / "corpus"), R, lambda_step)
    index = {w: i for i, w in enumerate(model.vocab)}
    tinfo = pd.DataFrame(d["tinfo"], index=[index[w] for w in d["tinfo"]["Term"]])
    tokens = pd.DataFrame(d["token.table"], index=pd.Index([index[w] for w in d["token.table"]["Term"]],
                                                           name="term"))
    return pyldavis.PreparedData(pd.DataFrame(d["mdsDat"]), tinfo, tokens, d["R"], d["lambda.step"],
                                 d["plot.opts"], d["topic.order"])


def _model(model):
    """A model given as itself, its folder or a fitted estimator."""
    from ..models import load_model
    if hasattr(model, "expected_beta"):
        return model
    if isinstance(model, (str, os.PathLike)):
        return load_model(model)
    if hasattr(model, "get_params") and hasattr(model, "kind"):
        if not hasattr(model, "model_"):
            raise ValueError(f"this {type(model).__name__} is not fitted yet: fit it before pyldavis_data")
        return model.model_
    raise TypeError(f"model must be a topicscale model, its folder or a fitted LDA, HDP or CTM, "
                    f"not {type(model).__name__}")


def _matrix_corpus(X, model, path):
    """The corpus at `path` of the document-term matrix X (documents x the model's words)."""
    from ..corpus import matrix
    from ..corpus.shards import Corpus
    if not sp.issparse(X):
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            X = None
    if X is None or X.ndim != 2:
        raise TypeError("corpus must be a prepared corpus (its folder or a Corpus) or a document-term "
                        "matrix of counts (numpy or scipy.sparse, documents x the model's words)")
    if X.shape[1] != model.n_words:
        raise ValueError(f"X has {X.shape[1]} columns, but the model has {model.n_words} words")
    if not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
        raise ValueError("X holds NaN or infinite values: it must hold word counts")
    matrix.write_counted_corpus(path, matrix.as_rows(X), model.vocab)
    return Corpus(path)

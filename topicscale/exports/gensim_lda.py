"""Export as a gensim LdaModel (pip install topicscale[gensim]): DIR/model written by LdaModel.save.

gensim's LdaModel keeps lambda as state.sstats + eta (K x V) and its topics are get_topics() =
lambda_k / sum_w lambda_kw, so setting sstats = lambda - eta makes get_topics() our E[beta] row for
row; expElogbeta = exp(E[log beta]) follows from it (sync_state). Nothing is trained: the model is
built from the dictionary and the number of topics, then given our lambda. The rows are the topics
`topics` lists by default (exports.exported_topics), in that order: `export --json` names them
(topic_ids), the topic numbers of the .npy export's weights.tsv (an HDP's are not the first rows:
`topics` keeps a topic by its weight or by its tokens).

The document prior alpha (a K vector) by model:
  LDA  its alpha.
  HDP  alpha_k = alpha E[sigma_k(V)]: a Dirichlet process DP(alpha, G) gives the topics the
       Dirichlet(alpha G(k)) weights (Ferguson 1973), with the corpus sticks' expected weights as G,
       as gensim's HdpModel.hdp_to_lda does; the topics `topics` does not list are left out.
  CTM  the Laplace bridge of the logistic normal N(mu_0, Sigma_0) to a Dirichlet (Hennig et al. 2012;
       Hobbhahn et al. 2022): alpha_k = (1 - 2/K + e^{mu_k} sum_l e^{-mu_l} / K^2) / Sigma_kk.
       It reads only the diagonal: the topic correlations are not carried (said on stderr and in --json).
The vocabulary becomes a gensim Dictionary with our word ids (document frequencies unknown, left empty).
A model trained with step sizes (tau + t)^-kappa gets gensim's decay, offset, chunksize and num_updates so that
LdaModel.update would go on from step t with the same schedule (`step_schedule`).
"""
import os
from pathlib import Path

import numpy as np

from ..atomic import atomic_dir
from ..errors import TopicscaleError
from . import exported_topics, left_out, require

FILENAME = "model"


def dirichlet_alpha(model, topics):
    """The document prior alpha of the exported `topics` (see the module docstring) and what the
    export leaves out of the model's prior."""
    if model.kind == "lda":
        return np.asarray(model.alpha, dtype=np.float64)[topics], []
    if model.kind == "hdp":
        return model.alpha * model.topic_weights()[topics], left_out(model, topics)
    if model.kind == "ctm":
        return laplace_bridge(model.mu0, model.sigma0)[topics], [
            "the CTM topic correlations (Sigma_0): gensim's LdaModel has a Dirichlet prior, alpha is the "
            "Laplace bridge of N(mu_0, diag Sigma_0)"]
    raise TopicscaleError(f"no gensim export for {model.kind} models")


def laplace_bridge(mu, sigma):
    """Dirichlet alpha approximating softmax(theta), theta ~ N(mu, Sigma), from mu and diag(Sigma)
    (the Laplace bridge; mu is centred first, as softmax ignores a shift)."""
    mu = np.asarray(mu, dtype=np.float64)
    K = mu.shape[0]
    if K == 1:
        return np.ones(1)
    mu = mu - mu.mean()
    var = np.diag(np.asarray(sigma, dtype=np.float64))
    return (1.0 - 2.0 / K + np.exp(mu) * np.exp(-mu).sum() / K ** 2) / var


def gensim_dictionary(vocab):
    """A gensim Dictionary whose word ids are our column numbers."""
    corpora = require("gensim.corpora", "gensim", "--format gensim")
    token2id = {w: i for i, w in enumerate(vocab)}
    if len(token2id) != len(vocab):
        raise TopicscaleError("the model's vocabulary repeats a word; gensim's Dictionary needs distinct words")
    dictionary = corpora.Dictionary()
    dictionary.token2id = token2id
    return dictionary


def step_schedule(settings):
    """gensim's step-size settings for a model trained with rho_t = (tau + t)^-kappa on minibatches
    of S documents: LdaModel.update's rho = (offset + pass + num_updates / chunksize)^-decay then goes
    on from t (num_updates = t S is set after construction). Empty for other schedules."""
    if any(settings.get(k) is None for k in ("kappa", "tau", "batch_size")):
        return {}
    return {"decay": float(settings["kappa"]), "offset": float(settings["tau"]),
            "chunksize": int(settings["batch_size"])}


def lda_model(model):
    """(gensim LdaModel holding the model's exported topics, what it leaves out)."""
    models = require("gensim.models", "gensim", "--format gensim")
    topics = exported_topics(model)
    alpha, not_carried = dirichlet_alpha(model, topics)
    lam = np.array(model.lam[:, topics].T, dtype=np.float64)          # K' x V
    eta = float(model.eta)
    schedule = step_schedule(model.settings)
    lda = models.LdaModel(id2word=gensim_dictionary(model.vocab), num_topics=len(topics), alpha=alpha,
                          eta=eta, dtype=np.float64, random_state=0, **schedule)
    lda.state.sstats = lam - eta
    lda.sync_state()
    if schedule:
        lda.num_updates = int(model.step) * schedule["chunksize"]
    return lda, not_carried


def check_target(output):
    """Refuse an output folder holding anything but a previous export (it is replaced whole)."""
    path = Path(output)
    if path.exists() and not path.is_dir():
        raise TopicscaleError(f"{output} exists and is not a folder")
    if path.is_dir():
        others = [n for n in os.listdir(path) if n != FILENAME and not n.startswith(FILENAME + ".")]
        if others:
            raise TopicscaleError(f"{output} holds files other than a gensim export ({others[0]}, ...); "
                                  "give a new or empty folder")


def write_gensim(model, output):
    """DIR/model by LdaModel.save (plus the files it writes beside it); returns the summary."""
    check_target(output)
    lda, not_carried = lda_model(model)
    with atomic_dir(output) as tmp:
        lda.save(str(Path(tmp) / FILENAME))
    return {"format": "gensim", "output": str(Path(output) / FILENAME), "topics": lda.num_topics,
            "topic_ids": exported_topics(model).tolist(), "vocabulary": model.n_words,
            "alpha": lda.alpha.tolist(), "eta": float(model.eta),
            "files": [str(Path(output) / n) for n in sorted(os.listdir(output))], "not_carried": not_carried}

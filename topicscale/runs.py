"""Set up and finish runs for the CLI: build or load a model, wire algorithm and local step,
write the model and its metrics, infer proportions for new documents."""
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from . import registry
from .atomic import atomic_file
from .corpus.shards import Corpus
from .errors import InputError, TopicscaleError
from .models import load_model, store
from .models.lda import LDAModel
from .train import RunLimits, train


def local_step_for(model):
    """The local step a model was trained with, with its settings."""
    s = model.settings
    cls = registry.resolve(registry.LOCAL_STEPS, s.get("local", "meanfield"))
    return cls(max_iter=s.get("max_iter", 100), tol=s.get("tol", 1e-3))


def _check_output(output, force, init_model):
    out = Path(output)
    if (out / store.MODEL_FILE).exists() and not force and not (
            init_model and out.resolve() == Path(init_model).resolve()):
        raise TopicscaleError(f"{output} already holds a model; use --force to replace it, "
                              f"or --init {output} to continue training it")
    if out.exists() and not out.is_dir():
        raise TopicscaleError(f"{output} exists and is not a folder")


def run_fit(*, corpus, output, n_topics, algorithm, local_step, batch_size, kappa, tau, alpha, eta,
            passes, max_docs, time_limit, max_iter, tol, seed, threads, heldout, eval_every,
            init_model, force, progress):
    """`topicscale fit`: returns the run summary (also the last line of metrics.jsonl)."""
    from .evaluate import check_vocabulary, evaluate_model
    _check_output(output, force, init_model)
    train_corpus = Corpus(corpus)
    heldout_corpus = Corpus(heldout) if heldout else None
    local_step = local_step or registry.DEFAULT_LOCAL[algorithm]
    settings = {"algorithm": algorithm, "local": local_step, "batch_size": batch_size, "kappa": kappa,
                "tau": tau, "max_iter": max_iter, "tol": tol, "seed": seed, "corpus": str(Path(corpus).resolve())}
    if init_model:
        model = load_model(init_model)
        check_vocabulary(model.vocab, train_corpus)
        if n_topics not in (None, model.n_topics):
            raise TopicscaleError(f"--init model has K={model.n_topics}; -k {n_topics} conflicts")
        model.settings.update(settings)
    else:
        n_topics = n_topics or 100
        k_alpha = 1.0 / n_topics if alpha is None else alpha
        model = LDAModel.initial(train_corpus.vocab, n_topics, k_alpha, eta, train_corpus.n_tokens,
                                 np.random.default_rng([seed, 0x1A]), settings)
    if heldout_corpus is not None:
        check_vocabulary(model.vocab, heldout_corpus)
    local = local_step_for(model)
    algo = registry.resolve(registry.ALGORITHMS, algorithm)(model, local, train_corpus.n_docs,
                                                             tau=tau, kappa=kappa)
    limits = RunLimits(batch_size=batch_size, passes=passes, max_docs=max_docs,
                       time_limit=time_limit, eval_every=eval_every)
    evaluate = (lambda m: evaluate_model(m, heldout_corpus, local=local)) if heldout_corpus else None

    Path(output).mkdir(parents=True, exist_ok=True)
    fd, metrics_tmp = tempfile.mkstemp(prefix=".metrics.", suffix=".jsonl", dir=output)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as metrics:
            def record(r):
                metrics.write(json.dumps(r) + "\n")
            summary = train(algo, train_corpus, limits, seed, evaluate=evaluate, on_record=record,
                            progress=progress)
            summary.update(event="summary", topics=model.n_topics, threads=threads, step=model.step)
            record(summary)
        if not np.all(np.isfinite(model.lam)):
            raise TopicscaleError("the topics became non-finite (NaN or inf); nothing was written")
        model.save(output)
        final = Path(output) / store.METRICS_FILE
        if init_model and final.exists():
            with open(final, "a", encoding="utf-8") as out, open(metrics_tmp, encoding="utf-8") as new:
                out.write(new.read())
            os.unlink(metrics_tmp)
        else:
            os.replace(metrics_tmp, final)
    except BaseException:
        if os.path.exists(metrics_tmp):
            os.unlink(metrics_tmp)
        raise
    return summary


def infer_proportions(model_path, inputs, output, fmt=None, progress=False):
    """`topicscale infer`: E[theta] = gamma / sum(gamma) for each document, ids first."""
    model = load_model(model_path)
    local = local_step_for(model)
    if len(inputs) == 1 and (Path(inputs[0]) / "manifest.json").is_file():
        return _infer_corpus(model, local, Corpus(inputs[0]), output)
    from .corpus.prepare import prepare
    with tempfile.TemporaryDirectory(prefix="topicscale-infer-") as tmp:
        prepare(inputs, Path(tmp) / "corpus", fmt=fmt, vocab=model_path, progress=progress)
        return _infer_corpus(model, local, Corpus(Path(tmp) / "corpus"), output)


def _infer_corpus(model, local, corpus, output):
    from .evaluate import check_vocabulary
    check_vocabulary(model.vocab, corpus)
    topics = model.exp_elog_beta()
    parts = []
    for block in corpus.blocks():
        g = local.fit(block.indptr, block.indices, block.counts, topics, model.alpha).gamma
        parts.append(g / g.sum(axis=1, keepdims=True))
    theta = np.concatenate(parts) if parts else np.zeros((0, model.n_topics))
    ids = corpus.ids()
    if output.endswith(".npy"):
        with atomic_file(output) as fh:
            np.save(fh, theta)
        with atomic_file(output[:-4] + ".ids.txt", "w") as fh:
            fh.writelines(f"{i}\n" for i in ids)
    else:
        with atomic_file(output, "w") as fh:
            fh.write("id\t" + "\t".join(f"topic_{k}" for k in range(model.n_topics)) + "\n")
            for doc_id, row in zip(ids, theta):
                fh.write(doc_id + "\t" + "\t".join(f"{x:.6g}" for x in row) + "\n")
    return {"documents": theta.shape[0], "topics": model.n_topics}

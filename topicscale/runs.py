"""`topicscale fit` around the driver loop: build, load or resume a model, wire the algorithm
and its local step, write checkpoints, the model and its metrics.

A model folder during a run:
    .lock            pid and host of the fit writing it (a second fit refuses)
    .run.jsonl       this run's metrics so far
    checkpoint.npz   model + run configuration + RunState + length of .run.jsonl at that point
    model.npz        the finished (or, after a signal, the partial) model
    metrics.jsonl    all finished runs' metrics
"""
import json
import os
from pathlib import Path

import numpy as np

from . import registry
from .atomic import atomic_file
from .corpus.shards import Corpus
from .errors import TopicscaleError
from .guards import OutputLock, StopOnSignal
from .models import MODEL_TYPES, load_model, store
from .train import RunLimits, RunState, planned_docs, train

CHECKPOINT_FILE = "checkpoint.npz"
# defaults of fit options that algorithms may override with their papers' settings (DEFAULTS)
FIT_DEFAULTS = {"batch_size": 500, "kappa": 0.7, "tau": 64.0, "eta": 0.01}
# fit settings that describe one run rather than the model (not saved in the model's settings)
RUN_ONLY = {"output", "threads", "force", "init_model", "heldout", "eval_every", "checkpoint_every",
            "checkpoint_seconds", "passes", "max_docs", "time_limit", "n_topics", "alpha", "eta"}
RUN_LOG = ".run.jsonl"
# where --estep-beta applies: the mean-field E-step on the model's own (not sampled) topics
ESTEP_BETA_APPLIES = {("lda", "svi", "meanfield"), ("lda", "batch", "meanfield")}


def _check_output(output, force, init_model):
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise TopicscaleError(f"{output} exists and is not a folder")
    continuing = init_model and out.resolve() == Path(init_model).resolve()
    if (out / CHECKPOINT_FILE).exists() and not force:
        raise TopicscaleError(f"{output} holds an unfinished run; continue it with "
                              f"`topicscale fit --resume {output}`, or start over with --force")
    if (out / store.MODEL_FILE).exists() and not force and not continuing:
        raise TopicscaleError(f"{output} already holds a model; use --force to replace it, "
                              f"or --init {output} to continue training it")


MEANFIELD_ONLY = ("estep_beta", "accelerate")      # options that ask for the mean-field E-step


def default_local(config):
    """The local step of a fit given without --local: the algorithm's own, except for LDA SVI
    runs over short documents with many updates (see registry.SHORT_DOCUMENT_WORDS), which get "cvb0"
    unless a mean-field option was given. Held-out LL per word, shared fold-in, K=50, peer
    settings, cvb0 against meanfield: GCIDE (16 distinct words a document) 1 pass, 227 updates:
    -8.81 / -9.23; SOTU paragraphs (32) 5 passes, 221 updates: -7.78 / -7.90, but 1 pass (44
    updates): -8.01 / -7.95; NYT (114) 5 passes: -7.30 / -7.23."""
    key = (config["model"], config["algorithm"])
    if key == ("lda", "svi") and not any(config.get(k) for k in MEANFIELD_ONLY):
        corpus = Corpus(config["corpus"])
        limits = RunLimits(passes=config["passes"], max_docs=config["max_docs"])
        updates = planned_docs(corpus.n_docs, limits) / config["batch_size"]
        if (corpus.nnz < registry.SHORT_DOCUMENT_WORDS * corpus.n_docs
                and updates >= registry.MANY_UPDATES):
            return "cvb0"
    return registry.DEFAULT_LOCAL[key]


def with_defaults(config):
    """Fill options left unset: the algorithm's DEFAULTS (its paper's settings), then
    FIT_DEFAULTS, then the local step (default_local); estep_beta (only where it applies)
    defaults to "mean" (inference.local.MeanField)."""
    algorithm = registry.lookup(registry.ALGORITHMS, config["model"], config["algorithm"], "algorithm")
    defaults = {**FIT_DEFAULTS, **getattr(algorithm, "DEFAULTS", {})}
    config = {**config, **{k: v for k, v in defaults.items() if config.get(k) is None}}
    if not config.get("local"):
        config["local"] = default_local(config)
    registry.check_local(config["model"], config["algorithm"], config["local"])
    if (config["model"], config["algorithm"], config["local"]) in ESTEP_BETA_APPLIES:
        config["estep_beta"] = config.get("estep_beta") or "mean"
    elif config.get("estep_beta"):
        raise TopicscaleError("--estep-beta goes with --model lda --algorithm svi or batch and the "
                              "meanfield local step only")
    return config


def _new_model(config, corpus):
    if config["init_model"]:
        from .evaluate import check_vocabulary
        model = load_model(config["init_model"])
        check_vocabulary(model.vocab, corpus)
        if config["n_topics"] not in (None, model.n_topics):
            raise TopicscaleError(f"--init model has K={model.n_topics}; -k {config['n_topics']} conflicts")
        return model
    cls = registry.resolve(registry.MODELS[config["model"]])
    return cls.from_config(corpus.vocab, config, np.random.default_rng([config["seed"], 0x1A]))


def run_fit(config, resume=False, progress=False, say=print):
    """`topicscale fit`. `config` holds every fit option (see cli.fit); with resume=True it is
    read from OUTPUT's checkpoint instead. Returns (summary, signal number or None)."""
    output = Path(config["output"])
    if resume:
        if not (output / CHECKPOINT_FILE).is_file():
            raise TopicscaleError(f"{output} has no checkpoint to resume (was the run finished, "
                                  "or killed before it started?)")
    else:
        _check_output(output, config["force"], config["init_model"])
        config = with_defaults(config)
    output.mkdir(parents=True, exist_ok=True)
    with OutputLock(output):
        if resume:
            model, saved, state, algo_state, log_bytes = _load_checkpoint(output)
            saved["threads"] = config["threads"]
            config = saved
            say(f"resuming {output} at epoch {state.epoch}, minibatch {state.batch} "
                f"(step {model.step}, {state.docs} documents done)")
            with open(output / RUN_LOG, "r+b") as fh:
                fh.truncate(log_bytes)
        else:
            model, algo_state = None, None
            state = RunState()
            (output / RUN_LOG).write_text("")
        corpus = Corpus(config["corpus"])
        heldout = Corpus(config["heldout"]) if config["heldout"] else None
        if model is None:
            model = _new_model(config, corpus)
            model.settings.pop("partial", None)
            model.settings.update({k: v for k, v in config.items() if k not in RUN_ONLY and v is not None})
        return _run(model, config, corpus, heldout, state, algo_state, output, progress, say,
                    fresh=not resume)


def _run(model, config, corpus, heldout, state, algo_state, output, progress, say, fresh):
    from .evaluate import check_vocabulary, evaluate_model
    if heldout is not None:
        check_vocabulary(model.vocab, heldout)
    if model.kind != config["model"]:
        raise TopicscaleError(f"--init model is {model.kind}, not {config['model']}")
    local = registry.local_step_for(model)
    algorithm = registry.lookup(registry.ALGORITHMS, model.kind, config["algorithm"], "algorithm")
    algo = registry.build(algorithm, model, local, corpus.n_docs,
                          settings={**config, "corpus_tokens": corpus.n_tokens})
    if algo_state:
        algo.restore_state(algo_state)
    limits = RunLimits(**{k: config[k] for k in RunLimits.__dataclass_fields__})
    evaluate = (lambda m: evaluate_model(m, heldout, local=local)) if heldout else None
    log = open(output / RUN_LOG, "a", encoding="utf-8")

    def record(r):
        log.write(json.dumps(r) + "\n")

    def checkpoint(s):
        log.flush()
        os.fsync(log.fileno())
        _save_checkpoint(output, model, algo, config, s, log.tell())

    try:
        if fresh:
            checkpoint(state)                   # a killed run can always be resumed
        with StopOnSignal(say) as stop:
            summary, finished = train(algo, corpus, limits, config["seed"], evaluate=evaluate,
                                      on_record=record, progress=progress, state=state,
                                      checkpoint=checkpoint, stop_requested=stop)
        summary.update(topics=model.n_topics, local=config["local"], threads=config["threads"],
                       step=model.step)
        if not finished:                        # stopped by a signal: partial model + checkpoint
            checkpoint(state)
            model.settings["partial"] = True
            model.save(output)
            model.settings.pop("partial")
            say(f"topicscale: wrote a partial model to {output}; continue with "
                f"`topicscale fit --resume {output}`")
            return summary, stop.signum
        record(dict(summary, event="summary"))
        log.close()
        model.save(output)
        _finish_metrics(output, append=bool(config["init_model"])
                        and Path(config["init_model"]).resolve() == output.resolve())
        return summary, None
    finally:
        log.close()


def _finish_metrics(output, append):
    """Publish this run's log as metrics.jsonl (after earlier runs' lines when continuing a model)."""
    old = output / store.METRICS_FILE
    prior = old.read_text(encoding="utf-8") if append and old.exists() else ""
    with atomic_file(old, "w") as fh:
        fh.write(prior + (output / RUN_LOG).read_text(encoding="utf-8"))
    (output / RUN_LOG).unlink()
    (output / CHECKPOINT_FILE).unlink(missing_ok=True)


def _save_checkpoint(output, model, algo, config, state, log_bytes):
    """The model's own file contents, plus the run (configuration, RunState, log length) and any
    state the algorithm keeps between minibatches (`checkpoint_state`)."""
    meta, arrays = model.stored()
    meta["run"] = {"config": config, "state": state.as_dict(), "log_bytes": log_bytes}
    algo_state = algo.checkpoint_state() if hasattr(algo, "checkpoint_state") else {}
    arrays.update({f"algorithm.{k}": v for k, v in algo_state.items()})
    store.save(output, meta, arrays, model.vocab, filename=CHECKPOINT_FILE)


def _load_checkpoint(output):
    meta, arrays, vocab = store.load(output, filename=CHECKPOINT_FILE)
    algo_state = {k.split(".", 1)[1]: arrays.pop(k) for k in list(arrays) if k.startswith("algorithm.")}
    model = MODEL_TYPES[meta["model"]].from_stored(meta, arrays, vocab)
    run = meta["run"]
    return model, run["config"], RunState(**run["state"]), algo_state, run["log_bytes"]

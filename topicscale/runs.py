"""`topicscale fit` around the driver loop: build, load or resume a model, wire the algorithm
and its local step, write checkpoints, the model and its metrics.

A model folder during a run:
    .lock            pid and host of the fit holding its flock (a second fit refuses); kept after
    .run.jsonl       this run's metrics so far
    checkpoint.npz   model + run configuration + RunState + length of .run.jsonl at that point
    model.npz        the finished (or, after a signal, the partial) model
    metrics.jsonl    all finished runs' metrics
"""
import contextlib
import json
import os
import time
from pathlib import Path

import numpy as np

from . import convergence, options, registry
from .atomic import atomic_file
from .coherence import listed_repeats, many_repeat
from .corpus.prepare import corpus_tokenizer
from .corpus.shards import Corpus, open_corpus
from .corpus.subset import CorpusWithout
from .errors import TopicscaleError
from .guards import LOCK_FILE, OutputLock, StopOnSignal
from .merge import Merge
from .models import load_model, store
from .polish import AUTO, Polish, fits_in_memory, outcome as polish_outcome, responsibilities_bytes
from .train import RunLimits, RunState, planned_docs, train

CHECKPOINT_FILE = "checkpoint.npz"
# fit settings that describe one run rather than the model (not saved in the model's settings)
RUN_ONLY = {"output", "threads", "force", "init_model", "heldout", "eval_every", "checkpoint_every",
            "checkpoint_seconds", "passes", "max_docs", "time_limit", "n_topics", "alpha", "eta", "report",
            "started_over", *options.CLUSTER_OPTIONS}
RUN_LOG = ".run.jsonl"
# model settings that say a prior is learned (--alpha auto, --eta auto: inference/priors.py)
LEARNED = ("alpha_auto", "eta_auto")
MANY_TOPICS = 200       # --start auto: the assignment start from this many topics (_chosen_start)
FEW_MINIBATCHES = 8     # --start auto: and for long documents read in this many minibatches a pass or fewer


def _check_output(output, force, init_model):
    from .corpus.shards import is_corpus_folder
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise TopicscaleError(f"{output} exists and is not a folder")
    if is_corpus_folder(out):
        raise TopicscaleError(f"{output} holds a corpus; write the model to a folder of its own")
    continuing = init_model and out.resolve() == Path(init_model).resolve()
    if (out / LOCK_FILE).exists():
        with OutputLock(out):                   # another fit writing it is said first: its checkpoint
            pass                                # and model are that run's, which --force cannot stop
    if (out / CHECKPOINT_FILE).exists() and not force:
        raise TopicscaleError(f"{output} holds an unfinished run; continue it with "
                              f"`topicscale fit --resume {output}`, or start over with --force")
    if (out / store.MODEL_FILE).exists() and not force and not continuing:
        raise TopicscaleError(f"{output} already holds a model; use --force to replace it, "
                              f"or --init {output} to continue training it")


def long_documents(corpus):
    """Whether a corpus's documents are long: SHORT_DOCUMENT_WORDS distinct words or more on average
    (registry.py: where the adaptive defaults choose mean-field)."""
    return corpus.nnz >= registry.SHORT_DOCUMENT_WORDS * corpus.n_docs


def default_local(config):
    """The local step of a fit given without --local (default_step's)."""
    return default_step(config)[0]


def default_step(config):
    """(local step, the settings it brings) of a fit given without --local: one its given options
    select (options.select_local), else the algorithm's default. For LDA SVI and the HDP that is
    "cvb0" on short documents when the run makes many updates (registry.SHORT_DOCUMENT_WORDS,
    MANY_UPDATES; a run bounded only by --time-limit counts as making many); for LDA SVI on short
    documents from FEW_UPDATES too (SHORT_RUN_CVB0), with SHORT_RUN_BURN_IN and tau =
    SHORT_RUN_TAU_SHARE x its updates (a given --tau is kept), but not for the assignment start's
    one pass, which the polish's sweeps train on from; for the HDP trained until it stops improving
    on a small corpus (fewer than MANY_UPDATES updates in its MAX_PASSES passes, FEW_UPDATES or more),
    "cvb0" with tau = SMALL_CORPUS_TAU whatever the documents' length; else "meanfield"."""
    chosen = options.select_local(config)
    if chosen:
        return chosen, {}
    key = (config["model"], config["algorithm"])
    if key not in registry.ADAPTIVE_DEFAULT:
        return registry.cell(*key).locals[0], {}
    long_docs, short_docs = registry.ADAPTIVE_DEFAULT[key]
    corpus = open_corpus(config["corpus"])
    limits = run_limits(config)
    total = planned_docs(corpus.n_docs, limits)
    updates = float("inf") if total is None else total / config["batch_size"]
    if (key in registry.SMALL_CORPUS_CVB0 and limits.min_gain
            and registry.FEW_UPDATES <= updates < registry.MANY_UPDATES):
        return short_docs, {"tau": config["tau"] or registry.SMALL_CORPUS_TAU}
    if long_documents(corpus):
        return long_docs, {}
    if updates >= registry.MANY_UPDATES:
        return short_docs, {}
    if (key in registry.SHORT_RUN_CVB0 and config.get("start") != "assignment"
            and updates >= registry.FEW_UPDATES):
        return short_docs, {"burn_in": registry.SHORT_RUN_BURN_IN,
                            "tau": config["tau"] or max(1.0, updates * registry.SHORT_RUN_TAU_SHARE)}
    return long_docs, {}


def run_limits(config):
    """RunLimits from a run's settings: without --passes, no bound on passes when --time-limit
    or --max-docs is given (train until that limit), else until the model stops improving
    (convergence.py), at most MAX_PASSES passes."""
    passes, min_gain = config.get("passes"), 0.0
    if passes is None:
        if config.get("time_limit") or config.get("max_docs"):
            passes = float("inf")
        else:
            passes, min_gain = convergence.MAX_PASSES, convergence.MIN_GAIN
            if config.get("start") == "assignment" and config.get("polish") != 0:
                passes = 1          # the polish's sweeps train on from there (polish.py)
    return RunLimits(batch_size=config["batch_size"], passes=passes, min_gain=min_gain,
                     patience=convergence.patience(config.get("model")),
                     chunk_docs=config.get("chunk_docs") or RunLimits.chunk_docs,
                     max_docs=config.get("max_docs") or 0,
                     time_limit=config.get("time_limit") or 0.0, eval_every=config.get("eval_every") or 0,
                     checkpoint_every=config.get("checkpoint_every") or 0,
                     checkpoint_seconds=config.get("checkpoint_seconds") or 0.0)


def with_defaults(config):
    """Choose the local step (default_step), check the given options (options.check), then fill
    the rest: the algorithm's DEFAULTS (its paper's settings), then the declared defaults of the
    options this run owns (--polish: auto when the run trains until the model stops improving);
    options it does not own are dropped."""
    config = {"local": None, **{name: None for name in options.BY_NAME}, **config}
    init = store.load(config["init_model"])[0] if config.get("init_model") else {}   # its meta, read once
    config["model"] = config.get("model") or init.get("model") or "lda"     # continued as what it is
    config["algorithm"] = config.get("algorithm") or "svi"
    algorithm = registry.global_step_class(config["model"], config["algorithm"])
    paper = getattr(algorithm, "DEFAULTS", {})
    sized = dict(config, batch_size=config["batch_size"] or paper.get("batch_size")
                 or options.BY_NAME["batch_size"].default)
    brought = {}
    if config["local"] is None and init:
        config["local"] = _init_local(init, config)     # --init continues a model with its own local step
    if config["local"] is None:
        config["local"], brought = default_step(sized)
    options.check(config)
    config.update(brought)
    here = options.owned(config["model"], config["algorithm"], config["local"])
    for name, value in paper.items():
        if config.get(name) is None and (name in here or name not in options.BY_NAME):
            config[name] = value
    for o in options.PART_OPTIONS + options.RUN_OPTIONS:
        if o in options.PART_OPTIONS and o.name not in here:
            config[o.name] = None
        elif config[o.name] is None:
            config[o.name] = o.default
    config["batch_size"] = sized["batch_size"]
    until_converged = bool(run_limits(config).min_gain)
    if "polish" in here and config["polish"] is None:
        config["polish"] = AUTO if until_converged and not config["init_model"] else 0
    if "merge" in here:
        if config["merge"] and not (until_converged or config.get("heldout")):
            raise TopicscaleError("--merge scores the merged topics on documents held aside or held out: "
                                  "give --heldout, or let fit train until the model stops improving "
                                  "(no --passes, --max-docs or --time-limit)")
        if config["merge"] is None:
            config["merge"] = until_converged and not config["init_model"]
    trains_by_sweeps = (config.get("polish") != 0
                        and not any(config.get(n) for n in ("passes", "time_limit", "max_docs")))
    if config.get("start") == "assignment" and learned_priors(config) and trains_by_sweeps:
        raise TopicscaleError(f"{' and '.join(learned_priors(config))} learn the priors in the streamed passes, "
                              "and --start assignment trains one pass, then the polish's sweeps, which keep "
                              "them fixed: leave --start at auto (or near-uniform), or give --polish 0 or --passes")
    return config


def _init_local(meta, config):
    """The local step the --init model (its `meta`) was trained with, when this run's model and
    algorithm take it (else None: the run's rule chooses, and new_model refuses a model of another
    kind)."""
    local = meta.get("settings", {}).get("local")
    takes = registry.cell(config["model"], config["algorithm"]).locals
    return local if meta.get("model") == config["model"] and local in takes else None


def new_model(config, corpus):
    """The model a fresh run trains (the --init model, or a new one from the run's settings),
    holding the run's settings: they replace an --init model's, so none of its old steps'
    settings remain."""
    dropped = 0
    if config["init_model"]:
        from .evaluate import check_vocabulary
        model = load_model(config["init_model"])
        check_vocabulary(model.vocab, corpus)
        if model.kind != config["model"]:
            raise TopicscaleError(f"--init model is {model.kind}, not {config['model']}: "
                                  f"add --model {model.kind}")
        carried = {k: True for k in LEARNED if model.settings.get(k)}      # the model keeps its priors
        if "start" in model.settings:
            carried["start"] = model.settings["start"]                      # and where it started
        if model.kind == "hdp":
            truncation, dropped = model.truncation, drop_emptied(model)
            if truncation != model.n_topics:
                carried["truncation"] = truncation                          # and the K it started with
    else:
        cls = registry.model_class(config["model"])
        model = cls.from_config(corpus.vocab, dict(config, corpus_docs=corpus_size(config, corpus)),
                                np.random.default_rng([config["seed"], 0x1A]))
        carried = {f"{name}_auto": True for name in ("alpha", "eta") if config.get(name) == "auto"}
    kept = RUN_ONLY | set(options.KEPT_BY_INIT)
    model.settings = {k: v for k, v in config.items() if k not in kept and v is not None}
    model.settings.update(carried)
    if dropped:
        model.settings["dropped_topics"] = dropped
    tokenizer = corpus_tokenizer(corpus.manifest)         # how `infer` and `prepare --vocab MODEL`
    if tokenizer is not None:                             # tokenise new text
        model.settings["tokenizer"] = tokenizer
    if model.settings.get("start") == "auto":
        model.settings["start"] = "near-uniform"        # until the run starts over (_starts_over)
    return model


def drop_emptied(model):
    """Continue an HDP without the topics its merges emptied (lambda = eta: merge.py; found as
    the polish finds them, polish.emptied), and say how many. Kept, they are identical: the
    stick updates give them weight again, each takes the same tokens, and they come back as
    copies of one topic."""
    from .polish import emptied
    empty = emptied(model)
    if empty.any():
        model.keep_topics(np.flatnonzero(~empty))
    return int(empty.sum())


def corpus_size(config, corpus):
    """D, the documents the global step scales a minibatch's statistics to: the corpus's, or the
    estimators' total_samples (partial_fit streams a larger corpus than each call's X)."""
    return config.get("total_samples") or corpus.n_docs


def build_algorithm(model, config, corpus):
    """The run's global step around the model's local step (both from the settings), for a corpus
    of corpus_size documents (its tokens estimated at the corpus's tokens a document)."""
    algorithm = registry.global_step_class(model.kind, config["algorithm"])
    docs = corpus_size(config, corpus)
    tokens = corpus.n_tokens * (docs / corpus.n_docs)
    return registry.build(algorithm, model, registry.local_step_for(model), docs,
                          settings={**config, "corpus_tokens": tokens})


def run_fit(config, resume=False, progress=False, say=print, worker_threads=None):
    """`topicscale fit`. `config` holds every fit option (see cli.fit); with resume=True it is
    read from OUTPUT's checkpoint instead (but for the RESUME_OPTIONS, --scheduler and --workers
    among them: without them a run continues in this process). worker_threads: numba threads of
    each dask worker (--threads as given; default 1). Returns (summary, signal number or None)."""
    output = Path(config["output"])
    if resume:
        from .corpus.shards import is_corpus_folder
        if is_corpus_folder(output):
            raise TopicscaleError(f"{output} is a corpus; --resume takes the model folder of an "
                                  "interrupted run (fit's -o)")
        if not (output / CHECKPOINT_FILE).is_file():
            raise TopicscaleError(f"{output} has no checkpoint to resume (was the run finished, "
                                  "or killed before it started?)")
    else:
        _check_output(output, config["force"], config["init_model"])
        config = with_defaults(config)
        training = open_corpus(config["corpus"])
        planned = planned_docs(training.n_docs, run_limits(config))
        if planned == 0:
            raise TopicscaleError(f"--passes {config['passes']:g} trains on no document of "
                                  f"{config['corpus']}; give a share of a pass that holds one or more")
        if config["algorithm"] == "batch" and planned is not None and planned < training.n_docs:
            raise TopicscaleError(f"--algorithm batch updates the topics once a whole pass is read, and this run "
                                  f"ends after {planned} of the corpus's {training.n_docs} documents (--passes, "
                                  "--max-docs): it would write the topics untrained")
        if config["heldout"]:                   # refused before the output folder is made
            from .evaluate import check_scorable, check_vocabulary
            heldout = Corpus(config["heldout"])
            check_vocabulary(training.vocab, heldout, of="the training corpus's", prepare_with="CORPUS")
            check_scorable(heldout)
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    written = SavedRun()
    with OutputLock(output), _undone_on_failure(output, created, written):
        for leftover in output.glob(".*.tmp"):         # a killed run's unrenamed atomic_file writes
            leftover.unlink()
        if resume:
            model, saved, state, algo_state, log_bytes, started_on = _load_checkpoint(output)
            _check_same_corpus(started_on["corpus"], open_corpus(saved["corpus"]), output)
            if saved.get("heldout"):
                _check_same_corpus(started_on["heldout"], Corpus(saved["heldout"]), output, "held-out corpus")
            saved["threads"] = config["threads"]
            saved["report"] = config.get("report") or saved.get("report")
            saved.update({name: config.get(name) for name in options.CLUSTER_OPTIONS})
            config = saved
            say(f"resuming {output} at epoch {state.epoch}, minibatch {state.batch} "
                f"(step {model.step}, {state.docs} documents done)")
            with open(output / RUN_LOG, "r+b") as fh:
                fh.truncate(log_bytes)
        else:
            model, algo_state = None, None
            state = RunState()
            (output / CHECKPOINT_FILE).unlink(missing_ok=True)     # an unfinished run --force replaces
            (output / RUN_LOG).write_text("")
            written.began = True
        corpus = open_corpus(config["corpus"])
        heldout = Corpus(config["heldout"]) if config["heldout"] else None
        if model is None:
            config = _chosen_start(config, corpus, say)
            model = new_model(config, corpus)
        with contextlib.ExitStack() as stack:
            executor = None
            if any(config.get(name) for name in options.CLUSTER_OPTIONS):
                executor = stack.enter_context(cluster_for(config, worker_threads, say))
            while True:
                summary, signum, first = _run(model, config, corpus, heldout, state, algo_state, output,
                                              progress, say, not resume, written, executor=executor)
                if first is None:
                    return summary, signum
                # --start auto: the run again from the assignment start (_starts_over), the
                # first one's model freed
                config = dict(config, start="assignment", started_over=first)
                model, state, algo_state, resume = (new_model(config, corpus),
                                                    RunState(train_seconds=first["train_seconds"]), None, False)


def cluster_for(config, worker_threads, say):
    """The dask cluster a run's --scheduler or --workers names (distributed.cluster), said."""
    from .distributed import cluster
    where = (f"the dask scheduler at {config['scheduler']}" if config.get("scheduler")
             else f"a local dask cluster of {config['workers']} worker processes")
    n = worker_threads or 1
    say(f"running the local steps on {where} ({n} numba thread{'s' if n != 1 else ''} a worker)")
    return cluster(config.get("scheduler"), config.get("workers"), worker_threads)


def _say_chunks(executor, limits, say):
    """A note when a minibatch has fewer chunks than the cluster has workers (some stay idle)."""
    chunks, workers = -(-limits.batch_size // limits.chunk_docs), executor.n_workers
    if chunks < workers:
        say(f"note: minibatches of {limits.batch_size} documents make {chunks} chunk(s) of at most "
            f"{limits.chunk_docs}, so at most {chunks} of the {workers} workers work at a time; "
            f"--batch-size {workers * limits.chunk_docs} (or a smaller --chunk-docs) keeps them all busy "
            "(README: Running on a cluster)")


def _run(model, config, corpus, heldout, state, algo_state, output, progress, say, fresh, written,
         executor=None):
    from .evaluate import check_vocabulary, evaluate_model
    if heldout is not None:
        check_vocabulary(model.vocab, heldout)
    limits = run_limits(config)
    # trained until it stops improving without a held-out corpus: scored on documents held aside
    aside = convergence.aside_rows(corpus, config["seed"]) if limits.min_gain and heldout is None else None
    training = corpus if aside is None else CorpusWithout(corpus, aside)
    if fresh and config.get("start") == "assignment":
        from .inference.start import assigned_topics
        t0 = time.perf_counter()
        model.lam = assigned_topics(training, model.n_topics, model.eta, config["seed"])
        state.train_seconds += time.perf_counter() - t0         # counted as training
    algo = build_algorithm(model, config, training)
    if algo_state:
        algo.restore_state(algo_state)
    if executor is not None:
        executor.fitting(training, limits.chunk_docs)
        _say_chunks(executor, limits, say)
    score_pass = convergence.PassScorer(corpus, heldout, config["seed"], model.kind, executor=executor,
                                        aside=aside)
    polish = (Polish(training, config["polish"], output, relied_on=config.get("start") == "assignment")
              if config.get("polish") else None)
    merge = Merge(score_pass.documents, score_pass.scored_on) if config.get("merge") else None
    evaluate = (lambda m: score_pass.heldout_result(m)                 # eval's default protocol
                or evaluate_model(m, heldout, executor=executor)) if heldout else None
    fingerprints = {"corpus": corpus.fingerprint(),
                    "heldout": None if heldout is None else heldout.fingerprint()}
    log = open(output / RUN_LOG, "a", encoding="utf-8")

    def record(r):
        log.write(json.dumps(r) + "\n")

    def checkpoint(s):
        log.flush()
        os.fsync(log.fileno())
        _save_checkpoint(output, model, algo, config, s, log.tell(), fingerprints)
        written.training = written.training or bool(s.docs or s.train_seconds)

    try:
        if fresh:
            checkpoint(state)                   # a killed run can always be resumed
        with StopOnSignal(say) as stop:
            summary, finished = train(algo, training, limits, config["seed"], evaluate=evaluate,
                                      on_record=record, progress=progress, state=state,
                                      checkpoint=checkpoint, stop_requested=stop, score_pass=score_pass,
                                      executor=executor, polish=polish, merge=merge)
        summary.update(model=model.kind, topics=model.n_topics, local=config["local"],
                       threads=config["threads"], step=model.step)
        if executor is not None:
            summary.update(workers=executor.n_workers, worker_threads=executor.threads)
        if limits.min_gain:
            summary["scored_on"] = score_pass.scored_on
        if model.settings.get("start"):
            summary["start"] = model.settings["start"]
        if config["init_model"]:
            summary["init"] = str(config["init_model"])
            if model.settings.get("dropped_topics"):
                summary["dropped_topics"] = model.settings["dropped_topics"]
        if model.kind == "hdp":
            summary["truncation"] = model.truncation
        learned = [name.split("_")[0] for name in LEARNED if model.settings.get(name)]
        if learned:
            summary["learned_priors"] = learned
        if config.get("started_over"):
            _count_both_runs(summary, config["started_over"])
        if aside is not None:
            summary["held_aside"] = int(aside.shape[0])
        if "kept" in summary.get("polish", {}):
            summary["polish"]["scored_on"] = score_pass.sweeps_scored_on(model)
        continuing = bool(config["init_model"]) and Path(config["init_model"]).resolve() == output.resolve()
        if not finished:                        # stopped by a signal: partial model + checkpoint
            summary.update(stopped="signal", partial=True)
            checkpoint(state)
            model.settings["partial"] = True
            model.save(output)
            model.settings.pop("partial")
            if not continuing:                  # the replaced model's log; this run's is in RUN_LOG
                (output / store.METRICS_FILE).unlink(missing_ok=True)
            say(f"topicscale: wrote a partial model to {output}; continue with "
                f"`topicscale fit --resume {output}`")
            return summary, stop.signum, None
        repeated, listed = listed_repeats(model)
        summary.update(repeated_topics=repeated, listed_topics=listed)
        if model.kind == "lda":
            summary["sweeps_bytes"] = responsibilities_bytes(training, model.n_topics)
        if _starts_over(config, limits, summary):
            record(dict(summary, event="start_over"))     # not "summary": this run's model is dropped
            say(f"{repeated} of {listed} topics repeat another after training from the near-uniform start: "
                f"starting over from a random assignment of the tokens (--start assignment, --local "
                f"{config['local']})")
            return None, None, {"repeated_topics": repeated, "listed_topics": listed, "docs": state.docs,
                                "batches": state.batches, "tokens": int(state.tokens),
                                "polish": summary.get("polish"), "train_seconds": state.train_seconds,
                                "wall_seconds": summary["wall_seconds"]}
        record(dict(summary, event="summary"))
        log.close()
        if summary.get("polish"):
            model.settings["polished"] = polish_outcome(summary["polish"])
        if summary.get("merge"):
            again = summary.get("merge_after_polish", {})
            model.settings["merged"] = summary["merge"]["merged"] + again.get("merged", 0)
        model.save(output)
        _finish_metrics(output, append=continuing)
        if config.get("report"):                # fit --report: the finished model's page
            from .report import write_report
            try:
                write_report(output, config["report"])
            except (TopicscaleError, OSError) as exc:
                raise TopicscaleError(f"wrote the model {output}, but not its report "
                                      f"({exc}); `topicscale report {output} -o FILE` writes it") from None
            summary["report"] = config["report"]
        return summary, None, None
    finally:
        log.close()


class SavedRun:
    """What a fit has written to its output folder: whether it began a run there (an unfinished
    run it replaces, --force, is gone, and its log is new) and whether a checkpoint of that run
    holds work (documents trained, or a first run's time before a start-over or the assignment
    start's)."""
    began = False
    training = False


@contextlib.contextmanager
def _undone_on_failure(output, created, written):
    """A fit that fails before it saved any work leaves OUTPUT as it was but for the unfinished run
    it replaced: its checkpoint of nothing and its log go, and so does the folder when the fit made
    it. A checkpoint that holds work is kept for --resume, which the error then names."""
    try:
        yield
    except BaseException as exc:
        said = exc if isinstance(exc, TopicscaleError) else _written_where(exc, output)
        if written.began and not written.training:
            (output / CHECKPOINT_FILE).unlink(missing_ok=True)
            (output / RUN_LOG).unlink(missing_ok=True)
            if created and [p.name for p in output.iterdir()] == [LOCK_FILE]:
                try:
                    (output / LOCK_FILE).unlink()   # still locked: a fit opening it now makes its own
                    output.rmdir()
                except OSError:
                    pass
            if said is not None and said is not exc:
                raise TopicscaleError(said) from None
        elif said is not None and not isinstance(exc, ResumeRefused) and (output / CHECKPOINT_FILE).exists():
            raise TopicscaleError(f"{said}\n(the run's checkpoint in {output} is kept: once the cause is "
                                  f"fixed, `topicscale fit --resume {output}` continues it)") from None
        raise


def _written_where(exc, output):
    """An OSError of a fit as one line naming where (its file, or OUTPUT for a write with no file
    name or to a hidden temporary file of atomic_file); None for other exceptions."""
    if not isinstance(exc, OSError):
        return None
    name = Path(exc.filename).name if exc.filename else ""
    where = exc.filename if name and not (name.startswith(".") and name.endswith(".tmp")) else output
    return f"{where}: {exc.strerror or str(exc) or type(exc).__name__}"


def _count_both_runs(summary, first):
    """A run started over (_starts_over) counts the first run's documents, minibatches, tokens and
    wall time with its own, as its train_seconds does."""
    for count in ("docs", "batches", "tokens", "wall_seconds"):
        summary[count] += first[count]
    summary["started_over"] = first
    for rate, count in (("docs_per_s", "docs"), ("tokens_per_s", "tokens")):
        summary[rate] = summary[count] / summary["train_seconds"] if summary["train_seconds"] else None


def _auto_may_take_assignment(config, min_gain):
    """What both of --start auto's ways to the assignment start (_chosen_start, _starts_over)
    need besides the sweeps' memory: auto given, no --init (the topics are the given model's),
    no learned prior (the sweeps, which train from that start, keep the priors fixed), and a run
    trained until the model stops improving, then polished."""
    return (config.get("start") == "auto" and not config.get("init_model") and not learned_priors(config)
            and bool(min_gain) and bool(config.get("polish")))


def learned_priors(config):
    """The flags of the priors a run learns (--alpha auto, --eta auto)."""
    return [f"--{name} auto" for name in ("alpha", "eta") if config.get(name) == "auto"]


def _chosen_start(config, corpus, say):
    """--start auto for an LDA trained until it stops improving and polished: the assignment start
    for MANY_TOPICS topics or more, and for a corpus of long documents (mean-field's, as
    default_step reads them) that a pass reads in FEW_MINIBATCHES minibatches or fewer, when the
    sweeps' numbers fit in memory (as for _starts_over) and no cluster runs the passes. Otherwise
    near-uniform, started over from the assignment when its topics end repeating (_starts_over).
    The near-uniform start leaves nearly equal topics for minibatch noise to part; the assignment
    gives each its own tokens from the outset. From 200 topics that scored better on eight of the
    nine corpora measured; at 100 the two starts tie (benchmarks/results/start.md,
    start-k100-k200/). A small corpus of long documents makes a few SVI steps a pass, each damped
    by tau, and the passes reach their cap still gaining, where one pass and batch sweeps converge
    (benchmarks/results/small-long/)."""
    K = config.get("n_topics") or 0
    minibatches = -(-corpus.n_docs // config["batch_size"])
    few_long = long_documents(corpus) and minibatches <= FEW_MINIBATCHES
    if not ((K >= MANY_TOPICS or few_long) and _auto_may_take_assignment(config, run_limits(config).min_gain)
            and not any(config.get(name) for name in options.CLUSTER_OPTIONS)
            and fits_in_memory(responsibilities_bytes(corpus, K))):
        return config
    batches = f"{minibatches} minibatch{'' if minibatches == 1 else 'es'}"
    why = f"{K} topics" if K >= MANY_TOPICS else f"long documents read in {batches} a pass"
    say(f"{why}: training from a random assignment of the tokens, then the polish's sweeps "
        "(--start auto; --start near-uniform streams passes instead)")
    return dict(config, start="assignment")


def _starts_over(config, limits, summary):
    """--start auto: an LDA trained until it stops improving, then polished, whose topics end with
    MANY_REPEATS of them or more repeating another starts over from the assignment start with
    its other settings (one pass, then the sweeps; inference/start.py), which kept them apart on
    every corpus measured (benchmarks/results/start.md) where the sweeps from the near-uniform
    start left them alike or were skipped for their memory; not when those sweeps' numbers would
    not fit in memory, nor after --init (the topics are the given model's)."""
    return (_auto_may_take_assignment(config, limits.min_gain)
            and many_repeat(summary["repeated_topics"], summary["listed_topics"])
            and fits_in_memory(summary["sweeps_bytes"]))


def _finish_metrics(output, append):
    """Publish this run's log as metrics.jsonl (after earlier runs' lines when continuing a model)."""
    old = output / store.METRICS_FILE
    prior = old.read_text(encoding="utf-8") if append and old.exists() else ""
    with atomic_file(old, "w") as fh:
        fh.write(prior + (output / RUN_LOG).read_text(encoding="utf-8"))
    (output / RUN_LOG).unlink()
    (output / CHECKPOINT_FILE).unlink(missing_ok=True)


def _save_checkpoint(output, model, algo, config, state, log_bytes, fingerprints):
    """The model's own file contents, plus the run (configuration, RunState, log length, the
    fingerprints of its corpus and held-out corpus) and any state the algorithm keeps between
    minibatches (`checkpoint_state`)."""
    meta, arrays = model.stored()
    meta["run"] = {"config": config, "state": state.as_dict(), "log_bytes": log_bytes, **fingerprints}
    algo_state = algo.checkpoint_state() if hasattr(algo, "checkpoint_state") else {}
    arrays.update({f"algorithm.{k}": v for k, v in algo_state.items()})
    store.save(output, meta, arrays, model.vocab, filename=CHECKPOINT_FILE)


def _load_checkpoint(output):
    meta, arrays, vocab = store.load(output, filename=CHECKPOINT_FILE)
    algo_state = {k.split(".", 1)[1]: arrays.pop(k) for k in list(arrays) if k.startswith("algorithm.")}
    model = registry.model_class(meta["model"]).from_stored(meta, arrays, vocab)
    run = meta["run"]
    started_on = {name: run.get(name) for name in ("corpus", "heldout")}
    return model, run["config"], RunState(**run["state"]), algo_state, run["log_bytes"], started_on


class ResumeRefused(TopicscaleError):
    """A resume refused before the run was touched: said as is, on one line."""


def _check_same_corpus(started_on, corpus, output, what="corpus"):
    """Refuse to resume on a corpus (`what`: the training or the held-out one) whose fingerprint
    (Corpus.fingerprint) is not the one the run started on; a checkpoint that records none (an
    older topicscale's) is not checked."""
    if started_on is None:
        return
    now = corpus.fingerprint()
    changed = []
    if now["vocab_sha256"] != started_on["vocab_sha256"]:
        was, words = started_on["words"], now["words"]
        changed.append(f"vocabulary {was:,} -> {words:,} words" if was != words else "vocabulary: other words")
    changed += [f"{name} {started_on[key]:,} -> {now[key]:,}"
                for key, name in (("documents", "documents"), ("nnz", "non-zeros"), ("tokens", "tokens"))
                if now[key] != started_on[key]]
    if changed:
        raise ResumeRefused(f"the {what} {corpus.location} is not the one this run started on "
                            f"({', '.join(changed)}): restore it to resume (the checkpoint is kept), or start "
                            f"over with `topicscale fit CORPUS ... --force -o {output}`")

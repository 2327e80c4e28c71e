"""The `topicscale` command line: parse, validate, call the library, print.

User errors print one line `topicscale: error: ...` and exit with status 2.
"""
import inspect
import io
import json
import math
import os
import signal
import sys
from pathlib import Path

import click

from . import __version__, registry
from .errors import TopicscaleError
from .options import SEED, Count, Finite


def _show_progress(quiet):
    return not quiet and sys.stderr.isatty()


def _emit(as_json, payload, lines):
    if as_json:
        click.echo(json.dumps(payload, indent=None))
    else:
        for line in lines:
            click.echo(line)


def _set_threads(threads):
    import numba
    from . import options
    try:
        threads = options.numba_threads(threads)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--threads") from None
    numba.set_num_threads(threads)
    return threads


class CorpusLocation(click.ParamType):
    """A prepared corpus: a folder, or an fsspec URL (s3://, gs://, file://; read by corpus/remote.py)."""
    name = "corpus"

    def convert(self, value, param, ctx):
        from .corpus.shards import is_url
        if is_url(value):
            return value
        if Path(value).is_file():
            self.fail(f"{value} is a file, not a prepared corpus folder (`topicscale prepare {value} "
                      "-o FOLDER` makes one; add --vocab MODEL for a model's words)", param, ctx)
        return click.Path(exists=True, file_okay=False).convert(value, param, ctx)


def _corpus_location(value):
    """A URL as given, a folder as an absolute path."""
    from .corpus.shards import is_url
    return value if is_url(value) else str(Path(value).resolve())


def _cluster_options(command):
    """--scheduler and --workers as declared in topicscale/options.py (fit's), for eval and infer."""
    from . import options
    for name in reversed(options.CLUSTER_OPTIONS):
        option = options.BY_NAME[name]
        command = click.option(*option.flags, type=option.type, default=None,
                               help=options.help_text(option))(command)
    return command


def _cluster(scheduler, workers, threads):
    """The executor of eval and infer: dask workers for --scheduler / --workers (numba threads:
    --threads as given, default 1), else None (this process)."""
    import contextlib
    from . import options
    if scheduler is None and workers is None:
        return contextlib.nullcontext(None)
    options.check_cluster({"scheduler": scheduler, "workers": workers})
    from .distributed import cluster
    return cluster(scheduler, workers, threads)


def _require_dask(config):
    """Refuse a cluster flag before anything else when dask is not installed (exit 2)."""
    from . import options
    for name in options.CLUSTER_OPTIONS:
        if config.get(name) is not None:
            from .distributed import require_dask
            require_dask(options.flag(name))


def _heldout_spec(value):
    if value is None:
        return 0.0
    try:
        number = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a count nor a fraction", param_hint="--heldout") from None
    if not math.isfinite(number) or number <= 0 or (number >= 1 and number != int(number)):
        raise click.BadParameter(f"{value!r}: a fraction in (0, 1) or a whole number of documents, 1 or more",
                                 param_hint="--heldout")
    return number


class UserError(click.ClickException):
    """A TopicscaleError or OSError shown as one line, exit status 2."""
    exit_code = 2

    def show(self, file=None):
        click.echo(f"topicscale: error: {self.format_message()}", err=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C's KeyboardInterrupt is, so that it unwinds alike (fit handles
    both signals itself: guards.StopOnSignal)."""


def _terminate(signum, frame):
    raise Terminated


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when standard output is closed: writing to it is a user error."""
    encoding, errors = "utf-8", "strict"

    def write(self, text):
        raise TopicscaleError("standard output is closed")


class _Group(click.Group):
    def invoke(self, ctx):
        if sys.stdout is None or sys.stdout.closed:
            sys.stdout = _ClosedStdout()
        try:
            return super().invoke(ctx)
        except TopicscaleError as exc:
            raise UserError(str(exc)) from None
        except BrokenPipeError:
            # the reader of our output went away (e.g. `| head`): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise UserError(f"{where}{exc.strerror or exc}") from None
        except MemoryError as exc:          # numpy's says what it could not allocate
            raise UserError(f"not enough memory{f': {exc}' if str(exc) else ''}") from None
        except UnicodeDecodeError as exc:   # a reader that does not name its file and line
            raise UserError(f"an input is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            click.echo(f"topicscale: {'terminated' if terminated else 'interrupted'}", err=True)
            raise click.exceptions.Exit(143 if terminated else 130) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="topicscale")
def cli():
    """Topic models for corpora larger than memory, fitted by stochastic variational inference.

    \b
    Typical session:
      topicscale prepare speeches.jsonl --heldout 0.1 -o corpus # also writes corpus-heldout
      topicscale fit corpus -k 50 -o model                      # trains until it stops improving
      topicscale topics model
      topicscale eval model corpus-heldout                      # documents it never saw
      topicscale eval model --coherence c_npmi,c_v              # in the training corpus
      topicscale report model -o report.html                    # a page to look at it
    """


# ------------------------------------------------------------------------------------ prepare
@cli.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="Corpus folder to write: new, empty, or a corpus (replaced atomically; a folder holding "
                   "anything else is refused).")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "uci", "ldac", "mm"]),
              help="Input format; guessed from the file name when omitted "
                   "(docword*.txt: uci, .ldac: ldac, .mm/.mtx: mm, .jsonl: jsonl, else text).")
@click.option("--vocab", help="UCI / LDA-C / MatrixMarket: the vocabulary file. Text: a fixed "
              "vocabulary (word-per-line file, corpus folder or model folder); unknown words are "
              "dropped and counted.")
@click.option("--heldout", help="Hold out N documents, or a FRACTION of them, into OUTPUT-heldout.")
@click.option("--heldout-output", type=click.Path(file_okay=False),
              help="Where to write the held-out corpus [default: OUTPUT-heldout].")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the held-out draw.")
@click.option("--min-df", type=Count(1), default=2, show_default=True,
              help="Text: keep words in at least this many documents.")
@click.option("--max-df", type=Finite(0, 1, min_open=True), default=0.5, show_default=True,
              help="Text: drop words in more than this fraction of documents.")
@click.option("--max-vocab", type=Count(0), default=0,
              help="Text: keep at most this many of the most frequent words (0: no limit).")
@click.option("--stopwords",
              help="Text: 'english' (built-in list), 'none', or a file with one word per line "
                   "[default: english, or with --vocab CORPUS|MODEL that corpus's].")
@click.option("--token-pattern", default=None,
              help="Text: regular expression of a token [default: runs of 2+ letters, or with --vocab "
                   "CORPUS|MODEL that corpus's].")
@click.option("--text-field", default="text", show_default=True, help="JSON lines: field holding the text.")
@click.option("--id-field", default="id", show_default=True, help="JSON lines: field holding the document id.")
@click.option("--keep-order", is_flag=True,
              help="Text: also keep each document's words in reading order, so that `eval --coherence` "
                   "can count co-occurrences in sliding windows (4 bytes a token on disk).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def prepare(inputs, output, fmt, vocab, heldout, heldout_output, seed, min_df, max_df, max_vocab,
            stopwords, token_pattern, text_field, id_field, keep_order, as_json, quiet):
    """Convert INPUTS (text, JSON lines, UCI, LDA-C, MatrixMarket; '-' is stdin) into a corpus.

    Text is lower-cased, tokenised and stripped of stop words; the vocabulary is pruned by
    --min-df, --max-df and --max-vocab. Empty documents are skipped and counted.
    """
    from .atomic import check_named
    from .corpus.prepare import prepare as run
    from .corpus.readers import inputs_format
    check_named(output)
    if heldout_output is not None:
        check_named(heldout_output, "--heldout-output")
    _refuse_unused_prepare_options(inputs_format(inputs, fmt), vocab)
    summary = run(inputs, output, fmt=fmt, vocab=vocab, heldout=_heldout_spec(heldout),
                  heldout_output=heldout_output, seed=seed, min_df=min_df, max_df=max_df,
                  max_vocab=max_vocab, stopwords=stopwords, token_pattern=token_pattern, text_field=text_field,
                  id_field=id_field, keep_order=keep_order, progress=_show_progress(quiet))
    lines = [f"wrote {summary['output']}: {summary['documents']} documents, {summary['tokens']} tokens, "
             f"{summary['vocabulary']} words"]
    if "heldout_output" in summary:
        lines.append(f"wrote {summary['heldout_output']}: {summary['heldout_documents']} held-out documents")
    held_dropped = summary.get("heldout_dropped_tokens", 0)
    lines.append(f"skipped {summary['skipped_empty']} empty documents; "
                 f"dropped {summary['dropped_tokens'] + held_dropped} out-of-vocabulary tokens"
                 + (f" ({held_dropped} of them held out)" if held_dropped else ""))
    _warn_unrecorded_tokenizer(summary, "give --token-pattern and --stopwords to match")
    if summary.get("stale_heldout"):
        click.echo(f"topicscale: warning: {summary['stale_heldout']} is left from an earlier prepare with "
                   f"--heldout: its documents may now be in {summary['output']} too, so a model of that corpus "
                   "scored on it is scored on training documents (delete it, or prepare with --heldout)", err=True)
    if summary.get("repeated_ids"):
        click.echo(f"topicscale: warning: {summary['repeated_ids']} document(s) repeat an earlier one's id "
                   f"(first {summary['first_repeated_id']}); `infer` writes their rows under the same id, "
                   "and `classify` refuses to match labels to them by id", err=True)
    _emit(as_json, summary, lines)


def _warn_unrecorded_tokenizer(summary, remedy):
    """A warning when text was tokenised by the defaults for a --vocab (or infer's model) that
    records no tokenizer: its words may have been made another way."""
    if summary.get("tokenizer_unrecorded"):
        click.echo(f"topicscale: warning: {summary['tokenizer_unrecorded']} records no tokenizer (fitted from a "
                   "matrix, or prepared by an older topicscale), so the text was tokenised with the defaults; "
                   f"if its words were made another way, {remedy}", err=True)


def _refuse_unused_prepare_options(fmt, vocab):
    """A usage error for options given on the command line that this input would ignore: the
    text options with a bag of words, the vocabulary's pruning with a fixed --vocab, and the JSON
    fields with plain text."""
    from . import options
    from .corpus.readers import BOW_FORMATS
    text_only = ("min_df", "max_df", "max_vocab", "stopwords", "token_pattern", "text_field", "id_field")
    if fmt in BOW_FORMATS:
        unused, why = text_only, f"{fmt} input is already a bag of words"
    elif vocab:
        unused, why = ("min_df", "max_df", "max_vocab"), "--vocab fixes the vocabulary"
    else:
        unused, why = ("text_field", "id_field") if fmt == "text" else (), "text input has no JSON fields"
    given = options.given_flags(unused)
    if given:
        raise click.UsageError(f"{', '.join(given)} {'do' if len(given) > 1 else 'does'} not apply: {why}")


# -------------------------------------------------------------------------------------- synth
@cli.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Corpus folder to write.")
@click.option("-n", "--documents", type=Count(1), required=True, help="Documents to draw.")
@click.option("--doc-length", type=Finite(1, 1e12), default=100.0, show_default=True,
              help="Mean document length (Poisson, each document at least one word).")
@click.option("--alpha", type=Finite(0, min_open=True), default=0.1, show_default=True,
              help="Dirichlet prior of the documents' topic proportions.")
@click.option("--heldout", type=Count(0), default=0, help="Also draw this many documents into OUTPUT-heldout.")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the draws: same seed, same corpus (OUTPUT-heldout draws with the next seed).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def synth(model, output, documents, doc_length, alpha, heldout, seed, as_json, quiet):
    """Draw a synthetic corpus from LDA with MODEL's topics (E[beta]) and stream it to shards.

    Topics fitted on a real corpus keep word statistics realistic: a way to make corpora of
    any size for scaling tests. An HDP's are those `topics` lists (carrying 99% of the weight or
    of the tokens), not the near-uniform rest of its truncation.
    """
    from .atomic import check_named
    from .corpus.shards import check_corpus_output
    from .corpus.synth import synthesize
    from .exports import exported_topics
    from .models import load_model
    check_named(output)
    heldout_output = output.rstrip("/") + "-heldout"
    for path in (output, heldout_output) if heldout else (output,):     # before drawing any
        check_corpus_output(path)
    m = load_model(model)
    topics = exported_topics(m)
    beta = m.expected_beta()[:, topics].T
    drawn_from = {"model": str(Path(model).resolve()), "topics": [int(k) for k in topics]}
    summary = synthesize(beta, m.vocab, output, documents, doc_length, alpha, seed=seed,
                         progress=_show_progress(quiet), drawn_from=drawn_from)
    if heldout:
        summary["heldout"] = synthesize(beta, m.vocab, heldout_output, heldout, doc_length,
                                        alpha, seed=seed + 1, id_prefix="h", drawn_from=drawn_from)["output"]
    _emit(as_json, summary, [f"wrote {summary['output']}: {summary['documents']} documents drawn from "
                             f"{summary['topics']} topics"
                             + (f", and {heldout} held-out ones to {summary['heldout']}" if heldout else "")])


# --------------------------------------------------------------------------------------- info
@cli.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def info(path, as_json):
    """Describe a corpus (documents, tokens, vocabulary, non-zeros) or a model (hyperparameters;
    diversity: the share of distinct words among all topics' top 25; repeated topics: those
    sharing more than half of their top 10 words with another)."""
    if (Path(path) / "manifest.json").is_file():
        from .corpus.shards import Corpus
        c = Corpus(path)
        c.check_files()
        payload = {"type": "corpus", "path": path, "documents": c.n_docs, "tokens": c.n_tokens,
                   "vocabulary": c.n_words, "nnz": c.nnz, "shards": len(c.shards),
                   **c.manifest.get("stats", {})}
    else:
        from .models import load_model
        from .models.store import MODEL_FILE
        if Path(path).is_dir() and not (Path(path) / MODEL_FILE).exists():
            from .classify.model import FILENAME as CLASSIFIER_FILE
            if (Path(path) / CLASSIFIER_FILE).exists():
                raise TopicscaleError(f"{path} holds a classifier: `topicscale classify info {path}` describes it")
            from .runs import CHECKPOINT_FILE
            if (Path(path) / CHECKPOINT_FILE).exists():
                raise TopicscaleError(f"{path} holds an unfinished run and no model yet: `topicscale fit "
                                      f"--resume {path}` continues it")
            raise TopicscaleError(f"{path} is neither a topicscale corpus (no manifest.json) nor a model "
                                  f"(no {MODEL_FILE})")
        m = load_model(path)
        from .coherence import model_diversity, model_repeats
        payload = {"type": "model", "path": path, "model": m.kind, **m.describe(),
                   "diversity": model_diversity(m), "repeated_topics": model_repeats(m), **m.settings}
    _emit(as_json, payload, [f"{k:<16} {v}" for k, v in payload.items()])


# ---------------------------------------------------------------------------------------- fit
def _load_config(ctx, param, value):
    if value:
        from .config import load_defaults
        ctx.default_map = {**(ctx.default_map or {}), **load_defaults(value, ctx.command, ctx)}
    return value


def _declared_options(command):
    """Add the fit options declared in topicscale/options.py (their help names where each applies)."""
    from . import options
    for option in reversed(options.PART_OPTIONS + options.RUN_OPTIONS):
        kwargs = {"help": options.help_text(option), "default": None}
        if option.type is not None:
            kwargs["type"] = option.type
        command = click.option(*option.flags, **kwargs)(command)
    return command


@cli.command()
@click.argument("corpus", required=False, type=CorpusLocation())
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Model folder to write.")
@click.option("--config", callback=_load_config, is_eager=True, expose_value=False,
              help="TOML preset (a file or a name from configs/, e.g. svi-paper); flags override it. "
                   "A setting in a preset counts as given.")
@click.option("--model", type=click.Choice(sorted(registry.MODELS)), help="The topic model.  [default: lda]")
@click.option("--algorithm", type=click.Choice(registry.algorithm_names()),
              help="Global step.  [default: svi]")
@click.option("--local", "local", type=click.Choice(registry.local_names()),
              help="Local (per-document) step [default: the first of the algorithm's in the table "
                   "below, or the one its given options belong to (e.g. --max-iter: meanfield). LDA svi: "
                   f"cvb0 when the corpus's documents average under {registry.SHORT_DOCUMENT_WORDS} distinct "
                   f"words and the run makes at least {registry.FEW_UPDATES} minibatch updates (counted as "
                   "passes x documents / batch size; under "
                   f"{registry.MANY_UPDATES}: with {registry.SHORT_RUN_BURN_IN} burn-in passes a document and "
                   "tau a sixteenth of the updates; a run bounded by --time-limit alone counts as many), else "
                   f"meanfield; HDP: cvb0 on such documents from {registry.MANY_UPDATES} updates on, and "
                   f"at tau {registry.SMALL_CORPUS_TAU:g} on any documents when it trains until it stops and its "
                   f"passes make {registry.FEW_UPDATES} to {registry.MANY_UPDATES - 1} updates, else meanfield].")
@_declared_options
@click.option("--resume", type=click.Path(exists=True, file_okay=False),
              help="Continue the interrupted run in this model folder (needs no CORPUS; its settings "
                   "come from the checkpoint; only --threads, --report, --scheduler and --workers may "
                   "be given: without the last two it continues in this process).")
@click.option("--force", is_flag=True, help="Replace an existing model or unfinished run in OUTPUT.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_context
def fit(ctx, corpus, output, resume, as_json, quiet, force, **config):
    """Fit a topic model to CORPUS (a folder written by `topicscale prepare`).

    Minibatches are sampled from the disk-backed shards; each is fitted by a numba kernel in
    parallel over its documents, then folded into the topics with step size rho_t.
    Per-minibatch metrics go to OUTPUT/metrics.jsonl. Checkpoints are written atomically;
    Ctrl-C (or SIGTERM) stops after the current minibatch with a partial model that
    `--resume` continues (exit status 130 / 143); a second Ctrl-C aborts at once.
    An option that does not apply to the chosen model, algorithm and local step is refused.

    \b
    Accepted combinations (the first local step is the default, but see --local):
    {matrix}
    """
    from . import options
    from .runs import run_fit
    _require_dask(config)
    worker_threads = config["threads"]
    if resume:
        if corpus or output:
            raise click.UsageError("--resume takes the model folder only (no CORPUS, no -o)")
        options.check_resume(dict(config, force=force or None))
        options.check_cluster(config)
        config = {"output": resume, "threads": _set_threads(config["threads"]),
                  "report": config["report"] and str(Path(config["report"]).resolve()),
                  **{name: config[name] for name in options.CLUSTER_OPTIONS}}
    else:
        if not corpus or not output:
            raise click.UsageError("CORPUS and -o OUTPUT are required (or --resume MODEL)")
        paths = {k: config[k] and str(Path(config[k]).resolve()) for k in ("heldout", "init_model", "report")}
        config = dict(config, **paths, corpus=_corpus_location(corpus), output=output, force=force)
        config["threads"] = _set_threads(config["threads"])
    if config["report"]:                        # refused now rather than after the training
        from .report import check_output
        check_output(config["report"], "--report")
    say = lambda msg: click.echo(msg, err=True)
    summary, signum = run_fit(config, resume=bool(resume), progress=_show_progress(quiet), say=say,
                              worker_threads=worker_threads)
    out = resume or output
    lines = [f"{'stopped' if signum else 'wrote'} {out}: K={summary['topics']}, local step "
             f"{summary['local']}, {summary['docs']} documents "
             f"in {summary['train_seconds']:.2f} s ({summary['docs_per_s'] or 0:.0f} docs/s, "
             + (f"{_counted(summary['workers'], 'dask worker')} of {_counted(summary['worker_threads'], 'thread')}"
                if summary.get("workers") else _counted(summary["threads"], "thread"))
             + (f"; kernels loaded in {summary['kernel_load_seconds']:.2f} s)"
                if summary.get("kernel_load_seconds") is not None else ")")]
    if summary.get("dropped_topics"):
        lines.append(f"continued the {_counted(summary['topics'], 'topic')} of {summary['init']} that its "
                     f"merges kept, numbered from 0 in their order (the {summary['dropped_topics']} they "
                     "emptied are dropped)")
    if summary.get("started_over"):
        from .polish import outcome
        first = summary["started_over"]
        lines.append(f"the near-uniform start left {first['repeated_topics']} of {first['listed_topics']} topics "
                     f"repeating another ({first['docs']} documents, polish: {outcome(first['polish'])}; "
                     f"{first['train_seconds']:.2f} s, counted above): started over from a random "
                     "assignment (--start auto)")
    if summary.get("scored_on"):
        lines.append(_convergence_line(summary))
    elif summary.get("stopped") in ("time_limit", "max_docs"):
        lines.append(f"stopped by --{summary['stopped'].replace('_', '-')}")
    if summary.get("merge"):
        lines.extend(_merge_line(summary["merge"]))
    if summary.get("polish"):
        merged = summary.get("merge", {}).get("merged")
        lines.append(_polish_line(summary["polish"], "the merged passes'" if merged else "the passes'"))
    if summary.get("merge_after_polish"):
        lines.extend(_merge_line(summary["merge_after_polish"], " that the sweeps left"))
    if summary.get("sticks_refit"):
        s = summary["sticks_refit"]
        lines.append(f"then refit the topics' weights (the corpus sticks) to the topics they became, on "
                     f"{s['docs']} training documents ({s['rounds']} rounds) in {s['seconds']:.2f} s (counted above)")
    if summary.get("repeated_topics"):
        lines.append(_repeats_line(summary))
    if _truncation_binds(summary):
        lines.append(f"the HDP lists {summary['listed_topics']} of its {summary['truncation']} topics: the "
                     "truncation (-k), not the corpus, bounds how many it uses; a larger -k lets it use "
                     "more, in proportionally more time (held-out scores tell whether they pay: "
                     "`topicscale eval`)")
    if summary.get("heldout"):
        h = summary["heldout"]
        by = {"common": "the common fold-in", "gibbs": "the Gibbs fold-in"}.get(h.get("protocol"),
                                                                               "its own predictive")
        lines.append(f"held-out per-word log likelihood {h['per_word_ll']:.4f} by {by} "
                     f"(perplexity {h['perplexity']:.1f}, {h['documents']} documents)")
    if summary.get("report"):
        lines.append(f"wrote the report {summary['report']}")
    _emit(as_json, summary, lines)
    if signum:
        ctx.exit(128 + signum)


def _polish_line(p, before="the passes'"):
    """What the polish did, as one line; `before`: whose topics the sweeps started from."""
    if p.get("skipped"):
        return f"no polish sweeps: {p['skipped']}"
    flat = f"{p['flat_sweeps']} sweeps at a flatter prior and " if p.get("flat_sweeps") else ""
    line = f"then {flat}{p['sweeps']} polish sweeps over the corpus in {p['seconds']:.2f} s (counted above)"
    if "kept" not in p:
        return line
    scores = p["scores"]
    if len(scores) == 1:
        return f"{line}, too few to score: kept {before} topics"
    repeating = ""
    if p.get("passes_from_assignment"):
        repeating = " (the assignment start's, where the sweeps start from: not kept)"
    elif p.get("passes_ruled_out"):
        repeating = f" ({p['passes_repeating']} of whose topics repeat another: a tenth or more, so not kept)"
    elif p.get("passes_repeating"):
        repeating = (f" ({p['passes_repeating']} of whose topics repeat another: they had to score "
                     f"{p['repeat_margin']} higher)")
    if not p["kept"]:
        return (f"{line}; at best they scored {max(scores[1:]):.4f} on {p['scored_on']} against {before} "
                f"{scores[0]:.4f}{repeating}: kept {before} topics")
    return (f"{line}; kept the topics after {p['kept']}: {max(scores[1:]):.4f} on {p['scored_on']} against "
            f"{before} {scores[0]:.4f}{repeating}")


def _merge_line(m, which=""):
    """What --merge did, as one line (none when no topics repeated one another); `which` says
    which topics repeated."""
    if m.get("skipped"):
        return [f"no merges of repeating topics: {m['skipped']}"]
    if "scores" not in m:
        return []
    what = f"{m['scores'][1]:.4f} on {m['scored_on']} against {m['scores'][0]:.4f}"
    if m.get("undone"):
        return [f"merging {m['undone']} repeating topics{which} scored {what}: kept the topics as they were"]
    if not m["merged"]:
        return [f"no repeating topics{which} merged: each merge scored lower on {m['scored_on']}"]
    every = " (a tenth of the topics or more repeated another: every repeat merged)" if m.get("every_repeat") else ""
    return [f"then merged {m['merged']} topics{which} into topics they repeated{every} in {m['seconds']:.2f} s "
            "(counted above): " + what]


FULL_TRUNCATION = 0.95     # share of an HDP's truncation listed at which fit says the truncation binds


def _truncation_binds(summary):
    """An HDP that lists nearly all of its truncation's topics: more might suit the corpus."""
    return (summary.get("model") == "hdp"
            and summary.get("listed_topics", 0) >= FULL_TRUNCATION * summary["truncation"])


def _counted(n, thing):
    return f"{n} {thing}" + ("" if n == 1 else "s")


def _size(n_bytes):
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.0f} MiB"


def _repeats_line(summary):
    """How many topics repeat another, and when they are many (a tenth of the listed topics or
    more) what to try: fewer topics (not the HDP's truncation), sweeps that pull them apart when
    none were kept (LDA, HDP), an LDA's assignment start (where the passes from the near-uniform
    one leave topics that sweeps do not part; not after --init or with learned priors, which
    refuse it), the HDP's
    merge when none ran."""
    from .coherence import REPEAT_WORDS, many_repeat
    repeated, kind = summary["repeated_topics"], summary.get("model")
    line = f"{repeated} topics repeat another's top words (more than half of their top {REPEAT_WORDS} shared)"
    if not many_repeat(repeated, summary.get("listed_topics", summary["topics"])):
        return line
    tries = [] if kind == "hdp" else ["fewer topics (-k) may suit this corpus"]
    polish = summary.get("polish")
    if kind in ("lda", "hdp") and (not polish or (polish.get("kept") == 0 and not polish.get("skipped"))):
        tries.append("--polish 20 pulls them apart (sharper topics, often a lower held-out score)")
    if (kind == "lda" and summary.get("start") != "assignment" and summary.get("sweeps_bytes")
            and "init" not in summary and "learned_priors" not in summary):  # see _auto_may_take_assignment
        tries.append(f"--start assignment keeps them apart (one pass from a random assignment, then the "
                     f"polish's sweeps, whose numbers take {_size(summary['sweeps_bytes'])}, in "
                     "memory or in a file in the output folder; see --polish)")
    if kind == "hdp" and "merge" not in summary:
        tries.append("--merge --heldout CORPUS merges those the held-out documents do not tell apart")
    return "; ".join([line] + tries)


def _convergence_line(summary):
    """Why a run without --passes stopped where it did."""
    from .convergence import MAX_PASSES, MIN_GAIN, stopped_converging
    scores, on = summary.get("pass_scores", []), summary["scored_on"]
    gain = f"{scores[-1] - scores[-2]:+.4f}" if len(scores) >= 2 else None
    if summary["stopped"] == "converged":
        waited = max((p for p in range(1, len(scores)) if stopped_converging(scores, MIN_GAIN, p)), default=1)
        best = max(scores[:-waited])
        return (f"converged after {len(scores)} passes: the last {waited} did not beat {best:.4f} on {on} "
                f"by {MIN_GAIN} nats a word")
    if summary["stopped"] == "passes" and summary.get("start") == "assignment" and summary.get("polish"):
        return "one pass from the assignment start; the polish's sweeps train on from there"
    if summary["stopped"] == "passes":
        return f"stopped at the cap of {MAX_PASSES} passes, the last still gaining {gain} nats a word on {on}"
    return f"stopped ({summary['stopped'] or 'by a signal'}) after {len(scores)} scored passes"


def _fit_help():
    from . import options
    return inspect.cleandoc(fit.callback.__doc__).replace("{matrix}", "\n".join("  " + line for line in options.matrix_lines()))


fit.help = _fit_help()


# --------------------------------------------------------------------------------------- eval
@cli.command("eval")
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.argument("heldout", required=False, metavar="[HELDOUT|CORPUS]", type=CorpusLocation())
@click.option("--coherence", "measures", metavar="LIST",
              help="Instead: the coherence of the topics in CORPUS (default: the training corpus), "
                   "any of u_mass,c_npmi,c_uci,c_v (as gensim's CoherenceModel), their diversity "
                   "and repeated topics; saved in MODEL/coherence.json.")
@click.option("--top-n", type=Count(2),
              help="--coherence: top words of each topic scored.  [default: 10]")
@click.option("--window", type=Count(0),
              help="--coherence: c_uci, c_npmi and c_v count co-occurrences in sliding windows of "
                   "this many tokens (CORPUS prepared with --keep-order), or 0: in whole documents "
                   "[default: gensim's 10 (c_v: 110) when CORPUS keeps order, else 0]. u_mass "
                   "always counts documents.")
@click.option("--relevance", type=Finite(0, 1), metavar="LAMBDA",
              help="--coherence: score the top words as `topics --relevance` ranks them.  [default: 1.0]")
@click.option("--seed", type=SEED, help="Seed of the observed / held-out word split (and of the sampler of --fold-in gibbs) [default: 0].")
@click.option("--fold-in", "fold_in", type=click.Choice(["common", "gibbs", "own"]),
              help="LDA models: common = mean-field fold-in on E[beta] with alpha = 1/K, the same for "
                   "every LDA model however it was trained (and evaluate_topics, the benchmarks' "
                   "protocol); gibbs = the same by collapsed Gibbs sampling, the posterior predictive "
                   "that mean-field approximates (slower; mean-field favours blurred topics on short "
                   "documents); own = the model's own local step and prior. HDP and CTM models: own "
                   "predictive by default; common or gibbs score the topics `export` writes as those of "
                   "an LDA. [default: common; HDP, CTM: own]")
@click.option("--threads", type=int, help="Threads, 1 to the cores [default: all cores; a dask worker 1].")
@_cluster_options
@click.option("--json", "as_json", is_flag=True, help="Print {per_word_ll, perplexity, documents, unscored_documents, heldout_tokens, protocol} (protocol: common, gibbs or own; CTM: also per_word_ll_paper_predictive, the paper's softmax(E[theta]) plug-in); with --coherence {coherence: {measure: {mean, per_topic, window}}, top_n, relevance, reference, topics, diversity, repeated_topics, absent_words}.")
def eval_(model, heldout, measures, top_n, window, relevance, seed, fold_in, threads, scheduler, workers,
          as_json):
    """Per-word predictive log likelihood of HELDOUT by document completion (SVI paper, sec. 4),
    or with --coherence how readable the topics are.

    Each document's distinct words are split at random into halves; the document's topic
    proportions are fitted on one half with the topics fixed, and the other half is predicted.
    By default an LDA model's proportions are fitted by one protocol for all (--fold-in common:
    mean-field on E[beta], alpha = 1/K), so scores of different fits compare; the first line of
    the output names the protocol.

    With --coherence, the top words of the topics `topics` lists (HDP: those carrying 99% of the
    weight or of the tokens) are scored by how often they share documents (or sliding windows) of
    CORPUS (words matched by string; a top word in no document of CORPUS is dropped from its
    topic, as gensim does); diversity is the share of distinct words among all topics' top 25,
    and a topic is repeated when it shares more than half of its top 10 words with another.
    """
    if measures is not None:
        given = [flag for flag, value in (("--seed", seed), ("--fold-in", fold_in), ("--threads", threads),
                                          ("--scheduler", scheduler), ("--workers", workers))
                 if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} {'go' if len(given) > 1 else 'goes'} with the held-out "
                                   "score, not --coherence")
        return _eval_coherence(model, heldout, measures, 10 if top_n is None else top_n, window,
                               1.0 if relevance is None else relevance, as_json)
    given = [flag for flag, value in (("--top-n", top_n), ("--window", window), ("--relevance", relevance))
             if value is not None]
    if given:
        raise click.UsageError(f"{' and '.join(given)} {'go' if len(given) > 1 else 'goes'} with --coherence")
    if heldout is None:
        raise click.UsageError("HELDOUT is required (or --coherence)")
    seed, given_fold_in, fold_in = seed or 0, fold_in, fold_in or "common"
    from .corpus.shards import open_corpus
    from .evaluate import COMMON_KINDS, check_scorable, describe_protocol, evaluate_exported, evaluate_model
    from .models import load_model
    _require_dask({"scheduler": scheduler, "workers": workers})
    worker_threads = threads
    _set_threads(threads)
    m = load_model(model)
    with _cluster(scheduler, workers, worker_threads) as executor:
        scored = open_corpus(_corpus_location(heldout))
        check_scorable(scored)
        if m.kind not in COMMON_KINDS and given_fold_in in ("common", "gibbs"):    # its exported topics
            result = evaluate_exported(m, scored, seed=seed, executor=executor, fold_in=given_fold_in)
        else:
            result = evaluate_model(m, scored, fold_in=fold_in, seed=seed, executor=executor)
    result["unscored_documents"] = scored.n_docs - result["documents"]
    lines = [f"protocol: {describe_protocol(m, result['protocol'])}",
             f"per-word log likelihood {result['per_word_ll']:.4f}", f"perplexity {result['perplexity']:.2f}",
             f"{result['documents']} documents, {result['heldout_tokens']:.0f} held-out tokens"
             + _unscored(result["unscored_documents"], scored.n_docs)]
    if "per_word_ll_paper_predictive" in result:
        lines.append(f"with the paper's plug-in softmax(E[theta]): {result['per_word_ll_paper_predictive']:.4f}")
    _emit(as_json, result, lines)


def _unscored(left, n_docs):
    """Why a completion left `left` of the corpus's documents unscored (text output)."""
    return (f" ({left} of {n_docs} not scored: a document needs two distinct words to be split)"
            if left else "")


def _eval_coherence(model, reference, measures, top_n, window, relevance, as_json):
    """`eval --coherence`: score, save MODEL/coherence.json (or warn that it cannot), print."""
    from . import coherence
    from .corpus.shards import Corpus
    from .models import load_model
    names = coherence.parse_measures(measures)
    if window is not None and set(names) == {"u_mass"}:
        raise click.UsageError("--window goes with c_uci, c_npmi and c_v: u_mass counts documents")
    m = load_model(model)
    if reference is None:
        reference = m.settings.get("corpus")
        if not reference:
            raise TopicscaleError(f"{model} records no training corpus: give the reference CORPUS")
        if not Path(reference, "manifest.json").is_file():
            raise TopicscaleError(f"the training corpus {reference} recorded in {model} is gone: "
                                  "give the reference CORPUS")
    result = coherence.evaluate_coherence(m, Corpus(reference), names, top_n, window, relevance)
    try:
        saved = f"wrote {coherence.save_result(model, m, result)}"
    except TopicscaleError as exc:             # a read-only model folder: the scores are still printed
        saved = f"topicscale: warning: not saved ({exc}); `topics` and `report` will not show them"
    fmt = lambda v: "-" if v is None else f"{v:.4f}"
    counted = lambda w: f"windows of {w} tokens" if w else "documents"
    by = f"by relevance {relevance:g}" if relevance < 1 else None
    ranked = f", {by}" if by else ""
    lines = [f"reference {result['reference']}: top {top_n} words{f' ({by})' if by else ''} of "
             f"{len(result['topics'])} topics"]
    lines += [f"{name:<8} {fmt(r['mean'])}  ({counted(r['window'])})" for name, r in result["coherence"].items()]
    lines.append(f"diversity {fmt(result['diversity'])} (distinct share of the top "
                 f"{coherence.DIVERSITY_WORDS} words{ranked})")
    lines.append(f"repeated {result['repeated_topics']} topics (sharing more than half of their top "
                 f"{coherence.REPEAT_WORDS} words with another{ranked})")
    if result["absent_words"]:
        lines.append(f"not in the reference (dropped): {' '.join(result['absent_words'])}")
    _emit(as_json, result, lines)
    click.echo(saved, err=True)


# ------------------------------------------------------------------------------------- topics
RELEVANCE_HELP = ("Rank each topic's words by relevance (Sievert and Shirley 2014, the ranking LDAvis offers): "
                  "LAMBDA log p(w|k) + (1 - LAMBDA) log(p(w|k) / p(w)), p(w) the word's share of the "
                  "model's training tokens (LDAvis takes it from the corpus). 1 ranks by probability; below 1, words "
                  "frequent in every topic give way to those that set the topic apart, and low values bring up "
                  "rare words (LDAvis's study found 0.6 easiest to read).")


def _largest_per_column(matrix, n, block_rows=4096):
    """Row indices of the n largest entries of each column (coherence.largest_per_column)."""
    from .coherence import largest_per_column
    return largest_per_column(matrix, n, block_rows)


@cli.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.option("-n", "--words", "n_words", type=Count(1), default=10, show_default=True,
              help="Words per topic.")
@click.option("--json", "as_json", is_flag=True, help="JSON list of {topic, weight, tokens, words, weights, "
              "repeats}, and coherence {measure: score} when `eval --coherence` saved it for the model "
              "and the same --relevance; "
              "tokens is the topic's share of the training tokens (an HDP's weight is its stick weight).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV: topic, weight, rank, word, probability.")
@click.option("--all", "show_all", is_flag=True,
              help="Every topic, also those that carry almost no weight or tokens.")
@click.option("--relevance", type=Finite(0, 1), default=1.0, show_default=True, metavar="LAMBDA",
              help=RELEVANCE_HELP)
@click.option("--correlations", "n_pairs", type=Count(1), is_flag=False, flag_value=10, default=None,
              metavar="[N]", help="CTM models: after the topics, the N topic pairs with the highest "
              "correlation in Sigma_0 as 'topic i  topic j  correlation' lines (N: 10 if omitted). With "
              "--json the output becomes {topics: [...], correlations: K x K matrix, pairs: [...]}.")
def topics(model, n_words, as_json, as_csv, show_all, relevance, n_pairs):
    """Top words of the topics, with each topic's share of the corpus, and the listed topics each
    repeats (shares more than half of its top 10 words with), as `[repeats 3 7]`.

    The share is of the training tokens for LDA and the CTM. An HDP's is its corpus weight (the
    stick weight E[sigma_k], which counts the documents that use a topic), by which it lists and
    orders its topics: a topic of a few long documents holds more of the tokens than of the
    weight (--json gives both).

    With --relevance below 1 the words are ranked by relevance, not probability, and a topic's
    repeats are counted on those words."""
    from .coherence import listed_top_words, relevance_scale, repeats_by_topic, saved_scores
    from .models import load_model
    if as_json and as_csv:
        raise click.UsageError("--json and --csv are two output formats: give one")
    m = load_model(model)
    if n_pairs is not None and not hasattr(m, "correlations"):
        raise TopicscaleError(f"--correlations needs a correlated topic model (fit with --model ctm); "
                              f"{model} is {m.kind}")
    if n_pairs is not None and as_csv:
        raise TopicscaleError("--correlations does not go with --csv (use --json)")
    pairs = m.strongest_pairs(n_pairs) if n_pairs is not None else []
    tokens = m.token_weights()
    weights = m.topic_weights() if m.kind == "hdp" else tokens     # LDA's and a CTM's are the tokens' shares
    scores = saved_scores(model, m, relevance) if as_json else {}     # `eval --coherence` saved them
    scale = relevance_scale(m, relevance)
    repeats = repeats_by_topic(m, scale=scale)             # --all: the unlisted topics repeat none
    rows = []
    for k, top, row in listed_top_words(m, n_words, scale, show_all):
        rows.append({"topic": k, "weight": float(weights[k]), "tokens": float(tokens[k]),
                     "words": [m.vocab[i] for i in top],
                     "weights": [float(x) for x in row], "repeats": repeats.get(k, [])})
        if k in scores:
            rows[-1]["coherence"] = scores[k]
    if as_json:
        click.echo(json.dumps(rows if n_pairs is None else {
            "topics": rows, "correlations": m.correlations().tolist(),
            "pairs": [{"topics": [i, j], "correlation": r} for i, j, r in pairs]}))
    elif as_csv:
        import csv
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(["topic", "weight", "rank", "word", "probability"])
        for r in rows:
            for rank, (w, p) in enumerate(zip(r["words"], r["weights"]), 1):
                out.writerow([r["topic"], f"{r['weight']:.6g}", rank, w, f"{p:.6g}"])
    else:
        for r in rows:
            also = f"  [repeats {' '.join(map(str, r['repeats']))}]" if r["repeats"] else ""
            click.echo(f"{r['topic']:>4}  {r['weight']:6.1%}  {' '.join(r['words'])}{also}")
        for i, j, r in pairs:
            click.echo(f"topic {i}  topic {j}  {r:+.3f}")


# -------------------------------------------------------------------------------------- infer
@cli.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", default="-", type=click.Path(dir_okay=False, allow_dash=True),
              help="FILE.tsv or FILE.csv (id then K proportions), FILE.npy (ids in FILE.ids.txt) or "
                   "FILE.parquet (pip install topicscale[parquet]): the extension picks the format. "
                   "[default: -, standard output as TSV]")
@click.option("--json", "as_json", is_flag=True,
              help='On standard output, a JSON object a document: {"id": ..., "theta": [K proportions]}.')
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "uci", "ldac", "mm"]),
              help="Format of raw INPUTS (a prepared corpus folder needs none).")
@click.option("--text-field", help="JSON lines INPUTS: field holding the text.  [default: text]")
@click.option("--id-field", help="JSON lines INPUTS: field holding the document id.  [default: id]")
@click.option("--threads", type=int, help="Threads, 1 to the cores [default: all cores; a dask worker 1].")
@_cluster_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def infer(model, inputs, output, fmt, text_field, id_field, threads, scheduler, workers, quiet, as_json):
    """Topic proportions E[theta] of new documents: a prepared corpus, or raw INPUTS encoded with
    the model's vocabulary (unknown words dropped; a document left with none of its words gets the
    proportions of the model's prior). Without -o they go to standard output, a line a document."""
    from .infer import infer_proportions
    from .tables import STDOUT, require_pyarrow, table_format
    if as_json and output != STDOUT:
        raise click.UsageError("--json prints the proportions; it does not go with -o FILE")
    try:
        if table_format(output) == ".parquet":
            require_pyarrow()
    except TopicscaleError as exc:
        raise click.BadParameter(str(exc), param_hint="-o") from None
    _require_dask({"scheduler": scheduler, "workers": workers})
    worker_threads = threads
    _set_threads(threads)
    with _cluster(scheduler, workers, worker_threads) as executor:
        summary = infer_proportions(model, inputs, output, fmt=fmt, progress=_show_progress(quiet),
                                    executor=executor, shared_files=scheduler is None, as_json=as_json,
                                    fields={"text_field": text_field, "id_field": id_field})
    _warn_unrecorded_tokenizer(summary, "prepare the text with `topicscale prepare --vocab MODEL` and "
                                        "--token-pattern and --stopwords to match, then infer that corpus")
    if output != STDOUT:
        click.echo(f"wrote {output}: {summary['documents']} documents x {summary['topics']} topics", err=True)
    if summary.get("without_model_words") and not quiet:
        click.echo(f"note: documents holding none of the model's words: {summary['without_model_words']} "
                   "(their proportions are the prior's)", err=True)


# ------------------------------------------------------------------------------------- export
@cli.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(),
              help="npy: OUT.npy (OUT.vocab.txt and OUT.weights.tsv beside it); gensim: a folder; "
                   "pyldavis: OUT.json.")
@click.option("--format", "fmt", type=click.Choice(["npy", "gensim", "pyldavis"]), default="npy",
              show_default=True,
              help="npy: the K x V row-stochastic E[beta]. gensim: DIR/model by gensim's LdaModel.save "
                   "(pip install topicscale[gensim]). pyldavis: the JSON pyLDAvis.save_json writes, "
                   "from the topics and one pass over --corpus.")
@click.option("--corpus", type=click.Path(exists=True, file_okay=False),
              help="pyldavis: a prepared corpus (the model's vocabulary) whose documents size the topics.")
@click.option("--threads", type=int, help="pyldavis: threads of the documents' local step, 1 to the cores [default: all cores].")
@click.option("--json", "as_json", is_flag=True, help="Print {format, output, topics, vocabulary, files, "
              "not_carried} (gensim also alpha, eta) as JSON.")
def export(model, output, fmt, corpus, threads, as_json):
    """Write the topics for other tools. npy: a K x V matrix (rows sum to one, in the order
    `topics --all` lists them), the vocabulary in column order, and each row's topic number and
    corpus weight. gensim and pyldavis carry the topics `topics` lists by default (HDP: those
    carrying 99% of the weight or of the tokens) in that order; what a format cannot hold (CTM:
    the topic correlations) is said on stderr."""
    from .models import load_model
    suffix = {"npy": ".npy", "pyldavis": ".json"}.get(fmt)
    if suffix and not output.endswith(suffix):
        raise click.BadParameter(f"--format {fmt}: the output must end in {suffix}", param_hint="-o")
    if (corpus is None) == (fmt == "pyldavis"):
        raise click.UsageError("--format pyldavis needs --corpus" if corpus is None
                               else "--corpus goes with --format pyldavis only")
    if threads is not None and fmt != "pyldavis":
        raise click.UsageError("--threads goes with --format pyldavis only")
    m = load_model(model)
    if fmt == "npy":
        from .exports.npy import write_npy
        summary = write_npy(m, output)
    elif fmt == "gensim":
        from .exports.gensim_lda import write_gensim
        summary = write_gensim(m, output)
    else:
        from .corpus.shards import Corpus
        from .exports.ldavis import write_json
        _set_threads(threads)
        summary = write_json(m, Corpus(corpus), output)
    for what in summary["not_carried"]:
        click.echo(f"not carried: {what}", err=True)
    if as_json:
        click.echo(json.dumps(summary))
    click.echo(f"wrote {', '.join(summary['files'])} ({summary['topics']} x {summary['vocabulary']})", err=True)


# ------------------------------------------------------------------------------------- report
@cli.command()
@click.argument("model", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="FILE.html to write: one page, plots inline, nothing fetched when it is viewed.")
@click.option("--heldout", type=click.Path(exists=True, file_okay=False),
              help="Also score this held-out corpus (eval's default protocol).")
@click.option("-n", "--words", "n_words", type=Count(2), default=10, show_default=True,
              help="Top words per topic, and the words scored for coherence unless `eval --coherence` "
                   "saved scores (shown as saved, with their own count).")
@click.option("--relevance", type=Finite(0, 1), default=1.0, show_default=True, metavar="LAMBDA",
              help="Rank the top words as `topics --relevance` does.")
@click.option("--threads", type=int, help="Threads, 1 to the cores [default: all cores].")
def report(model, output, heldout, n_words, relevance, threads):
    """Write an HTML page to look at MODEL: the held-out score against training time and
    documents seen (from metrics.jsonl, written by `fit --heldout --eval-every N`), topic
    sizes, each topic's top words with its coherence (saved by `eval --coherence`, else NPMI in
    the training corpus), an intertopic distance map, and the topic correlations of a CTM or
    the effective topics of an HDP. Needs matplotlib: pip install topicscale[report]."""
    from .report import write_report
    _set_threads(threads)
    write_report(model, output, heldout=heldout, top_n=n_words, relevance=relevance)
    click.echo(f"wrote {output}", err=True)


from .classify.cli import classify  # noqa: E402  (Bayesian logistic regression on topics)
cli.add_command(classify)


def main(argv=None):
    """Entry point of bin/topicscale and the console script."""
    signal.signal(signal.SIGTERM, _terminate)
    cli.main(args=argv, prog_name="topicscale")

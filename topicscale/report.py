"""`topicscale report`: what a person looks at in a model, gathered from its folder.

`gather` collects plain numbers (numpy only): the held-out curve from MODEL/metrics.jsonl
(written by `fit --heldout`; for a partial model, also from the log of the run that was stopped),
optionally a fresh held-out score by eval's default protocol, the topics' sizes and top words
with their coherence, an intertopic distance map (principal coordinates of the Jensen-Shannon
distances between the topics, topic_map.py), and per model: the strongest positive topic
correlations of a CTM (from Sigma_0) and the stick weights of an HDP (the topics carrying 99% of
the weight). Each part that cannot be had says why in a sentence instead. `write_report` draws
the plots (report_plots.py, matplotlib) and writes one self-contained HTML page (report_html.py).
"""
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .atomic import check_not_owned, check_parent
from .errors import InputError, TopicscaleError

COHERENCE_MEASURE = "c_npmi"       # computed when none is saved (DESIGN: NPMI, as gensim computes it)
CORRELATED_PAIRS = 15              # CTM: edges of the correlation graph
MAP_MIN_TOPICS = 3                 # fewer topics make no map worth drawing


@dataclass
class ReportData:
    model_path: str
    kind: str
    facts: list                          # (name, value) pairs describing the model
    topics: list                         # shown topics: {topic, weight, words, coherence: {measure: score}, repeats}
    weights: np.ndarray                  # every topic's share of the corpus (K)
    coherence_measures: list = field(default_factory=list)
    coherence_note: str = ""
    curve: list = field(default_factory=list)   # held-out evaluations: {docs, seconds, per_word_ll}
    curve_note: str = ""                 # why there is no curve (empty when there is one)
    heldout: dict = None                 # a score computed by `report --heldout`
    final_eval: dict = None              # the last held-out evaluation in metrics.jsonl
    coordinates: np.ndarray = None       # len(topics) x 2, the intertopic distance map
    map_note: str = ""
    correlations: list = None            # CTM: [(i, j, r)], strongest positive first
    sticks: dict = None                  # HDP: {weights (descending), topics (their ids), n95, n99}
    partial: bool = False                # training was stopped (fit --resume continues it)
    relevance: float = 1.0               # how the top words are ranked (coherence.relevance_scale)


# ------------------------------------------------------------------------------ the curve
def run_records(model_path, partial_step=None):
    """The records of MODEL/metrics.jsonl in order, then, for a partial model (partial_step: its
    step), those of its stopped run's log (fit's .run.jsonl) up to the last at that step."""
    from .runs import RUN_LOG
    records = []
    path = Path(model_path) / "metrics.jsonl"
    if path.is_file():
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    raise InputError(path, number, "not a JSON line") from None
    log = Path(model_path) / RUN_LOG
    if partial_step is not None and log.is_file():
        run = []
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                try:
                    run.append(json.loads(line))
                except ValueError:              # a line cut short by a kill: the log ends there
                    break
        at_step = [i for i, r in enumerate(run) if r.get("step") == partial_step]
        records += run[:at_step[-1] + 1] if at_step else []
    return records


def heldout_curve(model_path, partial_step=None):
    """(points, note): the held-out evaluations of run_records as {docs, seconds, per_word_ll},
    in order. A folder trained again with `--init` holds several runs; their documents and training
    seconds are counted on from the runs before (each run's summary line closes it); a run that
    started over (fit --start auto) shows the points of its second start only, its documents and
    seconds counted on from the first's. note says why there is no curve (no evaluation, or only one)."""
    path = Path(model_path) / "metrics.jsonl"
    if partial_step is None and not path.is_file():
        return [], f"There is no held-out curve: {path} does not exist."
    points, docs0, seconds0, first_docs, run_start = [], 0, 0.0, 0, 0
    for record in run_records(model_path, partial_step):
        event = record.get("event")
        if event == "eval":
            points.append({"docs": docs0 + first_docs + record["docs"],
                           "seconds": seconds0 + record["train_seconds"], "per_word_ll": record["per_word_ll"]})
        elif event == "start_over":         # fit --start auto dropped this run's model and went on
            del points[run_start:]
            first_docs = record["docs"]     # (its seconds go on in the next run's records)
        elif event == "summary":
            docs0 += record["docs"]
            seconds0 += record["train_seconds"]
            first_docs, run_start = 0, len(points)
    if len(points) >= 2:
        return points, ""
    how = "(`topicscale fit CORPUS --heldout HELDOUT --eval-every N` records one every N minibatches)"
    if partial_step is not None:
        recorded = "one held-out evaluation" if points else "no held-out evaluation"
        return points, f"There is no held-out curve: the stopped run recorded {recorded} {how}."
    if points:
        return points, ("There is no held-out curve: one held-out evaluation, at the end of training "
                        "(`--eval-every N` records one every N minibatches).")
    return [], ("There is no held-out curve: the model was fitted without --heldout, so "
                f"{path.name} holds no held-out evaluation {how}.")


# ------------------------------------------------------------------------------ coherence
def topic_coherence(model_path, model, top_n, relevance=1.0):
    """(measures, {topic: {measure: score}}, note). Scores `eval --coherence` saved for this state
    of the model and this ranking of its words (`relevance`), else COHERENCE_MEASURE of the top
    words in the training corpus recorded in the model; when that corpus is gone, none, and the
    note says why."""
    from . import coherence
    ranked = f" --relevance {relevance:g}" if relevance < 1 else ""          # as eval's option
    record = coherence.saved_record(model_path, model, relevance)
    saved = coherence.record_scores(record)
    if saved:
        measures = list(dict.fromkeys(m for scores in saved.values() for m in scores))
        counted = coherence.record_windows(record)
        where = ", ".join(f"in {counted[m]} for {m}" for m in measures if m in counted)
        scored = (f" of each topic's top {record['top_n']} words" if isinstance(record.get("top_n"), int) else "")
        scored += f" in {record['reference']}" if isinstance(record.get("reference"), str) else ""
        return measures, saved, (f"Coherence{scored} as `topicscale eval --coherence{ranked}` saved it in "
                                 f"{Path(model_path) / coherence.SCORES_FILE}"
                                 + (f" (co-occurrences counted {where})." if where else "."))
    reference = model.settings.get("corpus")
    how = (f"`topicscale eval {model_path} --coherence {COHERENCE_MEASURE} REFERENCE` scores the topics in "
           "another corpus, and the report then shows those scores")
    if not reference:
        return [], {}, f"No coherence: the model records no training corpus ({how})."
    if not (Path(reference) / "manifest.json").is_file():
        return [], {}, f"No coherence: the training corpus {reference} recorded in the model is gone ({how})."
    from .corpus.shards import Corpus
    try:
        result = coherence.evaluate_coherence(model, Corpus(reference), [COHERENCE_MEASURE], top_n,
                                              relevance=relevance)
    except TopicscaleError as exc:
        return [], {}, f"No coherence: the training corpus could not be read ({exc})."
    per_topic = result["coherence"][COHERENCE_MEASURE]["per_topic"]
    scores = {k: {COHERENCE_MEASURE: s} for k, s in zip(result["topics"], per_topic)}
    return [COHERENCE_MEASURE], scores, (f"Coherence: NPMI of each topic's top {top_n} words in the "
                                         f"training corpus {reference} (as `eval --coherence c_npmi{ranked}`).")


# ------------------------------------------------------------------------------ per model
def correlation_pairs(model, n=CORRELATED_PAIRS):
    """CTM: the n topic pairs with the highest positive correlation in Sigma_0, highest first."""
    pairs = model.strongest_pairs(min(n, model.n_topics * (model.n_topics - 1) // 2))
    return [(i, j, r) for i, j, r in pairs if r > 0]


def stick_summary(model):
    """HDP: the topics' weights E[sigma_k(V)] in decreasing order, their topic numbers, and how
    many of the heaviest carry 95% and 99% of the weight."""
    from .models.hdp import carrying
    weights = model.topic_weights()
    order = np.argsort(-weights, kind="stable")
    return {"weights": weights[order], "topics": order, "n95": carrying(weights, 0.95),
            "n99": carrying(weights, 0.99)}


def describe(model, relevance=1.0, scale=None):
    """(name, value) pairs for the page's head: the model, its state and how it was trained, and
    the diversity and repeats of its top words as the page ranks them (by `relevance`, whose
    relevance_scale is `scale`)."""
    from .coherence import model_diversity, model_repeats
    s = model.settings
    facts = [("model", model.kind), ("topics", model.n_topics), ("vocabulary", model.n_words),
             ("documents seen", model.docs_seen), ("global steps", model.step)]
    facts += [(name, s[key]) for name, key in (("algorithm", "algorithm"), ("local step", "local"),
                                               ("training corpus", "corpus"), ("seed", "seed")) if key in s]
    ranked = f", by relevance {relevance:g}" if relevance < 1 else ""
    facts.append((f"diversity (top 25 words{ranked})", f"{model_diversity(model, scale=scale):.3f}"))
    facts.append((f"repeated topics (over half of the top 10 shared{ranked})", model_repeats(model, scale=scale)))
    return facts


# ------------------------------------------------------------------------------ all of it
def gather(model_path, heldout=None, top_n=10, relevance=1.0):
    """Everything the report shows, as numbers and words (ReportData). heldout: a held-out
    corpus folder to score by eval's default protocol; relevance: how the top words are ranked
    (coherence.relevance_scale)."""
    from .coherence import listed_top_words, relevance_scale, repeats_by_topic
    from .models import load_model
    model = load_model(model_path)
    weights = model.topic_weights()
    shown = [int(k) for k in model.display_order(False)]
    measures, scores, coherence_note = topic_coherence(model_path, model, top_n, relevance)
    scale = relevance_scale(model, relevance)
    repeats = repeats_by_topic(model, scale=scale)
    topics = [{"topic": k, "weight": float(weights[k]), "words": [model.vocab[i] for i in ids],
               "coherence": scores.get(k, {}), "repeats": repeats[k]}
              for k, ids, _ in listed_top_words(model, top_n, scale)]
    partial_step = model.step if model.settings.get("partial") else None
    curve, curve_note = heldout_curve(model_path, partial_step)
    data = ReportData(model_path=str(model_path), kind=model.kind, facts=describe(model, relevance, scale),
                      topics=topics, weights=weights, coherence_measures=measures,
                      coherence_note=coherence_note, curve=curve, curve_note=curve_note,
                      partial=partial_step is not None, relevance=relevance)
    data.final_eval = _last_eval(model_path, partial_step) if curve else None
    if heldout is not None:
        from .corpus.shards import Corpus
        from .evaluate import describe_protocol, evaluate_model
        result = evaluate_model(model, Corpus(heldout))
        data.heldout = dict(result, corpus=str(heldout), protocol_text=describe_protocol(model, result["protocol"]))
    if len(shown) >= MAP_MIN_TOPICS:
        from .topic_map import intertopic_coordinates
        beta = model.expected_beta()[:, shown].T
        data.coordinates = intertopic_coordinates(np.ascontiguousarray(beta))
    else:
        data.map_note = (f"No intertopic distance map: the model shows {len(shown)} topic"
                         f"{'s' if len(shown) != 1 else ''}, fewer than {MAP_MIN_TOPICS}.")
    if model.kind == "ctm":
        data.correlations = correlation_pairs(model)
    if model.kind == "hdp":
        data.sticks = stick_summary(model)
    return data


def _last_eval(model_path, partial_step=None):
    evals = [r for r in run_records(model_path, partial_step) if r.get("event") == "eval"]
    return evals[-1] if evals else None


def check_output(output, option="-o"):
    """Refuse (TopicscaleError naming `option`), before any work is done: no matplotlib (saying
    how to install it), an output path that is a folder, does not end in .html or whose folder
    does not exist, or a file of a model or corpus folder."""
    from .report_plots import require_matplotlib
    require_matplotlib()
    out = Path(output)
    if out.is_dir() or str(output).endswith(("/", os.sep)):
        raise TopicscaleError(f"{output} names a folder; give the report's file name (e.g. report.html)")
    check_parent(out)
    check_not_owned(out)
    if not str(output).endswith(".html"):
        raise TopicscaleError(f"{option}: the report must end in .html")


def write_report(model_path, output, heldout=None, top_n=10, relevance=1.0):
    """Gather, plot and write the HTML page to `output` atomically. Returns the ReportData."""
    check_output(output)
    from . import report_plots
    from .atomic import atomic_file
    from .report_html import page
    data = gather(model_path, heldout, top_n, relevance)
    html = page(data, report_plots.figures(data))
    with atomic_file(output, "w") as fh:
        fh.write(html)
    return data

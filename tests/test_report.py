"""`topicscale report` and `fit --report`: each panel's numbers come from the model folder, the
page is one self-contained file (no src or href leaves it), topic words are escaped, and
without matplotlib the command says how to install it."""
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from html.parser import HTMLParser
from xml.etree import ElementTree
from pathlib import Path

import numpy as np
import pytest

from clirun import run
from synthetic import lda_documents, planted_topics
from topicscale import report
from topicscale.coherence import evaluate_coherence
from topicscale.corpus.shards import Corpus, CorpusWriter
from topicscale.errors import TopicscaleError
from topicscale.evaluate import evaluate_model
from topicscale.models import load_model, store
from topicscale.models.lda import LDAModel

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
FIT = ["--batch-size", "20", "--seed", "3", "-q"]
# words a page must escape
ODD_WORDS = ["<script>alert(1)</script>", "r&d", '"quoted"', "a<b"]



@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """A planted corpus (6 topics, 60 words, the first ones odd for HTML) and a held-out part."""
    rng = np.random.default_rng(5)
    beta = planted_topics(6, 60, rng)
    root = tmp_path_factory.mktemp("report")
    vocab = ODD_WORDS + [f"w{i}" for i in range(len(ODD_WORDS), 60)]
    for name, n in (("train", 200), ("heldout", 40)):
        with CorpusWriter(root / name, vocab) as w:
            for i, (ids, counts) in enumerate(lda_documents(beta, n, 40, 0.3, rng)):
                w.add(f"{name}{i}", ids, counts)
    return root, root / "train", root / "heldout"


@pytest.fixture(scope="module")
def lda(corpora):
    """LDA fitted with --heldout every 2 minibatches, then continued in place (--init) once more."""
    root, train, heldout = corpora
    out = root / "lda"
    run("fit", train, "-k", "6", *FIT, "--passes", "2", "--heldout", heldout, "--eval-every", "2", "-o", out)
    run("fit", train, "--init", out, *FIT, "--passes", "1", "--heldout", heldout, "--eval-every", "3", "-o", out)
    return out


@pytest.fixture(scope="module")
def models(corpora):
    """LDA without --heldout, HDP (mean-field, which leaves some topics unused) and CTM."""
    root, train, _ = corpora
    out = {}
    for kind, extra in (("plain", ["-k", "6"]), ("hdp", ["--model", "hdp", "-k", "12", "--local", "meanfield"]),
                        ("ctm", ["--model", "ctm", "-k", "5"])):
        out[kind] = root / kind
        run("fit", train, *extra, *FIT, "-o", out[kind])
    return out


def metrics(folder):
    return [json.loads(line) for line in (Path(folder) / "metrics.jsonl").read_text().splitlines()]


class Page(HTMLParser):
    """The tags, attributes and text of a page."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, name, value or "") for name, value in attrs]

    def handle_data(self, data):
        self.text.append(data)


def chart_texts(page):
    """Every text drawn in the page's SVG charts."""
    uris = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', Path(page).read_text())
    return [el.text for uri in uris for el in ElementTree.fromstring(base64.b64decode(uri)).iter()
            if el.tag.endswith("}text") and el.text]


def made_model(folder, top_words, n_topics=4, n_words=40):
    """An LDA model (no training corpus) whose topic k has top_words[k] as its top words, in order."""
    rng = np.random.default_rng(1)
    vocab = [w for words in top_words for w in words]
    vocab += [f"w{i}" for i in range(n_words - len(vocab))]
    lam = rng.uniform(0.01, 0.1, size=(len(vocab), n_topics))
    start = 0
    for k, words in enumerate(top_words):
        lam[start:start + len(words), k] = 100.0 - np.arange(len(words))
        start += len(words)
    LDAModel(lam=lam, alpha=np.full(n_topics, 0.1), eta=0.01, vocab=vocab).save(folder)
    return folder


def leaving_links(text):
    """src and href attributes (any tag) that point off the page: an http(s) URL, or anything
    but a data: URI or an in-page #anchor."""
    return [(tag, name, value) for tag, name, value in Page(text).attrs
            if name in ("src", "href", "srcset", "xlink:href", "action", "poster")
            and not (value.startswith("data:") or value.startswith("#"))]


# ------------------------------------------------------------------------------ the panels' data
def test_curve_points_are_the_evaluations_in_metrics(lda):
    records = metrics(lda)
    summaries = [r for r in records if r["event"] == "summary"]
    assert len(summaries) == 2                                   # the --init run appended its lines
    first_docs, first_seconds = summaries[0]["docs"], summaries[0]["train_seconds"]
    expected, run_index = [], 0
    for r in records:
        if r["event"] == "summary":
            run_index += 1
        elif r["event"] == "eval":
            expected.append({"docs": r["docs"] + (first_docs if run_index else 0),
                             "seconds": r["train_seconds"] + (first_seconds if run_index else 0.0),
                             "per_word_ll": r["per_word_ll"]})
    data = report.gather(lda)
    assert data.curve == expected and len(expected) >= 8 and data.curve_note == ""
    docs = [p["docs"] for p in data.curve]
    assert docs == sorted(docs) and docs[-1] == 200 * 2 + 200     # two passes, then one
    assert data.final_eval == [r for r in records if r["event"] == "eval"][-1]


def test_a_run_started_over_shows_the_curve_of_its_second_start(tmp_path):
    """fit --start auto: the first start's evaluations are dropped, the second's counted on from
    its documents (its seconds already go on from them)."""
    lines = [{"event": "eval", "docs": 100, "train_seconds": 1.0, "per_word_ll": -9.0},
             {"event": "start_over", "docs": 300, "train_seconds": 3.0},
             {"event": "eval", "docs": 100, "train_seconds": 4.0, "per_word_ll": -8.5},
             {"event": "eval", "docs": 200, "train_seconds": 5.0, "per_word_ll": -8.0},
             {"event": "summary", "docs": 500, "train_seconds": 5.0},
             {"event": "eval", "docs": 50, "train_seconds": 0.5, "per_word_ll": -7.9}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    points, note = report.heldout_curve(tmp_path)
    assert note == "" and points == [{"docs": 400, "seconds": 4.0, "per_word_ll": -8.5},
                                     {"docs": 500, "seconds": 5.0, "per_word_ll": -8.0},
                                     {"docs": 550, "seconds": 5.5, "per_word_ll": -7.9}]


def test_topic_sizes_and_words_are_the_models(lda):
    data = report.gather(lda, top_n=5)
    m = load_model(lda)
    assert [t["topic"] for t in data.topics] == list(range(6))
    assert np.array_equal(data.weights, m.topic_weights())
    assert sum(t["weight"] for t in data.topics) == pytest.approx(1.0)
    rows = json.loads(run("topics", lda, "-n", "5", "--json").output)
    assert [t["words"] for t in data.topics] == [r["words"] for r in rows]


def test_coherence_is_npmi_in_the_training_corpus(lda, corpora):
    _, train, _ = corpora
    data = report.gather(lda, top_n=5)
    expected = evaluate_coherence(load_model(lda), Corpus(train), ["c_npmi"], 5)
    assert data.coherence_measures == ["c_npmi"]
    assert [t["coherence"]["c_npmi"] for t in data.topics] == expected["coherence"]["c_npmi"]["per_topic"]
    assert str(train) in data.coherence_note


def test_words_ranked_by_relevance_are_those_topics_lists_and_are_scored_as_ranked(lda, corpora):
    """`report --relevance` shows the words `topics --relevance` lists, scores those, and says so."""
    from topicscale.report_html import _topics_table
    _, train, _ = corpora
    data = report.gather(lda, top_n=5, relevance=0.5)
    rows = json.loads(run("topics", lda, "-n", "5", "--json", "--relevance", "0.5").output)
    assert [t["words"] for t in data.topics] == [r["words"] for r in rows]
    assert [t["words"] for t in data.topics] != [t["words"] for t in report.gather(lda, top_n=5).topics]
    expected = evaluate_coherence(load_model(lda), Corpus(train), ["c_npmi"], 5, relevance=0.5)
    assert [t["coherence"]["c_npmi"] for t in data.topics] == expected["coherence"]["c_npmi"]["per_topic"]
    assert dict(data.facts)["diversity (top 25 words, by relevance 0.5)"] == f"{expected['diversity']:.3f}"
    assert "top words (by relevance 0.5)" in _topics_table(data)
    assert "`eval --coherence c_npmi --relevance 0.5`" in data.coherence_note


def test_saved_coherence_is_shown_and_a_lost_corpus_is_said(corpora, tmp_path):
    _, train, _ = corpora
    copy = tmp_path / "train"
    shutil.copytree(train, copy)
    model = tmp_path / "m"
    run("fit", copy, "-k", "4", *FIT, "-o", model)
    run("eval", model, "--coherence", "u_mass", "--top-n", "4")
    saved = json.loads((model / "coherence.json").read_text())
    data = report.gather(model)
    assert data.coherence_measures == ["u_mass"] and "coherence.json" in data.coherence_note
    assert f"of each topic's top 4 words in {copy} as" in data.coherence_note   # report's -n may differ
    assert [t["coherence"]["u_mass"] for t in data.topics] == saved["coherence"]["u_mass"]["per_topic"]
    assert data.coherence_note.endswith("(co-occurrences counted in documents for u_mass).")
    saved["coherence"]["c_npmi"] = dict(saved["coherence"]["u_mass"], window=10)   # an earlier run's
    (model / "coherence.json").write_text(json.dumps(saved))
    data = report.gather(model)
    assert data.coherence_note.endswith(
        "(co-occurrences counted in documents for u_mass, in windows of 10 tokens for c_npmi).")
    (model / "coherence.json").unlink()
    shutil.rmtree(copy)
    data = report.gather(model)
    assert data.coherence_measures == [] and all(t["coherence"] == {} for t in data.topics)
    assert f"the training corpus {copy} recorded in the model is gone" in data.coherence_note
    run("report", model, "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "recorded in the model is gone" in page and "<th>c_npmi</th>" not in page
    from topicscale.models import load_model
    unrecorded = load_model(model)
    unrecorded.settings.pop("corpus")
    note = report.topic_coherence(model, unrecorded, 10)[2]
    assert note.startswith("No coherence: the model records no training corpus (`topicscale eval")
    assert note.endswith("the report then shows those scores).")


def test_a_model_fitted_without_heldout_says_why_there_is_no_curve(models, tmp_path):
    data = report.gather(models["plain"])
    assert data.curve == [] and "fitted without --heldout" in data.curve_note and data.final_eval is None
    run("report", models["plain"], "-o", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert "fitted without --heldout" in text and "held-out per-word log likelihood against" not in text


def test_a_partial_model_says_so_and_how_to_continue(corpora, tmp_path, monkeypatch):
    from clirun import run_stopped
    _, train, _ = corpora
    r, _ = run_stopped(monkeypatch, 2, "fit", train, "-k", "4", *FIT, "--passes", "2", "-o", tmp_path / "m")
    assert "partial model" in r.output
    run("report", tmp_path / "m", "-o", tmp_path / "stopped.html")
    text = (tmp_path / "stopped.html").read_text()
    assert "An unfinished" in text and text.count(f"fit --resume {tmp_path / 'm'}") == 1
    run("fit", "--resume", tmp_path / "m")
    run("report", tmp_path / "m", "-o", tmp_path / "done.html")
    text = (tmp_path / "done.html").read_text()
    assert "An unfinished" not in text and "--resume" not in text


def test_a_partial_model_draws_the_curve_its_stopped_run_recorded(corpora, tmp_path, monkeypatch):
    """A stopped run's evaluations are in its log (.run.jsonl), not in metrics.jsonl: the curve
    has them up to the model's step, not a line past it nor a line cut short by a kill."""
    from clirun import run_stopped
    _, train, heldout = corpora
    out = tmp_path / "m"
    run_stopped(monkeypatch, 8, "fit", train, "-k", "4", *FIT, "--passes", "2", "--heldout", heldout,
                "--eval-every", "2", "-o", out)
    assert not (out / "metrics.jsonl").exists()
    evals = [json.loads(line) for line in (out / ".run.jsonl").read_text().splitlines() if '"eval"' in line]
    later = dict(evals[-1], step=load_model(out).step + 1, per_word_ll=0.0)
    with open(out / ".run.jsonl", "a") as fh:
        fh.write(json.dumps(later) + '\n{"event": "ev')
    data = report.gather(out)
    assert len(evals) >= 3 and data.partial and data.curve_note == "" and data.final_eval == evals[-1]
    assert data.curve == [{"docs": e["docs"], "seconds": e["train_seconds"], "per_word_ll": e["per_word_ll"]}
                          for e in evals]
    run("report", out, "-o", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert "An unfinished LDA topic model" in text and "held-out per-word log likelihood against" in text
    assert f"<code>topicscale fit --resume {out}</code> continues it" in text
    assert "At the last evaluation before training was stopped" in text


def test_report_heldout_scores_by_evals_default_protocol(lda, corpora, tmp_path):
    _, _, heldout = corpora
    data = report.gather(lda, heldout=heldout)
    expected = evaluate_model(load_model(lda), Corpus(heldout))
    assert data.heldout["per_word_ll"] == expected["per_word_ll"] and data.heldout["protocol"] == "common"
    # the fit's last evaluation used the same protocol on the same model
    assert data.final_eval["per_word_ll"] == expected["per_word_ll"]
    run("report", lda, "--heldout", heldout, "-o", tmp_path / "r.html")
    assert f"{expected['per_word_ll']:.4f}" in (tmp_path / "r.html").read_text()


def test_intertopic_map_has_a_point_per_shown_topic(lda, models):
    for folder in (lda, models["hdp"], models["ctm"]):
        data = report.gather(folder)
        assert data.coordinates.shape == (len(data.topics), 2) and np.all(np.isfinite(data.coordinates))
        assert data.map_note == ""


def test_hdp_and_ctm_panels_only_for_those_models(lda, models, tmp_path):
    for name, folder in (("lda", lda), ("hdp", models["hdp"]), ("ctm", models["ctm"])):
        data = report.gather(folder)
        m = load_model(folder)
        assert (data.sticks is not None) == (name == "hdp")
        assert (data.correlations is not None) == (name == "ctm")
        run("report", folder, "-o", tmp_path / f"{name}.html")
        text = (tmp_path / f"{name}.html").read_text()
        assert ("<h2>Effective topics</h2>" in text) == (name == "hdp")
        assert ("<h2>Topic correlations</h2>" in text) == (name == "ctm")
        if name == "hdp":
            weights = m.topic_weights()
            assert np.array_equal(data.sticks["weights"], np.sort(weights)[::-1])
            assert data.sticks["n99"] == len(data.topics) < m.n_topics
            assert sum(t["weight"] for t in data.topics) >= 0.99
            assert data.sticks["n95"] <= data.sticks["n99"]
        if name == "ctm":
            corr = m.correlations()
            positive = sorted(((corr[i, j], i, j) for i in range(5) for j in range(i + 1, 5) if corr[i, j] > 0),
                              reverse=True)
            assert [(i, j) for i, j, _ in data.correlations] == [(i, j) for _, i, j in positive]
            assert [r for _, _, r in data.correlations] == [r for r, _, _ in positive]


def drawn_circles(ax):
    """(x0, y0, x1, y1) on the canvas of each circle on a map: a patch, or a scatter marker."""
    boxes = [tuple(p.get_window_extent().extents) for p in ax.patches]
    for c in ax.collections:
        centres = ax.transData.transform(c.get_offsets())
        radii = np.broadcast_to(np.sqrt(c.get_sizes()) / 2 * ax.figure.dpi / 72, len(centres))
        boxes += [(x - r, y - r, x + r, y + r) for (x, y), r in zip(centres, radii)]
    return boxes


def test_the_map_shows_every_circle_whole():
    """200 topics, the largest at the top of the map: every circle lies within the axes."""
    from topicscale.report_plots import map_figure
    rng = np.random.default_rng(3)
    coordinates = rng.uniform(-0.5, 0.5, size=(200, 2)) * [0.47, 0.46]
    coordinates[0] = [0.0, coordinates[:, 1].max()]
    weights = rng.dirichlet(np.ones(200))
    weights[0] = 4 * weights.max()
    fig = map_figure([{"topic": k, "weight": w} for k, w in enumerate(weights / weights.sum())], coordinates)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    x0, y0, x1, y1 = ax.get_window_extent().extents
    circles = drawn_circles(ax)
    assert len(circles) == 200
    assert all(x0 <= a and b <= x1 and y0 <= c and d <= y1 for a, c, b, d in circles)


def test_fewer_than_three_topics_get_no_map_and_a_reason(corpora, tmp_path):
    _, train, _ = corpora
    run("fit", train, "-k", "2", *FIT, "-o", tmp_path / "m")
    data = report.gather(tmp_path / "m")
    assert data.coordinates is None and "fewer than 3" in data.map_note


# ------------------------------------------------------------------------------ the page
def test_the_page_is_self_contained_and_escapes_the_words(lda, models, tmp_path):
    for folder in (lda, models["hdp"], models["ctm"]):
        out = tmp_path / "r.html"
        run("report", folder, "-o", out)
        text = out.read_text()
        page = Page(text)
        assert leaving_links(text) == []
        assert not {"script", "link", "iframe", "object", "embed"} & set(page.tags)
        images = [v for tag, name, v in page.attrs if tag == "img" and name == "src"]
        assert len(images) >= 2 and all(v.startswith("data:image/svg+xml;base64,") for v in images)
        assert "http://" not in text and "https://" not in text


def test_words_with_dollar_signs_are_drawn_as_they_are(tmp_path):
    """Words are not mathtext: `$5 $10` is no formula, and `$\\frac{1` no error."""
    model = made_model(tmp_path / "m", [["$\\frac{1", "$5", "$10"], ["$x$", "y"]])
    run("report", model, "-o", tmp_path / "r.html")
    texts = chart_texts(tmp_path / "r.html")
    assert "0: $\\frac{1 $5 $10" in texts and any(t.startswith("1: $x$ y ") for t in texts)


def test_long_words_are_cut_short_in_the_charts_not_in_the_table(tmp_path):
    """A URL of 170 characters as a top word: chart labels end in an ellipsis, so matplotlib
    keeps room for the bars (it warned that the axes collapsed); the table has the whole word."""
    url = "https://example.org/" + "a" * 150
    model = made_model(tmp_path / "m", [[url, "b"], ["c", url + "x"], ["d"]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run("report", model, "-o", tmp_path / "r.html")
    assert [str(w.message) for w in caught] == []
    labels = [t for t in chart_texts(tmp_path / "r.html") if re.match(r"\d: ", t)]
    assert f"0: {url}"[:39] + "\u2026" in labels and f"1: c {url}"[:39] + "\u2026" in labels
    assert max(map(len, labels)) == 40
    words = " ".join(Page((tmp_path / "r.html").read_text()).text).split()
    assert url in words and url + "x" in words


def test_the_link_check_finds_links_that_leave(tmp_path):
    bad = ('<p><a href="https://example.org/x">x</a><img src="http://cdn.example/i.png">'
           '<img src="data:image/png;base64,AAAA"><a href="#top">top</a><script src="//cdn/x.js"></script>')
    assert leaving_links(bad) == [("a", "href", "https://example.org/x"), ("img", "src", "http://cdn.example/i.png"),
                                  ("script", "src", "//cdn/x.js")]


def test_odd_words_are_in_the_table(lda, tmp_path):
    """A topic holding the odd words (they are in the planted topic 0) shows them escaped."""
    data = report.gather(lda, top_n=12)
    shown = {w for t in data.topics for w in t["words"]}
    assert set(ODD_WORDS) <= shown
    run("report", lda, "-n", "12", "-o", tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "r&amp;d" in text and "&quot;quoted&quot;" in text
    assert "<script" not in text and set(ODD_WORDS) <= set(" ".join(Page(text).text).split())


def test_the_table_names_the_topics_each_repeats_as_topics_does(lda, tmp_path):
    """Topic 5 made a copy of topic 1 (its lambda scaled): both say so, on the page and in
    `topics --json`; the others repeat none."""
    m = load_model(lda)
    lam = np.array(m.lam)
    lam[:, 5] = 0.5 * lam[:, 1]
    m.lam = lam
    m.save(tmp_path / "m")
    data = report.gather(tmp_path / "m")
    repeats = {t["topic"]: t["repeats"] for t in data.topics}
    assert repeats == {0: [], 1: [5], 2: [], 3: [], 4: [], 5: [1]}
    rows = json.loads(run("topics", tmp_path / "m", "--json").output)
    assert {r["topic"]: r["repeats"] for r in rows} == repeats
    run("report", tmp_path / "m", "-o", tmp_path / "r.html")
    text = " ".join(Page((tmp_path / "r.html").read_text()).text)
    assert text.count("(repeats 5)") == 1 and text.count("(repeats 1)") == 1 and text.count("(repeats") == 2


def test_the_same_model_gives_the_same_page(lda, tmp_path):
    run("report", lda, "-o", tmp_path / "a.html")
    run("report", lda, "-o", tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


def test_bad_output_is_refused_before_any_work(lda, tmp_path):
    r = run("report", lda, "-o", tmp_path / "no" / "r.html", ok=False)
    assert r.exit_code == 2 and "does not exist" in r.output
    r = run("report", lda, "-o", tmp_path, ok=False)
    assert r.exit_code == 2
    r = run("report", lda, "-o", tmp_path / "page", ok=False)
    assert r.exit_code == 2 and "-o: the report must end in .html" in r.output
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TopicscaleError, match=f"is a file of the topicscale model in {lda}"):
        report.write_report(lda, lda / "model.npz")
    with pytest.raises(TopicscaleError, match="must end in .html"):
        report.write_report(lda, tmp_path / "page")


# ------------------------------------------------------------------------------ fit --report
def test_fit_report_writes_the_same_page_at_the_end(corpora, tmp_path):
    _, train, heldout = corpora
    out, page = tmp_path / "m", tmp_path / "fit.html"
    r = run("fit", train, "-k", "4", *FIT, "--heldout", heldout, "--report", page, "--json", "-o", out)
    assert json.loads(r.output)["report"] == str(page.resolve())
    run("report", out, "-o", tmp_path / "again.html")
    assert page.read_bytes() == (tmp_path / "again.html").read_bytes()
    # one evaluation (no --eval-every): its score, and no curve drawn through one point
    data = report.gather(out)
    assert len(data.curve) == 1 and "one held-out evaluation" in data.curve_note
    text = page.read_text()
    assert "held-out per-word log likelihood against" not in text and "one held-out evaluation" in text
    assert f"<b>{data.final_eval['per_word_ll']:.4f}</b>" in text
    # the report changes nothing in the model, nor in its settings
    run("fit", train, "-k", "4", *FIT, "--heldout", heldout, "-o", tmp_path / "plain")
    assert (out / "model.npz").read_bytes() == (tmp_path / "plain" / "model.npz").read_bytes()
    assert "report" not in store.load(out)[0]["settings"]


def test_fit_report_to_a_missing_folder_is_refused_before_training(corpora, tmp_path):
    _, train, _ = corpora
    r = run("fit", train, "-k", "4", *FIT, "--report", tmp_path / "no" / "r.html", "-o", tmp_path / "m", ok=False)
    assert r.exit_code == 2 and "does not exist" in r.output and not (tmp_path / "m").exists()
    r = run("fit", train, "-k", "4", *FIT, "--report", tmp_path / "r.htm", "-o", tmp_path / "m", ok=False)
    assert r.exit_code == 2 and "--report: the report must end in .html" in r.output
    assert list(tmp_path.iterdir()) == []


def test_a_resumed_run_writes_the_report(corpora, tmp_path):
    """Killed after its third checkpoint, a run given --report writes it when resumed (the
    checkpoint keeps it); --report may also be given to --resume itself."""
    from test_crash_resume import CHILD
    _, train, _ = corpora
    for given_to in ("fit", "resume"):
        out, page = tmp_path / given_to, tmp_path / f"{given_to}.html"
        args = ["fit", str(train), "-k", "4", *FIT, "--checkpoint-every", "1", "-o", str(out)]
        if given_to == "fit":
            args += ["--report", str(page)]
        proc = subprocess.run([sys.executable, "-c", CHILD, "checkpoint.npz", "3", "after", *args], env=ENV,
                              capture_output=True, text=True)
        assert proc.returncode == -signal.SIGKILL and not page.exists()
        resume = ["fit", "--resume", out] + (["--report", page] if given_to == "resume" else [])
        r = run(*resume)
        assert page.exists() and f"wrote the report {page}" in r.output
        assert leaving_links(page.read_text()) == []


# ------------------------------------------------------------------------------ without matplotlib
NO_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; from topicscale.cli import main; main(sys.argv[1:])"


def test_without_matplotlib_report_says_how_to_install_it(lda, corpora, tmp_path):
    _, train, _ = corpora
    for args in (["report", str(lda), "-o", str(tmp_path / "r.html")],
                 ["fit", str(train), "-k", "3", "--report", str(tmp_path / "r.html"), "-o", str(tmp_path / "m")]):
        proc = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, *args], env=ENV, capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert "pip install topicscale[report]" in proc.stderr
        assert not (tmp_path / "r.html").exists() and not (tmp_path / "m").exists()


def test_nothing_else_imports_matplotlib(lda):
    code = ("import sys; import topicscale; from topicscale.cli import cli; "
            "cli.main(args=['--help'], standalone_mode=False); "
            "cli.main(args=['topics', sys.argv[1]], standalone_mode=False); "
            "cli.main(args=['info', sys.argv[1]], standalone_mode=False); "
            "cli.main(args=['report', '--help'], standalone_mode=False); "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    subprocess.run([sys.executable, "-c", code, str(lda)], env=ENV, check=True, capture_output=True)


def test_the_readme_shows_a_committed_small_screenshot():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "![A report of the demo model](docs/report-sotu.png)" in readme
    png = ROOT / "docs" / "report-sotu.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size < 300_000
    assert (ROOT / "docs" / "report.md").is_file() and "docs/report.md" in readme

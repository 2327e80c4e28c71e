"""The command line end to end on the bundled corpus (kept short), and its error handling."""
import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from topicscale.cli import cli
from topicscale.corpus.shards import Corpus
from topicscale.models import load_model

ROOT = Path(__file__).resolve().parent.parent
SOTU = ROOT / "data" / "sotu.jsonl.gz"


def run(*args, input=None, ok=True):
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def sotu(tmp_path_factory):
    """The first 4,000 paragraphs of the bundled corpus, prepared with 10% held out."""
    root = tmp_path_factory.mktemp("sotu")
    with gzip.open(SOTU, "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(4000)]
    (root / "sotu.jsonl").write_text("".join(lines))
    out = run("prepare", root / "sotu.jsonl", "--heldout", "0.1", "--min-df", "3", "-o", root / "corpus",
              "--json")
    return root, json.loads(out.output)


@pytest.fixture(scope="module")
def model(sotu):
    root, _ = sotu
    out = run("fit", root / "corpus", "-k", "8", "--passes", "2", "--batch-size", "256", "--seed", "1",
              "--heldout", root / "corpus-heldout", "--eval-every", "10", "--json", "-o", root / "model")
    return root, json.loads(out.output)


def test_prepare_summary(sotu):
    _, s = sotu
    assert s["documents"] + s["heldout_documents"] + s["skipped_empty"] == 4000
    assert s["heldout_documents"] > 300 and s["vocabulary"] > 1000


def test_info_of_corpus_and_model(model):
    root, _ = model
    c = json.loads(run("info", root / "corpus", "--json").output)
    assert c["type"] == "corpus" and c["documents"] > 3000 and c["nnz"] <= c["tokens"]
    m = json.loads(run("info", root / "model", "--json").output)
    assert m["topics"] == 8 and m["vocabulary"] == c["vocabulary"] and m["algorithm"] == "svi"
    assert m["local"] == "cvb0" and m["burn_in"] == 3   # a short run over paragraphs (README)
    assert m["alpha"] == pytest.approx(1 / 8)


def test_fit_summary_metrics_and_eval(model):
    root, summary = model
    assert summary["threads_used"] >= 1 and summary["docs"] > 6000
    records = [json.loads(l) for l in (root / "model" / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["event"] == "eval"]
    assert len(evals) >= 2 and records[-1]["event"] == "summary"
    assert evals[-1]["per_word_ll"] > evals[0]["per_word_ll"]
    ev = json.loads(run("eval", root / "model", root / "corpus-heldout", "--json").output)
    assert set(ev) == {"per_word_ll", "perplexity", "documents", "unscored_documents", "heldout_tokens", "protocol"}
    assert isinstance(ev["heldout_tokens"], int) and isinstance(records[-1]["tokens"], int)
    assert ev["per_word_ll"] == pytest.approx(summary["heldout"]["per_word_ll"], rel=1e-12)
    assert -11 < ev["per_word_ll"] < -5
    assert ev["perplexity"] == pytest.approx(np.exp(-ev["per_word_ll"]))


def test_eval_says_how_many_documents_it_could_not_split(model, tmp_path):
    root, _ = model
    text = tmp_path / "held.txt"
    text.write_text("government congress people\nwar\npeople people\ncongress states nation\n")
    run("prepare", text, "--vocab", root / "model", "-o", tmp_path / "held")
    out = run("eval", root / "model", tmp_path / "held").stdout
    assert "2 documents" in out and "(2 of 4 not scored: a document needs two distinct words" in out
    result = json.loads(run("eval", root / "model", tmp_path / "held", "--json").stdout)
    assert result["documents"] == 2 and result["unscored_documents"] == 2


def test_topics_text_json_csv(model):
    root, _ = model
    rows = json.loads(run("topics", root / "model", "-n", "5", "--json").output)
    assert [r["topic"] for r in rows] == list(range(8))
    assert all(len(r["words"]) == 5 and r["weights"] == sorted(r["weights"], reverse=True) for r in rows)
    assert sum(r["weight"] for r in rows) == pytest.approx(1.0)
    from topicscale.models import load_model
    m = load_model(root / "model")
    beta = m.expected_beta()
    for r in rows:                        # the 5 largest entries of each column of E[beta], exactly
        best = np.argsort(-beta[:, r["topic"]], kind="stable")[:5]
        assert r["words"] == [m.vocab[i] for i in best] and r["weights"] == beta[best, r["topic"]].tolist()
    text = run("topics", root / "model", "-n", "3").output.splitlines()
    assert len(text) == 8 and text[0].split()[2:] == rows[0]["words"][:3]
    csv = run("topics", root / "model", "-n", "2", "--csv").output.splitlines()
    assert csv[0] == "topic,weight,rank,word,probability" and len(csv) == 1 + 16
    both = run("topics", root / "model", "--json", "--csv", ok=False)     # --csv was ignored
    assert both.exit_code == 2 and "--json and --csv" in both.output


def test_export_is_row_stochastic_with_vocabulary(model, tmp_path):
    root, _ = model
    run("export", root / "model", "-o", tmp_path / "topics.npy")
    beta = np.load(tmp_path / "topics.npy")
    vocab = (tmp_path / "topics.vocab.txt").read_text().splitlines()
    assert beta.shape == (8, len(vocab)) and np.allclose(beta.sum(axis=1), 1.0)
    assert vocab == (root / "corpus" / "vocab.txt").read_text().splitlines()


def test_infer_keeps_ids_aligned(model, tmp_path):
    root, _ = model
    run("infer", root / "model", root / "corpus-heldout", "-o", tmp_path / "theta.tsv")
    lines = (tmp_path / "theta.tsv").read_text().splitlines()
    ids = (root / "corpus-heldout" / "ids.txt").read_text().splitlines()
    assert [l.split("\t")[0] for l in lines[1:]] == ids
    assert np.allclose([sum(map(float, l.split("\t")[1:])) for l in lines[1:]], 1.0, atol=1e-4)
    # raw text is encoded with the model's vocabulary; a document left with none of its words
    # keeps its row, with the proportions LDA.transform gives an empty row (the prior's)
    from topicscale import LDA
    from topicscale.models import load_model
    src = tmp_path / "new.jsonl"
    src.write_text('{"id": "a", "text": "war peace army navy"}\n{"id": "b", "text": "zzzz qqqq"}\n'
                   '{"id": "c", "text": "taxes budget deficit spending"}\n')
    r = run("infer", root / "model", src, "-o", tmp_path / "theta.npy")
    assert "documents holding none of the model's words: 1" in r.stderr
    theta = np.load(tmp_path / "theta.npy")
    assert (tmp_path / "theta.ids.txt").read_text().split() == ["a", "b", "c"]
    assert theta.shape == (3, 8) and np.allclose(theta.sum(axis=1), 1.0)
    empty_row = LDA.load(root / "model").transform(np.zeros((1, len(load_model(root / "model").vocab))))
    assert np.allclose(theta[1], empty_row[0]) and not np.allclose(theta[0], theta[1])


def test_infer_without_output_prints_tsv_or_json_lines(model, tmp_path):
    """Without -o the proportions go to standard output, as the TSV file would hold them or, with
    --json, a JSON object a document; --json with -o FILE is refused."""
    root, _ = model
    run("infer", root / "model", root / "corpus-heldout", "-o", tmp_path / "theta.tsv", "-q")
    printed = run("infer", root / "model", root / "corpus-heldout", "-q").stdout
    assert printed == (tmp_path / "theta.tsv").read_text()
    rows = [json.loads(line) for line in run("infer", root / "model", root / "corpus-heldout", "--json", "-q").stdout.splitlines()]
    tsv = [line.split("\t") for line in printed.splitlines()[1:]]
    assert [r["id"] for r in rows] == [t[0] for t in tsv]
    assert [r["theta"] for r in rows] == [[float(x) for x in t[1:]] for t in tsv]
    r = run("infer", root / "model", root / "corpus-heldout", "--json", "-o", tmp_path / "x.tsv", ok=False)
    assert r.exit_code == 2 and "--json" in r.output and not (tmp_path / "x.tsv").exists()


def test_a_closed_standard_output_is_an_error_where_a_command_would_write_to_it(model, tmp_path):
    """Started with standard output closed (`>&-`), a command that prints fails with one line,
    exit status 2; one that prints nothing there runs as usual."""
    import subprocess
    import sys
    root, _ = model
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for args in (["infer", root / "model", root / "corpus-heldout", "-q", "--threads", "1"],
                 ["eval", root / "model", root / "corpus-heldout", "--json", "--threads", "1"],
                 ["info", root / "model"], ["topics", root / "model", "--csv"],
                 ["export", root / "model", "-o", tmp_path / "t.npy"]):
        r = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "topicscale", *map(str, args)],
                           capture_output=True, text=True, env=env)
        if args[0] == "export":
            assert r.returncode == 0 and (tmp_path / "t.npy").exists(), r.stderr
        else:
            assert (r.returncode, r.stderr) == (2, "topicscale: error: standard output is closed\n"), args


def test_init_continues_training(model, tmp_path):
    root, _ = model
    before = json.loads(run("info", root / "model", "--json").output)["step"]
    summary = json.loads(run("fit", root / "corpus", "--init", root / "model", "--max-docs", "512",
                             "--batch-size", "256", "--json", "-o", tmp_path / "more").stdout)
    after = json.loads(run("info", tmp_path / "more", "--json").output)
    assert after["step"] == before + 2 and after["topics"] == 8
    assert summary["init"] == str((root / "model").resolve())


def test_a_new_fit_drops_the_scores_saved_for_the_model_it_replaces(sotu, tmp_path):
    """Another seed, the same step and documents seen: the old coherence.json would pass for the
    new model's."""
    root, _ = sotu
    fit = lambda seed: run("fit", root / "corpus", "-k", "4", "--max-docs", "500", "--seed", seed,
                           "--force", "-o", tmp_path / "m")
    fit("1")
    run("eval", tmp_path / "m", "--coherence", "u_mass")
    assert all("coherence" in row for row in json.loads(run("topics", tmp_path / "m", "--json").stdout))
    fit("2")
    assert not (tmp_path / "m" / "coherence.json").exists()
    assert not any("coherence" in row for row in json.loads(run("topics", tmp_path / "m", "--json").stdout))
    run("eval", tmp_path / "m", "--coherence", "u_mass")
    load_model(tmp_path / "m").save(tmp_path / "m")          # any writer of model.npz (LDA.save too)
    assert not (tmp_path / "m" / "coherence.json").exists()


def test_same_seed_same_model(sotu, tmp_path):
    root, _ = sotu
    for name in ("a", "b"):
        run("fit", root / "corpus", "-k", "4", "--max-docs", "1000", "--seed", "7", "-o", tmp_path / name)
        run("export", tmp_path / name, "-o", tmp_path / f"{name}.npy")
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))


def test_config_preset_and_flags_override(sotu, tmp_path):
    root, _ = sotu
    cfg = tmp_path / "p.toml"
    cfg.write_text("topics = 3\nbatch-size = 100\nkappa = 0.6\n")
    run("fit", root / "corpus", "--config", cfg, "-k", "5", "--max-docs", "300", "-o", tmp_path / "m")
    info = json.loads(run("info", tmp_path / "m", "--json").output)
    assert info["topics"] == 5 and info["batch_size"] == 100 and info["kappa"] == 0.6
    (tmp_path / "presets").mkdir()             # a relative path is the file's folder's, not the shell's
    (tmp_path / "presets" / "q.toml").write_text('topics = 3\nmax-docs = 300\noutput = "out"\n')
    run("fit", root / "corpus", "--config", tmp_path / "presets" / "q.toml")
    assert load_model(tmp_path / "presets" / "out").n_topics == 3
    cfg.write_text("topicz = 3\n")
    r = run("fit", root / "corpus", "--config", cfg, "-o", tmp_path / "x", ok=False)
    assert r.exit_code == 2 and "unknown setting 'topicz'" in r.output
    for text, message in (('topics = "ten"\n', "topics: 'ten' is not a valid integer"),
                          ("kappa = 2.0\n", "kappa: 2.0 is not in the range"),
                          ("topics = 10.7\n", "topics: '10.7' is not a valid integer"),   # not cut to 10
                          ("batch-size = true\n", "batch-size: 'true' is not a valid integer")):
        cfg.write_text(text)            # a bad value names the file and its setting, not a flag
        assert_user_error(run("fit", root / "corpus", "--config", cfg, "-o", tmp_path / "x", ok=False),
                          f"{cfg}: {message}")


# ------------------------------------------------------------------------------ errors
def assert_user_error(result, *fragments):
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    for f in fragments:
        assert f in line, line


def test_existing_model_is_not_replaced_without_force(model, tmp_path):
    root, _ = model
    before = (root / "model" / "model.npz").read_bytes()
    r = run("fit", root / "corpus", "-k", "2", "--max-docs", "10", "-o", root / "model", ok=False)
    assert_user_error(r, "already holds a model", "--force")
    assert (root / "model" / "model.npz").read_bytes() == before


def test_prepare_and_synth_replace_only_a_corpus_and_fit_writes_no_model_into_one(model, tmp_path):
    """A corpus written over a model, or over a folder of other files, would delete them: refused
    before any input is read, the folder as it was; an empty folder or an older corpus is replaced.
    A model written into a corpus folder is refused too."""
    root, _ = model
    text = tmp_path / "docs.txt"
    text.write_text("apple banana\nbanana cherry\napple cherry\n")
    prepare = lambda out, *more: run("prepare", text, "--min-df", "1", "--max-df", "1", "-o", out, *more, ok=False)
    before = (root / "model" / "model.npz").read_bytes()
    assert_user_error(prepare(root / "model"), "holds a model", "nothing was changed")
    assert (root / "model" / "model.npz").read_bytes() == before
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep me")
    assert_user_error(prepare(notes), "files that are not a topicscale corpus")
    assert_user_error(prepare(tmp_path / "c", "--heldout", "1", "--heldout-output", notes), str(notes))
    assert not (tmp_path / "c").exists()
    assert_user_error(run("synth", root / "model", "-n", "5", "-o", notes, ok=False), "not a topicscale corpus")
    run("synth", root / "model", "-n", "5", "-o", tmp_path / "s")
    (tmp_path / "s-heldout").mkdir()
    (tmp_path / "s-heldout" / "todo.txt").write_text("keep me")
    before = (tmp_path / "s" / "manifest.json").read_text()
    r = run("synth", root / "model", "-n", "5", "--heldout", "2", "--seed", "3", "-o", tmp_path / "s", ok=False)
    assert_user_error(r, "s-heldout", "not a topicscale corpus")
    assert (tmp_path / "s" / "manifest.json").read_text() == before       # OUTPUT not drawn first
    assert [f.name for f in notes.iterdir()] == ["todo.txt"] and (notes / "todo.txt").read_text() == "keep me"
    (tmp_path / "empty").mkdir()
    assert prepare(tmp_path / "empty").exit_code == 0
    assert prepare(tmp_path / "empty").exit_code == 0                 # a corpus is replaced
    (tmp_path / "empty" / "recipe.json").write_text("keep me")         # ... unless it holds more
    assert_user_error(prepare(tmp_path / "empty"), "a corpus and files it did not write (recipe.json)")
    assert (tmp_path / "empty" / "recipe.json").read_text() == "keep me"
    (tmp_path / "empty" / "recipe.json").unlink()
    r = run("fit", tmp_path / "empty", "-k", "2", "--passes", "1", "-o", tmp_path / "empty", ok=False)
    assert_user_error(r, "holds a corpus", "folder of its own")
    assert not (tmp_path / "empty" / "model.npz").exists()


def test_synth_says_where_it_drew_the_heldout_documents(model, tmp_path):
    root, _ = model
    out = run("synth", root / "model", "-n", "5", "--heldout", "2", "-o", tmp_path / "s").stdout
    assert out.strip().endswith(f"and 2 held-out ones to {tmp_path / 's-heldout'}")
    assert json.loads(run("info", tmp_path / "s-heldout", "--json").output)["documents"] == 2
    ids = [(tmp_path / f).read_text().split() for f in ("s/ids.txt", "s-heldout/ids.txt")]
    assert ids == [["s0", "s1", "s2", "s3", "s4"], ["h0", "h1"]]      # no id in both
    for corpus in ("s", "s-heldout"):      # what they were drawn from is recorded
        source = json.loads((tmp_path / corpus / "manifest.json").read_text())["source"][0]
        assert source["model"] == str((root / "model").resolve())
        assert source["topics"] == list(range(load_model(root / "model").n_topics))


def test_eval_says_why_documents_were_not_scored():
    from topicscale.cli import _unscored
    assert _unscored(36, 2457) == " (36 of 2457 not scored: a document needs two distinct words to be split)"
    assert _unscored(0, 10) == ""


def test_resume_of_a_corpus_folder_says_what_resume_takes(sotu):
    root, _ = sotu
    assert_user_error(run("fit", "--resume", root / "corpus", ok=False), "is a corpus; --resume takes the model")


def test_heldout_with_another_vocabulary_is_refused(model, tmp_path):
    root, _ = model
    other = tmp_path / "other.txt"
    other.write_text("apple banana\nbanana cherry\napple cherry\n")
    run("prepare", other, "--min-df", "1", "--max-df", "1", "-o", tmp_path / "oc")
    r = run("eval", root / "model", tmp_path / "oc", ok=False)
    assert_user_error(r, "vocab.txt", "vocabulary differs from the model's")
    r = run("fit", root / "corpus", "-k", "2", "--heldout", tmp_path / "oc", "-o", tmp_path / "m", ok=False)
    assert_user_error(r, "vocabulary differs from the training corpus's", "--vocab CORPUS")
    assert not (tmp_path / "m").exists()                 # refused before the folder is made


def test_a_heldout_corpus_with_nothing_to_score_is_refused(model, tmp_path):
    """No document of two distinct words: eval printed NaN (not JSON), fit trained 50 passes."""
    root, _ = model
    text = tmp_path / "held.txt"
    text.write_text("war war\npeople\ncongress congress congress\n")
    run("prepare", text, "--vocab", root / "model", "-o", tmp_path / "held")
    for more in ((), ("--json",)):
        r = run("eval", root / "model", tmp_path / "held", *more, ok=False)
        assert_user_error(r, "held", "no document has two distinct words")
    r = run("fit", root / "corpus", "-k", "2", "--heldout", tmp_path / "held", "-o", tmp_path / "m", ok=False)
    assert_user_error(r, "no document has two distinct words")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("value, message", [
    ("nan", "a fraction in (0, 1) or a whole number"), ("inf", "a fraction in (0, 1) or a whole number"),
    ("abc", "neither a count nor a fraction"), ("0.01", "--heldout 0.01 holds out no documents"),
    ("3", "--heldout 3 leaves no training documents")])
def test_prepare_refuses_a_heldout_share_it_cannot_draw(tmp_path, value, message):
    src = tmp_path / "d.txt"
    src.write_text("apple banana\nbanana cherry\napple cherry\n")
    r = run("prepare", src, "--min-df", "1", "--max-df", "1", "--heldout", value, "-o", tmp_path / "out",
            ok=False)
    assert r.exit_code == 2 and message in r.output and "--heldout" in r.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "out-heldout").exists()


@pytest.mark.parametrize("name, extra, message", [
    ("d.ldac", ["--min-df", "3", "--stopwords", "none"], "--min-df, --stopwords do not apply: ldac input is"),
    ("d.txt", ["--vocab", "vocab.txt", "--max-df", "0.9"], "--max-df does not apply: --vocab fixes"),
    ("d.txt", ["--text-field", "body"], "--text-field does not apply: text input has no JSON fields"),
])
def test_prepare_refuses_options_its_input_would_ignore(tmp_path, name, extra, message):
    """Options given on the command line that this input would silently ignore are refused: the
    text options with a bag of words, pruning with a fixed vocabulary, JSON fields with text."""
    (tmp_path / "d.ldac").write_text("2 0:1 1:2\n")
    (tmp_path / "d.txt").write_text("apple banana\nbanana cherry\n")
    (tmp_path / "vocab.txt").write_text("apple\nbanana\n")
    extra = [str(tmp_path / e) if e == "vocab.txt" else e for e in extra]
    r = run("prepare", tmp_path / name, *extra, "-o", tmp_path / "out", ok=False)
    assert_user_error(r, message)
    assert not (tmp_path / "out").exists()
    if name == "d.txt":             # the same options where they apply are taken
        r = run("prepare", tmp_path / name, "--min-df", "1", "--max-df", "1", "-o", tmp_path / "ok", "--json")
        assert json.loads(r.output)["vocabulary"] == 3


def test_prepare_refuses_inputs_that_would_lose_or_mislabel_documents(tmp_path):
    """A held-out output that is the training output (one would replace the other), inputs whose
    names say different formats (a .jsonl read as text), and an id with a line break (ids.txt
    keeps one a line: every later document would take its predecessor's id) are refused with
    nothing written."""
    (tmp_path / "a.jsonl").write_text('{"id": "x", "text": "apple banana"}\n{"id": "y", "text": "banana"}\n')
    (tmp_path / "b.txt").write_text("apple cherry\n")
    (tmp_path / "c.jsonl").write_text('{"id": "x", "text": "apple"}\n{"id": "two\\nlines", "text": "b"}\n')
    common = ["--min-df", "1", "--max-df", "1", "-o", tmp_path / "out"]
    for args, message in (
            ([tmp_path / "a.jsonl", "--heldout", "1", "--heldout-output", tmp_path / "out"],
             "the held-out corpus would be written over the training corpus"),
            ([tmp_path / "b.txt", tmp_path / "a.jsonl"], "b.txt: text, " + str(tmp_path / "a.jsonl") + ": jsonl"),
            ([tmp_path / "c.jsonl"], "c.jsonl:2: field 'id' holds a line break")):
        assert_user_error(run("prepare", *args, *common, ok=False), message)
        assert not (tmp_path / "out").exists()


def test_infer_and_fit_refuse_what_would_be_wrong_silently(sotu, tmp_path):
    """infer on a corpus whose ids.txt lost a line names the file (was a traceback); fit with
    --passes too small to hold one document writes nothing (was an untrained model)."""
    import shutil
    root, _ = sotu
    shutil.copytree(root / "corpus", tmp_path / "c")
    ids = (tmp_path / "c" / "ids.txt").read_text().splitlines()
    (tmp_path / "c" / "ids.txt").write_text("\n".join(ids[:-1]) + "\n")
    run("fit", tmp_path / "c", "-k", "3", "--passes", "0.1", "-q", "-o", tmp_path / "m")
    r = run("infer", tmp_path / "m", tmp_path / "c", "-o", tmp_path / "theta.tsv", ok=False)
    assert_user_error(r, f"ids.txt: has {len(ids) - 1} ids, manifest says {len(ids)} documents")
    assert not (tmp_path / "theta.tsv").exists()
    r = run("infer", tmp_path / "m", f"file://{tmp_path / 'c'}", "-o", tmp_path / "theta.tsv", ok=False)
    assert_user_error(r, f"file://{tmp_path / 'c'}/ids.txt: has {len(ids) - 1} ids")    # read by fsspec
    r = run("fit", tmp_path / "c", "-k", "3", "--passes", "0.0001", "-o", tmp_path / "none", ok=False)
    assert_user_error(r, "--passes 0.0001 trains on no document")
    assert not (tmp_path / "none").exists()
    r = run("fit", tmp_path / "c", "-k", "3", "--algorithm", "batch", "--passes", "0.5", "-o", tmp_path / "b",
            ok=False)
    assert_user_error(r, "--algorithm batch updates the topics once a whole pass is read", "untrained")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("name, content, where", [
    ("bad.ldac", "2 0:1 1:2\n2 0:1 7:1\n", "bad.ldac:2"),          # word id out of range
    ("neg.ldac", "1 0:-3\n", "neg.ldac:1"),                        # negative count
    ("bad.jsonl", '{"text": "a b"}\n{"txt": "c"}\n', "bad.jsonl:2"),  # missing field
])
def test_malformed_input_names_file_and_line_and_writes_nothing(tmp_path, name, content, where):
    src = tmp_path / name
    src.write_text(content)
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    r = run("prepare", src, "--vocab", tmp_path / "vocab.txt", "-o", tmp_path / "out", ok=False)
    assert_user_error(r, where)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out-heldout").exists()


def test_empty_corpus_is_an_error_and_empty_documents_are_counted(tmp_path):
    src = tmp_path / "e.txt"
    src.write_text("\n\nthe of and\n")
    r = run("prepare", src, "-o", tmp_path / "out", ok=False)
    assert_user_error(r, "e.txt", "no word in 3 training documents")     # not a --min-df matter
    r = run("prepare", src, tmp_path / "." / "e.txt", "-o", tmp_path / "out", ok=False)
    assert_user_error(r, "e.txt is given twice")
    (tmp_path / "upper.txt").write_text("ALPHA\nBETA\n")
    (tmp_path / "words.txt").write_text("alpha beta\n")
    r = run("prepare", tmp_path / "words.txt", "--vocab", tmp_path / "upper.txt", "-o", tmp_path / "out", ok=False)
    assert_user_error(r, "words.txt: no training document holds a word of the vocabulary", "lower-cased")
    r = run("prepare", "-", "-o", tmp_path / "out", input="", ok=False)
    assert_user_error(r, "<stdin>: no training document")
    assert not (tmp_path / "out").exists()
    r = run("prepare", "-", "--min-df", "1", "--max-df", "1", "-o", tmp_path / "s", "--json",
            input="alpha beta\n\nbeta gamma\n")
    s = json.loads(r.output)
    assert s["documents"] == 2 and s["skipped_empty"] == 1
    assert (tmp_path / "s" / "ids.txt").read_text().split() == ["1", "3"]


def test_not_a_model_or_corpus(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_user_error(run("topics", tmp_path / "empty", ok=False), "not a topicscale model")
    assert_user_error(run("fit", tmp_path / "empty", "-o", tmp_path / "m", ok=False), "not a topicscale corpus")
    assert_user_error(run("info", tmp_path / "empty", ok=False), "neither a topicscale corpus")
    assert_user_error(run("fit", "--resume", tmp_path / "empty", ok=False), "has no checkpoint to resume")
    (tmp_path / "clf").mkdir()
    (tmp_path / "clf" / "classifier.npz").write_bytes(b"")
    assert_user_error(run("info", tmp_path / "clf", ok=False), "holds a classifier: `topicscale classify info")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.npz").write_bytes(b"PK\x03\x04garbage")
    assert_user_error(run("info", tmp_path / "broken", ok=False), "corrupted model file")
    (tmp_path / "raw.jsonl").write_text('{"text": "alpha beta"}\n')
    r = run("fit", tmp_path / "raw.jsonl", "-o", tmp_path / "m", ok=False)
    assert r.exit_code == 2 and "raw.jsonl is a file, not a prepared corpus folder (`topicscale prepare" in r.output


def test_inference_matrix_refuses_combinations_it_does_not_accept(sotu, tmp_path):
    root, _ = sotu
    r = run("fit", root / "corpus", "--algorithm", "scvb0", "--local", "meanfield", "-o", tmp_path / "m", ok=False)
    assert_user_error(r, "--local meanfield does not go with --algorithm scvb0", "accepted: cvb0")
    r = run("fit", root / "corpus", "--algorithm", "batch", "--local", "gibbs", "-o", tmp_path / "m", ok=False)
    assert_user_error(r, "accepted: meanfield")
    run("fit", root / "corpus", "--algorithm", "svi", "--local", "cvb0", "-k", "3", "--max-docs", "300",
        "-o", tmp_path / "ok")
    assert json.loads(run("info", tmp_path / "ok", "--json").output)["local"] == "cvb0"
    # the algorithm's paper settings apply where no option is given (SCVB0: S=100, alpha=0.1)
    run("fit", root / "corpus", "--algorithm", "scvb0", "-k", "3", "--max-docs", "300", "-o", tmp_path / "s")
    info = json.loads(run("info", tmp_path / "s", "--json").output)
    assert info["batch_size"] == 100 and info["alpha"] == pytest.approx(0.1) and info["tau"] == 1000


def test_estep_beta_mean_is_kept_by_the_model_and_scores_better(sotu, tmp_path):
    """--estep-beta mean: eval and infer of the saved model fold in with E[beta] (the topics it
    was trained with), and on these SOTU paragraphs it beats exp(E[log beta]) clearly (by about
    0.2 nats per word on the whole corpus, README)."""
    from topicscale.evaluate import document_completion
    from topicscale.corpus.shards import Corpus
    from topicscale.models import load_model
    root, _ = sotu
    held = root / "corpus-heldout"
    scores = {}
    for how in ("mean", "exp-elog"):
        out = run("fit", root / "corpus", "-k", "20", "--tau", "10", "--batch-size", "256", "--estep-beta", how,
                  "--polish", "0", "--heldout", held, "--json", "-o", tmp_path / how)
        scores[how] = json.loads(out.output)["heldout"]["per_word_ll"]
    assert scores["mean"] > scores["exp-elog"] + 0.03
    model = load_model(tmp_path / "mean")
    assert model.settings["estep_beta"] == "mean"
    beta = model.expected_beta()
    direct = document_completion(Corpus(held), beta, beta, model.alpha)["per_word_ll"]
    assert json.loads(run("eval", tmp_path / "mean", held, "--json").output)["per_word_ll"] == pytest.approx(direct)
    r = run("fit", root / "corpus", "--algorithm", "scvb0", "--estep-beta", "mean", "-o", tmp_path / "x", ok=False)
    assert_user_error(r, "--estep-beta goes with --local meanfield", "--algorithm scvb0 --local cvb0")


def test_default_local_step_is_cvb0_for_short_documents_and_many_updates(sotu, tmp_path):
    """LDA SVI without --local: cvb0 on short documents (SOTU paragraphs, about 30 distinct words)
    when the run makes at least 150 updates, and then its topics score better under the shared
    mean-field fold-in; mean-field with few updates or when a mean-field option is given."""
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    from topicscale.models import load_model
    root, _ = sotu
    held = Corpus(root / "corpus-heldout")
    scores = {}
    for name, extra in (("auto", []), ("meanfield", ["--local", "meanfield"])):
        out = run("fit", root / "corpus", "-k", "20", "--batch-size", "16", "--tau", "10", "--passes", "1",
                  "--json", "-q", "-o", tmp_path / name, *extra)        # 3600 documents / 16: 225 updates
        assert json.loads(out.output)["local"] == ("cvb0" if name == "auto" else "meanfield")
        model = load_model(tmp_path / name)
        scores[name] = evaluate_topics(model.expected_beta().T, held, alpha=0.05)["per_word_ll"]
    assert scores["auto"] > scores["meanfield"] + 0.1          # measured: +0.22
    assert json.loads(run("info", tmp_path / "auto", "--json").output)["local"] == "cvb0"
    for extra in (["--batch-size", "256", "--passes", "1"], ["--batch-size", "16", "--accelerate"],
                  ["--batch-size", "16", "--estep-beta", "exp-elog"]):
        out = run("fit", root / "corpus", "-k", "5", "--json", "-q", "--force", "-o", tmp_path / "x", *extra)
        assert json.loads(out.output)["local"] == "meanfield", extra


def test_a_short_runs_default_cvb0_step_takes_three_burn_in_passes_and_a_short_delay(sotu, tmp_path):
    """Between 20 and 150 updates over short documents, LDA SVI's default is CVB0 with three
    burn-in passes a document and tau a sixteenth of the updates (a given --tau is kept); its topics
    score higher by the shared fold-in than those of SCVB0's step (one burn-in pass, tau 64) and of
    the mean-field step in the same run."""
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    from topicscale.models import load_model
    root, _ = sotu
    held = Corpus(root / "corpus-heldout")
    scores = {}
    for name, extra in (("auto", []), ("cvb0", ["--local", "cvb0"]), ("meanfield", ["--local", "meanfield"])):
        run("fit", root / "corpus", "-k", "20", "--batch-size", "32", "--max-docs", "3200", "--seed", "2",
            "-q", "-o", tmp_path / name, *extra)                                        # 100 updates
        model = load_model(tmp_path / name)
        scores[name] = evaluate_topics(model.expected_beta().T, held)["per_word_ll"]
        settings = model.settings
        assert settings["local"] == ("meanfield" if name == "meanfield" else "cvb0")
        assert settings.get("burn_in") == (3 if name == "auto" else None)
        assert settings["tau"] == (100 / 16 if name == "auto" else 64)
    assert scores["auto"] > max(scores["cvb0"], scores["meanfield"]) + 0.05, scores   # measured: +0.10
    run("fit", root / "corpus", "-k", "5", "--batch-size", "32", "--max-docs", "3200", "--tau", "30", "-q",
        "-o", tmp_path / "given")
    assert load_model(tmp_path / "given").settings["tau"] == 30


def test_hdp_default_local_step_is_cvb0_on_short_documents_and_scores_better(sotu, tmp_path):
    """The HDP picks its document step by LDA's rule: CVB0 on SOTU paragraphs with 225 updates,
    whose own predictive beats mean-field's there."""
    root, _ = sotu
    scores = {}
    for name, extra in (("auto", []), ("meanfield", ["--local", "meanfield"])):
        out = run("fit", root / "corpus", "--model", "hdp", "-k", "30", "--batch-size", "16", "--tau", "10",
                  "--passes", "1", "--json", "-q", "-o", tmp_path / name, *extra)
        assert json.loads(out.output)["local"] == ("cvb0" if name == "auto" else "meanfield")
        scores[name] = json.loads(run("eval", tmp_path / name, root / "corpus-heldout", "--json").output)
    assert scores["auto"]["protocol"] == "own"
    assert scores["auto"]["per_word_ll"] > scores["meanfield"]["per_word_ll"] + 0.1    # measured: +0.27


def test_default_local_step_is_meanfield_for_long_documents(tmp_path):
    from synthetic import lda_documents, planted_topics, write_corpus
    from topicscale.runs import default_local
    rng = np.random.default_rng(5)
    beta = planted_topics(4, 400, rng)
    config = {"model": "lda", "algorithm": "svi", "passes": 1.0, "max_docs": 0, "batch_size": 1}
    for length, local in ((300, "meanfield"), (40, "cvb0")):       # about 90 and 35 distinct words
        corpus = write_corpus(tmp_path / str(length), lda_documents(beta, 200, length, 0.5, rng), 400)
        assert (corpus.nnz > 64 * corpus.n_docs) == (local == "meanfield")
        assert default_local(dict(config, corpus=str(tmp_path / str(length)))) == local
        assert default_local(dict(config, model="hdp", corpus=str(tmp_path / str(length)))) == local
    assert default_local(dict(config, algorithm="scvb0", corpus=str(tmp_path / "40"))) == "cvb0"
    assert default_local(dict(config, algorithm="ssmf", corpus=str(tmp_path / "40"))) == "gibbs"


def test_largest_per_column_matches_a_full_sort():
    """`topics` finds each topic's top words block by block; the same words as a full sort."""
    from topicscale.cli import _largest_per_column
    rng = np.random.default_rng(7)
    matrix = rng.random((10_500, 7))          # the last block (500 rows) is shorter than n = 999
    for n in (1, 10, 999):
        got = _largest_per_column(matrix, n, block_rows=1000)
        expected = np.argsort(-matrix, axis=0)[:n]
        assert got.shape == (n, 7)
        assert all(set(got[:, k]) == set(expected[:, k]) for k in range(7))
    small = rng.random((5, 3))
    assert np.array_equal(np.sort(_largest_per_column(small, 9), axis=0), np.tile(np.arange(5)[:, None], (1, 3)))


def test_eval_coherence_in_the_training_corpus_and_diversity_in_info(model):
    """`eval --coherence` without CORPUS scores the topics in the training corpus the model
    records; `info` shows the diversity eval reports."""
    root, _ = model
    out = json.loads(run("eval", root / "model", "--coherence", "u_mass,c_npmi,c_uci,c_v", "--json").stdout)
    assert out["reference"] == str((root / "corpus").resolve()) and out["top_n"] == 10
    assert out["topics"] == list(range(8)) and out["absent_words"] == []
    for name in ("u_mass", "c_npmi", "c_uci", "c_v"):
        scores = out["coherence"][name]["per_topic"]
        assert len(scores) == 8 and all(np.isfinite(scores))
        assert out["coherence"][name]["mean"] == pytest.approx(np.mean(scores))
    assert all(-1 <= s <= 1 for s in out["coherence"]["c_npmi"]["per_topic"])
    assert all(s < 0 for s in out["coherence"]["u_mass"]["per_topic"])
    info = json.loads(run("info", root / "model", "--json").output)
    assert 0 < info["diversity"] == out["diversity"] <= 1
    rows = json.loads(run("topics", root / "model", "-n", "3", "--json").stdout)
    assert [r["coherence"]["c_v"] for r in rows] == out["coherence"]["c_v"]["per_topic"]


def test_fit_says_how_many_topics_repeat_another(sotu, tmp_path):
    """Too many topics for 3,600 paragraphs: after one pass some share most of their top words,
    and fit's summary, its printed line and `info` count the same ones."""
    root, _ = sotu
    out = run("fit", root / "corpus", "-k", "60", "--passes", "1", "--seed", "1", "-o", tmp_path / "m").output
    summary = [json.loads(l) for l in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()][-1]
    repeated = json.loads(run("info", tmp_path / "m", "--json").output)["repeated_topics"]
    assert 6 <= summary["repeated_topics"] == repeated < 60
    assert f"{repeated} topics repeat another's top words" in out
    assert "fewer topics (-k) may suit this corpus; --polish 20 pulls them apart" in out
    # `topics` names, for each topic, the topics it repeats: the same ones, both ways
    rows = {r["topic"]: r for r in json.loads(run("topics", tmp_path / "m", "--json").stdout)}
    assert sum(1 for r in rows.values() if r["repeats"]) == repeated
    for k, r in rows.items():
        for j in r["repeats"]:
            assert k in rows[j]["repeats"] and 2 * len(set(r["words"]) & set(rows[j]["words"])) > 10
    text = run("topics", tmp_path / "m").stdout.splitlines()
    assert sum("[repeats " in line for line in text) == repeated


def test_the_repeats_line_says_what_to_try_only_when_a_tenth_of_the_topics_repeat():
    from topicscale.cli import _repeats_line
    lda = {"model": "lda", "topics": 50, "repeated_topics": 5}
    assert _repeats_line(dict(lda, repeated_topics=4)).endswith("top 10 shared)")
    assert "fewer topics (-k)" in _repeats_line(lda) and "--polish 20" in _repeats_line(lda)
    kept_passes = {"sweeps": 10, "kept": 0, "scores": [-7.0, -7.1]}
    assert "--polish 20" in _repeats_line(dict(lda, polish=kept_passes))
    assert "--polish" not in _repeats_line(dict(lda, polish=dict(kept_passes, kept=10)))
    assert "--polish" not in _repeats_line(dict(lda, polish={"sweeps": 20, "seconds": 1.0}))
    assert "--polish" not in _repeats_line(dict(lda, polish={"sweeps": 0, "skipped": "memory"}))
    sized = dict(lda, sweeps_bytes=7_300_000_000)
    assert "--start assignment keeps them apart" in _repeats_line(sized) and "take 6.8 GiB" in _repeats_line(sized)
    assert "--start" not in _repeats_line(dict(sized, start="assignment"))
    assert "--start" not in _repeats_line(dict(sized, repeated_topics=4))
    assert "--start" not in _repeats_line(dict(sized, init="model"))          # refused with --init
    assert "take 29 MiB" in _repeats_line(dict(lda, sweeps_bytes=30_000_000))
    hdp = {"model": "hdp", "topics": 150, "listed_topics": 40, "repeated_topics": 4, "polish": kept_passes}
    assert "-k" not in _repeats_line(hdp) and "--polish 20" in _repeats_line(hdp)      # a tenth of 40
    assert "--merge --heldout" in _repeats_line(hdp)
    assert "--merge" not in _repeats_line(dict(hdp, merge={"merged": 2}))
    assert _repeats_line(dict(hdp, repeated_topics=3)).endswith("top 10 shared)")
    ctm = _repeats_line({"model": "ctm", "topics": 50, "repeated_topics": 5})
    assert "fewer topics (-k)" in ctm and "--polish" not in ctm and "--merge" not in ctm


def test_fit_says_when_the_hdp_truncation_bounds_its_topics(model, tmp_path):
    from topicscale.cli import _truncation_binds
    root, _ = model
    assert _truncation_binds({"model": "hdp", "topics": 150, "truncation": 150, "listed_topics": 148})
    assert not _truncation_binds({"model": "hdp", "topics": 150, "truncation": 150, "listed_topics": 128})
    assert not _truncation_binds({"model": "lda", "topics": 50, "listed_topics": 50})
    # a continuation that dropped the topics its merges emptied lists all it kept, fewer than its K
    assert not _truncation_binds({"model": "hdp", "topics": 74, "truncation": 100, "listed_topics": 73})
    out = run("fit", root / "corpus", "--model", "hdp", "-k", "3", "--passes", "1", "--polish", "0",
              "-o", tmp_path / "h").stdout
    assert "the HDP lists 3 of its 3 topics: the truncation (-k), not the corpus, bounds" in out


def test_threads_outside_the_cores_are_refused(sotu, tmp_path):
    root, _ = sotu
    r = run("fit", root / "corpus", "--threads", "0", "-o", tmp_path / "m", ok=False)
    assert r.exit_code == 2 and "--threads" in r.output and "must be between 1 and" in r.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("collide", [False, True])
def test_prepare_counts_and_names_repeated_document_ids(tmp_path, monkeypatch, collide):
    """Repeated ids are written as given (a bag of words may repeat them) but counted, and the
    first is named with both files and lines; an empty document skipped is no repeat. With every
    id hashed alike, only equal ids count."""
    from topicscale.corpus import prepare as prepare_module
    if collide:
        monkeypatch.setattr(prepare_module, "hash", lambda doc_id: 7, raising=False)
    rows = [("a", "red green blue"), ("b", "green blue"), ("a", "blue red"), ("c", "red"),
            ("b", "green red"), ("c", "the of")]      # the last is empty once stop words go
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows))
    r = run("prepare", source, "--min-df", "1", "--max-df", "1", "-q", "--json", "-o", tmp_path / "c")
    summary = json.loads(r.stdout)
    assert summary["repeated_ids"] == 2 and summary["skipped_empty"] == 1
    assert summary["first_repeated_id"] == f"'a' at {source}:1 and {source}:3"
    assert "warning: 2 document(s) repeat an earlier one's id (first 'a'" in r.stderr
    assert (tmp_path / "c" / "ids.txt").read_text().split() == ["a", "b", "a", "c", "b"]
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip("abcd", ["red", "green", "blue", "red blue"])))
    r = run("prepare", source, "--min-df", "1", "--max-df", "1", "-q", "--json", "-o", tmp_path / "d")
    assert json.loads(r.stdout)["repeated_ids"] == 0 and "warning" not in r.stderr


def test_prepare_without_heldout_warns_of_an_earlier_heldout_corpus(tmp_path):
    """Prepared again without --heldout, OUTPUT holds the documents an earlier `prepare --heldout`
    put into OUTPUT-heldout: that corpus is kept, named on stderr and in --json."""
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"text": f"red green blue w{i % 3}"}) + "\n" for i in range(20)))
    args = ("prepare", source, "--min-df", "1", "--max-df", "1", "-q", "--json", "-o", tmp_path / "c")
    r = run(*args)
    assert "stale_heldout" not in json.loads(r.stdout) and "warning" not in r.stderr
    run(*args, "--heldout", "5")
    r = run(*args)
    held = tmp_path / "c-heldout"
    assert json.loads(r.stdout)["stale_heldout"] == str(held) and Corpus(held).n_docs == 5
    assert f"warning: {held} is left from an earlier prepare with --heldout: its documents may now be in " \
           f"{tmp_path / 'c'} too" in r.stderr
    assert "stale_heldout" not in json.loads(run(*args, "--heldout", "5").stdout)


def test_prepare_counts_dropped_tokens_as_info_does(tmp_path):
    """prepare --json's dropped_tokens are the training corpus's and heldout_dropped_tokens the
    held-out corpus's, as `info` reports them; the text line counts both. Each document has a word
    of its own, which --min-df 2 drops."""
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"text": f"red green blue zq{chr(97 + i)}"}) + "\n" for i in range(20)))
    args = ("prepare", source, "--heldout", "5", "--min-df", "2", "--max-df", "1", "-q")
    s = json.loads(run(*args, "--json", "-o", tmp_path / "c").stdout)
    train, held = (json.loads(run("info", tmp_path / c, "--json").stdout) for c in ("c", "c-heldout"))
    assert (s["dropped_tokens"], s["heldout_dropped_tokens"]) == (15, 5)
    assert (train["dropped_tokens"], train["heldout_dropped_tokens"], held["dropped_tokens"]) == (15, 5, 5)
    assert "dropped 20 out-of-vocabulary tokens (5 of them held out)" in run(*args, "-o", tmp_path / "d").stdout


def test_standard_input_beside_a_file_names_its_documents_stdin(tmp_path):
    """With several inputs a document's id is FILE:LINE; standard input's is <stdin>:LINE, not the
    path of the temporary copy prepare reads it from twice."""
    (tmp_path / "a.jsonl").write_text('{"text": "alpha beta gamma"}\n{"text": "beta gamma delta"}\n')
    run("prepare", "-", tmp_path / "a.jsonl", "--format", "jsonl", "--min-df", "1", "--max-df", "1",
        "-q", "-o", tmp_path / "c", input='{"text": "gamma alpha"}\n\n{"text": "zeta beta"}\n')
    assert (tmp_path / "c" / "ids.txt").read_text().split() == [
        "<stdin>:1", "<stdin>:3", f"{tmp_path / 'a.jsonl'}:1", f"{tmp_path / 'a.jsonl'}:2"]


def test_output_errors_name_the_path_given_not_a_temporary_one(model, tmp_path, monkeypatch):
    """An output under a file, or in a folder that refuses writes, is named as the user gave it:
    not the hidden temporary file or folder written first and renamed into place."""
    import tempfile
    root, _ = model
    (tmp_path / "plain.txt").write_text("alpha beta\ngamma delta\n")
    for args in (("prepare", tmp_path / "plain.txt", "--min-df", "1", "-o", tmp_path / "plain.txt" / "c"),
                 ("export", root / "model", "-o", tmp_path / "plain.txt" / "t.npy"),
                 ("report", root / "model", "-o", tmp_path / "plain.txt" / "r.html")):
        r = run(*args, ok=False)
        assert r.exit_code == 2 and f"{args[-1]}: {tmp_path / 'plain.txt'} is a file, not a folder" in r.output

    def refused(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted", str(kwargs["dir"] / ".x.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    for args in (("prepare", tmp_path / "plain.txt", "--min-df", "1", "-o", tmp_path / "c"),
                 ("export", root / "model", "-o", tmp_path / "t.npy")):
        r = run(*args, ok=False)
        assert r.output == f"topicscale: error: {args[-1]}: cannot write in {tmp_path} (Operation not permitted)\n"


def test_json_lines_on_standard_input_need_their_format(tmp_path):
    """Standard input has no name to guess its format from: JSON lines read as text would make
    their keys and ids words, so prepare asks for --format; given, either format is read."""
    lines = '{"id": "a", "text": "alpha beta"}\n{"id": "b", "text": "beta gamma"}\n'
    r = run("prepare", "-", "-q", "-o", tmp_path / "c", input="\n" + lines, ok=False)
    assert r.exit_code == 2 and "<stdin>:2: standard input looks like JSON lines" in r.output
    assert not (tmp_path / "c").exists()
    run("prepare", "-", "--format", "jsonl", "--min-df", "1", "--max-df", "1", "-q", "-o", tmp_path / "c",
        input=lines)
    assert (tmp_path / "c" / "ids.txt").read_text().split() == ["a", "b"]
    run("prepare", "-", "--format", "text", "--min-df", "1", "--max-df", "1", "-q", "-o", tmp_path / "t",
        input=lines)
    assert "text" in (tmp_path / "t" / "vocab.txt").read_text().split()


def test_new_text_is_tokenised_as_the_training_corpus_was(tmp_path):
    """prepare records its token pattern and stop words; fit copies them into the model; infer and
    prepare --vocab CORPUS|MODEL tokenise new text alike unless told otherwise (they used the
    defaults: 'b52' was no token and 'the' a stop word, so every word of the model was dropped)."""
    (tmp_path / "t.txt").write_text("b52 f16 m4 the\nb52 m4 tank the\nf16 jet the\nb52 f16 jet tank\n")
    run("prepare", tmp_path / "t.txt", "--token-pattern", "[a-z0-9]+", "--stopwords", "none", "--min-df", "1",
        "--max-df", "1.0", "-q", "-o", tmp_path / "c")
    assert "b52" in (tmp_path / "c" / "vocab.txt").read_text().split()
    run("fit", tmp_path / "c", "-k", "2", "--passes", "3", "-q", "-o", tmp_path / "m")
    assert load_model(tmp_path / "m").settings["tokenizer"] == {"token_pattern": "[a-z0-9]+", "stopwords": "none"}
    (tmp_path / "new.txt").write_text("b52 f16 the\n")
    r = run("infer", tmp_path / "m", tmp_path / "new.txt")
    assert "none of the model's words" not in r.stderr
    for reference in ("c", "m"):
        s = json.loads(run("prepare", tmp_path / "new.txt", "--vocab", tmp_path / reference, "--json", "-q",
                           "-o", tmp_path / f"n-{reference}").stdout)
        assert s["tokens"] == 3 and s["dropped_tokens"] == 0         # b52, f16 and the
    s = json.loads(run("prepare", tmp_path / "new.txt", "--vocab", tmp_path / "m", "--stopwords", "english",
                       "--json", "-q", "-o", tmp_path / "n-given").stdout)
    assert s["tokens"] == 2                         # the options given win
    assert "records no tokenizer" not in r.stderr


def test_text_for_a_model_that_records_no_tokenizer_is_warned_of(tmp_path):
    """A model fitted from a matrix (the Python API) records no tokenizer: infer and prepare --vocab
    tokenise text by the defaults, and say so (the words dropped differed silently); not when the
    tokenizer is given."""
    from scipy.sparse import csr_matrix
    from topicscale import LDA
    X = csr_matrix(np.array([[2, 1, 0, 1], [0, 1, 3, 1], [1, 0, 1, 2]]))
    LDA(n_components=2, passes=2, threads=1).fit(X, vocabulary=["b52", "jet", "tank", "the"]).save(tmp_path / "m")
    (tmp_path / "new.txt").write_text("b52 jet the\n")
    r = run("infer", tmp_path / "m", tmp_path / "new.txt")
    assert "m records no tokenizer" in r.stderr and "topicscale prepare --vocab MODEL" in r.stderr
    r = run("prepare", tmp_path / "new.txt", "--vocab", tmp_path / "m", "-q", "-o", tmp_path / "c")
    assert "records no tokenizer" in r.stderr and "give --token-pattern and --stopwords" in r.stderr
    r = run("prepare", tmp_path / "new.txt", "--vocab", tmp_path / "m", "--token-pattern", "[a-z0-9]+",
            "--stopwords", "none", "--json", "-q", "-o", tmp_path / "given")
    assert "records no tokenizer" not in r.stderr and json.loads(r.stdout)["tokens"] == 3


def test_fit_says_why_it_stopped_and_report_and_init_say_what_to_give(model, tmp_path):
    root, _ = model
    r = run("fit", root / "corpus", "-k", "3", "--max-docs", "300", "-q", "-o", tmp_path / "m")
    assert "stopped by --max-docs" in r.stdout
    r = run("fit", root / "corpus", "--init", tmp_path / "m", "--model", "hdp", "-o", tmp_path / "h", ok=False)
    assert_user_error(r, "--init model is lda, not hdp: add --model lda")
    run("fit", root / "corpus", "--model", "hdp", "-k", "5", "--passes", "1", "-q", "-o", tmp_path / "h0")
    run("fit", root / "corpus", "--init", tmp_path / "h0", "--passes", "1", "-q", "-o", tmp_path / "h1")
    assert load_model(tmp_path / "h1").kind == "hdp"        # continued as what it is, --model not given
    r = run("report", root / "model", "-o", f"{tmp_path / 'pages'}/", ok=False)
    assert_user_error(r, "names a folder; give the report's file name")
    assert not (tmp_path / "pages").exists()


def test_init_continues_with_the_models_own_local_step(sotu, tmp_path):
    """--init without --local keeps the step the model was trained with (a one-pass continuation's
    rule chose mean-field for a CVB0 HDP, beside the alpha0 of CVB0 the model keeps); --local
    still chooses."""
    root, _ = sotu
    run("fit", root / "corpus", "--model", "hdp", "-k", "10", "-q", "-o", tmp_path / "h")
    assert load_model(tmp_path / "h").settings["local"] == "cvb0"
    run("fit", root / "corpus", "--model", "hdp", "--init", tmp_path / "h", "--passes", "1", "-q", "-o", tmp_path / "h2")
    assert load_model(tmp_path / "h2").settings["local"] == "cvb0"
    run("fit", root / "corpus", "--model", "hdp", "--init", tmp_path / "h", "--passes", "1", "--local", "meanfield",
        "-q", "-o", tmp_path / "h3")
    assert load_model(tmp_path / "h3").settings["local"] == "meanfield"


@pytest.mark.parametrize("output", [".", "", "/", ".."])
def test_an_output_that_names_no_folder_is_refused_and_leaves_nothing(model, tmp_path, monkeypatch, output):
    """'.', '', '/' and '..' name no folder to write or replace: refused, and nothing (not even a
    hidden folder set aside for the replacement) is left in the current folder."""
    root, _ = model
    (tmp_path / "in.txt").write_text("apple pear plum\npear plum fig\napple fig plum\n")
    monkeypatch.chdir(tmp_path)
    for args in (["prepare", "in.txt", "--min-df", "1", "-o", output],
                 ["prepare", "in.txt", "--min-df", "1", "--heldout", "1", "--heldout-output", output, "-o", "c"],
                 ["synth", root / "model", "-n", "3", "-o", output]):
        assert_user_error(run(*args, ok=False), "give the name of the folder or file to write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
    from topicscale.atomic import atomic_dir
    from topicscale.errors import TopicscaleError
    with pytest.raises(TopicscaleError, match="give the name"):
        with atomic_dir(Path(output)):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_a_token_pattern_python_cannot_compile_is_one_line(tmp_path):
    (tmp_path / "in.txt").write_text("apple pear plum\n")
    for pattern in ("(", "a{99999999999}"):
        assert_user_error(run("prepare", tmp_path / "in.txt", "--token-pattern", pattern, "-o", tmp_path / "c",
                              ok=False), "invalid token pattern")
    assert not (tmp_path / "c").exists()

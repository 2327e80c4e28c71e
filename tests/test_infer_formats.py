"""`topicscale infer -o FILE.tsv|.csv|.npy|.parquet`: the extension picks the format, every format
reads back to the same numbers and ids, blocks are streamed, bad extensions and a missing pyarrow
are refused with exit status 2, and a failure leaves an earlier file as it was."""
import csv
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics
from topicscale.cli import cli
from topicscale.corpus.shards import Corpus, CorpusWriter

V = 80
IDS_WITH_SEPARATORS = ['a,b', 'say "hi"', "tab\there", "plain"]


def run(*args, code=0):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """An LDA model and a 23-document corpus whose ids hold commas, quotes and tabs."""
    root = tmp_path_factory.mktemp("infer")
    rng = np.random.default_rng(4)
    beta = planted_topics(4, V, rng)
    docs = list(lda_documents(beta, 223, 30, 0.3, rng))
    with CorpusWriter(root / "train", [f"w{i}" for i in range(V)]) as w:
        for i, (ids, counts) in enumerate(docs[:200]):
            w.add(f"t{i}", ids, counts)
    with CorpusWriter(root / "new", [f"w{i}" for i in range(V)]) as w:
        for i, (ids, counts) in enumerate(docs[200:]):
            w.add(IDS_WITH_SEPARATORS[i] if i < len(IDS_WITH_SEPARATORS) else f"n{i}", ids, counts)
    run("fit", root / "train", "-k", "4", "--passes", "2", "--batch-size", "50", "--seed", "1", "-o", root / "m")
    return root


def small_blocks(monkeypatch, size=5):
    """Stream the corpus in blocks of `size` documents (so outputs are written in several pieces)."""
    row_blocks = Corpus.row_blocks
    monkeypatch.setattr(Corpus, "row_blocks", lambda self, block_docs=size: row_blocks(self, block_docs))


def read_text_table(path, delimiter):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    return rows[0], [r[0] for r in rows[1:]], np.array([[float(x) for x in r[1:]] for r in rows[1:]])


def test_every_format_reads_back_to_the_npy_numbers_and_ids(setup, tmp_path, monkeypatch):
    root = setup
    small_blocks(monkeypatch)
    for ext in ("npy", "tsv", "csv", "parquet"):
        run("infer", root / "m", root / "new", "-o", tmp_path / f"theta.{ext}")
    theta = np.load(tmp_path / "theta.npy")
    ids = (tmp_path / "theta.ids.txt").read_text().split("\n")[:-1]
    assert theta.shape == (23, 4) and np.allclose(theta.sum(axis=1), 1.0)
    assert ids == Corpus(root / "new").ids() and ids[:4] == IDS_WITH_SEPARATORS
    header = ["id", "topic_0", "topic_1", "topic_2", "topic_3"]
    for ext, delimiter in (("tsv", "\t"), ("csv", ",")):
        got_header, got_ids, values = read_text_table(tmp_path / f"theta.{ext}", delimiter)
        assert got_header == header and got_ids == ids
        np.testing.assert_array_equal(values, theta)        # the shortest text that reads back exactly
    import pyarrow.parquet as pq
    table = pq.read_table(tmp_path / "theta.parquet")
    assert table.column_names == header and table.column("id").to_pylist() == ids
    np.testing.assert_array_equal(np.column_stack([table.column(c).to_numpy() for c in header[1:]]), theta)
    assert pq.ParquetFile(tmp_path / "theta.parquet").metadata.num_row_groups == 5   # 23 documents, blocks of 5


def test_the_block_size_does_not_change_the_numbers(setup, tmp_path, monkeypatch):
    root = setup
    run("infer", root / "m", root / "new", "-o", tmp_path / "whole.npy")
    small_blocks(monkeypatch, 3)
    run("infer", root / "m", root / "new", "-o", tmp_path / "blocks.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "whole.npy"), np.load(tmp_path / "blocks.npy"))


def test_a_bad_extension_is_refused_before_any_work(setup, tmp_path):
    root = setup
    for name in ("theta.txt", "theta", "theta.json"):
        result = run("infer", root / "m", root / "new", "-o", tmp_path / name, code=2)
        assert "must end in .tsv, .csv, .npy, .parquet" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_failure_leaves_the_earlier_file(setup, tmp_path):
    root = setup
    run("infer", root / "m", root / "new", "-o", tmp_path / "theta.csv")
    before = (tmp_path / "theta.csv").read_bytes()
    with CorpusWriter(tmp_path / "other", ["x", "y"]) as w:
        w.add("d", np.array([0], dtype=np.int32), np.array([2], dtype=np.int32))
    result = run("infer", root / "m", tmp_path / "other", "-o", tmp_path / "theta.csv", code=2)
    assert "vocabulary differs" in result.output
    assert (tmp_path / "theta.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "theta.csv"]


def test_a_corpus_failing_at_once_prints_no_header_to_standard_output(setup, tmp_path):
    import shutil
    root = setup
    shutil.copytree(root / "new", tmp_path / "bad")
    shard = tmp_path / "bad" / "shard-00000.indices.npy"
    shard.write_bytes(shard.read_bytes()[:200])
    result = run("infer", root / "m", tmp_path / "bad", code=2)
    assert result.stdout == "" and "unreadable shard" in result.stderr


def test_an_output_in_a_missing_folder_is_named_not_its_temporary_file(setup, tmp_path):
    root = setup
    result = run("infer", root / "m", root / "new", "-o", tmp_path / "nowhere" / "theta.tsv", code=2)
    assert result.output.strip() == (f"topicscale: error: {tmp_path / 'nowhere' / 'theta.tsv'}: "
                                     f"the folder {tmp_path / 'nowhere'} does not exist")
    assert list(tmp_path.iterdir()) == []


def test_format_of_raw_inputs_is_refused_with_a_prepared_corpus(setup, tmp_path):
    root = setup
    result = run("infer", root / "m", root / "new", "--format", "jsonl", "-o", tmp_path / "t.tsv", code=2)
    assert "--format jsonl is the format of raw INPUTS" in result.output and "prepared corpus" in result.output
    text = tmp_path / "more.txt"
    text.write_text("w1 w2 w3\n")
    result = run("infer", root / "m", root / "new", text, "-o", tmp_path / "t.tsv", code=2)
    assert "a prepared corpus, not a folder of .txt documents" in result.output
    assert not (tmp_path / "t.tsv").exists()


def test_without_pyarrow_parquet_says_how_to_install_it(setup, tmp_path):
    root = setup
    code = ("import sys; sys.modules['pyarrow'] = None\nfrom topicscale.cli import main; "
            f"main(['infer', {str(root / 'm')!r}, {str(root / 'new')!r}, '-o', {str(tmp_path / 't.parquet')!r}])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "pip install 'topicscale[parquet]'" in result.stderr and not (tmp_path / "t.parquet").exists()


def test_json_lines_fields_are_named_as_for_prepare(setup, tmp_path):
    """--text-field and --id-field read JSON lines of another layout, as prepare's do; with other
    inputs they are refused, not ignored."""
    import json
    root = setup
    rows = [{"doc": "x1", "body": "w1 w2 w3 w1"}, {"doc": "x2", "body": "w5 w6"}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"id": r["doc"], "text": r["body"]}) + "\n"
                                              for r in rows))
    named = run("infer", root / "m", tmp_path / "b.jsonl", "--text-field", "body", "--id-field", "doc",
                "-q").stdout
    assert named == run("infer", root / "m", tmp_path / "t.jsonl", "-q").stdout
    assert [line.split("\t")[0] for line in named.splitlines()] == ["id", "x1", "x2"]
    result = run("infer", root / "m", tmp_path / "b.jsonl", code=2)
    assert "no field 'text'" in result.output
    for args in ((root / "new", "--id-field", "doc"), (tmp_path / "b.jsonl", "--format", "text", "--text-field", "b")):
        result = run("infer", root / "m", *args, code=2)
        assert "of JSON lines INPUTS, which these are not" in result.output


def test_a_full_temporary_folder_is_named_with_what_chooses_it(setup, tmp_path, monkeypatch):
    """Standard input is copied into the temporary folder, and infer encodes raw INPUTS there: with
    no space there the error names that folder and TMPDIR."""
    import errno
    import shutil
    import tempfile
    root = setup
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    said = f"the temporary folder {tmp_path}: No space left on device (TMPDIR chooses that folder)"
    with monkeypatch.context() as m:
        m.setattr(shutil, "copyfileobj", full)
        for args in (["prepare", "-", "--format", "text", "-o", tmp_path / "c"],
                     ["infer", root / "m", "-", "--format", "text"]):
            result = CliRunner().invoke(cli, [str(a) for a in args], input="w1 w2\n")
            assert (result.exit_code, result.stderr) == (2, f"topicscale: error: cannot copy standard input "
                                                            f"into {said}\n")
    (tmp_path / "docs.txt").write_text("w1 w2\n")
    monkeypatch.setattr(CorpusWriter, "add", full)
    result = run("infer", root / "m", tmp_path / "docs.txt", code=2)
    assert result.stderr == f"topicscale: error: cannot encode the documents in {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt"]

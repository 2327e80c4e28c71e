"""Every reader's bad input through the CLI: one line naming file and line, exit status 2,
nothing written, and the existing corpus in the output folder left untouched."""
import gzip

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from topicscale.cli import cli

VOCAB = "apple\nbanana\ncherry\n"
UCI_OK = "2\n3\n3\n1 1 2\n1 3 1\n2 2 4\n"


def gz(text):
    return gzip.compress(text.encode())


CASES = {
    # name: (file name, bytes, expected location in the message)
    "uci negative count": ("docword.bad.txt", b"2\n3\n2\n1 1 2\n2 2 -4\n", "docword.bad.txt:5"),
    "uci non-integer count": ("docword.bad.txt", b"2\n3\n2\n1 1 2\n2 2 1.5\n", "docword.bad.txt:5"),
    "uci word id out of range": ("docword.bad.txt", b"2\n3\n2\n1 1 2\n2 9 1\n", "docword.bad.txt:5"),
    "uci header vs vocabulary": ("docword.bad.txt", b"2\n4\n1\n1 1 2\n", "docword.bad.txt:2"),
    "uci truncated gzip": ("docword.bad.txt.gz", gz(UCI_OK * 50)[:-30], "docword.bad.txt.gz"),
    "uci non-UTF-8": ("docword.bad.txt", b"2\n3\n1\n1 1 \xff\n", "docword.bad.txt:4"),
    "ldac negative count": ("bad.ldac", b"1 0:2\n1 1:-1\n", "bad.ldac:2"),
    "ldac non-integer count": ("bad.ldac", b"1 0:2\n1 1:x\n", "bad.ldac:2"),
    "ldac word id out of range": ("bad.ldac", b"1 0:2\n1 3:1\n", "bad.ldac:2"),
    "ldac truncated gzip": ("bad.ldac.gz", gz("2 0:1 1:2\n" * 500)[:-20], "bad.ldac.gz"),
    "ldac non-UTF-8": ("bad.ldac", b"1 0:2\n\xc3\x28\n", "bad.ldac:2"),
    "mm negative count": ("bad.mm", b"%%MatrixMarket matrix coordinate integer general\n2 3 2\n1 1 2\n2 2 -1\n",
                          "bad.mm:4"),
    "mm word id out of range": ("bad.mm", b"%%MatrixMarket matrix coordinate integer general\n2 3 2\n1 1 2\n2 5 1\n",
                                "bad.mm:4"),
    "mm non-integer count": ("bad.mm", b"%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 2\n2 2 0.5\n",
                             "bad.mm:4"),
    "text non-UTF-8": ("bad.txt", b"apple banana\ncherry \xff apple\n", "bad.txt:2"),
    "text truncated gzip": ("bad.txt.gz", gz("apple banana cherry\n" * 500)[:-20], "bad.txt.gz"),
    "jsonl not JSON": ("bad.jsonl", b'{"text": "apple banana"}\n{"text": \n', "bad.jsonl:2"),
    "jsonl missing field": ("bad.jsonl", b'{"text": "apple banana"}\n{"body": "x"}\n', "bad.jsonl:2"),
    "jsonl non-UTF-8": ("bad.jsonl", b'{"text": "apple banana"}\n{"text": "\xff"}\n', "bad.jsonl:2"),
    "text empty corpus": ("empty.txt", b"\n\nthe of and\n", "empty.txt"),
    "ldac empty corpus": ("empty.ldac", b"0\n\n", "empty.ldac"),
}


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def existing(tmp_path):
    """A valid corpus already in the output folder."""
    (tmp_path / "vocab.txt").write_text(VOCAB)
    (tmp_path / "ok.ldac").write_text("2 0:1 1:2\n1 2:3\n")
    r = CliRunner().invoke(cli, ["prepare", str(tmp_path / "ok.ldac"), "--vocab", str(tmp_path / "vocab.txt"),
                                 "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    return tmp_path


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(existing, case):
    name, content, where = CASES[case]
    (existing / name).write_bytes(content)
    before = snapshot(existing / "out")
    entries = set(p.name for p in existing.iterdir())
    r = CliRunner().invoke(cli, ["prepare", str(existing / name), "--vocab", str(existing / "vocab.txt"),
                                 "-o", str(existing / "out")])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topicscale: error: ") and where in lines[0], r.output
    assert snapshot(existing / "out") == before                      # existing corpus untouched
    assert set(p.name for p in existing.iterdir()) == entries        # no temporary leftovers


def test_damaged_native_shard_is_refused_by_fit(existing, tmp_path):
    out = existing / "out"
    np.save(out / "shard-00000.counts.npy", np.array([1, -2, 3], dtype=np.int32))
    r = CliRunner().invoke(cli, ["fit", str(out), "-k", "2", "-o", str(tmp_path / "m")])
    assert r.exit_code == 2 and "shard-00000.counts.npy" in r.output and "non-positive count" in r.output
    assert not (tmp_path / "m" / "model.npz").exists()


@pytest.mark.parametrize("part", ["indptr", "indices", "counts"])
def test_a_shard_cut_short_is_named_by_info_and_fit(existing, tmp_path, part):
    """A shard file shorter than its header says: `info` (from file sizes) and `fit` refuse the
    corpus in one line naming the file and saying to prepare it again."""
    out = existing / "out"
    path = out / f"shard-00000.{part}.npy"
    path.write_bytes(path.read_bytes()[:-4])
    for args in (["info", str(out)], ["fit", str(out), "-k", "2", "--threads", "1", "-o", str(tmp_path / "m")]):
        r = CliRunner().invoke(cli, args)
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1, r.output
        assert f"{path}: unreadable shard: the file is" in lines[0] and "shorter than the" in lines[0]
        assert lines[0].endswith("the corpus is damaged: prepare it again")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(part=st.sampled_from(["indptr", "indices", "counts"]), data=st.binary(max_size=200))
def test_arbitrary_bytes_in_a_shard_give_a_clear_error(existing, part, data):
    """A shard file replaced by arbitrary bytes: the corpus is refused with InputError, never a crash."""
    from topicscale.corpus.shards import Corpus
    from topicscale.errors import InputError
    path = existing / "out" / f"shard-00000.{part}.npy"
    original = path.read_bytes()
    try:
        path.write_bytes(data)
        with pytest.raises(InputError):
            Corpus(existing / "out").rows([0, 1])
    finally:
        path.write_bytes(original)

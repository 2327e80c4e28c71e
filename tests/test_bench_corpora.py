"""The benchmark corpora's parsers (benchmarks/corpora.py) on small texts in each source's format."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import corpora  # noqa: E402


def test_bible_chapters_join_each_chapters_verses():
    printed = ("\nGenesis 1\n\n  1 In the beginning God created the heaven and the earth.\n"
               "  2 And the earth was without form.\n\nGenesis 2\n\n  1 Thus the heavens were finished.\n"
               "\n1 Kings 3\n\n  1 And Solomon made affinity.\n\nSong of Solomon 1\n\n  1 The song of songs.\n")
    assert corpora.bible_chapters(printed) == [
        ("Genesis 1", "In the beginning God created the heaven and the earth. And the earth was without form."),
        ("Genesis 2", "Thus the heavens were finished."),
        ("1 Kings 3", "And Solomon made affinity."),
        ("Song of Solomon 1", "The song of songs.")]


def test_bible_chapters_refuse_a_line_of_another_format():
    with pytest.raises(corpora.BenchError, match="unexpected line"):
        corpora.bible_chapters("Genesis 1\nIn the beginning\n")


def test_write_jsonl_writes_each_pair_and_leaves_no_part_file(tmp_path):
    import gzip
    import json
    out = tmp_path / "c.jsonl.gz"
    assert corpora.write_jsonl(out, iter([("a#0", "first text"), ("b#1", "second")])) == 2
    assert [json.loads(line) for line in gzip.open(out, "rt")] == [
        {"id": "a#0", "text": "first text"}, {"id": "b#1", "text": "second"}]
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl.gz"]

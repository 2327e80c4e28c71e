import gzip
import io
import json
import os
import zlib

import numpy as np
import pytest

from topicscale.corpus.readers import (guess_format, iter_lines, iter_text_documents, open_bow,
                                       read_vocab)
from topicscale.corpus.tokenize import DEFAULT_TOKEN_PATTERN, Tokenizer, load_stopwords
from topicscale.corpus.writers import write_ldac, write_mm, write_uci, write_vocab
from topicscale.errors import InputError, TopicscaleError


# ---------------------------------------------------------------- helpers

def random_corpus(seed=0, n_docs=12, n_words=30):
    """Sorted unique ids, positive counts; empty documents in the middle and at the end."""
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(n_docs):
        k = 0 if d in (n_docs // 2, n_docs - 1) else rng.integers(1, 10)
        ids = np.sort(rng.choice(n_words, size=k, replace=False)).astype(np.int32)
        docs.append((ids, rng.integers(1, 20, size=k).astype(np.int32)))
    return docs, [f"word{i}" for i in range(n_words)]


def write_bytes(path, data):
    path.write_bytes(gzip.compress(data) if str(path).endswith(".gz") else data)
    return str(path)


def write_corpus(tmp_path, fmt, docs, vocab, gz=False):
    z = ".gz" if gz else ""
    if fmt == "uci":
        path, vocab_path = tmp_path / f"docword.test.txt{z}", tmp_path / "vocab.test.txt"
        write_uci(path, vocab_path, docs, vocab)
    elif fmt == "ldac":
        path, vocab_path = tmp_path / f"corpus.ldac{z}", tmp_path / "corpus.tokens"
        write_ldac(path, vocab_path, docs, vocab)
    else:
        path, vocab_path = tmp_path / f"corpus.mm{z}", tmp_path / f"vocab.txt{z}"
        write_mm(path, docs, len(vocab), vocab_path, vocab)
    return str(path), str(vocab_path)


def assert_same_docs(read, docs):
    assert len(read) == len(docs)
    for i, ((doc_id, ids, counts, _, _), (want_ids, want_counts)) in enumerate(zip(read, docs)):
        assert doc_id == str(i + 1)
        assert ids.dtype == np.int32 and counts.dtype == np.int32
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(counts, want_counts)


def raises_at(path, line):
    """Context manager: an InputError located at (path, line)."""
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(InputError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            err = self.info.value
            assert (err.path, err.line) == (str(path), line), str(err)
            return handled
    return Check()


def consume_bow(path, fmt, vocab_path=None):
    return list(open_bow(path, fmt, vocab_path).documents())


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("fmt", ["uci", "ldac", "mm"])
def test_bow_round_trip(tmp_path, fmt, gz):
    docs, vocab = random_corpus(seed=hash(fmt) % 100)
    path, vocab_path = write_corpus(tmp_path, fmt, docs, vocab, gz)
    src = open_bow(path, fmt)  # the vocabulary is found beside uci and ldac files
    if fmt == "mm":
        assert src.vocab is None
        src = open_bow(path, fmt, vocab_path)
    assert src.vocab == vocab and src.n_words == len(vocab)
    assert src.n_docs == (None if fmt == "ldac" else len(docs))
    assert_same_docs(list(src.documents()), docs)
    assert_same_docs(list(src), docs)  # re-iterable
    assert sorted(os.listdir(tmp_path)) == sorted({os.path.basename(path), os.path.basename(vocab_path)})


def test_mm_without_vocab(tmp_path):
    docs, vocab = random_corpus()
    write_mm(tmp_path / "c.mtx", docs, 40)
    src = open_bow(tmp_path / "c.mtx", "mm")
    assert src.vocab is None and src.n_words == 40 and src.n_docs == len(docs)
    assert_same_docs(list(src.documents()), docs)


def test_empty_corpus_yields_nothing(tmp_path):
    write_uci(tmp_path / "docword.txt", tmp_path / "vocab.txt", [], ["a", "b"])
    write_ldac(tmp_path / "c.ldac", tmp_path / "c.vocab", [], ["a", "b"])
    write_mm(tmp_path / "c.mm", [], 2)
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert consume_bow(tmp_path / "docword.txt", "uci") == []
    assert consume_bow(tmp_path / "c.ldac", "ldac") == []
    assert consume_bow(tmp_path / "c.mm", "mm") == []
    assert list(iter_text_documents([tmp_path / "empty.txt"], "text")) == []
    assert list(iter_text_documents([tmp_path / "empty.jsonl"], "jsonl")) == []


def test_duplicates_summed_and_sorted(tmp_path):
    (tmp_path / "v.txt").write_text("a\nb\nc\nd\n")
    (tmp_path / "c.ldac").write_text("3 3:1 1:2 3:4\n0\n\n")
    docs = consume_bow(tmp_path / "c.ldac", "ldac", tmp_path / "v.txt")
    assert [d[0] for d in docs] == ["1", "2", "3"]
    assert docs[0][1].tolist() == [1, 3] and docs[0][2].tolist() == [2, 5]
    assert docs[1][1].size == docs[2][1].size == 0
    (tmp_path / "docword.txt").write_text("3\n4\n3\n3 4 1\n3 2 2\n3 4 1\n")
    docs = consume_bow(tmp_path / "docword.txt", "uci", tmp_path / "v.txt")
    assert [d[0] for d in docs] == ["1", "2", "3"]
    assert docs[2][1].tolist() == [1, 3] and docs[2][2].tolist() == [2, 2]
    assert docs[2][4] == 4  # line of the document's first entry


def test_mm_real_pattern_and_comments(tmp_path):
    p = tmp_path / "c.mm"
    p.write_text("%%MatrixMarket matrix coordinate real general\n% a comment\n%\n"
                 "3 5 3\n1 2 3.0\n3 1 2\n3 5 1e1\n")
    docs = consume_bow(p, "mm")
    assert [d[1].tolist() for d in docs] == [[1], [], [0, 4]]
    assert [d[2].tolist() for d in docs] == [[3], [], [2, 10]]
    p.write_text("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n2 1\n2 3\n")
    docs = consume_bow(p, "mm")
    assert [d[2].tolist() for d in docs] == [[], [1, 1]]


def test_vocab_discovery(tmp_path):
    docs, vocab = random_corpus()
    write_ldac(tmp_path / "c.lda-c", None, docs, vocab)
    with raises_at(tmp_path / "c.lda-c", None) as err:
        open_bow(tmp_path / "c.lda-c", "ldac")
    assert "c.tokens" in str(err.value) and "vocab.txt" in str(err.value)
    for name in ["vocab.txt", "c.lda-c.vocab", "c.vocab", "c.tokens"]:
        write_vocab(tmp_path / name, vocab[:-1] + [name])  # the most specific name wins
        assert open_bow(tmp_path / "c.lda-c", "ldac").vocab[-1] == name
    uci = tmp_path / "uci"
    uci.mkdir()
    write_uci(uci / "docword.kos.txt.gz", None, docs, vocab)
    with raises_at(uci / "docword.kos.txt.gz", None) as err:
        open_bow(uci / "docword.kos.txt.gz", "uci")
    assert "vocab.kos.txt" in str(err.value)
    write_vocab(uci / "vocab.txt", vocab[:-1] + ["generic"])
    assert open_bow(uci / "docword.kos.txt.gz", "uci").vocab[-1] == "generic"
    write_vocab(uci / "vocab.kos.txt", vocab)
    assert open_bow(uci / "docword.kos.txt.gz", "uci").vocab == vocab


def test_read_vocab_fields_and_errors(tmp_path):
    p = tmp_path / "v.txt"
    p.write_text("\ufeffalpha\t12\n beta \ngamma\tx\ty\n")
    assert read_vocab(p) == ["alpha", "beta", "gamma"]
    p.write_text("alpha\nbeta\nalpha\n")
    with raises_at(p, 3):
        read_vocab(p)
    p.write_text("alpha\n\t3\nbeta\n")
    with raises_at(p, 2):
        read_vocab(p)


def test_writers_are_atomic(tmp_path):
    target = tmp_path / "c.ldac"
    target.write_text("old\n")
    bad = [([0], [1]), ([5], [1])]  # id 5 is out of range for 3 words
    for write in (lambda: write_ldac(target, None, bad, ["a", "b", "c"]),
                  lambda: write_uci(target, None, bad, ["a", "b", "c"]),
                  lambda: write_mm(target, bad, 3)):
        with pytest.raises(ValueError):
            write()
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["c.ldac"]
    with pytest.raises(ValueError):
        write_vocab(tmp_path / "v.txt", ["a", "b c ", "a"])
    assert os.listdir(tmp_path) == ["c.ldac"]


# ---------------------------------------------------------------- tokenizer and stop words

def test_tokenizer_defaults():
    t = Tokenizer()
    assert t.tokens("The Cat sat on a MAT, 42 times; mp3 x_1 state-of-the-art") == \
        ["the", "cat", "sat", "on", "mat", "times", "state", "of", "the", "art"]
    assert t.tokens("Café naïve\u0301 ÜBER") == ["café", "naïvé", "über"]  # NFC: e + U+0301 is é
    assert Tokenizer(lowercase=False).tokens("The Cat") == ["The", "Cat"]


def test_tokenizer_stopwords():
    english = load_stopwords("english")
    assert load_stopwords(None) is english and 250 <= len(english) <= 400
    assert {"the", "and", "of", "don", "ve"} <= english and "cat" not in english
    t = Tokenizer(english)
    assert t.tokens("The cat and THE dog don't bark") == ["cat", "dog", "bark"]
    assert load_stopwords("none") == frozenset()
    assert Tokenizer(load_stopwords("none")).tokens("the cat") == ["the", "cat"]
    # stop words match case-insensitively when lower-casing, exactly otherwise
    assert Tokenizer({"Cat"}).tokens("cat CAT dog") == ["dog"]
    assert Tokenizer({"Cat"}, lowercase=False).tokens("cat Cat") == ["cat"]


def test_stopword_file(tmp_path):
    p = tmp_path / "stop.txt"
    p.write_text("# my list\nfoo\n  bar  \n\n")
    assert load_stopwords(str(p)) == {"foo", "bar"}
    assert Tokenizer(load_stopwords(p)).tokens("foo baz bar") == ["baz"]
    with raises_at(tmp_path / "missing.txt", None):
        load_stopwords(str(tmp_path / "missing.txt"))


def test_token_pattern():
    assert DEFAULT_TOKEN_PATTERN
    t = Tokenizer(token_pattern=r"\w+")
    assert t.tokens("a b2 c_3") == ["a", "b2", "c_3"]
    assert Tokenizer(token_pattern=r"(x)(y)?").tokens("xy x") == ["xy", "x"]  # groups ignored
    assert Tokenizer(token_pattern=r"\d*").tokens("a1 22") == ["1", "22"]  # empty matches dropped
    with pytest.raises(TopicscaleError, match="invalid token pattern"):
        Tokenizer(token_pattern="([a-z]")


# ---------------------------------------------------------------- raw text

def test_text_single_file(tmp_path):
    p = tmp_path / "docs.txt"
    p.write_bytes(b"\xef\xbb\xbffirst doc\r\n\nthird doc\n")
    assert list(iter_text_documents([str(p)], "text")) == [
        ("1", "first doc", str(p), 1), ("2", "", str(p), 2), ("3", "third doc", str(p), 3)]
    assert list(iter_text_documents(p, "text"))[0][1] == "first doc"  # a single path is fine


def test_text_several_files_and_gzip(tmp_path):
    a = write_bytes(tmp_path / "a.txt", b"one\ntwo\n")
    b = write_bytes(tmp_path / "b.txt.gz", b"three\n")
    assert [(d[0], d[1]) for d in iter_text_documents([a, b], "text")] == [
        (f"{a}:1", "one"), (f"{a}:2", "two"), (f"{b}:1", "three")]


def test_text_directory(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    write_bytes(d / "b.txt", b"bee\nline two\n")
    write_bytes(d / "a.txt.gz", b"ay")
    write_bytes(d / "c.md", b"ignored")
    (d / "sub.txt").mkdir()  # not a file: ignored
    assert list(iter_text_documents([str(d)], "text")) == [
        ("a", "ay", str(d / "a.txt.gz"), 1), ("b", "bee\nline two", str(d / "b.txt"), 1)]
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "notes.md").write_text("not a document")
    with pytest.raises(InputError, match="none: no .txt or .txt.gz file in this folder"):
        list(iter_text_documents([str(tmp_path / "none")], "text"))


def test_a_prepared_corpus_is_not_read_as_a_text_directory(tmp_path):
    """Its ids.txt and vocab.txt are no documents (`infer MODEL CORPUS new.txt` read them as two)."""
    d = tmp_path / "corpus"
    d.mkdir()
    for name in ("manifest.json", "ids.txt", "vocab.txt"):
        write_bytes(d / name, b"x\n")
    with pytest.raises(InputError, match="a prepared corpus, not a folder of .txt documents"):
        list(iter_text_documents([str(d), str(d / "ids.txt")], "text"))


def test_text_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("alpha\nbeta\n"))
    assert list(iter_text_documents(["-"], "text")) == [
        ("1", "alpha", "<stdin>", 1), ("2", "beta", "<stdin>", 2)]
    raw = io.TextIOWrapper(io.BytesIO(b'{"text": "x"}\n\n{"text": "y", "id": 7}\n'), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", raw)
    assert list(iter_text_documents("-", "jsonl")) == [("1", "x", "<stdin>", 1), ("7", "y", "<stdin>", 3)]


def test_jsonl(tmp_path):
    rows = [{"text": "hello", "id": "doc-a"}, None, {"text": "world"}, {"body": "b", "text": "", "id": 3}]
    p = tmp_path / "c.jsonl.gz"
    write_bytes(p, "".join(" \n" if r is None else json.dumps(r) + "\n" for r in rows).encode())
    assert list(iter_text_documents([str(p)], "jsonl")) == [
        ("doc-a", "hello", str(p), 1), ("3", "world", str(p), 3), ("3", "", str(p), 4)]
    q = tmp_path / "d.jsonl"
    q.write_text('{"body": "x", "key": "k1"}\n{"body": "y"}\n')
    assert [d[:2] for d in iter_text_documents([q], "jsonl", text_field="body", id_field="key")] == [
        ("k1", "x"), ("2", "y")]
    assert [d[0] for d in iter_text_documents([q, q], "jsonl", text_field="body")] == [
        f"{q}:1", f"{q}:2", f"{q}:1", f"{q}:2"]


@pytest.mark.parametrize("path, fmt", [
    ("docword.kos.txt", "uci"), ("docword.txt.gz", "uci"), ("corpus.ldac", "ldac"),
    ("x/corpus.lda-c.gz", "ldac"), ("c.mm", "mm"), ("C.MTX.GZ", "mm"), ("c.jsonl", "jsonl"),
    ("c.ndjson.gz", "jsonl"), ("c.json", "jsonl"), ("notes.txt", "text"), ("notes.txt.gz", "text"),
    ("-", "text"),
])
def test_guess_format(path, fmt):
    assert guess_format(path) == fmt


def test_guess_format_directory_and_unknown(tmp_path):
    assert guess_format(tmp_path) == "text"
    for name in ["corpus.csv", "corpus", "corpus.gz"]:
        with pytest.raises(TopicscaleError, match="--format"):
            guess_format(name)


def test_unknown_format_names():
    with pytest.raises(TopicscaleError):
        open_bow("x", "text")
    with pytest.raises(TopicscaleError):
        list(iter_text_documents(["x"], "uci"))


# ---------------------------------------------------------------- errors, located

@pytest.fixture
def vocab3(tmp_path):
    p = tmp_path / "vocab.txt"
    p.write_text("a\nb\nc\n")
    return str(p)


def bow_error(tmp_path, fmt, text, line, vocab=None, name=None):
    name = name or {"uci": "docword.txt", "ldac": "c.ldac", "mm": "c.mm"}[fmt]
    path = write_bytes(tmp_path / name, text.encode() if isinstance(text, str) else text)
    with raises_at(path, line) as err:
        consume_bow(path, fmt, vocab)
    return str(err.value)


MM = "%%MatrixMarket matrix coordinate integer general\n"


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n2\n1 1 1\n2 2 -3\n", 5),
    ("ldac", "1 0:1\n2 0:1 2:-1\n", 2),
    ("mm", MM + "2 3 2\n1 1 1\n2 2 -3\n", 4),
    ("mm", MM + "%\n2 3 2\n1 1 1\n2 2 -3.0\n", 5),
])
def test_negative_count(tmp_path, vocab3, fmt, text, line):
    assert "positive integer" in bow_error(tmp_path, fmt, text, line, vocab3)


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n2\n1 1 1.5\n2 2 3\n", 4),
    ("uci", "2\n3\n2\n1 1 1\n2 2 0\n", 5),
    ("uci", "2\n3\n2\n1 1 3.0\n", 4),  # uci and ldac counts are integers, not reals
    ("ldac", "1 0:1\n1 2:x\n", 2),
    ("ldac", "1 0:0\n", 1),
    ("mm", MM + "2 3 2\n1 1 1\n2 2 2.5\n", 4),
    ("mm", MM + "2 3 2\n1 1 nan\n2 2 2\n", 3),
])
def test_non_integer_or_zero_count(tmp_path, vocab3, fmt, text, line):
    bow_error(tmp_path, fmt, text, line, vocab3)


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n2\n1 1 1\n2 4 1\n", 5),
    ("uci", "2\n3\n2\n1 0 1\n2 2 1\n", 4),
    ("ldac", "1 0:1\n\n2 1:1 3:1\n", 3),
    ("ldac", "1 -1:1\n", 1),
    ("mm", MM + "2 3 2\n1 1 1\n2 4 1\n", 4),
])
def test_word_id_out_of_range(tmp_path, vocab3, fmt, text, line):
    assert "out of range" in bow_error(tmp_path, fmt, text, line, vocab3)


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n2\n1 1 1\n2 2\n", 5),
    ("uci", "2\n3\n2\n1 1 1 1\n", 4),
    ("uci", "2\n3\n2\nfoo\n", 4),
    ("ldac", "1 0:1\n2 0:1 1:1 2:1\n", 2),
    ("ldac", "1 0:1\n1 2\n", 2),
    ("ldac", "x 0:1\n", 1),
    ("ldac", "1 0:1:2\n", 1),
    ("mm", MM + "2 3 2\n1 1 1\n2 x 1\n", 4),
    ("mm", MM + "2 3\n", 2),
])
def test_malformed_line(tmp_path, vocab3, fmt, text, line):
    bow_error(tmp_path, fmt, text, line, vocab3)


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n3\n1 1 1\n2 2 1\n", 3),  # fewer entries than NNZ: blame the header line
    ("uci", "2\n3\n1\n1 1 1\n2 2 1\n", 5),  # more entries: blame the first extra one
    ("uci", "2\n3\n2\n1 1 1\n3 2 1\n", 5),  # document number beyond D
    ("uci", "2\n3 4\n2\n", 2),
    ("uci", "2\n3\n", None),
    ("uci", "", None),
    ("mm", MM + "%c\n2 3 3\n1 1 1\n2 2 1\n", 3),
    ("mm", MM + "2 3 1\n1 1 1\n2 2 1\n", 4),
    ("mm", MM + "2 3 2\n1 1 1\n3 2 1\n", 4),
    ("mm", MM + "% no size line\n", None),
    ("mm", "%%MatrixMarket matrix coordinate integer symmetric\n2 3 1\n1 1 1\n", 1),
    ("mm", "%%MatrixMarket matrix array real general\n2 3\n", 1),
    ("mm", "2 3 1\n1 1 1\n", 1),
    ("mm", "", None),
])
def test_wrong_header(tmp_path, vocab3, fmt, text, line):
    bow_error(tmp_path, fmt, text, line, vocab3)


@pytest.mark.parametrize("fmt, text, line", [
    ("uci", "2\n3\n3\n2 1 1\n1 2 1\n1 3 1\n", 5),
    ("mm", MM + "2 3 2\n2 1 1\n1 2 1\n", 4),
])
def test_unsorted_documents(tmp_path, vocab3, fmt, text, line):
    assert "sorted by document" in bow_error(tmp_path, fmt, text, line, vocab3)


def test_vocab_mismatch(tmp_path, vocab3):
    (tmp_path / "docword.txt").write_text("1\n4\n1\n1 1 1\n")
    with raises_at(tmp_path / "docword.txt", 2) as err:
        open_bow(tmp_path / "docword.txt", "uci", vocab3)
    assert "W=4" in str(err.value) and "3 words" in str(err.value)
    (tmp_path / "c.mm").write_text(MM + "% comment\n1 4 1\n1 1 1\n")
    with raises_at(tmp_path / "c.mm", 3):
        open_bow(tmp_path / "c.mm", "mm", vocab3)
    # an ldac word id beyond the vocabulary is caught on its line
    bow_error(tmp_path, "ldac", "1 0:1\n1 3:1\n", 2, vocab3)


def test_truncated_gzip(tmp_path, vocab3):
    lines = [f"{d + 1} {d % 3 + 1} {d % 7 + 1}\n" for d in range(5000)]
    packed = gzip.compress(f"5000\n3\n5000\n{''.join(lines)}".encode(), mtime=0)
    cut = packed[:len(packed) // 2]
    good_lines = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut).count(b"\n")
    assert 100 < good_lines < 5000
    path = tmp_path / "docword.txt.gz"
    path.write_bytes(cut)
    src = open_bow(path, "uci", vocab3)
    it = src.documents()
    assert next(it)[0] == "1"  # streaming: documents come before the damage is reached
    with raises_at(path, good_lines + 1) as err:
        list(it)
    assert "gzip" in str(err.value)
    for fmt, name in [("text", "t.txt.gz"), ("jsonl", "t.jsonl.gz")]:
        path = tmp_path / name
        path.write_bytes(gzip.compress(b'{"text": "abc"}\n' * 3)[:-9])  # trailer cut off
        with raises_at(path, 4):
            list(iter_text_documents([path], fmt))
    path = tmp_path / "not.txt.gz"
    path.write_bytes(b"plain text\n")
    with raises_at(path, 1):
        list(iter_text_documents([path], "text"))


@pytest.mark.parametrize("name", ["t.txt", "t.txt.gz"])
def test_non_utf8(tmp_path, name, vocab3):
    path = write_bytes(tmp_path / name, "one\ntwo\nthr\xe9e\n".encode("latin-1"))
    with raises_at(path, 3) as err:
        list(iter_text_documents([path], "text"))
    assert "UTF-8" in str(err.value)
    bow_error(tmp_path, "ldac", b"1 0:1\n0\n1 1:\xff\n", 3, vocab3)
    (tmp_path / "bad_vocab.txt").write_bytes(b"a\nb\xc3\n")
    with raises_at(tmp_path / "bad_vocab.txt", 2):
        read_vocab(tmp_path / "bad_vocab.txt")


@pytest.mark.parametrize("text, line, message", [
    ('{"text": "a"}\n\n{"id": 2}\n', 3, "no field 'text'"),
    ('{"text": "a"}\n["text"]\n', 2, "JSON object"),
    ('{"text": "a"}\n{"text": "a"\n', 2, "not valid JSON"),
    ('{"text": 3}\n', 1, "must be a string"),
    ('{"text": "a", "id": [1]}\n', 1, "string or integer"),
    ('{"text": "a"}\n' + "[" * 100000 + "\n", 2, "not valid JSON"),
])
def test_jsonl_errors(tmp_path, text, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text(text)
    with raises_at(path, line) as err:
        list(iter_text_documents([path], "jsonl"))
    assert message in str(err.value)


def test_missing_input(tmp_path):
    missing = tmp_path / "nope.txt"
    with raises_at(missing, None):
        list(iter_text_documents([missing], "text"))
    with raises_at(tmp_path / "nope.ldac", None):
        open_bow(tmp_path / "nope.ldac", "ldac", tmp_path / "nope.ldac")
    with raises_at(tmp_path, None):  # a directory is not a jsonl file
        list(iter_text_documents([tmp_path], "jsonl"))


def test_iter_lines_streams(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"ok\n" * 10 + b"\xff\n")
    lines = iter_lines(path)
    assert next(lines) == (1, "ok")
    with raises_at(path, 11):
        list(lines)

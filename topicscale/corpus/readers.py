"""Streaming readers for raw text corpora and bag-of-words files.

Every reader is a generator: memory holds one line (or one document) at a time, never the
corpus. Any text file may be gzip-compressed (name ending in ".gz"); "-" means standard input
(read as plain text). All files are UTF-8 (a leading byte-order mark is ignored). Malformed
input of any kind raises InputError(path, line, message) with the 1-based line number.
"""
import gzip
import json
import os
import re
import sys
import zlib
from contextlib import contextmanager

import numpy as np

from ..errors import InputError, TopicscaleError

TEXT_FORMATS = ("text", "jsonl")
BOW_FORMATS = ("uci", "ldac", "mm")
FORMATS = TEXT_FORMATS + BOW_FORMATS
STDIN = "-"
INT32_MAX = 2**31 - 1

_INT = re.compile(r"[+-]?[0-9]{1,18}")
_REAL = re.compile(r"[+-]?(?:[0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,4})?")


# ---------------------------------------------------------------- opening and lines

def _display(path):
    return "<stdin>" if path == STDIN else path


@contextmanager
def _open_binary(path):
    if path == STDIN:
        yield getattr(sys.stdin, "buffer", sys.stdin)
        return
    try:
        fh = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    except OSError as e:
        raise InputError(path, None, f"cannot open: {e.strerror or e}") from None
    with fh:
        yield fh


def iter_lines(path):
    """Yield (line_no, line) for each line of a plain, gzip-compressed or stdin ("-") text
    file, line ending stripped. Undecodable bytes and corrupt or truncated gzip data become
    an InputError at the line where they occur."""
    path = os.fspath(path)
    shown = _display(path)
    line_no = 0
    try:
        with _open_binary(path) as fh:
            for line_no, raw in enumerate(fh, 1):
                if isinstance(raw, bytes):
                    try:
                        raw = raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise InputError(shown, line_no, f"not valid UTF-8 (byte {e.start + 1} of the line)") from None
                if line_no == 1 and raw.startswith("\ufeff"):
                    raw = raw[1:]
                yield line_no, raw.rstrip("\r\n")
    except (OSError, EOFError, zlib.error) as e:
        what = "corrupt or truncated gzip data" if path.endswith(".gz") else "read error"
        raise InputError(shown, line_no + 1, f"{what}: {e}") from None


def _show(token):
    return repr(token if len(token) <= 30 else token[:30] + "...")


def _int(token, path, line_no, what):
    if not _INT.fullmatch(token):
        raise InputError(path, line_no, f"{what} must be an integer, got {_show(token)}")
    return int(token)


def _in_range(token, low, high, path, line_no, what):
    value = _int(token, path, line_no, what)
    if not low <= value <= high:
        raise InputError(path, line_no, f"{what} {value} out of range {low}..{high}")
    return value


def _count(token, path, line_no, real=False):
    """A positive integer count; with `real`, integral reals ("3.0", "3e0") are accepted."""
    value = None
    if _INT.fullmatch(token):
        value = int(token)
    elif real and _REAL.fullmatch(token):
        value = float(token)
        value = int(value) if value.is_integer() else None
    if value is None or not 1 <= value <= INT32_MAX:
        raise InputError(path, line_no, f"count must be a positive integer, got {_show(token)}")
    return value


def _doc(ids, counts, path, line_no):
    """Build (word_ids, counts) int32 arrays: ids sorted ascending, duplicates summed."""
    ids = np.asarray(ids, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if ids.size > 1 and not np.all(ids[1:] > ids[:-1]):
        ids, inverse = np.unique(ids, return_inverse=True)
        summed = np.zeros(ids.size, dtype=np.int64)
        np.add.at(summed, inverse, counts)
        counts = summed
        if counts.max() > INT32_MAX:
            raise InputError(path, line_no, "a word's total count in this document exceeds 2^31-1")
    return ids.astype(np.int32), counts.astype(np.int32)


_EMPTY = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))


# ---------------------------------------------------------------- formats and vocabularies

def inputs_format(inputs, fmt=None):
    """`fmt`, or the one format the inputs' names say (guess_format); inputs whose names say
    different formats are refused rather than all read as the first one's."""
    if fmt:
        return fmt
    guessed = {os.fspath(p): guess_format(p) for p in inputs}
    if len(set(guessed.values())) > 1:
        shown = ", ".join(f"{p}: {f}" for p, f in guessed.items())
        raise TopicscaleError(f"the inputs' names say different formats ({shown}); prepare them one "
                              "format at a time, or give --format")
    return guessed[os.fspath(inputs[0])]


def guess_format(path):
    """The format implied by a file name: docword*.txt -> uci, *.ldac/*.lda-c -> ldac,
    *.mm/*.mtx -> mm, *.jsonl/*.ndjson/*.json -> jsonl, *.txt, a directory or "-" -> text
    (a trailing .gz is ignored)."""
    path = os.fspath(path)
    if path == STDIN or os.path.isdir(path):
        return "text"
    name = os.path.basename(path).lower()
    name = name[:-3] if name.endswith(".gz") else name
    stem, ext = os.path.splitext(name)
    if ext == ".txt":
        return "uci" if stem.startswith("docword") else "text"
    by_ext = {".ldac": "ldac", ".lda-c": "ldac", ".mm": "mm", ".mtx": "mm",
              ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
    if ext in by_ext:
        return by_ext[ext]
    raise TopicscaleError(f"cannot tell the format of {path!r} from its name; "
                          f"use --format ({', '.join(FORMATS)})")


def read_vocab(path):
    """A vocabulary file: one word per line, in word-id order. Of a tab-separated line only
    the first field counts; surrounding white space is stripped. Empty or repeated words are
    errors."""
    path = os.fspath(path)
    words, seen = [], {}
    for line_no, line in iter_lines(path):
        word = line.split("\t", 1)[0].strip()
        if not word:
            raise InputError(path, line_no, "empty word in vocabulary")
        if word in seen:
            raise InputError(path, line_no, f"duplicate word {_show(word)} (first on line {seen[word]})")
        seen[word] = line_no
        words.append(word)
    return words


# ---------------------------------------------------------------- raw text

def iter_text_documents(paths, fmt="text", text_field="text", id_field="id", stdin_copy=None):
    """Yield (doc_id, text, source_path, line_no) from raw-text inputs.

    fmt "text": a file holds one document per line (blank lines are empty documents); a
    directory holds one document per *.txt / *.txt.gz file, taken in name order, with the
    file name minus extension as id; "-" is standard input, one document per line.
    fmt "jsonl": one JSON object per line with the text in `text_field` and the id in
    `id_field` (string or integer; optional); blank lines are skipped.
    A document without its own id gets its line number, or "<path>:<line>" when several
    inputs are given. stdin_copy: a file holding what was read from standard input, named
    "<stdin>" in the ids and the source paths.
    """
    if fmt not in TEXT_FORMATS:
        raise TopicscaleError(f"{fmt!r} is not a raw-text format (expected one of {', '.join(TEXT_FORMATS)})")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    several = len(paths) > 1
    for path in paths:
        shown = _display(STDIN if path == stdin_copy else path)
        if fmt == "text" and path != STDIN and os.path.isdir(path):
            yield from _directory_docs(path)
        elif fmt == "text":
            for line_no, line in iter_lines(path):
                yield (f"{shown}:{line_no}" if several else str(line_no)), line, shown, line_no
        else:
            yield from _jsonl_docs(path, shown, text_field, id_field, several)


def _directory_docs(path):
    if os.path.isfile(os.path.join(path, "manifest.json")):     # its ids.txt, vocab.txt are no documents
        raise InputError(path, None, "a prepared corpus, not a folder of .txt documents (`prepare` "
                                     "reads raw text; `infer` takes a prepared corpus as its only input)")
    names = sorted(n for n in os.listdir(path)
                   if n.endswith((".txt", ".txt.gz")) and os.path.isfile(os.path.join(path, n)))
    if not names:
        raise InputError(path, None, "no .txt or .txt.gz file in this folder (a folder holds a document a "
                                     "file; subfolders are not read)")
    for name in names:
        file = os.path.join(path, name)
        if "\n" in name or "\r" in name:
            raise InputError(file, None, "a file name with a line break (its name is the document's id, "
                                         "and ids.txt keeps one id a line)")
        text = "\n".join(line for _, line in iter_lines(file))
        yield name[:-7] if name.endswith(".txt.gz") else name[:-4], text, file, 1


def _jsonl_docs(path, shown, text_field, id_field, several):
    for line_no, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            raise InputError(shown, line_no, f"not valid JSON: {e}") from None
        if not isinstance(obj, dict):
            raise InputError(shown, line_no, "expected a JSON object (one per line)")
        if text_field not in obj:
            raise InputError(shown, line_no, f"no field {text_field!r}")
        text = obj[text_field]
        if not isinstance(text, str):
            raise InputError(shown, line_no, f"field {text_field!r} must be a string, got {type(text).__name__}")
        doc_id = obj.get(id_field)
        if doc_id is None:
            doc_id = f"{shown}:{line_no}" if several else str(line_no)
        elif isinstance(doc_id, str) and ("\n" in doc_id or "\r" in doc_id):
            raise InputError(shown, line_no, f"field {id_field!r} holds a line break (ids.txt keeps one "
                                             "id a line)")
        elif isinstance(doc_id, str) or (isinstance(doc_id, int) and not isinstance(doc_id, bool)):
            doc_id = str(doc_id)
        else:
            raise InputError(shown, line_no, f"field {id_field!r} must be a string or integer")
        yield doc_id, text, shown, line_no


# ---------------------------------------------------------------- bag of words

class BowSource:
    """An opened bag-of-words file. `documents()` streams (doc_id, word_ids, counts,
    source_path, line_no) anew on every call: word ids 0-based int32, ascending and unique,
    counts positive int32. Documents without entries come out as empty arrays, so row
    numbers stay aligned with the file's document numbers."""

    def __init__(self, path, fmt, vocab, n_words, n_docs, reader):
        self.path, self.format = path, fmt
        self.vocab, self.n_words, self.n_docs = vocab, n_words, n_docs
        self._reader = reader

    def documents(self):
        return self._reader()

    __iter__ = documents


def open_bow(path, fmt, vocab_path=None):
    """Open a uci, ldac or mm file (headers and vocabulary are read and checked now)."""
    path = os.fspath(path)
    if fmt == "uci":
        return _open_uci(path, vocab_path)
    if fmt == "ldac":
        return _open_ldac(path, vocab_path)
    if fmt == "mm":
        return _open_mm(path, vocab_path)
    raise TopicscaleError(f"{fmt!r} is not a bag-of-words format (expected one of {', '.join(BOW_FORMATS)})")


def _find_vocab(path, candidates):
    folder = os.path.dirname(path)
    for name in candidates:
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise InputError(path, None, f"no vocabulary file found beside it (looked for {', '.join(candidates)}); "
                                 "give one with --vocab")


def _coordinate_docs(lines, path, n_docs, n_words, nnz, nnz_line, real=False, pattern=False):
    """Shared body of uci and mm: lines "doc word count" (both 1-based; no count in a
    `pattern` file, where it is 1), sorted by doc. Lines starting with % are comments."""
    current, first_line, seen = 0, 0, 0
    ids, counts = [], []
    line_no = nnz_line
    for line_no, line in lines:
        fields = line.split()
        if not fields or fields[0].startswith("%"):
            continue
        if len(fields) != 3 - pattern:
            raise InputError(path, line_no, f"expected 'document word{'' if pattern else ' count'}', "
                                            f"got {_show(line)}")
        doc = _in_range(fields[0], 1, n_docs, path, line_no, "document number")
        ids.append(_in_range(fields[1], 1, n_words, path, line_no, "word number") - 1)
        counts.append(1 if pattern else _count(fields[2], path, line_no, real))
        seen += 1
        if seen > nnz:
            raise InputError(path, line_no, f"more entries than the {nnz} announced in the header")
        if doc != current:
            if doc < current:
                raise InputError(path, line_no, f"document {doc} after document {current}: "
                                                "entries must be sorted by document")
            if current:
                yield (str(current), *_doc(ids[:-1], counts[:-1], path, first_line), path, first_line)
            for skipped in range(current + 1, doc):
                yield str(skipped), *_EMPTY, path, line_no
            current, first_line = doc, line_no
            ids, counts = ids[-1:], counts[-1:]
    if current:
        yield (str(current), *_doc(ids, counts, path, first_line), path, first_line)
    if seen != nnz:
        raise InputError(path, nnz_line, f"header announces {nnz} entries but the file has {seen}")
    for skipped in range(current + 1, n_docs + 1):
        yield str(skipped), *_EMPTY, path, line_no


def _uci_header(lines, path):
    """UCI docword header: three lines holding D (documents), W (words), NNZ (entries)."""
    values = []
    for name in ("D (number of documents)", "W (number of words)", "NNZ (number of entries)"):
        line_no, line = next(lines, (None, None))
        if line_no is None:
            raise InputError(path, None, f"file ends before header line {name}")
        if len(line.split()) != 1:
            raise InputError(path, line_no, f"header line {line_no} must hold {name} alone")
        high = 10**18 if name.startswith("NNZ") else INT32_MAX
        values.append(_in_range(line.strip(), 0, high, path, line_no, name.split()[0]))
    return values


def _open_uci(path, vocab_path):
    """UCI "bag of words" (docword.*.txt): header lines D, W, NNZ, then one line
    "docID wordID count" per entry, 1-based, sorted by docID; vocabulary in vocab.*.txt."""
    if vocab_path is None:
        name = os.path.basename(path)
        name = name[:-3] if name.endswith(".gz") else name
        middle = name[len("docword"):-len(".txt")] if name.startswith("docword") and name.endswith(".txt") else ""
        vocab_path = _find_vocab(path, list(dict.fromkeys([f"vocab{middle}.txt", "vocab.txt"])))
    vocab = read_vocab(vocab_path)
    lines = iter_lines(path)
    n_docs, n_words, _ = _uci_header(lines, path)
    lines.close()
    if n_words != len(vocab):
        raise InputError(path, 2, f"header says W={n_words} but vocabulary {vocab_path} has {len(vocab)} words")

    def documents():
        lines = iter_lines(path)
        d, w, nnz = _uci_header(lines, path)
        return _coordinate_docs(lines, path, d, w, nnz, 3)
    return BowSource(path, "uci", vocab, n_words, n_docs, documents)


def _mm_header(lines, path):
    """MatrixMarket banner and size line; returns (rows, cols, nnz, size_line, count_parser)."""
    line_no, banner = next(lines, (None, ""))
    fields = banner.lower().split()
    if line_no is None or len(fields) != 5 or fields[:2] != ["%%matrixmarket", "matrix"]:
        raise InputError(path, line_no or None, "not a MatrixMarket file: expected "
                         "'%%MatrixMarket matrix coordinate integer|real|pattern general'")
    if fields[2] != "coordinate" or fields[3] not in ("integer", "real", "pattern") or fields[4] != "general":
        raise InputError(path, line_no, f"unsupported MatrixMarket type {' '.join(fields[2:])!r}: "
                                        "only 'coordinate integer|real|pattern general' is supported")
    for line_no, line in lines:
        size = line.split()
        if not size or size[0].startswith("%"):
            continue
        if len(size) != 3:
            raise InputError(path, line_no, f"expected size line 'rows columns entries', got {_show(line)}")
        rows, cols = (_in_range(v, 0, INT32_MAX, path, line_no, n) for v, n in zip(size, ("rows", "columns")))
        nnz = _in_range(size[2], 0, 10**18, path, line_no, "entries")
        return rows, cols, nnz, line_no, fields[3]
    raise InputError(path, None, "file ends before the size line 'rows columns entries'")


def _open_mm(path, vocab_path):
    """MatrixMarket coordinate matrix, rows = documents, columns = words (1-based), entries
    sorted by row; values are positive integers (integral reals allowed). 'pattern' files
    give every entry count 1. The vocabulary is optional."""
    vocab = None if vocab_path is None else read_vocab(vocab_path)
    lines = iter_lines(path)
    rows, cols, _, size_line, _ = _mm_header(lines, path)
    lines.close()
    if vocab is not None and cols != len(vocab):
        raise InputError(path, size_line, f"{cols} columns but vocabulary {vocab_path} has {len(vocab)} words")

    def documents():
        lines = iter_lines(path)
        rows, cols, nnz, size_line, field = _mm_header(lines, path)
        return _coordinate_docs(lines, path, rows, cols, nnz, size_line, real=True, pattern=field == "pattern")
    return BowSource(path, "mm", vocab, cols, rows, documents)


def _open_ldac(path, vocab_path):
    """Blei's LDA-C: one document per line, "N id:count id:count ..." with N pairs and
    0-based word ids; an empty line or "0" is an empty document. The vocabulary (one word
    per line) is required."""
    if vocab_path is None:
        name = os.path.basename(path)
        name = name[:-3] if name.endswith(".gz") else name
        stem = os.path.splitext(name)[0]
        vocab_path = _find_vocab(path, list(dict.fromkeys(
            [f"{stem}.tokens", f"{stem}.vocab", f"{name}.vocab", "vocab.txt"])))
    vocab = read_vocab(vocab_path)
    n_words = len(vocab)

    def documents():
        for line_no, line in iter_lines(path):
            fields = line.split() or ["0"]
            n = _int(fields[0], path, line_no, "number of pairs")
            if n != len(fields) - 1:
                raise InputError(path, line_no, f"line announces {n} pairs but has {len(fields) - 1}")
            ids, counts = [], []
            for pair in fields[1:]:
                word, sep, count = pair.partition(":")
                if not sep:
                    raise InputError(path, line_no, f"expected 'id:count', got {_show(pair)}")
                ids.append(_in_range(word, 0, n_words - 1, path, line_no, "word id"))
                counts.append(_count(count, path, line_no))
            yield (str(line_no), *_doc(ids, counts, path, line_no), path, line_no)
    return BowSource(path, "ldac", vocab, n_words, None, documents)

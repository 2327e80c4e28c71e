"""Writers for the bag-of-words formats read by `readers.open_bow`.

`docs` is any iterable of (word_ids, counts) pairs (0-based ids; zero counts are dropped),
consumed once. A path ending in ".gz" is written gzip-compressed. Every file is written
beside its target and renamed into place, so an error never leaves a half-written file.
"""
import gzip
import io
import os
import shutil
import tempfile
from contextlib import contextmanager

import numpy as np

from ..atomic import atomic_file


@contextmanager
def _text_writer(path):
    path = os.fspath(path)
    with atomic_file(path, "wb") as raw:
        gz = (gzip.GzipFile(os.path.basename(path)[:-3], "wb", fileobj=raw, mtime=0)
              if path.endswith(".gz") else None)
        fh = io.TextIOWrapper(gz or raw, encoding="utf-8", newline="\n")
        try:
            yield fh
            fh.flush()
        finally:
            fh.detach()  # leave `raw` open: atomic_file syncs and renames it
        if gz is not None:
            gz.close()  # writes the gzip trailer


def _pairs(docs, n_words):
    """Yield each document as (word_ids, counts) lists of Python ints, zero counts dropped."""
    for ids, counts in docs:
        ids, counts = np.asarray(ids).ravel(), np.asarray(counts).ravel()
        if ids.shape != counts.shape:
            raise ValueError(f"{ids.size} word ids but {counts.size} counts")
        if ids.size and (ids.min() < 0 or ids.max() >= n_words):
            raise ValueError(f"word id out of range 0..{n_words - 1}")
        if counts.size and (np.any(counts < 0) or np.any(counts != np.round(counts))):
            raise ValueError("counts must be non-negative integers")
        keep = counts != 0
        yield ids[keep].astype(np.int64).tolist(), counts[keep].astype(np.int64).tolist()


def check_words(vocab):
    """Refuse (ValueError) words a vocabulary file cannot hold: empty ones, ones with tabs, line
    breaks or surrounding white space (`read_vocab` would not give them back), duplicates."""
    for word in vocab:
        if not word or word != word.strip() or "\t" in word or len(word.splitlines()) != 1:
            raise ValueError(f"word {word!r} cannot be stored in a vocabulary file")
    if len(set(vocab)) != len(vocab):
        raise ValueError("duplicate words in vocabulary")


def write_vocab(path, vocab):
    """One word per line (check_words says which words can be)."""
    vocab = list(vocab)
    check_words(vocab)
    with _text_writer(path) as fh:
        fh.writelines(f"{word}\n" for word in vocab)


def _write_coordinate(path, docs, n_words, header):
    """Write "doc word count" lines (1-based) after `header(n_docs, nnz)`; the body goes to a
    temporary file first, since the header needs counts known only at the end."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n", dir=folder) as body:
        n_docs = nnz = 0
        for n_docs, (ids, counts) in enumerate(_pairs(docs, n_words), 1):
            body.writelines(f"{n_docs} {w + 1} {c}\n" for w, c in zip(ids, counts))
            nnz += len(ids)
        body.seek(0)
        with _text_writer(path) as fh:
            fh.write(header(n_docs, nnz))
            shutil.copyfileobj(body, fh)


def write_uci(docword_path, vocab_path, docs, vocab):
    """UCI docword file (header D, W, NNZ) plus its vocabulary file (skipped if None)."""
    vocab = list(vocab)
    if vocab_path is not None:
        write_vocab(vocab_path, vocab)
    _write_coordinate(docword_path, docs, len(vocab), lambda d, nnz: f"{d}\n{len(vocab)}\n{nnz}\n")


def write_mm(path, docs, n_words, vocab_path=None, vocab=None):
    """MatrixMarket 'coordinate integer general' file, documents as rows; optional vocabulary."""
    if vocab_path is not None:
        if vocab is None or len(vocab) != n_words:
            raise ValueError("write_mm needs a vocabulary of n_words words to write vocab_path")
        write_vocab(vocab_path, vocab)
    _write_coordinate(path, docs, n_words, lambda d, nnz: (
        f"%%MatrixMarket matrix coordinate integer general\n{d} {n_words} {nnz}\n"))


def write_ldac(path, vocab_path, docs, vocab):
    """LDA-C file, one line "N id:count ..." per document, plus its vocabulary (skipped if None)."""
    vocab = list(vocab)
    if vocab_path is not None:
        write_vocab(vocab_path, vocab)
    with _text_writer(path) as fh:
        for ids, counts in _pairs(docs, len(vocab)):
            fh.write(" ".join([str(len(ids)), *(f"{w}:{c}" for w, c in zip(ids, counts))]) + "\n")

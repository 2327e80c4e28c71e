"""The native corpus format: a folder of memory-mapped CSR shards.

    CORPUS/manifest.json         format, version, counts (documents, tokens, vocabulary, non-zeros), shards
    CORPUS/vocab.txt             one word per line, in column order
    CORPUS/ids.txt               one document id per line, in row order
    CORPUS/shard-NNNNN.indptr.npy   int64, n_docs + 1 offsets into the two arrays below
    CORPUS/shard-NNNNN.indices.npy  int32 word ids, ascending within a document
    CORPUS/shard-NNNNN.counts.npy   int32 counts (> 0)

A corpus prepared with --keep-order also keeps each document's tokens in reading order (word
ids, -1 where the text had a word outside the vocabulary), for sliding-window coherence:

    CORPUS/shard-NNNNN.tokptr.npy   int64, n_docs + 1 offsets into the array below
    CORPUS/shard-NNNNN.tokens.npy   int32 word ids (or -1) in reading order

Writers stream (a shard is flushed every `shard_docs` documents), so memory does not grow
with the corpus; readers read the documents they need from the shards and never load the corpus
whole, unless its word ids and counts take at most RESIDENT_BYTES.
"""
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_dir, check_parent
from ..errors import InputError, TopicscaleError
from .. import __version__

FORMAT = "topicscale-corpus"
VERSION = 1
SHARD_DOCS = 50_000
RESIDENT_BYTES = 32 << 20   # word ids and counts up to this are read into memory on first use


@dataclass
class Rows:
    """A CSR block of documents: global row numbers, offsets, word ids and counts."""
    rows: np.ndarray      # int64 (D,)
    indptr: np.ndarray    # int64 (D + 1,)
    indices: np.ndarray   # int32 (nnz,)
    counts: np.ndarray    # float64 (nnz,)

    @property
    def n_docs(self):
        return self.rows.shape[0]

    @property
    def n_tokens(self):
        return float(self.counts.sum())


def locate_rows(corpus, rows):
    """Where documents `rows` (global row numbers, int64) lie in `corpus`'s shards (its `starts`,
    and `shard(s)[0]` the shard's indptr): (shard of each, offset of its first entry in the
    shard's arrays, its number of entries, the offsets of a CSR block of them in the order given)."""
    shard_of = np.searchsorted(corpus.starts, rows, side="right") - 1
    lengths = np.empty(rows.shape[0], dtype=np.int64)
    starts = np.empty(rows.shape[0], dtype=np.int64)
    for s in np.unique(shard_of):
        sel = shard_of == s
        indptr = corpus.shard(s)[0]
        local = rows[sel] - corpus.starts[s]
        starts[sel] = indptr[local]
        lengths[sel] = indptr[local + 1] - starts[sel]
    out_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    return shard_of, starts, lengths, out_ptr


def read_lines(path):
    with open(path, encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh]


def _npy_header(path):
    """(shape, dtype, byte offset of the data, file size) of a .npy file, from its header."""
    with open(path, "rb") as fh:
        major, _ = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(fh)
        return shape, dtype, fh.tell(), os.fstat(fh.fileno()).st_size


DAMAGED = "the corpus is damaged: prepare it again"


def check_npy_size(path, length):
    """The byte offset of the array data in the .npy file `path`; an InputError naming it unless
    its header holds `length` elements (the manifest's count) and the file is as long as the
    header says. Reads the header only."""
    try:
        shape, dtype, offset, size = _npy_header(path)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(path, None, f"unreadable shard: {getattr(exc, 'strerror', None) or exc}; {DAMAGED}") from None
    if shape != (length,):
        raise InputError(path, None, f"unreadable shard: its header says shape {shape}, the manifest "
                         f"{length} elements; {DAMAGED}")
    need = offset + length * dtype.itemsize
    if size < need:
        raise InputError(path, None, f"unreadable shard: the file is {size:,} bytes, shorter than the {need:,} "
                         f"its header says (cut short?); {DAMAGED}")
    return offset


def _read_slices(path, offset, starts, lengths, out, out_starts):
    """out[out_starts[i]:+lengths[i]] = elements starts[i]:+lengths[i] of the .npy file's data
    (kernels.gather: compiled pread calls, imported here so that commands which never read
    documents do not load numba)."""
    from ..kernels.gather import read_slices
    fd = os.open(path, os.O_RDONLY)
    try:
        failed = read_slices(fd, offset, starts, lengths, out, out_starts)
    finally:
        os.close(fd)
    if failed >= 0:
        raise InputError(path, None, f"cannot read {lengths[failed]} elements at element "
                         f"{starts[failed]}: the shard file is shorter than its header says, "
                         "or unreadable")


def is_corpus_folder(path):
    """True when `path` holds a topicscale corpus (its manifest names the format)."""
    try:
        return json.loads((Path(path) / "manifest.json").read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


# the names of the files a CorpusWriter writes
CORPUS_FILE = re.compile(r"(manifest\.json|ids\.txt|vocab\.txt|"
                         r"shard-\d{5,}\.(indptr|indices|counts|tokptr|tokens)\.npy)")


def counted_ids(ids, n_docs, where):
    """Yield `ids`, then an InputError naming `where` (an ids.txt) when they were fewer than the
    manifest's n_docs."""
    count = 0
    for doc_id in ids:
        count += 1
        yield doc_id
    if count < n_docs:
        raise InputError(where, None, f"has {count} ids, manifest says {n_docs} documents")


def check_corpus_output(path):
    """Refuse (TopicscaleError) to write a corpus to `path` when that would replace anything but
    an empty folder or another corpus's own files: a model, or files of the user's (beside a
    corpus too), are never deleted."""
    path = Path(path)
    if not path.exists():
        check_parent(path, made=True)
        return
    if not path.is_dir():
        raise TopicscaleError(f"{path} exists and is not a folder")
    from ..models.store import MODEL_FILE
    if (path / MODEL_FILE).exists():
        what = "a model"
    elif not any(path.iterdir()):
        return
    elif not is_corpus_folder(path):
        what = "files that are not a topicscale corpus"
    else:
        foreign = sorted(f.name for f in path.iterdir() if not CORPUS_FILE.fullmatch(f.name))
        if not foreign:
            return
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        what = f"a corpus and files it did not write ({shown})"
    raise TopicscaleError(f"{path} holds {what}, which writing a corpus there would delete; "
                          "write it to a new folder (nothing was changed)")


class CorpusWriter:
    """Stream documents into a new corpus folder; `close()` publishes it atomically. It replaces
    only an empty folder or another corpus (check_corpus_output)."""

    def __init__(self, path, vocab, shard_docs=SHARD_DOCS, source=None, keep_order=False):
        check_corpus_output(path)
        self.path = Path(path)
        self.vocab = list(vocab)
        self.shard_docs = shard_docs
        self.source = source or []
        self._ctx = atomic_dir(self.path)
        self._dir = self._ctx.__enter__()
        self._ids = open(self._dir / "ids.txt", "w", encoding="utf-8")
        self._shards = []
        self._buf_ids, self._buf_counts, self._buf_len = [], [], []
        self._buf_tokens = []
        self.keep_order = keep_order
        self.n_docs = self.nnz = self.n_tokens = 0
        self.stats = {}

    def add(self, doc_id, word_ids, counts, tokens=None):
        """Append one non-empty document (word ids ascending and unique, counts > 0); `tokens`:
        its word ids in reading order (-1: a word outside the vocabulary), given if and only if
        the writer keeps order."""
        if self.keep_order != (tokens is not None):
            raise ValueError("a writer that keeps order takes every document's tokens, another none")
        self._ids.write(f"{doc_id}\n")
        self._buf_ids.append(np.asarray(word_ids, dtype=np.int32))
        self._buf_counts.append(np.asarray(counts, dtype=np.int32))
        self._buf_len.append(len(word_ids))
        if tokens is not None:
            self._buf_tokens.append(np.asarray(tokens, dtype=np.int32))
        self.n_docs += 1
        self.nnz += len(word_ids)
        self.n_tokens += int(np.sum(counts))
        if len(self._buf_len) >= self.shard_docs:
            self._flush()

    def add_block(self, doc_ids, indptr, indices, counts):
        """Append a CSR block of non-empty documents (same rules as `add`; the same files as
        adding them one by one), up to a shard's worth at a time."""
        indptr = np.asarray(indptr, dtype=np.int64)
        start, n = 0, len(doc_ids)
        while start < n:
            take = min(n - start, self.shard_docs - len(self._buf_len))
            a, b = int(indptr[start]), int(indptr[start + take])
            self._ids.writelines(f"{doc_id}\n" for doc_id in doc_ids[start:start + take])
            self._buf_ids.append(np.array(indices[a:b], dtype=np.int32))
            self._buf_counts.append(np.array(counts[a:b], dtype=np.int32))
            self._buf_len.extend(np.diff(indptr[start:start + take + 1]).tolist())
            self.n_docs += take
            self.nnz += b - a
            self.n_tokens += int(self._buf_counts[-1].sum(dtype=np.int64))
            start += take
            if len(self._buf_len) >= self.shard_docs:
                self._flush()

    def _flush(self):
        if not self._buf_len:
            return
        name = f"shard-{len(self._shards):05d}"
        indptr = np.zeros(len(self._buf_len) + 1, dtype=np.int64)
        np.cumsum(self._buf_len, out=indptr[1:])
        np.save(self._dir / f"{name}.indptr.npy", indptr)
        np.save(self._dir / f"{name}.indices.npy", np.concatenate(self._buf_ids))
        np.save(self._dir / f"{name}.counts.npy", np.concatenate(self._buf_counts))
        shard = {"name": name, "n_docs": len(self._buf_len), "nnz": int(indptr[-1])}
        if self.keep_order:
            tokptr = np.zeros(len(self._buf_tokens) + 1, dtype=np.int64)
            np.cumsum([t.size for t in self._buf_tokens], out=tokptr[1:])
            np.save(self._dir / f"{name}.tokptr.npy", tokptr)
            np.save(self._dir / f"{name}.tokens.npy", np.concatenate(self._buf_tokens))
            shard["n_positions"] = int(tokptr[-1])
        self._shards.append(shard)
        self._buf_ids, self._buf_counts, self._buf_len, self._buf_tokens = [], [], [], []

    def close(self):
        """Write the last shard, vocabulary and manifest, and move the folder into place."""
        self._flush()
        self._ids.close()
        with open(self._dir / "vocab.txt", "w", encoding="utf-8") as fh:
            fh.writelines(f"{w}\n" for w in self.vocab)
        manifest = {"format": FORMAT, "version": VERSION, "n_docs": self.n_docs,
                    "n_words": len(self.vocab), "nnz": self.nnz, "n_tokens": self.n_tokens,
                    "shards": self._shards, "source": self.source, "stats": self.stats,
                    "keeps_order": self.keep_order,
                    "created_by": f"topicscale {__version__}"}
        (self._dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
        self._ctx.__exit__(None, None, None)

    def abort(self, exc=None):
        """Discard everything written so far."""
        self._ids.close()
        err = exc or RuntimeError("aborted")
        try:
            self._ctx.__exit__(type(err), err, None)
        except BaseException:
            pass

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if typ is None:
            self.close()
        else:
            self.abort(exc)
        return False


def as_corpus(corpus):
    """`corpus` itself, or the corpus at its location (open_corpus) when given a str or path."""
    return open_corpus(corpus) if isinstance(corpus, (str, os.PathLike)) else corpus


def open_corpus(location):
    """The corpus at `location`: a folder (Corpus), or an fsspec URL such as s3://, gs:// or
    file:// (corpus/remote.py, which needs fsspec and the URL's own package, e.g. s3fs)."""
    if is_url(location):
        from .remote import RemoteCorpus
        return RemoteCorpus(location)
    return Corpus(location)


def is_url(location):
    """Whether a corpus location is a URL (scheme://...) rather than a path."""
    return "://" in str(location)


class Corpus:
    """A native corpus opened read-only; shards are memory-mapped on first use."""

    def __init__(self, path):
        self.path = Path(path)
        manifest_path = self.path / "manifest.json"
        if not manifest_path.is_file():
            raise InputError(self.path, None, "not a topicscale corpus (no manifest.json); "
                             "create one with `topicscale prepare`")
        try:
            m = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(manifest_path, None, f"unreadable manifest: {exc}") from None
        self._take_manifest(m, manifest_path)

    @property
    def location(self):
        """Where the corpus is, as workers open it (open_corpus)."""
        return str(self.path)

    def _take_manifest(self, m, manifest_path):
        """Check a parsed manifest and take its counts and shards."""
        if m.get("format") != FORMAT:
            raise InputError(manifest_path, None, "not a topicscale corpus manifest")
        if m.get("version", 0) > VERSION:
            raise InputError(manifest_path, None, f"corpus format version {m['version']} is newer "
                             f"than this topicscale supports ({VERSION}); upgrade topicscale")
        self.manifest = m
        self.n_docs = m["n_docs"]
        self.n_words = m["n_words"]
        self.nnz = m["nnz"]
        self.n_tokens = m["n_tokens"]
        self.shards = m["shards"]
        self.starts = np.zeros(len(self.shards) + 1, dtype=np.int64)
        np.cumsum([s["n_docs"] for s in self.shards], out=self.starts[1:])
        if self.starts[-1] != self.n_docs:
            raise InputError(manifest_path, None, "shard document counts do not add up to n_docs")
        self.keeps_order = bool(m.get("keeps_order", False))
        self.resident = self.nnz * 8 <= RESIDENT_BYTES
        self._shards = {}
        self._vocab = None

    @property
    def vocab(self):
        if self._vocab is None:
            self._vocab = read_lines(self.path / "vocab.txt")
            if len(self._vocab) != self.n_words:
                raise InputError(self.path / "vocab.txt", None, f"has {len(self._vocab)} words, "
                                 f"manifest says {self.n_words}")
        return self._vocab

    def fingerprint(self):
        """The counts and a hash of the vocabulary, by which `fit --resume` knows the corpus."""
        return {"documents": self.n_docs, "words": self.n_words, "nnz": self.nnz, "tokens": self.n_tokens,
                "vocab_sha256": hashlib.sha256("\n".join(self.vocab).encode("utf-8")).hexdigest()}

    def ids(self):
        """Document ids in row order (read from ids.txt)."""
        return read_lines(self.path / "ids.txt")

    def iter_ids(self):
        """Document ids in row order, streamed; an error when ids.txt has fewer than n_docs."""
        with open(self.path / "ids.txt", encoding="utf-8") as fh:
            yield from counted_ids((line.rstrip("\n") for line in fh), self.n_docs, self.path / "ids.txt")

    def shard(self, i):
        """Shard i, checked on first use: (indptr in memory, {part: (file, data offset)}), or
        {part: array in memory} when the corpus is `resident`."""
        if i not in self._shards:
            info = self.shards[i]
            base = self.path / info["name"]
            indptr, checked, offsets = self._check(base, info, i)
            self._shards[i] = (indptr, {part: np.array(array) if self.resident
                                        else (f"{base}.{part}.npy", offsets[part])
                                        for part, array in checked.items()})
        return self._shards[i]

    def shard_lengths(self, info):
        """{part: elements its .npy file holds, as the manifest says} of a shard's files."""
        lengths = {"indptr": info["n_docs"] + 1, "indices": info["nnz"], "counts": info["nnz"]}
        if self.keeps_order:
            lengths.update(tokptr=info["n_docs"] + 1, tokens=info.get("n_positions", -1))
        return lengths

    def check_files(self):
        """InputError naming the first shard file that is missing, or whose header or size
        disagrees with the manifest (headers and file sizes only: no data is read)."""
        for info in self.shards:
            self._check_sizes(info)

    def _check_sizes(self, info, parts=None):
        """{part: byte offset of its data} of the shard's files `parts` (default: all of them),
        each checked by check_npy_size."""
        lengths = self.shard_lengths(info)
        return {part: check_npy_size(self.path / f"{info['name']}.{part}.npy", lengths[part])
                for part in parts or lengths}

    def _check(self, base, info, i):
        """Validate a shard's three arrays against the manifest; returns indptr (a copy),
        {part: the word ids or counts, memory-mapped} and {part: byte offset of its data}."""
        offsets = self._check_sizes(info, ("indptr", "indices", "counts"))
        try:
            indptr, indices, counts = (np.load(f"{base}.{part}.npy", mmap_mode="r")
                                       for part in ("indptr", "indices", "counts"))
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"{base}.*.npy", None, f"unreadable shard: {exc}") from None
        dtypes = (indptr.dtype, indices.dtype, counts.dtype)
        if dtypes != (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.int32)) or indices.ndim != 1 \
                or counts.ndim != 1 or not (indices.flags.c_contiguous and counts.flags.c_contiguous):
            raise InputError(f"{base}.*.npy", None, f"shard arrays have types {dtypes}, expected "
                             "1-d C-ordered int64 offsets, int32 word ids and counts")
        bad = (indptr.shape != (info["n_docs"] + 1,) or indices.shape != (info["nnz"],)
               or counts.shape != (info["nnz"],) or indptr[0] != 0 or indptr[-1] != info["nnz"]
               or (info["n_docs"] and np.any(np.diff(indptr) < 0)))
        if bad:
            raise InputError(f"{base}.indptr.npy", None, "shard arrays disagree with the manifest")
        if info["nnz"]:
            if indices.min() < 0 or indices.max() >= self.n_words:
                row = int(np.searchsorted(indptr, np.argmax((indices < 0) | (indices >= self.n_words)),
                                          side="right"))
                raise InputError(f"{base}.indices.npy", None, f"word id out of range in document "
                                 f"{self.starts[i] + row} (vocabulary has {self.n_words} words)")
            if counts.min() <= 0:
                raise InputError(f"{base}.counts.npy", None, "non-positive count")
        return np.array(indptr), {"indices": indices, "counts": counts}, offsets

    def rows(self, rows):
        """Gather documents by global row number (in the order given) into one CSR block.

        Each document's slice is read with pread into the output, so nothing stays mapped:
        resident memory does not grow with the corpus (a memory map would keep every page it
        touched, and the kernel's fault-around maps 64 KiB per random access). A `resident`
        corpus's slices are copied from memory: a minibatch of 500 short documents is 1,000
        slices, and their system calls took longer than the document step on them.
        """
        rows = np.asarray(rows, dtype=np.int64)
        shard_of, starts, lengths, out_ptr = locate_rows(self, rows)
        indices = np.empty(out_ptr[-1], dtype=np.int32)
        raw_counts = np.empty(out_ptr[-1], dtype=np.int32)
        if self.resident:
            from ..kernels.gather import copy_slices
        for s in np.unique(shard_of):
            docs = np.flatnonzero(shard_of == s)
            files = self.shard(s)[1]
            for out, part in ((indices, "indices"), (raw_counts, "counts")):
                if self.resident:
                    copy_slices(files[part], starts[docs], lengths[docs], out, out_ptr[docs])
                else:
                    path, offset = files[part]
                    _read_slices(path, offset, starts[docs], lengths[docs], out, out_ptr[docs])
        return Rows(rows, out_ptr, indices, raw_counts.astype(np.float64))

    def row_blocks(self, block_docs=10_000):
        """The row numbers of `blocks`, block by block."""
        for start in range(0, self.n_docs, block_docs):
            yield np.arange(start, min(start + block_docs, self.n_docs))

    def blocks(self, block_docs=10_000):
        """Stream the corpus in row order as CSR blocks of at most `block_docs` documents."""
        for rows in self.row_blocks(block_docs):
            yield self.rows(rows)

    def token_blocks(self):
        """Stream a --keep-order corpus's documents in reading order, a shard at a time:
        (tokptr, tokens), tokens[tokptr[d]:tokptr[d + 1]] the word ids (-1: outside the
        vocabulary) of the shard's document d."""
        if not self.keeps_order:
            raise InputError(self.path, None, "keeps no token order; prepare it with --keep-order")
        for i, info in enumerate(self.shards):
            base = self.path / info["name"]
            self._check_sizes(info, ("tokptr", "tokens"))
            try:
                tokptr = np.load(f"{base}.tokptr.npy")
                tokens = np.load(f"{base}.tokens.npy")
            except (OSError, ValueError, EOFError) as exc:
                raise InputError(f"{base}.tok*.npy", None, f"unreadable shard: {exc}") from None
            n = info.get("n_positions", -1)
            if (tokptr.dtype != np.int64 or tokens.dtype != np.int32 or tokptr.shape != (info["n_docs"] + 1,)
                    or tokens.shape != (n,) or tokptr[0] != 0 or tokptr[-1] != n
                    or np.any(np.diff(tokptr) < 0)):
                raise InputError(f"{base}.tokptr.npy", None, "token arrays disagree with the manifest")
            if n and (tokens.min() < -1 or tokens.max() >= self.n_words):
                raise InputError(f"{base}.tokens.npy", None, f"word id out of range (vocabulary has "
                                 f"{self.n_words} words)")
            yield tokptr, tokens

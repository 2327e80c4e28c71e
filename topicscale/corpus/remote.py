"""A native corpus (corpus/shards.py) at an fsspec URL: s3://, gs://, file://, memory:// ...

The manifest, vocabulary and ids are read whole; each shard's offsets (8 bytes a document) are
read once and kept; documents are ranged reads of the word-id and count arrays (fsspec's
cat_ranges, concurrent where the filesystem allows), one range per run of consecutive rows. What
a dask worker reads when the corpus is not on a path every worker sees. Needs fsspec (it comes
with topicscale[dask]) and the URL's own package (s3fs for s3://, gcsfs for gs://).
"""
import io
import json

import numpy as np

from ..errors import InputError, TopicscaleError
from .shards import Corpus, Rows, counted_ids, locate_rows


def _filesystem(url):
    try:
        import fsspec
    except ImportError:
        raise TopicscaleError(f"reading the corpus {url} needs fsspec: pip install topicscale[dask]") from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise TopicscaleError(f"cannot open {url}: {exc} (the URL's filesystem package, e.g. s3fs "
                              "for s3://, must be installed on the client and every worker)") from None


class RemoteCorpus(Corpus):
    """Corpus read through fsspec; `location` is the URL (what workers open)."""

    def __init__(self, url):
        self.url = str(url).rstrip("/")
        self.fs, self.root = _filesystem(self.url)
        self.path = self.url
        try:
            m = json.loads(self._read("manifest.json").decode("utf-8"))
        except FileNotFoundError:
            raise InputError(self.url, None, "not a topicscale corpus (no manifest.json); "
                             "create one with `topicscale prepare` and copy the folder there") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{self.url}/manifest.json", None, f"unreadable manifest: {exc}") from None
        self._take_manifest(m, f"{self.url}/manifest.json")

    @property
    def location(self):
        return self.url

    def _file(self, name):
        return f"{self.root}/{name}"

    def _read(self, name):
        return self.fs.cat_file(self._file(name))

    def _lines(self, name):
        return self._read(name).decode("utf-8").splitlines()

    @property
    def vocab(self):
        if self._vocab is None:
            self._vocab = self._lines("vocab.txt")
            if len(self._vocab) != self.n_words:
                raise InputError(f"{self.url}/vocab.txt", None, f"has {len(self._vocab)} words, "
                                 f"manifest says {self.n_words}")
        return self._vocab

    def ids(self):
        return self._lines("ids.txt")

    def iter_ids(self):
        yield from counted_ids(self._lines("ids.txt"), self.n_docs, f"{self.url}/ids.txt")

    def _array(self, name):
        try:
            return np.load(io.BytesIO(self._read(name)), allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"{self.url}/{name}", None, f"unreadable shard: {exc}") from None

    def shard(self, i):
        """Shard i: (indptr, {part: (file, data offset)}), indptr checked against the manifest."""
        if i not in self._shards:
            info = self.shards[i]
            indptr = self._array(f"{info['name']}.indptr.npy")
            if (indptr.dtype != np.int64 or indptr.shape != (info["n_docs"] + 1,) or indptr[0] != 0
                    or indptr[-1] != info["nnz"]):
                raise InputError(f"{self.url}/{info['name']}.indptr.npy", None,
                                 "shard arrays disagree with the manifest")
            parts = {}
            for part in ("indices", "counts"):
                name = self._file(f"{info['name']}.{part}.npy")
                with self.fs.open(name, "rb") as fh:
                    major, _ = np.lib.format.read_magic(fh)
                    header = (np.lib.format.read_array_header_1_0 if major == 1
                              else np.lib.format.read_array_header_2_0)(fh)
                    if header[2] != np.dtype(np.int32) or header[0] != (info["nnz"],):
                        raise InputError(name, None, "shard arrays disagree with the manifest")
                    parts[part] = (name, fh.tell())
            self._shards[i] = (indptr, parts)
        return self._shards[i]

    def rows(self, rows):
        """Gather documents by global row number (in the order given) into one CSR block, by
        ranged reads: one range per run of consecutive rows of a shard."""
        rows = np.asarray(rows, dtype=np.int64)
        shard_of, starts, lengths, out_ptr = locate_rows(self, rows)
        out = {"indices": np.empty(out_ptr[-1], dtype=np.int32), "counts": np.empty(out_ptr[-1], dtype=np.int32)}
        # runs: consecutive positions of the request that continue each other in one shard's arrays
        breaks = np.flatnonzero((shard_of[1:] != shard_of[:-1]) | (starts[1:] != starts[:-1] + lengths[:-1])) + 1
        first = np.concatenate([[0], breaks]).astype(np.int64)
        last = np.concatenate([breaks, [rows.shape[0]]]).astype(np.int64)
        for part, array in out.items():
            paths, lo, hi = [], [], []
            for a, b in zip(first, last):
                if out_ptr[b] == out_ptr[a]:
                    continue
                name, offset = self.shard(shard_of[a])[1][part]
                paths.append(name)
                lo.append(int(offset + 4 * starts[a]))
                hi.append(int(offset + 4 * (starts[b - 1] + lengths[b - 1])))
            pieces = self.fs.cat_ranges(paths, lo, hi) if paths else []
            at = 0
            for piece in pieces:
                if isinstance(piece, Exception):
                    raise InputError(self.url, None, f"cannot read the {part} of documents: {piece}")
                values = np.frombuffer(piece, dtype=np.int32)
                array[at:at + values.shape[0]] = values
                at += values.shape[0]
            if at != array.shape[0]:
                raise InputError(self.url, None, f"short read of the documents' {part}: the shard "
                                 "files are shorter than their headers say")
        indices, counts = out["indices"], out["counts"]
        if indices.shape[0] and (indices.min() < 0 or indices.max() >= self.n_words or counts.min() <= 0):
            raise InputError(self.url, None, "a shard holds a word id out of range or a non-positive count")
        return Rows(rows, out_ptr, indices, counts.astype(np.float64))

    def token_blocks(self):
        """As Corpus.token_blocks, each shard's token arrays read whole."""
        if not self.keeps_order:
            raise InputError(self.url, None, "keeps no token order; prepare it with --keep-order")
        for info in self.shards:
            yield self._array(f"{info['name']}.tokptr.npy"), self._array(f"{info['name']}.tokens.npy")

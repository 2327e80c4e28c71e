"""Model folders: MODEL/model.npz (parameters + JSON metadata + vocabulary) and MODEL/metrics.jsonl.

model.npz is replaced atomically, so a model folder always holds one consistent model; a
format version and a SHA-256 of every array guard against files from newer versions and
against corruption.
"""
import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from ..atomic import atomic_file
from ..errors import InputError
from .. import __version__

MODEL_FILE = "model.npz"
SCORES_FILE = "coherence.json"      # what eval --coherence saves (coherence.py)
METRICS_FILE = "metrics.jsonl"
FORMAT = "topicscale-model"
VERSION = 1


def _digest(arrays):
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.reshape(-1).view(np.uint8))      # the array's bytes, without a copy
    return h.hexdigest()


def encode_vocab(vocab):
    return np.frombuffer("\n".join(vocab).encode("utf-8"), dtype=np.uint8)


def decode_vocab(arr):
    text = arr.tobytes().decode("utf-8")
    return text.split("\n") if text else []


def save(path, meta, arrays, vocab, filename=MODEL_FILE):
    """Write MODEL/<filename> atomically (the folder is created if needed). A new model.npz first
    removes SCORES_FILE, the coherence `eval --coherence` saved for the model it replaces: that
    file names the model by its step and documents seen, which another fit may repeat.

    The .npz is written with fixed zip timestamps, so equal models give equal bytes.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if filename == MODEL_FILE:
        (path / SCORES_FILE).unlink(missing_ok=True)
    arrays = dict(arrays, vocab=encode_vocab(vocab))
    meta = dict(meta, format=FORMAT, version=VERSION, created_by=f"topicscale {__version__}",
                sha256=_digest(arrays))
    arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    with atomic_file(path / filename) as fh:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, array in arrays.items():
                member = io.BytesIO()
                np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
                zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)),
                            member.getbuffer())


def load(path, filename=MODEL_FILE):
    """Read a model folder; returns (meta, arrays, vocab) or raises InputError."""
    path = Path(path)
    file = path / filename
    if not file.is_file():
        raise InputError(path, None, f"not a topicscale model (no {filename}); fit one with `topicscale fit`")
    try:
        with np.load(file, allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise InputError(file, None, f"truncated or corrupted model file ({exc.__class__.__name__})") from None
    if meta.get("format") != FORMAT:
        raise InputError(file, None, "not a topicscale model file")
    if meta.get("version", 0) > VERSION:
        raise InputError(file, None, f"model format version {meta['version']} was written by a newer "
                         f"topicscale ({meta.get('created_by')}); upgrade to read it")
    if _digest(arrays) != meta.get("sha256"):
        raise InputError(file, None, "corrupted model file (checksum mismatch)")
    vocab = decode_vocab(arrays.pop("vocab"))
    return meta, arrays, vocab


def append_metrics(path, record):
    """Append one JSON line to MODEL/metrics.jsonl."""
    with open(Path(path) / METRICS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")

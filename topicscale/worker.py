"""What a dask worker runs for topicscale/distributed.py: pure functions of their arguments (a
task lost with its worker reruns elsewhere and gives the same result), with per-process caches
of opened corpora and of local steps (whose scratch buffers are reused from task to task). No
dask import: the functions travel by name and run in the worker's one task thread.

Every task that runs a kernel first checks the versions the client sent (`ready`): a model is
the same bit for bit only with the same topicscale, numba and numpy.
"""
import numpy as np

from . import __version__
from .errors import TopicscaleError

_CORPORA = {}
_LOCALS = {}
_KEEP_LOCALS = 8


class VersionMismatch(TopicscaleError):
    """A worker's topicscale, numba or numpy differs from the client's."""


def versions():
    """The versions that decide the numbers a kernel computes."""
    import numba
    return {"topicscale": __version__, "numba": numba.__version__, "numpy": np.__version__}


def ready(expected, threads):
    """Refuse to compute with other versions than the client's; run numba on `threads` threads
    (at most the worker's cores)."""
    mine = versions()
    if mine != expected:
        differ = ", ".join(f"{k} {mine[k]} (client {expected.get(k)})" for k in mine if mine[k] != expected.get(k))
        import socket
        raise VersionMismatch(f"a dask worker on {socket.gethostname()} runs {differ}: install the client's "
                              "versions on every worker (the same seed gives the same model only with "
                              "the same code)")
    import numba
    wanted = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    if numba.get_num_threads() != wanted:
        numba.set_num_threads(wanted)


def corpus(location):
    """The corpus at `location` (a path every worker sees, or an fsspec URL), opened once a process."""
    if location not in _CORPORA:
        from .corpus.shards import open_corpus
        _CORPORA[location] = open_corpus(location)
    return _CORPORA[location]


def corpus_manifest(location):
    """The manifest of the corpus at `location` as this worker reads it now, or why it cannot; a
    corpus prepared anew there since this process opened it replaces the one it kept."""
    from .corpus.shards import open_corpus
    try:
        now = open_corpus(location)
    except Exception as exc:        # said on the client, naming this worker (PermissionError, a
        return str(exc) or type(exc).__name__      # cloud store's credentials, a damaged manifest)
    if location not in _CORPORA or _CORPORA[location].manifest != now.manifest:
        _CORPORA[location] = now
    return now.manifest


def load(location, rows):
    """The documents at these row numbers of the corpus at `location` (Rows)."""
    return corpus(location).rows(rows)


def words(documents):
    """The block's distinct word ids (ascending, int32: what travels back) and its token count."""
    from .inference.chunks import distinct
    return distinct(documents.indices).astype(np.int32), documents.n_tokens


def _local(key, local):
    """The process's copy of a run's local step (its scratch reused), cached by the client's key."""
    if key not in _LOCALS:
        if len(_LOCALS) >= _KEEP_LOCALS:
            _LOCALS.pop(next(iter(_LOCALS)))
        _LOCALS[key] = local
    return _LOCALS[key]


def estep(expected, threads, key, local, documents, side, topics, seed, keep_gamma):
    """One chunk's local step (inference/chunks.chunk_statistics): (sparse stats, ChunkResult)."""
    from .inference.chunks import chunk_statistics
    ready(expected, threads)
    return chunk_statistics(_local(key, local), documents, side, topics, seed, keep_gamma)


def apply(expected, threads, documents, fn, args):
    """fn(documents, *args) (a block's eval or infer, a minibatch's topic seeding)."""
    ready(expected, threads)
    return fn(documents, *args)


def pid():
    """The worker's process id (tests kill workers by it)."""
    import os
    return os.getpid()

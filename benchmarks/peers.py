"""Training workers for the side-by-side runs: one tool, one corpus, several passes, topics
snapshotted along the way. Run by bench_peers.py as `python peers.py --worker train SPEC.json`,
each run in a fresh process with its thread pools pinned (common.child_env).

Every worker trains with the shared settings, saves its K x V topic matrix E[beta] at the
requested points (snapshots) and reports the training time up to each point, the time spent
taking the snapshot excluded. Scoring is a separate step (`--worker score`), so it never runs
while a tool trains.

  topicscale            topicscale's own driver loop (topicscale.train.train with the model,
                        local step and global step built exactly as `topicscale fit` builds them;
                        a snapshot is taken by the driver's evaluation hook, whose time the driver
                        does not count in train_seconds). bench_peers.py checks that the last
                        snapshot equals the topics of a real `topicscale fit` run bit for bit.
                        Its local step is fit's default: CVB0 on short documents (SOTU, GCIDE),
                        mean-field on long ones (NYT); see runs.default_local.
  topicscale-meanfield  the same with --local meanfield (the default before it chose by length).
  topicscale-accelerate the same with --accelerate (SQUAREM E-step).
  topicscale-paper      the same with --estep-beta exp-elog (the SVI paper's E-step, with
                        exp(E[log beta]) instead of the default E[beta]).
  gensim                gensim LdaModel: one update(corpus, passes=P) call (gensim's own multi-pass
                        loop), snapshots in a wrapper of do_mstep (time excluded).
  gensim-multicore      gensim LdaMulticore(workers=threads), chunksize = S / workers so that each
                        update folds in S documents; same snapshots.
  sklearn               LatentDirichletAllocation (online): one partial_fit per stretch of
                        minibatches between snapshots, fed topicscale's minibatch order of each epoch.
  tomotopy              tomotopy LDAModel (collapsed Gibbs, workers=threads): train(step) calls,
                        snapshot after each.
  vw                    Vowpal Wabbit --lda through its own driver and cache: one process per number of
                        passes (VW cannot write a model per pass for LDA), each timed.
"""
import hashlib
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

# topicscale's variants: the `topicscale fit` options each adds to the shared settings
TOPICSCALE_VARIANTS = {"topicscale": {}, "topicscale-meanfield": {"local": "meanfield"},
                       "topicscale-accelerate": {"accelerate": True},
                       "topicscale-paper": {"estep_beta": "exp-elog"}}


# ------------------------------------------------------------------------------ data
def load_csr(path):
    """A native corpus as one scipy CSR matrix (float64 counts), in row order."""
    import numpy as np
    import scipy.sparse as sp
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(path)
    ptr, ind, cnt = [np.zeros(1, dtype=np.int64)], [], []
    for rows in corpus.blocks(20000):
        ptr.append(rows.indptr[1:] + ptr[-1][-1])
        ind.append(np.asarray(rows.indices, dtype=np.int32))
        cnt.append(np.asarray(rows.counts, dtype=np.float64))
    X = sp.csr_matrix((np.concatenate(cnt), np.concatenate(ind), np.concatenate(ptr)),
                      shape=(corpus.n_docs, corpus.n_words))
    X.sort_indices()
    return corpus, X


def epoch_order(corpus, batch_size, seed, epoch):
    from topicscale.corpus.stream import MinibatchStream
    return MinibatchStream(corpus, batch_size, seed).epoch_order(epoch)


def bow(X):
    """gensim bag of words: a list of [(word id, count), ...] per document."""
    out = []
    for d in range(X.shape[0]):
        lo, hi = X.indptr[d], X.indptr[d + 1]
        out.append(list(zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())))
    return out


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Snapshots:
    """Save K x V topic matrices (float32, rows renormalised when scored) and keep the timeline."""

    def __init__(self, folder, keep=True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.keep = keep
        self.items = []
        self.excluded = 0.0       # seconds spent taking snapshots inside a timed region

    def take(self, beta_kxv, train_seconds, **where):
        import numpy as np
        t0 = time.perf_counter()
        beta = np.asarray(beta_kxv, dtype=np.float64)
        item = dict(where, train_seconds=train_seconds,
                    sha256=hashlib.sha256(np.ascontiguousarray(beta).tobytes()).hexdigest()[:16])
        if self.keep:
            path = self.folder / f"snap-{len(self.items):03d}.npy"
            np.save(path, beta.astype(np.float32))
            item["path"] = str(path)
        self.items.append(item)
        dt = time.perf_counter() - t0
        self.excluded += dt
        return dt


# ------------------------------------------------------------------------------ topicscale
def train_topicscale(spec, snaps):
    """topicscale's driver loop, in process; snapshots by its evaluation hook."""
    import numba
    import dataclasses
    from topicscale import runs
    from topicscale.corpus.shards import Corpus
    from topicscale.train import train
    s = spec["settings"]
    numba.set_num_threads(s["threads"])
    corpus = Corpus(spec["train"])
    # the options `fit` is given (the E-step cap and tolerance are its defaults, 100 and 1e-3:
    # giving them would select the mean-field step)
    config = {"model": "lda", "algorithm": "svi", "n_topics": s["topics"], "batch_size": s["batch_size"],
              "kappa": s["kappa"], "tau": s["tau"], "alpha": s["alpha"], "eta": s["eta"],
              "passes": float(s["passes"]), "seed": s["seed"], "threads": s["threads"], "output": None,
              "corpus": str(Path(spec["train"]).resolve()), **TOPICSCALE_VARIANTS[spec["tool"]]}
    config = runs.with_defaults(config)
    model = runs.new_model(config, corpus)                  # the same construction as `fit`
    algo = runs.build_algorithm(model, config, corpus)
    limits = dataclasses.replace(runs.run_limits(config), eval_every=1)     # the snapshot hook
    wanted = set(spec["snap_batches"]) | {int(round(s["passes"])) * -(-corpus.n_docs // s["batch_size"])}
    records = []
    state = {"train_seconds": 0.0}

    def record(r):
        if r.get("event") == "batch":
            records.append({"rho": r.get("rho"), "sweeps": r.get("sweeps"), "seconds": r.get("seconds")})
        elif r.get("event") == "eval":
            state["train_seconds"] = r["train_seconds"]

    def hook(m):
        # called by the driver after every minibatch (eval_every=1) and at the end; not timed
        if m.step in wanted:
            snaps.take(m.expected_beta().T, None, batches=int(m.step), docs=int(m.docs_seen))
        return {"per_word_ll": float("nan")}

    summary, finished = train(algo, corpus, limits, config["seed"], evaluate=hook, on_record=record,
                              progress=False)
    # the driver reports train_seconds at each eval record; attach them to the snapshots
    timeline = {}
    acc = 0.0
    for i, r in enumerate(records):
        acc += r["seconds"]
        timeline[i + 1] = acc
    for item in snaps.items:
        item["train_seconds"] = timeline[item["batches"]]
    sweeps = [r["sweeps"] for r in records]
    return {"summary": summary, "rho": [r["rho"] for r in records], "sweeps": sweeps,
            "batch_seconds": [r["seconds"] for r in records], "final_sha256": snaps.items[-1]["sha256"]}


# ------------------------------------------------------------------------------ gensim
def train_gensim(spec, snaps, multicore):
    import numpy as np
    from gensim.models import LdaModel, LdaMulticore
    s = spec["settings"]
    corpus, X = load_csr(spec["train"])
    order = epoch_order(corpus, s["batch_size"], s["seed"], 0)
    docs = bow(X[order])
    K = s["topics"]
    workers = s["threads"] if multicore else 1
    chunk = s["batch_size"] // workers
    common = dict(num_topics=K, id2word=dict(enumerate(corpus.vocab)), chunksize=chunk, passes=s["passes"],
                  alpha=np.full(K, 1.0 / K), eta=s["eta"], decay=s["kappa"], offset=s["tau"],
                  eval_every=None, iterations=s["max_iter"], gamma_threshold=s["tol"],
                  random_state=s["seed"])
    if multicore:
        model = LdaMulticore(corpus=None, workers=workers, **common)
    else:
        model = LdaModel(corpus=None, update_every=1, **common)
    wanted = set(spec["snap_batches"])
    rhos = []
    inner = model.do_mstep
    clock = {"t0": None}

    def mstep(rho, other, extra_pass=False):
        out = inner(rho, other, extra_pass)
        rhos.append(float(rho))
        if len(rhos) in wanted:
            now = time.perf_counter()
            elapsed = now - clock["t0"] - snaps.excluded
            snaps.take(model.get_topics(), elapsed, batches=len(rhos))
        return out
    model.do_mstep = mstep
    t0 = clock["t0"] = time.perf_counter()
    if multicore:
        model.update(docs)                  # passes and chunksize from the constructor
    else:
        model.update(docs, chunksize=chunk, passes=s["passes"])
    total = time.perf_counter() - t0 - snaps.excluded
    if not snaps.items or snaps.items[-1]["batches"] != len(rhos):
        snaps.take(model.get_topics(), total, batches=len(rhos))
    return {"rho": rhos, "train_seconds": total, "dtype": str(np.dtype(model.dtype)),
            "workers": workers, "chunksize": chunk, "updates": len(rhos)}


# ------------------------------------------------------------------------------ sklearn
def train_sklearn(spec, snaps):
    import numpy as np
    from sklearn.decomposition import LatentDirichletAllocation
    s = spec["settings"]
    corpus, X = load_csr(spec["train"])
    S = s["batch_size"]
    K = s["topics"]
    lda = LatentDirichletAllocation(
        n_components=K, learning_method="online", batch_size=S, max_iter=1,
        learning_decay=s["kappa"], learning_offset=s["tau"] - 1.0,
        max_doc_update_iter=s["max_iter"], mean_change_tol=s["tol"], doc_topic_prior=1.0 / K,
        topic_word_prior=s["eta"], n_jobs=s["threads"], total_samples=X.shape[0],
        random_state=s["seed"], evaluate_every=-1)
    rhos = []
    inner = lda._em_step

    def em_step(X_batch, total_samples, batch_update, parallel=None):
        rhos.append(float(np.power(lda.learning_offset + lda.n_batch_iter_, -lda.learning_decay)))
        return inner(X_batch, total_samples, batch_update, parallel)
    lda._em_step = em_step
    B = -(-X.shape[0] // S)
    wanted = sorted(set(spec["snap_batches"]))
    elapsed = 0.0
    done = 0
    for epoch in range(int(math.ceil(s["passes"]))):
        Xe = X[epoch_order(corpus, S, s["seed"], epoch)]      # not timed: the minibatch order
        Xe.sort_indices()
        cuts = [g - epoch * B for g in wanted if epoch * B < g <= (epoch + 1) * B]
        if not cuts or cuts[-1] != B:
            cuts.append(B)
        lo = 0
        for hi in cuts:
            part = Xe[lo * S:min(hi * S, Xe.shape[0])]
            t0 = time.perf_counter()
            lda.partial_fit(part)
            elapsed += time.perf_counter() - t0
            done = epoch * B + hi
            if done in wanted:
                snaps.take(lda.components_ / lda.components_.sum(axis=1, keepdims=True), elapsed, batches=done)
            lo = hi
    if not snaps.items or snaps.items[-1]["batches"] != done:
        snaps.take(lda.components_ / lda.components_.sum(axis=1, keepdims=True), elapsed, batches=done)
    return {"rho": rhos, "train_seconds": elapsed, "n_batch_iter_": int(lda.n_batch_iter_)}


# ------------------------------------------------------------------------------ tomotopy
def train_tomotopy(spec, snaps):
    import numpy as np
    import tomotopy as tp
    s = spec["settings"]
    corpus, X = load_csr(spec["train"])
    vocab = corpus.vocab
    K = s["topics"]
    mdl = tp.LDAModel(tw=tp.TermWeight.ONE, min_cf=0, min_df=0, rm_top=0, k=K, alpha=1.0 / K, eta=s["eta"],
                      seed=s["seed"])
    mdl.optim_interval = 0                     # keep the symmetric alpha fixed, as the other tools do
    for d in range(X.shape[0]):                # not timed: corpus conversion
        lo, hi = X.indptr[d], X.indptr[d + 1]
        words = []
        for w, c in zip(X.indices[lo:hi], X.data[lo:hi]):
            words.extend([vocab[w]] * int(c))
        mdl.add_doc(words)
    column = {w: i for i, w in enumerate(vocab)}
    elapsed = 0.0
    step, total = spec["gibbs_every"], spec["gibbs_iterations"]

    def topics():
        used = [column[w] for w in mdl.used_vocabs]
        beta = np.empty((K, len(vocab)))
        for k in range(K):
            row = np.asarray(mdl.get_topic_word_dist(k), dtype=np.float64)
            beta[k, :] = row.min()            # words absent from training: the smallest (eta-only) value
            beta[k, used] = row
        return beta / beta.sum(axis=1, keepdims=True)

    done = 0
    ll = []
    while done < total:
        t0 = time.perf_counter()
        mdl.train(step, workers=s["threads"])
        elapsed += time.perf_counter() - t0
        done += step
        ll.append(float(mdl.ll_per_word))
        snaps.take(topics(), elapsed, iterations=done)
    return {"train_seconds": elapsed, "ll_per_word": ll, "used_vocabs": len(mdl.used_vocabs),
            "isa": tp.isa, "parallel": "tomotopy default ParallelScheme"}


# ------------------------------------------------------------------------------ Vowpal Wabbit
def vw_data(spec, folder):
    """The training documents in VW's text format (word id:count in the default namespace), in
    topicscale's epoch-0 order, and a cache built by an untimed run; returns (data, cache, V)."""
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(spec["train"])
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "train.vw"
    if not data.is_file():
        s = spec["settings"]
        order = epoch_order(corpus, s["batch_size"], s["seed"], 0)
        tmp = folder / "train.vw.part"
        with open(tmp, "w") as fh:
            for start in range(0, len(order), 20000):
                rows = corpus.rows(order[start:start + 20000])
                for d in range(rows.n_docs):
                    lo, hi = rows.indptr[d], rows.indptr[d + 1]
                    fh.write("| " + " ".join(f"{w}:{int(c)}" for w, c in
                                             zip(rows.indices[lo:hi], rows.counts[lo:hi])) + "\n")
        tmp.replace(data)
    return data, corpus


def vw_args(spec, data, cache, passes, model_out, n_docs, n_words):
    s = spec["settings"]
    bits = max(1, math.ceil(math.log2(n_words)))
    # rho_t = l * (initial_t + t)^-power_t with t = 1, 2, ... (lda_core.cc: example_t++ before use),
    # so l = 1, initial_t = tau - 1, power_t = kappa gives topicscale's (tau + t)^-kappa, t from 0.
    return ["--lda", str(s["topics"]), "--lda_alpha", repr(1.0 / s["topics"]), "--lda_rho", repr(s["eta"]),
            "--lda_D", str(n_docs), "--lda_epsilon", repr(s["tol"]), "--minibatch", str(s["batch_size"]),
            # VW crashes (SIGSEGV) when the minibatch exceeds its example queue (256 by default)
            "--example_queue_limit", str(max(1024, 2 * s["batch_size"])),
            "-l", "1", "--initial_t", repr(s["tau"] - 1.0), "--power_t", repr(s["kappa"]),
            "-b", str(bits), "--random_seed", str(s["seed"]), "-d", str(data), "--cache_file", str(cache),
            "--passes", str(passes), "--holdout_off", "-f", str(model_out)]


def vw_topics(model_path, folder, n_words):
    """VW's readable model (lambda + eta per word index and topic) as a K x V E[beta]."""
    import numpy as np
    from vowpalwabbit import Workspace
    readable = Path(folder) / "readable.txt"
    ws = Workspace(arg_list=["-i", str(model_path), "-t", "--readable_model", str(readable), "--quiet",
                             "-d", os.devnull])
    ws.finish()
    rows = {}
    with open(readable) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 3 or not parts[0].isdigit():
                continue
            i = int(parts[0])
            if i < n_words:
                rows[i] = [float(x) for x in parts[1:]]
    readable.unlink()
    lam = np.array([rows[i] for i in range(n_words)])            # V x K
    return (lam / lam.sum(axis=0, keepdims=True)).T


def train_vw(spec, snaps):
    """One timed VW run of all passes (its own driver, reading its cache), timestamps of its
    progress lines (one per minibatch) giving the time at each pass boundary; when snapshots are
    scored (first repeat), untimed runs of fewer passes (spec vw_scored_passes, default 1 and 3)
    give intermediate topics (VW is deterministic for a seed, so they equal the timed run's
    state at those passes)."""
    import subprocess
    from vowpalwabbit import Workspace
    s = spec["settings"]
    P = int(s["passes"])
    folder = Path(spec["snap_dir"]) / "vw"
    folder.mkdir(parents=True, exist_ok=True)
    data, corpus = vw_data(spec, Path(spec["work"]) / "vw-data" / Path(spec["train"]).name)
    cache = data.with_suffix(".cache")
    if not cache.is_file():                 # untimed: build VW's example cache (one E-step-only pass)
        ws = Workspace(arg_list=vw_args(spec, data, cache, 1, folder / "cache-model", corpus.n_docs,
                                        corpus.n_words) + ["-t", "--quiet"])
        ws.finish()
    model = folder / f"model-{P}"
    args = [sys.executable, "-u", "-m", "vowpalwabbit"] + vw_args(spec, data, cache, P, model, corpus.n_docs,
                                                                   corpus.n_words) + ["--progress", str(s["batch_size"])]
    stamps, start, lines = [], None, []
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, bufsize=1)
    for line in proc.stderr:
        now = time.perf_counter()
        lines.append(line.rstrip())
        parts = line.split()
        if line.startswith("average  since"):
            start = now                      # set-up (weights allocated and initialised) is done
        elif start is not None and len(parts) >= 4 and parts[2].isdigit():
            stamps.append((int(parts[2]), now - start))
    proc.wait()
    end = time.perf_counter()
    if proc.returncode != 0:
        raise RuntimeError(f"vw exited {proc.returncode}: {' '.join(args)}\n" + "\n".join(lines[-20:]))
    per_pass = None
    for l in lines:       # "number of examples per pass = N" (several passes) or "number of examples = N"
        if l.startswith("number of examples per pass") or (l.startswith("number of examples =") and per_pass is None):
            per_pass = int(l.split("=")[1])
    per_pass = per_pass or corpus.n_docs
    total = end - start
    # time at each pass boundary: interpolate the example counter between minibatch stamps
    times = []
    for p in range(1, P + 1):
        target = p * per_pass
        prev = (0, 0.0)
        t = total
        for ex, ts in stamps:
            if ex >= target:
                t = prev[1] + (ts - prev[1]) * (target - prev[0]) / max(1, ex - prev[0])
                break
            prev = (ex, ts)
        times.append(min(t, total) if p < P else total)
    scored = set(spec.get("vw_scored_passes", [1, 3])) | {P}
    for p in range(1, P + 1):
        if p < P and (not snaps.keep or p not in scored):   # timing only: no intermediate topics
            snaps.items.append({"passes": p, "train_seconds": times[p - 1]})
            continue
        if p < P:
            m = folder / f"model-{p}"
            ws = Workspace(arg_list=vw_args(spec, data, cache, p, m, corpus.n_docs, corpus.n_words) + ["--quiet"])
            ws.finish()
        else:
            m = model
        snaps.take(vw_topics(m, folder, corpus.n_words), times[p - 1], passes=p)
    return {"train_seconds": total, "pass_seconds": times, "examples_per_pass": per_pass,
            "docs": corpus.n_docs, "stamps": len(stamps), "setup_seconds": start - t0,
            "args": vw_args(spec, data, cache, P, "MODEL", corpus.n_docs, corpus.n_words)}


# ------------------------------------------------------------------------------ scoring
def score(spec):
    """evaluate_topics for every snapshot file listed (the one fold-in for all tools)."""
    import numba
    import numpy as np
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    numba.set_num_threads(min(spec["threads"], numba.config.NUMBA_NUM_THREADS))
    held = Corpus(spec["heldout"])
    out = []
    for path in spec["paths"]:
        beta = np.load(path).astype(np.float64)
        if beta.shape[1] != held.n_words or not np.all(np.isfinite(beta)) or beta.min() < 0:
            raise RuntimeError(f"{path}: not a finite non-negative K x {held.n_words} matrix ({beta.shape})")
        beta /= beta.sum(axis=1, keepdims=True)
        t0 = time.perf_counter()
        r = evaluate_topics(beta, held, alpha=None, seed=0, max_iter=100, tol=1e-3)
        r["seconds"] = time.perf_counter() - t0
        out.append(r)
        if not spec.get("keep"):
            Path(path).unlink()
    return out


def worker_train(spec):
    import numba  # noqa: F401  (imported early so that every tool pays the same import cost outside timing)
    tool = spec["tool"]
    snaps = Snapshots(spec["snap_dir"], keep=spec.get("keep_snapshots", True))
    t0 = time.perf_counter()
    if tool in TOPICSCALE_VARIANTS:
        extra = train_topicscale(spec, snaps)
    elif tool in ("gensim", "gensim-multicore"):
        extra = train_gensim(spec, snaps, multicore=tool == "gensim-multicore")
    elif tool == "sklearn":
        extra = train_sklearn(spec, snaps)
    elif tool == "tomotopy":
        extra = train_tomotopy(spec, snaps)
    elif tool == "vw":
        extra = train_vw(spec, snaps)
    else:
        raise ValueError(f"unknown tool {tool}")
    return {"tool": tool, "snapshots": snaps.items, "extra": extra, "worker_seconds": time.perf_counter() - t0,
            "peak_rss_mb": peak_rss_mb()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] != "--worker":
        print("usage: peers.py --worker {train,score,info} SPEC.json", file=sys.stderr)
        return 2
    kind, spec_path = argv[1], argv[2]
    spec = json.loads(Path(spec_path).read_text())
    if kind == "train":
        result = worker_train(spec)
    elif kind == "score":
        result = score(spec)
    elif kind == "info":
        from common import versions
        result = versions()
    else:
        raise ValueError(kind)
    Path(spec["result_out"]).write_text(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the lazily scaled global step saves: the SVI update and the per-minibatch topic
preparation, dense over all V x K entries of lambda (in numpy, as topicscale did them until
2026-11-24, and in the parallel numba kernels of topicscale.kernels.topic_matrix, as LDAModel did
until 2026-11-25 and HDP still does) against a representation that touches only the minibatch's
words (what LDAModel does since; this benchmark keeps its own copy of both).

    python benchmarks/bench_globalstep.py [--corpus gcide] [--topics 200] [--steps 60]

Dense, per minibatch (topicscale.inference.global_steps.svi.SVI.update, LDAModel.exp_elog_beta,
the driver's LDAModel.is_finite):
    lambda *= 1 - rho;  lambda += rho eta;  lambda[words] += rho D/S stats      (two dense passes)
    exp(psi(lambda[words]) - psi(lambda.sum(axis=0)))                            (a dense column sum)
    isfinite(lambda.sum(axis=0))                                                 (another dense sum)
Proposed (the same numbers up to rounding): lambda = c M + e with scalars c, e, and the column
sums of M kept up to date:
    c <- (1 - rho) c;  e <- (1 - rho) e + rho eta;  M[words] += rho D/S stats / c;
    colsum[k] += sum_w (rho D/S stats / c)[w, k];  sum_w lambda_wk = c colsum_k + V e;
    renormalise (M <- c M, c <- 1) when c falls below 1e-100 (rare: an O(V K) pass);
    is_finite checks the touched rows and the column sums.
Both are run on the real shapes: lambda of a model fitted on the corpus, the word sets of its
first minibatches (S = 500), random statistics of the right size; the final topics of the two
are compared. All three compute exp(E[log beta]) of the rows with the shipped kernel
(kernels.special.exp_elog_rows), so they differ only in how lambda is kept.

Writes OUT/globalstep.md and OUT/globalstep.json.
"""
import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import child_env, machine, run_worker, write_json  # noqa: E402


def worker(spec):
    import numpy as np
    from topicscale.corpus.shards import Corpus
    from topicscale.corpus.stream import MinibatchStream
    from topicscale.kernels.special import exp_elog_rows
    from topicscale.kernels.topic_matrix import column_sums, step_towards
    from topicscale.models import load_model
    model = load_model(spec["model"])
    corpus = Corpus(spec["train"])
    S, D, steps = 500, corpus.n_docs, spec["steps"]
    V, K = model.lam.shape
    eta = model.eta
    stream = MinibatchStream(corpus, S, 0)
    rng = np.random.default_rng(0)
    batches = []
    for i, (_, b) in enumerate(stream()):
        if i >= steps:
            break
        words = np.unique(b.indices).astype(np.int64)
        batches.append((words, rng.gamma(1.0, 1.0, size=(words.shape[0], K)) * 0.1))
    rhos = [(10.0 + t) ** -0.7 for t in range(steps)]

    def exp_elog(rows, colsum):
        rows = np.ascontiguousarray(rows)
        out = np.empty_like(rows)
        exp_elog_rows(rows, colsum, np.arange(rows.shape[0]), out)
        return out

    # load (or compile) the kernels before any timing
    small = model.lam[:8].copy()
    exp_elog(small, column_sums(small))
    step_towards(small, 0.5, eta, np.arange(2), 1.0, np.ones((2, K)))

    # ---- dense in numpy (topicscale until 2026-11-24)
    lam = model.lam.copy()
    t_dense = {"topics for the E-step (dense column sum)": 0.0, "global step (dense scaling)": 0.0,
               "is_finite (dense sum)": 0.0}
    for (words, stats), rho in zip(batches, rhos):
        t0 = time.perf_counter()
        exp_elog(lam[words], lam.sum(axis=0))
        t1 = time.perf_counter()
        lam *= 1.0 - rho
        lam += rho * eta
        lam[words] += (rho * D / S) * stats
        t2 = time.perf_counter()
        bool(np.all(np.isfinite(lam.sum(axis=0))))
        t3 = time.perf_counter()
        t_dense["topics for the E-step (dense column sum)"] += t1 - t0
        t_dense["global step (dense scaling)"] += t2 - t1
        t_dense["is_finite (dense sum)"] += t3 - t2
    dense_beta = lam / lam.sum(axis=0)[None, :]

    # ---- dense in the shipped numba kernels
    lam = model.lam.copy()
    t_shipped = dict.fromkeys(t_dense, 0.0)
    for (words, stats), rho in zip(batches, rhos):
        t0 = time.perf_counter()
        out = np.empty((words.shape[0], K))
        exp_elog_rows(lam, column_sums(lam), words, out)
        t1 = time.perf_counter()
        step_towards(lam, rho, eta, words, rho * D / S, stats)
        t2 = time.perf_counter()
        bool(np.all(np.isfinite(column_sums(lam))))
        t3 = time.perf_counter()
        for key, a, b in zip(t_shipped, (t0, t1, t2), (t1, t2, t3)):
            t_shipped[key] += b - a
    shipped_identical = bool(np.array_equal(lam / lam.sum(axis=0)[None, :], dense_beta))

    # ---- lazily scaled version
    M = model.lam.copy()
    c, e = 1.0, 0.0
    colsum = M.sum(axis=0)
    t_lazy = {"topics for the E-step (rows + kept column sums)": 0.0, "global step (touched rows)": 0.0,
              "is_finite (touched rows + column sums)": 0.0}
    renorm = 0
    for (words, stats), rho in zip(batches, rhos):
        t0 = time.perf_counter()
        exp_elog(c * M[words] + e, c * colsum + V * e)
        t1 = time.perf_counter()
        c *= 1.0 - rho
        e = (1.0 - rho) * e + rho * eta
        add = ((rho * D / S) / c) * stats
        M[words] += add
        colsum += add.sum(axis=0)
        if c < 1e-100:
            M *= c
            colsum *= c
            c = 1.0
            renorm += 1
        t2 = time.perf_counter()
        bool(np.all(np.isfinite(M[words])) and np.all(np.isfinite(colsum)) and np.isfinite(c) and np.isfinite(e))
        t3 = time.perf_counter()
        t_lazy["topics for the E-step (rows + kept column sums)"] += t1 - t0
        t_lazy["global step (touched rows)"] += t2 - t1
        t_lazy["is_finite (touched rows + column sums)"] += t3 - t2
    lazy_lam = c * M + e
    lazy_beta = lazy_lam / lazy_lam.sum(axis=0)[None, :]
    rel = float(np.max(np.abs(lazy_beta - dense_beta) / dense_beta))
    return {"V": V, "K": K, "steps": steps, "mean_words_per_batch": float(np.mean([w.shape[0] for w, _ in batches])),
            "dense_seconds": t_dense, "shipped_seconds": t_shipped, "lazy_seconds": t_lazy,
            "shipped_topics_identical_to_numpy": shipped_identical, "renormalisations": renorm,
            "max_relative_difference_of_beta": rel, "lambda_mb": model.lam.nbytes / 2 ** 20}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="gcide")
    ap.add_argument("--topics", type=int, default=200)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(Path(args.worker[1]).read_text())
        Path(spec["result_out"]).write_text(json.dumps(worker(spec)))
        return 0
    work = Path(args.work)
    from bench_kernel import base_model
    from corpora import prepare_all
    log = []
    env = child_env(args.threads, work / "numba-cache")
    corpora, skipped = prepare_all([args.corpus], work, HERE / "cache", env, log)
    if args.corpus not in corpora:
        print(f"bench: globalstep: corpus {args.corpus} unavailable: {skipped}", file=sys.stderr)
        return 0
    model = base_model(corpora[args.corpus], args.topics, work, env, log, args.threads)
    r = run_worker(Path(__file__), "lazy", {"model": str(model), "train": corpora[args.corpus]["train"],
                                            "steps": args.steps, "tag": "globalstep"}, work, env, log,
                   "dense vs lazy global step")
    r.update(date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), machine=machine(),
             corpus=args.corpus, command=" ".join([Path(sys.executable).name] + sys.argv))
    write_json(Path(args.out) / "globalstep.json", r)
    text = render(r)
    (Path(args.out) / "globalstep.md").write_text(text)
    print(text, end="")
    return 0


def render(r):
    """globalstep.md from the results."""
    n = r["steps"]
    L = [f"# Global step: dense (numpy, then numba) vs lazily scaled, {r['corpus']} K={r['K']}", "",
         f"Measured {r['date']} by `benchmarks/bench_globalstep.py` (`{r['command']}`): lambda {r['V']} x {r['K']} "
         f"({r['lambda_mb']:.0f} MB) of a model fitted on {r['corpus']}, the word sets of its first {n} minibatches "
         f"(S = 500, {r['mean_words_per_batch']:.0f} distinct words each), random statistics. Load average "
         f"{r['machine']['loadavg'][0]:.1f}. LDA's global step has been lazily scaled since 2026-11-25 "
         "(models/lda.py); HDP's is still dense in numba.", "",
         "| per minibatch, ms | dense in numpy (until 2026-11-24) | "
         "dense in numba, parallel (LDA until 2026-11-25; HDP) | "
         "lazily scaled, touched rows only (this benchmark's numpy copy of LDA's scheme) |", "|---|---:|---:|---:|"]
    for (a, x), z, (b, y) in zip(r["dense_seconds"].items(), r["shipped_seconds"].values(),
                                 r["lazy_seconds"].items()):
        L.append(f"| {a} / {b} | {1000 * x / n:.1f} | {1000 * z / n:.1f} | {1000 * y / n:.1f} |")
    L.append("| total | " + " | ".join(f"{1000 * sum(r[k].values()) / n:.1f}"
                                       for k in ("dense_seconds", "shipped_seconds", "lazy_seconds")) + " |")
    L.append("")
    L.append(f"Final lambda of the numba kernels identical to numpy's: {r['shipped_topics_identical_to_numpy']}. "
             f"Largest relative difference between the dense and the lazy final E[beta]: "
             f"{r['max_relative_difference_of_beta']:.1e} (rounding); renormalisations of the scale: "
             f"{r['renormalisations']}.")
    return "\n".join(L) + "\n"

if __name__ == "__main__":
    sys.exit(main())

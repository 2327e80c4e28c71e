"""Online HDP against online LDA on the New York Times bag of words, as in the SVI paper's fig. 11;
and against gensim's HdpModel (time per document, held-out score of its topics).

    .venv-bench/bin/python benchmarks/bench_hdp.py [--passes 3 --threads 2 ...]

What runs (every fit a fresh `topicscale fit ... --json` process through the CLI, after its numba
kernels were compiled into a warm cache by a tiny fit, so compile time is not measured):
  * LDA (svi, mean-field) with K in --lda-topics (alpha = 1/K, eta = 0.01) and the HDP (svi, hdp;
    corpus truncation --hdp-topics, document truncation --doc-truncation, alpha = omega = 1,
    eta = 0.01), the same passes, minibatch size, seed and held-out documents, under each step-size
    schedule of --schedules: `paper` (kappa = 0.9, tau = 1, the paper's sec. 4) and `default`
    (kappa = 0.7, tau = 64, topicscale's defaults);
  * gensim's HdpModel (T = corpus truncation, K = document truncation in its naming) with the same
    truncations, chunksize, passes (max_chunks) and schedule (its rho_t = (tau + t)^-kappa is ours),
    in a worker process with BLAS pinned to --threads; only the training call is timed.
Scores:
  * `own`: topicscale's `eval` (document completion, SVI paper sec. 4) with each model's own
    predictive distribution: LDA's E[theta] from its mean-field step, the HDP's from the two-level
    sticks, times E[beta]; the same split of the same held-out documents for every model;
  * `fold-in`: topicscale.evaluate.evaluate_topics on the exported K x V topic matrix (mean-field
    LDA fold-in with alpha = 1/K, topics fixed): the one score that also applies to gensim's topics.
Writes OUT/hdp.md and OUT/hdp.json.
"""
import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, last_json, machine, run, run_worker,  # noqa: E402
                    topicscale_command, versions, write_json)

SCHEDULES = {"paper": {"kappa": 0.9, "tau": 1.0}, "default": {"kappa": 0.7, "tau": 64.0}}


# ============================================================================ workers
def _bow(corpus):
    import numpy as np
    rows = corpus.rows(np.arange(corpus.n_docs))
    return [list(zip(rows.indices[a:b].tolist(), rows.counts[a:b].tolist()))
            for a, b in zip(rows.indptr[:-1], rows.indptr[1:])]


def worker_gensim(spec):
    """gensim HdpModel on the training documents in topicscale's epoch-0 minibatch order."""
    import resource
    import numpy as np
    from gensim.models import HdpModel
    from topicscale.corpus.shards import Corpus
    corpus = Corpus(spec["train"])
    bow = _bow(corpus)
    order = spec["order"]
    docs = [bow[i] for i in order]
    s = spec["settings"]
    chunks = -(-len(docs) // s["batch_size"])
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    hdp = HdpModel(docs, dict(enumerate(corpus.vocab)), max_chunks=int(round(s["passes"] * chunks)),
                   chunksize=s["batch_size"], kappa=s["kappa"], tau=s["tau"], K=s["doc_truncation"],
                   T=s["topics"], alpha=1, gamma=1, eta=s["eta"], random_state=s["seed"])
    train = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    beta = hdp.get_topics()
    weights, _ = hdp.hdp_to_lda()
    np.save(spec["topics_out"], beta.astype(np.float64))
    np.save(spec["weights_out"], np.asarray(weights, dtype=np.float64) / np.sum(weights))
    return {"train_seconds": train, "cpu_seconds": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "docs": int(hdp.m_num_docs_processed), "updates": int(hdp.m_updatect)}


def worker_foldin(spec):
    """evaluate_topics (alpha = 1/K, topics fixed) on every topic matrix of spec['matrices']."""
    import numba
    import numpy as np
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    numba.set_num_threads(min(spec["threads"], numba.config.NUMBA_NUM_THREADS))
    held = Corpus(spec["heldout"])
    out = {}
    for name, path in spec["matrices"].items():
        beta = np.load(path)
        if not (np.all(np.isfinite(beta)) and np.allclose(beta.sum(axis=1), 1.0, atol=1e-6)):
            raise BenchError(f"{name}: the topic matrix is not row-stochastic")
        t0 = time.perf_counter()
        out[name] = dict(evaluate_topics(beta, held, seed=0), seconds=time.perf_counter() - t0)
    return out


def worker_info(spec):
    return versions()


def worker_main(kind, spec_path):
    spec = json.loads(Path(spec_path).read_text())
    result = {"gensim": worker_gensim, "foldin": worker_foldin, "info": worker_info}[kind](spec)
    Path(spec["result_out"]).write_text(json.dumps(result))
    return 0


# ============================================================================ orchestrator
def carrying(weights, mass):
    w = sorted(weights, reverse=True)
    total, acc = sum(w), 0.0
    for i, x in enumerate(w, 1):
        acc += x
        if acc >= mass * total - 1e-12:
            return i
    return len(w)


def num(x):
    return repr(int(x)) if float(x) == int(x) else repr(float(x))


def orchestrate(args):
    from corpora import prepare_corpus
    work, out_dir = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    log = []
    started = time.perf_counter()
    env = child_env(args.threads, work / "numba-cache-hdp")
    ts = topicscale_command()
    corpus = prepare_corpus("nyt", work, args.cache, env, log)
    train_path, held_path = corpus["train"], corpus["heldout"]
    info = run_worker(__file__, "info", {"tag": "hdp-info"}, work, env, log)

    # warm the numba cache (compile) with tiny fits of both models; not measured
    for model in ("lda", "hdp"):
        run(ts + ["fit", train_path, "--model", model, "-k", "10", "--max-docs", "200", "--batch-size", "100",
                  "--heldout", held_path, "--threads", str(args.threads), "--quiet", "--json", "--force",
                  "-o", work / f"hdp-bench-warmup-{model}"], env, f"warm-up {model}", log)

    common = ["--batch-size", str(args.batch_size), "--passes", num(args.passes), "--eta", num(args.eta),
              "--max-iter", str(args.max_iter), "--tol", num(args.tol), "--seed", str(args.seed),
              "--threads", str(args.threads), "--heldout", held_path, "--quiet", "--json", "--force"]
    runs = []
    for sched in args.schedules:
        step = ["--kappa", num(SCHEDULES[sched]["kappa"]), "--tau", num(SCHEDULES[sched]["tau"])]
        plan = [("lda", K, ["--model", "lda", "-k", str(K)]) for K in args.lda_topics]
        plan.append(("hdp", args.hdp_topics, ["--model", "hdp", "-k", str(args.hdp_topics), "--doc-truncation",
                                              str(args.doc_truncation), "--alpha", "1", "--omega", "1"]))
        for model, K, opts in plan:
            folder = work / f"hdp-bench-{sched}-{model}-{K}"
            if folder.exists():
                shutil.rmtree(folder)
            load = os.getloadavg()[0]
            text, wall = run(ts + ["fit", train_path] + opts + step + common + ["-o", folder], env,
                             f"{model} K={K} ({sched})", log)
            summary = last_json(text, "fit")
            cpu = log[-1]["cpu_seconds"]
            described = last_json(run(ts + ["info", folder, "--json"], env, "info", log)[0], "info")
            topics_npy = work / f"hdp-bench-{sched}-{model}-{K}.npy"
            run(ts + ["export", folder, "-o", topics_npy], env, "export", log)
            row = {"model": model, "K": K, "schedule": sched, "kappa": SCHEDULES[sched]["kappa"],
                   "tau": SCHEDULES[sched]["tau"], "docs": summary["docs"],
                   "train_seconds": summary["train_seconds"], "process_wall_seconds": wall,
                   "process_cpu_seconds": cpu, "loadavg_before": load,
                   "own_per_word_ll": summary["heldout"]["per_word_ll"],
                   "heldout_docs": summary["heldout"]["documents"],
                   "heldout_tokens": summary["heldout"]["heldout_tokens"], "topics_npy": str(topics_npy),
                   "mean_sweeps_last_batch": None}
            if model == "hdp":
                row["effective_topics_95"] = described["effective_topics_95"]
                row["effective_topics_99"] = described["effective_topics_99"]
            lines = (folder / "metrics.jsonl").read_text().splitlines()
            batches = [json.loads(l) for l in lines if '"event": "batch"' in l]
            if batches:
                row["mean_sweeps_first_batch"] = batches[0].get("sweeps")
                row["mean_sweeps_last_batch"] = batches[-1].get("sweeps")
            runs.append(row)

        # gensim HdpModel with the same truncations, minibatches, passes and schedule
        if not args.no_gensim:
            order = json.loads(run([sys.executable, "-c",
                                    "import json; from topicscale.corpus.shards import Corpus; "
                                    "from topicscale.corpus.stream import MinibatchStream; "
                                    f"c = Corpus({train_path!r}); "
                                    f"print(json.dumps([int(x) for x in MinibatchStream(c, {args.batch_size}, "
                                    f"{args.seed}).epoch_order(0)]))"], env, "minibatch order", log)[0])
            topics_npy = work / f"hdp-bench-{sched}-gensim.npy"
            settings = {"topics": args.hdp_topics, "doc_truncation": args.doc_truncation,
                        "batch_size": args.batch_size, "passes": args.passes, "eta": args.eta,
                        "seed": args.seed, **SCHEDULES[sched]}
            load = os.getloadavg()[0]
            g = run_worker(__file__, "gensim", {"tag": f"hdp-gensim-{sched}", "train": train_path,
                                                 "order": order, "settings": settings,
                                                 "topics_out": str(topics_npy),
                                                 "weights_out": str(work / f"hdp-bench-{sched}-gensim-w.npy")},
                           work, env, log, what=f"gensim HdpModel ({sched})")
            import numpy as np
            w = np.load(work / f"hdp-bench-{sched}-gensim-w.npy")
            runs.append({"model": "gensim-hdp", "K": args.hdp_topics, "schedule": sched,
                         "kappa": SCHEDULES[sched]["kappa"], "tau": SCHEDULES[sched]["tau"], "docs": g["docs"],
                         "train_seconds": g["train_seconds"], "train_cpu_seconds": g["cpu_seconds"],
                         "process_wall_seconds": g["process_wall_seconds"],
                         "process_cpu_seconds": g["process_cpu_seconds"], "loadavg_before": load,
                         "own_per_word_ll": None, "topics_npy": str(topics_npy),
                         "effective_topics_95": carrying(w.tolist(), 0.95),
                         "effective_topics_99": carrying(w.tolist(), 0.99)})

    # one fold-in for every topic matrix
    matrices = {f"{r['schedule']}-{r['model']}-{r['K']}": r["topics_npy"] for r in runs}
    scores = run_worker(__file__, "foldin", {"tag": "hdp-foldin", "heldout": held_path, "matrices": matrices,
                                              "threads": args.threads}, work, env, log, what="fold-in scores")
    for r in runs:
        f = scores[f"{r['schedule']}-{r['model']}-{r['K']}"]
        r["foldin_per_word_ll"] = f["per_word_ll"]
        r["ms_per_doc"] = 1000.0 * r["train_seconds"] / r["docs"]

    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "versions": info, "corpus": corpus, "settings": vars(args) | {"schedule_definitions": SCHEDULES},
              "runs": runs, "bench_wall_seconds": time.perf_counter() - started, "log": log}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "hdp.json", result)
    md = render(result)
    (out_dir / "hdp.md").write_text(md)
    print(md)
    return 0


def render(r):
    s, c, m = r["settings"], r["corpus"], r["machine"]
    L = [f"# Online HDP vs online LDA on the NYT bag of words (SVI paper, fig. 11)", "",
         f"Measured {r['date']} by `benchmarks/bench_hdp.py` in {r['bench_wall_seconds'] / 60:.1f} minutes "
         f"on {m['cpu']} ({m['cores_available']} cores available), {s['threads']} threads; "
         f"load average (1 min) at the end {m['loadavg'][0]:.1f} (other work was running: see the "
         f"load column).", "",
         f"Corpus: {c['description']}: {c['train_docs']} training documents ({c['train_tokens']} tokens, "
         f"{c['vocabulary']} words), {c['heldout_docs']} held-out documents (`prepare --heldout 0.1 --seed 0`). "
         f"Every model: {num(s['passes'])} passes, minibatches of {s['batch_size']}, eta = {s['eta']}, seed "
         f"{s['seed']}, E-step cap {s['max_iter']} sweeps, tolerance {s['tol']}. LDA: alpha = 1/K. HDP: "
         f"corpus truncation K = {s['hdp_topics']}, document truncation T = {s['doc_truncation']}, "
         f"alpha = omega = 1.", ""]
    for sched in s["schedules"]:
        rows = [x for x in r["runs"] if x["schedule"] == sched]
        if not rows:
            continue
        k = SCHEDULES[sched]
        L += [f"## Schedule `{sched}`: rho_t = ({num(k['tau'])} + t)^-{k['kappa']}", "",
              "| model | K | own held-out LL | fold-in LL | effective topics (95% / 99%) | train s | ms / doc | "
              "process wall s (CPU s) | load before |",
              "|---|---:|---:|---:|---|---:|---:|---|---:|"]
        for x in rows:
            name = {"lda": "LDA (svi)", "hdp": "HDP (svi, topicscale)", "gensim-hdp": "gensim HdpModel"}[x["model"]]
            own = f"{x['own_per_word_ll']:.4f}" if x["own_per_word_ll"] is not None else "-"
            eff = (f"{x['effective_topics_95']} / {x['effective_topics_99']}" if "effective_topics_95" in x else "-")
            L.append(f"| {name} | {x['K']} | {own} | {x['foldin_per_word_ll']:.4f} | {eff} | "
                     f"{x['train_seconds']:.1f} | {x['ms_per_doc']:.2f} | {x['process_wall_seconds']:.1f} "
                     f"({x['process_cpu_seconds']:.1f}) | {x['loadavg_before']:.1f} |")
        L.append("")
        L.append(summary(rows))
        L.append("")
    L += ["The paper's fig. 11 (New York Times, 1.8M articles, 8,000 words, kappa = 0.9, S = 500, "
          "hours of training): LDA K = 25 / 50 / 100 / 200 / 300: -7.73 / -7.68 / -7.66 / -7.78 / -7.98; "
          "HDP (K = 300, T = 20): -7.38.", ""]
    L += ["* **own held-out LL**: `topicscale eval` (document completion: each held-out document's distinct "
          "words split in halves, the model's own local step on one half, the other half scored under "
          "E[theta] E[beta]; per held-out token). HDP: E[theta_k] = sum_i E[sigma_i(pi_d)] zeta_ik from "
          "the two-level sticks. Higher is better; the paper's fig. 11 metric.",
          "* **fold-in LL**: `evaluate_topics` on the exported topics (an LDA fold-in with alpha = 1/K and "
          "the topics fixed), the same for every tool, so gensim's topics can be scored; for the HDP it "
          "ignores the corpus sticks (alpha = 1/K for every topic), so it is not the HDP's own predictive.",
          "* **effective topics**: how many of the heaviest topics carry 95% / 99% of the corpus weight "
          "E[sigma_k(V)] (gensim: its `hdp_to_lda` weights).",
          "* **train s**: topicscale: the run's `train_seconds` (minibatch loop, held-out evaluation "
          "excluded); gensim: the `HdpModel(...)` training call. **ms / doc**: train s per document "
          "processed (passes x documents). Process wall / CPU: the whole process (start-up, final "
          "held-out evaluation and model write included for topicscale; corpus conversion and "
          "training for gensim). One run each: with other work on the machine (load column) the times "
          "are noisy; compare CPU seconds when the load is high.", ""]
    return "\n".join(L) + "\n"


def summary(rows):
    """One sentence per schedule: what holds of the paper's finding, and the time per document."""
    lda = [x for x in rows if x["model"] == "lda"]
    hdp = next((x for x in rows if x["model"] == "hdp"), None)
    gen = next((x for x in rows if x["model"] == "gensim-hdp"), None)
    out = []
    if hdp and lda:
        best = max(lda, key=lambda x: x["own_per_word_ll"])
        beaten = [x["K"] for x in lda if hdp["own_per_word_ll"] > x["own_per_word_ll"]]
        out.append(f"HDP {hdp['own_per_word_ll']:.4f} vs the best LDA (K = {best['K']}) "
                   f"{best['own_per_word_ll']:.4f}: HDP - best LDA = "
                   f"{hdp['own_per_word_ll'] - best['own_per_word_ll']:+.4f} nats per word; "
                   + (f"the HDP is better than LDA at K = {', '.join(map(str, beaten))} only." if beaten
                      else "the HDP is better than none of the LDA runs."))
    if hdp and gen:
        out.append(f"Time per document, topicscale HDP / gensim HdpModel: {hdp['ms_per_doc']:.2f} / "
                   f"{gen['ms_per_doc']:.2f} ms (ratio {hdp['ms_per_doc'] / gen['ms_per_doc']:.2f}); fold-in LL "
                   f"{hdp['foldin_per_word_ll']:.4f} vs {gen['foldin_per_word_ll']:.4f}.")
    return " ".join(out)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lda-topics", type=lambda t: [int(x) for x in t.split(",")], default=[25, 50, 100, 200])
    ap.add_argument("--hdp-topics", type=int, default=150, help="HDP corpus truncation K")
    ap.add_argument("--doc-truncation", type=int, default=15, help="HDP document truncation T")
    ap.add_argument("--schedules", default="paper,default", help="comma-separated: paper, default")
    ap.add_argument("--passes", type=float, default=3.0)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--eta", type=float, default=0.01)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-gensim", action="store_true")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--worker", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main(*args.worker)
    args.schedules = [x for x in args.schedules.split(",") if x]
    unknown = set(args.schedules) - set(SCHEDULES)
    if unknown:
        print(f"bench: unknown schedule(s) {sorted(unknown)}; choose from {sorted(SCHEDULES)}", file=sys.stderr)
        return 2
    try:
        return orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

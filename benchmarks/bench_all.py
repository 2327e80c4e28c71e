"""Run every benchmark in one go (what `make bench` does) and write the summary of the targets.

    python benchmarks/bench_all.py [--quick] [--skip kernel,peers,scale,startup] [--no-1m]

In order, each a child process writing its own results under benchmarks/results/:
  bench_kernel.py   E-step throughput against a measured roofline, thread scaling, profiles
  bench_globalstep.py  the dense global step against the lazily scaled one LDA uses
  bench_peers.py    time to held-out quality against gensim, scikit-learn, tomotopy, Vowpal Wabbit
  bench_scale.py    peak RSS and throughput on 10k, 100k and 1M synthetic documents
  bench_startup.py  start-up of short commands, cold and warm numba cache
then results/summary.md and results/summary.json (every target, met or not) and the plots
results/kernel.png and results/startup.png (the others draw their own).

--quick runs a small version (NYT only, 2 passes, no 1M documents) to check the machinery in a
few minutes; its results go to benchmarks/results-quick/ so they never replace measured ones.
"""
import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import fmt_percent_runs, machine, write_json  # noqa: E402

STEPS = ("kernel", "globalstep", "peers", "scale", "startup")


def step_commands(args, out):
    py = [sys.executable]
    common = ["--out", str(out)]
    if args.quick:
        return {
            "kernel": py + [str(HERE / "bench_kernel.py"), "--corpora", "nyt", "--topics", "50", "--repeats", "3",
                            "--docs", "1000", "--anatomy-batches", "5", "--profile", "nyt:50"] + common,
            "globalstep": py + [str(HERE / "bench_globalstep.py"), "--corpus", "nyt", "--topics", "50"] + common,
            "peers": py + [str(HERE / "bench_peers.py"), "--cases", "nyt:50:2:1"] + common,
            "scale": py + [str(HERE / "bench_scale.py"), "--sizes", "10000,20000"] + common,
            "startup": py + [str(HERE / "bench_startup.py"), "--repeats", "3", "--fit-repeats", "1"] + common,
        }
    return {
        "kernel": py + [str(HERE / "bench_kernel.py")] + common,
        "globalstep": py + [str(HERE / "bench_globalstep.py")] + common,
        "peers": py + [str(HERE / "bench_peers.py")] + common,
        "scale": py + [str(HERE / "bench_scale.py")] + (["--sizes", "10000,100000"] if args.no_1m else []) + common,
        "startup": py + [str(HERE / "bench_startup.py")] + common,
    }


def load(out, name):
    path = Path(out) / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


VARIANT_FLAGS = {"topicscale-meanfield": "--local meanfield", "topicscale-accelerate": "--accelerate",
                 "topicscale-paper": "--estep-beta exp-elog"}
EXTRA_PEER_RUNS = {"peers-gcide-5pass": " [extra run: 5 passes]"}   # peer runs kept beside the full one


def summarize(out):
    kernel, peers, scale, startup = (load(out, n) for n in ("kernel", "peers", "scale", "startup"))
    rows = []

    def add(target, figure, met, where):
        rows.append({"target": target, "figure": figure, "met": met, "where": where})

    def add_peer_rows(peers, note, where):
        for case in peers["cases"]:
            for variant, v in case["ratios"].items():
                tag = note + ("" if variant == "topicscale" else f" ({VARIANT_FLAGS[variant]}, extra row)")
                for peer, x in v["per_peer"].items():
                    goal = x.get("target")
                    fig = (f"{x['ratio']:.2f}x (interpolated {x['ratio_interpolated']:.2f}x)" if x["ratio"] is not None
                           else f"not reached: peer best {x['peer_best_score']:.4f}, topicscale best {v['best_score']:.4f}")
                    add(f"{case['case']} ({case['passes']} passes): time ratio vs {peer}"
                        + (f" >= {goal:g}x" if goal else " (no target)") + tag,
                        fig, x.get("met") if goal else None, where)
                add(f"{case['case']}: topicscale final score >= best peer's{tag}",
                    f"{v['final_score']:.4f} vs {v['best_peer']} {v['best_peer_score']:.4f}",
                    v.get("final_at_least_best_peer"), where)

    if peers:
        add_peer_rows(peers, "", "peers.md")
    for name, note in EXTRA_PEER_RUNS.items():       # runs kept beside the full one (benchmarks/README.md)
        extra = load(out, f"{name}/peers")
        if extra:
            add_peer_rows(extra, note, f"{name}/peers.md")
    if kernel:
        for key, c in kernel["cases"].items():
            if "efficiency" in c:
                add(f"{key}: E-step updates/s >= 30% of roofline multiply-adds/s (2 threads; single "
                    "precision against the float32 roofline)",
                    f"{100 * c['efficiency']:.1f}% (per repeat {fmt_percent_runs(c.get('efficiency_runs'))}; "
                    f"counting 2 multiply-adds per update: {100 * c['efficiency_madd']:.0f}%; "
                    f"double against float64: {100 * c.get('efficiency_double', float('nan')):.0f}%)",
                    c["efficiency"] >= 0.30, "kernel.md")
            if "efficiency_cvb0" in c:
                # judged where `fit` trains with CVB0 (the anatomy records the base model's local step)
                trained = kernel.get("anatomy", {}).get(key, {}).get("local")
                add(f"{key}: CVB0 document step (the default local step on short documents) updates/s >= 30% "
                    "of roofline multiply-adds/s (2 threads; float64, against the float64 roofline)"
                    + ("" if trained in (None, "cvb0") else f" (no target: {key.split('/')[0]} trains with {trained})"),
                    f"{100 * c['efficiency_cvb0']:.1f}% (per repeat {fmt_percent_runs(c.get('efficiency_cvb0_runs'))})",
                    c["efficiency_cvb0"] >= 0.30 if trained in (None, "cvb0") else None, "kernel.md")
            if "thread_speedup" in c:
                add(f"{key}: E-step 2 threads >= 1.7x 1 thread (median of {kernel['settings']['repeats']})",
                    f"{c['thread_speedup']:.2f}x (roofline loop: {c.get('roofline_thread_speedup', float('nan')):.2f}x)",
                    c["thread_speedup"] >= 1.7, "kernel.md")
    if scale:
        t = scale.get("targets", {})
        if "peak_rss_1M_mb" in t:
            add("scale: peak RSS at 1M documents < 1.5 GB", f"{t['peak_rss_1M_mb']:.0f} MB", t["rss_target_met"], "scale.md")
        if "throughput_1M_over_100k" in t:
            add("scale: tokens/s at 1M within 20% of 100k (judged as no more than 20% slower: the smaller "
                "run carries the same fixed costs over fewer tokens)",
                f"1M / 100k = {t['throughput_1M_over_100k']:.2f}",
                t["throughput_target_met"], "scale.md")
    if startup:
        for k, t in startup["targets"].items():
            add(f"start-up: `{k}` < 1 s (median)", f"{t['median']:.3f} s", t["met"], "startup.md")
    return rows


def plot_kernel(kernel, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = ["estep", "estep_double", "sweep_nodigamma", "sweep_fastdigamma", "sweep_lanes8", "sweep_fastmath",
             "sweep_f32", "roofline_fused", "roofline_axpy", "roofline_axpy32"]
    labels = ["E-step\nsingle", "E-step\ndouble", "no\ndigamma", "fast\ndigamma", "+ 8-lane\ndot",
              "+ fastmath\ndot", "+ float32", "bare\ndot+axpy", "roofline\nfloat64", "roofline\nfloat32"]
    cases = list(kernel["cases"])
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(1, len(cases))
    thr = max(kernel["cases"][cases[0]]["raw"]["threads"]) if cases else 2
    for i, key in enumerate(cases):
        c = kernel["cases"][key]
        vals = [c["per"].get(f"{n}@{thr}", {}).get("per_second_per_core", 0) / 1e9 for n in names]
        ax.bar([j + i * width for j in range(len(names))], vals, width, label=key)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))])
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(f"G updates (or multiply-adds) / s / core, {thr} threads")
    ax.set_title("E-step kernel vs its roofline (same minibatches, same sweeps)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_startup(startup, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from statistics import median
    keys = list(startup["times"])
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(keys) + 1.2))
    ax.barh(range(len(keys)), [median(startup["times"][k]) for k in keys])
    for i, k in enumerate(keys):
        xs = startup["times"][k]
        ax.plot([min(xs), max(xs)], [i, i], color="black", lw=1)
    ax.axvline(1.0, color="red", ls="--", lw=1, label="1 s")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(keys, fontsize=8)
    ax.set_xlabel("process wall time, s (median, line: min-max)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(summary):
    L = ["# Benchmark summary: issue 5 targets", ""]
    L.append(f"Written {summary['date']} by `benchmarks/bench_all.py` (`{summary['command']}`); machine "
             f"{summary['machine']['cpu']}, {summary['machine']['cores']} cores, load average at start "
             f"{summary['machine']['loadavg'][0]:.1f}, at end {summary['loadavg_at_end'][0]:.1f}. The machine was "
             "shared with other work while measuring; every table gives per-repeat figures and the load.")
    L.append("")
    L.append("| target | measured | met | details |")
    L.append("|---|---|---|---|")
    for r in summary["targets"]:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "**no**")
        L.append(f"| {r['target']} | {r['figure']} | {met} | [{r['where']}]({r['where']}) |")
    L.append("")
    L.append("| step | exit | wall min |")
    L.append("|---|---:|---:|")
    for name, s in summary["steps"].items():
        L.append(f"| {name} | {s['exit']} | {s['seconds'] / 60:.1f} |")
    L.append("")
    L.append("Plots: " + ", ".join(f"[{p}]({p})" for p in summary["plots"]))
    L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few minutes' check of the machinery (results-quick/)")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: " + ",".join(STEPS))
    ap.add_argument("--no-1m", action="store_true", help="scale: 10k and 100k documents only")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else HERE / ("results-quick" if args.quick else "results")
    out.mkdir(parents=True, exist_ok=True)
    skip = {s for s in args.skip.split(",") if s}
    start = machine()
    steps = {}
    for name, cmd in step_commands(args, out).items():
        if name in skip:
            continue
        print(f"bench_all: {name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        code = subprocess.call(cmd)
        steps[name] = {"exit": code, "seconds": time.perf_counter() - t0, "command": " ".join(cmd)}
        if code:
            print(f"bench_all: {name} exited {code}; going on with the next step", file=sys.stderr)
    plots = []
    kernel, startup = load(out, "kernel"), load(out, "startup")
    try:
        if kernel and kernel.get("cases"):
            plot_kernel(kernel, out / "kernel.png")
        if startup:
            plot_startup(startup, out / "startup.png")
    except ImportError:
        print("bench_all: matplotlib missing: no kernel / startup plots", file=sys.stderr)
    plots = sorted(p.name for p in out.glob("*.png"))
    summary = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": start,
               "loadavg_at_end": os.getloadavg(), "steps": steps, "targets": summarize(out), "plots": plots}
    write_json(out / "summary.json", summary)
    (out / "summary.md").write_text(render(summary))
    print(render(summary))
    return 1 if any(s["exit"] for s in steps.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Start-up: how long short `topicscale` commands take as whole processes.

    python benchmarks/bench_startup.py [--repeats 7]

Measured, each as a fresh process, interleaved (every repeat runs every command once):
  topicscale --help; topicscale info CORPUS; topicscale info MODEL;
  topicscale topics MODEL for saved K=200 models (NYT, V = 3k, and GCIDE, V = 92k, when present;
  fitted here with --max-docs if missing);
  topicscale fit CORPUS -k 50 --max-docs 500: cold (NUMBA_CACHE_DIR a new empty folder: the
  kernels are compiled) and warm (the same folder again: loaded from the cache).
Then where the time of `topics` goes: `python -X importtime` (imports) and cProfile of the command
in process.

Target: `topicscale topics` on a saved K=200 model under 1 s (median).
Writes OUT/startup.md and OUT/startup.json.
"""
import argparse
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, fmt_spread, machine, med, run, spread,  # noqa: E402
                    topicscale_command, write_json)


def ensure_model(corpus_name, K, work, env, log, threads):
    """A saved K-topic model of the corpus: reuse the peers' or kernel benchmark's, else fit a small one."""
    for cand in [work / "models" / f"{corpus_name}-k{K}-5pass", work / "models" / f"{corpus_name}-k{K}-1pass",
                 work / "models" / f"{corpus_name}-k{K}-startup"]:
        if (cand / "model.npz").is_file():
            return cand
    corpus = work / corpus_name
    if not (corpus / "manifest.json").is_file():
        return None
    out = work / "models" / f"{corpus_name}-k{K}-startup"
    run(topicscale_command() + ["fit", str(corpus), "-k", str(K), "--max-docs", "5000", "--threads", str(threads),
                                "--quiet", "--json", "--force", "-o", str(out)], env, f"fit a K={K} model of {corpus_name}", log)
    return out


def topics_profile(model):
    """cProfile of `topicscale topics MODEL` run in this process (imports already done)."""
    from topicscale.cli import main
    import contextlib
    buf = io.StringIO()
    prof = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        prof.enable()
        try:
            main(["topics", str(model)])
        except SystemExit:
            pass
        prof.disable()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("cumulative").print_stats(18)
    rows = []
    for (fn, line, name), (cc, nc, tt, ct, callers) in st.stats.items():
        rows.append({"function": f"{Path(fn).name}:{line}({name})", "tottime": tt, "cumtime": ct})
    rows.sort(key=lambda r: -r["tottime"])
    return {"text": buf.getvalue(), "top_self": rows[:12], "total": st.total_tt}


def import_times(env, log):
    """`python -X importtime -c 'import topicscale.cli'`: the slowest imports (cumulative us)."""
    cmd = [sys.executable, "-X", "importtime", "-c", "import topicscale.cli"]
    try:
        import subprocess
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    except OSError as exc:
        return {"error": str(exc)}
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = line.split("|")
            try:
                rows.append({"self_us": int(parts[0].split(":")[1]), "cumulative_us": int(parts[1]),
                             "module": parts[2].rstrip()})
            except ValueError:
                continue
    top = [r for r in rows if r["module"].strip().split(".")[0] in ("topicscale", "numpy", "click", "numba", "tqdm", "scipy")
           and len(r["module"]) - len(r["module"].lstrip()) <= 4]
    top.sort(key=lambda r: -r["cumulative_us"])
    return {"top": top[:12], "numba_imported": any(r["module"].strip() == "numba" for r in rows)}


def orchestrate(args):
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(args.threads, work / "numba-cache")
    from corpora import prepare_all
    corpora, _ = prepare_all(["nyt"], work, args.cache, env, log, allow_apt=False)
    ts = topicscale_command()
    models = {}
    for name in ("nyt", "gcide"):
        m = ensure_model(name, 200, work, env, log, args.threads)
        if m is not None:
            models[name] = m
    nyt = corpora["nyt"]["train"]
    nyt50 = ensure_model("nyt", 50, work, env, log, args.threads)
    commands = {"topicscale --help": ts + ["--help"], "topicscale info CORPUS (nyt)": ts + ["info", nyt],
                "topicscale info MODEL (nyt K=50)": ts + ["info", str(nyt50)]}
    for name, m in models.items():
        commands[f"topicscale topics MODEL ({name} K=200)"] = ts + ["topics", str(m)]
    times = {k: [] for k in commands}
    for rep in range(args.repeats):
        for what, cmd in commands.items():
            _, wall = run(cmd, env, f"{what} ({rep + 1}/{args.repeats})", log)
            times[what].append(wall)
    # cold vs warm numba cache on a tiny fit
    fit = ["fit", nyt, "-k", "50", "--max-docs", "500", "--threads", str(args.threads), "--quiet", "--json", "--force"]
    cold, warm, cold_train, warm_train, cold_load, warm_load = [], [], [], [], [], []
    for rep in range(args.fit_repeats):
        with tempfile.TemporaryDirectory(prefix="bench-numba-") as cache:
            e = child_env(args.threads, cache)
            o, w = run(ts + fit + ["-o", str(work / "models" / "startup-tiny")], e, f"tiny fit, empty numba cache ({rep + 1})", log)
            cold.append(w)
            summary = json.loads(o.strip().splitlines()[-1])
            cold_train.append(summary["train_seconds"])
            cold_load.append(summary["kernel_load_seconds"])
            o, w = run(ts + fit + ["-o", str(work / "models" / "startup-tiny")], e, f"tiny fit, warm numba cache ({rep + 1})", log)
            warm.append(w)
            summary = json.loads(o.strip().splitlines()[-1])
            warm_train.append(summary["train_seconds"])
            warm_load.append(summary["kernel_load_seconds"])
    times["topicscale fit --max-docs 500 (cold: empty numba cache)"] = cold
    times["topicscale fit --max-docs 500 (warm: cached kernels)"] = warm
    profiles = {}
    for name, m in models.items():
        profiles[name] = topics_profile(m)
    model_sizes = {name: (Path(m) / "model.npz").stat().st_size for name, m in models.items()}
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "repeats": args.repeats, "times": times, "fit_train_seconds": {"cold": cold_train, "warm": warm_train},
              "fit_kernel_load_seconds": {"cold": cold_load, "warm": warm_load},
              "models": {k: str(v) for k, v in models.items()}, "model_file_bytes": model_sizes,
              "topics_profile": profiles, "imports": import_times(env, log), "log": log}
    topics_keys = [k for k in times if k.startswith("topicscale topics")]
    result["targets"] = {k: {"median": med(times[k]), "met": med(times[k]) < 1.0} for k in topics_keys}
    result["machine"]["loadavg_at_end"] = os.getloadavg()
    write_json(out / "startup.json", result)
    md = render(result)
    (out / "startup.md").write_text(md)
    print(md)
    return result


def render(r):
    L = ["# Start-up of `topicscale` commands", ""]
    L.append(f"Measured {r['date']} by `benchmarks/bench_startup.py` (`{r['command']}`); each figure is the "
             f"median [min-max] of whole-process wall times, every repeat running every command once in turn; "
             f"load average at start {r['machine']['loadavg'][0]:.1f}, at end {r['machine']['loadavg_at_end'][0]:.1f}.")
    L.append("")
    L.append("| command | wall s | spread (max-min)/median |")
    L.append("|---|---:|---:|")
    for k, v in r["times"].items():
        sp = spread(v)
        L.append(f"| `{k}` | {fmt_spread(v, 3)} | {100 * sp['rel']:.0f}% |")
    L.append("")
    ft = r["fit_train_seconds"]
    kl = r["fit_kernel_load_seconds"]
    L.append(f"Tiny fit's own figures: kernel_load_seconds (numba compiles or loads the kernels, before "
             f"the timed loop) cold {fmt_spread(kl['cold'], 2)}, warm {fmt_spread(kl['warm'], 2)}; "
             f"train_seconds cold {fmt_spread(ft['cold'], 2)}, warm {fmt_spread(ft['warm'], 2)}.")
    L.append("")
    for k, t in r["targets"].items():
        L.append(f"- `{k}`: median {t['median']:.3f} s, target < 1 s: **{'met' if t['met'] else 'not met'}**.")
    L.append("")
    for name, size in r["model_file_bytes"].items():
        L.append(f"- {name} K=200 model file: {size / 2 ** 20:.1f} MB.")
    L.append("")
    imp = r["imports"]
    if "top" in imp:
        L.append(f"Imports of `topicscale.cli` (python -X importtime; numba imported: {imp['numba_imported']}):")
        L.append("")
        L.append("| module | cumulative ms |")
        L.append("|---|---:|")
        for x in imp["top"][:8]:
            L.append(f"| `{x['module'].strip()}` | {x['cumulative_us'] / 1000:.0f} |")
        L.append("")
    for name, p in r["topics_profile"].items():
        L.append(f"cProfile of `topicscale topics` on the {name} K=200 model, in process after imports "
                 f"(total {p['total']:.3f} s); functions by own time:")
        L.append("")
        L.append("| function | own s | cumulative s |")
        L.append("|---|---:|---:|")
        for x in p["top_self"][:8]:
            L.append(f"| `{x['function']}` | {x['tottime']:.3f} | {x['cumtime']:.3f} |")
        L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    for e in r["log"]:
        L.append(f"{e['command']}    # {e['what']}: {e['wall_seconds']:.2f} s")
    L.append("```")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--fit-repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    try:
        orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Throughput when another process wants a core: how OpenMP's threads wait.

    python benchmarks/bench_contention.py [--repeats 3]

topicscale's kernels run on numba's "omp" threading layer (GNU OpenMP), whose threads, waiting at
the end of a parallel loop, spin on their core for a while (GOMP_SPINCOUNT 300,000 turns) before
they sleep. When another task is runnable as topicscale starts, it sets OMP_WAIT_POLICY=PASSIVE
(sleep at once), unless the user set a policy (topicscale/openmp.py). Measured, each as a
fresh process, interleaved, with 2 threads (and 1 for reference):
  fit SOTU paragraphs -k 50 --passes 5 (CVB0: many small minibatches), fit NYT -k 50 --passes 1
  (mean-field), eval NYT-heldout
on a quiet machine and beside one busy process (a Python loop holding a core), under topicscale's
choice, OMP_WAIT_POLICY=PASSIVE always, and GNU OpenMP's default always (the variable removed
after topicscale set it). Writes OUT/contention.md and OUT/contention.json.
"""
import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import child_env, fmt_spread, machine, med, run, topicscale_command, write_json  # noqa: E402

# policy: (environment, run the command through SPIN: GNU OpenMP's default whatever the load)
POLICIES = {"topicscale's choice": ({}, False), "passive always": ({"OMP_WAIT_POLICY": "PASSIVE"}, False),
            "GNU default always": ({}, True)}
SPIN = ("import os, sys, topicscale; os.environ.pop('OMP_WAIT_POLICY', None); "
        "from topicscale.cli import main; main(sys.argv[1:])")


def cases(work, model):
    return {"fit SOTU -k 50 --passes 5": ["fit", work / "sotu", "-k", "50", "--passes", "5", "--seed", "0",
                                          "--force", "--quiet", "--json", "-o", model],
            "fit NYT -k 50 --passes 1": ["fit", work / "nyt", "-k", "50", "--passes", "1", "--seed", "0",
                                         "--force", "--quiet", "--json", "-o", model],
            "eval NYT-heldout": ["eval", model, work / "nyt-heldout", "--json"]}


def seconds(stdout, wall, name):
    """fit: its train_seconds; eval: the process's wall time."""
    if name.startswith("fit"):
        return json.loads(stdout.strip().splitlines()[-1])["train_seconds"]
    return wall


def measure(work, repeats, log):
    times = {}
    with tempfile.TemporaryDirectory(prefix="bench-contention-") as tmp:
        model = Path(tmp) / "model"
        for _ in range(repeats):
            for busy in (False, True):
                hog = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None)
                try:
                    for threads, policies in ((2, list(POLICIES)), (1, ["topicscale's choice"])):
                        for policy in policies:
                            extra, spin = POLICIES[policy]
                            env = child_env(threads, extra=extra)
                            command = [sys.executable, "-c", SPIN] if spin else topicscale_command()
                            for name, args in cases(work, model).items():
                                cmd = command + [str(a) for a in args] + ["--threads", str(threads)]
                                out, wall = run(cmd, env, f"{name}, {threads} threads, {policy}, busy={busy}", log)
                                key = f"{name}|{threads}|{policy}|{'busy' if busy else 'quiet'}"
                                times.setdefault(key, []).append(seconds(out, wall, name))
                finally:
                    if hog is not None:
                        hog.kill()
                        hog.wait()
    return times


def table(times):
    lines = ["| command | threads | wait policy | quiet s | beside a busy process s | busy / quiet |",
             "|---|---|---|---|---|---|"]
    for key in times:
        name, threads, policy, state = key.split("|")
        if state != "quiet":
            continue
        quiet, busy = times[key], times[f"{name}|{threads}|{policy}|busy"]
        lines.append(f"| {name} | {threads} | {policy} | {fmt_spread(quiet)} | {fmt_spread(busy)} | "
                     f"{med(busy) / med(quiet):.1f} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    log = []
    times = measure(args.work, args.repeats, log)
    facts = machine()
    doc = ["# Throughput beside a busy process: OpenMP's wait policy", "",
           f"Written {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} by "
           f"`benchmarks/bench_contention.py --repeats {args.repeats}`; {facts.get('cpu', '')}, "
           f"{facts.get('cores', '')} cores. Each cell is the median [min-max] of {args.repeats} runs, "
           "interleaved; fit: train_seconds, eval: the process's wall time. The busy process is one "
           "Python loop holding a core.", ""] + table(times)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "contention.md").write_text("\n".join(doc) + "\n", encoding="utf-8")
    write_json(args.out / "contention.json", {"times": times, "machine": facts, "log": log})
    print("\n".join(doc))


if __name__ == "__main__":
    main()

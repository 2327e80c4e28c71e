"""Seed spread of readable-topics measures (issue 23): topicscale's default `fit` and tomotopy after
--gibbs iterations, each run with seeds 0 .. S-1, so that a difference between the two is read
against what a seed alone moves.

    python benchmarks/bench_seeds.py [--corpora sotu,nyt,foldoc,debian,gcide,wordnet,fortunes,manpages,pydocs]
                                     [--topics 50] [--seeds 3] [--gibbs 1000] [--out benchmarks/results]

Runs and scores are bench_quality.py's (its `fit` with --seed s; tomotopy through peers.py with
seed s, one snapshot at the end; every topic matrix scored by bench_quality's score worker: held-out
by the common and the Gibbs fold-in, NPMI, diversity, overlapping pairs). Writes seeds.md and
seeds.json: per corpus each seed's row, and per measure the mean and standard deviation of each
tool and of the paired difference (topicscale minus tomotopy, seed by seed).
"""
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_quality import case_arguments, fit, fresh_case, run_cases, score_runs  # noqa: E402
from common import BenchError, run_worker  # noqa: E402

MEASURES = (("per_word_ll", "held-out LL", "{:.4f}"), ("gibbs_ll", "held-out LL, Gibbs fold-in", "{:.4f}"),
            ("npmi", "NPMI", "{:.3f}"), ("diversity", "diversity", "{:.2f}"),
            ("overlaps", "overlapping pairs", "{:.1f}"), ("train_seconds", "train s", "{:.2f}"))


def run_case(args, corpus, K, env, work, log):
    name, cwork = fresh_case(work, "seeds", corpus, K, env, log)
    rows = []
    for seed in range(args.seeds):
        rows.append(dict(fit(corpus, K, [], cwork / f"default-{seed}", env, log, f"{name} default, seed {seed}",
                             seed=seed), tool="topicscale", seed=seed))
        spec = {"tool": "tomotopy", "train": corpus["train"], "heldout": corpus["heldout"],
                "tag": f"tomotopy-{K}-{seed}", "settings": {"topics": K, "eta": 0.01, "seed": seed, "threads": 2},
                "snap_dir": str(cwork / f"tomotopy-{seed}"), "gibbs_every": args.gibbs,
                "gibbs_iterations": args.gibbs}
        last = run_worker(HERE / "peers.py", "train", spec, cwork, env, log,
                          f"{name} tomotopy {args.gibbs} iterations, seed {seed}", timeout=args.timeout)["snapshots"][-1]
        rows.append({"tool": "tomotopy", "seed": seed, "train_seconds": last["train_seconds"], "path": last["path"]})
    scores = score_runs(rows, corpus, f"score-{K}", cwork, env, log, f"{name} score {len(rows)} topic matrices",
                        args.timeout)
    for r, s in zip(rows, scores):
        r.update({k: v for k, v in s.items() if k not in ("path", "worst")})
        r.pop("path")
    return {"case": name, "corpus": corpus, "K": K, "rows": rows, "spread": spread(rows)}


def spread(rows):
    """Per measure: mean and standard deviation over the seeds of each tool and of the paired
    difference topicscale - tomotopy."""
    ours = sorted((r for r in rows if r["tool"] == "topicscale"), key=lambda r: r["seed"])
    theirs = sorted((r for r in rows if r["tool"] == "tomotopy"), key=lambda r: r["seed"])
    sd = lambda xs: statistics.stdev(xs) if len(xs) > 1 else 0.0
    out = {}
    for key, _, _ in MEASURES:
        a, b = [float(r[key]) for r in ours], [float(r[key]) for r in theirs]
        d = [x - y for x, y in zip(a, b)]
        out[key] = {"topicscale": [statistics.mean(a), sd(a)], "tomotopy": [statistics.mean(b), sd(b)],
                    "difference": [statistics.mean(d), sd(d)]}
    return out


def render(result):
    lines = ["# Seed spread: topicscale's default against tomotopy", "",
             f"Written {result['date']} by `benchmarks/bench_seeds.py` (`{result['command']}`); machine "
             f"{result['machine']['cpu']}, 2 threads per run. Each tool run with seeds 0 to "
             f"{max(r['seed'] for c in result['cases'] for r in c['rows'])}; measures as in quality.md. "
             "Difference: topicscale minus tomotopy, seed by seed (mean ± standard deviation).", "",
             "| corpus | measure | topicscale | tomotopy | difference |", "|---|---|---|---|---|"]
    for case in result["cases"]:
        for key, label, fmt in MEASURES:
            cells = [f"{fmt.format(m)} ± {fmt.format(s)}" for m, s in
                     (case["spread"][key][t] for t in ("topicscale", "tomotopy", "difference"))]
            lines.append(f"| {case['case']} | {label} | " + " | ".join(cells) + " |")
    for case in result["cases"]:
        lines += ["", f"## {case['case']}", "", "| tool | seed | " + " | ".join(m[1] for m in MEASURES) + " |",
                  "|---|---|" + "---|" * len(MEASURES)]
        for r in case["rows"]:
            lines.append(f"| {r['tool']} | {r['seed']} | " +
                         " | ".join(fmt.format(r[key]) for key, _, fmt in MEASURES) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = case_arguments(__doc__, "sotu,nyt,foldoc,debian,gcide,wordnet,fortunes,manpages,pydocs", "50")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0 .. SEEDS-1 for each tool")
    ap.add_argument("--gibbs", type=int, default=1000, help="tomotopy iterations")
    try:
        run_cases(ap.parse_args(sys.argv[1:] if argv is None else argv), run_case, render, "seeds")
    except BenchError as exc:
        print(f"bench_seeds: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

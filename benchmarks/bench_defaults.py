"""Are the defaults right? (issue 23) The default `fit` against each variant at equal training time,
on corpora of different shapes.

    python benchmarks/bench_defaults.py [--corpora nyt,sotu,gcide,foldoc,debian,pydocs] [--topics 50]
                                        [--passes 1,5,20] [--out benchmarks/results]

Per corpus and K: the default `fit -k K --passes P` for each P gives a training time T_P (its
`train_seconds`); each variant then trains with `--time-limit T_P` (it stops at the first minibatch
boundary past T_P). Variants: the LDA global and local steps a user can pick without tuning:
svi + meanfield, svi + cvb0, scvb0, ssmf-a + gibbs. Every topic matrix is scored as bench_quality.py
scores it (held-out by the common fold-in, NPMI, diversity). The default passes at T_P when its
held-out is within 0.02 nats of the best run's at T_P and its diversity at most 0.02 below that run's.
Each run is its own process with 2 threads; a discarded run first fills the numba cache.
Writes defaults.md and defaults.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_quality import case_arguments, fit, fresh_case, run_cases, score_runs  # noqa: E402
from common import BenchError  # noqa: E402

VARIANTS = {"svi + meanfield": ["--local", "meanfield"], "svi + cvb0": ["--local", "cvb0"],
            "scvb0": ["--algorithm", "scvb0"], "ssmf-a + gibbs": ["--algorithm", "ssmf-a"]}
TOLERANCE = 0.02          # nats a word
DIVERSITY_TOLERANCE = 0.02


def run_case(args, corpus, K, env, work, log):
    name, cwork = fresh_case(work, "defaults", corpus, K, env, log)
    for extra in VARIANTS.values():
        fit(corpus, K, ["--passes", "0.1", *extra], cwork / "warm", env, log, f"{name} warm-up (discarded)")
    budgets = []
    for p in (int(x) for x in args.passes.split(",")):
        rows = [dict(fit(corpus, K, ["--passes", str(p)], cwork / f"default-p{p}", env, log,
                         f"{name} default, {p} passes"), setting="default")]
        limit = rows[0]["train_seconds"]
        for label, extra in VARIANTS.items():
            folder = cwork / f"{label.replace(' + ', '-')}-p{p}"
            rows.append(dict(fit(corpus, K, ["--time-limit", f"{limit:.4f}", *extra], folder, env, log,
                                 f"{name} {label}, {limit:.2f} s"), setting=label))
        scores = score_runs(rows, corpus, f"score-{K}-{p}", cwork, env, log, f"{name} score {len(rows)} runs",
                            args.timeout)
        for r, s in zip(rows, scores):
            r.update({k: s[k] for k in ("per_word_ll", "npmi", "diversity", "overlaps")})
            r.pop("path")
        best = max(rows, key=lambda r: r["per_word_ll"])
        default = rows[0]
        budgets.append({"passes": p, "seconds": limit, "rows": rows, "best": best["setting"],
                        "within": default["per_word_ll"] >= best["per_word_ll"] - TOLERANCE,
                        "diversity_kept": default["diversity"] >= best["diversity"] - DIVERSITY_TOLERANCE})
    return {"case": name, "corpus": corpus, "K": K, "budgets": budgets}


def render(result):
    lines = ["# Defaults against every variant at equal training time", "",
             f"Written {result['date']} by `benchmarks/bench_defaults.py` (`{result['command']}`); machine "
             f"{result['machine'].get('cpu', '')}, 2 threads per run, load average at the start "
             f"{result['machine'].get('loadavg', ['?'])[0]}. Each budget is the default's training time for "
             f"that many passes; the variants train with `--time-limit` at it. The default passes when its "
             f"held-out is within {TOLERANCE} nats of the best run's and its diversity at most "
             f"{DIVERSITY_TOLERANCE} below that run's. "
             "Held-out: the common fold-in; NPMI and diversity as in quality.md.", ""]
    for case in result["cases"]:
        c = case["corpus"]
        lines += [f"## {case['case']}", "",
                  f"{c['description']}: {c['train_docs']:,} documents, {c['mean_tokens']:.0f} tokens and "
                  f"{c['mean_distinct_words']:.0f} distinct words a document, vocabulary {c['vocabulary']:,}.", "",
                  "| budget | setting | local | passes done | held-out LL | NPMI | diversity | overlapping pairs |",
                  "|---|---|---|---|---|---|---|---|"]
        for b in case["budgets"]:
            for r in b["rows"]:
                lines.append(f"| {b['passes']} passes, {b['seconds']:.2f} s | {r['setting']} | {r['local']} | "
                             f"{r['passes']:.1f} | {r['per_word_ll']:.4f} | {r['npmi']:.3f} | {r['diversity']:.2f} | "
                             f"{r['overlaps']} |")
        lines.append("")
        for b in case["budgets"]:
            verdict = "passes" if b["within"] and b["diversity_kept"] else "**fails**"
            lines.append(f"- {b['passes']} passes ({b['seconds']:.2f} s): best held-out {b['best']}; the default "
                         f"{verdict} (held-out within {TOLERANCE}: {b['within']}, diversity kept: "
                         f"{b['diversity_kept']})")
        lines.append("")
    return "\n".join(lines) + "\n"


def orchestrate(args):
    return run_cases(args, run_case, render, "defaults")


def main(argv=None):
    ap = case_arguments(__doc__, "nyt,sotu,gcide,foldoc,debian,pydocs", "50")
    ap.add_argument("--passes", default="1,5,20", help="the default's pass counts whose times are the budgets")
    try:
        orchestrate(ap.parse_args(argv))
    except BenchError as exc:
        print(f"bench_defaults: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the topics start (LDA): `fit --start near-uniform` beside `fit --start assignment` (one
pass from a random assignment of the tokens, then the auto sweeps) and the default (`--start
auto`: the assignment from 200 topics on; below, near-uniform, started over from the assignment
when a tenth of the topics or more end repeating another), per corpus and K, scored as
bench_quality.py scores its rows.

    python benchmarks/bench_start.py [--corpora fortunes,foldoc,sotu] [--topics 50,200,600,1000]
                                     [--out benchmarks/results]

Every run: `topicscale fit CORPUS -k K --seed 0 --json` in a process of its own with 2 threads,
time = `train_seconds`. The table adds tokens a topic over words (N / (K V)): the near-uniform
start gives each topic V pseudo-counts, so the smaller that share, the more the topics start
alike. Writes start.md and start.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_quality import case_arguments, fit, fresh_case, run_cases, score_runs  # noqa: E402
from common import BenchError  # noqa: E402

SETTINGS = {"default": [], "--start near-uniform": ["--start", "near-uniform"],
            "--start assignment": ["--start", "assignment"]}


def run_case(args, corpus, K, env, work, log):
    name, cwork = fresh_case(work, "start", corpus, K, env, log)
    rows = [dict(fit(corpus, K, extra, cwork / f"s{i}", env, log, f"{name} {setting}"),
                 tool="topicscale", setting=setting)
            for i, (setting, extra) in enumerate(SETTINGS.items())]
    scores = score_runs(rows, corpus, f"score-{K}", cwork, env, log, f"{name} score", args.timeout)
    for r, s in zip(rows, scores):
        r.update({k: v for k, v in s.items() if k not in ("path", "worst")})
        r.pop("path")
    return {"case": name, "corpus": corpus, "K": K, "rows": rows,
            "share": corpus["train_tokens"] / (K * corpus["vocabulary"])}


def render(result):
    lines = ["# Where the topics start: near-uniform, assignment, and the default that picks between them", "",
             f"Written {result['date']} by `benchmarks/bench_start.py` (`{result['command']}`); machine "
             f"{result['machine'].get('cpu', '')}, 2 threads per run. Scores as in quality.md: held-out "
             "by the common and the Gibbs fold-in, NPMI of the top 10 (training corpus as boolean "
             "documents), diversity of the top 25, pairs of topics sharing more than half of their top 10. "
             "The default trains from the assignment start from 200 topics on; below, from the near-uniform "
             "start, starting over from the assignment when a tenth of the topics or more end repeating "
             "another (its time and passes count both runs).",
             "",
             "| corpus | K | N / (K V) | start | passes | sweeps kept | train s | held-out LL | Gibbs fold-in "
             "| NPMI | diversity | overlapping pairs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in result["cases"]:
        for r in case["rows"]:
            polish = r.get("polish") or {}
            kept = f"{polish['kept']} of {polish['sweeps']}" if "kept" in polish else polish.get("sweeps", "-")
            setting = r["setting"]
            if r.get("started_over"):
                first = r["started_over"]
                setting += f" (started over: {first['repeated_topics']} of {first['listed_topics']} repeating)"
            lines.append(f"| {case['corpus']['name']} | {case['K']} | {case['share']:.3f} | {setting} "
                         f"| {r['passes']:.1f} | {kept} | {r['train_seconds']:.2f} | {r['per_word_ll']:.4f} "
                         f"| {r['gibbs_ll']:.4f} | {r['npmi']:.3f} | {r['diversity']:.2f} | {r['overlaps']} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = case_arguments(__doc__, "fortunes,foldoc,sotu", "50,200,600,1000")
    try:
        run_cases(ap.parse_args(argv), run_case, render, "start")
    except BenchError as exc:
        print(f"bench_start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

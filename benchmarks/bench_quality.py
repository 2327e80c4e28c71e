"""Readable topics (issue 23): coherence, diversity and held-out likelihood against training time,
topicscale's default `fit` beside tomotopy's collapsed Gibbs sampler, per corpus and K.

    python benchmarks/bench_quality.py [--corpora sotu,nyt,foldoc,debian,gcide,wordnet,fortunes,manpages,pydocs] [--topics 50]
                                       [--gibbs 1000] [--polish-sweeps 0,20,50] [--out benchmarks/results]

Each corpus is prepared as for bench_peers.py (corpora.py). Runs, each in its own process with 2
threads:
  topicscale default   `topicscale fit CORPUS -k K --seed 0 --json` with no other option (it trains
                       until a pass gains under 0.002 nats a word, then `--polish auto`); time =
                       its `train_seconds`
  topicscale P passes  the same with --passes 1, 5, 20: the curve
  scvb0 P passes       --algorithm scvb0 --passes 5, 20
  --polish N           the default's passes followed by N batch CVB0 sweeps, N = 0 (the passes
                       alone), 20, 50 (--polish-sweeps)
  --start assignment   topics started from a random assignment of the tokens, --passes 1, then
                       N = 20, 50 polish sweeps
                       and, without --passes, one pass then the auto sweeps
  tomotopy             LDAModel(alpha = 1/K, eta = 0.01, optim_interval 0), train(100) calls on 2
                       workers up to --gibbs iterations, topics taken after each (peers.py)
Every topic matrix is scored the same way (`--worker score`):
  held-out   per-word log likelihood by the common fold-in (evaluate_topics), and by the Gibbs
             fold-in (`eval --fold-in gibbs`: the posterior predictive that the common
             mean-field fold-in approximates, which ranks blurred topics higher on short documents)
  NPMI       mean over all K topics of the mean NPMI of the pairs of its top 10 words, the training
             corpus as boolean documents (P = share of documents holding the words), a pair that
             never shares a document scoring -1
  diversity  distinct words among all topics' top 25, over 25 K
  overlaps   pairs of topics sharing more than half of their top 10 words
and the top words of the five least coherent topics are listed. Writes quality.md, quality.json
and quality_<corpus>_k<K>.png (NPMI and held-out score against training time).
"""
import argparse
import datetime as dt
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import BenchError, child_env, last_json, machine, run, run_worker, topicscale_command, write_json  # noqa: E402

TOP_N, DIVERSITY_N, WORST = 10, 25, 5
CURVE_PASSES = (1, 5, 20)
SCVB0_PASSES = (5, 20)
POLISH_SWEEPS = (0, 20, 50)
START_SWEEPS = (20, 50)


def start_setting(n):
    return f"--start assignment, 1 pass, {n} sweeps"


# ------------------------------------------------------------------------------ scoring
def npmi_per_topic(top, corpus):
    """NPMI of each topic's top words (lists of word ids) in `corpus` as boolean documents; a pair
    that never shares a document scores -1."""
    import numpy as np
    from topicscale.coherence import count_documents
    n, df, pair_df = count_documents(corpus, top)
    out = []
    for words in top:
        values = []
        for i, a in enumerate(words):
            for b in words[i + 1:]:
                joint = pair_df[(min(a, b), max(a, b))] / n
                if joint == 0:
                    values.append(-1.0)
                else:
                    values.append(np.log(joint / (df[a] / n * df[b] / n)) / -np.log(joint))
        out.append(float(np.mean(values)))
    return out


def overlapping_pairs(top):
    """Pairs of topics (lists of top word ids) sharing more than half of their words."""
    sets = [set(t) for t in top]
    return sum(len(a & b) * 2 > len(a) for i, a in enumerate(sets) for b in sets[i + 1:])


def score(spec):
    """Score every topic matrix listed: a K x V .npy file or a model folder."""
    import numba
    import numpy as np
    from topicscale.coherence import largest_per_column
    from topicscale.corpus.shards import Corpus
    from topicscale.evaluate import evaluate_topics
    from topicscale.models import load_model
    numba.set_num_threads(spec["threads"])
    train, held = Corpus(spec["train"]), Corpus(spec["heldout"])
    vocab = train.vocab
    out = []
    for path in spec["paths"]:
        if Path(path).is_dir():
            beta = load_model(path).expected_beta().T
        else:
            beta = np.load(path).astype(np.float64)
        beta = beta / beta.sum(axis=1, keepdims=True)
        ranked = largest_per_column(np.ascontiguousarray(beta.T), DIVERSITY_N)       # n x K
        order = np.argsort(-np.take_along_axis(beta.T, ranked, axis=0), axis=0, kind="stable")
        ranked = np.take_along_axis(ranked, order, axis=0)
        top = [list(map(int, ranked[:TOP_N, k])) for k in range(beta.shape[0])]
        npmi = npmi_per_topic(top, train)
        worst = np.argsort(npmi, kind="stable")[:WORST]
        out.append({"path": path, "per_word_ll": evaluate_topics(beta, held)["per_word_ll"],
                    "gibbs_ll": evaluate_topics(beta, held, fold_in="gibbs")["per_word_ll"],
                    "npmi": float(np.mean(npmi)), "diversity": float(np.unique(ranked).size / ranked.size),
                    "overlaps": overlapping_pairs(top),
                    "worst": [{"topic": int(k), "npmi": npmi[k], "words": [vocab[w] for w in top[k]]}
                              for k in worst]})
    return out


# ------------------------------------------------------------------------------ runs
def fit(corpus, K, extra, folder, env, log, what, seed=0):
    cmd = topicscale_command() + ["fit", corpus["train"], "-k", str(K), "--seed", str(seed), "--threads", "2",
                                  "--json", "-q", "--force", "-o", str(folder), *extra]
    stdout, _ = run(cmd, env, what, log)
    summary = last_json(stdout, what)
    return {"train_seconds": summary["train_seconds"], "docs": summary["docs"], "local": summary["local"],
            "passes": summary["docs"] / corpus["train_docs"], "stopped": summary.get("stopped"),
            "polish": summary.get("polish"), "started_over": summary.get("started_over"), "path": str(folder)}


def score_runs(rows, corpus, tag, cwork, env, log, what, timeout):
    """The score worker's measures (score) of each row's topic matrix (its "path"), in a process
    of its own, in row order."""
    return run_worker(HERE / "bench_quality.py", "score",
                      {"train": corpus["train"], "heldout": corpus["heldout"], "threads": 2,
                       "paths": [r["path"] for r in rows], "tag": tag}, cwork, env, log, what, timeout=timeout)


def fresh_case(work, kind, corpus, K, env, log):
    """(name, folder) of a case: WORK/KIND/<corpus>-k<K> emptied, and a discarded fit run in it
    first, so that the numba cache holds every kernel before anything is timed."""
    name = f"{corpus['name']}/K={K}"
    cwork = work / kind / f"{corpus['name']}-k{K}"
    if cwork.exists():
        shutil.rmtree(cwork)
    cwork.mkdir(parents=True)
    fit(corpus, K, ["--passes", "0.1"], cwork / "warm", env, log, f"{name} warm-up (discarded)")
    return name, cwork


def run_case(args, corpus, K, env, work, log):
    name, cwork = fresh_case(work, "quality", corpus, K, env, log)
    rows = []
    rows.append(dict(fit(corpus, K, [], cwork / "default", env, log, f"{name} topicscale default"),
                     tool="topicscale", setting="default"))
    for p in CURVE_PASSES:
        rows.append(dict(fit(corpus, K, ["--passes", str(p)], cwork / f"p{p}", env, log, f"{name} {p} passes"),
                         tool="topicscale", setting=f"{p} passes"))
    for p in SCVB0_PASSES:
        rows.append(dict(fit(corpus, K, ["--algorithm", "scvb0", "--passes", str(p)], cwork / f"scvb0-p{p}", env,
                             log, f"{name} scvb0 {p} passes"), tool="topicscale", setting=f"--algorithm scvb0, {p} passes"))
    for n in args.polish_sweeps:
        rows.append(dict(fit(corpus, K, ["--polish", str(n)], cwork / f"polish{n}", env, log,
                             f"{name} --polish {n}"), tool="topicscale", setting=f"--polish {n}"))
    for n in START_SWEEPS:
        rows.append(dict(fit(corpus, K, ["--start", "assignment", "--passes", "1", "--polish", str(n)],
                             cwork / f"start{n}", env, log, f"{name} {start_setting(n)}"),
                         tool="topicscale", setting=start_setting(n)))
    rows.append(dict(fit(corpus, K, ["--start", "assignment"], cwork / "start-auto", env, log,
                         f"{name} --start assignment"), tool="topicscale", setting="--start assignment"))
    spec = {"tool": "tomotopy", "train": corpus["train"], "heldout": corpus["heldout"], "tag": f"tomotopy-{K}",
            "settings": {"topics": K, "eta": 0.01, "seed": 0, "threads": 2}, "snap_dir": str(cwork / "tomotopy"),
            "gibbs_every": 100, "gibbs_iterations": args.gibbs}
    tomo = run_worker(HERE / "peers.py", "train", spec, cwork, env, log, f"{name} tomotopy {args.gibbs} iterations",
                      timeout=args.timeout)
    for item in tomo["snapshots"]:
        rows.append({"tool": "tomotopy", "setting": f"{item['iterations']} iterations",
                     "train_seconds": item["train_seconds"], "path": item["path"]})
    scores = score_runs(rows, corpus, f"score-{K}", cwork, env, log, f"{name} score {len(rows)} topic matrices",
                        args.timeout)
    for r, s in zip(rows, scores):
        r.update({k: v for k, v in s.items() if k != "path"})
        r.pop("path")
    return {"case": name, "corpus": corpus, "K": K, "rows": rows,
            "targets": {s: targets(rows, s) for s in targeted(args.polish_sweeps)}}


def targeted(polish_sweeps):
    """The settings whose targets are reported."""
    return ("default", *(f"--polish {n}" for n in polish_sweeps), *map(start_setting, START_SWEEPS),
            "--start assignment")


def targets(rows, setting="default"):
    """The issue's targets for one topicscale setting against tomotopy's last snapshot."""
    default = next(r for r in rows if r["setting"] == setting)
    tomo = [r for r in rows if r["tool"] == "tomotopy"]
    last = tomo[-1]
    peers_best = max(r["per_word_ll"] for r in tomo)
    return {"npmi_at_least_tomotopy": default["npmi"] >= last["npmi"],
            "diversity_at_least_0.7": default["diversity"] >= 0.7,
            "time_at_most_tenth_of_tomotopy": default["train_seconds"] <= last["train_seconds"] / 10,
            "heldout_at_least_tomotopy_best": default["per_word_ll"] >= peers_best,
            "gibbs_heldout_at_least_tomotopy_best": default["gibbs_ll"] >= max(r["gibbs_ll"] for r in tomo),
            "tomotopy": last["setting"]}


# ------------------------------------------------------------------------------ output
def plot(case, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for key, ax, label in (("npmi", axes[0], "NPMI (top 10)"), ("per_word_ll", axes[1], "held-out per-word LL")):
        for tool, marker in (("topicscale", "o"), ("tomotopy", "s")):
            pts = [r for r in case["rows"] if r["tool"] == tool and r["setting"] != "default"
                   and not r["setting"].startswith(("--algorithm scvb0", "--polish", "--start"))]
            ax.plot([r["train_seconds"] for r in pts], [r[key] for r in pts], marker=marker, label=tool)
        d = next(r for r in case["rows"] if r["setting"] == "default")
        ax.plot([d["train_seconds"]], [d[key]], "*", markersize=14, label="topicscale default")
        pol = [r for r in case["rows"] if r["setting"].startswith("--polish")]
        ax.plot([r["train_seconds"] for r in pol], [r[key] for r in pol], "D",
                label=", ".join(r["setting"] for r in pol))
        start = [r for r in case["rows"] if r["setting"].startswith("--start")]
        ax.plot([r["train_seconds"] for r in start], [r[key] for r in start], "^",
                label="--start assignment, 1 pass, " + ", ".join(map(str, START_SWEEPS)) + " sweeps")
        ax.set_xscale("log")
        ax.set_xlabel("training seconds")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(case["case"])
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


def render(result):
    lines = ["# Readable topics: coherence, diversity and held-out likelihood against time", "",
             f"Written {result['date']} by `benchmarks/bench_quality.py` (`{result['command']}`); machine "
             f"{result['machine'].get('cpu', '')}, 2 threads per run, load average at the start "
             f"{result['machine'].get('loadavg', ['?'])[0]}. NPMI: top 10 words, training corpus as boolean "
             "documents, a pair never sharing a document -1, mean over all K topics. Diversity: distinct "
             "share of all topics' top 25. Overlapping pairs: topics sharing more than half of their top 10. "
             "Held-out: the common fold-in (mean-field, alpha = 1/K) and the Gibbs fold-in (`eval --fold-in "
             "gibbs`, the posterior predictive the common one approximates).", ""]
    for case in result["cases"]:
        lines += [f"## {case['case']}", "",
                  "| tool | setting | local | passes | train s | held-out LL | held-out LL, Gibbs fold-in | NPMI "
                  "| diversity | overlapping pairs |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in case["rows"]:
            passes = f"{r['passes']:.0f}" if "passes" in r else "-"
            setting = r["setting"]
            if (r.get("polish") or {}).get("scores"):
                setting += f" (polish auto: kept {r['polish']['kept']} of {r['polish']['sweeps']} sweeps)"
            if r.get("started_over"):
                setting += (f" (started over from the assignment: {r['started_over']['repeated_topics']} "
                            f"of {r['started_over']['listed_topics']} topics repeating)")
            lines.append(f"| {r['tool']} | {setting} | {r.get('local', '-')} | {passes} | {r['train_seconds']:.2f} "
                         f"| {r['per_word_ll']:.4f} | {r['gibbs_ll']:.4f} | {r['npmi']:.3f} | {r['diversity']:.2f} "
                         f"| {r['overlaps']} |")
        met = lambda ok: "met" if ok else "**not met**"
        lines.append("")
        for setting, t in case["targets"].items():
            lines.append(f"- {setting} against tomotopy {t['tomotopy']}: NPMI at least tomotopy's "
                         f"{met(t['npmi_at_least_tomotopy'])}; diversity at least 0.7 "
                         f"{met(t['diversity_at_least_0.7'])}; at most a tenth of its time "
                         f"{met(t['time_at_most_tenth_of_tomotopy'])}; held-out at least tomotopy's best "
                         f"{met(t['heldout_at_least_tomotopy_best'])} (by the Gibbs fold-in "
                         f"{met(t['gibbs_heldout_at_least_tomotopy_best'])}).")
        lines += ["", f"![{case['case']}]({case['plot']})", ""]
        for setting in ("--polish 0", "default"):
            row = next(r for r in case["rows"] if r["setting"] == setting)
            lines += [f"Least coherent topics of `fit` {setting}:", ""]
            lines += [f"- {w['npmi']:+.3f}: {' '.join(w['words'])}" for w in row["worst"]]
            lines.append("")
        tomo = [r for r in case["rows"] if r["tool"] == "tomotopy"][-1]
        lines += [f"and of tomotopy after {tomo['setting']}:", ""]
        lines += [f"- {w['npmi']:+.3f}: {' '.join(w['words'])}" for w in tomo["worst"]]
        lines.append("")
    return "\n".join(lines) + "\n"


def case_arguments(doc, corpora, topics):
    """The command line run_cases reads: --corpora, --topics, --timeout, --work, --cache, --out,
    --no-apt."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--corpora", default=corpora)
    ap.add_argument("--topics", default=topics)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--cache", type=Path, default=HERE / "cache")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--no-apt", action="store_true")
    return ap


def run_cases(args, run_case, render, stem, finish_case=None):
    """Prepare args.corpora, run run_case(args, corpus, K, env, work, log) for each corpus and K
    in args.topics (finish_case(case, out) after each), and write OUT/STEM.json and STEM.md
    (render(result)) after every case."""
    from corpora import prepare_all
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(2, work / "numba-cache")
    corpora, skipped = prepare_all([c for c in args.corpora.split(",") if c], work, args.cache, env, log,
                                   allow_apt=not args.no_apt)
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "skipped_corpora": skipped, "cases": [], "log": log}
    for name in corpora:
        for K in (int(k) for k in args.topics.split(",")):
            t0 = time.perf_counter()
            case = run_case(args, corpora[name], K, env, work, log)
            case["case_seconds"] = time.perf_counter() - t0
            if finish_case:
                finish_case(case, out)
            result["cases"].append(case)
            write_json(out / f"{stem}.json", result)
            (out / f"{stem}.md").write_text(render(result))
    print(render(result))
    return result


def orchestrate(args):
    def add_plot(case, out):
        case["plot"] = plot(case, out / f"quality_{case['corpus']['name']}_k{case['K']}.png")
    return run_cases(args, run_case, render, "quality", add_plot)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        spec = json.loads(Path(argv[2]).read_text())
        Path(spec["result_out"]).write_text(json.dumps(score(spec), default=float))
        return 0
    ap = case_arguments(__doc__, "sotu,nyt,foldoc,debian,gcide,wordnet,fortunes,manpages,pydocs", "50")
    ap.add_argument("--gibbs", type=int, default=1000, help="tomotopy iterations (snapshots every 100)")
    ap.add_argument("--polish-sweeps", default=",".join(map(str, POLISH_SWEEPS)),
                    type=lambda text: tuple(int(n) for n in text.split(",")),
                    help="the --polish N rows")
    try:
        orchestrate(ap.parse_args(argv))
    except BenchError as exc:
        print(f"bench_quality: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

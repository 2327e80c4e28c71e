"""The one driver loop: stream -> local step -> global step -> progress -> held-out evaluation
-> checkpoint. Algorithms plug in through `step(batch) -> metrics`; the loop does not change.
Where the local steps run is the executor's business: this process (inference/chunks.InProcess)
or dask workers (distributed.py); the global step always runs here.
"""
import time
from dataclasses import asdict, dataclass, field

from tqdm import tqdm

from .convergence import PATIENCE, stopped_converging, training_sample
from .corpus.stream import MinibatchStream, StreamPosition
from .errors import TopicscaleError
from .inference.chunks import CHUNK_DOCS, InProcess


@dataclass
class RunLimits:
    batch_size: int = 500
    passes: float = 1.0
    max_docs: int = 0            # 0: no limit beyond passes
    time_limit: float = 0.0      # seconds of training, 0: none
    eval_every: int = 0          # minibatches between held-out evaluations, 0: only at the end
    checkpoint_every: int = 0    # minibatches between checkpoints, 0: none by count
    checkpoint_seconds: float = 0.0  # seconds between checkpoints, 0: none by time
    min_gain: float = 0.0        # stop when a pass gains less (convergence.py), 0: no such stop
    patience: int = PATIENCE     # ... `patience` passes in a row
    chunk_docs: int = CHUNK_DOCS  # documents per chunk of a minibatch's local step (inference/chunks.py)


@dataclass
class RunState:
    """Where a run is: everything besides the model that a resumed run needs."""
    epoch: int = 0               # stream position of the next minibatch
    batch: int = 0
    docs: int = 0
    batches: int = 0
    tokens: float = 0.0
    train_seconds: float = 0.0
    wall_seconds: float = 0.0    # as train_seconds, the wall time (a resumed run: with its earlier
                                 # processes', up to their last checkpoint)
    threads_used: int = 0
    last_eval: dict = field(default=None)
    pass_scores: list = field(default_factory=list)     # score after each pass (limits.min_gain)
    stopped: str = ""            # why training ended: passes, max_docs, time_limit, converged
                                 # (a run a signal stopped has "" here, "signal" in fit's summary)
    merged: dict = field(default=None)   # the merges after the passes (a run resumed in the polish
                                         # has them in its model and does not merge again)

    def as_dict(self):
        return asdict(self)


STICK_DOCS = 10_000       # training documents whose tables refit an HDP's sticks after its merges
                          # and polish (HDPSVI.refit_sticks), twenty minibatches of the default size


class NonFiniteError(TopicscaleError):
    pass


def planned_docs(n_docs, limits):
    """Documents the run will train on, or None when only --time-limit bounds it."""
    if limits.passes == float("inf"):
        return limits.max_docs or None
    total = int(round(limits.passes * n_docs))
    return min(total, limits.max_docs) if limits.max_docs else total


def train(algorithm, corpus, limits, seed, evaluate=None, on_record=None, progress=True,
          state=None, checkpoint=None, stop_requested=None, score_pass=None, executor=None, polish=None,
          merge=None):
    """Run `algorithm` over minibatches of `corpus` until passes, max_docs or time_limit, or
    (limits.min_gain) until a pass improves score_pass(model) -> float by less than min_gain
    (convergence.PassScorer, whose warm_up(model) loads its kernels before the clock starts).

    score_pass runs after every pass of a run that plans more than one and counts as training
    time (it decides whether to train another; the assignment start's one pass has none to
    decide). evaluate(model) -> dict runs every `eval_every` minibatches and at the end;
    on_record(dict) gets one record per minibatch and per evaluation; checkpoint(state) is called
    every `checkpoint_every` minibatches or `checkpoint_seconds`; stop_requested() -> bool is polled
    at each minibatch boundary (signals). executor: where minibatches are read and their local
    steps run (default: this process, in chunks of limits.chunk_docs documents; a
    distributed.Executor also warms its workers' kernels before the clock starts). merge: a
    merge.Merge run once the passes are done, and again after sweeps that were kept (counted as
    training; a signal ends it early, keeping the merges made). polish: a polish.Polish run after
    the merges, within what is left of time_limit, counted as training (`--polish auto` scores
    with score_pass); interrupted by a signal, it is redone whole on --resume (the merges before it
    are kept in the state, not redone). The sweeps sharpen
    what the merges leave (merged after them, a topic that absorbed its repeats stays blurred),
    and the second merges join what the sweeps made repeat (a topic split in two). After merges or
    kept sweeps, an HDP's sticks are refit to its topics on up to STICK_DOCS training documents
    (HDPSVI.refit_sticks, counted as training).
    Returns (summary dict, finished: bool).
    """
    state = state or RunState()
    stream = MinibatchStream(corpus, limits.batch_size, seed)
    total = planned_docs(corpus.n_docs, limits)
    record = on_record or (lambda r: None)
    stop_requested = stop_requested or (lambda: False)
    model = algorithm.model
    executor = executor or InProcess(corpus, limits.chunk_docs)
    # a run that trains until the model stops improving has no end to show: its cap is no estimate
    bar = tqdm(total=None if limits.min_gain else total, initial=state.docs, unit="doc",
               disable=not progress, dynamic_ncols=True, leave=False)
    last_checkpoint = time.monotonic()
    wall0 = time.perf_counter() - state.wall_seconds

    def run_eval():
        result = evaluate(model)
        record({"event": "eval", "docs": state.docs, "batches": state.batches, "step": model.step,
                "train_seconds": state.train_seconds, **result})
        bar.set_postfix(heldout_ll=f"{result['per_word_ll']:.4f}")
        state.last_eval = result

    # numba loads its cached kernels (or compiles them) on their first call in a process: done
    # here, when the algorithm offers it, and reported apart from the training time
    kernel_load_seconds = None
    scores_passes = bool(limits.min_gain) and limits.passes > 1
    warm_batch = getattr(executor, "warm_batch", None)       # a distributed run's workers
    if hasattr(algorithm, "warm_up") or limits.min_gain or warm_batch or polish:
        t_load = time.perf_counter()
        if warm_batch and hasattr(algorithm, "warm_up"):
            algorithm.warm_up(warm_batch())
        elif warm_batch:
            from .inference.local_steps.base import estep_statistics
            estep_statistics(algorithm.local, warm_batch(), model)
        elif hasattr(algorithm, "warm_up"):
            algorithm.warm_up()
        if scores_passes or getattr(polish, "auto", False) or merge:
            score_pass.warm_up(model, passes=scores_passes or bool(merge),
                               sweeps=getattr(polish, "auto", False))
        if polish:
            polish.warm_up(model)
        kernel_load_seconds = time.perf_counter() - t_load
    finished = False
    batches = executor.minibatches(stream, StreamPosition(state.epoch, state.batch))
    try:
        while True:
            if state.stopped == "converged":
                finished = True
                break
            if total is not None and state.docs >= total:
                finished, state.stopped = True, "max_docs" if limits.max_docs == total else "passes"
                break
            if limits.time_limit and state.train_seconds >= limits.time_limit:
                finished, state.stopped = True, "time_limit"
                break
            if stop_requested():
                break
            t_batch = time.perf_counter()          # reading the minibatch counts as training time
            position, batch = next(batches)
            metrics = algorithm.step(batch)
            dt = time.perf_counter() - t_batch
            if not model.is_finite():
                raise NonFiniteError(f"the topics became non-finite at step {model.step} "
                                     "(NaN or inf); the last good checkpoint is kept")
            state.epoch, state.batch = position.epoch, position.batch + 1
            state.docs += batch.n_docs
            state.batches += 1
            state.tokens += batch.n_tokens
            state.train_seconds += dt
            state.threads_used = max(state.threads_used, metrics.get("threads_used", 0))
            record({"event": "batch", "epoch": position.epoch, "batch": position.batch,
                    "step": model.step, "docs": state.docs, "seconds": dt,
                    "docs_per_s": batch.n_docs / dt if dt else None, **metrics})
            bar.update(batch.n_docs)
            if scores_passes and state.docs >= (len(state.pass_scores) + 1) * corpus.n_docs:
                t_score = time.perf_counter()
                state.pass_scores.append(score_pass(model))
                state.train_seconds += time.perf_counter() - t_score
                record({"event": "pass_score", "pass": len(state.pass_scores), "docs": state.docs,
                        "score": state.pass_scores[-1], "train_seconds": state.train_seconds})
                if stopped_converging(state.pass_scores, limits.min_gain, limits.patience):
                    state.stopped = "converged"
            if evaluate and limits.eval_every and state.batches % limits.eval_every == 0:
                run_eval()
            if checkpoint and (
                    (limits.checkpoint_every and state.batches % limits.checkpoint_every == 0)
                    or (limits.checkpoint_seconds
                        and time.monotonic() - last_checkpoint >= limits.checkpoint_seconds)):
                state.wall_seconds = time.perf_counter() - wall0
                checkpoint(state)
                last_checkpoint = time.monotonic()
        seconds_left = lambda: limits.time_limit - state.train_seconds if limits.time_limit else float("inf")

        def merge_repeats():
            left = seconds_left()
            result = merge(model, left, stop_requested) if left > 0 else {"merged": 0, "seconds": 0.0}
            state.train_seconds += result["seconds"]
            if result["merged"]:
                score_pass.forget()
            return result

        if finished and merge and state.merged is None:
            state.merged = merge_repeats()
        merged = state.merged if finished and merge else None
        polished = None
        if finished and polish:
            left = seconds_left()
            polished = (polish(model, stop_requested, left, progress, record,
                               score_pass and score_pass.sweeps_score) if left > 0
                        else {"sweeps": 0, "seconds": 0.0})
            if polished is None:
                finished = False
            else:
                state.train_seconds += polished["seconds"]
                if score_pass is not None:
                    score_pass.forget()
        swept = bool(polished) and polished.get("kept", polished["sweeps"])    # sweeps' topics kept
        merged_again = merge_repeats() if finished and merge and swept else None
        merges = (merged or {}).get("merged") or (merged_again or {}).get("merged")
        sticks = None
        if finished and (merges or swept) and hasattr(algorithm, "refit_sticks"):
            t_sticks = time.perf_counter()
            sticks = algorithm.refit_sticks(training_sample(corpus, seed, STICK_DOCS))
            sticks["seconds"] = time.perf_counter() - t_sticks
            state.train_seconds += sticks["seconds"]
        if finished and evaluate and (polished or merges or state.last_eval is None or limits.eval_every == 0
                                      or state.batches % limits.eval_every):
            run_eval()
    finally:
        bar.close()
    s = state
    s.wall_seconds = time.perf_counter() - wall0
    summary = {"docs": s.docs, "batches": s.batches, "tokens": int(s.tokens), "train_seconds": s.train_seconds,
               "kernel_load_seconds": kernel_load_seconds, "wall_seconds": s.wall_seconds,
               "docs_per_s": s.docs / s.train_seconds if s.train_seconds else None,
               "tokens_per_s": s.tokens / s.train_seconds if s.train_seconds else None,
               "threads_used": s.threads_used, "heldout": s.last_eval, "stopped": s.stopped or None}
    if s.pass_scores:
        summary["pass_scores"] = list(s.pass_scores)
    if polished:
        summary["polish"] = polished
    if merged:
        summary["merge"] = merged
    if merged_again:
        summary["merge_after_polish"] = merged_again
    if sticks:
        summary["sticks_refit"] = sticks
    return summary, finished

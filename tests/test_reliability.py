"""Checkpoints, resume after SIGKILL / SIGINT / SIGTERM, locks, corrupt models, full disks."""
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from test_crash_resume import lock_holder
from clirun import run, run_stopped
from topicscale.cli import cli
from topicscale.models import load_model

ROOT = Path(__file__).resolve().parent.parent
FIT = ["--topics", "10", "--batch-size", "10", "--passes", "3", "--seed", "5", "--checkpoint-every", "1"]



def batch_records(model_dir):
    lines = (model_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(l) for l in lines if json.loads(l)["event"] == "batch"]


@pytest.fixture(scope="module")
def reference(planted, tmp_path_factory):
    """An uninterrupted run to compare interrupted ones with."""
    _, corpus, heldout = planted
    out = tmp_path_factory.mktemp("ref") / "model"
    run("fit", corpus.path, *FIT, "--heldout", heldout.path, "--eval-every", "100", "-o", out)
    return out


def start_fit(corpus, heldout, out):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "topicscale", "fit", str(corpus.path), *FIT,
                             "--heldout", str(heldout.path), "--eval-every", "100", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_batches(out, n, proc, timeout=60):
    log = out / ".run.jsonl"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and log.read_text().count('"event": "batch"') >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("fit made no progress")


def resume(out):
    r = run("fit", "--resume", out)
    assert f"resuming {out} at epoch" in r.output
    return r


def assert_same_as_reference(out, reference):
    assert (out / "model.npz").read_bytes() == (reference / "model.npz").read_bytes()
    steps = [r["step"] for r in batch_records(out)]
    assert steps == [r["step"] for r in batch_records(reference)]       # no minibatch run twice
    assert steps == list(range(1, len(steps) + 1))
    assert not (out / "checkpoint.npz").exists() and lock_is_free(out)


def lock_is_free(out):
    """The lock file is there (it is never removed) and no process holds its flock."""
    return lock_holder(out) is None


def test_sigkill_then_resume_gives_the_same_model_byte_for_byte(planted, reference, tmp_path):
    _, corpus, heldout = planted
    out = tmp_path / "model"
    proc = start_fit(corpus, heldout, out)
    wait_for_batches(out, 150, proc)
    proc.kill()
    proc.wait()
    ckpt_step = json.loads(load_checkpoint_meta(out))["step"]
    assert 0 < ckpt_step < 900                          # killed mid-run, after some checkpoints
    # the killed process's lock died with it: the run resumes where the checkpoint was
    assert (out / ".lock").exists()
    r = resume(out)
    assert f"step {ckpt_step}," in r.output
    assert_same_as_reference(out, reference)


def load_checkpoint_meta(out):
    with np.load(out / "checkpoint.npz") as z:
        return z["meta"].tobytes().decode()


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_writes_a_partial_model_that_resumes(planted, reference, tmp_path, signum, status):
    _, corpus, heldout = planted
    out = tmp_path / "model"
    proc = start_fit(corpus, heldout, out)
    wait_for_batches(out, 100, proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert f"--resume {out}" in err
    partial = load_model(out)
    assert partial.settings["partial"] is True and 0 < partial.step < 900
    assert lock_is_free(out)
    resume(out)
    assert "partial" not in load_model(out).settings
    assert_same_as_reference(out, reference)


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_sigterm_unwinds_as_ctrl_c_does_and_leaves_no_temporary_file(tmp_path, source):
    """SIGTERM (cron's `timeout`) to a prepare writing its corpus, or spooling standard input that
    is still open: exit status 143, one line, and neither the hidden output folder nor the copy of
    standard input is left."""
    import random
    rng = random.Random(0)
    words = ["".join(rng.choices("abcdefghij", k=5)) for _ in range(2000)]
    (tmp_path / "big.jsonl").write_text("".join(json.dumps({"id": i, "text": " ".join(rng.choices(words, k=30))})
                                                + "\n" for i in range(40000)))
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path / "tmp"))
    given = "-" if source == "stdin" else str(tmp_path / "big.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "topicscale", "prepare", given, "--format", "jsonl", "-q",
                             "-o", str(tmp_path / "out")], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    temporary = lambda: [*tmp_path.glob(".out.*.tmp"), *(tmp_path / "tmp").iterdir()]
    if source == "stdin":
        proc.stdin.write((tmp_path / "big.jsonl").read_bytes()[:100000])     # and stays open
        proc.stdin.flush()
    deadline = time.time() + 60
    while not temporary():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.decode() == "topicscale: terminated\n"
    assert temporary() == [] and not (tmp_path / "out").exists()


def test_a_second_fit_into_a_locked_folder_is_refused(planted, tmp_path):
    _, corpus, _ = planted
    out = tmp_path / "model"
    out.mkdir()
    holder = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o644)    # a flock, as a live fit holds
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        os.write(holder, json.dumps({"pid": 4242, "host": socket.gethostname()}).encode())
        r = run("fit", corpus.path, "-k", "2", "--max-docs", "10", "-o", out, ok=False)
        assert r.exit_code == 2
        assert f"{out} is being written by another fit (pid 4242 on {socket.gethostname()})" in r.output
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
        (out / "checkpoint.npz").write_bytes(b"")      # the live fit's: said before its checkpoint
        r = run("info", out, ok=False)
        assert f"{out} holds an unfinished run and no model yet: `topicscale fit --resume {out}`" in r.output
        r = run("fit", corpus.path, "-k", "2", "--max-docs", "10", "-o", out, ok=False)
        assert "is being written by another fit" in r.output and "--resume" not in r.output
        (out / "checkpoint.npz").unlink()
    finally:
        os.close(holder)
    run("fit", corpus.path, "-k", "2", "--max-docs", "10", "-o", out)         # released: it runs
    assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()


def test_unfinished_run_is_not_overwritten_without_force(planted, tmp_path):
    _, corpus, heldout = planted
    out = tmp_path / "model"
    proc = start_fit(corpus, heldout, out)
    wait_for_batches(out, 20, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    r = run("fit", corpus.path, "-k", "2", "-o", out, ok=False)
    assert r.exit_code == 2 and "unfinished run" in r.output and "--resume" in r.output


def test_model_from_a_newer_version_or_corrupted_gives_one_line(planted, reference, tmp_path):
    m = load_model(reference)
    from topicscale.models import store
    meta = {"model": "lda", "eta": m.eta, "step": 1, "docs_seen": 1, "settings": {}}
    store.save(tmp_path / "new", meta, {"lambda": m.lam, "alpha": m.alpha}, m.vocab)
    z = (tmp_path / "new" / "model.npz").read_bytes()
    (tmp_path / "new" / "model.npz").write_bytes(z.replace(b'"version": 1', b'"version": 9'))
    r = run("topics", tmp_path / "new", ok=False)
    assert r.exit_code == 2 and "newer" in r.output and len(r.output.strip().splitlines()) == 1
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "model.npz").write_bytes((reference / "model.npz").read_bytes()[:5000])
    r = run("info", tmp_path / "cut", ok=False)
    assert r.exit_code == 2 and "truncated or corrupted" in r.output
    flipped = bytearray((reference / "model.npz").read_bytes())
    flipped[len(flipped) // 2] ^= 0xFF
    (tmp_path / "flip").mkdir()
    (tmp_path / "flip" / "model.npz").write_bytes(bytes(flipped))
    r = run("info", tmp_path / "flip", ok=False)
    assert r.exit_code == 2 and "corrupted" in r.output


def test_disk_full_keeps_the_previous_model(planted, reference, tmp_path, monkeypatch):
    import shutil
    from topicscale import atomic
    _, corpus, _ = planted
    out = tmp_path / "model"
    shutil.copytree(reference, out)
    before = (out / "model.npz").read_bytes()
    real_fdopen = os.fdopen

    class FullFile:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    monkeypatch.setattr(atomic.os, "fdopen", lambda fd, mode: FullFile(real_fdopen(fd, mode)))
    r = run("fit", corpus.path, "-k", "10", "--max-docs", "50", "--force", "-o", out, ok=False)
    assert r.exit_code == 2 and "No space left on device" in r.output
    assert (out / "model.npz").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert lock_is_free(out)


def test_non_finite_state_stops_with_a_clear_error(planted, tmp_path, monkeypatch):
    from topicscale.inference.global_steps.svi import SVI
    _, corpus, _ = planted
    real = SVI.update

    def poisoned(self, stats):          # the third update produces a NaN in lambda
        if self.model.step == 2:
            stats.word_topic[0, 0] = np.nan
        real(self, stats)

    monkeypatch.setattr(SVI, "update", poisoned)
    out = tmp_path / "m"
    r = run("fit", corpus.path, "-k", "4", "--batch-size", "50", "--checkpoint-every", "1", "-o", out, ok=False)
    assert r.exit_code == 2 and "non-finite" in r.output
    assert f"checkpoint in {out} is kept" in r.output and f"fit --resume {out}" in r.output
    assert not (out / "model.npz").exists()
    with np.load(out / "checkpoint.npz") as z:
        assert np.all(np.isfinite(z["lambda"]))
        assert json.loads(z["meta"].tobytes())["step"] == 2


def test_second_signal_aborts_at_once_without_writing(planted, tmp_path, monkeypatch):
    """The first signal asks for a clean stop; a second one raises KeyboardInterrupt, and the
    run exits 130 without writing a model (the lock is released)."""
    from topicscale.inference.global_steps.svi import SVI
    from topicscale.guards import StopOnSignal
    messages = []
    stop = StopOnSignal(messages.append)
    stop._handle(signal.SIGINT, None)
    assert stop() and "stopping after this minibatch" in messages[0]
    with pytest.raises(KeyboardInterrupt):
        stop._handle(signal.SIGINT, None)

    _, corpus, _ = planted
    real = SVI.step

    def interrupted(self, batch):
        if self.model.step == 5:
            raise KeyboardInterrupt        # what the second signal's handler does mid-run
        return real(self, batch)

    monkeypatch.setattr(SVI, "step", interrupted)
    out = tmp_path / "model"
    r = CliRunner().invoke(cli, ["fit", str(corpus.path), "-k", "4", "--batch-size", "50", "-o", str(out)])
    assert r.exit_code == 130 and "interrupted" in r.output
    assert not out.exists()             # the folder it made held nothing but the untrained start


@pytest.mark.parametrize("algorithm", ["svi", "scvb0", "ssmf-a", "batch"])
def test_stop_and_resume_is_bit_identical_for_every_algorithm(planted, tmp_path, monkeypatch, algorithm):
    """Stopped mid-epoch (as by a signal) and resumed, every algorithm ends with the model an
    uninterrupted run writes: algorithm state travels in the checkpoint."""
    _, corpus, _ = planted
    args = ["fit", str(corpus.path), "--algorithm", algorithm, "-k", "6", "--batch-size", "200",
            "--passes", "2", "--seed", "3"]
    run(*args, "-o", tmp_path / "whole")
    r, _ = run_stopped(monkeypatch, 7, *args, "-o", tmp_path / "cut")
    assert r.exit_code == 0 and "partial model" in r.output      # stopped: no signal, exit 0
    assert load_model(tmp_path / "cut").step < load_model(tmp_path / "whole").step or algorithm == "batch"
    resume(tmp_path / "cut")
    assert (tmp_path / "cut" / "model.npz").read_bytes() == (tmp_path / "whole" / "model.npz").read_bytes()


def test_a_run_stopped_over_a_replaced_model_leaves_no_log_of_that_model(planted, tmp_path, monkeypatch):
    """fit --force over a model, stopped as by a signal: its partial model does not sit beside the
    replaced model's metrics.jsonl (`report` showed that run's curve and score as the new model's);
    resumed, the log holds this run's records alone."""
    _, corpus, _ = planted
    out = tmp_path / "m"
    run("fit", corpus.path, "-k", "4", "--passes", "1", "--batch-size", "200", "-o", out)
    assert (out / "metrics.jsonl").exists()
    args = ["fit", corpus.path, "-k", "6", "--passes", "2", "--batch-size", "200", "--force", "-o", out]
    r, _ = run_stopped(monkeypatch, 3, *args, "--json")
    assert r.exit_code == 0 and "partial model" in r.stderr
    summary = json.loads(r.stdout)
    assert summary["stopped"] == "signal" and summary["partial"] is True
    assert not (out / "metrics.jsonl").exists()
    resume(out)
    summaries = [json.loads(line) for line in open(out / "metrics.jsonl") if '"summary"' in line]
    assert [s["topics"] for s in summaries] == [6]


def test_a_fit_failing_before_it_saved_any_training_leaves_nothing_behind(planted, reference, tmp_path):
    """A corpus damaged past its first shard fails the first pass: a model folder the fit made is
    removed, and an existing model it was to replace (--force) is left as it was, with no
    checkpoint that would make the next fit ask for --resume."""
    import shutil
    _, corpus, _ = planted
    damaged = tmp_path / "damaged"
    shutil.copytree(corpus.path, damaged)
    last = sorted(damaged.glob("shard-*.indices.npy"))[-1]
    ids = np.load(last, mmap_mode="r+")
    ids[-1] = 10 ** 6
    ids.flush()
    del ids
    new = tmp_path / "new"
    r = run("fit", damaged, "-k", "4", "--batch-size", "50", "-o", new, ok=False)
    assert r.exit_code == 2 and f"{last.name}: word id out of range" in r.output
    assert "is kept" not in r.output and not new.exists()

    old = tmp_path / "old"
    shutil.copytree(reference, old)
    files = {p.name: p.read_bytes() for p in old.iterdir() if p.name != ".lock"}
    r = run("fit", damaged, "-k", "4", "--batch-size", "50", "--force", "-o", old, ok=False)
    assert r.exit_code == 2 and "word id out of range" in r.output
    assert {p.name: p.read_bytes() for p in old.iterdir() if p.name != ".lock"} == files
    r = run("fit", corpus.path, "-k", "4", "--batch-size", "50", "-o", old, ok=False)
    assert "already holds a model" in r.output


def test_a_full_disk_after_a_checkpoint_of_training_names_the_folder_and_the_resume(planted, reference,
                                                                                     tmp_path, monkeypatch):
    """No space for the third checkpoint: one line naming the model folder (the write's own error
    names no file) and the --resume that continues from the second; resumed, the model is the
    uninterrupted run's."""
    from topicscale import atomic
    _, corpus, heldout = planted
    out = tmp_path / "model"
    real_fdopen, opened = os.fdopen, []

    def fdopen(fd, mode):
        opened.append(None)
        if len(opened) == 3:
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fdopen(fd, mode)

    monkeypatch.setattr(atomic.os, "fdopen", fdopen)
    r = run("fit", corpus.path, *FIT, "--heldout", heldout.path, "--eval-every", "100", "-o", out, ok=False)
    assert r.exit_code == 2
    assert r.output.splitlines()[0] == f"topicscale: error: {out}: No space left on device"
    assert f"`topicscale fit --resume {out}` continues it" in r.output
    monkeypatch.undo()
    resume(out)
    assert_same_as_reference(out, reference)


def test_force_over_an_unfinished_run_that_fails_at_once_leaves_no_run_to_resume(planted, tmp_path, monkeypatch):
    """--force replaces an unfinished run; a new fit that fails before it saved any work leaves
    neither run (was: the old checkpoint beside an emptied log, and advice to --resume it, which
    padded the log with zero bytes)."""
    from topicscale import runs
    from topicscale.errors import TopicscaleError
    _, corpus, _ = planted
    out = tmp_path / "m"
    args = ["fit", corpus.path, "-k", "4", "--batch-size", "100", "--checkpoint-every", "1", "-o", out]
    r, _ = run_stopped(monkeypatch, 3, *args)
    assert "partial model" in r.output and (out / "checkpoint.npz").exists()

    def fails(config, corpus):
        raise TopicscaleError("no memory for the topics")

    monkeypatch.setattr(runs, "new_model", fails)
    r = run(*args, "--force", ok=False)
    assert r.output == "topicscale: error: no memory for the topics\n"
    assert not (out / "checkpoint.npz").exists() and not (out / ".run.jsonl").exists()
    assert (out / "model.npz").exists()             # the partial model of the stopped run stays


def test_a_resumed_run_counts_the_wall_time_of_the_process_it_resumes(planted, tmp_path, monkeypatch):
    """fit --json's wall_seconds, like its train_seconds and documents, counts the whole run: a
    resumed run adds the stopped process's wall time (here a second it spent stopping, outside
    training) to its own."""
    import time
    from topicscale import guards
    _, corpus, _ = planted
    out = tmp_path / "m"
    polls = []

    def stop_after_a_second(self):
        polls.append(None)
        if len(polls) > 3:
            time.sleep(1.0)
            return True
        return False

    monkeypatch.setattr(guards.StopOnSignal, "__call__", stop_after_a_second)
    first = json.loads(run("fit", corpus.path, "-k", "4", "--passes", "1", "--batch-size", "200", "--json",
                           "-o", out).stdout)
    monkeypatch.undo()
    assert first["stopped"] == "signal" and first["wall_seconds"] >= 1.0 > first["train_seconds"]
    whole = json.loads(run("fit", "--resume", out, "--json").stdout.strip().splitlines()[-1])
    assert whole["wall_seconds"] >= first["wall_seconds"] + whole["train_seconds"] - first["train_seconds"]

"""Guards around a fit: an exclusive lock on the output folder, and clean stops on signals."""
import json
import os
import signal
import socket
import threading
from pathlib import Path

from .errors import TopicscaleError

LOCK_FILE = ".lock"


class OutputLock:
    """An exclusive lock file in the output folder, so two fits never write one model."""

    def __init__(self, folder):
        self.path = Path(folder) / LOCK_FILE
        self.held = False

    def __enter__(self):
        info = {"pid": os.getpid(), "host": socket.gethostname()}
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise TopicscaleError(self._holder_message()) from None
        self.held = True
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(info, fh)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _holder_message(self):
        try:
            info = json.loads(self.path.read_text())
            pid, host = int(info["pid"]), info["host"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"{self.path}: unreadable lock file; if no fit is running, remove it: rm {self.path}"
        if host == socket.gethostname() and not _alive(pid):
            return (f"{self.path}: stale lock from a fit (pid {pid}) that is no longer running; "
                    f"remove it to continue: rm {self.path}")
        return f"{self.path.parent} is being written by another fit (pid {pid} on {host})"

    def __exit__(self, *exc):
        if self.held:
            self.path.unlink(missing_ok=True)
        return False


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StopOnSignal:
    """First SIGINT/SIGTERM: finish the current minibatch, then stop cleanly.
    Second: abort at once (KeyboardInterrupt) without writing anything."""

    def __init__(self, say):
        self.signum = None
        self.say = say
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self.previous[s] = signal.signal(s, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum
        self.say(f"topicscale: {signal.Signals(signum).name}: stopping after this minibatch "
                 "(again to abort without writing)")

    def __call__(self):
        return self.signum is not None

    def __exit__(self, *exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        return False

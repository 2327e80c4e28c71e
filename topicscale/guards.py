"""Guards around a fit: an exclusive lock on the output folder, and clean stops on signals."""
import fcntl
import json
import os
import signal
import socket
import threading
from pathlib import Path

from .errors import TopicscaleError

LOCK_FILE = ".lock"


class OutputLock:
    """An exclusive flock on OUTPUT/.lock for the life of a fit, so two fits never write one model.

    The kernel drops the lock when the holder exits, however it dies, so no stale lock is ever
    left to clear. The file stays in the folder: unlinking a locked file would let two runs lock
    two different files of that name. The file is opened once and closed only on exit, never
    elsewhere in the process: on Linux NFS flock is emulated by fcntl locks, which closing any
    descriptor of the file drops.
    """

    def __init__(self, folder):
        self.path = Path(folder) / LOCK_FILE
        self.fd = None

    def __enter__(self):
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise TopicscaleError(f"cannot open the lock file {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = self._holder_message(fd)
            os.close(fd)
            raise TopicscaleError(message) from None
        except OSError as exc:
            os.close(fd)
            raise TopicscaleError(f"cannot lock {self.path}: {exc.strerror} (the folder's file "
                                  "system needs working locks)") from None
        self.fd = fd
        try:
            info = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, info, 0)
            os.fsync(fd)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _holder_message(self, fd):
        """Who holds the lock, read through our own descriptor (see the class docstring)."""
        try:
            info = json.loads(os.pread(fd, 4096, 0))
            holder = f"pid {int(info['pid'])} on {info['host']}"
        except (OSError, ValueError, KeyError, TypeError):
            holder = f"its lock file {self.path} is unreadable"
        return f"{self.path.parent} is being written by another fit ({holder})"

    def __exit__(self, *exc):
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
        return False


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

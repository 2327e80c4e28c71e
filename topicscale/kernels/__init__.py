"""Numba kernels, one module a model or algorithm, compiled with cache=True into __pycache__.

numba keys a cached kernel on its own source file only, so a kernel that inlines a function of
another module (meanfield's sweep calls special's exp_dirichlet_lanes) would keep running the
old code after only that module changed, as after a `git pull` in an editable install.
Importing this package therefore drops every cached kernel when any kernel source changed
since the caches were written (names, sizes and modification times of the sources, recorded in
__pycache__/sources.stamp); the next call compiles afresh. Caches that NUMBA_CACHE_DIR sends
elsewhere are not checked.
"""
import os
from pathlib import Path

STAMP_NAME = "sources.stamp"


def drop_stale_caches(directory=Path(__file__).parent):
    """Delete directory/__pycache__/*.nbi and *.nbc unless the recorded stamp of directory/*.py
    is current, then record the current one; returns the number of files deleted. Does nothing
    where the folder cannot be written (numba then caches in the user's cache folder)."""
    directory = Path(directory)
    cache = directory / "__pycache__"
    stamp = "\n".join(f"{p.name} {st.st_size} {st.st_mtime_ns}"
                      for p in sorted(directory.glob("*.py")) for st in [p.stat()])
    recorded = cache / STAMP_NAME
    try:
        if recorded.read_text() == stamp:
            return 0
    except OSError:
        pass
    deleted = 0
    try:
        for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            f.unlink(missing_ok=True)
            deleted += 1
        cache.mkdir(exist_ok=True)
        partial = cache / f".{STAMP_NAME}.{os.getpid()}.tmp"
        partial.write_text(stamp)
        partial.replace(recorded)
    except OSError:
        pass
    return deleted


drop_stale_caches()

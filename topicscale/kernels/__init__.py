"""Numba kernels, one module a model or algorithm, compiled with cache=True into __pycache__.

numba keys a cached kernel on its own source file only, so a kernel that inlines a function of
another module (meanfield's sweep calls special's exp_dirichlet_lanes) would keep running the
old code after only that module changed, as after a `git pull` in an editable install.
Importing this package therefore drops every cached kernel when any kernel source changed
since the caches were written (names, sizes and modification times of the sources, recorded in
sources.stamp beside the caches); the next call compiles afresh. Every place numba caches in
is checked: __pycache__; the folder for this package under NUMBA_CACHE_DIR when it is set; and
the folder for this package in the user's cache folder (~/.cache/numba on Linux), which numba
uses where __pycache__ cannot be written (a read-only install): checked when it exists, and
stamped ahead of numba when __pycache__ cannot be written. When neither can be written and
NUMBA_CACHE_DIR is unset (a HOME that is missing, read-only or another user's), NUMBA_CACHE_DIR is
set to a private folder of the user's in the system temp folder. A folder that cannot be read
counts as absent.
"""
import atexit
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

STAMP_NAME = "sources.stamp"


def cache_folders(directory):
    """The folders numba caches the kernels of `directory` in: its __pycache__; when
    NUMBA_CACHE_DIR is set, NUMBA_CACHE_DIR/<folder name>_<SHA-1 of its absolute path> (as
    numba's _CacheLocator.get_suitable_cache_subpath names it); and the same subfolder of the
    user's numba cache folder (numba's UserWideCacheLocator) when it exists or when __pycache__
    cannot be written, so that numba will cache there."""
    from numba.misc.appdirs import AppDirs          # the kernel modules import numba anyway

    directory = Path(directory).absolute()
    subfolder = f"{directory.name}_{hashlib.sha1(str(directory).encode()).hexdigest()}"
    folders = [directory / "__pycache__"]
    user_dir = os.environ.get("NUMBA_CACHE_DIR")
    if user_dir:
        folders.append(Path(user_dir).absolute() / subfolder)
    user_wide = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir) / subfolder
    if os.path.isdir(user_wide) or not _writable(folders[0]):
        folders.append(user_wide)
    return folders


def _writable(folder):
    """Whether `folder` can be written, or made in the nearest folder above it that exists."""
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def use_private_cache_if_needed(directory):
    """Point NUMBA_CACHE_DIR and numba.config.CACHE_DIR at TMPDIR/topicscale-numba-<uid> (mode
    700; a fresh folder if another user holds that one) when it is unset and numba could cache the
    kernels of `directory` neither in __pycache__ nor in the user's cache folder; returns the
    folder set, or None."""
    if os.environ.get("NUMBA_CACHE_DIR") or any(_writable(f) for f in cache_folders(directory)):
        return None
    from numba.core import config                   # numba read NUMBA_CACHE_DIR on import
    folder = Path(tempfile.gettempdir()) / f"topicscale-numba-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            folder = Path(tempfile.mkdtemp(prefix="topicscale-numba-"))   # another's: a fresh one
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = config.CACHE_DIR = str(folder)
    return folder


def drop_stale_caches(directory=Path(__file__).parent):
    """In each of cache_folders(directory), delete *.nbi and *.nbc unless the recorded stamp of
    directory/*.py is current, then record the current one; returns the number of files
    deleted. Skips a folder that cannot be written."""
    directory = Path(directory)
    stamp = "\n".join(f"{p.name} {st.st_size} {st.st_mtime_ns}"
                      for p in sorted(directory.glob("*.py")) for st in [p.stat()])
    return sum(_drop_unless_stamped(cache, stamp) for cache in cache_folders(directory))


def _drop_unless_stamped(cache, stamp):
    """drop_stale_caches for one cache folder."""
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
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / f".{STAMP_NAME}.{os.getpid()}.tmp"
        partial.write_text(stamp)
        partial.replace(recorded)
    except OSError:
        pass
    return deleted


use_private_cache_if_needed(Path(__file__).parent)
drop_stale_caches()

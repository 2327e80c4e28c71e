"""Cached kernels are dropped when any kernel source changes (topicscale/kernels/__init__.py)."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import topicscale.kernels as kernels
from topicscale.kernels import STAMP_NAME, cache_folders, drop_stale_caches, use_private_cache_if_needed


def cached_files(directory, cache="__pycache__"):
    return sorted(p.name for p in (directory / cache).glob("*.nb[ic]"))


def make_caches(directory, cache="__pycache__"):
    for name in ("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "b.g-3.py311.nbi"):
        (directory / cache / name).write_text("compiled")


def test_caches_survive_until_a_source_changes_then_all_are_dropped(tmp_path):
    (tmp_path / "a.py").write_text("def f(): pass\n")
    (tmp_path / "b.py").write_text("def g(): pass\n")
    (tmp_path / "__pycache__").mkdir()
    make_caches(tmp_path)
    assert drop_stale_caches(tmp_path) == 3           # no stamp yet: nothing is known to be current
    make_caches(tmp_path)
    assert drop_stale_caches(tmp_path) == 0 and len(cached_files(tmp_path)) == 3
    (tmp_path / "b.py").write_text("def g(): return 1\n")   # b changed: a's kernels may inline it
    assert drop_stale_caches(tmp_path) == 3 and cached_files(tmp_path) == []
    make_caches(tmp_path)
    stat = (tmp_path / "a.py").stat()
    os.utime(tmp_path / "a.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))   # touched only
    assert drop_stale_caches(tmp_path) == 3
    assert drop_stale_caches(tmp_path) == 0


def test_importing_the_kernels_records_the_current_sources():
    """The package import ran the check: its stamp names every kernel source as it is now."""
    directory = Path(kernels.__file__).parent
    stamp = (directory / "__pycache__" / STAMP_NAME).read_text().splitlines()
    assert [line.split()[0] for line in stamp] == sorted(p.name for p in directory.glob("*.py"))
    assert drop_stale_caches(directory) == 0


def test_caches_under_numba_cache_dir_are_checked_too(tmp_path, monkeypatch):
    """With NUMBA_CACHE_DIR set, numba caches in a folder of its own there (named as numba's
    cache locator names it); those kernels are dropped after a source change as well."""
    from numba.core.caching import _CacheLocator
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "a.py").write_text("def f(): pass\n")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    user_cache = tmp_path / "numba" / _CacheLocator.get_suitable_cache_subpath(str(sources / "a.py"))
    assert cache_folders(sources) == [sources / "__pycache__", user_cache]
    drop_stale_caches(sources)
    make_caches(sources, user_cache)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_cache)) == 3
    (sources / "a.py").write_text("def f(): return 1\n")
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_cache) == []


def test_the_user_wide_numba_cache_is_checked_when_numba_caches_there(tmp_path, monkeypatch):
    """Where __pycache__ cannot be written, numba caches under the user's cache folder
    (UserWideCacheLocator, named as for NUMBA_CACHE_DIR). That folder is checked when it exists,
    and stamped ahead of numba when __pycache__ cannot be written (so the first run's kernels are
    not dropped for want of a stamp); otherwise nothing is written there."""
    from numba.core.caching import UserWideCacheLocator

    def f():
        pass
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "a.py").write_text("def f(): pass\n")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    user_wide = Path(UserWideCacheLocator(f, str(sources / "a.py")).get_cache_path())
    assert cache_folders(sources) == [sources / "__pycache__"] and not user_wide.exists()
    user_wide.mkdir(parents=True)
    assert cache_folders(sources) == [sources / "__pycache__", user_wide]
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_wide) == []   # no stamp yet
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_wide)) == 3
    (sources / "a.py").write_text("def f(): return 1\n")
    assert drop_stale_caches(sources) == 3 and cached_files(sources, user_wide) == []
    shutil.rmtree(user_wide)
    real_access = os.access
    monkeypatch.setattr(os, "access",
                        lambda path, mode: Path(path) != sources / "__pycache__" and real_access(path, mode))
    assert cache_folders(sources) == [sources / "__pycache__", user_wide]
    drop_stale_caches(sources)                       # stamps the user-wide folder before numba writes
    make_caches(sources, user_wide)
    assert drop_stale_caches(sources) == 0 and len(cached_files(sources, user_wide)) == 3


def test_without_a_writable_cache_folder_numba_caches_in_a_private_temp_folder(tmp_path, monkeypatch):
    """__pycache__ and the user's cache folder cannot be written, NUMBA_CACHE_DIR unset: it is set,
    in the environment and in numba.config, to TMPDIR/topicscale-numba-<uid> (mode 700), whose
    caches are checked too; a folder of that name others could write is not used."""
    from numba.core import config
    sources = tmp_path / "kernels"
    sources.mkdir()
    (sources / "a.py").write_text("def f(): pass\n")
    monkeypatch.setenv("NUMBA_CACHE_DIR", "")
    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert use_private_cache_if_needed(sources) is None          # __pycache__ can be written
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: tmp_path / "tmp" in Path(path).parents
                        and real_access(path, mode))
    private = tmp_path / "tmp" / f"topicscale-numba-{os.getuid()}"
    assert use_private_cache_if_needed(sources) == private
    assert os.environ["NUMBA_CACHE_DIR"] == config.CACHE_DIR == str(private)
    assert private.stat().st_mode & 0o777 == 0o700
    assert cache_folders(sources)[1].parent == private
    monkeypatch.setenv("NUMBA_CACHE_DIR", "")
    private.chmod(0o777)
    fresh = use_private_cache_if_needed(sources)
    assert fresh.parent == tmp_path / "tmp" and fresh != private and fresh.stat().st_mode & 0o777 == 0o700


def as_another_user():
    """The command prefix that runs a process as a user who can write nothing of ours (nobody,
    when we are root, setpriv is there and nobody can import this environment's numpy and numba:
    not when it lies in a folder only we may enter; else ourselves, for whom modes are enforced),
    or None."""
    if os.getuid() != 0:
        return []
    prefix = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    try:
        ok = subprocess.run(prefix + [sys.executable, "-c", "import numpy, numba"],
                            capture_output=True).returncode == 0
    except OSError:
        ok = False
    return prefix if ok else None


@pytest.mark.parametrize("home", ["missing", "read-only", "unreadable", "unreadable, NUMBA_CACHE_DIR set"])
def test_kernels_compile_and_cache_with_a_read_only_install_and_no_usable_home(home):
    """A read-only install run with a HOME that is missing, read-only (555) or that the user cannot
    enter (000, as /root after sudo): the kernels compile and cache, also with NUMBA_CACHE_DIR set."""
    prefix = as_another_user()
    if prefix is None:
        pytest.skip("cannot run this environment's Python as another user "
                    "(no setpriv, or it lies in a folder only we may enter)")
    base = Path(tempfile.mkdtemp())
    try:
        base.chmod(0o755)
        package = base / "install" / "topicscale"
        shutil.copytree(Path(kernels.__file__).parent.parent, package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for d in [base / "tmp", base / "cache"]:
            d.mkdir()
            d.chmod(0o1777)
        (base / "home").mkdir()
        (base / "home").chmod({"missing": 0o755, "read-only": 0o555}.get(home, 0o000))
        env = dict(os.environ, PYTHONPATH=str(base / "install"), TMPDIR=str(base / "tmp"),
                   HOME=str(base / "home" / "gone") if home == "missing" else str(base / "home"))
        env.pop("XDG_CACHE_HOME", None)
        env.pop("NUMBA_CACHE_DIR", None)
        if "NUMBA_CACHE_DIR" in home:
            env["NUMBA_CACHE_DIR"] = str(base / "cache")
        for p in [base / "install", *(base / "install").rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        code = "import numpy, topicscale.kernels.gibbs as g; print(g.splitmix64(numpy.uint64(1))[1])"
        r = subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert r.returncode == 0 and r.stdout == "10451216379200822465\n", r.stderr
        cache = base / "cache" if "NUMBA_CACHE_DIR" in home else next((base / "tmp").glob("topicscale-numba-*"))
        assert [p.name for p in cache.glob("*/gibbs.splitmix64-*.nbi")]
    finally:
        for p in [base, *base.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(base)

"""Atomic file and folder writes: write beside the target, fsync, rename into place."""
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from .errors import TopicscaleError


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _beside(make, path, suffix):
    """tempfile's `make` (mkstemp or mkdtemp) of a hidden name beside `path`; an error names
    `path`, not the temporary name the user never gave."""
    try:
        return make(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise TopicscaleError(f"{path}: cannot write in {path.parent} ({exc.strerror})") from None


def check_named(path, option="-o"):
    """TopicscaleError unless `path` names a file or folder to write: not empty, '.', '..' or '/',
    which name no entry of their parent that could be replaced."""
    if Path(path).name in ("", ".", ".."):
        raise TopicscaleError(f"{option} {str(path) or repr('')}: give the name of the folder or file to write")


def check_parent(path, made=False):
    """TopicscaleError unless the folder that `path` goes in is a folder, or with `made`, is one
    or can be made."""
    path = Path(path)
    for folder in (path.parent, *path.parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise TopicscaleError(f"{path}: {folder} is a file, not a folder")
            break
    if not made and not path.parent.is_dir():
        raise TopicscaleError(f"{path}: the folder {path.parent.resolve()} does not exist")


def check_not_owned(*paths):
    """TopicscaleError if a path is one of the files of a topicscale model folder (its model.npz,
    metrics, coherence scores, checkpoint, run log, lock; a classifier's file) or of a corpus
    folder (manifest, shards, vocabulary, ids), which a report, an export or a table must not
    replace."""
    from .classify.model import FILENAME as CLASSIFIER_FILE
    from .corpus.shards import CORPUS_FILE, is_corpus_folder
    from .guards import LOCK_FILE
    from .models import store
    from .runs import CHECKPOINT_FILE, RUN_LOG
    model_files = {store.MODEL_FILE, store.METRICS_FILE, store.SCORES_FILE, CHECKPOINT_FILE, RUN_LOG,
                   LOCK_FILE, CLASSIFIER_FILE}
    markers = (store.MODEL_FILE, CHECKPOINT_FILE, CLASSIFIER_FILE, RUN_LOG, LOCK_FILE)
    for path in paths:
        target = Path(path).resolve()
        folder = target.parent
        if target.name in model_files and any((folder / m).is_file() for m in markers):
            what = "model"
        elif CORPUS_FILE.fullmatch(target.name) and is_corpus_folder(folder):
            what = "corpus"
        else:
            continue
        raise TopicscaleError(f"{path} is a file of the topicscale {what} in {folder}; write to another "
                              "file (nothing was changed)")


@contextlib.contextmanager
def atomic_file(path, mode="wb"):
    """Yield a file object; on success it replaces `path` atomically, on error it vanishes."""
    path = Path(path)
    check_parent(path)
    fd, tmp = _beside(tempfile.mkstemp, path, ".tmp")
    os.chmod(tmp, 0o666 & ~_umask())          # mkstemp's 0600 is not what users expect
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path):
    """Yield a fresh temporary folder; on success it replaces folder `path`, on error it vanishes.

    An existing `path` is moved aside first and deleted only after the new folder is in place,
    so a failure never destroys what was there.
    """
    path = Path(path)
    check_named(path, str(path))
    check_parent(path, made=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(_beside(tempfile.mkdtemp, path, ".tmp"))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        for child in tmp.rglob("*"):
            if child.is_file():
                with open(child, "rb") as fh:
                    os.fsync(fh.fileno())
        old = None
        if path.exists():
            old = Path(_beside(tempfile.mkdtemp, path, ".old"))
            try:
                os.rename(path, old / path.name)
            except OSError:
                old.rmdir()
                raise
        os.rename(tmp, path)
        _fsync_dir(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

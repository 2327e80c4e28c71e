"""Reading a classifier's inputs (features, labels, groups) and the design matrix.

FEATURES
    * what `topicscale infer` writes: FILE.tsv (a header line `id<TAB>topic_0<TAB>...`, then one
      row per document, the id first) or FILE.npy with FILE.ids.txt beside it;
    * any dense matrix: .npy (2-D; ids from FILE.ids.txt if that file exists), or delimited text
      (.tsv / .txt: tabs, else runs of spaces; .csv: commas; `-` reads it on standard input).
      A first line with a field that is not a number is a header. The first column holds row ids when the header names it
      `id`, or when any of its values is not a number; otherwise every column is a feature.
LABELS, GROUPS (one value per feature row)
    * one value per line, in the feature rows' order; or
    * `id<TAB>value` lines, matched to the feature rows by id (the features must carry ids;
      every feature row needs a value; lines whose id is not among the features are ignored
      and counted). An optional header line is `id<TAB>label` (`id<TAB>group`) or `label`
      (`group`). Labels are 0 or 1. Blank lines are not allowed (they would shift rows).
Errors name the file and the 1-based line.
"""
from dataclasses import dataclass
import csv
import math
import sys
from pathlib import Path

import numpy as np

from ..errors import InputError, TopicscaleError


@dataclass
class Table:
    values: np.ndarray        # N x p float
    ids: list                 # N ids, or None
    columns: list             # p column names
    path: str
    lines: list               # 1-based line number of each row in the file (None for .npy)


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _split(line, delimiter):
    if delimiter is None:
        return line.split()
    return next(csv.reader([line], delimiter=delimiter))


def _check_file(path, what):
    """InputError unless `path` is a file; a folder is named for what it is (a model or corpus
    folder is given where `what`, a file, is expected)."""
    p = Path(path)
    if p.exists() and not p.is_dir():       # a file, or a pipe (/dev/stdin, <(...))
        return
    if not p.is_dir():
        raise InputError(path, None, "no such file")
    kind = ("a model folder" if (p / "model.npz").is_file() else
            "a corpus folder" if (p / "manifest.json").is_file() else "a folder")
    hint = (" (`topicscale infer MODEL CORPUS -o theta.tsv` writes a document's topic proportions as features)"
            if what == "features file" and kind != "a folder" else "")
    raise InputError(path, None, f"{kind}, not a {what}{hint}")


def _read_text(path):
    """The text of a UTF-8 file; InputError naming the line of the first byte that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, data.count(b"\n", 0, exc.start) + 1, "not valid UTF-8") from None


def read_features(path):
    """Read FEATURES (see the module docstring; `-`: text on standard input) into a Table;
    InputError on bad input."""
    path = str(path)
    p = Path(path)
    if path == "-":
        text = sys.stdin.read()
        path = "<stdin>"
    else:
        _check_file(path, "features file")
        if path.endswith(".npy"):
            return _read_npy(p)
        text = _read_text(p)
    lines = text.splitlines()
    if not lines or not any(l.strip() for l in lines):
        raise InputError(path, None, "empty features file")
    first = lines[0]
    if path.endswith(".csv"):
        delimiter = ","
    elif "\t" in first:
        delimiter = "\t"
    elif "," in first and " " not in first.strip():
        delimiter = ","
    else:
        delimiter = None
    header = _split(first, delimiter)
    has_header = (any(not _is_number(f) for f in header[1:]) or header[0].strip().lower() == "id"
                  or (len(header) == 1 and not _is_number(header[0])))
    body_start = 1 if has_header else 0
    rows = []
    for i in range(body_start, len(lines)):
        if not lines[i].strip():
            raise InputError(path, i + 1, "blank line")
        rows.append((i + 1, _split(lines[i], delimiter)))
    if not rows:
        raise InputError(path, None, "no rows of features")
    width = len(header) if has_header else len(rows[0][1])
    for line_no, fields in rows:
        if len(fields) != width:
            raise InputError(path, line_no, f"expected {width} fields, found {len(fields)}")
    id_col = (has_header and header[0].strip().lower() == "id") or \
        any(not _is_number(fields[0]) for _, fields in rows)
    start = 1 if id_col else 0
    if width - start < 1:
        raise InputError(path, None, "no feature columns")
    columns = [h.strip() for h in header[start:]] if has_header else \
        [f"x{j}" for j in range(width - start)]
    values = np.empty((len(rows), width - start))
    for r, (line_no, fields) in enumerate(rows):
        for j in range(start, width):
            try:
                x = float(fields[j])
            except ValueError:
                raise InputError(path, line_no, f"column {j + 1} ({columns[j - start]!r}): "
                                 f"{fields[j]!r} is not a number") from None
            if not math.isfinite(x):
                raise InputError(path, line_no, f"column {j + 1} ({columns[j - start]!r}): "
                                 f"{fields[j]!r} is not a finite number")
            values[r, j - start] = x
    ids = [fields[0].strip() for _, fields in rows] if id_col else None
    return Table(values, ids, columns, path, [l for l, _ in rows])


def _read_npy(p):
    try:
        values = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(p, None, f"not a readable .npy file ({exc.__class__.__name__})") from None
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
        raise InputError(p, None, f"expected a non-empty 2-D array, found shape {values.shape}")
    if not np.issubdtype(values.dtype, np.number):
        raise InputError(p, None, f"expected numbers, found dtype {values.dtype}")
    values = values.astype(float)
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        raise InputError(p, None, f"row {bad[0][0] + 1}, column {bad[0][1] + 1} is not finite")
    ids = None
    ids_path = Path(str(p)[:-4] + ".ids.txt")
    if ids_path.is_file():
        ids = _read_text(ids_path).splitlines()
        if len(ids) != values.shape[0]:
            raise InputError(ids_path, None, f"{len(ids)} ids for the {values.shape[0]} rows of {p}")
    columns = [f"x{j}" for j in range(values.shape[1])]
    return Table(values, ids, columns, str(p), None)


def read_column(path, table, kind="label"):
    """LABELS or GROUPS for the rows of `table` (see the module docstring).

    Returns (values: list of str, ignored: number of id lines not among the features).
    Labels are checked to be 0 or 1.
    """
    path = str(path)
    _check_file(path, f"{kind}s file")
    lines = _read_text(path).splitlines()
    entries = []                       # (line number, id or None, value)
    for i, line in enumerate(lines, 1):
        fields = line.split("\t")
        if i == 1 and _is_header(fields, kind):
            continue
        if not line.strip():
            raise InputError(path, i, "blank line")
        if len(fields) == 1:
            entries.append((i, None, fields[0].strip()))
        elif len(fields) == 2:
            entries.append((i, fields[0].strip(), fields[1].strip()))
        else:
            raise InputError(path, i, f"expected one {kind} or `id<TAB>{kind}`, found {len(fields)} fields")
        value = entries[-1][2]
        if kind == "label" and value not in ("0", "1"):
            raise InputError(path, i, f"label must be 0 or 1, found {value!r}")
        if kind != "label" and not value:
            raise InputError(path, i, f"empty {kind}")
    if not entries:
        raise InputError(path, None, f"no {kind}s")
    with_ids = [e[1] is not None for e in entries]
    if any(with_ids) and not all(with_ids):
        where = entries[with_ids.index(not with_ids[0])][0]
        raise InputError(path, where, f"mixes `id<TAB>{kind}` lines and bare {kind}s")
    n = table.values.shape[0]
    if not with_ids[0]:
        if len(entries) > n:
            raise InputError(path, entries[n][0], f"more {kind}s than the {n} rows of {table.path}")
        if len(entries) < n:
            raise InputError(path, None, f"{len(entries)} {kind}s for the {n} rows of {table.path}")
        return [e[2] for e in entries], 0
    if table.ids is None:
        raise InputError(path, entries[0][0], f"{kind}s are given by id but {table.path} has no ids "
                         "(give one value per line in row order, or features with an id column)")
    by_id = {}
    for line_no, key, value in entries:
        if key in by_id:
            raise InputError(path, line_no, f"id {key!r} already has a {kind} on line {by_id[key][0]}")
        by_id[key] = (line_no, value)
    if len(set(table.ids)) != len(table.ids):
        seen = set()
        for r, key in enumerate(table.ids):
            if key in seen:
                raise InputError(table.path, _line(table, r), f"duplicate id {key!r}: cannot match {kind}s by id")
            seen.add(key)
    out = []
    for r, key in enumerate(table.ids):
        if key not in by_id:
            raise InputError(table.path, _line(table, r), f"id {key!r} has no {kind} in {path}")
        out.append(by_id[key][1])
    return out, len(by_id) - len(out)


def _line(table, row):
    return table.lines[row] if table.lines else None


def _is_header(fields, kind):
    names = [f.strip().lower() for f in fields]
    return (len(names) == 2 and names[0] == "id" and names[1] not in ("0", "1")) or names == [kind]


def labels_array(values):
    return np.array([int(v) for v in values], dtype=float)


# ------------------------------------------------------------------------------------ design
def is_simplex(X, tol=1e-3):
    """Every row non-negative and summing to one (topic proportions)."""
    return bool(X.shape[1] > 1 and np.all(X >= -1e-9) and np.all(np.abs(X.sum(axis=1) - 1.0) <= tol))


@dataclass
class Design:
    """Raw features -> the model's covariates t_n.

    Topic proportions sum to one, so together with an intercept they are collinear. The rule:
    * intercept "auto": no intercept for simplex features (every row >= 0 and summing to one,
      within 1e-3): all K columns are kept, and theta_k is the log-odds of a document made of
      topic k alone; other features get an intercept (a leading column of ones);
    * intercept "yes" on simplex features: the last column is dropped (it is one minus the others);
    * standardize: each column is divided by its training standard deviation (1 for a constant
      column), and centred on its training mean when there is an intercept (centring without
      one would change the model, and would make simplex columns sum to zero).
    """
    columns: list
    intercept: bool
    drop_last: bool
    center: np.ndarray
    scale: np.ndarray
    simplex: bool

    @classmethod
    def fit(cls, table_values, columns, intercept="auto", standardize=True):
        X = np.asarray(table_values, dtype=float)
        simplex = is_simplex(X)
        if intercept == "auto":
            use_intercept = not simplex
        elif intercept in ("yes", True):
            use_intercept = True
        elif intercept in ("no", False):
            use_intercept = False
        else:
            raise ValueError(f"intercept must be auto, yes or no, not {intercept!r}")
        drop_last = bool(simplex and use_intercept)
        kept = X[:, :-1] if drop_last else X
        center = np.zeros(kept.shape[1])
        scale = np.ones(kept.shape[1])
        if standardize:
            sd = kept.std(axis=0)
            scale = np.where(sd > 1e-12, sd, 1.0)
            if use_intercept:
                center = kept.mean(axis=0)
        return cls(list(columns), use_intercept, drop_last, center, scale, simplex)

    @property
    def names(self):
        cols = self.columns[:-1] if self.drop_last else self.columns
        return (["(intercept)"] if self.intercept else []) + list(cols)

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        if X.shape[1] != len(self.columns):
            raise TopicscaleError(f"expected {len(self.columns)} feature columns, found {X.shape[1]}")
        kept = X[:, :-1] if self.drop_last else X
        T = (kept - self.center) / self.scale
        if self.intercept:
            T = np.hstack([np.ones((T.shape[0], 1)), T])
        return T

    def to_arrays(self):
        return {"design_center": self.center, "design_scale": self.scale}

    def to_meta(self):
        return {"columns": self.columns, "intercept": self.intercept, "drop_last": self.drop_last,
                "simplex": self.simplex}

    @classmethod
    def from_stored(cls, meta, arrays):
        return cls(list(meta["columns"]), bool(meta["intercept"]), bool(meta["drop_last"]),
                   arrays["design_center"], arrays["design_scale"], bool(meta["simplex"]))

"""Intertopic distance map: topics as points in the plane, placed as LDAvis places them.

Sievert & Shirley (2014), LDAvis, sec. 3.1: the distance between topics k and l is the Jensen-Shannon
divergence of their word distributions (natural log, not its square root),

    JS(P, Q) = (KL(P || M) + KL(Q || M)) / 2,   M = (P + Q) / 2,

and the points are its principal coordinate analysis (classical multidimensional scaling, Gower 1966):
with D the K x K matrix of those divergences and H = I - 11'/K,

    B = -H (D * D) H / 2,   coordinates = eigenvectors of B's two largest eigenvalues, column j scaled by
    sqrt(lambda_j),

eigenvalues within 1e-8 of zero and negative ones (D need not be Euclidean) giving a zero column. These are
the definitions of pyLDAvis's default (`prepare(..., mds='pcoa')`), so our points equal its points up to the
sign of each axis, which an eigen solver leaves free. Here the sign is fixed: in each column the coordinate
of largest magnitude is positive (on ties within a relative 1e-9, the one of the lowest topic index).
numpy and scipy only.
"""
import numpy as np
from scipy.special import rel_entr

_ZERO_EIGENVALUE = 1e-8        # pyLDAvis's np.isclose(eigenvalue, 0) with its default atol
_BLOCK = 1 << 22               # entries of the (rows x V) mixtures held at once


def js_divergences(topic_word):
    """K x K symmetric Jensen-Shannon divergences (nats) between the rows of `topic_word`.

    Rows are normalised to sum to one first; 0 log 0 = 0. Memory holds at most about 4M mixture entries.
    """
    p = np.asarray(topic_word, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] == 0:
        raise ValueError(f"topic_word must be a non-empty K x V matrix, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("topic_word must be finite and non-negative")
    sums = p.sum(axis=1, keepdims=True)
    if np.any(sums <= 0):
        raise ValueError("every row of topic_word needs positive mass")
    p = p / sums
    k, v = p.shape
    out = np.zeros((k, k))
    step = max(1, _BLOCK // v)
    for i in range(k - 1):
        for lo in range(i + 1, k, step):
            q = p[lo:lo + step]
            m = 0.5 * (p[i] + q)
            js = 0.5 * (rel_entr(p[i], m).sum(axis=1) + rel_entr(q, m).sum(axis=1))
            out[i, lo:lo + step] = js
            out[lo:lo + step, i] = js
    return out


def principal_coordinates(distances, n_components=2):
    """Classical MDS of a symmetric distance matrix: K x n_components, signs fixed as the module says."""
    d = np.asarray(distances, dtype=np.float64)
    k = d.shape[0]
    centred = d * d
    centred = centred - centred.mean(axis=0, keepdims=True)
    centred = centred - centred.mean(axis=1, keepdims=True)
    b = -0.5 * centred
    b = 0.5 * (b + b.T)                                  # exact symmetry for eigh
    values, vectors = np.linalg.eigh(b)                  # ascending
    order = np.argsort(values, kind="stable")[::-1][:n_components]
    values, vectors = values[order], vectors[:, order]
    keep = values > _ZERO_EIGENVALUE
    coords = np.zeros((k, n_components))
    coords[:, :len(values)] = np.where(keep, np.sqrt(np.where(keep, values, 0.0)), 0.0) * vectors
    return _fix_signs(coords)


def _fix_signs(coords):
    for j in range(coords.shape[1]):
        col = coords[:, j]
        top = np.abs(col).max()
        if top == 0:
            continue
        first = int(np.flatnonzero(np.abs(col) >= top * (1 - 1e-9))[0])
        if col[first] < 0:
            coords[:, j] = -col
    return coords


def intertopic_coordinates(topic_word):
    """K x 2 map of the topics (rows of the K x V row-stochastic `topic_word`): PCoA of their JS divergences."""
    return principal_coordinates(js_divergences(topic_word), 2)

"""The report's plots, drawn by matplotlib (the optional extra topicscale[report]) into
`data:image/svg+xml` URIs, so the page fetches nothing.

Figures are made with matplotlib.figure.Figure (no pyplot, no GUI backend, no global state),
with a fixed SVG hash salt and no date in the metadata, so the same model gives the same bytes.
matplotlib is imported inside the functions: only `report` and `fit --report` load it.
"""
import base64
import io

import numpy as np

from .errors import TopicscaleError

INSTALL = "pip install topicscale[report]"
STYLE = {"svg.hashsalt": "topicscale-report", "svg.fonttype": "none", "text.parse_math": False, "font.size": 9,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3}
COLOUR = "#3b6ea8"
ACCENT = "#d1495b"
LABEL_WORDS = 3                    # top words in a topic's label
MAP_RADIUS = 0.08                  # the largest circle's radius, a share of the map's width or height
LABEL_CHARS = 40                   # a longer label is cut, ending in an ellipsis


def require_matplotlib():
    """Raise TopicscaleError (exit status 2) saying how to install matplotlib when it is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise TopicscaleError(f"the report needs matplotlib, which is not installed: {INSTALL}") from None


def _svg_uri(fig):
    """The figure as a base64 data: URI of its SVG."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight",
                metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(width, height):
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), layout="constrained")


def label(topic, words, n=LABEL_WORDS):
    """A topic's number and top words, at most LABEL_CHARS characters."""
    text = f"{topic}: " + " ".join(words[:n])
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "\u2026"


# ------------------------------------------------------------------------------ the figures
def curve_figure(points):
    """Held-out per-word log likelihood against training time and against documents seen."""
    fig = _figure(8.0, 2.8)
    seconds = [p["seconds"] for p in points]
    docs = [p["docs"] for p in points]
    ll = [p["per_word_ll"] for p in points]
    for ax, x, xlabel in zip(fig.subplots(1, 2, sharey=True), (seconds, docs),
                             ("training time (s)", "documents seen")):
        ax.plot(x, ll, "-o", color=COLOUR, markersize=3.5, linewidth=1.5)
        ax.set_xlabel(xlabel)
    fig.axes[0].set_ylabel("held-out per-word log likelihood")
    return fig


def sizes_figure(topics):
    """Each shown topic's share of the corpus, largest first, labelled by its top words."""
    ordered = sorted(topics, key=lambda t: (-t["weight"], t["topic"]))
    fig = _figure(6.5, 0.6 + 0.22 * len(ordered))
    ax = fig.subplots()
    y = np.arange(len(ordered))
    ax.barh(y, [100 * t["weight"] for t in ordered], color=COLOUR, height=0.7)
    ax.set_yticks(y, [label(t["topic"], t["words"]) for t in ordered])
    ax.invert_yaxis()
    ax.set_xlabel("share of the corpus (%)")
    ax.grid(axis="y", visible=False)
    ax.margins(y=0.01)
    return fig


def map_figure(topics, coordinates):
    """Topics as circles at their principal coordinates (Jensen-Shannon distances), area by size.
    The radii are in the map's units, so the axes' limits take in every circle whole."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize
    from matplotlib.patches import Circle
    fig = _figure(6.0, 5.0)
    ax = fig.subplots()
    weights = np.array([t["weight"] for t in topics])
    spread = float(np.ptp(coordinates, axis=0).max()) or 1.0
    radii = MAP_RADIUS * spread * np.sqrt((70 * weights / max(weights.max(), 1e-12) + 1) / 71)
    colours = colormaps["viridis"](Normalize()(weights))
    for t, (x, y), r, colour in zip(topics, coordinates, radii, colours):
        ax.add_patch(Circle((x, y), r, facecolor=colour, alpha=0.55, edgecolor="#333333", linewidth=0.6))
        ax.annotate(str(t["topic"]), (x, y), ha="center", va="center", fontsize=8)
    ax.set_xlabel("PC1")
    ax.set_ylabel("PC2")
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    return fig


def correlation_figure(pairs, words):
    """CTM: the strongest positive topic correlations as a graph; nodes on a circle, labelled by
    top words, edges as wide as the correlation is strong."""
    nodes = sorted({k for i, j, _ in pairs for k in (i, j)})
    angle = {k: 2 * np.pi * a / len(nodes) for a, k in enumerate(nodes)}
    pos = {k: (np.cos(a), np.sin(a)) for k, a in angle.items()}
    fig = _figure(6.0, 4.4)
    ax = fig.subplots()
    strongest = max(r for _, _, r in pairs)
    for i, j, r in reversed(pairs):                   # the strongest drawn last, on top
        (x0, y0), (x1, y1) = pos[i], pos[j]
        ax.plot([x0, x1], [y0, y1], color=ACCENT, alpha=0.25 + 0.75 * r / strongest,
                linewidth=0.8 + 5 * r / strongest, solid_capstyle="round", zorder=1)
    for k in nodes:
        x, y = pos[k]
        ax.scatter([x], [y], s=90, color=COLOUR, zorder=2, edgecolors="white")
        ax.annotate(label(k, words[k]), (1.12 * x, 1.12 * y), fontsize=8, va="center",
                    ha="left" if x >= 0 else "right")
    ax.set_xlim(-2.2, 2.2)
    ax.set_ylim(-1.35, 1.35)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def sticks_figure(sticks):
    """HDP: the topics' stick weights E[sigma_k(V)], heaviest first, with their cumulative share and
    the number of topics carrying 95% and 99% of it."""
    n99 = sticks["n99"]
    shown = min(len(sticks["weights"]), max(2 * n99, 10))
    w = sticks["weights"][:shown]
    fig = _figure(8.0, 3.0)
    ax = fig.subplots()
    x = np.arange(1, shown + 1)
    ax.bar(x, w, color=[COLOUR if i < n99 else "#b8c4d4" for i in range(shown)], width=0.8)
    ax.set_xlabel("topics by weight (rank)")
    ax.set_ylabel("stick weight")
    cum = ax.twinx()
    cum.plot(x, np.cumsum(w) / sticks["weights"].sum(), color=ACCENT, linewidth=1.5)
    cum.set_ylim(0, 1.02)
    cum.set_ylabel("cumulative share", color=ACCENT)
    cum.grid(False)
    for n, style in ((sticks["n95"], ":"), (n99, "--")):
        ax.axvline(n + 0.5, color="#555555", linestyle=style, linewidth=1)
    ax.set_title(f"{sticks['n95']} topics carry 95% of the weight, {n99} carry 99%", fontsize=9)
    return fig


def figures(data):
    """{name: data URI} of the figures `data` (report.ReportData) has material for."""
    import matplotlib
    out = {}
    with matplotlib.rc_context(STYLE):
        if len(data.curve) >= 2:
            out["curve"] = _svg_uri(curve_figure(data.curve))
        out["sizes"] = _svg_uri(sizes_figure(data.topics))
        if data.coordinates is not None:
            out["map"] = _svg_uri(map_figure(data.topics, data.coordinates))
        if data.correlations:
            words = {t["topic"]: t["words"] for t in data.topics}
            out["correlations"] = _svg_uri(correlation_figure(data.correlations, words))
        if data.sticks is not None:
            out["sticks"] = _svg_uri(sticks_figure(data.sticks))
    return out

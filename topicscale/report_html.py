"""The report's HTML page: one file, its style inline, its plots data: URIs, no script and no
link that leaves the page, every text from the model escaped (topic words may hold `<` or `&`).
"""
from html import escape

from . import __version__

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0;
       background: #fafafa; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; margin: 0 0 16px; }
table { border-collapse: collapse; } td, th { padding: 3px 10px 3px 0; text-align: left;
     vertical-align: top; } th { color: #555; font-weight: 600; }
table.facts td:first-child { color: #555; }
table.topics td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.topics tr:nth-child(even) { background: #f4f6f9; }
img { max-width: 100%; height: auto; display: block; margin: 6px 0; }
.note { color: #7a4b00; background: #fff6e0; padding: 6px 10px; border-left: 3px solid #e0a400; }
.score { font-size: 15px; }
"""


def _e(value):
    return escape(str(value), quote=True)


def _number(value, digits=4):
    return "&ndash;" if value is None else f"{value:.{digits}f}"


def _figure(figures, name, alt):
    return f'<img src="{figures[name]}" alt="{_e(alt)}">' if name in figures else ""


def _note(text):
    return f'<p class="note">{_e(text)}</p>' if text else ""


def _facts(data):
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in data.facts)
    return f'<table class="facts">{rows}</table>'


def _heldout(data, figures):
    parts = [_figure(figures, "curve", "held-out per-word log likelihood against training time and "
                     "documents seen"), _note(data.curve_note)]
    if data.final_eval:
        e = data.final_eval
        parts.append(f'<p class="score">At the end of training: held-out per-word log likelihood '
                     f'<b>{_number(e["per_word_ll"])}</b> (perplexity {_number(e["perplexity"], 1)}, '
                     f'{_e(e["documents"])} documents; protocol {_e(e.get("protocol", "common"))}).</p>')
    if data.heldout:
        h = data.heldout
        parts.append(f'<p class="score">On {_e(h["corpus"])}: per-word log likelihood '
                     f'<b>{_number(h["per_word_ll"])}</b> (perplexity {_number(h["perplexity"], 1)}, '
                     f'{_e(h["documents"])} documents, {h["heldout_tokens"]:.0f} held-out tokens; '
                     f'protocol: {_e(h["protocol_text"])}).</p>')
    return "<h2>Held-out score</h2>" + "".join(parts)


def _topics_table(data):
    measures = data.coherence_measures
    head = "<tr><th>topic</th><th>share</th>" + "".join(f"<th>{_e(m)}</th>" for m in measures) + \
           "<th>top words</th></tr>"
    rows = []
    for t in data.topics:
        scores = "".join(f'<td class="num">{_number(t["coherence"].get(m))}</td>' for m in measures)
        rows.append(f'<tr><td class="num">{t["topic"]}</td><td class="num">{100 * t["weight"]:.1f}%</td>'
                    f'{scores}<td>{_e(" ".join(t["words"]))}</td></tr>')
    return f'<table class="topics">{head}{"".join(rows)}</table>'


def page(data, figures):
    """The report of `data` (report.ReportData) with `figures` ({name: data URI}) as HTML."""
    sections = [
        f"<h1>Topic model {_e(data.model_path)}</h1>",
        f'<p class="sub">{_e(data.kind.upper())}, {len(data.weights)} topics; written by topicscale '
        f"{_e(__version__)}.</p>",
        _facts(data),
        _heldout(data, figures),
        "<h2>Topic sizes</h2>", _figure(figures, "sizes", "share of the corpus of each topic"),
        "<h2>Intertopic distance map</h2>",
        "<p>Each circle is a topic, its area its share of the corpus; topics close together use "
        "similar words (principal coordinates of the Jensen-Shannon distances between the topics' "
        "word distributions).</p>" if "map" in figures else "",
        _figure(figures, "map", "intertopic distance map"), _note(data.map_note),
    ]
    if data.correlations is not None:
        sections.append("<h2>Topic correlations</h2>")
        if data.correlations:
            sections += ["<p>The strongest positive correlations between topics in the logistic-normal "
                         "prior (Sigma_0): topics that tend to occur in the same documents.</p>",
                         _figure(figures, "correlations", "topic correlation graph")]
        else:
            sections.append(_note("No pair of topics is positively correlated."))
    if data.sticks is not None:
        sections += ["<h2>Effective topics</h2>",
                     f"<p>Of {len(data.weights)} topics, {data.sticks['n99']} carry 99% of the weight "
                     f"({data.sticks['n95']} carry 95%); the table below lists those.</p>",
                     _figure(figures, "sticks", "stick weights of the topics")]
    sections += ["<h2>Topics</h2>", f"<p>{_e(data.coherence_note)}</p>" if data.coherence_measures
                 else _note(data.coherence_note), _topics_table(data)]
    body = "\n".join(s for s in sections if s)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>topicscale report: {_e(data.model_path)}</title>\n<style>{CSS}</style>\n</head>\n"
            f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")

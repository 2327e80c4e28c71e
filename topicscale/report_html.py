"""The report's HTML page: one file, its style inline, its plots data: URIs, no script and no
link that leaves the page, every text from the model escaped (topic words may hold `<` or `&`).
"""
import re
from html import escape

from . import __version__

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0;
       background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; background: #fff;
       overflow-wrap: anywhere; }
.row { display: flex; flex-wrap: wrap; gap: 0 32px; } .row > section { flex: 1 1 420px; min-width: 0; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #666; margin: 0 0 16px; }
table { border-collapse: collapse; } td, th { padding: 3px 10px 3px 0; text-align: left;
     vertical-align: top; } th { color: #555; font-weight: 600; }
table.facts td:nth-child(odd) { color: #555; } table.facts td:nth-child(2) { padding-right: 40px; }
table.topics td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.topics tr:nth-child(even) { background: #f4f6f9; }
.repeats { color: #9a3b00; }
img { max-width: 100%; height: auto; display: block; margin: 6px 0; }
.note { color: #7a4b00; background: #fff6e0; padding: 6px 10px; border-left: 3px solid #e0a400; }
.score { font-size: 15px; }
code { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #f1f1f1; padding: 0 3px; }
"""


def _e(value):
    return escape(str(value), quote=True)


def _number(value, digits=4):
    return "&ndash;" if value is None else f"{value:.{digits}f}"


def _figure(figures, name, alt):
    return f'<img src="{figures[name]}" alt="{_e(alt)}">' if name in figures else ""


def _prose(text):
    """Escaped text, with `commands` in backquotes set as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _note(text):
    return f'<p class="note">{_prose(text)}</p>' if text else ""


def _facts(data, per_row=2):
    cells = [f"<td>{_e(k)}</td><td>{_e(v)}</td>" for k, v in data.facts]
    rows = "".join("<tr>" + "".join(cells[i:i + per_row]) + "</tr>" for i in range(0, len(cells), per_row))
    return f'<table class="facts">{rows}</table>'


def _heldout(data, figures):
    parts = [_figure(figures, "curve", "held-out per-word log likelihood against training time and "
                     "documents seen"), _note(data.curve_note)]
    if data.final_eval:
        e = data.final_eval
        when = "At the last evaluation before training was stopped" if data.partial else "At the end of training"
        parts.append(f'<p class="score">{when}: held-out per-word log likelihood '
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
    ranked = f" (by relevance {data.relevance:g})" if data.relevance < 1 else ""
    head = "<tr><th>topic</th><th>share</th>" + "".join(f"<th>{_e(m)}</th>" for m in measures) + \
           f"<th>top words{ranked}</th></tr>"
    rows = []
    for t in data.topics:
        scores = "".join(f'<td class="num">{_number(t["coherence"].get(m))}</td>' for m in measures)
        repeats = (f' <span class="repeats">(repeats {" ".join(map(str, t["repeats"]))})</span>'
                   if t.get("repeats") else "")
        rows.append(f'<tr><td class="num">{t["topic"]}</td><td class="num">{100 * t["weight"]:.1f}%</td>'
                    f'{scores}<td>{_e(" ".join(t["words"]))}{repeats}</td></tr>')
    return f'<table class="topics">{head}{"".join(rows)}</table>'


def _pairs_table(data, n_words=3):
    words = {t["topic"]: " ".join(t["words"][:n_words]) for t in data.topics}
    rows = "".join(f'<tr><td class="num">{i}</td><td class="num">{j}</td><td class="num">{r:.3f}</td>'
                   f"<td>{_e(words[i])} / {_e(words[j])}</td></tr>" for i, j, r in data.correlations)
    return ('<table class="topics"><tr><th>topic</th><th>topic</th><th>correlation</th><th>their top words'
            f"</th></tr>{rows}</table>")


def page(data, figures):
    """The report of `data` (report.ReportData) with `figures` ({name: data URI}) as HTML."""
    sections = [
        f"<h1>{_e(data.model_path)}</h1>",
        f'<p class="sub">{"An unfinished" if data.partial else "A" if data.kind == "ctm" else "An"} '
        f"{_e(data.kind.upper())} topic model with {len(data.weights)} topics; the report was written by "
        f"topicscale {_e(__version__)}.</p>",
        _note(f"Training was stopped before it finished: `topicscale fit --resume {data.model_path}` "
              "continues it." if data.partial else ""),
        _facts(data),
        _heldout(data, figures),
        '<div class="row"><section>', "<h2>Topic sizes</h2>",
        _figure(figures, "sizes", "share of the corpus of each topic"), "</section><section>",
        "<h2>Intertopic distance map</h2>",
        "<p>Each circle is a topic, its area its share of the corpus; topics close together use "
        "similar words (principal coordinates of the Jensen-Shannon distances between the topics' "
        "word distributions).</p>" if "map" in figures else "",
        _figure(figures, "map", "intertopic distance map"), _note(data.map_note), "</section></div>",
    ]
    if data.correlations is not None:
        sections.append("<h2>Topic correlations</h2>")
        if data.correlations:
            sections += ["<p>The strongest positive correlations between topics in the logistic-normal "
                         "prior (Sigma_0): topics that tend to occur in the same documents.</p>",
                         '<div class="row"><section>',
                         _figure(figures, "correlations", "topic correlation graph"),
                         "</section><section>", _pairs_table(data), "</section></div>"]
        else:
            sections.append(_note("No pair of topics is positively correlated."))
    if data.sticks is not None:
        sections += ["<h2>Effective topics</h2>",
                     f"<p>Of {len(data.weights)} topics, {data.sticks['n99']} carry 99% of the weight "
                     f"({data.sticks['n95']} carry 95%); the table below lists those and any other "
                     "that carries 99% of the tokens.</p>",
                     _figure(figures, "sticks", "stick weights of the topics")]
    sections += ["<h2>Topics</h2>", f"<p>{_prose(data.coherence_note)}</p>" if data.coherence_measures
                 else _note(data.coherence_note), _topics_table(data)]
    body = "\n".join(s for s in sections if s)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>topicscale report: {_e(data.model_path)}</title>\n<style>{CSS}</style>\n</head>\n"
            f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")

"""The drawing kit: every picture kerasbench draws is an SVG made here (the report's and the atlas' pages, `report
--svg`, `report --png` through kerasbench.png, a notebook's Results), from data the pages build (report's
curve_data and chart_data in kerasbench.pictures; the atlas' change sides).

Each picture is a standalone SVG with presentation attributes (no page CSS), so a page, a file and a PNG show the
same drawing. The kit is its own code, not a plotting library's: a picture stays a few KiB of text inside a page that
works offline as one file (a plotting library's SVG is many times larger and brings its own fonts and IDs), and the
drawings need only lines, dots, text and shaded spans. Pieces: the scales and ticks (ticks, span_ticks, stretch),
the elements (text, line, polyline, legend, whisker), the pictures (curve_svg: a pair's memory after each
iteration; plot: a metric over TF versions; chart_svg: strategies side by side; spark: a change's two sides).
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

from .page import esc

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
DASHES = ("", "6 3", "2 3")  # beyond ten strategies a colour comes back with a dash pattern
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, MUTED, GRID, REF, FRAME = "#222", "#555", "#e8e8e8", "#333", "#999"
BASELINE_DASH, FLOOR_DASH = "7 4", "2 3"
WARMUP_FILL = "#000"  # at WARMUP_OPACITY: the iterations a verdict discarded as warm-up
WARMUP_OPACITY = 0.07


def ticks(low, high, n=5, integer=False):
    """About n round tick values covering [low, high] (integer: whole steps only, for iterations)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        low, high = low - 1, high + 1
    raw = (high - low) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)) if raw <= m * step)
    step = max(1, round(step)) if integer else step
    first = math.floor(low / step + 1e-9) * step
    count = int(math.ceil((high - first) / step - 1e-9)) + 1
    return [float(f"{first + i * step:.12g}") for i in range(count)]


def _num(v):
    v = 0.0 if v == 0 else v  # no "-0"
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.3g}"


def _scale(low, high, start, end):
    """data -> pixel: `low` at `start`, `high` at `end`."""
    k = (end - start) / ((high - low) or 1)
    return lambda v: start + (v - low) * k


def _width_of(text, size):
    """The drawn width of `text` at font `size`, generously (DejaVu Sans is wide): for layout, never clipping."""
    return len(str(text)) * size * 0.62


def _svg(width, height, label, cls="plot"):
    return [f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label)}" font-family="{FONT}">',
            f'<title>{esc(label)}</title><rect width="100%" height="100%" fill="#fff"/>']


def _text(x, y, s, size=10, anchor="start", fill=MUTED, weight="", extra=""):
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"{bold}{extra}>'
            f'{esc(s)}</text>')


def _line(x1, y1, x2, y2, stroke, width=1.0, dash="", cls=""):
    extra = (f' stroke-dasharray="{dash}"' if dash else "") + (f' class="{cls}"' if cls else "")
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
            f'stroke-width="{width}"{extra}/>')


def _polyline(points, stroke, width=1.8, dash=""):
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in points)}" fill="none" stroke="{stroke}" '
            f'stroke-width="{width}" stroke-linejoin="round"{dash_attr}/>')


def _legend(items, x0, y0, width, size=10):
    """A legend laid out in rows inside the picture: items [(text, colour, dash, kind)], kind 'line', 'box' (a
    shaded span), 'whisker' or 'text' (words alone, muted: a unit). Returns (the <g>, its height)."""
    parts, x, baseline, row = ['<g class="legend">'], x0, y0 + size, size + 6
    for text, colour, dash, kind in items:
        mark = 0 if kind == "text" else 24
        w = mark + _width_of(text, size) + 10
        if x > x0 and x + w > x0 + width:
            x, baseline = x0, baseline + row
        mid = baseline - size * 0.35
        if kind == "box":
            parts.append(f'<rect x="{x:.1f}" y="{mid - 5:.1f}" width="18" height="10" fill="{colour}" '
                         f'fill-opacity="{WARMUP_OPACITY * 2 if colour == WARMUP_FILL else 1}" stroke="{FRAME}" '
                         'stroke-width="0.5"/>')
        elif kind == "whisker":
            parts += [_line(x, mid, x + 18, mid, colour, 1.2), _line(x, mid - 4, x, mid + 4, colour, 1.2),
                      _line(x + 18, mid - 4, x + 18, mid + 4, colour, 1.2),
                      f'<circle cx="{x + 9:.1f}" cy="{mid:.1f}" r="3" fill="{colour}"/>']
        elif kind != "text":
            parts.append(_line(x, mid, x + 18, mid, colour, 2 if not dash else 1.5, dash))
        parts.append(_text(x + mark, baseline, text, size, fill=MUTED if kind == "text" else INK))
        x += w
    parts.append("</g>")
    return "".join(parts), baseline - y0 + 6


def _whisker(at, low, high, colour, vertical):
    """A 95% CI: a bar from `low` to `high` (pixels) with caps, at `at` across it."""
    def seg(a0, b0, a1, b1):
        return _line(a0, b0, a1, b1, colour, 1.2) if vertical else _line(b0, a0, b1, a1, colour, 1.2)

    return (f'<g class="whisker">{seg(at, low, at, high)}{seg(at - 3.5, low, at + 3.5, low)}'
            f'{seg(at - 3.5, high, at + 3.5, high)}</g>')


def style(i):
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def span_ticks(values, span, n=5):
    """Ticks of an axis holding `values` and spanning at least `span` around them (noise stays flat)."""
    if not values:
        return ticks(0.0, span or 1.0, n)
    low, high = min(values), max(values)
    if high - low < span:
        middle = (low + high) / 2
        low, high = middle - span / 2, middle + span / 2
    return ticks(low, high, n)


def _wrap(text, width, size):
    """`text` in lines that fit `width` pixels at font `size` (broken between words)."""
    lines, current = [], ""
    for word in str(text).split(" "):
        candidate = f"{current} {word}" if current else word
        if current and _width_of(candidate, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return lines + [current] if current else lines


def _pack(phrases, width, size):
    """Phrases joined by '; ' into as few lines as fit `width`; a phrase is broken only when alone it is too long."""
    lines = []
    for phrase in phrases:
        joined = f"{lines[-1]}; {phrase}" if lines else phrase
        if lines and _width_of(joined, size) <= width:
            lines[-1] = joined
        else:
            lines += _wrap(phrase, width, size)
    return lines


def curve_svg(data, width=420, heights=(150, 90)):
    """A memory picture (curve_data) as SVG: the title, the verdicts, the legend, then the RSS panel over the heap
    panel on one iteration axis."""
    left, right, size = 56, 12, 10
    parts, y = [], 6
    for line in _wrap(data["title"], width - 12, 12):
        y += 15
        parts.append(_text(width / 2, y, line, 12, "middle", INK, "600"))
    y += 2
    for line in _pack(data["notes"], width - 12, size):
        y += 13
        parts.append(_text(width / 2, y, line, size, "middle", MUTED))
    key, key_height = _legend(data["legend"], left, y + 6, width - left - right, size)
    parts.append(key)
    y += 6 + key_height
    xt = data["xticks"]
    px = _scale(0, data["xmax"], left, width - right)
    for index, panel in enumerate(data["panels"]):
        height = heights[min(index, len(heights) - 1)]
        last = index == len(data["panels"]) - 1
        parts.append(_panel(panel, px, xt, left, width - right, y + 4, y + 4 + height, last))
        y += 4 + height + (30 if last else 8)
    body = "".join(parts)
    return "".join(_svg(width, y + 2, f"{data['title']}: memory after each iteration", "plot curve")) + body + "</svg>"


def _panel(panel, px, xt, left, right, top, bottom, last):
    yt = panel["ticks"]
    py = _scale(yt[0], yt[-1], bottom, top)
    out = [f'<g class="panel" data-series="{esc(panel["name"])}">']
    for x0 in panel["warmup"]:
        out.append(f'<rect class="warmup" x="{px(0):.1f}" y="{top:.1f}" width="{px(x0) - px(0):.1f}" '
                   f'height="{bottom - top:.1f}" fill="{WARMUP_FILL}" fill-opacity="{WARMUP_OPACITY}"/>')
    for v in yt:
        out.append(_line(left, py(v), right, py(v), GRID) + _text(left - 4, py(v) + 3.5, _num(v), 9, "end"))
    for v in xt:
        out.append(_line(px(v), bottom, px(v), bottom + 3, FRAME))
        if last:
            out.append(_text(px(v), bottom + 13, _num(v), 9, "middle"))
    if last:
        out.append(_text((left + right) / 2, bottom + 25, "iteration (0: the baseline reading)", 9, "middle"))
    out.append(f'<text transform="translate({left - 40:.0f} {(top + bottom) / 2:.1f}) rotate(-90)" font-size="10" '
               f'fill="{INK}" text-anchor="middle">{esc(panel["label"])}</text>')
    for kind, pts in panel["refs"]:
        (x0, y0), (x1, y1) = pts
        out.append(_line(px(x0), py(y0), px(x1), py(y1), REF, 1.3 if kind == "floor" else 1.1,
                         FLOOR_DASH if kind == "floor" else BASELINE_DASH, kind))
    cls = "line" if panel["name"] == "RSS" else "heap"
    for label, colour, pts in panel["lines"]:
        out.append(f'<g class="{cls}" data-name="{esc(label)}"><title>{esc(panel["name"])}, {esc(label)}</title>'
                   + _polyline([(px(x), py(v)) for x, v in pts], colour, 1.6)
                   + (f'<circle cx="{px(pts[0][0]):.1f}" cy="{py(pts[0][1]):.1f}" r="2" fill="{colour}"/>'
                      if len(pts) == 1 else "") + "</g>")
    out.append(f'<rect x="{left}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" fill="none" '
               f'stroke="{FRAME}"/></g>')
    return "".join(out)


def plot(lines: Sequence[tuple], xticks: Sequence[Tuple[float, str]], ylabel: str, title: str, width: int = 460,
         height: int = 260, span: float = 0.0, whiskers: bool = False) -> str:
    """An SVG line plot with its legend inside, on the right. lines: [(name, colour, dash, [(x, y or None[, low,
    high])])]; None breaks the line; low and high draw a whisker (a 95% CI) where given.

    The y axis covers at least `span` around the data, so noise-sized differences stay flat lines. With whiskers,
    each line is nudged sideways a little so overlapping intervals stay apart.
    """
    key_w = max([_width_of(name, 10) for name, *_ in lines] + [0]) + 34
    total = width + key_w
    left, right, top, bottom = 58, 12, 26, 34
    height = max(height, top + 20 + 16 * (len(lines) + (1 if whiskers else 0)))
    ys = [v for _, _, _, pts in lines for p in pts for v in p[1:] if v is not None]
    yt = span_ticks(ys, span)
    xs = [x for x, _ in xticks]
    x0, x1 = min(xs, default=0) - 0.5, max(xs, default=0) + 0.5  # categories: half a step of room at both ends
    px, py = _scale(x0, x1, left, width - right), _scale(yt[0], yt[-1], height - bottom, top)
    nudge = (lambda i: (i - (len(lines) - 1) / 2) * min(0.3 / max(len(lines) - 1, 1), 0.05)) if whiskers else \
        (lambda i: 0.0)
    out = _svg(total, height, title) + [_text(width / 2, 16, title, 12, "middle", INK, "600")]
    for y in yt:
        out.append(_line(left, py(y), width - right, py(y), GRID) + _text(left - 4, py(y) + 3.5, _num(y), 9, "end"))
    for x, label in xticks:
        out.append(_text(px(x), height - bottom + 14, label, 10, "middle"))
    out.append(f'<text transform="translate(14 {(top + height - bottom) / 2:.0f}) rotate(-90)" font-size="10" '
               f'fill="{INK}" text-anchor="middle">{esc(ylabel)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
               f'fill="none" stroke="{FRAME}"/>')
    for i, (name, colour, dash, pts) in enumerate(lines):
        segments, current = [], []
        for p in list(pts) + [(None, None)]:
            if p[1] is None:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append((px(p[0] + nudge(i)), py(p[1])))
        out.append(f'<g class="line" data-name="{esc(name)}"><title>{esc(name)}</title>')
        for p in pts:
            if len(p) > 3 and p[1] is not None and p[2] is not None and p[3] is not None:
                out.append(_whisker(px(p[0] + nudge(i)), py(p[2]), py(p[3]), colour, vertical=True))
        for seg in segments:
            out.append(_polyline(seg, colour, 2, dash))
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in seg]
        out.append("</g>")
    items = [(name, colour, dash, "line") for name, colour, dash, _ in lines]
    if whiskers:
        items.append(("95% CI", MUTED, "", "whisker"))
    key = _legend_column(items, width + 4, top)
    out.append(key + "</svg>")
    return "".join(out)


def _legend_column(items, x, y, size=10):
    """A legend as one column (the version plot's right margin)."""
    parts = []
    for i, item in enumerate(items):
        g, _ = _legend([item], x, y + i * 16, 10 ** 6, size)
        parts.append(g)
    return "".join(parts)


def stretch(low, high, span):
    """[low, high] widened to at least `span`: upwards from 0 or above, downwards from 0 or below, else both ways."""
    if high - low >= span:
        return low, high
    if low >= 0:
        return low, low + span
    if high <= 0:
        return high - span, high
    middle = (low + high) / 2
    return middle - span / 2, middle + span / 2


def chart_svg(data, plot_width=300):
    """Strategies side by side (chart_data) as SVG: strategy names on the left, the values on the right."""
    size = 10
    label_w = max([_width_of(s, size) for s, _ in data["rows"]] + [60]) + 10
    value_w = max([_width_of(p["text"] or p["status"], size) for _, row in data["rows"] for p in row] + [30]) + 18
    left, width = label_w, label_w + plot_width + value_w
    per = len(data["versions"])
    band = max(18, 12 * per + 6)
    parts = [_text(width / 2, 17, data["title"], 12, "middle", INK, "600")]
    items = []
    if per > 1:
        items += [(f"TF {v}", PALETTE[j % len(PALETTE)], "", "line") for j, v in enumerate(data["versions"])]
    if data["whiskers"]:
        items.append(("95% CI", MUTED, "", "whisker"))
    if data["floors"]:
        items.append(("floor: growth the verdict cannot resolve", "#d9d9d9", "", "box"))
    top = 26
    if items:
        key, h = _legend(items, 8, top, width - 16, size)
        parts.append(key)
        top += h + 2
    xt = data["ticks"]
    right = left + plot_width
    px = _scale(xt[0], xt[-1], left, right)
    bottom = top + band * len(data["rows"])
    for v in xt:
        parts.append(_line(px(v), top, px(v), bottom, GRID) + _text(px(v), bottom + 13, _num(v), 9, "middle"))
    if xt[0] < 0 < xt[-1] or xt[0] == 0:
        parts.append(_line(px(0), top, px(0), bottom, FRAME, 1))
    for r, (strategy, row) in enumerate(data["rows"]):
        y0 = top + r * band
        if r % 2:
            parts.append(f'<rect x="0" y="{y0:.1f}" width="{width}" height="{band}" fill="#f6f6f6"/>')
        parts.append(f'<g class="row" data-strategy="{esc(strategy)}">')
        parts.append(_text(left - 6, y0 + band / 2 + 3.5, strategy, size, "end", INK))
        for j, p in enumerate(row):
            y = y0 + band / 2 + (j - (per - 1) / 2) * 12
            if p["floor"]:
                parts.append(f'<rect class="floor" x="{px(0):.1f}" y="{y - 5:.1f}" '
                             f'width="{max(px(p["floor"]) - px(0), 1):.1f}" height="10" fill="#d9d9d9"/>')
            if p["value"] is None:
                parts.append(_text(left + 4, y + 3.5, p["status"], 9, fill="#888"))
                continue
            if p["low"] is not None and p["high"] is not None:
                parts.append(_whisker(y, px(p["low"]), px(p["high"]), p["colour"], vertical=False))
            parts.append(f'<circle class="value" cx="{px(p["value"]):.1f}" cy="{y:.1f}" r="3.5" fill="{p["colour"]}">'
                         f'<title>{esc(strategy)}, TF {esc(p["version"])}: {esc(p["text"])} {esc(data["unit"])}'
                         f'</title></circle>')
            parts.append(_text(right + 6, y + 3.5, p["text"], size, fill=p["colour"] if per > 1 else INK))
        parts.append("</g>")
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_width}" height="{bottom - top}" fill="none" '
                 f'stroke="{FRAME}"/>')
    parts.append(_text((left + right) / 2, bottom + 27, data["unit"], 10, "middle", INK))
    height = bottom + 34
    return "".join(_svg(width, height, data["title"], "plot chart")) + "".join(parts) + "</svg>"



def spark(sides, colours, names: Sequence[str], width: int = 260, height: int = 64) -> str:
    """A change's picture, two lines on one scale, no axes: sides [(every, readings)] (a reading after every `every`-th
    iteration, MiB over the first), each in its colour and named in the legend under the lines (`names`, one a side,
    then the unit); `height`: the lines' part, the legend's row comes below it."""
    top = max(max(vals) for _, vals in sides)
    low = min(min(vals) for _, vals in sides)
    span = (top - low) or 1.0
    last = max(every * (len(vals) - 1) for every, vals in sides) or 1
    pad, lines = 4, []
    for (every, vals), colour in zip(sides, colours):
        pts = " ".join(f"{pad + (width - 2 * pad) * every * i / last:.1f},"
                       f"{height - pad - (height - 2 * pad) * (y - low) / span:.1f}" for i, y in enumerate(vals))
        lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{pts}"/>')
    key, key_height = _legend([(name, colour, "", "line") for name, colour in zip(names, colours)]
                              + [("RSS, MiB over the first reading", MUTED, "", "text")], 4, height + 2, width - 8)
    total = height + key_height
    label = (f"RSS after each iteration, MiB over the first reading: {', '.join(names)}, "
             f"{low:+.1f} to {top:+.1f} MiB over {last} iterations")
    return (f'<svg class="spark" width="{width}" height="{total}" viewBox="0 0 {width} {total}" role="img" '
            f'aria-label="{esc(label)}" font-family="{FONT}"><title>{esc(label)}</title>'
            f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="#fff" stroke="#ddd"/>'
            f'{"".join(lines)}<text x="{width - 6}" y="14" text-anchor="end" font-size="10" fill="{MUTED}">'
            f'{top:+.1f} MiB</text><text x="{width - 6}" y="{height - 6}" text-anchor="end" font-size="10" '
            f'fill="{MUTED}">{last} it</text>{key}</svg>')

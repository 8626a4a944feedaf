"""The report's pictures agree with the verdicts (#25): a flat series draws flat and a leak climbs, the baseline and
the floor are marked, the heap is drawn beside RSS, whiskers show the 95% CIs, legends sit inside the SVG, one
release gets a labelled chart; `report --svg/--png` write one picture; a notebook's Results show the curves."""

import copy
import io
import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from kerasbench import METRICS, api, draw, pictures, png, report
from kerasbench.cli import main
from kerasbench.rule import spec_floors
from kerasbench.runner import RunSpec
from kerasbench.summary import summarize
import pixels
from test_compare import TF212, TF221, as_version, payload, write as write_json

KIB, MIB = 1024, 1024**2
SVG = "{http://www.w3.org/2000/svg}"


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def record_with(slope, heap_slope=0.0, n=40, repeats=1, band=0.8 * MIB, seed=0, strategy=None, version="2.21.0"):
    """A record from the fixture's template: RSS rising by `slope` bytes per iteration inside a noise band of `band`
    (uniform), the heap by `heap_slope`, summarized by kerasbench's own summary (its verdicts and floors)."""
    rng = np.random.default_rng(seed)
    data = as_version(payload(), version)
    record = data["records"][0]
    template = record["repeats"][0]
    record["spec"].update(iterations=n, repeats=repeats, warmup=0)
    if strategy:
        record["strategy"] = strategy
    record["repeats"] = []
    for r in range(repeats):
        rep = copy.deepcopy(template)
        base, heap_base = 600 * MIB, 80 * MIB
        rss = [int(base + slope * (i + 1) + rng.uniform(0, band)) for i in range(n)]
        heap = [int(heap_base + heap_slope * (i + 1) + rng.uniform(0, band / 8)) for i in range(n)]
        rep["repeat"] = r
        rep["result"]["series"] = {"rss": rss, "heap": heap, "seconds": [0.5] * n, "train_traces": [2] * n,
                                   "predict_traces": [0] * n, "function_traces": [0] * n}
        rep["result"].update(baseline_rss=base, peak_loop_rss=max(rss), final_rss=rss[-1], heap_baseline=heap_base,
                             heap_peak=max(heap), heap_final=heap[-1], heap_source="test")
        record["repeats"].append(rep)
    spec = RunSpec(**record["spec"])
    record["summary"] = summarize(record["repeats"], spec, spec_floors(spec))
    return record


def svg_tree(text):
    return ET.fromstring(text)


def panel(root, series):
    [found] = [g for g in root.iter(f"{SVG}g") if g.get("data-series") == series]
    return found


def ys(g):
    """The pixel y of every point of the polylines under `g`."""
    return [float(p.split(",")[1]) for line in g.iter(f"{SVG}polyline") for p in line.get("points").split()]


def frame_height(g):
    [frame] = [r for r in g.iter(f"{SVG}rect") if r.get("fill") == "none"]
    return float(frame.get("height"))


def curve(record):
    return svg_tree(draw.curve_svg(pictures.curve_data(record, record["loop"], record["strategy"], "2.21.0")))


# ---------------------------------------------------------------- the memory curve


def test_a_flat_series_draws_flat_and_a_leak_climbs():
    flat, leak = record_with(0), record_with(1 * MIB, heap_slope=MIB)
    assert flat["summary"]["verdict"] == "flat" and leak["summary"]["verdict"] == "grows"
    flat_rss, leak_rss = panel(curve(flat), "RSS"), panel(curve(leak), "RSS")
    flat_spread, height = max(ys(flat_rss)) - min(ys(flat_rss)), frame_height(flat_rss)
    assert flat_spread < 0.25 * height  # a 0.8 MiB band on an axis of at least 4 MiB, not a climb
    leak_ys = ys(leak_rss)
    assert max(leak_ys) - min(leak_ys) > 0.6 * frame_height(leak_rss) and leak_ys[-1] < leak_ys[0]  # up the page
    # the y axis holds at least 4 MiB: its tick labels span it
    ticks = [float(t.text) for t in flat_rss.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert max(ticks) - min(ticks) >= pictures.MIN_CURVE_SPAN / MIB


def test_the_baseline_and_the_floor_are_marked_and_the_heap_is_drawn_beside_rss():
    record = record_with(0, n=30)
    s = record["summary"]
    root = curve(record)
    rss = panel(root, "RSS")
    [baseline] = [line for line in rss.iter(f"{SVG}line") if line.get("class") == "baseline"]
    [floor] = [line for line in rss.iter(f"{SVG}line") if line.get("class") == "floor"]
    assert baseline.get("y1") == baseline.get("y2") == floor.get("y1")  # the floor starts at the baseline reading
    assert float(floor.get("y2")) < float(floor.get("y1"))  # and rises at the floor's slope
    ticks = sorted(float(t.text) for t in rss.iter(f"{SVG}text") if t.get("text-anchor") == "end")
    pixels_per_mib = frame_height(rss) / (ticks[-1] - ticks[0])
    rise = (float(floor.get("y1")) - float(floor.get("y2"))) / pixels_per_mib
    assert rise == pytest.approx(s["floor"] * 30 / MIB, rel=0.02)
    heap = panel(root, "heap")
    assert list(heap.iter(f"{SVG}polyline")) and any(t.text == "heap (MiB)" for t in heap.iter(f"{SVG}text"))
    assert [g.get("class") for g in heap.iter(f"{SVG}g")][1:] == ["heap"]  # a line per repeat, in the heap panel
    assert any(line.get("class") == "floor" for line in heap.iter(f"{SVG}line")) and s.get("heap_floor")
    legend = " ".join(t.text for g in root.iter(f"{SVG}g") if g.get("class") == "legend" for t in g.iter(f"{SVG}text"))
    assert "baseline" in legend and f"RSS +{s['floor'] / KIB:g} KiB/iter" in legend
    assert root.find(f"{SVG}title").text.startswith("sweep × clear_session_del_gc, TF 2.21.0")


def test_without_a_floor_in_the_record_no_floor_line_and_the_legend_says_so():
    record = record_with(0)
    record["summary"].pop("floor")
    root = curve(record)
    assert not [line for line in panel(root, "RSS").iter(f"{SVG}line") if line.get("class") == "floor"]
    legend = " ".join(t.text for t in root.iter(f"{SVG}text"))
    assert "no RSS floor in the record: not drawn" in legend


def test_a_long_run_draws_at_most_400_points_a_line_and_keeps_its_spikes():
    record = record_with(0, n=5000)
    spike = record["repeats"][0]["result"]["series"]["rss"]
    spike[2345] += 50 * MIB
    data = pictures.curve_data(record, "sweep", "x", "2.21.0")
    [(_, _, points)] = data["panels"][0]["lines"]
    assert len(points) <= pictures.CURVE_POINTS and max(v for _, v in points) == spike[2345] / MIB
    assert [x for x, _ in points] == sorted(x for x, _ in points)
    assert len(draw.curve_svg(data)) < 40_000


def test_repeats_overlaid_and_a_stopped_curve_drawn_without_a_baseline():
    record = record_with(0, repeats=2)
    root = curve(record)
    assert [g.get("data-name") for g in root.iter(f"{SVG}g") if g.get("class") == "line"] == ["repeat 1", "repeat 2"]
    record["repeats"][1].update(status="stopped", result=None, partial_rss=[600 * MIB] * 5)
    root = curve(record)
    assert "repeat 2 (stopped)" in [g.get("data-name") for g in root.iter(f"{SVG}g")]


# ---------------------------------------------------------------- metrics: over versions, side by side


def _section_svgs(text, loop):
    from test_report import Tree

    root = Tree(text).root
    [section] = root.find_all("section", data_loop=loop)
    return section, section.find_all("div", class_="plots")[0].find_all("svg")


def test_version_plots_have_ci_whiskers_and_their_legend_inside(tmp_path):
    path = report.write([TF212, TF221], str(tmp_path / "r.html"))
    text = open(path).read()
    section, svgs = _section_svgs(text, "sweep")
    growth, peak = svgs[0], svgs[1]
    assert "Growth per iteration" in growth.attrs["aria-label"] and growth.find_all("g", class_="whisker")
    assert not peak.find_all("g", class_="whisker")  # a peak has no confidence interval
    for svg in svgs:
        [legend] = [g for g in svg.find_all("g", class_="legend")][:1]
        assert "clear_session_del_gc" in legend.all_text()
    assert not section.find_all("div", class_="legend")  # no list outside the pictures any more
    assert "95% CI" in growth.all_text()


def test_one_release_draws_the_strategies_side_by_side_labelled(tmp_path):
    path = report.write([TF221], str(tmp_path / "r.html"))
    _, svgs = _section_svgs(open(path).read(), "inference")
    growth = svgs[0]
    assert "chart" in growth.attrs["class"]
    rows = growth.find_all("g", class_="row")
    assert [r.attrs["data-strategy"] for r in rows] == ["clear_session", "varying_batch_shapes"]
    for row in rows:
        assert row.attrs["data-strategy"] in row.all_text()  # the name as the row's label
        assert row.find_all("g", class_="whisker") and row.find_all("circle", class_="value")
    assert growth.find_all("rect", class_="floor") and "floor" in growth.all_text()


def test_chart_whiskers_follow_the_ci_on_the_value_axis():
    data = pictures.chart_data(METRICS["growth_per_iter"], "sweep", ["a", "b"], ["2.21.0"], {"2.21.0": {
        ("sweep", "a"): ({"status": "ok", "summary": {"growth_per_iter": 100 * KIB, "growth_ci_low": 50 * KIB,
                                                       "growth_ci_high": 150 * KIB, "floor": 64 * KIB}}, "p"),
        ("sweep", "b"): ({"status": "skipped", "summary": {}}, "p")}})
    root = svg_tree(draw.chart_svg(data))
    [a, b] = [g for g in root.iter(f"{SVG}g") if g.get("class") == "row"]
    [whisker] = [g for g in a.iter(f"{SVG}g") if g.get("class") == "whisker"]
    bar = next(whisker.iter(f"{SVG}line"))
    [dot] = a.iter(f"{SVG}circle")
    lo, hi, mid = float(bar.get("x1")), float(bar.get("x2")), float(dot.get("cx"))
    assert mid - lo == pytest.approx(hi - mid, abs=0.2) and hi > lo
    assert "n/a" in [t.text for t in b.iter(f"{SVG}text")]


# ---------------------------------------------------------------- the page


def test_curves_are_shown_by_default(tmp_path):
    from test_report import Tree

    path = report.write([TF212, TF221], str(tmp_path / "r.html"))
    root = Tree(open(path).read()).root
    figures = root.find_all("figure", class_="curve")
    assert figures and not any("hidden" in f.attrs for f in figures)
    assert all(f.find_all("svg") and f.find_all("line", class_="baseline") for f in figures)


# ---------------------------------------------------------------- report --svg / --png


def test_svg_of_a_pair_is_a_valid_svg(tmp_path):
    out = tmp_path / "curve.svg"
    code, text = call(["report", TF212, TF221, "--svg", str(out), "--pair", "sweep:clear_session_del_gc"])
    assert code == 0 and f"to {out}" in text and "TF 2.21.0" in text  # the newest by default
    root = ET.parse(out).getroot()
    assert root.tag == f"{SVG}svg" and int(root.get("width")) > 300
    assert any(g.get("data-series") == "RSS" for g in root.iter(f"{SVG}g"))
    assert sorted(os.listdir(tmp_path)) == ["curve.svg"]  # no HTML page, no temporary file
    code, _ = call(["report", TF212, TF221, "--svg", str(out), "--pair", "sweep:clear_session_del_gc", "--tf",
                    "2.12.1"])
    assert code == 0 and "TF 2.12.1" in ET.parse(out).getroot().find(f"{SVG}title").text


def test_svg_of_a_metric_is_the_strategies_side_by_side(tmp_path):
    out = tmp_path / "chart.svg"
    code, _ = call(["report", TF212, TF221, "--svg", str(out), "--metric", "growth_per_iter", "--loop", "inference"])
    assert code == 0
    root = ET.parse(out).getroot()
    rows = [g.get("data-strategy") for g in root.iter(f"{SVG}g") if g.get("class") == "row"]
    assert rows == ["clear_session", "varying_batch_shapes"]
    legend = " ".join(t.text for t in root.iter(f"{SVG}text"))
    assert "TF 2.12.1" in legend and "TF 2.21.0" in legend and "95% CI" in legend


def test_svg_and_the_page_together(tmp_path):
    code, text = call(["report", TF221, "--svg", str(tmp_path / "c.svg"), "--output", str(tmp_path / "r.html"),
                       "--pair", "inference:clear_session"])
    assert code == 0 and sorted(os.listdir(tmp_path)) == ["c.svg", "r.html"] and "HTML report" in text


@pytest.mark.parametrize("argv, needle", [
    (["--pair", "sweep:nope"], "Expected one of: inference:clear_session, inference:varying_batch_shapes, "
                               "sweep:clear_session_del_gc."),
    (["--pair", "sweep"], "Unknown pair"),
    (["--metric", "growth"], "Expected one of: growth_per_iter, peak_loop, peak_over_baseline."),
    (["--metric", "growth_per_iter"], "give --loop, one of: sweep, inference"),
    (["--metric", "growth_per_iter", "--loop", "nope"], "Expected one of: inference, sweep."),
    (["--pair", "sweep:clear_session_del_gc", "--tf", "2.9"], "Expected one of: 2.12.1, 2.21.0."),
    ([], "Which picture? Give --pair LOOP:STRATEGY"),
    (["--pair", "sweep:clear_session_del_gc", "--metric", "peak_loop"], "give one of them"),
])
def test_bad_picture_choices_are_one_line_exit_2_listing_the_valid_ones(tmp_path, capsys, argv, needle):
    code, text = call(["report", TF212, TF221, "--svg", str(tmp_path / "x.svg"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and text == "" and needle in err and err.count("\n") == 1
    assert os.listdir(tmp_path) == []


def test_picture_options_without_a_picture_are_refused(tmp_path, capsys):
    code, _ = call(["report", TF221, "--pair", "inference:clear_session", "--output", str(tmp_path / "r.html")])
    assert code == 2 and "--svg FILE or --png FILE" in capsys.readouterr().err and os.listdir(tmp_path) == []


def test_png_without_chromium_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(png, "_chromium", lambda: None)
    code, _ = call(["report", TF221, "--png", str(tmp_path / "c.png"), "--svg", str(tmp_path / "c.svg"),
                    "--pair", "inference:clear_session"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "apt-get install chromium" in err and "--svg" in err and os.listdir(tmp_path) == []


def chromium_or_skip():
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        pytest.skip("no PNG exporter here: Debian's chromium is not installed (apt-get install chromium; .ci/run does)")


def records_file(tmp_path, *records, name="r.json"):
    data = payload()
    data["records"] = list(records)
    return write_json(tmp_path / name, data)


def png_and_svg(tmp_path, paths, *argv):
    """`report --png --svg` of one picture: (the PNG's rows of pixels, its size, the SVG's root)."""
    out_png, out_svg = tmp_path / "p.png", tmp_path / "p.svg"
    code, _ = call(["report", *paths, "--png", str(out_png), "--svg", str(out_svg), *argv])
    assert code == 0
    data = out_png.read_bytes()
    return pixels.read_png(data), pixels.size(data), ET.parse(out_svg).getroot()


def band(rows, colour, top, bottom, scale=2, right=None):
    """The device rows (from `top`'s) of the pixels of `colour` between SVG y `top` and `bottom` (a panel's frame),
    left of SVG x `right` where given (anti-aliased text has grey edges)."""
    part = [row[:int(right * scale)] if right else row for row in rows[int(top * scale):int(bottom * scale) + 1]]
    return sorted({y for x, y in pixels.where(part, colour)})


def rss_frame(root):
    [frame] = [r for r in panel(root, "RSS").iter(f"{SVG}rect") if r.get("fill") == "none"]
    return float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))


def test_png_of_a_flat_pair_draws_a_flat_line_and_of_a_leak_a_climb(tmp_path):
    chromium_or_skip()
    spans = {}
    for name, slope in (("flat", 0), ("leak", MIB)):
        path = records_file(tmp_path, record_with(slope, heap_slope=slope, strategy="clear_session"), name=name)
        rows, (width, height), root = png_and_svg(tmp_path, [path], "--pair", "sweep:clear_session")
        assert (width, height) == (2 * int(root.get("width")), 2 * int(root.get("height")))  # twice the SVG's size
        top, bottom = rss_frame(root)
        drawn = band(rows, draw.PALETTE[0], top, bottom)  # repeat 1's line inside the RSS panel
        assert drawn, f"{name}: no pixel of the line inside the RSS panel"
        spans[name] = (drawn[-1] - drawn[0]) / (2 * (bottom - top))
    assert spans["flat"] < 0.25 and spans["leak"] > 0.6  # a 0.8 MiB band on 4 MiB of axis; 40 MiB over the axis


def test_png_of_a_short_chart_is_drawn_to_its_bottom(tmp_path):
    # two strategies: a 138 px chart, which chromium's screenshot of a window that short left blank under its legend
    chromium_or_skip()
    rows, (_, height), root = png_and_svg(tmp_path, [TF212, TF221], "--metric", "growth_per_iter", "--loop",
                                          "inference")
    assert int(root.get("height")) < 150 and height == 2 * int(root.get("height"))
    [frame] = [r for r in root if r.tag == f"{SVG}rect" and r.get("fill") == "none"]
    top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
    assert pixels.last_drawn_row(rows) > 2 * bottom + 20  # the axis' numbers and its unit under the frame
    assert pixels.last_drawn_row(rows) > height - 2 * 12
    middle = (top + bottom) / 2
    for colour in draw.PALETTE[:2]:  # each version's dots in both strategies' rows
        assert band(rows, colour, top, middle) and band(rows, colour, middle, bottom), colour


def test_png_of_one_release_chart_and_a_tall_picture_are_drawn_whole(tmp_path):
    chromium_or_skip()
    for argv in (["--metric", "peak_loop", "--loop", "sweep"], ["--pair", "inference:clear_session"]):
        rows, (width, height), root = png_and_svg(tmp_path, [TF221], *argv)
        assert (width, height) == (2 * int(root.get("width")), 2 * int(root.get("height")))
        assert pixels.last_drawn_row(rows) > height - 2 * 12, argv  # the lowest text of the picture is drawn


def lowest_text(root):
    """The SVG y of the lowest text baseline of a picture (rotated labels, placed by a transform, left out)."""
    return max(float(t.get("y")) for t in root.iter(f"{SVG}text") if t.get("y"))


def test_every_picture_kind_goes_through_the_one_exporter_whole(tmp_path):
    # the page's pictures too: a metric over versions, a pair's curve at the page's and a notebook's size, the
    # strategies side by side, the atlas' change picture; each PNG twice its SVG's size and drawn to its lowest text
    from kerasbench import atlas

    chromium_or_skip()
    flat, leak = record_with(0, strategy="a"), record_with(MIB, heap_slope=MIB, strategy="a", version="2.21.0")
    groups = {"2.12.1": {("sweep", "a"): (flat, "p")}, "2.21.0": {("sweep", "a"): (leak, "p")}}
    growth = METRICS["growth_per_iter"]
    drawn = {"plot": pictures.version_plot(growth, "sweep", ["a"], ["2.12.1", "2.21.0"], groups),
             "curve": draw.curve_svg(pictures.curve_data(flat, "sweep", "a", "2.12.1")),
             "chart": pictures.strategy_chart(growth, "sweep", ["a"], ["2.21.0"], groups),
             "spark": atlas.spark(flat, leak, "2.12.1", "2.21.0")}
    for kind, svg in drawn.items():
        root = ET.fromstring(svg.replace('<svg class="spark" ', f'<svg xmlns="{SVG[1:-1]}" class="spark" ', 1))
        data = png.from_svg(svg)
        rows = pixels.read_png(data)
        assert pixels.size(data) == (2 * int(float(root.get("width"))), 2 * int(float(root.get("height")))), kind
        assert pixels.last_drawn_row(rows) >= 2 * lowest_text(root) - 4, kind
        if kind == "spark":  # grey: the flat side, one band; red: the leak, across the picture's height
            grey, red = band(rows, "#999", 2, 62, right=180), band(rows, "#c33", 2, 62, right=180)
            assert grey and red and grey[-1] - grey[0] < 0.1 * 120 and red[-1] - red[0] > 0.5 * 120


# ---------------------------------------------------------------- a notebook's Results


def test_results_html_shows_the_table_and_a_curve_per_record():
    results = api.Results([record_with(0, strategy="control_noop"), record_with(MIB, strategy="control_leak")])
    page = results._repr_html_()
    assert page.startswith("<table>") and page.count("<svg") == 2
    assert "control_noop" in page and "heap (MiB)" in page
    many = api.Results([record_with(0, strategy=f"s{i}", n=10) for i in range(15)])
    page = many._repr_html_()
    assert page.count("<svg") == api.Results.CURVES_SHOWN and "3 more record(s) not drawn" in page

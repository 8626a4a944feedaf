"""kerasbench report: the page holds what the records say, refuses what compare refuses, and works in a browser."""

import copy
import html.parser
import io
import os
import re
import shutil

import pytest

from kerasbench import METRICS, dashboard, report, rule
from kerasbench.cli import main
from test_compare import TF212, TF221, _tree, as_version, payload, write  # compare's fixture builders

KIB, MIB = 1024, 1024**2


class Node:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.parts = tag, dict(attrs), parent, []  # parts: text and nodes in order

    @property
    def children(self):
        return [p for p in self.parts if isinstance(p, Node)]

    @property
    def text(self):
        """Own text, without the children's."""
        return "".join(p for p in self.parts if isinstance(p, str))

    def find_all(self, tag=None, **attrs):
        """Descendants with this tag and these attribute values (class_ matches one class)."""
        found = []
        for child in self.children:
            classes = (child.attrs.get("class") or "").split()
            if (tag is None or child.tag == tag) and all(
                    v in classes if k == "class_" else child.attrs.get(k.replace("_", "-")) == v
                    for k, v in attrs.items()):
                found.append(child)
            found += child.find_all(tag, **attrs)
        return found

    def all_text(self):
        return "".join(p if isinstance(p, str) else p.all_text() for p in self.parts)


class Tree(html.parser.HTMLParser):
    """Just enough of a DOM to read the page back (the standard library has no HTML tree)."""

    VOID = {"meta", "br", "line", "circle", "rect", "polyline", "link", "img", "input"}

    def __init__(self, text):
        super().__init__()
        self.root = self.node = Node("root", {})
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.node)
        self.node.parts.append(node)
        if tag not in self.VOID:
            self.node = node

    def handle_startendtag(self, tag, attrs):
        self.node.parts.append(Node(tag, attrs, self.node))

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            while self.node.tag != tag:  # tolerate an unclosed element
                self.node = self.node.parent
            self.node = self.node.parent

    def handle_data(self, data):
        self.node.parts.append(data)


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def page(tmp_path, paths, *extra):
    path = tmp_path / "out" / "report.html"
    path.parent.mkdir(exist_ok=True)
    code, text = call(["report", *map(str, paths), "--output", str(path), *extra])
    assert code == 0 and str(path) in text
    return path.read_text(), Tree(path.read_text()).root


def records_of(*paths):
    import json

    return {(r["loop"], r["strategy"], r["environment"]["tensorflow"]): r
            for p in paths for r in json.loads(open(p).read())["records"]}


def heat(root, loop, metric):
    [section] = root.find_all("section", data_loop=loop)
    [table] = section.find_all("table", data_metric=metric)
    return table


# ---------------------------------------------------------------- content


def test_heat_tables_hold_the_records_values(tmp_path):
    text, root = page(tmp_path, [TF212, TF221])
    records = records_of(TF212, TF221)
    assert [s.attrs["data-loop"] for s in root.find_all("section")] == ["sweep", "inference"]  # registry order
    for (loop, strategy, version), record in records.items():
        for metric in ("growth_per_iter", "peak_loop"):
            table = heat(root, loop, metric)
            versions = [th.all_text().replace("baseline", "") for th in table.find_all("th", class_="ver")]
            assert versions == ["2.12.1", "2.21.0"]  # a column per version, oldest first
            [row] = table.find_all("tr", data_strategy=strategy)  # a row per strategy
            td = row.find_all("td")[versions.index(version)]
            value = record["summary"][metric]
            assert float(td.attrs["data-value"]) == pytest.approx(value)
            scale = KIB if metric == "growth_per_iter" else MIB
            assert td.text == METRICS[metric].report.text(value)
            assert f"{value / scale:.0f}".lstrip("-") in td.text
            assert "background:hsl(" in td.attrs["style"]
    sweep = heat(root, "sweep", "growth_per_iter")
    [row] = sweep.find_all("tr", data_strategy="clear_session_del_gc")
    base, new = row.find_all("td")
    assert new.find_all("span", class_="cmp")[0].attrs["class"] == "cmp regressed"  # compare's verdict
    assert "vs TF 2.12.1: regressed" in new.attrs["title"] and "(CI and resolution)" in new.attrs["title"]
    assert not base.find_all("span", class_="cmp")  # the baseline is not judged against itself
    own = rule.pair_verdict(records[("sweep", "clear_session_del_gc", "2.12.1")]["summary"])
    assert row.find_all("span", class_="run")[0].text == own  # the pair's one verdict, RSS and heap together
    [improved] = heat(root, "inference", "growth_per_iter").find_all("tr", data_strategy="clear_session")
    assert improved.find_all("span", class_="improved")
    header = root.find_all("header")[0].all_text()
    assert "Baseline: TF 2.12.1" in header and "1 regressed, 1 improved, 1 unchanged" in header
    assert "How to read it" in header and "AMD EPYC" in header


def test_a_plot_per_loop_and_metric_with_a_line_per_strategy(tmp_path):
    _, root = page(tmp_path, [TF212, TF221])
    for section in root.find_all("section"):
        plots = section.find_all("div", class_="plots")[0].find_all("svg", class_="plot")
        assert len(plots) == 3  # growth, peak, and the loop's own peak (over its baseline)
        strategies = [tr.attrs["data-strategy"] for tr in section.find_all("table")[0].find_all("tr")
                      if "data-strategy" in tr.attrs]
        for svg in plots:
            assert [g.attrs["data-name"] for g in svg.find_all("g", class_="line")] == strategies
            assert svg.find_all("polyline")


def test_a_curve_per_cell_with_every_repeat(tmp_path):
    data = as_version(payload(), "2.22.0")
    record = data["records"][0]
    record["repeats"].append(copy.deepcopy(record["repeats"][0]) | {"repeat": 1})
    _, root = page(tmp_path, [TF212, TF221, write(tmp_path / "two.json", data)])
    for section in root.find_all("section"):
        cells = [td for td in section.find_all("td") if "data-curve" in td.attrs]
        ids = {td.attrs["data-curve"] for td in cells}
        figures = {f.attrs["id"]: f for f in section.find_all("figure", class_="curve")}
        assert ids == set(figures) and len(ids) == len(cells) / 3  # one curve, shared by the growth and peak cells
        assert not any("hidden" in f.attrs for f in figures.values())  # shown without a click
    [row] = heat(root, "sweep", "growth_per_iter").find_all("tr", data_strategy="clear_session_del_gc")
    curve = row.find_all("td")[2].attrs["data-curve"]
    [figure] = root.find_all("figure", id=curve)
    assert len(figure.find_all("g", class_="line")) == 2  # repeats overlaid
    assert "TF 2.22.0" in figure.all_text()


def test_a_run_badge_leads_with_the_pairs_one_verdict(tmp_path):
    # RSS flat, the heap growing: the pair grows (rule.pair_verdict), and the tooltip names both verdicts
    data = payload(TF221)
    s = next(r for r in data["records"] if (r["loop"], r["strategy"]) == ("sweep", "clear_session_del_gc"))["summary"]
    s.update(verdict="flat", heap_verdict="grows", growth_kind="leak")
    text, root = page(tmp_path, [write(tmp_path / "tf221.json", data)])
    [row] = heat(root, "sweep", "growth_per_iter").find_all("tr", data_strategy="clear_session_del_gc")
    [td] = row.find_all("td")
    assert [b.text for b in td.find_all("span", class_="run")] == ["grows", "leak"]
    assert "verdict grows (RSS flat, heap grows)" in td.attrs["title"]
    assert "each pair's one verdict, RSS and heap together" in root.find_all("header")[0].all_text()


def test_environment_table_has_a_row_per_run(tmp_path):
    _, root = page(tmp_path, [TF212, TF221])
    [env] = root.find_all("table", class_="env")
    rows = [[td.all_text() for td in tr.find_all("td")] for tr in env.find_all("tbody")[0].find_all("tr")]
    assert [r[:4] for r in rows] == [["2.12.1", "2.12.0", "1.24.3", "3.11.7"], ["2.21.0", "3.15.1", "2.4.6", "3.11.7"]]
    heads = [th.all_text() for th in env.find_all("th")]
    for column in ("machine", "device", "allocator", "profile", "floor", "kerasbench", "commit"):
        assert column in heads
    assert "AMD EPYC, 2 cores" in rows[0][heads.index("machine")] and rows[0][heads.index("commit")] == "unknown"
    assert rows[0][heads.index("floor")].startswith("64 KiB/iter")


def test_skipped_and_failed_cells_say_why_and_a_stopped_curve_is_kept(tmp_path):
    data = as_version(payload(), "2.22.0")
    skipped, stopped = data["records"][0], data["records"][1]
    skipped.update(status="skipped", reason="needs an API this TF lacks",
                   repeats=[{"repeat": 0, "status": "skipped", "reason": "needs an API this TF lacks", "result": None,
                             "environment": None}])
    rss = stopped["repeats"][0]["result"]["series"]["rss"]
    stopped.update(status="stopped", reason="stopped: exceeded memory cap 1 GiB at iteration 3")
    stopped["repeats"][0].update(status="stopped", result=None, partial_rss=rss[:3])
    _, root = page(tmp_path, [TF212, TF221, write(tmp_path / "bad.json", data)])
    [row] = heat(root, skipped["loop"], "growth_per_iter").find_all("tr", data_strategy=skipped["strategy"])
    td = row.find_all("td")[2]
    assert td.text == "n/a" and "needs an API this TF lacks" in td.attrs["title"] and "data-curve" not in td.attrs
    [row] = heat(root, stopped["loop"], "peak_loop").find_all("tr", data_strategy=stopped["strategy"])
    td = row.find_all("td")[2]
    assert td.text == "failed" and "exceeded memory cap" in td.attrs["title"]
    [figure] = root.find_all("figure", id=td.attrs["data-curve"])
    assert "(stopped)" in figure.all_text()


def test_gpu_peaks_appear_only_when_a_record_ran_on_a_gpu(tmp_path):
    text, root = page(tmp_path, [TF212, TF221])
    assert not root.find_all("table", data_metric="gpu_alloc_peak") and "NVML" not in text
    data = as_version(payload(), "2.22.0")
    data["records"][0]["summary"].update(gpu_alloc_peak=300 * MIB, gpu_reserved_peak=1024 * MIB)
    data["records"][0]["environment"]["gpus"] = [{"name": "NVIDIA L4", "compute_capability": [8, 9]}]
    _, root = page(tmp_path, [TF212, TF221, write(tmp_path / "gpu.json", data)])
    loop, strategy = data["records"][0]["loop"], data["records"][0]["strategy"]
    for metric, mib in (("gpu_alloc_peak", 300), ("gpu_reserved_peak", 1024)):
        [row] = heat(root, loop, metric).find_all("tr", data_strategy=strategy)
        assert row.find_all("td")[2].text == str(mib) and row.find_all("td")[0].text == "n/a"
    [section] = root.find_all("section", data_loop=loop)
    assert len(section.find_all("div", class_="plots")[0].find_all("svg", class_="plot")) == 5
    assert "NVIDIA L4" in root.find_all("table", class_="env")[0].all_text()


def test_one_version_is_a_report_without_verdicts_against_a_baseline(tmp_path):
    text, root = page(tmp_path, [TF221])
    assert root.find_all("table", class_="heat") and not root.find_all("span", class_="cmp")
    assert "no verdicts against a baseline" in text


def test_the_page_is_self_contained(tmp_path):
    text, root = page(tmp_path, [TF212, TF221], "--baseline", "2.21.0")
    assert not root.find_all("link") and all("src" not in s.attrs for s in root.find_all("script"))
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {"http://www.w3.org/2000/svg"}  # a namespace, not a fetch
    assert "Baseline: TF 2.21.0" in root.find_all("header")[0].all_text()
    assert os.listdir(tmp_path / "out") == ["report.html"]  # written atomically: no temp file left


def test_default_output_is_beside_the_dashboard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, text = call(["report", TF212, TF221])
    assert code == 0 and (tmp_path / ".asv" / "html" / "kerasbench-report.html").exists()
    assert report.DEFAULT_OUTPUT in text


# ---------------------------------------------------------------- bad input: compare's errors


def _bad_inputs(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "corrupt.json").write_text('{"schema": 1, "records": [')
    schema = as_version(payload(), "2.22.0")
    schema["schema"] = 2
    for r in schema["records"]:
        r["schema"] = 2
    (tmp_path / "twice").mkdir()  # one argument holding a pair twice (two arguments of one release are two sides)
    write(tmp_path / "twice" / "a.json", payload())
    write(tmp_path / "twice" / "again.json", payload())
    return {
        "no records": ([str(tmp_path / "empty")], "No records"),
        "unknown baseline": ([TF212, TF221, "--baseline", "2.99"], "Expected one of: 2.12.1, 2.21.0"),
        "mixed schema": ([TF221, write(tmp_path / "schema2.json", schema)], "schema"),
        "corrupt JSON": ([TF212, str(tmp_path / "corrupt.json")], "Cannot parse"),
        "duplicate pair": ([TF212, str(tmp_path / "twice")], "Duplicate"),
    }


@pytest.mark.parametrize("case", ["no records", "unknown baseline", "mixed schema",
                                  "corrupt JSON",
                                  "duplicate pair"])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, capsys, case):
    argv, needle = _bad_inputs(tmp_path)[case]
    out = tmp_path / "out"
    out.mkdir()
    compare_code, _ = call(["compare", *argv])
    compare_err = capsys.readouterr().err
    code, text = call(["report", *argv, "--output", str(out / "r.html")])
    err = capsys.readouterr().err
    assert code == compare_code == 2 and text == ""
    assert err == compare_err and err.count("\n") == 1 and needle in err  # the same line as compare's
    assert os.listdir(out) == []
    monkeypatch.chdir(out)  # nor the default folder
    assert call(["report", *argv])[0] == 2 and os.listdir(out) == []


# ---------------------------------------------------------------- publish


def test_publish_refreshes_the_report_from_the_newest_commit(tmp_path):
    _tree(tmp_path, "box", "0123abcd", payload(TF212), "env-tensorflow-cpu2.12.1")
    _tree(tmp_path, "box", "0123abcd", payload(TF221), "env-tensorflow-cpu2.21.0")
    old = _tree(tmp_path, "box", "fedcba98", payload(TF221), "env-tensorflow-cpu2.21.0")
    os.utime(os.path.dirname(old), (1, 1))  # an older commit's run: left out, not an error
    html_dir = tmp_path / "html"
    html_dir.mkdir()
    out = io.StringIO()
    path = dashboard.write_beside_dashboard(str(tmp_path / "records"), str(html_dir), out)
    assert path == str(html_dir / report.FILENAME) and os.path.exists(path)
    assert "box, commit 0123abcd" in out.getvalue() and "1 other host/commit" in out.getvalue()
    assert "0123abcd" in open(path).read()  # the commit, in the environment table
    atlas_page = html_dir / dashboard.ATLAS_FOLDER / "index.html"  # two versions: the atlas beside it, as `atlas` does
    assert "atlas: " in out.getvalue() and atlas_page.exists() and (atlas_page.parent / "atlas.json").exists()
    assert 'id="atlas"' in atlas_page.read_text()


def test_publish_without_records_or_with_bad_ones_leaves_no_report(tmp_path):
    out = io.StringIO()
    assert dashboard.write_beside_dashboard(str(tmp_path / "records"), str(tmp_path), out) is None
    assert out.getvalue() == ""
    bad = tmp_path / "records" / "box" / "0123abcd-env"
    bad.mkdir(parents=True)
    (bad / "sweep.json").write_text("{")
    assert dashboard.write_beside_dashboard(str(tmp_path / "records"), str(tmp_path), out) is None
    assert out.getvalue().startswith("no HTML report: Cannot parse") and not os.path.exists(tmp_path / report.FILENAME)


# ---------------------------------------------------------------- in a browser


def test_report_works_in_headless_chromium(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (test extra)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)")
    path = report.write([TF212, TF221], str(tmp_path / "report.html"))
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page_ = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors, requests = [], []
        page_.on("pageerror", lambda e: errors.append(str(e)))
        page_.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page_.on("request", lambda r: requests.append(r.url))
        page_.goto("file://" + path)
        sizes = page_.eval_on_selector_all(".plots svg.plot", "els => els.map(e => [e.getBoundingClientRect().width, "
                                           "e.getBoundingClientRect().height, e.querySelectorAll('polyline').length])")
        cell = page_.locator('section[data-loop="inference"] table[data-metric="growth_per_iter"] '
                             'td[data-curve]').nth(1)
        curve = cell.get_attribute("data-curve")
        visible_before = page_.is_visible(f"#{curve}")
        cell.click()
        selected = page_.eval_on_selector_all("figure.curve.sel", "els => els.map(e => e.id)")
        in_view = page_.eval_on_selector(f"#{curve}", "e => { const r = e.getBoundingClientRect(); "
                                         "return r.top >= -1 && r.bottom <= window.innerHeight + 1; }")
        box = page_.locator(f"#{curve} svg").bounding_box()
        hidden = page_.eval_on_selector_all("figure.curve", "els => els.filter(e => e.hidden).length")
        # nothing drawn outside its picture: every line, polyline and text inside its svg's box
        outside = page_.eval_on_selector_all("svg.plot", """els => els.flatMap(svg => {
            const b = svg.getBoundingClientRect();
            return [...svg.querySelectorAll('line, polyline, circle, text, rect')].filter(e => {
              const r = e.getBoundingClientRect();
              return r.width + r.height > 0 && (r.left < b.left - 1 || r.right > b.right + 1 ||
                                                r.top < b.top - 1 || r.bottom > b.bottom + 1);
            }).map(e => svg.getAttribute('aria-label') + ': ' + e.outerHTML.slice(0, 80));
        })""")
        browser.close()
    assert errors == []
    assert requests == ["file://" + path]  # nothing fetched but the page itself
    views = [m for m in METRICS.values() if m.report and not m.report.optional]  # growth, peak, peak over baseline
    assert len(sizes) == 2 * len(views) == 6  # per view, one plot for each of the fixtures' two loop shapes
    assert all(w > 100 and h > 100 and lines > 0 for w, h, lines in sizes)
    assert visible_before and selected == [curve] and in_view  # shown at once; a click marks it and brings it in
    assert box["width"] > 100 and box["height"] > 100 and hidden == 0
    assert outside == []


def test_kerasbench_publish_writes_the_report_beside_the_dashboard(tmp_path, monkeypatch):
    import subprocess

    from kerasbench import dashboard

    (tmp_path / "asv.conf.json").write_text('{"version": 1, "repo": ".", "html_dir": ".asv/html"}')
    _tree(tmp_path / ".asv", "box", "0123abcd", payload(TF212), "env-tensorflow-cpu2.12.1")
    _tree(tmp_path / ".asv", "box", "0123abcd", payload(TF221), "env-tensorflow-cpu2.21.0")
    (tmp_path / ".asv" / "html").mkdir()  # what asv publish leaves (it is not run here)
    monkeypatch.delenv("KERASBENCH_RECORDS_DIR", raising=False)
    monkeypatch.setattr(dashboard.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    out = io.StringIO()
    dashboard.publish_dashboard(str(tmp_path / "asv.conf.json"), cdn=True, out=out)
    path = tmp_path / ".asv" / "html" / report.FILENAME
    assert path.exists() and f"report: {path}" in out.getvalue()

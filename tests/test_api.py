"""kerasbench.measure (kerasbench.api): loops, repro files and functions measured into Results with a readable repr."""

import os
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

import kerasbench
from kerasbench import UsageError, api, rule
from kerasbench.console import SPARKS
from kerasbench.units import KIB

KEPT = []


def keep_megabyte():
    KEPT.append(np.ones(KIB * KIB // 8))


def test_import_stays_tf_free():
    import subprocess

    code = "import sys, kerasbench; kerasbench.measure; kerasbench.testing; print('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))).stdout.strip() == "False"


def test_measure_loop_returns_records_with_a_table_repr():
    results = kerasbench.measure("control", strategies="control_noop,control_leak_native", iterations=10, warmup=1,
                                 leak_bytes=256 * KIB)
    assert isinstance(results, api.Results) and len(results) == 2
    assert results.verdicts() == {("control", "control_noop"): "flat", ("control", "control_leak_native"): "grows"}
    text = repr(results)
    lines = text.splitlines()
    # the verdicts first, then the figures in tables of at most 100 columns, each led by loop and strategy
    assert lines[0].split() == ["loop", "strategy", "verdict", "RSS", "heap", "what", "grew", "measured"]
    assert set(lines[1]) <= {"-", " "} and all(len(line) <= 100 for line in lines if not line.startswith(
        ("margin", "every row", "TF ", "RSS per iteration:")))
    assert "control_leak_native  grows" in text
    curve = lines.index(next(line for line in lines if "RSS per iteration" in line and "KiB/iter" in line))
    assert any(c in lines[curve + 3] for c in SPARKS[1:]) and "control_leak_native" in lines[curve + 3]
    assert "margin: RSS 128, heap 8 KiB/iteration (the default" in text
    assert "resolution 101.3 KiB/iteration, from default" in text


def test_html_repr_is_a_table_with_every_record_escaped():
    results = kerasbench.measure("control", strategies=["control_noop"], iterations=5, warmup=0)
    results[0]["strategy"] = "<script>x</script>"
    page = results._repr_html_()
    cells = []

    class Cells(HTMLParser):
        def handle_data(self, data):
            cells.append(data)

        def handle_starttag(self, tag, attrs):
            assert tag != "script"

    Cells().feed(page)
    assert page.startswith("<table>") and "<script>x</script>" in cells and "flat" in cells


def test_measure_body_and_repro_file(tmp_path):
    results = kerasbench.measure(body=keep_megabyte, iterations=8, warmup=3)
    # the pair's one verdict: RSS may hold 1 MiB a call for the first iterations (freed pages take it), the heap not
    assert [(r["loop"], r["strategy"], rule.pair_verdict(r["summary"])) for r in results] == \
        [("repro", "reuse_model", "grows")]
    assert not os.path.exists(results[0]["spec"]["repro"])  # the generated file is gone with its folder
    saved = results.save(str(tmp_path / "out.json"))
    from kerasbench.loading import load_records

    assert [r["strategy"] for r, _, _ in load_records([saved])] == ["reuse_model"]


def test_measure_needs_exactly_one_subject():
    with pytest.raises(UsageError, match="exactly one of loop=NAME, repro=FILE or body=FUNCTION"):
        kerasbench.measure()
    with pytest.raises(UsageError, match="exactly one"):
        kerasbench.measure("control", body=keep_megabyte)
    with pytest.raises(UsageError, match="Unknown loop"):
        kerasbench.measure("nope")


def test_runspec_still_measures_one_record():
    from kerasbench import RunSpec

    record = kerasbench.measure(RunSpec("control", "control_noop", iterations=3, warmup=0))
    assert record["status"] == "ok" and record["strategy"] == "control_noop"


def test_repro_for_imports_by_module_and_name(tmp_path):
    path = api.repro_for(keep_megabyte, folder=str(tmp_path))
    text = open(path).read()
    assert "_load('test_api', 'keep_megabyte'," in text and os.path.dirname(os.path.abspath(__file__)) in text
    from kerasbench import repro

    assert repro.check(path) == path  # the file meets the repro contract
    assert api.importable(keep_megabyte) and not api.importable(lambda: None)


def test_measure_tf_finds_the_config_from_a_notebooks_folder(tmp_path, monkeypatch):
    """A notebook runs from its own folder: `tf=` finds asv.matrix.json as `run --tf` does (the clone's)."""
    from kerasbench import asvconf, environment

    asked = []
    monkeypatch.setattr(environment, "python_for_tf",
                        lambda config, tf, *a, **k: asked.append(config) or sys.executable)
    monkeypatch.delenv(asvconf.CONFIG_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    kerasbench.measure("control", strategies="control_noop", iterations=3, warmup=0, tf="2.21.0", floor_kib=64)
    assert asked == [os.path.join(asvconf.clone_dir(), "asv.matrix.json")]


def test_progress_is_shown_by_default_in_a_notebook_only(monkeypatch, capsys):
    kwargs = dict(strategies="control_noop", iterations=3, warmup=0)
    kerasbench.measure("control", **kwargs)
    assert "starting a fresh worker" not in capsys.readouterr().err  # a script or a test: silent
    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})  # Jupyter's kernel shell, as IPython names it
    fake = type(sys)("IPython")
    fake.get_ipython = lambda: ZMQInteractiveShell()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert api.in_notebook()
    kerasbench.measure("control", **kwargs)
    err = capsys.readouterr().err
    assert "[1/1] control × control_noop: starting a fresh worker (0 of 1 done" in err and "(1 of 1 done" in err
    kerasbench.measure("control", progress=False, **kwargs)
    assert capsys.readouterr().err == ""


def test_a_body_s_rows_say_what_ran_not_reuse_model(capsys):
    """One name for a body's pair in the table, the charts, the progress and verdicts()' keys (before: `body
    keep_megabyte × as written` in the table, `repro × reuse_model` in the rest)."""
    results = kerasbench.measure(body=keep_megabyte, strategies="reuse_model,gc_collect_only", iterations=4, warmup=1,
                                 progress=True)
    lines = repr(results).splitlines()
    assert lines[2].split()[:4] == ["body", "keep_megabyte", "as", "written"]
    assert lines[3].split()[:3] == ["body", "keep_megabyte", "gc_collect_only"]
    assert set(results.verdicts()) == {("body keep_megabyte", "as written"), ("body keep_megabyte", "gc_collect_only")}
    err, page = capsys.readouterr().err, results._repr_html_()
    assert "body keep_megabyte × as written:" in err and "body keep_megabyte × gc_collect_only:" in err
    assert "body keep_megabyte × as written, TF" in page and "body keep_megabyte × gc_collect_only, TF" in page
    assert "repro × " not in err + page

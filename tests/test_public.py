"""Public reports as rows (kerasbench.public): the registry against its files, the agreement rule's known answers,
the table from synthetic records, and `kerasbench reports`' bad input. Nothing here runs TensorFlow."""

import io
import pathlib
import shlex

import pytest

from kerasbench import UsageError, compare, public, repro, strategies_for
from kerasbench.cli import build_parser, main

FOLDER = pathlib.Path(public.FOLDER)


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


# ---------------------------------------------------------------- the registry


def test_every_report_file_is_registered_and_every_name_has_its_file():
    files = {p.stem for p in FOLDER.glob("*.py") if p.name != "__init__.py"}
    assert files == set(public.NAMES)
    assert len(public.NAMES) == len(set(public.NAMES)) == len(public.REPORTS)


@pytest.mark.parametrize("report", public.REPORTS, ids=lambda r: r.name)
def test_each_report_has_its_metadata_and_meets_the_repro_contract(report):
    assert repro.check(report.path) == report.path
    assert report.url.startswith("https://github.com/") and report.url.rsplit("/", 1)[1].isdigit()
    assert report.title and report.symptom and report.claimed_grows
    assert report.strategy in strategies_for("repro"), report.strategy
    assert not set(report.claimed_grows) & set(report.claimed_flat)
    assert report.url.rsplit("/", 1)[1] in report.name  # the file is named by its issue's number


def test_a_file_without_the_metadata_is_refused(tmp_path):
    path = tmp_path / "r.py"
    path.write_text('URL = "https://github.com/a/b/issues/1"\nTITLE = "t"\ndef iteration(ctx, model):\n    pass\n')
    with pytest.raises(ValueError, match="CLAIMED_GROWS, CLAIMED_FLAT, SYMPTOM, STRATEGY"):
        public.metadata(str(path))
    path.write_text("URL = compute()\n")
    with pytest.raises(ValueError, match="URL is not a literal"):
        public.metadata(str(path))


def test_each_reports_command_parses_and_names_its_file_and_strategy():
    parser = build_parser()
    for report in public.REPORTS:
        args = parser.parse_args(shlex.split(report.command("2.21.0"))[1:])
        assert (args.repro, args.strategy, args.tf) == (
            f"kerasbench/examples/reports/{report.name}.py", report.strategy, "2.21.0")
        assert (FOLDER.parent.parent.parent / args.repro).resolve() == pathlib.Path(report.path).resolve()


# ---------------------------------------------------------------- the agreement rule


@pytest.mark.parametrize("grows,flat,readings,answer", [
    (("2.13",), (), {"2.13.1": "grows"}, public.YES),
    (("2.13",), (), {"2.13.1": "flat"}, public.NO),
    (("2.13",), (), {"2.13.1": "inconclusive"}, public.INCONCLUSIVE),
    (("2.13",), (), {"2.13.1": "failed"}, public.INCONCLUSIVE),
    (("2.13",), (), {"2.21.0": "grows"}, public.NOT_MEASURED),  # growth elsewhere is not the claim
    (("2.13",), (), {}, public.NOT_MEASURED),
    (("2.1",), (), {"2.13.1": "grows"}, public.NOT_MEASURED),  # 2.1 names 2.1.x, not 2.13.x
    (("2.11", "2.12"), ("2.9",), {"2.9.3": "flat", "2.12.1": "grows"}, public.YES),
    (("2.11", "2.12"), ("2.9",), {"2.9.3": "grows", "2.12.1": "grows"}, public.NO),  # fine on 2.9, says the claim
    (("2.11", "2.12"), (), {"2.11.1": "grows", "2.12.1": "flat"}, public.NO),  # one decided reading against it
    (("2.11", "2.12"), (), {"2.11.1": "grows", "2.12.1": "inconclusive"}, public.YES),
    (("2.16",), (), {"2.16.2+tf_keras": "grows"}, public.YES),  # a labelled column is its release
    (("1",), (), {"1.15.5": "grows"}, public.YES),
])
def test_agreement_known_answers(grows, flat, readings, answer):
    assert public.agreement(grows, flat, readings) == answer


# ---------------------------------------------------------------- records to rows to the table


def record(name, strategy, verdict, slope, status="ok", loop="repro"):
    return {"loop": loop, "strategy": strategy, "status": status,
            "spec": {"repro": f"/home/u/kerasbench/kerasbench/examples/reports/{name}.py"},
            "summary": {"verdict": verdict, "heap_verdict": verdict, "growth_per_iter": slope,
                        "heap_growth_per_iter": None if slope is None else slope / 2}}


def test_relabel_names_a_reports_records_and_leaves_the_others():
    mine = dict(record("tf33009_predict", "reuse_model", "flat", 0.0), spec={"repro": "/tmp/my_loop.py"})
    elsewhere = dict(record("x", "reuse_model", "flat", 0.0), spec={"repro": "/tmp/tf33009_predict.py"})
    loaded = [(record("tf33009_predict", "reuse_model", "flat", 0.0), "a.json", "2.21.0"), (mine, "b.json", "2.21.0"),
              (elsewhere, "c.json", "2.21.0"), (record("tf33009_predict", "x", "flat", 0.0, loop="sweep"), "d", "2")]
    assert [r["loop"] for r, _, _ in public.relabel(loaded)] == ["report:tf33009_predict", "repro", "repro", "sweep"]
    assert loaded[0][0]["loop"] == "repro"  # the caller's record is not changed


def groups_of(*cells):
    """compare's groups {version: {(loop, strategy): (record, path)}} of (version, record), as compare.group makes."""
    return compare.group([(r, f"{i}.json", v) for i, (v, r) in enumerate(cells)])


def test_two_reports_under_one_strategy_are_two_pairs_not_a_duplicate():
    groups = groups_of(("2.21.0", record("tf33009_predict", "reuse_model", "flat", 0.0)),
                       ("2.21.0", record("tf44176_shuffle", "reuse_model", "grows", 9e4)))
    assert set(groups["2.21.0"]) == {("report:tf33009_predict", "reuse_model"),
                                     ("report:tf44176_shuffle", "reuse_model")}
    with pytest.raises(UsageError, match="Duplicate record for TF 2.21.0 report:tf44176_shuffle × reuse_model"):
        groups_of(("2.21.0", record("tf44176_shuffle", "reuse_model", "flat", 0.0)),
                  ("2.21.0", record("tf44176_shuffle", "reuse_model", "grows", 9e4)))


def test_the_table_shows_each_release_and_the_agreement():
    groups = groups_of(
        ("2.21.0", record("tf124972_retracing", "clear_session_del_gc", "grows", 20480.0)),
        ("2.21.0", record("tf33009_predict", "reuse_model", "flat", 10.0)),
        ("2.20.0", record("tf124972_retracing", "clear_session_del_gc", "flat", -512.0)),
        ("2.21.0", record("tf61791_fit_clear_session", "reuse_model", "grows", 1.0)),  # not its reporter's strategy
        ("2.12.1", {"loop": "sweep", "strategy": "reuse_model", "status": "ok", "summary": {"verdict": "flat"}}),
    )
    versions, rows = public.rows(groups)
    assert versions == ["2.20.0", "2.21.0"]  # 2.12.1 measured no report
    assert [(r["report"].name, r["agrees"]) for r in rows] == [
        ("tf33009_predict", public.NOT_MEASURED), ("tf124972_retracing", public.NO)]
    md = public.render(groups, "markdown").splitlines()
    assert md[0] == "| report | claim | TF 2.20.0 | TF 2.21.0 | agrees with the claim? |"
    assert md[2].startswith("| [tf33009_predict](https://github.com/tensorflow/tensorflow/issues/33009) | grows on "
                            "TF 2.0.x; fine on TF 1.14.x: ")
    assert md[2].endswith("| not measured | flat: RSS +0.0, heap +0.0 KiB/it | not measured on the claimed release |")
    assert md[3].endswith("| flat: RSS -0.5, heap -0.2 KiB/it | grows: RSS +20.0, heap +10.0 KiB/it | "
                          "no (against: 2.20.0 flat; with it: 2.21.0 grows) |")  # which release it rests on
    text = public.render(groups, "text")
    assert "tf124972_retracing" in text and "[" not in text.splitlines()[1]
    html = public.html(groups)
    assert '<a href="https://github.com/tensorflow/tensorflow/issues/124972">' in html
    assert "grows: RSS +20.0, heap +10.0 KiB/it" in html


def test_a_failed_record_and_no_report_records():
    groups = groups_of(("2.21.0", record("tf44176_shuffle", "reuse_model", None, None, status="failed")))
    _, [row] = public.rows(groups)
    assert row["answers"]["2.21.0"] == ("failed", None, None) and row["agrees"] == public.NOT_MEASURED
    assert public.render({"2.21.0": {}}).startswith("No record measured a public report")
    assert public.html({"2.21.0": {}}) == ""


def test_markup_in_a_record_is_escaped():
    evil = record("tf33009_predict", "reuse_model", "<b>grows</b>", 1.0)
    evil["summary"]["verdict"] = "grows"
    evil["status"] = "<script>"
    assert "<script>" not in public.html(groups_of(("2.0.0", evil)))


# ---------------------------------------------------------------- the command


def test_reports_lists_each_reports_run(capsys):
    code, out = call(["reports", "--report", "tf33009_predict,tf124972_retracing", "--tf", "2.21.0"])
    assert code == 0
    assert out.count("kerasbench run --repro kerasbench/examples/reports/") == 2 and "--tf 2.21.0" in out


@pytest.mark.parametrize("argv,needle", [
    (["reports", "--report", "no_such_report"], "Unknown report 'no_such_report'; the reports: keras9151"),
    (["reports", "--report", "tf33009_predict,"], "Unknown report ''"),
])
def test_an_unknown_report_is_one_line_exit_2(argv, needle, capsys):
    code, out = call(argv)
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1


# ---------------------------------------------------------------- one real run (TensorFlow; a few seconds)


@pytest.mark.tf
def test_a_reports_real_record_is_its_own_row():
    """tf124972_retracing under its strategy, 2 iterations in a worker: it runs, and its record groups as its row."""
    pytest.importorskip("tensorflow")
    from kerasbench import RunSpec, measure

    report = public.BY_NAME["tf124972_retracing"]
    rec = measure(RunSpec("repro", report.strategy, iterations=2, warmup=1, repro=report.path))
    assert rec["status"] == "ok", rec.get("reason")
    version = rec["environment"]["tensorflow"]
    groups = compare.group([(rec, "r.json", version)])
    assert list(groups[version]) == [("report:tf124972_retracing", "clear_session_del_gc")]
    _, [row] = public.rows(groups)
    assert row["report"] is report and row["answers"][version][0] in ("grows", "flat", "inconclusive")


def test_a_nightly_is_not_the_claimed_release_and_a_default_floor_is_said():
    # tf124972's claim names 2.20.x and 2.21.x: a 2.21.0-dev nightly is neither (before, it counted against it)
    assert public.covers("2.21.0", ("2.21",)) and not public.covers("2.21.0-dev20250819", ("2.21",))
    at_default = record("tf61791_fit_clear_session", "clear_session_del_gc", "flat", 15 * 1024.0)
    at_default["summary"].update(floor=65536.0, floors_from={"rss": {"kind": "default"}})
    settled = record("tf61791_fit_clear_session", "clear_session_del_gc", "flat", 15 * 1024.0)
    settled["summary"].update(floor=65536.0, floors_from={"rss": {"kind": "given", "source": "default (no calibr"}})
    calibrated = record("tf61791_fit_clear_session", "clear_session_del_gc", "grows", 28 * 1024.0)
    calibrated["summary"].update(floor=32768.0, floors_from={"rss": {"kind": "calibration", "file": "c.json"}})
    nightly = record("tf61791_fit_clear_session", "clear_session_del_gc", "grows", 1.0)
    groups = groups_of(("2.11.1", at_default), ("2.12.1", calibrated), ("2.10.1", settled),
                       ("2.21.0-dev20250819", nightly))
    _, [row] = public.rows(groups)
    assert row["agrees"] == public.NO and row["because"] == "against: 2.11.1 flat; with it: 2.12.1 grows"
    md = public.render(groups).splitlines()[2]
    assert md.count("(64 KiB default floor: no calibration)") == 2  # 2.10.1 (a run's settled default) and 2.11.1
    assert "| grows: RSS +28.0, heap +14.0 KiB/it |" in md  # the calibrated cell: nothing added

"""TF and Keras nightlies: listings, dates, builds, windows and pins on trimmed real simple-API answers (offline),
and a nightly triage with fake environments (the bisection, the commit range, the clean-up)."""

import datetime
import io
import json
import os
import pathlib

import pytest

from kerasbench import environment, nightlies, releases
from kerasbench.cli import main
from kerasbench.errors import UsageError

from test_compare import synthetic

ROOT = pathlib.Path(__file__).resolve().parent.parent
MATRIX = str(ROOT / "asv.matrix.json")
# the package index of 2026-12-02, trimmed: tf-nightly(-cpu) cp311 Linux and Windows wheels of 2026-02-01..10,
# 05-10..06-20, 08-28..09-25 and 10-18..31; keras-nightly and tb-nightly builds of some of those days
PYPI = str(ROOT / "tests" / "fixtures" / "pypi")
KIB = 1024


@pytest.fixture(autouse=True)
def offline_index(monkeypatch):
    monkeypatch.setenv("KERASBENCH_PYPI", PYPI)
    nightlies._index.cache_clear()
    yield
    nightlies._index.cache_clear()


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_a_listing_holds_the_wheels_this_machine_installs_oldest_first():
    cpu = nightlies.listing("tf-nightly-cpu")
    assert cpu and all(n.package == "tf-nightly-cpu" and n.flavour == "cpu" for n in cpu)
    assert [n.version for n in cpu] == sorted((n.version for n in cpu), key=releases.version_key)
    assert cpu[-1].version == "2.22.0.dev20260905" and cpu[-1].day == datetime.date(2026, 9, 5)
    assert cpu[-1].size > 200 * 1024**2 and cpu[-1].uploaded.startswith("2026-09-05")
    # a day with only a Windows wheel is not installable here
    doc = {"files": [{"filename": "tf_nightly_cpu-2.22.0.dev20260101-cp311-cp311-win_amd64.whl",
                      "upload-time": "2026-01-01T00:00:00Z", "size": 1}]}
    assert nightlies.listing("tf-nightly-cpu", doc=doc) == []
    # TensorBoard's nightlies are alphas with the day in them; Keras' carry the build hour
    assert nightlies.listing("tb-nightly")[-1].day == datetime.date(2025, 10, 23)
    assert nightlies.listing("keras-nightly")[-1].hour == datetime.datetime(2026, 10, 27, 4)


def test_the_newest_nightly_is_the_full_build_when_the_cpu_build_has_stopped():
    chosen, note = nightlies.pick_tf("nightly")
    assert (chosen.package, chosen.version) == ("tf-nightly", "2.23.0.dev20261026")
    assert "the full (CUDA) build" in note


def test_a_day_with_a_cpu_build_gets_it_and_a_day_without_a_nightly_the_nearest_earlier_said_so():
    chosen, note = nightlies.pick_tf("nightly:2026-05-14")
    assert (chosen.package, chosen.version, note) == ("tf-nightly-cpu", "2.22.0.dev20260514", "")
    chosen, note = nightlies.pick_tf("nightly:2026-06-01")  # no wheel of either build that day
    assert chosen.day == datetime.date(2026, 5, 31) and "no nightly of 2026-06-01 here" in note
    assert "2026-05-31" in note
    # one build asked for: the nearest earlier of that build
    assert nightlies.pick_tf("nightly:2026-09-20", flavour="cpu")[0].version == "2.22.0.dev20260905"


@pytest.mark.parametrize("text, expected", [
    ("nightly:2025-01-01", "No TF nightly on or before 2025-01-01"),
    ("nightly:yesterday", "Expected 'nightly' (the newest) or 'nightly:YYYY-MM-DD'"),
    ("nightly:2026-13-01", "Invalid nightly. Received: 'nightly:2026-13-01'"),
])
def test_a_nightly_that_cannot_be_had_is_one_line(text, expected):
    with pytest.raises(UsageError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        nightlies.pick_tf(text)


def test_an_exact_nightly_version_is_found_in_either_spelling_or_refused():
    assert nightlies.resolve_tf("2.22.0-dev20260514")[0].version == "2.22.0.dev20260514"  # tf.__version__'s
    assert nightlies.resolve_tf("2.22.0.dev20260514", flavour="cuda")[0].package == "tf-nightly"
    with pytest.raises(UsageError, match="Unknown TF nightly"):
        nightlies.resolve_tf("2.22.0.dev20250101")


def test_keras_nightly_by_date_and_by_version():
    chosen, note = nightlies.pick_keras("nightly:2026-05-16")
    assert chosen.version == "3.15.0.dev2026051505" and "nearest earlier one is of 2026-05-15" in note
    assert nightlies.pick_keras("3.16.0.dev2026090104")[0].day == datetime.date(2026, 9, 1)
    with pytest.raises(UsageError, match="Unknown keras-nightly version"):
        nightlies.pick_keras("3.16.0.dev2026090199")


def test_a_tf_nightlys_pins_are_those_current_that_day():
    chosen, _ = nightlies.pick_tf("nightly:2026-05-14")
    reqs, no_deps = environment.requirements_with(MATRIX, "nightly:2026-05-14")
    assert reqs["tf-nightly-cpu"] == chosen.version and no_deps == []
    assert "tensorflow-cpu" not in reqs and "keras" not in reqs
    keras = nightlies.listing("keras-nightly")
    assert reqs["keras-nightly"] == max((k for k in keras if k.uploaded <= chosen.uploaded),
                                        key=lambda k: k.uploaded).version == "3.15.0.dev2026051405"
    assert reqs["tb-nightly"] == "2.21.0a20251023"  # the last before it
    newest = [e for e in json.loads("\n".join(line for line in open(MATRIX) if not line.lstrip().startswith("//")))[
        "include"] if e["req"].get("tensorflow-cpu") == "2.21.0" and "env" not in e and e["python"] == "3.11"][0]
    assert reqs["numpy"] == newest["req"]["numpy"] and reqs["scipy"] == newest["req"]["scipy"]


def test_keras_nightly_replaces_a_releases_keras():
    reqs, _ = environment.requirements_with(MATRIX, "2.21.0", keras="nightly:2026-09-01")
    assert reqs["tensorflow-cpu"] == "2.21.0" and "keras" not in reqs
    assert reqs["keras-nightly"] == "3.16.0.dev2026090104"


def test_the_window_after_a_releases_branch_cut_is_one_build_and_names_its_gaps():
    versions, flavour, notes = nightlies.tf_window("2.21.0", "nightly:2026-09-05")
    assert versions[0] == "2.21.0" and flavour == "cpu"
    assert all(releases.version_key(v)[:2] == (2, 22) for v in versions[1:])  # after the branch cut: 2.22.0.dev
    assert versions[-1] == "2.22.0.dev20260905"
    assert any("between 2026-05-30 and 2026-06-15" in n for n in notes)  # a gap of 16 days
    assert not any("between 2026-05-15 and 2026-05-18" in n for n in notes)  # a weekend is no gap
    assert "good end: TF 2.21.0 (tensorflow-cpu)" in notes
    # up to the newest: the full build throughout, the release measured in it too
    versions, flavour, notes = nightlies.tf_window("2.21.0", "nightly")
    assert flavour == "cuda" and any("in the full build (tensorflow, not tensorflow-cpu)" in n for n in notes)
    assert versions[-1] == "2.23.0.dev20261026"


def test_a_window_between_two_nightlies_and_one_that_goes_back_in_time():
    versions, flavour, notes = nightlies.tf_window("nightly:2026-05-12", "nightly:2026-05-20")
    assert versions[0].endswith("20260512") and flavour == "cpu"
    assert versions[-1].endswith("20260518") and "no nightly of 2026-05-20 here" in notes[1]  # neither build has it
    with pytest.raises(UsageError, match="goes forward in time"):
        nightlies.tf_window("nightly:2026-09-01", "nightly:2026-05-20")


def test_a_keras_window_from_a_release_to_a_nightly():
    versions, notes = nightlies.keras_window("3.13.2", "nightly:2026-05-15")
    assert versions[0] == "3.13.2" and versions[-1] == "3.15.0.dev2026051505"
    assert all(nightlies.is_nightly(v) for v in versions[1:])
    with pytest.raises(UsageError, match="Unknown Keras release"):
        nightlies.keras_window("3.99.0", "nightly")


def test_commit_ranges():
    assert nightlies.commit_of("v2.21.0-rc1-5-ga481b10260d") == "a481b10260d"
    assert nightlies.tf_commits("v2.21.0-rc1-5-ga481b10260d", "v1.12.1-140023-g0537f65b5b7") == \
        "https://github.com/tensorflow/tensorflow/compare/a481b10260d...0537f65b5b7"
    assert nightlies.tf_commits("unknown", "v1.12.1-140023-g0537f65b5b7") == ""
    url = nightlies.keras_commits(datetime.datetime(2026, 9, 1, 4), datetime.datetime(2026, 5, 15, 5))
    assert url.endswith("?since=2026-05-15T05:00:00Z&until=2026-09-01T04:00:00Z")


def test_versions_sort_nightlies_and_candidates_before_their_release():
    order = ["2.15.0rc1", "2.15.0", "2.15.1", "2.16.2", "2.16.2+tf_keras", "2.21.0", "2.22.0-dev20260101",
             "2.22.0.dev20260905", "2.22.0rc0", "2.22.0"]
    assert sorted(reversed(order), key=releases.version_key) == order
    assert releases.version_key("2.22.0-dev20260905")[:2] == (2, 22)


def test_the_environment_note_is_written_once_and_read_back(tmp_path):
    reqs = {"tf-nightly-cpu": "2.22.0.dev20260514", "keras-nightly": "3.15.0.dev2026051405"}
    nightlies.write_note(str(tmp_path), reqs)
    note = nightlies.read_note(str(tmp_path))
    assert note["version"] == "2.22.0.dev20260514" and note["flavour"] == "cpu" and note["day"] == "2026-05-14"
    assert note["uploaded"].startswith("2026-05-14")
    nightlies.write_note(str(tmp_path / "release"), {"tensorflow-cpu": "2.21.0"})
    assert nightlies.read_note(str(tmp_path / "release")) is None


# ---------------------------------------------------------------- a nightly triage, with fake environments


def test_a_nightly_triage_bisects_one_build_prints_the_commits_and_removes_what_it_made(monkeypatch, tmp_path, capsys):
    from kerasbench import runner

    change = datetime.date(2026, 5, 20)  # growth from this day's nightly on
    made, measured = {}, []

    def version_of(reqs):
        return reqs.get("tf-nightly-cpu") or reqs.get("tf-nightly") or reqs.get("tensorflow-cpu") or reqs["tensorflow"]

    def python_for(config, reqs, progress=None, python=None):
        version = version_of(reqs)
        folder = tmp_path / "env" / version
        (folder / "bin").mkdir(parents=True, exist_ok=True)
        (folder / "bin" / "python").write_bytes(b"x" * 4096)
        made[version] = reqs
        progress("environment ready in 0 s")
        return str(folder / "bin" / "python"), f"env-{version}"

    def measure(spec, progress=None):
        version = pathlib.Path(spec.python).parent.parent.name
        measured.append(version)
        grows = nightlies.is_nightly(version) and nightlies.Nightly("tf-nightly-cpu", version, "").day >= change
        r = synthetic(version, 400 * KIB if grows else 0, repeats=2, n=20, seed=len(measured))["records"][0]
        r["environment"]["tf_git_version"] = f"v1.12.1-1-g{abs(hash(version)) % 16**10:010x}"
        return r

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    code, out = call(["triage", "--config", MATRIX, "--good", "2.21.0", "--bad", "nightly:2026-09-05", "--loop",
                      "sweep", "--strategy", "reuse_model"])
    err = capsys.readouterr().err
    assert code == 0, err
    versions, _, _ = nightlies.tf_window("2.21.0", "nightly:2026-09-05")
    first = next(v for v in versions[1:] if nightlies.Nightly("tf-nightly-cpu", v, "").day >= change)
    last = versions[versions.index(first) - 1]
    assert f"Answer: TF {first} is the first nightly where" in out and f"the last like 2.21.0 is {last}" in out
    assert all("tf-nightly" not in reqs for v, reqs in made.items() if v == "2.21.0")  # the release: tensorflow-cpu
    assert {"tf-nightly-cpu"} == {k for v, reqs in made.items() if v != "2.21.0" for k in reqs if "tf-nightly" in k}
    assert "https://github.com/tensorflow/tensorflow/compare/" in out and "TF commits between" in out
    assert "no tf-nightly-cpu wheel here between 2026-05-30 and 2026-06-15" in out
    assert "nightlies after 2.21.0's branch cut" in err
    # every environment it made is gone but the bracket's
    left = sorted(os.listdir(tmp_path / "env"))
    assert left == sorted([last, first]) and len(made) > 2
    assert "Environments: removed" in out and "kept the bracket's 2" in out
    assert f"--tf {first}" in out and f"--tf {last}" in out


def test_a_triage_against_full_build_nightlies_measures_the_release_in_the_full_build(monkeypatch, capsys):
    from kerasbench import runner

    pins = {}

    def python_for(config, reqs, progress=None, python=None):
        version = reqs.get("tf-nightly") or reqs.get("tensorflow") or reqs.get("tensorflow-cpu")
        pins[version] = reqs
        return f"/nowhere/{version}/bin/python", f"env-{version}"

    def measure(spec, progress=None):
        version = pathlib.Path(spec.python).parent.parent.name
        return synthetic(version, 0, repeats=2, n=20, seed=1)["records"][0]

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    code, out = call(["triage", "--config", MATRIX, "--good", "2.21.0", "--bad", "nightly", "--loop", "sweep",
                      "--strategy", "reuse_model"])
    assert code == 0
    assert pins["2.21.0"].get("tensorflow") == "2.21.0" and "tensorflow-cpu" not in pins["2.21.0"]
    assert "tf-nightly" in pins["2.23.0.dev20261026"]
    assert "build compared: cuda" in out


def test_compare_tells_keras_nightly_at_a_release_from_the_release_and_dates_a_tf_nightly(tmp_path):
    from kerasbench.loading import load_records

    files = []
    for name, tf, keras in (("rel", "2.21.0", "3.13.2"), ("kn", "2.21.0", "3.16.0.dev2026102704"),
                            ("tn", "2.22.0-dev20260514", "3.15.0.dev2026051405")):
        payload = synthetic(tf, 0, repeats=1, n=20)
        for r in payload["records"]:
            r["environment"].update(tensorflow=tf, keras=keras)
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(payload))
        files.append(str(path))
    labels = {version for _, _, version in load_records(files)}
    assert labels == {"2.21.0", "2.21.0+keras-3.16.0.dev2026102704", "2.22.0-dev20260514"}
    assert sorted(labels, key=releases.version_key) == ["2.21.0", "2.21.0+keras-3.16.0.dev2026102704",
                                                         "2.22.0-dev20260514"]


def test_compare_names_each_sides_build_and_says_when_they_differ(tmp_path):
    from kerasbench import compare

    files = []
    for name, tf, dist, nightly in (
            ("rel", "2.21.0", "tensorflow-cpu", None),
            ("tn", "2.23.0-dev20261026", "tf-nightly",
             {"package": "tf-nightly", "version": "2.23.0.dev20261026", "day": "2026-10-26",
              "uploaded": "2026-10-26T20:05:40Z", "flavour": "cuda"})):
        payload = synthetic(tf, 0, repeats=1, n=20)
        for r in payload["records"]:
            r["environment"].update(tensorflow=tf, tf_distribution=dist, tf_git_version="v1.12.1-1-gabcdef1234")
            if nightly:
                r["environment"]["nightly"] = nightly
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(payload))
        files.append(str(path))
    text = compare.describe(compare.group(compare.load(files)))
    assert "TF 2.23.0-dev20261026" in text and "nightly of 2026-10-26 (tf-nightly 2.23.0.dev20261026" in text
    assert ", tensorflow-cpu (v1.12.1-1-gabcdef1234)" in text
    assert "the sides ran different TF builds (cpu and full)" in text


def test_a_tensorflow_pin_gives_the_releases_full_build():
    reqs, _ = environment.requirements_with(MATRIX, "2.21.0", pins={"tensorflow": "2.21.0"})
    assert reqs["tensorflow"] == "2.21.0" and "tensorflow-cpu" not in reqs and reqs["keras"] == "3.13.2"


def test_an_index_answer_of_another_shape_is_one_line_and_odd_entries_are_left_out():
    from kerasbench.errors import UsageError

    for doc in ([], {"files": {"a": 1}}, {"files": None}, "text"):
        with pytest.raises(UsageError, match="is not a project page"):
            nightlies.listing("tf-nightly-cpu", doc=doc)
    wheel = "tf_nightly_cpu-2.22.0.dev{day}-cp311-cp311-manylinux_2_17_x86_64.whl"
    doc = {"files": [None, 7, {"filename": 5}, {"filename": wheel.format(day="20261399")},  # no such day
                     {"filename": wheel.format(day="20260101"), "upload-time": 5},
                     {"filename": wheel.format(day="20260102"), "upload-time": "2026-01-02T00:00:00Z", "size": "x"},
                     {"filename": wheel.format(day="20260103"), "upload-time": "2026-01-03T00:00:00Z", "size": 9}]}
    found = nightlies.listing("tf-nightly-cpu", doc=doc)
    assert [(n.version, n.day) for n in found] == [("2.22.0.dev20260103", datetime.date(2026, 1, 3))]


def test_a_nightly_triage_keeps_an_environment_another_process_measures_in(tmp_path, monkeypatch):
    """The clean-up removes the environments the triage made but the bracket's, and keeps one another kerasbench has
    taken up (environment.remove_unused refuses it), handing it over, and says so."""
    from kerasbench import environment
    from kerasbench.commands.triage import nightly_epilogue
    from kerasbench.triage import Outcome

    made, envs = {}, tmp_path / "env"
    for v in ("a", "b", "c", "d"):
        (envs / v / "bin").mkdir(parents=True)
        (envs / v / "bin" / "python").write_text("")
        made[v] = str(envs / v / "bin" / "python")
    busy = str(envs / "c")
    real = environment.remove_unused
    monkeypatch.setattr(environment, "remove_unused", lambda folder, hand_over=False: folder != busy and real(folder))
    outcome = Outcome(versions=list(made), bracket=("b", "d"))  # no first_bad: no commits line
    text = nightly_epilogue(outcome, {}, None, "3.11", [], made, "cpu")
    assert "Environments: removed 1 this triage made" in text
    assert "; handed 1 over to another kerasbench measuring in it (the last triage to use it removes it);" in text
    assert "hard links into uv's cache, which keeps them: `uv cache clean tf-nightly-cpu` frees them)" in text
    assert "kept the bracket's 2" in text
    assert sorted(os.listdir(envs)) == ["b", "c", "d"]

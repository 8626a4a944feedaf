"""kerasbench merge: the union of asv results and records trees; conflicts refused whole; idempotent."""

import json
import os

import pytest

from kerasbench.cli import main


def tree(root, machine, commit="0123abcd", env="virtualenv-py3.11-tensorflow-cpu2.12.1", value=1.0,
         benchmarks=None, machine_info=None):
    """One job's .asv folder: asv's results of `machine` and kerasbench's records beside them."""
    results = root / "results" / machine
    results.mkdir(parents=True, exist_ok=True)
    (results / "machine.json").write_text(json.dumps(machine_info or {"machine": machine, "version": 1}))
    (results / f"{commit}-{env}.json").write_text(json.dumps({"commit_hash": commit, "env_name": env,
                                                              "results": {"control.Control.track_x": value}}))
    (root / "results" / "benchmarks.json").write_text(json.dumps(benchmarks or {"a": {"version": "1"},
                                                                               "version": 2}))
    records = root / "records" / machine / f"{commit}-{env}"
    records.mkdir(parents=True, exist_ok=True)
    (records / "control.json").write_text(json.dumps({"schema": 1, "records": [], "value": value}))
    return root


def snapshot(folder):
    found = {}
    for root, _, files in os.walk(folder):
        for f in files:
            path = os.path.join(root, f)
            found[os.path.relpath(path, folder)] = (open(path).read(), os.stat(path).st_mode)
    return found


def call(argv, capsys):
    code = main(argv)
    c = capsys.readouterr()
    return code, c.out, c.err


def test_the_union_of_two_jobs_then_nothing_on_the_second_run(tmp_path, capsys):
    a = tree(tmp_path / "job-a", "ci-tf212")
    b = tree(tmp_path / "job-b", "ci-tf221", env="virtualenv-py3.11-tensorflow-cpu2.21.0")
    dest = tmp_path / "site" / ".asv"
    code, out, _ = call(["merge", str(a), str(b), str(dest)], capsys)
    assert code == 0 and "7 file(s) written, 0 already there" in out  # 4 files a job, one benchmarks.json
    merged = snapshot(dest)
    for job in (a, b):
        for rel, (text, _) in snapshot(job).items():
            assert rel in merged and json.loads(merged[rel][0]) == json.loads(text)
    assert {d for d in os.listdir(dest / "results") if (dest / "results" / d).is_dir()} == {"ci-tf212", "ci-tf221"}
    assert sorted(os.listdir(dest / "records")) == ["ci-tf212", "ci-tf221"]
    code, out, _ = call(["merge", str(a), str(b), str(dest)], capsys)
    assert code == 0 and " 0 file(s) written" in out and snapshot(dest) == merged  # idempotent


def test_a_clone_is_taken_for_its_asv_folder(tmp_path, capsys):
    tree(tmp_path / "clone-a" / ".asv", "ci-a")
    dest = tmp_path / "clone-dest"
    dest.mkdir()
    (dest / "asv.conf.json").write_text("{}")
    assert call(["merge", str(tmp_path / "clone-a"), str(dest)], capsys)[0] == 0
    assert (dest / ".asv" / "records" / "ci-a").is_dir()


def test_a_conflict_is_one_line_and_writes_nothing(tmp_path, capsys):
    a = tree(tmp_path / "job-a", "ci-a", value=1.0)
    b = tree(tmp_path / "job-b", "ci-b")
    again = tree(tmp_path / "again", "ci-a", value=2.0)  # the same machine, commit and env, other figures
    dest = tree(tmp_path / "dest", "old")
    before = snapshot(dest)
    code, out, err = call(["merge", str(a), str(b), str(again), str(dest)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "Conflicting results, nothing written" in err and "/ci-a/0123abcd-virtualenv" in err
    assert str(a) in err and str(again) in err and "(and 1 more)" in err  # the records file too
    assert snapshot(dest) == before
    assert call(["merge", str(a), str(dest)], capsys)[0] == 0
    code, _, err = call(["merge", str(again), str(dest)], capsys)  # against what DEST already has
    assert code == 2 and str(dest) in err


def test_benchmarks_json_is_the_union_and_machine_json_the_newest(tmp_path, capsys):
    a = tree(tmp_path / "job-a", "ci-a", benchmarks={"a": {"version": "1"}, "version": 2})
    b = tree(tmp_path / "job-b", "ci-b", benchmarks={"a": {"version": "2"}, "b": {"version": "1"}, "version": 2})
    again = tree(tmp_path / "job-c", "ci-a", env="other-env", machine_info={"machine": "ci-a", "ram": "2"})
    os.utime(a / "results" / "benchmarks.json", (1, 1))
    os.utime(a / "results" / "ci-a" / "machine.json", (1, 1))
    dest = tmp_path / "dest"
    code, out, _ = call(["merge", str(a), str(b), str(again), str(dest)], capsys)
    assert code == 0
    bench = json.loads((dest / "results" / "benchmarks.json").read_text())
    assert bench == {"a": {"version": "2"}, "b": {"version": "1"}, "version": 2}  # job-a's is the older
    assert "benchmarks.json: the union of" in out and "kept" in out
    assert json.loads((dest / "results" / "ci-a" / "machine.json").read_text())["ram"] == "2"
    assert "machine.json: 2 different copies: kept" in out
    before = snapshot(dest)
    assert call(["merge", str(a), str(b), str(again), str(dest)], capsys)[0] == 0 and snapshot(dest) == before


@pytest.mark.parametrize("argv, needle", [
    (["only-one"], "What to merge?"),
    (["{tmp}/missing", "{tmp}/dest"], "no such folder"),
    (["{tmp}", "{tmp}/dest"], "Not an asv folder (SRC)"),
    (["{tmp}/job", "{tmp}/job"], "it is the destination"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, needle):
    tree(tmp_path / "job", "ci-a")
    (tmp_path / "junk").mkdir()
    code, out, err = call(["merge", *[a.format(tmp=tmp_path / "junk" if a == "{tmp}" else tmp_path) for a in argv]],
                          capsys)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1

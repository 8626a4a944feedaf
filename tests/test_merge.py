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


def test_a_cpu_machines_fewer_params_do_not_drop_a_gpu_machines_rows_from_the_dashboard(tmp_path, capsys):
    """The asv suite has no GPU strategies' rows on a CPU machine: merged with a GPU box's tree, the benchmark keeps
    the GPU box's params (a superset, same version), whichever file is newer; other differences: the newest."""
    entry = {"name": "sweep.Sweep.track_peak_loop", "version": "kerasbench-1-default", "param_names": ["strategy"]}
    gpu = {**entry, "params": [["'reuse_model'", "'gpu_growth_on'"]]}
    cpu = {**entry, "params": [["'reuse_model'"]]}
    new_version = {**cpu, "version": "kerasbench-2-default"}
    g = tree(tmp_path / "gpubox", "gpubox", benchmarks={"s": gpu, "v": gpu, "version": 2})
    c = tree(tmp_path / "cpubox", "cpubox", benchmarks={"s": cpu, "v": new_version, "version": 2})
    os.utime(g / "results" / "benchmarks.json", (1, 1))  # the CPU's is the newer
    dest = tmp_path / "dest"
    code, out, _ = call(["merge", str(g), str(c), str(dest)], capsys)
    assert code == 0
    bench = json.loads((dest / "results" / "benchmarks.json").read_text())
    assert bench["s"] == gpu and bench["v"] == new_version
    assert "1 kept with the more params of the same version; 1 differed" in out, out


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


# ---------------------------------------------------------------- issue #40: nothing outside a source, all or nothing


def _one_line(code, out, err):
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("where", ["results/ci-a/creds.json", "records/ci-a/notes.txt", "results/ci-a/machine.json"])
def test_a_link_out_of_a_source_is_refused_and_nothing_written(where, tmp_path, capsys):
    """Before: a source holding results/m1/creds.json -> /any/readable/file merged with rc 0, and DEST held a regular
    file with that file's content (DEST is committed to the history branch and published)."""
    secret = tmp_path / "secret.txt"
    secret.write_text('{"token": "s3cr3t"}')
    a = tree(tmp_path / "job-a", "ci-a")
    link = a / where
    if link.exists():
        link.unlink()
    link.symlink_to(secret)
    dest = tree(tmp_path / "dest", "old")
    before = snapshot(dest)
    code, out, err = call(["merge", str(a), str(dest)], capsys)
    _one_line(code, out, err)
    assert f"Cannot merge {link}: it links outside its source {a} (to {secret})" in err
    assert snapshot(dest) == before and "s3cr3t" not in json.dumps(snapshot(dest))


def test_a_linked_folder_out_of_a_source_is_refused(tmp_path, capsys):
    outside = tree(tmp_path / "elsewhere", "ci-x")
    a = tmp_path / "job-a"
    a.mkdir()
    (a / "results").symlink_to(outside / "results")  # the source's whole results tree lies elsewhere
    code, out, err = call(["merge", str(a), str(tmp_path / "dest")], capsys)
    _one_line(code, out, err)
    assert "links outside its source" in err and not (tmp_path / "dest").exists()


def test_a_link_inside_a_source_is_followed(tmp_path, capsys):
    a = tree(tmp_path / "job-a", "ci-a")
    original = a / "records" / "ci-a" / "0123abcd-virtualenv-py3.11-tensorflow-cpu2.12.1" / "control.json"
    (original.parent / "again.json").symlink_to(original)  # as tar's data filter: a link within the tree is fine
    dest = tmp_path / "dest"
    code, out, err = call(["merge", str(a), str(dest)], capsys)
    assert code == 0, err
    copy = dest / "records" / "ci-a" / original.parent.name / "again.json"
    assert not copy.is_symlink() and copy.read_text() == original.read_text()


def _fails_at(monkeypatch, name, after):
    """Make merge's os.<name> raise ENOSPC from its `after`-th call on (0: the first)."""
    import errno

    from kerasbench import merge

    real, calls = getattr(os, name), []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(merge.os, name, failing)


@pytest.mark.parametrize("name,after", [("replace", 0), ("replace", 3), ("mkdir", 1), ("link", 0), ("utime", 2)])
def test_a_failed_write_leaves_dest_as_it_was(name, after, tmp_path, monkeypatch, capsys):
    """Before: a full disk was a traceback (OSError … No space left on device from the writer) and DEST's results
    left half-written. Simulated at each step: staging, folders, the renames (a replaced benchmarks.json put back)."""
    a = tree(tmp_path / "job-a", "ci-a", benchmarks={"a": {"version": "1"}, "b": {"version": "1"}, "version": 2})
    dest = tree(tmp_path / "dest", "old")
    before = snapshot(dest)
    _fails_at(monkeypatch, name, after)
    code, out, err = call(["merge", str(a), str(dest)], capsys)
    _one_line(code, out, err)
    assert f"Cannot merge into {dest}: No space left on device; nothing written, the destination left as it was." in err
    assert snapshot(dest) == before and sorted(os.listdir(dest)) == ["records", "results"]  # no staging left


def test_a_new_dest_that_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch, capsys):
    a = tree(tmp_path / "job-a", "ci-a")
    _fails_at(monkeypatch, "replace", 2)
    code, out, err = call(["merge", str(a), str(tmp_path / "new" / "dest")], capsys)
    _one_line(code, out, err)
    assert not (tmp_path / "new").exists()


def test_a_staging_folder_of_a_killed_merge_is_removed_by_the_next(tmp_path, capsys):
    import subprocess

    a = tree(tmp_path / "job-a", "ci-a")
    dest = tree(tmp_path / "dest", "old")
    dead = subprocess.run(["true"]).args and subprocess.Popen(["true"])
    dead.wait()
    stale = dest / f".kerasbench-merge-{dead.pid}-abc"
    stale.mkdir()
    (stale / "0").write_text("half")
    assert call(["merge", str(a), str(dest)], capsys)[0] == 0
    assert sorted(os.listdir(dest)) == ["records", "results"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_merge_onto_a_full_filesystem_leaves_dest_as_it_was(tmp_path, capsys):
    """A real full disk: DEST on a 256 KiB tmpfs, a source with a 1 MiB results file."""
    import subprocess

    fs = tmp_path / "fs"
    fs.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(fs)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        dest = tree(fs / "dest", "old")
        before = snapshot(dest)
        a = tree(tmp_path / "job-a", "ci-a")
        (a / "results" / "ci-a" / "big.json").write_text(json.dumps({"pad": "x" * 1024 * 1024}))
        code, out, err = call(["merge", str(a), str(dest)], capsys)
        _one_line(code, out, err)
        assert "No space left on device; nothing written, the destination left as it was" in err
        assert snapshot(dest) == before and sorted(os.listdir(dest)) == ["records", "results"]
    finally:
        subprocess.run(["umount", str(fs)])

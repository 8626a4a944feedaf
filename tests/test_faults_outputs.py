"""Fault suite, outputs (issue #15, classes 2 and 7; issue #26, class A): what an output path may be, writers at the
same time, and what no output may replace or delete (an input, a stored calibration, another output, asv's html_dir
holding data).

Every writer of kerasbench goes through kerasbench.files (a uniquely named temp file in the target's folder,
then a rename), so these tests exercise that one path and the two writers that used a fixed `<name>.tmp`
before it existed (the asv records writer and the dashboard's pages).
"""

import io
import json
import os
import pathlib
import stat
import threading

import pytest

from kerasbench import files, record, tree
from kerasbench.cli import main
from kerasbench.errors import UsageError


def test_a_fifo_or_a_device_given_as_output_is_refused_and_left_alone(tmp_path, capsys):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        files.write_text(str(fifo), "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3",
                 "--json", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    with pytest.raises(UsageError, match="not a regular file"):
        files.check_writable("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_symlink_output_writes_its_target_and_stays_a_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.write_json(str(link), {"new": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"new": 1}


def test_an_existing_output_keeps_its_permissions(tmp_path):
    path = tmp_path / "kept.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    files.write_json(str(path), {"a": 1})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def _hammer(write, path, writers=4, rounds=50):
    """Run `writers` threads that each write `path` `rounds` times while a reader parses it; the reader's errors."""
    errors, done = [], threading.Event()

    def writer(k):
        for i in range(rounds):
            write(path, {"writer": k, "round": i, "pad": "x" * 20000})

    def reader():
        while not done.is_set():
            try:
                with open(path) as f:
                    json.load(f)
            except FileNotFoundError:
                pass
            except ValueError as e:  # half a file
                errors.append(str(e))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(writers)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    return errors


def test_concurrent_writers_never_leave_half_a_file_or_a_temp_file(tmp_path):
    path = str(tmp_path / "out.json")
    assert _hammer(files.write_json, path) == []
    assert json.loads(open(path).read())["round"] == 49
    assert os.listdir(tmp_path) == ["out.json"]  # every temp file renamed or removed


def test_concurrent_asv_records_writers_never_leave_half_a_file(tmp_path):
    folder = str(tmp_path / "records" / "box" / "abcdef12-env")

    def write(path, payload):
        tree.save_records(folder, "control", record.records_payload([], **payload))

    assert _hammer(write, os.path.join(folder, "control.json")) == []
    assert os.listdir(folder) == ["control.json"]


def test_a_planted_link_at_a_temp_name_is_not_followed(tmp_path):
    """The old writers used `<name>.tmp`: a link planted there redirected the write. Temp names are unique now."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "page.html.tmp").symlink_to(victim)
    files.write_text(str(tmp_path / "page.html"), "<p>page</p>")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "page.html").read_text() == "<p>page</p>"


def test_a_run_over_an_existing_records_file_says_it_replaces_it(tmp_path, capsys):
    path = tmp_path / "out.json"
    path.write_text('{"schema": 1, "records": []}')
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--warmup", "0",
                 "--json", str(path)]) == 0
    assert f"{path} exists: this run's records replace it" in capsys.readouterr().err
    assert json.loads(path.read_text())["records"][0]["strategy"] == "control_noop"


# ---------------------------------------------------------------- issue #26 class A: data deleted or replaced
# Every command declares its outputs and its inputs to one check (kerasbench.files.check_outputs) before any work: an
# output that is an input, would be read as a records file of an input folder, is in a folder of stored
# calibrations, or is another output of the same command, is one line and exit 2, and nothing is written. publish
# checks asv's html_dir (which asv publish deletes first) the same way, before asv runs.

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "compare"
MATRIX = str(ROOT / "asv.matrix.json")
REPRO = "def build(ctx):\n    return None\n\n\ndef iteration(ctx, model):\n    pass\n"


def one_line_exit_2(argv, capsys, *needles):
    code = main(argv, out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture
def inputs(tmp_path):
    """{name: path} of one of each input a command reads, in tmp_path."""
    from kerasbench import calibration_store, rule

    made = {"repro": tmp_path / "r.py", "config": tmp_path / "asv.matrix.json", "a": tmp_path / "tf212.json",
            "b": tmp_path / "tf221.json", "settling": pathlib.Path(calibration_store.directory()) / rule.settling.NAME}
    made["repro"].write_text(REPRO)
    made["config"].write_text(pathlib.Path(MATRIX).read_text())
    for name in ("a", "b", "settling"):
        made[name].parent.mkdir(parents=True, exist_ok=True)
        made[name].write_text((FIXTURES / f"tf2{'12' if name == 'a' else '21'}.json").read_text())
    return {name: str(path) for name, path in made.items()}


OUTPUT_IS_INPUT = {  # every command with an output, given one of its inputs as that output: (argv, the input)
    "run --json = --repro": (["run", "--repro", "{repro}", "--strategy", "reuse_model", "--json", "{repro}"], "repro"),
    "run --json = --config": (["run", "--tf", "2.12.1", "--loop", "control", "--strategy", "control_noop",
                               "--config", "{config}", "--json", "{config}"], "config"),
    "ablate --json = --repro": (["ablate", "--repro", "{repro}", "--json", "{repro}"], "repro"),
    "ablate --html = --repro": (["ablate", "--repro", "{repro}", "--html", "{repro}"], "repro"),
    "triage --json = --repro": (["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--repro",
                                 "{repro}", "--json", "{repro}"], "repro"),
    "triage --json = --config": (["triage", "--config", "{config}", "--good", "2.12.1", "--bad", "2.21.0", "--loop",
                                  "sweep", "--json", "{config}"], "config"),
    "attribute --json = --repro": (["attribute", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0",
                                    "--repro", "{repro}", "--json", "{repro}"], "repro"),
    "compare --output": (["compare", "{a}", "{b}", "--output", "{a}"], "a"),
    "report --output": (["report", "{a}", "{b}", "--output", "{b}"], "b"),
    "score --json = PATH": (["score", "{a}", "--reference", "{b}", "--json", "{a}"], "a"),
    "score --json = --reference": (["score", "{a}", "--reference", "{b}", "--json", "{b}"], "b"),
    "overhead --records --json": (["overhead", "--records", "{a}", "--json", "{a}"], "a"),
    "calibrate --settling": (["calibrate", "--settling", "{settling}"], "settling"),
}


@pytest.mark.parametrize("case", OUTPUT_IS_INPUT)
def test_an_output_that_is_an_input_is_refused_before_any_work_and_the_input_kept(case, inputs, capsys):
    argv, name = OUTPUT_IS_INPUT[case]
    before = pathlib.Path(inputs[name]).read_bytes()
    one_line_exit_2([a.format(**inputs) for a in argv], capsys, "one of the inputs", inputs[name])
    assert pathlib.Path(inputs[name]).read_bytes() == before


INTO_A_RECORDS_FOLDER = {  # an output inside a folder given as records, where the next read would find it
    "compare --output": ["compare", "{folder}", "--output", "{out}"],
    "report --output": ["report", "{folder}", "--output", "{out}"],
    "score --json": ["score", "{folder}", "--reference", str(FIXTURES / "tf221.json"), "--json", "{out}"],
    "overhead --json": ["overhead", "--records", "{folder}", "--json", "{out}"],
}


@pytest.fixture
def records_folder(tmp_path):
    folder = tmp_path / "records"
    (folder / "box").mkdir(parents=True)
    for name in ("tf212.json", "tf221.json"):
        (folder / "box" / name).write_text((FIXTURES / name).read_text())
    return folder


@pytest.mark.parametrize("command", INTO_A_RECORDS_FOLDER)
@pytest.mark.parametrize("where", ["new.json", "box/tf212.json", "box/new.json"])
def test_an_output_a_records_folder_would_read_is_refused(command, where, records_folder, capsys):
    out = records_folder / where
    before = sorted(p.name for p in records_folder.rglob("*"))
    err = one_line_exit_2([a.format(folder=records_folder, out=out) for a in INTO_A_RECORDS_FOLDER[command]], capsys,
                          str(out))
    assert ("one of the inputs" if out.exists() else "where it would be read as a records file") in err
    assert sorted(p.name for p in records_folder.rglob("*")) == before


@pytest.mark.parametrize("where", ["table.txt", ".hidden/table.json"])
def test_an_output_in_a_records_folder_that_is_never_read_as_records_is_fine(where, records_folder, capsys):
    (records_folder / ".hidden").mkdir()
    out = records_folder / where
    assert main(["compare", str(records_folder), "--output", str(out)], out=io.StringIO()) == 0
    assert out.exists()


def test_an_output_a_link_in_a_records_folder_points_to_is_refused(records_folder, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text((FIXTURES / "tf221.json").read_text())
    (records_folder / "box" / "tf221.json").unlink()
    (records_folder / "box" / "tf221.json").symlink_to(elsewhere)
    one_line_exit_2(["compare", str(records_folder), "--output", str(elsewhere)], capsys, "one of the inputs",
                    "links to it")


STORED_CALIBRATION = {
    "run --json": ["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--json", "{out}"],
    "compare --output": ["compare", str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json"), "--output", "{out}"],
    "overhead --json": ["overhead", "--records", str(FIXTURES / "tf212.json"), "--json", "{out}"],
}


@pytest.mark.parametrize("folder", ["user", "shipped"])
@pytest.mark.parametrize("command", STORED_CALIBRATION)
def test_an_output_in_a_folder_of_stored_calibrations_is_refused(command, folder, capsys):
    from kerasbench import calibration_store

    where = pathlib.Path(calibration_store.directory() if folder == "user" else calibration_store.SHIPPED)
    where.mkdir(parents=True, exist_ok=True)
    out = where / os.path.basename(calibration_store.path_for("glibc"))
    stored = (ROOT / "docs" / "calibration" / "glibc-glibc_2.36-x86_64-py3.11.json").read_text()
    out.write_text(stored)
    one_line_exit_2([a.format(out=out) for a in STORED_CALIBRATION[command]], capsys, "the folder of stored "
                    "calibrations", str(out))
    assert out.read_text() == stored


@pytest.mark.parametrize("argv,needle", [
    (["ablate", "--loop", "sweep", "--html", "{tmp}/ab.json"], "Cannot write --html to {tmp}/ab.json: the records "
                                                                  "(--html's name, .json) is written there too"),
    (["ablate", "--loop", "sweep", "--json", "{tmp}/x.json", "--html", "{tmp}/x.json"],
     "Cannot write --html to {tmp}/x.json: --json is written there too"),
    (["ablate", "--loop", "sweep", "--json", "{tmp}/x.json", "--html", "{tmp}/link.html"],
     "Cannot write --html to {tmp}/link.html: --json is written there too"),
])
def test_two_outputs_of_one_command_at_one_path_are_refused_before_measuring(argv, needle, tmp_path, capsys):
    (tmp_path / "link.html").symlink_to(tmp_path / "x.json")
    one_line_exit_2([a.format(tmp=tmp_path) for a in argv], capsys, needle.format(tmp=tmp_path))
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "ab.json").exists()


# publish: asv publish deletes html_dir before it writes the dashboard


def _project(tmp_path, html_dir):
    """A project folder whose asv config has `html_dir`, with results, records, an env folder and a git folder."""
    root = tmp_path / "project"
    for folder in (".git", ".asv/results/box", ".asv/records/box", ".asv/env"):
        (root / folder).mkdir(parents=True)
    (root / ".asv" / "results" / "box" / "machine.json").write_text('{"machine": "box", "version": 1}')
    (root / "asv.conf.json").write_text(json.dumps({"version": 1, "project": "x", "repo": ".", "branches": ["main"],
                                                    "results_dir": ".asv/results", "env_dir": ".asv/env",
                                                    "html_dir": html_dir}))
    return root


class _Subprocess:
    """dashboard's subprocess module, its `run` replaced (the real module stays as it is for everyone else)."""

    def __init__(self, run):
        self.run = run


def _tree_of(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("html_dir,needle", [
    (".", "is the project's folder (the config's)"),
    ("..", "holds the project's folder (the config's)"),
    (".asv", "holds results_dir '.asv/results'"),
    (".asv/results", "is results_dir '.asv/results'"),
    (".asv/env", "is env_dir '.asv/env'"),
    (".asv/records", "is the records tree"),
    ("site", "holds a git repository (.git)"),
    ("html", "holds files asv did not write (notes.md)"),
    ("asv.conf.json", "is the asv config"),
])
def test_publish_refuses_an_html_dir_it_would_delete_data_in_before_asv_runs(html_dir, needle, tmp_path, monkeypatch,
                                                                             capsys):
    from kerasbench import dashboard

    root = _project(tmp_path, html_dir)
    (root / "site" / ".git").mkdir(parents=True)
    (root / "html").mkdir()
    (root / "html" / "notes.md").write_text("mine")
    before = _tree_of(tmp_path)
    monkeypatch.setattr(dashboard, "subprocess", _Subprocess(lambda *a, **k: pytest.fail("asv publish ran")))
    monkeypatch.delenv("KERASBENCH_RECORDS_DIR", raising=False)
    err = one_line_exit_2(["publish", "--config", str(root / "asv.conf.json"), "--cdn"], capsys, "Refusing to "
                          "publish", f"html_dir {html_dir!r}", needle)
    assert "asv publish deletes first" in err
    assert _tree_of(tmp_path) == before


def test_publish_over_its_own_earlier_dashboard_is_fine(tmp_path, monkeypatch):
    import subprocess

    from kerasbench import dashboard

    root = _project(tmp_path, ".asv/html")
    html = root / ".asv" / "html"
    for folder in ("graphs", "vendor", "atlas"):  # what asv publish and kerasbench wrote there before
        (html / folder).mkdir(parents=True)
    # kerasbench-atlas.html: `report --atlas`'s default output before it wrote the atlas' folder (#38); before,
    # publish then refused the folder as holding a file asv did not write
    for name in ("index.html", "asv.js", "index.json", "kerasbench-report.html", "kerasbench-atlas.html"):
        (html / name).touch()
    ran = []
    monkeypatch.setattr(dashboard, "subprocess",
                        _Subprocess(lambda *a, **k: ran.append(a) or subprocess.CompletedProcess(a, 0, "", "")))
    assert dashboard.publish_dashboard(str(root / "asv.conf.json"), cdn=True, out=io.StringIO()) == str(html)
    assert ran


def test_merge_into_a_folder_inside_a_source_is_refused(tmp_path, capsys):
    src = tmp_path / "job" / ".asv"
    (src / "results" / "box").mkdir(parents=True)
    (src / "results" / "box" / "machine.json").write_text('{"machine": "box", "version": 1}')
    dest = src / "results" / "merged"
    one_line_exit_2(["merge", str(tmp_path / "job"), str(dest)], capsys, "is inside the source")
    assert not dest.exists()


# ---------------------------------------------------------------- issue #40: outputs checked before the work, leftovers


def _dead_pid():
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _no_worker(monkeypatch):
    from kerasbench import runner

    monkeypatch.setattr(runner, "run_worker", lambda *a, **k: pytest.fail("a worker started before --json was checked"))


def _chattr(flag, path):
    import subprocess

    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.parametrize("name", ["new/", "new/deeper/", "."])
def test_a_json_path_naming_a_folder_is_refused_before_measuring(name, tmp_path, monkeypatch, capsys):
    """Before: `run --json outdir/new/` measured every pair, then "cannot write results to outdir/new/: Not a
    directory", rc 1."""
    _no_worker(monkeypatch)
    path = f"{tmp_path}/{name}" if name != "." else f"{tmp_path}/new/."  # (pathlib would drop the trailing /)
    code = main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--floor-kib", "64",
                 "--json", path], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "it names a folder, not a file; give a file name" in err, err


def test_an_immutable_json_file_is_refused_before_measuring(tmp_path, monkeypatch, capsys):
    """Before: an immutable (chattr +i) --json file was found after measuring: "Operation not permitted", rc 1."""
    path = tmp_path / "records.json"
    path.write_text("{}")
    if not _chattr("+i", path):
        pytest.skip("chattr +i needs root and a file system with the flag")
    try:
        _no_worker(monkeypatch)
        code = main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--floor-kib",
                     "64", "--json", str(path)], out=io.StringIO())
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "it is immutable or append-only" in err, err
    finally:
        _chattr("-i", path)


def test_a_temporary_file_of_a_killed_write_is_removed_by_the_next_write(tmp_path):
    """Before: a kill -9 during --json left `.kerasbench-XXXX.json` in the folder for good."""
    dead = tmp_path / f".kerasbench-{_dead_pid()}-abcd1234.json"
    live = tmp_path / f".kerasbench-{os.getpid()}-abcd1234.json"  # a write in progress: left alone
    old = tmp_path / ".kerasbench-abcd1234.json"  # before pids were in the name: removed when over a day old
    young = tmp_path / ".kerasbench-efgh5678.json"
    other = tmp_path / ".kerasbench-notes.json"  # not a temporary file's name
    for path in (dead, live, old, young, other):
        path.write_text("{")
    os.utime(old, (1, 1))
    files.write_json(str(tmp_path / "records.json"), {"records": []})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, young.name, other.name, "records.json"])


def test_a_write_names_its_temporary_file_with_its_pid(tmp_path, monkeypatch):
    seen = []
    real = os.replace
    monkeypatch.setattr(files.os, "replace", lambda a, b: seen.append(os.path.basename(a)) or real(a, b))
    files.write_text(str(tmp_path / "x.json"), "{}")
    assert seen and seen[0].startswith(f".kerasbench-{os.getpid()}-") and seen[0].endswith(".json")


def test_body_folders_are_in_a_private_folder_of_this_user(tmp_path, monkeypatch):
    """Before: measure's body folders (kerasbench-body-*) went to the shared temp folder, readable by others, and one a
    kill -9 left stayed there."""
    import tempfile

    from kerasbench import api

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    private = tmp_path / f"kerasbench-{os.getuid()}"
    private.mkdir(mode=0o755)
    os.chmod(private, 0o755)
    stale = private / f"kerasbench-body-{_dead_pid()}-abc"
    stale.mkdir()
    (stale / "kerasbench_body.py").write_text("")
    folder = api.body_folder()
    assert os.path.dirname(folder) == str(private) and not stale.exists()
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    assert os.path.basename(folder).startswith(f"kerasbench-body-{os.getpid()}-")
    path = api.repro_for(lambda: None)
    assert os.path.dirname(os.path.dirname(path)) == str(private)


def test_a_private_temp_folder_that_is_a_link_is_refused(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"kerasbench-{os.getuid()}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="it is not a folder; remove it, or set TMPDIR"):
        files.private_temp_dir()


# ---------------------------------------------------------------- issue #61, class 1: every writer, one way to write
# Every command writes through kerasbench.files.write_text. A write that fails on the way (a full disk: here a file-size
# limit, RLIMIT_FSIZE, in a subprocess; a read-only or lost folder; an interrupt) is one line naming the file, exit 2
# (130 for Ctrl-C), the file there before as it was and no temporary file left; an output that is a link onto an input
# is refused before any work. Each fault × each writer below.

# The inputs, copied into each test's folder (a writer that went through a link would replace the copy, not the
# project's file): A, B two releases' records, REFERENCE enough flat TF series for calibrate --settling.
A, B, REFERENCE = "{inputs}/tf212.json", "{inputs}/tf221.json", "{inputs}/tf-2.21.0.json"
WRITERS = {  # a command that writes a file: (argv, the file written, given {out}: a file, {folder}: a folder)
    "compare --output": (["compare", A, B, "--output", "{out}"], "{out}"),
    "report --output": (["report", A, B, "--output", "{out}"], "{out}"),
    "report --svg": (["report", A, B, "--metric", "growth_per_iter", "--loop", "inference", "--svg", "{out}"], "{out}"),
    "score --json": (["score", A, "--reference", B, "--json", "{out}"], "{out}"),
    "atlas": (["atlas", A, B, "--output", "{folder}"], "{folder}/atlas.json"),
    "calibrate --settling": (["calibrate", "--settling", REFERENCE], "{calibration}/tf-settling.json"),
}


def _writer(case, tmp_path):
    """(argv, the file it writes, made beforehand with 'old' in it) of WRITERS[case] in tmp_path."""
    from kerasbench import calibration_store

    import shutil

    (tmp_path / "inputs").mkdir()
    for source in (FIXTURES / "tf212.json", FIXTURES / "tf221.json", ROOT / "docs" / "reference" / "tf-2.21.0.json"):
        shutil.copy(source, tmp_path / "inputs" / source.name)
    names = {"out": str(tmp_path / "out" / "written.txt"), "folder": str(tmp_path / "out"),
             "calibration": calibration_store.directory(), "inputs": str(tmp_path / "inputs")}
    argv, written = WRITERS[case]
    written = written.format(**names)
    os.makedirs(os.path.dirname(written), exist_ok=True)
    pathlib.Path(written).write_text("old")
    return [a.format(**names) for a in argv], written


def _left_alone(written):
    assert pathlib.Path(written).read_text() == "old"
    assert not [n for n in os.listdir(os.path.dirname(written)) if n.startswith(files.TEMP_PREFIX)]


@pytest.mark.parametrize("case", WRITERS)
def test_a_full_disk_under_any_writer_is_one_line_and_nothing_half_written(case, tmp_path):
    import resource
    import subprocess
    import sys

    argv, written = _writer(case, tmp_path)

    def limit():  # a file may grow to 256 bytes: every output here is larger (Python ignores SIGXFSZ: EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))

    done = subprocess.run([sys.executable, "-m", "kerasbench", *argv], preexec_fn=limit, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and f"to {written}: File too large; nothing written" in done.stderr
    _left_alone(written)


@pytest.mark.parametrize("fault", ["read-only folder", "interrupt"])
@pytest.mark.parametrize("case", WRITERS)
def test_a_write_failing_on_the_way_leaves_the_old_file_and_no_temporary(case, fault, tmp_path, monkeypatch,
                                                                         capsys):
    """A read-only (or lost) folder: the temporary file cannot be made (EROFS; as root a chmod'ed folder would not
    refuse); an interrupt: Ctrl-C between writing the temporary file and renaming it."""
    import errno
    import tempfile

    argv, written = _writer(case, tmp_path)
    if fault == "read-only folder":
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
        err = one_line_exit_2(argv, capsys, f"to {written}: Read-only file system; nothing written")
        assert "the file there before is as it was" in err
    else:
        rename, renamed = os.replace, []

        def interrupt(source, target):  # the write's own rename: its temporary file is written, not yet in place
            if os.path.basename(source).startswith(files.TEMP_PREFIX):
                renamed.append(target)
                raise KeyboardInterrupt
            rename(source, target)

        monkeypatch.setattr(os, "replace", interrupt)
        assert main(argv, out=io.StringIO()) == 130
        assert "interrupted" in capsys.readouterr().err and renamed
    _left_alone(written)


@pytest.mark.parametrize("case", WRITERS)
def test_an_output_that_links_onto_an_input_is_refused_and_the_input_kept(case, tmp_path, capsys):
    argv, written = _writer(case, tmp_path)
    source = (REFERENCE if case == "calibrate --settling" else A).format(inputs=tmp_path / "inputs")
    os.unlink(written)
    os.symlink(source, written)
    before = pathlib.Path(source).read_bytes()
    one_line_exit_2(argv, capsys, "one of the inputs")
    assert pathlib.Path(source).read_bytes() == before and os.path.islink(written)


def test_a_write_error_is_an_os_error_naming_the_file(tmp_path, monkeypatch):
    """session.Kept keeps measuring past a failed write (an OSError); the CLI prints it as one line (a UsageError)."""
    import tempfile

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(files.WriteError) as e:
        files.write_json(str(tmp_path / "r.json"), {}, "records")
    assert isinstance(e.value, OSError) and isinstance(e.value, UsageError) and e.value.strerror
    assert str(e.value) == (f"Cannot write records to {tmp_path / 'r.json'}: No space left on device; nothing "
                            "written, no file made.")


# ---------------------------------------------------------------- issue #61, class 1: no calibration replaced by less


def _stored(runs=20, counts=(4, 8, 30)):
    from kerasbench import calibration_store

    report = {"iterations": list(counts), "rates": [65536], "by_iterations": {str(n): {"floor": 4096.0}
                                                                             for n in counts}}
    data = {"schema": 2, "key": calibration_store.environment_key("glibc"), "host": "h", "allocator": "glibc",
            "allocator_detected": "glibc", "created": "2026-01-01T00:00:00Z", "runs": runs, "warmup": 2, "jobs": 1,
            "seconds": 9.0, "load": None, "floors": {str(n): 4096.0 for n in counts},
            "heap_floors": {str(n): 512.0 for n in counts}, "report": report, "heap_report": report}
    path = calibration_store.path_for("glibc")
    calibration_store.save(data, path)
    return path, data


@pytest.mark.parametrize("runs, counts, kept_runs, file_counts, how", [
    (1, (3,), 20, [3, 4, 8, 30], "added its count(s) 3 to the 20-run calibration"),  # the example
    (20, (8,), 20, [4, 8, 30], "wrote (kept the 20-run calibration's count(s) it did not measure: 4, 30)"),
    (30, (4, 8, 30, 60), 30, [4, 8, 30, 60], "wrote"),  # more runs, every count: replaces
])
def test_a_calibration_is_merged_not_replaced_by_one_with_fewer_runs_or_counts(runs, counts, kept_runs, file_counts,
                                                                               how):
    from kerasbench import calibration_store

    path, old = _stored()
    made = dict(old)
    made.update(runs=runs, floors={str(n): 1024.0 for n in counts}, heap_floors={str(n): 256.0 for n in counts},
                created="2026-02-02T00:00:00Z")
    made["report"] = made["heap_report"] = {"iterations": list(counts), "rates": [65536],
                                            "by_iterations": {str(n): {"floor": 1024.0} for n in counts}}
    assert calibration_store.refused_over(old, made, path) is None
    out, said = calibration_store.combined(old, made)
    assert out["runs"] == kept_runs and sorted(map(int, out["floors"])) == file_counts and said.startswith(how)
    assert sorted(map(int, out["heap_floors"])) == file_counts
    for n in old["floors"]:  # the longer calibration's own counts keep its floors
        if kept_runs == old["runs"] and runs < old["runs"]:
            assert out["floors"][n] == old["floors"][n]


def test_calibrate_refuses_before_measuring_what_would_replace_a_longer_calibration_with_nothing_new(capsys):
    path, old = _stored()
    before = pathlib.Path(path).read_text()
    one_line_exit_2(["calibrate", "--allocator", "glibc", "--runs", "1", "--counts", "8", "--rates-kib", "64",
                     "--heaps", "native"], capsys, f"Cannot write calibration to {path}: it holds a 20-run "
                    "calibration with every count asked (8)", "give --runs 20 or more")
    assert pathlib.Path(path).read_text() == before


def test_calibrate_refuses_a_link_onto_a_shipped_calibration_before_measuring(monkeypatch, capsys):
    from kerasbench import calibration_store, session

    monkeypatch.setattr(session, "run_controls", lambda *a, **k: pytest.fail("calibrated"))
    path = calibration_store.path_for("glibc")
    shipped = os.path.join(calibration_store.SHIPPED, os.path.basename(path))  # the tests' shipped folder (conftest)
    stored = ROOT / "docs" / "calibration" / "glibc-glibc_2.36-x86_64-py3.11.json"
    pathlib.Path(shipped).write_text(stored.read_text())
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(shipped, path)
    before = pathlib.Path(shipped).read_bytes()
    one_line_exit_2(["calibrate", "--allocator", "glibc", "--runs", "1", "--counts", "3", "--rates-kib", "64"],
                    capsys, f"Cannot write calibration to {path}: it links to", "a shipped calibration")
    assert pathlib.Path(shipped).read_bytes() == before

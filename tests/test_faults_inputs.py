"""Fault suite (issue #15; issue #26, class B), inputs and outputs: every bad input is one line and exit 2, never a
traceback, a hang, an unbounded read or a silently disabled limit; no output replaces an input; nothing from a record
runs in the report."""

import copy
import io
import json
import math
import os
import pathlib
import threading

import pytest

from kerasbench.cli import main
from kerasbench.errors import UsageError
from kerasbench.runner import RunSpec
from kerasbench.units import KIB, MIN_MEMORY_CAP, check_number, parse_bytes

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "compare"


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def one_line_exit_2(argv, capsys, needle=""):
    code, _ = call(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert needle in err
    return err


# ---------------------------------------------------------------- class 10: numbers, one checker


@pytest.mark.parametrize("option", ["--time-limit", "--floor-kib", "--leak-kib", "--memory-cap"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e400", "lots", ""])
def test_numeric_options_refuse_nan_inf_negative_and_garbage(option, value, capsys):
    one_line_exit_2(["run", "--loop", "control", "--strategy", "control_noop", option, value], capsys, option)


@pytest.mark.parametrize("option,value", [("--time-limit", "0.001"), ("--memory-cap", "1"), ("--memory-cap", "1MiB"),
                                          ("--leak-kib", "1e9"), ("--leak-kib", "0"), ("--leak-kib", "0.0001")])
def test_numeric_options_refuse_values_too_small_or_too_large_to_measure(option, value, capsys):
    one_line_exit_2(["run", "--loop", "control", "--strategy", "control_noop", option, value], capsys, "Invalid")


@pytest.mark.parametrize("var,value", [("KERASBENCH_MEMORY_CAP", "nan"), ("KERASBENCH_MEMORY_CAP", "1"),
                                       ("KERASBENCH_MEMORY_CAP", "-4G"), ("KERASBENCH_LEAK_KIB", "nan"),
                                       ("KERASBENCH_LEAK_KIB", "inf"), ("KERASBENCH_LEAK_KIB", "-5"),
                                       ("KERASBENCH_LEAK_KIB", "lots")])
def test_environment_variables_are_checked_like_the_options(var, value, monkeypatch, capsys):
    monkeypatch.setenv(var, value)
    one_line_exit_2(["run", "--loop", "control", "--strategy", "control_noop"], capsys, "$" + var)
    with pytest.raises(UsageError, match=var):
        RunSpec("control", "control_noop").validate()


@pytest.mark.parametrize("field,value", [("time_limit", math.nan), ("time_limit", math.inf), ("floor", math.nan),
                                         ("floor", -1.0), ("memory_cap", 1), ("leak_bytes", -KIB),
                                         ("time_limit", "x"), ("warmup", True)])
def test_runspec_validate_uses_the_same_checker(field, value):
    with pytest.raises(UsageError):
        RunSpec("control", "control_noop", **{field: value}).validate()


def test_a_valid_spec_keeps_finite_limits():
    spec = RunSpec("control", "control_noop", time_limit=5, floor=0.0, memory_cap=MIN_MEMORY_CAP).validate()
    assert spec.time_limit == 5.0 and spec.floor == 0.0 and spec.memory_cap == MIN_MEMORY_CAP
    assert spec.leak_bytes == 256 * KIB


def test_json_path_must_not_be_empty(capsys):
    one_line_exit_2(["run", "--loop", "control", "--json", ""], capsys, "--json")
    one_line_exit_2(["compare", "x.json", "--output", ""], capsys, "--output")


ANY_INPUT = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=30),
                      st.booleans(), st.none(), st.floats().map(repr), st.integers().map(str))


@settings(max_examples=400, deadline=None)
@given(value=ANY_INPUT, minimum=st.floats(0, 1e6), span=st.floats(0, 1e9))
def test_check_number_passes_a_finite_in_range_value_or_raises_usage_error(value, minimum, span):
    try:
        got = check_number(value, "x", minimum, minimum + span)
    except UsageError as e:
        assert "\n" not in str(e) and len(str(e)) < 200
        return
    assert isinstance(got, float) and math.isfinite(got) and minimum <= got <= minimum + span


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(max_size=20), st.from_regex(r"\s*-?[0-9.e+]{0,8}\s*[kKmMgG]?[iI]?[bB]?", fullmatch=True)),
       minimum=st.integers(1, 2**40))
def test_parse_bytes_gives_a_size_at_least_minimum_or_raises_usage_error(text, minimum):
    try:
        got = parse_bytes(text, "x", minimum)
    except UsageError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(got, int) and got >= minimum


# ---------------------------------------------------------------- class 10: input files and records


def _fifo(tmp_path, name="records.json"):
    path = tmp_path / name
    os.mkfifo(path)
    return str(path)


def _no_hang(fn):
    """Run fn in a thread; fail (instead of hanging the suite) if it has not returned within 10 s."""
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "hung on a FIFO"
    return box["value"]


@pytest.mark.parametrize("command", [["compare"], ["report", "--output", "{tmp}/r.html"]])
def test_a_fifo_given_as_records_is_refused_not_opened(command, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in command] + [_fifo(tmp_path)]
    code = _no_hang(lambda: call(argv)[0])
    err = capsys.readouterr().err
    assert code == 2 and "not a regular file" in err and err.count("\n") == 1


def test_a_fifo_inside_a_records_folder_is_refused_not_opened(tmp_path, capsys):
    (tmp_path / "ok.json").write_text((FIXTURES / "tf212.json").read_text())
    _fifo(tmp_path, "z.json")
    assert _no_hang(lambda: call(["compare", str(tmp_path)])[0]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_fifo_as_the_repro_file_is_refused_not_opened(tmp_path, capsys):
    code = _no_hang(lambda: call(["run", "--repro", _fifo(tmp_path, "r.py"), "--strategy", "reuse_model"])[0])
    err = capsys.readouterr().err
    assert code == 2 and "Cannot read repro file" in err and "not a regular file" in err


def _records_with(tmp_path, mutate):
    payload = json.loads((FIXTURES / "tf221.json").read_text())
    mutate(payload["records"][0])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    return str(path)


WRONG_TYPES = [
    (lambda r: r.update(loop=3), "records[0].loop is an integer, expected string"),
    (lambda r: r.update(summary="x"), "records[0].summary is a string, expected object"),
    (lambda r: r.update(spec=[]), "records[0].spec is an array"),
    (lambda r: r.update(status="weird"), "records[0].status is 'weird'"),
    (lambda r: r.update(repeats={}), "records[0].repeats is an object"),
    (lambda r: r["repeats"].append(None), "records[0].repeats[1] is a null"),
    (lambda r: r["summary"].update(growth_per_iter="big"), "growth_per_iter is a string"),
    (lambda r: r["environment"].update(tensorflow=2.21), "environment.tensorflow is a number"),
    (lambda r: r["environment"].update(env={"TF_X": 1}), "environment.env.TF_X is an integer"),
    (lambda r: r["spec"].update(iterations="30"), "spec.iterations is a string"),
    (lambda r: r["repeats"][0]["result"]["series"]["rss"].append("x"), "result.series.rss[4] is a string, expected "
                                                                        "integer"),  # a series: checked at once
]


@pytest.mark.parametrize("mutate,needle", WRONG_TYPES)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_records_of_the_wrong_inner_types_are_one_line_exit_2(mutate, needle, command, tmp_path, capsys):
    path = _records_with(tmp_path, mutate)
    argv = [command, str(FIXTURES / "tf212.json"), path] + (["--output", str(tmp_path / "r.html")]
                                                              if command == "report" else [])
    err = one_line_exit_2(argv, capsys, needle)
    assert "bad.json" in err


def test_the_fixtures_pass_the_type_check():
    from kerasbench.record import check_record

    for path in FIXTURES.glob("*.json"):
        for i, record in enumerate(json.loads(path.read_text())["records"]):
            check_record(copy.deepcopy(record), str(path), i)


@pytest.mark.parametrize("source", ["iteration = lambda ctx, model: None\n",
                                    "build = lambda ctx: None\niteration = lambda ctx, model, *rest: model\n",
                                    "iteration: object = lambda ctx, model=None: None\n"])
def test_a_repro_hook_defined_as_a_lambda_is_accepted(source, tmp_path):
    from kerasbench import repro

    path = tmp_path / "r.py"
    path.write_text(source)
    assert repro.check(str(path)) == str(path)


def test_a_lambda_hook_of_the_wrong_arity_is_still_refused(tmp_path):
    from kerasbench import repro

    path = tmp_path / "r.py"
    path.write_text("iteration = lambda ctx: None\n")
    with pytest.raises(UsageError, match="iteration must be a plain function iteration"):
        repro.check(str(path))


@pytest.mark.parametrize("good,bad", [("2.14.0", "2.14.0"), ("2.14", "2.14.0")])
def test_triage_with_the_same_good_and_bad_release_is_refused_up_front(good, bad, capsys):
    err = one_line_exit_2(["triage", "--config", str(ROOT / "asv.matrix.json"), "--good", good, "--bad", bad,
                           "--loop", "sweep"], capsys, "Nothing to bisect")
    assert "same release" in err


# ---------------------------------------------------------------- class 2: an output is never one of the inputs


def _copy_fixture(tmp_path, name="tf212.json"):
    path = tmp_path / name
    path.write_text((FIXTURES / name).read_text())
    return path


@pytest.mark.parametrize("command,flag", [("compare", "--output"), ("report", "--output")])
def test_an_output_that_is_an_input_file_is_refused_and_the_input_kept(command, flag, tmp_path, capsys):
    a, b = _copy_fixture(tmp_path), _copy_fixture(tmp_path, "tf221.json")
    before = a.read_bytes()
    err = one_line_exit_2([command, str(a), str(b), flag, str(a)], capsys, "one of the inputs")
    assert str(a) in err and a.read_bytes() == before


def test_an_output_reached_through_a_link_or_a_folder_input_is_refused(tmp_path, capsys):
    records = tmp_path / "records"
    records.mkdir()
    a = _copy_fixture(records)
    _copy_fixture(records, "tf221.json")
    link = tmp_path / "link.json"
    link.symlink_to(a)
    before = a.read_bytes()
    one_line_exit_2(["compare", str(records), "--output", str(link)], capsys, "one of the inputs")
    one_line_exit_2(["report", str(records), "--output", str(a)], capsys, "one of the inputs")
    one_line_exit_2(["compare", str(records), "--output", str(tmp_path / "records" / ".." / "records" / a.name)],
                    capsys, "one of the inputs")
    assert a.read_bytes() == before


def test_a_new_output_beside_the_inputs_is_fine(tmp_path, capsys):
    a, b = _copy_fixture(tmp_path), _copy_fixture(tmp_path, "tf221.json")
    code, _ = call(["compare", str(a), str(b), "--output", str(tmp_path / "table.txt")])
    assert code == 0 and (tmp_path / "table.txt").exists()


def test_triage_json_over_the_repro_file_is_refused(tmp_path, capsys):
    repro = tmp_path / "r.py"
    repro.write_text("def iteration(ctx, model):\n    pass\n")
    one_line_exit_2(["triage", "--config", str(ROOT / "asv.matrix.json"), "--good", "2.12.1", "--bad", "2.21.0",
                     "--repro", str(repro), "--json", str(repro)], capsys, "one of the inputs")


# ---------------------------------------------------------------- class 6: nothing from a record runs in the report

EVIL = "<script>alert(1)</script>\"'&"
ENUMS = {"status", "verdict", "class", "schema"}  # the type check refuses other values here, so they never reach HTML


def _poison(value, key=None):
    """Every string of a record replaced by EVIL (and an EVIL variable name added); the enum-typed fields kept."""
    if isinstance(value, dict):
        out = {k: _poison(v, k) for k, v in value.items()}
        return {**out, EVIL: EVIL} if key == "env" else out
    if isinstance(value, list):
        return [_poison(v, key) for v in value]
    if isinstance(value, str) and key not in ENUMS:
        return EVIL
    return value


def test_every_string_of_a_record_is_escaped_in_the_report(tmp_path):
    from html.parser import HTMLParser

    from kerasbench import report

    paths = []
    for n, name in enumerate(("tf212.json", "tf221.json")):
        payload = json.loads((FIXTURES / name).read_text())
        payload["records"] = [_poison(r) for r in payload["records"]]
        for i, r in enumerate(payload["records"]):
            r["environment"]["tensorflow"] = f"2.{12 + n}.0{EVIL}"  # versions must differ to be compared
            r["strategy"] = r["spec"]["strategy"] = f"{EVIL}{i}"  # and strategies within a version
        path = tmp_path / f"{EVIL.replace('/', '_')}{n}.json"
        path.write_text(json.dumps(payload))
        paths.append(str(path))
    page = report.build(paths)
    assert "<script>alert" not in page and "\"'&<" not in page
    assert page.count("<script>") == 2  # the page's own scripts (the curves', the atlas' filters), nothing else

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.scripts, self.handlers = 0, []

        def handle_starttag(self, tag, attrs):
            self.scripts += tag == "script"
            self.handlers += [k for k, _ in attrs if k.startswith("on")]

    parser = Tags()
    parser.feed(page)
    parser.close()
    assert parser.scripts == 2 and parser.handlers == []


# ---------------------------------------------------------------- class 8: asv's logged errors are not swallowed


@pytest.mark.parametrize("content,needle", [('{"results": {tru', "Expecting property name"),
                                            ('{"version": 2, "results": {}}', "missing key 'params'")])
def test_publish_fails_naming_a_results_file_asv_could_not_read(content, needle, tmp_path, monkeypatch, capsys):
    import subprocess
    import sys

    if subprocess.run([sys.executable, "-m", "asv", "--version"], capture_output=True).returncode:
        pytest.skip("asv is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    (tmp_path / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "x", "repo": ".", "branches": ["master"], "results_dir": "results",
        "html_dir": "html", "environment_type": "virtualenv"}))
    machine = tmp_path / "results" / "m"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text('{"machine": "m", "version": 1}')
    (tmp_path / "results" / "benchmarks.json").write_text('{"version": 2}')
    (machine / "deadbeef-virtualenv-py3.11.json").write_text(content)
    monkeypatch.chdir(tmp_path)
    err = one_line_exit_2(["publish", "--config", "asv.conf.json", "--cdn"], capsys, "deadbeef-virtualenv-py3.11.json")
    assert needle in err


def test_asv_errors_reads_asvs_log_lines():
    from kerasbench.dashboard import asv_errors

    assert asv_errors("[ 11%] · Loading machine info\n[100.00%] · Writing index\n") is None
    assert "a.json (and 1 more file(s))" in asv_errors("[2%] ·· Error loading results file 'a.json': missing key 'x'\n"
                                                       "[3%] ·· Error parsing JSON in file 'b.json': bad\n")
    assert asv_errors("·· Error: something else\n") == "asv publish reported an error: Error: something else"


# ---------------------------------------------------------------- class 11: npm tarballs, secrets in records


def _fake_cache(cache, evil_spec=None, evil=None):
    """A cache of every npm tarball the dashboard needs (tiny files); `evil(tar)` adds members to one of them."""
    import tarfile

    from kerasbench.dashboard import ASSETS

    cache.mkdir(exist_ok=True)
    for spec in {s for s, _ in ASSETS.values()}:
        name, version = spec.rsplit("@", 1)
        with tarfile.open(cache / f"{name}-{version}.tgz", "w:gz") as tar:
            for s, inner in ASSETS.values():
                if s == spec:
                    data = b"/* asset */"
                    info = tarfile.TarInfo(f"package/{inner}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            if spec == evil_spec:
                evil(tar)
    return cache


def _member(name, kind=None, target=""):
    import tarfile

    info = tarfile.TarInfo(name)
    if kind:
        info.type, info.linkname = kind, target
    else:
        info.size = 4
    return info


@pytest.mark.parametrize("make,needle", [
    (lambda: _member("package/dist/fonts/../../../../../escaped.txt"), "leaves its folder"),
    (lambda: _member("package/dist/fonts/x/../../../../../../escaped.txt"), "leaves its folder"),
    (lambda: _member("package/dist/fonts/link", __import__("tarfile").SYMTYPE, "/etc/passwd"), "link"),
    (lambda: _member("package/dist/fonts/hard", __import__("tarfile").LNKTYPE, "/etc/passwd"), "link"),
])
def test_a_tarball_member_escaping_the_vendor_folder_is_refused(make, needle, tmp_path):
    from kerasbench import dashboard

    def evil(tar):
        info = make()
        tar.addfile(info, io.BytesIO(b"evil") if info.isfile() else None)

    cache = _fake_cache(tmp_path / "cache", "bootstrap@3.1.1", evil)
    html = tmp_path / "site" / "html"
    html.mkdir(parents=True)
    with pytest.raises(UsageError, match=needle):
        dashboard.localize(str(html), str(cache))
    assert not list(tmp_path.rglob("escaped.txt"))


def test_a_link_already_in_the_vendor_folder_is_not_written_through(tmp_path):
    from kerasbench import dashboard

    cache = _fake_cache(tmp_path / "cache")
    html = tmp_path / "html"
    outside = tmp_path / "outside"
    outside.mkdir()
    (html / "vendor" / "jquery").mkdir(parents=True)
    (html / "vendor" / "jquery" / "dist").symlink_to(outside)
    with pytest.raises(UsageError, match="outside"):
        dashboard.localize(str(html), str(cache))
    assert list(outside.iterdir()) == []


def test_a_clean_tarball_is_still_localized(tmp_path):
    from kerasbench import dashboard

    cache = _fake_cache(tmp_path / "cache")
    html = tmp_path / "html"
    html.mkdir()
    (html / "index.html").write_text('<script src="https://code.jquery.com/jquery-3.3.1.min.js"></script>')
    assert dashboard.localize(str(html), str(cache)) == 1
    assert (html / "vendor" / "jquery" / "dist" / "jquery.min.js").read_bytes() == b"/* asset */"


@pytest.mark.parametrize("name", ["KERASBENCH_API_TOKEN", "TF_SECRET", "KERAS_HUB_KEY", "KERAS_API_KEYS",
                                  "TF_PASSWORD", "KERASBENCH_DB_PASSWD", "TF_CREDENTIALS_FILE", "KERASBENCH_AUTH",
                                  "KERASBENCH_UPLOAD_URL", "TF_PRIVATE_THING", "KERAS_SESSION", "KERASBENCH_PW",
                                  # not on the allow-list (Terraform's TF_ too), or on it and named like a secret:
                                  "TF_VAR_db_password", "TF_TOKEN_app_terraform_io", "TF_CLI_CONFIG_FILE",
                                  "KERASBENCH_PR_COMMENT", "TF_GPU_AUTHORIZATION", "OMP_OAUTH", "MALLOC_JWT",
                                  "TF_XLA_PASSPHRASE", "TF_CUDA_CREDS", "TF_SYNC_BEARER", "OMP_SAS",
                                  "KMP_WEBHOOK", "SLACK_WEBHOOK_URL", "AWS_SECRET_ACCESS_KEY"])
def test_a_variable_that_may_hold_a_secret_is_not_recorded(name):
    from kerasbench.worker import environment_variables

    kept = environment_variables({name: "s3cr3t", "TF_CPP_MIN_LOG_LEVEL": "2", "HOME": "/root"})
    assert kept == {"TF_CPP_MIN_LOG_LEVEL": "2"}


def test_the_settings_that_change_a_measurement_are_still_recorded():
    from kerasbench.worker import environment_variables

    settings_ = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_GPU_ALLOCATOR": "cuda_malloc_async", "KERAS_BACKEND": "tensorflow",
                 "KERASBENCH_PROFILE": "quick", "MALLOC_ARENA_MAX": "2", "LD_PRELOAD": "/usr/lib/libjemalloc.so.2",
                 "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "-1", "TF_ENABLE_ONEDNN_OPTS": "0"}
    assert environment_variables({**settings_, "PATH": "/bin"}) == settings_
    assert environment_variables({"KERASBENCH_PYPI": "https://bob:hunter2@pypi.example/simple"}) == \
        {"KERASBENCH_PYPI": "https://***@pypi.example/simple"}
    assert environment_variables({"KERASBENCH_CONFIG": "bob:hunter2@host:/asv.conf.json"}) == \
        {"KERASBENCH_CONFIG": "***@host:/asv.conf.json"}  # a user and password without a scheme


def test_a_secret_in_the_environment_never_reaches_the_record(monkeypatch):
    """Class 11, wired: the worker's record keeps TF/Keras settings, not a token under a KERASBENCH_ name."""
    from kerasbench.runner import measure

    monkeypatch.setenv("KERASBENCH_API_TOKEN", "hunter2")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    record = measure(RunSpec("control", "control_noop", iterations=3, warmup=0))
    env = record["environment"]["env"]
    assert "KERASBENCH_API_TOKEN" not in env and "hunter2" not in json.dumps(record)
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "2"


# ---------------------------------------------------------------- issue #26 class B: special files, unbounded reads
# Every file kerasbench reads from a path it was given goes through kerasbench.files (read_bytes / read_text /
# read_json): opened without blocking, fstat()ed, refused when it is not a regular file (named: a FIFO, a character
# device), bounded in size per kind, JSON bounded in depth. Each command is run in-process in a thread (_no_hang):
# a regression fails after 10 s instead of hanging the suite, and /dev/zero is refused before a byte is read.

MATRIX = str(ROOT / "asv.matrix.json")


def _zero_link(tmp_path, name):
    path = tmp_path / name
    path.symlink_to("/dev/zero")
    return str(path)


def _deep(tmp_path, name, depth=100_000, records=True):
    text = "[" * depth + "]" * depth
    path = tmp_path / name
    path.write_text('{"schema": 1, "records": [' + text + "]}" if records else '{"version": 1, "x": ' + text + "}")
    return str(path)


def _too_large(tmp_path, name, size):
    path = tmp_path / name
    path.write_text('{"x": "' + "a" * size + '"}')
    return str(path)


BAD_FILES = {  # (make the file, what the one line says)
    "fifo": (lambda tmp, name: _fifo(tmp, name), "it is a FIFO, not a regular file"),
    "/dev/zero link": (lambda tmp, name: _zero_link(tmp, name), "it is a character device, not a regular file"),
    "folder": (lambda tmp, name: (tmp / name).mkdir() or str(tmp / name), "it is a directory"),
    "nested 100k deep": (lambda tmp, name: _deep(tmp, name, records=False), "nested deeper than 100 levels"),
    "larger than 1 MiB": (lambda tmp, name: _too_large(tmp, name, 1 << 20), "larger than 1 MiB"),
}
CONFIG_READERS = {  # every command that reads an asv config given as --config
    "envs": ["envs", "--config", "{bad}"],
    "run --tf": ["run", "--tf", "2.12.1", "--loop", "control", "--strategy", "control_noop", "--config", "{bad}"],
    "publish": ["publish", "--config", "{bad}", "--cdn"],
    "triage": ["triage", "--config", "{bad}", "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"],
    "attribute": ["attribute", "--config", "{bad}", "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"],
}


def _raised(fn, *args):
    """The exception fn(*args) raised (for _no_hang, whose thread would swallow it), or None."""
    try:
        fn(*args)
    except Exception as e:  # returned to the test, which checks its type
        return e
    return None


def _one_line_no_hang(argv, capsys, *needles):
    code = _no_hang(lambda: call(argv)[0])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("bad", BAD_FILES)
@pytest.mark.parametrize("command", CONFIG_READERS)
def test_an_asv_config_that_is_not_a_small_regular_file_is_one_line(command, bad, tmp_path, capsys):
    make, needle = BAD_FILES[bad]
    path = make(tmp_path, "asv.conf.json")
    argv = [a.format(bad=path) for a in CONFIG_READERS[command]]
    verb = "parse" if bad.startswith("nested") else "read"
    _one_line_no_hang(argv, capsys, f"Cannot {verb} asv config {path}", needle)


RECORDS_READERS = {  # every command that reads records files, with "{bad}" among its inputs
    "compare": ["compare", str(FIXTURES / "tf212.json"), "{bad}"],
    "report": ["report", str(FIXTURES / "tf212.json"), "{bad}", "--output", "{tmp}/r.html"],
    "score": ["score", "{bad}", "--reference", str(FIXTURES / "tf212.json")],
    "overhead --records": ["overhead", "--records", "{bad}"],
    "calibrate --settling": ["calibrate", "--settling", "{bad}"],
}


@pytest.mark.parametrize("bad", ["/dev/zero link", "nested 100k deep"])
@pytest.mark.parametrize("command", RECORDS_READERS)
def test_a_records_file_that_never_ends_or_nests_too_deep_is_one_line(command, bad, tmp_path, capsys):
    path = _zero_link(tmp_path, "zero.json") if bad == "/dev/zero link" else _deep(tmp_path, "deep.json")
    argv = [a.format(bad=path, tmp=tmp_path) for a in RECORDS_READERS[command]]
    needle = "it is a character device" if bad == "/dev/zero link" else "nested deeper than 100 levels"
    _one_line_no_hang(argv, capsys, path, needle)


@pytest.mark.parametrize("command", RECORDS_READERS)
def test_a_fifo_or_a_dev_zero_link_inside_a_records_folder_is_refused(command, tmp_path, capsys):
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "ok.json").write_text((FIXTURES / "tf221.json").read_text())
    fifo = _fifo(folder, "x.json")
    argv = [a.format(bad=str(folder), tmp=tmp_path) for a in RECORDS_READERS[command]]
    _one_line_no_hang(argv, capsys, fifo, "a FIFO")
    os.unlink(fifo)
    zero = _zero_link(folder, "y.json")
    _one_line_no_hang(argv, capsys, zero, "a character device")


def test_a_fifo_or_dev_zero_inside_a_merge_source_is_refused_and_nothing_written(tmp_path, capsys):
    src = tmp_path / "src" / "results" / "box"
    src.mkdir(parents=True)
    (src / "machine.json").write_text('{"machine": "box", "version": 1}')
    zero = _zero_link(src, "abcdef12-env.json")
    dest = tmp_path / "dest"
    argv = ["merge", str(tmp_path / "src"), str(dest)]
    # a link out of its source is refused before it is read (merge copies only what lies inside its sources)
    _one_line_no_hang(argv, capsys, f"Cannot merge {zero}: it links outside its source", "to /dev/zero")
    os.unlink(zero)
    fifo = _fifo(src, "abcdef12-env.json")
    _one_line_no_hang(argv, capsys, f"Cannot read file to merge {fifo}", "a FIFO")
    os.unlink(fifo)
    deep = _deep(src, "abcdef12-env.json")
    _one_line_no_hang(argv, capsys, f"Cannot parse file to merge {deep}", "nested deeper")
    assert not dest.exists()


@pytest.mark.parametrize("bad", ["fifo", "/dev/zero link", "larger than 1 MiB", "nested 100k deep"])
def test_a_stored_calibration_that_is_not_a_small_regular_file_is_a_bad_calibration(bad, tmp_path, monkeypatch,
                                                                                      capsys):
    from kerasbench import calibration_store

    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    make, needle = BAD_FILES[bad]
    path = make(tmp_path, os.path.basename(calibration_store.path_for("glibc")))
    error = _no_hang(lambda: _raised(calibration_store.load, "glibc"))
    assert isinstance(error, UsageError) and "Bad calibration file" in str(error)
    assert path in str(error) and needle in str(error)
    _one_line_no_hang(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3"], capsys,
                      "Bad calibration file", needle)


def test_a_repro_file_linked_to_dev_zero_is_refused(tmp_path, capsys):
    path = _zero_link(tmp_path, "r.py")
    _one_line_no_hang(["run", "--repro", path, "--strategy", "reuse_model"], capsys,
                      f"Cannot read repro file {path}", "a character device")


def test_the_reader_checks_the_opened_file_not_only_the_path(tmp_path, monkeypatch):
    """A FIFO swapped in between the check and the open (or a check that was skipped) neither hangs nor is read."""
    from kerasbench import files

    fifo = _fifo(tmp_path)
    monkeypatch.setattr(files, "check_readable", lambda path, kind="": path)
    error = _no_hang(lambda: _raised(files.read_json, fifo, "records file"))
    assert isinstance(error, files.ReadError)
    assert str(error) == f"Cannot read records file {fifo}: it is a FIFO, not a regular file."
    assert error.path == fifo and error.problem == "it is a FIFO, not a regular file"


def test_the_size_limit_is_per_kind_and_a_file_at_the_limit_is_read(tmp_path):
    from kerasbench import files

    path = tmp_path / "x.json"
    path.write_bytes(b" " * (files.CONFIG_LIMIT - 2) + b"{}")
    assert files.read_json(str(path), "asv config") == {}
    path.write_bytes(b" " * (files.CONFIG_LIMIT - 1) + b"{}")
    with pytest.raises(UsageError, match=r"larger than 1 MiB, the most an asv config can be"):
        files.read_json(str(path), "asv config")
    assert files.read_json(str(path), "records file", files.DATA_LIMIT) == {}  # records may be far larger


@pytest.mark.parametrize("depth,ok", [(100, True), (101, False), (990, False), (100_000, False)])
def test_json_depth_is_bounded_without_recursion(depth, ok, tmp_path):
    from kerasbench import files

    path = tmp_path / "x.json"
    path.write_text("[" * depth + "]" * depth)
    if ok:
        assert files.read_json(str(path), "records file") is not None
    else:
        with pytest.raises(UsageError, match="nested deeper than 100 levels"):
            files.read_json(str(path), "records file")
    assert not files.too_deep({"series": list(range(100_000)), "deep": [[[[]]]]})


LOAD_PROBLEMS = [
    (lambda r: r["repeats"][0]["result"].pop("series"), "records[0].repeats[0].result has no 'series'"),
    (lambda r: r["repeats"][0]["result"]["series"].pop("rss"), "records[0].repeats[0].result.series has no 'rss'"),
    (lambda r: r["spec"].update(iterations=0), "records[0].spec.iterations is 0, expected 1 or more"),
    (lambda r: r["spec"].update(repeats=0), "records[0].spec.repeats is 0, expected 1 or more"),
    (lambda r: r["spec"].update(warmup=-1), "records[0].spec.warmup is -1, expected 0 or more"),
    (lambda r: r["spec"].pop("iterations"), "records[0].spec has no 'iterations'"),
]


@pytest.mark.parametrize("mutate,needle", LOAD_PROBLEMS)
@pytest.mark.parametrize("command", ["compare", "report", "score"])
def test_a_record_the_readers_cannot_use_is_refused_at_load_time(mutate, needle, command, tmp_path, capsys):
    path = _records_with(tmp_path, mutate)
    argv = {"compare": ["compare", str(FIXTURES / "tf212.json"), path],
            "report": ["report", str(FIXTURES / "tf212.json"), path, "--output", str(tmp_path / "r.html")],
            "score": ["score", path, "--reference", str(FIXTURES / "tf221.json")]}[command]
    err = one_line_exit_2(argv, capsys, f"Not a kerasbench record in {path}: {needle}.")
    assert "KeyError" not in err


# ---------------------------------------------------------------- issue #26 round two: every input checked before work
# Each case was run on the code before its fix; what it did then is noted as "before:".


def _no_worker(monkeypatch):
    """Fail the test if a worker process is started (runner.run_worker) or an environment made."""
    from kerasbench import environment, runner

    def started(*args, **kwargs):
        raise AssertionError("a worker or an environment was started before the input was checked")

    monkeypatch.setattr(runner, "run_worker", started)
    monkeypatch.setattr(environment, "python_for", started)


# -- class M: the machine name the records say


BAD_MACHINE = "bad name!"
MACHINE_USERS = {  # every session that measures, with what it would measure first (TF-free where it would start)
    "run": ["run", "--loop", "control", "--strategy", "control_noop,control_leak_native", "--iterations", "3",
            "--warmup", "0", "--floor-kib", "64"],
    "run (calibrating first)": ["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3"],
    "ablate": ["ablate", "--loop", "sweep", "--iterations", "3", "--floor-kib", "64"],
    "calibrate": ["calibrate", "--runs", "1"],
    "triage": ["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"],
    "attribute": ["attribute", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"],
}


@pytest.mark.parametrize("command", MACHINE_USERS)
def test_a_bad_machine_name_is_one_line_before_any_worker(command, monkeypatch, capsys):
    """Before: the first pair was measured, then its record refused the name (its result lost), exit 2."""
    monkeypatch.setenv("KERASBENCH_MACHINE", BAD_MACHINE)
    monkeypatch.delenv("KERASBENCH_NO_CALIBRATE")  # `run` without a calibration would calibrate first: not now
    _no_worker(monkeypatch)
    one_line_exit_2(MACHINE_USERS[command], capsys, "Invalid machine name from $KERASBENCH_MACHINE")


def test_a_bad_machine_name_is_refused_by_the_api_and_the_runner(monkeypatch):
    import kerasbench
    from kerasbench import runner

    monkeypatch.setenv("KERASBENCH_MACHINE", BAD_MACHINE)
    _no_worker(monkeypatch)
    spec = RunSpec("control", "control_noop", iterations=3, warmup=0, floor=0.0)
    for measure in (lambda: kerasbench.measure("control", strategies="control_noop", iterations=3, floor_kib=64),
                    lambda: runner.measure(spec), lambda: runner.measure_at_once([spec, spec], 2, None, None),
                    lambda: runner.measure_pairs(spec, [("control", "control_noop")], lambda strategy: 3),
                    lambda: runner.measure_specs([spec, spec], 2)):
        with pytest.raises(UsageError, match=r"Invalid machine name from \$KERASBENCH_MACHINE"):
            measure()


def test_machine_overrides_a_bad_machine_variable(monkeypatch, capsys):
    """--machine is the name the records say: a bad $KERASBENCH_MACHINE it replaces is not an error."""
    from kerasbench import runner

    monkeypatch.setenv("KERASBENCH_MACHINE", BAD_MACHINE)
    skipped = {"repeat": 0, "status": "skipped", "reason": "not measured here", "result": None, "environment": None}
    monkeypatch.setattr(runner, "run_worker", lambda spec, **kwargs: dict(skipped))  # the runner checks first
    code, _ = call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--warmup", "0",
                    "--floor-kib", "64", "--machine", "good-name"])
    assert code == 0, capsys.readouterr().err
    assert os.environ["KERASBENCH_MACHINE"] == "good-name"  # what the workers (and the records) get


# -- class N: counts are whole numbers in range, bools are not counts


@pytest.mark.parametrize("argument", ["iterations", "warmup", "repeats", "jobs", "batch_size", "trace"])
@pytest.mark.parametrize("value", [True, False, 2.0, "3"])
def test_the_api_refuses_a_bool_or_a_non_integer_as_a_count(argument, value, monkeypatch):
    """Before: iterations=True, repeats=True, jobs=True, batch_size=True, trace=True were measured (True as 1)."""
    import kerasbench

    _no_worker(monkeypatch)
    with pytest.raises(UsageError) as raised:
        kerasbench.measure("control", strategies="control_noop", floor_kib=64, **{argument: value})
    assert f"Invalid value for argument `{argument}`. Received: {argument}={value!r}." in str(raised.value)
    with pytest.raises(UsageError, match=f"argument `{argument}`"):
        RunSpec("control", "control_noop", **{argument: value}).validate()


@pytest.mark.parametrize("argument,value", [("strategies", 3), ("strategies", ["control_noop", 1]), ("loop", 3),
                                            ("repro", 3)])
def test_the_api_refuses_names_that_are_not_names(argument, value, monkeypatch):
    """Before: strategies=3 and strategies=[.., 1] were TypeErrors from deep inside."""
    import kerasbench

    _no_worker(monkeypatch)
    with pytest.raises(UsageError, match=f"argument `{argument}`"):
        kerasbench.measure(**{"loop": None if argument == "repro" else "control", argument: value})


NUMERIC_OPTIONS = [  # (command line, option): each refused by argparse, before anything is read or measured
    (["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep", "--attribute"],
     "--max-envs"),
    (["attribute", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--max-envs"),
    (["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--jobs"),
    (["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--iterations"),
    (["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--warmup"),
    (["attribute", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--repeats"),
    (["run", "--loop", "control", "--strategy", "control_noop"], "--iterations"),
    (["run", "--loop", "control", "--strategy", "control_noop"], "--warmup"),
    (["run", "--loop", "control", "--strategy", "control_noop"], "--repeats"),
    (["run", "--loop", "control", "--strategy", "control_noop"], "--jobs"),
    (["ablate", "--loop", "sweep"], "--jobs"),
    (["score", str(FIXTURES / "tf212.json"), "--reference", str(FIXTURES / "tf221.json")], "--top"),
    (["attribute", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"], "--jobs"),
    (["calibrate"], "--runs"),
    (["calibrate"], "--warmup"),
    (["calibrate"], "--jobs"),
    (["overhead"], "--runs"),
    (["overhead"], "--iterations"),
    (["overhead", "--records", str(FIXTURES / "tf212.json")], "--cores"),
    (["run", "--loop", "sweep", "--strategy", "reuse_model"], "--batch-size"),
]


@pytest.mark.parametrize("value", ["-1", "1.5", "1e3", "lots", ""])
@pytest.mark.parametrize("argv,option", NUMERIC_OPTIONS)
def test_numeric_options_are_range_checked_at_parse_time(argv, option, value, monkeypatch, capsys):
    """Before: `triage --attribute --max-envs -1` and `score --top -1` were accepted (the attribution never ran; the
    last disagreeing pair was left out); the counts were checked only once the spec was built."""
    _no_worker(monkeypatch)
    err = one_line_exit_2(argv + [option, value], capsys, f"argument {option}: Invalid value")
    assert f"Received: {value!r}. Expected an integer >= " in err


# -- class D: a name given twice is one pair


@pytest.mark.parametrize("strategies", [["--strategy", "control_noop", "--strategy", "control_noop"],
                                        ["--strategy", "control_noop,control_noop"],
                                        ["--strategy", "control_leak_native",
                                         "--strategy", "control_noop,control_leak_native"]])
def test_a_pair_named_twice_on_the_command_line_is_measured_once(strategies, monkeypatch):
    """Before: `--strategy a,a` measured two records of one pair, which compare then refused ("Duplicate record");
    `--strategy a --strategy b` measured b alone."""
    from kerasbench import session

    seen = []
    monkeypatch.setattr(session, "run", lambda base, pairs, *args: seen.append(list(pairs)) or 0)
    code, _ = call(["run", "--loop", "control,control", *strategies, "--iterations", "3", "--floor-kib", "64"])
    want = ["control_noop"] if "control_leak_native" not in strategies else ["control_leak_native", "control_noop"]
    assert code == 0 and seen == [[("control", s) for s in want]]


def test_a_pair_given_twice_to_the_api_is_measured_once(monkeypatch):
    import kerasbench
    from kerasbench import runner

    seen = []
    monkeypatch.setattr(runner, "measure_pairs", lambda base, pairs, *args: seen.append(list(pairs)) or [])
    kerasbench.measure("control", strategies=["control_noop", "control_leak_native", "control_noop"], iterations=3,
                       floor_kib=64)
    kerasbench.measure("control,control", strategies="control_noop,control_noop", iterations=3, floor_kib=64)
    assert seen == [[("control", "control_noop"), ("control", "control_leak_native")], [("control", "control_noop")]]


# -- class A: asv configs of the wrong shape

WRONG_SHAPES = {  # config: what the one line says
    "[1, 2]": "it is a JSON array, expected an object",
    '{"project": "x", "version": 1}': "it has no 'repo'",
    '{"project": "x", "repo": ""}': "it has no 'version'",
    '{"repo": ".", "version": 2}': "'version' is 2, expected 1 (a newer format than this asv reads",
    '{"repo": ".", "version": "1"}': "'version' is \"1\", expected 1",
    '{"repo": ".", "version": 1, "html_dir": 5}': "'html_dir' is an integer, expected a string",
    '{"repo": 3, "version": 1}': "'repo' is an integer, expected a string",
    '{"repo": ".", "version": 1, "include": "x"}': "'include' is a string, expected a list of objects",
    '{"repo": ".", "version": 1, "include": [{"python": 3.11, "req": {}}]}':
        "'include'[0].python is a number, expected a string",
    '{"repo": ".", "version": 1, "pythons": ["3.11", 3]}': "'pythons'[1] is an integer, expected a string",
    '{"repo": ".", "version": 1, "matrix": []}': "'matrix' is an array, expected an object",
}


@pytest.mark.parametrize("content", WRONG_SHAPES)
@pytest.mark.parametrize("command", CONFIG_READERS)
def test_an_asv_config_of_the_wrong_shape_is_one_line_naming_it(command, content, tmp_path, monkeypatch, capsys):
    """Before: no repo or no version: envs printed asv's traceback (UserError), publish said asv's last line, triage
    and run --tf said "no matrix 'include' entries"; wrong types: AttributeError or TypeError tracebacks."""
    _no_worker(monkeypatch)
    path = tmp_path / "asv.conf.json"
    path.write_text(content)
    argv = [a.format(bad=path) for a in CONFIG_READERS[command]]
    one_line_exit_2(argv, capsys, f"Invalid asv config {path}: {WRONG_SHAPES[content]}")


@pytest.mark.parametrize("command", [c for c in CONFIG_READERS if c != "publish"])  # publish: asv needs none
@pytest.mark.parametrize("value", [None, ""])
def test_an_asv_config_without_environment_type_is_one_line_naming_it(command, value, tmp_path, monkeypatch, capsys):
    """#40: `envs --config` with a config lacking environment_type was asv's traceback ("RuntimeError: Environment
    type must be specified"); the commands that name or make its environments say so in one line, exit 2."""
    _no_worker(monkeypatch)
    conf = json.loads("\n".join(line for line in (ROOT / "asv.matrix.json").read_text().splitlines()
                                if not line.strip().startswith("//")))
    conf.pop("environment_type") if value is None else conf.update(environment_type=value)
    path = tmp_path / "asv.matrix.json"
    path.write_text(json.dumps(conf))
    argv = [a.format(bad=path) for a in CONFIG_READERS[command]]
    one_line_exit_2(argv, capsys, f"Invalid asv config {path}: it has no 'environment_type'")


def test_the_shipped_asv_configs_have_the_right_shape():
    from kerasbench.asvconf import read_config

    for name in ("asv.conf.json", "asv.matrix.json", "asv.gpu.json"):
        assert read_config(str(ROOT / name))["repo"] == "."


# -- class F: the files merge, publish and run read


@pytest.mark.parametrize("name,content,needle", [
    ("box/machine.json", '{"machine": "box", "version": 1', "it is not JSON (truncated or corrupt?)"),
    ("box/machine.json", "[]", "it is an array, not asv's machine.json"),
    ("box/machine.json", '{"machine": "box", "version": 2}', "its version is 2, asv's machine.json is version 1; "
                                                             "a newer asv wrote it"),
    ("benchmarks.json", '{"version": 3}', "its version is 3, asv's benchmarks.json is version 2"),
    ("benchmarks.json", "", "it is not JSON"),
])
def test_a_corrupt_or_newer_machine_json_in_a_merge_source_is_one_line(name, content, needle, tmp_path, capsys):
    """Before: merged as the newest copy (exit 0), and every publish of the merged tree failed in asv."""
    results = tmp_path / "src" / "results"
    (results / "box").mkdir(parents=True)
    (results / "box" / "machine.json").write_text('{"machine": "box", "version": 1}')
    (results / "benchmarks.json").write_text('{"version": 2}')
    (results / name).write_text(content)
    dest = tmp_path / "dest"
    one_line_exit_2(["merge", str(tmp_path / "src"), str(dest)], capsys, f"Cannot merge {results / name}: {needle}")
    assert not dest.exists()


def _damage(cache, name="jquery-3.3.1.tgz"):
    path = cache / name
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path, whole


def test_a_truncated_npm_tarball_in_the_cache_is_fetched_again(tmp_path, monkeypatch):
    """Before: every publish failed with EOFError (a traceback) until the file was found and deleted by hand."""
    import subprocess

    from kerasbench import dashboard

    cache = _fake_cache(tmp_path / "cache")
    path, whole = _damage(cache)
    packed = []

    def npm(command, **kwargs):
        packed.append(command)
        path.write_bytes(whole)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(dashboard.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(dashboard.subprocess, "run", npm)
    html = tmp_path / "html"
    html.mkdir()
    dashboard.localize(str(html), str(cache))
    assert [c[:3] for c in packed] == [["npm", "pack", "jquery@3.3.1"]] and path.read_bytes() == whole
    assert (html / "vendor" / "jquery" / "dist" / "jquery.min.js").read_bytes() == b"/* asset */"


def test_a_truncated_npm_tarball_that_cannot_be_fetched_again_is_named(tmp_path, monkeypatch):
    import subprocess

    from kerasbench import dashboard

    cache = _fake_cache(tmp_path / "cache")
    path, whole = _damage(cache)
    html = tmp_path / "html"
    html.mkdir()
    monkeypatch.setattr(dashboard.shutil, "which", lambda name: None)  # no npm: say which file to delete
    with pytest.raises(UsageError, match=f"The cached npm package {path} is damaged .*: delete it"):
        dashboard.localize(str(html), str(cache))
    monkeypatch.setattr(dashboard.shutil, "which", lambda name: "/usr/bin/npm")  # npm packs a damaged one again
    monkeypatch.setattr(dashboard.subprocess, "run", lambda command, **kwargs: path.write_bytes(whole[:99]) and
                        subprocess.CompletedProcess(command, 0, "", ""))
    with pytest.raises(UsageError, match=f"npm pack jquery@3.3.1 wrote a damaged package {path}"):
        dashboard.localize(str(html), str(cache))


def test_a_failed_command_is_said_as_a_command_line_not_a_list(tmp_path, monkeypatch):
    """Before: "npm pack jquery@3.3.1 failed: ['npm ERR! 404 …']" (a Python list); asv publish's said no command."""
    import subprocess

    from kerasbench import dashboard

    failed = subprocess.CompletedProcess([], 1, "", "npm ERR! code E404\nnpm ERR! 404 Not Found - GET jquery\n")
    monkeypatch.setattr(dashboard.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(dashboard.subprocess, "run", lambda *a, **k: failed)
    cache = tmp_path / "my cache"
    with pytest.raises(UsageError) as raised:
        dashboard.localize(str(tmp_path), str(cache))
    assert str(raised.value) == ("npm pack failed (exit 1): npm ERR! 404 Not Found - GET jquery (command: npm pack "
                                 f"blueimp-md5@2.19.0 --pack-destination '{cache}' --silent)")
    assert "[" not in str(raised.value)


@pytest.mark.parametrize("source,error", [("x = " + "+".join(["1"] * 200_000), "RecursionError"),
                                          ("x = " + "-" * 100_000 + "1", "MemoryError")])
def test_a_repro_too_large_for_pythons_parser_is_one_line(source, error, tmp_path, monkeypatch, capsys):
    """Before: a traceback ending in RecursionError (ast construction) or MemoryError (the parser's stack), exit 1."""
    _no_worker(monkeypatch)
    path = tmp_path / "r.py"
    path.write_text(source + "\n\ndef iteration(ctx, model):\n    pass\n")
    err = one_line_exit_2(["run", "--repro", str(path), "--strategy", "reuse_model"], capsys,
                          f"Repro file {path} cannot be parsed: an expression is too long or nested too deeply")
    assert error in err


# -- class P: the worker's result pipe carries events only


def _interpreter(tmp_path, junk, late=False):
    """A worker interpreter (RunSpec.python) that runs kerasbench's worker, and writes `junk` to its result pipe
    first (or once the worker sent its result: `late`), in pair control × control_noop only."""
    import sys

    shim = tmp_path / "shim.py"
    shim.write_text(f"""import os, sys
from kerasbench import worker
spec, fd = sys.argv[1], int(sys.argv[2])
junk = {junk!r} if '"control_noop"' in spec else b""
late = os.dup(fd)  # the worker closes fd once its result is sent
if not {late!r}:
    os.write(fd, junk)
worker.main(sys.argv[1:])
os.write(late, junk if {late!r} else b"")
""")
    script = tmp_path / "python"  # the runner starts `python -m kerasbench.worker SPEC FD ANSWER_FD`
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{shim}" "$3" "$4" "$5"\n')
    script.chmod(0o755)
    return str(script)


JUNK = {  # what user code (or a library writing to a descriptor it does not own) might put into the pipe
    "text": (b"hello from the repro\n", "'hello from the repro'"),
    "JSON that is not an object": (b"[1, 2]\n", "'[1, 2]'"),
    "an object without event": (b'{"x": 1}\n', "'{\"x\": 1}'"),
    "an event without its fields": (b'{"event": "iteration"}\n', "'{\"event\": \"iteration\"}'"),
    "bytes that are not UTF-8": (b"\xff\xfe\n", "'\ufffd\ufffd'"),
    "a long line": (b"x" * 500 + b"\n", "'" + "x" * 80 + "…'"),
}


@pytest.mark.parametrize("kind", JUNK)
def test_a_line_that_is_not_an_event_stops_its_pair_and_the_others_go_on(kind, tmp_path, capfd):
    """Before: text was skipped silently; JSON that is not an object killed the reader thread (AttributeError
    traceback, the worker then failed on a broken pipe); an object without event, or an event without its fields,
    was a KeyError traceback of the parent: the whole run ended."""
    from kerasbench.runner import measure_pairs

    junk, shown = JUNK[kind]
    base = RunSpec("control", "control_noop", iterations=3, warmup=0, floor=0.0,
                   python=_interpreter(tmp_path, junk), time_limit=60).validate()
    pairs = [("control", "control_noop"), ("control", "control_leak_native")]
    records = measure_pairs(base, pairs if kind == "text" else pairs[:1], lambda strategy: 3)
    assert "Traceback" not in capfd.readouterr().err
    assert records[0]["status"] == "stopped"
    assert records[0]["reason"] == f"the worker wrote a line that is not an event: {shown} during setup"
    if kind == "text":
        assert records[1]["status"] == "ok"


def test_a_line_that_is_not_an_event_after_the_result_still_ends_the_pair(tmp_path, capfd):
    from kerasbench.runner import measure_pairs

    base = RunSpec("control", "control_noop", iterations=3, warmup=0, floor=0.0,
                   python=_interpreter(tmp_path, b"bye\n", late=True), time_limit=60).validate()
    record, = measure_pairs(base, [("control", "control_noop")], lambda strategy: 3)
    assert "Traceback" not in capfd.readouterr().err
    assert record["status"] == "stopped" and record["repeats"][0]["result"] is None
    assert record["reason"] == "the worker wrote a line that is not an event: 'bye' after iteration 3/3"


def test_what_makes_an_event():
    from kerasbench.runner import _event

    assert _event('{"event": "iteration", "iteration": 2, "rss": 5, "rss_since": [4, 5]}\n')["iteration"] == 2
    assert _event('{"event": "done", "result": {}, "environment": {}}')["event"] == "done"
    for line in ["", "\n", "nan", "[]", "null", '{"event": 3}', '{"event": "nope"}', '{"event": "phase"}',
                 '{"event": "iteration", "iteration": true}', '{"event": "iteration", "iteration": "1"}',
                 '{"event": "iteration", "iteration": 1, "rss_since": [1, "2"]}', '{"event": "done", "result": []}',
                 '{"event": "skip", "reason": "x"}', "[" * 10_000 + "]" * 10_000]:
        assert _event(line) is None, line


# ---------------------------------------------------------------- issue #40 round three: a number judges only where it
# can mean something. Each case was run on the code before its fix; what it did then is noted as "before:".


# -- class P: floors and tolerated growths are bounded by the machine's memory; one unit grammar


@pytest.mark.parametrize("text,size", [("16KiB", 16 * KIB), ("16 kib", 16 * KIB), ("16KB", 16000), ("16 kB", 16000),
                                       ("1.5GiB", int(1.5 * 1024**3)), ("4GB", 4 * 10**9), ("2 TiB", 2 * 1024**4),
                                       ("512", 512), ("512 B", 512)])
def test_sizes_have_one_unit_grammar_kb_is_1000_kib_1024(text, size):
    """Before: '16KB' read as 16 KiB (16,384 bytes), as KiB did; now KB is SI's 1000, KiB IEC's 1024."""
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["16k", "16K", "1.5G", "4 M", "2T", "16Ki"])
def test_a_bare_k_m_or_g_is_refused_as_ambiguous_naming_both_readings(text):
    """Before: '16k' and '1.5G' read as KiB and GiB, silently."""
    with pytest.raises(UsageError, match=r"Received: '.*'\. Expected a unit that says its base: .iB \([0-9,]+ bytes\) "
                                         r"or .B \([0-9,]+ bytes\); . alone is ambiguous\.$"):
        parse_bytes(text, "--memory-cap", 0)


def test_a_memory_cap_of_a_bare_g_is_one_line(capsys):
    one_line_exit_2(["run", "--loop", "control", "--strategy", "control_noop", "--memory-cap", "4G"], capsys,
                    "G alone is ambiguous")


@pytest.mark.parametrize("value", [0, -0.0, "0", 0.0])
def test_a_floor_of_zero_is_zero_however_written(value):
    from kerasbench.units import check_growth

    got = check_growth(value, "floor_kib", KIB)
    assert got == 0.0 and math.copysign(1, got) == 1.0  # -0.0 is 0


@pytest.mark.parametrize("kib", [1e280, 1e290, 2 * 1024**3, math.nan, -1, -1e9, 10**400])
def test_a_floor_beyond_the_machines_memory_or_not_a_growth_is_refused(kib, monkeypatch):
    """Before: floor_kib=1e280 (or 2 TiB on a smaller machine) judged a 260 KiB/iteration leak `flat`, rc 0; -1e9
    was refused by check_number, 10**400 as 'inf'."""
    import kerasbench
    from kerasbench import units

    monkeypatch.setattr(units, "max_growth_bytes", lambda: float(64 * 1024**3))  # a machine of 64 GiB
    _no_worker(monkeypatch)
    with pytest.raises(UsageError, match="Invalid value for floor_kib") as raised:
        kerasbench.measure("control", strategies="control_noop", iterations=3, floor_kib=kib)
    assert "\n" not in str(raised.value)
    if kib in (1e280, 1e290, 2 * 1024**3):  # a finite growth: why it is no floor
        assert "this machine's memory" in str(raised.value) and "64 GiB" in str(raised.value)


def test_floor_kib_beyond_the_machines_memory_is_one_line_exit_2(capsys):
    """Before: `run --floor-kib 1e280` measured and printed `flat` for a native leak, rc 0."""
    one_line_exit_2(["run", "--loop", "control", "--strategy", "control_leak_native", "--iterations", "3",
                     "--floor-kib", "1e280"], capsys, "this machine's memory")


def _calibration(tmp_path, floors_table, heap_table=None):
    from kerasbench import calibration_store

    data = {"schema": 2, "allocator": "glibc", "key": calibration_store.environment_key("glibc"), "host": "h",
            "allocator_detected": "glibc", "created": "2026-01-01T00:00:00Z", "runs": 10, "warmup": 2,
            "floors": floors_table, "report": {"by_iterations": {}}}
    if heap_table is not None:
        data["heap_floors"] = heap_table
    path = tmp_path / os.path.basename(calibration_store.path_for("glibc"))
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("table,heap", [({"4": 1e280, "8": 65536.0}, None), ({"4": 65536.0}, {"4": 1e20})])
def test_a_calibration_whose_floor_is_beyond_the_machines_memory_is_a_bad_file(table, heap, tmp_path, monkeypatch,
                                                                                capsys):
    """Before: a calibration in the user's folder with floors of 1e280 turned a 260 KiB/iteration native leak into
    `flat (leak)`, rc 0."""
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    path = _calibration(tmp_path, table, heap)
    _no_worker(monkeypatch)
    err = one_line_exit_2(["run", "--loop", "control", "--strategy", "control_leak_native", "--iterations", "4"],
                          capsys, f"Bad calibration file {path}: bad {'heap ' if heap else ''}floor '4'")
    assert "above this machine's memory" in err


def test_a_settling_calibration_beyond_the_machines_memory_is_refused(tmp_path, monkeypatch):
    from kerasbench.rule import settling

    path = tmp_path / "settling.json"
    path.write_text(json.dumps({"schema": settling.SCHEMA, "floors": {"8": 1e280}}))
    with pytest.raises(UsageError, match="Bad settling calibration .*this machine's memory"):
        settling._read(str(path))


@pytest.mark.parametrize("part,key,value", [("spec", "floor", math.nan), ("spec", "floor", 1e280),
                                            ("spec", "floor", -1e9), ("summary", "floor", 1e300),
                                            ("summary", "heap_floor", -1.0)])
@pytest.mark.parametrize("command", ["compare", "score"])
def test_a_record_whose_floor_is_no_floor_is_refused_at_load(part, key, value, command, tmp_path, capsys):
    """Before: a scored record whose given floor was NaN or 1e280 made score re-judge the reference at it
    ("agreement 100 %", rc 0); a summary floor of 1e300 made compare call any change `unchanged`."""
    def mutate(r):
        r[part][key] = value
        if part == "spec":
            r["spec"]["floor_source"] = "given (--floor-kib or RunSpec.floor)"

    path = _records_with(tmp_path, mutate)
    argv = {"compare": ["compare", str(FIXTURES / "tf212.json"), path],
            "score": ["score", path, "--reference", str(FIXTURES / "tf221.json")]}[command]
    one_line_exit_2(argv, capsys, f"Not a kerasbench record in {path}: records[0].{part}.{key} is ")


def test_a_verdict_at_a_given_floor_says_so_on_its_line():
    """Before: `[1/1] control × control_leak_native: flat (RSS flat, heap flat; flat), RSS +256.0 KiB/iteration, 12
    iterations`, at --floor-kib 1e6: nothing on the line said the floor was the user's."""
    from kerasbench.console import Progress
    from kerasbench.testing import failure_message

    record = json.loads((FIXTURES / "tf221.json").read_text())["records"][0]
    s = record["summary"]
    s.update(floor=1024.0 * KIB, floor_source="given (--floor-kib or RunSpec.floor)",
             floors_from={"rss": {"kind": "given", "source": "x"}})
    out = io.StringIO()
    progress = Progress(out, 1, 1)
    progress.start(1, record["loop"], record["strategy"], 10)
    progress.done(record)
    assert ", judged at the given floor of 1024 KiB/iteration (not calibrated)" in out.getvalue()
    assert "judged at the given floor of 1024 KiB/iteration" in failure_message(record).splitlines()[0]
    s.update(floor_source="calibration x", floors_from={"rss": {"kind": "calibration"}})
    out = io.StringIO()
    progress.stream = out
    progress.done(record)
    assert "given" not in out.getvalue()


# -- class S: a strategy composed with cleanup steps is a strategy of run, as docs/commands.md says


@pytest.mark.parametrize("strategy", ["rebuild_no_clear+del_model+gc_collect", "reuse_model+gc_collect"])
def test_run_accepts_a_composed_strategy(strategy, monkeypatch):
    """Before: `run --loop inference --strategy rebuild_no_clear+del_model+gc_collect` → "Unknown strategy for loop
    inference … Did you mean rebuild_no_clear?", rc 2 (the did-you-mean check ran before composing)."""
    from kerasbench import session

    seen = []
    monkeypatch.setattr(session, "run", lambda base, pairs, *args: seen.append(list(pairs)) or 0)
    code, _ = call(["run", "--loop", "inference", "--strategy", strategy, "--iterations", "3", "--floor-kib", "64"])
    assert code == 0 and seen == [[("inference", strategy)]]


@pytest.mark.parametrize("strategy,needle", [
    ("rebuild_no_clr+del_model", "Received: strategy='rebuild_no_clr'. Did you mean rebuild_no_clear?"),
    ("rebuild_no_clear+del_modl", "Unknown cleanup step. Received: cleanup='del_modl'. Did you mean del_model?"),
    ("control_noop+gc_collect", "Strategy control_noop+gc_collect does not apply to loop inference"),
])
def test_a_bad_composed_strategy_names_the_part_that_is_wrong(strategy, needle, capsys):
    one_line_exit_2(["run", "--loop", "inference", "--strategy", strategy, "--iterations", "3"], capsys, needle)


# -- class B: a body is a plain function; measure's keywords are its own; an empty value is not "not given"


def _yields():
    yield 1


async def _awaits():
    return 1


class _MakesGenerators:
    def __call__(self):
        return _yields()


@pytest.mark.parametrize("body,kind", [(_yields, "a generator function"), (_awaits, "a coroutine function")])
@pytest.mark.parametrize("role", ["body", "setup"])
def test_a_generator_or_coroutine_function_is_refused_as_a_body(body, kind, role, monkeypatch):
    """Before: measure(body=gen) made a generator each iteration and never ran its code: `flat`, rc 0."""
    import kerasbench

    _no_worker(monkeypatch)
    functions = {"body": body} if role == "body" else {"body": lambda ctx: None, "setup": body}
    with pytest.raises(UsageError, match=f"The {role} '{body.__name__}' is {kind}") as raised:
        kerasbench.measure(**functions, iterations=3)
    assert "\n" not in str(raised.value)


def test_a_callable_that_returns_a_generator_fails_in_the_worker(tmp_path):
    """What the static check cannot see (a callable object) the generated repro refuses when it runs."""
    import importlib.util

    from kerasbench.api import repro_for

    path = repro_for(_MakesGenerators(), folder=str(tmp_path))
    spec = importlib.util.spec_from_file_location("kerasbench_body_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(TypeError, match="the body returned a generator: none of its code ran"):
        module.iteration(None, None)


def test_an_unknown_measure_keyword_is_a_usage_error_naming_the_valid_ones(monkeypatch):
    """Before: measure(body=f, bogus=1) → TypeError: RunSpec.__init__() got an unexpected keyword argument 'bogus'."""
    import kerasbench

    _no_worker(monkeypatch)
    with pytest.raises(UsageError, match=r"^Unknown argument of kerasbench.measure: bogus\. Expected some of: loop, "
                                         r"repro, body, .*time_limit"):
        kerasbench.measure(body=lambda: None, bogus=1)


@pytest.mark.parametrize("argument", ["tf", "profile", "allocator", "config"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_measure_argument_is_refused_not_ignored(argument, value, monkeypatch):
    """Before: measure(tf='') measured in this environment, as if no tf were given."""
    import kerasbench

    _no_worker(monkeypatch)
    with pytest.raises(UsageError, match=f"Invalid value for argument `{argument}`. Received: {argument}={value!r}"):
        kerasbench.measure("control", strategies="control_noop", iterations=3, floor_kib=64, **{argument: value})


@pytest.mark.parametrize("argv,needle", [
    (["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--tf", ""], "Invalid --tf."),
    (["ablate", "--loop", "sweep", "--iterations", "3", "--tf", " "], "Invalid --tf."),
    (["envs", "--create", "", "--config", MATRIX], "Invalid --create. Received: ''."),
    (["envs", "--create", ",", "--config", MATRIX], "Invalid --create. Received: ','."),
    (["calibrate", "--counts", "", "--runs", "1"], "Invalid value for argument `counts`. Received: ''."),
    *[([command, "--loop", "sweep", "--backend", ""], "argument --backend: invalid choice: ''")
      for command in ("run", "ablate", "triage", "attribute")],  # issue #61: before, '' was "not given"
])
def test_an_empty_option_value_is_refused_not_read_as_not_given(argv, needle, monkeypatch, capsys):
    """Before: `run --tf ''` measured here; `envs --create ''` said "0 environment(s) ready", rc 0; `calibrate
    --iterations ''` calibrated at the default counts (2000 iterations)."""
    _no_worker(monkeypatch)
    from kerasbench import session

    monkeypatch.setattr(session, "run_controls", lambda *a, **k: pytest.fail("calibrated"))
    one_line_exit_2(argv, capsys, needle)


# ---------------------------------------------------------------- issue #61: an environment's bad value, a file's data


@pytest.mark.parametrize("argv", [
    ["run", "--loop", "inference", "--strategy", "reuse_model", "--iterations", "3"],
    ["ablate", "--loop", "sweep", "--iterations", "3"],
    ["overhead", "--iterations", "3"],
    ["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"],
    ["calibrate", "--runs", "1", "--counts", "3"],
])
def test_a_bad_keras_backend_variable_is_an_error_like_a_bad_option(argv, monkeypatch, capsys):
    """Before: KERAS_BACKEND=bogus skipped every Keras pair, rc 0."""
    _no_worker(monkeypatch)
    monkeypatch.setenv("KERAS_BACKEND", "bogus")
    one_line_exit_2(argv, capsys, "Unknown Keras backend. Received: $KERAS_BACKEND='bogus'. Expected one of: "
                                  "tensorflow, jax, torch")


def _latin1(tmp_path, cookie):
    path = tmp_path / "r.py"
    path.write_bytes((b"# -*- coding: latin-1 -*-\n" if cookie else b"") +
                     b'NAME = "caf\xe9"\n\n\ndef iteration(ctx, model):\n    return NAME\n')
    return str(path)


def test_a_repro_file_is_read_with_its_coding_declaration_or_refused_naming_the_encoding(tmp_path):
    """Before: a latin-1 file was refused as 'not UTF-8 text' even with its PEP 263 declaration (Python runs it)."""
    from kerasbench import repro

    assert repro.check(_latin1(tmp_path, True)) == _latin1(tmp_path, True)
    with pytest.raises(UsageError, match=r"^Repro file .*r\.py is not utf-8 text \(Python's default encoding; byte "
                                         r"\d+\): save it as UTF-8, or declare its encoding"):
        repro.check(_latin1(tmp_path, False))
    (tmp_path / "k.py").write_text("# coding: klingon\ndef iteration(ctx, model):\n    pass\n")
    with pytest.raises(UsageError, match="cannot be read as Python source: unknown encoding: klingon"):
        repro.check(str(tmp_path / "k.py"))


def _replay_reference(tmp_path, change):
    payload = json.loads((FIXTURES / "tf221.json").read_text())
    for record in payload["records"]:
        change(record)
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(payload))
    return str(path)


@pytest.mark.parametrize("change, needle", [
    (lambda r: r.update(repeats=[]), "Nothing to replay in {path}: no ok record with a repeat's readings"),
    (lambda r: r.update(status="failed"), "Nothing to replay in {path}"),
    (lambda r: [rep["result"]["series"].pop("seconds") for rep in r["repeats"] if rep.get("result")],
     "Cannot replay {path}: its record sweep × clear_session_del_gc has no per-iteration seconds"),
])
def test_a_replay_with_nothing_to_replay_is_one_line(change, needle, tmp_path, capsys):
    """Before: an empty repeats file printed nothing, rc 0; a record without seconds was a KeyError."""
    path = _replay_reference(tmp_path, change)
    one_line_exit_2(["score", "--replay", "quick", "--reference", path], capsys, needle.format(path=path))


def test_a_release_s_records_under_a_day_s_name_are_no_nightly(tmp_path, capsys):
    """Before: they became a nightly column and renamed the release columns (2.12.1+v1)."""
    (tmp_path / "nightly").mkdir()
    day = tmp_path / "nightly" / "2026-10-27.json"
    day.write_text((FIXTURES / "tf212.json").read_text())
    one_line_exit_2(["atlas", str(FIXTURES / "tf221.json"), "--nightlies", str(tmp_path / "nightly"), "--output",
                     str(tmp_path / "atlas")], capsys, f"Cannot read {day} as the nightly of 2026-10-27: its records "
                    "are of TF '2.12.1', a release")
    assert not (tmp_path / "atlas" / "atlas.json").exists()


def test_no_nightly_at_all_is_said_without_a_day(monkeypatch):
    """Before: 'No TF nightly on or before None'."""
    from kerasbench import nightlies

    monkeypatch.setattr(nightlies, "listing", lambda *a, **k: [])
    with pytest.raises(UsageError) as e:
        nightlies.pick_tf("nightly")
    assert "None" not in str(e.value) and str(e.value).startswith("No TF nightly for CPython 3.11 on this platform")
    with pytest.raises(UsageError, match="^No TF nightly on or before 2026-10-27 for CPython"):
        nightlies.pick_tf("nightly:2026-10-27")
    with pytest.raises(UsageError) as e:
        nightlies.pick_keras("nightly")
    assert "None" not in str(e.value)


def test_absurd_readings_print_no_numpy_warning(tmp_path, capsys):
    """Before: RuntimeWarning: overflow encountered in reduce, two lines of numpy's source a call, on stderr."""
    payload = json.loads((FIXTURES / "tf221.json").read_text())
    for record in payload["records"]:
        for repeat in record["repeats"]:
            if repeat.get("result"):
                series = repeat["result"]["series"]
                series["rss"] = [(-1) ** i * 1e308 for i in range(len(series["rss"]))]
    (tmp_path / "absurd.json").write_text(json.dumps(payload))
    main(["score", "--replay", "quick", "--reference", str(tmp_path / "absurd.json")], out=io.StringIO())
    assert "Warning" not in capsys.readouterr().err


def test_the_reports_hint_names_a_command_that_exists():
    from kerasbench import public
    from kerasbench.cli import build_parser

    hint = public.render({})
    assert "--commands" not in hint and "`kerasbench reports`, given no records," in hint
    assert build_parser().parse_args(["reports"]).command == "reports"


# ---------------------------------------------------------------- issue #61: strings from files are data
# A record's loop, strategy and version names reach the terminal through the console tables, the notes under them,
# the error line and every command's stdout: each control character is written as its escape, never obeyed.
EVIL = "\x1b]0;owned\x07\x1b[2J\r\x9b31m\u202e"


def _evil_records(tmp_path):
    paths = []
    for name in ("tf212.json", "tf221.json"):
        payload = json.loads((FIXTURES / name).read_text())
        for record in payload["records"]:
            record["loop"] += EVIL
            record["strategy"] += EVIL
            record["environment"]["tensorflow"] += EVIL
            for repeat in record["repeats"]:
                if repeat.get("result"):
                    repeat["result"]["series"].pop("seconds", None)  # score --replay's error line names the pair
        (tmp_path / name).write_text(json.dumps(payload))
        paths.append(str(tmp_path / name))
    return paths


PRINTERS = {
    "compare": ["compare", "{a}", "{b}"],
    "compare --format markdown": ["compare", "{a}", "{b}", "--format", "markdown"],
    "compare --format csv": ["compare", "{a}", "{b}", "--format", "csv"],
    "score": ["score", "{a}", "--reference", "{b}"],
    "score --replay (its error line)": ["score", "--replay", "quick", "--reference", "{b}"],
    "reports": ["reports", "{a}", "{b}"],
}


@pytest.mark.parametrize("case", PRINTERS)
def test_control_characters_of_a_record_reach_no_terminal(case, tmp_path, capsys):
    a, b = _evil_records(tmp_path)
    code, out = call([x.format(a=a, b=b) for x in PRINTERS[case]])
    err = capsys.readouterr().err
    shown = out + err
    assert not set("\x1b\x07\r\x9b\u202e") & set(shown), repr(shown[:400])
    # shown, escaped, where the names are printed (reports: no public report's pair; score: no pair of one release)
    assert "\\x1b" in shown or case in ("reports", "score"), repr(shown[:400])
    assert "Traceback" not in err


def test_the_run_table_and_its_notes_escape_a_record_s_names():
    from kerasbench import console, runtable

    payload = json.loads((FIXTURES / "tf221.json").read_text())
    records = payload["records"]
    for record in records:
        record["loop"] += EVIL
    records[0]["status"], records[0]["reason"] = "failed", "worker died" + EVIL
    text = runtable.run_table(records)
    assert not set("\x1b\x07\r\x9b\u202e") & set(text) and "\\x1b]0;owned\\x07" in text
    assert console.printable("a\tb\nc" + EVIL, lines=True) == "a\\tb\\nc\\x1b]0;owned\\x07\\x1b[2J\\r\\x9b31m\\u202e"

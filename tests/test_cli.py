"""The CLI through main(argv): output, files, and one-line errors with exit 2."""

import io
import json
import os
import sys

import pytest

from kerasbench import ALLOCATORS, LOOPS, METRICS, PROFILES, STRATEGIES
from kerasbench.cli import main
from kerasbench.selection import pairs_for


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_list_names_every_loop_strategy_and_metric():
    code, text = call(["list"])
    assert code == 0
    for name in list(LOOPS) + list(STRATEGIES) + list(METRICS) + list(ALLOCATORS):
        assert name in text


def test_run_writes_a_table_and_json(tmp_path, capsys):
    path = tmp_path / "out.json"
    code, text = call(["run", "--loop", "control", "--strategy", "control_leak_native,control_noop",
                       "--iterations", "8", "--warmup", "1", "--leak-kib", "512", "--json", str(path)])
    assert code == 0
    assert "control_leak_native" in text and "verdict" in text
    payload = json.loads(path.read_text())
    assert [r["strategy"] for r in payload["records"]] == ["control_leak_native", "control_noop"]
    assert payload["records"][0]["summary"]["verdict"] == "grows"
    assert os.listdir(tmp_path) == ["out.json"]  # no temp file left behind
    assert "iteration 8/8" in capsys.readouterr().err  # progress went to stderr


def test_all_means_the_applicable_pairs():
    pairs = pairs_for("inference", "all")
    assert [s for _, s in pairs] == [s for s in STRATEGIES if "inference" in STRATEGIES[s].applies_to
                                     and STRATEGIES[s].backend in ("", "tensorflow")]  # not another backend's own
    assert all(loop != "control" for loop, _ in pairs_for("all", "all"))


def test_the_quick_profile_decides_a_large_leak(tmp_path):
    path = tmp_path / "q.json"  # the issue: at 4 points Kendall's p could never be under 0.05; a budget looks on
    code, _ = call(["run", "--loop", "control", "--strategy", "control_leak_native", "--profile", "quick",
                    "--leak-kib", "10240", "--json", str(path)])
    summary = json.loads(path.read_text())["records"][0]["summary"]
    assert code == 0 and (summary["verdict"], summary["heap_verdict"]) == ("grows", "grows")
    # decided at two looks running, or (a slower machine's later looks) by the 1 GiB growth stop first
    assert summary["stopped"][0] in ("decided", "growth") and summary["growth_ci_low"] > 9 * 1024 * 1024


@pytest.mark.parametrize("argv,needle", [
    (["run", "--loop", "nope"], "Unknown loop"),
    (["run", "--loop", "sweep", "--strategy", "nope"], "Unknown strategy"),
    (["run", "--loop", "control", "--iterations", "0"], "iterations"),
    (["run", "--loop", "control", "--iterations", "-2"], "iterations"),
    (["run", "--loop", "control", "--repeats", "0"], "repeats"),
    (["run", "--loop", "control", "--memory-cap", "lots"], "Invalid size"),
    (["run", "--loop", "control", "--json", "/nonexistent/dir/out.json"], "does not exist"),
    (["run", "--loop", "control", "--json", "/"], "is a directory"),
])
def test_user_mistakes_are_one_line_exit_2(argv, needle, capsys):
    code, _ = call(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_unwritable_json_path(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _ = call(["run", "--loop", "control", "--json", str(locked / "x.json")])
    assert code == 2


def test_argparse_errors_exit_2(capsys):
    assert call(["run"])[0] == 2
    assert call(["frobnicate"])[0] == 2
    assert call(["run", "--loop", "control", "--iterations", "many"])[0] == 2


def test_module_entry_point():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kerasbench", "run", "--loop", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Unknown loop" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_profile_is_a_usage_error(capsys):
    code, _ = call(["run", "--loop", "control", "--profile", "huge"])
    assert code == 2 and "Expected one of: default, full, quick" in capsys.readouterr().err


@pytest.mark.parametrize("argv,needles", [
    (["run", "--loop", "sweeep"], ["Did you mean sweep?", "Expected one of: batch_stream,"]),
    (["run", "--loop", "sweep", "--strategy", "clear_sesion"],  # the loop's own strategies, the nearest first
     ["Unknown strategy for loop sweep", "Did you mean clear_session or clear_session_del_gc?",
      "reuse_model, torch_empty_cache."]),
    (["run", "--loop", "batch_stream", "--strategy", "clear_session"],  # a strategy the loop does not take
     ["Strategy clear_session does not apply to loop batch_stream. Expected one of: keep_outputs, release_outputs, "
      "stable_batch_shapes, varying_batch_shapes, function_in_loop."]),
    (["run", "--loop", "batch_stream,inference", "--strategy", "tf1_sess_close"], ["does not apply to loops"]),
])
def test_first_contact_names_the_nearest_and_the_loops_own(argv, needles, capsys):
    code, out = call(argv)
    err = capsys.readouterr().err
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert all(n in err for n in needles), err
    assert "control_noop" not in err or "control" in argv  # the loop's strategies, not all 27


def test_version_and_several_loops_take_a_strategy_where_it_applies(capsys):
    from kerasbench import __version__
    from kerasbench.selection import pairs_for

    assert main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"kerasbench {__version__}"
    assert pairs_for("sweep,batch_stream", "keep_outputs,reuse_model") == [
        ("sweep", "keep_outputs"), ("sweep", "reuse_model"), ("batch_stream", "keep_outputs")]


@pytest.mark.parametrize("extra,message", [
    (["--python", "3.12"], "--python picks the Python of a --tf release's environment: give --tf VERSION too."),
    (["--pin", "not a pin"], "--pin and --keras change a --tf release's environment: give --tf VERSION too."),
    (["--keras", "tf_keras"], "--pin and --keras change a --tf release's environment: give --tf VERSION too."),
    (["--machine", "../x"], "machine"),
])
def test_environment_options_without_tf_are_one_line(extra, message, capsys):
    code, out = call(["run", "--loop", "control", "--strategy", "control_noop", "--floor-kib", "64"] + extra)
    err = capsys.readouterr().err
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    if extra[0] != "--machine":  # ablate takes run's environment options, with the same rule
        code, out = call(["ablate", "--loop", "control", "--base", "control_noop", "--floor-kib", "64"] + extra)
        err = capsys.readouterr().err
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_ablate_makes_the_environment_run_would(monkeypatch, capsys):
    """ablate --tf V --python/--pin/--keras: the environment `run` makes for the same options (one function)."""
    from kerasbench import asvconf, environment

    asked = []
    monkeypatch.setattr(environment, "python_for_tf", lambda *a, **k: asked.append(a) or sys.executable)
    monkeypatch.setenv(asvconf.LEGACY_KERAS_VAR, "0")  # restored after the test: the command sets it for its workers
    code, _ = call(["ablate", "--loop", "control", "--base", "control_noop", "--steps", "del_model,gc_collect",
                    "--iterations", "3", "--warmup", "0", "--floor-kib", "64", "--tf", "2.21.0", "--python", "3.12",
                    "--pin", "numpy==2.3.0", "--keras", "tf_keras", "--jobs", "1"])
    assert code == 0, capsys.readouterr().err
    [(config, tf, _, python, pins, keras, backend)] = asked
    assert (tf, python, pins, keras, backend) == ("2.21.0", "3.12", {"numpy": "2.3.0"}, "tf_keras", "")
    assert os.environ[asvconf.LEGACY_KERAS_VAR] == "1"  # the workers' tf.keras is tf_keras


def test_profile_sets_the_counts(tmp_path):
    path = tmp_path / "q.json"
    code, _ = call(["run", "--loop", "control", "--strategy", "control_noop", "--profile", "quick",
                    "--json", str(path)])
    spec = json.loads(path.read_text())["records"][0]["spec"]
    assert code == 0 and (spec["warmup"], spec["profile"]) == (1, "quick")
    quick = PROFILES["quick"]
    assert (spec["iterations"], spec["min_iterations"], spec["budget"], spec["sequential"]) == \
        (quick.max_iterations, quick.min_iterations, quick.budget, True)


@pytest.mark.parametrize("argv,needle", [
    (["envs", "--tf", "2.99"], "Unknown TF version"),
    (["envs", "--config", "/nonexistent.json"], "Cannot read asv config"),
    (["publish", "--config", "/nonexistent.json"], "Cannot read asv config"),
])
def test_asv_helpers_bad_input(argv, needle, capsys):
    pytest.importorskip("asv")
    assert call(argv)[0] == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_sparkline_shows_the_shape():
    from kerasbench.console import sparkline

    MIB = 1024**2
    assert sparkline([600 * MIB + i * 2 * MIB for i in range(8)]) == "▁▂▃▄▅▆▇█"  # its own rise: 14 MiB
    assert sparkline([5] * 4) == "▁▁▁▁"
    # flat draws flat: a 0.8 MiB band is not a climb (the scale's top is at least 8 MiB), and on a table's one scale
    # a row of +0.8 MiB stays low beside one of +80
    assert set(sparkline([600 * MIB + (i % 5) * 200 * 1024 for i in range(20)])) == {"▁"}
    assert set(sparkline([600 * MIB + i * 40 * 1024 for i in range(20)], span=80 * MIB)) == {"▁"}
    assert sparkline([600 * MIB - i * MIB for i in range(8)]) == "▁" * 8  # below its first reading: the lowest
    assert len(sparkline(list(range(100)), width=16)) <= 16
    assert sparkline([]) == "n/a"


def test_written_files_get_the_usual_permissions(tmp_path):
    from kerasbench.files import write_text

    old = os.umask(0o022)
    try:
        write_text(str(tmp_path / "out.html"), "<p>report</p>")
    finally:
        os.umask(old)
    assert (tmp_path / "out.html").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.html"]  # no temp file left behind


def test_a_new_command_is_one_module_and_one_name(tmp_path, monkeypatch, capsys):
    """A command module in kerasbench.commands and its name in COMMANDS: parsed, listed in --help, dispatched."""
    import importlib
    import sys as system

    from kerasbench import commands

    (tmp_path / "hello.py").write_text(
        'NAME = "hello"\nHELP = "say hello"\n\n\ndef add_arguments(p):\n    p.add_argument("--who", default="you")\n'
        '\n\ndef run(args, out):\n    out.write(f"hello {args.who}\\n")\n    return 0\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(system.modules, "kerasbench.commands.hello", importlib.import_module("hello"))
    monkeypatch.setattr(commands, "COMMANDS", commands.COMMANDS + ("hello",))
    assert call(["hello", "--who", "kerasbench"]) == (0, "hello kerasbench\n")
    assert call(["--help"])[0] == 0 and "say hello" in capsys.readouterr().out


def test_the_top_help_says_which_command_answers_which_question(capsys):
    import re

    from kerasbench import cli
    from kerasbench.commands import COMMANDS

    assert main(["-h"]) == 0
    out = capsys.readouterr().out
    assert "Which release changed it?" in out and "kerasbench triage --good" in out  # not cut at a comma
    named = set(re.findall(r"kerasbench (\w+)", cli.DESCRIPTION))
    assert named and named <= set(COMMANDS), named - set(COMMANDS)

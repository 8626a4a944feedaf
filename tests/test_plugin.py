"""The pytest plugin (kerasbench.pytest_plugin) in a pytest run of its own (pytester): marked tests measured in workers.

The bodies keep no numpy and no TF of their own, but the worker imports TensorFlow (the repro loop does), so the
runs that start workers are marked tf. The leak is 64 KiB per iteration malloc'ed and never touched: the heap grows
by it while RSS stays flat (the kernel backs a page only once it is written): a leak only the heap verdict finds.
"""

import re

import pytest

from kerasbench import UsageError
from kerasbench.pytest_plugin import max_growth_kib
from kerasbench.testing import failure_message  # noqa: F401 -- before any in-process run (it drops what it first imported)

pytest_plugins = ["pytester"]

BODIES = '''
import ctypes

import pytest

_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]


def heap_leak():
    _libc.malloc(64 * 1024)  # never freed, never written


def flat():
    sum(range(1000))
'''


# hypothesis's plugin is imported again by every in-process run (pytester restores sys.modules): ~2 s each
QUIET = ("-p", "no:xdist", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rN")  # -rN: no short summary
# (with $CI set, pytest repeats each failure's message there)


def run(pytester, tests, *args, workers=False):
    """Run `tests` in a pytest of their own: in this process, or in a new one for tests that start workers (their
    parent side imports numpy, which a second in-process run, after pytester restored sys.modules, cannot)."""
    pytester.makepyfile(test_marked=BODIES + tests)
    return (pytester.runpytest_subprocess if workers else pytester.runpytest)(*QUIET, *args)


@pytest.mark.tf
def test_flat_body_passes_and_a_heap_leak_under_flat_rss_fails(pytester):
    result = run(pytester, '''
@pytest.mark.kerasbench(max_growth="16 KiB", iterations=40)
def test_flat():
    flat()


@pytest.mark.kerasbench(max_growth="16 KiB", iterations=40)
def test_leaks():
    heap_leak()

''', "--strict-markers", workers=True)
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert "verdict grows (RSS flat, heap grows" in text
    heap = re.search(r"heap ([+-][0-9.]+) KiB/iteration", text)  # the 64 KiB malloc'd each iteration, within 2 KiB
    assert heap and abs(float(heap.group(1)) - 64) <= 2, heap  # (+64.0 in one run, +64.3 in another)
    assert "judged against the given margin of 16 KiB/iteration (RSS at no less than 64)" in text
    assert "pytest_plugin.py" not in text and text.count("verdict grows") == 1  # the message alone, once


@pytest.mark.tf
def test_a_traced_marker_s_failure_names_the_user_s_line_and_what_holds_it(pytester):
    """The marker's trace=N is assert_no_growth's: the failure names the test's own line and the holder of what grows
    (an untraced one says how to ask)."""
    result = run(pytester, '''
class Box:
    def __init__(self):
        self.data = bytearray(1024 * 1024)  # written: a MiB each


BOXES = []


@pytest.mark.kerasbench(iterations=12, warmup=4, trace=5)
def test_boxes():
    BOXES.append(Box())  # the line that keeps them
''', workers=True)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "where: run it again" not in text
    lead = next(line for line in text.splitlines() if line.startswith("  look first"))
    assert lead.startswith("  look first: Box ×") and "kept in `BOXES`, by " in lead, lead
    line = next(n for n, text in enumerate((pytester.path / "test_marked.py").read_text().splitlines(), 1)
                if "# the line that keeps them" in text)
    assert lead.endswith(f"test_marked.py:{line} `BOXES.append(Box())  # the line that keeps them`"), lead
    assert "held by list (len " in text and "module global `BOXES` in test_marked.py" in text


def test_the_marker_s_trace_is_an_assert_no_growth_argument(pytester):
    from kerasbench.pytest_plugin import settings_for

    [item] = pytester.getmodulecol('''
import pytest

@pytest.mark.kerasbench(iterations=40, trace=10)
def test_body():
    pass
''', configargs=QUIET).collect()
    assert settings_for(item, {}) == {"iterations": 40, "trace": 10}  # pytest_pyfunc_call passes them on as they are


def test_a_marked_test_s_hint_names_the_marker_s_trace(pytester, monkeypatch):
    """Before: a marked test's failure said `assert_no_growth(..., trace=10)`, a call the test never makes."""
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).parent / "fixtures" / "compare" / "tf221.json").read_text())["records"][0]

    def grows(body, **settings):
        error = AssertionError("assert_no_growth's message")
        error.record = record
        raise error

    monkeypatch.setattr("kerasbench.testing.assert_no_growth", grows)
    result = run(pytester, '''
@pytest.mark.kerasbench(iterations=40)
def test_grows():
    flat()
''')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*where: run it again with trace=10 (@pytest.mark.kerasbench(..., trace=10))*"])
    assert "assert_no_growth(" not in result.stdout.str()


def test_body_that_raises_in_the_worker_fails_with_its_error(pytester, monkeypatch):
    # what assert_no_growth raises for it (tests/test_testing.py runs that in a worker); here without one
    def raises(body, **settings):
        assert body.__name__ == "test_raises" and settings == {"iterations": 40}
        raise UsageError("Repro file /tmp/kerasbench_body.py failed in the worker: ValueError: the body's own error")

    monkeypatch.setattr("kerasbench.testing.assert_no_growth", raises)
    result = run(pytester, '''
@pytest.mark.kerasbench(iterations=40)
def test_raises():
    raise ValueError("the body's own error")
''')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["UsageError: Repro file * failed in the worker: ValueError: the body's own error"])
    assert "pytest_plugin.py" not in result.stdout.str() and result.stdout.str().count("ValueError") == 1


@pytest.mark.tf
def test_command_line_defaults_apply_and_the_marker_wins(pytester):
    result = run(pytester, '''
@pytest.mark.kerasbench(iterations=40)
def test_leak_at_the_suite_floor():
    heap_leak()


@pytest.mark.kerasbench("1 MiB", iterations=40)
def test_leak_under_its_own_floor():
    heap_leak()


def test_fixture_has_the_defaults(kerasbench_measure):
    record, = kerasbench_measure(flat, iterations=20)
    assert record["spec"]["profile"] == "quick" and record["summary"]["heap_margin"] == 16 * 1024
    assert record["spec"]["warmup"] == 5 and record["summary"]["verdict"] == "flat"
''', "--kerasbench-max-growth=16KiB", "--kerasbench-profile=quick", workers=True)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*_ test_leak_at_the_suite_floor _*"])  # its failure section (no summary: -rN)
    assert "judged against the given margin of 16 KiB/iteration (RSS at no less than 64)" in result.stdout.str()


def test_marker_options_win_over_the_suite_defaults(pytester):
    from kerasbench.pytest_plugin import settings_for

    [item] = pytester.getmodulecol('''
import pytest

@pytest.mark.kerasbench(max_growth="1 MiB", iterations=40, profile=None, warmup=2)
def test_body():
    pass
''', configargs=QUIET).collect()
    defaults = {"profile": "quick", "floor_kib": 16.0}
    assert settings_for(item, defaults) == {"profile": "quick", "floor_kib": 1024.0, "iterations": 40, "warmup": 2}


@pytest.mark.parametrize("marker, message", [
    ('kerasbench(iterations=40, max_grwth="16 KiB")', "Unknown option of @pytest.mark.kerasbench: max_grwth. "
                                                      "Expected some of: max_growth, iterations, warmup"),
    ('kerasbench(max_growth="lots")', "Invalid max_growth. Received: 'lots'. Expected a growth per iteration"),
    ('kerasbench(profile="quik")', "Did you mean quick?"),
    ('kerasbench("16 KiB", "1 MiB")', "one positional argument at most, max_growth"),
])
def test_bad_marker_is_a_usage_error_before_anything_runs(pytester, marker, message):
    result = run(pytester, f'''
@pytest.mark.{marker}
def test_body():
    flat()
''')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_marked.py::test_body: *{message}*"])


def test_test_that_cannot_be_a_body_is_a_usage_error(pytester):
    result = run(pytester, '''
@pytest.mark.kerasbench
def test_with_fixture(tmp_path):
    flat()
''')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*fixtures cannot reach, so it takes none (it asks for tmp_path)*ctx=None*"])
    result = run(pytester, '''
class TestGroup:
    @pytest.mark.kerasbench
    def test_method(self):
        flat()
''')
    result.stderr.fnmatch_lines(["*marks a module-level test function*move it out of its class*"])


def test_bad_command_line_default_is_a_usage_error(pytester):
    result = run(pytester, "", "--kerasbench-max-growth=sixteen")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: Invalid --kerasbench-max-growth. Received: 'sixteen'*"])
    result = run(pytester, "", "--kerasbench-profile=nope")
    result.stderr.fnmatch_lines(["ERROR: Unknown profile*Expected one of: default, full, quick, reference*"])


def test_unmarked_tests_run_as_usual_and_the_marker_is_registered(pytester):
    result = run(pytester, '''
def test_plain():
    heap_leak()
''', "--strict-markers", "--kerasbench-max-growth=1")
    result.assert_outcomes(passed=1)
    assert "@pytest.mark.kerasbench(max_growth=None" in pytester.runpytest(*QUIET, "--markers").stdout.str()


@pytest.mark.parametrize("value, kib", [("16 KiB", 16), ("1 MiB", 1024), ("512 B", 0.5), ("2kib", 2), (16, 16),
                                        ("0.5", 0.5), ("16KB", 16), ("1 mb", 1024), ("+.5 MB", 512)])
def test_max_growth_is_a_size_or_kib(value, kib):
    """Before: "16KB" read as 16,000 bytes, 2.3 % under pytest-memray's 16,384 for the same text."""
    assert max_growth_kib(value) == kib


@pytest.mark.parametrize("text", ["16 KB", "1 MB", "64 KB", "16 KiB", "512B", "+.5 gb", ".00001 TB"])
def test_a_limit_means_what_pytest_memray_reads(text):
    """pytest_memray.utils.parse_memory_string, as its source reads (UNIT_TO_MULTIPLIER, case-insensitive units
    B, KB, ..., PB: powers of 1024), restated here: a limit copied from a limit_leaks marker keeps its bytes."""
    memray = re.fullmatch(r"(\+?\d*\.\d+|\+?\d+)\s*([KMGTP]?B|[KMGTP]iB)", text, re.IGNORECASE)
    number, unit = float(memray.group(1)), memray.group(2).upper().replace("IB", "B")
    assert max_growth_kib(text) * 1024 == number * 1024 ** "BKMGTP".index(unit[0] if len(unit) > 1 else "B")


@pytest.mark.parametrize("text", ["16 kB", "16 kb", "16k", "1M"])
def test_a_limit_read_two_ways_is_refused_with_both_readings(text):
    """Before: "16 kB" was 16,000 bytes here and is 16,384 in pytest-memray: never a silent 2 % difference."""
    with pytest.raises(UsageError, match="says its base") as raised:
        max_growth_kib(text)
    number = re.match(r"\d+", text).group()
    assert f"write {number} KiB or {number} {text[-2 if text.endswith(('B', 'b')) else -1].upper()}B" \
        in str(raised.value), str(raised.value)
    if text.lower().endswith("kb"):
        assert "SI's 16 × 1,000 bytes, pytest-memray's 16 × 1,024" in str(raised.value)


@pytest.mark.parametrize("marker", ['"1 MB"', 'max_growth="64 KB", warmups=3', 'max_growth="16 KiB", warmup=2'])
def test_pytest_memray_limits_through_the_marker(pytester, marker):
    """What each limit of pytest-memray's spelling means through the marker, in bytes, and `warmups`, its name of
    the warm-up count, the same option as `warmup`."""
    from kerasbench.pytest_plugin import settings_for

    [item] = pytester.getmodulecol(f'''
import pytest

@pytest.mark.kerasbench({marker})
def test_body():
    pass
''', configargs=QUIET).collect()
    settings = settings_for(item, {})
    limit = re.search(r'"([^"]+)"', marker).group(1)
    number, unit = limit.split()
    print(f"{limit!r} -> {settings['floor_kib'] * 1024:,.0f} bytes")
    assert settings["floor_kib"] * 1024 == int(number) * {"MB": 1024**2, "KB": 1024, "KiB": 1024}[unit]
    warm = re.search(r"warmups?=(\d+)", marker)
    assert settings.get("warmup") == (int(warm.group(1)) if warm else None) and "warmups" not in settings


def test_warmup_and_warmups_together_are_refused(pytester):
    result = run(pytester, '''
@pytest.mark.kerasbench(warmup=2, warmups=3)
def test_body():
    flat()
''', "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*Both warmup=2 and warmups=3 given*pytest-memray's spelling*give one*"])


@pytest.mark.parametrize("value", [0, 0.0, -0.0, "0", "0 KiB", "0 B", "-0"])
def test_a_max_growth_of_zero_is_zero_however_written(value):
    """Before: 0 and -0.0 accepted, "0 KiB" and "0 B" refused (parse_bytes' minimum of 1 byte)."""
    assert max_growth_kib(value) == 0


@pytest.mark.parametrize("value", ["lots", "-1", -1, "16 KiBs", True, None, float("nan"), "16k", "1e280 GiB",
                                   "1024 GiB", 1e280, 1e290, 10**400, "1e400"])
def test_bad_max_growth_is_refused(value, monkeypatch):
    """Before: "1e280 GiB", "1024 GiB" and 1e290 passed a body keeping 2 MiB an iteration; "16k" read as 16 KiB;
    10**400 was pytest's INTERNALERROR (OverflowError)."""
    from kerasbench import units

    monkeypatch.setattr(units, "max_growth_bytes", lambda: float(512 * 1024**3))  # a machine of 512 GiB
    with pytest.raises(UsageError, match="Expected a growth per iteration") as raised:
        max_growth_kib(value)
    assert "\n" not in str(raised.value)
    if value in ("1e280 GiB", "1024 GiB", 1e280):
        assert "from 0 to 512 GiB (this machine's memory; more is no floor" in str(raised.value)
    if value == "16k":
        assert "k alone is ambiguous; write 16 KiB or 16 KB (× 1,024 bytes" in str(raised.value)


@pytest.mark.parametrize("marker, message", [
    ("iterations=0", "Received: iterations=0. Expected a positive integer"),
    ("iterations=True", "Received: iterations=True."),
    ("iterations=1.5", "Received: iterations=1.5."),
    ('iterations="5"', "Received: iterations='5'."),
    ("iterations=10**30", "Received: iterations=1000000000000000000000000000000. Expected a positive integer and <= "),
    ("warmup=-1", "Received: warmup=-1. Expected an integer >= 0"),
    ("repeats=0", "Received: repeats=0."),
    ("setup=5", "The setup must be a function. Received: setup=5."),
    ("setup=make_gen", "The setup 'make_gen' is a generator function"),
    ('strategy="bogus"', "Unknown strategy for loop repro. Received: strategy='bogus'."),
    ('strategy="reuse_model,clear_session"', "Expected one strategy of the repro loop"),
    ("strategy=5", "Received: 5."),
    ("profile=5", "Received: profile=5."),
    ("max_growth=10**400", "Invalid max_growth. Received: 1000000000"),
    ('max_growth="1e280 GiB"', "Invalid max_growth. Received: '1e280 GiB'."),
    ('max_growth="16k"', "k alone is ambiguous"),
    ('max_growth="16 kB"', "'kB' is read two ways"),
    ("trace=-1", "Received: trace=-1. Expected 0 (off) or the number of sites to show."),
    ("trace=True", "Received: trace=True."),
    ('trace="10"', "Received: trace='10'."),
    ("trace=2.5", "Received: trace=2.5."),
    ('backend="mxnet"', "Unknown backend. Received: backend='mxnet'. Expected one of: jax, tensorflow, torch."),
    ("backend=3", "Received: backend=3."),
])
def test_every_marker_value_is_checked_at_collection(pytester, marker, message):
    """Before: each collected (rc 0) and failed only when its test ran; max_growth=10**400 was INTERNALERROR."""
    result = run(pytester, f'''
def make_gen():
    yield {{}}


@pytest.mark.kerasbench({marker})
def test_body(ctx=None):
    flat()


def test_plain():
    pass
''', "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"ERROR: test_marked.py::test_body: *{message}*"])


@pytest.mark.parametrize("marker", ['max_growth="16KB", iterations=3, warmup=0, repeats=2, setup=dict',
                                    'strategy="reuse_model+gc_collect"', "max_growth=0", "trace=10", "trace=0"])
def test_good_marker_values_collect(pytester, marker):
    result = run(pytester, f'''
@pytest.mark.kerasbench({marker})
def test_body(ctx=None):
    flat()
''', "--co")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()

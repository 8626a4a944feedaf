"""The pytest plugin (kerasbench.pytest_plugin) in a pytest run of its own (pytester): marked tests measured in workers.

The bodies keep no numpy and no TF of their own, but the worker imports TensorFlow (the repro loop does), so the
runs that start workers are marked tf. The leak is 64 KiB per iteration malloc'ed and never touched: the heap grows
by it while RSS stays flat (the kernel backs a page only once it is written): a leak only the heap verdict finds.
"""

import re

import pytest

from kerasbench import UsageError
from kerasbench.pytest_plugin import max_growth_kib

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
    assert "floor 16 KiB/iteration, from given" in text
    assert "pytest_plugin.py" not in text and text.count("verdict grows") == 1  # the message alone, once


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
    record, = kerasbench_measure(flat, iterations=12)
    assert record["spec"]["profile"] == "quick" and record["summary"]["floor"] == 16 * 1024
    assert record["spec"]["warmup"] == 5 and record["summary"]["verdict"] == "flat"
''', "--kerasbench-max-growth=16KiB", "--kerasbench-profile=quick", workers=True)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*_ test_leak_at_the_suite_floor _*"])  # its failure section (no summary: -rN)
    assert "floor 16 KiB/iteration, from given" in result.stdout.str()


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
                                        ("0.5", 0.5), (0, 0)])
def test_max_growth_is_a_size_or_kib(value, kib):
    assert max_growth_kib(value) == kib


@pytest.mark.parametrize("value", ["lots", "-1", -1, "16 KiBs", True, None, float("nan"), "0 B"])
def test_bad_max_growth_is_refused(value):
    with pytest.raises(UsageError, match="Expected a growth per iteration"):
        max_growth_kib(value)

"""Fault suite (issue #15), inputs and outputs: every bad input is one line and exit 2, never a traceback,
a hang or a silently disabled limit; no output replaces an input; nothing from a record runs in the report."""

import io
import math

import pytest

from kerasbench.cli import main
from kerasbench.errors import UsageError
from kerasbench.runner import RunSpec
from kerasbench.units import KIB, MIN_MEMORY_CAP, check_number, parse_bytes

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


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
                                          ("--leak-kib", "1e9")])
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

"""The pytest plugin: `@pytest.mark.kerasbench` fails a test whose body grows, like pytest-memray's `limit_leaks`.

    import pytest

    @pytest.mark.kerasbench(max_growth="16 KiB", iterations=40)
    def test_predict_does_not_grow():  # module level, no fixtures: this function is the loop body
        MODEL.predict(X, verbose=0)

The marked test function is the body. kerasbench measures a body in a fresh worker process that imports it by
module and name (kerasbench.api), and a module-level function of a test module is importable that way, so the
plugin does not call the test in pytest's process: it hands the function to kerasbench.testing.assert_no_growth
(pytest_pyfunc_call), which runs it every iteration in a worker, and the test passes only when the pair's one
verdict (rule.pair_verdict, RSS and heap together) is `flat`; otherwise it fails with testing.failure_message.
Fixtures cannot reach that worker, so a marked test takes none: state comes from `setup=` (a module-level
function, called once per worker), handed to a parameter with a default, which pytest leaves alone:

    @pytest.mark.kerasbench(setup=make_model)
    def test_predict(ctx=None):
        ctx["model"].predict(ctx["x"], verbose=0)

Marker options (keywords; max_growth may also come first, positionally, as limit_leaks takes its limit):
`max_growth` the growth per iteration below which the body passes (the margin: `"16 KB"` as pytest-memray writes
it, 16,384 bytes; `"16 KiB"`, `"1 MB"` (1,048,576 bytes), or a number of KiB; units.parse_limit; default RSS 128 KiB,
heap 8 KiB; RSS at no less than 64 KiB, so a smaller one is the heap's), `iterations` (default the profile's time
budget, until decided), `warmup` (5; `warmups`, pytest-memray's spelling, is the same option), `repeats` (1),
`profile` (default $KERASBENCH_PROFILE, else `default`), `setup`, `strategy` (a strategy of the repro loop,
default `reuse_model`) and `trace` (0, off; N: the worker traces where memory grows, and a failure names the user's
lines and the holders of what grows, its N top sites in the record), `backend` (Keras 3's: tensorflow, jax or
torch, the worker's KERAS_BACKEND; default the caller's).
`--kerasbench-profile` and `--kerasbench-max-growth` set the suite's defaults; a marker's own options win. A
bad option, size or profile is a pytest usage error at collection, before any worker runs.

The `kerasbench_measure` fixture is kerasbench.measure with the same defaults, for a test that wants the records.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional

import pytest

from .units import limit_kib

MARKER = "kerasbench"
OPTIONS = ("max_growth", "iterations", "warmup", "warmups", "repeats", "profile", "setup", "strategy", "trace",
           "backend")
MARKER_HELP = (f"{MARKER}(max_growth=None, iterations=None, warmup=5, repeats=1, profile=None, setup=None, "
               "strategy='reuse_model', trace=0, backend=None): run the test function as a loop body in a fresh "
               "kerasbench worker and fail unless it reads flat, RSS and heap together (max_growth: the floor per "
               "iteration, e.g. '16 KiB'; trace=10: a failure names your lines and what holds the objects that grow; "
               "backend: Keras 3's, tensorflow, jax or torch)")
MARKER_TRACE = f"@pytest.mark.{MARKER}(..., trace=10)"  # how a marked test asks for a trace (testing.TRACE_HINT)
max_growth_kib = limit_kib  # the marker's max_growth as KiB (units.limit_kib)
DEFAULTS = pytest.StashKey[Dict[str, Any]]()  # the suite's defaults from the command line, read once
SETTINGS = pytest.StashKey[Dict[str, Any]]()  # a marked item's assert_no_growth arguments, checked at collection


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kerasbench", "kerasbench: memory growth of loop bodies (@pytest.mark.kerasbench)")
    group.addoption("--kerasbench-profile", default=None, metavar="NAME",
                    help="profile of marked tests without their own (default: $KERASBENCH_PROFILE, else 'default')")
    group.addoption("--kerasbench-max-growth", default=None, metavar="SIZE",
                    help="growth per iteration below which marked tests pass, e.g. '16 KiB' or a number of KiB "
                         "(the margin; default: RSS 128 KiB, heap 8 KiB)")


def _check_profile(name: Optional[str]) -> Optional[str]:
    if name is not None:
        from .profiles import get_profile

        get_profile(name)  # an unknown name lists the valid ones
    return name


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so --strict-markers accepts it) and read the suite's defaults once."""
    from .errors import UsageError

    config.addinivalue_line("markers", MARKER_HELP)
    defaults = {}
    try:
        profile = _check_profile(config.getoption("kerasbench_profile"))
        growth = config.getoption("kerasbench_max_growth")
        if profile is not None:
            defaults["profile"] = profile
        if growth is not None:
            defaults["floor_kib"] = max_growth_kib(growth, "--kerasbench-max-growth")
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[DEFAULTS] = defaults


def settings_for(item: pytest.Item, defaults: Dict[str, Any]) -> Dict[str, Any]:
    """The assert_no_growth arguments of a marked test: its marker's options over the suite's defaults.

    UsageError for what cannot run as a body in a worker (a method, fixtures, a coroutine) and for an unknown
    option, a bad max_growth or an unknown profile: found at collection, before seconds of workers are spent."""
    from .errors import UsageError

    marker = item.get_closest_marker(MARKER)
    options = dict(marker.kwargs)
    if len(marker.args) > 1 or (marker.args and "max_growth" in options):
        raise UsageError(f"@pytest.mark.{MARKER} takes one positional argument at most, max_growth; the other "
                         f"options are keywords: {', '.join(OPTIONS)}.")
    if marker.args:
        options["max_growth"] = marker.args[0]
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UsageError(f"Unknown option{'s' if len(unknown) > 1 else ''} of @pytest.mark.{MARKER}: "
                         f"{', '.join(unknown)}. Expected some of: {', '.join(OPTIONS)}.")
    function = getattr(item, "obj", None)
    if not isinstance(item, pytest.Function) or getattr(item, "cls", None) is not None:
        raise UsageError(f"@pytest.mark.{MARKER} marks a module-level test function, which the worker imports by "
                         "name and calls as the loop body; move it out of its class.")
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        raise UsageError(f"@pytest.mark.{MARKER} runs the test function as a plain loop body: it cannot be async.")
    required = [p.name for p in inspect.signature(function).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        raise UsageError(f"@pytest.mark.{MARKER} runs the test function in a fresh worker, which fixtures cannot "
                         f"reach, so it takes none (it asks for {', '.join(required)}); give setup=FUNCTION "
                         "(module level) and a parameter with a default, e.g. def test_x(ctx=None).")
    return _merged(defaults, options)


def _merged(defaults: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
    """`options` over `defaults`, max_growth read as floor_kib; an option given as None is the default, as the
    marker's help shows it (it does not undo --kerasbench-profile). Every marker option is checked here, at
    collection, as the run would check it (a count a whole number in range, setup a plain function, strategy one of
    the repro loop's): a UsageError naming the value, before any worker."""
    from .api import check_function
    from .selection import pairs_for
    from .spec import check_count, check_trace

    options = {name: value for name, value in options.items() if value is not None}
    if "warmups" in options:  # pytest-memray's spelling of the same option
        if "warmup" in options:
            from .errors import UsageError

            raise UsageError(f"Both warmup={options['warmup']!r} and warmups={options['warmups']!r} given: they are "
                             "one option (warmups is pytest-memray's spelling); give one.")
        options["warmup"] = options.pop("warmups")
    if "max_growth" in options:
        options["floor_kib"] = max_growth_kib(options.pop("max_growth"))
    for name in ("iterations", "warmup", "repeats"):
        if name in options:
            check_count(name, options[name])
    if "trace" in options:
        check_trace(options["trace"])
    if "backend" in options:
        from ._compat import BACKENDS
        from .errors import unknown

        if options["backend"] not in BACKENDS:
            raise unknown("backend", options["backend"], BACKENDS)
    if "setup" in options:
        check_function(options["setup"], "setup")
    if "strategy" in options:
        pairs_for("repro", options["strategy"])  # an unknown one names the repro loop's
        if "," in options["strategy"] or options["strategy"] == "all":
            from .errors import UsageError

            raise UsageError(f"Invalid value for argument `strategy`. Received: strategy={options['strategy']!r}. "
                             "Expected one strategy of the repro loop (`kerasbench list`).")
    if "profile" in options and not isinstance(options["profile"], str):
        from .errors import UsageError

        raise UsageError(f"Invalid value for argument `profile`. Received: profile={options['profile']!r}. "
                         "Expected a profile's name.")
    _check_profile(options.get("profile"))
    return {**defaults, **options}


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: a deselected test's marker is not read
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    from .errors import UsageError

    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            try:
                item.stash[SETTINGS] = settings_for(item, config.stash[DEFAULTS])
            except UsageError as e:
                raise pytest.UsageError(f"{item.nodeid}: {e}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Optional[bool]:
    """A marked test's call: its function measured in a worker, not run here. The failure is the record's
    message alone (pytrace=False): the plugin's own frames say nothing about the body."""
    settings = pyfuncitem.stash.get(SETTINGS, None)
    if settings is None:
        return None
    from .errors import UsageError
    from .testing import assert_no_growth, failure_message

    try:
        assert_no_growth(pyfuncitem.obj, **settings)
        return True
    except AssertionError as e:  # its hint spelled as the marker's own option, not assert_no_growth's
        message = failure_message(e.record, MARKER_TRACE) if hasattr(e, "record") else str(e)
    except UsageError as e:  # e.g. the body raised in the worker: the message names its exception
        message = f"UsageError: {e}"
    pytest.fail(message, pytrace=False)  # out of the except: no "during handling" repeat of the message


@pytest.fixture
def kerasbench_measure(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """kerasbench.measure bound to the suite's defaults (--kerasbench-profile, --kerasbench-max-growth), for a
    test that wants the records themselves: `kerasbench_measure(body, **options)` returns a Results.

    The options are measure's, plus max_growth as the marker reads it (the floor; it maps to floor_kib). A body
    gets the marker's 5 warm-up iterations unless `warmup` is given."""
    from .api import DEFAULT_WARMUP, measure

    defaults = request.config.stash[DEFAULTS]

    def run(body: Optional[Callable] = None, **options: Any) -> Any:
        settings = _merged(defaults, options)
        if body is not None:
            settings.setdefault("warmup", DEFAULT_WARMUP)
        return measure(body=body, **settings)

    return run

"""The README promises what the code does: its commands, its tables."""

import pathlib
import re

from kerasbench import LOOPS, STRATEGIES

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def quick_start():
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_quick_start_is_two_commands():
    commands = quick_start()
    assert len(commands) == 2 and all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command():
    assert quick_start()[1] in (ROOT / ".ci" / "run").read_text().splitlines()


def test_every_loop_and_strategy_is_documented():
    for name in list(LOOPS) + list(STRATEGIES):
        assert f"`{name}`" in README, name


def test_compare_section_names_every_headline_metric_and_its_rule():
    from kerasbench.metrics import headline_metrics

    section = README.split("## Comparing TensorFlow versions", 1)[1].split("\n## ", 1)[0]
    assert "kerasbench compare" in section
    for metric in headline_metrics():
        assert f"`{metric}`" in section, metric


def test_every_allocator_is_documented():
    from kerasbench import ALLOCATORS

    for name in ALLOCATORS:
        assert f"`{name}`" in README, name
    assert "KERASBENCH_ALLOCATOR" in README and "kerasbench calibrate" in README

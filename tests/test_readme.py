"""The README promises what the code does: its commands, its tables."""

import pathlib
import re
import shlex

import pytest

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


README_LIMIT = 15 * 1024  # bytes: the README is the front door; lab notes go to docs/
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "docs" / "atlas" / "README.md"]


def test_readme_is_at_most_15_kib():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes, more than {README_LIMIT}: move the details to docs/"


def _anchors(text):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    seen, anchors = {}, set()
    for heading in re.findall(r"^#+ (.+)$", _prose(text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _prose(text):
    """The text without its fenced code blocks (a '#' line in a shell block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def _relative_links(text):
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", _prose(text)) if not re.match(r"[a-z]+:", t)]


def test_the_readme_links_to_every_docs_file():
    links = {(ROOT / t.split("#")[0]).resolve() for t in _relative_links((ROOT / "README.md").read_text())}
    assert set(DOCS[1:]) <= links, "docs files the README does not link to"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    links = _relative_links(path.read_text())
    assert links or path.name != "README.md"
    for link in links:
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.is_file() and ROOT in file.parents, f"{path.name}: {link} is not a file in the repository"
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file.read_text()), f"{path.name}: {link} names no heading of {file.name}"


def _commands(text):
    """Every `kerasbench ...` command in the text's shell blocks, as argv lists (comments and env vars dropped)."""
    for block in re.findall(r"```sh\n(.*?)\n```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("#")[0].split("&&"):
                words = shlex.split(part)
                while words and re.match(r"\w+=", words[0]):
                    words.pop(0)
                if words[:1] == ["kerasbench"]:
                    yield words[1:]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_commands_parse_and_name_real_loops_and_strategies(path):
    from kerasbench.cli import build_parser

    parser = build_parser()
    for argv in _commands(path.read_text()):
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{path.name}: kerasbench {' '.join(argv)} does not parse")
        for name in (getattr(args, "loop", None) or "").split(","):
            assert name in set(LOOPS) | {"", "all"}, (argv, name)
        for name in (getattr(args, "strategy", None) or "").split(","):
            assert name in set(STRATEGIES) | {"", "all"}, (argv, name)


def test_the_repro_example_meets_the_contract(tmp_path):
    from kerasbench import repro

    commands = (ROOT / "docs" / "commands.md").read_text()  # the README links there for the contract's example
    section = commands.split("## Bring your own repro", 1)[1].split("\n## ", 1)[0]
    [example] = re.findall(r"```python\n(.*?)```", section, re.S)
    (tmp_path / "my_loop.py").write_text(example)
    assert repro.check(str(tmp_path / "my_loop.py"))


def test_every_promise_of_the_guarantees_names_tests_that_exist():
    """docs/guarantees.md: each promise (a bullet of Bad input, Outputs, Interrupts and faults) names the test that
    holds it, and every test it names exists (a renamed test would otherwise leave the promise unguarded, unsaid)."""
    text = (ROOT / "docs" / "guarantees.md").read_text()
    defined = set(re.findall(r"^def (test_\w+)", "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py")),
                             re.M))
    named = set(re.findall(r"`(test_\w+)`", text))
    assert named and named <= defined, sorted(named - defined)
    promises = text.split("## Cost as runs grow")[0].split("\n- ")[1:]
    unguarded = [p.split("\n")[0][:70] for p in promises if not re.search(r"`(test_\w+|one_line_exit_2)`", p)]
    assert not unguarded, unguarded

"""Every documented example is checked: each `kerasbench …` command in README.md and docs/ (fenced blocks and inline
code) parses and its names resolve as the command would resolve them (loops, strategies composed or not, profiles,
metrics), and each Python block compiles and the kerasbench names it imports exist. The examples are not run (they
measure TensorFlow for minutes); tests/test_readme.py checks the quick start and the repro example's contract."""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "docs" / "atlas" / "README.md"]
# A word that stands for what the reader fills in: PATH, N, FILE, <machine>, X.Y, '…'
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_.]*$|<[^>]*>|…|\.\.\.|^X\.Y|\bREV\b|\bK\b")


def _lines(text: str):
    """(line, where) of the shell lines of fenced blocks (```sh and bare ```) and the inline code spans."""
    for lang, block in re.findall(r"```(\w*)\n(.*?)\n```", text, re.S):
        if lang in ("sh", "bash", "shell", "console", ""):
            for line in block.replace("\\\n", " ").splitlines():
                yield line.strip().removeprefix("$ "), "block"
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for span in re.findall(r"`(kerasbench [^`]+)`", prose):
        yield span, "inline"


def commands(text: str):
    """(argv after `kerasbench`, the command as written, whether it holds a placeholder)."""
    for line, where in _lines(text):
        for part in line.split(" #")[0].split("&&"):
            try:
                words = shlex.split(part)
            except ValueError:  # an unbalanced quote in prose
                continue
            while words and re.match(r"\w+=", words[0]):
                words.pop(0)
            if words[:1] == ["kerasbench"] and len(words) > 1:
                yield words[1:], part.strip(), (any(PLACEHOLDER.search(w) for w in words[1:])
                                               or bool(re.search(r"<[^>]+>", part)))


def _resolve(args) -> None:
    """The names of a parsed command, resolved as the command resolves them (UsageError when one is unknown)."""
    from kerasbench.metrics import METRICS
    from kerasbench.profiles import get_profile
    from kerasbench.selection import loops_named, pairs_for

    if getattr(args, "profile", None):
        get_profile(args.profile)
    metric = getattr(args, "metric", None)
    if isinstance(metric, str) and metric not in METRICS:
        raise AssertionError(f"unknown metric {metric}")
    loop, strategy = getattr(args, "loop", None), getattr(args, "strategy", None)
    if isinstance(loop, str) and loop and not getattr(args, "repro", None):
        if isinstance(strategy, str) and strategy:
            pairs_for(loop, strategy)
        else:
            loops_named(loop)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_documented_command_parses_and_its_names_resolve(path, capsys):
    from kerasbench.cli import build_parser
    from kerasbench.errors import UsageError

    parser, problems, checked = build_parser(), [], 0
    for argv, written, placeholder in commands(path.read_text()):
        if "--help" in argv or "-h" in argv:
            argv = argv[:1]  # the help of a command: that the command exists
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            # prose naming a command or one of its options (`kerasbench compare`, `kerasbench run --json`) is not
            # an example: its command must exist
            reference = len(argv) == 1 or (len(argv) == 2 and argv[1].startswith("--"))
            if reference and not placeholder and argv[0] not in parser._subparsers._group_actions[0].choices:
                problems.append(f"no such command: {written}")
            elif not reference and not placeholder:
                problems.append(f"does not parse: {written}")
            continue
        try:
            _resolve(args)
            checked += 1
        except (UsageError, AssertionError) as e:
            if not placeholder:
                problems.append(f"{written}: {e}")
    capsys.readouterr()  # argparse's usage lines
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def python_blocks(text: str):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _kerasbench_names(tree: ast.AST):
    """(module, name) of every `from kerasbench… import name` and `import kerasbench…` of a block."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kerasbench":
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kerasbench":
                    yield alias.name, None


@pytest.mark.parametrize("path", [p for p in DOCS if "```python" in p.read_text()],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_compiles_and_its_kerasbench_names_exist(path):
    for block in python_blocks(path.read_text()):
        tree = ast.parse(block)  # a SyntaxError names the block's line
        for module, name in _kerasbench_names(tree):
            imported = importlib.import_module(module)
            assert name is None or hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), \
                f"{path.name}: from {module} import {name}"
        for node in ast.walk(tree):  # kerasbench.x.y used by attribute
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kerasbench":
                assert hasattr(importlib.import_module("kerasbench"), node.attr), f"{path.name}: kerasbench.{node.attr}"


def test_the_check_finds_a_broken_example():
    text = ("Run `kerasbench run --loop sweep --strategy bogus_strategy` or\n```sh\nkerasbench run --lopo sweep\n```\n"
            "and `kerasbench run --loop sweep --profile PROFILE` (a placeholder: not checked)\n")
    found = list(commands(text))
    assert [placeholder for *_, placeholder in found] == [False, False, True]
    from kerasbench.cli import build_parser
    from kerasbench.errors import UsageError

    with pytest.raises(UsageError):
        _resolve(build_parser().parse_args(found[1][0]))  # inline spans come after the blocks

"""docs/layout.md is the map of the package: its tree names every module under kerasbench/.

The tree is the first fenced block. An entry is a line whose indent is its parent folder's plus two, beginning
with one or more names ending in `.py` (several on a line share what follows) or one folder ending in `/`; the
lines between, indented deeper, continue an entry's text. A package's __init__.py is named by its folder's line.
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def named_paths(text: str) -> set:
    """The paths the first fenced block of `text` names ('kerasbench/rule/series.py', 'kerasbench/rule/', ...)."""
    block = text.split("```", 2)[1]
    named, folders = set(), []  # folders: [(indent, 'kerasbench/rule/'), ...] open above the line
    for line in block.splitlines():
        found = re.match(r"^( *)(\S.*)$", line)
        if not found:
            continue
        indent = len(found[1])
        folders = [(i, f) for i, f in folders if i < indent]
        if indent != (folders[-1][0] + 2 if folders else 0):
            continue  # an entry's text, continued
        names = []
        for word in found[2].split():
            if not re.fullmatch(r"[\w.]+\.py|[\w.]+/", word):
                break
            names.append(word)
            if word.endswith("/"):
                break
        prefix = folders[-1][1] if folders else ""
        named |= {prefix + name for name in names}
        if names and names[-1].endswith("/"):
            folders.append((indent, prefix + names[-1]))
    return named


def modules_of(package: pathlib.Path) -> list:
    """Every .py file under `package`, as 'kerasbench/x/y.py'."""
    return sorted(str(p.relative_to(package.parent)) for p in package.rglob("*.py"))


def missing_from(named: set, modules: list) -> list:
    """The modules `named` does not name (a package's __init__.py is named by its folder)."""
    return [m for m in modules if m not in named and not (m.endswith("/__init__.py") and m.count("/") > 1
                                                             and m[: -len("__init__.py")] in named)]


def test_the_layout_names_every_module():
    missing = missing_from(named_paths((ROOT / "docs" / "layout.md").read_text()), modules_of(ROOT / "kerasbench"))
    assert not missing, ("docs/layout.md's tree has no line for: " + ", ".join(missing) +
                         " (a line each: the name at its folder's indent + 2, then what it holds)")


def test_the_layouts_tree_is_read_by_indent():
    text = "\n".join(["x", "```", "pkg/", "  a.py        one", "                continued b.py", "  sub/",
                      "    c.py d.py   two at once", "    e.py", "  f.py", "other/", "```"])
    named = named_paths(text)
    assert named == {"pkg/", "pkg/a.py", "pkg/sub/", "pkg/sub/c.py", "pkg/sub/d.py", "pkg/sub/e.py", "pkg/f.py",
                     "other/"}
    modules = ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/sub/__init__.py", "pkg/sub/c.py"]
    assert missing_from(named, modules) == ["pkg/__init__.py", "pkg/b.py"]  # a continued line names nothing

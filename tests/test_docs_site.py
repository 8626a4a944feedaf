"""The docs site (mkdocs.yml): it builds strictly (a broken link or anchor fails it), with search, and its nav keeps
reference pages apart from findings."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="the docs site's generator is not installed (pip install -e '.[docs]')")
yaml = pytest.importorskip("yaml")


def _nav():
    """mkdocs.yml's nav as {section title: [page, ...]}."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    sections = {}
    for entry in nav:
        [(title, value)] = entry.items()
        sections[title] = [next(iter(p.values())) for p in value] if isinstance(value, list) else [value]
    return sections


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strictly_with_its_index_and_search(site):
    index = (site / "index.html").read_text()
    assert "Quick start" in index
    assert not re.findall(r'<script[^>]+src="https?:', index), "a script from the network: the site is read offline"
    search = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"].split("#")[0] for doc in search["docs"]}
    for section in _nav().values():  # every page of the nav is searchable
        for page in section:
            url = "" if page == "index.md" else page.removesuffix(".md").removesuffix("/README") + "/"
            url = {"atlas/": "atlas/about/"}.get(url, url)  # atlas/ is the atlas' map (tools/docs_site.py)
            assert url in locations, (page, url)
    assert (site / "atlas" / "index.html").is_file() and (site / "atlas" / "about" / "index.html").is_file()


def test_the_readme_is_the_first_page_with_its_links_into_the_site(site):
    index = (site / "index.html").read_text()
    assert 'href="commands/#html-report"' in index and 'href="docs/' not in index


def test_every_docs_page_is_in_the_nav_once():
    pages = [p for section in _nav().values() for p in section]
    assert len(pages) == len(set(pages))
    docs = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert set(pages) - {"index.md"} == docs


def test_reference_apart_from_findings():
    """The Reference section says what each command and number means; what was measured, dated, is a Findings
    page (a reference page links to it instead of saying it)."""
    nav = _nav()
    assert "findings.md" in nav["Findings"] and "findings.md" not in nav["Reference"]
    for page in nav["Reference"]:
        dated = re.findall(r"\*\*What it found\*\* *\(\d{4}-\d\d-\d\d\)", (ROOT / "docs" / page).read_text())
        assert not dated, f"{page}: {dated} belongs in findings.md (under a dated heading, linked from here)"

"""MkDocs hooks of the docs site (mkdocs.yml): the README as its first page, docs/ as the rest.

The pages are written for GitHub, where the README sits at the repository's root and links into docs/, and
docs/*.md link back to ../README.md. The site's docs_dir is docs/, so these hooks
- add the README as the site's index page, its `docs/...` links made relative to docs/;
- point docs pages' links to the README (`../README.md#quick-start`) at that index page;
- keep the atlas' README (docs/atlas/README.md) as a page of its own: docs/atlas/index.html, the atlas'
  offline map, holds the URL MkDocs would give it (atlas/), so the page lives at atlas/about/.
No text is copied into docs/: the README stays the one source of its page.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, InclusionLevel

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ATLAS_README = "atlas/README.md"
ATLAS_PAGE = "atlas/about/index.html"
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def readme_as_index(text: str) -> str:
    """The README's text with its links into docs/ made relative to docs/ (the site's index is docs/index.md)."""
    return _LINK.sub(lambda m: m[1] + re.sub(r"^docs/", "", m[2]) + m[3], text)


def _to_readme(src_uri: str, text: str) -> str:
    """A docs page's links to the repository's README, pointed at the site's index page."""
    here = posixpath.dirname(src_uri)

    def fix(m):
        target, hash_, anchor = m[2].partition("#")
        if re.match(r"[a-z]+:", target) or not target:
            return m[0]
        if posixpath.normpath(posixpath.join("docs", here, target)) != "README.md":
            return m[0]
        return m[1] + posixpath.relpath("index.md", here or ".") + hash_ + anchor + m[3]

    return _LINK.sub(fix, text)


def slugify(value: str, separator: str = "-") -> str:
    """GitHub's heading anchor: lower case, punctuation dropped (letters of any script kept), spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", value.strip().lower()).replace(" ", separator)


def on_config(config):
    config["mdx_configs"].setdefault("toc", {})["slugify"] = slugify
    return config


def on_files(files, config):
    files.append(File.generated(config, "index.md", content=readme_as_index(README.read_text())))
    # MkDocs left the atlas' README out (its URL is the map's, atlas/index.html): it comes back at its own URL
    docs_dir = config["docs_dir"]
    if (Path(docs_dir) / ATLAS_README).is_file():
        excluded = files.get_file_from_path(ATLAS_README)  # excluded in mkdocs.yml, for its URL
        if excluded is not None:
            files.remove(excluded)
        files.append(File(ATLAS_README, docs_dir, config["site_dir"], config["use_directory_urls"],
                          dest_uri=ATLAS_PAGE, inclusion=InclusionLevel.INCLUDED))
    return files


def on_page_markdown(markdown, page, config, files):
    return _to_readme(page.file.src_uri, markdown)

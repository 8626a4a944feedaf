"""The page kit under the report's and the atlas' pages: escaping, number texts (kerasbench.units'), the HTML frame.

Every string from a record that a page or a picture shows goes through `esc`; a figure read from a record goes
through `finite` before it is shown, so a missing, boolean or NaN reading reads 'n/a', not 'nan'. Both pages are one
file that loads nothing: their style and script inline (no CDN), so they open from a CI artifact or a cluster node.
"""

from __future__ import annotations

import datetime
import html
import math
import os
import re
from typing import Any, Sequence

from . import __version__
from .units import kib_text, mib_text


def esc(value: Any) -> str:
    """Any text bound for a page or a picture (element or attribute): every string from a record goes through here."""
    return html.escape(str(value), quote=True)


def finite(v: Any) -> bool:
    """Whether `v` is a number to show: int or float, not a bool, not NaN or infinite."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def kib(v: Any) -> str:
    """Bytes as signed KiB, thousands grouped, e.g. '+1,234.5'; 'n/a' for a missing or not-finite one."""
    return kib_text(v, ",") if finite(v) else "n/a"


def mib(v: Any) -> str:
    """Bytes as MiB with its unit, thousands grouped, e.g. '1,234.5 MiB'; 'n/a' for a missing or not-finite one."""
    return f"{mib_text(v, ',')} MiB" if finite(v) else "n/a"


def now() -> str:
    """The time a page is generated, to the minute, in UTC."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def path_name(path: str) -> str:
    """A file or folder as a page meant to be shared names it: relative to the working folder when inside it
    (`docs/reference/tf-2.12.1.json`), else its own name (`refs`): never a machine's absolute folder."""
    full = os.path.abspath(path)
    here = os.getcwd()
    rel = os.path.relpath(full, here)
    if here != os.sep and rel != os.curdir and not rel.startswith(os.pardir):
        return rel
    return os.path.basename(full.rstrip(os.sep)) or full


ABSOLUTE = re.compile(r"(?<![\w.~:/])/(?:[^\s/:;,()'\"]+/)+([^\s/:;,()'\"]*)")  # not a URL's path
URL = re.compile(r"https://[^\s<>\"]+?(?=[.,;)]?(?:\s|$))")


def no_paths(text: Any) -> str:
    """`text` (a record's floor source, reason or why) with every absolute path cut to its last part:
    'calibration /usr/lib/python3/site-packages/kerasbench/x.json (fits …)' -> 'calibration x.json (fits …)'."""
    return ABSOLUTE.sub(lambda m: m.group(1) or m.group(0).rstrip("/").rsplit("/", 1)[-1], str(text))


def linked(escaped: str) -> str:
    """Escaped text with each https:// address in it a link (a triage's commits, an issue)."""
    return URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', escaped)


def made_from(paths: Sequence[str]) -> str:
    """A page's last words: the records it was made from (path_name: no machine's folders), when and by which
    kerasbench."""
    return f"Records: {esc(', '.join(path_name(p) for p in paths))}. Generated {now()} by kerasbench {__version__}"


def frame(title: str, css: str, body: str) -> str:
    """A whole page: the doctype, `title` (escaped here), `css` inline, then `body` (HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{esc(title)}</title><style>{css}</style></head>
<body>{body}</body></html>
"""

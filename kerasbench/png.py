"""PNG, the one way: the drawing kit's SVG (kerasbench.draw) screenshot by headless chromium.

A PNG is the very picture the page and `report --svg` show, rasterized by the browser that draws the page: the same
fonts, layout and colours, nothing drawn twice. Chromium works offline from a local file and is what the project's
CI already installs for its page tests (Debian's `chromium`); a second drawing of the same data (matplotlib, as
before) had to be kept in step with the SVG by hand and drew a different picture. Where chromium is missing,
`report --png` says so at once (exit 2) and `--svg` still writes the picture.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from typing import Optional

from .errors import UsageError

CHROMIUM_SECONDS = 60
SCALE = 2  # device pixels per SVG pixel: a sharp picture in an issue
# Headless chromium (156) paints only the top (height - 87.5) CSS px of a window under 150 px tall, and screenshots
# the whole window: a 138 px chart came out as its title and legend over blank. Every picture is drawn in a window
# at least this tall, and the screenshot cut to the picture's own height.
MIN_WINDOW = 400
NEEDS = "chromium on PATH (apt-get install chromium); --svg writes the picture without it"


def _chromium() -> Optional[str]:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def exporter() -> str:
    """The path of the headless chromium that draws PNGs here; a UsageError (exit 2) saying what to install where
    there is none."""
    found = _chromium()
    if found:
        return found
    raise UsageError(f"Cannot write a PNG: it needs {NEEDS}.")


def crop(data: bytes, height: int) -> bytes:
    """A PNG's top `height` rows (the width kept): its rows' filters read only the row above, so the image data is
    cut unfiltered and compressed again; the other chunks are kept."""
    chunks, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunks.append((kind, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    width, old, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if height >= old:
        return data
    if interlace or depth != 8 or colour not in (0, 2, 4, 6):
        raise ValueError(f"cannot cut a PNG of depth {depth}, colour type {colour}, interlace {interlace}")
    stride = 1 + width * {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))[:stride * height]

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    out, placed = [data[:8], chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, compression,
                                                         filtering, interlace))], False
    for kind, body in chunks[1:]:
        if kind == b"IDAT":
            if not placed:
                out.append(chunk(b"IDAT", zlib.compress(pixels, 9)))
                placed = True
        else:
            out.append(chunk(kind, body))
    return b"".join(out)


def from_svg(svg: str, chromium: Optional[str] = None) -> bytes:
    """The SVG (one <svg> with its width and height) as PNG, SCALE times its size, drawn by headless chromium
    (`chromium`, default: the one `exporter` finds) in a window at least MIN_WINDOW tall, cut to the picture's
    height; a UsageError where it draws nothing."""
    from . import procs

    chromium = chromium or exporter()
    width, height = (int(float(v)) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    try:
        folder = tempfile.mkdtemp(prefix="kerasbench-png-")
    except OSError as e:
        raise UsageError(f"Cannot write a PNG: no temporary folder for chromium's page in {tempfile.gettempdir()}: "
                         f"{e.strerror or e}.") from None
    try:
        page, shot = os.path.join(folder, "picture.html"), os.path.join(folder, "picture.png")
        try:  # a full temporary disk: one line, not a traceback
            with open(page, "w", encoding="utf-8") as f:
                f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;background:#fff}'
                        f"svg{{display:block}}</style></head><body>{svg}</body></html>")
        except OSError as e:
            raise UsageError(f"Cannot write a PNG: cannot write chromium's page {page}: {e.strerror or e}.") from None
        args = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-sync",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                f"--user-data-dir={os.path.join(folder, 'profile')}", f"--force-device-scale-factor={SCALE}",
                f"--window-size={width},{max(height, MIN_WINDOW)}", f"--screenshot={shot}", "file://" + page]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
        group = procs.start(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = group.proc.communicate(timeout=CHROMIUM_SECONDS)
            err = err.decode(errors="replace")
        except subprocess.TimeoutExpired:
            err = f"no picture after {CHROMIUM_SECONDS} s"
        finally:
            group.end()
        if not os.path.exists(shot) or not os.path.getsize(shot):
            last = (err.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"Cannot write a PNG: {chromium} drew nothing ({last}); write --svg instead.")
        with open(shot, "rb") as f:
            return crop(f.read(), height * SCALE)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

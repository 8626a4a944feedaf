"""A small PNG reader for the pictures' tests (zlib and the five filters; 8-bit greyscale, RGB, RGBA, grey+alpha,
not interlaced: what chromium writes), and the questions the tests ask of the pixels."""

import struct
import zlib
from typing import List, Tuple

Pixel = Tuple[int, int, int]
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> channels (8 bits each)


def read_png(data: bytes) -> List[List[Pixel]]:
    """The rows of a PNG as lists of (r, g, b), alpha dropped (the pictures are drawn on white)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"PNG not read here: depth {depth}, colour type {colour}, interlace {interlace}")
    n = CHANNELS[colour]
    stride, raw = width * n, zlib.decompress(b"".join(chunks))
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - n] if i >= n else 0
            b, c = previous[i], previous[i - n] if i >= n else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        previous = line
        rows.append([tuple(line[x * n:x * n + 3]) if n >= 3 else (line[x * n],) * 3 for x in range(width)])
    return rows


def size(data: bytes) -> Tuple[int, int]:
    """(width, height) of a PNG from its header."""
    return struct.unpack(">II", data[16:24])


def close(pixel: Pixel, colour: str, tolerance: int = 40) -> bool:
    """Whether a pixel is near a '#rrggbb' or '#rgb' colour (antialiasing blends the edges of a line)."""
    digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:])
    want = tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))
    return all(abs(p - w) <= tolerance for p, w in zip(pixel, want))


def where(rows: List[List[Pixel]], colour: str, tolerance: int = 40) -> List[Tuple[int, int]]:
    """[(x, y)] of the pixels near `colour`."""
    return [(x, y) for y, row in enumerate(rows) for x, p in enumerate(row) if close(p, colour, tolerance)]


def last_drawn_row(rows: List[List[Pixel]], background: Pixel = (255, 255, 255)) -> int:
    """The index of the lowest row with a pixel other than the background (-1 for a blank picture)."""
    for y in range(len(rows) - 1, -1, -1):
        if any(p != background for p in rows[y]):
            return y
    return -1

"""Just enough PNG to let a vision persona really look at a picture (stdlib only).

`decode_png` reads 8-bit, non-interlaced greyscale / RGB / palette / grey+alpha / RGBA
images; `dominant_colour` names the colour most pixels are closest to; `encode_png` writes a
solid or custom RGB image, for tests and notebooks.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from collections import Counter
from collections.abc import Sequence

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

# Anchors per colour name (several anchors let dark/light shades land on the right name).
PALETTE: dict[str, tuple[tuple[int, int, int], ...]] = {
    "red": ((255, 0, 0), (200, 20, 20), (139, 0, 0)),
    "green": ((0, 255, 0), (0, 128, 0), (34, 139, 34), (0, 100, 0)),
    "blue": ((0, 0, 255), (0, 0, 139), (30, 80, 200)),
    "yellow": ((255, 255, 0), (240, 220, 40)),
    "orange": ((255, 165, 0), (255, 140, 0)),
    "purple": ((128, 0, 128), (148, 0, 211)),
    "pink": ((255, 192, 203), (255, 105, 180)),
    "cyan": ((0, 255, 255), (0, 200, 200)),
    "magenta": ((255, 0, 255),),
    "brown": ((139, 69, 19), (160, 82, 45)),
    "white": ((255, 255, 255), (240, 240, 240)),
    "black": ((0, 0, 0), (20, 20, 20)),
    "grey": ((128, 128, 128), (190, 190, 190), (80, 80, 80)),
}


class PngError(ValueError):
    pass


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """(width, height, RGB pixels row-major). Alpha is composited over white."""
    if not data.startswith(_SIGNATURE):
        raise PngError("not a PNG")
    pos, idat, palette = 8, bytearray(), b""
    width = height = depth = ctype = interlace = -1
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _c, _f, interlace = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"PLTE":
            palette = chunk
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    if width <= 0 or height <= 0:
        raise PngError("missing IHDR")
    if depth != 8 or interlace != 0 or ctype not in _CHANNELS:
        raise PngError(
            f"unsupported PNG (bit depth {depth}, colour type {ctype}, interlace {interlace})"
        )
    try:
        raw = zlib.decompress(bytes(idat))
    except zlib.error as exc:
        raise PngError(f"corrupt image data: {exc}") from None
    bpp = _CHANNELS[ctype]
    stride = width * bpp
    if len(raw) < height * (stride + 1):
        raise PngError("truncated image data")
    prev = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(ftype, line, prev, bpp)
        pixels.extend(_row_rgb(line, ctype, width, palette))
        prev = line
    return width, height, pixels


def _unfilter(ftype: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    n = len(line)
    if ftype == 0:
        return
    if ftype == 1:
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif ftype == 2:
        for i in range(n):
            line[i] = (line[i] + prev[i]) & 0xFF
    elif ftype == 3:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif ftype == 4:
        for i in range(n):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[i] = (line[i] + pred) & 0xFF
    else:
        raise PngError(f"unknown filter type {ftype}")


def _over_white(v: int, alpha: int) -> int:
    return (v * alpha + 255 * (255 - alpha)) // 255


def _row_rgb(line: bytearray, ctype: int, width: int, palette: bytes) -> list[tuple[int, int, int]]:
    out = []
    if ctype == 2:
        for x in range(width):
            out.append((line[3 * x], line[3 * x + 1], line[3 * x + 2]))
    elif ctype == 6:
        for x in range(width):
            r, g, b, a = line[4 * x : 4 * x + 4]
            out.append((_over_white(r, a), _over_white(g, a), _over_white(b, a)))
    elif ctype == 0:
        out = [(v, v, v) for v in line[:width]]
    elif ctype == 4:
        for x in range(width):
            v = _over_white(line[2 * x], line[2 * x + 1])
            out.append((v, v, v))
    elif ctype == 3:
        for x in range(width):
            i = 3 * line[x]
            if i + 3 > len(palette):
                raise PngError("palette index out of range")
            out.append((palette[i], palette[i + 1], palette[i + 2]))
    return out


def colour_name(rgb: tuple[int, int, int]) -> str:
    best, best_d = "grey", 1 << 30
    for name, anchors in PALETTE.items():
        for a in anchors:
            d = (rgb[0] - a[0]) ** 2 + (rgb[1] - a[1]) ** 2 + (rgb[2] - a[2]) ** 2
            if d < best_d:
                best, best_d = name, d
    return best


def dominant_colour(data: bytes) -> str:
    """The colour name most pixels of a PNG are nearest to (sampled: at most ~4096 pixels)."""
    _w, _h, pixels = decode_png(data)
    step = max(1, len(pixels) // 4096)
    counts = Counter(colour_name(p) for p in pixels[::step])
    return counts.most_common(1)[0][0]


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (
        struct.pack(">I", len(body))
        + kind
        + body
        + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    )


def encode_png(
    width: int, height: int, colour: tuple[int, int, int] | Sequence[tuple[int, int, int]]
) -> bytes:
    """An 8-bit RGB PNG: one colour for every pixel, or a row-major list of pixels."""
    if isinstance(colour, tuple) and len(colour) == 3 and isinstance(colour[0], int):
        pixels = [colour] * (width * height)
    else:
        pixels = list(colour)
    raw = bytearray()
    for y in range(height):
        raw.append(0)
        for r, g, b in pixels[y * width : (y + 1) * width]:
            raw += bytes((r, g, b))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(bytes(raw)))
        + _chunk(b"IEND", b"")
    )


_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+/-]+)?(?P<params>(;[^,;]*)*),(?P<data>.*)$", re.S)


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """(mime, bytes) of a data: URL, or None when `url` is not one we can read."""
    m = _DATA_URL.match(url or "")
    if not m:
        return None
    payload = m.group("data")
    try:
        if ";base64" in (m.group("params") or ""):
            return m.group("mime") or "", base64.b64decode(payload, validate=False)
        return m.group("mime") or "", payload.encode()
    except ValueError:
        return None

#!/usr/bin/env python3
"""Prints what a PNG shows, for tests that must know a screenshot is not blank.

    png_stats.py FILE  ->  "width=W height=H distinct=N nonwhite=F"

distinct: the number of distinct colours (alpha ignored); nonwhite: the fraction of pixels that are not near
white (any channel below 235). A small PNG reader on the standard library only (zlib): 8-bit greyscale,
greyscale+alpha, RGB, RGBA and palette images, non-interlaced, with the five PNG row filters.
Exit 2 when the file is not a PNG this reader understands.
"""
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    pos = 8
    header = None
    palette = None
    idat = []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour, _compression, _filter, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows = []
    previous = bytearray(stride)
    offset = 0
    for _ in range(height):
        kind = raw[offset]
        line = bytearray(raw[offset + 1:offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upper_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + paeth(left, up, upper_left)) & 0xFF
            elif kind != 0:
                raise ValueError(f"unknown row filter {kind}")
        rows.append(bytes(line))
        previous = line
    return width, height, channels, colour, palette, rows


def main():
    if len(sys.argv) != 2:
        print("usage: png_stats.py FILE", file=sys.stderr)
        return 2
    try:
        width, height, channels, colour, palette, rows = read_png(sys.argv[1])
    except (OSError, ValueError, zlib.error, struct.error) as e:
        print(f"png_stats: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    colours = set()
    nonwhite = 0
    for row in rows:
        for x in range(width):
            p = row[x * channels:(x + 1) * channels]
            if colour == 3:
                rgb = palette[p[0]]
            elif channels <= 2:
                rgb = (p[0], p[0], p[0])
            else:
                rgb = (p[0], p[1], p[2])
            colours.add(rgb)
            if min(rgb) < 235:
                nonwhite += 1
    total = max(1, width * height)
    print(f"width={width} height={height} distinct={len(colours)} nonwhite={nonwhite / total:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

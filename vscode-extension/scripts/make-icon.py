"""Writes media/icon.png (128x128): Segue's marketplace icon, two arrows passing a session on. Stdlib only."""
import struct
import zlib
from pathlib import Path

N = 128
BG, FG = (30, 111, 217), (255, 255, 255)


def inside_round_rect(x: float, y: float, r: float = 26) -> bool:
    cx = min(max(x, r), N - r)
    cy = min(max(y, r), N - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def arrow(x: float, y: float, y0: float, right: bool) -> bool:
    # a shaft from 30 to 88 and a head to 100 (mirrored for the left-pointing one)
    u = x if right else N - x
    if 30 <= u <= 84 and abs(y - y0) <= 5:
        return True
    return 80 <= u <= 102 and abs(y - y0) <= (102 - u) * 0.8


def pixel(x: int, y: int) -> tuple[int, int, int, int]:
    px, py = x + 0.5, y + 0.5
    if not inside_round_rect(px, py):
        return (0, 0, 0, 0)
    if arrow(px, py, 46, True) or arrow(px, py, 82, False):
        return (*FG, 255)
    return (*BG, 255)


def png(rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", N, N, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


rows = [bytes(c for x in range(N) for c in pixel(x, y)) for y in range(N)]
out = Path(__file__).resolve().parent.parent / "media" / "icon.png"
out.write_bytes(png(rows))
print(out)

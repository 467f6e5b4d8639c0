#!/usr/bin/env python3
"""Writes the virtio-blk disk image (docs/devices.md, "The disk image").

    mkdisk.py OUT [MiB]

Every 8-byte little-endian word w of 512-byte sector s holds
pattern(s, w) = ((s << 32) | w) * 0x9E3779B97F4A7C15 mod 2^64, so that a
guest can check what it reads from any sector without having written it
(user/drivers/blk: `disk_pattern`)."""
import struct
import sys

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def pattern(sector, word):
    return (((sector << 32) | word) * GOLDEN) & MASK


def main():
    out = sys.argv[1]
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    sectors = mib * 2048
    with open(out + ".tmp", "wb") as f:
        for s in range(sectors):
            f.write(struct.pack("<64Q", *(pattern(s, w) for w in range(64))))
    import os
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()

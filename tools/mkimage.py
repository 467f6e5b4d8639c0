#!/usr/bin/env python3
"""Pack user programs into a Keep boot image (the first multiboot module).

    mkimage.py OUT name=path [name=path ...]

Format (little-endian; see docs/boot.md):
    0   8 bytes  magic "KEEPIMG1"
    8   u32      number of entries
    12  u32      reserved (0)
    16  entries of 64 bytes: name (48 bytes, NUL-padded), offset u64, size u64
    then the files, each starting on a 4096-byte boundary.
The first entry must be "root": the kernel starts it; the root task loads the rest."""
import struct
import sys

MAGIC = b"KEEPIMG1"
NAME_MAX = 48


def build(entries):
    header = bytearray(MAGIC + struct.pack("<II", len(entries), 0))
    table_end = 16 + 64 * len(entries)
    offset = (table_end + 4095) & ~4095
    blobs = []
    for name, data in entries:
        raw = name.encode()
        if not raw or len(raw) >= NAME_MAX:
            raise SystemExit(f"mkimage: bad name {name!r}")
        header += raw.ljust(NAME_MAX, b"\0") + struct.pack("<QQ", offset, len(data))
        blobs.append((offset, data))
        offset = (offset + len(data) + 4095) & ~4095
    image = bytearray(offset)
    image[: len(header)] = header
    for off, data in blobs:
        image[off : off + len(data)] = data
    return bytes(image)


def entries(image):
    """The (name, data) entries of a boot image, in order: build's inverse."""
    n = struct.unpack_from("<I", image, 8)[0]
    out = []
    for i in range(n):
        name, off, size = struct.unpack_from("<48sQQ", image, 16 + 64 * i)
        out.append((name.rstrip(b"\0").decode(), image[off:off + size]))
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    entries = []
    for arg in sys.argv[2:]:
        name, _, path = arg.partition("=")
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    if entries[0][0] != "root":
        raise SystemExit("mkimage: the first entry must be 'root'")
    image = build(entries)
    with open(sys.argv[1], "wb") as f:
        f.write(image)
    print(f"  IMAGE   {sys.argv[1]}: " + ", ".join(f"{n} ({len(d) // 1024} KiB)" for n, d in entries))


if __name__ == "__main__":
    main()

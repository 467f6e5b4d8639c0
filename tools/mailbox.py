"""The sender's side of the trusted mail reader's mailbox
(docs/trusted-core.md, "The trusted mail reader"; the format is
user/programs/mail/src/lib.rs): X25519 (RFC 7748), HKDF-SHA256 (RFC 5869)
and ChaCha20-Poly1305 (RFC 8439), written from the RFCs in plain Python so
that the test needs no package beyond Python itself.  `self_test()`
checks them against the RFCs' test vectors."""
import hashlib
import hmac
import os
import struct

P = 2**255 - 19
A24 = 121665


def _clamp(k):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    return int.from_bytes(k, "little")


def x25519(scalar, u):
    """RFC 7748, section 5: the Montgomery ladder."""
    k = _clamp(scalar)
    x1 = int.from_bytes(u, "little") & ((1 << 255) - 1)
    x2, z2, x3, z3, swap = 1, 0, x1, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % P, (x2 - z2) % P
        aa, bb = a * a % P, b * b % P
        e = (aa - bb) % P
        c, d = (x3 + z3) % P, (x3 - z3) % P
        da, cb = d * a % P, c * b % P
        x3 = (da + cb) ** 2 % P
        z3 = x1 * (da - cb) ** 2 % P
        x2 = aa * bb % P
        z2 = e * (aa + A24 * e) % P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, "little")


def public_key(secret):
    return x25519(secret, (9).to_bytes(32, "little"))


def hkdf_sha256(salt, ikm, info, n=32):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def _rotl(v, c):
    return ((v << c) & 0xffffffff) | (v >> (32 - c))


def _qr(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xffffffff; s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xffffffff; s[b] = _rotl(s[b] ^ s[c], 7)


def chacha20_block(key, counter, nonce):
    """RFC 8439, section 2.3."""
    s = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] + list(struct.unpack("<8I", key)) \
        + [counter] + list(struct.unpack("<3I", nonce))
    w = list(s)
    for _ in range(10):
        _qr(w, 0, 4, 8, 12); _qr(w, 1, 5, 9, 13); _qr(w, 2, 6, 10, 14); _qr(w, 3, 7, 11, 15)
        _qr(w, 0, 5, 10, 15); _qr(w, 1, 6, 11, 12); _qr(w, 2, 7, 8, 13); _qr(w, 3, 4, 9, 14)
    return struct.pack("<16I", *[(a + b) & 0xffffffff for a, b in zip(w, s)])


def chacha20(key, counter, nonce, data):
    out = bytearray()
    for i in range(0, len(data), 64):
        ks = chacha20_block(key, counter + i // 64, nonce)
        out += bytes(a ^ b for a, b in zip(data[i:i + 64], ks))
    return bytes(out)


def poly1305(key, msg):
    """RFC 8439, section 2.5."""
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    s = int.from_bytes(key[16:], "little")
    p, acc = (1 << 130) - 5, 0
    for i in range(0, len(msg), 16):
        n = int.from_bytes(msg[i:i + 16] + b"\x01", "little")
        acc = (acc + n) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def _pad16(b):
    return b"\0" * (-len(b) % 16)


def seal(key, nonce, ad, plaintext):
    """RFC 8439, section 2.8: (ciphertext, tag)."""
    otk = chacha20_block(key, 0, nonce)[:32]
    ct = chacha20(key, 1, nonce, plaintext)
    mac = ad + _pad16(ad) + ct + _pad16(ct) + struct.pack("<QQ", len(ad), len(ct))
    return ct, poly1305(otk, mac)


def mailbox_key(own_secret, other_public, reader_public, sender_public):
    shared = x25519(own_secret, other_public)
    return hkdf_sha256(b"keep-mail v1", shared, b"keep-mail key" + reader_public + sender_public)


def sender_key(sender_secret, reader_public):
    return mailbox_key(sender_secret, reader_public, reader_public, public_key(sender_secret))


def make_mailbox(key, seq, messages, nonce=lambda: os.urandom(12)):
    """The mailbox of lib.rs: messages are (id, text bytes)."""
    head = b"KEEPMBX1" + struct.pack("<IIQQ", 1, len(messages), seq, 0)
    records = b""
    for mid, text in messages:
        n = nonce()
        ct, tag = seal(key, n, b"keep-mail message" + struct.pack("<Q", mid), text)
        rec = n + ct + tag
        head += struct.pack("<QII", mid, len(text), 0) + hashlib.sha256(rec).digest()
        records += rec
    n = nonce()
    _, tag = seal(key, n, b"keep-mail index" + head, b"")
    return head + n + tag + records


def self_test():
    """The RFCs' vectors: X25519 (RFC 7748 6.1), ChaCha20-Poly1305 (RFC 8439
    2.8.2), HKDF (RFC 5869 A.1)."""
    a = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    b = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    assert public_key(a).hex() == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    assert x25519(a, public_key(b)).hex() == "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
    key = bytes(range(0x80, 0xa0))
    nonce = bytes.fromhex("070000004041424344454647")
    ad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, " \
         b"sunscreen would be it."
    ct, tag = seal(key, nonce, ad, pt)
    assert ct[:16].hex() == "d31a8d34648e60db7b86afbc53ef7ec2" and tag.hex() == "1ae10b594f09e26a7e902ecbd0600691"
    okm = hkdf_sha256(bytes.fromhex("000102030405060708090a0b0c"), bytes([0x0b] * 22),
                      bytes.fromhex("f0f1f2f3f4f5f6f7f8f9"), 42)
    assert okm.hex().startswith("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")


if __name__ == "__main__":
    self_test()
    print("mailbox: the RFC vectors pass")

"""The sender's side of the trusted mail reader's mailbox
(docs/trusted-core.md, "The trusted mail reader"; the format is
user/programs/mail/src/lib.rs): X25519 (RFC 7748), HKDF-SHA256 (RFC 5869)
and ChaCha20-Poly1305 (RFC 8439) from the `cryptography` package (Debian's
python3-cryptography, which tools/install-deps.sh installs).  `self_test()`
checks them against the RFCs' test vectors."""
import hashlib
import os
import struct
import sys

try:
    import cryptography  # noqa: F401
except ImportError:
    # A python3 of its own (pyenv, say) beside Debian's, whose package
    # install-deps.sh installed.
    sys.path.append("/usr/lib/python3/dist-packages")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305  # noqa: E402
from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: E402

RAW = dict(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)


def x25519(scalar, u):
    """The shared secret of private key `scalar` and public key `u`."""
    return X25519PrivateKey.from_private_bytes(scalar).exchange(X25519PublicKey.from_public_bytes(u))


def public_key(secret):
    return X25519PrivateKey.from_private_bytes(secret).public_key().public_bytes(**RAW)


def hkdf_sha256(salt, ikm, info, n=32):
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=salt, info=info).derive(ikm)


def seal(key, nonce, ad, plaintext):
    """ChaCha20-Poly1305: (ciphertext, tag)."""
    out = ChaCha20Poly1305(key).encrypt(nonce, plaintext, ad)
    return out[:-16], out[-16:]


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


def outgoing_key(sender_secret, reader_public):
    """The key of the messages the reader sends (lib.rs, sender_outgoing_key)."""
    shared = x25519(sender_secret, reader_public)
    return hkdf_sha256(b"keep-mail v1", shared, b"keep-mail outgoing" + reader_public + public_key(sender_secret))


def seal_outgoing(key, seq, text, nonce):
    """A message as the reader sends it (lib.rs, seal_outgoing)."""
    head = b"KEEPOUT1" + struct.pack("<IIQ", 1, len(text), seq)
    ct, tag = seal(key, nonce, b"keep-mail outgoing" + head, text)
    return head + nonce + ct + tag


def open_outgoing(key, b):
    """(sequence number, text) of a message the reader sent; ValueError
    when it is not one, or does not authenticate."""
    if len(b) < 24 + 12 + 16 or b[:8] != b"KEEPOUT1":
        raise ValueError("not a message of this format")
    version, n, seq = struct.unpack_from("<IIQ", b, 8)
    if version != 1 or n > 2048 or len(b) != 24 + 12 + n + 16:
        raise ValueError("not a message of this format")
    try:
        text = ChaCha20Poly1305(key).decrypt(b[24:36], b[36:], b"keep-mail outgoing" + b[:24])
    except Exception:
        raise ValueError("it does not authenticate")
    return seq, text


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
    print("mail_sender: the RFC vectors pass")

/* Sealing of exported kernel state (seal.h): ChaCha20-Poly1305, the AEAD
 * of RFC 8439, written from that specification and checked against its
 * test vectors (kernel/test/host_tests.c); SipHash-2-4, written from its
 * specification, only derives the synthetic nonces of seal_nonce. */
#include "seal.h"
#include "lib.h"

static u32 k_aead[8]; /* the AEAD's key */
static u64 k_siv[2];  /* SipHash's, for seal_nonce */
static u64 k_head[2]; /* SipHash's, for the nonce's header word */
u64 seal_generation;

static inline u64 rotl(u64 x, unsigned b) { return (x << b) | (x >> (64 - b)); }
static inline u32 rotl32(u32 x, unsigned b) { return (x << b) | (x >> (32 - b)); }
static inline u32 le32(const u8 *p) { return p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24; }
static inline void put_le32(u8 *p, u32 v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (u8)(v >> (8 * i));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                                  \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                                     \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                                     \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                                  \
    } while (0)

u64 siphash24(const u64 k[2], const void *data, size_t len)
{
    u64 v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
    u64 v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
    const u8 *p = data;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        u64 m;
        memcpy(&m, p + i, 8); /* little-endian, as the specification reads words */
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    u64 last = (u64)(len & 0xff) << 56;
    for (size_t i = 0; i < (len & 7); i++)
        last |= (u64)p[full + i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ChaCha20 (RFC 8439, 2.3): the 64-byte block of key, counter and nonce. */
#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a += b; d ^= a; d = rotl32(d, 16);                                                         \
        c += d; b ^= c; b = rotl32(b, 12);                                                         \
        a += b; d ^= a; d = rotl32(d, 8);                                                          \
        c += d; b ^= c; b = rotl32(b, 7);                                                          \
    } while (0)

static void chacha20_block(const u32 key[8], u32 counter, const u8 nonce[12], u8 out[64])
{
    u32 in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574, key[0], key[1], key[2], key[3],
                  key[4], key[5], key[6], key[7], counter, le32(nonce), le32(nonce + 4), le32(nonce + 8)};
    u32 x[16];
    memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; i++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        put_le32(out + 4 * i, x[i] + in[i]);
}

/* ChaCha20 encryption (2.4) of len bytes in place from block `counter`. */
static void chacha20_xor(const u32 key[8], u32 counter, const u8 nonce[12], u8 *data, size_t len)
{
    u8 ks[64];
    for (size_t off = 0; off < len; off += 64, counter++) {
        chacha20_block(key, counter, nonce, ks);
        size_t n = len - off < 64 ? len - off : 64;
        for (size_t i = 0; i < n; i++)
            data[off + i] ^= ks[i];
    }
}

/* Poly1305 (2.5) in five 26-bit limbs: products of two limbs fit in 64
 * bits, and the reduction mod 2^130 - 5 multiplies the high part by 5. */
struct poly1305 {
    u32 r[5], h[5], pad[4];
};

static void poly_init(struct poly1305 *st, const u8 key[32])
{
    /* r clamped as 2.5 says, split into limbs */
    st->r[0] = le32(key) & 0x3ffffff;
    st->r[1] = (le32(key + 3) >> 2) & 0x3ffff03;
    st->r[2] = (le32(key + 6) >> 4) & 0x3ffc0ff;
    st->r[3] = (le32(key + 9) >> 6) & 0x3f03fff;
    st->r[4] = (le32(key + 12) >> 8) & 0x00fffff;
    for (int i = 0; i < 5; i++)
        st->h[i] = 0;
    for (int i = 0; i < 4; i++)
        st->pad[i] = le32(key + 16 + 4 * i);
}

/* One 16-byte block m, with the high bit `hibit` (1 << 24: a full block
 * padded with 0x01 above it, as 2.5 adds). */
static void poly_block(struct poly1305 *st, const u8 m[16], u32 hibit)
{
    u32 *h = st->h, *r = st->r;
    u32 s1 = r[1] * 5, s2 = r[2] * 5, s3 = r[3] * 5, s4 = r[4] * 5;
    h[0] += le32(m) & 0x3ffffff;
    h[1] += (le32(m + 3) >> 2) & 0x3ffffff;
    h[2] += (le32(m + 6) >> 4) & 0x3ffffff;
    h[3] += (le32(m + 9) >> 6) & 0x3ffffff;
    h[4] += (le32(m + 12) >> 8) | hibit;
    u64 d0 = (u64)h[0] * r[0] + (u64)h[1] * s4 + (u64)h[2] * s3 + (u64)h[3] * s2 + (u64)h[4] * s1;
    u64 d1 = (u64)h[0] * r[1] + (u64)h[1] * r[0] + (u64)h[2] * s4 + (u64)h[3] * s3 + (u64)h[4] * s2;
    u64 d2 = (u64)h[0] * r[2] + (u64)h[1] * r[1] + (u64)h[2] * r[0] + (u64)h[3] * s4 + (u64)h[4] * s3;
    u64 d3 = (u64)h[0] * r[3] + (u64)h[1] * r[2] + (u64)h[2] * r[1] + (u64)h[3] * r[0] + (u64)h[4] * s4;
    u64 d4 = (u64)h[0] * r[4] + (u64)h[1] * r[3] + (u64)h[2] * r[2] + (u64)h[3] * r[1] + (u64)h[4] * r[0];
    u32 c;
    c = (u32)(d0 >> 26); h[0] = (u32)d0 & 0x3ffffff; d1 += c;
    c = (u32)(d1 >> 26); h[1] = (u32)d1 & 0x3ffffff; d2 += c;
    c = (u32)(d2 >> 26); h[2] = (u32)d2 & 0x3ffffff; d3 += c;
    c = (u32)(d3 >> 26); h[3] = (u32)d3 & 0x3ffffff; d4 += c;
    c = (u32)(d4 >> 26); h[4] = (u32)d4 & 0x3ffffff;
    h[0] += c * 5;
    c = h[0] >> 26; h[0] &= 0x3ffffff; h[1] += c;
}

/* Data padded with zeros to a multiple of 16 (2.8's pad16). */
static void poly_padded(struct poly1305 *st, const u8 *data, size_t len)
{
    for (; len >= 16; data += 16, len -= 16)
        poly_block(st, data, 1u << 24);
    if (len) {
        u8 b[16] = {0};
        memcpy(b, data, len);
        poly_block(st, b, 1u << 24);
    }
}

/* h mod 2^130 - 5, plus the pad, as 16 bytes. */
static void poly_finish(struct poly1305 *st, u8 tag[16])
{
    u32 *h = st->h, c, g[5];
    c = h[1] >> 26; h[1] &= 0x3ffffff; h[2] += c;
    c = h[2] >> 26; h[2] &= 0x3ffffff; h[3] += c;
    c = h[3] >> 26; h[3] &= 0x3ffffff; h[4] += c;
    c = h[4] >> 26; h[4] &= 0x3ffffff; h[0] += c * 5;
    c = h[0] >> 26; h[0] &= 0x3ffffff; h[1] += c;
    /* g = h + 5 - 2^130: h itself if that is negative, else g */
    g[0] = h[0] + 5; c = g[0] >> 26; g[0] &= 0x3ffffff;
    g[1] = h[1] + c; c = g[1] >> 26; g[1] &= 0x3ffffff;
    g[2] = h[2] + c; c = g[2] >> 26; g[2] &= 0x3ffffff;
    g[3] = h[3] + c; c = g[3] >> 26; g[3] &= 0x3ffffff;
    g[4] = h[4] + c - (1u << 26);
    u32 use_g = (g[4] >> 31) - 1; /* all ones when g[4] did not go below 0 */
    for (int i = 0; i < 5; i++)
        h[i] = (h[i] & ~use_g) | (g[i] & use_g);
    /* the 130 bits as four words, plus the pad mod 2^128 */
    u32 w[4] = {h[0] | h[1] << 26, h[1] >> 6 | h[2] << 20, h[2] >> 12 | h[3] << 14, h[3] >> 18 | h[4] << 8};
    u64 f = 0;
    for (int i = 0; i < 4; i++) {
        f += (u64)w[i] + st->pad[i];
        put_le32(tag + 4 * i, (u32)f);
        f >>= 32;
    }
}

/* The tag of 2.8 over aad and the ciphertext, under the one-time key that
 * block 0 of the nonce gives. */
static void aead_tag(const u32 key[8], const u8 nonce[12], const u8 *aad, size_t aad_len, const u8 *ct,
                     size_t len, u8 tag[16])
{
    u8 block[64], lens[16];
    struct poly1305 st;
    chacha20_block(key, 0, nonce, block);
    poly_init(&st, block);
    poly_padded(&st, aad, aad_len);
    poly_padded(&st, ct, len);
    for (int i = 0; i < 8; i++) {
        lens[i] = (u8)((u64)aad_len >> (8 * i));
        lens[8 + i] = (u8)((u64)len >> (8 * i));
    }
    poly_block(&st, lens, 1u << 24);
    poly_finish(&st, tag);
    memset(block, 0, sizeof block);
}

void aead_seal(const u32 key[8], const u8 nonce[12], const u8 *aad, size_t aad_len, u8 *data, size_t len,
               u8 tag[16])
{
    chacha20_xor(key, 1, nonce, data, len);
    aead_tag(key, nonce, aad, aad_len, data, len, tag);
}

bool aead_open(const u32 key[8], const u8 nonce[12], const u8 *aad, size_t aad_len, u8 *data, size_t len,
               const u8 tag[16])
{
    u8 t[16], diff = 0;
    aead_tag(key, nonce, aad, aad_len, data, len, t);
    for (int i = 0; i < 16; i++)
        diff |= t[i] ^ tag[i]; /* in constant time */
    if (diff)
        return false;
    chacha20_xor(key, 1, nonce, data, len);
    return true;
}

/* The 96-bit nonce: 32 bits of a SipHash of the clear header, then the
 * 64-bit one (little-endian).  The synthetic nonces of seal_nonce already
 * cover the header; the header word adds 32 more bits between records of
 * two headers. */
static void nonce96(const void *head, size_t head_len, u64 nonce, u8 out[12])
{
    u32 h = (u32)siphash24(k_head, head, head_len);
    memcpy(out, &h, 4);
    memcpy(out + 4, &nonce, 8);
}

void seal(void *head, size_t head_len, size_t body_len, u64 nonce, u64 tag[2])
{
    u8 n[12];
    nonce96(head, head_len, nonce, n);
    aead_seal(k_aead, n, head, head_len, (u8 *)head + head_len, body_len, (u8 *)tag);
}

bool unseal(void *head, size_t head_len, size_t body_len, u64 nonce, const u64 tag[2])
{
    u8 n[12];
    nonce96(head, head_len, nonce, n);
    return aead_open(k_aead, n, head, head_len, (u8 *)head + head_len, body_len, (const u8 *)tag);
}

u64 seal_nonce(u64 salt, const void *data, size_t len)
{
    u64 k[2] = {k_siv[0] ^ salt, k_siv[1]};
    return siphash24(k, data, len) | 1ULL << 63;
}

void seal_set_key(const u64 key[4])
{
    /* The AEAD's key and SipHash's are ChaCha20's first block under the
     * given key with a nonce of their own ("keep-seal-kdf"): a PRF of the
     * key, so the same key gives the same keys at every boot. */
    static const u8 kdf_nonce[12] = {'k', 'e', 'e', 'p', '-', 's', 'e', 'a', 'l', 'k', 'd', 'f'};
    u32 k[8];
    seal_generation++;
    u8 out[64];
    memcpy(k, key, sizeof k);
    chacha20_block(k, 0, kdf_nonce, out);
    memcpy(k_aead, out, sizeof k_aead);
    memcpy(k_siv, out + 32, sizeof k_siv);
    memcpy(k_head, out + 48, sizeof k_head);
    memset(out, 0, sizeof out);
    memset(k, 0, sizeof k);
}

#ifndef HOST_TEST
#include "x86.h"

static bool rdrand64(u64 *v)
{
    for (int tries = 0; tries < 32; tries++) {
        u8 ok;
        __asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok));
        if (ok)
            return true;
    }
    return false;
}

void seal_init(void)
{
    u32 a, b, c, d;
    cpuid(1, 0, &a, &b, &c, &d);
    bool have_rdrand = c & (1u << 30);
    /* Random keys for this boot only (KERNEL.SET_SEAL_KEY replaces them by
     * keys that a later boot can have again): the eight words of the
     * AEAD's and the two SipHashes' keys. */
    u64 words[8];
    for (unsigned i = 0; i < 8; i++) {
        u64 r = 0;
        if (!have_rdrand || !rdrand64(&r))
            r = 0;
        /* Without RDRAND the TSC's low bits at boot are all there is:
         * weak, and said so at boot. */
        u64 t[2] = {rdtsc(), r};
        u64 mix[2] = {0x6b656570u, i};
        words[i] = r ^ siphash24(mix, t, sizeof t);
    }
    memcpy(k_aead, words, sizeof k_aead);
    memcpy(k_siv, words + 4, sizeof k_siv);
    memcpy(k_head, words + 6, sizeof k_head);
    if (!have_rdrand)
        kprintf("keep: no RDRAND: sealing keys come from the TSC only\n");
}
#endif

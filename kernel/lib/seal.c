/* Sealing of exported kernel state (seal.h).  SipHash-2-4 written from its
 * specification; the counter-mode keystream and the two-key tag are the
 * textbook constructions from a pseudo-random function. */
#include "seal.h"
#include "lib.h"

static u64 k_enc[2], k_mac1[2], k_mac2[2], k_siv[2];
u64 seal_generation;

static inline u64 rotl(u64 x, unsigned b) { return (x << b) | (x >> (64 - b)); }

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

static void crypt(u64 *body, size_t words, u64 nonce)
{
    for (size_t i = 0; i < words; i++) {
        u64 block[2] = {nonce, i};
        body[i] ^= siphash24(k_enc, block, sizeof block);
    }
}

static void mac(const void *head, size_t len, u64 nonce, u64 tag[2])
{
    /* The nonce is part of what is tagged: it is also in the header, but
     * the tag must not depend on the caller remembering to put it there. */
    u64 k1[2] = {k_mac1[0] ^ nonce, k_mac1[1]}, k2[2] = {k_mac2[0] ^ nonce, k_mac2[1]};
    tag[0] = siphash24(k1, head, len);
    tag[1] = siphash24(k2, head, len);
}

void seal(void *head, size_t head_len, size_t body_len, u64 nonce, u64 tag[2])
{
    crypt((u64 *)((u8 *)head + head_len), body_len / 8, nonce);
    mac(head, head_len + body_len, nonce, tag);
}

bool unseal(void *head, size_t head_len, size_t body_len, u64 nonce, const u64 tag[2])
{
    u64 t[2];
    mac(head, head_len + body_len, nonce, t);
    if (((t[0] ^ tag[0]) | (t[1] ^ tag[1])) != 0)
        return false;
    crypt((u64 *)((u8 *)head + head_len), body_len / 8, nonce);
    return true;
}

u64 seal_nonce(u64 salt, const void *body, size_t len)
{
    u64 k[2] = {k_siv[0] ^ salt, k_siv[1]};
    return siphash24(k, body, len) | 1ULL << 63;
}

void seal_set_key(const u64 key[4])
{
    /* Each of the eight key words is SipHash, under the key's first half,
     * of its second half and the word's place: the same key gives the
     * same keys at every boot. */
    u64 *keys[4] = {k_enc, k_mac1, k_mac2, k_siv};
    seal_generation++;
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 2; j++) {
            u64 m[4] = {key[2], key[3], 0x6b656570u + i, j};
            keys[i][j] = siphash24(key, m, sizeof m);
        }
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
    u64 *keys[4] = {k_enc, k_mac1, k_mac2, k_siv};
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 2; j++) {
            u64 r = 0;
            if (!have_rdrand || !rdrand64(&r))
                r = 0;
            /* Without RDRAND the TSC's low bits at boot are all there is:
             * weak, and said so at boot. */
            u64 t[2] = {rdtsc(), r};
            u64 mix[2] = {0x6b656570u + i, j};
            keys[i][j] = r ^ siphash24(mix, t, sizeof t);
        }
    if (!have_rdrand)
        kprintf("keep: no RDRAND: sealing keys come from the TSC only\n");
}
#endif

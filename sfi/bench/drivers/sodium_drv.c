/* libsodium: sodium_init() probes the CPU (sodium/runtime.c: cpuid, and
 * xgetbv written as bytes) and the hash, stream and MAC functions pick
 * their SSE2, SSSE3, SSE4.1, AVX2 or AES-NI code; every result is printed
 * as a hash.  The random numbers come from a fixed generator of the
 * driver's (randombytes_set_implementation), so the outputs repeat. */
#include <stdio.h>
#include <string.h>
#include "sodium.h"

static unsigned long long rng = 0x243f6a8885a308d3ull;
static uint32_t det_random(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 32);
}
static void det_buf(void *buf, size_t n) {
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)buf)[i] = (unsigned char)det_random();
}
static const char *det_name(void) { return "sfi-driver"; }
static randombytes_implementation det = {det_name, det_random, NULL, NULL, det_buf, NULL};

static void show(const char *what, const unsigned char *p, size_t n) {
    unsigned char h[16];
    crypto_generichash(h, sizeof h, p, n, NULL, 0);
    printf("%-28s", what);
    for (size_t i = 0; i < sizeof h; i++)
        printf("%02x", h[i]);
    printf("\n");
}

int main(void) {
    randombytes_set_implementation(&det);
    if (sodium_init() < 0)
        return 1;
    enum { N = 1 << 16 };
    static unsigned char msg[N + 64], out[N + 64], back[N + 64];
    unsigned char key[32], nonce[24], tag[64], h[64];
    randombytes_buf(msg, sizeof msg);
    randombytes_buf(key, sizeof key);
    randombytes_buf(nonce, sizeof nonce);
    /* Odd lengths reach the vector loops' tails. */
    static const size_t lens[] = {0, 1, 63, 64, 65, 1000, 4097, N};
    for (unsigned i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t n = lens[i];
        char what[32];
        crypto_generichash(h, 64, msg, n, key, 32);
        snprintf(what, sizeof what, "blake2b %zu", n);
        show(what, h, 64);
        crypto_hash_sha512(h, msg, n);
        snprintf(what, sizeof what, "sha512 %zu", n);
        show(what, h, 64);
        crypto_onetimeauth(tag, msg, n, key);
        snprintf(what, sizeof what, "poly1305 %zu", n);
        show(what, tag, crypto_onetimeauth_BYTES);
        crypto_stream_chacha20_xor(out, msg, n, nonce, key);
        snprintf(what, sizeof what, "chacha20 %zu", n);
        show(what, out, n);
        crypto_stream_salsa20_xor(out, msg, n, nonce, key);
        snprintf(what, sizeof what, "salsa20 %zu", n);
        show(what, out, n);
        unsigned long long cn, bn;
        crypto_aead_xchacha20poly1305_ietf_encrypt(out, &cn, msg, n, key, 32, NULL, nonce, key);
        int ok = crypto_aead_xchacha20poly1305_ietf_decrypt(back, &bn, NULL, out, cn, key, 32, nonce, key) == 0 && bn == n && !memcmp(back, msg, n);
        snprintf(what, sizeof what, "xchacha20poly1305 %zu %s", n, ok ? "ok" : "BAD");
        show(what, out, cn);
        if (crypto_aead_aes256gcm_is_available()) {
            /* AES-NI and PCLMUL (the domain's fixed feature set has both). */
            crypto_aead_aes256gcm_encrypt(out, &cn, msg, n, key, 32, NULL, nonce, key);
            ok = crypto_aead_aes256gcm_decrypt(back, &bn, NULL, out, cn, key, 32, nonce, key) == 0 && bn == n && !memcmp(back, msg, n);
            snprintf(what, sizeof what, "aes256gcm %zu %s", n, ok ? "ok" : "BAD");
            show(what, out, cn);
        }
    }
    unsigned char pk[32], sk[64], sig[64], shared[32];
    crypto_sign_seed_keypair(pk, sk, key);
    crypto_sign_detached(sig, NULL, msg, 1000, sk);
    printf("ed25519 verify %d\n", crypto_sign_verify_detached(sig, msg, 1000, pk));
    show("ed25519 signature", sig, 64);
    crypto_scalarmult_base(shared, key);
    show("x25519", shared, 32);
    unsigned char pw[32];
    if (crypto_pwhash(pw, sizeof pw, "password", 8, nonce, 3, 1 << 20, crypto_pwhash_ALG_ARGON2ID13) == 0)
        show("argon2id", pw, sizeof pw);
    /* The paths taken differ natively and in a domain: not in the output compared. */
    fprintf(stderr, "cpu sse2 %d ssse3 %d sse41 %d avx %d avx2 %d aesni %d pclmul %d\n", sodium_runtime_has_sse2(), sodium_runtime_has_ssse3(),
           sodium_runtime_has_sse41(), sodium_runtime_has_avx(), sodium_runtime_has_avx2(), sodium_runtime_has_aesni(),
           sodium_runtime_has_pclmul());
    return 0;
}

/* Host unit tests of kernel code that needs no hardware: printf, the
 * memory-map builder, ELF and boot-image parsing, symbol lookup, the
 * capability encoding, sealing and the MADT.  Built with -fsanitize=address,undefined by
 * `make host-test`; prints one line per test and a summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootimage.h"
#include "budget.h"
#include "cap.h"
#include "elf.h"
#include "keep/abi.h"
#include "ksyms.h"
#include "lib.h"
#include "madt.h"
#include "memmap.h"
#include "seal.h"

/* What the kernel objects would provide. */
void console_putc(char c) { putchar(c); }
void panic(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    abort();
}
const struct ksym ksyms[] = {{0x1000, "alpha"}, {0x1100, "beta"}, {0x2000, "gamma"}};
const u64 ksyms_count = 3;

static int failures, checks;
#define CHECK(c)                                                                   \
    do {                                                                           \
        checks++;                                                                  \
        if (!(c)) {                                                                \
            failures++;                                                            \
            printf("    check failed: %s (%s:%d)\n", #c, __FILE__, __LINE__);      \
        }                                                                          \
    } while (0)

static void test_printf(void)
{
    char b[64];
    CHECK(ksnprintf(b, sizeof b, "%d %u %x %X", -42, 42u, 0xbeefu, 0xbeefu) == 16);
    CHECK(strcmp(b, "-42 42 beef BEEF") == 0);
    ksnprintf(b, sizeof b, "[%5d|%-5d|%05d]", 42, 42, -42);
    CHECK(strcmp(b, "[   42|42   |-0042]") == 0);
    ksnprintf(b, sizeof b, "%lx %lu %ld", 0xffffffffffffffffUL, 18446744073709551615UL, (long)-9223372036854775807L - 1);
    CHECK(strcmp(b, "ffffffffffffffff 18446744073709551615 -9223372036854775808") == 0);
    ksnprintf(b, sizeof b, "%s|%.3s|%6s|%-4s|%c%%", "abc", "abcdef", "ab", "x", 'z');
    CHECK(strcmp(b, "abc|abc|    ab|x   |z%") == 0);
    ksnprintf(b, sizeof b, "%p", (void *)0x1234);
    CHECK(strcmp(b, "0x0000000000001234") == 0);
    /* Truncation: the result is terminated and the full length is returned. */
    CHECK(ksnprintf(b, 5, "%s", "truncated") == 9);
    CHECK(strcmp(b, "trun") == 0);
    const char *volatile null_string = NULL; /* hidden from the format checker */
    ksnprintf(b, sizeof b, "%s", null_string);
    CHECK(strcmp(b, "(null)") == 0);
}

static void test_memmap_basic(void)
{
    struct mem_range fw[] = {
        {0, 0x9fc00, KEEP_MEM_USABLE},
        {0x100000, 0x1ff00000, KEEP_MEM_USABLE},
        {0xfffc0000, 0x40000, KEEP_MEM_RESERVED},
    };
    struct mem_range carve[] = {
        {0, 0x100000, KEEP_MEM_RESERVED},
        {0x100000, 0x40000, KEEP_MEM_KERNEL},
        {0x200000, 0x10000, KEEP_MEM_BOOT_IMAGE},
    };
    struct memmap m;
    CHECK(memmap_build(&m, fw, 3, carve, 3));
    CHECK(m.count == 6);
    CHECK(m.r[0].base == 0 && m.r[0].length == 0x9fc00 && m.r[0].type == KEEP_MEM_RESERVED);
    CHECK(m.r[1].base == 0x100000 && m.r[1].type == KEEP_MEM_KERNEL && m.r[1].length == 0x40000);
    CHECK(m.r[2].base == 0x140000 && m.r[2].type == KEEP_MEM_USABLE && m.r[2].length == 0xc0000);
    CHECK(m.r[3].base == 0x200000 && m.r[3].type == KEEP_MEM_BOOT_IMAGE);
    CHECK(m.r[4].base == 0x210000 && m.r[4].type == KEEP_MEM_USABLE);
    CHECK(m.r[5].type == KEEP_MEM_RESERVED && m.r[5].base == 0xfffc0000);
    for (unsigned i = 1; i < m.count; i++)
        CHECK(m.r[i - 1].base + m.r[i - 1].length <= m.r[i].base);
    CHECK(memmap_total(&m, KEEP_MEM_USABLE) + memmap_total(&m, KEEP_MEM_KERNEL) +
              memmap_total(&m, KEEP_MEM_BOOT_IMAGE) ==
          0x1ff00000);
    CHECK(memmap_ram_end(&m) == 0x20000000);
    /* What DEVMEM refuses: RAM of every kind, not reserved ranges or holes. */
    CHECK(memmap_is_ram(&m, 0x100000) && memmap_is_ram(&m, 0x200fff) && memmap_is_ram(&m, 0x1fffffff));
    CHECK(!memmap_is_ram(&m, 0x20000000) && !memmap_is_ram(&m, 0x9fc00) && !memmap_is_ram(&m, 0x50000));
    CHECK(!memmap_is_ram(&m, 0xfffc0000) && !memmap_is_ram(&m, 0x100000000ULL));
}

static void test_memmap_overlap_and_merge(void)
{
    /* Overlapping firmware ranges: reserved wins; adjacent usable ranges merge;
     * zero-length ranges vanish; a range reaching the top of the address space
     * does not overflow. */
    struct mem_range fw[] = {
        {0x1000, 0x4000, KEEP_MEM_USABLE},
        {0x5000, 0x1000, KEEP_MEM_USABLE},
        {0x3000, 0x1000, KEEP_MEM_RESERVED},
        {0x9000, 0, KEEP_MEM_USABLE},
        {0xfffffffffffff000ULL, 0x2000, KEEP_MEM_RESERVED},
    };
    struct memmap m;
    CHECK(memmap_build(&m, fw, 5, NULL, 0));
    CHECK(m.count == 4);
    CHECK(m.r[0].base == 0x1000 && m.r[0].length == 0x2000 && m.r[0].type == KEEP_MEM_USABLE);
    CHECK(m.r[1].base == 0x3000 && m.r[1].length == 0x1000 && m.r[1].type == KEEP_MEM_RESERVED);
    CHECK(m.r[2].base == 0x4000 && m.r[2].length == 0x2000 && m.r[2].type == KEEP_MEM_USABLE);
    CHECK(m.r[3].type == KEEP_MEM_RESERVED && m.r[3].base == 0xfffffffffffff000ULL);
    /* A carve-out over a hole stays a hole. */
    struct mem_range carve[] = {{0x8000, 0x1000, KEEP_MEM_KERNEL}};
    CHECK(memmap_build(&m, fw, 2, carve, 1));
    CHECK(m.count == 1 && m.r[0].base == 0x1000 && m.r[0].length == 0x5000);
    /* Too many ranges are refused, not overrun. */
    static struct mem_range many[MEMMAP_MAX + 1];
    for (unsigned i = 0; i < MEMMAP_MAX + 1; i++)
        many[i] = (struct mem_range){i * 0x2000, 0x1000, KEEP_MEM_USABLE};
    CHECK(!memmap_build(&m, many, MEMMAP_MAX + 1, NULL, 0));
}

/* A minimal ELF64 executable: header, program headers, no sections. */
struct fake_elf {
    u8 bytes[4096];
};

static void put(u8 *p, u64 v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (u8)(v >> (8 * i));
}

static void make_elf(struct fake_elf *f, int nph)
{
    memset(f, 0, sizeof *f);
    u8 *b = f->bytes;
    memcpy(b, "\x7f" "ELF\x02\x01\x01", 7);
    put(b + 16, 2, 2);        /* ET_EXEC */
    put(b + 18, 62, 2);       /* x86-64 */
    put(b + 24, 0x401000, 8); /* entry */
    put(b + 32, 64, 8);       /* phoff */
    put(b + 54, 56, 2);
    put(b + 56, (u64)nph, 2);
}

static void set_ph(struct fake_elf *f, int i, u32 flags, u64 off, u64 va, u64 filesz, u64 memsz)
{
    u8 *ph = f->bytes + 64 + 56 * i;
    put(ph, 1, 4);
    put(ph + 4, flags, 4);
    put(ph + 8, off, 8);
    put(ph + 16, va, 8);
    put(ph + 32, filesz, 8);
    put(ph + 40, memsz, 8);
}

static void test_elf_accepts(void)
{
    struct fake_elf f;
    struct elf_image img;
    const char *why = NULL;
    make_elf(&f, 2);
    set_ph(&f, 0, 5, 0, 0x401000, 0x100, 0x100);   /* R X */
    set_ph(&f, 1, 6, 0x200, 0x402200, 0x10, 0x2000); /* R W with bss */
    CHECK(elf_parse(f.bytes, sizeof f.bytes, KEEP_USER_TOP, &img, &why));
    CHECK(img.nseg == 2 && img.entry == 0x401000);
    CHECK(img.seg[0].exec && !img.seg[0].write && img.seg[1].write && !img.seg[1].exec);
    CHECK(img.seg[1].memsz == 0x2000 && img.seg[1].filesz == 0x10);
}

static bool refused(struct fake_elf *f, u64 size, const char *expect)
{
    struct elf_image img;
    const char *why = "";
    bool ok = elf_parse(f->bytes, size, KEEP_USER_TOP, &img, &why);
    if (ok || !strstr(why, expect)) {
        printf("    expected refusal '%s', got %s '%s'\n", expect, ok ? "acceptance" : "refusal", why);
        return false;
    }
    return true;
}

static void test_elf_refuses(void)
{
    struct fake_elf f;
    make_elf(&f, 1);
    set_ph(&f, 0, 7, 0, 0x401000, 0x100, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "writable and executable"));
    set_ph(&f, 0, 5, 0, 0x401000, 0x200, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "file size exceeds"));
    set_ph(&f, 0, 5, 0xf00, 0x401f00, 0x200, 0x200);
    CHECK(refused(&f, sizeof f.bytes, "outside the file"));
    set_ph(&f, 0, 5, 0, 0xffffffff80000000ULL, 0x100, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "outside the user half"));
    set_ph(&f, 0, 5, 0, KEEP_USER_TOP - 0x1000, 0x100, 0x2000);
    CHECK(refused(&f, sizeof f.bytes, "outside the user half"));
    set_ph(&f, 0, 5, 0x10, 0x401000, 0x100, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "congruent"));
    set_ph(&f, 0, 6, 0, 0x401000, 0x100, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "entry point"));
    set_ph(&f, 0, 5, 0, 0x401000, 0x100, 0x100);
    CHECK(refused(&f, 63, "not a 64-bit"));
    put(f.bytes + 56, 1000, 2); /* phnum beyond the file */
    CHECK(refused(&f, sizeof f.bytes, "program headers"));
    make_elf(&f, 2);
    set_ph(&f, 0, 5, 0, 0x401000, 0x100, 0x100);
    set_ph(&f, 1, 6, 0x800, 0x401800, 0x100, 0x100);
    CHECK(refused(&f, sizeof f.bytes, "share a page"));
    make_elf(&f, 1);
    f.bytes[18] = 3; /* i386 */
    CHECK(refused(&f, sizeof f.bytes, "x86-64"));
    make_elf(&f, 1);
    f.bytes[16] = 3; /* ET_DYN */
    CHECK(refused(&f, sizeof f.bytes, "ET_EXEC"));
}

static void test_bootimage(void)
{
    static u8 img[8192];
    memset(img, 0, sizeof img);
    memcpy(img, "KEEPIMG1", 8);
    img[8] = 2;
    memcpy(img + 16, "root", 4);
    put(img + 16 + 48, 4096, 8);
    put(img + 16 + 56, 10, 8);
    memcpy(img + 80, "hello", 5);
    put(img + 80 + 48, 4106, 8);
    put(img + 80 + 56, 5, 8);
    memcpy(img + 4096, "rootbytes!hi", 12);
    const u8 *data;
    u64 len;
    const char *why;
    CHECK(bootimage_find(img, sizeof img, "root", &data, &len, &why) && len == 10 && data == img + 4096);
    CHECK(bootimage_find(img, sizeof img, "hello", &data, &len, &why) && len == 5);
    CHECK(!bootimage_find(img, sizeof img, "roo", &data, &len, &why) && strstr(why, "no such"));
    CHECK(!bootimage_find(img, 15, "root", &data, &len, &why) && strstr(why, "magic"));
    put(img + 80 + 56, 0xffffffffffffffffULL, 8); /* size that overflows */
    CHECK(!bootimage_find(img, sizeof img, "hello", &data, &len, &why) && strstr(why, "outside"));
    img[8] = 200; /* more entries than fit */
    CHECK(!bootimage_find(img, sizeof img, "root", &data, &len, &why) && strstr(why, "table"));
    img[0] = 'X';
    CHECK(!bootimage_find(img, sizeof img, "root", &data, &len, &why) && strstr(why, "magic"));
}

static void test_ksyms(void)
{
    u64 off;
    CHECK(ksym_lookup(0x0fff, &off) == NULL);
    CHECK(strcmp(ksym_lookup(0x1000, &off), "alpha") == 0 && off == 0);
    CHECK(strcmp(ksym_lookup(0x10ff, &off), "alpha") == 0 && off == 0xff);
    CHECK(strcmp(ksym_lookup(0x1100, &off), "beta") == 0 && off == 0);
    CHECK(strcmp(ksym_lookup(0x5000, &off), "gamma") == 0 && off == 0x3000);
}

static void test_cap_encoding(void)
{
    /* A process capability at its widest: 20-bit number, 34-bit version. */
    struct cap c = cap_make_process(KEEP_TYPE_SENDER, KEEP_RIGHT_ALL, 0xfffff, 0x3bcdef123ULL, ~0ULL);
    CHECK(cap_type(c) == KEEP_TYPE_SENDER);
    CHECK(cap_rights(c) == KEEP_RIGHT_ALL);
    CHECK(cap_pnum(c) == 0xfffff);
    CHECK(cap_pversion(c) == 0x3bcdef123ULL);
    CHECK(cap_payload(c) == ~0ULL);
    CHECK(!cap_is_null(c));
    /* Too wide a version or number wraps instead of spilling into the next field. */
    struct cap p = cap_make_process(KEEP_TYPE_PROCESS, 0, (1ULL << 20) | 9, (1ULL << 34) | 7, 0);
    CHECK(cap_type(p) == KEEP_TYPE_PROCESS && cap_pnum(p) == 9 && cap_pversion(p) == 7 && cap_rights(p) == 0);
    /* Objects in frames: a 39-bit version. */
    struct cap f = cap_make(KEEP_TYPE_PAGE, 0, 0, 0x6bcdef1234ULL, 0x5000);
    CHECK(cap_type(f) == KEEP_TYPE_PAGE && cap_version(f) == 0x6bcdef1234ULL && cap_pa(f) == 0x5000);
    struct cap v = cap_make(KEEP_TYPE_PAGE, 0, 0, (1ULL << 39) | 5, 0);
    CHECK(cap_type(v) == KEEP_TYPE_PAGE && cap_version(v) == 5);
    struct cap r = cap_restrict(c, KEEP_RIGHT_READ);
    CHECK(cap_rights(r) == KEEP_RIGHT_READ && cap_pnum(r) == 0xfffff && cap_type(r) == KEEP_TYPE_SENDER &&
          cap_pversion(r) == 0x3bcdef123ULL);
    CHECK(cap_rights(cap_restrict(r, KEEP_RIGHT_ALL)) == KEEP_RIGHT_READ); /* never amplifies */
    CHECK(cap_rights(cap_mask(r, 0)) == KEEP_RIGHT_READ);                  /* 0 keeps */
    CHECK(cap_is_null((struct cap){0, 0}));
}

/* Reply versions carry into the RETURN capability's second word instead
 * of wrapping (2^34 calls by one process would otherwise bring an old
 * return capability back to life). */
static void test_reply_version(void)
{
    struct cap top = cap_make_process(KEEP_TYPE_RETURN, KEEP_RIGHT_WRITE, 0xabcde, CAP_PVERSION_MASK - 1, 0);
    u64 w0 = top.w0;
    u32 hi = 7;
    reply_version_next(&w0, &hi);
    struct cap c = {w0, hi};
    CHECK(cap_pversion(c) == CAP_PVERSION_MASK && hi == 7);
    reply_version_next(&w0, &hi); /* the carry */
    c = (struct cap){w0, hi};
    CHECK(cap_pversion(c) == 0 && hi == 8);
    CHECK(cap_type(c) == KEEP_TYPE_RETURN && cap_rights(c) == KEEP_RIGHT_WRITE && cap_pnum(c) == 0xabcde);
    CHECK(!(c.w0 == top.w0 && c.w1 == 7)); /* never the word it started from */
    reply_version_next(&w0, &hi);
    CHECK(cap_pversion((struct cap){w0, hi}) == 1 && hi == 8);
    /* Steps below the top leave the second word alone. */
    u64 w = cap_make_process(KEEP_TYPE_RETURN, KEEP_RIGHT_WRITE, 5, 3, 0).w0;
    u32 h = 0;
    u64 start = w;
    for (u64 i = 0; i < 4; i++)
        reply_version_next(&w, &h);
    CHECK(h == 0 && cap_pversion((struct cap){w, h}) == 7 && w != start);
}

static void test_cap_weak(void)
{
    struct cap page = cap_make(KEEP_TYPE_PAGE, KEEP_RIGHT_READ | KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC, 0, 3, 0x5000);
    struct cap as = cap_make(KEEP_TYPE_ASPACE, KEEP_RIGHT_ALL, 0, 3, 0x6000);
    struct cap proc = cap_make_process(KEEP_TYPE_PROCESS, KEEP_RIGHT_ALL, 7, 3, 0);
    /* WEAK in a mask is added, and takes WRITE away. */
    struct cap w = cap_restrict(as, KEEP_RIGHT_ALL | KEEP_RIGHT_WEAK);
    CHECK(cap_weak(w) && !(cap_rights(w) & KEEP_RIGHT_WRITE) && (cap_rights(w) & KEEP_RIGHT_READ));
    /* Weakness is never removed by a later mask. */
    CHECK(cap_weak(cap_restrict(w, KEEP_RIGHT_ALL)));
    /* Fetched through a weak capability. */
    CHECK(cap_rights(cap_weaken(page)) == KEEP_RIGHT_READ && cap_pa(cap_weaken(page)) == 0x5000);
    CHECK(cap_weak(cap_weaken(as)) && !(cap_rights(cap_weaken(as)) & KEEP_RIGHT_WRITE));
    CHECK(cap_is_null(cap_weaken(proc)));
}

static void from_hex(const char *h, u8 *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (u8)v;
    }
}

/* ChaCha20-Poly1305: RFC 8439's AEAD vector (2.8.2), then lengths around
 * the 16-byte Poly1305 and 64-byte ChaCha20 blocks, with and without
 * associated data, against tags and last ciphertext bytes computed by
 * OpenSSL (Python's cryptography); a changed byte anywhere is refused
 * with nothing changed, and what opens is the plaintext again. */
static void test_aead(void)
{
    u32 key[8];
    u8 kb[32], nonce[12], aad[32], tag[16], want[16];
    for (int i = 0; i < 32; i++)
        kb[i] = (u8)(0x80 + i);
    memcpy(key, kb, 32);
    from_hex("070000004041424344454647", nonce, 12);
    from_hex("50515253c0c1c2c3c4c5c6c7", aad, 12);
    static const char pt[] = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
                             "future, sunscreen would be it.";
    u8 buf[256], orig[256];
    size_t n = sizeof pt - 1;
    CHECK(n == 114);
    memcpy(buf, pt, n);
    aead_seal(key, nonce, aad, 12, buf, n, tag);
    from_hex("d31a8d34648e60db7b86afbc53ef7ec2", want, 16);
    CHECK(memcmp(buf, want, 16) == 0);
    from_hex("1ae10b594f09e26a7e902ecbd0600691", want, 16);
    CHECK(memcmp(tag, want, 16) == 0);
    memcpy(orig, buf, n);
    buf[57] ^= 0x40;
    CHECK(!aead_open(key, nonce, aad, 12, buf, n, tag));
    buf[57] ^= 0x40;
    CHECK(memcmp(buf, orig, n) == 0); /* refused: nothing decrypted */
    aad[3] ^= 1;
    CHECK(!aead_open(key, nonce, aad, 12, buf, n, tag));
    aad[3] ^= 1;
    nonce[11] ^= 1;
    CHECK(!aead_open(key, nonce, aad, 12, buf, n, tag));
    nonce[11] ^= 1;
    tag[15] ^= 0x80;
    CHECK(!aead_open(key, nonce, aad, 12, buf, n, tag));
    tag[15] ^= 0x80;
    CHECK(aead_open(key, nonce, aad, 12, buf, n, tag) && memcmp(buf, pt, n) == 0);

    static const struct {
        size_t len, aad;
        const char *tag, *last;
    } v[] = {
        {0, 0, "cf78db14134e6a48d665d0cc0102607b", ""},
        {1, 0, "63205fd954c70322cb6dee40c2bc4871", "71"},
        {15, 13, "893ba34d9238f0fc4a6c1d0fa19db614", "27bbef3289556402"},
        {16, 8, "298d83ba0a8c5ec145f9172b7c9d0696", "b4ee31885265013c"},
        {17, 0, "2c51401f9f2584100e20c1ae4ca99fdb", "ed30875366003ba2"},
        {63, 16, "626197969bc2a2839d2bd36c06f79815", "dc579f160815d042"},
        {64, 8, "0d9dd2c2df600bff636bff7cb7a810c4", "589e150912d141df"},
        {65, 3, "54ebb34c814454e9c5fe1dc45c55de61", "9d140613d240d865"},
        {200, 32, "258ac6ba0b8b561b4ed121b971c090fc", "5e68d5ba7bcfcdef"},
    };
    for (int i = 0; i < 32; i++)
        kb[i] = (u8)(i * 7 + 3);
    memcpy(key, kb, 32);
    for (int i = 0; i < 12; i++)
        nonce[i] = (u8)(i * 11 + 1);
    for (size_t t = 0; t < sizeof v / sizeof v[0]; t++) {
        size_t len = v[t].len, alen = v[t].aad, last = strlen(v[t].last) / 2;
        for (size_t i = 0; i < len; i++)
            buf[i] = orig[i] = (u8)(i * 5 + len);
        for (size_t i = 0; i < alen; i++)
            aad[i] = (u8)(i * 3 + alen);
        aead_seal(key, nonce, aad, alen, buf, len, tag);
        from_hex(v[t].tag, want, 16);
        CHECK(memcmp(tag, want, 16) == 0);
        from_hex(v[t].last, want, last);
        CHECK(memcmp(buf + len - last, want, last) == 0);
        CHECK(aead_open(key, nonce, aad, alen, buf, len, tag) && memcmp(buf, orig, len) == 0);
    }
}

/* SipHash-2-4's reference vector (the specification's appendix A: key
 * 00..0f, message 00..0e), and that a sealed blob opens only unchanged. */
static void test_seal(void)
{
    u64 k[2];
    u8 key[16], msg[15];
    for (int i = 0; i < 16; i++)
        key[i] = (u8)i;
    for (int i = 0; i < 15; i++)
        msg[i] = (u8)i;
    memcpy(k, key, 16);
    CHECK(siphash24(k, msg, 15) == 0xa129ca6149be45e5ULL);
    CHECK(siphash24(k, msg, 0) == 0x726fdb47dd0e0e31ULL);

    u64 blob[4 + 16], orig[4 + 16], tag[2];
    for (int i = 0; i < 20; i++)
        blob[i] = orig[i] = 0x1111111111111111ULL * (u64)(i + 1);
    seal(blob, 32, 128, 7, tag);
    CHECK(memcmp(blob, orig, 32) == 0);       /* the header stays clear */
    CHECK(memcmp(blob + 4, orig + 4, 128) != 0); /* the body does not */
    u64 copy[20];
    memcpy(copy, blob, sizeof copy);
    CHECK(!unseal(copy, 32, 128, 8, tag)); /* another nonce */
    CHECK(memcmp(copy, blob, sizeof copy) == 0); /* refused: nothing changed */
    copy[2] ^= 1;                          /* the header altered */
    CHECK(!unseal(copy, 32, 128, 7, tag));
    copy[2] ^= 1;
    copy[10] ^= 1 << 5;                    /* the ciphertext altered */
    CHECK(!unseal(copy, 32, 128, 7, tag));
    copy[10] ^= 1 << 5;
    /* The same body and nonce under another header: another keystream,
     * so that a synthetic nonce never serves two headers. */
    u64 other_head[20], other_tag[2];
    memcpy(other_head, orig, sizeof other_head);
    other_head[1] ^= 1;
    seal(other_head, 32, 128, 7, other_tag);
    CHECK(memcmp(other_head + 4, blob + 4, 128) != 0);
    /* A synthetic nonce covers the header and the body: the same record
     * gets the same one, a change to either byte another. */
    u64 n0 = seal_nonce(3, orig, sizeof orig);
    CHECK(n0 >> 63 && seal_nonce(3, orig, sizeof orig) == n0);
    memcpy(other_head, orig, sizeof other_head);
    other_head[2] ^= 1 << 8; /* the header's epoch */
    CHECK(seal_nonce(3, other_head, sizeof other_head) != n0);
    other_head[2] ^= 1 << 8;
    other_head[19] ^= 1; /* the body's last word */
    CHECK(seal_nonce(3, other_head, sizeof other_head) != n0);
    CHECK(seal_nonce(4, orig, sizeof orig) != n0); /* another place */
    u64 bad[2] = {tag[0], tag[1] ^ 1};
    CHECK(!unseal(copy, 32, 128, 7, bad));
    CHECK(unseal(copy, 32, 128, 7, tag));
    CHECK(memcmp(copy, orig, sizeof copy) == 0);

    /* A key set (KERNEL.SET_SEAL_KEY): what is sealed under it opens after
     * the keys change and the same key is set again (a later boot), and
     * not under another key. */
    const u64 k32[4] = {1, 2, 3, 4}, other[4] = {1, 2, 3, 5};
    seal_set_key(k32);
    memcpy(blob, orig, sizeof blob);
    seal(blob, 32, 128, 9, tag);
    seal_set_key(other);
    memcpy(copy, blob, sizeof copy);
    CHECK(!unseal(copy, 32, 128, 9, tag));
    seal_set_key(k32);
    CHECK(unseal(copy, 32, 128, 9, tag));
    CHECK(memcmp(copy, orig, sizeof copy) == 0);
}

/* A MADT as q35's, plus what a firmware may add; entries written byte by
 * byte (little endian). */
static unsigned put_entry(u8 *t, unsigned at, const u8 *e, unsigned n)
{
    memcpy(t + at, e, n);
    return at + n;
}

static void test_madt(void)
{
    static u8 t[256];
    struct madt m;
    madt_parse(NULL, &m);
    CHECK(!m.found && m.lapic_pa == 0xfee00000 && m.ioapic_pa == 0xfec00000 && m.overrides == 0);
    CHECK(m.isa_gsi[0] == 0 && m.isa_gsi[15] == 15 && m.mode[4] == 0 && m.mode[16] == (MADT_LEVEL | MADT_LOW));

    memset(t, 0, sizeof t);
    memcpy(t, "APIC", 4);
    t[36] = 0x00, t[37] = 0x00, t[38] = 0xe0, t[39] = 0xfe; /* local APIC 0xfee00000 */
    unsigned n = 44;
    const u8 lapic[] = {0, 8, 0, 0, 1, 0, 0, 0};
    const u8 ioapic2[] = {1, 12, 1, 0, 0x00, 0x10, 0xc0, 0xfe, 24, 0, 0, 0}; /* a second one, inputs from 24 */
    const u8 ioapic[] = {1, 12, 0, 0, 0x00, 0x00, 0xc0, 0xfe, 0, 0, 0, 0};
    const u8 irq0[] = {2, 10, 0, 0, 2, 0, 0, 0, 0x00, 0x00};      /* IRQ 0 -> GSI 2, bus defaults */
    const u8 irq9[] = {2, 10, 0, 9, 9, 0, 0, 0, 0x0d, 0x00};      /* level, active high */
    const u8 irq10[] = {2, 10, 0, 10, 10, 0, 0, 0, 0x0f, 0x00};   /* level, active low */
    const u8 far[] = {2, 10, 0, 11, 40, 0, 0, 0, 0x0f, 0x00};     /* GSI 40: beyond the I/O APIC */
    const u8 notisa[] = {2, 10, 1, 3, 3, 0, 0, 0, 0x0f, 0x00};    /* bus 1: not ISA */
    const u8 lapic64[] = {5, 12, 0, 0, 0x00, 0x10, 0xe0, 0xfe, 0, 0, 0, 0};
    n = put_entry(t, n, lapic, sizeof lapic);
    n = put_entry(t, n, ioapic2, sizeof ioapic2);
    n = put_entry(t, n, ioapic, sizeof ioapic);
    n = put_entry(t, n, irq0, sizeof irq0);
    n = put_entry(t, n, irq9, sizeof irq9);
    n = put_entry(t, n, irq10, sizeof irq10);
    n = put_entry(t, n, far, sizeof far);
    n = put_entry(t, n, notisa, sizeof notisa);
    n = put_entry(t, n, lapic64, sizeof lapic64);
    unsigned good = n;
    const u8 broken[] = {2, 0}; /* length 0: the walk ends here */
    const u8 after[] = {2, 10, 0, 5, 5, 0, 0, 0, 0x0f, 0x00};
    n = put_entry(t, n, broken, sizeof broken);
    n = put_entry(t, n, after, sizeof after);
    struct acpi_header *h = (struct acpi_header *)t;
    h->length = n;
    madt_parse(h, &m);
    CHECK(m.found && m.ioapic_pa == 0xfec00000 && m.lapic_pa == 0xfee01000);
    CHECK(m.overrides == 3);
    CHECK(m.isa_gsi[0] == 2 && m.mode[2] == 0);
    CHECK(m.isa_gsi[9] == 9 && m.mode[9] == MADT_LEVEL);
    CHECK(m.isa_gsi[10] == 10 && m.mode[10] == (MADT_LEVEL | MADT_LOW));
    CHECK(m.isa_gsi[11] == 11 && m.mode[11] == 0 && m.isa_gsi[3] == 3 && m.mode[3] == 0);
    CHECK(m.isa_gsi[5] == 5 && m.mode[5] == 0); /* after the broken entry */
    CHECK(m.mode[20] == (MADT_LEVEL | MADT_LOW));
    /* An entry running past the table's end is not read. */
    h->length = good - 1;
    madt_parse(h, &m);
    CHECK(m.lapic_pa == 0xfee00000 && m.overrides == 3);
    h->length = 40; /* too short for a MADT: the defaults */
    madt_parse(h, &m);
    CHECK(!m.found && m.isa_gsi[0] == 0);
}

static void test_budget(void)
{
    /* No budget for the caller: only the limits. */
    CHECK(budget_refusal(0, 0, 0, 0) == KEEP_ERR_OK);
    CHECK(budget_refusal(100, 1000, 0, 0) == KEEP_ERR_OK);
    CHECK(budget_refusal(10000000, 10000000, 0, 0) == KEEP_ERR_OK);
    const u64 bad[][2] = {{0, 1000}, {1000, 0}, {99, 1000}, {100, 999}, {100, 10000001}, {1001, 1000},
                          {~0ULL, ~0ULL}, {100, ~0ULL}, {~0ULL, 1000}, {1, 1}};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(budget_refusal(bad[i][0], bad[i][1], 0, 0) == KEEP_ERR_INVALID_ARG);
        CHECK(budget_refusal(bad[i][0], bad[i][1], 5000, 10000) == KEEP_ERR_INVALID_ARG);
    }
    /* A caller with half the CPU: half or less, never none. */
    CHECK(budget_refusal(5000, 10000, 5000, 10000) == KEEP_ERR_OK);
    CHECK(budget_refusal(1000, 2000, 5000, 10000) == KEEP_ERR_OK);
    CHECK(budget_refusal(100, 10000000, 5000, 10000) == KEEP_ERR_OK);
    CHECK(budget_refusal(5001, 10000, 5000, 10000) == KEEP_ERR_NO_RIGHTS);
    CHECK(budget_refusal(1001, 2000, 5000, 10000) == KEEP_ERR_NO_RIGHTS);
    CHECK(budget_refusal(0, 0, 5000, 10000) == KEEP_ERR_NO_RIGHTS);
    CHECK(budget_refusal(10000000, 10000000, 9999999, 10000000) == KEEP_ERR_NO_RIGHTS);
    /* SET_PASSIVE: 0 or 1; a caller with a budget may only turn it on. */
    CHECK(passive_refusal(0, 0) == KEEP_ERR_OK);
    CHECK(passive_refusal(1, 0) == KEEP_ERR_OK);
    CHECK(passive_refusal(1, 10000) == KEEP_ERR_OK);
    CHECK(passive_refusal(0, 10000) == KEEP_ERR_NO_RIGHTS);
    const u64 bad_on[] = {2, 3, 0x100, 1ULL << 32, ~0ULL};
    for (unsigned i = 0; i < sizeof bad_on / sizeof bad_on[0]; i++) {
        CHECK(passive_refusal(bad_on[i], 0) == KEEP_ERR_INVALID_ARG);
        CHECK(passive_refusal(bad_on[i], 10000) == KEEP_ERR_INVALID_ARG);
    }
}

int main(void)
{
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"printf formats", test_printf},
        {"memmap carve-outs", test_memmap_basic},
        {"memmap overlap and merge", test_memmap_overlap_and_merge},
        {"elf accepts a good file", test_elf_accepts},
        {"elf refuses bad files", test_elf_refuses},
        {"boot image parsing", test_bootimage},
        {"symbol lookup", test_ksyms},
        {"capability encoding", test_cap_encoding},
        {"reply versions carry", test_reply_version},
        {"weak capabilities", test_cap_weak},
        {"sealing", test_seal},
        {"ChaCha20-Poly1305 (RFC 8439)", test_aead},
        {"MADT parsing", test_madt},
        {"budget refusals", test_budget},
    };
    int failed_tests = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = failures;
        tests[i].fn();
        bool ok = failures == before;
        failed_tests += !ok;
        printf("host-test: %s ... %s\n", tests[i].name, ok ? "ok" : "FAILED");
    }
    size_t n = sizeof tests / sizeof tests[0];
    printf("host-test: %zu passed, %d failed (%d checks)\n", n - (size_t)failed_tests, failed_tests, checks);
    return failed_tests ? 1 : 0;
}

/* ELF64 parsing with overflow-safe bounds checks. */
#include "elf.h"
#include "lib.h"

#define PT_LOAD 1
#define PF_X 1
#define PF_W 2

static u64 rd(const u8 *p, int n)
{
    u64 v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static bool fail(const char **why, const char *msg)
{
    *why = msg;
    return false;
}

bool elf_parse(const u8 *f, u64 size, u64 user_top, struct elf_image *out, const char **why)
{
    static const u8 ident[] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */, 1};
    if (size < 64 || memcmp(f, ident, sizeof ident) != 0)
        return fail(why, "not a 64-bit little-endian ELF file");
    if (rd(f + 16, 2) != 2)
        return fail(why, "not an executable (ET_EXEC)");
    if (rd(f + 18, 2) != 62)
        return fail(why, "not for x86-64");
    u64 phoff = rd(f + 32, 8), phentsize = rd(f + 54, 2), phnum = rd(f + 56, 2);
    out->entry = rd(f + 24, 8);
    out->nseg = 0;
    if (phentsize < 56 || phnum == 0 || phoff > size || phnum > (size - phoff) / phentsize)
        return fail(why, "program headers lie outside the file");

    for (u64 i = 0; i < phnum; i++) {
        const u8 *ph = f + phoff + i * phentsize;
        if (rd(ph, 4) != PT_LOAD)
            continue;
        u64 flags = rd(ph + 4, 4);
        struct elf_segment s = {
            .offset = rd(ph + 8, 8),
            .vaddr = rd(ph + 16, 8),
            .filesz = rd(ph + 32, 8),
            .memsz = rd(ph + 40, 8),
            .write = (flags & PF_W) != 0,
            .exec = (flags & PF_X) != 0,
        };
        if (s.memsz == 0)
            continue;
        if (s.write && s.exec)
            return fail(why, "a segment is both writable and executable");
        if (s.filesz > s.memsz)
            return fail(why, "a segment's file size exceeds its memory size");
        if (s.offset > size || s.filesz > size - s.offset)
            return fail(why, "a segment lies outside the file");
        if (s.vaddr >= user_top || s.memsz > user_top - s.vaddr)
            return fail(why, "a segment lies outside the user half");
        if ((s.vaddr & 0xfff) != (s.offset & 0xfff))
            return fail(why, "a segment's address and file offset are not congruent");
        for (unsigned k = 0; k < out->nseg; k++) {
            const struct elf_segment *o = &out->seg[k];
            u64 a0 = ALIGN_DOWN(s.vaddr, 4096), a1 = ALIGN_UP(s.vaddr + s.memsz, 4096);
            u64 b0 = ALIGN_DOWN(o->vaddr, 4096), b1 = ALIGN_UP(o->vaddr + o->memsz, 4096);
            if (a0 < b1 && b0 < a1)
                return fail(why, "two segments share a page");
        }
        if (out->nseg == ELF_MAX_SEGMENTS)
            return fail(why, "too many segments");
        out->seg[out->nseg++] = s;
    }
    if (out->nseg == 0)
        return fail(why, "no loadable segment");
    bool entry_ok = false;
    for (unsigned k = 0; k < out->nseg; k++)
        if (out->seg[k].exec && out->entry >= out->seg[k].vaddr &&
            out->entry - out->seg[k].vaddr < out->seg[k].memsz)
            entry_ok = true;
    if (!entry_ok)
        return fail(why, "the entry point is not in an executable segment");
    return true;
}

#!/usr/bin/env python3
"""The adversarial module corpus: several hundred small modules, generated
from templates, each naming the verifier rule it breaks (the exact reject
reason expected) or `accepted` for a legal module that still tries its
best (stores through every register the embedder controls, the largest
displacements, masked branches...).

    gen.py OUTDIR      writes OUTDIR/*.sfi and OUTDIR/manifest.tsv
                       (name, expected verdict, rule, one line of source)

All modules are assembled by one `as` run: each is a section of its own whose
symbols (`__sfi_base`, `data`, `tramp1`...) are set relative to the section's
start, so the assembler resolves every reference and no linker is needed.
sfi/tests/run_tests.py verifies every module and checks the verdict, then
runs the accepted ones in the host runtime with a marker in the embedder's
memory (sfi-corpus-run)."""
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cc"))
import sficc  # noqa: E402

CODE_BASE, BASE_SLOT, TRAMP_BASE, BUNDLE = sficc.CODE_BASE, sficc.BASE_SLOT, sficc.TRAMP_BASE, sficc.BUNDLE
DATA_OFF = 0x40000  # every module's data segment: 4 KiB of data, then 64 KiB of bss
# A tuple in a module's lines is a sequence that must stay in one bundle
# (`.bundle_lock`); gas's `.bundle_align_mode 5` keeps every other
# instruction inside a bundle too, unless a module asks for its own layout.
RET = [("popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "jmp *%r11")]
STORE, LOAD, STACK = "unsandboxed store", "unsandboxed load", "stack pointer changed without re-sandboxing"
UNCHECKED = "branch before the stack pointer was checked"
VENDOR = "encoding decoded differently by CPU vendors"
REGS = ["rax", "rcx", "rdx", "rbx", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]


def r32(r):
    return sficc.R32.get(r, r + "d")


def r16(r):
    return r + "w" if r[1].isdigit() else r[1:]


class Corpus:
    def __init__(self):
        self.mods = []  # (name, expect, rule, full, lines, tail)
        self.raw = []   # (name, expect, rule, bytes): container-level cases, built from a good module

    def add(self, name, expect, rule, lines, full=False, tail="int3", bundled=True):
        """tail: 'int3' (an int3, then int3 to the bundle end), or 'exact'
        (pad with nops *before* nothing: the code ends with the last line)."""
        taken = {m[0] for m in self.mods}
        base, n = name, 2
        while name in taken:  # the same mnemonic with other operands
            name, n = "%s_%d" % (base, n), n + 1
        self.mods.append((name, expect, rule, full, lines, tail, bundled))


# ------------------------------------------------------------------ templates

# Instructions that write their memory operand {m}.
STORES = [
    "movq %rax, {m}", "movl $1, {m}", "movw %ax, {m}", "movb $1, {m}", "addq %rax, {m}", "subl %eax, {m}",
    "andq %rax, {m}", "orb $1, {m}", "xorw %ax, {m}", "adcq %rax, {m}", "sbbq $1, {m}", "incq {m}", "decq {m}",
    "negq {m}", "notq {m}", "shlq {m}", "sarl $3, {m}", "rolw {m}", "shrdq $1, %rax, {m}", "xchgq %rax, {m}",
    "cmpxchgq %rbx, {m}", "xaddq %rax, {m}", "lock addq $1, {m}", "sete {m}", "setne {m}", "movss %xmm0, {m}",
    "movsd %xmm0, {m}", "movaps %xmm0, {m}", "movups %xmm0, {m}", "movdqa %xmm0, {m}", "movdqu %xmm0, {m}",
    "movq %xmm0, {m}", "movd %xmm0, {m}", "movhps %xmm0, {m}", "movlpd %xmm0, {m}", "vmovups %ymm0, {m}",
    "vmovdqu %ymm1, {m}", "vmovss %xmm0, {m}", "pextrd $1, %xmm0, {m}", "extractps $1, %xmm0, {m}",
    "vextracti128 $1, %ymm0, {m}", "vpextrq $1, %xmm0, {m}", "stmxcsr {m}", "fstpl {m}", "fstps {m}",
    "fistpl {m}", "fisttpl {m}", "fnstcw {m}", "fnstsw {m}", "fnsave {m}", "fnstenv {m}", "cmpxchg8b {m}",
    "cmpxchg16b {m}", "movnti %rax, {m}", "movntdq %xmm0, {m}", "vmaskmovps %ymm1, %ymm0, {m}",
    "vpmaskmovd %xmm1, %xmm0, {m}", "btsq $3, {m}", "btrl $3, {m}", "movbe %rax, {m}", "popq {m}",
]
# Instructions that only read their memory operand {m}.
LOADS = [
    "movq {m}, %rax", "movzbl {m}, %eax", "movsbq {m}, %rax", "movslq {m}, %rax", "addq {m}, %rax",
    "cmpq $1, {m}", "testl %eax, {m}", "imulq {m}, %rax", "divq {m}", "movss {m}, %xmm0", "movsd {m}, %xmm0",
    "movdqu {m}, %xmm0", "vmovups {m}, %ymm0", "vpaddd {m}, %ymm1, %ymm0", "vbroadcastss {m}, %ymm0",
    "cvtsi2sdq {m}, %xmm0", "fldl {m}", "fildl {m}", "cmovneq {m}, %rax", "vmaskmovps {m}, %ymm0, %ymm1",
    "crc32q {m}, %rax", "popcntq {m}, %rax", "btq $3, {m}", "pushq {m}", "lddqu {m}, %xmm0", "movbe {m}, %rax",
    "aesenc {m}, %xmm0", "pshufb {m}, %xmm0", "shlxq %rcx, {m}, %rax", "andnq {m}, %rbx, %rax",
]
# Memory operands that a store (or, full, a load) may not use: the expected reason.
BAD_ADDR = [
    ("base_rdi", "(%rdi)"), ("base_disp", "8(%rax)"), ("base_index", "(%rbx,%rcx,4)"), ("r15", "0x100(%r15)"),
    ("rbp", "(%rbp)"), ("rsp_index", "-8(%rsp,%rdi)"), ("gs_64bit", "%gs:(%rdi)"), ("gs_64bit_index", "%gs:8(%rdi,%rcx)"),
    ("addr32_no_gs", "(%edi)"), ("ds_addr32", "%ds:(%edi)"), ("es", "%es:(%rdi)"), ("ss_rax", "%ss:(%rax)"),
    ("cs_rax", "%cs:(%rax)"), ("absolute", "0x1000"), ("rip_code", "f(%rip)"), ("rip_below_domain", "f-0x30000(%rip)"),
    ("rip_trampoline", "tramp1(%rip)"), ("rip_entry_page", "__sfi_base(%rip)"), ("rsp_addr32", "(%esp)"),
    ("index_only", "(,%rax,8)"),
]
GOOD_ADDR = [
    ("gs", "%gs:(%edi)"), ("gs_index", "%gs:8(%eax,%ecx,4)"), ("gs_r15d", "%gs:0x7ffffff0(%r15d)"),
    ("gs_index_only", "%gs:(,%edx,8)"), ("rsp", "(%rsp)"), ("rsp_max", "0x7fffff00(%rsp)"), ("rsp_min", "-0x80000000(%rsp)"),
    ("rip_data", "data(%rip)"), ("rip_data_end", "data+0x10ff0(%rip)"),
]


def safe_name(s):
    return "".join(c if c.isalnum() else "_" for c in s).strip("_")


def mnem(t):
    w = t.split()
    return safe_name(w[1] if w[0] == "lock" else w[0])


def stores(c):
    for k, t in enumerate(STORES):
        # every store against three bad forms (rotating), and against the good ones
        for j in range(3):
            an, a = BAD_ADDR[(k + 7 * j) % len(BAD_ADDR)]
            if "cmpxchg16b" in t and an in ("absolute",):
                continue
            c.add("store_%s_%s" % (mnem(t), an), STORE, "3", [t.format(m=a)] + RET)
        for an, a in GOOD_ADDR[k % 3::3]:
            if t.startswith("popq") and a.startswith("(%rsp)"):
                continue
            c.add("ok_store_%s_%s" % (mnem(t), an), "accepted", "3", [t.format(m=a)] + RET)
        # the per-opcode cache: a legal instance first, then an illegal one
        good = GOOD_ADDR[k % len(GOOD_ADDR)][1]
        c.add("cache_store_%s" % mnem(t), STORE, "3 (fast path)", [t.format(m=good), t.format(m="(%rdi)")] + RET)
    for an, a in BAD_ADDR:
        for t in ("movq %rax, {m}", "incl {m}", "vmovdqu %ymm0, {m}"):
            name = "store_%s_%s" % (mnem(t), an)
            if not any(m[0] == name for m in c.mods):
                c.add(name, STORE, "3", [t.format(m=a)] + RET)
    c.add("store_fs", "segment override %fs", "3", ["movq %rax, %fs:(%edi)"] + RET)
    c.add("store_fs_rsp", "segment override %fs", "3", ["movq %rax, %fs:8(%rsp)"] + RET)


def loads(c):
    for k, t in enumerate(LOADS):
        an, a = BAD_ADDR[k % len(BAD_ADDR)]
        if t.startswith("pushq"):
            c.add("load_full_pushq_%s" % an, LOAD, "3", [t.format(m=a), "popq %rax"] + RET, full=True)
            c.add("ok_load_full_pushq_gs", "accepted", "3", [t.format(m="%gs:(%edi)"), "popq %rax"] + RET, full=True)
            continue
        if an in ("rip_code", "rip_trampoline", "rip_entry_page"):  # inside the domain: readable
            c.add("ok_load_full_%s_%s" % (mnem(t), an), "accepted", "3", [t.format(m=a)] + RET, full=True)
        else:
            c.add("load_full_%s_%s" % (mnem(t), an), LOAD, "3", [t.format(m=a)] + RET, full=True)
        if an.startswith("gs_"):  # a %gs access obeys rule 3 in both modes
            c.add("load_stores_mode_%s_%s" % (mnem(t), an), LOAD, "3", [t.format(m=a)] + RET)
        else:
            c.add("ok_load_stores_mode_%s_%s" % (mnem(t), an), "accepted", "3 (loads are free without the full flag)", [t.format(m=a)] + RET)
        c.add("ok_load_full_%s_gs" % mnem(t), "accepted", "3", [t.format(m="%gs:(%edi)")] + RET, full=True)
        c.add("cache_load_full_%s" % mnem(t), LOAD, "3 (fast path)", [t.format(m="%gs:(%edi)"), t.format(m="(%rsi)")] + RET, full=True)
    for t in ("lodsb", "lodsq", "xlat", "cmpsb", "scasq"):
        c.add("load_full_implicit_%s" % t, LOAD, "3", [t] + RET, full=True)
    c.add("load_fs", "segment override %fs", "3", ["movq %fs:0, %rax"] + RET)
    c.add("load_gs_64bit_stores_mode", LOAD, "3", ["movq %gs:(%rax), %rax"] + RET)
    c.add("load_gather_full", LOAD, "3", ["vpgatherdd %ymm2, (%rdi,%ymm1,4), %ymm0"] + RET, full=True)
    c.add("load_gather_gs_full", LOAD, "3", ["vpgatherdd %ymm2, %gs:(%edi,%ymm1,4), %ymm0"] + RET, full=True)


def implicit_stores(c):
    for t in ("stosb", "stosq", "rep stosq", "movsb", "rep movsq", "maskmovdqu %xmm1, %xmm0", "vmaskmovdqu %xmm1, %xmm0"):
        c.add("store_implicit_%s" % safe_name(t), STORE, "3", [t] + RET)
    c.add("store_movs_gs_source", STORE, "3", [".byte 0x65, 0x67", "movsb"] + RET)  # the destination is %es:(%edi)
    c.add("ok_store_maskmovdqu_gs", "accepted", "3", [".byte 0x65, 0x67", "maskmovdqu %xmm1, %xmm0"] + RET)


def bit_strings(c):
    for op in ("bt", "bts", "btr", "btc"):
        for sz, reg in (("w", "%ax"), ("l", "%eax"), ("q", "%rax")):
            for an, a in (("rsp", "(%rsp)"), ("rdi", "(%rdi)"), ("gs", "%gs:(%edi)"), ("rip_data", "data(%rip)")):
                c.add("bitstring_%s%s_%s" % (op, sz, an), "bit-string access with a register offset", "2 (bit strings)",
                      ["%s%s %s, %s" % (op, sz, reg, a)] + RET)
            c.add("ok_bitstring_%s%s_imm" % (op, sz), "accepted", "2 (bit strings)", ["%s%s $5, %%gs:(%%edi)" % (op, sz)] + RET)
            c.add("ok_bitstring_%s%s_reg" % (op, sz), "accepted", "2 (bit strings)", ["%s%s %s, %s" % (op, sz, reg, reg.replace("a", "b"))] + RET)


def push_pop(c):
    c.add("pop_mem_rdi", STORE, "3", ["pushq %rax", "popq (%rdi)"] + RET)
    c.add("pop_mem_after_pop_rsp", STORE, "3 (fast path)",
          ["pushq %rax", "pushq %rax", "popq (%rsp)", "popq %rax", "pushq %rsi", "popq (%rdi)"] + RET)
    for first in ("(%rsp)", "8(%rsp)", "%gs:(%edi)", "data(%rip)", "0x10(%rsp)"):
        for second in ("(%rdi)", "(%rax)", "8(%rbx)", "%gs:(%rdi)"):
            c.add("cache_pop_%s_then_%s" % (safe_name(first), safe_name(second)), STORE, "3 (fast path)",
                  ["pushq %rax", "popq " + first, "pushq %rax", "popq " + second] + RET)
        c.add("cache_push_%s_then_rdi_full" % safe_name(first), LOAD, "3 (fast path)",
              ["pushq " + first, "popq %rax", "pushq (%rdi)", "popq %rax"] + RET, full=True)
    c.add("ok_pop_gs", "accepted", "3", ["pushq %rax", "popq %gs:(%edi)"] + RET)
    c.add("ok_pop_rsp_disp", "accepted", "3", ["pushq %rax", "popq 8(%rsp)"] + RET)


def indirect(c):
    for r in REGS:
        e = r32(r)
        seq = lambda *mid: list(mid)
        c.add("jmp_bare_%s" % r, "indirect branch not sandboxed", "6", ["jmp *%%%s" % r])
        c.add("call_bare_%s" % r, "indirect branch not sandboxed", "6", ["call *%%%s" % r] + RET)
        c.add("jmp_mask_only_%s" % r, "indirect branch not sandboxed", "6", [("andl $-32, %%%s" % e, "jmp *%%%s" % r)])
        c.add("jmp_mask16_%s" % r, "indirect branch not sandboxed", "6",
              [("andl $-16, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        c.add("jmp_mask64_%s" % r, "indirect branch not sandboxed", "6",
              [("andq $-32, %%%s" % r, "addq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        c.add("jmp_base_wrong_slot_%s" % r, "indirect branch not sandboxed", "4",
              [("andl $-32, %%%s" % e, "addq __sfi_base+8(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        c.add("jmp_base_by_mov_%s" % r, "indirect branch not sandboxed", "4",
              [("andl $-32, %%%s" % e, "movq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        other = "rbx" if r != "rbx" else "rcx"
        c.add("jmp_mask_other_reg_%s" % r, "indirect branch not sandboxed", "6",
              [("andl $-32, %%%s" % r32(other), "addq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        c.add("jmp_split_bundle_%s" % r, "indirect branch not sandboxed", "6",
              [".nops %d" % (28 if r[1].isdigit() else 29), "andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r],
              bundled=False)
        c.add("ok_jmp_masked_%s" % r, "accepted", "6", [("andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, "jmp *%%%s" % r)])
        c.add("ok_call_masked_%s" % r, "accepted", "6",
              [("andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, "call *%%%s" % r)] + RET)
        # The return through any register (sfi-cc's: %rcx, %r11) with a
        # broken mask, the mask or base on another register, or split.
        pre = "popq %%%s" % r
        c.add("ret_mask64_%s" % r, "return instruction", "9",
              [(pre, "andq $-32, %%%s" % r, "addq __sfi_base(%%rip), %%%s" % r, "pushq %%%s" % r, "ret")])
        c.add("ret_mask16_%s" % r, "return instruction", "9",
              [(pre, "andw $-32, %%%s" % r16(r), "addq __sfi_base(%%rip), %%%s" % r, "pushq %%%s" % r, "ret")])
        c.add("ret_mask_other_reg_%s" % r, "return instruction", "9",
              [(pre, "andl $-32, %%%s" % r32(other), "addq __sfi_base(%%rip), %%%s" % r, "pushq %%%s" % r, "ret")])
        c.add("ret_base_other_reg_%s" % r, "return instruction", "9",
              [(pre, "andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % other, "pushq %%%s" % r, "ret")])
        c.add("ret_split_bundle_%s" % r, "return instruction", "9",
              [".nops %d" % (17 if r[1].isdigit() else 20), pre, "andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r,
               "pushq %%%s" % r, "ret"], bundled=False)
        if r != "r11":
            c.add("ret_push_unmasked_%s" % r, "return instruction", "9", [("popq %%%s" % r, "pushq %%%s" % r, "ret")])
            c.add("ok_ret_masked_%s" % r, "accepted", "9",
                  [("popq %%%s" % r, "andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, "pushq %%%s" % r, "ret")])
    for t in ("jmp *(%rax)", "call *8(%rsp)", "jmp *8(%rax,%rcx,8)", "call *data(%rip)", "jmp *(%rsp)"):
        c.add("branch_through_memory_%s" % safe_name(t), "indirect branch through memory", "6", [t] + RET)
    c.add("ret_plain", "return instruction", "9", ["ret"])
    c.add("ret_imm", "return instruction", "9", ["ret $8"])
    c.add("ret_masked_imm", "return instruction", "9", [("popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "pushq %r11", "ret $0")])
    c.add("ret_mask_without_push", "return instruction", "9", [("popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "ret")])
    # masking %esp is a write of %rsp (rule 5) before it is a return through it
    c.add("ret_push_rsp", STACK, "5, 9", [("andl $-32, %esp", "addq __sfi_base(%rip), %rsp", "pushq %rsp", "ret")])


def stack(c):
    writes = ["movq %rax, %rsp", "leaq 8(%rax), %rsp", "addq %rax, %rsp", "subq %rcx, %rsp", "xchgq %rax, %rsp",
              "popq %rsp", "cmovneq %rax, %rsp", "leaq (%rsp,%rax), %rsp", "subq $0x10008, %rsp", "addq $0x10001, %rsp",
              "andq $-0x20000, %rsp", "andq $0x7fffffff, %rsp", "orq $1, %rsp", "incq %rsp", "decq %rsp", "negq %rsp",
              "xorq %rsp, %rsp", "movl %eax, %esp", "shlq %rsp", "bswapq %rsp", "adcq $1, %rsp", "imulq $2, %rsp",
              "movq (%rdi), %rsp", "popcntq %rax, %rsp", "xaddq %rax, %rsp", "btsq $40, %rsp", "movw %ax, %sp",
              "movb %al, %spl", "subq $8, %rsp\n\tsubq $8, %rsp", "leaq -0x10008(%rsp), %rsp", "leaq -8(%esp), %rsp",
              "leal -8(%rsp), %esp"]
    for k, w in enumerate(writes):
        n = safe_name(w)[:40] + "_%d" % k
        ws = tuple(w.split("\n\t"))
        c.add("rsp_%s_unfixed" % n, STACK, "5", [ws, "movq %rax, (%rdi)"] + RET)
        if "$8, %rsp\n" in w:
            continue
        c.add("rsp_%s_or_only" % n, STACK, "5", [ws + ("orl $0xf0000000, %esp",)] + RET)
        c.add("rsp_%s_add_only" % n, STACK, "5", [ws + ("addq __sfi_base(%rip), %rsp",)] + RET)
        c.add("rsp_%s_old_pair" % n, STACK, "5", [ws + ("movl %esp, %esp", "addq __sfi_base(%rip), %rsp")] + RET)
        c.add("rsp_%s_or_too_small" % n, STACK, "5", [ws + ("orl $0x70000000, %esp", "addq __sfi_base(%rip), %rsp")] + RET)
        c.add("rsp_%s_fix_next_bundle" % n, STACK, "5",
              [".nops 20"] + list(ws) + [".p2align 5", "orl $0xf0000000, %esp", "addq __sfi_base(%rip), %rsp"] + list(RET[0]), bundled=False)
        c.add("ok_rsp_%s_fixed" % n, "accepted", "5", [ws + ("orl $0xf0000000, %esp", "addq __sfi_base(%rip), %rsp")] + RET)
    c.add("rsp_leave", "frame instruction", "2", ["leave"] + RET)
    c.add("rsp_enter", "frame instruction", "2", ["enter $16, $0"] + RET)
    # Small steps: only an access that always faults outside the stack checks them.
    not_checks = ["vmaskmovps (%rsp), %ymm0, %ymm1", "vmaskmovps %ymm1, %ymm0, (%rsp)", "vmaskmovpd (%rsp), %xmm0, %xmm1",
                  "vpmaskmovd (%rsp), %ymm0, %ymm1", "vpmaskmovq %ymm1, %ymm0, (%rsp)", "cmovneq (%rsp), %rax",
                  "prefetcht0 (%rsp)", "prefetchnta 8(%rsp)", "prefetchw (%rsp)", "clflush (%rsp)", "leaq (%rsp), %rax",
                  "nopl (%rsp)", "movq %rax, 0x10008(%rsp)", "movq %rax, -8(%rsp)", "movq %rax, %gs:(%esp)",
                  "btq $1, (%rsp)", "movq (%rsp,%rax), %rax", "vpgatherdd %ymm2, (%rsp,%ymm1,4), %ymm0"]
    for k, chk in enumerate(not_checks):
        for step in ("subq $0x10000, %rsp", "addq $64, %rsp"):
            c.add("step_%s_%s_then_branch" % (safe_name(step)[:12], safe_name(chk)[:40]), UNCHECKED, "5 (checks)",
                  [step, chk, "jmp 1f", "1:", "movq %rax, (%rsp)"] + RET)
    for k, chk in enumerate(["movq %rax, (%rsp)", "movq (%rsp), %rax", "movq %rdi, 0x10000(%rsp)", "cmpq $0, 8(%rsp)",
                             "testl %eax, (%rsp)", "incq (%rsp)", "addq (%rsp), %rax", "fldl (%rsp)", "fstpl 8(%rsp)",
                             "vmovups %ymm0, (%rsp)", "movaps (%rsp), %xmm0", "cvtsi2sdq (%rsp), %xmm0",
                             "pushq %rax", "popq %rax", "movzbl (%rsp), %eax"]):
        c.add("ok_step_checked_%s" % safe_name(chk)[:40], "accepted", "5 (checks)",
              ["subq $0x10000, %rsp", chk, "jmp 1f", "1:", "addq $0x10000, %rsp", "movq %rax, (%rsp)"] + RET)
    c.add("step_twice", STACK, "5", ["subq $64, %rsp", "subq $64, %rsp", "movq %rax, (%rsp)"] + RET)
    # lea d(%rsp), %rsp is a small step too (the runtime-entry sequence's, which leaves the flags alone).
    c.add("ok_step_lea_checked", "accepted", "5 (checks)", ["leaq -128(%rsp), %rsp", "pushq %rax", "jmp 1f", "1:", "popq %rax",
                                                             "leaq 128(%rsp), %rsp", "movq %rax, (%rsp)"] + RET)
    c.add("step_lea_then_jcc", UNCHECKED, "5", ["leaq -128(%rsp), %rsp", "jne 1f", "1:", "movq %rax, (%rsp)"] + RET)
    c.add("step_lea_twice", STACK, "5", ["leaq -128(%rsp), %rsp", "subq $64, %rsp", "movq %rax, (%rsp)"] + RET)
    c.add("step_then_jcc", UNCHECKED, "5", ["subq $64, %rsp", "jne 1f", "1:", "movq %rax, (%rsp)"] + RET)
    c.add("step_then_masked_jmp", UNCHECKED, "5", ["subq $64, %rsp", ("andl $-32, %eax", "addq __sfi_base(%rip), %rax", "jmp *%rax")])
    c.add("step_at_end", STACK, "5", ["subq $64, %rsp"], tail="exact", bundled=False)
    c.add("step_loop_maskmov", UNCHECKED, "5 (checks)",
          ["1:", "subq $0x10000, %rsp", "vmaskmovps (%rsp), %ymm0, %ymm1", "jmp 1b"])
    c.add("ok_and_rsp_64k", "accepted", "5", ["andq $-0x10000, %rsp", "movq %rax, (%rsp)"] + RET)


def system(c):
    cases = {
        "system call or interrupt": ["syscall", "sysenter", "int $0x80", ".byte 0xcd, 0x03", ".byte 0xf1"],
        "privileged instruction": ["hlt", "cli", "sti", "inb $0x60, %al", "outb %al, $0x80", "insb", "outsb", "lgdt (%rax)",
                                   "lidt (%rax)", "sgdt (%rsp)", "sidt (%rsp)", "lldt %ax", "sldt %ax", "ltr %ax", "str %ax",
                                   "smsw %ax", "lmsw %ax", "clts", "invd", "wbinvd", "invlpg (%rax)", "rdmsr", "wrmsr",
                                   "rdpmc", "movq %cr0, %rax", "movq %rax, %cr3", "movq %dr7, %rax"],
        "segment instruction": ["movw %ax, %ds", "movw %ds, %ax", "movw %ax, %ss", "popq %fs", "pushq %gs", "lfs (%rax), %eax",
                                "lss (%rax), %eax", "lgs (%rax), %eax", "swapgs", "wrgsbase %rax", "rdgsbase %rax",
                                "wrfsbase %rax", "rdfsbase %rax", "larl %ax, %eax", "lsll %ax, %eax", "verr %ax", "verw %ax"],
        "flags instruction": ["pushfq", "popfq", "std"],
        "control-state instruction": ["ldmxcsr (%rsp)", "vldmxcsr (%rsp)", "fldcw (%rsp)", "fldenv (%rsp)", "frstor (%rsp)",
                                      "fxrstor (%rsp)", "fxrstor64 (%rsp)"],
        "instruction set not allowed": ["cpuid", "rdtscp", "rdpid %rax", "xgetbv", "xsetbv", "xsave (%rsp)", "xrstor (%rsp)",
                                        "xsaveopt (%rsp)", "fxsave (%rsp)", "vmcall", "vmlaunch", "monitor", "mwait",
                                        "paddb %mm0, %mm1", "emms", "vpaddd %zmm0, %zmm1, %zmm2", "kmovw %k1, %k2",
                                        "movdir64b (%rax), %rcx", "enqcmd (%rax), %rcx", "tpause %eax", "ptwrite %eax",
                                        "rdsspq %rax", "incsspq %rax", "clzero", "getsec", "encls", "invpcid (%rax), %rax",
                                        "xtest", "umonitor %rax", "wbnoinvd", "clwb (%rsp)", "serialize", "pconfig",
                                        "rdpkru", "wrpkru", "femms", "pfadd %mm0, %mm1", "xend", "xabort $1"],
        "transactional memory instruction": ["xbegin 1f\n1:"],
        "far branch": ["ljmp *(%rax)", "lcall *(%rax)"],
        "return instruction": ["lret", "retq", "iretq", "sysexit", "sysretq"],
        "encoding decoded differently by CPU vendors": [".byte 0x0f, 0xff, 0xc0"],
    }
    for reason, insns in cases.items():
        for t in insns:
            c.add("sys_%s" % safe_name(t.split("\n")[0])[:40], reason, "2", t.split("\n") + RET)


def vendor(c):
    ccs = ["o", "no", "b", "ae", "e", "ne", "be", "a", "s", "ns", "p", "np", "l", "ge", "le", "g"]
    for cc in ccs:
        c.add("vendor_66_j%s_rel8" % cc, VENDOR, "11", [".byte 0x66", "j%s 1f" % cc, "1:"] + RET)
        c.add("vendor_66_j%s_rel32" % cc, VENDOR, "11", [".byte 0x66, 0x0f, 0x%02x, 0, 0, 0, 0" % (0x80 + ccs.index(cc))] + RET)
        c.add("ok_j%s_rel32" % cc, "accepted", "11", [".byte 0x0f, 0x%02x, 0, 0, 0, 0" % (0x80 + ccs.index(cc))] + RET)
    for name, b in [("jmp_rel8", "0x66, 0xeb, 0x00"), ("jmp_rel32", "0x66, 0xe9, 0, 0, 0, 0"), ("call_rel32", "0x66, 0xe8, 0, 0, 0, 0"),
                    ("rexw_jmp_rel32", "0x66, 0x48, 0xe9, 0, 0, 0, 0"), ("addr32_call", "0x67, 0xe8, 0, 0, 0, 0"),
                    ("addr32_jmp", "0x67, 0xe9, 0, 0, 0, 0"), ("addr32_jne", "0x67, 0x75, 0x00"), ("loop", "0x66, 0xe2, 0x00"),
                    ("jrcxz", "0x66, 0xe3, 0x00"), ("jecxz", "0x67, 0xe3, 0x00"), ("two_66_jne", "0x66, 0x66, 0x0f, 0x85, 0, 0, 0, 0"),
                    ("cs_66_je", "0x2e, 0x66, 0x74, 0x00")]:
        c.add("vendor_%s" % name, VENDOR, "11", [".byte " + b] + RET)
    for r in ("rax", "r11"):
        e = r32(r)
        pre = "0x66, 0x41," if r == "r11" else "0x66,"
        c.add("vendor_66_masked_jmp_%s" % r, VENDOR, "11",
              [("andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, ".byte %s 0xff, 0x%02x" % (pre, 0xe3 if r == "r11" else 0xe0))])
        c.add("vendor_66_masked_call_%s" % r, VENDOR, "11",
              [("andl $-32, %%%s" % e, "addq __sfi_base(%%rip), %%%s" % r, ".byte %s 0xff, 0x%02x" % (pre, 0xd3 if r == "r11" else 0xd0))] + RET)
    c.add("vendor_66_ret", VENDOR, "11", [("popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "pushq %r11", ".byte 0x66, 0xc3")])
    c.add("vendor_67_indirect_jmp_gs", VENDOR, "11", ["jmp *%gs:(%eax)"] + RET)
    c.add("ok_branch_hints", "accepted", "11", [".byte 0x2e, 0x74, 0x00, 0x3e, 0x75, 0x00"] + RET)
    c.add("ok_66_nops", "accepted", "11", [".byte 0x66, 0x90", ".byte 0x66, 0x0f, 0x1f, 0x44, 0, 0", ".byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0"] + RET)


def ends(c):
    past = "code can run past its end"
    for t in ["nop", "movq %rax, (%rsp)", "jne f", "call f", "addq $1, %rax", "pushq %rax", "xchg %ax, %ax", "nopw 0(%rax,%rax)",
              "andl $-32, %eax\n\taddq __sfi_base(%rip), %rax\n\tcall *%rax", "jmp f\n\tnop"]:
        c.add("end_falls_through_%s" % safe_name(t)[:30], past, "10", t.split("\n\t"), tail="exact", bundled=False)
    for t in ["jmp f", "int3", "ud2", "\n".join(RET[0]), "popq %r11\nandl $-32, %r11d\naddq __sfi_base(%rip), %r11\npushq %r11\nret"]:
        c.add("ok_end_%s" % safe_name(t)[:30], "accepted", "10", t.split("\n"), tail="exact", bundled=False)


def targets(c):
    mid = "branch into the middle of an instruction"
    inseq = "branch into a sandboxing sequence"
    outside = "direct branch outside the code segment"
    c.add("target_mid_mov", mid, "7", ["jmp 1f+1", "1:", "movl $1, %eax"] + RET)
    c.add("target_mid_store", mid, "7", ["jmp 1f+3", "1:", "movq %rax, %gs:(%edi)"] + RET)
    c.add("target_mid_call", mid, "7", ["call 1f+2", "1:", "movabsq $0x0000000000c3050f, %rax"] + RET)
    c.add("target_mid_jcc", mid, "7", ["je 1f+1", "1:", "nopl 0(%rax)"] + RET)
    c.add("target_into_mask_add", inseq, "7", [("jmp 1f", "andl $-32, %eax", "1:", "addq __sfi_base(%rip), %rax", "jmp *%rax")])
    c.add("target_into_masked_jmp", inseq, "7", [("jmp 1f", "andl $-32, %eax", "addq __sfi_base(%rip), %rax", "1:", "jmp *%rax")])
    c.add("target_into_rsp_add", inseq, "7", [("jmp 1f", "movq %rax, %rsp", "orl $0xf0000000, %esp", "1:", "addq __sfi_base(%rip), %rsp")] + RET)
    c.add("target_into_rsp_or", inseq, "7", [("jmp 1f", "movq %rax, %rsp", "1:", "orl $0xf0000000, %esp", "addq __sfi_base(%rip), %rsp")] + RET)
    c.add("target_into_ret_push", inseq, "7", [("jmp 1f", "popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "1:", "pushq %r11", "ret")])
    c.add("target_into_ret", inseq, "7", [("jmp 1f", "popq %r11", "andl $-32, %r11d", "addq __sfi_base(%rip), %r11", "pushq %r11", "1:", "ret")])
    for name, t in [("before_code", "f-32"), ("entry_page", "__sfi_base-8"), ("tramp_unaligned", "tramp1+1"), ("tramp_beyond", "tramp1+64"),
                    ("tramp_zero", "tramp1-32"), ("data", "data"), ("past_end", "f+0x10000"), ("far_below", "f-0x1000000")]:
        c.add("target_outside_%s" % name, outside, "7", ["call %s" % t] + RET)
        c.add("target_outside_jmp_%s" % name, outside, "7", ["jmp %s" % t])
    c.add("ok_call_import", "accepted", "7", ["call tramp1"] + RET)
    c.add("bundle_cross_mov", "instruction crosses a bundle boundary", "1", [".nops 30", "movl $1, %eax"] + list(RET[0]), bundled=False)
    for k in range(1, 10):
        c.add("bundle_cross_movabs_%d" % k, "instruction crosses a bundle boundary", "1",
              [".nops %d" % (32 - k), "movabsq $0x1122334455667788, %rax"] + list(RET[0]), bundled=False)
    for k in range(1, 11):
        c.add("bundle_cross_vex_%d" % k, "instruction crosses a bundle boundary", "1",
              [".nops %d" % (32 - k), "vpblendvb %ymm3, 0x12345678(%rax,%rcx,8), %ymm1, %ymm0"] + list(RET[0]), bundled=False)


def undecodable(c):
    for b in ["0x06", "0x07", "0x0e", "0x16", "0x1e", "0x27", "0x2f", "0x37", "0x3f", "0x60", "0x61", "0xce", "0xd4, 0x0a",
              "0xd5, 0x0a", "0xd6", "0x9a, 0, 0, 0, 0, 0, 0", "0xea, 0, 0, 0, 0, 0, 0", "0x0f, 0x04", "0x0f, 0x0a", "0x0f, 0x0c",
              "0x0f, 0x24, 0xc0", "0x0f, 0x36", "0xc4, 0xe2, 0x7d, 0xff, 0xc0",
              ",".join(["0x66"] * 15) + ", 0x90", "0xf0, 0x90"]:
        c.add("undecodable_%s" % safe_name(b)[:24], "undecodable instruction", "1", [".byte " + b] + RET)


def build(c, out):
    os.makedirs(out, exist_ok=True)
    src = []
    for i, (name, expect, rule, full, lines, tail, bundled) in enumerate(c.mods):
        s = "m%d" % i
        src.append('\t.section .text.%s,"ax",@progbits' % s)
        src.append("\t.p2align 5")
        src.append("\t.bundle_align_mode %d" % (5 if bundled else 0))
        src.append("%s_f:" % s)
        for sym, off in (("__sfi_base", BASE_SLOT), ("data", DATA_OFF), ("tramp1", TRAMP_BASE + BUNDLE)):
            src.append("\t.set %s_%s, %s_f - 0x%x" % (s, sym, s, CODE_BASE - off) if off < CODE_BASE else
                       "\t.set %s_%s, %s_f + 0x%x" % (s, sym, s, off - CODE_BASE))
        flat = []
        for l in lines:
            flat += ["\t.bundle_lock"] + list(l) + ["\t.bundle_unlock"] if isinstance(l, tuple) else [l]
        body = "\n".join(l if l.endswith(":") or l.startswith("\t") else "\t" + l for l in flat)
        # the module's own symbols: f (its start), __sfi_base, data, tramp1
        body = re.sub(r"(?<![\w.])(f|__sfi_base|data|tramp1)(?![\w.])", lambda mm: "%s_%s" % (s, mm.group(1)), body)
        if tail == "exact":
            # Nops first, so that the body's last instruction ends the last bundle.
            src.append("\t.nops (32 - ((%s_e - %s_b) %% 32)) %% 32" % (s, s))
            src.append("%s_b:" % s)
            src.append(body)
            src.append("%s_e:" % s)
        else:
            src.append(body)
            if tail == "int3":
                src.append("\tint3")
            src.append("\t.p2align 5, 0xcc")
        src.append("\t.bundle_align_mode 0")
    with tempfile.TemporaryDirectory() as tmp:
        s_path, o_path = os.path.join(tmp, "corpus.s"), os.path.join(tmp, "corpus.o")
        with open(s_path, "w") as f:
            f.write("\n".join(src) + "\n")
        r = subprocess.run(["as", "--64", "-o", o_path, s_path], capture_output=True, text=True)
        if r.returncode:
            sys.exit("gen.py: as failed:\n" + r.stderr[:4000])
        data, secs = sficc.read_elf(o_path)
    by_name = {s["name"]: s for s in secs}
    manifest = []
    for i, (name, expect, rule, full, lines, tail, bundled) in enumerate(c.mods):
        if ".rela.text.m%d" % i in by_name:
            sys.exit("gen.py: %s needs a relocation (a symbol outside its section)" % name)
        sec = by_name[".text.m%d" % i]
        code = data[sec["off"]:sec["off"] + sec["size"]]
        code += b"\xcc" * (-len(code) % BUNDLE)
        write(out, name, full, code, ["host_fn"])
        first = lines[0] if isinstance(lines[0], str) else lines[0][0]
        manifest.append((name, expect, rule, first))
    for name, expect, rule, blob in container_cases():
        with open(os.path.join(out, name + ".sfi"), "wb") as f:
            f.write(blob)
        manifest.append((name, expect, rule, "(container)"))
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        for row in manifest:
            f.write("\t".join(row) + "\n")
    return manifest


def module_bytes(full, code, imports, entries=(("f", 0),), relocs=(), data=b"\0" * 4096, bss=0x10000):
    return sficc.module_image(full, code, data, DATA_OFF, bss, list(entries), list(imports), list(relocs))


def write(out, name, full, code, imports):
    with open(os.path.join(out, name + ".sfi"), "wb") as f:
        f.write(module_bytes(full, code, imports))


def container_cases():
    ret = bytes.fromhex("415b4183e3e04c031d") + struct.pack("<i", BASE_SLOT - (CODE_BASE + 13)) + bytes.fromhex("41ffe3")
    code = ret + b"\xcc" * (32 - len(ret))
    good = module_bytes(False, code, ["host_fn"])
    hdr = lambda b, off, v: b[:off] + struct.pack("<I", v) + b[off + 4:]
    H = "bad header"
    cases = [
        ("container_bad_magic", "bad magic", b"KSFIMOD2" + good[8:]),
        ("container_unknown_flags", H, hdr(good, 8, 2)),
        ("container_reserved_nonzero", H, good[:50] + b"\1" + good[51:]),
        ("container_code_size_odd", H, hdr(good, 12, 31)),
        ("container_code_size_huge", H, hdr(good, 12, 1 << 29)),
        ("container_data_overlaps_code", H, hdr(good, 16, CODE_BASE)),
        ("container_data_unaligned", H, hdr(good, 16, DATA_OFF + 8)),
        ("container_data_past_2g", H, hdr(good, 24, 0x80000000)),
        ("container_too_many_imports", H, hdr(good, 32, 5000)),
        ("container_truncated_code", "truncated module", good[:64 + 16]),
        ("container_truncated_header", "truncated module", good[:20]),
        ("container_trailing_bytes", "trailing bytes", good + b"\0"),
        ("container_empty", "truncated module", b""),
        ("container_entry_unaligned", "bad entry", module_bytes(False, code, [], entries=(("f", 4),))),
        ("container_entry_past_code", "bad entry", module_bytes(False, code, [], entries=(("f", 64),))),
        ("container_entry_empty_name", "bad symbol name", module_bytes(False, code, [], entries=(("", 0),))),
        ("container_reloc_unaligned", "bad relocation", module_bytes(False, code, [], relocs=(4,))),
        ("container_reloc_outside_data", "bad relocation", module_bytes(False, code, [], relocs=(4096,))),
        ("container_truncated_relocs", "truncated module", hdr(good, 36, 3)),
        ("container_truncated_entries", "truncated module", hdr(good, 28, 9)),
    ]
    bad_utf8 = good.replace(b"\x07host_fn", b"\x07host\xff\xfe\xfd")
    cases.append(("container_import_bad_utf8", "bad symbol name", bad_utf8))
    cases.append(("container_import_nul", "bad symbol name", good.replace(b"\x07host_fn", b"\x07hos\0_fn")))
    return [(n, e, "8 (container)", b) for n, e, b in cases]


def corpus():
    c = Corpus()
    for g in (stores, loads, implicit_stores, bit_strings, push_pop, indirect, stack, system, vendor, ends, targets, undecodable):
        g(c)
    return c


if __name__ == "__main__":
    m = build(corpus(), sys.argv[1])
    print("gen.py: %d modules (%d to be accepted) in %s" % (len(m), sum(1 for r in m if r[1] == "accepted"), sys.argv[1]))

#!/usr/bin/env python3
"""Keep SFI tool chain: compiler driver (sfi-cc) and module linker (sfi-ld).

sfi-cc compiles C with gcc, then rewrites the generated AT&T assembly so that every store (and, with --full, every load)
goes through %gs with 32-bit addressing, every indirect branch is masked to a
32-byte bundle start inside the domain, and %rsp is re-based after every
explicit change.  It then lays the code out itself (bundle padding, calls at
bundle ends, short/near branch selection) so GNU as needs no bundle mode.
The layout is checked again by the verifier; nothing here is trusted.

See docs/sfi.md for the scheme and the module format.
"""
import itertools
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

BUNDLE = 32
TRAMP_BASE = 0x10000
CODE_BASE = 0x20000
MAGIC = b"KSFIMOD1"
# The runtime writes the domain base B at this domain offset (read-only entry
# page); sequences add it with `addq __sfi_base(%rip), %reg`.
BASE_SLOT = 0xF008
BASE = "__sfi_base(%rip)"
# The runtime's answers to cpuid, rdtsc, rdtscp and xgetbv, at fixed domain offsets in
# the entry page (sfi/verify/src/entries.s; docs/sfi.md, "Runtime entries").
# Each instruction becomes `lea -128(%rsp), %rsp; call ENTRY`: the lea steps
# over the red zone without touching the flags, the entry sets the registers
# the instruction sets and returns with %rsp back where it was.
RUNTIME_ENTRIES = {"cpuid": ("__sfi_cpuid", 0xF020), "rdtsc": ("__sfi_rdtsc", 0xF040), "rdtscp": ("__sfi_rdtscp", 0xF060),
                   "xgetbv": ("__sfi_xgetbv", 0xF1A0)}
# The same instructions written as bytes, as libraries do for assemblers that
# lack a mnemonic (libsodium's and libdeflate's xgetbv): a `.byte` directive
# in code whose values are exactly one of these is that instruction.  Any
# other bytes in code stay refused.
RUNTIME_ENTRY_BYTES = {(0x0f, 0xa2): "cpuid", (0x0f, 0x31): "rdtsc", (0x0f, 0x01, 0xf9): "rdtscp",
                       (0x0f, 0x01, 0xd0): "xgetbv"}
RUNTIME_STEP = "leaq -128(%rsp), %rsp"
# Layout choices, each switchable for measurement (docs/sfi.md, "How the
# layout is chosen").
LOOP_ALIGN = os.environ.get("SFI_LOOP_ALIGN", "1") == "1"   # keep gcc's .p2align (loops, functions)
FREE_PAD = os.environ.get("SFI_FREE_PAD", "1") == "1"       # choose the padding after jmp/ret
ALIGN_ALL_FUNCS = os.environ.get("SFI_ALIGN_ALL_FUNCS") == "1"  # align static functions too
PAD_GROW = os.environ.get("SFI_PAD_GROW", "1") == "1"  # fill bundle ends by longer encodings, not no-ops
JCC_PENALTY = int(os.environ.get("SFI_JCC_PENALTY", "128"))  # layout_dp: cost of a branch hit by the JCC erratum
FUSIBLE = ("cmp", "test", "add", "sub", "and", "inc", "dec")  # macro-fuse with a following jcc
FUSE_PAD = os.environ.get("SFI_FUSE_PAD", "1") == "1"  # layout_dp: padding between a fusible pair splits it too
GROW_BRANCHES = os.environ.get("SFI_GROW_BRANCHES", "1") == "1"  # layout_dp may make short branches near
LAYOUT = os.environ.get("SFI_LAYOUT", "dp")  # dp: layout_dp; greedy: the former layout_greedy
SP_DEFER = os.environ.get("SFI_SP_DEFER", "1") == "1"  # small %rsp steps checked by a later access (defer_sp_checks)
SP_CHEAP = os.environ.get("SFI_SP_CHEAP", "1") == "1"  # an unchecked small step checked at once where the flags are dead
# gas pseudo-prefixes that lengthen an instruction without changing it: a redundant
# REX (+1), an 8-bit displacement 0 where there was none (+1), a 32-bit one (+3/+4).
# A redundant %ds override (+1) goes only on memory operands without a segment
# override (the flat model ignores it; see growable).
GROW = tuple(os.environ.get("SFI_GROW", "{rex} {disp8} {disp32} ds").split())
GROW_CHOICES = [c for n in (1, 2, 3) for c in itertools.combinations(GROW, n) if not ("{disp8}" in c and "{disp32}" in c)]
FLAG_FULL = 1

R32 = {"rax": "eax", "rbx": "ebx", "rcx": "ecx", "rdx": "edx", "rsi": "esi",
       "rdi": "edi", "rbp": "ebp", "rsp": "esp"}
for _i in range(8, 16):
    R32["r%d" % _i] = "r%dd" % _i
REGS32 = set(R32.values())
SP_NAMES = {"%rsp", "%esp", "%sp", "%spl"}
# After any other write, %rsp is put back into the stack area [B + 0xF000_0000, B + 4 GiB).
SP_FIX = ["orl $0xf0000000, %esp", "addq %s, %%rsp" % BASE]
STACK_ALIGN_MAX = 1 << 16  # and $-N, %rsp needs no fix-up for N up to this
SP_STEP_MAX = SP_SLACK = 1 << 16  # verifier rule 5: a small step of %rsp checked by a later access
# Instructions that write every status flag and read none, and instructions
# that leave the flags alone (defer_sp_checks' cheaper check).
FLAGS_WRITE_RE = re.compile(r"^(?:cmp|test|add|sub|and|or|xor)[bwlq]?$")
FLAGS_KEEP_RE = re.compile(r"^(?:mov[bwlq]?|movabsq?|movz[bwlq]{2}|movs[bwlq]{2}|movslq|lea[wlq]?|push[wlq]?|pop[wlq]?)$")
SP_STEP_RE = re.compile(r"^(?:add|sub)q? \$(\d+|0x[0-9a-fA-F]+), %rsp$")
# Instructions whose memory operand D(%rsp) is read or written unconditionally
# (not lea, nop, prefetch, cmov, masked moves): an access there checks %rsp.
SP_CHECK_MNEMS = ("mov", "add", "sub", "and", "or", "xor", "cmp", "test", "inc", "dec", "adc", "sbb", "fld", "fst",
                  "fild", "fist", "cvt", "ucomis", "comis", "vmov")
SP_CHECK_OP_RE = re.compile(r"(?:^|, )(\d+|0x[0-9a-fA-F]+)?\(%rsp\)(?:,|$)")

CC_CODES = {"o": 0, "no": 1, "b": 2, "c": 2, "nae": 2, "ae": 3, "nb": 3, "nc": 3,
            "e": 4, "z": 4, "ne": 5, "nz": 5, "be": 6, "na": 6, "a": 7, "nbe": 7,
            "s": 8, "ns": 9, "p": 10, "pe": 10, "np": 11, "po": 11, "l": 12,
            "nge": 12, "ge": 13, "nl": 13, "le": 14, "ng": 14, "g": 15, "nle": 15}

# The register of the return sequence (pop, mask, base add, push, ret): in
# code gcc compiled, %rcx, which is call-clobbered and never holds a return
# value (%rax, %rdx, %xmm0-1, %st0-1), so it is dead at every ret; without a
# REX prefix the sequence is 13 bytes instead of %r11's 16, which leaves
# more of its bundle to the code around it.  Hand-written assembly (.s)
# keeps %r11, the register such code already expects a return to clobber.
# SFI_RET_REG chooses another for measurement.
RET_REG = os.environ.get("SFI_RET_REG", "rcx")


def return_sequence(reg):
    return ["popq %%%s" % reg, "andl $-32, %%%s" % R32[reg], "addq %s, %%%s" % (BASE, reg), "pushq %%%s" % reg, "ret"]


# -fno-ipa-ra: returns clobber %rcx (or %r11) and indirect calls through
# memory %r11, so callers must not assume a callee leaves them alone.
# gcc's inline memset/memcpy: an unrolled loop of moves (four per iteration)
# rather than `rep stos`/`rep movs`, which the verifier refuses; `loop`, one move
# per iteration, made a cleared 104-byte struct 65 instructions (libyaml's events).
STRINGOP = os.environ.get("SFI_STRINGOP", "unrolled_loop")
GCC_FLAGS = (["-ffixed-r14"] if os.environ.get("SFI_FIXED_R14") else []) + ["-fpie", "-fno-ipa-ra", "-fno-stack-protector",
             "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
             "-fno-exceptions", "-mstringop-strategy=" + STRINGOP, "-fcf-protection=none",
             "-fno-jump-tables" if os.environ.get("SFI_NO_JUMP_TABLES") else "-fjump-tables",
             "-mno-tls-direct-seg-refs", "-fno-builtin-setjmp"]
if os.environ.get("SFI_CASE_THRESHOLD"):  # experiment: jump tables only for switches with at least this many cases
    GCC_FLAGS.append("--param=case-values-threshold=%d" % int(os.environ["SFI_CASE_THRESHOLD"]))

# Directives that never emit bytes into .text.
ZERO_SIZE_DIRECTIVES = {".globl", ".global", ".local", ".type", ".size", ".hidden",
                        ".weak", ".file", ".loc", ".ident", ".protected", ".internal",
                        ".cfi_startproc", ".cfi_endproc", ".set", ".equ", ".symver",
                        ".weakref", ".comm", ".lcomm"}

PREFIXES = {"lock", "rep", "repz", "repe", "repnz", "repne", "notrack", "bnd", "data16", "ds", "cs"}
STRING_OPS = re.compile(r"^(movs|stos|lods|scas|cmps|ins|outs)[bwlq]?$")

# Instructions whose last (destination) memory operand is only read.
def _last_operand_read_only(m):
    if m.startswith("cmp") and not m.startswith("cmpxchg") and not m.startswith("cmps"):
        return True
    if m.startswith(("test", "ucomis", "comis", "vucomis", "vcomis", "ptest", "vptest", "vtestp")):
        return True
    return m in ("bt", "btw", "btl", "btq")

_SINGLE_READ = re.compile(r"^(push|mul|imul|div|idiv|fld|fild|fbld|fadd|fsub|fmul|fdiv|fcom|ficom|fiadd|fisub|fimul|fidiv|fucom|fldcw|fldenv|frstor|ldmxcsr|vldmxcsr|prefetch|clflush|nop|jmp|call)")


class SfiError(Exception):
    pass


class SfiForbidden(SfiError):
    """An instruction the verifier refuses, found while rewriting; `located`
    tells whether the message names a C source line (from gcc's .loc)."""
    def __init__(self, msg, located):
        SfiError.__init__(self, msg)
        self.located = located


# Instructions the verifier refuses (docs/sfi.md, "Verifier rules", rule 2),
# by mnemonic (AT&T, with or without an operand-size suffix), so that the
# build stops at the source line instead of the module failing at load time.
# The verifier, which sfi-cc also runs on every module it links, stays the
# authority: this list only gives the earlier and clearer message.
_FORBIDDEN = {
    "system call or interrupt": "syscall sysenter sysexit sysret int into int1 icebp",
    "instruction set not allowed (XSAVE, RDPID, PKU, MONITOR, RTM...)":
        "rdpid xsetbv xsave xsave64 xsaveopt xsaveopt64 xsavec xsavec64 xsaves xsaves64 "
        "xrstor xrstor64 xrstors xrstors64 rdpkru wrpkru monitor mwait monitorx mwaitx umonitor umwait tpause "
        "serialize rdpru clzero xabort xend xtest xbegin emms femms vmcall vmmcall vmfunc getsec encls enclu "
        "ptwrite incsspd incsspq rdsspd rdsspq saveprevssp rstorssp wrssd wrssq setssbsy clrssbsy "
        "uiret testui clui stui senduipi hreset",
    "segment instruction": "rdfsbase rdgsbase wrfsbase wrgsbase lds les lfs lgs lss swapgs lar lsl verr verw arpl",
    "privileged instruction": "hlt cli sti in ins insb insw insl out outs outsb outsw outsl lgdt lidt lldt ltr sgdt sidt "
                              "sldt str smsw lmsw clts invd wbinvd wbnoinvd invlpg invlpga invpcid rdmsr wrmsr rdpmc "
                              "iret iretw iretl iretq rsm sysexitq sysretq",
    "flags instruction (pushf/popf/std)": "pushf pushfw pushfl pushfq popf popfw popfl popfq std",
    "control-state instruction (MXCSR/x87 control word)": "ldmxcsr vldmxcsr fldcw fldenv fldenvs fldenvl frstor frstors "
                                                        "frstorl fxrstor fxrstor64",
    "frame instruction": "enter enterq enterw enterl",
    "far branch": "ljmp ljmpw ljmpl ljmpq lcall lcallw lcalll lcallq lret lretw lretl lretq retf",
}
FORBIDDEN = {m: why for why, ms in _FORBIDDEN.items() for m in ms.split()}
# Mnemonics that differ from an allowed one only by a size suffix are listed
# whole; these take any suffix.
_FORBIDDEN_SUFFIXED = {m + sfx: FORBIDDEN[m] for m in ("in", "out", "lar", "lsl", "str", "smsw", "int") for sfx in "bwlq"}
FORBIDDEN_REGS = re.compile(r"%(?:[c-gs]s|cr\d+|dr\d+|tr\d+|mm\d|zmm\d+|k[0-7])$")


def split_operands(s):
    ops, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return ops


COND_RE = re.compile(r"^\.(?:ifc|ifnc|else|endif)\b")
MEM_RE = re.compile(r"^(?:%(?P<seg>[a-z]s):)?(?P<disp>[^(]*)\((?P<inner>[^)]*)\)$")


def is_memory(op):
    return bool(op) and not op.startswith(("$", "%", "*")) and ("(" in op or ABS_RE.match(op) is not None)


# An operand with neither register, immediate nor parentheses is an absolute address.
ABS_RE = re.compile(r"^(?:%[a-z]s:)?[-\w.$+]+$")


def sandbox_mem(op):
    """Rewrite an AT&T memory operand so it can only reach the domain."""
    if "(" not in op:
        if op.startswith("%"):
            raise SfiError("segment override not allowed: %s" % op)
        return "%gs:" + op  # absolute: the caller adds addr32
    m = MEM_RE.match(op)
    if not m:
        raise SfiError("cannot parse memory operand %r" % op)
    seg, disp, inner = m.group("seg"), m.group("disp"), m.group("inner")
    parts = [p.strip() for p in inner.split(",")]
    base = parts[0].lstrip("%") if parts[0] else ""
    index = parts[1].lstrip("%") if len(parts) > 1 and parts[1] else ""
    scale = parts[2] if len(parts) > 2 else ""
    if seg == "gs" and (not base or base in REGS32) and (not index or index in REGS32):
        return op  # already sandboxed (hand-written)
    if seg:
        raise SfiError("segment override %%%s not allowed in fault-domain code: %s" % (seg, op))
    if base == "rip":
        return op  # static target, checked by the verifier
    if base == "rsp" and not index:
        return op  # %rsp stays in the domain; guard zones cover disp32
    def r32(r):
        if r in R32:
            return R32[r]
        raise SfiError("unsupported address register %%%s in %s" % (r, op))
    inner32 = ("%" + r32(base)) if base else ""
    if index:
        inner32 += ",%" + r32(index) + ("," + scale if scale else "")
    return "%%gs:%s(%s)" % (disp, inner32)


class Item:
    __slots__ = ("kind", "lines", "lens", "end_align", "target", "cc", "near", "p2", "pmax", "name", "align", "grow", "exp", "grow_near",
                 "refuse")

    def __init__(self, kind, lines=None, end_align=False):
        self.kind = kind          # insn | group | branch | label | p2align | raw
        self.lines = lines or []
        self.lens = []
        self.end_align = end_align
        self.near = False
        self.align = False
        self.grow = (0, {})  # plain length, and the bytes each pseudo-prefix of GROW would add (probed)
        self.exp = ""       # the pseudo-prefixes chosen by the layout
        self.grow_near = False  # a branch the layout made near although short would reach
        self.refuse = set()     # pseudo-prefixes of GROW this instruction must not take (VEX: {rex}; refused by gas)


def strip_comment(line):
    out, in_str = "", False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_str = not in_str
        if ch == "#" and not in_str:
            break
        out += ch
    return out


class Rewriter:
    def __init__(self, full):
        self.full = full
        self.out = []            # list of str or Item (Items are in .text)
        self.text_items = []
        self.section = ".text"
        self.prev_section = None
        self.func_syms = set()
        self.globals = set()
        self.text_labels = set()
        self.pending_prefix = ""
        self.got = set()
        self.files = {}          # .file number -> name (gcc -g)
        self.loc = None          # (file number, line) of the last .loc
        self.asm_line = 0        # line of the assembly being read
        self.weak_undef = set()  # symbols declared .weak and not defined in this file (prescan)
        self.cond = []           # open .ifc/.ifnc: is each branch assembled
        self.ret_reg = "r11"     # the return sequence's register (return_sequence)

    # -- parsing -------------------------------------------------------
    def in_text(self):
        return self.section == ".text"

    def set_section(self, line, name, flags):
        self.prev_section = self.section
        if name == ".text" or name.startswith(".text.") or "x" in flags:
            self.section = ".text"
            self.out.append("\t.text")
        else:
            self.section = name
            self.out.append(line)

    def feed(self, src):
        for self.asm_line, raw in enumerate(src.splitlines(), 1):
            line = strip_comment(raw).strip()
            if not line:
                continue
            if COND_RE.match(line):
                # Conditional assembly (libdeflate's cpuid: `.ifnc %ebx, %1;
                # mov %ebx, %1; .endif`): evaluated here, so that only the
                # statements gas would assemble are rewritten.
                if '"' in line or "'" in line:
                    raise SfiError("quoted strings in a conditional are not supported: %s" % raw.strip())
                for st in line.split(";"):
                    st = st.strip()
                    if st and not self.conditional(st) and self.active():
                        self.statement(st, st)
                continue
            if not self.active():
                continue
            if line.startswith(".") and not re.match(r"^[.\w$]+:", line):
                self.directive(raw.strip(), line)
                continue
            stmts = [line] if line.startswith(".") else [s.strip() for s in line.split(";")]
            for st in stmts:
                self.statement(st, st)
        if self.cond:
            raise SfiError(".ifc/.ifnc without .endif")

    def statement(self, raw, st):
        while True:
            m = re.match(r"^([.\w$@]+):\s*(.*)$", st)
            if not m:
                break
            self.label(m.group(1))
            st = m.group(2)
        if st:
            if st.startswith("."):
                self.directive(raw, st)
            else:
                self.instruction(st)

    def active(self):
        return all(self.cond)

    def conditional(self, st):
        """Handles `.ifc`/`.ifnc a, b`, `.else`, `.endif`; False for any other statement."""
        word = st.split()[0]
        rest = st[len(word):].strip()
        if word in (".ifc", ".ifnc"):
            ops = [o.strip() for o in rest.split(",")]
            if len(ops) != 2:
                raise SfiError("%s needs two strings: %s" % (word, st))
            self.cond.append((ops[0] == ops[1]) == (word == ".ifc"))
            return True
        if word == ".else":
            if not self.cond:
                raise SfiError(".else without .ifc/.ifnc")
            self.cond[-1] = not self.cond[-1]
            return True
        if word == ".endif":
            if not self.cond:
                raise SfiError(".endif without .ifc/.ifnc")
            self.cond.pop()
            return True
        return False

    def directive(self, raw, line):
        word = line.split()[0]
        rest = line[len(word):].strip()
        if word == ".section" or word == ".pushsection":
            if word == ".pushsection":
                raise SfiError(".pushsection is not supported")
            args = split_operands(rest)
            flags = args[1].strip('"') if len(args) > 1 else ""
            self.set_section(raw, args[0], flags)
            return
        if word in (".text", ".data", ".bss"):
            self.set_section(raw, word, "")
            return
        if word == ".previous":
            if self.prev_section is None:
                raise SfiError(".previous without a previous section")
            cur, self.section = self.section, self.prev_section
            self.prev_section = cur
            self.out.append("\t.text" if self.section == ".text" else "\t.section " + self.section)
            return
        if word.startswith(".cfi_"):
            return
        if word == ".loc":
            a = rest.split()
            if len(a) >= 2 and a[0].isdigit() and a[1].isdigit():
                self.loc = (int(a[0]), int(a[1]))
        if word == ".file":
            m = re.match(r'^(\d+)\s+(.*)$', rest)
            names = re.findall(r'"((?:[^"\\]|\\.)*)"', rest)
            if m and names:
                self.files[int(m.group(1))] = names[-1] if len(names) == 1 or names[-1].startswith("/") else names[0] + "/" + names[-1]
        if word == ".type" and "function" in rest:
            self.func_syms.add(split_operands(rest)[0])
        if word in (".globl", ".global", ".weak"):
            self.globals.update(split_operands(rest))
        if not self.in_text():
            self.out.append(raw)
            return
        if word in (".p2align", ".balign", ".align"):
            args = [a for a in split_operands(rest)]
            n = int(args[0], 0)
            p2 = n if word == ".p2align" else (n.bit_length() - 1)
            pmax = int(args[2], 0) if len(args) > 2 and args[2] else (1 << p2)
            it = Item("p2align")
            it.p2, it.pmax = min(p2, 5), pmax
            self.add(it)
            return
        if word == ".byte":
            try:
                vals = tuple(int(v, 0) for v in split_operands(rest))
            except ValueError:
                vals = None
            if vals in RUNTIME_ENTRY_BYTES:
                self.instruction(RUNTIME_ENTRY_BYTES[vals])
                return
        if word in ZERO_SIZE_DIRECTIVES:
            it = Item("raw", [raw])
            self.add(it)
            return
        raise SfiError("directive %s is not allowed in code: %s" % (word, raw))

    def add(self, item):
        self.out.append(item)
        self.text_items.append(item)

    def label(self, name):
        if not self.in_text():
            self.out.append(name + ":")
            return
        it = Item("label", [name + ":"])
        it.name = name
        self.text_labels.add(name)
        self.add(it)

    def mem(self, op, write):
        if write or self.full:
            return sandbox_mem(op)
        m = MEM_RE.match(op)
        if m and m.group("seg"):
            raise SfiError("segment override not allowed in fault-domain code: %s" % op)
        return op

    def where(self):
        if self.loc and self.loc[0] in self.files:
            return "%s:%d" % (self.files[self.loc[0]], self.loc[1]), True
        return "assembly line %d" % self.asm_line, False

    def forbid(self, mnem, ops, st):
        why = FORBIDDEN.get(mnem) or _FORBIDDEN_SUFFIXED.get(mnem)
        if why is None:
            bad = [o for o in ops if FORBIDDEN_REGS.match(o.lstrip("*"))]
            if not bad:
                return
            r = bad[0].lstrip("*")
            why = ("segment instruction" if r[1:3] in ("cs", "ds", "es", "fs", "gs", "ss") else
                   "privileged instruction" if r[1:3] in ("cr", "dr", "tr") else "instruction set not allowed (MMX, AVX-512)")
        loc, located = self.where()
        raise SfiForbidden("%s: `%s` is refused by the SFI verifier (%s); fault-domain code cannot use it" % (loc, st, why), located)

    def instruction(self, st):
        parts = st.split(None, 1)
        mnem = parts[0]
        if mnem in PREFIXES and len(parts) == 1:
            self.pending_prefix += mnem + " "
            return
        if mnem in PREFIXES:
            sub = parts[1].split(None, 1)
            self.pending_prefix += mnem + " "
            mnem, parts = sub[0], sub
        prefix, self.pending_prefix = self.pending_prefix, ""
        ops = split_operands(parts[1]) if len(parts) > 1 else []
        if mnem in RUNTIME_ENTRIES and not ops and not prefix:
            self.add(Item("group", [RUNTIME_STEP, "call " + RUNTIME_ENTRIES[mnem][0]], end_align=True))
            return
        self.forbid(mnem, ops, st)
        # Everything is linked statically into the module: a GOT load of an
        # address is just that address (ld would otherwise make it absolute).
        # Not for a weak symbol that this file does not define: if no object
        # defines it, its address must be 0 (NULL), as natively, and a
        # RIP-relative lea would give the domain's base; its slot holds 0.
        if (mnem in ("movq", "mov") and len(ops) == 2 and ops[0].endswith("@GOTPCREL(%rip)") and re.match(r"^%r(?:[a-d]x|[sd]i|[sb]p|\d+)$", ops[1])
                and ops[0][:-len("@GOTPCREL(%rip)")] not in self.weak_undef):
            mnem, ops = "leaq", [ops[0].replace("@GOTPCREL", ""), ops[1]]
        # Any other use of a GOT slot (a compare with a function's address, a
        # load into a vector register) reads this object's own slot in data,
        # which holds the absolute address and so gets a relocation entry.
        for k, op in enumerate(ops):
            m = re.match(r"^([\w.$]+)@GOTPCREL\(%rip\)$", op)
            if m:
                self.got.add(m.group(1))
                ops[k] = ".Lsfi_got.%s(%%rip)" % m.group(1)
        if mnem in ("ret", "retq", "retl") or (mnem == "ret" and prefix):
            if ops:
                raise SfiError("ret with immediate is not supported")
            # The masked address is pushed back and returned to with a real
            # ret, so that the return-stack predictor keeps working.
            self.add(Item("group", return_sequence(self.ret_reg)))
            return
        m = re.match(r"^movs([bwlq])$", mnem)
        if m and not ops and not prefix:
            # One string move without `rep`, which gcc's combine pass forms
            # from a byte-copy loop (`*d++ = *s++`: libdeflate) under any
            # string strategy: the same move through %rax, saved below the
            # red zone (where nothing the code keeps can be).  Nothing here
            # writes the flags, and the direction flag is clear (std is
            # refused; the ABI clears it).
            w = m.group(1)
            n, reg, load = {"b": (1, "%al", "movzbl"), "w": (2, "%ax", "movzwl"), "l": (4, "%eax", "movl"), "q": (8, "%rax", "movq")}[w]
            for st2 in ["movq %rax, -136(%rsp)", "%s (%%rsi), %s" % (load, "%rax" if w == "q" else "%eax"),
                        "mov%s %s, (%%rdi)" % (w, reg), "movq -136(%rsp), %rax", "leaq %d(%%rsi), %%rsi" % n, "leaq %d(%%rdi), %%rdi" % n]:
                self.instruction(st2)
            return
        if STRING_OPS.match(mnem) and not ops:
            raise SfiError("string instruction %s is not allowed (compile with -mstringop-strategy=unrolled_loop)" % st)
        if mnem in ("leave", "leaveq"):
            self.add(Item("group", ["movq %rbp, %rsp"] + SP_FIX))
            self.add(Item("insn", ["popq %rbp"]))
            return
        if mnem in ("call", "callq", "jmp", "jmpq") or (mnem.startswith("j") and mnem[1:] in CC_CODES):
            self.branch(mnem, ops, prefix)
            return
        if mnem in ("jecxz", "jrcxz", "loop", "loope", "loopne", "xbegin"):
            raise SfiError("%s is not supported" % mnem)
        # Operands: sandbox memory operands.
        new_ops = []
        single_read = bool(_SINGLE_READ.match(mnem))
        for i, op in enumerate(ops):
            if is_memory(op):
                if mnem.startswith(("lea", "nop")):
                    write = False
                    new_ops.append(op)
                    continue
                last = i == len(ops) - 1
                if len(ops) == 1:
                    write = not single_read
                elif mnem.startswith(("xchg", "xadd", "cmpxchg")):
                    write = True
                else:
                    write = last and not _last_operand_read_only(mnem)
                new_ops.append(self.mem(op, write))
            elif op.startswith("%") and ":" in op:
                raise SfiError("segment register use not allowed: %s" % st)
            else:
                new_ops.append(op)
        if any(o.startswith("%gs:") and "(" not in o for o in new_ops):
            prefix += "addr32 "
        text = prefix + mnem + (" " + ", ".join(new_ops) if new_ops else "")
        dest = ops[-1] if ops else ""
        writes_sp = dest in SP_NAMES and not mnem.startswith(("push", "pop", "cmp", "test", "bt"))
        if mnem.startswith("pop") and dest in SP_NAMES:
            writes_sp = True
        if writes_sp and mnem.startswith("and") and re.match(r"^\$-\d+$", ops[0]) and dest == "%rsp" and int(ops[0][1:]) >= -STACK_ALIGN_MAX:
            writes_sp = False  # clearing low bits keeps %rsp in the stack area
        if writes_sp:
            self.add(Item("group", [text] + SP_FIX))
        else:
            self.add(Item("insn", [text]))

    def branch(self, mnem, ops, prefix):
        if len(ops) != 1:
            raise SfiError("bad branch: %s %s" % (mnem, ops))
        op = ops[0]
        is_call = mnem.startswith("call")
        if op.startswith("*"):
            target = op[1:]
            pre = []
            if target.startswith("%"):
                reg = target[1:]
                if reg not in R32 or reg == "rsp":
                    raise SfiError("bad indirect branch register %s" % target)
            else:
                pre = ["movq %s, %%r11" % self.mem(target, False)]
                reg = "r11"
            for p in pre:
                self.add(Item("insn", [p]))
            seq = ["andl $-32, %%%s" % R32[reg], "addq %s, %%%s" % (BASE, reg),
                   ("call *%%%s" if is_call else "jmp *%%%s") % reg]
            self.add(Item("group", seq, end_align=is_call))
            return
        target = op.replace("@PLT", "")
        if target in self.weak_undef:
            # A direct call (or tail call) of a weak symbol that may stay
            # undefined goes through its slot, masked like any indirect call:
            # a NULL slot sends it to the domain's unmapped first page, where
            # it faults as a call of NULL does natively; it is never an import.
            if not (is_call or mnem.startswith("jmp")):
                raise SfiError("conditional branch to weak symbol %s is not supported" % target)
            self.got.add(target)
            self.branch(mnem, ["*.Lsfi_got.%s(%%rip)" % target], prefix)
            return
        if is_call:
            self.add(Item("group", ["call " + target], end_align=True))
            return
        it = Item("branch")
        it.target = target
        it.cc = None if mnem.startswith("jmp") else CC_CODES[mnem[1:]]
        self.add(it)

    def defer_sp_checks(self):
        """Verifier rule 5: `add`/`sub $imm, %rsp` (imm <= SP_STEP_MAX) needs no
        re-sandboxing sequence when an access at %rsp + [0, SP_SLACK] (or a
        push, pop or call) comes before any branch or other write of %rsp;
        the access itself faults unless %rsp is back near the stack.  Drops
        the sequence where that holds (most prologues and epilogues)."""
        items = self.text_items
        for k, it in enumerate(items):
            if it.kind != "group" or len(it.lines) != 3 or it.lines[1:] != SP_FIX:
                continue
            m = SP_STEP_RE.match(it.lines[0])
            if not m or int(m.group(1), 0) > SP_STEP_MAX:
                continue
            for nxt in items[k + 1:k + 24]:
                if nxt.kind in ("label", "p2align"):
                    continue  # a branch here arrives with a checked %rsp
                if nxt.kind == "insn" and self.sp_checks(nxt.lines[0]):
                    it.kind, it.lines = "insn", it.lines[:1]
                    break
                if nxt.kind == "group" and nxt.lines[0] == RUNTIME_STEP:
                    break  # a second step (the runtime call's) may not follow an unchecked one
                if nxt.kind == "group" and (nxt.lines[-1].startswith("call") or nxt.lines[-1] == "ret"):
                    it.kind, it.lines = "insn", it.lines[:1]  # a call, or a return (its pop)
                    break
                if nxt.kind != "insn" or re.search(r"%(?:rsp|esp|sp|spl)\b(?!\))", nxt.lines[0]):
                    break  # a branch, a sequence, or something else that uses %rsp
            if it.kind == "group" and SP_CHEAP and self.flags_dead(items, k + 1):
                # No access checks the step before a branch (a prologue that
                # tests its arguments first): check it at once.  `sub $8` is
                # a push (the slot is the new frame's, its contents undefined);
                # any other step is checked by a `test` of its new top.  Both
                # leave the flags other than the step would, so only where
                # nothing reads them before they are written again.
                if it.lines[0] == "subq $8, %rsp":
                    it.kind, it.lines = "insn", ["pushq %rax"]
                else:
                    it.kind, it.lines = "insn", [it.lines[0]]
                    check = Item("insn", ["testl %esp, (%rsp)"])
                    items.insert(k + 1, check)
                    at = next(i for i, x in enumerate(self.out) if x is it)
                    self.out.insert(at + 1, check)

    def flags_dead(self, items, k):
        """Whether the flags as they are before items[k] are written before
        anything can read them, on the straight line from k: an instruction
        that writes every status flag and reads none, or a call (the ABI
        keeps no flags across one; the runtime entries' calls, which keep
        them, do not count), before any label, branch or instruction not
        known to leave the flags alone."""
        for nxt in items[k:k + 24]:
            if nxt.kind == "group":
                # A call, but not of a runtime entry: those keep the flags.
                return nxt.lines[-1].startswith("call") and nxt.lines[0] != RUNTIME_STEP
            if nxt.kind != "insn":
                return False
            w = nxt.lines[0].split(None, 1)[0]
            if FLAGS_WRITE_RE.match(w):
                return True
            if not FLAGS_KEEP_RE.match(w):
                return False
        return False

    @staticmethod
    def sp_checks(line):
        w = line.split(None, 1)
        if w[0].startswith(("push", "pop")):
            return True
        m = SP_CHECK_OP_RE.search(w[1]) if len(w) > 1 else None
        return bool(m) and w[0].startswith(SP_CHECK_MNEMS) and int(m.group(1) or "0", 0) <= SP_SLACK

    # -- layout --------------------------------------------------------
    @staticmethod
    def branch_len(it):
        if not (it.near or it.grow_near):
            return 2
        return 5 if it.cc is None else 6

    def item_len(self, it):
        return self.branch_len(it) if it.kind == "branch" else sum(it.lens)

    def barrier(self, it):
        """Execution never falls through past this item."""
        if it.kind == "branch":
            return it.cc is None
        if it.kind in ("insn", "group") and it.lines:
            last = it.lines[-1].split()
            return bool(last) and (last[0] in ("ret", "ud2", "jmp", "jmpq"))
        return False

    def free_pad(self, k, pos):
        """Padding placed right after a barrier is never executed: choose it so
        that the straight-line code that follows (up to its first call or
        aligned label) needs the fewest executed padding bytes."""
        region = []
        for it in self.text_items[k:k + 48]:
            if it.kind == "label":
                if it.align:
                    region.append((0, 2, 0))
                    break
                continue
            if it.kind == "p2align":
                if LOOP_ALIGN:
                    region.append((0, 3, it.p2 | it.pmax << 8))
                continue
            if it.kind not in ("insn", "group", "branch"):
                continue
            region.append((self.item_len(it), 1 if it.end_align else 0, 0))
            if it.end_align or self.barrier(it):
                break
        best, best_cost = 0, None
        for f in range(BUNDLE):
            p, cost = pos + f, 0
            for n, kind, a in region:
                if kind == 1:
                    pad = -(p + n) % BUNDLE
                elif kind == 2:
                    pad = -p % BUNDLE
                elif kind == 3:
                    pad = -p % (1 << (a & 255))
                    if pad > a >> 8:
                        pad = 0
                elif p % BUNDLE + n > BUNDLE:
                    pad = -p % BUNDLE
                else:
                    pad = 0
                cost += pad
                p += pad + n
            if best_cost is None or cost < best_cost:
                best, best_cost = f, cost
                if cost == 0:
                    break
        return best

    def layout(self):
        """Assign padding; returns per-item padding list and the end position."""
        for it in self.text_items:
            if it.kind == "branch" and it.target not in self.text_labels:
                it.near = True
        if LAYOUT == "dp":
            return self.layout_dp()
        return self.layout_greedy()

    def options(self, it):
        """The encodings the layout may choose for an item: [(length, added
        bytes, pseudo-prefixes or near)], the plain one first."""
        if it.kind == "branch":
            near = 5 if it.cc is None else 6
            if it.near or not PAD_GROW or not GROW_BRANCHES:
                return [(near if it.near else 2, 0, False)]
            return [(2, 0, False), (near, near - 2, True)]
        if it.kind == "insn" and PAD_GROW and it.grow[1]:
            plain, adds = it.grow
            opts, seen = [(plain, 0, "")], {0}
            for choice in GROW_CHOICES:
                add = sum(adds.get(e, 0) for e in choice)
                if all(adds.get(e, 0) for e in choice) and add not in seen:
                    seen.add(add)
                    opts.append((plain + add, add, " ".join(choice)))
            return opts
        return [(sum(it.lens), 0, "")]

    @staticmethod
    def pad_before(it, s0, n):
        """The padding an item of length n needs at bundle offset s0 (p2align
        is at most 32, so the offset in the bundle decides it too)."""
        if it.kind == "label":
            return -s0 % BUNDLE
        if it.kind == "p2align":
            pad = -s0 % (1 << it.p2)
            return pad if pad <= it.pmax else 0
        if it.end_align:
            return -(s0 + n) % BUNDLE
        return -s0 % BUNDLE if s0 + n > BUNDLE else 0

    def layout_dp(self):
        """The layout by dynamic programming over the position in the bundle:
        for each item the choice of encoding (plain, longer by pseudo-prefixes,
        a near branch for a short one) and, right after a barrier, of padding
        that never executes, minimising the no-op instructions that execute
        (then the code size).  Padding goes where an item would cross a
        bundle boundary, before a call so that it ends at a bundle end, before
        aligned labels and for gcc's loop alignment, as in the greedy layout;
        the choices decide how much of it there is."""
        INF = float("inf")
        items = self.text_items
        W = 64  # cost of one executed no-op instruction, in bytes of code

        def nops(pos, pad):
            n = 0
            while pad:
                chunk = min(pad, BUNDLE - pos % BUNDLE)
                n += -(-chunk // 11)
                pos += chunk
                pad -= chunk
            return n

        while True:
            for it in items:
                it.exp = ""
                if it.kind == "insn" and it.grow[1]:
                    it.lens = [it.grow[0]]
                if it.kind == "branch":
                    it.p2, it.grow_near = None, False
            cost = [0] + [INF] * (BUNDLE - 1)
            back = []  # per item: (options, [state before (5 bits) | option << 5 per state after], free-pad map or None)
            after_barrier = prev_fusible = False
            for it in items:
                free = None
                if after_barrier and FREE_PAD and it.kind in ("label", "insn", "group", "branch", "p2align"):
                    # Padding here never executes: any amount, costing its bytes.
                    nc, free = [INF] * BUNDLE, [0] * BUNDLE
                    for s0 in range(BUNDLE):
                        if cost[s0] < INF:
                            for f in range(BUNDLE):
                                t = (s0 + f) % BUNDLE
                                if cost[s0] + f < nc[t]:
                                    nc[t], free[t] = cost[s0] + f, s0
                    cost = nc
                    after_barrier = False
                if it.kind in ("raw",) or (it.kind == "label" and not it.align) or (it.kind == "p2align" and not LOOP_ALIGN):
                    back.append((None, None, free))
                    continue
                opts = [(0, 0, "")] if it.kind in ("label", "p2align") else self.options(it)
                if opts[-1][0] > BUNDLE:
                    raise SfiError("sequence longer than a bundle: %s" % it.lines)
                fusible = it.kind == "branch" and it.cc is not None and prev_fusible
                # a return or a masked indirect jump (calls must end at a bundle end)
                jump_group = it.kind == "group" and not it.end_align and it.lines[-1].split()[0] in ("ret", "jmp")
                nc, bp = [INF] * BUNDLE, [0] * BUNDLE
                for s0 in range(BUNDLE):
                    c0 = cost[s0]
                    if c0 == INF:
                        continue
                    for oi, (n, add, _) in enumerate(opts):
                        pad = self.pad_before(it, s0, n)
                        c = c0 + W * nops(s0, pad) + pad + add
                        t = (s0 + pad + n) % BUNDLE
                        # Skylake's JCC erratum: a branch that ends at a 32-byte boundary, or a
                        # compare-and-branch pair split by one, is not cached as micro-ops.
                        # (Padding between the pair splits it as surely as a boundary does.)
                        split = fusible and (s0 == 0 or (FUSE_PAD and pad > 0))
                        if (it.kind == "branch" and (t == 0 or split)) or (jump_group and t == 0):
                            c += JCC_PENALTY
                        if c < nc[t]:
                            nc[t], bp[t] = c, s0 | oi << 5
                cost = nc
                back.append((opts, bp, free))
                if it.kind in ("insn", "group", "branch"):
                    after_barrier = self.barrier(it)
                prev_fusible = it.kind == "insn" and it.lines[0].startswith(FUSIBLE)
            # Back from the cheapest end state: for each item its option and the
            # state before its own padding (after any free padding).
            s = min(range(BUNDLE), key=lambda t: cost[t])
            chosen, pre = [0] * len(items), [0] * len(items)
            for k in range(len(items) - 1, -1, -1):
                opts, bp, free = back[k]
                if opts is not None:
                    chosen[k] = bp[s] >> 5
                    s = bp[s] & 31
                pre[k] = s
                if free is not None:
                    s = free[s]
            pos, addr, pads = 0, {}, []
            for k, it in enumerate(items):
                opts, bp, free = back[k]
                pad = (pre[k] - pos) % BUNDLE if free is not None else 0  # free padding first
                if opts is None:
                    pads.append(pad)
                    pos += pad
                    if it.kind == "label":
                        addr[it.name] = pos
                    continue
                pos += pad
                n, add, how = opts[chosen[k]]
                p = self.pad_before(it, pos % BUNDLE, n)
                pads.append(pad + p)
                pos += p
                if it.kind == "label":
                    addr[it.name] = pos
                elif it.kind == "branch":
                    it.grow_near = bool(how)
                    it.p2 = pos + n
                elif it.kind == "insn" and add:
                    it.exp, it.lens = how, [n]
                pos += n if it.kind in ("insn", "group", "branch") else 0
            if not self.widen_branches(addr):
                self.addr = addr
                return pads, pos

    def widen_branches(self, addr):
        """Makes near the short branches whose targets (at `addr`) are out of a
        byte's reach; True if there were any (the layout must be done again)."""
        changed = False
        for it in self.text_items:
            if it.kind == "branch" and not it.near and not it.grow_near and not -128 <= addr[it.target] - it.p2 <= 127:
                it.near = changed = True
        return changed

    def layout_greedy(self):
        while True:
            pos, addr, pads = 0, {}, []
            after_barrier = False
            run = []  # insn items since the last label/branch/sequence/padding in this bundle
            for it in self.text_items:
                if it.exp:
                    it.exp, it.lens = "", [it.grow[0]]
            for k, it in enumerate(self.text_items):
                pad = 0
                if after_barrier and FREE_PAD and it.kind in ("label", "insn", "group", "branch", "p2align"):
                    pad = self.free_pad(k, pos)
                    pos += pad
                    after_barrier = False
                    pads_extra = pad
                else:
                    pads_extra = 0
                pad = 0
                if it.kind != "insn" and it.kind != "raw":
                    run = []
                if it.kind == "label":
                    if it.align:
                        pad = self.pad_before(it, pos % BUNDLE, 0)
                    addr[it.name] = pos + pad
                elif it.kind == "p2align":
                    if LOOP_ALIGN:
                        pad = self.pad_before(it, pos % BUNDLE, 0)
                elif it.kind in ("insn", "group", "branch"):
                    n = self.branch_len(it) if it.kind == "branch" else sum(it.lens)
                    if n > BUNDLE:
                        raise SfiError("sequence longer than a bundle: %s" % it.lines)
                    pad = self.pad_before(it, pos % BUNDLE, n)
                    if pad and PAD_GROW and run and pos % BUNDLE + pad <= BUNDLE and self.grow_fill(run, pad):
                        pos += pad  # the padding became longer encodings of the instructions before
                        pad, run = 0, []
                    if pad or pos % BUNDLE + n >= BUNDLE or it.kind != "insn":
                        run = []
                    else:
                        run.append(it)
                    if it.kind == "branch":
                        it.p2 = pos + pad + n  # end address, for displacement
                    pos += n
                    after_barrier = self.barrier(it)
                pads.append(pad + pads_extra)
                pos += pad
            if not self.widen_branches(addr):
                self.addr = addr
                return pads, pos

    def grow_fill(self, run, need):
        """Choose longer encodings (options) for instructions of `run`
        (consecutive, same bundle, nothing between that has an address
        recorded) adding exactly `need` bytes; True if done.  Fewer no-op
        instructions execute."""
        reach = {0: []}
        for it in run:
            nxt = dict(reach)
            for tot, ch in reach.items():
                for n, add, how in self.options(it)[1:]:
                    if tot + add <= need and tot + add not in nxt:
                        nxt[tot + add] = ch + [(it, n, how)]
            reach = nxt
            if need in reach:
                break
        if need not in reach:
            return False
        for it, n, how in reach[need]:
            it.exp, it.lens = how, [n]
        return True

    def mark_aligned_labels(self, src_text):
        referenced = set()
        tok = re.compile(r"[A-Za-z_.$][\w.$]*")
        for x in self.out:
            if isinstance(x, Item):
                if x.kind in ("insn", "group"):
                    for l in x.lines:
                        if not l.startswith("call "):
                            referenced.update(tok.findall(l))
                elif x.kind == "raw" and x.lines[0].split()[0] in (".set", ".equ", ".weakref", ".symver"):
                    referenced.update(tok.findall(x.lines[0]))  # an alias may have its address taken
                continue
            s = x.strip()
            if s.startswith((".size", ".type", ".globl", ".global", ".local", ".hidden", ".weak", ".section", ".text")):
                continue
            referenced.update(tok.findall(s))
        for it in self.text_items:
            # Entries (global functions) and labels whose address is taken (jump
            # tables, function pointers) can be reached by an indirect branch; a
            # static function reached only by direct calls and jumps need not be
            # aligned (SFI_ALIGN_ALL_FUNCS=1: the former rule, every function).
            if it.kind != "label":
                continue
            entry = it.name in self.func_syms and (it.name in self.globals or ALIGN_ALL_FUNCS)
            if entry or it.name in referenced:
                it.align = True

    def emit_branch(self, it):
        t = it.target
        if it.cc is None:
            if it.near or it.grow_near:
                return "\t.byte 0xe9\n\t.long %s - . - 4" % t
            return "\t.byte 0xeb\n\t.byte %s - . - 1" % t
        if it.near or it.grow_near:
            return "\t.byte 0x0f, 0x%x\n\t.long %s - . - 4" % (0x80 + it.cc, t)
        return "\t.byte 0x%x\n\t.byte %s - . - 1" % (0x70 + it.cc, t)

    def got_lines(self):
        if not self.got:
            return []
        lines = ['\t.section .data.rel.ro.sfi_got,"aw"', "\t.p2align 3"]
        for sym in sorted(self.got):
            lines += [".Lsfi_got.%s:" % sym, "\t.quad %s" % sym]
        return lines

    @staticmethod
    def growable(it, how):
        """Instructions that may take the pseudo-prefixes of GROW (gas ignores
        them where they do not apply, e.g. {rex} with %ah); not with lock/rep
        or other prefixes; a %ds override only on a memory operand without a
        segment override.  `it.refuse` holds what the probes found refused:
        {rex} on VEX/EVEX/XOP encodings (whatever the mnemonic: shlx, pdep,
        andn... as well as the v* ones; see vex_encoded), and any pseudo-prefix
        that gas rejected for this instruction (probe_addrs)."""
        if any(h in it.refuse for h in how.split()):
            return False
        w = it.lines[0].split(None, 1)[0]
        if "ds" in how.split() and ("(" not in it.lines[0] or "%gs:" in it.lines[0] or "%fs:" in it.lines[0]
                                    or w.startswith(("lea", "nop", "prefetch"))):
            return False
        return not w.startswith(("lock", "rep", "addr32", "data16", "notrack", "cs", "ds", "{")) and w not in PREFIXES

    def render(self, pads=None, probe=False, where=None):
        """The assembly; with `probe`, a label before every instruction (and
        the pseudo-prefix `probe` on the growable ones, their output line
        numbers recorded in `where`)."""
        out, k, pos = ["\t.text", "\t.p2align 5"], 0, 0
        probe_n = 0
        idx = {id(it): i for i, it in enumerate(self.text_items)}
        for x in self.out:
            if not isinstance(x, Item):
                out.append(x)
                continue
            i = idx[id(x)]
            if pads and pads[i]:
                out.extend(self.pad_lines(pos, pads[i]))
                pos += pads[i]
            if x.kind == "label":
                out.append(x.lines[0])
            elif x.kind == "raw":
                out.append("\t" + x.lines[0])
            elif x.kind in ("insn", "group"):
                for l in x.lines:
                    if probe:
                        out.append("__sfi_p%d:" % probe_n)
                        probe_n += 1
                    if x.kind == "insn" and (x.exp or probe in GROW) and self.growable(x, x.exp or probe):
                        l = (x.exp or probe) + " " + l
                        if where is not None:
                            where[len(out)] = x  # index in out (probe_addrs turns it into a line number)
                    out.append("\t" + l)
                pos += sum(x.lens) if x.lens else 0
            elif x.kind == "branch":
                if probe:
                    out.append("__sfi_p%d:" % probe_n)
                    probe_n += 1
                out.append(self.emit_branch(x))
                pos += self.branch_len(x)
        return out, probe_n

    @staticmethod
    def pad_lines(pos, pad):
        lines = []
        while pad:
            chunk = min(pad, BUNDLE - pos % BUNDLE)
            lines.append("\t.nops %d" % chunk)
            pos += chunk
            pad -= chunk
        return lines


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SfiError("command failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


LEGACY_PREFIXES = frozenset((0x66, 0x67, 0xF2, 0xF3, 0xF0, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65))


def vex_encoded(b):
    """True if the instruction bytes `b` are a VEX (C4/C5), EVEX (62) or XOP
    (8F with a nonzero ModRM.reg) encoding: in 64-bit mode these bytes after
    the legacy prefixes can be nothing else.  A REX prefix is invalid before
    them, so gas refuses {rex} on every such instruction (shlx, pdep, andn,
    vpaddd...), whatever its mnemonic."""
    i = 0
    while i < len(b) and b[i] in LEGACY_PREFIXES:
        i += 1
    if i >= len(b):
        return False
    if b[i] in (0xC4, 0xC5, 0x62):
        return True
    return b[i] == 0x8F and i + 1 < len(b) and (b[i + 1] >> 3) & 7 != 0


def text_bytes(obj):
    data, secs = read_elf(obj)
    for s in secs:
        if s["name"] == ".text":
            return data[s["off"]:s["off"] + s["size"]]
    return b""


def probe_addrs(rw, probe, tmpdir, want_bytes=False):
    """Assembles the code with a label before every instruction (and the
    pseudo-prefix `probe` on every growable one); returns {label number:
    address} (and the .text bytes with want_bytes).  An instruction for which
    gas refuses the pseudo-prefix gets it in its `refuse` set and the probe is
    assembled again (a robustness net: vex_encoded catches the known case)."""
    probe_s, probe_o = os.path.join(tmpdir, "probe.s"), os.path.join(tmpdir, "probe.o")
    for attempt in range(8):
        at = {}
        lines, n = rw.render(probe=probe, where=at)
        lines += ["\t.text", "__sfi_p%d:" % n] + rw.got_lines()
        where, line_no = {}, 1  # output line number -> item (an emitted branch is two lines)
        for k, l in enumerate(lines):
            if k in at:
                where[line_no] = at[k]
            line_no += l.count("\n") + 1
        with open(probe_s, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run(["as", "--64", "-o", probe_o, probe_s], capture_output=True, text=True)
        if r.returncode == 0:
            break
        bad = [where.get(int(m.group(1))) for m in re.finditer(r"^[^:\n]*probe\.s:(\d+): Error:", r.stderr, re.M)]
        if probe not in GROW or not bad or None in bad:
            raise SfiError("command failed: as --64 -o %s %s\n%s%s" % (probe_o, probe_s, r.stdout, r.stderr))
        for it in bad:
            it.refuse.add(probe)
    else:
        raise SfiError("gas keeps refusing pseudo-prefix %s: %s" % (probe, r.stderr[-2000:]))
    addrs = {}
    for l in run(["nm", "-n", probe_o]).splitlines():
        p = l.split()
        if len(p) == 3 and p[2].startswith("__sfi_p"):
            addrs[int(p[2][7:])] = int(p[0], 16)
    if want_bytes:
        return addrs, text_bytes(probe_o)
    return addrs


def weak_undefined(src):
    """Symbols the assembly declares .weak but does not define (gcc writes the
    .weak of an undefined symbol at the end of the file, so this is a prescan)."""
    weak, defined = set(), set()
    for raw in src.splitlines():
        line = strip_comment(raw).strip()
        m = re.match(r"^\.weak\s+(.*)$", line)
        if m:
            weak.update(split_operands(m.group(1)))
            continue
        m = re.match(r"^\.(?:set|equ|comm|lcomm|weakref)\s+([\w.$]+)", line)
        if m:
            defined.add(m.group(1))
        for l in re.findall(r"^([\w.$@]+):", line):
            defined.add(l)
    return weak - defined


def rewrite_asm(src, full, tmpdir, obj_out, compiled=False):
    """compiled: src is gcc's output for a C file (returns through RET_REG)."""
    rw = Rewriter(full)
    if compiled:
        rw.ret_reg = RET_REG
    rw.weak_undef = weak_undefined(src)
    rw.feed(src)
    rw.mark_aligned_labels(src)
    if SP_DEFER:
        rw.defer_sp_checks()
    # Probe: assemble once with a label before every instruction to learn lengths.
    for it in rw.text_items:
        if it.kind == "branch":
            it.near = True
    addrs, code = probe_addrs(rw, True, tmpdir, want_bytes=True)
    j = 0
    for it in rw.text_items:
        if it.kind in ("insn", "group"):
            it.lens = [addrs[j + q + 1] - addrs[j + q] for q in range(len(it.lines))]
            if it.kind == "insn" and vex_encoded(code[addrs[j]:addrs[j + 1]]):
                it.refuse.add("{rex}")
            j += len(it.lines)
        if it.kind == "branch":
            j += 1
            it.near = False
    if PAD_GROW:
        # More probes learn what each pseudo-prefix of GROW would add to each instruction.
        grow = {}
        for it in rw.text_items:
            if it.kind == "branch":
                it.near = True
        for pp in GROW:
            a2 = probe_addrs(rw, pp, tmpdir)
            j = 0
            for it in rw.text_items:
                if it.kind == "insn":
                    grow.setdefault(id(it), []).append(a2[j + 1] - a2[j] - it.lens[0])
                if it.kind in ("insn", "group"):
                    j += len(it.lines)
                elif it.kind == "branch":
                    j += 1
        for it in rw.text_items:
            if it.kind == "branch":
                it.near = False
            if it.kind == "insn":
                it.grow = (it.lens[0], {pp: max(a, 0) for pp, a in zip(GROW, grow[id(it)])})
    pads, end = rw.layout()
    lines, _ = rw.render(pads)
    lines.append("\t.text")
    lines.extend(rw.pad_lines(end, -end % BUNDLE))
    lines.extend(rw.got_lines())
    final_s = os.path.join(tmpdir, "final.s")
    with open(final_s, "w") as f:
        f.write("\n".join(lines) + "\n")
    if os.environ.get("SFI_KEEP_ASM"):
        with open(obj_out + ".sfi.s", "w") as f:
            f.write("\n".join(lines) + "\n")
    # The layout is checked against the assembler's (always, now that encodings are chosen: a call
    # that does not end at a bundle end would return to the wrong place).
    check = os.environ.get("SFI_CHECK_LAYOUT", "1") == "1"
    run(["as", "--64"] + (["-L"] if check else []) + ["-o", obj_out, final_s])
    if check:
        for l in run(["nm", "-n", obj_out]).splitlines():
            p = l.split()
            if len(p) == 3 and p[2] in rw.addr and int(p[0], 16) != rw.addr[p[2]]:
                raise SfiError("layout mismatch at %s: 0x%x != 0x%x" % (p[2], int(p[0], 16), rw.addr[p[2]]))


# ---------------------------------------------------------------- linking

def read_elf(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SfiError("%s: not an ELF64 file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append(dict(name=name, type=typ, flags=flags, addr=addr, off=off, size=size,
                         link=link, info=info, entsize=entsize))
    strtab = secs[shstrndx]
    for s in secs:
        end = data.index(b"\0", strtab["off"] + s["name"])
        s["name"] = data[strtab["off"] + s["name"]:end].decode()
    return data, secs


def elf_symbols(data, secs):
    out = []
    for s in secs:
        if s["type"] != 2:  # SHT_SYMTAB
            continue
        st = secs[s["link"]]
        for i in range(s["size"] // 24):
            name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, s["off"] + 24 * i)
            end = data.index(b"\0", st["off"] + name)
            out.append((data[st["off"] + name:end].decode(), info, shndx, value, size))
    return out


# Data starts on the first page boundary at least one bundle past the code's
# end: link_module appends int3 up to a bundle (a whole one when the code
# fills its last bundle), which must not run into the data.
LINKER_SCRIPT = """
SECTIONS {
  . = 0x%x;
  .text : { %s *(.text .text.*) . = ALIGN(32); } =0xcccccccc
  . = ALIGN(. + 32, 0x1000);
  .rodata : { *(.rodata .rodata.*) }
  .data : { *(.data .data.* .data.rel.ro .data.rel.ro.* .data.rel .data.rel.*) }
  .got : { *(.got) *(.got.plt) *(.igot.plt) }
  .init_array : { *(.init_array .init_array.*) }
  .fini_array : { *(.fini_array .fini_array.*) }
  .tbss : { *(.tbss .tbss.*) }
  .tdata : { *(.tdata .tdata.*) }
  .bss : { *(.bss .bss.* COMMON) }
  /DISCARD/ : { *(.comment) *(.note.*) *(.eh_frame) *(.eh_frame_hdr) }
}
"""


SFI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def verify_module(path):
    """Runs the verifier on a linked module (sfi-verify, or $SFI_VERIFY) and
    fails the link with its reason if it refuses the module, so that what
    would be refused at load time is refused at build time.  Without a built
    verifier it warns (SFI_VERIFY_REQUIRED=1 makes that an error);
    SFI_NO_VERIFY=1 skips it."""
    if os.environ.get("SFI_NO_VERIFY") == "1":
        return
    tool = os.environ.get("SFI_VERIFY") or os.path.join(SFI_DIR, "target", "release", "sfi-verify")
    if not os.path.exists(tool):
        msg = "%s not built (make -C sfi tools): %s was not verified" % (tool, path)
        if os.environ.get("SFI_VERIFY_REQUIRED") == "1":
            raise SfiError(msg)
        sys.stderr.write("sfi-cc: warning: %s\n" % msg)
        return
    r = subprocess.run([tool, path], capture_output=True, text=True)
    if r.returncode != 0:
        os.unlink(path)
        raise SfiError("the verifier refuses the module: %s" % (r.stdout.strip() or r.stderr.strip()))


def link_module(inputs, out, full, tmpdir, exports=None, verify=True):
    comb = os.path.join(tmpdir, "combined.o")
    run(["ld", "-r", "-o", comb] + inputs)
    # Undefined weak symbols are not imports: ld resolves them to 0 (below,
    # their absolute relocations are dropped, so they stay NULL after loading).
    undef = sorted(set(l.split()[-1] for l in run(["nm", "-u", comb]).splitlines() if l.strip() and l.split()[0] not in ("w", "v")))
    runtime = {name: off for name, off in RUNTIME_ENTRIES.values()}
    undef = [u for u in undef if u not in ("_GLOBAL_OFFSET_TABLE_", "__sfi_base") and u not in runtime]
    if len(undef) > (CODE_BASE - TRAMP_BASE) // BUNDLE - 1:
        raise SfiError("too many imports")
    script = os.path.join(tmpdir, "module.ld")
    with open(script, "w") as f:
        # Imports are defined inside .text so that they are section-relative
        # (absolute symbols would make ld turn GOT loads into 32-bit immediates).
        defs = " ".join("%s = . - 0x%x;" % (name, CODE_BASE - TRAMP_BASE - BUNDLE * (i + 1))
                        for i, name in enumerate(undef))
        defs += " __sfi_base = . - 0x%x;" % (CODE_BASE - BASE_SLOT)
        defs += "".join(" %s = . - 0x%x;" % (name, CODE_BASE - off) for name, off in runtime.items())
        f.write(LINKER_SCRIPT % (CODE_BASE, defs))
    elf = os.path.join(tmpdir, "module.elf")
    run(["ld", "-static", "-nostdlib", "-q", "-T", script, "-o", elf, comb])
    if os.environ.get("SFI_LD_ELF"):  # keep the linked ELF, with its symbols (sfi/bench/prof.py)
        shutil.copyfile(elf, os.environ["SFI_LD_ELF"])
    data, secs = read_elf(elf)
    alloc = [s for s in secs if s["flags"] & 2 and s["size"]]
    code = [s for s in alloc if s["flags"] & 4]
    other = [s for s in alloc if not s["flags"] & 4]
    for s in code:
        if s["name"] != ".text" or s["addr"] != CODE_BASE:
            raise SfiError("unexpected code section %s at 0x%x" % (s["name"], s["addr"]))
    for s in other:
        if s["name"] in (".got", ".init_array", ".fini_array", ".tbss", ".tdata") and s["size"]:
            raise SfiError("section %s is not supported in fault-domain modules" % s["name"])
    text = code[0] if code else dict(addr=CODE_BASE, size=0, off=0, type=1)
    code_bytes = data[text["off"]:text["off"] + text["size"]]
    # At least one int3 after the last instruction, then whole bundles: the
    # verifier refuses code whose last instruction can fall through its end
    # (a call returns there, a conditional branch or a no-op continues there).
    code_bytes += b"\xcc" * (-len(code_bytes) % BUNDLE or BUNDLE)
    if other:
        data_off = min(s["addr"] for s in other)
    else:
        data_off = (CODE_BASE + len(code_bytes) + 0xfff) & ~0xfff
    if data_off % 0x1000 or data_off < CODE_BASE + len(code_bytes):
        raise SfiError("bad data placement 0x%x" % data_off)
    progbits = [s for s in other if s["type"] != 8]
    nobits = [s for s in other if s["type"] == 8]
    data_end = max([s["addr"] + s["size"] for s in progbits], default=data_off)
    mem_end = max([s["addr"] + s["size"] for s in other], default=data_off)
    image = bytearray(data_end - data_off)
    for s in progbits:
        image[s["addr"] - data_off:s["addr"] - data_off + s["size"]] = data[s["off"]:s["off"] + s["size"]]
    for s in nobits:
        if s["addr"] < data_end:
            raise SfiError("bss section %s precedes initialised data" % s["name"])
    relocs = []
    symtab = elf_symbols(data, secs)
    weak_undef = {i for i, (name, info, shndx, value, size) in enumerate(symtab) if shndx == 0 and info >> 4 == 2}
    for s in secs:
        if s["type"] != 4:  # SHT_RELA
            continue
        tgt = secs[s["info"]]
        if not tgt["flags"] & 2:
            continue
        for i in range(s["size"] // 24):
            r_off, r_info, addend = struct.unpack_from("<QQq", data, s["off"] + 24 * i)
            typ = r_info & 0xffffffff
            if r_info >> 32 in weak_undef:
                name = symtab[r_info >> 32][0]
                if typ == 1:
                    continue  # .quad weak: 0 (NULL) plus the addend, not rebased
                raise SfiError("reference to undefined weak symbol %s (relocation type %d at 0x%x) would not be NULL"
                               % (name, typ, r_off))
            if typ in (2, 4, 9, 41, 42, 24, 26):  # PC32, PLT32, GOTPCREL, GOTPCRELX, REX_GOTPCRELX, PC64, GOTPC32 resolved
                continue
            if typ == 1:  # R_X86_64_64: absolute address, rebased by the loader
                if tgt["flags"] & 4:
                    raise SfiError("absolute address in code at 0x%x (compile with -fpie)" % r_off)
                relocs.append(r_off - data_off)
                continue
            raise SfiError("relocation type %d at 0x%x in %s not supported (compile with -fpie)" % (typ, r_off, tgt["name"]))
    relocs = sorted(set(relocs))
    entries = []
    for name, info, shndx, value, size in elf_symbols(data, secs):
        bind, typ = info >> 4, info & 15
        if bind in (1, 2) and typ == 2 and CODE_BASE <= value < CODE_BASE + len(code_bytes):
            if exports is None or name in exports:
                entries.append((name, value - CODE_BASE))
    entries.sort(key=lambda e: e[1])
    write_module(out, full, code_bytes, bytes(image), data_off, mem_end - data_end, entries, undef, relocs)
    if verify:
        verify_module(out)


def module_image(full, code, data, data_off, bss, entries, imports, relocs):
    """The bytes of a module file (docs/sfi.md, "Module format")."""
    hdr = MAGIC + struct.pack("<IIIIIIIII", FLAG_FULL if full else 0, len(code), data_off,
                              len(data), bss, len(entries), len(imports), len(relocs), 0)
    hdr += b"\0" * (64 - len(hdr))
    body = bytearray(hdr + code + data)
    for name, off in entries:
        nb = name.encode()
        if len(nb) > 255:
            raise SfiError("symbol name too long: %s" % name)
        body += struct.pack("<IB", off, len(nb)) + nb
    for name in imports:
        nb = name.encode()
        body += struct.pack("<B", len(nb)) + nb
    for r in relocs:
        body += struct.pack("<I", r)
    return bytes(body)


def write_module(out, *fields):
    with open(out, "wb") as f:
        f.write(module_image(*fields))


# ---------------------------------------------------------------- drivers

def cc_main(argv):
    full = os.environ.get("SFI_MODE") == "full"
    args, inputs, out, mode, exports = [], [], None, "link", None
    it = iter(argv)
    for a in it:
        if a == "--full":
            full = True
        elif a == "--stores":
            full = False
        elif a == "-o":
            out = next(it)
        elif a == "-c":
            mode = "compile"
        elif a in ("-S", "-E", "-M", "-MM"):
            mode = "passthrough"
            args.append(a)
        elif a.startswith("--export="):
            exports = set(a.split("=", 1)[1].split(","))
        elif not a.startswith("-") and os.path.splitext(a)[1] in (".c", ".s", ".S", ".o", ".a"):
            inputs.append(a)
        elif a in ("-I", "-D", "-U", "-include", "-MF", "-MT", "-x"):
            args += [a, next(it)]
        else:
            args.append(a)
    if mode == "passthrough":
        os.execvp("gcc", ["gcc"] + GCC_FLAGS + args + inputs + (["-o", out] if out else []))
    with tempfile.TemporaryDirectory(prefix="sfi-cc-") as tmp:
        objs = []
        for n, src in enumerate(inputs):
            ext = os.path.splitext(src)[1]
            if ext in (".o", ".a"):
                objs.append(src)
                continue
            if mode == "compile" and out and len(inputs) == 1:
                obj = out
            elif mode == "compile":
                obj = os.path.splitext(os.path.basename(src))[0] + ".o"
            else:
                obj = os.path.join(tmp, "in%d.o" % n)
            asm = os.path.join(tmp, "in%d.s" % n)
            if ext == ".c":
                run(["gcc"] + GCC_FLAGS + args + ["-S", "-o", asm, src])
            elif ext == ".S":
                run(["gcc"] + args + ["-E", "-o", asm, src])
            else:
                asm = src
            sub = os.path.join(tmp, "rw%d" % n)
            os.mkdir(sub)
            try:
                try:
                    rewrite_asm(open(asm).read(), full, sub, obj, compiled=ext == ".c")
                except SfiError as e:
                    # gcc still emits `rep stos`/`rep movs` for some operations under the
                    # unrolled-loop strategy (in sqlite3.c); such a file is compiled with
                    # the one-move loop, which never does.
                    if ext != ".c" or STRINGOP == "loop" or not str(e).startswith("string instruction"):
                        raise
                    run(["gcc"] + [f if not f.startswith("-mstringop-strategy=") else "-mstringop-strategy=loop"
                                   for f in GCC_FLAGS] + args + ["-S", "-o", asm, src])
                    shutil.rmtree(sub)
                    os.mkdir(sub)
                    rewrite_asm(open(asm).read(), full, sub, obj, compiled=True)
            except SfiForbidden as e:
                if ext == ".c" and not e.located:
                    # Without -g the assembly has no .loc: compile again with it
                    # (it does not change the code) to name the source line.
                    run(["gcc"] + GCC_FLAGS + args + ["-g", "-S", "-o", asm, src])
                    try:
                        Rewriter(full).feed(open(asm).read())
                    except SfiForbidden as e2:
                        e = e2
                raise SfiError("%s: %s" % (src, e) if not e.located else str(e))
            except SfiError as e:
                raise SfiError("%s: %s" % (src, e))
            objs.append(obj)
        if mode == "link":
            link_module(objs, out or "a.sfi", full, tmp, exports)


def ld_main(argv):
    """sfi-ld [--raw] [--full] -o OUT inputs: link objects (or assemble raw .s) into a module."""
    full, raw, out, inputs = False, False, None, []
    it = iter(argv)
    for a in it:
        if a == "--full":
            full = True
        elif a == "--raw":
            raw = True
        elif a == "-o":
            out = next(it)
        else:
            inputs.append(a)
    with tempfile.TemporaryDirectory(prefix="sfi-ld-") as tmp:
        objs = []
        for n, src in enumerate(inputs):
            if src.endswith((".s", ".S")):
                obj = os.path.join(tmp, "raw%d.o" % n)
                if raw:
                    run(["gcc", "-c", "-o", obj, src])
                else:
                    sub = os.path.join(tmp, "rw%d" % n)
                    os.mkdir(sub)
                    rewrite_asm(open(src).read(), full, sub, obj)
                objs.append(obj)
            else:
                objs.append(src)
        link_module(objs, out, full, tmp, verify=not raw)  # --raw: escape tests build refused modules on purpose


if __name__ == "__main__":
    tool = os.path.basename(sys.argv[0])
    try:
        if tool == "sfi-ld" or (len(sys.argv) > 1 and sys.argv[1] == "--ld"):
            ld_main(sys.argv[2:] if sys.argv[1:2] == ["--ld"] else sys.argv[1:])
        else:
            cc_main(sys.argv[1:])
    except SfiError as e:
        sys.stderr.write("%s: error: %s\n" % (tool, e))
        sys.exit(1)

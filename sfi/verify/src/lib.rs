//! Load-time verifier for Keep SFI fault-domain modules.
//!
//! The module format, the sandboxing scheme and the argument why these rules
//! confine a module are in docs/sfi.md.  The verifier trusts nothing but the
//! bytes it is given: it decodes every instruction from the start of the code
//! segment, in 32-byte bundles, and checks each one.
//!
//! The same code runs on the host (feature `std`, the default) and inside
//! Keep (`--no-default-features --features no_std`: `core` + `alloc`).

#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

pub mod layout;

use alloc::{format, vec};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use iced_x86::{
    CodeSize, CpuidFeature, Decoder, DecoderOptions, FlowControl,
    Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};

pub const MAGIC: &[u8; 8] = b"KSFIMOD1";
pub const HEADER_SIZE: usize = 64;
pub const BUNDLE: u64 = 32;
/// Domain offsets: trampolines (written by the runtime) and the module's code.
pub const TRAMP_BASE: u64 = 0x1_0000;
pub const CODE_BASE: u64 = 0x2_0000;
pub const DOMAIN_SIZE: u64 = 1 << 32;
/// Data, heap and stacks share the domain; a module's static data must end below this.
pub const DATA_LIMIT: u64 = 1 << 31;
pub const MAX_CODE: u64 = 1 << 28;
pub const MAX_IMPORTS: usize = ((CODE_BASE - TRAMP_BASE) / BUNDLE) as usize - 1;
pub const FLAG_FULL: u32 = 1;
/// Domain offset of the base slot: the runtime writes the domain base B there, in
/// the read-only entry page (bytes 8..16 of a bundle that starts with `int3`).
/// Sequences add B with `add BASE_SLOT(%rip), %reg`; no register is reserved.
pub const BASE_SLOT: u64 = 0xF008;
/// The stack area [B + STACK_LOW, B + 4 GiB) holds the stack and never shared memory;
/// below it, down to SHARED_END, nothing is ever mapped.
pub const STACK_LOW: u64 = 0xF000_0000;
/// The never-mapped gap between the shared regions and the stack area starts here.
pub const SHARED_END: u64 = 0xE000_0000;
/// %rsp may lie this far below the stack area (rule 5): it is always in
/// [B + STACK_LOW - SP_SLACK, B + 4 GiB] where a branch can reach.
pub const SP_SLACK: u64 = 1 << 16;
/// `and $-N, %rsp` with N up to this keeps %rsp at or above STACK_LOW - SP_SLACK
/// (a multiple of it).
pub const STACK_ALIGN_MAX: u64 = 1 << 16;
/// `add`/`sub` of an immediate up to this to %rsp may be checked by a later
/// access at %rsp + [0, SP_SLACK] instead of re-sandboxed at once (rule 5).
pub const SP_STEP_MAX: u64 = 1 << 16;
/// The runtime's answers to cpuid, rdtsc, rdtscp and xgetbv (layout::ENTRY_CODE, in the
/// entry page): direct branch targets like the import trampolines (rule 7);
/// sfi-cc replaces each instruction by `lea -128(%rsp), %rsp; call ENTRY`.
pub const CPUID_ENTRY: u64 = 0xF020;
pub const RDTSC_ENTRY: u64 = 0xF040;
pub const RDTSCP_ENTRY: u64 = 0xF060;
pub const XGETBV_ENTRY: u64 = 0xF1A0;
pub const RUNTIME_ENTRIES: [u64; 4] = [CPUID_ENTRY, RDTSC_ENTRY, RDTSCP_ENTRY, XGETBV_ENTRY];
const _: () = assert!((STACK_LOW - SP_SLACK) % STACK_ALIGN_MAX == 0 && STACK_LOW - SP_SLACK - SP_STEP_MAX - 8 > SHARED_END);

pub struct Module<'a> {
    /// Loads are sandboxed too ("full protection").
    pub full: bool,
    pub code: &'a [u8],
    pub data: &'a [u8],
    pub data_offset: u64,
    pub bss_size: u64,
    /// (name, offset from the start of the code segment)
    pub entries: Vec<(String, u32)>,
    pub imports: Vec<String>,
    /// Offsets in the data segment of 64-bit domain offsets the loader rebases.
    pub relocs: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct Reject {
    /// Offset from the start of the code segment, if the reason is an instruction.
    pub offset: Option<u64>,
    pub reason: &'static str,
    pub detail: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "code+0x{:x}: {}", o, self.reason)?,
            None => write!(f, "{}", self.reason)?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

fn reject<T>(reason: &'static str, detail: String) -> Result<T, Reject> {
    Err(Reject { offset: None, reason, detail })
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Reject> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.b.len() => {
                let s = &self.b[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => reject("truncated module", format!("need {} bytes at file offset {}", n, self.pos)),
        }
    }
    fn u8(&mut self) -> Result<u8, Reject> {
        Ok(self.bytes(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Reject> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    fn name(&mut self) -> Result<String, Reject> {
        let n = self.u8()? as usize;
        let s = self.bytes(n)?;
        match core::str::from_utf8(s) {
            Ok(s) if !s.is_empty() && !s.contains('\0') => Ok(s.to_string()),
            _ => reject("bad symbol name", format!("at file offset {}", self.pos - n)),
        }
    }
}

/// Parses the container and checks its layout; does not look at the code.
pub fn parse(bytes: &[u8]) -> Result<Module<'_>, Reject> {
    let mut r = Reader { b: bytes, pos: 0 };
    if r.bytes(8)? != MAGIC {
        return reject("bad magic", "not a Keep SFI module".into());
    }
    let flags = r.u32()?;
    let (code_size, data_offset, data_size, bss_size) = (r.u32()? as u64, r.u32()? as u64, r.u32()? as u64, r.u32()? as u64);
    let (n_entries, n_imports, n_relocs) = (r.u32()? as usize, r.u32()? as usize, r.u32()? as usize);
    if flags & !FLAG_FULL != 0 {
        return reject("bad header", format!("unknown flags 0x{:x}", flags));
    }
    if r.bytes(HEADER_SIZE - r.pos)?.iter().any(|&b| b != 0) {
        return reject("bad header", "reserved bytes are not zero".into());
    }
    if code_size % BUNDLE != 0 || code_size > MAX_CODE {
        return reject("bad header", format!("code size {} is not a multiple of 32 up to 256 MiB", code_size));
    }
    if data_offset % 4096 != 0 || data_offset < CODE_BASE + code_size || data_offset + data_size + bss_size > DATA_LIMIT {
        return reject("bad header", format!("data at 0x{:x} (+{}+{}) overlaps code or passes 2 GiB", data_offset, data_size, bss_size));
    }
    if n_imports > MAX_IMPORTS {
        return reject("bad header", format!("{} imports (at most {})", n_imports, MAX_IMPORTS));
    }
    let code = r.bytes(code_size as usize)?;
    let data = r.bytes(data_size as usize)?;
    let mut entries = Vec::new();
    for _ in 0..n_entries.min(bytes.len()) {
        let off = r.u32()?;
        let name = r.name()?;
        if off as u64 >= code_size || off as u64 % BUNDLE != 0 {
            return reject("bad entry", format!("{} at 0x{:x} is not a bundle start in code", name, off));
        }
        entries.push((name, off));
    }
    if entries.len() != n_entries {
        return reject("truncated module", "entry table".into());
    }
    let mut imports = Vec::new();
    for _ in 0..n_imports {
        imports.push(r.name()?);
    }
    let mut relocs = Vec::new();
    for _ in 0..n_relocs.min(bytes.len()) {
        let off = r.u32()?;
        if off % 8 != 0 || off as u64 + 8 > data_size {
            return reject("bad relocation", format!("0x{:x} is not an aligned slot in the data segment", off));
        }
        relocs.push(off);
    }
    if relocs.len() != n_relocs {
        return reject("truncated module", "relocation table".into());
    }
    if r.pos != bytes.len() {
        return reject("trailing bytes", format!("{} bytes after the relocation table", bytes.len() - r.pos));
    }
    Ok(Module { full: flags & FLAG_FULL != 0, code, data, data_offset, bss_size, entries, imports, relocs })
}

/// Parses and verifies a module.  `Ok` means it may be loaded into a fault domain.
pub fn verify(bytes: &[u8]) -> Result<Module<'_>, Reject> {
    let m = parse(bytes)?;
    check_code::<true>(&m)?;
    Ok(m)
}

/// As `verify`, but runs iced's full instruction-info pass on every instruction
/// instead of using the per-opcode cache; the fuzzer checks that both agree.
pub fn verify_reference(bytes: &[u8]) -> Result<Module<'_>, Reject> {
    let m = parse(bytes)?;
    check_code::<false>(&m)?;
    Ok(m)
}

/// The refused instruction in a reject's detail: AT&T syntax on the host;
/// inside Keep only the mnemonic, because iced's formatter builds tables of
/// more than the 1 MiB heap a Keep program has.  Reasons and offsets are
/// the same in both.
#[cfg(feature = "std")]
fn text(i: &Instruction) -> String {
    use iced_x86::{Formatter, GasFormatter};
    let mut s = String::new();
    GasFormatter::new().format(i, &mut s);
    s
}

#[cfg(not(feature = "std"))]
fn text(i: &Instruction) -> String {
    format!("{:?}", i.mnemonic()).to_lowercase()
}

/// Instruction sets a module may use.  Everything else (system, virtualisation,
/// segment-base, transactional, XSAVE, MMX, AVX-512...) is refused, and so are
/// cpuid, rdtsc and xgetbv: modules ask the runtime entries instead.
fn feature_allowed(f: CpuidFeature) -> bool {
    use CpuidFeature::*;
    matches!(
        f,
        INTEL8086 | INTEL186 | INTEL286 | INTEL386 | INTEL486 | X64 | CMOV | CX8 | CMPXCHG16B
            | FPU | FPU287 | FPU387 | SSE | SSE2 | SSE3 | SSSE3 | SSE4_1 | SSE4_2 | POPCNT
            | LZCNT | BMI1 | BMI2 | AVX | AVX2 | FMA | F16C | MOVBE | ADX | PCLMULQDQ | AES
            | SHA | RDRAND | RDSEED | MULTIBYTENOP | PAUSE | CLFSH | PREFETCHW | CET_IBT
    )
}

fn check_instruction(i: &Instruction) -> Result<(), &'static str> {
    use Mnemonic::*;
    match i.flow_control() {
        FlowControl::Return => return Err("return instruction"),
        FlowControl::Interrupt if i.mnemonic() != Int3 => return Err("system call or interrupt"),
        FlowControl::XbeginXabortXend => return Err("transactional memory instruction"),
        _ => {}
    }
    if i.is_jmp_far() || i.is_call_far() || i.is_jmp_far_indirect() || i.is_call_far_indirect() {
        return Err("far branch");
    }
    match i.mnemonic() {
        Syscall | Sysenter | Sysexit | Sysret | Int | Into | Int1 => return Err("system call or interrupt"),
        Lds | Les | Lfs | Lgs | Lss | Swapgs | Lar | Lsl | Verr | Verw | Arpl | Rdfsbase
        | Rdgsbase | Wrfsbase | Wrgsbase => return Err("segment instruction"),
        Hlt | Cli | Sti | In | Out | Insb | Insw | Insd | Outsb | Outsw | Outsd | Lgdt | Lidt
        | Lldt | Ltr | Sgdt | Sidt | Sldt | Str | Smsw | Lmsw | Clts | Invd | Wbinvd | Invlpg
        | Rdmsr | Wrmsr | Rdpmc | Iret | Iretd | Iretq | Loadall | Rsm => return Err("privileged instruction"),
        Pushf | Pushfd | Pushfq | Popf | Popfd | Popfq | Std => return Err("flags instruction"),
        Ldmxcsr | Vldmxcsr | Fldcw | Fldenv | Frstor | Fxrstor | Fxrstor64 => {
            return Err("control-state instruction")
        }
        Enter | Leave => return Err("frame instruction"),
        // Intel decodes ud0 with a ModRM byte, AMD without: a length that
        // depends on the CPU (rule 11).  ud2 is the same everywhere.
        Ud0 => return Err("encoding decoded differently by CPU vendors"),
        // With a register bit offset these address `operand + (offset >> 3)`,
        // a signed 64-bit displacement the operand does not show (SDM vol. 2,
        // BT: "bit base" and "bit offset"); with an immediate they stay inside
        // the operand.
        Bt | Bts | Btr | Btc if i.op0_kind() == OpKind::Memory && i.op1_kind() == OpKind::Register => {
            return Err("bit-string access with a register offset")
        }
        _ => {}
    }
    for n in 0..i.op_count() {
        if i.op_kind(n) == OpKind::Register {
            let r = i.op_register(n);
            if r.is_segment_register() {
                return Err("segment instruction");
            }
            if r.is_cr() || r.is_dr() || r.is_tr() {
                return Err("privileged instruction");
            }
        }
    }
    if !i.cpuid_features().iter().all(|&f| feature_allowed(f)) {
        return Err("instruction set not allowed");
    }
    Ok(())
}

/// Register-plus-displacement from %rsp stays inside the domain or its 4 GiB
/// guard zones because %rsp is always inside the domain; `%gs:` with 32-bit
/// addressing can only reach [base, base + 4 GiB); a RIP-relative target is static.
fn memory_safe(m: &iced_x86::UsedMemory, write: bool, data_offset: u64, ip_rel: Option<u64>) -> bool {
    let (seg, base, index) = (m.segment(), m.base(), m.index());
    if seg == Register::GS {
        return m.address_size() == CodeSize::Code32 && m.vsib_size() == 0;
    }
    if seg == Register::FS || m.address_size() != CodeSize::Code64 || index != Register::None {
        return false;
    }
    if let (Some(target), Register::None | Register::RIP) = (ip_rel, base) {
        let low = if write { data_offset } else { 0 };
        return target >= low && target < DOMAIN_SIZE - 64;
    }
    base == Register::RSP
}

/// Register-plus-displacement check of an instruction's explicit memory operand,
/// computed from the operand itself (address size as iced derives it: from the
/// base or index register, else from the displacement size).
#[inline]
fn explicit_memory_safe(i: &Instruction, write: bool, data_offset: u64) -> bool {
    let (seg, base, index) = (i.memory_segment(), i.memory_base(), i.memory_index());
    let asz = match (base, index, i.memory_displ_size()) {
        (Register::None, Register::None, d) if d >= 2 => d as usize,
        (Register::None, Register::None, _) => 8,
        (Register::None, r, _) | (r, _, _) => r.size(),
    };
    if seg == Register::GS {
        return asz == 4;
    }
    if seg == Register::FS || asz != 8 || index != Register::None {
        return false;
    }
    if i.is_ip_rel_memory_operand() {
        let target = i.ip_rel_memory_address();
        return target >= if write { data_offset } else { 0 } && target < DOMAIN_SIZE - 64;
    }
    base == Register::RSP
}

// Per-opcode facts (iced `Code`), learnt from the first instance with the full
// instruction-info pass.  What an opcode does implicitly (registers it writes,
// memory it touches besides its explicit operand, how it accesses that operand,
// its instruction set, flow control and register classes) depends only on the
// opcode, so later instances need only their explicit operands checked.
const KNOWN: u16 = 1; // facts computed; the instruction passes check_instruction
const SLOW: u16 = 2; // implicit memory access or implicit write of %rsp: always the full pass
const MEM_R: u16 = 4; // the explicit memory operand is read
const MEM_W: u16 = 8; // the explicit memory operand is written
const OP_W: u16 = 16; // OP_W << n: explicit operand n is written

/// (qualifies for the cache: no vector index register; has an explicit memory
/// operand; mask of the explicit register operands that are %rsp)
fn plain_operands(i: &Instruction) -> (bool, bool, u16) {
    let (mut has_mem, mut special) = (false, 0u16);
    for n in 0..i.op_count() {
        match i.op_kind(n) {
            OpKind::Register if i.op_register(n).full_register() == Register::RSP => special |= OP_W << n,
            OpKind::Memory if i.memory_index().is_vector_register() => return (false, false, 0),
            OpKind::Memory => has_mem = true,
            _ => {}
        }
    }
    (true, has_mem, special)
}

/// Whether the prefixes of a branch (its bytes up to the opcode) are the
/// same to every CPU: a `66` (operand size) makes AMD's CPUs take a near
/// branch or return as 16-bit (a 2-byte displacement, a target truncated to
/// 16 bits, a 2-byte return address) where Intel's ignore it (QEMU's TCG was
/// not measured); `67` (address size) is refused with it, since no compiler puts
/// it on a branch.  Segment (branch hint), lock/rep and REX prefixes mean the
/// same everywhere.  (Rule 11.)
fn branch_prefixes_same_everywhere(bytes: &[u8]) -> bool {
    for &b in bytes {
        match b {
            0x66 | 0x67 => return false,
            0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0xf0 | 0xf2 | 0xf3 | 0x40..=0x4f => {}
            _ => return true,
        }
    }
    true
}

/// Instructions whose memory operand is read or written every time they run
/// (so the access faults if it is unmapped): the only ones that may *check*
/// a small step of %rsp (rule 5).  Not: masked moves (`vmaskmovps`,
/// `vpmaskmovd`...: a zero mask touches nothing and never faults), `cmov`
/// (whether it faults with a false condition is the CPU's choice), gathers,
/// prefetches, `nop`, `lea`, `clflush` and anything else not listed.  The same
/// list as `SP_CHECK_MNEMS` in sfi/cc/sficc.py, which decides where the
/// sequence may be left out.
fn always_accesses(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Mov | Movzx | Movsx | Movsxd | Movss | Movsd | Movaps | Movapd | Movups | Movupd | Movdqa | Movdqu | Movq | Movd
            | Movlps | Movlpd | Movhps | Movhpd | Movbe | Movnti | Movntps | Movntpd | Movntdq | Movntdqa | Movddup
            | Movshdup | Movsldup | Vmovss | Vmovsd | Vmovaps | Vmovapd | Vmovups | Vmovupd | Vmovdqa | Vmovdqu | Vmovq
            | Vmovd | Vmovlps | Vmovlpd | Vmovhps | Vmovhpd | Vmovntps | Vmovntpd | Vmovntdq | Vmovntdqa | Vmovddup
            | Vmovshdup | Vmovsldup | Add | Sub | And | Or | Xor | Cmp | Test | Inc | Dec | Adc | Sbb | Fld | Fst | Fstp
            | Fild | Fist | Fistp | Fisttp | Ucomiss | Ucomisd | Comiss | Comisd | Cvtsi2ss | Cvtsi2sd | Cvtss2sd
            | Cvtsd2ss | Cvttss2si | Cvttsd2si | Cvtss2si | Cvtsd2si
    )
}

/// push, pop and call: they move %rsp by 8 and touch memory at it (rule 5).
fn is_stack_op(i: &Instruction) -> bool {
    matches!(i.mnemonic(), Mnemonic::Push | Mnemonic::Pop | Mnemonic::Call)
}

/// Learns an opcode's facts from an instance without explicit %rsp operands.
fn learn(i: &Instruction, factory: &mut InstructionInfoFactory) -> u16 {
    let has_mem = (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory);
    let info = factory.info(i);
    let mut f = KNOWN;
    let mut explicit_seen = false;
    // push, pop and call move %rsp by 8 and touch memory at it; rule 5 exempts them.
    let stack_op = is_stack_op(i);
    // `push m64`, `pop m64`: the implicit stack access and the explicit
    // operand can have the same base and displacement (`pop (%rsp)`), so one
    // instance cannot tell which access is which; an operand that two
    // accesses match is ambiguous in the same way.  Never cached.  (None
    // matching is fine: `lea`, `nop m`, `prefetch` access nothing.)
    let explicit_like = |m: &iced_x86::UsedMemory| {
        let base_ok = if i.is_ip_rel_memory_operand() {
            matches!(m.base(), Register::None | Register::RIP | Register::EIP) && m.displacement() == i.ip_rel_memory_address()
        } else {
            m.base() == i.memory_base() && m.displacement() == i.memory_displacement64()
        };
        base_ok && m.index() == i.memory_index() && m.segment() == i.memory_segment()
    };
    if has_mem && (stack_op || info.used_memory().iter().filter(|m| explicit_like(m)).count() > 1) {
        return KNOWN | SLOW;
    }
    for m in info.used_memory() {
        if has_mem && !explicit_seen && explicit_like(m) {
            explicit_seen = true;
            f |= match m.access() {
                OpAccess::Read | OpAccess::CondRead => MEM_R,
                OpAccess::Write | OpAccess::CondWrite => MEM_W,
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => MEM_R | MEM_W,
                OpAccess::NoMemAccess => 0,
                _ => SLOW,
            };
        } else if !(stack_op && m.base() == Register::RSP && m.index() == Register::None && m.address_size() == CodeSize::Code64
            && m.segment() == Register::SS)
        {
            f |= SLOW;
        }
    }
    if info.used_registers().iter().any(|r| {
        matches!(r.access(), OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite)
            && r.register().full_register() == Register::RSP && !stack_op
    }) {
        f |= SLOW;
    }
    for n in 0..i.op_count() {
        if matches!(info.op_access(n), OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite) {
            f |= OP_W << n;
        }
    }
    f
}

/// The length of the no-op that starts `b`, if it is one of the recommended
/// encodings (SDM vol. 2, NOP: `90`, `66 90` and `0F 1F /0` with the usual
/// zero displacements, behind up to four `66` and, for the longest form, a
/// `2E`, as GNU as pads); else 0.  A no-op changes nothing and touches no memory.
fn nop_len(b: &[u8]) -> usize {
    if !matches!(b[0], 0x90 | 0x66 | 0x0f) {
        return 0;
    }
    let prefixes = b.iter().take(4).take_while(|&&x| x == 0x66).count();
    let cs = (b.get(prefixes) == Some(&0x2e)) as usize;
    let rest = &b[prefixes + cs..];
    if rest.first() == Some(&0x90) {
        return if prefixes <= 1 && cs == 0 { prefixes + 1 } else { 0 };
    }
    // 0F 1F with ModRM 00, 40, 44 (SIB 00), 80, 84 (SIB 00) and a zero displacement.
    let len = match rest {
        [0x0f, 0x1f, 0x00, ..] => 3,
        [0x0f, 0x1f, 0x40, ..] => 4,
        [0x0f, 0x1f, 0x44, 0x00, ..] => 5,
        [0x0f, 0x1f, 0x80, ..] => 7,
        [0x0f, 0x1f, 0x84, 0x00, ..] => 8,
        _ => return 0,
    };
    let zeros = match len { 5 | 8 => 4, _ => 3 }; // the displacement, after ModRM and SIB
    if rest.len() < len || rest[zeros..len].iter().any(|&x| x != 0) || (cs == 1 && len != 8) {
        return 0;
    }
    prefixes + cs + len
}

/// jcc/jmp rel8, call/jmp rel32 and jcc rel32 without prefixes, whose
/// encodings are fixed (SDM vol. 2): (length, displacement).  Outside a
/// pending %rsp check the verifier accepts them as they are; their targets
/// are checked with the others at the end.
fn direct_branch(b: &[u8]) -> Option<(usize, i64)> {
    match b {
        [0x70..=0x7f | 0xeb, d, ..] => Some((2, *d as i8 as i64)),
        [0xe8 | 0xe9, d @ ..] if d.len() >= 4 => Some((5, i32::from_le_bytes(d[..4].try_into().unwrap()) as i64)),
        [0x0f, 0x80..=0x8f, d @ ..] if d.len() >= 4 => Some((6, i32::from_le_bytes(d[..4].try_into().unwrap()) as i64)),
        _ => None,
    }
}

/// The length of a `%gs:` access with 32-bit addressing by one of the
/// commonest opcodes, if `b` starts with one; else 0.  `65 67`, an optional
/// `66`, an optional REX, then a memory operand (ModRM `mod` not 3) of
/// `mov` (`88`, `89`, `8A`, `8B`, `C6 /0`, `C7 /0`), `movzx`/`movsx`
/// (`0F B6`, `B7`, `BE`, `BF`), `movsxd` (`63`), ALU with an immediate
/// (`80`, `81`, `83`) or `cmp` (`38`–`3B`), whose register operand, if any,
/// is not %rsp (reg field 4 without REX.R goes to the decoder).  These are
/// nine tenths of the sandboxed accesses of compiled modules and a tenth of
/// their instructions, and cost the decoder three indirect calls each (two
/// prefix handlers).  Such an access is safe wherever its address points
/// (rule 3), is not a branch, and has no implicit effect: only its length
/// matters (SDM vol. 2, 2.1: ModRM, SIB, displacement, immediate).
fn gs_access_len(b: &[u8]) -> usize {
    if b.len() < 4 || b[0] != 0x65 || b[1] != 0x67 {
        return 0;
    }
    let mut k = 2;
    let p66 = b[k] == 0x66;
    k += p66 as usize;
    let rex = if (0x40..=0x4f).contains(&b[k]) { k += 1; b[k - 1] } else { 0 };
    let (op, n) = match b.get(k..k + 2) {
        Some(&[0x0f, op @ (0xb6 | 0xb7 | 0xbe | 0xbf)]) => (0x0f00 | op as u16, 2),
        Some(&[op @ (0x88..=0x8b | 0xc6 | 0xc7 | 0x63 | 0x80 | 0x81 | 0x83 | 0x38..=0x3b), _]) => (op as u16, 1),
        _ => return 0,
    };
    k += n;
    let Some(&modrm) = b.get(k) else { return 0 };
    let (md, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
    if md == 3 || (matches!(op, 0xc6 | 0xc7) && reg != 0) || (reg == 4 && rex & 4 == 0 && !matches!(op, 0x80 | 0x81 | 0x83 | 0xc6 | 0xc7)) {
        return 0;
    }
    k += 1;
    let sib = rm == 4;
    let disp = match md {
        0 if rm == 5 || (sib && b.get(k).is_some_and(|s| s & 7 == 5)) => 4,
        0 => 0,
        1 => 1,
        _ => 4,
    };
    let imm = match op {
        0xc6 | 0x80 | 0x83 => 1,
        0xc7 | 0x81 if rex & 8 == 0 && p66 => 2,
        0xc7 | 0x81 => 4,
        _ => 0,
    };
    let len = k + sib as usize + disp + imm;
    if len > b.len() { 0 } else { len }
}

/// The first bytes that `nop_len`, `gs_access_len` and `direct_branch` can take (one load
/// instead of a chain of compares on every instruction).
const SHORTCUT_FIRST: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b, 0x90 | 0x66 | 0x0f | 0x70..=0x7f | 0xeb | 0xe8 | 0xe9 | 0x65);
        b += 1;
    }
    t
};

const TARGET: u64 = 1; // instruction start that a branch may reach
const INSIDE: u64 = 2; // instruction start inside a sandboxing sequence (wins over TARGET)

/// Two bits per code byte, TARGET and INSIDE: a quarter of the memory of a
/// byte map, which matters for the branch-target pass's random accesses.
struct Marks(Vec<u64>);

impl Marks {
    fn set(&mut self, off: usize, kind: u64) {
        self.0[off / 32] |= kind << (2 * (off % 32));
    }
    fn get(&self, off: usize) -> u64 {
        self.0[off / 32] >> (2 * (off % 32)) & 3
    }
}

/// `add BASE_SLOT(%rip), %dst`: adds B (64-bit RIP-relative, no segment override,
/// so it reads B + BASE_SLOT, which the domain cannot write).
fn is_base_add(i: &Instruction, dst: Register) -> bool {
    i.mnemonic() == Mnemonic::Add
        && i.op_count() == 2
        && i.op0_kind() == OpKind::Register
        && i.op0_register() == dst
        && i.op1_kind() == OpKind::Memory
        && i.memory_base() == Register::RIP
        && i.memory_segment() == Register::DS
        && i.ip_rel_memory_address() == BASE_SLOT
}

fn is_mask32(i: &Instruction, dst64: Register) -> bool {
    i.mnemonic() == Mnemonic::And
        && i.op0_kind() == OpKind::Register
        && i.op0_register().full_register() == dst64
        && i.op0_register().size() == 4
        && matches!(i.op1_kind(), OpKind::Immediate8to32 | OpKind::Immediate32)
        && i.immediate(1) as u32 == (-(BUNDLE as i32)) as u32
}

/// `or $imm, %esp` setting the top four bits: zero-extends %rsp into [STACK_LOW, 4 GiB).
fn is_or_esp(i: &Instruction) -> bool {
    i.mnemonic() == Mnemonic::Or
        && i.op0_kind() == OpKind::Register
        && i.op0_register() == Register::ESP
        && matches!(i.op1_kind(), OpKind::Immediate8to32 | OpKind::Immediate32)
        && i.immediate(1) as u32 & STACK_LOW as u32 == STACK_LOW as u32
}

/// `and $-32, %eR; add BASE_SLOT(%rip), %R; push %R; ret`, contiguous in one bundle.
fn is_masked_return(mask: &Instruction, add: &Instruction, push: &Instruction, ret: &Instruction) -> bool {
    let reg = push.op0_register();
    ret.code() == iced_x86::Code::Retnq
        && push.mnemonic() == Mnemonic::Push
        && push.op0_kind() == OpKind::Register
        && reg.size() == 8
        && reg != Register::RSP
        && mask.ip() >= CODE_BASE
        && (mask.ip() - CODE_BASE) / BUNDLE == (ret.ip() - CODE_BASE) / BUNDLE
        && mask.next_ip() == add.ip()
        && add.next_ip() == push.ip()
        && push.next_ip() == ret.ip()
        && is_mask32(mask, reg)
        && is_base_add(add, reg)
}

/// FAST: the per-opcode facts and the byte shortcuts (`verify`); without,
/// the full pass on every instruction (`verify_reference`).
fn check_code<const FAST: bool>(m: &Module) -> Result<(), Reject> {
    let code = m.code;
    let mut facts = vec![0u16; if FAST { 2 * iced_x86::Code::values().len() } else { 0 }];
    let mut marks = Marks(vec![0; code.len().div_ceil(32)]);
    let mut branches: Vec<(u64, u64)> = Vec::new();
    let mut decoder = Decoder::with_ip(64, code, CODE_BASE, DecoderOptions::NONE);
    let mut factory = InstructionInfoFactory::new();
    // The current instruction and the last three, in a ring that the decoder
    // writes into directly (copying each instruction cost a store-forwarding
    // stall); prev!(1) is the latest before the current one.
    let mut ring = [Instruction::default(); 4];
    let mut k = 0usize;
    macro_rules! prev {
        ($back:expr) => {
            ring[k.wrapping_sub($back) & 3]
        };
    }
    macro_rules! push_prev {
        () => {{
            k += 1;
        }};
    }
    let mut sp_pending = 0u8; // instructions still owed by a %rsp re-sandboxing sequence
    let mut sp_bundle = 0u64;
    let mut sp_may_defer = false; // the pending write is a small step that a later access may check instead
    let mut sp_unchecked = false; // a small step of %rsp awaits its checking access (rule 5)
    let mut pos = 0; // the next instruction; the decoder is there unless `skipped`
    let mut skipped = false;
    let mut falls_through = false; // whether the last instruction can continue at the next byte
    while pos < code.len() {
        // No-op padding, direct branches and the common %gs accesses (a
        // ninth, a sixth and a tenth of the instructions of compiled modules)
        // are recognised by their bytes, without the decoder.
        if FAST && sp_pending == 0 && SHORTCUT_FIRST[code[pos] as usize] {
            let b = &code[pos..];
            let (len, target) = match nop_len(b) {
                0 if sp_unchecked => (0, None),
                0 if b[0] == 0x65 => (gs_access_len(b), None),
                0 => direct_branch(b).map_or((0, None), |(n, d)| (n, Some((CODE_BASE + (pos + n) as u64).wrapping_add(d as u64)))),
                n => (n, None),
            };
            if len > 0 && pos as u64 % BUNDLE + len as u64 <= BUNDLE {
                marks.set(pos, TARGET);
                falls_through = b[0] != 0xeb && b[0] != 0xe9;
                if let Some(t) = target {
                    branches.push((pos as u64, t));
                }
                // Not an instruction that a sequence check looks back at.
                ring[k & 3].set_code(iced_x86::Code::INVALID);
                push_prev!();
                pos += len;
                skipped = true;
                continue;
            }
        }
        if skipped {
            decoder.set_position(pos).unwrap();
            decoder.set_ip(CODE_BASE + pos as u64);
            skipped = false;
        }
        decoder.decode_out(&mut ring[k & 3]);
        let cur = &ring[k & 3];
        let off = cur.ip() - CODE_BASE;
        pos += cur.len();
        let fail = |reason: &'static str| Err(Reject { offset: Some(off), reason, detail: text(&cur) });
        if cur.is_invalid() {
            return Err(Reject { offset: Some(off), reason: "undecodable instruction", detail: format!("{:02x?}", &code[off as usize..(off as usize + 15).min(code.len())]) });
        }
        if off % BUNDLE + cur.len() as u64 > BUNDLE {
            return fail("instruction crosses a bundle boundary");
        }
        let bundle = off / BUNDLE;
        marks.set(off as usize, TARGET);
        if sp_pending > 0 {
            let ok = if sp_pending == 2 { is_or_esp(&cur) } else { is_base_add(&cur, Register::RSP) };
            if ok && bundle == sp_bundle {
                marks.set(off as usize, INSIDE);
                sp_pending -= 1;
                push_prev!();
                continue;
            }
            if !(sp_pending == 2 && sp_may_defer) {
                return fail("stack pointer changed without re-sandboxing");
            }
            // A small step without the sequence: a later access must check it.
            sp_pending = 0;
            sp_unchecked = true;
        }
        let fc = cur.flow_control();
        if fc != FlowControl::Next && !branch_prefixes_same_everywhere(&code[off as usize..pos]) {
            return fail("encoding decoded differently by CPU vendors");
        }
        falls_through = matches!(fc, FlowControl::Next | FlowControl::ConditionalBranch | FlowControl::Call | FlowControl::IndirectCall);
        let direct = matches!(fc, FlowControl::Next | FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call);
        let (plain, has_mem, special) = if FAST && direct && !sp_unchecked { plain_operands(&cur) } else { (false, false, 0) };
        if plain {
            // Keyed by opcode and by whether its r/m operand is memory or a register.
            let slot = &mut facts[2 * cur.code() as usize + has_mem as usize];
            if *slot == 0 && special == 0 {
                if let Err(reason) = check_instruction(&cur) {
                    return fail(reason);
                }
                *slot = learn(&cur, &mut factory);
            }
            let f = *slot;
            // Explicit %rsp operands that are only read (mov %rsp,%rbp) stay on the fast path.
            // (push/pop/call with an explicit %rsp operand are not exempt from rule 5: full pass.)
            if f & KNOWN != 0 && f & SLOW == 0 && f & special == 0 && (special == 0 || !is_stack_op(cur)) {
                let (read, write) = (f & MEM_R != 0, f & MEM_W != 0);
                if (read || write) && cur.memory_segment() == Register::FS {
                    return fail("segment override %fs");
                }
                if (write || (read && (m.full || cur.memory_segment() == Register::GS))) && !explicit_memory_safe(&cur, write, m.data_offset) {
                    return fail(if write { "unsandboxed store" } else { "unsandboxed load" });
                }
                if fc != FlowControl::Next {
                    branches.push((off, cur.near_branch_target()));
                }
                push_prev!();
                continue;
            }
        }
        if cur.flow_control() == FlowControl::Return && is_masked_return(&prev!(3), &prev!(2), &prev!(1), &cur) {
            // The pushed value is a bundle start in the domain, and the slot
            // (at %rsp, inside the stack area) is never shared memory.
            for b in [2, 1] {
                marks.set((prev!(b).ip() - CODE_BASE) as usize, INSIDE);
            }
            marks.set(off as usize, INSIDE);
            push_prev!();
            continue;
        }
        if let Err(reason) = check_instruction(&cur) {
            return fail(reason);
        }
        let ip_rel = Some(cur.ip_rel_memory_address()).filter(|_| cur.is_ip_rel_memory_operand());
        let info = factory.info(&cur);
        for mem in info.used_memory() {
            let write = matches!(mem.access(), OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite);
            let read = matches!(mem.access(), OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite);
            let seg_override = matches!(mem.segment(), Register::FS | Register::GS);
            if mem.segment() == Register::FS {
                return fail("segment override %fs");
            }
            if (write || (read && (m.full || seg_override))) && !memory_safe(mem, write, m.data_offset, ip_rel) {
                return fail(if write { "unsandboxed store" } else { "unsandboxed load" });
            }
        }
        let writes_sp = info.used_registers().iter().any(|r| {
            r.register().full_register() == Register::RSP
                && matches!(r.access(), OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite)
        });
        let op0_sp = cur.op_count() > 0 && cur.op0_kind() == OpKind::Register && cur.op0_register().full_register() == Register::RSP;
        // push, pop, call with implicit operands: move %rsp by 8 and touch memory there.
        let implicit = is_stack_op(cur) && !op0_sp;
        if sp_unchecked {
            // Until the check: no branch (a target would receive an unchecked %rsp)
            // and no other write of %rsp but the check itself (push, pop, call).
            let checks = implicit
                || always_accesses(cur.mnemonic()) && info.used_memory().iter().any(|mem| {
                    matches!(mem.access(), OpAccess::Read | OpAccess::Write | OpAccess::ReadWrite)
                        && mem.base() == Register::RSP
                        && mem.index() == Register::None
                        && mem.address_size() == CodeSize::Code64
                        && matches!(mem.segment(), Register::SS | Register::DS)
                        && mem.displacement() <= SP_SLACK
                });
            if cur.flow_control() != FlowControl::Next && !(checks && matches!(cur.flow_control(), FlowControl::Call | FlowControl::IndirectCall)) {
                return fail("branch before the stack pointer was checked");
            }
            if !checks && writes_sp {
                return fail("stack pointer changed without re-sandboxing");
            }
            sp_unchecked = !checks;
        }
        if writes_sp {
            let mask = cur.mnemonic() == Mnemonic::And && op0_sp && cur.op0_register() == Register::RSP
                && matches!(cur.op1_kind(), OpKind::Immediate8to64 | OpKind::Immediate32to64)
                && (-(STACK_ALIGN_MAX as i64)..0).contains(&(cur.immediate(1) as i64));
            if !implicit && !mask {
                sp_pending = 2;
                sp_bundle = bundle;
                // add/sub $imm, %rsp or lea d(%rsp), %rsp (64-bit address, no
                // index) with |imm|, |d| <= SP_STEP_MAX, from a checked %rsp.
                let lea = cur.mnemonic() == Mnemonic::Lea && cur.memory_base() == Register::RSP
                    && cur.memory_index() == Register::None;
                sp_may_defer = !sp_unchecked
                    && op0_sp
                    && cur.op0_register() == Register::RSP
                    && if lea { (cur.memory_displacement64() as i64).unsigned_abs() <= SP_STEP_MAX } else {
                        matches!(cur.mnemonic(), Mnemonic::Add | Mnemonic::Sub)
                            && matches!(cur.op1_kind(), OpKind::Immediate8to64 | OpKind::Immediate32to64)
                            && (cur.immediate(1) as i64).unsigned_abs() <= SP_STEP_MAX
                    };
            }
        }
        match cur.flow_control() {
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call => {
                branches.push((off, cur.near_branch_target()));
            }
            FlowControl::IndirectBranch | FlowControl::IndirectCall => {
                if cur.op0_kind() != OpKind::Register {
                    return fail("indirect branch through memory");
                }
                let reg = cur.op0_register();
                let (mask, add) = (&prev!(2), &prev!(1));
                let same_bundle = mask.ip() >= CODE_BASE && (mask.ip() - CODE_BASE) / BUNDLE == bundle;
                if !(same_bundle && mask.next_ip() == add.ip() && add.next_ip() == cur.ip()
                    && is_mask32(mask, reg) && is_base_add(add, reg))
                {
                    return fail("indirect branch not sandboxed");
                }
                marks.set((add.ip() - CODE_BASE) as usize, INSIDE);
                marks.set(off as usize, INSIDE);
            }
            _ => {}
        }
        push_prev!();
    }
    if sp_pending > 0 || sp_unchecked {
        return Err(Reject { offset: None, reason: "stack pointer changed without re-sandboxing", detail: "at end of code".into() });
    }
    if falls_through {
        // The bytes after the code are the runtime's (int3 to the end of the
        // page, then unmapped), but the verifier does not rely on it (rule 10).
        return Err(Reject { offset: None, reason: "code can run past its end", detail: "the last instruction is not a jump, return, int3 or ud2".into() });
    }
    let tramp_end = TRAMP_BASE + BUNDLE * (1 + m.imports.len() as u64);
    for (from, target) in branches {
        let err = |reason| Err(Reject { offset: Some(from), reason, detail: format!("target 0x{:x}", target) });
        if (CODE_BASE..CODE_BASE + code.len() as u64).contains(&target) {
            match marks.get((target - CODE_BASE) as usize) {
                TARGET => {}
                0 => return err("branch into the middle of an instruction"),
                _ => return err("branch into a sandboxing sequence"),
            }
        } else if !((TRAMP_BASE + BUNDLE..tramp_end).contains(&target) && target % BUNDLE == 0 || RUNTIME_ENTRIES.contains(&target)) {
            return err("direct branch outside the code segment");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

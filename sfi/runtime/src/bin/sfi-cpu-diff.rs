//! sfi-cpu-diff: the verifier's decoder against this CPU's own behaviour.
//!
//! Each case runs a few bytes of machine code in a child process (so that a
//! wild jump or a fault harms nothing) and records what the CPU did: returned
//! normally, or faulted, with the faulting address (`si_addr`) and `%rip`.
//!
//! * Prefixed branches (`66 e9`, `66 0f 85`, `66 eb`, `66 e8`, `66 c3`,
//!   `66 ff e0`): Intel ignores the 66 prefix on a near branch in 64-bit
//!   mode, AMD makes the branch 16-bit (a 2-byte displacement, a target
//!   truncated to 16 bits).  The outcome must be what iced's decoder for this
//!   CPU's vendor predicts, and every encoding whose Intel and AMD decodings
//!   differ must be refused by the verifier.
//! * Implicit and computed addresses: the address the CPU faults on must be
//!   one of the addresses iced reports for the instruction (what rule 3
//!   checks), unless the verifier refuses the instruction in every form (the
//!   bit-string instructions with a register offset, which address operand +
//!   offset / 8).
//! * Accesses that cannot fault (masked moves with a zero mask, prefetch) are
//!   shown not to fault on unmapped memory, and must not check a %rsp step.
//!
//! Prints `PASS cpu-diff/...` / `FAIL cpu-diff/...: why` and exits 1 on a failure.
use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, Register};
use std::arch::x86_64::__cpuid;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Returned,
    Fault { sig: i32, addr: u64, rip: u64 },
}

static mut PIPE_W: i32 = -1;

extern "C" fn on_fault(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    unsafe {
        let addr = (*info).si_addr() as u64;
        let rip = (*(ctx as *mut libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RIP as usize] as u64;
        let msg = [sig as u64, addr, rip];
        libc::write(PIPE_W, msg.as_ptr() as *const _, 24);
        libc::_exit(3);
    }
}

/// Runs `code` (a function: it returns with `ret`) in a child process, at
/// address `at` (mapped read+write+execute there for the child only).
fn run(code: &[u8], at: u64) -> Outcome {
    unsafe {
        let mut fds = [0i32; 2];
        libc::pipe(fds.as_mut_ptr());
        let pid = libc::fork();
        if pid == 0 {
            PIPE_W = fds[1];
            for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGTRAP, libc::SIGFPE] {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_fault as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO;
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
            let p = libc::mmap(at as *mut _, 4096, libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                               libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0);
            if p as u64 != at {
                libc::_exit(4);
            }
            std::ptr::write_bytes(p as *mut u8, 0xcc, 4096);
            std::ptr::copy_nonoverlapping(code.as_ptr(), p as *mut u8, code.len());
            let f: extern "C" fn() -> u64 = std::mem::transmute(p);
            f();
            let msg = [0u64; 3];
            libc::write(PIPE_W, msg.as_ptr() as *const _, 24);
            libc::_exit(0);
        }
        libc::close(fds[1]);
        let mut msg = [0u64; 3];
        let n = libc::read(fds[0], msg.as_mut_ptr() as *mut _, 24);
        libc::close(fds[0]);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        if n != 24 {
            return Outcome::Fault { sig: -1, addr: 0, rip: 0 };
        }
        if msg[0] == 0 { Outcome::Returned } else { Outcome::Fault { sig: msg[0] as i32, addr: msg[1], rip: msg[2] } }
    }
}

/// A module with one entry whose code is `code` then int3.
fn module(code: &[u8]) -> Vec<u8> {
    let mut c = code.to_vec();
    c.push(0xcc);
    c.resize(c.len().div_ceil(32) * 32, 0xcc);
    let data_off = ((0x20000 + c.len() + 0xfff) & !0xfff) as u32;
    let mut m = sfi_verify::MAGIC.to_vec();
    for v in [0u32, c.len() as u32, data_off, 0, 0, 1, 0, 0, 0] {
        m.extend_from_slice(&v.to_le_bytes());
    }
    m.resize(sfi_verify::HEADER_SIZE, 0);
    m.extend_from_slice(&c);
    m.extend_from_slice(&[0, 0, 0, 0, 1, b'f']);
    m
}

fn verdict(code: &[u8]) -> String {
    match sfi_verify::verify(&module(code)) {
        Ok(_) => "accepted".into(),
        Err(e) => e.reason.to_string(),
    }
}

fn movabs(reg: u8, v: u64) -> Vec<u8> {
    let mut b = vec![0x48 | (reg >> 3), 0xb8 + (reg & 7)];
    b.extend_from_slice(&v.to_le_bytes());
    b
}

struct T {
    failed: usize,
}
impl T {
    fn check(&mut self, name: &str, ok: bool, detail: String) {
        if ok {
            println!("PASS cpu-diff/{} ({})", name, detail);
        } else {
            self.failed += 1;
            println!("FAIL cpu-diff/{}: {}", name, detail);
        }
    }
}

const CODE: u64 = 0x7f12_3456_0000; // where the cases run: far from 16-bit addresses
const HOLE: u64 = 0x7f12_3400_0000; // never mapped: the implicit-address cases fault here

fn main() {
    let vendor = {
        let r = __cpuid(0);
        let mut v = Vec::new();
        for x in [r.ebx, r.edx, r.ecx] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        String::from_utf8_lossy(&v).into_owned()
    };
    let amd = vendor == "AuthenticAMD" || vendor == "HygonGenuine";
    println!("cpu-diff: CPU vendor {} ({} decoding rules)", vendor, if amd { "AMD" } else { "Intel" });
    let mut t = T { failed: 0 };

    // ---- prefixed branches.  Each case: clear ZF (so jne is taken), then the
    // branch, then the landing `mov $1,%eax; ret` right after it (every branch
    // aims at the next instruction as Intel decodes it).
    let landing = [0xb8, 1, 0, 0, 0, 0xc3];
    let branches: [(&str, Vec<u8>); 6] = [
        ("jmp_rel32_66", vec![0x66, 0xe9, 0, 0, 0, 0]),
        ("jne_rel32_66", vec![0x66, 0x0f, 0x85, 0, 0, 0, 0]),
        ("jmp_rel8_66", vec![0x66, 0xeb, 0x00]),
        ("call_rel32_66", vec![0x66, 0xe8, 0, 0, 0, 0]),
        ("ret_66", vec![0x66, 0xc3]),
        ("jmp_rax_66", vec![0x66, 0xff, 0xe0]),
    ];
    for (name, enc) in branches {
        // xor %eax,%eax; inc %eax (ZF=0); for jmp *%ax: movabs $landing,%rax
        let mut pre = vec![0x31, 0xc0, 0xff, 0xc0];
        if name == "jmp_rax_66" {
            pre.extend_from_slice(&movabs(0, CODE + (pre.len() + 10 + enc.len()) as u64));
        }
        if name == "call_rel32_66" {
            // Intel: the call lands and pushes 8 bytes; pop them again before returning.
            pre.clear();
        }
        let at = CODE + pre.len() as u64;
        let mut code = [&pre[..], &enc[..]].concat();
        if name == "call_rel32_66" {
            code.extend_from_slice(&[0x58]); // pop %rax (the call's return address)
        }
        code.extend_from_slice(&landing);
        let predict = |opts| {
            let i = Decoder::with_ip(64, &enc, at, opts).decode();
            let c = format!("{:?}", i.code());
            if c.contains("16") || c.ends_with('w') { "16-bit branch" } else { "lands as decoded by Intel" }
        };
        let (pi, pa) = (predict(DecoderOptions::NONE), predict(DecoderOptions::AMD));
        let seen = match run(&code, CODE) {
            Outcome::Returned => "lands as decoded by Intel",
            Outcome::Fault { sig: libc::SIGSEGV, rip, .. } if rip < 0x1_0000 => "16-bit branch",
            other => {
                t.check(&format!("branch/{}", name), false, format!("unexpected outcome {:?}", other));
                continue;
            }
        };
        let want = if amd { pa } else { pi };
        t.check(&format!("branch/{}/cpu-as-predicted", name), seen == want,
                format!("CPU: {}; iced Intel: {}; iced AMD: {}", seen, pi, pa));
        let v = verdict(&[&enc[..], &landing[..5], &[0xcc]].concat());
        let differ = pi != pa;
        t.check(&format!("branch/{}/verifier", name), !differ || v == "encoding decoded differently by CPU vendors",
                format!("decodings {}, verifier: {}", if differ { "differ" } else { "agree" }, v));
    }
    // Without the prefix every one of them lands on every CPU.
    let plain = [0x31, 0xc0, 0xff, 0xc0, 0x0f, 0x85, 0, 0, 0, 0, 0xb8, 1, 0, 0, 0, 0xc3];
    t.check("branch/jne_rel32_plain", run(&plain, CODE) == Outcome::Returned, "lands".into());

    // ---- implicit and computed addresses.  Registers point into HOLE; the CPU's
    // fault address must be one iced reports (rule 3 checks those), or the
    // verifier must refuse the instruction.
    let rdi = HOLE + 0x100;
    let rsi = HOLE + 0x3000;
    let rbx = HOLE + 0x5000;
    let setup = [movabs(7, rdi), movabs(6, rsi), movabs(3, rbx), movabs(0, 0x123 * 8 + 5), movabs(1, 0)].concat();
    let regs = |r: Register, _: usize, _: usize| -> Option<u64> {
        if r.is_segment_register() {
            return Some(0); // flat: %es, %ds, %ss base 0
        }
        let v = match r.full_register() {
            Register::RDI => rdi,
            Register::RSI => rsi,
            Register::RBX => rbx,
            Register::RAX => 0x123 * 8 + 5,
            Register::RCX => 0,
            _ => return None,
        };
        Some(if r.size() >= 8 { v } else { v & ((1u64 << (8 * r.size())) - 1) }) // %al in xlat
    };
    let cases: [(&str, &[u8]); 12] = [
        ("bts_reg_offset", &[0x48, 0x0f, 0xab, 0x07]), // bts %rax,(%rdi)
        ("bt_reg_offset", &[0x48, 0x0f, 0xa3, 0x07]),  // bt %rax,(%rdi)
        ("btr_reg32_offset", &[0x0f, 0xb3, 0x07]),     // btr %eax,(%rdi)
        ("bts_imm", &[0x48, 0x0f, 0xba, 0x2f, 0x3f]),  // bts $63,(%rdi)
        ("stosb", &[0xaa]),
        ("movsb", &[0xa4]),
        ("lodsb", &[0xac]),
        ("xlat", &[0xd7]),
        ("maskmovdqu", &[0x66, 0x0f, 0x74, 0xc9, 0x66, 0x0f, 0xf7, 0xc1]), // pcmpeqb (all-ones mask); maskmovdqu
        ("pop_mem", &[0x50, 0x8f, 0x07]),              // push %rax; pop (%rdi)
        ("push_mem", &[0xff, 0x37]),                   // push (%rdi)
        ("cmpxchg16b", &[0x48, 0x0f, 0xc7, 0x0f]),
    ];
    let mut factory = InstructionInfoFactory::new();
    for (name, insn) in cases {
        let code = [&setup[..], insn, &[0xc3]].concat();
        // the instruction under test is the last one before the ret
        let last = {
            let mut d = Decoder::with_ip(64, &code[setup.len()..], CODE + setup.len() as u64, DecoderOptions::NONE);
            let mut last = d.decode();
            while d.position() < insn.len() {
                last = d.decode();
            }
            last
        };
        let info = factory.info(&last);
        let reported: Vec<u64> = info.used_memory().iter().filter_map(|m| m.virtual_address(0, regs)).collect();
        // (start, bytes) of each access: a CPU may report any byte of one
        // as the fault address (a masked store on Intel the first byte it
        // writes), and the guard zones cover an access's extent from the
        // start rule 3 checks.
        let extents: Vec<(u64, u64)> = info.used_memory().iter()
            .filter_map(|m| m.virtual_address(0, regs).map(|a| (a, m.memory_size().size().max(1) as u64)))
            .collect();
        let v = verdict(&[&[0x65, 0x67][..], insn].concat()); // its %gs form, which is what rule 3 would allow
        match run(&code, CODE) {
            Outcome::Fault { sig: libc::SIGSEGV, addr, .. } => {
                let covered = extents.iter().any(|&(a, n)| addr >= a && addr - a < n);
                // where iced's address is not the CPU's, the verifier must refuse every form
                let refused = !covered && v == "bit-string access with a register offset";
                t.check(&format!("address/{}", name), covered || refused,
                        format!("CPU faulted at HOLE+0x{:x}; iced reports {:x?}; verifier on its %gs form: {}",
                                addr.wrapping_sub(HOLE), reported.iter().map(|a| a.wrapping_sub(HOLE)).collect::<Vec<_>>(), v));
            }
            other => t.check(&format!("address/{}", name), false, format!("expected a fault in the hole, got {:?}", other)),
        }
    }

    // ---- accesses that need not fault: never a check of a %rsp step.
    let step_then = |chk: &[u8]| [&[0x48, 0x81, 0xec, 0, 0, 1, 0][..], chk, &[0xeb, 0x00]].concat(); // sub $0x10000,%rsp; chk; jmp
    let no_fault: [(&str, &[u8]); 4] = [
        ("vmaskmovps_zero_mask", &[0xc5, 0xfc, 0x57, 0xc0, 0xc4, 0xe2, 0x7d, 0x2c, 0x0f]), // vxorps ymm0; vmaskmovps (%rdi),%ymm0,%ymm1
        ("vpmaskmovd_zero_mask_store", &[0xc5, 0xfc, 0x57, 0xc0, 0xc4, 0xe2, 0x7d, 0x8e, 0x0f]),
        ("prefetcht0", &[0x0f, 0x18, 0x0f]),
        ("prefetchw", &[0x0f, 0x0d, 0x0f]),
    ];
    for (name, insn) in no_fault {
        let code = [&setup[..], insn, &[0xc5, 0xf8, 0x77, 0xc3]].concat(); // ...; vzeroupper; ret
        let seen = run(&code, CODE);
        // the same access at (%rsp) after a step (ModRM 0f -> 0c 24)
        let at_rsp: Vec<u8> = {
            let mut b = insn.to_vec();
            let n = b.len();
            b[n - 1] = 0x0c; // reg 1, r/m 100: SIB follows
            b.push(0x24);
            b
        };
        let v = verdict(&step_then(&at_rsp));
        t.check(&format!("no-fault/{}", name), seen == Outcome::Returned && v == "branch before the stack pointer was checked",
                format!("CPU on unmapped memory: {:?}; as a %rsp check: {}", seen, v));
    }

    println!("cpu-diff: {} failed", t.failed);
    std::process::exit(if t.failed == 0 { 0 } else { 1 });
}

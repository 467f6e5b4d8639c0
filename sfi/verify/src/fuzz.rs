//! sfi-fuzz [--seconds N] [SEED_MODULE...]: feeds the verifier random and mutated
//! modules for a bounded time and fails if any input makes it panic, if the
//! verifier's fast path and its reference (full instruction-info) pass disagree,
//! or if an accepted module decodes differently under AMD's rules than under
//! Intel's.  Besides random bytes and mutated modules it generates *operand
//! pairs*: two or three instances of one opcode with different operands
//! ((%rsp), (%rdi), 8(%rsp), %gs:(%edi), RIP-relative, a register), after an
//! optional push, which is what the fast path's per-opcode cache must not
//! generalise wrongly from.  A deterministic stand-in for cargo fuzz, which
//! needs nightly Rust.
use iced_x86::{Decoder, DecoderOptions};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn header(code_len: usize, n_imports: u32) -> Vec<u8> {
    let data_off = ((0x20000 + code_len + 0xfff) & !0xfff) as u32;
    let mut m = sfi_verify::MAGIC.to_vec();
    for v in [0u32, code_len as u32, data_off, 0, 0, 0, n_imports, 0, 0] {
        m.extend_from_slice(&v.to_le_bytes());
    }
    m.resize(sfi_verify::HEADER_SIZE, 0);
    m
}

/// One instance of the opcode `opc` (behind `prefix`) with operand form `form`
/// and ModRM reg field `reg`, cut to its decoded length; None if it does not decode.
fn instance(prefix: &[u8], opc: &[u8], reg: u8, form: usize, at: usize, imm: &[u8]) -> Option<Vec<u8>> {
    let (pre, modrm): (&[u8], Vec<u8>) = match form {
        0 => (&[], vec![reg << 3 | 4, 0x24]),       // (%rsp)
        1 => (&[], vec![reg << 3 | 7]),             // (%rdi)
        2 => (&[], vec![0x40 | reg << 3 | 4, 0x24, 0x08]), // 8(%rsp)
        3 => (&[0x65, 0x67], vec![reg << 3 | 7]),   // %gs:(%edi)
        4 => (&[], vec![reg << 3 | 5, 0, 0, 0, 0]), // disp32(%rip), set below
        _ => (&[], vec![0xc0 | reg << 3 | 1]),      // register
    };
    let mut b = [pre, prefix, opc, &modrm, imm].concat();
    let mut d = Decoder::with_ip(64, &b, sfi_verify::CODE_BASE + at as u64, DecoderOptions::NONE);
    let i = d.decode();
    if i.is_invalid() {
        return None;
    }
    b.truncate(i.len());
    if form == 4 {
        // Point the RIP-relative operand at the data segment (its displacement
        // lies just before the immediate).
        let disp_at = b.len() - imm_len(&i);
        let disp = 0x41000u64.wrapping_sub(sfi_verify::CODE_BASE + (at + b.len()) as u64) as u32;
        if i.memory_displ_size() == 4 && disp_at >= 4 {
            b[disp_at - 4..disp_at].copy_from_slice(&disp.to_le_bytes());
        }
    }
    Some(b)
}

/// Bytes of immediate after the displacement.
fn imm_len(i: &iced_x86::Instruction) -> usize {
    let mut n = 0;
    for k in 0..i.op_count() {
        n += match i.op_kind(k) {
            iced_x86::OpKind::Immediate8 | iced_x86::OpKind::Immediate8to16 | iced_x86::OpKind::Immediate8to32 | iced_x86::OpKind::Immediate8to64 => 1,
            iced_x86::OpKind::Immediate16 => 2,
            iced_x86::OpKind::Immediate32 | iced_x86::OpKind::Immediate32to64 => 4,
            iced_x86::OpKind::Immediate8_2nd => 1,
            _ => 0,
        };
    }
    n
}

/// A module of two or three instances of one random opcode with different
/// operands, each at a bundle start, after an optional `push %rax`.
fn operand_pairs(rng: &mut Rng) -> Vec<u8> {
    let opc: Vec<u8> = match rng.below(5) {
        0 => vec![rng.next() as u8],
        1 => vec![0x0f, rng.next() as u8],
        2 => vec![0x0f, 0x38, rng.next() as u8],
        3 => vec![0x0f, 0x3a, rng.next() as u8],
        _ => vec![0xc4, 0xe0 | (1 + rng.below(3)) as u8, (rng.next() as u8 & 0x87) | 0x78, rng.next() as u8],
    };
    let prefix: &[u8] = [&[][..], &[0x66], &[0xf2], &[0xf3], &[0x48], &[0x41]][rng.below(6)];
    let prefix = if opc[0] == 0xc4 { &[][..] } else { prefix };
    let reg = rng.below(8) as u8;
    let imm: Vec<u8> = (0..4).map(|_| rng.next() as u8).collect();
    let mut code = Vec::new();
    for n in 0..2 + rng.below(2) {
        let at = code.len();
        let mut bundle = Vec::new();
        if rng.below(2) == 0 {
            bundle.push(0x50); // push %rax
        }
        match instance(prefix, &opc, if rng.below(4) == 0 { rng.below(8) as u8 } else { reg }, rng.below(6), at + bundle.len(), &imm) {
            Some(i) => bundle.extend_from_slice(&i),
            None if n == 0 => return Vec::new(),
            None => {}
        }
        bundle.resize(32, 0xcc);
        code.extend_from_slice(&bundle);
    }
    code.extend_from_slice(&[0xcc; 32]);
    let mut m = header(code.len(), 0);
    // a data segment of 4 KiB right after the code's page, for RIP-relative stores
    let data_off = ((0x20000 + code.len() + 0xfff) & !0xfff) as u32;
    m[16..20].copy_from_slice(&data_off.to_le_bytes());
    m[24..28].copy_from_slice(&0x40000u32.to_le_bytes()); // bss
    m.extend_from_slice(&code);
    m
}

/// Whether an accepted module's code decodes to the same instructions under
/// AMD's rules (iced's AMD decoder: 16-bit near branches, no o64 far
/// branches, ud0 without ModRM...) as under Intel's.
fn same_for_amd(m: &sfi_verify::Module) -> bool {
    let mut intel = Decoder::with_ip(64, m.code, sfi_verify::CODE_BASE, DecoderOptions::NONE);
    let mut amd = Decoder::with_ip(64, m.code, sfi_verify::CODE_BASE, DecoderOptions::AMD);
    while intel.can_decode() {
        let (a, b) = (intel.decode(), amd.decode());
        if a.len() != b.len() || a.code() != b.code() {
            return false;
        }
    }
    true
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut secs = 10.0;
    if args.len() >= 2 && args[0] == "--seconds" {
        secs = args[1].parse().expect("--seconds N");
        args.drain(..2);
    }
    let seeds: Vec<Vec<u8>> = args.iter().map(|p| std::fs::read(p).expect("seed module")).collect();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let (mut n, mut accepted, mut bytes) = (0u64, 0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut input = Vec::new();
    while Instant::now() < deadline {
        for _ in 0..256 {
            input.clear();
            match rng.below(6) {
                4 | 5 => input = operand_pairs(&mut rng),
                0 => {
                    // random bytes, sometimes behind a valid magic
                    let len = rng.below(300);
                    if rng.below(2) == 0 {
                        input.extend_from_slice(sfi_verify::MAGIC);
                    }
                    input.extend((0..len).map(|_| rng.next() as u8));
                }
                1 | 2 => {
                    // a valid container holding random code: exercises the instruction checks
                    let code_len = 32 * (1 + rng.below(32));
                    input = header(code_len, rng.below(3) as u32);
                    input.extend((0..code_len).map(|_| rng.next() as u8));
                    input.extend_from_slice(&[0, 0, 0, 0][..0]);
                }
                _ if !seeds.is_empty() => {
                    // mutations of real modules
                    input.extend_from_slice(&seeds[rng.below(seeds.len())]);
                    for _ in 0..1 + rng.below(8) {
                        let at = rng.below(input.len());
                        match rng.below(4) {
                            0 => input[at] ^= 1 << rng.below(8),
                            1 => input[at] = rng.next() as u8,
                            2 => input.truncate(at),
                            _ => input.insert(at, rng.next() as u8),
                        }
                        if input.is_empty() {
                            break;
                        }
                    }
                }
                _ => input.extend((0..64).map(|_| rng.next() as u8)),
            }
            bytes += input.len() as u64;
            n += 1;
            let data = input.clone();
            // The fast path (per-opcode cache) must decide exactly as the full pass.
            let same = |a: Result<sfi_verify::Module, sfi_verify::Reject>, b: Result<sfi_verify::Module, sfi_verify::Reject>| match (a, b) {
                (Ok(m), Ok(_)) if !same_for_amd(&m) => {
                    println!("sfi-fuzz: an accepted module decodes differently on AMD");
                    None
                }
                (Ok(_), Ok(_)) => Some(true),
                (Err(x), Err(y)) if x.offset == y.offset && x.reason == y.reason => Some(false),
                _ => None,
            };
            match std::panic::catch_unwind(|| same(sfi_verify::verify(&data), sfi_verify::verify_reference(&data))) {
                Ok(Some(true)) => accepted += 1,
                Ok(Some(false)) => {}
                Ok(None) => {
                    let path = "sfi-fuzz-mismatch.bin";
                    std::fs::write(path, &input).ok();
                    println!("sfi-fuzz: fast and reference verification disagree on an input (saved to {})", path);
                    std::process::exit(1);
                }
                Err(_) => {
                    let path = "sfi-fuzz-crash.bin";
                    std::fs::write(path, &input).ok();
                    println!("sfi-fuzz: verifier panicked on an input (saved to {})", path);
                    std::process::exit(1);
                }
            }
        }
    }
    println!("sfi-fuzz: {} inputs ({} MiB), {} accepted, no crash", n, bytes >> 20, accepted);
}

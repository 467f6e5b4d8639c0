//! sfi-fuzz [--seconds N] [SEED_MODULE...]: feeds the verifier random and mutated
//! modules for a bounded time and fails if any input makes it panic or if the
//! verifier's fast path and its reference (full instruction-info) pass disagree.  A
//! deterministic stand-in for cargo fuzz, which needs nightly Rust.
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
            match rng.below(4) {
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

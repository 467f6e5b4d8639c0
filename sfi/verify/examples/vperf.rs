//! Verifier profiling aid (not part of the verifier): `cargo run --release --example vperf MODE MODULE...`
//! runs 20 passes (VPERF_N) over the modules' code: 0 = decode only, 1 = decode + memory info,
//! 2 = decode + full info, 3 = `verify`, 4 = count of slow-path candidates; time it with
//! /usr/bin/time.  `vperf cmp FILE` prints the fast and the reference verdicts for one module.
use iced_x86::*;
use std::time::Instant;
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args[0] == "cmp" { cmp(&args[1]); return; }
    let only: usize = args.remove(0).parse().unwrap();
    let mods: Vec<Vec<u8>> = args.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let codes: Vec<&[u8]> = mods.iter().map(|m| sfi_verify::parse(m).unwrap().code).collect();
    let total: usize = codes.iter().map(|c| c.len()).sum();
    let mib = total as f64 / (1 << 20) as f64;
    for mode in only..only + 1 {
        let t = Instant::now();
        let mut n = 0u64;
        let passes: usize = std::env::var("VPERF_N").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
        for _ in 0..passes {
            if mode == 3 { for m in &mods { sfi_verify::verify(m).unwrap(); } continue; }
            let mut fac = InstructionInfoFactory::new();
            for c in &codes {
                let mut d = Decoder::with_ip(64, c, 0x20000, DecoderOptions::NONE);
                let mut i = Instruction::default();
                while d.can_decode() {
                    d.decode_out(&mut i);
                    n += 1;
                    if mode == 1 { n += fac.info_options(&i, InstructionInfoOptions::NO_REGISTER_USAGE).used_memory().len() as u64; }
                    if mode == 4 {
                        let direct = matches!(i.flow_control(), FlowControl::Next | FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call);
                        let rsp = (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register && matches!(i.op_register(k).full_register(), Register::RSP | Register::R14));
                        if !direct || rsp { n += 1000000; }
                    }
                    if mode == 2 { n += fac.info(&i).used_registers().len() as u64; }
                }
            }
        }
        let _ = t; println!("mode {} {:.3} MiB x{} ({})", mode, mib, passes, n);
    }
}
#[allow(dead_code)]
fn cmp(p: &str) {
    let b = std::fs::read(p).unwrap();
    println!("fast: {:?}", sfi_verify::verify(&b).map(|_| ()));
    println!("ref:  {:?}", sfi_verify::verify_reference(&b).map(|_| ()));
}

// The network server is linked at a base of its own, not user/lib/rt/link.ld's
// 0x400000, so that an instruction profile (tools/iprof.py --io) can tell
// its addresses from the root task's and netstack's.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--defsym=KEEP_LINK_BASE=0x10000000");
}

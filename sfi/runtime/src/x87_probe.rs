// Included by the tests of both runtimes (sfi-selftest on the host, ktest in
// Keep), which check that a domain call leaves the x87 stack empty.

/// Whether the x87 register stack is empty (tag word all ones, from fnstenv).
fn x87_empty() -> bool {
    let mut env = [0u16; 14];
    // SAFETY: fnstenv writes the 28-byte environment into env; fldenv puts it
    // back (fnstenv also masks the x87 exceptions).
    unsafe { core::arch::asm!("fnstenv [{0}]", "fldenv [{0}]", in(reg) env.as_mut_ptr()) };
    env[4] == 0xffff
}

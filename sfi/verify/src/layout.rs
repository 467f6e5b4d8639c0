//! The pages a runtime writes below a module's code: the entry page and the
//! trampoline bundles (docs/sfi.md, "Address layout").  Not part of the
//! verifier; here because both runtimes (`sfi/runtime` on the host,
//! `user/sfi-rt` in Keep) build them the same way and both depend on this
//! crate.

use alloc::vec;
use alloc::vec::Vec;

use crate::{BASE_SLOT, BUNDLE, TRAMP_BASE};

const PAGE: u64 = 4096;

/// The runtime's code page below the trampolines.
pub const ENTRY_PAGE: u64 = TRAMP_BASE - PAGE;

/// `and $-32,%r11d; add %r14,%r11; call *%r11`, ending at TRAMP_BASE (%r14 =
/// B, set by the entry stub), so that an entry function returns to
/// trampoline 0.
const ENTRY_CALL: [u8; 10] = [0x41, 0x83, 0xe3, 0xe0, 0x4d, 0x01, 0xf3, 0x41, 0xff, 0xd3];

/// `len` bytes from ENTRY_PAGE on: `int3` everywhere but the base slot (B at
/// BASE_SLOT, read by the domain's sandboxing sequences; its bundle starts
/// with `int3`), the entry sequence at the end of the entry page, and the
/// trampoline bundles: bundle 0 jumps to `return_to` (back to the host),
/// bundle i >= 1 sets %r10d = i-1 and jumps to `host_call` (import i-1).
pub fn runtime_pages(len: usize, n_imports: usize, base: u64, return_to: u64, host_call: u64) -> Vec<u8> {
    let mut t = vec![0xccu8; len];
    let slot = (BASE_SLOT - ENTRY_PAGE) as usize;
    t[slot..slot + 8].copy_from_slice(&base.to_le_bytes());
    t[PAGE as usize - ENTRY_CALL.len()..PAGE as usize].copy_from_slice(&ENTRY_CALL);
    let mut put = |bundle: usize, idx: Option<u32>, target: u64| {
        let mut b = Vec::new();
        if let Some(i) = idx {
            b.extend_from_slice(&[0x41, 0xba]); // mov $i, %r10d
            b.extend_from_slice(&i.to_le_bytes());
        }
        b.extend_from_slice(&[0x49, 0xbb]); // movabs $target, %r11
        b.extend_from_slice(&target.to_le_bytes());
        b.extend_from_slice(&[0x41, 0xff, 0xe3]); // jmp *%r11
        let at = PAGE as usize + bundle * BUNDLE as usize;
        t[at..at + b.len()].copy_from_slice(&b);
    };
    put(0, None, return_to);
    for i in 0..n_imports {
        put(i + 1, Some(i as u32), host_call);
    }
    t
}

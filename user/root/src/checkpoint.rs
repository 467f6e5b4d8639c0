//! The shell's `checkpoint` and `persist`: a checkpoint taken now, and the
//! last one with the state of the area, asked of the description's
//! checkpointer (docs/persistence.md).

use keep_abi::{SELF_ASPACE, Sender};
use keep_checkpointer::Admin;
use keep_rt::println;
use keep_system::Kind;

use crate::Root;

/// The checkpointer named `name` (or the first one) of the running
/// description: its admin capability at a new slot.
fn checkpointer(root: &mut Root, cmd: &str, name: Option<&str>) -> Option<(u64, alloc::string::String)> {
    let Some(sys) = root.system.as_ref() else {
        println!("{cmd}: no system description runs (the checkpointer starts from it)");
        return None;
    };
    let found = sys
        .entries
        .iter()
        .position(|e| e.kind == Kind::Server && e.program == "checkpointer" && name.is_none_or(|n| n == e.name));
    let Some(i) = found else {
        match name {
            Some(n) => println!("{cmd}: the system description has no checkpointer named '{n}'"),
            None => println!("{cmd}: the system description has no checkpointer (program=checkpointer)"),
        }
        return None;
    };
    let server = sys.entries[i].name.clone();
    let s = root.slots.alloc()?;
    match sys.admin(i, s) {
        Ok(_) => Some((s, server)),
        Err(e) => {
            println!("{cmd}: the checkpointer '{server}': {e}");
            root.slots.free(s);
            None
        }
    }
}

fn done(root: &mut Root, s: u64) {
    let _ = SELF_ASPACE.delete_cap(s);
    root.slots.free(s);
}

/// `checkpoint [server]`
pub fn checkpoint(root: &mut Root, name: Option<&str>) {
    let Some((s, server)) = checkpointer(root, "checkpoint", name) else { return };
    match Admin(Sender(s)).checkpoint() {
        Ok(r) if r.words[0] == keep_checkpointer::OK => println!(
            "checkpoint {} committed by '{server}': {} pages written, {} blocks",
            r.words[1], r.words[2], r.words[3]
        ),
        Ok(r) => println!("checkpoint: '{server}': {}", r.text),
        Err(e) => println!("checkpoint: the call to '{server}' failed: {}", keep_abi::Error(e)),
    }
    done(root, s);
}

/// `persist [server]`
pub fn persist(root: &mut Root, name: Option<&str>) {
    let Some((s, server)) = checkpointer(root, "persist", name) else { return };
    match Admin(Sender(s)).status() {
        Ok(r) => {
            println!("persist: checkpointer '{server}'");
            for l in r.text.lines() {
                println!("  {l}");
            }
        }
        Err(e) => println!("persist: the call to '{server}' failed: {}", keep_abi::Error(e)),
    }
    done(root, s);
}

/// KERNEL.SET_SEAL_KEY checked by the root task, which holds the only
/// KERNEL capability with WRITE (at autotest, before ktest): refused while
/// a process is exported and for a key it cannot read, nothing changed
/// then; accepted with nothing exported, after which an export seals and
/// opens under the new keys.  Then a key from RDRAND and the TSC replaces
/// the test's, so that the rest of the boot does not seal under a key
/// written in this program.  True if every check held.
pub fn seal_key_check(root: &mut Root) -> bool {
    use keep_abi::{ACCOUNT, Error, KERNEL};
    let Ok(t) = keep_loader::thread::create(&mut root.slots, "root-sealed", 1, |_| 0, &[]) else {
        println!("root: SET_SEAL_KEY: no process to export");
        return false;
    };
    let Some(d) = root.slots.alloc() else { return false };
    let key = [0x5au8; 32];
    let mut other = key;
    other[31] ^= 1;
    let mut ok = true;
    let mut check = |what: &str, good: bool| {
        if !good {
            println!("root: SET_SEAL_KEY: {what} ... FAILED");
            ok = false;
        }
    };
    check("with nothing exported", KERNEL.set_seal_key(&key).is_ok());
    let out = ACCOUNT.revoke_process(t.process.0, d).is_ok();
    check("REVOKE_PROCESS under the key", out);
    if out {
        check("refused while a process is exported", KERNEL.set_seal_key(&other) == Err(Error::BAD_STATE));
        check("the export opens: the refusal changed no key", ACCOUNT.restore_process(d).is_ok());
    }
    // SAFETY: never read here; the kernel must refuse the address (page 0 is not mapped).
    let unmapped = unsafe { &*(0x10usize as *const [u8; 32]) };
    check("refused for a key the caller cannot read", KERNEL.set_seal_key(unmapped) == Err(Error::FAULT));
    check("again with nothing exported", KERNEL.set_seal_key(&other).is_ok());
    let out = ACCOUNT.revoke_process(t.process.0, d).is_ok();
    check("an export under the new keys", out && ACCOUNT.restore_process(d).is_ok());
    let _ = SELF_ASPACE.delete_cap(d);
    root.slots.free(d);
    t.kill(&mut root.slots);
    let mut fresh = [0u8; 32];
    // SAFETY: CPUID, RDRAND (only where CPUID reports it) and RDTSC have no
    // memory effects.  Without RDRAND the TSC alone is the key (weak).
    let rdrand = core::arch::x86_64::__cpuid(1).ecx & (1 << 30) != 0;
    for (i, w) in fresh.chunks_exact_mut(8).enumerate() {
        let mut r = 0u64;
        let got = if rdrand { unsafe { core::arch::x86_64::_rdrand64_step(&mut r) } } else { 0 };
        let tsc = unsafe { core::arch::x86_64::_rdtsc() };
        w.copy_from_slice(&((if got == 1 { r } else { 0 }) ^ tsc.rotate_left(i as u32 * 16)).to_le_bytes());
    }
    check("a fresh key", KERNEL.set_seal_key(&fresh).is_ok());
    if ok {
        println!("root: SET_SEAL_KEY checks ... ok");
    }
    ok
}

//! The persistent programs of the description (`persistent` lines,
//! docs/persistence.md, "What persists").  The persistent pool is shut at
//! boot until it is restored from a checkpoint or opened empty: by the
//! checkpointer (a server with `checkpoint`), which restores the newest
//! checkpoint or opens the pool when there is none; by the root task itself
//! with `fresh` on the kernel command line (`boot fresh`), or when the
//! description has no checkpointer.  Once the pool is open, an empty pool
//! is a fresh start: the root task builds each persistent program from it.
//! A restored pool holds them already, where the checkpoint left them.

use alloc::format;
use alloc::string::String;

use keep_abi::{Account, CHECKPOINT, PERSISTENT_MEMORY, SELF_ASPACE, TIMER, rights, slot};
use keep_loader::{Grant, Loader, Spec};
use keep_rt::println;
use keep_system::desc::Persistent;
use keep_system::names;

use crate::Root;

// CHECKPOINT.INFO's states: shut, then restoring, then open.
const SHUT: u64 = 0;
const OPEN: u64 = 2;
/// How long the root task waits for the checkpointer to restore or open
/// the pool (a restore of a large checkpoint reads all of it).
const WAIT_MS: u64 = 120_000;
/// The name service's sender a persistent program gets carries a payload
/// the name service answers nothing for (persistent programs use no
/// servers); a restore makes it stale.
const NO_CLIENT: u64 = keep_system::desc::MAX_ENTRIES as u64 + 1;

/// Before the system starts: `fresh` opens the pool empty (the
/// checkpointer then restores nothing), as does a description (the boot
/// image's file `file`) without a checkpointer.  Returns whether the pool
/// was opened here.
pub fn before_system(root: &Root, file: &str, fresh: bool) -> bool {
    let has_checkpointer = root
        .image
        .as_ref()
        .and_then(|img| img.find(file))
        .and_then(|f| core::str::from_utf8(f.data).ok())
        .and_then(|t| keep_system::desc::parse(t).ok())
        .is_some_and(|d| d.entries.iter().any(|e| e.checkpoint));
    if !(fresh || !has_checkpointer) || !CHECKPOINT.info().is_ok_and(|i| i.0 == SHUT) {
        return false;
    }
    match CHECKPOINT.open() {
        Ok(()) => {
            if fresh {
                println!("persist: boot fresh: the persistent pool starts empty; the checkpoint area is kept until the next checkpoint replaces it");
            }
            true
        }
        Err(e) => {
            println!("persist: OPEN of the persistent pool: {e}");
            false
        }
    }
}

/// After the system started: wait for the pool to be restored or opened,
/// then build the persistent programs if it is empty.
pub fn after_system(root: &mut Root) {
    let list: alloc::vec::Vec<Persistent> = match root.system.as_ref() {
        Some(sys) => sys.persistent().to_vec(),
        None => return,
    };
    if list.is_empty() {
        return;
    }
    let start = TIMER.now_ms().unwrap_or(0);
    let mut said = false;
    while CHECKPOINT.info().is_ok_and(|i| i.0 < OPEN) {
        let now = TIMER.now_ms().unwrap_or(u64::MAX);
        if now > start + WAIT_MS {
            println!("persist: the checkpointer neither restored nor opened the persistent pool in {} s; opening it empty", WAIT_MS / 1000);
            let _ = CHECKPOINT.open();
            break;
        }
        if !said && now > start + 2000 {
            println!("persist: waiting for the checkpointer to restore the persistent pool");
            said = true;
        }
        let _ = TIMER.sleep(20);
    }
    let Ok((_, epoch, frames, used)) = CHECKPOINT.info() else { return };
    if used > 0 {
        println!(
            "persist: the persistent pool was restored (epoch {epoch}, {used} of {frames} frames): its {} programs go on where they were",
            list.len()
        );
        return;
    }
    for p in &list {
        match build(root, p) {
            // The TSC (instructions under -icount): persist.restore's fresh boot (tools/bench.py).
            Ok(()) => println!(
                "persist: '{}' started from the persistent pool ({} frames of account) at TSC {}",
                p.name,
                p.limit,
                // SAFETY: rdtsc only reads the time-stamp counter.
                unsafe { core::arch::x86_64::_rdtsc() }
            ),
            Err(why) => println!("persist: '{}' (line {}): {why}", p.name, p.line),
        }
    }
}

/// A persistent program from the pool: its account (in its ACCOUNT slot),
/// its pages and its capabilities (the kernel's console write-only, the
/// timer read-only, the name service's sender), started.
fn build(root: &mut Root, p: &Persistent) -> Result<(), String> {
    let img = root.image.as_ref().ok_or("no boot image")?;
    let elf = img.find(&p.program).ok_or_else(|| format!("no program '{}' in the boot image", p.program))?.data;
    let [acct, console, names_cap] = [(); 3].map(|_| root.slots.alloc());
    let (Some(acct), Some(console), Some(names_cap)) = (acct, console, names_cap) else {
        for s in [acct, console, names_cap].into_iter().flatten() {
            root.slots.free(s);
        }
        return Err(String::from("no free slot"));
    };
    let r = (|| {
        PERSISTENT_MEMORY.create_account(acct).map_err(|e| format!("CREATE_ACCOUNT: {e}"))?;
        PERSISTENT_MEMORY.donate(acct, p.limit).map_err(|e| format!("DONATE of {} frames: {e}", p.limit))?;
        let mut grants = alloc::vec![Grant { src: acct, dest: slot::ACCOUNT, rights: 0 }];
        if p.console {
            SELF_ASPACE.copy_cap(slot::CONSOLE, console, rights::WRITE).map_err(|e| format!("COPY_CAP: {e}"))?;
            grants.push(Grant { src: console, dest: slot::CONSOLE, rights: 0 });
        }
        if p.timer {
            grants.push(Grant { src: slot::TIMER, dest: slot::TIMER, rights: rights::READ });
        }
        if let Some(init) = root.system.as_ref().and_then(|s| s.init_process())
            && init.mint(names_cap, NO_CLIENT, rights::WRITE | rights::CALL).is_ok()
        {
            grants.push(Grant { src: names_cap, dest: names::NAMES_SLOT, rights: 0 });
        }
        let spec = Spec { name: &p.name, elf, arg0: p.arg, arg1: 0, grants: &grants, blob: None };
        let mut l = Loader::new(&mut root.slots);
        l.memory = PERSISTENT_MEMORY;
        l.account = Account(acct);
        let child = l.load(&spec).map_err(|e| format!("cannot load: {e}"))?;
        let started = child.process.start().map_err(|e| format!("START: {e}"));
        for s in [child.process.0, child.aspace.0] {
            let _ = SELF_ASPACE.delete_cap(s);
            root.slots.free(s);
        }
        started
    })();
    if r.is_err() {
        let _ = Account(acct).destroy_all(slot::MEMORY);
    }
    // The program holds what it needs; the root task keeps nothing of it
    // (a capability of the root task's would not persist anyway).
    for s in [acct, console, names_cap] {
        let _ = SELF_ASPACE.delete_cap(s);
        root.slots.free(s);
    }
    r
}

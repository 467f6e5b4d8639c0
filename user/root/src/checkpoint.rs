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

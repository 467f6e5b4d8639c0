//! The shell's `vault`: the state of the description's vault
//! (docs/trusted-core.md, "Secure storage"), which shows no secret.

use keep_abi::{SELF_ASPACE, Sender};
use keep_rt::println;
use keep_system::Kind;

use crate::Root;

/// `vault`: the description's vault's STATS, each client by its entry's
/// name (the vault knows only their places in the description).
pub fn vault(root: &mut Root) {
    let Some(sys) = root.system.as_ref() else {
        println!("vault: no system description runs (the vault starts from it)");
        return;
    };
    let Some(i) = sys.entries.iter().position(|e| e.kind == Kind::Server && e.program == "vault") else {
        println!("vault: the system description has no vault (program=vault)");
        return;
    };
    let server = sys.entries[i].name.clone();
    let names: alloc::vec::Vec<alloc::string::String> = sys.entries.iter().map(|e| e.name.clone()).collect();
    let Some(s) = root.slots.alloc() else { return };
    let r = match sys.admin(i, s) {
        Ok(_) => keep_vault::stats(Sender(s)),
        Err(e) => {
            println!("vault: '{server}': {e}");
            root.slots.free(s);
            return;
        }
    };
    match r {
        Ok((_, text)) => {
            println!("vault '{server}':");
            for l in text.lines() {
                // "client N: ..." names the description's entry N.
                let named = l
                    .strip_prefix("client ")
                    .and_then(|t| t.split_once(':'))
                    .and_then(|(n, rest)| Some((names.get(n.parse::<usize>().ok()?)?, rest)));
                match named {
                    Some((name, rest)) => println!("  {name}:{rest}"),
                    None => println!("  {l}"),
                }
            }
        }
        Err(e) => println!("vault: the call to '{server}' failed: {}", keep_vault::status_text(e)),
    }
    let _ = SELF_ASPACE.delete_cap(s);
    root.slots.free(s);
}

//! The shell's view of the running system (system.rs): starting it at
//! boot, `run` of a program of the description, and what `ps` and `mem`
//! add (banks, accounts, and each described program's bank, supervisor and
//! restarts, from init's table).  Supervision is init's: the shell takes
//! no part in it.

use alloc::vec::Vec;

use keep_abi::state_name;
use keep_rt::println;
use keep_system::Kind;
use keep_system::init::{EntryStatus, phase};

use crate::Root;
use crate::system::System;

/// Builds the system from boot-image file `file`; a refusal is reported
/// (with the line) and the shell runs without it.
pub fn boot(root: &mut Root, file: &str) {
    let Some(img) = root.image.as_ref() else { return };
    match System::boot(&mut root.slots, img, file, root.mux.as_mut()) {
        Ok(sys) => {
            let servers = sys.entries.iter().filter(|e| e.kind == Kind::Server).count();
            println!(
                "system: {file}: {} banks, {servers} servers started, {} programs to run",
                sys.banks.len(),
                sys.entries.len() - servers
            );
            // The block server prints its device's line once it serves:
            // wait for that (a STATS call is answered only from its
            // receive loop), so that the line comes before the prompt and
            // not in the middle of what is typed at it.  A server that
            // died or is being restarted answers at once with an error.
            if let Some(i) = sys.server_running("blk")
                && let Some(s) = root.slots.alloc()
            {
                if let Ok(admin) = sys.admin(i, s) {
                    let _ = keep_blk::Admin(admin).stats();
                }
                let _ = keep_abi::SELF_ASPACE.delete_cap(s);
                root.slots.free(s);
            }
            // The same for the network server.
            if let Some(i) = sys.server_running("net")
                && let Some(s) = root.slots.alloc()
            {
                if let Ok(admin) = sys.admin(i, s) {
                    let _ = keep_net::Admin(admin).stats();
                }
                let _ = keep_abi::SELF_ASPACE.delete_cap(s);
                root.slots.free(s);
            }
            root.system = Some(sys);
        }
        Err(e) if e.line > 0 => {
            println!("system: {file}: line {}: {}; the description is refused, the shell runs without it", e.line, e.what)
        }
        Err(e) => println!("system: {file}: {}; the shell runs without the system", e.what),
    }
}

/// How many times the root task builds the system again after init ended.
pub const INIT_RESTARTS: u32 = 3;

/// The root task supervises init, the root of the supervision tree: when
/// init has ended (a crash, or `kill init`), the servers it supervised are
/// no longer watched and the name service is gone, so the whole system is
/// shut down (every described bank destroyed, and with it every server and
/// program instance) and built again from its description, at most
/// INIT_RESTARTS times.  Called after each command and while the shell
/// polls the console (with background programs); true if it reported
/// something.
pub fn supervise_init(root: &mut Root) -> bool {
    let Some(how) = root.system.as_ref().and_then(|s| s.init_ended()) else { return false };
    let sys = root.system.take().expect("checked");
    let file = sys.file.clone();
    root.forget_workhorse();
    if root.init_restarts >= INIT_RESTARTS {
        println!("system: init ended: {how}; not restarted again ({INIT_RESTARTS} restarts used): the shell runs without the system");
        sys.shut_down(&mut root.slots);
        return true;
    }
    root.init_restarts += 1;
    println!(
        "system: init ended: {how}; the system is built again from {file} ({} of {INIT_RESTARTS}): every server and program of it restarts",
        root.init_restarts
    );
    sys.shut_down(&mut root.slots);
    boot(root, &file);
    true
}

/// `run NAME [arg0]` of a program of the description; false if `name` is
/// not one (the shell's own `run` goes on).
pub fn run(root: &mut Root, name: &str, arg0: u64, background: bool) -> bool {
    let Some(sys) = root.system.as_mut() else { return false };
    if !sys.has_program(name) {
        return false;
    }
    if background {
        println!("run: {name} comes from the system description and runs in the foreground only");
        return true;
    }
    match sys.run_program(&mut root.slots, name, arg0) {
        Ok(s) => println!("run: {name} {s}"),
        Err(e) => println!("run: {name}: {e}"),
    }
    true
}

/// A server's state for `ps` and `net`: its process's, or its phase.
pub fn phase_name(t: &EntryStatus) -> &'static str {
    match t.phase {
        phase::RUNNING => state_name(t.state),
        phase::WAITING => "restarting",
        phase::DOWN => "down",
        _ => "-",
    }
}

/// `ps`: the programs of the description.
pub fn ps(root: &Root) {
    let Some(sys) = root.system.as_ref() else { return };
    let table = match sys.status() {
        Ok(t) => t,
        Err(e) => {
            println!("system ({}): {e}", sys.file);
            Vec::new()
        }
    };
    println!("system ({}): {:<16} {:<7} {:<10} {:>6}  {:<10} {:>8}  state", sys.file, "name", "kind", "bank", "limit", "supervisor", "restarts");
    // init itself: on a bank of its own, supervised by the root task.
    let init_state = sys.init_process().map_or("-", |p| p.status().map_or("gone", |s| state_name(s.state)));
    let restarts = alloc::format!("{}/{INIT_RESTARTS}", root.init_restarts);
    println!("  {:<16} {:<7} {:<10} {:>6}  {:<10} {:>8}  {init_state}", "init", "init", "(own)", "-", "root", restarts);
    for (i, e) in sys.entries.iter().enumerate() {
        let (kind, sup, restarts, state) = match e.kind {
            Kind::Server => {
                let t = table.get(i).copied().unwrap_or_default();
                let state = phase_name(&t);
                ("server", "init", alloc::format!("{}/{}", t.restarts, e.max_restarts), state)
            }
            Kind::Program => {
                let state = match &e.instance {
                    Some(i) => i.process.status().map_or("?", |s| state_name(s.state)),
                    None if e.last.is_some() => "ended",
                    None => "-",
                };
                ("program", "-", alloc::string::String::from("-"), state)
            }
        };
        println!("  {:<16} {:<7} {:<10} {:>6}  {:<10} {:>8}  {state}", e.name, kind, e.bank, e.limit, sup, restarts);
    }
}

/// `mem`: the banks from the prime bank down, and the accounts in them.
pub fn mem(root: &Root) {
    let Some(sys) = root.system.as_ref() else {
        println!("space banks: none (no system description running)");
        return;
    };
    let rep = match sys.prime.report() {
        Ok(r) => r,
        Err(e) => {
            println!("space banks: REPORT failed: {e}");
            return;
        }
    };
    let table = sys.status().unwrap_or_default();
    // Banks of programs started by `run`.
    let runs: Vec<(u64, &str)> = root.banked.iter().filter_map(|(_, b, n)| Some((b.info().ok()?.index, n.as_str()))).collect();
    let name_of = |index: u64| match (sys.bank_name(index), sys.instance_of(index, &table)) {
        (Some(n), _) => alloc::format!("{n}"),
        (None, Some(inst)) => alloc::format!("{inst} (instance)"),
        (None, None) => match runs.iter().find(|r| r.0 == index) {
            Some((_, n)) => alloc::format!("{n} (run)"),
            None => alloc::format!("#{index}"),
        },
    };
    println!("space banks (frames): {:<24} {:>8} {:>8} {:>5} {:>7}", "bank", "limit", "used", "subs", "objects");
    for b in &rep.banks {
        let name = name_of(b.index);
        let indent = "  ".repeat(b.depth as usize);
        println!("  {:<41} {:>8} {:>8} {:>5} {:>7}", alloc::format!("{indent}{name}"), b.limit, b.used, b.sub_banks, b.objects);
    }
    println!("accounts (frames):    {:<24} {:>8} {:>8} {:>8} {:>5}", "bank", "free", "used", "taken", "out");
    for a in &rep.accounts {
        let bank = name_of(a.bank);
        println!("  {:<41} {:>8} {:>8} {:>8} {:>5}", bank, a.free, a.used, a.taken, a.out);
    }
}

/// Frames of the bank a program started by `run` gets, and of its account.
pub const RUN_BANK_LIMIT: u64 = 2048;
pub const RUN_ACCOUNT_FRAMES: u64 = 64;

/// Loads `spec` on a new sub-bank of the prime bank: its address space,
/// process and page tables from an account of that bank, its pages from
/// the bank.  The program's account slot gets that account instead of
/// the root task's.
pub fn load_banked(root: &mut Root, spec: &keep_loader::Spec) -> Option<keep_loader::Child> {
    let prime = root.system.as_ref()?.prime;
    let (b, a) = match (root.slots.alloc(), root.slots.alloc()) {
        (Some(b), Some(a)) => (b, a),
        _ => {
            println!("run: no free slot");
            return None;
        }
    };
    let made = prime
        .create_bank(RUN_BANK_LIMIT, b)
        .and_then(|bank| bank.alloc_account(RUN_ACCOUNT_FRAMES, a).map(|_| bank));
    let bank = match made {
        Ok(bank) => bank,
        Err(e) => {
            println!("run: no bank for '{}': {e}", spec.name);
            let _ = keep_spacebank::Bank(b).destroy();
            for s in [a, b] {
                let _ = keep_abi::SELF_ASPACE.delete_cap(s);
                root.slots.free(s);
            }
            return None;
        }
    };
    let grants: Vec<keep_loader::Grant> = spec
        .grants
        .iter()
        .map(|g| if g.dest == keep_abi::slot::ACCOUNT { keep_loader::Grant { src: a, ..*g } } else { *g })
        .collect();
    let spec = keep_loader::Spec { grants: &grants, ..*spec };
    let mut frames = keep_spacebank::BankFrames(bank);
    let r = keep_loader::Loader::with_source(&mut root.slots, keep_abi::Account(a), &mut frames).load(&spec);
    let _ = keep_abi::SELF_ASPACE.delete_cap(a);
    root.slots.free(a);
    match r {
        Ok(child) => {
            root.banked.push((child.process.0, bank, alloc::string::String::from(spec.name)));
            Some(child)
        }
        Err(e) => {
            println!("run: cannot load '{}': {e}", spec.name);
            let _ = bank.destroy();
            let _ = keep_abi::SELF_ASPACE.delete_cap(b);
            root.slots.free(b);
            None
        }
    }
}

/// Destroys a program loaded by [`load_banked`]: its bank, and with it
/// everything the program had.
pub fn destroy_banked(root: &mut Root, name: &str, child: keep_loader::Child, bank: keep_spacebank::Bank) {
    if let Err(e) = bank.destroy() {
        println!("run: cannot destroy the bank of '{name}': {e}");
    }
    for s in [child.process.0, child.aspace.0, bank.0] {
        let _ = keep_abi::SELF_ASPACE.delete_cap(s);
        root.slots.free(s);
    }
}

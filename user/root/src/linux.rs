//! The shell's door to the workhorse, the Linux personality server
//! (docs/workhorse.md): a server of the system description, which init
//! starts at boot and restarts when it ends; the shell asks init for a
//! capability to it (ADMIN) and asks again when that one has gone stale
//! (the server was restarted), and asks it to run a command line on its
//! terminal: with the console multiplexer, the shell gives the
//! workhorse's own terminal the screen while the program runs and takes
//! it back after (both switches print the owner line).  A server's
//! terminal is the interactive one its description entry got
//! (`terminal`; docs/trusted-core.md, "The trusted path").

use keep_abi::SELF_ASPACE;
use keep_rt::println;
use keep_workhorse::Workhorse;

use crate::Root;

/// The description's server that runs the workhorse program.
const PROGRAM: &str = "workhorse";

impl Root {
    /// The running workhorse: the capability kept from before while its
    /// instance lives, else a new one from init; None (said why) when it
    /// is not running.
    fn workhorse(&mut self) -> Option<Workhorse> {
        if let Some(w) = self.workhorse {
            if SELF_ASPACE.identify_cap(w.sender).is_ok_and(|c| c.live) {
                return Some(w);
            }
            self.forget_workhorse();
        }
        let Some(sys) = self.system.as_ref() else {
            println!("linux: no system description runs (see the boot messages), so there is no workhorse");
            return None;
        };
        let Some(i) = sys.server_running(PROGRAM) else {
            println!("linux: the system description ({}) has no server running program '{PROGRAM}'", sys.file);
            return None;
        };
        let s = self.slots.alloc()?;
        match sys.admin(i, s) {
            Ok(_) => {
                self.workhorse = Some(Workhorse { sender: s });
                self.workhorse
            }
            Err(e) => {
                println!("linux: the workhorse ('{}') is not running now: {e} (its supervisor restarts it, or it is down: see ps)", sys.entries[i].name);
                self.slots.free(s);
                None
            }
        }
    }

    pub fn forget_workhorse(&mut self) {
        if let Some(w) = self.workhorse.take() {
            let _ = SELF_ASPACE.delete_cap(w.sender);
            self.slots.free(w.sender);
        }
    }

    /// `linux [PROGRAM ARGS...]`: runs it and reports a status other than
    /// exit 0; without arguments, lists the system calls refused so far.
    /// `typed_ahead`: input typed after the command line, the program's.
    pub fn linux(&mut self, args: &str, typed_ahead: &[u8]) {
        let Some(w) = self.workhorse() else { return };
        if args.is_empty() {
            match w.refused() {
                Ok(t) if t.is_empty() => println!("linux: no system call refused so far"),
                Ok(t) => {
                    println!("linux: system calls refused so far (number, name, count):");
                    for l in t.lines() {
                        println!("  {l}");
                    }
                }
                Err(e) => {
                    println!("linux: {e}");
                    self.forget_workhorse();
                }
            }
            return;
        }
        // The workhorse's terminal gets the screen while the program runs.
        let vt = self.system.as_ref().and_then(|s| {
            let i = s.server_running(PROGRAM)?;
            self.mux.as_ref()?.vt_of(&s.entries[i].name)
        });
        if let (Some(vt), Some(m)) = (vt, self.mux.as_ref()) {
            let _ = m.switch(vt);
        }
        let result = w.run_with_input(args, typed_ahead);
        if let (Some(_), Some(m)) = (vt, self.mux.as_ref()) {
            let _ = m.switch(m.shell_vt);
        }
        match result {
            Ok(0) => {}
            Ok(st) if st & 0x7f == 0 => println!("linux: exit status {}", (st >> 8) & 0xff),
            Ok(st) => println!("linux: killed by signal {}", st & 0x7f),
            Err(e) => {
                println!("\r\nlinux: {e}");
                if !SELF_ASPACE.identify_cap(w.sender).is_ok_and(|c| c.live) {
                    self.forget_workhorse();
                }
            }
        }
    }
}

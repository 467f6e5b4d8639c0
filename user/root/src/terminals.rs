//! The console multiplexer from the root task's side (docs/trusted-core.md,
//! "The trusted path"): the root task starts it before the system, with
//! the kernel's console, and from then on speaks to the user through vt1,
//! its own terminal; the kernel's console stays in the root task, for
//! ktest (which tests it) and for starting the multiplexer, and slot
//! CONSOLE keeps only a write-only copy of it, which is what the servers
//! the root task starts outside the description (the space bank, the
//! constructor) get.  Terminals of the description's entries are made once
//! per name and kept across rebuilds of the system.

use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::terminal::{self as proto, Control, Terminal};
use keep_abi::{ACCOUNT, Error, Notification, SELF_ASPACE, rights, slot};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_rt::println;

use crate::Root;

/// The notification bit the multiplexer signals when vt1 has input.
const INPUT_BIT: u64 = 1;

pub struct Mux {
    pub child: Child,
    pub control: Control,
    /// The kernel's console (all rights), moved out of slot CONSOLE.
    pub raw_console: u64,
    /// vt1, the shell's; its notification; a write-only view of it for
    /// the programs the shell runs.
    pub shell: Terminal,
    pub shell_vt: u64,
    pub shell_view: u64,
    notification: Notification,
    /// Terminals made for the description: (name, kind, capability, vt).
    made: Vec<(String, u64, u64, u64)>,
}

fn buf() -> &'static mut keep_abi::IpcBuffer {
    keep_rt::ipc_buffer()
}

/// Starts the multiplexer and moves the root task's output to vt1; None
/// (said why) when it cannot, and the shell stays on the kernel's console.
pub fn start(root: &mut Root) -> Option<Mux> {
    let img = root.image.as_ref()?;
    let Some(entry) = img.find("console") else {
        println!("console: no 'console' program in the boot image; the shell reads the kernel's console");
        return None;
    };
    let g = |s: u64| Grant { src: s, dest: s, rights: 0 };
    let grants = [g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::TIMER)];
    let spec = Spec { name: "console", elf: entry.data, arg0: 0, arg1: 0, grants: &grants, blob: None };
    let child = match Loader::new(&mut root.slots).load(&spec) {
        Ok(c) => c,
        Err(e) => {
            println!("console: cannot load the multiplexer: {e}");
            return None;
        }
    };
    let slots: Vec<u64> = (0..5).filter_map(|_| root.slots.alloc()).collect();
    let [control, shell, view, note, raw] = slots[..] else {
        println!("console: no free slot");
        return None;
    };
    let made = (|| -> keep_abi::Result<u64> {
        child.process.mint(control, 0, rights::WRITE | rights::CALL)?;
        child.process.start()?;
        let c = Control(control);
        let vt = c.new_terminal(buf(), proto::INTERACTIVE, "shell", shell)?;
        c.view(buf(), vt, view)?;
        ACCOUNT.create_notification(note)?;
        Terminal(shell).set_notify(buf(), note, INPUT_BIT)?;
        // The kernel's console leaves slot CONSOLE, which keeps a
        // write-only copy.
        SELF_ASPACE.move_cap(slot::CONSOLE, raw)?;
        SELF_ASPACE.copy_cap(raw, slot::CONSOLE, rights::WRITE)?;
        Ok(vt)
    })();
    match made {
        Ok(shell_vt) => {
            keep_rt::console::use_terminal(shell);
            Some(Mux {
                child,
                control: Control(control),
                raw_console: raw,
                shell: Terminal(shell),
                shell_vt,
                shell_view: view,
                notification: Notification(note),
                made: Vec::new(),
            })
        }
        Err(e) => {
            println!("console: cannot start the multiplexer: {e}; the shell reads the kernel's console");
            if SELF_ASPACE.identify_cap(slot::CONSOLE).is_err() {
                let _ = SELF_ASPACE.move_cap(raw, slot::CONSOLE);
            }
            let _ = Loader::new(&mut root.slots).destroy(child);
            for s in [control, shell, view, note, raw] {
                let _ = SELF_ASPACE.delete_cap(s);
                root.slots.free(s);
            }
            None
        }
    }
}

impl Mux {
    /// Input for the shell: Ok(n) with bytes, `WOULD_BLOCK` when
    /// `nonblocking` and none is waiting; otherwise waits on vt1's
    /// notification (no polling).
    pub fn read(&self, out: &mut [u8], nonblocking: bool) -> Result<usize, Error> {
        loop {
            match self.shell.read(out) {
                Err(Error::WOULD_BLOCK) if !nonblocking => {
                    self.notification.wait()?;
                }
                r => return r,
            }
        }
    }

    /// The terminal for entry `name` of kind `kind` (made the first time),
    /// as a capability slot, and its number.
    pub fn terminal(&mut self, slots: &mut keep_loader::SlotPool, name: &str, kind: u64) -> Result<(u64, u64), Error> {
        if let Some(m) = self.made.iter().find(|m| m.0 == name && m.1 == kind) {
            return Ok((m.2, m.3));
        }
        let s = slots.alloc().ok_or(Error::NO_MEMORY)?;
        match self.control.new_terminal(buf(), kind, name, s) {
            Ok(vt) => {
                self.made.push((String::from(name), kind, s, vt));
                Ok((s, vt))
            }
            Err(e) => {
                slots.free(s);
                Err(e)
            }
        }
    }

    /// The interactive terminal made for entry `name`, if any: its number.
    pub fn vt_of(&self, name: &str) -> Option<u64> {
        self.made.iter().find(|m| m.0 == name && m.1 == proto::INTERACTIVE).map(|m| m.3)
    }

    pub fn switch(&self, vt: u64) -> Result<(), Error> {
        self.control.switch(buf(), vt)
    }
}

/// `vt`: the terminals, what they are, and which has the screen.
pub fn list(root: &Root) {
    let Some(m) = root.mux.as_ref() else {
        println!("vt: no console multiplexer runs: the shell reads the kernel's console");
        return;
    };
    println!("  vt  kind         name              screen");
    let mut i = 0;
    while let Some(t) = m.control.list(buf(), i) {
        println!(
            "  {:<3} {:<12} {:<17} {}",
            t.vt,
            if t.output_only { "output-only" } else { "interactive" },
            keep_abi::name_str(&t.name),
            if t.has_screen { "yes" } else { "" }
        );
        i += 1;
    }
    println!("Ctrl-T and a terminal's number give it the screen (Ctrl-T Ctrl-T sends one Ctrl-T).");
}

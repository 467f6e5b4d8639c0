//! The starter's side: loading the server and calling it (not in host
//! tests: it needs keep-rt's IPC buffer).

use alloc::string::String;

use keep_abi::{MEMORY, Sender, Tag, err, rights, slot};
use keep_loader::{Blob, Child, Grant, Loader, SlotPool, Spec};

use crate::*;

/// A running workhorse: its process and a sender capability to it.
pub struct Workhorse {
    pub child: Child,
    pub sender: u64,
    pub account: u64,
}

impl Workhorse {
    /// Loads the server from `elf`, maps `rootfs` (the archive) into it,
    /// gives it the console, the timer, the memory pool and an account of
    /// its own funded with KMEM_FRAMES, and starts it.
    pub fn start(slots: &mut SlotPool, elf: &[u8], rootfs: &[u8]) -> Result<Workhorse, &'static str> {
        let account = slots.alloc().ok_or("no free slot")?;
        if MEMORY.create_account(account).and_then(|_| MEMORY.donate(account, KMEM_FRAMES)).is_err() {
            let _ = keep_abi::SELF_ASPACE.delete_cap(account);
            slots.free(account);
            return Err("cannot make its kernel-memory account");
        }
        let g = |src, dest| Grant { src, dest, rights: 0 };
        let grants = [
            g(slot::CONSOLE, slot::CONSOLE),
            g(slot::TIMER, slot::TIMER),
            g(slot::MEMORY, slot::MEMORY),
            g(account, slot::ACCOUNT),
        ];
        let spec = Spec {
            name: "workhorse",
            elf,
            arg0: if rootfs.is_empty() { 0 } else { ROOTFS_VADDR },
            arg1: rootfs.len() as u64,
            grants: &grants,
            blob: (!rootfs.is_empty()).then_some(Blob { vaddr: ROOTFS_VADDR, data: rootfs }),
        };
        let mut loader = Loader::new(slots);
        let child = loader.load(&spec).map_err(|_| "cannot load the server")?;
        let Some(sender) = loader.slots.alloc() else {
            let _ = loader.destroy(child);
            return Err("no free slot");
        };
        if child
            .process
            .mint(sender, 0, rights::WRITE | rights::CALL)
            .and_then(|_| child.process.start())
            .is_err()
        {
            loader.slots.free(sender);
            let _ = loader.destroy(child);
            return Err("cannot start the server");
        }
        Ok(Workhorse { child, sender, account })
    }

    /// Runs a command line on the console until it ends: Ok(wait status),
    /// or Err(why).
    pub fn run(&self, line: &str) -> Result<u64, String> {
        self.run_with_input(line, &[])
    }

    /// As `run`, the terminal taking `typed_ahead` first: what the user
    /// typed after the command line before the program started.
    pub fn run_with_input(&self, line: &str, typed_ahead: &[u8]) -> Result<u64, String> {
        let buf = keep_rt::ipc_buffer();
        let bytes = line.as_bytes();
        if bytes.is_empty() || bytes.len() + typed_ahead.len() > 4096 {
            return Err(String::from("command line (with the input typed ahead) empty or longer than 4096 bytes"));
        }
        let mut all = alloc::vec::Vec::with_capacity(bytes.len() + typed_ahead.len());
        all.extend_from_slice(bytes);
        all.extend_from_slice(typed_ahead);
        buf.set_string(&all);
        let m = Sender(self.sender).call(Tag::new(RUN).with_string(), [bytes.len() as u64, 0, 0, 0]);
        if m.err != err::OK {
            return Err(alloc::format!("the call failed: {}", keep_abi::Error(m.err)));
        }
        match m.words[0] {
            OK => Ok(m.words[1]),
            BAD_COMMAND => Err(String::from("empty command or unclosed quote")),
            CANNOT_EXEC => Err(alloc::format!("cannot run it (Linux errno {})", m.words[1])),
            BUSY => Err(String::from("a program is already running")),
            s => Err(alloc::format!("refused with status {s}")),
        }
    }

    /// The system calls refused so far: "NR NAME COUNT" lines.
    pub fn refused(&self) -> Result<String, String> {
        let m = Sender(self.sender).call(Tag::new(STATS), [0; 4]);
        if m.err != err::OK || m.words[0] != OK {
            return Err(alloc::format!("STATS failed: {} / {}", m.err, m.words[0]));
        }
        let buf = keep_rt::ipc_buffer();
        let mut text = alloc::vec![0u8; buf.received_len()];
        buf.read_string(&mut text);
        Ok(String::from_utf8_lossy(&text).into_owned())
    }
}


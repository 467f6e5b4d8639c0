//! The caller's side: calling the server through a sender capability
//! (the shell gets one from init, which starts and supervises the server;
//! not in host tests: it needs keep-rt's IPC buffer).

use alloc::string::String;

use keep_abi::{Sender, Tag, err};

use crate::*;

/// The running workhorse, as a sender capability to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workhorse {
    pub sender: u64,
}

impl Workhorse {
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
            return Err(gone(m.err));
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
        if m.err != err::OK {
            return Err(gone(m.err));
        }
        if m.words[0] != OK {
            return Err(alloc::format!("STATS refused with status {}", m.words[0]));
        }
        let buf = keep_rt::ipc_buffer();
        let mut text = alloc::vec![0u8; buf.received_len()];
        buf.read_string(&mut text);
        Ok(String::from_utf8_lossy(&text).into_owned())
    }
}


/// Why a call to the server failed: it ended (killed, or crashed) while
/// the call waited, or before it.
fn gone(e: u64) -> String {
    alloc::format!("the workhorse ended (killed or crashed: {}); its supervisor restarts it, see ps", keep_abi::Error(e))
}

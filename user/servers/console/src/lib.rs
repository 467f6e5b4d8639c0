//! The console multiplexer (docs/trusted-core.md, "The trusted path"):
//! the one program that reads the console after early boot.  Each client
//! gets a virtual terminal (a SENDER to the multiplexer; the protocol is
//! [`keep_abi::terminal`], re-exported as [`proto`]): it writes its
//! output there, kept per terminal and shown while that terminal owns the
//! screen, and reads only its own terminal's input.  The user switches
//! terminals with Ctrl-T and a digit, which only the multiplexer sees;
//! every switch prints an owner line, marked with [`filter::MARKER`],
//! which the multiplexer strips from every client's output.
//!
//! This library is the policy, tested on the host: [`access`] (who may
//! make which request), [`keys`] (the switch
//! sequence), [`filter`] (what client output may contain), [`ring`] (the
//! bounded buffers) and [`screen`] (the terminals, their input and output,
//! and who owns the screen).  The binary (main.rs) only moves bytes
//! between IPC, the kernel's console and a [`screen::Screen`].

#![no_std]

extern crate alloc;

pub mod access;
pub mod filter;
pub mod keys;
pub mod ring;
pub mod screen;

pub use keep_abi::terminal as proto;

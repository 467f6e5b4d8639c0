//! The vault (docs/trusted-core.md, "Secure storage"): a trusted server
//! that keeps small secrets for the clients of the system description,
//! each client in its own namespace, named by its capability (the name
//! service's payload: its place in the description), never by a string.
//! The store on its area of the disk is encrypted and authenticated under
//! a key the TPM seals to the measured boot (PCRs 8 and 9), and kept fresh
//! by a TPM NV counter that only the vault increments.
//!
//! This library is the protocol ([`protocol`], generated from
//! abi/services/vault.toml), a client's contents and the policy of its
//! requests ([`records`]), the store's format, keys and freshness
//! ([`store`]), the server's side of the protocol over a store
//! ([`serve`]: who is answered, in which namespace), all host-tested, and
//! the client side; `main.rs` is the server, which only moves bytes
//! between IPC, the block server, the TPM's driver and a
//! [`serve::Session`].

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod protocol;
pub mod records;
pub mod serve;
pub mod store;

#[cfg(test)]
mod tests;

pub use protocol::*;
pub use serve::described;

/// A status's meaning, for messages.
pub fn status_text(s: u64) -> &'static str {
    match s {
        OK => "ok",
        BAD_REQUEST => "bad request",
        NOT_FOUND => "no such key",
        FULL => "the namespace or the store is full",
        TOO_LARGE => "the value is too large",
        SEALED_ELSEWHERE => "sealed elsewhere: the TPM refuses the store's key to this boot",
        ROLLBACK => "rollback: the store on the disk is older than the TPM's counter",
        IO_ERROR => "the disk or the TPM failed",
        DAMAGED => "the store's area is damaged",
        NO_TPM => "no TPM",
        _ => "unknown status",
    }
}

/// The client side: a sender to the vault (from the name service) and
/// the caller's IPC buffer.  Err is the status (or 0x100 + the kernel's
/// error of the call).
#[cfg(not(test))]
#[derive(Clone, Copy)]
pub struct Client(pub keep_abi::Sender);

#[cfg(not(test))]
impl Client {
    fn call(self, label: u64, w0: u64, send: &[u8], out: &mut [u8]) -> Result<(u64, usize), u64> {
        let buf = keep_rt::ipc_buffer();
        let mut tag = keep_abi::Tag::new(label);
        if !send.is_empty() {
            buf.set_string(send);
            tag = tag.with_string();
        }
        let m = self.0.call(tag, [w0, 0, 0, 0]);
        if m.err != keep_abi::err::OK {
            return Err(0x100 + m.err);
        }
        if m.words[0] != OK {
            return Err(m.words[0]);
        }
        let n = if m.tag.has_string() { buf.read_string(out) } else { 0 };
        Ok((m.words[1], n))
    }
    /// PUT: the store's new counter.
    pub fn put(self, name: &[u8], value: &[u8]) -> Result<u64, u64> {
        let mut s = alloc::vec::Vec::with_capacity(name.len() + value.len());
        s.extend_from_slice(name);
        s.extend_from_slice(value);
        self.call(PUT, name.len() as u64, &s, &mut []).map(|r| r.0)
    }
    /// GET into `out`: the value's length.
    pub fn get(self, name: &[u8], out: &mut [u8]) -> Result<usize, u64> {
        self.call(GET, 0, name, out).map(|r| r.1)
    }
    pub fn delete(self, name: &[u8]) -> Result<u64, u64> {
        self.call(DELETE, 0, name, &mut []).map(|r| r.0)
    }
    /// LIST: (the caller's keys, the name at `index`'s length in `out`).
    pub fn list(self, index: u64, out: &mut [u8]) -> Result<(u64, usize), u64> {
        self.call(LIST, index, &[], out)
    }
    /// The raw call, for tests of bad requests: (status, word 1).
    pub fn raw(self, label: u64, w0: u64, send: &[u8]) -> (u64, u64) {
        match self.call(label, w0, send, &mut [0u8; 512]) {
            Ok((w, _)) => (OK, w),
            Err(s) => (s, 0),
        }
    }
}

/// The administrator's side (payload 0; the shell's `vault`).
#[cfg(not(test))]
pub fn stats(admin: keep_abi::Sender) -> Result<([u64; 3], alloc::string::String), u64> {
    let m = admin.call(keep_abi::Tag::new(STATS), [0; 4]);
    if m.err != keep_abi::err::OK {
        return Err(0x100 + m.err);
    }
    let mut buf = alloc::vec![0u8; 4096];
    let n = if m.tag.has_string() { keep_rt::ipc_buffer().read_string(&mut buf) } else { 0 };
    buf.truncate(n);
    if m.words[0] != OK {
        return Err(m.words[0]);
    }
    Ok(([m.words[1], m.words[2], m.words[3]], alloc::string::String::from_utf8_lossy(&buf).into_owned()))
}

// generated from abi/services/whfiles.toml by tools/idlgen.py; do not edit.
//! The `whfiles` protocol: A call's label is the request; the file's name (1-16 bytes of a-z 0-9 . -) is packed little-endian in words 0-1, zero bytes after it; bytes travel in the IPC string (at most 4096); the reply's word 0 is the status. Every request acts in the caller's own directory, the one its capability names. A refused request changes nothing.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Reads up to len bytes of the file at offset. (interface CLIENTS)
pub const READ: u64 = 1;
/// Writes the bytes into the file at offset (made if it is not there; the caller's directory too), acknowledged by the disk before the reply as every write under /data. (interface CLIENTS)
pub const WRITE: u64 = 2;
/// The file's size in bytes. (interface CLIENTS)
pub const SIZE: u64 = 3;
/// Flushes the disk (fsync of /data): every write acknowledged before it survives a power cut. (interface CLIENTS)
pub const SYNC: u64 = 4;
/// Removes the file. (interface CLIENTS)
pub const REMOVE: u64 = 5;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// No file of that name in the caller's directory.
pub const NOT_FOUND: u64 = 2;
/// The workhorse's file system refused (word 1: the Linux errno): /data is not on the disk, the disk failed (EIO), or it is full (ENOSPC); a WRITE that answers it may have written part of its bytes.
pub const IO_ERROR: u64 = 3;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        READ => keep_abi::proto::payload::client(payload),
        WRITE => keep_abi::proto::payload::client(payload),
        SIZE => keep_abi::proto::payload::client(payload),
        SYNC => keep_abi::proto::payload::client(payload),
        REMOVE => keep_abi::proto::payload::client(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, READ | WRITE | SIZE | SYNC | REMOVE)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NOT_FOUND => "NOT_FOUND",
        IO_ERROR => "IO_ERROR",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// SIZE (3): The file's size in bytes. Statuses: NOT_FOUND, IO_ERROR.
    pub fn size(self, name_lo: u64, name_hi: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, SIZE, [name_lo, name_hi, 0, 0])?;
        Ok(w[0])
    }

    /// SYNC (4): Flushes the disk (fsync of /data): every write acknowledged before it survives a power cut. Statuses: IO_ERROR.
    pub fn sync(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, SYNC, [0, 0, 0, 0])?;
        Ok(())
    }

    /// REMOVE (5): Removes the file. Statuses: NOT_FOUND, IO_ERROR.
    pub fn remove(self, name_lo: u64, name_hi: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, REMOVE, [name_lo, name_hi, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/whfiles.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// READ (1): Reads up to len bytes of the file at offset. Results: n.
    fn read(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64, offset: u64, len: u64) -> keep_abi::proto::Answer;

    /// WRITE (2): Writes the bytes into the file at offset (made if it is not there; the caller's directory too), acknowledged by the disk before the reply as every write under /data. (string: the bytes (1-4096)) Results: n.
    fn write(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64, offset: u64) -> keep_abi::proto::Answer;

    /// SIZE (3): The file's size in bytes. Results: size.
    fn size(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64) -> keep_abi::proto::Answer;

    /// SYNC (4): Flushes the disk (fsync of /data): every write acknowledged before it survives a power cut. Results: none.
    fn sync(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// REMOVE (5): Removes the file. Results: none.
    fn remove(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            READ | WRITE | SIZE | SYNC | REMOVE => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        READ => server.read(m, m.words[0], m.words[1], m.words[2], m.words[3]),
        WRITE => server.write(m, m.words[0], m.words[1], m.words[2]),
        SIZE => server.size(m, m.words[0], m.words[1]),
        SYNC => server.sync(m),
        REMOVE => server.remove(m, m.words[0], m.words[1]),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}

// generated from abi/services/dataspace.toml by tools/idlgen.py; do not edit.
//! The `dataspace` protocol: Every request is a call; word 0 of the reply is a status, the results follow.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// A dataspace of pages (1 to MAX_PAGES = 4096) paid by the client's bank (ALLOC, FREE); its handle and the owner's capability (READ, WRITE). (interface manager)
pub const CREATE: u64 = 1;
/// Dataspaces, live handles, and mappings | pins << 32. (interface manager)
pub const STATS: u64 = 2;
/// The manager destroys every dataspace and exits 0. (interface ADMIN)
pub const QUIT: u64 = 3;
/// The dataspace's pages, the handle's rights and the handle. (interface handle)
pub const INFO: u64 = 4;
/// Maps pages first .. first + count at vaddr, vaddr + 4096, ... of the address space sent, with rights READ or READ | WRITE (both must be in the handle); the mapping id. (interface handle)
pub const MAP: u64 = 5;
/// Removes a mapping made through the same handle. (interface handle)
pub const UNMAP: u64 = 6;
/// A share of the dataspace with rights (READ and/or WRITE, those of the handle at most): its handle and its capability. (interface handle)
pub const SHARE: u64 = 7;
/// Revokes a share made from this handle, or below it, with every mapping and pin made through it; the handles, mappings and pins removed. (interface handle)
pub const REVOKE: u64 = 8;
/// Maps pages first .. first + count (count 1 to MAX_PIN = 512) into the DMA domain sent from dev_addr on, for device reads (READ) and/or writes (WRITE), each needing the right in the handle; the pin id. (interface handle)
pub const PIN: u64 = 9;
/// Removes a pin made through the same handle. (interface handle)
pub const UNPIN: u64 = 10;
/// Destroys the dataspace (the owner's handle only); its frames go back to the bank that paid for them. (interface handle)
pub const DESTROY: u64 = 11;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// MAP, PIN or SHARE with a right the handle lacks; DESTROY through a share. Nothing changed.
pub const NO_RIGHTS: u64 = 2;
/// A page outside the dataspace (overflow-safe). Nothing changed.
pub const OUT_OF_RANGE: u64 = 3;
/// The handle was revoked or its dataspace destroyed. Nothing changed.
pub const STALE: u64 = 4;
/// UNMAP/UNPIN of an id that is no mapping or pin of this handle; REVOKE of a handle that is not a live share below this one. Nothing changed.
pub const NOT_FOUND: u64 = 5;
/// CREATE: the client's bank, or a bank above it, is at its limit, or the pool is empty; word 1 the bank's status (OVER_LIMIT 3, NO_MEMORY 6). Runs allocated for the request are freed.
pub const NO_MEMORY: u64 = 6;
/// SHARE, MAP, PIN: the dataspace holds its quota of handles (16), mappings (8) or pins (8) already, word 1 REACHED (1); CREATE: the 1024 runs the manager maps at once are taken; or its capability slots are full (word 1 0). Nothing changed.
pub const FULL: u64 = 7;
/// The kernel refused a MAP or PIN; word 1 is its error (WRONG_TYPE for a capability of the wrong kind: that one the manager answers itself, never invoking a capability other than an address space for MAP or a DMA domain for PIN; EXISTS for an address in use, INVALID_ARG for a kernel-half address, ...). The pages the request had mapped are unmapped again.
pub const KERNEL: u64 = 8;
/// CREATE without a capability, or with one that is not a SENDER to the manager's own bank server (another bank server, any other sender, an address space, ...). Nothing changed.
pub const NOT_A_BANK: u64 = 9;
/// CREATE: the bank refused otherwise; word 1 its status: NO_RIGHTS (the capability lacks ALLOC or FREE), STALE (the bank is destroyed), FULL. Nothing changed.
pub const BANK: u64 = 10;
/// Any request on a handle whose dataspace went with the bank that paid for it (the bank destroyed, or a run freed through it): the dataspace's records are gone.
pub const GONE: u64 = 11;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        CREATE => crate::manager(payload),
        STATS => crate::manager(payload),
        QUIT => keep_abi::proto::payload::admin(payload),
        INFO => crate::handle(payload),
        MAP => crate::handle(payload),
        UNMAP => crate::handle(payload),
        SHARE => crate::handle(payload),
        REVOKE => crate::handle(payload),
        PIN => crate::handle(payload),
        UNPIN => crate::handle(payload),
        DESTROY => crate::handle(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, CREATE | STATS | QUIT | INFO | MAP | UNMAP | SHARE | REVOKE | PIN | UNPIN | DESTROY)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NO_RIGHTS => "NO_RIGHTS",
        OUT_OF_RANGE => "OUT_OF_RANGE",
        STALE => "STALE",
        NOT_FOUND => "NOT_FOUND",
        NO_MEMORY => "NO_MEMORY",
        FULL => "FULL",
        KERNEL => "KERNEL",
        NOT_A_BANK => "NOT_A_BANK",
        BANK => "BANK",
        GONE => "GONE",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// STATS (2): Dataspaces, live handles, and mappings | pins << 32. Statuses: none of its own.
    pub fn stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// QUIT (3): The manager destroys every dataspace and exits 0. Statuses: none of its own.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }

    /// INFO (4): The dataspace's pages, the handle's rights and the handle. Statuses: STALE, GONE.
    pub fn info(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, INFO, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// UNMAP (6): Removes a mapping made through the same handle. Statuses: STALE, NOT_FOUND, GONE.
    pub fn unmap(self, mapping: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, UNMAP, [mapping, 0, 0, 0])?;
        Ok(())
    }

    /// REVOKE (8): Revokes a share made from this handle, or below it, with every mapping and pin made through it; the handles, mappings and pins removed. Statuses: STALE, NOT_FOUND, GONE.
    pub fn revoke(self, handle: u64) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, REVOKE, [handle, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// UNPIN (10): Removes a pin made through the same handle. Statuses: STALE, NOT_FOUND, GONE.
    pub fn unpin(self, pin: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, UNPIN, [pin, 0, 0, 0])?;
        Ok(())
    }

    /// DESTROY (11): Destroys the dataspace (the owner's handle only); its frames go back to the bank that paid for them. Statuses: NO_RIGHTS, STALE, GONE.
    pub fn destroy(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, DESTROY, [0, 0, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/dataspace.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// CREATE (1): A dataspace of pages (1 to MAX_PAGES = 4096) paid by the client's bank (ALLOC, FREE); its handle and the owner's capability (READ, WRITE). (capabilities: bank) Results: handle.
    fn create(&mut self, m: &keep_abi::Msg, pages: u64) -> keep_abi::proto::Answer;

    /// STATS (2): Dataspaces, live handles, and mappings | pins << 32. Results: dataspaces, handles, mappings_pins.
    fn stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// QUIT (3): The manager destroys every dataspace and exits 0. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// INFO (4): The dataspace's pages, the handle's rights and the handle. Results: pages, rights, handle.
    fn info(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// MAP (5): Maps pages first .. first + count at vaddr, vaddr + 4096, ... of the address space sent, with rights READ or READ | WRITE (both must be in the handle); the mapping id. (capabilities: aspace) Results: mapping.
    fn map(&mut self, m: &keep_abi::Msg, vaddr: u64, first: u64, count: u64, rights: u64) -> keep_abi::proto::Answer;

    /// UNMAP (6): Removes a mapping made through the same handle. Results: none.
    fn unmap(&mut self, m: &keep_abi::Msg, mapping: u64) -> keep_abi::proto::Answer;

    /// SHARE (7): A share of the dataspace with rights (READ and/or WRITE, those of the handle at most): its handle and its capability. Results: handle.
    fn share(&mut self, m: &keep_abi::Msg, rights: u64) -> keep_abi::proto::Answer;

    /// REVOKE (8): Revokes a share made from this handle, or below it, with every mapping and pin made through it; the handles, mappings and pins removed. Results: handles, mappings, pins.
    fn revoke(&mut self, m: &keep_abi::Msg, handle: u64) -> keep_abi::proto::Answer;

    /// PIN (9): Maps pages first .. first + count (count 1 to MAX_PIN = 512) into the DMA domain sent from dev_addr on, for device reads (READ) and/or writes (WRITE), each needing the right in the handle; the pin id. (capabilities: domain) Results: pin.
    fn pin(&mut self, m: &keep_abi::Msg, first: u64, count: u64, dev_addr: u64, rights: u64) -> keep_abi::proto::Answer;

    /// UNPIN (10): Removes a pin made through the same handle. Results: none.
    fn unpin(&mut self, m: &keep_abi::Msg, pin: u64) -> keep_abi::proto::Answer;

    /// DESTROY (11): Destroys the dataspace (the owner's handle only); its frames go back to the bank that paid for them. Results: none.
    fn destroy(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            CREATE | STATS | QUIT | INFO | MAP | UNMAP | SHARE | REVOKE | PIN | UNPIN | DESTROY => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        CREATE => server.create(m, m.words[0]),
        STATS => server.stats(m),
        QUIT => server.quit(m),
        INFO => server.info(m),
        MAP => server.map(m, m.words[0], m.words[1], m.words[2], m.words[3]),
        UNMAP => server.unmap(m, m.words[0]),
        SHARE => server.share(m, m.words[0]),
        REVOKE => server.revoke(m, m.words[0]),
        PIN => server.pin(m, m.words[0], m.words[1], m.words[2], m.words[3]),
        UNPIN => server.unpin(m, m.words[0]),
        DESTROY => server.destroy(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}

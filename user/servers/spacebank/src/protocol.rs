// generated from abi/services/spacebank.toml by tools/idlgen.py; do not edit.
//! The `spacebank` protocol: A call's label is the request; word 0 of the reply is a status, the results follow. A bank capability's payload names the bank (index bits 8-23, generation bits 24-63) and carries its rights (bits 0-7).

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

/// Request labels.
pub mod req {
    /// A PAGE capability (read, write, exec) and its handle. (interface ANY)
    pub const ALLOC_PAGE: u64 = 1;
    /// A CAPPAGE and its handle. (interface ANY)
    pub const ALLOC_CAPPAGE: u64 = 2;
    /// An ACCOUNT holding frames (0-65,536) and its handle. (interface ANY)
    pub const ALLOC_ACCOUNT: u64 = 3;
    /// The account of handle gets frames (1-65,536) more. (interface ANY)
    pub const FUND: u64 = 4;
    /// The object of handle is destroyed. (interface ANY)
    pub const FREE: u64 = 5;
    /// A sub-bank with limit (>= 1) and every right, and its index. (interface ANY)
    pub const CREATE_BANK: u64 = 6;
    /// This bank with the rights of the capability used and mask. (interface ANY)
    pub const RESTRICT: u64 = 7;
    /// The limit, the frames used, and objects | sub-banks << 24 | index << 48. (interface ANY)
    pub const INFO: u64 = 8;
    /// This bank and its sub-banks are gone. (interface ANY)
    pub const DESTROY: u64 = 9;
    /// The numbers of banks and accounts, and a record of each in the string. (interface ANY)
    pub const REPORT: u64 = 10;
    /// A CAPPAGE whose slots 0 to n-1 (n 1-255) hold n zeroed pages (read, write, exec), and the run's handle. (interface ANY)
    pub const ALLOC_PAGES: u64 = 11;
}

/// Statuses: word 0 of every reply.
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
    /// The capability lacks the right the request needs.
    pub const NO_RIGHTS: u64 = 2;
    /// The bank, or a bank above it, would pass its limit.
    pub const OVER_LIMIT: u64 = 3;
    /// The bank has been destroyed.
    pub const STALE: u64 = 4;
    /// The handle names no live object of this bank.
    pub const NOT_FOUND: u64 = 5;
    /// The memory pool has no frames left.
    pub const NO_MEMORY: u64 = 6;
    /// The server's tables (256 banks, or its 4,000-odd capability slots) are full.
    pub const FULL: u64 = 7;
    /// A kernel invocation failed.
    pub const KERNEL: u64 = 8;
}

/// Rights of a capability to the service (the server keeps them in its payload).
pub mod rights {
    /// Allocate objects and sub-banks, fund accounts.
    pub const ALLOC: u64 = 1;
    /// Free one object allocated from the bank.
    pub const FREE: u64 = 2;
    /// Destroy the bank (and so everything in it).
    pub const DESTROY: u64 = 4;
    /// Read the bank's figures (INFO, REPORT).
    pub const INFO: u64 = 8;
    /// Every right.
    pub const ALL: u64 = ALLOC | FREE | DESTROY | INFO;
}

/// The rights a request needs (0: none, or a label that is no request).
pub fn needs(label: u64) -> u64 {
    match label {
        req::ALLOC_PAGE => rights::ALLOC,
        req::ALLOC_CAPPAGE => rights::ALLOC,
        req::ALLOC_ACCOUNT => rights::ALLOC,
        req::FUND => rights::ALLOC,
        req::FREE => rights::FREE,
        req::CREATE_BANK => rights::ALLOC,
        req::INFO => rights::INFO,
        req::DESTROY => rights::DESTROY,
        req::REPORT => rights::INFO,
        req::ALLOC_PAGES => rights::ALLOC,
        _ => 0,
    }
}

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        req::ALLOC_PAGE => keep_abi::proto::payload::any(payload),
        req::ALLOC_CAPPAGE => keep_abi::proto::payload::any(payload),
        req::ALLOC_ACCOUNT => keep_abi::proto::payload::any(payload),
        req::FUND => keep_abi::proto::payload::any(payload),
        req::FREE => keep_abi::proto::payload::any(payload),
        req::CREATE_BANK => keep_abi::proto::payload::any(payload),
        req::RESTRICT => keep_abi::proto::payload::any(payload),
        req::INFO => keep_abi::proto::payload::any(payload),
        req::DESTROY => keep_abi::proto::payload::any(payload),
        req::REPORT => keep_abi::proto::payload::any(payload),
        req::ALLOC_PAGES => keep_abi::proto::payload::any(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, req::ALLOC_PAGE | req::ALLOC_CAPPAGE | req::ALLOC_ACCOUNT | req::FUND | req::FREE | req::CREATE_BANK | req::RESTRICT | req::INFO | req::DESTROY | req::REPORT | req::ALLOC_PAGES)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        status::OK => "OK",
        status::BAD_REQUEST => "BAD_REQUEST",
        status::NO_RIGHTS => "NO_RIGHTS",
        status::OVER_LIMIT => "OVER_LIMIT",
        status::STALE => "STALE",
        status::NOT_FOUND => "NOT_FOUND",
        status::NO_MEMORY => "NO_MEMORY",
        status::FULL => "FULL",
        status::KERNEL => "KERNEL",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// FUND (4): The account of handle gets frames (1-65,536) more. Statuses: NO_RIGHTS, OVER_LIMIT, STALE, NOT_FOUND, NO_MEMORY, KERNEL.
    pub fn fund(self, handle: u64, frames: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::FUND, [handle, frames, 0, 0])?;
        Ok(())
    }

    /// FREE (5): The object of handle is destroyed. Statuses: NO_RIGHTS, STALE, NOT_FOUND.
    pub fn free(self, handle: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::FREE, [handle, 0, 0, 0])?;
        Ok(())
    }

    /// INFO (8): The limit, the frames used, and objects | sub-banks << 24 | index << 48. Statuses: NO_RIGHTS, STALE.
    pub fn info(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, req::INFO, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// DESTROY (9): This bank and its sub-banks are gone. Statuses: NO_RIGHTS, STALE.
    pub fn destroy(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::DESTROY, [0, 0, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/spacebank.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// ALLOC_PAGE (1): A PAGE capability (read, write, exec) and its handle. Results: handle.
    fn alloc_page(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// ALLOC_CAPPAGE (2): A CAPPAGE and its handle. Results: handle.
    fn alloc_cappage(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// ALLOC_ACCOUNT (3): An ACCOUNT holding frames (0-65,536) and its handle. Results: handle.
    fn alloc_account(&mut self, m: &keep_abi::Msg, frames: u64) -> keep_abi::proto::Answer;

    /// FUND (4): The account of handle gets frames (1-65,536) more. Results: none.
    fn fund(&mut self, m: &keep_abi::Msg, handle: u64, frames: u64) -> keep_abi::proto::Answer;

    /// FREE (5): The object of handle is destroyed. Results: none.
    fn free(&mut self, m: &keep_abi::Msg, handle: u64) -> keep_abi::proto::Answer;

    /// CREATE_BANK (6): A sub-bank with limit (>= 1) and every right, and its index. Results: index.
    fn create_bank(&mut self, m: &keep_abi::Msg, limit: u64) -> keep_abi::proto::Answer;

    /// RESTRICT (7): This bank with the rights of the capability used and mask. Results: none.
    fn restrict(&mut self, m: &keep_abi::Msg, mask: u64) -> keep_abi::proto::Answer;

    /// INFO (8): The limit, the frames used, and objects | sub-banks << 24 | index << 48. Results: limit, used, counts.
    fn info(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// DESTROY (9): This bank and its sub-banks are gone. Results: none.
    fn destroy(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// REPORT (10): The numbers of banks and accounts, and a record of each in the string. Results: banks, accounts.
    fn report(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// ALLOC_PAGES (11): A CAPPAGE whose slots 0 to n-1 (n 1-255) hold n zeroed pages (read, write, exec), and the run's handle. Results: handle.
    fn alloc_pages(&mut self, m: &keep_abi::Msg, n: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            req::ALLOC_PAGE | req::ALLOC_CAPPAGE | req::ALLOC_ACCOUNT | req::FUND | req::FREE | req::CREATE_BANK | req::RESTRICT | req::INFO | req::DESTROY | req::REPORT | req::ALLOC_PAGES => status::BAD_REQUEST,
            _ => status::BAD_REQUEST,
        });
    }
    match label {
        req::ALLOC_PAGE => server.alloc_page(m),
        req::ALLOC_CAPPAGE => server.alloc_cappage(m),
        req::ALLOC_ACCOUNT => server.alloc_account(m, m.words[0]),
        req::FUND => server.fund(m, m.words[0], m.words[1]),
        req::FREE => server.free(m, m.words[0]),
        req::CREATE_BANK => server.create_bank(m, m.words[0]),
        req::RESTRICT => server.restrict(m, m.words[0]),
        req::INFO => server.info(m),
        req::DESTROY => server.destroy(m),
        req::REPORT => server.report(m),
        req::ALLOC_PAGES => server.alloc_pages(m, m.words[0]),
        _ => keep_abi::proto::Answer::refuse(status::BAD_REQUEST),
    }
}

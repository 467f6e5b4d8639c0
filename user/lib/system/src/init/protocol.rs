// generated from abi/services/init.toml by tools/idlgen.py; do not edit.
//! The `init` protocol: A call's label is the request; the reply's word 0 is the status, the results follow. init tells its callers apart by the payload of the capability a call came through.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

/// Request labels.
pub mod req {
    /// The servers of the description started in order, each with its watcher. (interface CONTROL)
    pub const START: u64 = 0x10;
    /// Every entry's state. (interface CONTROL)
    pub const STATUS: u64 = 0x11;
    /// Every instance destroyed (its bank), supervision ended, every watcher told to end. (interface CONTROL)
    pub const STOP: u64 = 0x12;
    /// The entry's instance destroyed (its bank) now, or after delay_ms (to whichever instance runs by then), as if it had crashed: supervision restarts it as for any end. (interface CONTROL)
    pub const KILL: u64 = 0x13;
    /// A sender with payload 0 to the entry's instance: a server's administrator's capability (the shell's disk, devices). (interface CONTROL)
    pub const ADMIN: u64 = 0x14;
    /// The root task's program of that entry has ended or been stopped: the servers in its uses whose line says notify are told it is gone (the root task asks before it destroys the program's bank). (interface CONTROL)
    pub const ENDED: u64 = 0x15;
    /// The instance the watcher waits for has ended (or was destroyed). Answered when there is a new instance to wait for (word 0 OK = WATCH: wait for the process in the slot again) or none will come (word 0 BAD_REQUEST = QUIT: end). (interface WATCHER)
    pub const DIED: u64 = 0x20;
}

/// Statuses: word 0 of every reply.
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
    /// START: a server could not be started (word 1: its entry, word 2 the constructor's status or 0x100 + the kernel's error, word 3 its detail).
    pub const START_FAILED: u64 = 2;
    /// START twice, or after STOP.
    pub const BAD_STATE: u64 = 3;
    /// KILL, ADMIN: no such entry, it is no server, or it is not running.
    pub const NOT_RUNNING: u64 = 4;
}

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        req::START => crate::init::control(payload),
        req::STATUS => crate::init::control(payload),
        req::STOP => crate::init::control(payload),
        req::KILL => crate::init::control(payload),
        req::ADMIN => crate::init::control(payload),
        req::ENDED => crate::init::control(payload),
        req::DIED => crate::init::watcher(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, req::START | req::STATUS | req::STOP | req::KILL | req::ADMIN | req::ENDED | req::DIED)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        status::OK => "OK",
        status::BAD_REQUEST => "BAD_REQUEST",
        status::START_FAILED => "START_FAILED",
        status::BAD_STATE => "BAD_STATE",
        status::NOT_RUNNING => "NOT_RUNNING",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// START (16): The servers of the description started in order, each with its watcher. Statuses: START_FAILED, BAD_STATE.
    pub fn start(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::START, [0, 0, 0, 0])?;
        Ok(())
    }

    /// STOP (18): Every instance destroyed (its bank), supervision ended, every watcher told to end. Statuses: none of its own.
    pub fn stop(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::STOP, [0, 0, 0, 0])?;
        Ok(())
    }

    /// KILL (19): The entry's instance destroyed (its bank) now, or after delay_ms (to whichever instance runs by then), as if it had crashed: supervision restarts it as for any end. Statuses: NOT_RUNNING.
    pub fn kill(self, entry: u64, delay_ms: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::KILL, [entry, delay_ms, 0, 0])?;
        Ok(())
    }

    /// ENDED (21): The root task's program of that entry has ended or been stopped: the servers in its uses whose line says notify are told it is gone (the root task asks before it destroys the program's bank). Statuses: none of its own.
    pub fn ended(self, entry: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::ENDED, [entry, 0, 0, 0])?;
        Ok(())
    }

    /// DIED (32): The instance the watcher waits for has ended (or was destroyed). Answered when there is a new instance to wait for (word 0 OK = WATCH: wait for the process in the slot again) or none will come (word 0 BAD_REQUEST = QUIT: end). Statuses: none of its own.
    pub fn died(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, req::DIED, [0, 0, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/init.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// START (16): The servers of the description started in order, each with its watcher. Results: none.
    fn start(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// STATUS (17): Every entry's state. Results: entries.
    fn status(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// STOP (18): Every instance destroyed (its bank), supervision ended, every watcher told to end. Results: none.
    fn stop(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// KILL (19): The entry's instance destroyed (its bank) now, or after delay_ms (to whichever instance runs by then), as if it had crashed: supervision restarts it as for any end. Results: none.
    fn kill(&mut self, m: &keep_abi::Msg, entry: u64, delay_ms: u64) -> keep_abi::proto::Answer;

    /// ADMIN (20): A sender with payload 0 to the entry's instance: a server's administrator's capability (the shell's disk, devices). Results: none.
    fn admin(&mut self, m: &keep_abi::Msg, entry: u64) -> keep_abi::proto::Answer;

    /// ENDED (21): The root task's program of that entry has ended or been stopped: the servers in its uses whose line says notify are told it is gone (the root task asks before it destroys the program's bank). Results: none.
    fn ended(&mut self, m: &keep_abi::Msg, entry: u64) -> keep_abi::proto::Answer;

    /// DIED (32): The instance the watcher waits for has ended (or was destroyed). Answered when there is a new instance to wait for (word 0 OK = WATCH: wait for the process in the slot again) or none will come (word 0 BAD_REQUEST = QUIT: end). Results: none.
    /// It may be answered later (`Answer::later()`).
    fn died(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            req::START | req::STATUS | req::STOP | req::KILL | req::ADMIN | req::ENDED | req::DIED => status::BAD_REQUEST,
            _ => status::BAD_REQUEST,
        });
    }
    match label {
        req::START => server.start(m),
        req::STATUS => server.status(m),
        req::STOP => server.stop(m),
        req::KILL => server.kill(m, m.words[0], m.words[1]),
        req::ADMIN => server.admin(m, m.words[0]),
        req::ENDED => server.ended(m, m.words[0]),
        req::DIED => server.died(m),
        _ => keep_abi::proto::Answer::refuse(status::BAD_REQUEST),
    }
}

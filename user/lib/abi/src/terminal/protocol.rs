// generated from abi/services/console.toml by tools/idlgen.py; do not edit.
//! The `console` protocol: A call's label is the request; the reply's word 0 is the status, a kernel error number (keep_abi::err), the results follow. Besides these labels a terminal may WRITE up to 32 bytes in the words: label WRITE_WORDS (0x100) + the length (1 to 32), + MORE (0x200) when the write goes on in the next message; answered as WRITE.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Writes to the terminal: shown if it has the screen, else kept; the bytes taken. (interface CLIENTS)
pub const WRITE: u64 = 1;
/// At most max (1 to 16) bytes of the terminal's input, never waiting: n and the bytes, little-endian in words 2-3. (interface CLIENTS)
pub const READ: u64 = 2;
/// The multiplexer signals the notification with bits whenever input arrives for the terminal (at once if some waits); it replaces the terminal's last. (interface CLIENTS)
pub const SET_NOTIFY: u64 = 3;
/// A new terminal of kind (INTERACTIVE 0, OUTPUT_ONLY 1) named by the two packed words: its number and its capability (write and read; write only for OUTPUT_ONLY). (interface ADMIN)
pub const NEW: u64 = 0x10;
/// A write-only capability to terminal vt. (interface ADMIN)
pub const VIEW: u64 = 0x11;
/// Gives the screen to interactive terminal vt (its kept output is shown, an owner line printed). (interface ADMIN)
pub const SWITCH: u64 = 0x12;
/// The terminal at index (0, 1, ...): flags = its number \| kind << 32 \| has the screen << 33, and its name (two packed words). (interface ADMIN)
pub const LIST: u64 = 0x13;

/// Statuses: word 0 of every reply.
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
    /// SET_NOTIFY with a capability that is not a notification.
    pub const WRONG_TYPE: u64 = 2;
    /// A request of the other interface (a control request through a terminal, a terminal's through the control capability); READ or SET_NOTIFY through a terminal that may not read (a write-only view, an output-only terminal).
    pub const NO_RIGHTS: u64 = 3;
    /// An unknown label; WRITE without a string.
    pub const INVALID_METHOD: u64 = 4;
    /// No such terminal; SWITCH to an output-only terminal; READ of 0 or more than READ_MAX = 16 bytes; SET_NOTIFY without a capability or with bits 0; NEW of an unknown kind; LIST past the last terminal; a payload that is none of the multiplexer's.
    pub const INVALID_ARG: u64 = 5;
    /// The terminals are all taken (NEW), or the kept output or input is full.
    pub const NO_MEMORY: u64 = 6;
    /// READ with no input waiting.
    pub const WOULD_BLOCK: u64 = 8;
}

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        WRITE => keep_abi::proto::payload::client(payload),
        READ => keep_abi::proto::payload::client(payload),
        SET_NOTIFY => keep_abi::proto::payload::client(payload),
        NEW => keep_abi::proto::payload::admin(payload),
        VIEW => keep_abi::proto::payload::admin(payload),
        SWITCH => keep_abi::proto::payload::admin(payload),
        LIST => keep_abi::proto::payload::admin(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, WRITE | READ | SET_NOTIFY | NEW | VIEW | SWITCH | LIST)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        status::OK => "OK",
        status::BAD_REQUEST => "BAD_REQUEST",
        status::WRONG_TYPE => "WRONG_TYPE",
        status::NO_RIGHTS => "NO_RIGHTS",
        status::INVALID_METHOD => "INVALID_METHOD",
        status::INVALID_ARG => "INVALID_ARG",
        status::NO_MEMORY => "NO_MEMORY",
        status::WOULD_BLOCK => "WOULD_BLOCK",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// READ (2): At most max (1 to 16) bytes of the terminal's input, never waiting: n and the bytes, little-endian in words 2-3. Statuses: NO_RIGHTS, INVALID_ARG, NO_MEMORY, WOULD_BLOCK.
    pub fn read(self, max: u64) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, READ, [max, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// SWITCH (18): Gives the screen to interactive terminal vt (its kept output is shown, an owner line printed). Statuses: NO_RIGHTS, INVALID_ARG.
    pub fn switch(self, vt: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, SWITCH, [vt, 0, 0, 0])?;
        Ok(())
    }

    /// LIST (19): The terminal at index (0, 1, ...): flags = its number \| kind << 32 \| has the screen << 33, and its name (two packed words). Statuses: NO_RIGHTS, INVALID_ARG.
    pub fn list(self, index: u64) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, LIST, [index, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/console.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// WRITE (1): Writes to the terminal: shown if it has the screen, else kept; the bytes taken. (string: the bytes, at most WRITE_MAX = 4096) Results: taken.
    fn write(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// READ (2): At most max (1 to 16) bytes of the terminal's input, never waiting: n and the bytes, little-endian in words 2-3. Results: n, bytes_lo, bytes_hi.
    fn read(&mut self, m: &keep_abi::Msg, max: u64) -> keep_abi::proto::Answer;

    /// SET_NOTIFY (3): The multiplexer signals the notification with bits whenever input arrives for the terminal (at once if some waits); it replaces the terminal's last. (capabilities: notification) Results: none.
    fn set_notify(&mut self, m: &keep_abi::Msg, bits: u64) -> keep_abi::proto::Answer;

    /// NEW (16): A new terminal of kind (INTERACTIVE 0, OUTPUT_ONLY 1) named by the two packed words: its number and its capability (write and read; write only for OUTPUT_ONLY). Results: vt.
    fn new(&mut self, m: &keep_abi::Msg, kind: u64, name_lo: u64, name_hi: u64) -> keep_abi::proto::Answer;

    /// VIEW (17): A write-only capability to terminal vt. Results: vt.
    fn view(&mut self, m: &keep_abi::Msg, vt: u64) -> keep_abi::proto::Answer;

    /// SWITCH (18): Gives the screen to interactive terminal vt (its kept output is shown, an owner line printed). Results: none.
    fn switch(&mut self, m: &keep_abi::Msg, vt: u64) -> keep_abi::proto::Answer;

    /// LIST (19): The terminal at index (0, 1, ...): flags = its number \| kind << 32 \| has the screen << 33, and its name (two packed words). Results: flags, name_lo, name_hi.
    fn list(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            WRITE | READ | SET_NOTIFY | NEW | VIEW | SWITCH | LIST => status::BAD_REQUEST,
            _ => status::INVALID_METHOD,
        });
    }
    match label {
        WRITE => server.write(m),
        READ => server.read(m, m.words[0]),
        SET_NOTIFY => server.set_notify(m, m.words[0]),
        NEW => server.new(m, m.words[0], m.words[1], m.words[2]),
        VIEW => server.view(m, m.words[0]),
        SWITCH => server.switch(m, m.words[0]),
        LIST => server.list(m, m.words[0]),
        _ => keep_abi::proto::Answer::refuse(status::INVALID_METHOD),
    }
}

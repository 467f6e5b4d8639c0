// generated from abi/services/pci.toml by tools/idlgen.py; do not edit.
//! The `pci` protocol: A call's label is the request; the reply's word 0 is the status, the results follow.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// The function at index: the next index, its source id, and vendor | device << 16 | class << 32 (base class << 16 | subclass << 8 | prog-if). (interface public)
pub const LIST: u64 = 1;
/// Opens instance of the function vendor | device << 16 (ids): a session and a DMA domain the function is attached to; a bridge (class 06) is DENIED. (interface public)
pub const OPEN: u64 = 2;
/// The server exits after replying. (interface ADMIN)
pub const QUIT: u64 = 3;
/// A configuration register (offset 4-aligned, below 4096). (interface session)
pub const CONFIG_READ: u64 = 4;
/// Writes a configuration register (32 bits) through the filter. (interface session)
pub const CONFIG_WRITE: u64 = 5;
/// Memory BAR index (0-5) as DEVMEM, its base and size; I/O BARs and the BAR of the MSI-X table are refused. (interface session)
pub const GET_BAR: u64 = 6;
/// Ends the session: MSI entries masked and unrouted, the function's resources taken back. (interface session)
pub const RELEASE: u64 = 7;
/// The function's INTx line as INTERRUPT. (interface session)
pub const GET_IRQ: u64 = 8;
/// A free MSI line routed to the function and written into MSI-X entry (or the MSI capability): the line as INTERRUPT, the message's address and data. (interface session)
pub const GET_MSI: u64 = 9;
/// A register of the virtio common configuration (offset below 0x38, width 1, 2 or 4), ring features masked, queue_size at most 16. (interface session)
pub const VIRTIO_READ: u64 = 10;
/// Writes a common-configuration register; queue_size, queue_enable, the queue addresses and read-only registers are DENIED; status 0 resets the device and frees the queues. (interface session)
pub const VIRTIO_WRITE: u64 = 11;
/// Sets a queue up (size a power of two up to MEDIATED_QUEUE = 16) with the used ring at device address used (one page mapped for device writes): the read-only page the device writes instead, to map over the driver's. (interface session)
pub const VIRTIO_QUEUE: u64 = 12;
/// Hands the device descriptor chains whose every byte is mapped in the domain with the right the device needs; a refusal writes nothing (DENIED: the chain and the first address not mapped with the right). (interface session)
pub const VIRTIO_SUBMIT: u64 = 13;
/// Chains published and submissions refused. (interface session)
pub const VIRTIO_STATS: u64 = 14;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// No such function, BAR, queue or MSI capability; any VIRTIO_* on a session that is not mediated.
pub const NOT_FOUND: u64 = 2;
/// The function is opened already; an MSI entry given already; a queue set up twice; a head the device has not completed.
pub const IN_USE: u64 = 3;
/// OPEN of a bridge; a configuration or virtio register write the filter refuses; a chain byte not mapped in the domain with the right (word 1 the chain, word 2 the address).
pub const DENIED: u64 = 4;
/// The session was released.
pub const STALE: u64 = 5;
/// Every MSI line is taken; the domain's hold table or account is full; no free queue pages.
pub const NO_RESOURCES: u64 = 6;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        LIST => crate::public(payload),
        OPEN => crate::public(payload),
        QUIT => keep_abi::proto::payload::admin(payload),
        CONFIG_READ => crate::session(payload),
        CONFIG_WRITE => crate::session(payload),
        GET_BAR => crate::session(payload),
        RELEASE => crate::session(payload),
        GET_IRQ => crate::session(payload),
        GET_MSI => crate::session(payload),
        VIRTIO_READ => crate::session(payload),
        VIRTIO_WRITE => crate::session(payload),
        VIRTIO_QUEUE => crate::session(payload),
        VIRTIO_SUBMIT => crate::session(payload),
        VIRTIO_STATS => crate::session(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, LIST | OPEN | QUIT | CONFIG_READ | CONFIG_WRITE | GET_BAR | RELEASE | GET_IRQ | GET_MSI | VIRTIO_READ | VIRTIO_WRITE | VIRTIO_QUEUE | VIRTIO_SUBMIT | VIRTIO_STATS)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NOT_FOUND => "NOT_FOUND",
        IN_USE => "IN_USE",
        DENIED => "DENIED",
        STALE => "STALE",
        NO_RESOURCES => "NO_RESOURCES",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// LIST (1): The function at index: the next index, its source id, and vendor | device << 16 | class << 32 (base class << 16 | subclass << 8 | prog-if). Statuses: NOT_FOUND.
    pub fn list(self, index: u64) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, LIST, [index, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// QUIT (3): The server exits after replying. Statuses: none of its own.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }

    /// CONFIG_READ (4): A configuration register (offset 4-aligned, below 4096). Statuses: STALE.
    pub fn config_read(self, offset: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, CONFIG_READ, [offset, 0, 0, 0])?;
        Ok(w[0])
    }

    /// CONFIG_WRITE (5): Writes a configuration register (32 bits) through the filter. Statuses: DENIED, STALE.
    pub fn config_write(self, offset: u64, value: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, CONFIG_WRITE, [offset, value, 0, 0])?;
        Ok(())
    }

    /// RELEASE (7): Ends the session: MSI entries masked and unrouted, the function's resources taken back. Statuses: STALE.
    pub fn release(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, RELEASE, [0, 0, 0, 0])?;
        Ok(())
    }

    /// VIRTIO_READ (10): A register of the virtio common configuration (offset below 0x38, width 1, 2 or 4), ring features masked, queue_size at most 16. Statuses: NOT_FOUND, STALE.
    pub fn virtio_read(self, offset: u64, width: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, VIRTIO_READ, [offset, width, 0, 0])?;
        Ok(w[0])
    }

    /// VIRTIO_WRITE (11): Writes a common-configuration register; queue_size, queue_enable, the queue addresses and read-only registers are DENIED; status 0 resets the device and frees the queues. Statuses: NOT_FOUND, DENIED, STALE.
    pub fn virtio_write(self, offset: u64, width: u64, value: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, VIRTIO_WRITE, [offset, width, value, 0])?;
        Ok(())
    }

    /// VIRTIO_STATS (14): Chains published and submissions refused. Statuses: NOT_FOUND, STALE.
    pub fn virtio_stats(self) -> Result<(u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, VIRTIO_STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1]))
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/pci.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// LIST (1): The function at index: the next index, its source id, and vendor | device << 16 | class << 32 (base class << 16 | subclass << 8 | prog-if). Results: next, sid, ids.
    fn list(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;

    /// OPEN (2): Opens instance of the function vendor | device << 16 (ids): a session and a DMA domain the function is attached to; a bridge (class 06) is DENIED. Results: sid.
    fn open(&mut self, m: &keep_abi::Msg, ids: u64, instance: u64) -> keep_abi::proto::Answer;

    /// QUIT (3): The server exits after replying. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// CONFIG_READ (4): A configuration register (offset 4-aligned, below 4096). Results: value.
    fn config_read(&mut self, m: &keep_abi::Msg, offset: u64) -> keep_abi::proto::Answer;

    /// CONFIG_WRITE (5): Writes a configuration register (32 bits) through the filter. Results: none.
    fn config_write(&mut self, m: &keep_abi::Msg, offset: u64, value: u64) -> keep_abi::proto::Answer;

    /// GET_BAR (6): Memory BAR index (0-5) as DEVMEM, its base and size; I/O BARs and the BAR of the MSI-X table are refused. Results: base, size.
    fn get_bar(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;

    /// RELEASE (7): Ends the session: MSI entries masked and unrouted, the function's resources taken back. Results: none.
    fn release(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// GET_IRQ (8): The function's INTx line as INTERRUPT. Results: line.
    fn get_irq(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// GET_MSI (9): A free MSI line routed to the function and written into MSI-X entry (or the MSI capability): the line as INTERRUPT, the message's address and data. Results: line, address, data.
    fn get_msi(&mut self, m: &keep_abi::Msg, entry: u64) -> keep_abi::proto::Answer;

    /// VIRTIO_READ (10): A register of the virtio common configuration (offset below 0x38, width 1, 2 or 4), ring features masked, queue_size at most 16. Results: value.
    fn virtio_read(&mut self, m: &keep_abi::Msg, offset: u64, width: u64) -> keep_abi::proto::Answer;

    /// VIRTIO_WRITE (11): Writes a common-configuration register; queue_size, queue_enable, the queue addresses and read-only registers are DENIED; status 0 resets the device and frees the queues. Results: none.
    fn virtio_write(&mut self, m: &keep_abi::Msg, offset: u64, width: u64, value: u64) -> keep_abi::proto::Answer;

    /// VIRTIO_QUEUE (12): Sets a queue up (size a power of two up to MEDIATED_QUEUE = 16) with the used ring at device address used (one page mapped for device writes): the read-only page the device writes instead, to map over the driver's. Results: none.
    fn virtio_queue(&mut self, m: &keep_abi::Msg, queue: u64, size: u64, used: u64) -> keep_abi::proto::Answer;

    /// VIRTIO_SUBMIT (13): Hands the device descriptor chains whose every byte is mapped in the domain with the right the device needs; a refusal writes nothing (DENIED: the chain and the first address not mapped with the right). (string: [avail flags u16, chains u16, 0 u32], per chain [head u16, n u16, 0 u32] and n x [address u64, length u32, flags u16, 0 u16]) Results: chain, address.
    fn virtio_submit(&mut self, m: &keep_abi::Msg, queue: u64) -> keep_abi::proto::Answer;

    /// VIRTIO_STATS (14): Chains published and submissions refused. Results: published, refused.
    fn virtio_stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            LIST | OPEN | QUIT | CONFIG_READ | CONFIG_WRITE | GET_BAR | RELEASE | GET_IRQ | GET_MSI | VIRTIO_READ | VIRTIO_WRITE | VIRTIO_QUEUE | VIRTIO_SUBMIT | VIRTIO_STATS => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        LIST => server.list(m, m.words[0]),
        OPEN => server.open(m, m.words[0], m.words[1]),
        QUIT => server.quit(m),
        CONFIG_READ => server.config_read(m, m.words[0]),
        CONFIG_WRITE => server.config_write(m, m.words[0], m.words[1]),
        GET_BAR => server.get_bar(m, m.words[0]),
        RELEASE => server.release(m),
        GET_IRQ => server.get_irq(m),
        GET_MSI => server.get_msi(m, m.words[0]),
        VIRTIO_READ => server.virtio_read(m, m.words[0], m.words[1]),
        VIRTIO_WRITE => server.virtio_write(m, m.words[0], m.words[1], m.words[2]),
        VIRTIO_QUEUE => server.virtio_queue(m, m.words[0], m.words[1], m.words[2]),
        VIRTIO_SUBMIT => server.virtio_submit(m, m.words[0]),
        VIRTIO_STATS => server.virtio_stats(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}

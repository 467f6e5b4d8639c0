// generated from abi/services/net.toml by tools/idlgen.py; do not edit.
//! The `net` protocol: A call's label is the request; the reply's word 0 is the status, the results follow. A frame is a whole Ethernet frame without the FCS, 14 to MAX_FRAME = 1514 bytes, as the message's string. A refused request changes nothing.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Registers a stack with IPv4 address ip (a in bits 24-31 of a.b.c.d): its number and its capability (payload: the number). (interface ADMIN)
pub const ADD_STACK: u64 = 1;
/// The stack's registration ends: its ring is let go of, a WAIT it left answered NOT_REGISTERED, its capability answers NOT_REGISTERED from now on (the number stays taken). (interface ADMIN)
pub const REMOVE_STACK: u64 = 2;
/// Frames from the NIC, frames to the NIC, frames dropped (for no registered address, or of another kind). (interface ADMIN)
pub const STATS: u64 = 3;
/// Every ring is let go of; the server replies, resets the NIC and exits. (interface ADMIN)
pub const QUIT: u64 = 4;
/// The NIC's MAC address (byte 0 in bits 40-47), the stack's address, frames waiting for it. A described client is registered on its first call of any request (hence IN_USE and NO_RESOURCES for each). (interface CLIENTS)
pub const INFO: u64 = 5;
/// Sends a frame: delivered directly to a stack whose address it is for, else out through the NIC. (interface CLIENTS)
pub const SEND: u64 = 6;
/// The next frame queued for the stack, and the frames still waiting. (interface CLIENTS)
pub const RECV: u64 = 7;
/// Frames delivered to the stack, frames it sent, frames dropped for it (its queue or ring full). (interface CLIENTS)
pub const COUNTERS: u64 = 8;
/// Answered at once if a frame waits, else when one comes (a second WAIT answers the first OK; the caller bounds it with its time-out). With a ring it takes the submitted frames first, and flags WAIT_TX = 1 also ends it when transmit buffers come back. (interface CLIENTS)
pub const WAIT: u64 = 9;
/// Attaches the ring in a share (READ and WRITE) of a dataspace of the server's manager, replacing the stack's earlier ring: its frames come and go there from now on. The dataspace's pages. (interface CLIENTS)
pub const ATTACH: u64 = 10;
/// Frames wait in the ring's TX_SUBMIT: the server takes them; the frames waiting in RX_DONE. (interface CLIENTS)
pub const KICK: u64 = 11;
/// The ring's refusals: descriptors refused, queue indices out of range, writes to the server's half seen. (interface CLIENTS)
pub const RING_COUNTERS: u64 = 12;
/// NIC resets, DMA faults, frames the mediator refused. (interface ADMIN)
pub const DEVICE_STATS: u64 = 13;
/// Resets the NIC and sets it up again, as after a stop (frames of rings no longer pinned are dropped); the resets so far. (interface ADMIN)
pub const RESET_NIC: u64 = 14;
/// The server signals the notification (with WRITE) with bits each time it has put frames in for the stack and, flags WAIT_TX, given transmit buffers back: once per batch. Without a capability: no more. (interface CLIENTS)
pub const NOTIFY: u64 = 15;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// The stack was removed (REMOVE_STACK), or is a described client without a grant (or with a malformed one); REMOVE_STACK of no live stack.
pub const NOT_REGISTERED: u64 = 2;
/// A frame whose source MAC address is not the NIC's or whose source IPv4 address (ARP: sender address) is not the stack's own; ATTACH of a share without WRITE; NOTIFY with a capability that is not a notification with WRITE.
pub const DENIED: u64 = 3;
/// An address another stack has (ADD_STACK, or a described client's grant).
pub const IN_USE: u64 = 4;
/// MAX_STACKS = 8 stacks registered already, or no slot for the stack's capability; ATTACH: the manager would not map or pin the ring.
pub const NO_RESOURCES: u64 = 5;
/// RECV with no frame waiting.
pub const EMPTY: u64 = 6;
/// The NIC would not take the frame.
pub const IO_ERROR: u64 = 7;
/// ATTACH without a capability, or with anything but a SENDER to the server's own dataspace manager naming a live dataspace.
pub const NOT_DATASPACE: u64 = 8;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        ADD_STACK => keep_abi::proto::payload::admin(payload),
        REMOVE_STACK => keep_abi::proto::payload::admin(payload),
        STATS => keep_abi::proto::payload::admin(payload),
        QUIT => keep_abi::proto::payload::admin(payload),
        INFO => keep_abi::proto::payload::client(payload),
        SEND => keep_abi::proto::payload::client(payload),
        RECV => keep_abi::proto::payload::client(payload),
        COUNTERS => keep_abi::proto::payload::client(payload),
        WAIT => keep_abi::proto::payload::client(payload),
        ATTACH => keep_abi::proto::payload::client(payload),
        KICK => keep_abi::proto::payload::client(payload),
        RING_COUNTERS => keep_abi::proto::payload::client(payload),
        DEVICE_STATS => keep_abi::proto::payload::admin(payload),
        RESET_NIC => keep_abi::proto::payload::admin(payload),
        NOTIFY => keep_abi::proto::payload::client(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, ADD_STACK | REMOVE_STACK | STATS | QUIT | INFO | SEND | RECV | COUNTERS | WAIT | ATTACH | KICK | RING_COUNTERS | DEVICE_STATS | RESET_NIC | NOTIFY)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NOT_REGISTERED => "NOT_REGISTERED",
        DENIED => "DENIED",
        IN_USE => "IN_USE",
        NO_RESOURCES => "NO_RESOURCES",
        EMPTY => "EMPTY",
        IO_ERROR => "IO_ERROR",
        NOT_DATASPACE => "NOT_DATASPACE",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// REMOVE_STACK (2): The stack's registration ends: its ring is let go of, a WAIT it left answered NOT_REGISTERED, its capability answers NOT_REGISTERED from now on (the number stays taken). Statuses: NOT_REGISTERED.
    pub fn remove_stack(self, stack: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, REMOVE_STACK, [stack, 0, 0, 0])?;
        Ok(())
    }

    /// STATS (3): Frames from the NIC, frames to the NIC, frames dropped (for no registered address, or of another kind). Statuses: none of its own.
    pub fn stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// QUIT (4): Every ring is let go of; the server replies, resets the NIC and exits. Statuses: none of its own.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }

    /// INFO (5): The NIC's MAC address (byte 0 in bits 40-47), the stack's address, frames waiting for it. A described client is registered on its first call of any request (hence IN_USE and NO_RESOURCES for each). Statuses: NOT_REGISTERED, IN_USE, NO_RESOURCES.
    pub fn info(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, INFO, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// COUNTERS (8): Frames delivered to the stack, frames it sent, frames dropped for it (its queue or ring full). Statuses: NOT_REGISTERED, IN_USE, NO_RESOURCES.
    pub fn counters(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, COUNTERS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// WAIT (9): Answered at once if a frame waits, else when one comes (a second WAIT answers the first OK; the caller bounds it with its time-out). With a ring it takes the submitted frames first, and flags WAIT_TX = 1 also ends it when transmit buffers come back. Statuses: NOT_REGISTERED, IN_USE, NO_RESOURCES.
    pub fn wait(self, flags: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, WAIT, [flags, 0, 0, 0])?;
        Ok(w[0])
    }

    /// KICK (11): Frames wait in the ring's TX_SUBMIT: the server takes them; the frames waiting in RX_DONE. Statuses: NOT_REGISTERED, IN_USE, NO_RESOURCES.
    pub fn kick(self) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, KICK, [0, 0, 0, 0])?;
        Ok(w[0])
    }

    /// RING_COUNTERS (12): The ring's refusals: descriptors refused, queue indices out of range, writes to the server's half seen. Statuses: NOT_REGISTERED, IN_USE, NO_RESOURCES.
    pub fn ring_counters(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, RING_COUNTERS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// DEVICE_STATS (13): NIC resets, DMA faults, frames the mediator refused. Statuses: none of its own.
    pub fn device_stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, DEVICE_STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// RESET_NIC (14): Resets the NIC and sets it up again, as after a stop (frames of rings no longer pinned are dropped); the resets so far. Statuses: none of its own.
    pub fn reset_nic(self) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, RESET_NIC, [0, 0, 0, 0])?;
        Ok(w[0])
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/net.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// ADD_STACK (1): Registers a stack with IPv4 address ip (a in bits 24-31 of a.b.c.d): its number and its capability (payload: the number). Results: stack.
    fn add_stack(&mut self, m: &keep_abi::Msg, ip: u64) -> keep_abi::proto::Answer;

    /// REMOVE_STACK (2): The stack's registration ends: its ring is let go of, a WAIT it left answered NOT_REGISTERED, its capability answers NOT_REGISTERED from now on (the number stays taken). Results: none.
    fn remove_stack(&mut self, m: &keep_abi::Msg, stack: u64) -> keep_abi::proto::Answer;

    /// STATS (3): Frames from the NIC, frames to the NIC, frames dropped (for no registered address, or of another kind). Results: from_nic, to_nic, dropped.
    fn stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// QUIT (4): Every ring is let go of; the server replies, resets the NIC and exits. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// INFO (5): The NIC's MAC address (byte 0 in bits 40-47), the stack's address, frames waiting for it. A described client is registered on its first call of any request (hence IN_USE and NO_RESOURCES for each). Results: mac, ip, waiting.
    fn info(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// SEND (6): Sends a frame: delivered directly to a stack whose address it is for, else out through the NIC. (string: the frame) Results: none.
    fn send(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// RECV (7): The next frame queued for the stack, and the frames still waiting. Results: waiting.
    fn recv(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// COUNTERS (8): Frames delivered to the stack, frames it sent, frames dropped for it (its queue or ring full). Results: delivered, sent, dropped.
    fn counters(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// WAIT (9): Answered at once if a frame waits, else when one comes (a second WAIT answers the first OK; the caller bounds it with its time-out). With a ring it takes the submitted frames first, and flags WAIT_TX = 1 also ends it when transmit buffers come back. Results: waiting.
    /// It may be answered later (`Answer::later()`).
    fn wait(&mut self, m: &keep_abi::Msg, flags: u64) -> keep_abi::proto::Answer;

    /// ATTACH (10): Attaches the ring in a share (READ and WRITE) of a dataspace of the server's manager, replacing the stack's earlier ring: its frames come and go there from now on. The dataspace's pages. (capabilities: ring) Results: pages.
    fn attach(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// KICK (11): Frames wait in the ring's TX_SUBMIT: the server takes them; the frames waiting in RX_DONE. Results: waiting.
    fn kick(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// RING_COUNTERS (12): The ring's refusals: descriptors refused, queue indices out of range, writes to the server's half seen. Results: refused, out_of_range, tampered.
    fn ring_counters(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// DEVICE_STATS (13): NIC resets, DMA faults, frames the mediator refused. Results: resets, faults, refused.
    fn device_stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// RESET_NIC (14): Resets the NIC and sets it up again, as after a stop (frames of rings no longer pinned are dropped); the resets so far. Results: resets.
    fn reset_nic(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// NOTIFY (15): The server signals the notification (with WRITE) with bits each time it has put frames in for the stack and, flags WAIT_TX, given transmit buffers back: once per batch. Without a capability: no more. (capabilities: notification) Results: none.
    fn notify(&mut self, m: &keep_abi::Msg, bits: u64, flags: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            ADD_STACK | REMOVE_STACK | STATS | QUIT | INFO | SEND | RECV | COUNTERS | WAIT | ATTACH | KICK | RING_COUNTERS | DEVICE_STATS | RESET_NIC | NOTIFY => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        ADD_STACK => server.add_stack(m, m.words[0]),
        REMOVE_STACK => server.remove_stack(m, m.words[0]),
        STATS => server.stats(m),
        QUIT => server.quit(m),
        INFO => server.info(m),
        SEND => server.send(m),
        RECV => server.recv(m),
        COUNTERS => server.counters(m),
        WAIT => server.wait(m, m.words[0]),
        ATTACH => server.attach(m),
        KICK => server.kick(m),
        RING_COUNTERS => server.ring_counters(m),
        DEVICE_STATS => server.device_stats(m),
        RESET_NIC => server.reset_nic(m),
        NOTIFY => server.notify(m, m.words[0], m.words[1]),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}

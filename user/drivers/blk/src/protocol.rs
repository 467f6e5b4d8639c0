// generated from abi/services/blk.toml by tools/idlgen.py; do not edit.
//! The `blk` protocol: A call's label is the request; the reply's word 0 is the status, the results follow. Sectors count from the start of the client's range; a refused request reads and writes nothing.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// A client confined to sectors first .. first + sectors with rights (READ | WRITE): its number and capability. (interface ADMIN)
pub const ADD_CLIENT: u64 = 1;
/// Requests served, refused, and DMA faults. (interface ADMIN)
pub const STATS: u64 = 2;
/// The server waits for an empty queue, replies and exits. (interface ADMIN)
pub const QUIT: u64 = 3;
/// The client's sectors and rights. (interface CLIENTS)
pub const INFO: u64 = 4;
/// Reads 1 to MAX_SECTORS = 8 sectors. (interface CLIENTS)
pub const READ: u64 = 5;
/// Writes 1 to MAX_SECTORS = 8 sectors; answered once the device reports it complete. (interface CLIENTS)
pub const WRITE: u64 = 6;
/// Answered once every write acknowledged before it is on the disk. (interface CLIENTS)
pub const FLUSH: u64 = 7;
/// Attaches a dataspace capability (of the server's own manager): the server pins it into its DMA domain; the buffer number, its pages and rights. (interface CLIENTS)
pub const ATTACH: u64 = 8;
/// Lets go of a buffer (IN_USE while it holds the client's ring). (interface CLIENTS)
pub const DETACH: u64 = 9;
/// Reads 1 to MAX_DS_SECTORS = 256 sectors into the buffer's pages at byte offset, the device doing the copying. (interface CLIENTS)
pub const READ_DS: u64 = 10;
/// Writes 1 to MAX_DS_SECTORS = 256 sectors from the buffer's pages at byte offset; answered once they are on the device. (interface CLIENTS)
pub const WRITE_DS: u64 = 11;
/// The most requests on the device at once, flushes, buffers attached. (interface ADMIN)
pub const QUEUE_STATS: u64 = 12;
/// Client index (from 0), and the number of clients. (interface ADMIN)
pub const CLIENT: u64 = 13;
/// A batch of 1 to MAX_BATCH READ_DS entries of the buffer, all checked before any starts: the first status that is not OK, its entry, and the entries done. (interface CLIENTS)
pub const READ_DS_V: u64 = 14;
/// A batch of WRITE_DS entries, as READ_DS_V. (interface CLIENTS)
pub const WRITE_DS_V: u64 = 15;
/// Device resets, requests started again after one, submissions the mediator refused. (interface ADMIN)
pub const DEVICE_STATS: u64 = 0x10;
/// Sets the client's request ring up in the page at byte offset (page-aligned) of its buffer (shared read-write), its indices read as zero; the server signals the notification (bit RING_BIT) when the client's WAKE_AT completion is posted. One ring per client (IN_USE); the buffer is IN_USE to DETACH while the ring lasts. Returns the entries per queue (keep_blk::ring::ENTRIES). (interface CLIENTS)
pub const RING: u64 = 0x11;
/// Takes the ring down: requests taken from it and still on the device complete without a completion posted; the notification and the buffer are let go of. (interface CLIENTS)
pub const RING_END: u64 = 0x12;
/// Requests wait in the ring: sent (not called) by a client that finds the ring's IDLE set; the server drains every ring before it next waits. A call is answered OK. (interface CLIENTS)
pub const KICK: u64 = 0x13;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// Any sector outside the client's range (overflow-safe).
pub const OUT_OF_RANGE: u64 = 2;
/// A read or write the client's rights do not allow; a READ_DS into a buffer shared read-only (the device would write it); a WRITE_DS from a buffer shared without READ.
pub const NO_RIGHTS: u64 = 3;
/// The device failed the request.
pub const IO_ERROR: u64 = 4;
/// ATTACH by a client that has limits::PER_CLIENT = 4 buffers attached already (the same share attached twice counts twice), or with the server's 64 buffers taken (a described client's buffers go when init says it ended; buffers whose pin is gone otherwise are released at each ATTACH, QUEUE_STATS and CLIENT first), or the manager would not map or pin (a dataspace at its quota of mappings or pins); RING when the server has no guard thread for ring pages.
pub const NO_RESOURCES: u64 = 5;
/// A buffer number that is not one of this client's; an offset not a multiple of 512; bytes outside the buffer (overflow-safe); pages no longer pinned (the client revoked its share, or its bank was destroyed and took the dataspace's pages: checked with one DMA_DOMAIN.LOOKUP of the buffer's first page before the request goes to the device, so no DMA fault).
pub const BAD_BUFFER: u64 = 6;
/// ATTACH without a capability, or with anything but a SENDER to the server's own dataspace manager naming a live dataspace (the manager's own capability, a forged sender to another process, a page).
pub const NOT_DATASPACE: u64 = 7;
/// DETACH of a buffer with a request on the device.
pub const IN_USE: u64 = 8;
/// CLIENT: no client with that index; RING_END without a ring.
pub const NOT_FOUND: u64 = 9;
/// RING without a capability, or with anything but a NOTIFICATION capability with WRITE.
pub const NOT_NOTIFICATION: u64 = 10;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        ADD_CLIENT => keep_abi::proto::payload::admin(payload),
        STATS => keep_abi::proto::payload::admin(payload),
        QUIT => keep_abi::proto::payload::admin(payload),
        INFO => keep_abi::proto::payload::client(payload),
        READ => keep_abi::proto::payload::client(payload),
        WRITE => keep_abi::proto::payload::client(payload),
        FLUSH => keep_abi::proto::payload::client(payload),
        ATTACH => keep_abi::proto::payload::client(payload),
        DETACH => keep_abi::proto::payload::client(payload),
        READ_DS => keep_abi::proto::payload::client(payload),
        WRITE_DS => keep_abi::proto::payload::client(payload),
        QUEUE_STATS => keep_abi::proto::payload::admin(payload),
        CLIENT => keep_abi::proto::payload::admin(payload),
        READ_DS_V => keep_abi::proto::payload::client(payload),
        WRITE_DS_V => keep_abi::proto::payload::client(payload),
        DEVICE_STATS => keep_abi::proto::payload::admin(payload),
        RING => keep_abi::proto::payload::client(payload),
        RING_END => keep_abi::proto::payload::client(payload),
        KICK => keep_abi::proto::payload::client(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, ADD_CLIENT | STATS | QUIT | INFO | READ | WRITE | FLUSH | ATTACH | DETACH | READ_DS | WRITE_DS | QUEUE_STATS | CLIENT | READ_DS_V | WRITE_DS_V | DEVICE_STATS | RING | RING_END | KICK)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        OUT_OF_RANGE => "OUT_OF_RANGE",
        NO_RIGHTS => "NO_RIGHTS",
        IO_ERROR => "IO_ERROR",
        NO_RESOURCES => "NO_RESOURCES",
        BAD_BUFFER => "BAD_BUFFER",
        NOT_DATASPACE => "NOT_DATASPACE",
        IN_USE => "IN_USE",
        NOT_FOUND => "NOT_FOUND",
        NOT_NOTIFICATION => "NOT_NOTIFICATION",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// STATS (2): Requests served, refused, and DMA faults. Statuses: none of its own.
    pub fn stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// QUIT (3): The server waits for an empty queue, replies and exits. Statuses: none of its own.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }

    /// INFO (4): The client's sectors and rights. Statuses: none of its own.
    pub fn info(self) -> Result<(u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, INFO, [0, 0, 0, 0])?;
        Ok((w[0], w[1]))
    }

    /// FLUSH (7): Answered once every write acknowledged before it is on the disk. Statuses: IO_ERROR.
    pub fn flush(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, FLUSH, [0, 0, 0, 0])?;
        Ok(())
    }

    /// DETACH (9): Lets go of a buffer (IN_USE while it holds the client's ring). Statuses: BAD_BUFFER, IN_USE.
    pub fn detach(self, buffer: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, DETACH, [buffer, 0, 0, 0])?;
        Ok(())
    }

    /// READ_DS (10): Reads 1 to MAX_DS_SECTORS = 256 sectors into the buffer's pages at byte offset, the device doing the copying. Statuses: OUT_OF_RANGE, NO_RIGHTS, IO_ERROR, BAD_BUFFER.
    pub fn read_ds(self, buffer: u64, offset: u64, sector: u64, count: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, READ_DS, [buffer, offset, sector, count])?;
        Ok(())
    }

    /// WRITE_DS (11): Writes 1 to MAX_DS_SECTORS = 256 sectors from the buffer's pages at byte offset; answered once they are on the device. Statuses: OUT_OF_RANGE, NO_RIGHTS, IO_ERROR, BAD_BUFFER.
    pub fn write_ds(self, buffer: u64, offset: u64, sector: u64, count: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, WRITE_DS, [buffer, offset, sector, count])?;
        Ok(())
    }

    /// QUEUE_STATS (12): The most requests on the device at once, flushes, buffers attached. Statuses: none of its own.
    pub fn queue_stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, QUEUE_STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// DEVICE_STATS (16): Device resets, requests started again after one, submissions the mediator refused. Statuses: none of its own.
    pub fn device_stats(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, DEVICE_STATS, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }

    /// RING_END (18): Takes the ring down: requests taken from it and still on the device complete without a completion posted; the notification and the buffer are let go of. Statuses: NOT_FOUND.
    pub fn ring_end(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, RING_END, [0, 0, 0, 0])?;
        Ok(())
    }

    /// KICK (19): Requests wait in the ring: sent (not called) by a client that finds the ring's IDLE set; the server drains every ring before it next waits. A call is answered OK. Statuses: none of its own.
    pub fn kick(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, KICK, [0, 0, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/blk.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// ADD_CLIENT (1): A client confined to sectors first .. first + sectors with rights (READ | WRITE): its number and capability. Results: client.
    fn add_client(&mut self, m: &keep_abi::Msg, first: u64, sectors: u64, rights: u64) -> keep_abi::proto::Answer;

    /// STATS (2): Requests served, refused, and DMA faults. Results: served, refused, dma_faults.
    fn stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// QUIT (3): The server waits for an empty queue, replies and exits. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// INFO (4): The client's sectors and rights. Results: sectors, rights.
    fn info(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// READ (5): Reads 1 to MAX_SECTORS = 8 sectors. Results: none.
    fn read(&mut self, m: &keep_abi::Msg, sector: u64, count: u64) -> keep_abi::proto::Answer;

    /// WRITE (6): Writes 1 to MAX_SECTORS = 8 sectors; answered once the device reports it complete. (string: count x 512 bytes) Results: none.
    fn write(&mut self, m: &keep_abi::Msg, sector: u64, count: u64) -> keep_abi::proto::Answer;

    /// FLUSH (7): Answered once every write acknowledged before it is on the disk. Results: none.
    fn flush(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// ATTACH (8): Attaches a dataspace capability (of the server's own manager): the server pins it into its DMA domain; the buffer number, its pages and rights. (capabilities: dataspace) Results: buffer, pages, rights.
    fn attach(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// DETACH (9): Lets go of a buffer (IN_USE while it holds the client's ring). Results: none.
    fn detach(&mut self, m: &keep_abi::Msg, buffer: u64) -> keep_abi::proto::Answer;

    /// READ_DS (10): Reads 1 to MAX_DS_SECTORS = 256 sectors into the buffer's pages at byte offset, the device doing the copying. Results: none.
    fn read_ds(&mut self, m: &keep_abi::Msg, buffer: u64, offset: u64, sector: u64, count: u64) -> keep_abi::proto::Answer;

    /// WRITE_DS (11): Writes 1 to MAX_DS_SECTORS = 256 sectors from the buffer's pages at byte offset; answered once they are on the device. Results: none.
    fn write_ds(&mut self, m: &keep_abi::Msg, buffer: u64, offset: u64, sector: u64, count: u64) -> keep_abi::proto::Answer;

    /// QUEUE_STATS (12): The most requests on the device at once, flushes, buffers attached. Results: most_in_flight, flushes, buffers.
    fn queue_stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// CLIENT (13): Client index (from 0), and the number of clients. Results: clients.
    fn client(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;

    /// READ_DS_V (14): A batch of 1 to MAX_BATCH READ_DS entries of the buffer, all checked before any starts: the first status that is not OK, its entry, and the entries done. (string: entries x Entry (sector u64, byte offset u32, count u32)) Results: entry, done.
    fn read_ds_v(&mut self, m: &keep_abi::Msg, buffer: u64, entries: u64) -> keep_abi::proto::Answer;

    /// WRITE_DS_V (15): A batch of WRITE_DS entries, as READ_DS_V. (string: entries x Entry (sector u64, byte offset u32, count u32)) Results: entry, done.
    fn write_ds_v(&mut self, m: &keep_abi::Msg, buffer: u64, entries: u64) -> keep_abi::proto::Answer;

    /// DEVICE_STATS (16): Device resets, requests started again after one, submissions the mediator refused. Results: resets, restarted, refused.
    fn device_stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// RING (17): Sets the client's request ring up in the page at byte offset (page-aligned) of its buffer (shared read-write), its indices read as zero; the server signals the notification (bit RING_BIT) when the client's WAKE_AT completion is posted. One ring per client (IN_USE); the buffer is IN_USE to DETACH while the ring lasts. Returns the entries per queue (keep_blk::ring::ENTRIES). (capabilities: notification) Results: entries.
    fn ring(&mut self, m: &keep_abi::Msg, buffer: u64, offset: u64) -> keep_abi::proto::Answer;

    /// RING_END (18): Takes the ring down: requests taken from it and still on the device complete without a completion posted; the notification and the buffer are let go of. Results: none.
    fn ring_end(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// KICK (19): Requests wait in the ring: sent (not called) by a client that finds the ring's IDLE set; the server drains every ring before it next waits. A call is answered OK. Results: none.
    fn kick(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            ADD_CLIENT | STATS | QUIT | INFO | READ | WRITE | FLUSH | ATTACH | DETACH | READ_DS | WRITE_DS | QUEUE_STATS | CLIENT | READ_DS_V | WRITE_DS_V | DEVICE_STATS | RING | RING_END | KICK => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        ADD_CLIENT => server.add_client(m, m.words[0], m.words[1], m.words[2]),
        STATS => server.stats(m),
        QUIT => server.quit(m),
        INFO => server.info(m),
        READ => server.read(m, m.words[0], m.words[1]),
        WRITE => server.write(m, m.words[0], m.words[1]),
        FLUSH => server.flush(m),
        ATTACH => server.attach(m),
        DETACH => server.detach(m, m.words[0]),
        READ_DS => server.read_ds(m, m.words[0], m.words[1], m.words[2], m.words[3]),
        WRITE_DS => server.write_ds(m, m.words[0], m.words[1], m.words[2], m.words[3]),
        QUEUE_STATS => server.queue_stats(m),
        CLIENT => server.client(m, m.words[0]),
        READ_DS_V => server.read_ds_v(m, m.words[0], m.words[1]),
        WRITE_DS_V => server.write_ds_v(m, m.words[0], m.words[1]),
        DEVICE_STATS => server.device_stats(m),
        RING => server.ring(m, m.words[0], m.words[1]),
        RING_END => server.ring_end(m),
        KICK => server.kick(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}

//! The block server (protocol: lib.rs; docs/block.md).  It opens the
//! virtio-blk function through the PCI server (capability at PCI_SLOT),
//! drives it with `virtio-drivers` whose DMA memory is pages mapped into
//! the session's DMA domain, and serves its clients.  Clients' bulk data
//! lives in dataspaces they share with it (manager at DS_SLOT): the server
//! has each pinned into its domain and mapped into its own space once, and
//! the device moves sectors straight between the disk and those pages.
//!
//! Up to IN_FLIGHT requests are on the device at once (`virtio-drivers`'
//! non-blocking calls); the server goes on receiving meanwhile and answers
//! each request when the device completes it (its interrupt: MSI-X entry 0,
//! or the INTx line the PCI server gives if that fails; a receive time-out
//! makes a lost one cost time, not the request).  Calls that cannot start yet wait in order.  FLUSH and
//! QUIT wait until nothing is on the device.
//!
//! Started from the system description (a name service in NAMES_SLOT), it
//! finds the PCI server as `pci` and the dataspace manager as `dataspace`
//! by name, and its clients are the description's: a client's range and
//! rights are its grant (`blk=FIRST+SECTORS:r|rw`), asked of init the
//! first time it calls.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{
    Interrupt, Msg, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, err, label, recv, rights, slot,
};
use keep_blk::*;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{Ordering, fence};
use keep_dataspace::{DS_SLOT, Dataspace};
use keep_loader::SlotPool;
use keep_pci::{PCI_SLOT, Pci, Session};
use keep_rt::println;
use keep_system::names;
use keep_virtio::pci::Sid;
use keep_virtio::{PlatformTransport, VirtioTransport};
use keep_virtio::device::{Layout, Opened};
use keep_virtio::hal::{self, KeepHal};
use virtio_drivers::Hal;
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::BufferDirection;

use keep_guard as guard;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
/// Where a call's capability (ATTACH's dataspace) arrives.
const ARG: u64 = slot::FIRST_FREE + 1;
const FAULT_PAYLOAD: u64 = u64::MAX;
const IRQ_PAYLOAD: u64 = u64::MAX - 1;
const MMIO_VA: u64 = 0x0000_4100_0000_0000;
const DMA_VA: u64 = 0x0000_4200_0000_0000;
/// Where attached dataspaces go in the server's space and in its domain,
/// a 2 MiB window each.
const BUF_VA: u64 = 0x0000_4300_0000_0000;
const BUF_IOVA: u64 = 0x18_0000_0000;
const WINDOW: u64 = MAX_BUFFER_PAGES * 4096;
const MAX_BUFFERS: usize = limits::TABLE;
/// Device addresses of the DMA pages: the server's choice, not RAM's.
const IOVA: u64 = 0x10_0000_0000;
const IRQ_WAIT_MS: u64 = 100;
/// Receive time-outs in a row with requests on the device and none
/// completed before the device counts as stopped (2 s).
const STALLED_WAITS: u32 = 20;
/// Resets in a row that completed nothing before what is on the device
/// ends IO_ERROR instead of starting again.
const MAX_FRUITLESS: u32 = 3;
/// The virtqueue's size (virtio-drivers' VirtIOBlk): tokens are below it.
const QUEUE: usize = 16;

type Blk = VirtIOBlk<KeepHal, PlatformTransport<VirtioTransport>>;

struct ClientRange {
    first: u64,
    sectors: u64,
    rights: u64,
    /// Requests answered OK, and refused, for this client.
    served: u64,
    refused: u64,
    /// Its buffers let go because init said it ended (GONE).
    let_go: u64,
}

/// A call taken off the receive slot: its return capability moved to
/// `ret`, a capability that came with it to `cap`.
struct Call {
    ret: u64,
    cap: Option<u64>,
    label: u64,
    payload: u64,
    words: [u64; 4],
    string: Option<Vec<u8>>,
}

/// A client's dataspace, attached: pinned at `iova`, mapped at `va`.
struct Buffer {
    client: u64,
    ds: u64,
    va: u64,
    iova: u64,
    pages: u64,
    rights: u64,
    map: u64,
    pin: u64,
    busy: u64,
    /// Its client ended (GONE) while requests on it were on the device:
    /// let go when the last of them ends.
    orphan: bool,
}

/// A batch (READ_DS_V, WRITE_DS_V) accepted whole and being served: its
/// entries go to the device in order as request slots free up.
struct Batch {
    id: u64,
    call: Call,
    read: bool,
    buffer: usize,
    /// Per entry: the disk's sector, the data's address in the server's
    /// space (the buffer's pages), bytes.
    entries: Vec<(u64, u64, usize)>,
    status: Vec<u8>,
    /// The next entry to start, entries on the device, entries completed OK.
    next: usize,
    on_device: usize,
    done: u64,
}

/// A request on the device, in its header slot's place in `inflight`
/// (small and Copy: it is not moved about; a single request's call waits
/// in `calls` at the same index).
#[derive(Clone, Copy)]
struct InFlight {
    token: u16,
    /// Entry `.1` of the batch numbered `.0`; None: a single request.
    batch: Option<(u64, usize)>,
    read: bool,
    /// The disk's sector (to start it again after a device reset).
    sector: u64,
    data: *mut u8,
    len: usize,
    /// Bytes of the slot's page to send back (READ).
    reply_len: usize,
    buffer: Option<usize>,
    /// A request taken from a client's ring: its completion goes there
    /// (`Server::ring_of` says whose; a flag here, so that the record
    /// moved per request does not grow).
    ringed: bool,
}

/// A client's request ring (keep_blk::ring): in the page at `va` of its
/// buffer `buffer`; the server's own indices kept here, never read back.
struct Ring {
    buffer: usize,
    offset: u64,
    va: u64,
    note: u64,
    generation: u64,
    req_tail: u32,
    cpl_head: u32,
    /// CPL_HEAD as last written to the page (and WAKE_AT compared).
    published: u32,
    /// Requests taken and not yet completed.
    outstanding: u32,
    /// The last drain left requests waiting (no request slot, no room).
    more: bool,
    /// IDLE is set on the page.
    idle: bool,
}

/// Per slot, at fixed device-visible addresses: the request header, its
/// status byte, and a data page for the message-string requests.
struct Headers {
    va: u64,
    data_va: u64,
}

impl Headers {
    fn req(&self, i: usize) -> *mut BlkReq {
        (self.va + i as u64 * 64) as *mut BlkReq
    }
    fn resp(&self, i: usize) -> *mut BlkResp {
        (self.va + 2048 + i as u64 * 64) as *mut BlkResp
    }
    fn data(&self, i: usize) -> *mut u8 {
        (self.data_va + i as u64 * 4096) as *mut u8
    }
}

struct Server {
    blk: Blk,
    /// The function's session, to set the device up again after a reset.
    session: Session,
    sid: Sid,
    mediated: bool,
    /// Its queue signals MSI-X entry 0 (pointed at it again after a reset).
    msix: bool,
    /// The device stopped (a DMA fault, a refused submission, a stall):
    /// reset it before anything else (`recover`).
    broken: bool,
    resets: u64,
    restarted: u64,
    mediator_refusals: u64,
    /// Resets since the last request completed OK; receive time-outs in a
    /// row with requests on the device and none completed.
    fruitless: u32,
    stalled: u32,
    capacity: u64,
    clients: Vec<ClientRange>,
    buffers: Vec<Option<Buffer>>,
    served: u64,
    refused: u64,
    faults: u64,
    most: u64,
    flushes: u64,
    irq: Option<(Interrupt, u64)>,
    slots: SlotPool,
    /// Described clients: (name-service payload, client number).
    described: Vec<(u64, u64)>,
    backlog: VecDeque<Call>,
    /// Per header slot: the request on the device there, and the call it
    /// answers (single requests); `on_device` of them are Some.
    inflight: [Option<InFlight>; IN_FLIGHT],
    calls: Vec<Option<Call>>,
    on_device: usize,
    /// Batches accepted and not yet answered, oldest first; they are
    /// answered in that order, so batch `id` is at `id - front.id` (a Vec:
    /// a handful at most, and indexing it per request costs less than a
    /// VecDeque's).
    batches: Vec<Batch>,
    next_batch: u64,
    /// The oldest batch that may have entries still to start (pump).
    pump_id: u64,
    /// The header slot of the request with each token (the chain's first
    /// descriptor, below the queue's size): no search per completion.
    slot_of: [u8; QUEUE],
    free_io: Vec<usize>,
    headers: Headers,
    /// The empty slot the next call's return capability is received into.
    next_ret: u64,
    /// Per client number: its ring.
    rings: Vec<Option<Ring>>,
    /// Per header slot with a ring's request: (client, the ring's
    /// generation, the descriptor's id).
    ring_of: [(u64, u64, u64); IN_FLIGHT],
    live_rings: usize,
    ring_gen: u64,
    /// A KICK came: drain every ring.
    kicked: bool,
    /// Completions posted and not yet published.
    posted: bool,
    /// Ring indices out of range seen (nothing taken then).
    ring_bad: u64,
    /// Rings' pins are looked up once an epoch: a new one begins at each
    /// KICK and each wake-up from an idle wait.
    epoch: u64,
    /// Per buffer: the epoch of its last look-up and the rights it found.
    pin_seen: Vec<(u64, u64)>,
    /// The guard runs (guard.rs): rings may be set up.
    guarded: bool,
    /// Buffers whose ring page went (guard::lost), not yet taken down.
    lost: u64,
}

/// Is the buffer whose first page the device sees at `iova` still pinned
/// with the rights `dev` the device needs (WRITE for a disk read)?  The
/// first page stands for all: the manager drops a pin whole, first page
/// first (a revoked share), and nobody else maps into this domain's buffer
/// windows.  One lookup a request instead of one per page (16 for 64 KiB:
/// most of what separating the driver cost, docs/performance.md "I/O
/// paths").
fn pinned(iova: u64, dev: u64) -> bool {
    matches!(hal::domain().lookup(iova), Ok((r, _)) if r & dev == dev)
}

fn fail(what: &str, e: impl core::fmt::Display) -> i32 {
    println!("blk: {what}: {e}");
    1
}

/// A reply: status, words, bytes of an I/O slot's page to send, a capability.
struct Answer {
    st: u64,
    w: [u64; 3],
    string: Option<(usize, usize)>,
    cap: Option<u64>,
}

fn answer(st: u64) -> Answer {
    Answer { st, w: [0; 3], string: None, cap: None }
}

impl Server {
    /// Moves the call in `m` into a Call; None for what is no call (an
    /// interrupt, a DMA fault, a plain send).
    fn take(&mut self, m: &Msg) -> Option<Call> {
        if m.err != err::OK {
            return None;
        }
        if m.tag.label() == label::IRQ && m.payload == IRQ_PAYLOAD {
            if let Some((irq, line)) = self.irq {
                self.blk.ack_interrupt();
                let _ = irq.ack(line);
            }
            return None;
        }
        if m.tag.label() == label::NOTIFY && m.payload == names::NOTICE {
            // init's notice: clients ended; which, init says.
            let mut ended = Vec::new();
            let _ = names::take_gone(names::NAMES_SLOT, |p| ended.push(p));
            for p in ended {
                self.gone(p);
            }
            return None;
        }
        if m.tag.label() == label::DMA_FAULT && m.payload == FAULT_PAYLOAD {
            self.faults += 1;
            println!("blk: DMA fault: device {:#x} address {:#x} reason {}", m.words[0], m.words[1], m.words[2]);
            // The device stops at a fault until it is reset (virtio's
            // NEEDS_RESET): reset it now, or no client is served again.
            self.broken = true;
            return None;
        }
        if !m.tag.is_called() {
            if m.tag.label() == KICK {
                self.kicked = true;
                self.epoch += 1;
            }
            if m.tag.caps() > 0 {
                let _ = SELF_ASPACE.delete_cap(self.next_ret);
                let _ = SELF_ASPACE.delete_cap(ARG);
            }
            return None;
        }
        // The return capability arrived in a slot of its own (next_ret), where
        // it stays until the reply: no MOVE_CAP a call.
        let ret = self.next_ret;
        match self.slots.alloc() {
            Some(n) => self.next_ret = n,
            None => {
                let _ = SELF_ASPACE.delete_cap(ret); // the caller hears NO_REPLY
                let _ = SELF_ASPACE.delete_cap(ARG);
                return None;
            }
        }
        // ARG is empty between calls: emptied only when a capability came.
        let cap = if m.tag.caps() >= 2 {
            let c = match self.slots.alloc() {
                Some(c) if SELF_ASPACE.move_cap(ARG, c).is_ok() => Some(c),
                Some(c) => {
                    self.slots.free(c);
                    None
                }
                None => None,
            };
            if c.is_none() {
                let _ = SELF_ASPACE.delete_cap(ARG);
            }
            c
        } else {
            None
        };
        let string = m.tag.has_string().then(|| {
            let buf = keep_rt::ipc_buffer();
            let n = buf.received_len().min(keep_abi::layout::MAX_STRING as usize);
            // One copy (the kernel wrote the string before recv returned,
            // and the system call is a compiler barrier); a batch's entries
            // are checked in this copy, which the client cannot change.
            buf.string[..n].to_vec()
        });
        let mut c = Call { ret, cap, label: m.tag.label(), payload: m.payload, words: m.words, string };
        if c.payload == names::NOTICE {
            // A notice as a call, from the server's starter (the server
            // mints no sender with this payload; init signals instead):
            // answered at once, ahead of the backlog.
            let st = if c.label == names::GONE {
                self.gone(c.words[0]);
                OK
            } else {
                BAD_REQUEST
            };
            self.reply(c, answer(st));
            return None;
        }
        if names::client_of(c.payload).is_some() {
            match self.described_client(c.payload) {
                Ok(n) => c.payload = n,
                Err(st) => {
                    self.reply(c, answer(st));
                    return None;
                }
            }
        }
        Some(c)
    }

    /// The client number of a described client (a name-service payload):
    /// its range and rights are its grant in the description, asked of
    /// init the first time it calls.
    fn described_client(&mut self, payload: u64) -> Result<u64, u64> {
        if let Some(&(_, n)) = self.described.iter().find(|(p, _)| *p == payload) {
            return Ok(n);
        }
        let who = names::client_of(payload).unwrap_or(0);
        let text = names::grant(names::NAMES_SLOT, payload, keep_rt::ipc_buffer()).map_err(|e| {
            println!("blk: described client {who}: no grant ({})", names::status::name(e));
            NO_RIGHTS
        })?;
        let r = keep_system::grant::blk(&text).map_err(|why| {
            println!("blk: described client {who}: {why}");
            NO_RIGHTS
        })?;
        if rules::grant(self.capacity, r.first, r.sectors).is_err() {
            println!("blk: described client {who}: {text} runs past the disk's {} sectors", self.capacity);
            return Err(OUT_OF_RANGE);
        }
        self.clients.push(ClientRange { first: r.first, sectors: r.sectors, rights: r.rights, served: 0, refused: 0, let_go: 0 });
        let n = self.clients.len() as u64;
        self.described.push((payload, n));
        Ok(n)
    }

    /// Does this call wait for the device (a free slot, or an empty queue)?
    fn needs_device(c: &Call) -> (bool, bool) {
        let client = c.payload != 0 && c.payload < FAULT_PAYLOAD - 1;
        let io = client && matches!(c.label, READ | WRITE | READ_DS | WRITE_DS);
        let drain = (client && c.label == FLUSH) || (c.payload == 0 && c.label == QUIT);
        (io, drain)
    }

    /// The rules' view of client `c`'s range (keep_blk::rules).
    fn range_of(c: &ClientRange) -> ring::Range {
        ring::Range { first: c.first, sectors: c.sectors, rights: c.rights }
    }

    /// The rules' view of buffer `b` for a single request (no ring page
    /// kept out of it).
    fn plain_view(&self, b: u64) -> Option<ring::BufferView> {
        let buf = self.buffers.get(usize::try_from(b).ok()?)?.as_ref()?;
        Some(ring::BufferView { client: buf.client, bytes: buf.pages * 4096, rights: buf.rights, ring_at: None })
    }

    /// The buffer `b` of client `n`, for `len` bytes at `offset` the device
    /// may access with `dev` (WRITE: it writes them): its pages must still
    /// be pinned in the domain (the client may have revoked its share).
    fn buffer(&self, n: u64, b: u64, offset: u64, len: u64, dev: u64) -> Result<usize, u64> {
        rules::buffer(n, self.plain_view(b).as_ref(), offset, len, dev)?;
        let buf = self.buffers[b as usize].as_ref().unwrap();
        if pinned(buf.iova, dev) { Ok(b as usize) } else { Err(BAD_BUFFER) }
    }

    /// Puts a request on the device (for an entry of a batch, or a single
    /// request, whose call the caller puts in `calls[io]`): its header slot.
    #[allow(clippy::too_many_arguments)]
    fn submit(&mut self, batch: Option<(u64, usize)>, read: bool, at: u64, data: *mut u8, len: usize, reply_len: usize, buffer: Option<usize>, ring: Option<(u64, u64, u64)>) -> Result<usize, u64> {
        let ringed = ring.is_some();
        let Some(io) = self.free_io.pop() else { return Err(NO_RESOURCES) };
        match self.put(io, read, at, data, len) {
            Ok(token) => {
                if let Some(b) = buffer {
                    self.buffers[b].as_mut().unwrap().busy += 1;
                }
                // Written in place (no InFlight moved about: every copy of
                // a record counts its bytes in the I/O benchmarks).
                self.inflight[io] = Some(InFlight { token, batch, read, sector: at, data, len, reply_len, buffer, ringed });
                if let Some(x) = ring {
                    self.ring_of[io] = x;
                }
                Ok(io)
            }
            Err(st) => {
                self.free_io.push(io);
                Err(st)
            }
        }
    }

    /// Request `f` (taken off the device by a reset) on the device again
    /// with header slot `io` (taken).
    fn start_again(&mut self, io: usize, f: &InFlight) -> Result<(), u64> {
        let token = self.put(io, f.read, f.sector, f.data, f.len)?;
        self.inflight[io] = Some(InFlight { token, ..*f });
        Ok(())
    }

    /// Puts a request on the device with header slot `io`: its token.
    #[inline(always)]
    fn put(&mut self, io: usize, read: bool, sector: u64, data: *mut u8, len: usize) -> Result<u16, u64> {
        // SAFETY: the header slot and the data stay where they are, untouched
        // by the server, until the request completes (harvest) or the device
        // is reset (recover); the data lies in memory the device reaches in
        // place (hal::add_direct).
        let token = unsafe {
            let (req, resp) = (&mut *self.headers.req(io), &mut *self.headers.resp(io));
            let buf = core::slice::from_raw_parts_mut(data, len);
            if read {
                self.blk.read_blocks_nb(sector as usize, req, buf, resp)
            } else {
                self.blk.write_blocks_nb(sector as usize, req, buf, resp)
            }
        };
        // Without an IOMMU: the chain to the mediator now, even if the
        // device had suppressed notifications (keep_virtio::mediated::kick).
        keep_virtio::mediated::kick();
        if let Some((st, _, addr)) = keep_virtio::mediated::take_refusal() {
            // Only a pin removed since it was checked (the client revoked its
            // share meanwhile) gets here.  The chain's descriptors stay taken
            // in the queue (virtio-drivers cannot take a request back): a
            // reset gives them back (recover).
            println!("blk: the mediator refused a request ({}): address {addr:#x}", keep_pci::status_name(st));
            self.mediator_refusals += 1;
            self.broken = true;
            return Err(BAD_BUFFER);
        }
        match token {
            Ok(token) => {
                if let Some(s) = self.slot_of.get_mut(token as usize) {
                    *s = io as u8;
                }
                self.on_device += 1;
                self.most = self.most.max(self.on_device as u64);
                Ok(token)
            }
            Err(_) => Err(IO_ERROR),
        }
    }

    /// Answers every request the device has completed.
    fn harvest(&mut self) {
        let mut ended = false;
        while let Some(token) = self.blk.peek_used() {
            let io = self.slot_of.get(token as usize).map_or(IN_FLIGHT, |&io| io as usize);
            let Some(f) = self.inflight.get_mut(io).and_then(|f| f.take_if(|f| f.token == token)) else {
                println!("blk: the device completed an unknown request {token}");
                return;
            };
            self.on_device -= 1;
            // SAFETY: the same header slot and data as submitted.
            let ok = unsafe {
                let (req, resp) = (&*self.headers.req(io), &mut *self.headers.resp(io));
                let buf = core::slice::from_raw_parts_mut(f.data, f.len);
                if f.read {
                    self.blk.complete_read_blocks(token, req, buf, resp)
                } else {
                    self.blk.complete_write_blocks(token, req, buf, resp)
                }
            }
            .is_ok();
            self.stalled = 0;
            if ok {
                self.fruitless = 0;
            }
            ended |= self.ended(io, &f, if ok { OK } else { IO_ERROR });
            self.free_io.push(io);
        }
        if ended {
            self.finish_batches();
        }
    }

    /// Request `f` of header slot `io` has ended with status `st` (taken
    /// off the device): a single request is answered, a batch's entry
    /// counted.  True when that was its batch's last entry.
    #[inline(always)]
    fn ended(&mut self, io: usize, f: &InFlight, st: u64) -> bool {
        if let Some(b) = f.buffer {
            self.unbusy(b);
        }
        if f.ringed {
            let (n, generation, id) = self.ring_of[io];
            self.post(n, generation, id, st);
            return false;
        }
        match f.batch {
            None => {
                let a = if st == OK {
                    Answer { st: OK, w: [0; 3], string: (f.reply_len > 0).then_some((io, f.reply_len)), cap: None }
                } else {
                    answer(st)
                };
                if let Some(c) = self.calls[io].take() {
                    self.reply(c, a);
                }
                false
            }
            Some((id, k)) => {
                let front = self.batches.first().map_or(0, |b| b.id);
                let Some(b) = self.batches.get_mut(id.wrapping_sub(front) as usize) else { return false };
                b.on_device -= 1;
                if st == OK {
                    b.done += 1;
                } else {
                    b.status[k] = st as u8;
                }
                b.on_device == 0 && b.next == b.entries.len()
            }
        }
    }

    /// Is buffer `b` still pinned with what a request of direction `read`
    /// needs of the device (a read writes the pages)?
    fn buffer_pinned(&self, b: usize, read: bool) -> bool {
        let dev = if read { rights::WRITE } else { rights::READ };
        self.buffers.get(b).and_then(Option::as_ref).is_some_and(|buf| pinned(buf.iova, dev))
    }

    /// The device stopped: reset it, set it up again, and start again every
    /// request that was on it, but those whose buffer lost its pin (the
    /// cause, when a client revoked its share under a request), which end
    /// BAD_BUFFER with the rest of their batch.  After MAX_FRUITLESS resets
    /// that completed nothing, what was on the device ends IO_ERROR.
    fn recover(&mut self) {
        self.broken = false;
        self.stalled = 0;
        self.resets += 1;
        self.fruitless += 1;
        let was: Vec<(usize, InFlight)> = (0..IN_FLIGHT).filter_map(|io| self.inflight[io].take().map(|f| (io, f))).collect();
        self.on_device = 0;
        self.reset_device();
        println!("blk: the device stopped; reset it ({} time{}), {} request{} were on it",
                 self.resets, if self.resets == 1 { "" } else { "s" }, was.len(), if was.len() == 1 { "" } else { "s" });
        self.free_io = (0..IN_FLIGHT).rev().filter(|io| !was.iter().any(|(i, _)| i == io)).collect();
        // Batches on a buffer no longer pinned: their entries not started
        // are dropped, as `pump` would find at the device.
        for i in 0..self.batches.len() {
            let (buffer, read, next) = (self.batches[i].buffer, self.batches[i].read, self.batches[i].next);
            if next < self.batches[i].entries.len() && !self.buffer_pinned(buffer, read) {
                let b = &mut self.batches[i];
                b.status[next..].fill(BAD_BUFFER as u8);
                b.next = b.entries.len();
            }
        }
        let give_up = self.fruitless > MAX_FRUITLESS;
        let front = self.batches.first().map_or(0, |b| b.id);
        for (io, f) in was {
            let buffer = f.buffer.or_else(|| f.batch.and_then(|(id, _)| self.batches.get(id.wrapping_sub(front) as usize)).map(|b| b.buffer));
            let r = if give_up {
                Err(IO_ERROR)
            } else if buffer.is_some_and(|b| !self.buffer_pinned(b, f.read)) {
                Err(BAD_BUFFER)
            } else {
                self.start_again(io, &f).map(|()| self.restarted += 1)
            };
            if let Err(st) = r {
                self.ended(io, &f, st);
                self.free_io.push(io);
            }
        }
        self.finish_batches();
    }

    /// Resets the device and makes the driver anew over a new transport (the
    /// old one dropped first: its drop is the reset, and the mediated one
    /// forgets its rings), its queue pointed at MSI-X entry 0 again.  A
    /// device that cannot be set up again ends the server (init restarts
    /// it): nothing else is left to serve from.
    fn reset_device(&mut self) {
        let (session, sid, mediated) = (self.session, self.sid, self.mediated);
        keep_virtio::device::remake(
            &mut self.blk,
            || keep_virtio::device::transport(session, sid, mediated, 0x1042)
                .and_then(|t| VirtIOBlk::new(t.hiding(HIDDEN_FEATURES)).map_err(|e| alloc::format!("{e:?}"))),
            |e| {
                println!("blk: the device cannot be set up again after its reset ({e}); the server ends");
                keep_rt::exit(3)
            },
        );
        self.blk.enable_interrupts();
        if self.msix && let Err(e) = keep_virtio::msix::point_queues(self.session, 0, 1) {
            println!("blk: after the reset, {e}; the server ends");
            keep_rt::exit(3);
        }
    }

    /// Starts batch entries, oldest batch first, while request slots are free.
    fn pump(&mut self) {
        let mut refused = false;
        while !self.free_io.is_empty() {
            // Batches are answered oldest first, so the one pump_id names
            // is at pump_id - front.id (or was answered: start from the front).
            let Some(front) = self.batches.first().map(|b| b.id) else { break };
            self.pump_id = self.pump_id.max(front);
            let i = (self.pump_id - front) as usize;
            let Some(b) = self.batches.get_mut(i) else { break };
            if b.next == b.entries.len() {
                self.pump_id += 1;
                continue;
            }
            let k = b.next;
            b.next += 1;
            let ((at, va, len), id, read) = (b.entries[k], b.id, b.read);
            // The batch keeps its buffer busy as a whole: no count per entry.
            match self.submit(Some((id, k)), read, at, va as *mut u8, len, 0, None, None) {
                Ok(_) => self.batches[i].on_device += 1,
                Err(st) => {
                    // The share was revoked under the batch (BAD_BUFFER) or
                    // the device refused: this entry and the rest not started.
                    let b = &mut self.batches[i];
                    b.status[k..].iter_mut().for_each(|s| *s = st as u8);
                    b.next = b.entries.len();
                    refused = true;
                }
            }
        }
        if refused {
            self.finish_batches();
        }
    }

    /// Answers the batches whose entries have all ended, oldest first: one
    /// that ended before an older one waits for it (whose entries are all on
    /// the device by then, as they started first), which keeps a batch's
    /// place in `batches` its id's distance from the front.
    fn finish_batches(&mut self) {
        while self.batches.first().is_some_and(|b| b.next == b.entries.len() && b.on_device == 0) {
            let b = self.batches.remove(0);
            self.unbusy(b.buffer);
            let bad = b.status.iter().position(|&s| s != OK as u8);
            let a = match bad {
                None => Answer { st: OK, w: [WHOLE_BATCH, b.done, 0], string: None, cap: None },
                Some(k) => {
                    keep_rt::ipc_buffer().set_string(&b.status);
                    Answer { st: b.status[k] as u64, w: [k as u64, b.done, 0], string: Some((usize::MAX, b.status.len())), cap: None }
                }
            };
            self.reply(b.call, a);
        }
    }

    /// Checks a batch whole (READ_DS_V, WRITE_DS_V: words buffer, entries;
    /// the entries as the string): its buffer and, per entry, the device's
    /// sector, the data's address and bytes; or why not: (status, the
    /// first bad entry or WHOLE_BATCH).  Nothing is started here.
    fn check_batch(&self, n: u64, range: &ClientRange, c: &Call) -> Result<(usize, Vec<(u64, u64, usize)>), (u64, u64)> {
        let write = c.label == WRITE_DS_V;
        let (b, count) = (c.words[0], c.words[1]);
        let view = self.plain_view(b);
        let va = view.map_or(0, |_| self.buffers[b as usize].as_ref().unwrap().va);
        let mut entries = Vec::with_capacity(count.min(MAX_BATCH as u64) as usize);
        rules::batch(&Server::range_of(range), n, view.as_ref(), write, count, c.string.as_deref(), |e| {
            entries.push((e.at, va + e.offset, e.len as usize))
        })?;
        let (iova, dev) = (self.buffers[b as usize].as_ref().unwrap().iova, rules::device_needs(write));
        if !pinned(iova, dev) {
            return Err((BAD_BUFFER, WHOLE_BATCH));
        }
        Ok((b as usize, entries))
    }

    fn reply(&mut self, c: Call, a: Answer) {
        if a.st == OK {
            self.served += 1;
        } else {
            self.refused += 1;
        }
        if c.payload != 0
            && let Some(cl) = self.clients.get_mut(c.payload as usize - 1)
        {
            if a.st == OK {
                cl.served += 1;
            } else {
                cl.refused += 1;
            }
        }
        let buf = keep_rt::ipc_buffer();
        let mut tag = Tag::new(0);
        if let Some((io, n)) = a.string {
            // usize::MAX: the string is in the IPC buffer already.
            if io != usize::MAX {
                // SAFETY: the slot's data page holds n <= 4096 bytes the device wrote.
                buf.set_string(unsafe { core::slice::from_raw_parts(self.headers.data(io), n) });
            }
            tag = tag.with_string();
        }
        if let Some(x) = a.cap {
            tag = tag.with_caps(buf.set_send_caps(&[(x, 0)]));
        }
        let _ = Return(c.ret).reply(tag, [a.st, a.w[0], a.w[1], a.w[2]]);
        for x in [Some(c.ret), c.cap, a.cap].into_iter().flatten() {
            let _ = SELF_ASPACE.delete_cap(x);
            self.slots.free(x);
        }
    }

    /// A client's request: started on the device (None: answered when it
    /// completes), or the call and its answer now.
    fn client(&mut self, mut c: Call) -> Option<(Call, Answer)> {
        let n = c.payload;
        let Some(range) = self.clients.get(n as usize - 1) else { return Some((c, answer(BAD_REQUEST))) };
        let range = ClientRange { served: 0, refused: 0, let_go: 0, ..*range };
        let [w0, w1, w2, w3] = c.words;
        match c.label {
            INFO => Some((c, Answer { st: OK, w: [range.sectors, range.rights, 0], string: None, cap: None })),
            READ | WRITE => {
                let write = c.label == WRITE;
                let (at, len) = match rules::string_io(&Server::range_of(&range), write, w0, w1, c.string.as_ref().map(Vec::len)) {
                    Ok(x) => x,
                    Err(st) => return Some((c, answer(st))),
                };
                let Some(&io) = self.free_io.last() else { return Some((c, answer(NO_RESOURCES))) };
                let data = self.headers.data(io);
                if write {
                    // SAFETY: the slot's page has room for len <= 4096 bytes.
                    unsafe { core::ptr::copy_nonoverlapping(c.string.as_ref().unwrap().as_ptr(), data, len) };
                }
                match self.submit(None, !write, at, data, len, if write { 0 } else { len }, None, None) {
                    Ok(io) => {
                        self.calls[io] = Some(c);
                        None
                    }
                    Err(st) => Some((c, answer(st))),
                }
            }
            READ_DS | WRITE_DS => {
                let write = c.label == WRITE_DS;
                let (b, offset, sector, count) = (w0, w1, w2, w3);
                let (at, len) = match rules::ds_io(&Server::range_of(&range), n, self.plain_view(b).as_ref(), write, offset, sector, count) {
                    Ok(x) => x,
                    Err(st) => return Some((c, answer(st))),
                };
                // The rules passed: only the pin is left to look up.
                let b = match self.buffer(n, b, offset, len, rules::device_needs(write)) {
                    Ok(b) => b,
                    Err(st) => return Some((c, answer(st))),
                };
                let data = (self.buffers[b].as_ref().unwrap().va + offset) as *mut u8;
                match self.submit(None, !write, at, data, len as usize, 0, Some(b), None) {
                    Ok(io) => {
                        self.calls[io] = Some(c);
                        None
                    }
                    Err(st) => Some((c, answer(st))),
                }
            }
            READ_DS_V | WRITE_DS_V => match self.check_batch(n, &range, &c) {
                Ok((b, entries)) => {
                    // Busy (DETACH is IN_USE) until the batch is answered.
                    self.buffers[b].as_mut().unwrap().busy += 1;
                    let id = self.next_batch;
                    self.next_batch += 1;
                    let (read, status) = (c.label == READ_DS_V, vec![OK as u8; entries.len()]);
                    self.batches.push(Batch { id, call: c, read, buffer: b, entries, status, next: 0, on_device: 0, done: 0 });
                    None
                }
                Err((st, k)) => Some((c, Answer { st, w: [k, 0, 0], string: None, cap: None })),
            }
            FLUSH => {
                // Nothing is on the device now (FLUSH waits for that).
                self.flushes += 1;
                let st = if self.blk.flush().is_ok() { OK } else { IO_ERROR };
                Some((c, answer(st)))
            }
            ATTACH => {
                let a = self.attach(n, &mut c.cap);
                Some((c, a))
            }
            DETACH => Some((c, self.detach(n, w0))),
            RING => {
                let a = self.set_up_ring(n, w0, w1, &mut c.cap);
                Some((c, a))
            }
            RING_END => Some((c, answer(if self.end_ring(n) { OK } else { NOT_FOUND }))),
            KICK => {
                self.kicked = true;
                self.epoch += 1;
                Some((c, answer(OK)))
            }
            _ => Some((c, answer(BAD_REQUEST))),
        }
    }

    /// ATTACH: the dataspace capability must be a SENDER to the server's
    /// own dataspace manager (so that no client can make the server hand
    /// its DMA domain to a process of the client's choosing).
    fn attach(&mut self, n: u64, arg: &mut Option<u64>) -> Answer {
        let Some(cap) = *arg else { return answer(NOT_DATASPACE) };
        // The manager by name again if it was restarted.
        keep_dataspace::refresh(DS_SLOT);
        match SELF_ASPACE.compare_cap(cap, DS_SLOT) {
            Ok((true, _)) if SELF_ASPACE.identify_cap(cap).is_ok_and(|i| i.ty == keep_abi::ty::SENDER) => {}
            _ => return answer(NOT_DATASPACE),
        }
        let ds = Dataspace(Sender(cap));
        let Ok((pages, r, _)) = ds.info() else { return answer(NOT_DATASPACE) };
        if let Err(st) = rules::attach(pages) {
            return answer(st);
        }
        self.reap();
        // The table is shared by every client: each may hold only its part.
        let held = self.buffers.iter().flatten().filter(|b| b.client == n).count();
        let free = self.buffers.iter().filter(|x| x.is_none()).count();
        if let Err(st) = limits::may_attach(held, free) {
            return answer(st);
        }
        let Some(b) = self.buffers.iter().position(|x| x.is_none()) else { return answer(NO_RESOURCES) };
        let (va, iova) = (BUF_VA + b as u64 * WINDOW, BUF_IOVA + b as u64 * WINDOW);
        let map = match ds.map(slot::SELF_ASPACE, va, 0, pages, rights::READ | (r & rights::WRITE)) {
            Ok(m) => m,
            Err(_) => {
                // (A manager that died during the call left what it mapped.)
                keep_dataspace::clear_window(hal::domain(), iova, va, pages);
                return answer(NO_RESOURCES);
            }
        };
        let mut addrs = vec![0u64; pages as usize];
        let pin = match ds.pin(hal::domain().0, 0, pages, iova, r & (rights::READ | rights::WRITE), &mut addrs) {
            Ok(p) => p,
            Err(_) => {
                let _ = ds.unmap(map);
                keep_dataspace::clear_window(hal::domain(), iova, va, pages);
                return answer(NO_RESOURCES);
            }
        };
        hal::add_direct(va, pages * 4096, iova);
        // The capability stays with the buffer (reply() must not free it).
        *arg = None;
        self.buffers[b] = Some(Buffer { client: n, ds: cap, va, iova, pages, rights: r, map, pin, busy: 0, orphan: false });
        Answer { st: OK, w: [b as u64, pages, r], string: None, cap: None }
    }

    fn detach(&mut self, n: u64, b: u64) -> Answer {
        let buf = usize::try_from(b).ok().and_then(|b| self.buffers.get(b)).and_then(Option::as_ref);
        if let Err(st) = rules::detach(n, buf.map(|x| x.client), buf.map_or(0, |x| x.busy)) {
            return answer(st);
        }
        self.release(b as usize);
        answer(OK)
    }

    fn release(&mut self, b: usize) {
        let buf = self.buffers[b].take().unwrap();
        hal::remove_direct(buf.va);
        Dataspace(Sender(buf.ds)).let_go_at(buf.pin, buf.map, hal::domain(), buf.iova, buf.va, buf.pages);
        self.slots.free(buf.ds);
    }

    /// One request or batch on buffer `b` has ended; an orphan buffer is let
    /// go with its last.
    fn unbusy(&mut self, b: usize) {
        let Some(buf) = self.buffers[b].as_mut() else { return };
        buf.busy -= 1;
        if buf.busy == 0 && buf.orphan {
            let n = buf.client;
            self.release_ended(b, n);
        }
    }

    /// Releases buffer `b` of client `n`, which ended, counting it for `disk`.
    fn release_ended(&mut self, b: usize, n: u64) {
        self.release(b);
        self.clients[n as usize - 1].let_go += 1;
    }

    /// init's GONE: the described client whose calls carry `payload` has
    /// ended, and its bank (which pays for its dataspaces' pages) goes once
    /// this is answered.  Its buffers are let go now, while the manager
    /// still has their pages, rather than at the next reap; one with a
    /// request on the device when the request ends.  Entries of its batches
    /// not yet started are dropped (BAD_BUFFER, as for a revoked share).
    fn gone(&mut self, payload: u64) {
        let Some(&(_, n)) = self.described.iter().find(|(p, _)| *p == payload) else { return };
        self.end_ring(n);
        for b in self.batches.iter_mut().filter(|b| b.call.payload == n && b.next < b.entries.len()) {
            let next = b.next;
            b.status[next..].fill(BAD_BUFFER as u8);
            b.next = b.entries.len();
        }
        self.finish_batches();
        for b in 0..MAX_BUFFERS {
            let Some(buf) = self.buffers[b].as_mut() else { continue };
            if buf.client != n {
                continue;
            }
            if buf.busy == 0 {
                self.release_ended(b, n);
            } else {
                buf.orphan = true;
            }
        }
    }

    /// Releases the buffers whose pin is gone: the client revoked its share,
    /// or its bank was destroyed (a killed client: the manager's pages went
    /// with it).  Without this each restart of a client that attaches a
    /// buffer would hold one of the MAX_BUFFERS slots, shared by all
    /// clients, for ever.  Run where buffers are counted or wanted (ATTACH,
    /// QUEUE_STATS, CLIENT), not per request.
    fn reap(&mut self) {
        // A ring whose page went holds its buffer busy: taken down first.
        for n in 1..self.rings.len() as u64 {
            if let Some(r) = &self.rings[n as usize]
                && self.buffers[r.buffer].as_ref().is_some_and(|b| hal::domain().lookup(b.iova).is_err())
            {
                self.end_ring(n);
            }
        }
        for b in 0..MAX_BUFFERS {
            if let Some(buf) = &self.buffers[b]
                && buf.busy == 0
                && hal::domain().lookup(buf.iova).is_err()
            {
                self.release(b);
            }
        }
    }

    /// The administrator's request.
    fn admin(&mut self, c: &Call) -> Answer {
        match c.label {
            ADD_CLIENT => {
                let (first, sectors, r) = (c.words[0], c.words[1], c.words[2]);
                if let Err(st) = rules::add_client(self.capacity, first, sectors, r) {
                    return answer(st);
                }
                let Some(cap) = self.slots.alloc() else { return answer(NO_RESOURCES) };
                let n = self.clients.len() as u64 + 1;
                if SELF_PROCESS.mint(cap, n, rights::WRITE | rights::CALL).is_err() {
                    self.slots.free(cap);
                    return answer(NO_RESOURCES);
                }
                self.clients.push(ClientRange { first, sectors, rights: r, served: 0, refused: 0, let_go: 0 });
                Answer { st: OK, w: [n, 0, 0], string: None, cap: Some(cap) }
            }
            STATS => Answer { st: OK, w: [self.served, self.refused, self.faults], string: None, cap: None },
            DEVICE_STATS => Answer { st: OK, w: [self.resets, self.restarted, self.mediator_refusals], string: None, cap: None },
            QUEUE_STATS => {
                self.reap();
                let attached = self.buffers.iter().flatten().count() as u64;
                Answer { st: OK, w: [self.most, self.flushes, attached], string: None, cap: None }
            }
            CLIENT => {
                self.reap();
                self.client_record(c.words[0])
            }
            _ => answer(BAD_REQUEST),
        }
    }

    /// CLIENT: client `k`'s record (from 0) as the reply's string.
    fn client_record(&self, k: u64) -> Answer {
        match self.clients.get(k as usize) {
            Some(cl) => {
                let described = self.described.iter().find(|(_, n)| *n == k + 1).map_or(u64::MAX, |(p, _)| p & 0xffff);
                let attached = self.buffers.iter().flatten().filter(|b| b.client == k + 1).count() as u64;
                let rec = [cl.first, cl.sectors, cl.rights, cl.served, cl.refused, described, attached, cl.let_go];
                let bytes: Vec<u8> = rec.iter().flat_map(|w| w.to_le_bytes()).collect();
                keep_rt::ipc_buffer().set_string(&bytes);
                Answer { st: OK, w: [self.clients.len() as u64, 0, 0], string: Some((usize::MAX, bytes.len())), cap: None }
            }
            None => answer(NOT_FOUND),
        }
    }
}


/// Request rings (keep_blk::ring; docs/block.md, "Request rings").
impl Server {
    /// The rules' view of buffer `b` (None: no such entry).
    fn view(&self, b: usize) -> Option<ring::BufferView> {
        let buf = self.buffers.get(b)?.as_ref()?;
        let ring_at = self.rings.get(buf.client as usize).and_then(Option::as_ref).filter(|r| r.buffer == b).map(|r| r.offset);
        Some(ring::BufferView { client: buf.client, bytes: buf.pages * 4096, rights: buf.rights, ring_at })
    }

    /// RING: words buffer, offset; the notification in `arg`.
    fn set_up_ring(&mut self, n: u64, b: u64, offset: u64, arg: &mut Option<u64>) -> Answer {
        let has = self.rings.get(n as usize).is_some_and(Option::is_some);
        let view = usize::try_from(b).ok().and_then(|b| self.view(b));
        if let Err(st) = ring::may_set_up(n, view.as_ref(), offset, has) {
            return answer(st);
        }
        let Some(note) = *arg else { return answer(NOT_NOTIFICATION) };
        if !self.guarded {
            return answer(NO_RESOURCES);
        }
        match SELF_ASPACE.identify_cap(note) {
            Ok(i) if i.ty == keep_abi::ty::NOTIFICATION && i.live && i.rights & rights::WRITE != 0 => {}
            _ => return answer(NOT_NOTIFICATION),
        }
        let b = b as usize;
        let buf = self.buffers[b].as_mut().unwrap();
        if !pinned(buf.iova, rights::READ | rights::WRITE) {
            return answer(BAD_BUFFER);
        }
        buf.busy += 1;
        let va = buf.va + offset;
        // SAFETY: the page is the client's buffer's, mapped read-write here
        // and pinned (checked just now).
        unsafe { core::ptr::write_bytes(va as *mut u8, 0, ring::REQS as usize) };
        *arg = None; // kept with the ring
        self.ring_gen += 1;
        if self.rings.len() <= n as usize {
            self.rings.resize_with(n as usize + 1, || None);
        }
        self.rings[n as usize] = Some(Ring {
            buffer: b, offset, va, note, generation: self.ring_gen, req_tail: 0, cpl_head: 0, published: 0, outstanding: 0, more: false, idle: false,
        });
        guard::watch(b, va, 1);
        self.live_rings += 1;
        Answer { st: OK, w: [ring::ENTRIES as u64, 0, 0], string: None, cap: None }
    }

    /// Takes client `n`'s ring down (RING_END, its end, QUIT): what it
    /// has on the device completes unposted.
    fn end_ring(&mut self, n: u64) -> bool {
        let Some(r) = self.rings.get_mut(n as usize).and_then(Option::take) else { return false };
        self.live_rings -= 1;
        // IDLE for good: the client's next submit KICKs, and learns
        // (RING_END told it already; after QUIT the KICK fails).
        // SAFETY: the ring's page, watched by the guard (a page gone takes
        // the write on its scratch page).
        unsafe { write_volatile((r.va + ring::IDLE) as *mut u32, 1) };
        guard::unwatch(r.buffer);
        self.lost &= !(1 << r.buffer);
        let _ = SELF_ASPACE.delete_cap(r.note);
        self.slots.free(r.note);
        self.unbusy(r.buffer);
        true
    }

    /// Is client `n`'s ring page still there (the guard saw no fault on it)?
    /// If not (the client took its pages away), the ring is taken down
    /// and never touched again.
    fn ring_ok(&mut self, n: u64) -> bool {
        let Some(Some(r)) = self.rings.get(n as usize) else { return false };
        self.lost |= guard::lost();
        if self.lost & (1 << r.buffer) == 0 {
            return true;
        }
        self.end_ring(n);
        false
    }

    /// Is buffer `b` pinned with `dev` for the device?  Looked up once an
    /// epoch (as a batch's buffer is once a batch): a pin that goes
    /// later makes the device fault, and the reset ends the request
    /// BAD_BUFFER ("When the device stops").
    fn pin_ok(&mut self, b: usize, dev: u64) -> bool {
        let Some(buf) = self.buffers.get(b).and_then(Option::as_ref) else { return false };
        let (epoch, r) = self.pin_seen[b];
        let r = if epoch == self.epoch {
            r
        } else {
            let r = hal::domain().lookup(buf.iova).map_or(0, |(r, _)| r);
            self.pin_seen[b] = (self.epoch, r);
            r
        };
        r & dev == dev
    }

    /// A completion for client `n`'s ring of generation `generation`.
    fn post(&mut self, n: u64, generation: u64, id: u64, st: u64) {
        if !self.rings.get(n as usize).and_then(Option::as_ref).is_some_and(|r| r.generation == generation) || !self.ring_ok(n) {
            return;
        }
        let Some(Some(r)) = self.rings.get_mut(n as usize) else { return };
        r.outstanding -= 1;
        let at = r.va + ring::CPLS + (r.cpl_head % ring::ENTRIES) as u64 * ring::CPL_BYTES;
        // SAFETY: the ring's page, mapped read-write and watched by the
        // guard (a page gone takes the write on its scratch page).
        unsafe {
            write_volatile(at as *mut u64, id);
            write_volatile((at + 8) as *mut u64, st);
        }
        r.cpl_head = r.cpl_head.wrapping_add(1);
        if st == OK {
            self.served += 1;
        } else {
            self.refused += 1;
        }
        if let Some(cl) = self.clients.get_mut(n as usize - 1) {
            if st == OK { cl.served += 1 } else { cl.refused += 1 }
        }
        self.posted = true;
    }

    /// Writes each ring's CPL_HEAD out and signals the client whose
    /// WAKE_AT it reached.
    fn publish(&mut self) {
        self.posted = false;
        for n in 1..self.rings.len() as u64 {
            if !self.rings[n as usize].as_ref().is_some_and(|r| r.published != r.cpl_head) || !self.ring_ok(n) {
                continue;
            }
            let r = self.rings[n as usize].as_mut().unwrap();
            // SAFETY: as in post.
            let wake = unsafe {
                fence(Ordering::Release);
                write_volatile((r.va + ring::CPL_HEAD) as *mut u32, r.cpl_head);
                fence(Ordering::SeqCst);
                read_volatile((r.va + ring::WAKE_AT) as *const u32)
            };
            if ring::crosses(r.published, r.cpl_head, wake) {
                let _ = keep_abi::Notification(r.note).signal(RING_BIT);
            }
            r.published = r.cpl_head;
        }
    }

    /// Takes requests off the rings while request slots are free: those
    /// kicked, left with requests, or (`all`) every one.
    fn drain(&mut self, all: bool) {
        if self.live_rings == 0 {
            return;
        }
        let all = all || core::mem::take(&mut self.kicked);
        for n in 1..self.rings.len() {
            if self.free_io.is_empty() {
                break;
            }
            if self.rings[n].as_ref().is_some_and(|r| all || r.more) {
                self.drain_one(n as u64);
            }
        }
        if self.posted {
            self.publish();
        }
    }

    fn drain_one(&mut self, n: u64) {
        let Some(r) = self.rings[n as usize].as_ref() else { return };
        let va = r.va;
        // The client may have taken its pages away: no touch then (its
        // ring is taken down, as a revoked buffer's requests end).
        if !self.ring_ok(n) {
            return;
        }
        let Some(range) = self.clients.get(n as usize - 1).map(|c| ring::Range { first: c.first, sectors: c.sectors, rights: c.rights }) else { return };
        // The last buffer named: its number, view and address (a stream of
        // requests names one).
        let mut last: Option<(usize, Option<ring::BufferView>, u64)> = None;
        loop {
            // (A completion posted below may have taken the ring down: its page went.)
            let Some(r) = self.rings[n as usize].as_mut() else { return };
            if self.free_io.is_empty() {
                r.more = true;
                return;
            }
            // SAFETY: the ring's page, mapped and watched by the guard.
            let (head, tail) = unsafe {
                (read_volatile((va + ring::REQ_HEAD) as *const u32), read_volatile((va + ring::CPL_TAIL) as *const u32))
            };
            let Some(w) = ring::waiting(head, r.req_tail) else {
                self.ring_bad += 1;
                r.more = false;
                return;
            };
            if w == 0 {
                r.more = false;
                return;
            }
            if ring::room(r.cpl_head, tail, r.outstanding) == 0 {
                // Room comes only when the client takes completions: it
                // kicks again, or the next drain of all rings sees it.
                r.more = false;
                return;
            }
            fence(Ordering::Acquire);
            let at = va + ring::REQS + (r.req_tail % ring::ENTRIES) as u64 * ring::REQ_BYTES;
            // SAFETY: as above; one copy of the descriptor, checked in it.
            let d = ring::Desc::decode(core::array::from_fn(|k| unsafe { read_volatile((at + 8 * k as u64) as *const u64) }));
            r.req_tail = r.req_tail.wrapping_add(1);
            r.outstanding += 1;
            let (generation, tail) = (r.generation, r.req_tail);
            // SAFETY: as above.
            unsafe { write_volatile((va + ring::REQ_TAIL) as *mut u32, tail) };
            let b = d.buffer as usize;
            let (view, bva) = match last {
                Some((lb, v, a)) if lb == b => (v, a),
                _ => {
                    let (v, a) = (self.view(b), self.buffers.get(b).and_then(Option::as_ref).map_or(0, |x| x.va));
                    last = Some((b, v, a));
                    (v, a)
                }
            };
            let checked = ring::check(&d, n, &range, view.as_ref())
                .and_then(|c| if self.pin_ok(b, if c.read { rights::WRITE } else { rights::READ }) { Ok(c) } else { Err(BAD_BUFFER) });
            match checked {
                Ok(c) => {
                    let data = (bva + c.offset) as *mut u8;
                    if let Err(st) = self.submit(None, c.read, c.at, data, c.len as usize, 0, Some(b), Some((n, generation, d.id))) {
                        self.post(n, generation, d.id, st);
                    }
                }
                Err(st) => self.post(n, generation, d.id, st),
            }
        }
    }

    /// Before a receive that waits: with nothing on the device, IDLE is
    /// set on every ring and the rings looked at once more (a client that
    /// posted before it saw IDLE does not kick).  False: requests came,
    /// do not wait.
    fn may_sleep(&mut self) -> bool {
        if self.live_rings == 0 || self.on_device > 0 {
            return true;
        }
        let mut work = false;
        for n in 1..self.rings.len() as u64 {
            if self.rings[n as usize].is_none() || !self.ring_ok(n) {
                continue;
            }
            let r = self.rings[n as usize].as_mut().unwrap();
            // SAFETY: the ring's page, mapped and watched by the guard.
            let (head, tail) = unsafe {
                write_volatile((r.va + ring::IDLE) as *mut u32, 1);
                fence(Ordering::SeqCst);
                (read_volatile((r.va + ring::REQ_HEAD) as *const u32), read_volatile((r.va + ring::CPL_TAIL) as *const u32))
            };
            r.idle = true;
            // Requests it can take now (with room for their completions).
            if ring::waiting(head, r.req_tail).is_some_and(|w| w > 0) && ring::room(r.cpl_head, tail, r.outstanding) > 0 {
                r.more = true;
                work = true;
            }
        }
        !work
    }

    /// After a receive: IDLE cleared where it was set.
    fn awake(&mut self) {
        for n in 1..self.rings.len() as u64 {
            if !self.rings[n as usize].as_ref().is_some_and(|r| r.idle) {
                continue;
            }
            self.epoch += 1;
            if self.ring_ok(n) {
                let r = self.rings[n as usize].as_mut().unwrap();
                r.idle = false;
                // SAFETY: as in may_sleep.
                unsafe { write_volatile((r.va + ring::IDLE) as *mut u32, 0) };
            }
        }
    }
}

fn main(_: u64, _: u64) -> i32 {
    // Its cappages, like its DMA pages (keep_virtio::device::open), come from
    // its bank (the memory pool only when started by hand without one).
    let mut slots = SlotPool::growable_from(keep_frames::own_cappage, SELF_ASPACE);
    slots.reserve(RET);
    slots.reserve(ARG);
    let (Some(irq_slot), Some(irq_me), Some(next_ret)) = (slots.alloc(), slots.alloc(), slots.alloc()) else {
        return fail("slots", "none free");
    };
    // From the description: the PCI server and the dataspace manager by name.
    let pci = if names::present(names::NAMES_SLOT) {
        let Some(p) = slots.alloc() else { return fail("slots", "none free") };
        if let Err(e) = names::lookup_patiently("pci", p, keep_rt::ipc_buffer()) {
            return fail("the PCI server by name ('pci')", names::status::name(e));
        }
        if let Err(e) = names::lookup_patiently("dataspace", DS_SLOT, keep_rt::ipc_buffer()) {
            println!("blk: no dataspace manager by name ({}): ATTACH refuses every buffer", names::status::name(e));
        }
        p
    } else {
        PCI_SLOT
    };
    let layout = Layout { mmio_va: MMIO_VA, dma_va: DMA_VA, iova: IOVA, dma_pages: 64 };
    let Opened { sid, session, transport, mediated } =
        match keep_virtio::device::open(Pci(Sender(pci)), 0x1042, "virtio-blk", FAULT_PAYLOAD, &layout, &mut slots) {
            Ok(o) => o,
            Err((what, why)) => return fail(&what, why),
        };
    let mut blk = match VirtIOBlk::new(transport.hiding(HIDDEN_FEATURES)) {
        Ok(b) => b,
        Err(e) => return fail("virtio-blk", alloc::format!("{e:?}")),
    };
    // The request headers and the message-string data pages, at fixed
    // device addresses the device reaches in place.
    let (hdr_iova, hdr) = KeepHal::dma_alloc(1, BufferDirection::Both);
    let (data_iova, data) = KeepHal::dma_alloc(IN_FLIGHT, BufferDirection::Both);
    hal::add_direct(hdr.as_ptr() as u64, 4096, hdr_iova);
    hal::add_direct(data.as_ptr() as u64, IN_FLIGHT as u64 * 4096, data_iova);
    // Completions signal MSI-X entry 0 (keep_virtio::msix, as the network
    // server's queues do): an MSI line of the kernel's, remapped by the
    // IOMMU for this function alone.  Without it, the INTx line.
    blk.enable_interrupts();
    let msix = keep_virtio::msix::route_queues(session, 0, 1, irq_slot, irq_me, IRQ_PAYLOAD);
    let irq = match msix {
        Ok(line) => Some((Interrupt(irq_slot), line)),
        Err(ref why) => {
            println!("blk: no MSI-X ({why}); the INTx line instead");
            let _ = SELF_ASPACE.delete_cap(irq_me);
            let _ = SELF_ASPACE.delete_cap(irq_slot);
            session.irq(irq_slot).ok().and_then(|line| {
                let i = Interrupt(irq_slot);
                SELF_PROCESS.mint(irq_me, IRQ_PAYLOAD, rights::WRITE).and_then(|_| i.bind(line, irq_me)).ok()?;
                Some((i, line))
            })
        }
    };
    let capacity = blk.capacity();
    let through = if mediated { "the PCI server's mediator (no IOMMU)" } else { "the IOMMU" };
    match (irq, msix.is_ok()) {
        (Some((_, line)), true) => println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through {through}, MSI-X through line {line}"),
        (Some((_, line)), false) => println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through {through}, interrupt line {line}"),
        (None, _) => println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through {through}, polling (no interrupt line)"),
    }
    let mut s = Server {
        blk,
        session,
        sid,
        mediated,
        msix: msix.is_ok(),
        broken: false,
        resets: 0,
        restarted: 0,
        mediator_refusals: 0,
        fruitless: 0,
        stalled: 0,
        capacity,
        clients: Vec::new(),
        buffers: (0..MAX_BUFFERS).map(|_| None).collect(),
        served: 0,
        refused: 0,
        faults: 0,
        most: 0,
        flushes: 0,
        irq,
        slots,
        described: Vec::new(),
        backlog: VecDeque::new(),
        inflight: [None; IN_FLIGHT],
        calls: (0..IN_FLIGHT).map(|_| None).collect(),
        on_device: 0,
        batches: Vec::new(),
        next_batch: 0,
        pump_id: 0,
        slot_of: [0; QUEUE],
        free_io: (0..IN_FLIGHT).rev().collect(),
        headers: Headers { va: hdr.as_ptr() as u64, data_va: data.as_ptr() as u64 },
        next_ret,
        rings: Vec::new(),
        ring_of: [(0, 0, 0); IN_FLIGHT],
        live_rings: 0,
        ring_gen: 0,
        kicked: false,
        posted: false,
        ring_bad: 0,
        epoch: 1,
        pin_seen: vec![(0, 0); MAX_BUFFERS],
        guarded: false,
        lost: 0,
    };
    // The guard makes a ring whose page goes harmless (guard.rs).
    let mut guard = match guard::start(&mut s.slots, "blk-guard") {
        Ok(g) => {
            s.guarded = true;
            Some(g)
        }
        Err(e) => {
            println!("blk: no guard for request rings ({e}): RING is refused");
            None
        }
    };
    loop {
        // Start, in order, what can start.
        while let Some(c) = s.backlog.front() {
            let (io, drain) = Server::needs_device(c);
            if (io && s.free_io.is_empty()) || (drain && !(s.on_device == 0 && s.batches.is_empty())) {
                break;
            }
            let c = s.backlog.pop_front().unwrap();
            if c.payload == 0 && c.label == QUIT {
                s.reply(c, answer(OK));
                for n in 0..s.rings.len() as u64 {
                    s.end_ring(n);
                }
                for b in 0..MAX_BUFFERS {
                    if s.buffers[b].is_some() {
                        s.release(b);
                    }
                }
                if let Some((i, line)) = s.irq {
                    let _ = i.unbind(line);
                }
                if let Some(g) = guard.take() {
                    g.stop(&mut s.slots);
                }
                drop(s); // resets the device: no DMA after this
                hal::finish();
                let _ = session.release();
                return 0;
            }
            if c.payload == 0 {
                let a = s.admin(&c);
                s.reply(c, a);
            } else if c.payload >= FAULT_PAYLOAD - 1 {
                s.reply(c, answer(BAD_REQUEST));
            } else if let Some((c, a)) = s.client(c) {
                s.reply(c, a);
            }
        }
        s.pump();
        s.drain(false);
        if s.broken {
            // A refused submission: reset before waiting (what is on the
            // device now is what was on it when it stopped).
            s.recover();
            continue;
        }
        if !s.may_sleep() {
            s.drain(true);
            continue;
        }
        let wait = if s.on_device == 0 { 0 } else if s.irq.is_some() { IRQ_WAIT_MS } else { 1 };
        keep_rt::ipc_buffer().set_recv_slots(&[s.next_ret, ARG]);
        let m = recv(Tag::new(0).with_slots(2), wait);
        s.awake();
        if let Some(c) = s.take(&m) {
            s.backlog.push_back(c);
        }
        s.harvest();
        if m.err == err::TIMEOUT && s.on_device > 0 && s.irq.is_some() {
            s.stalled += 1;
            if s.stalled >= STALLED_WAITS && !s.broken {
                println!("blk: no request completed in {} ms with {} on the device", STALLED_WAITS as u64 * IRQ_WAIT_MS, s.on_device);
                s.broken = true;
            }
        }
        if s.broken {
            s.recover();
        }
    }
}

// One guard window per buffer of the table.
const _: () = assert!(keep_blk::limits::TABLE <= guard::WINDOWS);

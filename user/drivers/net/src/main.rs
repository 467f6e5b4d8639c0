//! The network server (protocol: lib.rs; docs/network.md, "The network").
//! It opens the virtio-net function through the PCI server (capability at
//! PCI_SLOT), drives it with `virtio-drivers` whose DMA memory is pages it
//! holds, mapped into the session's DMA domain, and switches frames
//! between the NIC and its stacks by destination address.
//!
//! Started from the system description (a name service in NAMES_SLOT), it
//! finds the PCI server as `pci` by name, and its stacks are the
//! description's: a client's address is its grant (`net=A.B.C.D`), asked
//! of init the first time it calls, and registered for it then (its
//! restarted instances call with the same payload and find it registered).
//!
//! The server is single-threaded.  It takes frames off the NIC's receive
//! queue, and finished frames off its transmit queue, when the NIC's
//! MSI-X interrupt arrives (an IRQ message; without one, on every
//! request); a stack that has nothing to do waits in `WAIT`, which the
//! server answers when a frame is queued for it.
//!
//! A stack that attached a ring (lib.rs, ring.rs) has its frames copied
//! once from the NIC's receive buffer into one of its receive buffers,
//! and the frames it submits sent from its own pages (nic.rs): no
//! message carries a frame, and a stack that is busy is not called at all.

#![no_std]
#![no_main]

extern crate alloc;

use keep_guard as guard;
mod nic;

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use keep_abi::{Notification, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, label, recv, rights, slot};
use keep_dataspace::{DS_SLOT, Dataspace};
use keep_loader::SlotPool;
use keep_net::ring::{self, Control, QUEUE, RX_DONE, RX_FREE, TX_DONE, TX_SUBMIT, check_rx, check_tx, desc, waiting};
use keep_net::*;
use keep_pci::{PCI_SLOT, Pci, Session};
use keep_rt::println;
use keep_system::names;
use keep_virtio::device::{Layout, Opened};
use keep_virtio::hal::{self, KeepHal};
use keep_virtio::pci::Sid;
use nic::Nic;
use virtio_drivers::{BufferDirection, Hal};

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
/// Where a call's capability (ATTACH's dataspace) arrives.
const ARG: u64 = slot::FIRST_FREE + 1;
const FAULT_PAYLOAD: u64 = u64::MAX;
/// The payload of the NIC's interrupt messages.
const IRQ_PAYLOAD: u64 = u64::MAX - 1;
const MMIO_VA: u64 = 0x0000_4100_0000_0000;
const DMA_VA: u64 = 0x0000_4200_0000_0000;
/// Device addresses of the DMA pages: the server's choice, not RAM's.
const IOVA: u64 = 0x20_0000_0000;
/// Stack i's ring: mapped at RING_VA + i * RING_WINDOW, pinned for device
/// reads at RING_IOVA + i * RING_WINDOW.
const RING_VA: u64 = 0x0000_4400_0000_0000;
const RING_IOVA: u64 = 0x30_0000_0000;
const RING_WINDOW: u64 = 1 << 20;
/// Resets in a row with no frame finished between them before the frames
/// on the NIC are dropped instead of put on again.
const MAX_FRUITLESS: u32 = 3;

/// A stack's ring as the server sees it (ring.rs has the layout).  The
/// server's indices are its own: it never reads them back from the page.
struct RingState {
    ds: u64, // the slot of the dataspace capability
    va: u64,
    pages: u64,
    map: u64,
    pin: u64,
    generation: u64,
    free_cons: u32,
    done_prod: u32,
    sub_cons: u32,
    txd_prod: u32,
    /// Frames taken from TX_SUBMIT still on the device (their TX_DONE
    /// entries are owed: room for them is kept).
    owed: u32,
    /// The last WAIT asked to be woken by TX_DONE too.
    wait_tx: bool,
    bad_desc: u64,
    bad_index: u64,
    tampered: u64,
}

impl RingState {
    fn ctl(&self) -> Control {
        Control(self.va)
    }
    /// Writes one of the server's indices, counting a stack that wrote it.
    fn put(&mut self, q: usize, prod: bool, old: u32, new: u32) {
        let c = self.ctl();
        if (if prod { c.prod(q) } else { c.cons(q) }) != old {
            self.tampered += 1;
        }
        if prod { c.set_prod(q, new) } else { c.set_cons(q, new) }
    }
    /// Gives a transmit buffer back with `st`.
    fn tx_done(&mut self, offset: u64, st: u64) {
        let p = self.txd_prod;
        self.ctl().set_entry(TX_DONE, p, desc(offset, 0, st));
        self.txd_prod = p.wrapping_add(1);
        self.put(TX_DONE, true, p, self.txd_prod);
    }
    /// Received frames the stack has not taken (None: its index is out of range).
    fn rx_waiting(&self) -> Option<u32> {
        waiting(self.done_prod, self.ctl().cons(RX_DONE))
    }

    /// Are RX_FREE's producer and RX_DONE's consumer (the stack's) within
    /// a queue of the server's consumer and producer?
    fn rx_in_range(&self) -> bool {
        waiting(self.ctl().prod(RX_FREE), self.free_cons).is_some() && self.rx_waiting().is_some()
    }
}

/// A frame on the device from a ring: (stack, ring generation, buffer offset).
fn tx_tag(i: usize, generation: u64, offset: u64) -> u64 {
    i as u64 | (generation & 0xff_ffff) << 8 | offset << 32
}

/// The ring a frame's tag names, if it is still attached: (stack, ring, offset).
fn tagged_ring(stacks: &mut [StackState], tag: u64) -> Option<(usize, &mut RingState, u64)> {
    let (i, generation, off) = ((tag & 0xff) as usize, tag >> 8 & 0xff_ffff, tag >> 32);
    let r = stacks.get_mut(i)?.ring.as_mut().filter(|r| r.generation & 0xff_ffff == generation)?;
    Some((i, r, off))
}

/// Are stack `i`'s ring's control page and the page at `off` still pinned
/// for the device?  A stack that revoked its share unpinned them (the
/// manager does, first page first).
fn ring_pinned(i: usize, off: u64) -> bool {
    let base = RING_IOVA + i as u64 * RING_WINDOW;
    [base, base + (off & !(ring::PAGE - 1))]
        .into_iter()
        .all(|a| matches!(hal::domain().lookup(a), Ok((r, _)) if r & rights::READ != 0))
}

struct StackState {
    ip: u64,
    live: bool,
    queue: VecDeque<Vec<u8>>,
    delivered: u64,
    sent: u64,
    dropped: u64,
    waiter: Option<u64>, // the return capability of its WAIT, while it waits
    ring: Option<RingState>,
    notify: Option<Notify>,
}

/// A stack's notification (NOTIFY): signalled when `delivered` (or, with
/// `tx`, the ring's TX_DONE producer) moved past what it was last told.
struct Notify {
    cap: u64,
    bits: u64,
    tx: bool,
    told: (u64, u32),
}

impl StackState {
    /// What a WAIT waits for: frames for it (and with WAIT_TX, transmit
    /// buffers given back).
    fn ready(&self) -> u64 {
        match &self.ring {
            None => self.queue.len() as u64,
            Some(r) => {
                let rx = r.rx_waiting().unwrap_or(0) as u64;
                let tx = if r.wait_tx { waiting(r.txd_prod, r.ctl().cons(TX_DONE)).unwrap_or(0) as u64 } else { 0 };
                rx + tx
            }
        }
    }
}

struct Server {
    nic: Nic,
    /// The function's session, to set the NIC up again after a reset.
    session: Session,
    sid: Sid,
    mediated: bool,
    /// Its queues signal MSI-X entry 0 (pointed at it again after a reset).
    interrupts: bool,
    /// A DMA fault came and the NIC says it needs a reset (`recover`).
    broken: bool,
    resets: u64,
    /// Resets in a row with no frame finished since the one before, and
    /// the NIC's count of finished frames at the last reset.
    fruitless: u32,
    finished_at_reset: u64,
    mac: u64,
    stacks: Vec<StackState>,
    from_nic: u64,
    to_nic: u64,
    dropped: u64,
    faults: u64,
    slots: SlotPool,
    /// Described stacks: (name-service payload, stack index).
    described: Vec<(u64, usize)>,
    /// Rings attached so far (tells a finished frame of an old ring apart).
    generations: u64,
    /// A frame from one stack to another assembled from its ring.
    scratch: Vec<u8>,
    /// A DMA page for the frames of SEND (message strings).
    string_va: u64,
}

fn fail(what: &str, e: impl core::fmt::Display) -> i32 {
    println!("net: {what}: {e}");
    1
}

/// Queues `frame` for the stack it is addressed to, or drops it (counted
/// in `dropped`): into a receive buffer of its ring if it has one.
fn deliver(stacks: &mut [StackState], dropped: &mut u64, frame: &[u8]) {
    let Some(s) = dest_ip(frame).and_then(|ip| stacks.iter_mut().find(|s| s.live && s.ip == ip)) else {
        *dropped += 1;
        return;
    };
    let ok = match s.ring.as_mut() {
        Some(r) => ring_deliver(r, frame),
        None if s.queue.len() >= QUEUE_FRAMES => false,
        None => {
            s.queue.push_back(frame.to_vec());
            true
        }
    };
    if ok {
        s.delivered += 1;
    } else {
        s.dropped += 1;
        *dropped += 1;
    }
}

/// Copies `frame` into the next receive buffer the stack offered and
/// publishes it in RX_DONE; false (dropped) when RX_DONE is full or no
/// good buffer is offered.  Malformed buffers are taken and counted.
fn ring_deliver(r: &mut RingState, frame: &[u8]) -> bool {
    let c = r.ctl();
    match r.rx_waiting() {
        None => {
            r.bad_index += 1;
            return false;
        }
        Some(n) if n >= QUEUE => return false,
        Some(_) => {}
    }
    let off = loop {
        match waiting(c.prod(RX_FREE), r.free_cons) {
            None => {
                r.bad_index += 1;
                return false;
            }
            Some(0) => return false,
            Some(_) => {}
        }
        let d = c.entry(RX_FREE, r.free_cons);
        let old = r.free_cons;
        r.free_cons = old.wrapping_add(1);
        r.put(RX_FREE, false, old, r.free_cons);
        match check_rx(d, r.pages) {
            Some(off) => break off,
            None => r.bad_desc += 1,
        }
    };
    // SAFETY: check_rx put the buffer inside the ring, mapped read-write at va.
    let dst = unsafe { core::slice::from_raw_parts_mut((r.va + off) as *mut u8, frame.len()) };
    dst.copy_from_slice(frame);
    let p = r.done_prod;
    c.set_entry(RX_DONE, p, desc(off, frame.len() as u64, 0));
    r.done_prod = p.wrapping_add(1);
    r.put(RX_DONE, true, p, r.done_prod);
    true
}

/// A frame of a ring finished on the device: its buffer goes back.
fn completed(stacks: &mut [StackState], tag: u64, in_place: bool) {
    if !in_place {
        return; // its TX_DONE went when it was submitted
    }
    if let Some((_, r, off)) = tagged_ring(stacks, tag) {
        r.owed -= 1;
        r.tx_done(off, OK);
    }
}

impl Server {
    fn stack_for(&self, ip: u64) -> Option<usize> {
        self.stacks.iter().position(|s| s.live && s.ip == ip)
    }

    /// Registers a stack with address `ip`: its index, or a status.
    fn register(&mut self, ip: u64) -> Result<usize, u64> {
        rules::register(ip, ip != 0 && self.stack_for(ip).is_some(), self.stacks.len())?;
        self.stacks.push(StackState { ip, live: true, queue: VecDeque::new(), delivered: 0, sent: 0, dropped: 0, waiter: None, ring: None, notify: None });
        Ok(self.stacks.len() - 1)
    }

    /// The stack a call's payload names: a capability the server minted
    /// (payload = index + 1), or a described client, registered with the
    /// address the description grants it on its first call.
    fn stack_of(&mut self, payload: u64) -> Result<usize, u64> {
        if names::client_of(payload).is_none() {
            return Ok(payload as usize - 1);
        }
        if let Some(&(_, i)) = self.described.iter().find(|(p, _)| *p == payload) {
            return Ok(i);
        }
        let who = names::client_of(payload).unwrap_or(0);
        let text = names::grant(names::NAMES_SLOT, payload, keep_rt::ipc_buffer()).map_err(|e| {
            println!("net: described client {who}: no grant ({})", names::status::name(e));
            NOT_REGISTERED
        })?;
        let ip = keep_system::grant::net(&text).map_err(|why| {
            println!("net: described client {who}: {why}");
            NOT_REGISTERED
        })? as u64;
        let i = self.register(ip).map_err(|st| {
            println!("net: described client {who}: {} not registered ({})", Ip(ip), status_name(st));
            st
        })?;
        self.described.push((payload, i));
        Ok(i)
    }

    fn deliver(&mut self, frame: &[u8]) {
        deliver(&mut self.stacks, &mut self.dropped, frame);
    }

    /// Takes every received frame off the NIC and hands its buffer back;
    /// takes finished frames off the transmit queue, and sends what rings
    /// have waiting (a full transmit queue may have left some).
    fn pump(&mut self) {
        let (stacks, dropped) = (&mut self.stacks, &mut self.dropped);
        self.from_nic += self.nic.receive(|frame| deliver(stacks, dropped, frame));
        let stacks = &mut self.stacks;
        self.nic.complete(|tag, in_place| completed(stacks, tag, in_place));
        for i in 0..self.stacks.len() {
            if self.stacks[i].ring.is_some() {
                let _ = self.ring_send(i);
            }
        }
    }

    /// Answers every waiting stack that has a frame now, and signals the
    /// notification of each that got frames (or buffers back) since last.
    fn wake(&mut self) {
        for st in self.stacks.iter_mut() {
            if let Some(n) = st.notify.as_mut() {
                let tx = if n.tx { st.ring.as_ref().map_or(0, |r| r.txd_prod) } else { 0 };
                let now = (st.delivered, tx);
                if now != n.told {
                    n.told = now;
                    if Notification(n.cap).signal(n.bits).is_err() {
                        // Destroyed (its owner ended): the stack is told no more.
                        let c = n.cap;
                        st.notify = None;
                        let _ = SELF_ASPACE.delete_cap(c);
                        self.slots.free(c);
                    }
                }
            }
            if st.waiter.is_none() {
                continue;
            }
            let n = st.ready();
            if n == 0 {
                continue;
            }
            if let Some(c) = st.waiter.take() {
                // STALE if its time-out passed meanwhile: nothing to do.
                let _ = Return(c).reply(Tag::new(0), [OK, n, 0, 0]);
                let _ = SELF_ASPACE.delete_cap(c);
                self.slots.free(c);
            }
        }
    }

    /// Takes the frames stack `i` submitted in its ring, checks each and
    /// sends it (or switches it to another stack), as far as the transmit
    /// queue and the room in TX_DONE allow.  BAD_REQUEST when one of the
    /// stack's indices is out of range (nothing is taken then).
    fn ring_send(&mut self, i: usize) -> u64 {
        loop {
            let Some(r) = self.stacks[i].ring.as_mut() else { return BAD_REQUEST };
            let c = r.ctl();
            let (Some(n), Some(given)) = (waiting(c.prod(TX_SUBMIT), r.sub_cons), waiting(r.txd_prod, c.cons(TX_DONE))) else {
                r.bad_index += 1;
                return BAD_REQUEST;
            };
            // A TX_DONE entry is kept for every frame taken.
            if n == 0 || given + r.owed >= QUEUE || !self.nic.can_send() || self.nic.stopped() {
                return OK;
            }
            let d = c.entry(TX_SUBMIT, r.sub_cons);
            let old = r.sub_cons;
            r.sub_cons = old.wrapping_add(1);
            r.put(TX_SUBMIT, false, old, r.sub_cons);
            let (off, len) = match check_tx(d, r.pages) {
                Ok(x) => x,
                Err(st) => {
                    r.bad_desc += 1;
                    r.tx_done(ring::desc_offset(d), st);
                    continue;
                }
            };
            // The head is copied first and checked there: the device sends
            // that copy, so the stack cannot change what was checked.
            let h = len.min(nic::HEAD);
            let mut head = [0u8; nic::HEAD];
            // SAFETY: check_tx put the frame inside the ring, mapped at va.
            head[..h].copy_from_slice(unsafe { core::slice::from_raw_parts((r.va + off) as *const u8, h) });
            let (va, generation) = (r.va, r.generation);
            let st = self.check(i, &head[..h], len);
            if st != OK {
                self.stacks[i].ring.as_mut().unwrap().tx_done(off, st);
                continue;
            }
            self.stacks[i].sent += 1;
            if dest_ip(&head[..h]).and_then(|ip| self.stack_for(ip)).is_some() {
                let mut f = core::mem::take(&mut self.scratch);
                f.clear();
                f.extend_from_slice(&head[..h]);
                // SAFETY: as above.
                f.extend_from_slice(unsafe { core::slice::from_raw_parts((va + off + h as u64) as *const u8, len - h) });
                self.deliver(&f);
                self.scratch = f;
                self.stacks[i].ring.as_mut().unwrap().tx_done(off, OK);
                continue;
            }
            let rest = (len > h).then(|| (va + off + h as u64, len - h));
            let sent = self.nic.send(&head[..h], rest, tx_tag(i, generation, off));
            let r = self.stacks[i].ring.as_mut().unwrap();
            match sent {
                Ok(()) if rest.is_some() => {
                    self.to_nic += 1;
                    r.owed += 1;
                }
                Ok(()) => {
                    self.to_nic += 1;
                    r.tx_done(off, OK);
                }
                Err(why) => {
                    println!("net: a frame could not be sent: {why}");
                    r.tx_done(off, IO_ERROR);
                }
            }
        }
    }

    /// Resets the NIC if it stopped: it said so after a DMA fault, or
    /// while draining (NEEDS_RESET), or the mediator refused a chain.
    fn recover_if_stopped(&mut self) {
        if self.broken || self.nic.stopped() {
            self.recover();
        }
    }

    /// The NIC stopped: reset it and set it up again (receive buffers
    /// posted, its queues pointed at MSI-X entry 0 again), put the frames
    /// that were on it on again but those of rings no longer pinned (the
    /// cause, when a stack took its pages away under its frames), which
    /// are dropped, their rings let go of.  After MAX_FRUITLESS resets in a
    /// row with nothing finished, every frame is dropped (a ring's buffer
    /// given back IO_ERROR).
    fn recover(&mut self) {
        self.broken = false;
        self.resets += 1;
        self.fruitless = if self.nic.finished == self.finished_at_reset { self.fruitless + 1 } else { 1 };
        self.finished_at_reset = self.nic.finished;
        let give_up = self.fruitless > MAX_FRUITLESS;
        let said = if self.nic.needs_reset() { "it needed a reset" } else { "it had not stopped" };
        let (session, sid, mediated) = (self.session, self.sid, self.mediated);
        let stacks = &mut self.stacks;
        let mut gone = 0u64; // bit i: stack i's ring lost its pins
        let (again, dropped) = self.nic.reset(|| keep_virtio::device::transport(session, sid, mediated, 0x1041), self.interrupts, |tag, in_place| {
            if !in_place || tag == u64::MAX {
                return !give_up; // nothing of it in a stack's pages
            }
            let Some((i, r, off)) = tagged_ring(stacks, tag) else { return false };
            if !ring_pinned(i, off) {
                r.owed -= 1;
                gone |= 1 << i;
                return false;
            }
            if give_up {
                r.owed -= 1;
                r.tx_done(off, IO_ERROR);
            }
            !give_up
        });
        if self.interrupts && let Err(e) = keep_virtio::msix::point_queues(self.session, 0, 2) {
            println!("net: after the NIC's reset, {e}; the server ends");
            keep_rt::exit(3);
        }
        println!("net: the NIC was reset ({} time{}; {said}): {again} frames put on again, {dropped} dropped",
                 self.resets, if self.resets == 1 { "" } else { "s" });
        for i in 0..self.stacks.len().min(64) {
            if gone & 1 << i != 0 {
                println!("net: stack {i}'s ring lost its pins under its frames: let go of");
                self.detach(i);
            }
        }
        self.pump();
        self.wake();
    }

    /// ATTACH: the capability must be a SENDER to the server's own
    /// dataspace manager (the server sends it its address space and DMA
    /// domain to map and pin), naming a live dataspace of MIN_PAGES to
    /// MAX_PAGES pages shared with READ and WRITE.  Replaces the stack's
    /// earlier ring.  (status, pages).
    fn attach(&mut self, i: usize, arg: &mut Option<u64>) -> (u64, u64) {
        let Some(cap) = *arg else { return (NOT_DATASPACE, 0) };
        // The manager by name again if it was restarted.
        keep_dataspace::refresh(DS_SLOT);
        match SELF_ASPACE.compare_cap(cap, DS_SLOT) {
            Ok((true, _)) if SELF_ASPACE.identify_cap(cap).is_ok_and(|c| c.ty == keep_abi::ty::SENDER) => {}
            _ => return (NOT_DATASPACE, 0),
        }
        let ds = Dataspace(Sender(cap));
        let Ok((pages, r, _)) = ds.info() else { return (NOT_DATASPACE, 0) };
        if let Err(st) = rules::attach(pages, r) {
            return (st, 0);
        }
        self.detach(i);
        let (va, iova) = (RING_VA + i as u64 * RING_WINDOW, RING_IOVA + i as u64 * RING_WINDOW);
        let Ok(map) = ds.map(slot::SELF_ASPACE, va, 0, pages, rights::READ | rights::WRITE) else {
            // (A manager that died during the call left what it mapped.)
            keep_dataspace::clear_window(hal::domain(), iova, va, pages);
            return (NO_RESOURCES, 0);
        };
        // The device only reads a ring (frames to send); receive buffers are
        // written by the server.
        let mut addrs = [0u64; ring::MAX_PAGES as usize];
        let pin = match ds.pin(hal::domain().0, 0, pages, iova, rights::READ, &mut addrs[..pages as usize]) {
            Ok(p) => p,
            Err(_) => {
                let _ = ds.unmap(map);
                keep_dataspace::clear_window(hal::domain(), iova, va, pages);
                return (NO_RESOURCES, 0);
            }
        };
        hal::add_direct(va, pages * 4096, iova);
        guard::watch(i, va, pages);
        *arg = None; // the capability stays with the ring
        self.generations += 1;
        let mut rs = RingState {
            ds: cap, va, pages, map, pin, generation: self.generations,
            free_cons: 0, done_prod: 0, sub_cons: 0, txd_prod: 0, owed: 0, wait_tx: false,
            bad_desc: 0, bad_index: 0, tampered: 0,
        };
        let c = rs.ctl();
        for q in [RX_DONE, TX_DONE] {
            c.set_prod(q, 0);
        }
        for q in [RX_FREE, TX_SUBMIT] {
            c.set_cons(q, 0);
        }
        // Frames that waited in the message-string queue go into the ring.
        let st = &mut self.stacks[i];
        while let Some(f) = st.queue.pop_front() {
            if !ring_deliver(&mut rs, &f) {
                st.dropped += 1;
            }
        }
        st.ring = Some(rs);
        (OK, pages)
    }

    /// Takes stack `i`'s ring away: once nothing of it is on the device,
    /// unpinned and unmapped (STALE if its owner revoked the share: the
    /// manager removed both then).
    fn detach(&mut self, i: usize) {
        let Some(r) = self.stacks[i].ring.take() else { return };
        if r.owed > 0 {
            let stacks = &mut self.stacks;
            self.nic.drain(|tag, in_place| completed(stacks, tag, in_place));
            // A NIC that stopped under the ring's frames is reset before the
            // unpin (the reset drops them: the ring is no longer attached).
            self.recover_if_stopped();
        }
        hal::remove_direct(r.va);
        Dataspace(Sender(r.ds)).let_go_at(r.pin, r.map, hal::domain(), RING_IOVA + i as u64 * RING_WINDOW, r.va, r.pages);
        guard::unwatch(i);
        self.slots.free(r.ds);
    }

    /// init's notice that the described client whose calls carry `payload`
    /// has ended (its bank goes next): its ring is unpinned and unmapped
    /// now, while its pages are still there, and a WAIT it left is
    /// dropped.  Its registration and the frames queued for it stay for
    /// its next instance, which attaches a new ring.
    fn gone(&mut self, payload: u64) {
        // A described client, or a stack of ADD_STACK (payload index + 1:
        // ktest's and the benchmarks' instances, whose starter may tell).
        let i = match self.described.iter().find(|(p, _)| *p == payload) {
            Some(&(_, i)) => i,
            None if names::client_of(payload).is_none() && (1..=self.stacks.len() as u64).contains(&payload) => payload as usize - 1,
            None => return,
        };
        if let Some(c) = self.stacks[i].waiter.take() {
            let _ = SELF_ASPACE.delete_cap(c);
            self.slots.free(c);
        }
        self.set_notify(i, None, 0, 0);
        self.detach(i);
    }

    /// NOTIFY from stack `i`: its notification (the capability in `arg`,
    /// kept) and what it is signalled with, or none.
    fn set_notify(&mut self, i: usize, arg: Option<&mut Option<u64>>, bits: u64, flags: u64) -> u64 {
        let cap = arg.as_ref().and_then(|a| **a);
        if let Err(st) = rules::notify(cap.is_some(), bits, flags) {
            return st;
        }
        if let Some(c) = cap {
            let ok = SELF_ASPACE.identify_cap(c).is_ok_and(|id| id.ty == keep_abi::ty::NOTIFICATION && id.rights & rights::WRITE != 0);
            if !ok {
                return DENIED;
            }
        }
        if let Some(old) = self.stacks[i].notify.take() {
            let _ = SELF_ASPACE.delete_cap(old.cap);
            self.slots.free(old.cap);
        }
        if let (Some(c), Some(a)) = (cap, arg) {
            *a = None; // kept
            let st = &self.stacks[i];
            let tx = st.ring.as_ref().map_or(0, |r| r.txd_prod);
            // Told of nothing yet: frames already waiting are signalled at once.
            let told = if st.ready() > 0 { (u64::MAX, tx) } else { (st.delivered, tx) };
            self.stacks[i].notify = Some(Notify { cap: c, bits, tx: flags & WAIT_TX != 0, told });
        }
        OK
    }

    /// Lets go of the rings whose pages went while attached (bit i: stack
    /// i; guard.rs): the stack finds no ring, its frames queue as messages.
    #[inline(never)]
    fn lost(&mut self, lost: u64) {
        for i in 0..self.stacks.len().min(64) {
            if lost & 1 << i != 0 {
                println!("net: stack {i}'s ring lost its pages while attached: let go of");
                self.detach(i);
            }
        }
    }

    /// WAIT from stack `i` (its return capability at RET): true if it was
    /// kept, to be answered when a frame comes.
    fn park(&mut self, i: usize) -> bool {
        if self.stacks[i].ready() != 0 {
            return false;
        }
        let Some(c) = self.slots.alloc() else { return false };
        if SELF_ASPACE.move_cap(RET, c).is_err() {
            self.slots.free(c);
            return false;
        }
        if let Some(old) = self.stacks[i].waiter.replace(c) {
            let _ = Return(old).reply(Tag::new(0), [OK, 0, 0, 0]);
            let _ = SELF_ASPACE.delete_cap(old);
            self.slots.free(old);
        }
        true
    }

    /// A frame from stack `i`: checked, then switched to another stack or
    /// sent out through the NIC.
    /// Whether stack `i` may send a frame of `len` bytes that begins with
    /// `head` (its source MAC and address are its own).
    #[inline]
    fn check(&self, i: usize, head: &[u8], len: usize) -> u64 {
        rules::frame(head, len, self.mac, self.stacks[i].ip)
    }

    fn send(&mut self, i: usize, frame: &[u8]) -> u64 {
        let st = self.check(i, frame, frame.len());
        if st != OK {
            return st;
        }
        self.stacks[i].sent += 1;
        if dest_ip(frame).and_then(|ip| self.stack_for(ip)).is_some() {
            self.deliver(frame);
            return OK;
        }
        if !self.nic.can_send() {
            // Wait for room: the frames on the device finish soon.
            let stacks = &mut self.stacks;
            self.nic.drain(|tag, in_place| completed(stacks, tag, in_place));
        }
        let sent = self.send_copied(frame);
        match sent {
            Ok(()) => {
                self.to_nic += 1;
                OK
            }
            Err(why) => {
                println!("net: a frame could not be sent: {why}");
                IO_ERROR
            }
        }
    }

    /// Sends a frame given as a message string: its head through a head
    /// slot, the rest copied into the server's string page, which the
    /// device reaches in place; waits for the device (as this path always
    /// did: the page is used again by the next one).
    fn send_copied(&mut self, frame: &[u8]) -> Result<(), alloc::string::String> {
        let (head, rest) = frame.split_at(frame.len().min(nic::HEAD));
        if rest.is_empty() {
            return self.nic.send(head, None, u64::MAX);
        }
        let stacks = &mut self.stacks;
        self.nic.drain(|tag, in_place| completed(stacks, tag, in_place));
        // SAFETY: the string page is the Hal's, mapped for the server's life, and not on the device (drained).
        unsafe { core::slice::from_raw_parts_mut(self.string_va as *mut u8, rest.len()) }.copy_from_slice(rest);
        self.nic.send(head, Some((self.string_va, rest.len())), u64::MAX)?;
        let stacks = &mut self.stacks;
        self.nic.drain(|tag, in_place| completed(stacks, tag, in_place));
        Ok(())
    }

    /// A stack's request: (status, reply words, a frame to send back).
    fn stack(&mut self, label: u64, i: usize, words: [u64; 4], string: Option<&[u8]>, arg: &mut Option<u64>) -> (u64, [u64; 3], Option<Vec<u8>>) {
        if !self.stacks.get(i).is_some_and(|s| s.live) {
            return (NOT_REGISTERED, [0; 3], None);
        }
        match label {
            INFO => (OK, [self.mac, self.stacks[i].ip, self.stacks[i].ready()], None),
            SEND => match string {
                Some(f) => (self.send(i, f), [0; 3], None),
                None => (BAD_REQUEST, [0; 3], None),
            },
            RECV => match self.stacks[i].queue.pop_front() {
                Some(f) => (OK, [self.stacks[i].queue.len() as u64, 0, 0], Some(f)),
                None => (EMPTY, [0; 3], None),
            },
            KICK | WAIT if self.stacks[i].ring.is_some() => {
                if label == WAIT {
                    self.stacks[i].ring.as_mut().unwrap().wait_tx = words[0] & WAIT_TX != 0;
                }
                // The receive queues' indices as well as the transmit
                // queues' (ring_send): one out of range, and nothing is
                // taken, the stack is told so.
                let r = self.stacks[i].ring.as_mut().unwrap();
                let st = if r.rx_in_range() {
                    self.ring_send(i)
                } else {
                    r.bad_index += 1;
                    BAD_REQUEST
                };
                (st, [self.stacks[i].ready(), 0, 0], None)
            }
            WAIT => (OK, [self.stacks[i].queue.len() as u64, 0, 0], None),
            ATTACH => {
                let (st, pages) = self.attach(i, arg);
                (st, [pages, 0, 0], None)
            }
            NOTIFY => (self.set_notify(i, Some(arg), words[0], words[1]), [0; 3], None),
            RING_COUNTERS => match &self.stacks[i].ring {
                Some(r) => (OK, [r.bad_desc, r.bad_index, r.tampered], None),
                None => (BAD_REQUEST, [0; 3], None),
            },
            COUNTERS => {
                let s = &self.stacks[i];
                (OK, [s.delivered, s.sent, s.dropped], None)
            }
            _ => (BAD_REQUEST, [0; 3], None),
        }
    }
}

fn main(_: u64, _: u64) -> i32 {
    // Its cappages, like its DMA pages (keep_virtio::device::open), come from
    // its bank (the memory pool only when started by hand without one).
    let mut slots = SlotPool::growable_from(keep_frames::own_cappage, SELF_ASPACE);
    let (Some(irq_slot), Some(irq_me)) = (slots.alloc(), slots.alloc()) else {
        return fail("slots", "none free");
    };
    slots.reserve(RET);
    slots.reserve(ARG);
    // From the description: the PCI server and the dataspace manager by name.
    let pci = if names::present(names::NAMES_SLOT) {
        let Some(p) = slots.alloc() else { return fail("slots", "none free") };
        if let Err(e) = names::lookup_patiently("pci", p, keep_rt::ipc_buffer()) {
            return fail("the PCI server by name ('pci')", names::status::name(e));
        }
        if let Err(e) = names::lookup_patiently("dataspace", DS_SLOT, keep_rt::ipc_buffer()) {
            println!("net: no dataspace manager by name ({}): ATTACH refuses every ring", names::status::name(e));
        }
        p
    } else {
        PCI_SLOT
    };
    // DMA pages: the two queues (and without an IOMMU their shadow rings)
    // and the NIC's buffers (nic.rs), made once.
    let layout = Layout { mmio_va: MMIO_VA, dma_va: DMA_VA, iova: IOVA, dma_pages: 64 };
    let Opened { sid, session, transport, mediated } =
        match keep_virtio::device::open(Pci(Sender(pci)), 0x1041, "virtio-net", FAULT_PAYLOAD, &layout, &mut slots) {
            Ok(o) => o,
            Err((what, why)) => return fail(&what, why),
        };
    // Without an IOMMU the session is mediated: every chain goes through
    // the PCI server's checks (nic.rs kicks after each transmit).
    let mut nic = match Nic::new(transport) {
        Ok(n) => n,
        Err(e) => return fail("virtio-net", e),
    };
    nic.enable_interrupts();
    // Both virtqueues (receive 0, transmit 1) signal MSI-X entry 0.
    let routed = keep_virtio::msix::route_queues(session, 0, 2, irq_slot, irq_me, IRQ_PAYLOAD);
    let interrupts = routed.is_ok();
    let irq = match routed {
        Ok(line) => alloc::format!("MSI-X through line {line}"),
        Err(e) => alloc::format!("no interrupt ({e}): frames are taken off the NIC on every request"),
    };
    let mac = mac_word(&nic.mac());
    let m6 = mac_bytes(mac);
    println!(
        "net: virtio-net {sid}: MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, DMA through {}, {irq}",
        m6[0], m6[1], m6[2], m6[3], m6[4], m6[5],
        if mediated { "the PCI server's mediator (no IOMMU)" } else { "the IOMMU" }
    );
    let (string_iova, string_page) = KeepHal::dma_alloc(1, BufferDirection::DriverToDevice);
    let string_va = string_page.as_ptr() as u64;
    hal::add_direct(string_va, 4096, string_iova);
    // A stack that takes its ring's pages away must not crash the server.
    let mut guard = guard::start(&mut slots, "net-guard")
        .map_err(|e| println!("net: no guard for the rings ({e}): a ring whose pages go makes the server fault"))
        .ok();
    let mut s = Server {
        nic, session, sid, mediated, interrupts, broken: false, resets: 0, fruitless: 0, finished_at_reset: 0, mac, stacks: Vec::new(), from_nic: 0, to_nic: 0, dropped: 0, faults: 0, slots, described: Vec::new(),
        generations: 0, scratch: Vec::with_capacity(MAX_FRAME), string_va,
    };
    let buf = keep_rt::ipc_buffer();
    let mut frame = alloc::vec![0u8; keep_abi::layout::MAX_STRING as usize];
    let mut drop_after_reply: Option<u64> = None;
    buf.set_recv_slots(&[RET, ARG]);
    let mut m = recv(Tag::new(0).with_slots(2), 0);
    loop {
        if let Some(c) = drop_after_reply.take() {
            let _ = SELF_ASPACE.delete_cap(c);
            s.slots.free(c);
        }
        let lost = guard::lost();
        if lost != 0 {
            s.lost(lost);
        }
        if m.err == 0 && m.tag.label() == label::DMA_FAULT && m.payload == FAULT_PAYLOAD {
            s.faults += 1;
            println!("net: DMA fault: device {:#x} address {:#x} reason {}", m.words[0], m.words[1], m.words[2]);
            // A NIC may stop at a fault until it is reset, and then says so
            // (virtio's NEEDS_RESET); QEMU's does not stop (docs/devices.md,
            // "When the device stops").  Reset only a NIC that stopped: a
            // stack revoking its ring's pages could otherwise have every
            // stack's frames disturbed at will.
            s.broken = s.nic.needs_reset();
        }
        s.recover_if_stopped();
        if m.err == 0 && m.tag.label() == label::NOTIFY && m.payload == names::NOTICE {
            // init's notice: clients ended; which, init says.
            let mut ended = Vec::new();
            let _ = names::take_gone(names::NAMES_SLOT, |p| ended.push(p));
            for p in ended {
                s.gone(p);
            }
        }
        if m.err == 0 && m.tag.label() == label::IRQ && m.payload == IRQ_PAYLOAD {
            s.nic.ack_interrupt();
            s.pump();
            s.wake();
        }
        // A capability beside the return capability (ATTACH's dataspace).
        let mut arg = None;
        if m.err == 0 && m.tag.is_called() && m.tag.caps() >= 2 {
            arg = s.slots.alloc().filter(|&c| SELF_ASPACE.move_cap(ARG, c).is_ok() || {
                s.slots.free(c);
                false
            });
            let _ = SELF_ASPACE.delete_cap(ARG);
        }
        if m.err != 0 || !m.tag.is_called() {
            if m.err == 0 && m.tag.caps() > 0 {
                let _ = SELF_ASPACE.delete_cap(RET);
                let _ = SELF_ASPACE.delete_cap(ARG);
            }
            s.recover_if_stopped();
            buf.set_recv_slots(&[RET, ARG]);
            m = recv(Tag::new(0).with_slots(2), 0);
            continue;
        }
        let string = m.tag.has_string().then(|| {
            let n = buf.read_string(&mut frame);
            &frame[..n]
        });
        if !interrupts {
            s.pump(); // no interrupt tells the server when frames come
        }
        let (st, w, out, cap) = if m.payload == 0 {
            match m.tag.label() {
                ADD_STACK => match s.register(m.words[0]) {
                    Ok(i) => match s.slots.alloc() {
                        Some(c) if SELF_PROCESS.mint(c, i as u64 + 1, rights::WRITE | rights::CALL).is_ok() => {
                            (OK, [i as u64 + 1, 0, 0], None, Some(c))
                        }
                        c => {
                            // Not handed out: the registration goes again.
                            if let Some(c) = c {
                                s.slots.free(c);
                            }
                            s.stacks.pop();
                            (NO_RESOURCES, [0; 3], None, None)
                        }
                    },
                    Err(st) => (st, [0; 3], None, None),
                },
                REMOVE_STACK => match (m.words[0] as usize).checked_sub(1).and_then(|i| s.stacks.get_mut(i)) {
                    // The number stays taken: the removed stack's
                    // capability answers NOT_REGISTERED from now on.
                    Some(st) if st.live => {
                        st.live = false;
                        st.queue.clear();
                        if let Some(c) = st.waiter.take() {
                            let _ = Return(c).reply(Tag::new(0), [NOT_REGISTERED, 0, 0, 0]);
                            let _ = SELF_ASPACE.delete_cap(c);
                            s.slots.free(c);
                        }
                        s.detach(m.words[0] as usize - 1);
                        (OK, [0; 3], None, None)
                    }
                    _ => (NOT_REGISTERED, [0; 3], None, None),
                },
                STATS => (OK, [s.from_nic, s.to_nic, s.dropped], None, None),
                DEVICE_STATS => (OK, [s.resets, s.faults, s.nic.refused], None, None),
                RESET_NIC => {
                    s.recover();
                    (OK, [s.resets, 0, 0], None, None)
                }
                QUIT => {
                    // The rings unpinned and unmapped through the manager
                    // (which would keep records of them otherwise).
                    for i in 0..s.stacks.len() {
                        s.detach(i);
                    }
                    let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
                    if let Some(g) = guard.take() {
                        g.stop(&mut s.slots);
                    }
                    drop(s); // resets the device: no DMA after this
                    let _ = hal::finish();
                    let _ = session.release();
                    return 0;
                }
                _ => (BAD_REQUEST, [0; 3], None, None),
            }
        } else if m.payload == FAULT_PAYLOAD {
            (BAD_REQUEST, [0; 3], None, None)
        } else if m.payload == names::NOTICE {
            // A notice as a call, from the server's starter (the server
            // mints no sender with this payload; init signals instead): a
            // client's GONE arrives with its own payload below and is
            // refused as an unknown request.
            match m.tag.label() {
                names::GONE => {
                    s.gone(m.words[0]);
                    (OK, [0; 3], None, None)
                }
                _ => (BAD_REQUEST, [0; 3], None, None),
            }
        } else {
            let (i, (st, w, out)) = match s.stack_of(m.payload) {
                Ok(i) => (i, s.stack(m.tag.label(), i, m.words, string, &mut arg)),
                Err(st) => (usize::MAX, (st, [0; 3], None)),
            };
            if let Some(c) = arg.take() {
                let _ = SELF_ASPACE.delete_cap(c);
                s.slots.free(c);
            }
            if st == OK && m.tag.label() == WAIT && s.park(i) {
                s.wake(); // a SEND of this request may have queued frames
                s.recover_if_stopped();
                buf.set_recv_slots(&[RET, ARG]);
                m = recv(Tag::new(0).with_slots(2), 0);
                continue;
            }
            (st, w, out, None)
        };
        s.wake(); // a SEND may have queued a frame for a waiting stack
        s.recover_if_stopped();
        let mut tag = Tag::new(0).with_slots(2);
        if let Some(f) = out {
            buf.set_string(&f);
            tag = tag.with_string();
        }
        if let Some(c) = cap {
            tag = tag.with_caps(buf.set_send_caps(&[(c, 0)]));
            drop_after_reply = Some(c);
        }
        if let Some(c) = arg.take() {
            let _ = SELF_ASPACE.delete_cap(c);
            s.slots.free(c);
        }
        buf.set_recv_slots(&[RET, ARG]);
        m = Return(RET).reply_recv(tag, [st, w[0], w[1], w[2]], 0);
    }
}

// One guard window per stack.
const _: () = assert!(keep_net::MAX_STACKS <= guard::WINDOWS);

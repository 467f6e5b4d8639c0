//! The network server (protocol: lib.rs; docs/devices.md, "The network").
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
//! queue when the NIC's MSI-X interrupt arrives (an IRQ message; without
//! one, on every request); a stack that has nothing to do waits in `WAIT`,
//! which the server answers when a frame is queued for it.

#![no_std]
#![no_main]

extern crate alloc;

mod nic;

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use keep_abi::{Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, label, recv, rights, slot};
use keep_loader::SlotPool;
use keep_net::*;
use keep_pci::{PCI_SLOT, Pci};
use keep_rt::println;
use keep_system::names;
use keep_virtio::device::{Layout, Opened};
use keep_virtio::hal;
use nic::Nic;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const FAULT_PAYLOAD: u64 = u64::MAX;
/// The payload of the NIC's interrupt messages.
const IRQ_PAYLOAD: u64 = u64::MAX - 1;
const MMIO_VA: u64 = 0x0000_4100_0000_0000;
const DMA_VA: u64 = 0x0000_4200_0000_0000;
/// Device addresses of the DMA pages: the server's choice, not RAM's.
const IOVA: u64 = 0x20_0000_0000;

struct StackState {
    ip: u64,
    live: bool,
    queue: VecDeque<Vec<u8>>,
    delivered: u64,
    sent: u64,
    dropped: u64,
    waiter: Option<u64>, // the return capability of its WAIT, while it waits
}

struct Server {
    nic: Nic,
    mac: u64,
    stacks: Vec<StackState>,
    from_nic: u64,
    to_nic: u64,
    dropped: u64,
    faults: u64,
    slots: SlotPool,
    /// Described stacks: (name-service payload, stack index).
    described: Vec<(u64, usize)>,
}

fn fail(what: &str, e: impl core::fmt::Display) -> i32 {
    println!("net: {what}: {e}");
    1
}

/// Queues `frame` for the stack it is addressed to, or drops it (counted
/// in `dropped`).
fn deliver(stacks: &mut [StackState], dropped: &mut u64, frame: &[u8]) {
    let Some(s) = dest_ip(frame).and_then(|ip| stacks.iter_mut().find(|s| s.live && s.ip == ip)) else {
        *dropped += 1;
        return;
    };
    if s.queue.len() >= QUEUE_FRAMES {
        s.dropped += 1;
        *dropped += 1;
        return;
    }
    s.queue.push_back(frame.to_vec());
    s.delivered += 1;
}

impl Server {
    fn stack_for(&self, ip: u64) -> Option<usize> {
        self.stacks.iter().position(|s| s.live && s.ip == ip)
    }

    /// Registers a stack with address `ip`: its index, or a status.
    fn register(&mut self, ip: u64) -> Result<usize, u64> {
        if ip == 0 || ip >= 0xffff_ffff {
            return Err(BAD_REQUEST);
        }
        if self.stack_for(ip).is_some() {
            return Err(IN_USE);
        }
        if self.stacks.len() >= MAX_STACKS {
            return Err(NO_RESOURCES);
        }
        self.stacks.push(StackState { ip, live: true, queue: VecDeque::new(), delivered: 0, sent: 0, dropped: 0, waiter: None });
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

    /// Takes every received frame off the NIC and hands its buffer back.
    fn pump(&mut self) {
        let (stacks, dropped) = (&mut self.stacks, &mut self.dropped);
        self.from_nic += self.nic.receive(|frame| deliver(stacks, dropped, frame));
    }

    /// Answers every waiting stack that has a frame now.
    fn wake(&mut self) {
        for st in self.stacks.iter_mut() {
            if st.queue.is_empty() {
                continue;
            }
            if let Some(c) = st.waiter.take() {
                // STALE if its time-out passed meanwhile: nothing to do.
                let _ = Return(c).reply(Tag::new(0), [OK, st.queue.len() as u64, 0, 0]);
                let _ = SELF_ASPACE.delete_cap(c);
                self.slots.free(c);
            }
        }
    }

    /// WAIT from stack `i` (its return capability at RET): true if it was
    /// kept, to be answered when a frame comes.
    fn park(&mut self, i: usize) -> bool {
        if !self.stacks[i].queue.is_empty() {
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
    fn send(&mut self, i: usize, frame: &[u8]) -> u64 {
        if frame.len() < ETH_HEADER || frame.len() > MAX_FRAME {
            return BAD_REQUEST;
        }
        let Some(src) = src_ip(frame) else {
            return BAD_REQUEST;
        };
        if mac_word(&frame[6..12]) != self.mac || src != self.stacks[i].ip {
            return DENIED;
        }
        self.stacks[i].sent += 1;
        if dest_ip(frame).and_then(|ip| self.stack_for(ip)).is_some() {
            self.deliver(frame);
            return OK;
        }
        match self.nic.send(frame) {
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

    /// A stack's request: (status, reply words, a frame to send back).
    fn stack(&mut self, label: u64, i: usize, string: Option<&[u8]>) -> (u64, [u64; 3], Option<Vec<u8>>) {
        if !self.stacks.get(i).is_some_and(|s| s.live) {
            return (NOT_REGISTERED, [0; 3], None);
        }
        match label {
            INFO => (OK, [self.mac, self.stacks[i].ip, self.stacks[i].queue.len() as u64], None),
            SEND => match string {
                Some(f) => (self.send(i, f), [0; 3], None),
                None => (BAD_REQUEST, [0; 3], None),
            },
            RECV => match self.stacks[i].queue.pop_front() {
                Some(f) => (OK, [self.stacks[i].queue.len() as u64, 0, 0], Some(f)),
                None => (EMPTY, [0; 3], None),
            },
            WAIT => (OK, [self.stacks[i].queue.len() as u64, 0, 0], None),
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
    // From the description: the PCI server by name.
    let pci = if names::present(names::NAMES_SLOT) {
        let Some(p) = slots.alloc() else { return fail("slots", "none free") };
        if let Err(e) = names::lookup_patiently("pci", p, keep_rt::ipc_buffer()) {
            return fail("the PCI server by name ('pci')", names::status::name(e));
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
    let mut s = Server { nic, mac, stacks: Vec::new(), from_nic: 0, to_nic: 0, dropped: 0, faults: 0, slots, described: Vec::new() };
    let buf = keep_rt::ipc_buffer();
    let mut frame = alloc::vec![0u8; keep_abi::layout::MAX_STRING as usize];
    let mut drop_after_reply: Option<u64> = None;
    buf.set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if let Some(c) = drop_after_reply.take() {
            let _ = SELF_ASPACE.delete_cap(c);
            s.slots.free(c);
        }
        if m.err == 0 && m.tag.label() == label::DMA_FAULT && m.payload == FAULT_PAYLOAD {
            s.faults += 1;
            println!("net: DMA fault: device {:#x} address {:#x} reason {}", m.words[0], m.words[1], m.words[2]);
        }
        if m.err == 0 && m.tag.label() == label::IRQ && m.payload == IRQ_PAYLOAD {
            s.nic.ack_interrupt();
            s.pump();
            s.wake();
        }
        if m.err != 0 || !m.tag.is_called() {
            buf.set_recv_slots(&[RET]);
            m = recv(Tag::new(0).with_slots(1), 0);
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
                        }
                        (OK, [0; 3], None, None)
                    }
                    _ => (NOT_REGISTERED, [0; 3], None, None),
                },
                STATS => (OK, [s.from_nic, s.to_nic, s.dropped], None, None),
                QUIT => {
                    let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
                    drop(s); // resets the device: no DMA after this
                    let _ = hal::finish();
                    let _ = session.release();
                    return 0;
                }
                _ => (BAD_REQUEST, [0; 3], None, None),
            }
        } else if m.payload == FAULT_PAYLOAD {
            (BAD_REQUEST, [0; 3], None, None)
        } else {
            let (i, (st, w, out)) = match s.stack_of(m.payload) {
                Ok(i) => (i, s.stack(m.tag.label(), i, string)),
                Err(st) => (usize::MAX, (st, [0; 3], None)),
            };
            if st == OK && m.tag.label() == WAIT && s.park(i) {
                s.wake(); // a SEND of this request may have queued frames
                buf.set_recv_slots(&[RET]);
                m = recv(Tag::new(0).with_slots(1), 0);
                continue;
            }
            (st, w, out, None)
        };
        s.wake(); // a SEND may have queued a frame for a waiting stack
        let mut tag = Tag::new(0).with_slots(1);
        if let Some(f) = out {
            buf.set_string(&f);
            tag = tag.with_string();
        }
        if let Some(c) = cap {
            tag = tag.with_caps(buf.set_send_caps(&[(c, 0)]));
            drop_after_reply = Some(c);
        }
        buf.set_recv_slots(&[RET]);
        m = Return(RET).reply_recv(tag, [st, w[0], w[1], w[2]], 0);
    }
}

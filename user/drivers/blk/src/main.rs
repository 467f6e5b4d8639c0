//! The block server (protocol: lib.rs; docs/devices.md).  It opens the
//! virtio-blk function through the PCI server (capability at PCI_SLOT),
//! drives it with `virtio-drivers` whose DMA memory is pages it holds,
//! mapped into the session's DMA domain, and serves its clients.
//!
//! A request is submitted to the device and the server waits for the
//! device's interrupt (the INTx line the PCI server gives it; polling if
//! it gives none).  Calls that arrive meanwhile are kept, with their
//! return capabilities moved out of the receive slot, and served in order
//! after it: one request at a time on the device.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{
    Interrupt, MEMORY, Msg, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, err, label, recv, rights,
    slot,
};
use keep_blk::*;
use keep_loader::SlotPool;
use keep_pci::{PCI_SLOT, Pci};
use keep_rt::println;
use keep_virtio::PlatformTransport;
use keep_virtio::device::{Layout, Opened};
use keep_virtio::hal::{self, KeepHal};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const FAULT_PAYLOAD: u64 = u64::MAX;
const IRQ_PAYLOAD: u64 = u64::MAX - 1;
const MMIO_VA: u64 = 0x0000_4100_0000_0000;
const DMA_VA: u64 = 0x0000_4200_0000_0000;
/// Device addresses of the DMA pages: the server's choice, not RAM's.
const IOVA: u64 = 0x10_0000_0000;
/// How long to wait for an interrupt before looking at the device anyway
/// (a lost interrupt costs time, never a request).
const IRQ_WAIT_MS: u64 = 100;

struct ClientRange {
    first: u64,
    sectors: u64,
    rights: u64,
}

/// A call taken off the receive slot: its return capability moved to `ret`.
struct Call {
    ret: u64,
    label: u64,
    payload: u64,
    words: [u64; 4],
    string: Option<Vec<u8>>,
}

struct Server {
    blk: VirtIOBlk<KeepHal, PlatformTransport<PciTransport>>,
    capacity: u64,
    clients: Vec<ClientRange>,
    served: u64,
    refused: u64,
    faults: u64,
    data: Vec<u8>,
    irq: Option<(Interrupt, u64)>,
    slots: SlotPool,
    backlog: VecDeque<Call>,
}

fn fail(what: &str, e: impl core::fmt::Display) -> i32 {
    println!("blk: {what}: {e}");
    1
}

impl Server {
    /// Moves the call in `m` (its return capability in RET) into a Call;
    /// None for what is no call (an interrupt, a DMA fault, a plain send).
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
        if m.tag.label() == label::DMA_FAULT && m.payload == FAULT_PAYLOAD {
            self.faults += 1;
            println!("blk: DMA fault: device {:#x} address {:#x} reason {}", m.words[0], m.words[1], m.words[2]);
            return None;
        }
        if !m.tag.is_called() {
            return None;
        }
        let ret = self.slots.alloc()?;
        if SELF_ASPACE.move_cap(RET, ret).is_err() {
            self.slots.free(ret);
            return None;
        }
        let string = m.tag.has_string().then(|| {
            let mut s = vec![0u8; keep_rt::ipc_buffer().received_len().min(layout_max_string())];
            keep_rt::ipc_buffer().read_string(&mut s);
            s
        });
        Some(Call { ret, label: m.tag.label(), payload: m.payload, words: m.words, string })
    }

    /// Waits until the device has completed request `token`, keeping the
    /// calls that come meanwhile.
    fn wait(&mut self, token: u16) {
        while self.blk.peek_used() != Some(token) {
            if self.irq.is_none() {
                core::hint::spin_loop();
                continue;
            }
            keep_rt::ipc_buffer().set_recv_slots(&[RET]);
            let m = recv(Tag::new(0).with_slots(1), IRQ_WAIT_MS);
            if let Some(c) = self.take(&m) {
                self.backlog.push_back(c);
            }
        }
    }

    fn read(&mut self, at: u64, len: usize) -> bool {
        let mut req = BlkReq::default();
        let mut resp = BlkResp::default();
        // SAFETY: req, resp and the data buffer stay, untouched, until the
        // request completes below.
        let Ok(token) = (unsafe { self.blk.read_blocks_nb(at as usize, &mut req, &mut self.data[..len], &mut resp) })
        else {
            return false;
        };
        self.wait(token);
        // SAFETY: the same buffers as submitted.
        unsafe { self.blk.complete_read_blocks(token, &req, &mut self.data[..len], &mut resp) }.is_ok()
    }

    fn write(&mut self, at: u64, len: usize) -> bool {
        let mut req = BlkReq::default();
        let mut resp = BlkResp::default();
        // SAFETY: as in read.
        let Ok(token) = (unsafe { self.blk.write_blocks_nb(at as usize, &mut req, &self.data[..len], &mut resp) })
        else {
            return false;
        };
        self.wait(token);
        // SAFETY: the same buffers as submitted.
        unsafe { self.blk.complete_write_blocks(token, &req, &self.data[..len], &mut resp) }.is_ok()
    }

    /// A client's request: (status, words, bytes of data to send back).
    fn client(&mut self, c: &Call) -> (u64, [u64; 3], usize) {
        let Some(range) = self.clients.get(c.payload as usize - 1) else {
            return (BAD_REQUEST, [0; 3], 0);
        };
        let (first, sectors, r) = (range.first, range.sectors, range.rights);
        let (sector, count) = (c.words[0], c.words[1]);
        let ranged = |need: u64| -> Result<u64, u64> {
            if r & need != need {
                return Err(NO_RIGHTS);
            }
            if count == 0 || count > MAX_SECTORS {
                return Err(BAD_REQUEST);
            }
            if sector >= sectors || count > sectors - sector {
                return Err(OUT_OF_RANGE);
            }
            Ok(first + sector)
        };
        let len = count as usize * SECTOR;
        let io = |ok: bool, out: usize| if ok { (OK, [0; 3], out) } else { (IO_ERROR, [0; 3], 0) };
        match c.label {
            INFO => (OK, [sectors, r, 0], 0),
            READ => match ranged(rights::READ) {
                Ok(at) => io(self.read(at, len), len),
                Err(s) => (s, [0; 3], 0),
            },
            WRITE => match ranged(rights::WRITE) {
                Ok(_) if c.string.as_ref().map(|s| s.len()) != Some(len) => (BAD_REQUEST, [0; 3], 0),
                Ok(at) => {
                    self.data[..len].copy_from_slice(c.string.as_ref().unwrap());
                    io(self.write(at, len), 0)
                }
                Err(s) => (s, [0; 3], 0),
            },
            FLUSH => io(self.blk.flush().is_ok(), 0), // polls: flushes are rare
            _ => (BAD_REQUEST, [0; 3], 0),
        }
    }

    /// The administrator's request; the capability to send back, if any.
    fn admin(&mut self, c: &Call) -> (u64, [u64; 3], Option<u64>) {
        match c.label {
            ADD_CLIENT => {
                let (first, sectors, r) = (c.words[0], c.words[1], c.words[2]);
                if sectors == 0 || first >= self.capacity || sectors > self.capacity - first || r & !CLIENT_RIGHTS != 0 {
                    return (BAD_REQUEST, [0; 3], None);
                }
                let Some(cap) = self.slots.alloc() else {
                    return (NO_RESOURCES, [0; 3], None);
                };
                let n = self.clients.len() as u64 + 1;
                if SELF_PROCESS.mint(cap, n, rights::WRITE | rights::CALL).is_err() {
                    self.slots.free(cap);
                    return (NO_RESOURCES, [0; 3], None);
                }
                self.clients.push(ClientRange { first, sectors, rights: r });
                (OK, [n, 0, 0], Some(cap))
            }
            STATS => (OK, [self.served, self.refused, self.faults], None),
            _ => (BAD_REQUEST, [0; 3], None),
        }
    }
}

fn layout_max_string() -> usize {
    keep_abi::layout::MAX_STRING as usize
}

fn main(_: u64, _: u64) -> i32 {
    let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
    slots.reserve(RET);
    let (Some(irq_slot), Some(irq_me)) = (slots.alloc(), slots.alloc()) else {
        return fail("slots", "none free");
    };
    let layout = Layout { mmio_va: MMIO_VA, dma_va: DMA_VA, iova: IOVA, dma_pages: 64 };
    let Opened { sid, session, transport } =
        match keep_virtio::device::open(Pci(Sender(PCI_SLOT)), 0x1042, "virtio-blk", FAULT_PAYLOAD, &layout, &mut slots) {
            Ok(o) => o,
            Err((what, why)) => return fail(&what, why),
        };
    let mut blk = match VirtIOBlk::new(transport) {
        Ok(b) => b,
        Err(e) => return fail("virtio-blk", alloc::format!("{e:?}")),
    };
    // The device's interrupt line, if the PCI server gives it.
    let irq = session.irq(irq_slot).ok().and_then(|line| {
        let i = Interrupt(irq_slot);
        SELF_PROCESS.mint(irq_me, IRQ_PAYLOAD, rights::WRITE).and_then(|_| i.bind(line, irq_me)).ok()?;
        blk.enable_interrupts();
        Some((i, line))
    });
    let capacity = blk.capacity();
    match irq {
        Some((_, line)) => println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through the IOMMU, interrupt line {line}"),
        None => println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through the IOMMU, polling (no interrupt line)"),
    }
    let mut s = Server {
        blk,
        capacity,
        clients: Vec::new(),
        served: 0,
        refused: 0,
        faults: 0,
        data: vec![0; MAX_SECTORS as usize * SECTOR],
        irq,
        slots,
        backlog: VecDeque::new(),
    };
    loop {
        let call = match s.backlog.pop_front() {
            Some(c) => c,
            None => {
                keep_rt::ipc_buffer().set_recv_slots(&[RET]);
                let m = recv(Tag::new(0).with_slots(1), 0);
                match s.take(&m) {
                    Some(c) => c,
                    None => continue,
                }
            }
        };
        let (st, w, out_len, cap) = if call.payload == 0 {
            if call.label == QUIT {
                let _ = Return(call.ret).reply(Tag::new(0), [OK, 0, 0, 0]);
                if let Some((i, line)) = s.irq {
                    let _ = i.unbind(line);
                }
                drop(s); // resets the device: no DMA after this
                hal::finish();
                let _ = session.release();
                return 0;
            }
            let (st, w, cap) = s.admin(&call);
            (st, w, 0, cap)
        } else if call.payload == FAULT_PAYLOAD || call.payload == IRQ_PAYLOAD {
            (BAD_REQUEST, [0; 3], 0, None)
        } else {
            let (st, w, n) = s.client(&call);
            (st, w, n, None)
        };
        if st == OK {
            s.served += 1;
        } else {
            s.refused += 1;
        }
        let buf = keep_rt::ipc_buffer();
        let mut tag = Tag::new(0);
        if out_len > 0 {
            buf.set_string(&s.data[..out_len]);
            tag = tag.with_string();
        }
        if let Some(c) = cap {
            tag = tag.with_caps(buf.set_send_caps(&[(c, 0)]));
        }
        let _ = Return(call.ret).reply(tag, [st, w[0], w[1], w[2]]);
        for x in [Some(call.ret), cap].into_iter().flatten() {
            let _ = SELF_ASPACE.delete_cap(x);
            s.slots.free(x);
        }
    }
}

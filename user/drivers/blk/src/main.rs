//! The block server (protocol: lib.rs; docs/devices.md).  It opens the
//! virtio-blk function through the PCI server (capability at PCI_SLOT),
//! drives it with `virtio-drivers` whose DMA memory is pages it holds,
//! mapped into the session's DMA domain, and serves its clients.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{DmaDomain, MEMORY, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, label, recv, rights, slot};
use keep_blk::*;
use keep_loader::SlotPool;
use keep_pci::{PCI_SLOT, Pci, Session};
use keep_rt::println;
use keep_virtio::hal::{self, DmaConfig, KeepHal};
use keep_virtio::pci::{RemoteConfig, Sid};
use keep_virtio::PlatformTransport;
use virtio_drivers::device::blk::VirtIOBlk;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{Command, PciRoot};

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const FAULT_PAYLOAD: u64 = u64::MAX;
const MMIO_VA: u64 = 0x0000_4100_0000_0000;
const DMA_VA: u64 = 0x0000_4200_0000_0000;
/// Device addresses of the DMA pages: the server's choice, not RAM's.
const IOVA: u64 = 0x10_0000_0000;

struct ClientRange {
    first: u64,
    sectors: u64,
    rights: u64,
}

struct Server {
    blk: VirtIOBlk<KeepHal, PlatformTransport<PciTransport>>,
    capacity: u64,
    clients: Vec<ClientRange>,
    served: u64,
    refused: u64,
    faults: u64,
    data: Vec<u8>,
}

fn fail(what: &str, e: impl core::fmt::Display) -> i32 {
    println!("blk: {what}: {e}");
    1
}

impl Server {
    fn client(&mut self, label: u64, payload: u64, w: [u64; 4], string_len: Option<usize>) -> (u64, [u64; 3], usize) {
        let Some(c) = self.clients.get(payload as usize - 1) else {
            return (BAD_REQUEST, [0; 3], 0);
        };
        let (sector, count) = (w[0], w[1]);
        let ranged = |need: u64| -> Result<u64, u64> {
            if c.rights & need != need {
                return Err(NO_RIGHTS);
            }
            if count == 0 || count > MAX_SECTORS {
                return Err(BAD_REQUEST);
            }
            if sector >= c.sectors || count > c.sectors - sector {
                return Err(OUT_OF_RANGE);
            }
            Ok(c.first + sector)
        };
        let len = count as usize * SECTOR;
        match label {
            INFO => (OK, [c.sectors, c.rights, 0], 0),
            READ => match ranged(rights::READ) {
                Ok(at) => match self.blk.read_blocks(at as usize, &mut self.data[..len]) {
                    Ok(()) => (OK, [0; 3], len),
                    Err(_) => (IO_ERROR, [0; 3], 0),
                },
                Err(s) => (s, [0; 3], 0),
            },
            WRITE => match ranged(rights::WRITE) {
                Ok(_) if string_len != Some(len) => (BAD_REQUEST, [0; 3], 0),
                Ok(at) => {
                    keep_rt::ipc_buffer().read_string(&mut self.data[..len]);
                    match self.blk.write_blocks(at as usize, &self.data[..len]) {
                        Ok(()) => (OK, [0; 3], 0),
                        Err(_) => (IO_ERROR, [0; 3], 0),
                    }
                }
                Err(s) => (s, [0; 3], 0),
            },
            FLUSH => match self.blk.flush() {
                Ok(()) => (OK, [0; 3], 0),
                Err(_) => (IO_ERROR, [0; 3], 0),
            },
            _ => (BAD_REQUEST, [0; 3], 0),
        }
    }
}

fn main(_: u64, _: u64) -> i32 {
    let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
    slots.reserve(RET);
    let pci = Pci(Sender(PCI_SLOT));
    let (Some(session_slot), Some(domain_slot), Some(me)) = (slots.alloc(), slots.alloc(), slots.alloc()) else {
        return fail("slots", "none free");
    };
    let sid = match pci.open(0x1af4, 0x1042, 0, session_slot, domain_slot) {
        Ok(s) => Sid(s as u16),
        Err(e) => return fail("open the virtio-blk function", e),
    };
    let session = Session(Sender(session_slot));
    let domain = DmaDomain(domain_slot);
    match domain.info() {
        Ok(i) if i.remapping => {}
        Ok(_) => return fail("no IOMMU", "this driver needs one (device addresses are its own)"),
        Err(e) => return fail("domain", e),
    }
    if let Err(e) = SELF_PROCESS.mint(me, FAULT_PAYLOAD, rights::WRITE).and_then(|_| domain.set_fault_handler(me)) {
        return fail("fault handler", e);
    }
    let mut bars = Vec::new();
    for i in 0..6 {
        let Some(s) = slots.alloc() else { break };
        match session.bar(i, s) {
            Ok((base, size)) => bars.push((s, base & !0xfff, ((base & 0xfff) + size).div_ceil(4096))),
            Err(_) => slots.free(s),
        }
    }
    let mut dma_slots = Vec::new();
    for _ in 0..64 {
        match slots.alloc() {
            Some(s) => dma_slots.push(s),
            None => break,
        }
    }
    let cfg = DmaConfig { memory: MEMORY, aspace: SELF_ASPACE, domain, bars, va_base: DMA_VA, iova_base: IOVA, mmio_va: MMIO_VA, slots: dma_slots };
    if let Err(e) = hal::init(cfg) {
        return fail("hal", e);
    }
    let mut root = PciRoot::new(RemoteConfig { sid, session });
    let df = sid.device_function();
    root.set_command(df, Command::MEMORY_SPACE | Command::BUS_MASTER);
    let t = match PciTransport::new::<KeepHal, _>(&mut root, df) {
        Ok(t) => t,
        Err(e) => return fail("virtio PCI transport", alloc::format!("{e:?}")),
    };
    let blk = match VirtIOBlk::new(PlatformTransport(t)) {
        Ok(b) => b,
        Err(e) => return fail("virtio-blk", alloc::format!("{e:?}")),
    };
    let capacity = blk.capacity();
    println!("blk: virtio-blk {sid}: {capacity} sectors, DMA through the IOMMU");
    let mut s = Server { blk, capacity, clients: Vec::new(), served: 0, refused: 0, faults: 0, data: vec![0; MAX_SECTORS as usize * SECTOR] };
    let buf = keep_rt::ipc_buffer();
    let mut drop_after_reply: Option<u64> = None;
    buf.set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if let Some(c) = drop_after_reply.take() {
            let _ = SELF_ASPACE.delete_cap(c);
            slots.free(c);
        }
        if m.err == 0 && m.tag.label() == label::DMA_FAULT && m.payload == FAULT_PAYLOAD {
            s.faults += 1;
            println!("blk: DMA fault: device {:#x} address {:#x} reason {}", m.words[0], m.words[1], m.words[2]);
        }
        if m.err != 0 || !m.tag.is_called() {
            buf.set_recv_slots(&[RET]);
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let string_len = m.tag.has_string().then(|| buf.received_len());
        let (st, w, out_len, cap) = if m.payload == 0 {
            match m.tag.label() {
                ADD_CLIENT => {
                    let (first, sectors, r) = (m.words[0], m.words[1], m.words[2]);
                    if sectors == 0 || first >= s.capacity || sectors > s.capacity - first || r & !CLIENT_RIGHTS != 0 {
                        (BAD_REQUEST, [0; 3], 0, None)
                    } else if let Some(c) = slots.alloc() {
                        let n = s.clients.len() as u64 + 1;
                        match SELF_PROCESS.mint(c, n, rights::WRITE | rights::CALL) {
                            Ok(()) => {
                                s.clients.push(ClientRange { first, sectors, rights: r });
                                (OK, [n, 0, 0], 0, Some(c))
                            }
                            Err(_) => {
                                slots.free(c);
                                (NO_RESOURCES, [0; 3], 0, None)
                            }
                        }
                    } else {
                        (NO_RESOURCES, [0; 3], 0, None)
                    }
                }
                STATS => (OK, [s.served, s.refused, s.faults], 0, None),
                QUIT => {
                    let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
                    drop(s); // resets the device: no DMA after this
                    let back = hal::finish();
                    let _ = session.release();
                    for b in back {
                        slots.free(b);
                    }
                    return 0;
                }
                _ => (BAD_REQUEST, [0; 3], 0, None),
            }
        } else if m.payload == FAULT_PAYLOAD {
            (BAD_REQUEST, [0; 3], 0, None)
        } else {
            let (st, w, n) = s.client(m.tag.label(), m.payload, m.words, string_len);
            (st, w, n, None)
        };
        if st == OK {
            s.served += 1;
        } else {
            s.refused += 1;
        }
        let mut tag = Tag::new(0).with_slots(1);
        if out_len > 0 {
            buf.set_string(&s.data[..out_len]);
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

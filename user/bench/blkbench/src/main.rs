//! blkbench: the block benchmarks of `make bench` (docs/performance.md,
//! "I/O paths"), counted by the icount plugin between its markers.  The
//! root task's suite (user/root/src/bench/blk.rs) starts it.
//!
//! arg0 is the benchmark, arg1 how many runs; each run moves RUN_BYTES
//! sequentially and reports one region `bench-io: NAME per=64` (MiB):
//!
//! | arg0 | name | how |
//! |---|---|---|
//! | 0 | `blk.read.seq64k` | BATCH reads of 64 KiB each at a time through the block server's request ring (client capability at CLIENT_SLOT; the ring in a one-page dataspace of this program's, attached, with a notification for completions) into a 2 MiB dataspace of this program's (manager at DS_SLOT) that the server has attached, request k at byte k × 64 KiB: no call but a `KICK` when the server waits, one notification per 2 MiB, up to `IN_FLIGHT` requests on the device |
//! | 7 | `blk.read.seq64k.batch` | the reads of 0 as batches (`READ_DS_V`): one call per 2 MiB |
//! | 1 | `blk.read.seq4k` | `READ_DS` of 4 KiB, one call a request |
//! | 2 | `blk.write.seq64k` | batches (`WRITE_DS_V`) of BATCH writes of 64 KiB from the dataspace |
//! | 3 | `blk.read.seq64k.direct` | the reads of 0, this program owning the virtio-blk driver (the PCI server's capability at PCI_SLOT): the same device requests submitted the same way as the server submits a batch (64 KiB into pages the device reaches in place, the headers in a fixed DMA page, up to `IN_FLIGHT` on the device, the next started as one completes, BATCH of them before the next BATCH), waiting for the same interrupt (MSI-X entry 0) |
//! | 4 | `blk.read.seq64k.strings` | reads of 64 KiB through the block server's message-string `READ` (4 KiB a call, copied twice) |
//! | 5 | `blk.read.seq64k.single` | `READ_DS` of 64 KiB, one call a request (what mode 0 was before batches) |
//! | 6 | `blk.read.seq64k.direct.single` | mode 3 one request at a time (what the server does for mode 5) |
//!
//! The data lands where the client reads it in every mode: the dataspace's
//! pages are mapped in this program (zero copy, as Linux's `O_DIRECT`
//! reads into the caller's buffer); mode 4 copies it out of the IPC buffer.
//!
//! Exit 0 when every run completed and what was read is the disk image's
//! pattern (what was written reads back); 2 no capability; 3 data differ;
//! 4 a request failed.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Interrupt, MEMORY, SELF_ASPACE, SELF_PROCESS, Sender, Tag, recv, rights, slot};
use keep_blk::ring::{Desc, OP_READ};
use keep_blk::{Client, Entry, HIDDEN_FEATURES, IN_FLIGHT, MAX_SECTORS, OK, Ring, SECTOR};
use keep_dataspace::{DS_SLOT, Dataspace, Manager};
use keep_loader::SlotPool;
use keep_pci::{PCI_SLOT, Pci};
use keep_rt::{icount, println};
use keep_virtio::device::{Layout, Opened};
use keep_virtio::hal::{self, KeepHal};
use keep_virtio::{PlatformTransport, checksum, disk_pattern};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::{BufferDirection, Hal};

keep_rt::entry!(main);

/// Where the starter puts the block client capability.
pub const CLIENT_SLOT: u64 = 0xd;
/// Bytes one run moves: 64 MiB from sector 0.
pub const RUN_BYTES: u64 = 64 << 20;
const MIB: u64 = RUN_BYTES >> 20;

/// The block client's message-string requests (mode 4): a call moves at
/// most MAX_SECTORS sectors (one message string), so a read of
/// `buf.len()` bytes is that many calls.
mod strings {
    use super::*;
    pub const REQUEST: usize = MAX_SECTORS as usize * SECTOR;

    pub fn read(c: Client, sector: u64, buf: &mut [u8]) -> Result<(), keep_blk::Error> {
        for (i, chunk) in buf.chunks_mut(REQUEST).enumerate() {
            c.read(sector + (i * REQUEST / SECTOR) as u64, chunk)?;
        }
        Ok(())
    }
}

/// Where the dataspace is mapped, and the slots of its capabilities.
const DS_VA: u64 = 0x0000_3000_0000_0000;
const DS_OWN: u64 = 0x20;
const DS_SHARED: u64 = 0x21;
/// The ring's dataspace (one page), its share, and the notification.
const RING_VA: u64 = 0x0000_3100_0000_0000;
const RING_OWN: u64 = 0x22;
const RING_SHARED: u64 = 0x23;
const NOTE: u64 = 0x24;
/// A request of the 64 KiB benchmarks, and how many a batch has: the
/// dataspace (and the direct mode's DMA pages) holds one batch, 2 MiB,
/// the most the block server attaches.
const CHUNK: usize = 64 << 10;
const BATCH: usize = 32;
const DS_PAGES: u64 = (BATCH * CHUNK / 4096) as u64;

/// A dataspace of DS_PAGES mapped at DS_VA and attached to the block
/// server: (its buffer number, the mapped bytes).
fn attach(c: Client) -> Result<(u64, &'static mut [u8]), String> {
    let own = Dataspace(Sender(DS_OWN));
    Manager(Sender(DS_SLOT))
        .create(DS_PAGES, keep_dataspace::BANK_SLOT, DS_OWN)
        .and_then(|_| own.map(slot::SELF_ASPACE, DS_VA, 0, DS_PAGES, rights::READ | rights::WRITE))
        .and_then(|_| own.share(rights::READ | rights::WRITE, DS_SHARED))
        .map_err(|e| format!("dataspace (is the manager at DS_SLOT?): {e}"))?;
    let (b, _, _) = c.attach(DS_SHARED).map_err(|e| format!("ATTACH: {e}"))?;
    // SAFETY: the dataspace is mapped read-write at DS_VA for the rest of the program.
    Ok((b, unsafe { core::slice::from_raw_parts_mut(DS_VA as *mut u8, (DS_PAGES * 4096) as usize) }))
}

/// Whether `buf`, read from `sector` on, holds the disk image's pattern.
fn is_pattern(sector: u64, buf: &[u8]) -> bool {
    buf.chunks(8).enumerate().all(|(i, w)| {
        u64::from_le_bytes(w.try_into().unwrap()) == disk_pattern(sector + i as u64 / 64, i as u64 % 64)
    })
}

fn served(mode: u64, runs: u64) -> Result<(), (i32, String)> {
    let c = Client(Sender(CLIENT_SLOT));
    let (sectors, _) = c.info().map_err(|e| (2, format!("no block client capability: {e}")))?;
    if sectors * SECTOR as u64 != RUN_BYTES {
        return Err((2, format!("the client's range is {sectors} sectors, not {} MiB", MIB)));
    }
    let (name, chunk) = match mode {
        0 => ("blk.read.seq64k", CHUNK),
        7 => ("blk.read.seq64k.batch", CHUNK),
        1 => ("blk.read.seq4k", 4 << 10),
        2 => ("blk.write.seq64k", CHUNK),
        5 => ("blk.read.seq64k.single", CHUNK),
        _ => ("blk.read.seq64k.strings", CHUNK),
    };
    let step = (chunk / SECTOR) as u64;
    let last = RUN_BYTES / SECTOR as u64 - step;
    if mode == 4 {
        let mut buf = vec![0u8; chunk];
        for _ in 0..runs {
            icount::region(name, MIB, || {
                let mut at = 0;
                while at * (SECTOR as u64) < RUN_BYTES {
                    strings::read(c, at, &mut buf).map_err(|e| format!("sector {at}: {e}"))?;
                    at += step;
                }
                Ok::<(), String>(())
            })
            .map_err(|e| (4, e))?;
            if !is_pattern(last, &buf) {
                return Err((3, format!("sectors {last}.. are not the image's")));
            }
        }
        return Ok(());
    }
    let (b, mem) = attach(c).map_err(|e| (4, e))?;
    let fill = |buf: &mut [u8], run: u64| buf.iter_mut().enumerate().for_each(|(i, b)| *b = (i as u64 ^ run ^ i as u64 >> 16) as u8);
    if mode == 0 {
        return ringed(c, b, mem, name, runs);
    }
    if mode == 7 || mode == 2 {
        // Entry k: 64 KiB at byte k × 64 KiB of the dataspace; a batch
        // moves the next 2 MiB of the disk.
        let mut entries: [Entry; BATCH] =
            core::array::from_fn(|k| Entry { sector: (k * CHUNK / SECTOR) as u64, offset: (k * CHUNK) as u32, count: step as u32 });
        let per_batch = (BATCH * CHUNK / SECTOR) as u64;
        for run in 0..runs {
            if mode == 2 {
                fill(mem, run);
            }
            icount::region(name, MIB, || {
                let mut at = 0;
                while at * (SECTOR as u64) < RUN_BYTES {
                    for (k, e) in entries.iter_mut().enumerate() {
                        e.sector = at + k as u64 * step;
                    }
                    if mode == 2 { c.write_ds_v(b, &entries) } else { c.read_ds_v(b, &entries) }
                        .map_err(|e| format!("the batch from sector {at}: {e}"))?;
                    at += per_batch;
                }
                Ok::<(), String>(())
            })
            .map_err(|e| (4, e))?;
            // Checked outside the region: the last batch read is the
            // image's, or the first batch written reads back.
            if mode == 2 {
                let written = checksum(mem);
                mem.fill(0);
                for (k, e) in entries.iter_mut().enumerate() {
                    e.sector = k as u64 * step;
                }
                c.read_ds_v(b, &entries).map_err(|e| (4, format!("read back: {e}")))?;
                if checksum(mem) != written {
                    return Err((3, "what was written does not read back".into()));
                }
            } else if !is_pattern(RUN_BYTES / SECTOR as u64 - per_batch, mem) {
                return Err((3, "the last 2 MiB read are not the image's".into()));
            }
        }
        let _ = c.detach(b);
        let _ = Dataspace(Sender(DS_OWN)).destroy();
        return Ok(());
    }
    let buf = &mut mem[..chunk];
    for _ in 0..runs {
        icount::region(name, MIB, || {
            let mut at = 0;
            while at * (SECTOR as u64) < RUN_BYTES {
                c.read_ds(b, 0, at, step).map_err(|e| format!("sector {at}: {e}"))?;
                at += step;
            }
            Ok::<(), String>(())
        })
        .map_err(|e| (4, e))?;
        // Checked outside the region: the last chunk read is the image's.
        if !is_pattern(last, buf) {
            return Err((3, format!("sectors {last}.. are not the image's")));
        }
    }
    let _ = c.detach(b);
    let _ = Dataspace(Sender(DS_OWN)).destroy();
    Ok(())
}

/// Mode 0: the reads of mode 7 through the request ring.
fn ringed(c: Client, b: u64, mem: &mut [u8], name: &str, runs: u64) -> Result<(), (i32, String)> {
    let own = Dataspace(Sender(RING_OWN));
    Manager(Sender(DS_SLOT))
        .create(1, keep_dataspace::BANK_SLOT, RING_OWN)
        .and_then(|_| own.map(slot::SELF_ASPACE, RING_VA, 0, 1, rights::READ | rights::WRITE))
        .and_then(|_| own.share(rights::READ | rights::WRITE, RING_SHARED))
        .map_err(|e| (4, format!("the ring's dataspace: {e}")))?;
    ACCOUNT.create_notification(NOTE).map_err(|e| (4, format!("CREATE_NOTIFICATION: {e}")))?;
    let (rb, _, _) = c.attach(RING_SHARED).map_err(|e| (4, format!("ATTACH of the ring: {e}")))?;
    let mut r = Ring::set_up(c, rb, 0, RING_VA, NOTE).map_err(|e| (4, format!("RING: {e}")))?;
    let step = (CHUNK / SECTOR) as u64;
    let per_batch = (BATCH * CHUNK / SECTOR) as u64;
    for _ in 0..runs {
        icount::region(name, MIB, || {
            let mut at = 0;
            while at * (SECTOR as u64) < RUN_BYTES {
                for k in 0..BATCH {
                    let d = Desc { id: k as u64, sector: at + k as u64 * step, offset: (k * CHUNK) as u32, count: step as u32, op: OP_READ, buffer: b as u32 };
                    r.post(&d);
                }
                r.submit().map_err(|e| format!("KICK: {e}"))?;
                let mut bad = None;
                r.wait(BATCH as u32, |id, st| {
                    if st != OK && bad.is_none() {
                        bad = Some((id, st));
                    }
                })
                .map_err(|e| format!("waiting for completions: {e}"))?;
                if let Some((id, st)) = bad {
                    return Err(format!("request {id} from sector {at}: {}", keep_blk::status_name(st)));
                }
                at += per_batch;
            }
            Ok::<(), String>(())
        })
        .map_err(|e| (4, e))?;
        if !is_pattern(RUN_BYTES / SECTOR as u64 - per_batch, mem) {
            return Err((3, "the last 2 MiB read are not the image's".into()));
        }
    }
    r.end().map_err(|e| (4, format!("RING_END: {e}")))?;
    let _ = c.detach(rb);
    let _ = c.detach(b);
    let _ = Dataspace(Sender(RING_OWN)).destroy();
    let _ = Dataspace(Sender(DS_OWN)).destroy();
    Ok(())
}

const FAULT_PAYLOAD: u64 = u64::MAX;
const IRQ_PAYLOAD: u64 = u64::MAX - 1;

/// Reads as the block server does, without the server: open the function,
/// then per batch of `batch` requests of CHUNK bytes (entry k into byte
/// k × CHUNK of the DMA pages) keep up to IN_FLIGHT on the device, the
/// next started when one completes (the server's pump and harvest), the
/// headers in a fixed DMA page, waiting for the same interrupt.
fn direct(runs: u64, batch: usize) -> Result<(), (i32, String)> {
    let name = if batch == 1 { "blk.read.seq64k.direct.single" } else { "blk.read.seq64k.direct" };
    let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
    let (Some(irq_slot), Some(irq_me)) = (slots.alloc(), slots.alloc()) else {
        return Err((4, "no slots".into()));
    };
    let pages = BATCH * CHUNK / 4096;
    let layout = Layout { mmio_va: 0x0000_4100_0000_0000, dma_va: 0x0000_4200_0000_0000, iova: 0x10_0000_0000, dma_pages: pages + 64 };
    let Opened { session, transport, .. } =
        keep_virtio::device::open(Pci(Sender(PCI_SLOT)), 0x1042, "virtio-blk", FAULT_PAYLOAD, &layout, &mut slots)
            .map_err(|(what, why)| (2, format!("{what}: {why}")))?;
    let mut blk: Blk = VirtIOBlk::new(transport.hiding(HIDDEN_FEATURES)).map_err(|e| (4, format!("virtio-blk: {e:?}")))?;
    // The server's interrupt: MSI-X entry 0 (else the INTx line).
    blk.enable_interrupts();
    let irq = Interrupt(irq_slot);
    let line = match keep_virtio::msix::route_queues(session, 0, 1, irq_slot, irq_me, IRQ_PAYLOAD) {
        Ok(line) => line,
        Err(_) => {
            let _ = SELF_ASPACE.delete_cap(irq_me);
            let _ = SELF_ASPACE.delete_cap(irq_slot);
            let line = session.irq(irq_slot).map_err(|e| (4, format!("GET_IRQ: {e}")))?;
            SELF_PROCESS.mint(irq_me, IRQ_PAYLOAD, rights::WRITE).and_then(|_| irq.bind(line, irq_me))
                .map_err(|e| (4, format!("bind the interrupt: {e}")))?;
            line
        }
    };
    // As the server: the data in pages the device reaches in place (the
    // server's are the client's dataspace), the request headers and their
    // statuses in a fixed DMA page, one per request slot.
    let (data_iova, data) = KeepHal::dma_alloc(pages, BufferDirection::DeviceToDriver);
    let (hdr_iova, hdr) = KeepHal::dma_alloc(1, BufferDirection::Both);
    hal::add_direct(data.as_ptr() as u64, (pages * 4096) as u64, data_iova);
    hal::add_direct(hdr.as_ptr() as u64, 4096, hdr_iova);
    let hdr = hdr.as_ptr() as u64;
    let (req, resp) = (|i: usize| (hdr + i as u64 * 64) as *mut BlkReq, |i: usize| (hdr + 2048 + i as u64 * 64) as *mut BlkResp);
    let step = (CHUNK / SECTOR) as u64;
    // One batch from `at`: (token, slot, entry) per request on the device.
    let mut on: Vec<(u16, usize, usize)> = Vec::with_capacity(IN_FLIGHT);
    let mut free: Vec<usize> = (0..IN_FLIGHT).rev().collect();
    let mut run_batch = |blk: &mut Blk, at: u64| -> bool {
        let (mut next, mut ok) = (0, true);
        loop {
            while next < batch && let Some(io) = free.pop() {
                // SAFETY: the slot's header and the entry's pages stay,
                // untouched, until the request completes.
                let token = unsafe {
                    let buf = core::slice::from_raw_parts_mut(data.as_ptr().add(next * CHUNK), CHUNK);
                    blk.read_blocks_nb((at + next as u64 * step) as usize, &mut *req(io), buf, &mut *resp(io))
                };
                keep_virtio::mediated::kick(); // without an IOMMU: to the mediator (else nothing)
                match token {
                    Ok(t) => on.push((t, io, next)),
                    Err(_) => return false,
                }
                next += 1;
            }
            if on.is_empty() {
                return ok;
            }
            let m = recv(Tag::new(0), 100);
            if m.payload == IRQ_PAYLOAD {
                blk.ack_interrupt();
                let _ = irq.ack(line);
            }
            while let Some(t) = blk.peek_used() {
                let Some(i) = on.iter().position(|f| f.0 == t) else { return false };
                let (_, io, k) = on.swap_remove(i);
                // SAFETY: the buffers submitted above.
                ok &= unsafe {
                    let buf = core::slice::from_raw_parts_mut(data.as_ptr().add(k * CHUNK), CHUNK);
                    blk.complete_read_blocks(t, &*req(io), buf, &mut *resp(io))
                }
                .is_ok();
                free.push(io);
            }
        }
    };
    let per_batch = batch as u64 * step;
    let mut result = Ok(());
    for _ in 0..runs {
        let r = icount::region(name, MIB, || {
            let mut at = 0;
            while at * (SECTOR as u64) < RUN_BYTES {
                if !run_batch(&mut blk, at) {
                    return Err(format!("sectors from {at}: the device failed a read"));
                }
                at += per_batch;
            }
            Ok(())
        });
        if let Err(e) = r {
            result = Err((4, e));
            break;
        }
    }
    let last = RUN_BYTES / SECTOR as u64 - per_batch;
    // SAFETY: the DMA pages are still mapped; the last requests completed.
    if result.is_ok() && !is_pattern(last, unsafe { core::slice::from_raw_parts(data.as_ptr(), batch * CHUNK) }) {
        result = Err((3, format!("sectors {last}.. are not the image's")));
    }
    let _ = irq.unbind(line);
    drop(blk); // resets the device: no DMA after this
    hal::finish();
    let _ = session.release();
    result
}

type Blk = VirtIOBlk<KeepHal, PlatformTransport<keep_virtio::VirtioTransport>>;

fn main(mode: u64, runs: u64) -> i32 {
    let r = match mode {
        3 => direct(runs, BATCH),
        6 => direct(runs, 1),
        _ => served(mode, runs),
    };
    match r {
        Ok(()) => 0,
        Err((code, e)) => {
            println!("blkbench: {e}");
            code
        }
    }
}

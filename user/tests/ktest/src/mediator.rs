//! Software DMA mediation (docs/pci.md, "Software DMA mediation"):
//! without an IOMMU the PCI server keeps a virtio function's common
//! configuration and rings to itself and puts on the device only
//! descriptors that lie in pages mapped in the driver's DMA domain.  These
//! tests drive virtio-blk as a driver would (the mediated transport of
//! keep_virtio) and as a rogue one would.  With the IOMMU they check that
//! the mediator is not in the way (its calls are NOT_FOUND) and say so.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{DevMem, DmaDomain, MEMORY, SELF_ASPACE, Sender, Tag, rights, ty};
use keep_pci::{BAD_REQUEST, DENIED, NOT_FOUND, Pci, Session};
use keep_rt::println;
use keep_virtio::hal::{self, DmaConfig, KeepHal};
use keep_virtio::mediated::{self, MediatedTransport};
use keep_virtio::pci::{RemoteConfig, Sid};
use keep_virtio::{PlatformTransport, VirtioTransport, disk_pattern};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::pci::bus::{Command, PciRoot};

use crate::drivers::{quit_pci, remapping, start_pci, stop};
use crate::{Ctx, Cx, TestResult};

const VIRTIO: u16 = 0x1af4;
const BLK: u16 = 0x1042;
const NET: u16 = 0x1041;
const RW: u64 = rights::READ | rights::WRITE;
const VA: u64 = 0x0000_5e00_0000_0000;
const MMIO_VA: u64 = VA + 0x10_0000;
const DMA_VA: u64 = VA + 0x100_0000;
const VICTIM_VA: u64 = VA + 0x1000;
/// The driver's device addresses (its own choice, as with an IOMMU).
const IOVA: u64 = 0x30_0000_0000;
/// Device addresses the tests map pages at by hand, away from the Hal's.
const READ_ONLY_IOVA: u64 = 0x31_0000_0000;
const EDGE_IOVA: u64 = 0x32_0000_0000;

/// The PCI server's status for a result (OK for success).
fn st<T>(r: Result<T, keep_pci::Error>) -> u64 {
    match r {
        Ok(_) => keep_pci::OK,
        Err(keep_pci::Error::Status(s)) => s,
        Err(keep_pci::Error::Call(e)) => 1000 + e.0,
    }
}

/// A virtio capability's (bar, offset, its own offset) in the session's
/// configuration space.
fn virtio_cap(s: Session, cfg_type: u32) -> Result<(u64, u64, u64), String> {
    let mut ptr = (s.config_read(0x34).ctx("capabilities")? & 0xfc) as u64;
    while ptr >= 0x40 {
        let w = s.config_read(ptr).ctx("capability")?;
        if w & 0xff == 0x09 && (w >> 24) & 0xff == cfg_type {
            return Ok(((s.config_read(ptr + 4).ctx("cap")? & 0xff) as u64, s.config_read(ptr + 8).ctx("cap")? as u64, ptr));
        }
        ptr = ((w >> 8) & 0xfc) as u64;
    }
    Err(format!("no virtio capability of type {cfg_type}"))
}

fn fill(va: u64, seed: u64) {
    for i in 0..512u64 {
        // SAFETY: a page of ktest's is mapped writable at va.
        unsafe { ((va + 8 * i) as *mut u64).write_volatile(seed ^ i) };
    }
}

fn intact(va: u64, seed: u64, what: &str) -> TestResult {
    for i in 0..512u64 {
        // SAFETY: as in fill.
        let w = unsafe { ((va + 8 * i) as *const u64).read_volatile() };
        ensure!(w == seed ^ i, "{what} changed at word {i}: {w:#x}");
    }
    Ok(())
}

/// The virtio-blk function opened through a PCI server, driven through the
/// mediator by `f`; everything released afterwards.
fn with_mediated_blk(cx: &mut Cx, f: impl FnOnce(&mut Cx, Session, DmaDomain, &mut VirtIOBlk<KeepHal, PlatformTransport<VirtioTransport>>) -> TestResult) -> TestResult {
    with_mediated(cx, BLK, |cx, s, dom, t| match VirtIOBlk::<KeepHal, _>::new(t) {
        Ok(mut blk) => f(cx, s, dom, &mut blk),
        Err(e) => Err(format!("VirtIOBlk through the mediator: {e:?}")),
    })
}

/// The virtio function `device` opened through a PCI server, its mediated
/// transport handed to `f`; everything released afterwards.
fn with_mediated(cx: &mut Cx, device: u16, f: impl FnOnce(&mut Cx, Session, DmaDomain, PlatformTransport<VirtioTransport>) -> TestResult) -> TestResult {
    let srv = start_pci(cx)?;
    let [sess, dom, bar] = cx.slots::<3>()?;
    let mut pool = Vec::new();
    for _ in 0..32 {
        pool.push(cx.slot()?);
    }
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        let sid = Sid(pci.open(VIRTIO, device, 0, sess, dom).ctx("OPEN")? as u16);
        let s = Session(Sender(sess));
        let (base, size) = s.bar(4, bar).ctx("GET_BAR 4")?;
        let r = (|| {
            hal::init(DmaConfig {
                frames: keep_frames::Source::Pool(MEMORY),
                aspace: SELF_ASPACE,
                domain: DmaDomain(dom),
                bars: vec![(bar, base & !0xfff, ((base & 0xfff) + size).div_ceil(4096))],
                va_base: DMA_VA,
                iova_base: IOVA,
                mmio_va: MMIO_VA,
                slots: core::mem::take(&mut pool),
            })
            .ctx("hal init")?;
            let mut root = PciRoot::new(RemoteConfig { sid, session: s });
            root.set_command(sid.device_function(), Command::MEMORY_SPACE | Command::BUS_MASTER);
            let t = MediatedTransport::new(s, device).map_err(|e| format!("mediated transport: {e}"))?;
            let r = f(cx, s, DmaDomain(dom), PlatformTransport::new(VirtioTransport::Mediated(t)));
            pool = hal::finish();
            r
        })();
        s.release().ctx("RELEASE")?;
        r
    })();
    for x in [sess, dom, bar] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, bar]);
    cx.drop_slots(&pool);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

/// With the IOMMU: the mediator is not in the way (VIRTIO_* NOT_FOUND).
fn not_mediated(cx: &mut Cx, id: &str) -> TestResult {
    let srv = start_pci(cx)?;
    let [sess, dom] = cx.slots::<2>()?;
    let r = (|| {
        Pci(Sender(srv.cap)).open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        let got = st(s.virtio_read(0, 4));
        s.release().ctx("RELEASE")?;
        ensure!(got == NOT_FOUND, "VIRTIO_READ with the IOMMU: {got}, want NOT_FOUND");
        Ok(())
    })();
    cx.drop_slots(&[sess, dom]);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped?;
    println!("ktest: {id}: the IOMMU confines DMA on this machine: no mediation (its calls are NOT_FOUND)");
    Ok(())
}

/// Reads `sector` honestly and checks the image's pattern.
fn honest_read(blk: &mut VirtIOBlk<KeepHal, PlatformTransport<VirtioTransport>>, sector: u64) -> TestResult {
    let mut buf = vec![0u8; 512];
    blk.read_blocks(sector as usize, &mut buf).map_err(|e| format!("read sector {sector}: {e:?}"))?;
    let w = u64::from_le_bytes(buf[8..16].try_into().unwrap());
    ensure!(w == disk_pattern(sector, 1), "sector {sector} word 1 is {w:#x}");
    Ok(())
}

/// A read whose every buffer the driver points at `addr`: the mediator
/// must refuse it with `DENIED` naming `want`, publish nothing, and the
/// device complete nothing.
fn rogue_read(s: Session, blk: &mut VirtIOBlk<KeepHal, PlatformTransport<VirtioTransport>>, addr: u64, want: u64, what: &str) -> TestResult {
    let (published, refused) = s.virtio_stats().ctx("VIRTIO_STATS")?;
    hal::set_rogue(Some(addr));
    let mut req = BlkReq::default();
    let mut resp = BlkResp::default();
    let mut buf = vec![0u8; 512];
    // SAFETY: the request is refused, so the device never sees the buffers;
    // the device is reset before they go in any case.
    let t = unsafe { blk.read_blocks_nb(0, &mut req, &mut buf, &mut resp) };
    mediated::kick();
    hal::set_rogue(None);
    t.map_err(|e| format!("{what}: submit: {e:?}"))?;
    let got = mediated::take_refusal();
    ensure!(got == Some((DENIED, 0, want)), "{what}: the mediator answered {got:?}, want (DENIED, chain 0, {want:#x})");
    let (p, r) = s.virtio_stats().ctx("VIRTIO_STATS")?;
    ensure!(p == published && r == refused + 1, "{what}: published {published} -> {p}, refused {refused} -> {r}");
    // Give the device time: it must not complete what it never got.
    let _ = keep_abi::recv(Tag::new(0), 30);
    ensure!(blk.peek_used().is_none(), "{what}: the device completed a refused request");
    Ok(())
}

/// MED0001: a rogue driver's descriptors outside its pinned pages are
/// refused before they reach the device; honest reads go on working.
pub fn rogue_descriptors(cx: &mut Cx) -> TestResult {
    if remapping(cx)? {
        return not_mediated(cx, "MED0001");
    }
    let [victim, ro, edge] = cx.slots::<3>()?;
    let r = (|| {
        for p in [victim, ro, edge] {
            MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        }
        SELF_ASPACE.map(victim, VICTIM_VA, RW).ctx("map the victim")?;
        SELF_ASPACE.map(ro, VICTIM_VA + 0x1000, RW).ctx("map the read-only page")?;
        SELF_ASPACE.map(edge, VICTIM_VA + 0x2000, RW).ctx("map the edge page")?;
        fill(VICTIM_VA, 0x5a5a_0f0f_1234_5678);
        fill(VICTIM_VA + 0x1000, 0x0f0f_5a5a_8765_4321);
        fill(VICTIM_VA + 0x2000, 0x1234_5678_5a5a_0f0f);
        let (_, frame) = SELF_ASPACE.lookup(VICTIM_VA).ctx("LOOKUP")?;
        let target = frame * 4096;
        let r = with_mediated_blk(cx, |_, s, dom, blk| {
            honest_read(blk, 5)?;
            // The physical address of a page the driver holds but never
            // pinned: what an unconfined device would reach.
            rogue_read(s, blk, target, target, "a page not pinned (its physical address)")?;
            // Pinned, but for device reads only: a disk read would write it.
            dom.map(ro, READ_ONLY_IOVA, rights::READ).ctx("DMA_DOMAIN.MAP read-only")?;
            rogue_read(s, blk, READ_ONLY_IOVA, READ_ONLY_IOVA, "a page pinned for device reads only")?;
            // The header (16 bytes) fits the pinned page; the data runs past its end.
            dom.map(edge, EDGE_IOVA, RW).ctx("DMA_DOMAIN.MAP")?;
            rogue_read(s, blk, EDGE_IOVA + 4096 - 256, EDGE_IOVA + 4096, "bytes past the end of a pinned page")?;
            // Hand-made submissions: malformed ones, and the victim again.
            let mut refused = (0, 0);
            let chain = |head: u16, addr: u64, flags: u16| {
                let mut m = vec![0u8; 8];
                m[2] = 1;
                m.extend_from_slice(&head.to_le_bytes());
                m.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
                m.extend_from_slice(&addr.to_le_bytes());
                m.extend_from_slice(&512u32.to_le_bytes());
                m.extend_from_slice(&flags.to_le_bytes());
                m.extend_from_slice(&[0, 0]);
                m
            };
            let (published, _) = s.virtio_stats().ctx("VIRTIO_STATS")?;
            let cases: [(&str, u64, Vec<u8>, u64); 7] = [
                ("the victim, device writes", 0, chain(0, target, 2), DENIED),
                ("the victim, device reads", 0, chain(0, target, 0), DENIED),
                ("an empty string", 0, Vec::new(), BAD_REQUEST),
                ("a head beyond the queue", 0, chain(16, EDGE_IOVA, 2), BAD_REQUEST),
                ("an indirect descriptor", 0, chain(0, EDGE_IOVA, 4), BAD_REQUEST),
                ("a string cut short", 0, chain(0, EDGE_IOVA, 2)[..20].to_vec(), BAD_REQUEST),
                ("a queue not set up", 5, chain(0, EDGE_IOVA, 2), NOT_FOUND),
            ];
            for (what, q, m, want) in cases {
                let got = st(s.virtio_submit(q, &m, &mut refused));
                ensure!(got == want, "VIRTIO_SUBMIT of {what}: {}, want {}", keep_pci::status_name(got), keep_pci::status_name(want));
            }
            let (p, _) = s.virtio_stats().ctx("VIRTIO_STATS")?;
            ensure!(p == published, "refused submissions published {} chains", p - published);
            // The device still serves the (now honest) driver.
            honest_read(blk, 31)?;
            Ok(())
        });
        intact(VICTIM_VA, 0x5a5a_0f0f_1234_5678, "the victim page")?;
        intact(VICTIM_VA + 0x1000, 0x0f0f_5a5a_8765_4321, "the read-only page")?;
        intact(VICTIM_VA + 0x2000, 0x1234_5678_5a5a_0f0f, "the edge page")?;
        r
    })();
    for (i, p) in [victim, ro, edge].into_iter().enumerate() {
        let _ = SELF_ASPACE.unmap(VICTIM_VA + 0x1000 * i as u64);
        let _ = MEMORY.reclaim(p);
    }
    cx.drop_slots(&[victim, ro, edge]);
    r
}

/// A virtio-net frame (its header zeroed, as virtio-drivers fills it) that
/// asks who has QEMU's gateway (10.0.2.2), from `ip`.
fn arp_frame(net: &VirtIONetRaw<KeepHal, PlatformTransport<VirtioTransport>, 16>, ip: [u8; 4]) -> Result<Vec<u8>, String> {
    let mut f = vec![0u8; 64];
    let hdr = net.fill_buffer_header(&mut f).map_err(|e| format!("header: {e:?}"))?;
    let mac = net.mac_address();
    let mut e = vec![0xff; 6];
    e.extend_from_slice(&mac);
    e.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    e.extend_from_slice(&mac);
    e.extend_from_slice(&ip);
    e.extend_from_slice(&[0; 6]);
    e.extend_from_slice(&[10, 0, 2, 2]);
    f.truncate(hdr);
    f.extend_from_slice(&e);
    Ok(f)
}

/// MED0003: the network server's device, virtio-net, through the mediator:
/// an honest transmit (an ARP request for the gateway) and receive (its
/// reply) go through; a transmitted frame and a receive buffer pointed at
/// a page the driver never pinned (what the device would read and send on
/// the wire, or write) are each refused with DENIED naming that address,
/// nothing is published and the device completes neither; the page is
/// unchanged.
pub fn net_descriptors(cx: &mut Cx) -> TestResult {
    if remapping(cx)? {
        return not_mediated(cx, "MED0003");
    }
    let victim = cx.slot()?;
    let r = (|| {
        MEMORY.retype(ty::PAGE, victim).ctx("RETYPE")?;
        SELF_ASPACE.map(victim, VICTIM_VA, RW).ctx("map the victim")?;
        fill(VICTIM_VA, 0x7e57_0bad_cafe_0001);
        let (_, frame) = SELF_ASPACE.lookup(VICTIM_VA).ctx("LOOKUP")?;
        let target = frame * 4096;
        let r = with_mediated(cx, NET, |_, s, _, t| {
            let mut net = VirtIONetRaw::<KeepHal, _, 16>::new(t).map_err(|e| format!("VirtIONetRaw through the mediator: {e:?}"))?;
            // Honest: one receive buffer, one ARP request, its reply.
            let mut rx = vec![0u8; 2048];
            // SAFETY: rx and tx stay untouched until their completions below.
            let rt = unsafe { net.receive_begin(&mut rx) }.map_err(|e| format!("receive_begin: {e:?}"))?;
            mediated::kick();
            let tx = arp_frame(&net, [10, 0, 2, 40])?;
            let tt = unsafe { net.transmit_begin(&tx) }.map_err(|e| format!("transmit_begin: {e:?}"))?;
            mediated::kick();
            ensure!(mediated::take_refusal().is_none(), "the mediator refused an honest frame");
            let mut waited = 0;
            while net.poll_transmit() != Some(tt) || net.poll_receive() != Some(rt) {
                ensure!(waited < 200, "no transmit or receive completion within 2 s");
                let _ = keep_abi::recv(Tag::new(0), 10);
                waited += 1;
            }
            unsafe { net.transmit_complete(tt, &tx) }.map_err(|e| format!("transmit_complete: {e:?}"))?;
            let (hdr, len) = unsafe { net.receive_complete(rt, &mut rx) }.map_err(|e| format!("receive_complete: {e:?}"))?;
            let f = &rx[hdr..hdr + len];
            ensure!(len >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 2] && f[28..32] == [10, 0, 2, 2],
                    "the received frame is not the gateway's ARP reply: {:02x?}", &f[..len.min(42)]);
            // Rogue: the frame to send, then a receive buffer, at the victim.
            for (what, transmit) in [("a frame to send", true), ("a receive buffer", false)] {
                let (published, refused) = s.virtio_stats().ctx("VIRTIO_STATS")?;
                hal::set_rogue(Some(target));
                let mut b = vec![0u8; 2048];
                let frame = arp_frame(&net, [10, 0, 2, 41])?;
                // SAFETY: the chain is refused; the device never sees the buffer.
                let tok = if transmit { unsafe { net.transmit_begin(&frame) } } else { unsafe { net.receive_begin(&mut b) } };
                mediated::kick();
                hal::set_rogue(None);
                tok.map_err(|e| format!("{what}: submit: {e:?}"))?;
                let got = mediated::take_refusal();
                ensure!(got == Some((DENIED, 0, target)), "{what} at a page not pinned: {got:?}, want (DENIED, chain 0, {target:#x})");
                let (p, r) = s.virtio_stats().ctx("VIRTIO_STATS")?;
                ensure!(p == published && r == refused + 1, "{what}: published {published} -> {p}, refused {refused} -> {r}");
                let _ = keep_abi::recv(Tag::new(0), 30);
                ensure!(if transmit { net.poll_transmit().is_none() } else { net.poll_receive().is_none() },
                        "{what}: the device completed a refused chain");
            }
            Ok(())
        });
        intact(VICTIM_VA, 0x7e57_0bad_cafe_0001, "the victim page")?;
        r
    })();
    let _ = SELF_ASPACE.unmap(VICTIM_VA);
    let _ = MEMORY.reclaim(victim);
    cx.drop_slots(&[victim]);
    r
}

/// MED0002: without an IOMMU the driver cannot reach the queue address
/// registers: not through BAR 4 (its page is not given), not through the
/// mediator (refused), not through configuration space (virtio's window
/// into the BARs is read-only); ring features are hidden; a used ring the
/// device could not write is refused; a non-virtio function cannot master
/// the bus.
pub fn queue_registers(cx: &mut Cx) -> TestResult {
    if remapping(cx)? {
        return not_mediated(cx, "MED0002");
    }
    let srv = start_pci(cx)?;
    let [sess, dom, bar, page, sess2, dom2] = cx.slots::<6>()?;
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        let (cbar, coff, _) = virtio_cap(s, 1)?;
        let lo = s.config_read(0x10 + 4 * cbar).ctx("BAR")?;
        let common = (lo & !0xf) as u64 + coff;
        s.bar(cbar, bar).ctx("GET_BAR")?;
        let (dbase, pages) = DevMem(bar).info().ctx("DEVMEM INFO")?;
        ensure!(pages >= 1 && !(dbase..dbase + pages * 4096).contains(&common),
                "the driver's DEVMEM {dbase:#x}+{pages} pages covers the common configuration at {common:#x}");
        // Through the mediator: reads work, the queue registers refuse writes.
        ensure!(s.virtio_read(0x12, 2).ctx("num_queues")? >= 1, "no queues");
        let desc = s.virtio_read(0x20, 4).ctx("queue_desc")?;
        for (off, width) in [(0x20, 4), (0x24, 4), (0x28, 4), (0x2c, 4), (0x30, 4), (0x34, 4), (0x1c, 2), (0x18, 2), (0x12, 2)] {
            let got = st(s.virtio_write(off, width, 0x1000));
            ensure!(got == DENIED, "VIRTIO_WRITE of {off:#x}: {}, want DENIED", keep_pci::status_name(got));
        }
        ensure!(s.virtio_read(0x20, 4).ctx("queue_desc")? == desc, "queue_desc changed");
        ensure!(st(s.virtio_write(0x38, 4, 0)) == BAD_REQUEST, "beyond the structure");
        ensure!(st(s.virtio_write(0x15, 2, 0)) == BAD_REQUEST, "unaligned");
        ensure!(st(s.virtio_write(0x14, 1, 0x100)) == BAD_REQUEST, "a value wider than the register");
        // Configuration space: virtio's window into the BARs is read-only.
        let (_, _, window) = virtio_cap(s, 5)?;
        for off in [window + 4, window + 8, window + 12, window + 16] {
            ensure!(st(s.config_write(off, 0)) == DENIED, "CONFIG_WRITE into the PCI configuration access capability at {off:#x}");
        }
        // Ring features are hidden and cannot be accepted.
        s.virtio_write(0x00, 4, 0).ctx("device_feature_select")?;
        let f = s.virtio_read(0x04, 4).ctx("device_feature")?;
        ensure!(f & (1 << 28 | 1 << 29) == 0, "ring features shown to the driver: {f:#x}");
        s.virtio_write(0x08, 4, 0).ctx("driver_feature_select")?;
        s.virtio_write(0x0c, 4, 1 << 28 | 1 << 29).ctx("driver_feature")?;
        ensure!(s.virtio_read(0x0c, 4).ctx("driver_feature")? & (1 << 28 | 1 << 29) == 0, "ring features accepted");
        s.virtio_write(0x08, 4, 1).ctx("driver_feature_select")?;
        s.virtio_write(0x0c, 4, 1 << 2).ctx("driver_feature")?; // VIRTIO_F_RING_PACKED (34)
        ensure!(s.virtio_read(0x0c, 4).ctx("driver_feature")? & 1 << 2 == 0, "packed rings accepted");
        // A used ring the device could not write: not pinned, pinned read-only.
        let d = DmaDomain(dom);
        MEMORY.retype(ty::PAGE, page).ctx("RETYPE")?;
        let r = (|| {
            ensure!(st(s.virtio_queue(0, 16, IOVA, sess2)) == DENIED, "VIRTIO_QUEUE with a used ring not pinned");
            d.map(page, IOVA, rights::READ).ctx("MAP read-only")?;
            ensure!(st(s.virtio_queue(0, 16, IOVA, sess2)) == DENIED, "VIRTIO_QUEUE with a used ring pinned read-only");
            d.unmap(IOVA).ctx("UNMAP")?;
            d.map(page, IOVA, RW).ctx("MAP")?;
            ensure!(st(s.virtio_queue(0, 3, IOVA, sess2)) == BAD_REQUEST, "VIRTIO_QUEUE of 3 entries");
            ensure!(st(s.virtio_queue(0, 32, IOVA, sess2)) == BAD_REQUEST, "VIRTIO_QUEUE of 32 entries");
            ensure!(st(s.virtio_queue(0, 16, IOVA + 4000, sess2)) == BAD_REQUEST, "a used ring across a page end");
            ensure!(s.virtio_read(0x20, 4).ctx("queue_desc")? == desc, "a refused VIRTIO_QUEUE changed queue_desc");
            d.unmap(IOVA).ctx("UNMAP")?;
            Ok(())
        })();
        let _ = MEMORY.reclaim(page);
        r?;
        s.release().ctx("RELEASE")?;
        // Another function (q35's AHCI controller) is no virtio one: no
        // mediation, and without an IOMMU no bus mastering.
        pci.open(0x8086, 0x2922, 0, sess2, dom2).ctx("OPEN the AHCI controller")?;
        let h = Session(Sender(sess2));
        let cmd = h.config_read(4).ctx("command")? & 0xffff;
        let got = st(h.config_write(4, cmd | 0x4));
        let after = h.config_read(4).ctx("command")? & 0xffff;
        let vr = st(h.virtio_read(0, 4));
        h.release().ctx("RELEASE")?;
        ensure!(got == DENIED && after & 0x4 == cmd & 0x4, "bus mastering for a function nothing confines: {got}, command {after:#x}");
        ensure!(vr == NOT_FOUND, "VIRTIO_READ of the AHCI controller: {vr}");
        Ok(())
    })();
    for x in [sess, dom, bar, page, sess2, dom2] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, bar, page, sess2, dom2]);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

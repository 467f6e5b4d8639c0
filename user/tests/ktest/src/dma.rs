//! DMA domains and the IOMMU (docs/devices.md): the object's methods and
//! every error, a rogue DMA stopped and reported, and a virtio-blk disk
//! read and written through the IOMMU with `virtio-drivers`.
//!
//! The machine (tools/qemu.py) has a VT-d IOMMU and a virtio-blk disk on
//! build/disk.img, whose sectors hold `keep_virtio::disk_pattern`.  Booted
//! with `--no-iommu`, the domain tests check that nothing attaches.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{
    ACCOUNT, Account, DEVMEM, DmaDomain, Error, MEMORY, SELF_ASPACE, SELF_PROCESS, Tag, label, recv, rights,
    slot, ty,
};
use keep_virtio::hal::{self, DmaConfig, KeepHal};
use keep_virtio::pci::{self, FunctionConfig, Sid};
use keep_virtio::{PlatformTransport, checksum, disk_pattern};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{Command, PciRoot};

use keep_rt::println;

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

const RW: u64 = rights::READ | rights::WRITE;
const VA: u64 = 0x0000_5d00_0000_0000; // the function's configuration page
const SCRATCH: u64 = VA + 0x1000;
const MMIO_VA: u64 = VA + 0x10_0000;
const DMA_VA: u64 = VA + 0x100_0000;
const VICTIM_VA: u64 = VA + 0x2000;
/// Device addresses the driver chooses; far from any RAM address, so that
/// a DMA that bypassed the IOMMU would not find the driver's data there.
const IOVA: u64 = 0x40_0000_0000;
const HPET: u64 = 0xfed0_0000;
const IOMMU_REGS: u64 = 0xfed9_0000; // QEMU's VT-d unit (the DMAR table says so)
const VIRTIO_VENDOR: u16 = 0x1af4;
const VIRTIO_BLK_MODERN: u16 = 0x1042;

fn devmem_page(pa: u64) -> Result<u64, alloc::string::String> {
    let (base, _) = DEVMEM.info().ctx("DEVMEM.INFO")?;
    Ok((pa - base) / 4096)
}

fn blk_function() -> Result<Sid, alloc::string::String> {
    pci::find(SELF_ASPACE, slot::DEVMEM, SCRATCH, VIRTIO_VENDOR, VIRTIO_BLK_MODERN)
        .ctx("PCI scan")?
        .ok_or_else(|| "no virtio-blk (1af4:1042) on bus 0".into())
}

pub fn domain_methods(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [d, p, q]| {
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        MEMORY.retype(ty::PAGE, q).ctx("RETYPE")?;
        SELF_ASPACE.map(p, VA, RW).ctx("ASPACE.MAP")?; // ktest's own page tables grow first
        let (_, used_before) = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        let i = dom.info().ctx("INFO")?;
        ensure!(i.address_bits == 39 || i.address_bits == 48, "address bits {}", i.address_bits);
        ensure!(i.pages == 0 && i.devices == 0, "new domain {i:?}");
        dom.map(p, 0x10000, RW).ctx("MAP")?;
        dom.map(q, 0x7f_ffff_f000 & ((1 << i.address_bits) - 1), rights::READ).ctx("MAP at the top")?;
        let (r, frame) = dom.lookup(0x10000).ctx("LOOKUP")?;
        let (_, aframe) = SELF_ASPACE.lookup(VA).ctx("ASPACE.LOOKUP")?;
        ensure!(r == RW && frame == aframe, "LOOKUP {r:#x} {frame:#x}, the page is frame {aframe:#x}");
        ensure!(dom.info().ctx("INFO")?.pages == 2, "pages after two MAPs");
        expect_err(dom.map(p, 0x10000, RW), Error::EXISTS, "MAP twice")?;
        let (_, used_mapped) = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
        ensure!(used_mapped > used_before + 2, "the domain's tables are not paid by the account ({used_before} -> {used_mapped})");
        SELF_ASPACE.unmap(VA).ctx("ASPACE.UNMAP")?;
        // Pinned: mapped nowhere but in the domain, the frame is not reclaimed.
        expect_err(MEMORY.reclaim(p), Error::IN_USE, "RECLAIM a page mapped for DMA")?;
        dom.unmap(0x10000).ctx("UNMAP")?;
        expect_err(dom.lookup(0x10000), Error::NOT_MAPPED, "LOOKUP after UNMAP")?;
        expect_err(dom.unmap(0x10000), Error::NOT_MAPPED, "UNMAP twice")?;
        MEMORY.reclaim(p).ctx("RECLAIM after UNMAP")?;
        // Destroying the domain unpins what it still maps and gives its
        // frames back to the account.
        expect_err(MEMORY.reclaim(q), Error::IN_USE, "RECLAIM q while mapped")?;
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        expect_err(dom.info(), Error::STALE, "INFO after DESTROY")?;
        MEMORY.reclaim(q).ctx("RECLAIM q after DESTROY")?;
        SELF_ASPACE.delete_cap(d).ctx("DELETE")?;
        let (_, used_after) = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
        ensure!(used_after == used_before, "account frames in use {used_before} -> {used_after}");
        Ok(())
    })
}

pub fn domain_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [d, p, ro, weak, cp, e, acct, dm]| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        let bits = dom.info().ctx("INFO")?.address_bits;
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        MEMORY.retype(ty::CAPPAGE, cp).ctx("RETYPE CAPPAGE")?;
        dom.map(p, 0x2000, rights::READ).ctx("MAP")?;
        let r = (|| {
            // A frame the caller does not hold: an empty slot, other types,
            // a page it holds only for reading, a destroyed page.
            expect_err(dom.map(e, 0x1000, rights::READ), Error::INVALID_CAP, "empty slot")?;
            expect_err(dom.map(cp, 0x1000, rights::READ), Error::WRONG_TYPE, "a CAPPAGE")?;
            expect_err(dom.map(slot::MEMORY, 0x1000, rights::READ), Error::WRONG_TYPE, "MEMORY")?;
            expect_err(dom.map(slot::DEVMEM, 0x1000, rights::READ), Error::WRONG_TYPE, "device memory")?;
            expect_err(dom.map(d, 0x1000, rights::READ), Error::WRONG_TYPE, "the domain itself")?;
            SELF_ASPACE.copy_cap(p, ro, rights::READ).ctx("COPY READ")?;
            expect_err(dom.map(ro, 0x1000, RW), Error::NO_RIGHTS, "device writes through a READ page")?;
            expect_err(dom.map(p, 0x1000, rights::EXEC), Error::INVALID_ARG, "EXEC")?;
            expect_err(dom.map(p, 0x1000, 0), Error::INVALID_ARG, "no rights")?;
            expect_err(dom.map(p, 0x1800, rights::READ), Error::INVALID_ARG, "unaligned")?;
            expect_err(dom.map(p, 1 << bits, rights::READ), Error::INVALID_ARG, "beyond the address width")?;
            expect_err(dom.map(p, u64::MAX & !0xfff, rights::READ), Error::INVALID_ARG, "top of 64 bits")?;
            expect_err(dom.unmap(0x1000), Error::NOT_MAPPED, "UNMAP what is not mapped")?;
            expect_err(dom.unmap(0x2800), Error::INVALID_ARG, "UNMAP unaligned")?;
            expect_err(dom.unmap(1 << bits), Error::INVALID_ARG, "UNMAP beyond")?;
            expect_err(dom.lookup(0x1000), Error::NOT_MAPPED, "LOOKUP unmapped")?;
            expect_err(dom.lookup(1 << bits), Error::INVALID_ARG, "LOOKUP beyond")?;
            // Rights on the domain: READ reads, WEAK has no WRITE.
            SELF_ASPACE.delete_cap(ro).ctx("DELETE")?;
            SELF_ASPACE.copy_cap(d, ro, rights::READ).ctx("COPY the domain READ")?;
            SELF_ASPACE.copy_cap(d, weak, rights::ALL | rights::WEAK).ctx("COPY WEAK")?;
            for (c, what) in [(ro, "READ"), (weak, "WEAK")] {
                let rd = DmaDomain(c);
                rd.info().ctx(what)?;
                rd.lookup(0x2000).ctx(what)?;
                expect_err(rd.map(p, 0x3000, rights::READ), Error::NO_RIGHTS, &format!("MAP through {what}"))?;
                expect_err(rd.unmap(0x2000), Error::NO_RIGHTS, &format!("UNMAP through {what}"))?;
                expect_err(rd.set_fault_handler(0), Error::NO_RIGHTS, &format!("SET_FAULT_HANDLER through {what}"))?;
                expect_err(rd.attach(slot::DEVMEM, 0), Error::NO_RIGHTS, &format!("ATTACH through {what}"))?;
            }
            // ATTACH names a PCI function by its configuration page.
            expect_err(dom.attach(slot::DEVMEM, devmem_page(HPET)?), Error::INVALID_ARG, "the HPET's page")?;
            expect_err(dom.attach(slot::DEVMEM, devmem_page(0xfee0_0000)?), Error::INVALID_ARG, "the local APIC")?;
            expect_err(dom.attach(slot::DEVMEM, 1 << 40), Error::INVALID_ARG, "beyond DEVMEM")?;
            expect_err(dom.attach(slot::IOPORT, 0), Error::WRONG_TYPE, "IOPORT")?;
            expect_err(dom.attach(e, 0), Error::INVALID_CAP, "empty slot")?;
            let sid = blk_function()?;
            let (base, _) = DEVMEM.info().ctx("DEVMEM.INFO")?;
            DEVMEM.restrict(pci::ECAM_BASE + ((sid.0 as u64) << 12), 1, dm).ctx("RESTRICT")?;
            SELF_ASPACE.delete_cap(weak).ctx("DELETE")?;
            SELF_ASPACE.copy_cap(dm, weak, rights::READ).ctx("COPY DEVMEM READ")?;
            expect_err(dom.attach(weak, 0), Error::NO_RIGHTS, "a READ-only configuration page")?;
            expect_err(dom.detach(dm, 0), Error::NOT_MAPPED, "DETACH what is not attached")?;
            expect_err(dom.set_fault_handler(p), Error::WRONG_TYPE, "a PAGE as fault handler")?;
            // The IOMMU's own registers are never device memory.
            if dom.info().ctx("INFO")?.remapping {
                expect_err(
                    SELF_ASPACE.map_device(slot::DEVMEM, devmem_page(IOMMU_REGS)?, SCRATCH, rights::READ),
                    Error::IN_USE,
                    "mapping the IOMMU's registers",
                )?;
                dom.attach(dm, 0).ctx("ATTACH")?;
                expect_err(dom.attach(slot::DEVMEM, sid.config_page(base)), Error::IN_USE, "ATTACH twice")?;
                ensure!(dom.info().ctx("INFO")?.devices == 1, "devices after ATTACH");
                dom.detach(dm, 0).ctx("DETACH")?;
                expect_err(dom.detach(dm, 0), Error::NOT_MAPPED, "DETACH twice")?;
            } else {
                expect_err(dom.attach(dm, 0), Error::BAD_STATE, "ATTACH without an IOMMU")?;
            }
            // Only the account that paid for a domain destroys it.
            MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
            expect_err(Account(acct).destroy(d), Error::INVALID_ARG, "DESTROY from another account")?;
            ensure!(dom.info().ctx("INFO")? .pages == 1, "the errors changed the mapping count");
            ensure!(dom.lookup(0x2000).ctx("LOOKUP")? .0 == rights::READ, "the mapping changed");
            Ok(())
        })();
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        MEMORY.reclaim(p).ctx("RECLAIM p")?;
        for s in [d, ro, weak, cp, acct, dm] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        r
    })
}

/// A virtio-blk driver on the disk, its DMA in domain `dom`.
struct Disk {
    blk: VirtIOBlk<KeepHal, PlatformTransport<PciTransport>>,
}

fn open_disk(dom: DmaDomain, slots: Vec<u64>) -> Result<(Disk, Sid), alloc::string::String> {
    let sid = blk_function()?;
    hal::init(DmaConfig {
        frames: keep_frames::Source::Pool(MEMORY),
        aspace: SELF_ASPACE,
        domain: dom,
        bars: vec![(slot::DEVMEM, DEVMEM.info().ctx("DEVMEM.INFO")?.0, DEVMEM.info().ctx("DEVMEM.INFO")?.1)],
        va_base: DMA_VA,
        iova_base: IOVA,
        mmio_va: MMIO_VA,
        slots,
    })
    .ctx("hal init")?;
    let cfg = FunctionConfig::map(SELF_ASPACE, slot::DEVMEM, sid, VA).ctx("map the configuration page")?;
    let mut root = PciRoot::new(cfg);
    let df = sid.device_function();
    root.set_command(df, Command::MEMORY_SPACE | Command::BUS_MASTER);
    let t = PciTransport::new::<KeepHal, _>(&mut root, df).map_err(|e| format!("PciTransport: {e:?}"))?;
    let blk = VirtIOBlk::new(PlatformTransport::new(t)).map_err(|e| format!("VirtIOBlk: {e:?}"))?;
    Ok((Disk { blk }, sid))
}

fn close_disk(disk: Disk) -> Vec<u64> {
    drop(disk); // resets the device
    let _ = SELF_ASPACE.unmap(VA);
    hal::finish()
}

/// Runs `f` with a domain the disk is attached to; cleans everything up.
fn with_disk(
    cx: &mut Cx,
    f: impl FnOnce(&mut Disk, DmaDomain, Sid, u64) -> TestResult,
) -> TestResult {
    with_slots(cx, |cx, [d, dm, s]| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        let sid = blk_function()?;
        DEVMEM.restrict(pci::ECAM_BASE + ((sid.0 as u64) << 12), 1, dm).ctx("RESTRICT")?;
        dom.attach(dm, 0).ctx("ATTACH")?;
        SELF_PROCESS.mint(s, 0xd3a, rights::WRITE).ctx("MINT")?;
        dom.set_fault_handler(s).ctx("SET_FAULT_HANDLER")?;
        let mut pool = Vec::new();
        for _ in 0..32 {
            pool.push(cx.slot()?);
        }
        let r = match open_disk(dom, pool) {
            Ok((mut disk, _)) => {
                let r = f(&mut disk, dom, sid, s);
                let back = close_disk(disk);
                cx.drop_slots(&back);
                r
            }
            Err(e) => {
                let _ = SELF_ASPACE.unmap(VA);
                cx.drop_slots(&hal::finish());
                Err(e)
            }
        };
        let pages = dom.info().ctx("INFO")?.pages;
        dom.detach(dm, 0).ctx("DETACH")?;
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        for x in [d, dm, s] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        r?;
        ensure!(pages == 0, "{pages} pages still mapped in the domain after the driver let go");
        Ok(())
    })
}

/// Whether the IOMMU translates DMA (a fresh domain's INFO says).
fn remapping(cx: &mut Cx) -> Result<bool, alloc::string::String> {
    let d = cx.slot()?;
    let on = (|| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let on = DmaDomain(d).info().ctx("INFO")?.remapping;
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        SELF_ASPACE.delete_cap(d).ctx("DELETE")?;
        Ok(on)
    })();
    cx.drop_slots(&[d]);
    on
}

pub fn blk_integrity(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: DMA0003: no IOMMU on this machine: no device I/O (DMA0002 checked that nothing attaches)");
        return Ok(());
    }
    with_disk(cx, |disk, dom, _, _| {
        // The image's own pattern: read by the device into pages it reaches
        // only through the domain, at device addresses that are not RAM's.
        let mut buf = vec![0u8; 8 * 512];
        disk.blk.read_blocks(0, &mut buf).map_err(|e| format!("read sectors 0-7: {e:?}"))?;
        for (i, w) in buf.chunks(8).enumerate() {
            let got = u64::from_le_bytes(w.try_into().unwrap());
            let (s, k) = (i as u64 / 64, i as u64 % 64);
            ensure!(got == disk_pattern(s, k), "sector {s} word {k}: {got:#x}, want {:#x}", disk_pattern(s, k));
        }
        // Write 16 sectors of new data, read them back, compare checksums;
        // the neighbours keep the pattern.
        let data: Vec<u8> = (0..16 * 512u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        disk.blk.write_blocks(100, &data).map_err(|e| format!("write sectors 100-115: {e:?}"))?;
        let mut back = vec![0u8; data.len()];
        disk.blk.read_blocks(100, &mut back).map_err(|e| format!("read back: {e:?}"))?;
        ensure!(checksum(&back) == checksum(&data), "checksum {:#x}, wrote {:#x}", checksum(&back), checksum(&data));
        let mut edge = vec![0u8; 512];
        for s in [99u64, 116] {
            disk.blk.read_blocks(s as usize, &mut edge).map_err(|e| format!("read {s}: {e:?}"))?;
            let w0 = u64::from_le_bytes(edge[..8].try_into().unwrap());
            ensure!(w0 == disk_pattern(s, 0), "sector {s} changed: {w0:#x}");
        }
        let (pages, errors) = hal::stats();
        ensure!(errors == 0, "{errors} DMA page operations failed");
        ensure!(dom.info().ctx("INFO")?.pages == pages, "domain and driver disagree on the pages mapped");
        let (faults, _, _) = dom.faults().ctx("FAULTS")?;
        ensure!(faults == 0, "{faults} DMA faults in honest I/O");
        Ok(())
    })
}

pub fn rogue_dma(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: DMA0004: no IOMMU on this machine: nothing to stop a rogue DMA (not run)");
        return Ok(());
    }
    let victim = cx.slot()?;
    MEMORY.retype(ty::PAGE, victim).ctx("RETYPE the victim")?;
    SELF_ASPACE.map(victim, VICTIM_VA, RW).ctx("map the victim")?;
    let canary = 0x5a5a_0f0f_1234_5678u64;
    let words = VICTIM_VA as *mut u64;
    for i in 0..512 {
        // SAFETY: the victim page is mapped writable at VICTIM_VA.
        unsafe { words.add(i).write_volatile(canary ^ i as u64) };
    }
    let (_, frame) = SELF_ASPACE.lookup(VICTIM_VA).ctx("LOOKUP")?;
    let target = frame * 4096; // the victim's physical address
    let r = with_disk(cx, |disk, dom, sid, _| {
        // The driver points its device at a page it holds but never mapped
        // for DMA (its physical address, which an unconfined device would
        // reach): the IOMMU stops the access and reports it.
        hal::set_rogue(Some(target));
        let mut req = BlkReq::default();
        let mut resp = BlkResp::default();
        let mut buf = vec![0u8; 512];
        // SAFETY: the buffers outlive the request, which never completes: the
        // device is reset before they go.
        let t = unsafe { disk.blk.read_blocks_nb(0, &mut req, &mut buf, &mut resp) };
        hal::set_rogue(None);
        t.map_err(|e| format!("submit: {e:?}"))?;
        let m = recv(Tag::new(0), 3000);
        m.result().ctx("RECV the fault")?;
        ensure!(m.tag.label() == label::DMA_FAULT, "label {:#x}, want DMA_FAULT", m.tag.label());
        ensure!(m.payload == 0xd3a, "payload {:#x}", m.payload);
        ensure!(m.words[0] == sid.0 as u64, "device {:#x}, want {sid} ({:#x})", m.words[0], sid.0);
        ensure!(m.words[1] == target, "address {:#x}, want {target:#x}", m.words[1]);
        ensure!(m.words[2] != 0, "reason 0");
        let (faults, _, _) = dom.faults().ctx("FAULTS")?;
        ensure!(faults >= 1, "FAULTS counts {faults}");
        Ok(())
    });
    for i in 0..512 {
        // SAFETY: as above.
        let w = unsafe { words.add(i).read_volatile() };
        if w != canary ^ i as u64 {
            let _ = SELF_ASPACE.unmap(VICTIM_VA);
            return Err(format!("the victim page changed at word {i}: {w:#x}"));
        }
    }
    SELF_ASPACE.unmap(VICTIM_VA).ctx("unmap the victim")?;
    MEMORY.reclaim(victim).ctx("RECLAIM the victim")?;
    cx.drop_slots(&[victim]);
    r?;
    // The disk still works for an honest driver afterwards.
    blk_integrity(cx)
}

/// Submits a read whose buffers all lie at `addr` (a rogue request) and
/// returns the DMA_FAULT message it causes.
fn rogue_read(disk: &mut Disk, addr: u64) -> Result<keep_abi::Msg, alloc::string::String> {
    hal::set_rogue(Some(addr));
    let mut req = BlkReq::default();
    let mut resp = BlkResp::default();
    let mut buf = vec![0u8; 512];
    // SAFETY: the buffers outlive the request, which never completes: the
    // device is reset before they go.
    let t = unsafe { disk.blk.read_blocks_nb(0, &mut req, &mut buf, &mut resp) };
    hal::set_rogue(None);
    t.map_err(|e| format!("submit: {e:?}"))?;
    let m = recv(Tag::new(0), 3000);
    m.result().ctx("RECV the fault")?;
    ensure!(m.tag.label() == label::DMA_FAULT, "label {:#x}, want DMA_FAULT", m.tag.label());
    Ok(m)
}

pub fn unmap_invalidates(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: DMA0005: no IOMMU on this machine (not run)");
        return Ok(());
    }
    with_disk(cx, |disk, _, sid, _| {
        // An honest read: the device translates the bounce page's device
        // address (the IOMMU caches it), then the driver unmaps it and the
        // frame goes back to the pool.
        let mut buf = vec![0u8; 512];
        disk.blk.read_blocks(0, &mut buf).map_err(|e| format!("read: {e:?}"))?;
        let stale = hal::last_shared();
        ensure!(hal::stats().1 == 0, "DMA page operations failed");
        // The device is pointed at that address again: with the IOTLB
        // invalidated by UNMAP, it faults instead of reaching the frame.
        let m = rogue_read(disk, stale)?;
        ensure!(m.words[0] == sid.0 as u64 && m.words[1] == stale, "fault {:#x} at {:#x}, want {sid} at {stale:#x}", m.words[0], m.words[1]);
        Ok(())
    })
}

pub fn destroy_all(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [acct, d, p]| {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct, 8).ctx("DONATE")?;
        Account(acct).create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        DmaDomain(d).map(p, 0x7000, RW).ctx("MAP")?;
        expect_err(MEMORY.reclaim(p), Error::IN_USE, "RECLAIM while mapped")?;
        // The whole account goes, the domain with it: its page is unpinned.
        let free = MEMORY.free().ctx("FREE")?;
        Account(acct).destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        expect_err(DmaDomain(d).info(), Error::STALE, "the domain after DESTROY_ALL")?;
        MEMORY.reclaim(p).ctx("RECLAIM after DESTROY_ALL")?;
        let back = MEMORY.free().ctx("FREE")? - free;
        ensure!(back == 8 + 1 + 1, "{back} frames back to the pool, want the 8 donated, the account's and the page");
        for s in [acct, d] {
            SELF_ASPACE.delete_cap(s).ctx("DELETE")?;
        }
        Ok(())
    })
}

pub fn memory_revoke(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [d, p]| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        SELF_ASPACE.map(p, VA, RW).ctx("ASPACE.MAP")?;
        dom.map(p, 0x3000, RW).ctx("MAP")?;
        dom.map(p, 0x9000, rights::READ).ctx("MAP again elsewhere")?;
        // The pool's holder takes the page back from everyone, devices too.
        let n = MEMORY.revoke(p).ctx("MEMORY.REVOKE")?;
        ensure!(n == 3, "REVOKE removed {n} mappings, want 3 (one in the space, two in the domain)");
        for a in [0x3000, 0x9000] {
            expect_err(dom.lookup(a), Error::NOT_MAPPED, "the domain after REVOKE")?;
        }
        ensure!(dom.info().ctx("INFO")?.pages == 0, "the domain still counts pages");
        expect_err(SELF_ASPACE.lookup(VA), Error::NOT_MAPPED, "the space after REVOKE")?;
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        for s in [d, p] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        Ok(())
    })
}

pub fn exported_handler(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [acct, asp, p, s, d, dom]| {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct, 16).ctx("DONATE")?;
        let a = Account(acct);
        let r = (|| {
            a.create_aspace(asp).ctx("CREATE_ASPACE")?;
            a.create_process(asp, p).ctx("CREATE_PROCESS")?;
            keep_abi::Process(p).mint(s, 1, rights::WRITE).ctx("MINT")?;
            a.create_dma_domain(dom).ctx("CREATE_DMA_DOMAIN")?;
            a.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
            expect_err(DmaDomain(dom).set_fault_handler(s), Error::BAD_STATE, "an exported process as handler")?;
            a.restore_process(d).ctx("RESTORE_PROCESS")?;
            DmaDomain(dom).set_fault_handler(s).ctx("SET_FAULT_HANDLER after the restore")
        })();
        let _ = a.destroy_all(slot::MEMORY);
        for x in [acct, asp, p, s, d, dom] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        r
    })
}

/// Vectors the forged messages of `forged_low_vectors` name: exceptions
/// with and without an error code, those on their own stack (2, 8, 18),
/// and one vector above 31 nothing owns.  Not 0: QEMU's local APIC leaves
/// a vector 0 pending and never delivers it.
const FORGED: [u64; 16] = [16, 17, 14, 8, 13, 2, 21, 30, 29, 1, 6, 18, 19, 12, 10, 0x80];

pub fn forged_low_vectors(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: DMA0009: no IOMMU on this machine: the mediator refuses 0xfee00000 (MED0001) (not run)");
        return Ok(());
    }
    let (low0, _, unowned0) = keep_abi::KERNEL.interrupt_stats().ctx("INTERRUPT_STATS")?;
    // A sector of interrupt messages: the read's data lands at 0xfee00e00,
    // in the interrupt range, as 128 four-byte writes.  Those whose address
    // has the remappable-format bit (4) clear and destination mode physical
    // (bit 2 clear) are compatibility-format messages to APIC 0 with the
    // vector in their data; the remappable ones name handles 112-127, or
    // (with a subhandle, bit 3) one beyond the table: none is present.
    const BASE: u64 = 0xfee0_0e00;
    let mut data = vec![0u8; 512];
    let mut next = 0;
    for i in 0..128 {
        let off = BASE + 4 * i as u64;
        let word: u32 = if off & 0x14 == 0 && next < FORGED.len() {
            next += 1;
            FORGED[next - 1] as u32
        } else if off & 0x18 == 0x18 {
            0xffff
        } else {
            0
        };
        data[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    ensure!(next == FORGED.len(), "only {next} messages fit");
    with_disk(cx, |disk, _, _, _| {
        disk.blk.write_blocks(100, &data).map_err(|e| format!("write sector 100: {e:?}"))?;
        hal::set_rogue_buffer(BASE, 512);
        let mut buf = vec![0u8; 512];
        let r = disk.blk.read_blocks(100, &mut buf);
        hal::set_rogue(None);
        r.map_err(|e| format!("read sector 100 into the interrupt range: {e:?}"))?;
        // The disk still works for this driver.
        let mut back = vec![0u8; 512];
        disk.blk.read_blocks(100, &mut back).map_err(|e| format!("read back: {e:?}"))?;
        ensure!(back == data, "sector 100 reads back changed");
        Ok(())
    })?;
    let (low1, seen, unowned1) = keep_abi::KERNEL.interrupt_stats().ctx("INTERRUPT_STATS")?;
    let want = FORGED.iter().filter(|&&v| v < 32).fold(0u64, |m, &v| m | 1 << v);
    println!("ktest: DMA0009: {} interrupts at vectors below 32 (seen {seen:#x}), {} at unowned vectors", low1 - low0, unowned1 - unowned0);
    ensure!(seen & want == want, "vectors seen {seen:#x}, want all of {want:#x}");
    ensure!(low1 - low0 >= want.count_ones() as u64, "{} stray interrupts counted, want at least {}", low1 - low0, want.count_ones());
    ensure!(unowned1 > unowned0, "the message at vector 0x80 was not counted");
    Ok(())
}

/// DMA0010: HOLD and RELEASE.  With an IOMMU HOLD is BAD_STATE; without
/// one every error leaves nothing held, a held page's frame stays out of
/// the pool when the page is destroyed (INFO(HELD_FRAMES)) and comes back
/// with its last hold, and destroying the domain lets go of the rest.
pub fn holds(cx: &mut Cx) -> TestResult {
    let remap = remapping(cx)?;
    with_slots(cx, |_cx, [d, p, q]| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        MEMORY.retype(ty::PAGE, q).ctx("RETYPE")?;
        dom.map(p, IOVA, RW).ctx("MAP")?;
        dom.map(q, IOVA + 0x1000, rights::READ).ctx("MAP read-only")?;
        let r = (|| {
            if remap {
                expect_err(dom.hold(IOVA, 0, rights::WRITE), Error::BAD_STATE, "HOLD where the IOMMU translates")?;
                ensure!(dom.holds().ctx("FAULTS")? == 0, "holds counted");
                return Ok(());
            }
            let sa = SELF_ASPACE;
            sa.map(p, SCRATCH, RW).ctx("map p")?;
            let (_, frame) = sa.lookup(SCRATCH).ctx("LOOKUP")?;
            sa.unmap(SCRATCH).ctx("unmap p")?;
            expect_err(dom.hold(IOVA, keep_abi::layout::DMA_HOLD_TAGS, rights::WRITE), Error::INVALID_ARG, "HOLD with tag DMA_HOLD_TAGS")?;
            expect_err(dom.hold(IOVA, 1, 0), Error::INVALID_ARG, "HOLD needing no right")?;
            expect_err(dom.hold(IOVA, 1, rights::EXEC), Error::INVALID_ARG, "HOLD needing EXEC")?;
            expect_err(dom.hold(IOVA + 8, 1, rights::READ), Error::INVALID_ARG, "HOLD of an unaligned address")?;
            expect_err(dom.hold(IOVA + 0x2000, 1, rights::READ), Error::NOT_MAPPED, "HOLD of an unmapped address")?;
            expect_err(dom.hold(IOVA + 0x1000, 1, rights::WRITE), Error::NO_RIGHTS, "HOLD for device writes of a read-only mapping")?;
            ensure!(dom.holds().ctx("FAULTS")? == 0, "a refused HOLD held something");
            expect_err(dom.release(keep_abi::layout::DMA_HOLD_TAGS, 1), Error::INVALID_ARG, "RELEASE from DMA_HOLD_TAGS")?;
            expect_err(dom.release(4000, 97), Error::INVALID_ARG, "RELEASE past DMA_HOLD_TAGS")?;
            // Two holds on p's frame (tags 1 and 2), one on q's (tag 3).
            let (r1, f1) = dom.hold(IOVA, 1, rights::WRITE).ctx("HOLD")?;
            ensure!(r1 == RW && f1 == frame, "HOLD gave rights {r1:#x} frame {f1:#x}, want {RW:#x} {frame:#x}");
            dom.hold(IOVA, 2, rights::READ).ctx("HOLD again")?;
            dom.hold(IOVA + 0x1000, 3, rights::READ).ctx("HOLD q")?;
            ensure!(dom.holds().ctx("FAULTS")? == 3, "3 holds, FAULTS says {}", dom.holds().unwrap_or(0));
            ensure!(dom.release(5, 10).ctx("RELEASE")? == 0, "RELEASE of tags without holds let go of some");
            // p unpinned and destroyed under its holds: its frame is held, not free.
            let held0 = keep_abi::KERNEL.info(keep_abi::info::HELD_FRAMES).ctx("INFO")?;
            dom.unmap(IOVA).ctx("UNMAP")?;
            MEMORY.reclaim(p).ctx("RECLAIM")?;
            let held1 = keep_abi::KERNEL.info(keep_abi::info::HELD_FRAMES).ctx("INFO")?;
            ensure!(held1 == held0 + 1, "HELD_FRAMES {held1} after the held page went, want {}", held0 + 1);
            ensure!(dom.release(1, 1).ctx("RELEASE 1")? == 1, "RELEASE of tag 1");
            ensure!(keep_abi::KERNEL.info(keep_abi::info::HELD_FRAMES).ctx("INFO")? == held1, "the frame was freed with a hold left");
            ensure!(dom.release(0, 3).ctx("RELEASE 0..3")? == 1, "RELEASE of tags 0..3");
            ensure!(keep_abi::KERNEL.info(keep_abi::info::HELD_FRAMES).ctx("INFO")? == held0, "the frame stayed held after its last hold");
            MEMORY.retype(ty::PAGE, p).ctx("RETYPE p again")?;
            ensure!(dom.holds().ctx("FAULTS")? == 1, "q's hold went");
            Ok(())
        })();
        // Destroying the domain lets go of q's hold; q is unpinned and reclaimable.
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        let _ = SELF_ASPACE.delete_cap(d);
        r?;
        MEMORY.reclaim(q).ctx("RECLAIM q after the domain went")?;
        let _ = MEMORY.reclaim(p);
        let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} invariants violated");
        Ok(())
    })
}

/// Reads sectors of forged compatibility-format messages to APIC 0 at
/// `vectors` into 0xfee00e00, as DMA0009 does: 32 fit in a sector (the
/// words whose address has bits 2 and 4 clear); the rest of each sector
/// names remapping handles none of which is present, or vector 0, which
/// QEMU's APIC drops.  The disk still reads back what was written.
fn forge_vectors(cx: &mut Cx, vectors: &[u64]) -> TestResult {
    const BASE: u64 = 0xfee0_0e00;
    let mut sectors = Vec::new();
    for chunk in vectors.chunks(32) {
        let mut data = vec![0u8; 512];
        let mut it = chunk.iter();
        for i in 0..128 {
            let off = BASE + 4 * i as u64;
            let word: u32 = if off & 0x14 == 0 {
                it.next().map_or(0, |&v| v as u32)
            } else if off & 0x18 == 0x18 {
                0xffff
            } else {
                0
            };
            data[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
        }
        ensure!(it.next().is_none(), "a sector holds fewer than 32 messages");
        sectors.push(data);
    }
    with_disk(cx, |disk, _, _, _| {
        for (k, data) in sectors.iter().enumerate() {
            let sector = 100 + k;
            disk.blk.write_blocks(sector, data).map_err(|e| format!("write sector {sector}: {e:?}"))?;
            hal::set_rogue_buffer(BASE, 512);
            let mut buf = vec![0u8; 512];
            let r = disk.blk.read_blocks(sector, &mut buf);
            hal::set_rogue(None);
            r.map_err(|e| format!("read sector {sector} into the interrupt range: {e:?}"))?;
            let mut back = vec![0u8; 512];
            disk.blk.read_blocks(sector, &mut back).map_err(|e| format!("read back: {e:?}"))?;
            ensure!(&back == data, "sector {sector} reads back changed");
        }
        Ok(())
    })
}

/// DMA0011: forged compatibility-format messages at every vector from 32
/// to 255 but the interrupt lines' (0x30-0x67: DMA0012 sends those).  Each
/// runs its entry stub: the kernel's own vectors (the timer, the serial
/// port, the IOMMU's fault event, the spurious vector) take their handlers
/// with nothing to do, every other one is acknowledged and counted as
/// unowned.  Afterwards the timer still interrupts (a message at the
/// spurious vector sets its in-service bit, which an interrupt the APIC
/// made itself never does: were it not acknowledged, every interrupt would
/// stay blocked below it) and the disk still works.
pub fn forged_high_vectors(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: DMA0011: no IOMMU on this machine: the mediator refuses 0xfee00000 (MED0001) (not run)");
        return Ok(());
    }
    const KERNEL_VECTORS: [u64; 4] = [0x20, 0x24, 0x28, 0xff];
    let vectors: Vec<u64> = (32..256).filter(|v| !(0x30..0x68).contains(v)).collect();
    let unowned = vectors.iter().filter(|v| !KERNEL_VECTORS.contains(v)).count() as u64;
    let (_, _, unowned0) = keep_abi::KERNEL.interrupt_stats().ctx("INTERRUPT_STATS")?;
    forge_vectors(cx, &vectors)?;
    let (_, _, unowned1) = keep_abi::KERNEL.interrupt_stats().ctx("INTERRUPT_STATS")?;
    println!("ktest: DMA0011: {} vectors sent, {} interrupts counted unowned", vectors.len(), unowned1 - unowned0);
    ensure!(
        unowned1 - unowned0 >= unowned,
        "{} interrupts counted unowned, want at least the {unowned} vectors no kernel handler or line has",
        unowned1 - unowned0
    );
    // The timer goes on: a sleep ends (it would not with the spurious
    // vector left in service), and the clock has moved.
    let t0 = keep_abi::TIMER.now_ms().ctx("NOW")?;
    keep_abi::TIMER.sleep(20).ctx("SLEEP")?;
    let t1 = keep_abi::TIMER.now_ms().ctx("NOW")?;
    ensure!(t1 >= t0 + 20, "SLEEP(20) took {} ms", t1 - t0);
    Ok(())
}

/// DMA0012: every interrupt line but the console's (4) bound to one
/// notification, line n with bit n (BIND_NOTIFICATION), and a forged
/// message at each line's vector (0x30 + n): each reaches its line's
/// binding, so the notification's word has every line's bit.  I/O APIC
/// lines are masked by each delivery and ACK unmasks them; UNBIND leaves
/// every line as it was.  A line some other process holds is left out.
pub fn forged_line_vectors(cx: &mut Cx) -> TestResult {
    use keep_abi::{INTERRUPT, Notification};
    if !remapping(cx)? {
        println!("ktest: DMA0012: no IOMMU on this machine: the mediator refuses 0xfee00000 (MED0001) (not run)");
        return Ok(());
    }
    let n = cx.slot()?;
    let mut bound = Vec::new();
    let r = (|| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let lines = keep_abi::layout::IRQ_LINES + keep_abi::layout::MSI_LINES;
        for line in 0..lines {
            if line == 4 {
                continue;
            }
            match INTERRUPT.bind_notification(line, n, 1 << line) {
                Ok(()) => bound.push(line),
                Err(Error::IN_USE) => {}
                Err(e) => return Err(format!("BIND_NOTIFICATION of line {line}: {e}")),
            }
        }
        ensure!(bound.len() >= 40, "only {} lines could be bound", bound.len());
        Notification(n).poll().ctx("POLL")?; // whatever came before the messages
        let vectors: Vec<u64> = bound.iter().map(|l| 0x30 + l).collect();
        forge_vectors(cx, &vectors)?;
        let want = bound.iter().fold(0u64, |m, l| m | 1 << l);
        let got = Notification(n).poll().ctx("POLL")?;
        ensure!(got & want == want, "bits {got:#x}, want all of {want:#x} (missing {:#x})", want & !got);
        ensure!(got & !want == 0, "bits {got:#x} beyond the bound lines' {want:#x}");
        for &line in &bound {
            INTERRUPT.ack(line).ctx(&format!("ACK line {line}"))?;
        }
        Ok(())
    })();
    for &line in &bound {
        let _ = INTERRUPT.unbind(line);
    }
    let _ = ACCOUNT.destroy(n);
    let _ = SELF_ASPACE.delete_cap(n);
    cx.drop_slots(&[n]);
    r
}

/// DMA0013: DMA domains take numbers from the IOMMU's domain identifiers
/// (the kernel's table of 256 without one): once every number is taken,
/// CREATE_DMA_DOMAIN is BAD_STATE, charges the account nothing and leaves
/// the slot empty; a destroyed domain's number serves the next one.
pub fn domain_numbers_run_out(cx: &mut Cx) -> TestResult {
    let acct = cx.slot()?;
    let mut made: Vec<u64> = Vec::new();
    let r = (|| {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct, 2 * 256 + 8).ctx("DONATE")?;
        let a = Account(acct);
        let refused = loop {
            ensure!(made.len() < 256, "256 DMA domains made, none refused");
            let s = cx.slot()?;
            match a.create_dma_domain(s) {
                Ok(()) => made.push(s),
                Err(e) => {
                    cx.slots.free(s);
                    break e;
                }
            }
        };
        ensure!(refused == Error::BAD_STATE, "past the last number: {refused}, want BAD_STATE");
        ensure!(!made.is_empty(), "no DMA domain could be made");
        let before = a.info_all().ctx("INFO")?;
        let s = cx.slot()?;
        let again = a.create_dma_domain(s);
        let empty = SELF_ASPACE.identify_cap(s).map(|c| c.ty);
        let after = a.info_all().ctx("INFO")?;
        cx.slots.free(s);
        expect_err(again, Error::BAD_STATE, "CREATE_DMA_DOMAIN again")?;
        ensure!(empty == Ok(ty::NULL) || empty == Err(Error::INVALID_CAP), "the refused CREATE filled its slot: {empty:?}");
        ensure!(after == before, "the refused CREATE changed the account: {before:?} -> {after:?}");
        let last = made.pop().unwrap();
        a.destroy(last).ctx("DESTROY a domain")?;
        cx.drop_slot(last);
        let s = cx.slot()?;
        made.push(s);
        a.create_dma_domain(s).ctx("CREATE_DMA_DOMAIN after a DESTROY")?;
        DmaDomain(s).info_raw().ctx("INFO of the new domain")?;
        let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} kernel invariant violations");
        // Every domain counts against DESTROY_ALL's part (its root table):
        // an account holding them all is taken down in parts.
        let restarts = || keep_abi::KERNEL.info(keep_abi::info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS");
        let before = restarts()?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = restarts()? - before;
        let least = made.len() as u64 / keep_abi::layout::DESTROY_TABLES - 1;
        ensure!(parts >= least, "DESTROY_ALL of {} domains restarted {parts} times, want at least {least}", made.len());
        expect_err(DmaDomain(made[0]).info_raw(), Error::STALE, "a domain after DESTROY_ALL")?;
        Ok(())
    })();
    let _ = Account(acct).destroy_all(slot::MEMORY);
    cx.drop_slots(&made);
    cx.drop_slot(acct);
    r
}

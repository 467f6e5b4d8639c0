//! The PCI server and the block server as a user would start them: `pci`
//! from the boot image with DEVMEM, `blk` given a capability to it; two
//! block clients with their own ranges and rights (docs/devices.md).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{DevMem, DmaDomain, SELF_ASPACE, Sender, Tag, recv, rights, slot, state};
use keep_blk::{Admin, Client, MAX_SECTORS, SECTOR};
use keep_dataspace::{DS_SLOT, Dataspace, Manager};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_pci::{PCI_SLOT, Pci, Session};
use keep_rt::println;
use keep_virtio::hal::{self, DmaConfig, KeepHal};
use keep_virtio::pci::{RemoteConfig, Sid};
use keep_virtio::mediated::MediatedTransport;
use keep_virtio::{PlatformTransport, VirtioTransport, checksum, disk_pattern};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk};
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{Command, PciRoot};

use crate::{Ctx, Cx, TestResult};

const VIRTIO: u16 = 0x1af4;
const BLK: u16 = 0x1042;
const NET: u16 = 0x1041;

pub(crate) fn grant(s: u64) -> Grant {
    Grant { src: s, dest: s, rights: 0 }
}

/// A started server: its process and a capability (payload 0) to it.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) cap: u64,
}

fn start(cx: &mut Cx, name: &str, grants: &[Grant]) -> Result<Running, String> {
    start_with(cx, name, grants, 0)
}

/// Starts `name` from the boot image with `grants` and `arg0`.
pub(crate) fn start_with(cx: &mut Cx, name: &str, grants: &[Grant], arg0: u64) -> Result<Running, String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    let elf = img.find(name).ok_or_else(|| format!("no '{name}' in the boot image"))?.data;
    let spec = Spec { name, elf, arg0, arg1: 0, grants, blob: None };
    let mut loader = Loader::new(&mut cx.slots);
    let child = loader.load(&spec).ctx(&format!("load {name}"))?;
    let cap = cx.slot()?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).ctx("MINT")?;
    child.process.start().ctx("START")?;
    Ok(Running { child, cap })
}

/// Waits for the server's end (after QUIT) and destroys it.
pub(crate) fn stop(cx: &mut Cx, r: Running, quit: impl FnOnce(Sender) -> Result<(), String>) -> TestResult {
    // A server that faulted cannot answer QUIT (a test's failure, which
    // the test reports): it is destroyed without asking.
    let faulted = r.child.process.status().is_ok_and(|s| s.state == state::FAULTED);
    let q = if faulted { Ok(()) } else { quit(Sender(r.cap)) };
    let st = r.child.process.wait().ctx("WAIT");
    let _ = SELF_ASPACE.delete_cap(r.cap);
    cx.drop_slots(&[r.cap]);
    Loader::new(&mut cx.slots).destroy(r.child).ctx("destroy")?;
    q?;
    let st = st?;
    ensure!(st.state == state::EXITED && st.code == 0, "ended in state {} code {}", st.state, st.code);
    Ok(())
}

pub(crate) fn start_pci(cx: &mut Cx) -> Result<Running, String> {
    // MEMORY: without an IOMMU its mediator makes each queue's used-ring
    // page (a described PCI server takes them from its bank).
    start(cx, "pci", &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::DEVMEM), grant(slot::TIMER),
                       grant(slot::INTERRUPT), grant(slot::MEMORY)])
}

/// The block server, given the PCI server `pci`.
fn start_blk(cx: &mut Cx, pci: &Running) -> Result<Running, String> {
    start(
        cx,
        "blk",
        &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::MEMORY), grant(slot::TIMER),
          Grant { src: pci.cap, dest: PCI_SLOT, rights: 0 }],
    )
}

/// The block server, given the PCI server and the dataspace manager `ds`.
pub(crate) fn start_blk_ds(cx: &mut Cx, pci: &Running, ds: &Running) -> Result<Running, String> {
    start(
        cx,
        "blk",
        &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::MEMORY), grant(slot::TIMER),
          Grant { src: pci.cap, dest: PCI_SLOT, rights: 0 }, Grant { src: ds.cap, dest: DS_SLOT, rights: 0 }],
    )
}

/// The PCI server, the dataspace manager and the block server, for `f`
/// (with the bank the dataspaces are paid from); all stopped afterwards.
pub(crate) fn with_blk_ds(cx: &mut Cx, f: impl FnOnce(&mut Cx, Admin, Manager, u64) -> TestResult) -> TestResult {
    with_blk_ds_process(cx, |cx, admin, m, bank, _| f(cx, admin, m, bank))
}

/// with_blk_ds, also giving the block server's process and the PCI
/// server's.
pub(crate) fn with_blk_ds_process(cx: &mut Cx, f: impl FnOnce(&mut Cx, Admin, Manager, u64, [keep_abi::Process; 2]) -> TestResult) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let ds = crate::ds::start_ds(cx)?;
        let r = (|| {
            let blk = start_blk_ds(cx, &pci, &ds.srv)?;
            let r = f(cx, Admin(Sender(blk.cap)), Manager(Sender(ds.srv.cap)), ds.clients.0, [blk.child.process, pci.child.process]);
            let stopped = stop(cx, blk, |s| Admin(s).quit().ctx("blk QUIT"));
            r?;
            stopped
        })();
        let stopped = crate::ds::stop_ds(cx, ds);
        r?;
        stopped
    })();
    let stopped = stop(cx, pci, quit_pci);
    r?;
    stopped
}

pub(crate) fn quit_pci(s: Sender) -> Result<(), String> {
    Pci(s).quit().ctx("pci QUIT")
}

pub(crate) fn remapping(cx: &mut Cx) -> Result<bool, String> {
    let d = cx.slot()?;
    let r = (|| {
        keep_abi::ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let on = DmaDomain(d).info().ctx("INFO")?.remapping;
        keep_abi::ACCOUNT.destroy(d).ctx("DESTROY")?;
        SELF_ASPACE.delete_cap(d).ctx("DELETE")?;
        Ok(on)
    })();
    cx.drop_slots(&[d]);
    r
}

pub fn pci_sessions(cx: &mut Cx) -> TestResult {
    let iommu = remapping(cx)?;
    let srv = start_pci(cx)?;
    let [sess, dom, sess2, dom2] = cx.slots::<4>()?;
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        let mut found = Vec::new();
        let mut i = 0;
        while let Ok((f, next)) = pci.list(i) {
            found.push(f);
            i = next;
        }
        ensure!(found.len() >= 4, "{} functions listed", found.len());
        ensure!(found.iter().any(|f| f.vendor == 0x8086 && f.device == 0x29c0), "no q35 host bridge in {found:?}");
        let blk = found.iter().find(|f| f.vendor == VIRTIO && f.device == BLK).ok_or("no virtio-blk listed")?;
        ensure!(found.iter().any(|f| f.vendor == VIRTIO && f.device == NET), "no virtio-net listed");
        ensure!(blk.class >> 16 == 1, "virtio-blk's class {:#x}, want mass storage", blk.class);
        let sid = pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        ensure!(sid == blk.sid, "OPEN gave {sid:#x}, LIST said {:#x}", blk.sid);
        let s = Session(Sender(sess));
        ensure!(s.config_read(0).ctx("CONFIG_READ")? == 0x1042_1af4, "vendor/device through the session");
        let info = DmaDomain(dom).info().ctx("domain INFO")?;
        ensure!(info.devices == iommu as u64, "domain devices {} (IOMMU {iommu})", info.devices);
        ensure!(
            pci.open(VIRTIO, BLK, 0, sess2, dom2) == Err(keep_pci::Error::Status(keep_pci::IN_USE)),
            "a second OPEN of the same function"
        );
        ensure!(
            pci.open(VIRTIO, BLK, 1, sess2, dom2) == Err(keep_pci::Error::Status(keep_pci::NOT_FOUND)),
            "a second virtio-blk"
        );
        ensure!(pci.open(0x1234, 0x5678, 0, sess2, dom2).is_err(), "OPEN of an absent device");
        // Bridges are nobody's to drive: the host bridge, the LPC bridge.
        for (device, what) in [(0x29c0, "q35's host bridge"), (0x2918, "the ICH9 LPC bridge")] {
            ensure!(
                pci.open(0x8086, device, 0, sess2, dom2) == Err(keep_pci::Error::Status(keep_pci::DENIED)),
                "OPEN of {what}"
            );
        }
        ensure!(
            Sender(srv.cap).call(Tag::new(99), [0; 4]).words[0] == keep_pci::BAD_REQUEST,
            "an unknown request"
        );
        s.release().ctx("RELEASE")?;
        ensure!(
            s.config_read(0) == Err(keep_pci::Error::Status(keep_pci::STALE)),
            "a released session still answers"
        );
        ensure!(DmaDomain(dom).info() == Err(keep_abi::Error::STALE), "the released session's domain lives on");
        for x in [sess, dom] {
            SELF_ASPACE.delete_cap(x).ctx("DELETE")?;
        }
        // Opened again: a fresh session for the next driver.
        pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN again")?;
        Session(Sender(sess)).config_read(0).ctx("CONFIG_READ through the new session")?;
        Session(Sender(sess)).release().ctx("RELEASE")?;
        Ok(())
    })();
    for x in [sess, dom, sess2, dom2] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, sess2, dom2]);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

pub fn pci_filter(cx: &mut Cx) -> TestResult {
    let iommu = remapping(cx)?;
    let srv = start_pci(cx)?;
    let [sess, dom, bar] = cx.slots::<3>()?;
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        use keep_pci::{BAD_REQUEST, DENIED, NOT_FOUND};
        // BAR 4 holds virtio 1.0's structures (64-bit memory BAR).
        let (base, size) = s.bar(4, bar).ctx("GET_BAR 4")?;
        let (dbase, pages) = DevMem(bar).info().ctx("DEVMEM INFO")?;
        // Without an IOMMU the mediator keeps the common configuration's
        // page (the BAR's first on QEMU) to itself (MED0002 checks more).
        let kept = if iommu { 0 } else { 4096 };
        let size = size + kept;
        ensure!(size.is_power_of_two() && dbase == base & !0xfff && pages * 4096 + kept == size.max(4096),
                "BAR 4 {base:#x}+{size:#x} as DEVMEM {dbase:#x}+{pages} pages");
        let bar4 = s.config_read(0x20).ctx("read BAR 4")?;
        ensure!(base == (bar4 & !0xf) as u64 + kept, "BAR 4 at {bar4:#x}, GET_BAR gave {base:#x}");
        ensure!(st(s.config_write(0x20, bar4 ^ 0x1000_0000)) == DENIED, "moving BAR 4");
        ensure!(s.config_read(0x20).ctx("read")? == bar4, "BAR 4 moved");
        // Sizing is answered from the size the server found, then written back.
        s.config_write(0x20, 0xffff_ffff).ctx("size BAR 4")?;
        let mask = s.config_read(0x20).ctx("read the size")?;
        let want = (!(size - 1) as u32 & !0xf) | (bar4 & 0xf);
        ensure!(mask == want, "BAR 4 sizes as {mask:#x}, want {want:#x}");
        s.config_write(0x20, bar4).ctx("write BAR 4 back")?;
        ensure!(s.config_read(0x20).ctx("read")? == bar4, "BAR 4 after sizing");
        // BAR 1 holds the MSI-X table: never given out (no interrupt
        // remapping yet); BAR 0 is unused; there is no BAR 6.
        ensure!(st(s.bar(1, bar)) == DENIED, "the MSI-X BAR: {}", st(s.bar(1, bar)));
        ensure!(st(s.bar(0, bar)) == NOT_FOUND, "BAR 0: {}", st(s.bar(0, bar)));
        ensure!(st(s.bar(6, bar)) == BAD_REQUEST, "BAR 6");
        // The header: vendor/device, class, header type are read-only; the
        // command register keeps all but memory, bus master, INTx disable.
        ensure!(st(s.config_write(0x00, 0)) == DENIED, "vendor ID");
        ensure!(st(s.config_write(0x08, 0)) == DENIED, "class");
        ensure!(st(s.config_write(0x30, 0)) == DENIED, "expansion ROM");
        ensure!(s.config_read(0).ctx("read")? == 0x1042_1af4, "vendor/device after the refused writes");
        let cmd = s.config_read(0x04).ctx("command")? & 0xffff;
        s.config_write(0x04, 0xffff).ctx("write command")?;
        let after = s.config_read(0x04).ctx("command")? & 0xffff;
        ensure!(after & !0x406 == cmd & !0x406 && after & 0x406 == 0x406, "command {cmd:#x} -> {after:#x}");
        s.config_write(0x04, cmd).ctx("restore command")?;
        // The MSI-X capability is read-only.
        let mut ptr = (s.config_read(0x34).ctx("capabilities")? & 0xfc) as u64;
        let mut msix = None;
        while ptr >= 0x40 {
            let w = s.config_read(ptr).ctx("capability")?;
            if w & 0xff == 0x11 {
                msix = Some(ptr);
            }
            ptr = ((w >> 8) & 0xfc) as u64;
        }
        let msix = msix.ok_or("virtio-blk shows no MSI-X capability")?;
        let w = s.config_read(msix).ctx("MSI-X")?;
        ensure!(st(s.config_write(msix, w | 1 << 31)) == DENIED, "enabling MSI-X");
        ensure!(s.config_read(msix).ctx("MSI-X")? == w, "MSI-X control changed");
        ensure!(st(s.config_read(2)) == BAD_REQUEST && st(s.config_read(4096)) == BAD_REQUEST, "unaligned and beyond 4 KiB");
        let wide = Sender(sess).call(Tag::new(keep_pci::CONFIG_WRITE), [0x40, 1 << 32 | 1, 0, 0]);
        ensure!(wide.words[0] == BAD_REQUEST, "a value wider than 32 bits: {}", wide.words[0]);
        s.release().ctx("RELEASE")?;
        Ok(())
    })();
    for x in [sess, dom, bar] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, bar]);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

/// The PCI server's status for a result (OK for success).
fn st<T>(r: Result<T, keep_pci::Error>) -> u64 {
    match r {
        Ok(_) => keep_pci::OK,
        Err(keep_pci::Error::Status(s)) => s,
        Err(keep_pci::Error::Call(e)) => 1000 + e.0,
    }
}

fn status(r: Result<(), keep_blk::Error>) -> u64 {
    match r {
        Ok(()) => keep_blk::OK,
        Err(keep_blk::Error::Status(s)) => s,
        Err(keep_blk::Error::Call(e)) => 1000 + e.0,
    }
}

pub fn blk_clients(cx: &mut Cx) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let blk = start_blk(cx, &pci)?;
        let [a, b, x] = cx.slots::<3>()?;
        let r = blk_session(Admin(Sender(blk.cap)), a, b, x);
        for s in [a, b, x] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        cx.drop_slots(&[a, b, x]);
        let stopped = stop(cx, blk, |s| Admin(s).quit().ctx("blk QUIT"));
        r?;
        stopped
    })();
    let stopped = stop(cx, pci, quit_pci);
    r?;
    stopped
}

const A_FIRST: u64 = 512;
const A_SECTORS: u64 = 1024;
const B_FIRST: u64 = 1536;
const B_SECTORS: u64 = 512;

fn blk_session(admin: Admin, a: u64, b: u64, x: u64) -> TestResult {
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    ensure!(ca.info() == Ok((A_SECTORS, rights::READ | rights::WRITE)), "A's INFO {:?}", ca.info());
    ensure!(cb.info() == Ok((B_SECTORS, rights::READ)), "B's INFO {:?}", cb.info());
    // A writes 64 sectors in requests of 1 to 8, checksummed, across its range.
    let mut sums = Vec::new();
    let mut at = 0u64;
    let mut n = 1u64;
    while at + n <= A_SECTORS && sums.len() < 24 {
        let data: Vec<u8> = (0..n as usize * SECTOR).map(|i| ((i as u64 * 31 + at * 7 + n) % 251) as u8).collect();
        ca.write(at, &data).ctx(&format!("A writes {n} at {at}"))?;
        sums.push((at, n, checksum(&data)));
        at += n * 5 + 3;
        n = n % MAX_SECTORS + 1;
    }
    ca.flush().ctx("FLUSH")?;
    for &(at, n, sum) in &sums {
        let mut back = vec![0u8; n as usize * SECTOR];
        ca.read(at, &mut back).ctx(&format!("A reads {n} at {at}"))?;
        ensure!(checksum(&back) == sum, "A's sectors {at}+{n}: checksum {:#x}, wrote {sum:#x}", checksum(&back));
    }
    // B reads its own range: the disk image's pattern, untouched by A.
    let mut buf = vec![0u8; 8 * SECTOR];
    for at in [0, B_SECTORS - 8] {
        cb.read(at, &mut buf).ctx(&format!("B reads 8 at {at}"))?;
        for (i, w) in buf.chunks(8).enumerate() {
            let (s, k) = (B_FIRST + at + i as u64 / 64, i as u64 % 64);
            let got = u64::from_le_bytes(w.try_into().unwrap());
            ensure!(got == disk_pattern(s, k), "B's sector {s} word {k}: {got:#x}");
        }
    }
    // Every refusal, and nothing read or written by it.
    let (_, refused_before, _) = admin.stats().ctx("STATS")?;
    use keep_blk::{BAD_REQUEST, NO_RIGHTS, OUT_OF_RANGE};
    let one = vec![0x77u8; SECTOR];
    let mut sink = vec![0u8; SECTOR];
    let cases: [(&str, u64, u64); 12] = [
        ("B writes (READ only)", status(cb.write(0, &one)), NO_RIGHTS),
        ("A reads past its end", status(ca.read(A_SECTORS, &mut sink)), OUT_OF_RANGE),
        ("A reads across its end", status(ca.read(A_SECTORS - 4, &mut vec![0u8; 8 * SECTOR])), OUT_OF_RANGE),
        ("A writes past its end (B's first sector)", status(ca.write(A_SECTORS, &one)), OUT_OF_RANGE),
        ("B reads past its end", status(cb.read(B_SECTORS, &mut sink)), OUT_OF_RANGE),
        ("a sector near 2^64", status(ca.read(u64::MAX, &mut sink)), OUT_OF_RANGE),
        ("0 sectors", status(ca.read(0, &mut [])), BAD_REQUEST),
        ("9 sectors", status(ca.read(0, &mut vec![0u8; 9 * SECTOR])), BAD_REQUEST),
        ("a string shorter than the count", {
            keep_rt::ipc_buffer().set_string(&one);
            Sender(a).call(Tag::new(keep_blk::WRITE).with_string(), [0, 2, 0, 0]).words[0]
        }, BAD_REQUEST),
        ("a WRITE without a string", Sender(a).call(Tag::new(keep_blk::WRITE), [0, 1, 0, 0]).words[0], BAD_REQUEST),
        ("an unknown request", Sender(a).call(Tag::new(99), [0; 4]).words[0], BAD_REQUEST),
        ("a client beyond the disk", status(admin.add_client(1 << 40, 8, rights::READ, x).map(drop)), BAD_REQUEST),
    ];
    for (what, got, want) in cases {
        ensure!(got == want, "{what}: status {got}, want {want}");
    }
    ensure!(
        status(admin.add_client(0, 8, rights::EXEC, x).map(drop)) == BAD_REQUEST,
        "a client with EXEC"
    );
    let (_, refused_after, faults) = admin.stats().ctx("STATS")?;
    ensure!(refused_after - refused_before == 13, "{} refusals counted, 13 made", refused_after - refused_before);
    ensure!(faults == 0, "{faults} DMA faults");
    // A's data and B's range are as they were.
    let (at, n, sum) = sums[0];
    let mut back = vec![0u8; n as usize * SECTOR];
    ca.read(at, &mut back).ctx("A reads again")?;
    ensure!(checksum(&back) == sum, "A's first sectors changed by the refused requests");
    cb.read(0, &mut sink).ctx("B reads again")?;
    ensure!(u64::from_le_bytes(sink[..8].try_into().unwrap()) == disk_pattern(B_FIRST, 0), "B's first sector changed");
    Ok(())
}

/// Starts blkcheck (user/tests/blkcheck) with a client capability.
fn start_check(cx: &mut Cx, client: u64, mode: u64, arg: u64) -> Result<Child, String> {
    start_check_ds(cx, client, mode, arg, None)
}

/// The same, given the dataspace manager and the bank to pay with, `ds`,
/// too (mode 2).
fn start_check_ds(cx: &mut Cx, client: u64, mode: u64, arg: u64, ds: Option<(u64, u64)>) -> Result<Child, String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    let elf = img.find("blkcheck").ok_or("no 'blkcheck' in the boot image")?.data;
    let mut grants = vec![grant(slot::CONSOLE), Grant { src: client, dest: CHECK_CLIENT_SLOT, rights: 0 }];
    if let Some((d, bank)) = ds {
        grants.push(Grant { src: d, dest: DS_SLOT, rights: 0 });
        grants.push(Grant { src: bank, dest: keep_dataspace::BANK_SLOT, rights: 0 });
    }
    let spec = Spec { name: "blkcheck", elf, arg0: mode, arg1: arg, grants: &grants, blob: None };
    let child = Loader::new(&mut cx.slots).load(&spec).ctx("load blkcheck")?;
    child.process.start().ctx("START blkcheck")?;
    Ok(child)
}

/// blkcheck's slot for its client capability.
const CHECK_CLIENT_SLOT: u64 = 0xd;

pub fn blk_processes(cx: &mut Cx) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let blk = start_blk(cx, &pci)?;
        let cs = cx.slots::<4>()?;
        let r = (|| {
            let admin = Admin(Sender(blk.cap));
            // Two writers side by side, a reader of the image's pattern, and
            // (for ktest) a reader of both writers' ranges.
            admin.add_client(0, 256, rights::READ | rights::WRITE, cs[0]).ctx("ADD_CLIENT 1")?;
            admin.add_client(256, 256, rights::READ | rights::WRITE, cs[1]).ctx("ADD_CLIENT 2")?;
            admin.add_client(4096, 256, rights::READ, cs[2]).ctx("ADD_CLIENT 3")?;
            admin.add_client(0, 512, rights::READ, cs[3]).ctx("ADD_CLIENT 4")?;
            let runs = [(cs[0], 0, 11), (cs[1], 0, 22), (cs[2], 1, 4096)];
            let mut children = Vec::new();
            for &(c, mode, arg) in &runs {
                children.push(start_check(cx, c, mode, arg)?);
            }
            let mut codes = Vec::new();
            for child in children {
                let st = child.process.wait().ctx("WAIT blkcheck");
                let _ = Loader::new(&mut cx.slots).destroy(child);
                let st = st?;
                codes.push(if st.state == state::EXITED { st.code } else { 1000 + st.state });
            }
            ensure!(codes == [0, 0, 0], "blkcheck exit codes {codes:?} (writer, writer, reader)");
            // Each writer's data is in its own range only.
            let all = Client(Sender(cs[3]));
            let mut buf = vec![0u8; 8 * SECTOR];
            for (first, seed) in [(0u64, 11u64), (256, 22)] {
                for at in [first, first + 248] {
                    all.read(at, &mut buf).ctx("read back")?;
                    let want: Vec<u8> = (0..8 * SECTOR as u64)
                        .map(|i| ((i ^ (at - first).wrapping_mul(0x9e37)).wrapping_add(seed) % 253) as u8)
                        .collect();
                    ensure!(checksum(&buf) == checksum(&want), "sectors {at}-{}: not writer {seed}'s data", at + 7);
                }
            }
            Ok(())
        })();
        for s in cs {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        cx.drop_slots(&cs);
        let stopped = stop(cx, blk, |s| Admin(s).quit().ctx("blk QUIT"));
        r?;
        stopped
    })();
    let stopped = stop(cx, pci, quit_pci);
    r?;
    stopped
}

/// Device addresses and virtual addresses for the driver in PCI0003.
const IRQ_DMA_VA: u64 = 0x0000_5c00_0000_0000;
const IRQ_MMIO_VA: u64 = 0x0000_5c80_0000_0000;
const IRQ_IOVA: u64 = 0x20_0000_0000;

pub fn pci_irq(cx: &mut Cx) -> TestResult {
    if !remapping(cx)? {
        println!("ktest: PCI0003: no IOMMU on this machine: no device I/O (not run)");
        return Ok(());
    }
    let srv = start(cx, "pci", &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::DEVMEM),
                                 grant(slot::TIMER), grant(slot::INTERRUPT)])?;
    let [sess, dom, bar, irq, me] = cx.slots::<5>()?;
    let mut pool = Vec::new();
    for _ in 0..32 {
        pool.push(cx.slot()?);
    }
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        let sid = pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        let line = s.irq(irq).ctx("GET_IRQ")?;
        ensure!((16..24).contains(&line), "INTx line {line}");
        ensure!(keep_abi::Interrupt(irq).info() == Ok((line, 1)), "the INTERRUPT capability covers {:?}", keep_abi::Interrupt(irq).info());
        let (base, size) = s.bar(4, bar).ctx("GET_BAR 4")?;
        keep_abi::SELF_PROCESS.mint(me, 0x1e1, rights::WRITE).ctx("MINT")?;
        keep_abi::Interrupt(irq).bind(line, me).ctx("BIND")?;
        let r = (|| {
            hal::init(DmaConfig {
                frames: keep_frames::Source::Pool(keep_abi::MEMORY),
                aspace: SELF_ASPACE,
                domain: DmaDomain(dom),
                bars: vec![(bar, base & !0xfff, ((base & 0xfff) + size).div_ceil(4096))],
                va_base: IRQ_DMA_VA,
                iova_base: IRQ_IOVA,
                mmio_va: IRQ_MMIO_VA,
                slots: core::mem::take(&mut pool),
            })
            .ctx("hal init")?;
            let sid = Sid(sid as u16);
            let mut root = PciRoot::new(RemoteConfig { sid, session: s });
            let df = sid.device_function();
            root.set_command(df, Command::MEMORY_SPACE | Command::BUS_MASTER);
            let t = PciTransport::new::<KeepHal, _>(&mut root, df).map_err(|e| format!("transport: {e:?}"))?;
            let mut blk = VirtIOBlk::<KeepHal, _>::new(PlatformTransport::new(t)).map_err(|e| format!("VirtIOBlk: {e:?}"))?;
            blk.enable_interrupts();
            let r = (|| {
                let mut req = BlkReq::default();
                let mut resp = BlkResp::default();
                let mut buf = vec![0u8; SECTOR];
                // SAFETY: the buffers stay until the request completes below.
                let token = unsafe { blk.read_blocks_nb(5, &mut req, &mut buf, &mut resp) }
                    .map_err(|e| format!("submit: {e:?}"))?;
                // The completion interrupt: INTx, the I/O APIC, the IOMMU's
                // remapping entry for the line, an IRQ message.
                let m = recv(Tag::new(0), 3000);
                m.result().ctx("RECV the interrupt")?;
                ensure!(m.tag.label() == keep_abi::label::IRQ && m.words[0] == line && m.payload == 0x1e1,
                        "got label {:#x} words {:?}", m.tag.label(), m.words);
                blk.ack_interrupt();
                keep_abi::Interrupt(irq).ack(line).ctx("ACK")?;
                ensure!(blk.peek_used() == Some(token), "the request is not complete at its interrupt");
                // SAFETY: the same buffers as submitted.
                unsafe { blk.complete_read_blocks(token, &req, &mut buf, &mut resp) }
                    .map_err(|e| format!("complete: {e:?}"))?;
                let w0 = u64::from_le_bytes(buf[..8].try_into().unwrap());
                ensure!(w0 == disk_pattern(5, 0), "sector 5 word 0 is {w0:#x}");
                Ok(())
            })();
            drop(blk);
            pool = hal::finish();
            r
        })();
        let _ = keep_abi::Interrupt(irq).unbind(line);
        let _ = s.release();
        r
    })();
    for x in [sess, dom, bar, irq, me] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, bar, irq, me]);
    cx.drop_slots(&pool);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

/// Where BLK0003 maps its dataspaces.
const BLK_VA: u64 = 0x0000_5e00_0000_0000;
const BLK_VB: u64 = 0x0000_5e10_0000_0000;

pub(crate) fn dss<T>(r: keep_dataspace::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

pub fn blk_dataspaces(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, m, bank| {
        let s = cx.slots::<10>()?;
        let r = blk_ds_session(admin, m, bank, s);
        cx.drop_slots(&s);
        r
    })
}

fn blk_ds_session(admin: Admin, m: Manager, bank: u64, s: [u64; 10]) -> TestResult {
    let [a, b, d, ds_a, e, ro_b, rw_b, fake, big, spare] = s;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    // A's dataspace: 32 pages, mapped in ktest, shared read-write with the server.
    let own = Dataspace(Sender(d));
    dss(m.create(32, bank, d), "CREATE")?;
    dss(own.map(slot::SELF_ASPACE, BLK_VA, 0, 32, rights::READ | rights::WRITE), "MAP")?;
    let hs = dss(own.share(rights::READ | rights::WRITE, ds_a), "SHARE")?;
    // SAFETY: mapped read-write above, 128 KiB.
    let mem = unsafe { core::slice::from_raw_parts_mut(BLK_VA as *mut u8, 32 * 4096) };
    for (i, x) in mem[..65536].iter_mut().enumerate() {
        *x = ((i as u64 * 13 + i as u64 / 4096) % 251) as u8;
    }
    let sum = checksum(&mem[..65536]);
    let (buf, pages, r) = ca.attach(ds_a).ctx("ATTACH")?;
    ensure!(pages == 32 && r == rights::READ | rights::WRITE, "ATTACH gave {pages} pages, rights {r:#x}");
    // 64 KiB written from the dataspace, read back into its other half.
    ca.write_ds(buf, 0, 0, 128).ctx("WRITE_DS 64 KiB")?;
    ca.read_ds(buf, 65536, 0, 128).ctx("READ_DS 64 KiB")?;
    ensure!(checksum(&mem[65536..]) == sum, "64 KiB read back differ");
    // The same sectors through the message-string path.
    let mut one = vec![0u8; 8 * SECTOR];
    ca.read(9, &mut one).ctx("READ")?;
    ensure!(one[..] == mem[9 * SECTOR..17 * SECTOR], "READ disagrees with what WRITE_DS wrote");
    // Odd offsets and counts: 7 sectors from byte 1536 to sector 300.
    ca.write_ds(buf, 1536, 300, 7).ctx("WRITE_DS 7")?;
    mem[65536..].fill(0);
    ca.read_ds(buf, 65536 + 512, 300, 7).ctx("READ_DS 7")?;
    ensure!(mem[65536 + 512..65536 + 512 + 7 * SECTOR] == mem[1536..1536 + 7 * SECTOR], "7 sectors read back differ");
    ca.flush().ctx("FLUSH")?;
    // B (read-only client): a read-only share cannot be read into (the
    // device would write it); a read-write one can, and holds the image.
    let bown = Dataspace(Sender(e));
    dss(m.create(4, bank, e), "CREATE B's")?;
    dss(bown.map(slot::SELF_ASPACE, BLK_VB, 0, 4, rights::READ), "MAP B's")?;
    dss(bown.share(rights::READ, ro_b), "SHARE read-only")?;
    dss(bown.share(rights::READ | rights::WRITE, rw_b), "SHARE read-write")?;
    let (bro, _, r) = cb.attach(ro_b).ctx("B ATTACH read-only")?;
    ensure!(r == rights::READ, "B's read-only buffer has rights {r:#x}");
    let (brw, _, _) = cb.attach(rw_b).ctx("B ATTACH read-write")?;
    cb.read_ds(brw, 0, 0, 8).ctx("B READ_DS")?;
    for k in [0u64, 63, 64 * 7 + 5] {
        let got = u64::from_le_bytes(unsafe { *((BLK_VB + k * 8) as *const [u8; 8]) });
        ensure!(got == disk_pattern(B_FIRST + k / 64, k % 64), "B's sector {} word {}: {got:#x}", k / 64, k % 64);
    }
    // Every refusal, with its status; nothing read or written.
    let (_, refused_before, _) = admin.stats().ctx("STATS")?;
    use keep_blk::{BAD_BUFFER, BAD_REQUEST, NOT_DATASPACE, NO_RIGHTS, OUT_OF_RANGE};
    keep_abi::SELF_PROCESS.mint(fake, 1 << 63 | 1, rights::WRITE | rights::CALL).ctx("MINT a fake dataspace")?;
    dss(m.create(600, bank, big), "CREATE 600 pages")?;
    keep_abi::MEMORY.retype(keep_abi::ty::PAGE, spare).ctx("RETYPE")?;
    let mut cases: Vec<(&str, u64, u64)> = vec![
        ("B's read-only buffer read into", status(cb.read_ds(bro, 0, 0, 1)), NO_RIGHTS),
        ("B writes (read-only client)", status(cb.write_ds(brw, 0, 0, 1)), NO_RIGHTS),
        ("A names B's buffer", status(ca.read_ds(brw, 0, 0, 1)), BAD_BUFFER),
        ("B names A's buffer", status(cb.read_ds(buf, 0, 0, 1)), BAD_BUFFER),
        ("no such buffer", status(ca.read_ds(63, 0, 0, 1)), BAD_BUFFER),
        ("a buffer number near 2^64", status(ca.read_ds(u64::MAX, 0, 0, 1)), BAD_BUFFER),
        ("an offset not a multiple of 512", status(ca.read_ds(buf, 100, 0, 1)), BAD_BUFFER),
        ("past the buffer's end", status(ca.read_ds(buf, 32 * 4096 - 512, 0, 2)), BAD_BUFFER),
        ("an offset near 2^64", status(ca.write_ds(buf, u64::MAX - 511, 0, 1)), BAD_BUFFER),
        ("0 sectors", status(ca.read_ds(buf, 0, 0, 0)), BAD_REQUEST),
        ("257 sectors", status(ca.read_ds(buf, 0, 0, 257)), BAD_REQUEST),
        ("A past its range", status(ca.write_ds(buf, 0, A_SECTORS - 1, 2)), OUT_OF_RANGE),
        ("B past its range", status(cb.read_ds(brw, 0, B_SECTORS, 1)), OUT_OF_RANGE),
        ("ATTACH of nothing", Sender(a).call(Tag::new(keep_blk::ATTACH), [0; 4]).words[0], NOT_DATASPACE),
        ("ATTACH of a sender to another process", status(ca.attach(fake).map(drop)), NOT_DATASPACE),
        ("ATTACH of the manager's own capability", status(ca.attach(m.0.0).map(drop)), NOT_DATASPACE),
        ("ATTACH of a page", status(ca.attach(spare).map(drop)), NOT_DATASPACE),
        ("ATTACH of 600 pages", status(ca.attach(big).map(drop)), BAD_REQUEST),
        ("DETACH of B's buffer by A", status(ca.detach(brw)), BAD_BUFFER),
    ];
    let _ = &mut cases;
    for (what, got, want) in cases {
        ensure!(got == want, "{what}: status {got}, want {want}");
    }
    let (_, refused_after, faults) = admin.stats().ctx("STATS")?;
    ensure!(refused_after - refused_before == 19, "{} refusals counted, 19 made", refused_after - refused_before);
    ensure!(faults == 0, "{faults} DMA faults");
    ensure!(mem[..65536].iter().enumerate().all(|(i, &x)| x == ((i as u64 * 13 + i as u64 / 4096) % 251) as u8),
            "A's pages changed by the refused requests");
    // A revokes its share: the server's pages are unpinned, so its requests
    // are refused before they reach the device (no DMA fault), and A's
    // memory is untouched.
    let before = checksum(&mem[65536..]);
    let got = own.revoke(hs).map_err(|e| format!("REVOKE: {e}"))?;
    ensure!(got == (1, 1, 1), "REVOKE removed {got:?} (handles, mappings, pins)");
    ensure!(status(ca.read_ds(buf, 65536, 0, 8)) == BAD_BUFFER, "READ_DS into a revoked buffer");
    ensure!(checksum(&mem[65536..]) == before, "a revoked buffer was written");
    ca.detach(buf).ctx("DETACH the revoked buffer")?;
    ensure!(status(ca.detach(buf)) == BAD_BUFFER, "DETACH twice");
    let (_, _, faults) = admin.stats().ctx("STATS")?;
    ensure!(faults == 0, "{faults} DMA faults after the revocation");
    ensure!(admin.queue_stats().ctx("QUEUE_STATS")?.2 == 2, "buffers attached: {:?}", admin.queue_stats());
    cb.detach(bro).ctx("DETACH")?;
    cb.detach(brw).ctx("DETACH")?;
    for x in [d, e, big] {
        Dataspace(Sender(x)).destroy().map_err(|e| format!("DESTROY: {e}"))?;
    }
    keep_abi::MEMORY.reclaim(spare).ctx("RECLAIM")?;
    Ok(())
}

/// The expected contents of writer `seed`'s sector (blkcheck's data()).
fn check_data(seed: u64, sector8: u64) -> Vec<u8> {
    (0..8 * SECTOR as u64).map(|i| ((i ^ sector8.wrapping_mul(0x9e37)).wrapping_add(seed) % 253) as u8).collect()
}

pub fn blk_in_flight(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, m, bank| {
        let cs = cx.slots::<5>()?;
        let r = (|| {
            // Three writers through dataspaces, 64 KiB a request, side by
            // side, and a read-only reader of the image through strings.
            let ranges = [(2048u64, 1024u64, 31u64), (3072, 1024, 32), (4096, 1024, 33)];
            for (i, &(first, n, _)) in ranges.iter().enumerate() {
                admin.add_client(first, n, rights::READ | rights::WRITE, cs[i]).ctx("ADD_CLIENT")?;
            }
            admin.add_client(8192, 256, rights::READ, cs[3]).ctx("ADD_CLIENT reader")?;
            admin.add_client(2048, 3072, rights::READ, cs[4]).ctx("ADD_CLIENT checker")?;
            // Whether the writers' requests meet on the device depends on
            // how they are scheduled against its completions: up to four
            // rounds, until some did (one request slot never gets there).
            let mut rounds = 0;
            loop {
                rounds += 1;
                let mut children = Vec::new();
                for (i, &(_, _, seed)) in ranges.iter().enumerate() {
                    children.push(start_check_ds(cx, cs[i], 2, seed, Some((m.0.0, bank)))?);
                }
                children.push(start_check(cx, cs[3], 1, 8192)?);
                let mut codes = Vec::new();
                for child in children {
                    let st = child.process.wait().ctx("WAIT blkcheck");
                    let _ = Loader::new(&mut cx.slots).destroy(child);
                    let st = st?;
                    codes.push(if st.state == state::EXITED { st.code } else { 1000 + st.state });
                }
                ensure!(codes == [0, 0, 0, 0], "blkcheck exit codes {codes:?} (three dataspace writers, a reader)");
                let (most, _, _) = admin.queue_stats().ctx("QUEUE_STATS")?;
                if most >= 2 || rounds == 4 {
                    break;
                }
            }
            // Each writer's data, read by another client, lies in its range.
            let all = Client(Sender(cs[4]));
            let mut buf = vec![0u8; 8 * SECTOR];
            for &(first, n, seed) in &ranges {
                for at in [0, 504, n - 8] {
                    all.read(first - 2048 + at, &mut buf).ctx("read back")?;
                    ensure!(checksum(&buf) == checksum(&check_data(seed, at)), "sectors {}-{}: not writer {seed}'s data", first + at, first + at + 7);
                }
            }
            let (most, flushes, attached) = admin.queue_stats().ctx("QUEUE_STATS")?;
            ensure!(most >= 2, "at most {most} request(s) were on the device at once, in {rounds} rounds");
            ensure!(flushes == 3 * rounds && attached == 0, "{flushes} flushes in {rounds} rounds, {attached} buffers still attached");
            let (_, _, faults) = admin.stats().ctx("STATS")?;
            ensure!(faults == 0, "{faults} DMA faults");
            println!("ktest: BLK0004: {most} requests on the device at once at most ({rounds} round(s))");
            Ok(())
        })();
        cx.drop_slots(&cs);
        r
    })
}

/// The MSI-X capability's offset in a session's configuration space.
fn msix_cap(s: Session) -> Result<u64, String> {
    let mut ptr = (s.config_read(0x34).ctx("capabilities")? & 0xfc) as u64;
    while ptr >= 0x40 {
        let w = s.config_read(ptr).ctx("capability")?;
        if w & 0xff == 0x11 {
            return Ok(ptr);
        }
        ptr = ((w >> 8) & 0xfc) as u64;
    }
    Err("no MSI-X capability".into())
}

/// virtio-blk's completions as MSI-X messages: the PCI server routes table
/// entry 0 through an MSI line (GET_MSI), the driver binds it and points
/// the queue at the entry; three reads, three IRQ messages for that line,
/// each read's sector holding the image's pattern.  With the IOMMU the
/// message is in remappable format (the kernel's remapping entry, usable by
/// 00:02.0 alone); without, the driver submits through the PCI server's
/// mediator, which hands the device physical addresses, and the device
/// sends a compatibility-format message with the kernel's vector.  GET_MSI's
/// refusals; RELEASE unroutes the line (the driver's binding goes) and
/// turns MSI-X off.
pub fn pci_msi(cx: &mut Cx) -> TestResult {
    let remap = remapping(cx)?;
    let srv = start_pci(cx)?;
    let [sess, dom, bar, irq, irq2, me] = cx.slots::<6>()?;
    let mut pool = Vec::new();
    for _ in 0..32 {
        pool.push(cx.slot()?);
    }
    let all = [sess, dom, bar, irq, irq2, me];
    let r = (|| {
        let pci = Pci(Sender(srv.cap));
        let sid = pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        let cap = msix_cap(s)?;
        let entries = ((s.config_read(cap).ctx("MSI-X control")? >> 16) & 0x7ff) as u64 + 1;
        let st = |r: Result<(u64, u64, u64), keep_pci::Error>| match r {
            Err(keep_pci::Error::Status(x)) => x,
            Ok(_) => keep_pci::OK,
            Err(_) => u64::MAX,
        };
        ensure!(st(s.msi(entries, irq2)) == keep_pci::BAD_REQUEST, "GET_MSI of entry {entries}, beyond the table");
        let (base, size) = s.bar(4, bar).ctx("GET_BAR 4")?;
        let r = (|| {
            hal::init(DmaConfig {
                frames: keep_frames::Source::Pool(keep_abi::MEMORY),
                aspace: SELF_ASPACE,
                domain: DmaDomain(dom),
                bars: vec![(bar, base & !0xfff, ((base & 0xfff) + size).div_ceil(4096))],
                va_base: IRQ_DMA_VA,
                iova_base: IRQ_IOVA,
                mmio_va: IRQ_MMIO_VA,
                slots: core::mem::take(&mut pool),
            })
            .ctx("hal init")?;
            let sid = Sid(sid as u16);
            let mut root = PciRoot::new(RemoteConfig { sid, session: s });
            let df = sid.device_function();
            root.set_command(df, Command::MEMORY_SPACE | Command::BUS_MASTER);
            // Without an IOMMU the PCI server's mediator has the rings.
            let t = if remap {
                VirtioTransport::Pci(PciTransport::new::<KeepHal, _>(&mut root, df).map_err(|e| format!("transport: {e:?}"))?)
            } else {
                VirtioTransport::Mediated(MediatedTransport::new(s, BLK).map_err(|e| format!("mediated transport: {e}"))?)
            };
            let mut blk = VirtIOBlk::<KeepHal, _>::new(PlatformTransport::new(t)).map_err(|e| format!("VirtIOBlk: {e:?}"))?;
            blk.enable_interrupts();
            let r = (|| {
                let line = keep_virtio::msix::route_queues(s, 0, 1, irq, me, 0x5e1)?;
                ensure!((keep_abi::layout::IRQ_LINES..keep_abi::layout::IRQ_LINES + keep_abi::layout::MSI_LINES).contains(&line),
                        "MSI line {line}");
                ensure!(keep_abi::Interrupt(irq).info() == Ok((line, 1)), "the INTERRUPT capability covers {:?}", keep_abi::Interrupt(irq).info());
                ensure!(s.config_read(cap).ctx("MSI-X control")? >> 31 == 1, "MSI-X is not on");
                ensure!(st(s.msi(0, irq2)) == keep_pci::IN_USE, "GET_MSI of entry 0 twice");
                for (i, sector) in [5u64, 700, 31].into_iter().enumerate() {
                    let mut req = BlkReq::default();
                    let mut resp = BlkResp::default();
                    let mut buf = vec![0u8; SECTOR];
                    // SAFETY: the buffers stay until the request completes below.
                    let token = unsafe { blk.read_blocks_nb(sector as usize, &mut req, &mut buf, &mut resp) }
                        .map_err(|e| format!("submit: {e:?}"))?;
                    keep_virtio::mediated::kick();
                    let m = recv(Tag::new(0), 3000);
                    m.result().ctx(&format!("RECV the MSI of read {i}"))?;
                    ensure!(m.tag.label() == keep_abi::label::IRQ && m.words[0] == line && m.payload == 0x5e1,
                            "read {i}: got label {:#x} words {:?} payload {:#x}", m.tag.label(), m.words, m.payload);
                    ensure!(blk.peek_used() == Some(token), "read {i} is not complete at its interrupt");
                    // SAFETY: the same buffers as submitted.
                    unsafe { blk.complete_read_blocks(token, &req, &mut buf, &mut resp) }
                        .map_err(|e| format!("complete: {e:?}"))?;
                    let w0 = u64::from_le_bytes(buf[..8].try_into().unwrap());
                    ensure!(w0 == disk_pattern(sector, 0), "sector {sector} word 0 is {w0:#x}");
                    keep_abi::Interrupt(irq).ack(line).ctx("ACK")?;
                }
                // Nothing else arrives: the device sent one message per completion.
                let m = recv(Tag::new(0), 50);
                ensure!(m.err == keep_abi::err::TIMEOUT, "a stray message: err {} label {:#x}", m.err, m.tag.label());
                Ok(())
            })();
            drop(blk);
            pool = hal::finish();
            r
        })();
        s.release().ctx("RELEASE")?;
        r?;
        // The server unrouted the line and destroyed the driver's capability
        // to it (PCI0005 shows the binding went too).
        ensure!(keep_abi::Interrupt(irq).info() == Err(keep_abi::Error::STALE), "the MSI capability after RELEASE");
        // Opened again: MSI-X is off until a driver asks.
        SELF_ASPACE.delete_cap(sess).ctx("DELETE")?;
        SELF_ASPACE.delete_cap(dom).ctx("DELETE")?;
        pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN again")?;
        let on = s.config_read(cap).ctx("MSI-X control")? >> 31;
        s.release().ctx("RELEASE again")?;
        ensure!(on == 0, "MSI-X still on after RELEASE");
        Ok(())
    })();
    for x in all {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&all);
    cx.drop_slots(&pool);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

/// RELEASE takes the device back from a driver that is still running
/// (docs/pci.md, "Taking a device back"): the BAR it mapped is
/// unmapped, the line it bound is unbound, and what it was given is STALE.
pub fn pci_take_back(cx: &mut Cx) -> TestResult {
    const VA: u64 = 0x0000_5e10_0000_0000;
    let srv = start_pci(cx)?;
    let [sess, dom, bar, irq, msi, me] = cx.slots::<6>()?;
    let r: TestResult = (|| {
        let pci = Pci(Sender(srv.cap));
        pci.open(VIRTIO, BLK, 0, sess, dom).ctx("OPEN")?;
        let s = Session(Sender(sess));
        s.bar(4, bar).ctx("GET_BAR 4")?;
        crate::cspace::expect_type(bar, keep_abi::ty::WRAPPER)?;
        SELF_ASPACE.map_device(bar, 0, VA, keep_abi::rights::READ).ctx("MAP BAR 4")?;
        // SAFETY: page 0 of BAR 4 is mapped readable at VA (virtio's common
        // configuration on QEMU: device_feature_select reads as written).
        let _ = unsafe { core::ptr::read_volatile(VA as *const u32) };
        let line = s.irq(irq).ctx("GET_IRQ")?;
        keep_abi::SELF_PROCESS.mint(me, 5, keep_abi::rights::WRITE).ctx("MINT")?;
        keep_abi::Interrupt(irq).bind(line, me).ctx("BIND the INTx line")?;
        let (mline, _, _) = s.msi(0, msi).ctx("GET_MSI 0")?;
        keep_abi::Interrupt(msi).bind(mline, me).ctx("BIND the MSI line")?;
        s.release().ctx("RELEASE")?;
        crate::expect_err(SELF_ASPACE.lookup(VA), keep_abi::Error::NOT_MAPPED, "BAR 4 after RELEASE")?;
        crate::expect_err(DevMem(bar).info(), keep_abi::Error::STALE, "the BAR capability after RELEASE")?;
        crate::expect_err(keep_abi::Interrupt(irq).ack(line), keep_abi::Error::STALE, "the INTx capability after RELEASE")?;
        crate::expect_err(keep_abi::Interrupt(msi).ack(mline), keep_abi::Error::STALE, "the MSI capability after RELEASE")?;
        // The lines are free again: bound by the kernel's own capability.
        for l in [line, mline] {
            crate::expect_err(keep_abi::INTERRUPT.ack(l), keep_abi::Error::BAD_STATE, &alloc::format!("line {l} still bound"))?;
        }
        Ok(())
    })();
    for x in [sess, dom, bar, irq, msi, me] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&[sess, dom, bar, irq, msi, me]);
    let stopped = stop(cx, srv, quit_pci);
    r?;
    stopped
}

/// BLK0007: a client that attaches buffer after buffer (its own
/// dataspaces, and one share twice) holds at most its part of the
/// server's buffer table (keep_blk::limits::PER_CLIENT): past it ATTACH is
/// NO_RESOURCES, another client still attaches and is served, and once the
/// first client's dataspaces are gone every buffer it held is free again.
pub fn blk_buffers_per_client(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, m, bank| {
        let s = cx.slots::<6>()?;
        let mut owned = Vec::new();
        let r = blk_buffers_session(cx, admin, m, bank, s, &mut owned);
        for d in owned {
            let _ = Dataspace(Sender(d)).destroy();
            let _ = SELF_ASPACE.delete_cap(d);
            cx.drop_slots(&[d]);
        }
        for &x in &s {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        cx.drop_slots(&s);
        r
    })
}

fn blk_buffers_session(cx: &mut Cx, admin: Admin, m: Manager, bank: u64, s: [u64; 6], owned: &mut Vec<u64>) -> TestResult {
    use keep_blk::limits::{PER_CLIENT, TABLE};
    let [a, b, share, b_own, b_share, again] = s;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    let before = admin.queue_stats().ctx("QUEUE_STATS")?.2;
    // A, hostile: a dataspace of its own for every ATTACH, as many as the
    // server takes (at most the whole table), and its first share again.
    let mut taken = Vec::new();
    let mut refusal = None;
    for i in 0..TABLE + 1 {
        let d = cx.slot()?;
        owned.push(d);
        dss(m.create(1, bank, d), "A's CREATE")?;
        dss(Dataspace(Sender(d)).share(rights::READ | rights::WRITE, share), "A's SHARE")?;
        let r = ca.attach(share);
        let _ = SELF_ASPACE.delete_cap(share);
        match r {
            Ok((buf, _, _)) => taken.push(buf),
            Err(e) => {
                refusal = Some((i, e));
                break;
            }
        }
    }
    // B, honest: attaches and is served while A holds all it could get.
    let bown = Dataspace(Sender(b_own));
    dss(m.create(4, bank, b_own), "B's CREATE")?;
    dss(bown.share(rights::READ | rights::WRITE, b_share), "B's SHARE")?;
    let (bbuf, _, _) = cb.attach(b_share).map_err(|e| format!("B's ATTACH while A holds {} buffers: {e}", taken.len()))?;
    cb.read_ds(bbuf, 0, 0, 8).ctx("B's READ_DS")?;
    ensure!(taken.len() == PER_CLIENT, "A attached {} buffers, want {PER_CLIENT} ({refusal:?})", taken.len());
    ensure!(
        matches!(refusal, Some((_, keep_blk::Error::Status(keep_blk::NO_RESOURCES)))),
        "A's ATTACH past its limit: {refusal:?}, want NO_RESOURCES"
    );
    // The same share twice counts twice: still refused, after a DETACH taken.
    let first = Dataspace(Sender(owned[0]));
    dss(first.share(rights::READ | rights::WRITE, again), "A's SHARE again")?;
    ensure!(
        ca.attach(again) == Err(keep_blk::Error::Status(keep_blk::NO_RESOURCES)),
        "A's ATTACH of a share at its limit: not NO_RESOURCES"
    );
    ca.detach(taken[0]).ctx("A's DETACH")?;
    let (buf, _, _) = ca.attach(again).ctx("A's ATTACH after a DETACH")?;
    ensure!(
        ca.attach(again) == Err(keep_blk::Error::Status(keep_blk::NO_RESOURCES)),
        "A's ATTACH of the same share again at its limit: not NO_RESOURCES"
    );
    taken[0] = buf;
    let _ = SELF_ASPACE.delete_cap(again);
    let (info, _) = admin.client(0).ctx("CLIENT A")?;
    ensure!(info.buffers == PER_CLIENT as u64, "CLIENT says A has {} buffers", info.buffers);
    ensure!(admin.queue_stats().ctx("QUEUE_STATS")?.2 == before + PER_CLIENT as u64 + 1, "buffers attached with A's and B's");
    // A ends: its dataspaces go (as with its bank), and so does all it held.
    for d in owned.drain(..) {
        dss(Dataspace(Sender(d)).destroy(), "A's DESTROY")?;
        let _ = SELF_ASPACE.delete_cap(d);
        cx.drop_slots(&[d]);
    }
    let (info, _) = admin.client(0).ctx("CLIENT A after its end")?;
    ensure!(info.buffers == 0, "A's {} buffers outlived its dataspaces", info.buffers);
    cb.detach(bbuf).ctx("B's DETACH")?;
    dss(bown.destroy(), "B's DESTROY")?;
    ensure!(admin.queue_stats().ctx("QUEUE_STATS")?.2 == before, "buffers attached after both ended");
    // And A may attach again.
    let d = cx.slot()?;
    owned.push(d);
    dss(m.create(1, bank, d), "A's CREATE again")?;
    dss(Dataspace(Sender(d)).share(rights::READ | rights::WRITE, share), "A's SHARE again")?;
    let (buf, _, _) = ca.attach(share).ctx("A's ATTACH after its end")?;
    ca.detach(buf).ctx("A's last DETACH")?;
    Ok(())
}

/// PCI0006: a PCI server whose own account is as small as the
/// description's (256 frames), given the pool to fund sessions.  A driver
/// maps one page at every GiB of its domain (two table frames a MAP) until
/// the kernel refuses: it spends its session's budget
/// (keep_pci::budget::SESSION_FRAMES) and no more, and gets NO_MEMORY; a
/// second driver's session still maps pages at fresh GiBs; the server's own
/// account is untouched; and once both sessions are released the pool has
/// every frame back.
pub fn pci_session_budget(cx: &mut Cx) -> TestResult {
    use keep_pci::budget::SESSION_FRAMES;
    const GIB: u64 = 1 << 30;
    let acct = cx.slot()?;
    keep_abi::MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
    let r = (|| {
        keep_abi::MEMORY.donate(acct, 256).ctx("DONATE")?;
        let srv = start(cx, "pci", &[grant(slot::CONSOLE), Grant { src: acct, dest: slot::ACCOUNT, rights: 0 }, grant(slot::DEVMEM),
                                     grant(slot::TIMER), grant(slot::INTERRUPT), grant(slot::MEMORY)])?;
        let [sa, da, sb, db, page] = cx.slots::<5>()?;
        let r = (|| {
            let pci = Pci(Sender(srv.cap));
            let own0 = keep_abi::Account(acct).info().ctx("the server's account INFO")?;
            let pool0 = keep_abi::MEMORY.free().ctx("MEMORY.FREE")?;
            keep_abi::MEMORY.retype(keep_abi::ty::PAGE, page).ctx("RETYPE")?;
            // A, hostile: a page at every GiB until the kernel says no.
            pci.open(VIRTIO, BLK, 0, sa, da).ctx("A's OPEN")?;
            let dom_a = DmaDomain(da);
            let mut maps = 0;
            let refusal = loop {
                if maps == 500 {
                    break None;
                }
                match dom_a.map(page, (maps + 1) * GIB, rights::READ) {
                    Ok(()) => maps += 1,
                    Err(e) => break Some(e),
                }
            };
            // B, honest: its own session maps as it needs.
            pci.open(VIRTIO, NET, 0, sb, db).ctx("B's OPEN")?;
            let dom_b = DmaDomain(db);
            for i in 0..8 {
                dom_b.map(page, (i + 1) * GIB, rights::READ | rights::WRITE)
                    .map_err(|e| format!("B's MAP at {} GiB after A's {maps} maps ({refusal:?}): {e}", i + 1))?;
            }
            ensure!(refusal == Some(keep_abi::Error::NO_MEMORY), "A's MAP refused with {refusal:?} after {maps} maps, want NO_MEMORY");
            ensure!(maps <= SESSION_FRAMES / 2, "A mapped at {maps} GiBs: more than its budget of {SESSION_FRAMES} frames pays for");
            ensure!(maps >= SESSION_FRAMES / 4, "A mapped at only {maps} GiBs");
            let own = keep_abi::Account(acct).info().ctx("the server's account INFO")?;
            ensure!(own == own0, "the server's own account went from {own0:?} to {own:?}");
            // Both end: every frame of their budgets comes back.
            Session(Sender(sa)).release().ctx("A's RELEASE")?;
            Session(Sender(sb)).release().ctx("B's RELEASE")?;
            keep_abi::MEMORY.reclaim(page).ctx("RECLAIM the page (pinned nowhere now)")?;
            let pool = keep_abi::MEMORY.free().ctx("MEMORY.FREE")?;
            ensure!(pool == pool0, "the pool had {pool0} frames, {pool} after both sessions ended");
            // A's function opens afresh, with a whole budget.
            for x in [sa, da] {
                let _ = SELF_ASPACE.delete_cap(x);
            }
            pci.open(VIRTIO, BLK, 0, sa, da).ctx("A's OPEN again")?;
            Session(Sender(sa)).release().ctx("RELEASE")?;
            Ok(())
        })();
        for x in [sa, da, sb, db, page] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        cx.drop_slots(&[sa, da, sb, db, page]);
        let stopped = stop(cx, srv, quit_pci);
        r?;
        stopped
    })();
    let _ = keep_abi::Account(acct).destroy_all(slot::MEMORY);
    let _ = SELF_ASPACE.delete_cap(acct);
    cx.drop_slots(&[acct]);
    r
}

/// BLK0009: the block server's blocking requests (FLUSH: virtio-drivers
/// shares its header and status byte through the Hal's bounce pages) reuse
/// the bounce pages' addresses: FLUSH after FLUSH is answered OK and the
/// account paying for the server's page tables and its DMA domain's (the
/// test's own) keeps its free frames.  With a fresh address per page, every
/// 256 FLUSHes took a table more, until a mapping failed.
pub fn blk_flushes(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, _, _| {
        let a = cx.slot()?;
        let r = (|| {
            admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT")?;
            let flush = |i: u64| -> TestResult {
                // A server that stopped answering fails the test, not hangs it.
                let m = keep_abi::ipc(a, Tag::new(keep_blk::FLUSH).with_mode(keep_abi::tag::MODE_CALL), [0; 4], 20_000);
                ensure!(m.err == keep_abi::err::OK, "FLUSH {i}: no answer (error {})", m.err);
                ensure!(m.words[0] == keep_blk::OK, "FLUSH {i} answered status {}", m.words[0]);
                Ok(())
            };
            // The first ones make whatever tables the bounce pages need.
            for i in 0..8 {
                flush(i)?;
            }
            let (before, _) = keep_abi::ACCOUNT.info().ctx("ACCOUNT INFO")?;
            // 2 bounce pages each: more than 2 tables' worth of fresh addresses.
            for i in 8..FLUSHES {
                flush(i)?;
            }
            let (after, _) = keep_abi::ACCOUNT.info().ctx("ACCOUNT INFO")?;
            ensure!(after == before, "{} FLUSHes: the account's free frames went from {before} to {after}", FLUSHES - 8);
            Ok(())
        })();
        let _ = SELF_ASPACE.delete_cap(a);
        cx.drop_slots(&[a]);
        r
    })
}

const FLUSHES: u64 = 8 + 600;

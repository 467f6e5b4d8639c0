//! BLK0006: a client that takes its pages away under its own batch does
//! not stop the disk for the others (docs/devices.md, "When the device
//! stops").  A batch of 128 reads is on its way (4 entries on the device at
//! a time) when the client's dataspace share is revoked: with an IOMMU the
//! device faults on the next entry and stops until it is reset; without one
//! the mediator refuses that entry's chain, whose descriptors stay taken.
//! The server resets the device, the batch ends `BAD_BUFFER` with the
//! entries that did complete counted, another client's batch is served
//! across the reset and reads the right sectors, and later reads (the same
//! client's too, through a new share) are served.

use alloc::format;

use keep_abi::{Process, SELF_PROCESS, Sender, Tag, err, rights, slot, state};
use keep_blk::{Admin, BAD_BUFFER, Client, Entry, MAX_DS_SECTORS, OK, READ_DS_V, SECTOR};
use keep_dataspace::{Dataspace, Manager};
use keep_loader::thread;
use keep_rt::println;
use keep_virtio::disk_pattern;

use crate::drivers::{dss, with_blk_ds_process};
use crate::{Ctx, Cx, TestResult};

const VA: u64 = 0x0000_5e40_0000_0000;
const VB: u64 = 0x0000_5e50_0000_0000;
/// BLK0008's tries (a batch can end before the destruction comes, when the
/// host is busy and ktest is late to hold the server).
const DESTROY_TRIES: usize = 6;
/// Where BLK0008 looks at the frames of pages it makes.
const VC: u64 = 0x0000_5e60_0000_0000;
const A_FIRST: u64 = 512;
const A_SECTORS: u64 = 1024;
const B_FIRST: u64 = 1536;
const B_SECTORS: u64 = 512;
/// A's dataspace: 128 KiB, what each entry of the batch reads (a small
/// dataspace is revoked quickly).
const PAGES: u64 = 32;
/// Tries at making the revocation come while A's batch is on its way.
const TRIES: usize = 3;
/// Every process's priority unless set (the kernel's), and the server's
/// while the share is revoked.
const DEFAULT_PRIORITY: u64 = 10;
const HELD_PRIORITY: u64 = 5;
const ENTRIES: u64 = 128;
/// B's dataspace: one READ_DS of MAX_DS_SECTORS (128 KiB).
const B_PAGES: u64 = 32;
/// How long the batch may take to end once the share is revoked.
const PATIENCE_MS: u64 = 5000;
const CALL_FAILED: u64 = 1 << 31;

/// A client's batch, in a thread of its own (above ktest's priority, so
/// that the call is made when spawn returns): words 0 the client
/// capability, 1 its buffer; ENTRIES entries of MAX_DS_SECTORS, all the
/// same sectors 0.. into the buffer's first 128 KiB (long enough to be on
/// its way for a while; every entry writes the same bytes).  Exit code:
/// CALL_FAILED | the kernel's error, or status << 24 | entry << 12 | done
/// (entry 0xfff: the whole batch).
fn batch(a: &thread::Args) -> u64 {
    let buf = a.buf();
    for k in 0..ENTRIES {
        Entry { sector: 0, offset: 0, count: MAX_DS_SECTORS as u32 }.encode(&mut buf.string[k as usize * Entry::BYTES..]);
    }
    buf.send_len = ENTRIES * Entry::BYTES as u64;
    let m = Sender(a.words[0]).call(Tag::new(READ_DS_V).with_string(), [a.words[1], ENTRIES, 0, 0]);
    if m.err != err::OK {
        return CALL_FAILED | m.err;
    }
    (m.words[0] & 0x3f) << 24 | (m.words[1] & 0xfff) << 12 | (m.words[2] & 0xfff)
}

/// Waits up to PATIENCE_MS for thread `t` to end; its exit code.
fn wait(cx: &mut Cx, t: thread::Thread, what: &str) -> Result<u64, alloc::string::String> {
    let ended = crate::ended_within(t.process, PATIENCE_MS);
    t.kill(&mut cx.slots);
    let Some(st) = ended else {
        return Err(format!("{what} did not end {PATIENCE_MS} ms after the share was revoked: the device stopped"));
    };
    ensure!(st.state == state::EXITED, "{what}'s thread ended in state {}", st.state);
    ensure!(st.code & CALL_FAILED == 0, "{what}'s call failed: {}", keep_abi::Error(st.code & !CALL_FAILED));
    Ok(st.code)
}

pub fn blk_revoke_in_flight(cx: &mut Cx) -> TestResult {
    with_blk_ds_process(cx, |cx, admin, m, bank, servers| {
        let s = cx.slots::<8>()?;
        let r = session(cx, admin, m, bank, servers, s);
        cx.drop_slots(&s);
        r
    })
}

/// Does B's dataspace hold the image's `sectors` sectors from B's `sector`?
fn b_holds(sector: u64, sectors: u64) -> TestResult {
    // SAFETY: B's B_PAGES pages are mapped at VB.
    let got = unsafe { core::slice::from_raw_parts(VB as *const u64, sectors as usize * SECTOR / 8) };
    for (i, w) in got.iter().enumerate() {
        let want = disk_pattern(B_FIRST + sector + i as u64 / 64, i as u64 % 64);
        ensure!(*w == want, "B's sector {} word {}: {w:#x}, want {want:#x}", sector + i as u64 / 64, i % 64);
    }
    Ok(())
}

/// B reads 8 sectors at `sector` of its range into its dataspace: the
/// image's pattern?
fn b_reads(cb: Client, bbuf: u64, sector: u64) -> TestResult {
    // SAFETY: B's pages are mapped at VB.
    unsafe { core::ptr::write_bytes(VB as *mut u8, 0, 4096) };
    cb.read_ds(bbuf, 0, sector, 8).ctx("B's READ_DS")?;
    b_holds(sector, 8)
}

/// One try.  A's batch goes to the idle server, which accepts it (A's
/// pages still pinned) and starts its first entries while ktest yields;
/// then the server is held below ktest and the manager (it starts no
/// further entry) while A's share is revoked and B's batch is called, and
/// let go.  A's next entry meets the unpinned page: the device stops (a
/// DMA fault) or the mediator refuses it; the server resets the device and
/// serves B's batch after it.  (Answering an administrator's call first
/// does not show that a batch was accepted: while completions keep coming
/// the server receives its interrupts before any queued call.)  None: the
/// try did not set that up (the revocation came before A's batch was
/// accepted, or after it had ended); nothing was tested.
#[allow(clippy::too_many_arguments)]
fn attempt(cx: &mut Cx, ca: Client, cb: Client, bbuf: u64, own: Dataspace, ds_a: u64, [server, pci]: [Process; 2]) -> Result<Option<u64>, alloc::string::String> {
    let share = dss(own.share(rights::READ | rights::WRITE, ds_a), "SHARE")?;
    let (buf, _, _) = ca.attach(ds_a).ctx("ATTACH")?;
    // SAFETY: B's pages are mapped at VB.
    unsafe { core::ptr::write_bytes(VB as *mut u8, 0, (B_PAGES * 4096) as usize) };
    // Without an IOMMU each entry goes to the device through a call to the
    // PCI server's mediator: held, it takes none until the share is gone
    // (with an IOMMU it has no part in a request).
    let pci_held = pci.set_priority(HELD_PRIORITY).ctx("SET_PRIORITY of the PCI server");
    let ta = thread::spawn(&mut cx.slots, "blk-batch-a", 12, batch, &[ca.0.0, buf]);
    // ktest yields: the server, which has A's call, takes and accepts it
    // and starts its first entries (or waits for the mediator), and waits;
    // then ktest holds it.
    let yielded = SELF_PROCESS.yield_now().ctx("YIELD");
    let held = server.set_priority(HELD_PRIORITY).ctx("SET_PRIORITY");
    let revoked = own.revoke(share).map_err(|e| format!("REVOKE: {e}"));
    let tb = thread::spawn(&mut cx.slots, "blk-batch-b", 12, batch, &[cb.0.0, bbuf]);
    let _ = server.set_priority(DEFAULT_PRIORITY);
    let _ = pci.set_priority(DEFAULT_PRIORITY);
    pci_held?;
    yielded?;
    let a_code = match ta {
        Ok(ta) => wait(cx, ta, "A's batch"),
        Err(e) => Err(e),
    };
    let b_code = match tb {
        Ok(tb) => wait(cx, tb, "B's batch"),
        Err(e) => Err(e),
    };
    let _ = ca.detach(buf);
    held?;
    revoked?;
    let code = a_code?;
    let b_code = b_code?;
    ensure!(b_code >> 24 == OK && b_code & 0xfff == ENTRIES, "B's batch, served across the reset, ended with status {} (entry {}, {} done)",
            b_code >> 24, b_code >> 12 & 0xfff, b_code & 0xfff);
    b_holds(0, MAX_DS_SECTORS).map_err(|e| format!("B's batch, served across the reset: {e}"))?;
    let (status, entry, done) = (code >> 24, code >> 12 & 0xfff, code & 0xfff);
    if (status == OK && done == ENTRIES) || (status == BAD_BUFFER && entry == 0xfff) {
        println!("ktest: BLK0006: A's batch ended with status {status} (entry {entry:#x}, {done} done)");
        return Ok(None);
    }
    ensure!(status == BAD_BUFFER, "A's batch ended with status {status} (entry {entry}, {done} done), want BAD_BUFFER");
    ensure!(entry == done && done < ENTRIES, "the first entry of A's batch not done is {entry}, with {done} done");
    Ok(Some(done))
}

/// Clients A (read-write) and B (read-only) at slots `a` and `b`, and B's
/// dataspace at `eb` (mapped at VB, shared to `ds_b`, attached): (A, B, B's
/// dataspace, B's buffer), B's first read checked.
fn two_clients(admin: Admin, m: Manager, bank: u64, [a, b, eb, ds_b]: [u64; 4]) -> Result<(Client, Client, Dataspace, u64), alloc::string::String> {
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    let bown = Dataspace(Sender(eb));
    dss(m.create(B_PAGES, bank, eb), "CREATE B's")?;
    dss(bown.map(slot::SELF_ASPACE, VB, 0, B_PAGES, rights::READ | rights::WRITE), "MAP B's")?;
    dss(bown.share(rights::READ | rights::WRITE, ds_b), "SHARE B's")?;
    let (bbuf, _, _) = cb.attach(ds_b).ctx("B ATTACH")?;
    b_reads(cb, bbuf, 0).map_err(|e| format!("before: {e}"))?;
    Ok((ca, cb, bown, bbuf))
}

fn session(cx: &mut Cx, admin: Admin, m: Manager, bank: u64, servers: [Process; 2], s: [u64; 8]) -> TestResult {
    let [a, b, d, ds_a, eb, ds_b, _, _] = s;
    let own = Dataspace(Sender(d));
    dss(m.create(PAGES, bank, d), "CREATE")?;
    dss(own.map(slot::SELF_ASPACE, VA, 0, PAGES, rights::READ | rights::WRITE), "MAP")?;
    let (ca, cb, bown, bbuf) = two_clients(admin, m, bank, [a, b, eb, ds_b])?;
    let (_, _, faults0) = admin.stats().ctx("STATS")?;
    // The administrator's DEVICE_STATS through a client's capability.
    let w = Sender(a).call(Tag::new(keep_blk::DEVICE_STATS), [0; 4]).words[0];
    ensure!(w == keep_blk::BAD_REQUEST, "a client's DEVICE_STATS answered {w}, want BAD_REQUEST");

    let mut done = None;
    for _ in 0..TRIES {
        done = attempt(cx, ca, cb, bbuf, own, ds_a, servers)?;
        if done.is_some() {
            break;
        }
        println!("ktest: BLK0006: A's share was not revoked while its batch was on its way; again");
    }
    let Some(done) = done else {
        return Err(format!("in {TRIES} tries the revocation never came while A's batch was on its way"));
    };

    // The device serves again: B, and A through a new share.
    b_reads(cb, bbuf, 8).map_err(|e| format!("after the revocation: {e}"))?;
    b_reads(cb, bbuf, B_SECTORS - 8).map_err(|e| format!("after the revocation: {e}"))?;
    let (resets, restarted, refusals) = admin.device_stats().ctx("DEVICE_STATS")?;
    let (_, _, faults) = admin.stats().ctx("STATS")?;
    ensure!(resets >= 1, "the server says it reset the device {resets} times");
    ensure!(faults > faults0 || refusals >= 1, "neither a DMA fault ({faults}) nor a refusal ({refusals}) was counted");
    dss(own.share(rights::READ | rights::WRITE, ds_a), "SHARE again")?;
    let (buf2, _, _) = ca.attach(ds_a).ctx("ATTACH again")?;
    ca.read_ds_v(buf2, &[Entry { sector: A_SECTORS - MAX_DS_SECTORS, offset: 0, count: MAX_DS_SECTORS as u32 }])
        .map_err(|e| format!("A's batch through its new share: {e}"))?;
    // SAFETY: A's pages are mapped at VA.
    let w = unsafe { *(VA as *const u64) };
    ensure!(w == disk_pattern(A_FIRST + A_SECTORS - MAX_DS_SECTORS, 0), "A's read through its new share: {w:#x}");
    let _ = ca.detach(buf2);
    let _ = cb.detach(bbuf);
    let _ = own.destroy();
    let _ = bown.destroy();
    println!("ktest: BLK0006: A's batch ended BAD_BUFFER after {done} of {ENTRIES} entries, B's batch was served across the reset; {resets} reset, {restarted} requests started again, {faults} DMA faults, {refusals} refused submissions");
    Ok(())
}

/// BLK0008: without an IOMMU, a client destroying its dataspace under its
/// own batch: the frames of the requests on the device are held (the
/// mediator's DMA_DOMAIN.HOLD), not given to anyone, until the device is
/// done with them or reset; pages made meanwhile get other frames.
pub fn blk_destroy_in_flight(cx: &mut Cx) -> TestResult {
    if crate::drivers::remapping(cx)? {
        println!("ktest: BLK0008: the IOMMU confines DMA on this machine: an unmapped page is out of the device's reach (not run)");
        return Ok(());
    }
    with_blk_ds_process(cx, |cx, admin, m, bank, servers| {
        let s = cx.slots::<8>()?;
        let r = destroy_session(cx, admin, m, bank, servers, s);
        cx.drop_slots(&s);
        r
    })
}

fn held_frames() -> Result<u64, alloc::string::String> {
    keep_abi::KERNEL.info(keep_abi::info::HELD_FRAMES).ctx("INFO(HELD_FRAMES)")
}

/// One try: A's batch on its way, the server held below ktest, A's
/// dataspace destroyed, pages made.  None: the destruction did not come
/// while the batch was on its way.
#[allow(clippy::too_many_arguments)]
fn destroy_attempt(cx: &mut Cx, ca: Client, cb: Client, bbuf: u64, m: Manager, bank: u64, [d, ds_a]: [u64; 2], [server, _pci]: [Process; 2]) -> Result<Option<u64>, alloc::string::String> {
    let own = Dataspace(Sender(d));
    dss(m.create(PAGES, bank, d), "CREATE")?;
    dss(own.map(slot::SELF_ASPACE, VA, 0, PAGES, rights::READ | rights::WRITE), "MAP")?;
    let mut frames = alloc::vec::Vec::new();
    for p in 0..PAGES {
        frames.push(keep_abi::SELF_ASPACE.lookup(VA + p * 4096).ctx("LOOKUP")?.1);
    }
    dss(own.share(rights::READ | rights::WRITE, ds_a), "SHARE")?;
    let (buf, _, _) = ca.attach(ds_a).ctx("ATTACH")?;
    let held0 = held_frames()?;
    let ta = thread::spawn(&mut cx.slots, "blk-batch-a", 12, batch, &[ca.0.0, buf]);
    let yielded = SELF_PROCESS.yield_now().ctx("YIELD");
    let held = server.set_priority(HELD_PRIORITY).ctx("SET_PRIORITY");
    let destroyed = dss(own.destroy(), "DESTROY");
    let held1 = held_frames();
    // Pages made now come from the pool's most recently freed frames.
    let mut fresh = alloc::vec::Vec::new();
    let made = (|| {
        for _ in 0..PAGES {
            let s = cx.slot()?;
            fresh.push(s);
            keep_abi::MEMORY.retype(keep_abi::ty::PAGE, s).ctx("RETYPE")?;
        }
        Ok::<(), alloc::string::String>(())
    })();
    let mut reused = alloc::vec::Vec::new();
    for &s in &fresh {
        let sa = keep_abi::SELF_ASPACE;
        if sa.map(s, VC, rights::READ).is_ok() {
            if let Ok((_, frame)) = sa.lookup(VC) {
                if frames.contains(&frame) {
                    reused.push(frame);
                }
            }
            let _ = sa.unmap(VC);
        }
    }
    // Still held after the pages were made: no reset came meanwhile (while
    // ktest waited in DESTROY the server may have run, found A's next chain
    // unpinned and reset the device, which lets go of the holds rightly).
    let held_after = held_frames();
    let _ = server.set_priority(DEFAULT_PRIORITY);
    let a_code = match ta {
        Ok(ta) => wait(cx, ta, "A's batch"),
        Err(e) => Err(e),
    };
    for &s in &fresh {
        let _ = keep_abi::MEMORY.reclaim(s);
    }
    cx.drop_slots(&fresh);
    let _ = ca.detach(buf);
    yielded?;
    held?;
    destroyed?;
    made?;
    let held1 = held1?;
    let code = a_code?;
    let (status, entry, done) = (code >> 24, code >> 12 & 0xfff, code & 0xfff);
    if (status == OK && done == ENTRIES) || (status == BAD_BUFFER && entry == 0xfff) || done == 0 {
        println!("ktest: BLK0008: A's batch ended with status {status} (entry {entry:#x}, {done} done)");
        return Ok(None);
    }
    let held_after = held_after?;
    if held_after < PAGES {
        println!("ktest: BLK0008: the device was reset before the pages were made ({held_after} frames held, {} of A's given out after it)", reused.len());
        return Ok(None);
    }
    ensure!(reused.is_empty(), "{} of A's frames were given out again while its batch was on the device (frame {:#x})", reused.len(), reused[0]);
    // A's first chain let go of what an earlier try left held (the
    // mediator looks at the used ring at each submission): what is held
    // now is A's pages, under the chains its batch put on the device.
    ensure!(held1 >= PAGES, "{held1} frames held after DESTROY (before the batch {held0}), want all {PAGES} of A's");
    // B is served after the reset; the reset let go of every hold.
    b_reads(cb, bbuf, 16).map_err(|e| format!("after A's batch: {e}"))?;
    let held2 = held_frames()?;
    ensure!(held2 == 0, "{held2} frames still held after the device was reset");
    Ok(Some(done))
}

fn destroy_session(cx: &mut Cx, admin: Admin, m: Manager, bank: u64, servers: [Process; 2], s: [u64; 8]) -> TestResult {
    let [a, b, d, ds_a, eb, ds_b, _, _] = s;
    let (ca, cb, bown, bbuf) = two_clients(admin, m, bank, [a, b, eb, ds_b])?;
    let mut done = None;
    for _ in 0..DESTROY_TRIES {
        done = destroy_attempt(cx, ca, cb, bbuf, m, bank, [d, ds_a], servers)?;
        if done.is_some() {
            break;
        }
        println!("ktest: BLK0008: A's dataspace was not destroyed while its batch was on its way; again");
    }
    let Some(done) = done else {
        return Err(format!("in {DESTROY_TRIES} tries the destruction never came while A's batch was on its way"));
    };
    let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariants violated");
    let _ = cb.detach(bbuf);
    let _ = bown.destroy();
    println!("ktest: BLK0008: A's batch ended BAD_BUFFER after {done} of {ENTRIES} entries; none of its frames was given out while on the device");
    Ok(())
}

//! Dataspaces (docs/dataspaces.md): the dataspace manager started as the
//! description starts it (on a bank of its own, from a bank server ktest
//! starts), its every request and every refusal, checked against what the
//! kernel says is mapped (ASPACE.LOOKUP, DMA_DOMAIN.LOOKUP) and what the
//! banks that pay for the dataspaces say (INFO) and the pool.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Aspace, DmaDomain, Error, MEMORY, SELF_ASPACE, Sender, Tag, slot};
use keep_dataspace::{
    BAD_REQUEST, BANK, BANK_SLOT, Dataspace, GONE, KERNEL, MAX_PAGES, MAX_PIN, Manager, NO_MEMORY, NO_RIGHTS, NOT_A_BANK,
    NOT_FOUND, OUT_OF_RANGE, PAGE, READ, STALE, WRITE,
};
use keep_loader::Grant;
use keep_spacebank::{Bank, Server, rights as bank_rights, status as bank_status};

use crate::drivers::{Running, grant, start_with, stop};
use keep_loader::Loader;
use crate::{Ctx, Cx, TestResult};

/// Where the tests map dataspaces in ktest's own space and in the others.
const VA: u64 = 0x0000_5d00_0000_0000;
const VB: u64 = 0x0000_5d10_0000_0000;
const VC: u64 = 0x0000_5d20_0000_0000;
const VD: u64 = 0x0000_5d30_0000_0000;
const IOVA: u64 = 0x30_0000_0000;

/// The manager's own bank's limit (its slot pool's cappages) and that of
/// the bank the tests' dataspaces are paid from.
const OWN_LIMIT: u64 = 100;
const CLIENTS_LIMIT: u64 = 3000;

/// A running dataspace manager: on a bank of its own (slot 12, as a
/// constructor's instance has it) from a bank server ktest starts, whose
/// other sub-bank `clients` pays for the tests' dataspaces.
pub(crate) struct Ds {
    pub(crate) srv: Running,
    pub(crate) clients: Bank,
    own: Bank,
    banks: Server,
}

pub(crate) fn start_ds(cx: &mut Cx) -> Result<Ds, String> {
    let e = crate::bank::elf(cx, "spacebank")?;
    let banks = Server::spawn(&mut cx.slots, e, slot::MEMORY, crate::bank::PRIME).map_err(String::from)?;
    let mut made = Vec::new();
    let r = (|| {
        let [o, c] = cx.slots::<2>()?;
        made.extend([o, c]);
        let own = banks.prime.create_bank(OWN_LIMIT, o).ctx("CREATE_BANK the manager's")?;
        let clients = banks.prime.create_bank(CLIENTS_LIMIT, c).ctx("CREATE_BANK the clients'")?;
        let srv = start_with(cx, "dataspace", &[grant(slot::CONSOLE), Grant { src: o, dest: BANK_SLOT, rights: 0 }], 0)?;
        Ok((srv, clients, own))
    })();
    match r {
        Ok((srv, clients, own)) => Ok(Ds { srv, clients, own, banks }),
        Err(e) => {
            for &b in &made {
                let _ = Bank(b).destroy();
                let _ = SELF_ASPACE.delete_cap(b);
            }
            cx.drop_slots(&made);
            let _ = banks.stop(&mut cx.slots);
            Err(e)
        }
    }
}

/// QUITs the manager, destroys its banks (and everything they paid for)
/// and stops the bank server.
pub(crate) fn stop_ds(cx: &mut Cx, d: Ds) -> TestResult {
    let stopped = stop(cx, d.srv, |s| Manager(s).quit().map_err(|e| format!("dataspace QUIT: {e}")));
    for b in [d.clients, d.own] {
        let _ = b.destroy();
        let _ = SELF_ASPACE.delete_cap(b.0);
        cx.drop_slots(&[b.0]);
    }
    let banks = d.banks.stop(&mut cx.slots).map_err(String::from);
    stopped?;
    banks
}

/// The manager's status for a result (OK for success; 1000 + the kernel's
/// error when the call itself failed).
fn st<T>(r: keep_dataspace::Result<T>) -> u64 {
    match r {
        Ok(_) => keep_dataspace::OK,
        Err(keep_dataspace::Error::Status(s, _)) => s,
        Err(keep_dataspace::Error::Call(e)) => 1000 + e.0,
    }
}

fn ds(r: keep_dataspace::Result<u64>, what: &str) -> Result<u64, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Runs `f` with a fresh manager, the bank that pays for the test's
/// dataspaces (its slot) and `N` slots; stops the manager after.
fn with_ds<const N: usize>(cx: &mut Cx, f: impl FnOnce(&mut Cx, Manager, u64, [u64; N]) -> TestResult) -> TestResult {
    let d = start_ds(cx)?;
    let s = cx.slots::<N>()?;
    let r = f(cx, Manager(Sender(d.srv.cap)), d.clients.0, s);
    cx.drop_slots(&s);
    let stopped = stop_ds(cx, d);
    r?;
    stopped
}

fn frame(a: Aspace, va: u64) -> Result<(u64, u64), String> {
    a.lookup(va).map_err(|e| format!("LOOKUP {va:#x}: {e}"))
}

fn word(va: u64) -> u64 {
    // SAFETY: the callers map va readable first.
    unsafe { core::ptr::read_volatile(va as *const u64) }
}

fn set_word(va: u64, v: u64) {
    // SAFETY: the callers map va writable first.
    unsafe { core::ptr::write_volatile(va as *mut u64, v) }
}

/// A new address space from ktest's account at `slot`.
fn other_space(s: u64) -> Result<Aspace, String> {
    ACCOUNT.create_aspace(s).ctx("CREATE_ASPACE")?;
    Ok(Aspace(s))
}

pub fn map_share(cx: &mut Cx) -> TestResult {
    with_ds::<4>(cx, |_, m, b, [o, s, x, spare]| {
        let own = Dataspace(Sender(o));
        let h = ds(m.create(4, b, o), "CREATE")?;
        ensure!(own.info() == Ok((4, READ | WRITE, h)), "owner's INFO {:?}", own.info());
        let r = (|| {
            // Mapped read-write in ktest's space: fresh pages are zero; write them.
            let m1 = ds(own.map(slot::SELF_ASPACE, VA, 0, 4, READ | WRITE), "MAP read-write")?;
            for i in 0..4 {
                let (r, _) = frame(SELF_ASPACE, VA + i * PAGE)?;
                ensure!(r & WRITE != 0 && r & READ != 0, "page {i} mapped with rights {r:#x}");
                ensure!(word(VA + i * PAGE) == 0, "page {i} not zeroed");
                set_word(VA + i * PAGE + 8, 0x1234_0000 + i);
            }
            // A read-only share, mapped into another address space: the same
            // frames, read-only.
            let hs = ds(own.share(READ, s), "SHARE read-only")?;
            let sh = Dataspace(Sender(s));
            ensure!(sh.info() == Ok((4, READ, hs)), "share's INFO {:?}", sh.info());
            let xs = other_space(x)?;
            ds(sh.map(x, VB, 0, 4, READ), "MAP the share in another space")?;
            for i in 0..4 {
                let (r, f) = frame(xs, VB + i * PAGE)?;
                let (_, g) = frame(SELF_ASPACE, VA + i * PAGE)?;
                ensure!(r == READ && f == g, "share's page {i}: rights {r:#x}, frame {f:#x} (owner's {g:#x})");
            }
            ensure!(st(sh.map(x, VC, 0, 1, READ | WRITE)) == NO_RIGHTS, "a read-only share mapped writable");
            ensure!(st(sh.share(READ | WRITE, spare)) == NO_RIGHTS, "a read-only share shared writable");
            ensure!(st(sh.pin(x, 0, 1, IOVA, WRITE, &mut [0])) == NO_RIGHTS, "a read-only share pinned for device writes");
            // The share seen from ktest's space: the owner's data, and its
            // later writes.
            let m2 = ds(sh.map(slot::SELF_ASPACE, VC, 1, 2, READ), "MAP pages 1-2 read-only")?;
            ensure!(word(VC + 8) == 0x1234_0001 && word(VC + PAGE + 8) == 0x1234_0002, "the share shows other data");
            set_word(VA + PAGE + 16, 77);
            ensure!(word(VC + 16) == 77, "the owner's write does not show through the share");
            // UNMAP takes one mapping only; another handle cannot.
            ensure!(st(sh.unmap(m1)) == NOT_FOUND, "UNMAP of the owner's mapping through the share");
            own.unmap(m1).map_err(|e| format!("UNMAP: {e}"))?;
            ensure!(SELF_ASPACE.lookup(VA) == Err(Error::NOT_MAPPED), "the owner's mapping stayed");
            ensure!(word(VC + 8) == 0x1234_0001, "the share's mapping went with the owner's");
            ensure!(st(own.unmap(m1)) == NOT_FOUND, "UNMAP twice");
            sh.unmap(m2).map_err(|e| format!("UNMAP the share's: {e}"))?;
            ensure!(SELF_ASPACE.lookup(VC) == Err(Error::NOT_MAPPED), "the share's mapping stayed");
            let (spaces, handles, maps, pins) = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!((spaces, handles, maps, pins) == (1, 2, 1, 0), "STATS {:?}", (spaces, handles, maps, pins));
            own.destroy().map_err(|e| format!("DESTROY: {e}"))?;
            ensure!(xs.lookup(VB) == Err(Error::NOT_MAPPED), "DESTROY left the other space's mapping");
            ensure!(st(sh.info()) == STALE && st(own.info()) == STALE, "handles live after DESTROY");
            Ok(())
        })();
        let _ = ACCOUNT.destroy(x);
        r
    })
}

pub fn revoke(cx: &mut Cx) -> TestResult {
    with_ds::<7>(cx, |cx, m, b, [o, s, t, x, mine, o2, spare]| {
        let own = Dataspace(Sender(o));
        let ho = ds(m.create(2, b, o), "CREATE")?;
        let r = (|| {
            ds(own.map(slot::SELF_ASPACE, VA, 0, 2, READ | WRITE), "MAP")?;
            set_word(VA, 0xfeed);
            let hs = ds(own.share(READ | WRITE, s), "SHARE")?;
            let (sh, sub) = (Dataspace(Sender(s)), Dataspace(Sender(t)));
            let ht = ds(sh.share(READ, t), "SHARE of the share")?;
            let xs = other_space(x)?;
            ds(sh.map(x, VB, 0, 2, READ | WRITE), "MAP the share")?;
            ds(sub.map(slot::SELF_ASPACE, VD, 0, 2, READ), "MAP the sub-share")?;
            ensure!(word(VD) == 0xfeed, "the sub-share shows other data");
            // The other space replaces page 1 with a page of its own: the
            // revocation must leave that one alone.
            xs.unmap(VB + PAGE).ctx("UNMAP in the other space")?;
            MEMORY.retype(keep_abi::ty::PAGE, mine).ctx("RETYPE")?;
            xs.map(mine, VB + PAGE, READ).ctx("MAP its own page")?;
            let (_, own_frame) = frame(xs, VB + PAGE)?;
            // Nobody revokes upwards or sideways.
            ensure!(st(sub.revoke(hs)) == NOT_FOUND, "the sub-share revoking its parent");
            ensure!(st(sh.revoke(ho)) == NOT_FOUND, "the share revoking the owner");
            ensure!(st(sh.revoke(hs)) == NOT_FOUND, "a handle revoking itself");
            ensure!(st(own.revoke(ho)) == NOT_FOUND, "the owner revoking itself");
            ensure!(st(own.revoke(999_999)) == NOT_FOUND, "REVOKE of no handle");
            // Another dataspace's owner cannot revoke shares of this one.
            let other = Dataspace(Sender(o2));
            ds(m.create(1, b, o2), "CREATE another")?;
            ensure!(st(other.revoke(hs)) == NOT_FOUND, "another dataspace's owner revoking a share");
            other.destroy().map_err(|e| format!("DESTROY another: {e}"))?;
            // The owner takes the share back: both handles, both mappings.
            let got = own.revoke(hs).map_err(|e| format!("REVOKE: {e}"))?;
            ensure!(got == (2, 2, 0), "REVOKE removed (handles, mappings, pins) {got:?}, want (2, 2, 0)");
            ensure!(xs.lookup(VB) == Err(Error::NOT_MAPPED), "the share's mapping survived REVOKE");
            ensure!(SELF_ASPACE.lookup(VD) == Err(Error::NOT_MAPPED), "the sub-share's mapping survived REVOKE");
            ensure!(frame(xs, VB + PAGE)?.1 == own_frame, "REVOKE took a page the other space put there itself");
            for (what, h) in [("share", sh), ("sub-share", sub)] {
                ensure!(st(h.info()) == STALE, "the revoked {what}'s INFO");
                ensure!(st(h.map(slot::SELF_ASPACE, VD, 0, 1, READ)) == STALE, "the revoked {what} maps");
                ensure!(st(h.share(READ, spare)) == STALE, "the revoked {what} shares");
            }
            ensure!(SELF_ASPACE.lookup(VD) == Err(Error::NOT_MAPPED), "a stale handle mapped");
            ensure!(st(own.revoke(hs)) == NOT_FOUND, "REVOKE twice");
            // The owner keeps its mapping and its data.
            ensure!(word(VA) == 0xfeed, "the owner's data changed");
            let (spaces, handles, maps, _) = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!((spaces, handles, maps) == (1, 1, 1), "STATS after REVOKE {:?}", (spaces, handles, maps));
            // Shares made afterwards get new handles; old capabilities stay stale.
            SELF_ASPACE.delete_cap(t).ctx("DELETE")?;
            let hn = ds(own.share(READ, t), "SHARE again")?;
            ensure!(hn != ht && Dataspace(Sender(t)).info().is_ok(), "the new share: handle {hn}, INFO {:?}", Dataspace(Sender(t)).info());
            ensure!(st(sh.info()) == STALE, "an old capability names the new share");
            // DESTROY gives the frames back: a second create and destroy of
            // the same size leaves the pool where the first did.
            own.destroy().map_err(|e| format!("DESTROY: {e}"))?;
            ensure!(SELF_ASPACE.lookup(VA) == Err(Error::NOT_MAPPED), "DESTROY left the owner's mapping");
            SELF_ASPACE.delete_cap(o2).ctx("DELETE")?;
            let mut free = Vec::new();
            for _ in 0..2 {
                ds(m.create(64, b, o2), "CREATE 64")?;
                Dataspace(Sender(o2)).destroy().map_err(|e| format!("DESTROY 64: {e}"))?;
                let _ = SELF_ASPACE.delete_cap(o2);
                free.push(MEMORY.free().ctx("FREE")?);
            }
            ensure!(free[0] == free[1], "the pool after two create-destroy cycles: {free:?}");
            Ok(())
        })();
        let _ = ACCOUNT.destroy(x);
        let _ = MEMORY.reclaim(mine);
        let _ = cx;
        r
    })
}

pub fn pin(cx: &mut Cx) -> TestResult {
    with_ds::<4>(cx, |_, m, b, [o, r, d, d2]| {
        let own = Dataspace(Sender(o));
        ds(m.create(4, b, o), "CREATE")?;
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let dom = DmaDomain(d);
        let res = (|| {
            let remapping = dom.info().ctx("INFO")?.remapping;
            ds(own.map(slot::SELF_ASPACE, VA, 0, 4, READ | WRITE), "MAP")?;
            let mut addrs = [0u64; 4];
            let p = ds(own.pin(d, 0, 4, IOVA, READ | WRITE, &mut addrs), "PIN")?;
            for i in 0..4u64 {
                let (rr, f) = dom.lookup(IOVA + i * PAGE).ctx("domain LOOKUP")?;
                let (_, g) = frame(SELF_ASPACE, VA + i * PAGE)?;
                ensure!(rr == READ | WRITE && f == g, "pinned page {i}: rights {rr:#x}, frame {f:#x}, mapped {g:#x}");
                let want = if remapping { IOVA + i * PAGE } else { g * PAGE };
                ensure!(addrs[i as usize] == want, "page {i}'s device address {:#x}, want {want:#x}", addrs[i as usize]);
            }
            // A read-only share pins for device reads only.
            ds(own.share(READ, r), "SHARE read-only")?;
            let ro = Dataspace(Sender(r));
            ensure!(st(ro.pin(d, 0, 1, IOVA + 16 * PAGE, WRITE, &mut addrs)) == NO_RIGHTS, "device writes through a read-only share");
            let rp = ds(ro.pin(d, 1, 1, IOVA + 16 * PAGE, READ, &mut addrs), "PIN read-only")?;
            ensure!(dom.lookup(IOVA + 16 * PAGE).map(|x| x.0) == Ok(READ), "the read-only pin's rights");
            // A pin over a pinned device address changes nothing.
            let pages = dom.info().ctx("INFO")?.pages;
            ensure!(
                own.pin(d, 0, 2, IOVA - PAGE, READ, &mut addrs) == Err(keep_dataspace::Error::Status(KERNEL, Error::EXISTS.0)),
                "a pin over pinned addresses"
            );
            ensure!(dom.info().ctx("INFO")?.pages == pages, "the refused pin left pages in the domain");
            ensure!(dom.lookup(IOVA - PAGE) == Err(Error::NOT_MAPPED), "the refused pin left its first page");
            ensure!(st(own.pin(d, 0, MAX_PIN + 1, IOVA << 4, READ, &mut addrs)) == BAD_REQUEST, "a pin of MAX_PIN + 1 pages");
            ensure!(st(own.pin(d, 3, 2, IOVA << 4, READ, &mut addrs)) == OUT_OF_RANGE, "a pin past the end");
            ensure!(st(own.pin(d, 0, 1, IOVA + 1, READ, &mut addrs)) == BAD_REQUEST, "an unaligned device address");
            ensure!(st(own.pin(d, 0, 1, IOVA << 4, 0, &mut addrs)) == BAD_REQUEST, "a pin with no rights");
            ensure!(st(own.pin(slot::SELF_ASPACE, 0, 1, IOVA << 4, READ, &mut addrs)) == KERNEL, "a pin into an address space");
            // UNPIN: only the handle that pinned; then the device address is free.
            ensure!(st(ro.unpin(p)) == NOT_FOUND, "UNPIN of the owner's pin through the share");
            own.unpin(p).map_err(|e| format!("UNPIN: {e}"))?;
            ensure!(dom.lookup(IOVA) == Err(Error::NOT_MAPPED), "UNPIN left page 0 pinned");
            ensure!(st(own.unpin(p)) == NOT_FOUND, "UNPIN twice");
            ensure!(dom.info().ctx("INFO")?.pages == 1, "pages in the domain after UNPIN");
            // REVOKE of the share unpins what it pinned.
            let (_, rh, _) = ro.info().map_err(|e| format!("INFO: {e}"))?;
            ensure!(own.revoke(rh) == Ok((1, 0, 1)), "REVOKE of the pinning share");
            ensure!(dom.lookup(IOVA + 16 * PAGE) == Err(Error::NOT_MAPPED), "REVOKE left the share's pin");
            let _ = rp;
            // DESTROY unpins everything, in every domain.
            ACCOUNT.create_dma_domain(d2).ctx("CREATE_DMA_DOMAIN 2")?;
            ds(own.pin(d, 0, 4, IOVA, READ, &mut addrs), "PIN again")?;
            ds(own.pin(d2, 2, 2, IOVA, WRITE, &mut addrs), "PIN in a second domain")?;
            own.destroy().map_err(|e| format!("DESTROY: {e}"))?;
            ensure!(dom.info().ctx("INFO")?.pages == 0, "DESTROY left pages in the domain");
            ensure!(DmaDomain(d2).info().ctx("INFO")?.pages == 0, "DESTROY left pages in the second domain");
            Ok(())
        })();
        let _ = ACCOUNT.destroy(d);
        let _ = ACCOUNT.destroy(d2);
        res
    })
}

pub fn errors(cx: &mut Cx) -> TestResult {
    with_ds::<3>(cx, |_, m, b, [o, s, x]| {
        let own = Dataspace(Sender(o));
        ds(m.create(2, b, o), "CREATE")?;
        ds(own.map(slot::SELF_ASPACE, VA, 0, 2, READ | WRITE), "MAP")?;
        set_word(VA, 42);
        ds(own.share(READ, s), "SHARE")?;
        let sh = Dataspace(Sender(s));
        let before = m.stats().map_err(|e| format!("STATS: {e}"))?;
        let call = |cap: u64, label: u64, w: [u64; 4]| Sender(cap).call(Tag::new(label), w).words[0];
        let cases: Vec<(&str, u64, u64)> = vec![
            ("CREATE of 0 pages", st(m.create(0, b, x)), BAD_REQUEST),
            ("CREATE of MAX_PAGES + 1", st(m.create(MAX_PAGES + 1, b, x)), BAD_REQUEST),
            ("CREATE past the bank's limit", st(m.create(MAX_PAGES, b, x)), NO_MEMORY),
            ("an unknown request to the manager", call(m.0.0, 99, [0; 4]), BAD_REQUEST),
            ("a dataspace request to the manager", call(m.0.0, keep_dataspace::INFO, [0; 4]), BAD_REQUEST),
            ("a manager request through a dataspace", call(o, keep_dataspace::CREATE, [1, 0, 0, 0]), BAD_REQUEST),
            ("an unknown request", call(o, 99, [0; 4]), BAD_REQUEST),
            ("MAP of 0 pages", st(own.map(slot::SELF_ASPACE, VB, 0, 0, READ)), BAD_REQUEST),
            ("MAP past the end", st(own.map(slot::SELF_ASPACE, VB, 1, 2, READ)), OUT_OF_RANGE),
            ("MAP from a page near 2^64", st(own.map(slot::SELF_ASPACE, VB, u64::MAX, 2, READ)), OUT_OF_RANGE),
            ("MAP unaligned", st(own.map(slot::SELF_ASPACE, VB + 8, 0, 1, READ)), BAD_REQUEST),
            ("MAP write-only", st(own.map(slot::SELF_ASPACE, VB, 0, 1, WRITE)), BAD_REQUEST),
            ("MAP executable", st(own.map(slot::SELF_ASPACE, VB, 0, 1, READ | 4)), BAD_REQUEST),
            ("MAP without an address space", call(o, keep_dataspace::MAP, [VB, 0, 1, READ]), BAD_REQUEST),
            ("MAP into the manager's own sender", st(own.map(o, VB, 0, 1, READ)), KERNEL),
            ("MAP over a mapping (page 1 lands on VA)", st(own.map(slot::SELF_ASPACE, VA - PAGE, 0, 2, READ)), KERNEL),
            ("MAP into the kernel half", st(own.map(slot::SELF_ASPACE, 0xffff_8000_0000_0000, 0, 1, READ)), KERNEL),
            ("SHARE with no rights", st(sh.share(0, x)), BAD_REQUEST),
            ("SHARE with EXEC", st(own.share(READ | 4, x)), BAD_REQUEST),
            ("SHARE with more rights", st(sh.share(READ | WRITE, x)), NO_RIGHTS),
            ("DESTROY through a share", st(sh.destroy()), NO_RIGHTS),
            ("UNMAP of no mapping", st(own.unmap(12345)), NOT_FOUND),
            ("UNPIN of no pin", st(own.unpin(u64::MAX)), NOT_FOUND),
            ("PIN without a domain", call(o, keep_dataspace::PIN, [0, 1, IOVA, READ]), BAD_REQUEST),
        ];
        for (what, got, want) in cases {
            ensure!(got == want, "{what}: status {got}, want {want}");
        }
        // Nothing changed: the tables, the owner's mapping and data, and
        // nothing mapped where the refused requests pointed.
        let after = m.stats().map_err(|e| format!("STATS: {e}"))?;
        ensure!(after == before, "STATS {before:?} -> {after:?}");
        ensure!(word(VA) == 42 && frame(SELF_ASPACE, VA)?.0 == READ | WRITE, "the owner's mapping changed");
        ensure!(SELF_ASPACE.lookup(VA - PAGE) == Err(Error::NOT_MAPPED), "the refused MAP left its first page");
        ensure!(SELF_ASPACE.lookup(VB) == Err(Error::NOT_MAPPED), "a refused MAP mapped");
        own.destroy().map_err(|e| format!("DESTROY: {e}"))?;
        Ok(())
    })
}

/// The status and word 1 of a raw CREATE of `pages` with `caps` (0 or 1
/// capability at `bank`); the owner's capability would arrive at `dest`.
fn raw_create(m: Manager, pages: u64, bank: Option<u64>, dest: u64) -> (u64, u64) {
    let buf = keep_rt::ipc_buffer();
    let mut tag = Tag::new(keep_dataspace::CREATE).with_slots(buf.set_recv_slots(&[dest]));
    if let Some(b) = bank {
        tag = tag.with_caps(buf.set_send_caps(&[(b, 0)]));
    }
    let r = m.0.call(tag, [pages, 0, 0, 0]);
    if r.err != 0 { (1000 + r.err, 0) } else { (r.words[0], r.words[1]) }
}

/// (bank's used, manager's STATS, pool's free frames).
fn state(bank: Bank, m: Manager) -> Result<(u64, (u64, u64, u64, u64), u64), String> {
    let used = bank.info().ctx("bank INFO")?.used;
    Ok((used, m.stats().map_err(|e| format!("STATS: {e}"))?, MEMORY.free().ctx("MEMORY.FREE")?))
}

/// DS0005: CREATE is paid by the bank the client sends: the pages are
/// charged to it (runs: pages + 2 each) and go back at DESTROY; a bank at
/// its limit is NO_MEMORY, and a missing, foreign, rightless or destroyed
/// bank is refused, each changing nothing.
pub fn create_paid(cx: &mut Cx) -> TestResult {
    with_ds::<8>(cx, |cx, m, b, [sub, o, big, x, alloc_only, free_only, dead, sender]| {
        let e = crate::bank::elf(cx, "spacebank")?;
        let other = Server::spawn(&mut cx.slots, e, slot::MEMORY, 200).map_err(String::from)?;
        let r = (|| {
            let bank = Bank(b).create_bank(40, sub).ctx("CREATE_BANK")?;
            let (used0, stats0, pool0) = state(bank, m)?;
            ensure!(used0 == 0, "a new bank uses {used0}");
            // 30 pages: one run, charged 32 to the bank that sent, taken from the pool.
            ds(m.create(30, sub, o), "CREATE 30 paid by the sub-bank")?;
            let (used1, stats1, pool1) = state(bank, m)?;
            ensure!(used1 == 32 && pool1 == pool0 - 32, "CREATE of 30: the bank uses {used1}, the pool gave {}", pool0 - pool1);
            ensure!(stats1.0 == stats0.0 + 1, "STATS {stats0:?} -> {stats1:?}");
            // Its pages are zeroed and usable.
            let own = Dataspace(Sender(o));
            ds(own.map(slot::SELF_ASPACE, VA, 0, 30, READ | WRITE), "MAP the 30")?;
            ensure!((0..30).all(|i| word(VA + i * PAGE + 8) == 0), "a page of the bank's run is not zeroed");
            set_word(VA + 29 * PAGE, 0x5a);
            // Two runs for 300 pages (255 + 45): charged 304 to the bank above.
            let (bused0, _, _) = state(Bank(b), m)?;
            ds(m.create(300, b, big), "CREATE 300")?;
            ensure!(state(Bank(b), m)?.0 == bused0 + 304, "CREATE of 300 charged {}", state(Bank(b), m)?.0 - bused0);
            Dataspace(Sender(big)).destroy().map_err(|e| format!("DESTROY 300: {e}"))?;
            ensure!(state(Bank(b), m)?.0 == bused0, "DESTROY of 300 left {} charged", state(Bank(b), m)?.0 - bused0);
            // Restricted and dead banks, a foreign bank server, not a bank.
            bank.restrict(bank_rights::ALLOC, alloc_only).ctx("RESTRICT to ALLOC")?;
            bank.restrict(bank_rights::FREE, free_only).ctx("RESTRICT to FREE")?;
            let gone = Bank(b).create_bank(5, dead).ctx("CREATE_BANK")?;
            gone.destroy().ctx("DESTROY")?;
            keep_abi::SELF_PROCESS.mint(sender, 7, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
            let before = state(bank, m)?;
            let cases: [(&str, u64, Option<u64>, (u64, u64)); 9] = [
                ("CREATE past the bank's limit (12 more of 40, 32 used)", 10, Some(sub), (NO_MEMORY, bank_status::OVER_LIMIT)),
                ("CREATE of MAX_PAGES past the limit of the bank sub is made from", MAX_PAGES, Some(b), (NO_MEMORY, bank_status::OVER_LIMIT)),
                ("CREATE without a bank", 1, None, (NOT_A_BANK, 0)),
                ("CREATE with a bank of another bank server", 1, Some(other.prime.0), (NOT_A_BANK, 0)),
                ("CREATE with a sender to ktest", 1, Some(sender), (NOT_A_BANK, 0)),
                ("CREATE with an address space", 1, Some(slot::SELF_ASPACE), (NOT_A_BANK, 0)),
                ("CREATE with a bank without FREE", 1, Some(alloc_only), (BANK, bank_status::NO_RIGHTS)),
                ("CREATE with a bank without ALLOC", 1, Some(free_only), (BANK, bank_status::NO_RIGHTS)),
                ("CREATE with a destroyed bank", 1, Some(dead), (BANK, bank_status::STALE)),
            ];
            for (what, pages, with, want) in cases {
                let got = raw_create(m, pages, with, x);
                ensure!(got == want, "{what}: (status, bank status) {got:?}, want {want:?}");
                let c = SELF_ASPACE.identify_cap(x).ctx("IDENTIFY_CAP")?;
                ensure!(c.ty == keep_abi::ty::NULL, "{what}: a capability arrived: {c:?}");
            }
            let after = state(bank, m)?;
            ensure!(after == before, "refused CREATEs changed (bank used, STATS, pool) {before:?} -> {after:?}");
            ensure!(other.prime.info().ctx("INFO")?.used == 0, "the foreign bank was charged");
            // The owner's data is still there; DESTROY gives the bank and the pool everything back.
            ensure!(word(VA + 29 * PAGE) == 0x5a, "the dataspace's data changed");
            own.destroy().map_err(|e| format!("DESTROY: {e}"))?;
            let (used2, stats2, pool2) = state(bank, m)?;
            ensure!(used2 == 0 && pool2 == pool0 && stats2 == stats0, "after DESTROY: used {used2}, pool {pool2} (was {pool0}), STATS {stats2:?}");
            ensure!(SELF_ASPACE.lookup(VA) == Err(Error::NOT_MAPPED), "DESTROY left the mapping");
            bank.destroy().ctx("DESTROY the sub-bank")?;
            Ok(())
        })();
        for s in [sub, alloc_only, free_only, dead, sender, o, big, x] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        let stopped = other.stop(&mut cx.slots).map_err(String::from);
        r?;
        stopped
    })
}

/// DS0006: destroying the bank that paid for a dataspace (a killed
/// client's, as init destroys it) takes its frames back to the pool and
/// every mapping and pin of them, and the manager copes: its handles
/// answer GONE, its records are gone (STATS), and it serves on.
pub fn bank_destroyed(cx: &mut Cx) -> TestResult {
    with_ds::<6>(cx, |_, m, b, [sub, o, s, x, d, o2]| {
        let pool0 = MEMORY.free().ctx("MEMORY.FREE")?;
        let stats0 = m.stats().map_err(|e| format!("STATS: {e}"))?;
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let r = (|| {
            let bank = Bank(b).create_bank(100, sub).ctx("CREATE_BANK")?;
            ds(m.create(8, sub, o), "CREATE 8 paid by the sub-bank")?;
            let own = Dataspace(Sender(o));
            ds(own.map(slot::SELF_ASPACE, VA, 0, 4, READ | WRITE), "MAP")?;
            set_word(VA, 77);
            ds(own.share(READ, s), "SHARE")?;
            let sh = Dataspace(Sender(s));
            let xs = other_space(x)?;
            ds(sh.map(x, VB, 0, 8, READ), "MAP the share")?;
            ds(own.pin(d, 0, 8, IOVA, READ | WRITE, &mut [0; 8]), "PIN")?;
            let live = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(live == (stats0.0 + 1, stats0.1 + 2, stats0.2 + 2, stats0.3 + 1), "STATS with the dataspace {live:?}");
            // The client is gone: its bank destroyed.
            bank.destroy().ctx("DESTROY the bank")?;
            ensure!(SELF_ASPACE.lookup(VA) == Err(Error::NOT_MAPPED), "the owner's mapping survived its bank");
            ensure!(xs.lookup(VB) == Err(Error::NOT_MAPPED), "the share's mapping survived the bank");
            ensure!(DmaDomain(d).lookup(IOVA) == Err(Error::NOT_MAPPED), "the pin survived the bank");
            ensure!(DmaDomain(d).info().ctx("INFO")?.pages == 0, "pages pinned in the domain after the bank went");
            ensure!(MEMORY.free().ctx("MEMORY.FREE")? == pool0, "the pool did not get the dataspace's frames back");
            // The manager's answers: GONE on every handle, whatever the request.
            let cases = [
                ("the owner's INFO", st(own.info())),
                ("the share's MAP", st(sh.map(slot::SELF_ASPACE, VC, 0, 1, READ))),
                ("the owner's SHARE", st(own.share(READ, o2))),
                ("the owner's PIN", st(own.pin(d, 0, 1, IOVA, READ, &mut [0]))),
                ("the owner's DESTROY", st(own.destroy())),
                ("the share's INFO again", st(sh.info())),
            ];
            for (what, got) in cases {
                ensure!(got == GONE, "{what} after the bank went: status {got}, want GONE");
            }
            ensure!(SELF_ASPACE.lookup(VC) == Err(Error::NOT_MAPPED), "a GONE handle mapped");
            let after = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(after == stats0, "STATS after the bank went {after:?}, before the dataspace {stats0:?}");
            // And it serves on.
            ds(m.create(3, b, o2), "CREATE after")?;
            Dataspace(Sender(o2)).destroy().map_err(|e| format!("DESTROY after: {e}"))?;
            ensure!(MEMORY.free().ctx("MEMORY.FREE")? == pool0, "the pool after a new create and destroy");
            Ok(())
        })();
        let _ = ACCOUNT.destroy(x);
        let _ = ACCOUNT.destroy(d);
        for c in [sub, o, s, x, d, o2] {
            let _ = SELF_ASPACE.delete_cap(c);
        }
        r
    })
}

/// DS0007: the manager ends without QUIT (a crash, or init's KILL) and a
/// new one starts on the same bank server, as init restarts it
/// (docs/dataspaces.md, "When the manager is restarted"): a dataspace of
/// the old one stays as memory (its mapping keeps its data, its pin stays)
/// and answers STALE (`manager_gone`); `create_owned` through the old
/// manager's sender asks `find` once for the new one and succeeds, charged
/// only what the new dataspace costs; a refusal by a live manager is not
/// retried and leaves nothing; the old dataspace's `Owned::destroy` takes
/// its mapping and pin away and gives its bank every frame back.
pub fn restarted(cx: &mut Cx) -> TestResult {
    let Ds { srv, clients, own, banks } = start_ds(cx)?;
    let cap = srv.cap;
    let mut old = Some(srv);
    let mut new: Option<Running> = None;
    let s = cx.slots::<8>()?;
    let [sub, o, sub2, o2, sub3, o3, dom, own2] = s;
    let r = (|| {
        let m = Manager(Sender(cap));
        let used = |what: &str| clients.info().map(|i| i.used).map_err(|e| format!("INFO {what}: {e}"));
        let used0 = used("before")?;
        ACCOUNT.create_dma_domain(dom).ctx("CREATE_DMA_DOMAIN")?;
        let a = m.create_owned(8, clients.0, sub, o, |_| false).map_err(|e| format!("create_owned 8: {e}"))?;
        ensure!(used("with 8 pages")? == used0 + keep_dataspace::cost(8), "8 pages charged {}", used("")? - used0);
        ds(a.ds.map(slot::SELF_ASPACE, VA, 0, 8, READ | WRITE), "MAP")?;
        set_word(VA, 0x5eed);
        ds(a.ds.pin(dom, 0, 8, IOVA, READ | WRITE, &mut [0; 8]), "PIN")?;
        // The manager ends without QUIT: destroyed as init destroys a killed instance.
        let srv = old.take().ok_or("no manager")?;
        Loader::new(&mut cx.slots).destroy(srv.child).ctx("destroy the manager")?;
        ensure!(word(VA) == 0x5eed, "the old manager's dataspace lost its data");
        ensure!(DmaDomain(dom).lookup(IOVA).is_ok(), "the old manager's pin went with it");
        match a.ds.info() {
            Err(e) if keep_dataspace::manager_gone(e) => {}
            r => return Err(format!("INFO of the old manager's dataspace: {r:?}, want the call's STALE")),
        }
        // A new manager on a bank of its own of the same bank server.
        banks.prime.create_bank(OWN_LIMIT, own2).ctx("CREATE_BANK the new manager's")?;
        let n = start_with(cx, "dataspace", &[grant(slot::CONSOLE), Grant { src: own2, dest: BANK_SLOT, rights: 0 }], 0)?;
        let ncap = n.cap;
        new = Some(n);
        // The retry: the old manager's sender is STALE; find puts the new one in its slot.
        let mut asked = 0;
        let c = m
            .create_owned(4, clients.0, sub2, o2, |slot| {
                asked += 1;
                let _ = SELF_ASPACE.delete_cap(slot);
                SELF_ASPACE.copy_cap(ncap, slot, 0).is_ok()
            })
            .map_err(|e| format!("create_owned after the restart: {e}"))?;
        ensure!(asked == 1, "find asked {asked} times, want once");
        ensure!(ds(c.ds.info().map(|i| i.0), "INFO of the new dataspace")? == 4, "the new dataspace's pages");
        ensure!(used("after the retry")? == used0 + keep_dataspace::cost(8) + keep_dataspace::cost(4),
                "after the retry the bank is charged {}, want the two dataspaces' {}", used("")? - used0,
                keep_dataspace::cost(8) + keep_dataspace::cost(4));
        // A live manager's refusal is an answer, not a reason to look again.
        let mut asked = 0;
        let refused = m.create_owned(0, clients.0, sub3, o3, |_| {
            asked += 1;
            false
        });
        ensure!(st(refused) == BAD_REQUEST && asked == 0, "CREATE of 0 pages: status {}, find asked {asked} times", st(refused));
        for x in [sub3, o3] {
            ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY_CAP")?.ty == keep_abi::ty::NULL, "a refused create_owned left slot {x:#x} filled");
        }
        // The old dataspace given back by its sub-bank: mapping, pin and frames.
        a.destroy();
        ensure!(SELF_ASPACE.lookup(VA) == Err(Error::NOT_MAPPED), "the old dataspace's mapping survived Owned::destroy");
        ensure!(DmaDomain(dom).lookup(IOVA) == Err(Error::NOT_MAPPED), "the old dataspace's pin survived Owned::destroy");
        ensure!(used("after the old one went")? == used0 + keep_dataspace::cost(4), "the old dataspace's frames stayed charged");
        c.destroy();
        ensure!(used("at the end")? == used0, "the bank is charged {} at the end", used("")? - used0);
        Ok(())
    })();
    let _ = ACCOUNT.destroy(dom);
    for x in [sub, o, sub2, o2, sub3, o3, dom] {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    if let Some(srv) = old {
        let _ = Loader::new(&mut cx.slots).destroy(srv.child);
    }
    let stopped = match new {
        Some(n) => stop(cx, n, |s| Manager(s).quit().map_err(|e| format!("dataspace QUIT: {e}"))),
        None => Ok(()),
    };
    let _ = SELF_ASPACE.delete_cap(cap);
    cx.drop_slots(&[cap]);
    for b in [clients, own, Bank(own2)] {
        let _ = b.destroy();
        let _ = SELF_ASPACE.delete_cap(b.0);
    }
    cx.drop_slots(&[clients.0, own.0]);
    cx.drop_slots(&s);
    let banks = banks.stop(&mut cx.slots).map_err(String::from);
    r?;
    stopped?;
    banks
}

/// DS0008: a client that shares, maps and pins one dataspace without end
/// fills only that dataspace's quota (keep_dataspace::quota): its SHARE,
/// MAP and PIN past it are FULL (word 1 REACHED) and change nothing;
/// another client's dataspace is still created, shared, mapped and pinned;
/// and the first one's DESTROY brings STATS back to where it was.
pub fn quota(cx: &mut Cx) -> TestResult {
    use keep_dataspace::quota::{HANDLES, MAPPINGS, PINS, REACHED};
    with_ds::<7>(cx, |_, m, b, [o, s, sp, d, o2, s2, d2]| {
        let stats0 = m.stats().map_err(|e| format!("STATS: {e}"))?;
        let own = Dataspace(Sender(o));
        ds(m.create(1, b, o), "A's CREATE")?;
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        let other = other_space(sp)?;
        let r = (|| {
            // A, hostile: up to more than the manager's tables ever held.
            let (mut shares, mut maps, mut pins) = (0u64, 0u64, 0u64);
            let mut refused = [None; 3];
            for _ in 0..1100 {
                match own.share(READ, s) {
                    Ok(_) => {
                        shares += 1;
                        let _ = SELF_ASPACE.delete_cap(s);
                    }
                    Err(e) => {
                        refused[0] = Some(e);
                        break;
                    }
                }
            }
            for i in 0..600 {
                match own.map(sp, VB + i * PAGE, 0, 1, READ) {
                    Ok(_) => maps += 1,
                    Err(e) => {
                        refused[1] = Some(e);
                        break;
                    }
                }
            }
            let mut addr = [0u64; 1];
            for i in 0..600 {
                match own.pin(d, 0, 1, IOVA + i * PAGE, READ, &mut addr) {
                    Ok(_) => pins += 1,
                    Err(e) => {
                        refused[2] = Some(e);
                        break;
                    }
                }
            }
            // B, honest: its own dataspace, shared, mapped and pinned.
            let own2 = Dataspace(Sender(o2));
            ds(m.create(2, b, o2), "B's CREATE while A is at its quota")?;
            ds(own2.share(READ | WRITE, s2), "B's SHARE while A is at its quota")?;
            ds(own2.map(slot::SELF_ASPACE, VC, 0, 2, READ | WRITE), "B's MAP while A is at its quota")?;
            ACCOUNT.create_dma_domain(d2).ctx("CREATE_DMA_DOMAIN B's")?;
            let mut addrs = [0u64; 2];
            ds(Dataspace(Sender(s2)).pin(d2, 0, 2, IOVA, READ | WRITE, &mut addrs), "B's PIN through its share while A is at its quota")?;
            set_word(VC, 0xb0b);
            ensure!(word(VC) == 0xb0b, "B's mapping");
            // A's part, and how it was refused.
            let full = Some(keep_dataspace::Error::Status(keep_dataspace::FULL, REACHED));
            ensure!(shares == HANDLES as u64 - 1, "A made {shares} shares, want {} ({:?})", HANDLES - 1, refused[0]);
            ensure!(maps == MAPPINGS as u64, "A made {maps} mappings, want {MAPPINGS} ({:?})", refused[1]);
            ensure!(pins == PINS as u64, "A made {pins} pins, want {PINS} ({:?})", refused[2]);
            ensure!(refused == [full; 3], "A's refusals {refused:?}, want FULL (REACHED) each");
            // Refused requests changed nothing: no mapping past A's last.
            ensure!(other.lookup(VB + maps * PAGE).is_err(), "a refused MAP left a mapping");
            ensure!(DmaDomain(d).lookup(IOVA + pins * PAGE).is_err(), "a refused PIN left a pin");
            let st = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(
                st == (stats0.0 + 2, stats0.1 + HANDLES as u64 + 2, stats0.2 + MAPPINGS as u64 + 1, stats0.3 + PINS as u64 + 1),
                "STATS with A at its quota and B: {st:?} (before {stats0:?})"
            );
            // A ends: DESTROY gives back every handle, mapping and pin.
            ds(own.destroy().map(|_| 0), "A's DESTROY")?;
            ensure!(DmaDomain(d).lookup(IOVA).is_err() && other.lookup(VB).is_err(), "A's pins or mappings outlived it");
            ds(own2.destroy().map(|_| 0), "B's DESTROY")?;
            let st = m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(st == stats0, "STATS after both ended: {st:?}, want {stats0:?}");
            Ok(())
        })();
        let _ = own.destroy();
        let _ = Dataspace(Sender(o2)).destroy();
        for x in [d, d2] {
            let _ = ACCOUNT.destroy(x);
        }
        let _ = ACCOUNT.destroy(sp);
        for x in [o, s, sp, d, o2, s2, d2] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        r
    })
}

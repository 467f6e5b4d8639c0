//! Dataspaces (docs/dataspaces.md): the dataspace manager started as a
//! user would start it, its every request and every refusal, checked
//! against what the kernel says is mapped (ASPACE.LOOKUP, DMA_DOMAIN.LOOKUP).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Aspace, DmaDomain, Error, MEMORY, SELF_ASPACE, Sender, Tag, slot};
use keep_dataspace::{
    BAD_REQUEST, Dataspace, KERNEL, MAX_PAGES, MAX_PIN, Manager, NO_MEMORY, NO_RIGHTS, NOT_FOUND, OUT_OF_RANGE, PAGE,
    READ, STALE, WRITE,
};

use crate::drivers::{Running, grant, start_with, stop};
use crate::{Ctx, Cx, TestResult};

/// Where the tests map dataspaces in ktest's own space and in the others.
const VA: u64 = 0x0000_5d00_0000_0000;
const VB: u64 = 0x0000_5d10_0000_0000;
const VC: u64 = 0x0000_5d20_0000_0000;
const VD: u64 = 0x0000_5d30_0000_0000;
const IOVA: u64 = 0x30_0000_0000;

pub(crate) fn start_ds(cx: &mut Cx) -> Result<Running, String> {
    start_with(cx, "dataspace", &[grant(slot::CONSOLE), grant(slot::MEMORY)], 0)
}

pub(crate) fn quit_ds(s: Sender) -> Result<(), String> {
    Manager(s).quit().map_err(|e| format!("dataspace QUIT: {e}"))
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

/// Runs `f` with a fresh manager and `N` slots; stops the manager after.
fn with_ds<const N: usize>(cx: &mut Cx, f: impl FnOnce(&mut Cx, Manager, [u64; N]) -> TestResult) -> TestResult {
    let srv = start_ds(cx)?;
    let s = cx.slots::<N>()?;
    let r = f(cx, Manager(Sender(srv.cap)), s);
    cx.drop_slots(&s);
    let stopped = stop(cx, srv, quit_ds);
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
    with_ds::<4>(cx, |_, m, [o, s, x, spare]| {
        let own = Dataspace(Sender(o));
        let h = ds(m.create(4, o), "CREATE")?;
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
    with_ds::<7>(cx, |cx, m, [o, s, t, x, mine, o2, spare]| {
        let own = Dataspace(Sender(o));
        let ho = ds(m.create(2, o), "CREATE")?;
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
            ds(m.create(1, o2), "CREATE another")?;
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
                ds(m.create(64, o2), "CREATE 64")?;
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
    with_ds::<4>(cx, |_, m, [o, r, d, d2]| {
        let own = Dataspace(Sender(o));
        ds(m.create(4, o), "CREATE")?;
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
    with_ds::<3>(cx, |_, m, [o, s, x]| {
        let own = Dataspace(Sender(o));
        ds(m.create(2, o), "CREATE")?;
        ds(own.map(slot::SELF_ASPACE, VA, 0, 2, READ | WRITE), "MAP")?;
        set_word(VA, 42);
        ds(own.share(READ, s), "SHARE")?;
        let sh = Dataspace(Sender(s));
        let before = m.stats().map_err(|e| format!("STATS: {e}"))?;
        let call = |cap: u64, label: u64, w: [u64; 4]| Sender(cap).call(Tag::new(label), w).words[0];
        let cases: Vec<(&str, u64, u64)> = vec![
            ("CREATE of 0 pages", st(m.create(0, x)), BAD_REQUEST),
            ("CREATE of MAX_PAGES + 1", st(m.create(MAX_PAGES + 1, x)), BAD_REQUEST),
            ("CREATE past the manager's limit", st(m.create(MAX_PAGES, x)), NO_MEMORY),
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

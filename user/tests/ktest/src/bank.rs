//! The space bank (user/servers/spacebank, docs/space-banks.md): each test
//! starts a bank server from the boot image on ktest's memory pool and
//! talks to it as a client would.

use keep_abi::{ACCOUNT, Account, Error, KERNEL, MEMORY, SELF_ASPACE, Sender, Tag, err, rights as krights, slot, ty};
use keep_counter::Client;
use keep_loader::{Grant, Loader, Spec, thread};
use keep_spacebank::{Bank, BankError, BankFrames, Info, MAX_FUND, Server, req, rights, status};

use crate::{Ctx, Cx, TestResult, expect_err};

/// The prime bank's limit in these tests (frames).
pub const PRIME: u64 = 4000;
/// Where the tests map bank pages into ktest's own space.
const VA: u64 = 0x5200_0000_0000;
const RW: u64 = krights::READ | krights::WRITE;

pub fn elf(cx: &Cx, name: &str) -> Result<&'static [u8], alloc::string::String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    Ok(img.find(name).ok_or_else(|| alloc::format!("no '{name}' in the boot image"))?.data)
}

/// Runs `f` with a fresh bank server and stops it afterwards.
pub fn with_server(cx: &mut Cx, f: impl FnOnce(&mut Cx, Bank) -> TestResult) -> TestResult {
    let e = elf(cx, "spacebank")?;
    let server = Server::spawn(&mut cx.slots, e, slot::MEMORY, PRIME).map_err(alloc::string::String::from)?;
    let r = f(cx, server.prime);
    let stopped = server.stop(&mut cx.slots);
    r?;
    stopped.map_err(alloc::string::String::from)
}

fn st(r: Result<impl core::fmt::Debug, BankError>, want: u64, what: &str) -> TestResult {
    match r {
        Err(BankError::Status(s)) if s == want => Ok(()),
        other => Err(alloc::format!("{what}: got {other:?}, want status {}", status::name(want))),
    }
}

fn live(s: u64) -> Result<bool, alloc::string::String> {
    Ok(SELF_ASPACE.identify_cap(s).ctx("IDENTIFY_CAP")?.live)
}

fn invariants() -> TestResult {
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariant violations");
    Ok(())
}

/// Pages, cappages and accounts come from a bank and are charged to it and
/// to the banks above; FREE gives them back (a mapped page is revoked);
/// INFO reports limit, used, sub-banks and objects.
pub fn alloc_free(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [sb, pg, cp, ac, other] = cx.slots::<5>()?;
        let r = (|| {
            let pool = MEMORY.free().ctx("FREE")?;
            let sub = prime.create_bank(100, sb).ctx("CREATE_BANK")?;
            let hp = sub.alloc_page(pg).ctx("ALLOC_PAGE")?;
            let info = SELF_ASPACE.identify_cap(pg).ctx("IDENTIFY")?;
            ensure!(info.ty == ty::PAGE && info.rights & RW == RW, "the page: {info:?}");
            let hc = sub.alloc_cappage(cp).ctx("ALLOC_CAPPAGE")?;
            ensure!(SELF_ASPACE.identify_cap(cp).ctx("IDENTIFY")?.ty == ty::CAPPAGE, "not a cappage");
            let ha = sub.alloc_account(10, ac).ctx("ALLOC_ACCOUNT")?;
            let (free, used) = Account(ac).info().ctx("ACCOUNT.INFO")?;
            ensure!(free == 10 && used == 0, "the account holds {free} free, {used} used");
            // The account works: an address space made from it.
            Account(ac).create_aspace(other).ctx("CREATE_ASPACE from the bank's account")?;
            SELF_ASPACE.delete_cap(other).ctx("DELETE")?;
            let want = Info { limit: 100, used: 13, sub_banks: 0, objects: 3, index: sub.info().ctx("INFO")?.index };
            ensure!(want.index != 0 && sub.info().ctx("INFO")? == want, "sub-bank INFO {:?}", sub.info());
            let p = prime.info().ctx("INFO prime")?;
            ensure!(p.used == 13 && p.sub_banks == 1 && p.objects == 0, "prime INFO {p:?}");
            ensure!(MEMORY.free().ctx("FREE")? == pool - 13, "the pool gave {} frames", pool - MEMORY.free().unwrap_or(0));
            // The page is ours to use; FREE revokes it where it is mapped.
            SELF_ASPACE.map(pg, VA, RW).ctx("MAP")?;
            // SAFETY: just mapped writable at VA.
            unsafe { (VA as *mut u64).write_volatile(0x5ba4c) };
            let (free, _) = Account(ac).info().ctx("ACCOUNT.INFO")?;
            sub.fund(ha, 5).ctx("FUND")?;
            ensure!(Account(ac).info().ctx("INFO")?.0 == free + 5, "FUND did not add 5 frames");
            sub.free(hp).ctx("FREE page")?;
            expect_err(SELF_ASPACE.lookup(VA), Error::NOT_MAPPED, "the freed page's mapping")?;
            ensure!(!live(pg)?, "the freed page is still live");
            st(sub.free(hp), status::NOT_FOUND, "FREE twice")?;
            sub.free(hc).ctx("FREE cappage")?;
            sub.free(ha).ctx("FREE account")?;
            ensure!(!live(cp)? && !live(ac)?, "freed objects still live");
            ensure!(sub.info().ctx("INFO")?.used == 0, "used after FREE: {:?}", sub.info());
            ensure!(prime.info().ctx("INFO")?.used == 0, "prime used after FREE");
            ensure!(MEMORY.free().ctx("FREE")? == pool, "the pool did not get its frames back");
            sub.destroy().ctx("DESTROY")?;
            invariants()
        })();
        let _ = SELF_ASPACE.unmap(VA);
        cx.drop_slots(&[sb, pg, cp, ac, other]);
        r
    })
}

/// Limits: a bank cannot pass its own or any ancestor's limit, a sub-bank
/// cannot be given more than its parent has left; each refusal changes
/// nothing.
pub fn limits(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [a, b, c, x] = cx.slots::<4>()?;
        let r = (|| {
            let pool = MEMORY.free().ctx("FREE")?;
            st(prime.create_bank(PRIME + 1, a), status::OVER_LIMIT, "sub-bank over the prime's limit")?;
            let parent = prime.create_bank(10, a).ctx("CREATE_BANK 10")?;
            st(parent.create_bank(11, b), status::OVER_LIMIT, "sub-bank over its parent's limit")?;
            let child = parent.create_bank(10, b).ctx("CREATE_BANK 10 in 10")?;
            // The parent spends 4; the child, limited to 10, now finds only 6.
            parent.alloc_account(3, x).ctx("ALLOC_ACCOUNT 3")?;
            SELF_ASPACE.delete_cap(x).ctx("DELETE")?;
            st(parent.create_bank(7, c), status::OVER_LIMIT, "sub-bank over what the parent has left")?;
            st(child.alloc_account(6, x), status::OVER_LIMIT, "an account passing the parent's limit")?;
            child.alloc_account(5, x).ctx("ALLOC_ACCOUNT 5 (6 frames)")?;
            SELF_ASPACE.delete_cap(x).ctx("DELETE")?;
            st(child.alloc_page(x), status::OVER_LIMIT, "a page passing the parent's limit")?;
            st(child.alloc_cappage(x), status::OVER_LIMIT, "a cappage passing the parent's limit")?;
            ensure!(!live(x)? && SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "a refused request filled the slot");
            ensure!(parent.info().ctx("INFO")?.used == 10, "parent used {:?}", parent.info());
            ensure!(child.info().ctx("INFO")?.used == 6, "child used {:?}", child.info());
            ensure!(MEMORY.free().ctx("FREE")? == pool - 10, "refusals moved frames");
            parent.destroy().ctx("DESTROY")?;
            st(child.info(), status::STALE, "the sub-bank of a destroyed bank")?;
            ensure!(MEMORY.free().ctx("FREE")? == pool, "DESTROY did not return every frame");
            ensure!(prime.info().ctx("INFO")? == Info { limit: PRIME, used: 0, sub_banks: 0, objects: 0, index: 0 }, "prime after: {:?}", prime.info());
            Ok(())
        })();
        cx.drop_slots(&[a, b, c, x]);
        r
    })
}

/// Malformed requests and handles the caller does not hold are refused
/// with a clear status and change nothing.
pub fn errors(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [a, b, pg, x] = cx.slots::<4>()?;
        let r = (|| {
            let one = prime.create_bank(50, a).ctx("CREATE_BANK")?;
            let two = prime.create_bank(50, b).ctx("CREATE_BANK")?;
            let hp = one.alloc_page(pg).ctx("ALLOC_PAGE")?;
            let pool = MEMORY.free().ctx("FREE")?;
            let before = (one.info().ctx("INFO")?, two.info().ctx("INFO")?, prime.info().ctx("INFO")?);
            let m = Sender(a).call(Tag::new(99), [0; 4]);
            ensure!(m.err == err::OK && m.words[0] == status::BAD_REQUEST, "label 99: {m:?}");
            let m = Sender(a).call(Tag::new(0), [0; 4]);
            ensure!(m.err == err::OK && m.words[0] == status::BAD_REQUEST, "label 0: {m:?}");
            st(one.alloc_account(MAX_FUND + 1, x), status::BAD_REQUEST, "an account of 65537 frames")?;
            st(one.alloc_account(u64::MAX, x), status::BAD_REQUEST, "an account of 2^64-1 frames")?;
            st(one.create_bank(0, x), status::BAD_REQUEST, "a bank of limit 0")?;
            st(one.create_bank(u64::MAX, x), status::OVER_LIMIT, "a bank of limit 2^64-1")?;
            st(one.restrict(rights::ALL + 1, x), status::BAD_REQUEST, "RESTRICT with unknown bits")?;
            st(one.fund(hp, 1), status::BAD_REQUEST, "FUND a page")?;
            st(two.free(hp), status::NOT_FOUND, "FREE another bank's page")?;
            st(two.fund(hp, 1), status::NOT_FOUND, "FUND another bank's object")?;
            st(prime.free(hp), status::NOT_FOUND, "FREE a sub-bank's page through the prime")?;
            st(one.free(hp ^ (1 << 32)), status::NOT_FOUND, "FREE with a wrong generation")?;
            st(one.free(u64::MAX), status::NOT_FOUND, "FREE of handle 2^64-1")?;
            st(one.fund(u64::MAX, 1), status::NOT_FOUND, "FUND of handle 2^64-1")?;
            // A destination slot that is not empty: the reply's capability
            // is not delivered, nothing else happens to the slot.
            ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "a refused request filled the slot");
            let after = (one.info().ctx("INFO")?, two.info().ctx("INFO")?, prime.info().ctx("INFO")?);
            ensure!(before == after, "refusals changed the banks: {before:?} -> {after:?}");
            ensure!(MEMORY.free().ctx("FREE")? == pool, "refusals moved frames");
            ensure!(live(pg)?, "the page died");
            one.destroy().ctx("DESTROY")?;
            two.destroy().ctx("DESTROY")?;
            Ok(())
        })();
        cx.drop_slots(&[a, b, pg, x]);
        r
    })
}

/// A restricted bank capability allocates but cannot free or destroy, and
/// restricting it again cannot give rights back; the prime bank cannot be
/// destroyed.
pub fn restrict(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [a, r1, r2, pg, x] = cx.slots::<5>()?;
        let r = (|| {
            st(prime.destroy(), status::NO_RIGHTS, "DESTROY of the prime bank")?;
            let full = prime.create_bank(20, a).ctx("CREATE_BANK")?;
            let alloc_only = full.restrict(rights::ALLOC | rights::INFO, r1).ctx("RESTRICT")?;
            let h = alloc_only.alloc_page(pg).ctx("ALLOC_PAGE through the restricted capability")?;
            st(alloc_only.free(h), status::NO_RIGHTS, "FREE through an allocate-only capability")?;
            st(alloc_only.destroy(), status::NO_RIGHTS, "DESTROY through an allocate-only capability")?;
            let again = alloc_only.restrict(rights::ALL, r2).ctx("RESTRICT to ALL")?;
            st(again.destroy(), status::NO_RIGHTS, "DESTROY after restricting to ALL (amplified)")?;
            st(again.free(h), status::NO_RIGHTS, "FREE after restricting to ALL (amplified)")?;
            SELF_ASPACE.delete_cap(r2).ctx("DELETE")?;
            let none = alloc_only.restrict(0, r2).ctx("RESTRICT to nothing")?;
            st(none.alloc_page(x), status::NO_RIGHTS, "ALLOC with no rights")?;
            st(none.info(), status::NO_RIGHTS, "INFO with no rights")?;
            st(none.report(), status::NO_RIGHTS, "REPORT with no rights")?;
            ensure!(full.info().ctx("INFO")?.used == 1, "restricted requests changed the bank");
            ensure!(live(pg)?, "the page died");
            full.destroy().ctx("DESTROY through the full capability")?;
            st(alloc_only.alloc_page(x), status::STALE, "the restricted capability after DESTROY")?;
            st(full.info(), status::STALE, "the bank after DESTROY")?;
            ensure!(!live(pg)?, "the page survived its bank");
            Ok(())
        })();
        cx.drop_slots(&[a, r1, r2, pg, x]);
        r
    })
}

/// A thread that calls the sender in word 0 and exits with the error.
fn blocked_caller(a: &thread::Args) -> u64 {
    Sender(a.words[0]).call(Tag::new(1), [0; 4]).err
}

/// Destroying a bank with a running server loaded from it, a process
/// with a caller blocked on it, mapped pages, a cappage, an account and a
/// sub-bank leaves no trace: every capability is STALE, the blocked
/// caller gets STALE, mappings are gone, the pool is back where it was.
pub fn destroy_live(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [sb, ssb, pg, pg2, cp, ac, snd, snd2] = cx.slots::<8>()?;
        let counter_elf = elf(cx, "counter")?;
        let pool = MEMORY.free().ctx("FREE")?;
        let mut children = alloc::vec::Vec::new();
        let mut caller = None;
        let r = (|| {
            let sub = prime.create_bank(400, sb).ctx("CREATE_BANK")?;
            let subsub = sub.create_bank(100, ssb).ctx("CREATE_BANK in the sub-bank")?;
            subsub.alloc_page(pg2).ctx("ALLOC_PAGE in the sub-sub-bank")?;
            sub.alloc_page(pg).ctx("ALLOC_PAGE")?;
            sub.alloc_cappage(cp).ctx("ALLOC_CAPPAGE")?;
            sub.alloc_account(60, ac).ctx("ALLOC_ACCOUNT")?;
            SELF_ASPACE.map(pg, VA, RW).ctx("MAP the bank's page in ktest")?;
            SELF_ASPACE.map(pg2, VA + 0x1000, RW).ctx("MAP the sub-sub-bank's page in ktest")?;
            // A counter server loaded entirely from the bank, running.
            let mut frames = BankFrames(sub);
            let grants = [Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 }];
            let spec = Spec { name: "counter", elf: counter_elf, arg0: 0, arg1: 0, grants: &grants, blob: None };
            let mut loader = Loader::with_source(&mut cx.slots, Account(ac), &mut frames);
            let server = loader.load(&spec).ctx("load counter from the bank")?;
            children.push(server);
            // A process that never runs, with a caller queued on it.
            let idle = loader.create().ctx("create a process from the bank")?;
            children.push(idle);
            server.aspace.map_cappage(cp, 0x100).ctx("MAP_CAPPAGE the bank's cappage")?;
            server.process.mint(snd, 0, krights::WRITE | krights::CALL).ctx("MINT")?;
            server.process.start().ctx("START")?;
            ensure!(Client(Sender(snd)).add(7) == Ok(7), "the bank-loaded counter does not answer");
            idle.process.mint(snd2, 0, krights::WRITE | krights::CALL).ctx("MINT")?;
            // Above ktest's priority: it runs at once and queues itself.
            let t = thread::spawn(&mut cx.slots, "blocked", 12, blocked_caller, &[snd2])?;
            caller = Some(t);
            let used = sub.info().ctx("INFO")?.used;
            ensure!(used >= 64 + 2 + 20, "the sub-bank charged only {used} frames");
            ensure!(MEMORY.free().ctx("FREE")? == pool - used, "pool and bank disagree");

            sub.destroy().ctx("DESTROY the sub-bank")?;

            for (s, what) in [(pg, "page"), (pg2, "sub-sub-bank page"), (cp, "cappage"), (ac, "account"), (snd, "sender")] {
                ensure!(!live(s)?, "the {what} is still live");
            }
            for c in &children {
                ensure!(!live(c.process.0)? && !live(c.aspace.0)?, "a process or address space from the bank is still live");
            }
            for va in [VA, VA + 0x1000] {
                expect_err(SELF_ASPACE.lookup(va), Error::NOT_MAPPED, "a bank page's mapping in ktest")?;
            }
            let m = Sender(snd).call(Tag::new(2), [0; 4]);
            ensure!(m.err == err::STALE, "calling the destroyed counter: {}", keep_abi::error_name(m.err));
            let st_caller = caller.take().unwrap().join(&mut cx.slots)?;
            ensure!(st_caller.code == err::STALE, "the blocked caller ended with {}", keep_abi::error_name(st_caller.code));
            st(sub.info(), status::STALE, "the destroyed bank")?;
            st(subsub.alloc_page(pg), status::STALE, "its sub-bank")?;
            ensure!(MEMORY.free().ctx("FREE")? == pool, "free memory is {} frames short", pool - MEMORY.free().unwrap_or(0));
            ensure!(prime.info().ctx("INFO")? == Info { limit: PRIME, used: 0, sub_banks: 0, objects: 0, index: 0 }, "prime: {:?}", prime.info());
            invariants()
        })();
        if let Some(t) = caller {
            t.kill(&mut cx.slots);
        }
        for c in children {
            // Already STALE when the test passed; these only clean up a failure.
            let _ = ACCOUNT.destroy(c.process.0);
            cx.drop_slots(&[c.process.0, c.aspace.0]);
        }
        let _ = SELF_ASPACE.unmap(VA);
        let _ = SELF_ASPACE.unmap(VA + 0x1000);
        cx.drop_slots(&[sb, ssb, pg, pg2, cp, ac, snd, snd2]);
        r
    })
}

/// REPORT lists the subtree (banks in preorder with depth, then accounts
/// with ACCOUNT.INFO's figures).
pub fn report(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [a, b, ac, asp] = cx.slots::<4>()?;
        let r = (|| {
            let one = prime.create_bank(100, a).ctx("CREATE_BANK")?;
            let two = one.create_bank(40, b).ctx("CREATE_BANK")?;
            let h = two.alloc_account(8, ac).ctx("ALLOC_ACCOUNT")?;
            Account(ac).create_aspace(asp).ctx("CREATE_ASPACE")?;
            let rep = one.report().ctx("REPORT")?;
            ensure!(rep.banks.len() == 2, "{} banks reported", rep.banks.len());
            let (r0, r1) = (rep.banks[0], rep.banks[1]);
            ensure!(r0.depth == 0 && r0.limit == 100 && r0.used == 9 && r0.sub_banks == 1, "first bank {r0:?}");
            ensure!(r1.depth == 1 && r1.limit == 40 && r1.used == 9 && r1.objects == 1, "second bank {r1:?}");
            ensure!(rep.accounts.len() == 1, "{} accounts reported", rep.accounts.len());
            let acc = rep.accounts[0];
            ensure!(acc.bank == r1.index && acc.handle == h, "account record {acc:?}");
            ensure!(acc.free == 6 && acc.used == 2 && acc.taken == 0 && acc.out == 0, "account figures {acc:?}");
            one.destroy().ctx("DESTROY")?;
            ensure!(!live(asp)?, "the address space survived");
            Ok(())
        })();
        cx.drop_slots(&[a, b, ac, asp]);
        r
    })
}

/// A capability with no rights gets NO_RIGHTS for every request that needs one.
pub fn rights_table(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let [a, none, x] = cx.slots::<3>()?;
        let r = (|| {
            let b = prime.create_bank(10, a).ctx("CREATE_BANK")?;
            let n = b.restrict(0, none).ctx("RESTRICT 0")?;
            for label in [req::ALLOC_PAGE, req::ALLOC_CAPPAGE, req::ALLOC_ACCOUNT, req::FUND, req::FREE, req::CREATE_BANK, req::INFO, req::DESTROY, req::REPORT] {
                let m = Sender(n.0).call(Tag::new(label), [1, 1, 0, 0]);
                ensure!(m.err == 0 && m.words[0] == status::NO_RIGHTS, "label {label} with no rights: {m:?}");
            }
            ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "slot filled");
            b.destroy().ctx("DESTROY")
        })();
        cx.drop_slots(&[a, none, x]);
        r
    })
}

/// Over the server's bank table (MAX_BANKS alive at once): FULL, and
/// nothing changes; destroying one makes room again.
pub fn full(cx: &mut Cx) -> TestResult {
    with_server(cx, |cx, prime| {
        let mut made = alloc::vec::Vec::new();
        let x = cx.slot()?;
        let r = (|| {
            // The prime bank is one of them.
            for _ in 1..keep_spacebank::MAX_BANKS {
                let s = cx.slot()?;
                made.push(s);
                prime.create_bank(1, s).ctx("CREATE_BANK")?;
            }
            let before = prime.info().ctx("INFO")?;
            st(prime.create_bank(1, x), status::FULL, "a bank past the table")?;
            ensure!(prime.info().ctx("INFO")? == before, "the refusal changed the prime bank");
            ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "the refusal filled the slot");
            Bank(made[0]).destroy().ctx("DESTROY")?;
            prime.create_bank(1, x).ctx("CREATE_BANK after a DESTROY")?;
            st(Bank(made[0]).info(), status::STALE, "the destroyed bank, its place used again")?;
            Ok(())
        })();
        for &s in &made {
            let _ = Bank(s).destroy();
        }
        let _ = Bank(x).destroy();
        cx.drop_slots(&made);
        cx.drop_slot(x);
        ensure!(prime.info().ctx("INFO")?.sub_banks == 0, "banks left over");
        r
    })
}

/// Runs `f` with a bank server whose prime bank's limit is `limit`.
fn with_limit(cx: &mut Cx, limit: u64, f: impl FnOnce(&mut Cx, Bank) -> TestResult) -> TestResult {
    let e = elf(cx, "spacebank")?;
    let server = Server::spawn(&mut cx.slots, e, slot::MEMORY, limit).map_err(alloc::string::String::from)?;
    let r = f(cx, server.prime);
    let stopped = server.stop(&mut cx.slots);
    r?;
    stopped.map_err(alloc::string::String::from)
}

/// The memory pool running dry under a bank whose limit is above it: an
/// account the pool cannot fund, then (the pool empty) a page, a cappage,
/// an empty account and a FUND are each NO_MEMORY and change nothing;
/// freeing an account makes allocation work again, and destroying the bank
/// gives the pool back whole.
pub fn no_memory(cx: &mut Cx) -> TestResult {
    with_limit(cx, 1 << 40, |cx, prime| {
        let [sb, x] = cx.slots::<2>()?;
        let mut held: alloc::vec::Vec<(u64, u64)> = alloc::vec::Vec::new();
        let pool = MEMORY.free().ctx("FREE")?;
        let r = (|| {
            let sub = prime.create_bank(1 << 39, sb).ctx("CREATE_BANK")?;
            // Accounts take the pool down to a few hundred frames.
            loop {
                let free = MEMORY.free().ctx("FREE")?;
                if free <= 600 {
                    break;
                }
                let s = cx.slot()?;
                let h = sub.alloc_account((free - 500).min(MAX_FUND), s).ctx("ALLOC_ACCOUNT")?;
                held.push((s, h));
            }
            let unchanged = |what: &str, info: Info, free: u64| -> TestResult {
                ensure!(sub.info().ctx("INFO")? == info, "{what} changed the bank");
                ensure!(MEMORY.free().ctx("FREE")? == free, "{what} moved frames of the pool");
                ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "{what} filled the slot");
                Ok(())
            };
            let free = MEMORY.free().ctx("FREE")?;
            let info = sub.info().ctx("INFO")?;
            st(sub.alloc_account(free + 1, x), status::NO_MEMORY, "an account of more frames than the pool has")?;
            unchanged("the refused account", info, free)?;
            // The rest of the pool: an account's own frame and its funds.
            let s = cx.slot()?;
            held.push((s, sub.alloc_account(free - 1, s).ctx("ALLOC_ACCOUNT of the rest")?));
            ensure!(MEMORY.free().ctx("FREE")? == 0, "the pool is not empty: {:?}", MEMORY.free());
            let info = sub.info().ctx("INFO")?;
            st(sub.alloc_page(x), status::NO_MEMORY, "a page from an empty pool")?;
            st(sub.alloc_cappage(x), status::NO_MEMORY, "a cappage from an empty pool")?;
            st(sub.alloc_account(0, x), status::NO_MEMORY, "an empty account from an empty pool")?;
            st(sub.fund(held[0].1, 1), status::NO_MEMORY, "FUND from an empty pool")?;
            unchanged("the refusals of an empty pool", info, 0)?;
            let (s, h) = held.pop().expect("held");
            sub.free(h).ctx("FREE of an account")?;
            cx.drop_slot(s);
            let h = sub.alloc_page(x).ctx("ALLOC_PAGE once the pool has frames again")?;
            sub.free(h).ctx("FREE")?;
            let _ = SELF_ASPACE.delete_cap(x);
            sub.destroy().ctx("DESTROY")?;
            ensure!(MEMORY.free().ctx("FREE")? == pool, "the pool is {:?}, not {pool}, after the bank went", MEMORY.free());
            Ok(())
        })();
        if r.is_err() {
            let _ = Bank(sb).destroy();
        }
        for (s, _) in held {
            cx.drop_slot(s);
        }
        cx.drop_slots(&[sb, x]);
        r
    })
}

/// Past the server's capability slots (one per object it has handed
/// out): FULL, and nothing changes; freeing one object makes room again.
pub fn slots_full(cx: &mut Cx) -> TestResult {
    with_limit(cx, 16384, |cx, prime| {
        let [sb, x] = cx.slots::<2>()?;
        let pool = MEMORY.free().ctx("FREE")?;
        let r = (|| {
            let sub = prime.create_bank(8192, sb).ctx("CREATE_BANK")?;
            let mut last = None;
            for n in 0..8192 {
                match sub.alloc_page(x) {
                    Ok(h) => {
                        last = Some(h);
                        SELF_ASPACE.delete_cap(x).ctx("DELETE")?;
                    }
                    Err(BankError::Status(status::FULL)) => {
                        ensure!(n >= 3000, "FULL after only {n} pages");
                        break;
                    }
                    Err(e) => return Err(alloc::format!("page {n}: {e}")),
                }
            }
            let info = sub.info().ctx("INFO")?;
            let free = MEMORY.free().ctx("FREE")?;
            st(sub.alloc_page(x), status::FULL, "a page past the server's slots")?;
            st(sub.alloc_cappage(x), status::FULL, "a cappage past the server's slots")?;
            st(sub.alloc_account(1, x), status::FULL, "an account past the server's slots")?;
            ensure!(sub.info().ctx("INFO")? == info, "the refusals changed the bank");
            ensure!(MEMORY.free().ctx("FREE")? == free, "the refusals moved frames");
            ensure!(SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.ty == ty::NULL, "a refusal filled the slot");
            sub.free(last.ok_or("no page was allocated")?).ctx("FREE")?;
            sub.alloc_page(x).ctx("ALLOC_PAGE after a FREE")?;
            let _ = SELF_ASPACE.delete_cap(x);
            sub.destroy().ctx("DESTROY")?;
            ensure!(MEMORY.free().ctx("FREE")? == pool, "the pool did not come back");
            Ok(())
        })();
        if r.is_err() {
            let _ = Bank(sb).destroy();
        }
        cx.drop_slots(&[sb, x]);
        r
    })
}

/// ALLOC_PAGES: a run of pages is one object charged n + 2 frames; the
/// client's cappage holds the pages, usable like any page; FREE takes the
/// run back whole (the pages' mappings and the cappage's are revoked), as
/// does DESTROY of the bank; refusals change nothing.
pub fn runs(cx: &mut Cx) -> TestResult {
    /// Where the run's cappage is mapped in ktest's capability space.
    const CA: u64 = 0x0500_0000;
    with_server(cx, |cx, prime| {
        let [sb, run, x] = cx.slots::<3>()?;
        let r = (|| {
            let pool = MEMORY.free().ctx("FREE")?;
            let sub = prime.create_bank(100, sb).ctx("CREATE_BANK")?;
            st(sub.alloc_pages(0, x), status::BAD_REQUEST, "a run of 0 pages")?;
            st(sub.alloc_pages(keep_spacebank::MAX_RUN + 1, x), status::BAD_REQUEST, "a run over MAX_RUN")?;
            st(sub.alloc_pages(99, x), status::OVER_LIMIT, "a run over the limit (99 + 2 > 100)")?;
            ensure!(sub.info().ctx("INFO")?.used == 0 && MEMORY.free().ctx("FREE")? == pool, "a refusal changed something");
            ensure!(!SELF_ASPACE.identify_cap(x).ctx("IDENTIFY")?.live, "a refusal filled the slot");
            let h = sub.alloc_pages(64, run).ctx("ALLOC_PAGES 64")?;
            let info = sub.info().ctx("INFO")?;
            ensure!(info.used == 66 && info.objects == 1, "after a run of 64: {info:?}");
            ensure!(MEMORY.free().ctx("FREE")? == pool - 66, "the pool gave {} frames", pool - MEMORY.free().unwrap_or(0));
            ensure!(SELF_ASPACE.identify_cap(run).ctx("IDENTIFY")?.ty == ty::CAPPAGE, "the run is not a cappage");
            SELF_ASPACE.map_cappage(run, CA).ctx("MAP_CAPPAGE")?;
            for i in [0, 5, 63] {
                let c = SELF_ASPACE.identify_cap(CA + i).ctx("IDENTIFY")?;
                ensure!(c.ty == ty::PAGE && c.live && c.rights & RW == RW, "slot {i} of the run: {c:?}");
            }
            ensure!(SELF_ASPACE.identify_cap(CA + 64).ctx("IDENTIFY")?.ty == ty::NULL, "slot 64 of a run of 64 is not empty");
            SELF_ASPACE.map(CA + 5, VA, RW).ctx("MAP a page of the run")?;
            // SAFETY: mapped writable at VA just now.
            ensure!(unsafe { (VA as *const u64).read_volatile() } == 0, "a run's page is not zeroed");
            // SAFETY: as above.
            unsafe { (VA as *mut u64).write_volatile(0x5ba4c) };
            st(prime.free(h), status::NOT_FOUND, "FREE of the run through another bank")?;
            sub.free(h).ctx("FREE the run")?;
            expect_err(SELF_ASPACE.lookup(VA), Error::NOT_MAPPED, "the freed run's page mapping")?;
            ensure!(!SELF_ASPACE.identify_cap(CA + 5).is_ok_and(|c| c.live), "a page of the freed run is still live");
            ensure!(!live(run)?, "the freed run's cappage is still live");
            ensure!(sub.info().ctx("INFO")?.used == 0, "used after FREE: {:?}", sub.info());
            ensure!(MEMORY.free().ctx("FREE")? == pool, "the pool did not get the run back");
            // A bank's destruction takes its runs too.
            SELF_ASPACE.delete_cap(run).ctx("DELETE")?;
            sub.alloc_pages(10, run).ctx("ALLOC_PAGES 10")?;
            SELF_ASPACE.delete_cap(run).ctx("DELETE")?;
            sub.alloc_pages(20, run).ctx("ALLOC_PAGES 20")?;
            ensure!(sub.info().ctx("INFO")?.used == 34, "two runs: {:?}", sub.info());
            sub.destroy().ctx("DESTROY")?;
            ensure!(!live(run)?, "a run of a destroyed bank is still live");
            ensure!(MEMORY.free().ctx("FREE")? == pool, "the pool did not get the runs back from DESTROY");
            invariants()
        })();
        let _ = SELF_ASPACE.unmap(VA);
        let _ = SELF_ASPACE.unmap_cappage(CA);
        cx.drop_slots(&[sb, run, x]);
        r
    })
}

//! Kernel memory: the memory pool, kernel-memory accounts and kpagers,
//! destroying objects, and wrappers (revocation).

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    ACCOUNT, Account, Aspace, Console, Error, KERNEL, MEMORY, Memory, Process, Return,
    SELF_ASPACE, Tag, label, recv, rights, slot, ty,
};

use crate::cspace::{BEYOND, HOLE, console_works, expect_type, snapshot, unchanged};
use crate::{Ctx, Cx, TestResult, expect_err, with_slots};
use keep_loader::thread;

fn info(a: Account) -> Result<(u64, u64), String> {
    a.info().ctx("ACCOUNT.INFO")
}

/// A fresh, empty account in a new slot.
fn new_account(cx: &mut Cx) -> Result<Account, String> {
    let s = cx.slot()?;
    if let Err(e) = MEMORY.create_account(s) {
        cx.slots.free(s);
        return Err(format!("CREATE_ACCOUNT failed: {e}"));
    }
    Ok(Account(s))
}

/// Gives every unused frame of `a` back to the pool and drops its slot
/// (accounts cannot be destroyed).
fn retire_account(cx: &mut Cx, a: Account) {
    if let Ok((free, _)) = a.info() {
        if free > 0 {
            let _ = a.reclaim(slot::MEMORY, free);
        }
    }
    cx.drop_slot(a.0);
}

pub fn aspace_frames(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [d]| {
        let (f0, u0) = info(ACCOUNT)?;
        ACCOUNT.create_aspace(d).ctx("CREATE_ASPACE")?;
        let (f1, u1) = info(ACCOUNT)?;
        ensure!(
            f0 - f1 == 2 && u1 - u0 == 2,
            "CREATE_ASPACE: free {f0}->{f1}, used {u0}->{u1}; want 2 frames"
        );
        expect_type(d, ty::ASPACE)?;
        ACCOUNT.destroy(d).ctx("DESTROY")?;
        let after = info(ACCOUNT)?;
        ensure!(after == (f0, u0), "after DESTROY: {after:?}, want {:?}", (f0, u0));
        Ok(())
    })
}

pub fn process_frames(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, p]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        let (f0, u0) = info(ACCOUNT)?;
        ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS")?;
        let (f1, u1) = info(ACCOUNT)?;
        ensure!(
            f0 - f1 == 1 && u1 - u0 == 1,
            "CREATE_PROCESS: free {f0}->{f1}, used {u0}->{u1}; want 1 frame"
        );
        let st = Process(p).status().ctx("STATUS")?;
        ensure!(st.state == keep_abi::state::CREATED, "new process is {st}");
        ACCOUNT.destroy(p).ctx("DESTROY process")?;
        let after = info(ACCOUNT)?;
        ensure!(after == (f0, u0), "after DESTROY: {after:?}");
        ACCOUNT.destroy(a).ctx("DESTROY aspace")
    })
}

pub fn create_account(cx: &mut Cx) -> TestResult {
    let pool = MEMORY.free().ctx("FREE")?;
    let a = new_account(cx)?;
    let r = (|| {
        let after = MEMORY.free().ctx("FREE")?;
        ensure!(pool - after == 1, "CREATE_ACCOUNT took {} frames", pool - after);
        ensure!(info(a)? == (0, 0), "a new account holds {:?}", info(a)?);
        expect_type(a.0, ty::ACCOUNT)
    })();
    retire_account(cx, a);
    r
}

pub fn donate_reclaim(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = (|| {
        let pool = MEMORY.free().ctx("FREE")?;
        MEMORY.donate(a.0, 5).ctx("DONATE 5")?;
        ensure!(pool - MEMORY.free().ctx("FREE")? == 5, "pool did not lose 5");
        ensure!(info(a)? == (5, 0), "account holds {:?}", info(a)?);
        let before = snapshot()?;
        expect_err(a.reclaim(slot::MEMORY, 6), Error::NO_MEMORY, "RECLAIM 6 of 5")?;
        unchanged(before)?;
        ensure!(info(a)? == (5, 0), "account after the failure: {:?}", info(a)?);
        a.reclaim(slot::MEMORY, 5).ctx("RECLAIM 5")?;
        ensure!(MEMORY.free().ctx("FREE")? == pool, "pool not restored");
        ensure!(info(a)? == (0, 0), "account after RECLAIM: {:?}", info(a)?);
        Ok(())
    })();
    retire_account(cx, a);
    r
}

pub fn donate_args(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = (|| {
        let before = snapshot()?;
        expect_err(MEMORY.donate(a.0, 0), Error::INVALID_ARG, "DONATE 0")?;
        expect_err(MEMORY.donate(a.0, 65537), Error::INVALID_ARG, "DONATE 65537")?;
        expect_err(MEMORY.donate(slot::CONSOLE, 1), Error::WRONG_TYPE, "to console")?;
        expect_err(MEMORY.donate(40, 1), Error::INVALID_CAP, "to an empty slot")?;
        expect_err(MEMORY.donate(HOLE, 1), Error::NO_CAPPAGE, "to a hole")?;
        expect_err(MEMORY.donate(BEYOND, 1), Error::OUT_OF_RANGE, "beyond")?;
        unchanged(before)?;
        ensure!(info(a)? == (0, 0), "account: {:?}", info(a)?);
        Ok(())
    })();
    retire_account(cx, a);
    r
}

pub fn donate_too_much(cx: &mut Cx) -> TestResult {
    // Park all but a few frames in a side account, ask for more than the
    // rest, then give everything back.
    let side = new_account(cx)?;
    let a = new_account(cx)?;
    let r = (|| {
        for _ in 0..64 {
            let free = MEMORY.free().ctx("FREE")?;
            if free <= 65536 {
                let before = snapshot()?;
                let ia = info(a)?;
                expect_err(
                    MEMORY.donate(a.0, free + 1),
                    Error::NO_MEMORY,
                    &format!("DONATE {} with {free} free", free + 1),
                )?;
                unchanged(before)?;
                ensure!(info(a)? == ia, "account changed");
                return Ok(());
            }
            MEMORY
                .donate(side.0, (free - 100).min(65536))
                .ctx("DONATE to the side account")?;
        }
        Err("the pool never got small".into())
    })();
    retire_account(cx, side);
    retire_account(cx, a);
    r
}

pub fn reclaim_args(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = (|| {
        MEMORY.donate(a.0, 2).ctx("DONATE")?;
        let before = snapshot()?;
        expect_err(a.reclaim(slot::CONSOLE, 1), Error::WRONG_TYPE, "to console")?;
        expect_err(a.reclaim(40, 1), Error::INVALID_CAP, "to an empty slot")?;
        expect_err(a.reclaim(HOLE, 1), Error::NO_CAPPAGE, "to a hole")?;
        expect_err(a.reclaim(BEYOND, 1), Error::OUT_OF_RANGE, "beyond")?;
        unchanged(before)?;
        ensure!(info(a)? == (2, 0), "account: {:?}", info(a)?);
        Ok(())
    })();
    retire_account(cx, a);
    r
}

pub fn empty_no_kpager(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = with_slots(cx, |_, [d]| {
        let before = snapshot()?;
        expect_err(a.create_aspace(d), Error::NO_MEMORY, "CREATE_ASPACE")?;
        expect_err(
            a.create_wrapper(slot::CONSOLE, d, rights::READ),
            Error::NO_MEMORY,
            "CREATE_WRAPPER",
        )?;
        unchanged(before)?;
        ensure!(info(a)? == (0, 0), "account: {:?}", info(a)?);
        expect_type(d, ty::NULL)
    });
    retire_account(cx, a);
    r
}

static KMEM_CALLS: AtomicU64 = AtomicU64::new(0);
static KMEM_NEEDED: AtomicU64 = AtomicU64::new(0);
static KMEM_HAD: AtomicU64 = AtomicU64::new(u64::MAX);
static KMEM_PAYLOAD: AtomicU64 = AtomicU64::new(0);

/// A kpager: answers KMEM calls by donating what is asked to the account
/// in words[1]; words[0] is its receive slot.
fn kpager(a: &thread::Args) -> u64 {
    let [ret, account, ..] = a.words;
    a.buf().set_recv_slots(&[ret]);
    loop {
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 {
            return 100 + m.err;
        }
        if m.tag.label() != label::KMEM || !m.tag.is_called() {
            return 2;
        }
        KMEM_CALLS.fetch_add(1, SeqCst);
        KMEM_NEEDED.store(m.words[0], SeqCst);
        KMEM_HAD.store(m.words[1], SeqCst);
        KMEM_PAYLOAD.store(m.payload, SeqCst);
        let _ = MEMORY.donate(account, m.words[0].max(1));
        if Return(ret).reply(Tag::new(0), [0; 4]).is_err() {
            return 3;
        }
    }
}

pub fn kpager_refills(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let [ret, snd, d] = match cx.slots::<3>() {
        Ok(s) => s,
        Err(e) => {
            retire_account(cx, a);
            return Err(e);
        }
    };
    KMEM_CALLS.store(0, SeqCst);
    let r = (|| {
        let t = thread::spawn(&mut cx.slots, "ktest-kpager", 10, kpager, &[ret, a.0])?;
        let r = (|| {
            t.process.mint(snd, 0x4b4d, 0).ctx("MINT")?;
            a.set_kpager(snd).ctx("SET_KPAGER")?;
            a.create_aspace(d).ctx("CREATE_ASPACE on an empty account")?;
            expect_type(d, ty::ASPACE)?;
            let calls = KMEM_CALLS.load(SeqCst);
            ensure!(calls >= 1, "the kpager got no KMEM call");
            ensure!(
                KMEM_HAD.load(SeqCst) == 0 && KMEM_NEEDED.load(SeqCst) >= 1,
                "KMEM words: needed {}, had {}",
                KMEM_NEEDED.load(SeqCst),
                KMEM_HAD.load(SeqCst)
            );
            ensure!(
                KMEM_PAYLOAD.load(SeqCst) == 0x4b4d,
                "KMEM payload {:#x}",
                KMEM_PAYLOAD.load(SeqCst)
            );
            let (_, used) = info(a)?;
            ensure!(used == 2, "account used {used}, want 2");
            a.destroy(d).ctx("DESTROY")?;
            a.set_kpager(0).ctx("SET_KPAGER 0")
        })();
        t.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&[ret, snd, d]);
    retire_account(cx, a);
    r
}

pub fn destroy_other_account(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = with_slots(cx, |_, [d]| {
        MEMORY.donate(a.0, 4).ctx("DONATE")?;
        ACCOUNT.create_aspace(d).ctx("CREATE_ASPACE")?;
        let before = info(a)?;
        expect_err(a.destroy(d), Error::INVALID_ARG, "DESTROY via another account")?;
        ensure!(info(a)? == before, "other account changed");
        let i = SELF_ASPACE.identify_cap(d).ctx("IDENTIFY")?;
        ensure!(i.live, "the aspace died");
        ACCOUNT.destroy(d).ctx("DESTROY via its own account")
    });
    retire_account(cx, a);
    r
}

pub fn destroy_used_aspace(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, p]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS")?;
        let before = info(ACCOUNT)?;
        expect_err(ACCOUNT.destroy(a), Error::BAD_STATE, "DESTROY of a used aspace")?;
        ensure!(info(ACCOUNT)? == before, "account changed");
        let i = SELF_ASPACE.identify_cap(a).ctx("IDENTIFY")?;
        ensure!(i.live, "the aspace died");
        ACCOUNT.destroy(p).ctx("DESTROY process")?;
        ACCOUNT.destroy(a).ctx("DESTROY aspace once unused")
    })
}

pub fn destroy_wrong(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [empty]| {
        let p = cx.retype(ty::PAGE)?;
        let before = snapshot()?;
        let r = expect_err(ACCOUNT.destroy(p), Error::WRONG_TYPE, "DESTROY a page")
            .and_then(|_| {
                expect_err(
                    ACCOUNT.destroy(slot::CONSOLE),
                    Error::WRONG_TYPE,
                    "DESTROY the console",
                )
            })
            .and_then(|_| expect_err(ACCOUNT.destroy(empty), Error::INVALID_CAP, "empty"))
            .and_then(|_| expect_err(ACCOUNT.destroy(HOLE), Error::NO_CAPPAGE, "hole"))
            .and_then(|_| expect_err(ACCOUNT.destroy(BEYOND), Error::OUT_OF_RANGE, "beyond"))
            .and_then(|_| unchanged(before));
        cx.drop_slot(p);
        r
    })
}

pub fn destroyed_process_stale(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, p, copy]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS")?;
        SELF_ASPACE.copy_cap(p, copy, 0).ctx("COPY_CAP")?;
        ACCOUNT.destroy(p).ctx("DESTROY")?;
        for s in [p, copy] {
            expect_err(Process(s).status(), Error::STALE, "STATUS after DESTROY")?;
            let i = SELF_ASPACE.identify_cap(s).ctx("IDENTIFY")?;
            ensure!(i.ty == ty::PROCESS && !i.live, "destroyed process: {i:?}");
        }
        expect_err(ACCOUNT.destroy(p), Error::STALE, "second DESTROY")?;
        // The slot can be used again.
        SELF_ASPACE.delete_cap(p).ctx("DELETE_CAP")?;
        ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS into the slot again")?;
        Process(p).status().ctx("STATUS of the new process")?;
        expect_err(Process(copy).status(), Error::STALE, "old copy")?;
        ACCOUNT.destroy(p).ctx("DESTROY")?;
        ACCOUNT.destroy(a).ctx("DESTROY aspace")
    })
}

pub fn destroyed_aspace_stale(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, p]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        ACCOUNT.destroy(a).ctx("DESTROY")?;
        expect_err(Aspace(a).lookup(0x1000), Error::STALE, "LOOKUP")?;
        expect_err(
            Aspace(a).insert_cap(slot::CONSOLE, 1, 0),
            Error::STALE,
            "INSERT_CAP",
        )?;
        expect_err(ACCOUNT.create_process(a, p), Error::STALE, "CREATE_PROCESS")?;
        expect_type(p, ty::NULL)?;
        expect_err(ACCOUNT.destroy(a), Error::STALE, "second DESTROY")
    })
}

pub fn account_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [ro, wo, d]| {
        SELF_ASPACE
            .copy_cap(slot::ACCOUNT, ro, rights::READ)
            .ctx("COPY_CAP")?;
        SELF_ASPACE
            .copy_cap(slot::ACCOUNT, wo, rights::WRITE)
            .ctx("COPY_CAP")?;
        let before = snapshot()?;
        expect_err(Account(ro).create_aspace(d), Error::NO_RIGHTS, "CREATE_ASPACE")?;
        expect_err(Account(ro).destroy(d), Error::NO_RIGHTS, "DESTROY")?;
        expect_err(
            Account(ro).reclaim(slot::MEMORY, 1),
            Error::NO_RIGHTS,
            "RECLAIM",
        )?;
        expect_err(Account(ro).set_kpager(0), Error::NO_RIGHTS, "SET_KPAGER")?;
        expect_err(Account(wo).info(), Error::NO_RIGHTS, "INFO")?;
        Account(ro).info().ctx("INFO through READ")?;
        unchanged(before)
    })
}

pub fn memory_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [ro, wo, d]| {
        SELF_ASPACE
            .copy_cap(slot::MEMORY, ro, rights::READ)
            .ctx("COPY_CAP")?;
        SELF_ASPACE
            .copy_cap(slot::MEMORY, wo, rights::WRITE)
            .ctx("COPY_CAP")?;
        let before = snapshot()?;
        expect_err(Memory(ro).retype(ty::PAGE, d), Error::NO_RIGHTS, "RETYPE")?;
        expect_err(Memory(ro).donate(slot::ACCOUNT, 1), Error::NO_RIGHTS, "DONATE")?;
        expect_err(Memory(ro).create_account(d), Error::NO_RIGHTS, "CREATE_ACCOUNT")?;
        expect_err(Memory(wo).free(), Error::NO_RIGHTS, "FREE")?;
        unchanged(before)?;
        expect_type(d, ty::NULL)
    })
}

pub fn set_kpager_errors(cx: &mut Cx) -> TestResult {
    let a = new_account(cx)?;
    let r = (|| {
        expect_err(a.set_kpager(slot::CONSOLE), Error::WRONG_TYPE, "console")?;
        expect_err(a.set_kpager(40), Error::INVALID_CAP, "empty slot")?;
        expect_err(a.set_kpager(HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(a.set_kpager(BEYOND), Error::OUT_OF_RANGE, "beyond")?;
        a.set_kpager(0).ctx("SET_KPAGER 0")
    })();
    retire_account(cx, a);
    r
}

pub fn create_exists(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        let before = snapshot()?;
        expect_err(ACCOUNT.create_aspace(slot::CONSOLE), Error::EXISTS, "ASPACE")?;
        expect_err(
            ACCOUNT.create_process(a, slot::CONSOLE),
            Error::EXISTS,
            "PROCESS",
        )?;
        expect_err(
            ACCOUNT.create_wrapper(slot::TIMER, slot::CONSOLE, rights::READ),
            Error::EXISTS,
            "WRAPPER",
        )?;
        expect_err(MEMORY.create_account(slot::CONSOLE), Error::EXISTS, "ACCOUNT")?;
        unchanged(before)?;
        console_works(slot::CONSOLE)?;
        ACCOUNT.destroy(a).ctx("DESTROY")
    })
}

pub fn cappage_frame(cx: &mut Cx) -> TestResult {
    let before = MEMORY.free().ctx("FREE")?;
    let cp = cx.retype(ty::CAPPAGE)?;
    let after = MEMORY.free().ctx("FREE");
    let r = expect_type(cp, ty::CAPPAGE);
    cx.drop_slot(cp);
    let after = after?;
    ensure!(before - after == 1, "RETYPE CAPPAGE took {} frames", before - after);
    r
}

pub fn create_process_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, ro, p]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        SELF_ASPACE.copy_cap(a, ro, rights::READ).ctx("COPY_CAP")?;
        let before = snapshot()?;
        expect_err(
            ACCOUNT.create_process(ro, p),
            Error::NO_RIGHTS,
            "CREATE_PROCESS in a read-only aspace",
        )?;
        unchanged(before)?;
        ACCOUNT.destroy(a).ctx("DESTROY")
    })
}

pub fn destroyed_not_listed(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, p]| {
        ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS")?;
        Process(p).set_name("ktest-doomed").ctx("SET_NAME")?;
        ensure!(listed("ktest-doomed")?, "new process not listed");
        ACCOUNT.destroy(p).ctx("DESTROY")?;
        ensure!(!listed("ktest-doomed")?, "destroyed process still listed");
        ACCOUNT.destroy(a).ctx("DESTROY aspace")
    })
}

fn listed(name: &str) -> Result<bool, String> {
    let mut index = 0;
    for _ in 0..4096 {
        let p = KERNEL.process_info(index).ctx("PROCESS_INFO")?;
        if p.name_str() == name {
            return Ok(true);
        }
        if p.next == 0 || p.next <= index {
            return Ok(false);
        }
        index = p.next;
    }
    Ok(false)
}

/// ACCT0022: a program loaded from ktest's account and destroyed gives
/// back every frame it took.  The load is made twice and the second one
/// measured: the first may grow ktest's own capability space (the
/// loader's slots come from ktest's allocator, whose cappages and segment
/// tables stay), which depends on what ran before, not on the program.
pub fn program_frames_return(cx: &mut Cx) -> TestResult {
    let elf = cx
        .image
        .as_ref()
        .and_then(|i| i.find("hello"))
        .ok_or("no hello")?
        .data;
    for measured in [false, true] {
        let before = info(ACCOUNT)?;
        let spec = keep_loader::Spec {
            name: "ktest-hello",
            elf,
            arg0: 0,
            arg1: 0,
            grants: &[],
            blob: None,
        };
        let mut loader = keep_loader::Loader::new(&mut cx.slots);
        let child = loader.load(&spec).ctx("load")?;
        let during = info(ACCOUNT)?;
        let st = child.process.start().and_then(|_| child.process.wait());
        loader.destroy(child).ctx("destroy")?;
        let after = info(ACCOUNT)?;
        let st = st.ctx("run")?;
        ensure!(
            st.state == keep_abi::state::EXITED,
            "hello without a console: {st}"
        );
        ensure!(during.1 > before.1, "loading used no account frames");
        ensure!(!measured || after == before, "account {before:?} -> {after:?} after DESTROY");
    }
    Ok(())
}

// ---- wrappers --------------------------------------------------------------

pub fn wrapper_forwards(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [w]| {
        let (f0, _) = info(ACCOUNT)?;
        ACCOUNT
            .create_wrapper(slot::CONSOLE, w, rights::READ)
            .ctx("CREATE_WRAPPER")?;
        let (f1, _) = info(ACCOUNT)?;
        ensure!(f0 - f1 == 1, "a wrapper took {} frames", f0 - f1);
        expect_type(w, ty::WRAPPER)?;
        console_works(w)?;
        expect_err(Console(w).write(b"x"), Error::NO_RIGHTS, "WRITE via READ wrapper")?;
        ACCOUNT.destroy(w).ctx("DESTROY")?;
        let (f2, _) = info(ACCOUNT)?;
        ensure!(f2 == f0, "DESTROY gave back {} of 1 frames", f2 - f1);
        expect_err(
            Console(w).read(&mut [0; 1], true),
            Error::STALE,
            "READ via revoked wrapper",
        )
    })
}

pub fn wrapper_revoke(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [w, copy, ww, v, wcopy_in_v]| {
        let all = rights::ALL;
        ACCOUNT.create_wrapper(slot::CONSOLE, w, all).ctx("wrap")?;
        SELF_ASPACE.copy_cap(w, copy, 0).ctx("copy")?;
        ACCOUNT.create_wrapper(w, ww, all).ctx("wrap the wrapper")?;
        ACCOUNT.create_wrapper(slot::CONSOLE, v, all).ctx("second wrapper")?;
        ACCOUNT.create_wrapper(v, wcopy_in_v, all).ctx("wrap the second")?;
        for s in [w, copy, ww, v, wcopy_in_v] {
            console_works(s)?;
        }
        ACCOUNT.destroy(w).ctx("DESTROY (revoke) the first")?;
        for (s, what) in [(w, "wrapper"), (copy, "copy"), (ww, "wrapper of it")] {
            expect_err(
                Console(s).read(&mut [0; 1], true),
                Error::STALE,
                &format!("{what} after revocation"),
            )?;
        }
        console_works(slot::CONSOLE)?;
        console_works(v)?;
        console_works(wcopy_in_v)?;
        let _ = ACCOUNT.destroy(ww);
        let _ = ACCOUNT.destroy(wcopy_in_v);
        ACCOUNT.destroy(v).ctx("DESTROY the second")
    })
}

pub fn wrapper_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [empty, d]| {
        let before = snapshot()?;
        let a = ACCOUNT;
        expect_err(a.create_wrapper(empty, d, 1), Error::INVALID_CAP, "empty")?;
        expect_err(a.create_wrapper(HOLE, d, 1), Error::NO_CAPPAGE, "hole")?;
        expect_err(a.create_wrapper(BEYOND, d, 1), Error::OUT_OF_RANGE, "beyond")?;
        expect_err(
            a.create_wrapper(slot::CONSOLE, d, 0x100),
            Error::INVALID_ARG,
            "bad rights",
        )?;
        expect_err(
            a.create_wrapper(slot::CONSOLE, HOLE, 1),
            Error::NO_CAPPAGE,
            "dest in a hole",
        )?;
        unchanged(before)?;
        expect_type(d, ty::NULL)
    })
}

pub fn wrapper_depth(cx: &mut Cx) -> TestResult {
    let depth = keep_abi::layout::WRAPPER_DEPTH as usize;
    with_slots(cx, |_, s: [u64; 8]| {
        let mut inner = slot::CONSOLE;
        let mut made = 0;
        let r = (|| {
            for (i, &w) in s.iter().enumerate().take(depth + 1) {
                ACCOUNT
                    .create_wrapper(inner, w, rights::ALL)
                    .ctx("CREATE_WRAPPER")?;
                made = i + 1;
                inner = w;
                if i + 1 <= depth {
                    console_works(w).map_err(|e| format!("{} deep: {e}", i + 1))?;
                } else {
                    expect_err(
                        Console(w).read(&mut [0; 1], true),
                        Error::INVALID_CAP,
                        &format!("{} wrappers deep", i + 1),
                    )?;
                }
            }
            Ok(())
        })();
        for &w in s[..made].iter().rev() {
            let _ = ACCOUNT.destroy(w);
        }
        r
    })
}

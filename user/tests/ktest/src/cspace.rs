//! The sparse capability space: lookups of every kind (valid, null slot,
//! no cappage, out of range) and the address-space methods on it, weak
//! capabilities, and the tag's reserved bits.  A failed lookup must leave
//! everything as it was.

use alloc::format;
use alloc::string::String;

use keep_abi::{
    ACCOUNT, Aspace, CONSOLE, Console, Error, MEMORY, SELF_ASPACE, SELF_PROCESS, Tag, invoke,
    layout, method, rights, slot, syscall, tag, ty,
};
use keep_loader::Loader;

use crate::{Ctx, Cx, TestResult, expect_code, expect_err, with_slots};

/// A capability address in ktest's space with no cappage behind it.
pub const HOLE: u64 = 0x300;
/// The first address beyond the capability space.
pub const BEYOND: u64 = layout::CAP_SPACE_SLOTS;

/// The pool's free frames and the account's (free, used) frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pool: u64,
    account: (u64, u64),
}

pub fn snapshot() -> Result<Snapshot, String> {
    Ok(Snapshot {
        pool: MEMORY.free().ctx("FREE")?,
        account: ACCOUNT.info().ctx("ACCOUNT.INFO")?,
    })
}

pub fn unchanged(before: Snapshot) -> TestResult {
    let after = snapshot()?;
    ensure!(after == before, "state changed: {before:?} -> {after:?}");
    Ok(())
}

/// The console capability at `s` works: a non-blocking read without input.
pub fn console_works(s: u64) -> TestResult {
    expect_err(
        Console(s).read(&mut [0; 1], true),
        Error::WOULD_BLOCK,
        "non-blocking READ",
    )
}

/// Type and rights of ktest's slot `s`.
pub fn identify(s: u64) -> Result<(u64, u64), String> {
    let i = SELF_ASPACE.identify_cap(s).ctx("IDENTIFY_CAP")?;
    Ok((i.ty, i.rights))
}

pub fn expect_type(s: u64, want: u64) -> TestResult {
    let (t, _) = identify(s)?;
    ensure!(
        t == want,
        "slot {s:#x} holds {}, want {}",
        keep_abi::type_name(t),
        keep_abi::type_name(want)
    );
    Ok(())
}

pub fn valid_lookup(_: &mut Cx) -> TestResult {
    let (t, r) = identify(slot::CONSOLE)?;
    ensure!(t == ty::CONSOLE, "CONSOLE slot holds type {t}");
    ensure!(
        r & (rights::READ | rights::WRITE) == rights::READ | rights::WRITE,
        "console rights {r:#x}"
    );
    let i = SELF_ASPACE.identify_cap(slot::SELF_ASPACE).ctx("IDENTIFY")?;
    ensure!(i.ty == ty::ASPACE && i.live, "own aspace: {i:?}");
    let i = SELF_ASPACE.identify_cap(slot::TIMER).ctx("IDENTIFY")?;
    ensure!(i.ty == ty::TIMER, "TIMER slot: {i:?}");
    let i = SELF_ASPACE.identify_cap(slot::ACCOUNT).ctx("IDENTIFY")?;
    ensure!(i.ty == ty::ACCOUNT, "ACCOUNT slot: {i:?}");
    console_works(slot::CONSOLE)
}

pub fn null_slot(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s]| {
        let before = snapshot()?;
        expect_err(invoke(s, 1, [0; 4]), Error::INVALID_CAP, "invoke null slot")?;
        expect_err(
            ACCOUNT.create_process(s, s + 1),
            Error::INVALID_CAP,
            "CREATE_PROCESS with a null aspace",
        )?;
        expect_type(s, ty::NULL)?;
        unchanged(before)
    })
}

pub fn no_cappage(_: &mut Cx) -> TestResult {
    let before = snapshot()?;
    expect_err(invoke(HOLE, 1, [0; 4]), Error::NO_CAPPAGE, "invoke")?;
    expect_err(
        SELF_ASPACE.identify_cap(HOLE),
        Error::NO_CAPPAGE,
        "IDENTIFY_CAP",
    )?;
    expect_err(MEMORY.retype(ty::PAGE, HOLE), Error::NO_CAPPAGE, "RETYPE into it")?;
    expect_err(
        ACCOUNT.create_aspace(HOLE + 5),
        Error::NO_CAPPAGE,
        "CREATE_ASPACE into it",
    )?;
    unchanged(before)?;
    console_works(slot::CONSOLE)
}

pub fn out_of_range(_: &mut Cx) -> TestResult {
    let before = snapshot()?;
    for a in [BEYOND, BEYOND + 5, 1 << 40, 1 << 63, u64::MAX] {
        let what = format!("invoke {a:#x}");
        expect_err(invoke(a, 1, [0; 4]), Error::OUT_OF_RANGE, &what)?;
    }
    expect_err(
        SELF_ASPACE.identify_cap(BEYOND),
        Error::OUT_OF_RANGE,
        "IDENTIFY_CAP",
    )?;
    expect_err(
        MEMORY.retype(ty::PAGE, BEYOND + 16),
        Error::OUT_OF_RANGE,
        "RETYPE",
    )?;
    expect_err(
        SELF_ASPACE.copy_cap(slot::CONSOLE, BEYOND, 0),
        Error::OUT_OF_RANGE,
        "COPY_CAP",
    )?;
    unchanged(before)
}

/// Maps a fresh cappage of ktest's at `addr`; returns the slot of its
/// capability.
fn map_cappage_at(cx: &mut Cx, addr: u64) -> Result<u64, String> {
    let cp = cx.retype(ty::CAPPAGE)?;
    if let Err(e) = SELF_ASPACE.map_cappage(cp, addr) {
        cx.drop_slot(cp);
        return Err(format!("MAP_CAPPAGE at {addr:#x} failed: {e}"));
    }
    Ok(cp)
}

pub fn sparse(cx: &mut Cx) -> TestResult {
    let places = [0x1000, 0x7fff_ff00, 0x8000_0000, BEYOND - 256];
    let mut cps = [0u64; 4];
    let mut r = Ok(());
    for (i, &a) in places.iter().enumerate() {
        match map_cappage_at(cx, a) {
            Ok(cp) => cps[i] = cp,
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    if r.is_ok() {
        r = (|| {
            for &a in &places {
                for s in [a, a + 17, a + 255] {
                    SELF_ASPACE
                        .copy_cap(slot::CONSOLE, s, 0)
                        .ctx(&format!("COPY_CAP to {s:#x}"))?;
                    console_works(s)?;
                }
            }
            let last = BEYOND - 1;
            expect_type(last, ty::CONSOLE)?;
            // Next to the mapped cappages there is still nothing.
            for a in [0x1100, 0x7fff_fe00, 0x8000_0100] {
                expect_err(invoke(a, 1, [0; 4]), Error::NO_CAPPAGE, &format!("{a:#x}"))?;
            }
            expect_err(invoke(BEYOND, 1, [0; 4]), Error::OUT_OF_RANGE, "2^32")
        })();
    }
    for (i, &a) in places.iter().enumerate() {
        if cps[i] != 0 {
            for s in [a, a + 17, a + 255] {
                let _ = SELF_ASPACE.delete_cap(s);
            }
            let _ = SELF_ASPACE.unmap_cappage(a);
            cx.drop_slot(cps[i]);
        }
    }
    r?;
    expect_err(
        invoke(BEYOND - 1, 1, [0; 4]),
        Error::NO_CAPPAGE,
        "last slot after UNMAP_CAPPAGE",
    )
}

pub fn map_cappage_as_data(cx: &mut Cx) -> TestResult {
    let v = crate::caps::SCRATCH;
    let cp = cx.retype(ty::CAPPAGE)?;
    let r = (|| {
        expect_err(
            SELF_ASPACE.map(cp, v, rights::READ),
            Error::WRONG_TYPE,
            "MAP of a cappage",
        )?;
        expect_err(SELF_ASPACE.lookup(v), Error::NOT_MAPPED, "LOOKUP after it")
    })();
    cx.drop_slot(cp);
    r
}

pub fn map_page_as_cappage(cx: &mut Cx) -> TestResult {
    let p = cx.retype(ty::PAGE)?;
    let r = (|| {
        expect_err(
            SELF_ASPACE.map_cappage(p, 0x2000),
            Error::WRONG_TYPE,
            "MAP_CAPPAGE of a page",
        )?;
        expect_err(
            SELF_ASPACE.identify_cap(0x2000),
            Error::NO_CAPPAGE,
            "IDENTIFY after it",
        )
    })();
    cx.drop_slot(p);
    r
}

pub fn map_cappage_errors(cx: &mut Cx) -> TestResult {
    let cp = cx.retype(ty::CAPPAGE)?;
    let r = with_slots(cx, |_, [empty]| {
        let before = snapshot()?;
        let cases = [
            (cp, 0x2001, Error::INVALID_ARG, "unaligned"),
            (cp, BEYOND, Error::OUT_OF_RANGE, "at 2^32"),
            (cp, 0, Error::EXISTS, "over the cappage at 0"),
            (empty, 0x2000, Error::INVALID_CAP, "of an empty slot"),
            (HOLE, 0x2000, Error::NO_CAPPAGE, "of a slot with no cappage"),
            (BEYOND + 1, 0x2000, Error::OUT_OF_RANGE, "of a slot beyond"),
            (slot::CONSOLE, 0x2000, Error::WRONG_TYPE, "of the console"),
        ];
        for (c, a, want, what) in cases {
            let r = SELF_ASPACE.map_cappage(c, a);
            expect_err(r, want, &format!("MAP_CAPPAGE {what}"))?;
        }
        expect_err(
            SELF_ASPACE.identify_cap(0x2000),
            Error::NO_CAPPAGE,
            "0x2000 after the failures",
        )?;
        unchanged(before)
    });
    cx.drop_slot(cp);
    r
}

pub fn unmap_cappage(cx: &mut Cx) -> TestResult {
    expect_err(
        SELF_ASPACE.unmap_cappage(0x2000),
        Error::NOT_MAPPED,
        "UNMAP_CAPPAGE of nothing",
    )?;
    expect_err(
        SELF_ASPACE.unmap_cappage(0x2080),
        Error::INVALID_ARG,
        "unaligned UNMAP_CAPPAGE",
    )?;
    expect_err(
        SELF_ASPACE.unmap_cappage(BEYOND),
        Error::OUT_OF_RANGE,
        "UNMAP_CAPPAGE at 2^32",
    )?;
    // Capabilities stay in an unmapped cappage and reappear where it is
    // mapped again.
    let cp = map_cappage_at(cx, 0x2000)?;
    let r = (|| {
        SELF_ASPACE
            .copy_cap(slot::CONSOLE, 0x2001, 0)
            .ctx("COPY_CAP")?;
        SELF_ASPACE.unmap_cappage(0x2000).ctx("UNMAP_CAPPAGE")?;
        expect_err(invoke(0x2001, 1, [0; 4]), Error::NO_CAPPAGE, "after unmap")?;
        SELF_ASPACE.map_cappage(cp, 0x5000).ctx("MAP_CAPPAGE again")?;
        console_works(0x5001)?;
        SELF_ASPACE.delete_cap(0x5001).ctx("DELETE_CAP")?;
        SELF_ASPACE.unmap_cappage(0x5000).ctx("UNMAP_CAPPAGE")
    })();
    cx.drop_slot(cp);
    r
}

pub fn copy_cap(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, b, empty]| {
        SELF_ASPACE
            .copy_cap(slot::CONSOLE, a, rights::READ)
            .ctx("COPY_CAP")?;
        let (t, r) = identify(a)?;
        ensure!(t == ty::CONSOLE && r == rights::READ, "copy: type {t}, rights {r:#x}");
        expect_err(Console(a).write(b"x"), Error::NO_RIGHTS, "WRITE via READ copy")?;
        console_works(a)?;
        SELF_ASPACE.copy_cap(slot::CONSOLE, b, 0).ctx("COPY_CAP 0")?;
        let (same, identical) = SELF_ASPACE
            .compare_cap(slot::CONSOLE, b)
            .ctx("COMPARE_CAP")?;
        ensure!(same && identical, "mask 0 copy differs: {same} {identical}");
        expect_err(
            SELF_ASPACE.copy_cap(slot::CONSOLE, a, 0),
            Error::EXISTS,
            "COPY_CAP onto a full slot",
        )?;
        expect_err(
            SELF_ASPACE.copy_cap(empty, a, 0),
            Error::INVALID_CAP,
            "COPY_CAP from an empty slot",
        )?;
        expect_err(
            SELF_ASPACE.copy_cap(slot::CONSOLE, empty, 0x100),
            Error::INVALID_ARG,
            "COPY_CAP with a bad mask",
        )?;
        expect_err(
            SELF_ASPACE.copy_cap(HOLE, empty, 0),
            Error::NO_CAPPAGE,
            "COPY_CAP from a hole",
        )?;
        expect_type(empty, ty::NULL)
    })
}

pub fn move_cap(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [a, b]| {
        SELF_ASPACE.copy_cap(slot::CONSOLE, a, 0).ctx("COPY_CAP")?;
        SELF_ASPACE.move_cap(a, b).ctx("MOVE_CAP")?;
        expect_type(a, ty::NULL)?;
        console_works(b)?;
        expect_err(SELF_ASPACE.move_cap(b, b), Error::EXISTS, "MOVE_CAP onto itself")?;
        console_works(b)?;
        expect_err(SELF_ASPACE.move_cap(a, b), Error::INVALID_CAP, "MOVE_CAP of empty")?;
        expect_err(
            SELF_ASPACE.move_cap(b, HOLE),
            Error::NO_CAPPAGE,
            "MOVE_CAP into a hole",
        )?;
        expect_err(
            SELF_ASPACE.move_cap(b, BEYOND),
            Error::OUT_OF_RANGE,
            "MOVE_CAP beyond",
        )?;
        console_works(b)
    })
}

pub fn identify_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s]| {
        let i = SELF_ASPACE.identify_cap(s).ctx("IDENTIFY null")?;
        ensure!(i.ty == ty::NULL, "null slot: {i:?}");
        expect_err(SELF_ASPACE.identify_cap(HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(SELF_ASPACE.identify_cap(u64::MAX), Error::OUT_OF_RANGE, "max")
    })
}

pub fn compare_cap(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [r, snd]| {
        SELF_ASPACE
            .copy_cap(slot::CONSOLE, r, rights::READ)
            .ctx("COPY_CAP")?;
        let c = |a, b| SELF_ASPACE.compare_cap(a, b).ctx("COMPARE_CAP");
        ensure!(c(slot::CONSOLE, r)? == (true, false), "console vs read-only copy");
        ensure!(
            c(slot::CONSOLE, slot::KERNEL)? == (false, false),
            "console vs kernel"
        );
        SELF_PROCESS.mint(snd, 7, 0).ctx("MINT")?;
        ensure!(
            c(slot::SELF_PROCESS, snd)?.0,
            "a sender and its process are not the same object"
        );
        expect_err(SELF_ASPACE.compare_cap(r, HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(
            SELF_ASPACE.compare_cap(BEYOND, r),
            Error::OUT_OF_RANGE,
            "beyond",
        )
    })
}

pub fn delete_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s]| {
        expect_err(SELF_ASPACE.delete_cap(s), Error::INVALID_CAP, "empty")?;
        expect_err(SELF_ASPACE.delete_cap(HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(SELF_ASPACE.delete_cap(BEYOND), Error::OUT_OF_RANGE, "beyond")
    })
}

pub fn extract_cap(cx: &mut Cx) -> TestResult {
    let child = Loader::new(&mut cx.slots).create().ctx("create child")?;
    let r = with_slots(cx, |_, [d, e]| {
        child
            .aspace
            .extract_cap(slot::SELF_PROCESS, d, 0)
            .ctx("EXTRACT_CAP")?;
        let (same, _) = SELF_ASPACE
            .compare_cap(d, child.process.0)
            .ctx("COMPARE_CAP")?;
        ensure!(same, "extracted SELF_PROCESS is not the child's process");
        expect_err(
            child.aspace.extract_cap(slot::SELF_ASPACE, d, 0),
            Error::EXISTS,
            "EXTRACT_CAP onto a full slot",
        )?;
        expect_err(
            child.aspace.extract_cap(20, e, 0),
            Error::INVALID_CAP,
            "EXTRACT_CAP of an empty slot",
        )?;
        expect_err(
            child.aspace.extract_cap(HOLE, e, 0),
            Error::NO_CAPPAGE,
            "EXTRACT_CAP from a hole of the child",
        )?;
        expect_err(
            child.aspace.extract_cap(slot::SELF_ASPACE, BEYOND, 0),
            Error::OUT_OF_RANGE,
            "EXTRACT_CAP to beyond",
        )?;
        expect_type(e, ty::NULL)
    });
    let _ = Loader::new(&mut cx.slots).destroy(child);
    r
}

pub fn insert_cap_errors(cx: &mut Cx) -> TestResult {
    let child = Loader::new(&mut cx.slots).create().ctx("create child")?;
    let r = (|| {
        let a = child.aspace;
        expect_err(
            a.insert_cap(slot::CONSOLE, HOLE, 0),
            Error::NO_CAPPAGE,
            "INSERT_CAP into a hole of the child",
        )?;
        expect_err(
            a.insert_cap(slot::CONSOLE, BEYOND, 0),
            Error::OUT_OF_RANGE,
            "INSERT_CAP beyond",
        )?;
        expect_err(
            a.insert_cap(slot::CONSOLE, 20, 0x100),
            Error::INVALID_ARG,
            "INSERT_CAP with a bad mask",
        )?;
        expect_err(
            a.insert_cap(HOLE, 20, 0),
            Error::NO_CAPPAGE,
            "INSERT_CAP from a hole",
        )?;
        a.insert_cap(slot::CONSOLE, 20, rights::READ)
            .ctx("INSERT_CAP")?;
        let i = a.identify_cap(20).ctx("IDENTIFY in the child")?;
        ensure!(
            i.ty == ty::CONSOLE && i.rights == rights::READ,
            "inserted: {i:?}"
        );
        Ok(())
    })();
    let _ = Loader::new(&mut cx.slots).destroy(child);
    r
}

pub fn aspace_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [ro, wo]| {
        SELF_ASPACE
            .copy_cap(slot::SELF_ASPACE, ro, rights::READ)
            .ctx("COPY_CAP READ")?;
        SELF_ASPACE
            .copy_cap(slot::SELF_ASPACE, wo, rights::WRITE)
            .ctx("COPY_CAP WRITE")?;
        let p = cx.retype(ty::PAGE)?;
        let r = (|| {
            let v = crate::caps::SCRATCH;
            expect_err(Aspace(ro).map(p, v, rights::READ), Error::NO_RIGHTS, "MAP")?;
            expect_err(Aspace(ro).unmap(v), Error::NO_RIGHTS, "UNMAP")?;
            expect_err(
                Aspace(ro).copy_cap(slot::CONSOLE, 40, 0),
                Error::NO_RIGHTS,
                "COPY_CAP",
            )?;
            Aspace(ro).lookup(0x400000).ctx("LOOKUP through READ")?;
            expect_err(Aspace(wo).lookup(0x400000), Error::NO_RIGHTS, "LOOKUP")?;
            expect_err(
                Aspace(wo).identify_cap(slot::CONSOLE),
                Error::NO_RIGHTS,
                "IDENTIFY_CAP",
            )?;
            expect_err(SELF_ASPACE.lookup(v), Error::NOT_MAPPED, "nothing mapped")
        })();
        cx.drop_slot(p);
        r
    })
}

pub fn weak_no_map(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [w]| {
        SELF_ASPACE
            .copy_cap(slot::SELF_ASPACE, w, rights::ALL | rights::WEAK)
            .ctx("COPY_CAP weak")?;
        let (t, r) = identify(w)?;
        ensure!(
            t == ty::ASPACE && r & rights::WEAK != 0 && r & rights::WRITE == 0,
            "weak copy: type {t}, rights {r:#x}"
        );
        let p = cx.retype(ty::PAGE)?;
        let v = crate::caps::SCRATCH;
        let res = expect_err(
            Aspace(w).map(p, v, rights::READ),
            Error::NO_RIGHTS,
            "MAP through a weak aspace",
        )
        .and_then(|_| expect_err(SELF_ASPACE.lookup(v), Error::NOT_MAPPED, "LOOKUP"))
        .and_then(|_| Aspace(w).lookup(0x400000).ctx("LOOKUP through weak").map(drop));
        cx.drop_slot(p);
        res
    })
}

pub fn weak_extract(cx: &mut Cx) -> TestResult {
    let child = Loader::new(&mut cx.slots).create().ctx("create child")?;
    let r = with_slots(cx, |cx, [w, page, cp, snd, o1, o2, o3, o4, o5]| {
        let a = child.aspace;
        MEMORY.retype(ty::PAGE, page).ctx("RETYPE PAGE")?;
        MEMORY.retype(ty::CAPPAGE, cp).ctx("RETYPE CAPPAGE")?;
        child.process.mint(snd, 1, 0).ctx("MINT")?;
        for (src, dest) in [(page, 20), (cp, 21), (snd, 22)] {
            a.insert_cap(src, dest, 0).ctx("INSERT_CAP")?;
        }
        SELF_ASPACE
            .copy_cap(a.0, w, rights::ALL | rights::WEAK)
            .ctx("COPY_CAP weak")?;
        let weak = Aspace(w);
        let cases = [
            (20, o1, "page"),
            (21, o2, "cappage"),
            (slot::SELF_ASPACE, o3, "aspace"),
            (slot::SELF_PROCESS, o4, "process"),
            (22, o5, "sender"),
        ];
        for (src, dest, what) in cases {
            weak.extract_cap(src, dest, 0)
                .ctx(&format!("EXTRACT_CAP {what}"))?;
        }
        let (t, r) = identify(o1)?;
        ensure!(
            t == ty::PAGE && r & !rights::WEAK == rights::READ,
            "page: type {t}, rights {r:#x}"
        );
        for (s, want, what) in [(o2, ty::CAPPAGE, "cappage"), (o3, ty::ASPACE, "aspace")] {
            let (t, r) = identify(s)?;
            ensure!(
                t == want && r & rights::WEAK != 0 && r & rights::WRITE == 0,
                "{what}: type {t}, rights {r:#x}"
            );
        }
        expect_type(o4, ty::NULL)?;
        expect_type(o5, ty::NULL)?;
        // The weak page maps read-only, never writable.
        let v = crate::caps::SCRATCH;
        expect_err(
            SELF_ASPACE.map(o1, v, rights::READ | rights::WRITE),
            Error::NO_RIGHTS,
            "MAP RW of the weak page",
        )?;
        let _ = cx;
        Ok(())
    });
    let _ = Loader::new(&mut cx.slots).destroy(child);
    r
}

pub fn reserved_tag_bits(_: &mut Cx) -> TestResult {
    for bit in [23, 29, 30, 32, 48, 63] {
        let t = method::console::READ | 1 << bit;
        let mut b = [0u8; 1];
        let (e, _, _, _) = syscall(slot::CONSOLE, t, [b.as_mut_ptr() as u64, 1, 1, 0], 0);
        expect_code(e, Error::INVALID_ARG, &format!("tag bit {bit}"))?;
    }
    console_works(slot::CONSOLE)
}

pub fn kernel_object_modes(_: &mut Cx) -> TestResult {
    for mode in [tag::MODE_SEND, tag::MODE_SEND_RECV] {
        let t = Tag::new(method::timer::NOW)
            .with_mode(mode)
            .send_nonblocking()
            .recv_nonblocking();
        let (e, _, _, _) = syscall(slot::TIMER, t.0, [0; 4], 0);
        expect_code(e, Error::INVALID_METHOD, &format!("TIMER.NOW in mode {mode}"))?;
    }
    let _ = CONSOLE;
    Ok(())
}

pub fn tag_counts(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [snd]| {
        SELF_PROCESS.mint(snd, 0, 0).ctx("MINT")?;
        let t = Tag::new(1)
            .with_caps(5)
            .with_mode(tag::MODE_SEND)
            .send_nonblocking();
        let (e, _, _, _) = syscall(snd, t.0, [0; 4], 0);
        expect_code(e, Error::INVALID_ARG, "5 capabilities")?;
        let t = Tag::new(1)
            .with_slots(6)
            .with_mode(tag::MODE_RECV)
            .recv_nonblocking();
        let (e, _, _, _) = syscall(0, t.0, [0; 4], 0);
        expect_code(e, Error::INVALID_ARG, "6 receive slots")?;
        // Well-formed (five distinct slots that exist), nothing queued.
        keep_rt::ipc_buffer().set_recv_slots(&[0xb, 0xc, 0xd, 0xe, 0xf]);
        let t = Tag::new(1)
            .with_slots(5)
            .with_mode(tag::MODE_RECV)
            .recv_nonblocking();
        let (e, _, _, _) = syscall(0, t.0, [0; 4], 0);
        expect_code(e, Error::WOULD_BLOCK, "5 receive slots, nothing queued")
    })
}

//! Error paths of capabilities, the console, RETYPE and mappings.  Each
//! test checks the error code and, where it can be observed, that the
//! failed invocation changed nothing.

use alloc::string::String;
use alloc::vec;

use keep_abi::{
    ACCOUNT, Console, Error, KERNEL, MEMORY, METHOD_RIGHTS, SELF_ASPACE, info, invoke, invoke_raw,
    layout, method, rights, slot, ty,
};

use crate::fault::KERNEL_ADDR;
use crate::{Ctx, Cx, TestResult, expect_err};

/// Where these tests map pages in ktest's own space.
pub const SCRATCH: u64 = 0x0000_5000_0000_0000;
const R: u64 = rights::READ;
const RW: u64 = rights::READ | rights::WRITE;

fn take_slot(cx: &mut Cx) -> Result<u64, String> {
    cx.slots.alloc().ok_or_else(|| "no free slot".into())
}

fn drop_slot(cx: &mut Cx, s: u64) {
    let _ = SELF_ASPACE.delete_cap(s);
    cx.slots.free(s);
}

fn new_page(cx: &mut Cx) -> Result<u64, String> {
    let s = take_slot(cx)?;
    if let Err(e) = MEMORY.retype(ty::PAGE, s) {
        cx.slots.free(s);
        return Err(alloc::format!("RETYPE PAGE failed: {e}"));
    }
    Ok(s)
}

/// Runs `f` with fresh page capabilities, then unmaps `vaddrs` and drops
/// the pages whether `f` passed or not.
fn with_pages<const N: usize>(
    cx: &mut Cx,
    vaddrs: &[u64],
    f: impl FnOnce([u64; N]) -> TestResult,
) -> TestResult {
    let mut pages = [0u64; N];
    for i in 0..N {
        match new_page(cx) {
            Ok(p) => pages[i] = p,
            Err(e) => {
                pages[..i].iter().for_each(|&p| drop_slot(cx, p));
                return Err(e);
            }
        }
    }
    let r = f(pages);
    for &v in vaddrs {
        let _ = SELF_ASPACE.unmap(v);
    }
    pages.iter().for_each(|&p| drop_slot(cx, p));
    r
}

/// The console capability in `s` is intact: a non-blocking read with no
/// input pending answers WOULD_BLOCK.
fn console_works(s: u64) -> TestResult {
    expect_err(
        Console(s).read(&mut [0; 1], true),
        Error::WOULD_BLOCK,
        "non-blocking READ",
    )
}

pub fn empty_slot(cx: &mut Cx) -> TestResult {
    let s = take_slot(cx)?;
    let r = expect_err(
        invoke(s, 1, [0; 4]),
        Error::INVALID_CAP,
        "invoke empty slot",
    );
    cx.slots.free(s);
    r
}

/// Slot 256 is the first of the second cappage, which ktest never maps.
pub fn slot_256(_: &mut Cx) -> TestResult {
    let r = invoke(layout::CAPPAGE_SLOTS, method::kernel::INFO, [0; 4]);
    expect_err(r, Error::NO_CAPPAGE, "invoke slot 256")
}

pub fn slot_max(_: &mut Cx) -> TestResult {
    let r = invoke(u64::MAX, method::kernel::INFO, [0; 4]);
    expect_err(r, Error::OUT_OF_RANGE, "invoke slot u64::MAX")
}

pub fn slot_null(_: &mut Cx) -> TestResult {
    expect_err(invoke(0, 1, [0; 4]), Error::INVALID_CAP, "invoke slot 0")
}

pub fn unknown_method(_: &mut Cx) -> TestResult {
    for m in [0, 3, 0xffff] {
        let r = invoke(slot::CONSOLE, m, [0; 4]);
        expect_err(
            r,
            Error::INVALID_METHOD,
            &alloc::format!("CONSOLE method {m}"),
        )?;
    }
    Ok(())
}

pub fn reduced_rights(cx: &mut Cx) -> TestResult {
    let s = take_slot(cx)?;
    let r = (|| {
        SELF_ASPACE
            .insert_cap(slot::CONSOLE, s, R)
            .ctx("INSERT_CAP")?;
        expect_err(
            Console(s).write(b"x"),
            Error::NO_RIGHTS,
            "WRITE through a read-only copy",
        )?;
        console_works(s)?;
        console_works(slot::CONSOLE)
    })();
    drop_slot(cx, s);
    r
}

pub fn delete(cx: &mut Cx) -> TestResult {
    let s = take_slot(cx)?;
    let r = (|| {
        SELF_ASPACE
            .insert_cap(slot::CONSOLE, s, rights::ALL)
            .ctx("INSERT_CAP")?;
        console_works(s)?;
        SELF_ASPACE.delete_cap(s).ctx("DELETE_CAP")?;
        expect_err(
            Console(s).read(&mut [0; 1], true),
            Error::INVALID_CAP,
            "READ after delete",
        )?;
        console_works(slot::CONSOLE)
    })();
    drop_slot(cx, s);
    r
}

pub fn insert_occupied(_: &mut Cx) -> TestResult {
    let r = SELF_ASPACE.insert_cap(slot::CONSOLE, slot::KERNEL, rights::ALL);
    expect_err(r, Error::EXISTS, "INSERT_CAP over KERNEL")?;
    KERNEL
        .info(info::VERSION)
        .ctx("KERNEL still there: INFO")
        .map(drop)
}

pub fn insert_empty(cx: &mut Cx) -> TestResult {
    let (a, b) = (take_slot(cx)?, take_slot(cx)?);
    let r = (|| {
        expect_err(
            SELF_ASPACE.insert_cap(a, b, rights::ALL),
            Error::INVALID_CAP,
            "INSERT_CAP",
        )?;
        expect_err(
            invoke(b, 1, [0; 4]),
            Error::INVALID_CAP,
            "destination after the failure",
        )
    })();
    cx.slots.free(a);
    cx.slots.free(b);
    r
}

pub fn page_methods(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[], |[p]| {
        expect_err(invoke(p, 1, [0; 4]), Error::INVALID_METHOD, "invoke a page")
    })
}

pub fn info_bad_key(_: &mut Cx) -> TestResult {
    expect_err(KERNEL.info(1000), Error::INVALID_ARG, "INFO(1000)")
}

fn write_raw(ptr: u64, len: u64) -> keep_abi::Result<[u64; 4]> {
    invoke(slot::CONSOLE, method::console::WRITE, [ptr, len, 0, 0])
}

pub fn write_kernel_ptr(_: &mut Cx) -> TestResult {
    expect_err(
        write_raw(KERNEL_ADDR, 16),
        Error::FAULT,
        "WRITE from a kernel address",
    )
}

pub fn write_unmapped(_: &mut Cx) -> TestResult {
    expect_err(
        write_raw(0x5555_0000_0000, 16),
        Error::FAULT,
        "WRITE from an unmapped address",
    )
}

pub fn write_too_long(_: &mut Cx) -> TestResult {
    let buf = vec![b'x'; 4097];
    let r = write_raw(buf.as_ptr() as u64, buf.len() as u64);
    expect_err(r, Error::INVALID_ARG, "WRITE of 4097 bytes")
}

pub fn read_nonblocking(_: &mut Cx) -> TestResult {
    console_works(slot::CONSOLE)
}

fn free_frames() -> Result<u64, String> {
    MEMORY.free().ctx("FREE")
}

fn expect_free(before: u64) -> TestResult {
    let after = free_frames()?;
    ensure!(after == before, "FREE went from {before} to {after}");
    Ok(())
}

pub fn retype_bad_type(cx: &mut Cx) -> TestResult {
    let s = take_slot(cx)?;
    let r = (|| {
        let before = free_frames()?;
        let others = [ty::NULL, ty::CONSOLE, ty::KERNEL, ty::MEMORY, ty::ASPACE, ty::PROCESS];
        let more = [ty::SENDER, ty::RETURN, ty::WRAPPER, ty::ACCOUNT, ty::TIMER, 99, u64::MAX];
        for t in others.into_iter().chain(more) {
            let r = MEMORY.retype(t, s);
            expect_err(r, Error::INVALID_ARG, &alloc::format!("RETYPE type {t}"))?;
        }
        expect_free(before)?;
        expect_err(
            invoke(s, 1, [0; 4]),
            Error::INVALID_CAP,
            "slot after the failures",
        )
    })();
    drop_slot(cx, s);
    r
}

pub fn retype_occupied(_: &mut Cx) -> TestResult {
    let before = free_frames()?;
    let r = MEMORY.retype(ty::PAGE, slot::CONSOLE);
    expect_err(r, Error::EXISTS, "RETYPE into the console's slot")?;
    expect_free(before)?;
    console_works(slot::CONSOLE)
}

pub fn retype_one_frame(cx: &mut Cx) -> TestResult {
    let before = free_frames()?;
    with_pages(cx, &[], |[_]| {
        let after = free_frames()?;
        ensure!(after + 1 == before, "FREE went from {before} to {after}");
        Ok(())
    })
}

pub fn retype_zeroed(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[p]| {
        SELF_ASPACE.map(p, SCRATCH, RW).ctx("MAP")?;
        // SAFETY: the page is mapped at SCRATCH, readable, for this test only.
        let bytes = unsafe { core::slice::from_raw_parts(SCRATCH as *const u64, 512) };
        let nonzero = bytes.iter().position(|&w| w != 0);
        ensure!(
            nonzero.is_none(),
            "word {} of a new page is not zero",
            nonzero.unwrap()
        );
        Ok(())
    })
}

/// Processes are made by ACCOUNT.CREATE_PROCESS now; the address space
/// argument is still type-checked.
pub fn retype_process_wrong(cx: &mut Cx) -> TestResult {
    let s = take_slot(cx)?;
    let r = (|| {
        let before = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
        let r = ACCOUNT.create_process(slot::CONSOLE, s);
        expect_err(r, Error::WRONG_TYPE, "CREATE_PROCESS in the console")?;
        let after = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
        ensure!(before == after, "account went from {before:?} to {after:?}");
        Ok(())
    })();
    drop_slot(cx, s);
    r
}

fn expect_unmapped(vaddr: u64) -> TestResult {
    expect_err(
        SELF_ASPACE.lookup(vaddr),
        Error::NOT_MAPPED,
        "LOOKUP after the failure",
    )
}

pub fn map_wx(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[p]| {
        let r = SELF_ASPACE.map(p, SCRATCH, rights::ALL);
        expect_err(r, Error::INVALID_ARG, "MAP R|W|X")?;
        expect_unmapped(SCRATCH)
    })
}

pub fn map_kernel(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[], |[p]| {
        for v in [layout::USER_TOP, 0xffff_8000_0000_0000, KERNEL_ADDR] {
            let r = SELF_ASPACE.map(p, v, R);
            expect_err(r, Error::INVALID_ARG, &alloc::format!("MAP at {v:#x}"))?;
        }
        Ok(())
    })
}

pub fn map_unaligned(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[p]| {
        expect_err(
            SELF_ASPACE.map(p, SCRATCH + 8, R),
            Error::INVALID_ARG,
            "MAP at +8",
        )?;
        expect_unmapped(SCRATCH)
    })
}

pub fn map_no_read(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[p]| {
        for r in [0, rights::WRITE, rights::EXEC] {
            let what = alloc::format!("MAP with rights {r:#x}");
            expect_err(SELF_ASPACE.map(p, SCRATCH, r), Error::INVALID_ARG, &what)?;
        }
        expect_unmapped(SCRATCH)
    })
}

pub fn map_exists(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[a, b]| {
        SELF_ASPACE.map(a, SCRATCH, R).ctx("MAP")?;
        let before = SELF_ASPACE.lookup(SCRATCH).ctx("LOOKUP")?;
        expect_err(SELF_ASPACE.map(b, SCRATCH, RW), Error::EXISTS, "second MAP")?;
        let after = SELF_ASPACE.lookup(SCRATCH).ctx("LOOKUP")?;
        ensure!(
            before == after && before.0 == R,
            "mapping changed from {before:x?} to {after:x?}"
        );
        Ok(())
    })
}

pub fn unmap_nothing(_: &mut Cx) -> TestResult {
    let v = SCRATCH + 0x10_0000;
    expect_err(SELF_ASPACE.unmap(v), Error::NOT_MAPPED, "UNMAP")
}

pub fn map_wrong_type(_: &mut Cx) -> TestResult {
    let r = SELF_ASPACE.map(slot::CONSOLE, SCRATCH, R);
    expect_err(r, Error::WRONG_TYPE, "MAP of the console")?;
    expect_unmapped(SCRATCH)
}

pub fn map_shared(cx: &mut Cx) -> TestResult {
    let (a, b) = (SCRATCH, SCRATCH + 0x1000);
    with_pages(cx, &[a, b], |[p]| {
        SELF_ASPACE.map(p, a, RW).ctx("MAP writable")?;
        SELF_ASPACE.map(p, b, R).ctx("MAP read-only")?;
        let fa = SELF_ASPACE.lookup(a).ctx("LOOKUP")?.1;
        let fb = SELF_ASPACE.lookup(b).ctx("LOOKUP")?.1;
        ensure!(fa == fb, "frames differ: {fa:#x} and {fb:#x}");
        // SAFETY: both addresses map the same page, mapped just above.
        let seen = unsafe {
            ((a + 0x123) as *mut u8).write_volatile(0x5a);
            ((b + 0x123) as *const u8).read_volatile()
        };
        ensure!(seen == 0x5a, "read {seen:#x} through the second mapping");
        Ok(())
    })
}

pub fn map_beyond_rights(cx: &mut Cx) -> TestResult {
    let weak = take_slot(cx)?;
    let r = with_pages(cx, &[SCRATCH], |[p]| {
        SELF_ASPACE.insert_cap(p, weak, R).ctx("INSERT_CAP")?;
        expect_err(
            SELF_ASPACE.map(weak, SCRATCH, RW),
            Error::NO_RIGHTS,
            "MAP RW of a read-only page",
        )?;
        expect_unmapped(SCRATCH)?;
        SELF_ASPACE
            .map(weak, SCRATCH, R)
            .ctx("MAP R of a read-only page")
    });
    drop_slot(cx, weak);
    r
}

pub fn lookup_unmapped(cx: &mut Cx) -> TestResult {
    with_pages(cx, &[SCRATCH], |[p]| {
        SELF_ASPACE.map(p, SCRATCH, RW).ctx("MAP")?;
        let (r, _) = SELF_ASPACE.lookup(SCRATCH).ctx("LOOKUP")?;
        ensure!(r == RW, "LOOKUP gives rights {r:#x}, want {RW:#x}");
        SELF_ASPACE.unmap(SCRATCH).ctx("UNMAP")?;
        expect_err(
            SELF_ASPACE.lookup(SCRATCH),
            Error::NOT_MAPPED,
            "LOOKUP after UNMAP",
        )
    })
}

/// Every method of every kernel object ktest holds refuses a copy of the
/// capability without the right abi/keep.toml gives the method
/// (METHOD_RIGHTS, the table the kernel's dispatch checks), and changes
/// nothing: the arguments are zero, so a method that ran would act.
pub fn method_rights(cx: &mut Cx) -> TestResult {
    let [copy, note, dom] = cx.slots::<3>()?;
    let made = (
        ACCOUNT.create_notification(note).is_ok(),
        ACCOUNT.create_dma_domain(dom).is_ok(),
    );
    let held = [
        slot::CONSOLE,
        slot::KERNEL,
        slot::MEMORY,
        slot::ACCOUNT,
        slot::SELF_ASPACE,
        slot::SELF_PROCESS,
        slot::TIMER,
        slot::DEVMEM,
        slot::IOPORT,
        slot::INTERRUPT,
        note,
        dom,
    ];
    let r = (|| {
        let mut checked = 0;
        for &cap in &held {
            let Ok(info) = SELF_ASPACE.identify_cap(cap) else {
                continue; // a slot ktest was not given
            };
            for &(_, m, need, name) in METHOD_RIGHTS.iter().filter(|e| e.0 == info.ty) {
                SELF_ASPACE
                    .insert_cap(cap, copy, rights::ALL & !need)
                    .ctx("INSERT_CAP")?;
                let (e, _) = invoke_raw(copy, m, [0; 4]);
                SELF_ASPACE.delete_cap(copy).ctx("DELETE_CAP")?;
                if e != keep_abi::err::NO_RIGHTS {
                    return Err(alloc::format!(
                        "{name} without its right: got {}, want NO_RIGHTS",
                        keep_abi::error_name(e)
                    ));
                }
                checked += 1;
            }
        }
        if checked < 40 {
            return Err(alloc::format!("only {checked} methods checked"));
        }
        Ok(())
    })();
    if made.0 {
        let _ = ACCOUNT.destroy(note);
    }
    if made.1 {
        let _ = ACCOUNT.destroy(dom);
    }
    cx.drop_slots(&[copy, note, dom]);
    r
}

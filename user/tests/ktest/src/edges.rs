//! Error paths and access widths that the other modules leave out: word
//! and double-word I/O port accesses, unknown methods of the device
//! objects, rights outside ALL and WEAK in a transfer between spaces, and
//! a call whose receive slots name no slot.  Each checks the answer and
//! that nothing changed.

use keep_abi::{
    DEVMEM, Error, IOPORT, SELF_ASPACE, SELF_PROCESS, Sender, Tag, err, invoke, method, rights, slot,
};

use crate::cspace::{HOLE, snapshot, unchanged};
use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

/// PCI configuration address and data ports (type 1 access); Keep's PCI
/// server uses the memory-mapped configuration space, not these.
const PCI_ADDR: u64 = 0xcf8;
const PCI_DATA: u64 = 0xcfc;

/// DEV0017: IOPORT OUT and IN of 2 and 4 bytes.  A word written at the
/// CMOS index port sets the index (low byte) and writes the data port
/// (high byte): a byte read of that index gives the high byte, and a word
/// read gives it in its high byte.  A double word written at 0xcf8 (the
/// PCI address register) reads back as written, and the data port then
/// gives the host bridge's vendor (Intel, 0x8086).  An unknown method of
/// IOPORT or DEVMEM is INVALID_METHOD and touches nothing.
pub fn ioport_widths(_: &mut Cx) -> TestResult {
    for v in [0x3cu64, 0xc3] {
        IOPORT.write(0x70, 2, v << 8 | 0x42).ctx("OUT word to CMOS")?;
        IOPORT.write(0x70, 1, 0x42).ctx("OUT index")?;
        let b = IOPORT.read(0x71, 1).ctx("IN byte")?;
        ensure!(b == v, "CMOS 0x42 reads {b:#x} after a word OUT of {v:#x}");
        IOPORT.write(0x70, 1, 0x42).ctx("OUT index")?;
        let w = IOPORT.read(0x70, 2).ctx("IN word")?;
        ensure!(w >> 8 == v && w <= 0xffff, "word IN of CMOS 0x42 gives {w:#x}, want {v:#x} in its high byte");
    }
    let old = IOPORT.read(PCI_ADDR, 4).ctx("IN dword of the PCI address")?;
    let r = (|| {
        IOPORT.write(PCI_ADDR, 4, 0x8000_0000).ctx("OUT dword")?;
        let a = IOPORT.read(PCI_ADDR, 4).ctx("IN dword")?;
        ensure!(a == 0x8000_0000, "the PCI address register reads {a:#x}, wrote 0x80000000");
        let id = IOPORT.read(PCI_DATA, 4).ctx("IN dword of the PCI data")?;
        ensure!(id & 0xffff == 0x8086, "00:00.0's vendor and device {id:#x}, want vendor 0x8086");
        Ok(())
    })();
    IOPORT.write(PCI_ADDR, 4, old).ctx("restore the PCI address")?;
    r?;
    let before = IOPORT.info().ctx("INFO")?;
    for m in [5u64, 99] {
        expect_err(invoke(slot::IOPORT, m, [0x70, 1, 0, 0]), Error::INVALID_METHOD, &alloc::format!("IOPORT method {m}"))?;
    }
    ensure!(IOPORT.info().ctx("INFO")? == before, "IOPORT's range changed");
    let before = DEVMEM.info().ctx("DEVMEM.INFO")?;
    for m in [method::devmem::RESTRICT + 1, 77] {
        expect_err(invoke(slot::DEVMEM, m, [0; 4]), Error::INVALID_METHOD, &alloc::format!("DEVMEM method {m}"))?;
    }
    ensure!(DEVMEM.info().ctx("DEVMEM.INFO")? == before, "DEVMEM's range changed");
    Ok(())
}

/// CSP0018: INSERT_CAP and EXTRACT_CAP with rights bits outside ALL and
/// WEAK are INVALID_ARG: the destination slot stays empty, the source
/// keeps its capability, and the pool and account are as they were.
pub fn transfer_bad_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [src, dst]| {
        SELF_ASPACE.copy_cap(slot::CONSOLE, src, rights::ALL).ctx("COPY")?;
        let before = snapshot()?;
        for bad in [1u64 << 20, 1 << 63, u64::MAX] {
            let what = alloc::format!("rights {bad:#x}");
            expect_err(SELF_ASPACE.insert_cap(src, dst, bad), Error::INVALID_ARG, &alloc::format!("INSERT_CAP {what}"))?;
            expect_err(SELF_ASPACE.extract_cap(src, dst, bad), Error::INVALID_ARG, &alloc::format!("EXTRACT_CAP {what}"))?;
            let d = SELF_ASPACE.identify_cap(dst).ctx("IDENTIFY the destination")?.ty;
            ensure!(d == keep_abi::ty::NULL, "the destination holds type {d} after a refused transfer ({what})");
        }
        let t = SELF_ASPACE.identify_cap(src).ctx("IDENTIFY source")?.ty;
        ensure!(t == keep_abi::ty::CONSOLE, "the source holds type {t} after the refusals");
        unchanged(before)?;
        // The same with good rights works: the check is of the rights alone.
        SELF_ASPACE.insert_cap(src, dst, rights::READ).ctx("INSERT_CAP with READ")?;
        let c = SELF_ASPACE.identify_cap(dst).ctx("IDENTIFY the copy")?;
        let (t, r) = (c.ty, c.rights);
        ensure!(t == keep_abi::ty::CONSOLE && r == rights::READ, "the copy: type {t}, rights {r:#x}");
        Ok(())
    })
}

/// IPC0040: a CALL whose receive slots name a hole in the capability space
/// (NO_CAPPAGE) or an address past it (OUT_OF_RANGE) is refused before it
/// is sent: ktest's own queue stays empty (a non-blocking receive finds
/// nothing) and the same call with a good slot goes through.
pub fn call_bad_recv_slots(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [snd, good]| {
        SELF_PROCESS.mint(snd, 0x5e1f, rights::WRITE | rights::CALL).ctx("MINT")?;
        let buf = keep_rt::ipc_buffer();
        for (bad, want) in [(HOLE, err::NO_CAPPAGE), (1u64 << 33, err::OUT_OF_RANGE)] {
            let n = buf.set_recv_slots(&[bad]);
            let m = Sender(snd).call(Tag::new(0x40).with_slots(n), [1, 2, 3, 4]);
            ensure!(m.err == want, "CALL with receive slot {bad:#x}: {}, want {}", keep_abi::error_name(m.err),
                keep_abi::error_name(want));
            let r = keep_abi::recv(Tag::new(0).recv_nonblocking(), 0);
            ensure!(r.err == err::WOULD_BLOCK, "after the refused call a receive gives {}", keep_abi::error_name(r.err));
        }
        // A good slot: the call is sent; ktest, not receiving, would wait
        // for itself, so a non-blocking SEND with the same slot shows the
        // check passes (WOULD_BLOCK: no one receives).
        let n = buf.set_recv_slots(&[good]);
        let m = Sender(snd).call(Tag::new(0x40).with_slots(n).send_nonblocking(), [0; 4]);
        ensure!(m.err == err::WOULD_BLOCK, "non-blocking CALL with a good receive slot: {}", keep_abi::error_name(m.err));
        Ok(())
    })
}

fn ntfn_waiter(a: &keep_loader::thread::Args) -> u64 {
    match keep_abi::Notification(a.words[0]).wait() {
        Ok(bits) => bits,
        Err(e) => 1 << 40 | e.0,
    }
}

/// NTFN0007: a notification through a wrapper of it (the general path,
/// not the fast one): SIGNAL ORs the bits in (POLL through the
/// notification takes them), WAIT while another process waits is IN_USE
/// and leaves that waiter waiting, which the next SIGNAL wakes with its
/// bits.
pub fn ntfn_through_wrapper(cx: &mut Cx) -> TestResult {
    use keep_abi::{ACCOUNT, Notification};
    with_slots(cx, |cx, [n, w]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let r = (|| {
            ACCOUNT.create_wrapper(n, w, rights::READ | rights::WRITE).ctx("CREATE_WRAPPER")?;
            Notification(w).signal(0x60).ctx("SIGNAL through the wrapper")?;
            ensure!(Notification(n).poll().ctx("POLL")? == 0x60, "the wrapper's SIGNAL did not set the bits");
            expect_err(Notification(w).signal(0), Error::INVALID_ARG, "SIGNAL of no bits through the wrapper")?;
            let t = keep_loader::thread::spawn(&mut cx.slots, "ntfn-wrap", 12, ntfn_waiter, &[n])?;
            let r = (|| {
                ensure!(Notification(n).info().ctx("INFO")?.1, "the thread does not wait");
                expect_err(Notification(w).wait(), Error::IN_USE, "WAIT through the wrapper beside a waiter")?;
                ensure!(Notification(n).info().ctx("INFO")?.1, "the waiter stopped waiting after the refused WAIT");
                Notification(w).signal(0x5).ctx("SIGNAL through the wrapper")?;
                let st = crate::ended_within(t.process, 3000).ok_or("the waiter did not end in 3 s")?;
                ensure!(st.code == 0x5, "the waiter got {:#x}, want 0x5", st.code);
                Ok(())
            })();
            t.kill(&mut cx.slots);
            r
        })();
        let _ = ACCOUNT.destroy(w);
        let _ = ACCOUNT.destroy(n);
        r
    })
}

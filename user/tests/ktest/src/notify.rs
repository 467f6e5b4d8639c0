//! Notifications (docs/kernel-manual.md, "Notifications"): SIGNAL, WAIT,
//! POLL, BIND and UNBIND, their rights and errors, waiters and bound
//! receivers, and what destroying either end does.

use keep_abi::{
    ACCOUNT, Error, INTERRUPT, Interrupt, Notification, Process, SELF_ASPACE, SELF_PROCESS, TIMER, Tag, label, layout, recv,
    rights, slot, state,
};
use keep_loader::thread;

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

/// An exit code that says the call failed with the error in the low bits.
const FAILED: u64 = 1 << 40;
const PAYLOAD: u64 = 0x7e57;

fn waiter(a: &thread::Args) -> u64 {
    match Notification(a.words[0]).wait() {
        Ok(bits) => bits,
        Err(e) => FAILED | e.0,
    }
}

/// One receive (with a time-out): label << 32 | word 0's low 24 bits, bit
/// 24 set if the payload was PAYLOAD; FAILED | the error.
fn receiver(_: &thread::Args) -> u64 {
    let m = recv(Tag::new(0), 3000);
    if m.err != 0 {
        return FAILED | m.err;
    }
    m.tag.label() << 32 | (m.words[0] & 0xff_ffff) | ((m.payload == PAYLOAD) as u64) << 24
}

/// Waits up to 3 s for `t` to end; its exit code.
fn exit_code(cx: &mut Cx, t: thread::Thread) -> Result<u64, alloc::string::String> {
    let st = crate::ended_within(t.process, 3000);
    t.kill(&mut cx.slots);
    let st = st.ok_or("the thread did not end in 3 s")?;
    ensure!(st.state == state::EXITED, "the thread ended in state {}", st.state);
    Ok(st.code)
}

/// NTFN0001: bits OR in and are taken once; rights; errors; destroyed.
pub fn basics(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [n, r, w]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        expect_err(ACCOUNT.create_notification(n), Error::EXISTS, "CREATE_NOTIFICATION into a full slot")?;
        ensure!(nt.poll().ctx("POLL")? == 0, "a new notification has bits");
        expect_err(nt.signal(0), Error::INVALID_ARG, "SIGNAL of no bits")?;
        nt.signal(0b0101).ctx("SIGNAL")?;
        nt.signal(0b1100).ctx("SIGNAL")?;
        ensure!(nt.info().ctx("INFO")? == (0b1101, false, false), "INFO {:?}", nt.info());
        ensure!(nt.poll().ctx("POLL")? == 0b1101, "POLL took other bits");
        ensure!(nt.poll().ctx("POLL")? == 0, "POLL did not clear the word");
        nt.signal(1 << 63).ctx("SIGNAL bit 63")?;
        ensure!(nt.wait().ctx("WAIT")? == 1 << 63, "WAIT with a bit set");
        // A READ copy waits and polls, cannot signal; a WRITE copy the reverse.
        SELF_ASPACE.copy_cap(n, r, rights::READ).ctx("COPY READ")?;
        SELF_ASPACE.copy_cap(n, w, rights::WRITE).ctx("COPY WRITE")?;
        expect_err(Notification(r).signal(1), Error::NO_RIGHTS, "SIGNAL through a READ copy")?;
        expect_err(Notification(r).bind(w), Error::NO_RIGHTS, "BIND through a READ copy")?;
        expect_err(Notification(r).unbind(), Error::NO_RIGHTS, "UNBIND through a READ copy")?;
        expect_err(Notification(w).poll(), Error::NO_RIGHTS, "POLL through a WRITE copy")?;
        expect_err(Notification(w).wait(), Error::NO_RIGHTS, "WAIT through a WRITE copy")?;
        expect_err(Notification(w).info(), Error::NO_RIGHTS, "INFO through a WRITE copy")?;
        Notification(w).signal(2).ctx("SIGNAL through the WRITE copy")?;
        ensure!(Notification(r).poll().ctx("POLL through the READ copy")? == 2, "the copies are not one notification");
        let m = keep_abi::invoke(n, 7, [0; 4]);
        ensure!(m == Err(Error::INVALID_METHOD), "method 7: {m:?}");
        expect_err(nt.unbind(), Error::NOT_MAPPED, "UNBIND of nothing bound")?;
        expect_err(nt.bind(r), Error::WRONG_TYPE, "BIND to a notification, not a SENDER")?;
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        expect_err(Notification(r).poll(), Error::STALE, "POLL of a destroyed notification")?;
        expect_err(Notification(w).signal(1), Error::STALE, "SIGNAL of a destroyed notification")?;
        for s in [n, r, w] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        Ok(())
    })
}

/// NTFN0002: a waiter in another process: woken by SIGNAL with the bits,
/// a second waiter IN_USE, a killed waiter forgotten, a destroyed
/// notification STALE for its waiter.
pub fn waiters(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [n]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        // Above ktest's priority: it runs at once and waits.
        let t = thread::spawn(&mut cx.slots, "ntfn-wait", 12, waiter, &[n])?;
        ensure!(nt.info().ctx("INFO")?.1, "the thread does not wait");
        expect_err(nt.wait(), Error::IN_USE, "a second WAIT")?;
        nt.signal(0x2a).ctx("SIGNAL")?;
        let code = exit_code(cx, t)?;
        ensure!(code == 0x2a, "the waiter got {code:#x}, want 0x2a");
        ensure!(nt.poll().ctx("POLL")? == 0, "the waiter's bits are still in the word");
        // A waiter killed: forgotten; the next signal stays in the word.
        let t = thread::spawn(&mut cx.slots, "ntfn-wait", 12, waiter, &[n])?;
        ensure!(nt.info().ctx("INFO")?.1, "the thread does not wait");
        t.kill(&mut cx.slots);
        ensure!(!nt.info().ctx("INFO")?.1, "a killed waiter still waits");
        nt.signal(4).ctx("SIGNAL")?;
        ensure!(nt.poll().ctx("POLL")? == 4, "the signal after the waiter died was lost");
        // The notification destroyed under its waiter: STALE.
        let t = thread::spawn(&mut cx.slots, "ntfn-wait", 12, waiter, &[n])?;
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        let code = exit_code(cx, t)?;
        ensure!(code == FAILED | Error::STALE.0, "the waiter of a destroyed notification got {code:#x}");
        let _ = SELF_ASPACE.delete_cap(n);
        Ok(())
    })
}

/// NTFN0006: a signal completes its waiter's WAIT where it waits (the bits
/// are WAIT's result; the call is not started again): the waiter gets them
/// even though its capability has moved to another slot meanwhile, which a
/// WAIT started again would find empty (INVALID_CAP); the word is left
/// clear.  A waiter above ktest's priority (it runs at once) and at ktest's
/// own (it runs when ktest yields).
pub fn completed_in_place(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [n, m]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        for (prio, bits) in [(12u64, 0x51u64), (10, 1 << 62)] {
            let t = thread::spawn(&mut cx.slots, "ntfn-wait", prio, waiter, &[n])?;
            let mut waits = false;
            for _ in 0..100 {
                waits = Notification(n).info().ctx("INFO")?.1;
                if waits {
                    break;
                }
                SELF_PROCESS.yield_now().ctx("YIELD")?;
            }
            ensure!(waits, "the thread at priority {prio} does not wait");
            SELF_ASPACE.move_cap(n, m).ctx("MOVE the waiter's capability")?;
            Notification(m).signal(bits).ctx("SIGNAL")?;
            let code = exit_code(cx, t)?;
            ensure!(code == bits, "the waiter at priority {prio} got {code:#x}, want {bits:#x}");
            ensure!(Notification(m).poll().ctx("POLL")? == 0, "the waiter's bits are still in the word");
            SELF_ASPACE.move_cap(m, n).ctx("MOVE back")?;
        }
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        let _ = SELF_ASPACE.delete_cap(n);
        Ok(())
    })
}

/// Set by `flag_waiter` once its WAIT has returned.
static WOKEN: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

fn flag_waiter(a: &thread::Args) -> u64 {
    let r = Notification(a.words[0]).wait();
    WOKEN.store(1, core::sync::atomic::Ordering::SeqCst);
    match r {
        Ok(bits) => bits,
        Err(e) => FAILED | e.0,
    }
}

fn spinner(_: &thread::Args) -> u64 {
    loop {
        core::hint::spin_loop();
    }
}

/// NTFN0009: the notification fast path (kernel/ipc/fastpath.c) leaves
/// the scheduling as the general path does: a signal to a waiter above
/// ktest's priority runs the waiter before SIGNAL returns; at or below it,
/// ktest goes on first (the waiter has not run when SIGNAL returns).  The
/// bits arrive each time; a SIGNAL without a waiter, a WAIT finding bits,
/// and the signals to the waiters above and below are the fast path's
/// (FASTPATH_NTFN counts them; other processes may add to it).  A WAIT
/// beside a waiter is IN_USE even when another process could run next.
pub fn fast_path(cx: &mut Cx) -> TestResult {
    use core::sync::atomic::Ordering::SeqCst;
    use keep_abi::{KERNEL, info};
    with_slots(cx, |cx, [n]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        let before = KERNEL.info(info::FASTPATH_NTFN).ctx("INFO FASTPATH_NTFN")?;
        nt.signal(0b110).ctx("SIGNAL without a waiter")?;
        ensure!(nt.wait().ctx("WAIT with bits set")? == 0b110, "WAIT took other bits");
        let after = KERNEL.info(info::FASTPATH_NTFN).ctx("INFO FASTPATH_NTFN")?;
        ensure!(after >= before + 2, "the fast path completed {} of SIGNAL and WAIT", after - before);
        for (prio, bits) in [(12u64, 0x10u64), (10, 0x20), (8, 1 << 63)] {
            WOKEN.store(0, SeqCst);
            let t = thread::spawn(&mut cx.slots, "ntfn-fast", prio, flag_waiter, &[n])?;
            let mut waits = false;
            for _ in 0..200 {
                waits = nt.info().ctx("INFO")?.1;
                if waits {
                    break;
                }
                // A thread below ktest runs only while ktest is blocked.
                if prio < 10 {
                    TIMER.sleep(1).ctx("SLEEP")?
                } else {
                    SELF_PROCESS.yield_now().ctx("YIELD")?
                }
            }
            ensure!(waits, "the thread at priority {prio} does not wait");
            let before = KERNEL.info(info::FASTPATH_NTFN).ctx("INFO FASTPATH_NTFN")?;
            nt.signal(bits).ctx("SIGNAL")?;
            let woken = WOKEN.load(SeqCst);
            let after = KERNEL.info(info::FASTPATH_NTFN).ctx("INFO FASTPATH_NTFN")?;
            ensure!(
                woken == (prio > 10) as u64,
                "the waiter at priority {prio} {} before SIGNAL returned",
                if woken == 1 { "ran" } else { "had not run" }
            );
            // At ktest's priority the general path takes it when no slice is armed.
            ensure!(prio == 10 || after > before, "the signal to the waiter at priority {prio} took the general path");
            let code = exit_code(cx, t)?;
            ensure!(code == bits, "the waiter at priority {prio} got {code:#x}, want {bits:#x}");
            ensure!(nt.poll().ctx("POLL")? == 0, "the waiter's bits are still in the word");
        }
        // A WAIT beside a waiter is IN_USE, though a process below ktest
        // (alone at its priority) could run at once; the waiter waits on.
        let t = thread::spawn(&mut cx.slots, "ntfn-fast", 12, flag_waiter, &[n])?;
        ensure!(nt.info().ctx("INFO")?.1, "the thread does not wait");
        let spin = thread::spawn(&mut cx.slots, "ntfn-spin", 9, spinner, &[])?;
        let r = nt.wait();
        spin.kill(&mut cx.slots);
        expect_err(r, Error::IN_USE, "a WAIT beside a waiter")?;
        ensure!(nt.info().ctx("INFO")?.1, "the waiter does not wait any more");
        nt.signal(0x80).ctx("SIGNAL")?;
        let code = exit_code(cx, t)?;
        ensure!(code == 0x80, "the waiter got {code:#x}, want 0x80");
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        let _ = SELF_ASPACE.delete_cap(n);
        Ok(())
    })
}

static SIGNALS_TAKEN: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Waits again and again, counting the signals taken, until bit 63 comes.
fn counting_waiter(a: &thread::Args) -> u64 {
    loop {
        match Notification(a.words[0]).wait() {
            Ok(bits) => {
                SIGNALS_TAKEN.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
                if bits >> 63 != 0 {
                    return 0;
                }
            }
            Err(e) => return FAILED | e.0,
        }
    }
}

/// CPUTIME0002: the notification fast path's direct switches (a SIGNAL to
/// a waiter above ktest, the waiter's blocking WAIT back to ktest) count
/// CPU time as the general path's switches do: after 200 of each, the
/// waiter's CPU time is above 0 and within the time since it was made, and
/// ktest's own grew by no more than the time the loop took.
pub fn ntfn_fast_path(cx: &mut Cx) -> TestResult {
    use core::sync::atomic::Ordering::SeqCst;
    with_slots(cx, |cx, [n]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        SIGNALS_TAKEN.store(0, SeqCst);
        let t0 = TIMER.now_ms().ctx("NOW")?;
        let t = thread::spawn(&mut cx.slots, "ntfn-cpu", 12, counting_waiter, &[n])?;
        let r = (|| {
            for _ in 0..200 {
                if nt.info().ctx("INFO")?.1 {
                    break;
                }
                SELF_PROCESS.yield_now().ctx("YIELD")?;
            }
            ensure!(nt.info().ctx("INFO")?.1, "the waiter does not wait");
            let mine = SELF_PROCESS.cpu_time().ctx("CPU_TIME(self)")?;
            let t1 = TIMER.now_ms().ctx("NOW")?;
            for i in 1..=200u64 {
                nt.signal(1).ctx("SIGNAL")?;
                let taken = SIGNALS_TAKEN.load(SeqCst);
                ensure!(taken == i, "after {i} signals the waiter above ktest took {taken}");
            }
            let own = SELF_PROCESS.cpu_time().ctx("CPU_TIME(self)")? - mine;
            let loop_ns = (TIMER.now_ms().ctx("NOW")? + 1 - t1) * 1_000_000;
            ensure!(own <= loop_ns, "ktest's CPU time grew by {own} ns in a loop of {loop_ns} ns");
            let ns = t.process.cpu_time().ctx("CPU_TIME")?;
            let since = (TIMER.now_ms().ctx("NOW")? + 1 - t0) * 1_000_000;
            ensure!(ns > 0 && ns <= since, "the waiter's CPU time is {ns} ns, {since} ns after it was made");
            nt.signal(1 << 63).ctx("SIGNAL")?;
            Ok(())
        })();
        let code = exit_code(cx, t);
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        let _ = SELF_ASPACE.delete_cap(n);
        r?;
        ensure!(code? == 0, "the waiter failed");
        Ok(())
    })
}

/// NTFN0003: bound to a process: a signal arrives in its open receive as a
/// NOTIFY message with the SENDER's payload, or, set before, at its next
/// receive; BIND's and UNBIND's errors; a dead process's binding is gone.
pub fn bound(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [n, n2, s]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        ACCOUNT.create_notification(n2).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        // Signalled while the bound process waits in its receive.
        let t = thread::spawn(&mut cx.slots, "ntfn-recv", 12, receiver, &[])?;
        let pr: Process = t.process;
        pr.mint(s, PAYLOAD, rights::WRITE).ctx("MINT")?;
        nt.bind(s).ctx("BIND")?;
        ensure!(nt.info().ctx("INFO")?.2, "not bound");
        expect_err(Notification(n2).bind(s), Error::IN_USE, "a second notification bound to the process")?;
        nt.signal(0x41).ctx("SIGNAL")?;
        let code = exit_code(cx, t)?;
        ensure!(code == label::NOTIFY << 32 | 1 << 24 | 0x41, "the bound receiver got {code:#x}");
        ensure!(nt.poll().ctx("POLL")? == 0, "delivered bits stayed in the word");
        let _ = SELF_ASPACE.delete_cap(s);
        expect_err(nt.unbind(), Error::NOT_MAPPED, "UNBIND after the bound process died")?;
        // Bits set before the receive: they come at once.
        let t = thread::spawn(&mut cx.slots, "ntfn-recv", 3, receiver, &[])?;
        t.process.mint(s, PAYLOAD, rights::WRITE).ctx("MINT")?;
        nt.signal(0x11).ctx("SIGNAL before BIND")?;
        nt.bind(s).ctx("BIND")?;
        nt.signal(0x22).ctx("SIGNAL before the receive")?;
        let code = exit_code(cx, t)?;
        ensure!(code == label::NOTIFY << 32 | 1 << 24 | 0x33, "the receiver got {code:#x}, want NOTIFY with 0x33");
        let _ = SELF_ASPACE.delete_cap(s);
        // UNBIND: signals stay in the word.
        let t = thread::spawn(&mut cx.slots, "ntfn-recv", 3, receiver, &[])?;
        t.process.mint(s, PAYLOAD, rights::WRITE).ctx("MINT")?;
        nt.bind(s).ctx("BIND")?;
        expect_err(Notification(n2).bind(s), Error::IN_USE, "BIND of a bound process")?;
        nt.unbind().ctx("UNBIND")?;
        expect_err(nt.unbind(), Error::NOT_MAPPED, "UNBIND twice")?;
        nt.signal(8).ctx("SIGNAL unbound")?;
        t.kill(&mut cx.slots);
        ensure!(nt.poll().ctx("POLL")? == 8, "an unbound notification lost its bits");
        expect_err(nt.bind(s), Error::STALE, "BIND to a dead process")?;
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        ACCOUNT.destroy(n2).ctx("DESTROY")?;
        for x in [n, n2, s] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} invariants violated");
        Ok(())
    })
}

/// The bits the PIT's interrupt ORs into the notification.
const PIT_BITS: u64 = 0x300;

/// NTFN0004: a real device's interrupt (PIT channel 0, I/O APIC line 2)
/// bound to a notification: it ORs its bits in, waking a WAIT, or arrives
/// as NOTIFY in the receive of the process the notification is bound to;
/// masked until ACK; nothing after UNBIND.
pub fn interrupt(cx: &mut Cx) -> TestResult {
    use crate::device::{PIT_LINE, pit_one_shot, pit_quiet};
    with_slots(cx, |cx, [n, s]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        pit_quiet();
        INTERRUPT.bind_notification(PIT_LINE, n, PIT_BITS).ctx("BIND_NOTIFICATION")?;
        let r: TestResult = (|| {
            // A waiter in another process, woken by the interrupt.
            let t = thread::spawn(&mut cx.slots, "ntfn-wait", 12, waiter, &[n])?;
            ensure!(nt.info().ctx("INFO")?.1, "the thread does not wait");
            pit_one_shot(1193).ctx("PIT")?;
            let code = exit_code(cx, t)?;
            ensure!(code == PIT_BITS, "the waiter got {code:#x}, want {PIT_BITS:#x}");
            // Masked until ACK: a second edge is not seen.
            pit_one_shot(100).ctx("PIT")?;
            TIMER.sleep(30).ctx("SLEEP")?;
            ensure!(nt.poll().ctx("POLL")? == 0, "an interrupt came before ACK");
            INTERRUPT.ack(PIT_LINE).ctx("ACK")?;
            // ktest's own WAIT; then bound to ktest: NOTIFY in its receive.
            pit_one_shot(1193).ctx("PIT")?;
            ensure!(nt.wait().ctx("WAIT")? == PIT_BITS, "WAIT after ACK");
            INTERRUPT.ack(PIT_LINE).ctx("ACK")?;
            SELF_PROCESS.mint(s, PAYLOAD, rights::WRITE).ctx("MINT")?;
            nt.bind(s).ctx("BIND to ktest")?;
            pit_one_shot(1193).ctx("PIT")?;
            let m = recv(Tag::new(0), 2000);
            let _ = nt.unbind();
            m.result().ctx("RECV")?;
            ensure!(m.tag.label() == label::NOTIFY, "label {:#x}, want NOTIFY", m.tag.label());
            ensure!(m.words[0] == PIT_BITS && m.payload == PAYLOAD, "words {:#x?} payload {:#x}", m.words, m.payload);
            INTERRUPT.ack(PIT_LINE).ctx("ACK")?;
            Ok(())
        })();
        pit_quiet();
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        r?;
        // Unbound: the interrupt reaches neither the word nor a receive.
        pit_one_shot(100).ctx("PIT")?;
        expect_err(recv(Tag::new(0), 30).result(), Error::TIMEOUT, "receive after UNBIND")?;
        pit_quiet();
        ensure!(nt.poll().ctx("POLL")? == 0, "an interrupt after UNBIND set bits");
        expect_err(INTERRUPT.unbind(PIT_LINE), Error::BAD_STATE, "UNBIND twice")?;
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        for x in [n, s] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        Ok(())
    })
}

/// NTFN0005: BIND_NOTIFICATION's errors (changing nothing), a binding
/// through a wrapper undone by its destruction, and a destroyed
/// notification's binding dropped.
pub fn interrupt_errors(cx: &mut Cx) -> TestResult {
    use crate::device::{CONSOLE_LINE, PIT_LINE, pit_one_shot, pit_quiet};
    with_slots(cx, |_, [n, ro, s, e, w, ri]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        SELF_ASPACE.copy_cap(n, ro, rights::READ).ctx("COPY READ")?;
        SELF_PROCESS.mint(s, 1, rights::WRITE).ctx("MINT")?;
        let all = layout::IRQ_LINES + layout::MSI_LINES;
        pit_quiet();
        expect_err(INTERRUPT.bind_notification(PIT_LINE, n, 0), Error::INVALID_ARG, "no bits")?;
        expect_err(INTERRUPT.bind_notification(all, n, 1), Error::INVALID_ARG, "line 56")?;
        expect_err(INTERRUPT.bind_notification(CONSOLE_LINE, n, 1), Error::IN_USE, "the console's line")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, s, 1), Error::WRONG_TYPE, "a SENDER, not a notification")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, e, 1), Error::INVALID_CAP, "an empty slot")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, ro, 1), Error::NO_RIGHTS, "a notification without WRITE")?;
        INTERRUPT.restrict(PIT_LINE, 1, ri).ctx("RESTRICT")?;
        SELF_ASPACE.copy_cap(ri, e, rights::READ).ctx("COPY INTERRUPT READ")?;
        expect_err(Interrupt(e).bind_notification(PIT_LINE, n, 1), Error::NO_RIGHTS, "an INTERRUPT without WRITE")?;
        expect_err(Interrupt(ri).bind_notification(5, n, 1), Error::INVALID_ARG, "outside the range")?;
        SELF_ASPACE.delete_cap(e).ctx("DELETE")?;
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "a refused BIND_NOTIFICATION bound the line")?;
        // Bound twice, either way.
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, n, 1), Error::IN_USE, "a line bound to a process")?;
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        Interrupt(ri).bind_notification(PIT_LINE, n, 1).ctx("BIND_NOTIFICATION")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, n, 2), Error::IN_USE, "bound twice")?;
        expect_err(INTERRUPT.bind(PIT_LINE, s), Error::IN_USE, "BIND of a line bound to a notification")?;
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        // Through a wrapper: its destruction unbinds the line.
        ACCOUNT.create_wrapper(slot::INTERRUPT, w, rights::READ | rights::WRITE).ctx("wrap INTERRUPT")?;
        Interrupt(w).bind_notification(PIT_LINE, n, 1).ctx("BIND_NOTIFICATION through the wrapper")?;
        ACCOUNT.destroy(w).ctx("destroy the wrapper")?;
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK after the wrapper went")?;
        pit_one_shot(100).ctx("PIT")?;
        TIMER.sleep(30).ctx("SLEEP")?;
        pit_quiet();
        ensure!(Notification(n).poll().ctx("POLL")? == 0, "an interrupt after the wrapper went set bits");
        // The notification destroyed: the binding goes, the line is free.
        INTERRUPT.bind_notification(PIT_LINE, n, 1).ctx("BIND_NOTIFICATION")?;
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        pit_one_shot(100).ctx("PIT")?;
        TIMER.sleep(30).ctx("SLEEP")?;
        pit_quiet();
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK of a destroyed notification's line")?;
        expect_err(INTERRUPT.bind_notification(PIT_LINE, n, 1), Error::STALE, "BIND_NOTIFICATION of a destroyed notification")?;
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND after the notification went")?;
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        for x in [n, ro, s, w, ri] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} invariants violated");
        Ok(())
    })
}

/// NTFN0008: an exported process loses its binding (UNBIND answers
/// NOT_MAPPED, INFO shows nothing bound) and BIND to it while it is out is
/// BAD_STATE with nothing bound; restored, it can be bound again and the
/// bits arrive in its receive.
pub fn exported(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [n, n2, s, d]| {
        ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
        ACCOUNT.create_notification(n2).ctx("CREATE_NOTIFICATION")?;
        let nt = Notification(n);
        let t = thread::spawn(&mut cx.slots, "ntfn-recv", 3, receiver, &[])?;
        let r = (|| {
            t.process.mint(s, PAYLOAD, rights::WRITE).ctx("MINT")?;
            nt.bind(s).ctx("BIND")?;
            ensure!(nt.info().ctx("INFO")?.2, "not bound");
            ACCOUNT.revoke_process(t.process.0, d).ctx("REVOKE_PROCESS")?;
            ensure!(!nt.info().ctx("INFO")?.2, "still bound to the exported process");
            expect_err(nt.unbind(), Error::NOT_MAPPED, "UNBIND after the process was exported")?;
            expect_err(nt.bind(s), Error::BAD_STATE, "BIND to an exported process")?;
            expect_err(Notification(n2).bind(s), Error::BAD_STATE, "BIND of another notification to an exported process")?;
            ensure!(!nt.info().ctx("INFO")?.2 && !Notification(n2).info().ctx("INFO")?.2, "a refused BIND bound a notification");
            // Bits set while nothing is bound stay in the word.
            nt.signal(0x4).ctx("SIGNAL while out")?;
            ACCOUNT.restore_process(d).ctx("RESTORE_PROCESS")?;
            nt.bind(s).ctx("BIND after RESTORE_PROCESS")?;
            nt.signal(0x10).ctx("SIGNAL")?;
            Ok(())
        })();
        let code = exit_code(cx, t);
        r?;
        let code = code?;
        ensure!(code == label::NOTIFY << 32 | 1 << 24 | 0x14, "the restored receiver got {code:#x}, want NOTIFY with 0x14");
        ACCOUNT.destroy(n).ctx("DESTROY")?;
        ACCOUNT.destroy(n2).ctx("DESTROY")?;
        for x in [n, n2, s, d] {
            let _ = SELF_ASPACE.delete_cap(x);
        }
        let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} invariants violated");
        Ok(())
    })
}

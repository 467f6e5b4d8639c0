//! Process control: names, priorities, STOP/START, state checks.

use alloc::string::String;

use keep_abi::{Error, KERNEL, ProcInfo, SELF_PROCESS, state, state_name};
use keep_loader::Child;

use crate::child::{self, CODE, LOOP, STACK_TOP};
use crate::fault::{EXIT42, KERNEL_ADDR};
use crate::{Ctx, Cx, TestResult, expect_err};

/// The live process called `name` (the one with the highest pid).
fn find(name: &str) -> Result<Option<ProcInfo>, String> {
    let mut found = None;
    let mut index = 0;
    for _ in 0..4096 {
        let p = KERNEL.process_info(index).ctx("PROCESS_INFO")?;
        if p.name_str() == name {
            found = Some(p);
        }
        if p.next == 0 {
            return Ok(found);
        }
        ensure!(
            p.next > index,
            "PROCESS_INFO({index}) gives next {}",
            p.next
        );
        index = p.next;
    }
    Err("PROCESS_INFO does not end".into())
}

/// Runs `f` on a fresh child running `code`, then destroys it.
fn with_child(cx: &mut Cx, code: &[u8], f: impl FnOnce(Child) -> TestResult) -> TestResult {
    let c = child::spawn(cx, code)?;
    let r = f(c);
    child::release(cx, c);
    r
}

fn expect_state(c: Child, want: u64) -> TestResult {
    let s = c.process.status().ctx("STATUS")?;
    ensure!(
        s.state == want,
        "state {}, want {}",
        state_name(s.state),
        state_name(want)
    );
    Ok(())
}

pub fn set_name(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.set_name("ktest-named").ctx("SET_NAME")?;
        let p = find("ktest-named")?.ok_or("no process with the new name")?;
        ensure!(
            p.state == state::CREATED,
            "its state is {}",
            state_name(p.state)
        );
        Ok(())
    })
}

pub fn set_priority(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.set_name("ktest-prio").ctx("SET_NAME")?;
        c.process.set_priority(5).ctx("SET_PRIORITY(5)")?;
        for p in [32, 255, u64::MAX] {
            let what = alloc::format!("SET_PRIORITY({p})");
            expect_err(c.process.set_priority(p), Error::INVALID_ARG, &what)?;
        }
        let p = find("ktest-prio")?.ok_or("child not listed")?;
        ensure!(
            p.priority == 5,
            "priority {} after the failures, want 5",
            p.priority
        );
        Ok(())
    })
}

pub fn stop_start(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.set_name("ktest-loop").ctx("SET_NAME")?;
        c.process.start().ctx("START")?;
        // Let it run for a moment at our priority.
        SELF_PROCESS.yield_now().ctx("YIELD")?;
        expect_state(c, state::RUNNABLE)?;
        c.process.stop().ctx("STOP")?;
        expect_state(c, state::STOPPED)?;
        c.process.start().ctx("START after STOP")?;
        expect_state(c, state::RUNNABLE)?;
        SELF_PROCESS.yield_now().ctx("YIELD")?;
        c.process.stop().ctx("second STOP")?;
        expect_state(c, state::STOPPED)
    })
}

pub fn exit_other(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.start().ctx("START")?;
        SELF_PROCESS.yield_now().ctx("YIELD")?;
        c.process.exit(7).ctx("EXIT(7)")?;
        let s = c.process.wait().ctx("WAIT")?;
        ensure!(
            s.state == state::EXITED && s.code == 7,
            "child {s}; want exit code 7"
        );
        expect_err(c.process.start(), Error::BAD_STATE, "START after EXIT")
    })
}

pub fn start_running(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.set_priority(1).ctx("SET_PRIORITY")?;
        c.process.start().ctx("START")?;
        expect_err(c.process.start(), Error::BAD_STATE, "second START")
    })
}

pub fn wait_self(_: &mut Cx) -> TestResult {
    expect_err(SELF_PROCESS.wait(), Error::BAD_STATE, "WAIT on itself")
}

pub fn set_regs_kernel(cx: &mut Cx) -> TestResult {
    with_child(cx, &EXIT42, |c| {
        let r = c.process.set_regs(KERNEL_ADDR, STACK_TOP, 0, 0);
        expect_err(r, Error::INVALID_ARG, "SET_REGS with a kernel rip")?;
        let r = c.process.set_regs(CODE, KERNEL_ADDR, 0, 0);
        expect_err(r, Error::INVALID_ARG, "SET_REGS with a kernel rsp")?;
        expect_state(c, state::CREATED)?;
        // The registers set by spawn() are unchanged: it runs normally.
        c.process.start().ctx("START")?;
        let s = c.process.wait().ctx("WAIT")?;
        ensure!(
            s.state == state::EXITED && s.code == 42,
            "child {s}; want exit code 42"
        );
        Ok(())
    })
}

pub fn set_regs_running(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| {
        c.process.set_priority(1).ctx("SET_PRIORITY")?;
        c.process.start().ctx("START")?;
        let r = c.process.set_regs(CODE, STACK_TOP, 0, 0);
        expect_err(r, Error::BAD_STATE, "SET_REGS while runnable")?;
        c.process.stop().ctx("STOP")?;
        c.process
            .set_regs(CODE, STACK_TOP, 0, 0)
            .ctx("SET_REGS while stopped")
    })
}

pub fn created(cx: &mut Cx) -> TestResult {
    with_child(cx, LOOP, |c| expect_state(c, state::CREATED))
}

pub fn yield_ok(_: &mut Cx) -> TestResult {
    SELF_PROCESS.yield_now().ctx("YIELD")
}

pub fn lists_self(_: &mut Cx) -> TestResult {
    let p = find("ktest")?.ok_or("no process named ktest")?;
    ensure!(
        p.state == state::RUNNABLE,
        "ktest is listed as {}",
        state_name(p.state)
    );
    Ok(())
}

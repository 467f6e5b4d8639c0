//! The wall clock's server (user/drivers/rtc, docs/devices.md, "The wall
//! clock") as the description starts it: `rtc` from the boot image with
//! only I/O ports 0x70-0x71; its answers and its refusals.

use alloc::format;

use keep_abi::{IOPORT, Sender, TIMER, Tag, slot};
use keep_loader::Grant;
use keep_rtc::{BAD_REQUEST, Client, DENIED, NO_CLOCK, NOW, OK, QUIT};

use crate::drivers::{Running, start_with, stop};
use crate::{Ctx, Cx, TestResult};

/// 2020-01-01 and 2100-01-01 in Unix seconds: a clock QEMU set from the
/// host lies between.
const Y2020: u64 = 1_577_836_800;
const Y2100: u64 = 4_102_444_800;
/// The tag of a name-service sender's payload (keep_system::names::CLIENT):
/// a described client's.
const CLIENT: u64 = 1 << 62;

/// One call with `label` through `cap`: (status, word 1).
fn call(cap: u64, label: u64) -> Result<(u64, u64), alloc::string::String> {
    let m = Sender(cap).call(Tag::new(label), [0; 4]);
    ensure!(m.err == 0, "label {label}: the call failed ({})", keep_abi::Error(m.err));
    Ok((m.words[0], m.words[1]))
}

/// Starts `rtc` with the root task's ports `base`..`base+count` (none for count 0).
fn start(cx: &mut Cx, base: u64, count: u64) -> Result<Running, alloc::string::String> {
    let ports = cx.slot()?;
    let grants = if count == 0 {
        alloc::vec![]
    } else {
        IOPORT.restrict(base, count, ports).ctx("RESTRICT")?;
        alloc::vec![Grant { src: ports, dest: slot::IOPORT, rights: 0 }]
    };
    let r = start_with(cx, "rtc", &grants, 0);
    cx.drop_slot(ports);
    r
}

fn quit(s: Sender) -> TestResult {
    let (st, _) = call(s.0, QUIT)?;
    ensure!(st == OK, "QUIT answered {st}");
    Ok(())
}

pub fn rtc_server(cx: &mut Cx) -> TestResult {
    let r = start(cx, 0x70, 2)?;
    let clock = Client(Sender(r.cap));
    let t0 = clock.now().map_err(|e| format!("NOW: {}", keep_rtc::status_name(e)))?;
    ensure!((Y2020..Y2100).contains(&t0), "NOW answered {t0}, not a time between 2020 and 2100");
    // The clock runs: 1.1 s later it reads one or two seconds more.
    TIMER.sleep(1100).ctx("SLEEP")?;
    let t1 = clock.now().map_err(|e| format!("NOW again: {}", keep_rtc::status_name(e)))?;
    ensure!(t1 > t0 && t1 - t0 <= 3, "1.1 s later NOW answered {t1} after {t0}");
    // Refusals: unknown labels, and QUIT from a described client.
    for label in [0, 3, 99, u64::MAX >> 16] {
        ensure!(call(r.cap, label)?.0 == BAD_REQUEST, "label {label} not answered BAD_REQUEST");
    }
    let client = cx.slot()?;
    r.child.process.mint(client, CLIENT | 3, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
    ensure!(call(client, QUIT)? == (DENIED, 0), "QUIT from a described client not DENIED");
    let (st, t) = call(client, NOW)?;
    ensure!(st == OK && t >= t1, "after the refusals a client's NOW answered ({st}, {t})");
    cx.drop_slot(client);
    stop(cx, r, quit)?;

    // Without the clock's ports (none, or others): NO_CLOCK, and it serves on.
    for (base, count) in [(0, 0), (0x72, 2)] {
        let r = start(cx, base, count)?;
        let got = call(r.cap, NOW)?;
        ensure!(got == (NO_CLOCK, 0), "with ports {base:#x}+{count} NOW answered {got:?}, want NO_CLOCK");
        ensure!(call(r.cap, 77)?.0 == BAD_REQUEST, "with ports {base:#x}+{count}: label 77 not BAD_REQUEST");
        stop(cx, r, quit)?;
    }
    Ok(())
}

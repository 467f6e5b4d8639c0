//! The counter's example client (docs/writing-programs.md): adds 1 to 10
//! to its counter, reads it back and checks the sum.  A program gets no
//! capability it was not given: either whoever starts it puts a sender
//! capability to a counter server in slot `SERVER_SLOT`, or it was started
//! from the system description with `uses=counter` and asks the name
//! service (slot `NAMES_SLOT`) for "counter".  With arg0 = 1 it then asks
//! the server to quit (whose supervisor restarts it); with arg0 = 2 it
//! asks it to crash a second later (the supervisor's test).  With arg0 = 3
//! it checks instead that the name service refuses what it should (an
//! unknown name, an unknown label, init's own requests) and still answers
//! after (exit 0 if so, 1 if not).  With arg0 = 4 it keeps calling for
//! 20 seconds (an ADD every 20 ms, needs the timer), prints a line each
//! second with the calls answered so far, and at the end how many failed
//! (exit 0 if none): the test that a trusted program's IPC goes on while
//! the workhorse beside it is killed and restarted (tools/test_linux.py).
//! With arg0 = 5 it only prints its own budget (PROCESS.BUDGET: the
//! description's `budget=B/P`, tools/test_boot.py) and exits 0.
//!
//! Exit codes: 0 the sum was right; 1 a request failed or the sum was
//! wrong; 2 no server capability in `SERVER_SLOT` and none by name.

#![no_std]
#![no_main]

use keep_abi::{SELF_ASPACE, Sender, TIMER};
use keep_counter::{Client, SERVER_SLOT};
use keep_system::names::NAMES_SLOT;
use keep_rt::println;

keep_rt::entry!(main);

/// Where the sender the name service gives goes.
const LOOKED_UP: u64 = 0xe;

/// The name service's refusals, each printed; whether all were right.
fn name_service_refusals() -> bool {
    use keep_system::names::status;
    let mut ok = true;
    let mut check = |what: &str, got: u64, want: u64| {
        println!("counter-client: name service: {what}: {}", status::name(got));
        ok &= got == want;
    };
    let buf = keep_rt::ipc_buffer();
    let lookup = |name: &str, buf: &mut keep_abi::IpcBuffer| match keep_system::names::lookup_at(NAMES_SLOT, name, LOOKED_UP, buf) {
        Ok(_) => {
            let _ = SELF_ASPACE.delete_cap(LOOKED_UP);
            status::OK
        }
        Err(s) => s,
    };
    check("an unknown name", lookup("nosuch", buf), status::NOT_GRANTED);
    check("an empty name", lookup("", buf), status::NOT_GRANTED);
    let call = |label: u64| {
        let m = Sender(NAMES_SLOT).call(keep_abi::Tag::new(label), [0; 4]);
        if m.err != 0 { 0x100 + m.err } else { m.words[0] }
    };
    check("label 99", call(99), status::BAD_REQUEST);
    check("init's START through a program's capability", call(keep_system::init::req::START), status::BAD_REQUEST);
    check("init's STOP through a program's capability", call(keep_system::init::req::STOP), status::BAD_REQUEST);
    check("a watcher's DIED through a program's capability", call(keep_system::init::req::DIED), status::BAD_REQUEST);
    check("counter, after the refusals", lookup("counter", buf), status::OK);
    ok
}

/// Mode 4: calls for `ms` milliseconds; exit 0 if every call was answered.
fn keep_calling(server: &Client, ms: u64) -> i32 {
    let Ok(start) = TIMER.now_ms() else {
        println!("counter-client: no timer (the description's line needs 'timer')");
        return 2;
    };
    let (mut answered, mut failed, mut next_report) = (0u64, 0u64, start + 1000);
    loop {
        match server.add(1) {
            Ok(_) => answered += 1,
            Err(_) => failed += 1,
        }
        let now = TIMER.now_ms().unwrap_or(start + ms);
        if now >= next_report {
            println!("counter-client: {answered} calls answered, {failed} failed");
            next_report += 1000;
        }
        if now >= start + ms {
            break;
        }
        let _ = TIMER.sleep(20);
    }
    println!("counter-client: kept calling {} s: {answered} answered, {failed} failed", ms / 1000);
    if failed == 0 && answered > 0 { 0 } else { 1 }
}

fn main(quit: u64, _: u64) -> i32 {
    if quit == 3 {
        return if name_service_refusals() { 0 } else { 1 };
    }
    if quit == 5 {
        return match keep_abi::SELF_PROCESS.budget() {
            Ok((b, p, _, _)) => {
                println!("counter-client: budget {b}/{p} us");
                0
            }
            Err(e) => {
                println!("counter-client: BUDGET: {e}");
                1
            }
        };
    }
    // What is in the slot?  IDENTIFY_CAP names its type and whether it is live.
    let given = SELF_ASPACE.identify_cap(SERVER_SLOT);
    let server = if matches!(given, Ok(c) if c.ty == keep_abi::ty::SENDER && c.live) {
        Client(Sender(SERVER_SLOT))
    } else {
        // Started from the system description: ask for the server by name.
        match keep_system::names::lookup_at(NAMES_SLOT, "counter", LOOKED_UP, keep_rt::ipc_buffer()) {
            Ok(s) => Client(s),
            Err(why) => {
                println!(
                    "counter-client: no counter server in slot {SERVER_SLOT:#x}, and none by name ({}); start me with one (docs/writing-programs.md)",
                    keep_system::names::status::name(why)
                );
                return 2;
            }
        }
    };
    if quit == 4 {
        return keep_calling(&server, 20_000);
    }
    // The server keeps this client's counter between runs: start from it.
    let start = match server.get() {
        Ok(v) => v,
        Err((what, code)) => {
            println!("counter-client: GET: {what} ({code})");
            return 1;
        }
    };
    for n in 1..=10 {
        if let Err((what, code)) = server.add(n) {
            println!("counter-client: ADD {n}: {what} ({code})");
            return 1;
        }
    }
    match server.get() {
        Ok(v) if v == start + 55 => {
            println!("counter-client: 1 + 2 + ... + 10 = 55");
            if quit == 1 {
                println!("counter-client: asking the server to quit");
                return if server.quit().is_ok() { 0 } else { 1 };
            }
            if quit == 2 {
                println!("counter-client: asking the server to crash in a second");
                return if server.crash(1000).is_ok() { 0 } else { 1 };
            }
            0
        }
        Ok(v) => {
            println!("counter-client: the counter went from {start} to {v}, not up by 55");
            1
        }
        Err((what, code)) => {
            println!("counter-client: GET: {what} ({code})");
            1
        }
    }
}

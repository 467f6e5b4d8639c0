//! The events the server's loop waits for beside its calls: one
//! notification bound to the server's process (docs/kernel-manual.md,
//! "Notification"), so that they arrive in its one receive as NOTIFY
//! messages (payload [`PAYLOAD`]) and nothing needs polling.  Each source
//! has a bit; whoever signals gets a WRITE copy of the notification
//! ([`give`]).  Made at the first `give`.
//!
//! | bit | source | the loop |
//! |---|---|---|
//! | [`NET`] | the network server: frames in the workhorse's ring, transmit buffers back (sys/inet.rs) | polls the TCP/IP stack, tries waiting calls again |
//! | [`CONSOLE`] | the console multiplexer: input waits on the server's terminal (tty.rs) | reads the terminal while a program runs, tries waiting calls again |
//!
//! The counts of wake-ups that no call caused (`/proc/keepwakes`) are the
//! figure `wh.net.idle_wakeups` (docs/performance.md).

use core::cell::Cell;

use keep_abi::{ACCOUNT, Error, SELF_ASPACE, SELF_PROCESS, rights};

/// The payload of the notification's messages (no pid, not the ticker's).
pub const PAYLOAD: u64 = 1 << 62;
pub const NET: u64 = 1;
pub const CONSOLE: u64 = 2;

struct State {
    /// The notification's slot, once made and bound.
    slot: Cell<Option<u64>>,
    /// Wake-ups of the loop that no call caused: time-outs (those the
    /// TCP/IP stack asked for apart), notifications, the ticker's calls.
    timeouts: Cell<u64>,
    net_timeouts: Cell<u64>,
    notified: Cell<u64>,
    ticks: Cell<u64>,
}

// SAFETY: the server is single-threaded; the ticker thread never touches it.
unsafe impl Sync for State {}

static STATE: State = State { slot: Cell::new(None), timeouts: Cell::new(0), net_timeouts: Cell::new(0), notified: Cell::new(0), ticks: Cell::new(0) };

/// The notification, made and bound to the server at the first call.
fn notification() -> Result<u64, Error> {
    if let Some(s) = STATE.slot.get() {
        return Ok(s);
    }
    let e = crate::env::env();
    let (n, me) = (e.slot()?, e.slot()?);
    let made = ACCOUNT
        .create_notification(n)
        .and_then(|_| SELF_PROCESS.mint(me, PAYLOAD, rights::WRITE))
        .and_then(|_| keep_abi::Notification(n).bind(me));
    e.free_slot(me); // the binding keeps the sender's object, not the slot
    match made {
        Ok(()) => {
            STATE.slot.set(Some(n));
            Ok(n)
        }
        Err(err) => {
            let _ = ACCOUNT.destroy(n);
            e.free_slot(n);
            Err(err)
        }
    }
}

/// A WRITE copy of the notification at the empty slot `dest`, for a source.
pub fn give(dest: u64) -> Result<(), Error> {
    SELF_ASPACE.copy_cap(notification()?, dest, rights::WRITE)
}

/// The loop's wake-up counts: a time-out (`net`: the TCP/IP stack's, its
/// timers or the ring's polling), a NOTIFY, a ticker's call.
pub fn timed_out(net: bool) {
    let c = if net { &STATE.net_timeouts } else { &STATE.timeouts };
    c.set(c.get() + 1);
}
pub fn notified() {
    STATE.notified.set(STATE.notified.get() + 1);
}
pub fn ticked() {
    STATE.ticks.set(STATE.ticks.get() + 1);
}

/// /proc/keepwakes.
pub fn report() -> alloc::string::String {
    alloc::format!(
        "net_timeouts {}\nnotified {}\ntimeouts {}\nticker {}\n",
        STATE.net_timeouts.get(),
        STATE.notified.get(),
        STATE.timeouts.get(),
        STATE.ticks.get()
    )
}

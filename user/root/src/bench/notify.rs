//! `notify.signal_wait`: a notification's signal in one address space to
//! the wake-up of its waiter in another.  The partner is `benchsrv` in
//! mode 2 (its own address space, the root task's priority): it waits on
//! PING and signals PONG; the root task signals PING and waits on PONG.
//! One iteration is two signals and two wake-ups (each waiter blocked in
//! WAIT, made runnable by the signal, its WAIT started again when the
//! signaller blocks): `notify.signal_wait.round_trip`; `notify.signal_wait`
//! is half of it, one signal to one wake-up, beside
//! `ipc.call_reply.cross_as` (a call and its reply).

use keep_abi::{ACCOUNT, Notification, slot};
use keep_loader::{Grant, Loader, Spec};

use super::{BenchResult, Runs, Suite};
use crate::Root;

/// Where benchsrv finds the notifications (its PING_SLOT and PONG_SLOT).
const PING_SLOT: u64 = 0x20;
const PONG_SLOT: u64 = 0x21;
const ROUND_TRIPS: u64 = 200;

fn signal_wait(root: &mut Root, s: &mut Suite) -> BenchResult {
    let (Some(ping), Some(pong)) = (root.slots.alloc(), root.slots.alloc()) else {
        return Err("no free slot".into());
    };
    let r = (|| -> BenchResult {
        ACCOUNT.create_notification(ping).map_err(|e| alloc::format!("CREATE_NOTIFICATION: {e}"))?;
        ACCOUNT.create_notification(pong).map_err(|e| alloc::format!("CREATE_NOTIFICATION: {e}"))?;
        let img = root.image.as_ref().ok_or("no boot image")?;
        let elf = img.find("benchsrv").ok_or("no program 'benchsrv' in the boot image")?.data;
        let grants = [
            Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
            Grant { src: ping, dest: PING_SLOT, rights: 0 },
            Grant { src: pong, dest: PONG_SLOT, rights: 0 },
        ];
        let spec = Spec { name: "benchsrv", elf, arg0: 2, arg1: 0, grants: &grants, blob: None };
        let mut loader = Loader::new(&mut root.slots);
        let child = loader.load(&spec).map_err(|e| alloc::format!("loading benchsrv: {e}"))?;
        let started = child.process.set_priority(super::ipc::PRIORITY).and_then(|_| child.process.start());
        let r = started.map_err(|e| alloc::format!("starting benchsrv: {e}")).and_then(|_| {
            let (p, q) = (Notification(ping), Notification(pong));
            let trip = || {
                let _ = p.signal(1);
                q.wait()
            };
            trip().map_err(|e| alloc::format!("the first round trip: {e}"))?;
            let runs = s.measure(ROUND_TRIPS, trip);
            s.report("notify.signal_wait.round_trip", "instructions", runs);
            s.report("notify.signal_wait", "instructions", Runs(runs.0.map(|v| v / 2)));
            Ok(())
        });
        let _ = Loader::new(&mut root.slots).destroy(child);
        r
    })();
    for c in [ping, pong] {
        let _ = ACCOUNT.destroy(c);
        let _ = keep_abi::SELF_ASPACE.delete_cap(c);
        root.slots.free(c);
    }
    r
}

pub fn run(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[("notify.signal_wait", signal_wait)]);
}

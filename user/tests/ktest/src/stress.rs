//! The stress test: keep-stress runs as an unprivileged child (its own
//! process and address space, a 64-frame account, the timer, the console,
//! a few pages and cappages; no KERNEL, no MEMORY) and makes 100,000
//! random invocations; afterwards the kernel's invariants must hold and
//! ordinary operations must still work.  The program comes from the boot
//! image as `stress` when it is there, else ktest's own file is loaded
//! with STRESS_MAGIC in arg0 and runs the same code.

use alloc::string::String;

use keep_abi::{ACCOUNT, Account, KERNEL, MEMORY, SELF_ASPACE, Status, rights, slot, state, ty};
use keep_loader::{Grant, Loader, Spec};

use crate::cspace::console_works;
use crate::{Ctx, Cx, TestResult};

/// arg0 that makes ktest run the stress code instead of the tests.
pub const STRESS_MAGIC: u64 = 0x5354_5245_5353_0001;
pub const SEED: u64 = 0x4b45_4550_0002_0000;
pub const COUNT: u64 = 100_000;
const ACCOUNT_FRAMES: u64 = 64;

pub fn stress_child(cx: &mut Cx) -> TestResult {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    let (elf, arg0) = match img.find("stress") {
        Some(e) => (e.data, SEED),
        None => (img.find("ktest").ok_or("no ktest in the image")?.data, STRESS_MAGIC),
    };
    let arg1 = if arg0 == STRESS_MAGIC { SEED } else { COUNT };
    // Its own small account, and a few objects to play with.
    let s = cx.slots::<7>()?;
    let acct = Account(s[0]);
    let r = (|| {
        MEMORY.create_account(acct.0).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct.0, ACCOUNT_FRAMES).ctx("DONATE")?;
        for (i, &o) in s[1..].iter().enumerate() {
            let t = if i < 4 { ty::PAGE } else { ty::CAPPAGE };
            MEMORY.retype(t, o).ctx("RETYPE")?;
        }
        let g = |src: u64, dest: u64, r: u64| Grant {
            src,
            dest,
            rights: r,
        };
        let grants = [
            g(slot::CONSOLE, slot::CONSOLE, 0),
            g(slot::TIMER, slot::TIMER, 0),
            g(acct.0, slot::ACCOUNT, 0),
            g(s[1], 16, 0),
            g(s[2], 17, 0),
            g(s[3], 18, rights::READ),
            g(s[4], 19, 0),
            g(s[5], 20, 0),
            g(s[6], 21, 0),
        ];
        let spec = Spec {
            name: "ktest-stress",
            elf,
            arg0,
            arg1,
            grants: &grants,
            blob: None,
        };
        let mut loader = Loader::new(&mut cx.slots);
        let child = loader.load(&spec).ctx("load")?;
        let st = child.process.start().and_then(|_| child.process.wait());
        let d = loader.destroy(child);
        let st: Status = st.ctx("START/WAIT")?;
        d.ctx("destroy")?;
        ensure!(
            st.state == state::EXITED && st.code == 0,
            "the stress program {st}"
        );
        Ok(())
    })();
    if let Ok((free, _)) = acct.info() {
        let _ = acct.reclaim(slot::MEMORY, free);
    }
    cx.drop_slots(&s);
    r
}

pub fn after_stress(cx: &mut Cx) -> TestResult {
    let (violations, checked) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(
        violations == 0,
        "{violations} invariant violations in {checked} items"
    );
    ensure!(checked > 0, "nothing was checked");
    console_works(slot::CONSOLE)?;
    MEMORY.free().ctx("FREE")?;
    let a = cx.slot()?;
    let r = ACCOUNT
        .create_aspace(a)
        .ctx("CREATE_ASPACE")
        .and_then(|_| ACCOUNT.destroy(a).ctx("DESTROY"));
    cx.drop_slot(a);
    r?;
    crate::fault::exit42(cx)?;
    let _ = SELF_ASPACE;
    Ok(())
}

pub fn invariants(_: &mut Cx) -> Result<(), String> {
    let (violations, checked) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(
        violations == 0 && checked > 0,
        "{violations} violations in {checked} items"
    );
    Ok(())
}

/// Receives one call into slot words[0] and never answers; sleeps until killed.
fn unanswering(a: &keep_loader::thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    let _ = keep_abi::recv(keep_abi::Tag::new(0).with_slots(1), 0);
    loop {
        let _ = keep_abi::TIMER.sleep(60_000);
    }
}

/// Calls words[0] once with a 5 s time-out for the reply.
fn timed_caller(a: &keep_loader::thread::Args) -> u64 {
    let t = keep_abi::Tag::new(3).with_mode(keep_abi::tag::MODE_CALL);
    keep_abi::ipc(a.words[0], t, [0; 4], 5000).err
}

/// The invariants hold at the suite's start (servers of the running system
/// wait in calls with reply time-outs), and while a call of ktest's waits
/// for its reply with a time-out: such a caller is on the timer list.
pub fn invariants_at_start(cx: &mut Cx) -> TestResult {
    let (violations, checked) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(violations == 0 && checked > 0, "at the start: {violations} violations in {checked} items");
    let [ret, snd] = cx.slots::<2>()?;
    let r = (|| {
        let srv = keep_loader::thread::spawn(&mut cx.slots, "ktest-mute", 10, unanswering, &[ret])?;
        let r = (|| {
            srv.process.mint(snd, 1, 0).ctx("MINT")?;
            let c = keep_loader::thread::spawn(&mut cx.slots, "ktest-timed", 10, timed_caller, &[snd])?;
            let _ = keep_abi::TIMER.sleep(20); // it calls; the server takes the call
            let st = c.process.status();
            let inv = KERNEL.check_invariants();
            c.kill(&mut cx.slots);
            let st = st.ctx("STATUS of the caller")?;
            ensure!(st.state == state::BLOCKED, "the timed caller is {st}, not waiting for its reply");
            let (violations, checked) = inv.ctx("CHECK_INVARIANTS")?;
            ensure!(violations == 0, "a call waiting with a time-out: {violations} violations in {checked} items");
            Ok(())
        })();
        srv.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&[ret, snd]);
    r
}

/// The last test: every test before it left the kernel's invariants intact.
pub fn invariants_at_end(_: &mut Cx) -> TestResult {
    let (violations, checked) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(violations == 0 && checked > 0, "after the suite: {violations} violations in {checked} items");
    Ok(())
}

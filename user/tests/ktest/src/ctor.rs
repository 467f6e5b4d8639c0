//! The constructor (user/servers/constructor, docs/space-banks.md): built
//! on a space bank started by the test, with confined-probe as the program
//! whose instances try to get a message out.

use core::sync::atomic::{AtomicU64, Ordering};

use keep_abi::{ACCOUNT, Aspace, IpcBuffer, MEMORY, Return, SELF_ASPACE, Sender, Tag, recv, rights as krights, slot, state, ty};
use keep_constructor::{Constructor, CtorError, Meta, Server, status};
use keep_loader::thread;
use keep_spacebank::Bank;

use crate::bank::{elf, with_server};
use crate::{Ctx, Cx, TestResult};

/// Where ktest maps the read-only page it gives an instance.
const VA: u64 = 0x5300_0000_0000;

/// Messages the spy has received.
static SPY_COUNT: AtomicU64 = AtomicU64::new(0);
const SPY_QUIT: u64 = 0xdead;

/// Receives anything, counts it, answers calls; ends on SPY_QUIT.
fn spy(a: &thread::Args) -> u64 {
    let ret = a.words[0];
    let buf: &mut IpcBuffer = a.buf();
    buf.set_recv_slots(&[ret]);
    loop {
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 {
            continue;
        }
        if m.tag.label() == SPY_QUIT {
            if m.tag.is_called() {
                let _ = Return(ret).reply(Tag::new(0), [0; 4]);
            }
            return 0;
        }
        SPY_COUNT.fetch_add(1, Ordering::SeqCst);
        if m.tag.is_called() {
            let _ = Return(ret).reply(Tag::new(0), [0; 4]);
        }
    }
}

fn ce<T: core::fmt::Debug>(r: Result<T, CtorError>, want: u64, what: &str) -> TestResult {
    match r {
        Err(CtorError::Status(s, _)) if s == want => Ok(()),
        other => Err(alloc::format!("{what}: got {other:?}, want {}", status::name(want))),
    }
}

/// Runs `f` with a bank server, a constructor server trusting it, a
/// sub-bank to build instances on, and a spy thread with a sender to it.
fn with_all(cx: &mut Cx, f: impl FnOnce(&mut Cx, Meta, Bank, u64) -> TestResult) -> TestResult {
    with_server(cx, |cx, prime| {
        let ctor_elf = elf(cx, "constructor")?;
        let server = Server::spawn(&mut cx.slots, ctor_elf, prime.0).map_err(alloc::string::String::from)?;
        let [sb, ret, spy_snd] = cx.slots::<3>()?;
        SPY_COUNT.store(0, Ordering::SeqCst);
        let r = (|| {
            let bank = prime.create_bank(1000, sb).ctx("CREATE_BANK")?;
            let t = thread::spawn(&mut cx.slots, "spy", 12, spy, &[ret])?;
            let r = t.process.mint(spy_snd, 0, krights::WRITE | krights::CALL).ctx("MINT").and_then(|_| f(cx, server.meta, bank, spy_snd));
            let _ = Sender(spy_snd).call(Tag::new(SPY_QUIT), [0; 4]);
            let _ = t.join(&mut cx.slots);
            let _ = bank.destroy();
            r
        })();
        cx.drop_slots(&[sb, ret, spy_snd]);
        let stopped = server.stop(&mut cx.slots);
        r?;
        stopped.map_err(alloc::string::String::from)
    })
}

/// Builds a constructor of confined-probe with `caps` ((slot, instance slot)).
fn probe_ctor(cx: &mut Cx, meta: Meta, caps: &[(u64, u64)], dest: u64) -> Result<Constructor, alloc::string::String> {
    let image = elf(cx, "confined-probe")?;
    let scratch = cx.slot()?;
    let r = meta.build("probe", image, caps, scratch, dest).ctx("build a constructor");
    cx.slots.free(scratch);
    r
}

/// Runs one instance to its end; its exit code.
fn run_instance(cx: &mut Cx, c: Constructor, bank: Bank) -> Result<u64, alloc::string::String> {
    let [p, b] = cx.slots::<2>()?;
    let r = (|| {
        let inst = c.instantiate(bank, 400, 16, 0, p, b).ctx("INSTANTIATE")?;
        let st = inst.reap().ctx("reap the instance")?;
        ensure!(st.state == state::EXITED, "the instance ended {st}");
        Ok(st.code)
    })();
    cx.drop_slots(&[p, b]);
    r
}

/// A constructor whose initial capabilities are all safe (a read-only
/// page, a weak address space whose capability space holds a sender to the
/// spy, a read-only timer and kernel capability, a confined constructor)
/// says its instances are confined; an instance tries every capability and
/// invocation it has to get a message out, and nothing reaches the spy or
/// the page; it holds exactly its own objects, its bank and those five.
pub fn confined(cx: &mut Cx) -> TestResult {
    with_all(cx, |cx, meta, bank, spy_snd| {
        let [pg, ro, asp, weak, cp, timer, inner, outer] = cx.slots::<8>()?;
        let r = (|| {
            MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            SELF_ASPACE.copy_cap(pg, ro, krights::READ).ctx("COPY_CAP read-only")?;
            SELF_ASPACE.map(pg, VA, krights::READ | krights::WRITE).ctx("MAP")?;
            ACCOUNT.create_aspace(asp).ctx("CREATE_ASPACE")?;
            MEMORY.retype(ty::CAPPAGE, cp).ctx("RETYPE cappage")?;
            Aspace(asp).map_cappage(cp, 0).ctx("MAP_CAPPAGE")?;
            Aspace(asp).insert_cap(spy_snd, 5, 0).ctx("INSERT the spy's sender")?;
            Aspace(asp).insert_cap(pg, 6, 0).ctx("INSERT the writable page")?;
            SELF_ASPACE.copy_cap(asp, weak, krights::WEAK).ctx("COPY_CAP weak")?;
            SELF_ASPACE.copy_cap(slot::TIMER, timer, krights::READ).ctx("COPY_CAP timer")?;
            let inner_c = probe_ctor(cx, meta, &[], inner)?;
            ensure!(inner_c.is_confined(&[]).ctx("IS_CONFINED")? == (true, 0), "a constructor without capabilities is not confined");
            let caps = [(ro, 8), (weak, 9), (timer, 7), (slot::KERNEL, 10), (inner, 11)];
            let c = probe_ctor(cx, meta, &caps, outer)?;
            let conf = c.is_confined(&[]).ctx("IS_CONFINED")?;
            ensure!(conf.0, "not confined: the capability for slot {} is unsafe", conf.1);
            let before = bank.info().ctx("INFO")?;
            let held = run_instance(cx, c, bank)?;
            ensure!(held == 4 + caps.len() as u64, "the instance held {held} capabilities, want 4 + {}", caps.len());
            ensure!(SPY_COUNT.load(Ordering::SeqCst) == 0, "the spy received {} messages", SPY_COUNT.load(Ordering::SeqCst));
            // SAFETY: mapped at VA above.
            let mark = unsafe { (VA as *const u64).read_volatile() };
            ensure!(mark == 0, "the instance wrote {mark:#x} into the read-only page");
            ensure!(bank.info().ctx("INFO")? == before, "the instance's bank was not given back: {:?}", bank.info());
            Ok(())
        })();
        let _ = SELF_ASPACE.unmap(VA);
        let _ = ACCOUNT.destroy(asp);
        cx.drop_slots(&[pg, ro, asp, weak, cp, timer, inner, outer]);
        r
    })
}

/// An unsafe initial capability (a sender to the spy, the console, a
/// writable page, a non-weak address space) makes the constructor answer
/// "not confined", naming its slot, unless the requester authorises it as
/// a hole; and an instance holding the spy's sender does reach it (the
/// probe of CTOR0001 would see a leak).
pub fn not_confined(cx: &mut Cx) -> TestResult {
    with_all(cx, |cx, meta, bank, spy_snd| {
        let [pg, asp, c1, c2, c3, c4, c5, ro_spy] = cx.slots::<8>()?;
        let r = (|| {
            let leaky = probe_ctor(cx, meta, &[(spy_snd, 8)], c1)?;
            ensure!(leaky.is_confined(&[]).ctx("IS_CONFINED")? == (false, 8), "a sender to the spy: {:?}", leaky.is_confined(&[]));
            ensure!(leaky.is_confined(&[spy_snd]).ctx("IS_CONFINED with the hole")?.0, "the authorised hole was not accepted");
            // A hole with fewer rights than the capability does not cover it.
            SELF_ASPACE.copy_cap(spy_snd, ro_spy, krights::READ).ctx("COPY_CAP")?;
            ensure!(!leaky.is_confined(&[ro_spy]).ctx("IS_CONFINED")?.0, "a read-only hole covered a writable sender");
            let console = probe_ctor(cx, meta, &[(slot::CONSOLE, 1)], c2)?;
            ensure!(console.is_confined(&[]).ctx("IS_CONFINED")? == (false, 1), "the console");
            MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            let page = probe_ctor(cx, meta, &[(pg, 9)], c3)?;
            ensure!(page.is_confined(&[]).ctx("IS_CONFINED")? == (false, 9), "a writable page");
            ACCOUNT.create_aspace(asp).ctx("CREATE_ASPACE")?;
            let space = probe_ctor(cx, meta, &[(asp, 10)], c4)?;
            ensure!(space.is_confined(&[]).ctx("IS_CONFINED")? == (false, 10), "a read-write address space");
            // A constructor holding an unconfined constructor is not confined.
            let outer = probe_ctor(cx, meta, &[(c1, 11)], c5)?;
            ensure!(outer.is_confined(&[]).ctx("IS_CONFINED")? == (false, 11), "a constructor holding an unconfined one");
            ensure!(outer.is_confined(&[spy_snd]).ctx("IS_CONFINED")?.0, "the hole should cover the inner constructor's capability");
            // The positive control: the probe does use what it holds.
            run_instance(cx, leaky, bank)?;
            ensure!(SPY_COUNT.load(Ordering::SeqCst) > 0, "an instance holding the spy's sender did not reach it");
            Ok(())
        })();
        let _ = ACCOUNT.destroy(asp);
        cx.drop_slots(&[pg, asp, c1, c2, c3, c4, c5, ro_spy]);
        r
    })
}

/// Malformed requests, requests through the wrong capability and banks
/// that are not banks are refused with a clear status; nothing changes
/// (the requester's bank and the memory pool are as before).
pub fn errors(cx: &mut Cx) -> TestResult {
    with_all(cx, |cx, meta, bank, spy_snd| {
        let [b, b2, c, p, x] = cx.slots::<5>()?;
        let image = elf(cx, "confined-probe")?;
        let r = (|| {
            ce(meta.new_constructor("x", 0, b), status::BAD_REQUEST, "an image of 0 bytes")?;
            ce(meta.new_constructor("x", keep_constructor::MAX_IMAGE + 1, b), status::BAD_REQUEST, "an image over the limit")?;
            let m = Sender(meta.0).call(Tag::new(77), [0; 4]);
            ensure!(m.err == 0 && m.words[0] == status::BAD_REQUEST, "label 77: {m:?}");
            let builder = meta.new_constructor("probe", image.len() as u64, b).ctx("NEW")?;
            ce(builder.piece(image.len() as u64, &[1]), status::BAD_REQUEST, "a piece past the end")?;
            ce(builder.piece(u64::MAX, &[1]), status::BAD_REQUEST, "a piece at 2^64-1")?;
            ce(builder.piece(0, &[]), status::BAD_REQUEST, "a piece without a string")?;
            for bad_slot in [0, 3, 4, 6, 0xc, 16, 255, u64::MAX] {
                ce(builder.add_cap(slot::TIMER, bad_slot), status::BAD_REQUEST, "ADD_CAP to a slot the instance owns")?;
            }
            let m = Sender(builder.0).call(Tag::new(keep_constructor::req::ADD_CAP), [8, 0, 0, 0]);
            ensure!(m.err == 0 && m.words[0] == status::BAD_REQUEST, "ADD_CAP without a capability: {m:?}");
            builder.add_cap(slot::TIMER, 8).ctx("ADD_CAP")?;
            ce(builder.add_cap(slot::TIMER, 8), status::BAD_REQUEST, "ADD_CAP to a filled slot")?;
            // At most MAX_CAPS (8) initial capabilities.
            for s in [9, 10, 11, 13, 14, 15, 1] {
                builder.add_cap(slot::TIMER, s).ctx("ADD_CAP up to the limit")?;
            }
            ce(builder.add_cap(slot::TIMER, 2), status::BAD_REQUEST, "a ninth initial capability")?;
            ce(Meta(builder.0).new_constructor("y", 10, x), status::NO_RIGHTS, "NEW through a builder")?;
            // An image that is not a program is refused at SEAL; fixed, it seals.
            builder.piece(0, &[0u8; 64]).ctx("IMAGE")?;
            ce(builder.seal(c), status::BAD_IMAGE, "SEAL of a broken image")?;
            builder.image(image).ctx("IMAGE")?;
            let ctor = builder.seal(c).ctx("SEAL")?;
            ce(builder.seal(x), status::BAD_STATE, "SEAL twice")?;
            ce(builder.piece(0, &[0]), status::BAD_STATE, "IMAGE after SEAL")?;
            ce(builder.add_cap(slot::TIMER, 9), status::BAD_STATE, "ADD_CAP after SEAL")?;
            ce(Constructor(builder.0).instantiate(bank, 100, 8, 0, p, x), status::NO_RIGHTS, "INSTANTIATE through a builder")?;
            ce(Constructor(meta.0).is_confined(&[]), status::NO_RIGHTS, "IS_CONFINED through the metaconstructor")?;
            ce(Meta(ctor.0).new_constructor("z", 10, x), status::NO_RIGHTS, "NEW through a constructor")?;

            let pool = MEMORY.free().ctx("FREE")?;
            let before = bank.info().ctx("INFO")?;
            ce(ctor.instantiate(Bank(spy_snd), 100, 8, 0, p, x), status::NOT_A_BANK, "a sender that is not the bank")?;
            ce(ctor.instantiate(Bank(slot::TIMER), 100, 8, 0, p, x), status::NOT_A_BANK, "the timer as a bank")?;
            ce(ctor.instantiate(bank, 0, 8, 0, p, x), status::BAD_REQUEST, "a bank limit of 0")?;
            ce(ctor.instantiate(bank, 100, u64::MAX, 0, p, x), status::BAD_REQUEST, "an account of 2^64-1 frames")?;
            let over = ctor.instantiate(bank, before.limit + 1, 8, 0, p, x);
            ensure!(over == Err(CtorError::Status(status::BANK, keep_spacebank::status::OVER_LIMIT)), "a limit over the bank's: {over:?}");
            // Too small for the program: the load fails, the sub-bank goes.
            ce(ctor.instantiate(bank, 12, 8, 0, p, x), status::LOAD, "a bank too small for the program")?;
            // A bank capability that lacks ALLOC.
            let weak_bank = bank.restrict(keep_spacebank::rights::INFO, b2).ctx("RESTRICT")?;
            let r = ctor.instantiate(weak_bank, 100, 8, 0, p, x);
            ensure!(r == Err(CtorError::Status(status::BANK, keep_spacebank::status::NO_RIGHTS)), "an info-only bank: {r:?}");
            ensure!(bank.info().ctx("INFO")? == before, "refusals changed the bank: {before:?} -> {:?}", bank.info());
            ensure!(MEMORY.free().ctx("FREE")? == pool, "refusals moved frames");
            for s in [p, x] {
                ensure!(SELF_ASPACE.identify_cap(s).ctx("IDENTIFY")?.ty == ty::NULL, "a refused request filled a slot");
            }
            Ok(())
        })();
        cx.drop_slots(&[b, b2, c, p, x]);
        r
    })
}

/// Runs hello with `arg0` as an instance on a sub-bank of `bank` to its
/// end; its status and the frames its bank held at the end.
fn hello_run(cx: &mut Cx, c: Constructor, bank: Bank, arg0: u64) -> Result<(keep_abi::Status, u64), alloc::string::String> {
    let [p, b] = cx.slots::<2>()?;
    let r = (|| {
        let inst = c.instantiate(bank, 400, 16, arg0, p, b).ctx("INSTANTIATE")?;
        let st = inst.process.wait().ctx("WAIT");
        let used = inst.bank.info().ctx("INFO").map(|i| i.used);
        let reaped = inst.reap().ctx("reap the instance");
        let (st, used) = (st?, used?);
        reaped?;
        Ok((st, used))
    })();
    cx.drop_slots(&[p, b]);
    r
}

/// The constructor pages its instances: an instance's zero pages (the
/// 1 MiB heap of .bss, the stack below its top page) are made on first
/// touch from the instance's own bank, so an instance that touches 64
/// more heap pages holds 64 more frames, and far fewer than an eager load
/// would; its stack grows by faults too.  A fault that is not a first touch
/// (an unmapped page outside those ranges, a write to its code) stops the
/// instance as FAULTED with the address, as without a pager; the
/// requester's bank gets everything back.
pub fn first_touch(cx: &mut Cx) -> TestResult {
    with_all(cx, |cx, meta, bank, _| {
        let image = elf(cx, "hello")?;
        let program = keep_loader::Program::parse(image).map_err(|e| alloc::format!("hello: {e}"))?;
        let eager = program.page_count() + keep_loader::spawn::STACK_PAGES;
        let [c, scratch] = cx.slots::<2>()?;
        let r = (|| {
            let ctor = meta.build("hello", image, &[], scratch, c).ctx("build a constructor of hello")?;
            let before = bank.info().ctx("INFO")?;
            let (st1, used1) = hello_run(cx, ctor, bank, 6 | 1 << 8)?;
            ensure!(st1.state == state::EXITED && st1.code == 0, "touching 1 heap page and 9 stack pages: {st1}");
            let (st65, used65) = hello_run(cx, ctor, bank, 6 | 65 << 8)?;
            ensure!(st65.state == state::EXITED && st65.code == 0, "touching 65 heap pages: {st65}");
            ensure!((64..=72).contains(&(used65 - used1)), "64 more pages touched, {} more frames held ({used1} -> {used65})", used65 - used1);
            // hello's .bss is its 1 MiB heap: an eager load made 256 pages of it.
            ensure!(used1 + 200 < eager, "an instance that touched little holds {used1} frames; an eager load makes {eager} pages");
            let (st, _) = hello_run(cx, ctor, bank, 7 | 0x10 << 8)?;
            ensure!(st.state == state::FAULTED && st.code == 14 && st.addr == 0x10, "a write to address 0x10: {st}");
            let (st, _) = hello_run(cx, ctor, bank, 7 | program.entry << 8)?;
            ensure!(
                st.state == state::FAULTED && st.code == 14 && st.addr == program.entry,
                "a write to its own code at {:#x}: {st}",
                program.entry
            );
            ensure!(bank.info().ctx("INFO")? == before, "the instances' banks left frames behind");
            Ok(())
        })();
        cx.drop_slots(&[c, scratch]);
        r
    })
}

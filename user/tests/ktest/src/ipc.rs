//! IPC: every request type, blocking and not, time-outs, capability and
//! string transfer both ways, the protected payload, return capabilities,
//! no-call senders, and the scheduling rules of message delivery.
//!
//! The other party is a server thread (a process in ktest's own space)
//! configured through the statics below before it starts; it records what
//! it received there.

use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    Error, IpcBuffer, MEMORY, Process, Return, SELF_ASPACE, SELF_PROCESS, Sender, TIMER, Tag,
    ACCOUNT, err, recv, rights, slot, tag, ty,
};

use crate::cspace::{BEYOND, HOLE, snapshot, unchanged};
use keep_loader::thread::{self, Thread};
use crate::{Ctx, Cx, TestResult, expect_code, expect_err};

const Z: AtomicU64 = AtomicU64::new(0);

/// Server configuration.
static CFG_SLOTS: [AtomicU64; 5] = [Z; 5];
static CFG_NSLOTS: AtomicU64 = Z;
static CFG_COUNT: AtomicU64 = Z;
/// Per message: capabilities the reply carries (the first n of CFG_CAPS).
static CFG_REPLY_CAPS: [AtomicU64; 8] = [Z; 8];
static CFG_CAPS: [AtomicU64; 4] = [Z; 4];
/// Per message: string bytes the reply carries.
static CFG_REPLY_STR: [AtomicU64; 8] = [Z; 8];
static CFG_MODE: AtomicU64 = Z;
static CFG_TIMEOUT: AtomicU64 = Z;
/// A sender the server sends its answer through (MODE_ECHO).
static CFG_ECHO: AtomicU64 = Z;
/// If not 0: the second receive slot its first reply-and-receive names.
static CFG_RR_SLOT1: AtomicU64 = Z;
/// If not 0: how many receive slots its first reply-and-receive names.
static CFG_RR_NSLOTS: AtomicU64 = Z;

/// Reply to each call (the default).
#[allow(dead_code)]
const MODE_REPLY: u64 = 0;
const MODE_REPLY_RECV: u64 = 1;
const MODE_REPLY_TWICE: u64 = 2;
const MODE_NO_REPLY: u64 = 3;
const MODE_ECHO: u64 = 4;
const MODE_RETURN_AS_CALL: u64 = 5;
/// Receive the call, wait CFG_DELAY ms (a receive nobody answers), then reply.
const MODE_REPLY_LATE: u64 = 6;
static CFG_DELAY: AtomicU64 = Z;
/// CFG_RR_SLOT1: name the first receive slot again as the second.
const SAME_AS_FIRST: u64 = u64::MAX;

/// What the server saw, per message (up to 8).
static SEEN_ERR: [AtomicU64; 8] = [Z; 8];
static SEEN_TAG: [AtomicU64; 8] = [Z; 8];
static SEEN_PAYLOAD: [AtomicU64; 8] = [Z; 8];
static SEEN_WORDS: [AtomicU64; 8] = [Z; 8];
/// Type | rights << 8 of each received capability, 16 bits each.
static SEEN_CAPS: [AtomicU64; 8] = [Z; 8];
/// Type | rights << 8 of a call's return capability.
static SEEN_RET: [AtomicU64; 8] = [Z; 8];
static SEEN_STR_LEN: [AtomicU64; 8] = [Z; 8];
static SEEN_STR_OK: [AtomicU64; 8] = [Z; 8];
static SEEN_REPLY_ERR: [AtomicU64; 8] = [Z; 8];
static SEEN_SECOND_ERR: AtomicU64 = Z;
static SEEN_COUNT: AtomicU64 = Z;
pub static FLAG: AtomicU64 = Z;

fn reset() {
    for a in [
        &SEEN_ERR,
        &SEEN_TAG,
        &SEEN_PAYLOAD,
        &SEEN_WORDS,
        &SEEN_CAPS,
        &SEEN_RET,
        &SEEN_STR_LEN,
        &SEEN_STR_OK,
        &SEEN_REPLY_ERR,
        &CFG_REPLY_CAPS,
        &CFG_REPLY_STR,
    ] {
        a.iter().for_each(|x| x.store(0, SeqCst));
    }
    for x in [
        &SEEN_SECOND_ERR,
        &SEEN_COUNT,
        &FLAG,
        &CFG_MODE,
        &CFG_TIMEOUT,
        &CFG_DELAY,
        &CFG_ECHO,
        &CFG_RR_SLOT1,
        &CFG_RR_NSLOTS,
    ] {
        x.store(0, SeqCst);
    }
    CFG_COUNT.store(1, SeqCst);
    CFG_NSLOTS.store(0, SeqCst);
    // No server waits for ever.
    CFG_TIMEOUT.store(3000, SeqCst);
}

/// Byte `i` of the test string with `seed`.
fn pattern(i: usize, seed: u64) -> u8 {
    (i as u8).wrapping_mul(31).wrapping_add(seed as u8) ^ (i >> 8) as u8
}

fn fill_string(buf: &mut IpcBuffer, len: usize) {
    for i in 0..len {
        buf.string[i] = pattern(i, len as u64);
    }
    buf.send_len = len as u64;
}

fn string_ok(buf: &IpcBuffer, len: usize) -> bool {
    buf.received_len() == len && (0..len).all(|i| buf.string_byte(i) == pattern(i, len as u64))
}

/// Type and rights of every capability slot in `slots`, packed 16 bits each.
fn caps_summary(slots: &[u64]) -> u64 {
    let mut v = 0;
    for (i, &s) in slots.iter().enumerate() {
        let (t, r) = match SELF_ASPACE.identify_cap(s) {
            Ok(c) => (c.ty, c.rights),
            Err(_) => (0xff, 0xff),
        };
        v |= (t | r << 8) << (16 * i);
    }
    v
}

fn server(a: &thread::Args) -> u64 {
    let buf = a.buf();
    let count = CFG_COUNT.load(SeqCst) as usize;
    let nslots = CFG_NSLOTS.load(SeqCst);
    let slots: [u64; 5] = core::array::from_fn(|i| CFG_SLOTS[i].load(SeqCst));
    let mode = CFG_MODE.load(SeqCst);
    let timeout = CFG_TIMEOUT.load(SeqCst);
    let mut pending: Option<keep_abi::Msg> = None;
    for n in 0..count.min(8) {
        buf.set_recv_slots(&slots);
        let m = match pending.take() {
            Some(m) => m,
            None => recv(Tag::new(0).with_slots(nslots), timeout),
        };
        SEEN_ERR[n].store(m.err, SeqCst);
        SEEN_COUNT.store(n as u64 + 1, SeqCst);
        if m.err != err::OK {
            return 10 + m.err;
        }
        FLAG.store(1, SeqCst);
        SEEN_TAG[n].store(m.tag.0, SeqCst);
        SEEN_PAYLOAD[n].store(m.payload, SeqCst);
        SEEN_WORDS[n].store(
            m.words[0] | m.words[1] << 16 | m.words[2] << 32 | m.words[3] << 48,
            SeqCst,
        );
        // A call's return capability is in slots[0] (and counted in the
        // received tag), the capabilities after it; a plain message's
        // capabilities start at slots[0].
        let first = m.tag.is_called() as usize;
        SEEN_RET[n].store(
            if first == 1 { caps_summary(&slots[..1]) } else { 0 },
            SeqCst,
        );
        let got = (m.tag.caps() as usize).min(5);
        let caps = &slots[first.min(got)..got];
        SEEN_CAPS[n].store(caps_summary(caps), SeqCst);
        SEEN_STR_LEN[n].store(buf.received_len() as u64, SeqCst);
        let len = buf.received_len().min(4096);
        SEEN_STR_OK[n].store(
            (m.tag.has_string() && string_ok(buf, len)) as u64,
            SeqCst,
        );
        // Delete them so the next message finds the slots empty.
        for &s in caps {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        if mode == MODE_ECHO {
            let e = Sender(CFG_ECHO.load(SeqCst))
                .send(Tag::new(m.tag.label() + 1), m.words)
                .err()
                .map_or(0, |e| e.0);
            SEEN_REPLY_ERR[n].store(e, SeqCst);
            continue;
        }
        if !m.tag.is_called() || mode == MODE_NO_REPLY {
            continue;
        }
        let ret = Return(slots[0]);
        if mode == MODE_REPLY_LATE {
            let w = recv(Tag::new(0), CFG_DELAY.load(SeqCst));
            SEEN_SECOND_ERR.store(w.err, SeqCst); // TIMEOUT: nobody sent
            let e = ret.reply(Tag::new(m.tag.label() + 1), m.words).err().map_or(0, |e| e.0);
            SEEN_REPLY_ERR[n].store(e, SeqCst);
            continue;
        }
        if mode == MODE_RETURN_AS_CALL {
            let r = keep_abi::ipc(ret.0, Tag::new(1).with_mode(tag::MODE_CALL), [0; 4], 0);
            SEEN_SECOND_ERR.store(r.err, SeqCst);
        }
        let ncaps = CFG_REPLY_CAPS[n].load(SeqCst);
        for i in 0..4 {
            buf.send_caps[i] = CFG_CAPS[i].load(SeqCst);
        }
        let slen = CFG_REPLY_STR[n].load(SeqCst) as usize;
        fill_string(buf, slen);
        let mut t = Tag::new(m.tag.label() + 1).with_caps(ncaps);
        if slen > 0 {
            t = t.with_string();
        }
        let w = [m.words[3], m.words[2], m.words[1], m.words[0]];
        if mode == MODE_REPLY_RECV && n + 1 < count {
            let (other, other_n) = (CFG_RR_SLOT1.load(SeqCst), CFG_RR_NSLOTS.load(SeqCst));
            let mut rr_slots = nslots;
            if n == 0 && other != 0 {
                let mut s = slots;
                s[1] = if other == SAME_AS_FIRST { slots[0] } else { other };
                buf.set_recv_slots(&s);
            }
            if n == 0 && other_n != 0 {
                rr_slots = other_n;
            }
            let r = ret.reply_recv(t.with_slots(rr_slots), w, timeout);
            if r.err == err::OK {
                SEEN_REPLY_ERR[n].store(0, SeqCst);
                pending = Some(r);
            } else {
                SEEN_REPLY_ERR[n].store(r.err, SeqCst);
                if other != 0 || other_n != 0 {
                    // Nothing was sent: reply on its own.
                    let e = ret.reply(t, w).err().map_or(0, |e| e.0);
                    SEEN_SECOND_ERR.store(e, SeqCst);
                }
            }
            continue;
        }
        let e = ret.reply(t, w).err().map_or(0, |e| e.0);
        SEEN_REPLY_ERR[n].store(e, SeqCst);
        if mode == MODE_REPLY_TWICE {
            let e2 = ret.reply(Tag::new(0), [0; 4]).err().map_or(0, |e| e.0);
            SEEN_SECOND_ERR.store(e2, SeqCst);
        }
    }
    0
}

/// A started server at `prio` with receive slots `slots` (the first takes
/// a call's return capability), and a sender to it at `snd` with `payload`
/// and `rights`.
fn start_server(
    cx: &mut Cx,
    prio: u64,
    slots: &[u64],
    snd: u64,
    payload: u64,
    rights_: u64,
) -> Result<Thread, String> {
    for (i, c) in CFG_SLOTS.iter().enumerate() {
        c.store(slots.get(i).copied().unwrap_or(0), SeqCst);
    }
    CFG_NSLOTS.store(slots.len() as u64, SeqCst);
    let t = thread::create(&mut cx.slots, "ktest-server", prio, server, &[])?;
    if let Err(e) = t.process.mint(snd, payload, rights_) {
        t.kill(&mut cx.slots);
        return Err(format!("MINT failed: {e}"));
    }
    if let Err(e) = t.process.start() {
        t.kill(&mut cx.slots);
        return Err(format!("START failed: {e}"));
    }
    Ok(t)
}

/// Runs `f` with a server (above ktest's priority, so it is waiting when
/// `f` starts) and then checks that the server ended with code 0.
fn with_server(
    cx: &mut Cx,
    nslots: usize,
    prio: u64,
    f: impl FnOnce(&mut Cx, u64, &[u64]) -> TestResult,
) -> TestResult {
    let s = cx.slots::<6>()?;
    let (snd, slots) = (s[0], &s[1..1 + nslots]);
    let r = with_server_at(cx, snd, slots, prio, f);
    cx.drop_slots(&s);
    r
}

/// The same with the server's receive slots and the sender's slot given.
fn with_server_at(
    cx: &mut Cx,
    snd: u64,
    slots: &[u64],
    prio: u64,
    f: impl FnOnce(&mut Cx, u64, &[u64]) -> TestResult,
) -> TestResult {
    match start_server(cx, prio, slots, snd, 0x5e4e, 0) {
        Ok(t) => {
            let r = f(cx, snd, slots);
            // A failed test may leave the server waiting: end it.
            let st = if r.is_ok() {
                t.process.wait()
            } else {
                Ok(keep_abi::Status {
                    state: keep_abi::state::EXITED,
                    code: 0,
                    rip: 0,
                    addr: 0,
                })
            };
            t.kill(&mut cx.slots);
            r.and_then(|_| {
                let st = st.ctx("WAIT for the server")?;
                ensure!(
                    st.state == keep_abi::state::EXITED && st.code == 0,
                    "server {st}"
                );
                Ok(())
            })
        }
        Err(e) => Err(e),
    }
}

const HIGH: u64 = 12;
const SAME: u64 = 10;
const LOW: u64 = 5;

fn words_of(n: usize) -> [u64; 4] {
    let w = SEEN_WORDS[n].load(SeqCst);
    [w & 0xffff, w >> 16 & 0xffff, w >> 32 & 0xffff, w >> 48]
}

pub fn call_reply(cx: &mut Cx) -> TestResult {
    reset();
    with_server(cx, 1, HIGH, |_, snd, _| {
        let m = Sender(snd).call(Tag::new(0x42), [1, 2, 3, 4]);
        m.result().ctx("CALL")?;
        ensure!(m.tag.label() == 0x43, "reply label {:#x}", m.tag.label());
        ensure!(m.words == [4, 3, 2, 1], "reply words {:?}", m.words);
        let t = Tag(SEEN_TAG[0].load(SeqCst));
        ensure!(t.label() == 0x42 && t.is_called(), "server saw tag {:#x}", t.0);
        ensure!(words_of(0) == [1, 2, 3, 4], "server saw {:?}", words_of(0));
        let c = SEEN_RET[0].load(SeqCst);
        ensure!(c & 0xff == ty::RETURN, "slot 0 held type {}", c & 0xff);
        ensure!(SEEN_PAYLOAD[0].load(SeqCst) == 0x5e4e, "payload");
        Ok(())
    })
}

pub fn send_oneway(cx: &mut Cx) -> TestResult {
    reset();
    with_server(cx, 1, HIGH, |_, snd, _| {
        Sender(snd).send(Tag::new(7), [9, 8, 7, 6]).ctx("SEND")?;
        let t = Tag(SEEN_TAG[0].load(SeqCst));
        ensure!(t.label() == 7 && !t.is_called(), "server saw tag {:#x}", t.0);
        ensure!(words_of(0) == [9, 8, 7, 6], "server saw {:?}", words_of(0));
        Ok(())
    })
}

pub fn send_queues(cx: &mut Cx) -> TestResult {
    reset();
    // A lower-priority server has not reached its receive when ktest sends:
    // the blocking send waits in its queue.
    with_server(cx, 1, LOW, |_, snd, _| {
        ensure!(SEEN_COUNT.load(SeqCst) == 0, "the server ran first");
        Sender(snd).send(Tag::new(3), [0; 4]).ctx("blocking SEND")?;
        // The lower-priority server records it once ktest blocks.
        TIMER.sleep(10).ctx("SLEEP")?;
        ensure!(SEEN_COUNT.load(SeqCst) == 1, "message not received");
        ensure!(Tag(SEEN_TAG[0].load(SeqCst)).label() == 3, "wrong label");
        Ok(())
    })
}

pub fn send_nonblocking(cx: &mut Cx) -> TestResult {
    reset();
    CFG_TIMEOUT.store(50, SeqCst);
    let s = cx.slots::<2>()?;
    let r = (|| {
        let t = thread::create(&mut cx.slots, "ktest-server", HIGH, server, &[])?;
        let r = (|| {
            t.process.mint(s[0], 1, 0).ctx("MINT")?;
            let before = snapshot()?;
            let e = Sender(s[0])
                .send(Tag::new(5).send_nonblocking(), [0; 4])
                .err();
            ensure!(e == Some(Error::WOULD_BLOCK), "non-blocking SEND: {e:?}");
            unchanged(before)?;
            // Nothing was queued: the server's receive times out.
            t.process.start().ctx("START")?;
            let st = t.process.wait().ctx("WAIT")?;
            ensure!(
                st.code == 10 + err::TIMEOUT,
                "server ended {st}; receive gave {}",
                keep_abi::error_name(SEEN_ERR[0].load(SeqCst))
            );
            Ok(())
        })();
        t.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&s);
    r
}

pub fn recv_nonblocking(_: &mut Cx) -> TestResult {
    let m = recv(Tag::new(0).recv_nonblocking(), 0);
    expect_code(m.err, Error::WOULD_BLOCK, "non-blocking RECV")
}

pub fn recv_timeout(_: &mut Cx) -> TestResult {
    let t0 = TIMER.now_ms().ctx("NOW")?;
    let m = recv(Tag::new(0), 100);
    let t1 = TIMER.now_ms().ctx("NOW")?;
    expect_code(m.err, Error::TIMEOUT, "RECV with a 100 ms time-out")?;
    ensure!(
        (100..1000).contains(&(t1 - t0)),
        "the time-out took {} ms",
        t1 - t0
    );
    Ok(())
}

pub fn reply_and_receive(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(3, SeqCst);
    CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
    with_server(cx, 1, HIGH, |_, snd, _| {
        for i in 0..3u64 {
            let m = Sender(snd).call(Tag::new(0x10 + i), [i, 0, 0, 0]);
            m.result().ctx("CALL")?;
            ensure!(
                m.tag.label() == 0x11 + i && m.words[3] == i,
                "reply {i}: label {:#x}, words {:?}",
                m.tag.label(),
                m.words
            );
        }
        Ok(())
    })
}

pub fn return_twice(cx: &mut Cx) -> TestResult {
    reset();
    CFG_MODE.store(MODE_REPLY_TWICE, SeqCst);
    with_server(cx, 1, HIGH, |_, snd, _| {
        Sender(snd).call(Tag::new(1), [0; 4]).result().ctx("CALL")?;
        Ok(())
    })?;
    expect_code(SEEN_REPLY_ERR[0].load(SeqCst), Error(0), "first reply")?;
    expect_code(SEEN_SECOND_ERR.load(SeqCst), Error::STALE, "second reply")
}

pub fn call_no_slots(cx: &mut Cx) -> TestResult {
    reset();
    with_server(cx, 0, HIGH, |_, snd, _| {
        let m = Sender(snd).call(Tag::new(1), [0; 4]);
        expect_code(m.err, Error::BAD_STATE, "CALL to a receiver without slots")?;
        ensure!(SEEN_COUNT.load(SeqCst) == 0, "the server received something");
        // It still waits: a send reaches it.
        Sender(snd)
            .send(Tag::new(2).send_nonblocking(), [0; 4])
            .ctx("SEND after the failed call")?;
        ensure!(
            Tag(SEEN_TAG[0].load(SeqCst)).label() == 2,
            "the server got label {}",
            Tag(SEEN_TAG[0].load(SeqCst)).label()
        );
        Ok(())
    })
}

pub fn no_call(cx: &mut Cx) -> TestResult {
    reset();
    with_server(cx, 1, HIGH, |cx, snd, _| {
        let s = SELF_ASPACE;
        let nc = cx.slot()?;
        s.copy_cap(snd, nc, rights::WRITE).ctx("COPY_CAP WRITE only")?;
        let r = (|| {
            let c = SELF_ASPACE.identify_cap(nc).ctx("IDENTIFY")?;
            ensure!(c.rights & rights::CALL == 0, "copy has CALL: {c:?}");
            let m = Sender(nc).call(Tag::new(1), [0; 4]);
            expect_code(m.err, Error::NO_RIGHTS, "CALL through a no-call sender")?;
            ensure!(SEEN_COUNT.load(SeqCst) == 0, "the call was delivered");
            Sender(nc).send(Tag::new(4), [0; 4]).ctx("SEND through it")?;
            ensure!(Tag(SEEN_TAG[0].load(SeqCst)).label() == 4, "not delivered");
            Ok(())
        })();
        cx.drop_slot(nc);
        r
    })
}

pub fn minted_no_call(cx: &mut Cx) -> TestResult {
    // MINT with WRITE only makes a no-call sender directly.
    crate::with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 3, rights::WRITE).ctx("MINT WRITE")?;
        let m = Sender(s).call(Tag::new(1).send_nonblocking(), [0; 4]);
        expect_code(m.err, Error::NO_RIGHTS, "CALL")?;
        let e = Sender(s).send(Tag::new(1).send_nonblocking(), [0; 4]).err();
        ensure!(e == Some(Error::WOULD_BLOCK), "SEND gave {e:?}");
        Ok(())
    })
}

pub fn payloads(cx: &mut Cx) -> TestResult {
    // Two senders minted with different payloads.
    reset();
    CFG_COUNT.store(2, SeqCst);
    let s = cx.slots::<3>()?;
    let r = (|| {
        let slots = [s[2]];
        let t = start_server(cx, HIGH, &slots, s[0], 0xAAAA, 0)?;
        let r = (|| {
            t.process.mint(s[1], 0xBBBB, 0).ctx("MINT B")?;
            Sender(s[1]).send(Tag::new(1), [0; 4]).ctx("SEND B")?;
            Sender(s[0]).send(Tag::new(2), [0; 4]).ctx("SEND A")?;
            let (p0, p1) = (SEEN_PAYLOAD[0].load(SeqCst), SEEN_PAYLOAD[1].load(SeqCst));
            ensure!(p0 == 0xBBBB && p1 == 0xAAAA, "payloads {p0:#x} {p1:#x}");
            Ok(())
        })();
        let _ = t.process.wait();
        t.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&s);
    r
}

/// The capabilities ktest sends, with their masks, and the type and rights
/// they must arrive with.
fn sent_caps() -> Result<[(u64, u64, u64, u64); 4], String> {
    let timer = SELF_ASPACE.identify_cap(slot::TIMER).ctx("IDENTIFY")?;
    Ok([
        (slot::CONSOLE, rights::READ, ty::CONSOLE, rights::READ),
        (slot::TIMER, 0, ty::TIMER, timer.rights),
        (slot::MEMORY, rights::READ, ty::MEMORY, rights::READ),
        (
            slot::SELF_ASPACE,
            rights::ALL | rights::WEAK,
            ty::ASPACE,
            (rights::ALL & !rights::WRITE) | rights::WEAK,
        ),
    ])
}

fn expect_summary(got: u64, want: &[(u64, u64, u64, u64)], what: &str) -> TestResult {
    for (i, &(_, _, t, r)) in want.iter().enumerate() {
        let g = got >> (16 * i) & 0xffff;
        ensure!(
            g == t | r << 8,
            "{what}: capability {i} arrived as type {} rights {:#x}, want type {t} rights {r:#x}",
            g & 0xff,
            g >> 8
        );
    }
    Ok(())
}

pub fn caps_on_call(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(5, SeqCst);
    let want = sent_caps()?;
    with_server(cx, 5, HIGH, |_, snd, _| {
        let buf = keep_rt::ipc_buffer();
        for n in 0..=4usize {
            let list: [(u64, u64); 4] = core::array::from_fn(|i| (want[i].0, want[i].1));
            buf.set_send_caps(&list[..n]);
            let m = Sender(snd).call(Tag::new(1).with_caps(n as u64), [0; 4]);
            m.result().ctx(&format!("CALL with {n} caps"))?;
            let t = Tag(SEEN_TAG[n].load(SeqCst));
            ensure!(
                t.caps() == n as u64 + 1,
                "{n} sent, tag says {} (with the return capability)",
                t.caps()
            );
            let c = SEEN_CAPS[n].load(SeqCst);
            expect_summary(c, &want[..n], &format!("{n} caps"))?;
        }
        Ok(())
    })
}

pub fn caps_on_reply(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(5, SeqCst);
    let want = sent_caps()?;
    for i in 0..4 {
        CFG_CAPS[i].store(IpcBuffer::cap_entry(want[i].0, want[i].1), SeqCst);
    }
    for n in 0..5 {
        CFG_REPLY_CAPS[n].store(n as u64, SeqCst);
    }
    let mine = cx.slots::<4>()?;
    let r = with_server(cx, 1, HIGH, |_, snd, _| {
        let buf = keep_rt::ipc_buffer();
        for n in 0..=4usize {
            buf.set_recv_slots(&mine);
            let m = Sender(snd).call(Tag::new(1).with_slots(4), [0; 4]);
            m.result().ctx(&format!("CALL for {n} caps"))?;
            ensure!(m.tag.caps() == n as u64, "reply tag says {} caps", m.tag.caps());
            expect_summary(caps_summary(&mine[..n]), &want[..n], &format!("{n} caps"))?;
            for &s in &mine {
                let _ = SELF_ASPACE.delete_cap(s);
            }
        }
        Ok(())
    });
    cx.drop_slots(&mine);
    r
}

const LENGTHS: [usize; 3] = [0, 64, 4096];

/// Strings on calls arrive whole, to a server of the same and of a higher
/// priority; once the server waits in its receive (from the second call
/// on), the IPC fast path carries them: its counter moves.
pub fn strings_on_call(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, info};
    for prio in [SAME, HIGH] {
        reset();
        CFG_COUNT.store(4, SeqCst); /* the strings, then a last plain call */
        // The server answers with reply-and-receive, so that it waits in
        // its receive when the next call comes, at either priority.
        CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
        with_server(cx, 1, prio, |_, snd, _| {
            let buf = keep_rt::ipc_buffer();
            for (n, &len) in LENGTHS.iter().enumerate() {
                fill_string(buf, len);
                let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
                let m = Sender(snd).call(Tag::new(1).with_string(), [0; 4]);
                let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
                m.result().ctx(&format!("CALL with {len} bytes"))?;
                let got = SEEN_STR_LEN[n].load(SeqCst);
                ensure!(got == len as u64, "{len} sent, {got} received (prio {prio})");
                ensure!(SEEN_STR_OK[n].load(SeqCst) == 1, "{len} bytes arrived wrong (prio {prio})");
                // the call and the reply-and-receive that answers it
                ensure!(
                    n == 0 || after >= before + 2,
                    "the {len}-byte call and its reply: {} on the fast path (prio {prio})",
                    after - before
                );
            }
            // The last message: the server answers it with a plain reply.
            Sender(snd).call(Tag::new(1), [0; 4]).result().ctx("last CALL")?;
            Ok(())
        })?;
    }
    Ok(())
}

pub fn strings_on_reply(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(3, SeqCst);
    for (n, &len) in LENGTHS.iter().enumerate() {
        CFG_REPLY_STR[n].store(len as u64, SeqCst);
    }
    with_server(cx, 1, HIGH, |_, snd, _| {
        let buf = keep_rt::ipc_buffer();
        for &len in &LENGTHS {
            buf.send_len = 0;
            let m = Sender(snd).call(Tag::new(1), [0; 4]);
            m.result().ctx("CALL")?;
            if len > 0 {
                ensure!(m.tag.has_string(), "reply of {len} bytes without STRING");
            }
            ensure!(string_ok(buf, len), "reply of {len} bytes: got {}", buf.received_len());
        }
        Ok(())
    })
}

pub fn string_too_long(cx: &mut Cx) -> TestResult {
    crate::with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 0, 0).ctx("MINT")?;
        let buf = keep_rt::ipc_buffer();
        fill_string(buf, 16);
        buf.send_len = 4097;
        let before = snapshot()?;
        let e = Sender(s)
            .send(Tag::new(1).with_string().send_nonblocking(), [0; 4])
            .err();
        buf.send_len = 0;
        ensure!(e == Some(Error::INVALID_ARG), "4097-byte string: {e:?}");
        unchanged(before)
    })
}

pub fn caps_beyond_slots(cx: &mut Cx) -> TestResult {
    reset();
    with_server(cx, 2, HIGH, |_, snd, _| {
        let buf = keep_rt::ipc_buffer();
        buf.set_send_caps(&[(slot::CONSOLE, 0), (slot::TIMER, 0), (slot::MEMORY, 0)]);
        let m = Sender(snd).call(Tag::new(1).with_caps(3), [0; 4]);
        m.result().ctx("CALL with 3 caps to 1 free slot")?;
        let t = Tag(SEEN_TAG[0].load(SeqCst));
        ensure!(t.caps() == 2, "tag says {} caps, want 2 (return + 1)", t.caps());
        let c = SEEN_CAPS[0].load(SeqCst) & 0xff;
        ensure!(c == ty::CONSOLE, "the first capability arrived as type {c}");
        Ok(())
    })
}

pub fn sender_errors(cx: &mut Cx) -> TestResult {
    crate::with_slots(cx, |_, [s, ro, p]| {
        let before = snapshot()?;
        expect_err(
            SELF_PROCESS.mint(s, 0, rights::EXEC),
            Error::INVALID_ARG,
            "MINT with EXEC",
        )?;
        expect_err(
            SELF_PROCESS.mint(slot::CONSOLE, 0, 0),
            Error::EXISTS,
            "MINT onto the console",
        )?;
        expect_err(SELF_PROCESS.mint(HOLE, 0, 0), Error::NO_CAPPAGE, "MINT to a hole")?;
        expect_err(SELF_PROCESS.mint(BEYOND, 0, 0), Error::OUT_OF_RANGE, "MINT beyond")?;
        SELF_ASPACE
            .copy_cap(slot::SELF_PROCESS, ro, rights::READ)
            .ctx("COPY_CAP")?;
        expect_err(Process(ro).mint(s, 0, 0), Error::NO_RIGHTS, "MINT via READ")?;
        unchanged(before)?;
        // A sender without WRITE cannot send.
        SELF_PROCESS.mint(s, 0, 0).ctx("MINT")?;
        SELF_ASPACE.copy_cap(s, p, rights::CALL).ctx("COPY_CAP CALL")?;
        let e = Sender(p).send(Tag::new(1).send_nonblocking(), [0; 4]).err();
        ensure!(e == Some(Error::NO_RIGHTS), "SEND without WRITE: {e:?}");
        Ok(())
    })
}

pub fn sender_stale(cx: &mut Cx) -> TestResult {
    crate::with_slots(cx, |_, [a, p, s]| {
        keep_abi::ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
        keep_abi::ACCOUNT.create_process(a, p).ctx("CREATE_PROCESS")?;
        Process(p).mint(s, 0, 0).ctx("MINT")?;
        keep_abi::ACCOUNT.destroy(p).ctx("DESTROY")?;
        let e = Sender(s).send(Tag::new(1).send_nonblocking(), [0; 4]).err();
        ensure!(e == Some(Error::STALE), "SEND to a destroyed process: {e:?}");
        let m = Sender(s).call(Tag::new(1), [0; 4]);
        expect_code(m.err, Error::STALE, "CALL to a destroyed process")?;
        keep_abi::ACCOUNT.destroy(a).ctx("DESTROY aspace")
    })
}

pub fn return_not_callable(cx: &mut Cx) -> TestResult {
    reset();
    CFG_MODE.store(MODE_RETURN_AS_CALL, SeqCst);
    with_server(cx, 1, HIGH, |_, snd, _| {
        Sender(snd).call(Tag::new(1), [0; 4]).result().ctx("CALL")
    })?;
    expect_code(
        SEEN_SECOND_ERR.load(SeqCst),
        Error::INVALID_METHOD,
        "return capability in CALL mode",
    )?;
    expect_code(SEEN_REPLY_ERR[0].load(SeqCst), Error(0), "the real reply")
}

pub fn stop_receiver(cx: &mut Cx) -> TestResult {
    reset();
    let s = cx.slots::<2>()?;
    let r = (|| {
        let t = start_server(cx, HIGH, &[s[1]], s[0], 0, 0)?;
        let r = (|| {
            // The server waits in its receive (it is of higher priority).
            let st = t.process.status().ctx("STATUS")?;
            ensure!(st.state == keep_abi::state::BLOCKED, "server is {st}");
            t.process.stop().ctx("STOP")?;
            t.process.start().ctx("START")?;
            let st = t.process.wait().ctx("WAIT")?;
            ensure!(
                st.code == 10 + err::BAD_STATE,
                "server {st}, its receive gave {}",
                keep_abi::error_name(SEEN_ERR[0].load(SeqCst))
            );
            Ok(())
        })();
        t.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&s);
    r
}

pub fn send_recv(cx: &mut Cx) -> TestResult {
    reset();
    CFG_MODE.store(MODE_ECHO, SeqCst);
    let me = cx.slot()?;
    let r = (|| {
        SELF_PROCESS.mint(me, 0x3e3e, 0).ctx("MINT to self")?;
        CFG_ECHO.store(me, SeqCst);
        with_server(cx, 1, HIGH, |_, snd, _| {
            let m = Sender(snd).send_recv(Tag::new(0x20), [5, 6, 7, 8], 2000);
            m.result().ctx("SEND_RECV")?;
            ensure!(
                m.tag.label() == 0x21 && m.words == [5, 6, 7, 8] && m.payload == 0x3e3e,
                "received label {:#x} words {:?} payload {:#x}",
                m.tag.label(),
                m.words,
                m.payload
            );
            ensure!(!m.tag.is_called(), "the echo is not a call");
            Ok(())
        })
    })();
    cx.drop_slot(me);
    r
}

pub fn ipc_buffer_fault(cx: &mut Cx) -> TestResult {
    crate::with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 0, 0).ctx("MINT")?;
        expect_err(
            SELF_PROCESS.set_ipc_buffer(0x5000_0000_0800),
            Error::INVALID_ARG,
            "unaligned buffer",
        )?;
        expect_err(
            SELF_PROCESS.set_ipc_buffer(0xffff_8000_0000_0000),
            Error::INVALID_ARG,
            "kernel-half buffer",
        )?;
        SELF_PROCESS
            .set_ipc_buffer(0x5555_0000_0000)
            .ctx("SET_IPC_BUFFER unmapped")?;
        let e = Sender(s)
            .send(Tag::new(1).with_string().send_nonblocking(), [0; 4])
            .err();
        let back = SELF_PROCESS.set_ipc_buffer(keep_rt::ipc_buffer_addr());
        back.ctx("SET_IPC_BUFFER back")?;
        ensure!(e == Some(Error::FAULT), "string send with an unmapped buffer: {e:?}");
        let _ = MEMORY;
        Ok(())
    })
}

/// The kernel keeps a finding that an IPC buffer is mapped only until a
/// mapping goes away: a buffer found good, then half unmapped, is FAULT;
/// mapped again, it is good again.
pub fn ipc_buffer_unmapped_later(cx: &mut Cx) -> TestResult {
    use keep_abi::{SELF_ASPACE, rights, ty};
    const BUF: u64 = 0x5555_0000_0000;
    let pages = [cx.retype(ty::PAGE)?, cx.retype(ty::PAGE)?];
    let r = crate::with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 0, 0).ctx("MINT")?;
        for (i, &p) in pages.iter().enumerate() {
            SELF_ASPACE.map(p, BUF + 4096 * i as u64, rights::READ | rights::WRITE).ctx("MAP")?;
        }
        SELF_PROCESS.set_ipc_buffer(BUF).ctx("SET_IPC_BUFFER")?;
        // Nobody receives: with the buffer good the send gets as far as WOULD_BLOCK.
        let send = || Sender(s).send(Tag::new(1).with_string().send_nonblocking(), [0; 4]).err();
        let first = send();
        let unmapped = SELF_ASPACE.unmap(BUF + 4096);
        let second = send();
        let remapped = SELF_ASPACE.map(pages[1], BUF + 4096, rights::READ | rights::WRITE);
        let third = send();
        SELF_PROCESS.set_ipc_buffer(keep_rt::ipc_buffer_addr()).ctx("SET_IPC_BUFFER back")?;
        unmapped.ctx("UNMAP")?;
        remapped.ctx("MAP again")?;
        ensure!(first == Some(Error::WOULD_BLOCK), "mapped buffer: {first:?}");
        ensure!(second == Some(Error::FAULT), "half-unmapped buffer: {second:?}");
        ensure!(third == Some(Error::WOULD_BLOCK), "mapped again: {third:?}");
        Ok(())
    });
    for (i, &p) in pages.iter().enumerate() {
        let _ = SELF_ASPACE.unmap(BUF + 4096 * i as u64);
        cx.drop_slot(p);
    }
    r
}

// ---- scheduling of message delivery --------------------------------------

/// A receiver that sets FLAG for every message and receives again.
fn flagger(_: &thread::Args) -> u64 {
    loop {
        let m = recv(Tag::new(0), 0);
        if m.err != 0 {
            return m.err;
        }
        FLAG.fetch_add(1, SeqCst);
    }
}

fn with_flagger(
    cx: &mut Cx,
    prio: u64,
    f: impl FnOnce(u64) -> TestResult,
) -> TestResult {
    FLAG.store(0, SeqCst);
    let s = cx.slot()?;
    let r = (|| {
        let t = thread::spawn(&mut cx.slots, "ktest-flag", prio, flagger, &[])?;
        let r = t.process.mint(s, 0, 0).ctx("MINT").and_then(|_| {
            // Let it reach its receive.
            TIMER.sleep(20).ctx("SLEEP")?;
            let st = t.process.status().ctx("STATUS")?;
            ensure!(st.state == keep_abi::state::BLOCKED, "receiver is {st}");
            f(s)
        });
        t.kill(&mut cx.slots);
        r
    })();
    cx.drop_slot(s);
    r
}

pub fn direct_switch(cx: &mut Cx) -> TestResult {
    with_flagger(cx, SAME, |s| {
        Sender(s).send(Tag::new(1), [0; 4]).ctx("SEND")?;
        // Delivered to a waiting receiver of the same priority: it ran
        // before the sender went on.
        ensure!(FLAG.load(SeqCst) == 1, "receiver had not run after SEND");
        Ok(())
    })
}

pub fn lower_receiver_waits(cx: &mut Cx) -> TestResult {
    with_flagger(cx, LOW, |s| {
        Sender(s).send(Tag::new(1), [0; 4]).ctx("SEND")?;
        ensure!(
            FLAG.load(SeqCst) == 0,
            "a lower-priority receiver ran before the sender"
        );
        TIMER.sleep(20).ctx("SLEEP")?;
        ensure!(FLAG.load(SeqCst) == 1, "the receiver never ran");
        Ok(())
    })
}

/// Calls and reply-and-receives that fit the fast path (words, a waiting
/// receiver the scheduler would run) are completed by it, with the results
/// of the general path; a call the fast path cannot take (a string) still
/// works.
pub fn fast_path_used(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, info};
    for prio in [SAME, HIGH] {
        reset();
        CFG_COUNT.store(4, SeqCst);
        CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
        let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
        with_server(cx, 1, prio, |_, snd, _| {
            for i in 0..3u64 {
                let m = Sender(snd).call(Tag::new(0x10 + i), [i, i + 1, i + 2, i + 3]);
                m.result().ctx("CALL")?;
                ensure!(
                    m.tag.label() == 0x11 + i && m.words[3] == i && !m.tag.is_called(),
                    "reply {i}: tag {:#x}, words {:?}",
                    m.tag.0,
                    m.words
                );
            }
            let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
            // Three calls and at least two reply-and-receives.
            ensure!(after >= before + 5, "fast path completed {} of them", after - before);
            keep_rt::ipc_buffer().set_string(b"slow");
            let m = Sender(snd).call(Tag::new(0x20).with_string(), [0; 4]);
            m.result().ctx("CALL with a string")?;
            ensure!(m.tag.label() == 0x21, "string call: reply label {:#x}", m.tag.label());
            Ok(())
        })?;
        for i in 0..3 {
            let w = words_of(i);
            ensure!(w == [i as u64, i as u64 + 1, i as u64 + 2, i as u64 + 3], "server saw {w:?} (prio {prio})");
            let t = Tag(SEEN_TAG[i].load(SeqCst));
            ensure!(t.is_called() && t.caps() == 1, "server tag {:#x}", t.0);
        }
    }
    Ok(())
}

/// The fast path's reply-and-receive names two or three receive slots (two
/// are read by a path of their own) and each call carries a capability to
/// the second: the capabilities arrive, and the fast path takes the calls
/// and the replies.
pub fn fast_path_recv_slots(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, info};
    let want = sent_caps()?;
    for nslots in [2, 3] {
        for prio in [SAME, HIGH] {
            reset();
            CFG_COUNT.store(4, SeqCst);
            CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
            let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
            with_server(cx, nslots, prio, |_, snd, _| {
                keep_rt::ipc_buffer().set_send_caps(&[(want[1].0, want[1].1)]);
                for i in 0..4u64 {
                    let m = Sender(snd).call(Tag::new(0x10 + i).with_caps(1), [i, 0, 0, 0]);
                    m.result().ctx("CALL with a capability")?;
                    ensure!(m.tag.label() == 0x11 + i, "reply {i}: label {:#x}", m.tag.label());
                }
                let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
                // The calls after the first (which may find the server not yet
                // waiting) and at least two reply-and-receives.
                ensure!(
                    after >= before + 5,
                    "{nslots} slots, prio {prio}: fast path completed {} of them",
                    after - before
                );
                Ok(())
            })?;
            for i in 0..4 {
                let t = Tag(SEEN_TAG[i].load(SeqCst));
                ensure!(t.is_called() && t.caps() == 2, "{nslots} slots: server tag {:#x}", t.0);
                expect_summary(SEEN_CAPS[i].load(SeqCst), &want[1..2], &format!("{nslots} slots, call {i}"))?;
            }
        }
    }
    Ok(())
}

/// Two calls to a server at `prio` naming `nslots` receive slots, whose
/// first reply-and-receive (set up by `configure`, after `reset`) fails with
/// `want` before it sends anything: the caller still waits, a plain reply
/// through the same return capability reaches it, and the server receives
/// the second call.
fn failed_reply_recv(
    cx: &mut Cx,
    nslots: usize,
    prio: u64,
    configure: impl Fn(),
    want: u64,
    what: &str,
) -> TestResult {
    failed_reply_recv_at(cx, nslots, None, prio, configure, want, what)
}

/// The same with the server's receive slots given (`at`), else from the pool.
fn failed_reply_recv_at(
    cx: &mut Cx,
    nslots: usize,
    at: Option<&[u64]>,
    prio: u64,
    configure: impl Fn(),
    want: u64,
    what: &str,
) -> TestResult {
    reset();
    CFG_COUNT.store(2, SeqCst);
    CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
    configure();
    let calls = |_: &mut Cx, snd: u64, _: &[u64]| -> TestResult {
        for i in 0..2u64 {
            let m = Sender(snd).call(Tag::new(0x30 + i), [i, 0, 0, 0]);
            m.result().ctx("CALL")?;
            ensure!(m.tag.label() == 0x31 + i, "{what}: reply {i}: label {:#x}", m.tag.label());
        }
        Ok(())
    };
    match at {
        Some(slots) => {
            let snd = cx.slot()?;
            let r = with_server_at(cx, snd, &slots[..nslots], prio, calls);
            cx.drop_slot(snd);
            r?
        }
        None => with_server(cx, nslots, prio, calls)?,
    }
    let e = SEEN_REPLY_ERR[0].load(SeqCst);
    ensure!(e == want, "{what}: the reply-and-receive gave {e}, want {want}");
    let e = SEEN_SECOND_ERR.load(SeqCst);
    ensure!(e == 0, "{what}: the plain reply after it gave {e}: the return capability was used");
    ensure!(SEEN_COUNT.load(SeqCst) == 2, "{what}: the server received {} calls", SEEN_COUNT.load(SeqCst));
    Ok(())
}

/// A reply-and-receive whose second receive slot lies in a hole fails with
/// NO_CAPPAGE before it sends anything (the fast path leaves it to the
/// general path, which checks every slot first).
pub fn fast_path_recv_slot_hole(cx: &mut Cx) -> TestResult {
    for prio in [SAME, HIGH] {
        let what = format!("a hole, prio {prio}");
        failed_reply_recv(cx, 2, prio, || CFG_RR_SLOT1.store(HOLE, SeqCst), err::NO_CAPPAGE, &what)?;
    }
    Ok(())
}

/// A reply-and-receive naming six or seven receive slots (the tag's field
/// holds up to seven, MAX_RECV_SLOTS is five) is INVALID_ARG and sends
/// nothing.
pub fn reply_recv_too_many_slots(cx: &mut Cx) -> TestResult {
    for n in [6, 7] {
        let what = format!("{n} slots");
        failed_reply_recv(cx, 1, SAME, || CFG_RR_NSLOTS.store(n, SeqCst), err::INVALID_ARG, &what)?;
    }
    Ok(())
}

/// Receive slots that name one slot twice are INVALID_ARG before anything
/// happens (a capability carried by a call would overwrite its return
/// capability): a receive, a call's reply slots, and a reply-and-receive,
/// which sends nothing.
pub fn duplicate_recv_slots(cx: &mut Cx) -> TestResult {
    let s = cx.slots::<1>()?;
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[s[0], s[0]]);
    let m = recv(Tag::new(0).with_slots(2).recv_nonblocking(), 0);
    cx.drop_slots(&s);
    ensure!(m.err == err::INVALID_ARG, "a receive naming one slot twice: {}", m.err);
    reset();
    CFG_COUNT.store(1, SeqCst);
    with_server(cx, 1, HIGH, |cx, snd, _| {
        let r = cx.slots::<1>()?;
        let buf = keep_rt::ipc_buffer();
        buf.set_recv_slots(&[r[0], r[0]]);
        let m = Sender(snd).call(Tag::new(0x50).with_slots(2), [0; 4]);
        cx.drop_slots(&r);
        ensure!(m.err == err::INVALID_ARG, "a call naming one reply slot twice: {}", m.err);
        ensure!(SEEN_COUNT.load(SeqCst) == 0, "the server received the refused call");
        let m = Sender(snd).call(Tag::new(0x52), [0; 4]);
        m.result().ctx("CALL after the refused one")?;
        ensure!(Tag(SEEN_TAG[0].load(SeqCst)).label() == 0x52, "the server saw {:#x}", SEEN_TAG[0].load(SeqCst));
        Ok(())
    })?;
    for prio in [SAME, HIGH] {
        let what = format!("one slot twice, prio {prio}");
        failed_reply_recv(cx, 2, prio, || CFG_RR_SLOT1.store(SAME_AS_FIRST, SeqCst), err::INVALID_ARG, &what)?;
    }
    Ok(())
}

/// A call may bound its wait for the reply (rax, as a receive's time-out):
/// TIMEOUT when no reply comes in time, and a reply made later finds its
/// return capability STALE; a reply in time is delivered and leaves no
/// time-out behind; a time-out over the limit is INVALID_ARG and sends nothing.
pub fn call_timeout(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(2, SeqCst);
    CFG_MODE.store(MODE_REPLY_LATE, SeqCst);
    CFG_DELAY.store(200, SeqCst);
    with_server(cx, 1, HIGH, |_, snd, _| {
        let call = |label: u64, t: u64| keep_abi::ipc(snd, Tag::new(label).with_mode(tag::MODE_CALL), [7, 0, 0, 0], t);
        let m = call(0x60, 1 << 40);
        ensure!(m.err == err::INVALID_ARG && SEEN_COUNT.load(SeqCst) == 0, "an oversized time-out: {}, server saw {}", m.err, SEEN_COUNT.load(SeqCst));
        // The server replies after 200 ms: a 20 ms wait times out ...
        let m = call(0x60, 20);
        ensure!(m.err == err::TIMEOUT, "a call answered late: {} (want TIMEOUT)", m.err);
        // Let the server make its late reply (STALE) and receive again ...
        let w = recv(Tag::new(0), 400);
        ensure!(w.err == err::TIMEOUT, "waiting for the server: {}", w.err);
        // ... then a 2 s call gets its reply, 200 ms late.
        let m = call(0x62, 2000);
        m.result().ctx("a call answered in time")?;
        ensure!(m.tag.label() == 0x63, "reply label {:#x}", m.tag.label());
        ensure!(SEEN_REPLY_ERR[0].load(SeqCst) == err::STALE, "the late reply gave {}, want STALE", SEEN_REPLY_ERR[0].load(SeqCst));
        Ok(())
    })?;
    // No time-out is left behind: a process that waits past it in a plain
    // receive is not woken by it.
    let m = recv(Tag::new(0), 2300);
    ensure!(m.err == err::TIMEOUT, "a later receive: {}", m.err);
    Ok(())
}

/// Calls with a time-out answered by reply-and-receive from a server at
/// the caller's priority (the fast path's reply): the caller's time-out
/// must leave the timer list with the reply, or its next timed call puts
/// it on the list twice (found by the space-bank work: the machine hung).
pub fn timed_calls_fast_replies(cx: &mut Cx) -> TestResult {
    reset();
    CFG_COUNT.store(8, SeqCst);
    CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
    with_server(cx, 1, SAME, |_, snd, _| {
        for i in 0..8u64 {
            let m = keep_abi::ipc(snd, Tag::new(0x80 + i).with_mode(tag::MODE_CALL), [i, 0, 0, 0], 5000);
            m.result().ctx("a timed call")?;
            let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
            ensure!(bad == 0, "after timed call {i}: {bad} kernel invariant violations (the timer list)");
        }
        Ok(())
    })?;
    // None of those time-outs fires later.
    let m = recv(Tag::new(0), 100);
    ensure!(m.err == err::TIMEOUT, "a later receive: {}", m.err);
    Ok(())
}

static QUEUED_ERR: AtomicU64 = Z;

fn send_through(a: &thread::Args) -> u64 {
    QUEUED_ERR.store(u64::MAX, SeqCst);
    let e = Sender(a.words[0]).send(Tag::new(0x70), [0; 4]).err().map_or(0, |e| e.0);
    QUEUED_ERR.store(e, SeqCst);
    0
}

/// A sender queued (its receiver is not receiving) through a wrapper is
/// woken at once with STALE when the wrapper, or one the wrapper is built
/// on, is revoked; a sender queued through another wrapper stays queued.
pub fn wrapper_revoked_wakes_queued_sender(cx: &mut Cx) -> TestResult {
    for inner_revoked in [false, true] {
        let s = cx.slots::<4>()?;
        let (snd, w1, w2, other) = (s[0], s[1], s[2], s[3]);
        // A receiver that never receives: created, not started.
        let target = thread::create(&mut cx.slots, "ktest-deaf", LOW, send_through, &[])?;
        let r = (|| {
            target.process.mint(snd, 1, rights::WRITE).ctx("MINT")?;
            ACCOUNT.create_wrapper(snd, w1, rights::ALL).ctx("wrap")?;
            ACCOUNT.create_wrapper(w1, w2, rights::ALL).ctx("wrap the wrapper")?;
            ACCOUNT.create_wrapper(snd, other, rights::ALL).ctx("another wrapper")?;
            // Above ktest's priority: it runs at once and blocks in the queue.
            let t = thread::spawn(&mut cx.slots, "ktest-sender", HIGH, send_through, &[w2])?;
            let u = thread::spawn(&mut cx.slots, "ktest-sender2", HIGH, send_through, &[other])?;
            let r = (|| {
                let st = t.process.status().ctx("STATUS")?;
                ensure!(st.state == keep_abi::state::BLOCKED, "the sender is {st}, not queued (its send gave {})", QUEUED_ERR.load(SeqCst));
                ACCOUNT.destroy(if inner_revoked { w1 } else { w2 }).ctx("DESTROY the wrapper")?;
                // It ran at once (higher priority) and ended.
                let st = t.process.status().ctx("STATUS")?;
                ensure!(st.state == keep_abi::state::EXITED, "after the revocation the sender is {st}");
                ensure!(QUEUED_ERR.load(SeqCst) == err::STALE, "its send gave {}", QUEUED_ERR.load(SeqCst));
                let st = u.process.status().ctx("STATUS")?;
                ensure!(st.state == keep_abi::state::BLOCKED, "the sender through another wrapper is {st}");
                Ok(())
            })();
            t.kill(&mut cx.slots);
            u.kill(&mut cx.slots);
            r
        })();
        target.kill(&mut cx.slots);
        for w in [w2, w1, other] {
            let _ = ACCOUNT.destroy(w);
        }
        cx.drop_slots(&s);
        r.map_err(|e| format!("{} revoked: {e}", if inner_revoked { "inner wrapper" } else { "wrapper" }))?;
    }
    Ok(())
}

/// Receive slots that reach one slot through two capability addresses
/// (one cappage mapped at both) are a slot named twice: INVALID_ARG before
/// anything happens, for a receive, a call's reply slots and a
/// reply-and-receive (fast path and general path; two and three slots).
/// The same index in two different cappages is two slots.
pub fn aliased_recv_slots(cx: &mut Cx) -> TestResult {
    const A: u64 = 0x6200_0000;
    const B: u64 = 0x6300_0000;
    const C: u64 = 0x6400_0000;
    let cp = cx.retype(ty::CAPPAGE)?;
    let other = match cx.retype(ty::CAPPAGE) {
        Ok(o) => o,
        Err(e) => {
            let _ = MEMORY.reclaim(cp);
            cx.drop_slot(cp);
            return Err(e);
        }
    };
    let r = SELF_ASPACE
        .map_cappage(cp, A)
        .ctx("MAP_CAPPAGE")
        .and_then(|_| SELF_ASPACE.map_cappage(cp, B).ctx("MAP_CAPPAGE at a second address"))
        .and_then(|_| SELF_ASPACE.map_cappage(other, C).ctx("MAP_CAPPAGE of another"))
        .and_then(|_| aliased_slots_refused(cx, A, B, C));
    for at in [A, B, C] {
        let _ = SELF_ASPACE.unmap_cappage(at);
    }
    for c in [cp, other] {
        let _ = MEMORY.reclaim(c);
        cx.drop_slot(c);
    }
    r
}

fn aliased_slots_refused(cx: &mut Cx, a: u64, b: u64, c: u64) -> TestResult {
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[a + 3, b + 3]);
    let m = recv(Tag::new(0).with_slots(2).recv_nonblocking(), 0);
    ensure!(m.err == err::INVALID_ARG, "a receive into one slot by two addresses: {}", m.err);
    buf.set_recv_slots(&[a + 3, c + 3]);
    let m = recv(Tag::new(0).with_slots(2).recv_nonblocking(), 0);
    ensure!(m.err == err::WOULD_BLOCK, "a receive into one index of two cappages: {}", m.err);
    // A call whose reply slots alias: refused before it is sent.
    reset();
    CFG_COUNT.store(1, SeqCst);
    with_server(cx, 1, HIGH, |_, snd, _| {
        let buf = keep_rt::ipc_buffer();
        buf.set_recv_slots(&[a + 5, b + 5]);
        let m = Sender(snd).call(Tag::new(0x50).with_slots(2), [0; 4]);
        ensure!(m.err == err::INVALID_ARG, "a call whose reply slots alias: {}", m.err);
        ensure!(SEEN_COUNT.load(SeqCst) == 0, "the server received the refused call");
        let m = Sender(snd).call(Tag::new(0x52), [0; 4]);
        m.result().ctx("CALL after the refused one")?;
        Ok(())
    })?;
    // A server's reply-and-receive naming the first slot again through the
    // other address: refused, nothing sent (the server then replies alone);
    // through a different cappage: served.
    let slots = [a + 7, a + 8, a + 9];
    for prio in [SAME, HIGH] {
        for n in [2, 3] {
            let what = format!("aliased, {n} slots, prio {prio}");
            failed_reply_recv_at(cx, n, Some(&slots), prio, || CFG_RR_SLOT1.store(b + 7, SeqCst), err::INVALID_ARG, &what)?;
            let what = format!("one index in two cappages, {n} slots, prio {prio}");
            failed_reply_recv_at(cx, n, Some(&slots), prio, || CFG_RR_SLOT1.store(c + 7, SeqCst), 0, &what)?;
            // The slots are ours: empty them for the next round.
            for &s in slots.iter().chain([c + 7].iter()) {
                let _ = SELF_ASPACE.delete_cap(s);
            }
        }
    }
    Ok(())
}

/// IPC0037: calls carrying a string and a capability together, to a
/// server of the same, a higher and a lower priority that answers with
/// reply-and-receive: each call's string and capability arrive whole, the
/// reply comes back with the server's words, and where the server waits in
/// its receive and runs next (the same or a higher priority, from the
/// second call on) the fast path carries the call and the answer.  A lower
/// server does not run next (ktest stays runnable above it), so there the
/// general path does the same work.
pub fn string_and_cap_calls(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, info};
    let want = sent_caps()?;
    for prio in [SAME, HIGH, LOW] {
        reset();
        CFG_COUNT.store(4, SeqCst);
        CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
        with_server(cx, 2, prio, |_, snd, _| {
            let buf = keep_rt::ipc_buffer();
            for (n, len) in [64usize, 200, 4096, 1].into_iter().enumerate() {
                fill_string(buf, len);
                buf.set_send_caps(&[(want[2].0, want[2].1)]);
                let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
                let m = Sender(snd).call(Tag::new(0x30 + n as u64).with_string().with_caps(1), [n as u64, 7, 8, 9]);
                let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
                m.result().ctx(&format!("CALL with {len} bytes and a capability (prio {prio})"))?;
                ensure!(
                    m.tag.label() == 0x31 + n as u64 && m.words == [9, 8, 7, n as u64],
                    "reply {n} (prio {prio}): tag {:#x}, words {:?}",
                    m.tag.0,
                    m.words
                );
                let got = SEEN_STR_LEN[n].load(SeqCst);
                ensure!(got == len as u64, "{len} bytes sent, {got} received (prio {prio})");
                ensure!(SEEN_STR_OK[n].load(SeqCst) == 1, "{len} bytes arrived wrong (prio {prio})");
                let t = Tag(SEEN_TAG[n].load(SeqCst));
                ensure!(
                    t.is_called() && t.caps() == 2 && t.has_string() && t.label() == 0x30 + n as u64,
                    "server tag {:#x} (prio {prio})",
                    t.0
                );
                expect_summary(SEEN_CAPS[n].load(SeqCst), &want[2..3], &format!("prio {prio}, call {n}"))?;
                // The call and the reply-and-receive that answered it (the
                // last call's plain reply may go either way).
                if prio != LOW && n > 0 && n < 3 {
                    ensure!(
                        after >= before + 2,
                        "call {n} with a string and a capability and its answer: {} on the fast path (prio {prio})",
                        after - before
                    );
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// IPC0038: three senders queued on ktest (which is not receiving), the
/// second destroyed while it waits in the middle of the queue: it is taken
/// out of the queue, ktest then receives the first's and the third's
/// messages (told apart by their senders' payloads) and nothing more, and
/// the kernel's invariants hold.
pub fn queued_sender_destroyed(cx: &mut Cx) -> TestResult {
    let s = cx.slots::<3>()?;
    let r = (|| {
        for (i, &x) in s.iter().enumerate() {
            SELF_PROCESS.mint(x, 0x5100 + i as u64, rights::WRITE).ctx("MINT")?;
        }
        // Above ktest's priority: each runs at once and blocks in the queue.
        let mut ts = alloc::vec::Vec::new();
        for &x in &s {
            ts.push(thread::spawn(&mut cx.slots, "ktest-queued", HIGH, send_through, &[x])?);
        }
        let r = (|| {
            for t in &ts {
                let st = t.process.status().ctx("STATUS")?;
                ensure!(st.state == keep_abi::state::BLOCKED, "a sender is {st}, not queued");
            }
            Ok(())
        })();
        let middle = ts.remove(1);
        middle.kill(&mut cx.slots);
        let mut got = alloc::vec::Vec::new();
        let r = r.and_then(|_| loop {
            let m = recv(Tag::new(0), 200);
            if m.err == err::TIMEOUT {
                break Ok(());
            }
            m.result().ctx("RECV")?;
            ensure!(m.tag.label() == 0x70, "a message with label {:#x}", m.tag.label());
            got.push(m.payload);
            ensure!(got.len() <= 2, "more messages than senders left: {got:x?}");
        });
        for t in ts {
            t.kill(&mut cx.slots);
        }
        r?;
        got.sort();
        ensure!(got == [0x5100, 0x5102], "received from {got:x?}, want the first and the third sender");
        crate::stress::invariants(cx)
    })();
    for &x in &s {
        let _ = SELF_ASPACE.delete_cap(x);
    }
    cx.drop_slots(&s);
    r
}

/// IPC0039: calls that name a capability the kernel cannot send, with and
/// without a string, to a server of the same and of a higher priority
/// waiting in its receive (where the fast path would take a good call):
/// an empty slot is INVALID_CAP, a hole NO_CAPPAGE, rights bits outside
/// ALL and WEAK INVALID_ARG, and so is a string longer than MAX_STRING
/// with a good capability; the server receives none of them (the fast path
/// gives such a call to the general path, which refuses it, rather than
/// sending it without its capability or its string) and answers the next
/// good call.
pub fn bad_cap_calls(cx: &mut Cx) -> TestResult {
    let empty = cx.slot()?;
    let r = (|| {
        for prio in [SAME, HIGH] {
            for str in [false, true] {
                reset();
                CFG_COUNT.store(2, SeqCst);
                CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
                with_server(cx, 2, prio, |_, snd, _| {
                    let what = |w: &str| format!("{w} (prio {prio}, string {str})");
                    let buf = keep_rt::ipc_buffer();
                    let call = |buf: &mut IpcBuffer, label: u64| {
                        fill_string(buf, 32);
                        let t = Tag::new(label).with_caps(1);
                        Sender(snd).call(if str { t.with_string() } else { t }, [label, 0, 0, 0])
                    };
                    buf.set_send_caps(&[(slot::TIMER, 0)]);
                    call(buf, 0x40).result().ctx(&what("first CALL"))?;
                    let bad = [
                        (IpcBuffer::cap_entry(empty, 0), Error::INVALID_CAP, "an empty slot"),
                        (IpcBuffer::cap_entry(HOLE, 0), Error::NO_CAPPAGE, "a hole"),
                        (slot::TIMER | 1 << 63, Error::INVALID_ARG, "rights bit 31"),
                    ];
                    for (w, e, name) in bad {
                        buf.send_caps[0] = w;
                        let m = call(buf, 0x41);
                        ensure!(
                            m.err == e.0,
                            "{}: error {}, want {} (the server got {} messages, the last with tag {:#x})",
                            what(&format!("CALL with {name}")),
                            m.err,
                            e.0,
                            SEEN_COUNT.load(SeqCst),
                            SEEN_TAG[1].load(SeqCst)
                        );
                        ensure!(SEEN_COUNT.load(SeqCst) == 1, "{}: the server received it", what(name));
                    }
                    if str {
                        // A string longer than the kernel carries, with a good capability.
                        buf.set_send_caps(&[(slot::TIMER, 0)]);
                        buf.send_len = keep_abi::layout::MAX_STRING + 1;
                        let m = Sender(snd).call(Tag::new(0x41).with_caps(1).with_string(), [0; 4]);
                        ensure!(
                            m.err == Error::INVALID_ARG.0,
                            "{}: error {}, want INVALID_ARG (the server got {} messages, the last with tag {:#x})",
                            what("CALL with a string of MAX_STRING + 1 bytes"),
                            m.err,
                            SEEN_COUNT.load(SeqCst),
                            SEEN_TAG[1].load(SeqCst)
                        );
                    }
                    buf.set_send_caps(&[(slot::TIMER, 0)]);
                    let m = call(buf, 0x42);
                    m.result().ctx(&what("last CALL"))?;
                    ensure!(m.tag.label() == 0x43, "{}: reply label {:#x}", what("last CALL"), m.tag.label());
                    ensure!(SEEN_COUNT.load(SeqCst) == 2, "{}: the server received {}", what("last CALL"), SEEN_COUNT.load(SeqCst));
                    Ok(())
                })?;
            }
        }
        Ok(())
    })();
    cx.drop_slots(&[empty]);
    r
}

/// IPC0041: calls (with a reply time-out and without) carrying none, one
/// and two capabilities to a
/// server of the same, a higher and a lower priority that answers each by
/// reply-and-receive with a receive time-out and one, two or three receive
/// slots (the return capability's and one per capability): every reply
/// comes back with its words, the server receives each call's capabilities
/// in the slots it named, the kernel's timer list stays sound after every
/// call, and none of the callers' time-outs fires later.
pub fn timed_reply_recv_slots(cx: &mut Cx) -> TestResult {
    use keep_abi::KERNEL;
    let want = sent_caps()?;
    for prio in [SAME, HIGH, LOW] {
        for ncaps in 0..3usize {
            reset();
            CFG_COUNT.store(4, SeqCst);
            CFG_MODE.store(MODE_REPLY_RECV, SeqCst);
            CFG_TIMEOUT.store(4000, SeqCst);
            let what = |n: usize| format!("prio {prio}, {ncaps} capabilities, call {n}");
            with_server(cx, ncaps + 1, prio, |_, snd, _| {
                let buf = keep_rt::ipc_buffer();
                for n in 0..4usize {
                    let caps: alloc::vec::Vec<(u64, u64)> = want[..ncaps].iter().map(|c| (c.0, c.1)).collect();
                    buf.set_send_caps(&caps);
                    let tag = Tag::new(0x90 + n as u64).with_mode(tag::MODE_CALL).with_caps(ncaps as u64);
                    // Calls 0 and 1 with a reply time-out, 2 and 3 without.
                    let m = keep_abi::ipc(snd, tag, [n as u64, 3, 4, 5], if n < 2 { 5000 } else { 0 });
                    m.result().ctx(&what(n))?;
                    ensure!(
                        m.tag.label() == 0x91 + n as u64 && m.words == [5, 4, 3, n as u64],
                        "{}: reply tag {:#x}, words {:?}",
                        what(n),
                        m.tag.0,
                        m.words
                    );
                    let t = Tag(SEEN_TAG[n].load(SeqCst));
                    ensure!(
                        t.is_called() && t.caps() == ncaps as u64 + 1 && t.label() == 0x90 + n as u64,
                        "{}: the server's tag {:#x}",
                        what(n),
                        t.0
                    );
                    expect_summary(SEEN_CAPS[n].load(SeqCst), &want[..ncaps], &what(n))?;
                    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
                    ensure!(bad == 0, "{}: {bad} kernel invariant violations", what(n));
                }
                Ok(())
            })?;
            // No caller's time-out fires later.
            let m = recv(Tag::new(0), 50);
            ensure!(m.err == err::TIMEOUT, "prio {prio}, {ncaps} capabilities: a later receive: {}", m.err);
        }
    }
    Ok(())
}

/// IPC0042: the methods that read or write the caller's IPC buffer refuse a
/// caller without one (none set, or one not mapped) with FAULT and change
/// nothing: RECV naming receive slots (a RECV naming none still gets as
/// far as WOULD_BLOCK), PROCESS.READ_REGS and WRITE_REGS of a created
/// child, whose registers then read as before.
pub fn no_ipc_buffer(cx: &mut Cx) -> TestResult {
    use keep_abi::reg;
    let c = crate::child::spawn(cx, crate::child::LOOP)?;
    let r = (|| {
        let buf = keep_rt::ipc_buffer();
        c.process.read_regs().ctx("READ_REGS")?;
        let before = buf.regs();
        ensure!(before[reg::RIP as usize] == crate::child::CODE, "the child's rip {:#x}", before[reg::RIP as usize]);
        let mut changed = before;
        changed[reg::RIP as usize] = crate::child::CODE + 1;
        for (what, addr) in [("no IPC buffer", 0u64), ("an unmapped IPC buffer", 0x5555_0000_0000)] {
            buf.set_regs(&changed);
            SELF_PROCESS.set_ipc_buffer(addr).ctx("SET_IPC_BUFFER")?;
            let slots = recv(Tag::new(0).with_slots(1).recv_nonblocking(), 0).err;
            let none = recv(Tag::new(0).recv_nonblocking(), 0).err;
            let read = c.process.read_regs();
            let write = c.process.write_regs();
            SELF_PROCESS.set_ipc_buffer(keep_rt::ipc_buffer_addr()).ctx("SET_IPC_BUFFER back")?;
            expect_code(slots, Error::FAULT, &format!("RECV naming a receive slot with {what}"))?;
            expect_code(none, Error::WOULD_BLOCK, &format!("RECV naming none with {what}"))?;
            expect_err(read, Error::FAULT, &format!("READ_REGS with {what}"))?;
            expect_err(write, Error::FAULT, &format!("WRITE_REGS with {what}"))?;
            c.process.read_regs().ctx("READ_REGS after")?;
            ensure!(buf.regs() == before, "{what}: the child's registers changed");
        }
        let st = c.process.status().ctx("STATUS")?;
        ensure!(st.state == keep_abi::state::CREATED, "the child is {st}");
        Ok(())
    })();
    crate::child::release(cx, c);
    r
}

//! BLK0010, BLK0011: the block server's request rings (`RING`, `RING_END`,
//! `KICK`; docs/block.md, "Request rings").  BLK0010: every refusal of
//! `RING`; writes and reads through the ring, read back by the message
//! path; every malformed descriptor completed with its status and its id,
//! the disk and the pages unchanged, good requests beside them served;
//! indices out of range take nothing; `RING_END` gives the buffer back.
//! BLK0011: the server ends (QUIT) under a client's ring: the client's
//! next submit fails, and it sets its ring up again with the server
//! started anew, on the same dataspaces.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, SELF_ASPACE, Sender, Tag, rights, slot};
use keep_blk::ring::{self, Desc, OP_READ, OP_WRITE};
use keep_blk::{
    Admin, BAD_BUFFER, BAD_REQUEST, Client, IN_USE, NO_RIGHTS, NOT_FOUND, NOT_NOTIFICATION, OK, OUT_OF_RANGE, RING, Ring,
    SECTOR,
};
use keep_dataspace::{Dataspace, Manager};
use keep_rt::println;
use keep_virtio::checksum;

use crate::drivers::{dss, quit_pci, start_blk_ds, start_pci, stop, with_blk_ds};
use crate::srvfuzz::Rng;
use crate::{Ctx, Cx, TestResult};

const VA: u64 = 0x0000_5e40_0000_0000;
const RVA: u64 = 0x0000_5e50_0000_0000;
const BRVA: u64 = 0x0000_5e60_0000_0000;
const A_FIRST: u64 = 512;
const A_SECTORS: u64 = 1024;
const B_FIRST: u64 = 1536;
const B_SECTORS: u64 = 512;
/// A's data dataspace: 64 KiB.
const PAGES: u64 = 16;
const SIZE: usize = PAGES as usize * 4096;

fn rd(id: u64, buffer: u64, sector: u64, offset: u32, count: u32) -> Desc {
    Desc { id, sector, offset, count, op: OP_READ, buffer: buffer as u32 }
}
fn wr(id: u64, buffer: u64, sector: u64, offset: u32, count: u32) -> Desc {
    Desc { id, sector, offset, count, op: OP_WRITE, buffer: buffer as u32 }
}

/// Posts `ds`, submits them and waits for all: (id, status) in the order completed.
fn run(r: &mut Ring, ds: &[Desc]) -> Result<Vec<(u64, u64)>, alloc::string::String> {
    for d in ds {
        ensure!(r.post(d), "the ring is full with {} outstanding", r.outstanding());
    }
    r.submit().ctx("submit")?;
    let mut got = Vec::new();
    r.wait(ds.len() as u32, |id, st| got.push((id, st))).ctx("wait")?;
    Ok(got)
}

fn all_ok(got: &[(u64, u64)]) -> TestResult {
    for &(id, st) in got {
        ensure!(st == OK, "request {id}: {}", keep_blk::status_name(st));
    }
    Ok(())
}

/// RING with a raw capability choice (None: no capability).
fn ring_call(c: Client, buffer: u64, offset: u64, cap: Option<u64>) -> u64 {
    let mut tag = Tag::new(RING);
    if let Some(x) = cap {
        tag = tag.with_caps(keep_rt::ipc_buffer().set_send_caps(&[(x, 0)]));
    }
    let m = c.0.call(tag, [buffer, offset, 0, 0]);
    if m.err != 0 { 1000 + m.err } else { m.words[0] }
}

/// A dataspace of `pages` mapped at `va`, with a share of `share_rights` at `share`.
fn dataspace(m: Manager, bank: u64, pages: u64, own: u64, va: u64, share: u64, share_rights: u64) -> TestResult {
    dss(m.create(pages, bank, own), "CREATE")?;
    dss(Dataspace(Sender(own)).map(slot::SELF_ASPACE, va, 0, pages, rights::READ | rights::WRITE), "MAP")?;
    dss(Dataspace(Sender(own)).share(share_rights, share), "SHARE").map(drop)
}

pub fn blk_rings(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, m, bank| {
        let s = cx.slots::<14>()?;
        let r = session(admin, m, bank, s);
        cx.drop_slots(&s);
        r
    })
}

fn session(admin: Admin, m: Manager, bank: u64, s: [u64; 14]) -> TestResult {
    let [a, b, d, d_rw, d_ro, rd_, r_rw, r_ro, note, brd, br_rw, bnote, bdata, bshare] = s;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    dataspace(m, bank, PAGES, d, VA, d_rw, rights::READ | rights::WRITE)?;
    dss(Dataspace(Sender(d)).share(rights::READ, d_ro), "SHARE read-only")?;
    dataspace(m, bank, 1, rd_, RVA, r_rw, rights::READ | rights::WRITE)?;
    dss(Dataspace(Sender(rd_)).share(rights::READ, r_ro), "SHARE the ring read-only")?;
    ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
    // SAFETY: mapped read-write above.
    let mem = unsafe { core::slice::from_raw_parts_mut(VA as *mut u8, SIZE) };
    let (data, _, _) = ca.attach(d_rw).ctx("ATTACH data")?;
    let (data_ro, _, _) = ca.attach(d_ro).ctx("ATTACH data read-only")?;
    let (rb_ro, _, _) = ca.attach(r_ro).ctx("ATTACH the ring read-only")?;
    // B: a read-only client with a ring of its own.
    dataspace(m, bank, 1, brd, BRVA, br_rw, rights::READ | rights::WRITE)?;
    ACCOUNT.create_notification(bnote).ctx("CREATE_NOTIFICATION B's")?;
    let (brb, _, _) = cb.attach(br_rw).ctx("B ATTACH its ring")?;
    dss(m.create(1, bank, bdata), "CREATE B's data")?;
    dss(Dataspace(Sender(bdata)).share(rights::READ | rights::WRITE, bshare), "SHARE B's data")?;
    let (bbuf, _, _) = cb.attach(bshare).ctx("B ATTACH its data")?;

    // 1. RING's refusals, then the ring.
    let (_, refused0, _) = admin.stats().ctx("STATS")?;
    let cases: [(&str, u64, u64); 7] = [
        ("a buffer that is no buffer", ring_call(ca, 60, 0, Some(note)), BAD_BUFFER),
        ("B's buffer", ring_call(ca, brb, 0, Some(note)), BAD_BUFFER),
        ("a read-only share", ring_call(ca, rb_ro, 0, Some(note)), NO_RIGHTS),
        ("an offset not a page's", ring_call(ca, data, 512, Some(note)), BAD_BUFFER),
        ("an offset past the buffer", ring_call(ca, data, SIZE as u64, Some(note)), BAD_BUFFER),
        ("no capability", ring_call(ca, data, 0, None), NOT_NOTIFICATION),
        ("a dataspace instead of a notification", ring_call(ca, data, 0, Some(d_ro)), NOT_NOTIFICATION),
    ];
    for (what, got, want) in cases {
        ensure!(got == want, "RING with {what}: {got}, want {want}");
    }
    let (_, refused1, _) = admin.stats().ctx("STATS")?;
    ensure!(refused1 == refused0 + 7, "7 refused RINGs counted {}", refused1 - refused0);
    let (_, _, attached0) = admin.queue_stats().ctx("QUEUE_STATS")?;
    let (rb, _, _) = ca.attach(r_rw).ctx("ATTACH the ring")?;
    let mut ra = Ring::set_up(ca, rb, 0, RVA, note).ctx("RING")?;
    ensure!(ring_call(ca, data, 0, Some(note)) == IN_USE, "a second RING was not IN_USE");
    ensure!(ca.detach(rb) == Err(keep_blk::Error::Status(IN_USE)), "DETACH of the ring's buffer was not IN_USE");
    let mut rbr = Ring::set_up(cb, brb, 0, BRVA, bnote).ctx("B's RING")?;

    // 2. Writes through the ring, read back through it and through READ.
    for (i, x) in mem.iter_mut().enumerate() {
        *x = ((i as u64 * 13 + i as u64 / 512 * 5) % 251) as u8;
    }
    let writes = [wr(1, data, 0, 0, 32), wr(2, data, 100, 16384, 32), wr(3, data, 200, 32768, 31), wr(4, data, A_SECTORS - 32, 49152, 32)];
    let got = run(&mut ra, &writes)?;
    all_ok(&got)?;
    let mut ids: Vec<u64> = got.iter().map(|g| g.0).collect();
    ids.sort();
    ensure!(ids == [1, 2, 3, 4], "completions for ids {ids:?}");
    mem.fill(0);
    let reads: Vec<Desc> = writes.iter().map(|w| Desc { op: OP_READ, id: w.id + 10, ..*w }).collect();
    all_ok(&run(&mut ra, &reads)?)?;
    // (The gap in entry 3's last sector stays 0: it was 31 sectors.)
    for (k, w) in writes.iter().enumerate() {
        let (o, n) = (w.offset as usize, w.count as usize * SECTOR);
        let want: Vec<u8> = (o..o + n).map(|i| ((i as u64 * 13 + i as u64 / 512 * 5) % 251) as u8).collect();
        ensure!(mem[o..o + n] == want[..], "request {k} read back differs");
    }
    let mut one = vec![0u8; SECTOR];
    ca.read(100, &mut one).ctx("READ")?;
    ensure!(one[..] == mem[16384..16384 + SECTOR], "READ disagrees with what the ring wrote");

    // 3. Malformed descriptors: each completed with its status, nothing
    // written; good reads beside them are served.
    let disk = snapshot(&mut ra, data, mem)?;
    mem.fill(0xee);
    let bad: Vec<(Desc, u64)> = vec![
        (Desc { op: 0, ..wr(100, data, 0, 0, 8) }, BAD_REQUEST),
        (Desc { op: 3, ..wr(101, data, 0, 0, 8) }, BAD_REQUEST),
        (wr(102, data, 0, 0, 0), BAD_REQUEST),
        (wr(103, data, 0, 0, 257), BAD_REQUEST),
        (wr(104, data, A_SECTORS, 0, 1), OUT_OF_RANGE),
        (wr(105, data, A_SECTORS - 1, 0, 2), OUT_OF_RANGE),
        (wr(106, data, u64::MAX - 3, 0, 8), OUT_OF_RANGE),
        (wr(107, brb, 0, 0, 1), BAD_BUFFER),
        (wr(108, 63, 0, 0, 1), BAD_BUFFER),
        (wr(109, data, 0, 100, 1), BAD_BUFFER),
        (wr(110, data, 0, SIZE as u32, 1), BAD_BUFFER),
        (wr(111, data, 0, SIZE as u32 - 512, 2), BAD_BUFFER),
        (wr(112, rb, 0, 0, 1), BAD_BUFFER),
        (rd(113, data_ro, 0, 0, 8), NO_RIGHTS),
    ];
    let (_, refused2, _) = admin.stats().ctx("STATS")?;
    let mut posted: Vec<Desc> = bad.iter().map(|b| b.0).collect();
    // Two good reads among them (into the upper half: 0xee there is overwritten).
    posted.insert(3, rd(200, data, 500, 32768, 8));
    posted.push(rd(201, data, 600, 40960, 8));
    let got = run(&mut ra, &posted)?;
    ensure!(got.len() == posted.len(), "{} completions for {}", got.len(), posted.len());
    for (dsc, want) in &bad {
        let st = got.iter().find(|g| g.0 == dsc.id).map(|g| g.1);
        ensure!(st == Some(*want), "descriptor {}: {st:?}, want {}", dsc.id, keep_blk::status_name(*want));
    }
    for id in [200, 201] {
        ensure!(got.iter().any(|g| *g == (id, OK)), "the good read {id} beside them: {got:?}");
    }
    ensure!(mem[..32768].iter().all(|&x| x == 0xee), "a refused descriptor touched the pages");
    let (_, refused3, _) = admin.stats().ctx("STATS")?;
    ensure!(refused3 == refused2 + bad.len() as u64, "refusals counted {}, want {}", refused3 - refused2, bad.len());
    // B, read-only, may not write; it may read.
    let got = run(&mut rbr, &[wr(1, bbuf, 0, 0, 8), rd(2, bbuf, 0, 0, 8), rd(3, bbuf, B_SECTORS, 0, 1)])?;
    for (id, want) in [(1, NO_RIGHTS), (2, OK), (3, OUT_OF_RANGE)] {
        ensure!(got.iter().any(|g| *g == (id, want)), "B's request {id}: {got:?}, want {}", keep_blk::status_name(want));
    }
    ensure!(snapshot(&mut ra, data, mem)? == disk, "the disk changed under the refused descriptors");

    // 4. REQ_HEAD out of range: nothing is taken, the ring serves on once
    // it is right again.
    // SAFETY: the ring's page is mapped read-write at RVA.
    let (head, tail) = unsafe { (rv(RVA + ring::REQ_HEAD), rv(RVA + ring::REQ_TAIL)) };
    ensure!(head == tail, "REQ_HEAD {head}, REQ_TAIL {tail} with nothing waiting");
    unsafe { wv(RVA + ring::REQ_HEAD, head.wrapping_add(ring::ENTRIES + 1)) };
    for _ in 0..2 {
        let m = ca.0.call(Tag::new(keep_blk::KICK), [0; 4]);
        ensure!(m.err == 0 && m.words[0] == OK, "KICK as a call: {} {}", m.err, m.words[0]);
    }
    ensure!(unsafe { rv(RVA + ring::REQ_TAIL) } == tail, "requests were taken past an index out of range");
    unsafe { wv(RVA + ring::REQ_HEAD, head) };
    all_ok(&run(&mut ra, &[rd(300, data, 0, 0, 8)])?)?;

    // 5. RING_END gives everything back.
    ra.end().ctx("RING_END")?;
    ensure!(Ring::set_up(ca, rb, 0, RVA, note).is_ok(), "RING after RING_END");
    let again = Ring::set_up(ca, rb, 0, RVA, note);
    ensure!(matches!(again, Err(keep_blk::Error::Status(IN_USE))), "a second RING after the first again");
    call_end(ca).ctx("RING_END")?;
    ensure!(matches!(call_end(ca), Err(keep_blk::Error::Status(NOT_FOUND))), "RING_END without a ring was not NOT_FOUND");
    ca.detach(rb).ctx("DETACH the ring's buffer after RING_END")?;
    rbr.end().ctx("B's RING_END")?;
    let (_, _, attached1) = admin.queue_stats().ctx("QUEUE_STATS")?;
    ensure!(attached1 == attached0, "{attached1} buffers attached after RING_END, {attached0} before the ring's");
    let _ = SELF_ASPACE.delete_cap(note);
    let _ = SELF_ASPACE.delete_cap(bnote);
    for x in [d, rd_, brd, bdata] {
        let _ = Dataspace(Sender(x)).destroy();
    }
    Ok(())
}

fn call_end(c: Client) -> Result<(), keep_blk::Error> {
    let m = c.0.call(Tag::new(keep_blk::RING_END), [0; 4]);
    if m.err != 0 {
        return Err(keep_blk::Error::Call(keep_abi::Error(m.err)));
    }
    if m.words[0] == OK { Ok(()) } else { Err(keep_blk::Error::Status(m.words[0])) }
}

/// Four stretches of A's range the refused descriptors name (or lie
/// beside), read through the ring into the pages: their checksum.
fn snapshot(r: &mut Ring, data: u64, mem: &mut [u8]) -> Result<u64, alloc::string::String> {
    let got = run(r, &[rd(900, data, 0, 0, 32), rd(901, data, 96, 16384, 32), rd(902, data, 200, 32768, 32), rd(903, data, A_SECTORS - 32, 49152, 32)])?;
    all_ok(&got)?;
    Ok(checksum(mem))
}

/// SAFETY: `a` lies in a mapped page.
unsafe fn rv(a: u64) -> u32 {
    unsafe { core::ptr::read_volatile(a as *const u32) }
}
/// SAFETY: `a` lies in a page mapped read-write.
unsafe fn wv(a: u64, v: u32) {
    unsafe { core::ptr::write_volatile(a as *mut u32, v) }
}

/// BLK0011: the block server ends under a client's ring and starts again.
pub fn blk_ring_restart(cx: &mut Cx) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let ds = crate::ds::start_ds(cx)?;
        let r = restart(cx, &pci, &ds);
        let stopped = crate::ds::stop_ds(cx, ds);
        r?;
        stopped
    })();
    let stopped = stop(cx, pci, quit_pci);
    r?;
    stopped
}

fn restart(cx: &mut Cx, pci: &crate::drivers::Running, ds: &crate::ds::Ds) -> TestResult {
    let [a, a2, d, d_rw, rd_, r_rw, note] = cx.slots::<7>()?;
    let r = (|| {
        let (m, bank) = (Manager(Sender(ds.srv.cap)), ds.clients.0);
        dataspace(m, bank, PAGES, d, VA, d_rw, rights::READ | rights::WRITE)?;
        dataspace(m, bank, 1, rd_, RVA, r_rw, rights::READ | rights::WRITE)?;
        ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
        // SAFETY: mapped read-write above.
        let mem = unsafe { core::slice::from_raw_parts_mut(VA as *mut u8, SIZE) };
        let first = start_blk_ds(cx, pci, &ds.srv)?;
        let admin = Admin(Sender(first.cap));
        admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT")?;
        let c = Client(Sender(a));
        let (data, _, _) = c.attach(d_rw).ctx("ATTACH data")?;
        let (rb, _, _) = c.attach(r_rw).ctx("ATTACH the ring")?;
        let mut ring = Ring::set_up(c, rb, 0, RVA, note).ctx("RING")?;
        mem.fill(0x5a);
        all_ok(&run(&mut ring, &[wr(1, data, 10, 0, 16)])?)?;
        stop(cx, first, |s| Admin(s).quit().ctx("blk QUIT"))?;
        // The server is gone: the ring's next submit says so.
        ensure!(ring.post(&rd(2, data, 10, 8192, 16)), "post after the server ended");
        ensure!(ring.submit().is_err(), "a submit to the ended server's ring succeeded");
        // Anew: the same dataspaces, the ring set up again.
        let second = start_blk_ds(cx, pci, &ds.srv)?;
        let r = (|| {
            let admin = Admin(Sender(second.cap));
            admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a2).ctx("ADD_CLIENT again")?;
            let c = Client(Sender(a2));
            let (data, _, _) = c.attach(d_rw).ctx("ATTACH data again")?;
            let (rb, _, _) = c.attach(r_rw).ctx("ATTACH the ring again")?;
            let mut ring = Ring::set_up(c, rb, 0, RVA, note).ctx("RING again")?;
            mem[8192..16384].fill(0);
            all_ok(&run(&mut ring, &[rd(3, data, 10, 8192, 16)])?)?;
            ensure!(mem[8192..16384].iter().all(|&x| x == 0x5a), "what the first server wrote does not read back through the second's ring");
            ring.end().ctx("RING_END")
        })();
        let stopped = stop(cx, second, |s| Admin(s).quit().ctx("blk QUIT"));
        r?;
        stopped
    })();
    let _ = SELF_ASPACE.delete_cap(note);
    for x in [d, rd_] {
        let _ = Dataspace(Sender(x)).destroy();
    }
    cx.drop_slots(&[a, a2, d, d_rw, rd_, r_rw, note]);
    r
}

/// BLK0012: a client takes its ring's page away (revokes the share) with
/// the ring set up: the server's next touch lands on its guard's scratch
/// page, the ring is taken down, nothing else changes, and the client
/// sets up a ring in another page and is served.
pub fn blk_ring_revoked(cx: &mut Cx) -> TestResult {
    crate::drivers::with_blk_ds_process(cx, |cx, admin, m, bank, [server, _]| {
        let s = cx.slots::<6>()?;
        let r = revoked(admin, m, bank, server, s);
        cx.drop_slots(&s);
        r
    })
}

fn revoked(admin: Admin, m: Manager, bank: u64, server: keep_abi::Process, s: [u64; 6]) -> TestResult {
    let [a, d, d_rw, rd_, r_rw, note] = s;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT")?;
    let c = Client(Sender(a));
    dataspace(m, bank, PAGES, d, VA, d_rw, rights::READ | rights::WRITE)?;
    dss(m.create(2, bank, rd_), "CREATE the ring's")?;
    dss(Dataspace(Sender(rd_)).map(slot::SELF_ASPACE, RVA, 0, 2, rights::READ | rights::WRITE), "MAP the ring's")?;
    let h = dss(Dataspace(Sender(rd_)).share(rights::READ | rights::WRITE, r_rw), "SHARE the ring's")?;
    ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
    let (data, _, _) = c.attach(d_rw).ctx("ATTACH data")?;
    let (rb, _, _) = c.attach(r_rw).ctx("ATTACH the ring")?;
    let mut ring = Ring::set_up(c, rb, 0, RVA, note).ctx("RING")?;
    all_ok(&run(&mut ring, &[rd(1, data, 0, 0, 8)])?)?;
    dss(Dataspace(Sender(rd_)).revoke(h), "REVOKE the ring's share")?;
    // A request posted in the client's own mapping of the page; the
    // server's is gone.
    ensure!(ring.post(&rd(2, data, 0, 0, 8)), "post");
    for _ in 0..2 {
        let m = c.0.call(Tag::new(keep_blk::KICK), [0; 4]);
        ensure!(m.err == 0 && m.words[0] == OK, "KICK after the revocation: {} {}", m.err, m.words[0]);
    }
    let st = server.status().ctx("the server's STATUS")?;
    ensure!(st.state != keep_abi::state::FAULTED, "the block server faulted on the ring's page");
    ensure!(matches!(call_end(c), Err(keep_blk::Error::Status(NOT_FOUND))), "the ring whose page went is still set up");
    // SAFETY: the client's own mapping of the page is still there.
    ensure!(unsafe { rv(RVA + ring::CPL_HEAD) } == 1, "a completion was posted into the page after it went");
    // The server serves on: a ring in a new share of the second page.
    let _ = SELF_ASPACE.delete_cap(r_rw);
    dss(Dataspace(Sender(rd_)).share(rights::READ | rights::WRITE, r_rw), "SHARE again")?;
    let (rb2, _, _) = c.attach(r_rw).ctx("ATTACH the new share")?;
    let mut ring = Ring::set_up(c, rb2, 4096, RVA + 4096, note).ctx("RING in the second page")?;
    all_ok(&run(&mut ring, &[rd(3, data, 8, 4096, 8)])?)?;
    ring.end().ctx("RING_END")?;
    let _ = (data, rb);
    let _ = SELF_ASPACE.delete_cap(note);
    for x in [d, rd_] {
        let _ = Dataspace(Sender(x)).destroy();
    }
    Ok(())
}

// ---- SRVFUZZ0009: the ring's descriptors fuzzed ----------------------------


/// Whether a descriptor is one the server must serve (docs/block.md,
/// "Request rings"): READ or WRITE, 1 to MAX_SECTORS sectors inside the
/// client's range, into or from whole sectors of a data buffer the client
/// attached (READ, which writes the buffer, needs the read-write one).
fn valid(d: &Desc, data: u64, data_ro: u64) -> bool {
    let buf_ok = d.buffer as u64 == data || (d.buffer as u64 == data_ro && d.op == OP_WRITE);
    (d.op == OP_READ || d.op == OP_WRITE)
        && d.count >= 1
        && d.count as u64 <= keep_blk::MAX_DS_SECTORS
        && d.sector.checked_add(d.count as u64).is_some_and(|e| e <= A_SECTORS)
        && buf_ok
        && d.offset as usize % SECTOR == 0
        && d.offset as usize + d.count as usize * SECTOR <= SIZE
}

/// SRVFUZZ0009: the block server's request ring, fuzzed through its
/// descriptors: batches of 1 to 16 descriptors with each field drawn from
/// edge values (ops 0 to 3 and any word, counts 0, 1, the maximum and one
/// past it, sectors at and past the client's range, buffers of its own,
/// read-only, its ring's, another client's and none, offsets unaligned and
/// at and past the buffer's end).  Every descriptor is completed once,
/// with its id and a status of the definition; every valid one OK, every
/// invalid one refused.  Every 50 batches an honest client (B, its own
/// range) writes a sector by the message path and reads back the one it
/// wrote before.  At the end the ring goes (RING_END), the buffers detach
/// and QUEUE_STATS shows none left; CHECK_INVARIANTS is clean.
pub fn ring_fuzz(cx: &mut Cx) -> TestResult {
    let seed = crate::fuzz::cmdline_word("srvfuzzseed=").unwrap_or(0x5e4f_0001) ^ 0x9;
    let ops = crate::fuzz::cmdline_word("srvfuzzops=").unwrap_or(3000);
    with_blk_ds(cx, |cx, admin, m, bank| {
        let s = cx.slots::<10>()?;
        let r = ring_fuzz_session(admin, m, bank, s, seed, ops);
        cx.drop_slots(&s);
        r
    })?;
    let (bad, _) = keep_abi::KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariant violations");
    Ok(())
}

fn ring_fuzz_session(admin: Admin, m: Manager, bank: u64, s: [u64; 10], seed: u64, ops: u64) -> TestResult {
    let [a, b, d, d_rw, d_ro, rd_, r_rw, note, bdata, bshare] = s;
    println!("srvfuzz: blk ring seed {seed:#x}, {ops} descriptors");
    let start = keep_abi::TIMER.now_ms().unwrap_or(0);
    let (_, _, attached0) = admin.queue_stats().ctx("QUEUE_STATS")?;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ | rights::WRITE, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    dataspace(m, bank, PAGES, d, VA, d_rw, rights::READ | rights::WRITE)?;
    dss(Dataspace(Sender(d)).share(rights::READ, d_ro), "SHARE read-only")?;
    dataspace(m, bank, 1, rd_, RVA, r_rw, rights::READ | rights::WRITE)?;
    ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
    let (data, _, _) = ca.attach(d_rw).ctx("ATTACH data")?;
    let (data_ro, _, _) = ca.attach(d_ro).ctx("ATTACH data read-only")?;
    let (rb, _, _) = ca.attach(r_rw).ctx("ATTACH the ring")?;
    dss(m.create(1, bank, bdata), "CREATE B's data")?;
    dss(Dataspace(Sender(bdata)).share(rights::READ | rights::WRITE, bshare), "SHARE B's data")?;
    let (bbuf, _, _) = cb.attach(bshare).ctx("B ATTACH its data")?;
    let mut ra = Ring::set_up(ca, rb, 0, RVA, note).ctx("RING")?;
    let mut rng = Rng(seed);
    let (mut done, mut ok, mut refused, mut batches, mut turns) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let statuses = [OK, BAD_REQUEST, OUT_OF_RANGE, BAD_BUFFER, NO_RIGHTS];
    let mut id = 1u64;
    let honest = |n: u64| -> TestResult {
        let pattern = |k: u64| -> Vec<u8> { (0..SECTOR as u64).map(|i| (i ^ k.wrapping_mul(0x9d)) as u8).collect() };
        let sector = n % B_SECTORS;
        cb.write(sector, &pattern(n)).ctx("the honest client's WRITE")?;
        if n > 0 {
            let mut back = vec![0u8; SECTOR];
            let prev = (n - 1) % B_SECTORS;
            cb.read(prev, &mut back).ctx("the honest client's READ")?;
            ensure!(back == pattern(n - 1), "the honest client's sector {prev} differs from what it wrote");
        }
        Ok(())
    };
    let r = (|| {
        while done < ops {
            let k = 1 + rng.next() % 16;
            let mut ds = Vec::new();
            for _ in 0..k {
                let r = rng.next();
                let mut d = Desc {
                    id,
                    op: rng.pick(&[OP_READ, OP_WRITE, OP_READ, OP_WRITE, 0, 3, r as u32]),
                    count: rng.pick(&[1, 8, 32, 256, 257, 0, u32::MAX, 1 + (r >> 8) as u32 % 256]),
                    sector: rng.pick(&[0, 1, A_SECTORS - 1, A_SECTORS - 8, A_SECTORS, B_FIRST - A_FIRST, u64::MAX - 3, (r >> 16) % A_SECTORS, r]),
                    buffer: rng.pick(&[data, data, data, data_ro, rb, bbuf, 63, r >> 40]) as u32,
                    offset: rng.pick(&[0, 512, 100, (SIZE - 512) as u32, SIZE as u32, ((r >> 24) as u32 % PAGES as u32) * 4096, (r >> 32) as u32]),
                };
                // Half of them a valid descriptor with at most one field
                // taken from the edge values above.
                if r & 1 == 0 {
                    let count = 1 + (r >> 1) as u32 % 32;
                    let good = Desc {
                        id,
                        op: if r & 2 == 0 { OP_READ } else { OP_WRITE },
                        count,
                        sector: (r >> 8) % (A_SECTORS - count as u64 + 1),
                        buffer: data as u32,
                        offset: ((r >> 20) as u32 % (SIZE as u32 / 512 - count + 1)) * 512,
                    };
                    d = match (r >> 40) % 8 {
                        0 => Desc { op: d.op, ..good },
                        1 => Desc { count: d.count, ..good },
                        2 => Desc { sector: d.sector, ..good },
                        3 => Desc { buffer: d.buffer, ..good },
                        4 => Desc { offset: d.offset, ..good },
                        _ => good,
                    };
                }
                id += 1;
                ds.push(d);
            }
            let got = run(&mut ra, &ds).map_err(|e| format!("batch {batches} (seed {seed:#x}): {e}"))?;
            ensure!(got.len() == ds.len(), "batch {batches} (seed {seed:#x}): {} completions for {}", got.len(), ds.len());
            for dsc in &ds {
                let mine: Vec<u64> = got.iter().filter(|g| g.0 == dsc.id).map(|g| g.1).collect();
                ensure!(mine.len() == 1, "batch {batches} (seed {seed:#x}): descriptor {dsc:?} completed {} times", mine.len());
                let st = mine[0];
                ensure!(statuses.contains(&st), "batch {batches} (seed {seed:#x}): descriptor {dsc:?}: status {st}, not one the definition lists");
                let want_ok = valid(dsc, data, data_ro);
                ensure!((st == OK) == want_ok, "batch {batches} (seed {seed:#x}): descriptor {dsc:?}: {}, want {}",
                        keep_blk::status_name(st), if want_ok { "OK" } else { "a refusal" });
                if st == OK { ok += 1 } else { refused += 1 }
            }
            done += k;
            batches += 1;
            if batches % 50 == 0 {
                honest(turns).map_err(|e| format!("after batch {batches} (seed {seed:#x}): {e}"))?;
                turns += 1;
            }
        }
        honest(turns)?;
        turns += 1;
        ra.end().ctx("RING_END")?;
        for buf in [data, data_ro, rb] {
            ca.detach(buf).ctx("DETACH")?;
        }
        cb.detach(bbuf).ctx("B DETACH")?;
        let (_, _, attached1) = admin.queue_stats().ctx("QUEUE_STATS")?;
        ensure!(attached1 == attached0, "{attached1} buffers attached after the run, {attached0} before");
        Ok(())
    })();
    let ms = keep_abi::TIMER.now_ms().unwrap_or(0).saturating_sub(start).max(1);
    println!("srvfuzz: blk ring {done} descriptors in {batches} batches ({ok} OK, {refused} refused), {turns} honest turns, {ms} ms, {} descriptors/s",
             done * 1000 / ms);
    let _ = SELF_ASPACE.delete_cap(note);
    for x in [d, rd_, bdata] {
        let _ = Dataspace(Sender(x)).destroy();
    }
    r
}

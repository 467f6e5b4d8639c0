//! BLK0005: the block server's batches (`READ_DS_V`, `WRITE_DS_V`;
//! docs/block.md, "Batches"): a batch writes from a dataspace and another
//! reads it back, several entries on the device at once; every kind of
//! malformed batch gets its status and entry and changes neither the disk,
//! the client's pages nor the server's state; a revoked share is refused.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{Sender, rights, slot};
use keep_blk::{
    Admin, BAD_BUFFER, BAD_REQUEST, BatchError, Client, Entry, IN_FLIGHT, MAX_BATCH, NO_RIGHTS, OUT_OF_RANGE, READ_DS_V,
    SECTOR, WRITE_DS_V,
};
use keep_dataspace::{Dataspace, Manager};
use keep_rt::println;
use keep_virtio::{checksum, disk_pattern};

use crate::drivers::{dss, with_blk_ds};
use crate::{Ctx, Cx, TestResult};

const VA: u64 = 0x0000_5e20_0000_0000;
const VB: u64 = 0x0000_5e30_0000_0000;
/// A's range (read-write) and B's (read-only), as in BLK0001.
const A_FIRST: u64 = 512;
const A_SECTORS: u64 = 1024;
const B_FIRST: u64 = 1536;
const B_SECTORS: u64 = 512;
/// A's dataspace: 512 KiB, A's whole range.
const PAGES: u64 = 128;
const SIZE: usize = PAGES as usize * 4096;

fn e(sector: u64, offset: u32, count: u32) -> Entry {
    Entry { sector, offset, count }
}

/// (status, entry) of a batch's outcome; 0/None for success, 1000 + the
/// kernel's error for a failed call.
fn outcome(r: Result<(), BatchError>) -> (u64, Option<u64>) {
    match r {
        Ok(()) => (0, None),
        Err(BatchError { error: keep_blk::Error::Status(s), entry, .. }) => (s, entry),
        Err(BatchError { error: keep_blk::Error::Call(e), .. }) => (1000 + e.0, None),
    }
}

/// A's whole range read into the dataspace by one batch (4 × 128 KiB).
fn read_all(c: Client, buf: u64) -> Result<(), BatchError> {
    let all: Vec<Entry> = (0..4).map(|k| e(k * 256, (k * 256 * SECTOR as u64) as u32, 256)).collect();
    c.read_ds_v(buf, &all)
}

pub fn blk_batches(cx: &mut Cx) -> TestResult {
    with_blk_ds(cx, |cx, admin, m, bank| {
        let s = cx.slots::<7>()?;
        let r = session(admin, m, bank, s);
        cx.drop_slots(&s);
        r
    })
}

fn session(admin: Admin, m: Manager, bank: u64, s: [u64; 7]) -> TestResult {
    let [a, b, d, ds_a, eb, ro_b, rw_b] = s;
    admin.add_client(A_FIRST, A_SECTORS, rights::READ | rights::WRITE, a).ctx("ADD_CLIENT A")?;
    admin.add_client(B_FIRST, B_SECTORS, rights::READ, b).ctx("ADD_CLIENT B")?;
    let (ca, cb) = (Client(Sender(a)), Client(Sender(b)));
    let own = Dataspace(Sender(d));
    dss(m.create(PAGES, bank, d), "CREATE")?;
    dss(own.map(slot::SELF_ASPACE, VA, 0, PAGES, rights::READ | rights::WRITE), "MAP")?;
    let share = dss(own.share(rights::READ | rights::WRITE, ds_a), "SHARE")?;
    // SAFETY: mapped read-write above, SIZE bytes.
    let mem = unsafe { core::slice::from_raw_parts_mut(VA as *mut u8, SIZE) };
    let (buf, _, _) = ca.attach(ds_a).ctx("ATTACH")?;

    // 1. A batch of 16 writes of 1 to 31 sectors, scattered over the range
    // and the first half of the dataspace, then one batch reading them
    // back, in the other order, into the second half.
    for (i, x) in mem.iter_mut().enumerate() {
        *x = ((i as u64 * 7 + i as u64 / 512 * 3) % 241) as u8;
    }
    let writes: Vec<Entry> =
        (0..16u32).map(|k| e(k as u64 * 61 + 3, k * 16 * 1024, 1 + (k * 2) % 31)).collect();
    ca.write_ds_v(buf, &writes).map_err(|e| format!("WRITE_DS_V of 16 entries: {e}"))?;
    let (most, _, _) = admin.queue_stats().ctx("QUEUE_STATS")?;
    // One client, one call: only a batch puts more than one request on the device.
    ensure!(most == IN_FLIGHT as u64, "a batch of 16 put at most {most} requests on the device, want {IN_FLIGHT}");
    let half = SIZE as u32 / 2;
    let reads: Vec<Entry> = writes.iter().rev().map(|w| e(w.sector, half + w.offset, w.count)).collect();
    ca.read_ds_v(buf, &reads).map_err(|e| format!("READ_DS_V of 16 entries: {e}"))?;
    for w in &writes {
        let (o, n) = (w.offset as usize, w.count as usize * SECTOR);
        ensure!(checksum(&mem[o..o + n]) == checksum(&mem[half as usize + o..][..n]),
                "sectors {}..{} read back differ", w.sector, w.sector + w.count as u64);
    }
    // The same sectors through the message-string path.
    let mut one = vec![0u8; SECTOR];
    ca.read(writes[5].sector, &mut one).ctx("READ")?;
    ensure!(one[..] == mem[writes[5].offset as usize..][..SECTOR], "READ disagrees with what WRITE_DS_V wrote");
    ca.flush().ctx("FLUSH")?;

    // 2. Refusals.  A's range as it is now, then the dataspace filled with
    // what a refused write would put on the disk.
    read_all(ca, buf).map_err(|e| format!("READ_DS_V of the range: {e}"))?;
    let disk = checksum(mem);
    mem.fill(0xee);
    let bown = Dataspace(Sender(eb));
    dss(m.create(4, bank, eb), "CREATE B's")?;
    dss(bown.map(slot::SELF_ASPACE, VB, 0, 4, rights::READ), "MAP B's")?;
    dss(bown.share(rights::READ, ro_b), "SHARE read-only")?;
    dss(bown.share(rights::READ | rights::WRITE, rw_b), "SHARE read-write")?;
    let (bro, _, _) = cb.attach(ro_b).ctx("B ATTACH read-only")?;
    let (brw, _, _) = cb.attach(rw_b).ctx("B ATTACH read-write")?;
    // B reads the image's pattern through a batch (two entries at once).
    cb.read_ds_v(brw, &[e(B_SECTORS - 8, 4096, 8), e(0, 0, 8)]).map_err(|e| format!("B's READ_DS_V: {e}"))?;
    for (k, first) in [(0u64, B_FIRST), (512, B_FIRST + B_SECTORS - 8)] {
        // SAFETY: B's 4 pages are mapped at VB.
        let got = u64::from_le_bytes(unsafe { *((VB + k * 8) as *const [u8; 8]) });
        ensure!(got == disk_pattern(first, 0), "B's batch read of sector {first}: {got:#x}");
    }
    let (_, refused_before, _) = admin.stats().ctx("STATS")?;
    // Four good entries around a bad one: the good ones must not be done.
    let around = |bad: Entry| -> Vec<Entry> {
        vec![e(0, 0, 8), e(100, 8192, 16), bad, e(700, 65536, 32), e(1000, 131072, 24)]
    };
    let raw = |c: Client, label: u64, b: u64, count: u64, bytes: &[u8]| {
        keep_rt::ipc_buffer().set_string(bytes);
        c.batch_raw(label, b, count)
    };
    let five: Vec<u8> = {
        let mut v = vec![0u8; 5 * Entry::BYTES];
        for (k, x) in around(e(300, 0, 8)).iter().enumerate() {
            x.encode(&mut v[k * Entry::BYTES..]);
        }
        v
    };
    let too_many: Vec<Entry> = (0..MAX_BATCH as u64 + 1).map(|k| e(k, 0, 1)).collect();
    let whole = None;
    let cases: Vec<(&str, (u64, Option<u64>), (u64, Option<u64>))> = vec![
        ("an entry past A's range", outcome(ca.write_ds_v(buf, &around(e(A_SECTORS - 1, 0, 2)))), (OUT_OF_RANGE, Some(2))),
        ("an entry at A's end", outcome(ca.write_ds_v(buf, &around(e(A_SECTORS, 0, 1)))), (OUT_OF_RANGE, Some(2))),
        ("an entry's sector near 2^64", outcome(ca.read_ds_v(buf, &around(e(u64::MAX - 3, 0, 8)))), (OUT_OF_RANGE, Some(2))),
        ("B (read-only client) writes", outcome(cb.write_ds_v(brw, &[e(0, 0, 1), e(8, 0, 1)])), (NO_RIGHTS, whole)),
        ("B reads into its read-only buffer", outcome(cb.read_ds_v(bro, &[e(0, 0, 1)])), (NO_RIGHTS, whole)),
        ("A names B's buffer", outcome(ca.write_ds_v(brw, &[e(0, 0, 1)])), (BAD_BUFFER, whole)),
        ("B names A's buffer", outcome(cb.read_ds_v(buf, &[e(0, 0, 1)])), (BAD_BUFFER, whole)),
        ("no such buffer", outcome(ca.write_ds_v(63, &[e(0, 0, 1)])), (BAD_BUFFER, whole)),
        ("a buffer number near 2^64", outcome(ca.read_ds_v(u64::MAX, &[e(0, 0, 1)])), (BAD_BUFFER, whole)),
        ("an offset at the dataspace's end", outcome(ca.write_ds_v(buf, &around(e(300, SIZE as u32, 1)))), (BAD_BUFFER, Some(2))),
        ("bytes past the dataspace's end", outcome(ca.read_ds_v(buf, &around(e(300, SIZE as u32 - 512, 2)))), (BAD_BUFFER, Some(2))),
        ("an offset near 2^32", outcome(ca.write_ds_v(buf, &around(e(300, u32::MAX - 511, 1)))), (BAD_BUFFER, Some(2))),
        ("an offset not a multiple of 512", outcome(ca.write_ds_v(buf, &around(e(300, 100, 1)))), (BAD_BUFFER, Some(2))),
        ("an entry of 0 sectors", outcome(ca.write_ds_v(buf, &around(e(300, 0, 0)))), (BAD_REQUEST, Some(2))),
        ("an entry of 257 sectors", outcome(ca.read_ds_v(buf, &around(e(300, 0, 257)))), (BAD_REQUEST, Some(2))),
        ("the last entry bad", outcome(ca.write_ds_v(buf, &[e(0, 0, 8), e(8, 0, 8), e(A_SECTORS, 0, 8)])), (OUT_OF_RANGE, Some(2))),
        ("0 entries", outcome(raw(ca, WRITE_DS_V, buf, 0, &[])), (BAD_REQUEST, whole)),
        ("MAX_BATCH + 1 entries", outcome(ca.write_ds_v(buf, &too_many)), (BAD_REQUEST, whole)),
        ("5 entries said, 4 sent", outcome(raw(ca, WRITE_DS_V, buf, 5, &five[..64])), (BAD_REQUEST, whole)),
        ("an entry cut short", outcome(raw(ca, WRITE_DS_V, buf, 5, &five[..77])), (BAD_REQUEST, whole)),
        ("4 entries said, 5 sent", outcome(raw(ca, READ_DS_V, buf, 4, &five)), (BAD_REQUEST, whole)),
        ("no string", {
            let m = Sender(a).call(keep_abi::Tag::new(WRITE_DS_V), [buf, 1, 0, 0]);
            (m.words[0], (m.words[1] != keep_blk::WHOLE_BATCH).then_some(m.words[1]))
        }, (BAD_REQUEST, whole)),
    ];
    let n = cases.len() as u64;
    for (what, got, want) in cases {
        ensure!(got == want, "{what}: (status, entry) {got:?}, want {want:?}");
    }
    let (_, refused_after, faults) = admin.stats().ctx("STATS")?;
    ensure!(refused_after - refused_before == n, "{} refusals counted, {n} made", refused_after - refused_before);
    ensure!(faults == 0, "{faults} DMA faults");
    // Nothing was read into the pages, nothing written to the disk.
    ensure!(mem.iter().all(|&x| x == 0xee), "a refused batch changed A's pages");
    read_all(ca, buf).map_err(|e| format!("READ_DS_V of the range after the refusals: {e}"))?;
    ensure!(checksum(mem) == disk, "a refused batch changed A's range on the disk");
    // No buffer was left busy: DETACH is not IN_USE (B's buffers go, A's
    // stays attached and serves another batch).
    cb.detach(bro).ctx("B DETACH read-only")?;
    cb.detach(brw).ctx("B DETACH read-write")?;
    ensure!(admin.queue_stats().ctx("QUEUE_STATS")?.2 == 1, "buffers attached: {:?}", admin.queue_stats());

    // 3. A revokes its share: the next batch is refused whole before it
    // reaches the device, and A's pages are untouched.
    mem.fill(0x5a);
    let got = own.revoke(share).map_err(|e| format!("REVOKE: {e}"))?;
    ensure!(got == (1, 1, 1), "REVOKE removed {got:?} (handles, mappings, pins)");
    let r = outcome(ca.read_ds_v(buf, &[e(0, 0, 8), e(8, 4096, 8)]));
    ensure!(r == (BAD_BUFFER, None), "READ_DS_V into a revoked buffer: {r:?}");
    ensure!(mem.iter().all(|&x| x == 0x5a), "a revoked buffer was written");
    let (_, _, faults) = admin.stats().ctx("STATS")?;
    ensure!(faults == 0, "{faults} DMA faults after the revocation");
    ca.detach(buf).ctx("DETACH the revoked buffer")?;
    for x in [d, eb] {
        Dataspace(Sender(x)).destroy().map_err(|e| format!("DESTROY: {e}"))?;
    }
    println!("ktest: BLK0005: {n} malformed batches refused, {most} requests of one batch on the device at once");
    Ok(())
}

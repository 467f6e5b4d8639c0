//! What the block server accepts of what a client or its administrator
//! sends, before anything goes to the device (docs/block.md, "The block
//! server"): each rule answers the status a request gets when it is
//! broken, and nothing is read or written then.  The server (main.rs)
//! applies them to its own records ([`Range`] of a client, [`BufferView`]
//! of a buffer); what only the kernel can say (is a buffer's first page
//! still pinned in the domain) it asks after these pass.  A ring's
//! descriptors are checked by the same rules ([`crate::ring::check`]).

use crate::ring::{BufferView, Range};
use crate::{
    BAD_BUFFER, BAD_REQUEST, CLIENT_RIGHTS, Entry, IN_USE, MAX_BATCH, MAX_BUFFER_PAGES, MAX_DS_SECTORS, MAX_SECTORS, NO_RIGHTS,
    OUT_OF_RANGE, SECTOR, WHOLE_BATCH,
};

const READ: u64 = keep_abi::rights::READ;
const WRITE: u64 = keep_abi::rights::WRITE;

/// What the device does to a buffer's pages for a disk read (writes them)
/// or a disk write (reads them): the right the share must carry.
#[inline]
pub const fn device_needs(write: bool) -> u64 {
    if write { READ } else { WRITE }
}

/// `count` sectors from `sector` of client `r`'s range, `count` 1 to `max`,
/// for an operation that needs `need` (READ or WRITE) of its rights: the
/// disk's sector.  Rights first (NO_RIGHTS), then the count (BAD_REQUEST),
/// then the range (OUT_OF_RANGE, overflow-safe).
#[inline]
pub fn range(r: &Range, need: u64, sector: u64, count: u64, max: u64) -> Result<u64, u64> {
    if r.rights & need != need {
        return Err(NO_RIGHTS);
    }
    if count == 0 || count > max {
        return Err(BAD_REQUEST);
    }
    if sector >= r.sectors || count > r.sectors - sector {
        return Err(OUT_OF_RANGE);
    }
    Ok(r.first + sector)
}

/// READ and WRITE (the data as the message's string): 1 to MAX_SECTORS
/// sectors; a WRITE's string exactly `count` sectors long.  The disk's
/// sector and the bytes.
pub fn string_io(r: &Range, write: bool, sector: u64, count: u64, string: Option<usize>) -> Result<(u64, usize), u64> {
    let at = range(r, if write { WRITE } else { READ }, sector, count, MAX_SECTORS)?;
    let len = count as usize * SECTOR;
    if write && string != Some(len) {
        return Err(BAD_REQUEST);
    }
    Ok((at, len))
}

/// `len` bytes at `offset` of buffer `buf` for client `n`, which the device
/// accesses with `dev`: the buffer the client's own (BAD_BUFFER, also for
/// no such buffer), the offset a multiple of 512 and the bytes inside it
/// (BAD_BUFFER, overflow-safe), the share's rights covering `dev`
/// (NO_RIGHTS).
#[inline]
pub fn buffer(n: u64, buf: Option<&BufferView>, offset: u64, len: u64, dev: u64) -> Result<(), u64> {
    let Some(b) = buf.filter(|b| b.client == n) else { return Err(BAD_BUFFER) };
    if offset % SECTOR as u64 != 0 || offset >= b.bytes || len > b.bytes - offset {
        return Err(BAD_BUFFER);
    }
    if b.rights & dev != dev {
        return Err(NO_RIGHTS);
    }
    Ok(())
}

/// READ_DS and WRITE_DS: the range (1 to MAX_DS_SECTORS) and the buffer.
/// The disk's sector and the bytes.
#[inline]
pub fn ds_io(r: &Range, n: u64, buf: Option<&BufferView>, write: bool, offset: u64, sector: u64, count: u64) -> Result<(u64, u64), u64> {
    let at = range(r, if write { WRITE } else { READ }, sector, count, MAX_DS_SECTORS)?;
    let len = count * SECTOR as u64;
    buffer(n, buf, offset, len, device_needs(write))?;
    Ok((at, len))
}

/// One entry of a batch that passed: the disk's sector, the byte offset in
/// the buffer, the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    pub at: u64,
    pub offset: u64,
    pub len: u64,
}

/// READ_DS_V and WRITE_DS_V of client `n` (range `r`): `entries` 1 to
/// MAX_BATCH, the string exactly that many [`Entry`]s (BAD_REQUEST), the
/// client's rights for the operation (NO_RIGHTS), the buffer its own
/// (BAD_BUFFER) and shared with what the device does (NO_RIGHTS) — all
/// for the whole batch (entry WHOLE_BATCH) — then every entry as one
/// READ_DS or WRITE_DS of that buffer would be (its index).  Each entry
/// that passes goes to `accept` in order; a refusal is (status, entry),
/// and the caller starts nothing then.
pub fn batch(
    r: &Range,
    n: u64,
    buf: Option<&BufferView>,
    write: bool,
    entries: u64,
    string: Option<&[u8]>,
    mut accept: impl FnMut(Checked),
) -> Result<(), (u64, u64)> {
    if entries == 0 || entries > MAX_BATCH as u64 {
        return Err((BAD_REQUEST, WHOLE_BATCH));
    }
    let Some(string) = string else { return Err((BAD_REQUEST, WHOLE_BATCH)) };
    if string.len() != entries as usize * Entry::BYTES {
        return Err((BAD_REQUEST, WHOLE_BATCH));
    }
    let need = if write { WRITE } else { READ };
    if r.rights & need != need {
        return Err((NO_RIGHTS, WHOLE_BATCH));
    }
    let Some(b) = buf.filter(|b| b.client == n) else { return Err((BAD_BUFFER, WHOLE_BATCH)) };
    let dev = device_needs(write);
    if b.rights & dev != dev {
        return Err((NO_RIGHTS, WHOLE_BATCH));
    }
    for (k, e) in string.chunks_exact(Entry::BYTES).map(Entry::decode).enumerate() {
        let at = range(r, need, e.sector, e.count as u64, MAX_DS_SECTORS).map_err(|st| (st, k as u64))?;
        let (offset, len) = (e.offset as u64, e.count as u64 * SECTOR as u64);
        buffer(n, Some(b), offset, len, dev).map_err(|st| (st, k as u64))?;
        accept(Checked { at, offset, len });
    }
    Ok(())
}

/// ADD_CLIENT on a disk of `capacity` sectors: at least one sector, all on
/// the disk (overflow-safe), rights of READ and WRITE only (BAD_REQUEST).
pub fn add_client(capacity: u64, first: u64, sectors: u64, rights: u64) -> Result<(), u64> {
    if sectors == 0 || first >= capacity || sectors > capacity - first || rights & !CLIENT_RIGHTS != 0 {
        return Err(BAD_REQUEST);
    }
    Ok(())
}

/// A described client's grant (`blk=FIRST+SECTORS:r|rw`, parsed by
/// keep_system::grant) on a disk of `capacity` sectors: all on the disk
/// (OUT_OF_RANGE, overflow-safe).
pub fn grant(capacity: u64, first: u64, sectors: u64) -> Result<(), u64> {
    if first >= capacity || sectors > capacity - first {
        return Err(OUT_OF_RANGE);
    }
    Ok(())
}

/// ATTACH of a dataspace of `pages`: at most MAX_BUFFER_PAGES (BAD_REQUEST;
/// a buffer's window holds no more).
pub fn attach(pages: u64) -> Result<(), u64> {
    if pages > MAX_BUFFER_PAGES { Err(BAD_REQUEST) } else { Ok(()) }
}

/// DETACH by client `n` of a buffer attached by `owner` (None: no such
/// buffer) with `busy` requests or a ring on it: its own (BAD_BUFFER) and
/// idle (IN_USE).
pub fn detach(n: u64, owner: Option<u64>, busy: u64) -> Result<(), u64> {
    match owner {
        Some(o) if o == n && busy == 0 => Ok(()),
        Some(o) if o == n => Err(IN_USE),
        _ => Err(BAD_BUFFER),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    const N: u64 = 3;
    const RW: u64 = READ | WRITE;
    const BYTES: u64 = 16 * 4096;

    fn r(rights: u64) -> Range {
        Range { first: 1000, sectors: 512, rights }
    }
    fn b(rights: u64) -> BufferView {
        BufferView { client: N, bytes: BYTES, rights, ring_at: None }
    }
    fn entries(es: &[Entry]) -> Vec<u8> {
        let mut s = std::vec![0u8; es.len() * Entry::BYTES];
        for (e, out) in es.iter().zip(s.chunks_exact_mut(Entry::BYTES)) {
            e.encode(out);
        }
        s
    }
    fn e(sector: u64, offset: u32, count: u32) -> Entry {
        Entry { sector, offset, count }
    }
    fn run(r: &Range, buf: Option<&BufferView>, write: bool, n: u64, s: Option<&[u8]>) -> Result<Vec<Checked>, (u64, u64)> {
        let mut got = Vec::new();
        batch(r, N, buf, write, n, s, |c| got.push(c)).map(|()| got)
    }

    #[test]
    fn range_accepts_sectors_inside_and_gives_the_disks_sector() {
        assert_eq!(range(&r(RW), READ, 0, 1, 8), Ok(1000));
        assert_eq!(range(&r(READ), READ, 504, 8, 8), Ok(1504));
        assert_eq!(range(&r(WRITE), WRITE, 511, 1, 8), Ok(1511));
    }

    #[test]
    fn range_refuses_rights_the_client_lacks() {
        assert_eq!(range(&r(READ), WRITE, 0, 1, 8), Err(NO_RIGHTS));
        assert_eq!(range(&r(WRITE), READ, 0, 1, 8), Err(NO_RIGHTS));
        assert_eq!(range(&r(0), READ, 0, 1, 8), Err(NO_RIGHTS));
    }

    #[test]
    fn range_refuses_a_count_of_zero_or_above_the_maximum() {
        assert_eq!(range(&r(RW), READ, 0, 0, 8), Err(BAD_REQUEST));
        assert_eq!(range(&r(RW), READ, 0, 9, 8), Err(BAD_REQUEST));
        assert_eq!(range(&r(RW), READ, 0, u64::MAX, MAX_DS_SECTORS), Err(BAD_REQUEST));
    }

    #[test]
    fn range_refuses_sectors_outside_overflow_safe() {
        assert_eq!(range(&r(RW), READ, 512, 1, 8), Err(OUT_OF_RANGE));
        assert_eq!(range(&r(RW), READ, 505, 8, 8), Err(OUT_OF_RANGE));
        assert_eq!(range(&r(RW), READ, u64::MAX, 1, 8), Err(OUT_OF_RANGE));
        assert_eq!(range(&r(RW), READ, u64::MAX - 2, 8, 8), Err(OUT_OF_RANGE));
    }

    #[test]
    fn string_io_takes_up_to_max_sectors_and_a_write_of_its_length() {
        assert_eq!(string_io(&r(RW), false, 8, 8, None), Ok((1008, 4096)));
        assert_eq!(string_io(&r(RW), true, 0, 2, Some(1024)), Ok((1000, 1024)));
        assert_eq!(string_io(&r(RW), false, 0, MAX_SECTORS + 1, None), Err(BAD_REQUEST));
        assert_eq!(string_io(&r(RW), true, 0, 2, Some(512)), Err(BAD_REQUEST));
        assert_eq!(string_io(&r(RW), true, 0, 1, None), Err(BAD_REQUEST));
        assert_eq!(string_io(&r(READ), true, 0, 1, Some(512)), Err(NO_RIGHTS));
        assert_eq!(string_io(&r(RW), false, 512, 1, None), Err(OUT_OF_RANGE));
    }

    #[test]
    fn buffer_accepts_the_clients_own_bytes_inside() {
        assert_eq!(buffer(N, Some(&b(RW)), 0, BYTES, READ), Ok(()));
        assert_eq!(buffer(N, Some(&b(READ)), BYTES - 512, 512, READ), Ok(()));
        assert_eq!(buffer(N, Some(&b(WRITE)), 4096, 512, WRITE), Ok(()));
    }

    #[test]
    fn buffer_refuses_another_clients_or_none() {
        assert_eq!(buffer(N + 1, Some(&b(RW)), 0, 512, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, None, 0, 512, READ), Err(BAD_BUFFER));
    }

    #[test]
    fn buffer_refuses_unaligned_or_outside_bytes_overflow_safe() {
        assert_eq!(buffer(N, Some(&b(RW)), 1, 512, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, Some(&b(RW)), 256, 512, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, Some(&b(RW)), BYTES, 512, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, Some(&b(RW)), BYTES - 512, 1024, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, Some(&b(RW)), 512, u64::MAX, READ), Err(BAD_BUFFER));
        assert_eq!(buffer(N, Some(&b(RW)), u64::MAX - 511, 512, READ), Err(BAD_BUFFER));
    }

    #[test]
    fn buffer_refuses_a_share_without_what_the_device_does() {
        // A disk read has the device write the pages: a read-only share is refused.
        assert_eq!(buffer(N, Some(&b(READ)), 0, 512, device_needs(false)), Err(NO_RIGHTS));
        assert_eq!(buffer(N, Some(&b(WRITE)), 0, 512, device_needs(true)), Err(NO_RIGHTS));
        assert_eq!(buffer(N, Some(&b(READ)), 0, 512, device_needs(true)), Ok(()));
    }

    #[test]
    fn ds_io_checks_the_range_then_the_buffer() {
        assert_eq!(ds_io(&r(RW), N, Some(&b(RW)), false, 4096, 10, 120), Ok((1010, 61440)));
        assert_eq!(ds_io(&r(RW), N, Some(&b(RW)), true, 0, 0, MAX_DS_SECTORS + 1), Err(BAD_REQUEST));
        assert_eq!(ds_io(&r(RW), N, Some(&b(RW)), false, 0, 512, 1), Err(OUT_OF_RANGE));
        assert_eq!(ds_io(&r(RW), N, Some(&b(RW)), false, 0, 0, 129), Err(BAD_BUFFER));
        assert_eq!(ds_io(&r(RW), N, Some(&b(READ)), false, 0, 0, 1), Err(NO_RIGHTS));
        assert_eq!(ds_io(&r(READ), N, Some(&b(RW)), true, 0, 0, 1), Err(NO_RIGHTS));
    }

    #[test]
    fn a_good_batch_passes_every_entry_in_order() {
        let s = entries(&[e(0, 0, 8), e(100, 4096, 120), e(511, BYTES as u32 - 512, 1)]);
        let got = run(&r(RW), Some(&b(RW)), false, 3, Some(&s)).unwrap();
        assert_eq!(got, [Checked { at: 1000, offset: 0, len: 4096 }, Checked { at: 1100, offset: 4096, len: 61440 }, Checked { at: 1511, offset: BYTES - 512, len: 512 }]);
        let w = entries(&[e(5, 512, 1)]);
        assert_eq!(run(&r(WRITE), Some(&b(READ)), true, 1, Some(&w)).unwrap().len(), 1);
    }

    #[test]
    fn a_batch_of_no_entries_or_too_many_or_the_wrong_string_is_refused_whole() {
        let one = entries(&[e(0, 0, 1)]);
        assert_eq!(run(&r(RW), Some(&b(RW)), false, 0, Some(&[])), Err((BAD_REQUEST, WHOLE_BATCH)));
        let many = entries(&std::vec![e(0, 0, 1); MAX_BATCH + 1]);
        assert_eq!(run(&r(RW), Some(&b(RW)), false, MAX_BATCH as u64 + 1, Some(&many)), Err((BAD_REQUEST, WHOLE_BATCH)));
        assert_eq!(run(&r(RW), Some(&b(RW)), false, 1, None), Err((BAD_REQUEST, WHOLE_BATCH)));
        assert_eq!(run(&r(RW), Some(&b(RW)), false, 2, Some(&one)), Err((BAD_REQUEST, WHOLE_BATCH)));
        assert_eq!(run(&r(RW), Some(&b(RW)), false, 1, Some(&one[..15])), Err((BAD_REQUEST, WHOLE_BATCH)));
        let full = entries(&std::vec![e(0, 0, 1); MAX_BATCH]);
        assert_eq!(run(&r(RW), Some(&b(RW)), false, MAX_BATCH as u64, Some(&full)).unwrap().len(), MAX_BATCH);
    }

    #[test]
    fn a_batch_without_the_rights_or_its_buffer_is_refused_whole() {
        let one = entries(&[e(0, 0, 1)]);
        assert_eq!(run(&r(READ), Some(&b(RW)), true, 1, Some(&one)), Err((NO_RIGHTS, WHOLE_BATCH)));
        assert_eq!(run(&r(RW), None, false, 1, Some(&one)), Err((BAD_BUFFER, WHOLE_BATCH)));
        let other = BufferView { client: N + 1, ..b(RW) };
        assert_eq!(run(&r(RW), Some(&other), false, 1, Some(&one)), Err((BAD_BUFFER, WHOLE_BATCH)));
        assert_eq!(run(&r(RW), Some(&b(READ)), false, 1, Some(&one)), Err((NO_RIGHTS, WHOLE_BATCH)));
    }

    #[test]
    fn a_batch_with_one_bad_entry_is_refused_with_its_index_and_nothing_accepted_after() {
        for (bad, st) in [(e(512, 0, 1), OUT_OF_RANGE), (e(0, 0, 0), BAD_REQUEST), (e(0, 0, 257), BAD_REQUEST), (e(0, 100, 1), BAD_BUFFER), (e(0, BYTES as u32, 1), BAD_BUFFER), (e(u64::MAX, 0, 1), OUT_OF_RANGE)] {
            let s = entries(&[e(0, 0, 1), e(1, 512, 1), bad, e(2, 1024, 1)]);
            let mut got = 0;
            assert_eq!(batch(&r(RW), N, Some(&b(RW)), false, 4, Some(&s), |_| got += 1), Err((st, 2)), "{bad:?}");
            assert_eq!(got, 2);
        }
    }

    #[test]
    fn add_client_takes_a_range_on_the_disk_and_read_write_rights() {
        assert_eq!(add_client(1000, 0, 1000, RW), Ok(()));
        assert_eq!(add_client(1000, 999, 1, READ), Ok(()));
        assert_eq!(add_client(1000, 0, 1, 0), Ok(()));
        assert_eq!(add_client(1000, 0, 0, RW), Err(BAD_REQUEST));
        assert_eq!(add_client(1000, 1000, 1, RW), Err(BAD_REQUEST));
        assert_eq!(add_client(1000, 1, 1000, RW), Err(BAD_REQUEST));
        assert_eq!(add_client(1000, 1, u64::MAX, RW), Err(BAD_REQUEST));
        assert_eq!(add_client(1000, 0, 1, RW | keep_abi::rights::CALL), Err(BAD_REQUEST));
    }

    #[test]
    fn a_grant_must_lie_on_the_disk() {
        assert_eq!(grant(1000, 0, 1000), Ok(()));
        assert_eq!(grant(1000, 1000, 0), Err(OUT_OF_RANGE));
        assert_eq!(grant(1000, 500, 501), Err(OUT_OF_RANGE));
        assert_eq!(grant(1000, 500, u64::MAX), Err(OUT_OF_RANGE));
    }

    #[test]
    fn attach_takes_dataspaces_up_to_a_window() {
        assert_eq!(attach(1), Ok(()));
        assert_eq!(attach(MAX_BUFFER_PAGES), Ok(()));
        assert_eq!(attach(MAX_BUFFER_PAGES + 1), Err(BAD_REQUEST));
    }

    #[test]
    fn detach_lets_go_of_the_clients_own_idle_buffer() {
        assert_eq!(detach(N, Some(N), 0), Ok(()));
        assert_eq!(detach(N, Some(N), 1), Err(IN_USE));
        assert_eq!(detach(N, Some(N + 1), 0), Err(BAD_BUFFER));
        // Another client's busy buffer is not this one's to hear about.
        assert_eq!(detach(N, Some(N + 1), 1), Err(BAD_BUFFER));
        assert_eq!(detach(N, None, 0), Err(BAD_BUFFER));
    }
}

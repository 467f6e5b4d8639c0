//! Request rings: a client's requests and their completions in a page of
//! a buffer it attached (docs/block.md, "Request rings"), so that a
//! stream of requests costs no call and a completion no message.  This
//! module is the ring's layout and the rules the server applies to what
//! it reads there; the server (main.rs) and the client side ([`crate::Ring`])
//! use it.
//!
//! The ring is one page (`RING_BYTES`) at a page-aligned byte offset of an
//! attached buffer.  Two single-producer, single-consumer queues of
//! `ENTRIES` entries each, with free-running u32 indices (`head - tail`
//! entries wait), each index written by one side only:
//!
//! | bytes | what | written by |
//! |---|---|---|
//! | 0 | `REQ_HEAD`: requests posted | client |
//! | 4 | `CPL_TAIL`: completions taken | client |
//! | 8 | `WAKE_AT`: signal the notification when `CPL_HEAD` reaches it | client |
//! | 64 | `REQ_TAIL`: requests taken | server |
//! | 68 | `CPL_HEAD`: completions posted | server |
//! | 72 | `IDLE`: 1 while the server waits for messages (a `KICK` wakes it) | server |
//! | 128 | `ENTRIES` request descriptors of 32 bytes | client |
//! | 2176 | `ENTRIES` completions of 16 bytes | server |
//!
//! A request descriptor: id u64 (the client's, given back in its
//! completion), sector u64 (of the client's range), byte offset u32 (in
//! the buffer `buffer`), count u32 (sectors), op u32 (`OP_READ`,
//! `OP_WRITE`), buffer u32; little-endian.  A completion: id u64, status
//! u64.  The server never reads its own indices back from the page.

use crate::{BAD_BUFFER, BAD_REQUEST, IN_USE, MAX_DS_SECTORS, NO_RIGHTS, SECTOR};

pub const RING_BYTES: u64 = 4096;
pub const ENTRIES: u32 = 64;
pub const REQ_HEAD: u64 = 0;
pub const CPL_TAIL: u64 = 4;
pub const WAKE_AT: u64 = 8;
pub const REQ_TAIL: u64 = 64;
pub const CPL_HEAD: u64 = 68;
pub const IDLE: u64 = 72;
pub const REQS: u64 = 128;
pub const REQ_BYTES: u64 = 32;
pub const CPLS: u64 = REQS + ENTRIES as u64 * REQ_BYTES;
pub const CPL_BYTES: u64 = 16;

pub const OP_READ: u32 = 1;
pub const OP_WRITE: u32 = 2;

const READ: u64 = keep_abi::rights::READ;
const WRITE: u64 = keep_abi::rights::WRITE;

/// One request descriptor as read from the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Desc {
    pub id: u64,
    pub sector: u64,
    pub offset: u32,
    pub count: u32,
    pub op: u32,
    pub buffer: u32,
}

impl Desc {
    pub fn encode(&self) -> [u64; 4] {
        [self.id, self.sector, self.offset as u64 | (self.count as u64) << 32, self.op as u64 | (self.buffer as u64) << 32]
    }
    #[inline]
    pub fn decode(w: [u64; 4]) -> Desc {
        Desc { id: w[0], sector: w[1], offset: w[2] as u32, count: (w[2] >> 32) as u32, op: w[3] as u32, buffer: (w[3] >> 32) as u32 }
    }
}

/// The client a descriptor is checked against: its range's size and rights.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub first: u64,
    pub sectors: u64,
    pub rights: u64,
}

/// A buffer of the server's table as the rules see it.
#[derive(Clone, Copy, Debug)]
pub struct BufferView {
    /// The client it was attached by.
    pub client: u64,
    pub bytes: u64,
    /// The share's rights (READ: the device may read the pages; WRITE: write them).
    pub rights: u64,
    /// This buffer holds the client's ring at this byte offset.
    pub ring_at: Option<u64>,
}

/// A descriptor that passed: the disk's sector, the byte offset in the
/// buffer, the bytes, and whether the device reads the disk (into the pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    pub at: u64,
    pub offset: u64,
    pub len: u64,
    pub read: bool,
}

/// The rules for one descriptor of client `n` (range `r`), `buf` the
/// buffer its descriptor names (None: no such entry in the table).  The
/// same as a batch entry's: the operation, the client's rights, the count,
/// its range (overflow-safe), the buffer being its own, the bytes inside
/// the buffer and aligned, the share's rights for what the device does;
/// and no bytes on the ring's own page (the device would write the
/// descriptors the server reads).  Err: the completion's status.
#[inline]
pub fn check(d: &Desc, n: u64, r: &Range, buf: Option<&BufferView>) -> Result<Checked, u64> {
    let read = match d.op {
        OP_READ => true,
        OP_WRITE => false,
        _ => return Err(BAD_REQUEST),
    };
    let count = d.count as u64;
    let at = crate::rules::range(r, if read { READ } else { WRITE }, d.sector, count, MAX_DS_SECTORS)?;
    let (offset, len) = (d.offset as u64, count * SECTOR as u64);
    // The ring's own page is read-write (may_set_up): a descriptor on it is
    // BAD_BUFFER whatever the rights.
    if let Some(b) = buf.filter(|b| b.client == n)
        && let Some(ring_at) = b.ring_at
        && offset < ring_at + RING_BYTES
        && ring_at < offset.saturating_add(len)
    {
        return Err(BAD_BUFFER);
    }
    crate::rules::buffer(n, buf, offset, len, crate::rules::device_needs(!read))?;
    Ok(Checked { at, offset, len, read })
}

/// The rules for setting a ring up in buffer `buf` at byte `offset` for
/// client `n`, which has `has_ring` already: the buffer its own
/// (BAD_BUFFER), the page inside it and page-aligned (BAD_BUFFER), shared
/// read-write (NO_RIGHTS: the server writes completions, the client
/// descriptors), one ring per client (IN_USE).
pub fn may_set_up(n: u64, buf: Option<&BufferView>, offset: u64, has_ring: bool) -> Result<(), u64> {
    let Some(b) = buf.filter(|b| b.client == n) else { return Err(BAD_BUFFER) };
    if offset % RING_BYTES != 0 || offset >= b.bytes || RING_BYTES > b.bytes - offset {
        return Err(BAD_BUFFER);
    }
    if b.rights & (READ | WRITE) != READ | WRITE {
        return Err(NO_RIGHTS);
    }
    if has_ring {
        return Err(IN_USE);
    }
    Ok(())
}

/// Requests waiting when the client says `head` and the server took
/// `tail`; None for more than the ring holds (the client's index is out
/// of range: nothing is taken).
#[inline]
pub fn waiting(head: u32, tail: u32) -> Option<u32> {
    let n = head.wrapping_sub(tail);
    (n <= ENTRIES).then_some(n)
}

/// Requests the server may take now: its completion must have room.
/// `posted` completions written (CPL_HEAD), `taken` by the client
/// (CPL_TAIL, read from the page), `outstanding` requests taken and not
/// yet completed.  A CPL_TAIL ahead of CPL_HEAD or more than ENTRIES
/// behind gives no room.
#[inline]
pub fn room(posted: u32, taken: u32, outstanding: u32) -> u32 {
    let used = posted.wrapping_sub(taken);
    if used > ENTRIES { 0 } else { (ENTRIES - used).saturating_sub(outstanding) }
}

/// Does moving CPL_HEAD from `old` to `new` reach the client's `wake_at`
/// (it wants a signal when its `wake_at`-th completion is posted)?
#[inline]
pub fn crosses(old: u32, new: u32, wake_at: u32) -> bool {
    new != old && wake_at.wrapping_sub(old).wrapping_sub(1) < new.wrapping_sub(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OUT_OF_RANGE;

    const N: u64 = 3;
    fn range(rights: u64) -> Range {
        Range { first: 1000, sectors: 512, rights }
    }
    fn buf(rights: u64) -> BufferView {
        BufferView { client: N, bytes: 64 * 4096, rights, ring_at: Some(0) }
    }
    fn d(op: u32, sector: u64, offset: u32, count: u32) -> Desc {
        Desc { id: 7, sector, offset, count, op, buffer: 0 }
    }
    const RW: u64 = READ | WRITE;

    #[test]
    fn descriptors_round_trip() {
        let x = Desc { id: u64::MAX - 5, sector: 1 << 40, offset: 0xdead_be00, count: 256, op: OP_WRITE, buffer: 63 };
        assert_eq!(Desc::decode(x.encode()), x);
    }

    #[test]
    fn a_good_read_and_write_pass() {
        let b = buf(RW);
        assert_eq!(check(&d(OP_READ, 0, 4096, 128), N, &range(RW), Some(&b)), Ok(Checked { at: 1000, offset: 4096, len: 65536, read: true }));
        assert_eq!(check(&d(OP_WRITE, 511, 8192, 1), N, &range(RW), Some(&b)), Ok(Checked { at: 1511, offset: 8192, len: 512, read: false }));
        // The last bytes of the buffer, the whole range.
        let last = (64 * 4096 - 512) as u32;
        assert!(check(&d(OP_READ, 0, last, 1), N, &range(RW), Some(&b)).is_ok());
        assert!(check(&d(OP_READ, 256, 4096, 256), N, &range(READ), Some(&b)).is_ok());
    }

    #[test]
    fn an_unknown_op_is_bad_request() {
        for op in [0, 3, u32::MAX] {
            assert_eq!(check(&d(op, 0, 4096, 8), N, &range(RW), Some(&buf(RW))), Err(BAD_REQUEST));
        }
    }

    #[test]
    fn the_clients_rights_are_kept() {
        assert_eq!(check(&d(OP_WRITE, 0, 4096, 8), N, &range(READ), Some(&buf(RW))), Err(NO_RIGHTS));
        assert_eq!(check(&d(OP_READ, 0, 4096, 8), N, &range(WRITE), Some(&buf(RW))), Err(NO_RIGHTS));
    }

    #[test]
    fn counts_of_zero_or_above_the_maximum_are_bad_request() {
        assert_eq!(check(&d(OP_READ, 0, 4096, 0), N, &range(RW), Some(&buf(RW))), Err(BAD_REQUEST));
        assert_eq!(check(&d(OP_READ, 0, 4096, MAX_DS_SECTORS as u32 + 1), N, &range(RW), Some(&buf(RW))), Err(BAD_REQUEST));
    }

    #[test]
    fn sectors_outside_the_range_are_refused_overflow_safe() {
        let b = buf(RW);
        assert_eq!(check(&d(OP_READ, 512, 4096, 1), N, &range(RW), Some(&b)), Err(OUT_OF_RANGE));
        assert_eq!(check(&d(OP_READ, 511, 4096, 2), N, &range(RW), Some(&b)), Err(OUT_OF_RANGE));
        assert_eq!(check(&d(OP_READ, u64::MAX, 4096, 8), N, &range(RW), Some(&b)), Err(OUT_OF_RANGE));
        assert_eq!(check(&d(OP_WRITE, u64::MAX - 3, 4096, 8), N, &range(RW), Some(&b)), Err(OUT_OF_RANGE));
    }

    #[test]
    fn only_the_clients_own_buffer() {
        let other = BufferView { client: N + 1, ..buf(RW) };
        assert_eq!(check(&d(OP_READ, 0, 4096, 8), N, &range(RW), Some(&other)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_READ, 0, 4096, 8), N, &range(RW), None), Err(BAD_BUFFER));
    }

    #[test]
    fn bytes_outside_the_buffer_or_unaligned_are_bad_buffer() {
        let b = buf(RW);
        assert_eq!(check(&d(OP_READ, 0, 4097, 1), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_READ, 0, 64 * 4096, 1), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_READ, 0, 64 * 4096 - 512, 2), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_READ, 0, u32::MAX & !511, 8), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
    }

    #[test]
    fn the_rings_own_page_is_refused() {
        let b = BufferView { ring_at: Some(8192), ..buf(RW) };
        assert_eq!(check(&d(OP_READ, 0, 8192, 1), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_READ, 0, 8192 + 3584, 1), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        // Starting before the ring's page and running into it.
        assert_eq!(check(&d(OP_READ, 0, 4096, 9), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        assert_eq!(check(&d(OP_WRITE, 0, 0, 32), N, &range(RW), Some(&b)), Err(BAD_BUFFER));
        // Just beside it, on either side.
        assert!(check(&d(OP_READ, 0, 4096, 8), N, &range(RW), Some(&b)).is_ok());
        assert!(check(&d(OP_READ, 0, 12288, 8), N, &range(RW), Some(&b)).is_ok());
    }

    #[test]
    fn the_shares_rights_are_kept() {
        // A disk read needs the device to write the pages; a disk write, to read them.
        assert_eq!(check(&d(OP_READ, 0, 4096, 8), N, &range(RW), Some(&buf(READ))), Err(NO_RIGHTS));
        assert_eq!(check(&d(OP_WRITE, 0, 4096, 8), N, &range(RW), Some(&buf(WRITE))), Err(NO_RIGHTS));
        assert!(check(&d(OP_WRITE, 0, 4096, 8), N, &range(RW), Some(&buf(READ))).is_ok());
    }

    #[test]
    fn setting_a_ring_up() {
        let b = BufferView { ring_at: None, ..buf(RW) };
        assert_eq!(may_set_up(N, Some(&b), 0, false), Ok(()));
        assert_eq!(may_set_up(N, Some(&b), 63 * 4096, false), Ok(()));
        assert_eq!(may_set_up(N, None, 0, false), Err(BAD_BUFFER));
        assert_eq!(may_set_up(N + 1, Some(&b), 0, false), Err(BAD_BUFFER));
        assert_eq!(may_set_up(N, Some(&b), 512, false), Err(BAD_BUFFER));
        assert_eq!(may_set_up(N, Some(&b), 64 * 4096, false), Err(BAD_BUFFER));
        assert_eq!(may_set_up(N, Some(&b), u64::MAX & !4095, false), Err(BAD_BUFFER));
        assert_eq!(may_set_up(N, Some(&BufferView { rights: READ, ..b }), 0, false), Err(NO_RIGHTS));
        assert_eq!(may_set_up(N, Some(&BufferView { rights: WRITE, ..b }), 0, false), Err(NO_RIGHTS));
        assert_eq!(may_set_up(N, Some(&b), 0, true), Err(IN_USE));
    }

    #[test]
    fn indices_out_of_range_take_nothing() {
        assert_eq!(waiting(5, 5), Some(0));
        assert_eq!(waiting(69, 5), Some(64));
        assert_eq!(waiting(70, 5), None);
        assert_eq!(waiting(4, 5), None);
        assert_eq!(waiting(3, u32::MAX - 2), Some(6));
    }

    #[test]
    fn completions_need_room() {
        assert_eq!(room(0, 0, 0), ENTRIES);
        assert_eq!(room(10, 0, 4), ENTRIES - 14);
        assert_eq!(room(64, 0, 0), 0);
        assert_eq!(room(10, 0, 60), 0);
        // A tail ahead of the head, or too far behind: no room.
        assert_eq!(room(10, 11, 0), 0);
        assert_eq!(room(100, 0, 0), 0);
        assert_eq!(room(2, u32::MAX, 0), ENTRIES - 3);
    }

    #[test]
    fn the_wake_up_index() {
        assert!(crosses(0, 1, 1));
        assert!(crosses(0, 32, 32));
        assert!(crosses(30, 34, 32));
        assert!(!crosses(0, 31, 32));
        assert!(!crosses(32, 33, 32), "reached before: no second signal");
        assert!(!crosses(5, 5, 5));
        assert!(crosses(u32::MAX - 1, 2, 0));
        assert!(crosses(u32::MAX - 1, 2, 2));
        assert!(!crosses(u32::MAX - 1, 2, 3));
    }
}

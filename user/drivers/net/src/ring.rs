//! Frame rings: a stack's frames in a dataspace it shares with the
//! network server (docs/network.md, "Frame rings"), in the spirit of
//! Genode's packet stream and DROPS's shared buffers: the frames stay in
//! the stack's pages, and what crosses are descriptors in four
//! single-producer, single-consumer queues on the dataspace's first page.
//!
//! | queue | producer | consumer | entries |
//! |---|---|---|---|
//! | `RX_FREE` | stack | server | receive buffers the server may fill |
//! | `RX_DONE` | server | stack | received frames (offset, length) |
//! | `TX_SUBMIT` | stack | server | frames to send (offset, length) |
//! | `TX_DONE` | server | stack | transmit buffers given back (offset, status) |
//!
//! Each queue has a producer index and a consumer index (free-running
//! u32s; `prod - cons` entries wait, at most `QUEUE`), each written only
//! by its own side.  The server never reads its own indices back from the
//! page: it keeps them, so a stack that writes the server's half fools
//! only itself (the server counts it and writes its value again).
//!
//! A descriptor is a u64: bits 0-31 the byte offset of the buffer in the
//! dataspace, bits 32-47 the frame's length, bits 48-63 a status
//! (`TX_DONE`: `OK`, or why the frame was not sent).  Buffers are
//! `BUF_SIZE` bytes at offsets that are multiples of `BUF_SIZE` past the
//! first page, so a frame never crosses a page.

use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{Ordering, fence};

pub const PAGE: u64 = 4096;
/// A frame buffer; offsets are multiples of it.
pub const BUF_SIZE: u64 = 2048;
/// Entries of each queue.
pub const QUEUE: u32 = 64;
/// The dataspaces the server takes: the control page and 1 to 64 pages of buffers.
pub const MIN_PAGES: u64 = 2;
pub const MAX_PAGES: u64 = 65;
/// What `Ring::layout` makes: 32 receive buffers, 32 transmit buffers.
pub const RX_BUFFERS: u32 = 32;
pub const TX_BUFFERS: u32 = 32;
pub const RING_PAGES: u64 = 1 + (RX_BUFFERS + TX_BUFFERS) as u64 * BUF_SIZE / PAGE;

pub const RX_FREE: usize = 0;
pub const RX_DONE: usize = 1;
pub const TX_SUBMIT: usize = 2;
pub const TX_DONE: usize = 3;
/// Where each queue's parts are on the control page.
const QUEUE_STRIDE: u64 = 1024;
const PROD: u64 = 0;
const CONS: u64 = 64;
const ENTRIES: u64 = 128;

pub fn desc(offset: u64, len: u64, status: u64) -> u64 {
    (offset & 0xffff_ffff) | (len & 0xffff) << 32 | (status & 0xffff) << 48
}
pub fn desc_offset(d: u64) -> u64 {
    d & 0xffff_ffff
}
pub fn desc_len(d: u64) -> u64 {
    d >> 32 & 0xffff
}
pub fn desc_status(d: u64) -> u64 {
    d >> 48
}

/// The entries waiting in a queue whose producer says `prod` and consumer
/// `cons`; None if that is more than a queue holds (an index out of range).
pub fn waiting(prod: u32, cons: u32) -> Option<u32> {
    let n = prod.wrapping_sub(cons);
    (n <= QUEUE).then_some(n)
}

/// A buffer the stack offers for receiving: its offset, if it lies wholly
/// in the buffer area of a dataspace of `pages` pages and is aligned.
pub fn check_rx(d: u64, pages: u64) -> Option<u64> {
    let off = desc_offset(d);
    (off % BUF_SIZE == 0 && off >= PAGE && off + BUF_SIZE <= pages * PAGE).then_some(off)
}

/// A frame the stack submits: (offset, length), or `BAD_REQUEST` if it is
/// unaligned, outside the buffer area, shorter than an Ethernet header or
/// longer than `MAX_FRAME`.
pub fn check_tx(d: u64, pages: u64) -> Result<(u64, usize), u64> {
    let (off, len) = (desc_offset(d), desc_len(d));
    if off % BUF_SIZE != 0 || off < PAGE || len < crate::ETH_HEADER as u64 || len > crate::MAX_FRAME as u64 || off + len > pages * PAGE {
        return Err(crate::BAD_REQUEST);
    }
    Ok((off, len as usize))
}

/// The control page of a ring mapped at `base` (either side's mapping).
#[derive(Clone, Copy)]
pub struct Control(pub u64);

impl Control {
    fn at(self, q: usize, part: u64) -> *mut u32 {
        (self.0 + q as u64 * QUEUE_STRIDE + part) as *mut u32
    }
    pub fn prod(self, q: usize) -> u32 {
        fence(Ordering::SeqCst);
        // SAFETY: the control page is mapped read-write for as long as the Control is used.
        unsafe { read_volatile(self.at(q, PROD)) }
    }
    pub fn cons(self, q: usize) -> u32 {
        fence(Ordering::SeqCst);
        // SAFETY: as in prod().
        unsafe { read_volatile(self.at(q, CONS)) }
    }
    /// Publishes entries written before (the fence orders them first).
    pub fn set_prod(self, q: usize, v: u32) {
        fence(Ordering::SeqCst);
        // SAFETY: as in prod().
        unsafe { write_volatile(self.at(q, PROD), v) }
        fence(Ordering::SeqCst);
    }
    pub fn set_cons(self, q: usize, v: u32) {
        fence(Ordering::SeqCst);
        // SAFETY: as in prod().
        unsafe { write_volatile(self.at(q, CONS), v) }
        fence(Ordering::SeqCst);
    }
    pub fn entry(self, q: usize, i: u32) -> u64 {
        let p = (self.0 + q as u64 * QUEUE_STRIDE + ENTRIES + (i % QUEUE) as u64 * 8) as *const u64;
        // SAFETY: as in prod(); the entry lies on the control page.
        unsafe { read_volatile(p) }
    }
    pub fn set_entry(self, q: usize, i: u32, d: u64) {
        let p = (self.0 + q as u64 * QUEUE_STRIDE + ENTRIES + (i % QUEUE) as u64 * 8) as *mut u64;
        // SAFETY: as in entry().
        unsafe { write_volatile(p, d) }
    }
}

/// The stack's side of a ring: its dataspace mapped read-write at `va`
/// ([`RING_PAGES`] pages), receive buffers in the first half of the
/// buffer area and transmit buffers in the second.  Single-threaded; the
/// methods take `&self` so that smoltcp's receive and transmit tokens can
/// both refer to it.
pub struct Ring {
    ctl: Control,
    va: u64,
    /// The stack's own indices: RX_DONE consumed, RX_FREE produced,
    /// TX_SUBMIT produced, TX_DONE consumed.
    rx_cons: core::cell::Cell<u32>,
    free_prod: core::cell::Cell<u32>,
    tx_prod: core::cell::Cell<u32>,
    done_cons: core::cell::Cell<u32>,
    /// Transmit buffers not with the server (bit i: buffer i).
    tx_free: core::cell::Cell<u64>,
    /// A frame was submitted to an empty TX_SUBMIT since the last `kicked`.
    kick: core::cell::Cell<bool>,
    /// Transmit buffers the server gave back refused (`TX_DONE` status).
    pub refused: core::cell::Cell<u64>,
}

impl Ring {
    /// A ring over the dataspace mapped at `va`: every index 0, every
    /// receive buffer offered to the server, every transmit buffer free.
    /// Call before each `ATTACH` (a new server starts from 0).
    pub fn new(va: u64) -> Ring {
        let r = Ring {
            ctl: Control(va),
            va,
            rx_cons: 0.into(),
            free_prod: 0.into(),
            tx_prod: 0.into(),
            done_cons: 0.into(),
            tx_free: 0.into(),
            kick: false.into(),
            refused: 0.into(),
        };
        r.reset();
        r
    }

    pub fn reset(&self) {
        // SAFETY: the control page is mapped read-write at va.
        unsafe { core::ptr::write_bytes(self.va as *mut u8, 0, PAGE as usize) };
        for i in 0..RX_BUFFERS {
            self.ctl.set_entry(RX_FREE, i, desc(PAGE + i as u64 * BUF_SIZE, BUF_SIZE, 0));
        }
        self.ctl.set_prod(RX_FREE, RX_BUFFERS);
        self.rx_cons.set(0);
        self.free_prod.set(RX_BUFFERS);
        self.tx_prod.set(0);
        self.done_cons.set(0);
        self.tx_free.set((1u64 << TX_BUFFERS) - 1);
        self.kick.set(false);
    }

    pub fn control(&self) -> Control {
        self.ctl
    }

    fn tx_offset(i: u32) -> u64 {
        PAGE + (RX_BUFFERS + i) as u64 * BUF_SIZE
    }

    /// The next received frame: (offset, length); it stays the stack's
    /// until `rx_release`.
    pub fn rx_next(&self) -> Option<(u64, usize)> {
        let c = self.rx_cons.get();
        if self.ctl.prod(RX_DONE) == c {
            return None;
        }
        let d = self.ctl.entry(RX_DONE, c);
        self.rx_cons.set(c.wrapping_add(1));
        self.ctl.set_cons(RX_DONE, c.wrapping_add(1));
        Some((desc_offset(d), (desc_len(d) as usize).min(BUF_SIZE as usize)))
    }

    /// Received frames waiting.
    pub fn rx_waiting(&self) -> u32 {
        self.ctl.prod(RX_DONE).wrapping_sub(self.rx_cons.get())
    }

    /// Offers the receive buffer at `offset` to the server again.
    pub fn rx_release(&self, offset: u64) {
        let p = self.free_prod.get();
        self.ctl.set_entry(RX_FREE, p, desc(offset, BUF_SIZE, 0));
        self.free_prod.set(p.wrapping_add(1));
        self.ctl.set_prod(RX_FREE, p.wrapping_add(1));
    }

    /// The bytes of the buffer at `offset`.
    pub fn buffer(&self, offset: u64, len: usize) -> &mut [u8] {
        // SAFETY: offset comes from this ring's layout (the server's
        // descriptors are clamped to a buffer); the buffer is this side's
        // between rx_next and rx_release, or while a transmit buffer is free.
        unsafe { core::slice::from_raw_parts_mut((self.va + offset) as *mut u8, len.min(BUF_SIZE as usize)) }
    }

    /// Takes back the transmit buffers the server is done with.
    fn reap(&self) {
        let (mut c, p) = (self.done_cons.get(), self.ctl.prod(TX_DONE));
        while c != p {
            let d = self.ctl.entry(TX_DONE, c);
            let off = desc_offset(d);
            if desc_status(d) != crate::OK {
                self.refused.set(self.refused.get() + 1);
            }
            if let Some(i) = off.checked_sub(Self::tx_offset(0)).map(|x| x / BUF_SIZE).filter(|&i| i < TX_BUFFERS as u64) {
                self.tx_free.set(self.tx_free.get() | 1 << i);
            }
            c = c.wrapping_add(1);
        }
        self.done_cons.set(c);
        self.ctl.set_cons(TX_DONE, c);
    }

    /// Whether a transmit buffer is free (after taking back those the
    /// server is done with).
    pub fn can_send(&self) -> bool {
        if self.tx_free.get() == 0 {
            self.reap();
        }
        self.tx_free.get() != 0
    }

    /// A free transmit buffer's offset.
    pub fn tx_take(&self) -> Option<u64> {
        if !self.can_send() {
            return None;
        }
        let i = self.tx_free.get().trailing_zeros();
        self.tx_free.set(self.tx_free.get() & !(1 << i));
        Some(Self::tx_offset(i))
    }

    /// Hands the frame in the buffer at `offset` to the server.  If the
    /// server had taken everything before, it must be told (`kicked`).
    pub fn tx_submit(&self, offset: u64, len: usize) {
        let p = self.tx_prod.get();
        self.ctl.set_entry(TX_SUBMIT, p, desc(offset, len as u64, 0));
        self.tx_prod.set(p.wrapping_add(1));
        self.ctl.set_prod(TX_SUBMIT, p.wrapping_add(1));
        if self.ctl.cons(TX_SUBMIT) == p {
            self.kick.set(true);
        }
    }

    /// Whether the server must be told of new frames (`KICK` or `WAIT`);
    /// clears it.
    pub fn take_kick(&self) -> bool {
        self.kick.replace(false)
    }

    /// Frames submitted that the server has not taken yet.
    pub fn tx_pending(&self) -> u32 {
        self.tx_prod.get().wrapping_sub(self.ctl.cons(TX_SUBMIT))
    }
}

/// smoltcp's tokens over a ring: the received frame is lent in place and
/// its buffer offered again after; a frame to send is written into a
/// transmit buffer in place and submitted.
#[cfg(feature = "smoltcp")]
pub mod phy {
    use super::Ring;

    pub struct RingRx<'a> {
        pub ring: &'a Ring,
        pub offset: u64,
        pub len: usize,
    }

    impl smoltcp::phy::RxToken for RingRx<'_> {
        fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
            f(self.ring.buffer(self.offset, self.len))
        }
    }

    impl Drop for RingRx<'_> {
        fn drop(&mut self) {
            self.ring.rx_release(self.offset);
        }
    }

    /// Made only when `can_send` said a buffer is free.
    pub struct RingTx<'a>(pub &'a Ring);

    impl smoltcp::phy::TxToken for RingTx<'_> {
        fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
            match self.0.tx_take() {
                Some(off) => {
                    let r = f(self.0.buffer(off, len));
                    self.0.tx_submit(off, len.min(crate::MAX_FRAME));
                    r
                }
                // Not reached (can_send was checked); the frame is lost, as on a full NIC.
                None => f(&mut [0u8; crate::MAX_FRAME][..len.min(crate::MAX_FRAME)]),
            }
        }
    }

    /// The next received frame and a transmit token (None if no frame, or
    /// no transmit buffer for smoltcp's answer).
    pub fn receive(ring: &Ring) -> Option<(RingRx<'_>, RingTx<'_>)> {
        if !ring.can_send() {
            return None;
        }
        let (offset, len) = ring.rx_next()?;
        Some((RingRx { ring, offset, len }, RingTx(ring)))
    }

    pub fn transmit(ring: &Ring) -> Option<RingTx<'_>> {
        ring.can_send().then_some(RingTx(ring))
    }
}

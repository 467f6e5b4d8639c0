//! futex: a thread waits in the server until another wakes the same word.
//! A word's key is its process's memory and its address, or, in a shared
//! area (MAP_SHARED), the frame holding it and the offset in that frame,
//! so threads of one process (one memory) and processes sharing memory meet
//! on it, and private and shared operations are one (Linux keys them apart;
//! a program mixing them on one word is wrong anyway).  Waiters are woken
//! in the order they came.

use super::*;
use crate::process::FutexWait;
use crate::linux::futex::{FUTEX_CLOCK_REALTIME, FUTEX_CMP_REQUEUE, FUTEX_PRIVATE_FLAG, FUTEX_REQUEUE, FUTEX_WAIT, FUTEX_WAIT_BITSET, FUTEX_WAKE, FUTEX_WAKE_BITSET};

/// Set in the call's op while it waits (Linux's op is an int: this bit is
/// never a caller's).
const WAITING: u64 = 1 << 40;

/// The key of the u32 at `va` in `pid`'s memory (the page is populated).
pub(crate) fn key(s: &mut Server, pid: i32, va: u64) -> Result<(u64, u64), i64> {
    if va % 4 != 0 {
        return Err(EINVAL);
    }
    mem::check_range(va, 4)?;
    let mm = &mut s.proc(pid).mm;
    let slot = mm.page(va & !(PAGE - 1), mem::PROT_READ)?.frame.slot;
    if mm.is_shared(va) {
        return Ok((slot, va % PAGE));
    }
    // Private memory: the memory and the address, as Linux keys an
    // anonymous page, since a copy-on-write page's frame changes at its
    // first write (a thread waiting while another forks and then wakes it).
    Ok((mm.id() as u64 | PRIVATE_KEY, va))
}

/// Marks a private word's key (memory and address) apart from a shared
/// one's (frame slot and offset).
const PRIVATE_KEY: u64 = 1 << 63;

/// Wakes at most `n` threads waiting on `key` for any of `bits`; returns
/// how many.  The woken threads' calls return 0 when next tried.
pub(crate) fn wake(s: &mut Server, key: (u64, u64), bits: u32, n: u64) -> u64 {
    let mut waiters: Vec<(u64, i32)> = s
        .procs
        .values()
        .filter(|p| matches!(p.blocked, Some(Blocked::Call(c)) if c.nr == 202))
        .filter_map(|p| p.futex.filter(|w| w.key == key && w.bitset & bits != 0).map(|w| (w.seq, p.pid)))
        .collect();
    waiters.sort_unstable();
    let mut woken = 0;
    for (_, tid) in waiters.into_iter().take(n.min(i32::MAX as u64) as usize) {
        s.proc(tid).futex = None;
        woken += 1;
    }
    woken
}

/// Moves at most `n` waiters of `from` to `to`.
fn requeue(s: &mut Server, from: (u64, u64), to: (u64, u64), n: u64) -> u64 {
    let mut moved = 0;
    for p in s.procs.values_mut() {
        if moved >= n {
            break;
        }
        if let Some(w) = p.futex.as_mut()
            && w.key == from
            && matches!(p.blocked, Some(Blocked::Call(c)) if c.nr == 202)
        {
            w.key = to;
            moved += 1;
        }
    }
    moved
}

/// A timespec at `va` as nanoseconds (EINVAL when out of range).
pub(crate) fn timespec_ns(s: &mut Server, pid: i32, va: u64) -> Result<u64, i64> {
    let mm = &mut s.proc(pid).mm;
    let (sec, nsec) = (mm.read_u64(va)?, mm.read_u64(va + 8)?);
    if (sec as i64) < 0 || nsec >= 1_000_000_000 {
        return Err(EINVAL);
    }
    Ok(sec.saturating_mul(1_000_000_000).saturating_add(nsec))
}

pub fn futex(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (uaddr, op, val) = (c.args[0], c.args[1], c.args[2] as u32);
    if op & WAITING != 0 {
        // Tried again while waiting: woken, timed out, or still waiting.
        return match s.proc(pid).futex {
            None => Out::Ret(0),
            Some(_) if c.args[3] != 0 && misc_now() >= c.args[3] => {
                s.proc(pid).futex = None;
                Out::Ret(-ETIMEDOUT)
            }
            Some(_) => {
                s.proc(pid).waits_tty = c.args[3] != 0; // polled for its deadline
                Out::Block
            }
        };
    }
    let timeout = s.arg(pid, c, 3);
    let uaddr2 = s.arg(pid, c, 4);
    let val3 = s.arg(pid, c, 5) as u32;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME) & 0xffff_ffff;
    if op & FUTEX_CLOCK_REALTIME != 0 && !matches!(cmd, FUTEX_WAIT | FUTEX_WAIT_BITSET) {
        return Out::Ret(-ENOSYS);
    }
    let r = (|| match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            let bits = if cmd == FUTEX_WAIT { u32::MAX } else { val3 };
            if bits == 0 {
                return Err(EINVAL);
            }
            let deadline = match timeout {
                0 => 0,
                t if cmd == FUTEX_WAIT => misc_now().saturating_add(timespec_ns(s, pid, t)?).max(1),
                // WAIT_BITSET's time-out is absolute; every clock counts
                // from boot (see clock_gettime).
                t => timespec_ns(s, pid, t)?.max(1),
            };
            let key = key(s, pid, uaddr)?;
            let mut b = [0u8; 4];
            s.proc(pid).mm.read(uaddr, &mut b)?;
            if u32::from_le_bytes(b) != val {
                return Err(EAGAIN);
            }
            if deadline != 0 && misc_now() >= deadline {
                return Err(ETIMEDOUT);
            }
            s.futex_seq += 1;
            let seq = s.futex_seq;
            let p = s.proc(pid);
            p.futex = Some(FutexWait { key, bitset: bits, seq });
            p.waits_tty = deadline != 0;
            c.args[1] |= WAITING;
            c.args[3] = deadline;
            Err(WOULD_BLOCK)
        }
        FUTEX_WAKE | FUTEX_WAKE_BITSET => {
            let bits = if cmd == FUTEX_WAKE { u32::MAX } else { val3 };
            if bits == 0 {
                return Err(EINVAL);
            }
            let key = key(s, pid, uaddr)?;
            Ok(wake(s, key, bits, val as u64) as i64)
        }
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
            let from = key(s, pid, uaddr)?;
            let to = key(s, pid, uaddr2)?;
            if cmd == FUTEX_CMP_REQUEUE {
                let mut b = [0u8; 4];
                s.proc(pid).mm.read(uaddr, &mut b)?;
                if u32::from_le_bytes(b) != val3 {
                    return Err(EAGAIN);
                }
            }
            // The fourth argument is the requeue count here, not a pointer.
            let woken = wake(s, from, u32::MAX, val as u64);
            Ok((woken + requeue(s, from, to, timeout & 0x7fff_ffff)) as i64)
        }
        _ => Err(ENOSYS),
    })();
    ret(r)
}

fn misc_now() -> u64 {
    super::misc::now_ns()
}

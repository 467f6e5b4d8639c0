//! A bounded byte queue: pushing past its capacity drops the oldest bytes
//! (counted), so a producer that floods loses only its own oldest data
//! and never waits.

use alloc::collections::VecDeque;

pub struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Bytes dropped since the count was last taken.
    dropped: u64,
}

impl Ring {
    pub fn new(capacity: usize) -> Ring {
        Ring { bytes: VecDeque::new(), capacity, dropped: 0 }
    }

    /// Appends `data`, dropping the oldest bytes beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.capacity {
            self.dropped += (data.len() - self.capacity) as u64;
            &data[data.len() - self.capacity..]
        } else {
            data
        };
        let over = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        if over > 0 {
            self.bytes.drain(..over);
            self.dropped += over as u64;
        }
        self.bytes.extend(data);
    }

    /// Takes up to `out.len()` of the oldest bytes.
    pub fn take(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.bytes.len());
        for (o, b) in out.iter_mut().zip(self.bytes.drain(..n)) {
            *o = b;
        }
        n
    }

    /// Takes everything, appending it to `out`.
    pub fn drain_into(&mut self, out: &mut alloc::vec::Vec<u8>) {
        out.extend(self.bytes.drain(..));
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes dropped so far, and the count set back to 0.
    pub fn take_dropped(&mut self) -> u64 {
        core::mem::take(&mut self.dropped)
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_capacity() {
        let mut r = Ring::new(4);
        r.push(b"ab");
        r.push(b"cdef");
        assert_eq!(r.len(), 4);
        assert_eq!(r.dropped(), 2);
        let mut out = [0u8; 8];
        assert_eq!(r.take(&mut out), 4);
        assert_eq!(&out[..4], b"cdef");
        assert_eq!(r.take_dropped(), 2);
        assert_eq!(r.dropped(), 0);
    }

    #[test]
    fn a_push_larger_than_the_capacity_keeps_its_tail() {
        let mut r = Ring::new(3);
        r.push(b"x");
        r.push(b"123456");
        let mut v = alloc::vec::Vec::new();
        r.drain_into(&mut v);
        assert_eq!(v, b"456");
        assert_eq!(r.dropped(), 4);
        assert!(r.is_empty());
    }
}

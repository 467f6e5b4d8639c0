//! The store's contents: every client's keys, and the policy of a request
//! (a client reaches only its own namespace; the limits).  A client is the
//! number the server takes from its capability's payload, never a string
//! the client sends.

use alloc::vec::Vec;

use crate::protocol::{BAD_REQUEST, FULL, NOT_FOUND, TOO_LARGE};

/// The longest name and value, and how many keys a client and the store hold.
pub const MAX_NAME: usize = 32;
pub const MAX_VALUE: usize = 256;
pub const MAX_KEYS: usize = 16;
pub const MAX_RECORDS: usize = 128;

/// One key: its client's number, its name, its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub client: u16,
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

/// All keys, in (client, name) order, so that an image is one function of
/// the contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records(pub Vec<Record>);

/// The refusal of a request as the status the client gets.
pub type Status = u64;

fn name_ok(name: &[u8]) -> Result<(), Status> {
    if name.is_empty() || name.len() > MAX_NAME { Err(BAD_REQUEST) } else { Ok(()) }
}

impl Records {
    fn find(&self, client: u16, name: &[u8]) -> Result<usize, usize> {
        self.0.binary_search_by(|r| (r.client, r.name.as_slice()).cmp(&(client, name)))
    }

    pub fn get(&self, client: u16, name: &[u8]) -> Result<&[u8], Status> {
        name_ok(name)?;
        self.find(client, name).map(|i| self.0[i].value.as_slice()).map_err(|_| NOT_FOUND)
    }

    /// The contents with the key set; Err (nothing changed) past a limit.
    pub fn put(&self, client: u16, name: &[u8], value: &[u8]) -> Result<Records, Status> {
        name_ok(name)?;
        if value.len() > MAX_VALUE {
            return Err(TOO_LARGE);
        }
        let mut next = self.clone();
        match self.find(client, name) {
            Ok(i) => next.0[i].value = value.to_vec(),
            Err(i) => {
                if self.keys_of(client) >= MAX_KEYS || self.0.len() >= MAX_RECORDS {
                    return Err(FULL);
                }
                next.0.insert(i, Record { client, name: name.to_vec(), value: value.to_vec() });
            }
        }
        Ok(next)
    }

    /// The contents without the key.
    pub fn delete(&self, client: u16, name: &[u8]) -> Result<Records, Status> {
        name_ok(name)?;
        let i = self.find(client, name).map_err(|_| NOT_FOUND)?;
        let mut next = self.clone();
        next.0.remove(i);
        Ok(next)
    }

    pub fn keys_of(&self, client: u16) -> usize {
        self.0.iter().filter(|r| r.client == client).count()
    }

    /// The name of the client's key at `index` (name order).
    pub fn name_at(&self, client: u16, index: usize) -> Option<&[u8]> {
        self.0.iter().filter(|r| r.client == client).nth(index).map(|r| r.name.as_slice())
    }

    /// Each client with keys: (client, keys, bytes of its values).
    pub fn clients(&self) -> Vec<(u16, usize, usize)> {
        let mut out: Vec<(u16, usize, usize)> = Vec::new();
        for r in &self.0 {
            match out.last_mut() {
                Some(c) if c.0 == r.client => {
                    c.1 += 1;
                    c.2 += r.value.len();
                }
                _ => out.push((r.client, 1, r.value.len())),
            }
        }
        out
    }

    /// The plaintext of an image: per record, client (2 bytes, little
    /// endian), name length (1), value length (2), name, value.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for r in &self.0 {
            b.extend_from_slice(&r.client.to_le_bytes());
            b.push(r.name.len() as u8);
            b.extend_from_slice(&(r.value.len() as u16).to_le_bytes());
            b.extend_from_slice(&r.name);
            b.extend_from_slice(&r.value);
        }
        b
    }

    /// The contents of a plaintext, if it is one `encode` could have made
    /// (every limit held, in order, nothing left over).
    pub fn decode(mut b: &[u8]) -> Option<Records> {
        let mut out: Vec<Record> = Vec::new();
        while !b.is_empty() {
            if b.len() < 5 || out.len() == MAX_RECORDS {
                return None;
            }
            let client = u16::from_le_bytes([b[0], b[1]]);
            let (nl, vl) = (b[2] as usize, u16::from_le_bytes([b[3], b[4]]) as usize);
            if nl == 0 || nl > MAX_NAME || vl > MAX_VALUE || b.len() < 5 + nl + vl {
                return None;
            }
            let r = Record { client, name: b[5..5 + nl].to_vec(), value: b[5 + nl..5 + nl + vl].to_vec() };
            if out.last().is_some_and(|p| (p.client, p.name.as_slice()) >= (r.client, r.name.as_slice())) {
                return None;
            }
            out.push(r);
            b = &b[5 + nl + vl..];
        }
        let s = Records(out);
        s.clients().iter().all(|c| c.1 <= MAX_KEYS).then_some(s)
    }
}

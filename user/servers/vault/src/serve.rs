//! The vault's side of the protocol: the generated [`Handler`] over a
//! [`Vault`] for one request.  A described client (a name-service
//! sender: [`described`]) is answered in its own namespace, the
//! administrator (payload 0) STATS; a request's string longer than the
//! server takes is a PUT's TOO_LARGE and any other request's BAD_REQUEST,
//! before the store sees it.  `main.rs` only moves the strings between
//! IPC and a [`Session`].

use alloc::vec::Vec;

use keep_abi::Msg;
use keep_abi::proto::Answer;

use crate::protocol::*;
use crate::store::{Anchor, Disk, Reply, Vault};

/// The payloads of the clients the vault serves: the name service's
/// senders of described clients, whose place in the description names
/// their namespace.
pub fn described(p: u64) -> bool {
    keep_system::names::client_of(p).is_some()
}

/// One request: the vault, the string that came with it, whether it was
/// longer than the server's buffer (`over`), and the reply's string.
pub struct Session<'a, D: Disk, T: Anchor> {
    pub vault: &'a mut Vault<D, T>,
    pub data: &'a [u8],
    pub over: bool,
    pub text: Vec<u8>,
}

impl<D: Disk, T: Anchor> Session<'_, D, T> {
    fn client(m: &Msg) -> u16 {
        keep_system::names::client_of(m.payload).unwrap_or(0) as u16
    }

    fn answer(&mut self, r: Reply) -> Answer {
        let a = Answer::refuse(r.status).with_results([r.value, 0, 0]);
        self.text = r.text;
        if self.text.is_empty() { a } else { a.with_string() }
    }

    fn request(&mut self, m: &Msg, label: u64, w0: u64) -> Answer {
        if self.over {
            return Answer::refuse(if label == PUT { TOO_LARGE } else { BAD_REQUEST });
        }
        let r = self.vault.request(Self::client(m), label, w0, self.data);
        self.answer(r)
    }
}

impl<D: Disk, T: Anchor> Handler for Session<'_, D, T> {
    fn put(&mut self, m: &Msg, name_len: u64) -> Answer {
        self.request(m, PUT, name_len)
    }
    fn get(&mut self, m: &Msg) -> Answer {
        self.request(m, GET, 0)
    }
    fn delete(&mut self, m: &Msg) -> Answer {
        self.request(m, DELETE, 0)
    }
    fn list(&mut self, m: &Msg, index: u64) -> Answer {
        self.request(m, LIST, index)
    }
    fn stats(&mut self, _: &Msg) -> Answer {
        let (w, text) = self.vault.stats();
        self.text = text.into_bytes();
        Answer::ok(w).with_string()
    }
}

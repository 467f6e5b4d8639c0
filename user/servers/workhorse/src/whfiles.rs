//! Files the workhorse keeps for trusted programs (`abi/services/whfiles.toml`,
//! docs/trusted-core.md "Trusted files"): a described program with
//! `uses=workhorse` reads and writes plain files in its own directory
//! `/data/trusted/<its place in the description>`, through the same file
//! system as the Linux programs.  The workhorse stores bytes and nothing
//! more: the trusted side encrypts, authenticates and checks them, so
//! nothing here needs to be right for the trusted side to be safe.

use alloc::format;
use alloc::vec;
use core::cell::UnsafeCell;

use keep_abi::{Return, Tag};
use keep_system::names;
use keep_workhorse::whfiles_protocol as p;

use crate::linux::errno::{EEXIST, ENOENT};
use crate::vfs::{self, Data, Ino, Node, ROOT};

/// The directory under /data that holds every client's directory.
const TRUSTED: &str = "trusted";
const MAX_IO: usize = 4096;
const MAX_OFFSET: u64 = 1 << 40;

/// The name packed in two words: 1-16 bytes of a-z 0-9 . -, zeros after.
fn name_of(lo: u64, hi: u64) -> Option<alloc::string::String> {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&lo.to_le_bytes());
    b[8..].copy_from_slice(&hi.to_le_bytes());
    let n = b.iter().position(|&c| c == 0).unwrap_or(16);
    let ok = n > 0
        && b[n..].iter().all(|&c| c == 0)
        && b[..n].iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
        && !matches!(&b[..n], b"." | b"..");
    ok.then(|| alloc::string::String::from_utf8_lossy(&b[..n]).into_owned())
}

/// The client's directory (made when `make`), on the store.
fn dir_of(client: u64, make: bool) -> Result<Ino, i64> {
    let f = vfs::fs();
    f.as_server();
    let data = f.lookup(ROOT, vfs::DATA)?;
    if f.get(data).stored.is_none() {
        return Err(crate::linux::errno::EIO); // /data is in memory: nothing would last
    }
    let mut at = data;
    for part in [TRUSTED, &format!("{client}")] {
        at = match f.lookup(at, part) {
            Ok(d) => d,
            Err(ENOENT) if make => match f.mkdir(at, part, 0o700) {
                Ok(d) => d,
                Err(EEXIST) => f.lookup(at, part)?,
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        };
        if !f.is_dir(at) {
            return Err(crate::linux::errno::ENOTDIR);
        }
    }
    Ok(at)
}

fn file(client: u64, name: &str, make: bool) -> Result<Ino, i64> {
    let f = vfs::fs();
    let dir = dir_of(client, make)?;
    match f.lookup(dir, name) {
        Ok(ino) if f.is_dir(ino) => Err(crate::linux::errno::EISDIR),
        Ok(ino) => Ok(ino),
        Err(ENOENT) if make => f.create(dir, name, Node::File(Data::Pages(vec![], 0)), vfs::S_IFREG | 0o600),
        Err(e) => Err(e),
    }
}

/// The bytes of the request being answered: one buffer for all of them,
/// not a new one zeroed for each (the server is single threaded and
/// answers one request at a time).
struct Bytes(UnsafeCell<[u8; MAX_IO]>);
// SAFETY: only `request` touches it, and one request runs at a time.
unsafe impl Sync for Bytes {}
static BYTES: Bytes = Bytes(UnsafeCell::new([0; MAX_IO]));

/// Answers one request of a described client (payload CLIENT | place).
pub fn request(payload: u64, label: u64, w: [u64; 4], has_string: bool, ret: Return) {
    // SAFETY: see Bytes; request does not run again before it returns.
    let data = unsafe { &mut *BYTES.0.get() };
    // The string first: the store's calls to the block server may use the
    // IPC buffer.
    let sent = if has_string { keep_rt::ipc_buffer().read_string(data) } else { 0 };
    let answer = |status: u64, w1: u64| {
        let _ = ret.reply(Tag::new(0), [status, w1, 0, 0]);
    };
    let err = |e: i64| match e {
        ENOENT => (p::NOT_FOUND, 0),
        e => (p::IO_ERROR, e as u64),
    };
    let Some(client) = names::client_of(payload) else { return answer(p::BAD_REQUEST, 0) };
    if label == p::SYNC {
        let (s, e) = match vfs::fs().flush(None) {
            Ok(()) => (p::OK, 0),
            Err(e) => err(e),
        };
        return answer(s, e);
    }
    let Some(name) = name_of(w[0], w[1]) else { return answer(p::BAD_REQUEST, 0) };
    match label {
        p::READ => {
            let (off, len) = (w[2], w[3] as usize);
            if len == 0 || len > MAX_IO || off > MAX_OFFSET {
                return answer(p::BAD_REQUEST, 0);
            }
            // A read is answered from the workhorse's memory (the store's
            // tree and the cached pages; no call to the block server), so
            // the bytes go straight into the reply's string.
            let ipc = keep_rt::ipc_buffer();
            let r = file(client, &name, false).and_then(|ino| vfs::fs().read(ino, off, &mut ipc.string[..len]));
            match r {
                Ok(n) => {
                    ipc.send_len = n as u64;
                    let _ = ret.reply(Tag::new(0).with_string(), [p::OK, n as u64, 0, 0]);
                }
                Err(e) => {
                    let (s, e) = err(e);
                    answer(s, e)
                }
            }
        }
        p::WRITE => {
            if sent == 0 || w[2] > MAX_OFFSET {
                return answer(p::BAD_REQUEST, 0);
            }
            match file(client, &name, true).and_then(|ino| vfs::fs().write(ino, w[2], &data[..sent])) {
                Ok(n) => answer(p::OK, n as u64),
                Err(e) => answer(p::IO_ERROR, e as u64),
            }
        }
        p::SIZE => match file(client, &name, false) {
            Ok(ino) => answer(p::OK, vfs::fs().size(ino)),
            Err(e) => {
                let (s, e) = err(e);
                answer(s, e)
            }
        },
        p::REMOVE => {
            let r = dir_of(client, false).and_then(|d| vfs::fs().unlink(d, &name, false));
            match r {
                Ok(()) => answer(p::OK, 0),
                Err(e) => {
                    let (s, e) = err(e);
                    answer(s, e)
                }
            }
        }
        _ => answer(p::BAD_REQUEST, 0),
    }
}

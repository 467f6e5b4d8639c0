//! The vault server (see `lib.rs` and docs/trusted-core.md, "Secure
//! storage").  It finds the block server by name (its range is the
//! vault's area), holds the TPM's driver in `keep_tpm::TPM_SLOT` (the
//! description's `tpm`), opens the store and then answers: a described
//! client (payload CLIENT | its place in the description) in its own
//! namespace, the administrator (payload 0) STATS, through the generated
//! `dispatch` over a keep_vault::serve::Session.

#![no_std]
#![no_main]

extern crate alloc;

use keep_abi::{Return, SELF_ASPACE, Sender, Tag, recv, rights, slot};
use keep_blk::{Client, Error as BlkError};
use keep_rt::println;
use keep_system::names;
use keep_tpm::Failure;
use keep_vault::store::{BLOCK, Disk, IoError, Page, Refusal, State, Vault};
use keep_vault::*;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const BLK: u64 = 0x20;
const PER: u64 = (BLOCK / keep_blk::SECTOR) as u64;

/// The area through the block server, looked up again when a call fails
/// (the server was restarted) and retried once.
struct Area {
    client: Option<Client>,
    blocks: u64,
}

impl Area {
    fn connect(&mut self) -> Option<Client> {
        if self.client.is_none() {
            let _ = SELF_ASPACE.delete_cap(BLK);
            for _ in 0..6 {
                match names::lookup_patiently("blk", BLK, keep_rt::ipc_buffer()) {
                    Ok(s) => {
                        self.client = Some(Client(s));
                        break;
                    }
                    Err(names::status::NOT_RUNNING) => continue,
                    Err(e) => {
                        println!("vault: no block server by name ({})", names::status::name(e));
                        break;
                    }
                }
            }
        }
        self.client
    }

    fn io(&mut self, mut f: impl FnMut(Client) -> Result<(), BlkError>) -> Result<(), IoError> {
        for _ in 0..2 {
            let Some(c) = self.connect() else { return Err(IoError(u64::MAX)) };
            match f(c) {
                Ok(()) => return Ok(()),
                Err(BlkError::Call(e)) => {
                    println!("vault: the block server: {e}; asking for it again");
                    self.client = None;
                }
                Err(BlkError::Status(s)) => return Err(IoError(s)),
            }
        }
        Err(IoError(u64::MAX))
    }
}

impl Disk for Area {
    fn blocks(&self) -> u64 {
        self.blocks
    }
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError> {
        self.io(|c| c.read(block * PER, &mut buf[..]))
    }
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError> {
        self.io(|c| c.write(block * PER, &buf[..]))
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.io(|c| c.flush())
    }
}

/// The TPM's driver through the description's `tpm` capability.
struct Tpm;

fn refusal(f: Failure) -> Refusal {
    match f {
        Failure::Status(keep_tpm::PCR_CHANGED, _) => Refusal::BootChanged,
        Failure::Status(keep_tpm::BAD_BLOB, _) => Refusal::Foreign,
        Failure::Status(keep_tpm::NO_TPM, _) => Refusal::NoTpm,
        // No capability in the slot: no `tpm` in the description's line.
        Failure::Call(_) => Refusal::NoTpm,
        f => Refusal::Failed(alloc::format!("{f}")),
    }
}

fn tpm() -> keep_tpm::Client<'static> {
    keep_tpm::Client(Sender(keep_tpm::TPM_SLOT), keep_rt::ipc_buffer())
}

impl store::Anchor for Tpm {
    fn random(&mut self, out: &mut [u8]) -> Result<(), Refusal> {
        match tpm().random(out).map_err(refusal)? {
            n if n == out.len() => Ok(()),
            n => Err(Refusal::Failed(alloc::format!("RANDOM gave {n} bytes"))),
        }
    }
    fn seal(&mut self, secret: &[u8]) -> Result<alloc::vec::Vec<u8>, Refusal> {
        let mut blob = alloc::vec![0u8; store::MAX_BLOB];
        let n = tpm().seal(secret, &mut blob).map_err(refusal)?;
        blob.truncate(n);
        Ok(blob)
    }
    fn unseal(&mut self, blob: &[u8]) -> Result<alloc::vec::Vec<u8>, Refusal> {
        let mut out = alloc::vec![0u8; 128];
        let n = tpm().unseal(blob, &mut out).map_err(refusal)?;
        out.truncate(n);
        Ok(out)
    }
    fn counter(&mut self) -> Result<u64, Refusal> {
        tpm().counter_of(keep_tpm::VAULT_COUNTER, false).map_err(refusal)
    }
    fn increment(&mut self) -> Result<u64, Refusal> {
        tpm().counter_of(keep_tpm::VAULT_COUNTER, true).map_err(refusal)
    }
}

fn receive() -> keep_abi::Msg {
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    recv(Tag::new(0).with_slots(1), 0)
}

fn main(_: u64, _: u64) -> i32 {
    let mut area = Area { client: None, blocks: 0 };
    let Some(c) = area.connect() else { return 2 };
    match c.info() {
        Ok((sectors, r)) if r & rights::WRITE != 0 && r & rights::READ != 0 => area.blocks = sectors / PER,
        Ok(_) => {
            println!("vault: the block server gives this program no read-write range");
            return 2;
        }
        Err(e) => {
            println!("vault: INFO: {e}");
            return 2;
        }
    }
    let mut v = Vault::open(area, Tpm);
    match &v.state {
        State::Open => println!(
            "vault: open: {} of {}, counter {} ({})",
            store::count(v.records.0.len(), "key"),
            store::count(v.records.clients().len(), "client"),
            v.counter,
            v.note
        ),
        s => println!("vault: {}: {}; every request is refused", s.word(), s.why()),
    }
    let mut data = [0u8; 1024];
    let mut m = receive();
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = receive();
            continue;
        }
        let buf = keep_rt::ipc_buffer();
        let (len, over) = if m.tag.has_string() { (buf.read_string(&mut data), buf.received_len() > data.len()) } else { (0, false) };
        let mut s = serve::Session { vault: &mut v, data: &data[..len], over, text: alloc::vec::Vec::new() };
        let a = dispatch(&mut s, &m);
        if a.string {
            keep_rt::ipc_buffer().set_string(&s.text);
        }
        let _ = Return(RET).reply(a.tag(), a.words());
        m = receive();
    }
}

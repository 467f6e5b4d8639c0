//! The block server's client range as the store's disk (docs/workhorse.md,
//! "The file system on the disk"): the server finds `blk` through the name
//! service, which gives it the range and rights of its description's grant
//! (`blk=FIRST+SECTORS:rw`).  Requests are message strings of at most
//! `keep_blk::MAX_SECTORS` sectors; each returns once the device
//! acknowledged it.

use alloc::format;
use alloc::string::String;

use keep_abi::{SELF_ASPACE, rights};
use keep_blk::{Client, MAX_SECTORS, SECTOR};
use keep_system::names::{self, NAMES_SLOT};
use keep_workhorse::store::{Disk, IoError};

pub struct BlkDisk {
    /// The slot of the block server's sender.
    slot: u64,
    client: Client,
    sectors: u64,
    /// Requests that failed because the server was gone and succeeded on
    /// a new sender (the block server restarted).
    pub reconnects: u64,
}

impl BlkDisk {
    /// The block client of the description's grant; Err says why there is
    /// none.
    pub fn open() -> Result<BlkDisk, String> {
        if !names::present(NAMES_SLOT) {
            return Err(String::from("no name service (not started from the system description)"));
        }
        let slot = crate::env::env().slot().map_err(|e| format!("no slot: {e}"))?;
        let client = Self::lookup(slot)?;
        let (sectors, r) = client.info().map_err(|e| format!("INFO: {e}"))?;
        if r & (rights::READ | rights::WRITE) != rights::READ | rights::WRITE {
            return Err(String::from("the grant is not read-write"));
        }
        Ok(BlkDisk { slot, client, sectors, reconnects: 0 })
    }

    fn lookup(slot: u64) -> Result<Client, String> {
        let _ = SELF_ASPACE.delete_cap(slot);
        names::lookup_at(NAMES_SLOT, "blk", slot, keep_rt::ipc_buffer())
            .map(Client)
            .map_err(|e| format!("no block server by name ({})", names::status::name(e)))
    }

    /// Runs `op` on the client; if the call itself failed (the server was
    /// restarted: its sender is stale), once more on a new sender.  A
    /// request the server refused is an error at once.  Rewriting or
    /// rereading the same sectors is harmless, so a retry is safe.
    fn retry(&mut self, mut op: impl FnMut(Client) -> Result<(), keep_blk::Error>) -> Result<(), IoError> {
        match op(self.client) {
            Ok(()) => Ok(()),
            Err(keep_blk::Error::Call(_)) => {
                self.client = Self::lookup(self.slot).map_err(|_| IoError)?;
                self.reconnects += 1;
                op(self.client).map_err(|_| IoError)
            }
            Err(_) => Err(IoError),
        }
    }
}

impl Disk for BlkDisk {
    fn sectors(&self) -> u64 {
        self.sectors
    }

    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<(), IoError> {
        for (k, chunk) in buf.chunks_mut(MAX_SECTORS as usize * SECTOR).enumerate() {
            let at = sector + k as u64 * MAX_SECTORS;
            self.retry(|c| c.read(at, chunk))?;
        }
        Ok(())
    }

    fn write(&mut self, sector: u64, data: &[u8]) -> Result<(), IoError> {
        for (k, chunk) in data.chunks(MAX_SECTORS as usize * SECTOR).enumerate() {
            let at = sector + k as u64 * MAX_SECTORS;
            self.retry(|c| c.write(at, chunk))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.retry(|c| c.flush())
    }
}

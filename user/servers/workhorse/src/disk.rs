//! The block server's client range as the store's disk (docs/workhorse.md,
//! "The file system on the disk"): the server finds `blk` through the name
//! service, which gives it the range and rights of its description's grant
//! (`blk=FIRST+SECTORS:rw`).
//!
//! Bulk data goes through a dataspace (docs/dataspaces.md), as for every
//! client of the block server (its DMA is confined to pinned pages): 128 KiB of the workhorse's own
//! bank (`uses=dataspace`), mapped in its space and shared read-write with
//! the block server, which pins it in its DMA domain; each `READ_DS` or
//! `WRITE_DS` moves up to `MAX_DS_SECTORS` sectors between the disk and
//! those pages, and the store's bytes are copied once between its buffer
//! and the pages.  Without a dataspace manager (a description that does not
//! grant one) the requests are message strings of `MAX_SECTORS` sectors,
//! said once on the console.  Each request returns once the device
//! acknowledged it.

use alloc::format;
use alloc::string::String;

use keep_abi::{SELF_ASPACE, Sender, rights};
use keep_blk::{Client, MAX_DS_SECTORS, MAX_SECTORS, SECTOR};
use keep_dataspace::{BANK_SLOT, Bank, Dataspace, Manager, Owned};
use keep_system::names::{self, NAMES_SLOT};
use keep_workhorse::store::{Disk, IoError};

/// Where the dataspace is mapped in the server's own space (clear of the
/// frames it maps for Linux processes from 0x2000_0000_0000 and of its heap
/// at 0x3000_0000_0000).
const DS_VA: u64 = 0x0000_2800_0000_0000;
/// One `READ_DS`/`WRITE_DS` at most.
const DS_BYTES: usize = MAX_DS_SECTORS as usize * SECTOR;
const DS_PAGES: u64 = (DS_BYTES / 4096) as u64;

/// The dataspace: its owner's capability and the sub-bank that pays for it
/// (keep_dataspace::Owned), the share the block server is given (kept to
/// attach it again after a restart of the server), the buffer number it
/// answered, and the slot of the manager's sender.
struct Buffer {
    owned: Owned,
    share: u64,
    number: u64,
    manager: u64,
}

pub struct BlkDisk {
    /// The slot of the block server's sender.
    slot: u64,
    client: Client,
    sectors: u64,
    buffer: Option<Buffer>,
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
        let buffer = match Self::dataspace(client) {
            Ok(b) => Some(b),
            Err(e) => {
                keep_rt::println!("workhorse: /data requests go as message strings: {e}");
                None
            }
        };
        Ok(BlkDisk { slot, client, sectors, buffer, reconnects: 0 })
    }

    fn lookup(slot: u64) -> Result<Client, String> {
        let _ = SELF_ASPACE.delete_cap(slot);
        names::lookup_at(NAMES_SLOT, "blk", slot, keep_rt::ipc_buffer())
            .map(Client)
            .map_err(|e| format!("no block server by name ({})", names::status::name(e)))
    }

    /// Creates the dataspace (paid by a sub-bank of the server's bank),
    /// maps it, shares it and attaches the share to `client`.
    fn dataspace(client: Client) -> Result<Buffer, String> {
        let slot = || crate::env::env().slot().map_err(|e| format!("no slot: {e}"));
        let (manager, sub, own, share) = (slot()?, slot()?, slot()?, slot()?);
        names::lookup_at(NAMES_SLOT, "dataspace", manager, keep_rt::ipc_buffer())
            .map_err(|e| format!("no dataspace manager by name ({})", names::status::name(e)))?;
        let mut b = Buffer { owned: Owned { ds: Dataspace(Sender(own)), bank: Bank(sub) }, share, number: 0, manager };
        b.make(client)?;
        Ok(b)
    }

    /// Attaches the share again to a new instance of the block server.  If
    /// it is refused as no dataspace (keep_blk::Error::share_gone: the
    /// dataspace manager was restarted since it was made, so the share
    /// names nothing the server's manager knows), the old dataspace's frames go back
    /// (its sub-bank destroyed: out of every mapping) and a new one from
    /// the new manager takes its place at DS_VA (docs/dataspaces.md, "When
    /// the manager is restarted").  The store copies its bytes through the
    /// pages for each request, so nothing is lost with the old ones.
    fn reattach(b: &mut Buffer, client: Client) -> Result<(), IoError> {
        match client.attach(b.share) {
            Ok((n, _, _)) => {
                b.number = n;
                Ok(())
            }
            Err(e) if e.share_gone() => {
                keep_rt::println!("workhorse: /data: the dataspace manager was restarted; a new dataspace for the disk");
                b.owned.destroy();
                let _ = SELF_ASPACE.delete_cap(b.share);
                b.make(client).map_err(|e| {
                    keep_rt::println!("workhorse: /data: no new dataspace: {e}");
                    IoError
                })
            }
            Err(_) => Err(IoError),
        }
    }

    /// The mapped dataspace's first `len` bytes.    /// The mapped dataspace's first `len` bytes.
    fn pages(len: usize) -> &'static mut [u8] {
        debug_assert!(len <= DS_BYTES);
        // SAFETY: DS_PAGES pages are mapped read-write at DS_VA for the
        // server's life (its own bank pays), nothing else uses that range,
        // and the server is single threaded, so no other reference exists.
        unsafe { core::slice::from_raw_parts_mut(DS_VA as *mut u8, len) }
    }

    /// Runs `op` on the client (and the buffer number); if the call itself
    /// failed (the server was restarted: its sender is stale), once more on
    /// a new sender, with the dataspace attached again.  A request the
    /// server refused is an error at once.  Rewriting or rereading the same
    /// sectors is harmless, so a retry is safe.
    fn retry(&mut self, mut op: impl FnMut(Client, u64) -> Result<(), keep_blk::Error>) -> Result<(), IoError> {
        let number = self.buffer.as_ref().map_or(0, |b| b.number);
        match op(self.client, number) {
            Ok(()) => Ok(()),
            Err(keep_blk::Error::Call(_)) => {
                self.client = Self::lookup(self.slot).map_err(|_| IoError)?;
                if let Some(b) = &mut self.buffer {
                    Self::reattach(b, self.client)?;
                }
                self.reconnects += 1;
                op(self.client, self.buffer.as_ref().map_or(0, |b| b.number)).map_err(|_| IoError)
            }
            Err(_) => Err(IoError),
        }
    }
}

impl Buffer {
    /// A new dataspace (in the slots this Buffer names, empty), mapped at
    /// DS_VA, shared and attached to `client`; the manager looked up again
    /// and the CREATE made once more if it was restarted.
    fn make(&mut self, client: Client) -> Result<(), String> {
        let (sub, own) = (self.owned.bank.0, self.owned.ds.0.0);
        self.owned = Manager(Sender(self.manager))
            .create_owned(DS_PAGES, BANK_SLOT, sub, own, keep_dataspace::find_by_name)
            .map_err(|e| format!("CREATE: {e}"))?;
        let ds = self.owned.ds;
        ds.map(keep_abi::slot::SELF_ASPACE, DS_VA, 0, DS_PAGES, rights::READ | rights::WRITE).map_err(|e| format!("MAP: {e}"))?;
        ds.share(rights::READ | rights::WRITE, self.share).map_err(|e| format!("SHARE: {e}"))?;
        self.number = client.attach(self.share).map_err(|e| format!("ATTACH: {e}"))?.0;
        Ok(())
    }
}

impl Disk for BlkDisk {
    fn sectors(&self) -> u64 {
        self.sectors
    }

    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<(), IoError> {
        if self.buffer.is_none() {
            for (k, chunk) in buf.chunks_mut(MAX_SECTORS as usize * SECTOR).enumerate() {
                let at = sector + k as u64 * MAX_SECTORS;
                self.retry(|c, _| c.read(at, chunk))?;
            }
            return Ok(());
        }
        for (k, chunk) in buf.chunks_mut(DS_BYTES).enumerate() {
            let at = sector + k as u64 * MAX_DS_SECTORS;
            let count = (chunk.len() / SECTOR) as u64;
            self.retry(|c, b| c.read_ds(b, 0, at, count))?;
            chunk.copy_from_slice(Self::pages(chunk.len()));
        }
        Ok(())
    }

    fn write(&mut self, sector: u64, data: &[u8]) -> Result<(), IoError> {
        if self.buffer.is_none() {
            for (k, chunk) in data.chunks(MAX_SECTORS as usize * SECTOR).enumerate() {
                let at = sector + k as u64 * MAX_SECTORS;
                self.retry(|c, _| c.write(at, chunk))?;
            }
            return Ok(());
        }
        for (k, chunk) in data.chunks(DS_BYTES).enumerate() {
            let at = sector + k as u64 * MAX_DS_SECTORS;
            let count = (chunk.len() / SECTOR) as u64;
            Self::pages(chunk.len()).copy_from_slice(chunk);
            self.retry(|c, b| c.write_ds(b, 0, at, count))?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.retry(|c, _| c.flush())
    }
}

//! The dataspace manager the I/O benchmarks start, with its banks: a bank
//! server started for the benchmarks, a bank of the manager's own and one
//! that pays for the benchmark clients' dataspaces (docs/dataspaces.md,
//! "Who pays").  blk.rs and net.rs share it.

use alloc::format;

use keep_abi::{SELF_ASPACE, Sender, slot};
use keep_dataspace::BANK_SLOT;
use keep_loader::{Child, Grant};
use keep_spacebank::Bank;

use super::BenchResult;
use crate::Root;

/// The manager's bank limit, and the clients'.
const OWN_LIMIT: u64 = 100;
const CLIENTS_LIMIT: u64 = 2000;

pub(crate) struct Dsm {
    banks: keep_spacebank::Server,
    own: Bank,
    clients: Bank,
    /// The manager's process and a sender to it.
    pub(crate) child: (Child, u64),
}

impl Dsm {
    /// Starts the bank server, the two banks and the manager; `start`
    /// loads and starts "dataspace" with the grants it is given (the
    /// console, the manager's bank).
    pub(crate) fn start(root: &mut Root, start: impl FnOnce(&mut Root, &[Grant]) -> BenchResult<(Child, u64)>) -> BenchResult<Dsm> {
        let elf = root.image.as_ref().and_then(|i| i.find("spacebank")).ok_or("no 'spacebank' in the boot image")?.data;
        let banks = keep_spacebank::Server::spawn(&mut root.slots, elf, slot::MEMORY, 4000).map_err(|e| format!("spacebank: {e}"))?;
        let made = (|| {
            let (o, c) = (root.slots.alloc()?, root.slots.alloc()?);
            Some((banks.prime.create_bank(OWN_LIMIT, o).ok()?, banks.prime.create_bank(CLIENTS_LIMIT, c).ok()?))
        })();
        let Some((own, clients)) = made else {
            let _ = banks.stop(&mut root.slots);
            return Err("cannot make the dataspace banks".into());
        };
        match start(root, &[Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 }, Grant { src: own.0, dest: BANK_SLOT, rights: 0 }]) {
            Ok(child) => Ok(Dsm { banks, own, clients, child }),
            Err(e) => {
                Dsm::free(root, banks, own, clients);
                Err(e)
            }
        }
    }

    /// The manager's capability.
    pub(crate) fn cap(&self) -> u64 {
        self.child.1
    }

    /// The bank that pays for the clients' dataspaces (a client gets it in
    /// its BANK_SLOT).
    pub(crate) fn clients(&self) -> u64 {
        self.clients.0
    }

    /// Asks the manager to quit, lets `stop` destroy it, then the banks.
    pub(crate) fn stop(self, root: &mut Root, stop: impl FnOnce(&mut Root, (Child, u64))) {
        let _ = keep_dataspace::Manager(Sender(self.child.1)).quit();
        let _ = self.child.0.process.wait();
        stop(root, self.child);
        Dsm::free(root, self.banks, self.own, self.clients);
    }

    fn free(root: &mut Root, banks: keep_spacebank::Server, own: Bank, clients: Bank) {
        for x in [own, clients] {
            let _ = x.destroy();
            let _ = SELF_ASPACE.delete_cap(x.0);
            root.slots.free(x.0);
        }
        let _ = banks.stop(&mut root.slots);
    }
}

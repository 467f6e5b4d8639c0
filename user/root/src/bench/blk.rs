//! The block benchmarks (docs/performance.md, "I/O paths"): the PCI server,
//! the dataspace manager and the block server started as ktest starts
//! them, one client with the first 64 MiB of the disk, and `blkbench`
//! (user/bench/blkbench) as that client in a process of its own, its
//! data in a dataspace it attaches to the server; then, the block server gone,
//! `blkbench` owning the driver itself.  The regions and their lines are
//! blkbench's.  The dataspace manager runs on a bank of its own and
//! blkbench pays for its dataspace with another, both from a bank server
//! started for the benchmarks (docs/dataspaces.md, "Who pays").

use alloc::format;

use keep_abi::{SELF_ASPACE, Sender, rights, slot, state};
use keep_blk::Admin;
use keep_dataspace::{BANK_SLOT, DS_SLOT};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_pci::{PCI_SLOT, Pci};

use super::{BenchResult, Suite};
use crate::Root;

/// Runs of each benchmark (64 MiB each).
const RUNS: u64 = 3;
/// blkbench's CLIENT_SLOT.
const CLIENT_SLOT: u64 = 0xd;
const SECTORS: u64 = (64 << 20) / 512;

fn grant(s: u64) -> Grant {
    Grant { src: s, dest: s, rights: 0 }
}

fn start(root: &mut Root, name: &str, arg0: u64, arg1: u64, grants: &[Grant]) -> BenchResult<(Child, u64)> {
    let img = root.image.as_ref().ok_or("no boot image")?;
    let elf = img.find(name).ok_or_else(|| format!("no '{name}' in the boot image"))?.data;
    let spec = Spec { name, elf, arg0, arg1, grants, blob: None };
    let child = Loader::new(&mut root.slots).load(&spec).map_err(|e| format!("load {name}: {e:?}"))?;
    let cap = root.slots.alloc().ok_or("no slots")?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).map_err(|e| format!("MINT: {e}"))?;
    child.process.start().map_err(|e| format!("START {name}: {e}"))?;
    Ok((child, cap))
}

fn stop(root: &mut Root, (child, cap): (Child, u64)) {
    let _ = SELF_ASPACE.delete_cap(cap);
    root.slots.free(cap);
    let _ = Loader::new(&mut root.slots).destroy(child);
}

/// Runs blkbench `mode` to its end.
fn blkbench(root: &mut Root, mode: u64, grants: &[Grant]) -> BenchResult {
    let b = start(root, "blkbench", mode, RUNS, grants)?;
    let st = b.0.process.wait();
    stop(root, b);
    match st {
        Ok(st) if st.state == state::EXITED && st.code == 0 => Ok(()),
        Ok(st) => Err(format!("blkbench {mode} ended with state {} code {}", st.state, st.code)),
        Err(e) => Err(format!("WAIT: {e}")),
    }
}

/// Starts the block server, gives it a client of the first 64 MiB and runs
/// blkbench in each of `modes` (mode, name) that the suite wants, as that
/// client; then stops the server.
fn served(root: &mut Root, s: &Suite, pci: Grant, ds: [Grant; 2], modes: &[(u64, &str)]) -> BenchResult {
    if !modes.iter().any(|(_, n)| s.wants(n)) {
        return Ok(());
    }
    let base = [grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::TIMER)];
    let blk = start(root, "blk", 0, 0, &[base[0], base[1], base[2], grant(slot::MEMORY), pci, ds[0]])?;
    let admin = Admin(Sender(blk.1));
    let r = (|| {
        let c = root.slots.alloc().ok_or("no slots")?;
        let r = admin
            .add_client(0, SECTORS, rights::READ | rights::WRITE, c)
            .map_err(|e| format!("ADD_CLIENT of 64 MiB (is build/disk.img smaller?): {e}"))
            .and_then(|_| {
                let client = Grant { src: c, dest: CLIENT_SLOT, rights: 0 };
                modes.iter().filter(|(_, n)| s.wants(n)).try_for_each(|&(mode, _)| blkbench(root, mode, &[base[0], base[1], client, ds[0], ds[1]]))
            });
        let _ = SELF_ASPACE.delete_cap(c);
        root.slots.free(c);
        r
    })();
    let _ = admin.quit();
    let _ = blk.0.process.wait();
    stop(root, blk);
    r
}

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
    let base = [grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::TIMER)];
    let pci = start(root, "pci", 0, 0, &[base[0], base[1], base[2], grant(slot::DEVMEM), grant(slot::INTERRUPT)])?;
    let pci_grant = Grant { src: pci.1, dest: PCI_SLOT, rights: 0 };
    let dsm = match super::dsm::Dsm::start(root, |root, g| start(root, "dataspace", 0, 0, g)) {
        Ok(d) => d,
        Err(e) => {
            let _ = Pci(Sender(pci.1)).quit();
            stop(root, pci);
            return Err(e);
        }
    };
    let ds = [Grant { src: dsm.cap(), dest: DS_SLOT, rights: 0 }, Grant { src: dsm.clients(), dest: BANK_SLOT, rights: 0 }];
    // The reads first, then the direct reads, which check the image's
    // pattern as well, then the writes, which overwrite it.
    let reads = [(0, "blk.read.seq64k"), (7, "blk.read.seq64k.batch"), (5, "blk.read.seq64k.single"), (1, "blk.read.seq4k"), (4, "blk.read.seq64k.strings")];
    let r = served(root, s, pci_grant, ds, &reads)
        .and_then(|_| {
            [(3, "blk.read.seq64k.direct"), (6, "blk.read.seq64k.direct.single")].iter().filter(|(_, n)| s.wants(n)).try_for_each(
                |&(mode, _)| blkbench(root, mode, &[base[0], base[1], base[2], grant(slot::MEMORY), pci_grant]),
            )
        })
        .and_then(|_| served(root, s, pci_grant, ds, &[(2, "blk.write.seq64k")]));
    dsm.stop(root, stop);
    let _ = Pci(Sender(pci.1)).quit();
    let _ = pci.0.process.wait();
    stop(root, pci);
    r
}

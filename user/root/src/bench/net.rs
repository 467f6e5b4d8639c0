//! The network server (docs/network.md, "The network"): what one frame
//! costs between two stacks that the server switches directly (a SEND
//! from one, the RECV of the other: two calls, the frame copied through
//! two message strings and the server's queue).  No device I/O is in the
//! path, so instructions under `-icount` count it exactly.

use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, DmaDomain, SELF_ASPACE, Sender, rights, slot};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_dataspace::DS_SLOT;
use keep_net::{Admin, Stack, ipv4, mac_bytes};
use keep_pci::{PCI_SLOT, Pci};

use super::{BenchResult, Suite};
use crate::Root;

const A: u64 = ipv4(10, 0, 2, 30);
const B: u64 = ipv4(10, 0, 2, 31);

fn start(root: &mut Root, name: &str, grants: &[Grant]) -> BenchResult<(Child, u64)> {
    let img = root.image.as_ref().ok_or("no boot image")?;
    let elf = img.find(name).ok_or("program missing from the boot image")?.data;
    let spec = Spec { name, elf, arg0: 0, arg1: 0, grants, blob: None };
    let child = Loader::new(&mut root.slots).load(&spec).map_err(|e| alloc::format!("load {name}: {e:?}"))?;
    let cap = root.slots.alloc().ok_or("no slots")?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).map_err(|e| alloc::format!("MINT: {e}"))?;
    child.process.start().map_err(|e| alloc::format!("START: {e}"))?;
    Ok((child, cap))
}

fn stop(root: &mut Root, (child, cap): (Child, u64)) {
    let _ = child.process.wait();
    let _ = SELF_ASPACE.delete_cap(cap);
    root.slots.free(cap);
    let _ = Loader::new(&mut root.slots).destroy(child);
}

fn iommu(root: &mut Root) -> BenchResult<bool> {
    let d = root.slots.alloc().ok_or("no slots")?;
    let on = ACCOUNT.create_dma_domain(d).is_ok() && DmaDomain(d).info().is_ok_and(|i| i.remapping);
    let _ = ACCOUNT.destroy(d);
    let _ = SELF_ASPACE.delete_cap(d);
    root.slots.free(d);
    Ok(on)
}

fn switch(root: &mut Root, s: &mut Suite) -> BenchResult {
    if !iommu(root)? {
        return Err("no IOMMU: the network server does not run".into());
    }
    let g = |x: u64| Grant { src: x, dest: x, rights: 0 };
    let pci = start(root, "pci", &[g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::DEVMEM), g(slot::TIMER)])?;
    let net = start(
        root, "net",
        &[g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::MEMORY), g(slot::TIMER), Grant { src: pci.1, dest: PCI_SLOT, rights: 0 }],
    );
    let r = match &net {
        Ok((_, cap)) => run(root, s, Admin(Sender(*cap))),
        Err(e) => Err(e.clone()),
    };
    if let Ok(n) = net {
        let _ = Admin(Sender(n.1)).quit();
        stop(root, n);
    }
    let _ = Pci(Sender(pci.1)).quit();
    stop(root, pci);
    r
}

fn run(root: &mut Root, s: &mut Suite, admin: Admin) -> BenchResult {
    let (Some(a), Some(b)) = (root.slots.alloc(), root.slots.alloc()) else {
        return Err("no slots".into());
    };
    let r = (|| {
        admin.add_stack(A, a).map_err(|e| alloc::format!("ADD_STACK: {e}"))?;
        admin.add_stack(B, b).map_err(|e| alloc::format!("ADD_STACK: {e}"))?;
        let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
        let mac = mac_bytes(sa.info().map_err(|e| alloc::format!("INFO: {e}"))?.0);
        // A minimal IPv4 frame from A to B (the server reads the addresses only).
        let mut frame: Vec<u8> = Vec::new();
        frame.extend_from_slice(&mac);
        frame.extend_from_slice(&mac);
        frame.extend_from_slice(&[8, 0, 0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0]);
        frame.extend_from_slice(&(A as u32).to_be_bytes());
        frame.extend_from_slice(&(B as u32).to_be_bytes());
        frame.resize(60, 0);
        let mut buf = vec![0u8; 2048];
        s.bench("net.switch", 100, || {
            let _ = sa.send(&frame);
            sb.recv(&mut buf)
        });
        Ok(())
    })();
    for x in [a, b] {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    r
}

pub fn run_all(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[("net.switch", switch)]);
}

/// The network benchmarks with the host (`net.tcp.*`, `net.udp.*`; docs/
/// performance.md, "I/O paths"), in the I/O boot only: the PCI server,
/// the network server and a `netstack` at 10.0.2.15 (where QEMU's
/// `hostfwd` forwards to) whose benchmark services (netstack's bench.rs)
/// talk to tools/netpeer.py on the host and report the regions.  The
/// stack exits when its benchmarks are over.
pub fn host(root: &mut Root, s: &mut Suite) -> BenchResult {
    // netstack's services bits (user/servers/netstack/src/bench.rs).
    let services = [("net.tcp.recv", 1 << 4), ("net.tcp.send", 1 << 5), ("net.udp.roundtrip", 1 << 6)]
        .iter()
        .filter(|(n, _)| s.wants(n))
        .fold(0u64, |a, (_, b)| a | b);
    if services == 0 {
        return Ok(());
    }
    if !iommu(root)? {
        return Err("no IOMMU: the network server does not run".into());
    }
    let g = |x: u64| Grant { src: x, dest: x, rights: 0 };
    let pci = start(root, "pci", &[g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::DEVMEM), g(slot::TIMER), g(slot::INTERRUPT)])?;
    // The dataspace manager: the stack's ring is a dataspace of its, paid
    // by the clients' bank.
    let ds = super::dsm::Dsm::start(root, |root, g| start(root, "dataspace", g));
    let r = match &ds {
        Ok(dsm) => {
            let net = start(
                root, "net",
                &[g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::MEMORY), g(slot::TIMER), Grant { src: pci.1, dest: PCI_SLOT, rights: 0 },
                  Grant { src: dsm.cap(), dest: DS_SLOT, rights: 0 }],
            );
            let r = match &net {
                Ok((_, cap)) => stack(root, Admin(Sender(*cap)), dsm.cap(), dsm.clients(), services),
                Err(e) => Err(e.clone()),
            };
            if let Ok(n) = net {
                let _ = Admin(Sender(n.1)).quit();
                stop(root, n);
            }
            r
        }
        Err(e) => Err(e.clone()),
    };
    if let Ok(d) = ds {
        d.stop(root, stop);
    }
    let _ = Pci(Sender(pci.1)).quit();
    stop(root, pci);
    r
}

fn stack(root: &mut Root, admin: Admin, dsm: u64, bank: u64, services: u64) -> BenchResult {
    let ip = ipv4(10, 0, 2, 15);
    let c = root.slots.alloc().ok_or("no slots")?;
    let r = (|| {
        admin.add_stack(ip, c).map_err(|e| alloc::format!("ADD_STACK: {e}"))?;
        let img = root.image.as_ref().ok_or("no boot image")?;
        let elf = img.find("netstack").ok_or("no netstack in the boot image")?.data;
        let g = |x: u64| Grant { src: x, dest: x, rights: 0 };
        let grants = [g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::TIMER), Grant { src: c, dest: keep_net::NET_SLOT, rights: 0 },
                      Grant { src: dsm, dest: DS_SLOT, rights: 0 }, Grant { src: bank, dest: keep_dataspace::BANK_SLOT, rights: 0 }];
        let spec = Spec { name: "netstack", elf, arg0: ip, arg1: services, grants: &grants, blob: None };
        let child = Loader::new(&mut root.slots).load(&spec).map_err(|e| alloc::format!("load netstack: {e:?}"))?;
        child.process.start().map_err(|e| alloc::format!("START netstack: {e}"))?;
        let st = child.process.wait();
        let _ = Loader::new(&mut root.slots).destroy(child);
        match st {
            Ok(st) if st.state == keep_abi::state::EXITED && st.code == 0 => Ok(()),
            Ok(st) => Err(alloc::format!("netstack ended with state {} code {} (see its lines)", st.state, st.code)),
            Err(e) => Err(alloc::format!("WAIT netstack: {e}")),
        }
    })();
    let _ = SELF_ASPACE.delete_cap(c);
    root.slots.free(c);
    r
}

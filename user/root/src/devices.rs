//! The shell's `devices`: whether the IOMMU confines DMA, and the PCI
//! functions as the PCI server lists them (docs/devices.md): the
//! boot-time server of the system description when it runs (the root task
//! asks init for its administrator's capability), else one started for
//! the listing, which quits after it.  And `disk`: the boot-time block
//! server's clients, ranges and statistics.

use keep_abi::{ACCOUNT, DmaDomain, SELF_ASPACE, Sender, rights, slot};
use keep_loader::{Grant, Loader, Spec};
use keep_pci::Pci;
use keep_rt::println;

use crate::Root;

fn name(vendor: u16, device: u16) -> &'static str {
    match (vendor, device) {
        (0x8086, 0x29c0) => "q35 host bridge",
        (0x1234, 0x1111) => "VGA (QEMU standard)",
        (0x8086, 0x2918) => "ICH9 LPC bridge",
        (0x8086, 0x2922) => "ICH9 SATA (AHCI)",
        (0x8086, 0x2930) => "ICH9 SMBus",
        (0x1af4, 0x1042) => "virtio block",
        (0x1af4, 0x1041) => "virtio network",
        _ => "",
    }
}

fn iommu(root: &mut Root) {
    let Some(d) = root.slots.alloc() else { return };
    match ACCOUNT.create_dma_domain(d).and_then(|_| DmaDomain(d).info()) {
        Ok(i) if i.remapping => println!("IOMMU: DMA remapping on, {}-bit device addresses", i.address_bits),
        Ok(_) => println!("IOMMU: none: the PCI server mediates virtio DMA (descriptors checked against the driver's pins); other functions may not master the bus"),
        Err(e) => println!("devices: cannot make a DMA domain: {e}"),
    }
    let _ = ACCOUNT.destroy(d);
    let _ = SELF_ASPACE.delete_cap(d);
    root.slots.free(d);
}

fn list(pci: Pci) {
    let mut i = 0;
    while let Ok((f, next)) = pci.list(i) {
        println!(
            "  {}  {:04x}:{:04x}  class {:06x}  {}",
            keep_pci::sid_string(f.sid),
            f.vendor,
            f.device,
            f.class,
            name(f.vendor, f.device)
        );
        i = next;
    }
}

/// A sender with payload 0 to the running server of the description that
/// runs `program`, at a new slot; None when there is none.
fn boot_time(root: &mut Root, program: &str) -> Option<(usize, u64)> {
    let sys = root.system.as_ref()?;
    let i = sys.server_running(program)?;
    let s = root.slots.alloc()?;
    match sys.admin(i, s) {
        Ok(_) => Some((i, s)),
        Err(e) => {
            println!("{program}: the description's server '{}': {e}", sys.entries[i].name);
            root.slots.free(s);
            None
        }
    }
}

fn drop_slot(root: &mut Root, s: u64) {
    let _ = SELF_ASPACE.delete_cap(s);
    root.slots.free(s);
}

pub fn show(root: &mut Root) {
    iommu(root);
    if let Some((i, cap)) = boot_time(root, "pci") {
        let sys = root.system.as_ref().unwrap();
        println!("PCI bus 0 (from the PCI server '{}' of the system description):", sys.entries[i].name);
        list(Pci(Sender(cap)));
        let drivers: alloc::vec::Vec<_> = (0..sys.entries.len())
            .filter_map(|d| sys.grants_of(d).into_iter().find(|(s, _)| *s == sys.entries[i].name).map(|(_, g)| (d, g)))
            .collect();
        for (d, g) in drivers {
            println!("  driver {:<12} may open {g}", sys.entries[d].name);
        }
        drop_slot(root, cap);
        return;
    }
    let Some(elf) = root.image.as_ref().and_then(|i| i.find("pci")).map(|e| e.data) else {
        println!("devices: no 'pci' (the PCI server) in the boot image");
        return;
    };
    let g = |s: u64| Grant { src: s, dest: s, rights: 0 };
    let grants = [g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::DEVMEM), g(slot::TIMER)];
    let spec = Spec { name: "pci", elf, arg0: 0, arg1: 0, grants: &grants, blob: None };
    let mut loader = Loader::new(&mut root.slots);
    let child = match loader.load(&spec) {
        Ok(c) => c,
        Err(e) => {
            println!("devices: cannot load the PCI server: {e}");
            return;
        }
    };
    let Some(cap) = loader.slots.alloc() else {
        let _ = loader.destroy(child);
        return;
    };
    if child.process.mint(cap, 0, rights::WRITE | rights::CALL).and_then(|_| child.process.start()).is_ok() {
        let pci = Pci(Sender(cap));
        println!("PCI bus 0 (from the PCI server):");
        list(pci);
        let _ = pci.quit();
        let _ = child.process.wait();
    }
    let _ = SELF_ASPACE.delete_cap(cap);
    loader.slots.free(cap);
    let _ = loader.destroy(child);
}

fn rights_str(r: u64) -> &'static str {
    match (r & rights::READ != 0, r & rights::WRITE != 0) {
        (true, true) => "rw",
        (true, false) => "r",
        (false, true) => "w",
        _ => "-",
    }
}

/// `disk`: the boot-time block server: its restarts, its requests and
/// each client with its range, rights and requests.
pub fn disk(root: &mut Root) {
    let Some(sys) = root.system.as_ref() else {
        println!("disk: no system description runs (the disk's servers start from it)");
        return;
    };
    let Some(i) = sys.server_running("blk") else {
        println!("disk: the system description has no block server (program=blk)");
        return;
    };
    let table = sys.status().unwrap_or_default();
    let restarts = table.get(i).map_or(0, |t| t.restarts);
    let name = sys.entries[i].name.clone();
    println!("disk: block server '{name}' (restarted {restarts} of {} times)", sys.entries[i].max_restarts);
    let Some((_, cap)) = boot_time(root, "blk") else { return };
    let admin = keep_blk::Admin(Sender(cap));
    match (admin.stats(), admin.queue_stats()) {
        (Ok((served, refused, faults)), Ok((most, flushes, buffers))) => println!(
            "  this instance: {served} requests served, {refused} refused, {faults} DMA faults; at most {most} on the device at once, {flushes} flushes, {buffers} buffers attached"
        ),
        (Err(e), _) | (_, Err(e)) => println!("  STATS: {e}"),
    }
    match admin.device_stats() {
        Ok((resets, restarted, refusals)) => println!(
            "  device: reset {resets} times after it stopped, {restarted} requests started again, {refusals} submissions refused by the mediator"
        ),
        Err(e) => println!("  DEVICE_STATS: {e}"),
    }
    // "at end": buffers the server let go when init said the client ended.
    println!("  {:<3} {:<16} {:>10} {:>10}  {:<6} {:>9} {:>8} {:>8} {:>7}", "#", "client", "first", "sectors", "rights", "served", "refused", "buffers", "at end");
    let mut k = 0;
    loop {
        match admin.client(k) {
            Ok((c, n)) => {
                let sys = root.system.as_ref().unwrap();
                let who = match c.described {
                    Some(d) => sys.entries.get(d as usize).map_or(alloc::format!("#{d}"), |e| e.name.clone()),
                    None => alloc::string::String::from("(admin's)"),
                };
                println!(
                    "  {:<3} {:<16} {:>10} {:>10}  {:<6} {:>9} {:>8} {:>8} {:>7}",
                    k + 1,
                    who,
                    c.first,
                    c.sectors,
                    rights_str(c.rights),
                    c.served,
                    c.refused,
                    c.buffers,
                    c.let_go
                );
                k += 1;
                if k >= n {
                    break;
                }
            }
            Err(keep_blk::Error::Status(keep_blk::NOT_FOUND)) => break,
            Err(e) => {
                println!("  CLIENT {k}: {e}");
                break;
            }
        }
    }
    if k == 0 {
        println!("  no client has called this instance yet");
    }
    // Clients the description grants a range who have not called yet.
    let sys = root.system.as_ref().unwrap();
    for d in 0..sys.entries.len() {
        if let Some((_, g)) = sys.grants_of(d).into_iter().find(|(s, _)| *s == name) {
            println!("  granted: {:<16} blk={g}", sys.entries[d].name);
        }
    }
    drop_slot(root, cap);
}

/// `net`: the boot-time network server: its restarts, its frames, and the
/// stacks the description grants an address.
pub fn net(root: &mut Root) {
    let Some(sys) = root.system.as_ref() else {
        println!("net: no system description runs (the network's servers start from it)");
        return;
    };
    let Some(i) = sys.server_running("net") else {
        println!("net: the system description has no network server (program=net)");
        return;
    };
    let table = sys.status().unwrap_or_default();
    let restarts = table.get(i).map_or(0, |t| t.restarts);
    let name = sys.entries[i].name.clone();
    println!("net: network server '{name}' (restarted {restarts} of {} times)", sys.entries[i].max_restarts);
    let Some((_, cap)) = boot_time(root, "net") else { return };
    match keep_net::Admin(Sender(cap)).stats() {
        Ok((from, to, dropped)) => println!("  this instance: {from} frames from the NIC, {to} to the NIC, {dropped} dropped"),
        Err(e) => println!("  STATS: {e}"),
    }
    match keep_net::Admin(Sender(cap)).device_stats() {
        Ok((resets, faults, refused)) => {
            println!("  NIC: reset {resets} times, {faults} DMA faults, {refused} frames refused by the mediator")
        }
        Err(e) => println!("  DEVICE_STATS: {e}"),
    }
    let sys = root.system.as_ref().unwrap();
    for d in 0..sys.entries.len() {
        if let Some((_, g)) = sys.grants_of(d).into_iter().find(|(s, _)| *s == name) {
            let e = &sys.entries[d];
            let (restarts, state) = match table.get(d) {
                Some(t) if e.kind == keep_system::Kind::Server => {
                    (alloc::format!("{}/{}", t.restarts, e.max_restarts), crate::shell_system::phase_name(t))
                }
                _ => (alloc::string::String::from("-"), "program"),
            };
            println!("  stack {:<16} net={g:<15} restarts {restarts:<6} {state}", e.name);
        }
    }
    drop_slot(root, cap);
}

/// `date`: the wall clock, asked of the description's rtc server
/// (docs/devices.md, "The wall clock").
pub fn date(root: &mut Root) {
    if root.system.as_ref().is_none_or(|s| s.server_running("rtc").is_none()) {
        println!("date: the system description has no wall clock server (program=rtc)");
        return;
    }
    let Some((_, cap)) = boot_time(root, "rtc") else { return };
    match keep_rtc::Client(Sender(cap)).now() {
        Ok(t) => {
            let (y, mo, d, h, mi, s) = keep_rtc::civil(t);
            println!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC ({t} seconds since 1970)");
        }
        Err(e) => println!("date: the rtc server: {}", keep_rtc::status_name(e)),
    }
    drop_slot(root, cap);
}

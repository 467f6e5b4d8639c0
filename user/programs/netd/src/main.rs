//! `run netd &` at the shell: starts the PCI server, the network server
//! and two network stacks in processes of their own (docs/devices.md,
//! "The network"): 10.0.2.15, the address QEMU's user network forwards
//! the host's ports to, with the TCP echo service (port 7) and the status
//! service (port 8), and 10.0.2.16 with the status service.  Then it
//! waits.
//!
//! The shell gives it, as it gives ktest, the boot image (arg0, arg1) and
//! the device capabilities it passes on.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;

use keep_abi::{MEMORY, SELF_ASPACE, TIMER, rights, slot};
use keep_loader::{BootImage, Child, Grant, Loader, SlotPool, Spec};
use keep_net::{Admin, Ip, NET_SLOT, ipv4};
use keep_pci::PCI_SLOT;
use keep_rt::println;

keep_rt::entry!(main);

/// The stacks: address and services (netstack's arg1).
pub const STACKS: [(u64, u64); 2] = [(ipv4(10, 0, 2, 15), 3), (ipv4(10, 0, 2, 16), 2)];

fn grant(s: u64) -> Grant {
    Grant { src: s, dest: s, rights: 0 }
}

fn start(slots: &mut SlotPool, img: &BootImage, name: &str, arg0: u64, arg1: u64, grants: &[Grant]) -> Result<(Child, u64), String> {
    let elf = img.find(name).ok_or_else(|| format!("no '{name}' in the boot image"))?.data;
    let spec = Spec { name, elf, arg0, arg1, grants, blob: None };
    let child = Loader::new(slots).load(&spec).map_err(|e| format!("load {name}: {e:?}"))?;
    let cap = slots.alloc().ok_or("no slot")?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).map_err(|e| format!("MINT: {e}"))?;
    child.process.start().map_err(|e| format!("START {name}: {e}"))?;
    Ok((child, cap))
}

fn run(image_addr: u64, image_size: u64) -> Result<(), String> {
    if image_addr == 0 || image_size == 0 {
        return Err("no boot image (the shell passes it to netd)".into());
    }
    // SAFETY: the shell maps the image read-only there for our whole life.
    let bytes = unsafe { core::slice::from_raw_parts(image_addr as *const u8, image_size as usize) };
    let img = BootImage::parse(bytes).map_err(|e| format!("boot image: {e:?}"))?;
    let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
    let base = [grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::TIMER)];
    let (_pci, pci) = start(&mut slots, &img, "pci", 0, 0, &[base[0], base[1], base[2], grant(slot::DEVMEM), grant(slot::INTERRUPT)])?;
    let (_net, net) = start(
        &mut slots, &img, "net", 0, 0,
        &[base[0], base[1], base[2], grant(slot::MEMORY), Grant { src: pci, dest: PCI_SLOT, rights: 0 }],
    )?;
    let admin = Admin(keep_abi::Sender(net));
    let mut children = alloc::vec::Vec::new();
    for (ip, services) in STACKS {
        let cap = slots.alloc().ok_or("no slot")?;
        admin.add_stack(ip, cap).map_err(|e| format!("ADD_STACK {}: {e}", Ip(ip)))?;
        let (c, _) = start(&mut slots, &img, "netstack", ip, services, &[base[0], base[1], base[2], Grant { src: cap, dest: NET_SLOT, rights: 0 }])?;
        children.push(c);
    }
    println!("netd: ready: the network server and stacks {} (echo 7, status 8) and {} (status 8)", Ip(STACKS[0].0), Ip(STACKS[1].0));
    loop {
        let _ = TIMER.sleep(60_000);
    }
}

fn main(image_addr: u64, image_size: u64) -> i32 {
    match run(image_addr, image_size) {
        Ok(()) => 0,
        Err(e) => {
            println!("netd: {e}");
            1
        }
    }
}

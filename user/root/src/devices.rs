//! The shell's `devices`: whether the IOMMU confines DMA, and the PCI
//! functions as the PCI server lists them (docs/devices.md).  The server
//! is started for the listing and quits after it.

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

pub fn show(root: &mut Root) {
    iommu(root);
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
        let _ = pci.quit();
        let _ = child.process.wait();
    }
    let _ = SELF_ASPACE.delete_cap(cap);
    loader.slots.free(cap);
    let _ = loader.destroy(child);
}

//! virtio devices for user-level drivers on Keep (docs/devices.md).
//!
//! - [`device`]: a virtio PCI function opened for a driver through the PCI
//!   server, its DMA domain and the Hal set up (the block and network drivers).
//! - [`msix`]: MSI-X for a virtio driver: an entry routed by the PCI
//!   server, bound to the driver, the virtqueues pointed at it.
//! - [`pci`]: PCI functions found through the ECAM area (the MCFG table's
//!   window; on q35 at 0xb000_0000), each function's configuration space
//!   one DEVMEM page.
//! - [`hal`]: `virtio_drivers::Hal`, whose DMA memory is pages the driver
//!   holds, mapped into its DMA domain; the device sees only those.
//! - [`mediated`]: the transport for a machine without an IOMMU: the PCI
//!   server's mediator checks every descriptor against the DMA domain.
//! - [`VirtioTransport`]: either transport, as [`device::open`] chose.
//! - [`PlatformTransport`]: accepts VIRTIO_F_ACCESS_PLATFORM, which QEMU's
//!   `iommu_platform=on` devices require and `virtio-drivers` does not ask.
#![no_std]

extern crate alloc;

pub mod device;
pub mod hal;
pub mod mediated;
pub mod msix;
pub mod pci;

use virtio_drivers::transport::{DeviceStatus, DeviceType, InterruptStatus, Transport};
use virtio_drivers::{PhysAddr, Result};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// VIRTIO_F_ACCESS_PLATFORM: the device's DMA goes through the platform's
/// IOMMU (virtio 1.1, section 6).
pub const ACCESS_PLATFORM: u64 = 1 << 33;

/// VIRTIO_F_RING_INDIRECT_DESC: descriptor tables of their own per request.
pub const RING_INDIRECT_DESC: u64 = 1 << 28;

/// A transport that accepts ACCESS_PLATFORM when the device offers it, and
/// hides from the driver the features in its second field (`hiding`).
pub struct PlatformTransport<T: Transport>(pub T, pub u64);

impl<T: Transport> PlatformTransport<T> {
    pub fn new(transport: T) -> Self {
        PlatformTransport(transport, 0)
    }

    /// The same with `features` hidden: neither offered nor accepted.
    pub fn hiding(self, features: u64) -> Self {
        PlatformTransport(self.0, self.1 | features)
    }
}

impl<T: Transport> Transport for PlatformTransport<T> {
    fn device_type(&self) -> DeviceType {
        self.0.device_type()
    }
    fn read_device_features(&mut self) -> u64 {
        self.0.read_device_features() & !self.1
    }
    fn write_driver_features(&mut self, driver_features: u64) {
        let offered = self.0.read_device_features() & ACCESS_PLATFORM;
        self.0.write_driver_features((driver_features | offered) & !self.1)
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.0.max_queue_size(queue)
    }
    fn notify(&mut self, queue: u16) {
        self.0.notify(queue)
    }
    fn get_status(&self) -> DeviceStatus {
        self.0.get_status()
    }
    fn set_status(&mut self, status: DeviceStatus) {
        self.0.set_status(status)
    }
    fn set_guest_page_size(&mut self, guest_page_size: u32) {
        self.0.set_guest_page_size(guest_page_size)
    }
    fn requires_legacy_layout(&self) -> bool {
        self.0.requires_legacy_layout()
    }
    fn queue_set(&mut self, queue: u16, size: u32, descriptors: PhysAddr, driver_area: PhysAddr, device_area: PhysAddr) {
        self.0.queue_set(queue, size, descriptors, driver_area, device_area)
    }
    fn queue_unset(&mut self, queue: u16) {
        self.0.queue_unset(queue)
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        self.0.queue_used(queue)
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        self.0.ack_interrupt()
    }
    fn read_config_generation(&self) -> u32 {
        self.0.read_config_generation()
    }
    fn read_config_space<V: FromBytes + IntoBytes>(&self, offset: usize) -> Result<V> {
        self.0.read_config_space(offset)
    }
    fn write_config_space<V: IntoBytes + Immutable>(&mut self, offset: usize, value: V) -> Result<()> {
        self.0.write_config_space(offset, value)
    }
}

/// The function's own transport where an IOMMU confines its DMA, the
/// mediated one where nothing does.
pub enum VirtioTransport {
    Pci(virtio_drivers::transport::pci::PciTransport),
    Mediated(mediated::MediatedTransport),
}

macro_rules! both {
    ($self:ident, $t:ident => $e:expr) => {
        match $self {
            VirtioTransport::Pci($t) => $e,
            VirtioTransport::Mediated($t) => $e,
        }
    };
}

impl Transport for VirtioTransport {
    fn device_type(&self) -> DeviceType {
        both!(self, t => t.device_type())
    }
    fn read_device_features(&mut self) -> u64 {
        both!(self, t => t.read_device_features())
    }
    fn write_driver_features(&mut self, f: u64) {
        both!(self, t => t.write_driver_features(f))
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        both!(self, t => t.max_queue_size(queue))
    }
    fn notify(&mut self, queue: u16) {
        both!(self, t => t.notify(queue))
    }
    fn get_status(&self) -> DeviceStatus {
        both!(self, t => t.get_status())
    }
    fn set_status(&mut self, status: DeviceStatus) {
        both!(self, t => t.set_status(status))
    }
    fn set_guest_page_size(&mut self, size: u32) {
        both!(self, t => t.set_guest_page_size(size))
    }
    fn requires_legacy_layout(&self) -> bool {
        both!(self, t => t.requires_legacy_layout())
    }
    fn queue_set(&mut self, queue: u16, size: u32, descriptors: PhysAddr, driver_area: PhysAddr, device_area: PhysAddr) {
        both!(self, t => t.queue_set(queue, size, descriptors, driver_area, device_area))
    }
    fn queue_unset(&mut self, queue: u16) {
        both!(self, t => t.queue_unset(queue))
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        both!(self, t => t.queue_used(queue))
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        both!(self, t => t.ack_interrupt())
    }
    fn read_config_generation(&self) -> u32 {
        both!(self, t => t.read_config_generation())
    }
    fn read_config_space<V: FromBytes + IntoBytes>(&self, offset: usize) -> Result<V> {
        both!(self, t => t.read_config_space(offset))
    }
    fn write_config_space<V: IntoBytes + Immutable>(&mut self, offset: usize, value: V) -> Result<()> {
        both!(self, t => t.write_config_space(offset, value))
    }
}

/// What the disk image holds (tools/mkdisk.py): word `w` of sector `s`.
pub fn disk_pattern(sector: u64, word: u64) -> u64 {
    ((sector << 32) | word).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// FNV-1a over bytes: the checksum the block tests compare.
pub fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

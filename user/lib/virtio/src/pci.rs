//! PCI functions through ECAM (PCI Express base specification, 7.2.2): the
//! configuration space of bus b, device d, function f is the 4 KiB page at
//! ECAM_BASE + (b << 20 | d << 15 | f << 12).  The kernel reads the base
//! from the ACPI MCFG table (DMA_DOMAIN.ATTACH names functions by that
//! page); user level uses q35's fixed base, which MCFG states, because
//! Keep has no user-level ACPI reader yet.

use keep_abi::{Aspace, DevMem, Result, layout, rights};
use keep_pci::Session;
use virtio_drivers::transport::pci::bus::{ConfigurationAccess, DeviceFunction};

/// q35's ECAM base (QEMU's MCH, PCIEXBAR; the same as its MCFG table).
pub const ECAM_BASE: u64 = 0xb000_0000;

/// A PCI function: bus << 8 | device << 3 | function, as VT-d names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sid(pub u16);

impl Sid {
    pub fn new(bus: u8, device: u8, function: u8) -> Sid {
        Sid((bus as u16) << 8 | (device as u16 & 31) << 3 | (function as u16 & 7))
    }
    pub fn device_function(self) -> DeviceFunction {
        DeviceFunction { bus: (self.0 >> 8) as u8, device: ((self.0 >> 3) & 31) as u8, function: (self.0 & 7) as u8 }
    }
    /// Its configuration page's index in the DEVMEM range starting at `devmem_base`.
    pub fn config_page(self, devmem_base: u64) -> u64 {
        (ECAM_BASE + ((self.0 as u64) << 12) - devmem_base) / layout::PAGE_SIZE
    }
}

impl core::fmt::Display for Sid {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.0 >> 8, (self.0 >> 3) & 31, self.0 & 7)
    }
}

/// The first function on bus 0 with this vendor and device ID, looked for
/// through a scratch mapping at `scratch_va` (left unmapped).
pub fn find(aspace: Aspace, devmem: u64, scratch_va: u64, vendor: u16, device: u16) -> Result<Option<Sid>> {
    let (base, _) = DevMem(devmem).info()?;
    for n in 0..256u16 {
        let sid = Sid(n);
        aspace.map_device(devmem, sid.config_page(base), scratch_va, rights::READ)?;
        // SAFETY: the configuration page is mapped readable at scratch_va.
        let id = unsafe { core::ptr::read_volatile(scratch_va as *const u32) };
        aspace.unmap(scratch_va)?;
        if id == (device as u32) << 16 | vendor as u32 {
            return Ok(Some(sid));
        }
    }
    Ok(None)
}

/// One function's configuration space, mapped at `va`: the only function
/// this access reaches (virtio-drivers' PciRoot asks for no other).
pub struct FunctionConfig {
    pub sid: Sid,
    pub va: u64,
}

impl FunctionConfig {
    /// Maps the configuration page of `sid` read-write at `va`.
    pub fn map(aspace: Aspace, devmem: u64, sid: Sid, va: u64) -> Result<FunctionConfig> {
        let (base, _) = DevMem(devmem).info()?;
        aspace.map_device(devmem, sid.config_page(base), va, rights::READ | rights::WRITE)?;
        Ok(FunctionConfig { sid, va })
    }

    fn at(&self, df: DeviceFunction, offset: u8) -> *mut u32 {
        assert!(df == self.sid.device_function(), "configuration access to another function");
        (self.va + (offset as u64 & !3)) as *mut u32
    }
}

impl ConfigurationAccess for FunctionConfig {
    fn read_word(&self, df: DeviceFunction, offset: u8) -> u32 {
        // SAFETY: the page is mapped at va (FunctionConfig::map).
        unsafe { core::ptr::read_volatile(self.at(df, offset)) }
    }
    fn write_word(&mut self, df: DeviceFunction, offset: u8, data: u32) {
        // SAFETY: as above, and writable.
        unsafe { core::ptr::write_volatile(self.at(df, offset), data) }
    }
    unsafe fn unsafe_clone(&self) -> Self {
        FunctionConfig { sid: self.sid, va: self.va }
    }
}

/// One function's configuration space through the PCI server: every access
/// is a call on the driver's session, which filters writes.
pub struct RemoteConfig {
    pub sid: Sid,
    pub session: Session,
}

impl RemoteConfig {
    fn check(&self, df: DeviceFunction) {
        assert!(df == self.sid.device_function(), "configuration access to another function");
    }
}

impl ConfigurationAccess for RemoteConfig {
    fn read_word(&self, df: DeviceFunction, offset: u8) -> u32 {
        self.check(df);
        self.session.config_read(offset as u64).unwrap_or(0xffff_ffff)
    }
    fn write_word(&mut self, df: DeviceFunction, offset: u8, data: u32) {
        self.check(df);
        // A refused write changes nothing; virtio-drivers has no way to hear it.
        let _ = self.session.config_write(offset as u64, data);
    }
    unsafe fn unsafe_clone(&self) -> Self {
        RemoteConfig { sid: self.sid, session: self.session }
    }
}

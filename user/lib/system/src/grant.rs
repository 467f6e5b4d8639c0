//! Grants: what a device server gives one client of the description
//! (docs/space-banks.md, "Devices").  A line that uses a server may say
//! `SERVER=GRANT`; the server asks init for it (the name service's
//! `GRANT`) the first time that client calls, and parses it with the
//! function here for its program.  The description's parser checks each
//! grant with the same function at boot, so a malformed one refuses the
//! description naming its line.
//!
//! | server's program | grant | meaning |
//! |---|---|---|
//! | `pci` | `id:VVVV:DDDD` | the first function with this vendor and device ID (hex) |
//! | `pci` | `class:CC`, `class:CCSS`, `class:CCSSPP` | the first function of this base class (subclass, programming interface) |
//! | `pci` | `at:BB:DD.F` | the function at bus BB, device DD, function F (hex) |
//! | `blk` | `FIRST+SECTORS:r` or `:rw` | sectors FIRST .. FIRST+SECTORS of the disk, read-only or read-write |
//! | `net` | `A.B.C.D` | a stack with this IPv4 address |

use alloc::format;
use alloc::string::String;

/// Which PCI function a driver may open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciSelector {
    Id { vendor: u16, device: u16 },
    /// `value` holds `digits` hex digits of the 24-bit class code, from the top.
    Class { value: u32, digits: u32 },
    At { bus: u8, device: u8, function: u8 },
}

impl PciSelector {
    /// Whether the function (source id bus << 8 | device << 3 | function,
    /// its IDs and its 24-bit class code) is the one selected.
    pub fn matches(&self, sid: u16, vendor: u16, device: u16, class: u32) -> bool {
        match *self {
            PciSelector::Id { vendor: v, device: d } => v == vendor && d == device,
            PciSelector::Class { value, digits } => class >> (4 * (6 - digits)) == value,
            PciSelector::At { bus, device: d, function } => sid == (bus as u16) << 8 | (d as u16) << 3 | function as u16,
        }
    }
}

fn hex(s: &str, digits: usize, what: &str) -> Result<u32, String> {
    if s.len() != digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{what} '{s}': want {digits} hex digits"));
    }
    u32::from_str_radix(s, 16).map_err(|_| format!("{what} '{s}'"))
}

/// A PCI grant: `id:VVVV:DDDD`, `class:CC[SS[PP]]` or `at:BB:DD.F`.
pub fn pci(g: &str) -> Result<PciSelector, String> {
    if let Some(r) = g.strip_prefix("id:") {
        let (v, d) = r.split_once(':').ok_or_else(|| format!("'{g}': want id:VVVV:DDDD"))?;
        return Ok(PciSelector::Id { vendor: hex(v, 4, "vendor")? as u16, device: hex(d, 4, "device")? as u16 });
    }
    if let Some(r) = g.strip_prefix("class:") {
        if !matches!(r.len(), 2 | 4 | 6) {
            return Err(format!("'{g}': want class:CC, class:CCSS or class:CCSSPP (hex)"));
        }
        return Ok(PciSelector::Class { value: hex(r, r.len(), "class")?, digits: r.len() as u32 });
    }
    if let Some(r) = g.strip_prefix("at:") {
        let err = || format!("'{g}': want at:BB:DD.F (hex; device below 20, function below 8)");
        let (bus, rest) = r.split_once(':').ok_or_else(err)?;
        let (dev, func) = rest.split_once('.').ok_or_else(err)?;
        let (bus, dev, func) = (hex(bus, 2, "bus")?, hex(dev, 2, "device")?, hex(func, 1, "function")?);
        if dev >= 0x20 || func >= 8 {
            return Err(err());
        }
        return Ok(PciSelector::At { bus: bus as u8, device: dev as u8, function: func as u8 });
    }
    Err(format!("'{g}': want id:VVVV:DDDD, class:CC[SS[PP]] or at:BB:DD.F"))
}

/// A block client's range and rights (keep_abi's READ and WRITE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskRange {
    pub first: u64,
    pub sectors: u64,
    pub rights: u64,
}

fn number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// A block grant: `FIRST+SECTORS:r` or `FIRST+SECTORS:rw`.
pub fn blk(g: &str) -> Result<DiskRange, String> {
    let err = || format!("'{g}': want FIRST+SECTORS:r or FIRST+SECTORS:rw");
    let (range, r) = g.split_once(':').ok_or_else(err)?;
    let (first, sectors) = range.split_once('+').ok_or_else(err)?;
    let (first, sectors) = (number(first).ok_or_else(err)?, number(sectors).ok_or_else(err)?);
    if sectors == 0 || first.checked_add(sectors).is_none_or(|end| end > 1 << 48) {
        return Err(format!("'{g}': the range is empty or runs past 2^48 sectors"));
    }
    let rights = match r {
        "r" => keep_abi::rights::READ,
        "rw" => keep_abi::rights::READ | keep_abi::rights::WRITE,
        _ => return Err(err()),
    };
    Ok(DiskRange { first, sectors, rights })
}

/// A network grant: the stack's IPv4 address (as keep_net packs it: a.b.c.d = a << 24 | ...).
pub fn net(g: &str) -> Result<u32, String> {
    let err = || format!("'{g}': want an IPv4 address A.B.C.D");
    let mut ip = 0u32;
    let mut n = 0;
    for part in g.split('.') {
        let b: u8 = part.parse().map_err(|_| err())?;
        ip = ip << 8 | b as u32;
        n += 1;
    }
    if n != 4 || ip == 0 || ip == u32::MAX {
        return Err(err());
    }
    Ok(ip)
}

/// Checks grant `g` for a server of program `program`.
pub fn check(program: &str, g: &str) -> Result<(), String> {
    match program {
        "pci" => pci(g).map(drop),
        "blk" => blk(g).map(drop),
        "net" => net(g).map(drop),
        _ => Err(format!("a server of program '{program}' takes no grant")),
    }
}

/// Whether a client of a server of `program` must have a grant (it gets
/// nothing from the server without one).
pub fn required(program: &str) -> bool {
    matches!(program, "pci" | "blk" | "net")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_selectors() {
        assert_eq!(pci("id:1af4:1042").unwrap(), PciSelector::Id { vendor: 0x1af4, device: 0x1042 });
        let c = pci("class:01").unwrap();
        assert!(c.matches(0x10, 0x1af4, 0x1042, 0x010000));
        assert!(!c.matches(0x10, 0x1af4, 0x1041, 0x020000));
        assert!(pci("class:0106").unwrap().matches(0xfa, 0x8086, 0x2922, 0x010601));
        assert!(!pci("class:0106").unwrap().matches(0x10, 0x1af4, 0x1042, 0x010000));
        assert!(pci("class:010000").unwrap().matches(0x10, 0x1af4, 0x1042, 0x010000));
        let a = pci("at:00:02.0").unwrap();
        assert_eq!(a, PciSelector::At { bus: 0, device: 2, function: 0 });
        assert!(a.matches(0x10, 0, 0, 0) && !a.matches(0x18, 0, 0, 0));
        assert!(pci("at:00:1f.2").unwrap().matches(0xfa, 0, 0, 0));
        for bad in ["", "1af4:1042", "id:1af4", "id:1af4:104", "id:xyzw:1042", "class:1", "class:012", "class:0g",
                    "at:00:02", "at:0:02.0", "at:00:20.0", "at:00:02.8", "at:00:02.x", "frob:1"] {
            assert!(pci(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn disk_ranges() {
        use keep_abi::rights::{READ, WRITE};
        assert_eq!(blk("512+1024:rw").unwrap(), DiskRange { first: 512, sectors: 1024, rights: READ | WRITE });
        assert_eq!(blk("0x800+0x200:r").unwrap(), DiskRange { first: 0x800, sectors: 0x200, rights: READ });
        for bad in ["", "512", "512+1024", "512:rw", "512+0:rw", "512+1024:w", "512+1024:rwx", "a+1:r", "1+b:r",
                    "18446744073709551615+1:r", "0+281474976710657:r"] {
            assert!(blk(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(net("10.0.2.15").unwrap(), 0x0a00_020f);
        for bad in ["", "10.0.2", "10.0.2.15.1", "10.0.2.256", "0.0.0.0", "255.255.255.255", "a.b.c.d"] {
            assert!(net(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn which_programs_take_grants() {
        assert!(check("pci", "id:1af4:1042").is_ok());
        assert!(check("counter", "x").unwrap_err().contains("takes no grant"));
        assert!(required("blk") && !required("dataspace"));
    }
}

//! Rust bindings of the Keep kernel interface.
//!
//! The constants come from `generated.rs`, which `tools/abigen.py` writes
//! from `abi/keep.toml`; the test at the bottom of this file checks them
//! against that definition.  On top of the constants this crate offers the
//! one system call ([`invoke`]) and thin typed wrappers, one per object type,
//! that hold a capability slot.

#![cfg_attr(not(test), no_std)]

pub mod generated;
pub use generated::*;

use core::fmt;

/// A kernel error code other than `OK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error(pub u64);

impl Error {
    pub const INVALID_CAP: Error = Error(err::INVALID_CAP);
    pub const WRONG_TYPE: Error = Error(err::WRONG_TYPE);
    pub const NO_RIGHTS: Error = Error(err::NO_RIGHTS);
    pub const INVALID_METHOD: Error = Error(err::INVALID_METHOD);
    pub const INVALID_ARG: Error = Error(err::INVALID_ARG);
    pub const NO_MEMORY: Error = Error(err::NO_MEMORY);
    pub const STALE: Error = Error(err::STALE);
    pub const WOULD_BLOCK: Error = Error(err::WOULD_BLOCK);
    pub const BAD_STATE: Error = Error(err::BAD_STATE);
    pub const FAULT: Error = Error(err::FAULT);
    pub const EXISTS: Error = Error(err::EXISTS);
    pub const NOT_MAPPED: Error = Error(err::NOT_MAPPED);

    pub fn name(self) -> &'static str {
        error_name(self.0)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub type Result<T> = core::result::Result<T, Error>;

/// Invokes the capability in `slot` with `method` and four argument words;
/// returns the error code and the four result words as the kernel left them.
///
/// The kernel checks every capability, right and argument, so a malformed
/// invocation only returns an error.  Two kinds of method can still hurt the
/// caller: those that write through a pointer argument (CONSOLE.READ,
/// KERNEL.CMDLINE) and those that change the caller's own mappings (MAP and
/// UNMAP on `slot::SELF_ASPACE`); the typed wrappers take slices for the
/// former, and mapping over memory Rust uses is the caller's business.
#[inline(always)]
pub fn invoke_raw(slot: u64, method: u64, args: [u64; 4]) -> (u64, [u64; 4]) {
    let error: u64;
    let (mut a0, mut a1, mut a2, mut a3) = (args[0], args[1], args[2], args[3]);
    // SAFETY: the kernel preserves every register except rax, rcx, r11 and
    // the four argument/result registers, all of which are declared here; no
    // `nomem` because methods read and write user buffers.
    unsafe {
        core::arch::asm!(
            "syscall",
            in("rdi") slot,
            in("rsi") method & TAG_METHOD_MASK,
            lateout("rax") error,
            inlateout("rdx") a0,
            inlateout("r8") a1,
            inlateout("r9") a2,
            inlateout("r10") a3,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    (error, [a0, a1, a2, a3])
}

/// Like [`invoke_raw`], with the error code turned into a `Result`.
#[inline(always)]
pub fn invoke(slot: u64, method: u64, args: [u64; 4]) -> Result<[u64; 4]> {
    match invoke_raw(slot, method, args) {
        (err::OK, r) => Ok(r),
        (e, _) => Err(Error(e)),
    }
}

/// The debug console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Console(pub u64);

impl Console {
    /// The most bytes one WRITE takes.
    pub const MAX_WRITE: usize = 4096;

    /// Writes at most 4096 bytes; returns how many were written.
    pub fn write(self, buf: &[u8]) -> Result<usize> {
        let r = invoke(
            self.0,
            method::console::WRITE,
            [buf.as_ptr() as u64, buf.len() as u64, 0, 0],
        )?;
        Ok(r[0] as usize)
    }

    /// Writes all of `buf` in chunks the kernel accepts.
    pub fn write_all(self, mut buf: &[u8]) -> Result<()> {
        while !buf.is_empty() {
            let n = buf.len().min(Self::MAX_WRITE);
            let done = self.write(&buf[..n])?;
            if done == 0 {
                return Err(Error::INVALID_ARG);
            }
            buf = &buf[done.min(n)..];
        }
        Ok(())
    }

    /// Reads input into `buf`; blocks until there is at least one byte
    /// unless `nonblocking` (then `WOULD_BLOCK` when there is none).
    pub fn read(self, buf: &mut [u8], nonblocking: bool) -> Result<usize> {
        let r = invoke(
            self.0,
            method::console::READ,
            [
                buf.as_mut_ptr() as u64,
                buf.len() as u64,
                nonblocking as u64,
                0,
            ],
        )?;
        Ok(r[0] as usize)
    }
}

/// One memory-map entry as KERNEL.MEMMAP returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemEntry {
    pub base: u64,
    pub len: u64,
    pub ty: u64,
    /// Number of entries in the whole map.
    pub count: u64,
}

/// The name of a memory-map entry type, for tables.
pub fn memtype_name(ty: u64) -> &'static str {
    match ty {
        memtype::USABLE => "usable",
        memtype::RESERVED => "reserved",
        memtype::KERNEL => "kernel",
        memtype::BOOT_IMAGE => "boot image",
        _ => "unknown",
    }
}

/// One live process as KERNEL.PROCESS_INFO describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub state: u64,
    pub priority: u64,
    pub name: [u8; 16],
    /// The index to ask for next; 0 when there is no further process.
    pub next: u64,
}

impl ProcInfo {
    /// The name up to its first NUL byte (lossy: invalid UTF-8 gives "?").
    pub fn name_str(&self) -> &str {
        name_str(&self.name)
    }
}

/// Packs up to 16 bytes of a name into the two words SET_NAME takes.
pub fn pack_name(name: &str) -> (u64, u64) {
    let mut b = [0u8; 16];
    let n = name.len().min(16);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    let (lo, hi) = b.split_at(8);
    (
        u64::from_le_bytes(lo.try_into().unwrap()),
        u64::from_le_bytes(hi.try_into().unwrap()),
    )
}

/// The text of a NUL-padded 16-byte name.
pub fn name_str(name: &[u8; 16]) -> &str {
    let end = name.iter().position(|&c| c == 0).unwrap_or(16);
    core::str::from_utf8(&name[..end]).unwrap_or("?")
}

/// Machine control (information, memory map, power-off, self-checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(pub u64);

impl Kernel {
    pub fn info(self, key: u64) -> Result<u64> {
        Ok(invoke(self.0, method::kernel::INFO, [key, 0, 0, 0])?[0])
    }

    pub fn memmap(self, index: u64) -> Result<MemEntry> {
        let r = invoke(self.0, method::kernel::MEMMAP, [index, 0, 0, 0])?;
        Ok(MemEntry {
            base: r[0],
            len: r[1],
            ty: r[2],
            count: r[3],
        })
    }

    pub fn process_info(self, index: u64) -> Result<ProcInfo> {
        let r = invoke(self.0, method::kernel::PROCESS_INFO, [index, 0, 0, 0])?;
        let mut name = [0u8; 16];
        name[..8].copy_from_slice(&r[1].to_le_bytes());
        name[8..].copy_from_slice(&r[2].to_le_bytes());
        Ok(ProcInfo {
            pid: r[0] as u32,
            state: (r[0] >> 32) & 0xff,
            priority: (r[0] >> 40) & 0xff,
            name,
            next: r[3],
        })
    }

    /// Returns (violations, mappings checked) of one `check::*` invariant.
    pub fn check_paging(self, check: u64) -> Result<(u64, u64)> {
        let r = invoke(self.0, method::kernel::CHECK_PAGING, [check, 0, 0, 0])?;
        Ok((r[0], r[1]))
    }

    /// Powers the machine off; returns only on error.
    pub fn poweroff(self) -> Error {
        match invoke(self.0, method::kernel::POWEROFF, [0; 4]) {
            Ok(_) => Error::BAD_STATE,
            Err(e) => e,
        }
    }

    /// Leaves QEMU with `code`; returns only on error.
    pub fn debug_exit(self, code: u64) -> Error {
        match invoke(self.0, method::kernel::DEBUG_EXIT, [code, 0, 0, 0]) {
            Ok(_) => Error::BAD_STATE,
            Err(e) => e,
        }
    }

    /// Copies the command line into `buf`; returns its full length.
    pub fn cmdline(self, buf: &mut [u8]) -> Result<usize> {
        let r = invoke(
            self.0,
            method::kernel::CMDLINE,
            [buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0],
        )?;
        Ok(r[0] as usize)
    }
}

/// A pool of free frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory(pub u64);

impl Memory {
    /// Makes an object of type `ty` (PAGE, ASPACE, PROCESS) in `dest`; for
    /// PROCESS `arg` is the slot of its address space.
    pub fn retype(self, ty: u64, dest: u64, arg: u64) -> Result<()> {
        invoke(self.0, method::memory::RETYPE, [ty, dest, arg, 0]).map(drop)
    }

    /// Free frames in the pool.
    pub fn free(self) -> Result<u64> {
        Ok(invoke(self.0, method::memory::FREE, [0; 4])?[0])
    }
}

/// An address space: page tables and a capability space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aspace(pub u64);

impl Aspace {
    pub fn map(self, page_slot: u64, vaddr: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::aspace::MAP, [page_slot, vaddr, rights, 0]).map(drop)
    }

    pub fn unmap(self, vaddr: u64) -> Result<()> {
        invoke(self.0, method::aspace::UNMAP, [vaddr, 0, 0, 0]).map(drop)
    }

    /// Copies the caller's capability `src` into slot `dest` of this space,
    /// keeping only `rights`.
    pub fn insert_cap(self, src: u64, dest: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::aspace::INSERT_CAP, [src, dest, rights, 0]).map(drop)
    }

    pub fn delete_cap(self, slot: u64) -> Result<()> {
        invoke(self.0, method::aspace::DELETE_CAP, [slot, 0, 0, 0]).map(drop)
    }

    /// Returns (rights, frame number) of the mapping at `vaddr`.
    pub fn lookup(self, vaddr: u64) -> Result<(u64, u64)> {
        let r = invoke(self.0, method::aspace::LOOKUP, [vaddr, 0, 0, 0])?;
        Ok((r[0], r[1]))
    }
}

/// What PROCESS.STATUS and PROCESS.WAIT report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: u64,
    /// Exit code (EXITED) or exception vector (FAULTED).
    pub code: u64,
    pub rip: u64,
    /// CR2 for a page fault, the error code for other exceptions.
    pub addr: u64,
}

impl Status {
    fn from_words(r: [u64; 4]) -> Status {
        Status {
            state: r[0],
            code: r[1],
            rip: r[2],
            addr: r[3],
        }
    }
}

/// The usual name of an exception vector.
pub fn vector_name(v: u64) -> &'static str {
    match v {
        0 => "#DE divide error",
        3 => "#BP breakpoint",
        6 => "#UD invalid opcode",
        13 => "#GP general protection",
        14 => "#PF page fault",
        16 => "#MF x87 error",
        17 => "#AC alignment check",
        19 => "#XM SIMD error",
        _ => "exception",
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state {
            state::EXITED => write!(f, "exited with code {}", self.code as i64),
            state::FAULTED => write!(
                f,
                "faulted: vector {} ({}) at rip {:#x}, addr/error {:#x}",
                self.code,
                vector_name(self.code),
                self.rip,
                self.addr
            ),
            s => f.write_str(state_name(s)),
        }
    }
}

/// A process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process(pub u64);

impl Process {
    pub fn set_regs(self, rip: u64, rsp: u64, rdi: u64, rsi: u64) -> Result<()> {
        invoke(self.0, method::process::SET_REGS, [rip, rsp, rdi, rsi]).map(drop)
    }

    pub fn start(self) -> Result<()> {
        invoke(self.0, method::process::START, [0; 4]).map(drop)
    }

    pub fn stop(self) -> Result<()> {
        invoke(self.0, method::process::STOP, [0; 4]).map(drop)
    }

    pub fn status(self) -> Result<Status> {
        invoke(self.0, method::process::STATUS, [0; 4]).map(Status::from_words)
    }

    /// Blocks until the process has exited or faulted.
    pub fn wait(self) -> Result<Status> {
        invoke(self.0, method::process::WAIT, [0; 4]).map(Status::from_words)
    }

    /// Ends the process; returns only when it is not the caller's own
    /// process, or on error.
    pub fn exit(self, code: u64) -> Result<()> {
        invoke(self.0, method::process::EXIT, [code, 0, 0, 0]).map(drop)
    }

    pub fn yield_now(self) -> Result<()> {
        invoke(self.0, method::process::YIELD, [0; 4]).map(drop)
    }

    /// Sets the name `ps` shows (at most 16 bytes are kept).
    pub fn set_name(self, name: &str) -> Result<()> {
        let (lo, hi) = pack_name(name);
        invoke(self.0, method::process::SET_NAME, [lo, hi, 0, 0]).map(drop)
    }

    pub fn set_priority(self, priority: u64) -> Result<()> {
        invoke(self.0, method::process::SET_PRIORITY, [priority, 0, 0, 0]).map(drop)
    }
}

/// The capabilities every program finds in its well-known slots.
pub const CONSOLE: Console = Console(slot::CONSOLE);
pub const KERNEL: Kernel = Kernel(slot::KERNEL);
pub const SELF_PROCESS: Process = Process(slot::SELF_PROCESS);
pub const SELF_ASPACE: Aspace = Aspace(slot::SELF_ASPACE);
pub const MEMORY: Memory = Memory(slot::MEMORY);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every value the generated module defines, keyed as "<table>.<NAME>"
    /// with the table names of keep.toml.
    fn generated() -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        macro_rules! add {
            ($table:literal, $module:ident: $($name:ident)*) => {
                $(m.insert(format!("{}.{}", $table, stringify!($name)), $module::$name);)*
            };
        }
        add!("error", err: OK INVALID_CAP WRONG_TYPE NO_RIGHTS INVALID_METHOD INVALID_ARG
             NO_MEMORY STALE WOULD_BLOCK BAD_STATE FAULT EXISTS NOT_MAPPED);
        add!("type", ty: NULL CONSOLE KERNEL MEMORY PAGE ASPACE PROCESS);
        add!("right", rights: READ WRITE EXEC ALL);
        add!("state", state: CREATED RUNNABLE BLOCKED STOPPED EXITED FAULTED);
        add!("info", info: VERSION MEM_TOTAL MEM_FREE CPU_FEATURES TSC_HZ TICKS KERNEL_BYTES
             TIMER_HZ);
        add!("cpu", cpu: NX PCID APIC TSC_DEADLINE PAGE1G SMEP SMAP INVPCID GLOBAL);
        add!("check", check: WX KERNEL_USER KERNEL_DATA_NX);
        add!("memtype", memtype: USABLE RESERVED KERNEL BOOT_IMAGE);
        add!("slot", slot: CONSOLE KERNEL SELF_PROCESS SELF_ASPACE MEMORY FIRST_FREE);
        add!("layout", layout: CSPACE_SLOTS PAGE_SIZE USER_TOP BOOT_IMAGE_VADDR ROOT_STACK_TOP
             ROOT_STACK_PAGES);
        macro_rules! add_methods {
            ($object:literal, $module:ident: $($name:ident)*) => {
                $(m.insert(
                    format!("method.{}.{}", $object, stringify!($name)),
                    method::$module::$name,
                );)*
            };
        }
        add_methods!("CONSOLE", console: WRITE READ);
        add_methods!("KERNEL", kernel: INFO MEMMAP PROCESS_INFO CHECK_PAGING POWEROFF DEBUG_EXIT
                     CMDLINE);
        add_methods!("MEMORY", memory: RETYPE FREE);
        add_methods!("ASPACE", aspace: MAP UNMAP INSERT_CAP DELETE_CAP LOOKUP);
        add_methods!("PROCESS", process: SET_REGS START STOP STATUS WAIT EXIT YIELD SET_NAME
                     SET_PRIORITY);
        m
    }

    fn definition() -> toml::Table {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../abi/keep.toml");
        let text = std::fs::read_to_string(path).expect("read abi/keep.toml");
        text.parse().expect("parse abi/keep.toml")
    }

    /// The generated bindings define exactly the names and values of the
    /// interface definition: nothing missing, nothing extra, nothing changed.
    #[test]
    fn generated_constants_match_definition() {
        let def = definition();
        let mut want = BTreeMap::new();
        for table in [
            "error", "type", "right", "state", "info", "cpu", "check", "memtype", "slot", "layout",
        ] {
            for e in def[table].as_array().unwrap() {
                let name = e["name"].as_str().unwrap();
                let value = e["value"].as_integer().unwrap() as u64;
                want.insert(format!("{table}.{name}"), value);
            }
        }
        for e in def["method"].as_array().unwrap() {
            let key = format!(
                "method.{}.{}",
                e["object"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            );
            want.insert(key, e["value"].as_integer().unwrap() as u64);
        }
        assert_eq!(generated(), want);
    }

    #[test]
    fn version_and_tag_mask_match_definition() {
        let def = definition();
        let v: Vec<u64> = def["meta"]["version"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_integer().unwrap() as u64)
            .collect();
        assert_eq!(VERSION, (v[0], v[1], v[2]));
        let mask = def["syscall"]["tag_method_mask"].as_integer().unwrap() as u64;
        assert_eq!(TAG_METHOD_MASK, mask);
    }

    #[test]
    fn names_match_definition() {
        let def = definition();
        for e in def["error"].as_array().unwrap() {
            let v = e["value"].as_integer().unwrap() as u64;
            assert_eq!(error_name(v), e["name"].as_str().unwrap());
        }
        for e in def["state"].as_array().unwrap() {
            let v = e["value"].as_integer().unwrap() as u64;
            assert_eq!(state_name(v), e["name"].as_str().unwrap());
        }
    }

    #[test]
    fn error_displays_its_name() {
        assert_eq!(Error::NOT_MAPPED.to_string(), "NOT_MAPPED");
        assert_eq!(Error(999).to_string(), "UNKNOWN_ERROR");
    }

    #[test]
    fn names_pack_little_endian() {
        let (lo, hi) = pack_name("ktest");
        assert_eq!(lo, u64::from_le_bytes(*b"ktest\0\0\0"));
        assert_eq!(hi, 0);
        let (lo, hi) = pack_name("a-very-long-process-name");
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&lo.to_le_bytes());
        b[8..].copy_from_slice(&hi.to_le_bytes());
        assert_eq!(name_str(&b), "a-very-long-proc");
    }

    #[test]
    fn status_displays_faults() {
        let s = Status {
            state: state::FAULTED,
            code: 14,
            rip: 0x1000,
            addr: 0,
        };
        assert_eq!(
            s.to_string(),
            "faulted: vector 14 (#PF page fault) at rip 0x1000, addr/error 0x0"
        );
        let s = Status {
            state: state::EXITED,
            code: 101,
            rip: 0,
            addr: 0,
        };
        assert_eq!(s.to_string(), "exited with code 101");
    }
}

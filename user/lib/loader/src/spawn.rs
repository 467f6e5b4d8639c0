//! Building a process from user space with kernel invocations.
//!
//! The loader makes an address space and a process from the caller's
//! kernel-memory account, gives the address space a cappage at capability
//! address 0, then for every page: retypes a PAGE, maps it writable at a
//! scratch address in the caller's own space to copy bytes in, unmaps it,
//! maps it into the child with its final rights and deletes the caller's
//! capability to it (the mapping keeps the frame alive), so a program of
//! any size needs only one spare slot at a time.  The child gets a stack,
//! the capabilities the caller grants, its own process and address space at
//! SELF_PROCESS and SELF_ASPACE, and its registers; starting it is left to
//! the caller.  [`Loader::destroy`] gives the process and address space
//! back to the account; data pages and cappages come from the memory pool
//! and are not returned.

use alloc::vec::Vec;
use core::fmt;

use keep_abi::{Account, Aspace, Error, Memory, Process, layout, rights, slot, ty};

use crate::program::{ElfError, Program};
use crate::{PAGE_SIZE, SlotPool};

/// Where the loader maps pages in the caller's own space while filling
/// them; nothing else may be mapped there.
pub const SCRATCH: u64 = 0x0000_6000_0000_0000;
/// Top of a child's stack (the same place as the root task's).
pub const STACK_TOP: u64 = layout::ROOT_STACK_TOP;
/// Pages of a child's stack.
pub const STACK_PAGES: u64 = 16;

/// A capability to copy into the child: the caller's slot `src` goes to
/// the child's slot `dest` with only `rights`.
#[derive(Clone, Copy, Debug)]
pub struct Grant {
    pub src: u64,
    pub dest: u64,
    pub rights: u64,
}

/// Bytes to map read-only into the child at a page-aligned address.
#[derive(Clone, Copy, Debug)]
pub struct Blob<'a> {
    pub vaddr: u64,
    pub data: &'a [u8],
}

/// What to load.
#[derive(Clone, Copy, Debug)]
pub struct Spec<'a> {
    /// Process name (the first 16 bytes are kept).
    pub name: &'a str,
    pub elf: &'a [u8],
    /// Initial rdi and rsi.
    pub arg0: u64,
    pub arg1: u64,
    pub grants: &'a [Grant],
    pub blob: Option<Blob<'a>>,
}

/// Pages of a child that a lazy load ([`Loader::load_lazy`]) left
/// unmapped: all zero, to be made on first touch by the child's pager (a
/// fault at `start..end` that finds no page gets a fresh one with `rights`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LazyRange {
    pub start: u64,
    pub end: u64,
    pub rights: u64,
}

impl LazyRange {
    /// The range holding `vaddr`, if any.
    pub fn find(ranges: &[LazyRange], vaddr: u64) -> Option<&LazyRange> {
        ranges.iter().find(|r| (r.start..r.end).contains(&vaddr))
    }
}

/// Adds the page at `vaddr` to `ranges`, growing the last range when the
/// page follows it with the same rights.
fn push_lazy(ranges: &mut Vec<LazyRange>, vaddr: u64, rights: u64) {
    if let Some(last) = ranges.last_mut()
        && last.end == vaddr
        && last.rights == rights
    {
        last.end += PAGE_SIZE;
        return;
    }
    ranges.push(LazyRange { start: vaddr, end: vaddr + PAGE_SIZE, rights });
}

/// Why a program could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Elf(ElfError),
    /// The caller has no free capability slot left.
    NoSlots,
    /// The blob's address is not page-aligned or its end leaves the user half.
    BadBlob {
        vaddr: u64,
    },
    /// An invocation failed.
    Kernel {
        op: &'static str,
        err: Error,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Elf(e) => write!(f, "bad ELF file: {e}"),
            LoadError::NoSlots => write!(f, "no free capability slot"),
            LoadError::BadBlob { vaddr } => {
                write!(
                    f,
                    "blob at {vaddr:#x} is misaligned or leaves the user half"
                )
            }
            LoadError::Kernel { op, err } => write!(f, "{op} failed: {err}"),
        }
    }
}

impl From<ElfError> for LoadError {
    fn from(e: ElfError) -> Self {
        LoadError::Elf(e)
    }
}

fn kernel(op: &'static str) -> impl FnOnce(Error) -> LoadError {
    move |err| LoadError::Kernel { op, err }
}

/// A process made by the loader; its capabilities live in the caller's
/// slots `process.0` and `aspace.0` until [`Loader::release`] or
/// [`Loader::destroy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Child {
    pub process: Process,
    pub aspace: Aspace,
}

/// Where a loader gets its data pages and cappages when not from a memory
/// pool: a space bank's client (`keep-spacebank`) implements it, so that a
/// program's pages are the bank's and go when the bank is destroyed.
pub trait FrameSource {
    /// Places a fresh PAGE or CAPPAGE (`ty`) capability in the caller's
    /// empty slot `dest`.
    fn retype(&mut self, ty: u64, dest: u64) -> Result<(), Error>;
}

/// Loads programs using the caller's memory pool (or a [`FrameSource`]),
/// kernel-memory account, own address space and free slots.
pub struct Loader<'p> {
    pub memory: Memory,
    pub account: Account,
    pub own: Aspace,
    pub scratch: u64,
    pub slots: &'p mut SlotPool,
    /// When set, pages and cappages come from here instead of `memory`.
    pub source: Option<&'p mut dyn FrameSource>,
}

impl<'p> Loader<'p> {
    /// A loader over the well-known MEMORY, ACCOUNT and SELF_ASPACE slots.
    pub fn new(slots: &'p mut SlotPool) -> Loader<'p> {
        Loader {
            memory: keep_abi::MEMORY,
            account: keep_abi::ACCOUNT,
            own: keep_abi::SELF_ASPACE,
            scratch: SCRATCH,
            slots,
            source: None,
        }
    }

    /// A loader whose address space and process come from `account` and
    /// whose pages and cappages come from `source` (a space bank).
    pub fn with_source(slots: &'p mut SlotPool, account: Account, source: &'p mut dyn FrameSource) -> Loader<'p> {
        let mut l = Loader::new(slots);
        l.account = account;
        l.source = Some(source);
        l
    }

    fn retype(&mut self, ty: u64, dest: u64) -> Result<(), Error> {
        match self.source.as_mut() {
            Some(s) => s.retype(ty, dest),
            None => self.memory.retype(ty, dest),
        }
    }

    /// Validates and loads `spec`; the child is CREATED with its registers
    /// set.  A bad ELF file is refused before anything is made.
    pub fn load(&mut self, spec: &Spec) -> Result<Child, LoadError> {
        let program = Program::parse(spec.elf)?;
        self.load_into(spec, &program, None)
    }

    /// As [`Loader::load`], but the pages that hold only zeros (the .bss
    /// beyond the file's bytes, and the stack below its top page) are left
    /// unmapped and returned as ranges: the caller makes them on first
    /// touch, as the child's pager.  The kernel does not fault user memory
    /// in for an invocation (a buffer there fails with FAULT), so a program
    /// loaded this way must touch a zero page before it hands it to the
    /// kernel; keep-rt touches its IPC buffer at start-up.
    pub fn load_lazy(&mut self, spec: &Spec) -> Result<(Child, Vec<LazyRange>), LoadError> {
        let program = Program::parse(spec.elf)?;
        let mut lazy = Vec::new();
        let child = self.load_into(spec, &program, Some(&mut lazy))?;
        Ok((child, lazy))
    }

    fn load_into(&mut self, spec: &Spec, program: &Program, lazy: Option<&mut Vec<LazyRange>>) -> Result<Child, LoadError> {
        if let Some(b) = spec.blob {
            let end = b.vaddr.checked_add(b.data.len() as u64);
            if !b.vaddr.is_multiple_of(PAGE_SIZE) || end.is_none_or(|e| e > layout::USER_TOP) {
                return Err(LoadError::BadBlob { vaddr: b.vaddr });
            }
        }
        let child = self.create()?;
        match self.populate(&child, program, spec, lazy) {
            Ok(()) => Ok(child),
            Err(e) => {
                let _ = self.destroy(child);
                Err(e)
            }
        }
    }

    fn populate(&mut self, child: &Child, program: &Program, spec: &Spec, mut lazy: Option<&mut Vec<LazyRange>>) -> Result<(), LoadError> {
        for page in program.pages() {
            let (bytes, offset) = match page.copy {
                Some(c) => (
                    &program.data[c.file_offset..c.file_offset + c.len],
                    c.page_offset,
                ),
                None => match lazy.as_deref_mut() {
                    Some(ranges) => {
                        push_lazy(ranges, page.vaddr, page.rights);
                        continue;
                    }
                    None => (&[][..], 0),
                },
            };
            self.add_page(child, page.vaddr, page.rights, bytes, offset)?;
        }
        // The stack from its lowest page up, so that a lazy range grows.
        for i in (1..=STACK_PAGES).rev() {
            let vaddr = STACK_TOP - i * PAGE_SIZE;
            let rw = rights::READ | rights::WRITE;
            match lazy.as_deref_mut() {
                // The top page is used at once: made now, not by a fault.
                Some(ranges) if i > 1 => push_lazy(ranges, vaddr, rw),
                _ => self.add_page(child, vaddr, rw, &[], 0)?,
            }
        }
        if let Some(b) = spec.blob {
            for (i, chunk) in b.data.chunks(PAGE_SIZE as usize).enumerate() {
                let vaddr = b.vaddr + i as u64 * PAGE_SIZE;
                self.add_page(child, vaddr, rights::READ, chunk, 0)?;
            }
        }
        for g in spec.grants {
            child
                .aspace
                .insert_cap(g.src, g.dest, g.rights)
                .map_err(kernel("INSERT_CAP"))?;
        }
        child
            .process
            .set_name(spec.name)
            .map_err(kernel("SET_NAME"))?;
        child
            .process
            .set_regs(program.entry, STACK_TOP, spec.arg0, spec.arg1)
            .map_err(kernel("SET_REGS"))
    }

    fn take_slot(&mut self) -> Result<u64, LoadError> {
        self.slots.alloc().ok_or(LoadError::NoSlots)
    }

    /// Makes an empty address space with a cappage at capability address 0
    /// and a CREATED process in it; the child holds its own process and
    /// address space at SELF_PROCESS and SELF_ASPACE.
    pub fn create(&mut self) -> Result<Child, LoadError> {
        let a = self.take_slot()?;
        if let Err(e) = self.account.create_aspace(a) {
            self.slots.free(a);
            return Err(kernel("CREATE_ASPACE")(e));
        }
        let p = match self.take_slot() {
            Ok(p) => p,
            Err(e) => {
                let _ = self.account.destroy(a);
                self.drop_slot(a);
                return Err(e);
            }
        };
        if let Err(e) = self.account.create_process(a, p) {
            self.slots.free(p);
            let _ = self.account.destroy(a);
            self.drop_slot(a);
            return Err(kernel("CREATE_PROCESS")(e));
        }
        let child = Child {
            process: Process(p),
            aspace: Aspace(a),
        };
        let setup = self.add_cappage(&child, 0).and_then(|_| {
            child
                .aspace
                .insert_cap(p, slot::SELF_PROCESS, 0)
                .and_then(|_| child.aspace.insert_cap(a, slot::SELF_ASPACE, 0))
                .map_err(kernel("INSERT_CAP"))
        });
        if let Err(e) = setup {
            let _ = self.destroy(child);
            return Err(e);
        }
        Ok(child)
    }

    /// Maps a fresh cappage at capability address `cap_addr` of the child.
    pub fn add_cappage(&mut self, child: &Child, cap_addr: u64) -> Result<(), LoadError> {
        let cp = self.take_slot()?;
        let r = self
            .retype(ty::CAPPAGE, cp)
            .map_err(kernel("RETYPE CAPPAGE"))
            .and_then(|_| {
                child
                    .aspace
                    .map_cappage(cp, cap_addr)
                    .map_err(kernel("MAP_CAPPAGE"))
            });
        // The mapping keeps the cappage; the caller needs no capability.
        self.drop_slot(cp);
        r
    }

    /// Maps a fresh page at `vaddr` in the child with `rights`, holding
    /// `bytes` at `offset` and zeros elsewhere.
    pub fn add_page(
        &mut self,
        child: &Child,
        vaddr: u64,
        rights: u64,
        bytes: &[u8],
        offset: usize,
    ) -> Result<(), LoadError> {
        assert!(offset + bytes.len() <= PAGE_SIZE as usize);
        let page = self.take_slot()?;
        let result = self.fill_and_map(page, child, vaddr, rights, bytes, offset);
        self.drop_slot(page);
        result
    }

    fn fill_and_map(
        &mut self,
        page: u64,
        child: &Child,
        vaddr: u64,
        rights: u64,
        bytes: &[u8],
        offset: usize,
    ) -> Result<(), LoadError> {
        self.retype(ty::PAGE, page)
            .map_err(kernel("RETYPE PAGE"))?;
        if !bytes.is_empty() {
            self.own
                .map(page, self.scratch, rights::READ | rights::WRITE)
                .map_err(kernel("MAP scratch"))?;
            // SAFETY: the page was just mapped writable at `scratch`, which
            // nothing else in this program uses; the range lies in the page.
            unsafe {
                let dst = (self.scratch as *mut u8).add(offset);
                core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            }
            self.own
                .unmap(self.scratch)
                .map_err(kernel("UNMAP scratch"))?;
        }
        child.aspace.map(page, vaddr, rights).map_err(kernel("MAP"))
    }

    /// Deletes the caller's capability in `slot` and hands the slot back.
    fn drop_slot(&mut self, slot: u64) {
        // An empty slot (a failed RETYPE) is fine to "delete".
        let _ = self.own.delete_cap(slot);
        self.slots.free(slot);
    }

    /// Gives back the caller's slots for `child` (the process keeps running).
    pub fn release(&mut self, child: Child) {
        self.drop_slot(child.process.0);
        self.drop_slot(child.aspace.0);
    }

    /// Destroys the child's process and address space (their frames go
    /// back to the account) and gives back the caller's slots.
    pub fn destroy(&mut self, child: Child) -> Result<(), LoadError> {
        let p = self
            .account
            .destroy(child.process.0)
            .map_err(kernel("DESTROY process"));
        let a = self
            .account
            .destroy(child.aspace.0)
            .map_err(kernel("DESTROY aspace"));
        self.release(child);
        p.and(a)
    }
}

// generated from abi/keep.toml by tools/abigen.py; do not edit.
#![allow(dead_code)]

pub const VERSION: (u64, u64, u64) = (0, 1, 0);
pub const TAG_METHOD_MASK: u64 = 0xffff;

/// Error codes
pub mod err {
    /// The invocation succeeded.
    pub const OK: u64 = 0x0;
    /// The capability address names an empty slot or lies outside the capability space.
    pub const INVALID_CAP: u64 = 0x1;
    /// A capability argument has the wrong object type.
    pub const WRONG_TYPE: u64 = 0x2;
    /// The capability lacks a right the method needs.
    pub const NO_RIGHTS: u64 = 0x3;
    /// The object type has no method with this number.
    pub const INVALID_METHOD: u64 = 0x4;
    /// An argument is out of range or malformed.
    pub const INVALID_ARG: u64 = 0x5;
    /// The memory object has no free frame left.
    pub const NO_MEMORY: u64 = 0x6;
    /// The capability refers to an object that has been destroyed (version mismatch).
    pub const STALE: u64 = 0x7;
    /// A non-blocking operation could not complete at once.
    pub const WOULD_BLOCK: u64 = 0x8;
    /// The object is not in a state that allows the method.
    pub const BAD_STATE: u64 = 0x9;
    /// A user buffer is not mapped with the access the method needs.
    pub const FAULT: u64 = 0xa;
    /// The destination slot or virtual address is already in use.
    pub const EXISTS: u64 = 0xb;
    /// Nothing is mapped at the given virtual address.
    pub const NOT_MAPPED: u64 = 0xc;
}

/// Object types
pub mod ty {
    /// The null capability (all-zero); every invocation fails with INVALID_CAP.
    pub const NULL: u64 = 0x0;
    /// The kernel's debug console on the first serial port.
    pub const CONSOLE: u64 = 0x1;
    /// Control of the machine: information, the memory map, power-off, self-checks. Given only to the root task.
    pub const KERNEL: u64 = 0x2;
    /// A pool of free physical frames from which objects are made (retyped).
    pub const MEMORY: u64 = 0x3;
    /// One 4 KiB data frame; mapped into address spaces.
    pub const PAGE: u64 = 0x4;
    /// An address space: page tables plus a capability space.
    pub const ASPACE: u64 = 0x5;
    /// A process: registers, an address space, a priority and a state.
    pub const PROCESS: u64 = 0x6;
}

/// Rights
pub mod rights {
    /// Read: map readable; query.
    pub const READ: u64 = 0x1;
    /// Write: map writable; change the object.
    pub const WRITE: u64 = 0x2;
    /// Execute: map executable.
    pub const EXEC: u64 = 0x4;
    /// Every right.
    pub const ALL: u64 = 0x7;
}

/// Process states
pub mod state {
    /// Made, not yet started.
    pub const CREATED: u64 = 0x0;
    /// Running or ready to run.
    pub const RUNNABLE: u64 = 0x1;
    /// Waiting in an invocation that restarts when it can complete.
    pub const BLOCKED: u64 = 0x2;
    /// Stopped by PROCESS.STOP; START resumes it.
    pub const STOPPED: u64 = 0x3;
    /// Ended itself with PROCESS.EXIT.
    pub const EXITED: u64 = 0x4;
    /// Stopped by an exception it had no handler for.
    pub const FAULTED: u64 = 0x5;
}

/// KERNEL.INFO keys
pub mod info {
    /// Kernel version: major << 32 | minor << 16 | patch.
    pub const VERSION: u64 = 0x0;
    /// Bytes of usable RAM in the memory map.
    pub const MEM_TOTAL: u64 = 0x1;
    /// Bytes of RAM in free frames.
    pub const MEM_FREE: u64 = 0x2;
    /// Bit mask of CPU_* features the kernel found and uses.
    pub const CPU_FEATURES: u64 = 0x3;
    /// Time-stamp counter frequency measured at boot (Hz).
    pub const TSC_HZ: u64 = 0x4;
    /// Timer interrupts since boot.
    pub const TICKS: u64 = 0x5;
    /// Size of the kernel image in memory (bytes).
    pub const KERNEL_BYTES: u64 = 0x6;
    /// Frequency of the timer interrupt (Hz).
    pub const TIMER_HZ: u64 = 0x7;
}

/// CPU feature bits
pub mod cpu {
    /// No-execute pages (EFER.NXE).
    pub const NX: u64 = 0x1;
    /// Process-context identifiers (CR4.PCIDE).
    pub const PCID: u64 = 0x2;
    /// Local APIC.
    pub const APIC: u64 = 0x4;
    /// TSC-deadline timer mode.
    pub const TSC_DEADLINE: u64 = 0x8;
    /// 1 GiB pages.
    pub const PAGE1G: u64 = 0x10;
    /// Supervisor-mode execution prevention (CR4.SMEP).
    pub const SMEP: u64 = 0x20;
    /// Supervisor-mode access prevention (CR4.SMAP).
    pub const SMAP: u64 = 0x40;
    /// The INVPCID instruction.
    pub const INVPCID: u64 = 0x80;
    /// Global pages (CR4.PGE).
    pub const GLOBAL: u64 = 0x100;
}

/// KERNEL.CHECK_PAGING selectors
pub mod check {
    /// Mappings that are both writable and executable, in the kernel half and the caller's half.
    pub const WX: u64 = 0x0;
    /// Kernel-half mappings reachable from user mode (U/S set at any level).
    pub const KERNEL_USER: u64 = 0x1;
    /// Kernel mappings outside the kernel's code that lack NX.
    pub const KERNEL_DATA_NX: u64 = 0x2;
}

/// Memory-map entry types
pub mod memtype {
    /// RAM the kernel hands out.
    pub const USABLE: u64 = 0x1;
    /// Not RAM or not usable.
    pub const RESERVED: u64 = 0x2;
    /// RAM holding the kernel image.
    pub const KERNEL: u64 = 0x3;
    /// RAM holding the boot image (boot modules).
    pub const BOOT_IMAGE: u64 = 0x4;
}

/// Well-known capability slots
pub mod slot {
    /// The debug console.
    pub const CONSOLE: u64 = 0x1;
    /// The kernel-control capability (root task and the test suite).
    pub const KERNEL: u64 = 0x2;
    /// The program's own process.
    pub const SELF_PROCESS: u64 = 0x3;
    /// The program's own address space.
    pub const SELF_ASPACE: u64 = 0x4;
    /// A memory pool.
    pub const MEMORY: u64 = 0x5;
    /// The first slot that is not reserved by convention.
    pub const FIRST_FREE: u64 = 0x10;
}

/// Layout constants
pub mod layout {
    /// Capability slots per address space in this version (the sparse MMU-backed space comes with the capability kernel).
    pub const CSPACE_SLOTS: u64 = 0x100;
    /// Size of a page.
    pub const PAGE_SIZE: u64 = 0x1000;
    /// First address above the user half.
    pub const USER_TOP: u64 = 0x800000000000;
    /// Where the kernel maps the boot image (read-only) into the root task; rdi holds this address and rsi the image size at entry.
    pub const BOOT_IMAGE_VADDR: u64 = 0x100000000000;
    /// Top of the root task's initial stack.
    pub const ROOT_STACK_TOP: u64 = 0x7ff000000000;
    /// Pages of the root task's initial stack.
    pub const ROOT_STACK_PAGES: u64 = 0x40;
}

/// Method numbers, one module per object type.
pub mod method {
    pub mod console {
        /// Write len bytes (at most 4096) from the caller's memory at ptr to the serial console.
        pub const WRITE: u64 = 1;
        /// Read up to len bytes (1 to 4096) of console input into ptr. Blocks until at least one byte is there, unless nonblocking is 1 (then WOULD_BLOCK). The kernel does not echo.
        pub const READ: u64 = 2;
    }
    pub mod kernel {
        /// Return the value of an INFO_* key.
        pub const INFO: u64 = 1;
        /// Return memory-map entry index (sorted by base, not overlapping) and the number of entries.
        pub const MEMMAP: u64 = 2;
        /// Describe the process (running or ended: processes are not destroyed in this version) with the smallest process number >= index: pid in bits 0-31, state in 32-39, priority in 40-47; its name (16 bytes, little-endian); next is the index to ask for next (0 when none is left). INVALID_ARG when there is none.
        pub const PROCESS_INFO: u64 = 3;
        /// Walk the page tables of the kernel and of the caller's address space and count violations of one CHECK_* invariant, and the mappings checked.
        pub const CHECK_PAGING: u64 = 4;
        /// Power the machine off (ACPI S5). Does not return.
        pub const POWEROFF: u64 = 5;
        /// Leave QEMU through isa-debug-exit with status (code << 1) | 1; if the device is absent, power off.
        pub const DEBUG_EXIT: u64 = 6;
        /// Copy the kernel command line (at most len bytes) to ptr; return its full length.
        pub const CMDLINE: u64 = 7;
    }
    pub mod memory {
        /// Make a new object of type PAGE, ASPACE or PROCESS from free frames and place a capability with all rights in dest_slot of the caller's capability space. For PROCESS, arg is the slot of the address-space capability it runs in.
        pub const RETYPE: u64 = 1;
        /// Return the number of free frames.
        pub const FREE: u64 = 2;
    }
    pub mod aspace {
        /// Map the page named by page_slot at vaddr (page-aligned, user half) with rights (READ required; WRITE and EXEC not both; never more than the page capability has).
        pub const MAP: u64 = 1;
        /// Remove the mapping at vaddr.
        pub const UNMAP: u64 = 2;
        /// Copy the capability in src_slot of the caller's capability space into dest_slot of this address space's capability space, keeping only the given rights.
        pub const INSERT_CAP: u64 = 3;
        /// Empty slot of this address space's capability space.
        pub const DELETE_CAP: u64 = 4;
        /// Return the rights of the mapping at vaddr and a frame number for identity comparison.
        pub const LOOKUP: u64 = 5;
    }
    pub mod process {
        /// Set the instruction pointer, stack pointer and the two first argument registers of a process that is not running (CREATED or STOPPED; BAD_STATE otherwise, checked before the arguments). rip and rsp must lie in the user half.
        pub const SET_REGS: u64 = 1;
        /// Make a CREATED or STOPPED process runnable.
        pub const START: u64 = 2;
        /// Stop a runnable or blocked process; a blocked invocation restarts when the process is started again.
        pub const STOP: u64 = 3;
        /// Return the state, the exit code or exception vector, and for a FAULTED process the faulting rip and address (CR2 for a page fault, error code otherwise).
        pub const STATUS: u64 = 4;
        /// Block until the process has EXITED or FAULTED, then return what STATUS returns. BAD_STATE for a process waiting on itself.
        pub const WAIT: u64 = 5;
        /// End the process with an exit code (normally invoked on one's own process). Does not return to the caller when it is the caller.
        pub const EXIT: u64 = 6;
        /// Give up the rest of the caller's time slice to the next process at the same priority. Only on one's own process (INVALID_ARG otherwise).
        pub const YIELD: u64 = 7;
        /// Set the 16-byte name shown by ps.
        pub const SET_NAME: u64 = 8;
        /// Set the priority (0 lowest to 31 highest).
        pub const SET_PRIORITY: u64 = 9;
    }
}

/// The name of an error code, for messages.
pub fn error_name(e: u64) -> &'static str {
    match e {
        0x0 => "OK",
        0x1 => "INVALID_CAP",
        0x2 => "WRONG_TYPE",
        0x3 => "NO_RIGHTS",
        0x4 => "INVALID_METHOD",
        0x5 => "INVALID_ARG",
        0x6 => "NO_MEMORY",
        0x7 => "STALE",
        0x8 => "WOULD_BLOCK",
        0x9 => "BAD_STATE",
        0xa => "FAULT",
        0xb => "EXISTS",
        0xc => "NOT_MAPPED",
        _ => "UNKNOWN_ERROR",
    }
}

/// The name of a process state, for messages.
pub fn state_name(s: u64) -> &'static str {
    match s {
        0x0 => "CREATED",
        0x1 => "RUNNABLE",
        0x2 => "BLOCKED",
        0x3 => "STOPPED",
        0x4 => "EXITED",
        0x5 => "FAULTED",
        _ => "UNKNOWN",
    }
}

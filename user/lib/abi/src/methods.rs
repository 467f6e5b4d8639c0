// generated from abi/keep.toml by tools/abigen.py; do not edit.
//! Typed wrappers of the kernel objects' methods, one function per
//! method of abi/keep.toml (arguments and results as it lists them).

use crate::{invoke, method, Result};

/// The kernel's debug console on the first serial port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Console(pub u64);

impl Console {
    /// CONSOLE.WRITE (1, needs WRITE): Write len bytes (at most 4096) from the caller's memory at ptr to the serial console.
    /// Results: (written).
    #[inline]
    pub fn write_raw(self, ptr: u64, len: u64) -> Result<u64> {
        invoke(self.0, method::console::WRITE, [ptr, len, 0, 0]).map(|r| r[0])
    }

    /// CONSOLE.READ (2, needs READ): Read up to len bytes (1 to 4096) of console input into ptr. Blocks until at least one byte is there, unless nonblocking is 1 (then WOULD_BLOCK). The kernel does not echo.
    /// Results: (read).
    #[inline]
    pub fn read_raw(self, ptr: u64, len: u64, nonblocking: u64) -> Result<u64> {
        invoke(self.0, method::console::READ, [ptr, len, nonblocking, 0]).map(|r| r[0])
    }
}

/// Control of the machine: information, the memory map, power-off, self-checks. Given only to the root task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(pub u64);

impl Kernel {
    /// KERNEL.INFO (1, needs READ): Return the value of an INFO_* key.
    /// Results: (value).
    #[inline]
    pub fn info(self, key: u64) -> Result<u64> {
        invoke(self.0, method::kernel::INFO, [key, 0, 0, 0]).map(|r| r[0])
    }

    /// KERNEL.MEMMAP (2, needs READ): Return memory-map entry index (sorted by base, not overlapping) and the number of entries.
    /// Results: (base, length, type, count).
    #[inline]
    pub fn memmap_raw(self, index: u64) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::kernel::MEMMAP, [index, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// KERNEL.PROCESS_INFO (3, needs READ): Describe the existing process with the smallest process id >= index: pid in bits 0-31, state in 32-39, priority in 40-47; its name (16 bytes, little-endian); next is the index to ask for next (0 when none is left). INVALID_ARG when there is none. Destroyed processes are gone.
    /// Results: (pid_state_prio, name_lo, name_hi, next).
    #[inline]
    pub fn process_info_raw(self, index: u64) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::kernel::PROCESS_INFO, [index, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// KERNEL.CHECK_PAGING (4, needs READ): Walk the page tables of the kernel and of the caller's address space and count violations of one CHECK_* invariant, and the mappings checked.
    /// Results: (violations, checked).
    #[inline]
    pub fn check_paging(self, check: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::kernel::CHECK_PAGING, [check, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// KERNEL.POWEROFF (5, needs WRITE): Power the machine off (ACPI S5). Does not return.
    /// Results: (-).
    #[inline]
    pub fn poweroff_raw(self) -> Result<()> {
        invoke(self.0, method::kernel::POWEROFF, [0, 0, 0, 0]).map(drop)
    }

    /// KERNEL.DEBUG_EXIT (6, needs WRITE): Leave QEMU through isa-debug-exit with status (code << 1) | 1; if the device is absent, power off.
    /// Results: (-).
    #[inline]
    pub fn debug_exit_raw(self, code: u64) -> Result<()> {
        invoke(self.0, method::kernel::DEBUG_EXIT, [code, 0, 0, 0]).map(drop)
    }

    /// KERNEL.CMDLINE (7, needs READ): Copy the kernel command line (at most len bytes) to ptr; return its full length.
    /// Results: (length).
    #[inline]
    pub fn cmdline_raw(self, ptr: u64, len: u64) -> Result<u64> {
        invoke(self.0, method::kernel::CMDLINE, [ptr, len, 0, 0]).map(|r| r[0])
    }

    /// KERNEL.CHECK_INVARIANTS (8, needs READ): Check the kernel's own invariants (run queues, send queues, process table, frame counts of every account and of the memory pool, capability segment tables) and return the number of violations found (each is printed) and of items checked.
    /// Results: (violations, checked).
    #[inline]
    pub fn check_invariants(self) -> Result<(u64, u64)> {
        invoke(self.0, method::kernel::CHECK_INVARIANTS, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// KERNEL.SET_SEAL_KEY (10, needs WRITE): Replace the keys that seal exported processes by keys derived from the 32 bytes at ptr, so that what is sealed under a key opens under the same key at a later boot (docs/persistence.md, "The seal and its key"). BAD_STATE while any process is exported (its export would never open again).
    /// Results: (-).
    #[inline]
    pub fn set_seal_key_raw(self, ptr: u64) -> Result<()> {
        invoke(self.0, method::kernel::SET_SEAL_KEY, [ptr, 0, 0, 0]).map(drop)
    }

    /// KERNEL.INTERRUPT_STATS (9, needs READ): Count the interrupts that arrived at vectors nothing owns since boot: low, those at vectors 0-31 (where the CPU's exceptions are; a device's message can name any vector, and the kernel tells such an interrupt from an exception by the local APIC's in-service bit, acknowledges it and goes on with what ran), low_vectors, a bit for each such vector seen, and unowned, those at vectors 32-255 that no interrupt line or kernel handler uses.
    /// Results: (low, low_vectors, unowned).
    #[inline]
    pub fn interrupt_stats(self) -> Result<(u64, u64, u64)> {
        invoke(self.0, method::kernel::INTERRUPT_STATS, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2]))
    }

    /// KERNEL.COVERAGE (11, needs READ): In the coverage build of the kernel (make KCOV=1, docs/coverage.md): copy the first len bytes (at most bytes) of the kernel's edge bitmap to ptr, return the number of bits set (edges) and the bitmap's size (bytes); with clear 1, then empty it. Each bit is a pair of basic blocks of the kernel's C code that ran one after the other (a hash of the two). Then set what the bitmap records from now on: with scope 0, the whole kernel (as at boot); with scope 1, only the caller's own system calls, from their entry until the kernel leaves them or runs another process (not interrupts, exceptions, other processes' calls and faults or the idle loop; the caller's destruction sets scope 0). BAD_STATE in the default build, which has no bitmap; INVALID_ARG if clear or scope is neither 0 nor 1 (nothing changes then).
    /// Results: (edges, bytes).
    #[inline]
    pub fn coverage(self, ptr: u64, len: u64, clear: u64, scope: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::kernel::COVERAGE, [ptr, len, clear, scope]).map(|r| (r[0], r[1]))
    }
}

/// A pool of free physical frames: data pages and cappages are made from it, and kernel-memory accounts are funded from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory(pub u64);

impl Memory {
    /// MEMORY.RETYPE (1, needs WRITE): Make a zeroed frame of type PAGE or CAPPAGE and place a capability with all rights (READ, WRITE, EXEC) at dest (which must be empty) in the caller's capability space. The capability's pool decides where the frame comes from: the general pool, or the persistent pool (slot PERSISTENT_MEMORY), which is BAD_STATE while it is shut (from boot until CHECKPOINT.OPEN or CHECKPOINT.RESUME).
    /// Results: (-).
    #[inline]
    pub fn retype(self, type_: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::memory::RETYPE, [type_, dest, 0, 0]).map(drop)
    }

    /// MEMORY.FREE (2, needs READ): Return the number of free frames in the pool (the persistent pool's while it is shut: those not restored).
    /// Results: (frames).
    #[inline]
    pub fn free(self) -> Result<u64> {
        invoke(self.0, method::memory::FREE, [0, 0, 0, 0]).map(|r| r[0])
    }

    /// MEMORY.DONATE (3, needs WRITE): Move frames (1 to 65536) free frames from the pool into the kernel-memory account named by the account capability (which needs WRITE). NO_MEMORY if the pool has fewer; nothing moves then. It goes in parts of MOVE_FRAMES frames: after each part the frames argument (r8) holds the frames still to move and the invocation restarts from the system call, so interrupts are taken in between; each restart is the DONATE of the rest, checked as a new one (a part that finds the pool short, because another task took frames meanwhile, is NO_MEMORY with the frames moved so far in the account and frames saying how many did not move). An account takes frames only from the pool its own frame came from (INVALID_ARG for the other), so that everything a persistent account makes is in the persistent pool; BAD_STATE from the persistent pool while it is shut.
    /// Results: (-).
    #[inline]
    pub fn donate(self, account: u64, frames: u64) -> Result<()> {
        invoke(self.0, method::memory::DONATE, [account, frames, 0, 0]).map(drop)
    }

    /// MEMORY.CREATE_ACCOUNT (4, needs WRITE): Make an empty kernel-memory account (its own frame comes from the pool) and place a capability with all rights at dest. An account from the persistent pool is persistent: it is funded from that pool only, and its processes take their numbers from the persistent range (PERSISTENT_NUMBER_PAGES); BAD_STATE from the persistent pool while it is shut.
    /// Results: (-).
    #[inline]
    pub fn create_account(self, dest: u64) -> Result<()> {
        invoke(self.0, method::memory::CREATE_ACCOUNT, [dest, 0, 0, 0]).map(drop)
    }

    /// MEMORY.RECLAIM (5, needs WRITE): Destroy the PAGE or CAPPAGE named by frame (which needs WRITE): raise its version so that every copy is STALE, clear the slot, and give the frame back to the pool (a cappage's capabilities are discarded). IN_USE while it is mapped in any address space or capability space; nothing changes then.
    /// Results: (-).
    #[inline]
    pub fn reclaim(self, frame: u64) -> Result<()> {
        invoke(self.0, method::memory::RECLAIM, [frame, 0, 0, 0]).map(drop)
    }

    /// MEMORY.REVOKE (6, needs WRITE): Destroy the PAGE or CAPPAGE named by frame (which needs WRITE) wherever it is mapped: first remove every mapping of it from every address space, capability space and DMA domain (a search of all of them: for space banks, not for fast paths; the IOMMU's caches are invalidated), then do what RECLAIM does. Returns how many mappings were removed. The search goes through the address spaces in parts of REVOKE_TABLES page tables; after each part the invocation restarts from the system call and goes on where it stopped, so interrupts are taken in between. While it is under way the frame is mapped nowhere new (ASPACE.MAP, MAP_CAPPAGE and DMA_DOMAIN.MAP are IN_USE); a revoke its caller gives up half-way (it is destroyed) leaves the frame with the mappings not yet removed, and it may be mapped again.
    /// Results: (mappings).
    #[inline]
    pub fn revoke(self, frame: u64) -> Result<u64> {
        invoke(self.0, method::memory::REVOKE, [frame, 0, 0, 0]).map(|r| r[0])
    }
}

/// An address space: page tables for data plus a sparse capability space of cappages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aspace(pub u64);

impl Aspace {
    /// ASPACE.MAP (1, needs WRITE): Map the PAGE named by page at vaddr (page-aligned, user half) with rights (READ required; WRITE and EXEC not both; never more than the page capability has); offset must be 0. If page names a DEVMEM capability, map its page number offset instead, uncached (INVALID_ARG beyond the range; IN_USE for RAM or a device the kernel keeps). page may be a WRAPPER standing for a DEVMEM capability (for no other type: WRONG_TYPE): destroying the wrapper unmaps the page again; NO_MEMORY if the wrapper already has WRAPPER_DEVICE_MAPS pages mapped through it. A CAPPAGE is WRONG_TYPE: capabilities are never user-accessible. Page tables come from the address space's account. IN_USE while a MEMORY.REVOKE of the page is under way.
    /// Results: (-).
    #[inline]
    pub fn map_raw(self, page: u64, vaddr: u64, rights: u64, offset: u64) -> Result<()> {
        invoke(self.0, method::aspace::MAP, [page, vaddr, rights, offset]).map(drop)
    }

    /// ASPACE.UNMAP (2, needs WRITE): Remove the data mapping at vaddr.
    /// Results: (-).
    #[inline]
    pub fn unmap(self, vaddr: u64) -> Result<()> {
        invoke(self.0, method::aspace::UNMAP, [vaddr, 0, 0, 0]).map(drop)
    }

    /// ASPACE.LOOKUP (3, needs READ): Return the rights of the data mapping at vaddr and a frame number for identity comparison.
    /// Results: (rights, frame).
    #[inline]
    pub fn lookup(self, vaddr: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::aspace::LOOKUP, [vaddr, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// ASPACE.MAP_CAPPAGE (4, needs WRITE): Map the CAPPAGE named by cappage into this capability space at cap_addr (a multiple of CAPPAGE_SLOTS below CAP_SPACE_SLOTS), so that its 256 slots have the addresses cap_addr to cap_addr + 255. A PAGE is WRONG_TYPE: data pages never hold capabilities. The segment's page tables come from the address space's account. IN_USE while a MEMORY.REVOKE of the cappage is under way.
    /// Results: (-).
    #[inline]
    pub fn map_cappage(self, cappage: u64, cap_addr: u64) -> Result<()> {
        invoke(self.0, method::aspace::MAP_CAPPAGE, [cappage, cap_addr, 0, 0]).map(drop)
    }

    /// ASPACE.UNMAP_CAPPAGE (5, needs WRITE): Remove the cappage mapped at cap_addr (a multiple of CAPPAGE_SLOTS). Its capabilities stay in the cappage.
    /// Results: (-).
    #[inline]
    pub fn unmap_cappage(self, cap_addr: u64) -> Result<()> {
        invoke(self.0, method::aspace::UNMAP_CAPPAGE, [cap_addr, 0, 0, 0]).map(drop)
    }

    /// ASPACE.INSERT_CAP (6, needs WRITE): Copy the capability at src in the caller's space to the empty slot dest of this capability space, with its rights reduced by the rights mask (0 keeps them). A RETURN capability is never copied: INVALID_ARG.
    /// Results: (-).
    #[inline]
    pub fn insert_cap(self, src: u64, dest: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::aspace::INSERT_CAP, [src, dest, rights, 0]).map(drop)
    }

    /// ASPACE.EXTRACT_CAP (7, needs READ): Copy the capability at src of this capability space to the empty slot dest of the caller's space, reduced by the rights mask. Through a weak ASPACE capability the copy is weakened: a PAGE keeps only READ, a CAPPAGE or ASPACE becomes weak, anything else arrives as the null capability. A RETURN capability is never copied: INVALID_ARG.
    /// Results: (-).
    #[inline]
    pub fn extract_cap(self, src: u64, dest: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::aspace::EXTRACT_CAP, [src, dest, rights, 0]).map(drop)
    }

    /// ASPACE.DELETE_CAP (8, needs WRITE): Empty slot of this capability space (INVALID_CAP if it is already empty). If it held the return capability of a call still waiting for its reply, that call ends at once with NO_REPLY (a fault message's: the process stops as FAULTED).
    /// Results: (-).
    #[inline]
    pub fn delete_cap(self, slot: u64) -> Result<()> {
        invoke(self.0, method::aspace::DELETE_CAP, [slot, 0, 0, 0]).map(drop)
    }

    /// ASPACE.COPY_CAP (9, needs WRITE): Copy src to the empty slot dest, both in this capability space, reduced by the rights mask (0 keeps the rights; WEAK in the mask weakens). A stale capability copies as it is. A RETURN capability is never copied (INVALID_ARG): there is one per call, so that its caller can be told when it goes; MOVE_CAP moves it.
    /// Results: (-).
    #[inline]
    pub fn copy_cap(self, src: u64, dest: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::aspace::COPY_CAP, [src, dest, rights, 0]).map(drop)
    }

    /// ASPACE.MOVE_CAP (10, needs WRITE): Move src to the empty slot dest in this capability space; src becomes null. Moving a slot onto itself is EXISTS.
    /// Results: (-).
    #[inline]
    pub fn move_cap(self, src: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::aspace::MOVE_CAP, [src, dest, 0, 0]).map(drop)
    }

    /// ASPACE.IDENTIFY_CAP (11, needs READ): Return the type and rights of the capability at slot of this capability space, and live = 1 if its object still exists (0 if stale). A null slot gives type NULL.
    /// Results: (type, rights, live).
    #[inline]
    pub fn identify_cap_raw(self, slot: u64) -> Result<(u64, u64, u64)> {
        invoke(self.0, method::aspace::IDENTIFY_CAP, [slot, 0, 0, 0]).map(|r| (r[0], r[1], r[2]))
    }

    /// ASPACE.COMPARE_CAP (12, needs READ): Compare the capabilities at a and b of this capability space: same_object = 1 if they designate the same object (a SENDER and its PROCESS count as the same), identical = 1 if both words are equal (same rights and payload too).
    /// Results: (same_object, identical).
    #[inline]
    pub fn compare_cap_raw(self, a: u64, b: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::aspace::COMPARE_CAP, [a, b, 0, 0]).map(|r| (r[0], r[1]))
    }
}

/// A process: registers, an address space, an IPC buffer, a fault handler, a priority and a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process(pub u64);

impl Process {
    /// PROCESS.SET_REGS (1, needs WRITE): Set the instruction pointer, stack pointer and the two first argument registers of a process that is not running (CREATED, STOPPED, or waiting for its fault handler's reply; BAD_STATE otherwise, checked before the arguments). rip and rsp must lie in the user half.
    /// Results: (-).
    #[inline]
    pub fn set_regs(self, rip: u64, rsp: u64, rdi: u64, rsi: u64) -> Result<()> {
        invoke(self.0, method::process::SET_REGS, [rip, rsp, rdi, rsi]).map(drop)
    }

    /// PROCESS.START (2, needs WRITE): Make a CREATED or STOPPED process runnable.
    /// Results: (-).
    #[inline]
    pub fn start(self) -> Result<()> {
        invoke(self.0, method::process::START, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.STOP (3, needs WRITE): Stop a runnable or blocked process. A blocked send restarts when the process is started again; a pending receive or reply wait ends with BAD_STATE in rax; its outstanding return capability dies.
    /// Results: (-).
    #[inline]
    pub fn stop(self) -> Result<()> {
        invoke(self.0, method::process::STOP, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.STATUS (4, needs READ): Return the state, the exit code or exception vector, and for a FAULTED process the faulting rip and address (CR2 for a page fault, error code otherwise).
    /// Results: (state, code, rip, addr).
    #[inline]
    pub fn status_raw(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::process::STATUS, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// PROCESS.WAIT (5, needs READ): Block until the process has EXITED or FAULTED, then return what STATUS returns. BAD_STATE for a process waiting on itself. If the process is destroyed meanwhile the wait restarts and fails with STALE.
    /// Results: (state, code, rip, addr).
    #[inline]
    pub fn wait_raw(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::process::WAIT, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// PROCESS.EXIT (6, needs WRITE): End the process with an exit code (normally invoked on one's own process). Does not return to the caller when it is the caller.
    /// Results: (-).
    #[inline]
    pub fn exit(self, code: u64) -> Result<()> {
        invoke(self.0, method::process::EXIT, [code, 0, 0, 0]).map(drop)
    }

    /// PROCESS.YIELD (7, needs READ): Give up the rest of the caller's time slice to the next process at the same priority. Only on one's own process (INVALID_ARG otherwise).
    /// Results: (-).
    #[inline]
    pub fn yield_(self) -> Result<()> {
        invoke(self.0, method::process::YIELD, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.SET_NAME (8, needs WRITE): Set the 16-byte name shown by ps.
    /// Results: (-).
    #[inline]
    pub fn set_name_raw(self, name_lo: u64, name_hi: u64) -> Result<()> {
        invoke(self.0, method::process::SET_NAME, [name_lo, name_hi, 0, 0]).map(drop)
    }

    /// PROCESS.SET_PRIORITY (9, needs WRITE): Set the priority (0 lowest to 31 highest).
    /// Results: (-).
    #[inline]
    pub fn set_priority(self, priority: u64) -> Result<()> {
        invoke(self.0, method::process::SET_PRIORITY, [priority, 0, 0, 0]).map(drop)
    }

    /// PROCESS.READ_REGS (10, needs READ): Copy the process's registers (REG_* block) into the string area of the caller's IPC buffer. The process must not be running (not RUNNABLE); the caller reading itself is BAD_STATE.
    /// Results: (-).
    #[inline]
    pub fn read_regs(self) -> Result<()> {
        invoke(self.0, method::process::READ_REGS, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.WRITE_REGS (11, needs WRITE): Set the process's registers from the REG_* block in the string area of the caller's IPC buffer. Same states as SET_REGS; rip and rsp must lie in the user half.
    /// Results: (-).
    #[inline]
    pub fn write_regs(self) -> Result<()> {
        invoke(self.0, method::process::WRITE_REGS, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.SET_IPC_BUFFER (12, needs WRITE): Set the address of the process's IPC buffer (IPC_SIZE bytes, page-aligned, user half; 0 for none). It is checked when used: an unmapped buffer fails the invocation with FAULT.
    /// Results: (-).
    #[inline]
    pub fn set_ipc_buffer(self, vaddr: u64) -> Result<()> {
        invoke(self.0, method::process::SET_IPC_BUFFER, [vaddr, 0, 0, 0]).map(drop)
    }

    /// PROCESS.SET_FAULT_HANDLER (13, needs WRITE): Make the SENDER capability at sender the process's fault handler (0 removes it). Exceptions, page faults and emulated system calls become EXCEPTION or SYSCALL messages, sent as calls, to it; the reply label (REPLY_*) says how to go on. A process without one is stopped as FAULTED and reported.
    /// Results: (-).
    #[inline]
    pub fn set_fault_handler(self, sender: u64) -> Result<()> {
        invoke(self.0, method::process::SET_FAULT_HANDLER, [sender, 0, 0, 0]).map(drop)
    }

    /// PROCESS.SET_EMULATION (14, needs WRITE): Turn emulation mode on (1) or off (0): in emulation mode every system call of the process is reflected to its fault handler as a SYSCALL message instead of being executed.
    /// Results: (-).
    #[inline]
    pub fn set_emulation_raw(self, on: u64) -> Result<()> {
        invoke(self.0, method::process::SET_EMULATION, [on, 0, 0, 0]).map(drop)
    }

    /// PROCESS.MINT (15, needs WRITE): Place at dest (empty) of the caller's space a SENDER capability to this process carrying the 64-bit protected payload, with rights (a subset of WRITE and CALL; 0 gives both).
    /// Results: (-).
    #[inline]
    pub fn mint(self, dest: u64, payload: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::process::MINT, [dest, payload, rights, 0]).map(drop)
    }

    /// PROCESS.READ_VECTOR_STATE (16, needs READ): Copy the process's x87/SSE/AVX state into the string area of the caller's IPC buffer, in XSAVE's standard format (the 512-byte FXSAVE region, the 64-byte header, then the components XCR0 enables) when the kernel runs with XSAVE, in FXSAVE's 512 bytes otherwise; size is its length. Same states as READ_REGS.
    /// Results: (size).
    #[inline]
    pub fn read_vector_state(self) -> Result<u64> {
        invoke(self.0, method::process::READ_VECTOR_STATE, [0, 0, 0, 0]).map(|r| r[0])
    }

    /// PROCESS.WRITE_VECTOR_STATE (17, needs WRITE): Set the process's x87/SSE/AVX state from the string area of the caller's IPC buffer, in READ_VECTOR_STATE's format and length. Same states as WRITE_REGS. INVALID_ARG, with nothing changed, for a state the CPU would refuse to load: MXCSR bits outside the CPU's MXCSR_MASK, and with XSAVE a header whose feature bits are not a subset of XCR0, that asks for the compacted format, or whose reserved bytes are not zero.
    /// Results: (-).
    #[inline]
    pub fn write_vector_state(self) -> Result<()> {
        invoke(self.0, method::process::WRITE_VECTOR_STATE, [0, 0, 0, 0]).map(drop)
    }

    /// PROCESS.SET_BUDGET (18, needs WRITE): Let the process run at most budget_us microseconds of every period_us: once it has spent its budget in a period it is parked (not runnable, whatever its priority) until its next period begins, with a full budget. 0 and 0 remove the budget (the default: no limit). INVALID_ARG for a period below BUDGET_MIN_PERIOD_US or above BUDGET_MAX_PERIOD_US, a budget below BUDGET_MIN_US or above the period. NO_RIGHTS when the caller has a budget itself and asks for a larger share (budget/period) than its own, or for none. Either error changes nothing. A new budget starts a new period with nothing consumed and the ran-out count at 0.
    /// Results: (-).
    #[inline]
    pub fn set_budget(self, budget_us: u64, period_us: u64) -> Result<()> {
        invoke(self.0, method::process::SET_BUDGET, [budget_us, period_us, 0, 0]).map(drop)
    }

    /// PROCESS.BUDGET (19, needs READ): The process's budget and period (0 and 0: none), the microseconds consumed in its current period (at most the budget plus BUDGET_OVERRUN_US), and how many periods it ran out of budget in.
    /// Results: (budget_us, period_us, consumed_us, ran_out).
    #[inline]
    pub fn budget(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::process::BUDGET, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// PROCESS.SET_PASSIVE (20, needs WRITE): Make the process passive (on 1) or not (on 0), and return what it was. While a passive process serves a call (from receiving it until the call's return capability is used or lost, or the caller is gone), the time it runs is charged to the caller's budget, and through nested calls to further passive servers to the first caller that has one; when that budget is spent the server is parked until the caller's next period. A caller without a budget lends nothing: the server then runs on its own budget, or none. INVALID_ARG for on above 1. NO_RIGHTS when the caller has a budget itself and asks for 0 (as it may not remove a budget). Either error changes nothing.
    /// Results: (was).
    #[inline]
    pub fn set_passive(self, on: u64) -> Result<u64> {
        invoke(self.0, method::process::SET_PASSIVE, [on, 0, 0, 0]).map(|r| r[0])
    }

    /// PROCESS.CPU_TIME (21, needs READ): The nanoseconds the process has run since it was made (or resumed from a checkpoint): the time the CPU was its, in user mode and in the kernel on its behalf, to now when it is the caller; counted from the TSC at every switch. Time the CPU idles, and the time of the servers that answer its calls, are in nobody's or their own.
    /// Results: (ns).
    #[inline]
    pub fn cpu_time(self) -> Result<u64> {
        invoke(self.0, method::process::CPU_TIME, [0, 0, 0, 0]).map(|r| r[0])
    }
}

/// A kernel-memory account: frames donated by its kpager, from which address spaces, processes and wrappers are made and page tables grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Account(pub u64);

impl Account {
    /// ACCOUNT.INFO (1, needs READ): Return the frames the account holds unused, the frames in use by objects made from it, the frames its kpager has taken back from live objects so far (REVOKE_TABLE, REVOKE_PROCESS), and how many of its processes are exported now.
    /// Results: (free, used, taken, out).
    #[inline]
    pub fn info_raw(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::account::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// ACCOUNT.SET_KPAGER (2, needs WRITE): Make the SENDER capability at sender the account's kpager; 0 removes it. When an operation finds the account empty, the invoking process sends a KMEM fault message to the kpager (a call) and its invocation restarts once the kpager replies; without a kpager the operation fails with NO_MEMORY.
    /// Results: (-).
    #[inline]
    pub fn set_kpager(self, sender: u64) -> Result<()> {
        invoke(self.0, method::account::SET_KPAGER, [sender, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.CREATE_ASPACE (3, needs WRITE): Make an empty address space (2 frames: the object and its top-level page table) paid by this account, whose page tables also grow from this account; place a capability with all rights at dest.
    /// Results: (-).
    #[inline]
    pub fn create_aspace(self, dest: u64) -> Result<()> {
        invoke(self.0, method::account::CREATE_ASPACE, [dest, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.CREATE_PROCESS (4, needs WRITE): Make a process (1 frame) in the address space named by aspace (which needs WRITE), paid by this account, and place a capability with all rights at dest. Its number comes from the account's number pages; when none is free the account buys one (1 more frame: a KMEM fault asks for 2). BAD_STATE when all PROCESS_NUMBERS numbers are taken. INVALID_ARG when one of the account and the address space is persistent (made from the persistent pool) and the other is not.
    /// Results: (-).
    #[inline]
    pub fn create_process(self, aspace: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::account::CREATE_PROCESS, [aspace, dest, 0, 0]).map(drop)
    }

    /// ACCOUNT.CREATE_WRAPPER (5, needs WRITE): Make a wrapper (1 frame) around a copy of the capability at cap and place a WRAPPER capability with the given rights (READ, WRITE, EXEC, CALL) at dest. Invoking it invokes the wrapped capability with the rights both have. A RETURN capability cannot be wrapped (INVALID_ARG).
    /// Results: (-).
    #[inline]
    pub fn create_wrapper(self, cap: u64, dest: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::account::CREATE_WRAPPER, [cap, dest, rights, 0]).map(drop)
    }

    /// ACCOUNT.DESTROY (6, needs WRITE): Destroy the ASPACE, PROCESS or WRAPPER named by object, which must have been made from this account (INVALID_ARG otherwise): raise its version so that every capability to it fails with STALE, and give its frames (page tables included) back to the account. A process is stopped first; its waiters and senders restart and see STALE. An address space still used by a process is BAD_STATE. Revoking a wrapper is destroying it. An address space goes in parts of DESTROY_TABLES page tables, after each of which the invocation restarts from the system call; so does a DMA domain (the first part detaches its devices and lets its holds go; from then on every method on it is STALE).
    /// Results: (-).
    #[inline]
    pub fn destroy(self, object: u64) -> Result<()> {
        invoke(self.0, method::account::DESTROY, [object, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.RECLAIM (7, needs WRITE): Give frames unused frames of the account back to the memory pool named by memory (which needs WRITE). NO_MEMORY if the account has fewer unused frames; nothing moves then. It goes in parts of MOVE_FRAMES frames, as MEMORY.DONATE does: after each part the frames argument (r8) holds the frames still to give back and the invocation restarts from the system call (a part that finds the account short, because its objects took frames meanwhile, is NO_MEMORY with frames saying how many did not move).
    /// Results: (-).
    #[inline]
    pub fn reclaim(self, memory: u64, frames: u64) -> Result<()> {
        invoke(self.0, method::account::RECLAIM, [memory, frames, 0, 0]).map(drop)
    }

    /// ACCOUNT.DESTROY_ALL (8, needs WRITE): Destroy the account and everything made from it: its processes (exported ones too), its address spaces with every process running in them (whatever account paid for those), its wrappers and its DMA domains, as ACCOUNT.DESTROY does each; then give all its frames, used and unused, and its own frame back to the memory pool named by memory (which needs WRITE). Every capability to the account and to those objects becomes STALE. Works on the caller's own account too. It goes in parts (32 processes, DESTROY_TABLES page tables of its address spaces, with their mappings, or of its DMA domains, or MOVE_FRAMES of its unused frames given back); after each the invocation restarts from the system call and goes on, so interrupts are taken in between (a caller destroying its own account or space does it in one part).
    /// Results: (-).
    #[inline]
    pub fn destroy_all(self, memory: u64) -> Result<()> {
        invoke(self.0, method::account::DESTROY_ALL, [memory, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.REVOKE_TABLE (9, needs WRITE): Take back, from a live address space paid by this account (aspace needs WRITE), the page table of the given level (1: the table of 4 KiB entries, 2: of 2 MiB entries, 3: of 1 GiB entries) that translates vaddr (user half), and every table below it. Page tables are redundant data: the mappings under them are dropped (as if unmapped), the frame is handed to the caller as an empty PAGE at dest, and the tables below it go back to the account's unused frames. The space's pager rebuilds the mappings by ASPACE.MAP when its processes fault on them (docs/kernel-memory.md). Returns the number of frames freed (the one at dest included). IN_USE if those tables translate the IPC buffer of a process in the space; NOT_MAPPED if there is no such table.
    /// Results: (frames).
    #[inline]
    pub fn revoke_table(self, aspace: u64, vaddr: u64, level: u64, dest: u64) -> Result<u64> {
        invoke(self.0, method::account::REVOKE_TABLE, [aspace, vaddr, level, dest]).map(|r| r[0])
    }

    /// ACCOUNT.REVOKE_PROCESS (10, needs WRITE): Export a live process made from this account: its control block is sealed (encrypted and authenticated with a key only the kernel has, bound to the process and to this export) into its own frame, which is handed to the caller as a PAGE at dest, and the process leaves the kernel. It is suspended: whatever needs it (a message, a reply, an invocation of its capabilities) makes the invoker send a KMEM fault (KMEM_PROCESS, id) to the account's kpager and restarts once the kpager replies. Returns the export's identifier (as in the KMEM fault). BAD_STATE for the caller itself, a process already out, a process whose fault message waits in a queue, or one that is a fault handler with fault messages queued; IN_USE for a process an interrupt line is bound to; INVALID_ARG for a process of another account.
    /// Results: (id).
    #[inline]
    pub fn revoke_process(self, process: u64, dest: u64) -> Result<u64> {
        invoke(self.0, method::account::REVOKE_PROCESS, [process, dest, 0, 0]).map(|r| r[0])
    }

    /// ACCOUNT.RESTORE_PROCESS (11, needs WRITE): Bring an exported process of this account back from the PAGE at page (which needs WRITE, is mapped nowhere, and holds the export, as REVOKE_PROCESS made it or a copy): the seal is checked, the frame becomes the process's again (the page capability and its copies become STALE) and the process goes on where it was. BAD_SEAL, with nothing changed, for an export that was altered, is not this account's, is not the current export of its process (restored before, or the process was destroyed) or was made by another boot of the kernel; IN_USE while the page is mapped.
    /// Results: (-).
    #[inline]
    pub fn restore_process(self, page: u64) -> Result<()> {
        invoke(self.0, method::account::RESTORE_PROCESS, [page, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.REVOKE_CAP_TABLE (12, needs WRITE): REVOKE_TABLE for the capability segment: take back the segment's page table of the given level (1-3) that holds the cappage of capability address cap_addr, and every table below it, as an empty PAGE at dest. The cappages stay mapped: the address space records them, and the kernel rebuilds their tables from the record when a lookup needs them (from the space's account, with a KMEM fault if it is short; the invocation then runs again). Returns the frames freed. IN_USE if a process of the space waits with a receive slot under the table, if one of its processes is exported, or if the space has more cappages than its record holds.
    /// Results: (frames).
    #[inline]
    pub fn revoke_cap_table(self, aspace: u64, cap_addr: u64, level: u64, dest: u64) -> Result<u64> {
        invoke(self.0, method::account::REVOKE_CAP_TABLE, [aspace, cap_addr, level, dest]).map(|r| r[0])
    }

    /// ACCOUNT.CREATE_DMA_DOMAIN (13, needs WRITE): Make an empty DMA domain (1 frame, and 1 for its top-level table) and place a DMA_DOMAIN capability with all rights at dest. Its tables grow from this account. BAD_STATE when every IOMMU domain number is in use. ACCOUNT.DESTROY destroys it: its devices are detached, its pages unpinned.
    /// Results: (-).
    #[inline]
    pub fn create_dma_domain(self, dest: u64) -> Result<()> {
        invoke(self.0, method::account::CREATE_DMA_DOMAIN, [dest, 0, 0, 0]).map(drop)
    }

    /// ACCOUNT.CREATE_NOTIFICATION (14, needs WRITE): Make a notification (1 frame) with no bits set and place a NOTIFICATION capability with all rights at dest. ACCOUNT.DESTROY destroys it: a process waiting in its WAIT starts the invocation again and finds the capability STALE; a bound process is unbound, its pending NOTIFY dropped.
    /// Results: (-).
    #[inline]
    pub fn create_notification(self, dest: u64) -> Result<()> {
        invoke(self.0, method::account::CREATE_NOTIFICATION, [dest, 0, 0, 0]).map(drop)
    }
}

/// Time: the clock and sleeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer(pub u64);

impl Timer {
    /// TIMER.NOW (1, needs READ): Return the milliseconds and timer ticks since boot.
    /// Results: (ms, ticks).
    #[inline]
    pub fn now(self) -> Result<(u64, u64)> {
        invoke(self.0, method::timer::NOW, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// TIMER.SLEEP (2, needs READ): Block the caller for at least ms milliseconds (1 to 86,400,000), measured with the TSC.
    /// Results: (-).
    #[inline]
    pub fn sleep(self, ms: u64) -> Result<()> {
        invoke(self.0, method::timer::SLEEP, [ms, 0, 0, 0]).map(drop)
    }

    /// TIMER.SLEEP_UNTIL (3, needs READ): Block the caller until the time-stamp counter (what rdtsc reads) reaches tsc: an absolute deadline, for work released at fixed times. A deadline already passed returns at once; one more than 86,400,000 ms ahead is INVALID_ARG.
    /// Results: (-).
    #[inline]
    pub fn sleep_until(self, tsc: u64) -> Result<()> {
        invoke(self.0, method::timer::SLEEP_UNTIL, [tsc, 0, 0, 0]).map(drop)
    }
}

/// A range of physical addresses outside RAM (device registers): its pages are mapped uncached with ASPACE.MAP. Never covers RAM or the kernel's own devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevMem(pub u64);

impl DevMem {
    /// DEVMEM.INFO (1, needs READ): Return the physical address of the range's first page and its length in pages.
    /// Results: (base, pages).
    #[inline]
    pub fn info(self) -> Result<(u64, u64)> {
        invoke(self.0, method::devmem::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// DEVMEM.RESTRICT (2, needs READ): Place at dest (empty) a DEVMEM capability with the same rights for the pages (at least 1) pages from physical address base (page-aligned), which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
    /// Results: (-).
    #[inline]
    pub fn restrict(self, base: u64, pages: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::devmem::RESTRICT, [base, pages, dest, 0]).map(drop)
    }
}

/// A range of I/O ports, read and written by invoking the capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoPort(pub u64);

impl IoPort {
    /// IOPORT.INFO (1, needs READ): Return the first port of the range and the number of ports.
    /// Results: (base, count).
    #[inline]
    pub fn info(self) -> Result<(u64, u64)> {
        invoke(self.0, method::ioport::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// IOPORT.RESTRICT (2, needs READ): Place at dest (empty) an IOPORT capability with the same rights for the count (at least 1) ports from base, which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
    /// Results: (-).
    #[inline]
    pub fn restrict(self, base: u64, count: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::ioport::RESTRICT, [base, count, dest, 0]).map(drop)
    }

    /// IOPORT.IN (3, needs READ): Read width bytes (1, 2 or 4) from port; every port read must lie in the range (INVALID_ARG otherwise). IN_USE for a port the kernel keeps (the interrupt controllers, its console, power-off and exit ports).
    /// Results: (value).
    #[inline]
    pub fn in_(self, port: u64, width: u64) -> Result<u64> {
        invoke(self.0, method::ioport::IN, [port, width, 0, 0]).map(|r| r[0])
    }

    /// IOPORT.OUT (4, needs WRITE): Write the low width bytes (1, 2 or 4) of value to port, under the rules of IN.
    /// Results: (-).
    #[inline]
    pub fn out(self, port: u64, width: u64, value: u64) -> Result<()> {
        invoke(self.0, method::ioport::OUT, [port, width, value, 0]).map(drop)
    }
}

/// A range of interrupt lines (I/O APIC inputs and MSI lines): a line is bound to a process, which then receives each interrupt as an IPC message, or to a notification, into which each interrupt ORs bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt(pub u64);

impl Interrupt {
    /// INTERRUPT.INFO (1, needs READ): Return the first line of the range and the number of lines.
    /// Results: (base, count).
    #[inline]
    pub fn info(self) -> Result<(u64, u64)> {
        invoke(self.0, method::interrupt::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// INTERRUPT.RESTRICT (2, needs READ): Place at dest (empty) an INTERRUPT capability with the same rights for the count (at least 1) lines from base, which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
    /// Results: (-).
    #[inline]
    pub fn restrict(self, base: u64, count: u64, dest: u64) -> Result<()> {
        invoke(self.0, method::interrupt::RESTRICT, [base, count, dest, 0]).map(drop)
    }

    /// INTERRUPT.BIND (3, needs WRITE): Deliver the interrupts of line (in the range) as IRQ messages through the SENDER capability sender (which needs WRITE; its payload arrives with each message) and unmask the line. An interrupt that comes while the process is not receiving waits, one per line, until it next receives. IN_USE if the line is bound already or the kernel keeps it (line 4, its console). Bound through a wrapper, the line is unbound when the wrapper is destroyed.
    /// Results: (-).
    #[inline]
    pub fn bind(self, line: u64, sender: u64) -> Result<()> {
        invoke(self.0, method::interrupt::BIND, [line, sender, 0, 0]).map(drop)
    }

    /// INTERRUPT.UNBIND (4, needs WRITE): Mask line and forget its binding (to a process or a notification) and any interrupt still waiting as a message (bits already ORed into a notification stay there); BAD_STATE if it is not bound, or bound to a notification that has been destroyed since (its binding went with it).
    /// Results: (-).
    #[inline]
    pub fn unbind(self, line: u64) -> Result<()> {
        invoke(self.0, method::interrupt::UNBIND, [line, 0, 0, 0]).map(drop)
    }

    /// INTERRUPT.ACK (5, needs WRITE): Unmask line after its interrupt has been handled (each delivery masks an I/O APIC line; an MSI line is never masked, and ACK of it does nothing more than check); BAD_STATE if it is not bound.
    /// Results: (-).
    #[inline]
    pub fn ack(self, line: u64) -> Result<()> {
        invoke(self.0, method::interrupt::ACK, [line, 0, 0, 0]).map(drop)
    }

    /// INTERRUPT.ROUTE_MSI (6, needs WRITE): Route the MSI line line (in the range, IRQ_LINES to IRQ_LINES + MSI_LINES - 1) to the PCI function whose configuration page is page offset of the DEVMEM capability devmem (with WRITE, as in DMA_DOMAIN.ATTACH), and return the message address and data to program into that function's MSI or MSI-X capability. With interrupt remapping, remapping entry line is written for that function's source id alone (source-id verification) and the address is in remappable format naming it (data 0); without, the address is the compatibility-format one of this CPU and the data vector 0x30 + line. INVALID_ARG for an I/O APIC line or a page that is no function's configuration page; IN_USE if the line is routed already. Routed through a wrapper (standing for the INTERRUPT capability), the line is unrouted when the wrapper is destroyed.
    /// Results: (address, data).
    #[inline]
    pub fn route_msi(self, line: u64, devmem: u64, offset: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::interrupt::ROUTE_MSI, [line, devmem, offset, 0]).map(|r| (r[0], r[1]))
    }

    /// INTERRUPT.UNROUTE_MSI (7, needs WRITE): Undo ROUTE_MSI of line: its remapping entry is cleared (the function's messages to it are refused and reported by the IOMMU), its binding and any interrupt still waiting are dropped. BAD_STATE if it is not routed.
    /// Results: (-).
    #[inline]
    pub fn unroute_msi(self, line: u64) -> Result<()> {
        invoke(self.0, method::interrupt::UNROUTE_MSI, [line, 0, 0, 0]).map(drop)
    }

    /// INTERRUPT.BIND_NOTIFICATION (8, needs WRITE): Deliver the interrupts of line (in the range) to the NOTIFICATION at notification (which needs WRITE) instead of as messages: each ORs bits (not 0: INVALID_ARG) into its word as SIGNAL does (its waiter runs, or the process bound to it gets a NOTIFY message), and unmask the line. ACK unmasks an I/O APIC line after each interrupt as for BIND; UNBIND undoes it. IN_USE if the line is bound already (to a process or a notification) or the kernel keeps it (line 4). A notification destroyed while bound loses the binding (the line is masked at its next interrupt); bound through a wrapper, the line is unbound when the wrapper is destroyed.
    /// Results: (-).
    #[inline]
    pub fn bind_notification(self, line: u64, notification: u64, bits: u64) -> Result<()> {
        invoke(self.0, method::interrupt::BIND_NOTIFICATION, [line, notification, bits, 0]).map(drop)
    }
}

/// A DMA domain: the address space the IOMMU gives the PCI devices attached to it. A driver maps into it only pages it holds capabilities to; each stays pinned while mapped (docs/devices.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaDomain(pub u64);

impl DmaDomain {
    /// DMA_DOMAIN.INFO (1, needs READ): Return the width of its device addresses (39 or 48 bits), the pages mapped, the devices attached, and remapping = 1 if the IOMMU translates DMA (0 on a machine without one: the domain then confines nothing).
    /// Results: (address_bits, pages, devices, remapping).
    #[inline]
    pub fn info_raw(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::dma_domain::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// DMA_DOMAIN.MAP (2, needs WRITE): Let the domain's devices access the PAGE named by page at device address dev_addr (page-aligned, below 2^address_bits) with rights (READ for device reads, WRITE for device writes, at least one, never more than the page capability has: NO_RIGHTS). The page stays pinned (MEMORY.RECLAIM says IN_USE) until it is unmapped. EXISTS if dev_addr is mapped; INVALID_ARG for a page of the persistent pool, which no device reaches (a device's writes would escape the checkpoint's copy-on-write). Tables come from the domain's account. The IOMMU's caches are invalidated before it returns. IN_USE while a MEMORY.REVOKE of the page is under way.
    /// Results: (-).
    #[inline]
    pub fn map(self, page: u64, dev_addr: u64, rights: u64) -> Result<()> {
        invoke(self.0, method::dma_domain::MAP, [page, dev_addr, rights, 0]).map(drop)
    }

    /// DMA_DOMAIN.UNMAP (3, needs WRITE): Remove the mapping at dev_addr; the IOMMU's translation caches are invalidated before the page is unpinned, so no device reaches it afterwards.
    /// Results: (-).
    #[inline]
    pub fn unmap(self, dev_addr: u64) -> Result<()> {
        invoke(self.0, method::dma_domain::UNMAP, [dev_addr, 0, 0, 0]).map(drop)
    }

    /// DMA_DOMAIN.LOOKUP (4, needs READ): Return the rights of the mapping at dev_addr and its frame number (for identity comparison with ASPACE.LOOKUP).
    /// Results: (rights, frame).
    #[inline]
    pub fn lookup(self, dev_addr: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::dma_domain::LOOKUP, [dev_addr, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// DMA_DOMAIN.ATTACH (5, needs WRITE): Attach the PCI function whose configuration page (in the ECAM area of the ACPI MCFG table) is page offset of the DEVMEM capability devmem: from now on its DMA is translated through this domain. Holding that page is the authority over the function. INVALID_ARG if the page is no function's configuration page; IN_USE if the function is attached to a domain already; BAD_STATE without an IOMMU.
    /// Results: (-).
    #[inline]
    pub fn attach(self, devmem: u64, offset: u64) -> Result<()> {
        invoke(self.0, method::dma_domain::ATTACH, [devmem, offset, 0, 0]).map(drop)
    }

    /// DMA_DOMAIN.DETACH (6, needs WRITE): Detach the function named as in ATTACH (NOT_MAPPED if it is not attached to this domain): its DMA is blocked (it has no domain) until it is attached again.
    /// Results: (-).
    #[inline]
    pub fn detach(self, devmem: u64, offset: u64) -> Result<()> {
        invoke(self.0, method::dma_domain::DETACH, [devmem, offset, 0, 0]).map(drop)
    }

    /// DMA_DOMAIN.SET_FAULT_HANDLER (7, needs WRITE): Send the domain's DMA faults as DMA_FAULT messages through the SENDER capability at sender (which needs WRITE; 0 removes it: faults are then only counted). BAD_STATE if its process is exported (ACCOUNT.REVOKE_PROCESS); faults for a handler exported later wait in the queue.
    /// Results: (-).
    #[inline]
    pub fn set_fault_handler(self, sender: u64) -> Result<()> {
        invoke(self.0, method::dma_domain::SET_FAULT_HANDLER, [sender, 0, 0, 0]).map(drop)
    }

    /// DMA_DOMAIN.FAULTS (8, needs READ): Return how many DMA faults the domain's devices have caused, how many wait for the fault handler, how many were lost because the queue was full, and how many holds (HOLD) the domain has.
    /// Results: (faults, waiting, lost, holds).
    #[inline]
    pub fn faults_raw(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::dma_domain::FAULTS, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// DMA_DOMAIN.HOLD (9, needs WRITE): What LOOKUP does, and keep the frame mapped at dev_addr (which must be mapped with at least rights: NO_RIGHTS otherwise) from being reused until RELEASE of tag (below DMA_HOLD_TAGS): a software DMA mediator holds every frame of a request it puts on a device, so that a page unpinned and destroyed under the request cannot be given to anyone while the device may still write it. A destroyed page's frame held so goes back to the pool only when its last hold goes. Only where the IOMMU does not translate (BAD_STATE otherwise: unmapping invalidates its caches, and no device reaches the frame after). The hold table grows from the domain's account, a frame at a time, to DMA_HOLD_FRAMES frames (IN_USE when full, or when the frame has DMA_HOLD_MAX holds); NO_MEMORY as for MAP.
    /// Results: (rights, frame).
    #[inline]
    pub fn hold(self, dev_addr: u64, tag: u64, rights: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::dma_domain::HOLD, [dev_addr, tag, rights, 0]).map(|r| (r[0], r[1]))
    }

    /// DMA_DOMAIN.RELEASE (10, needs WRITE): Let go of every hold whose tag is in tag..tag+count (within DMA_HOLD_TAGS) and return how many there were; a held frame whose page was destroyed goes back to the pool with its last hold. The mediator releases a request's holds when the device has completed it or has been reset. ACCOUNT.DESTROY of the domain releases all of them.
    /// Results: (released).
    #[inline]
    pub fn release(self, tag: u64, count: u64) -> Result<u64> {
        invoke(self.0, method::dma_domain::RELEASE, [tag, count, 0, 0]).map(|r| r[0])
    }
}

/// A word of event bits: senders OR bits in without blocking (SIGNAL), a waiter takes and clears them (WAIT, POLL); bound to a process, its signals arrive as NOTIFY messages in that process's receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification(pub u64);

impl Notification {
    /// NOTIFICATION.SIGNAL (1, needs WRITE): OR bits (not 0: INVALID_ARG) into the notification's word, never blocking. A process waiting in WAIT is made to run and takes the word; otherwise, if a process is bound (BIND) and waits in an open receive, the word goes to it at once as a NOTIFY message and is cleared; otherwise the word keeps the bits (a bound process gets them at its next receive).
    /// Results: (-).
    #[inline]
    pub fn signal(self, bits: u64) -> Result<()> {
        invoke(self.0, method::notification::SIGNAL, [bits, 0, 0, 0]).map(drop)
    }

    /// NOTIFICATION.WAIT (2, needs READ): Take the word and clear it; if no bit is set, wait until a SIGNAL sets one, which ends the wait with the word as its result (even if the waiter's capability has moved or gone meanwhile). One process waits at a time: IN_USE for a second. A waiter whose notification is destroyed starts its WAIT again and finds its capability STALE.
    /// Results: (bits).
    #[inline]
    pub fn wait(self) -> Result<u64> {
        invoke(self.0, method::notification::WAIT, [0, 0, 0, 0]).map(|r| r[0])
    }

    /// NOTIFICATION.POLL (3, needs READ): Take the word and clear it without waiting (0: no bit was set).
    /// Results: (bits).
    #[inline]
    pub fn poll(self) -> Result<u64> {
        invoke(self.0, method::notification::POLL, [0, 0, 0, 0]).map(|r| r[0])
    }

    /// NOTIFICATION.BIND (4, needs WRITE): Bind the notification to the process the SENDER at sender (which needs WRITE) names: its signals then arrive in that process's receives as NOTIFY messages (words: bits, 0, 0, 0; the payload is the SENDER's), before any queued sender, so that one receive waits for messages and events at once. A process has at most one bound notification and a notification one process (IN_USE); BAD_STATE if the process is exported. Bits already set arrive at its next receive. An exported process loses its binding.
    /// Results: (-).
    #[inline]
    pub fn bind(self, sender: u64) -> Result<()> {
        invoke(self.0, method::notification::BIND, [sender, 0, 0, 0]).map(drop)
    }

    /// NOTIFICATION.UNBIND (5, needs WRITE): Undo BIND (NOT_MAPPED if nothing is bound); bits set stay in the word.
    /// Results: (-).
    #[inline]
    pub fn unbind(self) -> Result<()> {
        invoke(self.0, method::notification::UNBIND, [0, 0, 0, 0]).map(drop)
    }

    /// NOTIFICATION.INFO (6, needs READ): The word (not cleared), 1 if a process waits in WAIT, 1 if a live process is bound.
    /// Results: (bits, waiting, bound).
    #[inline]
    pub fn info_raw(self) -> Result<(u64, u64, u64)> {
        invoke(self.0, method::notification::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2]))
    }
}

/// The checkpoint of the persistent memory pool: capture of every object made from the pool at one consistency point, its sealed write-out, and its restore at a later boot (docs/persistence.md). Given only to the root task, which may grant it to the checkpointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint(pub u64);

impl Checkpoint {
    /// CHECKPOINT.INFO (1, needs READ): The pool's state (0 shut: from boot until OPEN or RESUME; 1 restoring: RESTORE has put records back; 2 open; 3 captured: between BEGIN and END), the epoch of the last checkpoint begun or restored, and the persistent pool's size and frames in use.
    /// Results: (state, epoch, pool_frames, pool_used).
    #[inline]
    pub fn info(self) -> Result<(u64, u64, u64, u64)> {
        invoke(self.0, method::checkpoint::INFO, [0, 0, 0, 0]).map(|r| (r[0], r[1], r[2], r[3]))
    }

    /// CHECKPOINT.SET_KEY (2, needs WRITE): Seal records under keys derived from the 32 bytes at ptr (as KERNEL.SET_SEAL_KEY, whose keys these are): READ seals under them and RESTORE opens only what they sealed. BAD_STATE while captured or while any process is exported.
    /// Results: (-).
    #[inline]
    pub fn set_key(self, ptr: u64) -> Result<()> {
        invoke(self.0, method::checkpoint::SET_KEY, [ptr, 0, 0, 0]).map(drop)
    }

    /// CHECKPOINT.OPEN (3, needs WRITE): Open the shut persistent pool empty (a fresh start: nothing is restored). BAD_STATE unless shut.
    /// Results: (-).
    #[inline]
    pub fn open(self) -> Result<()> {
        invoke(self.0, method::checkpoint::OPEN, [0, 0, 0, 0]).map(drop)
    }

    /// CHECKPOINT.BEGIN (4, needs WRITE): The consistency point: raise the epoch and capture every frame in use in the persistent pool and the kernel's record of the pool as they are at this instant. The kernel objects (processes with their registers and vector state, address spaces and their tables, cappages, accounts, number pages, notifications, wrappers) are copied into shadow frames taken from account; data pages, donated and free frames stay in place, copy-on-write, and are copied into a shadow only when they first change before END (the spaces that map the pool are write-protected at their top level). account needs WRITE and a free frame per record (NO_MEMORY with nothing changed if it has fewer); if it has spent them when a page must be copied, the capture is lost and READ says NO_MEMORY. Returns the epoch and the number of records (the frames in use and the kernel record, last). BAD_STATE unless open; IN_USE if the pool holds device state (a DMA domain), which does not persist.
    /// Results: (epoch, records).
    #[inline]
    pub fn begin(self, account: u64) -> Result<(u64, u64)> {
        invoke(self.0, method::checkpoint::BEGIN, [account, 0, 0, 0]).map(|r| (r[0], r[1]))
    }

    /// CHECKPOINT.READ (5, needs READ): Record index (below BEGIN's count) of the captured checkpoint, sealed: its content, encrypted, into page (a PAGE with WRITE), and its descriptor (CHECKPOINT_RECORD_WORDS words: the info word, the version, the tag, the epoch it was sealed in, the nonce) to ptr; the seal binds the content to the descriptor. Dirty tracking: with since, the epoch of an earlier checkpoint of this boot's keys (0: none), a record that has not changed since that checkpoint's BEGIN is not sealed again: then nothing is written, and unchanged is the number of records from index on that are all unchanged since (data pages and donated frames with the same record as in that checkpoint), lying in frames first to end - 1, where every other frame was free then and is free now. Otherwise unchanged is 0 and first and end are the record's frame and the next (the kernel record's: the frame after the pool's last). BAD_STATE unless captured.
    /// Results: (unchanged, first, end).
    #[inline]
    pub fn read(self, index: u64, page: u64, ptr: u64, since: u64) -> Result<(u64, u64, u64)> {
        invoke(self.0, method::checkpoint::READ, [index, page, ptr, since]).map(|r| (r[0], r[1], r[2]))
    }

    /// CHECKPOINT.END (6, needs WRITE): The write-out is over: give the shadow frames back to BEGIN's account (how many) and open the pool again. BAD_STATE unless captured.
    /// Results: (frames).
    #[inline]
    pub fn end(self) -> Result<u64> {
        invoke(self.0, method::checkpoint::END, [0, 0, 0, 0]).map(|r| r[0])
    }

    /// CHECKPOINT.RESTORE (7, needs WRITE): Put one record READ gave back into the shut (or restoring) pool: page holds its sealed content and ptr its descriptor. BAD_SEAL if the seal does not open under the current keys; IN_USE if its frame is already restored; INVALID_ARG for a frame outside the pool, a type that does not persist, or a number page outside the persistent range. Nothing changes on an error; the record's frame is in use (not yet live) after it.
    /// Results: (-).
    #[inline]
    pub fn restore(self, page: u64, ptr: u64) -> Result<()> {
        invoke(self.0, method::checkpoint::RESTORE, [page, ptr, 0, 0]).map(drop)
    }

    /// CHECKPOINT.RESUME (8, needs WRITE): After the last RESTORE: check that the kernel record and every record it counts are back, then make the restored objects live: accounts, number pages, address spaces (their kernel half and tables, mappings of frames outside the pool removed), processes (runnable ones queued; a wait that restarts restarted; a sleep with the time it had left; a call whose return capability did not persist ends with NO_REPLY), capabilities naming anything outside the pool made stale. Returns the processes and records restored; the pool is open, its persistent spaces write-protected so that every change after RESUME is tracked. BAD_SEAL if the kernel record is not there or the records restored are not exactly those it names (each frame's, sealed in the epoch it names: records of two checkpoints never mix): every restored frame is given back and the pool is shut again (empty), so that OPEN can start afresh. BAD_STATE unless restoring.
    /// Results: (processes, records).
    #[inline]
    pub fn resume(self) -> Result<(u64, u64)> {
        invoke(self.0, method::checkpoint::RESUME, [0, 0, 0, 0]).map(|r| (r[0], r[1]))
    }
}

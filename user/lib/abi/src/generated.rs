// generated from abi/keep.toml by tools/abigen.py; do not edit.
#![allow(dead_code)]

pub const VERSION: (u64, u64, u64) = (0, 2, 0);
pub const TAG_METHOD_MASK: u64 = 0xffff;

/// Error codes
pub mod err {
    /// The invocation succeeded.
    pub const OK: u64 = 0x0;
    /// The capability address names an empty (null) slot.
    pub const INVALID_CAP: u64 = 0x1;
    /// A capability argument has the wrong object type.
    pub const WRONG_TYPE: u64 = 0x2;
    /// The capability lacks a right the method needs (a weak capability has no WRITE).
    pub const NO_RIGHTS: u64 = 0x3;
    /// The object type has no method with this number, or the invocation mode does not apply to it.
    pub const INVALID_METHOD: u64 = 0x4;
    /// An argument is out of range or malformed (including reserved tag bits).
    pub const INVALID_ARG: u64 = 0x5;
    /// The memory pool or the kernel-memory account is empty and no kpager can refill it.
    pub const NO_MEMORY: u64 = 0x6;
    /// The capability refers to an object that has been destroyed or revoked, or a return capability already used (version mismatch).
    pub const STALE: u64 = 0x7;
    /// A non-blocking phase could not complete at once (no receiver waiting, no message queued, no input).
    pub const WOULD_BLOCK: u64 = 0x8;
    /// The object is not in a state that allows the method.
    pub const BAD_STATE: u64 = 0x9;
    /// A user buffer (or the IPC buffer) is not mapped with the access the operation needs.
    pub const FAULT: u64 = 0xa;
    /// The destination slot or virtual address is already in use.
    pub const EXISTS: u64 = 0xb;
    /// Nothing is mapped at the given virtual address or capability address.
    pub const NOT_MAPPED: u64 = 0xc;
    /// The capability address lies in the capability space but no cappage is mapped there.
    pub const NO_CAPPAGE: u64 = 0xd;
    /// The capability address lies beyond the capability space (CAP_SPACE_SLOTS).
    pub const OUT_OF_RANGE: u64 = 0xe;
    /// A receive phase ended because its time-out expired.
    pub const TIMEOUT: u64 = 0xf;
    /// The resource is in use: a frame that is still mapped, an interrupt line already bound, or a device resource the kernel keeps for itself.
    pub const IN_USE: u64 = 0x10;
    /// An exported kernel object does not validate: it was altered, it was restored before (a replay), it is another object's, or another kernel made it.
    pub const BAD_SEAL: u64 = 0x11;
    /// A call's reply can never come: its return capability was deleted or overwritten, or the cappage or address space that held it went away (the callee's space lost its last process, was destroyed, or unmapped the cappage). The call is over.
    pub const NO_REPLY: u64 = 0x12;
}

/// Object types
pub mod ty {
    /// The null capability (all-zero); every invocation fails with INVALID_CAP.
    pub const NULL: u64 = 0x0;
    /// The kernel's debug console on the first serial port.
    pub const CONSOLE: u64 = 0x1;
    /// Control of the machine: information, the memory map, power-off, self-checks. Given only to the root task.
    pub const KERNEL: u64 = 0x2;
    /// A pool of free physical frames: data pages and cappages are made from it, and kernel-memory accounts are funded from it.
    pub const MEMORY: u64 = 0x3;
    /// One 4 KiB data frame; mapped into address spaces. Never holds capabilities.
    pub const PAGE: u64 = 0x4;
    /// An address space: page tables for data plus a sparse capability space of cappages.
    pub const ASPACE: u64 = 0x5;
    /// A process: registers, an address space, an IPC buffer, a fault handler, a priority and a state.
    pub const PROCESS: u64 = 0x6;
    /// One 4 KiB frame of 256 capability slots; mapped into capability spaces, never readable or writable by user code.
    pub const CAPPAGE: u64 = 0x7;
    /// A sender capability: invoking it sends an IPC message to its process, which learns the capability's protected payload.
    pub const SENDER: u64 = 0x8;
    /// A return capability, made by the kernel for the callee of a call: invoking it sends the reply. Works at most once.
    pub const RETURN: u64 = 0x9;
    /// A forwarding object around another capability: invoking it invokes the wrapped capability with the wrapper's rights; revoking it kills every copy.
    pub const WRAPPER: u64 = 0xa;
    /// A kernel-memory account: frames donated by its kpager, from which address spaces, processes and wrappers are made and page tables grow.
    pub const ACCOUNT: u64 = 0xb;
    /// Time: the clock and sleeping.
    pub const TIMER: u64 = 0xc;
    /// A range of physical addresses outside RAM (device registers): its pages are mapped uncached with ASPACE.MAP. Never covers RAM or the kernel's own devices.
    pub const DEVMEM: u64 = 0xd;
    /// A range of I/O ports, read and written by invoking the capability.
    pub const IOPORT: u64 = 0xe;
    /// A range of interrupt lines (I/O APIC inputs and MSI lines): a line is bound to a process, which then receives each interrupt as an IPC message, or to a notification, into which each interrupt ORs bits.
    pub const INTERRUPT: u64 = 0xf;
    /// A DMA domain: the address space the IOMMU gives the PCI devices attached to it. A driver maps into it only pages it holds capabilities to; each stays pinned while mapped (docs/devices.md).
    pub const DMA_DOMAIN: u64 = 0x10;
    /// A word of event bits: senders OR bits in without blocking (SIGNAL), a waiter takes and clears them (WAIT, POLL); bound to a process, its signals arrive as NOTIFY messages in that process's receives.
    pub const NOTIFICATION: u64 = 0x11;
    /// The checkpoint of the persistent memory pool: capture of every object made from the pool at one consistency point, its sealed write-out, and its restore at a later boot (docs/persistence.md). Given only to the root task, which may grant it to the checkpointer.
    pub const CHECKPOINT: u64 = 0x12;
}

/// Rights
pub mod rights {
    /// Read: map readable; query; fetch capabilities.
    pub const READ: u64 = 0x1;
    /// Write: map writable; change the object; send a message.
    pub const WRITE: u64 = 0x2;
    /// Execute: map executable.
    pub const EXEC: u64 = 0x4;
    /// Call: invoke a SENDER in CALL mode, which gives the callee a return capability. Without it a capability is no-call (send only).
    pub const CALL: u64 = 0x8;
    /// Every right (READ, WRITE, EXEC, CALL).
    pub const ALL: u64 = 0xf;
    /// Weak (a restriction, not a right): implies no WRITE, and capabilities fetched through it are weakened too. Added, never removed, by a rights mask.
    pub const WEAK: u64 = 0x10;
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
    /// Time since boot in ticks of 1/TIMER_HZ second, read from the TSC.
    pub const TICKS: u64 = 0x5;
    /// Size of the kernel image in memory (bytes).
    pub const KERNEL_BYTES: u64 = 0x6;
    /// Ticks a second of TICKS and TIMER.NOW (the timer interrupt is one-shot, not periodic).
    pub const TIMER_HZ: u64 = 0x7;
    /// Calls and reply-and-receives completed by the IPC fast path since boot.
    pub const FASTPATH_IPC: u64 = 0x8;
    /// Frames whose page was destroyed while a DMA hold (DMA_DOMAIN.HOLD) kept them: they go back to the pool with their last hold.
    pub const HELD_FRAMES: u64 = 0x9;
    /// Parts of ACCOUNT.DESTROY_ALL and ACCOUNT.DESTROY since boot that ended at their restart point (32 processes, DESTROY_TABLES page tables or MOVE_FRAMES frames given back, the invocation restarted to go on).
    pub const DESTROY_RESTARTS: u64 = 0xb;
    /// Parts of MEMORY.REVOKE since boot that ended at its restart point (REVOKE_TABLES page tables searched, the invocation restarted to go on).
    pub const REVOKE_RESTARTS: u64 = 0xa;
    /// Parts of MEMORY.DONATE and ACCOUNT.RECLAIM since boot that ended at their restart point (MOVE_FRAMES frames moved, the invocation restarted with the count of those still to move).
    pub const MOVE_RESTARTS: u64 = 0xc;
    /// Parts of CHECKPOINT.READ of the kernel record since boot that ended at their restart point (DIGEST_FRAMES pool frames added to the digest of the record set, the invocation restarted to go on).
    pub const DIGEST_RESTARTS: u64 = 0xe;
    /// NOTIFICATION.SIGNALs and WAITs completed by the notification fast path since boot, straight back to the caller or switching directly to the process that runs next (docs/kernel-manual.md, "Fast path").
    pub const FASTPATH_NTFN: u64 = 0xd;
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
    /// Extended processor state (CR4.OSXSAVE): the kernel saves, with XSAVE, every state component XCR0 enables (x87, SSE and AVX where the CPU has it) across switches.
    pub const XSAVE: u64 = 0x200;
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
    /// The program's own address space (and so its own capability space).
    pub const SELF_ASPACE: u64 = 0x4;
    /// A memory pool.
    pub const MEMORY: u64 = 0x5;
    /// The kernel-memory account that pays for the program's own objects.
    pub const ACCOUNT: u64 = 0x6;
    /// The timer.
    pub const TIMER: u64 = 0x7;
    /// Device memory: every physical page between the top of low RAM and the end of the physical address space (at most 2^44), RAM excepted (root task and trusted programs).
    pub const DEVMEM: u64 = 0x8;
    /// Every I/O port (root task and trusted programs).
    pub const IOPORT: u64 = 0x9;
    /// Every interrupt line: the I/O APIC's and the MSI lines (root task and trusted programs).
    pub const INTERRUPT: u64 = 0xa;
    /// The persistent memory pool: what is made from it is in every checkpoint (root task).
    pub const PERSISTENT_MEMORY: u64 = 0xb;
    /// The checkpoint object (root task).
    pub const CHECKPOINT: u64 = 0xc;
    /// The first slot that is not reserved by convention.
    pub const FIRST_FREE: u64 = 0x10;
}

/// Layout constants
pub mod layout {
    /// Capability addresses per capability space (2^32); an address at or beyond it is OUT_OF_RANGE.
    pub const CAP_SPACE_SLOTS: u64 = 0x100000000;
    /// Capability slots in one cappage (16 bytes each); cappages are mapped at capability addresses that are multiples of it.
    pub const CAPPAGE_SLOTS: u64 = 0x100;
    /// Kernel virtual address of the capability segment: the kernel-only alias of the current capability space (slot n at CAP_SEGMENT + 16 n).
    pub const CAP_SEGMENT: u64 = 0xfffffe0000000000;
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
    /// Frames the kernel moves into the root task's kernel-memory account at boot (after paying for the root task itself).
    pub const ROOT_ACCOUNT_FRAMES: u64 = 0x100;
    /// Largest byte string one message carries.
    pub const MAX_STRING: u64 = 0x1000;
    /// Capabilities one message carries, and receive slots one receive phase names.
    pub const MAX_CAPS: u64 = 0x4;
    /// Receive slots one receive phase names: a call's return capability plus MAX_CAPS.
    pub const MAX_RECV_SLOTS: u64 = 0x5;
    /// Process numbers (the number in process capabilities is 20 bits wide): 16,384 pages of 64, of which accounts buy pages of 63 usable numbers, a frame each, as their processes need them (docs/kernel-memory.md).
    pub const PROCESS_NUMBERS: u64 = 0x100000;
    /// Interrupt lines (I/O APIC inputs, GSIs 0-23). Lines 0-15 are edge-triggered active high (ISA), 16-23 level-triggered active low (PCI).
    pub const IRQ_LINES: u64 = 0x18;
    /// Message-signalled interrupt lines, numbered IRQ_LINES to IRQ_LINES + MSI_LINES - 1 (24-55): each is a vector a PCI function's MSI or MSI-X message reaches once INTERRUPT.ROUTE_MSI routed it there. They are edge-triggered and never masked.
    pub const MSI_LINES: u64 = 0x20;
    /// DMA faults one domain keeps for its fault handler until it receives them.
    pub const DMA_FAULT_QUEUE: u64 = 0x10;
    /// Tags of DMA_DOMAIN.HOLD: 0 to DMA_HOLD_TAGS - 1 (a mediator's queue and descriptor head, say).
    pub const DMA_HOLD_TAGS: u64 = 0x1000;
    /// Frames a DMA domain's hold table grows to at most: 512 holds each.
    pub const DMA_HOLD_FRAMES: u64 = 0x8;
    /// Holds one frame can have at once, over all domains.
    pub const DMA_HOLD_MAX: u64 = 0xffff;
    /// Size of the persistent memory pool in MiB, taken from the top of RAM, unless the kernel command line says pool=N (N MiB, 0 to 1024; 0: no pool).
    pub const PERSISTENT_POOL_MIB: u64 = 0x20;
    /// Pages of 63 process numbers kept for the processes of persistent accounts (the last of the process-number pages), so that a restored process gets the number it had.
    pub const PERSISTENT_NUMBER_PAGES: u64 = 0x100;
    /// Words of a record's descriptor, as CHECKPOINT.READ returns it and RESTORE takes it: the info word (frame number in bits 0-31, frame type 32-39, number page 40-63; 0 for the kernel record), the object's version, the two words of the seal's tag, the epoch it was sealed in (a kernel object's: the capture's; a data page's or donated frame's: the first epoch whose BEGIN saw its content, so that its record is the same in every checkpoint until it changes), and the seal's nonce (which depends on the frame and its content only).
    pub const CHECKPOINT_RECORD_WORDS: u64 = 0x6;
    /// Smallest budget PROCESS.SET_BUDGET gives (microseconds).
    pub const BUDGET_MIN_US: u64 = 0x64;
    /// Page tables ACCOUNT.DESTROY_ALL frees (with the mappings in them) before its invocation restarts from the system call, letting interrupts in.
    pub const DESTROY_TABLES: u64 = 0x4;
    /// Frames MEMORY.DONATE, ACCOUNT.RECLAIM and ACCOUNT.DESTROY_ALL move between the pool and an account before the invocation restarts from the system call, letting interrupts in.
    pub const MOVE_FRAMES: u64 = 0x200;
    /// Pool frames CHECKPOINT.READ of the kernel record adds to the digest of the record set before its invocation restarts from the system call, letting interrupts in.
    pub const DIGEST_FRAMES: u64 = 0x100;
    /// Page tables MEMORY.REVOKE searches (512 entries each) before its invocation restarts from the system call, letting interrupts in.
    pub const REVOKE_TABLES: u64 = 0x8;
    /// Shortest budget period (microseconds).
    pub const BUDGET_MIN_PERIOD_US: u64 = 0x3e8;
    /// Longest budget period (microseconds).
    pub const BUDGET_MAX_PERIOD_US: u64 = 0x989680;
    /// How far BUDGET's consumed may exceed the budget (microseconds): none, since the time a process runs past its budget before the timer interrupt parks it is not charged.
    pub const BUDGET_OVERRUN_US: u64 = 0x0;
    /// Most wrappers one invocation passes through (INVALID_CAP beyond).
    pub const WRAPPER_DEPTH: u64 = 0x4;
    /// Device pages one wrapper can have mapped through it at once (ASPACE.MAP of a DEVMEM capability it stands for; NO_MEMORY beyond). Destroying the wrapper unmaps them.
    pub const WRAPPER_DEVICE_MAPS: u64 = 0x7e;
    /// Word 2 of a KMEM fault: the account needs frames (word 0 says how many).
    pub const KMEM_FRAMES: u64 = 0x0;
    /// Word 2 of a KMEM fault: a process the account's kpager exported is needed (word 3 is the export's identifier); the kpager answers after ACCOUNT.RESTORE_PROCESS.
    pub const KMEM_PROCESS: u64 = 0x1;
}

/// Message tag fields (rsi)
pub mod tag {
    /// Bits 0-15: the label (method number for kernel objects, free for IPC).
    pub const LABEL_MASK: u64 = 0xffff;
    /// Bits 16-18: capabilities to send (0-4), listed in the IPC buffer's send_caps; on return, capabilities received.
    pub const CAPS_SHIFT: u64 = 0x10;
    /// Bits 19-21: receive slots (0-5), listed in the IPC buffer's recv_slots.
    pub const SLOTS_SHIFT: u64 = 0x13;
    /// Width mask of the two count fields.
    pub const COUNT_MASK: u64 = 0x7;
    /// Bit 22: send the byte string of the IPC buffer (send_len bytes); on return, a string arrived (recv_len bytes).
    pub const STRING: u64 = 0x400000;
    /// Bits 24-25: the mode, one of MODE_*.
    pub const MODE_SHIFT: u64 = 0x18;
    /// Send, then wait for the reply through the return capability made for the callee. Kernel objects only take this mode.
    pub const MODE_CALL: u64 = 0x0;
    /// Send only.
    pub const MODE_SEND: u64 = 0x1;
    /// Open receive only (rdi ignored).
    pub const MODE_RECV: u64 = 0x2;
    /// Send, then open receive (reply-and-receive when rdi is a return capability).
    pub const MODE_SEND_RECV: u64 = 0x3;
    /// Bit 26: fail the send phase with WOULD_BLOCK instead of waiting for the receiver.
    pub const SEND_NONBLOCK: u64 = 0x4000000;
    /// Bit 27: fail the receive phase with WOULD_BLOCK when no message is waiting.
    pub const RECV_NONBLOCK: u64 = 0x8000000;
    /// Bit 28 (received tag only): the message is a call; receive slot 0 holds its return capability.
    pub const CALLED: u64 = 0x10000000;
}

/// Labels of kernel-made messages
pub mod label {
    /// A CPU exception (page fault included). Words: vector, rip, address (CR2 for a page fault, else 0), error code.
    pub const EXCEPTION: u64 = 0xff00;
    /// A system call of a process in emulation mode (rip is past the instruction). Words: rax, rdi, rsi, rdx.
    pub const SYSCALL: u64 = 0xff01;
    /// A kernel-memory fault: the account needs frames, or a process it exported. Words: frames needed, frames in the account, what is needed (KMEM_FRAMES or KMEM_PROCESS), the export's identifier (KMEM_PROCESS: the process number in bits 0-19, the export's generation above). The faulting invocation restarts after the reply.
    pub const KMEM: u64 = 0xff02;
    /// An interrupt on a bound line (a send, not a call). Words: line, 0, 0, 0; the payload is that of the SENDER given to INTERRUPT.BIND. The line stays masked until INTERRUPT.ACK.
    pub const IRQ: u64 = 0xff03;
    /// A bound notification's bits (a send): words: bits, 0, 0, 0; the payload is that of the SENDER given to NOTIFICATION.BIND. The word is cleared as it is delivered.
    pub const NOTIFY: u64 = 0xff05;
    /// A device attached to a DMA domain accessed a device address the domain does not map with that access (a send). Words: device (PCI bus << 8 | device << 3 | function), device address (page), VT-d fault reason, 1 for a write or 0 for a read; the payload is that of the SENDER given to DMA_DOMAIN.SET_FAULT_HANDLER. Faults that find the handler not receiving wait in the domain (DMA_FAULT_QUEUE of them; later ones are counted as lost) and come when it next receives.
    pub const DMA_FAULT: u64 = 0xff04;
}

/// Reply labels for fault messages
pub mod reply {
    /// Resume the process with its registers as they are (a handler may have changed them with WRITE_REGS).
    pub const RESUME: u64 = 0x0;
    /// Resume the process with rax set to data word 0 (the result of an emulated system call).
    pub const RESUME_SET_RAX: u64 = 0x1;
    /// Stop the process (state STOPPED, reported to waiters).
    pub const STOP: u64 = 0x2;
}

/// IPC buffer layout (byte offsets)
pub mod ipc {
    /// Offset of u64 send_caps[4]: capability address in bits 0-31, rights mask in bits 32-36 (0 keeps the rights as they are).
    pub const SEND_CAPS: u64 = 0x0;
    /// Offset of u64 recv_slots[5]: capability addresses where received capabilities go, in order (overwriting what is there); a call's return capability takes the first. Each slot at most once, by whatever address (a cappage mapped at two places reaches its slots through both): a receive phase naming one twice is INVALID_ARG before anything happens.
    pub const RECV_SLOTS: u64 = 0x20;
    /// Offset of u64 send_len: bytes of the string to send (at most MAX_STRING).
    pub const SEND_LEN: u64 = 0x48;
    /// Offset of u64 recv_len: written by the kernel, bytes of the string received.
    pub const RECV_LEN: u64 = 0x50;
    /// Offset of the string bytes (MAX_STRING); sent from here, received here.
    pub const STRING: u64 = 0x1000;
    /// Size of the IPC buffer.
    pub const SIZE: u64 = 0x2000;
}

/// Register block of READ_REGS and WRITE_REGS (word indexes)
pub mod reg {
    /// rax
    pub const RAX: u64 = 0x0;
    /// rbx
    pub const RBX: u64 = 0x1;
    /// rcx
    pub const RCX: u64 = 0x2;
    /// rdx
    pub const RDX: u64 = 0x3;
    /// rsi
    pub const RSI: u64 = 0x4;
    /// rdi
    pub const RDI: u64 = 0x5;
    /// rbp
    pub const RBP: u64 = 0x6;
    /// rsp
    pub const RSP: u64 = 0x7;
    /// r8
    pub const R8: u64 = 0x8;
    /// r9
    pub const R9: u64 = 0x9;
    /// r10
    pub const R10: u64 = 0xa;
    /// r11
    pub const R11: u64 = 0xb;
    /// r12
    pub const R12: u64 = 0xc;
    /// r13
    pub const R13: u64 = 0xd;
    /// r14
    pub const R14: u64 = 0xe;
    /// r15
    pub const R15: u64 = 0xf;
    /// rip (must lie in the user half)
    pub const RIP: u64 = 0x10;
    /// rflags (only the arithmetic flags, DF and TF are taken on write; IF stays set)
    pub const RFLAGS: u64 = 0x11;
    /// Number of registers in the block (the block is COUNT * 8 bytes).
    pub const COUNT: u64 = 0x12;
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
        /// Describe the existing process with the smallest process id >= index: pid in bits 0-31, state in 32-39, priority in 40-47; its name (16 bytes, little-endian); next is the index to ask for next (0 when none is left). INVALID_ARG when there is none. Destroyed processes are gone.
        pub const PROCESS_INFO: u64 = 3;
        /// Walk the page tables of the kernel and of the caller's address space and count violations of one CHECK_* invariant, and the mappings checked.
        pub const CHECK_PAGING: u64 = 4;
        /// Power the machine off (ACPI S5). Does not return.
        pub const POWEROFF: u64 = 5;
        /// Leave QEMU through isa-debug-exit with status (code << 1) | 1; if the device is absent, power off.
        pub const DEBUG_EXIT: u64 = 6;
        /// Copy the kernel command line (at most len bytes) to ptr; return its full length.
        pub const CMDLINE: u64 = 7;
        /// Check the kernel's own invariants (run queues, send queues, process table, frame counts of every account and of the memory pool, capability segment tables) and return the number of violations found (each is printed) and of items checked.
        pub const CHECK_INVARIANTS: u64 = 8;
        /// Replace the keys that seal exported processes by keys derived from the 32 bytes at ptr, so that what is sealed under a key opens under the same key at a later boot (docs/persistence.md, "The seal and its key"). BAD_STATE while any process is exported (its export would never open again).
        pub const SET_SEAL_KEY: u64 = 10;
        /// Count the interrupts that arrived at vectors nothing owns since boot: low, those at vectors 0-31 (where the CPU's exceptions are; a device's message can name any vector, and the kernel tells such an interrupt from an exception by the local APIC's in-service bit, acknowledges it and goes on with what ran), low_vectors, a bit for each such vector seen, and unowned, those at vectors 32-255 that no interrupt line or kernel handler uses.
        pub const INTERRUPT_STATS: u64 = 9;
        /// In the coverage build of the kernel (make KCOV=1, docs/coverage.md): copy the first len bytes (at most bytes) of the kernel's edge bitmap to ptr, return the number of bits set (edges) and the bitmap's size (bytes); with clear 1, then empty it. Each bit is a pair of basic blocks of the kernel's C code that ran one after the other (a hash of the two). Then set what the bitmap records from now on: with scope 0, the whole kernel (as at boot); with scope 1, only the caller's own system calls, from their entry until the kernel leaves them or runs another process (not interrupts, exceptions, other processes' calls and faults or the idle loop; the caller's destruction sets scope 0). BAD_STATE in the default build, which has no bitmap; INVALID_ARG if clear or scope is neither 0 nor 1 (nothing changes then).
        pub const COVERAGE: u64 = 11;
    }
    pub mod memory {
        /// Make a zeroed frame of type PAGE or CAPPAGE and place a capability with all rights (READ, WRITE, EXEC) at dest (which must be empty) in the caller's capability space. The capability's pool decides where the frame comes from: the general pool, or the persistent pool (slot PERSISTENT_MEMORY), which is BAD_STATE while it is shut (from boot until CHECKPOINT.OPEN or CHECKPOINT.RESUME).
        pub const RETYPE: u64 = 1;
        /// Return the number of free frames in the pool (the persistent pool's while it is shut: those not restored).
        pub const FREE: u64 = 2;
        /// Move frames (1 to 65536) free frames from the pool into the kernel-memory account named by the account capability (which needs WRITE). NO_MEMORY if the pool has fewer; nothing moves then. It goes in parts of MOVE_FRAMES frames: after each part the frames argument (r8) holds the frames still to move and the invocation restarts from the system call, so interrupts are taken in between; each restart is the DONATE of the rest, checked as a new one (a part that finds the pool short, because another task took frames meanwhile, is NO_MEMORY with the frames moved so far in the account and frames saying how many did not move). An account takes frames only from the pool its own frame came from (INVALID_ARG for the other), so that everything a persistent account makes is in the persistent pool; BAD_STATE from the persistent pool while it is shut.
        pub const DONATE: u64 = 3;
        /// Make an empty kernel-memory account (its own frame comes from the pool) and place a capability with all rights at dest. An account from the persistent pool is persistent: it is funded from that pool only, and its processes take their numbers from the persistent range (PERSISTENT_NUMBER_PAGES); BAD_STATE from the persistent pool while it is shut.
        pub const CREATE_ACCOUNT: u64 = 4;
        /// Destroy the PAGE or CAPPAGE named by frame (which needs WRITE): raise its version so that every copy is STALE, clear the slot, and give the frame back to the pool (a cappage's capabilities are discarded). IN_USE while it is mapped in any address space or capability space; nothing changes then.
        pub const RECLAIM: u64 = 5;
        /// Destroy the PAGE or CAPPAGE named by frame (which needs WRITE) wherever it is mapped: first remove every mapping of it from every address space, capability space and DMA domain (a search of all of them: for space banks, not for fast paths; the IOMMU's caches are invalidated), then do what RECLAIM does. Returns how many mappings were removed. The search goes through the address spaces in parts of REVOKE_TABLES page tables; after each part the invocation restarts from the system call and goes on where it stopped, so interrupts are taken in between. While it is under way the frame is mapped nowhere new (ASPACE.MAP, MAP_CAPPAGE and DMA_DOMAIN.MAP are IN_USE); a revoke its caller gives up half-way (it is destroyed) leaves the frame with the mappings not yet removed, and it may be mapped again.
        pub const REVOKE: u64 = 6;
    }
    pub mod aspace {
        /// Map the PAGE named by page at vaddr (page-aligned, user half) with rights (READ required; WRITE and EXEC not both; never more than the page capability has); offset must be 0. If page names a DEVMEM capability, map its page number offset instead, uncached (INVALID_ARG beyond the range; IN_USE for RAM or a device the kernel keeps). page may be a WRAPPER standing for a DEVMEM capability (for no other type: WRONG_TYPE): destroying the wrapper unmaps the page again; NO_MEMORY if the wrapper already has WRAPPER_DEVICE_MAPS pages mapped through it. A CAPPAGE is WRONG_TYPE: capabilities are never user-accessible. Page tables come from the address space's account. IN_USE while a MEMORY.REVOKE of the page is under way.
        pub const MAP: u64 = 1;
        /// Remove the data mapping at vaddr.
        pub const UNMAP: u64 = 2;
        /// Return the rights of the data mapping at vaddr and a frame number for identity comparison.
        pub const LOOKUP: u64 = 3;
        /// Map the CAPPAGE named by cappage into this capability space at cap_addr (a multiple of CAPPAGE_SLOTS below CAP_SPACE_SLOTS), so that its 256 slots have the addresses cap_addr to cap_addr + 255. A PAGE is WRONG_TYPE: data pages never hold capabilities. The segment's page tables come from the address space's account. IN_USE while a MEMORY.REVOKE of the cappage is under way.
        pub const MAP_CAPPAGE: u64 = 4;
        /// Remove the cappage mapped at cap_addr (a multiple of CAPPAGE_SLOTS). Its capabilities stay in the cappage.
        pub const UNMAP_CAPPAGE: u64 = 5;
        /// Copy the capability at src in the caller's space to the empty slot dest of this capability space, with its rights reduced by the rights mask (0 keeps them). A RETURN capability is never copied: INVALID_ARG.
        pub const INSERT_CAP: u64 = 6;
        /// Copy the capability at src of this capability space to the empty slot dest of the caller's space, reduced by the rights mask. Through a weak ASPACE capability the copy is weakened: a PAGE keeps only READ, a CAPPAGE or ASPACE becomes weak, anything else arrives as the null capability. A RETURN capability is never copied: INVALID_ARG.
        pub const EXTRACT_CAP: u64 = 7;
        /// Empty slot of this capability space (INVALID_CAP if it is already empty). If it held the return capability of a call still waiting for its reply, that call ends at once with NO_REPLY (a fault message's: the process stops as FAULTED).
        pub const DELETE_CAP: u64 = 8;
        /// Copy src to the empty slot dest, both in this capability space, reduced by the rights mask (0 keeps the rights; WEAK in the mask weakens). A stale capability copies as it is. A RETURN capability is never copied (INVALID_ARG): there is one per call, so that its caller can be told when it goes; MOVE_CAP moves it.
        pub const COPY_CAP: u64 = 9;
        /// Move src to the empty slot dest in this capability space; src becomes null. Moving a slot onto itself is EXISTS.
        pub const MOVE_CAP: u64 = 10;
        /// Return the type and rights of the capability at slot of this capability space, and live = 1 if its object still exists (0 if stale). A null slot gives type NULL.
        pub const IDENTIFY_CAP: u64 = 11;
        /// Compare the capabilities at a and b of this capability space: same_object = 1 if they designate the same object (a SENDER and its PROCESS count as the same), identical = 1 if both words are equal (same rights and payload too).
        pub const COMPARE_CAP: u64 = 12;
    }
    pub mod process {
        /// Set the instruction pointer, stack pointer and the two first argument registers of a process that is not running (CREATED, STOPPED, or waiting for its fault handler's reply; BAD_STATE otherwise, checked before the arguments). rip and rsp must lie in the user half.
        pub const SET_REGS: u64 = 1;
        /// Make a CREATED or STOPPED process runnable.
        pub const START: u64 = 2;
        /// Stop a runnable or blocked process. A blocked send restarts when the process is started again; a pending receive or reply wait ends with BAD_STATE in rax; its outstanding return capability dies.
        pub const STOP: u64 = 3;
        /// Return the state, the exit code or exception vector, and for a FAULTED process the faulting rip and address (CR2 for a page fault, error code otherwise).
        pub const STATUS: u64 = 4;
        /// Block until the process has EXITED or FAULTED, then return what STATUS returns. BAD_STATE for a process waiting on itself. If the process is destroyed meanwhile the wait restarts and fails with STALE.
        pub const WAIT: u64 = 5;
        /// End the process with an exit code (normally invoked on one's own process). Does not return to the caller when it is the caller.
        pub const EXIT: u64 = 6;
        /// Give up the rest of the caller's time slice to the next process at the same priority. Only on one's own process (INVALID_ARG otherwise).
        pub const YIELD: u64 = 7;
        /// Set the 16-byte name shown by ps.
        pub const SET_NAME: u64 = 8;
        /// Set the priority (0 lowest to 31 highest).
        pub const SET_PRIORITY: u64 = 9;
        /// Copy the process's registers (REG_* block) into the string area of the caller's IPC buffer. The process must not be running (not RUNNABLE); the caller reading itself is BAD_STATE.
        pub const READ_REGS: u64 = 10;
        /// Set the process's registers from the REG_* block in the string area of the caller's IPC buffer. Same states as SET_REGS; rip and rsp must lie in the user half.
        pub const WRITE_REGS: u64 = 11;
        /// Set the address of the process's IPC buffer (IPC_SIZE bytes, page-aligned, user half; 0 for none). It is checked when used: an unmapped buffer fails the invocation with FAULT.
        pub const SET_IPC_BUFFER: u64 = 12;
        /// Make the SENDER capability at sender the process's fault handler (0 removes it). Exceptions, page faults and emulated system calls become EXCEPTION or SYSCALL messages, sent as calls, to it; the reply label (REPLY_*) says how to go on. A process without one is stopped as FAULTED and reported.
        pub const SET_FAULT_HANDLER: u64 = 13;
        /// Turn emulation mode on (1) or off (0): in emulation mode every system call of the process is reflected to its fault handler as a SYSCALL message instead of being executed.
        pub const SET_EMULATION: u64 = 14;
        /// Place at dest (empty) of the caller's space a SENDER capability to this process carrying the 64-bit protected payload, with rights (a subset of WRITE and CALL; 0 gives both).
        pub const MINT: u64 = 15;
        /// Copy the process's x87/SSE/AVX state into the string area of the caller's IPC buffer, in XSAVE's standard format (the 512-byte FXSAVE region, the 64-byte header, then the components XCR0 enables) when the kernel runs with XSAVE, in FXSAVE's 512 bytes otherwise; size is its length. Same states as READ_REGS.
        pub const READ_VECTOR_STATE: u64 = 16;
        /// Set the process's x87/SSE/AVX state from the string area of the caller's IPC buffer, in READ_VECTOR_STATE's format and length. Same states as WRITE_REGS. INVALID_ARG, with nothing changed, for a state the CPU would refuse to load: MXCSR bits outside the CPU's MXCSR_MASK, and with XSAVE a header whose feature bits are not a subset of XCR0, that asks for the compacted format, or whose reserved bytes are not zero.
        pub const WRITE_VECTOR_STATE: u64 = 17;
        /// Let the process run at most budget_us microseconds of every period_us: once it has spent its budget in a period it is parked (not runnable, whatever its priority) until its next period begins, with a full budget. 0 and 0 remove the budget (the default: no limit). INVALID_ARG for a period below BUDGET_MIN_PERIOD_US or above BUDGET_MAX_PERIOD_US, a budget below BUDGET_MIN_US or above the period. NO_RIGHTS when the caller has a budget itself and asks for a larger share (budget/period) than its own, or for none. Either error changes nothing. A new budget starts a new period with nothing consumed and the ran-out count at 0.
        pub const SET_BUDGET: u64 = 18;
        /// The process's budget and period (0 and 0: none), the microseconds consumed in its current period (at most the budget plus BUDGET_OVERRUN_US), and how many periods it ran out of budget in.
        pub const BUDGET: u64 = 19;
        /// Make the process passive (on 1) or not (on 0), and return what it was. While a passive process serves a call (from receiving it until the call's return capability is used or lost, or the caller is gone), the time it runs is charged to the caller's budget, and through nested calls to further passive servers to the first caller that has one; when that budget is spent the server is parked until the caller's next period. A caller without a budget lends nothing: the server then runs on its own budget, or none. INVALID_ARG for on above 1. NO_RIGHTS when the caller has a budget itself and asks for 0 (as it may not remove a budget). Either error changes nothing.
        pub const SET_PASSIVE: u64 = 20;
        /// The nanoseconds the process has run since it was made (or resumed from a checkpoint): the time the CPU was its, in user mode and in the kernel on its behalf, to now when it is the caller; counted from the TSC at every switch. Time the CPU idles, and the time of the servers that answer its calls, are in nobody's or their own.
        pub const CPU_TIME: u64 = 21;
    }
    pub mod account {
        /// Return the frames the account holds unused, the frames in use by objects made from it, the frames its kpager has taken back from live objects so far (REVOKE_TABLE, REVOKE_PROCESS), and how many of its processes are exported now.
        pub const INFO: u64 = 1;
        /// Make the SENDER capability at sender the account's kpager; 0 removes it. When an operation finds the account empty, the invoking process sends a KMEM fault message to the kpager (a call) and its invocation restarts once the kpager replies; without a kpager the operation fails with NO_MEMORY.
        pub const SET_KPAGER: u64 = 2;
        /// Make an empty address space (2 frames: the object and its top-level page table) paid by this account, whose page tables also grow from this account; place a capability with all rights at dest.
        pub const CREATE_ASPACE: u64 = 3;
        /// Make a process (1 frame) in the address space named by aspace (which needs WRITE), paid by this account, and place a capability with all rights at dest. Its number comes from the account's number pages; when none is free the account buys one (1 more frame: a KMEM fault asks for 2). BAD_STATE when all PROCESS_NUMBERS numbers are taken. INVALID_ARG when one of the account and the address space is persistent (made from the persistent pool) and the other is not.
        pub const CREATE_PROCESS: u64 = 4;
        /// Make a wrapper (1 frame) around a copy of the capability at cap and place a WRAPPER capability with the given rights (READ, WRITE, EXEC, CALL) at dest. Invoking it invokes the wrapped capability with the rights both have. A RETURN capability cannot be wrapped (INVALID_ARG).
        pub const CREATE_WRAPPER: u64 = 5;
        /// Destroy the ASPACE, PROCESS or WRAPPER named by object, which must have been made from this account (INVALID_ARG otherwise): raise its version so that every capability to it fails with STALE, and give its frames (page tables included) back to the account. A process is stopped first; its waiters and senders restart and see STALE. An address space still used by a process is BAD_STATE. Revoking a wrapper is destroying it. An address space goes in parts of DESTROY_TABLES page tables, after each of which the invocation restarts from the system call; so does a DMA domain (the first part detaches its devices and lets its holds go; from then on every method on it is STALE).
        pub const DESTROY: u64 = 6;
        /// Give frames unused frames of the account back to the memory pool named by memory (which needs WRITE). NO_MEMORY if the account has fewer unused frames; nothing moves then. It goes in parts of MOVE_FRAMES frames, as MEMORY.DONATE does: after each part the frames argument (r8) holds the frames still to give back and the invocation restarts from the system call (a part that finds the account short, because its objects took frames meanwhile, is NO_MEMORY with frames saying how many did not move).
        pub const RECLAIM: u64 = 7;
        /// Destroy the account and everything made from it: its processes (exported ones too), its address spaces with every process running in them (whatever account paid for those), its wrappers and its DMA domains, as ACCOUNT.DESTROY does each; then give all its frames, used and unused, and its own frame back to the memory pool named by memory (which needs WRITE). Every capability to the account and to those objects becomes STALE. Works on the caller's own account too. It goes in parts (32 processes, DESTROY_TABLES page tables of its address spaces, with their mappings, or of its DMA domains, or MOVE_FRAMES of its unused frames given back); after each the invocation restarts from the system call and goes on, so interrupts are taken in between (a caller destroying its own account or space does it in one part).
        pub const DESTROY_ALL: u64 = 8;
        /// Take back, from a live address space paid by this account (aspace needs WRITE), the page table of the given level (1: the table of 4 KiB entries, 2: of 2 MiB entries, 3: of 1 GiB entries) that translates vaddr (user half), and every table below it. Page tables are redundant data: the mappings under them are dropped (as if unmapped), the frame is handed to the caller as an empty PAGE at dest, and the tables below it go back to the account's unused frames. The space's pager rebuilds the mappings by ASPACE.MAP when its processes fault on them (docs/kernel-memory.md). Returns the number of frames freed (the one at dest included). IN_USE if those tables translate the IPC buffer of a process in the space; NOT_MAPPED if there is no such table.
        pub const REVOKE_TABLE: u64 = 9;
        /// Export a live process made from this account: its control block is sealed (encrypted and authenticated with a key only the kernel has, bound to the process and to this export) into its own frame, which is handed to the caller as a PAGE at dest, and the process leaves the kernel. It is suspended: whatever needs it (a message, a reply, an invocation of its capabilities) makes the invoker send a KMEM fault (KMEM_PROCESS, id) to the account's kpager and restarts once the kpager replies. Returns the export's identifier (as in the KMEM fault). BAD_STATE for the caller itself, a process already out, a process whose fault message waits in a queue, or one that is a fault handler with fault messages queued; IN_USE for a process an interrupt line is bound to; INVALID_ARG for a process of another account.
        pub const REVOKE_PROCESS: u64 = 10;
        /// Bring an exported process of this account back from the PAGE at page (which needs WRITE, is mapped nowhere, and holds the export, as REVOKE_PROCESS made it or a copy): the seal is checked, the frame becomes the process's again (the page capability and its copies become STALE) and the process goes on where it was. BAD_SEAL, with nothing changed, for an export that was altered, is not this account's, is not the current export of its process (restored before, or the process was destroyed) or was made by another boot of the kernel; IN_USE while the page is mapped.
        pub const RESTORE_PROCESS: u64 = 11;
        /// REVOKE_TABLE for the capability segment: take back the segment's page table of the given level (1-3) that holds the cappage of capability address cap_addr, and every table below it, as an empty PAGE at dest. The cappages stay mapped: the address space records them, and the kernel rebuilds their tables from the record when a lookup needs them (from the space's account, with a KMEM fault if it is short; the invocation then runs again). Returns the frames freed. IN_USE if a process of the space waits with a receive slot under the table, if one of its processes is exported, or if the space has more cappages than its record holds.
        pub const REVOKE_CAP_TABLE: u64 = 12;
        /// Make an empty DMA domain (1 frame, and 1 for its top-level table) and place a DMA_DOMAIN capability with all rights at dest. Its tables grow from this account. BAD_STATE when every IOMMU domain number is in use. ACCOUNT.DESTROY destroys it: its devices are detached, its pages unpinned.
        pub const CREATE_DMA_DOMAIN: u64 = 13;
        /// Make a notification (1 frame) with no bits set and place a NOTIFICATION capability with all rights at dest. ACCOUNT.DESTROY destroys it: a process waiting in its WAIT starts the invocation again and finds the capability STALE; a bound process is unbound, its pending NOTIFY dropped.
        pub const CREATE_NOTIFICATION: u64 = 14;
    }
    pub mod timer {
        /// Return the milliseconds and timer ticks since boot.
        pub const NOW: u64 = 1;
        /// Block the caller for at least ms milliseconds (1 to 86,400,000), measured with the TSC.
        pub const SLEEP: u64 = 2;
        /// Block the caller until the time-stamp counter (what rdtsc reads) reaches tsc: an absolute deadline, for work released at fixed times. A deadline already passed returns at once; one more than 86,400,000 ms ahead is INVALID_ARG.
        pub const SLEEP_UNTIL: u64 = 3;
    }
    pub mod devmem {
        /// Return the physical address of the range's first page and its length in pages.
        pub const INFO: u64 = 1;
        /// Place at dest (empty) a DEVMEM capability with the same rights for the pages (at least 1) pages from physical address base (page-aligned), which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
        pub const RESTRICT: u64 = 2;
    }
    pub mod ioport {
        /// Return the first port of the range and the number of ports.
        pub const INFO: u64 = 1;
        /// Place at dest (empty) an IOPORT capability with the same rights for the count (at least 1) ports from base, which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
        pub const RESTRICT: u64 = 2;
        /// Read width bytes (1, 2 or 4) from port; every port read must lie in the range (INVALID_ARG otherwise). IN_USE for a port the kernel keeps (the interrupt controllers, its console, power-off and exit ports).
        pub const IN: u64 = 3;
        /// Write the low width bytes (1, 2 or 4) of value to port, under the rules of IN.
        pub const OUT: u64 = 4;
    }
    pub mod interrupt {
        /// Return the first line of the range and the number of lines.
        pub const INFO: u64 = 1;
        /// Place at dest (empty) an INTERRUPT capability with the same rights for the count (at least 1) lines from base, which must lie in this range. NO_RIGHTS through a wrapper (the copy would outlive the wrapper's revocation).
        pub const RESTRICT: u64 = 2;
        /// Deliver the interrupts of line (in the range) as IRQ messages through the SENDER capability sender (which needs WRITE; its payload arrives with each message) and unmask the line. An interrupt that comes while the process is not receiving waits, one per line, until it next receives. IN_USE if the line is bound already or the kernel keeps it (line 4, its console). Bound through a wrapper, the line is unbound when the wrapper is destroyed.
        pub const BIND: u64 = 3;
        /// Mask line and forget its binding (to a process or a notification) and any interrupt still waiting as a message (bits already ORed into a notification stay there); BAD_STATE if it is not bound, or bound to a notification that has been destroyed since (its binding went with it).
        pub const UNBIND: u64 = 4;
        /// Unmask line after its interrupt has been handled (each delivery masks an I/O APIC line; an MSI line is never masked, and ACK of it does nothing more than check); BAD_STATE if it is not bound.
        pub const ACK: u64 = 5;
        /// Route the MSI line line (in the range, IRQ_LINES to IRQ_LINES + MSI_LINES - 1) to the PCI function whose configuration page is page offset of the DEVMEM capability devmem (with WRITE, as in DMA_DOMAIN.ATTACH), and return the message address and data to program into that function's MSI or MSI-X capability. With interrupt remapping, remapping entry line is written for that function's source id alone (source-id verification) and the address is in remappable format naming it (data 0); without, the address is the compatibility-format one of this CPU and the data vector 0x30 + line. INVALID_ARG for an I/O APIC line or a page that is no function's configuration page; IN_USE if the line is routed already. Routed through a wrapper (standing for the INTERRUPT capability), the line is unrouted when the wrapper is destroyed.
        pub const ROUTE_MSI: u64 = 6;
        /// Undo ROUTE_MSI of line: its remapping entry is cleared (the function's messages to it are refused and reported by the IOMMU), its binding and any interrupt still waiting are dropped. BAD_STATE if it is not routed.
        pub const UNROUTE_MSI: u64 = 7;
        /// Deliver the interrupts of line (in the range) to the NOTIFICATION at notification (which needs WRITE) instead of as messages: each ORs bits (not 0: INVALID_ARG) into its word as SIGNAL does (its waiter runs, or the process bound to it gets a NOTIFY message), and unmask the line. ACK unmasks an I/O APIC line after each interrupt as for BIND; UNBIND undoes it. IN_USE if the line is bound already (to a process or a notification) or the kernel keeps it (line 4). A notification destroyed while bound loses the binding (the line is masked at its next interrupt); bound through a wrapper, the line is unbound when the wrapper is destroyed.
        pub const BIND_NOTIFICATION: u64 = 8;
    }
    pub mod dma_domain {
        /// Return the width of its device addresses (39 or 48 bits), the pages mapped, the devices attached, and remapping = 1 if the IOMMU translates DMA (0 on a machine without one: the domain then confines nothing).
        pub const INFO: u64 = 1;
        /// Let the domain's devices access the PAGE named by page at device address dev_addr (page-aligned, below 2^address_bits) with rights (READ for device reads, WRITE for device writes, at least one, never more than the page capability has: NO_RIGHTS). The page stays pinned (MEMORY.RECLAIM says IN_USE) until it is unmapped. EXISTS if dev_addr is mapped; INVALID_ARG for a page of the persistent pool, which no device reaches (a device's writes would escape the checkpoint's copy-on-write). Tables come from the domain's account. The IOMMU's caches are invalidated before it returns. IN_USE while a MEMORY.REVOKE of the page is under way.
        pub const MAP: u64 = 2;
        /// Remove the mapping at dev_addr; the IOMMU's translation caches are invalidated before the page is unpinned, so no device reaches it afterwards.
        pub const UNMAP: u64 = 3;
        /// Return the rights of the mapping at dev_addr and its frame number (for identity comparison with ASPACE.LOOKUP).
        pub const LOOKUP: u64 = 4;
        /// Attach the PCI function whose configuration page (in the ECAM area of the ACPI MCFG table) is page offset of the DEVMEM capability devmem: from now on its DMA is translated through this domain. Holding that page is the authority over the function. INVALID_ARG if the page is no function's configuration page; IN_USE if the function is attached to a domain already; BAD_STATE without an IOMMU.
        pub const ATTACH: u64 = 5;
        /// Detach the function named as in ATTACH (NOT_MAPPED if it is not attached to this domain): its DMA is blocked (it has no domain) until it is attached again.
        pub const DETACH: u64 = 6;
        /// Send the domain's DMA faults as DMA_FAULT messages through the SENDER capability at sender (which needs WRITE; 0 removes it: faults are then only counted). BAD_STATE if its process is exported (ACCOUNT.REVOKE_PROCESS); faults for a handler exported later wait in the queue.
        pub const SET_FAULT_HANDLER: u64 = 7;
        /// Return how many DMA faults the domain's devices have caused, how many wait for the fault handler, how many were lost because the queue was full, and how many holds (HOLD) the domain has.
        pub const FAULTS: u64 = 8;
        /// What LOOKUP does, and keep the frame mapped at dev_addr (which must be mapped with at least rights: NO_RIGHTS otherwise) from being reused until RELEASE of tag (below DMA_HOLD_TAGS): a software DMA mediator holds every frame of a request it puts on a device, so that a page unpinned and destroyed under the request cannot be given to anyone while the device may still write it. A destroyed page's frame held so goes back to the pool only when its last hold goes. Only where the IOMMU does not translate (BAD_STATE otherwise: unmapping invalidates its caches, and no device reaches the frame after). The hold table grows from the domain's account, a frame at a time, to DMA_HOLD_FRAMES frames (IN_USE when full, or when the frame has DMA_HOLD_MAX holds); NO_MEMORY as for MAP.
        pub const HOLD: u64 = 9;
        /// Let go of every hold whose tag is in tag..tag+count (within DMA_HOLD_TAGS) and return how many there were; a held frame whose page was destroyed goes back to the pool with its last hold. The mediator releases a request's holds when the device has completed it or has been reset. ACCOUNT.DESTROY of the domain releases all of them.
        pub const RELEASE: u64 = 10;
    }
    pub mod notification {
        /// OR bits (not 0: INVALID_ARG) into the notification's word, never blocking. A process waiting in WAIT is made to run and takes the word; otherwise, if a process is bound (BIND) and waits in an open receive, the word goes to it at once as a NOTIFY message and is cleared; otherwise the word keeps the bits (a bound process gets them at its next receive).
        pub const SIGNAL: u64 = 1;
        /// Take the word and clear it; if no bit is set, wait until a SIGNAL sets one, which ends the wait with the word as its result (even if the waiter's capability has moved or gone meanwhile). One process waits at a time: IN_USE for a second. A waiter whose notification is destroyed starts its WAIT again and finds its capability STALE.
        pub const WAIT: u64 = 2;
        /// Take the word and clear it without waiting (0: no bit was set).
        pub const POLL: u64 = 3;
        /// Bind the notification to the process the SENDER at sender (which needs WRITE) names: its signals then arrive in that process's receives as NOTIFY messages (words: bits, 0, 0, 0; the payload is the SENDER's), before any queued sender, so that one receive waits for messages and events at once. A process has at most one bound notification and a notification one process (IN_USE); BAD_STATE if the process is exported. Bits already set arrive at its next receive. An exported process loses its binding.
        pub const BIND: u64 = 4;
        /// Undo BIND (NOT_MAPPED if nothing is bound); bits set stay in the word.
        pub const UNBIND: u64 = 5;
        /// The word (not cleared), 1 if a process waits in WAIT, 1 if a live process is bound.
        pub const INFO: u64 = 6;
    }
    pub mod checkpoint {
        /// The pool's state (0 shut: from boot until OPEN or RESUME; 1 restoring: RESTORE has put records back; 2 open; 3 captured: between BEGIN and END), the epoch of the last checkpoint begun or restored, and the persistent pool's size and frames in use.
        pub const INFO: u64 = 1;
        /// Seal records under keys derived from the 32 bytes at ptr (as KERNEL.SET_SEAL_KEY, whose keys these are): READ seals under them and RESTORE opens only what they sealed. BAD_STATE while captured or while any process is exported.
        pub const SET_KEY: u64 = 2;
        /// Open the shut persistent pool empty (a fresh start: nothing is restored). BAD_STATE unless shut.
        pub const OPEN: u64 = 3;
        /// The consistency point: raise the epoch and capture every frame in use in the persistent pool and the kernel's record of the pool as they are at this instant. The kernel objects (processes with their registers and vector state, address spaces and their tables, cappages, accounts, number pages, notifications, wrappers) are copied into shadow frames taken from account; data pages, donated and free frames stay in place, copy-on-write, and are copied into a shadow only when they first change before END (the spaces that map the pool are write-protected at their top level). account needs WRITE and a free frame per record (NO_MEMORY with nothing changed if it has fewer); if it has spent them when a page must be copied, the capture is lost and READ says NO_MEMORY. Returns the epoch and the number of records (the frames in use and the kernel record, last). BAD_STATE unless open; IN_USE if the pool holds device state (a DMA domain), which does not persist.
        pub const BEGIN: u64 = 4;
        /// Record index (below BEGIN's count) of the captured checkpoint, sealed: its content, encrypted, into page (a PAGE with WRITE), and its descriptor (CHECKPOINT_RECORD_WORDS words: the info word, the version, the tag, the epoch it was sealed in, the nonce) to ptr; the seal binds the content to the descriptor. Dirty tracking: with since, the epoch of an earlier checkpoint of this boot's keys (0: none), a record that has not changed since that checkpoint's BEGIN is not sealed again: then nothing is written, and unchanged is the number of records from index on that are all unchanged since (data pages and donated frames with the same record as in that checkpoint), lying in frames first to end - 1, where every other frame was free then and is free now. Otherwise unchanged is 0 and first and end are the record's frame and the next (the kernel record's: the frame after the pool's last). BAD_STATE unless captured.
        pub const READ: u64 = 5;
        /// The write-out is over: give the shadow frames back to BEGIN's account (how many) and open the pool again. BAD_STATE unless captured.
        pub const END: u64 = 6;
        /// Put one record READ gave back into the shut (or restoring) pool: page holds its sealed content and ptr its descriptor. BAD_SEAL if the seal does not open under the current keys; IN_USE if its frame is already restored; INVALID_ARG for a frame outside the pool, a type that does not persist, or a number page outside the persistent range. Nothing changes on an error; the record's frame is in use (not yet live) after it.
        pub const RESTORE: u64 = 7;
        /// After the last RESTORE: check that the kernel record and every record it counts are back, then make the restored objects live: accounts, number pages, address spaces (their kernel half and tables, mappings of frames outside the pool removed), processes (runnable ones queued; a wait that restarts restarted; a sleep with the time it had left; a call whose return capability did not persist ends with NO_REPLY), capabilities naming anything outside the pool made stale. Returns the processes and records restored; the pool is open, its persistent spaces write-protected so that every change after RESUME is tracked. BAD_SEAL if the kernel record is not there or the records restored are not exactly those it names (each frame's, sealed in the epoch it names: records of two checkpoints never mix): every restored frame is given back and the pool is shut again (empty), so that OPEN can start afresh. BAD_STATE unless restoring.
        pub const RESUME: u64 = 8;
    }
}

/// Every method as (object type, method number, rights it needs, name): the
/// table the kernel's dispatch checks (keep_method_rights in abi.h).
pub const METHOD_RIGHTS: &[(u64, u64, u64, &str)] = &[
    (ty::CONSOLE, method::console::WRITE, rights::WRITE, "CONSOLE.WRITE"),
    (ty::CONSOLE, method::console::READ, rights::READ, "CONSOLE.READ"),
    (ty::KERNEL, method::kernel::INFO, rights::READ, "KERNEL.INFO"),
    (ty::KERNEL, method::kernel::MEMMAP, rights::READ, "KERNEL.MEMMAP"),
    (ty::KERNEL, method::kernel::PROCESS_INFO, rights::READ, "KERNEL.PROCESS_INFO"),
    (ty::KERNEL, method::kernel::CHECK_PAGING, rights::READ, "KERNEL.CHECK_PAGING"),
    (ty::KERNEL, method::kernel::POWEROFF, rights::WRITE, "KERNEL.POWEROFF"),
    (ty::KERNEL, method::kernel::DEBUG_EXIT, rights::WRITE, "KERNEL.DEBUG_EXIT"),
    (ty::KERNEL, method::kernel::CMDLINE, rights::READ, "KERNEL.CMDLINE"),
    (ty::KERNEL, method::kernel::CHECK_INVARIANTS, rights::READ, "KERNEL.CHECK_INVARIANTS"),
    (ty::KERNEL, method::kernel::SET_SEAL_KEY, rights::WRITE, "KERNEL.SET_SEAL_KEY"),
    (ty::KERNEL, method::kernel::INTERRUPT_STATS, rights::READ, "KERNEL.INTERRUPT_STATS"),
    (ty::KERNEL, method::kernel::COVERAGE, rights::READ, "KERNEL.COVERAGE"),
    (ty::MEMORY, method::memory::RETYPE, rights::WRITE, "MEMORY.RETYPE"),
    (ty::MEMORY, method::memory::FREE, rights::READ, "MEMORY.FREE"),
    (ty::MEMORY, method::memory::DONATE, rights::WRITE, "MEMORY.DONATE"),
    (ty::MEMORY, method::memory::CREATE_ACCOUNT, rights::WRITE, "MEMORY.CREATE_ACCOUNT"),
    (ty::MEMORY, method::memory::RECLAIM, rights::WRITE, "MEMORY.RECLAIM"),
    (ty::MEMORY, method::memory::REVOKE, rights::WRITE, "MEMORY.REVOKE"),
    (ty::ACCOUNT, method::account::INFO, rights::READ, "ACCOUNT.INFO"),
    (ty::ACCOUNT, method::account::SET_KPAGER, rights::WRITE, "ACCOUNT.SET_KPAGER"),
    (ty::ACCOUNT, method::account::CREATE_ASPACE, rights::WRITE, "ACCOUNT.CREATE_ASPACE"),
    (ty::ACCOUNT, method::account::CREATE_PROCESS, rights::WRITE, "ACCOUNT.CREATE_PROCESS"),
    (ty::ACCOUNT, method::account::CREATE_WRAPPER, rights::WRITE, "ACCOUNT.CREATE_WRAPPER"),
    (ty::ACCOUNT, method::account::DESTROY, rights::WRITE, "ACCOUNT.DESTROY"),
    (ty::ACCOUNT, method::account::RECLAIM, rights::WRITE, "ACCOUNT.RECLAIM"),
    (ty::ACCOUNT, method::account::DESTROY_ALL, rights::WRITE, "ACCOUNT.DESTROY_ALL"),
    (ty::ACCOUNT, method::account::REVOKE_TABLE, rights::WRITE, "ACCOUNT.REVOKE_TABLE"),
    (ty::ACCOUNT, method::account::REVOKE_PROCESS, rights::WRITE, "ACCOUNT.REVOKE_PROCESS"),
    (ty::ACCOUNT, method::account::RESTORE_PROCESS, rights::WRITE, "ACCOUNT.RESTORE_PROCESS"),
    (ty::ACCOUNT, method::account::REVOKE_CAP_TABLE, rights::WRITE, "ACCOUNT.REVOKE_CAP_TABLE"),
    (ty::ASPACE, method::aspace::MAP, rights::WRITE, "ASPACE.MAP"),
    (ty::ASPACE, method::aspace::UNMAP, rights::WRITE, "ASPACE.UNMAP"),
    (ty::ASPACE, method::aspace::LOOKUP, rights::READ, "ASPACE.LOOKUP"),
    (ty::ASPACE, method::aspace::MAP_CAPPAGE, rights::WRITE, "ASPACE.MAP_CAPPAGE"),
    (ty::ASPACE, method::aspace::UNMAP_CAPPAGE, rights::WRITE, "ASPACE.UNMAP_CAPPAGE"),
    (ty::ASPACE, method::aspace::INSERT_CAP, rights::WRITE, "ASPACE.INSERT_CAP"),
    (ty::ASPACE, method::aspace::EXTRACT_CAP, rights::READ, "ASPACE.EXTRACT_CAP"),
    (ty::ASPACE, method::aspace::DELETE_CAP, rights::WRITE, "ASPACE.DELETE_CAP"),
    (ty::ASPACE, method::aspace::COPY_CAP, rights::WRITE, "ASPACE.COPY_CAP"),
    (ty::ASPACE, method::aspace::MOVE_CAP, rights::WRITE, "ASPACE.MOVE_CAP"),
    (ty::ASPACE, method::aspace::IDENTIFY_CAP, rights::READ, "ASPACE.IDENTIFY_CAP"),
    (ty::ASPACE, method::aspace::COMPARE_CAP, rights::READ, "ASPACE.COMPARE_CAP"),
    (ty::PROCESS, method::process::SET_REGS, rights::WRITE, "PROCESS.SET_REGS"),
    (ty::PROCESS, method::process::START, rights::WRITE, "PROCESS.START"),
    (ty::PROCESS, method::process::STOP, rights::WRITE, "PROCESS.STOP"),
    (ty::PROCESS, method::process::STATUS, rights::READ, "PROCESS.STATUS"),
    (ty::PROCESS, method::process::WAIT, rights::READ, "PROCESS.WAIT"),
    (ty::PROCESS, method::process::EXIT, rights::WRITE, "PROCESS.EXIT"),
    (ty::PROCESS, method::process::YIELD, rights::READ, "PROCESS.YIELD"),
    (ty::PROCESS, method::process::SET_NAME, rights::WRITE, "PROCESS.SET_NAME"),
    (ty::PROCESS, method::process::SET_PRIORITY, rights::WRITE, "PROCESS.SET_PRIORITY"),
    (ty::PROCESS, method::process::READ_REGS, rights::READ, "PROCESS.READ_REGS"),
    (ty::PROCESS, method::process::WRITE_REGS, rights::WRITE, "PROCESS.WRITE_REGS"),
    (ty::PROCESS, method::process::SET_IPC_BUFFER, rights::WRITE, "PROCESS.SET_IPC_BUFFER"),
    (ty::PROCESS, method::process::SET_FAULT_HANDLER, rights::WRITE, "PROCESS.SET_FAULT_HANDLER"),
    (ty::PROCESS, method::process::SET_EMULATION, rights::WRITE, "PROCESS.SET_EMULATION"),
    (ty::PROCESS, method::process::MINT, rights::WRITE, "PROCESS.MINT"),
    (ty::PROCESS, method::process::READ_VECTOR_STATE, rights::READ, "PROCESS.READ_VECTOR_STATE"),
    (ty::PROCESS, method::process::WRITE_VECTOR_STATE, rights::WRITE, "PROCESS.WRITE_VECTOR_STATE"),
    (ty::PROCESS, method::process::SET_BUDGET, rights::WRITE, "PROCESS.SET_BUDGET"),
    (ty::PROCESS, method::process::BUDGET, rights::READ, "PROCESS.BUDGET"),
    (ty::PROCESS, method::process::SET_PASSIVE, rights::WRITE, "PROCESS.SET_PASSIVE"),
    (ty::PROCESS, method::process::CPU_TIME, rights::READ, "PROCESS.CPU_TIME"),
    (ty::TIMER, method::timer::NOW, rights::READ, "TIMER.NOW"),
    (ty::TIMER, method::timer::SLEEP, rights::READ, "TIMER.SLEEP"),
    (ty::TIMER, method::timer::SLEEP_UNTIL, rights::READ, "TIMER.SLEEP_UNTIL"),
    (ty::DEVMEM, method::devmem::INFO, rights::READ, "DEVMEM.INFO"),
    (ty::DEVMEM, method::devmem::RESTRICT, rights::READ, "DEVMEM.RESTRICT"),
    (ty::IOPORT, method::ioport::INFO, rights::READ, "IOPORT.INFO"),
    (ty::IOPORT, method::ioport::RESTRICT, rights::READ, "IOPORT.RESTRICT"),
    (ty::IOPORT, method::ioport::IN, rights::READ, "IOPORT.IN"),
    (ty::IOPORT, method::ioport::OUT, rights::WRITE, "IOPORT.OUT"),
    (ty::INTERRUPT, method::interrupt::INFO, rights::READ, "INTERRUPT.INFO"),
    (ty::INTERRUPT, method::interrupt::RESTRICT, rights::READ, "INTERRUPT.RESTRICT"),
    (ty::INTERRUPT, method::interrupt::BIND, rights::WRITE, "INTERRUPT.BIND"),
    (ty::INTERRUPT, method::interrupt::UNBIND, rights::WRITE, "INTERRUPT.UNBIND"),
    (ty::INTERRUPT, method::interrupt::ACK, rights::WRITE, "INTERRUPT.ACK"),
    (ty::INTERRUPT, method::interrupt::ROUTE_MSI, rights::WRITE, "INTERRUPT.ROUTE_MSI"),
    (ty::INTERRUPT, method::interrupt::UNROUTE_MSI, rights::WRITE, "INTERRUPT.UNROUTE_MSI"),
    (ty::INTERRUPT, method::interrupt::BIND_NOTIFICATION, rights::WRITE, "INTERRUPT.BIND_NOTIFICATION"),
    (ty::ACCOUNT, method::account::CREATE_DMA_DOMAIN, rights::WRITE, "ACCOUNT.CREATE_DMA_DOMAIN"),
    (ty::ACCOUNT, method::account::CREATE_NOTIFICATION, rights::WRITE, "ACCOUNT.CREATE_NOTIFICATION"),
    (ty::DMA_DOMAIN, method::dma_domain::INFO, rights::READ, "DMA_DOMAIN.INFO"),
    (ty::DMA_DOMAIN, method::dma_domain::MAP, rights::WRITE, "DMA_DOMAIN.MAP"),
    (ty::DMA_DOMAIN, method::dma_domain::UNMAP, rights::WRITE, "DMA_DOMAIN.UNMAP"),
    (ty::DMA_DOMAIN, method::dma_domain::LOOKUP, rights::READ, "DMA_DOMAIN.LOOKUP"),
    (ty::DMA_DOMAIN, method::dma_domain::ATTACH, rights::WRITE, "DMA_DOMAIN.ATTACH"),
    (ty::DMA_DOMAIN, method::dma_domain::DETACH, rights::WRITE, "DMA_DOMAIN.DETACH"),
    (ty::DMA_DOMAIN, method::dma_domain::SET_FAULT_HANDLER, rights::WRITE, "DMA_DOMAIN.SET_FAULT_HANDLER"),
    (ty::DMA_DOMAIN, method::dma_domain::FAULTS, rights::READ, "DMA_DOMAIN.FAULTS"),
    (ty::DMA_DOMAIN, method::dma_domain::HOLD, rights::WRITE, "DMA_DOMAIN.HOLD"),
    (ty::DMA_DOMAIN, method::dma_domain::RELEASE, rights::WRITE, "DMA_DOMAIN.RELEASE"),
    (ty::NOTIFICATION, method::notification::SIGNAL, rights::WRITE, "NOTIFICATION.SIGNAL"),
    (ty::NOTIFICATION, method::notification::WAIT, rights::READ, "NOTIFICATION.WAIT"),
    (ty::NOTIFICATION, method::notification::POLL, rights::READ, "NOTIFICATION.POLL"),
    (ty::NOTIFICATION, method::notification::BIND, rights::WRITE, "NOTIFICATION.BIND"),
    (ty::NOTIFICATION, method::notification::UNBIND, rights::WRITE, "NOTIFICATION.UNBIND"),
    (ty::NOTIFICATION, method::notification::INFO, rights::READ, "NOTIFICATION.INFO"),
    (ty::CHECKPOINT, method::checkpoint::INFO, rights::READ, "CHECKPOINT.INFO"),
    (ty::CHECKPOINT, method::checkpoint::SET_KEY, rights::WRITE, "CHECKPOINT.SET_KEY"),
    (ty::CHECKPOINT, method::checkpoint::OPEN, rights::WRITE, "CHECKPOINT.OPEN"),
    (ty::CHECKPOINT, method::checkpoint::BEGIN, rights::WRITE, "CHECKPOINT.BEGIN"),
    (ty::CHECKPOINT, method::checkpoint::READ, rights::READ, "CHECKPOINT.READ"),
    (ty::CHECKPOINT, method::checkpoint::END, rights::WRITE, "CHECKPOINT.END"),
    (ty::CHECKPOINT, method::checkpoint::RESTORE, rights::WRITE, "CHECKPOINT.RESTORE"),
    (ty::CHECKPOINT, method::checkpoint::RESUME, rights::WRITE, "CHECKPOINT.RESUME"),
];

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
        0xd => "NO_CAPPAGE",
        0xe => "OUT_OF_RANGE",
        0xf => "TIMEOUT",
        0x10 => "IN_USE",
        0x11 => "BAD_SEAL",
        0x12 => "NO_REPLY",
        _ => "UNKNOWN_ERROR",
    }
}

/// The name of an object type, for messages.
pub fn type_name(t: u64) -> &'static str {
    match t {
        0x0 => "NULL",
        0x1 => "CONSOLE",
        0x2 => "KERNEL",
        0x3 => "MEMORY",
        0x4 => "PAGE",
        0x5 => "ASPACE",
        0x6 => "PROCESS",
        0x7 => "CAPPAGE",
        0x8 => "SENDER",
        0x9 => "RETURN",
        0xa => "WRAPPER",
        0xb => "ACCOUNT",
        0xc => "TIMER",
        0xd => "DEVMEM",
        0xe => "IOPORT",
        0xf => "INTERRUPT",
        0x10 => "DMA_DOMAIN",
        0x11 => "NOTIFICATION",
        0x12 => "CHECKPOINT",
        _ => "UNKNOWN",
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

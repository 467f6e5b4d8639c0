/* generated from abi/keep.toml by tools/abigen.py; do not edit. */
#ifndef KEEP_ABI_H
#define KEEP_ABI_H

#define KEEP_VERSION_MAJOR 0
#define KEEP_VERSION_MINOR 2
#define KEEP_VERSION_PATCH 0
#define KEEP_VERSION_STRING "0.2.0"
#define KEEP_TAG_METHOD_MASK 0xffff

/* Error codes */
#define KEEP_ERR_OK 0x0ULL /* The invocation succeeded. */
#define KEEP_ERR_INVALID_CAP 0x1ULL /* The capability address names an empty (null) slot. */
#define KEEP_ERR_WRONG_TYPE 0x2ULL /* A capability argument has the wrong object type. */
#define KEEP_ERR_NO_RIGHTS 0x3ULL /* The capability lacks a right the method needs (a weak capability has no WRITE). */
#define KEEP_ERR_INVALID_METHOD 0x4ULL /* The object type has no method with this number, or the invocation mode does not apply to it. */
#define KEEP_ERR_INVALID_ARG 0x5ULL /* An argument is out of range or malformed (including reserved tag bits). */
#define KEEP_ERR_NO_MEMORY 0x6ULL /* The memory pool or the kernel-memory account is empty and no kpager can refill it. */
#define KEEP_ERR_STALE 0x7ULL /* The capability refers to an object that has been destroyed or revoked, or a return capability already used (version mismatch). */
#define KEEP_ERR_WOULD_BLOCK 0x8ULL /* A non-blocking phase could not complete at once (no receiver waiting, no message queued, no input). */
#define KEEP_ERR_BAD_STATE 0x9ULL /* The object is not in a state that allows the method. */
#define KEEP_ERR_FAULT 0xaULL /* A user buffer (or the IPC buffer) is not mapped with the access the operation needs. */
#define KEEP_ERR_EXISTS 0xbULL /* The destination slot or virtual address is already in use. */
#define KEEP_ERR_NOT_MAPPED 0xcULL /* Nothing is mapped at the given virtual address or capability address. */
#define KEEP_ERR_NO_CAPPAGE 0xdULL /* The capability address lies in the capability space but no cappage is mapped there. */
#define KEEP_ERR_OUT_OF_RANGE 0xeULL /* The capability address lies beyond the capability space (CAP_SPACE_SLOTS). */
#define KEEP_ERR_TIMEOUT 0xfULL /* A receive phase ended because its time-out expired. */
#define KEEP_ERR_IN_USE 0x10ULL /* The resource is in use: a frame that is still mapped, an interrupt line already bound, or a device resource the kernel keeps for itself. */
#define KEEP_ERR_BAD_SEAL 0x11ULL /* An exported kernel object does not validate: it was altered, it was restored before (a replay), it is another object's, or another kernel made it. */
#define KEEP_ERR_NO_REPLY 0x12ULL /* A call's reply can never come: its return capability was deleted or overwritten, or the cappage or address space that held it went away (the callee's space lost its last process, was destroyed, or unmapped the cappage). The call is over. */

/* Object types */
#define KEEP_TYPE_NULL 0x0ULL /* The null capability (all-zero); every invocation fails with INVALID_CAP. */
#define KEEP_TYPE_CONSOLE 0x1ULL /* The kernel's debug console on the first serial port. */
#define KEEP_TYPE_KERNEL 0x2ULL /* Control of the machine: information, the memory map, power-off, self-checks. Given only to the root task. */
#define KEEP_TYPE_MEMORY 0x3ULL /* A pool of free physical frames: data pages and cappages are made from it, and kernel-memory accounts are funded from it. */
#define KEEP_TYPE_PAGE 0x4ULL /* One 4 KiB data frame; mapped into address spaces. Never holds capabilities. */
#define KEEP_TYPE_ASPACE 0x5ULL /* An address space: page tables for data plus a sparse capability space of cappages. */
#define KEEP_TYPE_PROCESS 0x6ULL /* A process: registers, an address space, an IPC buffer, a fault handler, a priority and a state. */
#define KEEP_TYPE_CAPPAGE 0x7ULL /* One 4 KiB frame of 256 capability slots; mapped into capability spaces, never readable or writable by user code. */
#define KEEP_TYPE_SENDER 0x8ULL /* A sender capability: invoking it sends an IPC message to its process, which learns the capability's protected payload. */
#define KEEP_TYPE_RETURN 0x9ULL /* A return capability, made by the kernel for the callee of a call: invoking it sends the reply. Works at most once. */
#define KEEP_TYPE_WRAPPER 0xaULL /* A forwarding object around another capability: invoking it invokes the wrapped capability with the wrapper's rights; revoking it kills every copy. */
#define KEEP_TYPE_ACCOUNT 0xbULL /* A kernel-memory account: frames donated by its kpager, from which address spaces, processes and wrappers are made and page tables grow. */
#define KEEP_TYPE_TIMER 0xcULL /* Time: the clock and sleeping. */
#define KEEP_TYPE_DEVMEM 0xdULL /* A range of physical addresses outside RAM (device registers): its pages are mapped uncached with ASPACE.MAP. Never covers RAM or the kernel's own devices. */
#define KEEP_TYPE_IOPORT 0xeULL /* A range of I/O ports, read and written by invoking the capability. */
#define KEEP_TYPE_INTERRUPT 0xfULL /* A range of interrupt lines (I/O APIC inputs and MSI lines): a line is bound to a process, which then receives each interrupt as an IPC message, or to a notification, into which each interrupt ORs bits. */
#define KEEP_TYPE_DMA_DOMAIN 0x10ULL /* A DMA domain: the address space the IOMMU gives the PCI devices attached to it. A driver maps into it only pages it holds capabilities to; each stays pinned while mapped (docs/devices.md). */
#define KEEP_TYPE_NOTIFICATION 0x11ULL /* A word of event bits: senders OR bits in without blocking (SIGNAL), a waiter takes and clears them (WAIT, POLL); bound to a process, its signals arrive as NOTIFY messages in that process's receives. */
#define KEEP_TYPE_CHECKPOINT 0x12ULL /* The checkpoint of the persistent memory pool: capture of every object made from the pool at one consistency point, its sealed write-out, and its restore at a later boot (docs/persistence.md). Given only to the root task, which may grant it to the checkpointer. */

/* Rights */
#define KEEP_RIGHT_READ 0x1ULL /* Read: map readable; query; fetch capabilities. */
#define KEEP_RIGHT_WRITE 0x2ULL /* Write: map writable; change the object; send a message. */
#define KEEP_RIGHT_EXEC 0x4ULL /* Execute: map executable. */
#define KEEP_RIGHT_CALL 0x8ULL /* Call: invoke a SENDER in CALL mode, which gives the callee a return capability. Without it a capability is no-call (send only). */
#define KEEP_RIGHT_ALL 0xfULL /* Every right (READ, WRITE, EXEC, CALL). */
#define KEEP_RIGHT_WEAK 0x10ULL /* Weak (a restriction, not a right): implies no WRITE, and capabilities fetched through it are weakened too. Added, never removed, by a rights mask. */

/* Process states */
#define KEEP_STATE_CREATED 0x0ULL /* Made, not yet started. */
#define KEEP_STATE_RUNNABLE 0x1ULL /* Running or ready to run. */
#define KEEP_STATE_BLOCKED 0x2ULL /* Waiting in an invocation that restarts when it can complete. */
#define KEEP_STATE_STOPPED 0x3ULL /* Stopped by PROCESS.STOP; START resumes it. */
#define KEEP_STATE_EXITED 0x4ULL /* Ended itself with PROCESS.EXIT. */
#define KEEP_STATE_FAULTED 0x5ULL /* Stopped by an exception it had no handler for. */

/* KERNEL.INFO keys */
#define KEEP_INFO_VERSION 0x0ULL /* Kernel version: major << 32 | minor << 16 | patch. */
#define KEEP_INFO_MEM_TOTAL 0x1ULL /* Bytes of usable RAM in the memory map. */
#define KEEP_INFO_MEM_FREE 0x2ULL /* Bytes of RAM in free frames. */
#define KEEP_INFO_CPU_FEATURES 0x3ULL /* Bit mask of CPU_* features the kernel found and uses. */
#define KEEP_INFO_TSC_HZ 0x4ULL /* Time-stamp counter frequency measured at boot (Hz). */
#define KEEP_INFO_TICKS 0x5ULL /* Time since boot in ticks of 1/TIMER_HZ second, read from the TSC. */
#define KEEP_INFO_KERNEL_BYTES 0x6ULL /* Size of the kernel image in memory (bytes). */
#define KEEP_INFO_TIMER_HZ 0x7ULL /* Ticks a second of TICKS and TIMER.NOW (the timer interrupt is one-shot, not periodic). */
#define KEEP_INFO_FASTPATH_IPC 0x8ULL /* Calls and reply-and-receives completed by the IPC fast path since boot. */
#define KEEP_INFO_HELD_FRAMES 0x9ULL /* Frames whose page was destroyed while a DMA hold (DMA_DOMAIN.HOLD) kept them: they go back to the pool with their last hold. */
#define KEEP_INFO_DESTROY_RESTARTS 0xbULL /* Parts of ACCOUNT.DESTROY_ALL and ACCOUNT.DESTROY since boot that ended at their restart point (32 processes, DESTROY_TABLES page tables or MOVE_FRAMES frames given back, the invocation restarted to go on). */
#define KEEP_INFO_REVOKE_RESTARTS 0xaULL /* Parts of MEMORY.REVOKE since boot that ended at its restart point (REVOKE_TABLES page tables searched, the invocation restarted to go on). */
#define KEEP_INFO_MOVE_RESTARTS 0xcULL /* Parts of MEMORY.DONATE and ACCOUNT.RECLAIM since boot that ended at their restart point (MOVE_FRAMES frames moved, the invocation restarted with the count of those still to move). */
#define KEEP_INFO_DIGEST_RESTARTS 0xeULL /* Parts of CHECKPOINT.READ of the kernel record since boot that ended at their restart point (DIGEST_FRAMES pool frames added to the digest of the record set, the invocation restarted to go on). */
#define KEEP_INFO_FASTPATH_NTFN 0xdULL /* NOTIFICATION.SIGNALs and WAITs completed by the notification fast path since boot, straight back to the caller or switching directly to the process that runs next (docs/kernel-manual.md, "Fast path"). */

/* CPU feature bits */
#define KEEP_CPU_NX 0x1ULL /* No-execute pages (EFER.NXE). */
#define KEEP_CPU_PCID 0x2ULL /* Process-context identifiers (CR4.PCIDE). */
#define KEEP_CPU_APIC 0x4ULL /* Local APIC. */
#define KEEP_CPU_TSC_DEADLINE 0x8ULL /* TSC-deadline timer mode. */
#define KEEP_CPU_PAGE1G 0x10ULL /* 1 GiB pages. */
#define KEEP_CPU_SMEP 0x20ULL /* Supervisor-mode execution prevention (CR4.SMEP). */
#define KEEP_CPU_SMAP 0x40ULL /* Supervisor-mode access prevention (CR4.SMAP). */
#define KEEP_CPU_INVPCID 0x80ULL /* The INVPCID instruction. */
#define KEEP_CPU_GLOBAL 0x100ULL /* Global pages (CR4.PGE). */
#define KEEP_CPU_XSAVE 0x200ULL /* Extended processor state (CR4.OSXSAVE): the kernel saves, with XSAVE, every state component XCR0 enables (x87, SSE and AVX where the CPU has it) across switches. */

/* KERNEL.CHECK_PAGING selectors */
#define KEEP_CHECK_WX 0x0ULL /* Mappings that are both writable and executable, in the kernel half and the caller's half. */
#define KEEP_CHECK_KERNEL_USER 0x1ULL /* Kernel-half mappings reachable from user mode (U/S set at any level). */
#define KEEP_CHECK_KERNEL_DATA_NX 0x2ULL /* Kernel mappings outside the kernel's code that lack NX. */

/* Memory-map entry types */
#define KEEP_MEM_USABLE 0x1ULL /* RAM the kernel hands out. */
#define KEEP_MEM_RESERVED 0x2ULL /* Not RAM or not usable. */
#define KEEP_MEM_KERNEL 0x3ULL /* RAM holding the kernel image. */
#define KEEP_MEM_BOOT_IMAGE 0x4ULL /* RAM holding the boot image (boot modules). */

/* Well-known capability slots */
#define KEEP_SLOT_CONSOLE 0x1ULL /* The debug console. */
#define KEEP_SLOT_KERNEL 0x2ULL /* The kernel-control capability (root task and the test suite). */
#define KEEP_SLOT_SELF_PROCESS 0x3ULL /* The program's own process. */
#define KEEP_SLOT_SELF_ASPACE 0x4ULL /* The program's own address space (and so its own capability space). */
#define KEEP_SLOT_MEMORY 0x5ULL /* A memory pool. */
#define KEEP_SLOT_ACCOUNT 0x6ULL /* The kernel-memory account that pays for the program's own objects. */
#define KEEP_SLOT_TIMER 0x7ULL /* The timer. */
#define KEEP_SLOT_DEVMEM 0x8ULL /* Device memory: every physical page between the top of low RAM and the end of the physical address space (at most 2^44), RAM excepted (root task and trusted programs). */
#define KEEP_SLOT_IOPORT 0x9ULL /* Every I/O port (root task and trusted programs). */
#define KEEP_SLOT_INTERRUPT 0xaULL /* Every interrupt line: the I/O APIC's and the MSI lines (root task and trusted programs). */
#define KEEP_SLOT_PERSISTENT_MEMORY 0xbULL /* The persistent memory pool: what is made from it is in every checkpoint (root task). */
#define KEEP_SLOT_CHECKPOINT 0xcULL /* The checkpoint object (root task). */
#define KEEP_SLOT_FIRST_FREE 0x10ULL /* The first slot that is not reserved by convention. */

/* Layout constants */
#define KEEP_CAP_SPACE_SLOTS 0x100000000ULL /* Capability addresses per capability space (2^32); an address at or beyond it is OUT_OF_RANGE. */
#define KEEP_CAPPAGE_SLOTS 0x100ULL /* Capability slots in one cappage (16 bytes each); cappages are mapped at capability addresses that are multiples of it. */
#define KEEP_CAP_SEGMENT 0xfffffe0000000000ULL /* Kernel virtual address of the capability segment: the kernel-only alias of the current capability space (slot n at CAP_SEGMENT + 16 n). */
#define KEEP_PAGE_SIZE 0x1000ULL /* Size of a page. */
#define KEEP_USER_TOP 0x800000000000ULL /* First address above the user half. */
#define KEEP_BOOT_IMAGE_VADDR 0x100000000000ULL /* Where the kernel maps the boot image (read-only) into the root task; rdi holds this address and rsi the image size at entry. */
#define KEEP_ROOT_STACK_TOP 0x7ff000000000ULL /* Top of the root task's initial stack. */
#define KEEP_ROOT_STACK_PAGES 0x40ULL /* Pages of the root task's initial stack. */
#define KEEP_ROOT_ACCOUNT_FRAMES 0x100ULL /* Frames the kernel moves into the root task's kernel-memory account at boot (after paying for the root task itself). */
#define KEEP_MAX_STRING 0x1000ULL /* Largest byte string one message carries. */
#define KEEP_MAX_CAPS 0x4ULL /* Capabilities one message carries, and receive slots one receive phase names. */
#define KEEP_MAX_RECV_SLOTS 0x5ULL /* Receive slots one receive phase names: a call's return capability plus MAX_CAPS. */
#define KEEP_PROCESS_NUMBERS 0x100000ULL /* Process numbers (the number in process capabilities is 20 bits wide): 16,384 pages of 64, of which accounts buy pages of 63 usable numbers, a frame each, as their processes need them (docs/kernel-memory.md). */
#define KEEP_IRQ_LINES 0x18ULL /* Interrupt lines (I/O APIC inputs, GSIs 0-23). Lines 0-15 are edge-triggered active high (ISA), 16-23 level-triggered active low (PCI). */
#define KEEP_MSI_LINES 0x20ULL /* Message-signalled interrupt lines, numbered IRQ_LINES to IRQ_LINES + MSI_LINES - 1 (24-55): each is a vector a PCI function's MSI or MSI-X message reaches once INTERRUPT.ROUTE_MSI routed it there. They are edge-triggered and never masked. */
#define KEEP_DMA_FAULT_QUEUE 0x10ULL /* DMA faults one domain keeps for its fault handler until it receives them. */
#define KEEP_DMA_HOLD_TAGS 0x1000ULL /* Tags of DMA_DOMAIN.HOLD: 0 to DMA_HOLD_TAGS - 1 (a mediator's queue and descriptor head, say). */
#define KEEP_DMA_HOLD_FRAMES 0x8ULL /* Frames a DMA domain's hold table grows to at most: 512 holds each. */
#define KEEP_DMA_HOLD_MAX 0xffffULL /* Holds one frame can have at once, over all domains. */
#define KEEP_PERSISTENT_POOL_MIB 0x20ULL /* Size of the persistent memory pool in MiB, taken from the top of RAM, unless the kernel command line says pool=N (N MiB, 0 to 1024; 0: no pool). */
#define KEEP_PERSISTENT_NUMBER_PAGES 0x100ULL /* Pages of 63 process numbers kept for the processes of persistent accounts (the last of the process-number pages), so that a restored process gets the number it had. */
#define KEEP_CHECKPOINT_RECORD_WORDS 0x6ULL /* Words of a record's descriptor, as CHECKPOINT.READ returns it and RESTORE takes it: the info word (frame number in bits 0-31, frame type 32-39, number page 40-63; 0 for the kernel record), the object's version, the two words of the seal's tag, the epoch it was sealed in (a kernel object's: the capture's; a data page's or donated frame's: the first epoch whose BEGIN saw its content, so that its record is the same in every checkpoint until it changes), and the seal's nonce (which depends on the frame and its content only). */
#define KEEP_BUDGET_MIN_US 0x64ULL /* Smallest budget PROCESS.SET_BUDGET gives (microseconds). */
#define KEEP_DESTROY_TABLES 0x4ULL /* Page tables ACCOUNT.DESTROY_ALL frees (with the mappings in them) before its invocation restarts from the system call, letting interrupts in. */
#define KEEP_MOVE_FRAMES 0x200ULL /* Frames MEMORY.DONATE, ACCOUNT.RECLAIM and ACCOUNT.DESTROY_ALL move between the pool and an account before the invocation restarts from the system call, letting interrupts in. */
#define KEEP_DIGEST_FRAMES 0x100ULL /* Pool frames CHECKPOINT.READ of the kernel record adds to the digest of the record set before its invocation restarts from the system call, letting interrupts in. */
#define KEEP_REVOKE_TABLES 0x8ULL /* Page tables MEMORY.REVOKE searches (512 entries each) before its invocation restarts from the system call, letting interrupts in. */
#define KEEP_BUDGET_MIN_PERIOD_US 0x3e8ULL /* Shortest budget period (microseconds). */
#define KEEP_BUDGET_MAX_PERIOD_US 0x989680ULL /* Longest budget period (microseconds). */
#define KEEP_BUDGET_OVERRUN_US 0x0ULL /* How far BUDGET's consumed may exceed the budget (microseconds): none, since the time a process runs past its budget before the timer interrupt parks it is not charged. */
#define KEEP_WRAPPER_DEPTH 0x4ULL /* Most wrappers one invocation passes through (INVALID_CAP beyond). */
#define KEEP_WRAPPER_DEVICE_MAPS 0x7eULL /* Device pages one wrapper can have mapped through it at once (ASPACE.MAP of a DEVMEM capability it stands for; NO_MEMORY beyond). Destroying the wrapper unmaps them. */
#define KEEP_KMEM_FRAMES 0x0ULL /* Word 2 of a KMEM fault: the account needs frames (word 0 says how many). */
#define KEEP_KMEM_PROCESS 0x1ULL /* Word 2 of a KMEM fault: a process the account's kpager exported is needed (word 3 is the export's identifier); the kpager answers after ACCOUNT.RESTORE_PROCESS. */

/* Message tag fields (rsi) */
#define KEEP_TAG_LABEL_MASK 0xffffULL /* Bits 0-15: the label (method number for kernel objects, free for IPC). */
#define KEEP_TAG_CAPS_SHIFT 0x10ULL /* Bits 16-18: capabilities to send (0-4), listed in the IPC buffer's send_caps; on return, capabilities received. */
#define KEEP_TAG_SLOTS_SHIFT 0x13ULL /* Bits 19-21: receive slots (0-5), listed in the IPC buffer's recv_slots. */
#define KEEP_TAG_COUNT_MASK 0x7ULL /* Width mask of the two count fields. */
#define KEEP_TAG_STRING 0x400000ULL /* Bit 22: send the byte string of the IPC buffer (send_len bytes); on return, a string arrived (recv_len bytes). */
#define KEEP_TAG_MODE_SHIFT 0x18ULL /* Bits 24-25: the mode, one of MODE_*. */
#define KEEP_TAG_MODE_CALL 0x0ULL /* Send, then wait for the reply through the return capability made for the callee. Kernel objects only take this mode. */
#define KEEP_TAG_MODE_SEND 0x1ULL /* Send only. */
#define KEEP_TAG_MODE_RECV 0x2ULL /* Open receive only (rdi ignored). */
#define KEEP_TAG_MODE_SEND_RECV 0x3ULL /* Send, then open receive (reply-and-receive when rdi is a return capability). */
#define KEEP_TAG_SEND_NONBLOCK 0x4000000ULL /* Bit 26: fail the send phase with WOULD_BLOCK instead of waiting for the receiver. */
#define KEEP_TAG_RECV_NONBLOCK 0x8000000ULL /* Bit 27: fail the receive phase with WOULD_BLOCK when no message is waiting. */
#define KEEP_TAG_CALLED 0x10000000ULL /* Bit 28 (received tag only): the message is a call; receive slot 0 holds its return capability. */

/* Labels of kernel-made messages */
#define KEEP_LABEL_EXCEPTION 0xff00ULL /* A CPU exception (page fault included). Words: vector, rip, address (CR2 for a page fault, else 0), error code. */
#define KEEP_LABEL_SYSCALL 0xff01ULL /* A system call of a process in emulation mode (rip is past the instruction). Words: rax, rdi, rsi, rdx. */
#define KEEP_LABEL_KMEM 0xff02ULL /* A kernel-memory fault: the account needs frames, or a process it exported. Words: frames needed, frames in the account, what is needed (KMEM_FRAMES or KMEM_PROCESS), the export's identifier (KMEM_PROCESS: the process number in bits 0-19, the export's generation above). The faulting invocation restarts after the reply. */
#define KEEP_LABEL_IRQ 0xff03ULL /* An interrupt on a bound line (a send, not a call). Words: line, 0, 0, 0; the payload is that of the SENDER given to INTERRUPT.BIND. The line stays masked until INTERRUPT.ACK. */
#define KEEP_LABEL_NOTIFY 0xff05ULL /* A bound notification's bits (a send): words: bits, 0, 0, 0; the payload is that of the SENDER given to NOTIFICATION.BIND. The word is cleared as it is delivered. */
#define KEEP_LABEL_DMA_FAULT 0xff04ULL /* A device attached to a DMA domain accessed a device address the domain does not map with that access (a send). Words: device (PCI bus << 8 | device << 3 | function), device address (page), VT-d fault reason, 1 for a write or 0 for a read; the payload is that of the SENDER given to DMA_DOMAIN.SET_FAULT_HANDLER. Faults that find the handler not receiving wait in the domain (DMA_FAULT_QUEUE of them; later ones are counted as lost) and come when it next receives. */

/* Reply labels for fault messages */
#define KEEP_REPLY_RESUME 0x0ULL /* Resume the process with its registers as they are (a handler may have changed them with WRITE_REGS). */
#define KEEP_REPLY_RESUME_SET_RAX 0x1ULL /* Resume the process with rax set to data word 0 (the result of an emulated system call). */
#define KEEP_REPLY_STOP 0x2ULL /* Stop the process (state STOPPED, reported to waiters). */

/* IPC buffer layout (byte offsets) */
#define KEEP_IPC_SEND_CAPS 0x0ULL /* Offset of u64 send_caps[4]: capability address in bits 0-31, rights mask in bits 32-36 (0 keeps the rights as they are). */
#define KEEP_IPC_RECV_SLOTS 0x20ULL /* Offset of u64 recv_slots[5]: capability addresses where received capabilities go, in order (overwriting what is there); a call's return capability takes the first. Each slot at most once, by whatever address (a cappage mapped at two places reaches its slots through both): a receive phase naming one twice is INVALID_ARG before anything happens. */
#define KEEP_IPC_SEND_LEN 0x48ULL /* Offset of u64 send_len: bytes of the string to send (at most MAX_STRING). */
#define KEEP_IPC_RECV_LEN 0x50ULL /* Offset of u64 recv_len: written by the kernel, bytes of the string received. */
#define KEEP_IPC_STRING 0x1000ULL /* Offset of the string bytes (MAX_STRING); sent from here, received here. */
#define KEEP_IPC_SIZE 0x2000ULL /* Size of the IPC buffer. */

/* Register block of READ_REGS and WRITE_REGS (word indexes) */
#define KEEP_REG_RAX 0x0ULL /* rax */
#define KEEP_REG_RBX 0x1ULL /* rbx */
#define KEEP_REG_RCX 0x2ULL /* rcx */
#define KEEP_REG_RDX 0x3ULL /* rdx */
#define KEEP_REG_RSI 0x4ULL /* rsi */
#define KEEP_REG_RDI 0x5ULL /* rdi */
#define KEEP_REG_RBP 0x6ULL /* rbp */
#define KEEP_REG_RSP 0x7ULL /* rsp */
#define KEEP_REG_R8 0x8ULL /* r8 */
#define KEEP_REG_R9 0x9ULL /* r9 */
#define KEEP_REG_R10 0xaULL /* r10 */
#define KEEP_REG_R11 0xbULL /* r11 */
#define KEEP_REG_R12 0xcULL /* r12 */
#define KEEP_REG_R13 0xdULL /* r13 */
#define KEEP_REG_R14 0xeULL /* r14 */
#define KEEP_REG_R15 0xfULL /* r15 */
#define KEEP_REG_RIP 0x10ULL /* rip (must lie in the user half) */
#define KEEP_REG_RFLAGS 0x11ULL /* rflags (only the arithmetic flags, DF and TF are taken on write; IF stays set) */
#define KEEP_REG_COUNT 0x12ULL /* Number of registers in the block (the block is COUNT * 8 bytes). */

/* Methods: KEEP_M_<OBJECT>_<METHOD> */
#define KEEP_M_CONSOLE_WRITE 1
#define KEEP_M_CONSOLE_READ 2
#define KEEP_M_KERNEL_INFO 1
#define KEEP_M_KERNEL_MEMMAP 2
#define KEEP_M_KERNEL_PROCESS_INFO 3
#define KEEP_M_KERNEL_CHECK_PAGING 4
#define KEEP_M_KERNEL_POWEROFF 5
#define KEEP_M_KERNEL_DEBUG_EXIT 6
#define KEEP_M_KERNEL_CMDLINE 7
#define KEEP_M_KERNEL_CHECK_INVARIANTS 8
#define KEEP_M_KERNEL_SET_SEAL_KEY 10
#define KEEP_M_KERNEL_INTERRUPT_STATS 9
#define KEEP_M_KERNEL_COVERAGE 11
#define KEEP_M_MEMORY_RETYPE 1
#define KEEP_M_MEMORY_FREE 2
#define KEEP_M_MEMORY_DONATE 3
#define KEEP_M_MEMORY_CREATE_ACCOUNT 4
#define KEEP_M_MEMORY_RECLAIM 5
#define KEEP_M_MEMORY_REVOKE 6
#define KEEP_M_ACCOUNT_INFO 1
#define KEEP_M_ACCOUNT_SET_KPAGER 2
#define KEEP_M_ACCOUNT_CREATE_ASPACE 3
#define KEEP_M_ACCOUNT_CREATE_PROCESS 4
#define KEEP_M_ACCOUNT_CREATE_WRAPPER 5
#define KEEP_M_ACCOUNT_DESTROY 6
#define KEEP_M_ACCOUNT_RECLAIM 7
#define KEEP_M_ACCOUNT_DESTROY_ALL 8
#define KEEP_M_ACCOUNT_REVOKE_TABLE 9
#define KEEP_M_ACCOUNT_REVOKE_PROCESS 10
#define KEEP_M_ACCOUNT_RESTORE_PROCESS 11
#define KEEP_M_ACCOUNT_REVOKE_CAP_TABLE 12
#define KEEP_M_ASPACE_MAP 1
#define KEEP_M_ASPACE_UNMAP 2
#define KEEP_M_ASPACE_LOOKUP 3
#define KEEP_M_ASPACE_MAP_CAPPAGE 4
#define KEEP_M_ASPACE_UNMAP_CAPPAGE 5
#define KEEP_M_ASPACE_INSERT_CAP 6
#define KEEP_M_ASPACE_EXTRACT_CAP 7
#define KEEP_M_ASPACE_DELETE_CAP 8
#define KEEP_M_ASPACE_COPY_CAP 9
#define KEEP_M_ASPACE_MOVE_CAP 10
#define KEEP_M_ASPACE_IDENTIFY_CAP 11
#define KEEP_M_ASPACE_COMPARE_CAP 12
#define KEEP_M_PROCESS_SET_REGS 1
#define KEEP_M_PROCESS_START 2
#define KEEP_M_PROCESS_STOP 3
#define KEEP_M_PROCESS_STATUS 4
#define KEEP_M_PROCESS_WAIT 5
#define KEEP_M_PROCESS_EXIT 6
#define KEEP_M_PROCESS_YIELD 7
#define KEEP_M_PROCESS_SET_NAME 8
#define KEEP_M_PROCESS_SET_PRIORITY 9
#define KEEP_M_PROCESS_READ_REGS 10
#define KEEP_M_PROCESS_WRITE_REGS 11
#define KEEP_M_PROCESS_SET_IPC_BUFFER 12
#define KEEP_M_PROCESS_SET_FAULT_HANDLER 13
#define KEEP_M_PROCESS_SET_EMULATION 14
#define KEEP_M_PROCESS_MINT 15
#define KEEP_M_PROCESS_READ_VECTOR_STATE 16
#define KEEP_M_PROCESS_WRITE_VECTOR_STATE 17
#define KEEP_M_PROCESS_SET_BUDGET 18
#define KEEP_M_PROCESS_BUDGET 19
#define KEEP_M_PROCESS_SET_PASSIVE 20
#define KEEP_M_PROCESS_CPU_TIME 21
#define KEEP_M_TIMER_NOW 1
#define KEEP_M_TIMER_SLEEP 2
#define KEEP_M_TIMER_SLEEP_UNTIL 3
#define KEEP_M_DEVMEM_INFO 1
#define KEEP_M_DEVMEM_RESTRICT 2
#define KEEP_M_IOPORT_INFO 1
#define KEEP_M_IOPORT_RESTRICT 2
#define KEEP_M_IOPORT_IN 3
#define KEEP_M_IOPORT_OUT 4
#define KEEP_M_INTERRUPT_INFO 1
#define KEEP_M_INTERRUPT_RESTRICT 2
#define KEEP_M_INTERRUPT_BIND 3
#define KEEP_M_INTERRUPT_UNBIND 4
#define KEEP_M_INTERRUPT_ACK 5
#define KEEP_M_INTERRUPT_ROUTE_MSI 6
#define KEEP_M_INTERRUPT_UNROUTE_MSI 7
#define KEEP_M_INTERRUPT_BIND_NOTIFICATION 8
#define KEEP_M_ACCOUNT_CREATE_DMA_DOMAIN 13
#define KEEP_M_ACCOUNT_CREATE_NOTIFICATION 14
#define KEEP_M_DMA_DOMAIN_INFO 1
#define KEEP_M_DMA_DOMAIN_MAP 2
#define KEEP_M_DMA_DOMAIN_UNMAP 3
#define KEEP_M_DMA_DOMAIN_LOOKUP 4
#define KEEP_M_DMA_DOMAIN_ATTACH 5
#define KEEP_M_DMA_DOMAIN_DETACH 6
#define KEEP_M_DMA_DOMAIN_SET_FAULT_HANDLER 7
#define KEEP_M_DMA_DOMAIN_FAULTS 8
#define KEEP_M_DMA_DOMAIN_HOLD 9
#define KEEP_M_DMA_DOMAIN_RELEASE 10
#define KEEP_M_NOTIFICATION_SIGNAL 1
#define KEEP_M_NOTIFICATION_WAIT 2
#define KEEP_M_NOTIFICATION_POLL 3
#define KEEP_M_NOTIFICATION_BIND 4
#define KEEP_M_NOTIFICATION_UNBIND 5
#define KEEP_M_NOTIFICATION_INFO 6
#define KEEP_M_CHECKPOINT_INFO 1
#define KEEP_M_CHECKPOINT_SET_KEY 2
#define KEEP_M_CHECKPOINT_OPEN 3
#define KEEP_M_CHECKPOINT_BEGIN 4
#define KEEP_M_CHECKPOINT_READ 5
#define KEEP_M_CHECKPOINT_END 6
#define KEEP_M_CHECKPOINT_RESTORE 7
#define KEEP_M_CHECKPOINT_RESUME 8

/* The rights each method needs (a method's "rights" in keep.toml), checked
 * by the kernel's dispatch before the object sees the invocation: 0 for a
 * method the object type does not have. */
#define KEEP_METHOD_LIMIT 22
static inline unsigned long long keep_method_rights(unsigned long long type, unsigned long long method)
{
    static const unsigned char need[19][KEEP_METHOD_LIMIT] = {
        [KEEP_TYPE_CONSOLE] = {
            [KEEP_M_CONSOLE_WRITE] = KEEP_RIGHT_WRITE,
            [KEEP_M_CONSOLE_READ] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_KERNEL] = {
            [KEEP_M_KERNEL_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_MEMMAP] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_PROCESS_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_CHECK_PAGING] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_POWEROFF] = KEEP_RIGHT_WRITE,
            [KEEP_M_KERNEL_DEBUG_EXIT] = KEEP_RIGHT_WRITE,
            [KEEP_M_KERNEL_CMDLINE] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_CHECK_INVARIANTS] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_SET_SEAL_KEY] = KEEP_RIGHT_WRITE,
            [KEEP_M_KERNEL_INTERRUPT_STATS] = KEEP_RIGHT_READ,
            [KEEP_M_KERNEL_COVERAGE] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_MEMORY] = {
            [KEEP_M_MEMORY_RETYPE] = KEEP_RIGHT_WRITE,
            [KEEP_M_MEMORY_FREE] = KEEP_RIGHT_READ,
            [KEEP_M_MEMORY_DONATE] = KEEP_RIGHT_WRITE,
            [KEEP_M_MEMORY_CREATE_ACCOUNT] = KEEP_RIGHT_WRITE,
            [KEEP_M_MEMORY_RECLAIM] = KEEP_RIGHT_WRITE,
            [KEEP_M_MEMORY_REVOKE] = KEEP_RIGHT_WRITE,
        },
        [KEEP_TYPE_ASPACE] = {
            [KEEP_M_ASPACE_MAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_UNMAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_LOOKUP] = KEEP_RIGHT_READ,
            [KEEP_M_ASPACE_MAP_CAPPAGE] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_UNMAP_CAPPAGE] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_INSERT_CAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_EXTRACT_CAP] = KEEP_RIGHT_READ,
            [KEEP_M_ASPACE_DELETE_CAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_COPY_CAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_MOVE_CAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_ASPACE_IDENTIFY_CAP] = KEEP_RIGHT_READ,
            [KEEP_M_ASPACE_COMPARE_CAP] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_PROCESS] = {
            [KEEP_M_PROCESS_SET_REGS] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_START] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_STOP] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_STATUS] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_WAIT] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_EXIT] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_YIELD] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_SET_NAME] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_SET_PRIORITY] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_READ_REGS] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_WRITE_REGS] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_SET_IPC_BUFFER] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_SET_FAULT_HANDLER] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_SET_EMULATION] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_MINT] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_READ_VECTOR_STATE] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_WRITE_VECTOR_STATE] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_SET_BUDGET] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_BUDGET] = KEEP_RIGHT_READ,
            [KEEP_M_PROCESS_SET_PASSIVE] = KEEP_RIGHT_WRITE,
            [KEEP_M_PROCESS_CPU_TIME] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_ACCOUNT] = {
            [KEEP_M_ACCOUNT_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_ACCOUNT_SET_KPAGER] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_CREATE_ASPACE] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_CREATE_PROCESS] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_CREATE_WRAPPER] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_DESTROY] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_RECLAIM] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_DESTROY_ALL] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_REVOKE_TABLE] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_REVOKE_PROCESS] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_RESTORE_PROCESS] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_REVOKE_CAP_TABLE] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_CREATE_DMA_DOMAIN] = KEEP_RIGHT_WRITE,
            [KEEP_M_ACCOUNT_CREATE_NOTIFICATION] = KEEP_RIGHT_WRITE,
        },
        [KEEP_TYPE_TIMER] = {
            [KEEP_M_TIMER_NOW] = KEEP_RIGHT_READ,
            [KEEP_M_TIMER_SLEEP] = KEEP_RIGHT_READ,
            [KEEP_M_TIMER_SLEEP_UNTIL] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_DEVMEM] = {
            [KEEP_M_DEVMEM_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_DEVMEM_RESTRICT] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_IOPORT] = {
            [KEEP_M_IOPORT_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_IOPORT_RESTRICT] = KEEP_RIGHT_READ,
            [KEEP_M_IOPORT_IN] = KEEP_RIGHT_READ,
            [KEEP_M_IOPORT_OUT] = KEEP_RIGHT_WRITE,
        },
        [KEEP_TYPE_INTERRUPT] = {
            [KEEP_M_INTERRUPT_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_INTERRUPT_RESTRICT] = KEEP_RIGHT_READ,
            [KEEP_M_INTERRUPT_BIND] = KEEP_RIGHT_WRITE,
            [KEEP_M_INTERRUPT_UNBIND] = KEEP_RIGHT_WRITE,
            [KEEP_M_INTERRUPT_ACK] = KEEP_RIGHT_WRITE,
            [KEEP_M_INTERRUPT_ROUTE_MSI] = KEEP_RIGHT_WRITE,
            [KEEP_M_INTERRUPT_UNROUTE_MSI] = KEEP_RIGHT_WRITE,
            [KEEP_M_INTERRUPT_BIND_NOTIFICATION] = KEEP_RIGHT_WRITE,
        },
        [KEEP_TYPE_DMA_DOMAIN] = {
            [KEEP_M_DMA_DOMAIN_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_DMA_DOMAIN_MAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_UNMAP] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_LOOKUP] = KEEP_RIGHT_READ,
            [KEEP_M_DMA_DOMAIN_ATTACH] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_DETACH] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_SET_FAULT_HANDLER] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_FAULTS] = KEEP_RIGHT_READ,
            [KEEP_M_DMA_DOMAIN_HOLD] = KEEP_RIGHT_WRITE,
            [KEEP_M_DMA_DOMAIN_RELEASE] = KEEP_RIGHT_WRITE,
        },
        [KEEP_TYPE_NOTIFICATION] = {
            [KEEP_M_NOTIFICATION_SIGNAL] = KEEP_RIGHT_WRITE,
            [KEEP_M_NOTIFICATION_WAIT] = KEEP_RIGHT_READ,
            [KEEP_M_NOTIFICATION_POLL] = KEEP_RIGHT_READ,
            [KEEP_M_NOTIFICATION_BIND] = KEEP_RIGHT_WRITE,
            [KEEP_M_NOTIFICATION_UNBIND] = KEEP_RIGHT_WRITE,
            [KEEP_M_NOTIFICATION_INFO] = KEEP_RIGHT_READ,
        },
        [KEEP_TYPE_CHECKPOINT] = {
            [KEEP_M_CHECKPOINT_INFO] = KEEP_RIGHT_READ,
            [KEEP_M_CHECKPOINT_SET_KEY] = KEEP_RIGHT_WRITE,
            [KEEP_M_CHECKPOINT_OPEN] = KEEP_RIGHT_WRITE,
            [KEEP_M_CHECKPOINT_BEGIN] = KEEP_RIGHT_WRITE,
            [KEEP_M_CHECKPOINT_READ] = KEEP_RIGHT_READ,
            [KEEP_M_CHECKPOINT_END] = KEEP_RIGHT_WRITE,
            [KEEP_M_CHECKPOINT_RESTORE] = KEEP_RIGHT_WRITE,
            [KEEP_M_CHECKPOINT_RESUME] = KEEP_RIGHT_WRITE,
        },
    };
    return type < 19 && method < KEEP_METHOD_LIMIT ? need[type][method] : 0;
}

#endif

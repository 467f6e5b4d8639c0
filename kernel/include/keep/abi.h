/* generated from abi/keep.toml by tools/abigen.py; do not edit. */
#ifndef KEEP_ABI_H
#define KEEP_ABI_H

#define KEEP_VERSION_MAJOR 0
#define KEEP_VERSION_MINOR 1
#define KEEP_VERSION_PATCH 0
#define KEEP_VERSION_STRING "0.1.0"
#define KEEP_TAG_METHOD_MASK 0xffff

/* Error codes */
#define KEEP_ERR_OK 0x0ULL /* The invocation succeeded. */
#define KEEP_ERR_INVALID_CAP 0x1ULL /* The capability address names an empty slot or lies outside the capability space. */
#define KEEP_ERR_WRONG_TYPE 0x2ULL /* A capability argument has the wrong object type. */
#define KEEP_ERR_NO_RIGHTS 0x3ULL /* The capability lacks a right the method needs. */
#define KEEP_ERR_INVALID_METHOD 0x4ULL /* The object type has no method with this number. */
#define KEEP_ERR_INVALID_ARG 0x5ULL /* An argument is out of range or malformed. */
#define KEEP_ERR_NO_MEMORY 0x6ULL /* The memory object has no free frame left. */
#define KEEP_ERR_STALE 0x7ULL /* The capability refers to an object that has been destroyed (version mismatch). */
#define KEEP_ERR_WOULD_BLOCK 0x8ULL /* A non-blocking operation could not complete at once. */
#define KEEP_ERR_BAD_STATE 0x9ULL /* The object is not in a state that allows the method. */
#define KEEP_ERR_FAULT 0xaULL /* A user buffer is not mapped with the access the method needs. */
#define KEEP_ERR_EXISTS 0xbULL /* The destination slot or virtual address is already in use. */
#define KEEP_ERR_NOT_MAPPED 0xcULL /* Nothing is mapped at the given virtual address. */

/* Object types */
#define KEEP_TYPE_NULL 0x0ULL /* The null capability (all-zero); every invocation fails with INVALID_CAP. */
#define KEEP_TYPE_CONSOLE 0x1ULL /* The kernel's debug console on the first serial port. */
#define KEEP_TYPE_KERNEL 0x2ULL /* Control of the machine: information, the memory map, power-off, self-checks. Given only to the root task. */
#define KEEP_TYPE_MEMORY 0x3ULL /* A pool of free physical frames from which objects are made (retyped). */
#define KEEP_TYPE_PAGE 0x4ULL /* One 4 KiB data frame; mapped into address spaces. */
#define KEEP_TYPE_ASPACE 0x5ULL /* An address space: page tables plus a capability space. */
#define KEEP_TYPE_PROCESS 0x6ULL /* A process: registers, an address space, a priority and a state. */

/* Rights */
#define KEEP_RIGHT_READ 0x1ULL /* Read: map readable; query. */
#define KEEP_RIGHT_WRITE 0x2ULL /* Write: map writable; change the object. */
#define KEEP_RIGHT_EXEC 0x4ULL /* Execute: map executable. */
#define KEEP_RIGHT_ALL 0x7ULL /* Every right. */

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
#define KEEP_INFO_TICKS 0x5ULL /* Timer interrupts since boot. */
#define KEEP_INFO_KERNEL_BYTES 0x6ULL /* Size of the kernel image in memory (bytes). */
#define KEEP_INFO_TIMER_HZ 0x7ULL /* Frequency of the timer interrupt (Hz). */

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
#define KEEP_SLOT_SELF_ASPACE 0x4ULL /* The program's own address space. */
#define KEEP_SLOT_MEMORY 0x5ULL /* A memory pool. */
#define KEEP_SLOT_FIRST_FREE 0x10ULL /* The first slot that is not reserved by convention. */

/* Layout constants */
#define KEEP_CSPACE_SLOTS 0x100ULL /* Capability slots per address space in this version (the sparse MMU-backed space comes with the capability kernel). */
#define KEEP_PAGE_SIZE 0x1000ULL /* Size of a page. */
#define KEEP_USER_TOP 0x800000000000ULL /* First address above the user half. */
#define KEEP_BOOT_IMAGE_VADDR 0x100000000000ULL /* Where the kernel maps the boot image (read-only) into the root task; rdi holds this address and rsi the image size at entry. */
#define KEEP_ROOT_STACK_TOP 0x7ff000000000ULL /* Top of the root task's initial stack. */
#define KEEP_ROOT_STACK_PAGES 0x40ULL /* Pages of the root task's initial stack. */

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
#define KEEP_M_MEMORY_RETYPE 1
#define KEEP_M_MEMORY_FREE 2
#define KEEP_M_ASPACE_MAP 1
#define KEEP_M_ASPACE_UNMAP 2
#define KEEP_M_ASPACE_INSERT_CAP 3
#define KEEP_M_ASPACE_DELETE_CAP 4
#define KEEP_M_ASPACE_LOOKUP 5
#define KEEP_M_PROCESS_SET_REGS 1
#define KEEP_M_PROCESS_START 2
#define KEEP_M_PROCESS_STOP 3
#define KEEP_M_PROCESS_STATUS 4
#define KEEP_M_PROCESS_WAIT 5
#define KEEP_M_PROCESS_EXIT 6
#define KEEP_M_PROCESS_YIELD 7
#define KEEP_M_PROCESS_SET_NAME 8
#define KEEP_M_PROCESS_SET_PRIORITY 9

#endif

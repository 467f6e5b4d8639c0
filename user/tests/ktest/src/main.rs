//! ktest: the in-guest test suite, run by the root task (`test` in the
//! shell, or `autotest` on the kernel command line).
//!
//! It prints one line per test, `ktest: <ID> <name> ... ok` or
//! `ktest: <ID> <name> ... FAILED: <why>`, then `ktest: N passed, M failed`,
//! and exits with 0 when nothing failed, else 1.
//!
//! How to add a test: write `fn my_test(cx: &mut Cx) -> TestResult` in the
//! module of its area (use `ensure!`, `.ctx("what")?` and `expect_err`
//! from this file) and add one line `("AREA00NN", "what it shows",
//! module::my_test)` to `TESTS` below.  IDs are stable: never reuse or
//! renumber one; new tests take the next free number of their area.
//! A test gets the boot image and the slot pool in `Cx` and should hand
//! back the slots it takes.

#![no_std]
#![no_main]

extern crate alloc;

/// Fails the test with a formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(alloc::format!($($fmt)+));
        }
    };
}

mod acct;
mod bank;
mod budget;
mod blkbatch;
mod blkreset;
mod blkring;
mod ctor;
mod caps;
mod console;
mod child;
mod cspace;
mod device;
mod dma;
mod edges;
mod drivers;
mod ds;
mod net;
mod notify;
mod passive;
mod persist;
mod elf;
mod example;
mod fault;
mod fuzz;
mod handler;
mod ipc;
mod kernel;
mod kmem;
mod mediator;
mod process;
mod reply;
mod revoke;
mod rtc;
mod tpm;
mod sched;
mod sfi;
mod stress;
mod srvfuzz;
mod srvfuzz_table;


use alloc::format;
use alloc::string::String;
use core::fmt::Display;

use keep_abi::Error;
use keep_loader::{BootImage, SlotPool};
use keep_rt::println;

keep_rt::entry!(main);

/// What every test gets.
pub struct Cx {
    /// The boot image root passed in (None if missing or invalid).
    pub image: Option<BootImage<'static>>,
    pub slots: SlotPool,
}

impl Cx {
    /// A free slot of ktest's own capability space.
    pub fn slot(&mut self) -> Result<u64, String> {
        self.slots.alloc().ok_or_else(|| "no free slot".into())
    }

    /// `n` free slots.
    pub fn slots<const N: usize>(&mut self) -> Result<[u64; N], String> {
        let mut out = [0u64; N];
        for i in 0..N {
            match self.slot() {
                Ok(s) => out[i] = s,
                Err(e) => {
                    out[..i].iter().for_each(|&s| self.slots.free(s));
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// Empties `s` (whatever it holds) and hands it back.
    pub fn drop_slot(&mut self, s: u64) {
        let _ = keep_abi::SELF_ASPACE.delete_cap(s);
        self.slots.free(s);
    }

    pub fn drop_slots(&mut self, slots: &[u64]) {
        slots.iter().for_each(|&s| self.drop_slot(s));
    }

    /// A fresh object of type `ty` (PAGE or CAPPAGE) in a new slot.
    pub fn retype(&mut self, ty: u64) -> Result<u64, String> {
        let s = self.slot()?;
        if let Err(e) = keep_abi::MEMORY.retype(ty, s) {
            self.slots.free(s);
            return Err(format!("RETYPE {} failed: {e}", keep_abi::type_name(ty)));
        }
        Ok(s)
    }
}

/// The status of process `p` once it has ended (exited or faulted),
/// looking every 5 ms for up to `ms`; None if it is still going then.
pub fn ended_within(p: keep_abi::Process, ms: u64) -> Option<keep_abi::Status> {
    use keep_abi::{TIMER, state};
    let start = TIMER.now_ms().ok()?;
    loop {
        match p.status() {
            Ok(st) if st.state == state::EXITED || st.state == state::FAULTED => return Some(st),
            _ if TIMER.now_ms().unwrap_or(u64::MAX) > start + ms => return None,
            _ => {
                let _ = TIMER.sleep(5);
            }
        }
    }
}

/// Runs `f` with `N` fresh slots and empties them afterwards, whether `f`
/// passed or not.
pub fn with_slots<const N: usize>(
    cx: &mut Cx,
    f: impl FnOnce(&mut Cx, [u64; N]) -> TestResult,
) -> TestResult {
    let s = cx.slots::<N>()?;
    let r = f(cx, s);
    cx.drop_slots(&s);
    r
}

/// Passes when `r` succeeded.
pub fn expect_ok<T>(r: keep_abi::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Passes when the raw error code is `want`.
pub fn expect_code(got: u64, want: Error, what: &str) -> TestResult {
    if got == want.0 {
        Ok(())
    } else {
        Err(format!(
            "{what}: got {}, want {want}",
            keep_abi::error_name(got)
        ))
    }
}

pub type TestResult = Result<(), String>;

/// Turns any error into a test failure that says what failed.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what} failed: {e}"))
    }
}

/// Passes when `r` is exactly the error `want`.
pub fn expect_err<T>(r: keep_abi::Result<T>, want: Error, what: &str) -> TestResult {
    match r {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(format!("{what}: got {e}, want {want}")),
        Ok(_) => Err(format!("{what}: succeeded, want {want}")),
    }
}

type Test = (&'static str, &'static str, fn(&mut Cx) -> TestResult);

#[rustfmt::skip]
const TESTS: &[Test] = &[
    ("KERN0002", "CHECK_INVARIANTS finds no violation at the start, nor while a call waits with a reply time-out", stress::invariants_at_start),
    ("BOOT0001", "runs in ring 3", kernel::ring3),
    ("BOOT0002", "kernel version equals the ABI version", kernel::version),
    ("BOOT0003", "boot image is passed and lists hello", kernel::boot_image),
    ("MEM0001", "memory map sorted, disjoint, nonzero lengths", kernel::memmap_sorted),
    ("MEM0002", "memory map has usable RAM and one kernel entry", kernel::memmap_types),
    ("CKPT0001", "the persistent pool is shut from boot: nothing made or captured from it, forged records refused, OPEN once", persist::shut_pool),
    ("CKPT0002", "persistent accounts take persistent frames only; persistent processes run in persistent spaces", persist::pools_apart),
    ("CKPT0003", "BEGIN captures the pool as it is then, READ seals each record (an unchanged record the same in the next checkpoint; the kernel record's digest in parts of DIGEST_FRAMES frames, restarted from the system call), END, errors", persist::capture),
    ("CKPT0004", "copy-on-write: a data page changed after BEGIN by a user write, a kernel copy, a new mapping or its frame's reuse reads as it was", persist::copy_on_write),
    ("CKPT0005", "dirty tracking: READ against an earlier checkpoint seals again only what changed since (each page of a table on its own), the rest in runs that read as that checkpoint's", persist::dirty_tracking),
    ("MEM0003", "at least 64 MiB usable", kernel::memmap_64mib),
    ("MEM0004", "MEM_TOTAL is usable+kernel+boot image", kernel::mem_total),
    ("MEM0005", "MEM_FREE <= MEM_TOTAL", kernel::mem_free),
    ("MEM0006", "MEMMAP past the end is INVALID_ARG", kernel::memmap_past_end),
    ("MEM0007", "kernel image fits its memory-map entry", kernel::kernel_bytes),
    ("PAGE0001", "no writable+executable mappings", kernel::check_wx),
    ("PAGE0002", "no user-accessible kernel mappings", kernel::check_kernel_user),
    ("PAGE0003", "kernel data is NX", kernel::check_kernel_nx),
    ("PAGE0004", "CHECK_PAGING with a bad selector is INVALID_ARG", kernel::check_bad),
    ("PAGE0005", "own code RX, rodata R, data RW", kernel::own_mappings),
    ("TIME0001", "TICKS advance while spinning", kernel::ticks),
    ("TIME0002", "TSC_HZ and TIMER_HZ are nonzero", kernel::rates),
    ("FAULT0001", "ud2 faults with #UD at its rip", fault::ud2),
    ("FAULT0002", "read of address 0 faults with #PF addr 0", fault::null_read),
    ("FAULT0003", "read of kernel memory faults with #PF", fault::kernel_read),
    ("FAULT0004", "write to own code page faults with #PF", fault::code_write),
    ("FAULT0005", "jump into a non-executable page faults", fault::exec_data),
    ("FAULT0006", "hlt in user mode faults with #GP", fault::hlt),
    ("FAULT0007", "cli in user mode faults with #GP", fault::cli),
    ("FAULT0008", "child invokes, then exits with 42", fault::exit42),
    ("FAULT0009", "parent runs on and ticks advance after faults", fault::survives),
    ("FAULT0010", "STATUS of a faulted child repeats WAIT", fault::status_after),
    ("ELF0001", "hello runs and exits 0", elf::hello),
    ("ELF0002", "hello's panic exits with 101", elf::hello_panic),
    ("ELF0003", "hello exits with the code it is given", elf::hello_code),
    ("ELF0004", "truncated ELF is refused, nothing made", elf::truncated),
    ("ELF0005", "ELF with bad magic is refused", elf::bad_magic),
    ("ELF0006", "ELF with a W+X segment is refused", elf::wx_segment),
    ("ELF0007", "hand-made ELF loads its data and exits 42", elf::tiny),
    ("ELF0008", "loaded segments get their rights", elf::segment_rights),
    ("CAP0001", "empty slot is INVALID_CAP", caps::empty_slot),
    ("CAP0002", "slot 256 (no cappage there) is NO_CAPPAGE", caps::slot_256),
    ("CAP0003", "slot u64::MAX is OUT_OF_RANGE", caps::slot_max),
    ("CAP0004", "null slot 0 is INVALID_CAP", caps::slot_null),
    ("CAP0005", "unknown console method is INVALID_METHOD", caps::unknown_method),
    ("CAP0006", "reduced rights give NO_RIGHTS", caps::reduced_rights),
    ("CAP0007", "deleted capability is gone", caps::delete),
    ("CAP0008", "INSERT_CAP into an occupied slot is EXISTS", caps::insert_occupied),
    ("CAP0009", "INSERT_CAP from an empty slot is INVALID_CAP", caps::insert_empty),
    ("CAP0010", "a page capability has no methods", caps::page_methods),
    ("CAP0011", "INFO with an unknown key is INVALID_ARG", caps::info_bad_key),
    ("CAP0012", "every kernel method refuses a capability without the right keep.toml gives it", caps::method_rights),
    ("CON0001", "WRITE from a kernel pointer is FAULT", caps::write_kernel_ptr),
    ("CON0002", "WRITE from an unmapped pointer is FAULT", caps::write_unmapped),
    ("CON0003", "WRITE of more than 4096 bytes is INVALID_ARG", caps::write_too_long),
    ("CON0004", "non-blocking READ without input is WOULD_BLOCK", caps::read_nonblocking),
    ("CON0005", "CONSOLE.READ refuses a bad length, flag or buffer and writes nothing; WRITE of 0 bytes writes 0", console::read_write_args),
    ("CON0006", "a blocking CONSOLE.READ without input waits, writes nothing and does not answer; STOP and START put it back into the same wait", console::read_blocks),
    ("RETYPE0001", "bad type is INVALID_ARG, FREE unchanged", caps::retype_bad_type),
    ("RETYPE0002", "occupied slot is EXISTS, FREE unchanged", caps::retype_occupied),
    ("RETYPE0003", "PAGE takes exactly one frame", caps::retype_one_frame),
    ("RETYPE0004", "a new page is zeroed", caps::retype_zeroed),
    ("RETYPE0005", "CREATE_PROCESS on a non-aspace is WRONG_TYPE", caps::retype_process_wrong),
    ("MAP0001", "W|X mapping is INVALID_ARG", caps::map_wx),
    ("MAP0002", "mapping in the kernel half is INVALID_ARG", caps::map_kernel),
    ("MAP0003", "unaligned mapping is INVALID_ARG", caps::map_unaligned),
    ("MAP0004", "mapping without READ is INVALID_ARG", caps::map_no_read),
    ("MAP0005", "mapping over a mapping is EXISTS", caps::map_exists),
    ("MAP0006", "UNMAP of nothing is NOT_MAPPED", caps::unmap_nothing),
    ("MAP0007", "MAP of a non-page is WRONG_TYPE", caps::map_wrong_type),
    ("MAP0008", "two mappings share one page", caps::map_shared),
    ("MAP0009", "MAP beyond the page cap's rights is refused", caps::map_beyond_rights),
    ("MAP0010", "LOOKUP after UNMAP is NOT_MAPPED", caps::lookup_unmapped),
    ("PROC0001", "SET_NAME shows in PROCESS_INFO", process::set_name),
    ("PROC0002", "SET_PRIORITY out of range is INVALID_ARG", process::set_priority),
    ("PROC0003", "STOP and START a looping child", process::stop_start),
    ("PROC0004", "START of a running process is BAD_STATE", process::start_running),
    ("PROC0005", "WAIT on itself is BAD_STATE", process::wait_self),
    ("PROC0006", "SET_REGS with a kernel rip is INVALID_ARG", process::set_regs_kernel),
    ("PROC0007", "SET_REGS of a running process is BAD_STATE", process::set_regs_running),
    ("PROC0008", "a new process is CREATED", process::created),
    ("PROC0009", "YIELD returns OK", process::yield_ok),
    ("PROC0010", "PROCESS_INFO lists ktest as running", process::lists_self),
    ("PROC0011", "EXIT ends another process with its code", process::exit_other),
    ("CSP0001", "valid lookups name the well-known objects", cspace::valid_lookup),
    ("CSP0002", "null slot in a mapped cappage is INVALID_CAP, nothing changes", cspace::null_slot),
    ("CSP0003", "address without a cappage is NO_CAPPAGE, nothing changes", cspace::no_cappage),
    ("CSP0004", "address >= 2^32 is OUT_OF_RANGE, nothing changes", cspace::out_of_range),
    ("CSP0005", "sparse cappages near 0, 2^31, 2^32-256; slot 2^32-1 works", cspace::sparse),
    ("CSP0006", "MAP of a cappage is WRONG_TYPE", cspace::map_cappage_as_data),
    ("CSP0007", "MAP_CAPPAGE of a data page is WRONG_TYPE", cspace::map_page_as_cappage),
    ("CSP0008", "MAP_CAPPAGE errors change nothing", cspace::map_cappage_errors),
    ("CSP0009", "UNMAP_CAPPAGE errors; capabilities stay in the cappage", cspace::unmap_cappage),
    ("CSP0010", "COPY_CAP reduces rights; its errors", cspace::copy_cap),
    ("CSP0011", "MOVE_CAP empties the source; its errors", cspace::move_cap),
    ("CSP0012", "IDENTIFY_CAP of null, hole, beyond", cspace::identify_errors),
    ("CSP0013", "COMPARE_CAP: rights, objects, sender and process", cspace::compare_cap),
    ("CSP0014", "DELETE_CAP errors", cspace::delete_errors),
    ("CSP0015", "EXTRACT_CAP from a child's space; its errors", cspace::extract_cap),
    ("CSP0016", "INSERT_CAP into a child's space; its errors", cspace::insert_cap_errors),
    ("CSP0017", "aspace rights: READ-only cannot map, WRITE-only cannot look up", cspace::aspace_rights),
    ("WEAK0001", "a weak aspace capability cannot MAP", cspace::weak_no_map),
    ("WEAK0002", "EXTRACT_CAP through a weak aspace weakens or nulls", cspace::weak_extract),
    ("TAG0001", "reserved tag bits are INVALID_ARG", cspace::reserved_tag_bits),
    ("TAG0002", "kernel objects refuse SEND and SEND_RECV", cspace::kernel_object_modes),
    ("TAG0003", "more than 4 caps or 5 slots is INVALID_ARG", cspace::tag_counts),
    ("ACCT0001", "CREATE_ASPACE takes 2 account frames, DESTROY returns them", acct::aspace_frames),
    ("ACCT0002", "CREATE_PROCESS takes 1 account frame, DESTROY returns it", acct::process_frames),
    ("ACCT0003", "CREATE_ACCOUNT makes an empty account from 1 pool frame", acct::create_account),
    ("ACCT0004", "DONATE and RECLAIM move frames; RECLAIM too many is NO_MEMORY", acct::donate_reclaim),
    ("ACCT0005", "DONATE argument errors change nothing", acct::donate_args),
    ("ACCT0006", "DONATE more than the pool is NO_MEMORY, nothing changes", acct::donate_too_much),
    ("ACCT0007", "RECLAIM argument errors change nothing", acct::reclaim_args),
    ("ACCT0008", "empty account without kpager is NO_MEMORY, nothing changes", acct::empty_no_kpager),
    ("ACCT0009", "empty account with a kpager: KMEM call, DONATE, completes", acct::kpager_refills),
    ("ACCT0010", "DESTROY through another account is INVALID_ARG", acct::destroy_other_account),
    ("ACCT0011", "DESTROY of an aspace in use is BAD_STATE", acct::destroy_used_aspace),
    ("ACCT0012", "DESTROY of a page, console, empty slot fails", acct::destroy_wrong),
    ("ACCT0013", "destroyed process: STALE everywhere, slot reusable", acct::destroyed_process_stale),
    ("ACCT0014", "destroyed aspace: STALE everywhere", acct::destroyed_aspace_stale),
    ("ACCT0015", "account rights: READ cannot create, WRITE cannot INFO", acct::account_rights),
    ("ACCT0016", "memory rights: READ cannot RETYPE, WRITE cannot FREE", acct::memory_rights),
    ("ACCT0017", "SET_KPAGER errors", acct::set_kpager_errors),
    ("ACCT0018", "CREATE_* into a full slot is EXISTS, nothing changes", acct::create_exists),
    ("ACCT0019", "RETYPE CAPPAGE takes one pool frame", acct::cappage_frame),
    ("ACCT0020", "CREATE_PROCESS in a read-only aspace is NO_RIGHTS", acct::create_process_rights),
    ("ACCT0021", "a destroyed process is no longer listed", acct::destroyed_not_listed),
    ("ACCT0022", "a loaded program's account frames come back on DESTROY", acct::program_frames_return),
    ("KMEM0001", "DESTROY_ALL destroys everything made from an account and returns every frame", kmem::destroy_all),
    ("KMEM0002", "DESTROY_ALL errors change nothing", kmem::destroy_all_errors),
    ("KMEM0003", "REVOKE_TABLE drops a live space's tables, MAP rebuilds them; errors change nothing", kmem::revoke_table),
    ("KMEM0004", "REVOKE_PROCESS seals a process out, RESTORE_PROCESS brings it back", kmem::export_restore),
    ("KMEM0005", "tampered, swapped, foreign and replayed exports are refused", kmem::export_refused),
    ("KMEM0006", "a kpager that would fault to itself gets NO_MEMORY, not a deadlock", kmem::kpager_own_fault),
    ("KMEM0007", "a live task computes right while its tables, segment tables and processes are taken back", kmem::live_task),
    ("KMEM0008", "MEMORY.REVOKE unmaps a page or cappage everywhere and destroys it", kmem::memory_revoke),
    ("REVOKE0001", "MEMORY.REVOKE of a page mapped in 150 page tables of four spaces restarts between parts and removes exactly its mappings", revoke::page_everywhere),
    ("REVOKE0002", "MEMORY.REVOKE of a cappage mapped at 300 capability addresses, past the space's record, restarts between parts and removes every mapping", revoke::cappage_everywhere),
    ("REVOKE0003", "ACCOUNT.DESTROY_ALL of 40 processes and a space of 64 page tables restarts between parts and gives every frame back", revoke::destroy_all_parts),
    ("REVOKE0004", "MEMORY.DONATE and ACCOUNT.RECLAIM of 2,683 frames restart between parts of MOVE_FRAMES and move exactly what one-part calls move", revoke::donate_reclaim_parts),
    ("REVOKE0005", "ACCOUNT.DESTROY_ALL of an account with 2,683 unused frames gives them back in parts, the pool whole again", revoke::destroy_all_frames),
    ("REVOKE0006", "ACCOUNT.DESTROY_ALL of three spaces of 48 page tables each, a whole number of parts, restarts all along and gives every frame back", revoke::destroy_all_whole_parts),
    ("REVOKE0007", "ACCOUNT.DESTROY of a DMA domain of 64 tables, and DESTROY_ALL of an account with another, restart between parts, unpin the page and give every frame back", revoke::dma_domain_parts),
    ("REVOKE0008", "ACCOUNT.DESTROY_ALL of an account with 40 exported processes drops the exports in parts (restarts between them); the exports open nowhere, their pages reclaim, every frame comes back", revoke::destroy_all_exports_in_parts),
    ("KMEM0009", "REVOKE_CAP_TABLE: capability-segment tables taken back and rebuilt on the next lookup", kmem::revoke_cap_table),
    ("KMEM0010", "an exported process goes on where it was: running, asleep, receiving, sending, waiting", kmem::export_states),
    ("KMEM0011", "a process whose fault message is queued, and its handler, are not exported", kmem::export_refused_states),
    ("KMEM0012", "process numbers are bought by the account: a number page with the first process", kmem::numbers_paid),
    ("KMEM0013", "63 numbers to a page; a second page goes back when it empties", kmem::numbers_per_page),
    ("KMEM0014", "a number page bought again: no capability of an old process names a new one", kmem::numbers_reused),
    ("KMEM0015", "SET_SEAL_KEY through a read-only KERNEL is NO_RIGHTS; the seal goes on working", kmem::seal_key),
    ("KMEM0016", "ACCOUNT.DESTROY of an exported process: INVALID_ARG through another account, the export intact; OK through its own, its export then BAD_SEAL; another export beside it restores and ends as it would", kmem::destroy_exported),
    ("KMEM0017", "a process an interrupt line is bound to is not exported (IN_USE, nothing taken, it goes on); BIND to an exported process is BAD_STATE and leaves the line unbound; unbound, it exports and restores", kmem::export_interrupt_bound),
    ("KMEM0018", "a space destroyed (DESTROY, DESTROY_ALL) while a mapped cappage's segment table is taken back: the cappage counts as unmapped, RECLAIM (IN_USE before) takes it", kmem::destroy_cap_table_out),
    ("KMEM0019", "a fault whose handler is exported goes to the handler's account's kpager as KMEM_PROCESS with the export's identifier; restored and answered, the fault goes to the handler; with no kpager the process stops FAULTED", kmem::exported_handler_fault),
    ("KMEM0020", "a receiver exported with a sender in its queue: the sender asks the kpager (KMEM_PROCESS, the export's identifier); restored and answered, it waits in the queue again", kmem::export_with_queued_sender),
    ("KMEM0021", "DESTROY_ALL of an account with exported processes destroys them: their capabilities STALE, their exports BAD_SEAL, the pool whole", kmem::destroy_all_exported),
    ("WRAP0001", "a wrapper forwards with reduced rights; DESTROY revokes", acct::wrapper_forwards),
    ("WRAP0002", "revoking kills copies and wrappers of it, nothing else", acct::wrapper_revoke),
    ("WRAP0003", "CREATE_WRAPPER errors change nothing", acct::wrapper_errors),
    ("WRAP0004", "WRAPPER_DEPTH wrappers work, one more is INVALID_CAP", acct::wrapper_depth),
    ("IPC0001", "CALL and reply: label, words, CALLED, return cap in slot 0", ipc::call_reply),
    ("IPC0002", "SEND to a waiting receiver", ipc::send_oneway),
    ("IPC0003", "a blocking SEND waits until the receiver receives", ipc::send_queues),
    ("IPC0004", "non-blocking SEND to a non-receiver is WOULD_BLOCK, nothing queued", ipc::send_nonblocking),
    ("IPC0005", "non-blocking RECV with nothing queued is WOULD_BLOCK", ipc::recv_nonblocking),
    ("IPC0006", "RECV time-out is TIMEOUT after about the time asked", ipc::recv_timeout),
    ("IPC0007", "reply-and-receive serves consecutive calls", ipc::reply_and_receive),
    ("IPC0008", "a return capability used twice is STALE", ipc::return_twice),
    ("IPC0009", "CALL to a receiver without receive slots is BAD_STATE", ipc::call_no_slots),
    ("IPC0010", "a SENDER copied without CALL sends but cannot call", ipc::no_call),
    ("IPC0011", "a SENDER minted without CALL sends but cannot call", ipc::minted_no_call),
    ("IPC0012", "two senders' protected payloads arrive", ipc::payloads),
    ("IPC0013", "0-4 capabilities on a call, rights reduced", ipc::caps_on_call),
    ("IPC0014", "0-4 capabilities on a reply, rights reduced", ipc::caps_on_reply),
    ("IPC0015", "strings of 0, 64, 4096 bytes on a call (fast path), same and higher priority", ipc::strings_on_call),
    ("IPC0016", "strings of 0, 64, 4096 bytes on a reply", ipc::strings_on_reply),
    ("IPC0017", "a 4097-byte string is INVALID_ARG", ipc::string_too_long),
    ("IPC0018", "capabilities beyond the receive slots are not delivered", ipc::caps_beyond_slots),
    ("IPC0019", "MINT and SENDER rights errors", ipc::sender_errors),
    ("IPC0020", "a sender to a destroyed process is STALE", ipc::sender_stale),
    ("IPC0021", "a return capability in CALL mode is INVALID_METHOD", ipc::return_not_callable),
    ("IPC0022", "STOP ends a pending receive with BAD_STATE", ipc::stop_receiver),
    ("IPC0023", "SEND_RECV sends, then receives the answer", ipc::send_recv),
    ("IPC0024", "SET_IPC_BUFFER checks; an unmapped buffer is FAULT", ipc::ipc_buffer_fault),
    ("IPC0025", "direct switch to a waiting same-priority receiver", ipc::direct_switch),
    ("IPC0026", "a lower-priority receiver waits for the sender to block", ipc::lower_receiver_waits),
    ("IPC0027", "the fast path takes calls and replies, with the general path's results", ipc::fast_path_used),
    ("IPC0028", "an IPC buffer found mapped, then unmapped, is FAULT; mapped again, good", ipc::ipc_buffer_unmapped_later),
    ("IPC0029", "the fast path with two and three receive slots and a capability on the call", ipc::fast_path_recv_slots),
    ("IPC0030", "a reply-and-receive into a hole is NO_CAPPAGE and sends nothing", ipc::fast_path_recv_slot_hole),
    ("IPC0031", "a reply-and-receive naming 6 or 7 receive slots is INVALID_ARG and sends nothing", ipc::reply_recv_too_many_slots),
    ("IPC0032", "receive slots naming one slot twice are INVALID_ARG (receive, call, reply-and-receive)", ipc::duplicate_recv_slots),
    ("IPC0033", "a call's reply wait can time out; the late reply is STALE", ipc::call_timeout),
    ("IPC0034", "revoking a wrapper wakes the senders queued through it with STALE", ipc::wrapper_revoked_wakes_queued_sender),
    ("IPC0035", "timed calls answered on the fast path leave the timer list sound", ipc::timed_calls_fast_replies),
    ("IPC0036", "receive slots reaching one slot through one cappage mapped twice are INVALID_ARG (receive, call, reply-and-receive)", ipc::aliased_recv_slots),
    ("IPC0037", "calls with a string and a capability to a server of the same, a higher and a lower priority: both arrive whole, the reply comes back; the fast path carries those to a server that runs next", ipc::string_and_cap_calls),
    ("IPC0038", "a sender destroyed in the middle of a send queue is taken out; the others' messages arrive, nothing more", ipc::queued_sender_destroyed),
    ("IPC0039", "calls naming a capability that cannot be sent (empty slot, hole, bad rights), with and without a string, to a waiting server of the same and a higher priority: the error, nothing received; the next call is answered", ipc::bad_cap_calls),
    ("REPLY0001", "a return capability deleted: its caller hears NO_REPLY at once", reply::deleted),
    ("REPLY0002", "a return capability overwritten by the next call: NO_REPLY", reply::overwritten),
    ("REPLY0003", "a moved return capability still answers", reply::moved_still_answers),
    ("REPLY0004", "the cappage holding it unmapped: NO_REPLY", reply::cappage_unmapped),
    ("REPLY0005", "return capabilities are never copied (COPY, INSERT, wrapper, message)", reply::never_copied_setup),
    ("REPLY0006", "the server's space loses its last process: NO_REPLY", reply::server_space_gone),
    ("REPLY0007", "a fault message's return capability deleted: the process stops FAULTED", reply::fault_reply_lost),
    ("REPLY0008", "a caller exported while its return capability goes hears NO_REPLY once restored", reply::exported_caller),
    ("REPLY0009", "a return capability in a cappage mapped twice or in a second space: NO_REPLY once no live space maps it", reply::aliased_cappage_wakes),
    ("REPLY0010", "a server whose cappage is mapped twice or in a second space destroyed: the memory pool gets every frame back", reply::aliased_cappage_pool),
    ("FH0001", "a user-level pager resolves a page fault", handler::user_pager),
    ("FH0002", "an exception's handler moves rip with WRITE_REGS and resumes", handler::exception_write_regs),
    ("FPU0001", "a process's vector registers (AVX, or SSE without it) survive switches to one that changes its own", handler::vector_state_kept),
    ("FPU0002", "the kernel's XSAVE bit, CPUID's OSXSAVE and XCR0 agree; AVX enabled where the CPU has it", handler::xsave_enabled),
    ("FPU0003", "READ/WRITE_VECTOR_STATE: a stopped child's registers in XSAVE's format, changed for it; bad MXCSR or header refused with nothing changed; rights; itself BAD_STATE", handler::vector_state_methods),
    ("FPU0004", "READ/WRITE_VECTOR_STATE of a running process are BAD_STATE; of a stopped one they work", handler::vector_state_running),
    ("FH0003", "a STOP reply leaves the process STOPPED", handler::reply_stop),
    ("FH0004", "without a handler an exception is FAULTED", handler::handler_removed),
    ("FH0005", "an emulated system call answered with RESUME_SET_RAX", handler::emulation),
    ("FH0006", "READ_REGS of a created child; BAD_STATE when running or self", handler::read_regs_states),
    ("FH0007", "WRITE_REGS refuses kernel rip and rsp, changes nothing", handler::write_regs_checks),
    ("FH0008", "SET_FAULT_HANDLER and SET_EMULATION errors", handler::handler_errors),
    ("FH0009", "fault replies by reply-and-receive (fast path): RESUME_SET_RAX, RESUME", handler::fault_reply_recv),
    ("FH0010", "an emulated system call of a child above and below its handler's priority: reflected, and answered by reply-and-receive with the result in rax (the fast path for the child above)", handler::fault_reply_recv_other_prio),
    ("FH0011", "a fault handler destroyed with a fault message and a sender in its queue: the faulting process ends FAULTED by its own fault, the send STALE", kmem::handler_destroyed_with_queue),
    ("FH0012", "an emulated system call with no handler to go to (none, or its process destroyed) stops the process FAULTED at the system call", handler::emulated_syscall_no_handler),
    ("TIME0003", "NOW advances; ms agree with ticks", sched::now),
    ("TIME0004", "SLEEP lasts at least the time asked", sched::sleep),
    ("TIME0005", "SLEEP of 0 or more than a day is INVALID_ARG", sched::sleep_args),
    ("TIME0006", "a timer without READ is NO_RIGHTS", sched::timer_rights),
    ("TIME0007", "SLEEP_UNTIL wakes no earlier than its TSC deadline, returns at once for a passed one, refuses one more than a day ahead", sched::sleep_until),
    ("PRIO0001", "the higher-priority runnable process runs first", sched::priority_order),
    ("PRIO0002", "starting a higher-priority process preempts", sched::higher_preempts),
    ("SHARE0001", "processes sharing one address space share memory and caps", sched::shared_aspace),
    ("BUDGET0001", "SET_BUDGET refuses each bad budget and period (INVALID_ARG) and a cap without WRITE, BUDGET one without READ (NO_RIGHTS), each changing nothing", budget::errors),
    ("BUDGET0002", "a caller with a budget gives no larger share than its own, nor none, to another or itself (NO_RIGHTS, nothing changed), and its own share exactly", budget::share),
    ("BUDGET0003", "a spinner with a budget at the highest priority is parked when it has spent it: lower-priority processes run, it runs again in later periods, its ran-out count grows, its consumed time stays within its budget", budget::spinner),
    ("BUDGET0004", "removing a budget (0/0) reads back as none and a parked process runs again", budget::remove),
    ("BUDGET0005", "destroying a process with a budget, parked or not, leaves the kernel's invariants and the timer sound", budget::destroyed),
    ("PRIO0003", "two spinners at one priority both run: the one-shot timer ends a slice among equals", budget::round_robin),
    ("BUDGET0006", "sleepers with deadlines out of order, one with a budget, all wake after at least their time", budget::sleepers),
    ("CPUTIME0001", "CPU_TIME: 0 for a process not started; a spinner's grows while it runs, never past the time since it was made, and stands still while it is stopped; the caller's own grows as it computes; a cap without READ is refused (NO_RIGHTS)", budget::cpu_time),
    ("CPUTIME0002", "CPU time through the notification fast path's direct switches: a waiter above ktest woken 200 times has run more than 0 and no more than the time since it was made; ktest's own grows no more than the loop's time", notify::ntfn_fast_path),
    ("PASSIVE0001", "SET_PASSIVE refuses an on above 1 (INVALID_ARG), a cap without WRITE and a caller with a budget turning it off (NO_RIGHTS), each changing nothing; it answers what it was", passive::errors),
    ("PASSIVE0002", "a passive server spinning on a budgeted caller's call runs on the caller's budget: the caller runs out in period after period, the server has no budget of its own, a lower-priority process runs", passive::on_client_time),
    ("PASSIVE0003", "two callers with different budgets: each call's time is its own caller's, never the other's", passive::two_clients),
    ("PASSIVE0004", "a nested call through a passive relay to a passive spinner runs on the first caller's budget", passive::nested),
    ("PASSIVE0005", "the caller destroyed mid-call: the server runs on, on its own terms, the kernel's invariants hold", passive::caller_destroyed),
    ("PASSIVE0006", "the server destroyed mid-call: the caller waits and spends no budget, then hears NO_REPLY when the return capability goes", passive::server_destroyed),
    ("PASSIVE0007", "the return capability deleted mid-call: the caller hears NO_REPLY and its budget is no longer spent by the server", passive::reply_revoked),
    ("DEV0001", "DEVMEM covers the top of low RAM to the end of the physical address space", device::devmem_info),
    ("DEV0016", "DEVMEM above 4 GiB maps (64-bit BARs' place), up to its last page", device::devmem_high),
    ("DEV0002", "a DEVMEM page maps and reads the HPET's vendor ID", device::devmem_hpet),
    ("DEV0003", "DEVMEM MAP errors: APICs IN_USE, beyond, EXEC, WRONG_TYPE", device::devmem_map_errors),
    ("DEV0004", "DEVMEM RESTRICT narrows; errors and READ-only copies", device::devmem_restrict),
    ("DEV0005", "IOPORT OUT then IN: a CMOS byte reads back", device::ioport_cmos),
    ("DEV0006", "IOPORT errors: widths, kernel ports IN_USE, ranges, rights", device::ioport_errors),
    ("DEV0017", "IOPORT OUT and IN of 2 and 4 bytes (CMOS index and data, the PCI address register); unknown IOPORT and DEVMEM methods are INVALID_METHOD", edges::ioport_widths),
    ("CSP0018", "INSERT_CAP and EXTRACT_CAP with rights outside ALL and WEAK are INVALID_ARG, nothing changes", edges::transfer_bad_rights),
    ("IPC0040", "a CALL whose receive slots name a hole or an address past the space is refused before it is sent", edges::call_bad_recv_slots),
    ("IPC0041", "calls with and without a reply time-out, with none, one and two capabilities answered by reply-and-receive naming one, two and three receive slots with a receive time-out, from a server of the same, a higher and a lower priority: each reply and capability arrives, the timer list stays sound, no time-out fires later", ipc::timed_reply_recv_slots),
    ("IPC0042", "without an IPC buffer (none, or unmapped) RECV naming receive slots, READ_REGS and WRITE_REGS are FAULT and change nothing; RECV naming none is WOULD_BLOCK", ipc::no_ipc_buffer),
    ("IPC0043", "a RECV naming no receive slot passes over a queued fault message and takes the plain message behind it; the fault waits for a RECV with a slot", kmem::recv_passes_fault_message),
    ("NTFN0007", "a notification through a wrapper: SIGNAL sets the bits, SIGNAL of none is INVALID_ARG, WAIT beside a waiter is IN_USE and leaves it waiting", edges::ntfn_through_wrapper),
    ("DEV0007", "a PIT interrupt arrives as an IRQ message with the payload", device::irq_delivered),
    ("DEV0008", "an interrupt waits for the next receive; masked until ACK", device::irq_waits),
    ("DEV0009", "INTERRUPT errors: console line, twice, types, ranges, rights", device::irq_errors),
    ("DEV0010", "a binding to a destroyed process is dropped", device::irq_dead_binding),
    ("DEV0011", "ROUTE_MSI: the message for this machine, MSI lines bind, UNROUTE drops the binding; errors", device::msi_route),
    ("DEV0012", "DEVMEM through wrappers maps; destroying one unmaps what it mapped, RESTRICT refused", device::devmem_wrapper),
    ("DEV0013", "a DEVMEM wrapper's mapping record: full gives NO_MEMORY, gone mappings leave room", device::devmem_wrapper_records),
    ("DEV0014", "INTERRUPT and IOPORT through wrappers: a line bound through one is unbound when it goes", device::interrupt_wrapper),
    ("DEV0015", "an MSI line routed through a wrapper is unrouted when it goes", device::msi_wrapper),
    ("DMA0001", "a DMA domain maps pages the caller holds, pinned until UNMAP or DESTROY", dma::domain_methods),
    ("DMA0002", "DMA domain errors: frames not held, rights, addresses, ATTACH, DETACH, DESTROY", dma::domain_errors),
    ("DMA0003", "virtio-blk through the IOMMU: the disk's pattern reads, written sectors read back", dma::blk_integrity),
    ("DMA0004", "a rogue DMA to a page not mapped for DMA is stopped and reported; the page is intact", dma::rogue_dma),
    ("DMA0005", "after UNMAP the device faults at the old address: the IOTLB was invalidated", dma::unmap_invalidates),
    ("DMA0006", "DESTROY_ALL of an account destroys its DMA domains and unpins their pages", dma::destroy_all),
    ("DMA0007", "MEMORY.REVOKE of a page takes it from DMA domains too (IOTLB invalidated)", dma::memory_revoke),
    ("DMA0008", "an exported process cannot become a DMA fault handler; restored, it can", dma::exported_handler),
    ("DMA0009", "a device's forged interrupt messages at vectors 0-31 (compatibility format) are counted and acknowledged; no process faults, the kernel goes on", dma::forged_low_vectors),
    ("DMA0010", "DMA_DOMAIN.HOLD and RELEASE: errors hold nothing, a destroyed page's held frame stays out of the pool until its last hold, DESTROY lets go (BAD_STATE where the IOMMU translates)", dma::holds),
    ("DMA0011", "a device's forged interrupt messages at every vector 32-255 but the interrupt lines' run their stubs: the kernel's own handlers have nothing to do, the rest are counted unowned; the timer and the disk go on", dma::forged_high_vectors),
    ("DMA0012", "a device's forged interrupt message at each line's vector reaches the line's binding: every line but the console's bound to one notification gets its bit; ACK and UNBIND leave the lines as they were", dma::forged_line_vectors),
    ("DMA0013", "once every DMA domain number is taken CREATE_DMA_DOMAIN is BAD_STATE, charges nothing, fills no slot; a destroyed domain's number serves the next; DESTROY_ALL of them all goes in parts", dma::domain_numbers_run_out),
    // Notifications (docs/kernel-manual.md, "Notifications").
    ("NTFN0001", "notifications: bits OR in and are taken once by POLL or WAIT; READ and WRITE rights; errors; STALE once destroyed", notify::basics),
    ("NTFN0002", "a notification's waiter in another process is woken with the bits; a second waiter is IN_USE; a killed waiter is forgotten; a destroyed notification is STALE for its waiter", notify::waiters),
    ("NTFN0003", "a bound notification's bits arrive in the process's open receive, or at its next one, as NOTIFY with the SENDER's payload; BIND and UNBIND errors", notify::bound),
    ("NTFN0004", "a PIT interrupt bound to a notification ORs its bits in: wakes a waiter in another process, WAIT, or a bound receive as NOTIFY; masked until ACK; nothing after UNBIND", notify::interrupt),
    ("NTFN0005", "BIND_NOTIFICATION errors (bits, line, types, rights, twice either way) change nothing; a wrapper's destruction and a destroyed notification unbind the line", notify::interrupt_errors),
    ("NTFN0006", "a signal completes its waiter's WAIT in place: the bits arrive though the waiter's capability moved meanwhile; above and at ktest's priority", notify::completed_in_place),
    ("NTFN0009", "the notification fast path: SIGNAL without a waiter and WAIT with bits set are completed there; a signal to a waiter above ktest runs it before SIGNAL returns, at or below ktest's priority ktest goes on first; the bits arrive; a WAIT beside a waiter is IN_USE with a process to switch to", notify::fast_path),
    ("NTFN0008", "an exported process loses its binding and BIND to it is BAD_STATE, binding nothing; restored, it is bound again and the bits set meanwhile arrive in its receive", notify::exported),
    ("PCI0001", "the PCI server lists bus 0 and opens one session per function, with its DMA domain", drivers::pci_sessions),
    ("PCI0002", "PCI configuration writes are filtered: BARs, header, command, MSI-X; BARs as DEVMEM", drivers::pci_filter),
    ("PCI0003", "a virtio-blk completion interrupt reaches its driver through the I/O APIC and interrupt remapping", drivers::pci_irq),
    ("PCI0004", "virtio-blk completions arrive as MSI-X messages through a kernel remapping entry (or plain MSI without IOMMU)", drivers::pci_msi),
    ("PCI0005", "RELEASE takes the device back from a running driver: BAR unmapped, lines unbound, grants STALE", drivers::pci_take_back),
    ("PCI0006", "a driver spending its DMA domain's page tables gets NO_MEMORY from its session's budget alone: another session still maps, the server's account is untouched, released sessions give every frame back", drivers::pci_session_budget),
    ("MED0001", "without an IOMMU the PCI server's mediator refuses descriptors outside the driver's pinned pages; nothing reaches the device", mediator::rogue_descriptors),
    ("MED0002", "without an IOMMU a driver cannot reach the virtio queue address registers, ring features or bus mastering unmediated", mediator::queue_registers),
    ("MED0003", "without an IOMMU the mediator refuses a virtio-net frame or receive buffer outside the driver's pinned pages; honest frames go through", mediator::net_descriptors),
    ("DS0001", "dataspaces: created, mapped with rights, shared read-only into another space, unmapped, destroyed", ds::map_share),
    ("DS0002", "dataspaces: REVOKE takes a share and its shares back, mappings and all; the owner keeps its data", ds::revoke),
    ("DS0003", "dataspaces: PIN maps pages into a DMA domain with rights and gives device addresses; UNPIN, REVOKE, DESTROY unpin", ds::pin),
    ("DS0004", "dataspaces: every malformed or unauthorised request is refused and changes nothing", ds::errors),
    ("DS0005", "dataspaces: CREATE is paid by the client's bank (charged, given back); a bank at its limit is NO_MEMORY; a missing, foreign, rightless or dead bank is refused; nothing changes", ds::create_paid),
    ("DS0006", "dataspaces: the paying bank destroyed takes the frames, mappings and pins back; the manager answers GONE and serves on", ds::bank_destroyed),
    ("DS0007", "dataspaces: a manager ended without QUIT: its dataspaces stay as memory and answer STALE; create_owned finds the new one and retries once; Owned::destroy gives the old one back", ds::restarted),
    ("DS0008", "dataspaces: one dataspace shared, mapped and pinned without end is FULL at its own quota; another client's dataspace is served; DESTROY gives every record back", ds::quota),
    ("BLK0001", "the block server: two clients, own ranges and rights, checksummed data, every refusal", drivers::blk_clients),
    ("BLK0002", "three block clients in their own processes at once: two writers, a read-only reader", drivers::blk_processes),
    ("BLK0003", "block clients' dataspaces: the device reads and writes their pages; rights, ranges, buffers, revocation refused", drivers::blk_dataspaces),
    ("BLK0004", "three dataspace writers in their own processes at once: several requests on the device, flushed, read back", drivers::blk_in_flight),
    ("BLK0005", "block batches: a batch written and read back with several entries on the device; every malformed batch refused whole, disk and pages unchanged", blkbatch::blk_batches),
    ("BLK0006", "a client revoking its share under its own batch: the device stops, the server resets it, the batch ends BAD_BUFFER, other clients are served", blkreset::blk_revoke_in_flight),
    ("BLK0007", "a block client attaching buffer after buffer holds at most its part of the table (NO_RESOURCES past it); another client attaches and is served; its buffers come back when its dataspaces go", drivers::blk_buffers_per_client),
    ("BLK0008", "without an IOMMU a client destroying its dataspace under its own batch: the frames on the device are held, none is given out, the reset lets go of them", blkreset::blk_destroy_in_flight),
    ("BLK0009", "the block server answers FLUSH after FLUSH in a long row (blocking requests reuse its bounce pages and their addresses)", drivers::blk_flushes),
    ("BLK0010", "block request rings: every refusal of RING; writes and reads through the ring; every malformed descriptor completed with its status, disk and pages unchanged; indices out of range take nothing; RING_END gives the buffer back", blkring::blk_rings),
    ("BLK0011", "a block server ended under a client's ring: the client's submit fails, and it sets its ring up again with the server started anew", blkring::blk_ring_restart),
    ("BLK0012", "a block client revoking its ring's share under a set-up ring: the server's guard takes the touch, the ring is taken down, nothing else changes, a new ring is served", blkring::blk_ring_revoked),
    // The network (docs/network.md, "The network").
    ("NET0001", "the network server's protocol: stacks added and removed, every refused request changes nothing", net::net_protocol),
    ("NET0002", "frames reach only the stack they are addressed to: between stacks and from QEMU's gateway (ARP, ICMP)", net::net_demux),
    ("NET0003", "two smoltcp stacks in their own processes answer ARP and ICMP echo, each handed only its own frames", net::net_stacks),
    ("NET0004", "WAIT sleeps until a frame comes: the NIC's MSI-X interrupt wakes the server, which answers the waiting stack", net::net_wait),
    ("NET0005", "a stack's frames go through a ring in its dataspace both ways, several with one KICK, the NIC reading them in place", net::net_ring),
    ("NET0006", "malformed ring descriptors, indices, writes to the server's half and ATTACHes are refused and counted; the ring goes on", net::net_ring_refusals),
    ("NET0007", "init's notice that a client ended makes the server let go of its ring at once; the same request from a client is refused", net::net_notice),
    ("NET0008", "a ring whose pages go while attached (no notice): the server's guard covers the fault, the server lets go of the ring and keeps serving; a new ring works", net::net_ring_lost),
    ("NET0009", "netstack drops a TCP segment with a wrong checksum unanswered and sends segments whose checksums are right", net::net_checksums),
    ("NET0010", "the NIC reset on demand with frames on their way, and a stack revoking its ring's share under frames for the NIC: the NIC is reset only if it says it stopped; other stacks and a new ring are served", net::net_revoke_in_flight),
    ("NET0011", "NOTIFY: the server signals a stack's notification once for the frames put in for it (waiting ones at once), not for RECVs or other stacks' frames; refusals change nothing; NOTIFY of none stops it; a destroyed notification is dropped", net::net_notify),
    // The wall clock (docs/devices.md, "The wall clock").
    // The TPM's driver (docs/devices.md, "The TPM").
    ("TPM0001", "the tpm driver with the CRB's page: RANDOM, PCR, EXTEND and LOG; every bad request refused and nothing logged; a client may seal and unseal but not EXTEND or QUIT; a PCR change refuses the blob (PCR_CHANGED); the counter increments; without the page NO_TPM", tpm::tpm_server),
    ("RTC0001", "the rtc server with ports 0x70-0x71 answers NOW in Unix seconds that advance; unknown labels BAD_REQUEST, a client's QUIT DENIED; without the ports NO_CLOCK", rtc::rtc_server),
    ("RECL0001", "RECLAIM a page: IN_USE while mapped, then STALE everywhere", device::reclaim_page),
    ("RECL0002", "RECLAIM a cappage: IN_USE while mapped, then gone", device::reclaim_cappage),
    ("RECL0003", "RECLAIM errors change nothing", device::reclaim_errors),
    ("RECL0004", "a page mapped in a destroyed aspace can be reclaimed", device::reclaim_after_aspace),
    ("SFI0001", "%gs bases are per process: two threads keep their own", sfi::gs_per_process),
    ("SFI0002", "in-process domains: null calls, host call, separate data, a fault ends the call, x87 emptied, the code page's tail traps", sfi::in_process),
    ("SFI0003", "pfilter: the DNS filter's verdicts on eight packets", sfi::verdicts),
    ("SFI0004", "pfilter: a store through an unsandboxed register is rejected", sfi::reject_store),
    ("SFI0005", "pfilter: a syscall instruction is rejected", sfi::reject_syscall),
    ("SFI0006", "pfilter: no filter entry, 64 MiB of bss, garbage, truncated module refused", sfi::reject_other),
    ("SFI0007", "pfilter: unknown filter, label, oversize load get errors", sfi::bad_requests),
    ("SFI0008", "pfilter: null store, ud2, int3 in a filter are FAULTs; the server goes on", sfi::faults),
    ("SFI0009", "pfilter: a looping filter is stopped (TIMEOUT); the server goes on", sfi::timeout),
    ("SFI0010", "pfilter: sixteen domains at once, each with its own verdicts", sfi::several),
    ("SFI0011", "pfilter: still filters, then QUIT exits 0", sfi::quit),
    ("EXAMPLE0001", "the counter server and its client from docs/writing-programs.md", example::counter),
    ("BANK0001", "space bank: pages, cappages, accounts allocated, charged and freed", bank::alloc_free),
    ("BANK0002", "space bank: limits of a bank and of the banks above it", bank::limits),
    ("BANK0003", "space bank: malformed requests and foreign handles change nothing", bank::errors),
    ("BANK0004", "space bank: a restricted capability cannot free, destroy or amplify", bank::restrict),
    ("BANK0005", "space bank: destroying a live bank leaves no trace", bank::destroy_live),
    ("BANK0006", "space bank: REPORT lists the subtree and its accounts", bank::report),
    ("BANK0007", "space bank: a capability without rights is refused every request", bank::rights_table),
    ("BANK0008", "space bank: past its table of banks FULL, and nothing changes", bank::full),
    ("BANK0009", "space bank: an allocation the memory pool cannot pay is NO_MEMORY, and nothing changes", bank::no_memory),
    ("BANK0010", "space bank: past the server's capability slots FULL, and nothing changes", bank::slots_full),
    ("BANK0011", "space bank: a run of pages (ALLOC_PAGES) charged, used, freed whole and with its bank", bank::runs),
    ("CTOR0001", "constructor: a confined instance cannot get a message out", ctor::confined),
    ("CTOR0002", "constructor: unsafe capabilities make it not confined unless authorised", ctor::not_confined),
    ("CTOR0003", "constructor: malformed requests and false banks change nothing", ctor::errors),
    ("CTOR0004", "constructor: instances get zero pages on first touch from their bank; other faults stop them", ctor::first_touch),
    // The server fuzzers (docs/fuzzing.md): each server's protocol from its definition, an honest client beside.
    ("SRVFUZZ0001", "rtc fuzzed from its definition through a client's capability: every reply within its time-out with a listed status; an honest client reads a sane time that never goes back", srvfuzz::rtc),
    ("SRVFUZZ0002", "space bank fuzzed from its definition through a client's bank: listed statuses only; an honest bank beside it allocates and frees with exact charges; the prime bank's charge comes back", srvfuzz::spacebank),
    ("SRVFUZZ0003", "dataspace manager fuzzed from its definition through a dataspace capability: listed statuses only; an honest client maps its own dataspace and reads back what it wrote; the manager's counts and the bank's charge come back", srvfuzz::dataspace),
    ("SRVFUZZ0004", "PCI server and block server fuzzed from their definitions through clients' capabilities: listed statuses only; an honest PCI client lists as before, an honest block client reads back what it wrote; every buffer and dataspace comes back", srvfuzz::pci_blk),
    ("SRVFUZZ0005", "constructor fuzzed from its definition through the metaconstructor and the builders and constructors it hands out: listed statuses only; an honest client's constructor answers IS_CONFINED as before", srvfuzz::constructor),
    ("SRVFUZZ0006", "network server fuzzed from its definition through a stack's capability, with rings, a notification and wrong capabilities to send: listed statuses only, WAIT bounded; an honest stack gets back each frame it sends itself, its counters counting only its own; the fuzzer's stack removed, the manager's counts come back", srvfuzz::net),
    ("SRVFUZZ0007", "name service and init's own requests fuzzed from their definitions through a described program's capability of an init ktest starts: listed statuses only, none of init's control requests done; an honest program finds the counter by name and counts on, init's STATUS sees it running; the banks' charges come back", srvfuzz::names),
    ("SRVFUZZ0008", "console multiplexer fuzzed from its definition (and its WRITE_WORDS label range) through a terminal without the screen and a write-only view of it: listed statuses only, INVALID_METHOD for a label that is none; an honest terminal's writes are taken whole, its READ would block, the control capability lists the same three terminals", srvfuzz::console),
    ("SRVFUZZ0009", "block server's request ring fuzzed through its descriptors: each completed once with its id and a listed status, OK exactly when valid; an honest client reads back what it wrote; the buffers come back", blkring::ring_fuzz),
    ("KERN0001", "CHECK_INVARIANTS finds no violation", stress::invariants),
    ("STRESS0001", "an unprivileged child survives 100000 random invocations", stress::stress_child),
    ("STRESS0002", "after the stress: invariants hold, operations work", stress::after_stress),
    ("FUZZ0001", "the stateful capability fuzzer: 20000 invocations on objects it makes, invariants hold every 500, the pool gets its frames back", fuzz::fuzz),
    ("FUZZ0002", "KERNEL.COVERAGE: BAD_STATE in the default build; in the coverage build the bitmap grows with a new path, clear empties it, bad arguments are refused, scope 1 records only ktest's own system calls (not the timer's interrupts)", fuzz::coverage_method),
    ("FUZZ0003", "the coverage-guided fuzzer (coverage build only): 20000 invocations as programs kept for new kernel edges and mutated, invariants hold, frames come back", fuzz::fuzz_guided),
    ("KERN0003", "CHECK_INVARIANTS finds no violation after every other test", stress::invariants_at_end),
];

fn main(image_addr: u64, image_size: u64) -> i32 {
    if image_addr == stress::STRESS_MAGIC {
        return keep_stress::run(image_size, stress::COUNT);
    }
    let image = if image_addr != 0 && image_size != 0 {
        // SAFETY: root maps the image copy read-only at image_addr for our
        // whole life and nothing maps over it.
        let bytes =
            unsafe { core::slice::from_raw_parts(image_addr as *const u8, image_size as usize) };
        BootImage::parse(bytes).ok()
    } else {
        None
    };
    let mut cx = Cx {
        image,
        slots: SlotPool::growable(keep_abi::MEMORY, keep_abi::SELF_ASPACE),
    };
    let (mut passed, mut failed) = (0, 0);
    // `only=ID,ID...` on the command line: those tests alone; an ID ending
    // in `*` stands for every test whose ID starts with what comes before
    // it (make fuzz-guided; make srvfuzz-long's `only=SRVFUZZ*`).
    let mut buf = [0u8; 512];
    let len = keep_abi::KERNEL.cmdline(&mut buf).unwrap_or(0).min(buf.len());
    let line = core::str::from_utf8(&buf[..len]).unwrap_or("");
    let only = line.split_whitespace().find_map(|w| w.strip_prefix("only="));
    let chosen = |id: &str, o: &str| {
        o.split(',').any(|x| match x.strip_suffix('*') {
            Some(prefix) => id.starts_with(prefix),
            None => x == id,
        })
    };
    for (id, name, test) in TESTS {
        if only.is_some_and(|o| !chosen(id, o)) {
            continue;
        }
        // One write per line, after the test: the kernel's reports of
        // faulting children must not split it.
        match test(&mut cx) {
            Ok(()) => {
                passed += 1;
                println!("ktest: {id} {name} ... ok");
            }
            Err(why) => {
                failed += 1;
                println!("ktest: {id} {name} ... FAILED: {why}");
            }
        }
    }
    println!("ktest: {passed} passed, {failed} failed");
    if failed == 0 { 0 } else { 1 }
}

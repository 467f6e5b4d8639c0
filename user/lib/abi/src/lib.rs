//! Rust bindings of the Keep kernel interface.
//!
//! `tools/abigen.py` writes two modules from `abi/keep.toml`: `generated.rs`
//! (the constants; the test at the bottom of this file checks them against
//! that definition) and `methods.rs` (one struct per object type holding a
//! capability address, with one typed function per method, taking the
//! arguments and returning the results the definition lists).  Neither is
//! edited by hand.  This file adds the one system call ([`syscall`];
//! [`invoke`] for kernel objects, [`ipc`] for messages), the message
//! [`Tag`], the [`IpcBuffer`] layout, the IPC endpoints [`Sender`] and
//! [`Return`], and conveniences over the generated wrappers (slices for
//! pointer and length, result structs such as [`Status`], booleans).

#![cfg_attr(not(test), no_std)]

// The generated protocols name this crate as keep_abi, as their users do.
extern crate self as keep_abi;

pub mod generated;
pub mod terminal;
pub use generated::*;
pub mod methods;
pub mod proto;
pub use methods::*;

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
    pub const NO_CAPPAGE: Error = Error(err::NO_CAPPAGE);
    pub const OUT_OF_RANGE: Error = Error(err::OUT_OF_RANGE);
    pub const TIMEOUT: Error = Error(err::TIMEOUT);
    pub const IN_USE: Error = Error(err::IN_USE);
    pub const BAD_SEAL: Error = Error(err::BAD_SEAL);
    pub const NO_REPLY: Error = Error(err::NO_REPLY);

    pub fn name(self) -> &'static str {
        error_name(self.0)
    }

    /// `Ok(())` for `err::OK`, else the error.
    pub fn check(code: u64) -> Result<()> {
        if code == err::OK {
            Ok(())
        } else {
            Err(Error(code))
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub type Result<T> = core::result::Result<T, Error>;

/// The whole system call: invokes the capability at address `cap` with
/// `tag` and four data words; `timeout_ms` bounds a receive phase (0: none).
/// Returns (error, received tag, protected payload, data words); the tag
/// and payload mean something only after a receive phase.
///
/// The kernel checks every capability, right and argument, so a malformed
/// invocation only returns an error.  Two kinds of method can still hurt the
/// caller: those that write through a pointer argument (CONSOLE.READ,
/// KERNEL.CMDLINE, and anything that fills the IPC buffer) and those that
/// change the caller's own mappings (MAP and UNMAP on `slot::SELF_ASPACE`).
#[inline(always)]
pub fn syscall(cap: u64, tag: u64, words: [u64; 4], timeout_ms: u64) -> (u64, u64, u64, [u64; 4]) {
    let (mut rdi, mut rsi, mut rax) = (cap, tag, timeout_ms);
    let (mut a0, mut a1, mut a2, mut a3) = (words[0], words[1], words[2], words[3]);
    // SAFETY: the kernel preserves every register except rax, rcx, r11, the
    // four data registers and (after a receive) rdi and rsi, all declared
    // here; no `nomem` because methods and messages read and write user
    // memory (buffers, the IPC buffer).
    unsafe {
        core::arch::asm!(
            "syscall",
            inout("rdi") rdi,
            inout("rsi") rsi,
            inout("rax") rax,
            inout("rdx") a0,
            inout("r8") a1,
            inout("r9") a2,
            inout("r10") a3,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    (rax, rsi, rdi, [a0, a1, a2, a3])
}

/// Invokes a kernel object: `method` becomes the label of a CALL-mode tag
/// with no capabilities, slots or string.  Returns the error code and the
/// four result words as the kernel left them.
#[inline(always)]
pub fn invoke_raw(cap: u64, method: u64, args: [u64; 4]) -> (u64, [u64; 4]) {
    let (e, _, _, w) = syscall(cap, method & tag::LABEL_MASK, args, 0);
    (e, w)
}

/// Like [`invoke_raw`], with the error code turned into a `Result`.
#[inline(always)]
pub fn invoke(cap: u64, method: u64, args: [u64; 4]) -> Result<[u64; 4]> {
    match invoke_raw(cap, method, args) {
        (err::OK, r) => Ok(r),
        (e, _) => Err(Error(e)),
    }
}

/// A message tag (rsi): label, capability and receive-slot counts, the
/// string bit, the mode and the non-blocking bits.  Built with the `with_*`
/// methods; after a receive, the received tag read with the getters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Tag(pub u64);

impl Tag {
    const CAPS_MASK: u64 = tag::COUNT_MASK << tag::CAPS_SHIFT;
    const SLOTS_MASK: u64 = tag::COUNT_MASK << tag::SLOTS_SHIFT;
    const MODE_MASK: u64 = 3 << tag::MODE_SHIFT;

    /// A CALL-mode tag with `label` and nothing else.
    pub const fn new(label: u64) -> Tag {
        Tag(label & tag::LABEL_MASK)
    }

    /// Send the first `n` entries of the IPC buffer's send_caps.
    pub const fn with_caps(self, n: u64) -> Tag {
        Tag((self.0 & !Self::CAPS_MASK) | ((n & tag::COUNT_MASK) << tag::CAPS_SHIFT))
    }

    /// Receive into the first `n` entries of the IPC buffer's recv_slots.
    pub const fn with_slots(self, n: u64) -> Tag {
        Tag((self.0 & !Self::SLOTS_MASK) | ((n & tag::COUNT_MASK) << tag::SLOTS_SHIFT))
    }

    /// Send the IPC buffer's string (send_len bytes).
    pub const fn with_string(self) -> Tag {
        Tag(self.0 | tag::STRING)
    }

    /// One of `tag::MODE_*`.
    pub const fn with_mode(self, mode: u64) -> Tag {
        Tag((self.0 & !Self::MODE_MASK) | ((mode & 3) << tag::MODE_SHIFT))
    }

    pub const fn send_nonblocking(self) -> Tag {
        Tag(self.0 | tag::SEND_NONBLOCK)
    }

    pub const fn recv_nonblocking(self) -> Tag {
        Tag(self.0 | tag::RECV_NONBLOCK)
    }

    pub const fn label(self) -> u64 {
        self.0 & tag::LABEL_MASK
    }

    /// Capabilities sent (or, in a received tag, received).
    pub const fn caps(self) -> u64 {
        (self.0 >> tag::CAPS_SHIFT) & tag::COUNT_MASK
    }

    pub const fn slots(self) -> u64 {
        (self.0 >> tag::SLOTS_SHIFT) & tag::COUNT_MASK
    }

    pub const fn has_string(self) -> bool {
        self.0 & tag::STRING != 0
    }

    pub const fn mode(self) -> u64 {
        (self.0 >> tag::MODE_SHIFT) & 3
    }

    /// The received message is a call: receive slot 0 holds its return
    /// capability.
    pub const fn is_called(self) -> bool {
        self.0 & tag::CALLED != 0
    }
}

/// What an IPC invocation returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    /// The error code (`err::OK` on success).
    pub err: u64,
    /// The received tag (after a receive phase).
    pub tag: Tag,
    /// The protected payload of the SENDER the message came through (after
    /// a receive phase; 0 for replies and kernel-made messages' own data).
    pub payload: u64,
    pub words: [u64; 4],
}

impl Msg {
    pub fn result(&self) -> Result<()> {
        Error::check(self.err)
    }
}

/// One IPC invocation: `tag` as given (its mode included) on `cap`.
#[inline(always)]
pub fn ipc(cap: u64, tag: Tag, words: [u64; 4], timeout_ms: u64) -> Msg {
    let (err, t, payload, words) = syscall(cap, tag.0, words, timeout_ms);
    Msg {
        err,
        tag: Tag(t),
        payload,
        words,
    }
}

/// An open receive (RECV mode): waits for the next message to the caller's
/// process, at most `timeout_ms` (0: for ever; `tag` may ask non-blocking).
#[inline(always)]
pub fn recv(tag: Tag, timeout_ms: u64) -> Msg {
    ipc(0, tag.with_mode(tag::MODE_RECV), [0; 4], timeout_ms)
}

/// The 8 KiB IPC buffer a process names with PROCESS.SET_IPC_BUFFER.  The
/// kernel writes `recv_len`, the string and (READ_REGS) the register block
/// behind the compiler's back, so those are read with volatile loads.
#[repr(C, align(4096))]
pub struct IpcBuffer {
    /// Capability address in bits 0-31, rights mask in bits 32-36.
    pub send_caps: [u64; 4],
    /// Where received capabilities go, in order; a call's return
    /// capability takes the first.
    pub recv_slots: [u64; RECV_SLOTS],
    pub send_len: u64,
    pub recv_len: u64,
    reserved: [u8; 4096 - 88],
    pub string: [u8; 4096],
}

const _: () = {
    assert!(core::mem::size_of::<IpcBuffer>() == ipc::SIZE as usize);
    assert!(core::mem::offset_of!(IpcBuffer, send_caps) == ipc::SEND_CAPS as usize);
    assert!(core::mem::offset_of!(IpcBuffer, recv_slots) == ipc::RECV_SLOTS as usize);
    assert!(core::mem::offset_of!(IpcBuffer, send_len) == ipc::SEND_LEN as usize);
    assert!(core::mem::offset_of!(IpcBuffer, recv_len) == ipc::RECV_LEN as usize);
    assert!(core::mem::offset_of!(IpcBuffer, string) == ipc::STRING as usize);
};

/// Entries of the IPC buffer's recv_slots.
pub const RECV_SLOTS: usize = layout::MAX_RECV_SLOTS as usize;

/// The register block of READ_REGS and WRITE_REGS, indexed by `reg::*`.
pub type Regs = [u64; reg::COUNT as usize];

impl IpcBuffer {
    pub const fn new() -> IpcBuffer {
        IpcBuffer {
            send_caps: [0; 4],
            recv_slots: [0; RECV_SLOTS],
            send_len: 0,
            recv_len: 0,
            reserved: [0; 4096 - 88],
            string: [0; 4096],
        }
    }

    /// A send_caps entry: the capability at `addr`, reduced by `rights_mask`
    /// (0 keeps its rights).
    pub const fn cap_entry(addr: u64, rights_mask: u64) -> u64 {
        (addr & 0xffff_ffff) | ((rights_mask & 0x1f) << 32)
    }

    /// Lists capabilities to send as (address, rights mask); returns the
    /// count for the tag.
    pub fn set_send_caps(&mut self, caps: &[(u64, u64)]) -> u64 {
        for (i, &(a, m)) in caps.iter().take(4).enumerate() {
            self.send_caps[i] = Self::cap_entry(a, m);
        }
        caps.len().min(4) as u64
    }

    /// Lists receive slots; returns the count for the tag.
    pub fn set_recv_slots(&mut self, slots: &[u64]) -> u64 {
        for (i, &s) in slots.iter().take(RECV_SLOTS).enumerate() {
            self.recv_slots[i] = s;
        }
        slots.len().min(RECV_SLOTS) as u64
    }

    /// Copies `bytes` (at most MAX_STRING) into the string area and sets
    /// send_len.
    pub fn set_string(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.string.len());
        self.string[..n].copy_from_slice(&bytes[..n]);
        self.send_len = n as u64;
    }

    /// recv_len as the kernel left it.
    pub fn received_len(&self) -> usize {
        // SAFETY: a plain field of self.
        unsafe { core::ptr::read_volatile(&self.recv_len) as usize }
    }

    /// Byte `i` of the string area, as the kernel left it.
    pub fn string_byte(&self, i: usize) -> u8 {
        // SAFETY: bounds-checked index into self.string.
        unsafe { core::ptr::read_volatile(&self.string[i]) }
    }

    /// Copies the received string (recv_len bytes, at most `out.len()`)
    /// into `out`; returns its length.
    pub fn read_string(&self, out: &mut [u8]) -> usize {
        let n = self.received_len().min(out.len()).min(self.string.len());
        out[..n].copy_from_slice(self.received(n));
        n
    }

    /// The first `n` bytes of the string area (at most its 4096), as the
    /// kernel left them: a received string read in place.  The kernel
    /// writes the area only inside a system call, which the compiler sees
    /// as writing memory, so plain reads after it see the kernel's bytes.
    pub fn received(&self, n: usize) -> &[u8] {
        &self.string[..n.min(self.string.len())]
    }

    /// The register block READ_REGS left in the string area.
    pub fn regs(&self) -> Regs {
        let mut r = [0u64; reg::COUNT as usize];
        let base = self.string.as_ptr() as *const u64;
        for (i, w) in r.iter_mut().enumerate() {
            // SAFETY: the string area is 4096 bytes, 8-aligned, and the block
            // is 144 bytes.
            *w = unsafe { core::ptr::read_volatile(base.add(i)) };
        }
        r
    }

    /// The first `out.len()` bytes of the vector state READ_VECTOR_STATE
    /// left in the string area.
    pub fn vector_state(&self, out: &mut [u8]) {
        let n = out.len().min(self.string.len());
        for (i, b) in out[..n].iter_mut().enumerate() {
            // SAFETY: i is inside the string area.
            *b = unsafe { core::ptr::read_volatile(self.string.as_ptr().add(i)) };
        }
    }

    /// Puts a vector state into the string area for WRITE_VECTOR_STATE.
    pub fn set_vector_state(&mut self, state: &[u8]) {
        let n = state.len().min(self.string.len());
        for (i, &b) in state[..n].iter().enumerate() {
            // SAFETY: as in `vector_state`.
            unsafe { core::ptr::write_volatile(self.string.as_mut_ptr().add(i), b) };
        }
    }

    /// Puts a register block into the string area for WRITE_REGS.
    pub fn set_regs(&mut self, regs: &Regs) {
        let base = self.string.as_mut_ptr() as *mut u64;
        for (i, &w) in regs.iter().enumerate() {
            // SAFETY: as in `regs`.
            unsafe { core::ptr::write_volatile(base.add(i), w) };
        }
    }
}

impl Default for IpcBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl Console {
    /// The most bytes one WRITE takes.
    pub const MAX_WRITE: usize = 4096;

    /// Writes at most 4096 bytes; returns how many were written.
    pub fn write(self, buf: &[u8]) -> Result<usize> {
        self.write_raw(buf.as_ptr() as u64, buf.len() as u64).map(|n| n as usize)
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
        self.read_raw(buf.as_mut_ptr() as u64, buf.len() as u64, nonblocking as u64)
            .map(|n| n as usize)
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

/// Returns only on error: a method that does not return on success.
fn no_return(r: Result<()>) -> Error {
    match r {
        Ok(()) => Error::BAD_STATE,
        Err(e) => e,
    }
}

impl Kernel {
    pub fn memmap(self, index: u64) -> Result<MemEntry> {
        let (base, len, ty, count) = self.memmap_raw(index)?;
        Ok(MemEntry { base, len, ty, count })
    }

    pub fn process_info(self, index: u64) -> Result<ProcInfo> {
        let (w, lo, hi, next) = self.process_info_raw(index)?;
        let mut name = [0u8; 16];
        name[..8].copy_from_slice(&lo.to_le_bytes());
        name[8..].copy_from_slice(&hi.to_le_bytes());
        Ok(ProcInfo {
            pid: w as u32,
            state: (w >> 32) & 0xff,
            priority: (w >> 40) & 0xff,
            name,
            next,
        })
    }

    /// Powers the machine off; returns only on error.
    pub fn poweroff(self) -> Error {
        no_return(self.poweroff_raw())
    }

    /// Leaves QEMU with `code`; returns only on error.
    pub fn debug_exit(self, code: u64) -> Error {
        no_return(self.debug_exit_raw(code))
    }

    /// Copies the command line into `buf`; returns its full length.
    pub fn cmdline(self, buf: &mut [u8]) -> Result<usize> {
        self.cmdline_raw(buf.as_mut_ptr() as u64, buf.len() as u64).map(|n| n as usize)
    }

    /// Replaces the keys that seal exported processes by keys derived from
    /// `key`: what is sealed under a key opens under the same key at a
    /// later boot.  `BAD_STATE` while any process is exported.
    pub fn set_seal_key(self, key: &[u8; 32]) -> Result<()> {
        self.set_seal_key_raw(key.as_ptr() as u64)
    }
}

impl IoPort {
    /// Reads `width` (1, 2 or 4) bytes from `port` (IN).
    pub fn read(self, port: u64, width: u64) -> Result<u64> {
        self.in_(port, width)
    }

    /// Writes the low `width` (1, 2 or 4) bytes of `value` to `port` (OUT).
    pub fn write(self, port: u64, width: u64, value: u64) -> Result<()> {
        self.out(port, width, value)
    }
}

impl Account {
    /// Returns (free frames, frames in use by objects made from it).
    pub fn info(self) -> Result<(u64, u64)> {
        self.info_raw().map(|(free, used, _, _)| (free, used))
    }

    /// Returns (free, used, taken back so far, processes exported now).
    pub fn info_all(self) -> Result<[u64; 4]> {
        self.info_raw().map(|(a, b, c, d)| [a, b, c, d])
    }
}

impl Notification {
    /// (bits, a process waits, a process is bound).
    pub fn info(self) -> Result<(u64, bool, bool)> {
        self.info_raw().map(|(bits, waiting, bound)| (bits, waiting != 0, bound != 0))
    }
}

/// What DMA_DOMAIN.INFO reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaInfo {
    pub address_bits: u64,
    pub pages: u64,
    pub devices: u64,
    /// The IOMMU translates DMA (false: the domain confines nothing).
    pub remapping: bool,
}

impl DmaDomain {
    pub fn info(self) -> Result<DmaInfo> {
        let (address_bits, pages, devices, remapping) = self.info_raw()?;
        Ok(DmaInfo { address_bits, pages, devices, remapping: remapping != 0 })
    }

    /// Returns (faults, waiting for the handler, lost).
    pub fn faults(self) -> Result<(u64, u64, u64)> {
        self.faults_raw().map(|(f, w, l, _)| (f, w, l))
    }

    /// The holds the domain has (HOLD).
    pub fn holds(self) -> Result<u64> {
        self.faults_raw().map(|r| r.3)
    }
}

/// What ASPACE.IDENTIFY_CAP reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapInfo {
    pub ty: u64,
    pub rights: u64,
    /// The object still exists (false: stale).
    pub live: bool,
}

impl Aspace {
    /// Maps the PAGE at `page` at `vaddr` with `rights`.
    pub fn map(self, page: u64, vaddr: u64, rights: u64) -> Result<()> {
        self.map_raw(page, vaddr, rights, 0)
    }

    /// Maps page `offset` of the DEVMEM capability `devmem` at `vaddr`, uncached.
    pub fn map_device(self, devmem: u64, offset: u64, vaddr: u64, rights: u64) -> Result<()> {
        self.map_raw(devmem, vaddr, rights, offset)
    }

    pub fn identify_cap(self, slot: u64) -> Result<CapInfo> {
        let (ty, rights, live) = self.identify_cap_raw(slot)?;
        Ok(CapInfo { ty, rights, live: live != 0 })
    }

    /// Returns (same object, identical words).
    pub fn compare_cap(self, a: u64, b: u64) -> Result<(bool, bool)> {
        self.compare_cap_raw(a, b).map(|(same, identical)| (same != 0, identical != 0))
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
    fn from_words((state, code, rip, addr): (u64, u64, u64, u64)) -> Status {
        Status { state, code, rip, addr }
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

impl Process {
    pub fn status(self) -> Result<Status> {
        self.status_raw().map(Status::from_words)
    }

    /// Blocks until the process has exited or faulted.
    pub fn wait(self) -> Result<Status> {
        self.wait_raw().map(Status::from_words)
    }

    pub fn yield_now(self) -> Result<()> {
        self.yield_()
    }

    /// Sets the name `ps` shows (at most 16 bytes are kept).
    pub fn set_name(self, name: &str) -> Result<()> {
        let (lo, hi) = pack_name(name);
        self.set_name_raw(lo, hi)
    }

    pub fn set_emulation(self, on: bool) -> Result<()> {
        self.set_emulation_raw(on as u64)
    }
}

impl Timer {
    pub fn now_ms(self) -> Result<u64> {
        Ok(self.now()?.0)
    }
}

/// A SENDER capability: an IPC endpoint of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sender(pub u64);

impl Sender {
    /// Sends and waits for the reply (CALL mode).
    pub fn call(self, tag: Tag, words: [u64; 4]) -> Msg {
        ipc(self.0, tag.with_mode(tag::MODE_CALL), words, 0)
    }

    /// Sends only (SEND mode).
    pub fn send(self, tag: Tag, words: [u64; 4]) -> Result<()> {
        ipc(self.0, tag.with_mode(tag::MODE_SEND), words, 0).result()
    }

    /// Sends, then receives the next message to the caller (SEND_RECV).
    pub fn send_recv(self, tag: Tag, words: [u64; 4], timeout_ms: u64) -> Msg {
        ipc(self.0, tag.with_mode(tag::MODE_SEND_RECV), words, timeout_ms)
    }
}

/// A RETURN capability: answers one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Return(pub u64);

impl Return {
    /// Sends the reply (SEND mode).
    pub fn reply(self, tag: Tag, words: [u64; 4]) -> Result<()> {
        ipc(self.0, tag.with_mode(tag::MODE_SEND), words, 0).result()
    }

    /// Replies and waits for the next message at once (SEND_RECV).
    pub fn reply_recv(self, tag: Tag, words: [u64; 4], timeout_ms: u64) -> Msg {
        ipc(self.0, tag.with_mode(tag::MODE_SEND_RECV), words, timeout_ms)
    }
}

/// The capabilities every program finds at its well-known addresses.
pub const CONSOLE: Console = Console(slot::CONSOLE);
pub const KERNEL: Kernel = Kernel(slot::KERNEL);
pub const SELF_PROCESS: Process = Process(slot::SELF_PROCESS);
pub const SELF_ASPACE: Aspace = Aspace(slot::SELF_ASPACE);
pub const MEMORY: Memory = Memory(slot::MEMORY);
pub const ACCOUNT: Account = Account(slot::ACCOUNT);
pub const TIMER: Timer = Timer(slot::TIMER);
pub const DEVMEM: DevMem = DevMem(slot::DEVMEM);
pub const IOPORT: IoPort = IoPort(slot::IOPORT);
pub const INTERRUPT: Interrupt = Interrupt(slot::INTERRUPT);
/// The root task's: the persistent memory pool and the checkpoint object.
pub const PERSISTENT_MEMORY: Memory = Memory(slot::PERSISTENT_MEMORY);
pub const CHECKPOINT: Checkpoint = Checkpoint(slot::CHECKPOINT);

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
             NO_MEMORY STALE WOULD_BLOCK BAD_STATE FAULT EXISTS NOT_MAPPED NO_CAPPAGE
             OUT_OF_RANGE TIMEOUT IN_USE BAD_SEAL NO_REPLY);
        add!("type", ty: NULL CONSOLE KERNEL MEMORY PAGE ASPACE PROCESS CAPPAGE SENDER RETURN
             WRAPPER ACCOUNT TIMER DEVMEM IOPORT INTERRUPT DMA_DOMAIN NOTIFICATION CHECKPOINT);
        add!("right", rights: READ WRITE EXEC CALL ALL WEAK);
        add!("state", state: CREATED RUNNABLE BLOCKED STOPPED EXITED FAULTED);
        add!("info", info: VERSION MEM_TOTAL MEM_FREE CPU_FEATURES TSC_HZ TICKS KERNEL_BYTES
             TIMER_HZ FASTPATH_IPC HELD_FRAMES REVOKE_RESTARTS DESTROY_RESTARTS MOVE_RESTARTS
             DIGEST_RESTARTS FASTPATH_NTFN);
        add!("cpu", cpu: NX PCID APIC TSC_DEADLINE PAGE1G SMEP SMAP INVPCID GLOBAL XSAVE);
        add!("check", check: WX KERNEL_USER KERNEL_DATA_NX);
        add!("memtype", memtype: USABLE RESERVED KERNEL BOOT_IMAGE);
        add!("slot", slot: CONSOLE KERNEL SELF_PROCESS SELF_ASPACE MEMORY ACCOUNT TIMER
             DEVMEM IOPORT INTERRUPT PERSISTENT_MEMORY CHECKPOINT FIRST_FREE);
        add!("layout", layout: CAP_SPACE_SLOTS CAPPAGE_SLOTS CAP_SEGMENT PAGE_SIZE USER_TOP
             BOOT_IMAGE_VADDR ROOT_STACK_TOP ROOT_STACK_PAGES ROOT_ACCOUNT_FRAMES MAX_STRING
             MAX_CAPS MAX_RECV_SLOTS PROCESS_NUMBERS IRQ_LINES MSI_LINES WRAPPER_DEPTH WRAPPER_DEVICE_MAPS DMA_FAULT_QUEUE
             DMA_HOLD_TAGS DMA_HOLD_FRAMES DMA_HOLD_MAX KMEM_FRAMES KMEM_PROCESS
             PERSISTENT_POOL_MIB PERSISTENT_NUMBER_PAGES CHECKPOINT_RECORD_WORDS
             BUDGET_MIN_US BUDGET_MIN_PERIOD_US BUDGET_MAX_PERIOD_US BUDGET_OVERRUN_US REVOKE_TABLES DESTROY_TABLES MOVE_FRAMES
             DIGEST_FRAMES);
        add!("tag", tag: LABEL_MASK CAPS_SHIFT SLOTS_SHIFT COUNT_MASK STRING MODE_SHIFT
             MODE_CALL MODE_SEND MODE_RECV MODE_SEND_RECV SEND_NONBLOCK RECV_NONBLOCK CALLED);
        add!("label", label: EXCEPTION SYSCALL KMEM IRQ DMA_FAULT NOTIFY);
        add!("reply", reply: RESUME RESUME_SET_RAX STOP);
        add!("ipc", ipc: SEND_CAPS RECV_SLOTS SEND_LEN RECV_LEN STRING SIZE);
        add!("reg", reg: RAX RBX RCX RDX RSI RDI RBP RSP R8 R9 R10 R11 R12 R13 R14 R15 RIP
             RFLAGS COUNT);
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
                     CMDLINE CHECK_INVARIANTS INTERRUPT_STATS SET_SEAL_KEY COVERAGE);
        add_methods!("MEMORY", memory: RETYPE FREE DONATE CREATE_ACCOUNT RECLAIM REVOKE);
        add_methods!("ACCOUNT", account: INFO SET_KPAGER CREATE_ASPACE CREATE_PROCESS
                     CREATE_WRAPPER DESTROY RECLAIM DESTROY_ALL REVOKE_TABLE REVOKE_PROCESS
                     RESTORE_PROCESS REVOKE_CAP_TABLE CREATE_DMA_DOMAIN CREATE_NOTIFICATION);
        add_methods!("ASPACE", aspace: MAP UNMAP LOOKUP MAP_CAPPAGE UNMAP_CAPPAGE INSERT_CAP
                     EXTRACT_CAP DELETE_CAP COPY_CAP MOVE_CAP IDENTIFY_CAP COMPARE_CAP);
        add_methods!("PROCESS", process: SET_REGS START STOP STATUS WAIT EXIT YIELD SET_NAME
                     SET_PRIORITY READ_REGS WRITE_REGS SET_IPC_BUFFER SET_FAULT_HANDLER
                     SET_EMULATION MINT READ_VECTOR_STATE WRITE_VECTOR_STATE SET_BUDGET BUDGET SET_PASSIVE CPU_TIME);
        add_methods!("TIMER", timer: NOW SLEEP SLEEP_UNTIL);
        add_methods!("DEVMEM", devmem: INFO RESTRICT);
        add_methods!("IOPORT", ioport: INFO RESTRICT IN OUT);
        add_methods!("INTERRUPT", interrupt: INFO RESTRICT BIND UNBIND ACK ROUTE_MSI UNROUTE_MSI BIND_NOTIFICATION);
        add_methods!("DMA_DOMAIN", dma_domain: INFO MAP UNMAP LOOKUP ATTACH DETACH
                     SET_FAULT_HANDLER FAULTS HOLD RELEASE);
        add_methods!("NOTIFICATION", notification: SIGNAL WAIT POLL BIND UNBIND INFO);
        add_methods!("CHECKPOINT", checkpoint: INFO SET_KEY OPEN BEGIN READ END RESTORE RESUME);
        m
    }

    /// keep.toml parsed.  TOML integers are signed 64-bit, and CAP_SEGMENT
    /// (0xfffffe0000000000) is beyond that: the toml crate refuses it, so
    /// hexadecimal values are quoted before parsing and read by [`value`].
    fn definition() -> toml::Table {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../abi/keep.toml");
        let text = std::fs::read_to_string(path).expect("read abi/keep.toml");
        let quoted: String = text
            .lines()
            .map(|l| match l.strip_prefix("value = 0x") {
                Some(hex) => format!("value = \"0x{}\"\n", hex.trim()),
                None => format!("{l}\n"),
            })
            .collect();
        quoted.parse().expect("parse abi/keep.toml")
    }

    /// An entry's value, quoted hexadecimal or a plain integer.
    fn value(e: &toml::Value) -> u64 {
        match &e["value"] {
            toml::Value::String(s) => u64::from_str_radix(&s[2..], 16).expect("hex value"),
            v => v.as_integer().expect("integer value") as u64,
        }
    }

    /// The generated bindings define exactly the names and values of the
    /// interface definition: nothing missing, nothing extra, nothing changed.
    #[test]
    fn generated_constants_match_definition() {
        let def = definition();
        let mut want = BTreeMap::new();
        for table in [
            "error", "type", "right", "state", "info", "cpu", "check", "memtype", "slot", "layout",
            "tag", "label", "reply", "ipc", "reg",
        ] {
            for e in def[table].as_array().unwrap() {
                let name = e["name"].as_str().unwrap();
                let value = value(e);
                want.insert(format!("{table}.{name}"), value);
            }
        }
        for e in def["method"].as_array().unwrap() {
            let key = format!(
                "method.{}.{}",
                e["object"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            );
            want.insert(key, value(e));
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
            let v = value(e);
            assert_eq!(error_name(v), e["name"].as_str().unwrap());
        }
        for e in def["state"].as_array().unwrap() {
            let v = value(e);
            assert_eq!(state_name(v), e["name"].as_str().unwrap());
        }
    }

    #[test]
    fn tags_pack_their_fields() {
        let t = Tag::new(0x1234)
            .with_caps(3)
            .with_slots(4)
            .with_string()
            .with_mode(tag::MODE_SEND_RECV)
            .send_nonblocking()
            .recv_nonblocking();
        assert_eq!(t.label(), 0x1234);
        assert_eq!(t.caps(), 3);
        assert_eq!(t.slots(), 4);
        assert!(t.has_string());
        assert_eq!(t.mode(), tag::MODE_SEND_RECV);
        assert_eq!(
            t.0,
            0x1234 | 3 << 16 | 4 << 19 | 1 << 22 | 3 << 24 | 1 << 26 | 1 << 27
        );
        assert_eq!(t.with_caps(1).caps(), 1);
        assert_eq!(t.with_mode(tag::MODE_CALL).mode(), tag::MODE_CALL);
        assert!(!t.is_called());
        assert!(Tag(tag::CALLED).is_called());
        assert_eq!(Tag::new(0x1_0005).0, 5);
    }

    #[test]
    fn ipc_buffer_entries() {
        let mut b = Box::new(IpcBuffer::new());
        assert_eq!(b.set_send_caps(&[(0x1234_5678, rights::READ | rights::WEAK)]), 1);
        assert_eq!(b.send_caps[0], 0x1234_5678 | 0x11 << 32);
        assert_eq!(IpcBuffer::cap_entry(u64::MAX, 0), 0xffff_ffff);
        b.set_string(b"abc");
        assert_eq!(b.send_len, 3);
        b.recv_len = 2;
        let mut out = [0u8; 8];
        assert_eq!(b.read_string(&mut out), 2);
        assert_eq!(&out[..2], b"ab");
        let mut regs = [0u64; reg::COUNT as usize];
        regs[reg::RIP as usize] = 0x401000;
        b.set_regs(&regs);
        assert_eq!(b.regs(), regs);
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

//! The constructor server (protocol and confinement rule in `lib.rs`,
//! docs/space-banks.md).  It answers through the generated `dispatch`
//! (protocol.rs, from abi/services/constructor.toml), one method of
//! [`Handler`] per request; what it accepts of a request's arguments is
//! keep_constructor::rules.  It keeps each constructor's image on its heap and
//! its initial capabilities in its own capability space.  Slot
//! INSTANCE_BANK holds a capability to the space bank it trusts: a bank
//! capability a requester passes is accepted only if it designates the
//! same server.
//!
//! It is also the pager of its instances: an instance's zero pages (its
//! .bss beyond the file's bytes and its stack below the top page) are not
//! made when it is loaded but on first touch, from the instance's own bank,
//! when the kernel sends the page fault here (the fault handler of every
//! instance is a sender to this server whose payload names the instance).
//! A fault that is not such a first touch stops the instance as FAULTED
//! (the server drops the fault's return capability) and is reported.
//!
//! Costs: IS_CONFINED is one IDENTIFY_CAP per initial capability (plus a
//! MINT and a COMPARE_CAP per constructor for a capability to this server,
//! and a COMPARE_CAP per hole for an unsafe one); INSTANTIATE is three bank
//! requests, the program's load (a bank request and a few invocations per
//! page with bytes of the file, and the top stack page) and one INSERT_CAP
//! per initial capability; a first touch is one bank request and one MAP.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use keep_abi::proto::Answer;
use keep_abi::{Account, Aspace, Msg, Process, Return, SELF_ASPACE, SELF_PROCESS, Tag, rights as krights, ty};
use keep_constructor::*;
use keep_loader::{Grant, LazyRange, Loader, Program, SlotPool, Spec};
use keep_rt::println;
use keep_spacebank::{Bank, BankError, BankFrames, MAX_FUND};

keep_rt::entry!(main);

/// The images live on the heap, and keep-rt's 1 MiB does not hold the
/// workhorse's (about 600 KiB) beside the others: the server has a 4 MiB
/// heap of its own, zero pages made when the root task loads it.
const HEAP_SIZE: usize = 4 << 20;
static mut HEAP_SPACE: [u8; HEAP_SIZE] = [0; HEAP_SIZE];
static HEAP: linked_list_allocator::LockedHeap = linked_list_allocator::LockedHeap::empty();

const FIRST: u64 = keep_abi::slot::FIRST_FREE;
/// Each call's return capability, then up to four capabilities it carries.
const RET: u64 = FIRST;
const IN: [u64; 4] = [FIRST + 1, FIRST + 2, FIRST + 3, FIRST + 4];
/// Senders minted for a reply or a comparison.
const MINTED: u64 = FIRST + 5;
/// An instance's sub-bank, account and restricted bank while it is made.
const SUB: u64 = FIRST + 6;
const ACCT: u64 = FIRST + 7;
const RBANK: u64 = FIRST + 8;
/// A page made for an instance's first touch, until it is mapped.
const FRESH: u64 = FIRST + 9;
/// Not a reply: the fault's return capability is dropped, which stops the
/// faulting process as FAULTED (as if it had no fault handler).
const NO_ANSWER: u64 = u64::MAX;

struct Ctor {
    name: (u64, u64),
    image: Vec<u8>,
    /// The blob: (its container address space, a slot here; its length).
    blob: Option<(u64, u64)>,
    /// (slot here, slot in the instance)
    caps: Vec<(u64, u64)>,
    sealed: bool,
}

/// An instance the server pages (a record is free when `aspace` is 0).
struct Paged {
    generation: u64,
    /// Slots here: the instance's address space and its bank (ALLOC, FREE
    /// and INFO); both go stale when the requester destroys the bank.
    aspace: u64,
    bank: u64,
    lazy: Vec<LazyRange>,
    name: (u64, u64),
}

struct Server {
    ctors: Vec<Ctor>,
    paged: Vec<Paged>,
    slots: SlotPool,
    /// Slots to empty once the reply carrying them has gone.
    after_reply: Vec<u64>,
}

type Reply = Result<([u64; 3], Vec<u64>), (u64, u64)>;

fn bad() -> (u64, u64) {
    (status::BAD_REQUEST, 0)
}

impl Server {
    fn ctor(&mut self, payload: u64, want: u64) -> Result<usize, (u64, u64)> {
        let i = (payload >> 8) as usize;
        if payload & 0xff != want || i >= self.ctors.len() {
            return Err((status::NO_RIGHTS, 0));
        }
        Ok(i)
    }

    fn mint(&mut self, payload: u64, rights: u64) -> Result<u64, (u64, u64)> {
        let _ = SELF_ASPACE.delete_cap(MINTED);
        SELF_PROCESS.mint(MINTED, payload, rights).map_err(|_| (status::FULL, 0))?;
        Ok(MINTED)
    }

    fn new_ctor(&mut self, w: [u64; 4]) -> Reply {
        let len = w[2];
        rules::new_length(len).map_err(|s| (s, 0))?;
        if self.ctors.len() >= MAX_CONSTRUCTORS {
            return Err((status::FULL, 0));
        }
        let mut image = Vec::new();
        image.try_reserve_exact(len as usize).map_err(|_| (status::FULL, 0))?;
        image.resize(len as usize, 0);
        let index = self.ctors.len() as u64;
        let call = krights::WRITE | krights::CALL;
        let slot = self.mint(payload(kind::BUILDER, index), call)?;
        self.ctors.push(Ctor { name: (w[0], w[1]), image, blob: None, caps: Vec::new(), sealed: false });
        Ok(([index, 0, 0], alloc::vec![slot]))
    }

    fn image(&mut self, i: usize, offset: u64, buf: &keep_abi::IpcBuffer, has_string: bool) -> Reply {
        let c = &mut self.ctors[i];
        if c.sealed {
            return Err((status::BAD_STATE, 0));
        }
        let n = if has_string { buf.received_len() } else { 0 };
        rules::image_piece(offset, n as u64, c.image.len() as u64).map_err(|s| (s, 0))?;
        buf.read_string(&mut c.image[offset as usize..offset as usize + n]);
        Ok(([0; 3], Vec::new()))
    }

    fn add_cap(&mut self, i: usize, dest: u64, caps_in: u64) -> Reply {
        if self.ctors[i].sealed {
            return Err((status::BAD_STATE, 0));
        }
        let c = &self.ctors[i];
        rules::add_cap(caps_in, dest, c.caps.iter().any(|&(_, d)| d == dest), c.caps.len()).map_err(|s| (s, 0))?;
        let keep = self.slots.alloc().ok_or((status::FULL, 0))?;
        if SELF_ASPACE.move_cap(IN[0], keep).is_err() {
            self.slots.free(keep);
            return Err(bad());
        }
        self.ctors[i].caps.push((keep, dest));
        Ok(([0; 3], Vec::new()))
    }

    /// BLOB: every slot the length covers must hold a page (checked now,
    /// so that INSTANTIATE does not fail half-way for want of one).
    fn blob(&mut self, i: usize, len: u64, caps_in: u64) -> Reply {
        if self.ctors[i].sealed {
            return Err((status::BAD_STATE, 0));
        }
        rules::blob(caps_in, len, self.ctors[i].blob.is_some()).map_err(|s| (s, 0))?;
        if !SELF_ASPACE.identify_cap(IN[0]).is_ok_and(|c| c.ty == ty::ASPACE && c.live) {
            return Err(bad());
        }
        let space = Aspace(IN[0]);
        for p in 0..len.div_ceil(4096) {
            let _ = SELF_ASPACE.delete_cap(FRESH);
            let page = space.extract_cap(p, FRESH, krights::READ).is_ok()
                && SELF_ASPACE.identify_cap(FRESH).is_ok_and(|c| c.ty == ty::PAGE && c.live);
            let _ = SELF_ASPACE.delete_cap(FRESH);
            if !page {
                return Err(bad());
            }
        }
        let keep = self.slots.alloc().ok_or((status::FULL, 0))?;
        if SELF_ASPACE.move_cap(IN[0], keep).is_err() {
            self.slots.free(keep);
            return Err(bad());
        }
        self.ctors[i].blob = Some((keep, len));
        Ok(([0; 3], Vec::new()))
    }

    /// Maps constructor `i`'s blob read-only at BLOB_VADDR in `child`.
    fn map_blob(&self, i: usize, child: Aspace) -> Result<(), (u64, u64)> {
        let Some((space, len)) = self.ctors[i].blob else { return Ok(()) };
        for p in 0..len.div_ceil(4096) {
            let _ = SELF_ASPACE.delete_cap(FRESH);
            let r = Aspace(space)
                .extract_cap(p, FRESH, krights::READ)
                .and_then(|_| child.map(FRESH, BLOB_VADDR + p * 4096, krights::READ));
            let _ = SELF_ASPACE.delete_cap(FRESH);
            r.map_err(|_| (status::LOAD, 0))?;
        }
        Ok(())
    }

    fn seal(&mut self, i: usize) -> Reply {
        if self.ctors[i].sealed {
            return Err((status::BAD_STATE, 0));
        }
        if Program::parse(&self.ctors[i].image).is_err() {
            return Err((status::BAD_IMAGE, 0));
        }
        self.ctors[i].sealed = true;
        let slot = self.mint(payload(kind::REQUESTER, i as u64), krights::WRITE | krights::CALL)?;
        Ok(([0; 3], alloc::vec![slot]))
    }

    /// Whether the capability at `slot` is safe for an instance to hold
    /// (lib.rs: the confinement rule), given the holes at `holes`.
    fn safe(&mut self, slot: u64, holes: &[u64], depth: u32) -> bool {
        let Ok(info) = SELF_ASPACE.identify_cap(slot) else { return false };
        if info.ty == ty::NULL || !info.live {
            return true;
        }
        if rules::safe_by_type(info.ty, info.rights) {
            return true;
        }
        if info.ty == ty::SENDER && depth < 8 && self.confined_ctor(slot, info.rights, holes, depth) {
            return true;
        }
        holes.iter().any(|&h| {
            let same = SELF_ASPACE.compare_cap(slot, h).is_ok_and(|(same, _)| same);
            let hole_rights = SELF_ASPACE.identify_cap(h).map_or(0, |i| i.rights);
            same && info.rights & !hole_rights & krights::ALL == 0
        })
    }

    /// Whether `slot` is a requester's capability to a sealed constructor of
    /// this server whose instances are confined.
    fn confined_ctor(&mut self, slot: u64, rights: u64, holes: &[u64], depth: u32) -> bool {
        if !SELF_ASPACE.compare_cap(slot, keep_abi::slot::SELF_PROCESS).is_ok_and(|(same, _)| same) {
            return false;
        }
        for k in 0..self.ctors.len() {
            if !self.ctors[k].sealed || self.mint(payload(kind::REQUESTER, k as u64), rights & krights::ALL).is_err() {
                continue;
            }
            let identical = SELF_ASPACE.compare_cap(slot, MINTED).is_ok_and(|(_, id)| id);
            let _ = SELF_ASPACE.delete_cap(MINTED);
            if identical {
                return self.first_unsafe(k, holes, depth + 1).is_none();
            }
        }
        false
    }

    /// The instance slot of constructor `i`'s first unsafe capability.
    fn first_unsafe(&mut self, i: usize, holes: &[u64], depth: u32) -> Option<u64> {
        let caps = self.ctors[i].caps.clone();
        caps.into_iter().find(|&(s, _)| !self.safe(s, holes, depth)).map(|(_, d)| d)
    }

    fn is_confined(&mut self, i: usize, caps_in: u64) -> Reply {
        let holes = &IN[..caps_in.min(4) as usize];
        Ok(match self.first_unsafe(i, holes, 0) {
            None => ([1, 0, 0], Vec::new()),
            Some(slot) => ([0, slot, 0], Vec::new()),
        })
    }

    fn instantiate(&mut self, i: usize, w: [u64; 4], caps_in: u64) -> Reply {
        let (limit, frames, arg0) = (w[0], w[1], w[2]);
        rules::instantiate(caps_in, limit, frames, MAX_FUND).map_err(|s| (s, 0))?;
        let is_bank = SELF_ASPACE.compare_cap(IN[0], INSTANCE_BANK).is_ok_and(|(same, _)| same);
        let sender = SELF_ASPACE.identify_cap(IN[0]).is_ok_and(|c| c.ty == ty::SENDER);
        if !is_bank || !sender {
            return Err((status::NOT_A_BANK, 0));
        }
        let bank_status = |e: BankError| match e {
            BankError::Status(s) => (status::BANK, s),
            BankError::Call(_) => (status::NOT_A_BANK, 0),
        };
        let sub = Bank(IN[0]).create_bank(limit, SUB).map_err(bank_status)?;
        match self.populate(i, sub, frames, arg0) {
            Ok(process) => {
                self.after_reply.extend([process.0, SUB]);
                Ok(([0; 3], alloc::vec![process.0, SUB]))
            }
            Err(e) => {
                let _ = sub.destroy();
                for s in [SUB, ACCT, RBANK] {
                    let _ = SELF_ASPACE.delete_cap(s);
                }
                Err(e)
            }
        }
    }

    /// Loads constructor `i`'s program on `sub` and starts it.
    fn populate(&mut self, i: usize, sub: Bank, frames: u64, arg0: u64) -> Result<Process, (u64, u64)> {
        let bank_status = |e: BankError| match e {
            BankError::Status(s) => (status::BANK, s),
            BankError::Call(_) => (status::BANK, 0),
        };
        sub.alloc_account(frames, ACCT).map_err(bank_status)?;
        let kept = keep_spacebank::rights::ALLOC | keep_spacebank::rights::FREE | keep_spacebank::rights::INFO;
        sub.restrict(kept, RBANK).map_err(bank_status)?;
        let c = &self.ctors[i];
        let mut grants: Vec<Grant> = c.caps.iter().map(|&(src, dest)| Grant { src, dest, rights: 0 }).collect();
        grants.push(Grant { src: RBANK, dest: INSTANCE_BANK, rights: 0 });
        grants.push(Grant { src: ACCT, dest: INSTANCE_ACCOUNT, rights: 0 });
        let name_bytes = [c.name.0.to_le_bytes(), c.name.1.to_le_bytes()].concat();
        let len = name_bytes.iter().position(|&b| b == 0).unwrap_or(16);
        let name = core::str::from_utf8(&name_bytes[..len]).unwrap_or("instance");
        let arg1 = c.blob.map_or(0, |(_, len)| len);
        let spec = Spec { name, elf: &c.image, arg0, arg1, grants: &grants, blob: None };
        let name = c.name;
        let mut frames_src = BankFrames(sub);
        let mut loader = Loader::with_source(&mut self.slots, Account(ACCT), &mut frames_src);
        let (child, lazy) = loader.load_lazy(&spec).map_err(|_| (status::LOAD, 0))?;
        let _ = SELF_ASPACE.delete_cap(ACCT);
        if let Err(e) = self.map_blob(i, child.aspace) {
            // The bank's destruction (by the caller) takes the rest.
            for s in [child.process.0, child.aspace.0] {
                let _ = SELF_ASPACE.delete_cap(s);
                self.slots.free(s);
            }
            return Err(e);
        }
        // The requester gets the process; the address space and the bank
        // stay here (and with the instance) for its pager.
        let started = self.page(child.aspace.0, name, lazy).and_then(|p| {
            let _ = SELF_ASPACE.delete_cap(MINTED);
            let r = SELF_PROCESS
                .mint(MINTED, p, krights::WRITE | krights::CALL)
                .and_then(|_| child.process.set_fault_handler(MINTED))
                .and_then(|_| child.process.start());
            let _ = SELF_ASPACE.delete_cap(MINTED);
            r.ok()
        });
        let _ = SELF_ASPACE.delete_cap(RBANK);
        if started.is_none() {
            // The bank's destruction (by the caller) takes the rest.
            let _ = SELF_ASPACE.delete_cap(child.process.0);
            self.slots.free(child.process.0);
            return Err((status::LOAD, 0));
        }
        Ok(child.process)
    }

    /// Records instance `aspace` (a slot of the pool, kept) with its bank
    /// (moved from RBANK) for paging; returns its fault handler's payload.
    /// Records of instances that are gone are freed first.
    fn page(&mut self, aspace: u64, name: (u64, u64), lazy: Vec<LazyRange>) -> Option<u64> {
        for r in self.paged.iter_mut().filter(|r| r.aspace != 0) {
            if SELF_ASPACE.identify_cap(r.aspace).is_ok_and(|c| !c.live) {
                for s in [r.aspace, r.bank] {
                    let _ = SELF_ASPACE.delete_cap(s);
                    self.slots.free(s);
                }
                r.aspace = 0;
                r.lazy = Vec::new();
            }
        }
        let bank = self.slots.alloc();
        let moved = bank.is_some_and(|b| SELF_ASPACE.move_cap(RBANK, b).is_ok());
        let index = self.paged.iter().position(|r| r.aspace == 0).unwrap_or(self.paged.len());
        if !moved || index > 0xffff {
            if let Some(b) = bank {
                self.slots.free(b);
            }
            let _ = SELF_ASPACE.delete_cap(aspace);
            self.slots.free(aspace);
            return None;
        }
        if index == self.paged.len() {
            self.paged.push(Paged { generation: 0, aspace: 0, bank: 0, lazy: Vec::new(), name: (0, 0) });
        }
        let r = &mut self.paged[index];
        r.generation += 1;
        (r.aspace, r.bank, r.lazy, r.name) = (aspace, bank.expect("moved"), lazy, name);
        Some(pager_payload(index as u64, r.generation))
    }

    /// A fault of a paged instance: a first touch of one of its zero pages
    /// gets a fresh page from its bank and the instance resumes; anything
    /// else stops it (NO_ANSWER), with a report.
    fn fault(&mut self, payload: u64, label: u64, w: [u64; 4]) -> Reply {
        let i = ((payload >> 8) & 0xffff) as usize;
        let Some(r) = self.paged.get(i).filter(|r| r.aspace != 0 && r.generation == payload >> 24) else {
            return Err((NO_ANSWER, 0));
        };
        let (vector, rip, addr, code) = (w[0], w[1], w[2], w[3]);
        let exception = label == keep_abi::label::EXCEPTION;
        // Error code bit 0: the page was present (a protection fault).
        let first_touch = exception && vector == 14 && code & 1 == 0;
        let why = match LazyRange::find(&r.lazy, addr).filter(|_| first_touch) {
            Some(range) => match keep_spacebank::Bank(r.bank).alloc_page(FRESH) {
                Ok(_) => {
                    let m = Aspace(r.aspace).map(FRESH, addr & !0xfff, range.rights);
                    let _ = SELF_ASPACE.delete_cap(FRESH);
                    match m {
                        Ok(()) => return Ok(([0; 3], Vec::new())),
                        Err(e) => alloc::format!("no page for its first touch of {addr:#x}: MAP: {e}"),
                    }
                }
                Err(e) => alloc::format!("no page for its first touch of {addr:#x}: {e}"),
            },
            None if exception => {
                alloc::format!("{} (vector {vector}) at rip {rip:#x}, {}", exception_name(vector), match vector {
                    14 => alloc::format!("address {addr:#x}"),
                    _ => alloc::format!("error code {code:#x}"),
                })
            }
            None => alloc::format!("fault message {label:#x} at rip {rip:#x}"),
        };
        let bytes = [r.name.0.to_le_bytes(), r.name.1.to_le_bytes()].concat();
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(16);
        println!("constructor: instance '{}' stopped: {why}", core::str::from_utf8(&bytes[..len]).unwrap_or("?"));
        Err((NO_ANSWER, 0))
    }
}

/// The number of capabilities a request brought (its return capability
/// counts among those received).
fn caps_in(m: &Msg) -> u64 {
    m.tag.caps().saturating_sub(1)
}

/// A method's reply as the generated protocol's answer: the capabilities
/// it names go in the send slots; a refusal's detail is word 1.
fn answer(r: Reply) -> Answer {
    match r {
        Ok((w, caps)) => {
            let mut a = Answer::ok(w);
            if !caps.is_empty() {
                let list: Vec<(u64, u64)> = caps.iter().map(|&c| (c, 0)).collect();
                a = a.with_caps(keep_rt::ipc_buffer().set_send_caps(&list));
            }
            a
        }
        Err((s, detail)) => Answer::refuse(s).with_results([detail, 0, 0]),
    }
}

/// The requests (abi/services/constructor.toml): `dispatch` calls each
/// only through its kind of capability (else NO_RIGHTS); a builder's and a
/// constructor's name their constructor by index.
impl Handler for Server {
    fn new(&mut self, _: &Msg, name_lo: u64, name_hi: u64, length: u64) -> Answer {
        answer(self.new_ctor([name_lo, name_hi, length, 0]))
    }
    fn image(&mut self, m: &Msg, offset: u64) -> Answer {
        answer(self.ctor(m.payload, kind::BUILDER).and_then(|i| Server::image(self, i, offset, keep_rt::ipc_buffer(), m.tag.has_string())))
    }
    fn add_cap(&mut self, m: &Msg, slot: u64) -> Answer {
        answer(self.ctor(m.payload, kind::BUILDER).and_then(|i| Server::add_cap(self, i, slot, caps_in(m))))
    }
    fn seal(&mut self, m: &Msg) -> Answer {
        answer(self.ctor(m.payload, kind::BUILDER).and_then(|i| Server::seal(self, i)))
    }
    fn is_confined(&mut self, m: &Msg) -> Answer {
        answer(self.ctor(m.payload, kind::REQUESTER).and_then(|i| Server::is_confined(self, i, caps_in(m))))
    }
    fn instantiate(&mut self, m: &Msg, limit: u64, frames: u64, arg0: u64) -> Answer {
        answer(self.ctor(m.payload, kind::REQUESTER).and_then(|i| Server::instantiate(self, i, [limit, frames, arg0, 0], caps_in(m))))
    }
    fn blob(&mut self, m: &Msg, length: u64) -> Answer {
        answer(self.ctor(m.payload, kind::BUILDER).and_then(|i| Server::blob(self, i, length, caps_in(m))))
    }
}

fn main(_: u64, _: u64) -> i32 {
    // SAFETY: first thing, single threaded; HEAP_SPACE is used only here.
    unsafe {
        HEAP.lock().init(&raw mut HEAP_SPACE as *mut u8, HEAP_SIZE);
        keep_rt::set_allocator(&HEAP);
    }
    let mut slots = SlotPool::new();
    for s in [RET, IN[0], IN[1], IN[2], IN[3], MINTED, SUB, ACCT, RBANK, FRESH] {
        slots.reserve(s);
    }
    let mut server = Server { ctors: Vec::new(), paged: Vec::new(), slots, after_reply: Vec::new() };
    let buf = keep_rt::ipc_buffer();
    let recv_slots = [RET, IN[0], IN[1], IN[2], IN[3]];
    let recv_tag = Tag::new(0).with_slots(buf.set_recv_slots(&recv_slots));
    let mut m = keep_abi::recv(recv_tag, 0);
    loop {
        for s in core::mem::take(&mut server.after_reply) {
            let _ = SELF_ASPACE.delete_cap(s);
            if s != SUB {
                server.slots.free(s);
            }
        }
        if m.err != 0 || !m.tag.is_called() {
            for s in IN {
                let _ = SELF_ASPACE.delete_cap(s);
            }
            buf.set_recv_slots(&recv_slots);
            m = keep_abi::recv(recv_tag, 0);
            continue;
        }
        // A message through an instance's fault handler that is no request
        // is its fault; everything else is a request.
        let label = m.tag.label();
        let a = if pager(m.payload) && !is_request(label) {
            server.fault(m.payload, label, m.words).map_or_else(|(s, _)| Answer::refuse(s), |_| Answer::ok([0; 3]))
        } else {
            dispatch(&mut server, &m)
        };
        // Capabilities the request carried and the server did not keep.
        for s in IN {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        if a.status == NO_ANSWER {
            let _ = SELF_ASPACE.delete_cap(RET);
            buf.set_recv_slots(&recv_slots);
            m = keep_abi::recv(recv_tag, 0);
            continue;
        }
        buf.send_len = 0;
        let tag = a.tag().with_slots(recv_slots.len() as u64);
        // A call made by the loader (to the bank) changed the receive slots.
        buf.set_recv_slots(&recv_slots);
        m = Return(RET).reply_recv(tag, a.words(), 0);
    }
}

/// The CPU's name for exception `vector` (as the kernel reports them).
fn exception_name(vector: u64) -> &'static str {
    match vector {
        0 => "divide error",
        1 => "debug",
        3 => "breakpoint",
        4 => "overflow",
        5 => "bound range",
        6 => "invalid opcode",
        7 => "device not available",
        8 => "double fault",
        12 => "stack fault",
        13 => "general protection",
        14 => "page fault",
        16 => "x87 floating point",
        17 => "alignment check",
        19 => "SIMD floating point",
        _ => "exception",
    }
}

//! The running system, built from its description (keep-system's
//! `desc`, docs/space-banks.md): at boot the root task starts the space
//! bank (the prime bank gets half the memory pool) and the constructor
//! server, reads the description file from the boot image (`system`, or
//! the one `system=NAME` on the kernel command line names), makes its
//! banks, builds a constructor per server and program (its initial
//! capabilities: the console if granted, and a capability to the name
//! service that says who it is), and starts the servers in order.  It
//! supervises them: a server that ends is started again, at most
//! `restart` times.  The name service is a thread of the root task; it
//! answers LOOKUP from its table (which program may use which server, and
//! the root's slot holding each server's current process).

use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{MEMORY, Process, Return, SELF_ASPACE, Status, Tag, rights, slot, state};
use keep_constructor::{Constructor, Instance};
use keep_loader::{SlotPool, thread};
use keep_spacebank::Bank;
use keep_system::desc::{self, Description, Kind, MAX_ENTRIES};
use keep_system::names;

/// One server or program of the description.
pub struct Running {
    pub name: String,
    pub kind: Kind,
    pub bank: String,
    pub limit: u64,
    ctor: Constructor,
    pub instance: Option<Instance>,
    pub restarts: u64,
    pub max_restarts: u64,
    /// Its last end, when it is not running.
    pub last: Option<Status>,
}

pub struct System {
    pub file: String,
    bank_server: keep_spacebank::Server,
    ctor_server: keep_constructor::Server,
    pub prime: Bank,
    /// Declared banks: (name, capability, index in the bank server).
    pub banks: Vec<(String, Bank, u64)>,
    pub entries: Vec<Running>,
    desc: Description,
    names: Option<thread::Thread>,
}

/// The name service's table, written by the root task while the thread
/// waits (one CPU: the thread runs only when the root task blocks or
/// yields), read by the thread, which must not allocate.
struct NameEntry {
    name: (u64, u64),
    /// The root task's slot holding the server's current process (0: none).
    process: u64,
    /// Bit i: may use entry i.
    uses: u64,
}

static mut NAME_TABLE: [NameEntry; MAX_ENTRIES] = [const { NameEntry { name: (0, 0), process: 0, uses: 0 } }; MAX_ENTRIES];
static mut NAME_COUNT: usize = 0;

#[allow(static_mut_refs)]
fn table() -> &'static mut [NameEntry; MAX_ENTRIES] {
    // SAFETY: one CPU; the root task writes only while the thread is
    // blocked in its receive (it runs at a higher priority and is always
    // back there before the root task runs again).
    unsafe { &mut NAME_TABLE }
}

/// The name-service thread: words 0 and 1 are its return and mint slots.
fn name_service(a: &thread::Args) -> u64 {
    let (ret, minted) = (a.words[0], a.words[1]);
    a.buf().set_recv_slots(&[ret]);
    let mut m = keep_abi::recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = keep_abi::recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let t = table();
        // SAFETY: see table().
        let count = unsafe { NAME_COUNT };
        let client = m.payload as usize;
        let found = (0..count).find(|&i| t[i].name == (m.words[0], m.words[1]));
        let status = match (m.tag.label(), found) {
            (names::LOOKUP, _) if client >= count => names::status::BAD_REQUEST,
            (names::LOOKUP, Some(s)) if t[client].uses & (1 << s) == 0 => names::status::NOT_GRANTED,
            (names::LOOKUP, None) => names::status::NOT_GRANTED,
            (names::LOOKUP, Some(s)) => {
                let _ = SELF_ASPACE.delete_cap(minted);
                let p = t[s].process;
                if p != 0 && Process(p).mint(minted, client as u64, rights::WRITE | rights::CALL).is_ok() {
                    names::status::OK
                } else {
                    names::status::NOT_RUNNING
                }
            }
            _ => names::status::BAD_REQUEST,
        };
        let mut tag = Tag::new(0).with_slots(1);
        if status == names::status::OK {
            tag = tag.with_caps(a.buf().set_send_caps(&[(minted, 0)]));
        }
        m = Return(ret).reply_recv(tag, [status, 0, 0, 0], 0);
    }
}

/// Why building the system stopped: the line of the description, if any.
pub struct BuildError {
    pub line: usize,
    pub what: String,
}

fn at(line: usize, what: impl Into<String>) -> BuildError {
    BuildError { line, what: what.into() }
}

impl System {
    /// Starts the bank and constructor servers and builds the system
    /// described in the boot-image file `file`.  Everything made is
    /// destroyed again when the description is refused.
    pub fn boot(slots: &mut SlotPool, image: &keep_loader::BootImage<'static>, file: &str) -> Result<System, BuildError> {
        let text = image.find(file).ok_or_else(|| at(0, alloc::format!("no file '{file}' in the boot image")))?;
        let text = core::str::from_utf8(text.data).map_err(|_| at(0, "the description is not UTF-8"))?;
        let desc = desc::parse(text).map_err(|e| at(e.line, e.what))?;
        for e in &desc.entries {
            if image.find(&e.program).is_none_or(|p| !p.data.starts_with(b"\x7fELF")) {
                return Err(at(e.line, alloc::format!("no program '{}' in the boot image", e.program)));
            }
        }
        let elf = |n: &str| image.find(n).map(|e| e.data).ok_or_else(|| at(0, alloc::format!("no '{n}' in the boot image")));
        let limit = MEMORY.free().unwrap_or(0) / 2;
        let bank_server = keep_spacebank::Server::spawn(slots, elf("spacebank")?, slot::MEMORY, limit).map_err(|e| at(0, e))?;
        let prime = bank_server.prime;
        let ctor_server = match keep_constructor::Server::spawn(slots, elf("constructor")?, prime.0) {
            Ok(c) => c,
            Err(e) => {
                let _ = bank_server.stop(slots);
                return Err(at(0, e));
            }
        };
        let mut sys = System {
            file: String::from(file),
            bank_server,
            ctor_server,
            prime,
            banks: Vec::new(),
            entries: Vec::new(),
            desc,
            names: None,
        };
        match sys.build(slots, image) {
            Ok(()) => Ok(sys),
            Err(e) => {
                sys.shut_down(slots);
                Err(e)
            }
        }
    }

    fn bank(&self, i: Option<usize>) -> Bank {
        i.map_or(self.prime, |i| self.banks[i].1)
    }

    fn build(&mut self, slots: &mut SlotPool, image: &keep_loader::BootImage<'static>) -> Result<(), BuildError> {
        for b in self.desc.banks.clone() {
            let parent = self.bank(b.parent);
            let s = slots.alloc().ok_or_else(|| at(b.line, "no free slot"))?;
            let bank = parent.create_bank(b.limit, s).map_err(|e| {
                slots.free(s);
                at(b.line, alloc::format!("bank '{}': {e}", b.name))
            })?;
            let index = bank.info().map_or(0, |i| i.index);
            self.banks.push((b.name.clone(), bank, index));
        }
        // The name service's table, then the thread.
        let t = table();
        for (i, e) in self.desc.entries.iter().enumerate() {
            t[i] = NameEntry { name: keep_abi::pack_name(&e.name), process: 0, uses: e.uses.iter().fold(0, |m, &u| m | 1 << u) };
        }
        // SAFETY: the thread does not exist yet.
        unsafe { NAME_COUNT = self.desc.entries.len() };
        let (ret, minted) = match (slots.alloc(), slots.alloc()) {
            (Some(r), Some(m)) => (r, m),
            _ => return Err(at(0, "no free slot")),
        };
        let th = thread::spawn(slots, "names", 12, name_service, &[ret, minted]).map_err(|e| at(0, e))?;
        let names_process = th.process;
        self.names = Some(th);
        // A constructor per entry, with its initial capabilities.
        let scratch = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        let sender = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        for (i, e) in self.desc.entries.clone().into_iter().enumerate() {
            let _ = SELF_ASPACE.delete_cap(sender);
            names_process
                .mint(sender, i as u64, rights::WRITE | rights::CALL)
                .map_err(|err| at(e.line, alloc::format!("MINT: {err}")))?;
            let mut caps = alloc::vec![(sender, names::NAMES_SLOT)];
            if e.console {
                caps.push((slot::CONSOLE, slot::CONSOLE));
            }
            let elf = image.find(&e.program).map(|p| p.data).unwrap_or(&[]);
            let c = slots.alloc().ok_or_else(|| at(e.line, "no free slot"))?;
            let ctor = self
                .ctor_server
                .meta
                .build(&e.name, elf, &caps, scratch, c)
                .map_err(|err| at(e.line, alloc::format!("constructor of '{}': {err}", e.name)))?;
            self.entries.push(Running {
                name: e.name.clone(),
                kind: e.kind,
                bank: e.bank.map_or(String::from("prime"), |b| self.banks[b].0.clone()),
                limit: e.limit,
                ctor,
                instance: None,
                restarts: 0,
                max_restarts: e.restart,
                last: None,
            });
        }
        let _ = SELF_ASPACE.delete_cap(sender);
        slots.free(sender);
        slots.free(scratch);
        for i in 0..self.entries.len() {
            if self.entries[i].kind == Kind::Server {
                self.start(slots, i, 0).map_err(|w| at(self.desc.entries[i].line, w))?;
            }
        }
        Ok(())
    }

    /// Starts an instance of entry `i` with `arg0`.
    fn start(&mut self, slots: &mut SlotPool, i: usize, arg0: u64) -> Result<(), String> {
        let e = &self.desc.entries[i];
        let bank = self.bank(e.bank);
        let (p, b) = match (slots.alloc(), slots.alloc()) {
            (Some(p), Some(b)) => (p, b),
            _ => return Err(String::from("no free slot")),
        };
        match self.entries[i].ctor.instantiate(bank, e.limit, e.frames, arg0, p, b) {
            Ok(inst) => {
                self.entries[i].instance = Some(inst);
                table()[i].process = p;
                Ok(())
            }
            Err(err) => {
                slots.free(p);
                slots.free(b);
                Err(alloc::format!("'{}' cannot start: {err}", e.name))
            }
        }
    }

    /// Ends entry `i`'s instance (if it has ended or `force`): its bank is
    /// destroyed, and with it everything it had.
    fn reap(&mut self, slots: &mut SlotPool, i: usize) -> Option<Status> {
        let inst = self.entries[i].instance.take()?;
        table()[i].process = 0;
        let st = inst.process.status().ok();
        let _ = inst.bank.destroy();
        for s in [inst.process.0, inst.bank.0] {
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
        self.entries[i].last = st;
        st
    }

    /// Whether anything needs watching (the shell then polls).
    pub fn supervises(&self) -> bool {
        self.entries.iter().any(|e| e.kind == Kind::Server && e.instance.is_some())
    }

    /// Restarts the servers that have ended, as far as their `restart`
    /// allows; returns a report line for each.
    pub fn supervise(&mut self, slots: &mut SlotPool) -> Vec<String> {
        let mut report = Vec::new();
        for i in 0..self.entries.len() {
            let ended = match &self.entries[i].instance {
                Some(inst) if self.entries[i].kind == Kind::Server => {
                    inst.process.status().is_ok_and(|s| s.state == state::EXITED || s.state == state::FAULTED)
                }
                _ => false,
            };
            if !ended {
                continue;
            }
            let st = self.reap(slots, i);
            let e = &self.entries[i];
            let how = st.map_or(String::from("ended"), |s| alloc::format!("{s}"));
            if e.restarts >= e.max_restarts {
                report.push(alloc::format!("system: server {} {how}; not restarted (restart={})", e.name, e.max_restarts));
                continue;
            }
            self.entries[i].restarts += 1;
            let (n, max) = (self.entries[i].restarts, self.entries[i].max_restarts);
            match self.start(slots, i, 0) {
                Ok(()) => report.push(alloc::format!("system: server {} {how}; restarted ({n} of {max})", self.entries[i].name)),
                Err(w) => report.push(alloc::format!("system: server {} {how}; restart failed: {w}", self.entries[i].name)),
            }
        }
        report
    }

    /// Whether the description has a program called `name`.
    pub fn has_program(&self, name: &str) -> bool {
        self.entries.iter().any(|e| e.name == name && e.kind == Kind::Program)
    }

    /// Runs program `name` of the description to its end (its bank is
    /// destroyed after).
    pub fn run_program(&mut self, slots: &mut SlotPool, name: &str, arg0: u64) -> Result<Status, String> {
        let i = self.entries.iter().position(|e| e.name == name && e.kind == Kind::Program).ok_or("no such program")?;
        if self.entries[i].instance.is_some() {
            return Err(alloc::format!("'{name}' is running already"));
        }
        self.start(slots, i, arg0)?;
        let st = self.entries[i].instance.as_ref().map(|inst| inst.process.wait());
        self.reap(slots, i);
        match st {
            Some(Ok(s)) => Ok(s),
            Some(Err(e)) => Err(alloc::format!("WAIT failed: {e}")),
            None => Err(String::from("not started")),
        }
    }

    /// Destroys everything: instances (with their banks), banks, the name
    /// service, the constructor and bank servers.
    pub fn shut_down(mut self, slots: &mut SlotPool) {
        for i in 0..self.entries.len() {
            self.reap(slots, i);
        }
        for (_, b, _) in self.banks.drain(..) {
            let _ = b.destroy();
            let _ = SELF_ASPACE.delete_cap(b.0);
            slots.free(b.0);
        }
        if let Some(t) = self.names.take() {
            t.kill(slots);
        }
        for e in &self.entries {
            let _ = SELF_ASPACE.delete_cap(e.ctor.0);
            slots.free(e.ctor.0);
        }
        let _ = self.ctor_server.stop(slots);
        let _ = self.bank_server.stop(slots);
    }

    /// The name of the bank with server index `index`, if declared.
    pub fn bank_name(&self, index: u64) -> Option<&str> {
        if index == keep_spacebank::PRIME_INDEX {
            return Some("prime");
        }
        self.banks.iter().find(|b| b.2 == index).map(|b| b.0.as_str())
    }

    /// The entry whose instance's bank has server index `index`.
    pub fn instance_of(&self, index: u64) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.instance.as_ref().is_some_and(|i| i.bank.info().is_ok_and(|b| b.index == index)))
            .map(|e| e.name.as_str())
    }
}

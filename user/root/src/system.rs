//! The running system, built from its description (keep-system's
//! `desc`, docs/space-banks.md): at boot the root task starts the space
//! bank (the prime bank gets half the memory pool) and the constructor
//! server, reads the description file from the boot image (`system`, or
//! the one `system=NAME` on the kernel command line names), makes its
//! banks, loads `init` on a bank of its own, builds a constructor per
//! server and program (its initial capabilities: the console if granted,
//! and a capability to the name service — init — that says who it is),
//! hands init the servers' constructors and banks, and asks it to start
//! them.  From then on init answers the name service and supervises the
//! servers (user/servers/init: a server that ends is reaped and started
//! again at once, as its `restart` and `backoff` say, whatever the shell
//! is doing); the root task runs the described programs for the shell's
//! `run` and asks init for its table for `ps` and `mem`.

use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Account, Aspace, MEMORY, Process, SELF_ASPACE, Status, rights, slot, ty};
use keep_constructor::{Constructor, Instance};
use keep_loader::{Blob, Child, Grant, Loader, SlotPool, Spec};
use keep_spacebank::{Bank, BankFrames};
use keep_system::desc::{self, Description, Kind};
use keep_system::init::{self as init_proto, EntryStatus};
use keep_system::names;

/// Frames of init's bank (its program, 1 MiB of heap, its watchers, its
/// account, the cappages of its slots), and of its account: its own
/// process and page tables, and per server its watcher's process and a
/// notification.
pub const INIT_BANK_LIMIT: u64 = 1024;
pub const INIT_ACCOUNT_FRAMES: u64 = 64;
pub const INIT_ACCOUNT_PER_SERVER: u64 = 2;

// The largest description fits the servers the root task builds it with:
// a constructor per entry; its banks, an instance's bank per server, and
// init's, alive at once in the bank server.
const _: () = assert!(desc::MAX_ENTRIES <= keep_constructor::MAX_CONSTRUCTORS);
const _: () = assert!(desc::MAX_BANKS + desc::MAX_SERVERS + 1 < keep_spacebank::MAX_BANKS / 2);
const _: () = assert!(INIT_ACCOUNT_FRAMES + INIT_ACCOUNT_PER_SERVER * desc::MAX_SERVERS as u64 + init_proto::slot::CAPPAGES + 256 < INIT_BANK_LIMIT);

/// Where the root task maps a blob's page while it fills it.
const BLOB_SCRATCH: u64 = 0x0000_6100_0000_0000;

// The workhorse finds its root file system where the constructor maps a blob.
const _: () = assert!(keep_workhorse::ROOTFS_VADDR == keep_constructor::BLOB_VADDR);

/// A boot-image file of a `blob=` (keep_constructor, "Blobs"), copied once
/// into pages of the memory pool: an address space used only as their
/// container, page i in its capability slot i.  Every constructor naming
/// the file gets a weak, read-only capability to it.
struct BlobSpace {
    file: String,
    space: Aspace,
    len: u64,
}

/// Copies `data` into a new blob space at the empty slot `space`.
fn make_blob(slots: &mut SlotPool, space: u64, data: &[u8]) -> Result<Aspace, String> {
    let fail = |what: &str, e: keep_abi::Error| alloc::format!("{what}: {e}");
    ACCOUNT.create_aspace(space).map_err(|e| fail("CREATE_ASPACE", e))?;
    let blob = Aspace(space);
    let scratch = slots.alloc().ok_or("no free slot")?;
    let pages = data.len().div_ceil(4096) as u64;
    let r = (|| {
        // The mappings keep the cappages (and the slots the pages).
        for c in 0..pages.div_ceil(keep_abi::layout::CAPPAGE_SLOTS) {
            MEMORY.retype(ty::CAPPAGE, scratch).map_err(|e| fail("RETYPE", e))?;
            let m = blob.map_cappage(scratch, c * keep_abi::layout::CAPPAGE_SLOTS);
            let _ = SELF_ASPACE.delete_cap(scratch);
            m.map_err(|e| fail("MAP_CAPPAGE", e))?;
        }
        for (i, chunk) in data.chunks(4096).enumerate() {
            MEMORY.retype(ty::PAGE, scratch).map_err(|e| fail("RETYPE", e))?;
            let r = SELF_ASPACE.map(scratch, BLOB_SCRATCH, rights::READ | rights::WRITE).map(|_| {
                // SAFETY: a fresh page mapped writable at BLOB_SCRATCH, used by nothing else.
                let page = unsafe { core::slice::from_raw_parts_mut(BLOB_SCRATCH as *mut u8, chunk.len()) };
                page.copy_from_slice(chunk);
                let _ = SELF_ASPACE.unmap(BLOB_SCRATCH);
            });
            let r = r.and_then(|_| blob.insert_cap(scratch, i as u64, rights::READ));
            let _ = SELF_ASPACE.delete_cap(scratch);
            r.map_err(|e| fail("a blob page", e))?;
        }
        Ok(blob)
    })();
    slots.free(scratch);
    if r.is_err() {
        free_blob(slots, blob, pages);
    }
    r
}

/// Gives a blob space's pages back to the pool and destroys it.
fn free_blob(slots: &mut SlotPool, blob: Aspace, pages: u64) {
    if let Some(scratch) = slots.alloc() {
        for i in 0..pages {
            if blob.extract_cap(i, scratch, 0).is_ok() {
                let _ = MEMORY.reclaim(scratch);
                let _ = SELF_ASPACE.delete_cap(scratch);
            }
        }
        slots.free(scratch);
    }
    let _ = ACCOUNT.destroy(blob.0);
    let _ = SELF_ASPACE.delete_cap(blob.0);
}

/// One server or program of the description.
pub struct Running {
    pub name: String,
    pub kind: Kind,
    /// The boot-image program it runs.
    pub program: String,
    pub bank: String,
    pub limit: u64,
    ctor: Constructor,
    /// A program's instance while `run` waits for it (servers are init's).
    pub instance: Option<Instance>,
    pub max_restarts: u64,
    /// A program's last end.
    pub last: Option<Status>,
}

/// init: its process (loaded from its bank), the bank, and the root
/// task's control capability to it.
struct InitServer {
    child: Child,
    bank: Bank,
    control: u64,
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
    init: Option<InitServer>,
    /// The index of init's bank.
    init_bank_index: u64,
    /// The files of `blob=` lines, each copied once.
    blobs: Vec<BlobSpace>,
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
    pub fn boot(
        slots: &mut SlotPool,
        image: &keep_loader::BootImage<'static>,
        file: &str,
        mux: Option<&mut crate::terminals::Mux>,
    ) -> Result<System, BuildError> {
        let text = image.find(file).ok_or_else(|| at(0, alloc::format!("no file '{file}' in the boot image")))?;
        let text = core::str::from_utf8(text.data).map_err(|_| at(0, "the description is not UTF-8"))?;
        let desc = desc::parse(text).map_err(|e| at(e.line, e.what))?;
        for e in &desc.entries {
            if image.find(&e.program).is_none_or(|p| !p.data.starts_with(b"\x7fELF")) {
                return Err(at(e.line, alloc::format!("no program '{}' in the boot image", e.program)));
            }
            if let Some(b) = &e.blob
                && image.find(b).is_none_or(|f| f.data.is_empty() || f.data.len() as u64 > keep_constructor::MAX_BLOB)
            {
                return Err(at(e.line, alloc::format!("blob={b}: no such file in the boot image (or empty, or over 256 MiB)")));
            }
        }
        let elf = |n: &str| image.find(n).map(|e| e.data).ok_or_else(|| at(0, alloc::format!("no '{n}' in the boot image")));
        // Three quarters of the pool: the workhorse's bank alone may take
        // 70,000 frames (docs/workhorse.md, "What it holds").
        let limit = MEMORY.free().unwrap_or(0) / 4 * 3;
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
            init: None,
            init_bank_index: u64::MAX,
            blobs: Vec::new(),
        };
        match sys.build(slots, image, text, mux) {
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

    /// Loads init (not started) on a new bank under the prime bank, with
    /// the description's text mapped at DESC_VADDR.
    fn load_init(&mut self, slots: &mut SlotPool, elf: &[u8], text: &str, console: u64) -> Result<(), BuildError> {
        let (b, a, control) = match (slots.alloc(), slots.alloc(), slots.alloc()) {
            (Some(b), Some(a), Some(c)) => (b, a, c),
            _ => return Err(at(0, "no free slot")),
        };
        let bank = self.prime.create_bank(INIT_BANK_LIMIT, b).map_err(|e| at(0, alloc::format!("init's bank: {e}")))?;
        self.init_bank_index = bank.info().map_or(u64::MAX, |i| i.index);
        let fail = |bank: Bank, slots: &mut SlotPool, what: String| {
            let _ = bank.destroy();
            for s in [a, b, control] {
                let _ = SELF_ASPACE.delete_cap(s);
                slots.free(s);
            }
            at(0, what)
        };
        let servers = self.desc.entries.iter().filter(|e| e.kind == Kind::Server).count() as u64;
        if let Err(e) = bank.alloc_account(INIT_ACCOUNT_FRAMES + INIT_ACCOUNT_PER_SERVER * servers, a) {
            return Err(fail(bank, slots, alloc::format!("init's account: {e}")));
        }
        let grants = [
            Grant { src: console, dest: slot::CONSOLE, rights: 0 },
            Grant { src: slot::TIMER, dest: slot::TIMER, rights: rights::READ },
            Grant { src: a, dest: slot::ACCOUNT, rights: 0 },
        ];
        let blob = Some(Blob { vaddr: init_proto::DESC_VADDR, data: text.as_bytes() });
        let spec = Spec { name: "init", elf, arg0: text.len() as u64, arg1: 0, grants: &grants, blob };
        let mut frames = BankFrames(bank);
        let loaded = Loader::with_source(slots, Account(a), &mut frames).load(&spec);
        let _ = SELF_ASPACE.delete_cap(a);
        let child = match loaded {
            Ok(c) => c,
            Err(e) => return Err(fail(bank, slots, alloc::format!("cannot load init: {e}"))),
        };
        // The cappages of init's per-entry slots (keep_system::init::slot),
        // paid by its bank; the mappings keep them (`a`: the scratch slot).
        let mut made = Ok(());
        for c in 0..init_proto::slot::CAPPAGES {
            made = bank
                .alloc_cappage(a)
                .map_err(|e| alloc::format!("a cappage of init's slots: {e}"))
                .and_then(|_| {
                    let m = child.aspace.map_cappage(a, init_proto::slot::BASE + c * keep_abi::layout::CAPPAGE_SLOTS);
                    let _ = SELF_ASPACE.delete_cap(a);
                    m.map_err(|e| alloc::format!("MAP_CAPPAGE of init's slots: {e}"))
                });
            if made.is_err() {
                break;
            }
        }
        let made = made.and_then(|_| {
            child.process.mint(control, init_proto::CONTROL, rights::WRITE | rights::CALL).map_err(|e| alloc::format!("MINT of init's control capability: {e}"))
        });
        if let Err(e) = made {
            let r = fail(bank, slots, e);
            for s in [child.process.0, child.aspace.0] {
                let _ = SELF_ASPACE.delete_cap(s);
                slots.free(s);
            }
            return Err(r);
        }
        slots.free(a);
        self.init = Some(InitServer { child, bank, control });
        Ok(())
    }

    fn build(
        &mut self,
        slots: &mut SlotPool,
        image: &keep_loader::BootImage<'static>,
        text: &str,
        mut mux: Option<&mut crate::terminals::Mux>,
    ) -> Result<(), BuildError> {
        use keep_abi::terminal as vt;
        // With the console multiplexer (docs/trusted-core.md, "The trusted
        // path"), `console` is a terminal of it and `terminal` one of the
        // entry's own; init's lines go to an output-only terminal.
        let shell_view = mux.as_deref().map(|m| m.shell_view);
        let mut term = |slots: &mut SlotPool, name: &str, kind: u64, line: usize| -> Result<Option<u64>, BuildError> {
            match mux.as_deref_mut() {
                Some(m) => m
                    .terminal(slots, name, kind)
                    .map(|(s, _)| Some(s))
                    .map_err(|e| at(line, alloc::format!("a terminal for '{name}': {e}"))),
                None => Ok(None),
            }
        };
        let init_console = term(slots, "init", vt::OUTPUT_ONLY, 0)?.unwrap_or(slot::CONSOLE);
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
        let init_elf = image.find("init").map(|e| e.data).ok_or_else(|| at(0, "no 'init' in the boot image"))?;
        self.load_init(slots, init_elf, text, init_console)?;
        let init = self.init.as_ref().expect("loaded");
        let (init_process, init_aspace, control) = (init.child.process, init.child.aspace, init.control);
        // A constructor per entry, with its initial capabilities; a
        // server's constructor and bank go to init.
        let scratch = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        let sender = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        // `timer`: read-only (NOW and SLEEP need no more), which the
        // constructor counts as confined.
        let timer = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        SELF_ASPACE.copy_cap(slot::TIMER, timer, rights::READ).map_err(|e| at(0, alloc::format!("COPY_CAP of the timer: {e}")))?;
        let weak_blob = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        let ports = slots.alloc().ok_or_else(|| at(0, "no free slot"))?;
        for (i, e) in self.desc.entries.clone().into_iter().enumerate() {
            let _ = SELF_ASPACE.delete_cap(sender);
            init_process
                .mint(sender, i as u64, rights::WRITE | rights::CALL)
                .map_err(|err| at(e.line, alloc::format!("MINT: {err}")))?;
            let mut caps = alloc::vec![(sender, names::NAMES_SLOT)];
            if e.console {
                let src = match e.kind {
                    Kind::Server => term(slots, &e.name, vt::OUTPUT_ONLY, e.line)?,
                    Kind::Program => shell_view,
                };
                caps.push((src.unwrap_or(slot::CONSOLE), slot::CONSOLE));
            }
            if e.terminal
                && let Some(s) = term(slots, &e.name, vt::INTERACTIVE, e.line)?
            {
                caps.push((s, vt::SLOT));
            }
            // Devices (docs/space-banks.md, "Devices"): the root task's own
            // capabilities, in the slots where programs expect them.
            for (wanted, s) in [(e.devmem, slot::DEVMEM), (e.interrupt, slot::INTERRUPT)] {
                if wanted {
                    caps.push((s, s));
                }
            }
            if e.timer {
                caps.push((timer, slot::TIMER));
            }
            // `checkpoint`: the kernel's checkpoint object (the checkpointer's).
            if e.checkpoint {
                caps.push((slot::CHECKPOINT, keep_checkpointer::CHECKPOINT_SLOT));
            }
            // `tpm`: a client's capability to the TPM's driver (no EXTEND);
            // the vault's (a server of the boot image's program `vault`)
            // reaches its own NV counter too (docs/trusted-core.md,
            // "Secure storage"), and so does the checkpointer's (a server of
            // program `checkpointer` with `checkpoint`; docs/persistence.md,
            // "Freshness").
            let server = e.kind == Kind::Server;
            let cap = if server && e.program == "vault" {
                crate::measure::vault_cap()
            } else if server && e.program == "checkpointer" && e.checkpoint {
                crate::measure::checkpointer_cap()
            } else {
                crate::measure::client_cap()
            };
            if e.tpm
                && let Some(t) = cap
            {
                caps.push((t, keep_tpm::TPM_SLOT));
            }
            // `ioport=`: the root task's I/O ports narrowed to the range
            // (the constructor keeps its own copy).
            let _ = SELF_ASPACE.delete_cap(ports);
            if let Some((base, count)) = e.ioport {
                keep_abi::IOPORT
                    .restrict(base, count, ports)
                    .map_err(|err| at(e.line, alloc::format!("ioport={base:#x}+{count}: RESTRICT: {err}")))?;
                caps.push((ports, slot::IOPORT));
            }
            let blob = match &e.blob {
                Some(file) => {
                    let (space, len) = self.blob(slots, image, file).map_err(|why| at(e.line, alloc::format!("blob={file}: {why}")))?;
                    let _ = SELF_ASPACE.delete_cap(weak_blob);
                    SELF_ASPACE
                        .copy_cap(space.0, weak_blob, rights::READ | rights::WEAK)
                        .map_err(|err| at(e.line, alloc::format!("blob={file}: COPY_CAP: {err}")))?;
                    Some((weak_blob, len))
                }
                None => None,
            };
            let elf = image.find(&e.program).map(|p| p.data).unwrap_or(&[]);
            let c = slots.alloc().ok_or_else(|| at(e.line, "no free slot"))?;
            let ctor = self
                .ctor_server
                .meta
                .build_with_blob(&e.name, elf, &caps, blob, scratch, c)
                .map_err(|err| at(e.line, alloc::format!("constructor of '{}': {err}", e.name)))?;
            if e.kind == Kind::Server {
                let i = i as u64;
                init_aspace
                    .insert_cap(ctor.0, init_proto::slot::CTOR + i, 0)
                    .and_then(|_| init_aspace.insert_cap(self.bank(e.bank).0, init_proto::slot::BANK + i, 0))
                    .map_err(|err| at(e.line, alloc::format!("'{}' to init: INSERT_CAP: {err}", e.name)))?;
            }
            self.entries.push(Running {
                name: e.name.clone(),
                kind: e.kind,
                program: e.program.clone(),
                bank: e.bank.map_or(String::from("prime"), |b| self.banks[b].0.clone()),
                limit: e.limit,
                ctor,
                instance: None,
                max_restarts: e.restart,
                last: None,
            });
        }
        for s in [sender, timer, weak_blob, ports] {
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
        slots.free(scratch);
        init_process.start().map_err(|e| at(0, alloc::format!("START of init: {e}")))?;
        match init_proto::call(control, init_proto::req::START) {
            Ok(w) if w[0] == init_proto::status::OK => Ok(()),
            Ok(w) if w[0] == init_proto::status::START_FAILED && (w[1] as usize) < self.desc.entries.len() => {
                let e = &self.desc.entries[w[1] as usize];
                let why = match w[2] {
                    s if s >= 0x100 => alloc::format!("{}", keep_constructor::CtorError::Call(s - 0x100)),
                    s => alloc::format!("{}", keep_constructor::CtorError::Status(s, w[3])),
                };
                Err(at(e.line, alloc::format!("'{}' cannot start: {why}", e.name)))
            }
            Ok(w) => Err(at(0, alloc::format!("init: START answered {w:?}"))),
            Err(e) => Err(at(0, alloc::format!("init: START failed: {}", keep_abi::Error(e)))),
        }
    }

    /// The blob space of boot-image file `file`, made on first use.
    fn blob(&mut self, slots: &mut SlotPool, image: &keep_loader::BootImage<'static>, file: &str) -> Result<(Aspace, u64), String> {
        if let Some(b) = self.blobs.iter().find(|b| b.file == file) {
            return Ok((b.space, b.len));
        }
        let data = image.find(file).map(|f| f.data).ok_or("no such file in the boot image")?;
        let s = slots.alloc().ok_or("no free slot")?;
        let space = make_blob(slots, s, data).inspect_err(|_| slots.free(s))?;
        self.blobs.push(BlobSpace { file: String::from(file), space, len: data.len() as u64 });
        Ok((space, data.len() as u64))
    }

    /// Starts an instance of program `i` with `arg0`.
    fn start(&mut self, slots: &mut SlotPool, i: usize, arg0: u64) -> Result<(), String> {
        let e = &self.desc.entries[i];
        let bank = self.bank(e.bank);
        let (p, b) = match (slots.alloc(), slots.alloc()) {
            (Some(p), Some(b)) => (p, b),
            _ => return Err(String::from("no free slot")),
        };
        match self.entries[i].ctor.instantiate(bank, e.limit, e.frames, arg0, p, b) {
            Ok(inst) => {
                if let Some((b, p)) = e.budget
                    && let Err(why) = inst.process.set_budget(b, p)
                {
                    keep_rt::println!("root: {}: budget={b}/{p} refused ({why}); it runs without one", e.name);
                }
                if let Some(n) = e.priority
                    && let Err(why) = inst.process.set_priority(n)
                {
                    keep_rt::println!("root: {}: priority={n} refused ({why}); it runs at the default", e.name);
                }
                if e.passive
                    && let Err(why) = inst.process.set_passive(1)
                {
                    keep_rt::println!("root: {}: passive refused ({why}); it runs on its own time", e.name);
                }
                self.entries[i].instance = Some(inst);
                Ok(())
            }
            Err(err) => {
                slots.free(p);
                slots.free(b);
                Err(alloc::format!("'{}' cannot start: {err}", e.name))
            }
        }
    }

    /// Ends program `i`'s instance: its bank is destroyed, and with it
    /// everything it had, once init told the servers it uses that say
    /// `notify` (ENDED) that it is gone.
    fn reap(&mut self, slots: &mut SlotPool, i: usize) -> Option<Status> {
        let inst = self.entries[i].instance.take()?;
        let st = inst.process.status().ok();
        let _ = inst.process.stop(); // if it still runs: nothing new reaches its servers
        // A call to an init that ended would never be answered.
        if let Some(init) = self.init.as_ref().filter(|init| {
            init.child.process.status().is_ok_and(|s| {
                s.state != keep_abi::state::CREATED && s.state != keep_abi::state::EXITED && s.state != keep_abi::state::FAULTED
            })
        }) {
            let _ = init_proto::call_with(init.control, init_proto::req::ENDED, [i as u64, 0, 0, 0]);
        }
        let _ = inst.bank.destroy();
        for s in [inst.process.0, inst.bank.0] {
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
        self.entries[i].last = st;
        st
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

    /// init's table (one record per entry), or why not.
    pub fn status(&self) -> Result<Vec<EntryStatus>, String> {
        let init = self.init.as_ref().ok_or("init is not running")?;
        init_proto::entry_status(init.control, keep_rt::ipc_buffer()).map_err(|e| alloc::format!("init: STATUS failed ({e:#x})"))
    }

    /// The grants entry `i` has: (server's name, grant).
    pub fn grants_of(&self, i: usize) -> Vec<(&str, &str)> {
        self.desc.entries.get(i).map_or(Vec::new(), |e| {
            e.grants.iter().map(|(s, g)| (self.desc.entries[*s].name.as_str(), g.as_str())).collect()
        })
    }

    /// The first server of the description that runs program `program`: its index.
    pub fn server_running(&self, program: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.kind == Kind::Server && e.program == program)
    }

    /// KILL of server `name` (init destroys its instance; supervision
    /// restarts it), now or `delay` ms from now.
    pub fn kill(&self, name: &str, delay: u64) -> Result<(), String> {
        let init = self.init.as_ref().ok_or("init is not running")?;
        let i = self.entries.iter().position(|e| e.name == name && e.kind == Kind::Server).ok_or("no such server")?;
        match init_proto::call_with(init.control, init_proto::req::KILL, [i as u64, delay, 0, 0]) {
            Ok(w) if w[0] == init_proto::status::OK => Ok(()),
            Ok(w) if w[0] == init_proto::status::BAD_REQUEST => Err(alloc::format!("the delay is over {} ms", init_proto::MAX_KILL_DELAY)),
            Ok(_) => Err(String::from("it is not running")),
            Err(e) => Err(alloc::format!("init: KILL failed: {}", keep_abi::Error(e))),
        }
    }

    /// ADMIN of server `i`: a sender with payload 0 to its instance at `dest` (empty).
    pub fn admin(&self, i: usize, dest: u64) -> Result<keep_abi::Sender, String> {
        let init = self.init.as_ref().ok_or("init is not running")?;
        init_proto::admin(init.control, i as u64, dest, keep_rt::ipc_buffer()).map_err(|e| match e {
            e if e >= 0x100 => String::from("it is not running"),
            e => alloc::format!("init: ADMIN failed: {}", keep_abi::Error(e)),
        })
    }

    /// Whether init has ended (exited, faulted, or its process is gone):
    /// how, for the report.
    pub fn init_ended(&self) -> Option<String> {
        let init = self.init.as_ref()?;
        match init.child.process.status() {
            Ok(s) if s.state == keep_abi::state::EXITED || s.state == keep_abi::state::FAULTED => Some(alloc::format!("{s}")),
            Ok(_) => None,
            Err(e) => Some(alloc::format!("its process is gone ({e})")),
        }
    }

    /// Destroys init's bank, and with it init (not the servers, whose
    /// banks are the description's): what a crash of init would leave.
    /// The shell's `kill init`.
    pub fn kill_init(&self) -> Result<(), String> {
        let init = self.init.as_ref().ok_or("init is not running")?;
        init.bank.destroy().map_err(|e| alloc::format!("destroying init's bank: {e}"))
    }

    /// The description's persistent programs.
    pub fn persistent(&self) -> &[desc::Persistent] {
        &self.desc.persistent
    }

    /// init's process, if it runs.
    pub fn init_process(&self) -> Option<Process> {
        self.init.as_ref().map(|i| i.child.process)
    }

    /// Destroys everything: programs' instances (with their banks), init
    /// (which destroys the servers' instances first), the banks, the
    /// constructor and bank servers.
    pub fn shut_down(mut self, slots: &mut SlotPool) {
        for i in 0..self.entries.len() {
            self.reap(slots, i);
        }
        if let Some(init) = self.init.take() {
            // A STOP call to an init that ended would never be answered.
            if init.child.process.status().is_ok_and(|s| {
                s.state != keep_abi::state::CREATED && s.state != keep_abi::state::EXITED && s.state != keep_abi::state::FAULTED
            }) {
                let _ = init_proto::call(init.control, init_proto::req::STOP);
            }
            let _ = init.child.process.stop();
            let _ = init.bank.destroy();
            for s in [init.child.process.0, init.child.aspace.0, init.bank.0, init.control] {
                let _ = SELF_ASPACE.delete_cap(s);
                slots.free(s);
            }
        }
        for (_, b, _) in self.banks.drain(..) {
            let _ = b.destroy();
            let _ = SELF_ASPACE.delete_cap(b.0);
            slots.free(b.0);
        }
        for e in &self.entries {
            let _ = SELF_ASPACE.delete_cap(e.ctor.0);
            slots.free(e.ctor.0);
        }
        let _ = self.ctor_server.stop(slots);
        let _ = self.bank_server.stop(slots);
        for b in self.blobs.drain(..) {
            free_blob(slots, b.space, b.len.div_ceil(4096));
            slots.free(b.space.0);
        }
    }

    /// The name of the bank with server index `index`, if declared.
    pub fn bank_name(&self, index: u64) -> Option<&str> {
        if index == keep_spacebank::PRIME_INDEX {
            return Some("prime");
        }
        if index == self.init_bank_index {
            return Some("init");
        }
        self.banks.iter().find(|b| b.2 == index).map(|b| b.0.as_str())
    }

    /// The entry whose instance's bank has server index `index` (servers
    /// from init's table).
    pub fn instance_of<'a>(&'a self, index: u64, table: &[EntryStatus]) -> Option<&'a str> {
        self.entries
            .iter()
            .enumerate()
            .find(|(i, e)| match e.kind {
                Kind::Server => table.get(*i).is_some_and(|s| s.bank == index),
                Kind::Program => e.instance.as_ref().is_some_and(|inst| inst.bank.info().is_ok_and(|b| b.index == index)),
            })
            .map(|(_, e)| e.name.as_str())
    }
}

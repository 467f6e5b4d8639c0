//! The system description: one statement per line, `#` to the end of a
//! line is a comment, words are separated by blanks.
//!
//! ```text
//! bank    NAME limit=FRAMES [in=BANK]
//! server  NAME program=PROG bank=BANK limit=FRAMES [frames=N] [uses=S,...]
//!              [console] [terminal] [arg=N] [restart=N] [backoff=MS] [supervisor=init]
//!              [devmem] [interrupt] [ioport=BASE+COUNT] [timer] [blob=FILE] [notify] [checkpoint]
//!              [budget=B/P] [priority=N] [passive] [S=GRANT ...]
//! program NAME program=PROG bank=BANK limit=FRAMES [frames=N] [uses=S,...] [console]
//!              [terminal] [timer] [blob=FILE] [budget=B/P] [priority=N] [passive] [S=GRANT ...]
//! persistent NAME program=PROG limit=FRAMES [arg=N] [console] [timer]
//! ```
//!
//! - `bank`: a sub-bank of `BANK` (default `prime`, the prime bank) with a
//!   limit of `FRAMES` frames.
//! - `server`: started at boot, in declaration order, from a constructor of
//!   boot-image program `PROG`, as an instance on a new sub-bank of `BANK`
//!   limited to `limit` frames, with an account of `frames` frames (default
//!   64), started with arg0 = `arg` (default 0); `restart=N`: its
//!   supervisor starts it again when it ends, at most N times (default 0),
//!   `backoff=MS` milliseconds after it ended, doubling with each restart
//!   (default 0: at once).  The only supervisor is `init` (a server the root
//!   task starts, which also answers the name service).
//! - `program`: not started at boot; the shell's `run NAME` starts it the
//!   same way and waits for it.
//! - `uses`: the servers (declared above) it may ask the name service for;
//!   `console`: output to the console, through the console multiplexer
//!   (docs/trusted-core.md, "The trusted path"), in slot 1: a server gets
//!   an output-only terminal of its own, whose lines are shown whichever
//!   terminal has the screen; a program (run by the shell) gets the
//!   shell's terminal, write-only.  `terminal`: an interactive terminal of
//!   its own, named after the entry, in slot `keep_abi::terminal::SLOT`
//!   (the user gives it the screen with Ctrl-T and its number; it reads
//!   only the input typed while it has the screen).  No entry gets the
//!   kernel's console itself: only the multiplexer reads it.
//! - Devices: `devmem` and `interrupt` (servers only) give the instance the
//!   root task's DEVMEM and INTERRUPT in their usual slots (the PCI
//!   server); `ioport=BASE+COUNT` (servers only) gives it the COUNT I/O
//!   ports from BASE in the IOPORT slot (the wall clock's `ioport=0x70+2`).
//!   No one is given the memory pool (`memory` is refused):
//!   drivers and the dataspace manager take their frames from their banks,
//!   and a client's dataspaces are paid by the client's bank.
//!   `S=GRANT`, for a server `S` in `uses`, is what
//!   that server gives this client ([`crate::grant`]: a PCI function, a
//!   disk range, an address); a client of a `pci`, `blk` or `net` server
//!   must have one.
//! - `timer`: the timer, read-only (NOW and SLEEP), in slot 2.
//! - `budget=B/P`: the instance's process runs at most `B` microseconds
//!   of every `P` (PROCESS.SET_BUDGET, docs/kernel-manual.md,
//!   "Scheduling"), set by whoever starts it (init for a server, the root
//!   task for a program) as soon as the constructor has made it; `P` from
//!   1,000 to 10,000,000 and `B` from 100 to `P` ([`check_budget`]).
//!   Without it the process has no budget.
//! - `priority=N`: the instance's process runs at priority `N` (0 lowest
//!   to 31 highest, PROCESS.SET_PRIORITY), set with its budget; without it,
//!   the default (10), which every other server and program has.  A
//!   process above the default preempts them all whenever it is runnable,
//!   so give it with a budget (the real-time program `periodic`).
//! - `passive`: the instance's process is passive (PROCESS.SET_PASSIVE):
//!   while it serves a call from a caller with a budget, it runs on that
//!   caller's budget; set with its budget and priority.
//! - `checkpoint` (servers only): the kernel's checkpoint object
//!   (`keep_checkpointer::CHECKPOINT_SLOT`), with which the checkpointer
//!   captures and restores the persistent pool (docs/persistence.md).
//! - `persistent`: a program of the persistent world (docs/persistence.md,
//!   "What persists"), not a bank's and not init's: at a fresh start the
//!   root task builds it from the persistent pool, its kernel-memory
//!   account `limit` frames of that pool, and starts it with arg0 = `arg`;
//!   at a boot that restores a checkpoint it is not built again, because
//!   the restore brings it back where it was.  `console`: the kernel's
//!   console, write-only (the multiplexer's terminals do not persist);
//!   `timer`: the timer, read-only.  It also finds the name service's
//!   capability in its usual slot, which a restore makes stale.
//! - `tpm`: a client's capability to the TPM's driver (the root task
//!   starts it before the system; `keep_tpm::TPM_SLOT`): PCRs, the log,
//!   random numbers, SEAL and UNSEAL, the NV counter, never EXTEND.
//! - `notify` (servers only): when a client of this server (one with it
//!   in `uses`) ends, init tells the server by a notification bound to it
//!   ([`crate::names::GONE_BIT`], then [`crate::names::TAKE_GONE`]), so
//!   that the server lets go of the client's dataspaces it has mapped (the
//!   network server's frame rings).
//! - `blob=FILE`: the boot-image file `FILE` is mapped read-only at
//!   `keep_constructor::BLOB_VADDR` in every instance, its length in bytes in the second
//!   argument register (rsi); the root task copies it once at boot and
//!   every instance maps the same frames (the workhorse's root file system).
//!
//! Names are 1-16 characters of `a-z`, `0-9` and `-`, unique among banks
//! and among servers and programs (`prime` and `root` are taken).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The most servers and programs (the name service's table; init's
/// capability-slot regions, [`crate::init::slot`], have one slot each).
pub const MAX_ENTRIES: usize = 64;
/// The most servers among them (init runs a watcher thread for each,
/// its stack and IPC buffer in init's heap).
pub const MAX_SERVERS: usize = 32;
/// The most banks.
pub const MAX_BANKS: usize = 64;
/// The most servers one entry may use.
pub const MAX_USES: usize = 6;
/// The longest boot-image file name `blob=` takes.
pub const MAX_BLOB_NAME: usize = 64;
/// An account's default size in frames.
pub const DEFAULT_FRAMES: u64 = 64;
/// Restarts are bounded.
pub const MAX_RESTART: u64 = 1000;
/// The longest first backoff, and the longest wait between restarts (ms).
pub const MAX_BACKOFF: u64 = 60_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bank {
    pub line: usize,
    pub name: String,
    pub limit: u64,
    /// Index of the parent in `Description::banks`, None for the prime bank.
    pub parent: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Server,
    Program,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub line: usize,
    pub kind: Kind,
    pub name: String,
    pub program: String,
    /// Index into `Description::banks`, None for the prime bank.
    pub bank: Option<usize>,
    pub limit: u64,
    pub frames: u64,
    /// Indices of the servers it may call (entries before it).
    pub uses: Vec<usize>,
    /// Output to the console (an output-only terminal; a program: the
    /// shell's terminal, write-only).
    pub console: bool,
    /// An interactive terminal of its own.
    pub terminal: bool,
    /// The instance's arg0 (servers; a program gets the shell's).
    pub arg: u64,
    pub restart: u64,
    /// Milliseconds before the first restart (doubling after each).
    pub backoff: u64,
    pub devmem: bool,
    pub interrupt: bool,
    /// I/O ports: (first, how many).
    pub ioport: Option<(u64, u64)>,
    pub timer: bool,
    /// A client's capability to the TPM's driver.
    pub tpm: bool,
    /// Told by init when a client of it ends, before the client's bank goes.
    pub notify: bool,
    /// (index of a server in `uses`, the grant's text).
    pub grants: Vec<(usize, String)>,
    /// The boot-image file mapped at BLOB_VADDR.
    pub blob: Option<String>,
    /// The kernel's checkpoint object (the checkpointer's).
    pub checkpoint: bool,
    /// (budget, period) in microseconds: `budget=B/P`.
    pub budget: Option<(u64, u64)>,
    /// `priority=N`: 0 to 31; None, the default priority.
    pub priority: Option<u64>,
    /// `passive`: it runs a caller's calls on the caller's budget.
    pub passive: bool,
}

/// A persistent program: built by the root task from the persistent pool
/// at a fresh start, brought back by a restore at every other boot
/// (docs/persistence.md, "What persists").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persistent {
    pub line: usize,
    pub name: String,
    pub program: String,
    /// Frames of its kernel-memory account, from the persistent pool.
    pub limit: u64,
    pub arg: u64,
    pub console: bool,
    pub timer: bool,
}

/// The most persistent programs.
pub const MAX_PERSISTENT: usize = 8;

impl Entry {
    /// The grant this entry has from server `s`.
    pub fn grant(&self, s: usize) -> Option<&str> {
        self.grants.iter().find(|(i, _)| *i == s).map(|(_, g)| g.as_str())
    }
}

/// Option words: no server or program may take one of these as its name
/// (a grant is written `NAME=...`).
pub const OPTIONS: [&str; 24] = [
    "program", "bank", "limit", "frames", "uses", "console", "terminal", "arg", "restart", "backoff", "supervisor", "devmem", "interrupt", "memory", "in",
    "blob", "timer", "notify", "ioport", "tpm", "checkpoint", "budget", "priority", "passive",
];

/// `budget=B/P`'s value: what PROCESS.SET_BUDGET accepts from a caller
/// without a budget of its own (a period from BUDGET_MIN_PERIOD_US to
/// BUDGET_MAX_PERIOD_US, a budget from BUDGET_MIN_US to the period).
pub fn check_budget(v: &str) -> Result<(u64, u64), String> {
    use keep_abi::layout::{BUDGET_MAX_PERIOD_US, BUDGET_MIN_PERIOD_US, BUDGET_MIN_US};
    let bad = || alloc::format!("budget={v}: want B/P, microseconds: a period from {BUDGET_MIN_PERIOD_US} to {BUDGET_MAX_PERIOD_US}, a budget from {BUDGET_MIN_US} to the period");
    let (b, p) = v.split_once('/').ok_or_else(bad)?;
    let (b, p) = (number(b).ok_or_else(bad)?, number(p).ok_or_else(bad)?);
    if !(BUDGET_MIN_PERIOD_US..=BUDGET_MAX_PERIOD_US).contains(&p) || !(BUDGET_MIN_US..=p).contains(&b) {
        return Err(bad());
    }
    Ok((b, p))
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Description {
    pub banks: Vec<Bank>,
    pub entries: Vec<Entry>,
    pub persistent: Vec<Persistent>,
}

impl Description {
    pub fn entry(&self, name: &str) -> Option<(usize, &Entry)> {
        self.entries.iter().enumerate().find(|(_, e)| e.name == name)
    }
}

/// A refusal: the line (from 1) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

fn valid_name(n: &str) -> bool {
    (1..=16).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Parses a whole description; the first error refuses it.
pub fn parse(text: &str) -> Result<Description, ParseError> {
    let mut d = Description::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| ParseError { line, what };
        let code = raw.split('#').next().unwrap_or("");
        let mut words = code.split_whitespace();
        let Some(keyword) = words.next() else { continue };
        let name = words.next().ok_or_else(|| err(alloc::format!("'{keyword}' without a name")))?;
        if !valid_name(name) || name == "prime" || name == "root" {
            return Err(err(alloc::format!("'{name}' is not a name (1-16 of a-z 0-9 -; not prime or root)")));
        }
        // key=value pairs and flags, each at most once.
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for w in words {
            let (k, v) = w.split_once('=').unwrap_or((w, ""));
            if pairs.iter().any(|(pk, _)| *pk == k) {
                return Err(err(alloc::format!("'{k}' given twice")));
            }
            pairs.push((k, v));
        }
        let get = |k: &str| pairs.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
        let num = |k: &str, min: u64, max: u64| -> Result<Option<u64>, ParseError> {
            match get(k) {
                None => Ok(None),
                Some(v) => match number(v) {
                    Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                    _ => Err(ParseError { line, what: alloc::format!("{k}={v}: want a number from {min} to {max}") }),
                },
            }
        };
        let bank_ref = |k: &str, d: &Description| -> Result<Option<usize>, ParseError> {
            match get(k) {
                None | Some("prime") => Ok(None),
                Some(b) => match d.banks.iter().position(|x| x.name == b) {
                    Some(i) => Ok(Some(i)),
                    None => Err(ParseError { line, what: alloc::format!("{k}={b}: no bank '{b}' declared above") }),
                },
            }
        };
        let allowed: &[&str] = match keyword {
            "bank" => &["limit", "in"],
            "server" => &[
                "program", "bank", "limit", "frames", "uses", "console", "terminal", "arg", "restart", "backoff", "supervisor", "devmem",
                "interrupt", "ioport", "timer", "blob", "notify", "tpm", "checkpoint", "budget", "priority", "passive",
            ],
            "program" => &["program", "bank", "limit", "frames", "uses", "console", "terminal", "timer", "blob", "tpm", "budget", "priority", "passive"],
            "persistent" => &["program", "limit", "arg", "console", "timer"],
            k => return Err(err(alloc::format!("unknown statement '{k}' (bank, server, program or persistent)"))),
        };
        if keyword != "bank" && OPTIONS.contains(&name) {
            return Err(err(alloc::format!("'{name}' is an option's word and cannot name a server or program")));
        }
        // The memory pool is given to no one: a program's frames, a driver's
        // included, are its bank's (docs/space-banks.md, "Drivers and dataspaces").
        if keyword != "bank" && pairs.iter().any(|(k, _)| *k == "memory") {
            return Err(err(String::from(
                "memory: no program is given the memory pool any more; its bank (bank=, limit=) pays for its frames",
            )));
        }
        // Anything else must be a grant: NAME=GRANT for a server in uses= (checked below).
        let listed: Vec<&str> = get("uses").map(|l| l.split(',').collect()).unwrap_or_default();
        if let Some((k, _)) = pairs.iter().find(|(k, _)| !allowed.contains(k) && (keyword == "bank" || !listed.contains(k))) {
            return Err(err(alloc::format!("'{k}' is not an option of {keyword} (nor a server in its uses=)")));
        }
        let limit = num("limit", 1, 1 << 32)?.ok_or_else(|| err(String::from("limit=FRAMES is missing")))?;
        if keyword == "bank" {
            if d.banks.iter().any(|b| b.name == name) {
                return Err(err(alloc::format!("bank '{name}' declared twice")));
            }
            if d.banks.len() >= MAX_BANKS {
                return Err(err(alloc::format!("more than {MAX_BANKS} banks")));
            }
            let parent = bank_ref("in", &d)?;
            d.banks.push(Bank { line, name: String::from(name), limit, parent });
            continue;
        }
        if d.entries.iter().any(|e| e.name == name) || d.persistent.iter().any(|p| p.name == name) {
            return Err(err(alloc::format!("'{name}' declared twice")));
        }
        if keyword == "persistent" {
            if d.persistent.len() >= MAX_PERSISTENT {
                return Err(err(alloc::format!("more than {MAX_PERSISTENT} persistent programs")));
            }
            let program = get("program").filter(|p| !p.is_empty()).ok_or_else(|| err(String::from("program=PROG is missing")))?;
            for flag in ["console", "timer"] {
                if let Some(v) = get(flag)
                    && !v.is_empty()
                {
                    return Err(err(alloc::format!("{flag} takes no value ({flag}={v})")));
                }
            }
            if limit > 65536 {
                return Err(err(alloc::format!("limit={limit}: a persistent program's account takes at most 65536 frames")));
            }
            d.persistent.push(Persistent {
                line,
                name: String::from(name),
                program: String::from(program),
                limit,
                arg: num("arg", 0, u64::MAX)?.unwrap_or(0),
                console: get("console").is_some(),
                timer: get("timer").is_some(),
            });
            continue;
        }
        if d.entries.len() >= MAX_ENTRIES {
            return Err(err(alloc::format!("more than {MAX_ENTRIES} servers and programs")));
        }
        if keyword == "server" && d.entries.iter().filter(|e| e.kind == Kind::Server).count() >= MAX_SERVERS {
            return Err(err(alloc::format!("more than {MAX_SERVERS} servers")));
        }
        let program = get("program").filter(|p| !p.is_empty()).ok_or_else(|| err(String::from("program=PROG is missing")))?;
        if get("bank").is_none() {
            return Err(err(String::from("bank=BANK is missing")));
        }
        let bank = bank_ref("bank", &d)?;
        let mut uses = Vec::new();
        if let Some(list) = get("uses") {
            for u in list.split(',') {
                match d.entries.iter().position(|e| e.name == u && e.kind == Kind::Server) {
                    Some(i) if !uses.contains(&i) => uses.push(i),
                    Some(_) => return Err(err(alloc::format!("uses={list}: '{u}' twice"))),
                    None => return Err(err(alloc::format!("uses={list}: no server '{u}' declared above"))),
                }
            }
            if uses.len() > MAX_USES {
                return Err(err(alloc::format!("uses={list}: more than {MAX_USES} servers")));
            }
        }
        for flag in ["console", "terminal", "devmem", "interrupt", "timer", "notify", "tpm", "checkpoint"] {
            if let Some(v) = get(flag)
                && !v.is_empty()
            {
                return Err(err(alloc::format!("{flag} takes no value ({flag}={v})")));
            }
        }
        let mut grants = Vec::new();
        for &u in &uses {
            let server: &Entry = &d.entries[u];
            match get(&server.name) {
                Some(g) => {
                    crate::grant::check(&server.program, g)
                        .map_err(|why| err(alloc::format!("{}={g}: {why}", server.name)))?;
                    // Two stacks of one network server may not share an address.
                    if server.program == "net"
                        && let Some(other) = d.entries.iter().find(|e| {
                            e.grant(u).is_some_and(|h| crate::grant::net(h).ok() == crate::grant::net(g).ok())
                        })
                    {
                        return Err(err(alloc::format!(
                            "{}={g}: '{}' (line {}) has this address from '{}' already",
                            server.name, other.name, other.line, server.name
                        )));
                    }
                    grants.push((u, String::from(g)));
                }
                None if crate::grant::required(&server.program) => {
                    return Err(err(alloc::format!(
                        "uses={}: a client of '{}' (program {}) needs {}=GRANT",
                        get("uses").unwrap_or(""),
                        server.name,
                        server.program,
                        server.name
                    )));
                }
                None => {}
            }
        }
        if let Some(s) = get("supervisor")
            && s != "init"
        {
            return Err(err(alloc::format!("supervisor={s}: only init supervises")));
        }
        // A boot-image file name (the root task checks that it is there).
        let blob = get("blob").map(String::from);
        if let Some(b) = &blob
            && (b.is_empty() || b.len() > MAX_BLOB_NAME || !b.bytes().all(|c| c.is_ascii_graphic()))
        {
            return Err(err(alloc::format!("blob={b}: want the name of a boot-image file (1-{MAX_BLOB_NAME} printable characters)")));
        }
        // I/O ports: a range inside the 64 Ki ports (the kernel keeps its
        // own out of any range at every access).
        let ioport = match get("ioport") {
            None => None,
            Some(v) => {
                let bad = || err(alloc::format!("ioport={v}: want BASE+COUNT, 1 or more ports below 0x10000 (decimal or 0x hex)"));
                let (b, n) = v.split_once('+').ok_or_else(bad)?;
                let (b, n) = (number(b).ok_or_else(bad)?, number(n).ok_or_else(bad)?);
                if n == 0 || b >= 0x10000 || n > 0x10000 - b {
                    return Err(bad());
                }
                Some((b, n))
            }
        };
        let budget = get("budget").map(check_budget).transpose().map_err(err)?;
        d.entries.push(Entry {
            line,
            kind: if keyword == "server" { Kind::Server } else { Kind::Program },
            name: String::from(name),
            program: String::from(program),
            bank,
            limit,
            frames: num("frames", 0, 65536)?.unwrap_or(DEFAULT_FRAMES),
            uses,
            console: get("console").is_some(),
            terminal: get("terminal").is_some(),
            arg: num("arg", 0, u64::MAX)?.unwrap_or(0),
            restart: num("restart", 0, MAX_RESTART)?.unwrap_or(0),
            backoff: num("backoff", 0, MAX_BACKOFF)?.unwrap_or(0),
            devmem: get("devmem").is_some(),
            interrupt: get("interrupt").is_some(),
            ioport,
            timer: get("timer").is_some(),
            tpm: get("tpm").is_some(),
            notify: get("notify").is_some(),
            grants,
            blob,
            checkpoint: get("checkpoint").is_some(),
            budget,
            priority: num("priority", 0, 31)?,
            passive: get("passive").is_some(),
        });
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
# banks
bank services limit=3000
bank apps limit=0x800 in=services   # a sub-bank

server counter program=counter bank=services limit=600 restart=2 backoff=50 arg=0x1007 supervisor=init
program counter-client program=counter-client bank=apps limit=600 frames=32 uses=counter console
";

    #[test]
    fn parses_banks_servers_and_programs() {
        let d = parse(GOOD).unwrap();
        assert_eq!(d.banks.len(), 2);
        assert_eq!(d.banks[1], Bank { line: 3, name: "apps".into(), limit: 0x800, parent: Some(0) });
        assert_eq!(d.entries.len(), 2);
        let s = &d.entries[0];
        assert_eq!((s.kind, s.line, s.bank, s.limit, s.frames, s.restart, s.console), (Kind::Server, 5, Some(0), 600, 64, 2, false));
        assert_eq!((s.backoff, s.arg), (50, 0x1007));
        let p = &d.entries[1];
        assert_eq!((p.kind, p.bank, p.frames, p.console), (Kind::Program, Some(1), 32, true));
        assert_eq!(p.uses, vec![0]);
        assert_eq!(d.entry("counter-client").map(|(i, _)| i), Some(1));
        assert_eq!((s.blob.as_deref(), p.blob.as_deref()), (None, None));
    }

    #[test]
    fn terminal_is_a_word_of_servers_and_programs() {
        let d = parse("server w program=w bank=prime limit=5 console terminal\nprogram h program=h bank=prime limit=5 terminal\n").unwrap();
        assert_eq!((d.entries[0].console, d.entries[0].terminal), (true, true));
        assert_eq!((d.entries[1].console, d.entries[1].terminal), (false, true));
        let d = parse(GOOD).unwrap();
        assert!(!d.entries[0].terminal && !d.entries[1].terminal);
    }

    #[test]
    fn parses_a_blob() {
        let d = parse("server w program=workhorse bank=prime limit=9 blob=linux-rootfs.tar.gz\nprogram p program=x bank=prime limit=1 blob=x.bin\n").unwrap();
        assert_eq!(d.entries[0].blob.as_deref(), Some("linux-rootfs.tar.gz"));
        assert_eq!(d.entries[1].blob.as_deref(), Some("x.bin"));
        assert!(!d.entries[0].timer);
        assert!(parse("program p program=x bank=prime limit=1 timer\n").unwrap().entries[0].timer);
    }

    #[test]
    fn parses_a_budget() {
        let d = parse("server s program=x bank=prime limit=9 budget=2000/10000\nprogram p program=y bank=prime limit=1 budget=100/1000\nprogram q program=y bank=prime limit=1\n").unwrap();
        assert_eq!(d.entries[0].budget, Some((2000, 10000)));
        assert_eq!(d.entries[1].budget, Some((100, 1000)));
        assert_eq!(d.entries[2].budget, None);
        assert_eq!((d.entries[0].priority, d.entries[2].priority), (None, None));
        assert_eq!(check_budget("10000000/10000000"), Ok((10_000_000, 10_000_000)));
        assert_eq!(check_budget("0x64/0x3e8"), Ok((100, 1000)));
    }

    #[test]
    fn refuses_a_bad_budget() {
        for v in ["", "5", "/", "1000/", "/1000", "0/1000", "99/1000", "1001/1000", "100/999", "100/10000001", "0/0", "a/b", "1/2/3", "-1/1000"] {
            assert!(check_budget(v).is_err(), "budget={v} accepted");
            refused(&alloc::format!("program p program=y bank=prime limit=1 budget={v}\n"), 1, "budget=");
        }
        refused("persistent p program=y limit=1 budget=100/1000\n", 1, "budget");
        refused("bank b limit=1 budget=100/1000\n", 1, "budget");
        assert!(parse("program budget program=y bank=prime limit=1\n").is_err());
    }

    #[test]
    fn parses_passive() {
        let d = parse("server s program=x bank=prime limit=9 passive\nprogram p program=y bank=prime limit=1 passive budget=100/1000\nprogram q program=y bank=prime limit=1\n").unwrap();
        assert_eq!((d.entries[0].passive, d.entries[1].passive, d.entries[2].passive), (true, true, false));
        refused("persistent p program=y limit=1 passive\n", 1, "passive");
        refused("bank b limit=1 passive\n", 1, "passive");
        assert!(parse("program passive program=y bank=prime limit=1\n").is_err());
    }

    #[test]
    fn parses_a_priority() {
        let d = parse("server s program=x bank=prime limit=9 priority=20 budget=300/1000\nprogram p program=y bank=prime limit=1 priority=0x1f\n").unwrap();
        assert_eq!((d.entries[0].priority, d.entries[1].priority), (Some(20), Some(31)));
        for v in ["32", "-1", "x", ""] {
            refused(&alloc::format!("program p program=y bank=prime limit=1 priority={v}\n"), 1, "priority=");
        }
        refused("persistent p program=y limit=1 priority=3\n", 1, "priority");
        assert!(parse("program priority program=y bank=prime limit=1\n").is_err());
    }

    #[test]
    fn parses_notify() {
        let d = parse("server n program=net bank=prime limit=9 notify\nserver m program=x bank=prime limit=9\n").unwrap();
        assert!(d.entries[0].notify && !d.entries[1].notify);
        refused("server n program=net bank=prime limit=9 notify=1\n", 1, "no value");
        refused("program p program=x bank=prime limit=1 notify\n", 1, "not an option of program");
        refused("server notify program=x bank=prime limit=1\n", 1, "option's word");
    }

    fn refused(text: &str, line: usize, needle: &str) {
        let e = parse(text).expect_err(text);
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.what.contains(needle), "{text}: '{e}' does not say '{needle}'");
    }

    #[test]
    fn refuses_each_mistake_naming_its_line() {
        refused("bank a limit=1\nfrobnicate x\n", 2, "unknown statement");
        refused("bank\n", 1, "without a name");
        refused("bank Big limit=1\n", 1, "not a name");
        refused("bank prime limit=1\n", 1, "not a name");
        refused("bank abcdefghijklmnopq limit=1\n", 1, "not a name");
        refused("bank a\n", 1, "limit=FRAMES is missing");
        refused("bank a limit=0\n", 1, "limit=0");
        refused("bank a limit=x\n", 1, "limit=x");
        refused("bank a limit=99999999999\n", 1, "limit=");
        refused("bank a limit=1 limit=2\n", 1, "twice");
        refused("bank a limit=1\nbank a limit=1\n", 2, "declared twice");
        refused("bank a limit=1 in=b\n", 1, "no bank 'b'");
        refused("bank a limit=1 colour=red\n", 1, "not an option");
        refused("server s bank=prime limit=5\n", 1, "program=PROG is missing");
        refused("server s program=p limit=5\n", 1, "bank=BANK is missing");
        refused("server s program=p bank=nowhere limit=5\n", 1, "no bank 'nowhere'");
        refused("program c program=p bank=prime limit=5 uses=s\n", 1, "no server 's'");
        refused("program c program=p bank=prime limit=5\nprogram d program=p bank=prime limit=5 uses=c\n", 2, "no server 'c'");
        refused("server s program=p bank=prime limit=5\nprogram c program=p bank=prime limit=5 uses=s,s\n", 2, "twice");
        refused("server s program=p bank=prime limit=5 supervisor=s\n", 1, "only init");
        refused("server s program=p bank=prime limit=5 supervisor=root\n", 1, "only init");
        refused("server s program=p bank=prime limit=5 backoff=60001\n", 1, "backoff=60001");
        refused("server s program=p bank=prime limit=5 arg=x\n", 1, "arg=x");
        refused("program c program=p bank=prime limit=5 backoff=1\n", 1, "not an option of program");
        refused("server s program=p bank=prime limit=5 restart=-1\n", 1, "restart=-1");
        refused("server s program=p bank=prime limit=5 frames=70000\n", 1, "frames=70000");
        refused("program c program=p bank=prime limit=5 restart=1\n", 1, "not an option of program");
        refused("program c program=p bank=prime limit=5 console=yes\n", 1, "no value");
        refused("program c program=p bank=prime limit=5 terminal=2\n", 1, "no value");
        refused("server terminal program=p bank=prime limit=5\n", 1, "option's word");
        refused("server s program=p bank=prime limit=5 blob\n", 1, "blob=: want the name");
        refused("server s program=p bank=prime limit=5 blob=\n", 1, "blob=: want the name");
        refused(&format!("server s program=p bank=prime limit=5 blob={}\n", "x".repeat(MAX_BLOB_NAME + 1)), 1, "want the name");
        refused("server s program=p bank=prime limit=5 blob=a blob=b\n", 1, "twice");
        refused("bank b limit=5 blob=x\n", 1, "not an option of bank");
        refused("server blob program=p bank=prime limit=5\n", 1, "option's word");
        refused("server s program=p bank=prime limit=5 timer=1\n", 1, "no value");
        refused("server s program=p bank=prime limit=5\nserver s program=p bank=prime limit=5\n", 2, "declared twice");
    }

    /// `n` banks, then `servers` servers and `programs` programs.
    fn sized(banks: usize, servers: usize, programs: usize) -> String {
        let mut t: String = (0..banks).map(|i| format!("bank b{i} limit=1\n")).collect();
        t += &(0..servers).map(|i| format!("server s{i} program=x bank=prime limit=1\n")).collect::<String>();
        t += &(0..programs).map(|i| format!("program p{i} program=x bank=prime limit=1\n")).collect::<String>();
        t
    }

    #[test]
    fn takes_the_largest_description_and_refuses_one_more() {
        let d = parse(&sized(MAX_BANKS, MAX_SERVERS, MAX_ENTRIES - MAX_SERVERS)).unwrap();
        assert_eq!((d.banks.len(), d.entries.len()), (MAX_BANKS, MAX_ENTRIES));
        assert_eq!(d.entries.iter().filter(|e| e.kind == Kind::Server).count(), MAX_SERVERS);
        refused(&sized(MAX_BANKS + 1, 0, 0), MAX_BANKS + 1, &format!("more than {MAX_BANKS} banks"));
        refused(&sized(0, 0, MAX_ENTRIES + 1), MAX_ENTRIES + 1, &format!("more than {MAX_ENTRIES} servers and programs"));
        refused(&sized(0, MAX_SERVERS, MAX_ENTRIES - MAX_SERVERS + 1), MAX_ENTRIES + 1, "more than 64 servers and programs");
        refused(&sized(0, MAX_SERVERS + 1, 0), MAX_SERVERS + 1, &format!("more than {MAX_SERVERS} servers"));
        // The limits are those init's layout and the docs give.
        assert_eq!((MAX_ENTRIES, MAX_SERVERS, MAX_BANKS), (64, 32, 64));
    }

    const DEVICES: &str = "\
bank drivers limit=4000
server pci program=pci bank=drivers limit=600 devmem interrupt restart=3
server dataspace program=dataspace bank=drivers limit=900
server blk program=blk bank=drivers limit=900 uses=pci,dataspace pci=id:1af4:1042 restart=3
program disk-a program=disktest bank=drivers limit=600 uses=blk,dataspace blk=4096+2048:rw console
program disk-b program=disktest bank=drivers limit=600 uses=blk blk=0+64:r timer
";

    #[test]
    fn parses_devices_and_grants() {
        let d = parse(DEVICES).unwrap();
        let pci = &d.entries[0];
        assert!(pci.devmem && pci.interrupt && !pci.timer && pci.grants.is_empty());
        let blk = &d.entries[2];
        assert!(!blk.devmem && !blk.interrupt);
        assert_eq!(blk.uses, vec![0, 1]);
        assert_eq!(blk.grant(0), Some("id:1af4:1042"));
        assert_eq!(blk.grant(1), None);
        assert_eq!(d.entries[3].grant(2), Some("4096+2048:rw"));
        assert_eq!(d.entries[4].grant(2), Some("0+64:r"));
        assert!(d.entries[4].timer);
        assert_eq!((pci.ioport, blk.ioport), (None, None));
        let d = parse("server rtc program=rtc bank=prime limit=5 ioport=0x70+2\nserver x program=x bank=prime limit=5 ioport=0+65536\n").unwrap();
        assert_eq!((d.entries[0].ioport, d.entries[1].ioport), (Some((0x70, 2)), Some((0, 0x10000))));
    }

    #[test]
    fn refuses_each_device_mistake_naming_its_line() {
        let head = "server pci program=pci bank=prime limit=5 devmem interrupt\nserver blk program=blk bank=prime limit=5 uses=pci pci=class:01\n";
        let with = |line: &str| format!("{head}{line}\n");
        refused(&with("program c program=p bank=prime limit=5 devmem"), 3, "not an option of program");
        refused(&with("program c program=p bank=prime limit=5 interrupt"), 3, "not an option of program");
        refused(&with("server c program=p bank=prime limit=5 devmem=yes"), 3, "no value");
        refused(&with("server c program=p bank=prime limit=5 timer=1"), 3, "no value");
        // I/O ports: servers only, a range of at least one port below 0x10000.
        refused(&with("program c program=p bank=prime limit=5 ioport=0x70+2"), 3, "not an option of program");
        for bad in ["ioport", "ioport=", "ioport=0x70", "ioport=0x70+0", "ioport=0x70+x", "ioport=0xffff+2", "ioport=0x10000+1", "ioport=-1+2"] {
            refused(&with(&format!("server c program=p bank=prime limit=5 {bad}")), 3, "want BASE+COUNT");
        }
        refused(&with("server c program=p bank=prime limit=5 ioport=0x70+2 ioport=0x70+2"), 3, "twice");
        // The TPM: a flag of servers and programs, no value.
        let d = parse("program a program=p bank=prime limit=5 tpm\nserver b program=p bank=prime limit=5 tpm\nprogram c program=p bank=prime limit=5\n").unwrap();
        assert!(d.entries[0].tpm && d.entries[1].tpm && !d.entries[2].tpm);
        let d = parse("server a program=p bank=prime limit=5 checkpoint\npersistent t program=tally limit=50 arg=9 console timer\n").unwrap();
        assert!(d.entries[0].checkpoint);
        assert_eq!(d.persistent.len(), 1);
        let t = &d.persistent[0];
        assert!(t.name == "t" && t.program == "tally" && t.limit == 50 && t.arg == 9 && t.console && t.timer);
        refused("program a program=p bank=prime limit=5 checkpoint\n", 1, "not an option of program");
        refused("server a program=p bank=prime limit=5 checkpoint=1\n", 1, "no value");
        refused("persistent t program=tally limit=5 bank=apps\n", 1, "not an option of persistent");
        refused("persistent t program=tally limit=5 uses=blk\n", 1, "not an option of persistent");
        refused("persistent t limit=5\n", 1, "program=PROG is missing");
        refused("persistent t program=tally\n", 1, "limit=FRAMES is missing");
        refused("persistent t program=tally limit=70000\n", 1, "at most 65536");
        refused("persistent t program=tally limit=5 timer=1\n", 1, "no value");
        refused("persistent t program=p limit=5\nprogram t program=p bank=prime limit=5\n", 2, "declared twice");
        refused("program t program=p bank=prime limit=5\npersistent t program=p limit=5\n", 2, "declared twice");
        refused(&with("program c program=p bank=prime limit=5 tpm=yes"), 3, "no value");
        refused("program tpm program=p bank=prime limit=5\n", 1, "option's word");
        refused("server ioport program=p bank=prime limit=5\n", 1, "option's word");
        // Nobody is given the memory pool: every frame is a bank's.
        refused(&with("server c program=p bank=prime limit=5 memory"), 3, "memory: no program is given the memory pool");
        refused(&with("program c program=p bank=prime limit=5 memory"), 3, "memory: no program is given the memory pool");
        refused(&with("program c program=p bank=prime limit=5 uses=blk"), 3, "needs blk=GRANT");
        refused(&with("program c program=p bank=prime limit=5 blk=0+8:r"), 3, "nor a server in its uses");
        refused(&with("program c program=p bank=prime limit=5 uses=blk blk=0+8"), 3, "blk=0+8");
        refused(&with("program c program=p bank=prime limit=5 uses=blk blk=0+8:x"), 3, "FIRST+SECTORS");
        refused(&with("program c program=p bank=prime limit=5 uses=blk blk=0+0:r"), 3, "empty");
        refused(&with("program c program=p bank=prime limit=5 uses=blk blk=0+8:r blk=8+8:r"), 3, "twice");
        refused(&with("server d program=blk bank=prime limit=5 uses=pci pci=id:1af4"), 3, "id:VVVV:DDDD");
        refused(&with("server d program=blk bank=prime limit=5 uses=pci pci=at:00:40.0"), 3, "at:BB:DD.F");
        refused(&with("server d program=blk bank=prime limit=5 uses=pci"), 3, "needs pci=GRANT");
        refused("server s program=counter bank=prime limit=5\nprogram c program=p bank=prime limit=5 uses=s s=1\n", 2, "takes no grant");
        refused("server memory program=p bank=prime limit=5\n", 1, "option's word");
        refused("program uses program=p bank=prime limit=5\n", 1, "option's word");
        // Network stacks: an address each, and no address twice per server.
        let net = "server net program=net bank=prime limit=5 uses=pci pci=id:1af4:1041\nserver net2 program=net bank=prime limit=5 uses=pci pci=id:1af4:1041\nserver a program=netstack bank=prime limit=5 uses=net net=10.0.2.15\n";
        let with_net = |line: &str| format!("{head}{net}{line}\n");
        refused(&with_net("server b program=netstack bank=prime limit=5 uses=net"), 6, "needs net=GRANT");
        refused(&with_net("server b program=netstack bank=prime limit=5 uses=net net=10.0.2"), 6, "net=10.0.2");
        refused(&with_net("server b program=netstack bank=prime limit=5 uses=net net=10.0.2.256"), 6, "IPv4");
        refused(&with_net("server b program=netstack bank=prime limit=5 uses=net net=0.0.0.0"), 6, "IPv4");
        refused(&with_net("server b program=netstack bank=prime limit=5 uses=net net=10.0.2.15"), 6, "'a' (line 5) has this address");
        refused(&with_net("program b program=netstack bank=prime limit=5 uses=net net=010.0.2.15"), 6, "'a' (line 5) has this address");
        let d = parse(&with_net("server b program=netstack bank=prime limit=5 uses=net2 net2=10.0.2.15")).unwrap();
        assert_eq!(d.entries[5].grant(3), Some("10.0.2.15"), "another network server may give the same address");
        let d = parse(&with_net("server b program=netstack bank=prime limit=5 uses=net net=10.0.2.16 arg=3")).unwrap();
        assert_eq!((d.entries[5].grant(2), d.entries[5].arg), (Some("10.0.2.16"), 3));
        // A grant for a server of the description must come after uses= names it.
        refused(&with("program c program=p bank=prime limit=5 uses=pci pci=xyz"), 3, "pci=xyz");
    }

    #[test]
    fn comments_and_blank_lines_are_nothing() {
        assert_eq!(parse("\n   # only a comment\n\t\n").unwrap(), Description::default());
    }
}

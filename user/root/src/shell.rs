//! The interactive shell on vt1, its terminal of the console multiplexer
//! (terminals.rs), or on the kernel's console when the multiplexer is not
//! there.  The kernel does not echo;
//! the line editor (`keep-lineedit`: cursor keys, history, Tab completion)
//! echoes and redraws.  Programs run in the foreground (Ctrl-C stops them)
//! or, with a trailing `&`, in the background, where the shell keeps them
//! as jobs: `ps` marks them, `kill` ends them, and the shell reports and
//! destroys them when they end.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{
    ACCOUNT, CONSOLE, Error, KERNEL, MEMORY, ProcInfo, Status, TIMER, info, memtype, memtype_name,
    state, state_name,
};
use keep_lineedit::{Completer, Editor};
use keep_loader::{BootImage, Child};
use keep_rt::console::write_bytes;
use keep_rt::{print, println};

use crate::{MIB, Root, bench};

const PROMPT: &str = "keep> ";
/// How often the shell looks at its background programs while it waits
/// for input, and at a foreground program (for Ctrl-C).
const JOB_POLL_MS: u64 = 50;
const FOREGROUND_POLL_MS: u64 = 10;

struct Command {
    name: &'static str,
    usage: &'static str,
    /// One line for the list (at most 45 characters, to fit 80 columns).
    what: &'static str,
    /// More lines for `help <command>`.
    more: &'static [&'static str],
}

const fn cmd(
    name: &'static str,
    usage: &'static str,
    what: &'static str,
    more: &'static [&'static str],
) -> Command {
    Command {
        name,
        usage,
        what,
        more,
    }
}

/// In the order `help` lists them.
const COMMANDS: &[Command] = &[
    cmd(
        "help",
        "help [command]",
        "list the commands, or describe one",
        &[],
    ),
    cmd(
        "programs",
        "programs",
        "list the programs in the boot image",
        &[
            "Also called ls.  Files in the image that are not programs (pfilter's",
            "filter modules) are listed apart.",
        ],
    ),
    cmd(
        "run",
        "run <program> [arg0 [arg1]] [&]",
        "run a program; & runs it in the background",
        &[
            "Loads the program from the boot image with arg0 and arg1 (decimal or",
            "0x hex) in rdi and rsi, waits for it to end and shows how it ended;",
            "Ctrl-C stops it.  With a trailing & the prompt comes back at once:",
            "ps marks the program bg, kill stops it, and the shell reports when it",
            "ends.  'run hello 3 0 &' is a program that sleeps until killed.",
        ],
    ),
    cmd(
        "ps",
        "ps",
        "list processes (bg: started with run ... &)",
        &[
            "Columns: pid, state, priority, name.  Then the programs of the system",
            "description: kind, bank, limit, supervisor, restarts, state.  init",
            "supervises the servers: one that ends is restarted at once (or after",
            "its backoff) and reported, whatever the shell is doing; 'restarting'",
            "is a server waiting out its backoff, 'down' one past its restarts.",
        ],
    ),
    cmd(
        "kill",
        "kill <pid> | kill <server> [ms] | kill init",
        "stop a program started with run ... &, a server, or init",
        &[
            "Stops and destroys it; the shell holds capabilities only to the",
            "programs it started, so it can kill no other process.  A server of",
            "the system description is killed by its supervisor (init), which",
            "destroys its instance at once and restarts it as for a crash.  With",
            "ms (at most 60000), init kills it that long from now and the prompt",
            "comes back at once: a server that has the screen (the workhorse",
            "while a Linux program runs) cannot be killed from the prompt then.",
            "kill init destroys init, as a crash of it would; the root task, its",
            "supervisor, then shuts the whole system down and builds it again from",
            "the description (at most 3 times).",
        ],
    ),
    cmd(
        "uptime",
        "uptime",
        "show the time since boot",
        &["From the TIMER: hours:minutes:seconds, milliseconds and timer ticks."],
    ),
    cmd(
        "date",
        "date",
        "show the date and time (UTC)",
        &[
            "Asks the wall clock server of the system description (rtc, the",
            "driver of the CMOS real-time clock) for the time, as Linux programs",
            "get it from the workhorse (docs/devices.md, \"The wall clock\").",
        ],
    ),
    cmd(
        "vt",
        "vt",
        "list the terminals and which has the screen",
        &[
            "Also called terminals.  The console multiplexer alone reads the",
            "console; this shell, the workhorse and every server that prints get",
            "a terminal of it.  Ctrl-T and a number give that terminal the screen",
            "(Ctrl-T Ctrl-T sends one Ctrl-T); each switch prints a line starting",
            "with \u{258c} that no program can write (docs/trusted-core.md).",
        ],
    ),
    cmd(
        "mem",
        "mem",
        "show memory map, free memory, banks, accounts",
        &[
            "After the memory map: the space banks (limit, used, sub-banks, objects),",
            "the tree from the prime bank, and every account allocated from a bank",
            "(free, used, frames taken back while live, processes exported now).",
        ],
    ),
    cmd(
        "tpm",
        "tpm [seal TEXT | blob [HEX] | unseal | extend TEXT | increment | random]",
        "show the measured boot's PCRs, log and NV counter",
        &[
            "Asks the TPM's driver (docs/trusted-core.md): PCRs 8 and 9, the",
            "measurement log and the NV monotonic counter.  seal TEXT seals it to",
            "PCRs 8 and 9 and prints the blob; blob HEX puts one back (blob alone",
            "empties it); unseal unseals it; extend TEXT extends PCR 9; increment",
            "adds one to the counter; random shows 16 bytes from the TPM.",
        ],
    ),
    cmd(
        "devices",
        "devices",
        "show the IOMMU and the PCI functions",
        &[
            "Asks the PCI server of the system description (or starts one for the",
            "listing when there is none), and shows which functions each described",
            "driver may open (docs/devices.md).",
        ],
    ),
    cmd(
        "disk",
        "disk",
        "show the block server, its clients and their ranges",
        &[
            "The block server of the system description: its restarts, the requests",
            "its current instance served and refused, and each client with its",
            "range, rights, requests and attached buffers (\"at end\": those the",
            "server let go when init said the client ended); then every grant of the",
            "description (docs/devices.md, \"Devices from the description\").",
        ],
    ),
    cmd(
        "net",
        "net",
        "show the network server and its stacks",
        &[
            "The network server of the system description: its restarts, frames",
            "to and from the NIC and dropped, and each stack of the description",
            "with its address (its net= grant) and state (docs/devices.md, \"The",
            "network\").  The stacks' status lines: port 8 of each address.",
        ],
    ),
    cmd(
        "checkpoint",
        "checkpoint [server]",
        "take a checkpoint now",
        &[
            "Asks the checkpointer of the system description (or the one named) to",
            "commit a checkpoint to its area of the disk now, and shows its sequence",
            "number and the pages and blocks it wrote; a full area or a failed write",
            "is an error and the previous checkpoint stays (docs/persistence.md).",
        ],
    ),
    cmd(
        "persist",
        "persist [server]",
        "show the last checkpoint and the area",
        &[
            "The checkpointer's last committed checkpoint (sequence, time, pages,",
            "size, pages written), its area's size and free blocks, what each of",
            "the two roots holds, and what it found at its start: the checkpoint",
            "it resumed, or why it fell back or started afresh.",
        ],
    ),
    cmd(
        "vault",
        "vault",
        "show the vault's store (no secrets)",
        &[
            "The vault of the system description (docs/trusted-core.md, \"Secure",
            "storage\"): its state (unsealed, or why it refuses: sealed elsewhere,",
            "rollback, damaged, no TPM), the store's and the TPM's counters, its two",
            "slots, and each client's number of keys and bytes; never a name or a",
            "value.",
        ],
    ),
    cmd("test", "test", "run the in-guest test suite (ktest)", &[]),
    cmd(
        "bench",
        "bench [name|prefix*]",
        "run all, one, or a prefix* of the benchmarks",
        &[],
    ),
    cmd(
        "history",
        "history",
        "list the lines entered (Up/Down recall them)",
        &[],
    ),
    cmd(
        "linux",
        "linux [program [args]]",
        "run a Linux program (busybox applets...)",
        &[
            "Runs it in the workhorse, the Linux personality server, with the",
            "console as its terminal; the prompt comes back when it ends.  Words",
            "are split as sh does (quotes); the program is looked up in /bin.",
            "Without arguments: the system calls refused so far.  'sh' is",
            "'linux sh', busybox's shell.  docs/workhorse.md tells more.",
        ],
    ),
    cmd("sh", "sh [args]", "busybox's shell in the workhorse", &[]),
    cmd("echo", "echo <text>", "print the text", &[]),
    cmd("halt", "halt", "power the machine off", &[]),
];

/// Other names of commands.
const ALIASES: &[(&str, &str)] = &[("ls", "programs")];

fn find_command(name: &str) -> Option<&'static Command> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, real)| real);
    COMMANDS.iter().find(|c| c.name == name)
}

/// A program started with `run ... &`.
struct Job {
    pid: u32,
    name: String,
    child: Child,
}

struct Shell<'r> {
    root: &'r mut Root,
    editor: Editor,
    jobs: Vec<Job>,
    /// Input read but not yet edited (typed while a program ran).
    pending: VecDeque<u8>,
}

/// What Tab completes: command names first, program names after `run `,
/// command names after `help `, job pids after `kill `.
struct Words<'a> {
    image: Option<&'a BootImage<'static>>,
    jobs: &'a [Job],
}

impl Completer for Words<'_> {
    fn candidates(&self, before: &str, out: &mut Vec<String>) {
        let mut words = before.split_whitespace();
        match (words.next(), words.next()) {
            (None, _) => {
                out.extend(COMMANDS.iter().map(|c| String::from(c.name)));
                out.extend(ALIASES.iter().map(|(a, _)| String::from(*a)));
            }
            (Some("run"), None) => {
                if let Some(img) = self.image {
                    out.extend(
                        program_names(img)
                            .filter(|&p| p != "root")
                            .map(String::from),
                    );
                }
            }
            (Some("help"), None) => out.extend(COMMANDS.iter().map(|c| String::from(c.name))),
            (Some("kill"), None) => {
                out.extend(self.jobs.iter().map(|j| alloc::format!("{}", j.pid)))
            }
            _ => {}
        }
    }
}

/// Whether a boot-image entry is a program (an ELF file; the image also
/// carries data such as pfilter's filter modules).
fn is_program(e: &keep_loader::bootimg::Entry) -> bool {
    e.data.starts_with(b"\x7fELF")
}

/// The boot image's programs.
fn program_names<'a>(img: &'a BootImage<'static>) -> impl Iterator<Item = &'a str> + 'a {
    img.entries().filter(is_program).map(|e| e.name)
}

/// Reads what was typed: from vt1 when the console multiplexer runs
/// (waiting on its notification, never polling, unless `nonblocking`),
/// else from the kernel's console.
fn console_read(root: &Root, buf: &mut [u8], nonblocking: bool) -> Result<usize, Error> {
    match root.mux.as_ref() {
        Some(m) => m.read(buf, nonblocking),
        None => CONSOLE.read(buf, nonblocking),
    }
}

fn flush(out: &mut Vec<u8>) {
    if !out.is_empty() {
        write_bytes(out);
        out.clear();
    }
}

pub fn run(root: &mut Root) -> i32 {
    println!("type 'help' for the list of commands");
    let mut sh = Shell {
        root,
        editor: Editor::new(PROMPT),
        jobs: Vec::new(),
        pending: VecDeque::new(),
    };
    let mut out = Vec::new();
    sh.editor.begin(&mut out);
    flush(&mut out);
    loop {
        if sh.pending.is_empty()
            && let Err(e) = sh.read_input()
        {
            println!("shell: console read failed: {e}");
            return 1;
        }
        while let Some(b) = sh.pending.pop_front() {
            let words = Words {
                image: sh.root.image.as_ref(),
                jobs: &sh.jobs,
            };
            if let Some(line) = sh.editor.feed(b, &mut out, &words) {
                flush(&mut out);
                sh.execute(&line);
                sh.reap(false);
                crate::shell_system::supervise_init(sh.root);
                sh.editor.begin(&mut out);
            }
        }
        flush(&mut out);
    }
}

impl Shell<'_> {
    /// Reads console input into `pending`.  With background programs the
    /// shell polls, so that it can report them when they end.
    fn read_input(&mut self) -> Result<(), Error> {
        let mut buf = [0u8; 64];
        loop {
            let poll = !self.jobs.is_empty();
            let r = console_read(self.root, &mut buf, poll);
            match r {
                Ok(n) => {
                    self.pending.extend(&buf[..n.min(buf.len())]);
                    return Ok(());
                }
                Err(Error::WOULD_BLOCK) => {
                    self.reap(true);
                    if self.root.system.as_ref().is_some_and(|s| s.init_ended().is_some()) {
                        let mut out = Vec::new();
                        self.editor.clear_row(&mut out);
                        flush(&mut out);
                        crate::shell_system::supervise_init(self.root);
                        self.editor.redraw(&mut out);
                        flush(&mut out);
                    }
                    if poll {
                        let _ = TIMER.sleep(JOB_POLL_MS);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Reports and destroys the background programs that have ended.  With
    /// `at_prompt`, the report replaces the prompt's row, which is then
    /// drawn again below it.
    fn reap(&mut self, at_prompt: bool) {
        let mut i = 0;
        while i < self.jobs.len() {
            let ended = match self.jobs[i].child.process.status() {
                Ok(s) if s.state == state::EXITED || s.state == state::FAULTED => Some(Ok(s)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            };
            let Some(how) = ended else {
                i += 1;
                continue;
            };
            let job = self.jobs.remove(i);
            let mut out = Vec::new();
            if at_prompt {
                self.editor.clear_row(&mut out);
                flush(&mut out);
            }
            match how {
                Ok(s) => println!("[{}] {} {s}", job.pid, job.name),
                Err(e) => println!("[{}] {}: STATUS failed: {e}", job.pid, job.name),
            }
            self.root.destroy(&job.name, job.child);
            if at_prompt {
                self.editor.redraw(&mut out);
                flush(&mut out);
            }
        }
    }

    fn execute(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        let Some(cmd) = words.next() else { return };
        match cmd {
            "help" => help(words.next()),
            "programs" | "ls" => programs(self.root.image.as_ref()),
            "ps" => {
                ps(&self.jobs);
                crate::shell_system::ps(self.root);
            }
            "kill" => self.kill(words.next(), words.next()),
            "uptime" => uptime(),
            "date" => crate::devices::date(self.root),
            "vt" | "terminals" => crate::terminals::list(self.root),
            "mem" => {
                mem();
                crate::shell_system::mem(self.root);
            }
            "devices" => crate::devices::show(self.root),
            "tpm" => crate::measure::command(self.root, line.trim_start().strip_prefix("tpm").unwrap_or("")),
            "disk" => crate::devices::disk(self.root),
            "net" => crate::devices::net(self.root),
            "checkpoint" => crate::checkpoint::checkpoint(self.root, words.next()),
            "persist" => crate::checkpoint::persist(self.root, words.next()),
            "vault" => crate::vault::vault(self.root),
            "test" => {
                self.root.test();
            }
            "bench" => bench::run_all(self.root, words.next()),
            "history" => {
                for (i, l) in self.editor.history().enumerate() {
                    println!("  {:>3}  {l}", i + 1);
                }
            }
            "halt" => {
                println!("powering off");
                let e = KERNEL.poweroff();
                println!("halt: POWEROFF failed: {e}");
            }
            "echo" => {
                let rest = line.trim_start()[4..].trim_start();
                println!("{rest}");
            }
            "run" => self.run(line.trim_start()[3..].trim()),
            // What was typed after the command line is the program's input.
            "linux" => {
                let args = line.trim_start()[5..].trim();
                let ahead: Vec<u8> = if args.is_empty() { Vec::new() } else { self.pending.drain(..).collect() };
                self.root.linux(args, &ahead)
            }
            "sh" => {
                let ahead: Vec<u8> = self.pending.drain(..).collect();
                self.root.linux(line.trim(), &ahead)
            }
            _ => println!("unknown command '{cmd}' — type 'help' for the list"),
        }
    }

    /// `run <program> [arg0 [arg1]] [&]`; `args` is what follows `run`.
    fn run(&mut self, args: &str) {
        let (args, background) = match args.strip_suffix('&') {
            Some(rest) => (rest.trim_end(), true),
            None => (args, false),
        };
        let mut words = args.split_whitespace();
        let Some(name) = words.next() else {
            println!("usage: {}", find_command("run").map_or("", |c| c.usage));
            return;
        };
        let mut numbers = [0u64; 2];
        for a in numbers.iter_mut() {
            if let Some(w) = words.next() {
                match parse_number(w) {
                    Some(v) => *a = v,
                    None => {
                        println!("run: '{w}' is not a number");
                        return;
                    }
                }
            }
        }
        if let Some(w) = words.next() {
            println!("run: too many arguments from '{w}' on (a program takes two numbers)");
            return;
        }
        if crate::shell_system::run(self.root, name, numbers[0], background) {
            return;
        }
        let Some(img) = &self.root.image else {
            println!("run: there is no boot image");
            return;
        };
        if name == "root" {
            println!(
                "run: root is the root task, this shell; a second one would compete for the console"
            );
            return;
        }
        if img.find(name).is_none() {
            print!("run: no program '{name}' in the boot image; there are:");
            for p in program_names(img) {
                print!(" {p}");
            }
            println!();
            return;
        }
        let Some(child) = self.root.load(name, numbers[0], numbers[1]) else {
            return;
        };
        // The loader names the process after the program; the newest
        // CREATED process of that name is this one (pids only grow).
        let pid = newest_created(name);
        if let Err(e) = child.process.start() {
            println!("run: cannot start '{name}': {e}");
            self.root.destroy(name, child);
            return;
        }
        if background {
            let Some(pid) = pid else {
                // Without a pid it could not be killed: do not keep it.
                println!("run: cannot find the pid of '{name}'; stopping it");
                self.root.destroy(name, child);
                return;
            };
            println!("[{pid}] {name} runs in the background ('kill {pid}' stops it)");
            self.jobs.push(Job {
                pid,
                name: String::from(name),
                child,
            });
            return;
        }
        match self.wait_foreground(child) {
            Ok(Some(s)) => println!("run: {name} {s}"),
            Ok(None) => println!("^C\nrun: {name} stopped"),
            Err(e) => println!("run: '{name}' could not be run: {e}"),
        }
        self.root.destroy(name, child);
    }

    /// Waits for a foreground program to end; Ctrl-C stops it (then
    /// `Ok(None)`).  Other input is kept for the editor.
    fn wait_foreground(&mut self, child: Child) -> Result<Option<Status>, Error> {
        let mut buf = [0u8; 64];
        loop {
            let s = child.process.status()?;
            if s.state == state::EXITED || s.state == state::FAULTED {
                return Ok(Some(s));
            }
            if let Ok(n) = console_read(self.root, &mut buf, true) {
                let input = &buf[..n.min(buf.len())];
                if let Some(at) = input.iter().position(|&b| b == 0x03) {
                    self.pending.extend(&input[..at]);
                    child.process.stop()?;
                    return Ok(None);
                }
                self.pending.extend(input);
            }
            let _ = TIMER.sleep(FOREGROUND_POLL_MS);
        }
    }

    fn kill(&mut self, arg: Option<&str>, delay: Option<&str>) {
        let Some(arg) = arg else {
            println!("usage: kill <pid> | kill <server> [ms]   (the pids of background programs: ps)");
            return;
        };
        if arg == "init"
            && delay.is_none()
            && let Some(sys) = self.root.system.as_ref()
        {
            match sys.kill_init() {
                Ok(()) => println!("kill: init killed; the root task, its supervisor, builds the system again"),
                Err(e) => println!("kill: init: {e}"),
            }
            return;
        }
        if let Some(sys) = self.root.system.as_ref()
            && sys.entries.iter().any(|e| e.name == arg && e.kind == keep_system::Kind::Server)
        {
            let ms = match delay.map(|d| d.parse::<u64>()) {
                None => 0,
                Some(Ok(ms)) => ms,
                Some(Err(_)) => {
                    println!("kill: '{}' is not a delay in milliseconds", delay.unwrap_or(""));
                    return;
                }
            };
            match sys.kill(arg, ms) {
                Ok(()) if ms > 0 => println!("kill: server {arg} will be killed in {ms} ms"),
                Ok(()) => println!("kill: server {arg} killed; its supervisor restarts it as its restart= says"),
                Err(e) => println!("kill: server {arg}: {e}"),
            }
            return;
        }
        if delay.is_some() {
            println!("kill: a delay is for a server of the system description");
            return;
        }
        let Some(pid) = arg.parse::<u32>().ok() else {
            println!("kill: '{arg}' is not a pid (a number, as ps shows) nor a server of the system description");
            return;
        };
        let Some(i) = self.jobs.iter().position(|j| j.pid == pid) else {
            match processes().iter().find(|p| p.pid == pid) {
                Some(p) => println!(
                    "kill: pid {pid} ({}) was not started by this shell in the background; it can stop only those",
                    p.name_str()
                ),
                None => println!("kill: no process with pid {pid}"),
            }
            return;
        };
        let job = self.jobs.remove(i);
        // ACCOUNT.DESTROY stops a running process itself; STOP first only
        // makes the order plain.
        let _ = job.child.process.stop();
        self.root.destroy(&job.name, job.child);
        println!("[{pid}] {} killed", job.name);
    }
}

/// Decimal or 0x-prefixed hexadecimal.
fn parse_number(w: &str) -> Option<u64> {
    match w.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => w.parse().ok(),
    }
}

fn help(topic: Option<&str>) {
    let Some(topic) = topic else {
        for c in COMMANDS {
            println!("  {:<32} {}", c.usage, c.what);
        }
        println!("keys: arrows, Home/End, Tab completes, Ctrl-A/E/K/U/W/Y, Ctrl-C cancels");
        println!("(under make run QEMU keeps Ctrl-A for itself: Ctrl-A a sends one)");
        return;
    };
    match find_command(topic) {
        Some(c) => {
            println!("usage: {}", c.usage);
            println!("  {}", c.what);
            for line in c.more {
                println!("  {line}");
            }
        }
        None => println!("help: no such command '{topic}' — type 'help' for the list"),
    }
}

fn programs(image: Option<&BootImage<'static>>) {
    let Some(img) = image else {
        println!("programs: there is no boot image");
        return;
    };
    println!("programs in the boot image ('run <program>' runs one):");
    for e in img.entries().filter(is_program) {
        let note = if e.name == "root" {
            "  (this shell: runs once)"
        } else {
            ""
        };
        println!(
            "  {:<16} {:>5} KiB{note}",
            e.name,
            e.data.len().div_ceil(1024)
        );
    }
    let mut others = img
        .entries()
        .filter(|e| !is_program(e))
        .peekable();
    if others.peek().is_some() {
        print!("other files:");
        for e in others {
            print!(" {}", e.name);
        }
        println!();
    }
}

/// Every live process, in pid order.
fn processes() -> Vec<ProcInfo> {
    let mut all = Vec::new();
    let mut index = 0;
    // The kernel has a bounded process table; the bound guards against a
    // `next` that does not advance.
    for _ in 0..4096 {
        let p = match KERNEL.process_info(index) {
            Ok(p) => p,
            Err(_) => break,
        };
        all.push(p);
        if p.next == 0 || p.next <= index {
            break;
        }
        index = p.next;
    }
    all
}

/// The pid of the newest CREATED process called `name` (names are kept to
/// 16 bytes).
fn newest_created(name: &str) -> Option<u32> {
    let short = &name.as_bytes()[..name.len().min(16)];
    processes()
        .iter()
        .filter(|p| p.state == state::CREATED && p.name_str().as_bytes() == short)
        .map(|p| p.pid)
        .max()
}

fn ps(jobs: &[Job]) {
    println!("  {:>5}  {:<9} {:>4}  name", "pid", "state", "prio");
    for p in processes() {
        let bg = if jobs.iter().any(|j| j.pid == p.pid) {
            "  bg"
        } else {
            ""
        };
        println!(
            "  {:>5}  {:<9} {:>4}  {}{bg}",
            p.pid,
            state_name(p.state),
            p.priority,
            p.name_str()
        );
    }
}

fn uptime() {
    match TIMER.now() {
        Ok((ms, ticks)) => {
            let s = ms / 1000;
            let days = s / 86_400;
            print!("up ");
            if days > 0 {
                print!("{days} day{}, ", if days == 1 { "" } else { "s" });
            }
            println!(
                "{}:{:02}:{:02}.{:03} ({ms} ms, {ticks} timer ticks since boot)",
                s / 3600 % 24,
                s / 60 % 60,
                s % 60,
                ms % 1000
            );
        }
        Err(e) => println!("uptime: TIMER.NOW failed: {e}"),
    }
}

fn mem() {
    println!(
        "  {:>3}  {:<18}  {:<18}  {:>10}  type",
        "#", "base", "end", "size KiB"
    );
    let mut count = 1;
    let mut i = 0;
    let mut by_type = [0u64; 5];
    while i < count {
        let e = match KERNEL.memmap(i) {
            Ok(e) => e,
            Err(err) => {
                println!("mem: MEMMAP({i}) failed: {err}");
                break;
            }
        };
        count = e.count;
        println!(
            "  {:>3}  {:#018x}  {:#018x}  {:>10}  {}",
            i,
            e.base,
            e.base.saturating_add(e.len),
            e.len / 1024,
            memtype_name(e.ty)
        );
        if let Some(t) = by_type.get_mut(e.ty as usize) {
            *t += e.len;
        }
        i += 1;
    }
    let total = KERNEL.info(info::MEM_TOTAL).unwrap_or(0);
    let free = KERNEL.info(info::MEM_FREE).unwrap_or(0);
    println!(
        "usable {} MiB, kernel {} KiB, boot image {} KiB",
        by_type[memtype::USABLE as usize] / MIB,
        by_type[memtype::KERNEL as usize] / 1024,
        by_type[memtype::BOOT_IMAGE as usize] / 1024
    );
    println!("total {} MiB, free {} MiB", total / MIB, free / MIB);
    match MEMORY.free() {
        Ok(frames) => println!(
            "memory pool: {frames} free frames ({} MiB)",
            frames * 4096 / MIB
        ),
        Err(e) => println!("memory pool: FREE failed: {e}"),
    }
    match ACCOUNT.info() {
        Ok((free, used)) => println!("root account: {free} frames free, {used} in use"),
        Err(e) => println!("root account: INFO failed: {e}"),
    }
}

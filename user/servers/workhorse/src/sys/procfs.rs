//! /proc, made when it is looked at: /proc itself (a directory of the
//! processes and the system files), /proc/self, and per process
//! /proc/PID/{stat, status, cmdline, comm, maps, environ, mounts, exe, cwd,
//! root, fd/, task/}; /dev/fd, /dev/stdin, /dev/stdout and /dev/stderr lead
//! to /proc/self/fd.  Absolute paths only (a relative path inside /proc
//! goes to the in-memory file system's empty /proc).

use super::*;
use super::object::{Object, new_obj};
use crate::linux::fs::{DT_DIR, DT_LNK, DT_REG};

/// Inode numbers of /proc entries (never the file system's).
const PROC_INO: u64 = 1 << 32;

enum PNode {
    Dir(Vec<(String, u8)>),
    File(Vec<u8>),
    /// A symbolic link to a path.
    Link(String),
    /// /proc/PID/fd/N: what descriptor N of PID refers to.
    Fd(Desc),
}

/// A /proc directory opened: its entries as they were then.
pub struct ProcDir {
    entries: Vec<(String, u64, u8)>,
}

impl Object for ProcDir {
    fn read(&mut self, _: &mut Server, _: i32, _: usize) -> Result<Vec<u8>, i64> {
        Err(EISDIR)
    }
    fn ready(&self) -> u16 {
        super::io::POLLIN
    }
    fn stat(&self) -> (u32, u64) {
        (0o040555, 0)
    }
    fn entries(&self) -> Option<Vec<(String, u64, u8)>> {
        Some(self.entries.clone())
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

/// The /proc path `path` names (with /dev/fd and friends), split in
/// components after /proc; None when it is not one.
fn components(s: &Server, pid: i32, path: &str) -> Option<Vec<String>> {
    let path = match path {
        "/dev/stdin" => "/proc/self/fd/0",
        "/dev/stdout" => "/proc/self/fd/1",
        "/dev/stderr" => "/proc/self/fd/2",
        p => p,
    };
    let rest = if let Some(r) = path.strip_prefix("/dev/fd") {
        alloc::format!("self/fd{r}")
    } else if path == "/proc" {
        String::new()
    } else {
        String::from(path.strip_prefix("/proc/")?)
    };
    let p = s.procs.get(&pid)?;
    let mut out: Vec<String> = Vec::new();
    for (i, c) in rest.split('/').filter(|c| !c.is_empty() && *c != ".").enumerate() {
        match (i, c) {
            (0, "self") => out.push(alloc::format!("{}", p.tgid)),
            (0, "thread-self") => {
                out.push(alloc::format!("{}", p.tgid));
                out.push(String::from("task"));
                out.push(alloc::format!("{}", p.pid));
            }
            (_, "..") => {
                out.pop();
            }
            _ => out.push(String::from(c)),
        }
    }
    Some(out)
}

const SYSTEM_FILES: [&str; 10] =
    ["cpuinfo", "meminfo", "uptime", "version", "mounts", "loadavg", "stat", "filesystems", "keepstore", "keepwakes"];
const PROCESS_FILES: [(&str, u8); 12] = [
    ("stat", DT_REG),
    ("status", DT_REG),
    ("cmdline", DT_REG),
    ("comm", DT_REG),
    ("maps", DT_REG),
    ("environ", DT_REG),
    ("mounts", DT_REG),
    ("exe", DT_LNK),
    ("cwd", DT_LNK),
    ("root", DT_LNK),
    ("fd", DT_DIR),
    ("task", DT_DIR),
];

fn system_file(s: &Server, name: &str) -> Option<String> {
    let kb = |frames: u64| frames * 4;
    Some(match name {
        "cpuinfo" => String::from(
            "processor\t: 0\nvendor_id\t: Keep\ncpu family\t: 6\nmodel name\t: x86-64 (Keep workhorse)\n\
             cpu MHz\t\t: 1000.000\ncache size\t: 0 KB\nflags\t\t: fpu tsc sse sse2\nbogomips\t: 2000.00\n\n",
        ),
        "meminfo" => {
            let free = crate::frames::available();
            let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).map(|b| b / 4096).unwrap_or(free);
            alloc::format!(
                "MemTotal: {:8} kB\nMemFree: {:9} kB\nMemAvailable: {:4} kB\nBuffers: {:9} kB\nCached: {:10} kB\n\
                 SwapTotal: {:7} kB\nSwapFree: {:8} kB\n",
                kb(total.max(free)),
                kb(free),
                kb(free),
                0,
                0,
                0,
                0
            )
        }
        "uptime" => {
            let ms = TIMER.now_ms().unwrap_or(0);
            alloc::format!("{}.{:02} 0.00\n", ms / 1000, ms % 1000 / 10)
        }
        "version" => String::from("Linux version 6.1.0-keep-workhorse (Keep workhorse)\n"),
        "mounts" => {
            let data = if crate::vfs::fs().store.is_some() { "keepstore /data keepstore rw 0 0\n" } else { "" };
            alloc::format!("rootfs / tmpfs rw 0 0\nproc /proc proc rw 0 0\n{data}")
        }
        // The store on the disk behind /data (docs/workhorse.md).
        "keepstore" => crate::vfs::fs().store_status().unwrap_or_else(|| String::from("none: /data is in memory\n")),
        "loadavg" => {
            let n = s.procs.values().filter(|p| p.zombie.is_none()).count();
            alloc::format!("0.00 0.00 0.00 1/{n} {}\n", s.next_pid - 1)
        }
        "stat" => {
            let ms = TIMER.now_ms().unwrap_or(0);
            alloc::format!("cpu  0 0 0 {} 0 0 0 0 0 0\ncpu0 0 0 0 {} 0 0 0 0 0 0\nbtime 0\nprocesses {}\n", ms / 10, ms / 10, s.next_pid - 1)
        }
        "filesystems" => String::from("nodev\tproc\nnodev\ttmpfs\n"),
        // The server loop's wake-ups that no call caused (wake.rs).
        "keepwakes" => crate::wake::report(),
        _ => return None,
    })
}

/// A process's state letter: R for the caller and those running, S for
/// those waiting in a call, Z for zombies.
fn state(s: &Server, tid: i32) -> char {
    let p = &s.procs[&tid];
    if p.zombie.is_some() {
        'Z'
    } else if s.current == Some(tid) || p.blocked.is_none() {
        'R'
    } else {
        'S'
    }
}

fn process_file(s: &mut Server, tid: i32, name: &str) -> Option<Vec<u8>> {
    let p = s.procs.get(&tid)?;
    let st = state(s, tid);
    let threads = s.procs.values().filter(|q| q.tgid == p.tgid && q.keep.is_some()).count().max(1);
    let (vm_kb, rss_kb) = (p.mm.reserved() / 1024, p.mm.pages.len() as u64 * 4);
    let text = match name {
        "stat" => {
            // The 52 fields of proc(5); times and faults are not counted.
            let mut f = alloc::format!(
                "{} ({}) {} {} {} {} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 {} 0 0 {} {}",
                p.pid,
                p.name,
                st,
                p.ppid,
                p.pgid,
                p.sid,
                threads,
                p.mm.reserved(),
                p.mm.pages.len()
            );
            for _ in 0..28 {
                f.push_str(" 0");
            }
            f.push('\n');
            f
        }
        "status" => alloc::format!(
            "Name:\t{}\nUmask:\t{:04o}\nState:\t{} ({})\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t0\n\
             Uid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t{}\nGroups:\t{}\nVmSize:\t{:8} kB\nVmRSS:\t{:8} kB\n\
             Threads:\t{}\nSigPnd:\t{:016x}\nSigBlk:\t{:016x}\n",
            p.name,
            p.umask,
            st,
            match st {
                'R' => "running",
                'Z' => "zombie",
                _ => "sleeping",
            },
            p.tgid,
            p.pid,
            p.ppid,
            p.cred.ruid,
            p.cred.euid,
            p.cred.suid,
            p.cred.euid,
            p.cred.rgid,
            p.cred.egid,
            p.cred.sgid,
            p.cred.egid,
            p.fds.len().max(64),
            p.cred.groups.iter().map(|g| alloc::format!("{g} ")).collect::<String>(),
            vm_kb,
            rss_kb,
            threads,
            p.pending,
            p.sigmask
        ),
        "cmdline" => return Some(p.cmdline.clone()),
        "comm" => alloc::format!("{}\n", p.name),
        "environ" => String::new(),
        "mounts" => system_file(s, "mounts")?,
        "maps" => {
            let mut m = String::new();
            for (&start, a) in &p.mm.areas {
                let r = |bit, c| if a.prot & bit != 0 { c } else { '-' };
                let what = if start < mem::STACK_TOP && a.end >= mem::STACK_TOP {
                    "[stack]"
                } else if start >= p.mm.brk_start && a.end <= p.mm.brk.next_multiple_of(PAGE) && p.mm.brk > p.mm.brk_start {
                    "[heap]"
                } else {
                    ""
                };
                m.push_str(&alloc::format!(
                    "{:08x}-{:08x} {}{}{}{} 00000000 00:00 0 {:>20}\n",
                    start,
                    a.end,
                    r(mem::PROT_READ, 'r'),
                    r(PROT_WRITE, 'w'),
                    r(mem::PROT_EXEC, 'x'),
                    if a.shared { 's' } else { 'p' },
                    what
                ));
            }
            if p.mm.areas.range(mem::TRAMPOLINE..).next().is_none() {
                m.push_str(&alloc::format!("{:08x}-{:08x} r-xp 00000000 00:00 0 {:>20}\n", mem::TRAMPOLINE, mem::GUEST_TOP, "[vdso]"));
            }
            m
        }
        _ => return None,
    };
    Some(text.into_bytes())
}

/// The path of file `ino` (a search from the root; "" when unlinked).
fn path_of_file(ino: Ino) -> String {
    let f = fs();
    if f.is_dir(ino) {
        return f.path_of(ino);
    }
    let mut stack = alloc::vec![(vfs::ROOT, String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        if let Node::Dir { entries, .. } = &f.get(dir).node {
            for (name, &i) in entries {
                let path = alloc::format!("{prefix}/{name}");
                if i == ino {
                    return path;
                }
                if f.is_dir(i) {
                    stack.push((i, path));
                }
            }
        }
    }
    String::from("(deleted)")
}

/// What a descriptor's /proc link shows.
pub(crate) fn fd_name(d: &Desc) -> String {
    let d = d.borrow();
    match &d.kind {
        Kind::File { ino } | Kind::Dir { ino } => path_of_file(*ino),
        Kind::Console => String::from("/dev/console"),
        Kind::Null => String::from("/dev/null"),
        Kind::Pipe(_, Some(ino)) => path_of_file(*ino),
        Kind::Pipe(p, None) => {
            alloc::format!("pipe:[{}]", alloc::rc::Rc::as_ptr(p) as usize / 8 % 1_000_000)
        }
        Kind::Generated(_) => String::from("anon_inode:[proc]"),
        Kind::Object(o) => o.borrow().name(),
    }
}

fn lookup(s: &mut Server, pid: i32, c: &[String]) -> Result<PNode, i64> {
    let leader = |s: &Server, n: &str| -> Result<i32, i64> {
        let t: i32 = n.parse().map_err(|_| ENOENT)?;
        match s.procs.get(&t) {
            Some(p) if p.pid == p.tgid => Ok(t),
            _ => Err(ENOENT),
        }
    };
    let c: Vec<&str> = c.iter().map(|x| x.as_str()).collect();
    // /proc/PID/task/TID/... is /proc/TID/... for a thread of PID.
    let (tid, rest): (Option<i32>, &[&str]) = match c.as_slice() {
        [] => {
            let mut v: Vec<(String, u8)> = alloc::vec![(String::from("self"), DT_LNK), (String::from("thread-self"), DT_LNK)];
            v.extend(SYSTEM_FILES.iter().map(|n| (String::from(*n), DT_REG)));
            v.extend(s.procs.values().filter(|p| p.pid == p.tgid).map(|p| (alloc::format!("{}", p.pid), DT_DIR)));
            return Ok(PNode::Dir(v));
        }
        [name] if SYSTEM_FILES.contains(name) => return Ok(PNode::File(system_file(s, name).unwrap().into_bytes())),
        [n, "task", t, rest @ ..] => {
            let l = leader(s, n)?;
            let t: i32 = t.parse().map_err(|_| ENOENT)?;
            if s.procs.get(&t).is_none_or(|p| p.tgid != l) {
                return Err(ENOENT);
            }
            (Some(t), rest)
        }
        [n, rest @ ..] => (Some(leader(s, n)?), rest),
    };
    let tid = tid.unwrap();
    let _ = pid;
    match rest {
        [] => Ok(PNode::Dir(PROCESS_FILES.iter().map(|(n, t)| (String::from(*n), *t)).collect())),
        ["exe"] => Ok(PNode::Link(s.procs[&tid].exe.clone())),
        ["cwd"] => Ok(PNode::Link(fs().path_of(s.procs[&tid].cwd))),
        ["root"] => Ok(PNode::Link(String::from("/"))),
        ["fd"] => {
            let p = &s.procs[&tid];
            Ok(PNode::Dir(
                p.fds.iter().enumerate().filter(|(_, f)| f.is_some()).map(|(i, _)| (alloc::format!("{i}"), DT_LNK)).collect(),
            ))
        }
        ["fd", n] => {
            let n: u64 = n.parse().map_err(|_| ENOENT)?;
            let p = &s.procs[&tid];
            Ok(PNode::Fd(p.fd(n).map_err(|_| ENOENT)?.desc.clone()))
        }
        ["task"] => {
            let tgid = s.procs[&tid].tgid;
            Ok(PNode::Dir(
                s.procs.values().filter(|p| p.tgid == tgid && p.keep.is_some()).map(|p| (alloc::format!("{}", p.pid), DT_DIR)).collect(),
            ))
        }
        [name] => process_file(s, tid, name).map(PNode::File).ok_or(ENOENT),
        _ => Err(ENOENT),
    }
}

/// What open of a /proc path gives.
pub(crate) enum Opened {
    Desc(Desc),
    /// Open this path instead (a link out of /proc).
    Path(String),
}

/// open of `path` when it is in /proc (None otherwise); `flags` as
/// openat's.
pub(crate) fn open(s: &mut Server, pid: i32, path: &str, flags: u32) -> Option<Result<Opened, i64>> {
    if let Some(d) = super::devices::open(path, flags) {
        return Some(Ok(Opened::Desc(d)));
    }
    let c = components(s, pid, path)?;
    Some((|| {
        let node = lookup(s, pid, &c)?;
        if flags & O_ACCMODE != O_RDONLY && !matches!(node, PNode::Fd(_)) {
            return Err(EACCES);
        }
        // Its own fd directory lists the descriptor it is about to get
        // (Linux reads the table when it is read, after the open).
        let own_fd_dir = c.last().is_some_and(|l| l == "fd")
            && c.first().and_then(|n| n.parse::<i32>().ok()) == Some(s.proc(pid).tgid);
        let node = match node {
            PNode::Dir(mut v) if own_fd_dir => {
                let fds = &s.proc(pid).fds;
                let free = (0..).find(|&i| fds.get(i).is_none_or(|f| f.is_none())).unwrap_or(0);
                v.push((alloc::format!("{free}"), DT_LNK));
                v.sort_by_key(|(n, _)| n.parse::<u64>().unwrap_or(0));
                PNode::Dir(v)
            }
            n => n,
        };
        Ok(match node {
            PNode::Dir(v) => {
                let entries = v
                    .into_iter()
                    .enumerate()
                    .map(|(i, (n, t))| (n, PROC_INO + i as u64 + 3, t))
                    .collect();
                Opened::Desc(Description::new(Kind::Object(new_obj(ProcDir { entries })), O_RDONLY))
            }
            PNode::File(b) => Opened::Desc(Description::new(Kind::Generated(b.into()), O_RDONLY)),
            PNode::Link(t) if flags & O_NOFOLLOW != 0 => {
                let _ = t;
                return Err(ELOOP);
            }
            PNode::Link(t) => Opened::Path(t),
            PNode::Fd(d) => {
                // Linux opens the file anew (its own offset); a pipe, socket
                // or terminal is the same description.
                let ino = match d.borrow().kind {
                    Kind::File { ino } => Some(ino),
                    _ => None,
                };
                match ino {
                    Some(ino) => Opened::Desc(Description::new(Kind::File { ino }, flags & (O_ACCMODE | O_APPEND | O_NONBLOCK))),
                    None => Opened::Desc(d),
                }
            }
        })
    })())
}

/// stat of a /proc or device path (None when it is neither); links are
/// followed when `follow`.
pub(crate) fn stat(s: &mut Server, pid: i32, path: &str, follow: bool) -> Option<Result<[u8; Stat::BYTES], i64>> {
    if let Some(b) = super::devices::stat(path) {
        return Some(Ok(b));
    }
    let c = components(s, pid, path)?;
    let ino = PROC_INO + c.len() as u64;
    Some((|| {
        Ok(match lookup(s, pid, &c)? {
            PNode::Dir(_) => Stat::new(0o040555, ino, 2, 0, 0).to_bytes(),
            PNode::File(_) => Stat::new(0o100444, ino, 1, 0, 0).to_bytes(),
            PNode::Link(t) if follow => {
                let f = fs();
                super::files::stat_ino(f.resolve(vfs::ROOT, &t, true)?)
            }
            PNode::Fd(d) if follow => super::files::stat_desc(&d),
            PNode::Link(_) | PNode::Fd(_) => Stat::new(0o120777, ino, 1, 0, 0).to_bytes(),
        })
    })())
}

/// readlink of a /proc path (None when it is not one).
pub(crate) fn readlink(s: &mut Server, pid: i32, path: &str) -> Option<Result<String, i64>> {
    let c = components(s, pid, path)?;
    Some(match lookup(s, pid, &c) {
        Ok(PNode::Link(t)) => Ok(t),
        Ok(PNode::Fd(d)) => Ok(fd_name(&d)),
        Ok(_) => Err(EINVAL),
        Err(e) => Err(e),
    })
}

/// /proc/self itself is a link too (to the pid).
pub(crate) fn readlink_self(s: &Server, pid: i32, path: &str) -> Option<String> {
    let p = s.procs.get(&pid)?;
    match path {
        "/proc/self" => Some(alloc::format!("{}", p.tgid)),
        "/proc/thread-self" => Some(alloc::format!("{}/task/{}", p.tgid, p.pid)),
        _ => None,
    }
}

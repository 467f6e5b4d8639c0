//! init: starts the servers of the system description, answers the name
//! service, and supervises the servers (protocol: keep-system's `init`
//! module; docs/space-banks.md, "Supervision").
//!
//! Supervision does not wait for anyone: a watcher thread per server
//! blocks in PROCESS.WAIT on the current instance and, when it ends (an
//! exit, or a fault the constructor's pager stops it for), calls init with
//! DIED.  Init reaps the instance (its bank is destroyed, and with it
//! everything it had), reports on the console, and starts a new instance
//! at once or after the entry's backoff (a timed receive), at most
//! `restart` times; the watcher's call is answered when there is a new
//! instance to wait for.  One thread serves everything else, so the table
//! needs no lock; watchers touch only their own stack and slots.
//!
//! When an instance ends (a crash, an exit, KILL, or the root task's
//! ENDED for a program it ran), every server in its `uses` whose line says
//! `notify` is told: init keeps the client's payload in the server's list
//! of ended clients and signals the notification it bound to the server's
//! instance (names::GONE_BIT; its messages carry the payload
//! names::NOTICE), and the server asks for the list (names::TAKE_GONE)
//! when it likes.  init never waits for a server: the bank goes at once.
//!
//! Costs: a LOOKUP is one MINT; a restart is a DESTROY of the old bank and
//! an INSTANTIATE.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Notification, Process, Return, SELF_ASPACE, SELF_PROCESS, Sender, TIMER, Tag, recv, rights, state};
use keep_constructor::Constructor;
use keep_loader::{SlotPool, thread};
use keep_rt::println;
use keep_spacebank::Bank;
use keep_system::desc::{self, Kind};
use keep_system::init::{self as proto, EntryStatus, phase, slot as at};
use keep_system::names;

keep_rt::entry!(main);

/// Each call's return capability; a sender minted for a LOOKUP's reply.
const RET: u64 = keep_abi::slot::FIRST_FREE;
const MINTED: u64 = keep_abi::slot::FIRST_FREE + 1;
/// The sender (payload names::NOTICE) a notification is bound through.
const NOTICE_CAP: u64 = keep_abi::slot::FIRST_FREE + 2;
/// Watchers run above init's own priority, so that a death is heard
/// before init goes on with anything else.
const WATCHER_PRIORITY: u64 = 13;
/// A watcher's stack: 8 KiB (it only waits and calls), so that the
/// watchers of desc::MAX_SERVERS servers, each with its IPC buffer, fit
/// init's 1 MiB heap.
const WATCHER_STACK_WORDS: usize = 1024;
const _: () = assert!(desc::MAX_SERVERS * (WATCHER_STACK_WORDS * 8 + core::mem::size_of::<keep_abi::IpcBuffer>()) <= keep_rt::HEAP_SIZE * 3 / 5);

struct Entry {
    name: String,
    packed: (u64, u64),
    kind: Kind,
    /// Bit i: may ask for entry i.
    uses: u64,
    limit: u64,
    frames: u64,
    arg: u64,
    max_restarts: u64,
    backoff: u64,
    /// `budget=B/P`: (budget, period) in microseconds.
    budget: Option<(u64, u64)>,
    /// `priority=N`.
    priority: Option<u64>,
    /// `passive`.
    passive: bool,
    restarts: u64,
    phase: u64,
    /// When a restart is due (ms since boot), in phase WAITING.
    due: u64,
    /// The current instance's bank index (for `mem`).
    bank_index: u64,
    /// Whether a watcher's DIED call waits in WAITER + index.
    held: bool,
    /// KILL destroyed the instance (the report says so).
    killed: bool,
    /// A KILL with a delay: when it is due (ms since boot).
    kill_due: Option<u64>,
    /// (server index, grant text) from the description.
    grants: Vec<(usize, String)>,
    /// A server told when a client of it ends (`notify`).
    notify: bool,
    /// Its notices: the notification bound to its instance (its slot) and
    /// the payloads of ended clients it has not taken (TAKE_GONE).
    notices: Option<u64>,
    gone: VecDeque<u64>,
    watcher: Option<thread::Thread>,
}

struct Init {
    entries: Vec<Entry>,
    slots: SlotPool,
    started: bool,
    stopped: bool,
}

/// A reply: the words, and whether the capability in MINTED or the string goes with it.
struct Answer {
    words: [u64; 4],
    cap: bool,
    string: bool,
}

fn answer(words: [u64; 4]) -> Option<Answer> {
    Some(Answer { words, cap: false, string: false })
}

fn now() -> u64 {
    TIMER.now_ms().unwrap_or(0)
}

/// Answers a call through the return capability in `ret`.
fn reply(ret: u64, a: Answer) {
    let buf = keep_rt::ipc_buffer();
    let mut tag = Tag::new(0);
    if a.cap {
        tag = tag.with_caps(buf.set_send_caps(&[(MINTED, 0)]));
    }
    if a.string {
        tag = tag.with_string();
    }
    let _ = Return(ret).reply(tag, a.words);
    buf.send_len = 0;
}

/// A watcher thread: words 0 and 1 are the slots of the process to wait
/// for and of its sender to init.
fn watcher(a: &thread::Args) -> u64 {
    let (process, init) = (Process(a.words[0]), Sender(a.words[1]));
    loop {
        let _ = process.wait();
        let m = init.call(Tag::new(proto::req::DIED), [0; 4]);
        if m.err != 0 || m.words[0] != proto::WATCH {
            return 0;
        }
    }
}

impl Init {
    /// Starts an instance of entry `i` (its process and bank in their slots).
    fn start(&mut self, i: usize) -> Result<(), keep_constructor::CtorError> {
        let i64_ = i as u64;
        let e = &self.entries[i];
        Constructor(at::CTOR + i64_).instantiate(Bank(at::BANK + i64_), e.limit, e.frames, e.arg, at::PROCESS + i64_, at::INSTANCE_BANK + i64_)?;
        if let Some((b, p)) = e.budget
            && let Err(why) = Process(at::PROCESS + i64_).set_budget(b, p)
        {
            println!("init: {}: budget={b}/{p} refused ({why}); it runs without one", e.name);
        }
        if let Some(n) = e.priority
            && let Err(why) = Process(at::PROCESS + i64_).set_priority(n)
        {
            println!("init: {}: priority={n} refused ({why}); it runs at the default", e.name);
        }
        if e.passive
            && let Err(why) = Process(at::PROCESS + i64_).set_passive(1)
        {
            println!("init: {}: passive refused ({why}); it runs on its own time", e.name);
        }
        let e = &mut self.entries[i];
        e.phase = phase::RUNNING;
        e.bank_index = Bank(at::INSTANCE_BANK + i64_).info().map_or(proto::NONE, |b| b.index);
        if e.notify {
            self.bind_notices(i);
        }
        let e = &mut self.entries[i];
        if e.watcher.is_none() {
            let name = format!("watch-{}", e.name);
            let snd = self.slots.alloc();
            let minted = snd.is_some_and(|s| SELF_PROCESS.mint(s, proto::WATCHER | i64_, rights::WRITE | rights::CALL).is_ok());
            match (snd, minted) {
                (Some(s), true) => match thread::spawn_sized(&mut self.slots, &name, WATCHER_PRIORITY, watcher, &[at::PROCESS + i64_, s], WATCHER_STACK_WORDS) {
                    Ok(t) => self.entries[i].watcher = Some(t),
                    Err(why) => println!("init: {}: no watcher ({why}); it is not supervised", self.entries[i].name),
                },
                _ => println!("init: {}: no slot for its watcher; it is not supervised", self.entries[i].name),
            }
        }
        Ok(())
    }

    /// Destroys entry `i`'s instance (its bank) and empties its slots.
    fn reap(&mut self, i: usize) {
        let i64_ = i as u64;
        let _ = Bank(at::INSTANCE_BANK + i64_).destroy();
        for s in [at::PROCESS + i64_, at::INSTANCE_BANK + i64_] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        self.entries[i].bank_index = proto::NONE;
    }

    /// Answers the watcher of entry `i`, if its call is held.
    fn release_watcher(&mut self, i: usize, word: u64) {
        if self.entries[i].held {
            let _ = Return(at::WAITER + i as u64).reply(Tag::new(0), [word, 0, 0, 0]);
            let _ = SELF_ASPACE.delete_cap(at::WAITER + i as u64);
            self.entries[i].held = false;
        }
    }

    /// Restart `n` of entry `i`, now; the report's end.
    fn restart(&mut self, i: usize) -> String {
        let (n, max) = (self.entries[i].restarts, self.entries[i].max_restarts);
        match self.start(i) {
            Ok(()) => {
                self.release_watcher(i, proto::WATCH);
                format!("restarted ({n} of {max})")
            }
            Err(e) => {
                self.entries[i].phase = phase::DOWN;
                self.release_watcher(i, proto::QUIT);
                format!("restart {n} of {max} failed: {e}")
            }
        }
    }

    /// Binds entry `i`'s notification (made the first time, from init's
    /// account) to its new instance: the old instance's ended clients are
    /// not the new one's business.
    fn bind_notices(&mut self, i: usize) {
        let e = &mut self.entries[i];
        e.gone.clear();
        if e.notices.is_none() {
            let Some(n) = self.slots.alloc() else { return };
            if ACCOUNT.create_notification(n).is_err() {
                self.slots.free(n);
                println!("init: {}: no notification for its notices (init's account is full)", e.name);
                return;
            }
            e.notices = Some(n);
        }
        let n = Notification(e.notices.unwrap_or(0));
        let _ = n.poll();
        let _ = SELF_ASPACE.delete_cap(NOTICE_CAP);
        let bound = Process(at::PROCESS + i as u64)
            .mint(NOTICE_CAP, names::NOTICE, rights::WRITE)
            .and_then(|_| n.bind(NOTICE_CAP));
        let _ = SELF_ASPACE.delete_cap(NOTICE_CAP);
        if let Err(why) = bound {
            println!("init: {}: its notices cannot be bound ({why})", e.name);
        }
    }

    /// Tells every running server in entry `i`'s `uses` whose line says
    /// `notify` that the instance is gone: its payload is queued for the
    /// server (TAKE_GONE) and the server's notification signalled.
    /// Nothing waits for the server.
    fn notify(&mut self, i: usize) {
        let (client, uses) = (names::CLIENT | i as u64, self.entries[i].uses);
        for s in 0..self.entries.len() {
            let e = &mut self.entries[s];
            if uses & (1 << s) == 0 || !e.notify || e.phase != phase::RUNNING {
                continue;
            }
            let Some(n) = e.notices else { continue };
            if !e.gone.contains(&client) {
                if e.gone.len() >= names::MAX_GONE {
                    e.gone.pop_front();
                }
                e.gone.push_back(client);
            }
            let _ = Notification(n).signal(names::GONE_BIT);
        }
    }

    /// TAKE_GONE from server `s`: up to two of its ended clients.
    fn take_gone(&mut self, s: usize) -> Option<Answer> {
        let g = &mut self.entries[s].gone;
        let (a, b) = (g.pop_front().unwrap_or(0), g.pop_front().unwrap_or(0));
        answer([names::status::OK, a, b, g.len() as u64])
    }

    /// A watcher says entry `i`'s instance has ended; its call is in RET.
    fn died(&mut self, i: usize) -> Option<Answer> {
        let i64_ = i as u64;
        if i >= self.entries.len() || self.entries[i].held || SELF_ASPACE.move_cap(RET, at::WAITER + i64_).is_err() {
            return answer([proto::QUIT, 0, 0, 0]);
        }
        self.entries[i].held = true;
        if self.stopped || self.entries[i].phase != phase::RUNNING {
            self.release_watcher(i, proto::QUIT);
            return None;
        }
        let st = Process(at::PROCESS + i64_).status();
        if st.is_ok_and(|s| s.state != state::EXITED && s.state != state::FAULTED) {
            // Still running (the wait ended for another reason): wait again.
            self.release_watcher(i, proto::WATCH);
            return None;
        }
        if !self.entries[i].killed {
            self.notify(i); // KILL told them before it destroyed the bank
        }
        self.reap(i);
        let how = match st {
            _ if self.entries[i].killed => String::from("was killed"),
            Ok(s) => format!("{s}"),
            Err(_) => String::from("was destroyed"),
        };
        self.entries[i].killed = false;
        let e = &mut self.entries[i];
        let line = if e.restarts >= e.max_restarts {
            e.phase = phase::DOWN;
            let line = format!("system: server {} {how}; not restarted (restart={})", e.name, e.max_restarts);
            self.release_watcher(i, proto::QUIT);
            line
        } else {
            e.restarts += 1;
            let delay = e.backoff.checked_shl((e.restarts - 1) as u32).unwrap_or(u64::MAX).min(desc::MAX_BACKOFF);
            if e.backoff == 0 {
                let name = e.name.clone();
                format!("system: server {name} {how}; {}", self.restart(i))
            } else {
                e.phase = phase::WAITING;
                e.due = now().saturating_add(delay);
                format!("system: server {} {how}; restart {} of {} in {delay} ms", e.name, e.restarts, e.max_restarts)
            }
        };
        println!("\r\n{line}");
        None
    }

    /// Restarts whose backoff is over, and kills whose delay is; the time
    /// until the next one (0: none).
    fn due(&mut self) -> u64 {
        let t = now();
        let mut next = u64::MAX;
        for i in 0..self.entries.len() {
            match self.entries[i].kill_due {
                Some(d) if d <= t => {
                    self.entries[i].kill_due = None;
                    let _ = self.kill(i, 0);
                }
                Some(d) => next = next.min(d - t),
                None => {}
            }
        }
        for i in 0..self.entries.len() {
            if self.entries[i].phase != phase::WAITING {
                continue;
            }
            if self.entries[i].due <= t {
                let how = self.restart(i);
                println!("\r\nsystem: server {} {how}", self.entries[i].name);
            } else {
                next = next.min(self.entries[i].due - t);
            }
        }
        if next == u64::MAX { 0 } else { next }
    }

    fn lookup(&mut self, client: usize, w: [u64; 4]) -> Option<Answer> {
        let found = self.entries.iter().position(|e| e.packed == (w[0], w[1]) && e.kind == Kind::Server);
        let s = match found {
            Some(s) if self.entries[client].uses & (1 << s) != 0 => s,
            _ => return answer([names::status::NOT_GRANTED, 0, 0, 0]),
        };
        let _ = SELF_ASPACE.delete_cap(MINTED);
        let running = self.entries[s].phase == phase::RUNNING;
        let payload = names::CLIENT | client as u64;
        if running && Process(at::PROCESS + s as u64).mint(MINTED, payload, rights::WRITE | rights::CALL).is_ok() {
            Some(Answer { words: [names::status::OK, 0, 0, 0], cap: true, string: false })
        } else {
            answer([names::status::NOT_RUNNING, 0, 0, 0])
        }
    }

    /// GRANT: server `server` asks what the description grants the
    /// client whose call came with `payload`.
    fn grant(&mut self, server: usize, payload: u64) -> Option<Answer> {
        let text = names::client_of(payload)
            .and_then(|c| self.entries.get(c as usize))
            .filter(|e| e.uses & (1 << server) != 0)
            .and_then(|e| e.grants.iter().find(|(s, _)| *s == server))
            .map(|(_, g)| g.clone());
        match text {
            Some(g) => {
                keep_rt::ipc_buffer().set_string(g.as_bytes());
                Some(Answer { words: [names::status::OK, g.len() as u64, 0, 0], cap: false, string: true })
            }
            None => answer([names::status::NO_GRANT, 0, 0, 0]),
        }
    }

    /// KILL of entry `i`: its instance's bank is destroyed, and with it the
    /// process; its watcher hears of it and supervision does the rest.
    /// With a delay (ms, at most MAX_KILL_DELAY), that happens then, to
    /// whichever instance runs by then.
    fn kill(&mut self, i: usize, delay: u64) -> Option<Answer> {
        match self.entries.get(i) {
            Some(e) if e.kind == Kind::Server && e.phase == phase::RUNNING => {}
            _ => return answer([proto::status::NOT_RUNNING, 0, 0, 0]),
        }
        if delay > proto::MAX_KILL_DELAY {
            return answer([proto::status::BAD_REQUEST, 0, 0, 0]);
        }
        if delay > 0 {
            self.entries[i].kill_due = Some(now().saturating_add(delay));
            return answer([proto::status::OK, 0, 0, 0]);
        }
        self.entries[i].killed = true;
        // Stopped first, so that it hands its servers nothing new while
        // they are told it is gone.
        let _ = Process(at::PROCESS + i as u64).stop();
        self.notify(i);
        let _ = Bank(at::INSTANCE_BANK + i as u64).destroy();
        answer([proto::status::OK, 0, 0, 0])
    }

    /// ADMIN of entry `i`: a sender with payload 0 to its instance.
    fn admin(&mut self, i: usize) -> Option<Answer> {
        match self.entries.get(i) {
            Some(e) if e.kind == Kind::Server && e.phase == phase::RUNNING => {}
            _ => return answer([proto::status::NOT_RUNNING, 0, 0, 0]),
        }
        let _ = SELF_ASPACE.delete_cap(MINTED);
        match Process(at::PROCESS + i as u64).mint(MINTED, 0, rights::WRITE | rights::CALL) {
            Ok(()) => Some(Answer { words: [proto::status::OK, 0, 0, 0], cap: true, string: false }),
            Err(_) => answer([proto::status::NOT_RUNNING, 0, 0, 0]),
        }
    }

    fn control(&mut self, label: u64, w: [u64; 4]) -> Option<Answer> {
        match label {
            proto::req::START if self.started || self.stopped => answer([proto::status::BAD_STATE, 0, 0, 0]),
            proto::req::START => {
                self.started = true;
                for i in 0..self.entries.len() {
                    if self.entries[i].kind != Kind::Server {
                        continue;
                    }
                    if let Err(e) = self.start(i) {
                        let (s, d) = match e {
                            keep_constructor::CtorError::Status(s, d) => (s, d),
                            keep_constructor::CtorError::Call(c) => (0x100 + c, 0),
                        };
                        return answer([proto::status::START_FAILED, i as u64, s, d]);
                    }
                }
                answer([proto::status::OK, 0, 0, 0])
            }
            proto::req::STATUS => {
                let mut bytes = Vec::with_capacity(self.entries.len() * 32);
                for (i, e) in self.entries.iter().enumerate() {
                    let st = match e.phase {
                        phase::RUNNING => Process(at::PROCESS + i as u64).status().map_or(proto::NONE, |s| s.state),
                        _ => proto::NONE,
                    };
                    let rec = EntryStatus { state: st, restarts: e.restarts, bank: e.bank_index, phase: e.phase };
                    for w in rec.words() {
                        bytes.extend_from_slice(&w.to_le_bytes());
                    }
                }
                keep_rt::ipc_buffer().set_string(&bytes);
                Some(Answer { words: [proto::status::OK, self.entries.len() as u64, 0, 0], cap: false, string: true })
            }
            proto::req::KILL => self.kill(w[0] as usize, w[1]),
            proto::req::ADMIN => self.admin(w[0] as usize),
            // The root task's program (`run`) has ended or been stopped;
            // its bank goes once its servers were told.
            proto::req::ENDED => match self.entries.get(w[0] as usize) {
                Some(e) if e.kind == Kind::Program => {
                    self.notify(w[0] as usize);
                    answer([proto::status::OK, 0, 0, 0])
                }
                _ => answer([proto::status::BAD_REQUEST, 0, 0, 0]),
            },
            proto::req::STOP => {
                self.stopped = true;
                for i in 0..self.entries.len() {
                    if self.entries[i].phase == phase::RUNNING || self.entries[i].phase == phase::WAITING {
                        self.entries[i].phase = phase::DOWN;
                        self.reap(i);
                    }
                    self.release_watcher(i, proto::QUIT);
                }
                answer([proto::status::OK, 0, 0, 0])
            }
            _ => answer([proto::status::BAD_REQUEST, 0, 0, 0]),
        }
    }

    fn serve(&mut self, label: u64, payload: u64, w: [u64; 4]) -> Option<Answer> {
        match payload {
            p if proto::control(p) => self.control(label, w),
            p if proto::watcher(p) && label == proto::req::DIED => self.died((p & proto::WATCHER_INDEX) as usize),
            p if (p as usize) < self.entries.len() && label == names::LOOKUP => self.lookup(p as usize, w),
            p if (p as usize) < self.entries.len() && label == names::GRANT => self.grant(p as usize, w[0]),
            p if (p as usize) < self.entries.len() && label == names::TAKE_GONE => self.take_gone(p as usize),
            _ => answer([names::status::BAD_REQUEST, 0, 0, 0]),
        }
    }
}

fn main(len: u64, _: u64) -> i32 {
    // SAFETY: the root task mapped `len` bytes of text at DESC_VADDR, read-only, for good.
    let text = unsafe { core::slice::from_raw_parts(proto::DESC_VADDR as *const u8, len as usize) };
    let d = match core::str::from_utf8(text).map_err(|_| String::from("not UTF-8")).and_then(|t| desc::parse(t).map_err(|e| format!("{e}"))) {
        Ok(d) => d,
        Err(why) => {
            println!("init: the description: {why}");
            return 1;
        }
    };
    let entries = d
        .entries
        .iter()
        .map(|e| Entry {
            name: e.name.clone(),
            packed: keep_abi::pack_name(&e.name),
            kind: e.kind,
            uses: e.uses.iter().fold(0, |m, &u| m | 1 << u),
            limit: e.limit,
            frames: e.frames,
            arg: e.arg,
            max_restarts: e.restart,
            backoff: e.backoff,
            budget: e.budget,
            priority: e.priority,
            passive: e.passive,
            restarts: 0,
            phase: phase::IDLE,
            due: 0,
            bank_index: proto::NONE,
            held: false,
            killed: false,
            kill_due: None,
            grants: e.grants.clone(),
            notify: e.notify,
            notices: None,
            gone: VecDeque::new(),
            watcher: None,
        })
        .collect();
    let mut slots = SlotPool::new();
    // The entries' regions (at::BASE..at::END) lie outside the pool's cappage.
    for s in [RET, MINTED, NOTICE_CAP] {
        slots.reserve(s);
    }
    let mut init = Init { entries, slots, started: false, stopped: false };
    let buf = keep_rt::ipc_buffer();
    loop {
        let (label, payload, words) = {
            let timeout = init.due();
            buf.set_recv_slots(&[RET]);
            let m = recv(Tag::new(0).with_slots(1), timeout);
            if m.err != 0 || !m.tag.is_called() {
                continue;
            }
            (m.tag.label(), m.payload, m.words)
        };
        let Some(a) = init.serve(label, payload, words) else { continue };
        reply(RET, a);
        let _ = SELF_ASPACE.delete_cap(RET);
    }
}

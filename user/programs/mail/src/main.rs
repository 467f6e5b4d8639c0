//! mail: the trusted mail reader (docs/trusted-core.md, "The trusted mail
//! reader").  A program of the description with `uses=vault,workhorse
//! terminal`: it talks to the user on its own virtual terminal (slot 11),
//! keeps its X25519 private key and the trusted sender's public key in the
//! vault, reads the mailbox the workhorse fetched (the file `inbox` of its
//! whfiles directory, /data/trusted/<its place>), and keeps what it took
//! (the messages, their read flags, the highest mailbox sequence number)
//! and the user's note as trusted files (keep-tfiles) in the same
//! directory.  Its public key it prints and writes to `mail.pub` there.
//! The format and the policy are the crate's library; this file moves
//! bytes between the terminal, the vault, the workhorse and the library.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::terminal::{self as proto, Terminal};
use keep_abi::{ACCOUNT, Error as KErr, Notification, Sender, Tag, err};
use keep_mail::state::{self, MAX_KEPT, MAX_NOTE};
use keep_mail::{Command, MAX_MAILBOX, State, hex};
use keep_rt::println;
use keep_system::names;
use keep_tfiles::{BLOCK, Error, File, Files, Rng, Roots, Store, StoreError};
use keep_vault::Client;
use keep_workhorse::whfiles_protocol as wh;

keep_rt::entry!(main);

const VAULT: u64 = 0x20;
const WORKHORSE: u64 = 0x21;
const NOTE: u64 = 0x22;

/// The vault's names of the reader's keys (its trusted files' records are
/// `tf:state` and `tf:note`).
const SECRET: &[u8] = b"x25519";
const SENDER: &[u8] = b"sender";
/// The sequence number of the last message sent (u64).
const SENT: &[u8] = b"sent";

/// The workhorse's whfiles protocol; a call that fails (the workhorse
/// killed and restarted: the capability is stale) is made once more on a
/// new capability (the same bytes at the same place: harmless).
struct Wh(Sender);

fn pack(name: &str) -> (u64, u64) {
    let mut b = [0u8; 16];
    b[..name.len()].copy_from_slice(name.as_bytes());
    (u64::from_le_bytes(b[..8].try_into().unwrap()), u64::from_le_bytes(b[8..].try_into().unwrap()))
}

fn workhorse() -> Result<Sender, u64> {
    let mut last = 0;
    for _ in 0..6 {
        match names::lookup_patiently("workhorse", WORKHORSE, keep_rt::ipc_buffer()) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Wh {
    fn call(&mut self, label: u64, w: [u64; 4], send: &[u8], out: &mut [u8]) -> Result<(u64, usize), StoreError> {
        for again in [false, true] {
            let buf = keep_rt::ipc_buffer();
            let mut tag = Tag::new(label);
            if !send.is_empty() {
                buf.set_string(send);
                tag = tag.with_string();
            }
            let m = self.0.call(tag, w);
            if m.err != err::OK {
                if !again {
                    let _ = keep_abi::SELF_ASPACE.delete_cap(WORKHORSE);
                    if let Ok(s) = workhorse() {
                        self.0 = s;
                        continue;
                    }
                }
                return Err(StoreError::Failed(0x100 + m.err));
            }
            return match m.words[0] {
                wh::OK => {
                    let n = if m.tag.has_string() { buf.read_string(out) } else { 0 };
                    Ok((m.words[1], n))
                }
                wh::NOT_FOUND => Err(StoreError::NotThere),
                s => Err(StoreError::Failed(s)),
            };
        }
        unreachable!()
    }
}

impl Store for Wh {
    fn read(&mut self, name: &str, off: u64, out: &mut [u8]) -> Result<usize, StoreError> {
        let (lo, hi) = pack(name);
        let mut done = 0;
        while done < out.len() {
            let k = (out.len() - done).min(BLOCK);
            let (_, n) = self.call(wh::READ, [lo, hi, off + done as u64, k as u64], &[], &mut out[done..done + k])?;
            done += n;
            if n < k {
                break;
            }
        }
        Ok(done)
    }
    fn write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), StoreError> {
        let (lo, hi) = pack(name);
        for (k, chunk) in data.chunks(BLOCK).enumerate() {
            let (n, _) = self.call(wh::WRITE, [lo, hi, off + (k * BLOCK) as u64, 0], chunk, &mut [])?;
            if n as usize != chunk.len() {
                return Err(StoreError::Failed(wh::IO_ERROR));
            }
        }
        Ok(())
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.call(wh::SYNC, [0; 4], &[], &mut []).map(|_| ())
    }
    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        let (lo, hi) = pack(name);
        self.call(wh::REMOVE, [lo, hi, 0, 0], &[], &mut []).map(|_| ())
    }
}

struct Vault(Client);

impl Roots for Vault {
    fn get(&mut self, key: &[u8], out: &mut [u8]) -> Result<Option<usize>, u64> {
        match self.0.get(key, out) {
            Ok(n) => Ok(Some(n)),
            Err(keep_vault::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), u64> {
        self.0.put(key, value).map(|_| ())
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool, u64> {
        match self.0.delete(key) {
            Ok(_) => Ok(true),
            Err(keep_vault::NOT_FOUND) => Ok(false),
            Err(e) => Err(e),
        }
    }
    fn key_at(&mut self, index: u64, out: &mut [u8]) -> Result<Option<usize>, u64> {
        match self.0.list(index, out) {
            Ok((_, n)) => Ok(Some(n)),
            Err(keep_vault::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// RDRAND (QEMU's `-cpu max` has it); no fallback: a key from anything
/// guessable would not be one.
struct Rdrand;

impl Rng for Rdrand {
    fn fill(&mut self, out: &mut [u8]) -> bool {
        if core::arch::x86_64::__cpuid(1).ecx & (1 << 30) == 0 {
            return false;
        }
        for c in out.chunks_mut(8) {
            let mut v: u64 = 0;
            let mut ok: u8 = 0;
            for _ in 0..32 {
                // SAFETY: rdrand only writes the register and the carry flag.
                unsafe { core::arch::asm!("rdrand {v}", "setc {ok}", v = out(reg) v, ok = out(reg_byte) ok) };
                if ok != 0 {
                    break;
                }
            }
            if ok == 0 {
                return false;
            }
            c.copy_from_slice(&v.to_le_bytes()[..c.len()]);
        }
        true
    }
}

/// The reader's own terminal.
struct Tty {
    t: Terminal,
    note: Notification,
    line: String,
    last_cr: bool,
}

impl Tty {
    fn out(&self, s: &str) {
        let mut b = s.as_bytes();
        while !b.is_empty() {
            match self.t.write_string(keep_rt::ipc_buffer(), b) {
                Ok(n) if n > 0 => b = &b[n..],
                _ => return,
            }
        }
    }
    fn say(&self, s: &str) {
        let mut v = String::from(s);
        v.push_str("\r\n");
        self.out(&v);
    }
    /// The next line typed (echoed as it is typed; Backspace edits,
    /// Ctrl-C drops the line); None when the terminal is gone.
    fn read_line(&mut self) -> Option<String> {
        let mut buf = [0u8; proto::READ_MAX];
        loop {
            let n = match self.t.read(&mut buf) {
                Ok(n) => n,
                Err(KErr::WOULD_BLOCK) => {
                    self.note.wait().ok()?;
                    continue;
                }
                Err(_) => return None,
            };
            for &c in &buf[..n] {
                let cr = self.last_cr;
                self.last_cr = c == b'\r';
                match c {
                    b'\n' if cr => {}
                    b'\r' | b'\n' => {
                        self.out("\r\n");
                        return Some(core::mem::take(&mut self.line));
                    }
                    0x08 | 0x7f => {
                        if self.line.pop().is_some() {
                            self.out("\x08 \x08");
                        }
                    }
                    0x03 => {
                        self.line.clear();
                        self.out("^C\r\n");
                        return Some(String::new());
                    }
                    0x20..=0x7e if self.line.len() < MAX_NOTE + 80 => {
                        self.line.push(c as char);
                        let e = [c];
                        self.out(core::str::from_utf8(&e).unwrap());
                    }
                    _ => {}
                }
            }
        }
    }
}

type T = Files<Wh, Vault, Rdrand>;

struct App {
    tty: Tty,
    files: T,
    secret: [u8; 32],
    sender: Option<[u8; 32]>,
    /// The state and its trusted file (None until its first write), or
    /// why it cannot be read: then nothing is fetched or shown.
    state: Result<(State, Option<File>), String>,
    note: Result<(String, Option<File>), String>,
}

fn vault_status(e: u64) -> String {
    if e >= 0x100 { alloc::format!("the call failed ({e:#x})") } else { String::from(keep_vault::status_name(e)) }
}

/// A trusted file read whole (None: the vault has no record of it).
fn read_file(files: &mut T, name: &str, max: usize) -> Result<Option<(Vec<u8>, File)>, String> {
    let f = match files.open(name) {
        Ok(f) => f,
        Err(Error::NotFound) => return Ok(None),
        Err(e) => return Err(alloc::format!("{e}")),
    };
    if f.size() as usize > max {
        return Err(String::from("INTEGRITY: larger than the reader writes"));
    }
    let mut out = vec![0u8; f.size() as usize];
    files.read(&f, 0, &mut out).map_err(|e| alloc::format!("{e}"))?;
    Ok(Some((out, f)))
}

/// Writes a trusted file whole (made at its first write); on Err the file
/// is as it was.
fn write_file(files: &mut T, name: &str, file: &mut Option<File>, bytes: &[u8]) -> Result<(), Error> {
    let mut f = match file.take() {
        Some(f) => f,
        None => files.new_file(name)?,
    };
    let r = files.write(&mut f, 0, bytes).map(drop);
    if f.generation() > 0 {
        *file = Some(f);
    }
    r
}

const STATE_MAX: usize = 16 + MAX_KEPT * (13 + keep_mail::MAX_TEXT) + 4096;

impl App {
    fn fetch(&mut self) {
        let Some(sender) = self.sender else {
            return self.tty.say("mail: fetch: no trusted sender yet (trust KEY: the sender's public key)");
        };
        let Ok((cur, _)) = &self.state else {
            return self.tty.say("mail: fetch: the reader's state cannot be read; nothing is taken");
        };
        let Some(key) = keep_mail::reader_key(&self.secret, &sender) else {
            return self.tty.say("mail: fetch: the trusted sender's key makes no shared key");
        };
        let mut bytes = vec![0u8; MAX_MAILBOX + 1];
        let n = match self.files.store.read("inbox", 0, &mut bytes) {
            Ok(n) => n,
            Err(StoreError::NotThere) => {
                return self.tty.say("mail: fetch: AVAILABILITY: the workhorse has no mailbox (inbox) in the reader's directory");
            }
            Err(StoreError::Failed(s)) => return self.tty.say(&alloc::format!("mail: fetch: WORKHORSE FAILED: status {s:#x}")),
        };
        bytes.truncate(n);
        let mut next = cur.clone();
        let r = next.import(keep_mail::open(&key, &bytes));
        drop(bytes);
        let r = match r {
            Ok(r) => r,
            Err(e) => return self.tty.say(&alloc::format!("mail: fetch: {e}")),
        };
        if &next != cur {
            let Ok((_, file)) = &mut self.state else { unreachable!() };
            if let Err(e) = write_file(&mut self.files, "state", file, &next.encode()) {
                return self.tty.say(&alloc::format!("mail: fetch: the reader's state could not be kept ({e}); nothing taken"));
            }
            if let Ok((s, _)) = &mut self.state {
                *s = next;
            }
        }
        self.tty.say(&alloc::format!(
            "mail: fetch: mailbox sequence {}: {} new, {} already kept, {} refused",
            r.seq,
            r.new.len(),
            r.known,
            r.refused.len() + r.no_room.len()
        ));
        for (id, e) in &r.refused {
            self.tty.say(&alloc::format!("mail: message {id}: {e}; not shown"));
        }
        for id in &r.no_room {
            self.tty.say(&alloc::format!("mail: message {id}: NO ROOM: the reader keeps {MAX_KEPT} messages"));
        }
    }

    fn list(&self) {
        let Ok((s, _)) = &self.state else {
            return self.tty.say("mail: list: the reader's state cannot be read");
        };
        self.tty.say(&alloc::format!(
            "mail: {} message{}, {} unread (mailbox sequence {})",
            s.messages.len(),
            if s.messages.len() == 1 { "" } else { "s" },
            s.unread(),
            s.seq
        ));
        for m in &s.messages {
            self.tty.say(&alloc::format!("  {:>4} {} {}", m.id, if m.read { "     " } else { "[new]" }, state::subject(&m.text)));
        }
    }

    fn show(&mut self, id: u64) {
        let Ok((s, _)) = &self.state else {
            return self.tty.say("mail: show: the reader's state cannot be read");
        };
        let Some(m) = s.find(id) else {
            return self.tty.say(&alloc::format!("mail: show: no message {id}"));
        };
        let text = String::from_utf8_lossy(&m.text).into_owned();
        self.tty.say(&alloc::format!("----- message {id} -----"));
        self.tty.say(&state::printable(&text));
        self.tty.say("----- end -----");
        let mut next = s.clone();
        if next.mark_read(id) == Some(true) {
            let Ok((_, file)) = &mut self.state else { unreachable!() };
            match write_file(&mut self.files, "state", file, &next.encode()) {
                Ok(()) => {
                    if let Ok((s, _)) = &mut self.state {
                        *s = next;
                    }
                }
                Err(e) => self.tty.say(&alloc::format!("mail: show: the read flag could not be kept ({e})")),
            }
        }
    }

    fn note(&mut self, text: Option<&str>) {
        let (cur, file) = match &mut self.note {
            Ok(n) => n,
            Err(e) => return self.tty.say(&alloc::format!("mail: note: it cannot be read ({e})")),
        };
        match text {
            None if cur.is_empty() => self.tty.say("mail: no note"),
            None => self.tty.say(&alloc::format!("mail: note: {}", state::printable(cur))),
            Some(t) => match write_file(&mut self.files, "note", file, &state::encode_note(t)) {
                Ok(()) => {
                    *cur = String::from(t);
                    self.tty.say("mail: note kept");
                }
                Err(e) => self.tty.say(&alloc::format!("mail: note: it could not be kept ({e}); the note is as it was")),
            },
        }
    }

    fn trust(&mut self, k: [u8; 32]) {
        if keep_mail::reader_key(&self.secret, &k).is_none() {
            return self.tty.say("mail: trust: that key makes no shared key (a low-order point); refused");
        }
        match self.files.roots.0.put(SENDER, &k) {
            Ok(_) => {
                self.sender = Some(k);
                self.tty.say(&alloc::format!("mail: trusting sender {}", hex(&k)));
            }
            Err(e) => self.tty.say(&alloc::format!("mail: trust: the vault refused ({}); the sender is as it was", vault_status(e))),
        }
    }

    /// Seals `text` to the trusted sender under the outgoing key and leaves
    /// it in the workhorse's `outbox`, from where a Linux program of the
    /// workhorse posts it: the workhorse carries it and can withhold it,
    /// but can neither read it nor change it unnoticed.
    fn send(&mut self, text: &str) {
        let Some(sender) = self.sender else { return self.tty.say("mail: send: no trusted sender yet (trust KEY)") };
        let Some(key) = keep_mail::reader_outgoing_key(&self.secret, &sender) else {
            return self.tty.say("mail: send: the sender's key makes no shared key; refused");
        };
        let mut b = [0u8; 8];
        let last = match self.files.roots.0.get(SENT, &mut b) {
            Ok(8) => u64::from_le_bytes(b),
            Ok(_) => return self.tty.say("mail: send: the vault's sequence number is not 8 bytes; refused"),
            Err(keep_vault::NOT_FOUND) => 0,
            Err(e) => return self.tty.say(&alloc::format!("mail: send: the vault refused ({})", vault_status(e))),
        };
        let seq = last + 1;
        let mut nonce = [0u8; keep_mail::NONCE];
        if !Rdrand.fill(&mut nonce) {
            return self.tty.say("mail: send: no random numbers for a nonce; nothing sent");
        }
        let Some(blob) = keep_mail::seal_outgoing(&key, seq, text.as_bytes(), nonce) else {
            return self.tty.say("mail: send: too long; nothing sent");
        };
        // The number is taken first: a message whose outbox is not written
        // leaves a gap in the numbers, never two messages of one number.
        if let Err(e) = self.files.roots.0.put(SENT, &seq.to_le_bytes()) {
            return self.tty.say(&alloc::format!("mail: send: the vault refused ({}); nothing sent", vault_status(e)));
        }
        // In hex: busybox wget posts a file as a C string.
        let text = alloc::format!("{}\n", hex(&blob));
        let _ = self.files.store.remove("outbox");
        match self.files.store.write("outbox", 0, text.as_bytes()).and_then(|_| self.files.store.sync()) {
            Ok(()) => self.tty.say(&alloc::format!(
                "mail: send: message {seq} sealed to the sender in the workhorse's outbox ({} bytes)",
                blob.len()
            )),
            Err(e) => self.tty.say(&alloc::format!("mail: send: the workhorse refused the outbox ({e:?}); message {seq} is not sent")),
        }
    }

    fn public(&self) -> String {
        hex(&keep_mail::public_key(&self.secret))
    }
}

const HELP: &str = "mail: commands: key (the reader's public key), trust KEY (the sender's public key), fetch (check and take the mailbox the workhorse keeps), list, show N (and mark it read), note [TEXT], send TEXT (sealed to the sender into the workhorse's outbox)";

fn main(_: u64, _: u64) -> i32 {
    let t = Terminal(proto::SLOT);
    if ACCOUNT.create_notification(NOTE).is_err() || t.set_notify(keep_rt::ipc_buffer(), NOTE, 1).is_err() {
        println!("mail: no terminal of its own (the description's line needs `terminal`)");
        return 2;
    }
    let mut tty = Tty { t, note: Notification(NOTE), line: String::new(), last_cr: false };
    println!("mail: the trusted mail reader is on its own terminal (Ctrl-T and its number)");
    // Nothing is opened until the user comes to the terminal: a boot
    // that never reads mail never touches the vault or the workhorse.
    loop {
        tty.out("mail: the trusted mail reader: Enter opens it\r\n");
        if tty.read_line().is_none() {
            return 1;
        }
        match open(tty) {
            Ok(app) => run(app),
            Err(t) => tty = t,
        }
    }
}

/// The reader's keys, its state and its note; Err(the terminal) when the
/// vault or the workhorse cannot be had (said on the terminal).
fn open(tty: Tty) -> Result<App, Tty> {
    tty.say("mail: the trusted mail reader");
    let vault = match names::lookup_patiently("vault", VAULT, keep_rt::ipc_buffer()) {
        Ok(s) => Client(s),
        Err(e) => {
            tty.say(&alloc::format!("mail: no vault ({})", names::status::name(e)));
            return Err(tty);
        }
    };
    let w = match workhorse() {
        Ok(s) => Wh(s),
        Err(e) => {
            tty.say(&alloc::format!("mail: no workhorse ({})", names::status::name(e)));
            return Err(tty);
        }
    };
    // The key pair: the private key made here and kept only in the vault.
    let mut secret = [0u8; 32];
    match vault.get(SECRET, &mut secret) {
        Ok(32) => {}
        Ok(_) => {
            tty.say("mail: the vault's key is not 32 bytes: refused");
            return Err(tty);
        }
        Err(keep_vault::NOT_FOUND) => {
            if !Rdrand.fill(&mut secret) {
                tty.say("mail: no random numbers for a key");
                return Err(tty);
            }
            if let Err(e) = vault.put(SECRET, &secret) {
                tty.say(&alloc::format!("mail: the vault refused the new key ({})", vault_status(e)));
                return Err(tty);
            }
            tty.say("mail: a new key pair; the private key is in the vault");
        }
        Err(e) => {
            tty.say(&alloc::format!("mail: the vault refused the key ({})", vault_status(e)));
            return Err(tty);
        }
    }
    let mut sk = [0u8; 32];
    let sender = match vault.get(SENDER, &mut sk) {
        Ok(32) => Some(sk),
        _ => None,
    };
    let mut files = Files::new(w, Vault(vault), Rdrand);
    let state = match read_file(&mut files, "state", STATE_MAX) {
        Ok(None) => Ok((State::default(), None)),
        Ok(Some((b, f))) => match State::decode(&b) {
            Some(s) => Ok((s, Some(f))),
            None => Err(String::from("INTEGRITY: not a state the reader wrote")),
        },
        Err(e) => Err(e),
    };
    let note = match read_file(&mut files, "note", 4 + MAX_NOTE) {
        Ok(None) => Ok((String::new(), None)),
        Ok(Some((b, f))) => match state::decode_note(&b) {
            Some(n) => Ok((n, Some(f))),
            None => Err(String::from("INTEGRITY: not a note the reader wrote")),
        },
        Err(e) => Err(e),
    };
    Ok(App { tty, files, secret, sender, state, note })
}

fn run(mut app: App) -> ! {
    let public = app.public();
    let exported = app.files.store.write("mail.pub", 0, alloc::format!("{public}\n").as_bytes());
    app.tty.say(&alloc::format!(
        "mail: public key {public}{}",
        if exported.is_ok() { " (also in the workhorse's mail.pub)" } else { " (the workhorse refused mail.pub)" }
    ));
    match app.sender {
        Some(k) => app.tty.say(&alloc::format!("mail: trusted sender {}", hex(&k))),
        None => app.tty.say("mail: no trusted sender yet (trust KEY)"),
    }
    match &app.state {
        Ok((s, _)) => app.tty.say(&alloc::format!("mail: {} messages kept, {} unread, mailbox sequence {}", s.messages.len(), s.unread(), s.seq)),
        Err(e) => app.tty.say(&alloc::format!("mail: the reader's state: {e}; nothing is fetched or shown")),
    }
    if let Err(e) = &app.note {
        app.tty.say(&alloc::format!("mail: the note: {e}"));
    }
    loop {
        app.tty.out("mail> ");
        let Some(line) = app.tty.read_line() else {
            keep_rt::exit(1)
        };
        match state::parse(&line) {
            Command::Empty => {}
            Command::Help => app.tty.say(HELP),
            Command::Key => app.tty.say(&alloc::format!("mail: public key {}", app.public())),
            Command::Trust(k) => app.trust(k),
            Command::Fetch => app.fetch(),
            Command::List => app.list(),
            Command::Show(id) => app.show(id),
            Command::Note(t) => app.note(t),
            Command::Send(t) => app.send(t),
            Command::Bad(why) => app.tty.say(&alloc::format!("mail: {why}")),
        }
    }
}

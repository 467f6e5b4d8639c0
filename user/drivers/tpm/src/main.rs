//! The tpm server (protocol in lib.rs): the driver of a TPM 2.0 behind the
//! Command Response Buffer interface of the TCG's PC Client Platform TPM
//! Profile (locality 0 at 0xfed40000, QEMU's `tpm-crb`).  It holds that
//! one page of device memory (in the DEVMEM slot) and nothing else of
//! the machine's; the root task starts it first and gives it the
//! measurements of the boot (docs/trusted-core.md).

#![no_std]
#![no_main]

use keep_abi::proto::Answer;
use keep_abi::{Msg, Return, SELF_ASPACE, TIMER, Tag, recv, rights, slot};
use keep_rt::println;
use keep_tpm::cmd::{self, rc};
use keep_tpm::*;

keep_rt::entry!(main);

/// Where each call's return capability arrives.
const RET: u64 = slot::FIRST_FREE;

/// The CRB's registers (PC Client Platform TPM Profile, locality 0).
const CRB_PA: u64 = 0xfed4_0000;
const CRB_VA: u64 = 0x0000_4000_0000_0000;
mod reg {
    pub const LOC_CTRL: usize = 0x08;
    pub const LOC_STS: usize = 0x0c;
    pub const INTF_ID: usize = 0x30;
    pub const CTRL_REQ: usize = 0x40;
    pub const CTRL_STS: usize = 0x44;
    pub const CTRL_START: usize = 0x4c;
    pub const CMD_SIZE: usize = 0x58;
    pub const CMD_LADDR: usize = 0x5c;
    pub const CMD_HADDR: usize = 0x60;
    pub const RSP_SIZE: usize = 0x64;
    pub const RSP_ADDR: usize = 0x68;
    /// LOC_CTRL: requestAccess; LOC_STS: granted.
    pub const REQUEST_ACCESS: u32 = 1;
    pub const GRANTED: u32 = 1;
    /// CTRL_REQ: cmdReady; CTRL_STS: tpmSts (a fatal error).
    pub const CMD_READY: u32 = 1;
    pub const FATAL: u32 = 1;
}

/// How long a command may take (key creation included), in ms.
const COMMAND_MS: u64 = 60_000;

struct Crb {
    cmd: usize,
    cmd_size: usize,
    rsp: usize,
    rsp_size: usize,
}

fn r32(off: usize) -> u32 {
    // SAFETY: CRB_VA maps the CRB's page (checked in open), offsets are in it.
    unsafe { core::ptr::read_volatile((CRB_VA as usize + off) as *const u32) }
}

fn w32(off: usize, v: u32) {
    // SAFETY: as in r32.
    unsafe { core::ptr::write_volatile((CRB_VA as usize + off) as *mut u32, v) }
}

/// Waits until `done` holds, at most `ms` milliseconds: reads the
/// register SPIN times first (a TPM command takes a few milliseconds and
/// each read of the device's register is a round trip to it), then
/// between 1 ms sleeps.
fn wait(ms: u64, done: impl Fn() -> bool) -> bool {
    const SPIN: u32 = 10_000;
    for _ in 0..SPIN {
        if done() {
            return true;
        }
    }
    let start = TIMER.now_ms().unwrap_or(0);
    loop {
        if done() {
            return true;
        }
        if TIMER.now_ms().unwrap_or(u64::MAX).saturating_sub(start) > ms {
            return false;
        }
        let _ = TIMER.sleep(1);
    }
}

impl Crb {
    fn open() -> Result<Crb, &'static str> {
        SELF_ASPACE
            .map_device(slot::DEVMEM, 0, CRB_VA, rights::READ | rights::WRITE)
            .map_err(|_| "no device memory at 0xfed40000 (the root task's grant)")?;
        let id = r32(reg::INTF_ID);
        // InterfaceType 1: the CRB interface is active.
        if id == u32::MAX || id & 0xf != 1 {
            return Err("no TPM CRB interface at 0xfed40000");
        }
        w32(reg::LOC_CTRL, reg::REQUEST_ACCESS);
        if !wait(1000, || r32(reg::LOC_STS) & reg::GRANTED != 0) {
            return Err("locality 0 not granted");
        }
        w32(reg::CTRL_REQ, reg::CMD_READY);
        if !wait(1000, || r32(reg::CTRL_REQ) & reg::CMD_READY == 0) {
            return Err("the TPM does not become ready");
        }
        let in_page = |pa: u64, size: usize| {
            (pa >= CRB_PA && pa + size as u64 <= CRB_PA + 4096 && size >= 512).then(|| (pa - CRB_PA) as usize)
        };
        let cmd_pa = r32(reg::CMD_LADDR) as u64 | (r32(reg::CMD_HADDR) as u64) << 32;
        let rsp_pa = r32(reg::RSP_ADDR) as u64 | (r32(reg::RSP_ADDR + 4) as u64) << 32;
        let (cmd_size, rsp_size) = (r32(reg::CMD_SIZE) as usize, r32(reg::RSP_SIZE) as usize);
        match (in_page(cmd_pa, cmd_size), in_page(rsp_pa, rsp_size)) {
            (Some(cmd), Some(rsp)) => Ok(Crb { cmd, cmd_size, rsp, rsp_size }),
            _ => Err("the CRB's buffers are not in its page"),
        }
    }

    /// Sends a command, returns the response's length in `out`.
    fn transact(&self, command: &[u8], out: &mut [u8]) -> Result<usize, Fail> {
        if command.len() > self.cmd_size {
            return Err(Fail::TooLong);
        }
        let base = CRB_VA as usize;
        for (i, &b) in command.iter().enumerate() {
            // SAFETY: in the command buffer, inside the mapped page.
            unsafe { core::ptr::write_volatile((base + self.cmd + i) as *mut u8, b) };
        }
        w32(reg::CTRL_START, 1);
        if !wait(COMMAND_MS, || r32(reg::CTRL_START) & 1 == 0) || r32(reg::CTRL_STS) & reg::FATAL != 0 {
            return Err(Fail::Device);
        }
        let byte = |i: usize| {
            // SAFETY: in the response buffer, inside the mapped page.
            unsafe { core::ptr::read_volatile((base + self.rsp + i) as *const u8) }
        };
        let size = u32::from_be_bytes([byte(2), byte(3), byte(4), byte(5)]) as usize;
        if !(10..=self.rsp_size.min(out.len())).contains(&size) {
            return Err(Fail::Malformed);
        }
        for (i, o) in out[..size].iter_mut().enumerate() {
            *o = byte(i);
        }
        Ok(size)
    }
}

/// Why a request failed.
#[derive(Clone, Copy, Debug)]
enum Fail {
    NoTpm,
    /// The TPM's response code.
    Tpm(u32),
    /// A response that does not parse.
    Malformed,
    /// The device did not answer, or reported a fatal error.
    Device,
    TooLong,
}

impl From<cmd::Error> for Fail {
    fn from(e: cmd::Error) -> Fail {
        match e {
            cmd::Error::Tpm(c) => Fail::Tpm(c),
            cmd::Error::Malformed => Fail::Malformed,
            cmd::Error::TooLong => Fail::TooLong,
        }
    }
}

impl Fail {
    /// The reply's status and word 1.
    fn status(self) -> (u64, u64) {
        match self {
            Fail::NoTpm => (NO_TPM, 0),
            Fail::Tpm(c) => (TPM_ERROR, c as u64),
            Fail::Malformed | Fail::Device => (BAD_RESPONSE, 0),
            Fail::TooLong => (BAD_REQUEST, 0),
        }
    }
}

struct Server {
    crb: Option<Crb>,
    log: Log,
    /// The storage key's transient handle, once made.
    primary: Option<u32>,
    cmd: [u8; 2048],
    rsp: [u8; 4096],
    /// QUIT was asked by the root task: exit once the reply is sent.
    quit: bool,
}

impl Server {
    /// Runs the command `build` writes; the response is in self.rsp.
    fn run(&mut self, build: impl FnOnce(&mut [u8]) -> cmd::Result<usize>) -> Result<usize, Fail> {
        let crb = self.crb.as_ref().ok_or(Fail::NoTpm)?;
        let n = build(&mut self.cmd)?;
        crb.transact(&self.cmd[..n], &mut self.rsp)
    }

    fn startup(&mut self) -> Result<(), Fail> {
        let n = self.run(cmd::startup)?;
        match cmd::parse_empty(&self.rsp[..n]) {
            // Started before (this server was restarted): the PCRs keep
            // what they hold.
            Ok(()) | Err(cmd::Error::Tpm(rc::INITIALIZE)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn random(&mut self, out: &mut [u8]) -> Result<usize, Fail> {
        let mut got = 0;
        while got < out.len() {
            let want = (out.len() - got) as u16;
            let n = self.run(|b| cmd::get_random(b, want))?;
            let r = cmd::parse_random(&self.rsp[..n])?;
            if r.is_empty() {
                return Err(Fail::Malformed);
            }
            let k = r.len().min(out.len() - got);
            out[got..got + k].copy_from_slice(&r[..k]);
            got += k;
        }
        Ok(got)
    }

    fn pcr(&mut self, pcr: u32) -> Result<cmd::Digest, Fail> {
        let n = self.run(|b| cmd::pcr_read(b, pcr))?;
        Ok(cmd::parse_pcr_read(&self.rsp[..n])?)
    }

    fn extend(&mut self, pcr: u32, digest: &cmd::Digest) -> Result<(), Fail> {
        let n = self.run(|b| cmd::pcr_extend(b, pcr, digest))?;
        Ok(cmd::parse_empty(&self.rsp[..n])?)
    }

    fn flush(&mut self, handle: u32) {
        let _ = self.run(|b| cmd::flush(b, handle));
    }

    fn primary(&mut self) -> Result<u32, Fail> {
        if let Some(h) = self.primary {
            return Ok(h);
        }
        let n = self.run(cmd::create_primary)?;
        let h = cmd::parse_handle(&self.rsp[..n])?;
        self.primary = Some(h);
        Ok(h)
    }

    /// A policy session (or a trial one) with PolicyPCR over SEAL_PCRS.
    fn pcr_session(&mut self, trial: bool) -> Result<u32, Fail> {
        let mut nonce = [0u8; 16];
        self.random(&mut nonce)?;
        let n = self.run(|b| cmd::start_policy_session(b, trial, &nonce))?;
        let s = cmd::parse_handle(&self.rsp[..n])?;
        let r = self.run(|b| cmd::policy_pcr(b, s, SEAL_PCRS)).and_then(|n| Ok(cmd::parse_empty(&self.rsp[..n])?));
        if let Err(e) = r {
            self.flush(s);
            return Err(e);
        }
        Ok(s)
    }

    /// SEAL: the blob's length in `out`.
    fn seal(&mut self, secret: &[u8], out: &mut [u8]) -> Result<usize, Fail> {
        if secret.is_empty() || secret.len() > cmd::MAX_SECRET {
            return Err(Fail::TooLong);
        }
        let parent = self.primary()?;
        let trial = self.pcr_session(true)?;
        let policy = self.run(|b| cmd::policy_get_digest(b, trial)).and_then(|n| Ok(cmd::parse_digest(&self.rsp[..n])?));
        self.flush(trial);
        let policy = policy?;
        let n = self.run(|b| cmd::create_sealed(b, parent, &policy, secret))?;
        let (private, public) = cmd::parse_create(&self.rsp[..n])?;
        let len = private.len() + public.len();
        if len > out.len() {
            return Err(Fail::Malformed);
        }
        out[..private.len()].copy_from_slice(private);
        out[private.len()..len].copy_from_slice(public);
        Ok(len)
    }

    /// UNSEAL: the secret's length in `out`.
    fn unseal(&mut self, blob: &[u8], out: &mut [u8]) -> Result<usize, (u64, u64)> {
        if cmd::split_blob(blob).is_err() {
            return Err((BAD_BLOB, 0));
        }
        let parent = self.primary().map_err(Fail::status)?;
        // A blob this TPM did not make (another TPM, or changed) fails
        // the integrity check of its private part.
        let item = match self.run(|b| cmd::load(b, parent, blob)).and_then(|n| Ok(cmd::parse_handle(&self.rsp[..n])?)) {
            Ok(h) => h,
            Err(Fail::Tpm(c)) => return Err((BAD_BLOB, c as u64)),
            Err(e) => return Err(e.status()),
        };
        let r = self.pcr_session(false).and_then(|s| {
            // The response is read before the session's flush overwrites it.
            let r = self.run(|b| cmd::unseal(b, item, s)).and_then(|n| {
                let data = cmd::parse_unseal(&self.rsp[..n])?;
                if data.len() > out.len() {
                    return Err(Fail::Malformed);
                }
                out[..data.len()].copy_from_slice(data);
                Ok(data.len())
            });
            self.flush(s);
            r
        });
        self.flush(item);
        r.map_err(|e| match e {
            Fail::Tpm(c) if rc::base(c) == rc::POLICY_FAIL => (PCR_CHANGED, c as u64),
            e => e.status(),
        })
    }

    /// The NV counter's value, defining it (and incrementing it once, which
    /// initializes it) at the first use.
    fn counter(&mut self, index: u32, increment: bool) -> Result<u64, Fail> {
        let read = |s: &mut Server| -> Result<u64, Fail> {
            let n = s.run(|b| cmd::nv_read(b, index))?;
            Ok(cmd::parse_nv_counter(&s.rsp[..n])?)
        };
        let inc = |s: &mut Server| -> Result<(), Fail> {
            let n = s.run(|b| cmd::nv_increment(b, index))?;
            Ok(cmd::parse_empty(&s.rsp[..n])?)
        };
        let mut first = read(self);
        if let Err(Fail::Tpm(c)) = first
            && rc::base(c) != rc::NV_UNINITIALIZED
        {
            // Not defined yet (TPM_RC_HANDLE): define it.
            let n = self.run(|b| cmd::nv_define_counter(b, index))?;
            match cmd::parse_empty(&self.rsp[..n]) {
                Ok(()) | Err(cmd::Error::Tpm(rc::NV_DEFINED)) => {}
                Err(e) => return Err(e.into()),
            }
            first = read(self);
        }
        match first {
            Err(Fail::Tpm(c)) if rc::base(c) == rc::NV_UNINITIALIZED => {
                inc(self)?;
                if !increment {
                    return read(self);
                }
            }
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        if increment {
            inc(self)?;
        }
        read(self)
    }
}

/// A reply: its status, word 1, and the bytes of `out` that go in its string.
fn answer(out: &[u8], (status, value, send): (u64, u64, usize)) -> Answer {
    let a = Answer::refuse(status).with_results([value, 0, 0]);
    if send > 0 {
        keep_rt::ipc_buffer().set_string(&out[..send]);
        a.with_string()
    } else {
        a
    }
}

/// The request's string (none: empty), into `data`.
fn string_of(m: &Msg, data: &mut [u8]) -> usize {
    if m.tag.has_string() { keep_rt::ipc_buffer().read_string(data) } else { 0 }
}

/// The requests (abi/services/tpm.toml).  Without a TPM every one but QUIT
/// answers NO_TPM.
impl Handler for Server {
    fn extend(&mut self, m: &Msg, pcr: u64) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        let mut data = [0u8; 512];
        let len = string_of(m, &mut data);
        let r = match self.log.check(m.payload, pcr, len) {
            Err(st) => (st, 0, 0),
            Ok(()) => {
                let d: cmd::Digest = data[..32].try_into().unwrap();
                match Server::extend(self, pcr as u32, &d) {
                    Ok(()) => {
                        let name = core::str::from_utf8(&data[32..len]).unwrap_or("?");
                        self.log.push(Entry::new(pcr as u32, d, name));
                        (OK, 0, 0)
                    }
                    Err(e) => (e.status().0, e.status().1, 0),
                }
            }
        };
        answer(&[], r)
    }

    fn pcr(&mut self, _: &Msg, pcr: u64) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        if pcr >= 24 {
            return Answer::refuse(BAD_REQUEST);
        }
        match Server::pcr(self, pcr as u32) {
            Ok(d) => answer(&d, (OK, 0, 32)),
            Err(e) => answer(&[], (e.status().0, e.status().1, 0)),
        }
    }

    fn log(&mut self, _: &Msg, index: u64) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        let mut out = [0u8; 32 + NAME_LEN];
        let r = match self.log.get(index as usize) {
            Some(e) => {
                out[..32].copy_from_slice(&e.digest);
                let name = e.name().as_bytes();
                out[32..32 + name.len()].copy_from_slice(name);
                (OK, e.pcr as u64, 32 + name.len())
            }
            None => (END, 0, 0),
        };
        answer(&out, r)
    }

    fn random(&mut self, _: &Msg, count: u64) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        if !(1..=MAX_RANDOM).contains(&count) {
            return Answer::refuse(BAD_REQUEST);
        }
        let mut out = [0u8; MAX_RANDOM as usize];
        let r = match Server::random(self, &mut out[..count as usize]) {
            Ok(n) => (OK, 0, n),
            Err(e) => (e.status().0, e.status().1, 0),
        };
        answer(&out, r)
    }

    fn seal(&mut self, m: &Msg) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        let mut data = [0u8; 512];
        let len = string_of(m, &mut data);
        let mut out = [0u8; 512];
        let r = match Server::seal(self, &data[..len], &mut out) {
            Ok(n) => (OK, 0, n),
            Err(e) => (e.status().0, e.status().1, 0),
        };
        answer(&out, r)
    }

    fn unseal(&mut self, m: &Msg) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        let mut data = [0u8; 512];
        let len = string_of(m, &mut data);
        let mut out = [0u8; 512];
        let r = match Server::unseal(self, &data[..len], &mut out) {
            Ok(n) => (OK, 0, n),
            Err((st, v)) => (st, v, 0),
        };
        answer(&out, r)
    }

    fn counter(&mut self, m: &Msg, which: u64) -> Answer {
        self.counter_request(m, which, false)
    }

    fn increment(&mut self, m: &Msg, which: u64) -> Answer {
        self.counter_request(m, which, true)
    }

    /// The root task's capability (payload 0) only.
    fn quit(&mut self, m: &Msg) -> Answer {
        if m.payload != 0 {
            return Answer::refuse(DENIED);
        }
        self.quit = true;
        Answer::ok([0; 3])
    }
}

impl Server {
    fn counter_request(&mut self, m: &Msg, which: u64, increment: bool) -> Answer {
        if self.crb.is_none() {
            return Answer::refuse(NO_TPM);
        }
        let r = match counter_index(m.payload, which) {
            Err(st) => (st, 0, 0),
            Ok(index) => match Server::counter(self, index, increment) {
                Ok(v) => (OK, v, 0),
                Err(e) => (e.status().0, e.status().1, 0),
            },
        };
        answer(&[], r)
    }
}

fn main(_: u64, _: u64) -> i32 {
    let mut s = Server { crb: None, log: Log::new(), primary: None, cmd: [0; 2048], rsp: [0; 4096], quit: false };
    match Crb::open() {
        Ok(c) => {
            s.crb = Some(c);
            match s.startup() {
                Ok(()) => println!("tpm: TPM 2.0 on the CRB at {CRB_PA:#x}, started"),
                Err(e) => {
                    println!("tpm: TPM2_Startup failed ({e:?}): every request answers NO_TPM");
                    s.crb = None;
                }
            }
        }
        Err(why) => println!("tpm: {why}: no TPM, every request answers NO_TPM"),
    }
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let a = dispatch(&mut s, &m);
        let _ = Return(RET).reply(a.tag(), a.words());
        if s.quit {
            return 0;
        }
        m = recv(Tag::new(0).with_slots(1), 0);
    }
}

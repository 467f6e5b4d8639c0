//! The console multiplexer (lib.rs says what it does; the protocol is
//! keep_abi::terminal).  It holds the kernel's debug console in slot
//! CONSOLE, started by the root task, which holds its control capability
//! (payload 0).  A second process in its address space, the reader,
//! blocks in CONSOLE.READ and calls the server with what was typed, so
//! that the server waits for input and requests in one receive and never
//! polls.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use keep_abi::terminal as proto;
use keep_abi::{
    ACCOUNT, CONSOLE, Error, IpcBuffer, Notification, Process, Return, SELF_ASPACE, SELF_PROCESS, Tag,
    method, pack_name, recv, slot, syscall, tag,
};
use keep_console::access::{self, Holder};
use keep_console::screen::{Kind, Refused, Screen};

keep_rt::entry!(main);

/// Where each message's return capability arrives, a capability sent with
/// it (SET_NOTIFY), and a scratch slot for the capabilities NEW makes.
const RET: u64 = 0x10;
const CAP_IN: u64 = 0x11;
const SCRATCH: u64 = 0x12;
const READER_PROCESS: u64 = 0x13;
const READER_SENDER: u64 = 0x14;
/// Terminal vt's notification, if it set one.
const NOTIFY_BASE: u64 = 0x40;

/// Payloads: 0 the control capability; a terminal's has TERMINAL, its
/// number in bits 0-31 and READABLE when it may read; the reader's READER.
const TERMINAL: u64 = 1 << 62;
const READABLE: u64 = 1 << 32;
const READER: u64 = 1 << 63;
/// The reader's label: INPUT + the bytes in the words.
const INPUT: u64 = 0x400;

fn main(_: u64, _: u64) -> i32 {
    let _ = SELF_PROCESS.set_name("console");
    if let Err(e) = start_reader() {
        let _ = CONSOLE.write_all(b"console: cannot start the reader: ");
        let _ = CONSOLE.write_all(e.name().as_bytes());
        let _ = CONSOLE.write_all(b"\n");
        return 1;
    }
    let mut s = Server { screen: Screen::new(), notify: Vec::new() };
    s.serve()
}

struct Server {
    screen: Screen,
    /// (vt, bits) of the terminals that set a notification.
    notify: Vec<(u64, u64)>,
}

fn status(e: Refused) -> u64 {
    match e {
        Refused::NoSuchTerminal | Refused::OutputOnly => Error::INVALID_ARG.0,
        Refused::Full => Error::NO_MEMORY.0,
    }
}

impl Server {
    fn serve(&mut self) -> ! {
        let mut out = Vec::with_capacity(4096);
        let mut string = [0u8; proto::WRITE_MAX];
        loop {
            let b = keep_rt::ipc_buffer();
            b.recv_slots[0] = RET;
            b.recv_slots[1] = CAP_IN;
            let m = recv(Tag::new(0).with_slots(2), 0);
            if m.err != 0 {
                continue;
            }
            let label = m.tag.label();
            let w = m.words;
            let reply = if m.payload == READER {
                if (INPUT..=INPUT + proto::WORDS_MAX as u64).contains(&label) {
                    let mut bytes = [0u8; proto::WORDS_MAX];
                    let n = proto::unpack(&w, (label - INPUT) as usize, &mut bytes);
                    if let Some(vt) = self.screen.input(&bytes[..n], &mut out)
                        && let Some(&(_, bits)) = self.notify.iter().find(|n| n.0 == vt)
                    {
                        let _ = Notification(NOTIFY_BASE + vt).signal(bits);
                    }
                }
                [0; 4]
            } else if m.payload & TERMINAL != 0 {
                let vt = m.payload & 0xffff_ffff;
                let readable = m.payload & READABLE != 0;
                match access::check(Holder::Terminal { readable }, label) {
                    Err(e) => [e.0, 0, 0, 0],
                    Ok(()) => self.terminal(vt, readable, label, w, m.tag.has_string(), m.tag.caps(), &mut string, &mut out),
                }
            } else if m.payload == 0 {
                match access::check(Holder::Control, label) {
                    Err(e) => [e.0, 0, 0, 0],
                    Ok(()) => self.control(label, w, &mut out),
                }
            } else {
                [Error::INVALID_ARG.0, 0, 0, 0]
            };
            if !out.is_empty() {
                let _ = CONSOLE.write_all(&out);
                out.clear();
            }
            if m.tag.caps() > 1 {
                let _ = SELF_ASPACE.delete_cap(CAP_IN);
            }
            if m.tag.is_called() {
                let caps = if label == proto::NEW || label == proto::VIEW { reply_caps(&reply) } else { 0 };
                let _ = Return(RET).reply(Tag::new(0).with_caps(caps), reply);
                let _ = SELF_ASPACE.delete_cap(SCRATCH);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn terminal(
        &mut self,
        vt: u64,
        readable: bool,
        label: u64,
        w: [u64; 4],
        has_string: bool,
        caps: u64,
        string: &mut [u8; proto::WRITE_MAX],
        out: &mut Vec<u8>,
    ) -> [u64; 4] {
        let refuse = |e: Error| [e.0, 0, 0, 0];
        match label {
            proto::WRITE if has_string => {
                let n = keep_rt::ipc_buffer().read_string(string);
                match self.screen.write(vt, &string[..n], out) {
                    Ok(n) => [0, n as u64, 0, 0],
                    Err(e) => [status(e), 0, 0, 0],
                }
            }
            l if l & !proto::MORE > proto::WRITE_WORDS && l & !proto::MORE <= proto::WRITE_WORDS + proto::WORDS_MAX as u64 => {
                let mut bytes = [0u8; proto::WORDS_MAX];
                let n = proto::unpack(&w, (l & !proto::MORE) as usize - proto::WRITE_WORDS as usize, &mut bytes);
                match self.screen.write_part(vt, &bytes[..n], l & proto::MORE != 0, out) {
                    Ok(n) => [0, n as u64, 0, 0],
                    Err(e) => [status(e), 0, 0, 0],
                }
            }
            proto::READ if !readable => refuse(Error::NO_RIGHTS),
            proto::READ => {
                if w[0] == 0 || w[0] > proto::READ_MAX as u64 {
                    return refuse(Error::INVALID_ARG);
                }
                let mut bytes = [0u8; proto::READ_MAX];
                match self.screen.read(vt, &mut bytes[..w[0] as usize]) {
                    Ok(0) => refuse(Error::WOULD_BLOCK),
                    Ok(n) => {
                        let p = proto::pack(&bytes[..n]);
                        [0, n as u64, p[0], p[1]]
                    }
                    Err(e) => [status(e), 0, 0, 0],
                }
            }
            proto::SET_NOTIFY if !readable => refuse(Error::NO_RIGHTS),
            proto::SET_NOTIFY => {
                // The received count includes the call's return capability.
                if caps != 2 || w[0] == 0 {
                    return refuse(Error::INVALID_ARG);
                }
                match SELF_ASPACE.identify_cap(CAP_IN) {
                    Ok(c) if c.ty == keep_abi::ty::NOTIFICATION => {}
                    _ => return refuse(Error::WRONG_TYPE),
                }
                let _ = SELF_ASPACE.delete_cap(NOTIFY_BASE + vt);
                if let Err(e) = SELF_ASPACE.move_cap(CAP_IN, NOTIFY_BASE + vt) {
                    return refuse(e);
                }
                self.notify.retain(|n| n.0 != vt);
                self.notify.push((vt, w[0]));
                // Input may be waiting already.
                if self.screen.get(vt).is_some_and(|v| v.input_waiting() > 0) {
                    let _ = Notification(NOTIFY_BASE + vt).signal(w[0]);
                }
                [0; 4]
            }
            proto::NEW | proto::VIEW | proto::SWITCH | proto::LIST => refuse(Error::NO_RIGHTS),
            _ => refuse(Error::INVALID_METHOD),
        }
    }

    fn control(&mut self, label: u64, w: [u64; 4], out: &mut Vec<u8>) -> [u64; 4] {
        match label {
            proto::NEW => {
                let kind = match w[0] {
                    proto::INTERACTIVE => Kind::Interactive,
                    proto::OUTPUT_ONLY => Kind::OutputOnly,
                    _ => return [Error::INVALID_ARG.0, 0, 0, 0],
                };
                let mut name = [0u8; 16];
                name[..8].copy_from_slice(&w[1].to_le_bytes());
                name[8..].copy_from_slice(&w[2].to_le_bytes());
                let name = keep_abi::name_str(&name);
                let vt = match self.screen.add(name, kind, out) {
                    Ok(vt) => vt,
                    Err(e) => return [status(e), 0, 0, 0],
                };
                let payload = TERMINAL | vt | if kind == Kind::Interactive { READABLE } else { 0 };
                match SELF_PROCESS.mint(SCRATCH, payload, 0) {
                    Ok(()) => [0, vt, 0, 0],
                    Err(e) => [e.0, 0, 0, 0],
                }
            }
            proto::VIEW => {
                if self.screen.get(w[0]).is_none() || w[0] > 0xffff_ffff {
                    return [Error::INVALID_ARG.0, 0, 0, 0];
                }
                match SELF_PROCESS.mint(SCRATCH, TERMINAL | w[0], 0) {
                    Ok(()) => [0, w[0], 0, 0],
                    Err(e) => [e.0, 0, 0, 0],
                }
            }
            proto::SWITCH => match self.screen.switch(w[0], out) {
                Ok(()) => [0; 4],
                Err(e) => [status(e), 0, 0, 0],
            },
            proto::LIST => {
                let owner = self.screen.owner();
                match self.screen.terminals().get(w[0] as usize) {
                    Some(v) => {
                        let kind = if v.kind == Kind::OutputOnly { proto::OUTPUT_ONLY } else { proto::INTERACTIVE };
                        let flags = v.number | kind << 32 | ((owner == Some(v.number)) as u64) << 33;
                        let (a, b) = pack_name(&v.name);
                        [0, flags, a, b]
                    }
                    None => [Error::INVALID_ARG.0, 0, 0, 0],
                }
            }
            _ => [Error::INVALID_METHOD.0, 0, 0, 0],
        }
    }
}

/// NEW and VIEW send the capability they made when they succeeded.
fn reply_caps(reply: &[u64; 4]) -> u64 {
    if reply[0] != 0 {
        return 0;
    }
    keep_rt::ipc_buffer().set_send_caps(&[(SCRATCH, 0)])
}

// The reader: a second process in this address space, with a stack and an
// IPC buffer of its own, that touches nothing else of the server's.

const STACK_BYTES: usize = 8 * 1024;

#[repr(C, align(4096))]
struct Stack([u8; STACK_BYTES]);

static mut STACK: Stack = Stack([0; STACK_BYTES]);
static mut BUFFER: IpcBuffer = IpcBuffer::new();

#[inline(never)]
extern "C" fn reader(sender: u64) -> ! {
    let mut buf = [0u8; proto::WORDS_MAX];
    loop {
        let (err, res) = keep_abi::invoke_raw(
            slot::CONSOLE,
            method::console::READ,
            [buf.as_mut_ptr() as u64, buf.len() as u64, 0, 0],
        );
        if err != 0 {
            // The console refused (it never should): do not spin.
            let _ = syscall(slot::TIMER, method::timer::SLEEP, [100, 0, 0, 0], 0);
            continue;
        }
        let n = (res[0] as usize).min(buf.len());
        let words = proto::pack(&buf[..n]);
        let _ = syscall(sender, Tag::new(INPUT + n as u64).with_mode(tag::MODE_CALL).0, words, 0);
    }
}

fn start_reader() -> keep_abi::Result<()> {
    SELF_PROCESS.mint(READER_SENDER, READER, 0)?;
    ACCOUNT.create_process(slot::SELF_ASPACE, READER_PROCESS)?;
    let p = Process(READER_PROCESS);
    let stack = &raw mut STACK as u64;
    let top = (stack + STACK_BYTES as u64) & !15;
    p.set_name("console-reader")?;
    p.set_ipc_buffer(&raw mut BUFFER as u64)?;
    p.set_regs(reader as *const () as u64, top - 8, READER_SENDER, 0)?;
    p.start()
}

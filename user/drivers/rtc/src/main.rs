//! The rtc server (its protocol generated from abi/services/rtc.toml,
//! answered through the generated `dispatch`): the driver of the CMOS real-time
//! clock, a user-level program holding only I/O ports 0x70 and 0x71 (in
//! the usual IOPORT slot).  It reads the clock at every NOW: the hardware
//! keeps the time, so the server keeps nothing and a restart loses
//! nothing.

#![no_std]
#![no_main]

use keep_abi::proto::Answer;
use keep_abi::{IOPORT, Msg, Return, SELF_ASPACE, Tag, recv, slot, ty};
use keep_rt::println;
use keep_rtc::*;

keep_rt::entry!(main);

/// Where each call's return capability arrives.
const RET: u64 = slot::FIRST_FREE;

fn read_reg(r: u8) -> Option<u8> {
    IOPORT.write(INDEX_PORT, 1, r as u64).ok()?;
    IOPORT.read(DATA_PORT, 1).ok().map(|v| v as u8)
}

fn read_raw() -> Option<Raw> {
    Some(Raw {
        seconds: read_reg(reg::SECONDS)?,
        minutes: read_reg(reg::MINUTES)?,
        hours: read_reg(reg::HOURS)?,
        day: read_reg(reg::DAY)?,
        month: read_reg(reg::MONTH)?,
        year: read_reg(reg::YEAR)?,
        century: read_reg(reg::CENTURY)?,
        status_b: read_reg(reg::STATUS_B)?,
    })
}

/// The clock's time: read when no update is under way, and read again
/// until two readings agree (an update may start between the registers).
fn read_clock() -> Option<u64> {
    for _ in 0..10 {
        // An update keeps UIP set for under 2 ms (it is set 244 us before).
        for _ in 0..5 {
            if read_reg(reg::STATUS_A)? & reg::UIP == 0 {
                break;
            }
            // A receive with a time-out is the wait (no timer needed).
            let _ = recv(Tag::new(0), 1);
        }
        let a = read_raw()?;
        if read_raw()? == a {
            return decode(a);
        }
    }
    None
}

/// Whether this instance holds the clock's two ports.
fn holds_ports() -> bool {
    SELF_ASPACE.identify_cap(slot::IOPORT).is_ok_and(|c| c.live && c.ty == ty::IOPORT)
        && IOPORT.info().is_ok_and(|(base, n)| base <= INDEX_PORT && base + n > DATA_PORT)
}

/// The server: whether it holds the ports, and whether QUIT was asked.
struct Rtc {
    ports: bool,
    quit: bool,
}

impl Handler for Rtc {
    fn now(&mut self, _: &Msg) -> Answer {
        match if self.ports { read_clock() } else { None } {
            Some(t) => Answer::value(t),
            None => Answer::refuse(NO_CLOCK),
        }
    }

    /// Served to the administrator only (a client's is DENIED by `dispatch`).
    fn quit(&mut self, _: &Msg) -> Answer {
        self.quit = true;
        Answer::ok([0; 3])
    }
}

fn main(_: u64, _: u64) -> i32 {
    let mut rtc = Rtc { ports: holds_ports(), quit: false };
    if !rtc.ports {
        println!("rtc: no I/O ports 0x70-0x71 (ioport=0x70+2 in the description): NOW answers NO_CLOCK");
    }
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let a = dispatch(&mut rtc, &m);
        if rtc.quit {
            let _ = Return(RET).reply(a.tag(), a.words());
            return 0;
        }
        m = Return(RET).reply_recv(Tag::new(0).with_slots(1), a.words(), 0);
    }
}

//! The wall clock (docs/devices.md, "The wall clock"): the `rtc` server
//! reads the machine's CMOS real-time clock (an MC146818, which QEMU sets
//! to the host's UTC at start) through the two I/O ports 0x70 and 0x71,
//! the only device capability it holds (`ioport=0x70+2` in the system
//! description), and answers the time as Unix seconds.  This library is
//! its protocol, the decoding of the clock's registers (host-tested) and
//! the client side; `main.rs` is the server.
//!
//! The protocol is defined in `abi/services/rtc.toml`; `tools/idlgen.py`
//! generates from it `protocol.rs` (labels, statuses, the client [`Stub`])
//! and the table in docs/devices.md.

#![no_std]

use keep_abi::Sender;

pub mod protocol;
pub use protocol::*;

/// The index and data ports of the CMOS.
pub const INDEX_PORT: u64 = 0x70;
pub const DATA_PORT: u64 = 0x71;

/// The CMOS registers the server reads.
pub mod reg {
    pub const SECONDS: u8 = 0x00;
    pub const MINUTES: u8 = 0x02;
    pub const HOURS: u8 = 0x04;
    pub const DAY: u8 = 0x07;
    pub const MONTH: u8 = 0x08;
    pub const YEAR: u8 = 0x09;
    pub const STATUS_A: u8 = 0x0a;
    pub const STATUS_B: u8 = 0x0b;
    /// The century (the ACPI FADT's usual place; QEMU keeps it here).
    pub const CENTURY: u8 = 0x32;
    /// Status A: an update of the time registers is under way.
    pub const UIP: u8 = 0x80;
    /// Status B: binary (not BCD) values; 24-hour (not 12-hour) clock.
    pub const BINARY: u8 = 0x04;
    pub const HOURS_24: u8 = 0x02;
    /// In 12-hour mode the hour's top bit says PM.
    pub const PM: u8 = 0x80;
}

/// The time registers as read (status B says how to take them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Raw {
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub day: u8,
    pub month: u8,
    pub year: u8,
    pub century: u8,
    pub status_b: u8,
}

fn bcd(v: u8) -> Option<u8> {
    let (hi, lo) = (v >> 4, v & 0xf);
    (hi < 10 && lo < 10).then_some(hi * 10 + lo)
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date and time of Unix time `t` (UTC): (year, month, day,
/// hours, minutes, seconds); the inverse of [`days_from_civil`] and a day's
/// seconds.
pub fn civil(t: u64) -> (i64, u32, u32, u32, u32, u32) {
    let (days, secs) = ((t / 86_400) as i64, (t % 86_400) as u32);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + (month <= 2) as i64;
    (year, month, day, secs / 3600, secs / 60 % 60, secs % 60)
}

/// The Unix time the registers say, or None when they hold no valid date
/// (a clock never set, a value that is not BCD in BCD mode...).  A
/// century register that reads 0 or no valid value means 20xx.
pub fn decode(r: Raw) -> Option<u64> {
    let binary = r.status_b & reg::BINARY != 0;
    let num = |v: u8| if binary { Some(v) } else { bcd(v) };
    let pm = r.status_b & reg::HOURS_24 == 0 && r.hours & reg::PM != 0;
    let mut hours = num(if r.status_b & reg::HOURS_24 == 0 { r.hours & !reg::PM } else { r.hours })?;
    if r.status_b & reg::HOURS_24 == 0 {
        // 12-hour clock: 12 AM is midnight, 12 PM noon.
        if !(1..=12).contains(&hours) {
            return None;
        }
        hours = hours % 12 + if pm { 12 } else { 0 };
    }
    let (sec, min, day, month, year) = (num(r.seconds)?, num(r.minutes)?, num(r.day)?, num(r.month)?, num(r.year)?);
    let century = match num(r.century) {
        Some(c @ 19..=99) => c as i64,
        _ => 20,
    };
    if sec > 59 || min > 59 || hours > 23 || !(1..=12).contains(&month) || year > 99 {
        return None;
    }
    let year = century * 100 + year as i64;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1];
    if day == 0 || day > month_days {
        return None;
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let t = days * 86_400 + hours as i64 * 3600 + min as i64 * 60 + sec as i64;
    u64::try_from(t).ok()
}

/// The client side: a sender capability to the server.
#[derive(Clone, Copy)]
pub struct Client(pub Sender);

impl Client {
    /// NOW: Ok(Unix seconds), or Err with the server's status, or the
    /// kernel's error + 0x100 when the call itself failed.
    pub fn now(self) -> Result<u64, u64> {
        Stub(self.0).now().map_err(|e| match e {
            Refused::Call(k) => 0x100 + k.0,
            Refused::Status(s) => s,
        })
    }
}

/// A status's name (or, from 0x100 up, that the call failed), for messages.
pub fn status_name(s: u64) -> &'static str {
    if s >= 0x100 { "the call failed" } else { protocol::status_name(s) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(b: u8, y: u8, mo: u8, d: u8, h: u8, mi: u8, s: u8, c: u8) -> Raw {
        Raw { seconds: s, minutes: mi, hours: h, day: d, month: mo, year: y, century: c, status_b: b }
    }
    const BCD24: u8 = reg::HOURS_24;
    const BIN24: u8 = reg::HOURS_24 | reg::BINARY;

    #[test]
    fn days_count_from_1970() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2024, 2, 29), 19_782);
    }

    #[test]
    fn civil_is_the_inverse() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil(1_709_214_307), (2024, 2, 29, 13, 45, 7));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil(4_102_444_799), (2099, 12, 31, 23, 59, 59));
        for t in (0..4_102_444_800u64).step_by(86_400 * 7 + 3_601) {
            let (y, mo, d, h, mi, s) = civil(t);
            let back = days_from_civil(y, mo, d) * 86_400 + (h * 3600 + mi * 60 + s) as i64;
            assert_eq!(back, t as i64);
        }
    }

    #[test]
    fn decodes_bcd_and_binary_24_hour() {
        // 2024-02-29 13:45:07 UTC = 1709214307.
        assert_eq!(decode(raw(BCD24, 0x24, 0x02, 0x29, 0x13, 0x45, 0x07, 0x20)), Some(1_709_214_307));
        assert_eq!(decode(raw(BIN24, 24, 2, 29, 13, 45, 7, 20)), Some(1_709_214_307));
        // No century register: 20xx.
        assert_eq!(decode(raw(BIN24, 24, 2, 29, 13, 45, 7, 0)), Some(1_709_214_307));
        assert_eq!(decode(raw(BCD24, 0x70, 0x01, 0x01, 0, 0, 0, 0x19)), Some(0));
    }

    #[test]
    fn decodes_12_hour() {
        // 1 PM BCD: 0x81 | 0x01... 13:45:07 is 1 PM.
        assert_eq!(decode(raw(0, 0x24, 0x02, 0x29, 0x80 | 0x01, 0x45, 0x07, 0x20)), Some(1_709_214_307));
        assert_eq!(decode(raw(reg::BINARY, 24, 2, 29, 0x80 | 1, 45, 7, 20)), Some(1_709_214_307));
        // 12 AM is midnight, 12 PM noon.
        let midnight = decode(raw(reg::BINARY, 24, 2, 29, 12, 0, 0, 20)).unwrap();
        assert_eq!(midnight % 86_400, 0);
        let noon = decode(raw(reg::BINARY, 24, 2, 29, 0x80 | 12, 0, 0, 20)).unwrap();
        assert_eq!(noon - midnight, 12 * 3600);
        assert_eq!(decode(raw(reg::BINARY, 24, 2, 29, 0, 0, 0, 20)), None, "hour 0 in 12-hour mode");
    }

    #[test]
    fn refuses_what_is_no_date() {
        assert_eq!(decode(raw(BCD24, 0x24, 0x02, 0x30, 0x13, 0x45, 0x07, 0x20)), None, "30 February");
        assert_eq!(decode(raw(BCD24, 0x23, 0x02, 0x29, 0, 0, 0, 0x20)), None, "29 February 2023");
        assert_eq!(decode(raw(BCD24, 0x24, 0x13, 0x01, 0, 0, 0, 0x20)), None, "month 13");
        assert_eq!(decode(raw(BCD24, 0x24, 0x01, 0x01, 0x24, 0, 0, 0x20)), None, "hour 24");
        assert_eq!(decode(raw(BCD24, 0x24, 0x01, 0x01, 0, 0x60, 0, 0x20)), None, "minute 60");
        assert_eq!(decode(raw(BCD24, 0x2a, 0x01, 0x01, 0, 0, 0, 0x20)), None, "not BCD");
        assert_eq!(decode(raw(BIN24, 24, 1, 0, 0, 0, 0, 20)), None, "day 0");
        assert_eq!(decode(raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), None, "a floating bus");
    }
}

#[cfg(test)]
mod protocol_tests {
    use super::*;

    /// The generated protocol keeps the wire values clients and servers
    /// already use.
    #[test]
    fn wire_values() {
        assert_eq!((NOW, QUIT), (1, 2));
        assert_eq!((OK, BAD_REQUEST, DENIED, NO_CLOCK), (0, 1, 2, 3));
        assert!(serves(NOW, 0) && serves(NOW, (1 << 62) | 3) && !serves(NOW, u64::MAX));
        assert!(serves(QUIT, 0) && !serves(QUIT, (1 << 62) | 3) && !serves(99, 0));
        assert_eq!(status_name(NO_CLOCK), "NO_CLOCK");
        assert_eq!(status_name(0x105), "the call failed");
    }

    struct Quits(u32);
    impl Handler for Quits {
        fn now(&mut self, _: &keep_abi::Msg) -> keep_abi::proto::Answer {
            keep_abi::proto::Answer::value(1)
        }
        fn quit(&mut self, _: &keep_abi::Msg) -> keep_abi::proto::Answer {
            self.0 += 1;
            keep_abi::proto::Answer::ok([0; 3])
        }
    }

    /// QUIT is the administrator's: a client's is DENIED and reaches no
    /// handler; a label that is no request is BAD_REQUEST.
    #[test]
    fn dispatch_denies_a_clients_quit() {
        let msg = |label, payload| keep_abi::Msg { err: 0, tag: keep_abi::Tag::new(label), payload, words: [0; 4] };
        let mut h = Quits(0);
        assert_eq!(dispatch(&mut h, &msg(QUIT, (1 << 62) | 3)).words(), [DENIED, 0, 0, 0]);
        assert_eq!(h.0, 0);
        assert_eq!(dispatch(&mut h, &msg(QUIT, 0)).words(), [OK, 0, 0, 0]);
        assert_eq!(h.0, 1);
        assert_eq!(dispatch(&mut h, &msg(NOW, (1 << 62) | 3)).words(), [OK, 1, 0, 0]);
        assert_eq!(dispatch(&mut h, &msg(7, 0)).words(), [BAD_REQUEST, 0, 0, 0]);
    }
}

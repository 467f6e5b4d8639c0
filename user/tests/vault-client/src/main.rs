//! A client of the vault from the system description (`uses=vault`;
//! docs/trusted-core.md, "Secure storage").  arg0 says what it does:
//!
//! - 0: the protocol's checks in its own namespace (PUT, GET, LIST,
//!   DELETE; the limits and bad requests refused with nothing changed),
//!   leaving the namespace as it found it;
//! - 1 and 4: PUT of key `secret`: `kept by the vault: one` (`two`);
//! - 2: GET of key `secret`, printed;
//! - 3: the key `secret` is not this client's: GET and DELETE refused
//!   as NOT_FOUND (another client put one of that name).
//!
//! Exit code 0 when that held, 1 when not, 2 without the vault.

#![no_std]
#![no_main]

extern crate alloc;

use keep_rt::println;
use keep_system::names;
use keep_vault::{BAD_REQUEST, Client, FULL, LIST, NOT_FOUND, PUT, STATS, TOO_LARGE, status_text};

keep_rt::entry!(main);

const VAULT: u64 = 0x20;

fn text(r: Result<u64, u64>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(s) if s >= 0x100 => "the call failed",
        Err(s) => status_text(s),
    }
}

/// The protocol's checks; true when all held.
fn checks(v: Client) -> bool {
    let mut ok = true;
    let mut check = |what: &str, good: bool| {
        if !good {
            println!("vault-client: {what} ... FAILED");
            ok = false;
        }
    };
    let mut out = [0u8; 512];
    let (count0, _) = v.list(0, &mut out).unwrap_or_else(|e| (if e == NOT_FOUND { 0 } else { u64::MAX }, 0));
    check("the vault serves", count0 != u64::MAX);
    let c1 = v.put(b"check-a", b"alpha");
    check("PUT", c1.is_ok());
    check("GET", v.get(b"check-a", &mut out) == Ok(5) && &out[..5] == b"alpha");
    let c2 = v.put(b"check-a", b"beta!");
    check("PUT of a new value, the counter up", c2.is_ok() && c2 > c1);
    check("GET of the new value", v.get(b"check-a", &mut out) == Ok(5) && &out[..5] == b"beta!");
    let ce = v.put(b"check-e", b"");
    check("an empty value", ce.is_ok() && v.get(b"check-e", &mut out) == Ok(0));
    let (n, l) = v.list(0, &mut out).unwrap_or((0, 0));
    check("LIST counts the caller's keys", n == count0 + 2 && l > 0);
    // Refusals, each leaving the namespace as it was.
    let long = [b'n'; 33];
    let big = [b'v'; 257];
    check("a name of 33 bytes", v.put(&long, b"x") == Err(BAD_REQUEST));
    check("a value of 257 bytes", v.put(b"check-b", &big) == Err(TOO_LARGE));
    check("name_len past the string", v.raw(PUT, 9, b"short") == (BAD_REQUEST, 0));
    check("an empty name", v.raw(PUT, 0, b"xyz") == (BAD_REQUEST, 0));
    check("GET of no name", v.get(b"", &mut out) == Err(BAD_REQUEST));
    check("LIST past 2^16", v.raw(LIST, 0x10000, b"") == (BAD_REQUEST, 0));
    check("STATS is the administrator's", v.raw(STATS, 0, b"").0 == BAD_REQUEST);
    check("an unknown label", v.raw(77, 0, b"").0 == BAD_REQUEST);
    check("GET of no such key", v.get(b"check-none", &mut out) == Err(NOT_FOUND));
    check("DELETE of no such key", v.delete(b"check-none") == Err(NOT_FOUND));
    check("refusals changed nothing", v.list(0, &mut out).map(|r| r.0) == Ok(count0 + 2) && v.get(b"check-b", &mut out) == Err(NOT_FOUND));
    let c3 = v.list(0, &mut out).ok().and(v.put(b"check-a", b"beta!").ok());
    check("refusals wrote nothing (the counter one above)", c3.is_some_and(|c| Ok(c) == ce.map(|x| x + 1)));
    // The namespace's limit: 16 keys.
    let mut made = 0u64;
    let mut full = false;
    for i in 0..20u8 {
        let name = [b'f', b'-', b'a' + i];
        match v.put(&name, b"x") {
            Ok(_) => made += 1,
            Err(FULL) => {
                full = true;
                break;
            }
            Err(_) => break,
        }
    }
    check("FULL at 16 keys", full && count0 + 2 + made == 16);
    for i in 0..made as u8 {
        let _ = v.delete(&[b'f', b'-', b'a' + i]);
    }
    check("DELETE", v.delete(b"check-a").is_ok() && v.delete(b"check-e").is_ok());
    check("gone", v.get(b"check-a", &mut out) == Err(NOT_FOUND));
    check("the namespace as found", v.list(0, &mut out).map_or_else(|e| if e == NOT_FOUND { 0 } else { u64::MAX }, |r| r.0) == count0);
    ok
}

fn main(arg0: u64, _: u64) -> i32 {
    let v = match names::lookup_patiently("vault", VAULT, keep_rt::ipc_buffer()) {
        Ok(s) => Client(s),
        Err(e) => {
            println!("vault-client: no vault ({})", if e >= 0x100 { "the call failed" } else { names::status::name(e) });
            return 2;
        }
    };
    let mut out = [0u8; 512];
    match arg0 {
        0 => {
            if checks(v) {
                println!("vault-client: protocol checks ... ok");
                0
            } else {
                1
            }
        }
        1 | 4 => {
            let value: &[u8] = if arg0 == 1 { b"kept by the vault: one" } else { b"kept by the vault: two" };
            let r = v.put(b"secret", value);
            println!("vault-client: PUT secret: {} (counter {})", text(r), r.unwrap_or(0));
            if r.is_ok() { 0 } else { 1 }
        }
        2 => match v.get(b"secret", &mut out) {
            Ok(n) => {
                println!("vault-client: GET secret: '{}'", core::str::from_utf8(&out[..n]).unwrap_or("?"));
                0
            }
            Err(s) => {
                println!("vault-client: GET secret: refused: {}", text(Err(s)));
                1
            }
        },
        3 => {
            let g = v.get(b"secret", &mut out);
            let d = v.delete(b"secret");
            if g == Err(NOT_FOUND) && d == Err(NOT_FOUND) {
                println!("vault-client: another client's key: refused (not found in this namespace)");
                0
            } else {
                println!("vault-client: another client's key: GET {:?}, DELETE {:?}", g.map(|_| ()), d);
                1
            }
        }
        _ => {
            println!("vault-client: arg0 {arg0} is none of 0-4");
            1
        }
    }
}

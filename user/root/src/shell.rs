//! The interactive shell on the debug console.  The kernel does not echo,
//! so the shell echoes what it accepts and erases on backspace.

use keep_abi::{ACCOUNT, CONSOLE, KERNEL, MEMORY, info, memtype, memtype_name, state_name};
use keep_rt::console::write_bytes;
use keep_rt::{print, println};

use crate::{MIB, Root, bench};

const PROMPT: &str = "keep> ";
const MAX_LINE: usize = 256;

/// (usage, description), in the order `help` lists them.
const COMMANDS: [(&str, &str); 8] = [
    ("help", "list the commands"),
    ("ps", "list processes: pid, state, priority, name"),
    ("mem", "show the memory map, free memory and the root's account"),
    ("test", "run the in-guest test suite (ktest)"),
    ("bench [name|prefix*]", "run the benchmarks (all, one, or those with a prefix)"),
    (
        "run <program> [arg0 [arg1]]",
        "run a program from the boot image and wait for it",
    ),
    ("echo <text>", "print the text"),
    ("halt", "power the machine off"),
];

pub fn run(root: &mut Root) -> i32 {
    println!("type 'help' for the list of commands");
    let mut line = [0u8; MAX_LINE];
    let mut len = 0;
    let mut after_cr = false;
    print!("{PROMPT}");
    loop {
        let mut input = [0u8; 64];
        let n = match CONSOLE.read(&mut input, false) {
            Ok(n) => n.min(input.len()),
            Err(e) => {
                println!("shell: console read failed: {e}");
                return 1;
            }
        };
        for &c in &input[..n] {
            // A terminal may send "\r\n" for one Enter.
            let skip = after_cr && c == b'\n';
            after_cr = c == b'\r';
            match c {
                _ if skip => {}
                b'\r' | b'\n' => {
                    write_bytes(b"\n");
                    // Only printable ASCII is ever stored, so this is UTF-8.
                    let text = core::str::from_utf8(&line[..len]).unwrap_or("");
                    execute(root, text);
                    len = 0;
                    print!("{PROMPT}");
                }
                0x08 | 0x7f if len > 0 => {
                    len -= 1;
                    write_bytes(b"\x08 \x08");
                }
                0x20..=0x7e if len < MAX_LINE => {
                    line[len] = c;
                    len += 1;
                    write_bytes(&[c]);
                }
                _ => {}
            }
        }
    }
}

fn execute(root: &mut Root, line: &str) {
    let mut words = line.split_whitespace();
    let Some(cmd) = words.next() else { return };
    match cmd {
        "help" => {
            for (usage, what) in COMMANDS {
                println!("  {usage:<28} {what}");
            }
        }
        "ps" => ps(),
        "mem" => mem(),
        "test" => {
            root.test();
        }
        "bench" => bench::run_all(root, words.next()),
        "halt" => {
            println!("powering off");
            let e = KERNEL.poweroff();
            println!("halt: POWEROFF failed: {e}");
        }
        "echo" => {
            let rest = line.trim_start()[4..].trim_start();
            println!("{rest}");
        }
        "run" => {
            let Some(name) = words.next() else {
                println!("usage: run <program> [arg0 [arg1]]");
                return;
            };
            let mut args = [0u64; 2];
            for a in args.iter_mut() {
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
            if let Some(status) = root.run(name, args[0], args[1]) {
                println!("run: {name} {status}");
            }
        }
        _ => println!("unknown command '{cmd}' — type 'help' for the list"),
    }
}

/// Decimal or 0x-prefixed hexadecimal.
fn parse_number(w: &str) -> Option<u64> {
    match w.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => w.parse().ok(),
    }
}

fn ps() {
    println!("  {:>5}  {:<9} {:>4}  name", "pid", "state", "prio");
    let mut index = 0;
    // The kernel has a bounded process table; the bound guards against a
    // `next` that does not advance.
    for _ in 0..4096 {
        let p = match KERNEL.process_info(index) {
            Ok(p) => p,
            Err(_) => break,
        };
        println!(
            "  {:>5}  {:<9} {:>4}  {}",
            p.pid,
            state_name(p.state),
            p.priority,
            p.name_str()
        );
        if p.next == 0 || p.next <= index {
            break;
        }
        index = p.next;
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

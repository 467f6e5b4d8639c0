//! A tiny program for tests and the shell's `run`: prints a greeting and
//! exits 0.  With arg0 == 1 it panics (the panic handler exits with 101);
//! with arg0 == 2 it exits with code arg1.

#![no_std]
#![no_main]

use keep_rt::println;

keep_rt::entry!(main);

fn main(arg0: u64, arg1: u64) -> i32 {
    println!("hello from a user program");
    match arg0 {
        1 => panic!("hello was asked to panic"),
        2 => arg1 as i32,
        _ => 0,
    }
}

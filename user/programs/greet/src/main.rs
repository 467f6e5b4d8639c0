//! The first example of docs/writing-programs.md: a program is a folder
//! under user/programs/ with these two files.

#![no_std]
#![no_main]

use keep_rt::println;

keep_rt::entry!(main);

/// arg0 and arg1 are the rdi and rsi its creator set; the return value is
/// the exit code.
fn main(arg0: u64, _arg1: u64) -> i32 {
    println!("hello, {arg0}");
    0
}

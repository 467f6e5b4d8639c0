#![no_std] #![no_main] keep_rt::entry!(main); fn main(_: u64, _: u64) -> i32 { 0 }

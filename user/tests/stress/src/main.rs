//! The stress program for the boot image: `stress <seed> <count>` as
//! arg0/arg1 (0 gives the defaults).  See the library for what it does.

#![no_std]
#![no_main]

keep_rt::entry!(main);

fn main(seed: u64, count: u64) -> i32 {
    keep_stress::run(seed, count)
}

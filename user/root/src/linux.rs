//! The shell's door to the workhorse, the Linux personality server
//! (docs/workhorse.md): started on first use, kept running (its file
//! system lives as long as it does), asked to run a command line with the
//! console as the program's terminal.

use keep_rt::println;
use keep_workhorse::{ROOTFS_ENTRY, Workhorse};

use crate::Root;

impl Root {
    fn workhorse(&mut self) -> Option<&Workhorse> {
        if self.workhorse.is_none() {
            let img = self.image.as_ref()?;
            let Some(elf) = img.find("workhorse") else {
                println!("linux: the boot image has no workhorse");
                return None;
            };
            let rootfs = img.find(ROOTFS_ENTRY).map_or(&[][..], |e| e.data);
            match Workhorse::start(&mut self.slots, elf.data, rootfs) {
                Ok(w) => self.workhorse = Some(w),
                Err(e) => {
                    println!("linux: cannot start the workhorse: {e}");
                    return None;
                }
            }
        }
        self.workhorse.as_ref()
    }

    /// `linux [PROGRAM ARGS...]`: runs it and reports a status other than
    /// exit 0; without arguments, lists the system calls refused so far.
    /// `typed_ahead`: input typed after the command line, the program's.
    pub fn linux(&mut self, args: &str, typed_ahead: &[u8]) {
        let Some(w) = self.workhorse() else { return };
        if args.is_empty() {
            match w.refused() {
                Ok(t) if t.is_empty() => println!("linux: no system call refused so far"),
                Ok(t) => {
                    println!("linux: system calls refused so far (number, name, count):");
                    for l in t.lines() {
                        println!("  {l}");
                    }
                }
                Err(e) => println!("linux: {e}"),
            }
            return;
        }
        match w.run_with_input(args, typed_ahead) {
            Ok(0) => {}
            Ok(st) if st & 0x7f == 0 => println!("linux: exit status {}", (st >> 8) & 0xff),
            Ok(st) => println!("linux: killed by signal {}", st & 0x7f),
            Err(e) => println!("linux: {e}"),
        }
    }
}

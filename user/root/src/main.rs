//! The root task: the first user program.  It holds every initial
//! capability, prints what the machine has, and then either runs the test
//! suite or the benchmarks (kernel command line `autotest` / `autobench`,
//! leaving QEMU with the verdict) or a shell on the console.

#![no_std]
#![no_main]

extern crate alloc;

mod bench;
mod checkpoint;
mod devices;
mod linux;
mod measure;
mod persistent;
mod shell;
mod shell_system;
mod system;
mod terminals;
mod vault;

use keep_abi::{
    ACCOUNT, KERNEL, MEMORY, SELF_ASPACE, SELF_PROCESS, Status, cpu, info, layout, slot, state,
};
use keep_abi::rights;
use keep_loader::{Blob, BootImage, Child, Grant, Loader, SlotPool, Spec};
use keep_rt::println;

keep_rt::entry!(main);

/// Frames the root task moves from the memory pool into its kernel-memory
/// account at start-up: the kernel gives it only ROOT_ACCOUNT_FRAMES, and
/// every address space, process and page table of the programs it loads
/// (ktest's included) is paid from this account.
pub const ROOT_DONATION: u64 = 4096;

/// The boot image the kernel mapped for us (None when absent or refused).
pub struct Root {
    pub image: Option<BootImage<'static>>,
    pub slots: SlotPool,
    /// What the benchmarks keep between runs of the shell's `bench`.
    pub bench: bench::Kept,
    /// The system built from the description (shell mode only).
    pub system: Option<system::System>,
    /// Programs of `run` loaded on a bank of their own: (process slot,
    /// bank, program name).
    pub banked: alloc::vec::Vec<(u64, keep_spacebank::Bank, alloc::string::String)>,
    /// A capability to the Linux personality server (init's), once asked for.
    pub workhorse: Option<keep_workhorse::Workhorse>,
    /// Times the system was built again after init ended.
    pub init_restarts: u32,
    /// The TPM's driver (docs/trusted-core.md), started at boot.
    pub tpm: Option<measure::Tpm>,
    /// The console multiplexer (shell mode only).
    pub mux: Option<terminals::Mux>,
}

fn main(image_addr: u64, image_size: u64) -> i32 {
    let _ = SELF_PROCESS.set_name("root");
    let mut root = Root {
        image: boot_image(image_addr, image_size),
        slots: SlotPool::growable(MEMORY, SELF_ASPACE),
        bench: bench::Kept::default(),
        system: None,
        init_restarts: 0,
        banked: alloc::vec::Vec::new(),
        workhorse: None,
        tpm: None,
        mux: None,
    };
    if let Err(e) = MEMORY.donate(slot::ACCOUNT, ROOT_DONATION) {
        println!("root: DONATE of {ROOT_DONATION} frames to the account failed: {e}");
    }
    banner(&root);

    let mut buf = [0u8; 512];
    let len = KERNEL.cmdline(&mut buf).unwrap_or(0).min(buf.len());
    let cmdline = core::str::from_utf8(&buf[..len]).unwrap_or("");
    let has = |word| cmdline.split_whitespace().any(|w| w == word);
    bench::ICOUNT.store(has("icount"), core::sync::atomic::Ordering::Relaxed);
    bench::io::IO.store(has("iobench"), core::sync::atomic::Ordering::Relaxed);
    if has("autotest") {
        let sealed = checkpoint::seal_key_check(&mut root);
        let passed = root.test() && sealed;
        println!(
            "root: autotest {}",
            if passed { "passed" } else { "FAILED" }
        );
        let e = KERNEL.debug_exit(if passed { 0 } else { 1 });
        println!("root: DEBUG_EXIT failed: {e}");
        return 1;
    }
    if has("autobench") {
        // `bench=NAME` (or `bench=PREFIX*`) runs only part of the suite.
        let filter = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("bench="));
        // `benchrepeat=K` runs it K times (tools/iprof.py profiles the
        // difference between K and 1, which is the measurement alone).
        let repeat = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("benchrepeat="))
            .and_then(|k| k.parse::<u32>().ok())
            .unwrap_or(1);
        for _ in 0..repeat {
            bench::run_all(&mut root, filter);
        }
        let e = KERNEL.debug_exit(0);
        println!("root: DEBUG_EXIT failed: {e}");
        return 1;
    }
    // The system description: `system=NAME` picks another file of the
    // boot image (the boot test's malformed one).
    let file = cmdline.split_whitespace().find_map(|w| w.strip_prefix("system=")).unwrap_or("system");
    // Measured boot: before the system's first program runs.
    root.tpm = measure::boot(&mut root, file);
    // From here on only the console multiplexer reads the console; the
    // shell has vt1 (docs/trusted-core.md, "The trusted path").
    root.mux = terminals::start(&mut root);
    persistent::before_system(&root, file, has("fresh"));
    shell_system::boot(&mut root, file);
    persistent::after_system(&mut root);
    shell::run(&mut root)
}

fn boot_image(addr: u64, size: u64) -> Option<BootImage<'static>> {
    if addr == 0 || size == 0 {
        println!("boot image: none");
        return None;
    }
    // SAFETY: the kernel maps the image read-only at addr for the lifetime
    // of the root task and never changes it.
    let bytes = unsafe { core::slice::from_raw_parts(addr as *const u8, size as usize) };
    match BootImage::parse(bytes) {
        Ok(img) => Some(img),
        Err(e) => {
            println!("boot image: refused: {e}");
            None
        }
    }
}

const MIB: u64 = 1 << 20;

const CPU_NAMES: [(u64, &str); 10] = [
    (cpu::NX, "nx"),
    (cpu::PCID, "pcid"),
    (cpu::APIC, "apic"),
    (cpu::TSC_DEADLINE, "tsc-deadline"),
    (cpu::PAGE1G, "page1g"),
    (cpu::SMEP, "smep"),
    (cpu::SMAP, "smap"),
    (cpu::INVPCID, "invpcid"),
    (cpu::GLOBAL, "global"),
    (cpu::XSAVE, "xsave"),
];

fn banner(root: &Root) {
    let v = KERNEL.info(info::VERSION).unwrap_or(0);
    println!(
        "Keep {}.{}.{} — capability microkernel",
        v >> 32,
        (v >> 16) & 0xffff,
        v & 0xffff
    );
    let total = KERNEL.info(info::MEM_TOTAL).unwrap_or(0);
    let free = KERNEL.info(info::MEM_FREE).unwrap_or(0);
    println!("memory: {} MiB total, {} MiB free", total / MIB, free / MIB);
    let features = KERNEL.info(info::CPU_FEATURES).unwrap_or(0);
    keep_rt::print!("cpu features:");
    for (bit, name) in CPU_NAMES {
        if features & bit != 0 {
            keep_rt::print!(" {name}");
        }
    }
    println!();
    if let Some(img) = &root.image {
        keep_rt::print!("boot image: {} programs:", img.len());
        for e in img.entries() {
            keep_rt::print!(" {} ({} KiB)", e.name, e.data.len().div_ceil(1024));
        }
        println!();
    }
}

impl Root {
    /// Loads `name` from the boot image with `arg0`/`arg1`, runs it to its
    /// end, destroys it and returns how it ended.
    pub fn run(&mut self, name: &str, arg0: u64, arg1: u64) -> Option<Status> {
        let child = self.load(name, arg0, arg1)?;
        let status = child.process.start().and_then(|_| child.process.wait());
        self.destroy(name, child);
        match status {
            Ok(s) => Some(s),
            Err(e) => {
                println!("run: '{name}' could not be run: {e}");
                None
            }
        }
    }

    /// Destroys a program that [`Root::load`] made (running or not) and
    /// gives back its frames and slots.
    pub fn destroy(&mut self, name: &str, child: Child) {
        if let Some(i) = self.banked.iter().position(|b| b.0 == child.process.0) {
            let (_, bank, _) = self.banked.swap_remove(i);
            shell_system::destroy_banked(self, name, child, bank);
            return;
        }
        if let Err(e) = Loader::new(&mut self.slots).destroy(child) {
            println!("run: cannot destroy '{name}': {e}");
        }
    }

    /// Loads `name` from the boot image with `arg0`/`arg1` into a new
    /// process, CREATED (not started); prints why when it cannot.  Every
    /// program gets the console (with the multiplexer: the shell's terminal,
    /// write-only), the root's kernel-memory account and the
    /// timer; ktest also gets read access to the kernel, the memory pool and
    /// a copy of the boot image (at the address the root task sees it,
    /// passed in rdi/rsi instead of the arguments).
    pub fn load(&mut self, name: &str, arg0: u64, arg1: u64) -> Option<Child> {
        let Some(img) = &self.image else {
            println!("run: there is no boot image");
            return None;
        };
        let Some(entry) = img.find(name) else {
            println!("run: no program '{name}' in the boot image");
            return None;
        };
        let grant = |s: u64, mask: u64| Grant {
            src: s,
            dest: s,
            rights: mask,
        };
        // With the console multiplexer, a program gets the shell's
        // terminal, write-only, and ktest the kernel's console.
        let (output, raw) = self.mux.as_ref().map_or((slot::CONSOLE, slot::CONSOLE), |m| (m.shell_view, m.raw_console));
        let console = |src: u64| Grant { src, dest: slot::CONSOLE, rights: 0 };
        let common = [
            console(output),
            grant(slot::ACCOUNT, 0),
            grant(slot::TIMER, 0),
        ];
        let trusted = [
            console(raw),
            grant(slot::ACCOUNT, 0),
            grant(slot::TIMER, 0),
            grant(slot::KERNEL, rights::READ),
            grant(slot::MEMORY, 0),
            grant(slot::PERSISTENT_MEMORY, 0),
            grant(slot::CHECKPOINT, 0),
            grant(slot::DEVMEM, 0),
            grant(slot::IOPORT, 0),
            grant(slot::INTERRUPT, 0),
        ];
        let image = img.bytes();
        // ktest starts programs and drivers from the image itself, on the
        // root's account.
        let privileged = name == "ktest";
        let spec = if privileged {
            Spec {
                name,
                elf: entry.data,
                arg0: layout::BOOT_IMAGE_VADDR,
                arg1: image.len() as u64,
                grants: &trusted,
                blob: Some(Blob {
                    vaddr: layout::BOOT_IMAGE_VADDR,
                    data: image,
                }),
            }
        } else {
            Spec {
                name,
                elf: entry.data,
                arg0,
                arg1,
                grants: &common,
                blob: None,
            }
        };
        // With the system running, a program gets its memory from a bank of
        // its own under the prime bank (ktest keeps the root's account: it
        // loads other programs from it).
        if !privileged && self.system.is_some() {
            return shell_system::load_banked(self, &spec);
        }
        match Loader::new(&mut self.slots).load(&spec) {
            Ok(c) => Some(c),
            Err(e) => {
                println!("run: cannot load '{name}': {e}");
                None
            }
        }
    }

    /// Runs ktest; true when it exited with code 0.
    pub fn test(&mut self) -> bool {
        let free = MEMORY.free().unwrap_or(0);
        let (account_free, _) = ACCOUNT.info().unwrap_or((0, 0));
        let status = self.run("ktest", 0, 0);
        let passed = matches!(
            status,
            Some(Status {
                state: state::EXITED,
                code: 0,
                ..
            })
        );
        match status {
            Some(s) => println!("test: ktest {s}"),
            None => println!("test: ktest did not run"),
        }
        let used = free.saturating_sub(MEMORY.free().unwrap_or(0));
        let (account_after, _) = ACCOUNT.info().unwrap_or((0, 0));
        println!(
            "test: {used} pool frames used by the run; account free {account_free} -> {account_after}"
        );
        passed
    }
}

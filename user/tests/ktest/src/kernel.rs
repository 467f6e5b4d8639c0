//! The machine as the kernel reports it: privilege level, version, memory
//! map, page-table invariants, time.

use alloc::vec::Vec;
use core::arch::x86_64::_rdtsc;

use keep_abi::{Error, KERNEL, MemEntry, SELF_ASPACE, check, info, memtype, rights};

use crate::{Ctx, Cx, TestResult, expect_err};

pub fn ring3(_: &mut Cx) -> TestResult {
    let cs: u16;
    // SAFETY: reading %cs has no side effects.
    unsafe { core::arch::asm!("mov {0:x}, cs", out(reg) cs, options(nomem, nostack)) };
    ensure!(cs & 3 == 3, "%cs = {cs:#x}, privilege level {}", cs & 3);
    Ok(())
}

pub fn version(_: &mut Cx) -> TestResult {
    let v = KERNEL.info(info::VERSION).ctx("INFO(VERSION)")?;
    let (major, minor, patch) = keep_abi::VERSION;
    let want = major << 32 | minor << 16 | patch;
    ensure!(v == want, "kernel reports {v:#x}, bindings are {want:#x}");
    Ok(())
}

pub fn boot_image(cx: &mut Cx) -> TestResult {
    let img = cx
        .image
        .as_ref()
        .ok_or("no valid boot image was passed in rdi/rsi")?;
    ensure!(img.find("hello").is_some(), "no 'hello' in the boot image");
    Ok(())
}

fn memmap() -> Result<Vec<MemEntry>, alloc::string::String> {
    let first = KERNEL.memmap(0).ctx("MEMMAP(0)")?;
    ensure!(
        first.count > 0 && first.count < 1024,
        "count {} is implausible",
        first.count
    );
    let mut v = Vec::new();
    for i in 0..first.count {
        let e = KERNEL.memmap(i).ctx("MEMMAP")?;
        ensure!(
            e.count == first.count,
            "entry {i} gives count {}, entry 0 gave {}",
            e.count,
            first.count
        );
        v.push(e);
    }
    Ok(v)
}

fn sum(map: &[MemEntry], ty: u64) -> u64 {
    map.iter().filter(|e| e.ty == ty).map(|e| e.len).sum()
}

pub fn memmap_sorted(_: &mut Cx) -> TestResult {
    let map = memmap()?;
    for (i, e) in map.iter().enumerate() {
        ensure!(e.len > 0, "entry {i} has length 0");
        ensure!(
            e.base.checked_add(e.len).is_some(),
            "entry {i} wraps around"
        );
    }
    for (i, w) in map.windows(2).enumerate() {
        ensure!(
            w[0].base + w[0].len <= w[1].base,
            "entries {i} ({:#x}+{:#x}) and {} ({:#x}) are unsorted or overlap",
            w[0].base,
            w[0].len,
            i + 1,
            w[1].base
        );
    }
    Ok(())
}

pub fn memmap_types(_: &mut Cx) -> TestResult {
    let map = memmap()?;
    let usable = map.iter().filter(|e| e.ty == memtype::USABLE).count();
    let kernel = map.iter().filter(|e| e.ty == memtype::KERNEL).count();
    ensure!(usable >= 1, "no USABLE entry");
    ensure!(kernel == 1, "{kernel} KERNEL entries, want 1");
    Ok(())
}

pub fn memmap_64mib(_: &mut Cx) -> TestResult {
    let usable = sum(&memmap()?, memtype::USABLE);
    ensure!(usable >= 64 << 20, "only {} KiB usable", usable / 1024);
    Ok(())
}

pub fn mem_total(_: &mut Cx) -> TestResult {
    let map = memmap()?;
    let want =
        sum(&map, memtype::USABLE) + sum(&map, memtype::KERNEL) + sum(&map, memtype::BOOT_IMAGE);
    let total = KERNEL.info(info::MEM_TOTAL).ctx("INFO(MEM_TOTAL)")?;
    ensure!(
        total == want,
        "MEM_TOTAL {total:#x}, memory map sums to {want:#x}"
    );
    Ok(())
}

pub fn mem_free(_: &mut Cx) -> TestResult {
    let total = KERNEL.info(info::MEM_TOTAL).ctx("INFO(MEM_TOTAL)")?;
    let free = KERNEL.info(info::MEM_FREE).ctx("INFO(MEM_FREE)")?;
    ensure!(
        free > 0 && free <= total,
        "MEM_FREE {free:#x}, MEM_TOTAL {total:#x}"
    );
    Ok(())
}

pub fn memmap_past_end(_: &mut Cx) -> TestResult {
    let count = KERNEL.memmap(0).ctx("MEMMAP(0)")?.count;
    expect_err(KERNEL.memmap(count), Error::INVALID_ARG, "MEMMAP(count)")?;
    expect_err(
        KERNEL.memmap(u64::MAX),
        Error::INVALID_ARG,
        "MEMMAP(u64::MAX)",
    )
}

pub fn kernel_bytes(_: &mut Cx) -> TestResult {
    let bytes = KERNEL.info(info::KERNEL_BYTES).ctx("INFO(KERNEL_BYTES)")?;
    let entry = sum(&memmap()?, memtype::KERNEL);
    ensure!(
        bytes > 0 && bytes <= entry,
        "KERNEL_BYTES {bytes:#x}, KERNEL entry {entry:#x}"
    );
    Ok(())
}

fn paging(which: u64, name: &str) -> TestResult {
    let (violations, checked) = KERNEL.check_paging(which).ctx(name)?;
    ensure!(
        violations == 0,
        "{violations} violations in {checked} mappings"
    );
    ensure!(checked > 0, "no mappings were checked");
    Ok(())
}

pub fn check_wx(_: &mut Cx) -> TestResult {
    paging(check::WX, "CHECK_PAGING(WX)")
}

pub fn check_kernel_user(_: &mut Cx) -> TestResult {
    paging(check::KERNEL_USER, "CHECK_PAGING(KERNEL_USER)")
}

pub fn check_kernel_nx(_: &mut Cx) -> TestResult {
    paging(check::KERNEL_DATA_NX, "CHECK_PAGING(KERNEL_DATA_NX)")
}

pub fn check_bad(_: &mut Cx) -> TestResult {
    expect_err(
        KERNEL.check_paging(1000),
        Error::INVALID_ARG,
        "CHECK_PAGING(1000)",
    )
}

static RODATA: [u8; 16] = *b"ktest read-only.";
static mut DATA: [u8; 16] = [1; 16];

fn page_rights(addr: u64, what: &str) -> Result<u64, alloc::string::String> {
    SELF_ASPACE.lookup(addr & !0xfff).map(|r| r.0).ctx(what)
}

pub fn own_mappings(_: &mut Cx) -> TestResult {
    let rx = rights::READ | rights::EXEC;
    let rw = rights::READ | rights::WRITE;
    let code = page_rights(own_mappings as *const () as u64, "LOOKUP(code)")?;
    ensure!(code == rx, "code page rights {code:#x}, want {rx:#x}");
    let ro = page_rights(
        core::hint::black_box(&RODATA).as_ptr() as u64,
        "LOOKUP(rodata)",
    )?;
    ensure!(
        ro == rights::READ,
        "rodata page rights {ro:#x}, want {:#x}",
        rights::READ
    );
    let data = page_rights(&raw const DATA as u64, "LOOKUP(data)")?;
    ensure!(data == rw, "data page rights {data:#x}, want {rw:#x}");
    Ok(())
}

/// Spins until INFO(TICKS) has advanced by `n`, for at most about one
/// second of TSC time.
pub fn wait_ticks(n: u64) -> TestResult {
    let hz = KERNEL
        .info(info::TSC_HZ)
        .ctx("INFO(TSC_HZ)")?
        .max(1_000_000);
    let start = KERNEL.info(info::TICKS).ctx("INFO(TICKS)")?;
    // SAFETY: rdtsc has no side effects.
    let deadline = unsafe { _rdtsc() } + hz;
    loop {
        let now = KERNEL.info(info::TICKS).ctx("INFO(TICKS)")?;
        if now >= start + n {
            return Ok(());
        }
        // SAFETY: as above.
        if unsafe { _rdtsc() } > deadline {
            return Err(alloc::format!(
                "TICKS stayed at {now} (from {start}) for a second"
            ));
        }
    }
}

pub fn ticks(_: &mut Cx) -> TestResult {
    wait_ticks(2)
}

pub fn rates(_: &mut Cx) -> TestResult {
    let tsc = KERNEL.info(info::TSC_HZ).ctx("INFO(TSC_HZ)")?;
    let timer = KERNEL.info(info::TIMER_HZ).ctx("INFO(TIMER_HZ)")?;
    ensure!(tsc > 0, "TSC_HZ is 0");
    ensure!(timer > 0, "TIMER_HZ is 0");
    Ok(())
}

//! Loading ELF programs with keep-loader: real programs from the boot
//! image, hand-made ones, and files the loader must refuse.

use alloc::string::String;

use keep_abi::{ACCOUNT, Error, MEMORY, Status, rights, slot, state};
use keep_loader::testelf::{self, PF_RW, PF_RWX, PF_RX, TestSegment};
use keep_loader::{ElfError, Grant, LoadError, Loader, Spec, spawn::STACK_TOP};

use crate::fault::EXIT42;
use crate::{Ctx, Cx, TestResult, expect_err};

const CONSOLE: Grant = Grant {
    src: slot::CONSOLE,
    dest: slot::CONSOLE,
    rights: rights::ALL,
};

fn hello_elf(cx: &Cx) -> Result<&'static [u8], String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    Ok(img
        .find("hello")
        .ok_or("no 'hello' in the boot image")?
        .data)
}

/// Loads and runs `elf` to its end.
fn run(cx: &mut Cx, elf: &[u8], arg0: u64, arg1: u64) -> Result<Status, String> {
    let spec = Spec {
        name: "ktest-elf",
        elf,
        arg0,
        arg1,
        grants: &[CONSOLE],
        blob: None,
    };
    let mut loader = Loader::new(&mut cx.slots);
    let child = loader.load(&spec).ctx("load")?;
    let status = child.process.start().and_then(|_| child.process.wait());
    loader.destroy(child).ctx("destroy")?;
    status.ctx("START/WAIT")
}

fn expect_exit(s: Status, code: u64) -> TestResult {
    ensure!(
        s.state == state::EXITED && s.code == code,
        "child {s}; want exit code {code}"
    );
    Ok(())
}

pub fn hello(cx: &mut Cx) -> TestResult {
    let elf = hello_elf(cx)?;
    expect_exit(run(cx, elf, 0, 0)?, 0)
}

pub fn hello_panic(cx: &mut Cx) -> TestResult {
    let elf = hello_elf(cx)?;
    expect_exit(run(cx, elf, 1, 0)?, 101)
}

pub fn hello_code(cx: &mut Cx) -> TestResult {
    let elf = hello_elf(cx)?;
    expect_exit(run(cx, elf, 2, 77)?, 77)
}

/// A spec with no arguments, no capabilities and no blob.
fn bare_spec<'a>(name: &'a str, elf: &'a [u8]) -> Spec<'a> {
    Spec {
        name,
        elf,
        arg0: 0,
        arg1: 0,
        grants: &[],
        blob: None,
    }
}

/// Loading `elf` must fail with a bad-ELF error and use no frame (of the
/// pool or the account) or slot.
fn expect_refused(cx: &mut Cx, elf: &[u8]) -> TestResult {
    let frames = MEMORY.free().ctx("FREE")?;
    let account = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
    let slots = cx.slots.available();
    let spec = bare_spec("ktest-bad", elf);
    let mut loader = Loader::new(&mut cx.slots);
    match loader.load(&spec) {
        Err(LoadError::Elf(_)) => {}
        Err(e) => return Err(alloc::format!("refused, but not as a bad ELF file: {e}")),
        Ok(child) => {
            let _ = loader.destroy(child);
            return Err("the loader accepted it".into());
        }
    }
    let after = MEMORY.free().ctx("FREE")?;
    ensure!(after == frames, "FREE went from {frames} to {after}");
    let account_after = ACCOUNT.info().ctx("ACCOUNT.INFO")?;
    ensure!(
        account_after == account,
        "account INFO went from {account:?} to {account_after:?}"
    );
    ensure!(cx.slots.available() == slots, "slots leaked");
    Ok(())
}

pub fn truncated(cx: &mut Cx) -> TestResult {
    let elf = hello_elf(cx)?;
    expect_refused(cx, &elf[..elf.len() / 2])?;
    expect_refused(cx, &elf[..100])
}

/// A valid tiny program: checks that its data segment holds "PEEK" and
/// then runs EXIT42.
fn tiny_elf(buf: &mut [u8; 512], flags: u32) -> &[u8] {
    let mut code = [0u8; 14 + EXIT42.len()];
    code[..14].copy_from_slice(&[
        0x8b, 0x04, 0x25, 0x10, 0x20, 0x40, 0x00, // mov 0x402010,%eax
        0x3d, b'P', b'E', b'E', b'K', // cmp $"PEEK",%eax
        0x75, 0x23, // jne to EXIT42's ud2
    ]);
    code[14..].copy_from_slice(&EXIT42);
    let segs = [
        TestSegment {
            flags,
            vaddr: 0x401000,
            memsz: code.len() as u64,
            data: &code,
        },
        // Not page-aligned, with zero fill after the file bytes.
        TestSegment {
            flags: PF_RW,
            vaddr: 0x402010,
            memsz: 0x40,
            data: b"PEEK",
        },
    ];
    let n = testelf::build(buf, 0x401000, &segs).unwrap();
    &buf[..n]
}

pub fn bad_magic(cx: &mut Cx) -> TestResult {
    let mut buf = [0u8; 512];
    let n = tiny_elf(&mut buf, PF_RX).len();
    buf[1] = b'Z';
    expect_refused(cx, &buf[..n])
}

pub fn wx_segment(cx: &mut Cx) -> TestResult {
    let mut buf = [0u8; 512];
    let elf = tiny_elf(&mut buf, PF_RWX);
    match keep_loader::Program::parse(elf) {
        Err(ElfError::WriteAndExec { index: 0 }) => {}
        other => return Err(alloc::format!("parse gave {other:?}, want WriteAndExec")),
    }
    expect_refused(cx, elf)
}

pub fn tiny(cx: &mut Cx) -> TestResult {
    let mut buf = [0u8; 512];
    let elf = tiny_elf(&mut buf, PF_RX);
    expect_exit(run(cx, elf, 0, 0)?, 42)
}

pub fn segment_rights(cx: &mut Cx) -> TestResult {
    let mut buf = [0u8; 512];
    let elf = tiny_elf(&mut buf, PF_RX);
    let spec = bare_spec("ktest-rights", elf);
    let mut loader = Loader::new(&mut cx.slots);
    let child = loader.load(&spec).ctx("load")?;
    let a = child.aspace;
    let r = (|| {
        let checks = [
            (0x401000, rights::READ | rights::EXEC, "text"),
            (0x402000, rights::READ | rights::WRITE, "data"),
            (STACK_TOP - 0x1000, rights::READ | rights::WRITE, "stack"),
        ];
        for (vaddr, want, what) in checks {
            let (got, _) = a.lookup(vaddr).ctx(what)?;
            ensure!(
                got == want,
                "{what} at {vaddr:#x} has rights {got:#x}, want {want:#x}"
            );
        }
        expect_err(
            a.lookup(0x400000),
            Error::NOT_MAPPED,
            "LOOKUP below the text",
        )?;
        expect_err(
            a.lookup(0x403000),
            Error::NOT_MAPPED,
            "LOOKUP above the data",
        )
    })();
    loader.destroy(child).ctx("destroy")?;
    r
}

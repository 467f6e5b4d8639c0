//! Fault isolation: children that misbehave are stopped with the right
//! exception and address, and everything else runs on.

use alloc::string::String;

use keep_abi::{KERNEL, Status, info, state};

use crate::child::{self, CODE, DATA};
use crate::kernel::wait_ticks;
use crate::{Ctx, Cx, TestResult};

fn expect_fault(s: Status, vector: u64, rip: u64, addr: Option<u64>) -> TestResult {
    let ok = s.state == state::FAULTED
        && s.code == vector
        && s.rip == rip
        && addr.is_none_or(|a| s.addr == a);
    ensure!(
        ok,
        "child {s}; want vector {vector} at rip {rip:#x}{}",
        match addr {
            Some(a) => alloc::format!(" addr {a:#x}"),
            None => String::new(),
        }
    );
    Ok(())
}

pub fn ud2(cx: &mut Cx) -> TestResult {
    let s = child::run(cx, &[0x0f, 0x0b])?;
    expect_fault(s, 6, CODE, None)
}

pub fn null_read(cx: &mut Cx) -> TestResult {
    // xor %eax,%eax; mov (%rax),%rax
    let s = child::run(cx, &[0x31, 0xc0, 0x48, 0x8b, 0x00])?;
    expect_fault(s, 14, CODE + 2, Some(0))
}

pub const KERNEL_ADDR: u64 = 0xffff_ffff_8010_0000;

pub fn kernel_read(cx: &mut Cx) -> TestResult {
    // movabs $KERNEL_ADDR,%rax; mov (%rax),%rax
    let mut code = [0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x8b, 0x00];
    code[2..10].copy_from_slice(&KERNEL_ADDR.to_le_bytes());
    let s = child::run(cx, &code)?;
    expect_fault(s, 14, CODE + 10, Some(KERNEL_ADDR))
}

pub fn code_write(cx: &mut Cx) -> TestResult {
    // mov $CODE,%eax; movb $1,(%rax)
    let s = child::run(cx, &[0xb8, 0x00, 0x10, 0x00, 0x00, 0xc6, 0x00, 0x01])?;
    expect_fault(s, 14, CODE + 5, Some(CODE))
}

pub fn exec_data(cx: &mut Cx) -> TestResult {
    // mov $DATA,%eax; jmp *%rax
    let s = child::run(cx, &[0xb8, 0x00, 0x30, 0x00, 0x00, 0xff, 0xe0])?;
    expect_fault(s, 14, DATA, Some(DATA))
}

pub fn hlt(cx: &mut Cx) -> TestResult {
    let s = child::run(cx, &[0xf4])?;
    expect_fault(s, 13, CODE, None)
}

pub fn cli(cx: &mut Cx) -> TestResult {
    let s = child::run(cx, &[0xfa])?;
    expect_fault(s, 13, CODE, None)
}

/// Invokes empty slot 20 (must get INVALID_CAP, else ud2), then
/// PROCESS.EXIT(42) on slot 3; 37 bytes, the final ud2 at offset 35.
pub const EXIT42: [u8; 37] = [
    0xbf, 0x14, 0x00, 0x00, 0x00, // mov $20,%edi
    0xbe, 0x01, 0x00, 0x00, 0x00, // mov $1,%esi
    0x0f, 0x05, // syscall
    0x48, 0x83, 0xf8, 0x01, // cmp $1,%rax (INVALID_CAP)
    0x75, 0x11, // jne ud2
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi (SELF_PROCESS)
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi (EXIT)
    0xba, 0x2a, 0x00, 0x00, 0x00, // mov $42,%edx
    0x0f, 0x05, // syscall
    0x0f, 0x0b, // ud2
];

pub fn exit42(cx: &mut Cx) -> TestResult {
    let s = child::run(cx, &EXIT42)?;
    ensure!(
        s.state == state::EXITED && s.code == 42,
        "child {s}; want exit code 42"
    );
    Ok(())
}

pub fn survives(_: &mut Cx) -> TestResult {
    wait_ticks(2)
}

pub fn status_after(cx: &mut Cx) -> TestResult {
    let c = child::spawn(cx, &[0x0f, 0x0b])?;
    let r = c
        .process
        .start()
        .ctx("START")
        .and_then(|_| c.process.wait().ctx("WAIT"))
        .and_then(|w| Ok((w, c.process.status().ctx("STATUS")?)));
    child::release(cx, c);
    let (waited, status) = r?;
    ensure!(waited == status, "WAIT said {waited}, STATUS says {status}");
    expect_fault(status, 6, CODE, None)?;
    // The kernel still answers.
    KERNEL.info(info::TICKS).ctx("INFO(TICKS)").map(drop)
}

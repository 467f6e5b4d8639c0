//! Fault handlers: page faults resolved by a user-level pager, exceptions
//! handled with READ_REGS/WRITE_REGS, STOP replies, emulated system calls,
//! and the register and handler methods' errors.  ktest itself is the
//! handler: it mints a SENDER to itself for the child and receives the
//! kernel's calls.

use alloc::format;
use alloc::string::String;

use keep_abi::{
    Error, Msg, SELF_ASPACE, SELF_PROCESS, Status, Tag, label, recv, reg, reply, rights, state,
    ty,
};
use keep_loader::Child;

use crate::child::{self, CODE, LOOP, STACK_TOP};
use crate::cspace::{BEYOND, HOLE};
use crate::fault::KERNEL_ADDR;
use crate::{Ctx, Cx, TestResult, expect_code, expect_err};

const PAYLOAD: u64 = 0xFA17;

/// Runs `f` with a CREATED child running `code` whose fault handler is a
/// SENDER to ktest; `ret` is the slot for return capabilities.
fn with_handled(
    cx: &mut Cx,
    code: &[u8],
    f: impl FnOnce(&mut Cx, Child, u64) -> TestResult,
) -> TestResult {
    let c = child::spawn(cx, code)?;
    let s = match cx.slots::<2>() {
        Ok(s) => s,
        Err(e) => {
            child::release(cx, c);
            return Err(e);
        }
    };
    let (snd, ret) = (s[0], s[1]);
    let r = SELF_PROCESS
        .mint(snd, PAYLOAD, 0)
        .ctx("MINT")
        .and_then(|_| c.process.set_fault_handler(snd).ctx("SET_FAULT_HANDLER"))
        .and_then(|_| f(cx, c, ret));
    child::release(cx, c);
    cx.drop_slots(&s);
    r
}

/// The next kernel-made call to ktest, its return capability in `ret`.
fn next_fault(ret: u64) -> Result<Msg, String> {
    let buf = keep_rt::ipc_buffer();
    let _ = SELF_ASPACE.delete_cap(ret);
    buf.set_recv_slots(&[ret]);
    let m = recv(Tag::new(0).with_slots(1), 2000);
    m.result().ctx("RECV of the fault message")?;
    ensure!(m.tag.is_called(), "fault message is not a call: tag {:#x}", m.tag.0);
    ensure!(m.payload == PAYLOAD, "payload {:#x}", m.payload);
    let t = SELF_ASPACE.identify_cap(ret).ctx("IDENTIFY")?;
    ensure!(t.ty == ty::RETURN, "receive slot 0 holds type {}", t.ty);
    Ok(m)
}

fn answer(ret: u64, label_: u64, words: [u64; 4]) -> TestResult {
    keep_abi::Return(ret).reply(Tag::new(label_), words).ctx("reply")
}

fn expect_exit(s: Status, code: u64) -> TestResult {
    ensure!(
        s.state == state::EXITED && s.code == code,
        "child {s}; want exit code {code}"
    );
    Ok(())
}

const PAGED: u64 = 0x20_0000;

/// Writes 42 to PAGED (not mapped), reads it back and exits with it.
const PAGER_CHILD: [u8; 30] = [
    0xbb, 0x00, 0x00, 0x20, 0x00, // mov $0x200000,%ebx
    0xc7, 0x03, 0x2a, 0x00, 0x00, 0x00, // movl $42,(%rbx)
    0x8b, 0x13, // mov (%rbx),%edx
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi (EXIT)
    0x0f, 0x05, // syscall
    0x0f, 0x0b, // ud2
    0x90, 0x90, 0x90,
];

pub fn user_pager(cx: &mut Cx) -> TestResult {
    with_handled(cx, &PAGER_CHILD, |cx, c, ret| {
        let page = cx.retype(ty::PAGE)?;
        let r = (|| {
            c.process.start().ctx("START")?;
            let m = next_fault(ret)?;
            ensure!(
                m.tag.label() == label::EXCEPTION
                    && m.words[0] == 14
                    && m.words[1] == CODE + 5
                    && m.words[2] == PAGED,
                "fault message: label {:#x} words {:#x?}",
                m.tag.label(),
                m.words
            );
            let st = c.process.status().ctx("STATUS")?;
            ensure!(st.state == state::BLOCKED, "faulting child is {st}");
            c.aspace
                .map(page, PAGED, rights::READ | rights::WRITE)
                .ctx("MAP in the child")?;
            answer(ret, reply::RESUME, [0; 4])?;
            expect_exit(c.process.wait().ctx("WAIT")?, 42)?;
            // The write landed in the page the pager mapped.
            let v = crate::caps::SCRATCH;
            SELF_ASPACE.map(page, v, rights::READ).ctx("MAP here")?;
            // SAFETY: mapped readable just above.
            let seen = unsafe { (v as *const u32).read_volatile() };
            let _ = SELF_ASPACE.unmap(v);
            ensure!(seen == 42, "the page holds {seen}");
            Ok(())
        })();
        cx.drop_slot(page);
        r
    })
}

/// ud2, then EXIT(42).
const UD_CHILD: [u8; 24] = [
    0x0f, 0x0b, // ud2
    0xba, 0x2a, 0x00, 0x00, 0x00, // mov $42,%edx
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi
    0x0f, 0x05, // syscall
    0x0f, 0x0b, // ud2
    0x90, 0x90, 0x90,
];

pub fn exception_write_regs(cx: &mut Cx) -> TestResult {
    with_handled(cx, &UD_CHILD, |_, c, ret| {
        c.process.start().ctx("START")?;
        let m = next_fault(ret)?;
        ensure!(
            m.tag.label() == label::EXCEPTION && m.words[0] == 6 && m.words[1] == CODE,
            "fault message: label {:#x} words {:#x?}",
            m.tag.label(),
            m.words
        );
        let buf = keep_rt::ipc_buffer();
        c.process.read_regs().ctx("READ_REGS")?;
        let mut regs = buf.regs();
        ensure!(
            regs[reg::RIP as usize] == CODE,
            "READ_REGS rip {:#x}",
            regs[reg::RIP as usize]
        );
        regs[reg::RIP as usize] = CODE + 2;
        buf.set_regs(&regs);
        c.process.write_regs().ctx("WRITE_REGS")?;
        answer(ret, reply::RESUME, [0; 4])?;
        expect_exit(c.process.wait().ctx("WAIT")?, 42)
    })
}

pub fn reply_stop(cx: &mut Cx) -> TestResult {
    with_handled(cx, &UD_CHILD, |_, c, ret| {
        c.process.start().ctx("START")?;
        next_fault(ret)?;
        answer(ret, reply::STOP, [0; 4])?;
        let st = c.process.status().ctx("STATUS")?;
        ensure!(st.state == state::STOPPED, "child is {st}, want STOPPED");
        Ok(())
    })
}

pub fn handler_removed(cx: &mut Cx) -> TestResult {
    with_handled(cx, &UD_CHILD, |_, c, _| {
        c.process.set_fault_handler(0).ctx("SET_FAULT_HANDLER 0")?;
        c.process.start().ctx("START")?;
        let st = c.process.wait().ctx("WAIT")?;
        ensure!(
            st.state == state::FAULTED && st.code == 6 && st.rip == CODE,
            "child {st}; want FAULTED with #UD"
        );
        let m = recv(Tag::new(0).recv_nonblocking(), 0);
        expect_code(m.err, Error::WOULD_BLOCK, "no message for the old handler")
    })
}

/// Emulated system call (0x77, 0x11, 0x22, 0x33); exits with its result.
const EMU_CHILD: [u8; 40] = [
    0xb8, 0x77, 0x00, 0x00, 0x00, // mov $0x77,%eax
    0xbf, 0x11, 0x00, 0x00, 0x00, // mov $0x11,%edi
    0xbe, 0x22, 0x00, 0x00, 0x00, // mov $0x22,%esi
    0xba, 0x33, 0x00, 0x00, 0x00, // mov $0x33,%edx
    0x0f, 0x05, // syscall (emulated)
    0x89, 0xc2, // mov %eax,%edx
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi
    0x0f, 0x05, // syscall (EXIT)
    0x0f, 0x0b, // ud2
    0x90, 0x90,
];

/// The first message of EMU_CHILD under emulation: its first system call.
fn expect_first_syscall(m: &Msg) -> TestResult {
    ensure!(
        m.tag.label() == label::SYSCALL && m.words == [0x77, 0x11, 0x22, 0x33],
        "first message: label {:#x} words {:#x?}",
        m.tag.label(),
        m.words
    );
    Ok(())
}

/// The second: the EXIT, reflected too, with the emulated result 99 in rax.
fn expect_exit_syscall(m: &Msg) -> TestResult {
    ensure!(
        m.tag.label() == label::SYSCALL && m.words == [99, 3, 6, 99],
        "second message: label {:#x} words {:?}",
        m.tag.label(),
        m.words
    );
    Ok(())
}

/// Lets the reflected EXIT go through for real when c resumes: emulation
/// off, rip back onto the syscall.
fn unemulate_and_rewind(c: &Child) -> TestResult {
    c.process.set_emulation(false).ctx("SET_EMULATION off")?;
    let buf = keep_rt::ipc_buffer();
    c.process.read_regs().ctx("READ_REGS")?;
    let mut regs = buf.regs();
    regs[reg::RIP as usize] -= 2;
    buf.set_regs(&regs);
    c.process.write_regs().ctx("WRITE_REGS")
}

pub fn emulation(cx: &mut Cx) -> TestResult {
    with_handled(cx, &EMU_CHILD, |_, c, ret| {
        c.process.set_emulation(true).ctx("SET_EMULATION")?;
        c.process.start().ctx("START")?;
        expect_first_syscall(&next_fault(ret)?)?;
        answer(ret, reply::RESUME_SET_RAX, [99, 0, 0, 0])?;
        expect_exit_syscall(&next_fault(ret)?)?;
        unemulate_and_rewind(&c)?;
        answer(ret, reply::RESUME, [0; 4])?;
        expect_exit(c.process.wait().ctx("WAIT")?, 99)
    })
}

/// The emulation test's exchange with the answers given by reply-and-receive,
/// which the IPC fast path takes for RESUME and RESUME_SET_RAX: the same
/// results, and the kernel's fast-path counter moves.
pub fn fault_reply_recv(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, Return, info};
    with_handled(cx, &EMU_CHILD, |_, c, ret| {
        c.process.set_emulation(true).ctx("SET_EMULATION")?;
        c.process.start().ctx("START")?;
        expect_first_syscall(&next_fault(ret)?)?;
        let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
        // Answer RESUME_SET_RAX and receive the next fault (the EXIT, which
        // carries the emulated result in rax) in the same invocation.
        let next = Tag::new(0).with_slots(1);
        let m = Return(ret).reply_recv(Tag(next.0 | reply::RESUME_SET_RAX), [99, 0, 0, 0], 2000);
        m.result().ctx("reply-and-receive RESUME_SET_RAX")?;
        ensure!(m.tag.is_called(), "second message is not a call: tag {:#x}", m.tag.0);
        expect_exit_syscall(&m)?;
        let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
        ensure!(after > before, "the fast path took none of it");
        // Answer RESUME the same way; the receive then times out, as
        // nothing else comes.
        unemulate_and_rewind(&c)?;
        let m = Return(ret).reply_recv(Tag(next.0 | reply::RESUME), [0; 4], 50);
        ensure!(m.err == Error::TIMEOUT.0, "reply-and-receive RESUME: error {}, want TIMEOUT", m.err);
        expect_exit(c.process.wait().ctx("WAIT")?, 99)
    })
}

pub fn read_regs_states(cx: &mut Cx) -> TestResult {
    expect_err(SELF_PROCESS.read_regs(), Error::BAD_STATE, "READ_REGS of itself")?;
    let c = child::spawn(cx, LOOP)?;
    let r = (|| {
        c.process.read_regs().ctx("READ_REGS of a CREATED child")?;
        let regs = keep_rt::ipc_buffer().regs();
        ensure!(
            regs[reg::RIP as usize] == CODE && regs[reg::RSP as usize] == STACK_TOP,
            "rip {:#x} rsp {:#x}",
            regs[reg::RIP as usize],
            regs[reg::RSP as usize]
        );
        c.process.set_priority(1).ctx("SET_PRIORITY")?;
        c.process.start().ctx("START")?;
        expect_err(c.process.read_regs(), Error::BAD_STATE, "READ_REGS of a runnable")?;
        expect_err(c.process.write_regs(), Error::BAD_STATE, "WRITE_REGS of a runnable")
    })();
    child::release(cx, c);
    r
}

pub fn write_regs_checks(cx: &mut Cx) -> TestResult {
    let c = child::spawn(cx, &crate::fault::EXIT42)?;
    let r = (|| {
        let buf = keep_rt::ipc_buffer();
        c.process.read_regs().ctx("READ_REGS")?;
        let good = buf.regs();
        for (i, v) in [(reg::RIP, KERNEL_ADDR), (reg::RSP, keep_abi::layout::USER_TOP)] {
            let mut bad = good;
            bad[i as usize] = v;
            buf.set_regs(&bad);
            expect_err(c.process.write_regs(), Error::INVALID_ARG, &format!("reg {i}"))?;
        }
        // Nothing changed: it runs as set up.
        c.process.start().ctx("START")?;
        expect_exit(c.process.wait().ctx("WAIT")?, 42)
    })();
    child::release(cx, c);
    r
}

pub fn handler_errors(cx: &mut Cx) -> TestResult {
    let c = child::spawn(cx, LOOP)?;
    let r = (|| {
        let p = c.process;
        expect_err(p.set_fault_handler(HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(
            p.set_fault_handler(keep_abi::slot::CONSOLE),
            Error::WRONG_TYPE,
            "console",
        )?;
        expect_err(p.set_fault_handler(40), Error::INVALID_CAP, "empty slot")?;
        expect_err(p.set_fault_handler(BEYOND), Error::OUT_OF_RANGE, "beyond")?;
        expect_err(p.set_emulation_raw(2), Error::INVALID_ARG, "SET_EMULATION(2)")
    })();
    child::release(cx, c);
    r
}

/// Puts 0x5a5a5a5a in every dword of ymm0 and 0x3c3c3c3c in ymm15, stops
/// at a ud2 (ktest, its handler, fills its own ymm0 and ymm15 with other
/// values before it resumes the child), then exits with the upper halves'
/// first dwords: 0x3c3c3c3c_5a5a5a5a when the kernel kept the child's AVX
/// state across the two switches.
const AVX_CHILD: [u8; 90] = [
    0xc7, 0x04, 0x25, 0x00, 0x30, 0x00, 0x00, 0x5a, 0x5a, 0x5a, 0x5a, // movl $0x5a5a5a5a,0x3000
    0xc7, 0x04, 0x25, 0x04, 0x30, 0x00, 0x00, 0x3c, 0x3c, 0x3c, 0x3c, // movl $0x3c3c3c3c,0x3004
    0xc4, 0xe2, 0x7d, 0x18, 0x04, 0x25, 0x00, 0x30, 0x00, 0x00, // vbroadcastss 0x3000,%ymm0
    0xc4, 0x62, 0x7d, 0x18, 0x3c, 0x25, 0x04, 0x30, 0x00, 0x00, // vbroadcastss 0x3004,%ymm15
    0x0f, 0x0b, // ud2
    0xc4, 0xe3, 0x7d, 0x19, 0xc2, 0x01, // vextractf128 $1,%ymm0,%xmm2
    0xc5, 0xf9, 0x7e, 0xd2, // vmovd %xmm2,%edx
    0xc4, 0x63, 0x7d, 0x19, 0xfb, 0x01, // vextractf128 $1,%ymm15,%xmm3
    0xc5, 0xf9, 0x7e, 0xd8, // vmovd %xmm3,%eax
    0x48, 0xc1, 0xe0, 0x20, // shl $32,%rax
    0x48, 0x09, 0xc2, // or %rax,%rdx
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi (EXIT)
    0x0f, 0x05, // syscall
    0x0f, 0x0b, // ud2
    0x90, 0x90, 0x90, 0x90, 0x90,
];

/// The same with SSE only, for a CPU without AVX: 0x5a5a5a5a in xmm0's
/// low dword, 0x3c3c3c3c in xmm15's.
const SSE_CHILD: [u8; 76] = [
    0xc7, 0x04, 0x25, 0x00, 0x30, 0x00, 0x00, 0x5a, 0x5a, 0x5a, 0x5a, // movl $0x5a5a5a5a,0x3000
    0xc7, 0x04, 0x25, 0x04, 0x30, 0x00, 0x00, 0x3c, 0x3c, 0x3c, 0x3c, // movl $0x3c3c3c3c,0x3004
    0x66, 0x0f, 0x6e, 0x04, 0x25, 0x00, 0x30, 0x00, 0x00, // movd 0x3000,%xmm0
    0x66, 0x44, 0x0f, 0x6e, 0x3c, 0x25, 0x04, 0x30, 0x00, 0x00, // movd 0x3004,%xmm15
    0x0f, 0x0b, // ud2
    0x66, 0x0f, 0x7e, 0xc2, // movd %xmm0,%edx
    0x66, 0x44, 0x0f, 0x7e, 0xf8, // movd %xmm15,%eax
    0x48, 0xc1, 0xe0, 0x20, // shl $32,%rax
    0x48, 0x09, 0xc2, // or %rax,%rdx
    0xbf, 0x03, 0x00, 0x00, 0x00, // mov $3,%edi
    0xbe, 0x06, 0x00, 0x00, 0x00, // mov $6,%esi (EXIT)
    0x0f, 0x05, // syscall
    0x0f, 0x0b, // ud2
    0x90, 0x90, 0x90,
];

/// XCR0 (needs CR4.OSXSAVE), or 0 when CPUID says XSAVE is off.
fn xcr0() -> u64 {
    // xgetbv runs only when OSXSAVE says it may.
    let ecx = core::arch::x86_64::__cpuid(1).ecx;
    if ecx & (1 << 27) == 0 {
        return 0;
    }
    let (lo, hi): (u32, u32);
    // SAFETY: xgetbv only reads XCR0.
    unsafe { core::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// ktest's own ymm0/ymm15 (or xmm0/xmm15) become other values while the
/// child is stopped: the kernel must give the child its own back.
fn dirty_own_vector_registers(avx: bool) {
    let other: [u32; 2] = [0xa5a5_a5a5, 0xc3c3_c3c3];
    let p = other.as_ptr();
    // SAFETY: reads 8 bytes of `other`; the registers written are declared.
    unsafe {
        if avx {
            core::arch::asm!(
                "vbroadcastss ymm0, dword ptr [{p}]",
                "vbroadcastss ymm15, dword ptr [{p} + 4]",
                p = in(reg) p, out("xmm0") _, out("xmm15") _, options(nostack, readonly));
        } else {
            core::arch::asm!(
                "movd xmm0, dword ptr [{p}]",
                "movd xmm15, dword ptr [{p} + 4]",
                p = in(reg) p, out("xmm0") _, out("xmm15") _, options(nostack, readonly));
        }
    }
}

/// Moves the stopped child past its ud2 at `ud` (WRITE_REGS), runs
/// `before` last, and resumes it.
fn resume_past_ud2(c: Child, ret: u64, ud: u64, before: impl FnOnce()) -> TestResult {
    let buf = keep_rt::ipc_buffer();
    c.process.read_regs().ctx("READ_REGS")?;
    let mut regs = buf.regs();
    regs[reg::RIP as usize] = ud + 2;
    buf.set_regs(&regs);
    c.process.write_regs().ctx("WRITE_REGS")?;
    before();
    answer(ret, reply::RESUME, [0; 4])
}

pub fn vector_state_kept(cx: &mut Cx) -> TestResult {
    let avx = xcr0() & 0b110 == 0b110;
    let code: &[u8] = if avx { &AVX_CHILD } else { &SSE_CHILD };
    let ud = if avx { 0x2a } else { 0x29 };
    with_handled(cx, code, |_, c, ret| {
        c.process.start().ctx("START")?;
        let m = next_fault(ret)?;
        ensure!(
            m.tag.label() == label::EXCEPTION && m.words[0] == 6 && m.words[1] == CODE + ud,
            "fault message: label {:#x} words {:#x?} (avx {avx})",
            m.tag.label(),
            m.words
        );
        dirty_own_vector_registers(avx);
        resume_past_ud2(c, ret, CODE + ud, || dirty_own_vector_registers(avx))?;
        expect_exit(c.process.wait().ctx("WAIT")?, 0x3c3c_3c3c_5a5a_5a5a)
    })
}

/// The kernel's XSAVE bit, CPUID's OSXSAVE and XCR0 agree: with XSAVE on,
/// XCR0 holds x87 and SSE, and AVX whenever the CPU can save it.
pub fn xsave_enabled(_: &mut Cx) -> TestResult {
    let features = keep_abi::KERNEL.info(keep_abi::info::CPU_FEATURES).ctx("INFO")?;
    let leaf1 = core::arch::x86_64::__cpuid(1);
    let has_xsave = leaf1.ecx & (1 << 26) != 0;
    let on = features & keep_abi::cpu::XSAVE != 0;
    ensure!(on == has_xsave, "kernel XSAVE {on}, CPUID XSAVE {has_xsave}");
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    ensure!(osxsave == on, "CPUID OSXSAVE {osxsave} with the kernel's XSAVE {on}");
    if !on {
        return Ok(());
    }
    let x = xcr0();
    let supported = core::arch::x86_64::__cpuid_count(0xd, 0).eax;
    let want = 3 | u64::from(supported & 4);
    ensure!(x == want, "XCR0 {x:#x}, want {want:#x} (CPU can save {supported:#x})");
    let avx = leaf1.ecx & (1 << 28) != 0;
    ensure!(!avx || x & 4 != 0, "CPUID shows AVX but XCR0 {x:#x} does not enable it");
    Ok(())
}

/// READ_VECTOR_STATE shows a stopped child's registers where XSAVE's (or
/// FXSAVE's) format puts them, WRITE_VECTOR_STATE changes them for it,
/// and a state the CPU would refuse to load is INVALID_ARG with nothing
/// changed.
pub fn vector_state_methods(cx: &mut Cx) -> TestResult {
    let avx = xcr0() & 0b110 == 0b110;
    let code: &[u8] = if avx { &AVX_CHILD } else { &SSE_CHILD };
    let ud = if avx { 0x2a } else { 0x29 };
    // Where register k's pattern lies: XMM k at 160 + 16k, the upper half
    // of YMM k at 576 + 16k (XSAVE's standard format with AVX).
    let at = |k: usize| if avx { 576 + 16 * k } else { 160 + 16 * k };
    let ro = cx.slot()?;
    let r = with_handled(cx, code, |_, c, ret| {
        c.process.start().ctx("START")?;
        next_fault(ret)?;
        let buf = keep_rt::ipc_buffer();
        let size = c.process.read_vector_state().ctx("READ_VECTOR_STATE")? as usize;
        let want = if xcr0() == 0 { 512 } else { core::arch::x86_64::__cpuid_count(0xd, 0).ebx as usize };
        ensure!(size == want, "size {size}, want {want}");
        let mut st = [0u8; 1024];
        buf.vector_state(&mut st[..size]);
        let dword = |st: &[u8], off: usize| u32::from_le_bytes(st[off..off + 4].try_into().unwrap());
        ensure!(
            dword(&st, at(0)) == 0x5a5a_5a5a && dword(&st, at(15)) == 0x3c3c_3c3c,
            "register 0 {:#x}, 15 {:#x} in the state read (avx {avx})",
            dword(&st, at(0)),
            dword(&st, at(15))
        );
        // Refused, each with nothing changed.
        let mut bad: alloc::vec::Vec<(&str, usize, u8)> = alloc::vec![("MXCSR reserved bit 16", 26, 1)];
        if xcr0() != 0 {
            bad.push(("XSTATE_BV bit 9, outside XCR0", 513, 2));
            bad.push(("XCOMP_BV bit 63 (compacted)", 527, 0x80));
            bad.push(("a reserved header byte", 540, 1));
        }
        for (what, off, bit) in bad {
            let mut b = st;
            b[off] |= bit;
            buf.set_vector_state(&b[..size]);
            expect_err(c.process.write_vector_state(), Error::INVALID_ARG, what)?;
        }
        c.process.read_vector_state().ctx("READ_VECTOR_STATE after refusals")?;
        let mut again = [0u8; 1024];
        buf.vector_state(&mut again[..size]);
        ensure!(again[..size] == st[..size], "a refused WRITE_VECTOR_STATE changed the state");
        // Rights: READ reads, only WRITE writes.
        SELF_ASPACE.copy_cap(c.process.0, ro, rights::READ).ctx("COPY_CAP READ")?;
        let rp = keep_abi::Process(ro);
        rp.read_vector_state().ctx("READ_VECTOR_STATE through READ")?;
        buf.set_vector_state(&st[..size]);
        expect_err(rp.write_vector_state(), Error::NO_RIGHTS, "WRITE_VECTOR_STATE through READ")?;
        // The caller's own state is live in the CPU: BAD_STATE.
        expect_err(SELF_PROCESS.read_vector_state(), Error::BAD_STATE, "READ_VECTOR_STATE of itself")?;
        expect_err(SELF_PROCESS.write_vector_state(), Error::BAD_STATE, "WRITE_VECTOR_STATE of itself")?;
        // Written: the child exits with what ktest put there.
        st[at(0)..at(0) + 4].copy_from_slice(&0x1111_1111u32.to_le_bytes());
        st[at(15)..at(15) + 4].copy_from_slice(&0x2222_2222u32.to_le_bytes());
        buf.set_vector_state(&st[..size]);
        c.process.write_vector_state().ctx("WRITE_VECTOR_STATE")?;
        resume_past_ud2(c, ret, CODE + ud, || {})?;
        expect_exit(c.process.wait().ctx("WAIT")?, 0x2222_2222_1111_1111)
    });
    let _ = SELF_ASPACE.delete_cap(ro);
    cx.drop_slot(ro);
    r
}

/// A running process's vector state cannot be read or written.
pub fn vector_state_running(cx: &mut Cx) -> TestResult {
    let c = child::spawn(cx, LOOP)?;
    let r = (|| {
        c.process.start().ctx("START")?;
        expect_err(c.process.read_vector_state(), Error::BAD_STATE, "READ_VECTOR_STATE while RUNNABLE")?;
        expect_err(c.process.write_vector_state(), Error::BAD_STATE, "WRITE_VECTOR_STATE while RUNNABLE")?;
        c.process.stop().ctx("STOP")?;
        c.process.read_vector_state().ctx("READ_VECTOR_STATE when STOPPED")?;
        c.process.write_vector_state().ctx("WRITE_VECTOR_STATE of what was read")
    })();
    child::release(cx, c);
    r
}

/// FH0010: the exchange of FH0009 with the child at a priority above and
/// one below its handler's (ktest's, 10): the emulated system call is
/// reflected by the general path (the fast one takes only a handler of the
/// caller's priority), and the answers by reply-and-receive resume the child
/// with the emulated result in rax either way.  A child above the handler
/// runs as soon as it is resumed, so there the fast path takes the
/// RESUME_SET_RAX answer: its counter moves.
pub fn fault_reply_recv_other_prio(cx: &mut Cx) -> TestResult {
    use keep_abi::{KERNEL, Return, info};
    for prio in [14, 4] {
        with_handled(cx, &EMU_CHILD, |_, c, ret| {
            c.process.set_priority(prio).ctx("SET_PRIORITY")?;
            c.process.set_emulation(true).ctx("SET_EMULATION")?;
            c.process.start().ctx("START")?;
            expect_first_syscall(&next_fault(ret)?).map_err(|e| format!("prio {prio}: {e}"))?;
            let before = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
            let next = Tag::new(0).with_slots(1);
            let m = Return(ret).reply_recv(Tag(next.0 | reply::RESUME_SET_RAX), [99, 0, 0, 0], 2000);
            m.result().ctx(&format!("reply-and-receive RESUME_SET_RAX (prio {prio})"))?;
            ensure!(m.tag.is_called(), "prio {prio}: second message is not a call: tag {:#x}", m.tag.0);
            expect_exit_syscall(&m).map_err(|e| format!("prio {prio}: {e}"))?;
            let after = KERNEL.info(info::FASTPATH_IPC).ctx("INFO FASTPATH_IPC")?;
            ensure!(prio < 10 || after > before, "prio {prio}: the fast path took none of it");
            unemulate_and_rewind(&c)?;
            let m = Return(ret).reply_recv(Tag(next.0 | reply::RESUME), [0; 4], 50);
            ensure!(m.err == Error::TIMEOUT.0, "prio {prio}: reply-and-receive RESUME: error {}, want TIMEOUT", m.err);
            expect_exit(c.process.wait().ctx("WAIT")?, 99)
        })?;
    }
    Ok(())
}

/// FH0012: a process in emulation mode whose system call has no handler to
/// go to (none set, or the handler's process destroyed) is stopped as
/// FAULTED at the system call instruction, not run on past it.
pub fn emulated_syscall_no_handler(cx: &mut Cx) -> TestResult {
    // syscall; jmp .
    const CODE_SYSCALL: &[u8] = &[0x0f, 0x05, 0xeb, 0xfe];
    for stale in [false, true] {
        let what = if stale { "a destroyed handler" } else { "no handler" };
        let hs = cx.slot()?;
        let c = child::spawn(cx, CODE_SYSCALL)?;
        let r = (|| {
            if stale {
                // The handler set, then its process destroyed.
                let h = child::spawn(cx, LOOP)?;
                let set = h.process.mint(hs, 1, rights::WRITE).and_then(|_| c.process.set_fault_handler(hs));
                child::release(cx, h);
                set.ctx("MINT and SET_FAULT_HANDLER")?;
            }
            c.process.set_emulation(true).ctx("SET_EMULATION")?;
            c.process.start().ctx("START")?;
            let st = c.process.wait().ctx("WAIT")?;
            ensure!(
                st.state == state::FAULTED && st.rip == CODE,
                "{what}: the emulated system call left the child {st}, want FAULTED at {CODE:#x}"
            );
            Ok(())
        })();
        child::release(cx, c);
        cx.drop_slot(hs);
        r?;
    }
    Ok(())
}

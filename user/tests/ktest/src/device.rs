//! Device resources for user-level drivers: device memory mapped uncached,
//! I/O ports by invocation, interrupts as IPC messages; and destroying
//! pages and cappages with MEMORY.RECLAIM.
//!
//! The devices used are q35's own: the HPET's identification register
//! (device memory), CMOS RAM (I/O ports) and PIT channel 0, whose one-shot
//! mode raises ISA IRQ 0, which reaches I/O APIC line 2.

use alloc::format;

use keep_abi::{
    ACCOUNT, Account, DEVMEM, DevMem, Error, INTERRUPT, IOPORT, Interrupt, IoPort, MEMORY,
    SELF_ASPACE, SELF_PROCESS, TIMER, Tag, label, layout, recv, rights, slot, ty,
};

use crate::cspace::{expect_type, snapshot, unchanged};
use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

const VA: u64 = 0x0000_5e00_0000_0000;
const HPET: u64 = 0xfed0_0000;
const LAPIC: u64 = 0xfee0_0000;
const IOAPIC: u64 = 0xfec0_0000;
pub const PIT_LINE: u64 = 2;
pub const CONSOLE_LINE: u64 = 4;
const RW: u64 = rights::READ | rights::WRITE;

fn page_of(base: u64, pa: u64) -> u64 {
    (pa - base) / layout::PAGE_SIZE
}

/// The physical-address width, as the kernel reads it (CPUID 0x80000008).
fn phys_bits() -> u64 {
    let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    if max < 0x8000_0008 {
        return 36;
    }
    (core::arch::x86_64::__cpuid(0x8000_0008).eax & 0xff) as u64
}

pub fn devmem_info(_: &mut Cx) -> TestResult {
    let (base, pages) = DEVMEM.info().ctx("INFO")?;
    let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).ctx("MEM_TOTAL")?;
    ensure!(base % layout::PAGE_SIZE == 0, "base {base:#x} not page-aligned");
    ensure!(base >= total.min(1 << 31), "base {base:#x} lies in RAM ({total:#x} bytes)");
    let end = 1u64 << phys_bits().min(44);
    ensure!(base + pages * layout::PAGE_SIZE == end, "range ends at {:#x}, want {end:#x}", base + pages * 4096);
    Ok(())
}

/// Above 4 GiB, where 64-bit BARs go: pages map and read (nothing is there
/// on this machine; QEMU reads such addresses as zero), up to the last
/// one of the range.
pub fn devmem_high(_: &mut Cx) -> TestResult {
    let (base, pages) = DEVMEM.info().ctx("INFO")?;
    let last = pages - 1;
    for (page, what) in [(page_of(base, 1 << 32), "the page at 4 GiB"), (last, "the last page")] {
        SELF_ASPACE.map_device(slot::DEVMEM, page, VA, rights::READ).ctx(what)?;
        // SAFETY: mapped readable at VA just above.
        let _ = unsafe { core::ptr::read_volatile(VA as *const u32) };
        ensure!(SELF_ASPACE.lookup(VA).is_ok(), "{what}: not mapped after MAP");
        SELF_ASPACE.unmap(VA).ctx("UNMAP")?;
    }
    expect_err(SELF_ASPACE.map_device(slot::DEVMEM, pages, VA, rights::READ), Error::INVALID_ARG, "one past the end")
}

pub fn devmem_hpet(_: &mut Cx) -> TestResult {
    let (base, _) = DEVMEM.info().ctx("INFO")?;
    SELF_ASPACE
        .map_device(slot::DEVMEM, page_of(base, HPET), VA, rights::READ)
        .ctx("MAP HPET")?;
    // SAFETY: the HPET's registers are mapped readable at VA; offset 0 is the
    // general capabilities and ID register.
    let id = unsafe { core::ptr::read_volatile(VA as *const u64) };
    SELF_ASPACE.unmap(VA).ctx("UNMAP")?;
    ensure!((id >> 16) & 0xffff == 0x8086, "HPET vendor {:#x}, want 0x8086", (id >> 16) & 0xffff);
    ensure!(id >> 32 != 0, "HPET period is 0");
    Ok(())
}

pub fn devmem_map_errors(_: &mut Cx) -> TestResult {
    let (base, pages) = DEVMEM.info().ctx("INFO")?;
    let before = snapshot()?;
    for (pa, what) in [(LAPIC, "local APIC"), (IOAPIC, "I/O APIC")] {
        expect_err(
            SELF_ASPACE.map_device(slot::DEVMEM, page_of(base, pa), VA, rights::READ),
            Error::IN_USE,
            what,
        )?;
    }
    expect_err(SELF_ASPACE.map_device(slot::DEVMEM, pages, VA, rights::READ), Error::INVALID_ARG, "beyond")?;
    expect_err(
        SELF_ASPACE.map_device(slot::DEVMEM, page_of(base, HPET), VA, rights::READ | rights::EXEC),
        Error::NO_RIGHTS,
        "EXEC",
    )?;
    expect_err(SELF_ASPACE.map_device(slot::MEMORY, 0, VA, rights::READ), Error::WRONG_TYPE, "MEMORY")?;
    expect_err(SELF_ASPACE.lookup(VA), Error::NOT_MAPPED, "after the errors")?;
    unchanged(before)
}

pub fn devmem_restrict(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [d, e]| {
        let (base, pages) = DEVMEM.info().ctx("INFO")?;
        DEVMEM.restrict(HPET, 1, d).ctx("RESTRICT")?;
        ensure!(DevMem(d).info() == Ok((HPET, 1)), "INFO {:?}", DevMem(d).info());
        SELF_ASPACE.map_device(d, 0, VA, rights::READ).ctx("MAP through the restricted cap")?;
        SELF_ASPACE.unmap(VA).ctx("UNMAP")?;
        expect_err(SELF_ASPACE.map_device(d, 1, VA, rights::READ), Error::INVALID_ARG, "page 1 of 1")?;
        expect_err(DevMem(d).restrict(HPET + 4096, 1, e), Error::INVALID_ARG, "outside")?;
        expect_err(DEVMEM.restrict(HPET + 1, 1, e), Error::INVALID_ARG, "unaligned")?;
        expect_err(DEVMEM.restrict(HPET, 0, e), Error::INVALID_ARG, "zero pages")?;
        expect_err(DEVMEM.restrict(base, pages + 1, e), Error::INVALID_ARG, "too long")?;
        expect_err(DEVMEM.restrict(base - 4096, 1, e), Error::INVALID_ARG, "below")?;
        expect_err(DEVMEM.restrict(HPET, 1, d), Error::EXISTS, "full slot")?;
        expect_type(e, ty::NULL)?;
        // READ-only copy: still maps readable, never writable.
        SELF_ASPACE.delete_cap(d).ctx("DELETE")?;
        SELF_ASPACE.copy_cap(slot::DEVMEM, d, rights::READ).ctx("COPY READ")?;
        expect_err(
            SELF_ASPACE.map_device(d, page_of(base, HPET), VA, RW),
            Error::NO_RIGHTS,
            "writable through READ",
        )
    })
}

fn cmos_write(p: IoPort, index: u64, v: u64) -> keep_abi::Result<()> {
    p.write(0x70, 1, index)?;
    p.write(0x71, 1, v)
}

fn cmos_read(p: IoPort, index: u64) -> keep_abi::Result<u64> {
    p.write(0x70, 1, index)?;
    p.read(0x71, 1)
}

pub fn ioport_cmos(_: &mut Cx) -> TestResult {
    // CMOS bytes 0x40-0x7f are free NVRAM on q35.
    for v in [0x5a, 0xa5] {
        cmos_write(IOPORT, 0x40, v).ctx("write")?;
        let got = cmos_read(IOPORT, 0x40).ctx("read")?;
        ensure!(got == v, "CMOS 0x40 reads {got:#x}, wrote {v:#x}");
    }
    Ok(())
}

pub fn ioport_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [r, c]| {
        for w in [0, 3, 8] {
            expect_err(IOPORT.read(0x70, w), Error::INVALID_ARG, &format!("width {w}"))?;
        }
        for (p, what) in [(0x21, "PIC"), (0xa0, "PIC 2"), (0x3f8, "console"), (0x3fe, "console"), (0xf4, "exit")] {
            expect_err(IOPORT.read(p, 1), Error::IN_USE, what)?;
        }
        expect_err(IOPORT.read(0x3f6, 4), Error::IN_USE, "a dword reaching the console")?;
        expect_err(IOPORT.write(0x604, 2, 0), Error::IN_USE, "power-off")?;
        expect_err(IOPORT.read(0xffff, 2), Error::INVALID_ARG, "beyond the port space")?;
        expect_err(IOPORT.read(1 << 40, 1), Error::INVALID_ARG, "huge port")?;
        IOPORT.restrict(0x70, 2, c).ctx("RESTRICT")?;
        ensure!(IoPort(c).info() == Ok((0x70, 2)), "INFO {:?}", IoPort(c).info());
        expect_err(IoPort(c).read(0x72, 1), Error::INVALID_ARG, "outside the restricted range")?;
        expect_err(IoPort(c).read(0x71, 2), Error::INVALID_ARG, "straddling the end")?;
        expect_err(IoPort(c).restrict(0x70, 3, r), Error::INVALID_ARG, "widening")?;
        expect_err(IOPORT.restrict(0x70, 0, r), Error::INVALID_ARG, "zero ports")?;
        cmos_write(IoPort(c), 0x41, 0x33).ctx("through the restricted cap")?;
        SELF_ASPACE.copy_cap(c, r, rights::READ).ctx("COPY READ")?;
        expect_err(IoPort(r).write(0x70, 1, 0x41), Error::NO_RIGHTS, "OUT through READ")?;
        ensure!(IoPort(r).read(0x71, 1).is_ok(), "IN through READ fails");
        let (b, n) = IOPORT.info().ctx("INFO")?;
        ensure!(b == 0 && n == 0x10000, "root range {b:#x}+{n:#x}");
        Ok(())
    })
}

/// Starts PIT channel 0 in one-shot mode (mode 0): its output, ISA IRQ 0,
/// rises after `ticks` of 1.193 MHz.
pub fn pit_one_shot(ticks: u64) -> keep_abi::Result<()> {
    IOPORT.write(0x43, 1, 0x30)?;
    IOPORT.write(0x40, 1, ticks & 0xff)?;
    IOPORT.write(0x40, 1, ticks >> 8)
}

/// Quiets PIT channel 0: mode 0 with the longest count, so no edge soon.
pub fn pit_quiet() {
    let _ = IOPORT.write(0x43, 1, 0x30);
}

pub fn irq_delivered(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 0x1e9, rights::WRITE).ctx("MINT")?;
        pit_quiet();
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND")?;
        let r = (|| {
            for round in 0..3 {
                pit_one_shot(1193).ctx("PIT")?;
                let m = recv(Tag::new(0), 2000);
                m.result().ctx(&format!("RECV round {round}"))?;
                ensure!(m.tag.label() == label::IRQ, "label {:#x}, want IRQ", m.tag.label());
                ensure!(m.words[0] == PIT_LINE, "line {}", m.words[0]);
                ensure!(m.payload == 0x1e9, "payload {:#x}", m.payload);
                ensure!(!m.tag.is_called() && m.tag.caps() == 0, "tag {:#x}", m.tag.0);
                INTERRUPT.ack(PIT_LINE).ctx("ACK")?;
            }
            Ok(())
        })();
        pit_quiet();
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        r
    })
}

pub fn irq_waits(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s]| {
        SELF_PROCESS.mint(s, 7, rights::WRITE).ctx("MINT")?;
        pit_quiet();
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND")?;
        let r = (|| {
            pit_one_shot(1193).ctx("PIT")?;
            TIMER.sleep(30).ctx("SLEEP")?; // not receiving: the interrupt waits
            let m = recv(Tag::new(0).recv_nonblocking(), 0);
            m.result().ctx("non-blocking RECV")?;
            ensure!(m.tag.label() == label::IRQ && m.payload == 7, "got label {:#x}", m.tag.label());
            let again = recv(Tag::new(0).recv_nonblocking(), 0);
            expect_err(again.result(), Error::WOULD_BLOCK, "a second receive (line still masked)")?;
            // Unmasked again, the line delivers again.
            INTERRUPT.ack(PIT_LINE).ctx("ACK")?;
            pit_one_shot(1193).ctx("PIT")?;
            let m = recv(Tag::new(0), 2000);
            m.result().ctx("RECV after ACK")?;
            ensure!(m.tag.label() == label::IRQ, "label {:#x}", m.tag.label());
            Ok(())
        })();
        pit_quiet();
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        // Unbound: nothing arrives.
        pit_one_shot(100).ctx("PIT")?;
        let m = recv(Tag::new(0), 30);
        expect_err(m.result(), Error::TIMEOUT, "receive after UNBIND")?;
        pit_quiet();
        r
    })
}

pub fn irq_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s, c, ro]| {
        SELF_PROCESS.mint(s, 0, rights::WRITE).ctx("MINT")?;
        expect_err(INTERRUPT.bind(CONSOLE_LINE, s), Error::IN_USE, "the console's line")?;
        let all = layout::IRQ_LINES + layout::MSI_LINES;
        expect_err(INTERRUPT.bind(all, s), Error::INVALID_ARG, "line 56")?;
        expect_err(INTERRUPT.bind(PIT_LINE, slot::CONSOLE), Error::WRONG_TYPE, "not a SENDER")?;
        expect_err(INTERRUPT.bind(PIT_LINE, c), Error::INVALID_CAP, "empty slot")?;
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK unbound")?;
        expect_err(INTERRUPT.unbind(PIT_LINE), Error::BAD_STATE, "UNBIND unbound")?;
        INTERRUPT.restrict(5, 1, c).ctx("RESTRICT")?;
        ensure!(Interrupt(c).info() == Ok((5, 1)), "INFO {:?}", Interrupt(c).info());
        expect_err(Interrupt(c).bind(PIT_LINE, s), Error::INVALID_ARG, "outside the restricted range")?;
        Interrupt(c).bind(5, s).ctx("BIND 5")?;
        expect_err(INTERRUPT.bind(5, s), Error::IN_USE, "bound twice")?;
        SELF_ASPACE.copy_cap(c, ro, rights::READ).ctx("COPY READ")?;
        expect_err(Interrupt(ro).unbind(5), Error::NO_RIGHTS, "UNBIND through READ")?;
        Interrupt(c).unbind(5).ctx("UNBIND 5")?;
        expect_err(INTERRUPT.restrict(20, 4, ro), Error::EXISTS, "into a full slot")?;
        let (b, n) = INTERRUPT.info().ctx("INFO")?;
        ensure!(b == 0 && n == all, "root range {b}+{n}");
        Ok(())
    })
}

pub fn irq_dead_binding(cx: &mut Cx) -> TestResult {
    fn never_runs(_: &keep_loader::thread::Args) -> u64 {
        0
    }
    with_slots(cx, |cx, [s]| {
        pit_quiet();
        let t = keep_loader::thread::create(&mut cx.slots, "irqbound", 10, never_runs, &[])?;
        let r = t.process.mint(s, 1, rights::WRITE).ctx("MINT");
        let r = r.and_then(|_| INTERRUPT.bind(PIT_LINE, s).ctx("BIND to the thread"));
        t.kill(&mut cx.slots);
        r?;
        // The bound process is gone: the line can be bound again.
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK of a dead binding")?;
        SELF_ASPACE.delete_cap(s).ctx("DELETE")?;
        SELF_PROCESS.mint(s, 2, rights::WRITE).ctx("MINT self")?;
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND after the process died")?;
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")
    })
}

pub fn reclaim_page(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [copy]| {
        let p = cx.retype(ty::PAGE)?;
        let r = (|| {
            SELF_ASPACE.copy_cap(p, copy, 0).ctx("COPY")?;
            SELF_ASPACE.map(p, VA, RW).ctx("MAP")?;
            let before = snapshot()?;
            expect_err(MEMORY.reclaim(p), Error::IN_USE, "mapped")?;
            unchanged(before)?;
            SELF_ASPACE.unmap(VA).ctx("UNMAP")?;
            let free = MEMORY.free().ctx("FREE")?;
            MEMORY.reclaim(p).ctx("RECLAIM")?;
            ensure!(MEMORY.free() == Ok(free + 1), "the pool did not get the frame back");
            expect_type(p, ty::NULL)?;
            expect_err(SELF_ASPACE.map(copy, VA, RW), Error::STALE, "MAP of a copy")?;
            expect_err(MEMORY.reclaim(copy), Error::STALE, "RECLAIM of a copy")
        })();
        cx.drop_slot(p);
        r
    })
}

pub fn reclaim_cappage(cx: &mut Cx) -> TestResult {
    const AT: u64 = 0x7_0000;
    let cp = cx.retype(ty::CAPPAGE)?;
    let r = (|| {
        SELF_ASPACE.map_cappage(cp, AT).ctx("MAP_CAPPAGE")?;
        SELF_ASPACE.copy_cap(slot::CONSOLE, AT + 3, 0).ctx("COPY into it")?;
        expect_err(MEMORY.reclaim(cp), Error::IN_USE, "mapped")?;
        SELF_ASPACE.unmap_cappage(AT).ctx("UNMAP_CAPPAGE")?;
        MEMORY.reclaim(cp).ctx("RECLAIM")?;
        expect_err(SELF_ASPACE.copy_cap(slot::CONSOLE, AT + 3, 0), Error::NO_CAPPAGE, "slot after")?;
        expect_type(cp, ty::NULL)
    })();
    cx.drop_slot(cp);
    r
}

pub fn reclaim_errors(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [ro, mro]| {
        let p = cx.retype(ty::PAGE)?;
        let r = (|| {
            let before = snapshot()?;
            expect_err(MEMORY.reclaim(slot::CONSOLE), Error::WRONG_TYPE, "CONSOLE")?;
            expect_err(MEMORY.reclaim(slot::ACCOUNT), Error::WRONG_TYPE, "ACCOUNT")?;
            expect_err(MEMORY.reclaim(mro), Error::INVALID_CAP, "empty slot")?;
            SELF_ASPACE.copy_cap(p, ro, rights::READ).ctx("COPY READ")?;
            expect_err(MEMORY.reclaim(ro), Error::NO_RIGHTS, "a READ-only page")?;
            SELF_ASPACE.copy_cap(slot::MEMORY, mro, rights::READ).ctx("COPY MEMORY READ")?;
            expect_err(keep_abi::Memory(mro).reclaim(p), Error::NO_RIGHTS, "through a READ pool")?;
            unchanged(before)?;
            expect_type(p, ty::PAGE)
        })();
        let _ = MEMORY.reclaim(p);
        cx.drop_slot(p);
        r
    })
}

pub fn reclaim_after_aspace(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [a]| {
        let p = cx.retype(ty::PAGE)?;
        let r = (|| {
            ACCOUNT.create_aspace(a).ctx("CREATE_ASPACE")?;
            keep_abi::Aspace(a).map(p, VA, RW).ctx("MAP in the new space")?;
            expect_err(MEMORY.reclaim(p), Error::IN_USE, "mapped there")?;
            Account(slot::ACCOUNT).destroy(a).ctx("DESTROY aspace")?;
            MEMORY.reclaim(p).ctx("RECLAIM after the space went")
        })();
        cx.drop_slot(p);
        r
    })
}

/// q35's ECAM window (its MCFG table) and the page of function 00:00.0,
/// the host bridge.
const ECAM: u64 = 0xb000_0000;
const MSI_LINE: u64 = layout::IRQ_LINES + 5;

/// ROUTE_MSI returns the message for the machine (remappable format naming
/// entry `line` with interrupt remapping, else the compatibility-format
/// address and vector 0x30 + line); BIND, ACK and UNBIND work on MSI lines,
/// UNROUTE_MSI drops the binding; every error leaves the route as it was.
pub fn msi_route(cx: &mut Cx) -> TestResult {
    let remap = crate::drivers::remapping(cx)?;
    with_slots(cx, |_, [s, c, ro, dro]| {
        let (base, _) = DEVMEM.info().ctx("DEVMEM INFO")?;
        let host = page_of(base, ECAM);
        SELF_PROCESS.mint(s, 7, rights::WRITE).ctx("MINT")?;
        INTERRUPT.restrict(MSI_LINE, 1, c).ctx("RESTRICT")?;
        let msi = Interrupt(c);
        let before = snapshot()?;
        // Errors first: nothing is routed by any of them.
        expect_err(msi.route_msi(MSI_LINE + 1, slot::DEVMEM, host), Error::INVALID_ARG, "outside the range")?;
        expect_err(INTERRUPT.route_msi(PIT_LINE, slot::DEVMEM, host), Error::INVALID_ARG, "an I/O APIC line")?;
        expect_err(INTERRUPT.route_msi(layout::IRQ_LINES + layout::MSI_LINES, slot::DEVMEM, host), Error::INVALID_ARG, "line 56")?;
        expect_err(msi.route_msi(MSI_LINE, slot::DEVMEM, page_of(base, HPET)), Error::INVALID_ARG, "the HPET's page")?;
        expect_err(msi.route_msi(MSI_LINE, slot::DEVMEM, page_of(base, LAPIC)), Error::INVALID_ARG, "the local APIC's page")?;
        expect_err(msi.route_msi(MSI_LINE, ro, host), Error::INVALID_CAP, "an empty devmem slot")?;
        expect_err(msi.route_msi(MSI_LINE, slot::CONSOLE, host), Error::WRONG_TYPE, "CONSOLE as devmem")?;
        expect_err(msi.route_msi(MSI_LINE, 1 << 33, host), Error::OUT_OF_RANGE, "devmem beyond the space")?;
        SELF_ASPACE.copy_cap(slot::DEVMEM, dro, rights::READ).ctx("COPY DEVMEM READ")?;
        expect_err(msi.route_msi(MSI_LINE, dro, host), Error::NO_RIGHTS, "READ-only devmem")?;
        SELF_ASPACE.copy_cap(c, ro, rights::READ).ctx("COPY READ")?;
        expect_err(Interrupt(ro).route_msi(MSI_LINE, slot::DEVMEM, host), Error::NO_RIGHTS, "through READ")?;
        expect_err(msi.unroute_msi(MSI_LINE), Error::BAD_STATE, "UNROUTE of a line not routed")?;
        expect_err(INTERRUPT.unroute_msi(PIT_LINE), Error::INVALID_ARG, "UNROUTE of an I/O APIC line")?;
        unchanged(before)?;
        // Routed: the message for this machine.
        let (addr, data) = msi.route_msi(MSI_LINE, slot::DEVMEM, host).ctx("ROUTE_MSI")?;
        let r = (|| {
            if remap {
                ensure!(addr == 0xfee0_0000 | MSI_LINE << 5 | 1 << 4 && data == 0,
                        "remappable message wanted for entry {MSI_LINE}: address {addr:#x} data {data:#x}");
            } else {
                ensure!(addr == 0xfee0_0000 && data == 0x30 + MSI_LINE,
                        "compatibility message wanted with vector {:#x}: address {addr:#x} data {data:#x}", 0x30 + MSI_LINE);
            }
            expect_err(msi.route_msi(MSI_LINE, slot::DEVMEM, host), Error::IN_USE, "routed twice")?;
            expect_err(msi.ack(MSI_LINE), Error::BAD_STATE, "ACK unbound")?;
            msi.bind(MSI_LINE, s).ctx("BIND")?;
            expect_err(msi.bind(MSI_LINE, s), Error::IN_USE, "bound twice")?;
            msi.ack(MSI_LINE).ctx("ACK")?;
            msi.unbind(MSI_LINE).ctx("UNBIND")?;
            expect_err(msi.unbind(MSI_LINE), Error::BAD_STATE, "UNBIND twice")?;
            msi.bind(MSI_LINE, s).ctx("BIND again")?;
            Ok(())
        })();
        // Unrouting drops the binding.
        msi.unroute_msi(MSI_LINE).ctx("UNROUTE_MSI")?;
        r?;
        expect_err(msi.ack(MSI_LINE), Error::BAD_STATE, "ACK after UNROUTE")?;
        expect_err(msi.unroute_msi(MSI_LINE), Error::BAD_STATE, "UNROUTE twice")?;
        // Routed again (the entry is free), then left as found.
        msi.route_msi(MSI_LINE, slot::DEVMEM, host).ctx("ROUTE_MSI again")?;
        msi.unroute_msi(MSI_LINE).ctx("UNROUTE_MSI again")
    })
}

// Device capabilities revoked through wrappers (docs/pci.md,
// "Taking a device back"): what was mapped, bound or routed through a
// wrapper goes when the wrapper is destroyed; the rest stays.

fn hpet_vendor(va: u64) -> u64 {
    // SAFETY: the caller mapped the HPET's registers readable at va.
    let id = unsafe { core::ptr::read_volatile(va as *const u64) };
    (id >> 16) & 0xffff
}

fn expect_unmapped(va: u64, what: &str) -> TestResult {
    expect_err(SELF_ASPACE.lookup(va), Error::NOT_MAPPED, what)
}

pub fn devmem_wrapper(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [w, ww, r]| {
        let (base, pages) = DEVMEM.info().ctx("INFO")?;
        let hpet = page_of(base, HPET);
        ACCOUNT.create_wrapper(slot::DEVMEM, w, RW).ctx("wrap DEVMEM")?;
        ACCOUNT.create_wrapper(w, ww, rights::READ).ctx("wrap the wrapper, READ")?;
        ensure!(DevMem(w).info() == Ok((base, pages)), "INFO through the wrapper {:?}", DevMem(w).info());
        let before = snapshot()?;
        expect_err(DevMem(w).restrict(HPET, 1, r), Error::NO_RIGHTS, "RESTRICT through a wrapper")?;
        expect_err(DevMem(ww).restrict(HPET, 1, r), Error::NO_RIGHTS, "RESTRICT through two wrappers")?;
        expect_err(SELF_ASPACE.map_device(ww, hpet, VA, RW), Error::NO_RIGHTS, "writable through READ")?;
        expect_err(SELF_ASPACE.map_device(w, pages, VA, rights::READ), Error::INVALID_ARG, "beyond")?;
        expect_err(
            SELF_ASPACE.map_device(w, page_of(base, LAPIC), VA, rights::READ),
            Error::IN_USE,
            "the local APIC through the wrapper",
        )?;
        expect_type(r, ty::NULL)?;
        expect_unmapped(VA, "after the errors")?;
        unchanged(before)?;
        // Three mappings of the HPET: through w, through ww, and direct.
        SELF_ASPACE.map_device(w, hpet, VA, rights::READ).ctx("MAP through w")?;
        SELF_ASPACE.map_device(ww, hpet, VA + 0x1000, rights::READ).ctx("MAP through ww")?;
        SELF_ASPACE.map_device(slot::DEVMEM, hpet, VA + 0x2000, rights::READ).ctx("MAP direct")?;
        for va in [VA, VA + 0x1000, VA + 0x2000] {
            ensure!(hpet_vendor(va) == 0x8086, "HPET vendor {:#x} at {va:#x}", hpet_vendor(va));
        }
        // An unmapped one and a remapped one are no trouble to the record.
        SELF_ASPACE.unmap(VA).ctx("UNMAP")?;
        SELF_ASPACE.map_device(w, hpet, VA, rights::READ).ctx("MAP through w again")?;
        ACCOUNT.destroy(w).ctx("destroy w")?;
        expect_unmapped(VA, "mapped through w")?;
        expect_unmapped(VA + 0x1000, "mapped through ww (w inside it)")?;
        ensure!(hpet_vendor(VA + 0x2000) == 0x8086, "the direct mapping went too");
        SELF_ASPACE.unmap(VA + 0x2000).ctx("UNMAP the direct one")?;
        expect_err(SELF_ASPACE.map_device(w, hpet, VA, rights::READ), Error::STALE, "MAP through w after")?;
        expect_err(SELF_ASPACE.map_device(ww, hpet, VA, rights::READ), Error::STALE, "MAP through ww after")?;
        expect_err(DevMem(ww).info(), Error::STALE, "INFO through ww after")?;
        // A wrapper of anything else than DEVMEM does not map.
        SELF_ASPACE.delete_cap(w).ctx("DELETE w")?;
        ACCOUNT.create_wrapper(slot::CONSOLE, w, RW).ctx("wrap the console")?;
        let r = expect_err(SELF_ASPACE.map_device(w, 0, VA, rights::READ), Error::WRONG_TYPE, "a console wrapper");
        ACCOUNT.destroy(w).ctx("destroy")?;
        r
    })
}

pub fn devmem_wrapper_records(cx: &mut Cx) -> TestResult {
    let n = layout::WRAPPER_DEVICE_MAPS;
    with_slots(cx, |_, [w]| {
        let (base, _) = DEVMEM.info().ctx("INFO")?;
        let hpet = page_of(base, HPET);
        ACCOUNT.create_wrapper(slot::DEVMEM, w, RW).ctx("wrap DEVMEM")?;
        let r: TestResult = (|| {
            for i in 0..n {
                SELF_ASPACE.map_device(w, hpet, VA + i * 0x1000, rights::READ).ctx(&format!("MAP {i}"))?;
            }
            let before = snapshot()?;
            let last = VA + n * 0x1000;
            expect_err(SELF_ASPACE.map_device(w, hpet, last, rights::READ), Error::NO_MEMORY, "one more than the record holds")?;
            expect_unmapped(last, "after NO_MEMORY")?;
            unchanged(before)?;
            // A mapping that is gone leaves room.
            SELF_ASPACE.unmap(VA + 7 * 0x1000).ctx("UNMAP one")?;
            SELF_ASPACE.map_device(w, hpet, last, rights::READ).ctx("MAP into the room")?;
            Ok(())
        })();
        ACCOUNT.destroy(w).ctx("destroy")?;
        r?;
        for i in 0..=n {
            expect_unmapped(VA + i * 0x1000, &format!("page {i} after the destruction"))?;
        }
        Ok(())
    })
}

pub fn interrupt_wrapper(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s, w, r]| {
        SELF_PROCESS.mint(s, 0x77, rights::WRITE).ctx("MINT")?;
        ACCOUNT.create_wrapper(slot::INTERRUPT, w, RW).ctx("wrap INTERRUPT")?;
        expect_err(Interrupt(w).restrict(PIT_LINE, 1, r), Error::NO_RIGHTS, "RESTRICT through a wrapper")?;
        expect_type(r, ty::NULL)?;
        pit_quiet();
        Interrupt(w).bind(PIT_LINE, s).ctx("BIND through the wrapper")?;
        let got: TestResult = (|| {
            pit_one_shot(1193).ctx("PIT")?;
            let m = recv(Tag::new(0), 2000);
            m.result().ctx("RECV")?;
            ensure!(m.tag.label() == label::IRQ && m.payload == 0x77, "label {:#x} payload {:#x}", m.tag.label(), m.payload);
            Interrupt(w).ack(PIT_LINE).ctx("ACK through the wrapper")
        })();
        ACCOUNT.destroy(w).ctx("destroy the wrapper")?;
        got?;
        // Unbound by the destruction: nothing arrives, the line is free.
        expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK after the wrapper went")?;
        pit_one_shot(100).ctx("PIT")?;
        expect_err(recv(Tag::new(0), 30).result(), Error::TIMEOUT, "receive after the wrapper went")?;
        pit_quiet();
        expect_err(Interrupt(w).bind(PIT_LINE, s), Error::STALE, "BIND through it after")?;
        INTERRUPT.bind(PIT_LINE, s).ctx("BIND directly after")?;
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        // Ports: through the wrapper until it goes.
        SELF_ASPACE.delete_cap(w).ctx("DELETE")?;
        ACCOUNT.create_wrapper(slot::IOPORT, w, RW).ctx("wrap IOPORT")?;
        cmos_write(IoPort(w), 0x42, 0x5c).ctx("CMOS through the wrapper")?;
        ensure!(cmos_read(IOPORT, 0x42) == Ok(0x5c), "CMOS 0x42 reads {:?}", cmos_read(IOPORT, 0x42));
        expect_err(IoPort(w).restrict(0x70, 2, r), Error::NO_RIGHTS, "IOPORT RESTRICT through a wrapper")?;
        ACCOUNT.destroy(w).ctx("destroy")?;
        expect_err(IoPort(w).read(0x71, 1), Error::STALE, "IN after")
    })
}

pub fn msi_wrapper(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s, c, w]| {
        let (base, _) = DEVMEM.info().ctx("DEVMEM INFO")?;
        let host = page_of(base, ECAM);
        SELF_PROCESS.mint(s, 9, rights::WRITE).ctx("MINT")?;
        INTERRUPT.restrict(MSI_LINE, 1, c).ctx("RESTRICT")?;
        ACCOUNT.create_wrapper(c, w, RW).ctx("wrap")?;
        Interrupt(w).route_msi(MSI_LINE, slot::DEVMEM, host).ctx("ROUTE_MSI through the wrapper")?;
        Interrupt(c).bind(MSI_LINE, s).ctx("BIND directly")?;
        ACCOUNT.destroy(w).ctx("destroy")?;
        // Unrouted, and so unbound; routed again with the capability itself.
        expect_err(Interrupt(c).unroute_msi(MSI_LINE), Error::BAD_STATE, "UNROUTE after the wrapper went")?;
        expect_err(Interrupt(c).ack(MSI_LINE), Error::BAD_STATE, "ACK after")?;
        Interrupt(c).route_msi(MSI_LINE, slot::DEVMEM, host).ctx("ROUTE_MSI directly")?;
        Interrupt(c).unroute_msi(MSI_LINE).ctx("UNROUTE_MSI")
    })
}

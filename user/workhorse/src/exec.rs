//! execve: a static ELF executable (or a `#!` script) loaded into a fresh
//! Keep process and address space, with the initial stack Linux builds
//! (argc, argv, envp, the auxiliary vector; System V ABI, x86-64
//! supplement, 3.4.1).  The old Keep process is destroyed only when the new
//! one is ready, so a failed exec leaves the caller as it was.

use alloc::string::String;
use alloc::vec::Vec;

use elf::ElfBytes;
use elf::abi::{PF_R, PF_W, PF_X, PT_INTERP, PT_LOAD, PT_PHDR};
use elf::endian::LittleEndian;

use crate::Server;
use crate::errno::*;
use crate::mem::{self, Frame, Mm, PAGE, PROT_EXEC, PROT_READ, PROT_WRITE};
use crate::process::{Keep, Proc};
use crate::vfs::{Data, Node, fs};

/// Where a position-independent executable (static-pie) is placed.
const PIE_BASE: u64 = 0x0000_0555_5555_4000;
const MAX_ARGS_BYTES: usize = 128 * 1024;

fn page_down(v: u64) -> u64 {
    v & !(PAGE - 1)
}

fn page_up(v: u64) -> u64 {
    (v + PAGE - 1) & !(PAGE - 1)
}

/// Replaces `p`'s program with the file at `path` (resolved from p's
/// working directory).  On success p has a new CREATED Keep process (not
/// started) and the old one is destroyed.
pub fn exec(s: &mut Server, p: &mut Proc, path: &str, argv: Vec<Vec<u8>>, envp: Vec<Vec<u8>>) -> Result<(), i64> {
    exec_depth(s, p, path, argv, envp, 0)
}

fn exec_depth(
    s: &mut Server,
    p: &mut Proc,
    path: &str,
    mut argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    depth: u32,
) -> Result<(), i64> {
    let path = if path == "/proc/self/exe" { p.exe.clone() } else { String::from(path) };
    let f = fs();
    let ino = f.resolve(p.cwd, &path, true)?;
    if !matches!(f.get(ino).node, Node::File(_)) {
        return Err(EACCES);
    }
    if f.get(ino).mode & 0o111 == 0 {
        return Err(EACCES);
    }
    let data = f.contents(ino)?;
    if argv.iter().chain(envp.iter()).map(|a| a.len() + 9).sum::<usize>() > MAX_ARGS_BYTES {
        return Err(E2BIG);
    }
    if data.starts_with(b"#!") {
        if depth > 3 {
            return Err(ELOOP);
        }
        let line_end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len()).min(256);
        let line = core::str::from_utf8(&data[2..line_end]).map_err(|_| ENOEXEC)?;
        let mut words = line.trim().splitn(2, [' ', '\t']);
        let interp = String::from(words.next().filter(|w| !w.is_empty()).ok_or(ENOEXEC)?);
        let mut new_argv = alloc::vec![Vec::from(interp.as_bytes())];
        if let Some(arg) = words.next().map(str::trim).filter(|a| !a.is_empty()) {
            new_argv.push(Vec::from(arg.as_bytes()));
        }
        new_argv.push(Vec::from(path.as_bytes()));
        if !argv.is_empty() {
            argv.remove(0);
        }
        new_argv.extend(argv);
        return exec_depth(s, p, &interp, new_argv, envp, depth + 1);
    }
    let elf = ElfBytes::<LittleEndian>::minimal_parse(&data).map_err(|_| ENOEXEC)?;
    let h = elf.ehdr;
    if h.e_machine != elf::abi::EM_X86_64 || !matches!(h.e_type, elf::abi::ET_EXEC | elf::abi::ET_DYN) {
        return Err(ENOEXEC);
    }
    let phdrs: Vec<_> = elf.segments().ok_or(ENOEXEC)?.iter().collect();
    if phdrs.iter().any(|ph| ph.p_type == PT_INTERP) {
        // Dynamic programs need their interpreter (ld.so): not yet.
        return Err(ENOEXEC);
    }
    let base = if h.e_type == elf::abi::ET_DYN { PIE_BASE } else { 0 };
    let name = String::from(path.rsplit('/').next().unwrap_or(""));
    let keep = Keep::create(p.pid, &name)?;
    let mut mm = Mm::new(keep.aspace);
    let loaded = load(&mut mm, ino, &data, h.e_phoff, &phdrs, base, s)
        .and_then(|(brk, phdr)| {
            mm.brk_start = brk;
            mm.brk = brk;
            let entry = base + h.e_entry;
            let auxv = [
                (3, phdr),
                (4, h.e_phentsize as u64),
                (5, h.e_phnum as u64),
                (6, PAGE),
                (7, 0),
                (8, 0),
                (9, entry),
                (11, 0),
                (12, 0),
                (13, 0),
                (14, 0),
                (16, 0),
                (17, 100),
                (23, 0),
            ];
            let sp = build_stack(&mut mm, s, &argv, &envp, &auxv, path.as_bytes())?;
            keep.process.set_regs(entry, sp, 0, 0).map_err(|_| EFAULT)?;
            Ok(())
        });
    drop(data);
    if let Err(e) = loaded {
        keep.destroy();
        return Err(e);
    }
    // The point of no return: the old program goes.
    if let Some(old) = p.keep.take() {
        old.destroy();
    }
    p.mm = crate::shared::Shared::new(mm);
    p.keep = Some(keep);
    p.exe = path;
    p.name = name;
    p.fs_base = 0;
    for fd in p.fds.iter_mut() {
        if fd.as_ref().is_some_and(|f| f.cloexec) {
            *fd = None;
        }
    }
    // Handlers do not survive exec; ignored signals do.
    for a in p.sigactions.iter_mut() {
        if a[0] != crate::process::SIG_IGN {
            *a = [0; 4];
        }
    }
    Ok(())
}

/// Maps the PT_LOAD segments; returns the end of the highest (where brk
/// starts) and the program headers' address.
fn load(
    mm: &mut Mm,
    ino: usize,
    data: &[u8],
    phoff: u64,
    phdrs: &[elf::segment::ProgramHeader],
    base: u64,
    s: &mut Server,
) -> Result<(u64, u64), i64> {
    let mut end = 0;
    let mut phdr = 0;
    let archive = matches!(fs().get(ino).node, Node::File(Data::Archive(..)));
    for ph in phdrs {
        if ph.p_type == PT_PHDR {
            phdr = base + ph.p_vaddr;
        }
        if ph.p_type != PT_LOAD || ph.p_memsz == 0 {
            continue;
        }
        let vaddr = base.checked_add(ph.p_vaddr).ok_or(ENOEXEC)?;
        let seg_end = vaddr.checked_add(ph.p_memsz).ok_or(ENOEXEC)?;
        if ph.p_filesz > ph.p_memsz
            || ph.p_offset.checked_add(ph.p_filesz).is_none_or(|e| e > data.len() as u64)
            || seg_end > mem::MMAP_TOP
            || vaddr < PAGE
        {
            return Err(ENOEXEC);
        }
        if phdr == 0 && (ph.p_offset..ph.p_offset + ph.p_filesz).contains(&phoff) {
            phdr = vaddr + (phoff - ph.p_offset);
        }
        let mut prot = 0;
        if ph.p_flags & PF_R != 0 {
            prot |= PROT_READ;
        }
        if ph.p_flags & PF_W != 0 {
            prot |= PROT_WRITE;
        }
        if ph.p_flags & PF_X != 0 {
            prot |= PROT_EXEC;
        }
        let start = page_down(vaddr);
        let stop = page_up(seg_end);
        mm.add_area(start, stop - start, prot);
        // Read-only pages whose bytes are all file bytes are shared from
        // the file's page cache when the offsets line up.
        let congruent = vaddr % PAGE == ph.p_offset % PAGE;
        let file_end = vaddr + ph.p_filesz;
        let mut va = start;
        while va < stop {
            let shared = archive && congruent && prot & PROT_WRITE == 0 && va + PAGE <= page_up(file_end) && ph.p_filesz == ph.p_memsz;
            if shared {
                let file_off = ph.p_offset - (vaddr - va);
                if let Some(f) = fs().cached_page(ino, file_off / PAGE)? {
                    mm.put(va, f, prot)?;
                    va += PAGE;
                    continue;
                }
            }
            // A private page: the file bytes that fall in it, zeros after.
            let lo = va.max(vaddr);
            let hi = (va + PAGE).min(file_end);
            let frame = if lo < hi {
                let off = (ph.p_offset + (lo - vaddr)) as usize;
                Frame::with(&data[off..off + (hi - lo) as usize], (lo - va) as usize)?
            } else {
                Frame::new()?
            };
            mm.put(va, frame, prot)?;
            va += PAGE;
        }
        end = end.max(stop);
    }
    if end == 0 {
        return Err(ENOEXEC);
    }
    if phdr == 0 {
        // The program headers are in no segment: AT_PHDR cannot say where.
        return Err(ENOEXEC);
    }
    // The trampoline page (arch_prctl's wrfsbase), read and execute.
    mm.add_area(mem::TRAMPOLINE, PAGE, PROT_READ | PROT_EXEC);
    mm.put(mem::TRAMPOLINE, s.trampoline.clone(), PROT_READ | PROT_EXEC)?;
    Ok((end, phdr))
}

/// Writes argc, argv, envp, auxv and the strings; returns the stack
/// pointer.
fn build_stack(
    mm: &mut Mm,
    s: &mut Server,
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    auxv: &[(u64, u64)],
    execfn: &[u8],
) -> Result<u64, i64> {
    mm.add_area(mem::STACK_TOP - mem::STACK_SIZE, mem::STACK_SIZE, PROT_READ | PROT_WRITE);
    let mut top = mem::STACK_TOP;
    let mut push = |mm: &mut Mm, bytes: &[u8]| -> Result<u64, i64> {
        top -= bytes.len() as u64 + 1;
        mm.write(top, bytes)?;
        mm.write(top + bytes.len() as u64, &[0])?;
        Ok(top)
    };
    let execfn_at = push(mm, execfn)?;
    let platform = push(mm, b"x86_64")?;
    let mut argp = Vec::new();
    for a in argv {
        argp.push(push(mm, a)?);
    }
    let mut envpp = Vec::new();
    for e in envp {
        envpp.push(push(mm, e)?);
    }
    top &= !15;
    top -= 16;
    let random = top;
    let r = [s.random(), s.random()];
    mm.write(random, &r[0].to_le_bytes())?;
    mm.write(random + 8, &r[1].to_le_bytes())?;
    let mut words: Vec<u64> = Vec::new();
    words.push(argp.len() as u64);
    words.extend(&argp);
    words.push(0);
    words.extend(&envpp);
    words.push(0);
    for &(k, v) in auxv {
        words.push(k);
        words.push(v);
    }
    words.extend([15, platform, 25, random, 31, execfn_at, 0, 0]);
    let mut sp = top - words.len() as u64 * 8;
    sp &= !15;
    for (i, w) in words.iter().enumerate() {
        mm.write_u64(sp + i as u64 * 8, *w)?;
    }
    Ok(sp)
}

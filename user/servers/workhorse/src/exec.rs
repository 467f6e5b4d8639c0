//! execve: an ELF executable (static, or dynamic with its interpreter
//! `PT_INTERP`, ld.so, loaded beside it) or a `#!` script, loaded into a
//! fresh Keep process and address space, with the initial stack Linux
//! builds (argc, argv, envp, the auxiliary vector; System V ABI, x86-64
//! supplement, 3.4.1).  The old Keep process is destroyed only when the new
//! one is ready, so a failed exec leaves the caller as it was.

use alloc::string::String;
use alloc::vec::Vec;

use elf::ElfBytes;
use elf::abi::{PF_R, PF_W, PF_X, PT_INTERP, PT_LOAD, PT_PHDR};
use elf::endian::LittleEndian;

use crate::Server;
use crate::linux::errno::*;
use crate::mem::{self, Backing, Frame, Mm, PAGE, PROT_EXEC, PROT_READ, PROT_WRITE};
use crate::process::{Keep, Proc};
use crate::vfs::{Ino, Node, fs};

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
    let cwd = p.cwd;
    exec_depth(s, p, cwd, path, None, argv, envp, 0)
}

/// `exec` of what execveat names: `path` resolved from directory `dir`,
/// or with `file` the open file itself (AT_EMPTY_PATH: its inode and what
/// /proc/self/exe shows), `path` then being the /dev/fd name a script's
/// interpreter is given, as Linux gives it.
pub fn exec_at(
    s: &mut Server,
    p: &mut Proc,
    dir: Ino,
    path: &str,
    file: Option<(Ino, String)>,
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> Result<(), i64> {
    exec_depth(s, p, dir, path, file, argv, envp, 0)
}

#[allow(clippy::too_many_arguments)]
fn exec_depth(
    s: &mut Server,
    p: &mut Proc,
    dir: Ino,
    path: &str,
    file: Option<(Ino, String)>,
    mut argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    depth: u32,
) -> Result<(), i64> {
    let path = if path == "/proc/self/exe" { p.exe.clone() } else { String::from(path) };
    let f = fs();
    let (ino, exe_name) = match file {
        Some((ino, name)) => (ino, Some(name)),
        None => (f.resolve(dir, &path, true)?, None),
    };
    if !matches!(f.get(ino).node, Node::File(_)) {
        return Err(EACCES);
    }
    let n = f.get(ino);
    if !p.cred.may(n.uid, n.gid, n.mode, keep_workhorse::perm::MAY_EXEC, false) {
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
        // A script named relative to a directory descriptor: its
        // interpreter gets the whole path (it opens it from its own
        // working directory).
        let script = if exe_name.is_none() && dir != p.cwd && !path.starts_with('/') {
            f.canonical(dir, &path).unwrap_or(path)
        } else {
            path
        };
        new_argv.push(keep_workhorse::bytenames::to_bytes(&script));
        if !argv.is_empty() {
            argv.remove(0);
        }
        new_argv.extend(argv);
        let cwd = p.cwd;
        return exec_depth(s, p, cwd, &interp, None, new_argv, envp, depth + 1);
    }
    let exe = Elf::parse(&data)?;
    // A dynamic program: its interpreter (ld.so) is loaded too and started
    // first; it finds the program through the auxiliary vector.
    let interp = match exe.interp(&data)? {
        Some(ipath) => {
            let iino = f.resolve(p.cwd, &ipath, true).map_err(|e| if e == ENOENT { ENOENT } else { ELIBBAD })?;
            if !matches!(f.get(iino).node, Node::File(_)) {
                return Err(ELIBBAD);
            }
            let idata = f.contents(iino)?;
            let ielf = Elf::parse(&idata).map_err(|_| ELIBBAD)?;
            if ielf.interp(&idata)?.is_some() {
                return Err(ELIBBAD);
            }
            Some((idata, ielf))
        }
        None => None,
    };
    let base = if exe.dynamic { PIE_BASE } else { 0 };
    let name = String::from(path.rsplit('/').next().unwrap_or(""));
    let keep = Keep::create(p.pid, &name)?;
    let mut mm = Mm::new(keep.aspace);
    let loaded = load(&mut mm, &data, &exe, base)
        .and_then(|(brk, phdr)| {
            mm.brk_start = brk;
            mm.brk = brk;
            let (start, at_base) = match &interp {
                Some((idata, ielf)) => {
                    // Where Linux puts it: the top of the mmap range.
                    let ibase = if ielf.dynamic {
                        let (lo, hi) = ielf.span();
                        mm.find_free(hi - lo).ok_or(ENOMEM)?.checked_sub(lo).ok_or(ENOMEM)?
                    } else {
                        0
                    };
                    load(&mut mm, idata, ielf, ibase)?;
                    (ibase + ielf.entry, ibase)
                }
                None => (base + exe.entry, 0),
            };
            // The trampoline page (arch_prctl's wrfsbase), read and execute.
            mm.add_area(mem::TRAMPOLINE, PAGE, PROT_READ | PROT_EXEC);
            mm.put(mem::TRAMPOLINE, s.trampoline.clone(), PROT_READ | PROT_EXEC)?;
            // No AT_SYSINFO_EHDR: there is no vDSO, so glibc makes real
            // system calls for the clocks (docs/workhorse.md).
            let auxv = [
                (3, phdr),
                (4, exe.phentsize),
                (5, exe.phdrs.len() as u64),
                (6, PAGE),
                (7, at_base),
                (8, 0),
                (9, base + exe.entry),
                (11, 0),
                (12, 0),
                (13, 0),
                (14, 0),
                (16, 0),
                (17, 100),
                (23, 0),
            ];
            let sp = build_stack(&mut mm, s, &argv, &envp, &auxv, &keep_workhorse::bytenames::to_bytes(&path))?;
            keep.process.set_regs(start, sp, 0, 0).map_err(|_| EFAULT)?;
            Ok(())
        });
    drop(data);
    drop(interp);
    if let Err(e) = loaded {
        keep.destroy();
        return Err(e);
    }
    // The point of no return: the old program goes.
    if let Some(old) = p.keep.take() {
        p.cpu.keep_gone(&old);
        old.destroy();
    }
    p.mm = crate::shared::Shared::new(mm);
    p.keep = Some(keep);
    p.exe = match exe_name {
        Some(e) => e,
        None => fs().canonical(dir, &path).unwrap_or(path),
    };
    p.name = name;
    p.fs_base = 0;
    p.altstack = crate::process::AltStack::NONE;
    for fd in p.fds.iter_mut() {
        if fd.as_ref().is_some_and(|f| f.cloexec) {
            *fd = None;
        }
    }
    // Handlers do not survive exec; ignored signals do, without their
    // flags (as Linux: SA_NOCLDWAIT goes).
    for a in p.sigactions.iter_mut() {
        *a = if a[0] == crate::process::SIG_IGN { [a[0], 0, 0, 0] } else { [0; 4] };
    }
    Ok(())
}

/// What exec needs of an ELF file's header and program headers.
struct Elf {
    /// ET_DYN: placed at a base of the loader's choice.
    dynamic: bool,
    entry: u64,
    phoff: u64,
    phentsize: u64,
    phdrs: Vec<elf::segment::ProgramHeader>,
}

impl Elf {
    fn parse(data: &[u8]) -> Result<Elf, i64> {
        let elf = ElfBytes::<LittleEndian>::minimal_parse(data).map_err(|_| ENOEXEC)?;
        let h = elf.ehdr;
        if h.e_machine != elf::abi::EM_X86_64 || !matches!(h.e_type, elf::abi::ET_EXEC | elf::abi::ET_DYN) {
            return Err(ENOEXEC);
        }
        Ok(Elf {
            dynamic: h.e_type == elf::abi::ET_DYN,
            entry: h.e_entry,
            phoff: h.e_phoff,
            phentsize: h.e_phentsize as u64,
            phdrs: elf.segments().ok_or(ENOEXEC)?.iter().collect(),
        })
    }

    /// The interpreter's path (PT_INTERP), if the program names one.
    fn interp(&self, data: &[u8]) -> Result<Option<String>, i64> {
        let Some(ph) = self.phdrs.iter().find(|ph| ph.p_type == PT_INTERP) else { return Ok(None) };
        let bytes = data
            .get(ph.p_offset as usize..ph.p_offset.saturating_add(ph.p_filesz) as usize)
            .ok_or(ENOEXEC)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let path = core::str::from_utf8(&bytes[..end]).map_err(|_| ENOEXEC)?;
        if path.is_empty() || path.len() > 255 {
            return Err(ENOEXEC);
        }
        Ok(Some(String::from(path)))
    }

    /// The page-aligned range its PT_LOAD segments cover (before the base).
    fn span(&self) -> (u64, u64) {
        let loads = self.phdrs.iter().filter(|ph| ph.p_type == PT_LOAD && ph.p_memsz > 0);
        let lo = loads.clone().map(|ph| page_down(ph.p_vaddr)).min().unwrap_or(0);
        let hi = loads.map(|ph| page_up(ph.p_vaddr.saturating_add(ph.p_memsz))).max().unwrap_or(0);
        (lo, hi.max(lo))
    }
}

/// Maps the PT_LOAD segments at `base`; returns the end of the highest
/// (where brk starts) and the program headers' address.  Segments of an
/// archive file are populated when touched (read-only pages shared from
/// the page cache); a written file's are copied now.
fn load(mm: &mut Mm, data: &alloc::borrow::Cow<'static, [u8]>, elf: &Elf, base: u64) -> Result<(u64, u64), i64> {
    let mut end = 0;
    let mut phdr = 0;
    let lazy: Option<&'static [u8]> = match data {
        alloc::borrow::Cow::Borrowed(b) => Some(b),
        alloc::borrow::Cow::Owned(_) => None,
    };
    let phoff = elf.phoff;
    for ph in &elf.phdrs {
        if ph.p_type == PT_PHDR {
            phdr = base.wrapping_add(ph.p_vaddr);
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
        let file_end = (ph.p_offset + ph.p_filesz) as usize;
        end = end.max(stop);
        if let Some(file) = lazy
            && vaddr % PAGE == ph.p_offset % PAGE
        {
            // The file bytes end where the segment's do: .bss reads zeros.
            let backing = Backing { file: &file[..file_end], off: ph.p_offset - (vaddr - start) };
            mm.add_file_area(start, stop - start, prot, Some(backing));
            continue;
        }
        mm.add_area(start, stop - start, prot);
        let file_vend = vaddr + ph.p_filesz;
        let mut va = start;
        while va < stop {
            // A private page: the file bytes that fall in it, zeros after.
            let lo = va.max(vaddr);
            let hi = (va + PAGE).min(file_vend);
            let frame = if lo < hi {
                let off = (ph.p_offset + (lo - vaddr)) as usize;
                Frame::with(&data[off..off + (hi - lo) as usize], (lo - va) as usize)?
            } else {
                Frame::new()?
            };
            mm.put(va, frame, prot)?;
            va += PAGE;
        }
    }
    if end == 0 {
        return Err(ENOEXEC);
    }
    if phdr == 0 {
        // The program headers are in no segment: AT_PHDR cannot say where.
        return Err(ENOEXEC);
    }
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

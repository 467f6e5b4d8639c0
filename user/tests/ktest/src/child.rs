//! Child processes built by hand, without an ELF file: a code page at CODE
//! (read + execute) holding a few machine-code bytes and a data page at
//! DATA (read + write) that also serves as the stack.

use keep_abi::{Status, rights};
use keep_loader::{Child, Loader};

use crate::{Ctx, Cx};

pub const CODE: u64 = 0x1000;
pub const DATA: u64 = 0x3000;
pub const STACK_TOP: u64 = DATA + 0x1000;

/// `jmp .`: runs until stopped.
pub const LOOP: &[u8] = &[0xeb, 0xfe];

/// A CREATED child ready to run `code`; its capabilities stay in the
/// caller's slots until [`release`] destroys it.
pub fn spawn(cx: &mut Cx, code: &[u8]) -> Result<Child, alloc::string::String> {
    let mut loader = Loader::new(&mut cx.slots);
    let child = loader.create().ctx("create child")?;
    let pages = loader
        .add_page(&child, CODE, rights::READ | rights::EXEC, code, 0)
        .and_then(|_| loader.add_page(&child, DATA, rights::READ | rights::WRITE, &[], 0));
    let regs = pages
        .ctx("map child pages")
        .and_then(|_| child.process.set_name("ktest-child").ctx("SET_NAME"))
        .and_then(|_| {
            child
                .process
                .set_regs(CODE, STACK_TOP, 0, 0)
                .ctx("SET_REGS")
        });
    if let Err(e) = regs {
        let _ = loader.destroy(child);
        return Err(e);
    }
    Ok(child)
}

/// Destroys the child (its process and address space go back to the
/// account) and frees the caller's slots.
pub fn release(cx: &mut Cx, child: Child) {
    let _ = Loader::new(&mut cx.slots).destroy(child);
}

/// Runs `code` in a fresh child until it exits or faults.
pub fn run(cx: &mut Cx, code: &[u8]) -> Result<Status, alloc::string::String> {
    let child = spawn(cx, code)?;
    let status = child
        .process
        .start()
        .ctx("START")
        .and_then(|_| child.process.wait().ctx("WAIT"));
    release(cx, child);
    status
}

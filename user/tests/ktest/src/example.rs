//! The example programs of docs/writing-programs.md, run as a user would
//! combine them: the counter server started from the boot image, its
//! client given a sender capability to it, and the protocol's answers.

use keep_abi::{SELF_ASPACE, Sender, Tag, state};
use keep_counter::{BAD_REQUEST, Client, OVERFLOW, SERVER_SLOT, Server};
use keep_loader::{Grant, Loader, Spec};

use crate::{Ctx, Cx, TestResult};

fn elf(cx: &Cx, name: &str) -> Result<&'static [u8], alloc::string::String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    Ok(img.find(name).ok_or_else(|| alloc::format!("no '{name}' in the boot image"))?.data)
}

/// Runs counter-client with `grants` to its end; its exit code.
fn run_client(cx: &mut Cx, grants: &[Grant]) -> Result<u64, alloc::string::String> {
    let client_elf = elf(cx, "counter-client")?;
    let spec = Spec { name: "counter-client", elf: client_elf, arg0: 0, arg1: 0, grants, blob: None };
    let mut loader = Loader::new(&mut cx.slots);
    let child = loader.load(&spec).ctx("load counter-client")?;
    let st = child.process.start().and_then(|_| child.process.wait());
    let _ = loader.destroy(child);
    let st = st.ctx("run counter-client")?;
    ensure!(st.state == state::EXITED, "counter-client ended in state {}", st.state);
    Ok(st.code)
}

/// counter-client, given a sender capability to a counter server, adds 1..10
/// and reads 55 (exit 0); without one it says so and exits 2.  The server
/// keeps one counter per payload, refuses unknown requests and overflow
/// without change, and quits on QUIT.
pub fn counter(cx: &mut Cx) -> TestResult {
    let console = Grant { src: keep_abi::slot::CONSOLE, dest: keep_abi::slot::CONSOLE, rights: 0 };
    ensure!(run_client(cx, &[console])? == 2, "counter-client without a server capability should exit 2");
    let counter_elf = elf(cx, "counter")?;
    let server = Server::spawn(&mut cx.slots, counter_elf, 0).map_err(alloc::string::String::from)?;
    let r = (|| {
        let give = Grant { src: server.sender, dest: SERVER_SLOT, rights: 0 };
        let code = run_client(cx, &[console, give])?;
        ensure!(code == 0, "counter-client exited {code}");
        let me = Client(Sender(server.sender));
        ensure!(me.get() == Ok(55), "the client's counter after it ended: {:?}", me.get());
        // A second capability with another payload is another counter.
        let other = cx.slots.alloc().ok_or("no slot")?;
        let r = server.child.process.mint(other, 1, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT");
        let r = r.and_then(|_| {
            let c = Client(Sender(other));
            ensure!(c.get() == Ok(0), "payload 1 starts at 0: {:?}", c.get());
            ensure!(c.add(5) == Ok(5), "payload 1 ADD 5");
            ensure!(me.get() == Ok(55), "payload 0 unchanged by payload 1");
            // Overflow is refused and changes nothing.
            ensure!(c.add(u64::MAX) == Err(("the server refused", OVERFLOW)), "overflow: {:?}", c.add(u64::MAX));
            ensure!(c.get() == Ok(5), "after the refused overflow: {:?}", c.get());
            // An unknown request is refused.
            let m = Sender(other).call(Tag::new(99), [0; 4]);
            ensure!(m.err == 0 && m.words[0] == BAD_REQUEST, "label 99: err {} status {}", m.err, m.words[0]);
            Ok(())
        });
        let _ = SELF_ASPACE.delete_cap(other);
        cx.slots.free(other);
        r?;
        ensure!(me.get() == Ok(55), "payload 0 after the requests through payload 1: {:?}", me.get());
        Ok(())
    })();
    let stopped = server.stop(&mut cx.slots);
    r?;
    stopped.map_err(alloc::string::String::from)
}

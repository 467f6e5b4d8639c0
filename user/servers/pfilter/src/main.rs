//! pfilter: a packet-filter server that runs client-supplied filters in
//! software fault domains of its own address space (protocol in lib.rs,
//! design in docs/sfi.md, "Inside Keep").  Bad requests and bad filters get an
//! error status; nothing a client sends ends the server.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use keep_abi::{MEMORY, Return, SELF_ASPACE, Tag, recv};
use keep_loader::SlotPool;
use keep_pfilter::*;
use keep_rt::println;
use keep_sfi_rt::{CallError, Config, Domain, LoadError, Runtime};

keep_rt::entry!(main);

/// The receive slot of the return capability.
const RET: u64 = 0x10;

/// The MTU a filter may ask for (its one import).
extern "C" fn pf_mtu(_: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    1500
}

struct Filter {
    domain: Domain,
    entry: u64,
}

struct Server {
    slots: SlotPool,
    filters: Vec<Option<Filter>>,
    /// The module being received (LOAD_PART).
    staging: Vec<u8>,
}

fn main(_: u64, _: u64) -> i32 {
    let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
    slots.reserve(RET);
    let rt = match Runtime::start(&mut slots, PRIORITY + 1) {
        Ok(rt) => rt,
        Err(e) => {
            println!("pfilter: cannot start the SFI runtime: {e}");
            return 1;
        }
    };
    rt.set_timeout(TIMEOUT_MS);
    let mut s = Server { slots, filters: Vec::new(), staging: Vec::new() };
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let label = m.tag.label();
        let (status, words, reason) = s.serve(label, m.words[0]);
        let mut tag = Tag::new(0);
        match reason {
            Some(r) => {
                buf.set_string(r.as_bytes());
                tag = tag.with_string();
            }
            None => buf.set_string(&[]),
        }
        let w = [status, words[0], words[1], words[2]];
        if label == QUIT && status == OK {
            let _ = Return(RET).reply(tag, w);
            break;
        }
        m = Return(RET).reply_recv(tag.with_slots(1), w, 0);
    }
    for f in s.filters.drain(..).flatten() {
        f.domain.unload(&mut s.slots);
    }
    rt.stop(&mut s.slots);
    0
}

impl Server {
    /// One request: (status, words, reason string).
    fn serve(&mut self, label: u64, w0: u64) -> (u64, [u64; 3], Option<alloc::string::String>) {
        let buf = keep_rt::ipc_buffer();
        let fail = |st| (st, [0; 3], None);
        match label {
            LOAD_PART => {
                let len = buf.received_len();
                let Some(end) = (w0 as usize).checked_add(len) else { return fail(TOO_BIG) };
                if w0 as usize > MAX_MODULE || end > MAX_MODULE {
                    return fail(TOO_BIG);
                }
                if self.staging.len() < end {
                    self.staging.resize(end, 0);
                }
                buf.read_string(&mut self.staging[w0 as usize..end]);
                (OK, [0; 3], None)
            }
            LOAD => {
                if w0 as usize > self.staging.len() {
                    return fail(BAD_REQUEST);
                }
                let module = core::mem::take(&mut self.staging);
                let imports: [(&str, keep_sfi_rt::HostFn); 1] = [("pf_mtu", pf_mtu)];
                let cfg = Config { heap_size: MAX_PACKET as u64, stack_size: 16 * 4096, max_data: 1 << 20 };
                let r = Domain::load(&mut self.slots, &module[..w0 as usize], &imports, &cfg);
                match r {
                    Ok(d) => {
                        let Some(entry) = d.entry("filter") else {
                            d.unload(&mut self.slots);
                            return (NO_FILTER_ENTRY, [NO_OFFSET, 0, 0], Some("no entry 'filter'".into()));
                        };
                        let f = Some(Filter { domain: d, entry });
                        let id = match self.filters.iter().position(|f| f.is_none()) {
                            Some(i) => {
                                self.filters[i] = f;
                                i
                            }
                            None => {
                                self.filters.push(f);
                                self.filters.len() - 1
                            }
                        };
                        (OK, [id as u64, 0, 0], None)
                    }
                    Err(LoadError::Rejected(r)) => {
                        let off = r.offset.unwrap_or(NO_OFFSET);
                        (REJECTED, [off, 0, 0], Some(r.reason.into()))
                    }
                    Err(LoadError::UnresolvedImport(n)) => (UNRESOLVED_IMPORT, [NO_OFFSET, 0, 0], Some(n)),
                    Err(e) => (LOAD_FAILED, [NO_OFFSET, 0, 0], Some(alloc::format!("{e}"))),
                }
            }
            RUN => {
                let Some(Some(f)) = self.filters.get(w0 as usize) else { return fail(NO_SUCH_FILTER) };
                let (heap, heap_end) = f.domain.heap();
                // SAFETY: the heap is mapped read+write, MAX_PACKET bytes.
                let dst = unsafe { core::slice::from_raw_parts_mut(heap as *mut u8, (heap_end - heap) as usize) };
                let n = buf.read_string(dst);
                match f.domain.call(f.entry, &[heap, n as u64]) {
                    Ok(v) => (OK, [v, 0, 0], None),
                    Err(CallError::Fault { vector, addr, offset }) => (FAULT, [vector, addr, offset], None),
                    Err(CallError::Timeout) => (TIMEOUT, [0; 3], None),
                    Err(_) => fail(BAD_REQUEST),
                }
            }
            UNLOAD => match self.filters.get_mut(w0 as usize).and_then(|f| f.take()) {
                Some(f) => {
                    f.domain.unload(&mut self.slots);
                    (OK, [0; 3], None)
                }
                None => fail(NO_SUCH_FILTER),
            },
            QUIT => (OK, [0; 3], None),
            _ => fail(BAD_REQUEST),
        }
    }
}

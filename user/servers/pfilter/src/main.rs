//! pfilter: a packet-filter server that runs client-supplied filters in
//! software fault domains of its own address space (protocol in lib.rs,
//! design in docs/sfi.md, "Inside Keep").  It answers through the generated
//! `dispatch` (protocol.rs, from abi/services/pfilter.toml), one method of
//! [`Handler`] per request; what it accepts of the arguments is
//! keep_pfilter::rules.  Bad requests and bad filters get an error status;
//! nothing a client sends ends the server.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use keep_abi::proto::Answer;
use keep_abi::{MEMORY, Msg, Return, SELF_ASPACE, Tag, recv};
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
    /// The reply's reason string (a refused LOAD's).
    reason: Option<alloc::string::String>,
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
    let mut s = Server { slots, filters: Vec::new(), staging: Vec::new(), reason: None };
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let label = m.tag.label();
        let a = dispatch(&mut s, &m);
        let (status, words) = (a.status, a.results);
        let mut tag = Tag::new(0);
        match s.reason.take() {
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

/// A method's reply: the status, words 1-3 and the reason string.
type Reply = (u64, [u64; 3], Option<alloc::string::String>);

impl Server {
    fn answer(&mut self, (st, w, reason): Reply) -> Answer {
        self.reason = reason;
        Answer::refuse(st).with_results(w)
    }
}

/// The requests (abi/services/pfilter.toml).
impl Handler for Server {
    fn load_part(&mut self, _: &Msg, offset: u64) -> Answer {
        let buf = keep_rt::ipc_buffer();
        let end = match rules::load_part(offset, buf.received_len()) {
            Ok(end) => end,
            Err(st) => return Answer::refuse(st),
        };
        if self.staging.len() < end {
            self.staging.resize(end, 0);
        }
        buf.read_string(&mut self.staging[offset as usize..end]);
        Answer::ok([0; 3])
    }

    fn load(&mut self, _: &Msg, size: u64) -> Answer {
        let size = match rules::load(size, self.staging.len()) {
            Ok(n) => n,
            Err(st) => return Answer::refuse(st),
        };
        let module = core::mem::take(&mut self.staging);
        let imports: [(&str, keep_sfi_rt::HostFn); 1] = [("pf_mtu", pf_mtu)];
        let cfg = Config { heap_size: MAX_PACKET as u64, stack_size: 16 * 4096, max_data: 1 << 20 };
        let r = match Domain::load(&mut self.slots, &module[..size], &imports, &cfg) {
            Ok(d) => {
                let Some(entry) = d.entry("filter") else {
                    d.unload(&mut self.slots);
                    return self.answer((NO_FILTER_ENTRY, [NO_OFFSET, 0, 0], Some("no entry 'filter'".into())));
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
        };
        self.answer(r)
    }

    fn run(&mut self, _: &Msg, filter: u64) -> Answer {
        let Some(Some(f)) = self.filters.get(filter as usize) else { return Answer::refuse(NO_SUCH_FILTER) };
        let (heap, heap_end) = f.domain.heap();
        // SAFETY: the heap is mapped read+write, MAX_PACKET bytes.
        let dst = unsafe { core::slice::from_raw_parts_mut(heap as *mut u8, (heap_end - heap) as usize) };
        let n = keep_rt::ipc_buffer().read_string(dst);
        match f.domain.call(f.entry, &[heap, n as u64]) {
            Ok(v) => Answer::value(v),
            Err(CallError::Fault { vector, addr, offset }) => Answer::refuse(FAULT).with_results([vector, addr, offset]),
            Err(CallError::Timeout) => Answer::refuse(TIMEOUT),
            Err(_) => Answer::refuse(BAD_REQUEST),
        }
    }

    fn unload(&mut self, _: &Msg, filter: u64) -> Answer {
        match self.filters.get_mut(filter as usize).and_then(|f| f.take()) {
            Some(f) => {
                f.domain.unload(&mut self.slots);
                Answer::ok([0; 3])
            }
            None => Answer::refuse(NO_SUCH_FILTER),
        }
    }

    fn quit(&mut self, _: &Msg) -> Answer {
        Answer::ok([0; 3])
    }
}

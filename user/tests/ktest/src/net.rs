//! The network server (user/drivers/net) and its stacks (docs/network.md,
//! "The network"): the protocol and every refusal, demultiplexing by
//! address, the NIC's path to QEMU's user network, and two smoltcp stacks
//! in processes of their own answering ARP and ICMP echo.  ktest itself
//! registers as raw stacks and builds the frames.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{Process, SELF_ASPACE, Sender, TIMER, Tag, rights, slot};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_net::{
    Admin, BAD_REQUEST, DENIED, QUEUE_FRAMES, ETHERTYPE_ARP, ETHERTYPE_IPV4, IN_USE, MAX_FRAME, NET_SLOT, NOT_REGISTERED, Stack,
    ipv4, mac_bytes,
};
use keep_dataspace::{DS_SLOT, Dataspace, Manager};
use keep_net::ring::{self, Control, QUEUE, RX_DONE, RX_FREE, Ring, TX_DONE, TX_SUBMIT, desc, desc_offset, desc_status};
use keep_pci::PCI_SLOT;
use keep_rt::println;

use crate::drivers::{Running, grant, quit_pci, start_pci, stop};
use crate::{Ctx, Cx, TestResult};

const A_IP: u64 = ipv4(10, 0, 2, 30);
const B_IP: u64 = ipv4(10, 0, 2, 31);
const GATEWAY: u64 = ipv4(10, 0, 2, 2);
const S1_IP: u64 = ipv4(10, 0, 2, 15);
const S2_IP: u64 = ipv4(10, 0, 2, 16);
const BROADCAST: [u8; 6] = [0xff; 6];

fn ip_bytes(ip: u64) -> [u8; 4] {
    (ip as u32).to_be_bytes()
}

/// The Internet checksum (RFC 1071).
fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ethernet(dst: [u8; 6], src: [u8; 6], ty: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ty.to_be_bytes());
    f
}

/// "Who has `target`?" from `ip`.
fn arp_request(mac: [u8; 6], ip: u64, target: u64) -> Vec<u8> {
    let mut f = ethernet(BROADCAST, mac, ETHERTYPE_ARP);
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&ip_bytes(ip));
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&ip_bytes(target));
    f
}

/// An ICMP echo request (`kind` 8) from `src` to `dst` carrying `data`.
fn icmp(kind: u8, mac: [u8; 6], dst_mac: [u8; 6], src: u64, dst: u64, data: &[u8]) -> Vec<u8> {
    let mut f = ethernet(dst_mac, mac, ETHERTYPE_IPV4);
    let total = (20 + 8 + data.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, 1, 0, 0]);
    ip.extend_from_slice(&ip_bytes(src));
    ip.extend_from_slice(&ip_bytes(dst));
    let c = inet_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut m = vec![kind, 0, 0, 0, 0x4b, 0x50, 0, 1];
    m.extend_from_slice(data);
    let c = inet_checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&m);
    f
}

/// The next frame for `s`, waiting up to about `ms` milliseconds.
fn wait_frame(s: Stack, ms: u64) -> Result<Option<Vec<u8>>, String> {
    let mut buf = vec![0u8; keep_abi::layout::MAX_STRING as usize];
    for _ in 0..ms {
        if let Some((n, _)) = s.recv(&mut buf).ctx("RECV")? {
            return Ok(Some(buf[..n].to_vec()));
        }
        let _ = TIMER.sleep(1);
    }
    Ok(None)
}

fn status(r: Result<(), keep_net::Error>) -> u64 {
    match r {
        Ok(()) => keep_net::OK,
        Err(keep_net::Error::Status(s)) => s,
        Err(keep_net::Error::Call(e)) => 1000 + e.0,
    }
}

/// An ARP reply's (sender MAC, sender address, target address).
fn arp_reply(f: &[u8]) -> Option<([u8; 6], u64, u64)> {
    if f.len() < 42 || f[12..14] != ETHERTYPE_ARP.to_be_bytes() || f[20..22] != [0, 2] {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u64;
    Some((f[22..28].try_into().unwrap(), be(&f[28..32]), be(&f[38..42])))
}

/// An ICMP echo reply's (source address, data).
fn echo_reply(f: &[u8]) -> Option<(u64, &[u8])> {
    if f.len() < 42 || f[12..14] != ETHERTYPE_IPV4.to_be_bytes() || f[23] != 1 || f[34] != 0 {
        return None;
    }
    Some((u32::from_be_bytes([f[26], f[27], f[28], f[29]]) as u64, &f[42..]))
}

/// Starts the PCI server, the dataspace manager and the network server;
/// runs `body` with the administrator's capability and the manager's;
/// stops all three.  Without an IOMMU the server drives the NIC through
/// the PCI server's mediator.
/// The tests' dataspace manager and the bank that pays for their
/// dataspaces (crate::ds::start_ds).
#[derive(Clone, Copy)]
pub(crate) struct Dsm {
    pub(crate) m: Manager,
    pub(crate) bank: u64,
}

impl Dsm {
    fn create(self, pages: u64, dest: u64) -> keep_dataspace::Result<u64> {
        self.m.create(pages, self.bank, dest)
    }
}

fn with_net(cx: &mut Cx, id: &str, body: impl FnOnce(&mut Cx, Admin, Dsm) -> TestResult) -> TestResult {
    with_net_process(cx, id, |cx, admin, dsm, _| body(cx, admin, dsm))
}

/// `with_net`, the body given the server's process too (to mint what only
/// its starter may: init's notice).
pub(crate) fn with_net_process(cx: &mut Cx, _id: &str, body: impl FnOnce(&mut Cx, Admin, Dsm, Process) -> TestResult) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let ds = crate::ds::start_ds(cx)?;
        let r = (|| {
            let net = start_with(
                cx, "net", 0, 0,
                &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::MEMORY), grant(slot::TIMER),
                  Grant { src: pci.cap, dest: PCI_SLOT, rights: 0 }, Grant { src: ds.srv.cap, dest: DS_SLOT, rights: 0 }],
            )?;
            let r = body(cx, Admin(Sender(net.cap)), Dsm { m: Manager(Sender(ds.srv.cap)), bank: ds.clients.0 }, net.child.process);
            let stopped = stop(cx, net, |s| Admin(s).quit().ctx("net QUIT"));
            r?;
            stopped
        })();
        let stopped = crate::ds::stop_ds(cx, ds);
        r?;
        stopped
    })();
    let stopped = stop(cx, pci, quit_pci);
    r?;
    stopped
}

fn start_with(cx: &mut Cx, name: &str, arg0: u64, arg1: u64, grants: &[Grant]) -> Result<Running, String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    let elf = img.find(name).ok_or_else(|| format!("no '{name}' in the boot image"))?.data;
    let spec = Spec { name, elf, arg0, arg1, grants, blob: None };
    let child = Loader::new(&mut cx.slots).load(&spec).ctx(&format!("load {name}"))?;
    let cap = cx.slot()?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).ctx("MINT")?;
    child.process.start().ctx("START")?;
    Ok(Running { child, cap })
}

/// A netstack process with address `ip` and `services` (its arg1), given
/// the stack capability `stack`, the dataspace manager and a bank for its
/// ring.
fn start_netstack(cx: &mut Cx, stack: u64, ip: u64, services: u64, dsm: Dsm) -> Result<Child, String> {
    let p = start_with(
        cx, "netstack", ip, services,
        &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::TIMER), Grant { src: stack, dest: NET_SLOT, rights: 0 },
          Grant { src: dsm.m.0.0, dest: DS_SLOT, rights: 0 },
          Grant { src: dsm.bank, dest: keep_dataspace::BANK_SLOT, rights: 0 }],
    )?;
    drop_caps(cx, &[p.cap]);
    Ok(p.child)
}

fn drop_caps(cx: &mut Cx, caps: &[u64]) {
    for &c in caps {
        let _ = SELF_ASPACE.delete_cap(c);
    }
    cx.drop_slots(caps);
}

/// NET0001: the protocol and its refusals.
pub fn net_protocol(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0001", |cx, admin, _| {
        let [a, b, x] = cx.slots::<3>()?;
        let r = protocol(admin, a, b, x);
        drop_caps(cx, &[a, b, x]);
        r
    })
}

fn protocol(admin: Admin, a: u64, b: u64, x: u64) -> TestResult {
    let na = admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
    let nb = admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
    let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
    let (mac, ip, waiting) = sa.info().ctx("A's INFO")?;
    ensure!(ip == A_IP && waiting == 0 && mac != 0 && mac >> 48 == 0, "A's INFO: MAC {mac:#x} ip {ip:#x} waiting {waiting}");
    ensure!(sb.info().ctx("B's INFO")?.1 == B_IP, "B's address");
    let m = mac_bytes(mac);
    use keep_net::Error::Status;
    ensure!(admin.add_stack(A_IP, x) == Err(Status(IN_USE)), "a second stack with A's address");
    ensure!(admin.add_stack(0, x) == Err(Status(BAD_REQUEST)), "address 0");
    ensure!(admin.add_stack(0xffff_ffff, x) == Err(Status(BAD_REQUEST)), "the broadcast address");
    ensure!(admin.add_stack(1 << 32, x) == Err(Status(BAD_REQUEST)), "an address wider than 32 bits");
    // Malformed frames: refused, nothing sent or delivered.
    let good = icmp(8, m, m, A_IP, B_IP, b"to B");
    let mut long = good.clone();
    long.resize(MAX_FRAME + 1, 0);
    let mut ipv6 = good.clone();
    ipv6[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let mut spoofed_mac = good.clone();
    spoofed_mac[6] ^= 2;
    let cases: [(&str, &[u8], u64); 7] = [
        ("10 bytes", &good[..10], BAD_REQUEST),
        ("a bare Ethernet header", &good[..14], BAD_REQUEST),
        ("an IPv4 header cut short", &good[..30], BAD_REQUEST),
        ("1515 bytes", &long, BAD_REQUEST),
        ("IPv6", &ipv6, BAD_REQUEST),
        ("another source MAC address", &spoofed_mac, DENIED),
        ("B's source address", &icmp(8, m, m, B_IP, A_IP, b"spoof"), DENIED),
    ];
    for (what, f, want) in cases {
        let got = status(sa.send(f));
        ensure!(got == want, "A sends {what}: {}, want {}", keep_net::status_name(got), keep_net::status_name(want));
    }
    let arp_spoof = arp_request(m, B_IP, GATEWAY);
    ensure!(status(sa.send(&arp_spoof)) == DENIED, "an ARP request in B's name");
    let no_string = Sender(a).call(Tag::new(keep_net::SEND), [0; 4]);
    ensure!(no_string.err == 0 && no_string.words[0] == BAD_REQUEST, "SEND without a frame: {}", no_string.words[0]);
    let unknown = Sender(a).call(Tag::new(99), [0; 4]);
    ensure!(unknown.words[0] == BAD_REQUEST, "an unknown label: {}", unknown.words[0]);
    let admin_call = Sender(a).call(Tag::new(keep_net::ADD_STACK), [ipv4(10, 0, 2, 40), 0, 0, 0]);
    ensure!(admin_call.words[0] == BAD_REQUEST, "ADD_STACK through a stack's capability: {}", admin_call.words[0]);
    // A string said to run past the IPC buffer (memory the client does not
    // own): the kernel refuses the call before the server sees it.
    let ipc = keep_rt::ipc_buffer();
    ipc.set_string(&good);
    ipc.send_len = keep_abi::layout::MAX_STRING + 1;
    let past = Sender(a).call(Tag::new(keep_net::SEND).with_string(), [0; 4]);
    ipc.send_len = 0;
    ensure!(past.err == keep_abi::err::INVALID_ARG, "a string past the IPC buffer: error {}", past.err);
    ensure!(sa.counters().ctx("A's COUNTERS")? == (0, 0, 0), "the refused requests changed A's counters: {:?}", sa.counters());
    ensure!(sb.recv(&mut [0u8; 2048]).ctx("B's RECV")?.is_none(), "B received a refused frame");
    // Nothing waits: EMPTY (the client's None).
    ensure!(sa.recv(&mut [0u8; 2048]).ctx("RECV")?.is_none(), "A's RECV with nothing waiting");
    // A stack that is not registered: B removed.
    admin.remove_stack(nb).ctx("REMOVE_STACK B")?;
    ensure!(sb.info() == Err(Status(NOT_REGISTERED)), "INFO of a removed stack: {:?}", sb.info());
    ensure!(status(sb.send(&good)) == NOT_REGISTERED, "SEND from a removed stack");
    ensure!(sb.recv(&mut [0u8; 2048]) == Err(Status(NOT_REGISTERED)), "RECV of a removed stack");
    ensure!(admin.remove_stack(nb) == Err(Status(NOT_REGISTERED)), "REMOVE_STACK twice");
    ensure!(admin.remove_stack(0) == Err(Status(NOT_REGISTERED)), "REMOVE_STACK 0");
    ensure!(admin.remove_stack(99) == Err(Status(NOT_REGISTERED)), "REMOVE_STACK 99");
    // B's address is free again, under a new number.
    let nb2 = admin.add_stack(B_IP, x).ctx("ADD_STACK B again")?;
    ensure!(nb2 != nb && nb2 != na, "the new stack's number {nb2}");
    ensure!(sb.info() == Err(Status(NOT_REGISTERED)), "the old capability names the new stack");
    ensure!(Stack(Sender(x)).info().ctx("new B's INFO")?.1 == B_IP, "new B's address");
    Ok(())
}

/// NET0002: frames go to the stack they are addressed to and no other,
/// between stacks and from the NIC (QEMU's user network answers ARP and
/// ICMP echo for its gateway, 10.0.2.2).
pub fn net_demux(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0002", |cx, admin, _| {
        let [a, b] = cx.slots::<2>()?;
        let r = demux(admin, a, b);
        drop_caps(cx, &[a, b]);
        r
    })
}

fn demux(admin: Admin, a: u64, b: u64) -> TestResult {
    admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
    admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
    let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
    let m = mac_bytes(sa.info().ctx("INFO")?.0);
    // Between stacks: three frames to B, two to A, each only where sent.
    for i in 0..3u8 {
        sa.send(&icmp(0, m, m, A_IP, B_IP, &[b'B', i])).ctx("A to B")?;
    }
    for i in 0..2u8 {
        sb.send(&icmp(0, m, m, B_IP, A_IP, &[b'A', i])).ctx("B to A")?;
    }
    for (s, name, tag, n) in [(sb, "B", b'B', 3u8), (sa, "A", b'A', 2)] {
        for i in 0..n {
            let f = wait_frame(s, 1)?.ok_or_else(|| format!("{name}'s frame {i} missing"))?;
            ensure!(echo_reply(&f).map(|(_, d)| d) == Some(&[tag, i][..]), "{name}'s frame {i}: {:x?}", &f[..]);
        }
        ensure!(wait_frame(s, 1)?.is_none(), "{name} got more frames than were sent to it");
    }
    // Through the NIC: A asks QEMU's gateway for its MAC address; the
    // reply is A's alone.
    let (_, to_nic_before, _) = admin.stats().ctx("STATS")?;
    sa.send(&arp_request(m, A_IP, GATEWAY)).ctx("A's ARP request")?;
    let f = wait_frame(sa, 5000)?.ok_or("no ARP reply from the gateway")?;
    let (gw_mac, from, to) = arp_reply(&f).ok_or_else(|| format!("not an ARP reply: {:x?}", &f[..]))?;
    ensure!(from == GATEWAY && to == A_IP, "ARP reply from {from:#x} to {to:#x}");
    sb.send(&icmp(8, m, gw_mac, B_IP, GATEWAY, b"keep ping from B")).ctx("B's ping")?;
    // The gateway first asks who has B's address; B (a raw stack) answers.
    let f = wait_frame(sb, 5000)?.ok_or("no ARP request from the gateway")?;
    ensure!(
        f.len() >= 42 && f[12..14] == ETHERTYPE_ARP.to_be_bytes() && f[20..22] == [0, 1] && f[38..42] == ip_bytes(B_IP),
        "not the gateway's ARP request for B: {:x?}", &f[..]
    );
    let mut reply = ethernet(gw_mac, m, ETHERTYPE_ARP);
    reply.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    reply.extend_from_slice(&m);
    reply.extend_from_slice(&ip_bytes(B_IP));
    reply.extend_from_slice(&gw_mac);
    reply.extend_from_slice(&ip_bytes(GATEWAY));
    sb.send(&reply).ctx("B's ARP reply")?;
    let f = wait_frame(sb, 5000)?.ok_or("no ICMP echo reply from the gateway")?;
    ensure!(echo_reply(&f) == Some((GATEWAY, &b"keep ping from B"[..])), "B's echo reply: {:x?}", &f[..]);
    ensure!(wait_frame(sa, 20)?.is_none(), "A received a frame for B");
    let (from_nic, to_nic, _) = admin.stats().ctx("STATS")?;
    ensure!(to_nic == to_nic_before + 3 && from_nic >= 3, "NIC counters: {from_nic} in, {to_nic} out");
    ensure!(sa.counters().ctx("COUNTERS")?.0 == 3 && sb.counters().ctx("COUNTERS")?.0 == 5, "delivered: A {:?}, B {:?}", sa.counters(), sb.counters());
    // A stack that does not fetch its frames: its queue holds QUEUE_FRAMES,
    // the rest are dropped and counted (for it and in STATS); the sender
    // is not refused.
    let (_, _, dropped_before) = admin.stats().ctx("STATS")?;
    let extra = 6;
    for i in 0..QUEUE_FRAMES + extra {
        sa.send(&icmp(0, m, m, A_IP, B_IP, &(i as u32).to_be_bytes())).ctx("A floods B")?;
    }
    let (delivered, _, dropped) = sb.counters().ctx("COUNTERS")?;
    ensure!(delivered == 5 + QUEUE_FRAMES as u64 && dropped == extra as u64, "B: delivered {delivered}, dropped {dropped}");
    ensure!(admin.stats().ctx("STATS")?.2 == dropped_before + extra as u64, "STATS' dropped frames");
    ensure!(sb.info().ctx("INFO")?.2 == QUEUE_FRAMES as u64, "B's frames waiting");
    for i in 0..QUEUE_FRAMES {
        let f = wait_frame(sb, 1)?.ok_or_else(|| format!("B's queued frame {i} missing"))?;
        ensure!(echo_reply(&f).map(|(_, d)| d) == Some(&(i as u32).to_be_bytes()[..]), "B's queued frame {i} out of order");
    }
    ensure!(wait_frame(sb, 1)?.is_none(), "B received a dropped frame");
    Ok(())
}

/// NET0003: two smoltcp stacks (user/servers/netstack) in processes of
/// their own answer ARP and ICMP echo, each for its own address only.
pub fn net_stacks(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0003", |cx, admin, dsm| {
        let [s1, s2, x] = cx.slots::<3>()?;
        let r = (|| {
            admin.add_stack(S1_IP, s1).ctx("ADD_STACK 1")?;
            admin.add_stack(S2_IP, s2).ctx("ADD_STACK 2")?;
            admin.add_stack(A_IP, x).ctx("ADD_STACK X")?;
            let mut procs: Vec<Child> = Vec::new();
            let r = (|| {
                for (cap, ip) in [(s1, S1_IP), (s2, S2_IP)] {
                    procs.push(start_netstack(cx, cap, ip, 3, dsm)?);
                }
                stacks(Stack(Sender(x)), Stack(Sender(s1)), Stack(Sender(s2)))
            })();
            for p in procs {
                let _ = Loader::new(&mut cx.slots).destroy(p);
            }
            r
        })();
        drop_caps(cx, &[s1, s2, x]);
        r
    })
}

fn stacks(x: Stack, s1: Stack, s2: Stack) -> TestResult {
    let m = mac_bytes(x.info().ctx("INFO")?.0);
    for (ip, name) in [(S1_IP, "stack 1"), (S2_IP, "stack 2")] {
        x.send(&arp_request(m, A_IP, ip)).ctx("ARP request")?;
        let f = wait_frame(x, 5000)?.ok_or_else(|| format!("no ARP reply from {name}"))?;
        let (mac, from, to) = arp_reply(&f).ok_or_else(|| format!("not an ARP reply: {:x?}", &f[..]))?;
        ensure!(from == ip && to == A_IP && mac == m, "{name}'s ARP reply: {mac:x?} {from:#x} -> {to:#x}");
        let data = format!("keep ping to {name}");
        x.send(&icmp(8, m, m, A_IP, ip, data.as_bytes())).ctx("ping")?;
        let f = wait_frame(x, 5000)?.ok_or_else(|| format!("no ICMP echo reply from {name}"))?;
        ensure!(echo_reply(&f) == Some((ip, data.as_bytes())), "{name}'s echo reply: {:x?}", &f[..]);
    }
    // Each stack was handed exactly the two frames sent to it.
    ensure!(s1.counters().ctx("COUNTERS 1")?.0 == 2, "stack 1 was handed {:?}", s1.counters());
    ensure!(s2.counters().ctx("COUNTERS 2")?.0 == 2, "stack 2 was handed {:?}", s2.counters());
    ensure!(wait_frame(x, 20)?.is_none(), "X received more than the replies");
    Ok(())
}

/// A TCP segment without options or data from `src`:`sport` to
/// `dst`:`dport`, its checksum right, or with `bad` one off.
#[allow(clippy::too_many_arguments)]
fn tcp_frame(mac: [u8; 6], dst_mac: [u8; 6], src: u64, dst: u64, sport: u16, dport: u16, seq: u32, flags: u8, bad: bool) -> Vec<u8> {
    let mut f = ethernet(dst_mac, mac, ETHERTYPE_IPV4);
    let mut ip = vec![0x45, 0, 0, 40, 0x12, 0x35, 0x40, 0, 64, 6, 0, 0];
    ip.extend_from_slice(&ip_bytes(src));
    ip.extend_from_slice(&ip_bytes(dst));
    let c = inet_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut t = Vec::with_capacity(20);
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    let c = inet_checksum(&[tcp_pseudo(src, dst, 20), t.clone()].concat()).wrapping_add(bad as u16);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&t);
    f
}

/// TCP's pseudo-header over a segment of `len` bytes.
fn tcp_pseudo(src: u64, dst: u64, len: usize) -> Vec<u8> {
    [&ip_bytes(src)[..], &ip_bytes(dst)[..], &[0, 6], &(len as u16).to_be_bytes()[..]].concat()
}

/// A TCP segment's (source address, destination port, flags, ack number,
/// whether its checksum is right).
fn tcp_reply(f: &[u8]) -> Option<(u64, u16, u8, u32, bool)> {
    if f.len() < 54 || f[12..14] != ETHERTYPE_IPV4.to_be_bytes() || f[23] != 6 {
        return None;
    }
    let ihl = (f[14] & 0xf) as usize * 4;
    let total = u16::from_be_bytes([f[16], f[17]]) as usize;
    let t = f.get(14 + ihl..14 + total)?;
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let src = be32(&f[26..30]) as u64;
    let right = inet_checksum(&[tcp_pseudo(src, be32(&f[30..34]) as u64, t.len()), t.to_vec()].concat()) == 0;
    Some((src, u16::from_be_bytes([t[2], t[3]]), t[13], be32(&t[8..12]), right))
}

/// NET0009: netstack checks the TCP checksum of every segment it is handed
/// and fills in that of every segment it sends (its own code, not
/// smoltcp's: netstack/src/checksum.rs).  A SYN to its echo port with a
/// wrong checksum is dropped without an answer; the same SYN from another
/// port with the right one is answered with a SYN-ACK whose checksum this
/// test's own RFC 1071 sum finds right.
pub fn net_checksums(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0009", |cx, admin, dsm| {
        let [s1, x] = cx.slots::<2>()?;
        let r = (|| {
            admin.add_stack(S1_IP, s1).ctx("ADD_STACK 1")?;
            admin.add_stack(A_IP, x).ctx("ADD_STACK X")?;
            // Services 1: the TCP echo service on port 7 only.
            let child = start_netstack(cx, s1, S1_IP, 1, dsm)?;
            let r = checksums(Stack(Sender(x)));
            let _ = Loader::new(&mut cx.slots).destroy(child);
            r
        })();
        drop_caps(cx, &[s1, x]);
        r
    })
}

fn checksums(x: Stack) -> TestResult {
    let m = mac_bytes(x.info().ctx("INFO")?.0);
    // The stack learns X's MAC from its ARP request (and is up once it answers).
    x.send(&arp_request(m, A_IP, S1_IP)).ctx("ARP request")?;
    let f = wait_frame(x, 5000)?.ok_or("no ARP reply from the stack")?;
    ensure!(arp_reply(&f).is_some_and(|(_, from, _)| from == S1_IP), "not the stack's ARP reply: {:x?}", &f[..]);
    let (bad_port, good_port, seq) = (40001u16, 40002u16, 0x1000_0000u32);
    x.send(&tcp_frame(m, m, A_IP, S1_IP, bad_port, 7, seq, 0x02, true)).ctx("SYN, wrong checksum")?;
    x.send(&tcp_frame(m, m, A_IP, S1_IP, good_port, 7, seq, 0x02, false)).ctx("SYN")?;
    // The stack takes them in order: an answer to the first would come first.
    for _ in 0..8 {
        let f = wait_frame(x, 5000)?.ok_or("no answer to the SYN with the right checksum")?;
        let Some((from, port, flags, ack, right)) = tcp_reply(&f) else { continue };
        ensure!(from == S1_IP, "a TCP segment from {from:#x}");
        ensure!(port != bad_port, "the SYN with a wrong checksum was answered (flags {flags:#x})");
        ensure!(port == good_port && flags == 0x12 && ack == seq.wrapping_add(1), "not a SYN-ACK to the SYN: port {port} flags {flags:#x} ack {ack:#x}");
        ensure!(right, "the SYN-ACK's checksum is wrong: {:x?}", &f[..]);
        // Nothing more for the dropped SYN either.
        while let Some(f) = wait_frame(x, 200)? {
            ensure!(tcp_reply(&f).is_none_or(|(_, port, ..)| port != bad_port), "the SYN with a wrong checksum was answered late");
        }
        return Ok(());
    }
    Err("no SYN-ACK among the stack's frames".into())
}

/// NET0004: `WAIT` sleeps until a frame comes, and the NIC's MSI-X
/// interrupt is what brings it: with nothing on its way a WAIT ends at
/// its time-out with 0 frames; after A's ARP request for the gateway goes
/// out, A waits without calling the server again, and the reply, taken
/// off the NIC when its receive interrupt reached the server, ends the
/// WAIT; RECV then gives the gateway's ARP reply.  A WAIT with a frame
/// already waiting returns at once.
pub fn net_wait(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0004", |cx, admin, _| {
        let [a] = cx.slots::<1>()?;
        let r = (|| {
            admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
            let sa = Stack(Sender(a));
            let m = mac_bytes(sa.info().ctx("INFO")?.0);
            ensure!(sa.wait(30).ctx("WAIT with nothing coming")? == 0, "a WAIT with nothing coming returned a frame");
            sa.send(&arp_request(m, A_IP, GATEWAY)).ctx("SEND the ARP request")?;
            let n = sa.wait(3000).ctx("WAIT for the reply")?;
            ensure!(n >= 1, "no frame within 3 s: the NIC's interrupt did not wake the server");
            ensure!(sa.wait(3000).ctx("WAIT with a frame waiting")? == n, "WAIT with {n} waiting");
            let f = wait_frame(sa, 1)?.ok_or("RECV after WAIT found nothing")?;
            let (_, from, to) = arp_reply(&f).ok_or("not an ARP reply")?;
            ensure!(from == GATEWAY && to == A_IP, "ARP reply from {from:#x} to {to:#x}");
            let (from_nic, _, _) = admin.stats().ctx("STATS")?;
            ensure!(from_nic >= 1, "STATS: {from_nic} frames from the NIC");
            Ok(())
        })();
        drop_caps(cx, &[a]);
        r
    })
}

/// Where the ring tests map ktest's own ring.
const RING_VA: u64 = 0x0000_5f00_0000_0000;

/// ktest's ring as stack `st`: a dataspace of `pages` made by the manager
/// (into `own`), mapped at RING_VA, a read-write share (into `share`)
/// attached.  The ring's queues are left as the server set them (all
/// indices 0, nothing offered) when `raw`, else as `Ring::new` makes them.
fn ring_for(st: Stack, m: Dsm, own: u64, share: u64, raw: bool) -> Result<Option<Ring>, String> {
    m.create(ring::RING_PAGES, own).map_err(|e| format!("CREATE: {e}"))?;
    let ds = Dataspace(Sender(own));
    ds.map(slot::SELF_ASPACE, RING_VA, 0, ring::RING_PAGES, rights::READ | rights::WRITE).map_err(|e| format!("MAP: {e}"))?;
    ds.share(rights::READ | rights::WRITE, share).map_err(|e| format!("SHARE: {e}"))?;
    let r = if raw { None } else { Some(Ring::new(RING_VA)) };
    let pages = st.attach(share).ctx("ATTACH")?;
    ensure!(pages == ring::RING_PAGES, "ATTACH answered {pages} pages");
    Ok(r)
}

fn ring_done(own: u64) {
    let _ = Dataspace(Sender(own)).destroy();
}

/// A frame from `src` to `dst` of `len` bytes (IPv4, protocol 253, the
/// payload a pattern of `seed`).
pub(crate) fn ipv4_frame(mac: [u8; 6], src: u64, dst: u64, len: usize, seed: u8) -> Vec<u8> {
    let mut f = ethernet(mac, mac, ETHERTYPE_IPV4);
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((len - 14) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 253, 0, 0]);
    f.extend_from_slice(&ip_bytes(src));
    f.extend_from_slice(&ip_bytes(dst));
    while f.len() < len {
        f.push((f.len() as u8).wrapping_mul(7).wrapping_add(seed));
    }
    f
}

/// Submits `frame` through the ring (in a free transmit buffer).
fn ring_send(r: &Ring, frame: &[u8]) -> Result<(), String> {
    let off = r.tx_take().ok_or("no free transmit buffer")?;
    r.buffer(off, frame.len()).copy_from_slice(frame);
    r.tx_submit(off, frame.len());
    Ok(())
}

/// The next frame in the ring's RX_DONE (copied), waiting for it up to
/// `ms` in WAIT.
fn ring_recv(st: Stack, r: &Ring, ms: u64) -> Result<Option<Vec<u8>>, String> {
    if r.rx_waiting() == 0 && st.wait_ring(ms, 0).ctx("WAIT")? == 0 {
        return Ok(None);
    }
    let Some((off, len)) = r.rx_next() else { return Ok(None) };
    let f = r.buffer(off, len).to_vec();
    r.rx_release(off);
    Ok(Some(f))
}

/// NET0005: a stack's frames through a ring in its dataspace: to and from
/// QEMU's gateway through the NIC (a long frame read by the device in
/// place, past the head the server copies), to and from a stack of the
/// message-string protocol, several frames with one KICK, frames arriving
/// without any call by the ring's stack, transmit buffers given back.
pub fn net_ring(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0005", |cx, admin, m| {
        let [a, b, own, share] = cx.slots::<4>()?;
        let r = (|| {
            admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
            admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
            let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
            let ring = ring_for(sa, m, own, share, false)?.unwrap();
            let r = ring_honest(admin, sa, sb, &ring);
            ring_done(own);
            r
        })();
        drop_caps(cx, &[a, b, own, share]);
        r
    })
}

fn ring_honest(admin: Admin, sa: Stack, sb: Stack, r: &Ring) -> TestResult {
    let m = mac_bytes(sa.info().ctx("INFO")?.0);
    let (_, to_nic0, _) = admin.stats().ctx("STATS")?;
    // ARP through the NIC both ways.
    ring_send(r, &arp_request(m, A_IP, GATEWAY))?;
    ensure!(r.take_kick(), "a frame in an empty TX_SUBMIT does not ask for a KICK");
    sa.kick().ctx("KICK")?;
    let f = ring_recv(sa, r, 3000)?.ok_or("no ARP reply from the gateway in the ring")?;
    let (gw_mac, from, to) = arp_reply(&f).ok_or_else(|| format!("not an ARP reply: {:x?}", &f[..f.len().min(42)]))?;
    ensure!(from == GATEWAY && to == A_IP, "ARP reply from {from:#x} to {to:#x}");
    // A long ICMP echo request (1,000 bytes of data: the device reads all
    // but its head in the ring's buffer); the reply carries the same data.
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 251) as u8).collect();
    ring_send(r, &icmp(8, m, gw_mac, A_IP, GATEWAY, &data))?;
    ensure!(r.take_kick(), "the echo request asks for no KICK");
    sa.kick().ctx("KICK")?;
    let mut got = None;
    for _ in 0..5 {
        match ring_recv(sa, r, 3000)? {
            Some(f) if echo_reply(&f).is_some() => {
                got = Some(f);
                break;
            }
            Some(_) => {} // an ARP request of the gateway's, unanswered here
            None => break,
        }
    }
    let f = got.ok_or("no echo reply to the long echo request")?;
    ensure!(echo_reply(&f) == Some((GATEWAY, &data[..])), "the echo reply's data differ (len {})", f.len());
    // Three frames to B with one KICK, in order and intact; one of them long.
    let frames = [ipv4_frame(m, A_IP, B_IP, 60, 1), ipv4_frame(m, A_IP, B_IP, MAX_FRAME, 2), ipv4_frame(m, A_IP, B_IP, 200, 3)];
    let mut kicks = 0;
    for f in &frames {
        ring_send(r, f)?;
        kicks += r.take_kick() as u32;
    }
    ensure!(kicks == 1, "three frames in a row asked for {kicks} KICKs");
    ensure!(r.tx_pending() == 3, "{} frames pending before the KICK", r.tx_pending());
    sa.kick().ctx("KICK 3")?;
    ensure!(r.tx_pending() == 0, "{} frames left in TX_SUBMIT after the KICK", r.tx_pending());
    for (k, f) in frames.iter().enumerate() {
        let g = wait_frame(sb, 1000)?.ok_or_else(|| format!("B did not get frame {k}"))?;
        ensure!(&g == f, "B's frame {k} differs ({} bytes, want {})", g.len(), f.len());
    }
    // B to A by SEND: in A's ring without A calling.
    let back = [ipv4_frame(m, B_IP, A_IP, 64, 4), ipv4_frame(m, B_IP, A_IP, 1200, 5)];
    for f in &back {
        sb.send(f).ctx("B's SEND")?;
    }
    ensure!(r.rx_waiting() == 2, "{} frames in A's RX_DONE after B's two", r.rx_waiting());
    for (k, f) in back.iter().enumerate() {
        let g = ring_recv(sa, r, 10)?.ok_or("A's frame vanished")?;
        ensure!(&g == f, "A's frame {k} from B differs");
    }
    // Every transmit buffer came back, none refused.
    let c = r.control();
    let given = c.prod(TX_DONE);
    ensure!(given == 5, "TX_DONE holds {given} buffers, want 5");
    for k in 0..given {
        ensure!(desc_status(c.entry(TX_DONE, k)) == keep_net::OK, "TX_DONE entry {k}: status {}", desc_status(c.entry(TX_DONE, k)));
    }
    ensure!(r.refused.get() == 0 && r.can_send(), "transmit buffers refused {}", r.refused.get());
    let (_, to_nic, _) = admin.stats().ctx("STATS")?;
    ensure!(to_nic == to_nic0 + 2, "STATS: {} frames to the NIC, want 2", to_nic - to_nic0);
    ensure!(sa.counters().ctx("COUNTERS")?.1 == 5, "A's COUNTERS: {:?}", sa.counters());
    ensure!(sa.ring_counters().ctx("RING_COUNTERS")? == (0, 0, 0), "an honest ring counted {:?}", sa.ring_counters());
    Ok(())
}

/// NET0006: malformed rings and descriptors are refused and counted, the
/// server stays up, nothing malformed reaches the NIC or another stack,
/// and the ring goes on working: transmit descriptors outside the
/// dataspace, on the control page, unaligned, too short or long, near
/// 2^32, in another's name; receive buffers outside, unaligned, on the
/// control page; queue indices out of range in all three directions; the
/// stack writing the server's half; ATTACH of what is no ring.
pub fn net_ring_refusals(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0006", |cx, admin, m| {
        let s = cx.slots::<10>()?;
        let r = (|| {
            let [a, b, own, share, fake, spare, small, big, ro, small_own] = s;
            admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
            admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
            let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
            ring_for(sa, m, own, share, true)?;
            let r = refusals(admin, m, sa, sb, [fake, spare, small, big, ro, small_own]);
            ring_done(own);
            r
        })();
        drop_caps(cx, &s);
        r
    })
}

fn refusals(admin: Admin, m: Dsm, sa: Stack, sb: Stack, [fake, spare, small, big, ro, small_own]: [u64; 6]) -> TestResult {
    use keep_net::Error::Status;
    use keep_net::NOT_DATASPACE;
    let mac = mac_bytes(sa.info().ctx("INFO")?.0);
    let c = Control(RING_VA);
    let pages = ring::RING_PAGES;
    let (_, to_nic0, _) = admin.stats().ctx("STATS")?;
    let good = ipv4_frame(mac, A_IP, B_IP, 100, 9);
    let buf = |off: u64, f: &[u8]| unsafe { core::slice::from_raw_parts_mut((RING_VA + off) as *mut u8, f.len()) }.copy_from_slice(f);
    let tx0 = 4096 + 40 * 2048;
    buf(tx0, &good);
    buf(tx0 + 2048, &ipv4_frame(mac, B_IP, A_IP, 100, 9));
    // Transmit descriptors: each comes back in TX_DONE with its status.
    let cases: [(&str, u64, u64); 8] = [
        ("outside the dataspace", desc(pages * 4096, 100, 0), BAD_REQUEST),
        ("the last bytes past the end", desc(pages * 4096 - 40, 100, 0), BAD_REQUEST),
        ("on the control page", desc(0, 100, 0), BAD_REQUEST),
        ("unaligned", desc(tx0 + 100, 100, 0), BAD_REQUEST),
        ("10 bytes long", desc(tx0, 10, 0), BAD_REQUEST),
        ("1515 bytes long", desc(tx0, MAX_FRAME as u64 + 1, 0), BAD_REQUEST),
        ("at an offset near 2^32", desc(0xffff_f800, 100, 0), BAD_REQUEST),
        ("in B's name", desc(tx0 + 2048, 100, 0), DENIED),
    ];
    for (k, (_, d, _)) in cases.iter().enumerate() {
        c.set_entry(TX_SUBMIT, k as u32, *d);
    }
    c.set_prod(TX_SUBMIT, cases.len() as u32);
    sa.kick().ctx("KICK of the malformed descriptors")?;
    ensure!(c.cons(TX_SUBMIT) == cases.len() as u32, "the server took {} of {} descriptors", c.cons(TX_SUBMIT), cases.len());
    ensure!(c.prod(TX_DONE) == cases.len() as u32, "TX_DONE holds {}", c.prod(TX_DONE));
    for (k, (what, d, want)) in cases.iter().enumerate() {
        let e = c.entry(TX_DONE, k as u32);
        ensure!(desc_offset(e) == desc_offset(*d) && desc_status(e) == *want,
            "a descriptor {what}: TX_DONE {:#x} status {}, want {}", desc_offset(e), keep_net::status_name(desc_status(e)), keep_net::status_name(*want));
    }
    c.set_cons(TX_DONE, cases.len() as u32);
    ensure!(wait_frame(sb, 20)?.is_none(), "B received a refused frame");
    ensure!(sa.ring_counters().ctx("RING_COUNTERS")? == (7, 0, 0), "RING_COUNTERS after 7 malformed: {:?}", sa.ring_counters());
    // Receive buffers: three malformed ones are taken and counted, the
    // frame goes into the good one after them.
    for (k, off) in [pages * 4096, 4096 + 100, 0, 4096].into_iter().enumerate() {
        c.set_entry(RX_FREE, k as u32, desc(off, 2048, 0));
    }
    c.set_prod(RX_FREE, 4);
    let to_a = ipv4_frame(mac, B_IP, A_IP, 300, 7);
    sb.send(&to_a).ctx("B's SEND to A")?;
    ensure!(c.cons(RX_FREE) == 4 && c.prod(RX_DONE) == 1, "RX_FREE taken {}, RX_DONE {}", c.cons(RX_FREE), c.prod(RX_DONE));
    let e = c.entry(RX_DONE, 0);
    ensure!(desc_offset(e) == 4096 && ring::desc_len(e) == 300, "RX_DONE entry {e:#x}");
    ensure!(unsafe { core::slice::from_raw_parts((RING_VA + 4096) as *const u8, 300) } == &to_a[..], "the frame in the good buffer differs");
    c.set_cons(RX_DONE, 1);
    ensure!(sa.ring_counters().ctx("RING_COUNTERS")? == (10, 0, 0), "RING_COUNTERS after 3 bad buffers: {:?}", sa.ring_counters());
    // No buffer offered: the frame is dropped and counted for A.
    let (_, _, dropped0) = sa.counters().ctx("COUNTERS")?;
    sb.send(&to_a).ctx("B's SEND with no buffer")?;
    ensure!(sa.counters().ctx("COUNTERS")?.2 == dropped0 + 1 && c.prod(RX_DONE) == 1, "a frame without a buffer: {:?}", sa.counters());
    // Indices out of range: TX_SUBMIT's producer, RX_FREE's producer,
    // RX_DONE's consumer, TX_DONE's consumer.  Nothing is taken or given.
    c.set_prod(TX_SUBMIT, cases.len() as u32 + QUEUE + 1);
    ensure!(sa.kick() == Err(Status(BAD_REQUEST)), "KICK with TX_SUBMIT's index out of range: {:?}", sa.kick());
    ensure!(c.cons(TX_SUBMIT) == cases.len() as u32, "the server took from a queue out of range");
    c.set_prod(TX_SUBMIT, cases.len() as u32);
    c.set_cons(TX_DONE, 1000);
    c.set_entry(TX_SUBMIT, cases.len() as u32, desc(tx0, 100, 0));
    c.set_prod(TX_SUBMIT, cases.len() as u32 + 1);
    ensure!(sa.kick() == Err(Status(BAD_REQUEST)), "KICK with TX_DONE's index out of range: {:?}", sa.kick());
    c.set_cons(TX_DONE, cases.len() as u32);
    c.set_prod(RX_FREE, 4 + QUEUE + 1);
    sb.send(&to_a).ctx("B's SEND, RX_FREE out of range")?;
    ensure!(sa.kick() == Err(Status(BAD_REQUEST)), "KICK with RX_FREE's index out of range: {:?}", sa.kick());
    ensure!(c.cons(TX_SUBMIT) == cases.len() as u32, "KICK with RX_FREE's index out of range took from TX_SUBMIT");
    c.set_prod(RX_FREE, 4);
    c.set_cons(RX_DONE, 7);
    sb.send(&to_a).ctx("B's SEND, RX_DONE out of range")?;
    ensure!(sa.kick() == Err(Status(BAD_REQUEST)), "KICK with RX_DONE's index out of range: {:?}", sa.kick());
    ensure!(c.cons(TX_SUBMIT) == cases.len() as u32, "KICK with RX_DONE's index out of range took from TX_SUBMIT");
    c.set_cons(RX_DONE, 1);
    ensure!(c.prod(RX_DONE) == 1, "a frame delivered with an index out of range");
    // Each delivery and each KICK that met one counts it: 2 + 2 × 2.
    ensure!(sa.ring_counters().ctx("RING_COUNTERS")? == (10, 6, 0), "RING_COUNTERS after 4 indices out of range: {:?}", sa.ring_counters());
    // The stack writes the server's half: counted, and the server goes on
    // from its own indices (the frame lands at entry 1, RX_DONE's producer
    // is 2 again, TX_SUBMIT's consumer right).
    c.set_prod(RX_DONE, 77);
    c.set_cons(TX_SUBMIT, 3);
    c.set_entry(RX_FREE, 4, desc(4096 + 2048, 2048, 0));
    c.set_prod(RX_FREE, 5);
    sb.send(&to_a).ctx("B's SEND after the server's half was written")?;
    ensure!(c.prod(RX_DONE) == 2 && desc_offset(c.entry(RX_DONE, 1)) == 4096 + 2048, "RX_DONE's producer {} entry 1 {:#x}", c.prod(RX_DONE), c.entry(RX_DONE, 1));
    sa.kick().ctx("KICK after the server's half was written")?;
    ensure!(c.cons(TX_SUBMIT) == cases.len() as u32 + 1, "TX_SUBMIT's consumer {}", c.cons(TX_SUBMIT));
    let g = wait_frame(sb, 1000)?.ok_or("B did not get the honest frame")?;
    ensure!(g == good, "B's honest frame differs");
    let (bad, range, tampered) = sa.ring_counters().ctx("RING_COUNTERS")?;
    ensure!(bad == 10 && range == 6 && tampered == 2, "RING_COUNTERS after the server's half was written: {:?}", (bad, range, tampered));
    // ATTACH of what is no ring: each refused, A's ring untouched.
    keep_abi::SELF_PROCESS.mint(fake, 1 << 63 | 1, rights::WRITE | rights::CALL).ctx("MINT a fake dataspace")?;
    keep_abi::MEMORY.retype(keep_abi::ty::PAGE, spare).ctx("RETYPE")?;
    m.create(1, small).map_err(|e| format!("CREATE 1 page: {e}"))?;
    m.create(ring::MAX_PAGES + 1, big).map_err(|e| format!("CREATE {} pages: {e}", ring::MAX_PAGES + 1))?;
    m.create(ring::MIN_PAGES, small_own).map_err(|e| format!("CREATE: {e}"))?;
    Dataspace(Sender(small_own)).share(rights::READ, ro).map_err(|e| format!("SHARE read-only: {e}"))?;
    let attach_cases: [(&str, Result<u64, keep_net::Error>, u64); 7] = [
        ("nothing", {
            let w = Sender(sa.0.0).call(Tag::new(keep_net::ATTACH), [0; 4]).words[0];
            if w == 0 { Ok(0) } else { Err(Status(w)) }
        }, NOT_DATASPACE),
        ("a sender to another process", sa.attach(fake), NOT_DATASPACE),
        ("the manager's own capability", sa.attach(m.m.0.0), NOT_DATASPACE),
        ("a page", sa.attach(spare), NOT_DATASPACE),
        ("a dataspace of 1 page", sa.attach(small), BAD_REQUEST),
        ("a dataspace of 66 pages", sa.attach(big), BAD_REQUEST),
        ("a read-only share", sa.attach(ro), DENIED),
    ];
    for (what, got, want) in attach_cases {
        ensure!(got == Err(Status(want)), "ATTACH of {what}: {got:?}, want {}", keep_net::status_name(want));
    }
    for d in [small, big, small_own] {
        let _ = Dataspace(Sender(d)).destroy();
    }
    // Without a ring: KICK and RING_COUNTERS are refused.
    ensure!(sb.kick() == Err(Status(BAD_REQUEST)), "KICK without a ring: {:?}", sb.kick());
    ensure!(sb.ring_counters() == Err(Status(BAD_REQUEST)), "RING_COUNTERS without a ring");
    // A's ring still works, and only the honest frame went anywhere.
    c.set_entry(TX_SUBMIT, cases.len() as u32 + 1, desc(tx0, 100, 0));
    c.set_prod(TX_SUBMIT, cases.len() as u32 + 2);
    sa.kick().ctx("KICK after the refused ATTACHes")?;
    ensure!(wait_frame(sb, 1000)?.as_deref() == Some(&good[..]), "A's ring stopped working after the refused ATTACHes");
    let (_, to_nic, _) = admin.stats().ctx("STATS")?;
    ensure!(to_nic == to_nic0, "{} frames went to the NIC", to_nic - to_nic0);
    Ok(())
}

/// NET0007: init's notice that a client has ended (names::GONE through a
/// sender with payload names::NOTICE, which only the server's starter can
/// mint): the server lets go of the client's ring at once (no ring any
/// more, its frames queued as messages again, and the ring's dataspace
/// destroyed after it without harm to the server), and a new ring works.
/// The same request through a stack's or the administrator's capability,
/// naming another stack, is refused and changes nothing.  (Without the
/// server's notice handling the notice is refused and B keeps its ring.)
pub fn net_notice(cx: &mut Cx) -> TestResult {
    with_net_process(cx, "NET0007", |cx, admin, m, net| {
        let s = cx.slots::<6>()?;
        let r = (|| {
            let [a, b, own, share, notice, own2] = s;
            admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
            admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
            let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
            let r = ring_for(sb, m, own, share, false)?.unwrap();
            let mac = mac_bytes(sa.info().ctx("INFO")?.0);
            let gone = |cap: u64, payload: u64| Sender(cap).call(Tag::new(keep_system::names::GONE), [payload, 0, 0, 0]);
            // Forged notices naming B (payload 2): refused, B's ring kept.
            for (who, cap) in [("stack A", a), ("the administrator", 0)] {
                let cap = if cap == 0 { admin.0.0 } else { cap };
                let g = gone(cap, 2);
                ensure!(g.err == 0 && g.words[0] == BAD_REQUEST, "a notice through {who}'s capability: err {} status {}", g.err, g.words[0]);
            }
            sa.send(&ipv4_frame(mac, A_IP, B_IP, 100, 1)).ctx("A's SEND")?;
            ensure!(r.rx_waiting() == 1, "after forged notices B's ring got {} frames, want 1", r.rx_waiting());
            ensure!(sb.ring_counters().is_ok(), "after forged notices B has no ring: {:?}", sb.ring_counters());
            // init's notice: B's ring is let go.
            net.mint(notice, keep_system::names::NOTICE, rights::WRITE | rights::CALL).ctx("MINT notice")?;
            let g = gone(notice, 2);
            ensure!(g.err == 0 && g.words[0] == keep_net::OK, "the notice: err {} status {}", g.err, g.words[0]);
            ensure!(matches!(sb.ring_counters(), Err(keep_net::Error::Status(BAD_REQUEST))), "B still has a ring: {:?}", sb.ring_counters());
            let f = ipv4_frame(mac, A_IP, B_IP, 300, 2);
            sa.send(&f).ctx("A's SEND after the notice")?;
            ensure!(r.rx_waiting() == 1, "the server wrote into B's ring after the notice");
            let g = wait_frame(sb, 1000)?.ok_or("B got no frame as a message after the notice")?;
            ensure!(g == f, "B's frame after the notice differs");
            // The ring's pages go (as a client's bank would take them): the server is unharmed.
            ring_done(own);
            sa.send(&ipv4_frame(mac, A_IP, B_IP, 80, 3)).ctx("A's SEND after the ring went")?;
            ensure!(sb.info().is_ok() && admin.stats().is_ok(), "the server does not answer after the ring went");
            ensure!(wait_frame(sb, 1000)?.is_some(), "B got no frame after its ring went");
            // A new ring for B works.
            new_ring_works(sa, sb, m, mac, own2, share)
        })();
        drop_caps(cx, &s);
        r
    })
}

/// After B's ring went: a new ring of B's (at `own`, shared through `share`,
/// whose old share is deleted first) carries A's frame.
fn new_ring_works(sa: Stack, sb: Stack, m: Dsm, mac: [u8; 6], own: u64, share: u64) -> TestResult {
    let _ = SELF_ASPACE.delete_cap(share);
    let r = ring_for(sb, m, own, share, false)?.unwrap();
    let f = ipv4_frame(mac, A_IP, B_IP, 500, 4);
    sa.send(&f).ctx("A's SEND to B's new ring")?;
    let g = ring_recv(sb, &r, 1000)?.ok_or("nothing in B's new ring")?;
    ensure!(g == f, "B's frame in its new ring differs");
    ring_done(own);
    Ok(())
}

/// NET0008: a ring whose pages go while the server has it attached, with
/// no notice (the stack destroyed its dataspace: what revoking its share
/// or destroying a sub-bank that paid for it also does): the server's next
/// touch of the ring faults, its guard (the fault handler, guard.rs)
/// covers the page and the server lets go of the ring; it keeps serving,
/// the stack's frames come as messages, and a new ring works.  (Without
/// the guard the server stops FAULTED: the timed SEND below times out.)
pub fn net_ring_lost(cx: &mut Cx) -> TestResult {
    with_net_process(cx, "NET0008", |cx, admin, m, net| {
        let s = cx.slots::<5>()?;
        let r = (|| {
            let [a, b, own, share, own2] = s;
            admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
            admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
            let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
            let r = ring_for(sb, m, own, share, false)?.unwrap();
            let mac = mac_bytes(sa.info().ctx("INFO")?.0);
            sa.send(&ipv4_frame(mac, A_IP, B_IP, 100, 1)).ctx("A's SEND")?;
            ensure!(r.rx_waiting() == 1, "B's ring got {} frames, want 1", r.rx_waiting());
            let (from0, to0, _) = admin.stats().ctx("STATS")?;
            // B's pages go behind the server's back.
            ring_done(own);
            // A frame for B: the server writes into the ring that is gone.
            let f = ipv4_frame(mac, A_IP, B_IP, 300, 2);
            keep_rt::ipc_buffer().set_string(&f);
            let sent = keep_abi::ipc(a, Tag::new(keep_net::SEND).with_string().with_mode(keep_abi::tag::MODE_CALL), [0; 4], 5000);
            let st = net.status().ctx("STATUS of the server")?;
            ensure!(st.state != keep_abi::state::FAULTED, "the server faulted at {:#x} (address {:#x})", st.rip, st.addr);
            ensure!(sent.err == 0 && sent.words[0] == keep_net::OK, "A's SEND to B's lost ring: err {} status {}", sent.err, sent.words[0]);
            // The server let go of B's ring: B has none, and frames come as messages.
            ensure!(sb.ring_counters() == Err(keep_net::Error::Status(BAD_REQUEST)), "B still has a ring: {:?}", sb.ring_counters());
            let f = ipv4_frame(mac, A_IP, B_IP, 200, 3);
            sa.send(&f).ctx("A's SEND after the ring was let go of")?;
            ensure!(wait_frame(sb, 1000)?.as_deref() == Some(&f[..]), "B got no frame as a message after its ring went");
            let (from1, to1, _) = admin.stats().ctx("STATS")?;
            ensure!(from1 == from0 && to1 == to0, "frames went to or came from the NIC: {:?}", (from1 - from0, to1 - to0));
            // A new ring for B works, and so does A.
            new_ring_works(sa, sb, m, mac, own2, share)
        })();
        drop_caps(cx, &s);
        r
    })
}

/// Where NET0010 maps A's small rings.
const SMALL_RING_VA: u64 = 0x0000_5f10_0000_0000;
/// A's small ring: the control page and 4 pages of buffers, 8 frames of
/// MAX_FRAME (as many as the NIC takes at once).  Few pages, so that the
/// revocation reaches the pins soon after the KICK.
const SMALL_RING_PAGES: u64 = 5;
const IN_FLIGHT_FRAMES: u32 = 8;
/// Tries at making the revocation come while A's frames wait for the NIC.
const REVOKE_TRIES: usize = 3;
/// How long the NIC's fault may take to be reported once the share was
/// revoked.
const FAULT_PATIENCE_MS: u64 = 1000;

/// NET0010: the NIC reset and set up again while stacks use it, and a
/// stack that takes its ring's pages away while frames of it wait for the
/// NIC (docs/devices.md, "When the device stops").  First the server
/// resets the NIC twice on demand (`RESET_NIC`) with frames of A's ring
/// and B's on their way; after each, B (messages) and A (its ring, the
/// NIC reading the frame in place) get echo replies from the gateway, so
/// receive buffers, the transmit queue and the MSI-X interrupt work
/// again.  Then A puts 8 long frames for the NIC in a small ring, KICKs
/// and at once revokes the share, up to three times until the NIC meets
/// a page whose pin went (with an IOMMU a DMA fault; QEMU's NIC does not
/// stop at it, so the server, which resets only a NIC that says it
/// needs a reset, goes on without one).  QEMU's
/// NIC mostly reads the frames first (a race the test reports and does
/// not count as a failure), and without an IOMMU the server's guard sees
/// the pages go before the mediator could see the pins go.  Either way B,
/// and A through a new ring, are served after.
pub fn net_revoke_in_flight(cx: &mut Cx) -> TestResult {
    with_net_process(cx, "NET0010", |cx, admin, m, net| {
        let s = cx.slots::<6>()?;
        let r = crate::drivers::remapping(cx).and_then(|iommu| revoke_in_flight(admin, m, net, iommu, s));
        drop_caps(cx, &s);
        r
    })
}

/// 1,000 bytes of echo data for `seed`.
fn echo_data(seed: u8) -> Vec<u8> {
    (0..1000u32).map(|i| (i * 7 % 251) as u8 ^ seed).collect()
}

/// Waits (up to 8 frames from `recv`) for the gateway's echo reply to `ip`
/// carrying `data`; `who` names the stack in the error.
fn echo_back(who: &str, data: &[u8], mut recv: impl FnMut() -> Result<Option<Vec<u8>>, String>) -> TestResult {
    for _ in 0..8 {
        let Some(f) = recv()? else { break };
        if echo_reply(&f) == Some((GATEWAY, data)) {
            return Ok(());
        }
    }
    Err(format!("{who} got no echo reply from the gateway: the NIC does not serve it"))
}

/// B's long echo request (by SEND) and A's (through ring `r`, read by the
/// NIC in place), with `seed`; then each waits for its reply.
fn both_echo(sa: Stack, r: &Ring, sb: Stack, mac: [u8; 6], gw: [u8; 6], seed: u8, when: &str) -> TestResult {
    let (da, db) = (echo_data(seed), echo_data(seed ^ 0x80));
    sb.send(&icmp(8, mac, gw, B_IP, GATEWAY, &db)).ctx("B's echo request")?;
    ring_send(r, &icmp(8, mac, gw, A_IP, GATEWAY, &da))?;
    sa.kick().ctx("A's KICK")?;
    echo_back(&format!("B {when}"), &db, || wait_frame(sb, 3000))?;
    echo_back(&format!("A {when}"), &da, || ring_recv(sa, r, 3000))
}

/// One try: A's ring of SMALL_RING_PAGES (into `own`, shared into
/// `share`) with IN_FLIGHT_FRAMES frames for the NIC, KICKed, the share
/// revoked at once.  Whether the NIC met a page whose pin went (a DMA
/// fault or a refused frame was counted).
fn revoke_try(admin: Admin, sa: Stack, m: Dsm, mac: [u8; 6], iommu: bool, own: u64, share: u64) -> Result<bool, String> {
    let _ = SELF_ASPACE.delete_cap(share);
    m.create(SMALL_RING_PAGES, own).map_err(|e| format!("CREATE: {e}"))?;
    let ds = Dataspace(Sender(own));
    let r = (|| {
        ds.map(slot::SELF_ASPACE, SMALL_RING_VA, 0, SMALL_RING_PAGES, rights::READ | rights::WRITE).map_err(|e| format!("MAP: {e}"))?;
        let handle = ds.share(rights::READ | rights::WRITE, share).map_err(|e| format!("SHARE: {e}"))?;
        let pages = sa.attach(share).ctx("ATTACH")?;
        ensure!(pages == SMALL_RING_PAGES, "ATTACH answered {pages} pages");
        let c = Control(SMALL_RING_VA);
        // The last frames the server puts on the NIC lie in the page whose
        // pin goes first (after the control page's).
        for k in 0..IN_FLIGHT_FRAMES {
            let page = 1 + (IN_FLIGHT_FRAMES - 1 - k) as u64 / 2;
            let off = page * ring::PAGE + (k % 2) as u64 * ring::BUF_SIZE;
            let f = ipv4_frame(mac, A_IP, GATEWAY, MAX_FRAME, k as u8);
            // SAFETY: the buffer lies in the dataspace, mapped at SMALL_RING_VA.
            unsafe { core::slice::from_raw_parts_mut((SMALL_RING_VA + off) as *mut u8, f.len()) }.copy_from_slice(&f);
            c.set_entry(TX_SUBMIT, k, desc(off, f.len() as u64, 0));
        }
        let (_, faults0, refused0) = admin.device_stats().ctx("DEVICE_STATS")?;
        c.set_prod(TX_SUBMIT, IN_FLIGHT_FRAMES);
        let kicked = sa.kick();
        let revoked = ds.revoke(handle);
        kicked.ctx("KICK")?;
        revoked.map_err(|e| format!("REVOKE: {e}"))?;
        let start = TIMER.now_ms().ctx("NOW")?;
        // Without an IOMMU a refusal comes during the KICK: no waiting.
        let patience = if iommu { FAULT_PATIENCE_MS } else { 0 };
        loop {
            let (_, faults, refused) = admin.device_stats().ctx("DEVICE_STATS")?;
            if faults + refused > faults0 + refused0 {
                return Ok(true);
            }
            if TIMER.now_ms().unwrap_or(u64::MAX) >= start + patience {
                return Ok(false);
            }
            let _ = TIMER.sleep(10);
        }
    })();
    let _ = ds.destroy();
    r
}

fn revoke_in_flight(admin: Admin, m: Dsm, net: Process, iommu: bool, [a, b, own, share, own2, share2]: [u64; 6]) -> TestResult {
    admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
    admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
    let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
    let mac = mac_bytes(sa.info().ctx("INFO")?.0);
    sb.send(&arp_request(mac, B_IP, GATEWAY)).ctx("B's ARP request")?;
    let gw = loop {
        let f = wait_frame(sb, 3000)?.ok_or("B got no ARP reply from the gateway")?;
        if let Some((gw, GATEWAY, B_IP)) = arp_reply(&f) {
            break gw;
        }
    };
    // The administrator's requests through a stack's capability: refused,
    // and nothing reset.
    let (before, _, _) = admin.device_stats().ctx("DEVICE_STATS")?;
    for label in [keep_net::RESET_NIC, keep_net::DEVICE_STATS] {
        let w = Sender(a).call(Tag::new(label), [0; 4]).words[0];
        ensure!(w == keep_net::BAD_REQUEST, "a stack's request {label} answered {w}, want BAD_REQUEST");
    }
    // Resets on demand, with frames on their way.
    let (resets0, _, refused_start) = admin.device_stats().ctx("DEVICE_STATS")?;
    ensure!(resets0 == before, "a stack's RESET_NIC reset the NIC");
    let r = ring_for(sa, m, own2, share2, false)?.unwrap();
    let forced = (|| {
        for k in 0..2u8 {
            sb.send(&icmp(8, mac, gw, B_IP, GATEWAY, &echo_data(0x40 | k))).ctx("B's echo request")?;
            ring_send(&r, &icmp(8, mac, gw, A_IP, GATEWAY, &echo_data(0x50 | k)))?;
            sa.kick().ctx("A's KICK")?;
            let n = admin.reset_nic().ctx("RESET_NIC")?;
            ensure!(n == resets0 + k as u64 + 1, "RESET_NIC {k}: the server counts {n} resets, {resets0} before");
            both_echo(sa, &r, sb, mac, gw, 2 * k, &format!("after reset {k}"))?;
        }
        Ok(())
    })();
    ring_done(own2);
    forced?;
    // A's pins go under its frames.
    let mut met = false;
    let tries = if iommu { REVOKE_TRIES } else { 1 };
    for _ in 0..tries {
        met = revoke_try(admin, sa, m, mac, iommu, own, share)?;
        if met {
            break;
        }
    }
    let (resets1, faults, refused) = admin.device_stats().ctx("DEVICE_STATS")?;
    let st = net.status().ctx("STATUS of the server")?;
    ensure!(st.state != keep_abi::state::FAULTED, "the server faulted at {:#x} (address {:#x})", st.rip, st.addr);
    // Without an IOMMU a refused frame leaves its descriptors taken: the
    // server resets the NIC.  With one, QEMU's NIC does not stop at a fault
    // (and the server resets only a NIC that says it stopped): the stacks
    // are served again below either way.
    ensure!(refused == refused_start || resets1 > resets0 + 2, "the mediator refused {refused} frames and the server did not reset the NIC");
    if met {
        println!("ktest: NET0010: the NIC met a revoked page: {faults} DMA faults, {refused} frames refused, {} resets after", resets1 - resets0 - 2);
    } else if iommu {
        println!("ktest: NET0010: in {tries} tries the NIC had always read A's frames before their pins went (a race): no fault met");
    } else {
        println!("ktest: NET0010: no IOMMU: the server saw A's pages go before submitting more; the mediator refused nothing");
    }
    // B, and A through a new ring, are served.
    let _ = SELF_ASPACE.delete_cap(share2);
    let r = ring_for(sa, m, own2, share2, false)?.unwrap();
    let after = both_echo(sa, &r, sb, mac, gw, 9, "after the revocation");
    ring_done(own2);
    after
}

/// NET0011: NOTIFY: the server signals a stack's notification once for
/// frames put in for it (from another stack; frames already waiting at
/// NOTIFY are signalled at once), not for RECVs, not for other stacks;
/// refused notifications change nothing; NOTIFY of none stops it; a
/// destroyed notification is dropped and the server goes on.
pub fn net_notify(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0011", |cx, admin, _| {
        let [a, b, n, w, r] = cx.slots::<5>()?;
        let res = notify(admin, a, b, n, w, r);
        let _ = keep_abi::ACCOUNT.destroy(n);
        drop_caps(cx, &[a, b, n, w, r]);
        res
    })
}

fn notify(admin: Admin, a: u64, b: u64, n: u64, w: u64, r: u64) -> TestResult {
    use keep_abi::{ACCOUNT, Notification};
    admin.add_stack(A_IP, a).ctx("ADD_STACK A")?;
    admin.add_stack(B_IP, b).ctx("ADD_STACK B")?;
    let (sa, sb) = (Stack(Sender(a)), Stack(Sender(b)));
    let m = mac_bytes(sa.info().ctx("INFO")?.0);
    ACCOUNT.create_notification(n).ctx("CREATE_NOTIFICATION")?;
    SELF_ASPACE.copy_cap(n, w, rights::WRITE).ctx("COPY WRITE")?;
    SELF_ASPACE.copy_cap(n, r, rights::READ).ctx("COPY READ")?;
    let nt = Notification(n);
    for (cap, bits, flags, want, what) in [
        (r, 4, 0, DENIED, "a notification without WRITE"),
        (a, 4, 0, DENIED, "a SENDER"),
        (w, 0, 0, BAD_REQUEST, "no bits"),
        (w, 4, 2, BAD_REQUEST, "an unknown flag"),
    ] {
        let st = status(sb.notify(Some(cap), bits, flags));
        ensure!(st == want, "NOTIFY with {what}: status {st}, want {want}");
    }
    sa.send(&icmp(0, m, m, A_IP, B_IP, b"before")).ctx("A to B")?;
    ensure!(nt.poll().ctx("POLL")? == 0, "a refused NOTIFY signalled");
    // A frame already waiting: signalled at once.
    sb.notify(Some(w), 4, 0).ctx("NOTIFY")?;
    ensure!(nt.poll().ctx("POLL")? == 4, "the waiting frame was not signalled");
    ensure!(wait_frame(sb, 1)?.is_some(), "B's frame is gone");
    ensure!(nt.poll().ctx("POLL")? == 0, "RECV signalled");
    for i in 0..3u8 {
        sa.send(&icmp(0, m, m, A_IP, B_IP, &[b'B', i])).ctx("A to B")?;
    }
    ensure!(nt.poll().ctx("POLL")? == 4, "frames for B were not signalled");
    for i in 0..3u8 {
        ensure!(wait_frame(sb, 1)?.is_some(), "B's frame {i} is missing");
    }
    ensure!(nt.poll().ctx("POLL")? == 0, "frames B was told of were signalled again");
    sb.send(&icmp(0, m, m, B_IP, A_IP, b"to A")).ctx("B to A")?;
    ensure!(nt.poll().ctx("POLL")? == 0, "a frame for A signalled B's notification");
    ensure!(wait_frame(sa, 1)?.is_some(), "A's frame is missing");
    // Replaced by another notification's bits, then none.
    sb.notify(Some(w), 0x30, keep_net::WAIT_TX).ctx("NOTIFY again")?;
    sa.send(&icmp(0, m, m, A_IP, B_IP, b"x")).ctx("A to B")?;
    ensure!(nt.poll().ctx("POLL")? == 0x30, "the second NOTIFY's bits");
    sb.notify(None, 0, 0).ctx("NOTIFY of none")?;
    sa.send(&icmp(0, m, m, A_IP, B_IP, b"y")).ctx("A to B")?;
    ensure!(nt.poll().ctx("POLL")? == 0, "signalled after NOTIFY of none");
    // Destroyed under the server: dropped, frames still come.
    sb.notify(Some(w), 1, 0).ctx("NOTIFY")?;
    let _ = wait_frame(sb, 1)?;
    let _ = wait_frame(sb, 1)?;
    let _ = nt.poll();
    ACCOUNT.destroy(n).ctx("DESTROY")?;
    sa.send(&icmp(0, m, m, A_IP, B_IP, b"z")).ctx("A to B after the notification went")?;
    ensure!(wait_frame(sb, 1)?.is_some(), "B's frame after its notification went");
    ensure!(sb.info().is_ok(), "the server stopped serving");
    Ok(())
}

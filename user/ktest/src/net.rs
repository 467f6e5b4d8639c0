//! The network server (user/drivers/net) and its stacks (docs/devices.md,
//! "The network"): the protocol and every refusal, demultiplexing by
//! address, the NIC's path to QEMU's user network, and two smoltcp stacks
//! in processes of their own answering ARP and ICMP echo.  ktest itself
//! registers as raw stacks and builds the frames.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{SELF_ASPACE, Sender, TIMER, Tag, rights, slot};
use keep_loader::{Child, Grant, Loader, Spec};
use keep_net::{
    Admin, BAD_REQUEST, DENIED, QUEUE_FRAMES, ETHERTYPE_ARP, ETHERTYPE_IPV4, IN_USE, MAX_FRAME, NET_SLOT, NOT_REGISTERED, Stack,
    ipv4, mac_bytes,
};
use keep_pci::PCI_SLOT;

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

/// Starts the PCI server and the network server; runs `body` with the
/// administrator's capability; stops both.  Without an IOMMU the server
/// drives the NIC through the PCI server's mediator.
fn with_net(cx: &mut Cx, _id: &str, body: impl FnOnce(&mut Cx, Admin) -> TestResult) -> TestResult {
    let pci = start_pci(cx)?;
    let r = (|| {
        let net = start_with(
            cx, "net", 0, 0,
            &[grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::MEMORY), grant(slot::TIMER),
              Grant { src: pci.cap, dest: PCI_SLOT, rights: 0 }],
        )?;
        let r = body(cx, Admin(Sender(net.cap)));
        let stopped = stop(cx, net, |s| Admin(s).quit().ctx("net QUIT"));
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

fn drop_caps(cx: &mut Cx, caps: &[u64]) {
    for &c in caps {
        let _ = SELF_ASPACE.delete_cap(c);
    }
    cx.drop_slots(caps);
}

/// NET0001: the protocol and its refusals.
pub fn net_protocol(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0001", |cx, admin| {
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
    with_net(cx, "NET0002", |cx, admin| {
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

/// NET0003: two smoltcp stacks (user/drivers/netstack) in processes of
/// their own answer ARP and ICMP echo, each for its own address only.
pub fn net_stacks(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0003", |cx, admin| {
        let [s1, s2, x] = cx.slots::<3>()?;
        let r = (|| {
            admin.add_stack(S1_IP, s1).ctx("ADD_STACK 1")?;
            admin.add_stack(S2_IP, s2).ctx("ADD_STACK 2")?;
            admin.add_stack(A_IP, x).ctx("ADD_STACK X")?;
            let mut procs: Vec<Child> = Vec::new();
            let r = (|| {
                for (cap, ip) in [(s1, S1_IP), (s2, S2_IP)] {
                    let base = [grant(slot::CONSOLE), grant(slot::ACCOUNT), grant(slot::TIMER)];
                    let p = start_with(cx, "netstack", ip, 3, &[base[0], base[1], base[2], Grant { src: cap, dest: NET_SLOT, rights: 0 }])?;
                    drop_caps(cx, &[p.cap]);
                    procs.push(p.child);
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

/// NET0004: `WAIT` sleeps until a frame comes, and the NIC's MSI-X
/// interrupt is what brings it: with nothing on its way a WAIT ends at
/// its time-out with 0 frames; after A's ARP request for the gateway goes
/// out, A waits without calling the server again, and the reply, taken
/// off the NIC when its receive interrupt reached the server, ends the
/// WAIT; RECV then gives the gateway's ARP reply.  A WAIT with a frame
/// already waiting returns at once.
pub fn net_wait(cx: &mut Cx) -> TestResult {
    with_net(cx, "NET0004", |cx, admin| {
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

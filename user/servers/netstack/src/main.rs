//! A network stack in a process of its own: `smoltcp` over the network
//! server's protocol (docs/network.md, "The network").  Its services: bit
//! 0 the TCP echo service on port 7, bit 1 the status service on port 8,
//! which answers each connection with one line of counters and closes it;
//! bit 2 a ping of the gateway at start (ICMP echo, again every 2 s until
//! it is answered; the status line says how it went); bits 4-6 the
//! benchmarks of `make bench` (bench.rs), after which the stack exits (0:
//! all measured).  ARP and answering ICMP echo are smoltcp's own.
//!
//! Started from the system description (the name service in slot 0xd),
//! arg0 is its services; it looks the network server up as `net`, which
//! registered it with the address the description grants it (`net=`), and
//! learns the address from `INFO`.  When the server goes (killed,
//! crashed: a call fails with `NO_REPLY` or `STALE`) the stack looks it
//! up again, waiting while init restarts it, and goes on with the same
//! sockets: TCP retransmits what was lost meanwhile.  Started by hand
//! (ktest, the benchmarks), arg0 is its address and arg1 its services,
//! and its capability to the server is at NET_SLOT.
//!
//! Frames come and go through a ring in a dataspace of the stack's own
//! (keep_net::ring; made by the dataspace manager, in DS_SLOT or looked up
//! as `dataspace`), attached to the server with `ATTACH` and again after
//! the server was restarted.  smoltcp reads received frames where the
//! server put them and writes frames to send into the ring's transmit
//! buffers, which the NIC reads in place.  The stack calls the server
//! only to say that frames wait in an empty transmit queue (`KICK`) and,
//! when a few polls in a row found nothing, to sleep in `WAIT` (woken by
//! the next frame for it, which the NIC's interrupt brings) bounded by
//! smoltcp's next timer.

#![no_std]
#![no_main]

extern crate alloc;

mod bench;
mod checksum;

use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt::Write;

use keep_abi::{SELF_ASPACE, Sender, TIMER, rights, slot};
use keep_dataspace::{DS_SLOT, Dataspace, Manager, Owned};
use keep_net::ring::phy::{RingRx, RingTx};
use keep_net::ring::{self, Ring};
use keep_net::{ETHERTYPE_ARP, Error, Ip, MAX_FRAME, NET_SLOT, Stack, WAIT_TX, dest_ip, ethertype, mac_bytes};
use keep_rt::println;
use keep_system::names;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, TxToken};
use smoltcp::phy::{Checksum, ChecksumCapabilities};
use smoltcp::socket::{icmp, tcp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, Icmpv4Packet, Icmpv4Repr, IpAddress, IpCidr, Ipv4Address};

keep_rt::entry!(main);

pub const ECHO_PORT: u16 = 7;
pub const STATUS_PORT: u16 = 8;
const ECHO_SOCKETS: usize = 2;
const ECHO_BUFFER: usize = 32 * 1024;
/// Segments a TCP peer may have in flight to this stack (smoltcp's
/// `max_burst_size`): the NIC's receive buffers (net's nic.rs, `QUEUE`).
const RX_BURST: usize = 16;
/// Empty polls before the stack starts sleeping between polls.
const BUSY_POLLS: u32 = 4;
/// The stack's dataspace (the ring) and the share the server gets.
const OWN: u64 = 0x20;
const SHARED: u64 = 0x21;
/// The sub-bank that pays for a described stack's ring (keep_dataspace::Owned).
const RING_BANK: u64 = 0x22;
/// Where the ring is mapped.
const RING_VA: u64 = 0x0000_3000_0000_0000;

#[derive(Default)]
struct Counters {
    frames_in: u64,
    /// Frames the server handed this stack that were for another address:
    /// the demultiplexing test expects none.
    foreign: u64,
    errors: u64,
    /// TCP segments dropped for a wrong checksum (checksum.rs).
    bad_checksums: u64,
    connections: u64,
    echoed: u64,
    /// ARP frames in and out, IPv4 ICMP frames in and out.
    arp_in: u64,
    icmp_in: u64,
    /// Times the network server was found again after it went.
    reconnects: u64,
}

/// Counts what a frame is (ARP, ICMP) for the status line.
fn kind(frame: &[u8]) -> (bool, bool) {
    let arp = ethertype(frame) == Some(ETHERTYPE_ARP);
    let icmp = ethertype(frame) == Some(keep_net::ETHERTYPE_IPV4) && frame.len() > 23 && frame[23] == 1;
    (arp, icmp)
}

/// Frames sent, and of them ARP and ICMP (counted in the transmit token,
/// which borrows the ring beside them).
#[derive(Default)]
struct TxCounts {
    frames: Cell<u64>,
    arp: Cell<u64>,
    icmp: Cell<u64>,
}

/// smoltcp's view of the network server: the ring in the stack's
/// dataspace (keep_net::ring), frames lent in place both ways.
struct NetDevice {
    server: Stack,
    ip: u64,
    ring: Ring,
    c: Counters,
    tx: TxCounts,
    /// A call failed as calls to a server that is gone do: look it up again.
    lost: bool,
    /// A described stack's ring and the sub-bank that pays for it.
    owned: Option<Owned>,
}

impl NetDevice {
    fn failed(&mut self, what: &str, e: Error) {
        self.c.errors += 1;
        if matches!(e, Error::Call(_)) {
            if !self.lost {
                println!("netstack {}: {what}: {e}", Ip(self.ip));
            }
            self.lost = true;
        } else {
            println!("netstack {}: {what}: {e}", Ip(self.ip));
        }
    }

    /// Tells the server of frames submitted to an empty queue.
    fn kick(&mut self) {
        if self.ring.take_kick()
            && let Err(e) = self.server.kick()
        {
            self.failed("KICK", e);
        }
    }

    /// The ring from its start, attached to the (new) server.  A
    /// described stack whose share is refused as no dataspace (the
    /// dataspace manager was restarted since the ring was made) gives
    /// the old ring's frames back and makes a new one from the new manager
    /// (docs/dataspaces.md, "When the manager is restarted").
    fn attach(&mut self) -> Result<(), Error> {
        self.ring.reset();
        match self.server.attach(SHARED) {
            Err(e) if e.share_gone() && self.owned.is_some() => {
                println!("netstack {}: the dataspace manager was restarted; a new ring", Ip(self.ip));
                if let Some(o) = self.owned.take() {
                    o.destroy();
                }
                let _ = SELF_ASPACE.delete_cap(SHARED);
                match make_ring(true) {
                    Ok((ring, owned)) => {
                        self.ring = ring;
                        self.owned = owned;
                    }
                    Err(why) => {
                        println!("netstack {}: the ring: {why}", Ip(self.ip));
                        return Err(Error::Status(keep_net::NOT_DATASPACE));
                    }
                }
                self.ring.reset();
                self.server.attach(SHARED).map(drop)
            }
            r => r.map(drop),
        }
    }
}

struct Tx<'a>(RingTx<'a>, &'a TxCounts);

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let counts = self.1;
        self.0.consume(len, |b| {
            let r = f(b);
            checksum::tx_fill(b);
            counts.frames.set(counts.frames.get() + 1);
            let (arp, icmp) = kind(b);
            counts.arp.set(counts.arp.get() + arp as u64);
            counts.icmp.set(counts.icmp.get() + icmp as u64);
            r
        })
    }
}

impl Device for NetDevice {
    type RxToken<'a> = RingRx<'a> where Self: 'a;
    type TxToken<'a> = Tx<'a> where Self: 'a;

    fn receive(&mut self, _: Instant) -> Option<(RingRx<'_>, Tx<'_>)> {
        let (rx, tx) = loop {
            let (rx, tx) = ring::phy::receive(&self.ring)?;
            self.c.frames_in += 1;
            if checksum::rx_ok(self.ring.buffer(rx.offset, rx.len)) {
                break (rx, tx);
            }
            // Dropped (its buffer offered again as rx goes).
            self.c.bad_checksums += 1;
        };
        let frame = self.ring.buffer(rx.offset, rx.len);
        let (arp, icmp) = kind(frame);
        self.c.arp_in += arp as u64;
        self.c.icmp_in += icmp as u64;
        if dest_ip(frame) != Some(self.ip) {
            self.c.foreign += 1;
        }
        Some((rx, Tx(tx, &self.tx)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        ring::phy::transmit(&self.ring).map(|t| Tx(t, &self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        // smoltcp caps the TCP window it advertises at this many segments.
        // One would make every sender stop and wait for an
        // ACK after each segment: a wake, a poll and an ACK per 1460 bytes.
        // The NIC holds 16 received frames (net's nic.rs) and the ring 32,
        // so 16 segments in flight fit.
        caps.max_burst_size = Some(RX_BURST);
        // TCP checksums are verified and filled in by checksum.rs.
        caps.checksum.tcp = Checksum::None;
        caps
    }
}

/// The stack's dataspace for its ring: made by the dataspace manager (in
/// DS_SLOT: looked up as `dataspace` when started from the description,
/// then paid by a sub-bank of its own so that it can be given back after a
/// restart of the manager, and the CREATE retried once if the manager
/// went), mapped at RING_VA, shared read-write (SHARED) for the server's
/// ATTACH.
fn make_ring(described: bool) -> Result<(Ring, Option<Owned>), alloc::string::String> {
    let owned = if described {
        if !keep_dataspace::refresh(DS_SLOT) && !keep_dataspace::find_by_name(DS_SLOT) {
            return Err(alloc::string::String::from("no dataspace manager by name"));
        }
        let o = Manager(Sender(DS_SLOT))
            .create_owned(ring::RING_PAGES, keep_dataspace::BANK_SLOT, RING_BANK, OWN, keep_dataspace::find_by_name)
            .map_err(|e| alloc::format!("CREATE: {e}"))?;
        Some(o)
    } else {
        Manager(Sender(DS_SLOT)).create(ring::RING_PAGES, keep_dataspace::BANK_SLOT, OWN).map_err(|e| alloc::format!("CREATE: {e}"))?;
        None
    };
    let own = Dataspace(Sender(OWN));
    let made = own
        .map(slot::SELF_ASPACE, RING_VA, 0, ring::RING_PAGES, rights::READ | rights::WRITE)
        .map_err(|e| alloc::format!("MAP: {e}"))
        .and_then(|_| own.share(rights::READ | rights::WRITE, SHARED).map_err(|e| alloc::format!("SHARE: {e}")));
    if let (Err(_), Some(o)) = (&made, owned) {
        o.destroy(); // nothing of it stays
    }
    made.map(|_| (Ring::new(RING_VA), owned))
}

fn now() -> Instant {
    Instant::from_millis(TIMER.now_ms().unwrap_or(0) as i64)
}

fn tcp_socket(size: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(tcp::SocketBuffer::new(vec![0; size]), tcp::SocketBuffer::new(vec![0; size]))
}

/// Moves what an echo connection received into its send buffer, as much
/// as fits; closes it once the peer has closed and everything went back.
fn echo(s: &mut tcp::Socket, c: &mut Counters, scratch: &mut [u8]) -> bool {
    let mut moved = false;
    while s.can_recv() && s.can_send() {
        let room = (s.send_capacity() - s.send_queue()).min(scratch.len());
        let n = s.recv_slice(&mut scratch[..room]).unwrap_or(0);
        if n == 0 {
            break;
        }
        let sent = s.send_slice(&scratch[..n]).unwrap_or(0);
        if sent != n {
            c.errors += 1;
        }
        c.echoed += n as u64;
        moved = true;
    }
    if s.state() == tcp::State::CloseWait && s.send_queue() == 0 {
        s.close();
    }
    moved
}

/// Looks the network server up as `net` (into NET_SLOT) and asks its
/// address and MAC: (MAC, address).  Waits up to about a minute for a
/// server being restarted (init's backoff doubles with each restart).
fn connect_by_name() -> Result<(u64, u64), alloc::string::String> {
    for _ in 0..12 {
        let _ = SELF_ASPACE.delete_cap(NET_SLOT);
        match names::lookup_patiently("net", NET_SLOT, keep_rt::ipc_buffer()) {
            Ok(_) => match Stack(Sender(NET_SLOT)).info() {
                Ok((mac, ip, _)) => return Ok((mac, ip)),
                // It went again before answering: look again.
                Err(Error::Call(_)) => {}
                Err(e) => return Err(alloc::format!("INFO: {e}")),
            },
            Err(names::status::NOT_RUNNING) => {}
            Err(e) => return Err(alloc::format!("no network server by name ({})", names::status::name(e))),
        }
    }
    Err(alloc::string::String::from("the network server did not come back"))
}

/// The gateway ping's state: the request's sequence number and when it
/// went, and the round trip once the reply came (ms).
struct Ping {
    handle: SocketHandle,
    gateway: Ipv4Address,
    sent_at: Option<u64>,
    replied_ms: Option<u64>,
}

const PING_IDENT: u16 = 0x4b50;

impl Ping {
    fn step(&mut self, sockets: &mut SocketSet) -> bool {
        let s = sockets.get_mut::<icmp::Socket>(self.handle);
        let caps = ChecksumCapabilities::default();
        if self.replied_ms.is_some() {
            return false;
        }
        // (Again every 2 s until a reply: the first may wait for ARP.)
        let now = TIMER.now_ms().unwrap_or(0);
        if self.sent_at.is_none_or(|t| now >= t + 2000) && s.can_send() {
            let data = *b"keep ping";
            let repr = Icmpv4Repr::EchoRequest { ident: PING_IDENT, seq_no: 1, data: &data };
            if let Ok(buf) = s.send(repr.buffer_len(), IpAddress::Ipv4(self.gateway)) {
                repr.emit(&mut Icmpv4Packet::new_unchecked(buf), &caps);
                self.sent_at = Some(now);
                return true;
            }
        }
        while s.can_recv() {
            let Ok((data, _)) = s.recv() else { break };
            let Ok(p) = Icmpv4Packet::new_checked(data) else { continue };
            if let Ok(Icmpv4Repr::EchoReply { ident: PING_IDENT, data: b"keep ping", .. }) = Icmpv4Repr::parse(&p, &caps) {
                self.replied_ms = Some(now - self.sent_at.unwrap_or(now));
                return true;
            }
        }
        false
    }

    fn describe(&self) -> alloc::string::String {
        match self.replied_ms {
            Some(ms) => alloc::format!("ping {}: replied in {ms} ms", self.gateway),
            None => alloc::format!("ping {}: no reply yet", self.gateway),
        }
    }
}

fn main(arg0: u64, arg1: u64) -> i32 {
    let described = names::present(names::NAMES_SLOT);
    let (mac, ip, services) = if described {
        match connect_by_name() {
            Ok((mac, ip)) => (mac, ip, arg0),
            Err(why) => {
                println!("netstack: {why}");
                return 1;
            }
        }
    } else {
        match Stack(Sender(NET_SLOT)).info() {
            Ok((mac, registered, _)) if registered == arg0 => (mac, arg0, arg1),
            Ok((_, registered, _)) => {
                println!("netstack {}: the server registered this stack as {}", Ip(arg0), Ip(registered));
                return 1;
            }
            Err(e) => {
                println!("netstack {}: INFO: {e}", Ip(arg0));
                return 1;
            }
        }
    };
    let server = Stack(Sender(NET_SLOT));
    let (ring, owned) = match make_ring(described) {
        Ok(r) => r,
        Err(why) => {
            println!("netstack {}: the ring: {why}", Ip(ip));
            return 1;
        }
    };
    let mut dev = NetDevice { server, ip, ring, c: Counters::default(), tx: TxCounts::default(), lost: false, owned };
    if let Err(e) = dev.attach() {
        println!("netstack {}: ATTACH: {e}", Ip(ip));
        return 1;
    }
    let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac_bytes(mac))));
    config.random_seed = ip ^ TIMER.now().map_or(0, |(ms, ticks)| ms << 20 ^ ticks);
    let mut iface = Interface::new(config, &mut dev, now());
    let b = (ip as u32).to_be_bytes();
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(IpAddress::v4(b[0], b[1], b[2], b[3]), 24));
    });
    // QEMU's user network: the gateway is .2 of the guest's /24.
    let _ = iface.routes_mut().add_default_ipv4_route(Ipv4Address::new(b[0], b[1], b[2], 2));
    let mut sockets = SocketSet::new(vec![]);
    let echo_handles: Vec<SocketHandle> = if services & 1 != 0 {
        (0..ECHO_SOCKETS).map(|_| sockets.add(tcp_socket(ECHO_BUFFER))).collect()
    } else {
        Vec::new()
    };
    let status = (services & 2 != 0).then(|| sockets.add(tcp_socket(1024)));
    // The gateway's ping: ICMP (and ARP) through the network server both ways.
    let mut ping = (services & 4 != 0).then(|| {
        let meta = || vec![icmp::PacketMetadata::EMPTY; 4];
        let mut sock = icmp::Socket::new(icmp::PacketBuffer::new(meta(), vec![0; 256]), icmp::PacketBuffer::new(meta(), vec![0; 256]));
        let _ = sock.bind(icmp::Endpoint::Ident(PING_IDENT));
        Ping { handle: sockets.add(sock), gateway: Ipv4Address::new(b[0], b[1], b[2], 2), sent_at: None, replied_ms: None }
    });
    let mut bench = bench::Bench::new(services, &mut sockets);
    let mut scratch = vec![0u8; if echo_handles.is_empty() { 0 } else { ECHO_BUFFER }];
    let mut idle = 0u32;
    loop {
        if dev.lost && described {
            match connect_by_name() {
                Ok((_, again)) if again == ip => {
                    dev.c.reconnects += 1;
                    dev.lost = false;
                    // Frames in the ring are lost with the old server (TCP sends them again).
                    if let Err(e) = dev.attach() {
                        dev.failed("ATTACH", e);
                        continue;
                    }
                    println!("netstack {}: the network server is back; registered again", Ip(ip));
                }
                Ok((_, other)) => {
                    println!("netstack {}: the new network server registered this stack as {}", Ip(ip), Ip(other));
                    return 1;
                }
                Err(why) => {
                    println!("netstack {}: {why}", Ip(ip));
                    return 1;
                }
            }
        }
        let t = now();
        let before = (dev.c.frames_in, dev.tx.frames.get());
        iface.poll(t, &mut dev, &mut sockets);
        let mut moved = false;
        for &h in &echo_handles {
            let s = sockets.get_mut::<tcp::Socket>(h);
            if !s.is_open() {
                let _ = s.listen(ECHO_PORT);
            }
            if echo(s, &mut dev.c, &mut scratch) {
                moved = true;
            }
        }
        if let Some(p) = ping.as_mut() {
            moved |= p.step(&mut sockets);
        }
        if let Some(h) = status {
            let s = sockets.get_mut::<tcp::Socket>(h);
            if s.state() == tcp::State::TimeWait {
                // This side closed first: its line went and was acknowledged.
                // Waiting out TIME-WAIT would refuse the next connection.
                s.abort();
            } else if !s.is_open() {
                let _ = s.listen(STATUS_PORT);
            } else if s.may_send() && s.send_queue() == 0 && s.state() == tcp::State::Established {
                dev.c.connections += 1;
                let (delivered, sent, dropped) = dev.server.counters().unwrap_or((0, 0, 0));
                let mut line = alloc::string::String::new();
                let c = &dev.c;
                let _ = writeln!(
                    line,
                    "netstack {}: frames in {} out {} foreign {} errors {} bad checksums {}; arp in {} out {}; icmp in {} out {}; {}; echoed {} bytes; status connections {}; server found again {} times; server: delivered {} sent {} dropped {}",
                    Ip(ip), c.frames_in, dev.tx.frames.get(), c.foreign, c.errors, c.bad_checksums, c.arp_in, dev.tx.arp.get(), c.icmp_in, dev.tx.icmp.get(),
                    ping.as_ref().map_or(alloc::string::String::from("no ping"), |p| p.describe()),
                    c.echoed, c.connections, c.reconnects, delivered, sent, dropped
                );
                let _ = s.send_slice(line.as_bytes());
                s.close();
                moved = true;
            }
        }
        if let Some(b) = bench.as_mut() {
            moved |= b.step(&mut sockets);
            if b.done() {
                return b.failed as i32;
            }
        }
        // Frames this round submitted (answers of the sockets just served
        // go with the next poll).
        dev.kick();
        if moved || (dev.c.frames_in, dev.tx.frames.get()) != before {
            idle = 0;
        } else {
            idle += 1;
            if idle > BUSY_POLLS {
                // Sleep until a frame comes or smoltcp has a timer due.
                let ms = iface.poll_delay(now(), &sockets).map_or(1000, |d| d.total_millis()).clamp(1, 1000);
                let flags = if dev.ring.can_send() { 0 } else { WAIT_TX };
                if let Err(e) = dev.server.wait_ring(ms, flags) {
                    dev.failed("WAIT", e);
                    let _ = TIMER.sleep(1);
                }
                idle = 0;
            }
        }
    }
}

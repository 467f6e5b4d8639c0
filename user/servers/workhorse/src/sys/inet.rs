//! AF_INET sockets, TCP and UDP, on the workhorse's own TCP/IP stack: the
//! `smoltcp` crate (as Keep's network stacks use it) with two interfaces,
//! loopback at 127.0.0.1 and, when the system description grants the
//! workhorse an address of the network server (`uses=net net=A.B.C.D`),
//! a virtual NIC of that server, as its other stacks have
//! (docs/workhorse.md, "Sockets").  In DROPS the Linux server runs its
//! own stack on a virtual NIC too.
//!
//! A Linux socket is a `Sock` in the stack's table, named by the id its
//! descriptor's object (`InetEnd`) holds; its smoltcp sockets live in the
//! interface's socket set.  smoltcp's listening socket takes one
//! connection, so a listening Linux socket keeps a few of them listening
//! and moves each that got a connection to its accept queue.  The server
//! never blocks: a call that must wait answers WOULD_BLOCK and is tried
//! again (main.rs), and the stack is polled after each call that sends or
//! closes and before waiting calls are retried.
//!
//! The calls are the AF_UNIX ones' (`socket.rs`): each handler here looks
//! at the descriptor and passes anything that is not AF_INET on.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;

use keep_abi::{SELF_ASPACE, Sender, rights, slot};
use keep_dataspace::{Manager, Owned};
use keep_net::ring::phy::{RingRx, RingTx};
use keep_net::ring::{self, Ring};
use keep_net::{MAX_FRAME, Stack as NetServer, mac_bytes};
use keep_system::names::{self, NAMES_SLOT};
use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Loopback, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint, IpListenEndpoint, Ipv4Address,
};

use super::io::{POLLERR, POLLHUP, POLLIN, POLLOUT};
use super::object::{Object, new_obj};
use super::socket::{MSG_DONTWAIT, MSG_NOSIGNAL, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_NONBLOCK, SOL_SOCKET};
use super::*;
use crate::linux::errno::{EADDRNOTAVAIL, EALREADY, ECONNRESET, EDESTADDRREQ, EINPROGRESS, ENETUNREACH, ESOCKTNOSUPPORT};
use crate::linux::poll::POLLRDHUP;
use crate::linux::signal::SIGPIPE;
use crate::linux::socket::{AF_INET, AF_UNSPEC, IPPROTO_IP, IPPROTO_TCP, IPPROTO_UDP, IP_TOS, IP_TTL, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM, SO_ACCEPTCONN, SO_BROADCAST, SO_DOMAIN, SO_ERROR, SO_KEEPALIVE, SO_LINGER, SO_PROTOCOL, SO_RCVBUF, SO_RCVTIMEO, SO_REUSEADDR, SO_REUSEPORT, SO_SNDBUF, SO_SNDTIMEO, SO_TYPE, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_NODELAY};



/// 127.0.0.1, the loopback interface's address.
const LOOPBACK: u32 = 0x7f00_0001;
/// The ports bind(port 0), connect and sendto give an unbound socket
/// (Linux's default ip_local_port_range).
const EPHEMERAL: core::ops::RangeInclusive<u16> = 32768..=60999;
/// A TCP connection's receive and send buffers.
const TCP_BUF: usize = 64 * 1024;
/// A UDP socket's buffers: payload bytes and datagrams each way.
const UDP_BUF: usize = 64 * 1024;
const UDP_PACKETS: usize = 64;
/// The largest UDP payload over IPv4.
const UDP_MAX: usize = 65507;
/// smoltcp sockets a listening socket keeps listening at once (each takes
/// one connection; a connection that finds none is refused).
const MAX_LISTENERS: usize = 4;
/// How often the network server's interface is polled while it has
/// sockets if the server could not be asked to signal (wake.rs).
const NIC_POLL_MS: u64 = 10;
/// Times the interfaces are polled in a row while something changes.
const POLL_ROUNDS: usize = 64;

/// One smoltcp socket: its interface (an index in `Stack::nets`) and handle.
#[derive(Clone, Copy, PartialEq)]
struct Sk {
    net: usize,
    h: SocketHandle,
}

enum Tcp {
    Fresh,
    Listening { backlog: usize, listeners: Vec<Sk>, queue: VecDeque<Sk> },
    Connecting(Sk),
    Connected(Sk),
}

struct Sock {
    tcp: bool,
    /// The address and port bound (port 0: none yet).
    local: (u32, u16),
    /// It holds its port (bind, or a port chosen for it); an accepted
    /// socket shares its listener's.
    bound: bool,
    peer: Option<(u32, u16)>,
    state: Tcp,
    /// UDP: a bound socket's smoltcp socket on each interface its address
    /// covers.
    udp: Vec<Sk>,
    /// SO_ERROR: what a connect that did not wait found.
    error: i64,
    /// A connect has not said how it ended yet (a blocking one waits; a
    /// non-blocking one's next call says).
    connect_waits: bool,
    shut_rd: bool,
    shut_wr: bool,
    /// The peer's reset was reported (ECONNRESET once, then end of file).
    reset_seen: bool,
    /// The peer's FIN came (a reset after it is EPIPE, not ECONNRESET).
    peer_fin: bool,
    reuse: bool,
    keepalive: bool,
    broadcast: bool,
    nodelay: bool,
    rcvbuf: i32,
    sndbuf: i32,
    /// Counts receives and sends (edge-triggered epoll).
    calls: u64,
}

impl Sock {
    fn new(tcp: bool) -> Sock {
        Sock {
            tcp,
            local: (0, 0),
            bound: false,
            peer: None,
            state: Tcp::Fresh,
            udp: Vec::new(),
            error: 0,
            connect_waits: false,
            shut_rd: false,
            shut_wr: false,
            reset_seen: false,
            peer_fin: false,
            reuse: false,
            keepalive: false,
            broadcast: false,
            nodelay: false,
            rcvbuf: TCP_BUF as i32,
            sndbuf: TCP_BUF as i32,
            calls: 0,
        }
    }
}

/// An interface: smoltcp's, its device and its sockets, and its address.
struct Net {
    iface: Interface,
    dev: Port,
    set: SocketSet<'static>,
    ip: u32,
}

/// The external interface's device: a client of the network server,
/// its frames in a ring in a dataspace of the workhorse's (keep_net::ring;
/// smoltcp reads and writes them in place, docs/network.md, "Frame rings").
struct Nic {
    server: NetServer,
    /// The slot of its sender (looked up again after the server went).
    slot: u64,
    ring: Ring,
    /// The ring's dataspace and the sub-bank that pays for it.
    owned: Owned,
    /// The share of the ring's dataspace the server gets at ATTACH.
    share: u64,
    /// A call failed (the server was restarted): look it up again.
    lost: bool,
    /// The server signals the workhorse's notification (wake.rs, NET) when
    /// frames come: the ring needs no polling.
    notified: bool,
}

/// Where the ring is mapped in the server's own space.
const RING_VA: u64 = 0x0000_2f00_0000_0000;

/// The ring's dataspace from the dataspace manager (`dataspace` by name),
/// paid by a sub-bank of its own (keep_dataspace::Owned: given back whole
/// after a restart of the manager; the CREATE retried once if the manager
/// went), mapped at RING_VA: (the ring and its dataspace, its share for
/// ATTACH at `share`).
fn make_ring(share: u64) -> Option<(Ring, Owned)> {
    let e = crate::env::env();
    let (dsm, sub, own) = (e.slot().ok()?, e.slot().ok()?, e.slot().ok()?);
    let owned = names::lookup_at(NAMES_SLOT, "dataspace", dsm, keep_rt::ipc_buffer())
        .ok()
        .and_then(|_| Manager(Sender(dsm)).create_owned(ring::RING_PAGES, keep_dataspace::BANK_SLOT, sub, own, keep_dataspace::find_by_name).ok());
    crate::env::env().free_slot(dsm);
    let Some(owned) = owned else {
        crate::env::env().free_slot(sub);
        crate::env::env().free_slot(own);
        return None;
    };
    let made = owned.ds.map(slot::SELF_ASPACE, RING_VA, 0, ring::RING_PAGES, rights::READ | rights::WRITE).is_ok()
        && owned.ds.share(rights::READ | rights::WRITE, share).is_ok();
    if !made {
        owned.destroy();
        crate::env::env().free_slot(sub);
        crate::env::env().free_slot(own);
        return None;
    }
    Some((Ring::new(RING_VA), owned))
}

impl Nic {
    /// The network server by name and the address it registered for the
    /// workhorse, the ring attached: (device, MAC, address); None when the
    /// description gives the workhorse none (or the server, or the
    /// dataspace manager, does not run).
    fn open() -> Option<(Nic, u64, u32)> {
        if !names::present(NAMES_SLOT) {
            return None;
        }
        let slot = crate::env::env().slot().ok()?;
        let found = names::lookup_at(NAMES_SLOT, "net", slot, keep_rt::ipc_buffer())
            .ok()
            .and_then(|_| NetServer(Sender(slot)).info().ok());
        let Some((mac, ip, _)) = found else {
            crate::env::env().free_slot(slot);
            return None;
        };
        let share = crate::env::env().slot().ok()?;
        let Some((ring, owned)) = make_ring(share) else {
            keep_rt::println!("workhorse: no dataspace for the network ring: no external interface");
            crate::env::env().free_slot(slot);
            crate::env::env().free_slot(share);
            return None;
        };
        let mut nic = Nic { server: NetServer(Sender(slot)), slot, ring, owned, share, lost: false, notified: false };
        if let Err(e) = nic.server.attach(share) {
            keep_rt::println!("workhorse: the network server's ATTACH: {e}");
            return None;
        }
        nic.notified = nic.ask_notify();
        Some((nic, mac, ip as u32))
    }

    /// After a failed call: the server by name again (init restarts it),
    /// the ring attached to it from its start.
    fn find_again(&mut self) {
        let _ = SELF_ASPACE.delete_cap(self.slot);
        if names::lookup_at(NAMES_SLOT, "net", self.slot, keep_rt::ipc_buffer()).is_ok() {
            self.ring.reset();
            self.lost = self.server.info().is_err() || !self.attach_again();
            self.notified = !self.lost && self.ask_notify();
        }
    }

    /// Has the server signal the workhorse's notification when frames
    /// come for it or transmit buffers go back; false: it is polled.
    fn ask_notify(&self) -> bool {
        let Ok(n) = crate::env::env().slot() else { return false };
        let ok = crate::wake::give(n).is_ok() && self.server.notify(Some(n), crate::wake::NET, keep_net::WAIT_TX).is_ok();
        crate::env::env().free_slot(n);
        ok
    }

    /// ATTACH of the ring's share to the new server.  Refused as no
    /// dataspace (the dataspace manager was restarted since the ring was
    /// made), the old ring's frames go back and a new ring from the new
    /// manager takes its place at RING_VA (docs/dataspaces.md, "When the
    /// manager is restarted").
    fn attach_again(&mut self) -> bool {
        match self.server.attach(self.share) {
            Ok(_) => true,
            Err(e) if e.share_gone() => {
                keep_rt::println!("workhorse: the dataspace manager was restarted; a new network ring");
                let (sub, own) = (self.owned.bank.0, self.owned.ds.0.0);
                self.owned.destroy();
                crate::env::env().free_slot(sub);
                crate::env::env().free_slot(own);
                let _ = SELF_ASPACE.delete_cap(self.share);
                let Some((ring, owned)) = make_ring(self.share) else { return false };
                self.ring = ring;
                self.owned = owned;
                self.ring.reset();
                self.server.attach(self.share).is_ok()
            }
            Err(_) => false,
        }
    }

    /// Tells the server of frames submitted to an empty queue.
    fn kick(&mut self) {
        if self.ring.take_kick() && self.server.kick().is_err() {
            self.lost = true;
        }
    }
}

/// An interface's device: smoltcp's loopback, or the network server.
enum Port {
    Lo(Loopback),
    Nic(Nic),
}

enum PortRx<'a> {
    Lo(<Loopback as Device>::RxToken<'a>),
    Nic(RingRx<'a>),
}

enum PortTx<'a> {
    Lo(<Loopback as Device>::TxToken<'a>),
    Nic(RingTx<'a>),
}

impl phy::RxToken for PortRx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        match self {
            PortRx::Lo(t) => t.consume(f),
            PortRx::Nic(t) => t.consume(f),
        }
    }
}

impl phy::TxToken for PortTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        match self {
            PortTx::Lo(t) => t.consume(len, f),
            // A frame lost with the server is sent again by TCP.
            PortTx::Nic(t) => t.consume(len, f),
        }
    }
}

impl Device for Port {
    type RxToken<'a> = PortRx<'a>;
    type TxToken<'a> = PortTx<'a>;

    fn receive(&mut self, t: Instant) -> Option<(PortRx<'_>, PortTx<'_>)> {
        match self {
            Port::Lo(l) => l.receive(t).map(|(r, x)| (PortRx::Lo(r), PortTx::Lo(x))),
            Port::Nic(nic) if nic.lost => None,
            Port::Nic(nic) => ring::phy::receive(&nic.ring).map(|(r, t)| (PortRx::Nic(r), PortTx::Nic(t))),
        }
    }

    fn transmit(&mut self, t: Instant) -> Option<PortTx<'_>> {
        match self {
            Port::Lo(l) => l.transmit(t).map(PortTx::Lo),
            Port::Nic(nic) => ring::phy::transmit(&nic.ring).map(PortTx::Nic),
        }
    }

    fn capabilities(&self) -> DeviceCapabilities {
        match self {
            Port::Lo(l) => l.capabilities(),
            Port::Nic(_) => {
                let mut caps = DeviceCapabilities::default();
                caps.medium = Medium::Ethernet;
                caps.max_transmission_unit = MAX_FRAME;
                caps.max_burst_size = Some(1);
                caps
            }
        }
    }
}

pub struct Stack {
    nets: Vec<Net>,
    socks: BTreeMap<u32, Sock>,
    next_id: u32,
    /// Connections whose descriptors are closed, still sending their last
    /// bytes and FIN (or an RST); removed once closed or in TIME-WAIT.
    closing: Vec<Sk>,
    next_port: u16,
}

static mut STACK: Option<Stack> = None;

fn now() -> Instant {
    Instant::from_millis((super::misc::now_ns() / 1_000_000) as i64)
}

fn ip_addr(ip: u32) -> IpAddress {
    IpAddress::Ipv4(Ipv4Address::from(ip))
}

fn ip_u32(a: IpAddress) -> u32 {
    let IpAddress::Ipv4(v) = a;
    u32::from(v)
}

fn listen_endpoint(ip: u32, port: u16) -> IpListenEndpoint {
    IpListenEndpoint { addr: (ip != 0).then(|| ip_addr(ip)), port }
}

/// The stack, made when the first AF_INET socket is.
#[allow(static_mut_refs)]
fn stack() -> &'static mut Stack {
    // SAFETY: the server is single threaded, and no caller keeps the
    // reference across a call that could come back here.
    unsafe { STACK.get_or_insert_with(Stack::new) }
}

#[allow(static_mut_refs)]
fn stack_if() -> Option<&'static mut Stack> {
    // SAFETY: as stack().
    unsafe { STACK.as_mut() }
}

impl Stack {
    fn new() -> Stack {
        let seed = super::misc::now_ns() | 1;
        let mut dev = Port::Lo(Loopback::new(Medium::Ip));
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut dev, now());
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(ip_addr(LOOPBACK), 8));
        });
        let mut nets = vec![Net { iface, dev, set: SocketSet::new(vec![]), ip: LOOPBACK }];
        // The external interface: its address /24, the gateway .2 of it
        // (QEMU's user network), as the network server's other stacks.
        if let Some((nic, mac, ip)) = Nic::open() {
            let mut dev = Port::Nic(nic);
            let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac_bytes(mac))));
            config.random_seed = seed ^ ip as u64;
            let mut iface = Interface::new(config, &mut dev, now());
            iface.update_ip_addrs(|a| {
                let _ = a.push(IpCidr::new(ip_addr(ip), 24));
            });
            let _ = iface.routes_mut().add_default_ipv4_route(Ipv4Address::from(ip & !0xff | 2));
            nets.push(Net { iface, dev, set: SocketSet::new(vec![]), ip });
        }
        Stack { nets, socks: BTreeMap::new(), next_id: 1, closing: Vec::new(), next_port: *EPHEMERAL.start() }
    }

    fn tcp(&mut self, sk: Sk) -> &mut tcp::Socket<'static> {
        self.nets[sk.net].set.get_mut::<tcp::Socket>(sk.h)
    }

    fn udp(&mut self, sk: Sk) -> &mut udp::Socket<'static> {
        self.nets[sk.net].set.get_mut::<udp::Socket>(sk.h)
    }

    fn sock(&mut self, id: u32) -> &mut Sock {
        self.socks.get_mut(&id).expect("an open socket's id")
    }

    /// The interface that reaches `ip` (ENETUNREACH: none does).
    fn route(&self, ip: u32) -> Result<usize, i64> {
        match ip {
            LOOPBACK => Ok(0),
            _ if ip >> 24 == 127 || self.nets.len() < 2 => Err(ENETUNREACH),
            _ => Ok(1),
        }
    }

    /// The interfaces a local address covers (EADDRNOTAVAIL: not ours).
    fn covers(&self, ip: u32) -> Result<Vec<usize>, i64> {
        match ip {
            0 => Ok((0..self.nets.len()).collect()),
            _ => self.nets.iter().position(|n| n.ip == ip).map(|i| vec![i]).ok_or(EADDRNOTAVAIL),
        }
    }

    /// The address a socket sends from to reach `ip`.
    fn source(&self, ip: u32) -> u32 {
        self.route(ip).map_or(0, |n| self.nets[n].ip)
    }

    fn port_taken(&mut self, tcp: bool, ip: u32, port: u16, chosen: bool) -> bool {
        let bound = self.socks.values().any(|s| {
            s.tcp == tcp && s.bound && s.local.1 == port && (ip == 0 || s.local.0 == 0 || s.local.0 == ip)
        });
        // A port chosen by the stack also avoids connections still closing
        // from it (the same four numbers would meet their segments).
        let closing = chosen
            && tcp
            && self.closing.clone().into_iter().any(|sk| self.tcp(sk).local_endpoint().is_some_and(|e| e.port == port));
        bound || closing
    }

    fn ephemeral(&mut self, tcp: bool, ip: u32) -> Result<u16, i64> {
        let span = (EPHEMERAL.end() - EPHEMERAL.start()) as u32 + 1;
        for _ in 0..span {
            let p = self.next_port;
            self.next_port = if p >= *EPHEMERAL.end() { *EPHEMERAL.start() } else { p + 1 };
            if !self.port_taken(tcp, ip, p, true) {
                return Ok(p);
            }
        }
        Err(EADDRINUSE)
    }

    fn new_tcp(&mut self, net: usize, nodelay: bool) -> Sk {
        let mut t = tcp::Socket::new(tcp::SocketBuffer::new(vec![0; TCP_BUF]), tcp::SocketBuffer::new(vec![0; TCP_BUF]));
        // Loopback segments are acknowledged as they come: no timer needed.
        t.set_ack_delay(None);
        t.set_nagle_enabled(!nodelay);
        Sk { net, h: self.nets[net].set.add(t) }
    }

    /// Binds socket `id` to (ip, port); port 0 takes an ephemeral one.
    fn bind(&mut self, id: u32, ip: u32, port: u16) -> Result<(), i64> {
        let tcp = self.sock(id).tcp;
        let nets = self.covers(ip)?;
        let port = match port {
            0 => self.ephemeral(tcp, ip)?,
            p if self.port_taken(tcp, ip, p, false) => return Err(EADDRINUSE),
            p => p,
        };
        let mut udp = Vec::new();
        if !tcp {
            for net in nets {
                let mut u = udp::Socket::new(
                    udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; UDP_PACKETS], vec![0; UDP_BUF]),
                    udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; UDP_PACKETS], vec![0; UDP_BUF]),
                );
                u.bind(listen_endpoint(ip, port)).map_err(|_| EINVAL)?;
                udp.push(Sk { net, h: self.nets[net].set.add(u) });
            }
        }
        let s = self.sock(id);
        s.local = (ip, port);
        s.bound = true;
        s.udp = udp;
        Ok(())
    }

    /// Polls the interfaces until nothing changes (loopback segments go
    /// round within it), then moves sockets on.
    pub fn poll(&mut self) {
        for n in &mut self.nets {
            if let Port::Nic(nic) = &mut n.dev
                && nic.lost
                && n.set.iter().next().is_some()
            {
                nic.find_again();
            }
        }
        for _ in 0..POLL_ROUNDS {
            let t = now();
            let mut changed = false;
            for n in &mut self.nets {
                // The ring is looked at only while the interface has
                // sockets (its frames wait there meanwhile; with every
                // receive buffer full the server drops them, and TCP
                // sends them again).
                if matches!(n.dev, Port::Nic(_)) && n.set.iter().next().is_none() {
                    continue;
                }
                changed |= n.iface.poll(t, &mut n.dev, &mut n.set) == PollResult::SocketStateChanged;
                if let Port::Nic(nic) = &mut n.dev {
                    nic.kick();
                }
            }
            // Sockets service() aborted have their RST still to send.
            if !self.service() && !changed {
                break;
            }
        }
    }

    /// Listeners that took a connection go to their accept queue and are
    /// replaced; connects that ended are settled; closed connections go.
    /// True when it aborted one (its RST goes with the next poll).
    fn service(&mut self) -> bool {
        let mut aborted = false;
        let Stack { nets, socks, closing, .. } = self;
        for sock in socks.values_mut() {
            let (ip, port, nodelay) = (sock.local.0, sock.local.1, sock.nodelay);
            match &mut sock.state {
                Tcp::Listening { backlog, listeners, queue } => {
                    listeners.retain(|sk| {
                        let st = nets[sk.net].set.get::<tcp::Socket>(sk.h).state();
                        if st == tcp::State::Listen {
                            return true;
                        }
                        if st == tcp::State::Closed {
                            nets[sk.net].set.remove(sk.h);
                        } else {
                            queue.push_back(*sk);
                        }
                        false
                    });
                    queue.retain(|sk| {
                        let gone = nets[sk.net].set.get::<tcp::Socket>(sk.h).state() == tcp::State::Closed;
                        if gone {
                            nets[sk.net].set.remove(sk.h);
                        }
                        !gone
                    });
                    // Keep listening while the queue has room.
                    let want = (*backlog).min(MAX_LISTENERS);
                    for (net, n) in nets.iter_mut().enumerate() {
                        if ip != 0 && ip != n.ip {
                            continue;
                        }
                        let mut have = listeners.iter().filter(|sk| sk.net == net).count();
                        while have < want && queue.len() + have < *backlog + 1 {
                            let mut t = tcp::Socket::new(
                                tcp::SocketBuffer::new(vec![0; TCP_BUF]),
                                tcp::SocketBuffer::new(vec![0; TCP_BUF]),
                            );
                            t.set_ack_delay(None);
                            t.set_nagle_enabled(!nodelay);
                            if t.listen(listen_endpoint(ip, port)).is_err() {
                                break;
                            }
                            listeners.push(Sk { net, h: n.set.add(t) });
                            have += 1;
                        }
                    }
                }
                Tcp::Connecting(sk) => {
                    let sk = *sk;
                    match nets[sk.net].set.get::<tcp::Socket>(sk.h).state() {
                        tcp::State::SynSent | tcp::State::SynReceived => {}
                        tcp::State::Closed => {
                            nets[sk.net].set.remove(sk.h);
                            sock.state = Tcp::Fresh;
                            sock.peer = None;
                            sock.error = ECONNREFUSED;
                        }
                        _ => sock.state = Tcp::Connected(sk),
                    }
                }
                Tcp::Connected(sk) => {
                    let st = nets[sk.net].set.get::<tcp::Socket>(sk.h).state();
                    if matches!(st, tcp::State::CloseWait | tcp::State::LastAck | tcp::State::Closing | tcp::State::TimeWait) {
                        sock.peer_fin = true;
                    }
                }
                _ => {}
            }
        }
        closing.retain(|sk| {
            let t = nets[sk.net].set.get_mut::<tcp::Socket>(sk.h);
            // Closed and its RST sent (that forgets the endpoints), or
            // TIME-WAIT, which is not waited out.
            let done = match t.state() {
                tcp::State::Closed => t.local_endpoint().is_none(),
                tcp::State::TimeWait => true,
                _ => false,
            };
            if done {
                nets[sk.net].set.remove(sk.h);
            } else if t.recv_queue() > 0 {
                // Data for a closed descriptor: Linux answers with a reset.
                t.abort();
                aborted = true;
            }
            !done
        });
        aborted
    }

    /// The descriptor of socket `id` was closed for good.
    fn close(&mut self, id: u32) {
        let Some(sock) = self.socks.remove(&id) else { return };
        match sock.state {
            Tcp::Fresh => {}
            Tcp::Listening { listeners, queue, .. } => {
                for sk in listeners {
                    self.nets[sk.net].set.remove(sk.h);
                }
                // Connections nobody accepted are reset.
                for sk in queue {
                    self.tcp(sk).abort();
                    self.closing.push(sk);
                }
            }
            Tcp::Connecting(sk) => {
                self.tcp(sk).abort();
                self.closing.push(sk);
            }
            Tcp::Connected(sk) => {
                let t = self.tcp(sk);
                // Linux resets a connection closed with data unread.
                if t.recv_queue() > 0 { t.abort() } else { t.close() }
                self.closing.push(sk);
            }
        }
        for sk in sock.udp {
            self.nets[sk.net].set.remove(sk.h);
        }
        self.poll();
    }

    fn ready(&mut self, id: u32) -> u16 {
        let Some(sock) = self.socks.get(&id) else { return POLLNVAL_ };
        let err = if sock.error != 0 { POLLERR } else { 0 };
        let (shut_rd, shut_wr) = (sock.shut_rd, sock.shut_wr);
        if !sock.tcp {
            let mut r = POLLOUT;
            for &sk in &sock.udp.clone() {
                if self.udp(sk).can_recv() {
                    r |= POLLIN;
                }
            }
            return r | err;
        }
        let r = match &sock.state {
            Tcp::Fresh => POLLOUT | POLLHUP,
            Tcp::Listening { queue, .. } => {
                let queue = queue.clone();
                if queue.iter().any(|&sk| self.tcp(sk).state() != tcp::State::SynReceived) { POLLIN } else { 0 }
            }
            Tcp::Connecting(_) => 0,
            Tcp::Connected(sk) => {
                let t = self.tcp(*sk);
                let mut r = 0;
                let eof = !t.may_recv();
                if t.recv_queue() > 0 || eof || shut_rd {
                    r |= POLLIN;
                }
                if eof {
                    r |= POLLRDHUP;
                }
                if shut_wr || !t.may_send() || t.can_send() {
                    r |= POLLOUT;
                }
                let closed = matches!(t.state(), tcp::State::Closed | tcp::State::TimeWait);
                if closed || (eof && shut_wr) {
                    r |= POLLHUP;
                }
                if t.state() == tcp::State::Closed && !shut_wr {
                    r |= POLLERR; // reset by the peer
                }
                r
            }
        };
        r | err
    }

    fn generation(&mut self, id: u32) -> u64 {
        let Some(sock) = self.socks.get(&id) else { return 0 };
        let calls = sock.calls;
        let print = match &sock.state {
            Tcp::Listening { queue, listeners, .. } => (queue.len() as u64) << 8 | listeners.len() as u64,
            Tcp::Connected(sk) | Tcp::Connecting(sk) => {
                let sk = *sk;
                let t = self.tcp(sk);
                (t.recv_queue() as u64) << 24 ^ (t.send_queue() as u64) << 4 ^ t.state() as u64
            }
            Tcp::Fresh => {
                let udp = sock.udp.clone();
                udp.into_iter().map(|sk| self.udp(sk).recv_queue() as u64).sum()
            }
        };
        calls << 40 ^ print
    }
}

const POLLNVAL_: u16 = super::io::POLLNVAL;

/// A socket descriptor's object; its drop is the socket's close.
pub struct InetEnd {
    id: u32,
}

impl Drop for InetEnd {
    fn drop(&mut self) {
        if let Some(st) = stack_if() {
            st.close(self.id);
        }
    }
}

impl Object for InetEnd {
    fn read(&mut self, s: &mut Server, pid: i32, max: usize) -> Result<Vec<u8>, i64> {
        receive(s, pid, self.id, max, 0).map(|(d, ..)| d)
    }
    fn write(&mut self, s: &mut Server, pid: i32, data: &[u8]) -> Result<usize, i64> {
        send(s, pid, self.id, data, 0, None)
    }
    fn ready(&self) -> u16 {
        stack().ready(self.id)
    }
    fn generation(&self) -> u64 {
        stack().generation(self.id)
    }
    fn stat(&self) -> (u32, u64) {
        (0o140777, 0)
    }
    fn name(&self) -> String {
        alloc::format!("socket:[{}]", 100_000 + self.id)
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

/// Polls the stack (main.rs, before waiting calls are tried again).
pub fn poll() {
    if let Some(st) = stack_if()
        && !(st.socks.is_empty() && st.closing.is_empty())
    {
        st.poll();
    }
}

/// The server loop's receive time-out in ms (0: none) given what it would
/// be, shortened to the stack's next timer.  Inlined into the server's
/// loop, so that a system call while no socket is open pays two tests, not
/// a call (20 instructions of getppid's 655).
#[inline(always)]
pub fn timeout(ms: u64) -> u64 {
    match stack_if() {
        Some(st) if !(st.socks.is_empty() && st.closing.is_empty()) => next_timer(st, ms),
        _ => ms,
    }
}

#[inline(never)]
fn next_timer(st: &mut Stack, ms: u64) -> u64 {
    let t = now();
    // Frames from the network server come as a notification (wake.rs);
    // without one, the interface is polled while it has sockets.
    let nic = st.nets.iter().any(|n| matches!(&n.dev, Port::Nic(nic) if !nic.notified) && n.set.iter().next().is_some());
    let next = st
        .nets
        .iter_mut()
        .filter_map(|n| n.iface.poll_delay(t, &n.set))
        .map(|d| d.total_millis().clamp(1, 1000))
        .chain(nic.then_some(NIC_POLL_MS))
        .min();
    match next {
        Some(d) if ms == 0 || d < ms => d,
        _ => ms,
    }
}

fn sigpipe(s: &mut Server, pid: i32, flags: u64) -> i64 {
    if flags & MSG_NOSIGNAL == 0 {
        s.proc(pid).pending |= 1 << (SIGPIPE - 1);
    }
    EPIPE
}

fn would_block(flags: u64) -> i64 {
    if flags & MSG_DONTWAIT != 0 { EAGAIN } else { WOULD_BLOCK }
}

/// Sends `data` on socket `id` (to `to`, for UDP); `flags` has
/// MSG_DONTWAIT for a non-blocking description.
fn send(s: &mut Server, pid: i32, id: u32, data: &[u8], flags: u64, to: Option<(u32, u16)>) -> Result<usize, i64> {
    let st = stack();
    let sock = st.sock(id);
    sock.calls += 1;
    if sock.tcp {
        let sk = match sock.state {
            Tcp::Connected(sk) => sk,
            Tcp::Connecting(_) => return Err(would_block(flags)),
            _ => return Err(sigpipe(s, pid, flags)),
        };
        let (shut_wr, reset_seen, peer_fin) = (sock.shut_wr, sock.reset_seen, sock.peer_fin);
        let t = st.tcp(sk);
        if shut_wr {
            return Err(sigpipe(s, pid, flags));
        }
        if !t.may_send() {
            // Reset: ECONNRESET once, unless the peer had closed (Linux).
            if t.state() == tcp::State::Closed && !reset_seen && !peer_fin {
                st.sock(id).reset_seen = true;
                return Err(ECONNRESET);
            }
            return Err(sigpipe(s, pid, flags));
        }
        if data.is_empty() {
            return Ok(0);
        }
        if !t.can_send() {
            return Err(would_block(flags));
        }
        let n = t.send_slice(data).map_err(|_| EPIPE)?;
        st.poll();
        return Ok(n);
    }
    let (ip, port) = match to.or(sock.peer) {
        Some(d) => d,
        None => return Err(EDESTADDRREQ),
    };
    if sock.shut_wr {
        return Err(sigpipe(s, pid, flags));
    }
    let ip = if ip == 0 { LOOPBACK } else { ip };
    let net = st.route(ip)?;
    if data.len() > UDP_MAX {
        return Err(EMSGSIZE);
    }
    if !st.sock(id).bound {
        st.bind(id, 0, 0)?;
    }
    let Some(sk) = st.sock(id).udp.iter().copied().find(|sk| sk.net == net) else { return Err(ENETUNREACH) };
    let u = st.udp(sk);
    if u.payload_send_capacity() < data.len() {
        return Err(EMSGSIZE);
    }
    match u.send_slice(data, IpEndpoint::new(ip_addr(ip), port)) {
        Ok(()) => {}
        Err(udp::SendError::BufferFull) => return Err(would_block(flags)),
        Err(udp::SendError::Unaddressable) => return Err(EINVAL),
    }
    st.poll();
    Ok(data.len())
}

/// Receives at most `max` bytes: (data, the datagram's whole length, the
/// sender).
fn receive(_s: &mut Server, _pid: i32, id: u32, max: usize, flags: u64) -> Result<(Vec<u8>, usize, (u32, u16)), i64> {
    let st = stack();
    let sock = st.sock(id);
    sock.calls += 1;
    let peek = flags & MSG_PEEK != 0;
    if sock.tcp {
        let sk = match sock.state {
            Tcp::Connected(sk) => sk,
            Tcp::Connecting(_) => return Err(would_block(flags)),
            _ => return Err(ENOTCONN),
        };
        let (peer, shut_rd, shut_wr) = (sock.peer.unwrap_or((0, 0)), sock.shut_rd, sock.shut_wr);
        let reset_seen = sock.reset_seen || sock.peer_fin;
        if shut_rd {
            return Ok((Vec::new(), 0, peer));
        }
        let t = st.tcp(sk);
        if t.recv_queue() > 0 {
            let mut buf = vec![0u8; max.min(t.recv_queue())];
            let n = if peek { t.peek_slice(&mut buf) } else { t.recv_slice(&mut buf) }.unwrap_or(0);
            buf.truncate(n);
            if !peek {
                st.poll(); // the window opened
            }
            return Ok((buf, n, peer));
        }
        if !t.may_recv() {
            if t.state() == tcp::State::Closed && !shut_wr && !reset_seen {
                st.sock(id).reset_seen = true;
                return Err(ECONNRESET);
            }
            return Ok((Vec::new(), 0, peer));
        }
        return Err(would_block(flags));
    }
    let (peer, shut_rd) = (sock.peer, sock.shut_rd);
    if shut_rd {
        return Ok((Vec::new(), 0, (0, 0)));
    }
    for sk in sock.udp.clone() {
        let u = st.udp(sk);
        while u.can_recv() {
            let (data, meta) = u.peek().map_err(|_| EAGAIN)?;
            let from = (ip_u32(meta.endpoint.addr), meta.endpoint.port);
            // A connected socket takes datagrams from its peer only.
            if peer.is_some_and(|p| p != from) {
                let _ = u.recv();
                continue;
            }
            let whole = data.len();
            let out = Vec::from(&data[..whole.min(max)]);
            if !peek {
                let _ = u.recv();
            }
            return Ok((out, whole, from));
        }
    }
    Err(would_block(flags))
}

/// The AF_INET socket of descriptor `fd`, if it is one.
fn inet_id(s: &mut Server, pid: i32, fd: u64) -> Option<(u32, Desc)> {
    let d = super::io::desc(s, pid, fd).ok()?;
    let obj = match &d.borrow().kind {
        Kind::Object(o) => o.clone(),
        _ => return None,
    };
    let id = obj.borrow_mut().as_any().downcast_mut::<InetEnd>().map(|e| e.id)?;
    Some((id, d))
}

fn nonblocking(d: &Desc, flags: u64) -> u64 {
    if d.borrow().flags & O_NONBLOCK != 0 { flags | MSG_DONTWAIT } else { flags }
}

/// A sockaddr_in from the caller: (address, port), host order; the
/// family is returned too (connect takes AF_UNSPEC).
fn read_sin(s: &mut Server, pid: i32, va: u64, len: u64) -> Result<(u16, u32, u16), i64> {
    if len < 2 || len > 128 {
        return Err(EINVAL);
    }
    let b = s.proc(pid).mm.read_vec(va, (len as usize).min(16))?;
    let family = u16::from_le_bytes([b[0], b[1]]);
    if family == AF_UNSPEC {
        return Ok((family, 0, 0));
    }
    if len < 16 {
        return Err(EINVAL);
    }
    if family as u64 != AF_INET {
        return Err(EAFNOSUPPORT);
    }
    let port = u16::from_be_bytes([b[2], b[3]]);
    let ip = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    Ok((family, ip, port))
}

/// Writes (ip, port) as a sockaddr_in at `va` (at most *lenp bytes) and
/// its length at `lenp`.
fn write_sin(s: &mut Server, pid: i32, va: u64, lenp: u64, (ip, port): (u32, u16)) -> Result<(), i64> {
    let p = s.proc(pid);
    let room = p.mm.read_u32(lenp)? as i32;
    if room < 0 {
        return Err(EINVAL);
    }
    let mut b = [0u8; 16];
    b[..2].copy_from_slice(&(AF_INET as u16).to_le_bytes());
    b[2..4].copy_from_slice(&port.to_be_bytes());
    b[4..8].copy_from_slice(&ip.to_be_bytes());
    let n = 16.min(room as usize);
    p.mm.write(va, &b[..n])?;
    p.mm.write_u32(lenp, 16)
}

fn install(s: &mut Server, pid: i32, id: u32, flags: u64) -> Result<i64, i64> {
    let nb = if flags & SOCK_NONBLOCK != 0 { O_NONBLOCK } else { 0 };
    // Should the table be full, the description's drop closes the socket.
    let d = Description::new(Kind::Object(new_obj(InetEnd { id })), O_RDWR | nb);
    s.proc(pid).install(Fd { desc: d, cloexec: flags & SOCK_CLOEXEC != 0 }, 0)
}

fn new_socket(s: &mut Server, pid: i32, ty: u64, proto: u64) -> Result<i64, i64> {
    if ty & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    let tcp = match ((ty & 0xf) as u32, proto) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) => true,
        (SOCK_DGRAM, 0 | IPPROTO_UDP) => false,
        (SOCK_STREAM | SOCK_DGRAM, _) => return Err(EPROTONOSUPPORT),
        (SOCK_RAW, _) => return Err(EPERM), // as for a user without CAP_NET_RAW
        _ => return Err(ESOCKTNOSUPPORT),
    };
    let st = stack();
    let id = st.next_id;
    st.next_id += 1;
    st.socks.insert(id, Sock::new(tcp));
    install(s, pid, id, ty)
}

pub fn socket(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] != AF_INET {
        return super::socket::socket(s, pid, c);
    }
    ret(new_socket(s, pid, c.args[1], c.args[2]))
}

/// The handlers taking a socket descriptor: AF_INET ones here, the rest
/// to socket.rs.
macro_rules! by_fd {
    ($($name:ident => $inet:ident;)*) => {$(
        pub fn $name(s: &mut Server, pid: i32, c: &mut Call) -> Out {
            match inet_id(s, pid, c.args[0]) {
                Some((id, d)) => ret($inet(s, pid, c, id, &d)),
                None => super::socket::$name(s, pid, c),
            }
        }
    )*};
}

by_fd! {
    bind => do_bind;
    listen => do_listen;
    connect => do_connect;
    accept => do_accept;
    accept4 => do_accept4;
    sendto => do_sendto;
    recvfrom => do_recvfrom;
    sendmsg => do_sendmsg;
    recvmsg => do_recvmsg;
    shutdown => do_shutdown;
    getsockname => do_getsockname;
    getpeername => do_getpeername;
    getsockopt => do_getsockopt;
    setsockopt => do_setsockopt;
}

fn do_bind(s: &mut Server, pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    if c.args[2] < 16 {
        return Err(EINVAL);
    }
    let (family, ip, port) = read_sin(s, pid, c.args[1], c.args[2])?;
    if family == AF_UNSPEC {
        return Err(EAFNOSUPPORT);
    }
    let st = stack();
    if st.sock(id).bound || !matches!(st.sock(id).state, Tcp::Fresh) {
        return Err(EINVAL);
    }
    st.bind(id, ip, port)?;
    Ok(0)
}

fn do_listen(_s: &mut Server, _pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let st = stack();
    let sock = st.sock(id);
    if !sock.tcp {
        return Err(EOPNOTSUPP);
    }
    let n = (c.args[1] as i32).clamp(1, 4096) as usize;
    match &mut sock.state {
        Tcp::Fresh => {}
        Tcp::Listening { backlog, .. } => {
            *backlog = n;
            return Ok(0);
        }
        _ => return Err(EINVAL),
    }
    if !sock.bound {
        st.bind(id, 0, 0)?;
    }
    st.sock(id).state = Tcp::Listening { backlog: n, listeners: Vec::new(), queue: VecDeque::new() };
    st.poll();
    Ok(0)
}

fn do_connect(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let nonblock = d.borrow().flags & O_NONBLOCK != 0;
    let st = stack();
    let sock = st.sock(id);
    if sock.tcp {
        match sock.state {
            Tcp::Connected(_) if sock.connect_waits => {
                sock.connect_waits = false;
                return Ok(0);
            }
            Tcp::Connected(_) | Tcp::Listening { .. } => return Err(EISCONN),
            Tcp::Connecting(_) if nonblock => return Err(EALREADY),
            Tcp::Connecting(_) => return Err(WOULD_BLOCK),
            Tcp::Fresh if sock.connect_waits && sock.error != 0 => {
                sock.connect_waits = false;
                return Err(core::mem::take(&mut sock.error));
            }
            Tcp::Fresh => sock.connect_waits = false,
        }
    }
    let (family, ip, port) = read_sin(s, pid, c.args[1], c.args[2])?;
    let st = stack();
    if family == AF_UNSPEC {
        // Dissolves a UDP socket's association.
        if !st.sock(id).tcp {
            st.sock(id).peer = None;
        }
        return Ok(0);
    }
    // Linux takes 0.0.0.0 as this machine.
    let ip = if ip == 0 { LOOPBACK } else { ip };
    let net = st.route(ip)?;
    if !st.sock(id).tcp {
        if !st.sock(id).bound {
            st.bind(id, 0, 0)?;
        }
        st.sock(id).peer = Some((ip, port));
        return Ok(0);
    }
    if port == 0 {
        return Err(ECONNREFUSED);
    }
    if !st.sock(id).bound {
        let lip = st.sock(id).local.0;
        st.bind(id, lip, 0)?;
    }
    let (lip, lport, nodelay) = {
        let k = st.sock(id);
        (k.local.0, k.local.1, k.nodelay)
    };
    let sk = st.new_tcp(net, nodelay);
    let Net { iface, set, .. } = &mut st.nets[net];
    let r = set.get_mut::<tcp::Socket>(sk.h).connect(iface.context(), IpEndpoint::new(ip_addr(ip), port), listen_endpoint(lip, lport));
    if r.is_err() {
        st.nets[net].set.remove(sk.h);
        return Err(ENETUNREACH);
    }
    let k = st.sock(id);
    k.state = Tcp::Connecting(sk);
    k.peer = Some((ip, port));
    k.error = 0;
    st.poll();
    let k = st.sock(id);
    match k.state {
        // As on Linux, a non-blocking connect is in progress as it returns
        // even when the answer is already there (SO_ERROR has it, and the
        // next connect says 0 once it is connected).
        _ if nonblock => {
            k.connect_waits = true;
            Err(EINPROGRESS)
        }
        Tcp::Connected(_) => Ok(0),
        Tcp::Fresh => Err(core::mem::take(&mut k.error)),
        _ => {
            k.connect_waits = true;
            Err(WOULD_BLOCK)
        }
    }
}

fn accept_with(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc, flags: u64) -> Result<i64, i64> {
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    let (va, lenp) = (c.args[1], c.args[2]);
    let nonblock = d.borrow().flags & O_NONBLOCK != 0;
    let st = stack();
    st.poll();
    let sock = st.sock(id);
    if !sock.tcp {
        return Err(EOPNOTSUPP);
    }
    let nodelay = sock.nodelay;
    let Tcp::Listening { queue, .. } = &mut sock.state else { return Err(EINVAL) };
    let mut queue = core::mem::take(queue);
    let pos = queue.iter().position(|&sk| st.tcp(sk).state() != tcp::State::SynReceived);
    let got = pos.and_then(|i| queue.remove(i));
    if let Tcp::Listening { queue: q, .. } = &mut st.sock(id).state {
        *q = queue;
    }
    let Some(sk) = got else { return Err(if nonblock { EAGAIN } else { WOULD_BLOCK }) };
    let t = st.tcp(sk);
    let local = t.local_endpoint().map_or((0, 0), |e| (ip_u32(e.addr), e.port));
    let peer = t.remote_endpoint().map_or((0, 0), |e| (ip_u32(e.addr), e.port));
    let mut new = Sock::new(true);
    new.local = local;
    new.peer = Some(peer);
    new.nodelay = nodelay;
    new.state = Tcp::Connected(sk);
    let nid = st.next_id;
    st.next_id += 1;
    st.socks.insert(nid, new);
    st.poll(); // a listener in its place
    let fd = install(s, pid, nid, flags)?;
    if va != 0 {
        write_sin(s, pid, va, lenp, peer)?;
    }
    Ok(fd)
}

fn do_accept(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    accept_with(s, pid, c, id, d, 0)
}

fn do_accept4(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let flags = s.arg(pid, c, 3);
    accept_with(s, pid, c, id, d, flags)
}

/// A destination address given to sendto or sendmsg (None: none given).
fn dest(s: &mut Server, pid: i32, id: u32, va: u64, len: u64) -> Result<Option<(u32, u16)>, i64> {
    if va == 0 {
        return Ok(None);
    }
    // TCP ignores it (Linux too, without TCP Fast Open).
    if stack().sock(id).tcp {
        return Ok(None);
    }
    match read_sin(s, pid, va, len)? {
        (AF_UNSPEC, ..) => Err(EAFNOSUPPORT),
        (_, ip, port) => Ok(Some((ip, port))),
    }
}

fn do_sendto(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let (buf, len) = (c.args[1], c.args[2]);
    let flags = s.arg(pid, c, 3);
    let (va, alen) = (s.arg(pid, c, 4), s.arg(pid, c, 5));
    let to = dest(s, pid, id, va, alen)?;
    let data = s.proc(pid).mm.read_vec(buf, (len as usize).min(IO_CHUNK.max(UDP_MAX + 1)))?;
    send(s, pid, id, &data, nonblocking(d, flags), to).map(|n| n as i64)
}

fn do_recvfrom(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let (buf, len) = (c.args[1], c.args[2]);
    let flags = s.arg(pid, c, 3);
    let (va, lenp) = (s.arg(pid, c, 4), s.arg(pid, c, 5));
    mem::check_range(buf, len as usize)?;
    let (data, whole, from) = receive(s, pid, id, (len as usize).min(IO_CHUNK), nonblocking(d, flags))?;
    s.proc(pid).mm.write(buf, &data)?;
    if va != 0 {
        write_sin(s, pid, va, lenp, from)?;
    }
    Ok(if flags & MSG_TRUNC != 0 { whole } else { data.len() } as i64)
}

/// struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
fn msghdr(s: &mut Server, pid: i32, va: u64) -> Result<[u64; 7], i64> {
    let b = s.proc(pid).mm.read_vec(va, 56)?;
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    Ok([w(0), w(8) & 0xffff_ffff, w(16), w(24), w(32), w(40), w(48) & 0xffff_ffff])
}

fn do_sendmsg(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let (va, flags) = (c.args[1], c.args[2]);
    let [name, namelen, iov, iovlen, _, controllen, _] = msghdr(s, pid, va)?;
    if controllen != 0 {
        return Err(EINVAL); // no control messages for AF_INET
    }
    let to = dest(s, pid, id, name, namelen)?;
    let limit = IO_CHUNK.max(UDP_MAX + 1);
    let mut data = Vec::new();
    for (base, len) in super::io::iovecs(s, pid, iov, iovlen)? {
        let take = (len as usize).min(limit - data.len());
        data.extend(s.proc(pid).mm.read_vec(base, take)?);
    }
    send(s, pid, id, &data, nonblocking(d, flags), to).map(|n| n as i64)
}

fn do_recvmsg(s: &mut Server, pid: i32, c: &mut Call, id: u32, d: &Desc) -> Result<i64, i64> {
    let (va, flags) = (c.args[1], c.args[2]);
    let [name, _, iov, iovlen, ..] = msghdr(s, pid, va)?;
    let v = super::io::iovecs(s, pid, iov, iovlen)?;
    let total: u64 = v.iter().map(|x| x.1).sum();
    let (data, whole, from) = receive(s, pid, id, (total as usize).min(IO_CHUNK), nonblocking(d, flags))?;
    let mut done = 0;
    for (base, len) in v {
        let n = (len as usize).min(data.len() - done);
        s.proc(pid).mm.write(base, &data[done..done + n])?;
        done += n;
    }
    if name != 0 {
        write_sin(s, pid, name, va + 8, from)?;
    }
    let out_flags = if whole > data.len() { MSG_TRUNC } else { 0 };
    s.proc(pid).mm.write_u64(va + 40, 0)?;
    s.proc(pid).mm.write_u32(va + 48, out_flags as u32)?;
    Ok(if flags & MSG_TRUNC != 0 { whole } else { data.len() } as i64)
}

fn do_shutdown(_s: &mut Server, _pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let how = c.args[1];
    if how > 2 {
        return Err(EINVAL);
    }
    let st = stack();
    let sock = st.sock(id);
    let sk = match sock.state {
        Tcp::Connected(sk) => Some(sk),
        _ if !sock.tcp && sock.peer.is_some() => None,
        _ => return Err(ENOTCONN),
    };
    if how != 1 {
        sock.shut_rd = true;
    }
    if how != 0 {
        sock.shut_wr = true;
        if let Some(sk) = sk {
            st.tcp(sk).close(); // FIN
        }
    }
    st.poll();
    Ok(0)
}

fn do_getsockname(s: &mut Server, pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let st = stack();
    let sock = st.sock(id);
    let (mut ip, port) = sock.local;
    let connected = match sock.state {
        Tcp::Connected(sk) | Tcp::Connecting(sk) => Some(sk),
        _ => None,
    };
    if let Some(p) = sock.peer
        && ip == 0
    {
        ip = st.source(p.0);
    }
    let name = match connected.and_then(|sk| st.tcp(sk).local_endpoint()) {
        Some(e) => (ip_u32(e.addr), e.port),
        None => (ip, port),
    };
    write_sin(s, pid, c.args[1], c.args[2], name)?;
    Ok(0)
}

fn do_getpeername(s: &mut Server, pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let sock = stack().sock(id);
    let peer = match (sock.tcp, &sock.state, sock.peer) {
        (true, Tcp::Connected(_), Some(p)) | (false, _, Some(p)) => p,
        _ => return Err(ENOTCONN),
    };
    write_sin(s, pid, c.args[1], c.args[2], peer)?;
    Ok(0)
}


fn do_getsockopt(s: &mut Server, pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let (level, opt) = (c.args[1], c.args[2]);
    let (val, lenp) = (s.arg(pid, c, 3), s.arg(pid, c, 4));
    let room = s.proc(pid).mm.read_u32(lenp)? as i32;
    if room < 0 {
        return Err(EINVAL);
    }
    let sock = stack().sock(id);
    let int = |v: i64| Vec::from((v as i32).to_le_bytes());
    let v: Vec<u8> = match (level, opt) {
        (SOL_SOCKET, SO_TYPE) => int(if sock.tcp { SOCK_STREAM } else { SOCK_DGRAM } as i64),
        (SOL_SOCKET, SO_ERROR) => int(core::mem::take(&mut sock.error)),
        (SOL_SOCKET, SO_REUSEADDR) => int(sock.reuse as i64),
        (SOL_SOCKET, SO_KEEPALIVE) => int(sock.keepalive as i64),
        (SOL_SOCKET, SO_BROADCAST) => int(sock.broadcast as i64),
        (SOL_SOCKET, SO_SNDBUF) => int(sock.sndbuf as i64),
        (SOL_SOCKET, SO_RCVBUF) => int(sock.rcvbuf as i64),
        (SOL_SOCKET, SO_ACCEPTCONN) => int(matches!(sock.state, Tcp::Listening { .. }) as i64),
        (SOL_SOCKET, SO_DOMAIN) => int(AF_INET as i64),
        (SOL_SOCKET, SO_PROTOCOL) => int(if sock.tcp { IPPROTO_TCP } else { IPPROTO_UDP } as i64),
        (SOL_SOCKET, SO_LINGER) => vec![0; 8],
        (IPPROTO_TCP, TCP_NODELAY) if sock.tcp => int(sock.nodelay as i64),
        (IPPROTO_IP, IP_TOS) => int(0),
        (IPPROTO_IP, IP_TTL) => int(64),
        _ => return Err(ENOPROTOOPT),
    };
    let n = v.len().min(room as usize);
    let p = s.proc(pid);
    p.mm.write(val, &v[..n])?;
    p.mm.write_u32(lenp, n as u32)?;
    Ok(0)
}

fn do_setsockopt(s: &mut Server, pid: i32, c: &mut Call, id: u32, _: &Desc) -> Result<i64, i64> {
    let (level, opt) = (c.args[1], c.args[2]);
    let (val, len) = (s.arg(pid, c, 3), s.arg(pid, c, 4));
    if (len as i32) < 4 {
        return Err(EINVAL);
    }
    let v = s.proc(pid).mm.read_u32(val)? as i32;
    let st = stack();
    let sock = st.sock(id);
    // Linux doubles a buffer size asked for (its bookkeeping).
    let buf = (v.clamp(2304, 1 << 24)) * 2;
    match (level, opt) {
        (SOL_SOCKET, SO_REUSEADDR) => sock.reuse = v != 0,
        (SOL_SOCKET, SO_KEEPALIVE) => sock.keepalive = v != 0,
        (SOL_SOCKET, SO_BROADCAST) => sock.broadcast = v != 0,
        (SOL_SOCKET, SO_SNDBUF) => sock.sndbuf = buf,
        (SOL_SOCKET, SO_RCVBUF) => sock.rcvbuf = buf,
        // Accepted; the stack's own behaviour stays.
        (SOL_SOCKET, SO_REUSEPORT | SO_LINGER | SO_RCVTIMEO | SO_SNDTIMEO) => {}
        (IPPROTO_TCP, TCP_NODELAY) if sock.tcp => {
            sock.nodelay = v != 0;
            if let Tcp::Connected(sk) | Tcp::Connecting(sk) = sock.state {
                st.tcp(sk).set_nagle_enabled(v == 0);
            }
        }
        (IPPROTO_TCP, TCP_KEEPIDLE | TCP_KEEPINTVL | TCP_KEEPCNT) if sock.tcp => {}
        (IPPROTO_IP, IP_TOS | IP_TTL) => {}
        _ => return Err(ENOPROTOOPT),
    }
    Ok(0)
}

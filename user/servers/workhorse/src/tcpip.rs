//! The workhorse's TCP/IP stack: the `smoltcp` crate (as Keep's network
//! stacks use it) with two interfaces, loopback at 127.0.0.1 and, when the
//! system description grants the workhorse an address of the network
//! server (`uses=net net=A.B.C.D`), a virtual NIC of that server (a frame
//! ring in a dataspace).  It keeps the sockets' table (`Sock`, by id),
//! their smoltcp sockets on each interface, the ports, the connections
//! still closing, and answers what a socket is ready for; it knows nothing
//! of Linux's calls, descriptors or processes, which `sys/inet.rs` handles
//! on top of it.  Its errors are Linux's errno values (linux.rs).
//!
//! smoltcp's listening socket takes one connection, so a listening socket
//! keeps a few of them listening and moves each that got a connection to
//! its accept queue.  The stack is polled after each call that sends or
//! closes and before waiting calls are tried again (main.rs).

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;

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

use crate::linux::errno::*;
use crate::linux::poll::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLRDHUP};



/// 127.0.0.1, the loopback interface's address.
pub(crate) const LOOPBACK: u32 = 0x7f00_0001;
/// The ports bind(port 0), connect and sendto give an unbound socket
/// (Linux's default ip_local_port_range).
pub(crate) const EPHEMERAL: core::ops::RangeInclusive<u16> = 32768..=60999;
/// A TCP connection's receive and send buffers.
pub(crate) const TCP_BUF: usize = 64 * 1024;
/// A UDP socket's buffers: payload bytes and datagrams each way.
pub(crate) const UDP_BUF: usize = 64 * 1024;
pub(crate) const UDP_PACKETS: usize = 64;
/// The largest UDP payload over IPv4.
pub(crate) const UDP_MAX: usize = 65507;
/// smoltcp sockets a listening socket keeps listening at once (each takes
/// one connection; a connection that finds none is refused).
pub(crate) const MAX_LISTENERS: usize = 4;
/// How often the network server's interface is polled while it has
/// sockets if the server could not be asked to signal (wake.rs).
pub(crate) const NIC_POLL_MS: u64 = 10;
/// Times the interfaces are polled in a row while something changes.
pub(crate) const POLL_ROUNDS: usize = 64;

/// One smoltcp socket: its interface (an index in `Stack::nets`) and handle.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct Sk {
    pub(crate) net: usize,
    pub(crate) h: SocketHandle,
}

pub(crate) enum Tcp {
    Fresh,
    Listening { backlog: usize, listeners: Vec<Sk>, queue: VecDeque<Sk> },
    Connecting(Sk),
    Connected(Sk),
}

pub(crate) struct Sock {
    pub(crate) tcp: bool,
    /// The address and port bound (port 0: none yet).
    pub(crate) local: (u32, u16),
    /// It holds its port (bind, or a port chosen for it); an accepted
    /// socket shares its listener's.
    pub(crate) bound: bool,
    pub(crate) peer: Option<(u32, u16)>,
    pub(crate) state: Tcp,
    /// UDP: a bound socket's smoltcp socket on each interface its address
    /// covers.
    pub(crate) udp: Vec<Sk>,
    /// SO_ERROR: what a connect that did not wait found.
    pub(crate) error: i64,
    /// A connect has not said how it ended yet (a blocking one waits; a
    /// non-blocking one's next call says).
    pub(crate) connect_waits: bool,
    pub(crate) shut_rd: bool,
    pub(crate) shut_wr: bool,
    /// The peer's reset was reported (ECONNRESET once, then end of file).
    pub(crate) reset_seen: bool,
    /// The peer's FIN came (a reset after it is EPIPE, not ECONNRESET).
    pub(crate) peer_fin: bool,
    pub(crate) reuse: bool,
    pub(crate) keepalive: bool,
    pub(crate) broadcast: bool,
    pub(crate) nodelay: bool,
    pub(crate) rcvbuf: i32,
    pub(crate) sndbuf: i32,
    /// Counts receives and sends (edge-triggered epoll).
    pub(crate) calls: u64,
}

impl Sock {
    pub(crate) fn new(tcp: bool) -> Sock {
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
pub(crate) struct Net {
    pub(crate) iface: Interface,
    pub(crate) dev: Port,
    pub(crate) set: SocketSet<'static>,
    pub(crate) ip: u32,
}

/// The external interface's device: a client of the network server,
/// its frames in a ring in a dataspace of the workhorse's (keep_net::ring;
/// smoltcp reads and writes them in place, docs/network.md, "Frame rings").
pub(crate) struct Nic {
    pub(crate) server: NetServer,
    /// The slot of its sender (looked up again after the server went).
    pub(crate) slot: u64,
    pub(crate) ring: Ring,
    /// The ring's dataspace and the sub-bank that pays for it.
    pub(crate) owned: Owned,
    /// The share of the ring's dataspace the server gets at ATTACH.
    pub(crate) share: u64,
    /// A call failed (the server was restarted): look it up again.
    pub(crate) lost: bool,
    /// The server signals the workhorse's notification (wake.rs, NET) when
    /// frames come: the ring needs no polling.
    pub(crate) notified: bool,
}

/// Where the ring is mapped in the server's own space.
pub(crate) const RING_VA: u64 = 0x0000_2f00_0000_0000;

/// The ring's dataspace from the dataspace manager (`dataspace` by name),
/// paid by a sub-bank of its own (keep_dataspace::Owned: given back whole
/// after a restart of the manager; the CREATE retried once if the manager
/// went), mapped at RING_VA: (the ring and its dataspace, its share for
/// ATTACH at `share`).
pub(crate) fn make_ring(share: u64) -> Option<(Ring, Owned)> {
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
    pub(crate) fn open() -> Option<(Nic, u64, u32)> {
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
    pub(crate) fn find_again(&mut self) {
        let _ = SELF_ASPACE.delete_cap(self.slot);
        if names::lookup_at(NAMES_SLOT, "net", self.slot, keep_rt::ipc_buffer()).is_ok() {
            self.ring.reset();
            self.lost = self.server.info().is_err() || !self.attach_again();
            self.notified = !self.lost && self.ask_notify();
        }
    }

    /// Has the server signal the workhorse's notification when frames
    /// come for it or transmit buffers go back; false: it is polled.
    pub(crate) fn ask_notify(&self) -> bool {
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
    pub(crate) fn attach_again(&mut self) -> bool {
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
    pub(crate) fn kick(&mut self) {
        if self.ring.take_kick() && self.server.kick().is_err() {
            self.lost = true;
        }
    }
}

/// An interface's device: smoltcp's loopback, or the network server.
pub(crate) enum Port {
    Lo(Loopback),
    Nic(Nic),
}

pub(crate) enum PortRx<'a> {
    Lo(<Loopback as Device>::RxToken<'a>),
    Nic(RingRx<'a>),
}

pub(crate) enum PortTx<'a> {
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

pub(crate) static mut STACK: Option<Stack> = None;

pub(crate) fn now() -> Instant {
    Instant::from_millis((crate::sys::now_ns() / 1_000_000) as i64)
}

pub(crate) fn ip_addr(ip: u32) -> IpAddress {
    IpAddress::Ipv4(Ipv4Address::from(ip))
}

pub(crate) fn ip_u32(a: IpAddress) -> u32 {
    let IpAddress::Ipv4(v) = a;
    u32::from(v)
}

pub(crate) fn listen_endpoint(ip: u32, port: u16) -> IpListenEndpoint {
    IpListenEndpoint { addr: (ip != 0).then(|| ip_addr(ip)), port }
}

/// The stack, made when the first AF_INET socket is.
#[allow(static_mut_refs)]
pub(crate) fn stack() -> &'static mut Stack {
    // SAFETY: the server is single threaded, and no caller keeps the
    // reference across a call that could come back here.
    unsafe { STACK.get_or_insert_with(Stack::new) }
}

#[allow(static_mut_refs)]
pub(crate) fn stack_if() -> Option<&'static mut Stack> {
    // SAFETY: as stack().
    unsafe { STACK.as_mut() }
}

impl Stack {
    pub(crate) fn new() -> Stack {
        let seed = crate::sys::now_ns() | 1;
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

    pub(crate) fn tcp(&mut self, sk: Sk) -> &mut tcp::Socket<'static> {
        self.nets[sk.net].set.get_mut::<tcp::Socket>(sk.h)
    }

    pub(crate) fn udp(&mut self, sk: Sk) -> &mut udp::Socket<'static> {
        self.nets[sk.net].set.get_mut::<udp::Socket>(sk.h)
    }

    pub(crate) fn sock(&mut self, id: u32) -> &mut Sock {
        self.socks.get_mut(&id).expect("an open socket's id")
    }

    /// The interface that reaches `ip` (ENETUNREACH: none does).
    pub(crate) fn route(&self, ip: u32) -> Result<usize, i64> {
        match ip {
            LOOPBACK => Ok(0),
            _ if ip >> 24 == 127 || self.nets.len() < 2 => Err(ENETUNREACH),
            _ => Ok(1),
        }
    }

    /// The interfaces a local address covers (EADDRNOTAVAIL: not ours).
    pub(crate) fn covers(&self, ip: u32) -> Result<Vec<usize>, i64> {
        match ip {
            0 => Ok((0..self.nets.len()).collect()),
            _ => self.nets.iter().position(|n| n.ip == ip).map(|i| vec![i]).ok_or(EADDRNOTAVAIL),
        }
    }

    /// The address a socket sends from to reach `ip`.
    pub(crate) fn source(&self, ip: u32) -> u32 {
        self.route(ip).map_or(0, |n| self.nets[n].ip)
    }

    pub(crate) fn port_taken(&mut self, tcp: bool, ip: u32, port: u16, chosen: bool) -> bool {
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

    pub(crate) fn ephemeral(&mut self, tcp: bool, ip: u32) -> Result<u16, i64> {
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

    /// Adds `sock` to the table; its id.
    pub(crate) fn add(&mut self, sock: Sock) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.socks.insert(id, sock);
        id
    }

    /// Starts the connection of the new TCP socket `sk` from `from` to
    /// `to` (ENETUNREACH, and `sk` is gone, when smoltcp refuses it).
    pub(crate) fn connect(&mut self, sk: Sk, to: (u32, u16), from: (u32, u16)) -> Result<(), i64> {
        let Net { iface, set, .. } = &mut self.nets[sk.net];
        let r = set.get_mut::<tcp::Socket>(sk.h).connect(iface.context(), IpEndpoint::new(ip_addr(to.0), to.1), listen_endpoint(from.0, from.1));
        if r.is_err() {
            set.remove(sk.h);
            return Err(ENETUNREACH);
        }
        Ok(())
    }

    pub(crate) fn new_tcp(&mut self, net: usize, nodelay: bool) -> Sk {
        let mut t = tcp::Socket::new(tcp::SocketBuffer::new(vec![0; TCP_BUF]), tcp::SocketBuffer::new(vec![0; TCP_BUF]));
        // Loopback segments are acknowledged as they come: no timer needed.
        t.set_ack_delay(None);
        t.set_nagle_enabled(!nodelay);
        Sk { net, h: self.nets[net].set.add(t) }
    }

    /// Binds socket `id` to (ip, port); port 0 takes an ephemeral one.
    pub(crate) fn bind(&mut self, id: u32, ip: u32, port: u16) -> Result<(), i64> {
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
    pub(crate) fn service(&mut self) -> bool {
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
    pub(crate) fn close(&mut self, id: u32) {
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

    pub(crate) fn ready(&mut self, id: u32) -> u16 {
        let Some(sock) = self.socks.get(&id) else { return POLLNVAL };
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

    pub(crate) fn generation(&mut self, id: u32) -> u64 {
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
pub(crate) fn next_timer(st: &mut Stack, ms: u64) -> u64 {
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

//! A network stack in a process of its own: `smoltcp` over the network
//! server's protocol (docs/devices.md, "The network").  arg0 is its IPv4
//! address (registered with the server by whoever started it), arg1 its
//! services: bit 0 the TCP echo service on port 7, bit 1 the status
//! service on port 8, which answers each connection with one line of
//! counters and closes it; bits 4-6 the benchmarks of `make bench`
//! (bench.rs), after which the stack exits (0: all measured).  ARP and
//! ICMP echo are smoltcp's own.
//!
//! Its capability to the server is at NET_SLOT.  The stack calls `RECV`
//! while frames come; when a few polls in a row found nothing it waits in
//! the server's `WAIT` (woken by the next frame for it, which the NIC's
//! interrupt brings) bounded by smoltcp's next timer.

#![no_std]
#![no_main]

extern crate alloc;

mod bench;

use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

use keep_abi::{Sender, TIMER};
use keep_net::{Ip, MAX_FRAME, NET_SLOT, Stack, dest_ip, mac_bytes};
use keep_rt::println;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};

keep_rt::entry!(main);

pub const ECHO_PORT: u16 = 7;
pub const STATUS_PORT: u16 = 8;
const ECHO_SOCKETS: usize = 2;
const ECHO_BUFFER: usize = 32 * 1024;
/// Empty polls before the stack starts sleeping between polls.
const BUSY_POLLS: u32 = 4;

#[derive(Default)]
struct Counters {
    frames_in: u64,
    frames_out: u64,
    /// Frames the server handed this stack that were for another address:
    /// the demultiplexing test expects none.
    foreign: u64,
    errors: u64,
    connections: u64,
    echoed: u64,
}

/// smoltcp's view of the network server.
struct NetDevice {
    server: Stack,
    ip: u64,
    rx: Vec<u8>,
    c: Counters,
}

struct Rx(Vec<u8>);
struct Tx<'a>(&'a mut NetDevice);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0u8; len];
        let r = f(&mut frame);
        match self.0.server.send(&frame) {
            Ok(()) => self.0.c.frames_out += 1,
            Err(e) => {
                self.0.c.errors += 1;
                println!("netstack {}: SEND: {e}", Ip(self.0.ip));
            }
        }
        r
    }
}

impl Device for NetDevice {
    type RxToken<'a> = Rx where Self: 'a;
    type TxToken<'a> = Tx<'a> where Self: 'a;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let n = match self.server.recv(&mut self.rx) {
            Ok(Some((n, _))) => n,
            Ok(None) => return None,
            Err(e) => {
                self.c.errors += 1;
                println!("netstack {}: RECV: {e}", Ip(self.ip));
                return None;
            }
        };
        let frame = self.rx[..n].to_vec();
        self.c.frames_in += 1;
        if dest_ip(&frame) != Some(self.ip) {
            self.c.foreign += 1;
        }
        Some((Rx(frame), Tx(self)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx(self))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME;
        caps.max_burst_size = Some(1);
        caps
    }
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

fn main(ip: u64, services: u64) -> i32 {
    let server = Stack(Sender(NET_SLOT));
    let mac = match server.info() {
        Ok((mac, registered, _)) if registered == ip => mac,
        Ok((_, registered, _)) => {
            println!("netstack {}: the server registered this stack as {}", Ip(ip), Ip(registered));
            return 1;
        }
        Err(e) => {
            println!("netstack {}: INFO: {e}", Ip(ip));
            return 1;
        }
    };
    let mut dev = NetDevice { server, ip, rx: vec![0; keep_abi::layout::MAX_STRING as usize], c: Counters::default() };
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
    let mut bench = bench::Bench::new(services, &mut sockets);
    let mut scratch = vec![0u8; if echo_handles.is_empty() { 0 } else { ECHO_BUFFER }];
    let mut idle = 0u32;
    loop {
        let t = now();
        let before = (dev.c.frames_in, dev.c.frames_out);
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
                let _ = writeln!(
                    line,
                    "netstack {}: frames in {} out {} foreign {} errors {}; echoed {} bytes; status connections {}; server: delivered {} sent {} dropped {}",
                    Ip(ip), dev.c.frames_in, dev.c.frames_out, dev.c.foreign, dev.c.errors, dev.c.echoed,
                    dev.c.connections, delivered, sent, dropped
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
        if moved || (dev.c.frames_in, dev.c.frames_out) != before {
            idle = 0;
        } else {
            idle += 1;
            if idle > BUSY_POLLS {
                // Sleep until a frame comes or smoltcp has a timer due.
                let ms = iface.poll_delay(now(), &sockets).map_or(1000, |d| d.total_millis()).clamp(1, 1000);
                if dev.server.wait(ms).is_err() {
                    let _ = TIMER.sleep(1);
                }
                idle = 0;
            }
        }
    }
}

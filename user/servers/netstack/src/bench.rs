//! The network benchmarks of `make bench` (docs/performance.md, "I/O
//! paths"): bulk TCP and UDP round trips between this stack and a program
//! on the host (tools/netpeer.py) that reaches it through QEMU's `hostfwd`
//! on port [`PORT`].  Each run is one region between the icount plugin's
//! markers; everything the guest executes in it counts (this stack, the
//! network server, the kernel).
//!
//! The stack leads, the host follows its console lines:
//!
//! | stack prints | host does |
//! |---|---|
//! | `bench-net: peer tcp.recv BYTES` (listening) | connects, waits for `go`, sends BYTES, shuts its side, reads to the end, closes |
//! | `bench-net: peer tcp.send BYTES` (listening) | connects, waits for `go`, reads to the end (BYTES of [`byte`]'s pattern), closes |
//! | `bench-net: go` (connection established, just before the start marker) | |
//! | `bench-net: peer udp.roundtrip N` (bound) | sends N + 1 datagrams of [`DATAGRAM`] bytes, each after the previous one's echo came back |
//!
//! The regions: `net.tcp.recv` from `go` to the moment the host's FIN is
//! seen after all BYTES were read; `net.tcp.send` from `go` to the moment
//! this side's FIN is acknowledged and the host's FIN seen (all BYTES
//! delivered); `net.udp.roundtrip` from the echo of datagram 0 having gone
//! out to the echo of datagram N having gone out.  The Linux guest
//! (tools/linuxbench/linuxio.c) marks the same points.

use alloc::vec;
use alloc::vec::Vec;

use keep_abi::TIMER;
use keep_rt::{icount, println};
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};

/// The guest port of both the TCP and the UDP benchmark.
pub const PORT: u16 = 5001;
/// Bytes of one TCP run.
pub const TCP_BYTES: usize = 4 << 20;
/// Round trips of one UDP run.
pub const TRIPS: usize = 200;
/// Bytes of a UDP datagram.
pub const DATAGRAM: usize = 32;
/// Runs of each benchmark.
pub const RUNS: usize = 3;
/// How long a phase waits for the host before it gives up.
const PEER_MS: u64 = 120_000;
/// TCP buffers each way (smoltcp scales its window above 64 KiB).
const TCP_BUFFER: usize = 64 * 1024;

/// netstack's services bits that choose the benchmarks.
pub const TCP_RECV: u64 = 1 << 4;
pub const TCP_SEND: u64 = 1 << 5;
pub const UDP_ROUNDTRIP: u64 = 1 << 6;

/// The byte at `i` of what `net.tcp.send` sends (the host checks it).
pub fn byte(i: usize) -> u8 {
    (i % 251) as u8
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Recv,
    Send,
    Udp,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Recv => "net.tcp.recv",
            Op::Send => "net.tcp.send",
            Op::Udp => "net.udp.roundtrip",
        }
    }
}

enum St {
    /// The next phase is to be set up.
    Setup,
    /// Waiting for the host (until the deadline, ms).
    Listening(u64),
    /// In the region: TCP bytes moved; UDP the deadline.
    Running(u64),
    /// The region ended; the connection is closing.
    Closing,
}

pub struct Bench {
    phases: Vec<Op>,
    tcp: SocketHandle,
    udp: SocketHandle,
    st: St,
    chunk: Vec<u8>,
    /// Where `net.tcp.recv` reads to (not `chunk`: reading into the
    /// pattern garbled what `net.tcp.send` sent after it).
    sink: Vec<u8>,
    /// UDP: echoes queued (datagram 0 included).
    echoed: usize,
    pub failed: bool,
}

fn now_ms() -> u64 {
    TIMER.now_ms().unwrap_or(0)
}

/// A region that could not be measured: an empty pair of markers keeps
/// the host's pairing of regions and lines.
fn not_measured(name: &str, why: &str) {
    icount::start();
    icount::end();
    println!("bench-io: {name} failed: {why}");
}

impl Bench {
    /// The benchmarks chosen by `services`, with their sockets in `sockets`.
    pub fn new(services: u64, sockets: &mut SocketSet<'static>) -> Option<Bench> {
        let mut phases = Vec::new();
        for (bit, op) in [(TCP_RECV, Op::Recv), (TCP_SEND, Op::Send), (UDP_ROUNDTRIP, Op::Udp)] {
            if services & bit != 0 {
                phases.extend(core::iter::repeat_n(op, RUNS));
            }
        }
        if phases.is_empty() {
            return None;
        }
        phases.reverse(); // popped from the end
        let buf = || tcp::SocketBuffer::new(vec![0; TCP_BUFFER]);
        let mut sock = tcp::Socket::new(buf(), buf());
        sock.set_ack_delay(None);
        let tcp = sockets.add(sock);
        let meta = || vec![udp::PacketMetadata::EMPTY; 4];
        let udp = sockets.add(udp::Socket::new(
            udp::PacketBuffer::new(meta(), vec![0; 4 * DATAGRAM]),
            udp::PacketBuffer::new(meta(), vec![0; 4 * DATAGRAM]),
        ));
        // A whole number of the pattern's periods, so that it wraps seamlessly.
        let chunk: Vec<u8> = (0..251 * 64).map(byte).collect();
        let sink = vec![0; chunk.len()];
        Some(Bench { phases, tcp, udp, st: St::Setup, chunk, sink, echoed: 0, failed: false })
    }

    /// Whether every phase is over.
    pub fn done(&self) -> bool {
        self.phases.is_empty()
    }

    fn next(&mut self) {
        self.phases.pop();
        self.st = St::Setup;
    }

    /// Called after each poll of the interface: moves the benchmark on.
    /// Returns whether it did anything (the stack stays awake then).
    pub fn step(&mut self, sockets: &mut SocketSet<'static>) -> bool {
        let Some(&op) = self.phases.last() else { return false };
        match op {
            Op::Udp => self.udp_step(sockets),
            _ => self.tcp_step(op, sockets),
        }
    }

    fn tcp_step(&mut self, op: Op, sockets: &mut SocketSet<'static>) -> bool {
        let s = sockets.get_mut::<tcp::Socket>(self.tcp);
        match self.st {
            St::Setup => {
                s.abort();
                if s.listen(PORT).is_err() {
                    // The abort is sent by the next poll; listen after it.
                    return true;
                }
                println!("bench-net: peer {} {}", &op.name()[4..], TCP_BYTES);
                self.st = St::Listening(now_ms() + PEER_MS);
                true
            }
            St::Listening(deadline) => {
                if s.state() == tcp::State::Established {
                    println!("bench-net: go");
                    icount::start();
                    self.st = St::Running(0);
                    return true;
                }
                if now_ms() > deadline {
                    not_measured(op.name(), "no connection from the host");
                    self.failed = true;
                    self.next();
                }
                false
            }
            St::Running(n) => {
                let mut n = n as usize;
                let mut moved = false;
                if op == Op::Recv {
                    while s.can_recv() {
                        match s.recv_slice(&mut self.sink) {
                            Ok(k) if k > 0 => {
                                n += k;
                                moved = true;
                            }
                            _ => break,
                        }
                    }
                    // The host's FIN, after everything it sent was read.
                    let over = !s.may_recv() && s.recv_queue() == 0;
                    if over || !s.is_open() {
                        icount::end();
                        self.report(op, n == TCP_BYTES && over, n);
                        s.close();
                        self.st = St::Closing;
                        return true;
                    }
                } else {
                    while n < TCP_BYTES && s.can_send() {
                        let at = n % self.chunk.len();
                        let want = (TCP_BYTES - n).min(self.chunk.len() - at);
                        match s.send_slice(&self.chunk[at..at + want]) {
                            Ok(k) if k > 0 => {
                                n += k;
                                moved = true;
                            }
                            _ => break,
                        }
                    }
                    if n == TCP_BYTES && s.state() == tcp::State::Established {
                        s.close();
                    }
                    // This side's FIN acknowledged and the host's seen.
                    let over = matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed);
                    if over {
                        icount::end();
                        self.report(op, n == TCP_BYTES, n);
                        self.st = St::Closing;
                        return true;
                    }
                }
                self.st = St::Running(n as u64);
                moved
            }
            St::Closing => {
                if matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed) {
                    // TIME-WAIT would refuse the next run's connection.
                    s.abort();
                    self.next();
                    return true;
                }
                false
            }
        }
    }

    fn report(&mut self, op: Op, ok: bool, n: usize) {
        if ok {
            println!("bench-io: {} per={}", op.name(), TCP_BYTES >> 20);
        } else {
            self.failed = true;
            println!("bench-io: {} failed: {n} of {TCP_BYTES} bytes moved", op.name());
        }
    }

    fn udp_step(&mut self, sockets: &mut SocketSet<'static>) -> bool {
        let s = sockets.get_mut::<udp::Socket>(self.udp);
        match self.st {
            St::Setup => {
                if !s.is_open() && s.bind(PORT).is_err() {
                    not_measured(Op::Udp.name(), "bind");
                    self.failed = true;
                    self.next();
                    return true;
                }
                self.echoed = 0;
                println!("bench-net: peer udp.roundtrip {TRIPS}");
                self.st = St::Listening(now_ms() + PEER_MS);
                true
            }
            St::Listening(deadline) | St::Running(deadline) => {
                let running = matches!(self.st, St::Running(_));
                // The last poll sent every echo queued: mark the region's ends there.
                if s.send_queue() == 0 {
                    if self.echoed == 1 && !running {
                        icount::start();
                        self.st = St::Running(deadline);
                    } else if self.echoed == TRIPS + 1 {
                        icount::end();
                        println!("bench-io: {} per={TRIPS}", Op::Udp.name());
                        self.next();
                        return true;
                    }
                }
                let mut moved = false;
                while s.can_recv() {
                    let mut d = [0u8; DATAGRAM];
                    let Ok((n, meta)) = s.recv_slice(&mut d) else { break };
                    if s.send_slice(&d[..n], meta.endpoint).is_err() {
                        break;
                    }
                    self.echoed += 1;
                    moved = true;
                }
                if !moved && now_ms() > deadline {
                    if !running {
                        icount::start();
                    }
                    icount::end();
                    println!("bench-io: {} failed: {} of {} datagrams came", Op::Udp.name(), self.echoed, TRIPS + 1);
                    self.failed = true;
                    self.next();
                }
                moved
            }
            St::Closing => {
                self.next();
                true
            }
        }
    }
}

//! AF_INET sockets, TCP and UDP: the Linux calls on the workhorse's
//! TCP/IP stack (tcpip.rs; docs/workhorse.md, "Sockets").  A Linux socket
//! is a socket of the stack, named by the id its descriptor's object
//! (`InetEnd`) holds.  The server never blocks: a call that must wait
//! answers WOULD_BLOCK and is tried again (main.rs).
//!
//! The calls are the AF_UNIX ones' (`socket.rs`): each handler here looks
//! at the descriptor and passes anything that is not AF_INET on.

use alloc::collections::VecDeque;
use alloc::vec;

use smoltcp::socket::{tcp, udp};
use smoltcp::wire::IpEndpoint;

use super::object::{Object, new_obj};
use super::socket::{MSG_DONTWAIT, MSG_NOSIGNAL, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_NONBLOCK, SOL_SOCKET};
use super::*;
use crate::tcpip::{LOOPBACK, Sock, Tcp, UDP_MAX, ip_addr, ip_u32, stack, stack_if};
use crate::linux::errno::{EALREADY, ECONNRESET, EDESTADDRREQ, EINPROGRESS, ENETUNREACH, ESOCKTNOSUPPORT};
use crate::linux::signal::SIGPIPE;
use crate::linux::socket::{AF_INET, AF_UNSPEC, IPPROTO_IP, IPPROTO_TCP, IPPROTO_UDP, IP_TOS, IP_TTL, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM, SO_ACCEPTCONN, SO_BROADCAST, SO_DOMAIN, SO_ERROR, SO_KEEPALIVE, SO_LINGER, SO_PROTOCOL, SO_RCVBUF, SO_RCVTIMEO, SO_REUSEADDR, SO_REUSEPORT, SO_SNDBUF, SO_SNDTIMEO, SO_TYPE, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_NODELAY};

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
    let id = stack().add(Sock::new(tcp));
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
    st.connect(sk, (ip, port), (lip, lport))?;
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
    let nid = st.add(new);
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

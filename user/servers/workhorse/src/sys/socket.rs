//! AF_UNIX sockets: stream, datagram and seqpacket; socketpair, and
//! bind/listen/accept/connect by path (a socket file in the file system)
//! or abstract name; send and receive with addresses, MSG_PEEK,
//! MSG_DONTWAIT, MSG_NOSIGNAL, SCM_RIGHTS; shutdown; a few socket options.
//! A socket is a `Sock` shared by its descriptor's object (`SockEnd`) and,
//! weakly, by its peer and the name table; when the last descriptor closes,
//! the peer sees end of file (stream) or ECONNREFUSED (datagram).  Data
//! sits in the receiver's queue, bounded like Linux's default buffers.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::rc::{Rc, Weak};
use core::cell::RefCell;

use super::*;
use super::io::{POLLERR, POLLHUP, POLLIN, POLLOUT};
use super::object::{Object, new_obj};
use crate::linux::socket::{AF_UNIX, MSG_CMSG_CLOEXEC, SCM_RIGHTS, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_STREAM};
pub(crate) use crate::linux::socket::{MSG_DONTWAIT, MSG_NOSIGNAL, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_NONBLOCK, SOL_SOCKET};

// Linux's socket constants (the flags inet.rs uses too are pub(super)).
/// Bytes a socket's receive queue holds (Linux's default buffer), and
/// datagrams at most.
const RCVBUF: usize = 212_992;
const MAX_DGRAMS: usize = 512;
/// offsetof(struct sockaddr_un, sun_path), and the whole structure.
const SUN_PATH: usize = 2;
const SOCKADDR_UN: usize = 110;

struct Msg {
    data: Vec<u8>,
    /// The sender's name (datagrams; empty when it has none).
    from: Vec<u8>,
    fds: Vec<Desc>,
}

pub struct Sock {
    ty: u32,
    /// Its name: sun_path as bound (a path with its NUL, or an abstract
    /// name starting with NUL); empty when unbound.
    name: Vec<u8>,
    /// The peer (connected stream; a datagram socket's default target).
    peer: Weak<RefCell<Sock>>,
    connected: bool,
    peer_name: Vec<u8>,
    rx: VecDeque<Msg>,
    rx_bytes: usize,
    listening: bool,
    backlog: VecDeque<Rc<RefCell<Sock>>>,
    max_backlog: usize,
    shut_rd: bool,
    shut_wr: bool,
    generation: u64,
}

impl Sock {
    fn new(ty: u32) -> Sock {
        Sock {
            ty,
            name: Vec::new(),
            peer: Weak::new(),
            connected: false,
            peer_name: Vec::new(),
            rx: VecDeque::new(),
            rx_bytes: 0,
            listening: false,
            backlog: VecDeque::new(),
            max_backlog: 0,
            shut_rd: false,
            shut_wr: false,
            generation: 0,
        }
    }

    fn stream(&self) -> bool {
        self.ty != SOCK_DGRAM
    }

    fn room(&self) -> usize {
        if self.stream() {
            RCVBUF.saturating_sub(self.rx_bytes)
        } else if self.rx.len() >= MAX_DGRAMS {
            0
        } else {
            RCVBUF.saturating_sub(self.rx_bytes).max(1)
        }
    }
}

/// The names bound, by socket file (its inode) or abstract name.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone)]
enum Key {
    Path(Ino),
    Abstract(Vec<u8>),
}

static mut NAMES: BTreeMap<Key, Weak<RefCell<Sock>>> = BTreeMap::new();

#[allow(static_mut_refs)]
fn names() -> &'static mut BTreeMap<Key, Weak<RefCell<Sock>>> {
    // SAFETY: the server is single threaded.
    unsafe { &mut NAMES }
}

/// A socket descriptor's object.  Its drop is the socket's close.
pub struct SockEnd {
    sock: Rc<RefCell<Sock>>,
    key: Option<Key>,
}

impl Drop for SockEnd {
    fn drop(&mut self) {
        if let Some(k) = self.key.take()
            && names().get(&k).is_some_and(|w| w.as_ptr() == Rc::as_ptr(&self.sock))
        {
            names().remove(&k);
        }
        let s = self.sock.borrow();
        if let Some(p) = s.peer.upgrade()
            && !Rc::ptr_eq(&p, &self.sock)
        {
            p.borrow_mut().generation += 1;
        }
    }
}

impl Object for SockEnd {
    fn read(&mut self, s: &mut Server, pid: i32, max: usize) -> Result<Vec<u8>, i64> {
        receive(s, pid, &self.sock, max, 0).map(|(d, ..)| d)
    }
    fn write(&mut self, s: &mut Server, pid: i32, data: &[u8]) -> Result<usize, i64> {
        send(s, pid, &self.sock, data, 0, None, Vec::new())
    }
    fn ready(&self) -> u16 {
        let s = self.sock.borrow();
        if s.listening {
            return if s.backlog.is_empty() { 0 } else { POLLIN };
        }
        let peer = s.peer.upgrade();
        let mut r = if s.rx.is_empty() { 0 } else { POLLIN };
        if s.stream() {
            if !s.connected {
                return r | POLLOUT | POLLHUP;
            }
            let gone = peer.is_none();
            let peer_shut = peer.as_ref().is_some_and(|p| p.borrow().shut_wr);
            if gone || peer_shut || s.shut_rd {
                r |= POLLIN;
            }
            if gone || (s.shut_wr && (peer_shut || s.shut_rd)) {
                r |= POLLHUP;
            }
            if !gone && !s.shut_wr && peer.as_ref().is_some_and(|p| p.borrow().room() > 0) {
                r |= POLLOUT;
            }
        } else {
            let writable = match (&peer, s.connected) {
                (Some(p), _) => Rc::ptr_eq(p, &self.sock) || p.borrow().room() > 0,
                (None, true) => false,
                (None, false) => true,
            };
            if writable {
                r |= POLLOUT;
            }
            if s.connected && peer.is_none() {
                r |= POLLERR;
            }
        }
        r
    }
    fn generation(&self) -> u64 {
        let s = self.sock.borrow();
        s.generation + s.peer.upgrade().map_or(1 << 32, |p| p.borrow().generation)
    }
    fn stat(&self) -> (u32, u64) {
        (0o140777, 0)
    }
    fn name(&self) -> String {
        alloc::format!("socket:[{}]", Rc::as_ptr(&self.sock) as usize / 8 % 1_000_000)
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

fn sigpipe(s: &mut Server, pid: i32, flags: u64) -> i64 {
    if flags & MSG_NOSIGNAL == 0 {
        s.proc(pid).pending |= 1 << (13 - 1);
    }
    EPIPE
}

/// Sends `data` (whole, for datagrams; what fits, for streams) to `to` or
/// the peer.
fn send(
    s: &mut Server,
    pid: i32,
    me: &Rc<RefCell<Sock>>,
    data: &[u8],
    flags: u64,
    to: Option<Rc<RefCell<Sock>>>,
    fds: Vec<Desc>,
) -> Result<usize, i64> {
    let (stream, connected, shut_wr, peer, from) = {
        let m = me.borrow();
        (m.stream(), m.connected, m.shut_wr, m.peer.upgrade(), m.name.clone())
    };
    let target = if stream {
        if to.is_some() && !connected {
            return Err(EOPNOTSUPP);
        }
        if !connected {
            return Err(ENOTCONN);
        }
        if shut_wr {
            return Err(sigpipe(s, pid, flags));
        }
        match peer {
            Some(p) => p,
            None => return Err(sigpipe(s, pid, flags)),
        }
    } else {
        match (to, peer, connected) {
            (Some(t), _, _) => t,
            (None, Some(p), _) => p,
            (None, None, true) => return Err(ECONNREFUSED),
            (None, None, false) => return Err(ENOTCONN),
        }
    };
    let mut t = target.borrow_mut();
    if stream && t.shut_rd {
        drop(t);
        return Err(sigpipe(s, pid, flags));
    }
    if !stream && data.len() > RCVBUF {
        return Err(EMSGSIZE);
    }
    let room = t.room();
    if room == 0 || (!stream && t.rx_bytes > 0 && data.len() > room) {
        return Err(if flags & MSG_DONTWAIT != 0 { EAGAIN } else { WOULD_BLOCK });
    }
    let n = if stream { data.len().min(room) } else { data.len() };
    if n == 0 && stream && fds.is_empty() {
        return Ok(0);
    }
    t.rx.push_back(Msg { data: Vec::from(&data[..n]), from, fds });
    t.rx_bytes += n;
    t.generation += 1;
    Ok(n)
}

/// Receives at most `max` bytes: (data, the datagram's whole length, its
/// sender, descriptors passed with it).
fn receive(
    _s: &mut Server,
    _pid: i32,
    me: &Rc<RefCell<Sock>>,
    max: usize,
    flags: u64,
) -> Result<(Vec<u8>, usize, Vec<u8>, Vec<Desc>), i64> {
    let mut m = me.borrow_mut();
    if m.listening {
        return Err(EINVAL);
    }
    if m.stream() && !m.connected {
        return Err(EINVAL);
    }
    if m.rx.is_empty() {
        let peer = m.peer.upgrade();
        let eof = m.shut_rd
            || (m.stream() && (peer.is_none() || peer.is_some_and(|p| !Rc::ptr_eq(&p, me) && p.borrow().shut_wr)));
        if eof {
            return Ok((Vec::new(), 0, Vec::new(), Vec::new()));
        }
        return Err(if flags & MSG_DONTWAIT != 0 { EAGAIN } else { WOULD_BLOCK });
    }
    let peek = flags & MSG_PEEK != 0;
    if !m.stream() {
        let msg = if peek { None } else { m.rx.pop_front() };
        let (data, from, fds) = match msg {
            Some(x) => {
                m.rx_bytes -= x.data.len();
                (x.data, x.from, x.fds)
            }
            None => {
                let f = m.rx.front().unwrap();
                (f.data.clone(), f.from.clone(), Vec::new())
            }
        };
        m.generation += 1;
        let whole = data.len();
        return Ok((Vec::from(&data[..whole.min(max)]), whole, from, fds));
    }
    // A stream: bytes across messages; descriptors come with the first
    // byte of the message that carried them (and stop the read there).
    let mut out = Vec::new();
    let mut fds = Vec::new();
    let from = m.rx.front().map(|x| x.from.clone()).unwrap_or_default();
    let mut i = 0;
    while out.len() < max && i < m.rx.len() {
        if out.len() > 0 && !m.rx[i].fds.is_empty() {
            break;
        }
        let want = max - out.len();
        if peek {
            let d = &m.rx[i].data;
            out.extend_from_slice(&d[..want.min(d.len())]);
            i += 1;
            continue;
        }
        let msg = &mut m.rx[0];
        fds.append(&mut msg.fds);
        let take = want.min(msg.data.len());
        out.extend(msg.data.drain(..take));
        if msg.data.is_empty() {
            m.rx.pop_front();
        }
        m.rx_bytes -= take;
    }
    if !peek {
        m.generation += 1;
    }
    let n = out.len();
    Ok((out, n, from, fds))
}

/// The socket of descriptor `fd` (ENOTSOCK for another kind).
fn sock_of(s: &mut Server, pid: i32, fd: u64) -> Result<(Rc<RefCell<Sock>>, Desc), i64> {
    super::object::with_obj(s, pid, fd, ENOTSOCK, |_, e: &mut SockEnd, d| Ok((e.sock.clone(), d.clone())))
}

fn install_sock(s: &mut Server, pid: i32, sock: Rc<RefCell<Sock>>, flags: u64, key: Option<Key>) -> Result<i64, i64> {
    let nb = if flags & SOCK_NONBLOCK != 0 { O_NONBLOCK } else { 0 };
    let d = Description::new(Kind::Object(new_obj(SockEnd { sock, key })), O_RDWR | nb);
    s.proc(pid).install(Fd { desc: d, cloexec: flags & SOCK_CLOEXEC != 0 }, 0)
}

fn sock_type(ty: u64) -> Result<u32, i64> {
    if ty & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(EINVAL);
    }
    match (ty & 0xf) as u32 {
        t @ (SOCK_STREAM | SOCK_DGRAM | SOCK_SEQPACKET) => Ok(t),
        3 | 4 | 6 | 10 => Err(94), // ESOCKTNOSUPPORT
        _ => Err(EINVAL),
    }
}

pub fn socket(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (domain, ty, proto) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        if domain != AF_UNIX {
            return Err(EAFNOSUPPORT);
        }
        let t = sock_type(ty)?;
        if proto != 0 && proto != AF_UNIX {
            return Err(EPROTONOSUPPORT);
        }
        install_sock(s, pid, Rc::new(RefCell::new(Sock::new(t))), ty, None)
    })();
    ret(r)
}

pub fn socketpair(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (domain, ty, proto, sv) = (c.args[0], c.args[1], c.args[2], s.arg(pid, c, 3));
    let r = (|| {
        match domain {
            AF_UNIX => {}
            2 | 10 => return Err(EOPNOTSUPP), // AF_INET, AF_INET6
            _ => return Err(EAFNOSUPPORT),
        }
        let t = sock_type(ty)?;
        if proto != 0 && proto != AF_UNIX {
            return Err(EPROTONOSUPPORT);
        }
        mem::check_range(sv, 8)?;
        let a = Rc::new(RefCell::new(Sock::new(t)));
        let b = Rc::new(RefCell::new(Sock::new(t)));
        for (x, y) in [(&a, &b), (&b, &a)] {
            let mut x = x.borrow_mut();
            x.peer = Rc::downgrade(y);
            x.connected = true;
        }
        let fa = install_sock(s, pid, a, ty, None)?;
        let fb = match install_sock(s, pid, b, ty, None) {
            Ok(f) => f,
            Err(e) => {
                s.proc(pid).fds[fa as usize] = None;
                return Err(e);
            }
        };
        let mut v = [0u8; 8];
        v[..4].copy_from_slice(&(fa as i32).to_le_bytes());
        v[4..].copy_from_slice(&(fb as i32).to_le_bytes());
        if let Err(e) = s.proc(pid).mm.write(sv, &v) {
            let p = s.proc(pid);
            p.fds[fa as usize] = None;
            p.fds[fb as usize] = None;
            return Err(e);
        }
        Ok(0)
    })();
    ret(r)
}

/// A sockaddr_un from the caller: its name (path with NUL, or abstract)
/// and key.  `for_bind`: a path is created (EADDRINUSE if it exists).
fn read_addr(s: &mut Server, pid: i32, va: u64, len: u64) -> Result<Vec<u8>, i64> {
    if len < SUN_PATH as u64 || len > SOCKADDR_UN as u64 {
        return Err(EINVAL);
    }
    let b = s.proc(pid).mm.read_vec(va, len as usize)?;
    if u16::from_le_bytes([b[0], b[1]]) as u64 != AF_UNIX {
        return Err(EINVAL);
    }
    let path = &b[SUN_PATH..];
    if path.first() == Some(&0) {
        return Ok(Vec::from(path)); // abstract: every byte counts
    }
    let end = path.iter().position(|&c| c == 0).unwrap_or(path.len());
    let mut name = Vec::from(&path[..end]);
    name.push(0);
    Ok(name)
}

/// A socket's path (any bytes, as file names: keep_workhorse::bytenames).
fn path_str(name: &[u8]) -> Result<String, i64> {
    Ok(keep_workhorse::bytenames::from_bytes(&name[..name.len() - 1]))
}

/// The socket a name refers to.
fn lookup(s: &mut Server, pid: i32, name: &[u8]) -> Result<Rc<RefCell<Sock>>, i64> {
    let key = if name.first() == Some(&0) {
        Key::Abstract(Vec::from(name))
    } else {
        fs().as_caller(&s.proc(pid).cred);
        let ino = fs().resolve(s.proc(pid).cwd, &path_str(name)?, true)?;
        Key::Path(ino)
    };
    names().get(&key).and_then(|w| w.upgrade()).ok_or(ECONNREFUSED)
}

pub fn bind(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, va, len) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        let mut name = read_addr(s, pid, va, len)?;
        if !sock.borrow().name.is_empty() {
            return Err(EINVAL);
        }
        if name.is_empty() || name == [0] && len == SUN_PATH as u64 {
            // Autobind: an abstract name of five hex digits.
            s.unix_autobind += 1;
            let n = s.unix_autobind;
            name = alloc::format!("\0{n:05x}").into_bytes();
        }
        let key = if name[0] == 0 {
            let k = Key::Abstract(name.clone());
            if names().get(&k).is_some_and(|w| w.strong_count() > 0) {
                return Err(EADDRINUSE);
            }
            k
        } else {
            let cwd = s.proc(pid).cwd;
            let umask = s.proc(pid).umask;
            let path = path_str(&name)?;
            let f = fs();
            f.as_caller(&s.proc(pid).cred);
            let (dir, last) = f.parent(cwd, &path)?;
            let ino = match f.create(dir, last, Node::File(Data::Pages(Vec::new(), 0)), 0o140000 | (0o777 & !umask)) {
                Ok(i) => i,
                Err(EEXIST) => return Err(EADDRINUSE),
                Err(e) => return Err(e),
            };
            Key::Path(ino)
        };
        names().insert(key.clone(), Rc::downgrade(&sock));
        sock.borrow_mut().name = name;
        if let Kind::Object(o) = &d.borrow().kind
            && let Some(e) = o.borrow_mut().as_any().downcast_mut::<SockEnd>()
        {
            e.key = Some(key);
        }
        Ok(0)
    })();
    ret(r)
}

pub fn listen(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let (sock, _) = sock_of(s, pid, c.args[0])?;
        let mut k = sock.borrow_mut();
        if !k.stream() {
            return Err(EOPNOTSUPP);
        }
        if k.connected || k.name.is_empty() {
            return Err(EINVAL);
        }
        k.listening = true;
        k.max_backlog = (c.args[1] as i32).clamp(1, 4096) as usize;
        Ok(0)
    })();
    ret(r)
}

pub fn connect(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, va, len) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        let name = read_addr(s, pid, va, len)?;
        let target = lookup(s, pid, &name)?;
        let nonblock = d.borrow().flags & O_NONBLOCK != 0;
        let mut me = sock.borrow_mut();
        if !me.stream() {
            if target.borrow().ty != me.ty {
                return Err(EPROTOTYPE);
            }
            me.peer = Rc::downgrade(&target);
            me.peer_name = name;
            me.connected = true;
            return Ok(0);
        }
        if me.connected {
            return Err(EISCONN);
        }
        if me.listening || Rc::ptr_eq(&target, &sock) {
            return Err(EINVAL);
        }
        let mut t = target.borrow_mut();
        if !t.listening {
            return Err(ECONNREFUSED);
        }
        if t.ty != me.ty {
            return Err(EPROTOTYPE);
        }
        if t.backlog.len() > t.max_backlog {
            return Err(if nonblock { EAGAIN } else { WOULD_BLOCK });
        }
        // The server's end, waiting in the backlog for accept.
        let mut end = Sock::new(me.ty);
        end.name = t.name.clone();
        end.peer = Rc::downgrade(&sock);
        end.peer_name = me.name.clone();
        end.connected = true;
        let end = Rc::new(RefCell::new(end));
        me.peer = Rc::downgrade(&end);
        me.peer_name = t.name.clone();
        me.connected = true;
        t.backlog.push_back(end);
        t.generation += 1;
        Ok(0)
    })();
    ret(r)
}

fn do_accept(s: &mut Server, pid: i32, c: &mut Call, flags: u64) -> Out {
    let (fd, va, lenp) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(EINVAL);
        }
        let (sock, d) = sock_of(s, pid, fd)?;
        let end = {
            let mut k = sock.borrow_mut();
            if !k.listening {
                return Err(EINVAL);
            }
            match k.backlog.pop_front() {
                Some(e) => e,
                None if d.borrow().flags & O_NONBLOCK != 0 => return Err(EAGAIN),
                None => return Err(WOULD_BLOCK),
            }
        };
        let peer_name = end.borrow().peer_name.clone();
        let nfd = install_sock(s, pid, end, flags, None)?;
        if va != 0 {
            write_name(s, pid, va, lenp, &peer_name)?;
        }
        Ok(nfd)
    })();
    ret(r)
}

pub fn accept(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    do_accept(s, pid, c, 0)
}

pub fn accept4(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = s.arg(pid, c, 3);
    do_accept(s, pid, c, flags)
}

/// Writes a name as a sockaddr_un at `va` (at most *lenp bytes) and its
/// length at `lenp`.
fn write_name(s: &mut Server, pid: i32, va: u64, lenp: u64, name: &[u8]) -> Result<(), i64> {
    let p = s.proc(pid);
    let mut l = [0u8; 4];
    p.mm.read(lenp, &mut l)?;
    let room = i32::from_le_bytes(l);
    if room < 0 {
        return Err(EINVAL);
    }
    let mut b = Vec::from((AF_UNIX as u16).to_le_bytes());
    b.extend_from_slice(name);
    let n = b.len().min(room as usize);
    p.mm.write(va, &b[..n])?;
    p.mm.write_u32(lenp, b.len() as u32)
}

pub fn getsockname(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let (sock, _) = sock_of(s, pid, c.args[0])?;
        let name = sock.borrow().name.clone();
        write_name(s, pid, c.args[1], c.args[2], &name).map(|_| 0)
    })();
    ret(r)
}

pub fn getpeername(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let (sock, _) = sock_of(s, pid, c.args[0])?;
        let (connected, name) = {
            let k = sock.borrow();
            (k.connected, k.peer_name.clone())
        };
        if !connected {
            return Err(ENOTCONN);
        }
        write_name(s, pid, c.args[1], c.args[2], &name).map(|_| 0)
    })();
    ret(r)
}

pub fn shutdown(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let (sock, _) = sock_of(s, pid, c.args[0])?;
        let mut k = sock.borrow_mut();
        if c.args[1] > 2 {
            return Err(EINVAL);
        }
        if !k.connected {
            return Err(ENOTCONN);
        }
        if c.args[1] != 1 {
            k.shut_rd = true;
        }
        if c.args[1] != 0 {
            k.shut_wr = true;
        }
        k.generation += 1;
        let peer = k.peer.upgrade();
        drop(k);
        if let Some(p) = peer
            && !Rc::ptr_eq(&p, &sock)
        {
            p.borrow_mut().generation += 1;
        }
        Ok(0)
    })();
    ret(r)
}

pub fn getsockopt(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, level, opt, val) = (c.args[0], c.args[1], c.args[2], s.arg(pid, c, 3));
    let lenp = s.arg(pid, c, 4);
    let r = (|| {
        let (sock, _) = sock_of(s, pid, fd)?;
        if level != SOL_SOCKET {
            return Err(ENOPROTOOPT);
        }
        let k = sock.borrow();
        let v: Vec<u8> = match opt {
            3 => Vec::from((k.ty as i32).to_le_bytes()),            // SO_TYPE
            4 => Vec::from(0i32.to_le_bytes()),                      // SO_ERROR
            7 | 8 => Vec::from((RCVBUF as i32).to_le_bytes()),       // SO_SNDBUF, SO_RCVBUF
            30 => Vec::from((k.listening as i32).to_le_bytes()),     // SO_ACCEPTCONN
            39 => Vec::from(1i32.to_le_bytes()),                     // SO_DOMAIN
            17 => alloc::vec![0u8; 12],                              // SO_PEERCRED: root
            _ => return Err(ENOPROTOOPT),
        };
        drop(k);
        let p = s.proc(pid);
        let mut l = [0u8; 4];
        p.mm.read(lenp, &mut l)?;
        let room = i32::from_le_bytes(l);
        if room < 0 {
            return Err(EINVAL);
        }
        let n = v.len().min(room as usize);
        p.mm.write(val, &v[..n])?;
        p.mm.write_u32(lenp, n as u32)?;
        Ok(0)
    })();
    ret(r)
}

pub fn setsockopt(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = sock_of(s, pid, c.args[0]).and_then(|_| if c.args[1] == SOL_SOCKET { Ok(0) } else { Err(ENOPROTOOPT) });
    ret(r)
}

/// The destination of sendto/sendmsg, when named.
fn dest(s: &mut Server, pid: i32, va: u64, len: u64) -> Result<Option<Rc<RefCell<Sock>>>, i64> {
    if va == 0 {
        return Ok(None);
    }
    let name = read_addr(s, pid, va, len)?;
    match lookup(s, pid, &name) {
        Ok(t) => Ok(Some(t)),
        Err(ECONNREFUSED) if name[0] != 0 => Err(ECONNREFUSED),
        Err(e) => Err(e),
    }
}

fn nonblocking(d: &Desc, flags: u64) -> u64 {
    if d.borrow().flags & O_NONBLOCK != 0 { flags | MSG_DONTWAIT } else { flags }
}

pub fn sendto(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, buf, len) = (c.args[0], c.args[1], c.args[2]);
    let flags = s.arg(pid, c, 3);
    let (va, alen) = (s.arg(pid, c, 4), s.arg(pid, c, 5));
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        let to = dest(s, pid, va, alen)?;
        let data = s.proc(pid).mm.read_vec(buf, (len as usize).min(IO_CHUNK))?;
        send(s, pid, &sock, &data, nonblocking(&d, flags), to, Vec::new()).map(|n| n as i64)
    })();
    ret(r)
}

pub fn recvfrom(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, buf, len) = (c.args[0], c.args[1], c.args[2]);
    let flags = s.arg(pid, c, 3);
    let (va, lenp) = (s.arg(pid, c, 4), s.arg(pid, c, 5));
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        mem::check_range(buf, len as usize)?;
        let (data, whole, from, _) = receive(s, pid, &sock, (len as usize).min(IO_CHUNK), nonblocking(&d, flags))?;
        s.proc(pid).mm.write(buf, &data)?;
        if va != 0 {
            if from.is_empty() {
                s.proc(pid).mm.write_u32(lenp, 0)?;
            } else {
                write_name(s, pid, va, lenp, &from)?;
            }
        }
        Ok(if flags & MSG_TRUNC != 0 { whole } else { data.len() } as i64)
    })();
    ret(r)
}

/// struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.
fn msghdr(s: &mut Server, pid: i32, va: u64) -> Result<[u64; 7], i64> {
    let b = s.proc(pid).mm.read_vec(va, 56)?;
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    Ok([w(0), w(8) & 0xffff_ffff, w(16), w(24), w(32), w(40), w(48) & 0xffff_ffff])
}

pub fn sendmsg(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, va, flags) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        let [name, namelen, iov, iovlen, control, controllen, _] = msghdr(s, pid, va)?;
        let to = dest(s, pid, name, namelen)?;
        let mut data = Vec::new();
        for (base, len) in super::io::iovecs(s, pid, iov, iovlen)? {
            let take = (len as usize).min(IO_CHUNK - data.len());
            data.extend(s.proc(pid).mm.read_vec(base, take)?);
        }
        // Control messages: SCM_RIGHTS only.
        let mut fds = Vec::new();
        let mut at = 0;
        while control != 0 && at + 16 <= controllen {
            let h = s.proc(pid).mm.read_vec(control + at, 16)?;
            let len = u64::from_le_bytes(h[0..8].try_into().unwrap());
            let (level, ty) = (u32::from_le_bytes(h[8..12].try_into().unwrap()), u32::from_le_bytes(h[12..16].try_into().unwrap()));
            if len < 16 || at + len > controllen {
                return Err(EINVAL);
            }
            if level as u64 != SOL_SOCKET || ty != SCM_RIGHTS {
                return Err(EINVAL);
            }
            let body = s.proc(pid).mm.read_vec(control + at + 16, (len - 16) as usize)?;
            for n in body.chunks_exact(4) {
                let n = i32::from_le_bytes(n.try_into().unwrap());
                fds.push(super::io::desc(s, pid, n as u64)?);
            }
            at += (len + 7) & !7;
        }
        if fds.len() > 253 {
            return Err(EINVAL);
        }
        send(s, pid, &sock, &data, nonblocking(&d, flags), to, fds).map(|n| n as i64)
    })();
    ret(r)
}

pub fn recvmsg(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, va, flags) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let (sock, d) = sock_of(s, pid, fd)?;
        let [name, _, iov, iovlen, control, controllen, _] = msghdr(s, pid, va)?;
        let v = super::io::iovecs(s, pid, iov, iovlen)?;
        let total: u64 = v.iter().map(|x| x.1).sum();
        let (data, whole, from, fds) =
            receive(s, pid, &sock, (total as usize).min(IO_CHUNK), nonblocking(&d, flags))?;
        let mut done = 0;
        for (base, len) in v {
            let n = (len as usize).min(data.len() - done);
            s.proc(pid).mm.write(base, &data[done..done + n])?;
            done += n;
        }
        let mut out_flags = if whole > data.len() { MSG_TRUNC } else { 0 };
        if name != 0 {
            if from.is_empty() {
                s.proc(pid).mm.write_u32(va + 8, 0)?;
            } else {
                write_name(s, pid, name, va + 8, &from)?;
            }
        }
        let mut clen = 0u64;
        if !fds.is_empty() {
            let room = (controllen.saturating_sub(16) / 4) as usize;
            let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
            let mut nums = Vec::new();
            for (i, desc) in fds.into_iter().enumerate() {
                if i >= room {
                    out_flags |= 8; // MSG_CTRUNC: the rest are closed
                    continue;
                }
                nums.push(s.proc(pid).install(Fd { desc, cloexec }, 0)? as i32);
            }
            if !nums.is_empty() {
                let len = 16 + 4 * nums.len() as u64;
                let mut b = Vec::from(len.to_le_bytes());
                b.extend_from_slice(&(SOL_SOCKET as u32).to_le_bytes());
                b.extend_from_slice(&SCM_RIGHTS.to_le_bytes());
                for n in nums {
                    b.extend_from_slice(&n.to_le_bytes());
                }
                s.proc(pid).mm.write(control, &b)?;
                clen = (len + 7) & !7;
            }
        }
        s.proc(pid).mm.write_u64(va + 40, clen)?;
        s.proc(pid).mm.write_u32(va + 48, out_flags as u32)?;
        Ok(if flags & MSG_TRUNC != 0 { whole } else { data.len() } as i64)
    })();
    ret(r)
}

//! TCP checksums of the stack's frames, verified on receipt and filled in
//! before sending, here instead of in smoltcp (whose device capabilities
//! say `tcp: Checksum::None`).  smoltcp adds the data two bytes at a time;
//! this adds it eight bytes at a time (RFC 1071's one's complement sum is
//! the same over any word size, folded to 16 bits), which is what made
//! `net.tcp.recv` spend a fifth of its instructions on checksums
//! (docs/performance.md, "I/O paths").  The rule is smoltcp's: a segment
//! whose checksum over the IPv4 payload and its pseudo-header is wrong is
//! dropped, whatever else it is.  Every other frame (ARP, UDP, ICMP, and
//! IPv4 that is malformed, which smoltcp drops) is left to smoltcp.

const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const PROTO_TCP: u8 = 6;
/// Where the checksum lies in a TCP header.
const TCP_CHECKSUM: usize = 16;

/// The one's complement sum of `data` read as native-endian 64-bit words
/// (an odd tail padded with zero bytes), folded to 16 bits.  Summing in
/// native order gives the byte-swapped sum of the big-endian 16-bit words
/// (RFC 1071, 2(B)): callers swap once at the end.
fn sum_ne(data: &[u8]) -> u64 {
    let mut acc: u128 = 0;
    let mut words = data.chunks_exact(32);
    for w in &mut words {
        let word = |i: usize| u64::from_ne_bytes(w[i..i + 8].try_into().unwrap()) as u128;
        acc += word(0) + word(8) + word(16) + word(24);
    }
    let mut rest = words.remainder();
    while rest.len() >= 8 {
        acc += u64::from_ne_bytes(rest[..8].try_into().unwrap()) as u128;
        rest = &rest[8..];
    }
    let mut tail = [0u8; 8];
    tail[..rest.len()].copy_from_slice(rest);
    acc += u64::from_ne_bytes(tail) as u128;
    // 128 -> 64 -> 32 -> 16 bits, each carry added back in.
    let (s, c) = (acc as u64).overflowing_add((acc >> 64) as u64);
    let s = s as u128 + c as u128;
    let s = (s as u64).wrapping_add((s >> 64) as u64);
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff) + (s >> 16);
    (s & 0xffff) + (s >> 16)
}

/// Where the TCP segment of an IPv4 frame lies and its pseudo-header's
/// sum: (segment start, segment end, sum); None for any other frame, or
/// one whose IPv4 header smoltcp refuses anyway.
fn tcp_segment(frame: &[u8]) -> Option<(usize, usize, u64)> {
    if frame.len() < ETH_HEADER + 20 || frame[12..14] != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = &frame[ETH_HEADER..];
    let ihl = (ip[0] & 0xf) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if ip[0] >> 4 != 4 || ip[9] != PROTO_TCP || ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    // Source and destination address, protocol and TCP length, in the
    // same native-endian terms as sum_ne.
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&ip[12..20]);
    pseudo[9] = PROTO_TCP;
    pseudo[10..12].copy_from_slice(&((total - ihl) as u16).to_be_bytes());
    Some((ETH_HEADER + ihl, ETH_HEADER + total, sum_ne(&pseudo)))
}

/// Folds two of sum_ne's results.
fn add(a: u64, b: u64) -> u64 {
    let s = a + b;
    (s & 0xffff) + (s >> 16)
}

/// Whether `frame` may go on to smoltcp: false only for an IPv4 TCP
/// segment whose checksum is wrong.
pub fn rx_ok(frame: &[u8]) -> bool {
    match tcp_segment(frame) {
        // The sum over a segment whose checksum is right is 0xffff.
        Some((start, end, pseudo)) => add(pseudo, sum_ne(&frame[start..end])) == 0xffff,
        None => true,
    }
}

/// Fills in the checksum of an IPv4 TCP segment smoltcp wrote with a zero
/// checksum; leaves every other frame alone.
pub fn tx_fill(frame: &mut [u8]) {
    let Some((start, end, pseudo)) = tcp_segment(frame) else { return };
    if end - start < TCP_CHECKSUM + 2 {
        return;
    }
    frame[start + TCP_CHECKSUM..start + TCP_CHECKSUM + 2].fill(0);
    let s = add(pseudo, sum_ne(&frame[start..end])) as u16;
    // Back from native to network order, complemented.
    frame[start + TCP_CHECKSUM..start + TCP_CHECKSUM + 2].copy_from_slice(&(!s).to_ne_bytes());
}

//! What the network server accepts of what a stack or its administrator
//! sends (docs/network.md, "The network"): each rule answers the status a
//! request gets when it is broken, and nothing changes then.  The server
//! (main.rs) applies them to its own records; what only the kernel can
//! say (is a capability a notification with WRITE, a SENDER to the
//! server's own dataspace manager) it asks itself.  A ring's descriptors
//! are checked by [`crate::ring::check_rx`] and [`crate::ring::check_tx`]
//! and its indices by [`crate::ring::waiting`], host-tested here with the
//! rest.

use crate::ring::{MAX_PAGES, MIN_PAGES};
use crate::{BAD_REQUEST, DENIED, ETH_HEADER, IN_USE, MAX_FRAME, MAX_STACKS, NO_RESOURCES, OK, WAIT_TX, mac_word, src_ip};

const READ: u64 = keep_abi::rights::READ;
const WRITE: u64 = keep_abi::rights::WRITE;

/// ADD_STACK (or a described client's grant) of address `ip`, `taken`
/// by a live stack already, with `stacks` registered: an address of 32
/// bits that is neither 0 nor 255.255.255.255 (BAD_REQUEST), no other
/// stack's (IN_USE), room in the table (NO_RESOURCES).
pub fn register(ip: u64, taken: bool, stacks: usize) -> Result<(), u64> {
    if ip == 0 || ip >= 0xffff_ffff {
        return Err(BAD_REQUEST);
    }
    if taken {
        return Err(IN_USE);
    }
    if stacks >= MAX_STACKS {
        return Err(NO_RESOURCES);
    }
    Ok(())
}

/// May the stack with address `ip` send a frame of `len` bytes that begins
/// with `head` through the NIC whose MAC is `mac`?  14 to MAX_FRAME bytes,
/// an IPv4 or ARP frame long enough for its header (BAD_REQUEST), the
/// source MAC the NIC's and the source address (ARP: sender address) the
/// stack's own (DENIED).  `OK` when it may.
#[inline]
pub fn frame(head: &[u8], len: usize, mac: u64, ip: u64) -> u64 {
    if len < ETH_HEADER || len > MAX_FRAME {
        return BAD_REQUEST;
    }
    let Some(src) = src_ip(head) else {
        return BAD_REQUEST;
    };
    if mac_word(&head[6..12]) != mac || src != ip {
        return DENIED;
    }
    OK
}

/// ATTACH of a dataspace of `pages` shared with `rights`: MIN_PAGES to
/// MAX_PAGES pages (BAD_REQUEST), READ and WRITE (DENIED: the server
/// writes received frames, the device reads frames to send).
pub fn attach(pages: u64, rights: u64) -> Result<(), u64> {
    if !(MIN_PAGES..=MAX_PAGES).contains(&pages) {
        return Err(BAD_REQUEST);
    }
    if rights & (READ | WRITE) != READ | WRITE {
        return Err(DENIED);
    }
    Ok(())
}

/// NOTIFY with a capability (`cap`) or without: with one, bits not 0 and
/// no flag but WAIT_TX (BAD_REQUEST); without, anything (no more signals).
pub fn notify(cap: bool, bits: u64, flags: u64) -> Result<(), u64> {
    if cap && (bits == 0 || flags & !WAIT_TX != 0) {
        return Err(BAD_REQUEST);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{BUF_SIZE, PAGE, QUEUE, check_rx, check_tx, desc, waiting};
    use crate::{ETHERTYPE_ARP, ETHERTYPE_IPV4, ipv4};

    const MAC: u64 = 0x5254_0012_3456;
    const IP: u64 = ipv4(10, 0, 2, 15);

    /// The first 64 bytes of a frame from `mac` and `ip` of `ethertype`.
    fn f(ethertype: u16, mac: u64, ip: u64) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[6..12].copy_from_slice(&mac.to_be_bytes()[2..]);
        b[12..14].copy_from_slice(&ethertype.to_be_bytes());
        let at = if ethertype == ETHERTYPE_ARP { 28 } else { 26 };
        b[at..at + 4].copy_from_slice(&(ip as u32).to_be_bytes());
        b
    }

    #[test]
    fn register_takes_a_free_unicast_address_while_there_is_room() {
        assert_eq!(register(IP, false, 0), Ok(()));
        assert_eq!(register(1, false, MAX_STACKS - 1), Ok(()));
        assert_eq!(register(0xffff_fffe, false, 0), Ok(()));
    }

    #[test]
    fn register_refuses_0_broadcast_and_wider_than_32_bits() {
        assert_eq!(register(0, false, 0), Err(BAD_REQUEST));
        assert_eq!(register(0xffff_ffff, false, 0), Err(BAD_REQUEST));
        assert_eq!(register(1 << 32, false, 0), Err(BAD_REQUEST));
        assert_eq!(register(u64::MAX, false, 0), Err(BAD_REQUEST));
    }

    #[test]
    fn register_refuses_an_address_taken_or_a_full_table() {
        assert_eq!(register(IP, true, 0), Err(IN_USE));
        assert_eq!(register(IP, false, MAX_STACKS), Err(NO_RESOURCES));
    }

    #[test]
    fn a_stacks_own_ipv4_and_arp_frames_pass() {
        assert_eq!(frame(&f(ETHERTYPE_IPV4, MAC, IP), 64, MAC, IP), OK);
        assert_eq!(frame(&f(ETHERTYPE_ARP, MAC, IP), 64, MAC, IP), OK);
        // Only the head is looked at: the length may be the whole frame's.
        assert_eq!(frame(&f(ETHERTYPE_IPV4, MAC, IP), MAX_FRAME, MAC, IP), OK);
    }

    #[test]
    fn frames_too_short_too_long_or_of_another_kind_are_bad_request() {
        let g = f(ETHERTYPE_IPV4, MAC, IP);
        assert_eq!(frame(&g[..13], 13, MAC, IP), BAD_REQUEST);
        assert_eq!(frame(&g, MAX_FRAME + 1, MAC, IP), BAD_REQUEST);
        assert_eq!(frame(&g[..ETH_HEADER + 19], ETH_HEADER + 19, MAC, IP), BAD_REQUEST);
        let a = f(ETHERTYPE_ARP, MAC, IP);
        assert_eq!(frame(&a[..ETH_HEADER + 27], ETH_HEADER + 27, MAC, IP), BAD_REQUEST);
        assert_eq!(frame(&f(0x86dd, MAC, IP), 64, MAC, IP), BAD_REQUEST);
    }

    #[test]
    fn frames_from_another_mac_or_address_are_denied() {
        assert_eq!(frame(&f(ETHERTYPE_IPV4, MAC ^ 1, IP), 64, MAC, IP), DENIED);
        assert_eq!(frame(&f(ETHERTYPE_IPV4, MAC, IP + 1), 64, MAC, IP), DENIED);
        assert_eq!(frame(&f(ETHERTYPE_ARP, MAC, ipv4(10, 0, 2, 16)), 64, MAC, IP), DENIED);
    }

    #[test]
    fn attach_takes_a_read_write_share_of_a_ring_size() {
        assert_eq!(attach(MIN_PAGES, READ | WRITE), Ok(()));
        assert_eq!(attach(MAX_PAGES, READ | WRITE | keep_abi::rights::CALL), Ok(()));
        assert_eq!(attach(MIN_PAGES - 1, READ | WRITE), Err(BAD_REQUEST));
        assert_eq!(attach(MAX_PAGES + 1, READ | WRITE), Err(BAD_REQUEST));
        assert_eq!(attach(MIN_PAGES, READ), Err(DENIED));
        assert_eq!(attach(MIN_PAGES, WRITE), Err(DENIED));
    }

    #[test]
    fn notify_with_a_capability_needs_bits_and_known_flags() {
        assert_eq!(notify(true, 1, 0), Ok(()));
        assert_eq!(notify(true, 1 << 63, WAIT_TX), Ok(()));
        assert_eq!(notify(true, 0, 0), Err(BAD_REQUEST));
        assert_eq!(notify(true, 1, 2), Err(BAD_REQUEST));
        assert_eq!(notify(false, 0, 7), Ok(()));
    }

    #[test]
    fn receive_buffers_offered_must_be_aligned_and_in_the_buffer_area() {
        let pages = 3;
        assert_eq!(check_rx(desc(PAGE, BUF_SIZE, 0), pages), Some(PAGE));
        assert_eq!(check_rx(desc(pages * PAGE - BUF_SIZE, 0, 0), pages), Some(pages * PAGE - BUF_SIZE));
        assert_eq!(check_rx(desc(0, 0, 0), pages), None); // the control page
        assert_eq!(check_rx(desc(PAGE + 1, 0, 0), pages), None);
        assert_eq!(check_rx(desc(PAGE + BUF_SIZE / 2, 0, 0), pages), None);
        assert_eq!(check_rx(desc(pages * PAGE, 0, 0), pages), None);
        assert_eq!(check_rx(desc(0xffff_f800, 0, 0), pages), None);
    }

    #[test]
    fn frames_submitted_must_be_aligned_inside_and_of_a_frames_length() {
        let pages = 3;
        assert_eq!(check_tx(desc(PAGE, 60, 0), pages), Ok((PAGE, 60)));
        assert_eq!(check_tx(desc(PAGE + BUF_SIZE, MAX_FRAME as u64, 0), pages), Ok((PAGE + BUF_SIZE, MAX_FRAME)));
        assert_eq!(check_tx(desc(0, 60, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(PAGE + 2, 60, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(PAGE, ETH_HEADER as u64 - 1, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(PAGE, MAX_FRAME as u64 + 1, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(pages * PAGE - BUF_SIZE, BUF_SIZE, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(pages * PAGE, 60, 0), pages), Err(BAD_REQUEST));
        assert_eq!(check_tx(desc(0xffff_f800, 60, 0), pages), Err(BAD_REQUEST));
    }

    #[test]
    fn queue_indices_more_than_a_queue_apart_are_out_of_range() {
        assert_eq!(waiting(5, 5), Some(0));
        assert_eq!(waiting(QUEUE, 0), Some(QUEUE));
        assert_eq!(waiting(3, u32::MAX - 1), Some(5));
        assert_eq!(waiting(QUEUE + 1, 0), None);
        assert_eq!(waiting(0, 1), None);
    }
}

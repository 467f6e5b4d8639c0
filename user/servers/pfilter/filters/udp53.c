/* Packet filter: accepts (1) IPv4 UDP packets to port 53 no longer than
 * the host's MTU, drops (0) everything else.  Also `pf_nop`, the null
 * cross-domain call of the benchmarks and tests, and `pf_seen`. */
typedef unsigned long u64;
typedef unsigned char u8;

extern u64 pf_mtu(void); /* imported from the server */

static u64 seen;

u64 filter(const u8 *p, u64 len)
{
    seen++;
    if (len > pf_mtu() || len < 28 || (p[0] >> 4) != 4)
        return 0;
    u64 ihl = (u64)(p[0] & 15) * 4;
    if (ihl < 20 || len < ihl + 8 || p[9] != 17)
        return 0;
    return ((u64)p[ihl + 2] << 8 | p[ihl + 3]) == 53;
}

u64 pf_nop(u64 x)
{
    return x;
}

u64 pf_seen(void)
{
    return seen;
}

/* A valid filter asking for 64 MiB of bss: the server refuses to spend
 * that much memory on it. */
typedef unsigned long u64;
typedef unsigned char u8;

u8 big[64 << 20]; /* global, so that gcc keeps it */

u64 filter(const u8 *p, u64 len)
{
    (void)p;
    big[len & 0xffff]++;
    return big[0];
}

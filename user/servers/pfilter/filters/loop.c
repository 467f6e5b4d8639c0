/* Packet filter that never returns (the server's watchdog must stop it). */
typedef unsigned long u64;
typedef unsigned char u8;

static volatile u64 spins;

u64 filter(const u8 *p, u64 len)
{
    (void)p;
    (void)len;
    for (;;)
        spins++;
}

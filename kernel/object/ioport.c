/* I/O ports, read and written by invocation: every access is checked
 * against the capability's range and against the ports the kernel keeps. */
#include "arch.h"
#include "device.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "x86.h"

/* The 8259 PICs (masked for good), the debug-exit and power-off ports and
 * the serial port of the kernel console. */
static const struct {
    u16 first, last;
} kernel_ports[] = {
    {0x20, 0x21}, {0xa0, 0xa1}, {0xf4, 0xf4}, {0x3f8, 0x3ff}, {0x604, 0x605}, {0xb004, 0xb005},
};

static bool kernel_port(u64 port, u64 width)
{
    for (unsigned i = 0; i < ARRAY_SIZE(kernel_ports); i++)
        if (port <= kernel_ports[i].last && port + width > kernel_ports[i].first)
            return true;
    return false;
}

static u64 access(struct invocation *inv, bool out)
{
    u64 port = inv->arg[0], width = inv->arg[1], v = inv->arg[2];
    if ((width != 1 && width != 2 && width != 4) || !range_holds(inv->cap, port, width))
        return KEEP_ERR_INVALID_ARG;
    if (kernel_port(port, width))
        return KEEP_ERR_IN_USE;
    u16 p = (u16)port;
    if (out) {
        if (width == 1)
            outb(p, (u8)v);
        else if (width == 2)
            outw(p, (u16)v);
        else
            outl(p, (u32)v);
    } else {
        inv->res[0] = width == 1 ? inb(p) : width == 2 ? inw(p) : inl(p);
    }
    return KEEP_ERR_OK;
}

u64 ioport_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_IOPORT_INFO:
    case KEEP_M_IOPORT_RESTRICT:
        return range_invoke(inv, 0);
    case KEEP_M_IOPORT_IN:
    case KEEP_M_IOPORT_OUT:
        return access(inv, inv->method == KEEP_M_IOPORT_OUT);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}

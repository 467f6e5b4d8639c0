/* The debug console: the first serial port.  Input arrives by interrupt
 * into a ring buffer; a reader with nothing to read blocks, and its
 * invocation restarts when input arrives. */
#include "arch.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"
#include "sched.h"

#define RX_SIZE 256
#define MAX_WRITE 4096

static u8 rx[RX_SIZE];
static unsigned rx_head, rx_tail; /* head: next to read; tail: next to write */

void console_putc(char c) { serial_putc(c); }

void console_irq(void)
{
    bool got = false;
    for (int c; (c = serial_getc()) >= 0;) {
        unsigned next = (rx_tail + 1) % RX_SIZE;
        if (next != rx_head) { /* drop input when the buffer is full */
            rx[rx_tail] = (u8)c;
            rx_tail = next;
        }
        got = true;
    }
    if (got)
        process_wake(WAIT_CONSOLE, NULL);
}

static u64 do_write(struct invocation *inv)
{
    u64 va = inv->arg[0], len = inv->arg[1];
    struct aspace *as = inv->caller->as;
    if (len > MAX_WRITE)
        return KEEP_ERR_INVALID_ARG;
    if (!user_range_ok(as, va, len, false))
        return KEEP_ERR_FAULT;
    char buf[256];
    for (u64 done = 0; done < len;) {
        u64 n = len - done < sizeof buf ? len - done : sizeof buf;
        copy_from_user(as, buf, va + done, n);
        for (u64 i = 0; i < n; i++)
            serial_putc(buf[i]);
        done += n;
    }
    inv->res[0] = len;
    return KEEP_ERR_OK;
}

static u64 do_read(struct invocation *inv)
{
    u64 va = inv->arg[0], len = inv->arg[1], nonblocking = inv->arg[2];
    struct aspace *as = inv->caller->as;
    if (len == 0 || len > MAX_WRITE || nonblocking > 1)
        return KEEP_ERR_INVALID_ARG;
    if (!user_range_ok(as, va, len, true))
        return KEEP_ERR_FAULT;
    if (rx_head == rx_tail) {
        if (nonblocking)
            return KEEP_ERR_WOULD_BLOCK;
        process_block(inv->caller, WAIT_CONSOLE);
        return INV_BLOCKED;
    }
    u64 n = 0;
    for (; n < len && rx_head != rx_tail; n++) {
        copy_to_user(as, va + n, &rx[rx_head], 1);
        rx_head = (rx_head + 1) % RX_SIZE;
    }
    inv->res[0] = n;
    return KEEP_ERR_OK;
}

u64 console_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_CONSOLE_WRITE:
        return do_write(inv);
    case KEEP_M_CONSOLE_READ:
        return do_read(inv);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}

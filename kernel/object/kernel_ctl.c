/* The kernel-control object (type KERNEL), held by the root task:
 * information, the memory map, the process list, page-table self-checks,
 * the command line, the seal's key, the coverage build's bitmap and leaving
 * the machine. */
#include "latency.h"
#include "arch.h"
#include "boot.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"
#include "account.h"
#include "sched.h"
#include "seal.h"
#include "checkpoint.h"

static u64 info(u64 key, u64 *value)
{
    const struct memmap *m = &boot_info.memmap;
    switch (key) {
    case KEEP_INFO_VERSION:
        *value = ((u64)KEEP_VERSION_MAJOR << 32) | (KEEP_VERSION_MINOR << 16) | KEEP_VERSION_PATCH;
        return KEEP_ERR_OK;
    case KEEP_INFO_MEM_TOTAL:
        *value = memmap_total(m, KEEP_MEM_USABLE) + memmap_total(m, KEEP_MEM_KERNEL) +
                 memmap_total(m, KEEP_MEM_BOOT_IMAGE);
        return KEEP_ERR_OK;
    case KEEP_INFO_MEM_FREE:
        *value = frame_free_count() * PAGE_SIZE;
        return KEEP_ERR_OK;
    case KEEP_INFO_CPU_FEATURES:
        *value = cpu0.features;
        return KEEP_ERR_OK;
    case KEEP_INFO_TSC_HZ:
        *value = cpu0.tsc_hz;
        return KEEP_ERR_OK;
    case KEEP_INFO_TICKS:
        *value = time_now() / (cpu0.tsc_hz / TIMER_HZ);
        return KEEP_ERR_OK;
    case KEEP_INFO_KERNEL_BYTES:
        *value = boot_info.kernel_bytes;
        return KEEP_ERR_OK;
    case KEEP_INFO_TIMER_HZ:
        *value = TIMER_HZ;
        return KEEP_ERR_OK;
    case KEEP_INFO_FASTPATH_IPC:
        *value = cpu0.fastpath_ipc;
        return KEEP_ERR_OK;
    case KEEP_INFO_DIGEST_RESTARTS:
        *value = digest_restarts;
        return KEEP_ERR_OK;
    case KEEP_INFO_FASTPATH_NTFN:
        *value = cpu0.fastpath_ntfn;
        return KEEP_ERR_OK;
    case KEEP_INFO_HELD_FRAMES:
        *value = frame_held_count();
        return KEEP_ERR_OK;
    case KEEP_INFO_REVOKE_RESTARTS:
        *value = memory_revoke_restarts;
        return KEEP_ERR_OK;
    case KEEP_INFO_DESTROY_RESTARTS:
        *value = destroy_restarts;
        return KEEP_ERR_OK;
    case KEEP_INFO_MOVE_RESTARTS:
        *value = move_restarts;
        return KEEP_ERR_OK;
    default:
        return KEEP_ERR_INVALID_ARG;
    }
}

static u64 process_info(u64 index, u64 *res)
{
    for (struct process *p = all_processes; p; p = p->all_next) {
        if (p->pid < index)
            continue;
        res[0] = p->pid | ((u64)p->state << 32) | ((u64)p->prio << 40);
        memcpy(&res[1], p->name, 8);
        memcpy(&res[2], p->name + 8, 8);
        res[3] = p->all_next ? p->all_next->pid : 0;
        return KEEP_ERR_OK;
    }
    return KEEP_ERR_INVALID_ARG;
}

u64 seal_key_from_user(struct invocation *inv, u64 ptr)
{
    u64 key[4];
    if (!user_range_ok(inv->caller->as, ptr, sizeof key, false))
        return KEEP_ERR_FAULT;
    /* An export sealed under the old keys would never open again, nor
     * would the records of a capture being written out. */
    if (checkpoint_busy())
        return KEEP_ERR_BAD_STATE;
    for (struct account *o = all_accounts; o; o = o->next)
        if (o->nout)
            return KEEP_ERR_BAD_STATE;
    copy_from_user(inv->caller->as, key, ptr, sizeof key);
    seal_set_key(key);
    memset(key, 0, sizeof key);
    return KEEP_ERR_OK;
}

u64 kernel_ctl_invoke(struct invocation *inv)
{
    const u64 *a = inv->arg;
    u64 *res = inv->res;
    const struct memmap *m = &boot_info.memmap;

    switch (inv->method) {
    case KEEP_M_KERNEL_INFO:
        return info(a[0], &res[0]);
    case KEEP_M_KERNEL_MEMMAP:
        if (a[0] >= m->count)
            return KEEP_ERR_INVALID_ARG;
        res[0] = m->r[a[0]].base;
        res[1] = m->r[a[0]].length;
        res[2] = m->r[a[0]].type;
        res[3] = m->count;
        return KEEP_ERR_OK;
    case KEEP_M_KERNEL_PROCESS_INFO:
        return process_info(a[0], res);
    case KEEP_M_KERNEL_CHECK_PAGING:
        if (a[0] > KEEP_CHECK_KERNEL_DATA_NX)
            return KEEP_ERR_INVALID_ARG;
        res[0] = paging_check((unsigned)a[0], inv->caller->as->pml4_pa, &res[1]);
        return KEEP_ERR_OK;
    case KEEP_M_KERNEL_POWEROFF:
        machine_poweroff();
    case KEEP_M_KERNEL_DEBUG_EXIT:
        LAT_DUMP();
        machine_debug_exit((u32)a[0]);
    case KEEP_M_KERNEL_CMDLINE: {
        u64 n = a[1] < boot_info.cmdline_len ? a[1] : boot_info.cmdline_len;
        if (!user_range_ok(inv->caller->as, a[0], n, true))
            return KEEP_ERR_FAULT;
        copy_to_user(inv->caller->as, a[0], boot_info.cmdline, n);
        res[0] = boot_info.cmdline_len;
        return KEEP_ERR_OK;
    }
    case KEEP_M_KERNEL_INTERRUPT_STATS:
        res[0] = stray_interrupts.low;
        res[1] = stray_interrupts.low_vectors;
        res[2] = stray_interrupts.unowned;
        return KEEP_ERR_OK;
    case KEEP_M_KERNEL_CHECK_INVARIANTS:
        res[1] = 0;
        res[0] = process_check(&res[1]) + sched_check(&res[1]) + account_check(&res[1]) + numbers_check(&res[1]);
        return KEEP_ERR_OK;
    case KEEP_M_KERNEL_SET_SEAL_KEY:
        return seal_key_from_user(inv, a[0]);
    case KEEP_M_KERNEL_COVERAGE:
#ifdef KCOV
        return kcov_copy(inv->caller, a[0], a[1], a[2], a[3], res);
#else
        return KEEP_ERR_BAD_STATE; /* not the coverage build */
#endif
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}

/* Capability spaces: the walk of another address space's capability
 * segment, the lookup variants of seed 000 Table 2, and the checks on a
 * slot's capability.  The MMU lookup itself is inline in cspace.h. */
#include "aspace.h"
#include "cap.h"
#include "frame.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"
#include "wrapper.h"

void cap_miss_note(struct aspace *as, u64 addr)
{
    cpu0.cap_miss_as = as;
    cpu0.cap_miss_addr = addr;
}

u64 cspace_walk(struct aspace *as, u64 addr, struct cap **slot)
{
    u64 *pte = user_pte(as->pml4_pa, capseg_va(addr));
    if (!pte || !(*pte & PTE_P)) {
        cap_miss_note(as, addr);
        return KEEP_ERR_NO_CAPPAGE;
    }
    *slot = (struct cap *)phys_to_virt(*pte & PTE_ADDR) + (addr % KEEP_CAPPAGE_SLOTS);
    return KEEP_ERR_OK;
}

/* The lookup variants' caches (cspace.h), emptied whenever a cappage is
 * unmapped or an address space destroyed. */
#if defined(CAP_LOOKUP_HASH)
struct soft_tlb_entry soft_tlb[SOFT_TLB_SIZE];
void cspace_forget(void) { memset(soft_tlb, 0, sizeof soft_tlb); }

u64 soft_tlb_fill(struct aspace *as, u64 page, struct soft_tlb_entry *e)
{
    struct cap *first;
    u64 err = cspace_walk(as, page * KEEP_CAPPAGE_SLOTS, &first);
    if (err)
        return err;
    e->as = as;
    e->page = page;
    e->caps = first;
    return KEEP_ERR_OK;
}
#elif defined(CAP_LOOKUP_REGS)
struct cap_regs_entry cap_regs[CAP_REGS_SPACES];
void cspace_forget(void) { memset(cap_regs, 0, sizeof cap_regs); }

u64 cap_regs_fill(struct aspace *as, struct cap_regs_entry *e)
{
    struct cap *first;
    u64 err = cspace_walk(as, 0, &first);
    if (err)
        return err;
    e->as = as;
    e->caps = first;
    return KEEP_ERR_OK;
}
#else
void cspace_forget(void) {}
#endif

bool cap_live(struct cap c)
{
    switch (cap_type(c)) {
    case KEEP_TYPE_NULL:
        return false;
    case KEEP_TYPE_CONSOLE:
    case KEEP_TYPE_KERNEL:
    case KEEP_TYPE_MEMORY:
    case KEEP_TYPE_TIMER:
    case KEEP_TYPE_DEVMEM:
    case KEEP_TYPE_IOPORT:
    case KEEP_TYPE_INTERRUPT:
        return true;
    case KEEP_TYPE_PROCESS:
    case KEEP_TYPE_SENDER:
        return process_by_number(cap_pnum(c), cap_pversion(c)) != NULL;
    case KEEP_TYPE_RETURN:
        return return_target(c) != NULL;
    default: {
        struct frame *f = frame_info(cap_pa(c));
        return f && (f->version & CAP_VERSION_MASK) == cap_version(c);
    }
    }
}

u64 cap_lookup(struct aspace *as, u64 addr, u64 type, u64 rights, struct cap *out)
{
    struct cap *s = NULL;
    u64 e = cspace_slot(as, addr, &s);
    return cap_check_slot(e, s, type, rights, out);
}

u64 cap_empty_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    u64 e = cspace_slot(as, addr, slot);
    if (e)
        return e;
    return cap_is_null(**slot) ? KEEP_ERR_OK : KEEP_ERR_EXISTS;
}

/* Device memory: physical pages outside RAM (device registers), mapped
 * uncached by ASPACE.MAP.  The root task's capability covers everything
 * from the top of low RAM to the end of the physical address space (64-bit
 * PCI BARs lie above 4 GiB); RAM (anything the memory map says is RAM, and
 * every frame the kernel manages) and the interrupt controllers the kernel
 * drives are refused page by page, so no capability can reach them. */
#include "acpi.h"
#include "arch.h"
#include "boot.h"
#include "device.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "process.h"
#include "vtd.h"

u64 devmem_page(struct cap c, u64 offset, u64 *pa)
{
    if (offset >= range_count(c))
        return KEEP_ERR_INVALID_ARG;
    u64 p = (range_base(c) + offset) * PAGE_SIZE;
    struct frame *f = frame_info(p);
    if ((f && f->type != FRAME_NONE) || memmap_is_ram(&boot_info.memmap, p) || apic_owns_page(p) ||
        vtd_owns_page(p))
        return KEEP_ERR_IN_USE;
    *pa = p;
    return KEEP_ERR_OK;
}

u64 devmem_pci_function(struct invocation *inv, u64 devmem, u64 offset, u16 *sid)
{
    struct cap dm;
    u64 pa, e = cap_lookup(inv->caller->as, devmem, KEEP_TYPE_DEVMEM, KEEP_RIGHT_WRITE, &dm);
    if (e)
        return e;
    if ((e = devmem_page(dm, offset, &pa)))
        return e == KEEP_ERR_IN_USE ? KEEP_ERR_INVALID_ARG : e;
    return acpi_pci_function(pa, sid) ? KEEP_ERR_OK : KEEP_ERR_INVALID_ARG;
}

u64 devmem_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_DEVMEM_INFO:
    case KEEP_M_DEVMEM_RESTRICT:
        return range_invoke(inv, 12);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}

//! DMA domains (docs/devices.md): what mapping a page for a device costs
//! in the kernel, the IOMMU's invalidation included (under TCG the
//! emulated unit works while the guest waits, so only guest instructions
//! count: the descriptors, the register writes and the polling).

use keep_abi::{ACCOUNT, DmaDomain, MEMORY, SELF_ASPACE, rights, ty};

use super::{BenchResult, Ctx, Suite};
use crate::Root;

const DEV_ADDR: u64 = 0x10_0000;

fn map_unmap(root: &mut Root, s: &mut Suite) -> BenchResult {
    let (Some(d), Some(p)) = (root.slots.alloc(), root.slots.alloc()) else {
        return Err("no slots".into());
    };
    let r = (|| {
        ACCOUNT.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
        MEMORY.retype(ty::PAGE, p).ctx("RETYPE")?;
        let dom = DmaDomain(d);
        let rw = rights::READ | rights::WRITE;
        dom.map(p, DEV_ADDR, rw).ctx("MAP")?; // the tables exist from here on
        dom.unmap(DEV_ADDR).ctx("UNMAP")?;
        s.bench("dma.map_unmap", 100, || {
            let _ = dom.map(p, DEV_ADDR, rw);
            dom.unmap(DEV_ADDR)
        });
        s.bench("dma.lookup", 1000, || dom.lookup(DEV_ADDR));
        Ok(())
    })();
    let _ = ACCOUNT.destroy(d);
    let _ = MEMORY.reclaim(p);
    for x in [d, p] {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    r
}

pub fn run(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[("dma.", map_unmap)]);
}

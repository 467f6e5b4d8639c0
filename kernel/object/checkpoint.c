/* The checkpoint object (docs/persistence.md): a consistent capture of the
 * persistent pool, its sealed write-out, and its restore at a later boot.
 *
 * Everything made from the persistent pool lies in one physical range at
 * the same addresses at every boot (frame.h), and its objects name each
 * other by those addresses (kernel pointers through the physical window,
 * capabilities by frame or by process number from the persistent range of
 * number pages).  So the state of the persistent world is the content of
 * the pool's frames in use, their entries in the frame table, and the
 * range's number-page epochs: BEGIN copies them at one instant (every
 * invocation is atomic on one CPU, so nothing is half done then), READ
 * hands each out sealed, and a later boot's RESTORE puts each back at its
 * frame.  RESUME then ties the restored objects to this boot: lists,
 * number pages, kernel halves of the spaces, run queues and sleeps, and
 * every reference to something outside the pool (a frame, a process, a
 * device) is cut, so that nothing restored can reach this boot's objects
 * by an old name. */
#include "checkpoint.h"
#include "account.h"
#include "aspace.h"
#include "frame.h"
#include "invoke.h"
#include "lib.h"
#include "notification.h"
#include "process.h"
#include "sched.h"
#include "seal.h"
#include "wrapper.h"

enum { CK_SHUT, CK_RESTORING, CK_OPEN, CK_CAPTURED };
static unsigned state = CK_SHUT;
static u64 epoch;

/* Per pool frame: what BEGIN captured (or RESTORE put back).  A slot
 * describes the frame as it was at the epoch's BEGIN only when its epoch is
 * the current one; otherwise the frame has not changed since and is its
 * own record (checkpoint.h). */
struct slot {
    u64 version;
    u64 digest; /* a kernel object's last sealed content, keyed (record_epoch) */
    u32 shadow; /* frame number of its copy, or 0 (a free donated frame: no content) */
    u32 aux;    /* a donated frame's link on its account's free list */
    u32 epoch;
    u32 prev, next; /* the list of kernel-object frames: slot index + 1, 0 for none */
    /* Dirty tracking: the last epoch in which the frame changed, and (when
     * epoch is the current one) the seal epoch of its state at BEGIN. */
    u32 changed, sealed;
    /* The epoch of a kernel object's record of that content, and the
     * epoch that last decided it (record_epoch). */
    u32 kept, decided;
    u16 numpage;
    u8 type;
};
static struct slot *slots; /* pool_frames of them, below the pool */
_Static_assert(sizeof(struct slot) <= CHECKPOINT_SLOT_BYTES, "frame.c reserves enough");
static u64 pool_frames;

/* The kernel record: the last of a checkpoint's records. */
#define KREC_MAGIC 0x4b45455043484b32ULL /* "KEEPCHK2" */
struct krec {
    u64 magic, epoch, records, ticks, pool_lo, pool_frames; /* ticks: the TSC at BEGIN */
    u64 set; /* the digest of every record's frame, type, version and seal epoch (set_digest) */
    u64 bits[KEEP_PERSISTENT_NUMBER_PAGES / 64];
    u64 epochs[KEEP_PERSISTENT_NUMBER_PAGES];
};
_Static_assert(sizeof(struct krec) <= PAGE_SIZE, "the kernel record is one page");

static struct account *shadow_account; /* BEGIN's */
u64 checkpoint_tracking;               /* 1 while open or captured: changes are marked */
static bool lost;                      /* a page to copy found no shadow frame */
static u32 objects_head;               /* the pool's kernel-object frames (slot + 1) */
static u64 foreign;                    /* pool frames of a type that does not persist */
static u64 records, kshadow;           /* while captured */
static u64 cursor_index, cursor_slot;  /* READ's place, for reads in order */
static bool krec_done;                 /* the kernel record's digest is filled in */
static u64 krec_next;                  /* the next frame its digest takes (in parts) */
u64 digest_restarts;                   /* KERNEL.INFO DIGEST_RESTARTS */
/* A part of the kernel record's digest hashes the content of at most this
 * many kernel objects (record_epoch, a keyed hash of a page each), so that
 * a part stays within a record's seal. */
#define DIGEST_HASHES 8
/* Records sealed in epochs up to keyed_before were sealed under other keys
 * (a SET_KEY since): READ reports no run of unchanged records against them. */
static u64 keyed_before, key_generation;
/* While restoring. */
static u64 restored;
static bool have_krec;
static struct krec krec;

/* The sealed form: a clear header, then the content. */
static struct {
    u64 info, version, epoch;
    u8 body[PAGE_SIZE];
} sealbuf;
_Static_assert(sizeof sealbuf == 3 * sizeof(u64) + PAGE_SIZE, "the header and the body are contiguous");

void checkpoint_init(void *table, u64 frames)
{
    slots = table;
    pool_frames = frames;
}

static u64 slot_pa(u64 i) { return pool_lo + i * PAGE_SIZE; }
static u64 slot_of(u64 pa) { return (pa - pool_lo) / PAGE_SIZE; }
static bool in_pool(const void *obj) { return frame_in_pool(virt_to_phys_window(obj)); }
static bool process_persistent(const struct process *p) { return in_pool(p); }

/* The types a checkpoint holds; the rest is free or device state. */
static bool persists(u8 type)
{
    switch (type) {
    case FRAME_PAGE:
    case FRAME_PAGETABLE:
    case FRAME_ASPACE:
    case FRAME_CAPPAGE:
    case FRAME_PROCESS:
    case FRAME_ACCOUNT:
    case FRAME_KFREE:
    case FRAME_WRAPPER:
    case FRAME_NUMBERS:
    case FRAME_NOTIFICATION:
        return true;
    default:
        return false;
    }
}


/* Kernel objects: BEGIN copies them (the kernel changes them on too many
 * paths to catch each); data pages, donated frames and free frames are
 * copied when they first change after it. */
static bool copied_at_begin(u8 type)
{
    return persists(type) && type != FRAME_PAGE && type != FRAME_KFREE;
}

/* The epoch a record is sealed with: a kernel object's is the capture's
 * (the kernel does not track its changes); a data page's or donated
 * frame's the first epoch whose BEGIN saw its state at this BEGIN, so that
 * its record is the same, bit for bit, in every checkpoint until it
 * changes (docs/persistence.md, "Incremental checkpoints"). */
static u64 seal_epoch(u64 i)
{
    const struct slot *s = &slots[i];
    if (s->epoch == epoch)
        return copied_at_begin(s->type) ? epoch : s->sealed;
    return copied_at_begin(frame_info(slot_pa(i))->type) ? epoch : (u64)s->changed + 1;
}

/* The keyed digest of a record's content, apart from its header. */
static u64 content_digest(u64 i, const void *body)
{
    return seal_nonce(i | 1ULL << 62, body, PAGE_SIZE);
}

/* A kernel object copied at this BEGIN: record_epoch decides its epoch
 * from its content. */
static bool epoch_from_content(const struct slot *s)
{
    return copied_at_begin(s->type) && s->epoch == epoch;
}

/* The epoch the record of frame i carries in this checkpoint.  A data
 * page's or donated frame's is seal_epoch's.  A kernel object is sealed
 * again at every checkpoint (its changes are not tracked), but with the
 * epoch of the last record of the same content when its content did not
 * change: its record is then the same, bit for bit, and no nonce serves
 * two headers.  Decided once per checkpoint, whichever of READ and the
 * kernel record's digest asks first. */
static u64 record_epoch(u64 i)
{
    struct slot *s = &slots[i];
    if (!epoch_from_content(s))
        return seal_epoch(i);
    if (s->decided != epoch) {
        u64 d = s->shadow ? content_digest(i, phys_to_virt((u64)s->shadow * PAGE_SIZE)) : 0;
        if (!d || d != s->digest || !s->kept || s->kept <= keyed_before)
            s->kept = (u32)epoch;
        s->digest = d;
        s->decided = (u32)epoch;
    }
    return s->kept;
}

/* Whether record_epoch(i) hashes frame i's content now (a part of the
 * kernel record's digest counts these against DIGEST_HASHES). */
static bool epoch_hashes(u64 i)
{
    const struct slot *s = &slots[i];
    return epoch_from_content(s) && s->decided != epoch && s->shadow;
}

static void objects_add(u64 i)
{
    slots[i].prev = 0;
    slots[i].next = objects_head;
    if (objects_head)
        slots[objects_head - 1].prev = (u32)(i + 1);
    objects_head = (u32)(i + 1);
}

static void objects_remove(u64 i)
{
    struct slot *s = &slots[i];
    if (s->prev)
        slots[s->prev - 1].next = s->next;
    else
        objects_head = s->next;
    if (s->next)
        slots[s->next - 1].prev = s->prev;
}

/* The frame's state at BEGIN: its slot if it changed since, else itself. */
static u8 begin_type(u64 i)
{
    return slots[i].epoch == epoch ? slots[i].type : frame_info(slot_pa(i))->type;
}

bool checkpoint_busy(void) { return state == CK_CAPTURED; }
bool checkpoint_pool_shut(void) { return state == CK_SHUT || state == CK_RESTORING; }

/* A digest of the set of records (frame, type, version, seal epoch, in
 * frame order), chained through the seal's keyed SipHash: the kernel
 * record carries it and RESUME compares it with what was restored, so that
 * records of two checkpoints never mix. */
struct digest {
    u64 h, n;
    u64 buf[PAGE_SIZE / 8];
};
static struct digest dg;
static void digest_add(u64 frame, u64 type, u64 version, u64 sealed)
{
    dg.buf[dg.n++] = frame | type << 32;
    dg.buf[dg.n++] = version;
    dg.buf[dg.n++] = sealed;
    if (dg.n + 3 > PAGE_SIZE / 8) {
        dg.h = seal_nonce(dg.h, dg.buf, dg.n * 8);
        dg.n = 0;
    }
}
static u64 digest_end(void)
{
    u64 h = seal_nonce(dg.h, dg.buf, dg.n * 8);
    dg.h = dg.n = 0;
    return h;
}

static u64 free_shadows(void)
{
    u64 n = 0;
    for (u64 i = 0; i < pool_frames; i++) {
        if (slots[i].epoch == epoch && slots[i].shadow) {
            kmem_free(shadow_account, (u64)slots[i].shadow * PAGE_SIZE);
            slots[i].shadow = 0;
            n++;
        }
    }
    lost = false;
    if (kshadow) {
        kmem_free(shadow_account, kshadow);
        kshadow = 0;
        n++;
    }
    shadow_account = NULL;
    state = CK_OPEN;
    return n;
}

void checkpoint_touch_slow(u64 pa)
{
    struct slot *s = &slots[slot_of(pa)];
    if (state != CK_CAPTURED) {
        s->changed = (u32)epoch; /* its state at the next BEGIN is new */
        return;
    }
    if (s->epoch == epoch)
        return; /* captured already */
    struct frame *f = frame_info(pa);
    u32 sealed = s->changed + 1;
    *s = (struct slot){.version = f->version, .epoch = (u32)epoch, .prev = s->prev, .next = s->next,
                       .changed = (u32)epoch, .sealed = sealed, .digest = s->digest, .kept = s->kept,
                       .type = f->type};
    if (f->type == FRAME_KFREE)
        s->aux = f->free_next;
    if (f->type != FRAME_PAGE)
        return;
    /* BEGIN found a free frame for every record, but the account is the
     * checkpointer's and it may have spent some since: then this
     * checkpoint cannot be whole, and READ says so. */
    if (!shadow_account->free_count) {
        lost = true;
        return;
    }
    u64 sh = kmem_take(shadow_account, FRAME_SHADOW);
    memcpy(phys_to_virt(sh), phys_to_virt(pa), PAGE_SIZE);
    s->shadow = (u32)(sh / PAGE_SIZE);
}

void checkpoint_retype(u64 pa, u8 type)
{
    struct frame *f = frame_info(pa);
    u64 i = slot_of(pa);
    checkpoint_touch(pa);
    if (copied_at_begin(f->type) && !copied_at_begin(type))
        objects_remove(i);
    else if (!copied_at_begin(f->type) && copied_at_begin(type))
        objects_add(i);
    foreign -= f->type != FRAME_FREE && !persists(f->type);
    foreign += type != FRAME_FREE && !persists(type);
    f->type = type;
}

static void touch_page(u64 pa) { checkpoint_touch(pa); }

/* Only a space that maps the pool is ever protected: the others' write
 * faults (the workhorse's copy-on-write, say) go to their handlers unwalked. */
bool checkpoint_write_fault(struct aspace *as, u64 va)
{
    return as->maps_pool && user_write_lift(as->pml4_pa, va, touch_page);
}

/* Every space that maps a frame of the pool: its user half read-only until
 * its writes lift the protection (paging.h). */
static void write_protect_spaces(void)
{
    for (struct account *o = all_accounts; o; o = o->next)
        for (struct aspace *as = o->aspaces; as; as = as->acct_next) {
            if (!as->maps_pool)
                continue;
            user_write_protect(as->pml4_pa);
            as->tlb_stale = true;
            if (cpu0.loaded_as == as)
                aspace_load_flush(as);
        }
}

void checkpoint_account_gone(struct account *a)
{
    if (state == CK_CAPTURED && shadow_account == a)
        free_shadows();
}

static u64 begin(struct invocation *inv)
{
    struct cap ac;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_ACCOUNT, KEEP_RIGHT_WRITE, &ac);
    if (e)
        return e;
    struct account *a = account_from_cap(ac);
    /* The writer and the shadows' account stay outside what is captured. */
    if (state != CK_OPEN || process_persistent(inv->caller) || in_pool(a))
        return KEEP_ERR_BAD_STATE;
    if (foreign)
        return KEEP_ERR_IN_USE; /* device state (a DMA domain), which does not persist */
    for (struct account *o = all_accounts; o; o = o->next)
        if (o->nout && in_pool(o))
            return KEEP_ERR_IN_USE; /* exported processes live outside the kernel */
    /* A free frame for every record that may need a copy: the kernel's
     * objects now, the pages when they change. */
    u64 used = pool_frames - frame_pool_free_count();
    if (a->free_count < used + 1)
        return KEEP_ERR_NO_MEMORY;

    sched_flush_live(process_persistent);
    if (seal_generation != key_generation) {
        key_generation = seal_generation;
        keyed_before = epoch; /* sealed until now under other keys */
    }
    epoch++;
    shadow_account = a;
    for (u32 n = objects_head; n; n = slots[n - 1].next) {
        u64 i = n - 1, pa = slot_pa(i);
        struct slot *s = &slots[i];
        struct frame *f = frame_info(pa);
        u64 sh = kmem_take(a, FRAME_SHADOW);
        memcpy(phys_to_virt(sh), phys_to_virt(pa), PAGE_SIZE);
        *s = (struct slot){.version = f->version, .shadow = (u32)(sh / PAGE_SIZE), .epoch = (u32)epoch,
                           .prev = s->prev, .next = s->next, .changed = (u32)epoch, .sealed = (u32)epoch,
                           .digest = s->digest, .kept = s->kept, .type = f->type};
        if (f->type == FRAME_NUMBERS)
            s->numpage = (u16)numbers_persistent_page(pa);
    }
    write_protect_spaces();
    kshadow = kmem_alloc(a, FRAME_SHADOW);
    struct krec *k = phys_to_virt(kshadow);
    *k = (struct krec){KREC_MAGIC, epoch, used + 1, rdtsc(), pool_lo, pool_frames, 0, {0}, {0}};
    numbers_persistent_save(k->epochs, k->bits);
    records = used + 1;
    cursor_index = cursor_slot = 0;
    krec_done = false;
    krec_next = 0;
    dg.h = dg.n = 0; /* a digest left half-way by an earlier capture */
    state = CK_CAPTURED;
    inv->res[0] = epoch;
    inv->res[1] = records;
    return KEEP_ERR_OK;
}

/* The slot of record index (in frame order; the kernel record is last). */
static u64 record_slot(u64 index)
{
    if (index == records - 1)
        return pool_frames;
    if (index < cursor_index)
        cursor_index = cursor_slot = 0;
    for (;; cursor_slot++) {
        if (begin_type(cursor_slot) == FRAME_FREE)
            continue;
        if (cursor_index == index)
            return cursor_slot;
        cursor_index++;
    }
}

/* The frame's version and free-list link at BEGIN. */
static u64 begin_version(u64 i)
{
    return slots[i].epoch == epoch ? slots[i].version : frame_info(slot_pa(i))->version;
}

/* From the first record at or after frame i that is a data page or a
 * donated frame sealed no later than since: the run of such records, in
 * frame order, up to the first frame that changed since (a kernel object,
 * a record sealed after since, a frame freed since).  Every frame of the
 * run is what it was in the checkpoint of epoch since: a record of the
 * same seal, or free then and now. */
static u64 unchanged_run(u64 i, u64 since, u64 *end)
{
    u64 n = 0;
    for (; i < pool_frames; i++) {
        u8 t = begin_type(i);
        if (t == FRAME_FREE) {
            if (slots[i].changed >= since)
                break;
            continue;
        }
        if (copied_at_begin(t) || seal_epoch(i) > since)
            break;
        n++;
    }
    *end = i;
    return n;
}

static u64 read(struct invocation *inv)
{
    struct cap page;
    u64 index = inv->arg[0], ptr = inv->arg[2], since = inv->arg[3];
    if (state != CK_CAPTURED)
        return KEEP_ERR_BAD_STATE;
    if (index >= records)
        return KEEP_ERR_INVALID_ARG;
    if (lost)
        return KEEP_ERR_NO_MEMORY;
    u64 e = cap_lookup(inv->caller->as, inv->arg[1], KEEP_TYPE_PAGE, KEEP_RIGHT_WRITE, &page);
    if (e)
        return e;
    if (!user_range_ok(inv->caller->as, ptr, KEEP_CHECKPOINT_RECORD_WORDS * 8, true))
        return KEEP_ERR_FAULT;
    u64 place = record_slot(index);
    inv->res[0] = 0;
    inv->res[1] = slot_pa(place) / PAGE_SIZE;
    inv->res[2] = slot_pa(place) / PAGE_SIZE + 1;
    /* Unchanged since the checkpoint of epoch since: the caller has these
     * records already, sealed as they would be now. */
    if (since && since > keyed_before && since < epoch && place < pool_frames) {
        u64 end, n = unchanged_run(place, since, &end);
        if (n) {
            cursor_index = index + n;
            cursor_slot = end;
            inv->res[0] = n;
            inv->res[2] = slot_pa(end) / PAGE_SIZE;
            return KEEP_ERR_OK;
        }
    }
    u64 sealed = epoch;
    if (place == pool_frames) {
        sealbuf.info = 0;
        sealbuf.version = 0;
        struct krec *k = phys_to_virt(kshadow);
        if (!krec_done) {
            /* In parts of DIGEST_FRAMES frames (DIGEST_HASHES objects hashed), restarting from the system
             * call between them (the atomic model's restart: the digest and
             * the frame it goes on from are the capture's, kept with it,
             * since the caller must not hold a keyed hash's state). */
            for (u64 stop = krec_next + KEEP_DIGEST_FRAMES, hashed = 0; krec_next < pool_frames; krec_next++) {
                u64 i = krec_next;
                bool hashes = epoch_hashes(i);
                if (krec_next == stop || (hashes && hashed == DIGEST_HASHES)) {
                    digest_restarts++;
                    inv->caller->regs.rip -= 2;
                    return INV_DONE;
                }
                if (begin_type(i) != FRAME_FREE) {
                    hashed += hashes;
                    digest_add(i, begin_type(i), begin_version(i), record_epoch(i));
                }
            }
            k->set = digest_end();
            krec_done = true;
        }
        memcpy(sealbuf.body, k, PAGE_SIZE);
    } else {
        sealed = record_epoch(place);
        /* Unchanged since BEGIN: the frame itself is the record. */
        const struct frame *f = frame_info(slot_pa(place));
        struct slot live = {.version = f->version, .aux = f->free_next, .type = f->type};
        const struct slot *s = slots[place].epoch == epoch ? &slots[place] : &live;
        sealbuf.info = slot_pa(place) / PAGE_SIZE | (u64)s->type << 32 | (u64)s->numpage << 40;
        sealbuf.version = s->version;
        if (s->shadow)
            memcpy(sealbuf.body, phys_to_virt((u64)s->shadow * PAGE_SIZE), PAGE_SIZE);
        else if (s == &live && s->type == FRAME_PAGE)
            memcpy(sealbuf.body, phys_to_virt(slot_pa(place)), PAGE_SIZE);
        else
            memset(sealbuf.body, 0, PAGE_SIZE);
        if (s->type == FRAME_KFREE)
            memcpy(sealbuf.body, &s->aux, sizeof s->aux); /* its free-list link */
    }
    sealbuf.epoch = sealed;
    /* The nonce comes from the frame, its header and its content: a record
     * that did not change since the last checkpoint reads the same (the
     * store writes it once), and no nonce serves two records. */
    u64 nonce = seal_nonce(place, &sealbuf, sizeof sealbuf);
    u64 d[KEEP_CHECKPOINT_RECORD_WORDS] = {sealbuf.info, sealbuf.version, 0, 0, sealed, nonce};
    seal(&sealbuf, 3 * sizeof(u64), PAGE_SIZE, nonce, &d[2]);
    memcpy(phys_to_virt(cap_pa(page)), sealbuf.body, PAGE_SIZE);
    copy_to_user(inv->caller->as, ptr, d, sizeof d);
    return KEEP_ERR_OK;
}

/* Give every restored frame back: the pool is shut and empty again. */
static void wipe(void)
{
    for (u64 i = 0; i < pool_frames; i++) {
        struct frame *f = frame_info(slot_pa(i));
        if (f->type != FRAME_FREE) {
            f->type = FRAME_FREE;
            f->maps = 0;
            f->version++;
        }
        slots[i] = (struct slot){0};
    }
    numbers_persistent_clear();
    restored = 0;
    have_krec = false;
    epoch = 0;
    state = CK_SHUT;
}

static u64 restore(struct invocation *inv)
{
    struct cap page;
    u64 d[KEEP_CHECKPOINT_RECORD_WORDS];
    if (state != CK_SHUT && state != CK_RESTORING)
        return KEEP_ERR_BAD_STATE;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_PAGE, KEEP_RIGHT_READ, &page);
    if (e)
        return e;
    if (!user_range_ok(inv->caller->as, inv->arg[1], sizeof d, false))
        return KEEP_ERR_FAULT;
    copy_from_user(inv->caller->as, d, inv->arg[1], sizeof d);
    u64 pfn = d[0] & 0xffffffff, type = d[0] >> 32 & 0xff, numpage = d[0] >> 40, place;
    if (d[0] == 0) {
        place = pool_frames;
    } else {
        u64 pa = pfn * PAGE_SIZE;
        if (!frame_in_pool(pa) || !persists((u8)type) || (type != FRAME_NUMBERS && numpage))
            return KEEP_ERR_INVALID_ARG;
        place = slot_of(pa);
    }
    if (place == pool_frames ? have_krec : frame_info(slot_pa(place))->type != FRAME_FREE)
        return KEEP_ERR_IN_USE;
    sealbuf.info = d[0];
    sealbuf.version = d[1];
    sealbuf.epoch = d[4];
    memcpy(sealbuf.body, phys_to_virt(cap_pa(page)), PAGE_SIZE);
    if (!(d[5] >> 63) || !unseal(&sealbuf, 3 * sizeof(u64), PAGE_SIZE, d[5], &d[2]))
        return KEEP_ERR_BAD_SEAL;
    if (place == pool_frames) {
        memcpy(&krec, sealbuf.body, sizeof krec);
        have_krec = true;
    } else {
        u64 pa = slot_pa(place);
        struct frame *f = frame_info(pa);
        struct slot *s = &slots[place];
        /* Sealed in epoch d[4]: its state since that epoch's BEGIN. */
        *s = (struct slot){.version = d[1], .epoch = (u32)d[4], .changed = (u32)d[4] - 1, .sealed = (u32)d[4],
                           .type = (u8)type, .numpage = (u16)numpage};
        f->type = (u8)type;
        f->version = d[1];
        f->maps = 0;
        if (type == FRAME_KFREE) {
            memcpy(&f->free_next, sealbuf.body, sizeof f->free_next);
            memset(phys_to_virt(pa), 0, PAGE_SIZE);
        } else {
            memcpy(phys_to_virt(pa), sealbuf.body, PAGE_SIZE);
            if (copied_at_begin((u8)type)) { /* unchanged, it keeps this record */
                s->digest = content_digest(place, sealbuf.body);
                s->kept = (u32)d[4];
            }
        }
    }
    restored++;
    state = CK_RESTORING;
    return KEEP_ERR_OK;
}

/* Persistent process numbers are those of the persistent range of pages
 * (the last ones); a number's place in that range. */
#define PERSIST_NUMBERS (KEEP_PERSISTENT_NUMBER_PAGES * (PAGE_SIZE / sizeof(struct process_number)))
static bool pnum_persistent(u64 num) { return num >= KEEP_PROCESS_NUMBERS - PERSIST_NUMBERS; }
static u64 pnum_place(u64 num) { return num - (KEEP_PROCESS_NUMBERS - PERSIST_NUMBERS); }

/* Return capabilities found in restored cappages (a bit per persistent
 * number): their callers' calls go on. */
static u64 reply_seen[PERSIST_NUMBERS / 64];

/* A restored capability to something outside the pool names an object of
 * an earlier boot: it is made stale (a version no object reaches), or
 * dropped if its type has no version (the machine's device and control
 * objects, which do not persist). */
static void cap_fix(struct cap *c)
{
    switch (cap_type(*c)) {
    case KEEP_TYPE_NULL:
    case KEEP_TYPE_CONSOLE:
    case KEEP_TYPE_TIMER:
    case KEEP_TYPE_MEMORY:
        return;
    case KEEP_TYPE_PROCESS:
    case KEEP_TYPE_SENDER:
        if (!pnum_persistent(cap_pnum(*c)))
            c->w0 |= CAP_PVERSION_MASK << CAP_PVERSION_SHIFT;
        return;
    case KEEP_TYPE_RETURN:
        if (!pnum_persistent(cap_pnum(*c))) {
            c->w1 = 1ULL << 32; /* above every reply version's high word */
        } else if (return_target(*c)) { /* the caller's current one, not a used copy */
            u64 i = pnum_place(cap_pnum(*c));
            reply_seen[i / 64] |= 1ULL << (i % 64);
        }
        return;
    case KEEP_TYPE_KERNEL:
    case KEEP_TYPE_DEVMEM:
    case KEEP_TYPE_IOPORT:
    case KEEP_TYPE_INTERRUPT:
    case KEEP_TYPE_CHECKPOINT:
        *c = (struct cap){0, 0};
        return;
    default:
        if (!frame_in_pool(cap_pa(*c)))
            c->w0 |= CAP_VERSION_MASK << CAP_VERSION_SHIFT;
        return;
    }
}

static bool reply_alive(const struct process *p)
{
    u64 i = pnum_place(p->num);
    return reply_seen[i / 64] >> (i % 64) & 1;
}

static bool restored_as(u64 pa, u8 type)
{
    return frame_in_pool(pa) && frame_info(pa)->type == type;
}

/* A restored process joins this boot (RESUME). */
static void adopt_process(struct process *p, u64 now)
{
    process_adopt(p);
    p->rq_next = p->rq_prev = NULL;
    p->wait_target = NULL;
    p->q_next = p->sendq_head = p->sendq_tail = NULL;
    p->sleep_next = NULL;
    p->ntfn_wait = NULL;
    p->ipc_buf_checked = 0;
    p->nvia = 0;
    if (p->bound_ntfn && !restored_as(virt_to_phys_window(p->bound_ntfn), FRAME_NOTIFICATION))
        p->bound_ntfn = NULL;
    p->irq_pending &= NOTIFY_PENDING; /* interrupt lines are this boot's drivers' */
    cap_fix(&p->fault_handler);
    cap_fix(&p->fault_to);
    p->as->nproc++;
    sched_budget_reset(p); /* its budget in this boot's TSC ticks */
    p->cpu_time = 0; /* counted from the resume: another boot's TSC ticks (and the capture's own, if it ran then) */
    u64 deadline = p->deadline;
    p->deadline = 0;
    if (p->state == KEEP_STATE_RUNNABLE) {
        process_make_runnable(p);
        return;
    }
    if (p->state != KEEP_STATE_BLOCKED)
        return;
    u64 left = deadline > krec.ticks ? deadline - krec.ticks : 1;
    switch (p->wait_kind) {
    case WAIT_RECV:
        if (deadline)
            sleep_insert(p, now + left);
        return;
    case WAIT_REPLY:
    case WAIT_FAULT_REPLY:
        if (!reply_alive(p)) {
            process_reply_lost(p); /* the callee did not persist */
            return;
        }
        if (deadline)
            sleep_insert(p, now + left);
        return;
    case WAIT_SLEEP:
        sleep_insert(p, now + left);
        return;
    default: /* waits that restart their invocation: run it again */
        process_make_runnable(p);
        return;
    }
}

static u64 resume(struct invocation *inv)
{
    if (state != CK_RESTORING)
        return KEEP_ERR_BAD_STATE;
    if (!have_krec || krec.magic != KREC_MAGIC || krec.records != restored || krec.pool_lo != pool_lo ||
        krec.pool_frames != pool_frames || krec.epoch >= 1ULL << 32) {
        wipe();
        return KEEP_ERR_BAD_SEAL;
    }
    /* Exactly the records the kernel record names: each frame's, sealed in
     * the epoch it names (records of two checkpoints never mix). */
    for (u64 i = 0; i < pool_frames; i++)
        if (persists(slots[i].type))
            digest_add(i, slots[i].type, slots[i].version, slots[i].epoch);
    if (digest_end() != krec.set) {
        wipe();
        return KEEP_ERR_BAD_SEAL;
    }
    epoch = krec.epoch;
    key_generation = seal_generation;
    keyed_before = 0;
    numbers_persistent_load(krec.epochs, krec.bits);
    for (u64 i = 0; i < pool_frames; i++)
        if (slots[i].type == FRAME_NUMBERS && !number_page_adopt(slots[i].numpage, slot_pa(i))) {
            wipe();
            return KEEP_ERR_BAD_SEAL;
        }
    memset(reply_seen, 0, sizeof reply_seen);
    u64 procs = 0;
    /* Accounts and capabilities first: processes need both. */
    for (u64 i = 0; i < pool_frames; i++) {
        void *o = phys_to_virt(slot_pa(i));
        switch (slots[i].type) {
        case FRAME_ACCOUNT: {
            struct account *a = o;
            a->next = all_accounts;
            all_accounts = a;
            a->nout = 0;
            a->out_first = 0;
            cap_fix(&a->kpager);
            break;
        }
        case FRAME_CAPPAGE: {
            struct cap *c = o;
            for (unsigned k = 0; k < KEEP_CAPPAGE_SLOTS; k++)
                cap_fix(&c[k]);
            break;
        }
        case FRAME_WRAPPER: {
            struct wrapper *w = o;
            cap_fix(&w->inner);
            w->nmaps = 0;
            w->interrupts = 0;
            break;
        }
        case FRAME_NOTIFICATION: {
            struct notification *n = o;
            n->waiter = NULL;
            cap_fix(&n->bound);
            break;
        }
        default:
            break;
        }
    }
    for (u64 i = 0; i < pool_frames; i++)
        if (slots[i].type == FRAME_ASPACE)
            aspace_adopt(phys_to_virt(slot_pa(i)));
    for (u64 i = 0; i < pool_frames; i++)
        if (slots[i].type == FRAME_PROCESS) {
            adopt_process(phys_to_virt(slot_pa(i)), rdtsc());
            procs++;
        }
    objects_head = 0;
    for (u64 i = pool_frames; i-- > 0;)
        if (copied_at_begin(slots[i].type))
            objects_add(i);
    frame_pool_rebuild();
    /* From here every change is tracked: the restored spaces' tables are
     * as they were before their BEGIN's protection. */
    write_protect_spaces();
    state = CK_OPEN;
    checkpoint_tracking = 1;
    inv->res[0] = procs;
    inv->res[1] = restored;
    return KEEP_ERR_OK;
}

u64 checkpoint_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_CHECKPOINT_INFO:
        inv->res[0] = state;
        inv->res[1] = epoch;
        inv->res[2] = pool_frames;
        inv->res[3] = pool_frames - frame_pool_free_count();
        return KEEP_ERR_OK;
    case KEEP_M_CHECKPOINT_SET_KEY:
        return seal_key_from_user(inv, inv->arg[0]); /* KERNEL.SET_SEAL_KEY's keys */
    case KEEP_M_CHECKPOINT_OPEN:
        if (state != CK_SHUT)
            return KEEP_ERR_BAD_STATE;
        state = CK_OPEN;
        checkpoint_tracking = 1;
        return KEEP_ERR_OK;
    case KEEP_M_CHECKPOINT_BEGIN:
        return begin(inv);
    case KEEP_M_CHECKPOINT_READ:
        return read(inv);
    case KEEP_M_CHECKPOINT_END:
        if (state != CK_CAPTURED)
            return KEEP_ERR_BAD_STATE;
        inv->res[0] = free_shadows();
        return KEEP_ERR_OK;
    case KEEP_M_CHECKPOINT_RESTORE:
        return restore(inv);
    case KEEP_M_CHECKPOINT_RESUME:
        return resume(inv);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}

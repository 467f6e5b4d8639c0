/* Process numbers, paid for by accounts, so that no task can exhaust them
 * for others (seed 003, Haeberlen and Elphinstone, section 3).
 *
 * PROCESS, SENDER and RETURN capabilities name a process by a 20-bit
 * number.  The entries of all 2^20 numbers lie in one kernel-virtual array
 * (process_numbers, NUMBER_REGION: 64 bytes an entry, 64 MiB), indexed
 * with one load as a static table would be, so the IPC fast path pays
 * nothing for it.  The array is backed a page at a time: a page holds 64
 * entries, and is a frame of the account whose processes use those
 * numbers, bought from the account when CREATE_PROCESS finds none of its
 * numbers free.  Where no account bought a page, the region shows one
 * shared zero page, read-only: an entry there names no process, and no
 * reply word is zero except number 0's, which is reserved below.
 *
 * Entry 0 of every page is the page's header, never a number.  Page 0 is
 * the kernel's own and reserved whole, so number 0 names nothing and its
 * reply word (~0) matches no slot, not even the null capability's.
 *
 * An account keeps its last page when it empties (its next process needs
 * no frame) and gives back any other page at once; DESTROY_ALL gives back
 * all of them.  A page given back may later serve another account: its
 * numbers then start at versions above every version they had, so no old
 * capability names a new process (page_epoch).  A number whose version is
 * used up is retired, never wrapped; a page whose epoch is used up is
 * never used again. */
#include "process.h"
#include "account.h"
#include "frame.h"
#include "lib.h"

#define PER_PAGE (PAGE_SIZE / sizeof(struct process_number)) /* 64, entry 0 the header */
#define NUMBER_PAGES (KEEP_PROCESS_NUMBERS / PER_PAGE)          /* 16,384 */
_Static_assert(KEEP_PROCESS_NUMBERS * sizeof(struct process_number) == NUMBER_REGION_SIZE,
               "the region holds every number");

/* Entry 0 of a page, laid over a struct process_number. */
struct number_page {
    struct process *none;   /* NULL: the entry names no process */
    u64 frame;              /* the page's frame */
    u64 reply;              /* ~0: matches no capability */
    struct account *owner;  /* whose processes use its numbers */
    u32 next;               /* 1 + the owner's next page, or 0 */
    u32 next_free;          /* 1 + the owner's next page with a free number, or 0 */
    u32 free_first;         /* 1 + index of a free entry, or 0 */
    u32 used;               /* numbers naming a process (live or exported) */
    u32 retired;            /* numbers whose version is used up */
    u8 on_free_list;
};
_Static_assert(sizeof(struct number_page) <= sizeof(struct process_number), "the header fits an entry");
_Static_assert(__builtin_offsetof(struct number_page, none) == __builtin_offsetof(struct process_number, p) &&
                   __builtin_offsetof(struct number_page, reply) == __builtin_offsetof(struct process_number, reply),
               "a header reads as an entry that names nothing");

/* Persistent accounts (frame.h) take their pages from the last
 * PERSISTENT_NUMBER_PAGES, so that a restored process gets its number back
 * whatever this boot's other accounts took. */
#define PERSIST_FIRST (NUMBER_PAGES - KEEP_PERSISTENT_NUMBER_PAGES)
_Static_assert(KEEP_PERSISTENT_NUMBER_PAGES % 64 == 0 && KEEP_PERSISTENT_NUMBER_PAGES < NUMBER_PAGES / 2,
               "the persistent range is whole words of page_bits");

u64 numbers_used;
static u64 pages_taken[2];               /* per range: in use or retired, page 0 included */
static u64 page_bits[NUMBER_PAGES / 64]; /* taken pages */
/* When a page is next bought: the first version of its numbers (bits
 * 0-33), and the high bits of their reply versions (34-63). */
static u64 page_epoch[NUMBER_PAGES];
#define EPOCH_HI_SHIFT 34
static u64 page_hint[2] = {1, PERSIST_FIRST};
static int range_of(const struct account *a) { return frame_in_pool(virt_to_phys_window(a)); }
static const u64 range_lo[2] = {1, PERSIST_FIRST}, range_hi[2] = {PERSIST_FIRST, NUMBER_PAGES};
/* Numbers 0-63: the kernel's, reserved. */
static union {
    struct number_page h;
    u8 bytes[PAGE_SIZE];
} page0 __attribute__((aligned(4096)));

static struct number_page *page_of(u64 idx) { return (struct number_page *)&process_numbers[idx * PER_PAGE]; }
static bool page_is_taken(u64 idx) { return page_bits[idx / 64] >> (idx % 64) & 1; }

void numbers_init(void)
{
    u64 pa = kernel_virt_to_phys(&page0);
    page0.h.reply = ~0ULL;
    number_region_map(NUMBER_REGION, pa);
    ASSERT(process_numbers[0].reply == ~0ULL && !process_numbers[1].p && !process_numbers[1].reply);
    page_bits[0] = 1;
    pages_taken[0] = 1;
}

u64 number_frames_needed(const struct account *a) { return a->numbers_free ? 0 : 1; }

bool number_available(const struct account *a)
{
    int r = range_of(a);
    return a->numbers_free || pages_taken[r] < range_hi[r] - range_lo[r] + (r == 0);
}

/* Buy a page for the account from one of its frames (the caller made sure
 * it holds one, and that a page is left). */
static void page_buy(struct account *a)
{
    int r = range_of(a);
    while (page_is_taken(page_hint[r]))
        page_hint[r] = page_hint[r] + 1 < range_hi[r] ? page_hint[r] + 1 : range_lo[r];
    u64 idx = page_hint[r];
    page_bits[idx / 64] |= 1ULL << (idx % 64);
    pages_taken[r]++;
    u64 pa = kmem_alloc(a, FRAME_NUMBERS); /* zeroed */
    number_region_map(NUMBER_REGION + idx * PAGE_SIZE, pa);
    struct number_page *h = page_of(idx);
    h->frame = pa;
    h->reply = ~0ULL;
    h->owner = a;
    u64 epoch = page_epoch[idx] & CAP_PVERSION_MASK;
    u32 hi = (u32)(page_epoch[idx] >> EPOCH_HI_SHIFT);
    for (u64 i = 1; i < PER_PAGE; i++) {
        struct process_number *n = &process_numbers[idx * PER_PAGE + i];
        n->version = epoch;
        n->reply = cap_make_process(KEEP_TYPE_RETURN, KEEP_RIGHT_WRITE, idx * PER_PAGE + i, epoch, 0).w0;
        n->reply_hi = hi;
        n->free_next = i + 1 < PER_PAGE ? (u32)(i + 1) + 1 : 0;
    }
    h->free_first = 1 + 1;
    h->next = a->number_pages;
    a->number_pages = (u32)idx + 1;
    h->next_free = a->free_pages;
    h->on_free_list = 1;
    a->free_pages = (u32)idx + 1;
    a->numbers_free += PER_PAGE - 1;
}

static void unlink_page(u32 *head, u64 idx, bool free_list)
{
    u32 *link = head;
    while (*link != idx + 1)
        link = free_list ? &page_of(*link - 1)->next_free : &page_of(*link - 1)->next;
    *link = free_list ? page_of(idx)->next_free : page_of(idx)->next;
}

/* Give a page with no number in use back to its owner's frames; its
 * numbers' next versions are remembered for whoever buys it next: above
 * every version and reply version (its high bits the highest, its low bits
 * above all low bits) that any of them had. */
static void page_release(u64 idx)
{
    struct number_page *h = page_of(idx);
    struct account *a = h->owner;
    ASSERT(h->used == 0);
    u64 top = 0, top_hi = 0;
    for (u64 i = 1; i < PER_PAGE; i++) {
        struct process_number *n = &process_numbers[idx * PER_PAGE + i];
        u64 r = n->reply >> CAP_PVERSION_SHIFT;
        top = top > n->version ? top : n->version;
        top = top > r ? top : r;
        top_hi = top_hi > n->reply_hi ? top_hi : n->reply_hi;
    }
    unlink_page(&a->number_pages, idx, false);
    if (h->on_free_list)
        unlink_page(&a->free_pages, idx, true);
    a->numbers_free -= PER_PAGE - 1 - h->retired;
    u64 pa = h->frame;
    number_region_map(NUMBER_REGION + idx * PAGE_SIZE, 0);
    kmem_free(a, pa);
    /* else (2^34 versions, or 2^64 calls) the page is never used again */
    if (top + 1 < CAP_PVERSION_MASK && top_hi < 1ULL << (64 - EPOCH_HI_SHIFT)) {
        page_epoch[idx] = (top + 1) | top_hi << EPOCH_HI_SHIFT;
        page_bits[idx / 64] &= ~(1ULL << (idx % 64));
        pages_taken[idx >= PERSIST_FIRST]--;
    }
}

u64 number_take(struct account *a)
{
    if (!a->numbers_free)
        page_buy(a);
    u64 idx = a->free_pages - 1;
    struct number_page *h = page_of(idx);
    u64 i = h->free_first - 1;
    struct process_number *n = &process_numbers[idx * PER_PAGE + i];
    h->free_first = n->free_next;
    n->free_next = 0;
    if (!h->free_first) { /* full: off the list of pages with a free number */
        a->free_pages = h->next_free;
        h->next_free = 0;
        h->on_free_list = 0;
    }
    h->used++;
    a->numbers_free--;
    numbers_used++;
    return idx * PER_PAGE + i;
}

void number_put(u64 num)
{
    u64 idx = num / PER_PAGE;
    struct number_page *h = page_of(idx);
    struct account *a = h->owner;
    struct process_number *n = &process_numbers[num];
    n->p = NULL;
    h->used--;
    numbers_used--;
    if (n->version == CAP_PVERSION_MASK) { /* used up: retired, never wrapped */
        h->retired++;
    } else {
        n->version++; /* every PROCESS and SENDER capability goes stale */
        n->free_next = h->free_first;
        h->free_first = (u32)(num % PER_PAGE) + 1;
        a->numbers_free++;
        if (!h->on_free_list) {
            h->next_free = a->free_pages;
            a->free_pages = (u32)idx + 1;
            h->on_free_list = 1;
        }
    }
    /* An empty page goes back unless it is the account's only one. */
    if (h->used == 0 && !(a->number_pages == idx + 1 && !h->next))
        page_release(idx);
}

void numbers_release_all(struct account *a)
{
    while (a->number_pages)
        page_release(a->number_pages - 1);
    ASSERT(a->numbers_free == 0 && a->free_pages == 0);
}

u64 numbers_check(u64 *checked)
{
    u64 bad = 0, used = 0, pages = 1;
    for (struct account *a = all_accounts; a; a = a->next) {
        u64 free = 0;
        for (u32 i = a->number_pages; i; i = page_of(i - 1)->next, pages++) {
            u64 idx = i - 1;
            struct number_page *h = page_of(idx);
            u64 live = 0, nfree = 0;
            for (u64 k = 1; k < PER_PAGE; k++)
                live += process_numbers[idx * PER_PAGE + k].p != NULL;
            for (u32 f = h->free_first; f && nfree < PER_PAGE; f = process_numbers[idx * PER_PAGE + f - 1].free_next)
                nfree++;
            (*checked)++;
            if (h->owner != a || !page_is_taken(idx) || frame_info(h->frame)->type != FRAME_NUMBERS ||
                h->reply != ~0ULL || h->none || live != h->used || nfree + h->used + h->retired != PER_PAGE - 1 ||
                h->on_free_list != (nfree != 0)) {
                kprintf("invariant: number page %lu of account %p: owner %p, %u used (%lu live), %lu free, "
                        "%u retired\n",
                        idx, (void *)a, (void *)h->owner, h->used, live, nfree, h->retired);
                bad++;
            }
            used += h->used;
            free += nfree;
        }
        if (free != a->numbers_free) {
            kprintf("invariant: account %p: %lu free numbers in its pages, count says %u\n", (void *)a, free,
                    a->numbers_free);
            bad++;
        }
    }
    if (used != numbers_used || pages > pages_taken[0] + pages_taken[1]) {
        kprintf("invariant: %lu numbers in use in %lu pages, counts say %lu in %lu\n", used, pages, numbers_used,
                pages_taken[0] + pages_taken[1]);
        bad++;
    }
    return bad;
}

/* The checkpoint's part (checkpoint.c). */
u64 numbers_persistent_page(u64 pa)
{
    for (u64 idx = PERSIST_FIRST; idx < NUMBER_PAGES; idx++)
        if (page_is_taken(idx) && page_of(idx)->frame == pa && frame_info(pa)->type == FRAME_NUMBERS)
            return idx;
    return 0;
}

void numbers_persistent_save(u64 *epochs, u64 *bits)
{
    memcpy(epochs, &page_epoch[PERSIST_FIRST], KEEP_PERSISTENT_NUMBER_PAGES * sizeof(u64));
    memcpy(bits, &page_bits[PERSIST_FIRST / 64], KEEP_PERSISTENT_NUMBER_PAGES / 8);
}

bool numbers_persistent_idle(void) { return pages_taken[1] == 0; }

void numbers_persistent_load(const u64 *epochs, const u64 *bits)
{
    memcpy(&page_epoch[PERSIST_FIRST], epochs, KEEP_PERSISTENT_NUMBER_PAGES * sizeof(u64));
    memcpy(&page_bits[PERSIST_FIRST / 64], bits, KEEP_PERSISTENT_NUMBER_PAGES / 8);
    pages_taken[1] = 0;
    for (u64 idx = PERSIST_FIRST; idx < NUMBER_PAGES; idx++)
        pages_taken[1] += page_is_taken(idx);
}

bool number_page_adopt(u64 idx, u64 pa)
{
    if (idx < PERSIST_FIRST || idx >= NUMBER_PAGES || !page_is_taken(idx))
        return false;
    number_region_map(NUMBER_REGION + idx * PAGE_SIZE, pa);
    struct number_page *h = page_of(idx);
    if (h->frame != pa) {
        number_region_map(NUMBER_REGION + idx * PAGE_SIZE, 0);
        return false;
    }
    numbers_used += h->used;
    return true;
}

void numbers_persistent_clear(void)
{
    for (u64 idx = PERSIST_FIRST; idx < NUMBER_PAGES; idx++) {
        if (page_is_taken(idx) && page_of(idx)->frame && frame_in_pool(page_of(idx)->frame))
            number_region_map(NUMBER_REGION + idx * PAGE_SIZE, 0);
        page_epoch[idx] = 0;
    }
    memset(&page_bits[PERSIST_FIRST / 64], 0, KEEP_PERSISTENT_NUMBER_PAGES / 8);
    pages_taken[1] = 0;
}

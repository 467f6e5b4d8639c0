/* SQLite built with SQLITE_OS_OTHER: the application supplies the VFS.  The
   benchmark uses an in-memory database; every file this VFS opens (temporary
   files of the sorter and temp tables) is a private growable buffer.  Its
   clock is constant and its randomness a fixed sequence, which makes the
   output (speedtest1 prints per-test times) identical between runs. */
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

typedef struct { sqlite3_file base; char *buf; sqlite3_int64 size, cap; } MemFile;

static int mf_close(sqlite3_file *f) { free(((MemFile *)f)->buf); return SQLITE_OK; }
static int mf_read(sqlite3_file *f, void *out, int n, sqlite3_int64 off) {
    MemFile *m = (MemFile *)f;
    sqlite3_int64 have = off < m->size ? m->size - off : 0;
    if (have >= n) { memcpy(out, m->buf + off, n); return SQLITE_OK; }
    if (have > 0) memcpy(out, m->buf + off, have);
    memset((char *)out + have, 0, n - have);
    return SQLITE_IOERR_SHORT_READ;
}
static int mf_write(sqlite3_file *f, const void *in, int n, sqlite3_int64 off) {
    MemFile *m = (MemFile *)f;
    if (off + n > m->cap) {
        sqlite3_int64 cap = m->cap ? m->cap : 65536;
        while (cap < off + n) cap *= 2;
        char *b = realloc(m->buf, cap);
        if (!b) return SQLITE_IOERR_NOMEM;
        m->buf = b; m->cap = cap;
    }
    if (off > m->size) memset(m->buf + m->size, 0, off - m->size);
    memcpy(m->buf + off, in, n);
    if (off + n > m->size) m->size = off + n;
    return SQLITE_OK;
}
static int mf_truncate(sqlite3_file *f, sqlite3_int64 size) { MemFile *m = (MemFile *)f; if (size < m->size) m->size = size; return SQLITE_OK; }
static int mf_sync(sqlite3_file *f, int flags) { (void)f; (void)flags; return SQLITE_OK; }
static int mf_size(sqlite3_file *f, sqlite3_int64 *size) { *size = ((MemFile *)f)->size; return SQLITE_OK; }
static int mf_lock(sqlite3_file *f, int level) { (void)f; (void)level; return SQLITE_OK; }
static int mf_reserved(sqlite3_file *f, int *out) { (void)f; *out = 0; return SQLITE_OK; }
static int mf_control(sqlite3_file *f, int op, void *arg) { (void)f; (void)op; (void)arg; return SQLITE_NOTFOUND; }
static int mf_sector(sqlite3_file *f) { (void)f; return 512; }
static int mf_chars(sqlite3_file *f) { (void)f; return 0; }
static const sqlite3_io_methods mf_methods = {
    1, mf_close, mf_read, mf_write, mf_truncate, mf_sync, mf_size, mf_lock, mf_lock, mf_reserved,
    mf_control, mf_sector, mf_chars, 0, 0, 0, 0, 0, 0,
};

static int mem_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out) {
    (void)v; (void)name;
    MemFile *m = (MemFile *)f;
    m->buf = 0; m->size = m->cap = 0;
    m->base.pMethods = &mf_methods;
    if (out) *out = flags;
    return SQLITE_OK;
}
static int no_delete(sqlite3_vfs *v, const char *name, int sync) { (void)v; (void)name; (void)sync; return SQLITE_OK; }
static int no_access(sqlite3_vfs *v, const char *name, int flags, int *res) { (void)v; (void)name; (void)flags; *res = 0; return SQLITE_OK; }
static int full_path(sqlite3_vfs *v, const char *name, int n, char *out) {
    (void)v;
    sqlite3_snprintf(n, out, "%s", name);
    return SQLITE_OK;
}
static unsigned long long seed = 0x9e3779b97f4a7c15ull;
static int randomness(sqlite3_vfs *v, int n, char *out) {
    (void)v;
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        out[i] = (char)(seed >> 56);
    }
    return n;
}
static int sleep_us(sqlite3_vfs *v, int us) { (void)v; return us; }
static int now(sqlite3_vfs *v, double *t) { (void)v; *t = 2460000.5; return SQLITE_OK; }
static int now64(sqlite3_vfs *v, sqlite3_int64 *t) { (void)v; *t = 212544000000000ll; return SQLITE_OK; }
static int last_error(sqlite3_vfs *v, int n, char *buf) { (void)v; if (n > 0) buf[0] = 0; return 0; }

static sqlite3_vfs memonly = {
    2, sizeof(MemFile), 512, 0, "memonly", 0,
    mem_open, no_delete, no_access, full_path, 0, 0, 0, 0,
    randomness, sleep_us, now, last_error, now64, 0, 0, 0,
};

int sqlite3_os_init(void) { return sqlite3_vfs_register(&memonly, 1); }
int sqlite3_os_end(void) { return SQLITE_OK; }

/* Boot-image parsing; every offset and length is checked against the image. */
#include "bootimage.h"
#include "lib.h"

bool bootimage_find(const u8 *img, u64 size, const char *name, const u8 **data, u64 *len,
                    const char **why)
{
    if (size < 16 || memcmp(img, BOOTIMAGE_MAGIC, 8) != 0) {
        *why = "bad magic (not a Keep boot image)";
        return false;
    }
    u64 count = (u64)img[8] | ((u64)img[9] << 8) | ((u64)img[10] << 16) | ((u64)img[11] << 24);
    if (count > BOOTIMAGE_MAX_ENTRIES || 16 + count * 64 > size) {
        *why = "entry table does not fit in the image";
        return false;
    }
    for (u64 i = 0; i < count; i++) {
        const u8 *e = img + 16 + i * 64;
        u64 off = le64(e + 48), n = le64(e + 56);
        if (off > size || n > size - off) {
            *why = "an entry lies outside the image";
            return false;
        }
        if (strnlen((const char *)e, BOOTIMAGE_NAME_MAX) == strlen(name) &&
            memcmp(e, name, strlen(name)) == 0) {
            *data = img + off;
            *len = n;
            return true;
        }
    }
    *why = "no such entry";
    return false;
}

/* rf_pread.h: a positional read without the GIL, for the reader's C paths
 * (BlockPrefixes). Retries an interrupted read; returns the bytes read (0
 * at the file's end) or -1 with errno set. Where there is no pread
 * (Windows) it fails with ENOSYS: the Python side reads there instead, and
 * only takes this path where os.pread exists. */
#ifndef RF_PREAD_H
#define RF_PREAD_H

#include <stdint.h>
#include <stddef.h>
#include <errno.h>

#ifdef _WIN32
static int64_t rf_pread(int fd, void *buf, size_t n, int64_t off) {
    (void)fd; (void)buf; (void)n; (void)off;
    errno = ENOSYS;
    return -1;
}
#else
#include <unistd.h>
#include <sys/types.h>
static int64_t rf_pread(int fd, void *buf, size_t n, int64_t off) {
    ssize_t r;
    do {
        r = pread(fd, buf, n, (off_t)off);
    } while (r < 0 && errno == EINTR);
    return (int64_t)r;
}
#endif

#endif

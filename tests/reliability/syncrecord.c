/* LD_PRELOAD shim for the power-cut test (tests/kit/testkit/powercut.py).
 *
 * Appends to $SYNCRECORD_LOG a record of every write, fsync/fdatasync, truncation, open
 * and unlink that a process makes on the database $SYNCRECORD_DB and on its -wal and
 * -journal files (the -shm file is memory only and not recorded). Each record is written
 * after the call it describes has returned, in one write() to a log opened O_APPEND, so a
 * record of a sync means that sync had finished. Calls on other files pass straight through.
 *
 * Record: op (1 byte: W write, S sync, T truncate, O open, U unlink), file (1 byte: 0
 * database, 1 WAL, 2 rollback journal), 2 bytes zero, length (uint32), offset (uint64: the
 * write's offset, the new size of a truncation), then `length` bytes of data (writes only).
 * Little-endian, as the machine writes it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 65536

static const char *suffixes[] = {"", "-wal", "-journal"};
static char paths[3][PATH_MAX + 16];
static signed char tracked[MAX_FD]; /* fd -> file + 1; 0 when not one of ours */
static int log_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_unlink)(const char *);

struct header {
    char op;
    unsigned char file;
    uint16_t zero;
    uint32_t length;
    uint64_t offset;
};

__attribute__((constructor)) static void init(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    const char *db = getenv("SYNCRECORD_DB");
    const char *log = getenv("SYNCRECORD_LOG");
    if (db == NULL || log == NULL || strlen(db) >= PATH_MAX)
        return;
    for (int i = 0; i < 3; i++) {
        strcpy(paths[i], db);
        strcat(paths[i], suffixes[i]);
    }
    log_fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

static int which(const char *path) {
    if (log_fd < 0 || path == NULL)
        return -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(path, paths[i]) == 0)
            return i;
    return -1;
}

static void record(char op, int file, uint64_t offset, const void *data, size_t length) {
    struct header h = {op, (unsigned char)file, 0, (uint32_t)length, offset};
    struct iovec parts[2] = {{&h, sizeof h}, {(void *)data, length}};
    int saved = errno;
    pthread_mutex_lock(&lock);
    size_t left = sizeof h + length;
    int n = length ? 2 : 1;
    struct iovec *p = parts;
    while (left > 0) { /* a regular file takes it whole; go on after a signal, just in case */
        ssize_t done = writev(log_fd, p, n);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            abort(); /* a record lost would make the test's verdict meaningless */
        }
        left -= (size_t)done;
        while (n > 0 && (size_t)done >= p->iov_len) {
            done -= (ssize_t)p->iov_len;
            p++;
            n--;
        }
        if (n > 0) {
            p->iov_base = (char *)p->iov_base + done;
            p->iov_len -= (size_t)done;
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
}

static int file_of(int fd) {
    return fd >= 0 && fd < MAX_FD ? tracked[fd] - 1 : -1;
}

static int opened(int fd, const char *path, int flags) {
    int file = which(path);
    if (fd >= 0 && fd < MAX_FD) {
        tracked[fd] = (signed char)(file + 1);
        if (file >= 0) {
            record('O', file, 0, NULL, 0);
            if (flags & O_TRUNC)
                record('T', file, 0, NULL, 0);
        }
    }
    return fd;
}

static mode_t mode_of(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return opened(real_open(path, flags, mode), path, flags);
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return opened(real_open64(path, flags, mode), path, flags);
}

int openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return opened(real_openat(dir, path, flags, mode), path, flags);
}

int openat64(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return opened(real_openat64(dir, path, flags, mode), path, flags);
}

int close(int fd) {
    if (fd >= 0 && fd < MAX_FD)
        tracked[fd] = 0;
    return real_close(fd);
}

ssize_t write(int fd, const void *buf, size_t count) {
    int file = file_of(fd);
    if (file < 0)
        return real_write(fd, buf, count);
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t done = real_write(fd, buf, count);
    if (done > 0)
        record('W', file, (uint64_t)at, buf, (size_t)done);
    return done;
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    ssize_t done = real_pwrite(fd, buf, count, offset);
    int file = file_of(fd);
    if (file >= 0 && done > 0)
        record('W', file, (uint64_t)offset, buf, (size_t)done);
    return done;
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    ssize_t done = real_pwrite64(fd, buf, count, offset);
    int file = file_of(fd);
    if (file >= 0 && done > 0)
        record('W', file, (uint64_t)offset, buf, (size_t)done);
    return done;
}

int fsync(int fd) {
    int rc = real_fsync(fd);
    int file = file_of(fd);
    if (file >= 0 && rc == 0)
        record('S', file, 0, NULL, 0);
    return rc;
}

int fdatasync(int fd) {
    int rc = real_fdatasync(fd);
    int file = file_of(fd);
    if (file >= 0 && rc == 0)
        record('S', file, 0, NULL, 0);
    return rc;
}

int ftruncate(int fd, off_t length) {
    int rc = real_ftruncate(fd, length);
    int file = file_of(fd);
    if (file >= 0 && rc == 0)
        record('T', file, (uint64_t)length, NULL, 0);
    return rc;
}

int ftruncate64(int fd, off_t length) {
    int rc = real_ftruncate64(fd, length);
    int file = file_of(fd);
    if (file >= 0 && rc == 0)
        record('T', file, (uint64_t)length, NULL, 0);
    return rc;
}

int unlink(const char *path) {
    int rc = real_unlink(path);
    int file = which(path);
    if (file >= 0 && rc == 0)
        record('U', file, 0, NULL, 0);
    return rc;
}

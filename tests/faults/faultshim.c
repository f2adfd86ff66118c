/*
 * faultshim.c - an LD_PRELOAD shim that injects I/O faults into one file of
 * a vmdump run (scripts/faults.sh builds it into target/faults/).
 *
 * It wraps read, write, pread64, pwrite64 (and their pread/pwrite names),
 * readv and writev. A call is "watched" when the path of its fd
 * (readlink /proc/self/fd/N, cached per fd until close) contains
 * FAULT_PATH, or is a pipe and FAULT_PATH is "pipe:". Watched calls in the
 * direction FAULT_OP (read or write) are faulted when both hold:
 *   - they are the FAULT_CALL-th watched call of that direction or later
 *     (default 1), and
 *   - the bytes they touch overlap [FAULT_OFFSET, FAULT_OFFSET+FAULT_LEN)
 *     of the file (default: from 0, no end; for read/write the offset is
 *     the fd's current one, for a pipe the bytes passed so far).
 * What a faulted call does is FAULT_MODE:
 *   eio     returns -1, errno EIO
 *   enospc  returns -1, errno ENOSPC
 *   short   transfers only half the bytes asked (at least 1), for real
 *   eof     (reads) returns 0, as at the end of the file
 * FAULT_MAX bounds how many calls are faulted (default: no bound).
 * FAULT_LOG, if set, is a file that gets one line per injected fault
 * ("fault MODE OP off=N len=N"), so the script counts what it injected.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum mode { M_EIO, M_ENOSPC, M_SHORT, M_EOF };
enum { OP_READ, OP_WRITE };
#define MAX_FD 4096

static struct {
    int ready;
    const char *path;
    int op;
    enum mode mode;
    long long call, offset, len, max;
    const char *log;
} cfg;

static unsigned char fd_state[MAX_FD]; /* 0 unknown, 1 watched, 2 not */
static long long calls[2], faults, pipe_bytes[MAX_FD];

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_close)(int);

static long long env_ll(const char *name, long long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 0) : dflt;
}

static void setup(void)
{
    if (__atomic_load_n(&cfg.ready, __ATOMIC_ACQUIRE))
        return;
    real_read = dlsym(RTLD_NEXT, "read");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pread = dlsym(RTLD_NEXT, "pread64");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
    real_readv = dlsym(RTLD_NEXT, "readv");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_close = dlsym(RTLD_NEXT, "close");
    cfg.path = getenv("FAULT_PATH");
    const char *op = getenv("FAULT_OP"), *mode = getenv("FAULT_MODE");
    cfg.op = op && strcmp(op, "read") == 0 ? OP_READ : OP_WRITE;
    cfg.mode = !mode ? M_EIO
             : strcmp(mode, "enospc") == 0 ? M_ENOSPC
             : strcmp(mode, "short") == 0 ? M_SHORT
             : strcmp(mode, "eof") == 0 ? M_EOF : M_EIO;
    cfg.call = env_ll("FAULT_CALL", 1);
    cfg.offset = env_ll("FAULT_OFFSET", 0);
    cfg.len = env_ll("FAULT_LEN", -1);
    cfg.max = env_ll("FAULT_MAX", -1);
    cfg.log = getenv("FAULT_LOG");
    __atomic_store_n(&cfg.ready, 1, __ATOMIC_RELEASE);
}

static int watched(int fd)
{
    if (!cfg.path || !*cfg.path || fd < 0 || fd >= MAX_FD)
        return 0;
    unsigned char s = __atomic_load_n(&fd_state[fd], __ATOMIC_RELAXED);
    if (s == 0) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        int hit = strcmp(cfg.path, "pipe:") == 0 ? strncmp(target, "pipe:", 5) == 0
                                                 : strstr(target, cfg.path) != NULL;
        s = hit ? 1 : 2;
        __atomic_store_n(&fd_state[fd], s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

static void note(const char *op, long long off, size_t len)
{
    if (!cfg.log)
        return;
    int fd = open(cfg.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[160];
    static const char *names[] = {"eio", "enospc", "short", "eof"};
    int n = snprintf(line, sizeof line, "fault %s %s off=%lld len=%zu\n", names[cfg.mode], op, off, len);
    real_write(fd, line, (size_t)n);
    real_close(fd);
}

/*
 * Decides on one call: 0 = pass it on, 1 = fault it. `off` is the file
 * offset (-1: the fd's current one, found here).
 */
static int decide(int fd, int op, long long off, size_t len)
{
    setup();
    if (op != cfg.op || !watched(fd))
        return 0;
    long long nth = __atomic_add_fetch(&calls[op], 1, __ATOMIC_RELAXED);
    if (off < 0) {
        off = lseek(fd, 0, SEEK_CUR);
        if (off < 0)
            off = __atomic_fetch_add(&pipe_bytes[fd], (long long)len, __ATOMIC_RELAXED);
    }
    if (nth < cfg.call)
        return 0;
    if (off + (long long)len <= cfg.offset || (cfg.len >= 0 && off >= cfg.offset + cfg.len))
        return 0;
    if (cfg.max >= 0 && __atomic_add_fetch(&faults, 1, __ATOMIC_RELAXED) > cfg.max)
        return 0;
    note(op == OP_READ ? "read" : "write", off, len);
    return 1;
}

/* What a faulted call returns when the mode is an error; -2 = not an error mode. */
static ssize_t fail(void)
{
    switch (cfg.mode) {
    case M_EIO: errno = EIO; return -1;
    case M_ENOSPC: errno = ENOSPC; return -1;
    case M_EOF: return 0;
    default: return -2;
    }
}

static size_t half(size_t n) { return n > 1 ? n / 2 : n; }

ssize_t read(int fd, void *buf, size_t n)
{
    if (decide(fd, OP_READ, -1, n)) {
        ssize_t r = fail();
        if (r != -2)
            return r;
        n = half(n);
    }
    return real_read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (decide(fd, OP_WRITE, -1, n)) {
        ssize_t r = fail();
        if (r != -2 && cfg.mode != M_EOF)
            return r;
        n = half(n);
    }
    return real_write(fd, buf, n);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    if (decide(fd, OP_READ, off, n)) {
        ssize_t r = fail();
        if (r != -2)
            return r;
        n = half(n);
    }
    return real_pread(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    if (decide(fd, OP_WRITE, off, n)) {
        ssize_t r = fail();
        if (r != -2 && cfg.mode != M_EOF)
            return r;
        n = half(n);
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) { return pread64(fd, buf, n, off); }
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return pwrite64(fd, buf, n, off); }

static size_t iov_total(const struct iovec *iov, int cnt)
{
    size_t t = 0;
    for (int i = 0; i < cnt; i++)
        t += iov[i].iov_len;
    return t;
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    if (decide(fd, OP_READ, -1, iov_total(iov, cnt))) {
        ssize_t r = fail();
        if (r != -2)
            return r;
        /* short: the first buffer only, halved */
        return cnt > 0 ? real_read(fd, iov[0].iov_base, half(iov[0].iov_len)) : 0;
    }
    return real_readv(fd, iov, cnt);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (decide(fd, OP_WRITE, -1, iov_total(iov, cnt))) {
        ssize_t r = fail();
        if (r != -2 && cfg.mode != M_EOF)
            return r;
        return cnt > 0 ? real_write(fd, iov[0].iov_base, half(iov[0].iov_len)) : 0;
    }
    return real_writev(fd, iov, cnt);
}

int close(int fd)
{
    setup();
    if (fd >= 0 && fd < MAX_FD) {
        __atomic_store_n(&fd_state[fd], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pipe_bytes[fd], 0, __ATOMIC_RELAXED);
    }
    return real_close(fd);
}

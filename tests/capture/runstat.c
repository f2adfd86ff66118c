/*
 * runstat: runs a command and writes its wall time, CPU times, peak RSS and
 * exit status to a file (busybox has no `time -v`). The command keeps
 * runstat's stdin, stdout and stderr, so `runstat F makedumpfile -F ... > out`
 * times the same process that writes out.
 *
 * usage: runstat [-m PATH] STATFILE COMMAND [ARG...]
 * STATFILE gets key=value lines: wall_s user_s sys_s maxrss_kib exit, and
 * with -m, mapped=1 if the command was seen with PATH mapped (its
 * /proc/PID/maps is read every 20 ms until it is): whether a dump tool
 * read /proc/vmcore through mmap, which neither tool's messages say; and
 * where its resident memory was when it was largest, from /proc/PID/smaps
 * read every 20 ms: sampled_kib (that sample's total), binary_kib (the
 * program's own file), libs_kib (other files: shared libraries), anon_kib
 * (heap and anonymous mappings), stack_kib, watched_kib (PATH's mapping);
 * and that sample's mappings, one line each (resident KiB, permissions,
 * file), in STATFILE.peak.
 * Exit status: the command's (128+N if signal N killed it).
 * Build: gcc -O2 -static -o runstat runstat.c
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t)
{
    return t.tv_sec + t.tv_usec / 1e6;
}

/* Whether a line of /proc/PID/maps ends with path. */
static int has_mapped(pid_t pid, const char *path)
{
    char name[64], line[4096];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(name, "r");
    size_t n = strlen(path);
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        found = len >= n && memcmp(line + len - n, path, n) == 0;
    }
    if (f)
        fclose(f);
    return found;
}

/* Resident KiB of a process by kind of mapping, and its resident
 * mappings as lines of "KIB PERMS PATH". */
struct footprint {
    long binary, libs, anon, stack, watched;
    char table[8192];
};

static long total(const struct footprint *f)
{
    return f->binary + f->libs + f->anon + f->stack + f->watched;
}

/* The resident memory of pid by mapping kind, from /proc/PID/smaps: a
 * mapping's header line names its file (or [heap], [stack], nothing), its
 * Rss: line follows. Returns 0 when the process is gone. */
static int sample(pid_t pid, const char *watch, struct footprint *out)
{
    char name[64], exe[PATH_MAX], line[4096];
    snprintf(name, sizeof name, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(name, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    snprintf(name, sizeof name, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(name, "r");
    if (!f)
        return 0;
    static struct footprint fp;
    memset(&fp, 0, sizeof fp);
    long *kind = &fp.anon;
    char mapping[4096 + 8] = "";
    size_t used = 0;
    while (fgets(line, sizeof line, f)) {
        long kib;
        if (sscanf(line, "Rss: %ld kB", &kib) == 1) {
            *kind += kib;
            int n = kib ? snprintf(fp.table + used, sizeof fp.table - used, "%ld %s\n", kib, mapping) : 0;
            if (n > 0 && (size_t)n < sizeof fp.table - used)
                used += n;
            continue;
        }
        unsigned long lo, hi;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3 || !path_at)
            continue;
        char *path = line + path_at;
        path[strcspn(path, "\n")] = 0;
        snprintf(mapping, sizeof mapping, "%s %s", perms, path);
        kind = !*path || !strcmp(path, "[heap]") ? &fp.anon
             : !strcmp(path, "[stack]") ? &fp.stack
             : watch && !strcmp(path, watch) ? &fp.watched
             : *exe && !strcmp(path, exe) ? &fp.binary
             : path[0] == '/' ? &fp.libs : &fp.anon;
    }
    fclose(f);
    *out = fp;
    return 1;
}

int main(int argc, char **argv)
{
    const char *watch = NULL;
    if (argc > 2 && !strcmp(argv[1], "-m")) {
        watch = argv[2];
        argv += 2, argc -= 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: runstat [-m PATH] STATFILE COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status, mapped = 0;
    static struct footprint peak, now;
    struct rusage ru; /* of this one child alone, unlike RUSAGE_CHILDREN */
    for (;;) {
        pid_t done = wait4(pid, &status, watch ? WNOHANG : 0, &ru);
        if (done == pid)
            break;
        if (done < 0) {
            perror("wait4");
            return 1;
        }
        mapped = mapped || has_mapped(pid, watch);
        if (sample(pid, watch, &now) && total(&now) > total(&peak))
            peak = now;
        usleep(20000);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fprintf(f, "wall_s=%.3f\nuser_s=%.3f\nsys_s=%.3f\nmaxrss_kib=%ld\nexit=%d\n",
            (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
            seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss, code);
    if (watch)
        fprintf(f, "mapped=%d\nsampled_kib=%ld\nbinary_kib=%ld\nlibs_kib=%ld\nanon_kib=%ld\nstack_kib=%ld\nwatched_kib=%ld\n",
                mapped, total(&peak), peak.binary, peak.libs, peak.anon, peak.stack, peak.watched);
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    if (watch) {
        char name[PATH_MAX];
        snprintf(name, sizeof name, "%s.peak", argv[1]);
        FILE *p = fopen(name, "w");
        if (!p || fputs(peak.table, p) < 0 || fclose(p) != 0) {
            perror(name);
            return 1;
        }
    }
    return code;
}

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
 * read /proc/vmcore through mmap, which neither tool's messages say.
 * Exit status: the command's (128+N if signal N killed it).
 * Build: gcc -O2 -static -o runstat runstat.c
 */
#include <stdio.h>
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
    struct rusage ru; /* of this one child alone, unlike RUSAGE_CHILDREN */
    for (;;) {
        int polling = watch && !mapped;
        pid_t done = wait4(pid, &status, polling ? WNOHANG : 0, &ru);
        if (done == pid)
            break;
        if (done < 0) {
            perror("wait4");
            return 1;
        }
        mapped = has_mapped(pid, watch);
        if (!mapped)
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
        fprintf(f, "mapped=%d\n", mapped);
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    return code;
}

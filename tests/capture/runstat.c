/*
 * runstat: runs a command and writes its wall time, CPU times, peak RSS and
 * exit status to a file (busybox has no `time -v`). The command keeps
 * runstat's stdin, stdout and stderr, so `runstat F makedumpfile -F ... > out`
 * times the same process that writes out.
 *
 * usage: runstat STATFILE COMMAND [ARG...]
 * STATFILE gets key=value lines: wall_s user_s sys_s maxrss_kib exit.
 * Exit status: the command's (128+N if signal N killed it).
 * Build: gcc -O2 -static -o runstat runstat.c
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t)
{
    return t.tv_sec + t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s STATFILE COMMAND [ARG...]\n", argv[0]);
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
    int status;
    struct rusage ru; /* of this one child alone, unlike RUSAGE_CHILDREN */
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 1;
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
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    return code;
}

/*
 * kexec_load: loads the kdump capture kernel with kexec_file_load(2), as
 * kdump-tools does at boot, so that the guest needs no kexec-tools.
 *
 * usage: kexec_load KERNEL INITRD CMDLINE
 * Build: gcc -O2 -static -o kexec_load kexec_load.c
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef KEXEC_FILE_ON_CRASH
#define KEXEC_FILE_ON_CRASH 0x00000002 /* load into the crashkernel= reservation */
#endif

static int open_or_die(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        _exit(1);
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s KERNEL INITRD CMDLINE\n", argv[0]);
        return 2;
    }
    int kernel = open_or_die(argv[1]), initrd = open_or_die(argv[2]);
    /* The command line length counts its terminating NUL. */
    if (syscall(SYS_kexec_file_load, kernel, initrd, strlen(argv[3]) + 1, argv[3],
                KEXEC_FILE_ON_CRASH) != 0) {
        perror("kexec_file_load");
        return 1;
    }
    return 0;
}

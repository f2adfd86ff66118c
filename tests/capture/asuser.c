/*
 * asuser: runs a command as another user id (and group id), with no
 * capabilities left: busybox's su and setuidgid want a passwd file.
 *
 * usage: asuser UID COMMAND [ARG...]
 * Exit status: the command's, or 126 when the ids cannot be changed.
 * Build: gcc -O2 -static -o asuser asuser.c
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: asuser UID COMMAND [ARG...]\n");
        return 2;
    }
    uid_t id = (uid_t)strtoul(argv[1], NULL, 10);
    if (setgroups(0, NULL) != 0 || setgid(id) != 0 || setuid(id) != 0) {
        perror("asuser");
        return 126;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
}

// Re-executing this process in place (the daemon's recycling): which descriptors the next image inherits, the
// in-memory file that carries its state, and the checks the next image makes on what it was handed.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "xclaw_system.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int xclaw_memfd(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

/// Sets close-on-exec on every descriptor from 3 up: close_range(CLOSE_RANGE_CLOEXEC) on Linux 5.11+, else each one
/// /proc/self/fd lists.
static void cloexec_from_3(void) {
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) return;
    int own = dirfd(dir);
    for (struct dirent *entry = readdir(dir); entry != NULL; entry = readdir(dir)) {
        char *end = NULL;
        long fd = strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd < 3 || fd == own) continue;
        int flags = fcntl((int)fd, F_GETFD);
        if (flags >= 0) fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC);
    }
    closedir(dir);
}

static void set_cloexec(const int *fds, int count, int on) {
    for (int i = 0; i < count; i++) {
        int flags = fcntl(fds[i], F_GETFD);
        if (flags >= 0) fcntl(fds[i], F_SETFD, on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC));
    }
}

int xclaw_reexec(const char *path, char *const argv[], char *const envp[], const int *keep, int count,
                 const int *hold, int held) {
    cloexec_from_3();
    set_cloexec(keep, count, 0);
    sigset_t mask, old;
    sigemptyset(&mask);
    for (int i = 0; i < held; i++) sigaddset(&mask, hold[i]);
    pthread_sigmask(SIG_SETMASK, &mask, &old);
    execve(path, argv, envp);
    int failure = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    set_cloexec(keep, count, 1);
    errno = failure;
    return -1;
}

int xclaw_is_listening_unix_stream(int fd) {
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return 0;
    int value = 0;
    socklen_t length = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &length) != 0 || value != AF_UNIX) return 0;
    length = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) != 0 || value != SOCK_STREAM) return 0;
    length = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) != 0 || value != 1) return 0;
    return 1;
}

int xclaw_take_pending_signals(const int *signals, int count) {
    sigset_t pending, unblock;
    sigemptyset(&unblock);
    if (sigpending(&pending) != 0) sigemptyset(&pending);
    int found = 0;
    for (int i = 0; i < count; i++) {
        if (sigismember(&pending, signals[i]) == 1) {
            found = 1;
            signal(signals[i], SIG_IGN);  /* discards the pending one */
        }
        sigaddset(&unblock, signals[i]);
    }
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    return found;
}

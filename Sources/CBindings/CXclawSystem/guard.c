// The process guard's watcher: a forked child that runs only system calls (no malloc, no locks, so forking a
// multithreaded parent is safe) and, when its owner dies, ends what the owner started — through pidfds, so a process
// that was reaped long ago and whose pid now belongs to a stranger is never signalled — and runs the clean-up
// commands the owner registered.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "xclaw_system.h"

int xclaw_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int xclaw_pidfd_signal(int pidfd, int sig) { return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0); }

int xclaw_seqpacket_pair(int fds[2]) { return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds); }

enum { MAX_TARGETS = 512, MAX_COMMANDS = 128, COMMAND_BYTES = 4096, MAX_ARGS = 512 };

struct target {
    uint32_t id;
    int pidfd;  /* the process, or the group's leader */
    int pgid;   /* > 0: a group */
};

struct command {
    uint32_t id;
    int used;
    unsigned length;
    char bytes[COMMAND_BYTES];
};

static struct target targets[MAX_TARGETS];
static int target_count;
static struct command commands[MAX_COMMANDS];

static void pause_ms(long ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

/// 1 while the process behind `pidfd` has not exited (a pidfd polls readable once it has).
static int running(int pidfd) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN, .revents = 0};
    return poll(&p, 1, 0) == 0;
}

static void add_target(uint32_t id, int pidfd, int pgid) {
    if (target_count >= MAX_TARGETS) { close(pidfd); return; }
    targets[target_count++] = (struct target){.id = id, .pidfd = pidfd, .pgid = pgid};
}

static void forget(uint32_t id) {
    for (int i = 0; i < target_count;) {
        if (targets[i].id == id) {
            close(targets[i].pidfd);
            targets[i] = targets[--target_count];
        } else {
            i++;
        }
    }
    for (int i = 0; i < MAX_COMMANDS; i++)
        if (commands[i].used && commands[i].id == id) commands[i].used = 0;
}

static long parse_long(const char *s, const char **end) {
    long v = 0;
    while (*s >= '0' && *s <= '9') v = v * 10 + (*s++ - '0');
    *end = s;
    return v;
}

/// The process group of `/proc/PID/stat` (field 5), or -1.
static int group_of(const char *pid) {
    char path[64] = "/proc/";
    size_t n = strlen(path);
    for (const char *p = pid; *p && n < sizeof path - 8; p++) path[n++] = *p;
    memcpy(path + n, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[1024];
    ssize_t got = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (got <= 0) return -1;
    buffer[got] = 0;
    char *close_paren = strrchr(buffer, ')');  /* the name may hold spaces and parentheses */
    if (close_paren == NULL) return -1;
    const char *s = close_paren + 2;           /* ") S ppid pgrp" */
    if (*s == 0) return -1;
    s += 2;
    const char *end;
    parse_long(s, &end);                       /* ppid */
    if (*end != ' ') return -1;
    return (int)parse_long(end + 1, &end);
}

/// Adds a pidfd for every process now in group `pgid` (read while its leader is unreaped, so the group is still the
/// one the owner named): later signals go to exactly those processes.
/// Returns 0 when /proc cannot be read.
static int add_members(uint32_t id, int pgid) {
    int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 0;
    char buffer[8192];
    for (;;) {
        long got = syscall(SYS_getdents64, dir, buffer, sizeof buffer);
        if (got <= 0) break;
        for (long offset = 0; offset < got;) {
            struct dirent64 *entry = (struct dirent64 *)(buffer + offset);
            offset += entry->d_reclen;
            const char *name = entry->d_name;
            if (name[0] < '1' || name[0] > '9') continue;
            const char *end;
            long pid = parse_long(name, &end);
            if (*end != 0 || group_of(name) != pgid) continue;
            int pidfd = xclaw_pidfd_open((int)pid);
            if (pidfd < 0) continue;
            /* Checked again through the pidfd's process: the pid may have changed hands between the two reads. */
            if (group_of(name) == pgid && running(pidfd)) add_target(id, pidfd, 0);
            else close(pidfd);
        }
    }
    close(dir);
    return 1;
}

/// Runs one registered command (argv NUL-separated), its output discarded, for at most 10 s.
static void run_command(struct command *c) {
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (unsigned i = 0; i < c->length && argc < MAX_ARGS;) {
        argv[argc++] = c->bytes + i;
        while (i < c->length && c->bytes[i] != 0) i++;
        i++;
    }
    argv[argc] = NULL;
    if (argc == 0) return;
    pid_t child = fork();
    if (child < 0) return;
    if (child == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
        syscall(SYS_close_range, 3, ~0U, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    for (int waited = 0; waited < 1000; waited++) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child) return;
        pause_ms(10);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

/// The owner died: run its clean-up commands (while what they act on, such as a display, still runs), then SIGTERM
/// every target still its own, and SIGKILL what still runs 2 s later.
static void act(void) {
    for (int i = 0; i < MAX_COMMANDS; i++)
        if (commands[i].used) run_command(&commands[i]);
    int count = target_count;
    for (int i = 0; i < count; i++) {
        struct target t = targets[i];
        if (t.pgid <= 0) continue;
        /* Signal 0 through the leader's pidfd succeeds until the leader is reaped: until then its pid, and so the
           group's id, cannot have been given to anyone else. */
        if (xclaw_pidfd_signal(t.pidfd, 0) != 0) continue;
        if (!add_members(t.id, t.pgid)) kill(-t.pgid, SIGTERM);  /* no /proc to list it: the group as a whole */
    }
    for (int i = 0; i < target_count; i++)
        if (targets[i].pgid <= 0) xclaw_pidfd_signal(targets[i].pidfd, SIGTERM);
    for (int round = 0; round < 20; round++) {
        int alive = 0;
        for (int i = 0; i < target_count; i++)
            if (targets[i].pgid <= 0 && running(targets[i].pidfd)) alive = 1;
        if (!alive) return;
        pause_ms(100);
    }
    for (int i = 0; i < target_count; i++)
        if (targets[i].pgid <= 0 && running(targets[i].pidfd)) xclaw_pidfd_signal(targets[i].pidfd, SIGKILL);
}

static void watch(int sock) {
    for (;;) {
        struct xclaw_guard_message message;
        int fds[8], count = 0;
        long got = xclaw_receive_with_fds(sock, &message, sizeof message, fds, 8, &count);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { act(); return; }  /* EOF: the owner's end closed, so the owner is gone */
        if (got < (long)offsetof(struct xclaw_guard_message, payload)) {
            for (int i = 0; i < count; i++) close(fds[i]);
            continue;
        }
        switch (message.op) {
        case 'D': return;
        case 'P':
        case 'G':
            if (count > 0) add_target(message.id, fds[0], message.op == 'G' ? message.pgid : 0);
            for (int i = 1; i < count; i++) close(fds[i]);
            continue;
        case 'C': {
            unsigned length = (unsigned)(got - (long)offsetof(struct xclaw_guard_message, payload));
            for (int i = 0; i < MAX_COMMANDS; i++) {
                if (commands[i].used) continue;
                commands[i].used = 1;
                commands[i].id = message.id;
                commands[i].length = length;
                memcpy(commands[i].bytes, message.payload, length);
                break;
            }
            break;
        }
        case 'F': forget(message.id); break;
        default: break;
        }
        for (int i = 0; i < count; i++) close(fds[i]);
    }
}

int xclaw_guard_send(int sock, char op, uint32_t id, int32_t pgid, const void *payload, unsigned long length, int fd) {
    struct xclaw_guard_message message = {.op = op, .id = id, .pgid = pgid};
    if (length > sizeof message.payload) return -1;
    if (length > 0) memcpy(message.payload, payload, length);
    unsigned long size = offsetof(struct xclaw_guard_message, payload) + length;
    return xclaw_send_with_fds(sock, &message, size, &fd, fd >= 0 ? 1 : 0) == (int)size ? 0 : -1;
}

int xclaw_guard_start(int sock) {
    pid_t child = fork();
    if (child != 0) return child;
    /* The child of a multithreaded parent: only async-signal-safe calls from here on. */
    setsid();  /* a Ctrl-C meant for the owner must not end the watcher before the owner's own clean-up */
    /* The owner's handlers first back to their defaults, then the mask cleared: a signal pending in the mask must
       not reach a handler of the owner's in this copy of its memory. */
    struct sigaction basic = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++) sigaction(s, &basic, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (sock != 3) { dup2(sock, 3); }
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
    syscall(SYS_close_range, 4, ~0U, 0);
    prctl(PR_SET_NAME, "xclaw-guard", 0, 0, 0);
    watch(3);
    _exit(0);
}

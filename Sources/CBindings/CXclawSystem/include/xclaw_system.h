#ifndef XCLAW_SYSTEM_H
#define XCLAW_SYSTEM_H
// POSIX pieces Swift cannot import (GNU extensions and function-like macros), for XclawBase's Subprocess and
// the screen layer's check for a server that went away.
#include <spawn.h>
#include <stdint.h>

/// posix_spawn_file_actions_addclosefrom_np is a GNU extension Swift does not see: close every fd >= from in the child.
int xclaw_spawn_closefrom(posix_spawn_file_actions_t *actions, int from);

/// POSIX_SPAWN_SETSID (glibc 2.26+), which Swift does not import.
int xclaw_spawn_setsid_flag(void);

/// pipe2(O_CLOEXEC): both ends close-on-exec from the start, so a child another thread spawns never inherits them.
int xclaw_pipe_cloexec(int fds[2]);

/// WIFEXITED/WEXITSTATUS/WIFSIGNALED/WTERMSIG, which are macros: 1 and the code when `status` is an exit,
/// 2 and the signal when it is a death by signal, 0 otherwise.
int xclaw_wait_status(int status, int *value);

/// Whether our child `pid` has ended, without reaping it (waitid with WNOWAIT), so its pid (and the group it leads)
/// stays its own: 0 still running, 1 exited with `*value`, 2 killed by signal `*value`, -1 with errno on failure.
int xclaw_exit_unreaped(int pid, int *value);

/// 1 when the peer of the connected socket `fd` has closed it (POLLRDHUP/POLLHUP/POLLERR, a GNU extension Swift
/// does not see), 0 when it is open, whatever unread data is waiting; reads nothing.
int xclaw_peer_closed(int fd);

/// The uid of the process at the other end of the connected Unix socket `fd` (SO_PEERCRED, which needs
/// _GNU_SOURCE for `struct ucred`): 0 and `*uid` set on success, -1 with errno otherwise.
int xclaw_peer_uid(int fd, unsigned *uid);

/// Sends `length` bytes with up to 8 descriptors attached (SCM_RIGHTS, whose CMSG macros Swift cannot import);
/// returns what sendmsg returns.
int xclaw_send_with_fds(int fd, const void *buffer, unsigned long length, const int *fds, int count);

/// Receives up to `length` bytes and the descriptors that came with them (close-on-exec, at most `capacity`,
/// the rest closed) into `fds`, their number in `*count`; returns what recvmsg returns.
long xclaw_receive_with_fds(int fd, void *buffer, unsigned long length, int *fds, int capacity, int *count);

/// pidfd_open(2): a descriptor that names process `pid` for as long as it is held, whatever pid it had (close on
/// exec); -1 with errno when there is no such process.
int xclaw_pidfd_open(int pid);

/// pidfd_send_signal(2): `sig` (0: only check) to the process behind `pidfd`; -1 with ESRCH once it was reaped,
/// so a pid that changed hands is never signalled.
int xclaw_pidfd_signal(int pidfd, int sig);

/// socketpair(AF_UNIX, SOCK_SEQPACKET, close-on-exec): each send arrives as one message, and EOF when the peer dies.
int xclaw_seqpacket_pair(int fds[2]);

/// One message to the process guard's watcher: `op` 'P' (a process, its pidfd attached), 'G' (group `pgid`, its
/// leader's pidfd attached), 'C' (a clean-up command, argv NUL-separated in `payload`), 'F' (forget `id`), 'D' (done).
struct xclaw_guard_message {
    char op;
    uint32_t id;
    int32_t pgid;
    char payload[4096];
};

/// Sends one `xclaw_guard_message` (`length` bytes of payload, at most 4096) with `fd` attached unless it is -1;
/// 0 when it went whole.
int xclaw_guard_send(int sock, char op, uint32_t id, int32_t pgid, const void *payload, unsigned long length, int fd);

/// Forks the guard's watcher on `sock` (its end of a `xclaw_seqpacket_pair`) and returns its pid (-1: fork failed).
/// The watcher, in a session of its own with no other descriptor of ours, reads messages until 'D' (it exits) or EOF
/// (the owner died): then it runs the registered commands, SIGTERMs each target still the owner's (a process through
/// its pidfd; a group only while its leader is unreaped, then each member through a pidfd), and SIGKILLs what still
/// runs 2 s later.
int xclaw_guard_start(int sock);

/// memfd_create(name, MFD_CLOEXEC): an anonymous in-memory file, for state handed to the next image of this process
/// (never a path another process could open, never argv or the environment).
int xclaw_memfd(const char *name);

/// execve(path, argv, envp) with every descriptor but 0-2 and the `count` in `keep` closed on exec (close_range's
/// CLOSE_RANGE_CLOEXEC, else each one /proc/self/fd lists), and a signal mask of just the `held` signals in `hold`:
/// one that arrives during the exec stays pending for the new image (`xclaw_take_pending_signals`). Returns only
/// when the exec failed: -1 with errno, the signal mask put back and `keep` close-on-exec again (the others stay so).
int xclaw_reexec(const char *path, char *const argv[], char *const envp[], const int *keep, int count,
                 const int *hold, int held);

/// In the image an exec started: 1 when one of `signals` is pending (held blocked across the exec), which is then
/// discarded (its disposition set to SIG_IGN), 0 when none is; either way they are unblocked.
int xclaw_take_pending_signals(const int *signals, int count);

/// 1 when `fd` is a listening Unix stream socket (SO_DOMAIN, SO_TYPE, SO_ACCEPTCONN), 0 otherwise: what the next
/// image checks of the descriptor an environment variable names before it accepts on it.
int xclaw_is_listening_unix_stream(int fd);

#endif

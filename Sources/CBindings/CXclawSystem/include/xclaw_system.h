#ifndef XCLAW_SYSTEM_H
#define XCLAW_SYSTEM_H
// POSIX pieces Swift cannot import (GNU extensions and function-like macros), for XclawBase's Subprocess and
// the screen layer's check for a server that went away.
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np is a GNU extension Swift does not see: close every fd >= from in the child.
int xclaw_spawn_closefrom(posix_spawn_file_actions_t *actions, int from);

/// POSIX_SPAWN_SETSID (glibc 2.26+), which Swift does not import.
int xclaw_spawn_setsid_flag(void);

/// pipe2(O_CLOEXEC): both ends close-on-exec from the start, so a child another thread spawns never inherits them.
int xclaw_pipe_cloexec(int fds[2]);

/// WIFEXITED/WEXITSTATUS/WIFSIGNALED/WTERMSIG, which are macros: 1 and the code when `status` is an exit,
/// 2 and the signal when it is a death by signal, 0 otherwise.
int xclaw_wait_status(int status, int *value);

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

#endif

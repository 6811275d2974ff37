#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xclaw_system.h"

int xclaw_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int xclaw_spawn_setsid_flag(void) { return POSIX_SPAWN_SETSID; }

int xclaw_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int xclaw_wait_status(int status, int *value) {
    if (WIFEXITED(status)) { *value = WEXITSTATUS(status); return 1; }
    if (WIFSIGNALED(status)) { *value = WTERMSIG(status); return 2; }
    return 0;
}

int xclaw_exit_unreaped(int pid, int *value) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    if (info.si_pid == 0) return 0;
    *value = info.si_status;
    return info.si_code == CLD_EXITED ? 1 : 2;
}

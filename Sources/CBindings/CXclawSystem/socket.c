#define _GNU_SOURCE
#include <poll.h>
#include <sys/socket.h>
#include "xclaw_system.h"

int xclaw_peer_closed(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP, .revents = 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int xclaw_peer_uid(int fd, unsigned *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    return 0;
}

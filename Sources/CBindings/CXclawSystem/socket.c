#define _GNU_SOURCE
#include <poll.h>
#include "xclaw_system.h"

int xclaw_peer_closed(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP, .revents = 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

#define _GNU_SOURCE
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
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

int xclaw_send_with_fds(int fd, const void *buffer, unsigned long length, const int *fds, int count) {
    struct iovec vector = {.iov_base = (void *)buffer, .iov_len = length};
    char control[CMSG_SPACE(sizeof(int) * 8)] = {0};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (count > 8) return -1;
    if (count > 0) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    return (int)sendmsg(fd, &message, MSG_NOSIGNAL);
}

long xclaw_receive_with_fds(int fd, void *buffer, unsigned long length, int *fds, int capacity, int *count) {
    struct iovec vector = {.iov_base = buffer, .iov_len = length};
    char control[CMSG_SPACE(sizeof(int) * 8)];
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    *count = 0;
    long received = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (received < 0) return received;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&message); h != NULL; h = CMSG_NXTHDR(&message, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        const int *passed = (const int *)CMSG_DATA(h);
        for (int i = 0; i < n; i++) {
            if (*count < capacity) fds[(*count)++] = passed[i];
            else close(passed[i]);  /* more than asked for: not ours to keep */
        }
    }
    return received;
}

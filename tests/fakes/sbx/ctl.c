/* ctl: see ctl.h. */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "afile.h"
#include "clock.h"

static int fill_addr(struct sockaddr_un *a, const char *sock)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(sock) >= sizeof a->sun_path)
        return -1;
    memcpy(a->sun_path, sock, strlen(sock) + 1);
    return 0;
}

/* Reads up to a newline or EOF before the deadline. Returns the length, or
 * -1 on timeout or error. */
static int read_line(int fd, char *buf, size_t cap, int64_t deadline)
{
    size_t len = 0;
    while (len + 1 < cap) {
        int64_t left = deadline - clock_mono_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        ssize_t n = read(fd, buf + len, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || buf[len] == '\n')
            break;
        len++;
    }
    buf[len] = '\0';
    return (int)len;
}

err_code ctl_request(const char *sock, const char *line, char *reply, size_t cap, char *err)
{
    struct sockaddr_un a;
    if (fill_addr(&a, sock) != 0)
        return err_set(err, ERR_USAGE, "socket path too long: %s", sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return err_set(err, ERR_NETWORK, "socket: %s", strerror(errno));
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return err_set(err, ERR_NETWORK, "the sandbox daemon is not running");
    }
    char msg[CTL_LINE_MAX + 2];
    snprintf(msg, sizeof msg, "%s\n", line);
    int64_t deadline = clock_mono_ms() + CTL_WAIT_MS;
    int n = afile_write_all(fd, msg, strlen(msg)) == ERR_OK ? read_line(fd, reply, cap, deadline) : -1;
    close(fd);
    if (n < 0)
        return err_set(err, ERR_TIMEOUT, "the sandbox daemon did not answer \"%s\"", line);
    if (strncmp(reply, "error", 5) == 0)
        return err_set(err, ERR_PROTOCOL, "%s", reply[5] ? reply + 6 : "daemon error");
    return ERR_OK;
}

int ctl_alive(const char *sock, long *pid)
{
    char reply[CTL_LINE_MAX];
    if (ctl_request(sock, "ping", reply, sizeof reply, NULL) != ERR_OK ||
        strncmp(reply, "pong ", 5) != 0)
        return 0;
    if (pid)
        *pid = strtol(reply + 5, NULL, 10);
    return 1;
}

int ctl_listen(const char *sock, char *err)
{
    struct sockaddr_un a;
    if (fill_addr(&a, sock) != 0) {
        err_set(err, ERR_USAGE, "socket path too long: %s", sock);
        return -1;
    }
    unlink(sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
        err_set(err, ERR_IO, "cannot listen on %s: %s", sock, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

int ctl_accept(int lfd, char *line, size_t cap)
{
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (read_line(fd, line, cap, clock_mono_ms() + CTL_WAIT_MS) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void ctl_reply(int fd, const char *reply)
{
    char msg[CTL_LINE_MAX + 2];
    snprintf(msg, sizeof msg, "%s\n", reply);
    afile_write_all(fd, msg, strlen(msg));
    close(fd);
}

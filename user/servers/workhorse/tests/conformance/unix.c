#define _GNU_SOURCE
/* AF_UNIX sockets: socketpair (stream and datagram), shutdown, a peer that
 * closes, message boundaries and truncation, MSG_PEEK and MSG_DONTWAIT,
 * socket/bind/listen/accept/connect by path (a child as the client),
 * names (getsockname, getpeername, the socket file's type), the errors of
 * each, datagrams by address (sendto/recvfrom), abstract names, passing a
 * descriptor with SCM_RIGHTS, poll and epoll on sockets, and the ioctls of
 * any descriptor (FIONBIO, FIOCLEX, FIONCLEX, FIONREAD). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

static socklen_t addr(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strcpy(a->sun_path, path);
    return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

static void show_name(const char *what, struct sockaddr_un *a, socklen_t len)
{
    printf("%s: family %d, length %d, path '%s'\n", what, a->sun_family, (int)len,
           len > offsetof(struct sockaddr_un, sun_path) ? a->sun_path : "");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || chdir(argv[1]) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    char b[256];
    int sv[2];

    /* stream pair */
    show("socketpair stream", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    show("write one way", write(sv[0], "ping", 4));
    show("send the other", send(sv[1], "pong!", 5, 0));
    memset(b, 0, sizeof b);
    show("read", read(sv[1], b, sizeof b));
    printf("got '%s'\n", b);
    memset(b, 0, sizeof b);
    show("recv", recv(sv[0], b, sizeof b, 0));
    printf("got '%s'\n", b);
    show("recv with MSG_DONTWAIT, nothing there", recv(sv[0], b, sizeof b, MSG_DONTWAIT));
    send(sv[0], "abcdef", 6, 0);
    show("MSG_PEEK 3", recv(sv[1], b, 3, MSG_PEEK));
    show("then read 4", read(sv[1], b, 4));
    show("then the rest", read(sv[1], b, sizeof b));
    show("shutdown(SHUT_WR)", shutdown(sv[0], SHUT_WR));
    show("peer reads end of file", read(sv[1], b, sizeof b));
    show("write after SHUT_WR", write(sv[0], "x", 1));
    show("the other way still works", write(sv[1], "back", 4));
    show("read it", read(sv[0], b, sizeof b));
    show("shutdown with a bad how", shutdown(sv[0], 7));
    struct pollfd pf = {sv[0], POLLIN, 0};
    close(sv[1]);
    show("poll after the peer closed", poll(&pf, 1, 0));
    printf("revents has POLLIN %d POLLHUP %d\n", !!(pf.revents & POLLIN), !!(pf.revents & POLLHUP));
    show("read after the peer closed", read(sv[0], b, sizeof b));
    close(sv[0]);
    show("socketpair AF_INET", socketpair(AF_INET, SOCK_STREAM, 0, sv));

    /* datagram pair */
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    send(sv[0], "one", 3, 0);
    send(sv[0], "second", 6, 0);
    send(sv[0], "3", 1, 0);
    show("datagram 1", recv(sv[1], b, sizeof b, 0));
    struct iovec iov = {b, 3};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    show("datagram 2 into 3 bytes", recvmsg(sv[1], &mh, 0));
    printf("MSG_TRUNC set: %d\n", !!(mh.msg_flags & MSG_TRUNC));
    show("datagram 3", recv(sv[1], b, sizeof b, 0));
    show("nothing left (MSG_DONTWAIT)", recv(sv[1], b, sizeof b, MSG_DONTWAIT));
    show("empty datagram", send(sv[0], "", 0, 0));
    show("received as one", recv(sv[1], b, sizeof b, 0));
    close(sv[0]);
    close(sv[1]);

    /* by path, stream */
    int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    printf("socket with SOCK_CLOEXEC: close-on-exec %d\n", fcntl(srv, F_GETFD) & FD_CLOEXEC);
    struct sockaddr_un a, got;
    socklen_t len = addr(&a, "sock.s");
    unlink("sock.s");
    show("bind", bind(srv, (struct sockaddr *)&a, len));
    struct stat st;
    stat("sock.s", &st);
    printf("the socket file is a socket: %d\n", S_ISSOCK(st.st_mode));
    int other = socket(AF_UNIX, SOCK_STREAM, 0);
    show("bind another to the same path", bind(other, (struct sockaddr *)&a, len));
    show("connect before listen", connect(other, (struct sockaddr *)&a, len));
    close(other);
    show("listen", listen(srv, 4));
    len = sizeof got;
    show("getsockname", getsockname(srv, (struct sockaddr *)&got, &len));
    show_name("  its name", &got, len);
    fcntl(srv, F_SETFL, O_NONBLOCK);
    show("accept with nobody there (non-blocking)", accept(srv, NULL, NULL));
    fcntl(srv, F_SETFL, 0);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un to;
        socklen_t l = addr(&to, "sock.s");
        if (connect(s, (struct sockaddr *)&to, l) < 0)
            _exit(10);
        write(s, "hello server", 12);
        char r[64] = {0};
        int n = read(s, r, sizeof r - 1);
        _exit(n == 5 && strcmp(r, "hi cl") == 0 ? 0 : 11);
    }
    len = sizeof got;
    int conn = accept4(srv, (struct sockaddr *)&got, &len, SOCK_CLOEXEC);
    printf("accept4: %s; close-on-exec %d\n", conn >= 0 ? "ok" : strerror(errno), fcntl(conn, F_GETFD) & FD_CLOEXEC);
    show_name("  the client's name (unbound)", &got, len);
    memset(b, 0, sizeof b);
    show("read from the client", read(conn, b, sizeof b));
    printf("got '%s'\n", b);
    len = sizeof got;
    getpeername(conn, (struct sockaddr *)&got, &len);
    show_name("  getpeername", &got, len);
    len = sizeof got;
    getsockname(conn, (struct sockaddr *)&got, &len);
    show_name("  getsockname of the accepted", &got, len);
    write(conn, "hi cl", 5);
    int st2;
    waitpid(c, &st2, 0);
    printf("client exited %d\n", WEXITSTATUS(st2));
    show("read after the client ended", read(conn, b, sizeof b));
    close(conn);
    int type;
    len = sizeof type;
    getsockopt(srv, SOL_SOCKET, SO_TYPE, &type, &len);
    printf("SO_TYPE is SOCK_STREAM: %d\n", type == SOCK_STREAM);
    int err = -1;
    len = sizeof err;
    show("SO_ERROR", getsockopt(srv, SOL_SOCKET, SO_ERROR, &err, &len));
    printf("  value %d\n", err);
    close(srv);
    int s2 = socket(AF_UNIX, SOCK_STREAM, 0);
    show("connect after the server closed", connect(s2, (struct sockaddr *)&a, addr(&a, "sock.s")));
    show("connect to a missing path", connect(s2, (struct sockaddr *)&a, addr(&a, "nosuch.s")));
    close(open("plain.txt", O_CREAT | O_WRONLY, 0644));
    show("connect to a regular file", connect(s2, (struct sockaddr *)&a, addr(&a, "plain.txt")));
    show("read on an unconnected stream socket", read(s2, b, 1));
    show("write on it", write(s2, "x", 1));
    show("listen on a datagram socket", listen(socket(AF_UNIX, SOCK_DGRAM, 0), 1));
    show("socket AF_UNIX type 99", socket(AF_UNIX, 99, 0));
    show("getsockopt on a pipe", getsockopt(1 + 100, SOL_SOCKET, SO_TYPE, &type, &len));
    int pp[2];
    pipe(pp);
    show("bind on a pipe", bind(pp[0], (struct sockaddr *)&a, len));
    close(s2);
    unlink("sock.s");
    unlink("plain.txt");

    /* by path, datagram */
    int d1 = socket(AF_UNIX, SOCK_DGRAM, 0), d2 = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a1, a2;
    socklen_t l1 = addr(&a1, "d1.s"), l2 = addr(&a2, "d2.s");
    unlink("d1.s");
    unlink("d2.s");
    bind(d1, (struct sockaddr *)&a1, l1);
    bind(d2, (struct sockaddr *)&a2, l2);
    show("sendto d2", sendto(d1, "to two", 6, 0, (struct sockaddr *)&a2, l2));
    memset(b, 0, sizeof b);
    len = sizeof got;
    show("recvfrom", recvfrom(d2, b, sizeof b, 0, (struct sockaddr *)&got, &len));
    printf("got '%s'\n", b);
    show_name("  from", &got, len);
    show("send without an address", send(d1, "x", 1, 0));
    show("connect d1 to d2", connect(d1, (struct sockaddr *)&a2, l2));
    show("send now", send(d1, "connected", 9, 0));
    show("recv", recv(d2, b, sizeof b, 0));
    show("sendto a missing path", sendto(d1, "x", 1, 0, (struct sockaddr *)&a, addr(&a, "gone.s")));
    close(d1);
    close(d2);
    unlink("d1.s");
    unlink("d2.s");

    /* abstract names */
    int ab = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un an = {.sun_family = AF_UNIX};
    memcpy(an.sun_path, "\0keep-test", 10);
    socklen_t anl = offsetof(struct sockaddr_un, sun_path) + 10;
    show("bind an abstract name", bind(ab, (struct sockaddr *)&an, anl));
    int ac = socket(AF_UNIX, SOCK_DGRAM, 0);
    show("sendto it", sendto(ac, "abstract", 8, 0, (struct sockaddr *)&an, anl));
    show("recv", recv(ab, b, sizeof b, 0));
    len = sizeof got;
    getsockname(ab, (struct sockaddr *)&got, &len);
    /* Only `len` bytes are written: no NUL after an abstract name. */
    printf("getsockname length %d, name '%.*s'\n", (int)len, (int)len - 3, got.sun_path + 1);
    close(ab);
    close(ac);

    /* SCM_RIGHTS */
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int p[2];
    pipe(p);
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec v = {"f", 1};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &p[0], sizeof(int));
    show("sendmsg with a pipe's read end", sendmsg(sv[0], &m, 0));
    close(p[0]);
    char rb[8];
    char rc[CMSG_SPACE(sizeof(int))];
    struct iovec rv = {rb, sizeof rb};
    struct msghdr rm = {.msg_iov = &rv, .msg_iovlen = 1, .msg_control = rc, .msg_controllen = sizeof rc};
    show("recvmsg", recvmsg(sv[1], &rm, 0));
    struct cmsghdr *rcm = CMSG_FIRSTHDR(&rm);
    int passed = -1;
    if (rcm && rcm->cmsg_type == SCM_RIGHTS)
        memcpy(&passed, CMSG_DATA(rcm), sizeof(int));
    printf("a descriptor came: %d\n", passed >= 0);
    write(p[1], "through", 7);
    memset(b, 0, sizeof b);
    show("read through the passed descriptor", read(passed, b, sizeof b));
    printf("got '%s'\n", b);

    /* epoll on a socket */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7}, out[4];
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
    show("epoll, nothing sent", epoll_wait(ep, out, 4, 0));
    write(sv[0], "e", 1);
    int n = epoll_wait(ep, out, 4, 1000);
    printf("epoll after a send: %d, data %llu, events %#x\n", n, (unsigned long long)out[0].data.u64, out[0].events);
    ev.events = EPOLLOUT;
    epoll_ctl(ep, EPOLL_CTL_MOD, sv[1], &ev);
    n = epoll_wait(ep, out, 4, 0);
    printf("EPOLLOUT: %d, events %#x\n", n, out[0].events);

    /* the descriptor ioctls (Python's socket.setblocking uses FIONBIO) */
    int io[2], on = 1, avail = -1;
    socketpair(AF_UNIX, SOCK_STREAM, 0, io);
    show("FIONBIO on", ioctl(io[0], FIONBIO, &on));
    printf("O_NONBLOCK set: %d\n", (fcntl(io[0], F_GETFL) & O_NONBLOCK) != 0);
    show("recv, nothing there", recv(io[0], b, sizeof b, 0));
    on = 0;
    show("FIONBIO off", ioctl(io[0], FIONBIO, &on));
    printf("O_NONBLOCK set: %d\n", (fcntl(io[0], F_GETFL) & O_NONBLOCK) != 0);
    show("FIOCLEX", ioctl(io[0], FIOCLEX));
    printf("FD_CLOEXEC: %d\n", fcntl(io[0], F_GETFD));
    show("FIONCLEX", ioctl(io[0], FIONCLEX));
    printf("FD_CLOEXEC: %d\n", fcntl(io[0], F_GETFD));
    int q[2];
    pipe(q);
    write(q[1], "12345", 5);
    show("FIONREAD of a pipe", ioctl(q[0], FIONREAD, &avail));
    printf("bytes waiting: %d\n", avail);
    show("FIONBIO on a closed descriptor", ioctl(99, FIONBIO, &on));
    show("FIONBIO with a bad pointer", ioctl(io[0], FIONBIO, (int *)8));
    show("TCGETS on a socket", ioctl(io[0], TCGETS, b));
    return 0;
}

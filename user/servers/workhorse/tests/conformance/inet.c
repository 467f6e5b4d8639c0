#define _GNU_SOURCE
/* AF_INET sockets over 127.0.0.1: TCP between a server and forked
 * clients (names, 200,000 bytes with a checksum, half close, three clients
 * at once), socket options, non-blocking accept and connect with poll and
 * SO_ERROR, a refused connect (blocking and not), a peer that closed
 * (EPIPE, SIGPIPE), epoll on a connection, UDP (ephemeral ports, echo by a
 * child, MSG_PEEK, truncation, connected sockets), and the errors of
 * each.  Ports are ephemeral (bind to port 0) and never printed: the host
 * runs this beside everything else. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

static struct sockaddr_in loop_addr(unsigned short port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static unsigned short port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return 0;
    return ntohs(a.sin_port);
}

static void show_name(const char *what, struct sockaddr_in *a, socklen_t len)
{
    printf("%s: family %d, length %d, address %s, port %s\n", what, a->sin_family, (int)len,
           inet_ntoa(a->sin_addr), a->sin_port ? "set" : "0");
}

static int client(unsigned short port)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loop_addr(port);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
        return -1;
    return c;
}

static int read_full(int fd, char *b, int n)
{
    int done = 0;
    while (done < n) {
        int r = read(fd, b + done, n - done);
        if (r <= 0)
            return done;
        done += r;
    }
    return done;
}

static int write_full(int fd, const char *b, int n)
{
    int done = 0;
    while (done < n) {
        int r = write(fd, b + done, n - done);
        if (r <= 0)
            return done;
        done += r;
    }
    return done;
}

static int geti(int fd, int level, int opt)
{
    int v = -1;
    socklen_t len = sizeof v;
    if (getsockopt(fd, level, opt, &v, &len) < 0)
        return -errno;
    return v;
}

#define BULK 200000

/* The forked client of the first exchange; its checks go to its exit
 * status (a bit each), so that only the parent prints. */
static int bulk_client(unsigned short port)
{
    int bad = 0;
    int c = client(port);
    if (c < 0)
        return 1;
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getpeername(c, (struct sockaddr *)&a, &len) < 0 || ntohs(a.sin_port) != port ||
        a.sin_addr.s_addr != htonl(INADDR_LOOPBACK))
        bad |= 2;
    if (write(c, "hello", 5) != 5)
        bad |= 4;
    char b[64];
    if (read_full(c, b, 5) != 5 || memcmp(b, "HELLO", 5) != 0)
        bad |= 8;
    static char data[BULK];
    for (int i = 0; i < BULK; i++)
        data[i] = (char)(i * 7 + i / 251);
    if (write_full(c, data, BULK) != BULK)
        bad |= 16;
    if (shutdown(c, SHUT_WR) < 0)
        bad |= 32;
    memset(b, 0, sizeof b);
    int n = read_full(c, b, sizeof b - 1);
    unsigned long sum = 0;
    for (int i = 0; i < BULK; i++)
        sum = sum * 31 + (unsigned char)data[i];
    char want[64];
    snprintf(want, sizeof want, "%d %lu", BULK, sum);
    if (n != (int)strlen(want) || strcmp(b, want) != 0)
        bad |= 64;
    close(c);
    return bad;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    char b[256];
    int st;

    /* socket's arguments */
    show("socket TCP with IPPROTO_UDP", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
    show("socket with unknown flags", socket(AF_INET, SOCK_STREAM | 0x100000, 0));

    /* a server, its name and options */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    show("setsockopt SO_REUSEADDR", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    printf("SO_REUSEADDR %d SO_TYPE %d SO_ACCEPTCONN %d SO_ERROR %d\n", geti(s, SOL_SOCKET, SO_REUSEADDR),
           geti(s, SOL_SOCKET, SO_TYPE), geti(s, SOL_SOCKET, SO_ACCEPTCONN), geti(s, SOL_SOCKET, SO_ERROR));
    struct sockaddr_in a = loop_addr(0), got;
    socklen_t len = sizeof got;
    show("getsockname before bind", getsockname(s, (struct sockaddr *)&got, &len));
    show_name("  name", &got, len);
    show("bind 127.0.0.1 port 0", bind(s, (struct sockaddr *)&a, sizeof a));
    show("bind again", bind(s, (struct sockaddr *)&a, sizeof a));
    len = sizeof got;
    show("getsockname", getsockname(s, (struct sockaddr *)&got, &len));
    show_name("  name", &got, len);
    unsigned short port = ntohs(got.sin_port);
    show("listen", listen(s, 5));
    printf("SO_ACCEPTCONN %d\n", geti(s, SOL_SOCKET, SO_ACCEPTCONN));
    int s2 = socket(AF_INET, SOCK_STREAM, 0);
    a = loop_addr(port);
    show("another bind to the same port", bind(s2, (struct sockaddr *)&a, sizeof a));
    a.sin_addr.s_addr = htonl(0x0a010203);
    show("bind to an address not ours", bind(s2, (struct sockaddr *)&a, sizeof a));
    a.sin_family = AF_INET6;
    show("bind with another family", bind(s2, (struct sockaddr *)&a, sizeof a));
    show("bind with a short address", bind(s2, (struct sockaddr *)&a, 4));
    show("getpeername of a socket not connected", getpeername(s2, (struct sockaddr *)&got, &len));
    show("recv on a socket not connected", recv(s2, b, 1, 0));
    show("send on a socket not connected", send(s2, "x", 1, MSG_NOSIGNAL));
    show("shutdown of a socket not connected", shutdown(s2, SHUT_RDWR));
    show("accept on a socket not listening", accept(s2, NULL, NULL));
    close(s2);

    /* a client in a child: hello, 200,000 bytes, half close */
    pid_t pid = fork();
    if (pid == 0)
        _exit(bulk_client(port));
    struct sockaddr_in peer;
    socklen_t plen = sizeof peer;
    int c = accept(s, (struct sockaddr *)&peer, &plen);
    show("accept", c >= 0 ? 0 : -1);
    show_name("  peer", &peer, plen);
    struct sockaddr_in p2;
    socklen_t p2len = sizeof p2;
    getpeername(c, (struct sockaddr *)&p2, &p2len);
    printf("getpeername is accept's: %d\n", p2.sin_port == peer.sin_port && p2.sin_addr.s_addr == peer.sin_addr.s_addr);
    len = sizeof got;
    getsockname(c, (struct sockaddr *)&got, &len);
    printf("the connection's own port is the server's: %d\n", ntohs(got.sin_port) == port);
    show("read hello", read_full(c, b, 5));
    show("write HELLO", write(c, "HELLO", 5));
    unsigned long sum = 0;
    long total = 0;
    int n;
    while ((n = read(c, b, sizeof b)) > 0) {
        for (int i = 0; i < n; i++)
            sum = sum * 31 + (unsigned char)b[i];
        total += n;
    }
    show("read at end", n);
    printf("received %ld bytes\n", total);
    n = snprintf(b, sizeof b, "%ld %lu", total, sum);
    show("write the checksum back", write(c, b, n));
    close(c);
    waitpid(pid, &st, 0);
    printf("client: exit status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    /* three clients at once */
    for (int i = 0; i < 3; i++) {
        if (fork() == 0) {
            int k = client(port);
            char id = 'a' + i;
            write(k, &id, 1);
            read(k, &id, 1); /* the server's close: end of file */
            _exit(0);
        }
    }
    int seen[3] = {0};
    for (int i = 0; i < 3; i++) {
        int k = accept(s, NULL, NULL);
        char id = 0;
        if (k >= 0 && read(k, &id, 1) == 1 && id >= 'a' && id <= 'c')
            seen[id - 'a']++;
        close(k);
    }
    for (int i = 0; i < 3; i++)
        wait(&st);
    printf("three clients seen: %d %d %d\n", seen[0], seen[1], seen[2]);

    /* non-blocking accept and connect */
    int flags = SOCK_NONBLOCK;
    int ns = socket(AF_INET, SOCK_STREAM | flags, 0);
    a = loop_addr(0);
    bind(ns, (struct sockaddr *)&a, sizeof a);
    listen(ns, 4);
    unsigned short nport = port_of(ns);
    show("accept with nothing pending (non-blocking)", accept(ns, NULL, NULL));
    int nc = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    a = loop_addr(nport);
    show("non-blocking connect", connect(nc, (struct sockaddr *)&a, sizeof a));
    struct pollfd pf = {nc, POLLOUT, 0};
    show("poll for POLLOUT", poll(&pf, 1, 5000));
    printf("revents POLLOUT %d POLLERR %d\n", !!(pf.revents & POLLOUT), !!(pf.revents & POLLERR));
    printf("SO_ERROR %d\n", geti(nc, SOL_SOCKET, SO_ERROR));
    show("connect again", connect(nc, (struct sockaddr *)&a, sizeof a));
    struct pollfd lp = {ns, POLLIN, 0};
    show("poll the listener", poll(&lp, 1, 5000));
    int na = accept4(ns, NULL, NULL, SOCK_CLOEXEC);
    show("accept4", na >= 0 ? 0 : -1);
    show("read with nothing there (non-blocking)", read(nc, b, 1));
    struct pollfd rp = {na, POLLIN, 0};
    show("poll with nothing there", poll(&rp, 1, 0));
    show("send", send(nc, "x", 1, 0));
    show("poll", poll(&rp, 1, 5000));
    printf("revents POLLIN %d\n", !!(rp.revents & POLLIN));
    show("TCP_NODELAY on", setsockopt(na, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    printf("TCP_NODELAY %d\n", geti(na, IPPROTO_TCP, TCP_NODELAY));
    show("MSG_PEEK", recv(na, b, sizeof b, MSG_PEEK));
    show("recv", recv(na, b, sizeof b, 0));

    /* epoll on a connection */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7}, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, na, &ev);
    show("epoll_wait, nothing there", epoll_wait(ep, out, 2, 0));
    write(nc, "yz", 2);
    show("epoll_wait after a write", epoll_wait(ep, out, 2, 5000));
    printf("event %u, EPOLLIN %d\n", out[0].data.u32, !!(out[0].events & EPOLLIN));
    show("read", read(na, b, sizeof b));
    close(ep);

    /* half close, then the peer goes */
    show("shutdown(SHUT_WR)", shutdown(nc, SHUT_WR));
    show("peer reads end of file", read(na, b, sizeof b));
    show("write after SHUT_WR", write(nc, "x", 1));
    show("the other way still works", write(na, "back", 4));
    pf = (struct pollfd){nc, POLLIN, 0};
    poll(&pf, 1, 5000);
    show("read it", read(nc, b, sizeof b));
    close(na);
    pf = (struct pollfd){nc, POLLIN, 0};
    show("poll after the peer closed", poll(&pf, 1, 5000));
    printf("revents POLLIN %d POLLHUP %d\n", !!(pf.revents & POLLIN), !!(pf.revents & POLLHUP));
    show("read at end of file", read(nc, b, sizeof b));
    close(nc);
    close(ns);

    /* writing to a peer that closed: EPIPE, SIGPIPE */
    c = client(port);
    int k = accept(s, NULL, NULL);
    close(k);
    show("read after the peer closed", read(c, b, sizeof b));
    show("first write after it closed", write(c, "abc", 3));
    usleep(20000);
    show("second write", write(c, "abc", 3));
    close(c);
    pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        int c2 = client(port);
        sleep(1);
        write(c2, "abc", 3);
        usleep(20000);
        write(c2, "abc", 3);
        _exit(0);
    }
    k = accept(s, NULL, NULL);
    close(k);
    waitpid(pid, &st, 0);
    printf("writer killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);

    /* refused connections: a bound port nobody listens on */
    int r = socket(AF_INET, SOCK_STREAM, 0);
    a = loop_addr(0);
    bind(r, (struct sockaddr *)&a, sizeof a);
    unsigned short closed = port_of(r);
    show("connect to a port nobody listens on", client(closed));
    nc = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    a = loop_addr(closed);
    show("non-blocking", connect(nc, (struct sockaddr *)&a, sizeof a));
    pf = (struct pollfd){nc, POLLOUT, 0};
    show("poll", poll(&pf, 1, 5000));
    printf("revents POLLOUT %d POLLERR %d POLLHUP %d\n", !!(pf.revents & POLLOUT), !!(pf.revents & POLLERR),
           !!(pf.revents & POLLHUP));
    int e = geti(nc, SOL_SOCKET, SO_ERROR);
    printf("SO_ERROR %s, then %d\n", strerror(e), geti(nc, SOL_SOCKET, SO_ERROR));
    close(nc);
    close(r);
    close(s);
    show("connect after the server closed", client(port));

    /* UDP */
    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    a = loop_addr(0);
    show("UDP bind", bind(u1, (struct sockaddr *)&a, sizeof a));
    unsigned short up = port_of(u1);
    printf("UDP unbound socket's port %d\n", port_of(u2));
    a = loop_addr(up);
    show("sendto from an unbound socket", sendto(u2, "ping", 4, 0, (struct sockaddr *)&a, sizeof a));
    printf("it got a port: %d\n", port_of(u2) != 0);
    pf = (struct pollfd){u1, POLLIN, 0};
    show("poll", poll(&pf, 1, 5000));
    len = sizeof got;
    memset(b, 0, sizeof b);
    show("recvfrom", recvfrom(u1, b, sizeof b, 0, (struct sockaddr *)&got, &len));
    printf("got '%s' from the sender's port: %d\n", b, ntohs(got.sin_port) == port_of(u2));
    show_name("  from", &got, len);
    show("sendto back", sendto(u1, "pong", 4, 0, (struct sockaddr *)&got, len));
    memset(b, 0, sizeof b);
    show("recv", recv(u2, b, sizeof b, 0));
    printf("got '%s'\n", b);
    show("recv with nothing there", recv(u2, b, sizeof b, MSG_DONTWAIT));
    show("send without an address", send(u2, "x", 1, 0));
    sendto(u2, "0123456789", 10, 0, (struct sockaddr *)&a, sizeof a);
    sendto(u2, "second", 6, 0, (struct sockaddr *)&a, sizeof a);
    show("MSG_PEEK", recv(u1, b, 4, MSG_PEEK));
    show("MSG_TRUNC: the whole length", recv(u1, b, 4, MSG_PEEK | MSG_TRUNC));
    struct iovec iov = {b, 4};
    struct msghdr mh = {.msg_name = &got, .msg_namelen = sizeof got, .msg_iov = &iov, .msg_iovlen = 1};
    show("recvmsg into 4 bytes", recvmsg(u1, &mh, 0));
    printf("MSG_TRUNC %d, '%.4s'\n", !!(mh.msg_flags & MSG_TRUNC), b);
    memset(b, 0, sizeof b);
    show("the next datagram whole", recv(u1, b, sizeof b, 0));
    printf("got '%s'\n", b);
    show("connect UDP", connect(u2, (struct sockaddr *)&a, sizeof a));
    len = sizeof got;
    show("getpeername", getpeername(u2, (struct sockaddr *)&got, &len));
    printf("  the server's port: %d\n", ntohs(got.sin_port) == up);
    len = sizeof got;
    getsockname(u2, (struct sockaddr *)&got, &len);
    show_name("getsockname", &got, len);
    show("send connected", send(u2, "conn", 4, 0));
    show("recv", recv(u1, b, sizeof b, 0));
    int u3 = socket(AF_INET, SOCK_DGRAM, 0);
    a = loop_addr(port_of(u2));
    sendto(u3, "stranger", 8, 0, (struct sockaddr *)&a, sizeof a);
    a = loop_addr(up);
    len = sizeof got;
    getsockname(u2, (struct sockaddr *)&got, &len);
    sendto(u1, "friend", 6, 0, (struct sockaddr *)&got, len);
    memset(b, 0, sizeof b);
    show("a connected socket takes its peer's datagram only", recv(u2, b, sizeof b, 0));
    printf("got '%s'\n", b);
    show("listen on UDP", listen(u1, 1));
    show("accept on UDP", accept(u1, NULL, NULL));
    close(u3);
    close(u2);

    /* a UDP echo server in a child */
    pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 3; i++) {
            char m[64];
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            int n = recvfrom(u1, m, sizeof m, 0, (struct sockaddr *)&from, &fl);
            for (int j = 0; j < n; j++)
                m[j] = m[j] >= 'a' && m[j] <= 'z' ? m[j] - 32 : m[j];
            sendto(u1, m, n, 0, (struct sockaddr *)&from, fl);
        }
        _exit(0);
    }
    int uc = socket(AF_INET, SOCK_DGRAM, 0);
    const char *words[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        sendto(uc, words[i], strlen(words[i]), 0, (struct sockaddr *)&a, sizeof a);
        memset(b, 0, sizeof b);
        n = recv(uc, b, sizeof b, 0);
        printf("echo: %d '%s'\n", n, b);
    }
    waitpid(pid, &st, 0);
    printf("echo server: exit status %d\n", WEXITSTATUS(st));
    close(uc);
    close(u1);
    return 0;
}

/* tests/support/redisd: spawn, probe and stop a private redis-server. */
#include "redisd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct redisd {
    pid_t pid;
    char dir[64];
    char sock[96];
    char addr[140];
    char conf[128];
};

static void nap_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* One PING over a raw socket: 1 when +PONG came back. */
static int ping(const char *sock)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    int ok = 0;
    struct timeval tv = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && write(fd, "PING\r\n", 6) == 6) {
        char buf[16] = { 0 };
        ssize_t n = read(fd, buf, sizeof buf - 1);
        ok = n >= 5 && memcmp(buf, "+PONG", 5) == 0;
    }
    close(fd);
    return ok;
}

static int spawn(redisd *r)
{
    const char *bin = getenv("CRAWLD_REDIS_SERVER");
    if (bin == NULL || *bin == '\0')
        bin = "redis-server";
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* its log is redis.log; keep the test's own pipes free of it */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            close(null);
        }
        execlp(bin, bin, r->conf, (char *)NULL);
        fprintf(stderr, "redisd: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 1000; i++) {
        if (ping(r->sock))
            return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            r->pid = 0;
            fprintf(stderr, "redisd: %s exited at start (see %s/redis.log)\n", bin, r->dir);
            return -1;
        }
        nap_ms(10);
    }
    fprintf(stderr, "redisd: %s did not answer PING within 10 s\n", bin);
    return -1;
}

redisd *redisd_start(void)
{
    redisd *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    snprintf(r->dir, sizeof r->dir, "/tmp/crawld-redis-XXXXXX");
    if (mkdtemp(r->dir) == NULL) {
        free(r);
        return NULL;
    }
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    snprintf(r->addr, sizeof r->addr, "unix:%s", r->sock);
    snprintf(r->conf, sizeof r->conf, "%s/redis.conf", r->dir);
    FILE *f = fopen(r->conf, "w");
    if (f == NULL) {
        rmdir(r->dir);
        free(r);
        return NULL;
    }
    fprintf(f,
            "port 0\nunixsocket %s\nunixsocketperm 700\ndir %s\nlogfile %s/redis.log\n"
            "daemonize no\nsave \"\"\nappendonly yes\nappendfsync always\n",
            r->sock, r->dir, r->dir);
    fclose(f);
    if (spawn(r) < 0) {
        redisd_stop(r);
        return NULL;
    }
    return r;
}

const char *redisd_addr(const redisd *r)
{
    return r->addr;
}

pid_t redisd_pid(const redisd *r)
{
    return r->pid;
}

int redisd_signal(redisd *r, int sig)
{
    if (r->pid <= 0 || kill(r->pid, sig) < 0)
        return -1;
    if (sig == SIGKILL || sig == SIGTERM) {
        int st;
        waitpid(r->pid, &st, 0);
        r->pid = 0;
    }
    return 0;
}

int redisd_restart(redisd *r)
{
    if (r->pid > 0)
        return -1;
    unlink(r->sock);
    return spawn(r);
}

void redisd_stop(redisd *r)
{
    if (r == NULL)
        return;
    if (r->pid > 0) {
        kill(r->pid, SIGCONT);
        kill(r->pid, SIGTERM);
        int st;
        for (int i = 0; i < 500 && waitpid(r->pid, &st, WNOHANG) != r->pid; i++)
            nap_ms(10);
        if (kill(r->pid, 0) == 0) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, &st, 0);
        }
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "redisd: could not remove %s\n", r->dir);
    free(r);
}

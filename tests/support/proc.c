/* tests/support/proc: spawn a child with pipes, poll them, collect output. */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *proc_crawld_path(void)
{
    const char *p = getenv("CRAWLD_BIN");
    return p && *p ? p : "bin/crawld";
}

int proc_run(const char *const argv[], const char *stdin_data, size_t stdin_len, cr_buf *out,
             cr_buf *err)
{
    int in[2], o[2], e[2];
    if (pipe(in) < 0 || pipe(o) < 0 || pipe(e) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(in[0]); close(in[1]); close(o[0]); close(o[1]); close(e[0]); close(e[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(o[1]);
    close(e[1]);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    if (stdin_data == NULL || stdin_len == 0) {
        close(in[1]);
        in[1] = -1;
    }
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0 || in[1] >= 0) {
        struct pollfd p[3] = { { o[0], POLLIN, 0 }, { e[0], POLLIN, 0 }, { in[1], POLLOUT, 0 } };
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(p[i].fd);
                if (i == 0)
                    o[0] = -1;
                else
                    e[0] = -1;
                open_fds--;
                continue;
            }
            cr_buf *dst = i == 0 ? out : err;
            if (dst)
                cr_buf_append(dst, buf, (size_t)n);
        }
        if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in[1], stdin_data + sent, stdin_len - sent);
            if (n > 0)
                sent += (size_t)n;
            if (n < 0 && errno != EAGAIN) 
                sent = stdin_len;
            if (sent >= stdin_len) {
                close(in[1]);
                in[1] = -1;
            }
        }
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

int proc_crawld(const char *const args[], const char *stdin_data, cr_buf *out, cr_buf *err)
{
    const char *argv[64];
    size_t n = 0;
    argv[n++] = proc_crawld_path();
    for (size_t i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return proc_run(argv, stdin_data, stdin_data ? strlen(stdin_data) : 0, out, err);
}

/* Paths proc_temp_file made, removed on reuse of their slot and at exit,
 * so a test run leaves nothing in /tmp. */
static char temp_paths[8][64];
static pid_t temp_owner; /* a forked child that calls exit() leaves them */

static void temp_files_remove(void)
{
    if (getpid() != temp_owner)
        return;
    for (int i = 0; i < 8; i++)
        if (temp_paths[i][0] != '\0')
            unlink(temp_paths[i]);
}

const char *proc_temp_file(int slot, const char *data, size_t len)
{
    static int registered;
    if (slot < 0 || slot >= 8)
        return NULL;
    if (!registered) {
        temp_owner = getpid();
        registered = atexit(temp_files_remove) == 0;
    }
    char *path = temp_paths[slot];
    if (path[0] != '\0')
        unlink(path);
    snprintf(path, sizeof temp_paths[slot], "/tmp/crawld-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        path[0] = '\0';
        return NULL;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n <= 0) {
            close(fd);
            unlink(path);
            path[0] = '\0';
            return NULL;
        }
        off += (size_t)n;
    }
    close(fd);
    return path;
}

/* tests/support/redisd: a redis-server child for one test, on a Unix
 * socket in its own temp folder, with appendonly yes and appendfsync
 * always (as crawld asks of a production Redis). The binary is
 * $CRAWLD_REDIS_SERVER, else redis-server on PATH (Debian's). */
#ifndef CRAWLD_TEST_REDISD_H
#define CRAWLD_TEST_REDISD_H

#include <sys/types.h>

typedef struct redisd redisd;

/* Starts one and waits (up to 10 s) until it answers PING. NULL on failure,
 * with the reason on stderr (and its log). Stop with redisd_stop(). */
redisd *redisd_start(void);
/* "unix:/tmp/.../redis.sock", for cluster.redis. */
const char *redisd_addr(const redisd *r);
pid_t redisd_pid(const redisd *r);
/* Sends sig to the server; after SIGKILL or SIGTERM also reaps it. 0 or -1. */
int redisd_signal(redisd *r, int sig);
/* Starts the server again on the same folder (it reloads its append-only
 * file) after redisd_signal(SIGKILL or SIGTERM). 0, or -1. */
int redisd_restart(redisd *r);
/* Stops the server (SIGTERM, then SIGKILL after 5 s), removes the folder. */
void redisd_stop(redisd *r);

#endif

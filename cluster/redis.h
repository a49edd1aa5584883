/* cluster/redis: the one file that speaks to Redis (the hiredis fence).
 *
 * A redis_conn is one blocking connection with a connect timeout and a
 * command timeout (callers set it above any BLOCK they send). Replies come
 * back as redis_reply, our own read-only view of a RESP2 reply; nothing of
 * hiredis leaks through this header. A connection that failed (I/O error,
 * timeout, protocol error) is dead: every later call fails with -EPIPE
 * until redis_reconnect succeeds. Not thread-safe: one owner thread. */
#ifndef CRAWLD_CLUSTER_REDIS_H
#define CRAWLD_CLUSTER_REDIS_H

#include <stddef.h>
#include <stdint.h>

typedef struct redis_conn redis_conn;
typedef struct redis_reply redis_reply;

typedef enum redis_type {
    REDIS_T_NIL, REDIS_T_INT, REDIS_T_STR, REDIS_T_STATUS, REDIS_T_ERROR, REDIS_T_ARRAY
} redis_type;

/* Connects to addr ("unix:/PATH" or "tcp:HOST:PORT", as config/ checks);
 * timeout_ms bounds the connect and every command. Returns 0 and *out, or
 * a negative errno with the reason in err (the address and what failed).
 * Caller owns *out; free with redis_free(). */
int redis_open(const char *addr, int timeout_ms, redis_conn **out /* OUT */, char *err,
               size_t errlen);
void redis_free(redis_conn *c);
/* Drops the connection and connects again. 0, or negative errno (err set). */
int redis_reconnect(redis_conn *c, char *err, size_t errlen);
/* 1 while the connection is usable. */
int redis_alive(const redis_conn *c);
/* The last error on c (empty when none). Valid until the next call on c. */
const char *redis_error(const redis_conn *c);

/* Sends one command (argv[i] of lens[i] bytes; lens NULL: C strings) and
 * waits for its reply. 0 and *out (caller owns; redis_reply_free), or
 * -EPIPE when the connection failed. A Redis error reply is returned as a
 * reply of type REDIS_T_ERROR, not as a failure. */
int redis_cmdv(redis_conn *c, int argc, const char *const *argv, const size_t *lens,
               redis_reply **out /* OUT */);
/* redis_cmdv with C strings, the list ending with NULL. */
int redis_cmd(redis_conn *c, redis_reply **out /* OUT */, const char *arg0, ...)
    __attribute__((sentinel));

/* Pipelining: queue commands, then read their replies in order. */
int redis_append(redis_conn *c, int argc, const char *const *argv, const size_t *lens);
int redis_read(redis_conn *c, redis_reply **out /* OUT */);

/* Reply accessors. Children of an array are owned by it (borrowed). */
redis_type redis_reply_type(const redis_reply *r);
long long redis_reply_int(const redis_reply *r);
/* STR, STATUS, ERROR: the bytes (NUL-terminated) and *len; others: "". */
const char *redis_reply_str(const redis_reply *r, size_t *len /* OUT, may be NULL */);
size_t redis_reply_count(const redis_reply *r);
const redis_reply *redis_reply_at(const redis_reply *r, size_t i);
void redis_reply_free(redis_reply *r);

#endif

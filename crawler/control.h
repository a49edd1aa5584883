/* crawler/control: the control API, on libmicrohttpd, JSON by jansson.
 *
 *   GET  /metrics      Prometheus text exposition
 *   GET  /v1/status    the crawl's figures as JSON
 *   POST /v1/seeds     {"urls": [...]}: queue seeds
 *   POST /v1/dedup     {"urls": [...]}: which are new (crawld as another
 *                      crawler's duplicate filter)
 *   POST /v1/pause, /v1/resume, /v1/shutdown
 *
 * It listens where control.listen says: "unix" (the default) is a Unix
 * socket CONTROL_SOCKET_NAME in the state folder, so every crawl on a
 * machine has its own listener and `crawld status --state DIR` finds it
 * (the folder's mode, 0700, keeps other users out); "unix:PATH" a socket
 * at PATH (relative to the state folder); ADDRESS:PORT a TCP port, where a
 * port already taken is an error that says so; "" no API. A token is
 * required when it listens on a TCP address other than loopback; when one
 * is set, every request must carry "Authorization: Bearer TOKEN" (compared
 * in constant time). Connections that send no request line within
 * control.request_timeout_ms are closed before they take a slot, and one
 * client address cannot crowd the others out (see control.c). Bodies over
 * control.max_body_bytes get 413; malformed requests 4xx with
 * {"error": "..."}. Requests run on libmicrohttpd's own thread. */
#ifndef CRAWLD_CONTROL_H
#define CRAWLD_CONTROL_H

#include <stddef.h>

#include "config/config.h"
#include "crawler/crawl.h"

typedef struct control control;

#define CONTROL_SOCKET_NAME "control.sock"
#define CONTROL_ADDRESS_MAX 4200

/* The Unix socket path cfg's control.listen names, for the crawl in
 * state_dir (NULL: storage.state_dir), into out: 1, 0 when control.listen
 * is not a Unix socket, -1 when out is too small. OUT: out */
int control_socket_path(const crawl_config *cfg, const char *state_dir, char *out, size_t len);

/* NULL with a message in err (bad address, port taken, missing token).
 * Call after crawl_open: a Unix socket file left by a crawld that is gone
 * is replaced, which the state folder's lock makes safe. */
control *control_start(crawl *c, const crawl_config *cfg, char *err, size_t errlen);
/* "127.0.0.1:PORT" as bound (the real port when 0 was asked), or
 * "unix:PATH". */
const char *control_address(const control *ctl);
void control_stop(control *ctl); /* NULL is fine */

#endif

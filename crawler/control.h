/* crawler/control: the control API, on libmicrohttpd, JSON by jansson.
 *
 *   GET  /metrics      Prometheus text exposition
 *   GET  /v1/status    the crawl's figures as JSON
 *   POST /v1/seeds     {"urls": [...]}: queue seeds
 *   POST /v1/dedup     {"urls": [...]}: which are new (crawld as another
 *                      crawler's duplicate filter)
 *   POST /v1/pause, /v1/resume, /v1/shutdown
 *
 * It listens on control.listen (default 127.0.0.1 only). A token is
 * required when it listens on anything but loopback; when one is set, every
 * request must carry "Authorization: Bearer TOKEN" (compared in constant
 * time). Bodies over control.max_body_bytes get 413; malformed requests 4xx
 * with {"error": "..."}. Requests run on libmicrohttpd's own thread. */
#ifndef CRAWLD_CONTROL_H
#define CRAWLD_CONTROL_H

#include <stddef.h>

#include "config/config.h"
#include "crawler/crawl.h"

typedef struct control control;

/* NULL with a message in err (bad address, port taken, missing token). */
control *control_start(crawl *c, const crawl_config *cfg, char *err, size_t errlen);
/* "127.0.0.1:PORT" as bound (the real port when 0 was asked). */
const char *control_address(const control *ctl);
void control_stop(control *ctl); /* NULL is fine */

#endif

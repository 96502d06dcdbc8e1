/* ctl.h — the control socket (ctl.c): one JSON request per connection,
 * one JSON reply.  `show` reads the core and the datapath (dpif.h); a
 * change is handed to the one writer (apply.h).  Control thread only;
 * 0 or -errno with err naming the field where an int is returned.
 */
#ifndef JK_DAEMON_CTL_H
#define JK_DAEMON_CTL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct jakirod;

/* Listens on d->conf->ctl_socket (mode 0600). */
int jk_ctl_open(struct jakirod *d, char *err, size_t errlen);
void jk_ctl_accept(struct jakirod *d);
/* Serves connection `slot` when it is readable or writable. */
void jk_ctl_on_conn(struct jakirod *d, unsigned slot);
/* Closes connections past their deadline (called by the 1 s timer). */
void jk_ctl_expire(struct jakirod *d, uint64_t now_ns);
void jk_ctl_close(struct jakirod *d);
/* One request's reply ({"ok": true, "result": ...} or {"ok": false,
 * "error": "..."}), a new reference. */
json_t *jk_ctl_handle(struct jakirod *d, json_t *req);

#endif

/* client.c — requests to the local jakirod on its control socket: one
 * JSON line out, one JSON reply ({"ok": ..., "result"|"error": ...}) back,
 * as jakiroctl sends them (src/daemon/ctl.c has the commands).  A daemon
 * that cannot be reached is "try again later" (code 11); a refusal is
 * CNI_ERR_JAKIROD with jakirod's own message. */
#include "cni/cni.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define CLIENT_TIMEOUT_S  30          /* a vnic-add creates a TAP and fsyncs the state file */
#define CLIENT_MAX_REPLY  (16 << 20)  /* `show vnics` of 256 vNICs with their stats */

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);     /* a daemon gone is an error, not SIGPIPE */

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int call(const char *socket_path, json_t *req, json_t **reply, struct cni_err *e)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CLIENT_TIMEOUT_S };
	char *text = json_dumps(req, JSON_COMPACT), *buf = NULL;
	size_t len = 0;
	json_error_t jerr;
	int fd = -1, r = 0;

	*reply = NULL;
	if (!text || strlen(socket_path) >= sizeof(sun.sun_path)) {
		r = cni_fail(e, CNI_ERR_CONFIG, "socket: path too long");
		goto out;
	}
	strcpy(sun.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		r = cni_fail(e, CNI_ERR_TRY_AGAIN, "socket: cannot reach jakirod at %s: %s", socket_path,
			     strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send_all(fd, text, strlen(text)) || send_all(fd, "\n", 1)) {
		r = cni_fail(e, CNI_ERR_TRY_AGAIN, "socket: cannot send to jakirod: %s", strerror(errno));
		goto out;
	}
	buf = cni_read_all(fd, CLIENT_MAX_REPLY, &len);
	*reply = buf ? json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, &jerr) : NULL;
	if (!*reply || !json_is_object(*reply))
		r = cni_fail(e, CNI_ERR_TRY_AGAIN, "socket: no reply from jakirod (%s)",
			     buf ? jerr.text : "read failed, or too long");
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(buf);
	return r;
}

/* Sends req (consumed); 0 with *result (a new reference) when ok. */
static int request(const char *socket_path, json_t *req, const char *what, json_t **result, struct cni_err *e)
{
	json_t *reply;
	int r = call(socket_path, req, &reply, e);

	json_decref(req);
	if (r == 0 && !json_is_true(json_object_get(reply, "ok"))) {
		const char *msg = json_string_value(json_object_get(reply, "error"));

		r = cni_fail(e, CNI_ERR_JAKIROD, "jakirod refused %s: %s", what, msg ? msg : "(no message)");
	}
	if (r == 0 && result)
		*result = json_incref(json_object_get(reply, "result"));
	json_decref(reply);
	return r;
}

int cni_jakirod_vnic_find(const char *socket_path, const char *name, json_t **vnic, struct cni_err *e)
{
	json_t *list, *o;
	size_t i;
	int r = request(socket_path, json_pack("{s:s, s:s}", "cmd", "show", "what", "vnics"), "show vnics", &list, e);

	*vnic = NULL;
	if (r)
		return r;
	json_array_foreach(list, i, o)
		if (json_is_string(json_object_get(o, "name")) &&
		    strcmp(json_string_value(json_object_get(o, "name")), name) == 0) {
			*vnic = json_incref(o);
			break;
		}
	json_decref(list);
	return 0;
}

int cni_jakirod_vnic_add(const char *socket_path, json_t *vnic, struct cni_err *e)
{
	return request(socket_path, json_pack("{s:s, s:O}", "cmd", "vnic-add", "vnic", vnic), "the vNIC", NULL, e);
}

int cni_jakirod_vnic_del(const char *socket_path, const char *name, struct cni_err *e)
{
	return request(socket_path, json_pack("{s:s, s:s}", "cmd", "vnic-del", "name", name), "to delete the vNIC",
		       NULL, e);
}

/* ipam.c — IPAM delegation (spec: "Delegated plugins"): the plugin named
 * by ipam.type is looked up in CNI_PATH and run with the same environment,
 * CNI_COMMAND set to the step wanted, and the same configuration on stdin.
 * An IPAM plugin's error is passed on as it is (its code and message). */
#include "cni/cni.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int cni_ipam_find(const char *cni_path, const char *type, char *out, size_t outlen, struct cni_err *e)
{
	const char *dir = cni_path;

	while (*dir) {
		size_t n = strcspn(dir, ":");
		struct stat st;

		if (n && (size_t)snprintf(out, outlen, "%.*s/%s", (int)n, dir, type) < outlen &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		dir += n + (dir[n] == ':');
	}
	return cni_fail(e, CNI_ERR_CONFIG, "ipam.type: no plugin \"%s\" in CNI_PATH (%s)", type, cni_path);
}

/* stdin of the child: a memory file holding the configuration, so that
 * writing it cannot block on a child that does not read. */
static int stdin_file(const char *text, size_t len)
{
	int fd = memfd_create("cni-stdin", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

char *cni_read_all(int fd, size_t max, size_t *len)
{
	size_t cap = 4096;
	char *buf = malloc(cap);

	*len = 0;
	while (buf) {
		ssize_t n;

		if (*len + 1 >= cap) {
			char *bigger = cap < max ? realloc(buf, cap * 2) : NULL;

			if (!bigger) {
				free(buf);
				return NULL;
			}
			buf = bigger;
			cap *= 2;
		}
		n = read(fd, buf + *len, cap - *len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static void child(const char *plugin, const char *command, int in, int out)
{
	if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || setenv("CNI_COMMAND", command, 1) < 0)
		_exit(127);
	execl(plugin, plugin, (char *)NULL);
	_exit(127);
}

/* The IPAM plugin's error output, passed on: its code, "ipam: " and its
 * message; or an I/O error if it printed no error object. */
static int ipam_error(const char *plugin, const char *command, int status, const char *out, struct cni_err *e)
{
	json_t *o = json_loads(out, 0, NULL);
	json_t *code = json_object_get(o, "code");
	const char *msg = json_string_value(json_object_get(o, "msg"));
	const char *details = json_string_value(json_object_get(o, "details"));
	int r;

	if (json_is_integer(code) && json_integer_value(code) > 0 && json_integer_value(code) < 1000000 && msg) {
		r = cni_fail(e, (int)json_integer_value(code), "ipam %s %s: %s", plugin, command, msg);
		if (details)
			snprintf(e->details, sizeof(e->details), "%s", details);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		r = cni_fail(e, CNI_ERR_IO, "ipam %s %s: cannot run it", plugin, command);
	} else {
		r = cni_fail(e, CNI_ERR_IO, "ipam %s %s: failed (status %d) without an error object", plugin, command,
			     status);
	}
	json_decref(o);
	return r;
}

int cni_ipam_exec(const char *plugin, const char *command, const char *stdin_text, size_t len, json_t **result,
		  struct cni_err *e)
{
	int in = stdin_file(stdin_text, len), pipefd[2] = { -1, -1 }, status = 0, r = 0;
	json_error_t jerr;
	size_t out_len = 0;
	char *out = NULL;
	pid_t pid = -1;

	if (result)
		*result = NULL;
	if (in < 0 || pipe2(pipefd, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		r = cni_fail(e, CNI_ERR_IO, "ipam %s %s: cannot start it: %s", plugin, command, strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(plugin, command, in, pipefd[1]);
	close(pipefd[1]);
	pipefd[1] = -1;
	out = cni_read_all(pipefd[0], CNI_MAX_RESULT, &out_len);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!out) {
		r = cni_fail(e, CNI_ERR_IO, "ipam %s %s: cannot read its output", plugin, command);
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		r = ipam_error(plugin, command, status, out, e);
		goto out;
	}
	if (result) {
		*result = json_loadb(out, out_len, 0, &jerr);
		if (!*result)
			r = cni_fail(e, CNI_ERR_DECODE, "ipam %s %s: result is not JSON: %s", plugin, command, jerr.text);
	}
out:
	free(out);
	if (in >= 0)
		close(in);
	for (int i = 0; i < 2; i++)
		if (pipefd[i] >= 0)
			close(pipefd[i]);
	return r;
}

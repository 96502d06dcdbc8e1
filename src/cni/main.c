/* main.c — jakiro-cni's entry: the environment and stdin are read and
 * checked, the command runs, and stdout gets the result (ADD, VERSION),
 * nothing (CHECK, DEL) or an error object with a non-zero exit (spec:
 * "Execution Protocol").  Diagnostics never go to stdout. */
#include "cni/cni.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIN_MAX (1 << 20)

static int print_json(json_t *o)
{
	int r = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	putchar('\n');
	json_decref(o);
	return fflush(stdout) == 0 && r == 0 ? 0 : 1;
}

static int run(const struct cni_env *env, struct cni_conf *c, struct cni_err *e)
{
	json_t *result = NULL;
	size_t len;
	char *text = cni_read_all(STDIN_FILENO, STDIN_MAX, &len);
	int r;

	if (!text)
		return cni_fail(e, CNI_ERR_IO, "stdin: cannot read the network configuration");
	if (env->cmd == CNI_CMD_VERSION) {     /* whatever stdin says: the versions we speak */
		free(text);
		return print_json(cni_version_json()) ? cni_fail(e, CNI_ERR_IO, "stdout: cannot write") : 0;
	}
	if ((r = cni_conf_parse(text, len, c, e)))
		goto out;
	switch (env->cmd) {
	case CNI_CMD_ADD:
		r = cni_cmd_add(env, c, text, len, &result, e);
		if (r == 0)
			r = print_json(result) ? cni_fail(e, CNI_ERR_IO, "stdout: cannot write the result") : 0;
		break;
	case CNI_CMD_CHECK:
		r = cni_cmd_check(env, c, text, len, e);
		break;
	case CNI_CMD_DEL:
		r = cni_cmd_del(env, c, text, len, e);
		break;
	case CNI_CMD_VERSION:
		break;
	}
out:
	free(text);
	return r;
}

int main(void)
{
	struct cni_err e = { 0 };
	struct cni_conf c = { 0 };
	struct cni_env env;
	int r = cni_env_parse(&env, &e);

	if (r == 0)
		r = run(&env, &c, &e);
	if (r) {
		print_json(cni_error_json(c.version, &e));
		fprintf(stderr, "jakiro-cni: %s%s%s\n", e.msg, e.details[0] ? ": " : "", e.details);
	}
	cni_conf_free(&c);
	return r ? 1 : 0;
}

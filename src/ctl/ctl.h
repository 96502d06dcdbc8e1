/* ctl.h — what jakiroctl's commands share: usage errors and KEY VALUE
 * arguments (args.c), and the cluster commands over etcd (cluster.c). */
#ifndef JK_CTL_H
#define JK_CTL_H

#include <jansson.h>
#include <stdbool.h>

/* Prints "jakiroctl: ..." and the pointer to --help; returns 2. */
int jk_ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* KEY VALUE pairs into `o`: the integer settings typed, the rest strings.
 * 0, or 2 after a usage error. */
int jk_ctl_pairs_to_object(int argc, char **argv, json_t *o);
/* o[k] as a string for printing: "-" when absent or not a string. */
const char *jk_ctl_str(json_t *o, const char *k);

/* jakiroctl --etcd URL[/PREFIX] cluster ...: the cluster's view and
 * cluster-wide policy.  The exit status. */
/* etcd: "URL[/PREFIX]"; etcd_conf: a file holding an "etcd" object as in
 * jakirod's configuration (endpoint, prefix, TLS, user); one of them. */
int jk_ctl_cluster(const char *etcd, const char *etcd_conf, bool as_json, int argc, char **argv);

#endif

/* jakiroctl — the command line of jakirod's control socket.
 *
 * Requests are JSON objects; the daemon validates and applies them.  Text
 * output is formatted here from the same JSON that --json prints.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"

#define SOCK_DIR "/run/jakiro"

static const char usage_text[] =
	"usage: jakiroctl [-s SOCKET] [--etcd URL[/PREFIX] | --etcd-conf FILE] [--json] COMMAND\n"
	"\n"
	"  show vnics | vlt | nft | rcft | stats\n"
	"  vnic add NAME vpc VPC ip ADDR [mac MAC] [backend tap|afpacket] [ifname IF]\n"
	"               [netns NS] [tenant_ifname IF] [mtu N] [qp_quota N] [nft_reserve N]\n"
	"               [dscp_rdma D] [dscp_tcp D]\n"
	"               [rate RATE] [burst SIZE] [rdma_weight W] [tcp_weight W]\n"
	"               [ingress_rate RATE] [ingress_burst SIZE]\n"
	"               [ingress_rdma_weight W] [ingress_tcp_weight W]\n"
	"  vnic del NAME\n"
	"  vnic set NAME KEY VALUE...   (mtu, qp_quota, nft_reserve, dscp_*, rate, burst, *_weight,\n"
	"                                ingress_*)\n"
	"  vlt add vpc VPC ip ADDR mac MAC vtep ADDR\n"
	"  vlt del vpc VPC ip ADDR\n"
	"\n"
	"  with --etcd URL[/PREFIX] (or $JAKIRO_ETCD), the cluster through etcd (docs/cluster.md):\n"
	"  (or --etcd-conf FILE, $JAKIRO_ETCD_CONF: {\"endpoint\": \"https://..\", \"prefix\", \"ca\", \"cert\",\n"
	"   \"key\", \"user\", \"password_file\"}, jakirod's \"etcd\" object: TLS and the control role's user)\n"
	"  cluster show [hosts|vpcs|vlt|policy]\n"
	"  cluster policy set VPC IP KEY VALUE...   (the keys of vnic set; applied by the vNIC's host)\n"
	"  cluster policy del VPC IP\n"
	"\n"
	"  N := 0-4294967295   MTU := 576-(underlay MTU - 50), 0 = default\n"
	"  W := 1-1000         RATE := e.g. 1gbit, 500mbit, 0 = unlimited\n"
	"  D := 0-63 (outer DSCP; defaults: RDMA 26, TCP/other 0)\n"
	"  SIZE := e.g. 64k    SOCKET := default $JAKIRO_SOCKET, or the only " SOCK_DIR "/*.sock\n";

static int build_request(int argc, char **argv, json_t **out)
{
	json_t *req = json_object(), *o;
	int r = 0;

	*out = req;
	if (argc < 1)
		return jk_ctl_usage_error("missing command");
	if (strcmp(argv[0], "show") == 0) {
		if (argc != 2)
			return jk_ctl_usage_error("show: which table? (vnics, vlt, nft, rcft, stats)");
		json_object_set_new(req, "cmd", json_string("show"));
		json_object_set_new(req, "what", json_string(argv[1]));
		return 0;
	}
	if (strcmp(argv[0], "vnic") == 0 && argc >= 3) {
		if (strcmp(argv[1], "add") == 0) {
			o = json_object();
			json_object_set_new(o, "name", json_string(argv[2]));
			json_object_set_new(req, "cmd", json_string("vnic-add"));
			json_object_set_new(req, "vnic", o);
			return jk_ctl_pairs_to_object(argc - 3, argv + 3, o);
		}
		if (strcmp(argv[1], "del") == 0) {
			if (argc != 3)
				return jk_ctl_usage_error("vnic del: takes only NAME");
			json_object_set_new(req, "cmd", json_string("vnic-del"));
			json_object_set_new(req, "name", json_string(argv[2]));
			return 0;
		}
		if (strcmp(argv[1], "set") == 0) {
			if (argc < 5)
				return jk_ctl_usage_error("vnic set: NAME KEY VALUE...");
			o = json_object();
			json_object_set_new(req, "cmd", json_string("vnic-set"));
			json_object_set_new(req, "name", json_string(argv[2]));
			json_object_set_new(req, "set", o);
			return jk_ctl_pairs_to_object(argc - 3, argv + 3, o);
		}
		return jk_ctl_usage_error("vnic: add, del or set");
	}
	if (strcmp(argv[0], "vlt") == 0 && argc >= 2) {
		o = json_object();
		r = jk_ctl_pairs_to_object(argc - 2, argv + 2, o);
		if (r) {
			json_decref(o);
			return r;
		}
		if (strcmp(argv[1], "add") == 0) {
			json_object_set_new(req, "cmd", json_string("vlt-add"));
			json_object_set_new(req, "entry", o);
			return 0;
		}
		if (strcmp(argv[1], "del") == 0) {
			const char *k;
			json_t *v;

			json_object_foreach(o, k, v)
				if (strcmp(k, "vpc") && strcmp(k, "ip")) {
					json_decref(o);
					return jk_ctl_usage_error("vlt del: unknown key \"%s\" (vpc, ip)", k);
				}
			json_object_set_new(req, "cmd", json_string("vlt-del"));
			json_object_update(req, o);
			json_decref(o);
			return 0;
		}
		json_decref(o);
		return jk_ctl_usage_error("vlt: add or del");
	}
	return jk_ctl_usage_error("unknown command \"%s\"", argv[0]);
}

/* ---- transport ---------------------------------------------------------- */

static int default_socket(char *out, size_t len)
{
	const char *env = getenv("JAKIRO_SOCKET");
	struct dirent *de;
	DIR *dir;
	int found = 0;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	dir = opendir(SOCK_DIR);
	while (dir && (de = readdir(dir))) {
		size_t l = strlen(de->d_name);

		if (l > 5 && l + sizeof(SOCK_DIR) < len && strcmp(de->d_name + l - 5, ".sock") == 0) {
			if (found++)
				break;
			memcpy(out, SOCK_DIR "/", sizeof(SOCK_DIR));
			memcpy(out + sizeof(SOCK_DIR), de->d_name, l + 1);
		}
	}
	if (dir)
		closedir(dir);
	if (found == 1)
		return 0;
	fprintf(stderr, "jakiroctl: %s; name the daemon with -s SOCKET\n",
		found ? "several daemons run (" SOCK_DIR " has several sockets)" : "no daemon socket in " SOCK_DIR);
	return -1;
}

static json_t *call(const char *path, json_t *req)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char *text = json_dumps(req, JSON_COMPACT);
	json_error_t jerr;
	json_t *rep = NULL;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		fprintf(stderr, "jakiroctl: cannot reach jakirod at %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (write(fd, text, strlen(text)) < 0 || write(fd, "\n", 1) < 0) {
		fprintf(stderr, "jakiroctl: write: %s\n", strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	rep = json_loads(buf, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!rep)
		fprintf(stderr, "jakiroctl: bad reply from jakirod: %s\n", jerr.text);
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(buf);
	return rep;
}

/* ---- text output ---------------------------------------------------------- */

static long long i_(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void fmt_rate(long long bps, char *buf, size_t len)
{
	if (bps <= 0)
		snprintf(buf, len, "-");
	else if (bps % 1000000000 == 0)
		snprintf(buf, len, "%lldgbit", bps / 1000000000);
	else if (bps % 1000000 == 0)
		snprintf(buf, len, "%lldmbit", bps / 1000000);
	else
		snprintf(buf, len, "%lldbit", bps);
}

static void print_vnics(json_t *a)
{
	size_t i;
	json_t *o;

	printf("%-12s %-8s %-8s %-15s %-17s %-8s %-15s %5s %9s %9s %5s\n", "NAME", "VPC", "VNI", "IP", "MAC",
	       "BACKEND", "IFNAME", "MTU", "QP/QUOTA", "RATE", "W r:t");
	json_array_foreach(a, i, o) {
		char qp[32], rate[32], w[16];

		snprintf(qp, sizeof(qp), "%lld/%lld", i_(o, "rc_live"), i_(o, "qp_quota"));
		fmt_rate(i_(o, "rate"), rate, sizeof(rate));
		snprintf(w, sizeof(w), "%lld:%lld", i_(o, "rdma_weight"), i_(o, "tcp_weight"));
		printf("%-12s %-8s %-8lld %-15s %-17s %-8s %-15s %5lld %9s %9s %5s\n", jk_ctl_str(o, "name"), jk_ctl_str(o, "vpc"),
		       i_(o, "vni"), jk_ctl_str(o, "ip"), jk_ctl_str(o, "mac"), jk_ctl_str(o, "backend"), jk_ctl_str(o, "ifname"), i_(o, "mtu"), qp,
		       rate, w);
	}
}

static void print_vlt(json_t *a)
{
	size_t i;
	json_t *o;

	printf("%-8s %-8s %-15s %-17s %s\n", "VPC", "VNI", "IP", "MAC", "LOCATION");
	json_array_foreach(a, i, o) {
		char loc[64];

		if (strcmp(jk_ctl_str(o, "kind"), "local") == 0)
			snprintf(loc, sizeof(loc), "local vnic %s", jk_ctl_str(o, "vnic"));
		else
			snprintf(loc, sizeof(loc), "vtep %s", jk_ctl_str(o, "vtep"));
		printf("%-8s %-8lld %-15s %-17s %s\n", jk_ctl_str(o, "vpc"), i_(o, "vni"), jk_ctl_str(o, "ip"), jk_ctl_str(o, "mac"), loc);
	}
}

static const char *proto_name(long long p)
{
	return p == 6 ? "tcp" : p == 17 ? "udp" : p == 1 ? "icmp" : "ip";
}

static void print_nft(json_t *a)
{
	size_t i;
	json_t *o;

	printf("%-8s %-5s %-21s %-21s %-6s %-10s %-20s %10s %12s %8s\n", "VPC", "PROTO", "SRC", "DST", "CLASS", "IN",
	       "OUT", "PACKETS", "BYTES", "IDLE_MS");
	json_array_foreach(a, i, o) {
		char src[32], dst[32], out[48];

		snprintf(src, sizeof(src), "%s:%lld", jk_ctl_str(o, "src"), i_(o, "sport"));
		snprintf(dst, sizeof(dst), "%s:%lld", jk_ctl_str(o, "dst"), i_(o, "dport"));
		if (json_object_get(o, "out_vnic"))
			snprintf(out, sizeof(out), "vnic %s", jk_ctl_str(o, "out_vnic"));
		else
			snprintf(out, sizeof(out), "vtep %s", jk_ctl_str(o, "vtep"));
		printf("%-8s %-5s %-21s %-21s %-6s %-10s %-20s %10lld %12lld %8lld%s\n", jk_ctl_str(o, "vpc"),
		       proto_name(i_(o, "proto")), src, dst, jk_ctl_str(o, "class"), jk_ctl_str(o, "in_vnic"), out, i_(o, "packets"),
		       i_(o, "bytes"), i_(o, "idle_ms"), json_is_true(json_object_get(o, "stale")) ? " stale" : "");
	}
}

static void print_rcft(json_t *r)
{
	size_t i;
	json_t *o;

	printf("RC QP quota (idle timeout %lld ms)\n%-12s %6s %6s %12s\n", i_(r, "idle_ms"), "VNIC", "LIVE", "QUOTA",
	       "QUOTA_DROPS");
	json_array_foreach(json_object_get(r, "vnics"), i, o)
		printf("%-12s %6lld %6lld %12lld\n", jk_ctl_str(o, "vnic"), i_(o, "live"), i_(o, "qp_quota"),
		       i_(o, "quota_drops"));
	printf("\nRC flows\n%-12s %-8s %-15s %-15s %8s %10s %12s %8s\n", "VNIC", "VPC", "SRC", "DST", "DQPN", "PACKETS",
	       "BYTES", "IDLE_MS");
	json_array_foreach(json_object_get(r, "flows"), i, o)
		printf("%-12s %-8s %-15s %-15s %#8llx %10lld %12lld %8lld\n", jk_ctl_str(o, "vnic"), jk_ctl_str(o, "vpc"),
		       jk_ctl_str(o, "src"), jk_ctl_str(o, "dst"), i_(o, "dqpn"), i_(o, "packets"), i_(o, "bytes"), i_(o, "idle_ms"));
}

static void print_drops(json_t *drops, const char *indent)
{
	const char *k;
	json_t *v;

	json_object_foreach(drops, k, v)
		printf("%s%-16s %lld\n", indent, k, (long long)json_integer_value(v));
}

static void print_dhtb(const char *name, json_t *dh)
{
	const char *dir;
	json_t *d;

	json_object_foreach(dh, dir, d) {
		char rate[32];

		if (i_(d, "rate") <= 0)
			continue;
		fmt_rate(i_(d, "rate"), rate, sizeof(rate));
		printf("%-12s dhtb %-7s rate %s, weights rdma:tcp %lld:%lld, queue %lld B\n", name, dir, rate,
		       i_(d, "rdma_weight"), i_(d, "tcp_weight"), i_(d, "queue_bytes"));
		for (int c = 0; c < 2; c++) {
			json_t *k = json_object_get(d, c ? "tcp" : "rdma");

			printf("%-12s      %-5s packets %lld bytes %lld marked %lld queued %lld dropped %lld borrowed %lld\n",
			       "", c ? "tcp" : "rdma", i_(k, "packets"), i_(k, "bytes"), i_(k, "marked"), i_(k, "queued"),
			       i_(k, "dropped"), i_(k, "borrowed"));
		}
	}
}

/* Counters only jakirod's own datapath moves (its NFT, its shaper queue):
 * the text leaves them out where the kernel forwards (the JSON keeps them, 0). */
static bool user_datapath_only(const char *counter)
{
	return strncmp(counter, "nft_", 4) == 0 || strcmp(counter, "held") == 0 ||
	       strcmp(counter, "shaper_armed_in_us") == 0;
}

static void print_stats(json_t *r)
{
	json_t *dp = json_object_get(r, "datapath"), *vnics = json_object_get(r, "vnics"), *v;
	bool kernel = strcmp(jk_ctl_str(r, "forwarding"), "ebpf") == 0;
	const char *name, *k;
	json_t *val;

	printf("host %s, up %lld ms, forwarding: %s\n\ndatapath:\n", jk_ctl_str(r, "host"), i_(r, "uptime_ms"),
	       jk_ctl_str(r, "forwarding"));
	json_object_foreach(dp, k, val)
		if (json_is_integer(val) && !(kernel && user_datapath_only(k)))
			printf("  %-16s %lld\n", k, (long long)json_integer_value(val));
	printf("  drops:\n");
	print_drops(json_object_get(dp, "drops"), "    ");
	printf("\n%-12s %-8s %-6s %12s %14s %12s %14s\n", "VNIC", "DIR", "CLASS", "PACKETS", "BYTES", "", "");
	json_object_foreach(vnics, name, v) {
		for (int d = 0; d < 2; d++) {
			const char *dir = d ? "ingress" : "egress";
			json_t *dj = json_object_get(v, dir), *cls;
			const char *cname;

			json_object_foreach(dj, cname, cls)
				printf("%-12s %-8s %-6s %12lld %14lld\n", name, dir, cname, i_(cls, "packets"),
				       i_(cls, "bytes"));
		}
		if (json_object_size(json_object_get(v, "drops"))) {
			printf("%-12s drops:\n", name);
			print_drops(json_object_get(v, "drops"), "    ");
		}
		printf("%-12s arp_proxied %lld, icmp_frag_needed %lld\n", name, i_(v, "arp_proxied"),
		       i_(v, "icmp_frag_needed"));
		print_dhtb(name, json_object_get(v, "dhtb"));
	}
	if (kernel) {   /* the kernel's vxlan device's receive errors (RFC 6040 drops among them) */
		printf("\nunderlay: rx_errors %lld, rx_dropped %lld\n", i_(json_object_get(r, "underlay"), "rx_errors"),
		       i_(json_object_get(r, "underlay"), "rx_dropped"));
		return;
	}
	printf("\nunderlay: rx_errors %lld, tx_errors %lld, rx_truncated %lld, tx_gso_sends %lld\n",
	       i_(json_object_get(r, "underlay"), "rx_errors"), i_(json_object_get(r, "underlay"), "tx_errors"),
	       i_(json_object_get(r, "underlay"), "rx_truncated"), i_(json_object_get(r, "underlay"), "tx_gso_sends"));
	printf("coalescing: reads %lld of %lld datagrams into %lld frames, %lld bad checksums\n",
	       i_(json_object_get(r, "underlay"), "gro_reads"), i_(json_object_get(r, "underlay"), "gro_datagrams"),
	       i_(json_object_get(r, "underlay"), "gro_units"), i_(json_object_get(r, "underlay"), "gro_csum_bad"));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "etcd", required_argument, NULL, 'e' },
		{ "etcd-conf", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char sock[108] = "";
	const char *etcd = NULL, *etcd_conf = NULL;
	bool as_json = false;
	json_t *req, *rep, *result;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "+s:e:E:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 's': snprintf(sock, sizeof(sock), "%s", optarg); break;
		case 'j': as_json = true; break;
		case 'e': etcd = optarg; break;
		case 'E': etcd_conf = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (etcd && etcd_conf) {
		fputs("jakiroctl: --etcd and --etcd-conf: one or the other\n", stderr);
		return 2;
	}
	/* The command line wins over the environment: an explicit --etcd
	 * is not overridden by $JAKIRO_ETCD_CONF (nor --etcd-conf by
	 * $JAKIRO_ETCD); between the two variables, the file does. */
	if (!etcd && !etcd_conf) {
		etcd_conf = getenv("JAKIRO_ETCD_CONF");
		if (!etcd_conf)
			etcd = getenv("JAKIRO_ETCD");
	}
	if (optind < argc && strcmp(argv[optind], "cluster") == 0)
		return jk_ctl_cluster(etcd, etcd_conf, as_json, argc - optind - 1, argv + optind + 1);
	r = build_request(argc - optind, argv + optind, &req);
	if (r) {
		json_decref(req);
		return r;
	}
	if (!sock[0] && default_socket(sock, sizeof(sock)))
		return 1;
	rep = call(sock, req);
	json_decref(req);
	if (!rep)
		return 1;
	if (!json_is_true(json_object_get(rep, "ok"))) {
		fprintf(stderr, "jakiroctl: refused: %s\n", jk_ctl_str(rep, "error"));
		json_decref(rep);
		return 1;
	}
	result = json_object_get(rep, "result");
	if (as_json) {
		json_dumpf(result, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
		putchar('\n');
	} else if (strcmp(argv[optind], "show") == 0) {
		const char *what = argv[optind + 1];

		if (strcmp(what, "vnics") == 0)
			print_vnics(result);
		else if (strcmp(what, "vlt") == 0)
			print_vlt(result);
		else if (strcmp(what, "nft") == 0)
			print_nft(result);
		else if (strcmp(what, "rcft") == 0)
			print_rcft(result);
		else
			print_stats(result);
	} else {
		printf("ok\n");
	}
	json_decref(rep);
	return 0;
}

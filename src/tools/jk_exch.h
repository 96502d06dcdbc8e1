/* jk_exch.h — out-of-band connection exchange over TCP, wire-compatible
 * with perftest's Ethernet exchange (perftest_communication.c) and with
 * ibv_rc_pingpong (rdma-core libibverbs/examples), so that our tools and
 * theirs connect to each other.
 *
 * perftest (RoCE always uses the GID form): each side writes a fixed
 * 108-byte message, the client first, the server answering:
 *   "%04x:%04x:%06x:%06x:%08x:%016llx:" lid, out_reads, qpn, psn, rkey, vaddr
 *   16 x "%02x:" GID bytes, "%08x:" srqn, NUL
 * Around it perftest 6.x swaps, with the same client-writes-first rule:
 * its version string (16 bytes), page size and cache-line size (4 bytes
 * each, network order), the MTU as a 2-byte decimal string of enum
 * ibv_mtu, and at the end the bandwidth report and "done".
 *
 * ibv_rc_pingpong: a 52-byte message "%04x:%06x:%06x:%s" lid:qpn:psn:gid
 * (GID as 32 hex digits); client sends first, server answers, client
 * writes "done".
 *
 * While it waits for the peer a connection can run an idle callback (the
 * RNIC must keep answering packets while the tool waits on TCP).
 *
 * Functions return 0 or a negative errno.  Not thread-safe.
 */
#ifndef JK_EXCH_H
#define JK_EXCH_H

#include <stddef.h>
#include <stdint.h>

#include "rnic/rnic.h"

#define JK_DEF_PORT       18515
#define JK_PT_MSG_GID     108   /* perftest KEY_MSG_SIZE_GID */
#define JK_PP_MSG         52    /* sizeof "0000:000000:000000:" + 32 hex + NUL */
#define JK_PT_VERSION_LEN 16    /* perftest MAX_VERSION */
#define JK_PT_VERSION     "6.06" /* speaks the exchange of perftest 6.06 */

struct jk_dest {
	uint32_t lid;
	uint32_t out_reads;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	union rnic_gid gid;
	uint32_t srqn;
};

struct jk_conn {
	int fd;
	int is_client;                  /* the client writes first */
	uint32_t peer_ip;               /* IPv4 of the TCP peer, network order */
	/* called when a read would block; may sleep until fd is readable */
	void (*idle)(void *arg, int fd);
	void *idle_arg;
};

/* Server: listens on port (all addresses) and accepts one client. */
int  jk_conn_accept(struct jk_conn *c, int port);
/* Client: connects to host:port, retrying for up to retry_ms. */
int  jk_conn_connect(struct jk_conn *c, const char *host, int port, int retry_ms);
void jk_conn_close(struct jk_conn *c);
int  jk_conn_read(struct jk_conn *c, void *buf, size_t n);
int  jk_conn_write(struct jk_conn *c, const void *buf, size_t n);
/* Reads what is there (at least 1 byte) up to n; returns the count. */
int  jk_conn_read_some(struct jk_conn *c, void *buf, size_t n);

/* perftest */
void jk_pt_format(const struct jk_dest *d, char msg[JK_PT_MSG_GID]);
int  jk_pt_parse(const char msg[JK_PT_MSG_GID], struct jk_dest *d);
/* ctx_hand_shake(): client writes then reads, server reads then writes. */
int  jk_pt_hand_shake(struct jk_conn *c, const struct jk_dest *my, struct jk_dest *rem);
/* ctx_xchg_data(): n bytes each way, same order. */
int  jk_pt_xchg(struct jk_conn *c, const void *mine, void *theirs, size_t n);
/* The opening perftest does after connecting: versions, system data and
 * MTU.  *mtu is ours on entry, the agreed (smaller) one on return. */
int  jk_pt_open(struct jk_conn *c, int *mtu);
/* ctx_close_connection(): a hand shake, then "done". */
int  jk_pt_close(struct jk_conn *c, const struct jk_dest *my, struct jk_dest *rem);

/* ibv_rc_pingpong */
void jk_pp_format(const struct jk_dest *d, char msg[JK_PP_MSG]);
int  jk_pp_parse(const char msg[JK_PP_MSG], struct jk_dest *d);

/* GID helpers */
int  jk_gid_is_v4(const union rnic_gid *g);
void jk_gid_from_ipv4(union rnic_gid *g, uint32_t ip);

#endif

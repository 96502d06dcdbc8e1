/* fuzz-rnic-exch — libFuzzer target: jk_exch's whole framing as a peer drives
 * it, beyond the key messages (fuzz-rnic-text has those): perftest's
 * opening (version, page and cache-line sizes, MTU), the key hand shake,
 * the bandwidth reports (five 8-byte fields), the closing hand shake and
 * "done"; or ibv_rc_pingpong's message and "done".  The peer is the
 * input, written into a socket pair whose other end our side reads (then
 * EOF).  Byte 0: bit 0 client/server, bit 1 perftest/pingpong. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/jk_exch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct jk_dest mine = {
	.lid = 0, .out_reads = 16, .qpn = 0x11a2b, .psn = 0x3c4d5e, .rkey = 0x101, .vaddr = 0x7f0000001000ull,
};

static void check_dest(const struct jk_dest *d)
{
	/* what the parsers accept fits the fields they fill */
	if (d->lid > 0xffff || d->qpn > 0xffffff || d->psn > 0xffffff)
		__builtin_trap();
}

static int perftest(struct jk_conn *c)
{
	struct jk_dest rem;
	uint8_t out[40] = { 0 }, in[40];
	int mtu = 3, r;

	r = jk_pt_open(c, &mtu);
	if (!r && (mtu < 1 || mtu > 3))
		__builtin_trap();       /* only ever lowered to a valid enum ibv_mtu */
	if (!r && !(r = jk_pt_hand_shake(c, &mine, &rem)))
		check_dest(&rem);
	if (!r)
		r = jk_pt_xchg(c, out, in, sizeof(out));
	if (!r) {
		r = jk_pt_close(c, &mine, &rem);        /* closes the connection */
		if (!r)
			check_dest(&rem);
	}
	return r;
}

static int pingpong(struct jk_conn *c)
{
	char msg[JK_PP_MSG], done[sizeof("done")];
	struct jk_dest rem;
	int r = 0;

	jk_pp_format(&mine, msg);
	if (c->is_client)
		r = jk_conn_write(c, msg, sizeof(msg));
	if (!r)
		r = jk_conn_read(c, msg, sizeof(msg));
	if (!r && !(r = jk_pp_parse(msg, &rem)))
		check_dest(&rem);
	if (!r)
		r = c->is_client ? jk_conn_write(c, "done", sizeof("done")) : jk_conn_read(c, done, sizeof(done));
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jk_conn c = { .fd = -1 };
	int sv[2], r;

	if (size < 1 || size > 8192)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (size > 1 && write(sv[1], data + 1, size - 1) != (ssize_t)(size - 1))
		abort();
	shutdown(sv[1], SHUT_WR);               /* then EOF: a read past the input fails */
	c.fd = sv[0];
	c.is_client = data[0] & 1;
	r = (data[0] & 2) ? perftest(&c) : pingpong(&c);
	if (r > 0)
		__builtin_trap();               /* 0 or a negative errno */
	jk_conn_close(&c);
	close(sv[1]);
	return 0;
}

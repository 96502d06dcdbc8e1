/* mmsg.h — pointing recvmmsg/sendmmsg vectors at packet buffers, shared by
 * the vNIC ports and the underlay. */
#ifndef JK_MMSG_H
#define JK_MMSG_H

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "core/pkt.h"

/* msgs[i] gets one iovec over pkts[i]: for a receive the whole buffer
 * (the packet reset first), for a send the frame.  Names and control
 * buffers are left to the caller (zeroed here). */
static inline void jk_mmsg_fill(struct mmsghdr *msgs, struct iovec *iov, struct jk_pkt **pkts, unsigned n,
				bool for_recv)
{
	memset(msgs, 0, n * sizeof(*msgs));
	for (unsigned i = 0; i < n; i++) {
		if (for_recv)
			jk_pkt_reset(pkts[i], 0);
		iov[i].iov_base = pkts[i]->data;
		iov[i].iov_len = for_recv ? JK_PKT_DATA_MAX : pkts[i]->len;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
}

#endif

/* rnic_opcode.c — the RC and UD opcode table and the header builder/parser that
 * read it.  One row per opcode: what it carries (mask), its header length
 * and where each extension header sits.  Nothing else in the transport
 * switches on header layout.
 */
#include <errno.h>

#include "rnic/rnic_hdr.h"

#define BTH  sizeof(struct jk_bth)
#define RETH sizeof(struct rnic_reth)
#define AETH sizeof(struct rnic_aeth)
#define IMM  sizeof(struct rnic_immdt)
#define ATM  sizeof(struct rnic_atmeth)
#define ATA  sizeof(struct rnic_atmack)
#define DETH sizeof(struct rnic_deth)

/* A UD SEND: BTH, DETH, optional ImmDt; always one packet. */
#define UD_ROW(nm, has_imm)                                                   \
	{ .name = nm,                                                         \
	  .mask = RNIC_REQ | RNIC_SEND | RNIC_PAYLOAD | RNIC_ONLY | RNIC_RWR | \
		  RNIC_DETH | ((has_imm) ? RNIC_IMMDT : 0),                   \
	  .length = BTH + DETH + ((has_imm) ? IMM : 0),                       \
	  .offset = { [RNIC_EXT_DETH] = BTH, [RNIC_EXT_IMMDT] = BTH + DETH,   \
		      [RNIC_EXT_PAYLOAD] = BTH + DETH + ((has_imm) ? IMM : 0) } }

#define ATOMIC_ROW(nm)                                                        \
	{ .name = nm, .mask = RNIC_REQ | RNIC_ATOMIC | RNIC_ATMETH | RNIC_ONLY, \
	  .length = BTH + ATM,                                                \
	  .offset = { [RNIC_EXT_ATMETH] = BTH, [RNIC_EXT_PAYLOAD] = BTH + ATM } }

/* Row for a packet with optional RETH then ImmDt after the BTH. */
#define REQ_ROW(nm, m, has_reth, has_imm)                                     \
	{ .name = nm, .mask = (m),                                            \
	  .length = BTH + ((has_reth) ? RETH : 0) + ((has_imm) ? IMM : 0),    \
	  .offset = { [RNIC_EXT_RETH] = BTH,                                  \
		      [RNIC_EXT_IMMDT] = BTH + ((has_reth) ? RETH : 0),       \
		      [RNIC_EXT_PAYLOAD] = BTH + ((has_reth) ? RETH : 0) +    \
					   ((has_imm) ? IMM : 0) } }

#define RSP_ROW(nm, m, has_aeth)                                              \
	{ .name = nm, .mask = (m),                                            \
	  .length = BTH + ((has_aeth) ? AETH : 0),                            \
	  .offset = { [RNIC_EXT_AETH] = BTH,                                  \
		      [RNIC_EXT_PAYLOAD] = BTH + ((has_aeth) ? AETH : 0) } }

#define S (RNIC_REQ | RNIC_SEND | RNIC_PAYLOAD)
#define W (RNIC_REQ | RNIC_WRITE | RNIC_PAYLOAD)
#define R (RNIC_RESP | RNIC_READ | RNIC_PAYLOAD)

const struct rnic_opcode_info rnic_opcode[256] = {
	[RC_SEND_FIRST]  = REQ_ROW("RC_SEND_FIRST",  S | RNIC_FIRST | RNIC_RWR, 0, 0),
	[RC_SEND_MIDDLE] = REQ_ROW("RC_SEND_MIDDLE", S | RNIC_MIDDLE, 0, 0),
	[RC_SEND_LAST]   = REQ_ROW("RC_SEND_LAST",   S | RNIC_LAST, 0, 0),
	[RC_SEND_LAST_WITH_IMMEDIATE] =
		REQ_ROW("RC_SEND_LAST_WITH_IMMEDIATE", S | RNIC_LAST | RNIC_IMMDT, 0, 1),
	[RC_SEND_ONLY]   = REQ_ROW("RC_SEND_ONLY",   S | RNIC_ONLY | RNIC_RWR, 0, 0),
	[RC_SEND_ONLY_WITH_IMMEDIATE] =
		REQ_ROW("RC_SEND_ONLY_WITH_IMMEDIATE",
			S | RNIC_ONLY | RNIC_RWR | RNIC_IMMDT, 0, 1),
	[RC_RDMA_WRITE_FIRST] =
		REQ_ROW("RC_RDMA_WRITE_FIRST", W | RNIC_FIRST | RNIC_RETH, 1, 0),
	[RC_RDMA_WRITE_MIDDLE] = REQ_ROW("RC_RDMA_WRITE_MIDDLE", W | RNIC_MIDDLE, 0, 0),
	[RC_RDMA_WRITE_LAST]   = REQ_ROW("RC_RDMA_WRITE_LAST",   W | RNIC_LAST, 0, 0),
	[RC_RDMA_WRITE_LAST_WITH_IMMEDIATE] =
		REQ_ROW("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
			W | RNIC_LAST | RNIC_IMMDT | RNIC_RWR, 0, 1),
	[RC_RDMA_WRITE_ONLY] =
		REQ_ROW("RC_RDMA_WRITE_ONLY", W | RNIC_ONLY | RNIC_RETH, 1, 0),
	[RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] =
		REQ_ROW("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
			W | RNIC_ONLY | RNIC_RETH | RNIC_IMMDT | RNIC_RWR, 1, 1),
	[RC_RDMA_READ_REQUEST] =
		REQ_ROW("RC_RDMA_READ_REQUEST",
			RNIC_REQ | RNIC_READ | RNIC_ONLY | RNIC_RETH, 1, 0),
	[RC_RDMA_READ_RESPONSE_FIRST] =
		RSP_ROW("RC_RDMA_READ_RESPONSE_FIRST", R | RNIC_FIRST | RNIC_AETH, 1),
	[RC_RDMA_READ_RESPONSE_MIDDLE] =
		RSP_ROW("RC_RDMA_READ_RESPONSE_MIDDLE", R | RNIC_MIDDLE, 0),
	[RC_RDMA_READ_RESPONSE_LAST] =
		RSP_ROW("RC_RDMA_READ_RESPONSE_LAST", R | RNIC_LAST | RNIC_AETH, 1),
	[RC_RDMA_READ_RESPONSE_ONLY] =
		RSP_ROW("RC_RDMA_READ_RESPONSE_ONLY", R | RNIC_ONLY | RNIC_AETH, 1),
	[RC_ACKNOWLEDGE] =
		RSP_ROW("RC_ACKNOWLEDGE", RNIC_RESP | RNIC_ACK | RNIC_AETH, 1),
	[RC_ATOMIC_ACKNOWLEDGE] =
		{ .name = "RC_ATOMIC_ACKNOWLEDGE",
		  .mask = RNIC_RESP | RNIC_ATOMIC | RNIC_AETH | RNIC_ATMACK | RNIC_ONLY,
		  .length = BTH + AETH + ATA,
		  .offset = { [RNIC_EXT_AETH] = BTH, [RNIC_EXT_ATMACK] = BTH + AETH,
			      [RNIC_EXT_PAYLOAD] = BTH + AETH + ATA } },
	[RC_COMPARE_SWAP] = ATOMIC_ROW("RC_COMPARE_SWAP"),
	[RC_FETCH_ADD]    = ATOMIC_ROW("RC_FETCH_ADD"),
	[UD_SEND_ONLY]    = UD_ROW("UD_SEND_ONLY", 0),
	[UD_SEND_ONLY_WITH_IMMEDIATE] = UD_ROW("UD_SEND_ONLY_WITH_IMMEDIATE", 1),
	[RNIC_CNP] = { .name = "CNP", .mask = RNIC_CNPM,
		       .length = BTH + sizeof(struct rnic_cnp),
		       .offset = { [RNIC_EXT_PAYLOAD] = BTH + sizeof(struct rnic_cnp) } },
};

int rnic_hdr_build(uint8_t *buf, const struct rnic_hdr_fields *f)
{
	const struct rnic_opcode_info *op = &rnic_opcode[f->opcode];
	struct jk_bth *bth = (struct jk_bth *)buf;
	uint32_t fqpn, apsn;

	if (!op->mask)
		return -EINVAL;

	bth->opcode = f->opcode;
	bth->flags = (f->se ? BTH_SE_BIT : 0) |
		     ((f->pad << BTH_PAD_SHIFT) & BTH_PAD_MASK);
	bth->pkey = jk_put16(RNIC_DEFAULT_PKEY);
	fqpn = (f->qpn & JK_BTH_QPN_MASK) | (f->becn ? BTH_BECN_BIT : 0);
	bth->qpn = jk_put32(fqpn);
	apsn = (f->psn & JK_BTH_PSN_MASK) | (f->ackreq ? BTH_ACK_BIT : 0);
	bth->apsn = jk_put32(apsn);

	if (op->mask & RNIC_RETH) {
		struct rnic_reth *r = (struct rnic_reth *)(buf + op->offset[RNIC_EXT_RETH]);

		r->va = jk_put64(f->va);
		r->rkey = jk_put32(f->rkey);
		r->len = jk_put32(f->dma_len);
	}
	if (op->mask & RNIC_AETH) {
		struct rnic_aeth *a = (struct rnic_aeth *)(buf + op->offset[RNIC_EXT_AETH]);

		a->smsn = jk_put32((uint32_t)f->syndrome << 24 | (f->msn & AETH_MSN_MASK));
	}
	if (op->mask & RNIC_DETH) {
		struct rnic_deth *d = (struct rnic_deth *)(buf + op->offset[RNIC_EXT_DETH]);

		d->qkey = jk_put32(f->qkey);
		d->sqp = jk_put32(f->src_qpn & DETH_SQP_MASK);
	}
	if (op->mask & RNIC_IMMDT) {
		struct rnic_immdt *i = (struct rnic_immdt *)(buf + op->offset[RNIC_EXT_IMMDT]);

		i->imm = jk_put32(f->imm);
	}
	if (op->mask & RNIC_ATMETH) {
		struct rnic_atmeth *a = (struct rnic_atmeth *)(buf + op->offset[RNIC_EXT_ATMETH]);

		a->va = jk_put64(f->va);
		a->rkey = jk_put32(f->rkey);
		a->swap_add = jk_put64(f->swap_add);
		a->compare = jk_put64(f->compare);
	}
	if (op->mask & RNIC_ATMACK) {
		struct rnic_atmack *a = (struct rnic_atmack *)(buf + op->offset[RNIC_EXT_ATMACK]);

		a->orig = jk_put64(f->orig);
	}
	if (op->mask & RNIC_CNPM)
		memset(buf + sizeof(*bth), 0, sizeof(struct rnic_cnp));
	return op->length;
}

int rnic_hdr_parse(struct rnic_pkt *pkt, uint8_t *hdr, uint32_t len)
{
	const struct rnic_opcode_info *op;
	const struct jk_bth *bth = (const struct jk_bth *)hdr;
	uint32_t min;

	if (len < sizeof(*bth) + RNIC_ICRC_SIZE)
		return -EINVAL;
	op = &rnic_opcode[bth->opcode];
	if (!op->mask || (bth->flags & BTH_TVER_MASK) != 0)
		return -EINVAL;

	pkt->hdr = hdr;
	pkt->paylen = len;
	pkt->opcode = bth->opcode;
	pkt->mask = op->mask;
	pkt->pad = __bth_pad(hdr);
	pkt->qpn = __bth_qpn(hdr);
	pkt->psn = __bth_psn(hdr);
	pkt->ackreq = __bth_ack(hdr);

	min = op->length + pkt->pad + RNIC_ICRC_SIZE;
	if (len < min)
		return -EINVAL;
	pkt->payload = hdr + op->length;
	pkt->payload_len = len - min;
	if (!(op->mask & RNIC_PAYLOAD) && pkt->payload_len)
		return -EINVAL;
	return 0;
}

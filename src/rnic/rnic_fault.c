/* rnic_fault.c — test-only fault hook on the receive path.
 *
 * Enabled by the environment variable JK_RNIC_FAULT (read by rnic_open):
 *   drop=P       drop a received packet with probability P
 *   dup=P        process it twice
 *   reorder=P    swap it with the packet before it
 *   corrupt=P    flip a bit of its payload (or last header byte): the
 *                ICRC check must drop it
 *   ce=RATE      mark CE on received ECT data above RATE (bit/s, k/m/g):
 *                a token bucket at RATE; over it, the probability of a
 *                mark grows linearly with the deficit up to 1 at
 *                ce_depth bytes (RED-like, so DCQCN does not oscillate)
 *   ce_depth=B   bytes of deficit for a certain mark (default 64k)
 *   seed=N       PRNG seed (default 1): runs are reproducible
 * e.g. JK_RNIC_FAULT=drop=0.01,dup=0.01,reorder=0.01,seed=7
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic_loc.h"

#define NS_PER_SEC 1000000000ull

struct rnic_fault {
	double drop, dup, reorder, corrupt;
	uint64_t ce_rate;          /* bit/s, 0 = no marking */
	int64_t ce_depth;          /* bytes */
	int64_t tokens;            /* bytes; negative = deficit */
	uint64_t tb_ns;
	uint64_t rng;
};

static double rnd(struct rnic_fault *f)
{
	/* xorshift64* */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (double)((f->rng * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

static int parse_prob(const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d >= 0 && d <= 1))
		return -EINVAL;
	*out = d;
	return 0;
}

static int parse_num(const char *v, uint64_t *out)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || d < 0)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': d *= 1e3; end++; break;
	case 'm': case 'M': d *= 1e6; end++; break;
	case 'g': case 'G': d *= 1e9; end++; break;
	default: break;
	}
	if (*end || !(d >= 0 && d < 1e19))
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

int rnic_fault_open(const char *spec, struct rnic_fault **out)
{
	struct rnic_fault *f = calloc(1, sizeof(*f));
	char buf[256], *save = NULL, *tok;
	uint64_t v;
	int err = 0;

	if (!f)
		return -ENOMEM;
	f->rng = 1;
	f->ce_depth = 64 * 1024;
	if (strlen(spec) >= sizeof(buf)) {
		err = -EINVAL;
		goto out;
	}
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			err = -EINVAL;
			break;
		}
		*eq++ = 0;
		if (!strcmp(tok, "drop"))
			err = parse_prob(eq, &f->drop);
		else if (!strcmp(tok, "dup"))
			err = parse_prob(eq, &f->dup);
		else if (!strcmp(tok, "reorder"))
			err = parse_prob(eq, &f->reorder);
		else if (!strcmp(tok, "corrupt"))
			err = parse_prob(eq, &f->corrupt);
		else if (!strcmp(tok, "ce"))
			err = parse_num(eq, &f->ce_rate);
		else if (!(err = parse_num(eq, &v)) && !strcmp(tok, "ce_depth"))
			f->ce_depth = v ? (int64_t)v : 1;
		else if (!err && !strcmp(tok, "seed"))
			f->rng = v ? v : 1;
		else
			err = -EINVAL;
	}
out:
	if (err) {
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

void rnic_fault_close(struct rnic_fault *f)
{
	free(f);
}

int rnic_fault_plan(struct rnic_fault *f, struct rnic_counters *cnt, int n, int *order)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		if (f->drop > 0 && rnd(f) < f->drop) {
			cnt->drop_fault++;
			continue;
		}
		order[m++] = i;
		if (f->dup > 0 && rnd(f) < f->dup) {
			cnt->fault_dup++;
			order[m++] = i;
		}
		if (m >= 2 && f->reorder > 0 && rnd(f) < f->reorder) {
			int t = order[m - 1];

			cnt->fault_reorder++;
			order[m - 1] = order[m - 2];
			order[m - 2] = t;
		}
	}
	return m;
}

void rnic_fault_mark(struct rnic_fault *f, struct rnic_counters *cnt,
		     struct rnic_rxseg *s, uint64_t now_ns)
{
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)s->ipudp;
	uint32_t len = RNIC_IPUDP_LEN + s->l4len;
	int64_t cap = f->ce_depth;

	if (f->corrupt > 0 && s->l4len > sizeof(struct jk_bth) + RNIC_ICRC_SIZE &&
	    rnd(f) < f->corrupt) {
		/* a byte the ICRC covers: just before the ICRC */
		s->l4[s->l4len - RNIC_ICRC_SIZE - 1] ^= 0x10;
		cnt->fault_corrupt++;
	}

	if (!f->ce_rate || s->l4len < sizeof(struct jk_bth))
		return;
	if ((ip->tos & JK_ECN_MASK) == 0)
		return;                       /* Not-ECT is never marked */
	if (!(rnic_opcode[s->l4[0]].mask & RNIC_PAYLOAD))
		return;                       /* ACK, NAK, CNP, read requests */
	if (f->tb_ns && now_ns > f->tb_ns) {
		uint64_t el = now_ns - f->tb_ns;

		if (el > NS_PER_SEC)
			el = NS_PER_SEC;
		f->tokens += (int64_t)((unsigned __int128)el * f->ce_rate / (8 * NS_PER_SEC));
		if (f->tokens > cap)
			f->tokens = cap;
	}
	if (!f->tb_ns)
		f->tokens = cap;
	f->tb_ns = now_ns;
	f->tokens -= len;
	if (f->tokens < -2 * cap)
		f->tokens = -2 * cap;         /* a bounded virtual queue */
	if (f->tokens < 0 && rnd(f) * (double)cap < (double)-f->tokens) {
		ip->tos |= JK_ECN_CE;
		cnt->fault_ce++;
	}
}

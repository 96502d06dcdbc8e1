/* rnic_icrc.c — CRC-32 and the RoCEv2 invariant CRC.
 *
 * The ICRC is defined by the IB spec (vol. 1, 7.8.1 and Annex A17) and
 * computed by Linux rxe (drivers/infiniband/sw/rxe/rxe_icrc.c): a CRC-32
 * over an 8-byte LRH of all ones, the IP header with its variant fields
 * (TOS, TTL, header checksum) set to ones, the UDP header with its checksum
 * set to ones, the BTH with its reserved byte set to ones, the remaining
 * transport headers and the payload with pad, then inverted.  The CRC state
 * after the masked LRH is the constant RNIC_ICRC_SEED.
 *
 * CRC-32 here is slice-by-8 over tables built once (pthread_once).
 */
#include <errno.h>
#include <pthread.h>
#include <sys/uio.h>

#include "rnic/rnic_hdr.h"

#define CRC32_POLY_LE   0xedb88320u
#define RNIC_ICRC_SEED  0xdebb20e3u   /* crc32_le(~0, 8 x 0xff) */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32_POLY_LE : 0);
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t rnic_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v = le64toh(v) ^ crc;
		crc = crc_tab[7][v & 0xff] ^
		      crc_tab[6][(v >> 8) & 0xff] ^
		      crc_tab[5][(v >> 16) & 0xff] ^
		      crc_tab[4][(v >> 24) & 0xff] ^
		      crc_tab[3][(v >> 32) & 0xff] ^
		      crc_tab[2][(v >> 40) & 0xff] ^
		      crc_tab[1][(v >> 48) & 0xff] ^
		      crc_tab[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* CRC state after the masked IPv4, UDP and BTH headers. */
static uint32_t icrc_hdr(const void *ip_udp, const void *bth)
{
	uint8_t ps[sizeof(struct rnic_ipv4) + sizeof(struct rnic_udp) +
		   sizeof(struct rnic_bth)];
	struct rnic_ipv4 *ip = (struct rnic_ipv4 *)ps;
	struct rnic_udp *udp = (struct rnic_udp *)(ip + 1);
	struct rnic_bth *b = (struct rnic_bth *)(udp + 1);

	memcpy(ps, ip_udp, sizeof(*ip) + sizeof(*udp));
	memcpy(b, bth, sizeof(*b));
	ip->tos = 0xff;
	ip->ttl = 0xff;
	ip->check.raw = 0xffff;
	udp->check.raw = 0xffff;
	b->fqpn.raw |= htonl(~BTH_QPN_MASK);   /* FECN, BECN, resv6 */
	return rnic_crc32(RNIC_ICRC_SEED, ps, sizeof(ps));
}

uint32_t rnic_icrc(const void *ip_udp, const void *bth, size_t hdr_len,
		   const struct iovec *iov, int iovcnt)
{
	uint32_t crc = icrc_hdr(ip_udp, bth);

	crc = rnic_crc32(crc, (const uint8_t *)bth + sizeof(struct rnic_bth),
			 hdr_len - sizeof(struct rnic_bth));
	for (int i = 0; i < iovcnt; i++)
		crc = rnic_crc32(crc, iov[i].iov_base, iov[i].iov_len);
	return ~crc;
}

int rnic_icrc_check(const void *ip_udp, const uint8_t *bth, uint32_t paylen)
{
	uint32_t crc;

	if (paylen < sizeof(struct rnic_bth) + RNIC_ICRC_SIZE)
		return -EBADMSG;
	crc = icrc_hdr(ip_udp, bth);
	crc = rnic_crc32(crc, bth + sizeof(struct rnic_bth),
			 paylen - sizeof(struct rnic_bth) - RNIC_ICRC_SIZE);
	return ~crc == rnic_icrc_get(bth + paylen - RNIC_ICRC_SIZE) ? 0 : -EBADMSG;
}

/* cm_mad.c — builds and parses Communication Management MADs, the IP CM
 * header and port-space service IDs (see cm_mad.h).
 *
 * Each message is a table of fields, one row per field as the IBTA and the
 * kernel's ibta_vol1_c12.h list them: the byte in the message (counted
 * after the 24-byte MAD header), the first bit in that byte (0 = most
 * significant), the width in bits, and where the value lives in struct
 * cm_msg.  A field may cross bytes; it is big-endian on the wire.  One
 * pair of loops reads and writes every message through its table.
 */
#include <errno.h>
#include <string.h>

#include "rnic/cm_mad.h"

/* One field of a MAD.  width 0: an array of len bytes.  A value the wire
 * splits (the ECE vendor IDs) is several rows, each holding the value's
 * bits from lsb up; vbits is the width of the whole value.  max: the
 * largest value not reserved (0: any value vbits holds). */
struct cm_field {
	uint16_t off;       /* byte in the MAD */
	uint8_t  bit;       /* first bit in that byte, 0 = most significant */
	uint8_t  width;     /* bits here, 1..64 with bit + width <= 64 */
	uint8_t  lsb;       /* the value's bit in this piece's last (least significant) bit */
	uint8_t  vbits;     /* bits in the whole value */
	uint16_t len;       /* bytes, arrays only */
	uint16_t member;    /* offsetof(struct cm_msg, ...) */
	uint8_t  size;      /* sizeof the member: 1, 2, 4 or 8 */
	uint8_t  max;
};

#define MSIZE(m) sizeof(((struct cm_msg *)0)->m)

#define FIELD(off, b, w, lsb, vbits, m, mx)                                   \
	{ (off), (b), (w), (lsb), (vbits), 0, offsetof(struct cm_msg, m), MSIZE(m), (mx) }
/* In the header (absolute byte), or at byte `byte` of the message as the
 * IBTA tables count (after the header). */
#define HDR(off, w, m)          FIELD(off, 0, w, 0, w, m, 0)
#define U(byte, b, w, m)        FIELD(CM_MAD_HDR_LEN + (byte), b, w, 0, w, m, 0)
#define UMAX(byte, b, w, m, mx) FIELD(CM_MAD_HDR_LEN + (byte), b, w, 0, w, m, mx)
#define PART(byte, w, m, lsb, vbits) FIELD(CM_MAD_HDR_LEN + (byte), 0, w, lsb, vbits, m, 0)
#define BYTES(byte, m)                                                        \
	{ CM_MAD_HDR_LEN + (byte), 0, 0, 0, 0, MSIZE(m), offsetof(struct cm_msg, m), 0, 0 }

/* A path (REQ bytes 52..95 primary, 96..139 alternate). */
#define PATH(byte, p)                                                         \
	U((byte) + 0, 0, 16, p.local_lid),  U((byte) + 2, 0, 16, p.remote_lid), \
	BYTES((byte) + 4, p.local_gid),     BYTES((byte) + 20, p.remote_gid),   \
	U((byte) + 36, 0, 20, p.flow_label), U((byte) + 39, 2, 6, p.packet_rate), \
	U((byte) + 40, 0, 8, p.traffic_class), U((byte) + 41, 0, 8, p.hop_limit), \
	U((byte) + 42, 0, 4, p.sl),         U((byte) + 42, 4, 1, p.subnet_local), \
	U((byte) + 43, 0, 5, p.local_ack_timeout)

static const struct cm_field hdr_fields[] = {
	HDR(0, 8, hdr.base_version),    HDR(1, 8, hdr.mgmt_class),
	HDR(2, 8, hdr.class_version),   HDR(3, 8, hdr.method),
	HDR(4, 16, hdr.status),         HDR(6, 16, hdr.class_specific),
	HDR(8, 64, hdr.tid),            HDR(16, 16, hdr.attr_id),
	HDR(20, 32, hdr.attr_mod),      /* bytes 18..19 reserved */
};

static const struct cm_field req_fields[] = {
	U(0, 0, 32, req.local_comm_id),     U(5, 0, 24, req.vendor_id),
	U(8, 0, 64, req.service_id),
	U(16, 0, 64, req.local_ca_guid),
	U(28, 0, 32, req.local_qkey),
	U(32, 0, 24, req.local_qpn),        U(35, 0, 8, req.responder_resources),
	U(36, 0, 24, req.local_eecn),       U(39, 0, 8, req.initiator_depth),
	U(40, 0, 24, req.remote_eecn),
	U(43, 0, 5, req.remote_cm_response_timeout),
	U(43, 5, 2, req.transport_type),    U(43, 7, 1, req.flow_control),
	U(44, 0, 24, req.starting_psn),
	U(47, 0, 5, req.local_cm_response_timeout), U(47, 5, 3, req.retry_count),
	U(48, 0, 16, req.pkey),
	U(50, 0, 4, req.path_mtu),          U(50, 4, 1, req.rdc_exists),
	U(50, 5, 3, req.rnr_retry_count),
	U(51, 0, 4, req.max_cm_retries),    U(51, 4, 1, req.srq),
	U(51, 5, 3, req.ext_transport_type),
	PATH(52, req.primary),
	PATH(96, req.alternate),
	U(139, 5, 1, req.sap_supported),
};

static const struct cm_field mra_fields[] = {
	U(0, 0, 32, mra.local_comm_id),     U(4, 0, 32, mra.remote_comm_id),
	UMAX(8, 0, 2, mra.msg_mraed, CM_MSG_OTHER),
	U(9, 0, 5, mra.service_timeout),
};

static const struct cm_field rej_fields[] = {
	U(0, 0, 32, rej.local_comm_id),     U(4, 0, 32, rej.remote_comm_id),
	UMAX(8, 0, 2, rej.msg_rejected, CM_MSG_OTHER),
	UMAX(9, 0, 7, rej.ari_len, CM_REJ_ARI_LEN),
	U(10, 0, 16, rej.reason),
	BYTES(12, rej.ari),
};

static const struct cm_field rep_fields[] = {
	U(0, 0, 32, rep.local_comm_id),     U(4, 0, 32, rep.remote_comm_id),
	U(8, 0, 32, rep.local_qkey),
	U(12, 0, 24, rep.local_qpn),        PART(15, 8, rep.vendor_id, 16, 24),
	U(16, 0, 24, rep.local_eecn),       PART(19, 8, rep.vendor_id, 8, 24),
	U(20, 0, 24, rep.starting_psn),     PART(23, 8, rep.vendor_id, 0, 24),
	U(24, 0, 8, rep.responder_resources), U(25, 0, 8, rep.initiator_depth),
	U(26, 0, 5, rep.target_ack_delay),  U(26, 5, 2, rep.failover_accepted),
	U(26, 7, 1, rep.flow_control),
	U(27, 0, 3, rep.rnr_retry_count),   U(27, 3, 1, rep.srq),
	U(28, 0, 64, rep.local_ca_guid),
};

static const struct cm_field rtu_fields[] = {
	U(0, 0, 32, rtu.local_comm_id),     U(4, 0, 32, rtu.remote_comm_id),
};

static const struct cm_field dreq_fields[] = {
	U(0, 0, 32, dreq.local_comm_id),    U(4, 0, 32, dreq.remote_comm_id),
	U(8, 0, 24, dreq.remote_qpn),
};

static const struct cm_field drep_fields[] = {
	U(0, 0, 32, drep.local_comm_id),    U(4, 0, 32, drep.remote_comm_id),
};

static const struct cm_field sidr_req_fields[] = {
	U(0, 0, 32, sidr_req.request_id),   U(4, 0, 16, sidr_req.pkey),
	U(8, 0, 64, sidr_req.service_id),
};

static const struct cm_field sidr_rep_fields[] = {
	U(0, 0, 32, sidr_rep.request_id),   U(4, 0, 8, sidr_rep.status),
	UMAX(5, 0, 8, sidr_rep.info_len, CM_SIDR_INFO_LEN),
	PART(6, 16, sidr_rep.vendor_id, 8, 24),
	U(8, 0, 24, sidr_rep.qpn),          PART(11, 8, sidr_rep.vendor_id, 0, 24),
	U(12, 0, 64, sidr_rep.service_id),
	U(20, 0, 32, sidr_rep.qkey),
	BYTES(24, sidr_rep.info),
};

/* A message: its fields, then private data from priv_off to the end. */
struct cm_layout {
	const char            *name;
	const struct cm_field *fields;
	unsigned               nfields;
	uint16_t               priv_off;    /* byte in the MAD */
	uint16_t               priv_max;    /* = CM_MAD_LEN - priv_off */
	uint16_t               priv_data;   /* offsetof(struct cm_msg, x.private_data) */
	uint16_t               priv_len;    /* offsetof(struct cm_msg, x.private_len) */
};

#define LAYOUT(attr, msg, byte)                                               \
	[CM_ATTR_##attr - CM_ATTR_REQ] = {                                    \
		#attr, msg##_fields, sizeof(msg##_fields) / sizeof(msg##_fields[0]), \
		CM_MAD_HDR_LEN + (byte), MSIZE(msg.private_data),             \
		offsetof(struct cm_msg, msg.private_data),                    \
		offsetof(struct cm_msg, msg.private_len) }

static const struct cm_layout layouts[] = {
	LAYOUT(REQ, req, 140),          LAYOUT(MRA, mra, 10),
	LAYOUT(REJ, rej, 84),           LAYOUT(REP, rep, 36),
	LAYOUT(RTU, rtu, 8),            LAYOUT(DREQ, dreq, 12),
	LAYOUT(DREP, drep, 8),          LAYOUT(SIDR_REQ, sidr_req, 16),
	LAYOUT(SIDR_REP, sidr_rep, 96),
};

/* Private data runs to the end of the MAD in every message. */
_Static_assert(140 + CM_REQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "REQ layout");
_Static_assert(10 + CM_MRA_PRIVATE_LEN == CM_MAD_DATA_LEN, "MRA layout");
_Static_assert(84 + CM_REJ_PRIVATE_LEN == CM_MAD_DATA_LEN, "REJ layout");
_Static_assert(12 + CM_REJ_ARI_LEN == 84, "REJ ARI layout");
_Static_assert(36 + CM_REP_PRIVATE_LEN == CM_MAD_DATA_LEN, "REP layout");
_Static_assert(8 + CM_RTU_PRIVATE_LEN == CM_MAD_DATA_LEN, "RTU layout");
_Static_assert(12 + CM_DREQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "DREQ layout");
_Static_assert(8 + CM_DREP_PRIVATE_LEN == CM_MAD_DATA_LEN, "DREP layout");
_Static_assert(16 + CM_SIDR_REQ_PRIVATE_LEN == CM_MAD_DATA_LEN, "SIDR_REQ layout");
_Static_assert(96 + CM_SIDR_REP_PRIVATE_LEN == CM_MAD_DATA_LEN, "SIDR_REP layout");
_Static_assert(24 + CM_SIDR_INFO_LEN == 96, "SIDR_REP info layout");
_Static_assert(CM_RTU_PRIVATE_LEN <= UINT8_MAX, "private_len is a uint8_t");

static const struct cm_layout *layout_of(uint16_t attr_id)
{
	unsigned i = (unsigned)attr_id - CM_ATTR_REQ;

	return i < sizeof(layouts) / sizeof(layouts[0]) ? &layouts[i] : NULL;
}

/* ---- bits ----------------------------------------------------------------- */

static uint64_t width_mask(unsigned width)
{
	return width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
}

/* The bytes a field touches, as one big-endian number. */
static unsigned span(const struct cm_field *f)
{
	return (f->bit + f->width + 7) / 8;
}

static uint64_t get_bits(const uint8_t *mad, const struct cm_field *f)
{
	unsigned n = span(f);
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | mad[f->off + i];
	return v >> (n * 8 - f->bit - f->width) & width_mask(f->width);
}

static void put_bits(uint8_t *mad, const struct cm_field *f, uint64_t value)
{
	unsigned n = span(f), shift = n * 8 - f->bit - f->width;
	uint64_t mask = width_mask(f->width) << shift, v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | mad[f->off + i];
	v = (v & ~mask) | (value << shift & mask);
	for (unsigned i = n; i-- > 0; v >>= 8)
		mad[f->off + i] = v & 0xff;
}

/* A host integer member of struct cm_msg: 1, 2, 4 or 8 bytes. */
union cm_int {
	uint8_t  u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
};

static uint64_t load(const struct cm_msg *m, const struct cm_field *f)
{
	union cm_int v;

	memcpy(&v, (const uint8_t *)m + f->member, f->size);
	switch (f->size) {
	case 1:  return v.u8;
	case 2:  return v.u16;
	case 4:  return v.u32;
	default: return v.u64;
	}
}

static void store(struct cm_msg *m, const struct cm_field *f, uint64_t value)
{
	union cm_int v;

	switch (f->size) {
	case 1:  v.u8 = (uint8_t)value;   break;
	case 2:  v.u16 = (uint16_t)value; break;
	case 4:  v.u32 = (uint32_t)value; break;
	default: v.u64 = value;           break;
	}
	memcpy((uint8_t *)m + f->member, &v, f->size);
}

/* The whole value v fits its field and is not reserved. */
static int value_ok(const struct cm_field *f, uint64_t v)
{
	return v <= width_mask(f->vbits) && (!f->max || v <= f->max);
}

/* ---- messages ------------------------------------------------------------- */

/* Values no field width can refuse: a REQ with transport type 3 must name
 * XRC in the extended transport type. */
static int combination_ok(const struct cm_msg *m)
{
	return m->hdr.attr_id != CM_ATTR_REQ ||
	       m->req.transport_type != CM_TRANSPORT_EXT ||
	       m->req.ext_transport_type == CM_EXT_TRANSPORT_XRC;
}

static int header_ok(const struct cm_mad_hdr *h)
{
	return h->base_version == CM_MAD_BASE_VERSION && h->mgmt_class == CM_MGMT_CLASS &&
	       h->class_version == CM_CLASS_VERSION && h->method == CM_METHOD_SEND;
}

void cm_msg_init(struct cm_msg *m, enum cm_attr attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = CM_MAD_BASE_VERSION;
	m->hdr.mgmt_class = CM_MGMT_CLASS;
	m->hdr.class_version = CM_CLASS_VERSION;
	m->hdr.method = CM_METHOD_SEND;
	m->hdr.tid = tid;
	m->hdr.attr_id = attr;
}

int cm_mad_build(const struct cm_msg *m, uint8_t mad[CM_MAD_LEN])
{
	const struct cm_layout *l = layout_of(m->hdr.attr_id);
	const uint8_t *base = (const uint8_t *)m;
	uint8_t plen;

	if (!l || !header_ok(&m->hdr) || !combination_ok(m))
		return -EINVAL;
	for (unsigned i = 0; i < l->nfields; i++)
		if (l->fields[i].width && !value_ok(&l->fields[i], load(m, &l->fields[i])))
			return -EINVAL;
	plen = base[l->priv_len];
	if (plen > l->priv_max)
		return -EINVAL;

	memset(mad, 0, CM_MAD_LEN);
	for (unsigned i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++)
		put_bits(mad, &hdr_fields[i], load(m, &hdr_fields[i]));
	for (unsigned i = 0; i < l->nfields; i++) {
		const struct cm_field *f = &l->fields[i];

		if (f->width)
			put_bits(mad, f, load(m, f) >> f->lsb);
		else
			memcpy(mad + f->off, base + f->member, f->len);
	}
	memcpy(mad + l->priv_off, base + l->priv_data, plen);
	return 0;
}

static enum cm_mad_error parse(const uint8_t *buf, size_t len, struct cm_msg *m)
{
	const struct cm_layout *l;
	uint8_t *base = (uint8_t *)m;

	if (len < CM_MAD_LEN)
		return CM_MAD_ERR_TOO_SHORT;
	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < sizeof(hdr_fields) / sizeof(hdr_fields[0]); i++)
		store(m, &hdr_fields[i], get_bits(buf, &hdr_fields[i]));
	if (m->hdr.base_version != CM_MAD_BASE_VERSION)
		return CM_MAD_ERR_BAD_BASE_VERSION;
	if (m->hdr.mgmt_class != CM_MGMT_CLASS)
		return CM_MAD_ERR_NOT_CM_CLASS;
	if (m->hdr.class_version != CM_CLASS_VERSION)
		return CM_MAD_ERR_BAD_CLASS_VERSION;
	if (m->hdr.method != CM_METHOD_SEND)
		return CM_MAD_ERR_BAD_METHOD;
	l = layout_of(m->hdr.attr_id);
	if (!l)
		return CM_MAD_ERR_UNSUPPORTED_ATTR;

	for (unsigned i = 0; i < l->nfields; i++) {
		const struct cm_field *f = &l->fields[i];
		uint64_t v;

		if (!f->width) {
			memcpy(base + f->member, buf + f->off, f->len);
			continue;
		}
		v = load(m, f) | get_bits(buf, f) << f->lsb;
		if (!value_ok(f, v))
			return CM_MAD_ERR_BAD_FIELD;
		store(m, f, v);
	}
	memcpy(base + l->priv_data, buf + l->priv_off, l->priv_max);
	base[l->priv_len] = (uint8_t)l->priv_max;
	return combination_ok(m) ? CM_MAD_OK : CM_MAD_ERR_BAD_FIELD;
}

static const int error_errno[CM_MAD_ERR_COUNT] = {
	[CM_MAD_OK] = 0,
#define CM_MAD_ERR_ERRNO(up, low, err) [CM_MAD_ERR_##up] = err,
	CM_MAD_ERRORS(CM_MAD_ERR_ERRNO)
#undef CM_MAD_ERR_ERRNO
};

static const char *const error_name[CM_MAD_ERR_COUNT] = {
	[CM_MAD_OK] = "ok",
#define CM_MAD_ERR_NAME(up, low, err) [CM_MAD_ERR_##up] = #low,
	CM_MAD_ERRORS(CM_MAD_ERR_NAME)
#undef CM_MAD_ERR_NAME
};

int cm_mad_parse(const uint8_t *buf, size_t len, struct cm_msg *out,
		 enum cm_mad_error *why)
{
	enum cm_mad_error e = parse(buf, len, out);

	if (why)
		*why = e;
	return -error_errno[e];
}

const char *cm_mad_error_name(enum cm_mad_error e)
{
	return (unsigned)e < CM_MAD_ERR_COUNT ? error_name[e] : "?";
}

const char *cm_attr_name(uint16_t attr_id)
{
	const struct cm_layout *l = layout_of(attr_id);

	return l ? l->name : NULL;
}

const char *cm_rej_reason_name(uint16_t reason)
{
	switch (reason) {
#define CM_REJ_NAME(name, value) case value: return #name;
	CM_REJ_REASONS(CM_REJ_NAME)
#undef CM_REJ_NAME
	}
	return NULL;
}

/* ---- IP-based CM header and service IDs ------------------------------------ */

#define CMA_IPV4_OFF 12   /* an IPv4 address in its 16-byte field */

int cm_cma_hdr_build(const struct cm_cma_hdr *h, uint8_t out[CM_CMA_HDR_LEN])
{
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	memset(out, 0, CM_CMA_HDR_LEN);
	out[0] = CM_CMA_VERSION;
	out[1] = (uint8_t)(h->ip_version << 4);
	out[2] = h->src_port >> 8;
	out[3] = h->src_port & 0xff;
	if (h->ip_version == 4) {
		memcpy(out + 4 + CMA_IPV4_OFF, h->src_addr + CMA_IPV4_OFF, 4);
		memcpy(out + 20 + CMA_IPV4_OFF, h->dst_addr + CMA_IPV4_OFF, 4);
	} else {
		memcpy(out + 4, h->src_addr, 16);
		memcpy(out + 20, h->dst_addr, 16);
	}
	return 0;
}

int cm_cma_hdr_parse(const uint8_t *buf, size_t len, struct cm_cma_hdr *out)
{
	if (len < CM_CMA_HDR_LEN)
		return -EMSGSIZE;
	if (buf[0] != CM_CMA_VERSION)
		return -EPROTONOSUPPORT;
	memset(out, 0, sizeof(*out));
	out->ip_version = buf[1] >> 4;
	out->src_port = (uint16_t)(buf[2] << 8 | buf[3]);
	if (out->ip_version == 4) {
		memcpy(out->src_addr + CMA_IPV4_OFF, buf + 4 + CMA_IPV4_OFF, 4);
		memcpy(out->dst_addr + CMA_IPV4_OFF, buf + 20 + CMA_IPV4_OFF, 4);
	} else if (out->ip_version == 6) {
		memcpy(out->src_addr, buf + 4, 16);
		memcpy(out->dst_addr, buf + 20, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

int cm_service_id_split(uint64_t sid, uint16_t *ps, uint16_t *port)
{
	if (sid >> 32)
		return -EINVAL;
	if (ps)
		*ps = (uint16_t)(sid >> 16);
	if (port)
		*port = (uint16_t)sid;
	return 0;
}

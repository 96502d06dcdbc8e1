/* cursor.h — the bounded cursor every verdict function reads a frame
 * through, and the one place the two compilers differ.
 *
 * The verdict code of src/pipeline/ is compiled twice: by gcc into core
 * (the userspace datapath, the tests, the fuzzers) and by clang -target
 * bpf into the kernel fast path's programs (src/bpf/).  It never touches
 * frame bytes directly: it copies a header onto its own stack with
 * jk_cur_load(), which fails (nonzero) for any byte outside the frame.
 * In core that is a bounds check and a copy of a constant size; in a tc
 * program it is bpf_skb_load_bytes(), which reads linear and paged data
 * alike (a super-frame's later segments live in pages).  So a verdict
 * function can look at any offset of any frame, and the verifier sees only
 * constant-size stack copies.
 *
 * A cursor also says what the frame's bytes cannot: whether a device took
 * an 802.1Q tag out of it before we saw it (the kernel does that before
 * tc ingress; in core the tag is still in the bytes).
 */
#ifndef JK_PIPELINE_CURSOR_H
#define JK_PIPELINE_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

/* Every function of src/pipeline/ is inlined where it is used: a BPF
 * program may call no function it does not own, and core keeps one copy
 * per caller at -O2 anyway. */
#define JK_PIPE_FN static inline __attribute__((always_inline))

#ifdef __bpf__
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct jk_cursor {
	struct __sk_buff *skb;
	bool vlan;              /* the kernel took an 802.1Q tag out (skb->vlan_present) */
};

JK_PIPE_FN int jk_cur_load(const struct jk_cursor *c, uint32_t off, void *to, uint32_t n)
{
	return bpf_skb_load_bytes(c->skb, off, to, n) ? -1 : 0;
}

JK_PIPE_FN uint32_t jk_cur_len(const struct jk_cursor *c)
{
	return c->skb->len;
}

JK_PIPE_FN bool jk_cur_vlan_tag(const struct jk_cursor *c)
{
	return c->vlan;
}
#else
#include <string.h>

struct jk_cursor {
	const uint8_t *data;
	uint32_t len;
};

JK_PIPE_FN struct jk_cursor jk_cursor_of(const uint8_t *data, uint32_t len)
{
	return (struct jk_cursor){ .data = data, .len = len };
}

JK_PIPE_FN int jk_cur_load(const struct jk_cursor *c, uint32_t off, void *to, uint32_t n)
{
	if (off > c->len || n > c->len - off)
		return -1;
	memcpy(to, c->data + off, n);
	return 0;
}

JK_PIPE_FN uint32_t jk_cur_len(const struct jk_cursor *c)
{
	return c->len;
}

/* In core an 802.1Q tag stays in the bytes (EtherType 0x8100). */
JK_PIPE_FN bool jk_cur_vlan_tag(const struct jk_cursor *c)
{
	return false;
}
#endif

#endif

/* ebpf.h — the kernel fast path's provider (docs/datapath.md, "Kernel fast
 * path"): jakirod loads the programs of src/bpf/, creates the collect_md
 * vxlan device, hooks every vNIC's host-side device, and mirrors the
 * core's tables into the programs' maps.  The core (struct jk_dp) stays
 * the control plane's truth: every change is validated and applied there
 * first, then mirrored here, under dp_lock.  The kernel forwards; jakirod
 * only reads counters back and ages the RCFT.
 *
 * Functions return 0 or -errno, with a message in err where they take one.
 */
#ifndef JK_EBPF_H
#define JK_EBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jakirod;

#define JK_EBPF_VXLAN_DEV "jk-vxlan"
#define JK_EBPF_SHAPER_DEV "jk-shape"      /* egress htb (docs/fastpath.md, "Isolation") */
#define JK_EBPF_SHAPER_PEER "jk-shape-r"

/* Loads the programs (the verifier's refusal is the message), creates
 * the vxlan device and hooks it.  Nothing is left behind on failure. */
int jk_ebpf_open(struct jakirod *d, char *err, size_t errlen);
/* Unhooks everything and removes the vxlan device. */
void jk_ebpf_close(struct jakirod *d);

/* At start: a device `ifname` left by a killed jakirod on this datapath,
 * whose vNIC comes back: taken over, not made anew. */
bool jk_ebpf_adoptable(struct jakirod *d, const char *ifname);
/* After the start-up vNICs are up: what a killed jakirod left that no vNIC
 * uses any more is removed. */
void jk_ebpf_sweep_leftovers(struct jakirod *d);

/* vNIC id has just been added to the core with its port open: its map
 * entries, then its device hooked. */
int jk_ebpf_vnic_attach(struct jakirod *d, uint16_t id, char *err, size_t errlen);
/* Before vNIC id leaves the core: unhooked, its entries and flows gone. */
void jk_ebpf_vnic_detach(struct jakirod *d, uint16_t id);
/* vNIC id's settings changed in the core (MTU, quota, DSCP, DHTB): the
 * maps, and its htb classes, follow. */
void jk_ebpf_vnic_update(struct jakirod *d, uint16_t id);
/* The core's VLT entry (vni, ip) changed (added, replaced or deleted). */
void jk_ebpf_vlt_sync(struct jakirod *d, uint32_t vni, uint32_t ip);

/* Copies the programs' counters and RCFT fill into the core's counters,
 * which show, stats and /metrics read.  Under dp_lock. */
void jk_ebpf_sync_counters(struct jakirod *d);
/* Copies up to max entries of the kernel's RCFT, in core's layout (for
 * show rcft); how many.  The control thread only, without dp_lock. */
struct jk_rcft_entry;
unsigned jk_ebpf_rcft_copy(struct jakirod *d, struct jk_rcft_entry *out, unsigned max);
/* Removes RCFT entries idle for longer than idle_ns, giving back their
 * vNIC's quota slot.  Under dp_lock. */
void jk_ebpf_age(struct jakirod *d, uint64_t idle_ns);

/* What the kernel's vxlan device dropped before the programs saw it (no
 * I flag, malformed, RFC 6040's outer CE over inner Not-ECT): its
 * receive errors and drops.  0 or -errno. */
int jk_ebpf_underlay_stats(struct jakirod *d, uint64_t *rx_errors, uint64_t *rx_dropped);

#endif

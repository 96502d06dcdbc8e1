/* netns_lo.h — for tests that run soft-RNIC traffic over loopback: moves
 * the process into a private network namespace with lo up, so nothing
 * reaches the host's namespaces and nothing is left behind.  Needs root.
 * Returns 0, or -1 (the caller fails its tests: never a quiet skip).
 */
#ifndef JK_TESTS_NETNS_LO_H
#define JK_TESTS_NETNS_LO_H

#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Sets lo up or down in the current namespace (as `ip link set lo up`). */
static inline int set_lo_up(int up)
{
	struct ifreq ifr;
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		err = -1;
	ifr.ifr_flags = (short)(up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
	if (!err && ioctl(fd, SIOCSIFFLAGS, &ifr))
		err = -1;
	close(fd);
	return err;
}

static inline int enter_netns_with_lo(void)
{
	if (unshare(CLONE_NEWNET))
		return -1;
	return set_lo_up(1);
}

#endif

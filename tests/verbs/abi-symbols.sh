#!/usr/bin/env bash
# The drop-in libibverbs.so.1 exports what Debian's exports: the same
# symbols at the same default versions (objdump -T), and every binary of
# ibverbs-utils and perftest — with the libmlx5/libefa/librdmacm they also
# link — resolves all its symbols against it (ldd -r).
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build-san}
ours=$BUILD/lib/verbs/libibverbs.so.1
debian=$(ls /usr/lib/*-linux-gnu/libibverbs.so.1 2>/dev/null | head -1)
[ -e "$ours" ] || { echo "# $ours missing (make)"; exit 77; }
[ -n "$debian" ] || { echo "# Debian's libibverbs1 missing (scripts/install-deps --test)"; exit 77; }
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

exports() {   # default-version symbols: "VERSION NAME"
	objdump -T "$1" | awk '$2 == "g" && $NF !~ /^IBVERBS/ && $(NF-1) ~ /^IBVERBS/ {print $(NF-1), $NF}' | sort
}
d=$(diff <(exports "$debian") <(exports "$ours"))
n=$(exports "$debian" | wc -l)
if [ -z "$d" ] && [ "$n" -gt 100 ]; then
	ok "the same $n symbols at the same versions as $debian"
else
	not_ok "symbol set differs from $debian ($n symbols there)"
	printf '%s\n' "$d" | head -20 | sed 's/^/#   /'
fi
# beyond them, only the RDMA CM's entry point for libjakiro-ucma.so
objdump -T "$ours" | awk '$2 == "g" && $(NF-1) !~ /^IBVERBS/ && $4 != "*UND*" &&
	!($(NF-1) == "JAKIRO_PRIVATE_1" && ($NF == "jakiro_ucma_entry_points" || $NF == "JAKIRO_PRIVATE_1"))' |
	grep -q . &&
	not_ok "nothing exported beyond libibverbs' symbols and the CM's entry point" ||
	ok "nothing exported beyond libibverbs' symbols and the CM's entry point"
objdump -p "$ours" | grep -qE "SONAME +libibverbs.so.1$" && ok "soname libibverbs.so.1" || not_ok "soname libibverbs.so.1"

for b in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_write_lat \
	 ib_read_lat ib_send_lat; do
	p=$(command -v $b) || { not_ok "$b installed"; continue; }
	dir=$(cd "$(dirname "$ours")" && pwd)
	out=$(LD_LIBRARY_PATH=$dir ldd -r "$p" 2>&1)
	if printf '%s\n' "$out" | grep -q "libibverbs.so.1 => $dir/libibverbs.so.1" &&
	   ! printf '%s\n' "$out" | grep -qiE "undefined symbol|not found|version .* not found"; then
		ok "$b loads the drop-in and resolves every symbol"
	else
		not_ok "$b loads the drop-in and resolves every symbol"
		printf '%s\n' "$out" | grep -iE "undefined|not found|libibverbs" | head -5 | sed 's/^/#   /'
	fi
done

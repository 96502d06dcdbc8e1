#!/usr/bin/env bash
# librdmacm programs, unmodified, in container tenants through jakiro:
# Debian's rdmacm-utils (rping with its data verified, ucmatose, udaddy over
# UD/SIDR, rdma_server/rdma_client, rstream over rsockets, cmtime, and
# build/bin/jk_cm_lat against cmtime's server) between tenants on two
# hosts, over the drop-in libibverbs and its in-process RDMA CM
# (`jakiro-lab exec --verbs`).  Each is held to what it prints.  Also:
# a connection to a port nobody listens on is refused (REJ, reason 8), also
# in a tenant where no program uses RDMA (from the ICMP port unreachable);
# two servers of one tenant on two ports each get their own clients; a
# server killed mid-connection leaves its port free for the next one.
# libfabric's fi_pingpong over its verbs provider: FI_EP_MSG, and FI_EP_RDM
# through ofi_rxm.  rdma_xserver/xclient (RC), riostream (rsockets' RDMA
# WRITEs into a mapped buffer that the receiver spins on).  perftest with
# -R (all its connections through RDMA CM): ib_write_bw, ib_send_bw,
# ib_read_lat, and once with a server slowed between its control listener
# and its data listener (a REQ that comes between two listeners waits for
# the second instead of being refused).  Storage over RDMA: Debian's tgt
# serving a LUN over iSER to libiscsi's iscsi-inq, iscsi-readcapacity16,
# iscsi-perf and iscsi-test-cu (reads and writes, the written blocks
# checked in the LUN's file).  UCX's client/server connection
# establishment through its rdmacm CM (ucx-utils' io_demo: endpoints from a
# sockaddr), each host once as the server, and a UCX server whose client
# was killed mid-transfer serving the next one.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need python3 rping ucmatose udaddy rdma_server rdma_client rdma_xserver rdma_xclient rstream riostream \
	cmtime ss fi_info fi_pingpong ib_write_bw ib_send_bw ib_read_lat gdb iperf3 qperf \
	tgtd tgtadm iscsi-inq iscsi-readcapacity16 iscsi-perf iscsi-test-cu
[ -x "$JAKIRO_BIN/jakiro-verbs" ] || { echo "# jakiro-verbs not built"; exit 77; }

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

# The RDMA CM port PORT (TCP port space) is reserved in tenant NAME: the
# server has bound it (the CM's reservation is an abstract Unix socket).
cm_bound() {   # NAME PORT [PS]
	lab exec "$1" -- ss -xa | grep -q "@jakiro-rdma-cm/port/${3:-0x106}/$2 "
}

# cm_pair NAME SERVER CLIENT PORT REGEX-CLIENT REGEX-SERVER SERVER-CMD -- CLIENT-CMD:
# the server in the background, the client once the port is bound; both
# must exit 0 and print what the regexes ask.
cm_pair() {
	local name=$1 srv=$2 cli=$3 port=$4 rc_re=$5 rs_re=$6; shift 6
	local -a scmd=() ccmd
	local log
	log="$WORK/$(printf '%s' "$name" | tr -c 'A-Za-z0-9' _)"
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	lab_bg exec --verbs "$srv" -- timeout 60 "${scmd[@]}" > "$log.srv" 2>&1
	local spid=$!
	if ! wait_until 10 cm_bound "$srv" "$port" "${PS:-0x106}"; then
		not_ok "$name" "server did not bind port $port: $(tail -3 "$log.srv" | tr '\n' ' ')"
		kill $spid 2>/dev/null; wait $spid 2>/dev/null; return 1
	fi
	lab exec --verbs "$cli" -- timeout 60 "${ccmd[@]}" > "$log.cli" 2>&1
	local cli_ok=0 srv_ok=0
	cm_example_ok $? "$log.cli" "$rc_re" && cli_ok=1
	[ $cli_ok = 1 ] || kill $spid 2>/dev/null
	wait $spid
	cm_example_ok $? "$log.srv" "$rs_re" && srv_ok=1
	if [ $cli_ok = 1 ] && [ $srv_ok = 1 ] && grep -qE "$rc_re" "$log.cli" && grep -qE "$rs_re" "$log.srv"; then
		ok "$name: $(grep -E "$rc_re" "$log.cli" | tail -1 | tr -s ' \t' ' ')"
	else
		not_ok "$name" "$(tail -n 3 "$log.cli" "$log.srv" | tr '\n' ' ')"
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
		return 1
	fi
}

# A tenant where no program uses RDMA (none yet in blue2): nothing there
# has the RoCE port open, its kernel answers the REQ with ICMP port
# unreachable, and the client is refused at once (REJ 8), not after the
# kernel CM's ~98 s of retries.
out=$(lab exec --verbs blue1 -- timeout 20 rping -c -a 10.0.0.2 -p 7999 -C 1 2>&1)
if printf '%s\n' "$out" | grep -qE "RDMA_CM_EVENT_REJECTED, error 8"; then
	ok "a REQ to a tenant where nothing uses RDMA is refused at once: REJ reason 8"
else
	not_ok "a REQ to a tenant where nothing uses RDMA is refused at once" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi

# libfabric's verbs provider finds the device, with RC endpoints connected
# by RDMA CM.
out=$(lab exec --verbs blue1 -- fi_info -p verbs 2>&1)
if printf '%s\n' "$out" | grep -q "domain: jk_eth0$" && printf '%s\n' "$out" | grep -q "FI_PROTO_RDMA_CM_IB_RC"; then
	ok "fi_info -p verbs: jk_eth0, FI_EP_MSG over RDMA CM"
else
	not_ok "fi_info -p verbs: jk_eth0, FI_EP_MSG over RDMA CM" "$(printf '%s' "$out" | head -5 | tr '\n' ' ')"
fi

# fi_pingpong: its server waits for the client's control connection (TCP
# 47592) first, and only then asks for the verbs endpoint with no address
# (the provider binds "localhost": the kernel's RDMA CM takes loopback as the
# any-address, and so does ours) and binds its RDMA CM port.  -e rdm is
# ofi_rxm over MSG endpoints, whose CQ wants 262144 entries.
fi_ctrl_listening() { lab exec "$1" -- ss -ltn | grep -q ":47592 "; }
for ep in msg rdm; do
	name="fi_pingpong -p verbs -e $ep, server on h2"
	lab_bg exec --verbs blue2 -- timeout 60 fi_pingpong -p verbs -e $ep > "$WORK/fi_$ep.srv" 2>&1
	spid=$!
	if wait_until 10 fi_ctrl_listening blue2 &&
	   lab exec --verbs blue1 -- timeout 60 fi_pingpong -p verbs -e $ep 10.0.0.2 > "$WORK/fi_$ep.cli" 2>&1 &&
	   wait $spid && grep -qE "^1m +10 +=10 " "$WORK/fi_$ep.cli" && grep -qE "^1m +10 +=10 " "$WORK/fi_$ep.srv"; then
		ok "$name: $(grep -E '^4k ' "$WORK/fi_$ep.cli" | tr -s ' ')"
	else
		not_ok "$name" "$(tail -n 3 "$WORK/fi_$ep.cli" "$WORK/fi_$ep.srv" | tr '\n' ' ')"
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
	fi
done

# rping -V checks every byte of every ping it gets back.
cm_pair "rping -V, 50 pings, server on h2" blue2 blue1 7174 "ping data: rdma-ping-49" \
	"server ping data: rdma-ping-49" \
	rping -s -a 10.0.0.2 -p 7174 -C 50 -V -v -- rping -c -a 10.0.0.2 -p 7174 -C 50 -V -v
cm_pair "rping -V, server on h1 bound to the any-address" blue1 blue2 7175 "ping data: rdma-ping-9" \
	"server ping data: rdma-ping-9" \
	rping -s -a 0.0.0.0 -p 7175 -C 10 -V -v -- rping -c -a 10.0.0.1 -p 7175 -C 10 -V -v
cm_pair "ucmatose, 4 connections, server on h2" blue2 blue1 7471 "^test complete" "^test complete" \
	ucmatose -c 4 -- ucmatose -s 10.0.0.2 -c 4
PS=0x111 cm_pair "udaddy (UD, SIDR), server on h1" blue1 blue2 7174 "^test complete" "^test complete" \
	udaddy -- udaddy -s 10.0.0.1
cm_pair "rdma_server / rdma_client, server on h2" blue2 blue1 7471 "rdma_client: end 0" \
	"rdma_server: end 0" rdma_server -- rdma_client -s 10.0.0.2
cm_pair "rstream (rsockets), 4 KiB x 1000, server on h1" blue1 blue2 7471 "^custom +4k +1k" "^custom +4k +1k" \
	rstream -S 4096 -C 1000 -- rstream -s 10.0.0.1 -S 4096 -C 1000

cm_pair "rdma_xserver / rdma_xclient (RC, inline send), server on h2" blue2 blue1 7471 \
	"rdma_xclient: end 0" "rdma_xserver: end 0" rdma_xserver -- rdma_xclient -s 10.0.0.2
cm_pair "riostream (rsockets, riowrite), 4 KiB x 100, server on h2" blue2 blue1 7471 "^custom +4k +100 " \
	"^custom +4k +100 " riostream -b 10.0.0.2 -S 4096 -C 100 -- riostream -s 10.0.0.2 -S 4096 -C 100

# perftest -R: the control exchange and the data QPs both over RDMA CM
# (port 18515).  Each side prints one result line.
# (A latency test's server prints no result line, only its peer's QP.)
for t in "ib_write_bw -s 65536 -n 200" "ib_send_bw -s 65536 -n 200" "ib_read_lat -s 8 -n 200"; do
	srv_re="^ *[0-9]+ +200 +[0-9.]+"
	case $t in *_lat*) srv_re="remote address: LID" ;; esac
	cm_pair "${t%% *} -R, server on h2" blue2 blue1 18515 "^ *[0-9]+ +200 +[0-9.]+" \
		"$srv_re" $t -R -- $t -R 10.0.0.2
done
# The same with the server held 0.3 s (gdb) after its control connection,
# before it listens again for the data connection: the client's data REQ
# comes while nobody listens.  Refused (REJ 8, as the kernel would), perftest
# 4.5 retries and crashes in rdma_resolve_addr; parked, it waits for the
# listener.
cat > "$WORK/slow.gdb" <<'GDB'
set breakpoint pending on
break rdma_create_event_channel
ignore 1 1
commands 1
shell sleep 0.3
continue
end
run
GDB
cm_pair "ib_read_lat -R, server slow to listen again: the data REQ waits for it" blue2 blue1 18515 \
	"^ *8 +200 +[0-9.]+" "remote address: LID" \
	gdb -q -batch -x "$WORK/slow.gdb" --args ib_read_lat -s 8 -n 200 -R -- ib_read_lat -s 8 -n 200 -R 10.0.0.2

# An ordinary socket program over rsockets: iperf3 with librspreload (both
# ends), 2 s.  Debian's librspreload gives select()'s results back under
# the wrong fd unless the CM's files sit above the application's (ucma.c,
# fd_moved_up): the server then never read and the client stalled after
# 128 KiB.  (rdma-core 44's rpoll sees an accepted connection only after
# its 5 s wake-up interval: the run takes about 12 s.)
RSPRELOAD=$(ls /usr/lib/*/rsocket/librspreload.so 2>/dev/null | head -1)
if [ -z "$RSPRELOAD" ]; then
	not_ok "iperf3 over rsockets (librspreload)" "no librspreload.so (librdmacm1)"
else
	LD_PRELOAD=$RSPRELOAD lab_bg exec --verbs blue2 -- timeout 60 iperf3 -s -1 > "$WORK/rs.srv" 2>&1
	spid=$!
	rs_listening() { lab exec blue2 -- ss -xa | grep -q "@jakiro-rdma-cm/port/0x106/5201 "; }
	if wait_until 10 rs_listening &&
	   LD_PRELOAD=$RSPRELOAD lab exec --verbs blue1 -- timeout 60 iperf3 -c 10.0.0.2 -t 2 > "$WORK/rs.cli" 2>&1 &&
	   wait $spid && grep -qE "[0-9.]+ [KMG]?bits/sec +receiver" "$WORK/rs.cli"; then
		ok "iperf3 over rsockets (librspreload), 2 s: $(grep -E 'receiver' "$WORK/rs.cli" | tr -s ' ' | cut -d' ' -f6-7)"
	else
		not_ok "iperf3 over rsockets (librspreload)" "$(tail -n 3 "$WORK/rs.cli" "$WORK/rs.srv" | tr '\n' ' ')"
		kill $spid 2>/dev/null; wait $spid 2>/dev/null
	fi
fi

# qperf -cm1 (RC over RDMA CM).  Its server forks a child per test, which
# opens its own device and CM.  Debian's qperf 0.4.11 has two bugs fixed
# upstream after it: the server tells its client the CM port between bind
# and listen (118a571; a REQ for a bound port waits for the listen here) and
# its child crashes in rdma_destroy_qp at the end of every test (83bc16e);
# the client's DREQ then comes back as ICMP port unreachable, which ends its
# disconnect at once instead of after 15 resends.  qperf scales its units
# (ns, us, ms, sec; KB, MB, GB/sec): the test holds it to printing a
# latency and a bandwidth, how fast is the bench's (a SAN run through the
# fast path once averaged 1.07 ms over its 1 s, failing a pattern that
# wanted "us").
qperf_listening() { lab exec blue2 -- ss -ltn | grep -q ":19765 "; }
lab_bg exec --verbs blue2 -- timeout 90 qperf > "$WORK/qperf.srv" 2>&1
spid=$!
if wait_until 10 qperf_listening &&
   lab exec --verbs blue1 -- timeout 80 qperf 10.0.0.2 -cm1 -t 1 rc_lat rc_rdma_write_bw > "$WORK/qperf.cli" 2>&1 &&
   grep -qE "latency += +[0-9.]+ (ns|us|ms|sec)" "$WORK/qperf.cli" &&
   grep -qE "bw += +[0-9.]+ [KMG]?B/sec" "$WORK/qperf.cli"; then
	ok "qperf -cm1 rc_lat, rc_rdma_write_bw: $(grep -E 'latency|bw' "$WORK/qperf.cli" | tr -s ' ' | tr '\n' ' ')"
else
	not_ok "qperf -cm1 rc_lat, rc_rdma_write_bw" "$(tail -n 4 "$WORK/qperf.cli" "$WORK/qperf.srv" | tr '\n' ' ')"
fi
kill $spid 2>/dev/null; wait $spid 2>/dev/null

# cmtime: its server never exits; the client's table is the result.
lab_bg exec --verbs blue2 -- timeout 60 cmtime > "$WORK/cmtime.srv" 2>&1
spid=$!
if wait_until 10 cm_bound blue2 7471 &&
   lab exec --verbs blue1 -- timeout 60 cmtime -s 10.0.0.2 -c 200 > "$WORK/cmtime.cli" 2>&1 &&
   grep -qE "^connect +: +[0-9.]+" "$WORK/cmtime.cli"; then
	ok "cmtime, 200 connections: $(grep -E '^connect ' "$WORK/cmtime.cli" | tr -s ' ')"
else
	not_ok "cmtime, 200 connections" "$(tail -n 4 "$WORK/cmtime.cli" "$WORK/cmtime.srv" | tr '\n' ' ')"
fi
# jk_cm_lat against the same server (it accepts any number): every step of
# every connection timed, one at a time and 8 under way at once.
for q in 1 8; do
	if lab exec --verbs blue1 -- timeout 60 "$JAKIRO_BIN/jk_cm_lat" -s 10.0.0.2 -c 100 -q $q \
		> "$WORK/cmlat$q.out" 2>&1 &&
	   [ "$(grep -cE '^(create_id|resolve_addr|resolve_route|create_qp|connect|disconnect|destroy|setup) +100( +[0-9.]+){5}$' \
		"$WORK/cmlat$q.out")" = 8 ] &&
	   grep -qE '^conn_per_s +[0-9.]+$' "$WORK/cmlat$q.out"; then
		ok "jk_cm_lat, 100 connections, $q under way: $(grep -E '^(connect|conn_per_s) ' "$WORK/cmlat$q.out" | tr -s ' ' | tr '\n' ' ')"
	else
		not_ok "jk_cm_lat, 100 connections, $q under way" "$(tail -n 4 "$WORK/cmlat$q.out" | tr '\n' ' ')"
	fi
done
kill $spid 2>/dev/null; wait $spid 2>/dev/null

# Nobody listens on 7999: the peer's CM refuses the REQ (REJ, invalid
# service ID = 8) at once, rather than the client waiting out its retries.
# The CM lives in the processes that use it: a tenant where no program
# uses RDMA CM has nobody to answer (the client gets UNREACHABLE after the
# kernel CM's retries); here a server on another port is running.
lab_bg exec --verbs blue2 -- timeout 60 rping -s -a 10.0.0.2 -p 7998 -C 1 > "$WORK/rej.srv" 2>&1
p1=$!
out=""
if wait_until 10 cm_bound blue2 7998; then
	out=$(lab exec --verbs blue1 -- timeout 20 rping -c -a 10.0.0.2 -p 7999 -C 1 2>&1)
fi
if printf '%s\n' "$out" | grep -qE "RDMA_CM_EVENT_REJECTED, error 8"; then
	ok "a REQ nobody listens to is refused: REJ reason 8"
else
	not_ok "a REQ nobody listens to is refused: REJ reason 8" "$(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi
kill $p1 2>/dev/null; wait $p1 2>/dev/null

# Two servers in one tenant (two processes on one interface): each REQ
# reaches the process listening on its port.
lab_bg exec --verbs blue2 -- timeout 60 rping -s -a 10.0.0.2 -p 7201 -C 5 -V -v > "$WORK/two1.srv" 2>&1
p1=$!
lab_bg exec --verbs blue2 -- timeout 60 rping -s -a 10.0.0.2 -p 7202 -C 7 -V -v > "$WORK/two2.srv" 2>&1
p2=$!
if wait_until 10 cm_bound blue2 7201 && wait_until 10 cm_bound blue2 7202 &&
   { lab exec --verbs blue1 -- timeout 60 rping -c -a 10.0.0.2 -p 7202 -C 7 -V -v > "$WORK/two2.cli" 2>&1
     cm_example_ok $? "$WORK/two2.cli" "rdma-ping-6"; } &&
   { lab exec --verbs blue1 -- timeout 60 rping -c -a 10.0.0.2 -p 7201 -C 5 -V -v > "$WORK/two1.cli" 2>&1
     cm_example_ok $? "$WORK/two1.cli" "rdma-ping-4"; } &&
   { wait $p1; cm_example_ok $? "$WORK/two1.srv" "rdma-ping-4"; } &&
   { wait $p2; cm_example_ok $? "$WORK/two2.srv" "rdma-ping-6"; } &&
   grep -q "server ping data: rdma-ping-4" "$WORK/two1.srv" && ! grep -q "rdma-ping-5" "$WORK/two1.srv" &&
   grep -q "server ping data: rdma-ping-6" "$WORK/two2.srv"; then
	ok "two rping servers in one tenant, ports 7201 and 7202: each served its own client"
else
	not_ok "two rping servers in one tenant" "$(tail -n 2 "$WORK"/two*.cli "$WORK"/two*.srv | tr '\n' ' ')"
	kill $p1 $p2 2>/dev/null; wait $p1 $p2 2>/dev/null
fi

# A server killed while a client is connected: its port is free again, and
# the next server on it serves the next client.  (No `timeout` wrapper:
# $! is rping itself, through jakiro-verbs' execs, and is killed by PID.
# JK_UCMA_TRACE=1 prints each CM command on stderr: command 8, ACCEPT,
# says the connection is up.)
lab_bg exec --verbs blue2 -- env JK_UCMA_TRACE=1 rping -s -a 10.0.0.2 -p 7300 -C 1000000 > "$WORK/kill.srv" 2>&1
p1=$!
if wait_until 10 cm_bound blue2 7300; then
	lab_bg exec --verbs blue1 -- rping -c -a 10.0.0.2 -p 7300 -C 1000000 > "$WORK/kill.cli" 2>&1
	c1=$!
	wait_until 10 grep -q "cmd 8 .*: ok" "$WORK/kill.srv" ||
		not_ok "the server to be killed accepted its client" "$(tail -2 "$WORK/kill.srv" | tr '\n' ' ')"
	kill -KILL $p1 2>/dev/null
	wait $p1 2>/dev/null
	kill -KILL $c1 2>/dev/null
	wait $c1 2>/dev/null
else
	not_ok "the server to be killed bound its port" "$(tail -2 "$WORK/kill.srv" | tr '\n' ' ')"
	kill -KILL $p1 2>/dev/null; wait $p1 2>/dev/null
fi
cm_pair "after a server was killed mid-connection, its port serves again" blue2 blue1 7300 \
	"ping data: rdma-ping-2" "server ping data: rdma-ping-2" \
	rping -s -a 10.0.0.2 -p 7300 -C 3 -V -v -- rping -c -a 10.0.0.2 -p 7300 -C 3 -V -v

# Storage over RDMA: Debian's tgt (its iSER driver is in tgtd itself) serves
# a file-backed LUN from h2, and libiscsi's utilities reach it at iser://
# from h1, the iSCSI PDUs in RC SENDs and the data moved by the target:
# iscsi-inq and iscsi-readcapacity16 (replies RDMA-written), iscsi-perf
# (reads, 2 s), iscsi-test-cu's WRITE SAME, read back and compared, and its
# WRITEs of 1-256 blocks at both ends of the LUN (tgt's iSER target takes
# no immediate or unsolicited data: it RDMA-reads every block), whose bytes
# are then checked in the file.  What tgtd needed: its portal is 0.0.0.0
# and then "::" with AFONLY, which share no port (ucma.c, bind_addr); its
# backing store's threads wake the main thread with SIGUSR2, which the
# CM's thread took, and tgtd died of it (verbs_thread_create).  libiscsi's
# initiator cancels its CM thread in GET_EVENT, which had left the CM's lock
# held (ucma.c, wait_event).  tgt 1.0.85's iSER login wants an initiator-name
# ACL as well as an address one (not so over TCP; fixed in tgt 1.0.95).
# Not iscsi-ls: libiscsi 1.19's iSER polls its CQ after the logout callback
# that destroyed it (iser.c, cq_event_handler), so the discovery ends in
# SIGSEGV after printing the target, and -s logs in to each target over TCP.
TGT_CTL=$(( 20000 + $$ % 10000 ))            # tgtd's control socket: /var/run/tgtd/socket.N
TGT_IQN=iqn.2024-01.org.jakiro:lun1
ISER_INITIATOR=iqn.2024-01.org.jakiro:initiator
ISER_URL=iser://10.0.0.2/$TGT_IQN/1
tgtadm_() { timeout 10 tgtadm -C "$TGT_CTL" --lld iser "$@"; }
iser_ready() { tgtadm_ --mode sys --op show | grep -q "iser: ready"; }
# iser_check NAME REGEX CMD...: CMD on h1 exits 0 and prints REGEX.
iser_check() {
	local name=$1 re=$2 log
	shift 2
	log="$WORK/iser_$(printf '%s' "$name" | tr -c 'A-Za-z0-9' _)"
	if lab exec --verbs blue1 -- timeout -k 5 60 "$@" > "$log" 2>&1 &&
	   tr '\r' '\n' < "$log" | grep -qE "$re"; then
		ok "$name: $(tr '\r' '\n' < "$log" | grep -E "$re" | tail -1 | tr -s ' \t' ' ' | sed 's/^ //; s/ $//')"
	else
		not_ok "$name" "$(tr '\r' '\n' < "$log" | grep -v '^ *$' | tail -n 3 | tr '\n' ' ')"
	fi
}
truncate -s 64M "$WORK/lun.img"
lab_bg exec --verbs blue2 -- tgtd -f -C "$TGT_CTL" > "$WORK/tgtd.log" 2>&1
tpid=$!                                       # tgtd itself
at_exit "kill -KILL $tpid 2>/dev/null; rm -f /var/run/tgtd/socket.$TGT_CTL /var/run/tgtd/socket.$TGT_CTL.lock"
tgtd_gone() { ! grep -qs '^State:[[:space:]]*[^Z]' "/proc/$tpid/status"; }
if wait_until 10 iser_ready && wait_until 10 cm_bound blue2 3260 &&
   tgtadm_ --mode target --op new --tid 1 --targetname "$TGT_IQN" &&
   tgtadm_ --mode target --op bind --tid 1 --initiator-address ALL &&
   tgtadm_ --mode target --op bind --tid 1 --initiator-name "$ISER_INITIATOR" &&
   tgtadm_ --mode logicalunit --op new --tid 1 --lun 1 --backing-store "$WORK/lun.img" --bstype rdwr; then
	iser_check "iscsi-inq over iSER" "^Product:VIRTUAL-DISK" \
		iscsi-inq -i "$ISER_INITIATOR" "$ISER_URL"
	iser_check "iscsi-readcapacity16 over iSER" "^Total size:67108864$" \
		iscsi-readcapacity16 -i "$ISER_INITIATOR" "$ISER_URL"
	iser_check "iscsi-perf over iSER, 64 KiB reads, 2 s" "^iops average [0-9]+ \([0-9]+ MB/s\)" \
		iscsi-perf -i "$ISER_INITIATOR" -t 2 -b 128 "$ISER_URL"
	iser_check "iscsi-test-cu SCSI.WriteSame16.Check over iSER (written, read back, compared)" \
		"^ +tests +1 +1 +1 +0 +0" iscsi-test-cu -d -n -i "$ISER_INITIATOR" -t SCSI.WriteSame16.Check "$ISER_URL"
	iser_check "iscsi-test-cu SCSI.Write16.Simple over iSER (RDMA READs)" \
		"^ +tests +1 +1 +1 +0 +0" iscsi-test-cu -d -n -i "$ISER_INITIATOR" -t SCSI.Write16.Simple "$ISER_URL"
	# WRITE16.Simple wrote 0xa6 into the first and last 256 blocks.
	if [ "$(head -c 131072 "$WORK/lun.img" | tr -d '\246' | wc -c)" = 0 ] &&
	   [ "$(tail -c 131072 "$WORK/lun.img" | tr -d '\246' | wc -c)" = 0 ]; then
		ok "the blocks written over iSER are in the LUN's file (2 x 128 KiB of 0xa6)"
	else
		not_ok "the blocks written over iSER are in the LUN's file" "$(head -c 131072 "$WORK/lun.img" | od -An -tx1 | sort -u | head -2 | tr '\n' ' ')"
	fi
else
	not_ok "tgtd with an iSER target on h2" "$(tail -n 3 "$WORK/tgtd.log" | tr '\n' ' ')"
fi
tgtadm_ --mode target --op delete --tid 1 --force > /dev/null 2>&1
tgtadm_ --mode system --op delete > /dev/null 2>&1
wait_until 10 tgtd_gone || kill -KILL $tpid 2>/dev/null
wait $tpid 2>/dev/null

# UCX's client/server (sockaddr) wire-up through its rdmacm CM component
# (libuct_rdmacm).  ucx-utils' io_demo is UCX 1.13's client/server program:
# its server listens on a sockaddr (ucp_listener_create), its client
# creates each endpoint from one, and the CM's private data carries the
# UCP addresses (up to 54 bytes a message).  (ucx_perftest 1.13
# exchanges worker addresses over its own TCP socket; Open MPI 4.1's pml
# ucx creates its endpoints from worker addresses from the PMIx modex,
# ompi/mca/pml/ucx/pml_ucx.c, mca_pml_ucx_add_proc_common: neither uses
# a CM.)  UCX dlopens its transports RTLD_LOCAL, so the drop-in that
# librdmacm loads with libuct_rdmacm is not in the global scope; the
# preload looked for the CM only there, rdma_create_event_channel failed
# (ENODEV), ucx_info -d said "failed to open connection manager rdmacm",
# and with UCX_SOCKADDR_TLS_PRIORITY=rdmacm io_demo's server aborted in
# ucp_listener_create.  That variable leaves UCX no other CM (its default
# is rdmacm,tcp,sockcm: a failed rdmacm would go unnoticed).  io_demo's
# server never exits: the client's exit and both sides' lines are the
# result; the server's port is bound in our CM (cm_bound).
out=$(lab exec --verbs blue1 -- ucx_info -d 2>&1)
if printf '%s\n' "$out" | grep -A1 "^# Connection manager: rdmacm$" | grep -q "max_conn_priv: 54 bytes"; then
	ok "ucx_info -d: Connection manager: rdmacm, max_conn_priv 54 bytes"
else
	not_ok "ucx_info -d: Connection manager: rdmacm" "$(printf '%s' "$out" | grep -iE "rdmacm|connection manager" | tr '\n' ' ')"
fi

# io_server NAME PORT ENV... -- ARGS...: an io_demo server in tenant NAME
# in the background ($IO_SPID); returns once its port is bound in the CM.
io_server() {
	local name=$1 port=$2
	local -a envs=()
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	lab_bg exec --verbs "$name" -- env "${envs[@]}" timeout 90 io_demo -p "$port" "$@" > "$WORK/io_$port.srv" 2>&1
	IO_SPID=$!
	wait_until 10 cm_bound "$name" "$port"
}
io_stop() { kill $IO_SPID 2>/dev/null; wait $IO_SPID 2>/dev/null; }
# io_done LOG: the IOs a client completed (its once-a-second "total" lines)
io_done() {
	grep -oE '\[DEMO\] total min:[0-9]+ max:[0-9]+ total:[0-9]+' "$1" |
		awk -F'total:' '{ n += $2 } END { print n + 0 }'
}

if ! command -v io_demo >/dev/null; then
	not_ok "io_demo installed (ucx-utils, scripts/install-deps --test)"
else
	# Two connections, reads and writes of 1 B to 128 KiB (past the 32 KiB
	# rendezvous threshold: RDMA READs), every byte checked (-q); UCX's
	# own transport choice (rc_verbs for tags).
	name="UCX io_demo, sockaddr wire-up through the rdmacm CM, 2 connections, server on h2"
	log=$WORK/io_20001
	if io_server blue2 20001 UCX_SOCKADDR_TLS_PRIORITY=rdmacm -- -q -d 1:131072 &&
	   lab exec --verbs blue1 -- env UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_LOG_LEVEL=info timeout 60 \
		io_demo -p 20001 -q -o read,write -d 1:131072 -w 8 -i 1000 10.0.0.2 10.0.0.2 > "$log.cli" 2>&1 &&
	   grep -q "Client exit with status 'OK'" "$log.cli" &&
	   grep -q "Connected to server \[1\] 10.0.0.2" "$log.cli" &&
	   [ "$(io_done "$log.cli")" -eq 1000 ] &&
	   grep -qE "ep_cfg\[[0-9]+\]: tag\(rc_verbs/jk_eth0:1\)" "$log.cli" &&
	   [ "$(grep -c "got new connection request .* from client 10.0.0.1:" "$log.srv")" -eq 2 ]; then
		ok "$name: $(io_done "$log.cli") IOs checked, $(grep -oE 'tag\(rc_verbs/jk_eth0:1\)' "$log.cli" | head -1)"
	else
		not_ok "$name" "$(grep -vE 'active:|UCX  (INFO|DIAG)' "$log.cli" | tail -3 | tr '\n' ' ') $(tail -2 "$log.srv" | tr '\n' ' ')"
	fi
	io_stop

	# The other way, with UCX's default CM order (rdmacm, then tcp) and its
	# active-message API: the client's CM trace shows its REQ (command 6,
	# CONNECT) and its RTU (command 8, ACCEPT: rdma_establish).
	name="UCX io_demo -A, UCX's default CM order, server on h1"
	log=$WORK/io_20002
	if io_server blue1 20002 JK_UCMA_TRACE=0 -- -A -q -d 1:65536 &&
	   lab exec --verbs blue2 -- env JK_UCMA_TRACE=1 timeout 60 \
		io_demo -p 20002 -A -q -o write,read -d 1:65536 -i 1000 10.0.0.1 > "$log.cli" 2>&1 &&
	   grep -q "Client exit with status 'OK'" "$log.cli" &&
	   [ "$(io_done "$log.cli")" -eq 1000 ] &&
	   grep -q "cmd 6 .*: ok" "$log.cli" && grep -q "cmd 8 .*: ok" "$log.cli" &&
	   grep -q "got new connection request .* from client 10.0.0.2:" "$log.srv"; then
		ok "$name: $(io_done "$log.cli") IOs checked"
	else
		not_ok "$name" "$(grep -vE 'active:|^ucma' "$log.cli" | tail -3 | tr '\n' ' ') $(tail -2 "$log.srv" | tr '\n' ' ')"
	fi
	io_stop

	# A client killed mid-transfer: the server's QP runs out of retries.  A
	# NIC reports that in a completion and libibverbs leaves ibv_qp.state as
	# the application last set it (RTS); UCX's rc_verbs asserts RTS when it
	# flushes the failed endpoint, so the drop-in's writing ERR there
	# aborted the server.  Now the server drops that connection (UCX:
	# "Endpoint timeout") and serves the next client.  (No `timeout` wrapper
	# on the first client: $! is io_demo itself, killed by PID.)
	name="UCX io_demo server, its client killed mid-transfer: connection dropped, next client served"
	log=$WORK/io_20003
	if io_server blue2 20003 UCX_SOCKADDR_TLS_PRIORITY=rdmacm -- -d 1:65536; then
		lab_bg exec --verbs blue1 -- env UCX_SOCKADDR_TLS_PRIORITY=rdmacm \
			io_demo -p 20003 -d 1:65536 -i 100000000 10.0.0.2 > "$log.first" 2>&1
		c1=$!
		wait_until 10 grep -q "Connected to server \[0\]" "$log.first"
		sleep 1
		kill -KILL $c1 2>/dev/null
		wait $c1 2>/dev/null
		if wait_until 40 grep -qE "#1 10\.0\.0\.1:[0-9]+\] detected error" "$log.srv" &&
		   lab exec --verbs blue1 -- env UCX_SOCKADDR_TLS_PRIORITY=rdmacm timeout 60 \
			io_demo -p 20003 -d 1:65536 -i 500 10.0.0.2 > "$log.cli" 2>&1 &&
		   grep -q "Client exit with status 'OK'" "$log.cli" &&
		   grep -qE "#2 10\.0\.0\.1:[0-9]+\] Remote id is" "$log.srv" &&
		   kill -0 $IO_SPID 2>/dev/null; then
			ok "$name ($(grep -oE '#1 .*detected error: [A-Za-z ]+' "$log.srv" | head -1 | sed 's/.*: //'))"
		else
			not_ok "$name" "$(grep -E 'error|ssert|#2' "$log.srv" | tail -3 | tr '\n' ' ') $(tail -2 "$log.cli" | tr '\n' ' ')"
		fi
	else
		not_ok "$name" "the server did not bind its port: $(tail -2 "$log.srv" | tr '\n' ' ')"
	fi
	io_stop
fi

exit "${FAILED:-0}"

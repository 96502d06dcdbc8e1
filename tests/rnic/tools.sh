#!/usr/bin/env bash
# The jk_* tools between two namespaces: each pair connects through the
# perftest / ibv_rc_pingpong exchange, runs, prints perftest's columns, and
# (--verify / -c) checks the data.  Also -a, -D, -q, --report_gbits.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
B=$BUILD/bin
for t in jk_write_bw jk_read_bw jk_send_bw jk_write_lat jk_read_lat jk_send_lat jk_rc_pingpong; do
	[ -x "$B/$t" ] || { echo "# $B/$t missing"; exit 77; }
done
rn_setup 1500
PORT=18700
RN_PAIR_CLIENT_SECS=120 RN_PAIR_SERVER_SECS=60

# run NAME TOOL 'SERVER ARGS' 'CLIENT ARGS' REGEX(client output): server in NS1
run() {
	rn_pair "$1" 1 "$B/$2 -d $IF1 $3" "$B/$2 -d $IF2 $4" "$5"
}

S='[[:space:]]+'
BW="^ 65536${S}[0-9]+${S}[0-9.]+${S}[0-9.]+${S}[0-9.]+"
LAT="^ 64${S}[0-9]+(${S}[0-9.]+){7}"
HDR_BW='^ #bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]'
HDR_LAT='^ #bytes #iterations    t_min\[usec\]    t_max\[usec\]  t_typical\[usec\]    t_avg\[usec\]    t_stdev\[usec\]   99% percentile\[usec\]   99.9% percentile\[usec\]'

run "jk_write_bw --verify" jk_write_bw "-n 500 --verify" "-n 500 --verify" "$BW"
grep -qE "$HDR_BW" "$RN_TMP/$PORT.cli" && ok "perftest's bandwidth columns" || not_ok "perftest's bandwidth columns"
grep -q "Data verification: passed" "$RN_TMP/$PORT.srv" && ok "write_bw server verified the data" ||
	not_ok "write_bw server verified the data"
run "jk_read_bw --verify, 2 QPs" jk_read_bw "-n 300 -q 2 --verify" "-n 300 -q 2 --verify" \
	"^ 65536${S}600${S}"
run "jk_send_bw --verify" jk_send_bw "-n 500 --verify" "-n 500 --verify" "$BW"
run "jk_write_lat --verify" jk_write_lat "-s 64 -n 1000 --verify" "-s 64 -n 1000 --verify" "$LAT"
grep -qE "$HDR_LAT" "$RN_TMP/$PORT.cli" && ok "perftest's latency columns" || not_ok "perftest's latency columns"
run "jk_read_lat --verify" jk_read_lat "-s 64 -n 1000 --verify" "-s 64 -n 1000 --verify" "$LAT"
run "jk_send_lat --verify" jk_send_lat "-s 64 -n 1000 --verify" "-s 64 -n 1000 --verify" "$LAT"
run "jk_rc_pingpong -c" jk_rc_pingpong "-s 8192 -n 500" "-s 8192 -n 500 -c" "usec/iter"
grep -q "invalid data" "$RN_TMP/$PORT.cli" && not_ok "rc_pingpong echoed data" || ok "rc_pingpong echoed data"
run "jk_rc_pingpong -e -c (sleeps between completions)" jk_rc_pingpong "-e -s 8192 -n 500" \
	"-e -s 8192 -n 500 -c" "usec/iter"
run "jk_write_bw -a (sizes 2 .. 8 MiB)" jk_write_bw "-a -n 20" "-a -n 20" "^ 8388608${S}20${S}"
[ "$(grep -cE "^ [0-9]+${S}20${S}" "$RN_TMP/$PORT.cli")" -eq 23 ] && ok "-a printed 23 sizes" ||
	not_ok "-a printed 23 sizes"
run "jk_send_lat -a" jk_send_lat "-a -n 20" "-a -n 20" "^ 8388608${S}20${S}"
run "jk_write_bw -D 2 -q 4 --report_gbits" jk_write_bw "-D 2 -q 4 --report_gbits" \
	"-D 2 -q 4 --report_gbits" "^ 65536${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
grep -q "BW average\[Gb/sec\]" "$RN_TMP/$PORT.cli" && ok "--report_gbits columns" || not_ok "--report_gbits columns"
run "jk_read_lat -D 2" jk_read_lat "-D 2" "-D 2" "^ 2${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
# both sides exit 0: the one that stops first answers until the other stops
run "jk_write_lat -D 2 (both sides stop cleanly)" jk_write_lat "-s 2 -D 2" "-s 2 -D 2" \
	"^ 2${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
# Two processes of one namespace, the client addressing the server's
# interface address: the kernel sends such packets through lo, as a NIC
# loops them back (UCX's endpoint to its own worker does the same).
RN_PAIR_SAME_NS=1 rn_pair "jk_write_bw --verify, both in one namespace (through lo)" 1 \
	"$B/jk_write_bw -d $IF1 -n 500 --verify" "$B/jk_write_bw -d $IF1 -n 500 --verify" "$BW"
grep -q "Data verification: passed" "$RN_TMP/$PORT.srv" && ok "one namespace: the server verified the data" ||
	not_ok "one namespace: the server verified the data"
RN_PAIR_SAME_NS=1 rn_pair "jk_send_lat --verify, both in one namespace (through lo)" 1 \
	"$B/jk_send_lat -d $IF1 -s 64 -n 1000 --verify" "$B/jk_send_lat -d $IF1 -s 64 -n 1000 --verify" "$LAT"

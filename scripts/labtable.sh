#!/usr/bin/env bash
# The lock lab's table (issue 37, item 7): each service, fenced and
# unfenced, under each fault, for DURATION each, 5 clients, and a markdown
# table of what the lab found on stdout: two-believer moments (pairs of
# beliefs that overlapped: a paused holder and each client that took the
# lock meanwhile), stretches (each client's belief during which others
# believed too: mostly one per pause that mattered), lost updates and writes the
# resource refused for a stale token, each also per 1,000 lock operations
# (acquisitions), and lock operations per second.
#
#   scripts/labtable.sh                       # 30 s a cell
#   DURATION=10m scripts/labtable.sh          # the issue's table: hours
#   SERVICES="redis etcd" FAULTS="pause" scripts/labtable.sh
#   FAULTS=none HOLD=0s scripts/labtable.sh   # the services' own pace
#
# FAULTS is tried on every service ("none": no fault, the baseline of
# operations per second); a cell the service's lab does not
# take (an unknown fault for it) reads "n/a", so a fault added to the
# nemesis joins the table by its name here. Each cell starts its own
# throwaway server (Debian's zookeeper, redis-server, etcd-server,
# postgresql). Progress and each run's stderr go to $LOG (default a temp
# file, named at the end); set ZKLOCKVIZ to use a built binary, and KEEP
# to a directory to keep each cell's report and events (lab --json) there.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-30s}
SERVICES=${SERVICES:-zookeeper redis etcd postgres}
FAULTS=${FAULTS:-none pause kill}
CLIENTS=${CLIENTS:-5}
SEED=${SEED:-1}
HOLD=${HOLD:-20ms}

work=$(mktemp -d /var/tmp/zklockviz-labtable.XXXXXX)
trap 'rm -rf "$work"' EXIT
LOG=${LOG:-$(mktemp /var/tmp/zklockviz-labtable-log.XXXXXX)}
bin=${ZKLOCKVIZ:-}
if [ -z "$bin" ]; then
	bin=$work/zklockviz
	go build -o "$bin" ./cmd/zklockviz
fi
secs=$(python3 -c "
import re,sys
s='$DURATION'; t=0
for n,u in re.findall(r'([0-9.]+)(ms|h|m|s)', s): t+=float(n)*{'ms':.001,'s':1,'m':60,'h':3600}[u]
print(t)")

echo "| service | fencing | fault | lock ops | ops/s | two-believer moments (per 1,000 ops) | stretches | lost updates (per 1,000) | refused writes (per 1,000) |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
for service in $SERVICES; do
	for fencing in off on; do
		for fault in $FAULTS; do
			echo "$(date -u +%T) $service fencing $fencing $fault ($DURATION)" >>"$LOG"
			out=$work/run.json
			if ! "$bin" lab --json --service "$service" --fencing "$fencing" --nemesis "$fault" \
				--duration "$DURATION" --clients "$CLIENTS" --seed "$SEED" --hold "$HOLD" >"$out" 2>"$work/stderr"; then
				cat "$work/stderr" >>"$LOG"
				if grep -q 'unknown fault' "$work/stderr"; then
					echo "| $service | $fencing | $fault | n/a | | | | | |"
				else
					echo "| $service | $fencing | $fault | failed (see $LOG) | | | | | |"
				fi
				continue
			fi
			cat "$work/stderr" >>"$LOG"
			if [ -n "${KEEP:-}" ]; then
				cp "$out" "$KEEP/$service-fencing-$fencing-$fault.json"
			fi
			jq -r --arg s "$service" --arg f "$fencing" --arg n "$fault" --argjson secs "$secs" '
				.report as $r
				| ($r.acquisitions) as $ops
				| def per($x): if $ops > 0 then ($x * 1000 / $ops * 10 | round / 10) else 0 end;
				  "| \($s) | \($f) | \($n) | \($ops) | \($ops / $secs * 10 | round / 10) | \($r.overlaps | length) (\(per($r.overlaps | length))) | \($r.stretches | length) | \($r.lostUpdates) (\(per($r.lostUpdates))) | \($r.refused) (\(per($r.refused))) |"
			' "$out"
		done
	done
done
echo "log: $LOG" >&2

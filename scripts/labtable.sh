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
#   JOBS=8 DURATION=10m scripts/labtable.sh    # eight cells at once
#   WORD=off scripts/labtable.sh              # without zklockviz's word
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
JOBS=${JOBS:-1}
WORD=${WORD:-on}

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

# One cell: its lab run's JSON in $work/<service>-<fencing>-<fault>.json,
# or .na (the service has no such fault) or .failed beside it.
cell() {
	local service=$1 fencing=$2 fault=$3 base=$work/$1-$2-$3
	echo "$(date -u +%T) $service fencing $fencing $fault ($DURATION) starts" >>"$LOG"
	local rc=0
	"$bin" lab --json --service "$service" --fencing "$fencing" --nemesis "$fault" --word "$WORD" \
		--duration "$DURATION" --clients "$CLIENTS" --seed "$SEED" --hold "$HOLD" >"$base.json" 2>"$base.stderr" || rc=$?
	{ echo "$(date -u +%T) $service fencing $fencing $fault: exit $rc"; cat "$base.stderr"; } >>"$LOG"
	# Exit 1 with a report is zklockviz's word differing (a column below);
	# anything else, or no report, failed.
	if grep -q 'unknown fault\|has no .* fault' "$base.stderr" && [ ! -s "$base.json" ]; then
		touch "$base.na"
	elif ! jq -e .report "$base.json" >/dev/null 2>&1; then
		touch "$base.failed"
	fi
	if [ -n "${KEEP:-}" ] && [ -s "$base.json" ]; then
		cp "$base.json" "$KEEP/$service-fencing-$fencing-$fault.json"
	fi
}

cells=()
for service in $SERVICES; do
	for fencing in off on; do
		for fault in $FAULTS; do
			cells+=("$service $fencing $fault")
		done
	done
done
running=0
for c in "${cells[@]}"; do
	# shellcheck disable=SC2086 # a cell is three words
	cell $c &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n || true
		running=$((running - 1))
	fi
done
wait

echo "| service | fencing | fault | lock ops | ops/s | two-believer moments (per 1,000 ops) | stretches | lost updates (per 1,000) | refused writes (per 1,000) | faults | zklockviz's word: grants checked, mismatches |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
for c in "${cells[@]}"; do
	read -r service fencing fault <<<"$c"
	base=$work/$service-$fencing-$fault
	if [ -e "$base.na" ]; then
		echo "| $service | $fencing | $fault | n/a | | | | | | | |"
		continue
	elif [ -e "$base.failed" ]; then
		echo "| $service | $fencing | $fault | failed (see $LOG) | | | | | | | |"
		continue
	fi
	jq -r --arg s "$service" --arg f "$fencing" --arg n "$fault" --argjson secs "$secs" '
		.report as $r
		| ($r.acquisitions) as $ops
		| def per($x): if $ops > 0 then ($x * 1000 / $ops * 10 | round / 10) else 0 end;
		  "| \($s) | \($f) | \($n) | \($ops) | \($ops / $secs * 10 | round / 10) | \($r.overlaps | length) (\(per($r.overlaps | length))) | \($r.stretches | length) | \($r.lostUpdates) (\(per($r.lostUpdates))) | \($r.refused) (\(per($r.refused))) | \([$r.faults[]] | add // 0) | \(if .word then "\(.word.checked), \(.word.mismatches | length)" else "off" end) |"
	' "$base.json"
done
echo "log: $LOG" >&2

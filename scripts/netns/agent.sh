#!/bin/sh
# The command agent of scripts/netns-faults.py, on the replicas (tagd, direct)
# and on the workers (tagq, behind the queue). It logs one line when it starts
# and one when it ends to $SB_DIR/runs.log:
#   <epoch seconds> <host> <agent> start|end <node id> <root id>
# where <node id> is the envelope's parent_request_id (the node this command
# runs for: the same id on every run of that node) and <root id> its
# root_request_id. It naps as long as $SB_DIR/nap-<agent> says (the harness
# changes it between phases; 0 when missing) and answers in JSON.
in=$(cat)
node=$(printf '%s' "$in" | sed -n 's/.*"parent_request_id":"\([0-9a-f-]*\)".*/\1/p' | head -1)
root=$(printf '%s' "$in" | sed -n 's/.*"root_request_id":"\([0-9a-f-]*\)".*/\1/p' | head -1)
host=$(hostname)
nap=$(cat "$SB_DIR/nap-$SB_AGENT" 2>/dev/null || echo 0)
echo "$(date +%s.%N) $host $SB_AGENT start ${node:--} ${root:--}" >>"$SB_DIR/runs.log"
sleep "$nap"
echo "$(date +%s.%N) $host $SB_AGENT end ${node:--} ${root:--}" >>"$SB_DIR/runs.log"
printf '{"summary":"%s done","result":"%s ran %s on %s"}\n' "$SB_AGENT" "$SB_AGENT" "${node:--}" "$host"

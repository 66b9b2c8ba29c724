#!/usr/bin/env bash
# Stop the broker that infra/kafka/start.sh started (and only that one), waiting for a clean shutdown.
set -euo pipefail

home="${REVEAL_KAFKA_HOME:-$HOME/.cache/reveal/kafka}"
pidfile="$home/broker.pid"

if [ ! -f "$pidfile" ]; then
  echo "kafka stop: no broker started by infra/kafka/start.sh is recorded in $home"
  exit 0
fi
pid="$(cat "$pidfile")"
if ! kill -0 "$pid" 2>/dev/null; then
  echo "kafka stop: broker pid $pid is not running"
  rm -f "$pidfile"
  exit 0
fi
kill -TERM "$pid"
for _ in $(seq 1 30); do
  kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; echo "kafka stop: broker pid $pid stopped"; exit 0; }
  sleep 1
done
echo "kafka stop: broker pid $pid did not stop within 30s; killing it" >&2
kill -KILL "$pid" 2>/dev/null || true
rm -f "$pidfile"

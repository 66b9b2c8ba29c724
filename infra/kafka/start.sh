#!/usr/bin/env bash
# Start a single-node Apache Kafka broker (KRaft, combined broker+controller) on 127.0.0.1 without Docker.
# The broker's jars come from Maven Central (pom.xml beside this script) into a cache folder, once.
# Safe to call twice: a broker already started by this script is reported and left running.
#
# Environment (all optional):
#   REVEAL_KAFKA_HOME     state folder: jars cache, log dirs, pid and log file   (default: ~/.cache/reveal/kafka)
#   REVEAL_KAFKA_PORT     client listener port                                    (default: 9092)
#   REVEAL_KAFKA_WAIT_S   how long to wait for the broker to become ready         (default: 90)
#   REVEAL_KAFKA_LIBS     where the broker jars are cached                        (default: $REVEAL_KAFKA_HOME/libs)
#   REVEAL_KAFKA_KEEP_DATA=1  restart on the existing log directory (topics and offsets kept) instead of a fresh one
#   REVEAL_KAFKA_SASL_PORT    also listen with SASL_PLAINTEXT (mechanism PLAIN) on this port      (default: off)
#   REVEAL_KAFKA_SASL_USERS   user:password[,user:password…] accepted there                      (default: none)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${REVEAL_KAFKA_HOME:-$HOME/.cache/reveal/kafka}"
port="${REVEAL_KAFKA_PORT:-9092}"
controller_port=$((port + 1))
wait_s="${REVEAL_KAFKA_WAIT_S:-90}"
libs="${REVEAL_KAFKA_LIBS:-$home/libs}"
data="$home/data"
log="$home/broker.log"
pidfile="$home/broker.pid"

fail() { echo "kafka start: $*" >&2; exit 1; }

command -v java >/dev/null || fail "java was not found; install a Java 17 runtime (Debian: apt-get install openjdk-17-jre-headless)."
command -v mvn >/dev/null || [ -f "$libs/.complete" ] || fail "mvn was not found; install Apache Maven (Debian: apt-get install maven) to fetch the broker jars."

mkdir -p "$home"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "kafka start: broker already running (pid $(cat "$pidfile")) on 127.0.0.1:$port"
  exit 0
fi

if [ ! -f "$libs/.complete" ]; then
  echo "kafka start: fetching broker jars from Maven Central into $libs (once)"
  rm -rf "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$libs" -DincludeScope=runtime \
    || fail "mvn could not fetch the broker jars; see the Maven output above."
  touch "$libs/.complete"
fi

classpath="$libs/*"
config="$home/server.properties"
sasl_listener=""
sasl_properties=""
if [ -n "${REVEAL_KAFKA_SASL_PORT:-}" ]; then
  sasl_listener=",SASL_PLAINTEXT://127.0.0.1:$REVEAL_KAFKA_SASL_PORT"
  users=""
  IFS=',' read -ra pairs <<< "${REVEAL_KAFKA_SASL_USERS:-}"
  for pair in "${pairs[@]}"; do
    users="$users user_${pair%%:*}=\"${pair#*:}\""
  done
  sasl_properties="sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$users;"
fi
cat > "$config" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port$sasl_listener
advertised.listeners=PLAINTEXT://127.0.0.1:$port$sasl_listener
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
log.dirs=$data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.hours=24
$sasl_properties
PROPS
chmod 600 "$config"

cat > "$home/log4j2.properties" <<'PROPS'
status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
PROPS

java_opts=(-Xms256m -Xmx1g -Dlog4j2.configurationFile="$home/log4j2.properties" -cp "$classpath")

if [ "${REVEAL_KAFKA_KEEP_DATA:-0}" = 1 ] && [ -f "$data/meta.properties" ]; then
  echo "kafka start: keeping the existing log directory $data"
else
  rm -rf "$data"
  cluster_id="$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  [ -n "$cluster_id" ] || fail "could not generate a cluster id with kafka.tools.StorageTool."
  java "${java_opts[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$config" \
      >"$home/format.log" 2>&1 \
    || { tail -n 20 "$home/format.log" >&2; fail "formatting the KRaft log directory $data failed."; }
fi

setsid nohup java "${java_opts[@]}" kafka.Kafka "$config" >"$log" 2>&1 < /dev/null &
echo $! > "$pidfile"

for _ in $(seq 1 "$wait_s"); do
  if grep -q "Kafka Server started" "$log" 2>/dev/null; then
    echo "kafka start: broker ready on 127.0.0.1:$port (pid $(cat "$pidfile"), log $log)"
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    tail -n 30 "$log" >&2
    rm -f "$pidfile"
    fail "the broker exited during start; its last log lines are above."
  fi
  sleep 1
done
tail -n 30 "$log" >&2
fail "the broker was not ready after ${wait_s}s; its last log lines are above (pid $(cat "$pidfile") left running, stop it with infra/kafka/stop.sh)."

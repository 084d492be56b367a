#!/usr/bin/env bash
# Runs a Kafka CLI tool from the cached jars against the local broker (no kafka-*.sh scripts
# come with the Maven jars). --bootstrap-server defaults to the local broker.
#   infra/local/kafka.sh topics --list
#   infra/local/kafka.sh topics --create --topic t --partitions 3 --replication-factor 1
#   infra/local/kafka.sh consumer-groups --list
#   infra/local/kafka.sh api-versions
#   infra/local/kafka.sh <fully.qualified.MainClass> [args...]
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

[ $# -ge 1 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tool="$1"; shift
add_bs=1
case "$tool" in
  topics) cls=org.apache.kafka.tools.TopicCommand ;;
  consumer-groups) cls=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
  configs) cls=kafka.admin.ConfigCommand ;;
  api-versions) cls=kafka.admin.BrokerApiVersionsCommand ;;
  console-producer) cls=org.apache.kafka.tools.ConsoleProducer ;;
  console-consumer) cls=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
  metadata-quorum) cls=org.apache.kafka.tools.MetadataQuorumCommand ;;
  *.*) cls="$tool"; add_bs=0 ;;
  *) die "unknown tool '$tool'" ;;
esac

home="$(kafka_home)"
[ -f "$home/.provisioned" ] || die "kafka is not provisioned (run infra/local/provision.sh kafka)"
jh="$(kafka_java_home)" || die "no JDK for Kafka"
cfg="$CACHE/kafka/tools-log4j.properties"
[ -f "$cfg" ] || printf '%s\n' 'log4j.rootLogger=WARN, stderr' \
  'log4j.appender.stderr=org.apache.log4j.ConsoleAppender' \
  'log4j.appender.stderr.Target=System.err' \
  'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout' \
  'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n' >"$cfg"

args=("$@")
if [ "$add_bs" = 1 ] && [[ " $* " != *" --bootstrap-server "* ]]; then
  args=(--bootstrap-server "127.0.0.1:$KAFKA_PORT" "${args[@]}")
fi
exec "$jh/bin/java" -Xmx256m -Dlog4j.configuration="file:$cfg" -cp "$home/libs/*" "$cls" "${args[@]}"

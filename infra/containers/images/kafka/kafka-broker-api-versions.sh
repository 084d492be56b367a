#!/bin/sh
# As in Kafka's distribution (used by the compose healthcheck); a small, quick-starting JVM.
exec java -Xmx64m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j.configuration=file:/dev/null \
  -cp '/opt/kafka/libs/*' kafka.admin.BrokerApiVersionsCommand "$@"

#!/bin/sh
# As in Kafka's distribution.
exec java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j.configuration=file:/dev/null \
  -cp '/opt/kafka/libs/*' org.apache.kafka.tools.TopicCommand "$@"

#!/bin/bash
# As the official image: every environment variable whose name holds a dot (discovery.type,
# xpack.security.enabled, ...) is an Elasticsearch setting.
set -euo pipefail
settings=()
while IFS='=' read -r name value; do
  [[ "$name" =~ ^[a-z0-9_]+\.[a-z0-9_.]+$ ]] && settings+=("-E$name=$value")
done < <(env)
unset JAVA_HOME
exec /usr/share/elasticsearch/bin/elasticsearch "${settings[@]}" "$@"

#!/bin/sh
# Starts agent-tools serve --http in the background inside a sandbox (E2B, Daytona, Modal and
# the like), waits until it accepts connections, and prints its local URL. Run it through the
# platform's command API with the token in the environment, never on the command line:
#
#   AGENT_TOOLS_TOKEN=... sh start.sh /path/to/project [sandbox host name]
#
# The host name is the one the platform's port URL carries (E2B's `get_host(8765)`,
# Daytona's preview link, Modal's tunnel): the server answers only to the names it is told,
# besides loopback. Its log goes to $AGENT_TOOLS_LOG_FILE (default /tmp/agent-tools.log).
set -eu

root="${1:?usage: start.sh PROJECT_ROOT [HOST_NAME]}"
host="${2:-}"
port="${AGENT_TOOLS_PORT:-8765}"
log="${AGENT_TOOLS_LOG_FILE:-/tmp/agent-tools.log}"
ready="$(mktemp -u /tmp/agent-tools-ready.XXXXXX)"

if [ -z "${AGENT_TOOLS_TOKEN:-}" ]; then
    echo "start.sh: set AGENT_TOOLS_TOKEN to the token clients will send" >&2
    exit 2
fi

set -- serve --http "0.0.0.0:$port" --root "$root" --ready-file "$ready"
if [ -n "$host" ]; then
    set -- "$@" --allow-host "$host"
fi
# Its own session: the platform's command may end (and its process group with it) while the
# server goes on.
setsid agent-tools "$@" < /dev/null > "$log" 2>&1 &
server=$!

# --ready-file is written once the server accepts connections.
waited=0
while [ ! -s "$ready" ]; do
    if ! kill -0 "$server" 2> /dev/null; then
        echo "start.sh: agent-tools ended before it was ready; its log ($log):" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
    if [ "$waited" -ge 300 ]; then
        echo "start.sh: agent-tools was not ready within 30 s; its log: $log" >&2
        exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
done
cat "$ready"
echo
rm -f "$ready"

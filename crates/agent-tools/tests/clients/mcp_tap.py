"""Runs an MCP server over stdio between a client and itself, and records the handshake.

Usage: python3 mcp_tap.py LOG -- SERVER ARGS...

Every line is passed on unchanged, both ways. The client's `initialize` or `server/discover`
request and the server's answer to it are appended to LOG as JSON lines: the agent CLI tests
read the protocol revision each CLI negotiated from there. SIGINT and SIGTERM are passed to the
server, and the tap ends with the server's exit status once the server has ended.
"""

import json
import signal
import subprocess
import sys
import threading

log_path = sys.argv[1]
command = sys.argv[sys.argv.index("--") + 1 :]
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
handshake_ids = set()
lock = threading.Lock()


def note(direction, message):
    with lock, open(log_path, "a") as log:
        log.write(json.dumps({"direction": direction, "message": message}) + "\n")


def parse(line):
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def client_to_server():
    for line in sys.stdin.buffer:
        message = parse(line)
        if message and message.get("method") in ("initialize", "server/discover"):
            handshake_ids.add(json.dumps(message.get("id")))
            note("client", message)
        try:
            server.stdin.write(line)
            server.stdin.flush()
        except (BrokenPipeError, ValueError):
            break
    try:
        server.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


def server_to_client():
    for line in server.stdout:
        message = parse(line)
        if message and "method" not in message and json.dumps(message.get("id")) in handshake_ids:
            note("server", message)
        try:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            pass


for number in (signal.SIGINT, signal.SIGTERM):
    signal.signal(number, lambda received, _frame: server.send_signal(received))
threading.Thread(target=client_to_server, daemon=True).start()
output = threading.Thread(target=server_to_client, daemon=True)
output.start()
status = server.wait()
output.join(timeout=5)
sys.exit(status if status >= 0 else 128 - status)

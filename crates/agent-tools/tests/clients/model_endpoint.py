"""A scripted model endpoint on 127.0.0.1 for the agent CLI tests (issue 39).

It speaks the three wire protocols the CLIs use: Anthropic's Messages API (Claude Code),
OpenAI's Responses API (Codex) and Gemini's generateContent / streamGenerateContent (Gemini
CLI, with its router classifier), each streamed as server-sent events where the CLI asks for a
stream. It plays one script: a list of tool calls, each sent only once the CLI has returned
the result of the one before (the step is the number of tool results in the conversation),
then a final text answer. Every request is recorded, whole, as one JSON line.

Usage: python3 model_endpoint.py SCRIPT.json RECORD.jsonl PORT_FILE

SCRIPT.json: {"calls": [{"tool": BARE_NAME, "args": {...}}, ...], "answer": TEXT,
              "worker_marker": TEXT, "worker_answer": TEXT}
The CLI names a tool with its own prefix (`mcp__agent-tools__read`, `mcp_agent-tools_read`,
or a namespace `mcp__agent-tools` holding `read`); the endpoint finds that name in the
request's tool list. A Messages request whose conversation holds `worker_marker` and no
agent-tools tool is the vibe worker's (`claude -p`): it is answered with `worker_answer`. The endpoint writes its port to PORT_FILE once it
listens, and ends when its parent closes its stdin.
"""

import gzip
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = json.load(open(sys.argv[1]))
RECORD = open(sys.argv[2], "a", buffering=1)
LOCK = threading.Lock()


def record(entry):
    with LOCK:
        RECORD.write(json.dumps(entry) + "\n")


def sse(events):
    """Server-sent events: each (event name or None, data) pair as one event."""
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def mentions(body, text):
    return text in json.dumps(body)


# ---------------------------------------------------------------------------------------------
# Anthropic Messages API (Claude Code)


def anthropic_tool_results(body):
    return sum(
        1
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )


def anthropic_deferred_names(body):
    """The agent-tools tools Claude Code names in its first request (deferred: names only)."""
    text = json.dumps(body)
    names = set()
    for token in text.replace("\\n", " ").replace('"', " ").replace(",", " ").split():
        if token.startswith("mcp__agent-tools__"):
            names.add(token.strip(".:;)("))
    return sorted(names)


def anthropic_reply(body):
    tools = [tool.get("name") for tool in body.get("tools", [])]
    model = body.get("model", "claude")
    # The worker's conversation holds its brief and no agent-tools tool; the main one holds
    # the brief too once vibe_spawn was called.
    if SCRIPT.get("worker_marker") and mentions(body, SCRIPT["worker_marker"]) and not mentions(body, "mcp__agent-tools__"):
        return anthropic_text(model, SCRIPT["worker_answer"])
    if "ToolSearch" not in tools:
        # A side request (a title, a summary, a check): a short answer of text.
        return anthropic_text(model, "ok")
    step = anthropic_tool_results(body)
    if step == 0:
        names = anthropic_deferred_names(body)
        return anthropic_tool_use(model, "ToolSearch", {"query": "select:" + ",".join(names), "max_results": len(names) or 1})
    calls = SCRIPT["calls"]
    if step - 1 < len(calls):
        call = calls[step - 1]
        return anthropic_tool_use(model, "mcp__agent-tools__" + call["tool"], call["args"])
    return anthropic_text(model, SCRIPT["answer"])


def anthropic_message_start(model):
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_" + uuid.uuid4().hex,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    )


def anthropic_end(stop_reason):
    return [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 10}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_text(model, text):
    return sse(
        [
            anthropic_message_start(model),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        + anthropic_end("end_turn")
    )


def anthropic_tool_use(model, name, args):
    return sse(
        [
            anthropic_message_start(model),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name, "input": {}}},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        + anthropic_end("tool_use")
    )


# ---------------------------------------------------------------------------------------------
# OpenAI Responses API (Codex)


def responses_tool(body, bare):
    """The (namespace, name) under which Codex offers the agent-tools tool `bare`: in the
    request's tools, or in what its tool_search found."""
    found = [
        tool
        for item in body.get("input", [])
        if isinstance(item, dict) and item.get("type") == "tool_search_output"
        for tool in item.get("tools", [])
    ]
    for tool in body.get("tools", []) + found:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                if inner.get("name") == bare and "agent" in tool.get("name", ""):
                    return tool["name"], inner["name"]
        elif tool.get("name", "").endswith("__" + bare):
            return None, tool["name"]
    return None, bare


def responses_reply(body):
    model = body.get("model", "gpt")
    items = body.get("input", [])
    step = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output")
    searched = any(isinstance(item, dict) and item.get("type") == "tool_search_output" for item in items)
    calls = SCRIPT["calls"]
    response_id = "resp_" + uuid.uuid4().hex
    if not searched and any(tool.get("type") == "tool_search" for tool in body.get("tools", [])):
        # Codex defers MCP tools behind its client-side tool_search for the models it knows:
        # one search names every tool of the script, and the next request carries them.
        names = sorted({call["tool"] for call in calls})
        item = {
            "type": "tool_search_call",
            "id": "ts_" + uuid.uuid4().hex,
            "call_id": "call_" + uuid.uuid4().hex,
            "status": "completed",
            "execution": "client",
            "arguments": {"query": "agent-tools " + " ".join(names), "limit": 64},
        }
    elif step < len(calls):
        call = calls[step]
        namespace, name = responses_tool(body, call["tool"])
        item = {
            "type": "function_call",
            "id": "fc_" + uuid.uuid4().hex,
            "call_id": "call_" + uuid.uuid4().hex,
            "name": name,
            "arguments": json.dumps(call["args"]),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": "msg_" + uuid.uuid4().hex,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": SCRIPT["answer"], "annotations": []}],
        }
    response = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    done = dict(response, status="completed", output=[item], usage={"input_tokens": 10, "output_tokens": 10, "total_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}})
    return sse(
        [
            ("response.created", {"type": "response.created", "response": response}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
    )


# ---------------------------------------------------------------------------------------------
# Gemini generateContent (Gemini CLI)


def gemini_tool(body, bare):
    return "mcp_agent-tools_" + bare


def gemini_candidate(parts):
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
        "modelVersion": "gemini-test",
    }


def gemini_reply(body, path):
    stream = ":streamGenerateContent" in path
    if not body.get("tools"):
        # The router classifier, and any other call without tools, wants JSON of its own
        # schema; the classifier's names a model.
        schema = json.dumps(body.get("generationConfig", {}))
        if "model_choice" in schema or "complexity_score" in schema:
            # Both of its classifiers' schemas at once: each reads its own fields.
            route = {"reasoning": "a scripted test", "model_choice": "flash", "complexity_reasoning": "a scripted test", "complexity_score": 10}
            parts = [{"text": json.dumps(route)}]
        elif "responseJsonSchema" in schema or "responseSchema" in schema or "application/json" in schema:
            parts = [{"text": "{}"}]
        else:
            parts = [{"text": "ok"}]
    else:
        step = sum(
            1
            for content in body.get("contents", [])
            for part in content.get("parts", [])
            if "functionResponse" in part
        )
        calls = SCRIPT["calls"]
        if step < len(calls):
            call = calls[step]
            parts = [{"functionCall": {"name": gemini_tool(body, call["tool"]), "args": call["args"]}}]
        else:
            parts = [{"text": SCRIPT["answer"]}]
    chunk = gemini_candidate(parts)
    if stream:
        return sse([(None, chunk)]), "text/event-stream"
    return json.dumps(chunk).encode(), "application/json"


# ---------------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            data = gzip.decompress(data)
        return data

    def answer(self, status, payload, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        record({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        if "/models" in self.path:
            self.answer(200, json.dumps({"data": [], "models": []}).encode(), "application/json")
        else:
            self.answer(404, b'{"error": "not scripted"}', "application/json")

    def do_POST(self):
        raw = self.read_body()
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        record({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self.answer(200, b'{"input_tokens": 10}', "application/json")
        elif path.endswith("/messages"):
            self.answer(200, anthropic_reply(body), "text/event-stream")
        elif path.endswith("/responses"):
            self.answer(200, responses_reply(body), "text/event-stream")
        elif "generatecontent" in path.lower():
            payload, content_type = gemini_reply(body, path)
            self.answer(200, payload, content_type)
        elif path.endswith(":countTokens"):
            self.answer(200, b'{"totalTokens": 10}', "application/json")
        else:
            self.answer(404, b'{"error": "not scripted"}', "application/json")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(sys.argv[3] + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    import os

    os.replace(sys.argv[3] + ".tmp", sys.argv[3])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # The test holds the other end of stdin: when it closes (or dies), the endpoint ends.
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()

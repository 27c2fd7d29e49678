//! The tasks of the 2025-11-25 protocol, as the TypeScript SDK (1.32) speaks them, served
//! beside the `io.modelcontextprotocol/tasks` extension that rmcp knows.
//!
//! rmcp reads only the extension's shapes: it drops a `tools/call`'s `params.task`, declares
//! no `capabilities.tasks`, lists no `execution` on tools, names a task's fields `ttlMs` and
//! `pollIntervalMs`, and refuses `tasks/get` and `tasks/cancel` from a client that did not
//! declare the extension. So each transport rewrites the few messages where the dialects
//! differ ([`Dialect`]: stdio per line, HTTP per request and response body), and the handler serves the rest ([`legacy_task`] and the
//! `tasks/*` methods in `on_custom_request`):
//!
//! - in: a `tools/call` with `params.task` keeps it as `params._meta[`[`TASK_META`]`]`, which
//!   rmcp passes on, and the handler makes the call a task at once; on a session that opened
//!   with `initialize`, `tasks/get|result|list|cancel` are renamed to
//!   [`PRIVATE_PREFIX`]`tasks/…`, so that they reach the handler and not rmcp's gate. The
//!   extension is declared per request, on the 2026-07-28 protocol it is defined on: a
//!   2025-11-25 client that names it at `initialize` (the MCP Inspector does) reads plain
//!   calls' answers as results and asks for tasks with `params.task`, so a session's tasks
//!   are always the 2025-11-25 ones;
//! - out: the `initialize` answer of a 2025-11-25 session declares `capabilities.tasks` (and
//!   not the extension);
//!   `tools/list` moves each tool's `_meta[`[`EXECUTION_META`]`]` to `execution`; the answer
//!   to a call with `params.task` becomes `{task: …}`; and every extension task (`tasks/get`,
//!   `tasks/cancel`, a call that became a task) carries `ttl` and `pollInterval` beside
//!   `ttlMs` and `pollIntervalMs`, so a 2025-11-25 reader finds them too.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// Where a call's 2025-11-25 `params.task` travels through rmcp.
pub(crate) const TASK_META: &str = "agent-tools/task";

/// Where the handler puts a tool's 2025-11-25 `execution` for the transport to move.
pub(crate) const EXECUTION_META: &str = "agent-tools/execution";

/// The prefix the 2025-11-25 `tasks/*` methods get on an `initialize` session.
pub(crate) const PRIVATE_PREFIX: &str = "agent-tools/2025-11-25/";

/// The extension's id, as clients declare it.
const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The first protocol version without `initialize` sessions.
const MODERN: &str = "2026-07-28";

/// What the answer to a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Initialize,
    ToolsList,
    /// A call sent with `params.task`.
    TaskCall,
    /// A request whose answer may be an extension task.
    MaybeTask,
}

/// One connection's view of the dialect: whether it opened with `initialize`, and the
/// requests whose answers are rewritten.
#[derive(Debug, Default)]
pub(crate) struct Dialect {
    /// Whether the connection opened a 2025-11-25 session with `initialize`.
    session: bool,
    pending: HashMap<String, Pending>,
}

/// A cheap look at a raw line: whether it may be a message [`Dialect::inbound`] changes.
pub(crate) fn may_rewrite_inbound(line: &str) -> bool {
    line.contains("\"initialize\"")
        || line.contains("\"tools/list\"")
        || line.contains("\"tools/call\"")
        || line.contains("\"tasks/")
}

impl Dialect {
    /// The view of one HTTP request: there each POST carries one message, its answer comes
    /// back on that POST's response, and a request belongs to a 2025-11-25 session exactly
    /// when it carries `Mcp-Session-Id` (or is the `initialize` that opens one).
    pub(crate) fn for_request(session: bool) -> Dialect {
        Dialect {
            session,
            pending: HashMap::new(),
        }
    }

    /// Whether some answer waits to be rewritten (the outbound side looks only then).
    pub(crate) fn is_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Rewrites a message from the client in place.
    pub(crate) fn inbound(&mut self, message: &mut Value) {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return;
        };
        let method = method.to_owned();
        let id = message.get("id").map(id_key);
        let record = |dialect: &mut Dialect, pending| {
            if let Some(id) = &id {
                dialect.pending.insert(id.clone(), pending);
            }
        };
        match method.as_str() {
            "initialize" => {
                self.session = true;
                record(self, Pending::Initialize);
            }
            "tools/list" => record(self, Pending::ToolsList),
            "tools/call" => {
                let params = message.get_mut("params").and_then(Value::as_object_mut);
                match params {
                    Some(params) if params.contains_key("task") => {
                        let task = params.remove("task").unwrap_or_default();
                        let meta = params
                            .entry("_meta")
                            .or_insert_with(|| Value::Object(Map::new()));
                        if let Some(meta) = meta.as_object_mut() {
                            meta.insert(TASK_META.to_owned(), task);
                        }
                        record(self, Pending::TaskCall);
                    }
                    _ => {}
                }
            }
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => {
                if self.session {
                    message["method"] = Value::String(format!("{PRIVATE_PREFIX}{method}"));
                } else {
                    record(self, Pending::MaybeTask);
                }
            }
            _ => {}
        }
    }

    /// Rewrites a message to the client in place.
    pub(crate) fn outbound(&mut self, message: &mut Value) {
        let Some(id) = message.get("id").map(id_key) else {
            return;
        };
        // A request of ours (elicitation) has a method; only answers are rewritten.
        if message.get("method").is_some() {
            return;
        }
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
            return;
        };
        match pending {
            Pending::Initialize => {
                let legacy = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|version| version < MODERN);
                if legacy && let Some(capabilities) = result.get_mut("capabilities") {
                    if let Some(extensions) = capabilities
                        .get_mut("extensions")
                        .and_then(Value::as_object_mut)
                    {
                        extensions.remove(EXTENSION);
                        if extensions.is_empty() {
                            capabilities
                                .as_object_mut()
                                .map(|caps| caps.remove("extensions"));
                        }
                    }
                    capabilities["tasks"] = json!({
                        "list": {},
                        "cancel": {},
                        "requests": {"tools": {"call": {}}},
                    });
                }
            }
            Pending::ToolsList => {
                let tools = result.get_mut("tools").and_then(Value::as_array_mut);
                for tool in tools.into_iter().flatten() {
                    let Some(tool) = tool.as_object_mut() else {
                        continue;
                    };
                    let execution = tool
                        .get_mut("_meta")
                        .and_then(Value::as_object_mut)
                        .and_then(|meta| meta.remove(EXECUTION_META));
                    if tool
                        .get("_meta")
                        .and_then(Value::as_object)
                        .is_some_and(Map::is_empty)
                    {
                        tool.remove("_meta");
                    }
                    if let Some(execution) = execution {
                        tool.insert("execution".to_owned(), execution);
                    }
                }
            }
            Pending::TaskCall => {
                let task = result
                    .get_mut("_meta")
                    .and_then(Value::as_object_mut)
                    .and_then(|meta| meta.remove(TASK_META));
                if let Some(task) = task {
                    *result = Map::from_iter([("task".to_owned(), task)]);
                }
            }
            Pending::MaybeTask => {
                alias_task_fields(result);
                for listed in result
                    .get_mut("tasks")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(listed) = listed.as_object_mut() {
                        alias_task_fields(listed);
                    }
                }
            }
        }
    }
}

/// `ttl` and `pollInterval` beside an extension task's `ttlMs` and `pollIntervalMs`.
fn alias_task_fields(task: &mut Map<String, Value>) {
    if !task.contains_key("taskId") {
        return;
    }
    if let Some(ttl) = task.get("ttlMs").cloned() {
        task.entry("ttl").or_insert(ttl);
    }
    if let Some(poll) = task.get("pollIntervalMs").cloned() {
        task.entry("pollInterval").or_insert(poll);
    }
}

/// A request id as a map key: `7` and `"7"` are different ids.
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A task as the 2025-11-25 protocol shows it, from rmcp's: `ttl` and `pollInterval`
/// instead of `ttlMs` and `pollIntervalMs`, `ttl` always present (null: unlimited), and no
/// extension payload (result, error, input requests).
pub(crate) fn legacy_task(task: &rmcp::model::Task) -> Value {
    let mut shown = json!({
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
    });
    if let Some(message) = &task.status_message {
        shown["statusMessage"] = Value::String(message.clone());
    }
    if let Some(poll) = task.poll_interval_ms {
        shown["pollInterval"] = json!(poll);
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initialize(dialect: &mut Dialect, extensions: Value) {
        let mut message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"extensions": extensions},
                "clientInfo": {"name": "t", "version": "1"}}});
        dialect.inbound(&mut message);
        let mut answer = json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}});
        dialect.outbound(&mut answer);
        assert_eq!(
            answer["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
    }

    #[test]
    fn a_2025_task_call_travels_in_meta_and_its_answer_becomes_a_task() {
        let mut dialect = Dialect::default();
        initialize(&mut dialect, json!({}));
        let mut call = json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
            "params": {"name": "eval", "arguments": {}, "task": {"ttl": 60000}}});
        assert!(may_rewrite_inbound(&call.to_string()));
        dialect.inbound(&mut call);
        assert_eq!(call["params"].get("task"), None);
        assert_eq!(call["params"]["_meta"][TASK_META], json!({"ttl": 60000}));
        let task = json!({"taskId": "t", "status": "working", "ttl": 60000,
            "createdAt": "x", "lastUpdatedAt": "x"});
        let mut answer = json!({"jsonrpc": "2.0", "id": "c1", "result": {
            "content": [], "_meta": {TASK_META: task.clone()}}});
        dialect.outbound(&mut answer);
        assert_eq!(answer["result"], json!({"task": task}));
        assert!(!dialect.is_waiting());
    }

    #[test]
    fn a_sessions_tasks_are_the_2025_ones_even_when_it_names_the_extension() {
        for extensions in [json!({}), json!({EXTENSION: {}})] {
            let mut session = Dialect::default();
            initialize(&mut session, extensions.clone());
            let mut get = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get",
                "params": {"taskId": "t"}});
            session.inbound(&mut get);
            assert_eq!(
                get["method"], "agent-tools/2025-11-25/tasks/get",
                "{extensions}"
            );
        }

        // A 2026-07-28 client opens no session: its requests pass on, and the extension's
        // tasks gain the 2025 field names beside their own.
        let mut modern = Dialect::default();
        let mut get = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get",
            "params": {"taskId": "t"}});
        modern.inbound(&mut get);
        assert_eq!(get["method"], "tasks/get");
        let mut answer = json!({"jsonrpc": "2.0", "id": 5, "result": {"taskId": "t",
            "status": "working", "ttlMs": 9, "pollIntervalMs": 500}});
        modern.outbound(&mut answer);
        assert_eq!(answer["result"]["ttl"], 9);
        assert_eq!(answer["result"]["pollInterval"], 500);
    }

    #[test]
    fn a_2025_initialize_answer_declares_core_tasks_and_not_the_extension() {
        let mut dialect = Dialect::default();
        let mut message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
        dialect.inbound(&mut message);
        let mut answer = json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}}}});
        dialect.outbound(&mut answer);
        let capabilities = &answer["result"]["capabilities"];
        assert_eq!(capabilities.get("extensions"), None, "{capabilities}");
        assert_eq!(capabilities["tasks"]["list"], json!({}));
    }

    #[test]
    fn tools_list_shows_execution_where_the_handler_marked_it() {
        let mut dialect = Dialect::default();
        let mut list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        dialect.inbound(&mut list);
        let mut answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "eval", "_meta": {EXECUTION_META: {"taskSupport": "optional"}}},
            {"name": "read"},
        ]}});
        dialect.outbound(&mut answer);
        assert_eq!(
            answer["result"]["tools"],
            json!([{"name": "eval", "execution": {"taskSupport": "optional"}}, {"name": "read"}])
        );
    }
}

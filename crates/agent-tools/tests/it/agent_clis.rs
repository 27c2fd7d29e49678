//! The agent CLIs people use, pinned from the npm registry (issue 39, item 10): Claude Code,
//! Codex and Gemini CLI each run headless with `agent-tools serve` as their MCP server,
//! against a scripted model endpoint on 127.0.0.1 (`tests/clients/model_endpoint.py`) that
//! records every request. What is asserted is what a model receives: the tool list, and for
//! each scripted call the tool result as the CLI put it into the next request. The matrix runs
//! `serve --approval allow`; a second, one-call run per client keeps the default
//! `--approval ask` and reads what the model is told when the client answers the permission
//! card itself (item 4).
//!
//! Each test prints its row of the matrix (protocol revision, tool-list tokens, what the
//! model received per call). An assertion that fails today only because of another item of
//! issue 39 is listed in [`EXPECTED_FAILURES`] with that item: the test fails when such a case
//! starts to pass, so the entry is removed as the item lands.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Client, MARK, Server, unique_mark, until_processes};
use tools_test_support::{
    LanguageServer, available, python_imports, python_project, repo_root, require,
};

/// One agent CLI as `cargo xtask setup` installs it: its own folder under `.tools`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::GeminiCli => "Gemini CLI",
        }
    }

    /// (folder under `.tools`, npm package, pinned version); `xtask/src/ci.rs` pins the same.
    fn package(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Agent::ClaudeCode => ("claude-code", "@anthropic-ai/claude-code", "2.1.328"),
            Agent::Codex => ("codex", "@openai/codex", "0.169.0"),
            Agent::GeminiCli => ("gemini-cli", "@google/gemini-cli", "0.61.0"),
        }
    }

    fn bin(self) -> PathBuf {
        let (folder, _, _) = self.package();
        let name = match self {
            Agent::ClaudeCode => "claude",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini",
        };
        repo_root()
            .join(".tools")
            .join(folder)
            .join("node_modules/.bin")
            .join(name)
    }

    /// Whether the pinned version is installed (said loudly when not; fails under `CI=true`).
    fn installed(self) -> bool {
        let (folder, package, version) = self.package();
        let manifest = repo_root()
            .join(".tools")
            .join(folder)
            .join("node_modules")
            .join(package)
            .join("package.json");
        let pinned = std::fs::read_to_string(manifest)
            .is_ok_and(|text| text.contains(&format!("\"version\": \"{version}\"")));
        require(
            self.name(),
            pinned,
            &format!("npm install --prefix .tools/{folder} {package}@{version}"),
        )
    }
}

/// The cases the model's script plays, in order, each with what its result must hold.
struct Case {
    name: &'static str,
    tool: &'static str,
    args: Value,
    /// Every one of these must be in what the model received (compared in lower case).
    holds: &'static [&'static str],
}

/// What the vibe worker's brief carries, so the endpoint knows its requests, and its answer.
const WORKER_BRIEF: &str = "WORKER-BRIEF-2604: reply with the code word";
const WORKER_ANSWER: &str = "the code word is WORKER-ANSWER-7319";
const FINAL_ANSWER: &str = "SCRIPT-DONE: every call was made";

/// The script for `agent`: every case, but `ask_user` only for a client that takes elicitation
/// (Gemini CLI declares none, so the server does not list the tool to it).
fn cases(agent: Agent) -> Vec<Case> {
    let mut cases = all_cases();
    if !takes_elicitation(agent) {
        cases.retain(|case| case.tool != "ask_user");
    }
    if agent == Agent::GeminiCli {
        // Gemini CLI adds `wait_for_previous` to every tool's schema and passes on what its
        // model sets: a call carrying it is answered, not refused (item 3).
        cases.push(Case {
            name: "injected wait_for_previous",
            tool: "read",
            args: json!({"path": "main.py", "wait_for_previous": true}),
            holds: &["from shapes import area"],
        });
    }
    cases
}

fn takes_elicitation(agent: Agent) -> bool {
    agent != Agent::GeminiCli
}

fn all_cases() -> Vec<Case> {
    vec![
        Case {
            name: "read",
            tool: "read",
            args: json!({"path": "shapes.py"}),
            holds: &["return side * side"],
        },
        Case {
            name: "ast_grep",
            tool: "ast_grep",
            args: json!({"pattern": "return $X", "language": "python"}),
            // The match's file and text (as `path:LINE` in the text, as fields in the structure).
            holds: &["shapes.py", "return side * side"],
        },
        Case {
            name: "lsp hover",
            tool: "lsp",
            args: json!({"operation": "hover", "path": "shapes.py", "line": 1, "symbol": "area"}),
            holds: &["(side: int) -> int"],
        },
        Case {
            name: "lsp references",
            tool: "lsp",
            args: json!({"operation": "references", "path": "shapes.py", "line": 1, "symbol": "area"}),
            holds: &["main.py", "print(area(3))"],
        },
        Case {
            name: "edit with fallout",
            tool: "edit",
            args: json!({"path": "shapes.py", "old_string": "def area(", "new_string": "def surface("}),
            // The diagnostics on write name the file that still imports the old name.
            holds: &["main.py", "unknown import symbol"],
        },
        Case {
            name: "eval table",
            tool: "eval",
            args: json!({
                "code": "import pandas as pd\npd.DataFrame({'side': [1, 2, 3], 'square': [1, 4, 9]})",
                "description": "a small table of squares by side",
            }),
            holds: &["square", "dataframe 3"],
        },
        Case {
            name: "eval figure",
            tool: "eval",
            args: json!({
                "code": "import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2))\nplt.plot([1, 4, 9])\nplt.show()",
                "description": "plot the squares as a line",
            }),
            // The image itself is checked per client (`image_reached`).
            holds: &[],
        },
        Case {
            name: "debug breakpoint",
            tool: "debug",
            args: json!({"operation": "breakpoints", "path": "count.py", "lines": [5]}),
            holds: &["count.py"],
        },
        Case {
            name: "debug launch",
            tool: "debug",
            args: json!({"operation": "launch", "program": "count.py"}),
            holds: &["count.py:5", "result = 12"],
        },
        Case {
            name: "ask_user declined",
            tool: "ask_user",
            args: json!({
                "question": "Which greeting should the script print?",
                "options": [{"label": "hello"}, {"label": "goodbye"}],
            }),
            // ASK-3: proceed on a stated assumption, and do not ask again.
            holds: &["do not ask this question again"],
        },
        Case {
            name: "bad argument",
            tool: "read",
            // Valid by the schema (a client that checks it passes it on), wrong for the file.
            args: json!({"path": "shapes.py", "offset": 9}),
            holds: &["offset", "past the end", "2 lines"],
        },
        Case {
            name: "vibe_spawn",
            tool: "vibe_spawn",
            args: json!({"brief": WORKER_BRIEF, "label": "scripted worker"}),
            holds: &["w1"],
        },
        Case {
            name: "vibe_wait",
            tool: "vibe_wait",
            args: json!({"worker_id": "w1", "timeout_seconds": 120}),
            holds: &["worker-answer-7319"],
        },
    ]
}

/// Cases that fail today only because another item of issue 39 is not in yet: (client, case,
/// the item). Remove an entry when its item lands; the test fails while a listed case passes.
const EXPECTED_FAILURES: &[(Agent, &str, &str)] = &[];

/// The workspace every client works in: a module and its importer (for hover, references and
/// the edit's fallout) and a program to stop in.
const FILES: &[(&str, &str)] = &[
    (
        "shapes.py",
        "def area(side: int) -> int:\n    return side * side\n",
    ),
    ("main.py", "from shapes import area\n\nprint(area(3))\n"),
    (
        "count.py",
        "def total(values):\n    result = 0\n    for value in values:\n        result += value\n    return result\n\n\nprint(total([3, 4, 5]))\n",
    ),
];

/// What one run of a client left: the recorded model requests and the MCP handshake.
struct Run {
    requests: Vec<Value>,
    handshake: Vec<Value>,
    stdout: String,
    stderr: String,
    left: Vec<String>,
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Runs `agent` once through the script of `calls`, with `serve --approval {approval}` as its
/// MCP server, and returns what was recorded.
async fn run_agent(agent: Agent, dir: &Path, root: &Path, calls: &[Case], approval: &str) -> Run {
    let script = json!({
        "calls": calls.iter().map(|case| json!({"tool": case.tool, "args": case.args})).collect::<Vec<_>>(),
        "answer": FINAL_ANSWER,
        "worker_marker": WORKER_BRIEF,
        "worker_answer": WORKER_ANSWER,
    });
    let script_path = dir.join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let record = dir.join("requests.jsonl");
    let port_file = dir.join("port");
    // The endpoint ends when its stdin closes: with this test's end, whatever way it ends.
    let mut endpoint = tokio::process::Command::new("python3")
        .arg(clients_dir().join("model_endpoint.py"))
        .args([&script_path, &record, &port_file])
        .stdin(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let port = loop {
        if let Ok(port) = std::fs::read_to_string(&port_file) {
            break port;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the endpoint did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let base = format!("http://127.0.0.1:{port}");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mark = unique_mark();
    let handshake_log = dir.join("handshake.jsonl");
    // The vibe worker is `claude -p` against the same endpoint, whichever client runs.
    std::fs::write(
        root.join("agent-tools.toml"),
        format!(
            "[vibe]\nfast = [{:?}, \"-p\", \"--model\", \"haiku\"]\n",
            Agent::ClaudeCode.bin().display().to_string()
        ),
    )
    .unwrap();
    // The server runs behind a tap that passes every line on and records the handshake: the
    // protocol revision each CLI negotiated is read from there (the server logs none).
    let server_args: Vec<String> = [
        clients_dir().join("mcp_tap.py").display().to_string(),
        handshake_log.display().to_string(),
        "--".to_owned(),
        env!("CARGO_BIN_EXE_agent-tools").to_owned(),
        "serve".to_owned(),
        "--root".to_owned(),
        root.display().to_string(),
        // Item 4: a headless client answers cards without a person; the matrix allows
        // writes, `headless_write_under_ask` keeps the default and reads the refusal.
        "--approval".to_owned(),
        approval.to_owned(),
        "--vibe".to_owned(),
    ]
    .into();
    // Codex and Gemini CLI pass the server a filtered environment: what it needs is said here.
    let server_env = json!({
        MARK: mark,
        "PATH": std::env::var("PATH").unwrap_or_default(),
        "HOME": home.display().to_string(),
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": "sk-scripted-endpoint",
        "DISABLE_AUTOUPDATER": "1",
        // Only the endpoint is reachable: no telemetry, no update or feature-flag fetches.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    });
    let prompt = "Use the agent-tools tools as the script says.";
    let mut command = tokio::process::Command::new(agent.bin());
    command
        .current_dir(root)
        .env("HOME", &home)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match agent {
        Agent::ClaudeCode => {
            let config = dir.join("mcp.json");
            std::fs::write(
                &config,
                json!({"mcpServers": {"agent-tools": {
                    "command": "python3", "args": server_args, "env": server_env,
                }}})
                .to_string(),
            )
            .unwrap();
            command
                .args(["-p", prompt, "--mcp-config"])
                .arg(&config)
                .args([
                    "--strict-mcp-config",
                    "--allowedTools",
                    "mcp__agent-tools",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ])
                .env("ANTHROPIC_BASE_URL", &base)
                .env("ANTHROPIC_API_KEY", "sk-scripted-endpoint")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        }
        Agent::Codex => {
            let codex_home = dir.join("codex-home");
            std::fs::create_dir_all(&codex_home).unwrap();
            let env_table: Vec<String> = server_env
                .as_object()
                .unwrap()
                .iter()
                .map(|(key, value)| format!("{key:?} = {value}"))
                .collect();
            let config = format!(
                "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\n\
                 sandbox_mode = \"danger-full-access\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base}/v1\"\n\
                 env_key = \"SCRIPTED_KEY\"\nwire_api = \"responses\"\n\n\
                 [mcp_servers.agent-tools]\ncommand = \"python3\"\nargs = {}\n\
                 startup_timeout_sec = 120\ntool_timeout_sec = 300\n\n\
                 [mcp_servers.agent-tools.env]\n{}\n",
                serde_json::to_string(&server_args).unwrap(),
                env_table.join("\n"),
            );
            std::fs::write(codex_home.join("config.toml"), config).unwrap();
            command
                .args(["exec", "--json", "--skip-git-repo-check", prompt])
                .env("CODEX_HOME", &codex_home)
                .env("SCRIPTED_KEY", "sk-scripted-endpoint");
        }
        Agent::GeminiCli => {
            let settings = home.join(".gemini");
            std::fs::create_dir_all(&settings).unwrap();
            std::fs::write(
                settings.join("settings.json"),
                json!({
                    "security": {
                        "auth": {"selectedType": "gemini-api-key"},
                        "folderTrust": {"enabled": false},
                    },
                    "mcpServers": {"agent-tools": {
                        "command": "python3", "args": server_args, "env": server_env,
                        "timeout": 300_000,
                    }},
                })
                .to_string(),
            )
            .unwrap();
            command
                .args([
                    "-p",
                    prompt,
                    "--approval-mode",
                    "yolo",
                    "--output-format",
                    "stream-json",
                ])
                .env("GOOGLE_GEMINI_BASE_URL", &base)
                .env("GEMINI_API_KEY", "scripted-endpoint")
                .env("GEMINI_CLI_NO_RELAUNCH", "1");
        }
    }
    let output = tokio::time::timeout(Duration::from_secs(420), command.output())
        .await
        .unwrap_or_else(|_| panic!("{} ran over 420 s", agent.name()))
        .unwrap();
    // Nothing the server started is left once the client has exited: the server, its
    // language server, kernel, debug adapter and worker.
    let left = until_processes(&mark, <[String]>::is_empty).await;
    drop(endpoint.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(10), endpoint.wait()).await;
    let read_lines = |path: &Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    };
    Run {
        requests: read_lines(&record),
        handshake: read_lines(&handshake_log),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        left,
    }
}

/// The tools `serve --vibe` lists to a client like `agent` (with or without elicitation), as
/// (name, input property names), and what their names, descriptions and input schemas cost in
/// tokens as `serve` sends them (the measure of `tokens.rs`).
async fn served_tools(root: &Path, agent: Agent) -> (Vec<(String, Vec<String>)>, usize) {
    let client = if takes_elicitation(agent) {
        Client::answering(Vec::new())
    } else {
        Client::without_elicitation()
    };
    let server = Server::start(root, &["--vibe", "--approval", "allow"], client).await;
    let tools = server.service.list_all_tools().await.unwrap();
    server.service.cancel().await.unwrap();
    let tokenizer = tiktoken_rs::o200k_base().unwrap();
    let tokens = tools
        .iter()
        .map(|tool| {
            let facing = json!({
                "name": tool.name,
                "description": tool.description,
                "inputSchema": tool.input_schema,
            });
            tokenizer.encode_ordinary(&facing.to_string()).len()
        })
        .sum();
    let tools = tools
        .iter()
        .map(|tool| {
            let properties = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| properties.keys().cloned().collect())
                .unwrap_or_default();
            (tool.name.to_string(), properties)
        })
        .collect();
    (tools, tokens)
}

/// The agent-tools tools in one model request, as the client declared them: (bare name, the
/// declaration as sent).
fn declared_tools(agent: Agent, body: &Value) -> Vec<(String, Value)> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    match agent {
        Agent::ClaudeCode => tools
            .into_iter()
            .filter_map(|tool| {
                let name = tool["name"].as_str()?.strip_prefix("mcp__agent-tools__")?;
                Some((name.to_owned(), tool.clone()))
            })
            .collect(),
        Agent::Codex => codex_namespaces(body)
            .into_iter()
            .flat_map(|tool| tool["tools"].as_array().cloned().unwrap_or_default())
            .filter_map(|tool| Some((tool["name"].as_str()?.to_owned(), tool.clone())))
            .collect(),
        Agent::GeminiCli => tools
            .into_iter()
            .flat_map(|group| {
                group["functionDeclarations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|tool| {
                let name = tool["name"].as_str()?.strip_prefix("mcp_agent-tools_")?;
                Some((name.to_owned(), tool.clone()))
            })
            .collect(),
    }
}

/// The namespace holding the agent-tools tools as Codex declares it: Codex defers MCP tools for
/// the models it knows, and they reach the model in the output of its tool_search.
fn codex_namespaces(body: &Value) -> Vec<Value> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            body["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|item| item["type"] == "tool_search_output")
                .flat_map(|item| item["tools"].as_array().into_iter().flatten()),
        )
        .filter(|tool| tool["type"] == "namespace" && tool["name"] == "mcp__agent_tools")
        .cloned()
        .collect()
}

/// The property names of a declared tool's input schema, wherever the client put it.
fn declared_properties(declaration: &Value) -> Vec<String> {
    ["input_schema", "parameters", "parametersJsonSchema"]
        .iter()
        .find_map(|key| declaration[key]["properties"].as_object())
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// The model requests of the main conversation (not a side request, a router call or the
/// vibe worker's), in order.
fn main_requests(agent: Agent, run: &Run) -> Vec<Value> {
    run.requests
        .iter()
        .filter(|request| request["method"] == "POST")
        .filter(|request| {
            let path = request["path"].as_str().unwrap_or_default();
            let body = &request["body"];
            match agent {
                Agent::ClaudeCode => {
                    path.starts_with("/v1/messages")
                        && !path.contains("count_tokens")
                        && body["tools"].to_string().contains("\"ToolSearch\"")
                        // The vibe worker (`claude -p` too) has no agent-tools tool.
                        && body.to_string().contains("mcp__agent-tools__")
                }
                Agent::Codex => path.ends_with("/responses"),
                Agent::GeminiCli => {
                    path.contains("streamGenerateContent") && body["tools"].is_array()
                }
            }
        })
        .map(|request| request["body"].clone())
        .collect()
}

/// Each tool result the model received, in order, as the client put it into the conversation
/// (Claude Code: the `tool_result` block; Codex: the `function_call_output` item; Gemini CLI:
/// the turn holding the `functionResponse`, with any image part beside it).
fn tool_results(agent: Agent, last: &Value) -> Vec<Value> {
    match agent {
        Agent::ClaudeCode => last["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_result")
            .collect(),
        Agent::Codex => last["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == "function_call_output")
            .cloned()
            .collect(),
        Agent::GeminiCli => last["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|content| {
                content["parts"].as_array().is_some_and(|parts| {
                    parts
                        .iter()
                        .any(|part| part.get("functionResponse").is_some())
                })
            })
            .cloned()
            .collect(),
    }
}

/// Whether a PNG reached the model in this result: as an image block, inline data, or (item 2)
/// a file path it could open.
fn image_reached(agent: Agent, result: &Value) -> bool {
    let text = result.to_string();
    match agent {
        Agent::ClaudeCode => text.contains("\"type\":\"image\"") && text.contains("image/png"),
        Agent::GeminiCli => text.contains("inlineData") && text.contains("image/png"),
        // Codex drops image content: only a path in the structure reaches its model.
        Agent::Codex => text.contains(".png"),
    }
}

/// What of a result the model reads, without the client's envelope (ids, types).
fn payload(agent: Agent, result: &Value) -> Value {
    match agent {
        Agent::ClaudeCode => result["content"].clone(),
        Agent::Codex => result["output"].clone(),
        Agent::GeminiCli => Value::Array(
            result["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|part| match part.get("functionResponse") {
                    Some(response) => response["response"].clone(),
                    None => part.clone(),
                })
                .collect(),
        ),
    }
}

/// A result shortened for the matrix: one line, at most `width` characters, base64 data cut.
fn abbreviate(value: &Value, width: usize) -> String {
    let text = value.to_string().replace("\\n", " ");
    let text = match text.find("iVBOR") {
        Some(start) => {
            let end = text[start..]
                .find('"')
                .map_or(text.len(), |end| start + end);
            format!("{}<PNG base64>{}", &text[..start], &text[end..])
        }
        None => text,
    };
    let mut short: String = text.chars().take(width).collect();
    if text.chars().count() > width {
        short.push('…');
    }
    short
}

async fn agent_cli_matrix(agent: Agent) {
    if !agent.installed()
        || (agent != Agent::ClaudeCode && !Agent::ClaudeCode.installed())
        || !require(
            "basedpyright",
            available(LanguageServer::Basedpyright),
            LanguageServer::Basedpyright.install(),
        )
        || !python_imports("pandas, matplotlib, debugpy")
    {
        return;
    }
    let project = python_project(FILES);
    let root = project.path();
    let dir = tempfile::tempdir().unwrap();
    let (expected_tools, served_tokens) = served_tools(root, agent).await;
    let run = run_agent(agent, dir.path(), root, &cases(agent), "allow").await;
    // For a look at the recorded requests by hand: the folder is kept and named.
    if std::env::var_os("AGENT_CLIS_KEEP").is_some() {
        eprintln!("{} recorded in {}", agent.name(), dir.keep().display());
    }
    let context = || {
        format!(
            "{} stdout (tail):\n{}\nstderr (tail):\n{}",
            agent.name(),
            tail(&run.stdout, 3000),
            tail(&run.stderr, 3000)
        )
    };
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut fail = |case: &str, why: String| failures.push((case.to_owned(), why));

    // The handshake: which revision the client asked for and which it got.
    let asked = run
        .handshake
        .iter()
        .find(|entry| entry["direction"] == "client")
        .map(|entry| entry["message"].clone())
        .unwrap_or(Value::Null);
    let answered = run
        .handshake
        .iter()
        .find(|entry| entry["direction"] == "server")
        .map(|entry| entry["message"].clone())
        .unwrap_or(Value::Null);
    // `initialize` agrees on one in its answer; a 2026-07-28 client names its own in every
    // request's `_meta`, and `server/discover` answers with the ones the server supports.
    let revision = answered["result"]["protocolVersion"]
        .as_str()
        .or_else(|| asked["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str())
        .unwrap_or("none")
        .to_owned();
    let revision = format!(
        "{revision} ({})",
        asked["method"].as_str().unwrap_or("no handshake")
    );

    let main = main_requests(agent, &run);
    assert!(
        !main.is_empty(),
        "no model request was recorded\n{}",
        context()
    );

    // The tool list reached the model: every tool, each schema's properties intact.
    let declaring = main
        .iter()
        .max_by_key(|body| declared_tools(agent, body).len())
        .cloned()
        .unwrap_or(Value::Null);
    let declared = declared_tools(agent, &declaring);
    for (name, properties) in &expected_tools {
        match declared.iter().find(|(declared, _)| declared == name) {
            None => fail("tool list", format!("{name} never reached the model")),
            Some((_, declaration)) => {
                let sent = declared_properties(declaration);
                let lost: Vec<&String> = properties.iter().filter(|p| !sent.contains(p)).collect();
                if !lost.is_empty() {
                    fail(
                        "tool list",
                        format!("{name}'s schema reached the model without {lost:?}"),
                    );
                }
            }
        }
    }
    // Claude Code defers MCP tools: the first request names them, ToolSearch's `select:`
    // brings their schemas.
    if agent == Agent::ClaudeCode {
        let first = main[0].to_string();
        for (name, _) in &expected_tools {
            if !first.contains(&format!("mcp__agent-tools__{name}")) {
                fail(
                    "tool list",
                    format!("{name} is not among the deferred tools of the first request"),
                );
            }
        }
    }
    // A client without elicitation is not offered ask_user: no person could answer it.
    if !takes_elicitation(agent) && declared.iter().any(|(name, _)| name == "ask_user") {
        fail(
            "tool list",
            "ask_user reached a client without elicitation".to_owned(),
        );
    }
    let tokenizer = tiktoken_rs::o200k_base().unwrap();
    let tool_list = match agent {
        // The namespace's description (the server's instructions) is part of what Codex sends.
        Agent::Codex => Value::Array(codex_namespaces(&declaring)),
        _ => Value::Array(declared.iter().map(|(_, tool)| tool.clone()).collect()),
    };
    let tokens = tokenizer.encode_ordinary(&tool_list.to_string()).len();

    // Each scripted call's result, as the model received it.
    let last = main
        .iter()
        .max_by_key(|body| tool_results(agent, body).len())
        .cloned()
        .unwrap_or(Value::Null);
    let mut results = tool_results(agent, &last);
    if agent == Agent::ClaudeCode && !results.is_empty() {
        // The first result is ToolSearch's.
        results.remove(0);
    }
    let mut matrix = Vec::new();
    for (index, case) in cases(agent).iter().enumerate() {
        let Some(result) = results.get(index) else {
            fail(case.name, "the model never received its result".to_owned());
            matrix.push(format!("| {} | (none) |", case.name));
            continue;
        };
        let received = result.to_string().to_lowercase();
        let missing: Vec<&&str> = case
            .holds
            .iter()
            .filter(|fact| !received.contains(&fact.to_lowercase()))
            .collect();
        if !missing.is_empty() {
            fail(
                case.name,
                format!("the result lacks {missing:?}: {}", abbreviate(result, 600)),
            );
        }
        if case.name == "eval figure" && !image_reached(agent, result) {
            fail(
                case.name,
                format!("no image reached the model: {}", abbreviate(result, 600)),
            );
        }
        matrix.push(format!(
            "| {} | {} |",
            case.name,
            abbreviate(&payload(agent, result), 200).replace('|', "\\|")
        ));
    }
    if !takes_elicitation(agent) {
        matrix.push(
            "| ask_user declined | not offered: the client takes no elicitation |".to_owned(),
        );
    }
    // The run ended with the script's answer.
    let final_seen = run.stdout.contains(FINAL_ANSWER);
    if !final_seen {
        fail(
            "final answer",
            "the client did not print the final answer".to_owned(),
        );
    }
    if !run.left.is_empty() {
        fail("process table", format!("left behind: {:?}", run.left));
    }

    let (_, _, version) = agent.package();
    eprintln!(
        "\n== {} {version}: protocol {revision}, {} tools declared to the model, tool list \
         {tokens} tokens as sent to the model ({served_tokens} as serve lists them; o200k)\n\
         | call | what the model received |\n|---|---|\n{}",
        agent.name(),
        declared.len(),
        matrix.join("\n")
    );
    let expected: Vec<&str> = EXPECTED_FAILURES
        .iter()
        .filter(|(client, _, _)| *client == agent)
        .map(|(_, case, _)| *case)
        .collect();
    let unexpected: Vec<&(String, String)> = failures
        .iter()
        .filter(|(case, _)| !expected.contains(&case.as_str()))
        .collect();
    let now_passing: Vec<&&str> = expected
        .iter()
        .filter(|case| !failures.iter().any(|(failed, _)| failed == *case))
        .collect();
    for (case, why) in &failures {
        eprintln!("   {} {case}: {why}", agent.name());
    }
    assert!(
        unexpected.is_empty(),
        "{} failed: {unexpected:#?}\n{}",
        agent.name(),
        context()
    );
    assert!(
        now_passing.is_empty(),
        "{}: {now_passing:?} pass now: remove them from EXPECTED_FAILURES",
        agent.name()
    );
}

/// The file the scripted `write` asks for under `--approval ask`; it must never appear.
const REFUSED_FILE: &str = "notes.py";

/// Item 4 through the real client: under the default `--approval ask` the scripted model
/// calls `write` once. Claude Code (`-p`) and Codex (`exec`) declare elicitation but answer
/// the permission card themselves, at once, without showing it to anyone: the model must be
/// told that the client answered it, not a person, and that an unattended client needs
/// `--approval allow`. Gemini CLI declares no elicitation: its model is told that no approver
/// is connected. Either way the file is not written and nothing is left running.
async fn headless_write_under_ask(agent: Agent) {
    if !agent.installed() {
        return;
    }
    let project = python_project(FILES);
    let root = project.path();
    let dir = tempfile::tempdir().unwrap();
    let calls = [Case {
        name: "write under ask",
        tool: "write",
        args: json!({"path": REFUSED_FILE, "content": "print('written')\n"}),
        holds: &[],
    }];
    let run = run_agent(agent, dir.path(), root, &calls, "ask").await;
    if std::env::var_os("AGENT_CLIS_KEEP").is_some() {
        eprintln!("{} recorded in {}", agent.name(), dir.keep().display());
    }
    let context = || {
        format!(
            "{} stdout (tail):\n{}\nstderr (tail):\n{}",
            agent.name(),
            tail(&run.stdout, 3000),
            tail(&run.stderr, 3000)
        )
    };
    let main = main_requests(agent, &run);
    let last = main
        .iter()
        .max_by_key(|body| tool_results(agent, body).len())
        .cloned()
        .unwrap_or(Value::Null);
    let mut results = tool_results(agent, &last);
    if agent == Agent::ClaudeCode && !results.is_empty() {
        // The first result is ToolSearch's.
        results.remove(0);
    }
    let result = results
        .first()
        .unwrap_or_else(|| panic!("the model never received the write's result\n{}", context()));
    let received = payload(agent, result);
    eprintln!(
        "\n== {} under --approval ask\n| call | what the model received |\n|---|---|\n| {} | {} |",
        agent.name(),
        calls[0].name,
        abbreviate(&received, 400).replace('|', "\\|")
    );
    let said = received.to_string().to_lowercase();
    // What each client does with the card: `claude -p` cancels it about 0.1 s after it is
    // sent, `codex exec` declines it at once; Gemini CLI is never sent one.
    let holds: &[&str] = match agent {
        Agent::ClaudeCode => &[
            "the client cancelled permission card 1",
            "without showing it to a person",
            "--approval allow",
        ],
        Agent::Codex => &[
            "the client declined permission card 1",
            "without showing it to a person",
            "--approval allow",
        ],
        Agent::GeminiCli => &["no approver is connected", "--approval allow"],
    };
    let missing: Vec<&&str> = holds.iter().filter(|fact| !said.contains(*fact)).collect();
    assert!(
        missing.is_empty(),
        "{}: the write's result lacks {missing:?}: {}",
        agent.name(),
        abbreviate(&received, 1000)
    );
    // Nobody saw a card: the model must not be told that a person refused.
    assert!(
        !said.contains("the person"),
        "{}: the write's result blames a person: {}",
        agent.name(),
        abbreviate(&received, 1000)
    );
    assert!(
        !root.join(REFUSED_FILE).exists(),
        "{}: the refused write created {REFUSED_FILE}",
        agent.name()
    );
    assert!(
        run.stdout.contains(FINAL_ANSWER),
        "{}: the client did not print the final answer\n{}",
        agent.name(),
        context()
    );
    assert!(
        run.left.is_empty(),
        "{}: left behind: {:?}",
        agent.name(),
        run.left
    );
}

fn tail(text: &str, bytes: usize) -> &str {
    let start = text.len().saturating_sub(bytes);
    let start = (start..text.len())
        .find(|index| text.is_char_boundary(*index))
        .unwrap_or(text.len());
    &text[start..]
}

#[tokio::test]
async fn claude_code_receives_every_tool_and_every_answer() {
    agent_cli_matrix(Agent::ClaudeCode).await;
}

#[tokio::test]
async fn codex_receives_every_tool_and_every_answer() {
    agent_cli_matrix(Agent::Codex).await;
}

#[tokio::test]
async fn gemini_cli_receives_every_tool_and_every_answer() {
    agent_cli_matrix(Agent::GeminiCli).await;
}

#[tokio::test]
async fn claude_code_is_told_its_client_cancelled_the_card_under_ask() {
    headless_write_under_ask(Agent::ClaudeCode).await;
}

#[tokio::test]
async fn codex_is_told_its_client_declined_the_card_under_ask() {
    headless_write_under_ask(Agent::Codex).await;
}

#[tokio::test]
async fn gemini_cli_is_told_no_approver_is_connected_under_ask() {
    headless_write_under_ask(Agent::GeminiCli).await;
}

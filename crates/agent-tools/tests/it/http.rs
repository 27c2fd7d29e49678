//! `agent-tools serve --http` (PROD-2) from the outside, with a bare HTTP client: what it
//! refuses and how (401, 403, 413, JSON-RPC errors), that nothing it refuses stops it serving
//! others, that no token is taken off loopback without one, that a client which stops reading
//! stalls nobody else, that closing a 2026-07-28 request's stream cancels the call and ends
//! its processes, and that SIGTERM ends the run as on stdio. The SDK clients (Python,
//! TypeScript, the Inspector) drive it in `clients.rs` and the Python package's tests.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tools_test_support::http::{HttpServe, Reply, TOKEN, request};
use tools_test_support::mcp::{agent_tools_binary, until_processes, workspace};

/// Request headers, as sent.
type Headers = Vec<(String, String)>;

/// Environment variables a start is given.
type Env<'a> = Vec<(&'a str, &'a str)>;

fn initialize(id: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
    .into_bytes()
}

/// A 2026-07-28 request: self-contained, its capabilities in `_meta`.
fn modern(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

fn headers(
    serve: &HttpServe,
    drop: &[&str],
    add: &[(&'static str, &'static str)],
) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = serve
        .mcp_headers()
        .into_iter()
        .filter(|(name, _)| !drop.iter().any(|d| d.eq_ignore_ascii_case(name)))
        .collect();
    headers.extend(add.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
    headers
}

/// The headers of a 2026-07-28 request (the revision names its method, and a call's tool,
/// in headers a proxy can route on).
fn modern_headers(serve: &HttpServe, body: &[u8]) -> Vec<(String, String)> {
    let message: Value = serde_json::from_slice(body).unwrap();
    let mut headers = serve.mcp_headers();
    headers.push(("MCP-Protocol-Version".into(), "2026-07-28".into()));
    headers.push((
        "Mcp-Method".into(),
        message["method"].as_str().unwrap().to_owned(),
    ));
    if let Some(name) = message["params"]["name"].as_str() {
        headers.push(("Mcp-Name".into(), name.to_owned()));
    }
    headers
}

/// Posts a 2026-07-28 request.
async fn post_modern(serve: &HttpServe, body: &[u8]) -> Reply {
    post(serve, &modern_headers(serve, body), body).await
}

async fn post(serve: &HttpServe, headers: &[(String, String)], body: &[u8]) -> Reply {
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    request(&serve.addr, "POST", "/mcp", &pairs, body).await
}

/// Opens a connection and sends `METHOD /mcp` with `headers` and `body`, leaving the answer
/// unread: for a client that reads it piece by piece, late, or never.
async fn send_only(
    serve: &HttpServe,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> TcpStream {
    let mut stream = TcpStream::connect(&serve.addr).await.unwrap();
    let mut head = format!("{method} /mcp HTTP/1.1\r\n");
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream
}

/// The headers of a request in `session`.
fn in_session(serve: &HttpServe, session: &str) -> Vec<(String, String)> {
    let mut with = serve.mcp_headers();
    with.push(("Mcp-Session-Id".into(), session.to_owned()));
    with.push(("MCP-Protocol-Version".into(), "2025-11-25".into()));
    with
}

/// One line per case for the snapshot: status, the header that matters, the body.
fn shown(case: &str, reply: &Reply, header: &str) -> String {
    let header = reply
        .header(header)
        .map(|value| format!("\n  {header}: {value}"))
        .unwrap_or_default();
    format!(
        "{case}\n  {}{header}\n  {}\n",
        reply.status,
        reply.body.trim()
    )
}

#[tokio::test]
async fn prod_2_http_refuses_with_the_right_status_and_goes_on_serving() {
    let root = workspace();
    let serve = HttpServe::start(root.path(), &["--max-body-bytes", "4096"]).await;
    let mut transcript = String::new();

    let health = request(
        &serve.addr,
        "GET",
        "/healthz",
        &[("Host", "probe.internal")],
        b"",
    )
    .await;
    assert_eq!(health.status, 200, "{health:?}");
    let version: Value = serde_json::from_str(&health.body).unwrap();
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));

    let cases: Vec<(&str, Headers, Vec<u8>, &str)> = vec![
        (
            "no token",
            headers(&serve, &["Authorization"], &[]),
            initialize(1),
            "www-authenticate",
        ),
        (
            "a wrong token",
            headers(
                &serve,
                &["Authorization"],
                &[("Authorization", "Bearer not-the-right-token-at-all")],
            ),
            initialize(1),
            "www-authenticate",
        ),
        (
            "a foreign Host (DNS rebinding)",
            headers(&serve, &["Host"], &[("Host", "attacker.example:80")]),
            initialize(1),
            "content-type",
        ),
        (
            "a foreign Origin (a page in a browser)",
            headers(&serve, &[], &[("Origin", "http://attacker.example")]),
            initialize(1),
            "content-type",
        ),
        (
            "a body past --max-body-bytes",
            serve.mcp_headers(),
            vec![b' '; 5000],
            "content-type",
        ),
        (
            "malformed JSON",
            serve.mcp_headers(),
            b"{not json".to_vec(),
            "content-type",
        ),
        (
            "a batch",
            serve.mcp_headers(),
            format!("[{}]", String::from_utf8(initialize(1)).unwrap()).into_bytes(),
            "content-type",
        ),
        (
            "bytes that are not UTF-8",
            serve.mcp_headers(),
            b"{\"id\": \"\xff\"}".to_vec(),
            "content-type",
        ),
    ];
    for (case, headers, body, header) in cases {
        let reply = post(&serve, &headers, &body).await;
        transcript.push_str(&shown(case, &reply, header));
    }
    let listed = post_modern(
        &serve,
        &modern(
            9,
            "tools/call",
            json!({"name": "read", "arguments": [1, 2]}),
        ),
    )
    .await;
    transcript.push_str(&shown(
        "arguments that are not an object",
        &listed,
        "content-type",
    ));
    let elsewhere = request(&serve.addr, "GET", "/", &[], b"").await;
    transcript.push_str(&shown(
        "a path that is not /mcp",
        &elsewhere,
        "content-type",
    ));

    // After all of that, a client is served.
    let opened = post(&serve, &serve.mcp_headers(), &initialize(7)).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    assert!(
        opened.body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{opened:?}"
    );
    assert!(opened.header("mcp-session-id").is_some(), "{opened:?}");
    let listed = post_modern(&serve, &modern(8, "tools/list", json!({}))).await;
    assert!(listed.body.contains("\"name\":\"read\""), "{listed:?}");

    insta::assert_snapshot!(transcript);
    // Neither the token nor a refused request's secret reaches the log.
    assert!(!serve.stderr().contains(TOKEN), "{}", serve.stderr());
    assert!(
        !serve.stderr().contains("not-the-right-token"),
        "{}",
        serve.stderr()
    );
}

/// Runs `agent-tools ARGS…` with `env` and no token in the environment; exit code and stderr.
async fn refused_start(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let output = tokio::process::Command::new(agent_tools_binary())
        .args(args)
        .env_remove("AGENT_TOOLS_TOKEN")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .expect("a refused start took over 30 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| !line.contains(" INFO ") && !line.contains(" WARN "))
        .collect::<Vec<_>>()
        .join("\n");
    (output.status.code(), stderr)
}

#[tokio::test]
async fn prod_2_off_loopback_needs_a_token_and_a_token_is_never_an_argument() {
    let root = workspace();
    let root = root.path().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "hunter2\n").unwrap();
    let good = dir.path().join("good");
    std::fs::write(&good, format!("{TOKEN}\n")).unwrap();
    let short = short.to_str().unwrap();
    let good = good.to_str().unwrap();
    let mut transcript = String::new();
    let cases: Vec<(&str, Vec<&str>, Env)> = vec![
        (
            "every address, no token",
            vec!["serve", "--http", "0.0.0.0:0", "--root", root],
            vec![],
        ),
        (
            "any host on loopback, no token",
            vec![
                "serve",
                "--http",
                "127.0.0.1:0",
                "--root",
                root,
                "--allow-host",
                "*",
            ],
            vec![],
        ),
        (
            "a token too short to guard",
            vec![
                "serve",
                "--http",
                "0.0.0.0:0",
                "--root",
                root,
                "--token-file",
                short,
            ],
            vec![],
        ),
        (
            "the token twice",
            vec![
                "serve",
                "--http",
                "127.0.0.1:0",
                "--root",
                root,
                "--token-file",
                good,
            ],
            vec![("AGENT_TOOLS_TOKEN", TOKEN)],
        ),
        (
            "a token as an argument",
            vec![
                "serve",
                "--http",
                "0.0.0.0:0",
                "--root",
                root,
                "--token",
                TOKEN,
            ],
            vec![],
        ),
    ];
    for (case, args, env) in cases {
        let (code, stderr) = refused_start(&args, &env).await;
        assert_eq!(code, Some(2), "{case}: {stderr}");
        let stderr = stderr
            .replace(root, "[root]")
            .replace(dir.path().to_str().unwrap(), "[dir]");
        transcript.push_str(&format!("{case}\n{stderr}\n\n"));
    }
    insta::assert_snapshot!(transcript);
}

/// A legacy session opened on `serve`: its id.
async fn open_session(serve: &HttpServe) -> String {
    let opened = post(serve, &serve.mcp_headers(), &initialize(1)).await;
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let with = in_session(serve, &session);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let acked = post(serve, &with, initialized.to_string().as_bytes()).await;
    assert_eq!(acked.status, 202, "{acked:?}");
    session
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

#[tokio::test]
async fn prod_2_a_client_that_stops_reading_stalls_no_one_else() {
    let root = workspace();
    // A file whose `read` answer fills a socket nobody reads.
    let big: String = (0..40_000)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    std::fs::write(root.path().join("big.txt"), big).unwrap();
    let serve = HttpServe::start(root.path(), &["--approval", "allow"]).await;
    let mut idle = Vec::new();
    // Connections that send half a request and go quiet.
    for _ in 0..32 {
        let mut stream = TcpStream::connect(&serve.addr).await.unwrap();
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: ")
            .await
            .unwrap();
        idle.push(stream);
    }
    // Calls whose answers are never read, and a session's stream nobody reads.
    let session = open_session(&serve).await;
    let with = in_session(&serve, &session);
    for id in 0..4 {
        let body = call(100 + id, "read", json!({"path": "big.txt", "limit": 40000})).to_string();
        idle.push(send_only(&serve, "POST", &with, body.as_bytes()).await);
    }
    idle.push(send_only(&serve, "GET", &with, b"").await);

    // Another client is served whole: a cell and a write.
    let other = async {
        let cell = post_modern(
            &serve,
            &modern(
                1,
                "tools/call",
                json!({"name": "eval", "arguments": {
                "code": "6 * 7", "description": "multiply two numbers beside a stuck client"}}),
            ),
        )
        .await;
        let write = post_modern(
            &serve,
            &modern(
                2,
                "tools/call",
                json!({"name": "write", "arguments": {
                "path": "other.txt", "content": "served\n"}}),
            ),
        )
        .await;
        (cell, write)
    };
    let (cell, write) = tokio::time::timeout(Duration::from_secs(60), other)
        .await
        .expect("a stuck client stalled another one");
    assert!(cell.body.contains("42"), "{cell:?}");
    assert!(write.body.contains("Created other.txt"), "{write:?}");
    drop(idle);
}

#[tokio::test]
async fn prod_2_closing_a_requests_stream_cancels_the_call_and_ends_its_processes() {
    let root = workspace();
    let serve = HttpServe::start(root.path(), &["--approval", "allow"]).await;
    let sleeper = "import subprocess\nsubprocess.run(['sleep', '3007'])";
    let body = modern(
        1,
        "tools/call",
        json!({"name": "eval", "arguments": {"code": sleeper,
            "description": "start a long sleep in a child process"}}),
    );
    let stream = send_only(&serve, "POST", &modern_headers(&serve, &body), &body).await;
    let sleeping = |found: &[String]| found.iter().any(|p| p.contains("sleep 3007"));
    let found = until_processes(&serve.mark, sleeping).await;
    assert!(
        sleeping(&found),
        "the cell's child never started: {found:?}"
    );
    // The client goes away.
    drop(stream);
    let left = until_processes(&serve.mark, |found| !sleeping(found)).await;
    assert!(
        !sleeping(&left),
        "the call's process outlived its closed stream: {left:?}"
    );
    // The kernel itself lives on for the next call.
    let next = post_modern(
        &serve,
        &modern(
            2,
            "tools/call",
            json!({"name": "eval", "arguments": {
            "code": "1 + 1", "description": "add two numbers after the cancel"}}),
        ),
    )
    .await;
    assert!(next.body.contains("\"text\":\"2"), "{next:?}");
}

#[tokio::test]
async fn prod_2_sigterm_answers_calls_in_flight_and_ends_every_process() {
    let root = workspace();
    let mut serve = HttpServe::start(root.path(), &["--approval", "allow"]).await;
    let session = open_session(&serve).await;
    let with = in_session(&serve, &session);
    let long = call(
        2,
        "eval",
        json!({"code": "import time\ntime.sleep(300)", "description": "sleep until the server ends"}),
    );
    let in_flight = {
        let addr = serve.addr.clone();
        let with = with.clone();
        tokio::spawn(async move {
            let pairs: Vec<(&str, &str)> =
                with.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            request(&addr, "POST", "/mcp", &pairs, long.to_string().as_bytes()).await
        })
    };
    let found = until_processes(&serve.mark, |found| {
        found.iter().any(|p| p.contains("python"))
    })
    .await;
    assert!(found.iter().any(|p| p.contains("python")), "{found:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = serve.terminate(Duration::from_secs(30)).await;
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", serve.stderr());
    let answer = in_flight.await.unwrap();
    assert!(
        answer.body.contains("\"id\":2"),
        "the call in flight got no answer: {answer:?}"
    );
    assert!(answer.body.contains("cancel"), "{answer:?}");
    let left = until_processes(&serve.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        serve.stderr().contains("listening on http://127.0.0.1:"),
        "{}",
        serve.stderr()
    );
}

#[tokio::test]
async fn prod_2_a_sessions_card_rides_the_stream_of_the_call_that_raised_it() {
    use tokio::io::AsyncReadExt;
    let root = workspace();
    let serve = HttpServe::start(root.path(), &["--approval", "ask"]).await;
    let opened = post(
        &serve,
        &serve.mcp_headers(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string()
        .as_bytes(),
    )
    .await;
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let with = in_session(&serve, &session);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&serve, &with, initialized.to_string().as_bytes()).await;

    // The write's POST: its stream carries the approval card, then the result.
    let body = call(2, "write", json!({"path": "carded.txt", "content": "hi\n"})).to_string();
    let mut stream = send_only(&serve, "POST", &with, body.as_bytes()).await;
    let mut seen = String::new();
    let card_id = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buffer = [0u8; 4096];
        loop {
            let read = stream.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the call's stream ended without a card: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
            if let Some(at) = seen.find("\"method\":\"elicitation/create\"") {
                let start = seen[..at].rfind("data: ").unwrap() + 6;
                let end = start + seen[start..].find('\n').unwrap();
                let request: Value = serde_json::from_str(&seen[start..end]).unwrap();
                break request["id"].clone();
            }
        }
    })
    .await
    .expect("no card on the call's own stream");
    let answer = json!({"jsonrpc": "2.0", "id": card_id,
        "result": {"action": "accept", "content": {"decision": "allow"}}});
    let accepted = post(&serve, &with, answer.to_string().as_bytes()).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let result = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buffer = [0u8; 4096];
        while !seen.contains("\"id\":2,\"result\"") {
            let read = stream.read(&mut buffer).await.unwrap();
            assert!(
                read > 0,
                "the call's stream ended without its result: {seen}"
            );
            seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
        seen
    })
    .await
    .expect("no result after the card was answered");
    assert!(result.contains("Created carded.txt"), "{result}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("carded.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn prod_2_notifications_cancelled_ends_a_sessions_call_and_its_processes() {
    let root = workspace();
    let serve = HttpServe::start(root.path(), &["--approval", "allow"]).await;
    let session = open_session(&serve).await;
    let with = in_session(&serve, &session);
    let sleeper = call(
        5,
        "eval",
        json!({"code": "import subprocess\nsubprocess.run(['sleep', '3011'])",
            "description": "start a long sleep in a child process"}),
    );
    let in_flight = {
        let addr = serve.addr.clone();
        let with = with.clone();
        tokio::spawn(async move {
            let pairs: Vec<(&str, &str)> =
                with.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            request(
                &addr,
                "POST",
                "/mcp",
                &pairs,
                sleeper.to_string().as_bytes(),
            )
            .await
        })
    };
    let sleeping = |found: &[String]| found.iter().any(|p| p.contains("sleep 3011"));
    assert!(
        sleeping(&until_processes(&serve.mark, sleeping).await),
        "the cell's child never started"
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "the user pressed stop"}});
    let accepted = post(&serve, &with, cancel.to_string().as_bytes()).await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let left = until_processes(&serve.mark, |found| !sleeping(found)).await;
    assert!(
        !sleeping(&left),
        "the cancelled call's process lives on: {left:?}"
    );
    // The call's stream is not left hanging: it ends (a cancelled request gets no answer).
    let ended = tokio::time::timeout(Duration::from_secs(30), in_flight)
        .await
        .expect("the cancelled call's stream never ended")
        .unwrap();
    assert_eq!(ended.status, 200, "{ended:?}");
}

#[tokio::test]
async fn prod_2_a_server_on_every_address_names_a_url_it_answers_to() {
    let root = workspace();
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let mut child = tokio::process::Command::new(agent_tools_binary())
        .args(["serve", "--http", "0.0.0.0:0", "--root"])
        .arg(root.path())
        .arg("--ready-file")
        .arg(&ready)
        .env("AGENT_TOOLS_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(url) = std::fs::read_to_string(&ready) {
                break url.trim().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("not ready in 30 s");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let authorization = format!("Bearer {TOKEN}");
    let opened = request(
        addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &authorization),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &initialize(1),
    )
    .await;
    assert_eq!(
        opened.status, 200,
        "the URL it wrote is refused: {opened:?}"
    );
    child.kill().await.unwrap();
}

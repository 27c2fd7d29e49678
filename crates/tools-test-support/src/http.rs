//! `agent-tools serve --http` as the tests start it, and a bare HTTP/1.1 client for what an
//! SDK would never send: a missing token, a foreign `Host`, a body past the limit, a client
//! that connects and stops reading.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::mcp::{MARK, agent_tools_binary, unique_mark};

/// A token long enough to be taken.
pub const TOKEN: &str = "test-token-0123456789abcdefghij";

/// A running `serve --http`, ended (SIGTERM) when dropped.
pub struct HttpServe {
    pub child: tokio::process::Child,
    /// The endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The value of [`MARK`] in the environment of the server and everything it starts.
    pub mark: String,
    /// Where its standard error goes.
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpServe {
    /// Starts `agent-tools serve --http 127.0.0.1:0 --root ROOT ARGS…` with [`TOKEN`] in
    /// `AGENT_TOOLS_TOKEN`, and waits for its ready file.
    pub async fn start(root: &Path, args: &[&str]) -> HttpServe {
        Self::start_with(root, args, &[("AGENT_TOOLS_TOKEN", TOKEN)]).await
    }

    /// [`HttpServe::start`] with the environment `env` instead of the token.
    pub async fn start_with(root: &Path, args: &[&str], env: &[(&str, &str)]) -> HttpServe {
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let log = dir.path().join("stderr");
        let mark = unique_mark();
        let mut command = tokio::process::Command::new(agent_tools_binary());
        command
            .args(["serve", "--http", "127.0.0.1:0", "--root"])
            .arg(root)
            .arg("--ready-file")
            .arg(&ready)
            .args(args)
            .env(
                "AGENT_TOOLS_LOG",
                std::env::var("AGENT_TOOLS_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env(MARK, &mark)
            .env_remove("AGENT_TOOLS_TOKEN")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let url = loop {
            if let Ok(url) = std::fs::read_to_string(&ready) {
                break url.trim().to_owned();
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "serve --http exited ({status}) before it was ready:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "serve --http not ready in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        HttpServe {
            child,
            url,
            addr,
            mark,
            log,
            _dir: dir,
        }
    }

    /// What it wrote to standard error so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits (up to `bound`) for it to exit; its exit status.
    pub async fn terminate(&mut self, bound: Duration) -> Option<std::process::ExitStatus> {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        tokio::time::timeout(bound, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// A request to this server over a connection of its own, read to its end.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        request(&self.addr, method, path, headers, body).await
    }

    /// The headers an MCP POST carries: the token, the two content types, a loopback `Host`.
    pub fn mcp_headers(&self) -> Vec<(String, String)> {
        vec![
            ("Host".into(), self.addr.clone()),
            ("Authorization".into(), format!("Bearer {TOKEN}")),
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ]
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
}

/// An HTTP answer: status, headers (names lowercase) and body (de-chunked).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 request with `Connection: close`, its answer read to the end of the
/// connection (at most 60 s).
pub async fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw))
        .await
        .expect("no answer in 60 s")
        .unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = match chunked {
        true => dechunk(rest),
        false => rest.to_owned(),
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

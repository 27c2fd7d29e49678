//! `cargo xtask container [--profile release|dev] [--base IMAGE]`: a run in a real container,
//! driven from the host over HTTP, then ended (issue 38).
//!
//! The image comes from `cargo xtask image` (cached by its inputs). A copy of a real project
//! (the `more-itertools` sdist the truth suite edits) is mounted at `/workspace`, the token
//! comes from a file mounted as the image's secret, and the port is published on the host's
//! loopback. From the host, `container/drive.py` (the official MCP Python SDK's
//! streamable-HTTP client) drives the run; with the client still connected, the container's
//! processes are listed (`docker top`: the servers ran inside it, and no zombie is left),
//! then the container is ended. Afterwards nothing may be left: no container, and none of the
//! processes `docker top` listed, on the host. Three containers:
//!
//! - *stopped*: the image's own command; basedpyright's diagnostics, an edit whose errors land
//!   in another file, a Python cell and the debugger stopped at a breakpoint in the library;
//!   then `docker stop`.
//! - *killed*: as the Kubernetes manifest runs it (read-only root with tmpfs for `/tmp` and
//!   the home, every capability dropped, no privilege escalation); diagnostics, a cell and a
//!   breakpoint; then `docker kill`.
//! - *sandbox*: as E2B-style platforms run it: the container idles, and
//!   `deploy/sandbox/start.sh` (in the image as `agent-tools-start`) starts the server through
//!   `docker exec` with the token in the environment; a cell; then `docker kill`.
//!
//! The Kubernetes manifests are checked first, offline: `kubectl` reads them (`apply
//! --dry-run=client` needs an API server to map kinds, and none answers here) and
//! `kubernetes-validate --strict` checks them against the API's schemas.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::image::{self, Options};
use crate::truth::projects::{self, Project, Step};

/// The port the image's command serves on inside the container.
const PORT: u16 = 8765;
/// Where the image's command reads its token.
const TOKEN_SECRET: &str = "/run/secrets/agent-tools-token";
/// How long the container may take to answer `/healthz`.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(60);

/// One row of the matrix.
struct Row {
    container: &'static str,
    check: String,
    server: String,
    ok: bool,
    detail: String,
    seconds: f64,
}

pub(crate) fn run(args: &[&str]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    let root = crate::project_root();
    let built = image::build(&root, &options)?;
    println!(
        "== image {} ({:.0} MB, {} in {:.1} s)",
        built.tag,
        built.size_bytes as f64 / 1e6,
        match built.reused {
            true => "found",
            false => "built",
        },
        built.seconds
    );
    let work = root.join("target/container");
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .with_context(|| format!("cannot empty {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;
    let (project, edit) = prepare(&root, &work)?;
    let token = write_token(&work)?;
    let run_id = format!("{}-{}", std::process::id(), built.tag.replace(':', "-"));
    let mut rows = vec![manifests(&root)];
    let mut outcomes = Vec::new();
    for scenario in SCENARIOS {
        outcomes.push(run_scenario(
            &root, &built.tag, &project, &token, &edit, &run_id, scenario, &mut rows,
        ));
    }
    // Whatever happened above, no container of this run may be left.
    let left = docker_output(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label=org.agent-tools.container-test={run_id}"),
    ])
    .unwrap_or_default();
    rows.push(Row {
        container: "all",
        check: "docker ps -a: no container left".into(),
        server: String::new(),
        ok: left.trim().is_empty(),
        detail: match left.trim().is_empty() {
            true => "none".into(),
            false => format!("left: {}", left.trim()),
        },
        seconds: 0.0,
    });
    print_matrix(&rows);
    // The token guarded containers that are gone; it is not kept.
    let _ = std::fs::remove_dir_all(work.join("secrets"));
    for outcome in outcomes {
        outcome?;
    }
    let failed = rows.iter().filter(|row| !row.ok).count();
    if failed > 0 {
        bail!("{failed} of {} container checks failed", rows.len());
    }
    println!("\nthe run in the container passed every check");
    Ok(())
}

/// One container of the test.
struct Scenario {
    label: &'static str,
    /// How the server in it is started.
    start: Start,
    /// The driver's scenario (see `drive.py`).
    drive: &'static str,
    /// What `docker top` must show, by a piece of each command line.
    expected: &'static [&'static str],
    ending: Ending,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The image's own command.
    Command,
    /// The image's own command under the Kubernetes manifest's restrictions.
    Restricted,
    /// An idle container; `agent-tools-start` through `docker exec`.
    Sandbox,
}

/// How a container is ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    Stop,
    Kill,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        label: "stopped",
        start: Start::Command,
        drive: "full",
        expected: &[
            "agent-tools serve",
            "basedpyright-langserver",
            "debugpy",
            "try_chunked.py",
        ],
        ending: Ending::Stop,
    },
    Scenario {
        label: "killed",
        start: Start::Restricted,
        drive: "brief",
        expected: &[
            "agent-tools serve",
            "basedpyright-langserver",
            "debugpy",
            "try_chunked.py",
        ],
        ending: Ending::Kill,
    },
    Scenario {
        label: "sandbox",
        start: Start::Sandbox,
        drive: "ping",
        expected: &["agent-tools serve", "kernel"],
        ending: Ending::Kill,
    },
];

/// The Kubernetes manifests, checked offline: kubectl reads each, and their schemas hold.
fn manifests(root: &Path) -> Row {
    let started = Instant::now();
    let dir = root.join("deploy/kubernetes");
    let mut problems = Vec::new();
    let read = Command::new("kubectl")
        .args(["label", "--local", "--dry-run=client", "-o", "name", "-f"])
        .arg(&dir)
        .arg("checked=offline")
        .output();
    let names = match read {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(", "),
        Ok(out) => {
            problems.push(format!(
                "kubectl: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            String::new()
        }
        Err(error) => {
            problems.push(format!("cannot run kubectl: {error}"));
            String::new()
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let validated = Command::new(root.join(".venv/bin/kubernetes-validate"))
        .args(["--strict", "--quiet"])
        .args(&files)
        .output();
    match validated {
        Ok(out) if out.status.success() => {}
        Ok(out) => problems.push(format!(
            "kubernetes-validate: {}{}",
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(error) => problems.push(format!("cannot run kubernetes-validate: {error}")),
    }
    Row {
        container: "—",
        check: "Kubernetes manifests: kubectl reads them, strict schemas hold".into(),
        server: String::new(),
        ok: problems.is_empty(),
        detail: match problems.is_empty() {
            true => names,
            false => problems.join("; "),
        },
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The more-itertools project, fresh, writable by the image's user, with a configuration that
/// lets writes run without a person (`approval = "allow"`) and waits for a cold server as long
/// as the truth suite does; and the edit whose errors land in another file.
fn prepare(root: &Path, work: &Path) -> anyhow::Result<(PathBuf, Step)> {
    let project: Project = projects::all(root)
        .into_iter()
        .find(|project| project.name == "more-itertools")
        .context("the truth suite has no more-itertools project")?;
    // A required parameter added to a stub's function: its callers in the module break.
    let edit = *project
        .steps
        .first()
        .context("the more-itertools project has no edits")?;
    let dir = project.prepare(
        root,
        &root.join("target/truth/sources"),
        &work.join("project"),
    )?;
    std::fs::write(
        dir.join("agent-tools.toml"),
        "approval = \"allow\"\n\n[lsp.on_write]\ntimeout_seconds = 180\n",
    )?;
    // The image runs as a user of its own, which must write here.
    crate::ci::step("chmod", &["-R", "a+rwX", &dir.display().to_string()], root)?;
    Ok((dir, edit))
}

/// A fresh random token in a file the container's user can read, in a folder only we can
/// enter.
fn write_token(work: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let secrets = work.join("secrets");
    std::fs::create_dir_all(&secrets)?;
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o700))?;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("cannot read /dev/urandom")?;
    let token: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    let path = secrets.join("token");
    std::fs::write(&path, format!("{token}\n"))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    Ok(path)
}

/// One container, from `docker run` to its end; its rows go to `rows`.
#[allow(clippy::too_many_arguments)]
fn run_scenario(
    root: &Path,
    tag: &str,
    project: &Path,
    token: &Path,
    edit: &Step,
    run_id: &str,
    scenario: &Scenario,
    rows: &mut Vec<Row>,
) -> anyhow::Result<()> {
    let label = scenario.label;
    let ending = scenario.ending;
    let mut row = |check: &str, server: &str, ok: bool, detail: String, seconds: f64| {
        rows.push(Row {
            container: label,
            check: check.to_owned(),
            server: server.to_owned(),
            ok,
            detail,
            seconds,
        });
    };
    let container = Container::run(root, tag, project, token, run_id, scenario)?;
    let url = format!("http://127.0.0.1:{}/mcp", container.host_port);
    row(
        "docker run to /healthz 200",
        "",
        true,
        container.health.clone(),
        container.ready_seconds,
    );
    println!("== {label}: {url}");
    let edit_json = json!({"file": edit.file, "old": edit.old, "new": edit.new}).to_string();
    let mut driver = Driver::spawn(root, &url, token, project, scenario.drive, &edit_json)?;
    let mut held = false;
    while let Some(line) = driver.next_line()? {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            println!("   driver: {line}");
            continue;
        };
        if value["hold"] == true {
            held = true;
            break;
        }
        row(
            value["check"].as_str().unwrap_or("?"),
            value["server"].as_str().unwrap_or(""),
            value["ok"] == true,
            value["detail"].as_str().unwrap_or("").to_owned(),
            value["seconds"].as_f64().unwrap_or(0.0),
        );
    }
    if !held {
        row(
            "the driver made every call",
            "",
            false,
            format!("it ended early; the container's log:\n{}", container.logs()),
            0.0,
        );
        return Ok(());
    }

    let processes = container.top()?;
    let missing: Vec<&str> = scenario
        .expected
        .iter()
        .copied()
        .filter(|name| !processes.iter().any(|process| process.args.contains(name)))
        .collect();
    let zombies: Vec<String> = processes
        .iter()
        .filter(|process| process.stat.contains('Z'))
        .map(|process| process.args.clone())
        .collect();
    println!("   {label}: docker top");
    for process in &processes {
        println!(
            "     {:>7} {:<5} {}",
            process.pid,
            process.stat,
            short(&process.args)
        );
    }
    row(
        "docker top: the servers run inside, no zombie",
        "",
        missing.is_empty() && zombies.is_empty(),
        match (missing.is_empty(), zombies.is_empty()) {
            (true, true) => format!(
                "{} processes, among them {}; no zombie",
                processes.len(),
                scenario.expected.join(", ")
            ),
            (false, _) => format!("missing {missing:?} (the listing is above the table)"),
            (true, false) => format!("zombies: {zombies:?}"),
        },
        0.0,
    );
    if scenario.start != Start::Sandbox {
        let health = container.wait_healthy(Duration::from_secs(20));
        row(
            "HEALTHCHECK (python3 on /healthz)",
            "",
            health == "healthy",
            health,
            0.0,
        );
    }

    let started = Instant::now();
    let ended = match ending {
        Ending::Stop => docker_output(&["stop", &container.name]),
        Ending::Kill => docker_output(&["kill", &container.name])
            .and_then(|_| docker_output(&["wait", &container.name])),
    };
    let seconds = started.elapsed().as_secs_f64();
    driver.release();
    let state = docker_output(&[
        "inspect",
        "--format",
        "{{.State.Status}} {{.State.ExitCode}}",
        &container.name,
    ])
    .unwrap_or_default();
    let state = state.trim().to_owned();
    let expected = match ending {
        // SIGTERM ends the run cleanly, well before docker's 10 s would turn it into a KILL.
        Ending::Stop => "exited 0",
        Ending::Kill => "exited 137",
    };
    row(
        match ending {
            Ending::Stop => "docker stop (SIGTERM) under a connected client",
            Ending::Kill => "docker kill (SIGKILL) under a connected client",
        },
        "",
        ended.is_ok() && state == expected,
        format!("{state}{}", shutdown_line(&container.logs())),
        seconds,
    );
    let alive: Vec<String> = processes
        .iter()
        .filter(|process| process.still_alive())
        .map(|process| format!("{} {}", process.pid, short(&process.args)))
        .collect();
    row(
        "nothing left on the host",
        "",
        alive.is_empty(),
        match alive.is_empty() {
            true => format!("all {} processes gone", processes.len()),
            false => format!("alive: {alive:?}"),
        },
        0.0,
    );
    Ok(())
}

/// The run's own line about its end, from the container's log, when there is one.
fn shutdown_line(logs: &str) -> String {
    logs.lines()
        .rev()
        .find(|line| line.contains("ending the run") || line.contains("shut down"))
        .map(|line| format!("; log: {}", short(line)))
        .unwrap_or_default()
}

/// A command line cut to 80 characters, for the table.
fn short(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A running container of this test; removed (`docker rm -f`) when dropped.
struct Container {
    name: String,
    host_port: u16,
    ready_seconds: f64,
    health: String,
}

impl Container {
    /// `docker run` the image with the project and the token mounted and the port published on
    /// the host's loopback, starts the server as `scenario` says, then waits for `/healthz` to
    /// answer 200.
    fn run(
        root: &Path,
        tag: &str,
        project: &Path,
        token: &Path,
        run_id: &str,
        scenario: &Scenario,
    ) -> anyhow::Result<Container> {
        let name = format!("agent-tools-test-{}-{}", std::process::id(), scenario.label);
        let _ = docker_output(&["rm", "-f", &name]);
        let started = Instant::now();
        let workspace = format!("{}:/workspace", project.display());
        let secret = format!("{}:{TOKEN_SECRET}:ro", token.display());
        let published = format!("127.0.0.1::{PORT}");
        let label = format!("org.agent-tools.container-test={run_id}");
        let mut args = vec![
            "run",
            "--detach",
            "--name",
            &name,
            "--label",
            &label,
            "--volume",
            &workspace,
            "--publish",
            &published,
        ];
        match scenario.start {
            Start::Command => args.extend(["--volume", &secret, tag]),
            // deploy/kubernetes/deployment.yaml's securityContext and volumes.
            Start::Restricted => args.extend([
                "--volume",
                &secret,
                "--read-only",
                // Kubernetes' emptyDir allows executables (Go runs what it builds from there).
                "--tmpfs",
                "/tmp:exec",
                "--tmpfs",
                "/home/agent:exec,uid=1000,gid=1000,mode=0755",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                tag,
            ]),
            // A sandbox's own process holds the container; the server comes later.
            Start::Sandbox => args.extend(["--entrypoint", "sleep", tag, "infinity"]),
        }
        docker_output(&args)?;
        let mut container = Container {
            name,
            host_port: 0,
            ready_seconds: 0.0,
            health: String::new(),
        };
        let port = docker_output(&["port", &container.name, &format!("{PORT}/tcp")])?;
        container.host_port = port
            .lines()
            .next()
            .and_then(|line| line.rsplit(':').next())
            .and_then(|port| port.trim().parse().ok())
            .with_context(|| format!("docker port said {port:?}"))?;
        if scenario.start == Start::Sandbox {
            // The token goes in through the environment of `docker exec` (`--env NAME` takes
            // its value from ours), never on a command line.
            let secret = std::fs::read_to_string(token)?;
            let output = Command::new("docker")
                .args([
                    "exec",
                    "--env",
                    "AGENT_TOOLS_TOKEN",
                    &container.name,
                    "agent-tools-start",
                    "/workspace",
                ])
                .env("AGENT_TOOLS_TOKEN", secret.trim())
                .current_dir(root)
                .output()
                .context("cannot run docker exec")?;
            if !output.status.success() {
                bail!(
                    "agent-tools-start failed: {}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
        let deadline = started + HEALTH_TIMEOUT;
        loop {
            if let Some(body) = healthz(container.host_port) {
                container.ready_seconds = started.elapsed().as_secs_f64();
                container.health = format!("200 {}", body.trim());
                return Ok(container);
            }
            if Instant::now() > deadline {
                bail!(
                    "the container did not answer /healthz within {} s; its log:\n{}",
                    HEALTH_TIMEOUT.as_secs(),
                    container.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        Command::new("docker")
            .args(["logs", &self.name])
            .output()
            .map(|out| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .unwrap_or_default()
    }

    /// The container's processes as the host sees them.
    fn top(&self) -> anyhow::Result<Vec<Process>> {
        let table = docker_output(&["top", &self.name, "-eo", "pid,stat,args"])?;
        Ok(table
            .lines()
            .skip(1)
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let pid: u32 = fields.next()?.parse().ok()?;
                let stat = fields.next()?.to_owned();
                let args = fields.collect::<Vec<_>>().join(" ");
                Some(Process {
                    pid,
                    stat,
                    args,
                    started: start_time(pid),
                })
            })
            .collect())
    }

    /// The engine's health status once it is no longer `starting`, or after `bound`.
    fn wait_healthy(&self, bound: Duration) -> String {
        let deadline = Instant::now() + bound;
        loop {
            let status = docker_output(&[
                "inspect",
                "--format",
                "{{.State.Health.Status}}",
                &self.name,
            ])
            .unwrap_or_default()
            .trim()
            .to_owned();
            if status != "starting" || Instant::now() > deadline {
                return status;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A process `docker top` listed.
struct Process {
    /// Its pid on the host.
    pid: u32,
    stat: String,
    args: String,
    /// Its start time (clock ticks after boot), so a reused pid is not taken for it.
    started: Option<u64>,
}

impl Process {
    fn still_alive(&self) -> bool {
        self.started.is_some() && start_time(self.pid) == self.started
    }
}

/// Field 22 of `/proc/PID/stat`: when the process started.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: count from the last one.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// `GET /healthz` on the host's loopback: the body when the answer is 200.
fn healthz(port: u16) -> Option<String> {
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        std::net::TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    if !answer.starts_with("HTTP/1.1 200") {
        return None;
    }
    answer.split("\r\n\r\n").nth(1).map(str::to_owned)
}

/// The Python driver, its JSON lines read as they come.
struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl Driver {
    fn spawn(
        root: &Path,
        url: &str,
        token: &Path,
        project: &Path,
        scenario: &str,
        edit: &str,
    ) -> anyhow::Result<Driver> {
        let python = root.join(".venv/bin/python");
        let script = root.join("xtask/src/container/drive.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .arg(url)
            .arg(token)
            .arg(project)
            .arg(scenario)
            .arg(edit)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", python.display()))?;
        let stdout = child.stdout.take().context("the driver has no stdout")?;
        Ok(Driver {
            stdin: child.stdin.take(),
            child,
            lines: BufReader::new(stdout).lines(),
        })
    }

    fn next_line(&mut self) -> anyhow::Result<Option<String>> {
        self.lines
            .next()
            .transpose()
            .context("cannot read the driver's output")
    }

    /// Lets the held driver go, and waits for it.
    fn release(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let _ = self.child.wait();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `docker ARGS`: its standard output, or an error with its standard error.
fn docker_output(args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("docker")
        .args(args)
        .output()
        .context("cannot run docker")?;
    if !output.status.success() {
        bail!(
            "docker {} failed: {}",
            args.first().copied().unwrap_or_default(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn print_matrix(rows: &[Row]) {
    println!("\n| container | check | server | result | s |\n|---|---|---|---|---|");
    for row in rows {
        let detail = row.detail.replace('\n', " ").replace('|', "\\|");
        println!(
            "| {} | {} | {} | {} {} | {:.2} |",
            row.container,
            row.check,
            row.server,
            match row.ok {
                true => "ok:",
                false => "FAILED:",
            },
            detail,
            row.seconds
        );
    }
}

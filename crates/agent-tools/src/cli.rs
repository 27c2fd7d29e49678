//! The `agent-tools` command line: serve a run over MCP, make one call, or list the tools.
//!
//! It lives in the library so that every way of installing the command (the Rust binary, the
//! Python wheel's console script) runs the same code.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tools_core::{
    ApprovalPolicy, CallOptions, NoHuman, Progress, ProgressSink, QuestionPort, ShutdownSummary,
    Surface, ToolCall,
};

use crate::{McpRun, McpServer, RunOptions, Settings};
use agent_tools_mcp::{HttpOptions, HttpServer, Token};

/// Built-in tools for coding agents, bound to one workspace.
#[derive(Debug, Parser)]
#[command(name = "agent-tools", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one run as an MCP server: over stdio, or over HTTP with `--http`.
    Serve(ServeArgs),
    /// Run one tool call and print its result (exit status 1 when the tool fails).
    Call {
        /// The tool's name, e.g. `read`.
        tool: String,
        /// The arguments as a JSON object, e.g. '{"path": "README.md"}'.
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// List the tools `serve` lists with the same settings (with `ask_user`, which `serve`
    /// lists to clients that can show cards), with tiers, descriptions and schemas.
    Tools {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        run: RunArgs,
    },
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The workspace root; every path is confined to it.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// A config file instead of `agent-tools.toml` in the root.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Which tools are listed and callable: full, plan (read only) or readonly (read only).
    #[arg(long, default_value = "full")]
    surface: Surface,
    /// What happens to write and exec calls: ask (a person approves each; with no one to ask
    /// — an MCP client without elicitation, or `call` without a terminal — they are
    /// refused), allow (they run), deny.
    #[arg(long)]
    approval: Option<ApprovalPolicy>,
    /// Vibe mode: background workers (the `vibe_*` tools), configured under [vibe].
    #[arg(long)]
    vibe: bool,
    /// Where workers' transcripts and results go (default: the platform's state folder).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Serve MCP Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8765
    /// (port 0 picks one). Off loopback a bearer token is required (`--token-file` or
    /// AGENT_TOOLS_TOKEN).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// A file holding the bearer token HTTP clients must send, instead of AGENT_TOOLS_TOKEN.
    /// The token itself is never taken as an argument: argv is visible to every user.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// A host name clients reach the server by, beyond its bind address and loopback (a
    /// published port's name, a Kubernetes service); repeatable; `*` admits any.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// Once the server accepts connections, write its endpoint's URL to this file.
    #[arg(long, value_name = "FILE", requires = "http")]
    ready_file: Option<PathBuf>,
    /// Not taken: a command line is visible to every user of the machine. Declared only to
    /// say so, and where the token goes instead.
    #[arg(long, hide = true, value_name = "TOKEN")]
    token: Option<String>,
    /// The largest HTTP request body taken, in bytes (413 past it).
    #[arg(long, value_name = "BYTES", default_value_t = agent_tools_mcp::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
}

impl ServeArgs {
    /// The bearer token from `--token-file` or AGENT_TOOLS_TOKEN (not both), if any.
    fn token(&self) -> anyhow::Result<Option<Token>> {
        if self.token.is_some() {
            anyhow::bail!(
                "`--token` is not taken: a command line is visible to every user of the machine; \
                 put the token in a file and pass `--token-file FILE`, or set {}",
                tools_process::TOKEN_ENV
            );
        }
        let from_env = std::env::var(tools_process::TOKEN_ENV)
            .ok()
            .filter(|token| !token.trim().is_empty());
        let secret = match (&self.token_file, from_env) {
            (Some(_), Some(_)) => anyhow::bail!(
                "the token was given twice, in --token-file and in {}: keep one",
                tools_process::TOKEN_ENV
            ),
            (Some(file), None) => std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the token file {}", file.display()))?,
            (None, Some(secret)) => secret,
            (None, None) => return Ok(None),
        };
        let token = Token::new(&secret).with_context(|| match &self.token_file {
            Some(file) => format!("the token in {} cannot guard a server", file.display()),
            None => format!(
                "the token in {} cannot guard a server",
                tools_process::TOKEN_ENV
            ),
        })?;
        Ok(Some(token))
    }
}

impl RunArgs {
    fn settings(&self) -> anyhow::Result<Settings> {
        Settings::load(&RunOptions {
            root: self.root.clone(),
            config: self.config.clone(),
            surface: self.surface,
            approval: self.approval,
            vibe: self.vibe,
            state_dir: self.state_dir.clone(),
        })
    }
}

/// The most rmcp may log (see where the log is set up).
const RMCP_LOG_CEILING: &str = "rmcp=warn";

/// Runs the command line `args` (the first is the program's name, as in `std::env::args_os`)
/// and returns the process's exit status.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    ExitCode::from(status(args))
}

/// [`main`], with the exit status as a number (what an embedding such as the Python wheel's
/// console script hands to its own `exit`).
pub fn status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // `--help`, `--version` and usage errors print and end here, without exiting the process
    // from inside a library.
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    let default_level = match cli.command {
        Command::Serve(_) => "warn,agent_tools=info,agent_tools_mcp=info,tools_core=info",
        _ => "warn",
    };
    // Logs go to standard error only: standard output is the MCP stream or the result.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENT_TOOLS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level))
                // rmcp logs whole messages and HTTP requests below warn: tool arguments, card
                // answers and the `Authorization` header stay out of the log at any level.
                .add_directive(RMCP_LOG_CEILING.parse().unwrap_or_default()),
        )
        .try_init()
        .ok();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return 1;
        }
    };
    // Grandchildren whose parent died (rustc under `cargo check`, node workers) are
    // re-parented to us, not to init, so they are reaped and found at shutdown.
    if let Err(error) = tools_process::become_subreaper() {
        tracing::warn!(%error, "cannot become a child subreaper; orphans go to init");
    }
    if matches!(cli.command, Command::Serve(_)) {
        report_containment();
    }
    let outcome = runtime.block_on(async {
        tools_process::spawn_orphan_reaper();
        run(cli).await
    });
    // Tasks still blocked (a read of stdin) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            2
        }
    }
}

/// Says at start-up whether every child's descendants end with the run even when it is
/// SIGKILLed (PID namespaces), or why not: a fallback is never silent.
pub(crate) fn report_containment() {
    let containment = tools_process::containment();
    match containment.is_active() {
        true => tracing::info!("{}", containment.describe()),
        false => tracing::warn!("{}", containment.describe()),
    }
}

/// Prints `text` and a newline on standard output; a reader that has gone (`| head`) ends
/// the output quietly, as for any shell tool.
fn print_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to standard output"),
    }
}

/// Ends a served run: its calls and resources within `bound`, then every process group of
/// this process still alive (TERM, a short grace, KILL).
async fn end_run(run: &McpRun, bound: Duration) {
    if let Some(summary) = run.shutdown(bound).await {
        report_shutdown(&summary, bound);
    }
    let report = tools_process::shutdown_all(Duration::from_millis(500)).await;
    if report.killed > 0 {
        tracing::warn!(
            groups = report.killed,
            "killed process groups that outlived the run's shutdown"
        );
    }
}

fn report_shutdown(summary: &ShutdownSummary, bound: Duration) {
    if !summary.calls_ended || !summary.timed_out.is_empty() {
        tracing::warn!(
            calls_cancelled = summary.calls_cancelled,
            calls_ended = summary.calls_ended,
            timed_out = ?summary.timed_out,
            bound_seconds = bound.as_secs_f64(),
            "the run did not end cleanly within its bound; what is left is killed"
        );
    }
}

/// SIGINT, SIGTERM and SIGHUP: each ends the run.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        let listen = |kind| signal(kind).context("cannot listen for signals");
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
        })
    }

    /// The name of the next signal received.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.hangup.recv() => "SIGHUP",
        }
    }
}

/// `serve --http`: one run for every client, until a signal; then, as on stdio, the run's
/// calls are cancelled (and answered so), its servers shut down, and what is left is killed
/// within the bound.
async fn serve_http(args: ServeArgs) -> anyhow::Result<u8> {
    let Some(addr) = args.http else {
        anyhow::bail!("`serve_http` needs --http");
    };
    let token = args.token()?;
    let settings = args.run.settings()?;
    let bound = settings.shutdown_bound;
    let mut signals = Signals::new()?;
    let server = McpServer::shared(Arc::new(settings.clone()));
    let run = server.run();
    let options = HttpOptions {
        addr,
        token,
        allow_hosts: args.allow_hosts.clone(),
        max_body_bytes: args.max_body_bytes,
    };
    let http = HttpServer::start(server, options).await?;
    let url = http.url();
    tracing::info!(root = %settings.root.display(), surface = %settings.surface, approval = %settings.approval, %url, "serving over HTTP");
    // The line a supervisor waits for, on its own (not a log line, whose format may change).
    match addr.ip().is_unspecified() {
        true => eprintln!(
            "listening on {url} (and on every address: {})",
            http.local_addr()
        ),
        false => eprintln!("listening on {url}"),
    }
    if let Some(file) = &args.ready_file {
        write_ready_file(file, &url)?;
    }
    let signal = signals.next().await;
    tracing::info!(signal, "ending the run");
    end_run(&run, bound).await;
    http.stop(Duration::from_secs(1)).await;
    Ok(0)
}

/// Writes `url` to `file` whole or not at all (a reader polling for it never sees half).
fn write_ready_file(file: &std::path::Path, url: &str) -> anyhow::Result<()> {
    let mut partial = file.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, format!("{url}\n"))
        .and_then(|()| std::fs::rename(&partial, file))
        .with_context(|| format!("cannot write the ready file {}", file.display()))
}

/// A description's first sentence, whole: its first paragraph joined (doc comments wrap
/// mid-sentence), up to the first full stop that ends a sentence.
fn summary(description: &str) -> String {
    let paragraph: Vec<&str> = description
        .lines()
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    let paragraph = paragraph.join(" ");
    match paragraph.find(". ") {
        Some(end) => paragraph[..=end].to_owned(),
        None => paragraph,
    }
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Serve(args) if args.http.is_some() => serve_http(args).await,
        Command::Serve(args) => {
            let settings = args.run.settings()?;
            let bound = settings.shutdown_bound;
            tracing::info!(root = %settings.root.display(), surface = %settings.surface, approval = %settings.approval, "serving over stdio");
            let server = McpServer::new(Arc::new(settings));
            let run = server.run();
            let mut signals = Signals::new()?;
            // The connection ends on MCP close or stdin EOF (the service stops), or on a
            // signal; either way the run is ended, bounded, and what is left is killed.
            let outcome = tokio::select! {
                served = agent_tools_mcp::serve_stdio(server) => served.map_err(anyhow::Error::from),
                signal = signals.next() => {
                    tracing::info!(signal, "ending the run");
                    Ok(())
                }
            };
            end_run(&run, bound).await;
            outcome.map(|()| 0)
        }
        Command::Call {
            tool,
            arguments,
            run,
        } => {
            let arguments: serde_json::Value = serde_json::from_str(&arguments)
                .with_context(|| format!("the arguments are not JSON: {arguments}; pass an object like '{{\"path\": \"README.md\"}}'"))?;
            let settings = run.settings()?;
            let port: Arc<dyn QuestionPort> = match std::io::stdin().is_terminal() {
                true => Arc::new(crate::TerminalPort::stdio()),
                false => Arc::new(NoHuman {
                    reason: "standard input is not a terminal".to_owned(),
                }),
            };
            let bound = settings.shutdown_bound;
            let asks_nobody =
                settings.approval == ApprovalPolicy::Ask && !std::io::stdin().is_terminal();
            let dispatcher = settings.dispatcher(Some(port))?;
            // Progress goes to stderr, one line per report; stdout carries only the result.
            let progress: ProgressSink = Arc::new(|progress: Progress| {
                let count = match (progress.done, progress.total) {
                    (Some(done), Some(total)) => format!(" ({done}/{total})"),
                    (Some(done), None) => format!(" ({done})"),
                    _ => String::new(),
                };
                eprintln!("… {}{count}", progress.message);
            });
            let cancel = tokio_util::sync::CancellationToken::new();
            let mut signals = Signals::new()?;
            let call = dispatcher.dispatch_with(
                ToolCall {
                    name: tool,
                    arguments,
                },
                CallOptions {
                    cancel: Some(cancel.clone()),
                    progress: Some(progress),
                    asker: None,
                },
            );
            tokio::pin!(call);
            let result = tokio::select! {
                result = &mut call => result,
                signal = signals.next() => {
                    eprintln!("{signal}: cancelling the call");
                    cancel.cancel();
                    call.await
                }
            };
            let summary = dispatcher.shutdown(bound).await;
            report_shutdown(&summary, bound);
            tools_process::shutdown_all(Duration::from_millis(500)).await;
            for image in &result.images {
                tracing::info!(mime = %image.mime_type, bytes = image.data.len(), "the result has an image");
            }
            if result.is_error {
                eprintln!("{}", result.text);
                // The refusal is written for a model ("do not retry"); the person at the shell
                // chose this call and needs the flag that lets it through.
                if asks_nobody && result.text.contains("no approver is connected") {
                    eprintln!(
                        "\nagent-tools: nobody can approve this call here (standard input is \
                         not a terminal). To run write and exec tools without asking, add \
                         `--approval allow` (or set `approval = \"allow\"` in agent-tools.toml)."
                    );
                }
                Ok(1)
            } else {
                print_out(&result.text)?;
                Ok(0)
            }
        }
        Command::Tools { json, run } => {
            // The run `serve` would build, with a question port as for a client that shows
            // cards; nothing starts until a call, and no call is made.
            let settings = run.settings()?;
            let port: Arc<dyn QuestionPort> = Arc::new(NoHuman {
                reason: "listing tools only".to_owned(),
            });
            let dispatcher = settings.dispatcher(Some(port))?;
            let specs = dispatcher.tools();
            let text = match json {
                true => serde_json::to_string_pretty(&specs)?,
                false => specs
                    .iter()
                    .map(|spec| {
                        format!(
                            "{:<16} {:<6} {}",
                            spec.name,
                            spec.tier,
                            summary(&spec.description)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            let printed = print_out(&text);
            dispatcher.shutdown(Duration::from_secs(1)).await;
            printed?;
            Ok(0)
        }
    }
}

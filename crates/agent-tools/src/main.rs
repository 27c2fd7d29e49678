//! The `agent-tools` binary: serve a run over MCP, make one call, or list the tools.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use tools_core::{ApprovalPolicy, NoHuman, QuestionPort, Surface, ToolCall};

use agent_tools::{Config, McpServer, Settings, catalog};

/// Built-in tools for coding agents, bound to one workspace.
#[derive(Debug, Parser)]
#[command(name = "agent-tools", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one run over stdio as an MCP server.
    Serve(RunArgs),
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
    /// List the tools with their tiers, descriptions and schemas.
    Tools {
        /// Only the tools this surface sees.
        #[arg(long, default_value = "full")]
        surface: Surface,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
}

impl RunArgs {
    fn settings(&self) -> anyhow::Result<Settings> {
        let root = self.root.canonicalize().with_context(|| {
            format!("the workspace root {} does not exist", self.root.display())
        })?;
        let (config, path) = Config::load(&root, self.config.as_deref())?;
        if let Some(path) = path {
            tracing::info!(config = %path.display(), "loaded the config file");
        }
        let settings = Settings::new(root, &config, self.surface, self.approval);
        settings.check()?;
        Ok(settings)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.command {
        Command::Serve(_) => "warn,agent_tools=info,tools_core=info",
        _ => "warn",
    };
    // Logs go to standard error only: standard output is the MCP stream or the result.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENT_TOOLS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
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

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => {
            let settings = args.settings()?;
            tracing::info!(root = %settings.root.display(), surface = %settings.surface, approval = %settings.approval, "serving over stdio");
            let service = McpServer::new(settings)
                .serve(rmcp::transport::io::stdio())
                .await
                .context("the MCP client did not complete initialisation")?;
            service
                .waiting()
                .await
                .context("the MCP service stopped with an error")?;
            Ok(ExitCode::SUCCESS)
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
                true => Arc::new(agent_tools::TerminalPort::stdio()),
                false => Arc::new(NoHuman {
                    reason: "standard input is not a terminal".to_owned(),
                }),
            };
            let asks_nobody =
                settings.approval == ApprovalPolicy::Ask && !std::io::stdin().is_terminal();
            let dispatcher = settings.dispatcher(Some(port))?;
            let result = dispatcher
                .dispatch(ToolCall {
                    name: tool,
                    arguments,
                })
                .await;
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
                Ok(ExitCode::FAILURE)
            } else {
                println!("{}", result.text);
                Ok(ExitCode::SUCCESS)
            }
        }
        Command::Tools { surface, json } => {
            let registry = catalog()?;
            let specs: Vec<_> = registry
                .specs()
                .filter(|spec| surface.allows(spec.tier))
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&specs)?);
            } else {
                for spec in specs {
                    println!(
                        "{:<16} {:<6} {}",
                        spec.name,
                        spec.tier,
                        summary(&spec.description)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

//! The run's language servers as the tools use them: tools-lsp-client's [`Supervisor`] (the
//! sessions, their starts and restarts) with the `[lsp]` configuration, and opening a file
//! the model named — resolved in the workspace, refused from the disk when the line or the
//! symbol is wrong, synced with its server — before a request is sent for it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_lsp::lsp_types::{Position, TextDocumentIdentifier, TextDocumentPositionParams};
use tools_core::{CallContext, ToolError, Workspace};
use tools_lsp_client::{Busy, Session, Supervisor, Synced};
use tools_process::Sandbox;

use crate::Result;
use crate::config::LspConfig;
use crate::error::{ForModel, explain};
use crate::position::{Target, lines, locate};

/// The run's language servers. Clone it freely; the servers stop when the last clone is
/// dropped.
#[derive(Clone)]
pub struct LspSupervisor {
    client: Supervisor,
    config: Arc<LspConfig>,
}

/// A file opened on its server, ready for a request.
pub(crate) struct Opened {
    pub(crate) session: Arc<Session>,
    pub(crate) path: PathBuf,
    pub(crate) shown: String,
    pub(crate) synced: Synced,
    /// How many diagnostics publishes the file had before this sync (a wait for fresh
    /// diagnostics waits for more than this).
    pub(crate) publishes_before: u64,
    /// Notes for the answer (the server was still indexing).
    pub(crate) notes: Vec<String>,
}

impl LspSupervisor {
    /// A supervisor for a workspace (its canonical root) with this configuration, with no
    /// sandbox; fails only when the configuration is invalid. No server starts until a call
    /// needs one (CORE-2).
    pub fn new(workspace_root: impl Into<PathBuf>, config: LspConfig) -> Result<Self> {
        LspSupervisor::new_in_sandbox(workspace_root, config, None)
    }

    /// [`LspSupervisor::new`] for a run with a sandbox (EVAL-9): the servers, the probes that
    /// find them and the project checkers all start inside it.
    pub fn new_in_sandbox(
        workspace_root: impl Into<PathBuf>,
        config: LspConfig,
        sandbox: Option<Sandbox>,
    ) -> Result<Self> {
        config.validate()?;
        let client = Supervisor::new(
            workspace_root,
            config.client(),
            sandbox,
            Arc::new(report_busy),
        )?;
        Ok(LspSupervisor {
            client,
            config: Arc::new(config),
        })
    }

    /// Time spent waiting for servers' answers in this run, summed: what the servers took, as
    /// opposed to what our layer added around them (the benchmark reports both).
    pub fn server_time(&self) -> Duration {
        self.client.server_time()
    }

    /// Stops every server of the run (politely, then by killing its process group) and ends
    /// the supervisor: later calls answer that the servers were stopped.
    pub async fn shutdown(&self) {
        self.client.shutdown().await;
    }

    /// The sessions and the server table underneath.
    pub(crate) fn client(&self) -> &Supervisor {
        &self.client
    }

    /// The `[lsp]` table this run was started with.
    pub(crate) fn config(&self) -> &LspConfig {
        &self.config
    }

    /// Opens `file` and aims at `symbol` on 1-based `line` (LSP-3, LSP-4): the position a
    /// navigation or rename request is sent for. A symbol that is not on the line is refused
    /// from the file on disk, before a server is started or waited for (a cold rust-analyzer
    /// takes a minute to index).
    pub(crate) async fn open_at(
        &self,
        workspace: &Workspace,
        file: &str,
        line: u32,
        symbol: &str,
        occurrence: Option<u32>,
    ) -> std::result::Result<(Opened, Target, TextDocumentPositionParams), ToolError> {
        self.check_target(workspace, file, line, symbol, occurrence)
            .await?;
        let opened = self.open(workspace, file).await?;
        let target = locate(&opened.synced.text, line, symbol, occurrence, &opened.shown)?;
        let line_text = lines(&opened.synced.text)
            .get(target.line as usize)
            .copied()
            .unwrap_or_default();
        let position = TextDocumentPositionParams {
            text_document: TextDocumentIdentifier {
                uri: opened.synced.uri.clone(),
            },
            position: Position::new(
                target.line,
                opened.session.encoding.column(line_text, target.start),
            ),
        };
        Ok((opened, target, position))
    }

    /// What can be refused about a position from the disk alone, before any server starts:
    /// the path (PROD-5), the file, a server for its kind of file and a root for it, the
    /// line and the symbol on it (LSP-3, LSP-4).
    pub(crate) async fn check_target(
        &self,
        workspace: &Workspace,
        file: &str,
        line: u32,
        symbol: &str,
        occurrence: Option<u32>,
    ) -> std::result::Result<(), ToolError> {
        let path = workspace.resolve(file)?;
        let shown = workspace.display(&path);
        let spec = self.client.route(&path).for_model(workspace)?;
        self.client.root(&spec, &path).for_model(workspace)?;
        let (symbol, read_path) = (symbol.to_owned(), path.clone());
        let text = tokio::task::spawn_blocking(move || tools_core::read_regular(&read_path))
            .await
            .map_err(|error| ToolError::failed(format!("reading {shown} stopped: {error}")))?;
        let text = match text {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| ToolError::failed(format!("{shown} is not UTF-8 text")))?,
            Err(_) if path.is_dir() => {
                return Err(ToolError::failed(format!(
                    "{shown} is a directory; give a source file"
                )));
            }
            Err(_) if !path.exists() => {
                return Err(ToolError::failed(format!(
                    "{shown} does not exist; check the path (it is relative to the workspace \
                     root)"
                )));
            }
            Err(error) => return Err(ToolError::failed(format!("cannot read {shown}: {error}"))),
        };
        locate(&text, line, &symbol, occurrence, &shown).map(|_| ())
    }

    /// Resolves a `file` argument, starts its server if needed, waits for it to be ready,
    /// and syncs the file and every other open document with the disk.
    pub(crate) async fn open(
        &self,
        workspace: &Workspace,
        file: &str,
    ) -> std::result::Result<Opened, ToolError> {
        let path = workspace.resolve(file)?;
        let shown = workspace.display(&path);
        if path.is_dir() {
            return Err(ToolError::failed(format!(
                "{shown} is a directory; give a source file"
            )));
        }
        if !path.exists() {
            return Err(ToolError::failed(format!(
                "{shown} does not exist; check the path (it is relative to the workspace root)"
            )));
        }
        let spec = self.client.route(&path).for_model(workspace)?;
        let root = self.client.root(&spec, &path).for_model(workspace)?;
        let session = self.client.acquire(spec, root).await.for_model(workspace)?;
        session.rescan_disk().await;
        session.resync_open().await;
        let publishes_before = async_lsp::lsp_types::Url::from_file_path(&path)
            .map(|uri| session.shared.publish_count(&uri))
            .unwrap_or(0);
        let synced = session.sync(&path).await.map_err(|error| {
            let problem = explain(&error, &|path| workspace.display(path));
            ToolError::failed(format!("{problem}; nothing was asked"))
        })?;
        let notes = session
            .wait_ready()
            .await
            .as_ref()
            .map(still_busy)
            .into_iter()
            .collect();
        Ok(Opened {
            session,
            path,
            shown,
            synced,
            publishes_before,
            notes,
        })
    }
}

/// The note an answer carries when its server was still busy after the wait for it.
pub(crate) fn still_busy(busy: &Busy) -> String {
    format!(
        "{} was still busy after {}s ({}); this answer may be incomplete — ask again in a while",
        busy.server,
        busy.waited.as_secs(),
        busy.what
    )
}

/// The progress of a call that waits for a busy server: what it waits for, and how long it
/// has waited. It runs in the waiting call's task, whose context takes the report.
fn report_busy(busy: &Busy) {
    if let Some(context) = CallContext::current() {
        context.progress(format!(
            "waiting for {} in {}: {} ({}s)",
            busy.server,
            context.workspace().display(&busy.root),
            busy.what,
            busy.waited.as_secs()
        ));
    }
}

impl tools_core::Shutdown for LspSupervisor {
    fn shutdown(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(LspSupervisor::shutdown(self))
    }
}

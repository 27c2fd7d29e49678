//! Diagnostics on write (LSP-6): a dispatch wrapper around every tool that declares it writes
//! files (`Tool::WRITES_FILES`), knowing before the call which files it will write. After
//! the write, each touched file that a usable server covers is synced and saved through that
//! server, the wrapper waits for diagnostics about the written text — never a publish left
//! from before (`settle.rs`) — and reports what the write introduced (LSP-7) as a
//! [`WriteReport`]: in the written files, and in every file it did not touch whose diagnostics
//! it changed, as the project's checker would see them (SPEC section 11). Every written file
//! a server would cover gets a state: checked and clean, checked with errors still in it, or
//! not checked and why — silence never reads as clean.
//!
//! The files a write did not touch are reached per server (the table's `Reach`):
//! - a server whose own check covers the project (rust-analyzer's `cargo check`,
//!   basedpyright's workspace analysis) publishes every file it checked: the files whose
//!   publishes changed during the settle are compared with the publishes before;
//! - tsserver is asked which files import a written one, transitively (`fileReferences`),
//!   and each is asked for its diagnostics;
//! - clangd: the translation units that include a written header, from the compilation
//!   database, are rebuilt against it; the header itself is judged through them.
//!
//! One deadline per call (`[lsp.on_write] timeout_seconds`) bounds every wait, server start
//! included; the dependents it leaves unchecked are counted in the report, with why.
//!
//! The baseline of LSP-7 — what a file had before the run's first write reached anything it
//! depends on — is taken before the tool runs for the files its arguments name (the text
//! still on disk) and for their dependents; files the arguments do not name (a rename's other
//! files) get theirs after the tool ran, from the text the tool says they had, sent unsaved.
//! For servers that publish the whole project, a file's first publish is its baseline.
//!
//! The steps, each in its own file with its input and output: `targets.rs` (the files a
//! usable server covers, and why others are not checked), `baseline.rs` (before the tool,
//! and after it for files the arguments did not name), `written.rs` (the written files as
//! their servers stand before the write reaches them), `settle.rs`, `dependents.rs` and
//! `judge.rs` (into the registry, and the report). Beside them: `reported.rs`, the LSP-7
//! registry; `report.rs`, the report's file states and its text; `includes.rs`, which units
//! include a header.

mod baseline;
mod dependents;
mod includes;
mod judge;
mod report;
mod reported;
mod settle;
mod targets;
mod written;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tools_core::{
    CallContext, FileReport, Next, ToolCall, ToolResult, ToolSpec, Workspace, Wrapper, WriteReport,
    Writes,
};

use self::dependents::dependents;
use self::judge::judge;
use self::report::{guidance, render_report};
use self::reported::Registry;
use self::settle::settle_all;
use self::targets::{Covered, Servers, Target};
use self::written::Written;
use crate::config::OnWriteConfig;
use crate::lsp::with_progress;
use crate::supervisor::LspSupervisor;

/// Diagnostics on write for one run: wraps the writing tools, holds the LSP-7 registry.
pub struct DiagnosticsOnWrite {
    servers: Servers,
    config: OnWriteConfig,
    registry: Registry,
}

impl DiagnosticsOnWrite {
    pub(crate) fn new(supervisor: LspSupervisor) -> Self {
        let config = supervisor.config().on_write.clone();
        DiagnosticsOnWrite {
            servers: Servers::new(supervisor, config.timeout()),
            config,
            registry: Registry::default(),
        }
    }

    /// One writing call, in steps: the files it declared and their baselines, the tool, the
    /// files it wrote as their servers stand, the baselines of the written files its
    /// arguments did not name, the settle, the dependents, and the judgement, reported under
    /// the tool's own text.
    async fn around_call(
        &self,
        context: &CallContext,
        writes: &Writes,
        next: Next<'_>,
    ) -> ToolResult {
        let workspace = &context.run.workspace;
        let bound = self.config.timeout();
        let deadline = Instant::now() + bound;
        // The files the call will write, as it declared them from its arguments, what they
        // hold now, and their baselines.
        let named = existing(dedup(&writes.files));
        let mut previous = self.texts_before(&named);
        self.before_tool(workspace, &named, deadline).await;

        tracing::debug!("baselines taken; the tool runs");
        let mut result = next().await;
        tracing::debug!("the tool ran");
        if result.is_error || result.touched.is_empty() {
            return result;
        }

        let Some((written, mut not_checked)) =
            self.written(workspace, &result.touched, deadline).await
        else {
            return result;
        };
        previous.extend(result.previous.iter().cloned());
        let Written {
            targets,
            headers,
            snapshots,
        } = written;
        baseline::after_write(
            &self.registry,
            &targets,
            &previous,
            &snapshots,
            deadline,
            bound,
        )
        .await;
        let all: Vec<(&Target, Option<&str>)> = targets.iter().map(|t| (t, None)).collect();
        let outcomes = with_progress(
            "waiting for the language servers to check the written files",
            settle_all(&all, deadline, bound),
        )
        .await;
        let found = with_progress(
            "checking the files that depend on the written ones",
            dependents(workspace, &targets, headers, &snapshots, deadline, bound),
        )
        .await;
        let mut report = judge(
            &self.registry,
            &self.config,
            workspace,
            &targets,
            outcomes,
            found,
        );
        report.files.append(&mut not_checked);
        append(&mut result, report);
        result
    }

    /// Before the tool runs: the baselines of the files it declared that a usable server
    /// covers, and of their dependents.
    async fn before_tool(&self, workspace: &Workspace, named: &[PathBuf], deadline: Instant) {
        tracing::debug!(files = named.len(), "diagnostics on write: before the tool");
        let before = self.servers.targets(workspace, named, deadline).await;
        if !before.targets.is_empty() {
            with_progress(
                "checking the files before the write (once per file)",
                baseline::before_write(
                    &self.registry,
                    &before.targets,
                    deadline,
                    self.config.timeout(),
                ),
            )
            .await;
        }
    }

    /// After the tool ran: the files it wrote that a usable server covers, as their servers
    /// stand before the write reaches them, and the reports of those that cannot be
    /// checked; `None` when no server covers any. A file it deleted is forgotten.
    async fn written(
        &self,
        workspace: &Workspace,
        touched: &[PathBuf],
        deadline: Instant,
    ) -> Option<(Written, Vec<FileReport>)> {
        let touched = dedup(touched);
        {
            let mut reported = self.registry.lock();
            for path in touched.iter().filter(|path| !path.exists()) {
                reported.forget(path);
            }
        }
        let Covered {
            targets,
            not_checked,
        } = self
            .servers
            .targets(workspace, &existing(touched), deadline)
            .await;
        if targets.is_empty() && not_checked.is_empty() {
            return None;
        }
        Some((Written::prepare(targets).await, not_checked))
    }

    /// What each of `paths` that a server covers holds now.
    fn texts_before(&self, paths: &[PathBuf]) -> HashMap<PathBuf, String> {
        paths
            .iter()
            .filter(|path| self.servers.cover(path))
            .filter_map(|path| {
                let bytes = tools_core::read_regular(path).ok()?;
                Some((path.clone(), String::from_utf8(bytes).ok()?))
            })
            .collect()
    }
}

impl Wrapper for DiagnosticsOnWrite {
    /// Every tool that declares it writes files.
    fn wraps(&self, spec: &ToolSpec) -> bool {
        self.config.enabled && spec.writes_files
    }

    fn around<'a>(
        &'a self,
        context: &'a CallContext,
        _call: &'a ToolCall,
        writes: &'a Writes,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.around_call(context, writes, next))
    }
}

fn dedup(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    paths
        .iter()
        .filter(|path| seen.insert(path.as_path()))
        .cloned()
        .collect()
}

/// The regular files among `paths` (a file the call deleted has nothing to check).
fn existing(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.into_iter().filter(|path| path.is_file()).collect()
}

/// Puts the report under the tool's own text and into its structured result.
fn append(result: &mut ToolResult, mut report: WriteReport) {
    result.text.push_str(&render_report(&report));
    // The text says the guidance beside the lists; the structure keeps it with the notes.
    report.notes.extend(guidance(&report));
    if let Some(Value::Object(structured)) = &mut result.structured
        && let Ok(value) = serde_json::to_value(&report)
    {
        structured.insert("diagnostics".to_owned(), value);
    }
}

//! `symbols` (LSP-5): a file's outline, its symbols matching a query, and a workspace symbol
//! search across every usable server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_lsp::lsp_types::request::{DocumentSymbolRequest, WorkspaceSymbolRequest};
use async_lsp::lsp_types::{
    DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, OneOf, PartialResultParams,
    TextDocumentIdentifier, Url, WorkDoneProgressParams, WorkspaceSymbolParams,
    WorkspaceSymbolResponse,
};
use tools_core::{Line, Place, ToolError, Workspace};

use super::answer::{FileSymbols, WorkspaceSymbols};
use super::view::project_view_note;
use super::{Lsp, SymbolItem};
use crate::error::ForModel;
use crate::render::{Quoter, kind_name};
use crate::select::{Layout, Page, Rank, outline_indices, outline_ranks, page_note};
use tools_lsp_client::ServerSpec;

impl Lsp {
    pub(super) async fn file_symbols(
        &self,
        workspace: &Workspace,
        file: &str,
        query: Option<&str>,
        page: Page,
    ) -> Result<FileSymbols, ToolError> {
        let opened = self.supervisor.open(workspace, file).await?;
        let session = &opened.session;
        let answer = session
            .request::<DocumentSymbolRequest>(DocumentSymbolParams {
                text_document: TextDocumentIdentifier {
                    uri: opened.synced.uri.clone(),
                },
                work_done_progress_params: WorkDoneProgressParams::default(),
                partial_result_params: PartialResultParams::default(),
            })
            .await
            .for_model(workspace)?;
        let mut symbols = Vec::new();
        let mut quoter = Quoter::new(workspace);
        quoter.know(&opened.path, Arc::clone(&opened.synced.text));
        match answer {
            Some(DocumentSymbolResponse::Nested(tree)) => {
                let mut place = |line| quoter.place_in(&opened.path, line);
                flatten(&tree, 0, &mut place, &mut symbols);
            }
            Some(DocumentSymbolResponse::Flat(list)) => {
                for symbol in list {
                    let line = Line::from_lsp(symbol.location.range.start.line);
                    symbols.push(SymbolItem {
                        name: symbol.name,
                        kind: kind_name(symbol.kind).to_owned(),
                        place: quoter.place_in(&opened.path, line),
                        depth: usize::from(symbol.container_name.is_some_and(|c| !c.is_empty())),
                        in_workspace: true,
                    });
                }
            }
            None => {}
        }
        let ranks = outline_ranks(
            &symbols
                .iter()
                .map(|s| {
                    let function_like =
                        matches!(s.kind.as_str(), "function" | "method" | "constructor");
                    (s.depth, function_like)
                })
                .collect::<Vec<_>>(),
        );
        let mut ranked: Vec<(SymbolItem, Rank)> = symbols.into_iter().zip(ranks).collect();
        if let Some(query) = query {
            // Both given: the symbols of that file whose name contains the query, exact
            // names first, shown flat.
            let lower = query.to_lowercase();
            ranked.retain(|(s, _)| s.name.to_lowercase().contains(&lower));
            ranked.sort_by_key(|(s, _)| {
                (
                    s.name != query,
                    s.name.to_lowercase() != lower,
                    s.place.line,
                )
            });
            for (symbol, _) in &mut ranked {
                symbol.depth = 0;
            }
        }
        let total = ranked.len();
        let locals = ranked.iter().filter(|(_, r)| *r == Rank::Local).count();
        let chosen: Vec<usize> = match (page.paging, query) {
            (false, None) => outline_indices(
                &ranked.iter().map(|(_, r)| *r).collect::<Vec<_>>(),
                page.max,
            ),
            _ => (page.offset.min(total)..total).take(page.max).collect(),
        };
        let shown_locals = chosen
            .iter()
            .filter(|&&i| ranked[i].1 == Rank::Local)
            .count();
        let symbols: Vec<SymbolItem> = chosen.iter().map(|&i| ranked[i].0.clone()).collect();
        let mut notes = opened.notes.clone();
        if !page.paging && query.is_none() && symbols.len() < total {
            notes.push(format!(
                "(showing {} of {total}: every top-level item and member{}; {} locals and \
                 parameters of functions left out — `offset` pages through all of them in \
                 order)",
                symbols.len(),
                match shown_locals {
                    0 => String::new(),
                    n => format!(" and {n} locals"),
                },
                locals - shown_locals
            ));
        } else {
            notes.extend(page_note(symbols.len(), total, page, Layout::InOrder));
        }
        Ok(FileSymbols {
            server: session.spec.name.clone(),
            file: opened.shown.clone(),
            query: query.map(str::to_owned),
            symbols,
            total,
            notes,
        })
    }

    pub(super) async fn workspace_symbols(
        &self,
        workspace: &Workspace,
        query: &str,
        page: Page,
    ) -> Result<WorkspaceSymbols, ToolError> {
        // The servers to ask: every usable one in the workspace.
        let mut sessions = Vec::new();
        let mut notes = Vec::new();
        let mut problems = Vec::new();
        let context = self.supervisor.client().context();
        for spec in &context.servers {
            let roots = tools_lsp_client::scan_roots(spec, &context.workspace_root);
            let Some(root) = roots.first() else {
                continue;
            };
            // Some servers (tsserver) have no project until a file of it is open.
            let Some(file) = any_source(spec, root) else {
                continue;
            };
            let shown = workspace.display(&file);
            match self.supervisor.open(workspace, &shown).await {
                Ok(opened) => {
                    notes.extend(opened.notes.clone());
                    sessions.push(opened.session);
                }
                Err(error) => problems.push(format!("{}: {error}", spec.name)),
            }
        }
        if sessions.is_empty() {
            let mut message =
                "no language server can run in this workspace to search symbols".to_owned();
            if !problems.is_empty() {
                message.push_str(&format!(" ({})", problems.join("; ")));
            }
            message.push_str("; call `lsp` with operation `status` to see why");
            return Err(ToolError::failed(message));
        }
        let mut quoter = Quoter::new(workspace);
        let mut own = Vec::new();
        let mut dependencies = Vec::new();
        let mut servers = Vec::new();
        for session in &sessions {
            servers.push(session.spec.name.clone());
            let answer = session
                .request::<WorkspaceSymbolRequest>(WorkspaceSymbolParams {
                    query: query.to_owned(),
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                })
                .await
                .for_model(workspace)?;
            for (name, kind, uri, line) in found_symbols(answer) {
                let item = SymbolItem {
                    name,
                    kind,
                    in_workspace: quoter.is_own(&uri),
                    place: quoter.place(&uri, line),
                    depth: 0,
                };
                match item.in_workspace {
                    true => own.push(item),
                    false => dependencies.push(item),
                }
            }
        }
        // An exact name first, then the same name in another case, then the server's order.
        let rank = |item: &SymbolItem| (item.name != query, !item.name.eq_ignore_ascii_case(query));
        own.sort_by_key(rank);
        dependencies.sort_by_key(rank);
        let own_count = own.len();
        let mut symbols = own;
        symbols.extend(dependencies);
        let total = symbols.len();
        let start = page.offset.min(total);
        let symbols: Vec<SymbolItem> = symbols.into_iter().skip(start).take(page.max).collect();
        notes.extend(page_note(symbols.len(), total, page, Layout::InOrder));
        for session in &sessions {
            notes.extend(project_view_note(session));
        }
        Ok(WorkspaceSymbols {
            servers,
            query: query.to_owned(),
            symbols,
            total,
            own: own_count,
            notes,
        })
    }
}

/// A workspace symbol answer as (name, kind, file, line).
fn found_symbols(answer: Option<WorkspaceSymbolResponse>) -> Vec<(String, String, Url, Line)> {
    match answer {
        Some(WorkspaceSymbolResponse::Flat(list)) => list
            .into_iter()
            .map(|s| {
                (
                    s.name,
                    kind_name(s.kind).to_owned(),
                    s.location.uri,
                    Line::from_lsp(s.location.range.start.line),
                )
            })
            .collect(),
        Some(WorkspaceSymbolResponse::Nested(list)) => list
            .into_iter()
            .map(|s| {
                let (uri, line) = match s.location {
                    OneOf::Left(location) => {
                        (location.uri, Line::from_lsp(location.range.start.line))
                    }
                    // A location without a range names the file only.
                    OneOf::Right(location) => (location.uri, Line::FIRST),
                };
                (s.name, kind_name(s.kind).to_owned(), uri, line)
            })
            .collect(),
        None => Vec::new(),
    }
}

/// An outline's tree as a list, each symbol at the place of its name (`place` of a line).
fn flatten(
    tree: &[DocumentSymbol],
    depth: usize,
    place: &mut impl FnMut(Line) -> Place,
    out: &mut Vec<SymbolItem>,
) {
    for symbol in tree {
        out.push(SymbolItem {
            name: symbol.name.clone(),
            kind: kind_name(symbol.kind).to_owned(),
            place: place(Line::from_lsp(symbol.selection_range.start.line)),
            depth,
            in_workspace: true,
        });
        if let Some(children) = &symbol.children {
            flatten(children, depth + 1, place, out);
        }
    }
}

/// A source file of `spec` under `root` (breadth first, shallow), to open before a workspace
/// symbol search.
fn any_source(spec: &ServerSpec, root: &Path) -> Option<PathBuf> {
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0)]);
    let mut budget = 500;
    while let Some((dir, depth)) = queue.pop_front() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .ok()?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            budget -= 1;
            if budget == 0 {
                return None;
            }
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_file() && spec.language_id(&path).is_some() {
                return Some(path);
            }
            if path.is_dir()
                && depth < 4
                && !name.starts_with('.')
                && !matches!(
                    name.as_str(),
                    "node_modules" | "target" | "venv" | "__pycache__"
                )
            {
                queue.push_back((path, depth + 1));
            }
        }
    }
    None
}

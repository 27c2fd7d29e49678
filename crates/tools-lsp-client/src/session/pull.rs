//! Asking a server about files it may not have open: a file's diagnostics (LSP's pull, or
//! tsserver's own requests, converted to LSP diagnostics) and the files that import a file.

use std::path::PathBuf;
use std::time::Duration;

use async_lsp::lsp_types::request::{DocumentDiagnosticRequest, ExecuteCommand};
use async_lsp::lsp_types::{
    Diagnostic, DiagnosticSeverity, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, ExecuteCommandParams, NumberOrString, Position, Range,
    TextDocumentIdentifier, Url,
};
use serde_json::json;

use crate::Result;
use crate::servers::Pull;

use super::Session;

impl Session {
    /// The files of `paths` that import each of them, transitively (tsserver's
    /// `fileReferences` followed breadth first), in the order found, at most `cap`; with
    /// whether more were left out. `None` when the server cannot say.
    pub async fn importers(
        &self,
        paths: &[PathBuf],
        cap: usize,
        deadline: tokio::time::Instant,
    ) -> Option<(Vec<PathBuf>, bool)> {
        if self.spec.pull != Pull::TsServer {
            return None;
        }
        let mut seen: std::collections::HashSet<PathBuf> = paths.iter().cloned().collect();
        let mut found = Vec::new();
        let mut frontier: Vec<PathBuf> = paths.to_vec();
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for path in frontier {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                if remaining.is_zero() {
                    return Some((found, true));
                }
                let answer = self
                    .request_within::<ExecuteCommand>(
                        ExecuteCommandParams {
                            command: "typescript.tsserverRequest".into(),
                            arguments: vec![
                                json!("fileReferences"),
                                json!({ "file": path.display().to_string() }),
                            ],
                            work_done_progress_params: Default::default(),
                        },
                        remaining,
                    )
                    .await
                    .ok()??;
                let refs = answer.pointer("/body/refs")?.as_array()?.clone();
                for reference in refs {
                    let Some(file) = reference.get("file").and_then(|f| f.as_str()) else {
                        continue;
                    };
                    let file = PathBuf::from(file);
                    if file.starts_with(&self.root) && seen.insert(file.clone()) {
                        if found.len() == cap {
                            return Some((found, true));
                        }
                        found.push(file.clone());
                        next.push(file);
                    }
                }
            }
            frontier = next;
        }
        Some((found, false))
    }

    /// The file's diagnostics, asked for, from a server the table says answers such asks
    /// ([`Pull`]); `None` when it does not, or answers with nothing usable (the caller then
    /// reads publishes).
    pub async fn pull_diagnostics(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        self.pull_within(uri, self.request_timeout).await
    }

    /// [`Session::pull_diagnostics`] with its own timeout.
    pub async fn pull_within(&self, uri: &Url, timeout: Duration) -> Option<Vec<Diagnostic>> {
        match self.pull_answer(uri, timeout).await {
            Ok(diagnostics) => diagnostics,
            Err(error) => {
                tracing::debug!(server = %self.spec.name, %error, "pulling diagnostics failed; using publishes");
                None
            }
        }
    }

    /// The server's diagnostics for `uri` as a pull answers, or its error: `Ok(None)` when it
    /// does not answer pulls (or not with a full report).
    pub async fn pull_answer(
        &self,
        uri: &Url,
        timeout: Duration,
    ) -> Result<Option<Vec<Diagnostic>>> {
        match self.spec.pull {
            Pull::None => Ok(None),
            Pull::Lsp | Pull::Analysis => self.pull_lsp(uri, timeout).await,
            Pull::TsServer => self.pull_tsserver(uri, timeout).await,
        }
    }

    async fn pull_lsp(&self, uri: &Url, timeout: Duration) -> Result<Option<Vec<Diagnostic>>> {
        let answer = self
            .request_within::<DocumentDiagnosticRequest>(
                DocumentDiagnosticParams {
                    text_document: TextDocumentIdentifier { uri: uri.clone() },
                    identifier: None,
                    previous_result_id: None,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                },
                timeout,
            )
            .await?;
        Ok(match answer {
            DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(full)) => {
                Some(full.full_document_diagnostic_report.items)
            }
            _ => None,
        })
    }

    /// tsserver's syntactic and semantic diagnostics of an open file, through
    /// typescript-language-server's pass-through command.
    async fn pull_tsserver(&self, uri: &Url, timeout: Duration) -> Result<Option<Vec<Diagnostic>>> {
        let mut diagnostics = Vec::new();
        for command in ["syntacticDiagnosticsSync", "semanticDiagnosticsSync"] {
            let answer = self
                .request_within::<ExecuteCommand>(
                    ExecuteCommandParams {
                        command: "typescript.tsserverRequest".into(),
                        arguments: vec![json!(command), json!({ "file": tsserver_file(uri) })],
                        work_done_progress_params: Default::default(),
                    },
                    timeout,
                )
                .await?;
            let Some(body) = answer.as_ref().and_then(|answer| {
                (answer.get("success") == Some(&json!(true)))
                    .then(|| answer.get("body")?.as_array())
                    .flatten()
            }) else {
                return Ok(None);
            };
            diagnostics.extend(body.iter().filter_map(tsserver_diagnostic));
        }
        Ok(Some(diagnostics))
    }
}

/// The file tsserver is asked about: its path (tsserver keys files by path; a file of the
/// project that is not open is found by it).
fn tsserver_file(uri: &Url) -> String {
    uri.to_file_path()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|()| uri.to_string())
}

/// One tsserver diagnostic (`{start: {line, offset}, end, text, code, category}`, 1-based)
/// as an LSP one; columns count UTF-16 units, which only matters to callers that read them.
fn tsserver_diagnostic(item: &serde_json::Value) -> Option<Diagnostic> {
    let position = |key: &str| {
        let at = item.get(key)?;
        let line = at.get("line")?.as_u64()?.checked_sub(1)?;
        let offset = at.get("offset")?.as_u64()?.saturating_sub(1);
        Some(Position::new(
            u32::try_from(line).ok()?,
            u32::try_from(offset).ok()?,
        ))
    };
    let start = position("start")?;
    Some(Diagnostic {
        range: Range::new(start, position("end").unwrap_or(start)),
        severity: Some(match item.get("category").and_then(|c| c.as_str()) {
            Some("error") => DiagnosticSeverity::ERROR,
            Some("warning") => DiagnosticSeverity::WARNING,
            Some("suggestion") => DiagnosticSeverity::HINT,
            _ => DiagnosticSeverity::INFORMATION,
        }),
        code: item
            .get("code")
            .and_then(|code| code.as_i64())
            .and_then(|code| i32::try_from(code).ok())
            .map(NumberOrString::Number),
        source: Some("ts".into()),
        message: item.get("text")?.as_str()?.to_owned(),
        ..Diagnostic::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsp_5_tsserver_diagnostics_become_lsp_ones() {
        let item = json!({
            "start": {"line": 1, "offset": 14}, "end": {"line": 1, "offset": 20},
            "text": "Type 'string' is not assignable to type 'number'.",
            "code": 2322, "category": "error"
        });
        let diagnostic = tsserver_diagnostic(&item).unwrap();
        assert_eq!(diagnostic.range.start, Position::new(0, 13));
        assert_eq!(diagnostic.range.end, Position::new(0, 19));
        assert_eq!(diagnostic.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(diagnostic.code, Some(NumberOrString::Number(2322)));
        let suggestion =
            json!({"start": {"line": 3, "offset": 1}, "text": "unused", "category": "suggestion"});
        assert_eq!(
            tsserver_diagnostic(&suggestion).unwrap().severity,
            Some(DiagnosticSeverity::HINT)
        );
        assert!(tsserver_diagnostic(&json!({"text": "no position"})).is_none());
    }
}

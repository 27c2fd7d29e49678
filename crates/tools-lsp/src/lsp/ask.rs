//! The position questions (LSP-3, LSP-4): definitions, type definitions, implementations,
//! references, hover and code actions at a symbol pointed at by line and text.

use std::sync::Arc;

use async_lsp::lsp_types::request::{
    CodeActionRequest, GotoDefinition, GotoImplementation, GotoTypeDefinition, HoverRequest,
    References,
};
use async_lsp::lsp_types::{
    CodeActionContext, CodeActionOrCommand, CodeActionParams, CodeActionTriggerKind,
    GotoDefinitionParams, GotoDefinitionResponse, HoverParams, PartialResultParams,
    ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Url,
    WorkDoneProgressParams,
};
use tools_core::{Line, Place, ToolError, Workspace};

use super::answer::{Actions, Asked, Hover, Places};
use super::diagnose::{ACTIONS_DIAGNOSTICS_WAIT, current_diagnostics};
use super::request::{At, Navigation};
use super::view::project_view_note;
use super::{ActionItem, Lsp};
use crate::error::ForModel;
use crate::position::{Target, lines};
use crate::render::{Quoter, hover_text};
use crate::select::{Page, page_indices, page_note, per_file_counts};
use crate::supervisor::Opened;

/// A position question resolved: the opened file, the target, its place, and the LSP
/// position.
struct Pointed {
    opened: Opened,
    target: Target,
    here: Place,
    symbol: String,
    position: TextDocumentPositionParams,
}

impl Pointed {
    fn asked(&self) -> Asked {
        Asked {
            server: self.opened.session.spec.name.clone(),
            aimed: self.target.aimed.clone(),
            here: self.here.clone(),
        }
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.opened.notes.clone();
        notes.extend(self.target.note(&self.symbol));
        notes
    }
}

impl Lsp {
    async fn point(&self, workspace: &Workspace, at: &At) -> Result<Pointed, ToolError> {
        let (opened, target, position) = self
            .supervisor
            .open_at(workspace, &at.path, at.line, &at.symbol, at.occurrence)
            .await?;
        Ok(Pointed {
            here: target.place(workspace, &opened.path, &opened.synced.text),
            opened,
            target,
            symbol: at.symbol.clone(),
            position,
        })
    }

    pub(super) async fn navigate(
        &self,
        workspace: &Workspace,
        kind: Navigation,
        at: &At,
        page: Page,
    ) -> Result<Places, ToolError> {
        let pointed = self.point(workspace, at).await?;
        let session = &pointed.opened.session;
        let goto = GotoDefinitionParams {
            text_document_position_params: pointed.position.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        // A symbol an implementation declares and a stub shadows: its uses resolve to the
        // stub, so references are asked from there too, and the answer says so.
        let stub = match kind {
            Navigation::References | Navigation::Definition => {
                crate::stubs::stub_declaration(session, &pointed.position).await
            }
            _ => None,
        };
        let references = |position: TextDocumentPositionParams| {
            session.request::<References>(ReferenceParams {
                text_document_position: position,
                work_done_progress_params: WorkDoneProgressParams::default(),
                partial_result_params: PartialResultParams::default(),
                context: ReferenceContext {
                    include_declaration: true,
                },
            })
        };
        let mut found: Vec<(Url, Line)> = match kind {
            Navigation::Definition => targets(
                session
                    .request::<GotoDefinition>(goto)
                    .await
                    .for_model(workspace)?,
            ),
            Navigation::TypeDefinition => targets(
                session
                    .request::<GotoTypeDefinition>(goto)
                    .await
                    .for_model(workspace)?,
            ),
            Navigation::Implementation => targets(
                session
                    .request::<GotoImplementation>(goto)
                    .await
                    .for_model(workspace)?,
            ),
            Navigation::References => uses(
                references(pointed.position.clone())
                    .await
                    .for_model(workspace)?,
            ),
        };
        let mut notes = pointed.notes();
        if let Some(stub) = &stub {
            let line = stub.line();
            let declared = Place::new(workspace, &stub.path, line, "");
            let aimed = &pointed.target.aimed;
            match kind {
                Navigation::References => {
                    let through_stub = uses(
                        references(stub.position.clone())
                            .await
                            .for_model(workspace)?,
                    );
                    found = union_of_uses(std::mem::take(&mut found), through_stub);
                    notes.push(format!(
                        "a stub declares `{aimed}` ({}): uses that resolve to the stub and to \
                         the implementation are both listed",
                        declared.at()
                    ));
                }
                _ => {
                    if let Ok(uri) = Url::from_file_path(&stub.path)
                        && !found.iter().any(|(u, _)| *u == uri)
                    {
                        found.push((uri, line));
                    }
                    notes.push(format!(
                        "a stub declares `{aimed}` too ({}): callers outside its module see \
                         the stub's signature",
                        declared.at()
                    ));
                }
            }
        }
        let mut quoter = Quoter::new(workspace);
        quoter.know(
            &pointed.opened.path,
            Arc::clone(&pointed.opened.synced.text),
        );
        let mut places: Vec<Place> = found
            .iter()
            .map(|(uri, line)| quoter.place(uri, *line))
            .collect();
        match kind {
            // Files in path order, lines in order: easier to read than the server's order.
            // Two uses on one line stay two entries: the count is of uses, not lines.
            Navigation::References => {
                places.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
            }
            _ => {
                // rust-analyzer lists implementations in no fixed order: read them in path
                // and line order, so the same question gets the same answer.
                if kind == Navigation::Implementation {
                    places.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
                }
                // Some servers report one declaration twice (through a re-export, say).
                places.dedup();
            }
        }
        let total = places.len();
        let keys: Vec<&str> = places.iter().map(|p| p.path.as_str()).collect();
        let files = keys.iter().collect::<std::collections::BTreeSet<_>>().len();
        let per_file = (kind == Navigation::References && files > 1 && total > page.max)
            .then(|| per_file_counts(&keys));
        let chosen = page_indices(&keys, page);
        let places: Vec<Place> = chosen.into_iter().map(|i| places[i].clone()).collect();
        notes.extend(page_note(
            places.len(),
            total,
            page,
            page.layout(total, files),
        ));
        if kind == Navigation::References {
            notes.extend(project_view_note(session));
        }
        Ok(Places {
            kind,
            asked: pointed.asked(),
            places,
            total,
            per_file,
            notes,
        })
    }

    pub(super) async fn hover(&self, workspace: &Workspace, at: &At) -> Result<Hover, ToolError> {
        let pointed = self.point(workspace, at).await?;
        let hover = pointed
            .opened
            .session
            .request::<HoverRequest>(HoverParams {
                text_document_position_params: pointed.position.clone(),
                work_done_progress_params: WorkDoneProgressParams::default(),
            })
            .await
            .for_model(workspace)?;
        Ok(Hover {
            asked: pointed.asked(),
            contents: hover
                .map(|h| hover_text(h.contents))
                .filter(|t| !t.is_empty()),
            notes: pointed.notes(),
        })
    }

    pub(super) async fn code_actions(
        &self,
        workspace: &Workspace,
        at: &At,
    ) -> Result<Actions, ToolError> {
        let pointed = self.point(workspace, at).await?;
        let actions = actions_at(&pointed.opened, &pointed.target)
            .await
            .for_model(workspace)?
            .into_iter()
            .map(|action| match action {
                CodeActionOrCommand::Command(command) => ActionItem {
                    title: command.title,
                    kind: None,
                    preferred: false,
                    disabled: None,
                },
                CodeActionOrCommand::CodeAction(action) => ActionItem {
                    title: action.title,
                    kind: action.kind.map(|kind| kind.as_str().to_owned()),
                    preferred: action.is_preferred.unwrap_or(false),
                    disabled: action.disabled.map(|d| d.reason),
                },
            })
            .collect();
        Ok(Actions {
            asked: pointed.asked(),
            actions,
            notes: pointed.notes(),
        })
    }
}

/// The code actions the server offers at `target` in an opened file, asked with the
/// diagnostics on that line (quick fixes hang off them).
pub(crate) async fn actions_at(
    opened: &Opened,
    target: &Target,
) -> tools_lsp_client::Result<Vec<CodeActionOrCommand>> {
    let session = &opened.session;
    let uri = &opened.synced.uri;
    let line = target.line;
    let (diagnostics, _) = current_diagnostics(opened, ACTIONS_DIAGNOSTICS_WAIT).await;
    let diagnostics: Vec<_> = diagnostics
        .into_iter()
        .filter(|d| d.range.start.line <= line && d.range.end.line >= line)
        .collect();
    let line_text = lines(&opened.synced.text)
        .get(line as usize)
        .copied()
        .unwrap_or_default();
    let range = target.range(line_text, session.encoding);
    Ok(session
        .request::<CodeActionRequest>(CodeActionParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            range,
            context: CodeActionContext {
                diagnostics,
                only: None,
                trigger_kind: Some(CodeActionTriggerKind::INVOKED),
            },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await?
        .unwrap_or_default())
}

/// A references answer as (file, line) per use.
fn uses(answer: Option<Vec<async_lsp::lsp_types::Location>>) -> Vec<(Url, Line)> {
    answer
        .unwrap_or_default()
        .into_iter()
        .map(|location| (location.uri, Line::from_lsp(location.range.start.line)))
        .collect()
}

/// Two answers to `references` as one: each use once, where a line has as many uses as the
/// answer with more of them there (two calls on one line stay two), in order of appearance.
fn union_of_uses(first: Vec<(Url, Line)>, second: Vec<(Url, Line)>) -> Vec<(Url, Line)> {
    let mut order: Vec<(Url, Line)> = Vec::new();
    let mut counts: std::collections::HashMap<(Url, Line), [usize; 2]> =
        std::collections::HashMap::new();
    for (index, list) in [first, second].into_iter().enumerate() {
        for key in list {
            let count = counts.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                [0, 0]
            });
            count[index] += 1;
        }
    }
    order
        .into_iter()
        .flat_map(|key| {
            let [a, b] = counts[&key];
            std::iter::repeat_n(key, a.max(b))
        })
        .collect()
}

/// Definition-like answers as (file, line of the name).
fn targets(answer: Option<GotoDefinitionResponse>) -> Vec<(Url, Line)> {
    let at = |uri: Url, range: async_lsp::lsp_types::Range| (uri, Line::from_lsp(range.start.line));
    match answer {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => vec![at(location.uri, location.range)],
        Some(GotoDefinitionResponse::Array(locations)) => locations
            .into_iter()
            .map(|location| at(location.uri, location.range))
            .collect(),
        // A link's selection range is the name, not the whole item (its doc comment and
        // attributes would otherwise put the line on `#[derive]`).
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|link| at(link.target_uri, link.target_selection_range))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsp_5_uses_found_from_a_stub_and_its_implementation_are_each_listed_once() {
        let at = |name: &str, line: u32| {
            let url = Url::parse(&format!("file:///p/{name}")).unwrap();
            (url, Line::new(line).unwrap())
        };
        let from_implementation = vec![at("more.py", 10), at("more.py", 40)];
        let from_stub = vec![
            at("more.pyi", 3),
            at("more.py", 10),
            at("use.py", 7),
            at("use.py", 7),
        ];
        assert_eq!(
            union_of_uses(from_implementation, from_stub),
            [
                at("more.py", 10),
                at("more.py", 40),
                at("more.pyi", 3),
                at("use.py", 7),
                at("use.py", 7),
            ]
        );
    }
}

//! Python stubs beside their implementation (SPEC section 10): a `mod.pyi` next to `mod.py`
//! declares what the module exports, and basedpyright resolves every import of the module to
//! the stub. Asked from the implementation's own declaration, its `references` and `rename`
//! see only the uses that resolve to the implementation (the module's own calls); asked from
//! the stub's declaration they see every use and the implementation too. So navigation and
//! rename that start at an implementation with a stub twin also ask from the stub, and say a
//! stub declares the symbol.

use std::path::{Path, PathBuf};

use async_lsp::lsp_types::request::{DocumentSymbolRequest, GotoDefinition};
use async_lsp::lsp_types::{
    DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, GotoDefinitionParams,
    GotoDefinitionResponse, PartialResultParams, Position, TextDocumentIdentifier,
    TextDocumentPositionParams, Url, WorkDoneProgressParams,
};
use tools_core::Line;
use tools_lsp_client::Session;

/// A symbol's declaration in the stub that shadows its implementation.
#[derive(Debug, Clone)]
pub(crate) struct StubDeclaration {
    /// The stub file.
    pub(crate) path: PathBuf,
    /// Where its name is declared there.
    pub(crate) position: TextDocumentPositionParams,
}

impl StubDeclaration {
    /// The line its name is declared on.
    pub(crate) fn line(&self) -> Line {
        Line::from_lsp(self.position.position.line)
    }
}

/// The `.pyi` beside a `.py` file, when there is one.
fn stub_of(path: &Path) -> Option<PathBuf> {
    if path.extension().is_none_or(|e| e != "py") {
        return None;
    }
    let stub = path.with_extension("pyi");
    stub.is_file().then_some(stub)
}

/// The stub declaration of the symbol at `position`, when the symbol is declared in a `.py`
/// file whose `.pyi` twin declares it too (found by its chain of enclosing names: `Class`,
/// then `method`). `None` for every other server, file and symbol.
pub(crate) async fn stub_declaration(
    session: &Session,
    position: &TextDocumentPositionParams,
) -> Option<StubDeclaration> {
    if !session.spec.extensions.iter().any(|(e, _)| e == "pyi") {
        return None;
    }
    // Where the symbol is declared: the position itself, or where definition leads from it.
    let declared = session
        .request::<GotoDefinition>(GotoDefinitionParams {
            text_document_position_params: position.clone(),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await
        .ok()
        .flatten()
        .and_then(first_target)
        .unwrap_or_else(|| (position.text_document.uri.clone(), position.position));
    let implementation = declared.0.to_file_path().ok()?;
    let stub = stub_of(&implementation)?;
    let chain = chain_at(session, &implementation, declared.1).await?;
    let at = position_in(session, &stub, &chain).await?;
    Some(StubDeclaration {
        position: TextDocumentPositionParams {
            text_document: TextDocumentIdentifier {
                uri: Url::from_file_path(&stub).ok()?,
            },
            position: at,
        },
        path: stub,
    })
}

fn first_target(answer: GotoDefinitionResponse) -> Option<(Url, Position)> {
    match answer {
        GotoDefinitionResponse::Scalar(location) => Some((location.uri, location.range.start)),
        GotoDefinitionResponse::Array(locations) => locations
            .into_iter()
            .next()
            .map(|location| (location.uri, location.range.start)),
        GotoDefinitionResponse::Link(links) => links
            .into_iter()
            .next()
            .map(|link| (link.target_uri, link.target_selection_range.start)),
    }
}

/// The file's outline from its server (the file is opened first).
async fn outline(session: &Session, path: &Path) -> Option<Vec<DocumentSymbol>> {
    let synced = session.sync(path).await.ok()?;
    match session
        .request::<DocumentSymbolRequest>(DocumentSymbolParams {
            text_document: TextDocumentIdentifier { uri: synced.uri },
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await
        .ok()??
    {
        DocumentSymbolResponse::Nested(tree) => Some(tree),
        DocumentSymbolResponse::Flat(_) => None,
    }
}

/// The names from the outermost symbol down to the one whose name is at `position`.
async fn chain_at(session: &Session, path: &Path, position: Position) -> Option<Vec<String>> {
    let tree = outline(session, path).await?;
    let mut chain = Vec::new();
    let mut level = tree.as_slice();
    loop {
        let symbol = level
            .iter()
            .find(|symbol| contains(&symbol.range, position))?;
        chain.push(symbol.name.clone());
        if contains(&symbol.selection_range, position) {
            return Some(chain);
        }
        level = symbol.children.as_deref().unwrap_or_default();
    }
}

/// Where the symbol named by `chain` is declared in `path`.
async fn position_in(session: &Session, path: &Path, chain: &[String]) -> Option<Position> {
    let tree = outline(session, path).await?;
    let mut level = tree.as_slice();
    let mut found = None;
    for name in chain {
        let symbol = level.iter().find(|symbol| &symbol.name == name)?;
        found = Some(symbol.selection_range.start);
        level = symbol.children.as_deref().unwrap_or_default();
    }
    found
}

fn contains(range: &async_lsp::lsp_types::Range, position: Position) -> bool {
    let key = |p: Position| (p.line, p.character);
    key(range.start) <= key(position) && key(position) <= key(range.end)
}

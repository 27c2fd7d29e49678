//! The `initialize` handshake's content: the capabilities we offer and the parameters sent.

use async_lsp::lsp_types::{
    ClientCapabilities, ClientInfo, InitializeParams, Url, WorkspaceFolder,
};
use serde_json::json;

use crate::servers::Pull;

use super::Session;

/// What we tell the server about ourselves: UTF-8 positions first, progress, rust-analyzer's
/// status notification, hierarchical symbols, link locations, code-action literals, rename
/// with prepare, and workspace edits with resource operations. File watching is left to the
/// servers that can do it themselves.
pub(super) fn client_capabilities(
    pull_diagnostics: bool,
) -> serde_json::Result<ClientCapabilities> {
    let symbol_kinds: Vec<u32> = (1..=26).collect();
    let mut capabilities = json!({
        "general": { "positionEncodings": ["utf-8", "utf-16"] },
        "window": { "workDoneProgress": true, "showMessage": {} },
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "applyEdit": false,
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort"
            },
            "symbol": { "symbolKind": { "valueSet": symbol_kinds } },
            "didChangeConfiguration": { "dynamicRegistration": false },
            "didChangeWatchedFiles": { "dynamicRegistration": false }
        },
        "textDocument": {
            "synchronization": { "didSave": true, "dynamicRegistration": false },
            "hover": { "contentFormat": ["markdown", "plaintext"] },
            "definition": { "linkSupport": true },
            "typeDefinition": { "linkSupport": true },
            "implementation": { "linkSupport": true },
            "references": {},
            "documentSymbol": {
                "hierarchicalDocumentSymbolSupport": true,
                "symbolKind": { "valueSet": symbol_kinds }
            },
            "codeAction": {
                "codeActionLiteralSupport": { "codeActionKind": { "valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports", "source.fixAll"
                ] } },
                "isPreferredSupport": true,
                "dataSupport": true,
                "resolveSupport": { "properties": ["edit"] }
            },
            "rename": { "prepareSupport": true },
            "publishDiagnostics": { "versionSupport": true }
        },
        "experimental": { "serverStatusNotification": true }
    });
    // Offered only to servers we pull from: a server told that the client pulls may stop
    // publishing, and publishes are what the other servers are read by.
    if pull_diagnostics {
        capabilities["textDocument"]["diagnostic"] = json!({ "dynamicRegistration": false });
    }
    serde_json::from_value(capabilities)
}

/// `initialize` for `session`; `process_id` is ours when the server can see it (LSP's
/// `processId`, which servers watch to exit with their client).
pub(super) fn initialize_params(
    session: &Session,
    root_uri: Url,
    root_name: String,
    process_id: Option<u32>,
) -> InitializeParams {
    // A unit test proves the capabilities decode; the default is never reached.
    let capabilities = client_capabilities(matches!(session.spec.pull, Pull::Lsp | Pull::Analysis))
        .unwrap_or_default();
    #[allow(deprecated)]
    InitializeParams {
        process_id,
        root_path: Some(session.root.display().to_string()),
        root_uri: Some(root_uri.clone()),
        initialization_options: session.spec.initialization_options.clone(),
        capabilities,
        workspace_folders: Some(vec![WorkspaceFolder {
            uri: root_uri,
            name: root_name,
        }]),
        client_info: Some(ClientInfo {
            name: "agent-tools".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..InitializeParams::default()
    }
}

#[cfg(test)]
mod tests {
    use async_lsp::lsp_types::PositionEncodingKind;

    use super::*;

    #[test]
    fn client_capabilities_decode_and_offer_utf8_first() {
        let capabilities = client_capabilities(/*pull_diagnostics*/ false).unwrap();
        assert!(
            client_capabilities(/*pull_diagnostics*/ true)
                .unwrap()
                .text_document
                .unwrap()
                .diagnostic
                .is_some()
        );
        let encodings = capabilities.general.unwrap().position_encodings.unwrap();
        assert_eq!(
            encodings,
            [PositionEncodingKind::UTF8, PositionEncodingKind::UTF16]
        );
        let text = capabilities.text_document.unwrap();
        assert_eq!(text.rename.unwrap().prepare_support, Some(true));
        assert_eq!(
            text.document_symbol
                .unwrap()
                .hierarchical_document_symbol_support,
            Some(true)
        );
        let workspace = capabilities.workspace.unwrap();
        assert_eq!(
            workspace.workspace_edit.unwrap().document_changes,
            Some(true)
        );
        // No watcher is offered: servers that can watch do so themselves.
        assert_eq!(
            workspace
                .did_change_watched_files
                .unwrap()
                .dynamic_registration,
            Some(false)
        );
    }
}

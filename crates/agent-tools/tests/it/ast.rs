//! Structural search and staged rewrites through `agent-tools serve`.

use serde_json::json;

use crate::support::{Client, Person, Server, is_error, text};

fn dart_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("lib")).unwrap();
    std::fs::write(
        dir.path().join("lib/a.dart"),
        "void a(Object x) {\n  dispose(x);\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lib/b.dart"),
        "void b(Object y) {\n  dispose(y);\n  print('dispose(y)');\n}\n",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn ast_6_search_stage_and_accept_over_mcp() {
    let dir = dart_project();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    let found = server
        .call(
            "ast_grep",
            json!({"pattern": "dispose($X)", "language": "dart"}),
        )
        .await;
    assert!(!is_error(&found), "{}", text(&found));
    let structured = found.structured_content.clone().unwrap();
    assert_eq!(structured["total"], 2);
    // A match starts at a place like every tool's (path, line, the line's text); the code it
    // matched is apart.
    let second = &structured["matches"][1];
    assert_eq!(
        (&second["path"], &second["line"], &second["text"]),
        (&json!("lib/b.dart"), &json!(2), &json!("dispose(y);"))
    );
    assert_eq!(second["matched"], "dispose(y)");
    let staged = server
        .call(
            "ast_edit",
            json!({"pattern": "dispose($X)", "rewrite": "$X.dispose()", "language": "dart"}),
        )
        .await;
    assert!(
        text(&staged).starts_with("(proposed) 2 replacements in 2 files"),
        "{}",
        text(&staged)
    );
    assert_eq!(
        staged.structured_content.clone().unwrap()["edit_id"],
        "edit_1"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib/a.dart")).unwrap(),
        "void a(Object x) {\n  dispose(x);\n}\n"
    );
    let accepted = server
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(!is_error(&accepted), "{}", text(&accepted));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib/b.dart")).unwrap(),
        "void b(Object y) {\n  y.dispose();\n  print('dispose(y)');\n}\n"
    );
}

#[tokio::test]
async fn ast_7_resolve_goes_through_the_approval_gate() {
    let dir = dart_project();
    let people = vec![
        Person::Accept(json!({"decision": "allow"})),
        Person::Accept(json!({"decision": "deny"})),
    ];
    let server = Server::start(dir.path(), &[], Client::answering(people)).await;
    let staged = server
        .call(
            "ast_edit",
            json!({"pattern": "dispose($X)", "rewrite": "$X.dispose()", "language": "dart"}),
        )
        .await;
    assert!(!is_error(&staged), "{}", text(&staged));
    let denied = server
        .call("resolve", json!({"edit_id": "edit_1", "action": "accept"}))
        .await;
    assert!(
        text(&denied).starts_with("`resolve` was not run: the person denied permission (card 2)"),
        "{}",
        text(&denied)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib/a.dart")).unwrap(),
        "void a(Object x) {\n  dispose(x);\n}\n"
    );
}

//! `agent-tools serve` driven by an MCP client.

use std::time::Duration;

use serde_json::json;

use crate::support::{Client, ERAS, Era, Person, Server, is_error, text, workspace};

#[tokio::test]
async fn prod_2_tools_list_shows_exactly_what_each_surface_sees() {
    for era in ERAS {
        let dir = workspace();
        let full = Server::start(
            dir.path(),
            &[],
            Client::answering(vec![Person::Decline]).in_era(era),
        )
        .await;
        assert_eq!(
            full.tool_names().await,
            [
                "apply_patch",
                "ask_user",
                "ast_edit",
                "ast_grep",
                "debug",
                "edit",
                "eval",
                "lsp",
                "lsp_code_action",
                "lsp_rename",
                "read",
                "resolve",
                "write"
            ]
        );
        for surface in ["plan", "readonly"] {
            let server = Server::start(
                dir.path(),
                &["--surface", surface],
                Client::answering(vec![Person::Decline]).in_era(era),
            )
            .await;
            assert_eq!(
                server.tool_names().await,
                ["ask_user", "ast_grep", "lsp", "read"],
                "surface {surface}"
            );
        }
    }
}

#[tokio::test]
async fn prod_2_tiers_map_onto_annotations_and_schemas_are_listed() {
    for era in ERAS {
        let dir = workspace();
        let server = Server::start(
            dir.path(),
            &[],
            Client::answering(vec![Person::Decline]).in_era(era),
        )
        .await;
        let tools = server.service.list_all_tools().await.unwrap();
        let read = tools.iter().find(|t| t.name == "read").unwrap();
        let annotations = read.annotations.clone().unwrap();
        assert_eq!(annotations.read_only_hint, Some(true));
        assert_eq!(read.input_schema["required"], json!(["path"]));
        assert_eq!(read.input_schema["additionalProperties"], json!(false));
        assert!(read.output_schema.as_ref().unwrap()["properties"]["total_lines"].is_object());
        assert!(
            read.description
                .as_deref()
                .unwrap()
                .starts_with("Read a text file:")
        );
        let write = tools
            .iter()
            .find(|t| t.name == "write")
            .unwrap()
            .annotations
            .clone()
            .unwrap();
        assert_eq!(
            (
                write.read_only_hint,
                write.destructive_hint,
                write.open_world_hint
            ),
            (Some(false), Some(true), Some(false))
        );
    }
}

#[tokio::test]
async fn core_4_a_write_call_on_the_plan_surface_is_refused() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--surface", "plan", "--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    let result = server
        .call("write", json!({"path": "notes.txt", "content": "gone"}))
        .await;
    assert!(is_error(&result));
    assert!(
        text(&result).starts_with(
            "`write` is a write-tier tool and the plan surface allows only read tools"
        )
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}

#[tokio::test]
async fn core_7_bad_arguments_return_an_error_naming_the_field() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    let result = server
        .call("read", json!({"path": "notes.txt", "offset": "two"}))
        .await;
    assert!(is_error(&result));
    assert_eq!(
        text(&result),
        "bad arguments for `read`: field `offset`: invalid type: string \"two\", expected usize; send an object of the \
         shape {path: string, offset?: integer, limit?: integer}"
    );
    let missing = server
        .call("edit", json!({"path": "notes.txt", "old_string": "alpha"}))
        .await;
    assert!(
        text(&missing).starts_with("bad arguments for `edit`: missing field `new_string`"),
        "{}",
        text(&missing)
    );
}

#[tokio::test]
async fn core_7_every_argument_is_held_to_the_published_schema_first() {
    // Bounds serde does not know are refused by name, whatever the operation, before the
    // tool looks for a server (issue 39: `line: 0` passed `lsp status`, and `lsp_rename`
    // blamed a missing server).
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    for (tool, arguments) in [
        ("lsp", json!({"operation": "status", "line": 0})),
        (
            "lsp_rename",
            json!({"path": "notes.txt", "line": 0, "symbol": "alpha", "new_name": "gamma"}),
        ),
        ("read", json!({"path": "notes.txt", "limit": 0})),
    ] {
        let result = server.call(tool, arguments).await;
        assert!(is_error(&result), "{tool}: {}", text(&result));
        let said = text(&result);
        assert!(
            said.starts_with(&format!("bad arguments for `{tool}`: field `")),
            "{tool}: {said}"
        );
        assert!(
            said.contains("less than the minimum of 1"),
            "{tool}: {said}"
        );
    }
}

#[tokio::test]
async fn prod_4_read_edit_and_patch_through_mcp() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    let read = server.call("read", json!({"path": "src/lib.rs"})).await;
    assert_eq!(
        text(&read),
        "   1\tpub fn answer() -> u32 {\n   2\t    41\n   3\t}\n"
    );
    assert_eq!(read.structured_content.unwrap()["total_lines"], 3);
    let edit = server
        .call(
            "edit",
            json!({"path": "src/lib.rs", "old_string": "41", "new_string": "42"}),
        )
        .await;
    // No Cargo.toml: the file is in no project, and the answer says it was not checked.
    assert_eq!(
        text(&edit),
        "Edited src/lib.rs: 1 replacement at line 2\n\nNot checked: src/lib.rs (no Cargo.toml \
         or rust-project.json beside it or above it: rust-analyzer has no project to check it \
         in)."
    );
    let patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n";
    let patched = server.call("apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        text(&patched),
        "Applied the patch to 1 file:\n  M notes.txt (+1 −1)"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    42\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
}

#[tokio::test]
async fn ask_5_ask_user_is_absent_for_a_client_without_elicitation() {
    for era in ERAS {
        let dir = workspace();
        let server =
            Server::start(dir.path(), &[], Client::without_elicitation().in_era(era)).await;
        assert_eq!(
            server.tool_names().await,
            [
                "apply_patch",
                "ast_edit",
                "ast_grep",
                "debug",
                "edit",
                "eval",
                "lsp",
                "lsp_code_action",
                "lsp_rename",
                "read",
                "resolve",
                "write"
            ]
        );
        let result = server.call("ask_user", json!({"question": "?"})).await;
        // A session without elicitation has no `ask_user` at all; a 2026-07-28 client, which
        // declares capabilities per request, is told this request cannot ask anyone.
        let expected = match era {
            Era::Session => "unknown tool `ask_user`",
            Era::Discover => {
                "`ask_user` is not available: this client declared no elicitation capability"
            }
        };
        assert!(is_error(&result));
        assert!(text(&result).starts_with(expected), "{}", text(&result));
    }
}

const QUESTION: &str = r#"{"question": "Which database?", "context": "The migration depends on it.",
    "options": [{"label": "Postgres", "description": "what production runs"}, {"label": "SQLite"}],
    "allow_free_text": true}"#;

#[tokio::test]
async fn ask_1_a_card_answered_through_elicitation() {
    for era in ERAS {
        let dir = workspace();
        let person = Person::Accept(json!({"selected": "Postgres", "answer": "version 16"}));
        let server =
            Server::start(dir.path(), &[], Client::answering(vec![person]).in_era(era)).await;
        let result = server
            .call("ask_user", serde_json::from_str(QUESTION).unwrap())
            .await;
        assert!(!is_error(&result));
        assert_eq!(
            text(&result),
            "Card 1 answered.\nSelected: \"Postgres\"\nThey wrote: version 16"
        );
        assert_eq!(
            result.structured_content.unwrap(),
            json!({"card": 1, "outcome": "answered", "selected": ["Postgres"], "text": "version 16"})
        );
        let cards = server.cards();
        assert_eq!(
            cards[0].0,
            "Card 1 · question from the agent\n\nWhich database?\n\nThe migration depends on it."
        );
        let schema = &cards[0].1;
        assert_eq!(
            schema["properties"]["selected"]["oneOf"][0],
            json!({"const": "Postgres", "title": "Postgres — what production runs"})
        );
        assert_eq!(schema["properties"]["skip"]["type"], "boolean");
    }
}

#[tokio::test]
async fn ask_3_skipped_and_declined_cards_succeed_with_the_instruction_to_proceed() {
    for era in ERAS {
        let dir = workspace();
        let people = vec![
            Person::Accept(json!({"skip": true})),
            Person::Decline,
            Person::Cancel,
        ];
        let server = Server::start(dir.path(), &[], Client::answering(people).in_era(era)).await;
        let question = serde_json::from_str(QUESTION).unwrap();
        let skipped = server.call("ask_user", question).await;
        assert!(!is_error(&skipped));
        assert_eq!(
            skipped.structured_content.clone().unwrap()["outcome"],
            "skipped"
        );
        assert!(text(&skipped).contains("do not ask this question again"));
        let declined = server
            .call("ask_user", serde_json::from_str(QUESTION).unwrap())
            .await;
        assert!(!is_error(&declined));
        assert_eq!(
            declined.structured_content.clone().unwrap()["outcome"],
            "declined"
        );
        assert!(text(&declined).starts_with("Card 2 was declined"));
        let dismissed = server
            .call("ask_user", serde_json::from_str(QUESTION).unwrap())
            .await;
        assert!(is_error(&dismissed));
        assert!(text(&dismissed).starts_with("card 3 was dismissed without an answer; proceed on"));
    }
}

#[tokio::test]
async fn ask_3_an_unanswered_card_expires_as_an_error() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("agent-tools.toml"),
        "[ask]\nexpiry_seconds = 1\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &[], Client::answering(vec![Person::Hang])).await;
    let result = server
        .call("ask_user", serde_json::from_str(QUESTION).unwrap())
        .await;
    assert!(is_error(&result));
    assert_eq!(
        text(&result),
        "card 1 expired after 1s without an answer; proceed on your own best assumption, say in your reply what you \
         assumed, and do not ask this question again"
    );
}

#[tokio::test]
async fn core_5_ask_without_elicitation_refuses_writes_at_once() {
    for era in ERAS {
        let dir = workspace();
        let server = Server::start(
            dir.path(),
            &["--approval", "ask"],
            Client::without_elicitation().in_era(era),
        )
        .await;
        let call = server.call("write", json!({"path": "notes.txt", "content": "gone"}));
        let result = tokio::time::timeout(Duration::from_secs(20), call)
            .await
            .expect("the refusal must not block");
        assert!(is_error(&result));
        let expected = match era {
            Era::Session => {
                "`write` was not run: the approval policy is `ask` and no approver is connected"
            }
            Era::Discover => {
                "`write` was not run: no approver is connected (this client declared no \
                 elicitation capability"
            }
        };
        assert!(text(&result).starts_with(expected), "{}", text(&result));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "alpha\nbeta\n"
        );
    }
}

#[tokio::test]
async fn core_5_approval_allow_lets_writes_through() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    let result = server
        .call("write", json!({"path": "notes.txt", "content": "kept"}))
        .await;
    assert_eq!(text(&result), "Replaced notes.txt (1 line, 4 bytes)");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn core_5_permission_cards_go_out_as_elicitation_and_only_allow_runs() {
    for era in ERAS {
        let dir = workspace();
        let people = vec![
            Person::Accept(json!({"decision": "deny"})),
            Person::Accept(json!({"decision": "allow"})),
        ];
        let server = Server::start(dir.path(), &[], Client::answering(people).in_era(era)).await;
        let denied = server
            .call("write", json!({"path": "notes.txt", "content": "first"}))
            .await;
        assert!(is_error(&denied));
        assert!(
            text(&denied).starts_with("`write` was not run: the person denied permission (card 1)")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "alpha\nbeta\n"
        );
        let allowed = server
            .call("write", json!({"path": "notes.txt", "content": "second"}))
            .await;
        assert!(!is_error(&allowed), "{}", text(&allowed));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "second"
        );
        let cards = server.cards();
        assert!(cards[1].0.starts_with(
            "Card 2 · permission request\n\nAllow the agent to run `write` (write tier)?"
        ));
        assert!(cards[1].0.contains("\"path\": \"notes.txt\""));
        assert_eq!(cards[1].1["required"], json!(["decision"]));
        assert!(cards[1].1["properties"].get("skip").is_none());
    }
}

#[tokio::test]
async fn core_5_a_card_the_client_declines_at_once_is_said_to_be_the_clients() {
    // Headless agent CLIs (`claude -p`, `codex exec`) answer permission cards themselves,
    // at once, without showing them to anyone (issue 39): the model must not be told that a
    // person refused.
    for era in ERAS {
        for (person, how) in [
            (Person::ClientDeclines, "declined"),
            (Person::ClientCancels, "cancelled"),
        ] {
            let dir = workspace();
            let client = Client::answering(vec![person]).in_era(era);
            let server = Server::start(dir.path(), &[], client).await;
            let refused = server
                .call("write", json!({"path": "notes.txt", "content": "first"}))
                .await;
            assert!(is_error(&refused));
            let said = text(&refused);
            let start = format!("`write` was not run: the client {how} permission card 1 ");
            assert!(said.starts_with(&start), "{era:?}: {said}");
            assert!(said.contains("without showing it to a person"), "{said}");
            assert!(
                said.contains("start the server with `--approval allow`"),
                "{said}"
            );
            assert!(!said.contains("the person"), "{said}");
        }
    }
}

#[tokio::test]
async fn ask_3_a_card_the_client_answers_at_once_is_not_said_to_be_a_persons() {
    // `codex exec` declines and `claude -p` dismisses every card themselves (issue 39): the
    // model keeps ASK-3's instruction, is told no person saw the card, and not to ask again.
    for era in ERAS {
        let people = vec![Person::ClientDeclines, Person::ClientCancels];
        let dir = workspace();
        let server = Server::start(dir.path(), &[], Client::answering(people).in_era(era)).await;
        let declined = server
            .call("ask_user", serde_json::from_str(QUESTION).unwrap())
            .await;
        assert!(!is_error(&declined));
        let said = text(&declined);
        assert!(said.starts_with("The client declined card 1 "), "{said}");
        let notes = declined.structured_content.clone().unwrap()["notes"].clone();
        assert_eq!(notes, json!([said]), "{era:?}");
        let dismissed = server
            .call("ask_user", serde_json::from_str(QUESTION).unwrap())
            .await;
        assert!(is_error(&dismissed));
        let said = text(&dismissed);
        assert!(said.starts_with("the client dismissed card 2 "), "{said}");
        for said in [text(&declined), said] {
            for needle in [
                "without showing it to a person",
                "do not ask this question again",
                "do not call ask_user again in this run",
            ] {
                assert!(said.contains(needle), "{needle}: {said}");
            }
            assert!(!said.contains("the person"), "{said}");
        }
    }
}

#[tokio::test]
async fn core_5_deny_policy_refuses_every_write() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "deny"],
        Client::answering(vec![Person::Decline]),
    )
    .await;
    let result = server
        .call(
            "edit",
            json!({"path": "notes.txt", "old_string": "alpha", "new_string": "x"}),
        )
        .await;
    assert!(text(&result).starts_with("`edit` was not run: this run's approval policy is `deny`"));
    assert!(server.cards().is_empty());
}

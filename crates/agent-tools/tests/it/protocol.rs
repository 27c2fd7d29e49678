//! The 2026-07-28 protocol beside 2025-11-25 (PROD-2): `server/discover`, cards answered as
//! `input_required` and resumed by an opaque handle, and long calls as tasks
//! (`io.modelcontextprotocol/tasks`) with their cards, progress and cancellation.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, DetailedTask, GetTaskParams,
    InputRequest, InputResponses, TaskPayload, UpdateTaskParams,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::eval::{python_ready, python_workspace};
use crate::support::{Client, ERAS, Era, Person, Server, is_error, text, workspace};

pub(crate) fn params(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

fn cell(code: &str) -> Value {
    json!({"code": code, "description": "a cell the protocol tests run"})
}

/// The JSON-RPC error a call was refused with.
fn refusal(result: Result<CallToolResponse, ServiceError>) -> String {
    match result {
        Err(ServiceError::McpError(error)) => error.message.to_string(),
        Err(other) => panic!("expected a JSON-RPC error, got {other}"),
        Ok(response) => panic!("expected a refusal, got {response:?}"),
    }
}

/// Polls `tasks/get` until the task leaves `working` (or a minute passes).
pub(crate) async fn settled(server: &Server, task_id: &str) -> DetailedTask {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let task = server
            .service
            .get_task(GetTaskParams::new(task_id))
            .await
            .unwrap()
            .task;
        if !matches!(task.payload, TaskPayload::Working) || Instant::now() > deadline {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Makes a call that must be answered as a task; its id.
pub(crate) async fn task_of(server: &Server, name: &str, arguments: Value) -> String {
    match server
        .service
        .call_tool_once(params(name, arguments))
        .await
        .unwrap()
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("`{name}` should have become a task: {other:?}"),
    }
}

/// Sends `tasks/cancel` and waits for the task to settle.
pub(crate) async fn cancelled(server: &Server, task_id: &str) -> DetailedTask {
    server
        .service
        .cancel_task(CancelTaskParams::new(task_id))
        .await
        .unwrap();
    settled(server, task_id).await
}

/// Makes a call and follows it to its end, polling its task when it became one; says
/// whether it did.
pub(crate) async fn call_to_end(
    server: &Server,
    name: &str,
    arguments: Value,
) -> (rmcp::model::CallToolResult, bool) {
    match server
        .service
        .call_tool_once(params(name, arguments))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(result) => (result, false),
        CallToolResponse::Task(created) => {
            let task = settled(server, &created.task.task_id).await;
            let TaskPayload::Completed { result } = task.payload else {
                panic!("`{name}` did not complete: {:?}", task.payload);
            };
            (serde_json::from_value(Value::Object(result)).unwrap(), true)
        }
        other => panic!("`{name}`: unexpected {other:?}"),
    }
}

#[tokio::test]
async fn prod_2_discover_names_both_protocols_tasks_and_instructions() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &[],
        Client::answering(vec![Person::Decline]).in_era(Era::Discover),
    )
    .await;
    let discovered = server
        .service
        .discover(rmcp::model::RequestMetaObject::default())
        .await
        .unwrap();
    let versions: Vec<String> = discovered
        .supported_versions
        .iter()
        .map(|v| v.as_str().to_owned())
        .collect();
    assert!(
        versions.contains(&"2026-07-28".to_owned()) && versions.contains(&"2025-11-25".to_owned()),
        "{versions:?}"
    );
    assert!(discovered.capabilities.supports_tasks());
    let instructions = discovered.instructions.clone().unwrap_or_default();
    for needle in [
        "Write and exec calls first ask the person",
        "persistent Python and JavaScript kernels",
        "debug, eval and lsp may run long and report progress",
    ] {
        assert!(instructions.contains(needle), "{needle}: {instructions}");
    }
    let tools = server.service.list_all_tools().await.unwrap();
    let read = tools.iter().find(|t| t.name == "read").unwrap();
    assert_eq!(read.title.as_deref(), Some("Read a file"));
    assert!(read.icons.is_none());
}

/// Asks `tool` with `arguments` on the 2026-07-28 protocol, lets its card expire, then sends
/// `answer` late with the handle: what the late request gets, and what a replay gets.
async fn answer_late(
    server: &Server,
    tool: &str,
    arguments: Value,
    answer: Value,
) -> (rmcp::model::CallToolResult, String) {
    let CallToolResponse::InputRequired(asked) = server
        .service
        .call_tool_once(params(tool, arguments.clone()))
        .await
        .unwrap()
    else {
        panic!("a 2026-07-28 card is an input_required answer");
    };
    let state = asked.request_state.clone().unwrap();
    let key = asked.input_requests.unwrap().keys().next().unwrap().clone();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut responses = InputResponses::new();
    responses.insert(key, answer);
    let late = |arguments: Value| {
        server.service.call_tool_once(
            params(tool, arguments)
                .with_input_responses(responses.clone())
                .with_request_state(state.clone()),
        )
    };
    let CallToolResponse::Complete(result) = late(arguments.clone()).await.unwrap() else {
        panic!("a late answer gets the call's result");
    };
    let replayed = refusal(late(arguments).await);
    (result, replayed)
}

/// ASK-3 and CORE-5 on the 2026-07-28 protocol: a card answered after it expired gets the
/// call's own expiry result — for `ask_user` the timeout error that says to go on with an
/// assumption and not ask again; for an approval card "not run" — once; a replay is refused.
#[tokio::test]
async fn ask_3_a_card_answered_after_its_expiry_gets_the_tools_expiry_result_in_2026() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("agent-tools.toml"),
        "[ask]\nexpiry_seconds = 1\n",
    )
    .unwrap();
    let server = Server::start(
        dir.path(),
        &["--approval", "ask"],
        Client::answering(vec![]).in_era(Era::Discover),
    )
    .await;
    let (asked, replayed) = answer_late(
        &server,
        "ask_user",
        json!({"question": "Which database?"}),
        json!({"action": "accept", "content": {"skip": true}}),
    )
    .await;
    assert!(is_error(&asked), "{}", text(&asked));
    assert_eq!(
        text(&asked),
        "card 1 expired after 1s without an answer; proceed on your own best assumption, say \
         in your reply what you assumed, and do not ask this question again"
    );
    assert!(
        replayed.starts_with("`requestState` does not name a call waiting on a card"),
        "{replayed}"
    );

    let (write, _) = answer_late(
        &server,
        "write",
        json!({"path": "late.txt", "content": "late"}),
        json!({"action": "accept", "content": {"decision": "allow"}}),
    )
    .await;
    assert!(is_error(&write), "{}", text(&write));
    assert!(
        text(&write).starts_with(
            "`write` was not run: permission card 2 got no answer within 1 s; do not retry"
        ),
        "{}",
        text(&write)
    );
    assert!(!dir.path().join("late.txt").exists(), "nothing was written");
}

#[tokio::test]
async fn ask_4_a_forged_or_replayed_resume_handle_is_refused() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "ask"],
        Client::answering(vec![Person::Decline]).in_era(Era::Discover),
    )
    .await;
    let write = json!({"path": "notes.txt", "content": "approved"});
    let CallToolResponse::InputRequired(asked) = server
        .service
        .call_tool_once(params("write", write.clone()))
        .await
        .unwrap()
    else {
        panic!("the approval card is an input_required answer");
    };
    let requests = asked.input_requests.clone().unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(key, "card-1");
    let InputRequest::Elicitation(request) = request else {
        panic!("the card is an elicitation request: {request:?}");
    };
    let form = serde_json::to_value(&request.params).unwrap();
    assert!(
        form["message"]
            .as_str()
            .unwrap()
            .starts_with("Card 1 · permission request"),
        "{form}"
    );
    assert_eq!(form["requestedSchema"]["required"], json!(["decision"]));
    let state = asked.request_state.clone().unwrap();
    assert!(state.len() >= 32, "the handle is long and random: {state}");
    let mut allow = InputResponses::new();
    allow.insert(
        key.clone(),
        json!({"action": "accept", "content": {"decision": "allow"}}),
    );

    // A forged handle, and the right one with other arguments, are refused; neither spends
    // the real one.
    let forged = server
        .service
        .call_tool_once(
            params("write", write.clone())
                .with_input_responses(allow.clone())
                .with_request_state("0".repeat(32)),
        )
        .await;
    assert!(refusal(forged).starts_with("`requestState` does not name a call waiting on a card"));
    let changed = server
        .service
        .call_tool_once(
            params("write", json!({"path": "notes.txt", "content": "smuggled"}))
                .with_input_responses(allow.clone())
                .with_request_state(state.clone()),
        )
        .await;
    assert!(
        refusal(changed).contains("belongs to a `write` call with other arguments"),
        "the handle is bound to its call"
    );
    let answered = server
        .service
        .call_tool_once(
            params("write", write.clone())
                .with_input_responses(allow.clone())
                .with_request_state(state.clone()),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = answered else {
        panic!("the answered call completes: {answered:?}");
    };
    assert!(!is_error(&done), "{}", text(&done));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "approved"
    );
    // Replaying the spent handle changes nothing.
    std::fs::write(dir.path().join("notes.txt"), "after").unwrap();
    let replayed = server
        .service
        .call_tool_once(
            params("write", write)
                .with_input_responses(allow)
                .with_request_state(state),
        )
        .await;
    assert!(
        refusal(replayed).contains("it was already answered"),
        "a spent handle is refused"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "after"
    );
}

#[tokio::test]
async fn prod_2_a_long_cell_is_a_task_polled_to_completion_and_a_short_one_answers_at_once() {
    if !python_ready() {
        return;
    }
    for era in ERAS {
        let (_dir, root) = python_workspace(120);
        let server = Server::start(
            &root,
            &["--approval", "allow"],
            Client::without_elicitation().in_era(era).with_tasks(),
        )
        .await;
        let quick = server
            .service
            .call_tool_once(params("eval", cell("x = 41\nx + 1")))
            .await
            .unwrap();
        let CallToolResponse::Complete(quick) = quick else {
            panic!("{era:?}: a quick cell answers at once: {quick:?}");
        };
        assert!(text(&quick).ends_with("42"), "{}", text(&quick));
        let long = server
            .service
            .call_tool_once(params(
                "eval",
                cell("import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(1)\nx * 2"),
            ))
            .await
            .unwrap();
        if era == Era::Session {
            // The extension is per request on 2026-07-28; a 2025-11-25 client that named it
            // at `initialize` (the MCP Inspector does) gets the cell's result when it ends.
            let CallToolResponse::Complete(done) = long else {
                panic!("{era:?}: a plain call on 2025-11-25 answers with its result: {long:?}");
            };
            assert!(text(&done).contains("step 3") && text(&done).ends_with("82"));
            continue;
        }
        let CallToolResponse::Task(created) = long else {
            panic!("{era:?}: a cell past the grace is a task: {long:?}");
        };
        let id = created.task.task_id.clone();
        // While it runs, its progress is the task's status message.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut status = None;
        while Instant::now() < deadline {
            let task = server
                .service
                .get_task(GetTaskParams::new(&id))
                .await
                .unwrap()
                .task;
            if task
                .task
                .status_message
                .as_deref()
                .is_some_and(|m| m.contains("step"))
            {
                status = task.task.status_message;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            status.is_some(),
            "{era:?}: the cell's output never reached the status"
        );
        let done = settled(&server, &id).await;
        // A finished task's status names the outcome, not the last progress line.
        let said = done.task.status_message.clone().unwrap_or_default();
        assert!(said.starts_with("`eval` completed"), "{era:?}: {said}");
        let TaskPayload::Completed { result } = done.payload else {
            panic!("{era:?}: the task completes");
        };
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("step 3") && text.ends_with("82"), "{text}");
        assert_eq!(result["isError"], json!(false));
    }
}

#[tokio::test]
async fn prod_2_cancelling_a_cell_task_interrupts_it_and_keeps_the_kernel() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(120);
    let server = Server::start(
        &root,
        &["--approval", "allow"],
        Client::without_elicitation()
            .in_era(Era::Discover)
            .with_tasks(),
    )
    .await;
    server
        .service
        .call_tool_once(params("eval", cell("kept = 'state'")))
        .await
        .unwrap();
    let id = task_of(
        &server,
        "eval",
        cell("import time\nfor i in range(600):\n    time.sleep(0.1)"),
    )
    .await;
    let task = cancelled(&server, &id).await;
    assert!(
        matches!(task.payload, TaskPayload::Cancelled),
        "{:?}",
        task.payload
    );
    let said = task.task.status_message.unwrap_or_default();
    assert!(
        said.contains("interrupt"),
        "the status says what happened: {said}"
    );
    let CallToolResponse::Complete(after) = server
        .service
        .call_tool_once(params("eval", cell("kept")))
        .await
        .unwrap()
    else {
        panic!("a quick cell answers at once");
    };
    assert!(text(&after).ends_with("'state'"), "{}", text(&after));
}

#[tokio::test]
async fn core_5_a_cells_write_under_ask_puts_its_task_in_input_required() {
    if !python_ready() {
        return;
    }
    // Tasks of the extension are the 2026-07-28 protocol's (per-request capabilities).
    for era in [Era::Discover] {
        let (_dir, root) = python_workspace(120);
        let server = Server::start(
            &root,
            &["--approval", "ask"],
            Client::answering(vec![Person::Decline])
                .in_era(era)
                .with_tasks(),
        )
        .await;
        // The cell itself is approved first, through the call (it raised its card before
        // becoming a task, so the call became a task at once).
        let code = "r = tool('write', {'path': 'notes.txt', 'content': 'from the cell'})\nstr(r)";
        let first = server
            .service
            .call_tool_once(params("eval", cell(code)))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = first else {
            panic!("{era:?}: a long call's card makes it a task: {first:?}");
        };
        let id = created.task.task_id.clone();
        for (round, expected) in [(1, "`eval` (exec tier)"), (2, "`write` (write tier)")] {
            let task = settled(&server, &id).await;
            let TaskPayload::InputRequired { input_requests } = task.payload else {
                panic!("{era:?}: round {round}: {:?}", task.payload);
            };
            let (key, request) = input_requests.iter().next().unwrap();
            let InputRequest::Elicitation(request) = request else {
                panic!("an elicitation request");
            };
            let message = serde_json::to_value(&request.params).unwrap()["message"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(message.contains(expected), "{era:?}: {message}");
            if round == 2 {
                assert!(
                    message.contains("Requested by a running `eval` call"),
                    "{message}"
                );
            }
            let mut allow = InputResponses::new();
            allow.insert(
                key.clone(),
                json!({"action": "accept", "content": {"decision": "allow"}}),
            );
            server
                .service
                .update_task(UpdateTaskParams::new(&id, allow))
                .await
                .unwrap();
        }
        let TaskPayload::Completed { result } = settled(&server, &id).await.payload else {
            panic!("{era:?}: the task completes");
        };
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("Replaced notes.txt"),
            "{result:?}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("notes.txt")).unwrap(),
            "from the cell"
        );
    }
}

#[tokio::test]
async fn prod_2_a_long_call_sends_progress_with_messages_to_a_client_that_gave_a_token() {
    if !python_ready() {
        return;
    }
    for era in ERAS {
        let (_dir, root) = python_workspace(120);
        let server = Server::start(
            &root,
            &["--approval", "allow"],
            Client::without_elicitation().in_era(era),
        )
        .await;
        let result = server
            .call(
                "eval",
                cell("import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.8)"),
            )
            .await;
        assert!(!is_error(&result), "{}", text(&result));
        let progress = server.client.progress.lock().unwrap().clone();
        assert!(
            progress
                .iter()
                .any(|p| p.message.as_deref().is_some_and(|m| m.contains("tick"))),
            "{era:?}: {progress:?}"
        );
    }
}

/// A server for a 2026-07-28 client with tasks, asking approval, with a task running a
/// ten-minute cell (its approval answered) and a write parked behind its card.
async fn busy_server(root: &std::path::Path) -> (Server, String) {
    let server = Server::start(
        root,
        &["--approval", "ask"],
        Client::answering(vec![Person::Hang])
            .in_era(Era::Discover)
            .with_tasks(),
    )
    .await;
    // A cell that needs approval is a task at once.
    let id = task_of(
        &server,
        "eval",
        cell("import time\nfor i in range(6000):\n    time.sleep(0.1)"),
    )
    .await;
    let TaskPayload::InputRequired { input_requests } = settled(&server, &id).await.payload else {
        panic!("the cell's approval is the task's input request");
    };
    let key = input_requests.keys().next().unwrap().clone();
    let mut allow = InputResponses::new();
    allow.insert(
        key,
        json!({"action": "accept", "content": {"decision": "allow"}}),
    );
    server
        .service
        .update_task(UpdateTaskParams::new(&id, allow))
        .await
        .unwrap();
    let kernel = crate::support::until_processes(&server.mark, |found| {
        found.iter().any(|p| p.contains("python"))
    })
    .await;
    assert!(
        kernel.iter().any(|p| p.contains("python")),
        "the cell's kernel started: {kernel:?}"
    );
    let parked = server
        .service
        .call_tool_once(params(
            "write",
            json!({"path": "notes.txt", "content": "never"}),
        ))
        .await
        .unwrap();
    assert!(matches!(parked, CallToolResponse::InputRequired(_)));
    (server, id)
}

#[tokio::test]
async fn prod_2_a_running_task_and_a_parked_call_leave_no_process_when_the_client_goes() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(600);
    let (server, _task) = busy_server(&root).await;
    let (pid, mark) = (server.pid, server.mark.clone());
    server.service.cancel().await.unwrap();
    assert!(
        crate::lifecycle::exited(pid),
        "serve did not exit after stdin closed"
    );
    let left = crate::support::until_processes(&mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after stdin closed: {left:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}

#[tokio::test]
async fn prod_2_a_running_task_and_a_parked_call_leave_no_process_after_sigterm() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(600);
    let (server, _task) = busy_server(&root).await;
    crate::lifecycle::signal(server.pid, rustix::process::Signal::TERM);
    assert!(
        crate::lifecycle::exited(server.pid),
        "serve did not exit after SIGTERM"
    );
    let left = crate::support::until_processes(&server.mark, <[String]>::is_empty).await;
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

#[tokio::test]
async fn prod_2_a_silent_long_call_still_reports_that_it_runs() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(120);
    let server = Server::start(
        &root,
        &["--approval", "allow"],
        Client::without_elicitation(),
    )
    .await;
    // No output for 11 s: a client that resets its call timeout on progress still hears
    // from the call.
    let result = server
        .call("eval", cell("import time\ntime.sleep(11)\n'done'"))
        .await;
    assert!(text(&result).ends_with("'done'"), "{}", text(&result));
    let progress = server.client.progress.lock().unwrap().clone();
    assert!(
        progress.iter().any(|p| p
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("`eval` is still running ("))),
        "{progress:?}"
    );
}

#[tokio::test]
async fn core_5_a_cells_write_under_ask_goes_round_by_round_without_tasks() {
    if !python_ready() {
        return;
    }
    let (_dir, root) = python_workspace(120);
    let allow = Person::Accept(json!({"decision": "allow"}));
    let server = Server::start(
        &root,
        &["--approval", "ask"],
        Client::answering(vec![allow]).in_era(Era::Discover),
    )
    .await;
    // rmcp's client answers each input_required round through its elicitation handler and
    // re-sends the call: first the cell's own approval, then the write the cell makes.
    let result = server
        .call(
            "eval",
            cell("r = tool('write', {'path': 'notes.txt', 'content': 'round by round'})\nstr(r)"),
        )
        .await;
    assert!(!is_error(&result), "{}", text(&result));
    assert!(
        text(&result).contains("Replaced notes.txt"),
        "{}",
        text(&result)
    );
    let cards: Vec<String> = server
        .cards()
        .into_iter()
        .map(|(message, _)| message)
        .collect();
    assert_eq!(cards.len(), 2, "{cards:?}");
    assert!(cards[0].contains("`eval` (exec tier)") && cards[1].contains("`write` (write tier)"));
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "round by round"
    );
}

#[tokio::test]
async fn ask_4_a_session_cannot_resume_by_request_state() {
    let dir = workspace();
    let server = Server::start(
        dir.path(),
        &["--approval", "ask"],
        Client::answering(vec![Person::Decline]),
    )
    .await;
    let refused = server
        .service
        .call_tool_once(
            params("write", json!({"path": "notes.txt", "content": "x"}))
                .with_request_state("0".repeat(32)),
        )
        .await;
    assert!(
        refusal(refused)
            .starts_with("`requestState` resumes a call only on the 2026-07-28 protocol")
    );
    assert!(server.cards().is_empty(), "nothing was asked");
}

//! Dispatch, stage by stage, with small tools made for the purpose.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::*;

/// Reads nothing, returns its input.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PeekInput {
    /// Some text.
    text: String,
    #[serde(default)]
    #[allow(dead_code)]
    items: Vec<Item>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    #[allow(dead_code)]
    label: String,
}

#[derive(Serialize, JsonSchema)]
struct Echo {
    text: String,
}

struct Peek;
impl Tool for Peek {
    type Input = PeekInput;
    type Output = Echo;
    const NAME: &'static str = "peek";
    const TIER: Tier = Tier::Read;
    async fn call(&self, _: CallContext, input: PeekInput) -> Result<ToolOutput<Echo>, ToolError> {
        Ok(ToolOutput::new(
            input.text.clone(),
            Echo { text: input.text },
        ))
    }
}

/// Pretends to write.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Empty {}

struct Poke;
impl Tool for Poke {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "poke";
    const TIER: Tier = Tier::Write;
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        Ok(ToolOutput::new(
            "poked",
            Echo {
                text: "poked".into(),
            },
        ))
    }
}

/// Counts how many of its calls run at once.
struct Spin {
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}
impl Tool for Spin {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "spin";
    const TIER: Tier = Tier::Exec;
    const PARALLEL_SAFE: bool = false;
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::new(
            "spun",
            Echo {
                text: "spun".into(),
            },
        ))
    }
}

/// Waits until two of its calls run at once.
struct Meet(Arc<tokio::sync::Barrier>);
impl Tool for Meet {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "meet";
    const TIER: Tier = Tier::Read;
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        self.0.wait().await;
        Ok(ToolOutput::new("met", Echo { text: "met".into() }))
    }
}

struct Boom;
impl Tool for Boom {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "boom";
    const TIER: Tier = Tier::Read;
    #[allow(clippy::panic)]
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        panic!("kaboom")
    }
}

/// Answers every card the same way, and remembers the cards.
struct Scripted {
    answer: Answer,
    seen: std::sync::Mutex<Vec<Card>>,
}
impl QuestionPort for Scripted {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        self.seen.lock().unwrap().push(card);
        let answer = self.answer.clone();
        Box::pin(async move {
            if answer == Answer::Expired {
                futures::future::pending::<()>().await;
            }
            answer
        })
    }
}

fn run(questions: Option<Arc<Questions>>) -> Run {
    Run {
        workspace: Workspace::new(std::env::temp_dir()).unwrap(),
        questions,
    }
}

fn dispatcher_with(
    questions: Option<Arc<Questions>>,
    options: DispatcherOptions,
    extra: impl FnOnce(&mut RegistryBuilder),
) -> Dispatcher {
    let mut builder = RegistryBuilder::new(run(questions));
    builder.register(Peek).register(Poke).register(Boom);
    extra(&mut builder);
    Dispatcher::new(builder.build(), options)
}

fn allow_all() -> DispatcherOptions {
    DispatcherOptions {
        approval: ApprovalPolicy::Allow,
        ..DispatcherOptions::default()
    }
}

async fn call(dispatcher: &Dispatcher, name: &str, arguments: serde_json::Value) -> ToolResult {
    dispatcher
        .dispatch(ToolCall {
            name: name.into(),
            arguments,
        })
        .await
}

fn names(dispatcher: &Dispatcher) -> Vec<&'static str> {
    dispatcher.tools().iter().map(|spec| spec.name).collect()
}

#[test]
fn core_4_each_surface_lists_exactly_its_tiers() {
    let on = |surface| {
        dispatcher_with(
            None,
            DispatcherOptions {
                surface,
                ..allow_all()
            },
            |_| {},
        )
    };
    assert_eq!(names(&on(Surface::Full)), ["boom", "peek", "poke"]);
    assert_eq!(names(&on(Surface::Plan)), ["boom", "peek"]);
    assert_eq!(names(&on(Surface::Readonly)), ["boom", "peek"]);
}

#[tokio::test]
async fn core_4_write_call_on_plan_surface_is_refused_at_dispatch() {
    let plan = dispatcher_with(
        None,
        DispatcherOptions {
            surface: Surface::Plan,
            ..allow_all()
        },
        |_| {},
    );
    let result = call(&plan, "poke", json!({})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text,
        "`poke` is a write-tier tool and the plan surface allows only read tools: it cannot be \
         called here; use read tools, or ask to leave plan mode"
    );
}

#[tokio::test]
async fn unknown_tool_lists_what_this_surface_has() {
    let plan = dispatcher_with(
        None,
        DispatcherOptions {
            surface: Surface::Plan,
            ..allow_all()
        },
        |_| {},
    );
    let result = call(&plan, "peak", json!({})).await;
    assert_eq!(
        result.text,
        "unknown tool `peak`: the tools on this surface are boom, peek"
    );
}

#[tokio::test]
async fn core_7_bad_arguments_name_the_field_and_the_expected_shape() {
    let d = dispatcher_with(None, allow_all(), |_| {});
    let expected = "send an object of the shape {text: string, items?: [{label: string}]}";
    let cases = [
        (json!({}), "bad arguments for `peek`: missing field `text`"),
        (
            json!({"text": 3}),
            "bad arguments for `peek`: field `text`: invalid type: integer `3`, expected a string",
        ),
        (
            json!({"text": "a", "items": [{"label": "x"}, {"label": false}]}),
            "bad arguments for `peek`: field `items[1].label`: invalid type: boolean `false`, expected a string",
        ),
        (
            json!({"text": "a", "txet": 1}),
            "bad arguments for `peek`: field `txet`: unknown field `txet`, expected `text` or `items`",
        ),
        (
            json!("text"),
            "bad arguments for `peek`: invalid type: string \"text\", expected struct PeekInput",
        ),
    ];
    for (arguments, message) in cases {
        let result = call(&d, "peek", arguments).await;
        assert!(result.is_error);
        assert_eq!(result.text, format!("{message}; {expected}"));
    }
}

#[tokio::test]
async fn results_carry_text_and_structured_content() {
    let d = dispatcher_with(None, allow_all(), |_| {});
    let result = call(&d, "peek", json!({"text": "hi"})).await;
    assert_eq!(
        result,
        ToolResult {
            text: "hi".into(),
            structured: Some(json!({"text": "hi"})),
            images: vec![],
            is_error: false,
            touched: vec![],
            previous: vec![],
        }
    );
}

#[tokio::test]
async fn core_5_policies_allow_deny_and_fail_closed_without_an_approver() {
    let allow = dispatcher_with(None, allow_all(), |_| {});
    assert!(!call(&allow, "poke", json!({})).await.is_error);

    let deny = dispatcher_with(
        None,
        DispatcherOptions {
            approval: ApprovalPolicy::Deny,
            ..allow_all()
        },
        |_| {},
    );
    let refused = call(&deny, "poke", json!({})).await;
    assert!(refused.is_error);
    assert!(
        refused
            .text
            .starts_with("`poke` was not run: this run's approval policy is `deny`")
    );
    // Read tools never pass the gate.
    assert!(!call(&deny, "peek", json!({"text": "x"})).await.is_error);

    let ask = dispatcher_with(None, DispatcherOptions::default(), |_| {});
    let refused = call(&ask, "poke", json!({})).await;
    assert!(refused.is_error);
    assert!(
        refused.text.contains("no approver is connected"),
        "{}",
        refused.text
    );
}

async fn ask_with(answer: Answer) -> (ToolResult, Vec<Card>) {
    let port = Arc::new(Scripted {
        answer,
        seen: Default::default(),
    });
    let questions = Arc::new(Questions::new(port.clone(), Duration::from_millis(50)));
    let d = dispatcher_with(Some(questions), DispatcherOptions::default(), |_| {});
    let result = call(&d, "poke", json!({})).await;
    let seen = port.seen.lock().unwrap().clone();
    (result, seen)
}

#[tokio::test]
async fn core_5_permission_cards_allow_only_on_an_explicit_allow() {
    let (result, cards) = ask_with(Answer::Answered {
        selected: vec!["allow".into()],
        text: None,
    })
    .await;
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].kind, CardKind::Permission);
    assert_eq!(
        cards[0].question,
        "Allow the agent to run `poke` (write tier)?"
    );
    assert!(cards[0].options.is_empty() && !cards[0].allow_free_text);

    for (answer, reason) in [
        (
            Answer::Answered {
                selected: vec!["deny".into()],
                text: None,
            },
            "the person denied permission (card 1)",
        ),
        (Answer::Declined, "the person declined permission (card 1)"),
        (
            Answer::Cancelled,
            "the person dismissed the permission card 1",
        ),
        (
            Answer::Expired,
            "permission card 1 expired without an answer",
        ),
        (
            Answer::NoHuman("stdin is not a terminal".into()),
            "no approver is connected (stdin is not a terminal)",
        ),
    ] {
        let (result, _) = ask_with(answer).await;
        assert!(result.is_error);
        assert!(
            result
                .text
                .starts_with(&format!("`poke` was not run: {reason}; ")),
            "{}",
            result.text
        );
    }
}

#[tokio::test]
async fn core_6_tools_that_are_not_parallel_safe_never_overlap() {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let d = dispatcher_with(None, allow_all(), |b| {
        b.register(Spin {
            running: running.clone(),
            most: most.clone(),
        });
        b.register(Meet(barrier));
    });
    let spins = (0..4).map(|_| call(&d, "spin", json!({})));
    futures::future::join_all(spins).await;
    assert_eq!(most.load(Ordering::SeqCst), 1);
    // Parallel-safe calls do overlap: two `meet` calls only finish together.
    let (a, b) = tokio::join!(call(&d, "meet", json!({})), call(&d, "meet", json!({})));
    assert!(!a.is_error && !b.is_error);
}

struct Suffix(&'static str);
impl Wrapper for Suffix {
    fn wraps(&self, tool: &str) -> bool {
        tool == "poke"
    }
    fn around<'a>(
        &'a self,
        _: &'a CallContext,
        _: &'a ToolCall,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let mut result = next().await;
            result.text.push_str(self.0);
            result
        })
    }
}

#[tokio::test]
async fn wrappers_run_around_the_tools_they_name_in_registration_order() {
    let d = dispatcher_with(None, allow_all(), |b| {
        b.wrap(Arc::new(Suffix(" +inner")))
            .wrap(Arc::new(Suffix(" +outer")));
    });
    // The first registered wrapper is outermost, so its suffix comes last.
    assert_eq!(
        call(&d, "poke", json!({})).await.text,
        "poked +outer +inner"
    );
    assert_eq!(call(&d, "peek", json!({"text": "x"})).await.text, "x");
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let d = dispatcher_with(None, allow_all(), |_| {});
    let result = call(&d, "boom", json!({})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text,
        "internal error in `boom`: the tool panicked: kaboom; the call may be retried"
    );
}

#[tokio::test]
async fn long_output_is_cut_with_a_note_saying_how_much() {
    let d = dispatcher_with(
        None,
        DispatcherOptions {
            max_output_bytes: 30,
            ..allow_all()
        },
        |_| {},
    );
    let text = "line one\nline two\nline three\nline four\n";
    let result = call(&d, "peek", json!({"text": text})).await;
    assert_eq!(
        result.text,
        "line one\nline two\nline three\n\n[output cut: showed the first 29 of 39 bytes; narrow the request \
         (a smaller range, a more specific path or pattern) to see the rest]"
    );
}

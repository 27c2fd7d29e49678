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
    const TITLE: &'static str = "Peek";
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
    const TITLE: &'static str = "Poke";
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
    const TITLE: &'static str = "Spin";
    const TIER: Tier = Tier::Exec;
    const LANE: Option<Lane> = Some(Lane::EVAL);
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
    const TITLE: &'static str = "Meet";
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
    const TITLE: &'static str = "Boom";
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
            // A person who declines or dismisses a card reads it first: longer than a client
            // that answers by itself (CORE-5).
            if matches!(
                answer,
                Answer::Declined | Answer::Cancelled | Answer::Skipped
            ) {
                tokio::time::sleep(UNSEEN_WITHIN).await;
            }
            answer
        })
    }
}

/// A client that answers every card at once, as headless agent CLIs do.
struct AtOnce(Answer);
impl QuestionPort for AtOnce {
    fn ask(&self, _card: Card) -> BoxFuture<'_, Answer> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

fn run(questions: Option<Arc<Questions>>) -> Run {
    Run::new(Workspace::new(std::env::temp_dir()).unwrap()).with_questions(questions)
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
            "bad arguments for `peek`: the arguments are a string, not an object of named fields",
        ),
        // An unknown field is refused whatever its value, `null` included (issue 39).
        (
            json!({"text": "a", "$schema": null}),
            "bad arguments for `peek`: field `$schema`: unknown field `$schema`, expected `text` or `items`",
        ),
        (
            json!({"text": "a", "__proto__": null}),
            "bad arguments for `peek`: field `__proto__`: unknown field `__proto__`, expected `text` or `items`",
        ),
        (
            json!({"text": "a", "": null}),
            "bad arguments for `peek`: unknown field ``, expected `text` or `items`",
        ),
    ];
    for (arguments, message) in cases {
        let result = call(&d, "peek", arguments).await;
        assert!(result.is_error);
        assert_eq!(result.text, format!("{message}; {expected}"));
    }
}

#[tokio::test]
async fn a_field_a_client_adds_to_every_call_is_ignored_and_said_so() {
    let d = dispatcher_with(None, allow_all(), |_| {});
    let result = call(&d, "peek", json!({"text": "hi", "wait_for_previous": true})).await;
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(
        result.text,
        "hi\n[note: ran without `wait_for_previous` (Gemini CLI adds it to every tool's schema \
         and call), which the tool does not take]"
    );
    assert_eq!(
        result.structured,
        Some(json!({"text": "hi", "ignored_arguments": ["wait_for_previous"]}))
    );
    // Optional fields the schema lists still read `null` as absent.
    let result = call(&d, "peek", json!({"text": "hi", "items": null})).await;
    assert!(!result.is_error, "{}", result.text);
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
    // The expiry the `Expired` case names; the others are answered well within theirs.
    let expiry = match answer {
        Answer::Expired => Duration::from_millis(50),
        _ => Duration::from_secs(5),
    };
    let port = Arc::new(Scripted {
        answer,
        seen: Default::default(),
    });
    let questions = Arc::new(Questions::new(port.clone(), expiry));
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
            "permission card 1 got no answer within 50 ms",
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
async fn core_5_a_card_answered_faster_than_a_person_can_is_said_to_be_the_clients() {
    for (answer, how) in [
        (Answer::Cancelled, "cancelled"),
        (Answer::Declined, "declined"),
    ] {
        let port = Arc::new(AtOnce(answer));
        let questions = Arc::new(Questions::new(port, Duration::from_secs(5)));
        let d = dispatcher_with(Some(questions), DispatcherOptions::default(), |_| {});
        let result = call(&d, "poke", json!({})).await;
        assert!(result.is_error);
        let prefix = format!("`poke` was not run: the client {how} permission card 1 ");
        assert!(result.text.starts_with(&prefix), "{}", result.text);
        for needle in [
            "without showing it to a person",
            "tell the user the change needs approval",
            "start the server with `--approval allow`",
        ] {
            assert!(result.text.contains(needle), "{needle}: {}", result.text);
        }
    }
    // A person's "deny", however quick, is theirs.
    let port = Arc::new(AtOnce(Answer::Answered {
        selected: vec!["deny".into()],
        text: None,
    }));
    let questions = Arc::new(Questions::new(port, Duration::from_secs(5)));
    let d = dispatcher_with(Some(questions), DispatcherOptions::default(), |_| {});
    let result = call(&d, "poke", json!({})).await;
    assert!(
        result
            .text
            .contains("the person denied permission (card 1)"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn core_6_calls_on_one_lane_never_overlap() {
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

#[tokio::test]
async fn core_6_a_call_waiting_for_its_lane_says_so() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let d = dispatcher_with(None, allow_all(), |b| {
        b.register(Patient(stopped.clone()));
    });
    let holder = tokio_util::sync::CancellationToken::new();
    let patient = |options: CallOptions| {
        let d = d.clone();
        let call = ToolCall {
            name: "patient".into(),
            arguments: json!({}),
        };
        tokio::spawn(async move { d.dispatch_with(call, options).await })
    };
    let first = patient(CallOptions {
        cancel: Some(holder.clone()),
        ..CallOptions::default()
    });
    while d.inner.calls.is_empty() {
        tokio::task::yield_now().await;
    }
    // Let the first call take the lane.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink: ProgressSink = {
        let reports = reports.clone();
        Arc::new(move |p: Progress| reports.lock().unwrap().push(p.message))
    };
    let second = patient(CallOptions {
        progress: Some(sink),
        ..CallOptions::default()
    });
    while reports.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        reports.lock().unwrap()[0],
        "waiting for the `eval` lane: another `eval` call is still running, and calls on one \
         lane take turns"
    );
    holder.cancel();
    first.await.unwrap();
    d.shutdown(Duration::from_secs(1)).await;
    second.await.unwrap();
}

struct Suffix(&'static str);
impl Wrapper for Suffix {
    fn wraps(&self, spec: &ToolSpec) -> bool {
        spec.name == "poke"
    }
    fn around<'a>(
        &'a self,
        _: &'a CallContext,
        _: &'a ToolCall,
        _: &'a Writes,
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

/// Drops a required field from `poke`'s structured result, as a tool that skips an empty
/// field its schema requires would.
struct DropsText;
impl Wrapper for DropsText {
    fn wraps(&self, spec: &ToolSpec) -> bool {
        spec.name == "poke"
    }
    fn around<'a>(
        &'a self,
        _: &'a CallContext,
        _: &'a ToolCall,
        _: &'a Writes,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let mut result = next().await;
            result.structured = Some(json!({"txet": "poked"}));
            result
        })
    }
}

#[tokio::test]
async fn a_structured_result_off_its_schema_fails_the_test_build() {
    let d = dispatcher_with(None, allow_all(), |b| {
        b.wrap(Arc::new(DropsText));
    });
    let result = call(&d, "poke", json!({})).await;
    assert!(result.is_error);
    assert!(
        result
            .text
            .contains("the structured result does not match the output schema"),
        "{}",
        result.text
    );
    assert!(
        result.text.contains(r#""text" is a required property"#),
        "{}",
        result.text
    );
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

/// Calls another tool through its bridge and returns what that call answered.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RelayInput {
    tool: String,
    #[serde(default)]
    arguments: serde_json::Value,
}

macro_rules! relay_tool {
    ($ty:ident, $name:literal, $lane:expr, $tier:expr) => {
        struct $ty;
        impl Tool for $ty {
            type Input = RelayInput;
            type Output = Echo;
            const NAME: &'static str = $name;
            const TITLE: &'static str = $name;
            const TIER: Tier = $tier;
            const LANE: Option<Lane> = $lane;
            async fn call(
                &self,
                context: CallContext,
                input: RelayInput,
            ) -> Result<ToolOutput<Echo>, ToolError> {
                relay(context, input).await
            }
        }
    };
}

async fn relay(context: CallContext, input: RelayInput) -> Result<ToolOutput<Echo>, ToolError> {
    let bridge = context.bridge().expect("dispatched calls have a bridge");
    let nested = bridge
        .call(ToolCall {
            name: input.tool,
            arguments: input.arguments,
        })
        .await;
    let text = format!(
        "{}{}",
        if nested.is_error { "error: " } else { "" },
        nested.text
    );
    Ok(ToolOutput::new(text.clone(), Echo { text }))
}

relay_tool!(Cell, "cell", Some(Lane::EVAL), Tier::Read);
relay_tool!(Step, "step", Some(Lane::DEBUG), Tier::Read);
relay_tool!(Hop, "hop", None, Tier::Read);

/// Waits for its cancellation, then stops cleanly (a graceful tool).
struct Patient(Arc<AtomicUsize>);
impl Tool for Patient {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "patient";
    const TITLE: &'static str = "Patient";
    const TIER: Tier = Tier::Read;
    const LANE: Option<Lane> = Some(Lane::EVAL);
    const GRACEFUL_CANCEL: bool = true;
    async fn call(&self, context: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        context.progress_of("working", 1.0, Some(3.0));
        context.cancellation().cancelled().await;
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(ToolError::failed("interrupted cleanly"))
    }
}

/// Never returns and ignores cancellation.
struct Stuck;
impl Tool for Stuck {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "stuck";
    const TITLE: &'static str = "Stuck";
    const TIER: Tier = Tier::Read;
    const LANE: Option<Lane> = Some(Lane::EVAL);
    const GRACEFUL_CANCEL: bool = true;
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        futures::future::pending().await
    }
}

fn bridged(options: DispatcherOptions) -> Dispatcher {
    dispatcher_with(None, options, |b| {
        b.register(Cell).register(Step).register(Hop);
    })
}

#[tokio::test]
async fn core_8_a_bridge_call_into_a_lane_its_caller_holds_is_refused_at_once() {
    let d = bridged(allow_all());
    let result = call(
        &d,
        "cell",
        json!({"tool": "cell", "arguments": {"tool": "peek"}}),
    )
    .await;
    assert_eq!(
        result.text,
        "error: `cell` was not run: it runs on the `eval` lane, which the `cell` call that made \
         this nested call already holds, so it would wait on itself; make this call after that \
         one returns"
    );
    // Through an intermediate tool with no lane, the ancestor's lane is still held.
    let result = call(
        &d,
        "cell",
        json!({"tool": "hop", "arguments": {"tool": "cell", "arguments": {"tool": "peek"}}}),
    )
    .await;
    assert!(
        result.text.contains("`cell` was not run"),
        "{}",
        result.text
    );
    // Another lane is fine, and reaches the innermost tool.
    let result = call(
        &d,
        "cell",
        json!({"tool": "step", "arguments": {"tool": "peek", "arguments": {"text": "deep"}}}),
    )
    .await;
    assert_eq!(result.text, "deep");
}

#[tokio::test]
async fn core_8_a_bridge_call_on_the_plan_surface_is_refused_as_a_models_would_be() {
    let d = bridged(DispatcherOptions {
        surface: Surface::Plan,
        ..allow_all()
    });
    let result = call(&d, "cell", json!({"tool": "poke"})).await;
    assert_eq!(
        result.text,
        "error: `poke` is a write-tier tool and the plan surface allows only read tools: it \
         cannot be called here; use read tools, or ask to leave plan mode"
    );
    // Argument errors and the output limit apply too.
    let result = call(&d, "cell", json!({"tool": "peek", "arguments": {"txt": 1}})).await;
    assert!(
        result.text.starts_with("error: bad arguments for `peek`"),
        "{}",
        result.text
    );
}

#[tokio::test]
async fn core_8_bridge_approval_cards_say_who_asked() {
    let port = Arc::new(Scripted {
        answer: Answer::Answered {
            selected: vec!["allow".into()],
            text: None,
        },
        seen: Default::default(),
    });
    let questions = Arc::new(Questions::new(port.clone(), Duration::from_millis(50)));
    let d = dispatcher_with(Some(questions), DispatcherOptions::default(), |b| {
        b.register(Cell);
    });
    let result = call(&d, "cell", json!({"tool": "poke"})).await;
    assert_eq!(result.text, "poked");
    let cards = port.seen.lock().unwrap().clone();
    let details = cards[0].context.clone().unwrap_or_default();
    assert!(
        details.starts_with("Requested by a running `cell` call, not by the model directly"),
        "{details}"
    );
}

#[tokio::test]
async fn ask_4_a_calls_asker_takes_its_cards_and_its_bridged_calls_cards_in_the_runs_sequence() {
    let allow = Answer::Answered {
        selected: vec!["allow".into()],
        text: None,
    };
    let run_port = Arc::new(Scripted {
        answer: allow.clone(),
        seen: Default::default(),
    });
    let asker = Arc::new(Scripted {
        answer: allow,
        seen: Default::default(),
    });
    let questions = Arc::new(Questions::new(run_port.clone(), Duration::from_millis(50)));
    let d = dispatcher_with(Some(questions), DispatcherOptions::default(), |b| {
        b.register(Cell);
    });
    assert_eq!(call(&d, "poke", json!({})).await.text, "poked");
    let options = CallOptions {
        asker: Some(asker.clone() as Arc<dyn QuestionPort>),
        ..CallOptions::default()
    };
    let call = ToolCall {
        name: "cell".into(),
        arguments: json!({"tool": "poke"}),
    };
    assert_eq!(d.dispatch_with(call, options).await.text, "poked");
    let numbers = |port: &Scripted| -> Vec<u64> {
        port.seen.lock().unwrap().iter().map(|c| c.number).collect()
    };
    // The run's port saw only the call made without an asker; the bridged call's card went
    // where its parent's cards go, numbered on in the run's one sequence.
    assert_eq!(numbers(&run_port), [1]);
    assert_eq!(numbers(&asker), [2]);
}

#[tokio::test]
async fn core_8_nesting_stops_at_the_depth_cap() {
    let d = bridged(allow_all());
    // hop → hop → hop → hop → hop: the fifth nested call is one too deep.
    let mut arguments = json!({"tool": "peek", "arguments": {"text": "bottom"}});
    for _ in 0..MAX_BRIDGE_DEPTH {
        arguments = json!({"tool": "hop", "arguments": arguments});
    }
    let result = call(&d, "hop", arguments.clone()).await;
    assert!(
        result.text.contains(
            "nested tool calls may go 4 levels deep and this one, from `hop`, would be level 5"
        ),
        "{}",
        result.text
    );
    // One level less reaches the bottom.
    let result = call(&d, "hop", arguments["arguments"].clone()).await;
    assert_eq!(result.text, "bottom");
}

#[tokio::test]
async fn cancelling_a_call_lets_a_graceful_tool_stop_and_frees_its_lane() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let d = dispatcher_with(None, allow_all(), |b| {
        b.register(Patient(stopped.clone()))
            .register(Stuck)
            .register(Cell);
    });
    let token = tokio_util::sync::CancellationToken::new();
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink: ProgressSink = {
        let reports = reports.clone();
        Arc::new(move |p: Progress| reports.lock().unwrap().push(p))
    };
    let first = {
        let d = d.clone();
        let token = token.clone();
        tokio::spawn(async move {
            d.dispatch_with(
                ToolCall {
                    name: "patient".into(),
                    arguments: json!({}),
                },
                CallOptions {
                    cancel: Some(token),
                    progress: Some(sink),
                    ..CallOptions::default()
                },
            )
            .await
        })
    };
    while reports.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        reports.lock().unwrap()[0],
        Progress {
            message: "working".into(),
            done: Some(1.0),
            total: Some(3.0)
        }
    );
    token.cancel();
    let result = first.await.unwrap();
    assert_eq!(result.text, "interrupted cleanly");
    assert_eq!(stopped.load(Ordering::SeqCst), 1);
    // The lane is free: another eval call runs.
    assert_eq!(
        call(
            &d,
            "cell",
            json!({"tool": "peek", "arguments": {"text": "next"}})
        )
        .await
        .text,
        "next"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_ignores_cancellation_is_dropped_after_the_grace() {
    let d = dispatcher_with(
        None,
        DispatcherOptions {
            cancel_grace: Duration::from_secs(2),
            ..allow_all()
        },
        |b| {
            b.register(Stuck).register(Cell);
        },
    );
    let token = tokio_util::sync::CancellationToken::new();
    let stuck = {
        let d = d.clone();
        let token = token.clone();
        tokio::spawn(async move {
            d.dispatch_with(
                ToolCall {
                    name: "stuck".into(),
                    arguments: json!({}),
                },
                CallOptions {
                    cancel: Some(token),
                    ..CallOptions::default()
                },
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    token.cancel();
    let result = stuck.await.unwrap();
    assert_eq!(
        result.text,
        "`stuck` was cancelled before it finished; anything it had already changed stays \
         changed — check before calling it again"
    );
    assert_eq!(
        call(
            &d,
            "cell",
            json!({"tool": "peek", "arguments": {"text": "free"}})
        )
        .await
        .text,
        "free"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_callers_future_cancels_the_call() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let d = dispatcher_with(None, allow_all(), |b| {
        b.register(Patient(stopped.clone()));
    });
    let call_future = call(&d, "patient", json!({}));
    // The caller gives up after a moment.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), call_future)
            .await
            .is_err()
    );
    for _ in 0..100 {
        if stopped.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        stopped.load(Ordering::SeqCst),
        1,
        "the tool saw its cancellation"
    );
}

struct Resource(Arc<AtomicUsize>, Duration);
impl Shutdown for Resource {
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            tokio::time::sleep(self.1).await;
            self.0.fetch_add(1, Ordering::SeqCst);
        })
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_cancels_calls_then_stops_resources_within_its_bound() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let d = dispatcher_with(None, allow_all(), |b| {
        b.register(Patient(stopped.clone()));
        b.run()
            .on_shutdown("quick", Arc::new(Resource(stopped.clone(), Duration::ZERO)));
        b.run().on_shutdown(
            "slow",
            Arc::new(Resource(stopped.clone(), Duration::from_secs(60))),
        );
    });
    let running = {
        let d = d.clone();
        tokio::spawn(async move { call(&d, "patient", json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    let summary = d.shutdown(Duration::from_secs(3)).await;
    assert_eq!(
        summary,
        ShutdownSummary {
            calls_cancelled: 1,
            calls_ended: true,
            stopped: vec!["quick".into()],
            timed_out: vec!["slow".into()],
        }
    );
    assert_eq!(running.await.unwrap().text, "interrupted cleanly");
    assert!(d.is_closing());
    let refused = call(&d, "peek", json!({"text": "x"})).await;
    assert_eq!(refused.text, "`peek` was not run: the run is shutting down");
}

/// Writes only when told to; refuses `"no"` before anything else happens.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GuardedInput {
    /// `no` is refused by the check.
    text: String,
}

struct Guarded {
    ran: Arc<AtomicUsize>,
}
impl Tool for Guarded {
    type Input = GuardedInput;
    type Output = Echo;
    const NAME: &'static str = "poke";
    const TITLE: &'static str = "Guarded poke";
    const TIER: Tier = Tier::Write;
    async fn check(&self, input: &GuardedInput, _: &Workspace) -> Result<(), ToolError> {
        match input.text.as_str() {
            "no" => Err(ToolError::failed("`text` is `no`: nothing to poke")),
            _ => Ok(()),
        }
    }
    async fn call(
        &self,
        _: CallContext,
        input: GuardedInput,
    ) -> Result<ToolOutput<Echo>, ToolError> {
        self.ran.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::new(
            input.text.clone(),
            Echo { text: input.text },
        ))
    }
}

#[tokio::test]
async fn a_check_refuses_before_the_card_and_every_wrapper() {
    let scripted = Arc::new(Scripted {
        answer: Answer::Answered {
            selected: vec!["allow".into()],
            text: None,
        },
        seen: Default::default(),
    });
    let questions = Arc::new(Questions::new(
        Arc::clone(&scripted) as Arc<dyn QuestionPort>,
        Duration::from_secs(5),
    ));
    let ran = Arc::new(AtomicUsize::new(0));
    let mut builder = RegistryBuilder::new(run(Some(questions)));
    builder
        .register(Guarded {
            ran: Arc::clone(&ran),
        })
        .wrap(Arc::new(Suffix(" +wrapped")));
    let d = Dispatcher::new(builder.build(), DispatcherOptions::default());
    let refused = call(&d, "poke", json!({"text": "no"})).await;
    assert!(refused.is_error);
    assert_eq!(refused.text, "`text` is `no`: nothing to poke");
    assert!(scripted.seen.lock().unwrap().is_empty(), "a card was shown");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    // A call that passes its check is asked about, wrapped and run as before.
    let done = call(&d, "poke", json!({"text": "yes"})).await;
    assert_eq!(done.text, "yes +wrapped");
    assert_eq!(scripted.seen.lock().unwrap().len(), 1);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// Writes files, as far as its flag says.
struct Scribble;
impl Tool for Scribble {
    type Input = Empty;
    type Output = Echo;
    const NAME: &'static str = "scribble";
    const TITLE: &'static str = "Scribble";
    const TIER: Tier = Tier::Write;
    const WRITES_FILES: bool = true;
    async fn call(&self, _: CallContext, _: Empty) -> Result<ToolOutput<Echo>, ToolError> {
        Ok(ToolOutput::new("scribbled", Echo { text: "s".into() }))
    }
}

#[test]
fn lsp_6_a_writing_tools_output_schema_gains_the_optional_diagnostics_report() {
    let writes = Scribble.output_schema();
    let properties = writes["properties"].as_object().unwrap();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["text", "diagnostics", "ignored_arguments"],
        "the tool's own fields and the report, side by side (and what every result may say of \
         fields its client added)"
    );
    assert_eq!(
        writes["required"],
        json!(["text"]),
        "the report is optional"
    );
    assert!(
        properties["diagnostics"]
            .to_string()
            .contains("\"unchecked_dependents\""),
        "{:#}",
        properties["diagnostics"]
    );
    // The same output, from a tool that writes nothing, has no report.
    let reads = Poke.output_schema();
    assert!(reads["properties"].get("diagnostics").is_none());
    assert_eq!(reads["required"], json!(["text"]));
}

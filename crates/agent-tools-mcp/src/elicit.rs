//! A question port over MCP elicitation: each card becomes a form the client shows its user.

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use tools_core::{Answer, Card, CardKind, QuestionPort};

/// Shows cards through the connected client's elicitation support (PROD-2).
pub struct ElicitationPort {
    peer: Peer<RoleServer>,
}

impl ElicitationPort {
    /// A port that asks through `peer`, which must have declared form elicitation.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        ElicitationPort { peer }
    }
}

impl QuestionPort for ElicitationPort {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        Box::pin(async move { elicit(&self.peer, &card).await })
    }
}

/// Asks `card` of the person behind `peer` as an elicitation form, and reads the answer.
pub(crate) async fn elicit(peer: &Peer<RoleServer>, card: &Card) -> Answer {
    let params = match form_params(card) {
        Ok(params) => params,
        Err(problem) => return Answer::NoHuman(problem.to_string()),
    };
    match peer.create_elicitation(params).await {
        Ok(result) => answer_for(card, result),
        Err(error) => Answer::NoHuman(format!(
            "the client did not answer the elicitation request: {error}"
        )),
    }
}

/// A card whose form the elicitation schema does not take (a wiring bug: every card's form
/// is built here).
#[derive(Debug, thiserror::Error)]
#[error("the card could not be turned into a form: {0}")]
pub(crate) struct FormError(#[source] serde_json::Error);

/// The card as an elicitation form: what a 2025-11-25 client is sent as a request, and a
/// 2026-07-28 client inside `input_required` or a task's input requests.
pub(crate) fn form_params(card: &Card) -> Result<ElicitRequestParams, FormError> {
    let schema = ElicitationSchema::from_json_schema(form_for(card)).map_err(FormError)?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message_for(card),
        requested_schema: schema,
    })
}

/// What the person did with `card`, from the client's elicitation result.
pub(crate) fn answer_for(card: &Card, result: ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => read_form(card, result.content.unwrap_or(Value::Null)),
        ElicitationAction::Decline => Answer::Declined,
        _ => Answer::Cancelled,
    }
}

/// The text above the form.
pub(crate) fn message_for(card: &Card) -> String {
    let kind = match card.kind {
        CardKind::Question => "question from the agent",
        CardKind::Permission => "permission request",
    };
    let mut message = format!("Card {} · {kind}\n\n{}", card.number, card.question);
    if let Some(context) = &card.context {
        message.push_str("\n\n");
        message.push_str(context);
    }
    message
}

/// The form's schema: for a question, the options (single or multi), a free-text field and a
/// skip box; for a permission, one required allow/deny choice and nothing else.
pub(crate) fn form_for(card: &Card) -> Map<String, Value> {
    let titled: Vec<Value> = card
        .options
        .iter()
        .map(|option| {
            let title = match &option.description {
                Some(description) => format!("{} — {description}", option.label),
                None => option.label.clone(),
            };
            json!({"const": option.label, "title": title})
        })
        .collect();
    let mut properties = Map::new();
    let mut required = Vec::new();
    match card.kind {
        CardKind::Permission => {
            properties.insert(
                "decision".into(),
                json!({"type": "string", "title": "Decision", "oneOf": [
                    {"const": "allow", "title": "Allow"},
                    {"const": "deny", "title": "Deny"},
                ]}),
            );
            required.push("decision");
        }
        CardKind::Question => {
            if !titled.is_empty() {
                let selected = if card.multi_select {
                    json!({"type": "array", "title": "Pick any", "items": {"anyOf": titled}})
                } else {
                    json!({"type": "string", "title": "Pick one", "oneOf": titled})
                };
                properties.insert("selected".into(), selected);
            }
            if card.allow_free_text {
                properties.insert(
                    "answer".into(),
                    json!({"type": "string", "title": "Your answer"}),
                );
            }
            properties.insert(
                "skip".into(),
                json!({
                    "type": "boolean",
                    "title": "Skip this question",
                    "description": "The agent will go on with its own stated assumption.",
                    "default": false,
                }),
            );
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(required));
    schema
}

/// Reads an accepted form back into an answer.
pub(crate) fn read_form(card: &Card, content: Value) -> Answer {
    let field = |name: &str| content.get(name).cloned().unwrap_or(Value::Null);
    if card.kind == CardKind::Permission {
        let decision = field("decision").as_str().unwrap_or("deny").to_owned();
        return Answer::Answered {
            selected: vec![decision],
            text: None,
        };
    }
    if field("skip").as_bool() == Some(true) {
        return Answer::Skipped;
    }
    let selected = match field("selected") {
        Value::String(label) => vec![label],
        Value::Array(labels) => labels
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let text = field("answer")
        .as_str()
        .map(str::to_owned)
        .filter(|t| !t.trim().is_empty());
    Answer::Answered { selected, text }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tools_core::CardOption;

    use super::*;

    fn card(kind: CardKind, multi: bool) -> Card {
        Card {
            number: 2,
            kind,
            question: "Which?".into(),
            context: None,
            options: vec![
                CardOption {
                    label: "a".into(),
                    description: Some("first".into()),
                },
                CardOption {
                    label: "b".into(),
                    description: None,
                },
            ],
            allow_free_text: true,
            multi_select: multi,
            expires_in: Duration::from_secs(1),
        }
    }

    #[test]
    fn ask_2_forms_are_valid_elicitation_schemas() {
        for card in [
            card(CardKind::Question, false),
            card(CardKind::Question, true),
            card(CardKind::Permission, false),
        ] {
            let form = form_for(&card);
            ElicitationSchema::from_json_schema(form.clone())
                .unwrap_or_else(|e| panic!("{e}: {form:?}"));
        }
    }

    #[test]
    fn ask_3_forms_read_back_as_answers() {
        let single = card(CardKind::Question, false);
        assert_eq!(
            read_form(&single, json!({"selected": "a"})),
            Answer::Answered {
                selected: vec!["a".into()],
                text: None
            }
        );
        assert_eq!(
            read_form(&single, json!({"skip": true, "selected": "a"})),
            Answer::Skipped
        );
        let multi = card(CardKind::Question, true);
        assert_eq!(
            read_form(&multi, json!({"selected": ["a", "b"], "answer": "both"})),
            Answer::Answered {
                selected: vec!["a".into(), "b".into()],
                text: Some("both".into())
            }
        );
        let permission = card(CardKind::Permission, false);
        assert!(read_form(&permission, json!({"decision": "allow"})).allows());
        assert!(!read_form(&permission, json!({})).allows());
    }
}

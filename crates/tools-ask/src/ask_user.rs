//! The `ask_user` tool: a numbered card, and what each way of answering it means for the agent.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{
    Answer, CallContext, Card, CardKind, CardOption, Questions, Tier, Tool, ToolError, ToolOutput,
};

/// Ask the person running this session and wait for the answer. Only when the work cannot
/// sensibly go on without a human decision (a design trade-off, a missing requirement,
/// permission for something risky), never for what the code tells. They may pick an option,
/// type, or skip; a skip is not an error: proceed on a stated assumption, do not ask again.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserInput {
    /// One or two sentences, answerable without reading the code.
    pub question: String,
    /// Why you ask, what depends on it.
    #[serde(default)]
    pub context: Option<String>,
    /// Choices, most likely first; none for an open question.
    #[serde(default)]
    pub options: Vec<AskOption>,
    /// May they type an answer (default: only without options)?
    #[serde(default)]
    pub allow_free_text: Option<bool>,
    /// Whether several options may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

// One choice on the card (no doc comment: it would repeat in the schema).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskOption {
    /// Short and unique; what comes back when picked.
    pub label: String,
    /// What picking it means.
    #[serde(default)]
    pub description: Option<String>,
}

/// How a card ended, when it ended well enough to be a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The person answered.
    Answered,
    /// The person skipped the question: proceed on a stated assumption.
    Skipped,
    /// The person declined to answer: proceed on a stated assumption.
    Declined,
}

/// The answer to a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AskUserOutput {
    /// The card's number in this run.
    pub card: u64,
    /// How the card ended.
    pub outcome: Outcome,
    /// The labels of the options picked, in card order.
    pub selected: Vec<String>,
    /// What the person typed, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What to do now, when the card gave no answer (ASK-3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `ask_user` tool, bound to the run's question desk.
pub struct AskUser {
    questions: Arc<Questions>,
}

impl AskUser {
    /// `ask_user` asking through `questions`.
    pub fn new(questions: Arc<Questions>) -> Self {
        AskUser { questions }
    }
}

const PROCEED: &str = "proceed on your own best assumption, say in your reply what you assumed, and do not ask this question again";

impl Tool for AskUser {
    type Input = AskUserInput;
    type Output = AskUserOutput;
    const NAME: &'static str = "ask_user";
    const TITLE: &'static str = "Ask the user";
    const TIER: Tier = Tier::Read;
    // Its whole purpose is the card: a client that takes none is not offered it (ASK-5).
    const NEEDS_PERSON: bool = true;

    async fn call(
        &self,
        _context: CallContext,
        input: AskUserInput,
    ) -> Result<ToolOutput<AskUserOutput>, ToolError> {
        let card = card_for(input)?;
        let labels: Vec<String> = card.options.iter().map(|o| o.label.clone()).collect();
        let asked = tokio::time::Instant::now();
        let (number, answer) = self.questions.ask(card).await;
        // A card declined or dismissed faster than anyone reads it was the client's answer
        // (headless agent CLIs answer cards themselves): the model is not told a person
        // refused, and is told that asking again gets the same.
        let took = asked.elapsed();
        if answer.unseen(took) {
            let how = match answer {
                Answer::Declined => "declined",
                _ => "dismissed",
            };
            let note = format!(
                "the client {how} card {number} {} ms after it was sent, without showing it to a \
                 person; {PROCEED}, and do not call ask_user again in this run: this client \
                 answers every card the same way",
                took.as_millis()
            );
            return match answer {
                Answer::Declined => Ok(ToolOutput::new(
                    capitalise(&note),
                    AskUserOutput {
                        card: number,
                        outcome: Outcome::Declined,
                        selected: vec![],
                        text: None,
                        notes: vec![capitalise(&note)],
                    },
                )),
                _ => Err(ToolError::failed(note)),
            };
        }
        // The instruction a card without an answer carries (ASK-3) is said in the text and
        // kept in the structure, which is all that some clients show the model.
        let output = |outcome, selected, text, notes| AskUserOutput {
            card: number,
            outcome,
            selected,
            text,
            notes,
        };
        match answer {
            Answer::Answered { selected, text } => {
                // Keep card order and drop anything that is not an option on the card.
                let selected: Vec<String> = labels
                    .into_iter()
                    .filter(|label| selected.contains(label))
                    .collect();
                let text = text.filter(|t| !t.trim().is_empty());
                let mut lines = vec![format!("Card {number} answered.")];
                if !selected.is_empty() {
                    let quoted: Vec<String> = selected.iter().map(|s| format!("\"{s}\"")).collect();
                    lines.push(format!("Selected: {}", quoted.join(", ")));
                }
                if let Some(text) = &text {
                    lines.push(format!("They wrote: {text}"));
                }
                let mut notes = Vec::new();
                if selected.is_empty() && text.is_none() {
                    notes.push(format!("The answer was empty: {PROCEED}."));
                    lines.extend(notes.iter().cloned());
                }
                Ok(ToolOutput::new(
                    lines.join("\n"),
                    output(Outcome::Answered, selected, text, notes),
                ))
            }
            Answer::Skipped => {
                let note = format!(
                    "the person chose not to answer. Do not treat this as an error: {PROCEED}."
                );
                Ok(ToolOutput::new(
                    format!("Card {number} was skipped: {note}"),
                    output(Outcome::Skipped, vec![], None, vec![note]),
                ))
            }
            Answer::Declined => {
                let note = format!(
                    "the person does not want to answer it. {}.",
                    capitalise(PROCEED)
                );
                Ok(ToolOutput::new(
                    format!("Card {number} was declined: {note}"),
                    output(Outcome::Declined, vec![], None, vec![note]),
                ))
            }
            Answer::Cancelled => Err(ToolError::failed(format!(
                "card {number} was dismissed without an answer; {PROCEED}"
            ))),
            Answer::Expired => Err(ToolError::failed(format!(
                "card {number} expired after {} without an answer; {PROCEED}",
                humanise(self.questions.expiry())
            ))),
            Answer::NoHuman(reason) => Err(ToolError::failed(format!(
                "no person is connected to answer questions ({reason}); {PROCEED}, and do not call ask_user again in this run"
            ))),
        }
    }
}

/// Checks the input and turns it into a card; every refusal says what to send instead.
fn card_for(input: AskUserInput) -> Result<Card, ToolError> {
    if input.question.trim().is_empty() {
        return Err(ToolError::failed(
            "`question` is empty: write the question the person should answer",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (index, option) in input.options.iter().enumerate() {
        if option.label.trim().is_empty() {
            return Err(ToolError::failed(format!(
                "`options[{index}].label` is empty: give every option a short label"
            )));
        }
        if !seen.insert(option.label.as_str()) {
            return Err(ToolError::failed(format!(
                "`options[{index}].label` repeats \"{}\": labels must be unique on a card",
                option.label
            )));
        }
    }
    if input.multi_select && input.options.is_empty() {
        return Err(ToolError::failed(
            "`multi_select` is true but there are no `options`: add options to pick from, or drop multi_select",
        ));
    }
    let allow_free_text = input.allow_free_text.unwrap_or(input.options.is_empty());
    if input.options.is_empty() && !allow_free_text {
        return Err(ToolError::failed(
            "the card has no `options` and `allow_free_text` is false, so it cannot be answered: add options or allow free text",
        ));
    }
    Ok(Card {
        number: 0,
        kind: CardKind::Question,
        question: input.question,
        context: input.context.filter(|c| !c.trim().is_empty()),
        options: input
            .options
            .into_iter()
            .map(|o| CardOption {
                label: o.label,
                description: o.description.filter(|d| !d.trim().is_empty()),
            })
            .collect(),
        allow_free_text,
        multi_select: input.multi_select,
        expires_in: std::time::Duration::ZERO,
    })
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `90s` → "1m 30s", `600s` → "10m".
pub(crate) fn humanise(duration: std::time::Duration) -> String {
    let seconds = duration.as_secs();
    match (seconds / 60, seconds % 60) {
        (0, 0) => format!("{}ms", duration.as_millis()),
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m {s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tools_core::{Run, Workspace};

    use tools_test_support::Scripted;

    fn input(value: serde_json::Value) -> AskUserInput {
        serde_json::from_value(value).unwrap()
    }

    async fn ask(
        answer: Answer,
        value: serde_json::Value,
    ) -> (Result<ToolOutput<AskUserOutput>, ToolError>, Vec<Card>) {
        let port = Arc::new(Scripted::new(answer));
        let questions = Arc::new(Questions::new(port.clone(), Duration::from_millis(30)));
        let context = CallContext::detached(Arc::new(
            Run::new(Workspace::new(std::env::temp_dir()).unwrap())
                .with_questions(Some(questions.clone())),
        ));
        let result = AskUser::new(questions).call(context, input(value)).await;
        let cards = port.cards();
        (result, cards)
    }

    fn db_question() -> serde_json::Value {
        serde_json::json!({
            "question": "Which database should the service use?",
            "context": "The schema migration depends on it.",
            "options": [{"label": "Postgres", "description": "what production runs"}, {"label": "SQLite"}],
            "allow_free_text": true,
            "multi_select": true,
        })
    }

    #[tokio::test]
    async fn ask_2_the_card_carries_everything_the_agent_sent() {
        let (_, cards) = ask(Answer::Skipped, db_question()).await;
        let card = &cards[0];
        assert_eq!(card.number, 1);
        assert_eq!(card.kind, CardKind::Question);
        assert_eq!(card.question, "Which database should the service use?");
        assert_eq!(
            card.context.as_deref(),
            Some("The schema migration depends on it.")
        );
        assert_eq!(
            card.options[0].description.as_deref(),
            Some("what production runs")
        );
        assert!(card.allow_free_text && card.multi_select);
    }

    #[tokio::test]
    async fn ask_1_an_answer_comes_back_in_card_order() {
        let answer = Answer::Answered {
            selected: vec!["SQLite".into(), "Postgres".into()],
            text: Some("both, behind a trait".into()),
        };
        let (result, _) = ask(answer, db_question()).await;
        let output = result.unwrap();
        assert_eq!(
            output.text,
            "Card 1 answered.\nSelected: \"Postgres\", \"SQLite\"\nThey wrote: both, behind a trait"
        );
        assert_eq!(output.structured.selected, ["Postgres", "SQLite"]);
    }

    #[tokio::test]
    async fn ask_3_a_skip_is_success_with_the_instruction_to_proceed() {
        let (result, _) = ask(Answer::Skipped, db_question()).await;
        let output = result.unwrap();
        assert_eq!(output.structured.outcome, Outcome::Skipped);
        assert!(
            output
                .text
                .contains("say in your reply what you assumed, and do not ask this question again")
        );
    }

    #[tokio::test]
    async fn ask_3_expiry_is_an_error_with_the_same_instruction() {
        let (result, _) = ask(Answer::Expired, db_question()).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "card 1 expired after 30ms without an answer; proceed on your own best assumption, say in \
             your reply what you assumed, and do not ask this question again"
        );
    }

    /// A server leaves `ask_user` out for a client that takes no cards because its spec says
    /// it needs a person, not because of its name.
    #[test]
    fn ask_5_ask_user_says_it_needs_a_person() {
        let port = Arc::new(Scripted::new(Answer::Skipped));
        let questions = Arc::new(Questions::new(port, Duration::from_secs(1)));
        let run =
            Run::new(Workspace::new(std::env::temp_dir()).unwrap()).with_questions(Some(questions));
        let mut builder = tools_core::RegistryBuilder::new(run);
        crate::register(&mut builder);
        let registry = builder.build();
        assert!(registry.spec("ask_user").unwrap().needs_person);
    }

    #[tokio::test]
    async fn ask_5_no_human_fails_at_once() {
        let (result, _) = ask(
            Answer::NoHuman("standard input is not a terminal".into()),
            db_question(),
        )
        .await;
        assert!(result.unwrap_err().to_string().starts_with(
            "no person is connected to answer questions (standard input is not a terminal)"
        ));
    }

    #[tokio::test]
    async fn unanswerable_cards_are_refused_before_anyone_is_asked() {
        let cases = [
            (serde_json::json!({"question": " "}), "`question` is empty"),
            (
                serde_json::json!({"question": "q", "multi_select": true}),
                "`multi_select` is true but there are no `options`",
            ),
            (
                serde_json::json!({"question": "q", "allow_free_text": false}),
                "the card has no `options` and `allow_free_text` is false",
            ),
            (
                serde_json::json!({"question": "q", "options": [{"label": "a"}, {"label": "a"}]}),
                "`options[1].label` repeats \"a\"",
            ),
        ];
        for (value, start) in cases {
            let (result, cards) = ask(Answer::Skipped, value).await;
            let message = result.unwrap_err().to_string();
            assert!(message.starts_with(start), "{message}");
            assert!(cards.is_empty());
        }
    }
}

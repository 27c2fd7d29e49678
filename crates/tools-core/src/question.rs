//! Cards for a person: the question port that `ask_user` and the approval gate share
//! (ASK-4), the card they show, and the answers that can come back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;

/// Where cards go to be answered by a person: an MCP client's elicitation, a terminal, a UI.
///
/// A port only shows the card and reports what the person did; numbering and expiry are
/// enforced by [`Questions`], so every port behaves the same.
pub trait QuestionPort: Send + Sync + 'static {
    /// Shows `card` and waits for the person. The future may be dropped when the card expires.
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer>;
}

/// What kind of card is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind {
    /// A question from the agent (`ask_user`): may be skipped.
    Question,
    /// A permission request from the approval gate: allow or deny, no skip (CORE-5).
    Permission,
}

/// One choice on a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardOption {
    /// What the person picks.
    pub label: String,
    /// What picking it means, when the label alone does not say.
    pub description: Option<String>,
}

/// A numbered card shown to a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The run-wide number, so a person can tell cards apart ("card 3").
    pub number: u64,
    /// Question or permission.
    pub kind: CardKind,
    /// The question itself, or what permission is asked for.
    pub question: String,
    /// Why it is asked and what depends on it.
    pub context: Option<String>,
    /// Choices; empty for a free-text question. A permission card has none: allow/deny is
    /// implied by its kind.
    pub options: Vec<CardOption>,
    /// Whether the person may type an answer of their own.
    pub allow_free_text: bool,
    /// Whether several options may be picked.
    pub multi_select: bool,
    /// How long the card stays open.
    pub expires_in: Duration,
}

/// What the person did with a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// They answered: the options they picked (by label) and any text they typed. On a
    /// permission card, `selected` is `["allow"]` or `["deny"]`.
    Answered {
        selected: Vec<String>,
        text: Option<String>,
    },
    /// They chose to skip the question.
    Skipped,
    /// They declined to answer.
    Declined,
    /// They dismissed the card without a choice.
    Cancelled,
    /// Nobody answered before the card expired.
    Expired,
    /// No person is connected to answer; the reason says why.
    NoHuman(String),
}

/// How soon a card's answer without content comes for it to count as a client's own, not a
/// person's: nobody reads a permission card and dismisses it this fast. Headless agent CLIs
/// do (issue 39: `claude -p` cancels a card after about 0.1 s, `codex exec` declines it at
/// once) without showing it to anyone.
pub const UNSEEN_WITHIN: Duration = Duration::from_millis(300);

impl Answer {
    /// Whether a client, not a person, gave this answer: the card declined or dismissed,
    /// with no content, sooner than anyone reads it ([`UNSEEN_WITHIN`]) after it was sent.
    pub fn unseen(&self, took: Duration) -> bool {
        took < UNSEEN_WITHIN && matches!(self, Answer::Declined | Answer::Cancelled)
    }

    /// Whether this answer grants a permission card: only an explicit "allow" does.
    pub fn allows(&self) -> bool {
        matches!(self, Answer::Answered { selected, .. } if selected.iter().any(|s| s == "allow"))
    }
}

/// A port with nobody behind it: every card fails at once (ASK-5), never blocking.
#[derive(Debug, Clone)]
pub struct NoHuman {
    /// Why nobody can answer, e.g. "standard input is not a terminal".
    pub reason: String,
}

impl QuestionPort for NoHuman {
    fn ask(&self, _card: Card) -> BoxFuture<'_, Answer> {
        let reason = self.reason.clone();
        Box::pin(async move { Answer::NoHuman(reason) })
    }
}

/// A run's question desk: the port, the card counter and the expiry, shared by `ask_user`
/// and the approval gate so both number their cards in one sequence.
pub struct Questions {
    port: Arc<dyn QuestionPort>,
    next_number: AtomicU64,
    expiry: Duration,
}

impl Questions {
    /// A desk over `port` whose cards expire after `expiry`.
    pub fn new(port: Arc<dyn QuestionPort>, expiry: Duration) -> Self {
        Questions {
            port,
            next_number: AtomicU64::new(1),
            expiry,
        }
    }

    /// How long a card stays open.
    pub fn expiry(&self) -> Duration {
        self.expiry
    }

    /// Numbers `card`, shows it, and waits at most the expiry for the answer. It goes where
    /// the running call's cards go ([`crate::CallOptions::asker`]), or to the run's port.
    pub async fn ask(&self, card: Card) -> (u64, Answer) {
        let asker = crate::CallContext::current().and_then(|context| context.asker);
        self.ask_through(asker.as_ref(), card).await
    }

    /// [`Questions::ask`] through `asker` when given, else the run's port.
    pub async fn ask_through(
        &self,
        asker: Option<&Arc<dyn QuestionPort>>,
        mut card: Card,
    ) -> (u64, Answer) {
        card.number = self.next_number.fetch_add(1, Ordering::Relaxed);
        card.expires_in = self.expiry;
        let number = card.number;
        let port = asker.unwrap_or(&self.port);
        let answer = match tokio::time::timeout(self.expiry, port.ask(card)).await {
            Ok(answer) => answer,
            Err(_elapsed) => Answer::Expired,
        };
        (number, answer)
    }

    /// Asks for permission: allow or deny, nothing else (CORE-5).
    pub async fn ask_permission(&self, question: String, context: Option<String>) -> (u64, Answer) {
        self.ask(self.permission_card(question, context)).await
    }

    /// [`Questions::ask_permission`] through `asker` when given, else the run's port.
    pub async fn ask_permission_through(
        &self,
        asker: Option<&Arc<dyn QuestionPort>>,
        question: String,
        context: Option<String>,
    ) -> (u64, Answer) {
        self.ask_through(asker, self.permission_card(question, context))
            .await
    }

    fn permission_card(&self, question: String, context: Option<String>) -> Card {
        Card {
            number: 0,
            kind: CardKind::Permission,
            question,
            context,
            options: Vec::new(),
            allow_free_text: false,
            multi_select: false,
            expires_in: self.expiry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Never;
    impl QuestionPort for Never {
        fn ask(&self, _card: Card) -> BoxFuture<'_, Answer> {
            Box::pin(futures::future::pending())
        }
    }

    #[tokio::test]
    async fn ask_3_cards_expire_and_are_numbered_in_one_sequence() {
        let desk = Questions::new(Arc::new(Never), Duration::from_millis(20));
        let (first, answer) = desk.ask_permission("write a file".into(), None).await;
        assert_eq!((first, answer), (1, Answer::Expired));
        let (second, _) = desk.ask_permission("write another".into(), None).await;
        assert_eq!(second, 2);
    }

    #[tokio::test]
    async fn ask_5_no_human_answers_at_once() {
        let desk = Questions::new(
            Arc::new(NoHuman {
                reason: "nobody".into(),
            }),
            Duration::from_secs(3600),
        );
        let (_, answer) = desk.ask_permission("write".into(), None).await;
        assert_eq!(answer, Answer::NoHuman("nobody".into()));
        assert!(!answer.allows());
    }
}

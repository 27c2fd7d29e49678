//! Stand-ins for what cannot exist on a test machine, speaking the real interface: a person
//! answering cards, and a tool beside the family under test.

use std::sync::Mutex;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{Answer, CallContext, Card, QuestionPort, Tier, Tool, ToolError, ToolOutput};

/// A person who gives every card the same answer and remembers the cards; one who lets
/// cards expire ([`Answer::Expired`]) never answers at all.
pub struct Scripted {
    answer: Answer,
    cards: Mutex<Vec<Card>>,
}

impl Scripted {
    /// A person who answers `answer`.
    pub fn new(answer: Answer) -> Self {
        Scripted {
            answer,
            cards: Mutex::new(Vec::new()),
        }
    }

    /// Every card shown so far, in order.
    pub fn cards(&self) -> Vec<Card> {
        self.cards.lock().unwrap().clone()
    }
}

impl QuestionPort for Scripted {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        self.cards.lock().unwrap().push(card);
        let answer = self.answer.clone();
        Box::pin(async move {
            if answer == Answer::Expired {
                futures::future::pending::<()>().await;
            }
            answer
        })
    }
}

/// Says hello to `name`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HelloInput {
    /// Who to greet.
    pub name: String,
}

/// The greeting.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HelloOutput {
    /// `hello, NAME`.
    pub greeting: String,
}

/// A read-tier tool that greets: something to call beside the tools under test (a cell's
/// `tool()`, a worker's bridge). An empty name is a failed call.
pub struct Hello;

impl Tool for Hello {
    type Input = HelloInput;
    type Output = HelloOutput;
    const NAME: &'static str = "hello";
    const TITLE: &'static str = "Say hello";
    const TIER: Tier = Tier::Read;

    async fn call(
        &self,
        _context: CallContext,
        input: HelloInput,
    ) -> Result<ToolOutput<HelloOutput>, ToolError> {
        if input.name.is_empty() {
            return Err(ToolError::failed("say who to greet"));
        }
        let greeting = format!("hello, {}", input.name);
        Ok(ToolOutput::new(greeting.clone(), HelloOutput { greeting }))
    }
}

//! `ask_user`: the run's one way to ask the operator something (SPEC section 6).
//!
//! The port abstraction itself lives in tools-core, because the approval gate in dispatch
//! shows its permission cards through the same port (ASK-4).

mod ask_user;
mod family;

pub use crate::ask_user::{AskOption, AskUser, AskUserInput, AskUserOutput, Outcome};

pub use crate::family::AskFamily;

use tools_core::RegistryBuilder;

/// Registers `ask_user` when the run has a question port (ASK-5, CORE-1); otherwise nothing.
pub fn register(builder: &mut RegistryBuilder) {
    if let Some(questions) = builder.run().questions.clone() {
        builder.register(AskUser::new(questions));
    }
}

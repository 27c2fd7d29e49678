//! A question port on a terminal: the card is printed to the terminal and the answer is read
//! from a line of input. `agent-tools call` uses it when standard input is a terminal.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tools_core::{Answer, Card, CardKind, QuestionPort};

type Io = (Box<dyn BufRead + Send>, Box<dyn Write + Send>);

/// Asks on a terminal (or any line reader and writer).
pub struct TerminalPort {
    io: Arc<Mutex<Io>>,
}

impl TerminalPort {
    /// Reads answers from standard input and prints cards on standard error, so standard
    /// output stays the tool's result.
    pub fn stdio() -> Self {
        Self::new(
            Box::new(std::io::BufReader::new(std::io::stdin())),
            Box::new(std::io::stderr()),
        )
    }

    /// Reads answers from `input` and prints cards to `output`.
    pub fn new(input: Box<dyn BufRead + Send>, output: Box<dyn Write + Send>) -> Self {
        TerminalPort {
            io: Arc::new(Mutex::new((input, output))),
        }
    }
}

impl QuestionPort for TerminalPort {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        let io = Arc::clone(&self.io);
        Box::pin(async move {
            let asked = tokio::task::spawn_blocking(move || {
                let mut guard = io
                    .lock()
                    .map_err(|_| std::io::Error::other("terminal lock poisoned"))?;
                let (input, output) = &mut *guard;
                converse(&card, input.as_mut(), output.as_mut())
            })
            .await;
            match asked {
                Ok(Ok(answer)) => answer,
                Ok(Err(error)) => {
                    Answer::NoHuman(format!("the terminal could not be read: {error}"))
                }
                Err(error) => Answer::NoHuman(format!("the terminal prompt failed: {error}")),
            }
        })
    }
}

/// Prints the card, then reads lines until one parses; end of input dismisses the card.
fn converse(
    card: &Card,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> std::io::Result<Answer> {
    output.write_all(render(card).as_bytes())?;
    loop {
        output.write_all(prompt(card).as_bytes())?;
        output.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(Answer::Cancelled);
        }
        match parse(card, line.trim()) {
            Ok(answer) => return Ok(answer),
            Err(problem) => writeln!(output, "  {problem}")?,
        }
    }
}

/// The card as the person sees it.
pub(crate) fn render(card: &Card) -> String {
    let kind = match card.kind {
        CardKind::Question => "question",
        CardKind::Permission => "permission",
    };
    let mut text = format!("\n── card {} · {kind} ──\n{}\n", card.number, card.question);
    if let Some(context) = &card.context {
        text.push_str(context);
        text.push('\n');
    }
    for (index, option) in card.options.iter().enumerate() {
        text.push_str(&format!("  {}. {}", index + 1, option.label));
        if let Some(description) = &option.description {
            text.push_str(&format!(" — {description}"));
        }
        text.push('\n');
    }
    text
}

fn prompt(card: &Card) -> String {
    match card.kind {
        CardKind::Permission => "allow? [a]llow / [d]eny: ".to_owned(),
        CardKind::Question => {
            let mut ways = Vec::new();
            if !card.options.is_empty() {
                ways.push(if card.multi_select {
                    "numbers like 1,3"
                } else {
                    "a number"
                });
            }
            if card.allow_free_text {
                ways.push("your answer");
            }
            format!("{}; /skip or /decline: ", ways.join(" or "))
        }
    }
}

/// Reads one line of input as an answer to `card`.
pub(crate) fn parse(card: &Card, line: &str) -> Result<Answer, String> {
    if card.kind == CardKind::Permission {
        return match line.to_ascii_lowercase().as_str() {
            "a" | "allow" | "y" | "yes" => Ok(Answer::Answered {
                selected: vec!["allow".into()],
                text: None,
            }),
            "d" | "deny" | "n" | "no" => Ok(Answer::Answered {
                selected: vec!["deny".into()],
                text: None,
            }),
            _ => Err("type a to allow or d to deny".to_owned()),
        };
    }
    match line {
        "/skip" => return Ok(Answer::Skipped),
        "/decline" => return Ok(Answer::Declined),
        "" => return Err("the answer is empty: answer, or type /skip".to_owned()),
        _ => {}
    }
    if !card.options.is_empty() {
        let picks: Result<Vec<usize>, _> = line
            .split(',')
            .map(|part| part.trim().parse::<usize>())
            .collect();
        if let Ok(picks) = picks {
            if picks.len() > 1 && !card.multi_select {
                return Err("pick one number".to_owned());
            }
            let mut selected = Vec::new();
            for pick in picks {
                match card.options.get(pick.wrapping_sub(1)) {
                    Some(option) => selected.push(option.label.clone()),
                    None => {
                        return Err(format!(
                            "there is no option {pick}: pick 1 to {}",
                            card.options.len()
                        ));
                    }
                }
            }
            return Ok(Answer::Answered {
                selected,
                text: None,
            });
        }
    }
    if card.allow_free_text {
        return Ok(Answer::Answered {
            selected: Vec::new(),
            text: Some(line.to_owned()),
        });
    }
    Err(format!("pick a number from 1 to {}", card.options.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tools_core::CardOption;

    fn card(kind: CardKind, options: &[&str], free: bool, multi: bool) -> Card {
        Card {
            number: 4,
            kind,
            question: "Which one?".into(),
            context: Some("It matters.".into()),
            options: options
                .iter()
                .map(|l| CardOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            allow_free_text: free,
            multi_select: multi,
            expires_in: Duration::from_secs(60),
        }
    }

    fn answered(selected: &[&str], text: Option<&str>) -> Answer {
        Answer::Answered {
            selected: selected.iter().map(|s| (*s).into()).collect(),
            text: text.map(Into::into),
        }
    }

    #[test]
    fn numbers_pick_options_text_is_free_and_commands_skip() {
        let multi = card(CardKind::Question, &["a", "b", "c"], true, true);
        assert_eq!(parse(&multi, "1, 3"), Ok(answered(&["a", "c"], None)));
        assert_eq!(parse(&multi, "neither"), Ok(answered(&[], Some("neither"))));
        assert_eq!(parse(&multi, "/skip"), Ok(Answer::Skipped));
        assert_eq!(parse(&multi, "/decline"), Ok(Answer::Declined));
        assert_eq!(
            parse(&multi, "4"),
            Err("there is no option 4: pick 1 to 3".into())
        );
        let single = card(CardKind::Question, &["a", "b"], false, false);
        assert_eq!(parse(&single, "1,2"), Err("pick one number".into()));
        assert_eq!(
            parse(&single, "whatever"),
            Err("pick a number from 1 to 2".into())
        );
    }

    #[test]
    fn permission_cards_take_allow_or_deny_only() {
        let permission = card(CardKind::Permission, &[], false, false);
        assert!(parse(&permission, "a").unwrap().allows());
        assert!(!parse(&permission, "deny").unwrap().allows());
        assert!(parse(&permission, "/skip").is_err());
    }

    #[test]
    fn the_conversation_retries_bad_input_and_end_of_input_dismisses() {
        let question = card(CardKind::Question, &["a", "b"], false, false);
        let mut out = Vec::new();
        let answer = converse(&question, &mut "9\n2\n".as_bytes(), &mut out).unwrap();
        assert_eq!(answer, answered(&["b"], None));
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(
            shown,
            "\n── card 4 · question ──\nWhich one?\nIt matters.\n  1. a\n  2. b\n\
             a number; /skip or /decline:   there is no option 9: pick 1 to 2\n\
             a number; /skip or /decline: "
        );
        let mut out = Vec::new();
        assert_eq!(
            converse(&question, &mut "".as_bytes(), &mut out).unwrap(),
            Answer::Cancelled
        );
    }
}

//! A question port on a terminal: the card is printed to the terminal and the answer is read
//! from a line of input. `agent-tools call` uses it when standard input is a terminal.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tools_core::{Answer, Card, CardKind, QuestionPort};

/// One line of input, tagged with the card that was open when it was entered (0: none).
type Line = (u64, String);

/// Asks on a terminal (or any line reader and writer).
///
/// One thread reads the input for the whole run and hands each line over a channel, tagged
/// with the card open when it was entered: a card that expires leaves no read behind holding
/// the terminal, a late answer to it is not taken as the answer to the next card, and exit
/// does not wait for a line that never comes.
pub struct TerminalPort {
    input: Mutex<Option<Box<dyn BufRead + Send>>>,
    output: Arc<Mutex<Box<dyn Write + Send>>>,
    /// The card being asked now (0: none).
    open: Arc<AtomicU64>,
    lines: OnceLock<tokio::sync::Mutex<mpsc::UnboundedReceiver<Line>>>,
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
            input: Mutex::new(Some(input)),
            output: Arc::new(Mutex::new(output)),
            open: Arc::new(AtomicU64::new(0)),
            lines: OnceLock::new(),
        }
    }

    /// The channel of input lines, starting the reader thread on the first card: a call that
    /// asks nothing never touches the input.
    fn lines(&self) -> &tokio::sync::Mutex<mpsc::UnboundedReceiver<Line>> {
        self.lines.get_or_init(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            let input = self.input.lock().ok().and_then(|mut input| input.take());
            let open = Arc::clone(&self.open);
            if let Some(mut input) = input {
                let spawned = std::thread::Builder::new()
                    .name("terminal-input".to_owned())
                    .spawn(move || {
                        loop {
                            let mut line = String::new();
                            match input.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) => {
                                    let card = open.load(Ordering::SeqCst);
                                    if sender.send((card, line)).is_err() {
                                        return;
                                    }
                                }
                            }
                        }
                    });
                if let Err(error) = spawned {
                    tracing::warn!(%error, "cannot start the terminal reader");
                }
            }
            tokio::sync::Mutex::new(receiver)
        })
    }

    fn write(&self, text: &str) {
        if let Ok(mut output) = self.output.lock() {
            let _ = output.write_all(text.as_bytes());
            let _ = output.flush();
        }
    }

    async fn converse(&self, card: &Card) -> Answer {
        let _open = OpenCard::new(&self.open, card.number);
        let mut lines = self.lines().lock().await;
        self.write(&render(card));
        loop {
            self.write(&prompt(card));
            let Some((tag, line)) = lines.recv().await else {
                return Answer::Cancelled;
            };
            // A line entered while no card, or an earlier card, was open is not an answer to
            // this one.
            if tag != card.number {
                tracing::debug!(card = tag, line = line.trim(), "dropped a late answer");
                continue;
            }
            match parse(card, line.trim()) {
                Ok(answer) => return answer,
                Err(problem) => self.write(&format!("  {problem}\n")),
            }
        }
    }
}

/// Marks a card as the one input lines answer, until it is answered or dropped (expired).
struct OpenCard<'a>(&'a AtomicU64);

impl<'a> OpenCard<'a> {
    fn new(open: &'a AtomicU64, number: u64) -> Self {
        open.store(number, Ordering::SeqCst);
        OpenCard(open)
    }
}

impl Drop for OpenCard<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::SeqCst);
    }
}

impl QuestionPort for TerminalPort {
    fn ask(&self, card: Card) -> BoxFuture<'_, Answer> {
        Box::pin(async move { self.converse(&card).await })
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

/// Reads one line of input as an answer to `card`; an unreadable line gives the text that
/// asks the person again (what they read at the terminal, not an error of ours, so a
/// `String`).
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

    /// Output shared with the test.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_conversation_retries_bad_input_and_end_of_input_dismisses() {
        let question = card(CardKind::Question, &["a", "b"], false, false);
        let out = Shared::default();
        let port = TerminalPort::new(Box::new("9\n2\n".as_bytes()), Box::new(out.clone()));
        let answer = port.ask(question.clone()).await;
        assert_eq!(answer, answered(&["b"], None));
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            shown,
            "\n── card 4 · question ──\nWhich one?\nIt matters.\n  1. a\n  2. b\n\
             a number; /skip or /decline:   there is no option 9: pick 1 to 2\n\
             a number; /skip or /decline: "
        );
        let port = TerminalPort::new(Box::new("".as_bytes()), Box::new(Shared::default()));
        assert_eq!(port.ask(question).await, Answer::Cancelled);
    }

    /// Input that yields a line only when the test says so.
    struct Fed(std::sync::mpsc::Receiver<String>);
    impl std::io::Read for Fed {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            unreachable!("read through BufRead only")
        }
    }
    impl BufRead for Fed {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            unreachable!("read_line only")
        }
        fn consume(&mut self, _: usize) {}
        fn read_line(&mut self, line: &mut String) -> std::io::Result<usize> {
            match self.0.recv() {
                Ok(text) => {
                    line.push_str(&text);
                    Ok(text.len())
                }
                Err(_) => Ok(0),
            }
        }
    }

    #[tokio::test]
    async fn a_late_answer_to_an_expired_card_is_not_taken_for_the_next() {
        let (feed, fed) = std::sync::mpsc::channel();
        let port = TerminalPort::new(Box::new(Fed(fed)), Box::new(Shared::default()));
        let permission = |number| Card {
            number,
            ..card(CardKind::Permission, &[], false, false)
        };
        // Card 1 expires unanswered: its ask is dropped.
        let expired =
            tokio::time::timeout(Duration::from_millis(50), port.ask(permission(1))).await;
        assert!(expired.is_err());
        // The person answers it late, while no card is open.
        feed.send("a\n".to_owned()).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Card 2 needs its own answer.
        let asked = port.ask(permission(2));
        tokio::pin!(asked);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut asked)
                .await
                .is_err(),
            "the late `a` did not answer card 2"
        );
        feed.send("d\n".to_owned()).unwrap();
        assert_eq!(asked.await, answered(&["deny"], None));
    }
}

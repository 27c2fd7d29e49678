//! What a cell printed, made readable for a model: stdout and stderr in the order they were
//! written, ANSI escapes stripped, `\r` progress bars collapsed to their final state, and the
//! middle of a long output cut and counted, keeping its head and tail.

/// How many bytes of the start of a cell's output are kept.
pub(crate) const HEAD_BYTES: usize = 16 * 1024;
/// How many bytes of the end of a cell's output are kept.
pub(crate) const TAIL_BYTES: usize = 16 * 1024;

/// A cell's output as it arrives.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    /// The first lines, frozen once the output grows past [`HEAD_BYTES`].
    head: Option<String>,
    /// Everything after the head (the whole output while it is short).
    live: String,
    /// A `\r` at the end of the last chunk: whether it starts `\r\n` is known only with the next.
    carriage: bool,
    /// An escape sequence cut by the end of the last chunk.
    escape: String,
    cut_bytes: u64,
    cut_lines: u64,
    /// Every byte that arrived, before cleaning.
    pub(crate) received: u64,
}

impl Transcript {
    /// Adds text the cell wrote.
    pub(crate) fn push(&mut self, chunk: &str) {
        self.received += chunk.len() as u64;
        let mut text = std::mem::take(&mut self.escape);
        text.push_str(chunk);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if self.carriage {
                self.carriage = false;
                if c != '\n' {
                    self.return_to_line_start();
                }
            }
            match c {
                '\x1b' => {
                    // CSI (`ESC [ … final`) and OSC (`ESC ] … BEL`) sequences; a sequence the
                    // chunk cut is kept for the next one.
                    let mut sequence = String::from('\x1b');
                    let complete = match chars.next() {
                        Some('[') => {
                            sequence.push('[');
                            loop {
                                match chars.next() {
                                    Some(c) if ('@'..='~').contains(&c) => break true,
                                    Some(c) => sequence.push(c),
                                    None => break false,
                                }
                            }
                        }
                        Some(']') => {
                            sequence.push(']');
                            loop {
                                match chars.next() {
                                    Some('\x07') => break true,
                                    Some('\x1b') if chars.peek() == Some(&'\\') => {
                                        chars.next();
                                        break true;
                                    }
                                    Some(c) => sequence.push(c),
                                    None => break false,
                                }
                            }
                        }
                        Some(_) => true,
                        None => false,
                    };
                    if !complete {
                        self.escape = sequence;
                    }
                }
                '\r' => self.carriage = true,
                c => self.live.push(c),
            }
        }
        self.bound();
    }

    /// A `\r` not followed by `\n`: what follows overwrites the current line.
    fn return_to_line_start(&mut self) {
        let start = self.live.rfind('\n').map_or(0, |at| at + 1);
        self.live.truncate(start);
    }

    /// Freezes the head and drops the middle once the output is long.
    fn bound(&mut self) {
        if self.head.is_none() && self.live.len() > HEAD_BYTES + TAIL_BYTES {
            let mut at = floor_char_boundary(&self.live, HEAD_BYTES);
            if let Some(newline) = self.live[..at].rfind('\n') {
                at = newline + 1;
            }
            let rest = self.live.split_off(at);
            self.head = Some(std::mem::replace(&mut self.live, rest));
        }
        if self.head.is_some() && self.live.len() > 2 * TAIL_BYTES {
            let at = floor_char_boundary(&self.live, self.live.len() - TAIL_BYTES);
            let dropped: String = self.live.drain(..at).collect();
            self.cut_bytes += dropped.len() as u64;
            self.cut_lines += dropped.matches('\n').count() as u64;
        }
    }

    /// Whether the next text starts on a line of its own.
    pub(crate) fn ends_with_newline(&self) -> bool {
        match (&self.head, self.live.is_empty()) {
            (None, true) => true,
            (Some(head), true) => head.ends_with('\n'),
            (_, false) => self.live.ends_with('\n'),
        }
    }

    /// How many bytes were cut from the middle.
    pub(crate) fn cut_bytes(&self) -> u64 {
        self.cut_bytes
    }

    /// The last non-empty line, for a progress report.
    pub(crate) fn last_line(&self) -> Option<&str> {
        self.live
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
    }

    /// The kept text, with a line saying what was cut.
    pub(crate) fn render(&self) -> String {
        let mut text = String::new();
        if let Some(head) = &self.head {
            text.push_str(head);
            if self.cut_bytes > 0 {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[… {} bytes in about {} lines cut from the middle of the output …]\n",
                    self.cut_bytes, self.cut_lines
                ));
            }
        }
        text.push_str(&self.live);
        text.trim_end_matches('\n').to_owned()
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn check(chunks: &[&str], expect: &str) {
        let mut transcript = Transcript::default();
        for chunk in chunks {
            transcript.push(chunk);
        }
        assert_eq!(transcript.render(), expect);
    }

    #[test]
    fn ansi_colours_are_stripped_even_across_chunks() {
        check(&["\x1b[31mred\x1b[0m plain"], "red plain");
        check(&["a\x1b[3", "1mb\x1b]0;title\x07c"], "abc");
    }

    #[test]
    fn carriage_returns_keep_a_progress_bar_final_state() {
        check(
            &["start\n10%\r50%\r", "100%\ndone\r\n"],
            "start\n100%\ndone",
        );
        check(&["a\r", "\nb"], "a\nb");
    }

    #[test]
    fn a_long_output_keeps_head_and_tail_and_counts_the_middle() {
        let mut transcript = Transcript::default();
        for n in 0..20_000 {
            transcript.push(&format!("line {n}\n"));
        }
        let text = transcript.render();
        assert!(text.starts_with("line 0\nline 1\n"));
        assert!(text.ends_with("line 19999"));
        assert!(text.contains("bytes in about"), "{}", &text[..100]);
        assert!(text.len() < HEAD_BYTES + 2 * TAIL_BYTES + 200);
        assert!(transcript.cut_bytes() > 100_000);
    }
}

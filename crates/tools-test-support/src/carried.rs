//! The rule that the structured content carries what the text says: Claude Code and Codex
//! show the model only `structuredContent`, Gemini CLI only the text, so every sentence of an
//! answer's text must be in its structure too.
//!
//! The rule, sentence by sentence (a line of the text cut at `. `, `; `, `: `, ` — `, `(` and
//! `)`), with words compared case-folded (runs of two or more letters, and runs of digits):
//! - a sentence whose words occur, in the same order and with nothing between them, in one
//!   string of the structure is carried (verbatim, modulo punctuation);
//! - a sentence with a word of guidance ([`GUIDANCE`]: `call`, `proceed`, `ask`, `again`…)
//!   in its prose (not in a code span, a quote, a path or an identifier) must be carried that
//!   way: an instruction is never pieced together from scattered words;
//! - any other sentence renders data: it is carried when each of its words is a key or in a
//!   value of the structure (a plural `s` aside; a list's length counts as a value), a word
//!   of the call's own arguments, or one of the few [`PHRASING`] words that only connect
//!   data (`in`, `of`, `now`, `has`…);
//! - what is deliberately not carried is an [`Exception`], with the reason.
//!
//! Answers without structured content (errors, which every client shows as text) are not
//! checked.

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::Value;

/// Words that make a sentence an instruction or a pointer to more: such a sentence must be
/// in the structure as the same words in the same order.
pub const GUIDANCE: &[&str] = &[
    "call",
    "proceed",
    "ask",
    "again",
    "instead",
    "answer",
    "install",
    "configure",
    "later",
    "more",
    "shows",
    "showing",
    "apply",
    "use",
    "wait",
    "try",
    "see",
    "lost",
    "yet",
    "retry",
];

/// Words that only connect data in a sentence that renders it (`src/lib.rs now has 2 errors,
/// 1 of them new`): none of them is an instruction, and none is a word of [`GUIDANCE`].
pub const PHRASING: &[&str] = &[
    "a", "all", "an", "and", "are", "as", "at", "by", "did", "for", "from", "had", "has", "in",
    "is", "it", "its", "no", "none", "now", "of", "on", "or", "so", "still", "that", "the", "them",
    "there", "this", "to", "was", "were", "with", "after", "per", "under", "new",
    // Verbs that name what the tool itself did, whose object is the structure's data.
    "edited", "replaced", "created", "applied", "renamed", "spawned", "added", "accepted", "wrote",
    "listing", "matching", "stopped", "started", "compiled",
    // Labels of a field's value: `Why: …` (`reason`), `Latest progress: …` (`progress`).
    "why", "latest",
];

/// A sentence of an answer's text that its structure deliberately does not carry.
#[derive(Debug, Clone, Copy)]
pub struct Exception {
    /// The tool that answered, or `*` for any.
    pub tool: &'static str,
    /// A regular expression the whole sentence matches.
    pub sentence: &'static str,
    /// Why the structure leaves it out.
    pub reason: &'static str,
}

/// One sentence of an answer's text that its structure does not carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The tool that answered.
    pub tool: String,
    /// The sentence.
    pub sentence: String,
    /// The words the structure lacks, or the guidance it lacks in order.
    pub why: String,
}

/// The words of `text`, case-folded: runs of two or more letters, and runs of digits.
pub fn words(text: &str) -> Vec<String> {
    static WORD: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"[A-Za-z]{2,}|[0-9]+").expect("a valid pattern"));
    WORD.find_iter(text)
        .map(|word| word.as_str().to_lowercase())
        .collect()
}

/// The sentences of `text`: each line cut at `. `, `; `, `: `, ` — `, `(` and `)`, without a
/// closing `:`.
pub fn sentences(text: &str) -> Vec<String> {
    static CUT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\.\s|;\s|:\s|\s—\s|[()]").expect("a valid pattern")
    });
    text.lines()
        .flat_map(|line| {
            CUT.split(line)
                .map(|sentence| sentence.trim().trim_end_matches(':'))
                .map(str::to_owned)
        })
        .filter(|sentence| !words(sentence).is_empty())
        .collect()
}

/// Every string of `value` (keys, with `_` between words, and values), in order, and the
/// length of each list.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                out.push(key.clone());
                strings(field, out);
            }
        }
        Value::Array(items) => {
            // A list carries its own length: "3 files" is said by three of them.
            out.push(items.len().to_string());
            items.iter().for_each(|item| strings(item, out));
        }
        Value::String(text) => out.push(text.clone()),
        Value::Null => {}
        other => out.push(other.to_string()),
    }
}

/// The words of guidance in `sentence`, among its prose: a word inside a code span, a quote,
/// a path or an identifier (`app/more.py`, `"ask"`, `typecheck_call_too_few_args`) is data.
fn guidance_in(sentence: &str) -> Vec<String> {
    static CODE: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r#"`[^`]*`|"[^"]*""#).expect("a valid pattern"));
    let prose = CODE.replace_all(sentence, " ");
    prose
        .split_whitespace()
        .map(|token| token.trim_matches(|c: char| ".,;:!?()…".contains(c)))
        .filter(|token| !token.contains(|c: char| "/._[]=<>@#$'`\"".contains(c)))
        .map(str::to_lowercase)
        .filter(|word| GUIDANCE.contains(&word.as_str()))
        .collect()
}

/// A word with a plural `s` or `es` taken off: "3 files" is carried by `files` or `file`.
fn singular(word: &str) -> &str {
    word.strip_suffix("es")
        .filter(|stem| stem.ends_with(['s', 'x', 'h']))
        .or_else(|| word.strip_suffix('s').filter(|stem| stem.len() > 1))
        .unwrap_or(word)
}

/// The sentences of `text` that `structured` does not carry, by the rule of this module,
/// leaving out those an exception of `tool` names; `arguments` are the call's.
pub fn missing(
    tool: &str,
    arguments: &Value,
    text: &str,
    structured: &Value,
    exceptions: &[Exception],
) -> Vec<Missing> {
    let mut held = Vec::new();
    strings(structured, &mut held);
    // What the model sent, it knows: a text that names the call's own arguments (the
    // pattern searched, the file read) tells it nothing the structure must repeat.
    let mut sent = Vec::new();
    strings(arguments, &mut sent);
    // Each string as its words between spaces, so a sentence matches whole words only.
    let held_words: Vec<String> = held
        .iter()
        .map(|text| format!(" {} ", words(text).join(" ")))
        .collect();
    let vocabulary: BTreeSet<String> = held
        .iter()
        .chain(&sent)
        .flat_map(|text| words(text))
        .flat_map(|word| [singular(&word).to_owned(), word])
        .collect();
    let excepted: Vec<Regex> = exceptions
        .iter()
        .filter(|exception| exception.tool == tool || exception.tool == "*")
        .map(|exception| {
            Regex::new(&format!("^(?:{})$", exception.sentence)).expect("a valid exception")
        })
        .collect();
    let mut missing = Vec::new();
    for sentence in sentences(text) {
        let sentence_words = words(&sentence);
        let run = format!(" {} ", sentence_words.join(" "));
        if held_words.iter().any(|held| held.contains(&run))
            || excepted.iter().any(|pattern| pattern.is_match(&sentence))
        {
            continue;
        }
        let guidance = guidance_in(&sentence);
        let why = if guidance.is_empty() {
            let absent: Vec<&String> = sentence_words
                .iter()
                .filter(|word| {
                    !vocabulary.contains(*word)
                        && !vocabulary.contains(singular(word))
                        && !PHRASING.contains(&word.as_str())
                })
                .collect();
            if absent.is_empty() {
                continue;
            }
            format!("the structure lacks {absent:?}")
        } else {
            format!("guidance ({guidance:?}) is in no string of the structure")
        };
        missing.push(Missing {
            tool: tool.to_owned(),
            sentence,
            why,
        });
    }
    missing
}

/// One answer of a transcript snapshot that has structured content.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The tool called.
    pub tool: String,
    /// The call's arguments (`null` when they do not parse).
    pub arguments: Value,
    /// The text, without the lines that stand for images.
    pub text: String,
    /// The structured content.
    pub structured: Value,
}

/// The answers of a transcript snapshot (see [`crate::Transcript`]) that have structured
/// content: the tool, the text, and the structure. Placeholders a test's filters left as
/// bare values (`"frame_id": [FRAME]`) are read as strings.
pub fn answers(snapshot: &str) -> Vec<Answer> {
    static BARE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r#"(?m)^(\s*(?:"(?:[^"\\]|\\.)*": )?)(\[[A-Z_]+\])(,?)$"#)
            .expect("a valid pattern")
    });
    // A placeholder inside the call's arguments: `{"frame_id":[FRAME]}`.
    static BARE_ARGUMENT: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(\[[A-Z_]+\])").expect("a valid pattern"));
    let body = match snapshot.strip_prefix("---\n") {
        // The insta header ends at its second `---` line.
        Some(rest) => rest.split_once("\n---\n").map_or(rest, |(_, body)| body),
        None => snapshot,
    };
    let body = format!("\n{body}");
    let mut answers = Vec::new();
    for call in body.split("\n### ").skip(1) {
        let Some((head, rest)) = call.split_once('\n') else {
            continue;
        };
        let Some((text, structured)) = rest.split_once("\n--- structured\n") else {
            continue;
        };
        let (tool, arguments) = head.split_once(' ').unwrap_or((head, ""));
        let arguments = arguments.trim_end_matches(" → error");
        let arguments = serde_json::from_str(&BARE_ARGUMENT.replace_all(arguments, "\"$1\""))
            .unwrap_or(Value::Null);
        let structured = BARE.replace_all(structured, "$1\"$2\"$3");
        let value = serde_json::Deserializer::from_str(&structured)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
            .unwrap_or(Value::Null);
        let text: String = text
            .lines()
            .filter(|line| !line.starts_with("--- image "))
            .collect::<Vec<_>>()
            .join("\n");
        answers.push(Answer {
            tool: tool.to_owned(),
            arguments,
            text,
            structured: value,
        });
    }
    answers
}

/// What the snapshots' structures deliberately leave out of their texts, and why.
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        tool: "*",
        sentence: r"This write introduced \d+ new diagnostics? in \d+ files?|In files it did not touch, this write introduced \d+ new diagnostics? in \d+ files?",
        reason: "the heading over a write report's lists: `diagnostics.files` and \
                 `diagnostics.fallout` carry each file and its `introduced` count",
    },
    Exception {
        tool: "lsp",
        sentence: "Language servers for this workspace",
        reason: "the heading over `servers`",
    },
    Exception {
        tool: "lsp",
        sentence: r"\d+",
        reason: "the number before a code action (`2. Inline variable`): its place in `actions`",
    },
    Exception {
        tool: "lsp",
        sentence: "not usable",
        reason: "says that a server's `problem` is set; the problem itself is carried",
    },
    Exception {
        tool: "lsp_rename",
        sentence: "not compiled|cfg/features|comment or string",
        reason: "the tag after a leftover's line, which its `kind` carries",
    },
    Exception {
        tool: "vibe_list",
        sentence: r"… \d+ more lines|vibe_wait shows all",
        reason: "the text shows a worker's first lines; the structure has its whole `result`",
    },
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The check itself: every answer with structured content in every transcript snapshot of
    /// the workspace (`crates/*/tests/it/snapshots/*.snap`) carries its text by the rule.
    #[test]
    fn every_snapshot_carries_its_text_in_its_structure() {
        let crates = crate::repo_root().join("crates");
        let mut checked = 0;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&crates).unwrap() {
            let folder = entry.unwrap().path().join("tests/it/snapshots");
            let Ok(files) = std::fs::read_dir(&folder) else {
                continue;
            };
            for file in files {
                let path = file.unwrap().path();
                if path.extension().is_none_or(|extension| extension != "snap") {
                    continue;
                }
                let snapshot = std::fs::read_to_string(&path).unwrap();
                for answer in answers(&snapshot) {
                    checked += 1;
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    found.extend(
                        missing(
                            &answer.tool,
                            &answer.arguments,
                            &answer.text,
                            &answer.structured,
                            EXCEPTIONS,
                        )
                        .into_iter()
                        .map(|missing| (format!("{name}: {}", answer.arguments), missing)),
                    );
                }
            }
        }
        assert!(
            checked > 300,
            "only {checked} answers with structure were found"
        );
        let report: Vec<String> = found
            .iter()
            .map(|(file, m)| format!("{file}: {}: {:?}: {}", m.tool, m.sentence, m.why))
            .collect();
        assert!(
            found.is_empty(),
            "{} sentences of text are not in their structure:\n{}",
            found.len(),
            report.join("\n")
        );
    }

    #[test]
    fn guidance_must_be_in_one_string_in_order() {
        let text = "Card 2 was declined: the person does not want to answer it. Proceed on your \
                    own best assumption, and do not ask this question again.";
        let bare = json!({"card": 2, "outcome": "declined", "selected": []});
        let found = missing("ask_user", &Value::Null, text, &bare, &[]);
        assert_eq!(
            found
                .iter()
                .map(|m| m.sentence.as_str())
                .collect::<Vec<_>>(),
            [
                "the person does not want to answer it",
                "Proceed on your own best assumption, and do not ask this question again."
            ]
        );
        // The same words scattered over several strings do not carry an instruction.
        let scattered = json!({"card": 2, "outcome": "declined", "a": "proceed on your own best",
            "b": "assumption, and do not ask this question again; the person does not want to answer it"});
        assert_eq!(
            missing("ask_user", &Value::Null, text, &scattered, &[]).len(),
            1
        );
        let carried = json!({"card": 2, "outcome": "declined", "notes": [
            "The person does not want to answer it. Proceed on your own best assumption, and do \
             not ask this question again."]});
        assert_eq!(missing("ask_user", &Value::Null, text, &carried, &[]), []);
        // `read` before its `notes`: the offset to go on with was a field, the instruction
        // was not.
        let text =
            "   4\tdef total(prices):\n(app.py: lines 4–4 of 19; call read with offset 5 for more)";
        let fields = json!({"path": "app.py", "first_line": 4, "last_line": 4, "total_lines": 19,
            "content": "   4\tdef total(prices):\n", "next_offset": 5});
        let found = missing("read", &Value::Null, text, &fields, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].sentence, "call read with offset 5 for more");
    }

    #[test]
    fn data_is_carried_by_its_words_and_phrasing_alone_is_not_enough() {
        let text = "Edited notes.txt: 1 replacement at line 2";
        let held = json!({"path": "notes.txt", "count": 1, "lines": [2]});
        assert_eq!(
            missing("edit", &Value::Null, text, &held, &[]).len(),
            1,
            "`replacement` is not held"
        );
        // A plural is the same word, and the call's own arguments count as held.
        let held = json!({"path": "notes.txt", "replacements": 1, "lines": [2]});
        assert_eq!(missing("edit", &Value::Null, text, &held, &[]), []);
        let held = json!({"replacements": 1, "lines": [2]});
        let sent = json!({"path": "notes.txt"});
        assert_eq!(missing("edit", &sent, text, &held, &[]), []);
        assert_eq!(missing("edit", &Value::Null, text, &held, &[]).len(), 1);
        let held = json!({"path": "notes.txt", "replacement": 1, "line": 2});
        assert_eq!(missing("edit", &Value::Null, text, &held, &[]), []);
        let exception = Exception {
            tool: "edit",
            sentence: r"Edited notes\.txt|1 replacement at line 2",
            reason: "a test",
        };
        assert_eq!(
            missing("edit", &Value::Null, text, &json!({}), &[exception]),
            []
        );
        assert_eq!(
            missing("write", &Value::Null, text, &json!({}), &[exception]).len(),
            2
        );
    }

    #[test]
    fn a_snapshot_is_read_as_its_answers_with_structure() {
        let snapshot = "---\nsource: a.rs\nexpression: t\n---\n### read {\"path\":\"a\"}\n   1\tx\n\
                        --- image image/png\n--- structured\n{\n  \"frame_id\": [FRAME],\n  \"n\": 1\n}\n\n\
                        // a note\n\n### read {} → error\nno\n";
        let answers = answers(snapshot);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0].tool, "read");
        assert_eq!(answers[0].arguments, json!({"path": "a"}));
        assert_eq!(answers[0].text, "   1\tx");
        assert_eq!(
            answers[0].structured,
            json!({"frame_id": "[FRAME]", "n": 1})
        );
    }
}

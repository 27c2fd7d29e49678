//! `eval`: runs a cell in the run's persistent Python or JavaScript kernel (EVAL-1, EVAL-2, EVAL-3,
//! EVAL-4, EVAL-5, EVAL-6, EVAL-7, EVAL-8, EVAL-9).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tools_core::{CallContext, Lane, Tier, Tool, ToolError, ToolOutput};

use crate::EvalOptions;
use crate::images::ImageFile;
use crate::kernel::{Ending, Kernel};
use crate::kernels::Kernels;

/// Run Python or JavaScript in a persistent kernel; state stays between calls. The last
/// expression is shown (`;` hides it), `display(x)` shows more; DataFrames come back as
/// tables, matplotlib figures as images. Python takes IPython idioms (`%pip`, `!cmd`,
/// `%%bash`); JavaScript has top-level `await`. `tool(name, args)` calls the run's other
/// tools (awaited in JavaScript): their text (`.structured`: their data), raising on their
/// errors. A cell silent for 5 minutes is interrupted, the state kept. Python is the
/// project's `.venv`, else `python3`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// The cell's code.
    pub code: String,
    /// What the cell does, 5–10 words (its label in the transcript; another length is noted,
    /// not refused).
    pub description: String,
    /// Default `python`.
    #[serde(default)]
    pub language: Language,
    /// Start a clean kernel for the cell.
    #[serde(default)]
    pub reset: bool,
}

/// A kernel's language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    Python,
    Javascript,
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::Python => "Python",
            Language::Javascript => "JavaScript",
        })
    }
}

/// What a cell did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EvalOutput {
    /// The cell's language.
    pub language: Language,
    /// The interpreter the kernel runs (a path for Python; `node` for JavaScript).
    pub interpreter: String,
    /// Its version.
    pub version: String,
    /// The kernel's process id on the machine agent-tools runs on, as `ps` and `kill` there
    /// know it.
    pub pid: u64,
    /// Its process id inside its own PID namespace (every child runs in one where the
    /// machine allows it, and the sandbox's), as the kernel's `os.getpid()` says; only when
    /// that differs from `pid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid_in_namespace: Option<u64>,
    /// Whether this cell started a new kernel (the first cell, a `reset`, or after a crash).
    pub new_kernel: bool,
    /// Why the previous kernel's state was lost, when it was lost without a `reset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_lost: Option<String>,
    /// What the cell printed and its value, then how it ended (a traceback, what stopped it),
    /// as the text answer shows them.
    pub output: String,
    /// Each image the cell showed, in order: also image content, and written to a file a
    /// client can open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageFile>,
    /// Bytes of output cut from the middle.
    pub output_cut_bytes: u64,
    /// How long the cell ran, in milliseconds.
    pub duration_ms: u64,
    /// What the text says around the output: a new kernel, lost state, a description
    /// outside 5–10 words (the cell ran all the same).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The `eval` tool, bound to a run's kernels.
#[derive(Debug, Clone)]
pub struct Eval {
    kernels: Arc<Kernels>,
    options: EvalOptions,
}

impl Eval {
    /// The tool over `kernels`.
    pub fn new(kernels: Arc<Kernels>, options: EvalOptions) -> Self {
        Eval { kernels, options }
    }
}

/// EVAL-2: the description is the transcript's label, and 5–10 words are what a good label
/// looks like; a label outside them is no reason to refuse a cell (SPEC: "EVAL-2's 5–10 words
/// are what a good label looks like, not a reason to refuse a cell"), so the cell runs and the
/// result carries this note.
fn description_note(description: &str) -> Option<String> {
    let words = description.split_whitespace().count();
    if (5..=10).contains(&words) {
        return None;
    }
    Some(format!(
        "the description has {words} word{}; the cell ran, and a label of 5–10 words saying what \
         it does (e.g. \"load the sales data and plot it\") reads best in the transcript",
        if words == 1 { "" } else { "s" }
    ))
}

impl Tool for Eval {
    type Input = EvalInput;
    type Output = EvalOutput;
    const NAME: &'static str = "eval";
    const TITLE: &'static str = "Run Python or JavaScript";
    const TIER: Tier = Tier::Exec;
    const LANE: Option<Lane> = Some(Lane::EVAL);
    const GRACEFUL_CANCEL: bool = true;

    const MAY_RUN_LONG: bool = true;

    /// A cell runs as long as its code does.
    fn may_run_long(&self, _input: &EvalInput) -> bool {
        true
    }

    async fn call(
        &self,
        context: CallContext,
        input: EvalInput,
    ) -> Result<ToolOutput<EvalOutput>, ToolError> {
        let description_note = description_note(&input.description);
        let language = input.language;
        let mut live = self.kernels.live.lock().await;
        if input.reset {
            if let Some(kernel) = live.remove(&language) {
                kernel.stop().await;
            }
            self.kernels.lost.lock().await.remove(&language);
        }
        if let Some(kernel) = live.get_mut(&language)
            && let Some(how) = kernel.died_idle().await
        {
            if let Some(kernel) = live.remove(&language) {
                kernel.stop().await;
            }
            let why = format!("died between cells ({how})");
            self.kernels.lost.lock().await.insert(language, why);
        }
        let mut new_kernel = false;
        let kernel = match live.entry(language) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                context.progress(format!("starting the {language} kernel"));
                let kernel = Kernel::start(language, &self.kernels.launch, &context)
                    .await
                    .map_err(|error| ToolError::failed(format!("{error}")))?;
                new_kernel = true;
                entry.insert(kernel)
            }
        };
        let state_lost = match new_kernel {
            true => self.kernels.lost.lock().await.remove(&language),
            false => None,
        };
        let started = std::time::Instant::now();
        let cell = kernel.execute(&input.code, &context, &self.options).await;
        let duration = started.elapsed();
        // Every bracketed line around the output is said in the text and kept in `notes`,
        // which is all that some clients show the model.
        let mut text = String::new();
        let mut notes = Vec::new();
        if new_kernel {
            notes.push(format!(
                "new {language} kernel: {} {}, pid {}{}, ready in {} ms",
                kernel.interpreter,
                kernel.version,
                kernel.pid,
                match kernel.pid_inside {
                    Some(inside) => format!(" ({inside} in its own PID namespace)"),
                    None => String::new(),
                },
                kernel.started_in.as_millis()
            ));
        }
        if let Some(why) = &state_lost {
            notes.push(format!(
                "the previous {language} kernel {why}; its variables and imports were lost"
            ));
        }
        for note in &notes {
            text.push_str(&format!("[{note}]\n"));
        }
        let printed = cell.transcript.render();
        text.push_str(&printed);
        let outcome = outcome(language, &printed, cell.images.len(), &cell.ending);
        let mut output = EvalOutput {
            language,
            interpreter: kernel.interpreter.clone(),
            version: kernel.version.clone(),
            pid: kernel.pid,
            pid_in_namespace: kernel.pid_inside,
            new_kernel,
            state_lost,
            output: format!("{printed}{}", outcome.text),
            images: Vec::new(),
            output_cut_bytes: cell.transcript.cut_bytes(),
            duration_ms: duration.as_millis() as u64,
            notes,
        };
        if let Some(why) = outcome.kernel_lost {
            if let Some(kernel) = live.remove(&language) {
                kernel.stop().await;
            }
            self.kernels.lost.lock().await.insert(language, why);
        }
        text.push_str(&outcome.text);
        if outcome.failed {
            if let Some(note) = &description_note {
                text.push_str(&format!("\n[note: {note}]"));
            }
            return Err(ToolError::failed(text));
        }
        // A client that shows the model only the structure never shows it an image block:
        // each image is also a file, named in the text and in `images`.
        if !cell.images.is_empty() {
            let (files, failed) = self.kernels.images.save(&cell.images).await;
            for (index, file) in files.iter().enumerate() {
                text.push_str(&format!("\n{}", file.line(index + 1)));
            }
            if let Some(failed) = failed {
                text.push_str(&format!("\n[{failed}]"));
                output.notes.push(failed);
            }
            output.images = files;
        }
        if let Some(note) = description_note {
            text.push_str(&format!("\n[note: {note}]"));
            output.notes.push(note);
        }
        let mut result = ToolOutput::new(text, output);
        result.images = cell.images;
        Ok(result)
    }
}

/// What a cell's ending adds to its result.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// Text after what the cell printed.
    text: String,
    /// Whether the result is an error.
    failed: bool,
    /// Why the kernel is gone, when it is: the next cell says so.
    kernel_lost: Option<String>,
}

/// The end of a cell's result: a note, a traceback, or what stopped it and whether the
/// kernel's state survived (EVAL-8). `images` is how many the cell showed: a cell that printed
/// nothing and showed none says so.
fn outcome(language: Language, printed: &str, images: usize, ending: &Ending) -> Outcome {
    let sep = separator(printed);
    let failure = |text: String| Outcome {
        text,
        failed: true,
        kernel_lost: None,
    };
    match ending {
        Ending::Done {
            error: None,
            images_dropped,
        } => {
            let mut text = String::new();
            if *images_dropped > 0 {
                text.push_str(&format!(
                    "\n[{images_dropped} more image(s) not shown: a cell returns at most 8 \
                     images of 1 MB each]"
                ));
            }
            if printed.is_empty() && images == 0 {
                text.push_str("(no output)");
            }
            Outcome {
                text,
                failed: false,
                kernel_lost: None,
            }
        }
        Ending::Done {
            error: Some(traceback),
            ..
        } => failure(format!("{sep}{traceback}")),
        Ending::Interrupted(stop) => failure(format!(
            "{sep}[interrupted: {stop}; the kernel and its state are kept]"
        )),
        Ending::Killed(stop) => Outcome {
            kernel_lost: Some(format!(
                "was killed because a cell did not stop when interrupted ({stop})"
            )),
            ..failure(format!(
                "{sep}[stopped: {stop}; the cell ignored two interrupts, so the kernel was \
                 killed and its state is lost; the next cell starts a new kernel]"
            ))
        },
        Ending::Died { how, stderr } => {
            let last = match stderr.is_empty() {
                true => String::new(),
                false => format!("\nits last words:\n{}", stderr.join("\n")),
            };
            Outcome {
                kernel_lost: Some(format!("died ({how})")),
                ..failure(format!(
                    "{sep}[the {language} kernel died during the cell: {how}; its state is \
                     lost and the next cell starts a new kernel]{last}"
                ))
            }
        }
    }
}

fn separator(printed: &str) -> &'static str {
    match printed.is_empty() {
        true => "",
        false => "\n",
    }
}

impl EvalOptions {
    /// The options with every default: a 5-minute idle window (EVAL-8), a one-hour cap on one
    /// cell, and 8 MB of output before a cell is taken for a runaway loop.
    pub fn new() -> Self {
        EvalOptions {
            idle_timeout: Duration::from_secs(300),
            max_cell: Duration::from_secs(3600),
            max_output_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions::new()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::kernel::Stop;

    #[test]
    fn eval_2_a_description_outside_five_to_ten_words_is_noted_not_refused() {
        assert_eq!(description_note("load the data and plot it"), None);
        let note = description_note("plot").unwrap();
        assert!(
            note.starts_with("the description has 1 word; the cell ran"),
            "{note}"
        );
        assert!(
            description_note(&"word ".repeat(11))
                .unwrap()
                .contains("11 words")
        );
        assert!(description_note("").unwrap().contains("0 words"));
    }

    fn check(printed: &str, ending: Ending, expect: &str) {
        let outcome = outcome(Language::Python, printed, 0, &ending);
        let lost = outcome.kernel_lost.map(|why| format!("\n<lost: {why}>"));
        let shown = format!(
            "{}{printed}{}{}",
            if outcome.failed { "<error> " } else { "" },
            outcome.text,
            lost.unwrap_or_default()
        );
        assert_eq!(shown, expect);
    }

    #[test]
    fn eval_3_a_cell_without_output_says_so() {
        check(
            "",
            Ending::Done {
                error: None,
                images_dropped: 0,
            },
            "(no output)",
        );
        check(
            "42",
            Ending::Done {
                error: None,
                images_dropped: 2,
            },
            "42\n[2 more image(s) not shown: a cell returns at most 8 images of 1 MB each]",
        );
    }

    #[test]
    fn eval_8_endings_say_whether_state_survived() {
        check(
            "working",
            Ending::Interrupted(Stop::Cancelled),
            "<error> working\n[interrupted: the client cancelled the call; the kernel and its state are kept]",
        );
        check(
            "",
            Ending::Killed(Stop::Cap(Duration::from_secs(60))),
            "<error> [stopped: it ran for 60 s (the cap on one cell); the cell ignored two interrupts, so the kernel was killed and its state is lost; the next cell starts a new kernel]\n<lost: was killed because a cell did not stop when interrupted (it ran for 60 s (the cap on one cell))>",
        );
        check(
            "",
            Ending::Died {
                how: "exited with status 3".into(),
                stderr: vec!["boom".into()],
            },
            "<error> [the Python kernel died during the cell: exited with status 3; its state is lost and the next cell starts a new kernel]\nits last words:\nboom\n<lost: died (exited with status 3)>",
        );
    }

    #[test]
    fn stops_say_why() {
        assert_eq!(
            Stop::Idle(Duration::from_secs(2)).to_string(),
            "it printed nothing for 2 s (the idle timeout)"
        );
    }
}

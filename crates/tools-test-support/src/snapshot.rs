//! Snapshots of what a model reads, stable across machines and runs: temp folders, pids,
//! durations and byte counts of timings are replaced by placeholders before comparing.

use std::path::Path;

/// `text` with what changes between runs replaced: `root` (the fixture's folder, canonical
/// or not) by `[ROOT]`, other temp folders by `[TMP]`, pids by `[PID]`, and durations
/// (`12 ms`, `1.5 s`) by `[TIME]`.
pub fn redact(text: &str, root: &Path) -> String {
    redact_with(text, root, &[])
}

/// [`redact`], then each `(pattern, replacement)` of `extra` (regular expressions): for what
/// one test knows varies (an adapter's frame ids, an interpreter's version).
pub fn redact_with(text: &str, root: &Path, extra: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    let mut roots = vec![root.display().to_string()];
    if let Ok(canonical) = root.canonicalize() {
        roots.push(canonical.display().to_string());
    }
    // Longest first, so a canonical path is not half-replaced by its shorter alias.
    roots.sort_by_key(|root| std::cmp::Reverse(root.len()));
    for root in roots {
        text = text.replace(&root, "[ROOT]");
    }
    let extra = extra
        .iter()
        .map(|(pattern, replacement)| ((*pattern).to_owned(), *replacement));
    for (pattern, replacement) in filters().into_iter().chain(extra) {
        let regex = regex::Regex::new(&pattern).expect("the filters are valid");
        text = regex.replace_all(&text, replacement).into_owned();
    }
    text
}

/// What [`snapshot_settings`] and [`redact`] replace, in order: a temp folder (`.tmpXXXX`,
/// as tempfile names them) under the system's temp folder, whichever `TMPDIR` makes it, then
/// [`FILTERS`].
fn filters() -> Vec<(String, &'static str)> {
    let mut temp = vec![std::env::temp_dir()];
    if let Ok(canonical) = temp[0].canonicalize() {
        temp.push(canonical);
    }
    let folders = temp
        .iter()
        .map(|dir| {
            let dir = dir.display().to_string();
            format!(
                r"{}/\.tmp[A-Za-z0-9]+",
                regex::escape(dir.trim_end_matches('/'))
            )
        })
        .map(|pattern| (pattern, "[TMP]"));
    folders
        .chain(
            FILTERS
                .iter()
                .map(|(pattern, replacement)| ((*pattern).to_owned(), *replacement)),
        )
        .collect()
}

/// The filters of every snapshot after the temp folders, in order.
const FILTERS: &[(&str, &str)] = &[
    (r"\bpid:? \d+", "pid [PID]"),
    (r"\b\d+(\.\d+)? ?(ms|s)\b", "[TIME]"),
    // The same in structured content: `"pid": 4242`, `"duration_ms": 16`,
    // `"elapsed_seconds": 0.5`.
    (r#""pid": \d+"#, r#""pid": "[PID]""#),
    (
        r#""(\w+_ms|\w+_seconds)": \d+(\.\d+)?"#,
        r#""$1": "[TIME]""#,
    ),
    // A connection's conversation id: `conversation-PID-MILLIS-N`.
    (r"\bconversation-\d+-\d+-\d+", "conversation-[ID]"),
];

/// insta settings with the same filters as [`redact`], for `assert_snapshot!` on text that
/// has no fixture root (`let _guard = snapshot_settings().bind_to_scope();`).
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters() {
        settings.add_filter(&pattern, replacement);
    }
    settings.set_prepend_module_to_snapshot(false);
    settings
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn redaction_replaces_roots_temp_folders_pids_and_times() {
        let root = Path::new("/tmp/.tmpAbC12");
        assert_eq!(
            super::redact(
                "/tmp/.tmpAbC12/src/a.rs:3 (pid 4242) in /tmp/.tmpZz9 took 12 ms, then 1.5 s; \
                 2 files",
                root
            ),
            "[ROOT]/src/a.rs:3 (pid [PID]) in [TMP] took [TIME], then [TIME]; 2 files"
        );
        assert_eq!(
            super::redact(
                r#"{"pid": 4242, "duration_ms": 16, "elapsed_seconds": 0.5, "lines": 3, "files": "runs/conversation-4242-1796666522117-1/w1"}"#,
                root
            ),
            r#"{"pid": "[PID]", "duration_ms": "[TIME]", "elapsed_seconds": "[TIME]", "lines": 3, "files": "runs/conversation-[ID]/w1"}"#
        );
    }
}

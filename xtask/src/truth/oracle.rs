//! The oracle: each project's own checker CLI, run on the whole tree before the first write
//! and after each one, read into error counts per file and per message; and the rule that
//! turns two such readings into what a write introduced (SPEC section 11).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

/// A project checker, as a person runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checker {
    /// `cargo check --all-targets`.
    Cargo,
    /// The basedpyright CLI.
    Basedpyright,
    /// `tsc --noEmit -p tsconfig.json`.
    Tsc,
    /// `clang -fsyntax-only` (clangd's compiler) on every entry of `compile_commands.json`.
    Clang,
}

/// Errors per file (workspace-relative) and per key (code and message), as counts.
pub(crate) type Counts = BTreeMap<String, BTreeMap<String, usize>>;

/// One error, located; two errors that differ only in where they are stay two, and one
/// error a compiler reports for two targets (a library and its test build) counts once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Located {
    file: String,
    line: u64,
    column: u64,
    key: String,
}

impl Checker {
    /// The command line, for the table.
    pub(crate) fn shown(self) -> &'static str {
        match self {
            Checker::Cargo => "cargo check --all-targets --keep-going",
            Checker::Basedpyright => "basedpyright --outputjson",
            Checker::Tsc => "tsc --noEmit",
            Checker::Clang => "clang -fsyntax-only (compile_commands.json)",
        }
    }

    /// Runs the checker on the project at `root` and counts its errors.
    pub(crate) fn run(self, repo: &Path, root: &Path) -> anyhow::Result<Counts> {
        let located = match self {
            Checker::Cargo => cargo(root)?,
            Checker::Basedpyright => basedpyright(repo, root)?,
            Checker::Tsc => tsc(repo, root)?,
            Checker::Clang => clang_syntax(root)?,
        };
        let unique: BTreeSet<Located> = located.into_iter().collect();
        let mut counts = Counts::new();
        for error in unique {
            *counts
                .entry(error.file)
                .or_default()
                .entry(error.key)
                .or_default() += 1;
        }
        Ok(counts)
    }
}

fn relative(root: &Path, file: &str) -> String {
    let path = Path::new(file);
    let path = path.strip_prefix(root).unwrap_or(path);
    path.to_string_lossy().trim_start_matches("./").to_owned()
}

fn cargo(root: &Path) -> anyhow::Result<Vec<Located>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "check",
            "--all-targets",
            "--keep-going",
            "--message-format=json",
            "--quiet",
        ])
        .env("CARGO_TARGET_DIR", root.join("target"))
        .current_dir(root)
        .output()
        .context("cannot run cargo check")?;
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if value["reason"] != "compiler-message" || value["message"]["level"] != "error" {
            continue;
        }
        let message = &value["message"];
        let Some(span) = message["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true))
        else {
            continue;
        };
        found.push(Located {
            file: relative(root, span["file_name"].as_str().unwrap_or_default()),
            line: span["line_start"].as_u64().unwrap_or(0),
            column: span["column_start"].as_u64().unwrap_or(0),
            key: format!(
                "{} {}",
                message["code"]["code"].as_str().unwrap_or("-"),
                message["message"].as_str().unwrap_or_default()
            ),
        });
    }
    Ok(found)
}

fn basedpyright(repo: &Path, root: &Path) -> anyhow::Result<Vec<Located>> {
    let output = Command::new(repo.join(".venv/bin/basedpyright"))
        .arg("--outputjson")
        .current_dir(root)
        .output()
        .context("cannot run basedpyright")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let start = stdout.find('{').unwrap_or(0);
    let report: Value = serde_json::from_str(&stdout[start..])
        .with_context(|| format!("basedpyright wrote no JSON report: {stdout}"))?;
    Ok(report["generalDiagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["severity"] == "error")
        .map(|item| Located {
            file: relative(root, item["file"].as_str().unwrap_or_default()),
            line: item["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
            column: item["range"]["start"]["character"].as_u64().unwrap_or(0) + 1,
            key: format!(
                "{} {}",
                item["rule"].as_str().unwrap_or("-"),
                item["message"].as_str().unwrap_or_default()
            ),
        })
        .collect())
}

fn tsc(repo: &Path, root: &Path) -> anyhow::Result<Vec<Located>> {
    let output = Command::new(repo.join(".tools/node/node_modules/.bin/tsc"))
        .args(["--noEmit", "--pretty", "false", "-p", "tsconfig.json"])
        .current_dir(root)
        .output()
        .context("cannot run tsc")?;
    let mut found = Vec::new();
    // `src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.`
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((place, rest)) = line.split_once("): error ") else {
            continue;
        };
        let Some((file, position)) = place.rsplit_once('(') else {
            continue;
        };
        let (row, column) = position.split_once(',').unwrap_or((position, "0"));
        let (code, message) = rest.split_once(": ").unwrap_or(("-", rest));
        found.push(Located {
            file: relative(root, file),
            line: row.parse().unwrap_or(0),
            column: column.parse().unwrap_or(0),
            key: format!("{code} {message}"),
        });
    }
    Ok(found)
}

/// The clang of clangd's own version (`clang-14` beside `clangd` 14), else `clang`.
fn clang() -> anyhow::Result<String> {
    let version = Command::new("clangd")
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let at = text.find("version ")? + "version ".len();
            text[at..].split('.').next().map(str::to_owned)
        });
    let names = version
        .map(|major| format!("clang-{major}"))
        .into_iter()
        .chain(["clang".to_owned()]);
    for name in names {
        if Command::new(&name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(name);
        }
    }
    bail!("clang is not installed (the C checker of the truth suite): apt-get install clang-14")
}

fn clang_syntax(root: &Path) -> anyhow::Result<Vec<Located>> {
    let database: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("compile_commands.json"))
            .context("the C project has no compile_commands.json")?,
    )?;
    let mut found = Vec::new();
    for entry in database.as_array().into_iter().flatten() {
        let arguments: Vec<String> = entry["arguments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        let Some((_compiler, rest)) = arguments.split_first() else {
            bail!("an entry of compile_commands.json has no arguments: {entry}");
        };
        let mut args: Vec<&str> = rest
            .iter()
            .map(String::as_str)
            .filter(|a| *a != "-c")
            .collect();
        args.extend([
            "-fsyntax-only",
            "-fno-color-diagnostics",
            "-fno-caret-diagnostics",
        ]);
        // Every error, as clangd reports them (clang stops at 20 by default).
        args.push("-ferror-limit=0");
        let directory = entry["directory"].as_str().unwrap_or(".");
        // The compiler clangd is built from, not the database's own: two compilers recover
        // from an error differently, and the count is clang's.
        let program = clang()?;
        let output = Command::new(&program)
            .args(&args)
            .current_dir(directory)
            .output()
            .with_context(|| format!("cannot run {program}"))?;
        // `lib/ultrajsondec.c:790:7: error: conflicting types for 'JSON_DecodeObject'; …`
        for line in String::from_utf8_lossy(&output.stderr).lines() {
            let mut parts = line.splitn(4, ':');
            let (Some(file), Some(row), Some(column), Some(rest)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Some(message) = rest.trim_start().strip_prefix("error: ") else {
                continue;
            };
            found.push(Located {
                file: relative(root, &Path::new(directory).join(file).to_string_lossy()),
                line: row.parse().unwrap_or(0),
                column: column.parse().unwrap_or(0),
                key: message.to_owned(),
            });
        }
    }
    Ok(found)
}

/// What the run has been told so far, per file and key: the rule a write's report must
/// follow, computed from the checker's readings alone.
///
/// - The run's baseline is the reading before its first write: nothing in it is new.
/// - A key's count above what is known is that many new errors.
/// - A count that falls is a fix when the write introduced no error anywhere; when it did,
///   the errors it introduced may hide others (a library that does not compile hides its
///   tests' errors), so the known count stays and their return is not news.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    known: Counts,
}

impl Ledger {
    /// A ledger whose baseline is `before`.
    pub(crate) fn new(before: &Counts) -> Self {
        Ledger {
            known: before.clone(),
        }
    }

    /// What a write introduced per file, given the checker's reading after it; updates
    /// what is known.
    pub(crate) fn write(&mut self, after: &Counts) -> BTreeMap<String, usize> {
        let mut introduced = BTreeMap::new();
        for (file, keys) in after {
            let known = self.known.get(file);
            let new: usize = keys
                .iter()
                .map(|(key, count)| {
                    count.saturating_sub(known.and_then(|k| k.get(key)).copied().unwrap_or(0))
                })
                .sum();
            if new > 0 {
                introduced.insert(file.clone(), new);
            }
        }
        let hidden = !introduced.is_empty();
        let files: BTreeSet<String> = self.known.keys().chain(after.keys()).cloned().collect();
        for file in files {
            let now = after.get(&file).cloned().unwrap_or_default();
            let entry = self.known.entry(file).or_default();
            let keys: BTreeSet<String> = entry.keys().chain(now.keys()).cloned().collect();
            for key in keys {
                let count = now.get(&key).copied().unwrap_or(0);
                let known = entry.entry(key).or_default();
                if count >= *known || !hidden {
                    *known = count;
                }
            }
            entry.retain(|_, count| *count > 0);
        }
        self.known.retain(|_, keys| !keys.is_empty());
        introduced
    }
}

/// The plain before/after difference per file: errors whose key's count rose.
pub(crate) fn difference(before: &Counts, after: &Counts) -> BTreeMap<String, usize> {
    let mut rose = BTreeMap::new();
    for (file, keys) in after {
        let new: usize = keys
            .iter()
            .map(|(key, count)| {
                count.saturating_sub(
                    before
                        .get(file)
                        .and_then(|k| k.get(key))
                        .copied()
                        .unwrap_or(0),
                )
            })
            .sum();
        if new > 0 {
            rose.insert(file.clone(), new);
        }
    }
    rose
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(items: &[(&str, &str, usize)]) -> Counts {
        let mut counts = Counts::new();
        for (file, key, count) in items {
            counts
                .entry((*file).to_owned())
                .or_default()
                .insert((*key).to_owned(), *count);
        }
        counts
    }

    #[test]
    fn hidden_errors_that_return_are_not_new_and_fixed_ones_are() {
        let baseline = counts(&[("benches/a.rs", "E0554", 1)]);
        let mut ledger = Ledger::new(&baseline);
        // The library breaks: the bench is not compiled, its error hidden.
        let broken = counts(&[("src/lib.rs", "E0308", 1)]);
        assert_eq!(
            ledger.write(&broken),
            BTreeMap::from([("src/lib.rs".to_owned(), 1)])
        );
        // The revert: the bench's error is back, and was there before the run.
        assert!(ledger.write(&baseline).is_empty());
        // A fix with nothing new is a fix: the error's return is news.
        assert!(ledger.write(&Counts::new()).is_empty());
        assert_eq!(
            ledger.write(&baseline),
            BTreeMap::from([("benches/a.rs".to_owned(), 1)])
        );
    }
}

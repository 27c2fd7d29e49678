//! Which translation units include a header (SPEC section 11): the compilation database
//! (`compile_commands.json` at the root or in `build/`, or `compile_flags.txt` for every
//! source under the root) gives each unit its folder and include paths; each unit's
//! `#include` lines are followed through the workspace's own headers, as the preprocessor
//! resolves them (`"…"` beside the including file first, then `-iquote` and `-I`; `<…>`
//! through `-I` and `-isystem`). A header written by a call is judged through these units,
//! never on its own: parsed alone, a header that relies on its includer (`PyObject` from
//! `Python.h`) is full of errors no compiler ever reports.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tools_core::normalize_lexically;

/// Extensions of headers: a write to one changes every unit that includes it.
const HEADERS: &[&str] = &["h", "hh", "hpp", "hxx", "h++", "inc", "inl", "ipp", "tcc"];

/// Extensions of the sources `compile_flags.txt` applies to.
const SOURCES: &[&str] = &["c", "cc", "cpp", "cxx", "c++", "m", "mm"];

/// Files larger than this are not read for their includes (generated code).
const SCANNED_BYTES: u64 = 4 << 20;

/// How many sources a `compile_flags.txt` project is searched for.
const FLAGS_SOURCES: usize = 20_000;

/// Whether `path` is a C or C++ header.
pub(crate) fn is_header(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| HEADERS.contains(&extension.to_ascii_lowercase().as_str()))
}

/// One translation unit as the database compiles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) file: PathBuf,
    /// Searched for `"…"` includes after the including file's folder.
    quote_dirs: Vec<PathBuf>,
    /// Searched for both kinds (`-I`, then `-isystem`).
    dirs: Vec<PathBuf>,
}

/// A project's translation units, from `compile_commands.json`,
/// `build/compile_commands.json` or `compile_flags.txt`; without any of them, every source
/// under the root with no flags, as clangd compiles such files.
#[derive(Debug, Clone)]
pub(crate) struct Database {
    pub(crate) units: Vec<Unit>,
    /// No database: includes were followed from each file's own folder only, so a unit that
    /// reaches a header through an `-I` folder may be missing.
    pub(crate) guessed: bool,
}

/// The project's translation units, from its compilation database or, without one, every
/// source under the root.
pub(crate) fn database(root: &Path) -> Database {
    for name in ["compile_commands.json", "build/compile_commands.json"] {
        let path = root.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let units = entries.iter().filter_map(unit_of).collect();
        return Database {
            units,
            guessed: false,
        };
    }
    let flags = std::fs::read_to_string(root.join("compile_flags.txt")).ok();
    let guessed = flags.is_none();
    let arguments: Vec<String> = flags
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    let (quote_dirs, dirs) = include_dirs(&arguments, root);
    let mut units = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    for entry in walk.flatten().take(FLAGS_SOURCES) {
        let path = entry.path();
        let is_source = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCES.contains(&e.to_ascii_lowercase().as_str()));
        if is_source && entry.file_type().is_some_and(|kind| kind.is_file()) {
            units.push(Unit {
                file: path.to_path_buf(),
                quote_dirs: quote_dirs.clone(),
                dirs: dirs.clone(),
            });
        }
    }
    Database { units, guessed }
}

/// One `compile_commands.json` entry.
fn unit_of(entry: &Value) -> Option<Unit> {
    let directory = PathBuf::from(entry.get("directory")?.as_str()?);
    let arguments: Vec<String> = match entry.get("arguments") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => split_command(entry.get("command")?.as_str()?),
    };
    let file = normalize_lexically(&directory.join(entry.get("file")?.as_str()?));
    let (quote_dirs, dirs) = include_dirs(&arguments, &directory);
    Some(Unit {
        file,
        quote_dirs,
        dirs,
    })
}

/// A shell command line split into words (quotes and backslashes as a shell reads them).
fn split_command(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(ch) = chars.next() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `-iquote` folders, and the `-I` then `-isystem`/`-idirafter` folders, of a command.
fn include_dirs(arguments: &[String], directory: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut quote = Vec::new();
    let mut normal_dirs = Vec::new();
    let mut system = Vec::new();
    let mut words = arguments.iter();
    while let Some(word) = words.next() {
        let Some((flag, rest)) = ["-iquote", "-isystem", "-idirafter", "-I"]
            .iter()
            .find_map(|flag| Some((*flag, word.strip_prefix(flag)?)))
        else {
            continue;
        };
        let dir = match rest.is_empty() {
            true => words.next().cloned(),
            false => Some(rest.to_owned()),
        };
        let Some(dir) = dir else {
            continue;
        };
        let dir = normalize_lexically(&directory.join(dir));
        match flag {
            "-iquote" => quote.push(dir),
            "-I" => normal_dirs.push(dir),
            _ => system.push(dir),
        }
    }
    normal_dirs.extend(system);
    (quote, normal_dirs)
}

/// An `#include` line's target and whether it was quoted.
fn includes_of(text: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = ["include_next", "include", "import"]
            .iter()
            .find_map(|directive| rest.strip_prefix(directive))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let (quoted, close) = match rest.chars().next() {
            Some('"') => (true, '"'),
            Some('<') => (false, '>'),
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            found.push((rest[1..1 + end].to_owned(), quoted));
        }
    }
    found
}

/// The units that include one of `headers`, directly or through other headers of the
/// workspace, in path order; reading each file once.
pub(crate) fn includers(database: &Database, root: &Path, headers: &[PathBuf]) -> Vec<PathBuf> {
    let wanted: HashSet<PathBuf> = headers.iter().map(|h| normalize_lexically(h)).collect();
    let mut directives: HashMap<PathBuf, Vec<(String, bool)>> = HashMap::new();
    let mut read = |path: &Path| -> Vec<(String, bool)> {
        directives
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= SCANNED_BYTES);
                match small {
                    true => tools_core::read_regular(path)
                        .map(|bytes| includes_of(&String::from_utf8_lossy(&bytes)))
                        .unwrap_or_default(),
                    false => Vec::new(),
                }
            })
            .clone()
    };
    let mut found = Vec::new();
    for unit in &database.units {
        if wanted.contains(&unit.file) {
            continue;
        }
        let mut seen: HashSet<PathBuf> = HashSet::from([unit.file.clone()]);
        let mut stack = vec![unit.file.clone()];
        let mut hit = false;
        while let Some(file) = stack.pop() {
            for (name, quoted) in read(&file) {
                let Some(resolved) = resolve(unit, &file, &name, quoted) else {
                    continue;
                };
                if wanted.contains(&resolved) {
                    hit = true;
                    break;
                }
                // Only the workspace's own headers can lead to a written one.
                if resolved.starts_with(root) && seen.insert(resolved.clone()) {
                    stack.push(resolved);
                }
            }
            if hit {
                break;
            }
        }
        if hit {
            found.push(unit.file.clone());
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Where `name`, included from `from` in `unit`, is found.
fn resolve(unit: &Unit, from: &Path, name: &str, quoted: bool) -> Option<PathBuf> {
    if Path::new(name).is_absolute() {
        let path = normalize_lexically(Path::new(name));
        return path.is_file().then_some(path);
    }
    let beside = from.parent().map(|dir| dir.to_path_buf());
    let candidates = quoted
        .then_some(beside)
        .flatten()
        .into_iter()
        .chain(
            quoted
                .then(|| unit.quote_dirs.clone())
                .into_iter()
                .flatten(),
        )
        .chain(unit.dirs.iter().cloned());
    for dir in candidates {
        let path = normalize_lexically(&dir.join(name));
        if path.is_file() {
            return Some(path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_lines_and_command_lines_are_read_as_the_compiler_reads_them() {
        assert_eq!(
            includes_of(
                "#include <Python.h>\n  #  include \"ujson.h\"\n#define X\n#import <a/b.h>\n"
            ),
            [
                ("Python.h".to_owned(), false),
                ("ujson.h".to_owned(), true),
                ("a/b.h".to_owned(), false)
            ]
        );
        assert_eq!(
            split_command(r#"gcc -I "my dir" -DNAME=\"x\" -c a.c"#),
            ["gcc", "-I", "my dir", "-DNAME=\"x\"", "-c", "a.c"]
        );
        let (quote, dirs) = include_dirs(
            &split_command("cc -Iinclude -iquote q -isystem /usr/include/x -I ../lib a.c"),
            Path::new("/p/build"),
        );
        assert_eq!(quote, [PathBuf::from("/p/build/q")]);
        assert_eq!(
            dirs,
            [
                PathBuf::from("/p/build/include"),
                PathBuf::from("/p/lib"),
                PathBuf::from("/usr/include/x")
            ]
        );
    }

    #[test]
    fn a_header_is_included_by_the_units_that_reach_it_through_other_headers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        tools_test_support::write_fixture(
            &root,
            r#"
//- /lib/api.h
#include "detail.h"
//- /lib/detail.h
int detail(void);
//- /python/module.h
extern int x;
//- /python/a.c
#include <api.h>
//- /python/b.c
#include "module.h"
//- /lib/c.c
#include "detail.h"
//- /lib/d.c
#include <stdio.h>
"#,
        )
        .unwrap();
        let database = format!(
            r#"[
{{"directory": "{0}", "file": "python/a.c", "arguments": ["gcc", "-I", "lib", "-c", "python/a.c"]}},
{{"directory": "{0}", "file": "python/b.c", "command": "gcc -I lib -c python/b.c"}},
{{"directory": "{0}", "file": "lib/c.c", "arguments": ["gcc", "-c", "lib/c.c"]}},
{{"directory": "{0}", "file": "lib/d.c", "arguments": ["gcc", "-c", "lib/d.c"]}}
]"#,
            root.display()
        );
        std::fs::write(root.join("compile_commands.json"), database).unwrap();
        let database = super::database(&root);
        assert!(!database.guessed);
        assert_eq!(
            includers(&database, &root, &[root.join("lib/detail.h")]),
            [root.join("lib/c.c"), root.join("python/a.c")]
        );
        assert_eq!(
            includers(&database, &root, &[root.join("python/module.h")]),
            [root.join("python/b.c")]
        );
        assert!(includers(&database, &root, &[root.join("lib/none.h")]).is_empty());
        assert!(is_header(Path::new("src/subtree.h")));
        assert!(!is_header(Path::new("src/subtree.c")));
    }
}

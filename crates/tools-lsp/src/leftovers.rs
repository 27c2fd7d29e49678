//! What a rename left behind (LSP-8): the whole-identifier occurrences of the old name still
//! in the project's files of the server's languages, each told apart with the tree-sitter
//! grammar of its language — code (a use the server did not see, or another symbol of that
//! name), code the current cfg/features do not compile (rust-analyzer's `inactive-code`
//! ranges), or a comment, string or docstring (text the agent may want to update).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ast_grep_core::AstGrep;
use ast_grep_core::language::Language as _;
use ast_grep_language::SupportLang;
use schemars::JsonSchema;
use serde::Serialize;
use tools_core::{Line, Place};

use tools_lsp_client::ServerSpec;

/// Folders whose files are not the project's own: a rename does not reach them.
const NOT_SEARCHED: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    ".venv",
    "__pycache__",
    "build",
    "dist",
];

/// At most this many occurrences are classified; the rest are counted as code.
const CLASSIFIED: usize = 5_000;

/// What kind of text an occurrence is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeftoverKind {
    /// Code the server compiles.
    Code,
    /// Code the current cfg or features leave out: the server does not analyse it.
    InactiveCode,
    /// A comment, a string or a docstring.
    CommentOrString,
}

/// One occurrence of the old name after a rename; `path`, `line` and `text` are the line it
/// is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Leftover {
    /// Where it is: `path`, `line` and that line's `text`.
    #[serde(flatten)]
    pub place: Place,
    /// Code, inactive code, or a comment or string.
    pub kind: LeftoverKind,
}

/// One occurrence found on disk, before it is shown.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) line: Line,
    pub(crate) line_text: String,
    pub(crate) kind: LeftoverKind,
}

/// Every whole-identifier occurrence of `name` in the files of `spec`'s languages under
/// `root` (`.gitignore` respected, dependency folders left out), in path and line order,
/// each classified as code or comment/string.
pub(crate) fn find(spec: &ServerSpec, root: &Path, name: &str) -> Vec<Found> {
    let mut found = Vec::new();
    if name.is_empty() {
        return found;
    }
    let finder = memchr::memmem::Finder::new(name.as_bytes());
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|entry| !NOT_SEARCHED.contains(&entry.file_name().to_string_lossy().as_ref()))
        .build();
    for entry in walk.flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|kind| kind.is_file()) || spec.language_id(path).is_none()
        {
            continue;
        }
        let Ok(bytes) = tools_core::read_regular(path) else {
            continue;
        };
        if finder.find(&bytes).is_none() {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut offsets = Vec::new();
        let mut line_start = 0;
        for (index, line) in text.split_inclusive('\n').enumerate() {
            for at in word_positions(line, name) {
                offsets.push((line_start + at, index, line.trim_end_matches(['\n', '\r'])));
            }
            line_start += line.len();
        }
        if offsets.is_empty() {
            continue;
        }
        let kinds = match found.len() < CLASSIFIED {
            true => classify(path, &text, offsets.iter().map(|(at, _, _)| *at)),
            false => vec![LeftoverKind::Code; offsets.len()],
        };
        for ((_, line, line_text), kind) in offsets.into_iter().zip(kinds) {
            found.push(Found {
                path: path.to_path_buf(),
                line: Line::from_index(line),
                line_text: line_text.to_owned(),
                kind,
            });
        }
    }
    found
}

/// The kind of each byte offset's text in `source`, by its language's grammar; code when the
/// file's language has no grammar here.
fn classify(path: &Path, source: &str, offsets: impl Iterator<Item = usize>) -> Vec<LeftoverKind> {
    let parsed = SupportLang::from_path(path).and_then(|lang| AstGrep::try_new(source, lang).ok());
    offsets
        .map(|offset| match &parsed {
            Some(tree) => kind_at(&tree.root(), offset),
            None => LeftoverKind::Code,
        })
        .collect()
}

/// Whether the innermost node at `offset` is inside a comment or string (and not inside an
/// interpolation within one, like `f"{name}"` or `` `${name}` ``).
fn kind_at<D: ast_grep_core::Doc>(
    root: &ast_grep_core::Node<'_, D>,
    offset: usize,
) -> LeftoverKind {
    let mut chain = vec![root.kind().into_owned()];
    let mut node = root.clone();
    loop {
        let Some(child) = node
            .children()
            .find(|child| child.range().contains(&offset))
        else {
            break;
        };
        chain.push(child.kind().into_owned());
        node = child;
    }
    for kind in chain.iter().rev() {
        if kind.contains("interpolation") || kind.contains("substitution") {
            return LeftoverKind::Code;
        }
        if kind.contains("comment") || kind.contains("string") || kind == "heredoc_body" {
            return LeftoverKind::CommentOrString;
        }
    }
    LeftoverKind::Code
}

/// The byte offsets in `text` where `word` occurs as a whole identifier.
pub(crate) fn word_positions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_' || ch == '$';
    text.match_indices(word).filter_map(move |(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        (!before.is_some_and(ident) && !after.is_some_and(ident)).then_some(start)
    })
}

/// How many of each kind, code first.
pub(crate) fn counts(found: &[Found]) -> BTreeMap<LeftoverKind, usize> {
    let mut counts = BTreeMap::new();
    for item in found {
        *counts.entry(item.kind).or_default() += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(file: &str, text: &str, word: &str) -> Vec<LeftoverKind> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let offsets: Vec<usize> = word_positions(text, word).collect();
        classify(&path, text, offsets.into_iter())
    }

    #[test]
    fn lsp_8_code_is_told_from_comments_strings_and_docstrings() {
        use LeftoverKind::{Code, CommentOrString};
        let python = "def scale(x):\n    \"\"\"Call scale twice.\"\"\"\n    # scale here\n    return scale(x) + len(f\"{scale}\") + len(\"scale\")\n";
        assert_eq!(
            kinds("a.py", python, "scale"),
            [
                Code,
                CommentOrString,
                CommentOrString,
                Code,
                Code,
                CommentOrString
            ]
        );
        let rust =
            "/// Uses `add`.\nfn f() -> u32 { add(1, 2) } // add\nconst S: &str = \"add\";\n";
        assert_eq!(
            kinds("a.rs", rust, "add"),
            [CommentOrString, Code, CommentOrString, CommentOrString]
        );
        let ts = "// go\nconst a = go(1);\nconst b = `${go} go`;\n";
        assert_eq!(
            kinds("a.ts", ts, "go"),
            [CommentOrString, Code, Code, CommentOrString]
        );
    }

    #[test]
    fn lsp_8_uses_the_server_left_are_found_as_whole_identifiers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("stack.h"),
            "void ts_stack_halt(Stack *);\nvoid ts_stack_halted(void);\n",
        )
        .unwrap();
        std::fs::write(root.join("stack.c"), "void renamed(Stack *s) {}\n").unwrap();
        std::fs::write(root.join("notes.md"), "ts_stack_halt\n").unwrap();
        let spec = tools_lsp_client::builtin_servers()
            .unwrap()
            .into_iter()
            .find(|s| s.name == "clangd")
            .unwrap();
        let found = find(&spec, root, "ts_stack_halt");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, root.join("stack.h"));
        assert_eq!(found[0].line, Line::FIRST);
        assert_eq!(found[0].kind, LeftoverKind::Code);
    }
}

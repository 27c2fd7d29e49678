//! Fallout: the files a write did not touch that it may have broken (SPEC section 10), found
//! per server the cheapest way that still sees them:
//! - a server that checks the whole project on save (rust-analyzer's `cargo check`) publishes
//!   every file's findings during the settle: the files whose publish changed are the ones;
//! - servers that answer pulls (basedpyright, tsserver) are asked about the files that import
//!   a written module, found by a search of the project (at most [`IMPORTERS_CAP`]);
//! - the rest publish for the documents they have open: when a header was written, the open
//!   files that include it are waited for while the server rebuilds them against it.
//!
//! This module finds the files; diagnostics on write asks the servers and applies the LSP-7
//! registry to each of them as to a written file.

use std::path::{Path, PathBuf};

use crate::servers::ServerSpec;

/// The most importers of a written module asked about after a write.
pub(crate) const IMPORTERS_CAP: usize = 30;

/// The most files an importer search reads; a larger project is searched in part (and the
/// files left out are simply not asked about).
const SEARCHED_FILES: usize = 5_000;

/// Files larger than this are not read when searching for importers (generated code).
const SEARCHED_BYTES: u64 = 1 << 20;

/// Extensions of headers: a write to one changes every file that includes it.
const HEADERS: &[&str] = &["h", "hh", "hpp", "hxx", "h++", "inc", "inl", "ipp", "tcc"];

/// Whether `path` is a C or C++ header.
pub(crate) fn is_header(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| HEADERS.contains(&extension.to_ascii_lowercase().as_str()))
}

/// The files of `spec`'s languages under `root` (respecting `.gitignore`) that import one of
/// `written`, in path order, at most `cap`; the written files themselves are left out.
pub(crate) fn importers(
    spec: &ServerSpec,
    root: &Path,
    written: &[PathBuf],
    cap: usize,
) -> Vec<PathBuf> {
    let names: Vec<String> = written
        .iter()
        .filter(|path| spec.language_id(path).is_some())
        .filter_map(|path| module_name(path))
        .collect();
    if names.is_empty() || cap == 0 {
        return Vec::new();
    }
    let finders: Vec<memchr::memmem::Finder<'_>> = names
        .iter()
        .map(|name| memchr::memmem::Finder::new(name.as_bytes()))
        .collect();
    let mut found = Vec::new();
    let mut searched = 0;
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            !matches!(
                name.as_ref(),
                "node_modules" | "target" | "venv" | ".venv" | "__pycache__"
            )
        })
        .build();
    for entry in walk.flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|kind| kind.is_file())
            || spec.language_id(path).is_none()
            || written.iter().any(|w| w == path)
        {
            continue;
        }
        if entry.metadata().is_ok_and(|m| m.len() > SEARCHED_BYTES) {
            continue;
        }
        searched += 1;
        if searched > SEARCHED_FILES {
            break;
        }
        let Ok(bytes) = tools_core::read_regular(path) else {
            continue;
        };
        if !finders.iter().any(|f| f.find(&bytes).is_some()) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        if imports(&text, &names) {
            found.push(path.to_path_buf());
            if found.len() == cap {
                break;
            }
        }
    }
    found
}

/// The name other files import a file by: its stem, or its folder's name for a package's
/// `__init__.py` or a folder's `index.ts`.
fn module_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    // `types.d.ts` is imported as `types`.
    let stem = stem.strip_suffix(".d").unwrap_or(stem);
    if matches!(stem, "__init__" | "index" | "mod") {
        return Some(path.parent()?.file_name()?.to_str()?.to_owned());
    }
    Some(stem.to_owned())
}

/// Whether one of `text`'s import lines (Python `import`/`from`, JavaScript and TypeScript
/// `import`/`export … from`/`require`) names one of `names` as a whole word.
fn imports(text: &str, names: &[String]) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        let is_import = line.starts_with("import ")
            || line.starts_with("from ")
            || line.starts_with("export ")
            || line.contains("require(")
            || line.contains("import(");
        is_import && names.iter().any(|name| has_word(line, name))
    })
}

/// Whether `word` occurs in `text` with no identifier character on either side.
pub(crate) fn has_word(text: &str, word: &str) -> bool {
    word_positions(text, word).next().is_some()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines_name_a_module_as_a_whole_word() {
        let names = vec!["shapes".to_owned()];
        assert!(imports("from app.shapes import area\n", &names));
        assert!(imports("import shapes\n", &names));
        assert!(imports("  from .shapes import (\n", &names));
        assert!(imports("import { area } from './shapes';\n", &names));
        assert!(imports("const s = require('../lib/shapes');\n", &names));
        assert!(!imports("from app.shapes_extra import area\n", &names));
        assert!(!imports("x = shapes.area(1)\n", &names));
    }

    #[test]
    fn a_package_is_imported_by_its_folder_name() {
        assert_eq!(
            module_name(Path::new("/p/app/__init__.py")).as_deref(),
            Some("app")
        );
        assert_eq!(
            module_name(Path::new("/p/src/util/index.ts")).as_deref(),
            Some("util")
        );
        assert_eq!(
            module_name(Path::new("/p/src/types.d.ts")).as_deref(),
            Some("types")
        );
        assert!(is_header(Path::new("src/subtree.h")));
        assert!(!is_header(Path::new("src/subtree.c")));
    }

    #[test]
    fn whole_words_only() {
        let found: Vec<usize> = word_positions(
            "ts_stack_halt(x); my_ts_stack_halt; ts_stack_halt",
            "ts_stack_halt",
        )
        .collect();
        assert_eq!(found, [0, 36]);
    }

    #[test]
    fn importers_are_found_in_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("app/shapes.py"), "def area(): ...\n").unwrap();
        std::fs::write(root.join("app/uses.py"), "from app.shapes import area\n").unwrap();
        std::fs::write(root.join("app/other.py"), "import os\n").unwrap();
        std::fs::write(root.join("notes.txt"), "from app.shapes import area\n").unwrap();
        let spec = crate::servers::builtin()
            .into_iter()
            .find(|s| s.name == "basedpyright")
            .unwrap();
        let found = importers(&spec, root, &[root.join("app/shapes.py")], IMPORTERS_CAP);
        assert_eq!(found, [root.join("app/uses.py")]);
    }
}

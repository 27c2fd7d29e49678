//! `cargo xtask tidy`: the specification's rule IDs can be found with one search, as
//! rust-analyzer's `tidy.rs` keeps its own house rules. It fails when
//! - an ID of the specification appears neither in code nor in a test's name (tests keep
//!   their form, `lsp_6_…`, which counts as `LSP-6`);
//! - IDs are written as a range or a list (`AST-1…4`, `LSP-6/7`), which a search for `AST-3`
//!   or `LSP-7` does not find;
//! - code names an ID the specification does not have.
//!
//! The IDs are the bold `**XXX-N**` rule heads of the specification, which lives beside the
//! repository, not in it; `spec_ids.txt` is their list, checked against the specification
//! whenever it is there to read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use regex::Regex;

/// Every rule ID of the specification, one per line.
const SPEC_IDS: &str = include_str!("spec_ids.txt");

/// The rule families of the specification, as IDs write them.
const FAMILIES: &[&str] = &["CORE", "LSP", "AST", "DBG", "EVAL", "ASK", "VIBE", "PROD"];

/// What the tidy check found; empty when the tree is tidy.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// IDs found neither in code nor in a test name.
    pub(crate) missing: Vec<String>,
    /// `path:LINE: text` of each range or list of IDs.
    pub(crate) ranges: Vec<String>,
    /// `path:LINE: ID` of each ID the specification does not have.
    pub(crate) unknown: Vec<String>,
    /// How the specification's list differs from `spec_ids.txt`, when the specification is
    /// there to read.
    pub(crate) stale_list: Option<String>,
}

impl Findings {
    fn is_tidy(&self) -> bool {
        self.missing.is_empty()
            && self.ranges.is_empty()
            && self.unknown.is_empty()
            && self.stale_list.is_none()
    }

    fn render(&self) -> String {
        let mut text = String::new();
        if let Some(stale) = &self.stale_list {
            text.push_str(&format!(
                "xtask/src/spec_ids.txt is not the specification's list of IDs ({stale}); \
                 write one `**XXX-N**` rule head per line into it\n"
            ));
        }
        if !self.missing.is_empty() {
            text.push_str(&format!(
                "{} IDs of the specification appear neither in code nor in a test name (name \
                 the test after the rule, `lsp_6_…`, or cite the ID where the rule explains \
                 the code): {}\n",
                self.missing.len(),
                self.missing.join(", ")
            ));
        }
        if !self.ranges.is_empty() {
            text.push_str(&format!(
                "{} ranges or lists of IDs, which a search for one ID misses; write each ID \
                 out (`AST-1, AST-2`):\n",
                self.ranges.len()
            ));
            for range in &self.ranges {
                text.push_str(&format!("  {range}\n"));
            }
        }
        if !self.unknown.is_empty() {
            text.push_str(&format!(
                "{} IDs the specification does not have:\n",
                self.unknown.len()
            ));
            for unknown in &self.unknown {
                text.push_str(&format!("  {unknown}\n"));
            }
        }
        text
    }
}

/// `cargo xtask tidy`.
pub(crate) fn run() -> anyhow::Result<()> {
    let findings = check(&crate::project_root())?;
    if !findings.is_tidy() {
        bail!("the tree is not tidy:\n{}", findings.render());
    }
    println!("tidy: every ID of the specification is in code or a test name, each written out");
    Ok(())
}

/// Checks the tree under `root`.
pub(crate) fn check(root: &Path) -> anyhow::Result<Findings> {
    let spec: BTreeSet<String> = SPEC_IDS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    let families = FAMILIES.join("|");
    let id = Regex::new(&format!(r"\b({families})-(\d+)\b"))?;
    // `AST-1…4`, `AST-1..4`, `AST-1–4`, `AST-1 - 4`, `LSP-6/7`: one ID, then more numbers.
    let range = Regex::new(&format!(
        r"\b({families})-\d+ ?(…|\.\.\.?|–|—|/| - |-)\d+\b"
    ))?;
    let lowercase = families.to_lowercase();
    let test_name = Regex::new(&format!(r"\b(?:fn|def) (?:test_)?({lowercase})_(\d+)_"))?;

    let mut findings = Findings::default();
    let mut cited: BTreeMap<String, usize> = BTreeMap::new();
    for path in files(root)? {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let code = is_code(&path);
        for (number, line) in text.lines().enumerate() {
            for found in range.find_iter(line) {
                findings
                    .ranges
                    .push(format!("{shown}:{}: {}", number + 1, found.as_str()));
            }
            for captures in id.captures_iter(line) {
                let found = captures[0].to_owned();
                if !spec.contains(&found) {
                    findings
                        .unknown
                        .push(format!("{shown}:{}: {found}", number + 1));
                } else if code {
                    *cited.entry(found).or_default() += 1;
                }
            }
            if code {
                for captures in test_name.captures_iter(line) {
                    let found = format!("{}-{}", captures[1].to_uppercase(), &captures[2]);
                    if spec.contains(&found) {
                        *cited.entry(found).or_default() += 1;
                    } else {
                        findings
                            .unknown
                            .push(format!("{shown}:{}: test for {found}", number + 1));
                    }
                }
            }
        }
    }
    findings.missing = spec
        .iter()
        .filter(|id| !cited.contains_key(*id))
        .cloned()
        .collect();
    findings.stale_list = stale_list(root, &spec);
    Ok(findings)
}

/// Whether `path` is code (where an ID counts as cited), not prose.
fn is_code(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|extension| extension.to_str()),
        Some("rs" | "py" | "js" | "mjs")
    )
}

/// The files whose IDs are checked: code, and the docs and READMEs written by hand. The
/// generated docs, snapshots and lock files are left out: nobody writes IDs there.
fn files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(root).hidden(true).build() {
        let entry = entry.context("cannot walk the repository")?;
        let path = entry.path();
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap_or(path);
        let generated = relative.starts_with("docs/tools")
            || relative.starts_with("docs/schemas")
            || relative
                .components()
                .any(|part| part.as_os_str() == "snapshots");
        // This file's own examples of what it refuses.
        let this = relative == Path::new("xtask/src/tidy.rs");
        let written = is_code(path)
            || matches!(
                path.extension().and_then(|extension| extension.to_str()),
                Some("md" | "toml")
            );
        if written && !generated && !this {
            files.push(path.to_path_buf());
        }
    }
    files.sort();
    Ok(files)
}

/// How the specification's rule heads differ from `spec`, when the specification is beside
/// the repository (`../shared/SPEC.md`); `None` when they agree or it is not there.
fn stale_list(root: &Path, spec: &BTreeSet<String>) -> Option<String> {
    let text = std::fs::read_to_string(root.join("../shared/SPEC.md")).ok()?;
    let head = Regex::new(r"\*\*([A-Z]+-\d+)\*\*").ok()?;
    let written: BTreeSet<String> = head
        .captures_iter(&text)
        .map(|captures| captures[1].to_owned())
        .collect();
    let added: Vec<&String> = written.difference(spec).collect();
    let removed: Vec<&String> = spec.difference(&written).collect();
    match (added.is_empty(), removed.is_empty()) {
        (true, true) => None,
        _ => Some(format!(
            "the specification adds {added:?} and no longer has {removed:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_text(files: &[(&str, &str)]) -> Findings {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        check(dir.path()).unwrap()
    }

    #[test]
    fn ranges_and_lists_of_ids_are_found_and_single_ids_are_not() {
        let findings = check_text(&[(
            "src/lib.rs",
            "//! AST-1…4, LSP-6/7 and DBG-1..3; CORE-4 and ASK-3's rule\n",
        )]);
        assert_eq!(
            findings.ranges,
            [
                "src/lib.rs:1: AST-1…4",
                "src/lib.rs:1: LSP-6/7",
                "src/lib.rs:1: DBG-1..3"
            ]
        );
        assert!(findings.unknown.is_empty());
    }

    #[test]
    fn a_test_name_cites_its_rule_and_an_unknown_id_is_named() {
        let findings = check_text(&[
            ("src/a.rs", "#[test]\nfn lsp_6_a_write_reports() {}\n"),
            ("tests/test_x.py", "def test_prod_2_serves():\n    pass\n"),
            ("src/b.rs", "// LSP-9 is not a rule\n"),
        ]);
        assert!(!findings.missing.contains(&"LSP-6".to_owned()));
        assert!(!findings.missing.contains(&"PROD-2".to_owned()));
        assert!(findings.missing.contains(&"LSP-5".to_owned()));
        assert_eq!(findings.unknown, ["src/b.rs:1: LSP-9"]);
    }

    #[test]
    fn an_id_only_in_prose_is_not_cited() {
        let findings = check_text(&[("docs/a.md", "EVAL-7 says so\n")]);
        assert!(findings.missing.contains(&"EVAL-7".to_owned()));
    }

    /// The repository itself: every rule is cited, each ID written out.
    #[test]
    fn the_spec_ids_are_greppable() {
        let findings = check(&crate::project_root()).unwrap();
        assert!(findings.is_tidy(), "{}", findings.render());
    }
}

//! Unified diffs as `git diff` (or `diff -u`) prints them: parsing a patch into per-file hunks
//! and applying one file's hunks to its text, all in memory.
//!
//! The `apply_patch` tool of agent-tools reads and writes the files; this crate only turns text
//! into text, so that every rule about matching, line endings and the final newline can be
//! tested without a file system. Its errors are typed values whose `Display` is written for a
//! model: it says where the problem is, what is wrong and what to send instead.
//!
//! **Architecture invariant:** apply-patch depends on no crate of ours and does no IO.

mod apply;
mod error;
#[cfg(test)]
mod fixtures;
mod parse;
mod patch;

pub use crate::{
    apply::apply_file_patch,
    error::{Advice, ApplyError, Mismatch, ParseError, Side},
    parse::parse_patch,
    patch::{FilePatch, Hunk, HunkLine},
};

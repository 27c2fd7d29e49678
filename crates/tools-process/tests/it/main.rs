//! Integration tests with real processes: groups that go entirely, children that die with
//! their parent, orphans that are reaped, output that is capped without deadlock. Every test
//! finds its processes by a unique environment mark, so parallel tests (and parallel test
//! processes) never touch each other's. Tests that change the whole process (subreaper,
//! shutdown of every group) run in a helper process: this binary re-executed (`helper.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod contain;
mod groups;
mod helper;
mod reaper;
mod roots;
mod run;
mod sandbox;
mod search;
mod support;
mod tail;

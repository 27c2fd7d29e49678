//! Integration tests against real language servers: rust-analyzer, basedpyright, clangd and
//! typescript-language-server, each on a small fixture project written by the tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod c;
mod protocol;
mod python;
mod rust;
mod sandbox;
mod support;
mod typescript;

//! One match of a pattern in one file: what a search finds (`search.rs`) and the syntax index
//! remembers for the next search of the same pattern (`index.rs`). It sits below both, so the
//! index needs nothing of the search that fills it.

use std::path::Path;
use std::sync::Arc;

use tools_core::Line;

/// One match in one file.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Shared by every match of the file.
    pub(crate) path: Arc<Path>,
    /// Byte range in the file.
    pub(crate) range: std::ops::Range<usize>,
    /// The line and 1-based column (in characters) of the start, and the end line.
    pub(crate) line: Line,
    pub(crate) column: usize,
    pub(crate) end_line: Line,
    pub(crate) text: String,
    /// The text of the line the match starts on.
    pub(crate) line_text: String,
    /// `$NAME` captures, and `$$$NAME` captures as the text they span.
    pub(crate) captures: Vec<(String, String)>,
}

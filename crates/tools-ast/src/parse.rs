//! Parsing a file for the syntax index: one tree, or for a large Python file, one tree per
//! piece, parsed on every core at once (issue 23), and each tree's [`KindIndex`], built by the
//! first walk of it. The index holds what is made here; nothing here knows the index.
//!
//! tree-sitter parses one file on one thread, about 10 MB a second, so a 14 MB file costs
//! more than a second however many cores there are. Python's top-level statements end at a
//! newline outside any bracket, string or indented block, so a line that starts at column 0
//! with a word or a decorator begins a statement of the module unless something before it is
//! still open. The file is cut at such lines into pieces of about [`PIECE_BYTES`], and every
//! piece is parsed by itself. Something still open at a cut (a string, a bracket, a block
//! whose `else` follows, a decorator, a line continued by `\`) leaves an error in the piece
//! before it or the one after, so the pieces are kept only when none of them holds an
//! error; otherwise the file is parsed whole, as it would have been. Kept pieces hold the
//! same nodes as the whole tree, except its root: a pattern that may match the root's kind
//! is searched in a whole tree ([`Parsed::may_match_root`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Matcher as _, Node};
use ast_grep_language::SupportLang;

use crate::compile::Compiled;

/// About how much one piece holds.
const PIECE_BYTES: usize = 1 << 20;

/// Files smaller than this are parsed whole: below it, a second thread saves less than a
/// few tens of milliseconds.
const PIECES_FROM_BYTES: usize = 2 * PIECE_BYTES;

/// A parsed file: its pieces' trees (one piece, the whole file, unless it was cut).
pub(crate) struct Parsed {
    pub(crate) pieces: Vec<Piece>,
    /// The whole text, when there are several pieces (one piece's tree owns its text).
    whole: Option<String>,
}

/// One tree of a parsed file.
pub(crate) struct Piece {
    /// The tree, which owns the piece's text.
    pub(crate) root: AstGrep<StrDoc<SupportLang>>,
    /// Where the piece begins in the file: the byte, and the 0-based row.
    pub(crate) start: usize,
    pub(crate) row: usize,
    /// Where each kind of node is, built by the first search's walk of the piece.
    pub(crate) kinds: OnceLock<KindIndex>,
}

impl Piece {
    fn new(root: AstGrep<StrDoc<SupportLang>>, start: usize, row: usize) -> Self {
        Piece {
            root,
            start,
            row,
            kinds: OnceLock::new(),
        }
    }

    fn has_error(&self) -> bool {
        self.root.root().get_inner_node().has_error()
    }

    /// Its nodes, the root included.
    pub(crate) fn nodes(&self) -> usize {
        self.root.root().get_inner_node().descendant_count()
    }

    /// Walks every node in pre-order, giving `visit` each one of a kind `wanted` accepts,
    /// and keeps every node's kind as the piece's kind index.
    pub(crate) fn walk_indexing<'r>(
        &'r self,
        wanted: impl Fn(u16) -> bool,
        mut visit: impl FnMut(Node<'r, StrDoc<SupportLang>>),
    ) {
        let top = self.root.root().get_inner_node();
        let mut cursor = top.walk();
        let mut order: Vec<u16> = Vec::with_capacity(top.descendant_count());
        'walk: loop {
            let kind = cursor.node().kind_id();
            order.push(kind);
            if wanted(kind) {
                visit(self.root.adopt(cursor.node()));
            }
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        let _ = self.kinds.set(KindIndex::from_order(&order));
    }

    /// Builds its kind index when no search has yet.
    pub(crate) fn index_kinds(&self) {
        if self.kinds.get().is_none() {
            self.walk_indexing(|_| false, |_| {});
        }
    }
}

impl Parsed {
    /// Parses `text` as `lang`, in pieces when it is large and of a language that can be
    /// cut; None when the parser gives up.
    pub(crate) fn new(text: &str, lang: SupportLang) -> Option<Self> {
        let cuts = match lang {
            SupportLang::Python if text.len() >= PIECES_FROM_BYTES => python_cuts(text),
            _ => Vec::new(),
        };
        if cuts.is_empty() {
            return Self::whole(text, lang);
        }
        match Self::in_pieces(text, &cuts, lang) {
            Some(parsed) if !parsed.pieces.iter().any(Piece::has_error) => Some(parsed),
            // An error may come from a cut in the middle of something: whole, as it was.
            _ => Self::whole(text, lang),
        }
    }

    /// Parses `text` as one tree.
    pub(crate) fn whole(text: &str, lang: SupportLang) -> Option<Self> {
        let root = AstGrep::try_new(text, lang).ok()?;
        Some(Parsed {
            pieces: vec![Piece::new(root, 0, 0)],
            whole: None,
        })
    }

    /// Parses the pieces between `cuts` on every core.
    fn in_pieces(text: &str, cuts: &[usize], lang: SupportLang) -> Option<Self> {
        let bounds: Vec<(usize, usize)> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .zip(cuts.iter().copied().chain(std::iter::once(text.len())))
            .collect();
        let parsed = on_every_core(&bounds, |&(start, end)| {
            AstGrep::try_new(&text[start..end], lang).ok()
        });
        let mut pieces = Vec::with_capacity(bounds.len());
        let mut row = 0;
        for ((start, end), root) in bounds.iter().zip(parsed) {
            pieces.push(Piece::new(root?, *start, row));
            row += memchr::memchr_iter(b'\n', &text.as_bytes()[*start..*end]).count();
        }
        Some(Parsed {
            pieces,
            whole: Some(text.to_owned()),
        })
    }

    /// The file's text.
    pub(crate) fn text(&self) -> &str {
        match (&self.whole, self.pieces.first()) {
            (Some(whole), _) => whole,
            (None, Some(piece)) => piece.root.get_text(),
            (None, None) => "",
        }
    }

    /// Bytes of text it holds beyond its trees' own.
    pub(crate) fn extra_text(&self) -> usize {
        self.whole.as_ref().map_or(0, String::len)
    }

    /// Whether it was cut and `compiled` may match its root's kind, which only a whole
    /// tree has as the file's root.
    pub(crate) fn may_match_root(&self, compiled: &Compiled) -> bool {
        let [first, _, ..] = &self.pieces[..] else {
            return false;
        };
        let root = usize::from(first.root.root().get_inner_node().kind_id());
        compiled
            .pattern
            .potential_kinds()
            .is_none_or(|kinds| kinds.contains(root))
    }
}

/// Every node's pre-order position (tree-sitter's descendant index), grouped by kind.
pub(crate) struct KindIndex {
    /// Each kind present, with the end of its run in `positions`.
    kinds: Vec<(u16, u32)>,
    positions: Vec<u32>,
}

impl KindIndex {
    /// From every node's kind in pre-order (a node's position is its index in `order`): a
    /// counting sort by kind, which keeps each kind's positions in pre-order.
    pub(crate) fn from_order(order: &[u16]) -> Self {
        let most = order.iter().copied().max().map_or(0, usize::from);
        let mut starts = vec![0u32; most + 2];
        for &kind in order {
            starts[usize::from(kind) + 1] += 1;
        }
        let mut kinds = Vec::new();
        for kind in 0..=most {
            let count = starts[kind + 1];
            starts[kind + 1] += starts[kind];
            if count > 0 {
                kinds.push((kind as u16, starts[kind + 1]));
            }
        }
        let mut positions = vec![0u32; order.len()];
        for (position, &kind) in order.iter().enumerate() {
            let slot = &mut starts[usize::from(kind)];
            positions[*slot as usize] = position as u32;
            *slot += 1;
        }
        KindIndex { kinds, positions }
    }

    /// The positions of every node of a kind in `wanted`, in pre-order; empty when the file
    /// has none.
    pub(crate) fn positions(&self, wanted: impl Fn(u16) -> bool) -> Vec<u32> {
        let mut out = Vec::new();
        let mut runs = 0;
        let mut start = 0;
        for &(kind, end) in &self.kinds {
            if wanted(kind) {
                out.extend_from_slice(&self.positions[start as usize..end as usize]);
                runs += 1;
            }
            start = end;
        }
        if runs > 1 {
            out.sort_unstable();
        }
        out
    }
}

/// `work` done on each of `items` by a thread per core, in their order.
pub(crate) fn on_every_core<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(at) else {
                            return out;
                        };
                        out.push((at, work(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| match worker.join() {
                Ok(out) => out,
                // A panic in `work` is the caller's, as it would be without threads.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_unstable_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, result)| result).collect()
}

/// Where to cut a Python file: the start of a line about every [`PIECE_BYTES`] that begins
/// at column 0 with a word (not `else`, `elif`, `except` or `finally`, which continue the
/// statement before) or a decorator.
fn python_cuts(text: &str) -> Vec<usize> {
    const CONTINUING: [&[u8]; 4] = [b"else", b"elif", b"except", b"finally"];
    let bytes = text.as_bytes();
    let starts_statement = |at: usize| {
        let rest = &bytes[at..];
        let word = rest
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        match rest.first() {
            Some(b'@') => true,
            Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {
                !CONTINUING.contains(&&rest[..word])
            }
            _ => false,
        }
    };
    let mut cuts = Vec::new();
    let mut from = PIECE_BYTES;
    // The last piece is at least half a piece: a sliver would cost a thread for nothing.
    while from + PIECE_BYTES / 2 < bytes.len() {
        let Some(cut) = memchr::memchr_iter(b'\n', &bytes[from..])
            .map(|newline| from + newline + 1)
            .find(|&at| at < bytes.len() && starts_statement(at))
        else {
            break;
        };
        if bytes.len() - cut < PIECE_BYTES / 2 {
            break;
        }
        cuts.push(cut);
        from = cut + PIECE_BYTES;
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::{PIECE_BYTES, python_cuts};

    #[test]
    fn a_python_file_is_cut_only_before_a_top_level_word_or_decorator() {
        let filler = "x = 1\n".repeat(PIECE_BYTES / 6);
        let text = format!(
            "{filler}    indented = 1\nelse:\n    pass\n# comment\n\n(paren)\n@decorator\ndef f():\n    pass\n{filler}{filler}"
        );
        let cuts = python_cuts(&text);
        assert!(!cuts.is_empty());
        for &cut in &cuts {
            assert_eq!(text.as_bytes()[cut - 1], b'\n');
        }
        // The first cut skips the indented line, `else`, the comment, the blank line and
        // the parenthesis, and lands on the decorator.
        assert!(text[cuts[0]..].starts_with("@decorator\n"));
        // Short files are not cut.
        assert!(python_cuts("x = 1\n").is_empty());
    }
}

//! Choosing what a capped answer shows, so the cap does not hide the point: a page of a long
//! list (`max_results`, `offset`), a first page spread across files rather than filled from
//! the first one, counts per file of everything, and a file's outline with its top-level
//! items and their members before locals and parameters.

use std::collections::BTreeMap;

use tools_core::ToolError;

/// The largest `max_results` any list takes.
pub(crate) const MAX_RESULTS: usize = 1000;

/// A page of a list: how many to show and from where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) max: usize,
    pub(crate) offset: usize,
    /// Whether `offset` was given: a first page without it is spread across files.
    pub(crate) paging: bool,
}

impl Page {
    /// The page `max_results` and `offset` ask for, `default` results when none is given;
    /// an impossible one is refused with what to give instead.
    pub(crate) fn new(
        max_results: Option<u32>,
        offset: Option<u32>,
        default: usize,
    ) -> Result<Page, ToolError> {
        let max = match max_results {
            None => default,
            Some(0) => {
                return Err(ToolError::failed(
                    "`max_results` is 0: ask for at least one",
                ));
            }
            Some(n) if n as usize > MAX_RESULTS => {
                return Err(ToolError::failed(format!(
                    "`max_results` is {n}; the most one answer lists is {MAX_RESULTS} — page \
                     through longer lists with `offset`"
                )));
            }
            Some(n) => n as usize,
        };
        Ok(Page {
            max,
            offset: offset.unwrap_or(0) as usize,
            paging: offset.is_some(),
        })
    }
}

/// Indices of `keys` (each item's file, the list in path order) to show: everything when it
/// fits; with an `offset`, that slice of the list; otherwise a page spread across files —
/// each file's first item, then each one's second, and so on — returned in list order.
pub(crate) fn page_indices(keys: &[&str], page: Page) -> Vec<usize> {
    if page.paging || keys.len() <= page.max {
        return (page.offset.min(keys.len())..keys.len())
            .take(page.max)
            .collect();
    }
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, key) in keys.iter().enumerate() {
        by_file.entry(key).or_default().push(index);
    }
    let mut chosen = Vec::new();
    let mut round = 0;
    while chosen.len() < page.max {
        let mut any = false;
        for indices in by_file.values() {
            if let Some(&index) = indices.get(round)
                && chosen.len() < page.max
            {
                chosen.push(index);
                any = true;
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    chosen.sort_unstable();
    chosen
}

/// `src/ast/mod.rs: 120, src/ast/parse.rs: 40, …` for every file of the list, most first.
pub(crate) fn per_file_counts(keys: &[&str]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_insert(0) += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    counts
        .iter()
        .map(|(key, count)| {
            let key = if key.is_empty() { "(project)" } else { key };
            format!("{key}: {count}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the items of a page were picked from a longer list, which its note says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A slice of the list, in its order.
    InOrder,
    /// A first page spread across the files of the list ([`page_indices`]).
    SpreadAcrossFiles,
}

impl Page {
    /// How [`page_indices`] picks this page from `total` items in `files` files, as its note
    /// says it: a first page of a longer list over several files is spread across them.
    pub(crate) fn layout(&self, total: usize, files: usize) -> Layout {
        match !self.paging && total > self.max && files > 1 {
            true => Layout::SpreadAcrossFiles,
            false => Layout::InOrder,
        }
    }
}

/// The note under a page of a longer list.
pub(crate) fn page_note(shown: usize, total: usize, page: Page, layout: Layout) -> Option<String> {
    if shown >= total {
        return None;
    }
    let next = page.offset + shown;
    Some(match (page.paging, layout) {
        (false, Layout::SpreadAcrossFiles) => format!(
            "(showing {shown} of {total}, spread across files; pass `offset` to page through \
             all of them in path order, `max_results` (up to {MAX_RESULTS}) for more per page)"
        ),
        _ if next < total => format!(
            "(showing {} to {next} of {total}; `offset: {next}` shows the next ones)",
            page.offset + 1
        ),
        _ => format!("(showing {} to {next} of {total})", page.offset + 1),
    })
}

/// How much an outline entry matters to a reader of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// A top-level item, or a member of a type, module or namespace.
    Item,
    /// Anything inside a function: locals, parameters, nested helpers.
    Local,
}

/// The entries of an outline (in tree order, with their depth and whether they are a
/// function-like container) ranked: entries nested in a function are locals.
pub(crate) fn outline_ranks(entries: &[(usize, bool)]) -> Vec<Rank> {
    let mut ranks = Vec::with_capacity(entries.len());
    // For each depth, whether the entry open at that depth is inside (or is) a function.
    let mut in_function: Vec<bool> = Vec::new();
    for &(depth, function_like) in entries {
        in_function.truncate(depth);
        let parent_in_function = depth > 0 && in_function.get(depth - 1).copied().unwrap_or(false);
        ranks.push(match parent_in_function {
            true => Rank::Local,
            false => Rank::Item,
        });
        in_function.push(parent_in_function || function_like);
    }
    ranks
}

/// Which outline entries to show under a cap: items first, then locals while room remains;
/// indices in tree order.
pub(crate) fn outline_indices(ranks: &[Rank], max: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&index| (ranks[index], index));
    order.truncate(max);
    order.sort_unstable();
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(max: usize) -> Page {
        Page {
            max,
            offset: 0,
            paging: false,
        }
    }

    #[test]
    fn lsp_5_a_capped_first_page_is_spread_across_files() {
        let keys: Vec<&str> = std::iter::repeat_n("a.rs", 6)
            .chain(std::iter::repeat_n("b.rs", 2))
            .chain(["c.rs"])
            .collect();
        let chosen = page_indices(&keys, page(5));
        let files: Vec<&str> = chosen.iter().map(|&i| keys[i]).collect();
        assert_eq!(files, ["a.rs", "a.rs", "b.rs", "b.rs", "c.rs"]);
        assert_eq!(per_file_counts(&keys), "a.rs: 6, b.rs: 2, c.rs: 1");
        assert_eq!(
            page_note(5, 9, page(5), Layout::SpreadAcrossFiles).unwrap(),
            "(showing 5 of 9, spread across files; pass `offset` to page through all of them \
             in path order, `max_results` (up to 1000) for more per page)"
        );
    }

    #[test]
    fn lsp_5_offset_pages_through_in_order() {
        let keys = ["a", "a", "b", "b", "c"];
        let second = Page {
            max: 2,
            offset: 2,
            paging: true,
        };
        assert_eq!(page_indices(&keys, second), [2, 3]);
        assert_eq!(
            page_note(2, 5, second, Layout::InOrder).unwrap(),
            "(showing 3 to 4 of 5; `offset: 4` shows the next ones)"
        );
        assert!(
            Page::new(Some(5000), None, 50)
                .unwrap_err()
                .to_string()
                .contains("1000")
        );
        assert!(Page::new(Some(0), None, 50).is_err());
    }

    #[test]
    fn lsp_5_an_outline_keeps_items_and_members_before_locals() {
        // class A { method m { local x } } ; function f { local y; local z } ; class B
        let entries = [
            (0, false),
            (1, true),
            (2, false),
            (0, true),
            (1, false),
            (1, false),
            (0, false),
        ];
        let ranks = outline_ranks(&entries);
        assert_eq!(
            ranks,
            [
                Rank::Item,
                Rank::Item,
                Rank::Local,
                Rank::Item,
                Rank::Local,
                Rank::Local,
                Rank::Item
            ]
        );
        assert_eq!(outline_indices(&ranks, 5), [0, 1, 2, 3, 6]);
    }
}

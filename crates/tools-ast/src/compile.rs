//! The pattern compiler (AST-5): a fragment is parsed inside each context of its language's
//! ladder, and the first context whose parse is clean and yields exactly one node wins. A
//! pattern no context accepts is an error that shows where the parse broke — never a search
//! that silently finds nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use ast_grep_core::language::Language;
use ast_grep_core::matcher::PatternNode;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Node, Pattern};
use ast_grep_language::SupportLang;
use tools_core::ToolError;

use crate::language::{Rung, id, ladder};

/// A pattern ready to match, with what it compiled to.
pub(crate) struct Compiled {
    pub(crate) pattern: Pattern,
    pub(crate) lang: SupportLang,
    /// The ladder rung that accepted it ("statement").
    pub(crate) context: &'static str,
    /// The node kind of the pattern's root ("call_expression"), or "metavariable".
    pub(crate) kind: String,
    /// Every metavariable the pattern defines, without `$`.
    pub(crate) vars: BTreeSet<String>,
    /// Texts every match must contain: the pattern's named leaves and keywords. A file without
    /// one of them cannot match, so it is never parsed.
    pub(crate) literals: Vec<String>,
    /// What tells this compilation from another: language, rung and fragment (the syntax
    /// index remembers each file's matches of the last pattern under it).
    pub(crate) key: Arc<str>,
}

/// What a search or an edit runs on: the resolved path, how it is shown, and the pattern
/// compiled for the path's language.
pub(crate) struct Target {
    pub(crate) path: std::path::PathBuf,
    pub(crate) shown: String,
    pub(crate) compiled: Compiled,
}

/// Resolves `path` (default the workspace) and `language`, and compiles `pattern` for it.
pub(crate) fn target(
    workspace: &tools_core::Workspace,
    path: Option<&str>,
    language: Option<&str>,
    pattern: &str,
    context: Option<&str>,
) -> Result<Target, ToolError> {
    let path = workspace.resolve(path.unwrap_or("."))?;
    let shown = workspace.display(&path);
    if !path.exists() {
        return Err(ToolError::failed(format!(
            "{shown} does not exist; give a file or folder inside the workspace"
        )));
    }
    let lang = crate::language::resolve_language(language, &path, &shown)?;
    let compiled = compile(pattern, lang, context)?;
    Ok(Target {
        path,
        shown,
        compiled,
    })
}

/// One rung that refused the fragment, and why.
struct Refused {
    rung: &'static str,
    why: Refusal,
}

/// Why a rung refused the fragment. The first rung's reason is the model's clue to what is
/// wrong with its pattern, so each reads as a sentence, with `$` where the language's
/// pre-processing replaced it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum Refusal {
    /// The parser gave up (ast-grep's message).
    #[error("the parser failed: {0}")]
    Parser(String),
    /// The parse holds an error inside the fragment: the text before it and from it.
    #[error("the parse broke at `{before}` ⟨here⟩ `{after}`")]
    BrokeAt { before: String, after: String },
    /// The parse holds an error after the fragment, in the skeleton around it.
    #[error("the fragment is incomplete (the parse broke after it)")]
    Incomplete,
    /// No one node spans the fragment.
    #[error("`{0}` is not one node (it parses as several)")]
    SeveralNodes(String),
    /// The fragment is only a `$$$` sequence.
    #[error("a `$$$` sequence alone is not a pattern: wrap it, e.g. `f($$$ARGS)`")]
    SequenceAlone,
}

/// Compiles `source` for `lang`, trying every rung of the ladder (AST-5), or only the rung
/// named by `context` when the caller wants a reading the ladder would not pick first (Dart
/// reads `void f() {}` as a local function before it reads it as a method).
pub(crate) fn compile(
    source: &str,
    lang: SupportLang,
    context: Option<&str>,
) -> Result<Compiled, ToolError> {
    let fragment = source.trim();
    if fragment.is_empty() {
        return Err(ToolError::failed(
            "`pattern` is empty: give a code fragment such as `dispose($X)`",
        ));
    }
    let processed = lang.pre_process_pattern(fragment).into_owned();
    let rungs: Vec<&Rung> = match context {
        None => ladder(lang).iter().collect(),
        Some(name) => {
            let chosen: Vec<&Rung> = ladder(lang).iter().filter(|r| r.name == name).collect();
            if chosen.is_empty() {
                let names: Vec<&str> = ladder(lang).iter().map(|r| r.name).collect();
                return Err(ToolError::failed(format!(
                    "`context` \"{name}\" is not one of the {} contexts: use one of {}",
                    id(lang),
                    names.join(", ")
                )));
            }
            chosen
        }
    };
    let mut refusals = Vec::new();
    for rung in rungs {
        match try_rung(&processed, lang, rung) {
            Ok(compiled) => return Ok(compiled),
            Err(why) => refusals.push(Refused {
                rung: rung.name,
                why,
            }),
        }
    }
    let tried: Vec<&str> = refusals.iter().map(|r| r.rung).collect();
    let first = refusals
        .first()
        .map(|r| format!("as a {}: {}", r.rung, r.why))
        .unwrap_or_default();
    Err(ToolError::failed(format!(
        "the pattern `{fragment}` does not parse as {} code in any context ({}); {first}; \
         write a complete expression, statement or declaration, with `$NAME` for any single node \
         and `$$$NAME` for a sequence",
        id(lang),
        tried.join(", "),
    )))
}

fn try_rung(fragment: &str, lang: SupportLang, rung: &Rung) -> Result<Compiled, Refusal> {
    let body = match rung.indent {
        Some(indent) => fragment.replace('\n', &format!("\n{indent}")),
        None => fragment.to_owned(),
    };
    // A statement that needs a terminator gets one unless it has it: without it, error
    // recovery decides whether the parser invents the `;` or gives up, depending on names.
    let terminator = match fragment.ends_with(';') || fragment.ends_with('}') {
        true => "",
        false => rung.terminator,
    };
    let text = format!("{}{body}{terminator}{}", rung.prefix, rung.suffix);
    let start = rung.prefix.len();
    let end = start + body.len();
    // The fallible constructor: a parser that gives up is a refusal, not a panic.
    let root = AstGrep::try_new(&text, lang).map_err(Refusal::Parser)?;
    let top = root.root();
    if let Some(problem) = first_problem(&top, lang) {
        let at = problem.range().start;
        return Err(match (start..=end).contains(&at) {
            true => Refusal::BrokeAt {
                before: restore(&text[start..at], lang),
                after: restore(&text[at..end], lang),
            },
            false => Refusal::Incomplete,
        });
    }
    // The fragment itself first (`dispose(x)` is the call, not the statement around it);
    // then with the terminator we added, for statements that end in it (`if (c) f();`).
    let spanning = node_spanning(&top, start..end).or_else(|| match terminator.is_empty() {
        true => None,
        false => node_spanning(&top, start..end + terminator.len()),
    });
    let Some(node) = spanning else {
        return Err(Refusal::SeveralNodes(restore(&text[start..end], lang)));
    };
    let node = descend_wrappers(node);
    let kind = if lang.extract_meta_var(&node.text()).is_some() {
        "metavariable".to_owned()
    } else {
        node.kind().into_owned()
    };
    let pattern = Pattern::from(node);
    if matches!(
        pattern.node,
        PatternNode::MetaVar {
            meta_var: ast_grep_core::meta_var::MetaVariable::MultiCapture(_)
                | ast_grep_core::meta_var::MetaVariable::Multiple
        }
    ) {
        return Err(Refusal::SequenceAlone);
    }
    let vars = pattern
        .defined_vars()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut literals = Vec::new();
    collect_literals(&pattern.node, &mut literals);
    literals.sort();
    literals.dedup();
    let key = Arc::from(format!("{}\0{}\0{fragment}", id(lang), rung.name));
    Ok(Compiled {
        key,
        pattern,
        lang,
        context: rung.name,
        kind,
        vars,
        literals,
    })
}

/// The first node that makes a parse unacceptable: an ERROR node (unless it is only a
/// metavariable, standing where the grammar wanted something else, such as a block), or a
/// named node the parser had to invent (MISSING). An invented anonymous token — the `;` a
/// skeleton needs after a bare expression — is fine.
fn first_problem<'r>(
    top: &Node<'r, StrDoc<SupportLang>>,
    lang: SupportLang,
) -> Option<Node<'r, StrDoc<SupportLang>>> {
    top.dfs().find(|node| {
        if node.is_error() {
            return lang.extract_meta_var(node.text().trim()).is_none();
        }
        node.is_missing() && node.is_named()
    })
}

/// The outermost node whose byte range is exactly `range`.
fn node_spanning<'r>(
    top: &Node<'r, StrDoc<SupportLang>>,
    range: std::ops::Range<usize>,
) -> Option<Node<'r, StrDoc<SupportLang>>> {
    top.dfs().find(|node| node.range() == range)
}

/// Steps down through wrappers that add nothing: a node whose only real child (ignoring
/// invented tokens and empty nodes) covers the same text, as an expression statement around
/// a call whose `;` the skeleton had to invent.
fn descend_wrappers(mut node: Node<'_, StrDoc<SupportLang>>) -> Node<'_, StrDoc<SupportLang>> {
    loop {
        let real: Vec<_> = node
            .children()
            .filter(|c| !c.is_missing() && !c.range().is_empty())
            .collect();
        match real.as_slice() {
            [only] if only.range() == node.range() => node = only.clone(),
            _ => return node,
        }
    }
}

/// Texts a match must contain: named leaves (identifiers, literals) and keyword tokens. The
/// matcher compares every leaf of the pattern with the code, anonymous tokens included, so a
/// file lacking one of these texts cannot match. Punctuation is left out: every file has it.
fn collect_literals(node: &PatternNode, out: &mut Vec<String>) {
    match node {
        PatternNode::Terminal { text, is_named, .. } => {
            let keyword = text.chars().any(char::is_alphanumeric);
            if (*is_named || keyword) && !text.trim().is_empty() {
                out.push(text.clone());
            }
        }
        PatternNode::MetaVar { .. } => {}
        PatternNode::Internal { children, .. } => {
            children.iter().for_each(|c| collect_literals(c, out))
        }
    }
}

/// Puts `$` back where the language's pre-processing replaced it, for messages.
fn restore(text: &str, lang: SupportLang) -> String {
    let expando = lang.expando_char();
    if expando == '$' {
        text.to_owned()
    } else {
        text.replace(expando, "$")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SupportLang::*;

    fn check(lang: SupportLang, pattern: &str, expect: &str) {
        let actual = match compile(pattern, lang, None) {
            Ok(c) => format!("{}: {}", c.context, c.kind),
            Err(e) => format!("error: {e}"),
        };
        assert_eq!(actual, expect, "pattern {pattern:?}");
    }

    #[test]
    fn ast_5_each_pattern_compiles_to_the_first_context_that_accepts_it() {
        check(Dart, "dispose($X)", "statement: call_expression");
        // Without the `;` the skeleton adds, error recovery reads this one as broken.
        check(Dart, "close($X)", "statement: call_expression");
        check(
            Dart,
            "if ($X != null) $X.dispose()",
            "statement: if_statement",
        );
        check(
            Dart,
            "void dispose() { $$$BODY }",
            "statement: local_function_declaration",
        );
        check(Python, "print($$$ARGS)", "statement: call");
        check(
            Python,
            "def $F(self):\n    $$$BODY",
            "statement: function_definition",
        );
        check(Rust, "$X.unwrap()", "statement: call_expression");
        check(Rust, "Some($X) => $Y", "match arm: match_arm");
        check(Rust, "pub $NAME: String", "struct field: field_declaration");
        check(C, "malloc($SIZE)", "statement: call_expression");
        check(
            TypeScript,
            "console.log($$$A)",
            "statement: call_expression",
        );
        check(Go, "fmt.Println($$$A)", "top level: call_expression");
        check(
            Go,
            "func $F() error { $$$B }",
            "top level: function_declaration",
        );
        check(Rust, "$X", "statement: metavariable");
    }

    #[test]
    fn ast_5_an_unparseable_pattern_is_an_error_that_shows_where_it_broke() {
        let error = compile("dispose($X", Dart, None).err().unwrap().to_string();
        assert!(
            error.starts_with("the pattern `dispose($X` does not parse as dart code in any context (statement, expression, class member, declaration); as a statement: "),
            "{error}"
        );
        let error = compile("if (", Python, None).err().unwrap().to_string();
        assert!(error.contains("does not parse as python code"), "{error}");
        let two = compile("a(); b();", Dart, None).err().unwrap().to_string();
        assert!(two.contains("is not one node"), "{two}");
        let alone = compile("$$$ARGS", Rust, None).err().unwrap().to_string();
        assert!(
            alone.contains("a `$$$` sequence alone is not a pattern"),
            "{alone}"
        );
    }

    #[test]
    fn ast_5_each_refusal_says_what_broke_with_the_dollars_restored() {
        let first = |lang: SupportLang, fragment: &str| {
            let processed = lang.pre_process_pattern(fragment).into_owned();
            try_rung(&processed, lang, &ladder(lang)[0]).err()
        };
        assert_eq!(first(Rust, "$$$ARGS"), Some(Refusal::SequenceAlone));
        assert_eq!(
            first(Dart, "a(); b();"),
            Some(Refusal::SeveralNodes("a(); b();".to_owned()))
        );
        assert_eq!(
            first(Rust, "let $X = ;"),
            Some(Refusal::BrokeAt {
                before: "let $X ".to_owned(),
                after: "= ;".to_owned(),
            })
        );
    }

    #[test]
    fn ast_5_a_named_context_picks_another_reading() {
        let method = compile("void dispose() { $$$BODY }", Dart, Some("class member")).unwrap();
        assert_eq!(
            (method.context, method.kind.as_str()),
            ("class member", "method_declaration")
        );
        let wrong = compile("x", Dart, Some("match arm"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            wrong,
            "`context` \"match arm\" is not one of the dart contexts: use one of statement, expression, class member, declaration"
        );
    }

    #[test]
    fn literals_are_the_named_leaves() {
        let compiled = compile("if ($X != null) $X.dispose()", Dart, None).unwrap();
        assert_eq!(compiled.literals, ["dispose", "if", "null"]);
        let unsafe_block = compile("unsafe { $$$B }", Rust, None).unwrap();
        assert_eq!(unsafe_block.literals, ["unsafe"]);
        assert_eq!(compiled.vars.into_iter().collect::<Vec<_>>(), ["X"]);
    }
}

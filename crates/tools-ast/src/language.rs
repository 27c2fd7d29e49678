//! Languages by id and by file extension, and each language's ladder of pattern contexts
//! (AST-5): the skeletons a fragment is parsed inside, tried in order.

use std::path::Path;

use ast_grep_core::language::Language;
use ast_grep_language::SupportLang;
use tools_core::ToolError;

/// Resolves the `language` argument, or infers it from `path` when that names a file.
pub(crate) fn resolve_language(
    language: Option<&str>,
    path: &Path,
    shown: &str,
) -> Result<SupportLang, ToolError> {
    if let Some(id) = language {
        return id.parse::<SupportLang>().map_err(|_| {
            ToolError::failed(format!(
                "unknown language `{id}`: use one of {}",
                language_ids().join(", ")
            ))
        });
    }
    if path.is_file() {
        return SupportLang::from_path(path).ok_or_else(|| {
            ToolError::failed(format!(
                "cannot tell the language of {shown} from its extension: give `language`, one of {}",
                language_ids().join(", ")
            ))
        });
    }
    Err(ToolError::failed(format!(
        "`language` is needed when `path` is a folder ({shown}): give one of {}",
        language_ids().join(", ")
    )))
}

/// The primary id of every shipped grammar, as accepted by `language`.
pub(crate) fn language_ids() -> Vec<String> {
    SupportLang::all_langs()
        .iter()
        .map(|lang| id(*lang).to_owned())
        .collect()
}

/// The id a language is reported under.
pub(crate) fn id(lang: SupportLang) -> &'static str {
    use SupportLang::*;
    match lang {
        Bash => "bash",
        C => "c",
        Cpp => "cpp",
        CSharp => "csharp",
        Css => "css",
        Dart => "dart",
        Elixir => "elixir",
        Go => "go",
        Haskell => "haskell",
        Hcl => "hcl",
        Html => "html",
        Java => "java",
        JavaScript => "javascript",
        Json => "json",
        Kotlin => "kotlin",
        Lua => "lua",
        Markdown => "markdown",
        Nix => "nix",
        Php => "php",
        Python => "python",
        Ruby => "ruby",
        Rust => "rust",
        Scala => "scala",
        Solidity => "solidity",
        Swift => "swift",
        Tsx => "tsx",
        TypeScript => "typescript",
        Yaml => "yaml",
        Zig => "zig",
    }
}

/// One context of the ladder: the fragment goes between `prefix` and `suffix`; when `indent`
/// is set, the fragment's later lines are indented by it (Python blocks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rung {
    /// What the context is called in results and errors.
    pub(crate) name: &'static str,
    pub(crate) prefix: &'static str,
    pub(crate) suffix: &'static str,
    pub(crate) indent: Option<&'static str>,
    /// What closes a statement in this context (`;`), added when the fragment lacks it.
    pub(crate) terminator: &'static str,
}

const fn rung(name: &'static str, prefix: &'static str, suffix: &'static str) -> Rung {
    Rung {
        name,
        prefix,
        suffix,
        indent: None,
        terminator: "",
    }
}

/// A statement context whose statements end in `;`.
const fn statement(prefix: &'static str, suffix: &'static str) -> Rung {
    Rung {
        name: "statement",
        prefix,
        suffix,
        indent: None,
        terminator: ";",
    }
}

const fn indented(name: &'static str, prefix: &'static str, indent: &'static str) -> Rung {
    Rung {
        name,
        prefix,
        suffix: "\n",
        indent: Some(indent),
        terminator: "",
    }
}

const DECLARATION: Rung = rung("declaration", "", "\n");

/// The ladder for `lang`: statement → expression → class member → declaration, plus the rungs
/// a grammar needs of its own. The bare top-level parse comes last, so a fragment that a
/// grammar would also read as a top-level declaration (Dart reads `print(x);` as a function
/// signature) is first tried where code usually is.
pub(crate) fn ladder(lang: SupportLang) -> &'static [Rung] {
    use SupportLang::*;
    match lang {
        Dart => {
            const LADDER: &[Rung] = &[
                statement("void __at() {\n", "\n}\n"),
                rung("expression", "var __at = ", ";\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        JavaScript | TypeScript | Tsx => {
            const LADDER: &[Rung] = &[
                statement("function __at() {\n", "\n}\n"),
                rung("expression", "var __at = ", ";\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
                rung("object property", "var __at = {\n", "\n};\n"),
            ];
            LADDER
        }
        Java => {
            const LADDER: &[Rung] = &[
                statement("class __At { void __at() {\n", "\n} }\n"),
                rung("expression", "class __At { Object __at = ", "; }\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        CSharp => {
            const LADDER: &[Rung] = &[
                statement("class __At { void __at() {\n", "\n} }\n"),
                rung("expression", "class __At { object __at = ", "; }\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        Kotlin => {
            const LADDER: &[Rung] = &[
                rung("statement", "fun __at() {\n", "\n}\n"),
                rung("expression", "val __at = ", "\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        Python => {
            const LADDER: &[Rung] = &[
                indented("statement", "def __at():\n    ", "    "),
                rung("expression", "__at = ", "\n"),
                indented("class member", "class __At:\n    ", "    "),
                DECLARATION,
            ];
            LADDER
        }
        Rust => {
            const LADDER: &[Rung] = &[
                rung("statement", "fn __at() {\n", "\n}\n"),
                rung("expression", "fn __at() { let __at = ", "; }\n"),
                rung("class member", "impl __At {\n", "\n}\n"),
                DECLARATION,
                rung("match arm", "fn __at() { match __at {\n", "\n} }\n"),
                rung("struct field", "struct __At {\n", "\n}\n"),
            ];
            LADDER
        }
        C => {
            const LADDER: &[Rung] = &[
                // A bare call on its own line reads as a macro type in C; the `;` settles that.
                statement("void __at(void) {\n", "\n}\n"),
                rung("expression", "void __at(void) { __at = ", "; }\n"),
                rung("struct member", "struct __At {\n", "\n};\n"),
                DECLARATION,
            ];
            LADDER
        }
        Cpp => {
            const LADDER: &[Rung] = &[
                statement("void __at() {\n", "\n}\n"),
                rung("expression", "void __at() { __at = ", "; }\n"),
                rung("class member", "class __At {\n", "\n};\n"),
                DECLARATION,
            ];
            LADDER
        }
        Go => {
            const LADDER: &[Rung] = &[
                // Go's top level comes first: `func f()` in a statement would read as a
                // function literal, and the parser takes expressions there too.
                rung("top level", "package __at\n", "\n"),
                rung("statement", "package __at\nfunc __at() {\n", "\n}\n"),
                rung("expression", "package __at\nvar __at = ", "\n"),
                rung(
                    "struct field",
                    "package __at\ntype __At struct {\n",
                    "\n}\n",
                ),
            ];
            LADDER
        }
        Php => {
            const LADDER: &[Rung] = &[
                statement("<?php\nfunction __at() {\n", "\n}\n"),
                rung("expression", "<?php\n$__at = ", ";\n"),
                rung("class member", "<?php\nclass __At {\n", "\n}\n"),
                rung("declaration", "<?php\n", "\n"),
            ];
            LADDER
        }
        Ruby => {
            const LADDER: &[Rung] = &[
                rung("statement", "def __at\n", "\nend\n"),
                rung("expression", "__at = ", "\n"),
                rung("class member", "class At__\n", "\nend\n"),
                DECLARATION,
            ];
            LADDER
        }
        Swift => {
            const LADDER: &[Rung] = &[
                rung("statement", "func __at() {\n", "\n}\n"),
                rung("expression", "let __at = ", "\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        Scala => {
            const LADDER: &[Rung] = &[
                rung("statement", "def __at() = {\n", "\n}\n"),
                rung("expression", "val __at = ", "\n"),
                rung("class member", "class __At {\n", "\n}\n"),
                DECLARATION,
            ];
            LADDER
        }
        Lua => {
            const LADDER: &[Rung] = &[
                rung("statement", "function __at()\n", "\nend\n"),
                rung("expression", "local __at = ", "\n"),
                DECLARATION,
            ];
            LADDER
        }
        // Languages without statements in functions, or whose top level is their statement
        // level: the bare parse, still held to the same checks.
        _ => {
            const LADDER: &[Rung] = &[DECLARATION];
            LADDER
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ast_3_every_shipped_language_is_accepted_by_id() {
        for lang in SupportLang::all_langs() {
            assert_eq!(id(*lang).parse::<SupportLang>().ok(), Some(*lang));
        }
    }

    #[test]
    fn ast_3_language_is_inferred_from_a_file_and_unknown_ids_list_the_valid_ones() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.dart");
        std::fs::write(&file, "void main() {}\n").unwrap();
        assert_eq!(
            resolve_language(None, &file, "a.dart").unwrap(),
            SupportLang::Dart
        );
        let err = resolve_language(Some("cobol"), &file, "a.dart")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("unknown language `cobol`: use one of bash, c, cpp, csharp"),
            "{err}"
        );
        assert!(err.contains("dart") && err.contains("rust") && err.contains("zig"));
        let folder = resolve_language(None, dir.path(), ".")
            .unwrap_err()
            .to_string();
        assert!(
            folder.starts_with("`language` is needed when `path` is a folder (.)"),
            "{folder}"
        );
    }
}

//! What a server's view of the project leaves out, said beside answers it may cut short:
//! clangd without a compilation database, a pyright `include` that narrows the project.

use std::path::Path;

use crate::render::read_text;

/// One line for an answer that may be incomplete because of how the server sees the project:
/// clangd without a compilation database knows only the files opened in this run; a pyright
/// `include` narrows the project to some folders.
pub(super) fn project_view_note(session: &tools_lsp_client::Session) -> Option<String> {
    let root = &session.root;
    match session.spec.name.as_str() {
        "clangd" => {
            let database = ["compile_commands.json", "build/compile_commands.json"]
                .iter()
                .any(|name| root.join(name).is_file());
            (!database).then(|| {
                "clangd has no compile_commands.json here, so it knows only the files opened \
                 in this run: uses in other files may be missing (generate one, e.g. with \
                 `cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` or `bear -- make`)"
                    .to_owned()
            })
        }
        "basedpyright" => pyright_include(root).map(|include| {
            format!(
                "basedpyright's `include` ({}) limits the project, so files outside it are \
                 not searched",
                include.join(", ")
            )
        }),
        _ => None,
    }
}

/// The `include` list of a pyright configuration at `root` (pyrightconfig.json, or the
/// `[tool.pyright]`/`[tool.basedpyright]` table of pyproject.toml), when it has one.
fn pyright_include(root: &Path) -> Option<Vec<String>> {
    let strings = |value: &serde_json::Value| -> Option<Vec<String>> {
        let list: Vec<String> = value
            .as_array()?
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect();
        (!list.is_empty()).then_some(list)
    };
    if let Ok(text) = read_text(&root.join("pyrightconfig.json"))
        && let Ok(config) = serde_json::from_str::<serde_json::Value>(&text)
    {
        return config.get("include").and_then(strings);
    }
    let text = read_text(&root.join("pyproject.toml")).ok()?;
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_table = matches!(line, "[tool.pyright]" | "[tool.basedpyright]");
            continue;
        }
        if in_table
            && let Some(value) = line.strip_prefix("include")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            let list: Vec<String> = value
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|item| {
                    item.trim()
                        .trim_matches(|c| c == '"' || c == '\'')
                        .to_owned()
                })
                .filter(|item| !item.is_empty())
                .collect();
            return (!list.is_empty()).then_some(list);
        }
    }
    None
}

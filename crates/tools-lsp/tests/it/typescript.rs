//! typescript-language-server (with the typescript package) on a small TypeScript project.

use std::sync::LazyLock;

use serde_json::json;

use crate::support::{Fixture, Server, assert_transcript, available, run};

const PROJECT: &str = r#"//- /tsconfig.json
{
  "compilerOptions": { "strict": true, "target": "es2020", "module": "commonjs", "noEmit": true },
  "include": ["src"]
}
//- /src/shapes.ts
/** Something with an area. */
export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  constructor(public radius: number) {}

  area(): number {
    return 3.14 * this.radius * this.radius;
  }
}

/** Adds two numbers. */
export function add(left: number, right: number): number {
  return left + right;
}
//- /src/main.ts
import { Circle, add } from "./shapes";

const circle = new Circle(1);
console.log(circle.area(), add(1, 2));
console.log(add(3, 4));
//- /src/broken.ts
export const broken: number = "text";
"#;

/// One project and one server for every test in this file.
static SHARED: LazyLock<Fixture> = LazyLock::new(|| Fixture::shared("typescript", PROJECT));

#[test]
fn lsp_5_typescript_definition_crosses_an_import() {
    if !available(Server::TypeScript) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(
            json!({"operation": "definition", "path": "src/main.ts", "line": 5, "symbol": "add"}),
        )
        .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_typescript_references_span_the_project() {
    if !available(Server::TypeScript) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "references", "path": "src/shapes.ts", "line": 15, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_typescript_hover_shows_the_signature_and_the_doc_comment() {
    if !available(Server::TypeScript) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "hover", "path": "src/main.ts", "line": 5, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_typescript_diagnostics_of_a_file_and_of_the_project() {
    if !available(Server::TypeScript) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "src/broken.ts"}))
            .await;
        t.lsp(json!({"operation": "diagnostics", "path": "*"}))
            .await;
        assert_transcript!(t);
    });
}

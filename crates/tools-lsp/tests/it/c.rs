//! clangd on a small C project with `compile_flags.txt`.

use std::sync::LazyLock;

use serde_json::json;

use crate::support::{Fixture, Server, available, ok, run};

const PROJECT: &str = r#"//- /compile_flags.txt
-std=c11
-Wall
//- /shapes.h
#ifndef SHAPES_H
#define SHAPES_H

/* A circle. */
struct circle {
    double radius;
};

/* The area of a circle. */
double circle_area(const struct circle *c);

#endif
//- /shapes.c
#include "shapes.h"

double circle_area(const struct circle *c) {
    return 3.14 * c->radius * c->radius;
}
//- /main.c
#include <stdio.h>
#include "shapes.h"

/* Adds two numbers. */
static int add(int left, int right) {
    return left + right;
}

int main(void) {
    struct circle unit = { 1.0 };
    int total = add(1, 2);
    total = add(total, 3);
    printf("%f %d\n", circle_area(&unit), total);
    return 0;
}
//- /broken.c
int broken(void) {
    return undefined_name;
}
"#;

/// One project and one clangd for every test in this file.
static SHARED: LazyLock<Fixture> = LazyLock::new(|| Fixture::shared("c", PROJECT));

#[test]
fn lsp_5_c_definition_finds_a_function_and_a_struct_in_a_header() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let function = fx
            .lsp(json!({"operation": "definition", "path": "main.c", "line": 11, "symbol": "add"}))
            .await;
        assert_eq!(
            ok(&function),
            "1 definition of `add` (main.c:11):\nmain.c:5: static int add(int left, int right) {"
        );
        let structure = fx
            .lsp(json!({"operation": "definition", "path": "main.c", "line": 10, "symbol": "circle"}))
            .await;
        assert_eq!(
            ok(&structure),
            "1 definition of `circle` (main.c:10):\nshapes.h:5: struct circle {"
        );
    });
}

#[test]
fn lsp_5_c_references_list_every_use_in_the_file() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "references", "path": "main.c", "line": 5, "symbol": "add"}))
            .await;
        assert_eq!(
            ok(&result),
            "3 references to `add` (main.c:5):\n\
             main.c:5: static int add(int left, int right) {\n\
             main.c:11: int total = add(1, 2);\n\
             main.c:12: total = add(total, 3);\n\
             clangd has no compile_commands.json here, so it knows only the files opened in \
             this run: uses in other files may be missing (generate one, e.g. with \
             `cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` or `bear -- make`)"
        );
    });
}

#[test]
fn lsp_5_c_hover_shows_the_signature_and_the_comment() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "hover", "path": "main.c", "line": 11, "symbol": "add"}))
            .await;
        let text = ok(&result);
        assert!(
            text.contains("static int add(int left, int right)"),
            "{text}"
        );
        assert!(text.contains("Adds two numbers."), "{text}");
    });
}

#[test]
fn lsp_5_c_diagnostics_of_a_file_are_its_errors() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let fx = &*SHARED;
        let result = fx
            .lsp(json!({"operation": "diagnostics", "path": "broken.c"}))
            .await;
        assert_eq!(
            ok(&result),
            "broken.c: 1 error and 0 warnings (clangd):\n\
             broken.c:2: error[undeclared_var_use]: Use of undeclared identifier 'undefined_name'\n    \
             return undefined_name;"
        );
    });
}

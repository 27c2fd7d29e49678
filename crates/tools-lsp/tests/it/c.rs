//! clangd on a small C project with `compile_flags.txt`.

use std::sync::LazyLock;

use serde_json::json;

use crate::support::{Fixture, Server, assert_transcript, available, run};

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
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "definition", "path": "main.c", "line": 11, "symbol": "add"}))
            .await;
        t.lsp(json!({"operation": "definition", "path": "main.c", "line": 10, "symbol": "circle"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_c_references_list_every_use_in_the_file() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "references", "path": "main.c", "line": 5, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_c_hover_shows_the_signature_and_the_comment() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "hover", "path": "main.c", "line": 11, "symbol": "add"}))
            .await;
        assert_transcript!(t);
    });
}

#[test]
fn lsp_5_c_diagnostics_of_a_file_are_its_errors() {
    if !available(Server::Clangd) {
        return;
    }
    run(async {
        let mut t = SHARED.scenario();
        t.lsp(json!({"operation": "diagnostics", "path": "broken.c"}))
            .await;
        assert_transcript!(t);
    });
}

//! Patches as git and diff print them, and helpers the parser's and the applier's tests share.

use crate::{ApplyError, FilePatch, apply_file_patch, parse_patch};

/// `git diff` of a 30-line file (`line 1` to `line 30`): line 3 changed, line 25 replaced by two lines.
pub(crate) const TWO_HUNKS: &str = r"diff --git a/two.txt b/two.txt
index ac9837c..eed5a54 100644
--- a/two.txt
+++ b/two.txt
@@ -1,6 +1,6 @@
 line 1
 line 2
-line 3
+line three
 line 4
 line 5
 line 6
@@ -22,7 +22,8 @@ line 21
 line 22
 line 23
 line 24
-line 25
+line twenty-five
+line 25.5
 line 26
 line 27
 line 28
";

/// `git diff --cached -M` of several changes at once: a final newline removed, a file deleted,
/// a rename with a change, a new file, a final newline added and a pure rename.
pub(crate) const MULTI: &str = r#"diff --git a/addnonl.txt b/addnonl.txt
index 66a52ee..0bfc124 100644
--- a/addnonl.txt
+++ b/addnonl.txt
@@ -1,2 +1,2 @@
 first
-second
+second
\ No newline at end of file
diff --git a/gone.rs b/gone.rs
deleted file mode 100644
index 1b7c1e7..0000000
--- a/gone.rs
+++ /dev/null
@@ -1,3 +0,0 @@
-fn main() {
-    println!("hi");
-}
diff --git a/movedit.txt b/movedit2.txt
similarity index 50%
rename from movedit.txt
rename to movedit2.txt
index 0fdf397..e5e1aed 100644
--- a/movedit.txt
+++ b/movedit2.txt
@@ -1,6 +1,6 @@
 a
 b
-c
+C changed
 d
 e
 f
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..94954ab
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/nonl.txt b/nonl.txt
index 0bfc124..ff6e6b1 100644
--- a/nonl.txt
+++ b/nonl.txt
@@ -1,2 +1,3 @@
 first
-second
\ No newline at end of file
+second
+third
diff --git a/moved.txt b/renamed.txt
similarity index 100%
rename from moved.txt
rename to renamed.txt
"#;

/// `git diff` of a file without a final newline whose first line changed, so the marker
/// follows a context line and covers both sides.
pub(crate) const NO_NEWLINE_BOTH: &str = r"diff --git a/addnonl.txt b/addnonl.txt
index 0bfc124..cbd764b 100644
--- a/addnonl.txt
+++ b/addnonl.txt
@@ -1,2 +1,2 @@
-first
+FIRST
 second
\ No newline at end of file
";

/// `git diff` of a CRLF file (with `core.autocrlf` off): every hunk line keeps its `\r`.
pub(crate) const CRLF: &str = "diff --git a/crlf.txt b/crlf.txt\nindex 7fbf4d8..abc81d9 100644\n--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,4 +1,4 @@\n one\r\n-two\r\n+TWO\r\n three\r\n four\r\n";

/// `git diff` of a new empty file and of a mode change: sections without hunks.
pub(crate) const NO_HUNKS: &str = r"diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/keep.txt b/keep.txt
old mode 100644
new mode 100755
";

/// `diff -u old.txt new.txt` and `diff -u /dev/null new.txt`, with their timestamps.
pub(crate) const DIFF_U: &str = "--- old.txt\t2024-01-02 03:04:05.000000000 +0000\n+++ new.txt\t2024-01-02 03:04:05.000000000 +0000\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n--- /dev/null\t2026-12-01 05:09:09.991597397 +0000\n+++ new.txt\t2024-01-02 03:04:05.000000000 +0000\n@@ -0,0 +1,3 @@\n+a\n+B\n+c\n";

/// `git diff` of files whose names git quotes (non-ASCII, a tab) or ends with a tab (a space).
pub(crate) const ODD_NAMES: &str = concat!(
    r#"diff --git "a/caf\303\251.txt" "b/caf\303\251.txt"
new file mode 100644
index 0000000..bca70f3
--- /dev/null
+++ "b/caf\303\251.txt"
@@ -0,0 +1 @@
+q
diff --git "a/tab\tname.txt" "b/tab\tname.txt"
new file mode 100644
index 0000000..1a9cc2b
--- /dev/null
+++ "b/tab\tname.txt"
@@ -0,0 +1 @@
+p
diff --git a/with space.txt b/with space.txt
index 587be6b..b77b4eb 100644
"#,
    "--- a/with space.txt\t\n+++ b/with space.txt\t\n@@ -1 +1,2 @@\n x\n+y\n",
);

/// Lines `line FROM` to `line TO`, each with a newline.
pub(crate) fn numbered(from: usize, to: usize) -> String {
    (from..=to).map(|n| format!("line {n}\n")).collect()
}

pub(crate) fn parse_one(text: &str) -> FilePatch {
    let mut files = parse_patch(text).unwrap();
    assert_eq!(files.len(), 1, "{files:#?}");
    files.remove(0)
}

pub(crate) fn apply(text: &str, original: Option<&str>) -> Result<Option<String>, ApplyError> {
    apply_file_patch(&parse_one(text), original)
}

pub(crate) fn file<'a>(files: &'a [FilePatch], new_path: &str) -> &'a FilePatch {
    files
        .iter()
        .find(|file| file.new_path.as_deref().or(file.old_path.as_deref()) == Some(new_path))
        .unwrap()
}

pub(crate) fn two_hunks_result() -> String {
    numbered(1, 30)
        .replace("line 3\n", "line three\n")
        .replace("line 25\n", "line twenty-five\nline 25.5\n")
}

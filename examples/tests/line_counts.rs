//! Each declared controller of the examples against the same controller written with
//! kube-runtime 5.0 (`docs/kube-runtime/`, not built): the non-blank, non-comment lines
//! between `// controller: begin` and `// controller: end` (the controller's imports,
//! types, functions and, for kube-runtime, the wiring; not the demo around it). Ours must
//! take at most half. `cargo test -p informer-examples --test line_counts -- --nocapture`
//! prints the counts.

use std::path::Path;

/// The controller's lines of the file at `path` (relative to the workspace).
fn controller_lines(path: &str) -> usize {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let region = text
        .split_once("// controller: begin")
        .and_then(|(_, rest)| rest.split_once("// controller: end"))
        .map(|(region, _)| region)
        .unwrap_or_else(|| panic!("{path} marks no controller region"));
    count(region)
}

/// Non-blank lines that are not comments (`//`, `///`, `//!`).
fn count(code: &str) -> usize {
    code.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .count()
}

fn at_most_half(ours: &str, theirs: &str) {
    let (ours_lines, theirs_lines) = (controller_lines(ours), controller_lines(theirs));
    println!("{ours}: {ours_lines} lines; {theirs} (kube-runtime 5.0): {theirs_lines} lines");
    assert!(
        ours_lines * 2 <= theirs_lines,
        "{ours} takes {ours_lines} lines, more than half of kube-runtime's {theirs_lines}"
    );
}

#[test]
fn lines_are_counted_without_blanks_and_comments() {
    assert_eq!(count("a\n\n  // note\n/// doc\n  b // trailing\n"), 2);
}

#[test]
fn the_deployment_controller_takes_at_most_half_of_kube_runtimes_lines() {
    at_most_half(
        "examples/deployment_controller.rs",
        "docs/kube-runtime/deployment_controller.rs",
    );
}

#[test]
fn the_cross_namespace_copier_takes_at_most_half_of_kube_runtimes_lines() {
    at_most_half(
        "examples/config_mirror.rs",
        "docs/kube-runtime/config_mirror.rs",
    );
}

//! The top-level modules of `informer-runtime` form a graph without cycles: each module
//! builds only on modules below it, so each can be read (and changed) knowing only those.
//!
//! The check reads `src/**/*.rs` as text, drops comments (doc links are not dependencies)
//! and string literals, and collects every path into another top-level module: `crate::a`,
//! the groups of `use crate::{a, b::C}`, and `super::` chains that climb to the crate root.
//! A path to an item of the crate root itself (`crate::Action`) is an edge to the root
//! (`crate`), which depends on every module it re-exports from. Test code (files of modules
//! declared under `#[cfg(test)]`) counts too. It fails with the cycle it found; on success
//! it prints the modules of the library in topological order, each with what it builds on
//! and, in brackets, what only its tests use
//! (`cargo test -p informer-runtime --test module_graph -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The name of the crate root as a node of the graph.
const ROOT: &str = "crate";

/// Module → the modules it uses (sorted, without itself).
type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn top_level_modules_have_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (graph, tests) = crate_graph(&src);
    assert!(
        graph.len() > 5,
        "found only {:?} under {}",
        graph.keys(),
        src.display()
    );
    let mut all = graph.clone();
    for (from, uses) in &tests {
        all.entry(from.clone())
            .or_default()
            .extend(uses.iter().cloned());
    }
    if let Some(cycle) = find_cycle(&all) {
        panic!(
            "module cycle: {}\n\nthe whole graph (tests included):\n{}",
            cycle.join(" -> "),
            describe(&all)
        );
    }
    let order = topological_order(&graph).expect("no cycle, so an order exists");
    println!(
        "top-level modules of informer-runtime, each after what it builds on [and what only its tests use]:"
    );
    for module in &order {
        let list = |set: &BTreeSet<String>| {
            set.iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let uses = list(&graph[module]);
        let test_only: BTreeSet<String> = tests
            .get(module)
            .into_iter()
            .flatten()
            .filter(|m| !graph[module].contains(*m))
            .cloned()
            .collect();
        let mut line = format!("  {module}");
        if !uses.is_empty() {
            line += &format!(" -> {uses}");
        }
        if !test_only.is_empty() {
            line += &format!(" [{}]", list(&test_only));
        }
        println!("{line}");
    }
}

/// The graphs of the crate whose sources are under `src`: of the library, and of its test
/// code (the files of modules declared under `#[cfg(test)]`).
fn crate_graph(src: &Path) -> (Graph, Graph) {
    let mut files = Vec::new();
    collect_rs(src, &mut files);
    let sources: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(src).expect("under src");
            let text = fs::read_to_string(file).expect("readable source");
            (module_path(relative), strip_comments_and_strings(&text))
        })
        .collect();
    let test_modules: BTreeSet<Vec<String>> = sources
        .iter()
        .flat_map(|(path, code)| {
            test_only_children(code).into_iter().map(move |child| {
                let mut child_path = path.clone();
                child_path.push(child);
                child_path
            })
        })
        .collect();
    let (mut graph, mut tests) = (Graph::new(), Graph::new());
    for (path, code) in &sources {
        let is_test = (1..=path.len()).any(|n| test_modules.contains(&path[..n]));
        let from = path.first().cloned().unwrap_or_else(|| ROOT.to_owned());
        let target = if is_test { &mut tests } else { &mut graph };
        let uses = target.entry(from.clone()).or_default();
        if from == ROOT {
            uses.extend(root_uses(code));
        }
        uses.extend(edges(code, path));
    }
    // Paths that name no module of the crate (`crate::Action`) are items of the root.
    let mut modules: BTreeSet<String> = graph.keys().cloned().collect();
    modules.extend(tests.keys().cloned());
    for g in [&mut graph, &mut tests] {
        for (from, uses) in g.iter_mut() {
            *uses = uses
                .iter()
                .map(|to| {
                    if modules.contains(to) {
                        to.clone()
                    } else {
                        ROOT.to_owned()
                    }
                })
                .filter(|to| to != from)
                .collect();
        }
    }
    // Test-only top-level modules are no part of the library.
    graph.retain(|module, _| !test_modules.contains(&vec![module.clone()]));
    (graph, tests)
}

/// The child modules `code` declares under `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
fn test_only_children(code: &str) -> Vec<String> {
    let mut children = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let mut item = rest.trim_start();
        for visibility in ["pub(crate)", "pub(super)", "pub"] {
            if let Some(after) = item.strip_prefix(visibility) {
                item = after.trim_start();
                break;
            }
        }
        if let Some(after) = item.strip_prefix("mod ") {
            let name = ident(after.trim_start());
            if !name.is_empty() {
                children.push(name.to_owned());
            }
        }
    }
    children
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to `src`: `lib.rs` → `[]`, `a/mod.rs` → `[a]`,
/// `a/b.rs` → `[a, b]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && stem == "lib")) {
        parts.push(stem.to_owned());
    }
    parts
}

/// What the crate root uses: the modules named at the start of its `use` paths
/// (`pub use controller::{..}`).
fn root_uses(code: &str) -> BTreeSet<String> {
    let mut uses = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        rest = &rest[at + 3..];
        let path = rest.trim_start();
        let first = ident(path);
        if !first.is_empty() && path[first.len()..].starts_with("::") && first != "crate" {
            uses.insert(first.to_owned());
        }
    }
    uses
}

/// The top-level modules that `code`, in the module at `path`, names through `crate::`
/// paths (groups included) and `super::` chains that reach the crate root.
fn edges(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "crate") {
        rest = &rest[at + "crate".len()..];
        if let Some(after) = rest.strip_prefix("::") {
            found.extend(path_heads(after));
        }
    }
    let mut rest = code;
    while let Some(at) = find_word(rest, "super") {
        let mut after = &rest[at..];
        let mut climbs = 0;
        while let Some(next) = after.strip_prefix("super::") {
            climbs += 1;
            after = next.trim_start();
        }
        rest = &rest[at + "super".len()..];
        // `super` from `a::b::c` is `a::b`; `path.len()` climbs reach the crate root.
        if climbs > 0 && climbs >= path.len() {
            found.extend(path_heads(after));
        }
    }
    found
}

/// The first segment of the path at the start of `text`, or of each path of a
/// `{a, b::C}` group there.
fn path_heads(text: &str) -> Vec<String> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut heads = Vec::new();
        let mut depth = 0usize;
        let mut start = true;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => start = true,
                c if start && !c.is_whitespace() => {
                    start = false;
                    let head = ident(&group[i..]);
                    if !head.is_empty() && head != "self" {
                        heads.push(head.to_owned());
                    }
                }
                _ => {}
            }
        }
        heads
    } else {
        let head = ident(text);
        if head.is_empty() {
            Vec::new()
        } else {
            vec![head.to_owned()]
        }
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at the start of `text` (empty if none).
fn ident(text: &str) -> &str {
    let end = text.find(|c: char| !is_ident_char(c)).unwrap_or(text.len());
    &text[..end]
}

/// The byte offset of the first occurrence of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `text` with comments (line, block, doc) and the contents of string and character
/// literals removed; lifetimes are kept.
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match (c, next) {
            ('/', Some('/')) => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            ('r', Some('#' | '"')) if !out.chars().next_back().is_some_and(is_ident_char) => {
                // A raw string: r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while chars.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if chars.get(j) != Some(&'"') {
                    out.push(c);
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    match chars.get(j) {
                        None => break,
                        Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                            j += 1 + hashes;
                            break;
                        }
                        Some(_) => j += 1,
                    }
                }
                out.push_str("\"\"");
                i = j;
            }
            ('"', _) => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            ('\'', Some('\\')) => {
                // An escaped character literal: '\n', '\'', '\u{..}'.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            ('\'', Some(_)) if chars.get(i + 2) == Some(&'\'') => {
                i += 3;
                out.push_str("' '");
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A cycle of `graph` (its first node repeated at the end), if it has one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_owned(), Mark::Open);
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, graph, marks, stack) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.get(node).copied().unwrap_or(Mark::New) == Mark::New {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, graph, &mut marks, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

/// The nodes of `graph`, each after every node it uses (ties in name order); `None` if
/// the graph has a cycle.
fn topological_order(graph: &Graph) -> Option<Vec<String>> {
    let mut nodes: BTreeSet<&String> = graph.keys().collect();
    nodes.extend(graph.values().flatten());
    let mut order = Vec::with_capacity(nodes.len());
    let mut placed = BTreeSet::new();
    while placed.len() < nodes.len() {
        let ready: Vec<&String> = nodes
            .iter()
            .copied()
            .filter(|n| !placed.contains(*n))
            .filter(|n| {
                graph
                    .get(*n)
                    .into_iter()
                    .flatten()
                    .all(|d| placed.contains(d))
            })
            .collect();
        if ready.is_empty() {
            return None;
        }
        for n in ready {
            placed.insert(n);
            order.push(n.clone());
        }
    }
    Some(order)
}

fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(from, uses)| {
            let uses: Vec<&str> = uses.iter().map(String::as_str).collect();
            format!("  {from} -> {}\n", uses.join(", "))
        })
        .collect()
}

// The check itself, on small inputs where the answer is known.

fn graph_of(edges: &[(&str, &str)]) -> Graph {
    let mut graph = Graph::new();
    for (from, to) in edges {
        graph
            .entry((*from).to_owned())
            .or_default()
            .insert((*to).to_owned());
        graph.entry((*to).to_owned()).or_default();
    }
    graph
}

fn names(of: &[&str]) -> Vec<String> {
    of.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_cycle_in_a_synthetic_graph_is_found_and_printed_in_order() {
    let graph = graph_of(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]);
    assert_eq!(find_cycle(&graph), Some(names(&["a", "b", "c", "a"])));
    assert_eq!(topological_order(&graph), None);
    let self_loop = graph_of(&[("a", "a")]);
    assert_eq!(find_cycle(&self_loop), Some(names(&["a", "a"])));
}

#[test]
fn an_acyclic_synthetic_graph_is_ordered_dependencies_first() {
    let graph = graph_of(&[
        ("top", "mid"),
        ("top", "leaf"),
        ("mid", "leaf"),
        ("other", "leaf"),
    ]);
    assert_eq!(find_cycle(&graph), None);
    assert_eq!(
        topological_order(&graph),
        Some(names(&["leaf", "mid", "other", "top"]))
    );
}

#[test]
fn crate_paths_groups_and_super_chains_are_edges() {
    let code = strip_comments_and_strings(
        "use crate::a::X;\n\
         use crate::{b, c::{D, E}, self as me};\n\
         fn f() { crate::d::g(); super::super::e::h(); super::sibling(); }\n",
    );
    // A file two levels down (`x::y`): two `super`s reach the crate root.
    let found = edges(&code, &names(&["x", "y"]));
    assert_eq!(found, ["a", "b", "c", "d", "e"].map(String::from).into());
    // One level down, one `super` already reaches the root.
    let found = edges("use super::z;", &names(&["x"]));
    assert_eq!(found, ["z"].map(String::from).into());
}

#[test]
fn comments_and_strings_are_not_edges() {
    let code = strip_comments_and_strings(
        "/// See [`crate::a::X`].\n\
         // crate::b\n\
         /* crate::c /* nested crate::d */ */\n\
         const S: &str = \"crate::e\";\n\
         const R: &str = r#\"crate::f \"quoted\" \"#;\n\
         const C: char = '\"';\n\
         fn f<'a>(x: &'a str) -> &'a str { crate::g::h(x) }\n",
    );
    assert_eq!(edges(&code, &names(&["x"])), ["g"].map(String::from).into());
}

#[test]
fn module_paths_follow_the_file_layout() {
    assert_eq!(module_path(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_path(Path::new("jitter.rs")), names(&["jitter"]));
    assert_eq!(module_path(Path::new("lease/mod.rs")), names(&["lease"]));
    assert_eq!(
        module_path(Path::new("lease/record/tests.rs")),
        names(&["lease", "record", "tests"])
    );
}

#[test]
fn items_of_the_crate_root_are_edges_to_the_root() {
    let dir = std::env::temp_dir().join(format!("module-graph-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("a")).unwrap();
    fs::write(dir.join("lib.rs"), "mod a;\nmod b;\npub use a::Thing;\n").unwrap();
    fs::write(
        dir.join("a/mod.rs"),
        "pub struct Thing;\nuse crate::b::Other;\n",
    )
    .unwrap();
    fs::write(dir.join("b.rs"), "pub struct Other;\nuse crate::Thing;\n").unwrap();
    let (graph, tests) = crate_graph(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert!(tests.values().all(BTreeSet::is_empty), "no test code here");
    assert_eq!(graph["crate"], ["a"].map(String::from).into());
    assert_eq!(graph["b"], ["crate"].map(String::from).into());
    assert_eq!(find_cycle(&graph), Some(names(&["a", "b", "crate", "a"])));
}

#[test]
fn test_code_is_told_apart_from_the_library() {
    let dir = std::env::temp_dir().join(format!("module-graph-tests-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("a")).unwrap();
    fs::write(
        dir.join("lib.rs"),
        "mod a;\nmod b;\n#[cfg(test)]\nmod helpers;\n",
    )
    .unwrap();
    fs::write(
        dir.join("a/mod.rs"),
        "use crate::b::X;\n#[cfg(test)]\nmod tests;\n",
    )
    .unwrap();
    fs::write(dir.join("a/tests.rs"), "use crate::helpers::wait;\n").unwrap();
    fs::write(dir.join("b.rs"), "pub struct X;\n").unwrap();
    fs::write(dir.join("helpers.rs"), "pub fn wait() {}\n").unwrap();
    let (graph, tests) = crate_graph(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(graph["a"], ["b"].map(String::from).into());
    assert!(
        !graph.contains_key("helpers"),
        "a test-only module is no part of the library"
    );
    assert_eq!(tests["a"], ["helpers"].map(String::from).into());
    assert_eq!(
        test_only_children("#[cfg(test)]\npub(crate) mod fake;\n#[cfg(test)]\nfn f() {}"),
        names(&["fake"])
    );
}

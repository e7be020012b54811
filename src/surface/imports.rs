//! The file-level import graph of `src/`: a file imports another when it names a path
//! to an item defined there (`use crate::…`, `super::…`, an inline `crate::…` path),
//! re-exports followed to the file that defines the item. No file may import, through
//! any chain, a file that imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every library source file outside tests, by module path (`["sends", "load"]`).
fn files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_owned();
            if path.is_dir() {
                if name != "tests" {
                    let mut next = prefix.to_vec();
                    next.push(name);
                    walk(&path, &next, out);
                }
            } else if let Some(stem) = name.strip_suffix(".rs")
                && !stem.contains("tests")
                && stem != "main"
            {
                let mut module = prefix.to_vec();
                if stem != "lib" && stem != "mod" {
                    module.push(stem.to_owned());
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &[], &mut out);
    out
}

/// The file's code without comments, up to its `#[cfg(test)]` test module.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if !trimmed.starts_with("//") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_owned()];
    };
    let prefix = tree[..open].trim_end_matches("::").trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| match p.as_str() {
            "self" => prefix.to_owned(),
            _ if prefix.is_empty() => p,
            _ => format!("{prefix}::{p}"),
        })
        .collect()
}

/// Every `crate`/`super`/`self` path the code names: those of its `use` trees, then
/// the inline ones of the rest.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    let mut others = String::new();
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let statement = &rest[at + 4..];
        let end = statement.find(';').unwrap_or(statement.len());
        others.push_str(&rest[..at]);
        if before.is_none_or(|c| !c.is_alphanumeric() && c != '_') {
            out.extend(expand(&statement[..end]));
        } else {
            others.push_str(&rest[at..at + 4 + end]);
        }
        rest = &statement[end..];
    }
    others.push_str(rest);
    let code = others.as_str();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(path.trim_end_matches(':').to_owned());
        }
    }
    out
}

/// The `pub use` re-exports of a file's code: the name it exports to the path it
/// names.
fn reexports(code: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = code;
    while let Some(at) = rest.find("pub use ") {
        let statement = &rest[at + 8..];
        let end = statement.find(';').unwrap_or(statement.len());
        for full in expand(&statement[..end]) {
            let alias = statement[..end]
                .split(" as ")
                .nth(1)
                .filter(|_| !statement[..end].contains('{'));
            let name = alias
                .map(str::trim)
                .or_else(|| full.rsplit("::").next())
                .unwrap_or(&full)
                .to_owned();
            out.insert(name, full.clone());
        }
        rest = &statement[end..];
    }
    out
}

/// The files' modules, their paths and their re-exports.
struct Tree {
    files: BTreeMap<Vec<String>, PathBuf>,
    reexports: BTreeMap<Vec<String>, BTreeMap<String, String>>,
}

/// The file defining what `path` names from module `at`: the longest module prefix
/// with a file, then through that file's re-exports of the next segment.
fn resolve(path: &str, at: &[String], tree: &Tree) -> Option<Vec<String>> {
    let (mut module, mut rest) = locate(path, at, &tree.files)?;
    for _ in 0..8 {
        let Some(next) = rest.first() else {
            return Some(module);
        };
        let Some(target) = tree.reexports.get(&module).and_then(|r| r.get(next)) else {
            return Some(module);
        };
        let mut followed = target.clone();
        for segment in &rest[1..] {
            followed.push_str("::");
            followed.push_str(segment);
        }
        if !(followed.starts_with("crate::")
            || followed.starts_with("super::")
            || followed.starts_with("self::"))
        {
            // `pub use child::X` names a child module relative to the file.
            followed = format!("self::{followed}");
        }
        (module, rest) = locate(&followed, &module, &tree.files)?;
    }
    Some(module)
}

/// The longest module prefix of `path` (from module `at`) that has a file, and the
/// segments after it.
fn locate(
    path: &str,
    at: &[String],
    files: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<(Vec<String>, Vec<String>)> {
    let mut segments: Vec<&str> = path.split("::").collect();
    let mut module: Vec<String> = match segments.first()? {
        &"crate" => Vec::new(),
        _ => at.to_vec(),
    };
    let first = segments.remove(0);
    if first == "super" {
        module.pop();
    }
    if !matches!(first, "crate" | "super" | "self") {
        // A 2018 relative path: a child module of `at`.
        module.push(first.to_owned());
        if !files.contains_key(&module) {
            return None;
        }
    }
    for segment in segments {
        if segment == "super" {
            module.pop();
        } else {
            module.push(segment.to_owned());
        }
    }
    let mut rest = Vec::new();
    while !module.is_empty() && !files.contains_key(&module) {
        rest.insert(0, module.pop().unwrap_or_default());
    }
    Some((module, rest))
}

/// The file-level import graph: module path to the module paths it imports.
fn graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = files(src);
    let codes: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|(m, p)| {
            (
                m.clone(),
                code(&std::fs::read_to_string(p).unwrap_or_default()),
            )
        })
        .collect();
    let tree = Tree {
        reexports: codes
            .iter()
            .map(|(m, c)| (m.clone(), reexports(c)))
            .collect(),
        files,
    };
    let mut graph = BTreeMap::new();
    for (module, text) in &codes {
        let mut edges = BTreeSet::new();
        for named in paths(text) {
            // A file's own re-exports are its facade, not an import of its own.
            if let Some(target) = resolve(&named, module, &tree)
                && &target != module
            {
                edges.insert(target);
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// A cycle through `start`, if one exists (a path of modules back to it).
fn cycle_through(
    start: &Vec<String>,
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Option<Vec<Vec<String>>> {
    let mut stack = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((node, trail)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                return Some(trail.clone());
            }
            if seen.insert(next.clone()) {
                let mut longer = trail.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

/// Every import cycle of the library's sources, each as `a -> b -> … -> a`.
pub(super) fn cycles(src: &Path) -> Vec<String> {
    let graph = graph(src);
    let name = |m: &Vec<String>| {
        if m.is_empty() {
            "lib".to_owned()
        } else {
            m.join("/")
        }
    };
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        if let Some(trail) = cycle_through(start, &graph) {
            let mut names: Vec<String> = trail.iter().map(name).collect();
            // One rotation per cycle: start at its smallest member.
            let smallest = names
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.cmp(b.1))
                .map_or(0, |(i, _)| i);
            names.rotate_left(smallest);
            let first = names[0].clone();
            names.push(first);
            found.insert(names.join(" -> "));
        }
    }
    found.into_iter().collect()
}

#[test]
fn the_checker_finds_a_planted_cycle_and_passes_a_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::create_dir(src.join("a")).expect("dir");
    std::fs::write(src.join("lib.rs"), "pub mod a;\n").expect("lib");
    std::fs::write(
        src.join("a.rs"),
        "mod b;\nmod c;\npub use b::X;\nuse c::Y;\n",
    )
    .expect("a");
    std::fs::write(src.join("a/b.rs"), "pub struct X;\n").expect("b");
    // `super::X` is a's re-export of b's X: c imports b, not a. No cycle.
    std::fs::write(src.join("a/c.rs"), "pub struct Y;\nuse super::X;\n").expect("c");
    assert_eq!(cycles(src), Vec::<String>::new());
    std::fs::write(src.join("a/b.rs"), "pub struct X;\nuse super::c::Y;\n").expect("b");
    std::fs::write(src.join("a/c.rs"), "pub struct Y;\nuse crate::a::{b::X};\n").expect("c");
    assert_eq!(cycles(src), vec!["a/b -> a/c -> a/b".to_owned()]);
    std::fs::write(src.join("a/b.rs"), "pub struct X;\n").expect("b");
    std::fs::write(
        src.join("a.rs"),
        "mod b;\nmod c;\nuse c::Y;\npub struct Z;\n",
    )
    .expect("a");
    std::fs::write(src.join("a/c.rs"), "pub struct Y;\nfn f() { super::Z; }\n").expect("c");
    assert_eq!(cycles(src), vec!["a -> a/c -> a".to_owned()]);
}

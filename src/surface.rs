//! Tests of the crate's shape: the size of the public root and of the source files,
//! and no import cycle between its files.

mod imports;

/// The names `src/lib.rs` re-exports at the crate root.
fn root_names() -> Vec<String> {
    let lib = include_str!("lib.rs");
    let mut names = Vec::new();
    let mut rest = lib;
    while let Some(at) = rest.find("\npub use ") {
        let statement = &rest[at + 9..];
        let end = statement.find(';').unwrap_or(statement.len());
        let path = &statement[..end];
        let list = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => &path[open + 1..close],
            _ => path.rsplit("::").next().unwrap_or(path),
        };
        names.extend(
            list.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| n.rsplit(' ').next().unwrap_or(n).to_owned()),
        );
        rest = &statement[end..];
    }
    names
}

#[test]
fn the_root_holds_at_most_thirty_names() {
    let names = root_names();
    assert!(names.contains(&"Journal".to_owned()), "{names:?}");
    assert!(
        names.len() <= 30,
        "{} names at the root: {names:?}",
        names.len()
    );
}

#[test]
fn no_source_file_outside_tests_is_over_600_lines() {
    fn walk(dir: &std::path::Path, over: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "tests" {
                    walk(&path, over);
                }
            } else if name.ends_with(".rs") && !name.contains("tests") {
                let lines = std::fs::read_to_string(&path).map_or(0, |t| t.lines().count());
                if lines > 600 {
                    over.push(format!("{}: {lines}", path.display()));
                }
            }
        }
    }
    let mut over = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut over,
    );
    assert!(over.is_empty(), "over 600 lines: {over:?}");
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cycles = imports::cycles(&src);
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

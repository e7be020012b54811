//! README.md against the code it shows: its service is the compiled example's.

/// The text between the first line `open` after `after` and the next ```` ``` ```` line.
fn block_after<'a>(text: &'a str, after: &str, open: &str) -> &'a str {
    let from = text.find(after).map_or(0, |at| at + after.len());
    let start = text[from..]
        .find(open)
        .map_or(text.len(), |at| from + at + open.len());
    let end = text[start..]
        .find("\n```")
        .map_or(text.len(), |at| start + at + 1);
    &text[start..end]
}

#[test]
fn the_readme_service_is_the_compiled_example() {
    let readme = include_str!("../README.md");
    let example = include_str!("../../examples/idempotent-notes/main.rs");
    let shown = block_after(readme, "## A service in a few lines", "```rust\n");
    let compiled = block_after(example, "// README block", "\n");
    let compiled = &compiled[..compiled.find("// end of README block").unwrap_or(0)];
    assert!(shown.contains(".layer(create_note_once)"), "{shown}");
    assert_eq!(
        shown, compiled,
        "README.md's service differs from the example"
    );
}

#[test]
fn the_readme_is_at_most_250_lines() {
    let lines = include_str!("../README.md").lines().count();
    assert!(lines <= 250, "README.md has {lines} lines");
}

#[test]
fn the_readme_lists_every_stored_header() {
    let readme = include_str!("../README.md");
    for name in crate::stored::STORED_HEADERS {
        assert!(readme.contains(&format!("`{name}`")), "{name}");
    }
}

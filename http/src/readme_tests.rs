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

#[test]
fn the_readme_publishes_the_key_format_and_its_expiry() {
    // The draft: "Resources MUST publish a idempotency related specification ...
    // including expiration related policy", and the key's format (Security
    // Considerations): the README says both, with the limits the code enforces.
    let readme = include_str!("../README.md").replace('\n', " ");
    let limits = format!("Accepted: 1 to {} characters", crate::key::MAX_KEY_LENGTH);
    assert!(readme.contains(&limits), "{limits}");
    assert!(readme.contains("`%x21 / %x23-5B / %x5D-7E`"));
    assert!(readme.contains("never expire"));
    let body = format!(
        "at most {} KiB by default",
        crate::DEFAULT_BODY_LIMIT / 1024
    );
    assert!(readme.contains(&body), "{body}");
}

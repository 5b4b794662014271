//! docs/library.md stays true: its runnable example is a doc-test of the crate (`src/lib.rs`
//! includes the file under `cfg(doctest)`), and its rstest block, which a doc-test cannot run
//! (rustdoc builds no `#[test]` functions), is `tests/fixtures_example.rs` verbatim.

const GUIDE: &str = include_str!("../../../docs/library.md");

#[test]
fn the_guides_fixture_block_is_the_fixture_test_file() {
    let block = GUIDE
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/library.md has a ```rust,ignore block");
    let file = include_str!("fixtures_example.rs");
    assert_eq!(
        block, file,
        "docs/library.md's fixture block and tests/fixtures_example.rs differ: copy one to the other"
    );
}

#[test]
fn every_other_rust_block_of_the_guide_is_a_doc_test() {
    // Blocks marked `ignore`/`no_run` would not run as doc-tests; only the fixture block may be.
    let fences: Vec<&str> = GUIDE.lines().filter(|l| l.starts_with("```rust")).collect();
    assert!(fences.contains(&"```rust"), "{fences:?}");
    assert_eq!(
        fences.iter().filter(|f| **f != "```rust").count(),
        1,
        "only the fixture block may opt out of running: {fences:?}"
    );
}

//! Helpers shared by the integration tests: where the golden fixtures are, and their corpora.

use std::path::PathBuf;

/// `tests/data/golden/` (made by the paper's implementation; see its README).
pub fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

/// The documents of a golden `.jsonl` corpus (its non-empty lines' `text` fields).
pub fn texts(corpus: &str) -> Vec<String> {
    std::fs::read_to_string(golden().join(corpus))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["text"].as_str().unwrap().to_string()
        })
        .collect()
}

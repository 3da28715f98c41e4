//! docs/s3-compat.md stays true: every routed operation is listed as supported or partial, and
//! no "not yet" row names an operation the router serves.

use std::collections::BTreeMap;

use strata_s3::Operation;

/// Operation-like names (CamelCase identifiers) in a table cell: `GetBucketAcl / GetObjectAcl`.
fn names(cell: &str) -> Vec<String> {
    cell.split('/')
        .filter_map(|part| {
            let word: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            let camel = word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && word.chars().any(|c| c.is_ascii_lowercase());
            camel.then_some(word)
        })
        .collect()
}

#[test]
fn compat_table_matches_the_router() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/s3-compat.md");
    let doc = std::fs::read_to_string(path).expect("docs/s3-compat.md exists");
    let mut status: BTreeMap<String, String> = BTreeMap::new();
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0] == "operation" || cells[0].starts_with("---") {
            continue;
        }
        for name in names(cells[0]) {
            status.insert(name, cells[1].to_owned());
        }
    }
    for op in Operation::ALL {
        let s = status
            .get(op.name())
            .unwrap_or_else(|| panic!("{} is routed but not in docs/s3-compat.md", op.name()));
        assert!(s == "supported" || s == "partial", "{} is routed but listed as {s:?}", op.name());
    }
    let routed: Vec<&str> = Operation::ALL.iter().map(|o| o.name()).collect();
    for (name, s) in &status {
        if s == "not yet" {
            assert!(!routed.contains(&name.as_str()), "{name} is listed as not yet but the router serves it");
        }
    }
}

//! Tidy: the rules of how the code and its documents are kept, checked so a reviewer need not
//! repeat them (as rust-analyzer's and rustc's `tidy` do).
//!
//! - Every Rust file of the workspace opens with its map (`//!`).
//! - Every path a document cites (`crates/...`, `docs/...`, `scripts/...`, `tests/...`, in the
//!   README, `docs/` and the code's comments) exists.
//! - The crate map of `docs/architecture.md` names every workspace crate, and for each exactly
//!   the Strata crates its `Cargo.toml` depends on.
//! - The S3 crate's modules import each other without a circle: the request context at the
//!   bottom, the handlers above it, dispatch on top.
//! - No duration or size is written as a literal outside `limits.rs` (format constants and unit
//!   conversions excepted, each listed below with its reason).
//!
//! Each failure names the file and line and says what to do.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root")
}

/// Files under `dir` (recursively) whose name ends with `suffix`, skipping build output and
/// tool folders.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !matches!(name.as_str(), "target" | ".venv" | ".tools" | ".git" | "node_modules" | "data")
                {
                    stack.push(p);
                }
            } else if name.ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The source files of every crate (`crates/*/src/**.rs`).
fn sources() -> Vec<PathBuf> {
    files(&root().join("crates"), ".rs")
        .into_iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "src"))
        .collect()
}

/// `text` without its test modules: everything from the first `#[cfg(test)]` that opens a
/// module (`mod tests {` or `#[path = ..] mod ..;`).
fn without_tests(text: &str) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let mut offset = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
            if next.starts_with("mod ") || next.starts_with("#[path") {
                return &text[..offset];
            }
        }
        offset += line.len() + 1;
    }
    text
}

#[test]
fn every_module_opens_with_its_map() {
    let missing: Vec<String> =
        sources().iter().filter(|p| !read(p).starts_with("//!")).map(|p| rel(p)).collect();
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` comment saying what they own and how data moves through them: {missing:#?}"
    );
}

/// The repository paths cited in `text`: words starting with `crates/`, `docs/`, `scripts/` or
/// `tests/`, or a crate's folder (`strata-s3/src/...`, short for `crates/strata-s3/src/...`), cut
/// at the first character a path does not hold, without trailing punctuation or a `:line`
/// suffix. Patterns (`*`, `{`, `<`) are not paths.
fn cited_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for prefix in ["crates/", "docs/", "scripts/", "tests/", "strata-"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(prefix) {
            let start = from + found;
            from = start + prefix.len();
            let before = text[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '$')) {
                continue;
            }
            let path: String = text[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '*' | '{' | '<'))
                .collect();
            if path.contains(['*', '{', '<']) {
                continue;
            }
            let path = path.trim_end_matches(['.', ',']).to_owned();
            if prefix == "strata-" {
                // A crate's folder only when a path inside it follows (`strata-s3/src/x.rs`).
                if path.contains("/src/") || path.contains("/tests/") {
                    out.push(format!("crates/{path}"));
                }
            } else if path.len() > prefix.len() {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn every_path_a_document_cites_exists() {
    let root = root();
    let mut documents = vec![root.join("README.md")];
    documents.extend(files(&root.join("docs"), ".md"));
    documents.extend(sources());
    documents.extend(files(&root.join("scripts"), ".sh"));
    let mut missing = BTreeSet::new();
    for doc in &documents {
        let text = read(doc);
        for (n, line) in text.lines().enumerate() {
            let rust = doc.extension().is_some_and(|e| e == "rs");
            // Rust: only comments cite documents (string literals name test fixtures and the like);
            // a `git log` line names what history holds, not the tree.
            if rust && !line.trim_start().starts_with("//") || line.contains("git log") {
                continue;
            }
            // A Rust file may cite its own crate's files from the crate's folder.
            let crate_dir = doc.ancestors().find(|a| a.join("Cargo.toml").exists()).unwrap_or(&root);
            for path in cited_paths(line) {
                let exists = root.join(&path).exists() || rust && crate_dir.join(&path).exists();
                if !exists {
                    missing.insert(format!("{}:{}: {path}", rel(doc), n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documents cite paths that do not exist (fix the path or the text): {missing:#?}"
    );
}

/// The Strata crates `crates/<name>/Cargo.toml` depends on (not its dev-dependencies).
fn strata_dependencies(name: &str) -> BTreeSet<String> {
    let manifest = read(&root().join("crates").join(name).join("Cargo.toml"));
    let mut in_dependencies = false;
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if in_dependencies && line.starts_with("strata") {
            if let Some(dep) = line.split(['.', ' ', '=']).next() {
                out.insert(dep.to_owned());
            }
        }
    }
    out
}

/// The workspace's crates: the folders of `crates/` with a `Cargo.toml`.
fn workspace_crates() -> BTreeSet<String> {
    fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The crate map of `docs/architecture.md`: its table rows with a cell that is a crate name in
/// backticks (the first such cell names the row's crate), and the crates in backticks of the
/// row's last cell.
fn documented_map() -> BTreeMap<String, BTreeSet<String>> {
    let text = read(&root().join("docs/architecture.md"));
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !line.trim_start().starts_with('|') {
            continue;
        }
        let named = cells[1..cells.len() - 2].iter().find_map(|c| {
            c.strip_prefix('`').and_then(|c| c.strip_suffix('`')).filter(|n| n.starts_with("strata"))
        });
        let Some(name) = named else { continue };
        let last = cells[cells.len() - 2];
        let deps: BTreeSet<String> = last
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|d| d.starts_with("strata"))
            .map(str::to_owned)
            .collect();
        map.insert(name.to_owned(), deps);
    }
    map
}

#[test]
fn the_crate_map_names_every_crate_and_its_dependencies() {
    let documented = documented_map();
    let crates = workspace_crates();
    let named: BTreeSet<String> = documented.keys().cloned().collect();
    assert_eq!(
        named, crates,
        "docs/architecture.md's crate map must have one row per workspace crate (`| `name` | ... | deps |`)"
    );
    for name in &crates {
        let wanted = strata_dependencies(name);
        assert_eq!(
            documented[name], wanted,
            "docs/architecture.md says {name} depends on {:?}; its Cargo.toml says {wanted:?}",
            documented[name]
        );
    }
}

/// The modules of the S3 crate each module refers to (`crate::x`, `use crate::{x, ..}`),
/// comments and test modules left out.
fn s3_module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("crates/strata-s3/src");
    let modules: BTreeSet<String> = files(&src, ".rs")
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|m| m != "lib")
        .collect();
    let mut graph = BTreeMap::new();
    for m in &modules {
        let text = read(&src.join(format!("{m}.rs")));
        let code: String = without_tests(&text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut refs = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inside = group.split('}').next().unwrap_or("");
                refs.extend(inside.split(',').filter_map(|p| p.trim().split("::").next()).map(str::to_owned));
            } else {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                refs.insert(name);
            }
        }
        refs.retain(|r| modules.contains(r) && r != m);
        graph.insert(m.clone(), refs);
    }
    graph
}

#[test]
fn the_s3_crate_has_no_import_circle() {
    let graph = s3_module_graph();
    // Depth-first search for a back edge, reporting the circle it closes.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut circle = path[at..].to_vec();
            circle.push(m.to_owned());
            return Some(circle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_owned());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        let circle = visit(m, &graph, &mut Vec::new(), &mut done);
        assert!(
            circle.is_none(),
            "strata-s3's modules import each other in a circle: {}. Move what both need down (into \
             the request context, the router, or a module of helpers) so imports point one way.",
            circle.unwrap_or_default().join(" → ")
        );
    }
    // The context is the bottom: it imports no handler and not the dispatcher.
    let context = &graph["context"];
    for upper in ["dispatch", "object", "bucket", "multipart", "access"] {
        assert!(!context.contains(upper), "context.rs imports {upper}: the context must stay at the bottom");
    }
    assert!(graph.values().all(|refs| !refs.contains("dispatch")), "nothing may import dispatch.rs");
}

/// Files whose literals are not limits: the units sizes are parsed in, a format's fixed size,
/// and a test tool's fixed geometry.
const LITERALS_ALLOWED: [(&str, &str); 5] = [
    ("crates/strata-types/src/size.rs", "the units sizes are written in (KiB, MiB, GiB)"),
    (
        "crates/strata-crypto/src/package.rs",
        "PACKAGE_SIZE: the sealed package of the on-drive format (docs/formats.md)",
    ),
    ("crates/strata-drive/src/sim.rs", "the simulated filesystem's fixed geometry (a test tool)"),
    (
        "crates/strata-crypto/src/sio.rs",
        "MinIO's sealed streams and admin bodies: their fragment size and key derivation are its format",
    ),
    (
        "crates/strata-import/src/minio/sse.rs",
        "MinIO's encrypted objects: the DARE package size is its format",
    ),
];

/// The integer literal that ends `before` (digits and `_`), if it ends with one.
fn ends_with_literal(before: &str) -> bool {
    let before = before.trim_end();
    let literal: String = before.chars().rev().take_while(|c| c.is_ascii_digit() || *c == '_').collect();
    !literal.is_empty()
        && literal.chars().any(|c| c.is_ascii_digit())
        && !before[..before.len() - literal.len()].ends_with(|c: char| c.is_alphanumeric() || c == '.')
}

/// A duration or size written as a literal in `line`: `Duration::from_secs(5)`,
/// `from_millis(500)`, `64 << 20`, `16 * 1024`.
fn literal_limit(line: &str) -> Option<&'static str> {
    for (i, _) in line.match_indices("Duration::from_") {
        let rest = &line[i + "Duration::from_".len()..];
        let unit: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let arg = rest[unit.len()..].strip_prefix('(').map(str::trim_start).unwrap_or("");
        if arg.starts_with(|c: char| c.is_ascii_digit()) {
            return Some("a duration");
        }
    }
    for (i, _) in line.match_indices("<<") {
        let after = line[i + 2..].trim_start();
        let shift: String = after.chars().take_while(char::is_ascii_digit).collect();
        if matches!(shift.as_str(), "10" | "20" | "30" | "40") && ends_with_literal(&line[..i]) {
            return Some("a size");
        }
    }
    for (i, _) in line.match_indices('*') {
        let after = line[i + 1..].trim_start();
        let is_kib = after.starts_with("1024")
            && !after["1024".len()..].starts_with(|c: char| c.is_ascii_digit() || c == '.');
        if is_kib && ends_with_literal(&line[..i]) {
            return Some("a size");
        }
    }
    None
}

#[test]
fn no_duration_or_size_is_a_literal_outside_limits() {
    let root = root();
    let mut found = Vec::new();
    for p in sources() {
        let path = rel(&p);
        // limits.rs itself, the listed exceptions, and test modules kept in files of their own.
        let test_module = path.ends_with("_tests.rs");
        if path.ends_with("strata-types/src/limits.rs")
            || test_module
            || LITERALS_ALLOWED.iter().any(|(f, _)| *f == path)
        {
            continue;
        }
        let text = read(&p);
        for (n, line) in without_tests(&text).lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(what) = literal_limit(line) {
                found.push(format!("{path}:{}: {what}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "limits belong in crates/strata-types/src/limits.rs, named, with why they exist and what \
         happens past them (and a row in docs/limits.md): {found:#?}"
    );
    assert!(root.join("docs/limits.md").exists());
    // The matcher itself: what it must and must not see.
    for hit in ["sleep(Duration::from_millis(500))", "let x = 64 << 20;", "size: 16 * 1024,"] {
        assert!(literal_limit(hit).is_some(), "{hit}");
    }
    for miss in ["Duration::from_millis(wait)", "n << 20", "kib * 1024", "1024.0 * 1024.0", "x * 10240"] {
        assert!(literal_limit(miss).is_none(), "{miss}");
    }
}

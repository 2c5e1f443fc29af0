//! The benchmark's top-level modules form a DAG: no module reaches itself through the modules
//! it names. A module's files are `src/M.rs` and everything below `src/M/`; each `crate::N` or
//! `crate::{N, …}` in them, code, tests and doc comments alike, is an edge from M to N. The
//! crate roots (`lib.rs`, `main.rs`) and the binaries (`bin/`) are not modules. This is the
//! rule the library's layering check applies to the library.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module graph: each module and the modules its files name.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The crate's `src/`.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file at or below `path`.
fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                out.extend(rust_files(&p));
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The top-level modules under `src` and the files of each.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("src/ is readable").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let module = if path.is_dir() {
            name
        } else if let Some(stem) = name.strip_suffix(".rs") {
            stem.to_string()
        } else {
            continue;
        };
        if ["bin", "lib", "main"].contains(&module.as_str()) {
            continue;
        }
        out.entry(module).or_default().extend(rust_files(&path));
    }
    out
}

/// The identifier at the start of `s` (letters, digits, `_`).
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The modules that `text` names as `crate::N` or in a group `crate::{N, M::x, …}`.
fn named(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            None => {
                out.insert(ident(rest).to_string());
            }
            Some(group) => {
                // The group's top-level items, up to its closing brace.
                let mut depth = 0;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && !c.is_whitespace() => {
                            out.insert(ident(&group[i..]).to_string());
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

/// The graph of the modules under `src`: an edge from each module to every other module
/// that its files name.
fn graph(src: &Path) -> Graph {
    let modules = modules(src);
    let mut g = Graph::new();
    for (m, files) in &modules {
        let mut edges = BTreeSet::new();
        for f in files {
            let text = std::fs::read_to_string(f).expect("a readable source file");
            edges.extend(
                named(&text)
                    .into_iter()
                    .filter(|n| n != m && modules.contains_key(n)),
            );
        }
        g.insert(m.clone(), edges);
    }
    g
}

/// A cycle of `g` as the path that closes it (`a -> b -> a`), if there is one.
fn cycle(g: &Graph) -> Option<Vec<String>> {
    /// Depth-first search from `m`, `path` the modules on the way to it; `done` the modules
    /// whose every path is known to be acyclic.
    fn visit(
        g: &Graph,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for n in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, n, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_form_a_dag() {
    let g = graph(&src());
    for m in ["domain", "cli", "cell", "output", "sweep"] {
        assert!(g.contains_key(m), "no module `{m}` found in {:?}", g.keys());
    }
    if let Some(c) = cycle(&g) {
        panic!(
            "the bench's top-level modules import in a circle: {}",
            c.join(" -> ")
        );
    }
    // The vocabulary is at the bottom.
    assert!(g["domain"].is_empty(), "domain names {:?}", g["domain"]);
}

#[test]
fn names_and_cycles_are_found() {
    let text = "use crate::cli::Args;\n/// See [`crate::record`].\n\
                use crate::{plot, output::{self, x}, sweep::y};\nuse corecoll::crate_x;";
    let want: BTreeSet<String> = ["cli", "record", "plot", "output", "sweep"]
        .map(String::from)
        .into();
    assert_eq!(named(text), want);
    let edges = |pairs: &[(&str, &[&str])]| -> Graph {
        pairs
            .iter()
            .map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect()))
            .collect()
    };
    let dag = edges(&[("a", &["b", "c"]), ("b", &["c"]), ("c", &[])]);
    assert_eq!(cycle(&dag), None);
    let circle = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
    assert_eq!(cycle(&circle).unwrap(), ["a", "b", "c", "a"]);
}

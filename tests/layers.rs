//! The library's layers (docs/architecture.md): every top-level module of `src/` has its place
//! in one list of layers ([`LAYERS`]), and a module uses only modules of the layers below its
//! own — so no two modules use each other, directly or around a cycle. A module uses another
//! when its code names it by a `crate::` path, or names a type that the crate root re-exports
//! from it (`crate::Comm` is `comm`'s). The unit tests of the low layers (up to the schedules,
//! [`TESTED_LOW`]) obey the rule too: they run over the shared-memory transport without a team.
//! The table of docs/architecture.md lists the same layers, and its "uses" column is what the
//! code uses, which the last test checks.
//!
//! This reads the source as text: `use crate::x::…`, `crate::x::f(…)` and `crate::{x, y}` paths,
//! in code and in comments alike (a comment that sends the reader to a module above is an
//! upward dependency for the reader; the map's "uses" column counts code only), skipping the
//! `#[cfg(test)]` and `#[cfg(all(test, …))]` modules of the modules above the schedules; and
//! the public types the crate root re-exports (`crate::Comm`) where code names them. A doc
//! link to a public type (``[`Team`](crate::Team)``) is how a reader finds the API and is no
//! import, so comments may name those.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom to top, each with its modules: a module may use the modules of the
/// layers below its own, and no other. docs/architecture.md lists them top to bottom, a row per
/// module.
const LAYERS: [(&str, &[&str]); 16] = [
    ("base", &["collective", "copy", "error", "op"]),
    ("numbers", &["repro"]),
    ("environment", &["env", "topology"]),
    ("waiting", &["sync"]),
    ("mailbox", &["mailbox"]),
    ("shared state", &["shm"]),
    ("transport", &["transport"]),
    ("schedules", &["algorithms"]),
    ("choice", &["select"]),
    ("tables", &["tuning"]),
    ("machine profile", &["profile"]),
    ("hierarchy", &["hierarchy"]),
    ("composition", &["local", "sim"]),
    ("process layer", &["process"]),
    ("API", &["comm"]),
    ("teams", &["team"]),
];

/// The highest module whose unit tests obey the layers too, with every module below it.
const TESTED_LOW: &str = "algorithms";

/// Module `m`'s layer: its index in [`LAYERS`] and its name.
fn layer(m: &str) -> (usize, &'static str) {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, ms))| ms.contains(&m))
        .map(|(i, (name, _))| (i, *name))
        .unwrap_or_else(|| panic!("module {m} has no layer in LAYERS"))
}

/// Whether module `m`'s unit tests obey the layers.
fn tests_obey(m: &str) -> bool {
    layer(m).0 <= layer(TESTED_LOW).0
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules: `src/x.rs` and `src/x/`, but `lib.rs`, `main.rs` and `bin/`.
fn modules() -> BTreeSet<String> {
    fs::read_dir(src())
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            if e.path().is_dir() {
                (name != "bin").then_some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib" && stem != "main").then(|| stem.to_string())
            }
        })
        .collect()
}

/// Every `.rs` file of module `m`.
fn files(m: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src().join(format!("{m}.rs"));
    if file.is_file() {
        out.push(file);
    }
    let mut dirs = vec![src().join(m)];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// The text of `file` without its test modules: from a `#[cfg(test)]` or
/// `#[cfg(all(test, …))]` attribute on a `mod` to the end of that module (by braces), or the
/// whole file if the module that includes it is a test module (a `mod x;` under such an
/// attribute names `x.rs` or `x/mod.rs`, collected in `test_files`).
fn code(text: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let is_test_attr = line.starts_with("#[cfg(test)]")
            || (line.starts_with("#[cfg(all(test") && !line.contains("not(test)"));
        if is_test_attr {
            // Skip attributes and the item they apply to.
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            if j < lines.len() && lines[j].contains("mod ") && lines[j].trim_end().ends_with('{') {
                let mut depth = 0i64;
                let mut k = j;
                loop {
                    depth += lines[k].matches('{').count() as i64;
                    depth -= lines[k].matches('}').count() as i64;
                    k += 1;
                    if depth <= 0 || k >= lines.len() {
                        break;
                    }
                }
                i = k;
                continue;
            }
            i = j + 1;
            continue;
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
    }
    out
}

/// Files included only by test modules (`#[cfg(test)] mod x;`), which are test code whole.
fn test_files() -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for m in modules() {
        for f in files(&m) {
            let text = fs::read_to_string(&f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                let l = l.trim_start();
                if !(l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test")) {
                    continue;
                }
                let Some(next) = lines.get(i + 1) else {
                    continue;
                };
                let next = next.trim();
                let Some(name) = next
                    .strip_suffix(';')
                    .and_then(|n| n.rsplit(' ').next())
                    .filter(|_| next.contains("mod "))
                else {
                    continue;
                };
                let dir =
                    if f.file_name().unwrap() == "mod.rs" || f == src().join(format!("{m}.rs")) {
                        if f.file_name().unwrap() == "mod.rs" {
                            f.parent().unwrap().to_path_buf()
                        } else {
                            src().join(&m)
                        }
                    } else {
                        f.with_extension("")
                    };
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// What the crate root re-exports, by name: `pub use m::{A, B};` and `pub use m::A;`.
fn root_exports() -> BTreeMap<String, String> {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for n in names.split(',') {
            let n = n.trim().rsplit("::").next().unwrap_or("").trim();
            if !n.is_empty() {
                out.insert(n.to_string(), module.to_string());
            }
        }
    }
    out
}

/// What a scan of the source counts as a use.
#[derive(Clone, Copy)]
enum Count {
    /// Code and comments, with the unit tests of the modules whose tests obey the layers.
    Layers,
    /// Code only, tests aside: the imports the map's "uses" column lists.
    Imports,
}

/// For each module, the modules it names, each with the first place that names it
/// (`file:line`), for the messages.
fn sites(count: Count) -> BTreeMap<String, BTreeMap<String, String>> {
    let mods = modules();
    let exports = root_exports();
    let tests = test_files();
    let mut edges = BTreeMap::new();
    for m in &mods {
        let with_tests = matches!(count, Count::Layers) && tests_obey(m);
        let mut used = BTreeMap::new();
        for f in files(m) {
            if tests.contains(&f) && !with_tests {
                continue;
            }
            let raw = fs::read_to_string(&f).unwrap();
            let text = if with_tests { raw } else { code(&raw) };
            for (i, _) in text.match_indices("crate::") {
                let after = &text[i + "crate::".len()..];
                let names: Vec<String> = if let Some(group) = after.strip_prefix('{') {
                    let end = group.find('}').unwrap_or(group.len());
                    group[..end]
                        .split(',')
                        .map(|s| s.trim().split("::").next().unwrap_or("").to_string())
                        .collect()
                } else {
                    let end = after
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    vec![after[..end].to_string()]
                };
                let line_start = text[..i].rfind('\n').map_or(0, |k| k + 1);
                let in_comment = text[line_start..i].trim_start().starts_with("//");
                if in_comment && matches!(count, Count::Imports) {
                    continue;
                }
                for n in names {
                    let target = if mods.contains(&n) {
                        Some(n)
                    } else if in_comment {
                        None
                    } else {
                        exports.get(&n).cloned()
                    };
                    if let Some(t) = target.filter(|t| t != m && mods.contains(t)) {
                        let line = text[..i].matches('\n').count() + 1;
                        let rel = f.strip_prefix(src()).unwrap_or(&f).display().to_string();
                        used.entry(t).or_insert(format!("src/{rel}:{line}"));
                    }
                }
            }
        }
        edges.insert(m.clone(), used);
    }
    edges
}

#[test]
fn every_module_has_one_layer() {
    let placed: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, ms)| ms.iter().copied())
        .collect();
    let unique: BTreeSet<&str> = placed.iter().copied().collect();
    assert_eq!(
        placed.len(),
        unique.len(),
        "a module placed twice in LAYERS"
    );
    let mods = modules();
    let missing: Vec<&String> = mods
        .iter()
        .filter(|m| !unique.contains(m.as_str()))
        .collect();
    let gone: Vec<&&str> = unique.iter().filter(|m| !mods.contains(**m)).collect();
    assert!(
        missing.is_empty(),
        "modules with no layer in LAYERS: {missing:?}"
    );
    assert!(
        gone.is_empty(),
        "LAYERS names modules src/ does not have: {gone:?}"
    );
}

#[test]
fn every_module_uses_only_layers_below_its_own() {
    let mut faults = Vec::new();
    for (m, used) in sites(Count::Layers) {
        let (mine, my_name) = layer(&m);
        for (t, at) in used {
            let (theirs, their_name) = layer(&t);
            if theirs >= mine {
                faults.push(format!("{m} ({my_name}) -> {t} ({their_name}) at {at}"));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "uses of a module of the same layer or above:\n{}",
        faults.join("\n")
    );
}

/// The rows of the table of docs/architecture.md that name one module: (layer, module, uses).
fn map_rows() -> Vec<(String, String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let text = fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix('|')?.split(" | ").map(str::trim).collect();
            let [layer, part, .., uses] = cells.as_slice() else {
                return None;
            };
            let module = part.strip_prefix('`')?.strip_suffix('`')?;
            (!module.contains('/')).then(|| {
                let uses = uses.trim_end_matches('|').trim();
                (layer.to_string(), module.to_string(), uses.to_string())
            })
        })
        .collect()
}

/// The "uses" cell of module `m` that the code calls for: the modules it imports, top layer
/// first, or "nothing".
fn uses_cell(m: &str, imports: &BTreeMap<String, BTreeMap<String, String>>) -> String {
    let mut used: Vec<&String> = imports[m].keys().collect();
    used.sort_by_key(|t| (std::cmp::Reverse(layer(t).0), t.to_string()));
    if used.is_empty() {
        return "nothing".into();
    }
    let cells: Vec<String> = used.iter().map(|t| format!("`{t}`")).collect();
    cells.join(", ")
}

#[test]
fn the_map_is_the_layers_and_what_the_code_uses() {
    let imports = sites(Count::Imports);
    let rows = map_rows();
    let want: Vec<(String, String)> = LAYERS
        .iter()
        .rev()
        .flat_map(|(name, ms)| ms.iter().map(move |m| (name.to_string(), m.to_string())))
        .collect();
    let have: Vec<(String, String)> = rows
        .iter()
        .map(|(l, m, _)| (l.clone(), m.clone()))
        .collect();
    assert_eq!(
        have, want,
        "docs/architecture.md's table must list LAYERS top to bottom, a row per module"
    );
    let mut wrong = Vec::new();
    for (_, m, uses) in &rows {
        let cell = uses_cell(m, &imports);
        if *uses != cell {
            wrong.push(format!("`{m}`: the map says {uses}; the code uses {cell}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's \"uses\" column differs from the code:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_sees_the_modules_and_their_edges() {
    // A guard against a checker that sees nothing.
    let g = sites(Count::Imports);
    for m in [
        "comm",
        "local",
        "shm",
        "algorithms",
        "select",
        "transport",
        "team",
    ] {
        assert!(g.contains_key(m), "module {m} not found");
    }
    assert!(g["comm"].contains_key("local"));
    assert!(g["local"].contains_key("algorithms"));
    assert!(g["transport"].contains_key("shm"));
    assert!(g["team"].contains_key("comm"));
    // A test of a low layer that ran on a team would be seen.
    let layers = sites(Count::Layers);
    assert!(layers["algorithms"].contains_key("transport"));
}

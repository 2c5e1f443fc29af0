//! The library's layers (docs/architecture.md): no top-level module of `src/` uses one that
//! uses it back, directly or around a longer cycle, and the low layers never name the high
//! ones. A module uses another when its code (tests aside) names it by a `crate::` path, or
//! names a type that the crate root re-exports from it (`crate::Comm` is `comm`'s).
//!
//! This reads the source as text: `use crate::x::…`, `crate::x::f(…)` and `crate::{x, y}` paths,
//! in code and in comments alike (a comment that sends the reader to a module above is an
//! upward dependency for the reader), skipping `#[cfg(test)]` and `#[cfg(all(test, …))]`
//! modules; and the public types the crate root re-exports (`crate::Comm`) where code names
//! them. A doc link to a public type (``[`Team`](crate::Team)``) is how a reader finds the API
//! and is no import, so comments may name those.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The low layers, which must not name the high ones.
const LOW: [&str; 9] = [
    "sync",
    "mailbox",
    "shm",
    "transport",
    "algorithms",
    "copy",
    "op",
    "error",
    "collective",
];
/// The high layers: the API and the compositions.
const HIGH: [&str; 5] = ["comm", "local", "hierarchy", "hybrid", "team"];

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

/// The edges: for each module, the modules its code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    sites()
        .into_iter()
        .map(|(m, used)| (m, used.into_keys().collect()))
        .collect()
}

/// For each module, the modules its code names, each with the first place that names it
/// (`file:line`), for the messages.
fn sites() -> BTreeMap<String, BTreeMap<String, String>> {
    let mods = modules();
    let exports = root_exports();
    let tests = test_files();
    let mut edges = BTreeMap::new();
    for m in &mods {
        let mut used = BTreeMap::new();
        for f in files(m) {
            if tests.contains(&f) {
                continue;
            }
            let text = code(&fs::read_to_string(&f).unwrap());
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
                        used.entry(t)
                            .or_insert(format!("src/{rel}:{line} (tests aside)"));
                    }
                }
            }
        }
        edges.insert(m.clone(), used);
    }
    edges
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let g = graph();
    // A module is in a cycle if it can reach itself.
    let mut cycles = Vec::new();
    for start in g.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((m, path)) = stack.pop() {
            for n in &g[&m] {
                if n == start {
                    cycles.push(format!("{} -> {start}", path.join(" -> ")));
                } else if seen.insert(n.clone()) {
                    let mut p = path.clone();
                    p.push(n.clone());
                    stack.push((n.clone(), p));
                }
            }
        }
    }
    let s = sites();
    let explain: Vec<String> = cycles
        .iter()
        .map(|c| {
            let hops: Vec<&str> = c.split(" -> ").collect();
            let at: Vec<String> = hops
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], s[w[0]][w[1]]))
                .collect();
            format!("{c}\n{}", at.join("\n"))
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles among src/'s modules:\n{}",
        explain.join("\n")
    );
}

#[test]
fn low_layers_never_name_high_ones() {
    let mut faults = Vec::new();
    for low in LOW {
        for high in HIGH {
            if let Some(at) = sites().get(low).and_then(|used| used.get(high)) {
                faults.push(format!("{low} -> {high} at {at}"));
            }
        }
    }
    assert!(faults.is_empty(), "low layers naming high ones: {faults:?}");
}

#[test]
fn the_checker_sees_the_modules_and_their_edges() {
    // A guard against a checker that sees nothing: the map of docs/architecture.md.
    let g = graph();
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
    assert!(g["comm"].contains("local"));
    assert!(g["local"].contains("algorithms"));
    assert!(g["transport"].contains("shm"));
    assert!(g["team"].contains("comm"));
}

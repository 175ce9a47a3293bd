//! The layering of the library's modules, checked on its sources.
//!
//! ```text
//!   entry points    */api.rs, */api/*, runtime/init.rs, fortran/*
//!        │
//!   runtime/        the Runtime aggregate, the global state, the entry-point macro
//!        │
//!   objects         comm/, p2p/, coll/, datatype/, op/, group/, topo/, attr/, ...: their
//!        │          tables and Rust APIs, on contexts that borrow the tables they need
//!   bottom          abi, handle, cptr, error
//! ```
//!
//! Three rules: no file depends on a file that depends on it back (the file graph has no
//! cycle); only the entry-point and runtime files name the running state (`Runtime`,
//! `crate::runtime`, the `mpi_fn!` macro), except the threads' waiting token
//! (`crate::runtime::thread`: a step of a blocking call that must let the lock go while it
//! waits takes the call's `Calling`, which reaches the state only look by look); and no file uses the entry points of a subsystem
//! other than its own (the library calls Rust APIs, never an exported function). A file depends on the files its paths name: every
//! path that starts with `crate::`, `$crate::`, `super::` or `self::`, in `use` trees (groups
//! expanded) and in code, resolved to the longest prefix that is a module file. Comments,
//! string contents and `#[cfg(test)]` modules do not count. Paths relative to a file's own
//! submodules (`use user::OpTable` in `op/mod.rs`) are not followed: a folder's `mod.rs`
//! declares and re-exports its parts, which may use their parent's helpers, and the rules are
//! about the layers, not about the files of one subsystem.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each file (relative to `src/`) and the files it depends on.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every `.rs` file under `dir` with its text, by path relative to `root`.
fn sources(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(
                rel,
                std::fs::read_to_string(&path).expect("a readable source"),
            );
        }
    }
}

/// The module path of a file: `comm/mod.rs` and `comm.rs` are `comm`, `lib.rs` the root.
fn module_of(file: &str) -> Vec<String> {
    let mut segs: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if segs.last().is_some_and(|s| s == "mod" || s == "lib") {
        segs.pop();
    }
    segs
}

/// The code of a source: comments and string contents blanked, test modules removed.
fn code_of(src: &str) -> String {
    let (b, mut out, mut i) = (src.as_bytes(), String::new(), 0);
    while i < b.len() {
        match (b[i], b.get(i + 1).copied()) {
            (b'/', Some(b'/')) => i = src[i..].find('\n').map_or(b.len(), |n| i + n),
            (b'/', Some(b'*')) => i = src[i..].find("*/").map_or(b.len(), |n| i + n + 2),
            (b'"', _) => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
                i += 1;
            }
            (b'\'', Some(b'\\')) => i += src[i + 3..].find('\'').map_or(b.len(), |n| n + 4),
            (b'\'', _) if b.get(i + 2) == Some(&b'\'') => i += 3,
            (c, _) => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    while let Some(at) = out.find("#[cfg(test)]") {
        let end = match (out[at..].find('{'), out[at..].find(';')) {
            (Some(open), semi) if semi.is_none_or(|s| s > open) => block_end(&out, at + open),
            (_, Some(semi)) => at + semi + 1,
            _ => out.len(),
        };
        out.replace_range(at..end, "");
    }
    out
}

/// The index just past the `}` that closes the `{` at `open`.
fn block_end(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in code[open..].char_indices() {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth == 0 {
            return open + i + 1;
        }
    }
    code.len()
}

/// `a::{b, c::{d, self}}` as `[a::b, a::c::d, a::c]`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_end_matches("::self").into()];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let parts = parts.into_iter().filter(|p| !p.is_empty());
    parts
        .flat_map(|p| expand(&format!("{prefix}{p}")))
        .map(|p| p.trim_end_matches("::self").into())
        .collect()
}

/// Every path of `code` that names a module of this crate, as written.
fn paths(code: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for stmt in code.split(';') {
        if let Some(at) = stmt
            .find("use ")
            .filter(|&at| at == 0 || !is_ident(stmt.as_bytes()[at - 1]))
        {
            found.extend(expand(&stmt[at + 4..]));
        }
    }
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let at = if code[..at].ends_with('$') {
                at - 1
            } else {
                at
            };
            if at > 0 && (is_ident(code.as_bytes()[at - 1]) || code[..at].ends_with("::")) {
                continue;
            }
            let len = code[at + 1..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len() - at, |n| n + 1);
            found.push(code[at..at + len].trim_end_matches(':').into());
        }
    }
    found
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The file `path` (written in `file`) names: its longest prefix that is a module file.
fn resolve(file: &str, path: &str, files: &BTreeMap<Vec<String>, String>) -> Option<String> {
    let mut segs = path.trim_start_matches('$').split("::");
    let mut module = match segs.next()? {
        "crate" => Vec::new(),
        "super" => module_of(file)[..module_of(file).len().checked_sub(1)?].to_vec(),
        "self" => module_of(file),
        _ => return None,
    };
    for s in segs {
        match s {
            "super" => drop(module.pop()),
            _ => module.push(s.to_string()),
        }
    }
    (0..=module.len())
        .rev()
        .find_map(|n| files.get(&module[..n]).cloned())
}

fn graph() -> (Graph, BTreeMap<String, String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = BTreeMap::new();
    sources(&root, &root, &mut texts);
    let code: BTreeMap<String, String> =
        texts.iter().map(|(f, t)| (f.clone(), code_of(t))).collect();
    let files = code.keys().map(|f| (module_of(f), f.clone())).collect();
    let graph = code
        .iter()
        .map(|(f, c)| {
            let deps = paths(c).into_iter().filter_map(|p| resolve(f, &p, &files));
            let deps = deps.filter(|d| d != f);
            (f.clone(), deps.collect())
        })
        .collect();
    (graph, code)
}

/// A cycle of the graph, as its files in order, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        f: &str,
        g: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == f) {
            return Some(path[at..].to_vec());
        }
        if !done.insert(f.to_string()) {
            return None;
        }
        path.push(f.to_string());
        let found = g[f].iter().find_map(|d| visit(d, g, path, done));
        path.pop();
        found
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|f| visit(f, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_module_graph_has_no_cycle() {
    let (graph, _) = graph();
    assert!(
        graph.len() > 50,
        "the sources were found ({} files)",
        graph.len()
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the files depend on each other in a circle: {} -> {}",
            cycle.join(" -> "),
            cycle[0]
        );
    }
}

#[test]
fn only_entry_points_and_the_runtime_name_the_running_state() {
    let entry = |f: &str| {
        ["runtime/", "fortran/"].iter().any(|d| f.starts_with(d))
            || f.ends_with("/api.rs")
            || f.contains("/api/")
            || f == "lib.rs"
    };
    let word = |code: &str, w: &str| {
        code.match_indices(w).any(|(at, _)| {
            let before = code[..at].bytes().last().is_none_or(|c| !is_ident(c));
            before
                && code[at + w.len()..]
                    .bytes()
                    .next()
                    .is_none_or(|c| !is_ident(c))
        })
    };
    let (_, code) = graph();
    let offenders: Vec<&String> = code
        .iter()
        .filter(|(f, c)| {
            // The waiting token of `runtime::thread` is the one part of the runtime the
            // subsystems' waiting steps may name.
            let c = c.replace("crate::runtime::thread::", "");
            !entry(f)
                && (word(&c, "Runtime") || c.contains("crate::runtime") || c.contains("mpi_fn!"))
        })
        .map(|(f, _)| f)
        .collect();
    assert!(offenders.is_empty(), "these files name Runtime, crate::runtime or mpi_fn! but are not entry points: {offenders:?}");
}

/// The `api` a file belongs to (`coll/api` for `coll/api/bcast.rs`, `op/api` for
/// `op/api.rs`), if it is one of the entry-point files.
fn api_of(file: &str) -> Option<&str> {
    file.find("/api/")
        .map(|at| &file[..at + 4])
        .or_else(|| file.strip_suffix(".rs").filter(|f| f.ends_with("/api")))
}

#[test]
fn no_entry_point_calls_another_subsystems_entry_points() {
    let (graph, _) = graph();
    let crossings: Vec<String> = graph
        .iter()
        .flat_map(|(f, deps)| deps.iter().map(move |d| (f, d)))
        .filter(|(f, d)| api_of(d).is_some() && api_of(f) != api_of(d))
        .map(|(f, d)| format!("{f} -> {d}"))
        .collect();
    assert!(
        crossings.is_empty(),
        "these files use another subsystem's entry points (call its Rust API instead): {crossings:?}"
    );
}

#[test]
fn the_checker_sees_paths_and_cycles() {
    assert_eq!(
        expand("crate::a::{b, c::{d, self}}"),
        ["crate::a::b", "crate::a::c::d", "crate::a::c"]
    );
    let found: BTreeSet<String> = paths("use super::x::{self, Y}; fn f() { $crate::z::g(); }")
        .into_iter()
        .collect();
    assert_eq!(
        found,
        ["super::x", "super::x::Y", "$crate::z::g"]
            .map(String::from)
            .into()
    );
    assert!(
        code_of("a // crate::x\n\"crate::y\" #[cfg(test)] mod t { crate::z }")
            .find("crate")
            .is_none()
    );
    assert_eq!(api_of("coll/api/bcast.rs"), Some("coll/api"));
    assert_eq!(api_of("op/api.rs"), Some("op/api"));
    assert_eq!(api_of("op/user.rs"), None);
    let g: Graph = [("a", "b"), ("b", "a")]
        .iter()
        .map(|(f, d)| (f.to_string(), [d.to_string()].into()))
        .collect();
    assert_eq!(find_cycle(&g), Some(vec!["a".to_string(), "b".to_string()]));
}

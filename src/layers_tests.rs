//! The layers of the crate, checked: which top-level module may use which.
//! One crate keeps the build simple, so the compiler does not keep the
//! layers; this test does. It reads every module file reachable from
//! `src/lib.rs` and `src/main.rs`, collects the top-level modules each one
//! names (`crate::x`, `crate::{x, …}`, a `super::` that climbs to the
//! crate's root), and asserts that the graph has no cycle and that every
//! arrow points down the declared order below.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and the ones directly beneath it; a module may use
/// anything beneath it, directly or not. `main` is the binary (`main.rs`).
const LAYERS: &[(&str, &[&str])] = &[
    ("main", &["cli"]),
    // The command line: each subcommand's arguments and the code that runs it.
    ("cli", &["tui", "server"]),
    // The terminal client's UI.
    ("tui", &["client"]),
    // Talking to a backend: HTTP, the room's socket, what is printed.
    (
        "client",
        &["config", "text", "emulator", "blocks", "support"],
    ),
    // The backend: rooms, their store, the HTTP and socket API.
    ("server", &["sandbox", "ai", "config", "emulator"]),
    // The agent: the model's API and the turn's prompt.
    ("ai", &["blocks", "support", "protocol"]),
    // The sandboxes commands run in.
    ("sandbox", &["support", "protocol"]),
    // The settings file and the default directories.
    ("config", &["protocol"]),
    // Plain text: widths, sizes, command output made fit for a pane.
    ("text", &["protocol"]),
    // A terminal emulator's screen (the shared terminal's).
    ("emulator", &["protocol"]),
    // The blocks of a message (prose, code, the agent's commands).
    ("blocks", &["protocol"]),
    ("support", &["utf8"]),
    ("utf8", &[]),
    // The wire: frames, requests, answers, roles, links.
    ("protocol", &[]),
];

/// Modules declared in `lib.rs` that are not layers (this test).
const NOT_LAYERS: &[&str] = &["layers_tests"];

#[test]
fn the_top_level_modules_have_no_cycle_and_point_down() {
    let graph = module_graph();
    let shown = show(&graph);
    println!("{shown}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the top-level modules import each other in a loop: {}\n{shown}",
            cycle.join(" -> ")
        );
    }
    let below = beneath();
    let mut wrong = Vec::new();
    for (from, uses) in &graph {
        let Some(allowed) = below.get(from.as_str()) else {
            wrong.push(format!(
                "{from} is not in LAYERS (src/layers_tests.rs): place it"
            ));
            continue;
        };
        for (to, files) in uses {
            if !allowed.contains(to.as_str()) {
                wrong.push(format!(
                    "{from} -> {to} points up or across ({})",
                    list(files)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}\n{shown}", wrong.join("\n"));
}

#[test]
fn the_declared_layers_have_no_cycle() {
    let declared: Graph = LAYERS
        .iter()
        .map(|(m, under)| {
            let uses = under
                .iter()
                .map(|u| (u.to_string(), BTreeSet::new()))
                .collect();
            (m.to_string(), uses)
        })
        .collect();
    assert_eq!(find_cycle(&declared), None);
}

#[test]
fn an_import_upwards_is_found() {
    let text = "use crate::{protocol::X, cli::{A, B}};\nfn f() { crate::tui::g(); }\n\
                mod tests { use super::super::server; fn t() { let _ = super::y; } }\n\
                // crate::ai in a comment\nconst S: &str = \"crate::sandbox\";";
    let found = names_used(text, 1);
    let names: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(names, ["cli", "protocol", "server", "tui"]);
}

/// Module -> the modules it uses -> the files that use them.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The graph of the top-level modules, from the source files.
fn module_graph() -> Graph {
    let src = src();
    let lib = read(&src.join("lib.rs"));
    // A module may be declared twice (`server` with and without its
    // feature): both files count.
    let tops: Vec<(String, PathBuf)> = children(&lib, &src, &src)
        .into_iter()
        .filter(|(name, _)| !NOT_LAYERS.contains(&name.as_str()))
        .collect();
    let names: BTreeSet<String> = tops.iter().map(|(name, _)| name.clone()).collect();
    let mut graph = Graph::new();
    // main.rs names the library as `duet::`.
    let main = strip(&read(&src.join("main.rs")));
    for used in idents_after(&main, "duet::") {
        if names.contains(&used) {
            let uses = graph.entry("main".to_string()).or_default();
            uses.entry(used).or_default().insert("main.rs".to_string());
        }
    }
    let mut add = |top: &str, file: &Path, depth: usize| {
        let text = read(file);
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        let entry = graph.entry(top.to_string()).or_default();
        for used in names_used(&text, depth) {
            if used != top && names.contains(&used) {
                entry.entry(used).or_default().insert(shown.clone());
            }
        }
    };
    for (top, file) in &tops {
        let mut todo = vec![(file.clone(), 1usize)];
        while let Some((file, depth)) = todo.pop() {
            add(top, &file, depth);
            let text = read(&file);
            let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
            let own = own_dir(&file);
            for (_, child) in children(&text, &own, &dir) {
                todo.push((child, depth + 1));
            }
        }
    }
    graph
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Where a file's child modules live: its own folder for `mod.rs` and
/// `lib.rs`, else the folder named as the file.
fn own_dir(file: &Path) -> PathBuf {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") | None => dir,
        Some(stem) => dir.join(stem),
    }
}

/// The `mod name;` declarations of a file and their files; a
/// `#[path = "…"]` is relative to `dir`, the declaring file's folder.
fn children(text: &str, own: &Path, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut path_for_next: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(path) = line
            .strip_prefix("#[path = \"")
            .and_then(|rest| rest.strip_suffix("\"]"))
        {
            path_for_next = Some(path.to_string());
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") {
            continue;
        }
        let decl = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        if let Some(rest) = decl.strip_prefix("mod ")
            && let Some(name) = rest.strip_suffix(';')
        {
            let name = name.trim().to_string();
            let file = match path_for_next.take() {
                Some(path) => dir.join(path),
                None if own.join(format!("{name}.rs")).exists() => own.join(format!("{name}.rs")),
                None => own.join(&name).join("mod.rs"),
            };
            out.push((name, file));
        }
        path_for_next = None;
    }
    out
}

/// The top-level modules a file names; `depth`: how deep its module is
/// (a top-level module's file: 1).
fn names_used(text: &str, depth: usize) -> BTreeSet<String> {
    let text = strip(text);
    let mut used: BTreeSet<String> = idents_after(&text, "crate::").into_iter().collect();
    let inline = inline_depths(&text);
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = text.get(at..).and_then(|t| t.find("super::")) {
        let start = at + found;
        let word_start = start == 0 || !is_ident(bytes[start - 1]);
        let mut end = start;
        let mut climbs = 0;
        while text.get(end..).is_some_and(|t| t.starts_with("super::")) {
            climbs += 1;
            end += "super::".len();
        }
        at = end;
        let here = depth + inline.get(start).copied().unwrap_or(0);
        if word_start && climbs >= here {
            used.extend(idents_at(&text, end));
        }
    }
    used
}

/// The first path segment(s) after each `prefix`: `crate::x` gives `x`,
/// `crate::{x::y, z}` gives `x` and `z`.
fn idents_after(text: &str, prefix: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = text.get(at..).and_then(|t| t.find(prefix)) {
        let start = at + found;
        at = start + prefix.len();
        if start > 0 && (is_ident(bytes[start - 1]) || bytes[start - 1] == b'$') {
            // `$crate::` names this crate too; another word ending in the
            // prefix does not.
            if bytes[start - 1] != b'$' {
                continue;
            }
        }
        out.extend(idents_at(text, at));
    }
    out
}

/// The names at `at`: one identifier, or each first segment of a `{…}`.
fn idents_at(text: &str, at: usize) -> Vec<String> {
    let rest = text.get(at..).unwrap_or("");
    if let Some(group) = rest.strip_prefix('{') {
        let mut out = Vec::new();
        let mut depth = 0usize;
        let mut item_start = true;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if c.is_whitespace() => {}
                _ if item_start && depth == 0 => {
                    item_start = false;
                    let word = ident(&group[i..]);
                    if !word.is_empty() && word != "self" {
                        out.push(word);
                    }
                }
                _ => {}
            }
        }
        out
    } else {
        let word = ident(rest);
        if word.is_empty() { vec![] } else { vec![word] }
    }
}

fn ident(text: &str) -> String {
    text.bytes()
        .take_while(|b| is_ident(*b))
        .map(char::from)
        .collect()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// For each byte of `text`, how many inline `mod name { … }` blocks hold it.
fn inline_depths(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut depths = vec![0; bytes.len()];
    // The brace depth at which each open inline module began.
    let mut open: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let word_start = i == 0 || !is_ident(bytes[i - 1]);
        if word_start && text.get(i..).is_some_and(|t| t.starts_with("mod ")) {
            let after = &text[i + 4..];
            let name = ident(after.trim_start());
            let tail = after.trim_start().get(name.len()..).unwrap_or("");
            if !name.is_empty() && tail.trim_start().starts_with('{') {
                open.push(braces + 1);
            }
        }
        match bytes[i] {
            b'{' => braces += 1,
            b'}' => {
                if open.last() == Some(&braces) {
                    open.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        depths[i] = open.len();
        i += 1;
    }
    depths
}

/// The text with comments, strings and characters blanked (same length in
/// bytes, newlines kept), so that neither names in them nor braces count.
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| {
        if c == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    blank(&mut out, '/');
                    blank(&mut out, '*');
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    blank(&mut out, '*');
                    blank(&mut out, '/');
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && !prev_ident(&chars, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(_) => j += 1,
                }
            }
            for &c in &chars[i..j.min(chars.len())] {
                blank(&mut out, c);
            }
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            for &c in &chars[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if c == '\'' {
            // A character ('x', '\n', '\u{1F600}'), else a lifetime.
            let end = if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                Some(j + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    let end = end.min(chars.len());
                    for &c in &chars[i..end] {
                        blank(&mut out, c);
                    }
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the character before `i` continues an identifier (`br"…"` is a
/// byte string; `for"` is not a raw string).
fn prev_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') && chars[i - 1] != 'b'
}

/// A cycle of the graph, if it has one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|uses| uses.keys()) {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// Each declared module and every module beneath it.
fn beneath() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let direct: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    direct
        .keys()
        .map(|&module| {
            let mut all = BTreeSet::new();
            let mut todo: Vec<&str> = direct.get(module).copied().unwrap_or(&[]).to_vec();
            while let Some(next) = todo.pop() {
                if all.insert(next) {
                    todo.extend(direct.get(next).copied().unwrap_or(&[]));
                }
            }
            (module, all)
        })
        .collect()
}

fn list(files: &BTreeSet<String>) -> String {
    files.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// The graph as lines: `client -> config, protocol, …`.
fn show(graph: &Graph) -> String {
    let mut out = String::from("top-level modules and what they use:\n");
    for (from, uses) in graph {
        let to: Vec<&str> = uses.keys().map(String::as_str).collect();
        out.push_str(&format!("  {from} -> {}\n", to.join(", ")));
    }
    out
}

//! Git's diff format (docs/protocol.md "Archives", "The diff"): one
//! file's change in the words `git diff --binary --full-index` uses, so
//! that `git apply` takes it. Pure: the two sides in, the text out; the
//! backend decides which files changed and reads them.

use sha1::{Digest, Sha1};
use std::fmt::Write as _;

/// What a path holds on one side: a regular file (executable or not) or
/// a symlink, and its bytes (a symlink's are its target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side<'a> {
    pub kind: Kind,
    pub bytes: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File { executable: bool },
    Symlink,
}

impl Kind {
    /// A regular file of permission bits `mode`.
    pub fn file(mode: u32) -> Kind {
        Kind::File {
            executable: mode & 0o111 != 0,
        }
    }

    /// Git's mode of it (`100644`, `100755`, `120000`).
    fn git_mode(self) -> &'static str {
        match self {
            Kind::File { executable: false } => "100644",
            Kind::File { executable: true } => "100755",
            Kind::Symlink => "120000",
        }
    }

    fn is_link(self) -> bool {
        self == Kind::Symlink
    }
}

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// How long one file's line diff may search for the smallest diff before
/// it settles for a larger (still correct) one.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// An absent side's blob id.
const NO_BLOB: &str = "0000000000000000000000000000000000000000";

/// Appends to `out` the diff of `path` from `old` to `new` (`None`: the
/// side has no file there); nothing when they are the same. A file that
/// became a symlink (or the reverse) is a deletion and a new file, as in
/// git.
pub fn file_diff(path: &str, old: Option<Side<'_>>, new: Option<Side<'_>>, out: &mut String) {
    match (old, new) {
        (Some(o), Some(n)) if o.kind.is_link() != n.kind.is_link() => {
            one(path, Some(o), None, out);
            one(path, None, Some(n), out);
        }
        _ => one(path, old, new, out),
    }
}

fn one(path: &str, old: Option<Side<'_>>, new: Option<Side<'_>>, out: &mut String) {
    let same_bytes = match (old, new) {
        (Some(o), Some(n)) => o.bytes == n.bytes,
        (None, None) => return,
        _ => false,
    };
    let same_mode = matches!((old, new), (Some(o), Some(n)) if o.kind == n.kind);
    if same_bytes && same_mode {
        return;
    }
    let (a, b) = (quoted("a/", path), quoted("b/", path));
    let _ = writeln!(out, "diff --git {a} {b}");
    match (old, new) {
        (None, Some(n)) => {
            let _ = writeln!(out, "new file mode {}", n.kind.git_mode());
        }
        (Some(o), None) => {
            let _ = writeln!(out, "deleted file mode {}", o.kind.git_mode());
        }
        (Some(o), Some(n)) if o.kind != n.kind => {
            let _ = writeln!(out, "old mode {}", o.kind.git_mode());
            let _ = writeln!(out, "new mode {}", n.kind.git_mode());
        }
        _ => {}
    }
    if same_bytes {
        return;
    }
    let old_bytes = old.map_or(&[][..], |s| s.bytes);
    let new_bytes = new.map_or(&[][..], |s| s.bytes);
    let mode = match (old, new) {
        (Some(o), Some(n)) if o.kind == n.kind => format!(" {}", n.kind.git_mode()),
        _ => String::new(),
    };
    let old_id = old.map_or_else(|| NO_BLOB.to_string(), |s| blob_id(s.bytes));
    let new_id = new.map_or_else(|| NO_BLOB.to_string(), |s| blob_id(s.bytes));
    let _ = writeln!(out, "index {old_id}..{new_id}{mode}");
    match (
        std::str::from_utf8(old_bytes),
        std::str::from_utf8(new_bytes),
    ) {
        (Ok(o), Ok(n)) if !o.contains('\0') && !n.contains('\0') => {
            if o.is_empty() && n.is_empty() {
                return;
            }
            let from = if old.is_some() { a } else { "/dev/null".into() };
            let to = if new.is_some() { b } else { "/dev/null".into() };
            let _ = writeln!(out, "--- {from}{}", tab_if_spaced(&from));
            let _ = writeln!(out, "+++ {to}{}", tab_if_spaced(&to));
            hunks(o, n, out);
        }
        _ => binary_patch(old_bytes, new_bytes, out),
    }
}

/// Git ends a `---`/`+++` name holding a space with a tab, so that what
/// follows it is not taken as part of it.
fn tab_if_spaced(name: &str) -> &'static str {
    if name.contains(' ') { "\t" } else { "" }
}

/// `prefix` + `path`, in double quotes with C escapes when the path holds
/// a quote, a backslash or a control character (as git writes it).
fn quoted(prefix: &str, path: &str) -> String {
    let plain = !path
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control());
    if plain {
        return format!("{prefix}{path}");
    }
    let mut s = String::from("\"");
    s.push_str(prefix);
    for c in path.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(s, "\\{byte:03o}");
                }
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Git's id of a blob holding `bytes`.
pub fn blob_id(bytes: &[u8]) -> String {
    let mut hash = Sha1::new();
    hash.update(format!("blob {}\0", bytes.len()).as_bytes());
    hash.update(bytes);
    hash.finalize()
        .iter()
        .fold(String::with_capacity(40), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The hunks of a text change, with `CONTEXT` lines around each.
fn hunks(old: &str, new: &str, out: &mut String) {
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range(old_range.start, old_range.len()),
            range(new_range.start, new_range.len())
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                let line = change.value();
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
}

/// A hunk's side as git writes it: `start,len` (1-based), `start` alone
/// for one line, and the line before for none.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// `GIT binary patch` with the new bytes whole, then the old ones (the
/// way back), each deflated and in git's base85.
fn binary_patch(old: &[u8], new: &[u8], out: &mut String) {
    out.push_str("GIT binary patch\n");
    for bytes in [new, old] {
        let _ = writeln!(out, "literal {}", bytes.len());
        for line in deflated(bytes).chunks(52) {
            out.push(line_length(line.len()));
            base85(line, out);
            out.push('\n');
        }
        out.push('\n');
    }
}

fn deflated(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// A line's length character: `A`–`Z` for 1–26 bytes, `a`–`z` for 27–52.
fn line_length(n: usize) -> char {
    let n = n as u8;
    if n <= 26 {
        (b'A' + n - 1) as char
    } else {
        (b'a' + n - 27) as char
    }
}

const BASE85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Git's base85: each 4 bytes (the last zero-padded) as 5 characters.
fn base85(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(4) {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        let mut acc = u32::from_be_bytes(word);
        let mut chars = [0u8; 5];
        for c in chars.iter_mut().rev() {
            *c = BASE85[(acc % 85) as usize];
            acc /= 85;
        }
        out.extend(chars.iter().map(|&c| c as char));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8]) -> Option<Side<'_>> {
        Some(Side {
            kind: Kind::file(0o644),
            bytes,
        })
    }

    fn diff(path: &str, old: Option<Side<'_>>, new: Option<Side<'_>>) -> String {
        let mut out = String::new();
        file_diff(path, old, new, &mut out);
        out
    }

    #[test]
    fn an_edit_is_a_hunk_with_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n";
        let got = diff("src/a.txt", text(old.as_bytes()), text(new.as_bytes()));
        let want = format!(
            "diff --git a/src/a.txt b/src/a.txt\nindex {}..{} 100644\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
            blob_id(old.as_bytes()),
            blob_id(new.as_bytes())
        );
        assert_eq!(got, want);
    }

    #[test]
    fn new_deleted_and_unterminated_files() {
        let got = diff("n", None, text(b"a"));
        assert!(got.contains("new file mode 100644\n"), "{got}");
        assert!(
            got.ends_with(
                "--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+a\n\\ No newline at end of file\n"
            ),
            "{got}"
        );
        let got = diff("d", text(b"x\ny\n"), None);
        assert!(got.contains("deleted file mode 100644\n"), "{got}");
        assert!(
            got.ends_with("--- a/d\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n"),
            "{got}"
        );
    }

    #[test]
    fn a_mode_change_alone_has_no_index() {
        let exe = Some(Side {
            kind: Kind::file(0o755),
            bytes: b"#!/bin/sh\n",
        });
        let got = diff("run.sh", text(b"#!/bin/sh\n"), exe);
        assert_eq!(
            got,
            "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        );
        assert_eq!(diff("same", text(b"x"), text(b"x")), "");
    }

    #[test]
    fn binary_content_is_a_literal_patch_in_base85() {
        let got = diff("b.bin", None, text(b"\0\x01"));
        assert!(got.contains(&format!("index {NO_BLOB}..{}\n", blob_id(b"\0\x01"))));
        // The empty side: 8 bytes of zlib (`H`), 10 characters of base85.
        let empty = got.split("literal 0\n").nth(1).unwrap_or_default();
        assert!(
            empty.len() == 13 && empty.starts_with('H') && empty.ends_with("\n\n"),
            "{got}"
        );
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn awkward_names_are_quoted_and_spaced_ones_tabbed() {
        assert_eq!(quoted("a/", "x\ty"), "\"a/x\\ty\"");
        assert_eq!(quoted("a/", "é"), "a/é");
        let got = diff("a b", None, text(b"x\n"));
        assert!(got.contains("+++ b/a b\t\n"), "{got}");
    }
}

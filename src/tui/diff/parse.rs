//! A unified diff in git's format (docs/protocol.md "The diff") read line
//! by line: what each line is (a file's header, a hunk's, an added line…),
//! which file it belongs to, and what each file changed. Hunk lines are
//! counted by their `@@` header, so a removed line that reads `--- x` or
//! an added one that reads `+++ y` is never taken for a header, and a
//! binary file's patch data is never counted as lines.

use crate::client::archive::diff::header_path;

/// What a line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `diff --git a/P b/P`: a file starts.
    File,
    /// `index`, modes, `---`/`+++`, `new file mode`, `GIT binary patch`…
    Meta,
    /// `@@ -1,3 +1,4 @@`
    Hunk,
    Added,
    Removed,
    Context,
    /// `\ No newline at end of file`
    NoNewline,
    /// A binary file's patch data (`literal 12`, base85 lines).
    Binary,
}

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: Kind,
    /// The line as the diff has it (with its `+`, `-` or space).
    pub text: String,
    /// The file it belongs to (an index into `Parsed::files`), if any.
    pub file: Option<usize>,
}

/// What one file of a diff changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileDiff {
    /// Its path, relative to /workspace (from `diff --git a/P b/P`).
    pub path: String,
    /// Not text: changed, with no lines to count.
    pub binary: bool,
    pub added: usize,
    pub removed: usize,
}

/// A diff read whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub lines: Vec<DiffLine>,
    pub files: Vec<FileDiff>,
}

/// Files changed and lines added and removed, over a whole diff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

impl Stat {
    /// `3 files (+12 −4)`, `1 file (+1 −0)`.
    pub fn said(&self) -> String {
        let s = if self.files == 1 { "" } else { "s" };
        format!("{} file{s} (+{} −{})", self.files, self.added, self.removed)
    }
}

impl Parsed {
    /// The files, added and removed lines of the whole diff.
    pub fn stat(&self) -> Stat {
        Stat {
            files: self.files.len(),
            added: self.files.iter().map(|f| f.added).sum(),
            removed: self.files.iter().map(|f| f.removed).sum(),
        }
    }
}

/// Where the reader is.
enum State {
    /// Between hunks: headers.
    Header,
    /// In a hunk: how many old and new lines it still holds.
    Hunk { old: usize, new: usize },
    /// A binary file's patch data, up to the next file.
    BinaryData,
}

/// Reads `text` (what `GET /diff` answered). Never fails: a line it does
/// not understand is a `Meta` line.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut state = State::Header;
    for line in text.lines() {
        let current = out.files.len().checked_sub(1);
        if let State::Hunk { old, new } = &mut state {
            let kind = match line.as_bytes().first().copied() {
                Some(b'+') if *new > 0 => {
                    *new -= 1;
                    Some(Kind::Added)
                }
                Some(b'-') if *old > 0 => {
                    *old -= 1;
                    Some(Kind::Removed)
                }
                // An empty line is a context line whose space was lost.
                Some(b' ') | None if *old > 0 && *new > 0 => {
                    *old -= 1;
                    *new -= 1;
                    Some(Kind::Context)
                }
                Some(b'\\') => Some(Kind::NoNewline),
                _ => None,
            };
            if let Some(kind) = kind {
                if let Some(file) = current.and_then(|i| out.files.get_mut(i)) {
                    match kind {
                        Kind::Added => file.added += 1,
                        Kind::Removed => file.removed += 1,
                        _ => {}
                    }
                }
                if *old == 0 && *new == 0 {
                    state = State::Header;
                }
                out.lines.push(DiffLine {
                    kind,
                    text: line.to_string(),
                    file: current,
                });
                continue;
            }
            // A line the hunk's counts do not expect: read it as a header.
            state = State::Header;
        }
        let kind = if let Some(paths) = line.strip_prefix("diff --git ") {
            out.files.push(FileDiff {
                path: header_path(paths),
                ..FileDiff::default()
            });
            state = State::Header;
            Kind::File
        } else if matches!(state, State::BinaryData) {
            Kind::Binary
        } else if let Some((old, new)) = hunk_counts(line) {
            state = State::Hunk { old, new };
            if old == 0 && new == 0 {
                state = State::Header;
            }
            Kind::Hunk
        } else if line == "GIT binary patch"
            || (line.starts_with("Binary files ") && line.ends_with(" differ"))
        {
            if let Some(file) = current.and_then(|i| out.files.get_mut(i)) {
                file.binary = true;
            }
            if line == "GIT binary patch" {
                state = State::BinaryData;
            }
            Kind::Meta
        } else if line.starts_with('\\') {
            Kind::NoNewline
        } else {
            Kind::Meta
        };
        out.lines.push(DiffLine {
            kind,
            text: line.to_string(),
            file: out.files.len().checked_sub(1),
        });
    }
    out
}

/// The counts of old and new lines of a hunk header `@@ -a[,b] +c[,d] @@`
/// (an omitted count is 1), or `None` when `line` is not one.
fn hunk_counts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((start, count)) => {
                start.parse::<usize>().ok()?;
                count.parse().ok()
            }
            None => range.parse::<usize>().ok().map(|_| 1),
        }
    };
    Some((count(old)?, count(new)?))
}

/// What a file's path says its language is, for syntax colour: its
/// extension (`rs`, `py`), else its name (`Makefile`, `Dockerfile`).
pub fn language(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => ext,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
diff --git a/a.txt b/a.txt
new file mode 100644
index 0000000000000000000000000000000000000000..45b983be36b73c0788dc9cbcb76cbb80fc7bb057
--- /dev/null
+++ b/a.txt
@@ -0,0 +1 @@
+hi
diff --git a/src/main.rs b/src/main.rs
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/src/main.rs
+++ b/src/main.rs
@@ -1,4 +1,4 @@
 fn main() {
--- a decrement that looks like a header
+++ an increment that looks like one
     println!(\"hi\");

@@ -10,2 +10,3 @@ fn other() {
 a
+b
 c
\\ No newline at end of file
diff --git a/logo.png b/logo.png
new file mode 100644
index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333
GIT binary patch
literal 6
NcmZQzU|?ckU;qFB00II

literal 0
HcmV?d00001

diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
";

    #[test]
    fn files_and_lines_are_counted_by_the_hunks() {
        let parsed = parse(SAMPLE);
        let files: Vec<(&str, bool, usize, usize)> = parsed
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.binary, f.added, f.removed))
            .collect();
        assert_eq!(
            files,
            [
                ("a.txt", false, 1, 0),
                ("src/main.rs", false, 2, 1),
                ("logo.png", true, 0, 0),
                ("run.sh", false, 0, 0),
            ]
        );
        assert_eq!(
            parsed.stat(),
            Stat {
                files: 4,
                added: 3,
                removed: 1
            }
        );
        assert_eq!(parsed.stat().said(), "4 files (+3 −1)");
        let kind_of = |text: &str| {
            parsed
                .lines
                .iter()
                .find(|l| l.text == text)
                .map(|l| (l.kind, l.file))
        };
        assert_eq!(kind_of("+hi"), Some((Kind::Added, Some(0))));
        assert_eq!(kind_of("+++ b/a.txt"), Some((Kind::Meta, Some(0))));
        assert_eq!(
            kind_of("--- a decrement that looks like a header"),
            Some((Kind::Removed, Some(1)))
        );
        assert_eq!(
            kind_of("+++ an increment that looks like one"),
            Some((Kind::Added, Some(1)))
        );
        assert_eq!(kind_of(""), Some((Kind::Context, Some(1))));
        assert_eq!(
            kind_of("\\ No newline at end of file"),
            Some((Kind::NoNewline, Some(1)))
        );
        assert_eq!(
            kind_of("NcmZQzU|?ckU;qFB00II"),
            Some((Kind::Binary, Some(2)))
        );
        assert_eq!(kind_of("new mode 100755"), Some((Kind::Meta, Some(3))));
        assert_eq!(parsed.lines.len(), SAMPLE.lines().count());
    }

    #[test]
    fn one_file_one_line_and_nothing() {
        let one = "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n";
        assert_eq!(parse(one).stat().said(), "1 file (+1 −0)");
        assert_eq!(parse("").stat(), Stat::default());
        assert!(parse("").lines.is_empty());
    }

    #[test]
    fn nonsense_reads_as_meta_lines_without_panicking() {
        for text in [
            "@@ -x +y @@\n+a\n",
            "@@ -1,99999999999999999999999 +1 @@\n",
            "+orphan\n-orphan\n \n\\\n",
            "diff --git \ndiff --git a/ b/\n@@ -1 +1 @@\n",
            "GIT binary patch\nliteral 3\n",
            "diff --git a/é b/é\n@@ -1 +1,2 @@\n-x\n+y\n+z\n+beyond\n",
        ] {
            let parsed = parse(text);
            assert_eq!(parsed.lines.len(), text.lines().count(), "{text:?}");
        }
        let parsed = parse("diff --git a/é b/é\n@@ -1 +1,2 @@\n-x\n+y\n+z\n+beyond\n");
        assert_eq!(parsed.files[0].path, "é");
        assert_eq!((parsed.files[0].added, parsed.files[0].removed), (2, 1));
        assert_eq!(parsed.lines[5].kind, Kind::Meta, "past the hunk's count");
    }

    #[test]
    fn paths_and_languages() {
        assert_eq!(header_path("a/x y b/z b/x y b/z"), "x y b/z");
        assert_eq!(header_path("a/old b/new"), "new");
        assert_eq!(language("src/main.rs"), "rs");
        assert_eq!(language("Makefile"), "Makefile");
        assert_eq!(language("dir.d/.bashrc"), ".bashrc");
        assert_eq!(language("a/b.tar.gz"), "gz");
    }
}

//! `duet diff`'s text for a terminal: git's colours (file headers bold,
//! hunk headers cyan, removed lines red, added lines green); binary patch
//! data and context as they are. And which paths a diff changes.

const BOLD: &str = "\x1b[1m";
const CYAN: &str = "\x1b[36m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[m";

/// Where a line of a diff is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `diff --git` to the first hunk: the file's header lines.
    Header,
    Hunk,
    /// `GIT binary patch` data.
    Binary,
}

/// `diff` with git's colours.
pub fn coloured(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + diff.len() / 8);
    let mut part = Part::Header;
    for line in diff.split_inclusive('\n') {
        let text = line.strip_suffix('\n').unwrap_or(line);
        let colour = if text.starts_with("diff --git ") {
            part = Part::Header;
            Some(BOLD)
        } else if text.starts_with("@@") && part != Part::Binary {
            part = Part::Hunk;
            Some(CYAN)
        } else {
            match part {
                Part::Header if text == "GIT binary patch" => {
                    part = Part::Binary;
                    Some(BOLD)
                }
                Part::Header => Some(BOLD),
                Part::Hunk if text.starts_with('+') => Some(GREEN),
                Part::Hunk if text.starts_with('-') => Some(RED),
                Part::Hunk | Part::Binary => None,
            }
        };
        match colour {
            Some(colour) if !text.is_empty() => {
                out.push_str(colour);
                out.push_str(text);
                out.push_str(RESET);
                out.push_str(line.get(text.len()..).unwrap_or_default());
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// `P` of `a/P b/P` (both sides name the same path here: the diff has no
/// renames); else what follows the last ` b/`, else the whole.
pub fn header_path(paths: &str) -> String {
    let half = paths.len().saturating_sub(1) / 2;
    if let (Some(a), Some(b)) = (paths.get(..half), paths.get(half..))
        && let (Some(a), Some(b)) = (a.strip_prefix("a/"), b.strip_prefix(" b/"))
        && a == b
    {
        return a.to_string();
    }
    match paths.rsplit_once(" b/") {
        Some((_, b)) => b.to_string(),
        None => paths.to_string(),
    }
}

/// The paths a diff changes (relative to /workspace), in its order: the
/// `diff --git` lines (no line of a hunk or of binary data starts so).
pub fn changed_paths(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|line| line.strip_prefix("diff --git "))
        .map(header_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_hunks_and_lines_get_git_colours() {
        let diff =
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n--- not a header\n";
        let shown = coloured(diff);
        assert!(shown.starts_with("\x1b[1mdiff --git a/x b/x\x1b[m\n\x1b[1m--- a/x\x1b[m\n"));
        assert!(shown.contains("\x1b[36m@@ -1 +1 @@\x1b[m\n"));
        assert!(shown.contains("\x1b[31m-old\x1b[m\n\x1b[32m+new\x1b[m\n"));
        assert!(shown.ends_with("\x1b[31m--- not a header\x1b[m\n"));
        let binary = "diff --git a/b b/b\nGIT binary patch\nliteral 3\nKcmZQzWB>`0\n";
        assert!(coloured(binary).ends_with("\nliteral 3\nKcmZQzWB>`0\n"));
    }
}

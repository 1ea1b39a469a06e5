//! What of a local folder a push sends: its files, folders and symlinks
//! as the ignore files leave them (`.gitignore`, nested ones too, and
//! `.duetignore`; hidden files are sent), `.git/` only when asked. What
//! cannot go (a symlink leaving the folder, a name not in UTF-8, a device
//! or a FIFO) is left out with a warning.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The ignore file of Duet's own, beside `.gitignore`.
pub const DUETIGNORE: &str = ".duetignore";

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    /// A symlink, with its target (relative, inside the folder).
    Symlink(String),
}

/// One entry of the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path relative to the folder, `/`-separated.
    pub rel: String,
    pub kind: Kind,
    /// Permission bits (`0o777`).
    pub mode: u32,
    /// Length (files only; 0 otherwise).
    pub size: u64,
    /// Last modification, in seconds since the epoch.
    pub mtime: i64,
    /// Its nanoseconds (a change within the same second still shows).
    pub mtime_nanos: i64,
}

impl Entry {
    /// The entry's state as a change detector sees it (not its content).
    pub fn looks_same(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.mode == other.mode
            && self.size == other.size
            && self.mtime == other.mtime
            && self.mtime_nanos == other.mtime_nanos
    }
}

/// The folder's entries to push, parents before children, and the
/// warnings about what was left out.
#[derive(Debug, Default)]
pub struct Tree {
    pub entries: Vec<Entry>,
    pub warnings: Vec<String>,
}

impl Tree {
    /// The total length of its files.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }
}

/// Folders a pull stages in (see `unpack`): never pushed.
pub const STAGING_PREFIX: &str = ".duet-pull-";

/// Walks `root`: everything the ignore files leave; `.git` (at any depth)
/// only with `git`, and then whole (the ignore files do not apply in it).
pub fn walk(root: &Path, git: bool) -> std::io::Result<Tree> {
    let meta = std::fs::metadata(root)?;
    if !meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a folder", root.display()),
        ));
    }
    let mut tree = Tree::default();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .parents(true)
        .add_custom_ignore_filename(DUETIGNORE)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let name = entry.file_name();
            name != ".git" && !name.to_string_lossy().starts_with(STAGING_PREFIX)
        });
    collect(root, builder.build(), &mut tree);
    let dot_git = root.join(".git");
    if git && dot_git.symlink_metadata().is_ok() {
        let mut whole = ignore::WalkBuilder::new(&dot_git);
        whole
            .standard_filters(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        collect(root, whole.build(), &mut tree);
        tree.entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    }
    Ok(tree)
}

/// Adds what `walk` yields (paths under `root`) to `tree`.
fn collect(root: &Path, walk: ignore::Walk, tree: &mut Tree) {
    for item in walk {
        match item {
            Ok(entry) => {
                let path = entry.path();
                if path == root {
                    continue;
                }
                match describe(root, path) {
                    Ok(Some(entry)) => tree.entries.push(entry),
                    Ok(None) => {}
                    Err(warning) => tree.warnings.push(warning),
                }
            }
            Err(err) => tree.warnings.push(format!("skipped: {err}")),
        }
    }
}

/// The entry at `path` (under `root`), `None` for what is not pushed
/// silently, or why it is skipped.
pub fn describe(root: &Path, path: &Path) -> Result<Option<Entry>, String> {
    let shown = path.display();
    let Ok(inside) = path.strip_prefix(root) else {
        return Ok(None);
    };
    let Some(rel) = inside.to_str() else {
        return Err(format!("skipped {shown}: its name is not UTF-8"));
    };
    let rel = rel.to_string();
    let meta = path
        .symlink_metadata()
        .map_err(|err| format!("skipped {shown}: {err}"))?;
    let kind = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).map_err(|err| format!("skipped {shown}: {err}"))?;
        match inside_target(&rel, &target) {
            Some(target) => Kind::Symlink(target),
            None => {
                return Err(format!(
                    "skipped {shown}: a symlink to {} (outside the folder)",
                    target.display()
                ));
            }
        }
    } else if meta.is_dir() {
        Kind::Dir
    } else if meta.is_file() {
        Kind::File
    } else {
        return Err(format!(
            "skipped {shown}: not a file, folder or symlink (a device, FIFO or socket)"
        ));
    };
    Ok(Some(Entry {
        size: if kind == Kind::File { meta.len() } else { 0 },
        kind,
        rel,
        mode: meta.mode() & 0o777,
        mtime: meta.mtime(),
        mtime_nanos: meta.mtime_nsec(),
    }))
}

/// A symlink's target as the archive keeps it, when it stays inside the
/// folder: relative, and not climbing above the folder from where the
/// link is (`rel`). Absolute targets and non-UTF-8 ones are `None`.
pub fn inside_target(rel: &str, target: &Path) -> Option<String> {
    let text = target.to_str()?;
    if text.is_empty() || target.is_absolute() {
        return None;
    }
    // Where the link is: its parent folders count as the starting depth.
    let mut depth = rel.split('/').count().saturating_sub(1);
    for segment in text.split('/') {
        match segment {
            "" | "." => {}
            ".." => depth = depth.checked_sub(1)?,
            _ => depth += 1,
        }
    }
    Some(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_that_leave_the_folder_are_told_apart() {
        assert_eq!(inside_target("a", Path::new("b")).as_deref(), Some("b"));
        assert_eq!(
            inside_target("d/a", Path::new("../b")).as_deref(),
            Some("../b")
        );
        assert_eq!(inside_target("a", Path::new("../b")), None);
        assert_eq!(inside_target("d/a", Path::new("../../b")), None);
        assert_eq!(inside_target("d/a", Path::new("x/../../../b")), None);
        assert_eq!(inside_target("a", Path::new("/etc/passwd")), None);
        assert_eq!(
            inside_target("a", Path::new("./x/./y")).as_deref(),
            Some("./x/./y")
        );
    }
}

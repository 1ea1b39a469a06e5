//! The workspace as files (docs/protocol.md "Files"): `duet ls [DIR]`
//! lists a folder, `duet rm PATH…` deletes files (a folder only with
//! `-r`); the TUI's `/ls` shows the same table. Paths follow one rule: a
//! relative path is inside /workspace, an absolute one must be.

use crate::client::cp::{WORKSPACE, shown};
use crate::client::http::HttpError;
use crate::protocol::{DirEntry, EntryType};

/// The workspace path a person's `path` names, relative to /workspace
/// without a trailing `/` (empty: /workspace itself). A path outside
/// /workspace, or one with `..` (a URL would resolve it away before
/// sending), is refused with the reason.
pub fn relative(path: &str) -> Result<String, String> {
    let trimmed = path.trim();
    let inside = match trimmed.strip_prefix(WORKSPACE) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ if trimmed.starts_with('/') => {
            return Err(format!(
                "{trimmed} is outside {WORKSPACE}: only the room's {WORKSPACE} can be reached"
            ));
        }
        _ => trimmed,
    };
    let segments: Vec<&str> = inside
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segments.contains(&"..") {
        return Err(format!(
            "{trimmed} goes outside {WORKSPACE} with ..: a path must stay inside {WORKSPACE}"
        ));
    }
    Ok(segments.join("/"))
}

/// A folder as a person reads it: `/workspace`, `/workspace/src`.
pub fn shown_dir(relative: &str) -> String {
    if relative.is_empty() {
        WORKSPACE.to_string()
    } else {
        shown(relative)
    }
}

/// An entry's name as listed: folders end with `/`, symlinks with `@`.
pub fn marked(entry: &DirEntry) -> String {
    match entry.kind {
        EntryType::Dir => format!("{}/", entry.name),
        EntryType::Symlink => format!("{}@", entry.name),
        EntryType::File | EntryType::Other => entry.name.clone(),
    }
}

fn type_name(kind: EntryType) -> &'static str {
    match kind {
        EntryType::File => "file",
        EntryType::Dir => "dir",
        EntryType::Symlink => "symlink",
        EntryType::Other => "other",
    }
}

/// A folder's entries as columns under a header line: type, size,
/// modified (local time), name (folders marked).
pub fn table(entries: &[DirEntry], tz: time::UtcOffset) -> String {
    let head = ["TYPE", "SIZE", "MODIFIED", "NAME"].map(String::from);
    let rows: Vec<[String; 4]> = entries
        .iter()
        .map(|e| {
            let size = match e.kind {
                EntryType::File | EntryType::Symlink => crate::text::human_size(e.size),
                EntryType::Dir | EntryType::Other => "-".into(),
            };
            [
                type_name(e.kind).to_string(),
                size,
                crate::client::checkpoints::when(e.mtime, tz),
                marked(e),
            ]
        })
        .collect();
    crate::client::ps::columns(std::iter::once(&head).chain(&rows))
}

/// A failed listing or deletion of `relative` as a sentence: a 400 names
/// what the server found wrong with the path, a 404 says it is absent.
pub fn path_error(relative: &str, folder: bool, err: &HttpError) -> String {
    tracing::info!(%err, path = relative, "a workspace request failed");
    let path = if folder {
        shown_dir(relative)
    } else {
        shown(relative)
    };
    let HttpError::Status(status) = err else {
        return format!("{path}: {}", crate::client::explain::http(err));
    };
    let why = status
        .details
        .as_ref()
        .and_then(|d| d.get("path"))
        .filter(|m| !m.is_empty());
    match (status.status, why) {
        (400, Some(why)) => format!("{path}: {} (the server refused the path)", why.join(", ")),
        (404, _) if folder => format!("{path}: no such folder in the room's workspace (404)"),
        (404, _) => format!("{path}: no such file or folder in the room's workspace (404)"),
        _ => format!("{path}: {}", crate::client::explain::http(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        assert_eq!(relative("").unwrap(), "");
        assert_eq!(relative("/workspace").unwrap(), "");
        assert_eq!(relative("/workspace/").unwrap(), "");
        assert_eq!(relative("src/").unwrap(), "src");
        assert_eq!(relative("./src//main.rs").unwrap(), "src/main.rs");
        assert_eq!(relative("/workspace/a/b").unwrap(), "a/b");
        assert!(relative("/etc").unwrap_err().contains("outside /workspace"));
        assert!(relative("/workspaces").unwrap_err().contains("outside"));
        assert!(relative("a/../../x").unwrap_err().contains(".."));
    }

    #[test]
    fn a_listing_marks_folders_and_links() {
        let entry = |name: &str, kind, size| DirEntry {
            name: name.into(),
            kind,
            size,
            mtime: 1_767_348_000_000,
        };
        let text = table(
            &[
                entry(".env", EntryType::File, 12),
                entry("current", EntryType::Symlink, 7),
                entry("src", EntryType::Dir, 0),
            ],
            time::UtcOffset::UTC,
        );
        assert_eq!(
            text,
            "TYPE     SIZE  MODIFIED          NAME\n\
             file     12 B  2026-01-02 10:00  .env\n\
             symlink  7 B   2026-01-02 10:00  current@\n\
             dir      -     2026-01-02 10:00  src/\n"
        );
    }
}

//! What every sandbox's files share: the path rules of docs/protocol.md
//! "Files" (relative to `/workspace`, no `..`, no empty segment), checked
//! before any backend is asked; a file read or written in chunks.

use super::SandboxError;

/// A regular file opened for reading, and its length when it was opened.
pub struct FileReader {
    pub len: u64,
    pub file: std::fs::File,
}

/// A file's new bytes as they arrive (an upload's body).
pub type FileBody = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<bytes::Bytes, SandboxError>> + Send + 'static>,
>;

/// `bytes` as a body of one chunk.
pub fn whole(bytes: impl Into<bytes::Bytes>) -> FileBody {
    let bytes = bytes.into();
    Box::pin(futures_util::stream::once(async move { Ok(bytes) }))
}

/// How deep folders may nest under /workspace in a path or a tree the
/// server walks (src/sandbox/local/tree.rs; the worker's twin is
/// worker/src/tar.ts `MAX_DEPTH`).
pub const MAX_DEPTH: usize = 256;

/// Checks a workspace-relative path; returns its components.
pub fn components(path: &str) -> Result<Vec<&str>, SandboxError> {
    let bad = |m: &str| Err(SandboxError::BadPath(m.to_string()));
    if path.is_empty() {
        return bad("must name a file under /workspace");
    }
    if path.starts_with('/') {
        return bad("must be relative to /workspace, not absolute");
    }
    if path.contains('\0') {
        return bad("must not contain NUL");
    }
    if path.contains("//") {
        return bad("must not have an empty segment (//)");
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return bad("must not leave /workspace (..)");
    }
    if parts.is_empty() {
        return bad("must name a file under /workspace");
    }
    // Linux's limit (NAME_MAX); its twin is worker/src/files.ts `pathComponents`.
    if parts.iter().any(|p| p.len() > 255) {
        return bad("has a name longer than 255 bytes");
    }
    if parts.len() > MAX_DEPTH {
        return Err(SandboxError::BadPath(format!(
            "nests more than {MAX_DEPTH} folders deep"
        )));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_in_the_workspace() {
        assert_eq!(components("a/./b/c.txt").unwrap(), vec!["a", "b", "c.txt"]);
        let long = format!("a/{}", "x".repeat(256));
        let deep = "d/".repeat(MAX_DEPTH) + "f";
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a\0b",
            ".",
            "a//b",
            &long,
            &deep,
        ] {
            assert!(
                matches!(components(bad), Err(SandboxError::BadPath(_))),
                "{bad:?}"
            );
        }
        let deepest = "d/".repeat(MAX_DEPTH - 1) + "f";
        assert_eq!(components(&deepest).unwrap().len(), MAX_DEPTH);
    }
}

//! `duet push`: a local folder into the room's workspace as one streamed
//! tar (docs/protocol.md "Archives"), then what it sent remembered in the
//! manifest; and the changes of a watched folder, pushed as they come.

use super::manifest::Manifest;
use super::pack::{Packer, Progress};
use super::walk::{Entry, Kind, Tree, walk};
use crate::client::http::HttpClient;
use crate::protocol::PushResponse;
use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A folder to push, and where to.
#[derive(Debug, Clone)]
pub struct Push {
    /// The local folder, absolute.
    pub root: PathBuf,
    /// The workspace folder, relative to /workspace (empty: itself).
    pub remote: String,
    /// `.git` too.
    pub git: bool,
}

impl Push {
    /// `dir` (made absolute; it must be a folder) into `remote`.
    pub fn new(dir: &Path, remote: &str, git: bool) -> anyhow::Result<Push> {
        let root =
            std::fs::canonicalize(dir).with_context(|| format!("cannot push {}", dir.display()))?;
        if !root.is_dir() {
            anyhow::bail!("cannot push {}: not a folder", dir.display());
        }
        Ok(Push {
            root,
            remote: remote.to_string(),
            git,
        })
    }

    /// What the folder holds now (on a blocking thread: it reads the disk).
    pub async fn walk(&self) -> anyhow::Result<Tree> {
        let root = self.root.clone();
        let git = self.git;
        tokio::task::spawn_blocking(move || walk(&root, git))
            .await
            .context("the folder's walk stopped")?
            .with_context(|| format!("cannot read {}", self.root.display()))
    }

    /// Sends `entries` as one tar (`delete`: the destination becomes an
    /// exact mirror); answers the server's summary. The files' blob ids
    /// go to `manifest`: all of the folder (`whole`) or these entries.
    pub async fn send(
        &self,
        client: &HttpClient,
        entries: Vec<Entry>,
        delete: bool,
        progress: Option<Progress>,
        manifest: &mut Manifest,
        whole: bool,
    ) -> anyhow::Result<PushResponse> {
        let packer = Packer::new(&self.root, entries.clone(), progress);
        let answer = client
            .put_archive(&self.remote, delete, || packer.body())
            .await;
        let hashes = packer.hashes();
        let pushed = match (answer, hashes) {
            (Ok(pushed), Ok(hashes)) => {
                if whole {
                    manifest.pushed(&self.root, &entries, &hashes);
                } else {
                    manifest.sent(&self.root, &entries, &hashes);
                }
                pushed
            }
            // The archive could not be made (a file went away meanwhile):
            // that is why the request broke.
            (_, Err(err)) => return Err(err).context("the push stopped"),
            (Err(err), Ok(_)) => return Err(err.into()),
        };
        if let Err(err) = manifest.save() {
            tracing::warn!("cannot keep the push's manifest: {err}");
        }
        Ok(pushed)
    }
}

/// What changed in a folder between two walks: entries to send (new or
/// different, with the folders they need) and paths deleted (the topmost
/// of each deleted subtree only).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub send: Vec<Entry>,
    pub deleted: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.send.is_empty() && self.deleted.is_empty()
    }

    /// Files among those to send, and their total length.
    pub fn files_and_bytes(&self) -> (u64, u64) {
        let files = self.send.iter().filter(|e| e.kind == Kind::File);
        files.fold((0, 0), |(n, b), e| (n + 1, b + e.size))
    }
}

/// The changes from `before` to `now`.
pub fn changes(before: &[Entry], now: &[Entry]) -> Changes {
    let old: BTreeMap<&str, &Entry> = before.iter().map(|e| (e.rel.as_str(), e)).collect();
    let new: BTreeMap<&str, &Entry> = now.iter().map(|e| (e.rel.as_str(), e)).collect();
    let changed: Vec<&Entry> = now
        .iter()
        .filter(|e| old.get(e.rel.as_str()).is_none_or(|o| !o.looks_same(e)))
        // A folder whose mtime moved because of its children is sent
        // only when new or its mode changed.
        .filter(|e| {
            e.kind != Kind::Dir
                || old
                    .get(e.rel.as_str())
                    .is_none_or(|o| o.kind != Kind::Dir || o.mode != e.mode)
        })
        .collect();
    // The folders the changed entries are in go too (parents first), so
    // that the small tar stands on its own.
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for entry in &changed {
        wanted.insert(entry.rel.as_str());
        let mut rest = entry.rel.as_str();
        while let Some((parent, _)) = rest.rsplit_once('/') {
            wanted.insert(parent);
            rest = parent;
        }
    }
    let send = now
        .iter()
        .filter(|e| wanted.contains(e.rel.as_str()))
        .cloned()
        .collect();
    let mut deleted: Vec<String> = Vec::new();
    for rel in old.keys() {
        if new.contains_key(rel) {
            continue;
        }
        let under_deleted = deleted.iter().any(|d| {
            rel.strip_prefix(d.as_str())
                .is_some_and(|r| r.starts_with('/'))
        });
        if !under_deleted {
            deleted.push((*rel).to_string());
        }
    }
    Changes { send, deleted }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rel: &str, kind: Kind, size: u64, mtime: i64) -> Entry {
        Entry {
            rel: rel.into(),
            kind,
            mode: 0o644,
            size,
            mtime,
            mtime_nanos: 0,
        }
    }

    #[test]
    fn changes_are_the_new_the_different_and_the_topmost_deleted() {
        let before = vec![
            entry("a", Kind::Dir, 0, 1),
            entry("a/x", Kind::File, 1, 1),
            entry("a/y", Kind::File, 1, 1),
            entry("gone", Kind::Dir, 0, 1),
            entry("gone/z", Kind::File, 1, 1),
        ];
        let now = vec![
            entry("a", Kind::Dir, 0, 2),
            entry("a/x", Kind::File, 2, 2),
            entry("a/y", Kind::File, 1, 1),
            entry("b", Kind::File, 3, 2),
        ];
        let found = changes(&before, &now);
        let sent: Vec<&str> = found.send.iter().map(|e| e.rel.as_str()).collect();
        assert_eq!(sent, ["a", "a/x", "b"]);
        assert_eq!(found.deleted, ["gone"]);
        assert_eq!(found.files_and_bytes(), (2, 5));
    }
}

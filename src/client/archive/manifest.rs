//! What this machine and a room last agreed on, file by file: each push
//! (and pull) records the local files it sent (or wrote) with their size,
//! mtime and git blob id. A pull asks before it replaces a local file that
//! changed since. Kept in the user's state directory (one file per server
//! and room, by local absolute path), never inside the folder itself.

use super::pack::{blob_id, hex};
use super::walk::{Entry, Kind};
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One local file (or symlink) as it was synced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Synced {
    pub size: u64,
    pub mtime: i64,
    pub mtime_nanos: i64,
    /// The git blob id of its content (of a symlink: of its target).
    pub hash: String,
}

/// The manifest of one server's room.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(skip)]
    file: Option<PathBuf>,
    server: String,
    room: String,
    /// By local absolute path.
    files: BTreeMap<String, Synced>,
}

impl Manifest {
    /// The manifest of `room` on `server` (empty when there is none yet,
    /// or no state directory: then nothing is remembered).
    pub fn load(server: &str, room: &str) -> Manifest {
        let file = crate::config::default_state_dir().map(|dir| {
            let mut sha = Sha1::new();
            sha.update(format!("{server}\n{room}").as_bytes());
            let key = hex(&sha.finalize());
            dir.join("synced")
                .join(format!("{room}-{}.json", key.get(..16).unwrap_or(&key)))
        });
        let mut manifest = file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|bytes| serde_json::from_slice::<Manifest>(&bytes).ok())
            .filter(|m| m.server == server && m.room == room)
            .unwrap_or_else(|| Manifest {
                server: server.to_string(),
                room: room.to_string(),
                ..Manifest::default()
            });
        manifest.file = file;
        manifest
    }

    /// Writes it back (whole: beside it, then renamed).
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let json = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        let tmp = file.with_extension(format!("json.{:08x}", rand::random::<u32>()));
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, file).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// A push of `root` sent `entries` (files with `hashes`): they are
    /// what the room has of `root` now; what else was known under `root`
    /// is forgotten.
    pub fn pushed(&mut self, root: &Path, entries: &[Entry], hashes: &BTreeMap<String, String>) {
        let prefix = format!("{}/", root.display());
        self.files.retain(|path, _| !path.starts_with(&prefix));
        self.sent(root, entries, hashes);
    }

    /// Entries of `root` sent (a watched change): recorded, the others kept.
    pub fn sent(&mut self, root: &Path, entries: &[Entry], hashes: &BTreeMap<String, String>) {
        for entry in entries {
            let hash = match &entry.kind {
                Kind::Dir => continue,
                Kind::File => hashes.get(&entry.rel).cloned(),
                Kind::Symlink(target) => Some(text_blob_id(target)),
            };
            if let Some(hash) = hash {
                let synced = Synced {
                    size: entry.size,
                    mtime: entry.mtime,
                    mtime_nanos: entry.mtime_nanos,
                    hash,
                };
                self.files
                    .insert(root.join(&entry.rel).display().to_string(), synced);
            }
        }
    }

    /// The files (and symlinks) under `root` last synced, relative to it.
    pub fn synced_under(&self, root: &Path) -> Vec<String> {
        let prefix = format!("{}/", root.display());
        self.files
            .keys()
            .filter_map(|path| path.strip_prefix(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// A local path is gone from the room (deleted by a watched change).
    pub fn forget(&mut self, path: &Path) {
        let whole = path.display().to_string();
        let prefix = format!("{whole}/");
        self.files
            .retain(|p, _| *p != whole && !p.starts_with(&prefix));
    }

    /// Records a local file just written by a pull, with its blob id.
    pub fn wrote(&mut self, path: &Path, hash: String) {
        if let Ok(meta) = path.symlink_metadata() {
            let synced = Synced {
                size: meta.len(),
                mtime: meta.mtime(),
                mtime_nanos: meta.mtime_nsec(),
                hash,
            };
            self.files.insert(path.display().to_string(), synced);
        }
    }

    /// Records a local symlink just written by a pull.
    pub fn wrote_link(&mut self, path: &Path) {
        if let Some(synced) = current(path) {
            self.files.insert(path.display().to_string(), synced);
        }
    }

    /// Whether the local file (or symlink) at `path` differs from what
    /// was last synced there (never synced: it does).
    pub fn changed_since(&self, path: &Path) -> bool {
        let Some(known) = self.files.get(&path.display().to_string()) else {
            return true;
        };
        let Ok(meta) = path.symlink_metadata() else {
            return false;
        };
        if meta.len() == known.size
            && meta.mtime() == known.mtime
            && meta.mtime_nsec() == known.mtime_nanos
        {
            return false;
        }
        current(path).is_none_or(|now| now.hash != known.hash)
    }
}

/// A local file's (or symlink's) state now, with its blob id.
fn current(path: &Path) -> Option<Synced> {
    let meta = path.symlink_metadata().ok()?;
    let hash = if meta.file_type().is_symlink() {
        text_blob_id(std::fs::read_link(path).ok()?.to_str()?)
    } else if meta.is_file() {
        blob_id(path).ok()?
    } else {
        return None;
    };
    Some(Synced {
        size: meta.len(),
        mtime: meta.mtime(),
        mtime_nanos: meta.mtime_nsec(),
        hash,
    })
}

/// The git blob id of a text (a symlink's target).
fn text_blob_id(text: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(format!("blob {}\0", text.len()).as_bytes());
    sha.update(text.as_bytes());
    hex(&sha.finalize())
}

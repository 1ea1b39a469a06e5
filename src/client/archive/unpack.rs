//! A pull, on this machine's side: the room's tar is unpacked into a
//! staging folder inside the destination (same disk: each file then moves
//! into place by a rename), the local files it would replace that changed
//! since the last sync are named (to ask about), and only then is it put
//! in place. Nothing is ever written through a symlink: not one of the
//! archive's, not one already in the destination.

use super::manifest::Manifest;
use super::pack::hex;
use super::walk::{STAGING_PREFIX, inside_target};
use sha1::{Digest, Sha1};
use std::collections::{BTreeMap, HashSet};
use std::fs::FileTimes;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What a staged entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Dir {
        mode: u32,
        mtime: u64,
    },
    /// A file, with its git blob id and length.
    File {
        hash: String,
        size: u64,
    },
    Symlink {
        target: String,
    },
}

/// The room's folder, unpacked beside the destination, not yet in place.
pub struct Staged {
    dir: PathBuf,
    staging: PathBuf,
    items: Vec<(String, Item)>,
    /// What was left out, and why.
    pub warnings: Vec<String>,
    /// Local paths (relative to the destination) it would replace that
    /// changed since they were last synced.
    pub conflicts: Vec<String>,
    /// With `--delete`: local files (and symlinks) last synced that the
    /// room no longer has, to delete.
    gone: Vec<String>,
}

/// What was put in place.
#[derive(Debug, Default, Clone, Copy)]
pub struct Applied {
    pub files: u64,
    pub bytes: u64,
    /// Local files deleted (the room no longer has them).
    pub deleted: u64,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Unpacks the tar that `reader` yields into a staging folder of `dir`
/// (made if absent), and names the conflicts with `manifest`. With
/// `delete`, the files last synced that the room no longer has are to be
/// deleted too (those changed here since are conflicts).
pub fn stage(
    reader: impl Read,
    dir: &Path,
    manifest: &Manifest,
    delete: bool,
) -> std::io::Result<Staged> {
    std::fs::create_dir_all(dir)?;
    let staging = dir.join(format!("{STAGING_PREFIX}{:08x}", rand::random::<u32>()));
    std::fs::create_dir(&staging)?;
    let mut staged = Staged {
        dir: dir.to_path_buf(),
        staging,
        items: Vec::new(),
        warnings: Vec::new(),
        conflicts: Vec::new(),
        gone: Vec::new(),
    };
    let mut archive = tar::Archive::new(reader);
    let mut kinds: BTreeMap<String, bool> = BTreeMap::new(); // path → is a folder
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let Some(rel) = clean(&raw) else {
            if !name
                .trim_start_matches("./")
                .trim_end_matches('/')
                .is_empty()
            {
                staged
                    .warnings
                    .push(format!("skipped {name}: not a path inside the folder"));
            }
            continue;
        };
        if let Some(parent) = through_non_folder(&rel, &kinds) {
            staged
                .warnings
                .push(format!("skipped {rel}: {parent} is not a folder"));
            continue;
        }
        let path = staged.staging.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let header = entry.header();
        let mode = header.mode().unwrap_or(0o644) & 0o777;
        let mtime = header.mtime().unwrap_or(0);
        let item = match header.entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&path)?;
                Item::Dir { mode, mtime }
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let length = entry.size();
                let (hash, size) = write_file(&mut entry, length, &path, mode, mtime)?;
                Item::File { hash, size }
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| String::from_utf8_lossy(&t).into_owned())
                    .unwrap_or_default();
                if inside_target(&rel, Path::new(&target)).is_none() {
                    staged.warnings.push(format!(
                        "skipped {rel}: a symlink to {target} (outside the folder)"
                    ));
                    continue;
                }
                std::os::unix::fs::symlink(&target, &path)?;
                Item::Symlink { target }
            }
            other => {
                staged.warnings.push(format!(
                    "skipped {rel}: not a file, folder or symlink ({other:?})"
                ));
                continue;
            }
        };
        kinds.insert(rel.clone(), matches!(item, Item::Dir { .. }));
        staged.items.push((rel, item));
    }
    staged.conflicts = staged.find_conflicts(manifest);
    if delete {
        staged.gone = staged.find_gone(manifest);
    }
    Ok(staged)
}

/// An archive member's name as a relative path: `./` and empty segments
/// dropped; `None` when it is absolute, climbs with `..`, is not UTF-8, or
/// is the folder itself.
fn clean(raw: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(raw).ok()?;
    if name.starts_with('/') {
        return None;
    }
    let segments: Vec<&str> = name
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segments.is_empty() || segments.contains(&"..") {
        return None;
    }
    Some(segments.join("/"))
}

/// The first parent of `rel` the archive made something other than a
/// folder (a file or a symlink), if any.
fn through_non_folder(rel: &str, kinds: &BTreeMap<String, bool>) -> Option<String> {
    let mut prefix = String::new();
    let segments: Vec<&str> = rel.split('/').collect();
    let parents = segments.len().saturating_sub(1);
    for segment in segments.iter().take(parents) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        if kinds.get(&prefix) == Some(&false) {
            return Some(prefix);
        }
    }
    None
}

/// Writes a member's content as a new file; answers its blob id and length.
fn write_file(
    entry: &mut impl Read,
    length: u64,
    path: &Path,
    mode: u32,
    mtime: u64,
) -> std::io::Result<(String, u64)> {
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut sha = Sha1::new();
    sha.update(format!("blob {length}\0").as_bytes());
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = entry.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = buf.get(..n).unwrap_or_default();
        sha.update(chunk);
        file.write_all(chunk)?;
        size += n as u64;
    }
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.set_times(FileTimes::new().set_modified(at(mtime)))?;
    if size != length {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{} arrived cut short", path.display()),
        ));
    }
    Ok((hex(&sha.finalize()), size))
}

/// A tar mtime as a time.
fn at(mtime: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(mtime)
}

impl Staged {
    /// The local paths this would replace that changed since the last
    /// sync (and whose content is not the room's already).
    fn find_conflicts(&self, manifest: &Manifest) -> Vec<String> {
        let mut conflicts = Vec::new();
        for (rel, item) in &self.items {
            let dest = self.dir.join(rel);
            let Ok(meta) = dest.symlink_metadata() else {
                continue;
            };
            let replaced = match item {
                Item::Dir { .. } => !meta.is_dir(),
                Item::File { hash, size } => {
                    meta.is_dir()
                        || !(meta.is_file()
                            && meta.len() == *size
                            && super::pack::blob_id(&dest).is_ok_and(|h| h == *hash))
                }
                Item::Symlink { target } => {
                    meta.is_dir()
                        || std::fs::read_link(&dest)
                            .ok()
                            .is_none_or(|t| t != Path::new(target))
                }
            };
            let folder = meta.is_dir();
            if replaced && (folder || manifest.changed_since(&dest)) {
                conflicts.push(if folder {
                    format!("{rel}/ (a folder here)")
                } else {
                    rel.clone()
                });
            }
        }
        conflicts
    }

    /// The local files last synced under the destination that the room's
    /// folder no longer has; those changed here since are conflicts too.
    fn find_gone(&mut self, manifest: &Manifest) -> Vec<String> {
        let kept: HashSet<&str> = self.items.iter().map(|(rel, _)| rel.as_str()).collect();
        let mut gone = Vec::new();
        for rel in manifest.synced_under(&self.dir) {
            let dest = self.dir.join(&rel);
            if kept.contains(rel.as_str()) || dest.symlink_metadata().is_err() {
                continue;
            }
            if manifest.changed_since(&dest) {
                self.conflicts.push(format!("{rel} (deleted in the room)"));
            }
            gone.push(rel);
        }
        gone
    }

    /// Puts the staged entries in place, in order (parents first), and
    /// records what it wrote in `manifest`. A path that would pass through
    /// a symlink here is skipped with a warning.
    pub fn apply(&mut self, manifest: &mut Manifest) -> std::io::Result<Applied> {
        let mut done = Applied::default();
        let mut folders: HashSet<String> = HashSet::new();
        let mut dir_times = Vec::new();
        let items = std::mem::take(&mut self.items);
        for (rel, item) in &items {
            if let Some(blocked) = blocked_parent(&self.dir, rel, &mut folders) {
                self.warnings
                    .push(format!("skipped {rel}: {blocked} here is not a folder"));
                continue;
            }
            let dest = self.dir.join(rel);
            let existing = dest.symlink_metadata().ok();
            match item {
                Item::Dir { mode, mtime } => {
                    match &existing {
                        Some(meta) if meta.is_dir() => {}
                        Some(_) => {
                            std::fs::remove_file(&dest)?;
                            std::fs::create_dir(&dest)?;
                        }
                        None => std::fs::create_dir(&dest)?,
                    }
                    folders.insert(rel.clone());
                    dir_times.push((dest, *mode, *mtime));
                }
                Item::File { hash, size } => {
                    if existing.as_ref().is_some_and(|m| m.is_dir()) {
                        std::fs::remove_dir_all(&dest)?;
                    }
                    std::fs::rename(self.staging.join(rel), &dest)?;
                    manifest.wrote(&dest, hash.clone());
                    done.files += 1;
                    done.bytes += size;
                }
                Item::Symlink { .. } => {
                    if existing.as_ref().is_some_and(|m| m.is_dir()) {
                        std::fs::remove_dir_all(&dest)?;
                    }
                    std::fs::rename(self.staging.join(rel), &dest)?;
                    manifest.wrote_link(&dest);
                }
            }
        }
        // The folders the room has stay, even when a deletion empties them.
        let room_folders: HashSet<String> = items
            .iter()
            .filter(|(_, item)| matches!(item, Item::Dir { .. }))
            .map(|(rel, _)| rel.clone())
            .collect();
        for rel in std::mem::take(&mut self.gone) {
            if let Some(blocked) = blocked_parent(&self.dir, &rel, &mut folders) {
                self.warnings
                    .push(format!("kept {rel}: {blocked} here is not a folder"));
                continue;
            }
            let dest = self.dir.join(&rel);
            match dest.symlink_metadata() {
                Ok(meta) if meta.is_dir() => {
                    self.warnings.push(format!(
                        "kept {rel}/: a folder here now, not the file the room deleted"
                    ));
                    continue;
                }
                Ok(_) => std::fs::remove_file(&dest)?,
                Err(_) => {}
            }
            manifest.forget(&dest);
            done.deleted += 1;
            remove_empty_parents(&self.dir, &rel, &room_folders);
        }
        // Children first, so that putting them in did not change it after.
        for (dest, mode, mtime) in dir_times.iter().rev() {
            std::fs::set_permissions(dest, std::fs::Permissions::from_mode(*mode))?;
            if let Ok(folder) = std::fs::File::open(dest) {
                let _ = folder.set_times(FileTimes::new().set_modified(at(*mtime)));
            }
        }
        Ok(done)
    }
}

/// Removes the folders above `rel` (under `dir`) that a deletion left
/// empty, but none the room's folder has (`kept`).
fn remove_empty_parents(dir: &Path, rel: &str, kept: &HashSet<String>) {
    let mut parent = Path::new(rel).parent();
    while let Some(folder) = parent.filter(|p| !p.as_os_str().is_empty()) {
        let shown = folder.display().to_string();
        // `remove_dir` removes only an empty folder.
        if kept.contains(&shown) || std::fs::remove_dir(dir.join(folder)).is_err() {
            return;
        }
        parent = folder.parent();
    }
}

/// The first parent of `rel` under `dir` that is not a real folder here
/// (a symlink, a file), if any; `folders` are those known to be.
fn blocked_parent(dir: &Path, rel: &str, folders: &mut HashSet<String>) -> Option<String> {
    let segments: Vec<&str> = rel.split('/').collect();
    let mut prefix = String::new();
    for segment in segments.iter().take(segments.len().saturating_sub(1)) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        if folders.contains(&prefix) {
            continue;
        }
        match dir.join(&prefix).symlink_metadata() {
            Ok(meta) if meta.is_dir() => {
                folders.insert(prefix.clone());
            }
            _ => return Some(prefix),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_stay_inside() {
        assert_eq!(clean(b"./src/main.rs").as_deref(), Some("src/main.rs"));
        assert_eq!(clean(b"src//a/").as_deref(), Some("src/a"));
        assert_eq!(clean(b"./"), None);
        assert_eq!(clean(b"/etc/passwd"), None);
        assert_eq!(clean(b"a/../../b"), None);
        assert_eq!(clean(b"\xff"), None);
    }
}

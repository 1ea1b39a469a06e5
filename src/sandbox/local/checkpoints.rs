//! Checkpoints of a room's workspace on this host: whole copies in the
//! room's checkpoints folder (inside its disk image where it has one, so
//! they count against its quota), made, restored, deleted and forked by
//! `tree`'s descriptor walks. These block: callers run them on a
//! blocking thread.

use super::files::map_errno;
use super::tree::{self, Owners, TreeError};
use super::{Limits, SandboxPlace, disk, enforcement};
use crate::sandbox::CheckpointError;
use crate::sandbox::files::FileError;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

fn failed(what: &str, e: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Failed(format!("{what}: {e}"))
}

/// Where checkpoint `id` is kept; ids are made by the room (`c1`…), but
/// nothing that could leave the folder is accepted.
fn checkpoint_path(place: &SandboxPlace, id: &str) -> Result<PathBuf, CheckpointError> {
    let plain = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !plain {
        return Err(CheckpointError::NotFound);
    }
    Ok(disk::checkpoints_dir(enforcement().quota, &place.workspace).join(id))
}

fn ready(place: &SandboxPlace, limits: &Limits) -> Result<(), CheckpointError> {
    super::ready_workspace(place, limits).map_err(|e| failed("the workspace is not available", e))
}

/// The disk a copy of the tree at `source` needs, when the room's disk
/// has that much free; `Full` otherwise, before anything is copied.
fn fitting(
    place: &SandboxPlace,
    limits: &Limits,
    source: &OwnedFd,
) -> Result<u64, CheckpointError> {
    let need = tree::usage(source)
        .map_err(|e| failed("cannot measure what to copy", e))?
        .disk;
    let free = disk::free_bytes(enforcement().quota, &place.workspace, limits.disk_bytes)
        .map_err(|e| failed("cannot see the room's free space", e))?;
    if need > free {
        return Err(CheckpointError::Full { need, free });
    }
    Ok(need)
}

/// Copies the tree at `from` into the new folder `to`, if it fits the
/// room's disk; the folder is removed again when the copy fails.
fn copy_fitting(
    place: &SandboxPlace,
    limits: &Limits,
    from: &Path,
    to: &Path,
) -> Result<u64, CheckpointError> {
    let source = tree::open_root(from).map_err(|e| failed("cannot open the workspace", e))?;
    let need = fitting(place, limits, &source)?;
    std::fs::create_dir(to).map_err(|e| failed("cannot make the checkpoint's folder", e))?;
    let copied = tree::open_root(to)
        .map_err(|e| failed("cannot open the checkpoint's folder", e))
        .and_then(|target| {
            tree::copy(&source, &target, Owners::room(place.uid)).map_err(|e| full_or(e, need))
        });
    if copied.is_err() {
        let _ = remove_folder(to);
    }
    copied
}

/// A copy cut short by a full disk is `Full`, anything else `Failed`.
fn full_or(e: TreeError, need: u64) -> CheckpointError {
    if e.is_full() {
        CheckpointError::Full { need, free: 0 }
    } else {
        failed("the copy failed", e)
    }
}

/// Removes the folder at `path` with everything in it.
fn remove_folder(path: &Path) -> Result<(), TreeError> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let parent = tree::open_root(parent).map_err(|e| TreeError {
        errno: nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        path: String::new(),
    })?;
    match tree::remove(&parent, name) {
        Err(e) if e.errno == nix::errno::Errno::ENOENT => Ok(()),
        other => other,
    }
}

/// Checkpoint `id`: a copy of the workspace as it is now; its bytes.
pub fn create(place: &SandboxPlace, limits: &Limits, id: &str) -> Result<u64, CheckpointError> {
    ready(place, limits)?;
    let to = checkpoint_path(place, id)?;
    copy_fitting(place, limits, &place.workspace, &to)
}

/// Makes the workspace a copy of checkpoint `id` (the sandbox is stopped).
/// The old files are moved aside first (renames) and deleted after, in
/// the background; when the copy would not fit beside them, they are
/// deleted first.
pub fn restore(place: &SandboxPlace, limits: &Limits, id: &str) -> Result<(), CheckpointError> {
    ready(place, limits)?;
    let from = checkpoint_path(place, id)?;
    let source = match tree::open_root(&from) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CheckpointError::NotFound);
        }
        Err(e) => return Err(failed("cannot open the checkpoint", e)),
    };
    let quota = enforcement().quota;
    // A folder of its own: an earlier restore's may still be deleting.
    let trash =
        disk::trash_dir(quota, &place.workspace).join(format!("{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&trash).map_err(|e| failed("cannot make room for the old files", e))?;
    let open = |path: &Path, what: &str| {
        tree::open_root(path).map_err(|e| failed(&format!("cannot open the {what}"), e))
    };
    let old = open(
        &disk::workspace_beside_trash(quota, &place.workspace),
        "workspace",
    )?;
    let aside = open(&trash, "trash")?;
    let moved =
        tree::move_children(&old, &aside).map_err(|e| failed("cannot move the old files", e));
    let need = tree::usage(&source)
        .map_err(|e| failed("cannot measure the checkpoint", e))?
        .disk;
    let free = disk::free_bytes(quota, &place.workspace, limits.disk_bytes).unwrap_or(0);
    let trash_in_the_way = free < need + (need >> 4);
    let kept_aside = moved.is_ok() && !(trash_in_the_way && quota == disk::Quota::Image);
    if !kept_aside {
        // Delete first: the checkpoint then fits where the old files were.
        tree::remove_children(&old).map_err(|e| failed("cannot empty the workspace", e))?;
        let _ = remove_folder(&trash);
    }
    let workspace = open(&place.workspace, "workspace")?;
    let copied = tree::copy(&source, &workspace, Owners::room(place.uid))
        .map(drop)
        .map_err(|e| failed("the copy failed", e));
    if copied.is_err() && kept_aside {
        // Nothing is lost: the old files come back.
        let back = tree::remove_children(&old).and_then(|()| tree::move_children(&aside, &old));
        if let Err(e) = back {
            tracing::warn!("putting the old files back after a failed restore failed: {e}");
        }
    }
    if trash.exists() {
        std::thread::spawn(move || {
            if let Err(e) = remove_folder(&trash) {
                tracing::warn!("deleting a restore's old files failed: {e}");
            }
        });
    }
    copied
}

/// Deletes checkpoint `id`.
pub fn delete(place: &SandboxPlace, id: &str) -> Result<(), CheckpointError> {
    let path = checkpoint_path(place, id)?;
    remove_folder(&path).map_err(|e| failed("cannot delete the checkpoint", e))
}

/// The folder a fork copies from: the workspace, or checkpoint `id`.
pub fn fork_source(
    place: &SandboxPlace,
    limits: &Limits,
    id: Option<&str>,
) -> Result<PathBuf, CheckpointError> {
    ready(place, limits)?;
    match id {
        None => Ok(place.workspace.clone()),
        Some(id) => {
            let path = checkpoint_path(place, id)?;
            if path.is_dir() {
                Ok(path)
            } else {
                Err(CheckpointError::NotFound)
            }
        }
    }
}

/// Fills this room's (empty) workspace from another room's folder.
pub fn fork_from(
    place: &SandboxPlace,
    limits: &Limits,
    from: &Path,
) -> Result<(), CheckpointError> {
    ready(place, limits)?;
    let source = tree::open_root(from).map_err(|e| failed("cannot open the source", e))?;
    let need = fitting(place, limits, &source)?;
    let workspace =
        tree::open_root(&place.workspace).map_err(|e| failed("cannot open the workspace", e))?;
    tree::copy(&source, &workspace, Owners::room(place.uid))
        .map(drop)
        .map_err(|e| full_or(e, need))
}

/// Opens the folder `path` of the workspace (its components checked).
/// `listed`: the folder itself is what is asked for (a symlink there is
/// no such folder); otherwise it is on the way to an entry of it.
fn open_folder(place: &SandboxPlace, path: &str, listed: bool) -> Result<OwnedFd, FileError> {
    let root = tree::open_root(&place.workspace).map_err(|e| FileError::Io(e.to_string()))?;
    if path.trim_matches('/').is_empty() {
        return Ok(root);
    }
    let parts = crate::sandbox::files::components(path)?;
    let mut dir = root;
    for (i, part) in parts.iter().enumerate() {
        let last = listed && i + 1 == parts.len();
        dir = match tree::open_dir(&dir, OsStr::new(part)) {
            Ok(next) => next,
            Err(nix::errno::Errno::ENOTDIR | nix::errno::Errno::ELOOP) => {
                let link = nix::sys::stat::fstatat(
                    Some(std::os::fd::AsRawFd::as_raw_fd(&dir)),
                    *part,
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
                // A symlink on the way is refused; a file, or a symlink
                // listed as a folder, is no such folder.
                return Err(if link && !last {
                    FileError::BadPath("passes through a symlink".into())
                } else {
                    FileError::NotFound
                });
            }
            Err(e) => return Err(map_errno(e)),
        };
    }
    Ok(dir)
}

/// The entries of a folder of the workspace.
pub fn list(
    place: &SandboxPlace,
    limits: &Limits,
    path: &str,
) -> Result<Vec<crate::protocol::DirEntry>, FileError> {
    use crate::protocol::{DirEntry, EntryType};
    if !place.workspace.exists() && path.trim_matches('/').is_empty() {
        return Ok(Vec::new());
    }
    super::ready_workspace(place, limits).map_err(|e| FileError::Io(e.to_string()))?;
    let dir = open_folder(place, path, true)?;
    let entries = tree::entries(&dir).map_err(map_errno)?;
    Ok(entries
        .into_iter()
        .map(|(name, stat)| {
            let kind = match stat.st_mode & libc::S_IFMT {
                libc::S_IFREG => EntryType::File,
                libc::S_IFDIR => EntryType::Dir,
                libc::S_IFLNK => EntryType::Symlink,
                _ => EntryType::Other,
            };
            let size = match kind {
                EntryType::File | EntryType::Symlink => stat.st_size as u64,
                _ => 0,
            };
            let mtime =
                (stat.st_mtime.max(0) as u64) * 1000 + stat.st_mtime_nsec as u64 / 1_000_000;
            DirEntry {
                name: name.to_string_lossy().into_owned(),
                kind,
                size,
                mtime,
            }
        })
        .collect())
}

/// Deletes a file, a symlink or a folder of the workspace.
pub fn delete_path(place: &SandboxPlace, limits: &Limits, path: &str) -> Result<(), FileError> {
    let parts = crate::sandbox::files::components(path)?;
    let Some((name, parents)) = parts.split_last() else {
        return Err(FileError::BadPath(
            "must name a file under /workspace".into(),
        ));
    };
    if !place.workspace.exists() {
        return Err(FileError::NotFound);
    }
    super::ready_workspace(place, limits).map_err(|e| FileError::Io(e.to_string()))?;
    let dir = open_folder(place, &parents.join("/"), false)?;
    tree::remove(&dir, OsStr::new(name)).map_err(|e| map_errno(e.errno))
}

/// The room's handle runs these on a blocking thread, one disk change
/// at a time (a checkpoint never copies a workspace a restore empties).
impl super::RoomSandbox {
    async fn on_disk<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SandboxPlace, &Limits) -> T + Send + 'static,
        gone: impl FnOnce(String) -> T,
    ) -> T {
        let _turn = self.disk_lock.clone().lock_owned().await;
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || work(&place, &limits))
            .await
            .unwrap_or_else(|e| gone(e.to_string()))
    }

    pub(super) async fn list_dir(
        &self,
        path: String,
    ) -> Result<Vec<crate::protocol::DirEntry>, FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || list(&place, &limits, &path))
            .await
            .map_err(|e| FileError::Io(e.to_string()))?
    }

    pub(super) async fn delete_path(&self, path: String) -> Result<(), FileError> {
        let (place, limits) = (self.place.clone(), self.limits.clone());
        tokio::task::spawn_blocking(move || delete_path(&place, &limits, &path))
            .await
            .map_err(|e| FileError::Io(e.to_string()))?
    }

    pub(super) async fn checkpoint_create(&self, id: String) -> Result<u64, CheckpointError> {
        self.on_disk(
            move |place, limits| create(place, limits, &id),
            |e| Err(CheckpointError::Failed(e)),
        )
        .await
    }

    pub(super) async fn checkpoint_delete(&self, id: String) -> Result<(), CheckpointError> {
        self.on_disk(
            move |place, _| delete(place, &id),
            |e| Err(CheckpointError::Failed(e)),
        )
        .await
    }

    /// Queued as work of the sandbox (behind the commands queued before
    /// it), which stops the sandbox before the copy.
    pub(super) async fn checkpoint_restore(&self, id: String) -> Result<(), CheckpointError> {
        let _turn = self.disk_lock.clone().lock_owned().await;
        let (place, limits) = (self.place.clone(), self.limits.clone());
        let (reply, answer) = tokio::sync::oneshot::channel();
        let replace = super::worker::Replace {
            change: Box::new(move || restore(&place, &limits, &id)),
            reply,
        };
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self
            .jobs
            .send(super::worker::Work::Replace(replace))
            .is_err()
        {
            self.pending
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            return Err(CheckpointError::Failed("the sandbox worker is gone".into()));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(CheckpointError::Failed("the sandbox worker is gone".into())))
    }

    pub(super) async fn fork_source(
        &self,
        checkpoint: Option<String>,
    ) -> Result<crate::sandbox::ForkSource, CheckpointError> {
        let path = self
            .on_disk(
                move |place, limits| fork_source(place, limits, checkpoint.as_deref()),
                |e| Err(CheckpointError::Failed(e)),
            )
            .await?;
        Ok(crate::sandbox::ForkSource(Box::new(path)))
    }

    pub(super) async fn fork_from(
        &self,
        source: crate::sandbox::ForkSource,
    ) -> Result<(), CheckpointError> {
        let from = source
            .0
            .downcast::<PathBuf>()
            .map_err(|_| CheckpointError::Failed("a fork from another kind of sandbox".into()))?;
        self.on_disk(
            move |place, limits| fork_from(place, limits, &from),
            |e| Err(CheckpointError::Failed(e)),
        )
        .await
    }
}

//! Checkpoints of a room's workspace on this host: whole copies in the
//! room's checkpoints folder (inside its disk image where it has one, so
//! they count against its quota), made, restored, deleted and forked by
//! `tree`'s descriptor walks. These block: callers run them on a
//! blocking thread.

use super::tree::{self, Owners, TreeError};
use super::walk::failed;
use super::{Limits, SandboxPlace, disk, enforcement};
use crate::sandbox::SandboxError;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Where checkpoint `id` is kept; ids are made by the room (`c1`…), but
/// nothing that could leave the folder is accepted.
fn checkpoint_path(place: &SandboxPlace, id: &str) -> Result<PathBuf, SandboxError> {
    let plain = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !plain {
        return Err(SandboxError::NoCheckpoint);
    }
    Ok(disk::checkpoints_dir(place.quota(), place.home()).join(id))
}

/// Bytes the room's checkpoints and workspace may still fill: its quota's
/// free space or, on a host folder (no quota), the host's.
pub(super) fn free_bytes(place: &SandboxPlace, limits: &Limits) -> std::io::Result<u64> {
    match place.folder {
        Some(_) => disk::free_on_host(&disk::checkpoints_dir(place.quota(), place.home())),
        None => disk::free_bytes(enforcement().quota, &place.workspace, limits.disk_bytes),
    }
}

fn ready(place: &SandboxPlace, limits: &Limits) -> Result<(), SandboxError> {
    super::ready_workspace(place, limits).map_err(|e| failed("the workspace is not available", e))
}

/// The disk a copy of the tree at `source` needs, when the room's disk
/// has that much free; `Full` otherwise, before anything is copied.
fn fitting(place: &SandboxPlace, limits: &Limits, source: &OwnedFd) -> Result<u64, SandboxError> {
    let need = tree::usage(source)
        .map_err(|e| failed("cannot measure what to copy", e))?
        .disk;
    let free =
        free_bytes(place, limits).map_err(|e| failed("cannot see the room's free space", e))?;
    if need > free {
        return Err(SandboxError::WontFit { need, free });
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
) -> Result<u64, SandboxError> {
    let source = tree::open_root(from).map_err(|e| failed("cannot open the workspace", e))?;
    let need = fitting(place, limits, &source)?;
    std::fs::create_dir(to).map_err(|e| failed("cannot make the checkpoint's folder", e))?;
    let copied = tree::open_root(to)
        .map_err(|e| failed("cannot open the checkpoint's folder", e))
        .and_then(|target| {
            tree::copy(&source, &target, Owners::of(place)).map_err(|e| full_or(e, need))
        });
    if copied.is_err() {
        let _ = remove_folder(to);
    }
    copied
}

/// A copy cut short by a full disk is `Full`, anything else `Failed`.
fn full_or(e: TreeError, need: u64) -> SandboxError {
    if e.is_full() {
        SandboxError::WontFit { need, free: 0 }
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
pub fn create(place: &SandboxPlace, limits: &Limits, id: &str) -> Result<u64, SandboxError> {
    ready(place, limits)?;
    let to = checkpoint_path(place, id)?;
    copy_fitting(place, limits, &place.workspace, &to)
}

/// Makes the workspace a copy of checkpoint `id` (the sandbox is stopped).
/// The old files are moved aside first (renames) and deleted after, in
/// the background; when the copy would not fit beside them, they are
/// deleted first.
pub fn restore(place: &SandboxPlace, limits: &Limits, id: &str) -> Result<(), SandboxError> {
    ready(place, limits)?;
    let from = checkpoint_path(place, id)?;
    let source = match tree::open_root(&from) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(SandboxError::NoCheckpoint);
        }
        Err(e) => return Err(failed("cannot open the checkpoint", e)),
    };
    let quota = place.quota();
    // A folder of its own: an earlier restore's may still be deleting.
    let trash =
        disk::trash_dir(quota, place.home()).join(format!("{:016x}", rand::random::<u64>()));
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
    let free = free_bytes(place, limits).unwrap_or(0);
    let trash_in_the_way = free < need + (need >> 4);
    let kept_aside = moved.is_ok() && !(trash_in_the_way && quota == disk::Quota::Image);
    if !kept_aside {
        // Delete first: the checkpoint then fits where the old files were.
        empty(&old).map_err(|e| failed("cannot empty the workspace", e))?;
        let _ = remove_folder(&trash);
    }
    let workspace = open(&place.workspace, "workspace")?;
    let copied = tree::copy(&source, &workspace, Owners::of(place))
        .map(drop)
        .map_err(|e| failed("the copy failed", e));
    if copied.is_err() && kept_aside {
        // Nothing is lost: the old files come back.
        let back = empty(&old).and_then(|()| tree::move_children(&aside, &old));
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

/// Deletes everything in the workspace `dir`, which keeps its mode
/// (emptying gives its owner rwx first; a host folder's mode is its
/// owner's to choose).
fn empty(dir: &OwnedFd) -> Result<(), TreeError> {
    use std::os::fd::AsRawFd;
    let mode = nix::sys::stat::fstat(dir.as_raw_fd()).map(|s| s.st_mode & 0o7777);
    let emptied = tree::remove_children(dir);
    if let Ok(mode) = mode {
        let mode = nix::sys::stat::Mode::from_bits_truncate(mode);
        if let Err(e) = nix::sys::stat::fchmod(dir.as_raw_fd(), mode) {
            tracing::warn!("cannot give the workspace its mode back: {e}");
        }
    }
    emptied
}

/// Opens checkpoint `id`'s folder, to be read (a diff).
pub fn open(place: &SandboxPlace, limits: &Limits, id: &str) -> Result<OwnedFd, SandboxError> {
    ready(place, limits)?;
    match tree::open_root(&checkpoint_path(place, id)?) {
        Ok(fd) => Ok(fd),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(SandboxError::NoCheckpoint),
        Err(e) => Err(failed("cannot open the checkpoint", e)),
    }
}

/// Deletes checkpoint `id`.
pub fn delete(place: &SandboxPlace, id: &str) -> Result<(), SandboxError> {
    let path = checkpoint_path(place, id)?;
    remove_folder(&path).map_err(|e| failed("cannot delete the checkpoint", e))
}

/// The folder a fork copies from: the workspace, or checkpoint `id`.
pub fn fork_source(
    place: &SandboxPlace,
    limits: &Limits,
    id: Option<&str>,
) -> Result<PathBuf, SandboxError> {
    ready(place, limits)?;
    match id {
        None => Ok(place.workspace.clone()),
        Some(id) => {
            let path = checkpoint_path(place, id)?;
            if path.is_dir() {
                Ok(path)
            } else {
                Err(SandboxError::NoCheckpoint)
            }
        }
    }
}

/// Fills this room's (empty) workspace from another room's folder.
pub fn fork_from(place: &SandboxPlace, limits: &Limits, from: &Path) -> Result<(), SandboxError> {
    ready(place, limits)?;
    let source = tree::open_root(from).map_err(|e| failed("cannot open the source", e))?;
    let need = fitting(place, limits, &source)?;
    let workspace =
        tree::open_root(&place.workspace).map_err(|e| failed("cannot open the workspace", e))?;
    tree::copy(&source, &workspace, Owners::of(place))
        .map(drop)
        .map_err(|e| full_or(e, need))
}

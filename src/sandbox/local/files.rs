//! Files in and out of a room's workspace on this host, without
//! ever leaving it: every path is resolved with `openat2` beneath the
//! workspace and refusing symlinks, so a planted `ln -s / evil` reads and
//! writes nothing of the host.

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::tree;
use super::{Limits, SandboxPlace};
use crate::sandbox::SandboxError;
use crate::sandbox::files::{FileReader, components};
use std::ffi::OsStr;

fn how(flags: OFlag) -> OpenHow {
    let how = OpenHow::new().flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW);
    // openat2 refuses a mode unless it creates.
    let how = if flags.contains(OFlag::O_CREAT) {
        how.mode(Mode::from_bits_truncate(0o644))
    } else {
        how
    };
    how.resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS,
    )
}

fn map_errno(e: Errno) -> SandboxError {
    match e {
        Errno::ENOENT => SandboxError::NoFile,
        Errno::ELOOP => SandboxError::BadPath("passes through a symlink".into()),
        Errno::EXDEV => SandboxError::BadPath("must not leave /workspace".into()),
        Errno::EISDIR => SandboxError::BadPath("is a directory".into()),
        Errno::ENOTDIR => SandboxError::BadPath("a parent is not a directory".into()),
        // A socket (or a device with nothing behind it) cannot be opened.
        Errno::ENXIO => SandboxError::BadPath(NOT_REGULAR.into()),
        Errno::ENOSPC | Errno::EDQUOT | Errno::EFBIG => SandboxError::DiskFull,
        other => SandboxError::Failed(other.desc().to_string()),
    }
}

pub(super) fn io_error(e: std::io::Error) -> SandboxError {
    match e.raw_os_error() {
        Some(code) => map_errno(Errno::from_raw(code)),
        None => SandboxError::Failed(e.to_string()),
    }
}

fn open_at(dir: &impl AsRawFd, name: &str, flags: OFlag) -> Result<OwnedFd, SandboxError> {
    let fd = openat2(dir.as_raw_fd(), name, how(flags)).map_err(map_errno)?;
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn open_workspace(workspace: &Path) -> Result<File, SandboxError> {
    File::open(workspace).map_err(io_error)
}

/// Opens a regular file of the workspace for reading. Opened without
/// blocking (a FIFO with no writer would hold the thread forever), then
/// anything but a regular file is refused.
pub fn open_regular(workspace: &Path, path: &str) -> Result<FileReader, SandboxError> {
    let parts = components(path)?;
    let root = open_workspace(workspace)?;
    let fd = open_at(
        &root,
        &parts.join("/"),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
    )?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(io_error)?;
    if meta.is_dir() {
        return Err(SandboxError::BadPath("is a directory".into()));
    }
    if !meta.is_file() {
        return Err(SandboxError::BadPath(NOT_REGULAR.into()));
    }
    Ok(FileReader {
        len: meta.len(),
        file,
    })
}

/// What a FIFO, socket or device answers.
pub const NOT_REGULAR: &str = "is not a regular file (a FIFO, socket or device is never read)";

/// Reads a regular file of the workspace whole.
pub fn read(workspace: &Path, path: &str) -> Result<Vec<u8>, SandboxError> {
    let FileReader { len, mut file } = open_regular(workspace, path)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes).map_err(io_error)?;
    Ok(bytes)
}

/// An upload being written: a new file beside its target, renamed over it
/// by `finish`; dropped unfinished, the new file is removed (a crash
/// mid-write leaves the old file or none, never a torn one).
pub struct Upload {
    dir: OwnedFd,
    temp: String,
    name: String,
    file: File,
    done: bool,
}

impl Upload {
    /// Starts writing `path` of the workspace, creating its parent
    /// folders; new entries belong to `owner` (the room's uid and gid) when
    /// given.
    pub fn create(
        workspace: &Path,
        path: &str,
        owner: Option<(u32, u32)>,
    ) -> Result<Upload, SandboxError> {
        let parts = components(path)?;
        let (name, parents) = parts
            .split_last()
            .ok_or(SandboxError::BadPath("must name a file".into()))?;
        let mut dir = OwnedFd::from(open_workspace(workspace)?);
        for part in parents {
            dir = match open_at(&dir, part, OFlag::O_RDONLY | OFlag::O_DIRECTORY) {
                Ok(next) => next,
                Err(SandboxError::NoFile) => {
                    nix::sys::stat::mkdirat(
                        Some(dir.as_raw_fd()),
                        *part,
                        Mode::from_bits_truncate(0o755),
                    )
                    .or_else(|e| if e == Errno::EEXIST { Ok(()) } else { Err(e) })
                    .map_err(map_errno)?;
                    let next = open_at(&dir, part, OFlag::O_RDONLY | OFlag::O_DIRECTORY)?;
                    chown(&next, owner)?;
                    next
                }
                Err(SandboxError::BadPath(_)) if is_symlink(&dir, part) => {
                    return Err(SandboxError::BadPath("passes through a symlink".into()));
                }
                Err(e) => return Err(e),
            };
        }
        let temp = format!(".duet-upload-{:016x}", rand::random::<u64>());
        let fd = open_at(
            &dir,
            &temp,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
        )?;
        let mut upload = Upload {
            dir,
            temp,
            name: name.to_string(),
            file: File::from(fd),
            done: false,
        };
        upload.prepare(owner)?;
        Ok(upload)
    }

    /// The new file, to write the bytes to.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Makes the new file the target's: its bytes on disk, then renamed.
    pub fn finish(mut self) -> Result<(), SandboxError> {
        self.file.sync_data().map_err(io_error)?;
        nix::fcntl::renameat(
            Some(self.dir.as_raw_fd()),
            self.temp.as_str(),
            Some(self.dir.as_raw_fd()),
            self.name.as_str(),
        )
        .map_err(map_errno)?;
        self.done = true;
        Ok(())
    }

    /// The new file's owner, and the mode of the file it will replace (an
    /// uploaded script stays executable).
    fn prepare(&mut self, owner: Option<(u32, u32)>) -> Result<(), SandboxError> {
        let fd = self.file.as_fd().try_clone_to_owned().map_err(io_error)?;
        chown(&fd, owner)?;
        let old = nix::sys::stat::fstatat(
            Some(self.dir.as_raw_fd()),
            self.name.as_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        );
        if let Ok(old) = old {
            match old.st_mode & libc::S_IFMT {
                libc::S_IFDIR => return Err(SandboxError::BadPath("is a directory".into())),
                libc::S_IFLNK => {
                    return Err(SandboxError::BadPath("passes through a symlink".into()));
                }
                _ => {}
            }
            nix::sys::stat::fchmod(
                fd.as_raw_fd(),
                Mode::from_bits_truncate(old.st_mode & 0o777),
            )
            .map_err(map_errno)?;
        }
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if !self.done {
            let _ = nix::unistd::unlinkat(
                Some(self.dir.as_raw_fd()),
                self.temp.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// Writes a file of the workspace whole (as an upload does).
#[cfg(test)]
pub fn write(
    workspace: &Path,
    path: &str,
    bytes: &[u8],
    owner: Option<(u32, u32)>,
) -> Result<u64, SandboxError> {
    let upload = Upload::create(workspace, path, owner)?;
    let mut file = upload.file();
    std::io::Write::write_all(&mut file, bytes).map_err(io_error)?;
    upload.finish()?;
    Ok(bytes.len() as u64)
}

fn chown(fd: &OwnedFd, owner: Option<(u32, u32)>) -> Result<(), SandboxError> {
    if let Some((uid, gid)) = owner {
        let id = Some(nix::unistd::Uid::from_raw(uid));
        let gid = Some(nix::unistd::Gid::from_raw(gid));
        nix::unistd::fchown(fd.as_raw_fd(), id, gid).map_err(map_errno)?;
    }
    Ok(())
}

/// Whether entry `name` of folder `dir` is a symlink (not followed).
fn is_symlink(dir: &impl AsRawFd, name: &str) -> bool {
    nix::sys::stat::fstatat(
        Some(dir.as_raw_fd()),
        name,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// Opens the folder `path` of the workspace (its components checked).
/// `listed`: the folder itself is what is asked for (a symlink there is
/// no such folder); otherwise it is on the way to an entry of it.
fn open_folder(place: &SandboxPlace, path: &str, listed: bool) -> Result<OwnedFd, SandboxError> {
    let root =
        tree::open_root(&place.workspace).map_err(|e| SandboxError::Failed(e.to_string()))?;
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
                // A symlink on the way is refused; a file, or a symlink
                // listed as a folder, is no such folder.
                return Err(if !last && is_symlink(&dir, part) {
                    SandboxError::BadPath("passes through a symlink".into())
                } else {
                    SandboxError::NoFile
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
) -> Result<Vec<crate::protocol::DirEntry>, SandboxError> {
    use crate::protocol::{DirEntry, EntryType};
    // A room that never ran has an empty workspace, and no disk yet: a
    // look (the agent's at AGENTS.md) makes none.
    if !place.workspace.exists() {
        if path.trim_matches('/').is_empty() {
            return Ok(Vec::new());
        }
        crate::sandbox::files::components(path)?;
        return Err(SandboxError::NoFile);
    }
    super::ready_workspace(place, limits).map_err(|e| SandboxError::Failed(e.to_string()))?;
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
pub fn delete_path(place: &SandboxPlace, limits: &Limits, path: &str) -> Result<(), SandboxError> {
    let parts = crate::sandbox::files::components(path)?;
    let Some((name, parents)) = parts.split_last() else {
        return Err(SandboxError::BadPath(
            "must name a file under /workspace".into(),
        ));
    };
    if !place.workspace.exists() {
        return Err(SandboxError::NoFile);
    }
    super::ready_workspace(place, limits).map_err(|e| SandboxError::Failed(e.to_string()))?;
    let dir = open_folder(place, &parents.join("/"), false)?;
    tree::remove(&dir, OsStr::new(name)).map_err(|e| {
        if e.is_too_deep() {
            SandboxError::Failed(e.to_string())
        } else {
            map_errno(e.errno)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_and_symlinks_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(
            write(ws.path(), "src/deep/a.txt", b"hello", None).unwrap(),
            5
        );
        assert_eq!(read(ws.path(), "src/deep/a.txt").unwrap(), b"hello");
        assert!(matches!(read(ws.path(), "nope"), Err(SandboxError::NoFile)));
        assert!(matches!(
            read(ws.path(), "src"),
            Err(SandboxError::BadPath(_))
        ));
        std::os::unix::fs::symlink("/", ws.path().join("evil")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", ws.path().join("link")).unwrap();
        assert!(matches!(
            read(ws.path(), "evil/etc/hostname"),
            Err(SandboxError::BadPath(_))
        ));
        assert!(matches!(
            read(ws.path(), "link"),
            Err(SandboxError::BadPath(_))
        ));
        assert!(matches!(
            write(ws.path(), "evil/tmp/x", b"x", None),
            Err(SandboxError::BadPath(_))
        ));
        assert!(matches!(
            write(ws.path(), "link", b"x", None),
            Err(SandboxError::BadPath(_))
        ));
        assert_ne!(std::fs::read_to_string("/etc/hostname").unwrap(), "x");
    }
}

//! The workspace's folders and files by descriptor, as the archive
//! routes walk them (`archive` in, `pack` out): never through a symlink,
//! folders made for the room's owners, errors in the protocol's words.

use super::tree::{self, Owners};
pub(super) use super::tree::{kind, open_at};
use crate::sandbox::SandboxError;
use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{FileStat, Mode};
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};

pub(super) fn failed(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Failed(format!("{what}: {e}"))
}

pub(super) fn errno_of(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

/// A write that ran out of the room's disk is `DiskFull`.
pub(super) fn disk_error(what: &str, errno: Errno) -> SandboxError {
    match errno {
        Errno::ENOSPC | Errno::EDQUOT | Errno::EFBIG => SandboxError::DiskFull,
        e => failed(what, e.desc()),
    }
}

/// A refused member: its name, then why.
pub(super) fn refuse(name: &str, why: &str) -> SandboxError {
    SandboxError::Member(format!("{name}: {why}"))
}

/// The workspace-relative folder `path` as components (empty: the
/// workspace itself).
pub(super) fn folder_parts(path: &str) -> Result<Vec<String>, SandboxError> {
    if path.trim_matches('/').is_empty() {
        return Ok(Vec::new());
    }
    Ok(
        crate::sandbox::files::components(path.trim_end_matches('/'))?
            .into_iter()
            .map(str::to_string)
            .collect(),
    )
}

pub(super) fn stat_at(dir: &OwnedFd, name: &OsStr) -> nix::Result<FileStat> {
    nix::sys::stat::fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW)
}

/// Whether `name` of `dir` is a symlink (opening a symlink as a folder
/// without following it fails with ENOTDIR, or ELOOP).
pub(super) fn is_link(dir: &OwnedFd, name: &OsStr) -> bool {
    stat_at(dir, name).is_ok_and(|st| kind(&st) == libc::S_IFLNK)
}

/// Opens folder `parts` below `root`, never through a symlink; with
/// `make`, absent folders are made (belonging to those owners).
pub(super) fn walk_to(
    root: &OwnedFd,
    parts: &[String],
    make: Option<Owners>,
) -> Result<OwnedFd, SandboxError> {
    let mut dir = root
        .try_clone()
        .map_err(|e| failed("cannot open a folder", e))?;
    for part in parts {
        let name = OsStr::new(part);
        dir = match tree::open_dir(&dir, name) {
            Ok(next) => next,
            Err(Errno::ENOENT) if make.is_some() => {
                make_dir(&dir, name, make)?;
                tree::open_dir(&dir, name).map_err(|e| failed("cannot open a folder", e))?
            }
            Err(Errno::ENOENT) => return Err(SandboxError::NoFile),
            Err(Errno::ELOOP | Errno::ENOTDIR) if is_link(&dir, name) => {
                return Err(SandboxError::BadPath("passes through a symlink".into()));
            }
            Err(Errno::ELOOP | Errno::ENOTDIR) => {
                return Err(SandboxError::BadPath("is not a directory".into()));
            }
            Err(e) => return Err(failed("cannot open a folder", e)),
        };
    }
    Ok(dir)
}

/// Makes folder `name` of `dir` (`0o755`, belonging to `owners`).
pub(super) fn make_dir(
    dir: &OwnedFd,
    name: &OsStr,
    owners: Option<Owners>,
) -> Result<(), SandboxError> {
    match nix::sys::stat::mkdirat(Some(dir.as_raw_fd()), name, Mode::from_bits_truncate(0o755)) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => return Err(disk_error("cannot make a folder", e)),
    }
    if let Some((u, g)) = owner(owners) {
        nix::unistd::fchownat(
            Some(dir.as_raw_fd()),
            name,
            Some(u),
            Some(g),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| failed("cannot give a folder to the room", e))?;
    }
    Ok(())
}

/// The uid and gid files are given (a host folder's group, else the
/// uid's number), when they are given any.
pub(super) fn owner(owners: Option<Owners>) -> Option<(nix::unistd::Uid, nix::unistd::Gid)> {
    let owners = owners?;
    let uid = owners.uid?;
    let gid = owners.gid.unwrap_or(uid);
    Some((
        nix::unistd::Uid::from_raw(uid),
        nix::unistd::Gid::from_raw(gid),
    ))
}

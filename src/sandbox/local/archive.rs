//! A folder into a room's workspace as one tar (docs/protocol.md
//! "Archives"): the archive is unpacked into a staging folder beside the
//! workspace (on the room's disk), each member checked, and moved into
//! place only once all of it arrived and passed, so a refused member or a
//! broken upload leaves the workspace as it was (`pack` is the way out).
//! Blocks: callers run it on a blocking thread.

use super::body::broken;
use super::links::{check_link, stays_inside};
use super::tree::{self, Owners};
use super::walk::{
    disk_error, errno_of, failed, folder_parts, is_link, kind, make_dir, open_at, owner, refuse,
    stat_at, walk_to,
};
use super::{Limits, SandboxPlace, disk};
use crate::sandbox::{Pushed, SandboxError};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode, UtimensatFlags};
use nix::sys::time::TimeSpec;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// The room's staging folder for one push, removed however the push ends.
struct Staging {
    path: std::path::PathBuf,
}

impl Staging {
    fn make(place: &SandboxPlace) -> Result<Staging, SandboxError> {
        // A host folder's is kept beside the room's own place, not the folder.
        let parent = disk::staging_dir(place.quota(), place.home());
        std::fs::create_dir_all(&parent).map_err(|e| failed("cannot make a staging folder", e))?;
        let _ =
            std::fs::set_permissions(&parent, std::os::unix::fs::PermissionsExt::from_mode(0o700));
        // Pushes of a room take turns (its disk lock): anything here is
        // what a server stopped midway left.
        if let Ok(dir) = tree::open_root(&parent)
            && let Err(e) = tree::remove_children(&dir)
        {
            tracing::warn!("removing an earlier push's staging folder failed: {e}");
        }
        let path = parent.join(format!("{:016x}", rand::random::<u64>()));
        std::fs::create_dir(&path)
            .map_err(|e| disk_error("cannot make a staging folder", errno_of(&e)))?;
        Ok(Staging { path })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let (Some(parent), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        if let Ok(parent) = tree::open_root(parent)
            && let Err(e) = tree::remove(&parent, name)
            && e.errno != Errno::ENOENT
        {
            tracing::warn!("removing a push's staging folder failed: {e}");
        }
    }
}

/// A folder the archive holds, whose mode and mtime are set once
/// everything is in place (a read-only folder still takes its files).
struct FolderMeta {
    parts: Vec<String>,
    mode: u32,
    mtime: i64,
}

/// Unpacks the tar (or gzipped tar) read from `body` beneath folder
/// `path` of the workspace, all or nothing; with `mirror`, whatever the
/// folder holds that the archive does not is deleted.
pub fn put(
    place: &SandboxPlace,
    limits: &Limits,
    path: &str,
    body: impl Read,
    mirror: bool,
) -> Result<Pushed, SandboxError> {
    let dest = folder_parts(path)?;
    super::ready_workspace(place, limits)
        .map_err(|e| failed("the workspace is not available", e))?;
    let quota = place.quota();
    // Renames between the staging folder and the workspace need one mount.
    let workspace_root = tree::open_root(&disk::workspace_beside_trash(quota, &place.workspace))
        .map_err(|e| failed("cannot open the workspace", e))?;
    // The destination's existing part must be folders, not symlinks.
    check_destination(&workspace_root, &dest)?;
    let free = super::checkpoints::free_bytes(place, limits)
        .map_err(|e| failed("cannot see the room's free space", e))?;
    let staging = Staging::make(place)?;
    let stage =
        tree::open_root(&staging.path).map_err(|e| failed("cannot open the staging folder", e))?;
    if place.folder.is_some() {
        one_file_system(&stage, &workspace_root)?;
    }
    let mut unpack = Unpack {
        stage: &stage,
        workspace: &workspace_root,
        dest: &dest,
        owners: Owners::of(place),
        budget: free,
        pushed: Pushed::default(),
        folders: Vec::new(),
        checked: HashSet::new(),
        links: Vec::new(),
    };
    unpack.all(body)?;
    let Unpack {
        mut pushed,
        mut folders,
        owners,
        links,
        ..
    } = unpack;
    // Now that all of the archive is there: a link through the archive's
    // other links must still stay inside (`y -> .`, `x -> y/..`).
    for (name, parents, target) in &links {
        if !stays_inside(&stage, parents, target) {
            return Err(refuse(name, "is a symlink out of the folder"));
        }
    }
    let target = walk_to(&workspace_root, &dest, Some(owners))?;
    pushed.deleted = merge(&stage, &target, mirror)?;
    // Deepest first: setting a folder's times after its children's.
    folders.sort_by_key(|f| std::cmp::Reverse(f.parts.len()));
    for folder in folders {
        let Ok(dir) = walk_to(&target, &folder.parts, None) else {
            continue;
        };
        let _ = nix::sys::stat::fchmod(
            dir.as_raw_fd(),
            Mode::from_bits_truncate(folder.mode & 0o777),
        );
        let at = TimeSpec::new(folder.mtime, 0);
        let _ = nix::sys::stat::futimens(dir.as_raw_fd(), &at, &at);
    }
    Ok(pushed)
}

/// A push into a host folder moves its files from the staging folder (in
/// duet's data directory) by renames: both must be on one file system.
fn one_file_system(stage: &OwnedFd, workspace: &OwnedFd) -> Result<(), SandboxError> {
    let device = |fd: &OwnedFd| nix::sys::stat::fstat(fd.as_raw_fd()).map(|s| s.st_dev);
    match (device(stage), device(workspace)) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        _ => Err(failed(
            "a push into this folder",
            "duet's data directory is on another file system than the folder (pushes into it move files by renames)",
        )),
    }
}

/// The destination folder's path inside the workspace, as far as it
/// exists, must be folders (a symlink there is refused).
fn check_destination(root: &OwnedFd, dest: &[String]) -> Result<(), SandboxError> {
    match walk_to(root, dest, None) {
        Ok(_) | Err(SandboxError::NoFile) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One archive being unpacked into the staging folder.
struct Unpack<'a> {
    stage: &'a OwnedFd,
    workspace: &'a OwnedFd,
    dest: &'a [String],
    owners: Owners,
    /// Bytes of the room's disk still free for this push.
    budget: u64,
    pushed: Pushed,
    folders: Vec<FolderMeta>,
    /// Folders (relative to the destination) known not to pass through a
    /// symlink of the workspace.
    checked: HashSet<String>,
    /// The archive's symlinks: name, folders, target.
    links: Vec<(String, Vec<String>, Vec<u8>)>,
}

/// The gzip magic.
const GZIP: [u8; 2] = [0x1f, 0x8b];
/// The disk's block: a file takes its bytes rounded up to whole blocks.
const BLOCK: u64 = 4096;

impl Unpack<'_> {
    fn all(&mut self, body: impl Read) -> Result<(), SandboxError> {
        let mut body = BufReader::with_capacity(64 * 1024, body);
        let head = body.fill_buf().map_err(|e| broken(&e))?;
        if head.starts_with(&GZIP) {
            self.entries(flate2::bufread::MultiGzDecoder::new(body))
        } else {
            self.entries(body)
        }
    }

    fn entries(&mut self, body: impl Read) -> Result<(), SandboxError> {
        let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let mut archive = tar::Archive::new(Counted {
            inner: body,
            read: read.clone(),
        });
        let entries = archive.entries().map_err(|e| broken(&e))?;
        // Where the last member's data ends (its padding included).
        let mut end = 0u64;
        for entry in entries {
            let mut entry = entry.map_err(|e| broken(&e))?;
            end = entry.raw_file_position() + entry.size().div_ceil(512) * 512;
            self.member(&mut entry)?;
        }
        // The tar reader also stops at the end of its input: a tar cut
        // short at a member's end is told by its missing end-of-archive
        // block.
        if read.get() < end + 512 {
            return Err(SandboxError::Member(
                "(archive): is cut short (it has no end-of-archive block)".into(),
            ));
        }
        Ok(())
    }

    fn member(&mut self, entry: &mut tar::Entry<'_, impl Read>) -> Result<(), SandboxError> {
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let Ok(name) = std::str::from_utf8(&raw) else {
            return Err(refuse(&shown, "is not UTF-8"));
        };
        let member_kind = entry.header().entry_type();
        if member_kind.is_pax_global_extensions() {
            return Ok(());
        }
        if name.starts_with('/') {
            return Err(refuse(name, "is absolute"));
        }
        let parts: Vec<String> = name
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_string)
            .collect();
        if parts.iter().any(|p| p == "..") {
            return Err(refuse(name, "leaves the folder"));
        }
        if parts.len() > tree::MAX_DEPTH {
            let why = format!("nests more than {} folders deep", tree::MAX_DEPTH);
            return Err(refuse(&tree::too_deep(name).path, &why));
        }
        if name.contains('\0') {
            return Err(refuse(&shown, "has a NUL in its name"));
        }
        let Some((last, parents)) = parts.split_last() else {
            if member_kind.is_dir() {
                // `./`: the folder itself.
                return Ok(());
            }
            return Err(refuse(name, "has an empty name"));
        };
        use tar::EntryType as T;
        match member_kind {
            T::Regular | T::Continuous | T::Directory | T::Symlink => {}
            T::Link => return Err(refuse(name, "is a hard link")),
            T::Char | T::Block => return Err(refuse(name, "is a device node")),
            T::Fifo => return Err(refuse(name, "is a FIFO")),
            _ => return Err(refuse(name, "is not a folder, a regular file or a symlink")),
        }
        self.check_workspace_parents(name, parents)?;
        let dir = self.stage_parent(name, parents)?;
        let header = entry.header();
        let mode = header.mode().unwrap_or(0o644) & 0o777;
        let mtime = header.mtime().unwrap_or(0) as i64;
        let last = OsStr::new(last.as_str());
        match member_kind {
            T::Directory => {
                match stat_at(&dir, last) {
                    Ok(st) if kind(&st) == libc::S_IFDIR => {}
                    Ok(_) => {
                        clear(&dir, last, name)?;
                        make_dir(&dir, last, Some(self.owners))?;
                    }
                    Err(_) => make_dir(&dir, last, Some(self.owners))?,
                }
                self.folders.push(FolderMeta { parts, mode, mtime });
            }
            T::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                check_link(name, parents.len(), &target)?;
                self.links
                    .push((name.to_string(), parents.to_vec(), target.clone()));
                self.spend(target.len() as u64)?;
                clear(&dir, last, name)?;
                nix::unistd::symlinkat(OsStr::from_bytes(&target), Some(dir.as_raw_fd()), last)
                    .map_err(|e| disk_error("cannot make a symlink", e))?;
                if let Some((u, g)) = owner(Some(self.owners)) {
                    nix::unistd::fchownat(
                        Some(dir.as_raw_fd()),
                        last,
                        Some(u),
                        Some(g),
                        AtFlags::AT_SYMLINK_NOFOLLOW,
                    )
                    .map_err(|e| failed("cannot give a symlink to the room", e))?;
                }
                let at = TimeSpec::new(mtime, 0);
                let _ = nix::sys::stat::utimensat(
                    Some(dir.as_raw_fd()),
                    last,
                    &at,
                    &at,
                    UtimensatFlags::NoFollowSymlink,
                );
            }
            _ => {
                let size = entry.size();
                self.spend(size)?;
                clear(&dir, last, name)?;
                let fd = open_at(
                    &dir,
                    last,
                    OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
                    Mode::S_IRUSR | Mode::S_IWUSR,
                )
                .map_err(|e| disk_error("cannot make a file", e))?;
                if let Some((u, g)) = owner(Some(self.owners)) {
                    nix::unistd::fchown(fd.as_raw_fd(), Some(u), Some(g))
                        .map_err(|e| failed("cannot give a file to the room", e))?;
                }
                let mut file = File::from(fd);
                let written = copy_member(entry, &mut file)?;
                nix::sys::stat::fchmod(file.as_raw_fd(), Mode::from_bits_truncate(mode))
                    .map_err(|e| failed("cannot set a file's mode", e))?;
                let at = TimeSpec::new(mtime, 0);
                nix::sys::stat::futimens(file.as_raw_fd(), &at, &at)
                    .map_err(|e| failed("cannot set a file's time", e))?;
                self.pushed.files += 1;
                self.pushed.bytes += written;
            }
        }
        Ok(())
    }

    /// Counts `bytes` (in whole blocks) against the room's free space; a
    /// member that does not fit is a full disk, before it is written.
    fn spend(&mut self, bytes: u64) -> Result<(), SandboxError> {
        let need = bytes.div_ceil(BLOCK).saturating_mul(BLOCK);
        if need > self.budget {
            return Err(SandboxError::DiskFull);
        }
        self.budget -= need;
        Ok(())
    }

    /// The member's folders, as far as the workspace has them, must not
    /// be symlinks there.
    fn check_workspace_parents(
        &mut self,
        name: &str,
        parents: &[String],
    ) -> Result<(), SandboxError> {
        if parents.is_empty() || self.checked.contains(&parents.join("/")) {
            return Ok(());
        }
        let mut dir = match walk_to(self.workspace, self.dest, None) {
            Ok(dir) => dir,
            // The destination is made by this push: nothing below it exists.
            Err(SandboxError::NoFile) => return Ok(()),
            Err(e) => return Err(e),
        };
        for (i, part) in parents.iter().enumerate() {
            let so_far = parents[..=i].join("/");
            if self.checked.contains(&so_far) {
                dir = match tree::open_dir(&dir, OsStr::new(part)) {
                    Ok(next) => next,
                    Err(_) => return Ok(()),
                };
                continue;
            }
            match stat_at(&dir, OsStr::new(part)) {
                Ok(st) if kind(&st) == libc::S_IFLNK => {
                    return Err(refuse(name, "passes through a symlink"));
                }
                Ok(st) if kind(&st) == libc::S_IFDIR => {
                    self.checked.insert(so_far);
                    dir = tree::open_dir(&dir, OsStr::new(part))
                        .map_err(|_| refuse(name, "passes through a symlink"))?;
                }
                // Absent, or a file the archive's folder will replace.
                _ => {
                    self.checked.insert(so_far);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The member's folder in the staging folder, made as needed; a
    /// symlink of the archive on the way is refused.
    fn stage_parent(&mut self, name: &str, parents: &[String]) -> Result<OwnedFd, SandboxError> {
        let mut dir = self
            .stage
            .try_clone()
            .map_err(|e| failed("cannot open a folder", e))?;
        for part in parents {
            let part = OsStr::new(part.as_str());
            dir = match tree::open_dir(&dir, part) {
                Ok(next) => next,
                Err(Errno::ENOENT) => {
                    make_dir(&dir, part, Some(self.owners))?;
                    tree::open_dir(&dir, part).map_err(|e| failed("cannot open a folder", e))?
                }
                Err(Errno::ELOOP | Errno::ENOTDIR) if is_link(&dir, part) => {
                    return Err(refuse(name, "passes through a symlink"));
                }
                Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(refuse(name, "is inside a file")),
                Err(e) => return Err(failed("cannot open a folder", e)),
            };
        }
        Ok(dir)
    }
}

/// Removes what an earlier member put at `name` (a later one wins).
fn clear(dir: &OwnedFd, name: &OsStr, member: &str) -> Result<(), SandboxError> {
    match tree::remove(dir, name) {
        Ok(()) => Ok(()),
        Err(e) if e.errno == Errno::ENOENT => Ok(()),
        Err(e) => Err(failed(&format!("{member}: cannot replace it"), e)),
    }
}

/// A reader that counts what was read from it.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// Copies a member's bytes into `file`; answers how many.
fn copy_member(entry: &mut impl Read, file: &mut File) -> Result<u64, SandboxError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match entry.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(broken(&e)),
        };
        file.write_all(&buf[..n])
            .map_err(|e| disk_error("cannot write a file", errno_of(&e)))?;
        total += n as u64;
    }
}

/// Moves everything of the staging folder `from` into the folder `to`:
/// a file or symlink replaces what is there, a folder merges with a
/// folder (anything else there is replaced). With `mirror`, entries of
/// `to` that `from` lacks are deleted. Answers the paths deleted.
fn merge(from: &OwnedFd, to: &OwnedFd, mirror: bool) -> Result<u64, SandboxError> {
    let move_failed = |e: tree::TreeError| disk_error("cannot move the push into place", e.errno);
    let staged = tree::entries(from).map_err(|e| failed("cannot list the staging folder", e))?;
    let mut deleted = 0;
    if mirror {
        let names: HashSet<&OsString> = staged.iter().map(|(n, _)| n).collect();
        let there = tree::entries(to).map_err(|e| failed("cannot list the workspace", e))?;
        for (name, _) in there.iter().filter(|(n, _)| !names.contains(n)) {
            deleted += count(to, name);
            tree::remove(to, name).map_err(move_failed)?;
        }
    }
    for (name, stat) in staged {
        let existing = stat_at(to, &name).ok();
        let merges =
            kind(&stat) == libc::S_IFDIR && existing.is_some_and(|st| kind(&st) == libc::S_IFDIR);
        if merges {
            let sub_from = tree::open_dir(from, &name)
                .map_err(|e| failed("cannot open the staging folder", e))?;
            let sub_to = tree::open_dir(to, &name)
                .map_err(|e| failed("cannot open a folder of the workspace", e))?;
            deleted += merge(&sub_from, &sub_to, mirror)?;
            continue;
        }
        let folder_in_the_way = existing.is_some_and(|st| kind(&st) == libc::S_IFDIR);
        if folder_in_the_way || (kind(&stat) == libc::S_IFDIR && existing.is_some()) {
            tree::remove(to, &name).map_err(move_failed)?;
        }
        nix::fcntl::renameat(
            Some(from.as_raw_fd()),
            name.as_os_str(),
            Some(to.as_raw_fd()),
            name.as_os_str(),
        )
        .map_err(|e| disk_error("cannot move the push into place", e))?;
    }
    Ok(deleted)
}

/// How many paths `name` of `dir` is (a folder counts with everything in it).
fn count(dir: &OwnedFd, name: &OsStr) -> u64 {
    count_below(dir, name, 0)
}

/// `count` of an entry `depth` levels down (what is deeper than
/// `tree::MAX_DEPTH` counts as one: its deletion is refused anyway).
fn count_below(dir: &OwnedFd, name: &OsStr, depth: usize) -> u64 {
    if depth > tree::MAX_DEPTH {
        return 1;
    }
    let Ok(sub) = tree::open_dir(dir, name) else {
        return 1;
    };
    let Ok(list) = tree::entries(&sub) else {
        return 1;
    };
    1 + list
        .iter()
        .map(|(n, st)| {
            if kind(st) == libc::S_IFDIR {
                count_below(&sub, n, depth + 1)
            } else {
                1
            }
        })
        .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_through_the_archive_s_own_links_must_stay_inside() {
        let stage = tempfile::tempdir().unwrap();
        let s = stage.path();
        std::fs::create_dir_all(s.join("a/b")).unwrap();
        std::os::unix::fs::symlink(".", s.join("here")).unwrap();
        std::os::unix::fs::symlink("a/b", s.join("deep")).unwrap();
        std::os::unix::fs::symlink("loop", s.join("loop")).unwrap();
        let root = tree::open_root(s).unwrap();
        let no_parents: &[String] = &[];
        // Lexically inside, but `here` is the folder itself: `..` leaves it.
        assert!(!stays_inside(&root, no_parents, b"here/.."));
        // `deep` is two folders down: two `..` come back to the top.
        assert!(stays_inside(&root, no_parents, b"deep/../.."));
        assert!(!stays_inside(&root, no_parents, b"deep/../../.."));
        assert!(stays_inside(&root, &["a".to_string()], b"../deep/x"));
        assert!(!stays_inside(&root, no_parents, b"loop"));
        assert!(stays_inside(&root, no_parents, b"absent/../a"));
    }
}

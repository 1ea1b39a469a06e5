//! Whole folders of a room's disk, walked by descriptor: listing one,
//! measuring, copying and deleting a tree. Every step opens the next
//! entry relative to its folder's descriptor with `O_NOFOLLOW`, so a
//! command that swaps a folder for a symlink while a checkpoint copies
//! it cannot make the server read or delete anything outside the tree.

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, UtimensatFlags};
use nix::sys::time::TimeSpec;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How deep folders may nest in a tree the server walks: measuring,
/// deleting and merging go a call deeper per level, and a command can
/// make a tree of any depth; deeper ones are refused (`too_deep`), never
/// a thread's stack overflowed. A file's path is refused deeper too.
pub use crate::sandbox::files::MAX_DEPTH;

/// The errno of a tree too deep (`MAX_DEPTH`): a walk never meets it
/// otherwise, as names read from a folder are never too long.
const TOO_DEEP: Errno = Errno::ENAMETOOLONG;

/// The failure of a walk that reached `MAX_DEPTH` at `path`.
pub fn too_deep(path: &str) -> TreeError {
    // Its first levels say where: the whole path may be very long.
    let shown: Vec<&str> = path.split('/').take(8).collect();
    TreeError {
        errno: TOO_DEEP,
        path: format!("{}/…", shown.join("/")),
    }
}

/// A failure, with the path (inside the tree) it happened at.
#[derive(Debug)]
pub struct TreeError {
    pub errno: Errno,
    pub path: String,
}

impl TreeError {
    /// Whether the tree nests deeper than `MAX_DEPTH`.
    pub fn is_too_deep(&self) -> bool {
        self.errno == TOO_DEEP
    }

    /// Whether the disk (or the room's quota) is full.
    pub fn is_full(&self) -> bool {
        matches!(self.errno, Errno::ENOSPC | Errno::EDQUOT | Errno::EFBIG)
    }
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_too_deep() {
            write!(f, "{}: folders nest more than {MAX_DEPTH} deep", self.path)
        } else if self.path.is_empty() {
            write!(f, "{}", self.errno.desc())
        } else {
            write!(f, "{}: {}", self.path, self.errno.desc())
        }
    }
}

type Result<T> = std::result::Result<T, TreeError>;

/// Where in the tree a step is, for error messages.
fn at(errno: Errno, parent: &str, name: &OsStr) -> TreeError {
    TreeError {
        errno,
        path: join(parent, name),
    }
}

fn join(parent: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if parent.is_empty() {
        name.into_owned()
    } else {
        format!("{parent}/{name}")
    }
}

/// The kind of file a stat says (`S_IFREG`, `S_IFDIR`, `S_IFLNK`…).
pub(super) fn kind(stat: &FileStat) -> libc::mode_t {
    stat.st_mode & libc::S_IFMT
}

/// Opens `name` in `dir` without following a symlink.
pub(super) fn open_at(
    dir: &OwnedFd,
    name: &OsStr,
    flags: OFlag,
    mode: Mode,
) -> nix::Result<OwnedFd> {
    let fd = nix::fcntl::openat(
        Some(dir.as_raw_fd()),
        name,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        mode,
    )?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the folder `name` of `dir` (never through a symlink).
pub fn open_dir(dir: &OwnedFd, name: &OsStr) -> nix::Result<OwnedFd> {
    open_at(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
}

/// Opens a folder of the host by path (the tree's root).
pub fn open_root(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(OwnedFd::from(File::open(path)?))
}

/// The entries of a folder (not `.` and `..`) with their own metadata
/// (a symlink's, not its target's), sorted by name.
pub fn entries(dir: &OwnedFd) -> nix::Result<Vec<(OsString, FileStat)>> {
    let mut listing = nix::dir::Dir::openat(
        Some(dir.as_raw_fd()),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut found = Vec::new();
    for entry in listing.iter() {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        match nix::sys::stat::fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => found.push((name.to_os_string(), stat)),
            // Deleted while we looked: it is not there.
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// What a tree holds: the bytes of its files (lengths; a symlink counts
/// its target's) and the disk blocks they take, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub disk: u64,
}

/// Measures the tree below `dir`.
pub fn usage(dir: &OwnedFd) -> Result<Usage> {
    usage_below(dir, "", 0)
}

fn usage_below(dir: &OwnedFd, path: &str, depth: usize) -> Result<Usage> {
    if depth > MAX_DEPTH {
        return Err(too_deep(path));
    }
    let mut total = Usage::default();
    let list = entries(dir).map_err(|errno| TreeError {
        errno,
        path: path.to_string(),
    })?;
    for (name, stat) in list {
        total.disk += stat.st_blocks as u64 * 512;
        match kind(&stat) {
            libc::S_IFREG | libc::S_IFLNK => total.bytes += stat.st_size as u64,
            libc::S_IFDIR => {
                let sub = open_dir(dir, &name).map_err(|e| at(e, path, &name))?;
                let below = usage_below(&sub, &join(path, &name), depth + 1)?;
                total.bytes += below.bytes;
                total.disk += below.disk;
            }
            _ => {}
        }
    }
    Ok(total)
}

/// Who the copies belong to: a room's uid and gid, or, with none,
/// whoever runs the server.
#[derive(Debug, Clone, Copy)]
pub struct Owners {
    pub uid: Option<u32>,
    /// The group, when not the uid's number (a host folder's).
    pub gid: Option<u32>,
}

impl Owners {
    /// The copies belong to the room of `uid` (the server is root), or
    /// to the server.
    pub fn room(uid: Option<u32>) -> Owners {
        Owners {
            uid: uid.filter(|_| nix::unistd::geteuid().is_root()),
            gid: None,
        }
    }

    /// The copies belong to the room of `place` (its uid and gid, the
    /// server being root), or to the server.
    pub fn of(place: &super::SandboxPlace) -> Owners {
        let owner = place.owner();
        Owners {
            uid: Owners::room(owner.map(|(uid, _)| uid)).uid,
            gid: owner.map(|(_, gid)| gid),
        }
    }

    fn chown_args(self) -> Option<(nix::unistd::Uid, nix::unistd::Gid)> {
        self.uid.map(|u| {
            let g = self.gid.unwrap_or(u);
            (nix::unistd::Uid::from_raw(u), nix::unistd::Gid::from_raw(g))
        })
    }
}

/// Copies everything below `src` into the folder `dst` (which should be
/// empty): files with their mode and times, folders, symlinks as links;
/// other kinds are left out. Answers the bytes copied (as `usage`).
/// Folders are copied by a few threads at once: a copy is mostly
/// system calls, one file at a time.
pub fn copy(src: &OwnedFd, dst: &OwnedFd, owners: Owners) -> Result<u64> {
    let first = Folder {
        from: src.try_clone().map_err(|e| TreeError {
            errno: errno_of(e),
            path: String::new(),
        })?,
        to: dst.try_clone().map_err(|e| TreeError {
            errno: errno_of(e),
            path: String::new(),
        })?,
        path: String::new(),
        stat: None,
    };
    let walk = Walk {
        queue: std::sync::Mutex::new(Queue {
            folders: vec![first],
            busy: 0,
        }),
        ready: std::sync::Condvar::new(),
        bytes: std::sync::atomic::AtomicU64::new(0),
        failed: std::sync::Mutex::new(None),
        owners,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| walk.work());
        }
    });
    match walk.failed.into_inner() {
        Ok(Some(e)) => Err(e),
        Ok(None) => Ok(walk.bytes.into_inner()),
        Err(_) => Err(TreeError {
            errno: Errno::EIO,
            path: String::new(),
        }),
    }
}

/// A folder to copy: its entries, then its own mode and times.
struct Folder {
    from: OwnedFd,
    to: OwnedFd,
    path: String,
    /// Its metadata (none for the tree's root, which keeps its own).
    stat: Option<FileStat>,
}

struct Queue {
    folders: Vec<Folder>,
    /// Threads copying a folder now (they may add more).
    busy: usize,
}

/// A copy shared by its threads.
struct Walk {
    queue: std::sync::Mutex<Queue>,
    ready: std::sync::Condvar,
    bytes: std::sync::atomic::AtomicU64,
    failed: std::sync::Mutex<Option<TreeError>>,
    owners: Owners,
}

impl Walk {
    /// Takes folders until none is left and no thread may add one.
    fn work(&self) {
        loop {
            let Ok(mut queue) = self.queue.lock() else {
                return;
            };
            let folder = loop {
                if let Some(folder) = queue.folders.pop() {
                    break folder;
                }
                if queue.busy == 0 {
                    self.ready.notify_all();
                    return;
                }
                queue = match self.ready.wait(queue) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            };
            queue.busy += 1;
            drop(queue);
            let copied = self.folder(folder);
            if let Err(e) = copied
                && let Ok(mut failed) = self.failed.lock()
            {
                failed.get_or_insert(e);
            }
            let Ok(mut queue) = self.queue.lock() else {
                return;
            };
            queue.busy -= 1;
            if self.failed.lock().is_ok_and(|f| f.is_some()) {
                // One failure ends the copy: nothing more is taken.
                queue.folders.clear();
            }
            self.ready.notify_all();
        }
    }

    /// Copies a folder's own entries; its subfolders are made and queued.
    fn folder(&self, folder: Folder) -> Result<()> {
        let Folder {
            from,
            to,
            path,
            stat,
        } = folder;
        let owners = self.owners;
        let list = entries(&from).map_err(|errno| TreeError {
            errno,
            path: path.clone(),
        })?;
        let mut bytes = 0;
        let mut found = Vec::new();
        for (name, stat) in list {
            let fail = |e| at(e, &path, &name);
            match kind(&stat) {
                libc::S_IFREG => bytes += copy_file(&from, &to, &name, owners).map_err(fail)?,
                libc::S_IFLNK => {
                    bytes += copy_link(&from, &to, &name, &stat, owners).map_err(fail)?
                }
                libc::S_IFDIR => {
                    let sub_from = open_dir(&from, &name).map_err(fail)?;
                    nix::sys::stat::mkdirat(Some(to.as_raw_fd()), name.as_os_str(), Mode::S_IRWXU)
                        .map_err(fail)?;
                    let sub_to = open_dir(&to, &name).map_err(fail)?;
                    found.push(Folder {
                        from: sub_from,
                        to: sub_to,
                        path: join(&path, &name),
                        stat: Some(stat),
                    });
                }
                _ => {}
            }
        }
        self.bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        // Its entries are made (what its subfolders get does not touch
        // its times), so its own metadata can go on now.
        if let Some(stat) = stat {
            keep_metadata(&to, &stat, owners).map_err(|e| TreeError {
                errno: e,
                path: path.clone(),
            })?;
        }
        if !found.is_empty()
            && let Ok(mut queue) = self.queue.lock()
        {
            queue.folders.extend(found);
            self.ready.notify_all();
        }
        Ok(())
    }
}

fn copy_file(src: &OwnedFd, dst: &OwnedFd, name: &OsStr, owners: Owners) -> nix::Result<u64> {
    // O_NONBLOCK: a file swapped for a FIFO meanwhile does not hang us.
    let from = open_at(
        src,
        name,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        Mode::empty(),
    )?;
    let stat = nix::sys::stat::fstat(from.as_raw_fd())?;
    if kind(&stat) != libc::S_IFREG {
        return Ok(0);
    }
    let to = open_at(
        dst,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
        Mode::S_IRUSR | Mode::S_IWUSR,
    )?;
    let (mut from, mut to) = (File::from(from), File::from(to));
    // std copies file to file in the kernel (copy_file_range).
    let copied = std::io::copy(&mut from, &mut to).map_err(errno_of)?;
    keep_metadata(&OwnedFd::from(to), &stat, owners)?;
    Ok(copied)
}

fn copy_link(
    src: &OwnedFd,
    dst: &OwnedFd,
    name: &OsStr,
    stat: &FileStat,
    owners: Owners,
) -> nix::Result<u64> {
    let target = nix::fcntl::readlinkat(Some(src.as_raw_fd()), name)?;
    nix::unistd::symlinkat(target.as_os_str(), Some(dst.as_raw_fd()), name)?;
    if let Some((uid, gid)) = owners.chown_args() {
        nix::unistd::fchownat(
            Some(dst.as_raw_fd()),
            name,
            Some(uid),
            Some(gid),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
    }
    let (atime, mtime) = times(stat);
    nix::sys::stat::utimensat(
        Some(dst.as_raw_fd()),
        name,
        &atime,
        &mtime,
        UtimensatFlags::NoFollowSymlink,
    )?;
    Ok(target.len() as u64)
}

fn times(stat: &FileStat) -> (TimeSpec, TimeSpec) {
    (
        TimeSpec::new(stat.st_atime, stat.st_atime_nsec),
        TimeSpec::new(stat.st_mtime, stat.st_mtime_nsec),
    )
}

/// Gives `fd` the owner, mode and times of `stat`.
fn keep_metadata(fd: &OwnedFd, stat: &FileStat, owners: Owners) -> nix::Result<()> {
    if let Some((uid, gid)) = owners.chown_args() {
        nix::unistd::fchown(fd.as_raw_fd(), Some(uid), Some(gid))?;
    }
    // After the owner: chown clears set-uid bits.
    nix::sys::stat::fchmod(
        fd.as_raw_fd(),
        Mode::from_bits_truncate(stat.st_mode & 0o7777),
    )?;
    let (atime, mtime) = times(stat);
    nix::sys::stat::futimens(fd.as_raw_fd(), &atime, &mtime)
}

fn errno_of(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

/// Deletes `name` of `dir`: a file or symlink itself, or a folder with
/// everything in it (opening up folders a command made unreadable).
pub fn remove(dir: &OwnedFd, name: &OsStr) -> Result<()> {
    remove_at(dir, name, "", 0)
}

fn remove_at(dir: &OwnedFd, name: &OsStr, path: &str, depth: usize) -> Result<()> {
    let fail = |e| at(e, path, name);
    let stat = nix::sys::stat::fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .map_err(fail)?;
    if kind(&stat) == libc::S_IFDIR {
        let sub = match open_dir(dir, name) {
            Err(Errno::EACCES) => {
                nix::sys::stat::fchmodat(
                    Some(dir.as_raw_fd()),
                    name,
                    Mode::S_IRWXU,
                    nix::sys::stat::FchmodatFlags::FollowSymlink,
                )
                .map_err(fail)?;
                open_dir(dir, name)
            }
            other => other,
        }
        .map_err(fail)?;
        remove_children_below(&sub, &join(path, name), depth + 1)?;
        nix::unistd::unlinkat(
            Some(dir.as_raw_fd()),
            name,
            nix::unistd::UnlinkatFlags::RemoveDir,
        )
        .map_err(fail)
    } else {
        nix::unistd::unlinkat(
            Some(dir.as_raw_fd()),
            name,
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
        .map_err(fail)
    }
}

/// Moves every entry of the folder `from` into the folder `to` (renames:
/// both on one mount).
pub fn move_children(from: &OwnedFd, to: &OwnedFd) -> Result<()> {
    let list = entries(from).map_err(|errno| TreeError {
        errno,
        path: String::new(),
    })?;
    for (name, _) in list {
        nix::fcntl::renameat(
            Some(from.as_raw_fd()),
            name.as_os_str(),
            Some(to.as_raw_fd()),
            name.as_os_str(),
        )
        .map_err(|e| at(e, "", &name))?;
    }
    Ok(())
}

/// Deletes everything in the folder `dir`, which stays.
pub fn remove_children(dir: &OwnedFd) -> Result<()> {
    remove_children_below(dir, "", 0)
}

fn remove_children_below(dir: &OwnedFd, path: &str, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep(path));
    }
    if let Err(errno) = nix::sys::stat::fchmod(dir.as_raw_fd(), Mode::S_IRWXU) {
        // Only its owner (or root) may; deleting may still work.
        tracing::debug!("cannot open up {path:?}: {errno}");
    }
    let list = entries(dir).map_err(|errno| TreeError {
        errno,
        path: path.to_string(),
    })?;
    for (name, _) in list {
        match remove_at(dir, &name, path, depth) {
            Err(e) if e.errno == Errno::ENOENT => {}
            other => other?,
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;

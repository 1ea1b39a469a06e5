//! What changed in a room's workspace since a checkpoint, as a git diff
//! (docs/protocol.md "Archives", "The diff"): both trees are walked by
//! descriptor (never through a symlink), files whose size, mtime and mode
//! match are taken as unchanged, and only the others are read and handed
//! to `gitdiff`. Blocks: callers run it on a blocking thread.

use super::tree;
use super::walk::failed;
use super::{Limits, SandboxPlace, checkpoints};
use crate::sandbox::SandboxError;
use crate::sandbox::gitdiff::{self, Kind, Side};
use nix::fcntl::OFlag;
use nix::sys::stat::{FileStat, Mode};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};

/// A file or symlink of a tree, as its metadata says.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node {
    link: bool,
    mode: u32,
    size: i64,
    mtime: (i64, i64),
}

impl Node {
    fn of(stat: &FileStat) -> Option<Node> {
        let link = match stat.st_mode & libc::S_IFMT {
            libc::S_IFREG => false,
            libc::S_IFLNK => true,
            _ => return None,
        };
        Some(Node {
            link,
            mode: stat.st_mode & 0o777,
            size: stat.st_size,
            mtime: (stat.st_mtime, stat.st_mtime_nsec),
        })
    }
}

/// Path (relative to the tree's root) to node, in byte order of path.
type Listing = BTreeMap<String, Node>;

/// Whether `path` is one of `filters` or inside one (no filters: all).
fn wanted(path: &str, filters: &[String]) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            path == f
                || (path.len() > f.len()
                    && path.starts_with(f.as_str())
                    && path.as_bytes()[f.len()] == b'/')
        })
}

/// Whether the folder `path` may hold something `filters` want.
fn may_hold(path: &str, filters: &[String]) -> bool {
    filters.is_empty()
        || filters
            .iter()
            .any(|f| wanted(path, std::slice::from_ref(f)) || f.starts_with(&format!("{path}/")))
}

/// The files and symlinks below `root` that `filters` want.
fn list(root: &OwnedFd, filters: &[String]) -> Result<Listing, SandboxError> {
    let mut found = Listing::new();
    let mut folders = vec![(
        root.try_clone()
            .map_err(|e| failed("cannot open a folder", e))?,
        String::new(),
    )];
    while let Some((dir, prefix)) = folders.pop() {
        let entries =
            tree::entries(&dir).map_err(|e| failed(&format!("cannot list {prefix:?}"), e))?;
        for (name, stat) in entries {
            let path = if prefix.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{prefix}/{}", name.to_string_lossy())
            };
            if stat.st_mode & libc::S_IFMT == libc::S_IFDIR {
                if may_hold(&path, filters)
                    && let Ok(sub) = tree::open_dir(&dir, &name)
                {
                    folders.push((sub, path));
                }
            } else if let Some(node) = Node::of(&stat)
                && wanted(&path, filters)
            {
                found.insert(path, node);
            }
        }
    }
    Ok(found)
}

/// Reads a file's bytes (or a symlink's target) at `path` below `root`,
/// never through a symlink; `None` when it went away meanwhile.
fn read(root: &OwnedFd, path: &str, node: &Node) -> Option<Vec<u8>> {
    let (parents, name) = match path.rsplit_once('/') {
        Some((p, n)) => (p, n),
        None => ("", path),
    };
    let mut dir = root.try_clone().ok()?;
    for part in parents.split('/').filter(|p| !p.is_empty()) {
        dir = tree::open_dir(&dir, OsStr::new(part)).ok()?;
    }
    if node.link {
        let target = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), name).ok()?;
        return Some(target.into_encoded_bytes());
    }
    let fd = tree::open_at(
        &dir,
        OsStr::new(name),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let mut file = std::fs::File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn side<'a>(node: &Node, bytes: &'a [u8]) -> Side<'a> {
    Side {
        kind: if node.link {
            Kind::Symlink
        } else {
            Kind::file(node.mode)
        },
        bytes,
    }
}

/// The diff of the workspace now against checkpoint `id`, limited to
/// `filters` (workspace-relative paths; none: everything).
pub fn diff(
    place: &SandboxPlace,
    limits: &Limits,
    id: &str,
    filters: &[String],
) -> Result<String, SandboxError> {
    let before = checkpoints::open(place, limits, id)?;
    let now = match tree::open_root(&place.workspace) {
        Ok(fd) => Some(fd),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(failed("cannot open the workspace", e)),
    };
    let old = list(&before, filters)?;
    let new = match &now {
        Some(root) => list(root, filters)?,
        None => Listing::new(),
    };
    let mut paths: Vec<&String> = old.keys().chain(new.keys()).collect();
    paths.sort_unstable();
    paths.dedup();
    let mut out = String::new();
    for path in paths {
        let (o, n) = (old.get(path), new.get(path));
        if let (Some(o), Some(n)) = (o, n)
            && o == n
        {
            continue;
        }
        let old_bytes = o.and_then(|node| read(&before, path, node));
        let new_bytes = match (n, &now) {
            (Some(node), Some(root)) => read(root, path, node),
            _ => None,
        };
        let old_side = o.zip(old_bytes.as_deref()).map(|(node, b)| side(node, b));
        let new_side = n.zip(new_bytes.as_deref()).map(|(node, b)| side(node, b));
        gitdiff::file_diff(path, old_side, new_side, &mut out);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_a_file_or_a_folder() {
        let f = vec!["src".to_string(), "README.md".to_string()];
        assert!(wanted("src/a.rs", &f));
        assert!(wanted("README.md", &f));
        assert!(!wanted("srcx/a.rs", &f));
        assert!(may_hold("src", &f));
        assert!(!may_hold("docs", &f));
        let deep = vec!["a/b/c.txt".to_string()];
        assert!(may_hold("a", &deep) && may_hold("a/b", &deep));
        assert!(wanted("anything", &[]));
    }
}

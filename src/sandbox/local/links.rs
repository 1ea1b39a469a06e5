//! A pushed symlink must stay inside the folder pushed into: its target
//! as written, and resolved through the archive's own symlinks once all
//! of it is staged (`y -> .`, then `x -> y/..`, leaves).

use super::tree;
use super::walk::{is_link, refuse};
use crate::sandbox::SandboxError;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// A symlink's target must be relative and stay inside the folder pushed
/// into (`depth`: the folders between it and the link).
pub(super) fn check_link(name: &str, depth: usize, target: &[u8]) -> Result<(), SandboxError> {
    if target.is_empty() {
        return Err(refuse(name, "is a symlink to nothing"));
    }
    if target.starts_with(b"/") {
        return Err(refuse(
            name,
            "is a symlink out of the folder (absolute target)",
        ));
    }
    let mut level = depth as i64;
    for part in target.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                level -= 1;
                if level < 0 {
                    return Err(refuse(name, "is a symlink out of the folder"));
                }
            }
            _ => level += 1,
        }
    }
    Ok(())
}

/// Whether `target`, a symlink's in folder `parents` of the staged tree
/// `stage`, resolves inside it, following the staged symlinks on the way
/// as the kernel would (what is not staged is taken as written).
pub(super) fn stays_inside(stage: &OwnedFd, parents: &[String], target: &[u8]) -> bool {
    /// Links followed at most (the kernel's own bound).
    const MAX_LINKS: usize = 40;
    let mut at: Vec<String> = parents.to_vec();
    let mut todo: std::collections::VecDeque<Vec<u8>> =
        target.split(|&b| b == b'/').map(<[u8]>::to_vec).collect();
    let mut followed = 0;
    while let Some(part) = todo.pop_front() {
        match part.as_slice() {
            b"" | b"." => {}
            b".." => {
                if at.pop().is_none() {
                    return false;
                }
            }
            name => match staged_link(stage, &at, OsStr::from_bytes(name)) {
                Some(next) => {
                    followed += 1;
                    if followed > MAX_LINKS || next.starts_with(b"/") {
                        return false;
                    }
                    for piece in next.split(|&b| b == b'/').rev() {
                        todo.push_front(piece.to_vec());
                    }
                }
                None => at.push(String::from_utf8_lossy(name).into_owned()),
            },
        }
    }
    true
}

/// The target of `name` in folder `at` of the staged tree, if it is a
/// symlink there.
fn staged_link(stage: &OwnedFd, at: &[String], name: &OsStr) -> Option<Vec<u8>> {
    let mut dir = stage.try_clone().ok()?;
    for part in at {
        dir = tree::open_dir(&dir, OsStr::new(part)).ok()?;
    }
    if !is_link(&dir, name) {
        return None;
    }
    let target = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), name).ok()?;
    Some(target.into_encoded_bytes())
}

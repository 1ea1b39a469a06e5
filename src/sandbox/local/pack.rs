//! A folder of a room's workspace out as one tar (docs/protocol.md
//! "Archives"): walked by descriptor (never following a symlink) and
//! written as it is read, into an answer's body a few chunks at a time.
//! Blocks: callers run it on a blocking thread.

use super::tree;
use super::walk::{failed, folder_parts, kind, open_at, walk_to};
use super::{Limits, SandboxPlace};
use crate::sandbox::SandboxError;
use nix::fcntl::OFlag;
use nix::sys::stat::{FileStat, Mode};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// Opens folder `path` of the workspace to be archived: absent is
/// `NoFile`, a file `is not a directory`. `None`: the whole workspace of a
/// room that never ran, which is empty (and is not made for a look).
pub fn open_folder(
    place: &SandboxPlace,
    limits: &Limits,
    path: &str,
) -> Result<Option<OwnedFd>, SandboxError> {
    let parts = folder_parts(path)?;
    // A room that never ran has an empty workspace, and no folder in it.
    if !place.workspace.exists() {
        return if parts.is_empty() {
            Ok(None)
        } else {
            Err(SandboxError::NoFile)
        };
    }
    super::ready_workspace(place, limits)
        .map_err(|e| failed("the workspace is not available", e))?;
    let root =
        tree::open_root(&place.workspace).map_err(|e| failed("cannot open the workspace", e))?;
    walk_to(&root, &parts, None).map(Some)
}

/// Writes the tree below `root` (none: an empty folder) as a tar to `out`:
/// each folder's entries in byte order of name, a folder before what it
/// holds; folders, regular files and symlinks (as links) with their
/// permission bits and mtime.
pub fn write_tar(root: Option<OwnedFd>, out: impl Write) -> std::io::Result<()> {
    let mut tar = tar::Builder::new(out);
    let Some(root) = root else {
        return tar.into_inner()?.flush();
    };
    // (folder, its path, its entries not yet written, last first)
    let list = sorted_last_first(&root)?;
    let mut folders = vec![(root, String::new(), list)];
    while let Some((dir, prefix, mut list)) = folders.pop() {
        let Some((name, stat)) = list.pop() else {
            continue;
        };
        let path = if prefix.is_empty() {
            name.to_string_lossy().into_owned()
        } else {
            format!("{prefix}/{}", name.to_string_lossy())
        };
        let mut header = tar::Header::new_gnu();
        header.set_mode(stat.st_mode & 0o777);
        header.set_mtime(stat.st_mtime.max(0) as u64);
        header.set_uid(0);
        header.set_gid(0);
        match kind(&stat) {
            libc::S_IFDIR => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, &path, std::io::empty())?;
                let sub = tree::open_dir(&dir, &name).map_err(std::io::Error::from);
                folders.push((dir, prefix, list));
                if let Ok(sub) = sub {
                    let inner = sorted_last_first(&sub)?;
                    folders.push((sub, path, inner));
                }
                continue;
            }
            libc::S_IFREG => {
                // O_NONBLOCK: a file swapped for a FIFO meanwhile does not hang us.
                if let Ok(fd) = open_at(
                    &dir,
                    &name,
                    OFlag::O_RDONLY | OFlag::O_NONBLOCK,
                    Mode::empty(),
                ) && nix::sys::stat::fstat(fd.as_raw_fd())
                    .is_ok_and(|st| kind(&st) == libc::S_IFREG)
                {
                    let len = stat.st_size.max(0) as u64;
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(len);
                    // Exactly `len` bytes even when it changes meanwhile.
                    let body = File::from(fd).take(len).chain(std::io::repeat(0)).take(len);
                    tar.append_data(&mut header, &path, body)?;
                }
            }
            libc::S_IFLNK => {
                if let Ok(target) = nix::fcntl::readlinkat(Some(dir.as_raw_fd()), name.as_os_str())
                {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_size(0);
                    tar.append_link(&mut header, &path, Path::new(&target))?;
                }
            }
            _ => {}
        }
        folders.push((dir, prefix, list));
    }
    tar.into_inner()?.flush()
}

fn sorted_last_first(dir: &OwnedFd) -> std::io::Result<Vec<(OsString, FileStat)>> {
    let mut list = tree::entries(dir).map_err(std::io::Error::from)?;
    list.reverse();
    Ok(list)
}

/// Writes a tar into an answer's body: 64 KiB chunks over a channel; a
/// body nobody reads any more is a broken pipe.
pub struct ChunkWriter {
    chunks: tokio::sync::mpsc::Sender<Result<bytes::Bytes, SandboxError>>,
    buf: Vec<u8>,
}

const OUT_CHUNK: usize = 64 * 1024;

impl ChunkWriter {
    pub fn new(chunks: tokio::sync::mpsc::Sender<Result<bytes::Bytes, SandboxError>>) -> Self {
        ChunkWriter {
            chunks,
            buf: Vec::with_capacity(OUT_CHUNK),
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = bytes::Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(OUT_CHUNK),
        ));
        self.chunks
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(OUT_CHUNK - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() >= OUT_CHUNK {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

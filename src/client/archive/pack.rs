//! A folder's entries as a tar, written on a thread of its own into a
//! request body as it is sent (memory flat): modes and mtimes kept,
//! symlinks as links, names as they are (GNU long names past 100 bytes).
//! Each file's git blob id is taken as it is read, for the manifest.

use super::pipe::{ChannelWriter, body_channel};
use super::walk::{Entry, Kind};
use sha1::{Digest, Sha1};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Called with the bytes of file content packed so far (the progress bar).
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// The blob ids of the files packed, by path.
pub type Hashes = BTreeMap<String, String>;

/// Packs entries into request bodies, one per attempt, and keeps the
/// last attempt's thread to learn the files' hashes.
pub struct Packer {
    root: PathBuf,
    entries: Arc<Vec<Entry>>,
    progress: Option<Progress>,
    last: Mutex<Option<std::thread::JoinHandle<std::io::Result<Hashes>>>>,
}

impl Packer {
    pub fn new(root: &Path, entries: Vec<Entry>, progress: Option<Progress>) -> Packer {
        Packer {
            root: root.to_path_buf(),
            entries: Arc::new(entries),
            progress,
            last: Mutex::new(None),
        }
    }

    /// A body that streams the tar as a thread writes it.
    pub fn body(&self) -> reqwest::Body {
        let (writer, body) = body_channel();
        let root = self.root.clone();
        let entries = self.entries.clone();
        let progress = self.progress.clone();
        let handle = std::thread::spawn(move || pack(&root, &entries, writer, progress));
        if let Ok(mut last) = self.last.lock() {
            *last = Some(handle);
        }
        body
    }

    /// The hashes the last body's files had (after it was sent).
    pub fn hashes(&self) -> std::io::Result<Hashes> {
        let handle = self.last.lock().ok().and_then(|mut last| last.take());
        match handle.map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the packing thread failed")),
            None => Ok(Hashes::new()),
        }
    }
}

/// Writes the tar of `entries` into `writer`; a failure ends the body
/// with the error, so the request fails instead of sending half a tar.
fn pack(
    root: &Path,
    entries: &[Entry],
    writer: ChannelWriter,
    progress: Option<Progress>,
) -> std::io::Result<Hashes> {
    let mut builder = tar::Builder::new(writer);
    let mut hashes = Hashes::new();
    let mut packed = 0u64;
    let mut packing = || {
        for entry in entries {
            if let Some(hash) = append(&mut builder, root, entry)? {
                hashes.insert(entry.rel.clone(), hash);
                packed += entry.size;
                if let Some(progress) = &progress {
                    progress(packed);
                }
            }
        }
        builder.finish()?;
        std::io::Write::flush(builder.get_mut())
    };
    match packing() {
        Ok(()) => Ok(hashes),
        Err(err) => {
            // The body ends with the error before anything else is sent.
            builder
                .get_mut()
                .fail(std::io::Error::new(err.kind(), err.to_string()));
            Err(err)
        }
    }
}

/// Appends one entry; answers a file's blob id.
fn append(
    builder: &mut tar::Builder<ChannelWriter>,
    root: &Path,
    entry: &Entry,
) -> std::io::Result<Option<String>> {
    let mut header = tar::Header::new_gnu();
    header.set_mode(entry.mode);
    header.set_mtime(u64::try_from(entry.mtime).unwrap_or(0));
    header.set_uid(0);
    header.set_gid(0);
    match &entry.kind {
        Kind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            builder.append_data(&mut header, format!("{}/", entry.rel), std::io::empty())?;
            Ok(None)
        }
        Kind::Symlink(target) => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            builder.append_link(&mut header, &entry.rel, target)?;
            Ok(None)
        }
        Kind::File => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(entry.size);
            let file = std::fs::File::open(root.join(&entry.rel))?;
            let mut reader = Hashing::new(file, entry.size, &entry.rel);
            builder.append_data(&mut header, &entry.rel, &mut reader)?;
            reader.done().map(Some)
        }
    }
}

/// Reads a file's first `size` bytes (as the header says) and its git blob
/// id; a file that shrank meanwhile is an error, not a short member.
struct Hashing<'a> {
    inner: std::io::Take<std::fs::File>,
    left: u64,
    sha: Sha1,
    rel: &'a str,
}

impl<'a> Hashing<'a> {
    fn new(file: std::fs::File, size: u64, rel: &'a str) -> Self {
        let mut sha = Sha1::new();
        sha.update(format!("blob {size}\0").as_bytes());
        Hashing {
            inner: file.take(size),
            left: size,
            sha,
            rel,
        }
    }

    fn done(self) -> std::io::Result<String> {
        if self.left > 0 {
            return Err(self.shrank());
        }
        Ok(hex(&self.sha.finalize()))
    }

    fn shrank(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{} changed while it was pushed", self.rel),
        )
    }
}

impl Read for Hashing<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        if n == 0 && self.left > 0 {
            return Err(self.shrank());
        }
        let read = out.get(..n).unwrap_or_default();
        self.sha.update(read);
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The git blob id of a local file, read now.
pub fn blob_id(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut sha = Sha1::new();
    sha.update(format!("blob {size}\0").as_bytes());
    std::io::copy(&mut (&mut file).take(size), &mut ShaWriter(&mut sha))?;
    Ok(hex(&sha.finalize()))
}

/// A `Write` into a hash.
struct ShaWriter<'a>(&'a mut Sha1);

impl std::io::Write for ShaWriter<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.update(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

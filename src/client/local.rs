//! The embedded backend of a data directory: a lock held by the process
//! that runs it and a port file saying where it listens, so that a second
//! `duet` (or `duet exec`) on the same machine joins it instead of starting
//! another.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The lock file held for as long as the embedded backend runs.
pub fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("duet.lock")
}

/// The file naming the embedded backend's URL.
pub fn port_path(data_dir: &Path) -> PathBuf {
    data_dir.join("duet.port")
}

/// The embedded backend's token, readable by its owner alone.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("duet.token")
}

/// The embedded backend's token: made at random the first time, then kept
/// (mode 0600) in the data directory. Without it any user of the machine
/// could join the loopback backend and run commands in its rooms; the
/// clients that find the backend through the data directory read it here.
pub fn embedded_token(data_dir: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = token_path(data_dir);
    if let Ok(text) = std::fs::read_to_string(&path)
        && !text.trim().is_empty()
    {
        return Ok(text.trim().to_string());
    }
    std::fs::create_dir_all(data_dir)?;
    let token = new_token();
    let tmp = path.with_extension("token.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    writeln!(file, "{token}")?;
    file.sync_all()?;
    // Two clients starting at once: the first to rename wins, and both
    // read what won.
    std::fs::hard_link(&tmp, &path).or_else(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Ok(())
        } else {
            Err(e)
        }
    })?;
    let _ = std::fs::remove_file(&tmp);
    Ok(std::fs::read_to_string(&path)?.trim().to_string())
}

/// A fresh token: 22 letters and digits (over 128 bits of chance), short
/// enough that a join hint carrying it fits an 80-column status bar.
fn new_token() -> String {
    use rand::RngExt;
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..22)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

/// The first of the ports an embedded backend prefers.
pub const FIRST_PORT: u16 = 20_000;
/// How many ports, from `FIRST_PORT`, embedded backends prefer.
pub const PORTS: u16 = 10_000;

/// The port the embedded backend of `data_dir` listens on when it is free:
/// derived from the directory, so that it is the same each time the
/// backend starts (a join hint stays valid across restarts and takeovers)
/// and differs between people's directories. Below Linux's ephemeral
/// ports, so that outgoing connections rarely hold it.
pub fn preferred_port(data_dir: &Path) -> u16 {
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    // FNV-1a: the same in every build (std's hasher is seeded).
    let mut hash: u32 = 0x811c_9dc5;
    for byte in dir.as_os_str().as_encoded_bytes() {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    FIRST_PORT + (hash % u32::from(PORTS)) as u16
}

/// The log file of the embedded backend and the client.
pub fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("duet.log")
}

/// Held by the process whose backend serves the data directory; released
/// when dropped (or when the process dies).
#[derive(Debug)]
pub struct BackendLock {
    _file: File,
    port_file: PathBuf,
}

impl BackendLock {
    /// Takes the lock of `data_dir`, creating the directory; `None` when
    /// another process holds it.
    pub fn try_acquire(data_dir: &Path) -> std::io::Result<Option<BackendLock>> {
        std::fs::create_dir_all(data_dir)?;
        let file = private_file(
            File::options().create(true).truncate(false).write(true),
            &lock_path(data_dir),
        )?;
        if !try_lock(&file)? {
            return Ok(None);
        }
        Ok(Some(BackendLock {
            _file: file,
            port_file: port_path(data_dir),
        }))
    }

    /// Writes the port file (atomically: a reader never sees half of it).
    pub fn publish(&self, url: &str) -> std::io::Result<()> {
        let tmp = self.port_file.with_extension("port.tmp");
        let mut file = private_file(
            File::options().create(true).truncate(true).write(true),
            &tmp,
        )?;
        writeln!(file, "{url}")?;
        file.sync_all()?;
        std::fs::rename(&tmp, &self.port_file)
    }
}

impl Drop for BackendLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.port_file);
    }
}

/// Opens `path` with `options`, created 0600 (and made 0600 if an older
/// `duet` left it readable by others), as every file of the data directory.
pub(crate) fn private_file(
    options: &mut std::fs::OpenOptions,
    path: &Path,
) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let file = options.mode(0o600).open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// The URL of the backend running for `data_dir`, if one runs: the lock is
/// held by someone and the port file names a URL.
pub fn running_backend(data_dir: &Path) -> Option<String> {
    let file = File::options().write(true).open(lock_path(data_dir)).ok()?;
    if try_lock(&file).ok()? {
        // Nobody holds it: whatever the port file says is stale.
        return None;
    }
    let text = std::fs::read_to_string(port_path(data_dir)).ok()?;
    let url = text.trim();
    (!url.is_empty()).then(|| url.to_string())
}

/// Takes `file`'s exclusive lock without waiting (`flock` on Unix, as
/// before): `false` when someone else holds it.
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(err)) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_token_is_made_once_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let token = embedded_token(dir.path()).unwrap();
        assert_eq!(token.len(), 22);
        assert!(token.chars().all(|c| c.is_ascii_alphanumeric()), "{token}");
        assert_eq!(embedded_token(dir.path()).unwrap(), token);
        let mode = std::fs::metadata(token_path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_preferred_port_is_the_same_for_a_directory_and_in_range() {
        let a = tempfile::tempdir().unwrap();
        let port = preferred_port(a.path());
        assert_eq!(preferred_port(a.path()), port);
        assert!((FIRST_PORT..FIRST_PORT + PORTS).contains(&port));
    }

    #[test]
    fn a_second_process_finds_the_backend_through_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(running_backend(dir.path()), None);
        let lock = BackendLock::try_acquire(dir.path()).unwrap().unwrap();
        lock.publish("http://127.0.0.1:4242").unwrap();
        // flock locks belong to open file descriptions: a second open in
        // this process conflicts just as another process would.
        assert!(BackendLock::try_acquire(dir.path()).unwrap().is_none());
        assert_eq!(
            running_backend(dir.path()).as_deref(),
            Some("http://127.0.0.1:4242")
        );
        drop(lock);
        assert_eq!(running_backend(dir.path()), None);
        assert!(BackendLock::try_acquire(dir.path()).unwrap().is_some());
    }

    #[test]
    fn the_lock_and_port_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        // An older duet's lock, readable by everyone.
        std::fs::write(lock_path(dir.path()), "").unwrap();
        std::fs::set_permissions(
            lock_path(dir.path()),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let lock = BackendLock::try_acquire(dir.path()).unwrap().unwrap();
        lock.publish("http://127.0.0.1:4242").unwrap();
        assert_eq!(mode(&lock_path(dir.path())), 0o600);
        assert_eq!(mode(&port_path(dir.path())), 0o600);
    }
}

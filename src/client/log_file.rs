//! `duet.log`, the log of the client and of its embedded backend:
//! readable by its owner alone (it names rooms, hosts and failures), and
//! rotated so it cannot grow forever: past [`LIMIT`] bytes it becomes
//! `duet.log.1` (replacing the one before) and a new one starts.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes a log file holds before it is rotated.
pub const LIMIT: u64 = 8 << 20;

/// Opens `path` for appending, private as every file of the data
/// directory (see `local::private_file`).
pub fn open_private(path: &Path) -> std::io::Result<File> {
    crate::client::local::private_file(File::options().create(true).append(true), path)
}

/// The log being written, rotated once it passes its limit.
#[derive(Debug)]
pub struct RotatingLog {
    path: PathBuf,
    file: File,
    size: u64,
    limit: u64,
}

impl RotatingLog {
    /// Opens `path` with the [`LIMIT`]; a file already past it is rotated
    /// first.
    pub fn open(path: &Path) -> std::io::Result<RotatingLog> {
        RotatingLog::with_limit(path, LIMIT)
    }

    /// As `open`, rotating past `limit` bytes.
    pub fn with_limit(path: &Path, limit: u64) -> std::io::Result<RotatingLog> {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if size >= limit {
            std::fs::rename(path, rotated(path))?;
        }
        let file = open_private(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingLog {
            path: path.to_path_buf(),
            file,
            size,
            limit,
        })
    }

    /// `duet.log` becomes `duet.log.1`; a new `duet.log` starts.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        std::fs::rename(&self.path, rotated(&self.path))?;
        self.file = open_private(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

/// Where a rotated log goes: `duet.log.1` beside `duet.log`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

impl Write for RotatingLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.size >= self.limit {
            self.rotate()?;
        }
        let written = self.file.write(buf)?;
        self.size += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_log_is_private_and_rotated_past_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("duet.log");
        // An older duet's log, readable by everyone.
        std::fs::write(&path, "old line\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut log = RotatingLog::with_limit(&path, 20).unwrap();
        assert_eq!(mode(&path), 0o600);
        log.write_all(b"first 12345\n").unwrap();
        log.write_all(b"second\n").unwrap();
        log.flush().unwrap();
        let rotated = rotated(&path);
        assert_eq!(
            std::fs::read_to_string(&rotated).unwrap(),
            "old line\nfirst 12345\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&rotated), 0o600);
        // Past the limit again: one rotated file is kept, the newest.
        log.write_all(b"third 1234567890123\n").unwrap();
        log.write_all(b"fourth\n").unwrap();
        log.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&rotated).unwrap(),
            "second\nthird 1234567890123\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "fourth\n");
        // Opened again past its limit, it is rotated first.
        drop(log);
        std::fs::write(&path, "x".repeat(30)).unwrap();
        let _log = RotatingLog::with_limit(&path, 20).unwrap();
        assert_eq!(std::fs::read_to_string(&rotated).unwrap().len(), 30);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}

/// Logs go to `duet.log` in the data directory (0600, rotated: see
/// `client::log_file`), never to the terminal the UI draws on. Without a
/// writable file there are no logs.
pub fn init_logging(data_dir: &Path) {
    if std::fs::create_dir_all(data_dir).is_err() {
        return;
    }
    let Ok(file) = RotatingLog::open(&crate::client::local::log_path(data_dir)) else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

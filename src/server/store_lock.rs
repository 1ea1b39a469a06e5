//! One process at a time on a data directory: the store holds an
//! exclusive lock beside its database for as long as its thread runs.

use super::store::StoreError;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long `open` waits for another holder of the database's lock: a
/// store of this process that is closing, or a server that is stopping.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(3);

/// Takes the exclusive lock of database `path` (`flock` of `PATH.lock`),
/// waiting up to `wait` for whoever holds it.
pub(super) async fn lock_database(
    path: &Path,
    wait: Duration,
) -> Result<std::fs::File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    // The owner's alone, as everything of the data directory.
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(PathBuf::from(name))
        .map_err(StoreError::Lock)?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => return Err(StoreError::InUse),
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::Lock(e)),
        }
    }
}

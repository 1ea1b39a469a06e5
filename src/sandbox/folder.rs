//! A room that works on a folder of the host (`duet --workspace DIR`):
//! which room is bound to which folder, kept in the data directory as one
//! small file per room (`folders/{room}` holding the folder's path), so
//! that whichever process runs the data directory's backend opens that
//! room on the folder, now and after a restart. Only someone who may
//! write the data directory (its backend's owner) can bind a folder.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// The file that binds `room` to a folder.
fn binding_path(data_dir: &Path, room: &str) -> PathBuf {
    data_dir.join("folders").join(room)
}

/// The folder `room` works on, if it is bound to one (and its id is a
/// plain room id: nothing else names a file here).
pub fn bound(data_dir: &Path, room: &str) -> Option<PathBuf> {
    if !crate::protocol::valid_room_id(room) {
        return None;
    }
    let bytes = std::fs::read(binding_path(data_dir, room)).ok()?;
    let path = PathBuf::from(OsString::from_vec(bytes));
    path.is_absolute().then_some(path)
}

/// Binds `room` to `folder` (an absolute path), replacing any binding it
/// had; written beside and renamed, so a reader never sees half of it.
pub fn bind(data_dir: &Path, room: &str, folder: &Path) -> io::Result<()> {
    if !crate::protocol::valid_room_id(room) || !folder.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a folder binding needs a room id and an absolute path",
        ));
    }
    let file = binding_path(data_dir, room);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut name = file.as_os_str().to_os_string();
    name.push(".new");
    let new = PathBuf::from(name);
    std::fs::write(&new, folder.as_os_str().as_bytes())?;
    std::fs::rename(&new, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_is_read_back_and_only_for_plain_room_ids() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(bound(dir.path(), "app"), None);
        bind(dir.path(), "app", Path::new("/home/ada/src/app")).unwrap();
        assert_eq!(
            bound(dir.path(), "app"),
            Some(PathBuf::from("/home/ada/src/app"))
        );
        bind(dir.path(), "app", Path::new("/srv/other")).unwrap();
        assert_eq!(bound(dir.path(), "app"), Some(PathBuf::from("/srv/other")));
        assert!(bind(dir.path(), "../app", Path::new("/srv")).is_err());
        assert!(bind(dir.path(), "app", Path::new("relative")).is_err());
        assert_eq!(bound(dir.path(), "../folders/app"), None);
    }
}

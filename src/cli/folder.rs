//! `duet --workspace DIR`: plain `duet` opens a room of the embedded
//! backend whose `/workspace` is DIR itself. The folder names its room
//! (its name and a hash of its path: the same folder, the same room and
//! history); the binding is kept in the data directory, where whichever
//! `duet` runs the backend finds it (`sandbox::folder`).

use super::ClientArgs;
use crate::config::ClientSettings;
use anyhow::{Context, bail};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Checks that DIR can be a room's workspace here and binds its room to
/// it; answers the room.
pub fn bind(dir: &Path, args: &ClientArgs, settings: &ClientSettings) -> anyhow::Result<String> {
    if settings.server.is_some() {
        bail!(
            "--workspace opens a room of this machine's own backend on one of its folders; \
             it does not go with --server (or DUET_SERVER), a backend elsewhere"
        );
    }
    let folder = std::fs::canonicalize(dir).with_context(|| format!("{}", dir.display()))?;
    let meta = std::fs::metadata(&folder).with_context(|| format!("{}", folder.display()))?;
    if !meta.is_dir() {
        bail!("{}: not a folder", folder.display());
    }
    let data = std::fs::canonicalize(&settings.data_dir).unwrap_or(settings.data_dir.clone());
    if data.starts_with(&folder) || folder.starts_with(&data) {
        bail!(
            "{} and duet's data directory {} hold one another: a room on it would see \
             duet's own files",
            folder.display(),
            data.display()
        );
    }
    let room = room_for(&folder);
    if let Some(asked) = &args.room
        && *asked != room
    {
        bail!(
            "--workspace names its room ({room}, the same each time for this folder); \
             it does not go with --room (or DUET_ROOM) {asked}"
        );
    }
    if nix::unistd::geteuid().is_root() && meta.uid() == 0 {
        bail!(
            "{} belongs to root, and a room never runs as root: give the folder to a user \
             (chown -R USER {0}) or run duet as its owner",
            folder.display()
        );
    }
    std::fs::create_dir_all(&settings.data_dir)
        .and_then(|()| crate::sandbox::folder::bind(&settings.data_dir, &room, &folder))
        .with_context(|| format!("cannot keep the folder's room in {}", data.display()))?;
    Ok(room)
}

/// The room of a folder: its name made a room id, and six hex digits of
/// its path's hash (two folders of one name are two rooms).
pub fn room_for(folder: &Path) -> String {
    // FNV-1a: stable across builds and runs, unlike the std hasher.
    let hash = folder
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut base = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '-'
        };
        if !(c == '-' && base.ends_with('-')) && base.len() < 40 {
            base.push(c);
        }
    }
    let base = base.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let base = if base.is_empty() { "folder" } else { base };
    format!("{base}-{:06x}", hash & 0xff_ffff)
}

/// A folder as the status bar shows it: beneath the home folder, with `~`.
pub fn shown(folder: &Path) -> String {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h.parent().is_some());
    match home.as_deref().and_then(|h| folder.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Some(rest) => format!("~/{}", rest.display()),
        None => folder.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_names_one_room_id_of_its_own() {
        let app = room_for(Path::new("/home/ada/src/app"));
        assert!(app.starts_with("app-") && app.len() == 10, "{app}");
        assert_eq!(app, room_for(Path::new("/home/ada/src/app")));
        assert_ne!(app, room_for(Path::new("/home/bob/src/app")));
        for dir in [
            "/",
            "/srv/--x y.z--",
            "/srv/écrit",
            "/srv/a-very-long-name-of-a-folder-that-goes-on-and-on",
        ] {
            let room = room_for(Path::new(dir));
            assert!(crate::protocol::valid_room_id(&room), "{dir}: {room}");
        }
        assert!(room_for(Path::new("/srv/--x y.z--")).starts_with("x-y-z-"));
        assert!(room_for(Path::new("/")).starts_with("folder-"));
    }
}

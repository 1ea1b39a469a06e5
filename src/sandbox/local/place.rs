//! Where a room's sandbox lives on the host: its workspace folder (and
//! the folders beside it), its uid, the helper binary that starts it.

use super::{Limits, disk, enforcement};
use std::path::PathBuf;

/// Where a room's sandbox lives on the host and as whom it runs.
#[derive(Debug, Clone)]
pub struct SandboxPlace {
    /// The room id (for logs).
    pub room: String,
    /// Host directory mounted as `/workspace`.
    pub workspace: PathBuf,
    /// Host uid the sandbox runs as when the server is root.
    pub uid: Option<u32>,
}

/// The workspace exists, with its quota mounted where there is one.
pub(super) fn ready_workspace(place: &SandboxPlace, limits: &Limits) -> std::io::Result<()> {
    disk::prepare(
        enforcement().quota,
        &place.workspace,
        limits.disk_bytes,
        place.uid,
    )
}

/// The binary to start as `duet sandbox-init`: this one, unless
/// `DUET_HELPER_EXE` names another (tests of the library use the built
/// `duet` binary).
pub(super) fn helper_exe() -> std::io::Result<PathBuf> {
    match std::env::var_os("DUET_HELPER_EXE") {
        Some(path) => Ok(PathBuf::from(path)),
        None => std::env::current_exe(),
    }
}

/// Deletes a workspace and the container root beside it, never following
/// a symlink out of them; directories a command made unreadable are
/// opened up first.
pub(super) fn remove_workspace(workspace: &std::path::Path) -> Result<(), String> {
    let mut errors = Vec::new();
    let beside = |suffix: &str| {
        let mut name = workspace.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    for dir in [
        workspace.to_path_buf(),
        beside(".root"),
        beside(".checkpoints"),
        beside(".staging"),
    ] {
        if !dir.exists() {
            continue;
        }
        if std::fs::remove_dir_all(&dir).is_err() {
            open_up(&dir);
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                errors.push(format!("cannot delete {}: {e}", dir.display()));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Gives the owner rwx on every directory below `dir` (not following links).
fn open_up(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&entry.path());
            }
        }
    }
}

/// The host directory of a room's workspace: `opaque` is a random name kept
/// with the room, so that host paths (visible in the sandbox's mount table)
/// say nothing of the room.
pub fn workspace_dir(data_dir: &std::path::Path, opaque: &str) -> PathBuf {
    data_dir.join("workspaces").join(opaque)
}

/// Unmounts every workspace image of `data_dir` (the server stops; the
/// images stay and are mounted again when their rooms next run).
pub fn release_all(data_dir: &std::path::Path) {
    let root = workspace_dir(data_dir, "");
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    for target in mounts.lines().filter_map(|l| l.split_whitespace().nth(1)) {
        if std::path::Path::new(target).starts_with(&root) {
            let _ = nix::mount::umount2(target, nix::mount::MntFlags::MNT_DETACH);
        }
    }
}

/// The host uid of a room's sandbox when the server runs as root: each room
/// has its own. `slot` is a number kept with the room, unique per server;
/// the data directory picks one of 60,000 ranges of 65,536 uids, so that
/// two servers on one machine (an embedded one beside `duet serve`) do not
/// share uids.
pub fn room_uid(data_dir: &std::path::Path, slot: u32) -> Option<u32> {
    let root = nix::unistd::geteuid().is_root();
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    // FNV-1a: stable across builds and runs, unlike the std hasher.
    let hash = dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        });
    let range = (hash % 60_000) as u32;
    root.then(|| 200_000 + range * 65_536 + (slot % 65_536))
}

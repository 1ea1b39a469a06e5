//! The room's disk quota. As root, a workspace is an ext4 image of the
//! room's size, loop-mounted on the workspace folder for the life of the
//! room: filling it gives ENOSPC to that room alone. Elsewhere the
//! per-file size limit (RLIMIT_FSIZE) is what holds.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How workspaces are bounded on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// Loop-mounted ext4 image per room.
    Image,
    /// Only the per-file cap.
    PerFile,
}

impl Quota {
    pub fn detect() -> Quota {
        let root = nix::unistd::geteuid().is_root();
        if root && super::program_exists("mkfs.ext4") && super::program_exists("mount") {
            Quota::Image
        } else {
            Quota::PerFile
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Quota::Image => "per-room disk quota (loop-mounted ext4 image)",
            Quota::PerFile => {
                "no per-room disk quota (needs root and mkfs.ext4): per-file size cap only"
            }
        }
    }
}

fn image_of(workspace: &Path) -> PathBuf {
    let mut name = workspace.as_os_str().to_os_string();
    name.push(".img");
    PathBuf::from(name)
}

/// Whether `dir` is a mount point (its device differs from its parent's).
fn is_mount_point(dir: &Path) -> bool {
    let (Ok(here), Some(Ok(parent))) =
        (std::fs::metadata(dir), dir.parent().map(std::fs::metadata))
    else {
        return false;
    };
    here.dev() != parent.dev()
}

/// Makes sure the workspace exists (and, with a quota, is mounted), owned
/// by `uid` when given.
pub fn prepare(quota: Quota, workspace: &Path, bytes: u64, uid: Option<u32>) -> io::Result<()> {
    std::fs::create_dir_all(workspace)?;
    if quota == Quota::Image && !is_mount_point(workspace) {
        let image = image_of(workspace);
        let fresh = !image.exists();
        if fresh {
            let file = std::fs::File::create(&image)?;
            file.set_len(bytes)?;
            let owner = uid
                .map(|u| format!("root_owner={u}:{u}"))
                .unwrap_or_else(|| "root_owner=0:0".into());
            run(Command::new("mkfs.ext4")
                .args(["-q", "-F", "-m", "0", "-E"])
                .arg(owner)
                .arg(&image))?;
        }
        run(Command::new("mount")
            .args(["-o", "loop,nosuid"])
            .arg(&image)
            .arg(workspace))?;
        if fresh {
            let _ = std::fs::remove_dir(workspace.join("lost+found"));
        }
    }
    if let Some(uid) = uid {
        let (user, group) = (
            nix::unistd::Uid::from_raw(uid),
            nix::unistd::Gid::from_raw(uid),
        );
        nix::unistd::chown(workspace, Some(user), Some(group)).map_err(io::Error::from)?;
    }
    Ok(())
}

/// Unmounts the workspace's image, if any, and deletes it.
pub fn release(workspace: &Path) -> io::Result<()> {
    if is_mount_point(workspace) {
        nix::mount::umount2(workspace, nix::mount::MntFlags::MNT_DETACH)
            .map_err(io::Error::from)?;
    }
    let image = image_of(workspace);
    if image.exists() {
        std::fs::remove_file(image)?;
    }
    Ok(())
}

fn run(command: &mut Command) -> io::Result<()> {
    let out = command.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{:?} failed: {}",
            command.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

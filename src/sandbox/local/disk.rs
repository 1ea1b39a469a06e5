//! The room's disk quota. As root, a room's disk is an ext4 image of the
//! room's size, loop-mounted on `<workspace>.disk` for the life of the
//! room; it holds `workspace/` (bound onto the workspace folder) and
//! `checkpoints/`, so filling either gives ENOSPC to that room alone.
//! Elsewhere the per-file size limit (RLIMIT_FSIZE) is what holds, and
//! checkpoints live in a plain `<workspace>.checkpoints` folder.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
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

/// `workspace` with `suffix` added to its name: the room's other places.
fn beside(workspace: &Path, suffix: &str) -> PathBuf {
    let mut name = workspace.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn image_of(workspace: &Path) -> PathBuf {
    beside(workspace, ".img")
}

/// Where the image is mounted.
fn disk_of(workspace: &Path) -> PathBuf {
    beside(workspace, ".disk")
}

/// The folder of the room's checkpoints (one folder each, by id).
pub fn checkpoints_dir(quota: Quota, workspace: &Path) -> PathBuf {
    match quota {
        Quota::Image => disk_of(workspace).join("checkpoints"),
        Quota::PerFile => beside(workspace, ".checkpoints"),
    }
}

/// Where a restore moves the workspace's old files before deleting them:
/// on the workspace's own mount, so that moving is a rename.
pub fn trash_dir(quota: Quota, workspace: &Path) -> PathBuf {
    match quota {
        Quota::Image => disk_of(workspace).join("trash"),
        Quota::PerFile => beside(workspace, ".trash"),
    }
}

/// Where a push unpacks its archive before it moves into the workspace:
/// on the workspace's own mount (and the room's disk), so that moving is
/// a rename and a push counts against the room's quota.
pub fn staging_dir(quota: Quota, workspace: &Path) -> PathBuf {
    match quota {
        Quota::Image => disk_of(workspace).join("staging"),
        Quota::PerFile => beside(workspace, ".staging"),
    }
}

/// The workspace's folder as the trash's mount sees it.
pub fn workspace_beside_trash(quota: Quota, workspace: &Path) -> PathBuf {
    match quota {
        Quota::Image => disk_of(workspace).join("workspace"),
        Quota::PerFile => workspace.to_path_buf(),
    }
}

/// Bytes the room may still fill: the image's free space, or (without
/// one) `bytes` less what the workspace and its checkpoints hold.
pub fn free_bytes(quota: Quota, workspace: &Path, bytes: u64) -> io::Result<u64> {
    match quota {
        Quota::Image => free_on_host(&disk_of(workspace)),
        Quota::PerFile => {
            let mut used = 0;
            for dir in [workspace.to_path_buf(), checkpoints_dir(quota, workspace)] {
                if dir.exists() {
                    let root = super::tree::open_root(&dir)?;
                    used += super::tree::usage(&root)
                        .map_err(|e| io::Error::other(e.to_string()))?
                        .disk;
                }
            }
            Ok(bytes.saturating_sub(used))
        }
    }
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

/// The mark of an image laid out as `workspace/` and `checkpoints/`
/// (images made before checkpoints held the workspace's files at their
/// root).
const LAYOUT_MARK: &str = ".duet-layout-2";
/// Where an old image's files gather before they become `workspace/`.
const MOVING: &str = ".duet-moving";

/// The workspaces being readied or released now: one change at a time
/// per room, since a file read that readies a workspace while a cleanup
/// releases it would stack a second mount on the first, which the release
/// would leave behind. Other rooms go on meanwhile.
static CHANGING: std::sync::Mutex<BTreeSet<PathBuf>> = std::sync::Mutex::new(BTreeSet::new());
static CHANGED: std::sync::Condvar = std::sync::Condvar::new();

/// Runs `change` while nothing else readies or releases `workspace`.
pub fn exclusively<T>(workspace: &Path, change: impl FnOnce() -> T) -> T {
    let mut busy = changing();
    while busy.contains(workspace) {
        busy = CHANGED
            .wait(busy)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    busy.insert(workspace.to_path_buf());
    drop(busy);
    let _done = Done(workspace);
    change()
}

fn changing() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    CHANGING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Frees its workspace for the next change however this one ends.
struct Done<'a>(&'a Path);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        changing().remove(self.0);
        CHANGED.notify_all();
    }
}

/// Makes sure the workspace exists (and, with a quota, is mounted), owned
/// by `uid` when given, and the checkpoints' folder beside it.
pub fn prepare(quota: Quota, workspace: &Path, bytes: u64, uid: Option<u32>) -> io::Result<()> {
    exclusively(workspace, || prepare_alone(quota, workspace, bytes, uid))
}

fn prepare_alone(quota: Quota, workspace: &Path, bytes: u64, uid: Option<u32>) -> io::Result<()> {
    std::fs::create_dir_all(workspace)?;
    if quota == Quota::Image && !is_mount_point(workspace) {
        let disk = disk_of(workspace);
        std::fs::create_dir_all(&disk)?;
        if !is_mount_point(&disk) {
            mount_image(workspace, &disk, bytes, uid)?;
        }
        lay_out(&disk)?;
        nix::mount::mount(
            Some(&disk.join("workspace")),
            workspace,
            None::<&str>,
            nix::mount::MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|e| io::Error::other(format!("cannot bind the workspace: {e}")))?;
    }
    let checkpoints = checkpoints_dir(quota, workspace);
    std::fs::create_dir_all(&checkpoints)?;
    std::fs::set_permissions(&checkpoints, std::fs::Permissions::from_mode(0o700))?;
    if let Some(uid) = uid {
        let (user, group) = (
            nix::unistd::Uid::from_raw(uid),
            nix::unistd::Gid::from_raw(uid),
        );
        nix::unistd::chown(workspace, Some(user), Some(group)).map_err(io::Error::from)?;
    }
    Ok(())
}

/// Makes sure a host folder a room works on is there (it is never made,
/// nor its owner or mode changed), and the room's checkpoints' folder
/// beside its own place `home`.
pub fn prepare_folder(folder: &Path, home: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(folder)
        .map_err(|e| io::Error::new(e.kind(), format!("the folder {}: {e}", folder.display())))?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", folder.display()),
        ));
    }
    let checkpoints = checkpoints_dir(Quota::PerFile, home);
    std::fs::create_dir_all(&checkpoints)?;
    std::fs::set_permissions(&checkpoints, std::fs::Permissions::from_mode(0o700))
}

/// Bytes free on the host's file system at `dir`: what bounds the
/// checkpoints of a room on a host folder, which has no quota.
pub fn free_on_host(dir: &Path) -> io::Result<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
    Ok(stat.blocks_available() as u64 * stat.fragment_size() as u64)
}

/// An 8 MiB journal for an image of 128 MiB or more: mkfs writes the
/// journal out whole, and its default (32 MiB for 1 GiB) made each room,
/// even a chat-only one, cost 33 MB of the host's disk (9 MB with this; the
/// rest of the image stays sparse). Smaller images keep mkfs's own (4 MiB).
fn journal_args(bytes: u64) -> &'static [&'static str] {
    if bytes >= 128 << 20 {
        &["-J", "size=8"]
    } else {
        &[]
    }
}

/// Mounts the room's image on `disk`, making it first when there is none.
fn mount_image(workspace: &Path, disk: &Path, bytes: u64, uid: Option<u32>) -> io::Result<()> {
    let image = image_of(workspace);
    let fresh = !image.exists();
    if fresh {
        // The image holds the room's files: only its owner reads it.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&image)?;
        file.set_len(bytes)?;
        let owner = uid
            .map(|u| format!("root_owner={u}:{u}"))
            .unwrap_or_else(|| "root_owner=0:0".into());
        run(Command::new(tool("mkfs.ext4", "e2fsprogs")?)
            // An inode per 8 KiB: checkpoints of many small files fit.
            .args(["-q", "-F", "-m", "0", "-i", "8192"])
            .args(journal_args(bytes))
            .arg("-E")
            .arg(owner)
            .arg(&image))?;
    }
    run(Command::new(tool("mount", "mount")?)
        .args(["-o", "loop,nosuid"])
        .arg(&image)
        .arg(disk))?;
    if fresh {
        let _ = std::fs::remove_dir(disk.join("lost+found"));
        std::fs::create_dir(disk.join("workspace"))?;
        std::fs::write(disk.join(LAYOUT_MARK), b"")?;
    }
    Ok(())
}

/// Brings an image made before checkpoints to `workspace/` +
/// `checkpoints/`: its root's entries move into `workspace/` (renames,
/// within one file system); a move cut short goes on the next time.
fn lay_out(disk: &Path) -> io::Result<()> {
    if disk.join(LAYOUT_MARK).exists() {
        return Ok(());
    }
    let moving = disk.join(MOVING);
    if !moving.exists() {
        std::fs::create_dir(&moving)?;
        // The root was the workspace: its owner and mode go with it.
        let meta = std::fs::metadata(disk)?;
        nix::unistd::chown(
            &moving,
            Some(nix::unistd::Uid::from_raw(meta.uid())),
            Some(nix::unistd::Gid::from_raw(meta.gid())),
        )
        .map_err(io::Error::from)?;
    }
    for entry in std::fs::read_dir(disk)? {
        let name = entry?.file_name();
        if name != MOVING {
            std::fs::rename(disk.join(&name), moving.join(&name))?;
        }
    }
    std::fs::rename(&moving, disk.join("workspace"))?;
    std::fs::write(disk.join(LAYOUT_MARK), b"")
}

/// Unmounts the workspace's image, if any, and deletes it (the
/// checkpoints in it with it).
pub fn release(workspace: &Path) -> io::Result<()> {
    let disk = disk_of(workspace);
    for mount in [workspace, disk.as_path()] {
        if is_mount_point(mount) {
            nix::mount::umount2(mount, nix::mount::MntFlags::MNT_DETACH)
                .map_err(io::Error::from)?;
        }
    }
    if disk.exists() {
        std::fs::remove_dir(&disk)?;
    }
    let image = image_of(workspace);
    if image.exists() {
        std::fs::remove_file(image)?;
    }
    Ok(())
}

/// The path of a host tool, or an error naming it and its Debian package.
fn tool(program: &str, package: &str) -> io::Result<PathBuf> {
    super::find_program(program).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{program} is not installed (Debian: apt-get install {package})"),
        )
    })
}

fn run(command: &mut Command) -> io::Result<()> {
    let out = command.output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot run {}: {e}",
                command.get_program().to_string_lossy()
            ),
        )
    })?;
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

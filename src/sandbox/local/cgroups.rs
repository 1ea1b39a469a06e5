//! Per-room cgroups: a process and memory ceiling for everything a room
//! runs, where the host lets us create cgroups (v2, or v1's `pids` and
//! `memory` hierarchies). Elsewhere the rlimits hold alone.

use std::io;
use std::path::{Path, PathBuf};

const ROOT: &str = "/sys/fs/cgroup";
/// Our folder inside each hierarchy.
const OURS: &str = "duet";

/// Which cgroup interface this host offers us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    V2,
    V1,
    None,
}

impl Flavor {
    /// Looks at the host: v2 when `/sys/fs/cgroup` is the unified
    /// hierarchy, v1 when `pids` and `memory` are mounted, and only when we
    /// may write there.
    pub fn detect() -> Flavor {
        let root = Path::new(ROOT);
        let writable = |p: &Path| nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok();
        if root.join("cgroup.controllers").exists() {
            if writable(root) {
                Flavor::V2
            } else {
                Flavor::None
            }
        } else if root.join("pids").is_dir() && root.join("memory").is_dir() {
            if writable(&root.join("pids")) && writable(&root.join("memory")) {
                Flavor::V1
            } else {
                Flavor::None
            }
        } else {
            Flavor::None
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Flavor::V2 => "cgroup v2 (memory.max, pids.max per room)",
            Flavor::V1 => "cgroup v1 (memory.limit_in_bytes, pids.max per room)",
            Flavor::None => {
                "no writable cgroups: rlimits only (address space 4x the memory limit per process)"
            }
        }
    }
}

/// The cgroup folders of one room (one per hierarchy).
pub fn room_dirs(flavor: Flavor, opaque: &str) -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    match flavor {
        Flavor::V2 => vec![root.join(OURS).join(opaque)],
        Flavor::V1 => vec![
            root.join("pids").join(OURS).join(opaque),
            root.join("memory").join(OURS).join(opaque),
        ],
        Flavor::None => Vec::new(),
    }
}

/// Creates the room's cgroups with their limits; returns the folders
/// whose `cgroup.procs` the sandbox joins.
pub fn create(
    flavor: Flavor,
    opaque: &str,
    processes: u64,
    memory: u64,
) -> io::Result<Vec<PathBuf>> {
    let dirs = room_dirs(flavor, opaque);
    match flavor {
        Flavor::None => {}
        Flavor::V2 => {
            let parent = Path::new(ROOT).join(OURS);
            std::fs::create_dir_all(&parent)?;
            // Controllers must be enabled from the root down to our parent.
            for dir in [Path::new(ROOT), parent.as_path()] {
                std::fs::write(dir.join("cgroup.subtree_control"), "+pids +memory")?;
            }
            let dir = &dirs[0];
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join("pids.max"), processes.to_string())?;
            std::fs::write(dir.join("memory.max"), memory.to_string())?;
            let _ = std::fs::write(dir.join("memory.swap.max"), "0");
        }
        Flavor::V1 => {
            let (pids, mem) = (&dirs[0], &dirs[1]);
            std::fs::create_dir_all(pids)?;
            std::fs::create_dir_all(mem)?;
            std::fs::write(pids.join("pids.max"), processes.to_string())?;
            std::fs::write(mem.join("memory.limit_in_bytes"), memory.to_string())?;
            // Without swap accounting this file is absent: fine.
            let _ = std::fs::write(mem.join("memory.memsw.limit_in_bytes"), memory.to_string());
        }
    }
    Ok(dirs)
}

/// Moves the calling process into the room's cgroups (the helper does
/// this before it builds the sandbox; its children follow).
pub fn join(dirs: &[PathBuf]) -> io::Result<()> {
    for dir in dirs {
        std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())?;
    }
    Ok(())
}

/// Removes the room's cgroups once its processes are gone (a cgroup with
/// members cannot be removed; a few tries cover the kernel's teardown).
pub fn remove(flavor: Flavor, opaque: &str) {
    for dir in room_dirs(flavor, opaque) {
        for _ in 0..50 {
            if !dir.exists() || std::fs::remove_dir(&dir).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

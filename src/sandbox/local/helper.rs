//! `duet sandbox-init`: the helper process that builds one room's sandbox.
//!
//! The server never forks itself to build a sandbox (it is multi-threaded);
//! it starts this helper, a fresh single-threaded process, which reads its
//! `Setup` from the first line of stdin, prepares the workspace, drops to
//! the room's uid when it is root, and starts the container whose PID 1 is
//! the supervisor. stdin and stdout then belong to the supervisor.

use super::shell;
use super::supervisor;
use super::wire::Setup;
use hakoniwa::{Container, MountOptions, Namespace, Rlimit};
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the workspace is bound in the helper's private mount namespace
/// when it runs as root (reachable by the room's uid whatever the data
/// directory's parents allow).
const ROOT_STAGE: &str = "/tmp";

pub fn main() -> ExitCode {
    if let Some(pid) = std::env::var_os(super::connect::CONNECT_ENV) {
        return match die_with_parent().and_then(|()| super::connect::serve(&pid.to_string_lossy()))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("duet sandbox-init: the ports connector: {e}");
                ExitCode::from(125)
            }
        };
    }
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("duet sandbox-init: {e}");
            ExitCode::from(125)
        }
    }
}

fn run() -> io::Result<u8> {
    die_with_parent()?;
    let setup: Setup = serde_json::from_slice(&read_first_line()?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad setup: {e}")))?;
    let root = nix::unistd::geteuid().is_root();
    // A host folder (`duet --workspace`) is there already and stays as
    // its owner made it.
    let folder = setup.home.is_some();
    let (workspace, rootdir, uid) = match (root, setup.uid) {
        (true, Some(uid)) => {
            let owner = Owner {
                uid,
                gid: setup.gid.unwrap_or(uid),
            };
            super::cgroups::join(&setup.cgroups)?;
            let (ws, rootdir) = stage_as_root(&setup.workspace, owner, folder)?;
            drop_privileges(owner)?;
            (ws, rootdir, Some(uid))
        }
        _ => {
            if !folder {
                std::fs::create_dir_all(&setup.workspace)?;
            }
            let rootdir = root_dir_beside(setup.home.as_deref().unwrap_or(&setup.workspace));
            std::fs::create_dir_all(&rootdir)?;
            (setup.workspace.clone(), rootdir, None)
        }
    };
    // RLIMIT_NPROC counts per uid: a folder's owner may be a person with
    // processes of their own (the cgroup's pids limit holds the room).
    let own_uid = uid.is_some() && !folder;
    let container = build_container(&setup, &workspace, &rootdir, own_uid)?;
    // SAFETY: this process is single-threaded (no runtime was started), so
    // the forked child may allocate freely.
    let mut command = unsafe { container.command_from_closure(supervisor::run) };
    for (key, value) in shell::SHELL_ENV {
        command.env(key, value);
    }
    command.current_dir("/workspace");
    let status = command
        .status()
        .map_err(|e| io::Error::other(e.to_string()))?;
    if status.code != 0 {
        eprintln!("duet sandbox-init: the sandbox ended: {}", status.reason);
    }
    Ok(u8::try_from(status.code).unwrap_or(1))
}

/// The helper dies with the server, and the container with the helper.
fn die_with_parent() -> io::Result<()> {
    let parent = nix::unistd::getppid();
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(io::Error::from)?;
    if nix::unistd::getppid() != parent {
        return Err(io::Error::other("the server is gone"));
    }
    Ok(())
}

/// Reads the setup line byte by byte, so nothing meant for the supervisor
/// is consumed here.
fn read_first_line() -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    // Unbuffered on purpose: std's stdin would read ahead.
    let mut stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
    loop {
        if stdin.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "no setup line",
            ));
        }
        if byte[0] == b'\n' {
            return Ok(line);
        }
        line.push(byte[0]);
        if line.len() > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "setup line too long",
            ));
        }
    }
}

fn root_dir_beside(workspace: &Path) -> PathBuf {
    let mut name = workspace.file_name().unwrap_or_default().to_os_string();
    name.push(".root");
    workspace.with_file_name(name)
}

/// The host user a sandbox runs as when the helper is root.
#[derive(Debug, Clone, Copy)]
struct Owner {
    uid: u32,
    gid: u32,
}

/// As root: make the workspace the room uid's (a host folder is left as
/// it is: the room runs as its owner), and bind it in a private mount
/// namespace at a place that uid can reach.
fn stage_as_root(workspace: &Path, user: Owner, folder: bool) -> io::Result<(PathBuf, PathBuf)> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    let owner = Some(nix::unistd::Uid::from_raw(user.uid));
    let group = Some(nix::unistd::Gid::from_raw(user.gid));
    if !folder {
        std::fs::create_dir_all(workspace)?;
        nix::unistd::chown(workspace, owner, group).map_err(io::Error::from)?;
        std::fs::set_permissions(workspace, std::fs::Permissions::from_mode(0o700))?;
    }

    unshare(CloneFlags::CLONE_NEWNS).map_err(io::Error::from)?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
        .map_err(io::Error::from)?;
    // Held open across the tmpfs mount below, which may hide its path.
    let held = std::fs::File::open(workspace)?;
    let source = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&held));
    mount(
        Some("tmpfs"),
        ROOT_STAGE,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=1777,size=16m"),
    )
    .map_err(io::Error::from)?;
    let staged = Path::new(ROOT_STAGE).join("workspace");
    let rootdir = Path::new(ROOT_STAGE).join("root");
    for dir in [&staged, &rootdir] {
        std::fs::create_dir(dir)?;
        nix::unistd::chown(dir.as_path(), owner, group).map_err(io::Error::from)?;
    }
    mount::<str, Path, str, str>(Some(source.as_str()), &staged, None, MsFlags::MS_BIND, None)
        .map_err(io::Error::from)?;
    drop(held);
    Ok((staged, rootdir))
}

/// Becomes the room's uid for good; never run a sandbox as host root.
fn drop_privileges(owner: Owner) -> io::Result<()> {
    use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
    if owner.uid == 0 || owner.gid == 0 {
        return Err(io::Error::other(
            "a sandbox never runs as root, nor in root's group",
        ));
    }
    let gid = Gid::from_raw(owner.gid);
    let user = Uid::from_raw(owner.uid);
    setgroups(&[]).map_err(io::Error::from)?;
    setresgid(gid, gid, gid).map_err(io::Error::from)?;
    setresuid(user, user, user).map_err(io::Error::from)?;
    if nix::unistd::setuid(Uid::from_raw(0)).is_ok() {
        return Err(io::Error::other("could not drop root"));
    }
    // A change of credentials clears these; the user namespace needs the
    // process to be dumpable to write its own uid map.
    nix::sys::prctl::set_dumpable(true).map_err(io::Error::from)?;
    die_with_parent()
}

fn build_container(
    setup: &Setup,
    workspace: &Path,
    rootdir: &Path,
    own_uid: bool,
) -> io::Result<Container> {
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let mut c = Container::new();
    c.unshare(Namespace::Network)
        .unshare(Namespace::Ipc)
        .unshare(Namespace::Uts)
        .unshare(Namespace::Cgroup)
        .hostname("sandbox")
        .rootdir(rootdir)
        .bindmount_ro("/usr", "/usr");
    for dir in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
        let host = Path::new("/").join(dir);
        let target = format!("/{dir}");
        if let Ok(link) = std::fs::read_link(&host) {
            c.symlink(&link.to_string_lossy(), &target);
        } else if host.is_dir() {
            c.bindmount_ro(&host.to_string_lossy(), &target);
        }
    }
    c.devfsmount("/dev")
        .mount(
            "tmpfs",
            "/tmp",
            "tmpfs",
            MountOptions::NOSUID | MountOptions::NODEV,
            Some(format!("size={},mode=1777", setup.tmp_bytes)),
        )
        .bindmount_rw(&workspace.to_string_lossy(), "/workspace")
        .dir("/etc", 0o755)
        .file(
            "/etc/passwd",
            &format!("duet:x:{uid}:{gid}:duet:/workspace:/bin/bash\nnobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n"),
        )
        .file("/etc/group", &format!("duet:x:{gid}:\nnogroup:x:65534:\n"))
        .file("/etc/hostname", "sandbox\n")
        .file("/etc/hosts", "127.0.0.1 localhost sandbox\n::1 localhost\n")
        .file("/etc/resolv.conf", "")
        .file("/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n")
        .dir("/etc/duet", 0o755)
        .file(shell::PYTHON_STARTUP, shell::PYTHON_STARTUP_TEXT)
        .setrlimit(Rlimit::Nofile, setup.open_files, setup.open_files)
        .setrlimit(Rlimit::Fsize, setup.file_size, setup.file_size)
        .setrlimit(Rlimit::Cpu, setup.cpu_seconds, setup.cpu_seconds)
        .setrlimit(Rlimit::Core, 0, 0);
    // Debian's `awk`, `vi`, `editor`, `pager`… are links into here.
    if Path::new("/etc/alternatives").is_dir() {
        c.bindmount_ro("/etc/alternatives", "/etc/alternatives");
    }
    if setup.network == super::Network::Nat {
        // pasta copies the host's addresses and routes; hakoniwa adds
        // --no-map-gw and -T/-U none, so the host's loopback stays out of reach.
        let mut pasta = hakoniwa::Pasta::default();
        if let Some(path) = super::find_program("pasta") {
            pasta.program(&path.to_string_lossy());
        }
        c.network(pasta);
    }
    if setup.cgroups.is_empty() {
        // Without a memory cgroup, an address-space cap per process is the
        // fallback; 4x the room's memory leaves room for runtimes that
        // reserve more than they use.
        let cap = setup.memory_bytes.saturating_mul(4);
        c.setrlimit(Rlimit::As, cap, cap);
    }
    if own_uid {
        // RLIMIT_NPROC counts per uid: only meaningful when the room has
        // a uid of its own.
        c.setrlimit(Rlimit::Nproc, setup.processes, setup.processes);
    }
    Ok(c)
}

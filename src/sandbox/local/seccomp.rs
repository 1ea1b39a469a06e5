//! The system calls a sandbox may not make, as a pure-Rust seccomp filter
//! loaded by the supervisor before it starts the shell (so it needs no
//! system library).

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Answered EPERM: kernel attack surface a shell session has no use for,
/// and every way to leave or re-shape the sandbox.
const DENIED: &[i64] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_perf_event_open,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
];

/// `ioctl` requests refused: TIOCSTI pushes bytes into a terminal's input
/// (a command could type into the shared terminal, around any approval),
/// TIOCLINUX reaches the console's selection and keyboard.
#[allow(clippy::unnecessary_cast)] // c_ulong here, c_int on other libcs
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// `clone` flags that would make new namespaces.
const NAMESPACE_FLAGS: &[i32] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("{e:?}"))
}

/// The two filters: EPERM for the denied calls (and `clone` into new
/// namespaces, and the denied `ioctl`s), ENOSYS for `clone3`, whose flags a filter cannot read, so
/// that libc falls back to `clone`.
pub fn programs() -> Result<Vec<BpfProgram>, String> {
    let err = |e: seccompiler::BackendError| e.to_string();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .and_then(|c| SeccompRule::new(vec![c]))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rules.insert(libc::SYS_clone, clone_rules);
    // The request is an int to the kernel: only its low 32 bits count.
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|&request| {
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .and_then(|c| SeccompRule::new(vec![c]))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(err)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch()?,
    )
    .map_err(err)?;
    [deny, clone3]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(|e| e.to_string()))
        .collect()
}

/// Loads the filters into this process; everything it starts inherits
/// them.
pub fn load() -> Result<(), String> {
    for program in programs()? {
        seccompiler::apply_filter(&program).map_err(|e| e.to_string())?;
    }
    Ok(())
}

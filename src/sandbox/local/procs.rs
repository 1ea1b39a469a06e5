//! The sandbox's process table, as PID 1 sees it in its own `/proc`: who
//! exists, who is whose child, and how to signal what a command started.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Process facts read from `/proc/PID/stat`.
pub(super) struct ProcInfo {
    pub ppid: i32,
    pub zombie: bool,
}

/// The ids of the processes that exist: `/proc`'s numbered entries (a
/// command's start needs no more, and it is on every command's path).
pub(super) fn list_pids() -> HashSet<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

pub(super) fn list_processes() -> HashMap<i32, ProcInfo> {
    let mut procs = HashMap::new();
    for pid in list_pids() {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: fields start
        // after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let ppid = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        procs.insert(
            pid,
            ProcInfo {
                ppid,
                zombie: state == "Z",
            },
        );
    }
    procs
}

/// The processes the current command started: those that did not exist
/// when it began, unless they descend from a process that did (a server
/// started by an earlier command keeps its workers).
fn command_processes(
    procs: &HashMap<i32, ProcInfo>,
    snapshot: &HashSet<i32>,
    shell_pid: i32,
) -> Vec<i32> {
    let mut found = Vec::new();
    for (&pid, info) in procs {
        if pid == 1 || pid == shell_pid || snapshot.contains(&pid) || info.zombie {
            continue;
        }
        let mut parent = info.ppid;
        let mut owned_by_old = false;
        let mut hops = 0;
        while parent > 1 && parent != shell_pid && hops < 4096 {
            if snapshot.contains(&parent) {
                owned_by_old = true;
                break;
            }
            parent = procs.get(&parent).map(|p| p.ppid).unwrap_or(0);
            hops += 1;
        }
        if !owned_by_old {
            found.push(pid);
        }
    }
    found
}

/// Signals every process the current command started. Repeated for
/// SIGKILL so that forks in flight are caught too.
pub(super) fn kill_command(snapshot: &HashSet<i32>, shell_pid: i32, sig: i32) {
    let rounds = if sig == libc::SIGKILL { 4 } else { 1 };
    for round in 0..rounds {
        let pids = command_processes(&list_processes(), snapshot, shell_pid);
        for &pid in &pids {
            // SAFETY: sending a signal to a process of this namespace.
            unsafe { libc::kill(pid, sig) };
        }
        if pids.is_empty() {
            break;
        }
        if round + 1 < rounds {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

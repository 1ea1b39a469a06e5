//! The Linux namespace backend: one persistent shell per room inside
//! Linux namespaces, with the host details rooms never see (uids,
//! cgroups, quota images, workspace paths).
//!
//! `RoomSandbox` (room.rs) is a room's handle. Behind it a worker task
//! (worker.rs) owns the sandbox process, starts it on first use, runs
//! commands one at a time in the order they were queued, stops it after
//! an idle period and starts it again on the next command. The workspace persists until
//! `destroy`.

mod archive;
mod background;
mod body;
pub mod cgroups;
mod changes;
mod checkpoints;
mod connect;
pub mod disk;
pub mod files;
mod helper;
mod limits;
mod links;
mod pack;
mod place;
mod ports;
mod proc_slots;
mod procs;
mod pty;
mod room;
mod seccomp;
mod session;
pub mod shell;
mod supervisor;
mod term_slot;
mod tree;
mod walk;
pub mod wire;
mod worker;

pub(crate) use super::{
    Chunk, ExecOutcome, ExecSpec, Network, OnOutput, ProcEvent, ProcEvents, ProcSignal,
    RestartReason, Sandbox, SandboxError, SandboxFactory, SandboxId, ShellRestart, TermEvent,
    TermEvents, TermRequest,
};
pub use limits::{Enforcement, Limits, enforcement};
pub(crate) use limits::{find_program, program_exists};
pub use place::{OnFolder, SandboxPlace, release_all, room_uid, workspace_dir};
use place::{helper_exe, ready_workspace, remove_workspace};
pub use room::RoomSandbox;
use std::path::PathBuf;
use std::sync::Arc;

/// Entry of the hidden `duet sandbox-init` helper process.
pub fn helper_main() -> std::process::ExitCode {
    helper::main()
}

/// The sandboxes of one data directory on this host.
pub struct LocalFactory {
    data_dir: PathBuf,
    limits: Arc<Limits>,
}

impl LocalFactory {
    /// Sandboxes under `data_dir` with `limits`; fails, saying what to
    /// install, when the limits cannot work on this host.
    pub fn new(data_dir: PathBuf, limits: Limits) -> Result<Self, String> {
        limits.check()?;
        // A server killed with SIGKILL leaves its rooms' quota images
        // mounted: unmount this data directory's (never another server's).
        release_all(&data_dir);
        Ok(LocalFactory {
            data_dir,
            limits: Arc::new(limits),
        })
    }
}

impl SandboxFactory for LocalFactory {
    /// A room bound to a host folder (`duet --workspace`) works on it;
    /// any other in a workspace of its own.
    fn open(&self, id: &SandboxId) -> Arc<dyn Sandbox> {
        let own = workspace_dir(&self.data_dir, &id.opaque);
        let uid = room_uid(&self.data_dir, id.slot);
        let place = match super::folder::bound(&self.data_dir, &id.room) {
            Some(folder) => {
                tracing::info!(room = %id.room, folder = %folder.display(), "the room works on a host folder");
                SandboxPlace::on_folder(&id.room, folder, own, uid)
            }
            None => SandboxPlace::own(&id.room, own, uid),
        };
        Arc::new(RoomSandbox::new(place, self.limits.clone()))
    }

    fn describe(&self) -> String {
        self.limits.describe()
    }

    fn shutdown(&self) {
        release_all(&self.data_dir);
    }
}

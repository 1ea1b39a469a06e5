//! The rooms of a server: room id → the handle of its actor, created on
//! first use from what the store holds.

use super::errors::ApiError;
use super::room::{self, RoomHandle};
use super::store::Store;
use crate::ai::Agent;
use crate::sandbox::{Policy, SandboxFactory};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What every room of a server shares.
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) agent: Agent,
    /// Where rooms get their sandboxes.
    pub(crate) sandboxes: Arc<dyn SandboxFactory>,
    /// Timeouts and output cap of every command.
    pub(crate) policy: Policy,
    /// What one socket and one room may ask for.
    pub(crate) limits: super::LimitOptions,
    /// Cancelled when the server stops: actors and sockets end.
    pub(crate) shutdown: CancellationToken,
    /// A room idle this long unloads (its history and files stay).
    pub(crate) room_idle: Duration,
    /// A shared terminal unattached and silent this long is closed.
    pub(crate) terminal_idle: Duration,
    /// Automatic checkpoints a room keeps (0: none are taken).
    pub(crate) auto_checkpoints: usize,
    /// Whether the server has a token (invites need one).
    pub(crate) has_token: bool,
    /// How long an agent's command waits for approval.
    pub(crate) approval_timeout: Duration,
    /// The server's commands that never ask (`--approval-allow`).
    pub(crate) approval_allow: Vec<String>,
    /// Every room's changes of access (revocations, roles), for the open
    /// channels that are not sockets (channel_guard.rs).
    pub(crate) access_news: tokio::sync::broadcast::Sender<super::channel_guard::RoomNews>,
    /// The key socket tickets are made with (tickets.rs): random, this
    /// process's only.
    pub(crate) ticket_key: [u8; 32],
    /// How long a socket ticket may be used.
    pub(crate) ticket_lifetime: Duration,
    /// Where each preview has an origin of its own, if anywhere.
    pub(crate) previews: Option<super::ports::PreviewHosts>,
    /// The rooms loaded now, by id.
    pub(crate) rooms: Mutex<HashMap<String, RoomHandle>>,
    /// One permit per running room actor: a stopping server waits until
    /// it has them all back (each room has stored what it ran).
    pub(crate) actors: Arc<tokio::sync::Semaphore>,
}

/// Permits of `Shared::actors`: more rooms than a server ever loads.
pub(crate) const ACTOR_SLOTS: u32 = 1 << 20;

/// The live rooms.
pub(crate) struct Registry {
    pub(crate) shared: Arc<Shared>,
}

impl Registry {
    /// An empty registry; rooms start on first use.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Registry { shared }
    }

    /// The handle of a room already started.
    fn live(&self, id: &str) -> Option<RoomHandle> {
        self.shared.rooms.lock().ok()?.get(id).cloned()
    }

    /// The room's handle, starting its actor on first use. `id` must be a
    /// valid room id.
    pub(crate) async fn room(&self, id: &str) -> Result<RoomHandle, ApiError> {
        if let Some(handle) = self.live(id) {
            return Ok(handle);
        }
        let opaque = format!("{:016x}", rand::random::<u64>());
        let row = self
            .shared
            .store
            .load_room(id.to_string(), opaque)
            .await
            .map_err(|e| {
                tracing::error!(room = id, "loading the room failed: {e}");
                ApiError::internal(format!("the room could not be loaded: {e}"))
            })?;
        let mut rooms = self
            .shared
            .rooms
            .lock()
            .map_err(|_| ApiError::internal("the room registry is unusable"))?;
        // Another request may have started it while the row loaded.
        let handle = rooms
            .entry(id.to_string())
            .or_insert_with(|| room::spawn(self.shared.clone(), id.to_string(), row));
        Ok(handle.clone())
    }
}

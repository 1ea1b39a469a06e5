//! The store's rows of rooms: one per room ever used (its sandbox's
//! opaque name and slot, its counters, when it was first used), loaded
//! with its recent history, and listed with when each last changed.

use super::store::{Store, StoreError};
use crate::protocol::{DuetMessage, ExecRecord, STATE_EXECS, STATE_MESSAGES, now_ms};
use rusqlite::{Connection, params};

/// A room as kept in the store, with its recent history.
#[derive(Debug, Clone)]
pub(crate) struct RoomRow {
    pub(crate) opaque: String,
    pub(crate) slot: u32,
    pub(crate) next_message: u64,
    pub(crate) next_exec: u64,
    pub(crate) messages: Vec<DuetMessage>,
    pub(crate) execs: Vec<ExecRecord>,
    /// Its checkpoints, oldest first, and the next one's number.
    pub(crate) checkpoints: Vec<crate::protocol::Checkpoint>,
    pub(crate) next_checkpoint: u64,
    /// Its invites (revoked ones too) and its approval policy.
    pub(crate) invites: Vec<super::store_access::InviteRow>,
    pub(crate) policy: super::store_access::PolicyRow,
    /// The model it chose, if it chose one.
    pub(crate) model: Option<String>,
    /// Its listed background processes, oldest first, and the last
    /// process number used.
    pub(crate) processes: Vec<super::store_processes::StoredProcess>,
    pub(crate) last_process: u64,
}

/// A room as listed: its id and the ts of its newest stored record (or
/// of its first use, when it has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoomListed {
    pub(crate) id: String,
    pub(crate) updated_at: i64,
}

/// Rooms made before their first use was kept: first used now.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    if conn
        .prepare("SELECT created_at FROM rooms LIMIT 0")
        .is_err()
    {
        conn.execute_batch("ALTER TABLE rooms ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0")?;
        conn.execute("UPDATE rooms SET created_at = ?1", params![now_ms()])?;
    }
    Ok(())
}

impl Store {
    /// Loads a room, creating it (with a new opaque name and slot) when absent.
    pub(crate) async fn load_room(
        &self,
        room: String,
        opaque: String,
    ) -> Result<RoomRow, StoreError> {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO rooms (id, opaque, slot, created_at) VALUES \
                 (?1, ?2, (SELECT COALESCE(MAX(slot), 0) + 1 FROM rooms), ?3)",
                params![room, opaque, now_ms()],
            )?;
            let (opaque, slot, next_message, next_exec, next_checkpoint) = tx.query_row(
                "SELECT opaque, slot, next_message, next_exec, next_checkpoint FROM rooms \
                 WHERE id = ?1",
                params![room],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, u32>(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                    ))
                },
            )?;
            let checkpoints = super::store_checkpoints::select(&tx, &room)?;
            let invites = super::store_access::select_invites(&tx, &room)?;
            let policy = super::store_access::select_policy(&tx, &room)?;
            let model = super::store_access::select_model(&tx, &room)?;
            let (processes, last_process) =
                super::store_processes::load(&tx, &room, now_ms() as u64)?;
            let mut messages = super::store::select_messages(&tx, &room, None, STATE_MESSAGES)?;
            messages.reverse();
            let mut execs = super::store_execs::select_execs(&tx, &room, None, STATE_EXECS)?;
            execs.reverse();
            tx.commit()?;
            Ok(RoomRow {
                opaque,
                slot,
                next_message,
                next_exec,
                messages,
                execs,
                checkpoints,
                next_checkpoint,
                invites,
                policy,
                model,
                processes,
                last_process,
            })
        })
        .await
    }

    /// Whether the room exists in the store.
    pub(crate) async fn has_room(&self, room: String) -> Result<bool, StoreError> {
        use rusqlite::OptionalExtension;
        self.call(move |conn| {
            conn.query_row("SELECT 1 FROM rooms WHERE id = ?1", params![room], |_| {
                Ok(())
            })
            .optional()
            .map(|r| r.is_some())
        })
        .await
    }

    /// Every room, newest change first (then by id).
    pub(crate) async fn list_rooms(&self) -> Result<Vec<RoomListed>, StoreError> {
        self.call(|conn| {
            let mut stmt = conn.prepare(
                "SELECT id, MAX(created_at, \
                 COALESCE((SELECT MAX(ts) FROM messages WHERE room = rooms.id), 0), \
                 COALESCE((SELECT MAX(ts) FROM execs WHERE room = rooms.id), 0)) AS updated \
                 FROM rooms ORDER BY updated DESC, id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(RoomListed {
                    id: r.get(0)?,
                    updated_at: r.get(1)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}

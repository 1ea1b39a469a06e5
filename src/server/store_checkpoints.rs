//! The store's rows of checkpoints (their files are the sandbox's), and
//! the claim of a new room by a fork.

use super::store::{Store, StoreError};
use crate::protocol::Checkpoint;
use rusqlite::{Connection, params};

/// A room's checkpoints, oldest first.
pub(super) fn select(conn: &Connection, room: &str) -> rusqlite::Result<Vec<Checkpoint>> {
    let mut stmt = conn.prepare(
        "SELECT id, name, ts, by_name, size, auto, turn_id FROM checkpoints \
         WHERE room = ?1 ORDER BY number",
    )?;
    stmt.query_map(params![room], |r| {
        Ok(Checkpoint {
            id: r.get(0)?,
            name: r.get(1)?,
            ts: r.get(2)?,
            by: r.get(3)?,
            size: r.get::<_, i64>(4)? as u64,
            auto: r.get(5)?,
            turn_id: r.get(6)?,
            expires_at: None,
        })
    })?
    .collect()
}

impl Store {
    /// Keeps checkpoint `number` of `room` (`c{number}`) and counts past it.
    pub(crate) async fn insert_checkpoint(
        &self,
        room: String,
        number: u64,
        checkpoint: Checkpoint,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT INTO checkpoints (room, id, number, name, ts, by_name, size, auto, turn_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    room,
                    checkpoint.id,
                    number as i64,
                    checkpoint.name,
                    checkpoint.ts,
                    checkpoint.by,
                    checkpoint.size as i64,
                    checkpoint.auto,
                    checkpoint.turn_id
                ],
            )?;
            tx.execute(
                "UPDATE rooms SET next_checkpoint = MAX(next_checkpoint, ?2 + 1) WHERE id = ?1",
                params![room, number as i64],
            )?;
            tx.commit()
        })
        .await
    }

    /// Counts checkpoint numbers past `number` (one being taken).
    pub(crate) async fn reserve_checkpoint(
        &self,
        room: String,
        number: u64,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE rooms SET next_checkpoint = MAX(next_checkpoint, ?2 + 1) WHERE id = ?1",
                params![room, number as i64],
            )
            .map(drop)
        })
        .await
    }

    pub(crate) async fn delete_checkpoint(
        &self,
        room: String,
        id: String,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "DELETE FROM checkpoints WHERE room = ?1 AND id = ?2",
                params![room, id],
            )
            .map(drop)
        })
        .await
    }

    /// Makes room `room` if it does not exist; whether this call made it
    /// (a fork's target must be new).
    pub(crate) async fn claim_room(
        &self,
        room: String,
        opaque: String,
    ) -> Result<bool, StoreError> {
        self.call(move |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO rooms (id, opaque, slot) VALUES \
                 (?1, ?2, (SELECT COALESCE(MAX(slot), 0) + 1 FROM rooms))",
                params![room, opaque],
            )
            .map(|changed| changed == 1)
        })
        .await
    }
}

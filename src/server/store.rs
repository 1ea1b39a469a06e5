//! SQLite persistence: the store's thread, its schema, and the messages
//! (records among them); the other rows have modules of their own
//! (`store_execs`, `store_processes`, `store_checkpoints`, `store_access`,
//! `store_rooms`). SQLite calls block, so one dedicated thread owns the
//! connection and runs jobs in the order they were sent; async code
//! awaits their answers.

use crate::protocol::{Addressee, DuetMessage, Role, SERVER_STOPPED};
use rusqlite::{Connection, Row, params};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::oneshot;

pub(crate) use super::store_processes::StoredProcess;
pub(crate) use super::store_rooms::RoomRow;

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database thread stopped")]
    Closed,
    #[error(
        "another duet uses this data directory (its database is locked): stop it, or give this one another data directory"
    )]
    InUse,
    #[error("cannot lock the database: {0}")]
    Lock(std::io::Error),
}

/// Work for the store thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the store thread. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Store {
    jobs: std::sync::mpsc::Sender<Job>,
}

/// Tables of the store; `PRAGMA`s set WAL and `synchronous = NORMAL`.
const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA busy_timeout = 5000;
CREATE TABLE IF NOT EXISTS rooms (
    id TEXT PRIMARY KEY,
    opaque TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT 0,
    slot INTEGER NOT NULL UNIQUE,
    next_message INTEGER NOT NULL DEFAULT 1,
    next_exec INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS messages (
    room TEXT NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL, user_id TEXT,
    text TEXT NOT NULL, ts INTEGER NOT NULL, runs TEXT,
    PRIMARY KEY (room, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS client_replies (
    room TEXT NOT NULL, client_id TEXT NOT NULL, reply TEXT, error TEXT,
    PRIMARY KEY (room, client_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS execs (
    room TEXT NOT NULL, exec_id TEXT NOT NULL, cmd TEXT NOT NULL, by_name TEXT NOT NULL,
    source TEXT NOT NULL, stdout TEXT NOT NULL, stderr TEXT NOT NULL, exit_code INTEGER,
    duration INTEGER NOT NULL, ts INTEGER NOT NULL, truncated INTEGER NOT NULL,
    error TEXT, ended INTEGER NOT NULL DEFAULT 1, stopped TEXT,
    PRIMARY KEY (room, exec_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    room TEXT NOT NULL, id TEXT NOT NULL, number INTEGER NOT NULL, name TEXT NOT NULL,
    ts INTEGER NOT NULL, by_name TEXT NOT NULL, size INTEGER NOT NULL, auto INTEGER NOT NULL,
    turn_id TEXT,
    PRIMARY KEY (room, id)
) WITHOUT ROWID;
";

/// Columns of a message, in `message_from_row` order.
const MESSAGE_COLUMNS: &str = "id, role, user_id, text, ts, runs, client_id, to_whom, event, \
     cancelled_by, usage";

/// Columns of `messages` added after version 1, in the order they came,
/// for databases made before them: `clientId`, `to` ("agent" or "room"),
/// a record's `event` (JSON), `cancelledBy` and an agent message's
/// `usage` (JSON).
const ADDED_COLUMNS: [&str; 5] = ["client_id", "to_whom", "event", "cancelled_by", "usage"];

/// The index that finds a message by its `clientId`.
const CLIENT_ID_INDEX: &str = "CREATE UNIQUE INDEX IF NOT EXISTS messages_client_id \
     ON messages (room, client_id) WHERE client_id IS NOT NULL";

/// Brings an older database to the current schema.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for column in ADDED_COLUMNS {
        let present = conn
            .prepare(&format!("SELECT {column} FROM messages LIMIT 0"))
            .is_ok();
        if !present {
            conn.execute_batch(&format!("ALTER TABLE messages ADD COLUMN {column} TEXT"))?;
        }
    }
    // Rooms made before checkpoints count theirs from 1.
    if conn
        .prepare("SELECT next_checkpoint FROM rooms LIMIT 0")
        .is_err()
    {
        conn.execute_batch(
            "ALTER TABLE rooms ADD COLUMN next_checkpoint INTEGER NOT NULL DEFAULT 1",
        )?;
    }
    super::store_execs::migrate(conn)?;
    super::store_rooms::migrate(conn)?;
    super::store_processes::migrate(conn)?;
    conn.execute_batch(CLIENT_ID_INDEX)
}

/// A value kept as JSON text.
pub(super) fn json_text(value: &impl serde::Serialize) -> rusqlite::Result<String> {
    serde_json::to_string(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// `to` as stored.
fn addressee(to: Addressee) -> &'static str {
    match to {
        Addressee::Agent => "agent",
        Addressee::Room => "room",
    }
}

/// What became of a message sent with a `clientId`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClientMessage {
    /// Never seen in this room.
    Unknown,
    /// Stored; its turn has not answered (still running, or cut off).
    Unanswered,
    /// Answered with this reply, or this error.
    Answered {
        reply: Option<String>,
        error: Option<String>,
    },
}

impl Store {
    /// Opens (creating when needed) the database at `path` and starts its thread.
    /// One process at a time: a second server on the same data directory
    /// (its crash recovery would end the first one's running commands, and
    /// both would number records alike) is refused until the first stops.
    pub(crate) async fn open(path: PathBuf) -> Result<Store, StoreError> {
        Store::open_waiting(path, super::store_lock::LOCK_WAIT).await
    }

    /// As `open`, waiting up to `wait` for the database's lock.
    pub(crate) async fn open_waiting(path: PathBuf, wait: Duration) -> Result<Store, StoreError> {
        let lock = super::store_lock::lock_database(&path, wait).await?;
        let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
        let (ready_tx, ready) = oneshot::channel();
        std::thread::Builder::new()
            .name("duet-store".into())
            .spawn(move || {
                // Held for as long as the thread runs.
                let _lock = lock;
                let opened = Connection::open(&path).and_then(|conn| {
                    conn.execute_batch(SCHEMA)?;
                    conn.execute_batch(super::store_access::SCHEMA)?;
                    conn.execute_batch(super::store_processes::SCHEMA)?;
                    migrate(&conn)?;
                    let closed = super::store_execs::close_unended(&conn, SERVER_STOPPED)?;
                    if closed > 0 {
                        tracing::info!("{closed} commands were cut off by the last stop");
                    }
                    Ok(conn)
                });
                let mut conn = match opened {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(job) = inbox.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|_| StoreError::Closed)?;
        ready.await.map_err(|_| StoreError::Closed)??;
        Ok(Store { jobs })
    }

    /// Runs `f` on the store thread and returns its answer.
    pub(super) async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(f(conn));
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        Ok(rx.await.map_err(|_| StoreError::Closed)??)
    }

    /// Resolves once every job sent before it ran (a `submit` too).
    pub(crate) async fn flushed(&self) -> Result<(), StoreError> {
        self.call(|_| Ok(())).await
    }

    /// Sends `f` to the store thread without waiting for it: it runs after
    /// every job sent before it, and a failure is logged as `what`.
    pub(super) fn submit<F>(&self, what: &'static str, f: F)
    where
        F: FnOnce(&mut Connection) -> rusqlite::Result<()> + Send + 'static,
    {
        let job: Job = Box::new(move |conn| {
            if let Err(e) = f(conn) {
                tracing::warn!("{what} failed: {e}");
            }
        });
        if self.jobs.send(job).is_err() {
            tracing::warn!("{what} failed: {}", StoreError::Closed);
        }
    }

    /// Stores a message and the room's next message number, in one transaction.
    pub(crate) async fn insert_message(
        &self,
        room: String,
        message: DuetMessage,
        next_message: u64,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            let runs = message.runs.as_ref().map(json_text).transpose()?;
            let event = message.event.as_ref().map(json_text).transpose()?;
            let usage = message.usage.as_ref().map(json_text).transpose()?;
            let tx = conn.transaction()?;
            tx.prepare_cached(
                "INSERT INTO messages (room, id, role, user_id, text, ts, runs, client_id, \
                 to_whom, event, cancelled_by, usage) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                room,
                message.id,
                message.role.as_str(),
                message.user_id,
                message.text,
                message.ts,
                runs,
                message.client_id,
                message.to.map(addressee),
                event,
                message.cancelled_by,
                usage
            ])?;
            tx.prepare_cached("UPDATE rooms SET next_message = ?2 WHERE id = ?1")?
                .execute(params![room, next_message])?;
            tx.commit()
        })
        .await
    }

    /// Deletes a room's messages, commands, checkpoints and processes; its
    /// counters stay.
    pub(crate) async fn clear_room(&self, room: String) -> Result<(), StoreError> {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM messages WHERE room = ?1", params![room])?;
            tx.execute("DELETE FROM client_replies WHERE room = ?1", params![room])?;
            tx.execute("DELETE FROM execs WHERE room = ?1", params![room])?;
            tx.execute("DELETE FROM checkpoints WHERE room = ?1", params![room])?;
            tx.execute("DELETE FROM processes WHERE room = ?1", params![room])?;
            tx.commit()
        })
        .await
    }

    /// A page of messages strictly older than `before` (default: all),
    /// oldest first, and whether older ones remain.
    pub(crate) async fn page(
        &self,
        room: String,
        before: Option<String>,
        limit: usize,
    ) -> Result<(Vec<DuetMessage>, bool), StoreError> {
        self.call(move |conn| {
            let mut messages = select_messages(conn, &room, before.as_deref(), limit + 1)?;
            let more = messages.len() > limit;
            messages.truncate(limit);
            messages.reverse();
            Ok((messages, more))
        })
        .await
    }

    /// What became of the message `client_id` of `room`.
    pub(crate) async fn client_message(
        &self,
        room: String,
        client_id: String,
    ) -> Result<ClientMessage, StoreError> {
        use rusqlite::OptionalExtension;
        self.call(move |conn| {
            let stored: Option<Option<String>> = conn
                .query_row(
                    "SELECT to_whom FROM messages WHERE room = ?1 AND client_id = ?2",
                    params![room, client_id],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(to) = stored else {
                return Ok(ClientMessage::Unknown);
            };
            // A message to the room was answered as it was stored.
            if to.as_deref() == Some(addressee(Addressee::Room)) {
                return Ok(ClientMessage::Answered {
                    reply: None,
                    error: None,
                });
            }
            let answer = conn
                .query_row(
                    "SELECT reply, error FROM client_replies WHERE room = ?1 AND client_id = ?2",
                    params![room, client_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(match answer {
                Some((reply, error)) => ClientMessage::Answered { reply, error },
                None => ClientMessage::Unanswered,
            })
        })
        .await
    }

    /// Keeps how the message `client_id` was answered, for its repeats.
    pub(crate) async fn set_client_reply(
        &self,
        room: String,
        client_id: String,
        reply: Option<String>,
        error: Option<String>,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "INSERT OR REPLACE INTO client_replies (room, client_id, reply, error) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![room, client_id, reply, error],
            )
            .map(drop)
        })
        .await
    }
}

/// The newest `limit` messages of `room` older than `before`, newest first.
pub(super) fn select_messages(
    conn: &Connection,
    room: &str,
    before: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Vec<DuetMessage>> {
    let sql = match before {
        Some(_) => format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE room = ?1 AND id < ?3 ORDER BY id DESC LIMIT ?2"
        ),
        None => format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE room = ?1 ORDER BY id DESC LIMIT ?2"
        ),
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = match before {
        Some(b) => stmt.query_map(params![room, limit as i64, b], message_from_row)?,
        None => stmt.query_map(params![room, limit as i64], message_from_row)?,
    };
    rows.collect()
}

/// A column that does not convert.
pub(super) fn conversion(
    index: usize,
    e: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
}

/// An unknown enum value found in the database.
#[derive(Debug, thiserror::Error)]
#[error("unknown value {0:?}")]
pub(super) struct UnknownValue(pub(super) String);

/// A message from its row (`MESSAGE_COLUMNS`).
fn message_from_row(r: &Row<'_>) -> rusqlite::Result<DuetMessage> {
    let role: String = r.get(1)?;
    let runs: Option<String> = r.get(5)?;
    let to: Option<String> = r.get(7)?;
    let event: Option<String> = r.get(8)?;
    let usage: Option<String> = r.get(10)?;
    Ok(DuetMessage {
        id: r.get(0)?,
        role: Role::parse(&role).ok_or_else(|| conversion(1, UnknownValue(role)))?,
        user_id: r.get(2)?,
        text: r.get(3)?,
        ts: r.get(4)?,
        runs: match runs {
            Some(json) => Some(serde_json::from_str(&json).map_err(|e| conversion(5, e))?),
            None => None,
        },
        client_id: r.get(6)?,
        to: match to.as_deref() {
            None => None,
            Some("agent") => Some(Addressee::Agent),
            Some("room") => Some(Addressee::Room),
            Some(other) => return Err(conversion(7, UnknownValue(other.to_string()))),
        },
        event: match event {
            Some(json) => Some(serde_json::from_str(&json).map_err(|e| conversion(8, e))?),
            None => None,
        },
        cancelled_by: r.get(9)?,
        // A usage this build cannot read is left out, not an error.
        usage: usage.and_then(|json| serde_json::from_str(&json).ok()),
    })
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;

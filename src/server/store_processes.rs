//! The store's rows of background processes: the listed ones (running,
//! and the last ended) with their logs, so the list outlives an unload and
//! a restart (docs/protocol.md "Background processes and ports"). A row is
//! written when a process starts, when it ends, and when the server stops;
//! a process still `running` when its room loads ran in a sandbox that went
//! away, so it loads as `exited` with no exit code.

use super::store::Store;
use crate::protocol::{Process, ProcessStatus};
use rusqlite::{Connection, params};

/// A listed process and its logs, as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredProcess {
    pub(crate) process: Process,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS processes (
    room TEXT NOT NULL, id TEXT NOT NULL, number INTEGER NOT NULL, process TEXT NOT NULL,
    stdout TEXT NOT NULL, stderr TEXT NOT NULL,
    PRIMARY KEY (room, id)
) WITHOUT ROWID;
";

/// Rooms made before processes were kept count theirs from 1.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    if conn
        .prepare("SELECT next_process FROM rooms LIMIT 0")
        .is_err()
    {
        conn.execute_batch("ALTER TABLE rooms ADD COLUMN next_process INTEGER NOT NULL DEFAULT 0")?;
    }
    Ok(())
}

/// The number in a process id (`p7`: 7).
fn number(id: &str) -> i64 {
    id.strip_prefix('p')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A room's listed processes, oldest first, those that were running
/// marked (and kept) as ended at `now`; and the last process number used.
pub(super) fn load(
    conn: &Connection,
    room: &str,
    now: u64,
) -> rusqlite::Result<(Vec<StoredProcess>, u64)> {
    let mut stmt = conn
        .prepare("SELECT process, stdout, stderr FROM processes WHERE room = ?1 ORDER BY number")?;
    let rows = stmt.query_map(params![room], |r| {
        Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?))
    })?;
    let mut processes = Vec::new();
    for row in rows {
        let (json, stdout, stderr) = row?;
        // A row this server cannot read is left out, not a room that
        // cannot load.
        let Ok(process) = serde_json::from_str::<Process>(&json) else {
            tracing::warn!(room, "a stored process could not be read: {json}");
            continue;
        };
        let mut stored = StoredProcess {
            process,
            stdout,
            stderr,
        };
        if stored.process.status == ProcessStatus::Running {
            stored.process.status = ProcessStatus::Exited;
            stored.process.exit_code = None;
            stored.process.ended_at = Some(now);
            put(conn, room, &stored)?;
        }
        processes.push(stored);
    }
    let next: i64 = conn.query_row(
        "SELECT next_process FROM rooms WHERE id = ?1",
        params![room],
        |r| r.get(0),
    )?;
    Ok((processes, next.max(0) as u64))
}

fn put(conn: &Connection, room: &str, stored: &StoredProcess) -> rusqlite::Result<()> {
    let json = super::store::json_text(&stored.process)?;
    let number = number(&stored.process.id);
    conn.execute(
        "INSERT OR REPLACE INTO processes (room, id, number, process, stdout, stderr) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            room,
            stored.process.id,
            number,
            json,
            stored.stdout,
            stored.stderr
        ],
    )?;
    conn.execute(
        "UPDATE rooms SET next_process = MAX(next_process, ?2) WHERE id = ?1",
        params![room, number],
    )?;
    Ok(())
}

impl Store {
    /// Keeps what is known of a listed process now (it is written after
    /// what was sent to the store before it, and a failure is logged).
    pub(crate) fn save_process(&self, room: String, stored: StoredProcess) {
        self.submit("storing a process", move |conn| put(conn, &room, &stored));
    }

    /// Forgets processes no longer listed (ended longer ago than the
    /// last ones kept).
    pub(crate) fn forget_processes(&self, room: String, ids: Vec<String>) {
        self.submit("forgetting processes", move |conn| {
            for id in ids {
                conn.execute(
                    "DELETE FROM processes WHERE room = ?1 AND id = ?2",
                    params![room, id],
                )?;
            }
            Ok(())
        });
    }
}

//! The store's rows of commands (`execs`): a row is written when a command
//! starts (`ended` false), its output as it comes, and whole when it ends;
//! a room keeps them all until a cleanup (its state loads the most recent
//! `STATE_EXECS`). A row a crash left unended is ended by the next start
//! (docs/protocol.md "A command the server's stop cut off").

use super::store::{Store, StoreError, UnknownValue, conversion};
use crate::protocol::{ExecRecord, ExecSource};
use rusqlite::{Connection, Row, params};

/// Commands stored before they were written as they run had ended.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for (column, kind) in EXEC_ADDED_COLUMNS {
        if conn
            .prepare(&format!("SELECT {column} FROM execs LIMIT 0"))
            .is_err()
        {
            conn.execute_batch(&format!("ALTER TABLE execs ADD COLUMN {column} {kind}"))?;
        }
    }
    Ok(())
}

/// Columns of `execs` added later: a command's `error`, whether it
/// ended (a row is written when the command starts, its output as it
/// comes), and how it was stopped (`timeout`, `interrupted`).
const EXEC_ADDED_COLUMNS: [(&str, &str); 3] = [
    ("error", "TEXT"),
    ("ended", "INTEGER NOT NULL DEFAULT 1"),
    ("stopped", "TEXT"),
];

/// Writes the row of command `rec`, replacing the one it had.
fn put_exec(conn: &Connection, room: &str, rec: &ExecRecord, ended: bool) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO execs (room, exec_id, cmd, by_name, source, stdout, stderr, \
         exit_code, duration, ts, truncated, error, ended, stopped) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        room,
        rec.exec_id,
        rec.cmd,
        rec.by,
        rec.source.as_str(),
        rec.stdout,
        rec.stderr,
        rec.exit_code,
        rec.duration as i64,
        rec.ts,
        rec.truncated,
        rec.error,
        ended,
        stopped_column(rec)
    ])
    .map(drop)
}

/// The `stopped` column of a command.
fn stopped_column(rec: &ExecRecord) -> Option<&'static str> {
    if rec.timed_out {
        Some("timeout")
    } else if rec.interrupted {
        Some("interrupted")
    } else {
        None
    }
}

/// Ends every command a stopped server left running (nothing runs while
/// the store opens): kept with what it printed, no exit code and `error`.
pub(super) fn close_unended(conn: &Connection, error: &str) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE execs SET ended = 1, exit_code = NULL, error = ?1 WHERE ended = 0",
        params![error],
    )
}

impl Store {
    /// A command starts: the room's next command number (so no id is used
    /// twice) and its row (`ended` false: left so by a crash, the next
    /// start ends it), in one transaction.
    pub(crate) async fn start_exec(
        &self,
        room: String,
        rec: ExecRecord,
        next_exec: u64,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.prepare_cached("UPDATE rooms SET next_exec = ?2 WHERE id = ?1")?
                .execute(params![room, next_exec])?;
            put_exec(&tx, &room, &rec, false)?;
            tx.commit()
        })
        .await
    }

    /// Stores a command's record (it ended). Every one is kept until a
    /// cleanup: `GET /execs` and `duet export` page through them all.
    pub(crate) async fn insert_exec(
        &self,
        room: String,
        rec: ExecRecord,
    ) -> Result<(), StoreError> {
        self.call(move |conn| put_exec(conn, &room, &rec, true))
            .await
    }

    /// What a running command printed so far (a row `start_exec` began
    /// and that has not ended).
    pub(crate) async fn exec_output(
        &self,
        room: String,
        rec: ExecRecord,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.prepare_cached(
                "UPDATE execs SET stdout = ?3, stderr = ?4, truncated = ?5, duration = ?6 \
                 WHERE room = ?1 AND exec_id = ?2 AND ended = 0",
            )?
            .execute(params![
                room,
                rec.exec_id,
                rec.stdout,
                rec.stderr,
                rec.truncated,
                rec.duration as i64
            ])
            .map(drop)
        })
        .await
    }

    /// A page of `room`'s commands older than `before`, oldest first, and
    /// whether older ones remain.
    pub(crate) async fn page_execs(
        &self,
        room: String,
        before: Option<String>,
        limit: usize,
    ) -> Result<(Vec<ExecRecord>, bool), StoreError> {
        self.call(move |conn| {
            let mut execs = select_execs(conn, &room, before.as_deref(), limit + 1)?;
            let more = execs.len() > limit;
            execs.truncate(limit);
            execs.reverse();
            Ok((execs, more))
        })
        .await
    }
}

/// Up to `limit` commands of `room` older than `before`, newest first.
pub(super) fn select_execs(
    conn: &Connection,
    room: &str,
    before: Option<&str>,
    limit: usize,
) -> rusqlite::Result<Vec<ExecRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT exec_id, cmd, by_name, source, stdout, stderr, exit_code, duration, ts, \
         truncated, error, stopped FROM execs WHERE room = ?1 AND ended = 1 \
         AND (?3 IS NULL OR exec_id < ?3) ORDER BY exec_id DESC LIMIT ?2",
    )?;
    stmt.query_map(params![room, limit as i64, before], exec_from_row)?
        .collect()
}

/// A command's record from its row.
fn exec_from_row(r: &Row<'_>) -> rusqlite::Result<ExecRecord> {
    let source: String = r.get(3)?;
    let stopped: Option<String> = r.get(11)?;
    Ok(ExecRecord {
        exec_id: r.get(0)?,
        cmd: r.get(1)?,
        by: r.get(2)?,
        source: match source.as_str() {
            "user" => ExecSource::User,
            "agent" => ExecSource::Agent,
            _ => return Err(conversion(3, UnknownValue(source))),
        },
        stdout: r.get(4)?,
        stderr: r.get(5)?,
        exit_code: r.get(6)?,
        duration: r.get::<_, i64>(7)?.max(0) as u64,
        ts: r.get(8)?,
        truncated: r.get(9)?,
        error: r.get(10)?,
        timed_out: stopped.as_deref() == Some("timeout"),
        interrupted: stopped.as_deref() == Some("interrupted"),
    })
}

//! The store's rows of invites (their tokens only as SHA-256), of each
//! room's approval policy and of the model it chose: all outlive restarts
//! and cleanups.

use super::store::{Store, StoreError};
use crate::protocol::{Invite, Policy, RoomRole};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// Tables of invites and policies (made with the others at open).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS invites (
    room TEXT NOT NULL, id TEXT NOT NULL, number INTEGER NOT NULL, role TEXT NOT NULL,
    name TEXT, token_hash TEXT NOT NULL UNIQUE, expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, by_name TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (room, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS policies (
    room TEXT PRIMARY KEY, policy TEXT NOT NULL, allow TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS room_models (
    room TEXT PRIMARY KEY, model TEXT NOT NULL
) WITHOUT ROWID;
";

/// An invite as stored: whose room, and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InviteRow {
    pub(crate) room: String,
    pub(crate) invite: Invite,
    pub(crate) token_hash: String,
    pub(crate) revoked: bool,
}

impl InviteRow {
    /// Whether its token still opens its room.
    pub(crate) fn usable(&self) -> bool {
        !self.revoked && self.invite.expires_at > crate::protocol::now_ms() as u64
    }
}

/// A room's policy and its own allow list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyRow {
    pub(crate) policy: Policy,
    pub(crate) allow: Vec<String>,
}

const INVITE_COLUMNS: &str =
    "room, id, role, name, token_hash, expires_at, created_at, by_name, revoked";

fn invite_from_row(r: &Row<'_>) -> rusqlite::Result<InviteRow> {
    let role: String = r.get(2)?;
    Ok(InviteRow {
        room: r.get(0)?,
        invite: Invite {
            id: r.get(1)?,
            role: RoomRole::parse(&role).unwrap_or(RoomRole::Viewer),
            name: r.get(3)?,
            expires_at: r.get::<_, i64>(5)? as u64,
            created_at: r.get::<_, i64>(6)? as u64,
            by: r.get(7)?,
        },
        token_hash: r.get(4)?,
        revoked: r.get(8)?,
    })
}

/// A room's invites, oldest first, revoked ones included.
pub(super) fn select_invites(conn: &Connection, room: &str) -> rusqlite::Result<Vec<InviteRow>> {
    let sql = format!("SELECT {INVITE_COLUMNS} FROM invites WHERE room = ?1 ORDER BY number");
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map(params![room], invite_from_row)?.collect()
}

/// A room's policy (the default when none was set).
pub(super) fn select_policy(conn: &Connection, room: &str) -> rusqlite::Result<PolicyRow> {
    let row = conn
        .query_row(
            "SELECT policy, allow FROM policies WHERE room = ?1",
            params![room],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .optional()?;
    Ok(
        row.map_or_else(PolicyRow::default, |(policy, allow)| PolicyRow {
            policy: Policy::parse(&policy).unwrap_or_default(),
            allow: serde_json::from_str(&allow).unwrap_or_default(),
        }),
    )
}

/// The model a room chose, if it chose one.
pub(super) fn select_model(conn: &Connection, room: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT model FROM room_models WHERE room = ?1",
        params![room],
        |r| r.get(0),
    )
    .optional()
}

impl Store {
    /// Keeps the model `room` chose.
    pub(crate) async fn set_model(&self, room: String, model: String) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "INSERT INTO room_models (room, model) VALUES (?1, ?2) \
                 ON CONFLICT (room) DO UPDATE SET model = ?2",
                params![room, model],
            )
            .map(|_| ())
        })
        .await
    }

    /// Keeps a new invite of `room`, numbered after its others; answers it
    /// with its id (`i{number}`).
    pub(crate) async fn insert_invite(
        &self,
        room: String,
        mut invite: Invite,
        token_hash: String,
    ) -> Result<Invite, StoreError> {
        self.call(move |conn| {
            let tx = conn.transaction()?;
            let number: i64 = tx.query_row(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM invites WHERE room = ?1",
                params![room],
                |r| r.get(0),
            )?;
            invite.id = format!("i{number}");
            tx.execute(
                "INSERT INTO invites (room, id, number, role, name, token_hash, expires_at, \
                 created_at, by_name) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    room,
                    invite.id,
                    number,
                    invite.role.as_str(),
                    invite.name,
                    token_hash,
                    invite.expires_at as i64,
                    invite.created_at as i64,
                    invite.by
                ],
            )?;
            tx.commit()?;
            Ok(invite)
        })
        .await
    }

    /// The invite whose token has `token_hash`, in any room.
    pub(crate) async fn invite_by_hash(
        &self,
        token_hash: String,
    ) -> Result<Option<InviteRow>, StoreError> {
        self.call(move |conn| {
            let sql = format!("SELECT {INVITE_COLUMNS} FROM invites WHERE token_hash = ?1");
            conn.query_row(&sql, params![token_hash], invite_from_row)
                .optional()
        })
        .await
    }

    /// Invite `id` of `room`, if it was ever made.
    pub(crate) async fn invite(
        &self,
        room: String,
        id: String,
    ) -> Result<Option<InviteRow>, StoreError> {
        self.call(move |conn| {
            let sql = format!("SELECT {INVITE_COLUMNS} FROM invites WHERE room = ?1 AND id = ?2");
            conn.query_row(&sql, params![room, id], invite_from_row)
                .optional()
        })
        .await
    }

    /// `room`'s invites, oldest first, revoked ones included.
    pub(crate) async fn invites(&self, room: String) -> Result<Vec<InviteRow>, StoreError> {
        self.call(move |conn| select_invites(conn, &room)).await
    }

    pub(crate) async fn revoke_invite(&self, room: String, id: String) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE invites SET revoked = 1 WHERE room = ?1 AND id = ?2",
                params![room, id],
            )
            .map(drop)
        })
        .await
    }

    pub(crate) async fn set_invite_role(
        &self,
        room: String,
        id: String,
        role: RoomRole,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE invites SET role = ?3 WHERE room = ?1 AND id = ?2",
                params![room, id, role.as_str()],
            )
            .map(drop)
        })
        .await
    }

    pub(crate) async fn set_policy(
        &self,
        room: String,
        policy: PolicyRow,
    ) -> Result<(), StoreError> {
        self.call(move |conn| {
            let allow = serde_json::to_string(&policy.allow)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
            conn.execute(
                "INSERT INTO policies (room, policy, allow) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (room) DO UPDATE SET policy = ?2, allow = ?3",
                params![room, policy.policy.as_str(), allow],
            )
            .map(drop)
        })
        .await
    }
}

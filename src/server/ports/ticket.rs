//! The ticket that carries a browser from Duet's preview route to the
//! preview's own origin: cookies of Duet's origin do not reach that one,
//! so the redirect's URL carries `duet_ticket`, which the preview origin
//! trades for its own cookie at once. A ticket opens that room's port
//! only, lasts a minute, never holds a token, and one made from an
//! invite names it (it stops working with the invite).

use crate::server::auth::Access;
use crate::server::router::App;
use std::time::{SystemTime, UNIX_EPOCH};

/// How long a ticket may be redeemed.
const LIFETIME_SECS: u64 = 60;

/// Seconds since the epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The key an invite's credentials are made with: its token's hash, while
/// the invite can be used.
pub(crate) async fn invite_key(app: &App, room: &str, invite_id: &str) -> Option<String> {
    Some(super::usable_invite(app, room, invite_id).await?.token_hash)
}

/// The MAC of a ticket for `room`'s `port` that expires at `expires`.
fn mac(key: &str, room: &str, port: u16, expires: u64) -> String {
    super::credential(key, room, &format!("{port}\0ticket\0{expires}"))
}

/// A ticket for a caller with `access` (`token`: the server's), or `None`
/// when its invite can no longer be used.
pub(crate) async fn issue(
    app: &App,
    token: &str,
    access: &Access,
    room: &str,
    port: u16,
) -> Option<String> {
    let expires = now() + LIFETIME_SECS;
    match access {
        Access::Server => Some(format!("{expires}.{}", mac(token, room, port, expires))),
        Access::Invite(invite) => {
            let key = invite_key(app, room, &invite.id).await?;
            Some(format!(
                "{expires}.{}.{}",
                invite.id,
                mac(&key, room, port, expires)
            ))
        }
    }
}

/// The access a ticket gives on `room`'s `port`, if it is one and has not
/// expired.
pub(crate) async fn redeem(
    app: &App,
    token: &str,
    room: &str,
    port: u16,
    ticket: &str,
) -> Option<Access> {
    let (expires, rest) = ticket.split_once('.')?;
    let expires: u64 = expires.parse().ok()?;
    let now = now();
    if expires < now || expires > now + LIFETIME_SECS {
        return None;
    }
    let (access, key, given) = match rest.split_once('.') {
        None => (Access::Server, token.to_string(), rest),
        Some((invite_id, given)) => {
            let row = super::usable_invite(app, room, invite_id).await?;
            (Access::Invite(row.invite), row.token_hash, given)
        }
    };
    let expected = mac(&key, room, port, expires);
    crate::server::auth::same(given, &expected).then_some(access)
}

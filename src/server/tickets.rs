//! Socket tickets (docs/protocol.md "The page"): browsers cannot set
//! `Authorization` on a WebSocket, and a token must never be in a request
//! line, so the page trades its token (`POST /api/rooms/{room}/ticket`,
//! ops/ticket.rs) for a ticket that opens this room's socket only
//! (`?ticket=`), for a short while, with the role of the token that made
//! it. A ticket is `{expiresAt}.{mac}` (the server's token) or
//! `{expiresAt}.{inviteId}.{mac}` (an invite's): an HMAC under a key of
//! this process, so it says nothing of any token and dies with a restart;
//! one made from an invite stands on that invite (revoked or expired, it
//! opens nothing) and gets its role as of the moment it is used.

use super::auth::Access;
use super::registry::Shared;
use crate::protocol::now_ms;
use base64::Engine;

/// The MAC of a ticket for `room`, of invite `invite` (empty: the server's
/// token), expiring at `expires` (ms).
fn mac(key: &[u8], room: &str, invite: &str, expires: u64) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let message = format!("duet socket ticket\0{room}\0{invite}\0{expires}");
    let tag = ring::hmac::sign(&key, message.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
}

/// A new ticket for a caller with `access` in `room`, and when it expires (ms).
pub(crate) fn issue(shared: &Shared, room: &str, access: &Access) -> (String, u64) {
    let expires = now_ms() as u64 + shared.ticket_lifetime.as_millis() as u64;
    let ticket = match access.invite_id() {
        None => format!("{expires}.{}", mac(&shared.ticket_key, room, "", expires)),
        Some(id) => format!(
            "{expires}.{id}.{}",
            mac(&shared.ticket_key, room, id, expires)
        ),
    };
    (ticket, expires)
}

/// What a ticket is, if it is one of `room` that has not expired: the
/// server's access, or the id of the invite it stands on.
pub(crate) fn check(shared: &Shared, room: &str, ticket: &str) -> Option<Option<String>> {
    let (expires, rest) = ticket.split_once('.')?;
    let expires: u64 = expires.parse().ok()?;
    let now = now_ms() as u64;
    if expires <= now || expires > now + shared.ticket_lifetime.as_millis() as u64 {
        return None;
    }
    let (invite, given) = match rest.split_once('.') {
        None => (None, rest),
        Some((id, given)) => (Some(id.to_string()), given),
    };
    let expected = mac(
        &shared.ticket_key,
        room,
        invite.as_deref().unwrap_or(""),
        expires,
    );
    super::auth::same(given, &expected).then_some(invite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_bind_the_room_the_invite_and_the_expiry() {
        let key = [7u8; 32];
        let a = mac(&key, "r1", "", 1000);
        assert_eq!(a, mac(&key, "r1", "", 1000));
        assert_ne!(a, mac(&key, "r2", "", 1000));
        assert_ne!(a, mac(&key, "r1", "i1", 1000));
        assert_ne!(a, mac(&key, "r1", "", 1001));
        assert_ne!(a, mac(&[8u8; 32], "r1", "", 1000));
    }
}

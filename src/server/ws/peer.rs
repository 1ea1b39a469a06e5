//! Who a socket is, from its connect query: `user`, `_pk` (its presence
//! id) and `deltas=1`, each bad field named.

use crate::protocol::name_problem;
use crate::server::errors::add_detail;

/// Who is on a connection, from its query.
pub(super) struct Peer {
    /// Presence id: `_pk`, or one the server assigns.
    pub(super) id: String,
    /// `user`, if given.
    pub(super) user: Option<String>,
    /// `deltas=1`: state changes come as `duet_message`/`duet_state`.
    pub(super) deltas: bool,
}

/// Reads `user` and `_pk` from the query, naming bad fields.
pub(super) fn peer(query: Option<&str>, details: &mut crate::protocol::Details) -> Peer {
    let mut peer = Peer {
        id: format!("c{:016x}", rand::random::<u64>()),
        user: None,
        deltas: false,
    };
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "user" => match name_problem(&value) {
                Some(p) => add_detail(details, "user", p),
                None => peer.user = Some(value.into_owned()),
            },
            "_pk" => {
                if value.is_empty()
                    || value.chars().count() > 64
                    || value.chars().any(char::is_control)
                {
                    add_detail(details, "_pk", "must be 1-64 printable characters");
                } else {
                    peer.id = value.into_owned();
                }
            }
            "deltas" => peer.deltas = value == "1",
            _ => {}
        }
    }
    peer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_name_bad_fields() {
        let mut details = Default::default();
        let p = peer(Some("user=ada&_pk=abc"), &mut details);
        assert!(details.is_empty());
        assert_eq!((p.id.as_str(), p.user.as_deref()), ("abc", Some("ada")));
        assert!(!p.deltas);
        assert!(peer(Some("deltas=1"), &mut details).deltas);
        peer(Some(&format!("user={}", "x".repeat(40))), &mut details);
        assert!(details.contains_key("user"));
    }
}

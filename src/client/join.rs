//! How a person names a room to someone else, and to themselves later:
//! the room's address the status bar shows (never a token: a screen can
//! be shared or recorded), the room's link that `duet join` takes
//! (`[https://][TOKEN@]HOST[:PORT]/ROOM`), and the command that brings
//! this person back (same backend, same name) on quitting, after `/fork`
//! and after `duet fork`.

use crate::config::ClientSettings;
pub use crate::protocol::link::{Link, link, parse_link};
use crate::support::shell_quote;

/// How hints name this client's backend. No variant holds a token: what
/// the hints say is drawn on screens and printed on terminals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The embedded backend of a data directory (`None`: the default
    /// one): `duet --room R` finds it again, and its token, on this
    /// machine, whatever port it moved to.
    Embedded { data_dir: Option<String> },
    /// A server named by its URL; `token`: it takes one (the person's to
    /// give, never shown).
    Server { token: bool },
}

impl Backend {
    /// How the settings name the backend.
    pub fn of(settings: &ClientSettings) -> Backend {
        match settings.server {
            None => Backend::Embedded {
                data_dir: (!settings.default_data_dir)
                    .then(|| settings.data_dir.display().to_string()),
            },
            Some(_) => Backend::Server {
                token: settings.token.is_some(),
            },
        }
    }

    /// Whether joining takes a token (the embedded backend always has one).
    pub fn needs_token(&self) -> bool {
        match self {
            Backend::Embedded { .. } => true,
            Backend::Server { token } => *token,
        }
    }
}

/// The room's address: its link without a token (`127.0.0.1:8787/r1`,
/// `https://duet.example.com/r1`), what a screen may show.
pub fn address(server: &str, room: &str) -> String {
    link(server, room, None).unwrap_or_else(|| format!("{server}/{room}"))
}

/// What the status bar offers others: on a backend without a token, the
/// command that joins (`duet join ADDRESS`); with one, the room's address
/// alone (a working link, an invite, comes from the link key).
pub fn join_hint(backend: &Backend, server: &str, room: &str) -> String {
    let address = address(server, room);
    if backend.needs_token() {
        address
    } else {
        format!("duet join {address}")
    }
}

/// How `name` comes back to `room` (or goes to a fork of it): the same
/// backend, the same name. The embedded backend: `duet --room R` (it
/// starts again with the room's history if it stopped); a server: its URL,
/// with a word on the token that the line leaves out.
pub fn come_back(backend: &Backend, server: &str, room: &str, name: &str) -> String {
    let name = shell_quote(name);
    match backend {
        Backend::Embedded { data_dir } => {
            let dir = data_dir
                .as_deref()
                .map(|d| format!(" --data-dir {}", shell_quote(d)))
                .unwrap_or_default();
            format!("duet{dir} --room {room} --name {name}")
        }
        Backend::Server { token } => {
            let token = if *token {
                " (your token in DUET_TOKEN or --token, or `duet join` your invite link again)"
            } else {
                ""
            };
            format!("duet --server {server} --room {room} --name {name}{token}")
        }
    }
}

/// A new room id: 10 random lowercase letters and digits.
pub fn random_room() -> String {
    use rand::RngExt;
    const CHARS: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..10)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMBEDDED: Backend = Backend::Embedded { data_dir: None };

    #[test]
    fn no_hint_carries_a_token() {
        // The embedded backend's token is owner of every room: the bar
        // shows the address, the link key makes an invite.
        assert_eq!(
            join_hint(&EMBEDDED, "http://127.0.0.1:24242", "pairing"),
            "127.0.0.1:24242/pairing"
        );
        let remote = Backend::Server { token: true };
        assert_eq!(
            join_hint(&remote, "https://duet.example.com", "r1"),
            "https://duet.example.com/r1"
        );
        assert_eq!(
            come_back(&remote, "https://duet.example.com", "r1", "alice"),
            "duet --server https://duet.example.com --room r1 --name alice \
             (your token in DUET_TOKEN or --token, or `duet join` your invite link again)"
        );
        let link = parse_link("https://duet.example.com/r1").unwrap();
        assert_eq!(link.server, "https://duet.example.com");
        assert_eq!(link.token, None);
    }

    #[test]
    fn a_server_without_a_token_is_joined_by_its_address() {
        let open = Backend::Server { token: false };
        assert_eq!(
            join_hint(&open, "http://127.0.0.1:8787", "r1"),
            "duet join 127.0.0.1:8787/r1"
        );
        assert_eq!(
            come_back(&open, "http://127.0.0.1:8787", "r1", "bob"),
            "duet --server http://127.0.0.1:8787 --room r1 --name bob"
        );
    }

    #[test]
    fn coming_back_keeps_the_backend_and_the_name() {
        assert_eq!(
            come_back(&EMBEDDED, "http://127.0.0.1:1", "r1", "alice"),
            "duet --room r1 --name alice"
        );
        let elsewhere = Backend::Embedded {
            data_dir: Some("/tmp/my duet".into()),
        };
        assert_eq!(
            come_back(&elsewhere, "http://127.0.0.1:1", "fork2", "a b"),
            "duet --data-dir '/tmp/my duet' --room fork2 --name 'a b'"
        );
    }
}

//! How a person names a room to someone else, and to themselves later:
//! the join hint (a command that works from any terminal of this machine,
//! whatever its HOME), the room's link that `duet join` takes
//! (`[https://][TOKEN@]HOST[:PORT]/ROOM`), and the line printed on quitting
//! that says how to come back.

use crate::config::ClientSettings;
use crate::support::shell_quote;

/// Where a link points: a backend, a room on it, and the token it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The backend's base URL, `http://127.0.0.1:7878`.
    pub server: String,
    pub room: String,
    pub token: Option<String>,
}

/// Whether `server` is on this machine (loopback): its token is then a
/// secret of this machine's people, and the hint may carry it.
fn on_this_machine(server: &str) -> bool {
    let Ok(url) = url::Url::parse(server) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The link of `room` on `server` with `token`: the URL with the token as
/// its user and the room as its path, `http://` left out (the default).
/// Every character in it is plain to a shell (no `#`, `?`, `&` or spaces).
pub fn link(server: &str, room: &str, token: Option<&str>) -> Option<String> {
    let mut url = url::Url::parse(server).ok()?;
    if let Some(token) = token {
        url.set_username(token).ok()?;
    }
    url.set_path(room);
    let text = url.to_string();
    Some(match text.strip_prefix("http://") {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Reads a link as `duet join` takes it; says what is wrong with a bad one.
pub fn parse_link(text: &str) -> Result<Link, String> {
    let bad = |why: &str| {
        Err(format!(
            "{text:?} is not a room's link ({why}): it looks like [https://][TOKEN@]HOST[:PORT]/ROOM, \
             as the status bar of the room's duet shows it"
        ))
    };
    let full = if text.contains("://") {
        text.to_string()
    } else {
        format!("http://{text}")
    };
    let Ok(url) = url::Url::parse(&full) else {
        return bad("not a URL");
    };
    if !matches!(url.scheme(), "http" | "https") {
        return bad("use http:// or https://");
    }
    let Some(host) = url.host_str() else {
        return bad("no host");
    };
    if url.password().is_some() {
        return bad("a token goes before @, without a password");
    }
    let room = url.path().trim_matches('/');
    if !crate::protocol::valid_room_id(room) {
        return bad("its path must be a room id: 1–63 of A-Z a-z 0-9 _ -");
    }
    let token = percent_encoding::percent_decode_str(url.username())
        .decode_utf8()
        .map(|t| t.into_owned())
        .map_err(|_| "the token is not UTF-8".to_string())?;
    let server = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    Ok(Link {
        server,
        room: room.to_string(),
        token: (!token.is_empty()).then_some(token),
    })
}

/// The command with which a second terminal joins `room` on `server`. A
/// backend on this machine with a token (the embedded one's, say) gets the
/// room's link, token included: it works whatever the other terminal's
/// HOME, and is short. A remote server's token is the person's to share,
/// so there it is left out (`--token …`).
pub fn join_hint(server: &str, room: &str, token: Option<&str>) -> String {
    if token.is_some()
        && on_this_machine(server)
        && let Some(link) = link(server, room, token)
    {
        return format!("duet join {link}");
    }
    let token = if token.is_some() { " --token …" } else { "" };
    format!("duet --server {server} --room {room}{token}")
}

/// The join hint after the backend moved from `from` to `to`.
pub fn hint_moved(hint: &str, from: &str, to: &str) -> String {
    let (old, new) = (authority(from), authority(to));
    if old.is_empty() || new.is_empty() {
        return hint.to_string();
    }
    hint.replace(&old, &new)
}

/// `host:port` of a URL (empty when it has none).
fn authority(server: &str) -> String {
    match url::Url::parse(server) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            _ => String::new(),
        },
        Err(_) => String::new(),
    }
}

/// How this person comes back to `room`: on the embedded backend,
/// `duet --room R` (it starts the backend again, with the room's history);
/// on another backend, the same way a second terminal joins (`hint`).
pub fn come_back(settings: &ClientSettings, room: &str, hint: &str) -> String {
    if settings.server.is_some() {
        return hint.to_string();
    }
    let dir = if settings.default_data_dir {
        String::new()
    } else {
        format!(
            " --data-dir {}",
            shell_quote(&settings.data_dir.display().to_string())
        )
    };
    format!("duet{dir} --room {room}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_on_this_machine_is_a_link_that_reads_back() {
        let hint = join_hint("http://127.0.0.1:24242", "pairing", Some("Tok3n"));
        assert_eq!(hint, "duet join Tok3n@127.0.0.1:24242/pairing");
        let link = parse_link(hint.strip_prefix("duet join ").unwrap()).unwrap();
        assert_eq!(
            link,
            Link {
                server: "http://127.0.0.1:24242".into(),
                room: "pairing".into(),
                token: Some("Tok3n".into()),
            }
        );
        // A token with odd characters survives the round trip.
        let odd = link_of("http://localhost:1", "r", "a b@c");
        assert_eq!(parse_link(&odd).unwrap().token.as_deref(), Some("a b@c"));
        assert!(!odd.contains(' ') && !odd.contains('#'), "{odd}");
    }

    fn link_of(server: &str, room: &str, token: &str) -> String {
        link(server, room, Some(token)).unwrap()
    }

    #[test]
    fn a_server_without_a_token_is_named_as_it_was_given() {
        assert_eq!(
            join_hint("http://127.0.0.1:8787", "r1", None),
            "duet --server http://127.0.0.1:8787 --room r1"
        );
    }

    #[test]
    fn a_remote_servers_token_stays_out_of_the_hint() {
        assert_eq!(
            join_hint("https://duet.example.com", "r1", Some("secret")),
            "duet --server https://duet.example.com --room r1 --token …"
        );
        assert_eq!(
            join_hint("https://duet.example.com", "r1", None),
            "duet --server https://duet.example.com --room r1"
        );
        let link = parse_link("https://duet.example.com/r1").unwrap();
        assert_eq!(link.server, "https://duet.example.com");
        assert_eq!(link.token, None);
    }

    #[test]
    fn bad_links_say_what_a_link_looks_like() {
        for bad in [
            "127.0.0.1:1",
            "127.0.0.1:1/bad room",
            "ftp://h/r",
            "a:b@h/r",
        ] {
            let err = parse_link(bad).unwrap_err();
            assert!(err.contains("HOST[:PORT]/ROOM"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_moved_backend_moves_the_hint() {
        let hint = join_hint("http://127.0.0.1:24242", "r", Some("t"));
        assert_eq!(
            hint_moved(&hint, "http://127.0.0.1:24242", "http://127.0.0.1:25000"),
            "duet join t@127.0.0.1:25000/r"
        );
    }
}

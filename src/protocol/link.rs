//! A room's link, as `duet join` takes it and the status bar and invites
//! give it: `[https://][TOKEN@]HOST[:PORT]/ROOM`. Both backends make them
//! (an invite's `link`) and the client reads them.

/// Where a link points: a backend, a room on it, and the token it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The backend's base URL, `http://127.0.0.1:7878`.
    pub server: String,
    pub room: String,
    pub token: Option<String>,
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

/// The browser link of a room's link (an invite's `url`): `URL/r/ROOM#token=TOKEN`,
/// the token in the fragment, which a browser never sends (the page moves
/// it out of the address bar at once). `None` for a link without a token.
pub fn web_link(link: &str) -> Option<String> {
    let Link {
        server,
        room,
        token,
    } = parse_link(link).ok()?;
    let token: String = url::form_urlencoded::byte_serialize(token?.as_bytes()).collect();
    Some(format!("{server}/r/{room}#token={token}"))
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
    if !super::valid_room_id(room) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_reads_back() {
        let link = link("http://127.0.0.1:24242", "pairing", Some("Tok3n")).unwrap();
        assert_eq!(link, "Tok3n@127.0.0.1:24242/pairing");
        assert_eq!(
            parse_link(&link).unwrap(),
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

    #[test]
    fn a_browser_link_carries_the_token_in_its_fragment() {
        let web = web_link("http://duet_inv_ab12@127.0.0.1:8787/pairing").unwrap();
        assert_eq!(web, "http://127.0.0.1:8787/r/pairing#token=duet_inv_ab12");
        let web = web_link("https://a%20b%23c@duet.example/r1").unwrap();
        assert_eq!(web, "https://duet.example/r/r1#token=a+b%23c");
        assert_eq!(web_link("127.0.0.1:1/r1"), None);
    }

    fn link_of(server: &str, room: &str, token: &str) -> String {
        link(server, room, Some(token)).unwrap()
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
}

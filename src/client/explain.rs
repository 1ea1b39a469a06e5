//! What a person reads when the backend cannot be reached or says no: one
//! sentence per kind of failure, in the words of someone who does not know
//! reqwest or tungstenite. The technical chain goes to the log (and into
//! `Display` of the error types), never into these sentences alone.

use crate::client::http::{HttpError, StatusError};
use crate::client::rpc::RpcError;

/// The server as a person names it: `127.0.0.1:7878`, `duet.example.com`.
pub fn server_name(base: &str) -> String {
    match url::Url::parse(base) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            _ => base.to_string(),
        },
        Err(_) => base.to_string(),
    }
}

/// "Can't reach the server at 127.0.0.1:7878 (connection refused)".
pub fn unreachable(base: &str, cause: &str) -> String {
    format!("Can't reach the server at {} ({cause})", server_name(base))
}

/// What went wrong on the way to the server, in a few words: found in the
/// error's chain (an I/O error's kind, a name lookup, TLS), else the
/// innermost error's own text.
pub fn cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = err;
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(words) = e.downcast_ref::<std::io::Error>().and_then(io_words) {
            return words.to_string();
        }
        innermost = e;
        current = e.source();
    }
    let chain = crate::support::error_chain(err).to_lowercase();
    if chain.contains("dns error") || chain.contains("lookup address") {
        return "no such host".into();
    }
    if chain.contains("timed out") {
        return "timed out".into();
    }
    if chain.contains("certificate") || chain.contains("tls") {
        return format!("a secure connection failed: {innermost}");
    }
    innermost.to_string()
}

/// An I/O error's kind in a person's words (`None`: its text says more).
fn io_words(err: &std::io::Error) -> Option<&'static str> {
    use std::io::ErrorKind::*;
    Some(match err.kind() {
        ConnectionRefused => "connection refused",
        TimedOut => "timed out",
        ConnectionReset => "the connection was reset",
        ConnectionAborted | BrokenPipe => "the connection broke",
        UnexpectedEof => "the connection closed",
        NotConnected => "not connected",
        AddrNotAvailable => "the address is not available",
        HostUnreachable => "the host is unreachable",
        NetworkUnreachable => "the network is unreachable",
        NetworkDown => "the network is down",
        _ => return None,
    })
}

/// An error answer of the server as a sentence; the status and the
/// server's own words stay in it, in brackets. A busy answer (429, 503)
/// says nothing of when to try again: that is the caller's to say.
pub fn status(err: &StatusError) -> String {
    let said = err.to_string();
    match err.status {
        // One sentence for no token, a wrong one and a revoked invite alike.
        401 => {
            format!(
                "The server needs a valid token ({said}): none was given, or it is wrong, \
                 revoked or expired; give one with --token or DUET_TOKEN"
            )
        }
        // What the caller's role may not do: the server's sentence names both.
        403 if detail(err, "role").is_some() => format!(
            "{} ({} {})",
            not_allowed(detail(err, "role").unwrap_or_default()),
            err.status,
            err.error
        ),
        403 => format!("The server refused this client ({said})"),
        // A backend without a token says how to give it one.
        409 if detail(err, "token").is_some() => format!(
            "{} ({} {})",
            capitalized(detail(err, "token").unwrap_or_default()),
            err.status,
            err.error
        ),
        // A 404 with details is the room's answer (no such process), not
        // a path the server does not know.
        404 if err.details.is_some() => format!("Not in this room ({said})"),
        404 => format!("Nothing there ({said}): is the server URL a Duet backend?"),
        409 => format!("The room cannot do that now ({said})"),
        413 => format!("Too large for the server ({said})"),
        421 => format!(
            "The server does not answer to this host name ({said}): use 127.0.0.1, or a name it was given with --public-host"
        ),
        429 => format!("The room is busy ({})", err.error),
        503 => format!("The server is busy ({})", err.error),
        // A refused checkpoint says how much it needs and how much is free.
        507 if err.details.is_some() => format!("The room's disk is full ({said})"),
        507 => "The room's disk is full (507)".to_string(),
        502 => format!("Nothing answered inside the sandbox ({said})"),
        400..=499 => format!("The server refused the request ({said})"),
        _ => format!("The server failed ({said})"),
    }
}

/// The first reason the server gave for `field`, if any.
fn detail<'a>(err: &'a StatusError, field: &str) -> Option<&'a str> {
    err.details
        .as_ref()?
        .get(field)?
        .first()
        .map(String::as_str)
        .filter(|why| !why.is_empty())
}

/// What a role may not do, said to the person who has it: "You are a
/// viewer: a viewer may not run commands" (the sentence names the role:
/// the server's 403 and the client's own refusals alike).
pub fn not_allowed(sentence: &str) -> String {
    let role = sentence
        .strip_prefix("an ")
        .or_else(|| sentence.strip_prefix("a "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(crate::protocol::RoomRole::parse);
    match role {
        Some(role) => format!("You are {}: {sentence}", role.with_article()),
        None => format!("Your role does not allow that: {sentence}"),
    }
}

/// The socket was closed with 4401: the invite it came with was revoked
/// or expired (the close's reason says which). It does not come back.
pub fn invite_ended(reason: Option<&str>) -> String {
    let how = match reason {
        Some(r) if r.contains("revoked") => "was revoked".to_string(),
        Some(r) if r.contains("expired") => "expired".to_string(),
        Some(r) => format!("no longer works ({r})"),
        None => "no longer works".to_string(),
    };
    format!("Your invite to this room {how}: ask the room's owner for a new link")
}

/// The server refused an invite's token (401): revoked, expired, or for
/// another room.
pub fn invite_refused(err: &StatusError) -> String {
    format!(
        "The server refused your invite ({err}): it was revoked, has expired or is for another \
         room; ask the room's owner for a new link"
    )
}

/// `text` with a capital first letter, to start a sentence.
pub fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A busy answer that was tried again and still came back.
fn given_up(err: &StatusError) -> String {
    match err.status {
        429 | 503 => format!("{}; try again in a moment", status(err)),
        _ => status(err),
    }
}

/// An HTTP call's failure as a sentence.
pub fn http(err: &HttpError) -> String {
    match err {
        HttpError::Status(status_err) => given_up(status_err),
        HttpError::Transport { url, cause, .. } => unreachable(url, cause),
        HttpError::Decode { url, message } => format!(
            "The server at {} answered something unexpected ({message})",
            server_name(url)
        ),
        HttpError::Invalid(why) => why.clone(),
    }
}

/// Why a room operation has no success answer, as a sentence.
pub fn rpc(err: &RpcError) -> String {
    match err {
        RpcError::NotSent(why) => format!("not sent: {why}"),
        RpcError::Lost(_) => {
            "the connection dropped before the server answered; it may have been done".into()
        }
        RpcError::Failed(status_err) => given_up(status_err),
        RpcError::Refused(why) => format!("the server refused it ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_named_by_host_and_port() {
        assert_eq!(server_name("http://127.0.0.1:7878"), "127.0.0.1:7878");
        assert_eq!(server_name("https://duet.example.com/"), "duet.example.com");
        assert_eq!(server_name("not a url"), "not a url");
    }

    #[test]
    fn causes_are_found_in_the_chain() {
        #[derive(Debug)]
        struct Wrap(std::io::Error);
        impl std::fmt::Display for Wrap {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request for url (http://127.0.0.1:1/x)")
            }
        }
        impl std::error::Error for Wrap {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refused = Wrap(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(cause(&refused), "connection refused");
        let dns = Wrap(std::io::Error::other(
            "dns error: failed to lookup address information",
        ));
        assert_eq!(cause(&dns), "no such host");
        let odd = Wrap(std::io::Error::other("something odd"));
        assert_eq!(cause(&odd), "something odd");
    }

    #[test]
    fn answers_read_as_sentences_that_keep_the_status() {
        let token = StatusError::from_body(401, r#"{"error":"unauthorized"}"#);
        assert_eq!(
            status(&token),
            "The server needs a valid token (401 Unauthorized: unauthorized): none was given, or it is wrong, revoked or expired; give one with --token or DUET_TOKEN"
        );
        let busy = StatusError::from_body(429, r#"{"error":"rate limited","retryAfterMs":900}"#);
        assert_eq!(status(&busy), "The room is busy (rate limited)");
        let gone = StatusError::from_body(
            404,
            r#"{"error":"no such process","details":{"processId":["no process \"p9\" in this room"]}}"#,
        );
        assert_eq!(
            status(&gone),
            "Not in this room (404 Not Found: no such process; processId: no process \"p9\" in this room)"
        );
        let full = StatusError::from_body(409, r#"{"error":"too many processes"}"#);
        assert_eq!(
            status(&full),
            "The room cannot do that now (409 Conflict: too many processes)"
        );
        assert_eq!(
            rpc(&RpcError::Failed(busy)),
            "The room is busy (rate limited); try again in a moment"
        );
        let viewer = StatusError::from_body(
            403,
            r#"{"error":"forbidden","details":{"role":["a viewer may not run commands"]}}"#,
        );
        assert_eq!(
            status(&viewer),
            "You are a viewer: a viewer may not run commands (403 forbidden)"
        );
        assert_eq!(
            not_allowed("an owner may not do that"),
            "You are an owner: an owner may not do that"
        );
        let tokenless = StatusError::from_body(
            409,
            r#"{"error":"invites need a token","details":{"token":["this server has no token, so everyone in it is an owner: start it with --token (or DUET_TOKEN) to invite people with roles"]}}"#,
        );
        assert_eq!(
            status(&tokenless),
            "This server has no token, so everyone in it is an owner: start it with --token \
             (or DUET_TOKEN) to invite people with roles (409 invites need a token)"
        );
        assert_eq!(
            invite_ended(Some("the invite was revoked")),
            "Your invite to this room was revoked: ask the room's owner for a new link"
        );
        assert!(invite_ended(Some("the invite expired")).contains("room expired:"));
        assert_eq!(
            rpc(&RpcError::NotSent("you are offline".into())),
            "not sent: you are offline"
        );
    }
}

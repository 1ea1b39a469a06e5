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
        401 => format!("The server refused the token ({said}): check --token or DUET_TOKEN"),
        403 => format!("The server refused this client ({said})"),
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
            "The server refused the token (401 Unauthorized: unauthorized): check --token or DUET_TOKEN"
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
        assert_eq!(
            rpc(&RpcError::NotSent("you are offline".into())),
            "not sent: you are offline"
        );
    }
}

//! Browsers cannot reach in. Duet has no web page of its own, so a request
//! that carries an `Origin` header (only browsers send one) is refused with
//! 403 unless `--allow-origin` names that origin; and on a loopback listen
//! address a `Host` other than a loopback name (or a `--public-host`) is
//! refused with 421, which stops DNS rebinding. The CLI, curl and the Go
//! client send no `Origin` and a loopback `Host`, so they are unaffected.

use super::errors::ApiError;
use super::router::App;
use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Which browsers and host names the server answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct BrowserPolicy {
    /// Origins allowed to call the API, as browsers send them
    /// (`scheme://host[:port]`, compared without case).
    pub(crate) allowed_origins: Vec<String>,
    /// `Some`: the server listens on loopback and answers only these host
    /// names (without port). `None`: any host.
    pub(crate) hosts: Option<Vec<String>>,
}

impl BrowserPolicy {
    /// The policy for a server listening on `listen` (loopback names only
    /// there, plus `public_hosts`).
    pub(crate) fn new(
        listen: std::net::SocketAddr,
        allowed_origins: &[String],
        public_hosts: &[String],
    ) -> Self {
        let hosts = listen.ip().is_loopback().then(|| {
            ["127.0.0.1", "localhost", "[::1]"]
                .into_iter()
                .map(String::from)
                .chain(public_hosts.iter().map(|h| h.trim().to_ascii_lowercase()))
                .collect()
        });
        BrowserPolicy {
            allowed_origins: allowed_origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
            hosts,
        }
    }

    /// Why `req` is refused, if it is.
    fn refusal(&self, req: &Request) -> Option<ApiError> {
        // A port's preview is a web page, but at an origin of its own
        // (ports::by_host answers it before this check): Duet's origin
        // serves no page, so every browser request here is refused.
        if let Some(origin) = req.headers().get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.allowed_origins.contains(&origin) {
                return Some(ApiError::forbidden(
                    "origin",
                    "requests from web pages are refused: Duet's API is for its clients, \
                     not for browsers (start the server with --allow-origin ORIGIN to allow one)",
                ));
            }
        }
        if let (Some(hosts), Some(host)) = (&self.hosts, req.headers().get(HOST)) {
            let name = host_name(host.to_str().unwrap_or(""));
            if !hosts.contains(&name) {
                return Some(ApiError::misdirected(
                    "this server listens on loopback and answers only 127.0.0.1, localhost \
                     and [::1] (start it with --public-host NAME to answer another name)",
                ));
            }
        }
        None
    }
}

/// The host name of a `Host` header, lowercase, without its port.
pub(crate) fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if host.starts_with('[') {
        // [::1]:8787
        return match host.find(']') {
            Some(end) => host[..=end].to_string(),
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => host,
    }
}

/// Middleware refusing browsers and foreign host names.
pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    match app.browsers.refusal(&req) {
        Some(err) => err.into_response(),
        None => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder().uri("/api/rooms/a/message");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(axum::body::Body::empty()).unwrap()
    }

    fn loopback(origins: &[&str], hosts: &[&str]) -> BrowserPolicy {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        BrowserPolicy::new("127.0.0.1:8787".parse().unwrap(), &s(origins), &s(hosts))
    }

    #[test]
    fn origins_are_refused_unless_allowed() {
        let p = loopback(&["https://ok.example/"], &[]);
        let refused = p.refusal(&req(&[("origin", "https://evil.example")]));
        assert_eq!(refused.map(|e| e.status.as_u16()), Some(403));
        assert!(p.refusal(&req(&[("origin", "null")])).is_some());
        assert!(
            p.refusal(&req(&[("origin", "HTTPS://OK.example")]))
                .is_none()
        );
        assert!(p.refusal(&req(&[])).is_none());
    }

    #[test]
    fn loopback_answers_loopback_names_only() {
        let p = loopback(&[], &["duet.lan"]);
        for ok in [
            "127.0.0.1:8787",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8787",
            "duet.lan:80",
        ] {
            assert!(p.refusal(&req(&[("host", ok)])).is_none(), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8787",
            "127.0.0.1.evil.example",
        ] {
            let refused = p.refusal(&req(&[("host", bad)]));
            assert_eq!(refused.map(|e| e.status.as_u16()), Some(421), "{bad}");
        }
        let public = BrowserPolicy::new("0.0.0.0:8787".parse().unwrap(), &[], &[]);
        assert!(public.refusal(&req(&[("host", "duet.example")])).is_none());
    }
}

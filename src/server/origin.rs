//! Which browsers may reach in. Duet's own page (web.rs) is served at the
//! backend's own origin, so a request that carries an `Origin` header (only
//! browsers send one) is accepted when that origin is the request's own
//! (`scheme://Host`, the Host passing the rule below) or one that
//! `--allow-origin` names, and refused with 403 otherwise; and on a
//! loopback listen address a `Host` other than a loopback name (or a
//! `--public-host`) is refused with 421, which stops DNS rebinding (a
//! rebound name would otherwise be its own origin). Beyond loopback the
//! server always has a token, which a rebound page does not. The CLI, curl
//! and the Go client send no `Origin` and a loopback `Host`, so they are
//! unaffected. A port's preview has an origin of its own (ports::by_host
//! answers it before this check), which is never the API's.

use super::errors::ApiError;
use super::router::App;
use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// What a page of another origin is told.
pub(crate) const ORIGIN_REFUSED: &str = "requests from other web pages are refused: only Duet's own \
     page, at this server's origin, may call the API (start the server with --allow-origin ORIGIN \
     to allow another)";

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
        if let Some(origin) = req.headers().get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("").trim().to_ascii_lowercase();
            let own = super::auth::base_url(req.headers()).map(|o| o.to_ascii_lowercase());
            if own.as_deref() != Some(origin.as_str()) && !self.allowed_origins.contains(&origin) {
                return Some(ApiError::forbidden("origin", ORIGIN_REFUSED));
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
    fn the_own_origin_is_accepted_and_no_other() {
        let p = loopback(&[], &["duet.lan"]);
        let host = |h: &str, o: &str| p.refusal(&req(&[("host", h), ("origin", o)]));
        assert!(host("127.0.0.1:8787", "http://127.0.0.1:8787").is_none());
        assert!(host("localhost:8787", "HTTP://LOCALHOST:8787").is_none());
        assert!(host("duet.lan", "http://duet.lan").is_none());
        let status = |e: Option<ApiError>| e.map(|e| e.status.as_u16());
        // Another port, scheme or name of the same machine is another origin.
        assert_eq!(
            status(host("127.0.0.1:8787", "http://127.0.0.1:9000")),
            Some(403)
        );
        assert_eq!(
            status(host("127.0.0.1:8787", "https://127.0.0.1:8787")),
            Some(403)
        );
        assert_eq!(
            status(host("127.0.0.1:8787", "http://localhost:8787")),
            Some(403)
        );
        // A preview's origin (its own host) is not the API's.
        assert_eq!(
            status(host("127.0.0.1:8787", "http://8000-r1.localhost:8787")),
            Some(403)
        );
        assert_eq!(status(host("localhost:8787", "null")), Some(403));
        // A rebound name is its own origin, and still refused by its Host.
        assert_eq!(
            status(host("evil.example:8787", "http://evil.example:8787")),
            Some(421)
        );
        // Behind a proxy that says so, the own origin is https.
        let proxied = p.refusal(&req(&[
            ("host", "duet.lan"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://duet.lan"),
        ]));
        assert!(proxied.is_none());
        // Without a Host there is no own origin.
        assert_eq!(
            status(p.refusal(&req(&[("origin", "http://127.0.0.1:8787")]))),
            Some(403)
        );
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

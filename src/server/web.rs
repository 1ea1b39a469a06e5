//! The browser page (docs/web.md): `GET /` (type a room or paste a link)
//! and `GET /r/{room}` answer `assets/web/index.html`, `GET /web/{file}`
//! the folder's other files, all embedded at compile time (build.rs writes
//! the table). The page holds no secret, so these routes need no token;
//! the Host and Origin rules still apply (origin.rs). Every answer carries
//! a strict Content-Security-Policy: no inline script or style, nothing
//! from another origin. A browser that accepts gzip gets each file
//! compressed (once, then kept), as Cloudflare's edge does the worker's.

use std::io::Write as _;
use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The files of `assets/web/`, by name.
const ASSETS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// The page's Content-Security-Policy (docs/protocol.md "The page").
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether `path` is one of the page's routes (no token needed).
pub(crate) fn is_page(path: &str) -> bool {
    path == "/"
        || path
            .strip_prefix("/r/")
            .or_else(|| path.strip_prefix("/web/"))
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
}

/// The `Content-Type` of a file of the page, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("ico") => "image/x-icon",
        Some("png") => "image/png",
        Some("json") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The gzip of each file of the page, by its index in `ASSETS`, made on
/// first use.
fn gzipped(index: usize) -> &'static [u8] {
    static GZIPPED: OnceLock<Vec<OnceLock<Vec<u8>>>> = OnceLock::new();
    let all = GZIPPED.get_or_init(|| ASSETS.iter().map(|_| OnceLock::new()).collect());
    match (all.get(index), ASSETS.get(index)) {
        (Some(cell), Some((_, bytes))) => cell.get_or_init(|| gzip(bytes)),
        _ => &[],
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Whether the request's `Accept-Encoding` takes gzip (and not at `q=0`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            parts
                .next()
                .is_some_and(|name| name.eq_ignore_ascii_case("gzip"))
                && parts.all(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_none_or(|q| q > 0.0)
                })
        })
}

/// The page's file `name` as an answer, compressed when the browser takes it.
fn serve(name: &str, request: &HeaderMap) -> Response {
    let Some(index) = ASSETS.iter().position(|(n, _)| *n == name) else {
        return not_found();
    };
    let kind = content_type(name);
    let compressed = accepts_gzip(request)
        .then(|| gzipped(index))
        .filter(|g| !g.is_empty() && g.len() < ASSETS[index].1.len());
    let mut res = answer(StatusCode::OK, kind, compressed.unwrap_or(ASSETS[index].1));
    let headers = res.headers_mut();
    headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    if compressed.is_some() {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

/// An answer of the page's routes: `status`, `body`, and the headers
/// every one carries.
fn answer(status: StatusCode, content_type: &'static str, body: &'static [u8]) -> Response {
    let mut res = (status, body).into_response();
    let headers = res.headers_mut();
    for (name, value) in [
        (CONTENT_TYPE, content_type),
        (CACHE_CONTROL, "no-cache"),
        (HeaderName::from_static("content-security-policy"), CSP),
        (HeaderName::from_static("x-content-type-options"), "nosniff"),
        (HeaderName::from_static("referrer-policy"), "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    res
}

/// `GET /` and `GET /r/{room}`: the page.
pub(crate) async fn index(request: HeaderMap) -> Response {
    serve("index.html", &request)
}

/// `GET /web/{file}`: a file of the page.
pub(crate) async fn file(Path(name): Path<String>, request: HeaderMap) -> Response {
    serve(&name, &request)
}

/// 404, with the page's headers.
fn not_found() -> Response {
    answer(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        b"not found",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(name: &str) -> Option<&'static [u8]> {
        ASSETS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    #[test]
    fn the_page_is_embedded_with_its_types() {
        assert!(asset("index.html").is_some());
        assert!(asset("app.js").is_some());
        assert_eq!(content_type("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("x.svg"), "image/svg+xml");
        assert!(asset("../Cargo.toml").is_none());
    }

    #[test]
    fn gzip_is_sent_only_to_who_takes_it_and_unpacks_to_the_file() {
        let take = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
            accepts_gzip(&h)
        };
        assert!(take("gzip, deflate, br, zstd"));
        assert!(take("br;q=1.0, GZIP;q=0.5"));
        assert!(!take("br, deflate"));
        assert!(!take("gzip;q=0"));
        assert!(!take("gzip; q=0.000"));
        assert!(take("gzip;q=0.05"));
        assert!(!accepts_gzip(&HeaderMap::new()));
        let index = ASSETS.iter().position(|(n, _)| *n == "app.js").unwrap();
        let mut unpacked = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(gzipped(index)),
            &mut unpacked,
        )
        .unwrap();
        assert_eq!(unpacked, ASSETS[index].1);
    }

    #[test]
    fn only_the_page_routes_are_public() {
        for path in ["/", "/r/abc", "/web/app.js"] {
            assert!(is_page(path), "{path}");
        }
        for path in ["/r/", "/r/a/b", "/web/", "/web/x/y", "/api/rooms", "/rooms"] {
            assert!(!is_page(path), "{path}");
        }
    }

    #[test]
    fn the_page_has_no_inline_script_or_style() {
        for (name, bytes) in ASSETS.iter().filter(|(n, _)| n.ends_with(".html")) {
            let html = String::from_utf8_lossy(bytes).to_ascii_lowercase();
            for tag in html.split("<script").skip(1) {
                let tag = tag.split('>').next().unwrap_or_default();
                assert!(tag.contains(" src="), "{name}: an inline script");
            }
            assert!(!html.contains("<style"), "{name}: an inline style sheet");
            assert!(!html.contains(" style="), "{name}: a style attribute");
            assert!(
                !html.contains(" onclick=") && !html.contains(" onload="),
                "{name}"
            );
        }
        let index = String::from_utf8_lossy(asset("index.html").unwrap_or_default());
        assert!(index.contains(r#"<script type="module" src="/web/app.js">"#));
    }
}

//! The page's routes: `/`, `/r/{room}` and `/web/{file}` answer without a
//! token, with the strict CSP and the other headers; the Origin rule
//! accepts the backend's own origin and still refuses any other, a
//! preview's included.

use crate::common::access::{TOKEN, with_token};
use crate::common::{Server, answer, http};

/// The CSP of contract A, word for word.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// `GET path` without a token: status, headers, body.
async fn fetch(server: &Server, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let res = http().get(server.url(path)).send().await.expect("answers");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap_or_default())
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn the_page_is_served_without_a_token_with_a_strict_csp() {
    let (server, _dir) = with_token(&[]).await;
    for path in ["/", "/r/web-room", "/web/app.js", "/web/app.css"] {
        let (status, headers, body) = fetch(&server, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(header(&headers, "content-security-policy"), CSP, "{path}");
        assert_eq!(header(&headers, "x-content-type-options"), "nosniff");
        assert_eq!(header(&headers, "referrer-policy"), "no-referrer");
        let kind = header(&headers, "content-type");
        let expected = match path {
            "/web/app.js" => "text/javascript",
            "/web/app.css" => "text/css",
            _ => "text/html",
        };
        assert!(kind.starts_with(expected), "{path}: {kind}");
    }
    // Every file of the folder, as it is (the worker bundles a list of them).
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/web");
    for entry in std::fs::read_dir(&folder).expect("assets/web").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("/web/{name}");
        let (status, _, body) = fetch(&server, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        let file = std::fs::read_to_string(entry.path()).expect("a text file");
        assert!(body == file, "{path} is not assets/web/{name}");
    }
    // The page itself: a module script of its own, nothing inline.
    let (_, _, html) = fetch(&server, "/r/web-room").await;
    assert!(html.contains(r#"src="/web/app.js""#), "{html}");
    assert!(
        !html.contains(" style=") && !html.contains("<style"),
        "{html}"
    );
    // What the page is not.
    for path in ["/web/missing.js", "/web/..%2FCargo.toml"] {
        let (status, _, _) = fetch(&server, path).await;
        assert_eq!(status, 404, "{path}");
    }
    // Not the page's routes: the API's rules (no token, 401).
    for path in ["/r/", "/r/a/b"] {
        let (status, _, _) = fetch(&server, path).await;
        assert_eq!(status, 401, "{path}");
    }
    // The API still needs the token.
    let (status, _) = answer(http().get(server.url("/api/rooms/web-room/messages"))).await;
    assert_eq!(status, 401);
    let (status, _) = answer(
        http()
            .get(server.url("/api/rooms/web-room/messages"))
            .bearer_auth(TOKEN),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_page_keeps_the_host_rule() {
    if crate::common::only_duet_serve("the Host rule of a loopback listen address") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let (status, _) = answer(
        http()
            .get(server.url("/r/web-room"))
            .header("host", "rebind.evil.example:8787"),
    )
    .await;
    assert_eq!(status, 421);
}

/// A page's `POST` to read-only work (a message to the room) from `origin`.
async fn page_post(server: &Server, origin: &str) -> (u16, serde_json::Value) {
    answer(
        http()
            .post(server.url("/api/rooms/web-origin/message"))
            .bearer_auth(TOKEN)
            .header("origin", origin)
            .header("content-type", "text/plain")
            .body(r#"{"text":"from a page","to":"room"}"#),
    )
    .await
}

#[tokio::test]
async fn the_own_origin_is_accepted_and_others_are_still_refused() {
    let (server, _dir) = with_token(&[]).await;
    let own = format!("http://{}", server.addr);
    let (status, body) = page_post(&server, &own).await;
    assert_eq!(status, 200, "{body}");
    let port = server.addr.rsplit_once(':').map(|(_, p)| p).unwrap_or("0");
    for foreign in [
        "https://evil.example".to_string(),
        "null".to_string(),
        // (`https://` of the same host is another origin too, but wrangler
        // dev's proxy rewrites an Origin naming its own host: origin.rs's
        // unit tests pin it for duet serve.)
        format!("http://localhost.evil.example:{port}"),
        // A port's preview has an origin of its own, never the API's.
        format!("http://8000-web-origin.localhost:{port}"),
    ] {
        let (status, body) = page_post(&server, &foreign).await;
        assert_eq!(status, 403, "{foreign}: {body}");
        assert_eq!(body["error"], "forbidden");
        assert!(body["details"]["origin"][0].is_string(), "{body}");
    }
    // The socket's upgrade follows the same rule.
    let url = format!("ws://{}/api/rooms/web-origin/ws?token={TOKEN}", server.addr);
    assert_eq!(upgrade_with_origin(&url, &own).await, 101);
    assert_eq!(upgrade_with_origin(&url, "https://evil.example").await, 403);
}

/// The status of a socket upgrade of `url` carrying `Origin: origin`.
pub async fn upgrade_with_origin(url: &str, origin: &str) -> u16 {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("origin", origin.parse().expect("a header value"));
    match tokio::time::timeout(crate::common::WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("answers in time")
    {
        Ok((_, res)) => res.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status().as_u16(),
        Err(e) => panic!("unexpected socket error {e}"),
    }
}

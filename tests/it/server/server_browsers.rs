//! Browsers cannot reach in (docs/protocol.md "Browsers and host names"):
//! a web page the user visits (any origin but the backend's own, where
//! Duet's page is: neutral/web_access.rs) can neither call the token-less
//! loopback backend nor open a room's socket, and DNS rebinding gets 421; a page of
//! one room's preview (a real browser) reaches neither another room's
//! preview nor Duet's API, nor sets cookies beyond its own origin.

use crate::common;
use crate::common::apps::chromium;
use crate::common::{Server, WAIT, answer, http};
use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A page's `fetch` with a text/plain body, which needs no CORS preflight.
async fn page_post(server: &Server, origin: &str) -> (u16, serde_json::Value) {
    answer(
        http()
            .post(server.url("/api/rooms/r1/sandbox/exec"))
            .header("origin", origin)
            .header("content-type", "text/plain")
            .body(r#"{"cmd":"echo pwned > /workspace/pwned"}"#),
    )
    .await
}

/// The status of a socket upgrade with these extra headers.
async fn upgrade_status(server: &Server, headers: &[(&'static str, &str)]) -> u16 {
    let url = format!("ws://{}/api/rooms/r1/ws?user=eve", server.addr);
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        req.headers_mut()
            .insert(*k, v.parse().expect("a header value"));
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("answers in time")
    {
        Ok((_, res)) => res.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status().as_u16(),
        Err(e) => panic!("unexpected socket error {e}"),
    }
}

#[tokio::test]
async fn a_web_page_cannot_run_commands_or_join() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = page_post(&server, "https://evil.example").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "forbidden");
    assert!(
        body["details"]["origin"][0]
            .as_str()
            .unwrap()
            .contains("--allow-origin")
    );
    // Another port of the same machine is another origin.
    let port = server.addr.rsplit_once(':').map(|(_, p)| p).unwrap_or("0");
    let other = format!("http://localhost:{port}");
    assert_eq!(page_post(&server, &other).await.0, 403);
    assert_eq!(
        upgrade_status(&server, &[("origin", "https://evil.example")]).await,
        403
    );
    // Nothing ran.
    let (status, _) = answer(http().get(server.url("/api/rooms/r1/files/pwned"))).await;
    assert_eq!(status, 404);
    // Clients without Origin are unaffected.
    assert_eq!(upgrade_status(&server, &[]).await, 101);
    let (status, body) = server
        .post("/api/rooms/r1/sandbox/exec", json!({"cmd":"echo ok"}))
        .await;
    assert_eq!(
        (status, body["result"]["stdout"].as_str()),
        (200, Some("ok\n"))
    );
}

#[tokio::test]
async fn an_allowed_origin_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--allow-origin", "https://ide.example"]).await;
    let (status, body) = page_post(&server, "https://ide.example").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(page_post(&server, "https://other.example").await.0, 403);
}

#[tokio::test]
async fn dns_rebinding_is_refused_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--public-host", "duet.lan"]).await;
    let get = |host: &'static str| {
        answer(
            http()
                .get(server.url("/api/rooms/r1/messages"))
                .header("host", host),
        )
    };
    let (status, body) = get("rebind.evil.example:8787").await;
    assert_eq!(status, 421, "{body}");
    assert_eq!(body["error"], "misdirected request");
    assert!(
        body["details"]["host"][0]
            .as_str()
            .unwrap()
            .contains("--public-host")
    );
    assert_eq!(
        upgrade_status(&server, &[("host", "rebind.evil.example")]).await,
        421
    );
    for ok in ["localhost:1234", "127.0.0.1", "[::1]:9", "duet.lan"] {
        assert_eq!(get(ok).await.0, 200, "{ok}");
    }
}

/// The app of the browser test below, in both rooms (`python3 app.py PORT
/// ROLE NEXT [DUET]`). Room A's: `/` goes on to NEXT (room B's preview),
/// `/secret.txt` is A's secret, `/cookies` shows the cookies it was sent
/// and the `results` it is given. Room B's: `/` is a page that sets
/// cookies meant for Duet's origin and every preview (by its answer and
/// by script) and tries to reach room A's preview (NEXT), its files
/// through Duet's path for it, and Duet's API (DUET); then it goes to A's
/// `/cookies` with what it found.
const PAGES_PY: &str = r#"
import http.server, sys, urllib.parse, html

PORT, ROLE, NEXT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DUET = sys.argv[4] if len(sys.argv) > 4 else ""

B_PAGE = """<html><body><pre id=out>running</pre><script>
const out = [];
async function attempt(name, run) {
  try { out.push(name + ':' + await run()); } catch (e) { out.push(name + ':blocked'); }
}
async function read(url, options) {
  const r = await fetch(url, Object.assign({credentials: 'include'}, options || {}));
  const text = await r.text();
  return text.includes('A-secret') ? 'READ-A-SECRET' : 'status' + r.status;
}
(async () => {
  document.cookie = 'jscookie=1; domain=localhost; path=/';
  await attempt('a-preview', () => read(A + 'secret.txt'));
  await attempt('a-path', () => read('/api/rooms/ports-pages-a/ports/8000/secret.txt'));
  await attempt('api', () => read(DUET + '/api/rooms/ports-pages-a/messages'));
  await attempt('api-path', () => read(DUET + '/api/rooms/ports-pages-a/ports/8000/secret.txt'));
  await attempt('exec', async () => {
    await fetch(DUET + '/api/rooms/ports-pages-a/sandbox/exec', {method: 'POST', mode: 'no-cors',
      credentials: 'include', body: '{"cmd":"touch /workspace/pwned"}'});
    return 'sent';
  });
  out.push('b-cookies:' + document.cookie);
  location.href = A + 'cookies?results=' + encodeURIComponent(out.join(' '));
})();
</script></body></html>"""

class App(http.server.BaseHTTPRequestHandler):
    def send(self, status, body, cookies=()):
        body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        for c in cookies:
            self.send_header("Set-Cookie", c)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if ROLE == "a" and url.path == "/":
            self.send(200, "<script>location.href = %r</script>" % NEXT)
        elif ROLE == "a" and url.path == "/secret.txt":
            self.send(200, "A-secret")
        elif ROLE == "a" and url.path == "/cookies":
            results = urllib.parse.parse_qs(url.query).get("results", [""])[0]
            cookies = self.headers.get("Cookie") or ""
            names = sorted(c.split("=")[0].strip() for c in cookies.split(";") if c.strip())
            self.send(200, "<pre id=results>%s</pre><pre id=cookies>%s</pre>"
                      % (html.escape(results), html.escape(" ".join(names))))
        elif ROLE == "b" and url.path == "/":
            page = B_PAGE.replace("(async", "const A = %r, DUET = %r;\n(async" % (NEXT, DUET), 1)
            self.send(200, page, ["tracker=1; Domain=localhost; Path=/",
                                  "duet_preview=forged; Path=/"])
        else:
            self.send(404, "not here")

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", PORT), App).serve_forever()
"#;

/// A page of room B's preview, opened by a visitor who opened room A's
/// preview first (so holds A's cookie), cannot read A's preview (at its
/// origin, or through Duet's path for it), cannot call Duet's API, and
/// sets no cookie that reaches Duet's origin or another preview: each
/// preview has an origin of its own, never the API's.
#[tokio::test]
async fn a_preview_s_page_reaches_no_other_preview_nor_duet() {
    use common::apps::{ports, put_file, start};
    if common::only_duet_serve("a preview's own origin on loopback, in a real browser") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token = "browser-pages-token";
    let server = Server::start(dir.path(), &["--token", token]).await;
    let (a, b) = ("ports-pages-a", "ports-pages-b");
    let url_of = |ports: Vec<serde_json::Value>, room: &str| -> String {
        match ports[0]["url"].as_str() {
            Some(url) => url.to_string(),
            None => server.url(&format!("/api/rooms/{room}/ports/8000/")),
        }
    };
    let entry = |room: &str| server.url(&format!("/api/rooms/{room}/ports/8000/?token={token}"));
    let duet = server.url("").trim_end_matches('/').to_string();
    for room in [a, b] {
        put_file(&server, room, "app.py", PAGES_PY.as_bytes().to_vec()).await;
    }
    let started = |room: &'static str, cmd: String| {
        let server = &server;
        async move {
            start(server, room, json!({ "cmd": cmd })).await;
            common::apps::listening(server, room, 8000).await;
            ports(server, room).await
        }
    };
    // A's app knows B's entry (a path of Duet's); B's needs A's URL.
    let a_url = {
        let listed = started(a, format!("python3 app.py 8000 a {}", entry(b))).await;
        url_of(listed, a)
    };
    started(b, format!("python3 app.py 8000 b {a_url} {duet}")).await;

    let out = chromium(&["--virtual-time-budget=15000", "--dump-dom"], &entry(a)).await;
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    let between = |from: &str| -> String {
        dom.split_once(from)
            .and_then(|(_, rest)| rest.split_once("</pre>"))
            .map(|(inside, _)| inside.to_string())
            .unwrap_or_else(|| {
                panic!(
                    "the pages ran to A's /cookies; the DOM:\n{dom}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    let results = between("<pre id=\"results\">");
    let words: Vec<&str> = results.split_whitespace().collect();
    for expected in [
        "a-preview:blocked",
        "a-path:status404",
        "api:blocked",
        "api-path:blocked",
        "exec:sent",
    ] {
        assert!(words.contains(&expected), "{expected} among {results}");
    }
    assert!(!results.contains("READ-A-SECRET"), "{results}");
    // B's forged credential was dropped (its real one is HttpOnly).
    assert!(!results.contains("duet_preview"), "{results}");
    // A's origin was sent its own credential (it answered; the proxy
    // keeps Duet's cookie from the app) and nothing that B set.
    let cookies = between("<pre id=\"cookies\">");
    assert_eq!(cookies, "", "the cookies A's app got");
    let (status, _) = answer(
        http()
            .get(server.url(&format!("/api/rooms/{a}/files/pwned")))
            .bearer_auth(token),
    )
    .await;
    assert_eq!(status, 404, "nothing ran in room A");
}

//! A preview's own origin in a browser: the ticket and cookie that open it
//! (by hand and with Debian's headless Chromium), its WebSockets, the API
//! out of a browser's reach, and rebound host names refused.

use super::*;
use crate::common::apps::chromium;

#[tokio::test]
async fn a_browser_opens_the_preview_at_its_own_origin_with_a_cookie_for_it_only() {
    if common::only_duet_serve("a preview's own origin on loopback (the worker's is exposePort's)")
    {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-cookie";
    put_file(&server, room, "index.html", b"<p>the page</p>".to_vec()).await;
    http_server(&server, room, 8000).await;
    http_server(&server, room, 8001).await;
    http_server(&server, "ports-cookie-other", 8000).await;
    let client = http_no_redirect();
    let base = preview_url(&server, room, 8000, "/");
    let port = server.addr.rsplit(':').next().unwrap().to_string();

    // The state's ports carry the origin's URL.
    let listed = common::apps::ports(&server, room).await;
    let url = format!("http://8000-{room}.localhost:{port}/");
    assert!(
        listed.iter().any(|p| p["url"] == url.as_str()),
        "{listed:?}"
    );

    // No credential, or a wrong token: 401.
    for url in [base.clone(), format!("{base}?token=wrong")] {
        let res = client.get(&url).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 401, "{url}");
        assert_eq!(
            res.json::<Value>().await.unwrap(),
            json!({"error":"unauthorized"})
        );
    }
    // The token in the query of Duet's route: 303 to the preview's own
    // origin, the token traded for a ticket there; no cookie of Duet's.
    let res = client
        .get(format!("{base}index.html?a=1&token={TOKEN}&b=2"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert!(res.headers().get("set-cookie").is_none());
    let to = res.headers()["location"].to_str().unwrap().to_string();
    let (at, ticket) = to.split_once("&duet_ticket=").expect("a ticket");
    assert_eq!(at, format!("{url}index.html?a=1&b=2"));
    assert!(!to.contains(TOKEN), "{to}");
    // The ticket opens this origin only: another port's or room's refuses it.
    for other in [
        format!("http://8001-{room}.localhost:{port}/?duet_ticket={ticket}"),
        format!("http://8000-ports-cookie-other.localhost:{port}/?duet_ticket={ticket}"),
    ] {
        let res = common::apps::client_for(&server, &other)
            .get(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{other}");
    }
    let origin = common::apps::client_for(&server, &to);
    let res = origin.get(&to).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/index.html?a=1&b=2");
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    let mut parts = cookie.split(';').map(str::trim);
    let pair = parts.next().unwrap().to_string();
    let attrs: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
    for attr in ["httponly", "samesite=lax", "path=/"] {
        assert!(attrs.contains(&attr.to_string()), "{cookie}");
    }
    assert!(
        !attrs.iter().any(|a| a.starts_with("domain")),
        "host-only: {cookie}"
    );
    let value = pair.strip_prefix("duet_preview=").unwrap();
    assert!(
        !value.is_empty() && !value.contains(TOKEN),
        "not the token: {cookie}"
    );

    // The cookie opens this origin: all its paths are the app's…
    let page = format!("{url}index.html");
    let res = origin
        .get(&page)
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "<p>the page</p>");
    // …even the API's paths, which are the app's here, never Duet's.
    let res = origin
        .get(format!("{url}api/rooms/{room}/messages"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 404, "http.server's 404, not the API");
    assert!(!res.text().await.unwrap().contains("messages\""));
    // …and nothing else: not another port, not another room, not the API.
    for other in [
        format!("http://8001-{room}.localhost:{port}/"),
        format!("http://8000-ports-cookie-other.localhost:{port}/"),
        server.url(&room_path(room, "/messages")),
        server.url(&room_path(room, "/ports/8000/")),
    ] {
        let res = common::apps::client_for(&server, &other)
            .get(&other)
            .header("cookie", &pair)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{other}");
    }
    // A page of another origin cannot use it (nor the bearer token).
    let res = origin
        .get(&page)
        .header("cookie", &pair)
        .header("origin", format!("http://8001-{room}.localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
    // The token in the origin's own URL is traded the same way.
    let res = origin
        .get(format!("{url}?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/");
    assert!(
        res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with(&pair)
    );
    // The bearer token works at the origin too.
    let res = origin.get(&page).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_real_browser_opens_the_preview_with_the_token() {
    if common::only_duet_serve("a preview's own origin on loopback (the worker's is exposePort's)")
    {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-browser";
    put_file(
        &server,
        room,
        "index.html",
        b"<html><body><p id=page>preview-page</p><script src=\"app.js\"></script></body></html>"
            .to_vec(),
    )
    .await;
    // A script of the page, fetched with the cookie alone.
    put_file(
        &server,
        room,
        "app.js",
        b"document.getElementById('page').textContent = 'script-ran-' + (6 * 7);".to_vec(),
    )
    .await;
    http_server(&server, room, 8000).await;
    let url = preview_url(&server, room, 8000, &format!("/?token={TOKEN}"));
    let out = chromium(&["--dump-dom"], &url).await;
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("script-ran-42"),
        "the page and its script loaded through the cookie; the DOM:\n{dom}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn browsers_may_open_the_preview_but_not_the_api() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-origin";
    put_file(&server, room, "index.html", b"<p>app</p>".to_vec()).await;
    http_server(&server, room, 8000).await;
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    // Foreign origins, and an opaque one (a sandboxed frame's); the
    // backend's own origin is the page's (neutral::web_access).
    for origin in ["http://evil.example", "null"] {
        // Duet's preview route serves no page to a browser: the app's
        // pages live at the preview's own origin.
        let res = http()
            .get(preview_url(&server, room, 8000, "/index.html"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403, "{origin}");
        // Duet's API, from that page: refused like any browser.
        let (status, body) = answer(
            http()
                .post(server.url(&room_path(room, "/sandbox/exec")))
                .header("origin", origin)
                .header("content-type", "text/plain")
                .body(r#"{"cmd":"echo pwned > pwned"}"#),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert_eq!(body["error"], "forbidden");
        assert!(body["details"]["origin"][0].is_string(), "{body}");
        let (status, _) = answer(
            http()
                .get(server.url(&room_path(room, "/processes")))
                .header("origin", origin),
        )
        .await;
        assert_eq!(status, 403, "{origin}");
        // The tunnel is not a preview: a page cannot open it.
        let refused = tunnel_with(&server, room, "9000", &[("origin", origin)]).await;
        let (status, body) = refused.expect_err("the tunnel refuses a browser");
        assert_eq!(status, 403, "{origin}: {body}");
    }
    let listed = exec(&server, room, "ls").await;
    assert!(!listed["stdout"].as_str().unwrap().contains("pwned"));
    if common::only_duet_serve("a preview's own origin on loopback") {
        return;
    }
    // The preview's own origin answers its own pages, and no other's.
    let preview = common::apps::own_origin(&server, room, 8000).await;
    let res = preview
        .client
        .get(preview.url("/index.html"))
        .header("origin", &preview.base)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "<p>app</p>");
    // Duet's own origin is foreign to the preview's.
    let own = format!("http://{}", server.addr);
    for origin in ["http://evil.example", own.as_str(), "null"] {
        let res = preview
            .client
            .post(preview.url("/index.html"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 403, "{origin}");
    }
}

#[tokio::test]
async fn a_browser_s_websocket_opens_with_the_cookie_and_carries_no_credential() {
    if common::only_duet_serve("a preview's own origin on loopback") {
        return;
    }
    let (server, _dir) = protected().await;
    let room = "ports-ws-cookie";
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8100).await;
    let own = common::apps::own_origin(&server, room, 8100).await;
    // Without a credential: 401.
    let refused = origin_ws(&server, &own, "/socket", &[]).await;
    assert_eq!(refused.err(), Some(401));
    // With the cookie, as a browser on the preview's page sends it.
    let cookie = ("cookie", format!("theme=dark; {}", own.cookie));
    let mut ws = origin_ws(
        &server,
        &own,
        "/socket",
        &[cookie.clone(), ("origin", own.base.clone())],
    )
    .await
    .expect("the cookie opens the preview's socket");
    let seen = ws_headers(&mut ws).await;
    assert_eq!(header_values(&seen, "authorization"), Vec::<String>::new());
    assert_eq!(
        header_values(&seen, "cookie"),
        vec!["theme=dark".to_string()],
        "{seen}"
    );
    let value = own.cookie.strip_prefix("duet_preview=").unwrap();
    assert!(
        !seen.to_string().contains(value) && !seen.to_string().contains(TOKEN),
        "{seen}"
    );
    // A page of another origin (Duet's, another preview's) cannot open it.
    for origin in [server.url(""), "http://8000-x.localhost".to_string()] {
        let origin = origin.trim_end_matches('/').to_string();
        let refused = origin_ws(
            &server,
            &own,
            "/socket",
            &[cookie.clone(), ("origin", origin.clone())],
        )
        .await;
        assert_eq!(refused.err(), Some(403), "{origin}");
    }
    // With the token in the query: a socket cannot follow a redirect, so
    // it goes on with the token taken off.
    let mut ws = origin_ws(&server, &own, &format!("/socket?x=1&token={TOKEN}"), &[])
        .await
        .expect("the token opens the preview's socket");
    let path = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(path, Message::text("path:/socket?x=1"));
    // With the bearer token: no Authorization reaches the app either.
    let bearer = ("authorization", format!("Bearer {TOKEN}"));
    let mut ws = origin_ws(&server, &own, "/socket", &[bearer])
        .await
        .expect("the token opens the preview's socket");
    let seen = ws_headers(&mut ws).await;
    assert_eq!(
        header_values(&seen, "authorization"),
        Vec::<String>::new(),
        "{seen}"
    );
    assert!(!seen.to_string().contains(TOKEN), "{seen}");
}

#[tokio::test]
async fn the_preview_refuses_a_rebound_host_name() {
    // The worker has no Host check (Cloudflare routes by host).
    if common::only_duet_serve("the loopback Host check (421), which Cloudflare does not have") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let room = "ports-rebind";
    http_server(&server, room, 8000).await;
    let (status, body) = answer(
        http()
            .get(preview_url(&server, room, 8000, "/"))
            .header("host", "rebind.evil.example"),
    )
    .await;
    assert_eq!(status, 421, "{body}");
    assert_eq!(body["error"], "misdirected request");
    let refused = tunnel_with(&server, room, "8000", &[("host", "rebind.evil.example")]).await;
    assert_eq!(refused.expect_err("refused").0, 421);
    let (status, _) = preview_get(&server, room, 8000, "/").await;
    assert_eq!(status, 200, "with a loopback Host it answers");
}

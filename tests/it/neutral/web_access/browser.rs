//! The page in a real browser (headless Chromium over DevTools,
//! common/browser.rs), on both backends, opened from an invite's browser
//! link as a person would: a viewer sees the room live (a message, a
//! command's output, the terminal) and is refused with the server's
//! words; a writer's command and terminal keys reach another client; a
//! revoked link ends the session with a sentence; the token is never in a
//! request line (nor the address bar); the page reconnects after a
//! restart; it works from a LAN address (duet serve); screenshots at 1280x800 and 390x844 have no overlapping
//! panels and no cut text. Element ids are docs/web.md's.

use crate::common::access::{TOKEN, guest, with_token};
use crate::common::browser::Browser;
use crate::common::{Server, Ws, b64, unb64};
use serde_json::{Value, json};

/// An invite of `role` in `room`: its browser link and token.
async fn web_invite(server: &Server, room: &str, role: &str) -> (String, String, Value) {
    let (guest, invite) = guest(server, room, role, None).await;
    let link = format!("http://{}/r/{room}#token={}", server.addr, guest.token);
    (link, guest.token, invite)
}

/// Opens `link` and waits until the page is connected to the room.
async fn open_room(browser: &Browser, link: &str) {
    browser.open(link).await;
    browser.wait_text("#status", "connected").await;
}

/// The owner's socket, with the terminal open at 80x24: its `termId`.
async fn owner_terminal(server: &Server, room: &str) -> (Ws, Value) {
    let mut ws = server.joined(room, "user=ada&_pk=ada1").await;
    let answer = ws
        .rpc(1, "term_open", json!([{"cols": 80, "rows": 24}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    (ws, answer["result"]["termId"].clone())
}

/// Types `keys` into the terminal from `ws`.
async fn term_keys(ws: &mut Ws, term_id: &Value, keys: &str) {
    ws.send(json!({"type":"duet_term_input","termId":term_id,"data":b64(keys.as_bytes())}))
        .await;
}

/// Asserts that no URL the page asked for carries `token`, and that the
/// page logged no error (a CSP violation would be one).
fn assert_clean(browser: &Browser, token: &str) {
    let requests = browser.requests();
    assert!(!requests.is_empty());
    for url in &requests {
        assert!(!url.contains(token), "the token in a request line: {url}");
    }
    assert!(
        requests.iter().any(|u| u.contains("/ws?ticket=")),
        "the socket was opened with a ticket: {requests:?}"
    );
    assert_eq!(browser.errors(), Vec::<String>::new(), "the page's errors");
}

#[tokio::test]
async fn a_viewer_s_page_sees_the_room_live_and_is_refused_in_the_server_s_words() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-viewer";
    let (link, token, _) = web_invite(&server, room, "viewer").await;
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    // The token left the address bar at once.
    let href = browser.eval("location.href").await;
    assert_eq!(href, json!(format!("http://{}/r/{room}", server.addr)));
    browser.wait_text("#you", "viewer").await;
    // Someone's message, over HTTP.
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": "hello from ada", "to": "room", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    browser
        .wait_text("#chat .message.user", "hello from ada")
        .await;
    // A command's output, with its exit badge.
    let (status, body) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": "echo out-$((6*7)); exit 3", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    browser.wait_text("#chat .command .output", "out-42").await;
    browser.wait_text("#chat .command .badge", "3").await;
    // The terminal, drawn from the server's screen.
    let (mut ws, term_id) = owner_terminal(&server, room).await;
    term_keys(&mut ws, &term_id, "echo term-$((40+2))\r").await;
    browser.wait_text("#terminal", "term-42").await;
    // The viewer's command: refused, in the server's words.
    browser.focus("#input").await;
    browser.type_text("!echo not-allowed").await;
    browser.enter().await;
    browser
        .wait_text("#notice-text", "a viewer may not run commands")
        .await;
    assert_clean(&browser, &token);
}

#[tokio::test]
async fn a_writer_s_command_and_terminal_keys_reach_another_client() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-writer";
    let (link, token, _) = web_invite(&server, room, "writer").await;
    let (mut ws, term_id) = owner_terminal(&server, room).await;
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    browser.wait_text("#you", "writer").await;
    browser.focus("#input").await;
    browser.type_text("!echo from-the-$((1+1))-page").await;
    browser.enter().await;
    let done = ws
        .until(|f| {
            f["type"] == "duet_exec"
                && f["phase"] == "stdout"
                && f["data"]
                    .as_str()
                    .is_some_and(|d| d.contains("from-the-2-page"))
        })
        .await;
    assert_eq!(done["phase"], "stdout");
    browser
        .wait_text("#chat .command .output", "from-the-2-page")
        .await;
    // Keys into the terminal reach the owner's screen.
    browser
        .wait_for(
            "the terminal",
            "!document.querySelector('#terminal').hidden",
        )
        .await;
    browser.focus("#terminal-input").await;
    browser.type_text("echo keys-$((5*5))").await;
    browser.enter().await;
    let mut out = String::new();
    while !out.contains("keys-25") {
        let f = ws.next().await;
        if f["type"] == "duet_term" && f["phase"] == "data" && f["termId"] == term_id {
            out.push_str(&String::from_utf8_lossy(&unb64(&f["data"])));
        }
    }
    assert_clean(&browser, &token);
}

#[tokio::test]
async fn a_revoked_link_ends_the_page_s_session_with_a_sentence() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-revoked";
    let (link, _, invite) = web_invite(&server, room, "viewer").await;
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    let id = invite["id"].as_str().unwrap();
    let (status, body) =
        crate::common::apps::delete(&server, &format!("/api/rooms/{room}/invites/{id}")).await;
    assert_eq!(status, 200, "{body}");
    browser
        .wait_for(
            "the session to end",
            "document.body.dataset.ended === 'true'",
        )
        .await;
    let sentence = browser.text("#notice-text").await;
    assert!(sentence.contains("revoked"), "{sentence}");
    // And it stays ended: a reload does not get back in.
    browser
        .open(&format!("http://{}/r/{room}", server.addr))
        .await;
    browser
        .wait_for(
            "the session to end again",
            "document.body.dataset.ended === 'true'",
        )
        .await;
}

#[tokio::test]
async fn the_page_reconnects_after_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let server = crate::common::access::start_with_token(dir.path(), &listen, &[]).await;
    let room = "web-restart";
    let (link, token, _) = web_invite(&server, room, "writer").await;
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    server.stop().await;
    browser.wait_text("#status", "reconnecting").await;
    let server = crate::common::access::start_with_token(dir.path(), &listen, &[]).await;
    browser.wait_text("#status", "connected").await;
    let (status, _) = server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": "after the restart", "to": "room"}),
        )
        .await;
    assert_eq!(status, 200);
    browser
        .wait_text("#chat .message", "after the restart")
        .await;
    for url in browser.requests() {
        assert!(!url.contains(&token), "{url}");
    }
}

#[tokio::test]
async fn the_token_is_never_in_the_server_s_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // Everything either backend logs: duet serve's debug, wrangler's requests.
    let envs = [("DUET_LOG", "debug"), ("WRANGLER_LOG", "info")];
    let args = ["--token", TOKEN];
    let server = Server::start_logged_with_env(&data, &args, &envs, &log).await;
    let room = "web-log";
    let (link, token, _) = web_invite(&server, room, "writer").await;
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    browser.focus("#input").await;
    browser.type_text("!echo logged-$((2+2))").await;
    browser.enter().await;
    browser
        .wait_text("#chat .command .output", "logged-4")
        .await;
    // A second socket (a reload) asks for a new ticket.
    browser
        .open(&format!("http://{}/r/{room}", server.addr))
        .await;
    browser.wait_text("#status", "connected").await;
    assert_clean(&browser, &token);
    server.stop().await;
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!said.is_empty(), "the server logged something");
    assert!(!said.contains(&token), "the invite's token in the log");
    assert!(!said.contains(TOKEN), "the server's token in the log");
}

#[tokio::test]
async fn the_page_works_from_a_lan_address() {
    if crate::common::only_duet_serve("listening on a LAN address") {
        return;
    }
    // This machine's address on its network (no packet is sent).
    let lan = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|udp| udp.connect("192.0.2.1:9").map(|()| udp))
        .and_then(|udp| udp.local_addr())
        .map(|addr| addr.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    let Some(lan) = lan else {
        eprintln!("SKIPPED: this machine has no network address but loopback");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server =
        crate::common::access::start_with_token(dir.path(), &format!("0.0.0.0:{port}"), &[]).await;
    let room = "web-lan";
    let (guest, _) = guest(&server, room, "writer", None).await;
    let link = format!("http://{lan}:{port}/r/{room}#token={}", guest.token);
    let browser = Browser::start().await;
    open_room(&browser, &link).await;
    browser.wait_text("#you", "writer").await;
    browser.focus("#input").await;
    browser.type_text("!echo from-the-$((6*7))-lan").await;
    browser.enter().await;
    browser
        .wait_text("#chat .command .output", "from-the-42-lan")
        .await;
    assert_clean(&browser, &guest.token);
}

/// A free port (for a server that restarts on it).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The page's layout problems, measured in the page: panels whose boxes
/// overlap, and elements whose text is wider than their box (the
/// terminal, which scrolls sideways, excepted), and a page wider than the
/// window.
const LAYOUT_PROBLEMS: &str = r#"(() => {
  const problems = [];
  const box = (el) => el.getBoundingClientRect();
  const shown = (el) => el && !el.hidden && el.offsetParent !== null && box(el).width > 0;
  const panels = ['#bar', '#chat-pane', '.people-pane', '.terminal-pane']
    .map((s) => [s, document.querySelector(s)]).filter(([, el]) => shown(el));
  for (let i = 0; i < panels.length; i++) {
    for (let j = i + 1; j < panels.length; j++) {
      const [a, ea] = panels[i], [b, eb] = panels[j];
      const p = box(ea), q = box(eb);
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) problems.push(`${a} overlaps ${b}`);
    }
  }
  const texts = document.querySelectorAll('#bar *, #chat li, #chat li *, #people li, #composer *, .hint, .terminal-head *, #notice-text');
  for (const el of texts) {
    // Screen-reader text is a 1-pixel box on purpose.
    if (!shown(el) || el.closest('#terminal-scroll') || el.clientWidth <= 1) continue;
    const style = getComputedStyle(el);
    if (style.display === 'inline' || ['auto', 'scroll'].includes(style.overflowX)) continue;
    if (el.scrollWidth > el.clientWidth + 1) problems.push(`cut: ${el.tagName.toLowerCase()}#${el.id}.${el.className} (${el.scrollWidth} > ${el.clientWidth})`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) problems.push(`the page is wider than the window (${document.documentElement.scrollWidth} > ${window.innerWidth})`);
  return problems;
})()"#;

#[tokio::test]
async fn screenshots_at_a_desktop_s_and_a_phone_s_size_have_no_overlap_or_cut_text() {
    let (server, _dir) = with_token(&[]).await;
    let room = "web-layout";
    let (link, _, _) = web_invite(&server, room, "writer").await;
    let (mut ws, term_id) = owner_terminal(&server, room).await;
    term_keys(&mut ws, &term_id, "printf 'wide-%s ' $(seq 1 30); echo\r").await;
    let (status, _) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            json!({"cmd": "echo a-long-line-$(printf 'x%.0s' $(seq 1 200))", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200);
    server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": "a message with a long word: supercalifragilisticexpialidocious-and-then-some-more-text-without-spaces-to-wrap", "to": "room", "userId": "ada"}),
        )
        .await;
    let browser = Browser::start().await;
    let shots = tempfile::tempdir().unwrap();
    for (width, height, mobile) in [(1280, 800, false), (390, 844, true)] {
        browser.size(width, height, mobile).await;
        open_room(&browser, &link).await;
        browser
            .wait_text("#chat .command .output", "a-long-line")
            .await;
        browser.wait_text("#terminal", "wide-30").await;
        let path = shots.path().join(format!("room-{width}x{height}.png"));
        browser.screenshot(&path).await;
        let problems = browser.eval(LAYOUT_PROBLEMS).await;
        assert_eq!(
            problems,
            json!([]),
            "at {width}x{height} (screenshot {})",
            path.display()
        );
        assert!(std::fs::metadata(&path).is_ok_and(|m| m.len() > 1000));
    }
    // Kept for a person to look at when DUET_TEST_SCREENSHOTS names a folder.
    if let Some(keep) = std::env::var_os("DUET_TEST_SCREENSHOTS") {
        for entry in std::fs::read_dir(shots.path()).unwrap().flatten() {
            let _ = std::fs::copy(
                entry.path(),
                std::path::Path::new(&keep).join(entry.file_name()),
            );
        }
    }
}

/// The figures of docs/web.md (`scripts/bench-web` runs it): the bytes a
/// first load of the room's page transfers (the page and its files, as the
/// browser counted them) and the time from opening the link to the room's
/// first frame on screen (the page's `duet:first-frame` mark), over runs.
#[tokio::test]
#[ignore = "prints figures; scripts/bench-web runs it"]
async fn figures() {
    let runs: usize = std::env::var("DUET_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let (server, _dir) = with_token(&[]).await;
    let room = "web-figures";
    server
        .post(
            &format!("/api/rooms/{room}/message"),
            json!({"text": "a message so the room has a history", "to": "room", "userId": "ada"}),
        )
        .await;
    let browser = Browser::start().await;
    let (mut bytes, mut millis) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        // A fresh link each time: a new invite, a page loaded anew.
        let (link, _, _) = web_invite(&server, room, "viewer").await;
        browser.open("about:blank").await;
        browser.call("Network.clearBrowserCache", json!({})).await;
        open_room(&browser, &link).await;
        let first = browser
            .wait_for(
                "the first frame's mark",
                "(performance.getEntriesByName('duet:first-frame')[0] || {}).startTime",
            )
            .await;
        millis.push(first.as_f64().unwrap_or_default());
        let sent = browser
            .eval(
                "performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))\
                 .filter(e => !e.name.includes('/api/')).reduce((n, e) => n + e.transferSize, 0)",
            )
            .await;
        bytes.push(sent.as_f64().unwrap_or_default());
    }
    let spread = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let (b0, b1, b2) = spread(&mut bytes);
    let (t0, t1, t2) = spread(&mut millis);
    println!(
        "backend {:?}, {runs} runs: first load {b1:.0} bytes (min {b0:.0}, max {b2:.0}); \
         link to the room's first frame {t1:.0} ms (min {t0:.0}, max {t2:.0})",
        crate::common::backend()
    );
}

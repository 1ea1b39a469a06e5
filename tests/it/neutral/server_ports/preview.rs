//! Listening ports in the state and `GET …/ports`, and the HTTP preview:
//! files, 502 and 400, WebSockets, streamed bodies; any listener on any
//! address is a port; the port routes never start a sandbox.

use super::*;

#[tokio::test]
async fn a_listening_port_is_listed_and_its_preview_serves_the_files() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-files";
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let mut full = server.joined(room, "user=bob").await;
    let file = pattern(300 * 1024);
    put_file(&server, room, "site/data.bin", file.clone()).await;
    put_file(&server, room, "site/page.html", b"<p>hi</p>".to_vec()).await;
    put_file(&server, room, "site/two%20words.txt", b"spaced".to_vec()).await;
    let web = http_server(&server, room, 8000).await;
    let entry = json!({"port": 8000, "path": format!("/api/rooms/{room}/ports/8000/")});
    let listed = common::apps::ports(&server, room).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["port"], entry["port"]);
    assert_eq!(listed[0]["path"], entry["path"]);
    // The state says so: a patch for deltas sockets, a full state for others.
    let patch = deltas
        .until(|f| {
            f["type"] == "duet_state"
                && f["patch"]["ports"]
                    .as_array()
                    .is_some_and(|l| !l.is_empty())
        })
        .await;
    assert_eq!(patch["patch"]["ports"], json!(listed));
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["ports"]
                    .as_array()
                    .is_some_and(|l| !l.is_empty())
        })
        .await;
    assert_eq!(state["state"]["ports"], json!(listed));

    // The preview serves the files, byte for byte.
    let (status, bytes) = preview_get(&server, room, 8000, "/site/data.bin").await;
    assert_eq!(status, 200);
    assert!(
        bytes == file,
        "the file came back changed ({} bytes)",
        bytes.len()
    );
    let (status, bytes) = preview_get(&server, room, 8000, "/site/page.html?v=1").await;
    assert_eq!((status, bytes), (200, b"<p>hi</p>".to_vec()));
    let (status, _) = preview_get(&server, room, 8000, "/site/absent.txt").await;
    assert_eq!(status, 404, "the app's own answer");
    // The app's headers come back; the path goes as it was encoded.
    let res = with_token(
        &server,
        http().get(preview_url(&server, room, 8000, "/site/page.html")),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(res.headers()["content-type"], "text/html");
    let (status, bytes) = preview_get(&server, room, 8000, "/site/two%20words.txt").await;
    assert_eq!((status, bytes), (200, b"spaced".to_vec()));
    // Without its final slash: 308 to it, the query kept.
    let res = with_token(
        &server,
        http_no_redirect().get(preview_url(&server, room, 8000, "?a=1&b=two")),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 308);
    assert_eq!(
        location_path(&server, &res),
        format!("/api/rooms/{room}/ports/8000/?a=1&b=two")
    );

    // A second port: the list is sorted.
    http_server(&server, room, 7000).await;
    let ports: Vec<Value> = common::apps::ports(&server, room)
        .await
        .iter()
        .map(|p| p["port"].clone())
        .collect();
    assert_eq!(ports, vec![json!(7000), json!(8000)]);

    // When the process stops, its port goes, and the preview is a 502.
    let id = web["id"].as_str().unwrap();
    delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    wait_for("port 8000 to go", || async {
        let ports = common::apps::ports(&server, room).await;
        (!ports.iter().any(|p| p["port"] == 8000)).then_some(())
    })
    .await;
    deltas
        .until(|f| {
            f["type"] == "duet_state"
                && f["patch"]["ports"]
                    .as_array()
                    .is_some_and(|l| l.len() == 1 && l[0]["port"] == 7000)
        })
        .await;
    let (status, body) = server
        .get(&room_path(room, "/ports/8000/site/page.html"))
        .await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
}

#[tokio::test]
async fn nothing_listening_is_a_502_and_a_bad_port_a_400() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-bad";
    // Before the sandbox runs: these routes never start one.
    let (status, body) = server.get(&room_path(room, "/ports/8000/")).await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
    start(&server, room, json!({"cmd": "sleep 300"})).await;
    for port in [8001u16, 1, 65535] {
        let (status, body) = server
            .get(&room_path(room, &format!("/ports/{port}/x")))
            .await;
        assert_eq!((status, body), (502, nothing_listens(port)), "port {port}");
        let refused = tunnel_with(&server, room, &port.to_string(), &[]).await;
        assert_eq!(
            refused.err(),
            Some((502, nothing_listens(port))),
            "tunnel {port}"
        );
    }
    // A POST with a body, too.
    let req = with_token(
        &server,
        http()
            .post(preview_url(&server, room, 8001, "/form"))
            .body("x=1"),
    );
    assert_eq!(answer(req).await, (502, nothing_listens(8001)));
    for port in ["0", "65536", "abc", "-1", "80x", "99999999999"] {
        let (status, body) = server
            .get(&room_path(room, &format!("/ports/{port}/")))
            .await;
        assert_eq!(status, 400, "port {port}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        assert!(
            body["details"]["port"][0].is_string(),
            "port {port}: {body}"
        );
        let refused = tunnel_with(&server, room, port, &[]).await;
        let (status, body) = refused.expect_err("refused");
        assert_eq!(status, 400, "tunnel {port}: {body}");
        assert!(
            body["details"]["port"][0].is_string(),
            "tunnel {port}: {body}"
        );
    }
    // A port percent-encoded is no port either (its path would be lost).
    let (status, body) = server
        .get(&room_path(room, "/ports/%38000/abc/defgh?x=1"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["port"][0].is_string(), "{body}");
}

#[tokio::test]
async fn a_websocket_goes_through_the_preview() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-ws";
    python_app(&server, room, "ws_echo.py", WS_ECHO_PY, 8100).await;
    let url = format!(
        "ws://{}{}",
        server.addr,
        room_path(room, "/ports/8100/live/feed?x=1")
    );
    // A client's socket (a browser's goes to the preview's own origin).
    let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
        .await
        .expect("upgrades in time")
        .expect("the upgrade goes through the preview");
    let first = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first, Message::text("path:/live/feed?x=1"));
    let headers = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let headers: Value =
        serde_json::from_str(headers.to_text().unwrap().strip_prefix("headers:").unwrap()).unwrap();
    let seen = json!({ "headers": headers });
    assert_eq!(
        header_values(&seen, "host"),
        vec!["localhost:8100".to_string()]
    );
    assert_eq!(
        header_values(&seen, "x-forwarded-prefix"),
        vec![format!("/api/rooms/{room}/ports/8100")]
    );
    ws.send(Message::text("hello through the preview"))
        .await
        .unwrap();
    let back = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::text("hello through the preview"));
    let blob = pattern(200_000);
    ws.send(Message::binary(blob.clone())).await.unwrap();
    let back = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        back == Message::binary(blob),
        "the binary frame came back changed"
    );
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn bodies_stream_through_the_preview_both_ways() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-stream";
    python_app(&server, room, "echo_request.py", ECHO_REQUEST_PY, 8300).await;
    // An answer that comes in parts arrives in parts.
    let mut res = http()
        .get(preview_url(&server, room, 8300, "/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let first = tokio::time::timeout(WAIT, res.chunk())
        .await
        .expect("the first part before the rest was written")
        .unwrap()
        .expect("a first part");
    assert_eq!(&first[..], b"first\n");
    let (status, _) = answer(http().get(preview_url(&server, room, 8300, "/release"))).await;
    assert_eq!(status, 200);
    let rest = tokio::time::timeout(WAIT, res.bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&rest[..], b"second\n");
    // A request body larger than the API's 1 MiB goes to the app whole.
    let upload = pattern(5 * 1024 * 1024 + 3);
    let res = http()
        .post(preview_url(&server, room, 8300, "/save"))
        .body(upload.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let saved = http()
        .get(server.url(&room_path(room, "/files/saved.bin")))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(saved[..] == upload[..], "the app got {} bytes", saved.len());
}

#[tokio::test]
async fn listening_means_tcp_on_any_address() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-addresses";
    put_file(&server, room, "index.html", b"<p>v6</p>".to_vec()).await;
    // A UDP socket is not a listening port.
    let udp = start(
        &server,
        room,
        json!({"cmd": "python3 -c 'import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((\"0.0.0.0\", 5353)); print(\"bound\", flush=True); time.sleep(300)'"}),
    )
    .await;
    printed(&server, room, udp["id"].as_str().unwrap(), "bound").await;
    // IPv6 loopback only, where the sandbox has it.
    let has_v6 = exec(
        &server,
        room,
        "python3 -c 'import socket; socket.socket(socket.AF_INET6).bind((\"::1\", 0))' && echo yes",
    )
    .await;
    if has_v6["stdout"] == "yes\n" {
        start(
            &server,
            room,
            json!({"cmd": "python3 -m http.server 8600 --bind ::1"}),
        )
        .await;
        common::apps::listening(&server, room, 8600).await;
        let (status, bytes) = preview_get(&server, room, 8600, "/index.html").await;
        assert_eq!((status, bytes), (200, b"<p>v6</p>".to_vec()), "through ::1");
        let mut t = tunnel(&server, room, 8600).await;
        t.send(Message::binary(
            b"GET /index.html HTTP/1.0\r\n\r\n".to_vec(),
        ))
        .await
        .unwrap();
        let (raw, _) = read_tunnel(&mut t).await;
        assert_eq!(split_response(&raw).2, b"<p>v6</p>".to_vec());
    } else {
        eprintln!("the sandbox has no IPv6 loopback: the ::1 part is left out");
    }
    // 0.0.0.0 too; and after it was listed, still no UDP port.
    start(
        &server,
        room,
        json!({"cmd": "python3 -m http.server 8601 --bind 0.0.0.0"}),
    )
    .await;
    common::apps::listening(&server, room, 8601).await;
    let ports = common::apps::ports(&server, room).await;
    assert!(!ports.iter().any(|p| p["port"] == 5353), "{ports:?}");
}

#[tokio::test]
async fn any_listener_of_the_sandbox_is_a_port_not_only_a_process_s() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-any-listener";
    put_file(
        &server,
        room,
        "index.html",
        b"<p>from the shell</p>".to_vec(),
    )
    .await;
    // Started in the command shell, in the background (`!cmd &`).
    exec(
        &server,
        room,
        "nohup python3 -m http.server 8700 >/dev/null 2>&1 &",
    )
    .await;
    common::apps::listening(&server, room, 8700).await;
    let (status, bytes) = preview_get(&server, room, 8700, "/index.html").await;
    assert_eq!((status, bytes), (200, b"<p>from the shell</p>".to_vec()));
}

#[tokio::test]
async fn the_port_routes_never_start_a_sandbox() {
    // What runs below duet serve is a local fact (its process tree).
    if common::only_duet_serve("duet serve's process tree") {
        return;
    }
    let (server, _dir) = Server::fresh().await;
    let room = "ports-no-start";
    let (status, body) = server.get(&room_path(room, "/ports/8000/")).await;
    assert_eq!((status, body), (502, nothing_listens(8000)));
    let refused = tunnel_with(&server, room, "8000", &[]).await;
    assert_eq!(refused.err(), Some((502, nothing_listens(8000))));
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
    assert_eq!(
        common::procs::descendants(server.pid()),
        Vec::<u32>::new(),
        "no sandbox runs"
    );
    // A command starts one (so the check above could see one).
    exec(&server, room, "true").await;
    assert!(!common::procs::descendants(server.pid()).is_empty());
}

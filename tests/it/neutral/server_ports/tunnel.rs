//! The tunnel: a raw TCP connection over binary frames, every byte at any
//! rate, closed by a cleanup.

use super::*;

#[tokio::test]
async fn the_tunnel_carries_a_raw_tcp_connection() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-tunnel";
    let file = pattern(2 * 1024 * 1024 + 17);
    put_file(&server, room, "big.bin", file.clone()).await;
    http_server(&server, room, 8000).await;
    let _ada = server.joined(room, "user=ada").await;

    // HTTP/1.0 by hand: the port closes the connection after the answer.
    let mut t = tunnel(&server, room, 8000).await;
    t.send(Message::binary(
        b"GET /big.bin HTTP/1.0\r\nHost: localhost\r\n\r\n".to_vec(),
    ))
    .await
    .unwrap();
    let (raw, code) = read_tunnel(&mut t).await;
    assert_eq!(
        code,
        Some(1000),
        "the port closed it: the socket closes 1000"
    );
    let (status, head, body) = split_response(&raw);
    assert_eq!(status, 200, "{head}");
    assert!(
        body == file,
        "the file came back changed ({} bytes)",
        body.len()
    );

    // Tunnels are not in presence.
    let mut late = server.ws(room, "user=bob").await;
    late.until_type("cf_agent_state").await;
    let presence = late.until_type("duet_presence").await;
    let mut names: Vec<&str> = presence["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["ada", "bob"], "{presence}");

    // Any protocol, in many small frames: no frame rate applies.
    let echo = python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let echo_id = echo["id"].as_str().unwrap().to_string();
    // When the client closes, the connection is closed.
    let mut t = tunnel(&server, room, 9000).await;
    t.send(Message::binary(b"one".to_vec())).await.unwrap();
    let back = tokio::time::timeout(WAIT, t.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::binary(b"one".to_vec()));
    t.close(None).await.unwrap();
    printed(&server, room, &echo_id, "closed").await;
    let mut t = tunnel(&server, room, 9000).await;
    let mut sent = Vec::new();
    for i in 0..600u32 {
        let chunk = format!("frame {i};").into_bytes();
        sent.extend_from_slice(&chunk);
        t.send(Message::binary(chunk)).await.unwrap();
    }
    let mut got = Vec::new();
    while got.len() < sent.len() {
        match tokio::time::timeout(WAIT, t.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(sent).unwrap()
    );
    // A text frame is refused: the socket closes with 1003.
    t.send(Message::text("not bytes")).await.unwrap();
    let code = tokio::time::timeout(WAIT, async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("the tunnel broke instead of closing: {e}"),
                None => return None,
            }
        }
    })
    .await
    .expect("closed in time");
    assert_eq!(code, Some(1003));
}

#[tokio::test]
async fn tunnel_bytes_over_the_rate_are_never_dropped() {
    if common::only_duet_serve("--tunnel-bytes-per-sec, a duet serve flag") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--tunnel-bytes-per-sec", "65536"]).await;
    let room = "ports-rate";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut t = tunnel(&server, room, 9000).await;
    // Four times the rate, in one go: a burst of one second's worth, then
    // the rest as the bucket refills.
    let sent = pattern(256 * 1024);
    let started = std::time::Instant::now();
    let (mut tx, mut rx) = t.split();
    let payload = sent.clone();
    let writer = tokio::spawn(async move {
        for chunk in payload.chunks(16 * 1024) {
            tx.send(Message::binary(chunk.to_vec())).await.unwrap();
        }
        tx
    });
    let mut got = Vec::new();
    while got.len() < sent.len() {
        match tokio::time::timeout(WAIT, rx.next())
            .await
            .expect("echo in time")
        {
            Some(Ok(Message::Binary(b))) => got.extend_from_slice(&b),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the tunnel ended early: {other:?}"),
        }
    }
    assert!(got == sent, "every byte came back, in order");
    // How much slower it went is a figure, not a test (no timed assertions).
    eprintln!("256 KiB at 64 KiB/s took {:?}", started.elapsed());
    let tx = writer.await.unwrap();
    t = tx.reunite(rx).unwrap();
    t.close(None).await.unwrap();
}

#[tokio::test]
async fn a_cleanup_closes_the_tunnels_into_the_sandbox() {
    let (server, _dir) = Server::fresh().await;
    let room = "ports-cleanup";
    python_app(&server, room, "tcp_echo.py", TCP_ECHO_PY, 9000).await;
    let mut t = tunnel(&server, room, 9000).await;
    t.send(Message::binary(b"ping".to_vec())).await.unwrap();
    let back = tokio::time::timeout(WAIT, t.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::binary(b"ping".to_vec()));
    let (status, body) = server.post(&room_path(room, "/cleanup"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    // The port's end went with the sandbox: the socket ends.
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match t.next().await {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the tunnel stayed open after the cleanup");
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
}

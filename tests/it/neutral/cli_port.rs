//! `duet port` against a real `duet serve`: a file fetched from
//! `python3 -m http.server`, run as the room's background process, through
//! a local port, byte for byte; a port nobody listens on is said per
//! connection while the listener stays; Ctrl+C ends it. The ignored
//! `throughput_beside_a_direct_loopback_copy` measures a 100 MiB transfer
//! for the closing note (`--ignored --nocapture`).

use crate::common;
use crate::common::apps::{exec_stdout, http_server};
use crate::common::{Server, WAIT};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// `duet port PORT --local 0` on `room` with the server's token: the
/// child and the address it listens on (from its first line).
async fn forward(
    server: &Server,
    room: &str,
    port: u16,
) -> (Child, String, tokio::process::ChildStderr) {
    forward_with(server, server.token.as_deref(), room, port).await
}

/// As `forward`, with `token`.
async fn forward_with(
    server: &Server,
    token: Option<&str>,
    room: &str,
    port: u16,
) -> (Child, String, tokio::process::ChildStderr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
    cmd.args(["port", "--server", &server.url(""), "--room", room])
        .arg(port.to_string())
        .args(["--local", "0"])
        .env_remove("DUET_TOKEN");
    if let Some(token) = token {
        cmd.env("DUET_TOKEN", token);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::time::timeout(WAIT, BufReader::new(stdout).lines().next_line())
        .await
        .expect("duet port says where it listens")
        .unwrap()
        .expect("a line");
    let rest = line
        .strip_prefix("duet: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let (addr, to) = rest.split_once(", ").unwrap();
    assert_eq!(to, format!("forwarding to port {port} in room {room}"));
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    let stderr = child.stderr.take().unwrap();
    (child, addr.to_string(), stderr)
}

/// The bytes of `GET path` on `addr`, as a browser or curl would fetch them.
async fn fetch(addr: &str, path: &str) -> Vec<u8> {
    let res = common::http()
        .get(format!("http://{addr}{path}"))
        .send()
        .await
        .expect("the tunnel answers");
    assert_eq!(res.status(), 200);
    res.bytes().await.unwrap().to_vec()
}

/// Sends SIGINT (Ctrl+C) to the child; answers its exit status.
async fn interrupt(mut child: Child) -> std::process::ExitStatus {
    let pid = child.id().unwrap() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("Ctrl+C ends duet port")
        .unwrap()
}

#[tokio::test]
async fn a_file_comes_through_the_tunnel_byte_for_byte() {
    let (server, _dir) = Server::fresh().await;
    let room = "tunnel";
    exec_stdout(
        &server,
        room,
        "head -c 3000000 /dev/urandom > blob.bin; printf 'hello\\n' > hello.txt",
    )
    .await;
    http_server(&server, room, 8000).await;
    let (child, addr, _stderr) = forward(&server, room, 8000).await;

    assert_eq!(fetch(&addr, "/hello.txt").await, b"hello\n");
    let expected = common::http()
        .get(server.url(&format!("/api/rooms/{room}/files/blob.bin")))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // Several connections at once, each over its own tunnel.
    let (a, b) = tokio::join!(fetch(&addr, "/blob.bin"), fetch(&addr, "/blob.bin"));
    assert_eq!(a.len(), expected.len());
    assert!(a == expected && b == expected, "the bytes are the file's");

    let status = interrupt(child).await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn the_tunnel_carries_the_token_and_a_wrong_one_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--token", "s3cret-token"]).await;
    let room = "guarded";
    exec_stdout(&server, room, "printf 'behind the token\\n' > note.txt").await;
    http_server(&server, room, 8000).await;
    let (child, addr, _stderr) = forward(&server, room, 8000).await;
    assert_eq!(fetch(&addr, "/note.txt").await, b"behind the token\n");
    interrupt(child).await;

    let (child, addr, stderr) = forward_with(&server, Some("not-the-token"), room, 8000).await;
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(WAIT, tcp.read_to_end(&mut got)).await;
    let line = tokio::time::timeout(WAIT, BufReader::new(stderr).lines().next_line())
        .await
        .expect("duet port says why")
        .unwrap()
        .unwrap();
    assert!(
        line.contains("The server needs a valid token (401 Unauthorized"),
        "{line}"
    );
    interrupt(child).await;
}

#[tokio::test]
async fn nothing_listening_is_said_and_the_listener_stays() {
    let (server, _dir) = Server::fresh().await;
    let room = "no-listener";
    exec_stdout(&server, room, "true").await;
    let (child, addr, stderr) = forward(&server, room, 9999).await;
    let mut said = BufReader::new(stderr).lines();
    for _ in 0..2 {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let _ = tcp.write_all(b"GET / HTTP/1.0\r\n\r\n").await;
        let mut got = Vec::new();
        tokio::time::timeout(WAIT, tcp.read_to_end(&mut got))
            .await
            .expect("the connection is closed")
            .ok();
        assert!(got.is_empty(), "nothing came: {got:?}");
        let line = tokio::time::timeout(WAIT, said.next_line())
            .await
            .expect("duet port says why")
            .unwrap()
            .unwrap();
        assert!(
            line.contains("to port 9999")
                && line.contains("502")
                && line.contains("nothing listens on port 9999"),
            "{line}"
        );
    }
    let status = interrupt(child).await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
#[ignore = "a measurement for the closing note, not a check: --ignored --nocapture"]
async fn throughput_beside_a_direct_loopback_copy() {
    const SIZE: usize = 100 << 20;
    let (server, _dir) = Server::fresh().await;
    let room = "throughput";
    exec_stdout(
        &server,
        room,
        &format!("head -c {SIZE} /dev/zero > big.bin"),
    )
    .await;
    http_server(&server, room, 8000).await;
    let (child, addr, _stderr) = forward(&server, room, 8000).await;
    // Warm: python's first answer, the sandbox's page cache.
    assert_eq!(fetch(&addr, "/big.bin").await.len(), SIZE);
    let started = Instant::now();
    let got = fetch(&addr, "/big.bin").await;
    let tunnel = started.elapsed();
    assert_eq!(got.len(), SIZE);

    // The same file through the backend's HTTP preview, for comparison.
    let started = Instant::now();
    let via_preview = common::http()
        .get(server.url(&format!("/api/rooms/{room}/ports/8000/big.bin")))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let preview = started.elapsed();
    assert_eq!(via_preview.len(), SIZE);

    // The same bytes over a plain loopback TCP connection on this machine.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let chunk = vec![0u8; 64 << 10];
        for _ in 0..SIZE / chunk.len() {
            tcp.write_all(&chunk).await.unwrap();
        }
    });
    let started = Instant::now();
    let mut tcp = tokio::net::TcpStream::connect(local).await.unwrap();
    let mut read = 0;
    let mut buf = vec![0u8; 64 << 10];
    while read < SIZE {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0);
        read += n;
    }
    let direct = started.elapsed();
    let rate = |d: Duration| SIZE as f64 / (1 << 20) as f64 / d.as_secs_f64();
    println!(
        "100 MiB through duet port: {:.2} s ({:.0} MiB/s); through the HTTP preview: {:.2} s ({:.0} MiB/s); direct loopback copy: {:.2} s ({:.0} MiB/s)",
        tunnel.as_secs_f64(),
        rate(tunnel),
        preview.as_secs_f64(),
        rate(preview),
        direct.as_secs_f64(),
        rate(direct)
    );
    interrupt(child).await;
}

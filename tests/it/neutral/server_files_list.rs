//! The workspace as files, as docs/protocol.md "Files" says, over HTTP to a
//! real backend and sandbox: listing `/files/` and `/files/{dir}/` (byte
//! order, hidden files, the four types, sizes, mtimes in ms), the 404s,
//! `DELETE /files/{path}` of a file, a symlink, a folder, with its path
//! rules and its `delete` record; a FIFO or a socket is a 400 at once and
//! holds up nothing; big files stream both ways whole, and an upload too
//! large leaves the old file; the token in a query opens no file.
//! Backend-neutral: only the protocol.

use crate::common;
use crate::common::apps::{delete, exec, put_file, room_path, with_token};
use crate::common::{Server, answer, http};
use serde_json::{Value, json};

/// `GET …/files/{path}` (raw: `path` is sent as written): status and body.
async fn get(server: &Server, room: &str, path: &str) -> (u16, Value) {
    let url = server.url(&room_path(room, &format!("/files/{path}")));
    answer(with_token(server, http().get(url))).await
}

/// The entries of folder `dir` (`""` for /workspace itself).
async fn list(server: &Server, room: &str, dir: &str) -> Vec<Value> {
    let (status, body) = get(server, room, dir).await;
    assert_eq!(status, 200, "GET files/{dir}: {body}");
    let keys: Vec<&String> = body.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["entries"], "{body}");
    body["entries"].as_array().expect("entries").clone()
}

/// The names of `entries`, in their order.
fn names(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

/// `DELETE …/files/{path}` (raw).
async fn rm(server: &Server, room: &str, path: &str) -> (u16, Value) {
    delete(server, &room_path(room, &format!("/files/{path}"))).await
}

/// The room's records of `kind` (`GET /messages`).
async fn records(server: &Server, room: &str, kind: &str) -> Vec<Value> {
    let (status, page) = server.get(&room_path(room, "/messages")).await;
    assert_eq!(status, 200, "{page}");
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system" && m["event"]["kind"] == kind)
        .cloned()
        .collect()
}

/// Whether `path` exists in the room's /workspace, as its shell sees it
/// (`-e` or a dangling symlink).
async fn exists(server: &Server, room: &str, path: &str) -> bool {
    let r = exec(
        server,
        room,
        &format!("if [ -e '{path}' ] || [ -L '{path}' ]; then echo yes; else echo no; fi"),
    )
    .await;
    r["stdout"] == "yes\n"
}

/// A tree of every kind, each with an mtime of its own (ms precision):
/// `.hidden` `B.txt` `_x` `a.txt` `dir/{b.txt,sub/}` `link -> a.txt`
/// `linkdir -> dir` `pipe` (a FIFO) `é.txt`.
const TREE: &str = "set -e; cd /workspace; \
    printf sh > .hidden; printf 1234567 > B.txt; mkdir _x; printf hello > a.txt; \
    mkdir -p dir/sub; printf xyz > dir/b.txt; ln -s a.txt link; ln -s dir linkdir; \
    mkfifo pipe; printf e > é.txt; \
    touch -h -d @1600000000.123 a.txt; touch -h -d @1500000000.250 link; \
    touch -h -d @1400000000.5 pipe; touch -h -d @1300000000 .hidden B.txt _x linkdir é.txt; \
    touch -h -d @1200000000.007 dir/b.txt dir/sub dir";

#[tokio::test]
async fn the_workspace_lists_sorted_by_bytes_with_hidden_files_types_sizes_and_mtimes_in_ms() {
    let (server, _dir) = Server::fresh().await;
    let room = "ls-root";
    let made = exec(&server, room, TREE).await;
    assert_eq!(made["exitCode"], 0, "{made}");
    let entries = list(&server, room, "").await;
    let entry = |name: &str, kind: &str, size: u64, mtime: u64| json!({"name": name, "type": kind, "size": size, "mtime": mtime});
    assert_eq!(
        entries,
        vec![
            entry(".hidden", "file", 2, 1_300_000_000_000),
            entry("B.txt", "file", 7, 1_300_000_000_000),
            entry("_x", "dir", 0, 1_300_000_000_000),
            entry("a.txt", "file", 5, 1_600_000_000_123),
            entry("dir", "dir", 0, 1_200_000_000_007),
            // Not followed: the link's own length and mtime.
            entry("link", "symlink", 5, 1_500_000_000_250),
            entry("linkdir", "symlink", 3, 1_300_000_000_000),
            entry("pipe", "other", 0, 1_400_000_000_500),
            entry("é.txt", "file", 1, 1_300_000_000_000),
        ],
        "{entries:?}"
    );
    // A folder: with and without a trailing folder of its own.
    let inside = list(&server, room, "dir/").await;
    assert_eq!(
        inside,
        vec![
            entry("b.txt", "file", 3, 1_200_000_000_007),
            entry("sub", "dir", 0, 1_200_000_000_007),
        ]
    );
    assert_eq!(list(&server, room, "dir/sub/").await, Vec::<Value>::new());
    assert_eq!(list(&server, room, "_x/").await, Vec::<Value>::new());
}

#[tokio::test]
async fn a_fresh_room_lists_what_was_uploaded_and_the_listing_follows_changes() {
    let (server, _dir) = Server::fresh().await;
    let room = "ls-fresh";
    put_file(&server, room, "src/main.rs", b"fn main() {}\n".to_vec()).await;
    put_file(&server, room, "README", b"hi\n".to_vec()).await;
    assert_eq!(names(&list(&server, room, "").await), ["README", "src"]);
    let src = list(&server, room, "src/").await;
    assert_eq!(names(&src), ["main.rs"]);
    assert_eq!(src[0]["type"], "file");
    assert_eq!(src[0]["size"], 13);
    // A file written now has an mtime of now, in ms (not s, not ns).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mtime = src[0]["mtime"].as_u64().expect("mtime is a number");
    let hour = 3_600_000;
    assert!(mtime + hour > now && mtime < now + hour, "{mtime} vs {now}");
    exec(&server, room, "rm README; mkdir docs").await;
    assert_eq!(names(&list(&server, room, "").await), ["docs", "src"]);
}

#[tokio::test]
async fn an_absent_folder_and_a_file_listed_as_a_folder_are_404() {
    let (server, _dir) = Server::fresh().await;
    let room = "ls-404";
    exec(&server, room, TREE).await;
    for path in ["nope/", "dir/nope/", "a.txt/", "dir/b.txt/"] {
        let (status, body) = get(&server, room, path).await;
        assert_eq!(status, 404, "GET files/{path}: {body}");
    }
    // An absent folder on GET is a 404 with a text body, as a file is.
    for path in ["nope/", "nope"] {
        let (status, body) = get(&server, room, path).await;
        assert_eq!(status, 404, "GET files/{path}: {body}");
        assert!(body.is_string(), "GET files/{path}: a text body: {body}");
    }
}

#[tokio::test]
async fn a_listing_through_a_symlink_or_out_of_the_workspace_is_a_400() {
    let (server, _dir) = Server::fresh().await;
    let room = "ls-rules";
    exec(&server, room, TREE).await;
    for path in [
        "linkdir/sub/",
        "sub%2F..%2F..%2F",
        "..%2F",
        "dir%2F..%2F..%2Fetc%2F",
        "%2Fetc%2F",
    ] {
        let (status, body) = get(&server, room, path).await;
        assert_eq!(status, 400, "GET files/{path}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        assert!(body["details"]["path"][0].is_string(), "{path}: {body}");
    }
}

#[tokio::test]
async fn deleting_a_file_answers_deleted_and_records_who_did_it() {
    let (server, _dir) = Server::fresh().await;
    let room = "rm-file";
    exec(&server, room, TREE).await;
    let mut ws = server.joined(room, "user=bob&deltas=1").await;
    let (status, body) = rm(&server, room, "a.txt?userId=ann").await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    assert_eq!(get(&server, room, "a.txt").await.0, 404);
    assert!(!names(&list(&server, room, "").await).contains(&"a.txt".to_string()));
    // The record: stored, with who and what, and sent to the room.
    let found = records(&server, room, "delete").await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0]["event"],
        json!({"kind": "delete", "by": "ann", "path": "a.txt"})
    );
    assert_eq!(found[0]["userId"], "ann");
    let text = found[0]["text"].as_str().unwrap();
    assert!(text.contains("ann") && text.contains("a.txt"), "{text}");
    let frame = ws
        .until(|f| f["type"] == "duet_message" && f["message"]["event"]["kind"] == "delete")
        .await;
    assert_eq!(frame["message"], found[0]);

    // A nested file, without a name: anonymous, the path as the workspace names it.
    put_file(&server, room, "deep/er/x.txt", b"x".to_vec()).await;
    let (status, body) = rm(&server, room, "deep/er/x.txt").await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    let found = records(&server, room, "delete").await;
    assert_eq!(
        found[1]["event"],
        json!({"kind": "delete", "by": "anonymous", "path": "deep/er/x.txt"})
    );
    assert_eq!(
        names(&list(&server, room, "deep/er/").await),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn deleting_a_symlink_keeps_its_target_and_a_folder_goes_whole() {
    let (server, _dir) = Server::fresh().await;
    let room = "rm-kinds";
    exec(&server, room, TREE).await;
    let (status, body) = rm(&server, room, "link").await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    assert!(!exists(&server, room, "link").await, "the link went");
    let (status, kept) = get(&server, room, "a.txt").await;
    assert_eq!((status, kept), (200, json!("hello")), "its target stays");
    // A link to a folder: the link goes, the folder and its files stay.
    let (status, _) = rm(&server, room, "linkdir").await;
    assert_eq!(status, 200);
    assert!(!exists(&server, room, "linkdir").await);
    assert_eq!(names(&list(&server, room, "dir/").await), ["b.txt", "sub"]);
    // A folder, with everything in it.
    exec(
        &server,
        room,
        "mkdir -p dir/sub/deeper && echo x > dir/sub/deeper/f",
    )
    .await;
    let (status, body) = rm(&server, room, "dir").await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    assert!(!exists(&server, room, "dir").await);
    assert_eq!(get(&server, room, "dir/").await.0, 404);
    // Other kinds of file.
    assert_eq!(rm(&server, room, "pipe").await.0, 200);
    assert_eq!(rm(&server, room, "_x").await.0, 200);
    assert_eq!(
        names(&list(&server, room, "").await),
        [".hidden", "B.txt", "a.txt", "é.txt"]
    );
    let found = records(&server, room, "delete").await;
    let paths: Vec<&str> = found
        .iter()
        .map(|r| r["event"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["link", "linkdir", "dir", "pipe", "_x"]);
}

#[tokio::test]
async fn deleting_what_is_absent_is_a_404_and_records_nothing() {
    let (server, _dir) = Server::fresh().await;
    let room = "rm-404";
    exec(&server, room, TREE).await;
    for path in ["nope", "dir/nope", "nope/deeper"] {
        let (status, body) = rm(&server, room, path).await;
        assert_eq!(status, 404, "DELETE files/{path}: {body}");
    }
    // Deleted once: the second time it is absent.
    assert_eq!(rm(&server, room, "B.txt").await.0, 200);
    assert_eq!(rm(&server, room, "B.txt").await.0, 404);
    assert_eq!(records(&server, room, "delete").await.len(), 1);
}

#[tokio::test]
async fn deleting_the_workspace_leaving_it_or_passing_a_symlink_is_a_400_and_deletes_nothing() {
    let (server, _dir) = Server::fresh().await;
    let room = "rm-rules";
    exec(&server, room, TREE).await;
    // A file of the host outside every room, which must stay.
    let canary = tempfile::NamedTempFile::new().unwrap();
    let encoded = canary.path().to_str().unwrap().replace('/', "%2F");
    for path in [
        String::new(),
        "sub%2F..%2F..%2Fcanary".to_string(),
        "..%2Fcanary".to_string(),
        "dir%2F..%2F..%2F..%2Fetc%2Fhostname".to_string(),
        encoded,
        "linkdir/b.txt".to_string(),
        "linkdir/sub".to_string(),
    ] {
        let (status, body) = rm(&server, room, &path).await;
        assert_eq!(status, 400, "DELETE files/{path}: {body}");
        assert_eq!(body["error"], "invalid request", "{body}");
        assert!(body["details"]["path"][0].is_string(), "{path}: {body}");
    }
    assert!(canary.path().exists(), "the host's file stays");
    assert!(exists(&server, room, "dir/b.txt").await);
    assert!(exists(&server, room, "dir/sub").await);
    assert_eq!(names(&list(&server, room, "").await).len(), 9);
    // A bad name is refused before anything is deleted.
    let (status, body) = rm(&server, room, &format!("B.txt?userId={}", "x".repeat(33))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"]["userId"][0].is_string(), "{body}");
    assert!(exists(&server, room, "B.txt").await);
    assert_eq!(records(&server, room, "delete").await, Vec::<Value>::new());
}

#[tokio::test]
async fn a_path_with_an_empty_segment_is_a_400() {
    let (server, _dir) = Server::fresh().await;
    let room = "rm-empty";
    exec(&server, room, TREE).await;
    let (status, body) = rm(&server, room, "dir//b.txt").await;
    assert_eq!(status, 400, "DELETE files/dir//b.txt: {body}");
    assert!(body["details"]["path"][0].is_string(), "{body}");
    assert!(exists(&server, room, "dir/b.txt").await);
    let (status, body) = get(&server, room, "dir//sub/").await;
    assert_eq!(status, 400, "GET files/dir//sub/: {body}");
    assert!(body["details"]["path"][0].is_string(), "{body}");
    // A name longer than a file system takes is the path's fault too.
    let long = format!("dir/{}", "n".repeat(256));
    let (status, body) = get(&server, room, &long).await;
    assert_eq!(status, 400, "GET files/dir/n…: {body}");
    assert_eq!(
        body["details"]["path"][0], "has a name longer than 255 bytes",
        "{body}"
    );
    let (status, body) = put(&server, room, &long, b"x").await;
    assert_eq!(status, 400, "PUT files/dir/n…: {body}");
    assert!(body["details"]["path"][0].is_string(), "{body}");
}

/// `PUT …/files/{path}` (raw) of `bytes`: status and body.
async fn put(server: &Server, room: &str, path: &str, bytes: &'static [u8]) -> (u16, Value) {
    let url = server.url(&room_path(room, &format!("/files/{path}")));
    answer(with_token(server, http().put(url).body(bytes))).await
}

#[tokio::test]
async fn writing_through_a_symlink_onto_one_or_a_folder_is_a_400_and_writes_nothing() {
    let (server, _dir) = Server::fresh().await;
    let room = "put-rules";
    exec(&server, room, TREE).await;
    let refused = |why: &str| json!({"error": "invalid request", "details": {"path": [why]}});
    for (path, why) in [
        // Into a folder through its symlink, and onto a symlink itself.
        ("linkdir/new.txt", "passes through a symlink"),
        ("linkdir/sub/new.txt", "passes through a symlink"),
        ("link", "passes through a symlink"),
        ("dir", "is a directory"),
        ("B.txt/new.txt", "a parent is not a directory"),
        // A path that ends in `/` names a folder, not a file.
        ("new/", "names a folder (it ends in /), not a file"),
        ("dir/", "names a folder (it ends in /), not a file"),
    ] {
        assert_eq!(
            put(&server, room, path, b"EVIL").await,
            (400, refused(why)),
            "PUT files/{path}"
        );
    }
    // Read or deleted through a symlink: the same sentence.
    let through = refused("passes through a symlink");
    assert_eq!(
        get(&server, room, "linkdir/b.txt").await,
        (400, through.clone())
    );
    assert_eq!(rm(&server, room, "linkdir/b.txt").await, (400, through));
    let after = exec(
        &server,
        room,
        "cd /workspace && test -L link && test -L linkdir && cat a.txt dir/b.txt && \
         ! test -e dir/new.txt && ! test -e dir/sub/new.txt && ! test -e new && test -d dir",
    )
    .await;
    assert_eq!(after["exitCode"], 0, "{after}");
    assert_eq!(after["stdout"], "helloxyz", "{after}");
    assert_eq!(records(&server, room, "upload").await, Vec::<Value>::new());
}

/// What `GET` of a FIFO or a socket answers.
fn not_regular() -> Value {
    json!({"error":"invalid request","details":{"path":["is not a regular file (a FIFO, socket or device is never read)"]}})
}

#[tokio::test]
async fn a_fifo_or_a_socket_is_a_400_at_once_and_holds_up_no_room() {
    let (server, _dir) = common::access::with_token(&[]).await;
    let room = "files-fifo";
    let (vera, _) = common::access::guest(&server, room, "viewer", None).await;
    let made = exec(
        &server,
        room,
        "mkfifo ff && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")'",
    )
    .await;
    assert_eq!(made["exitCode"], 0, "{made}");
    assert_eq!(vera.get("/files/ff").await, (400, not_regular()));
    assert_eq!(vera.get("/files/sock").await, (400, not_regular()));
    // Many at once: every one is answered, and the owner's files in
    // another room still are.
    let many = (0..64).map(|_| {
        let vera = vera.clone();
        async move { vera.get("/files/ff").await }
    });
    for answered in futures_util::future::join_all(many).await {
        assert_eq!(answered, (400, not_regular()));
    }
    put_file(&server, "files-fifo-other", "a.txt", b"still here".to_vec()).await;
    let url = server.url(&room_path("files-fifo-other", "/files/a.txt"));
    let res = with_token(&server, http().get(url)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"still here");
    // The FIFO is listed as `other`, and a writer may still replace it.
    let entry = list(&server, room, "")
        .await
        .into_iter()
        .find(|e| e["name"] == "ff")
        .expect("ff is listed");
    assert_eq!(entry["type"], "other");
    put_file(&server, room, "ff", b"a file now".to_vec()).await;
    assert_eq!(vera.get("/files/sock").await, (400, not_regular()));
}

#[tokio::test]
async fn a_big_file_streams_both_ways_whole_and_a_too_large_upload_changes_nothing() {
    let (server, _dir) = Server::fresh().await;
    let room = "files-big";
    let bytes = common::apps::pattern(24 * 1024 * 1024 + 7);
    put_file(&server, room, "big.bin", bytes.clone()).await;
    let url = server.url(&room_path(room, "/files/big.bin"));
    let res = with_token(&server, http().get(&url)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-length"].to_str().unwrap(),
        bytes.len().to_string()
    );
    let got = res.bytes().await.unwrap();
    assert!(
        got.as_ref() == bytes.as_slice(),
        "the file comes back whole"
    );

    // A body past 64 MiB that does not say its length: 413, and the old
    // file is as it was, with nothing half-written beside it.
    put_file(&server, room, "kept.txt", b"old".to_vec()).await;
    let chunk = bytes::Bytes::from(vec![7u8; 1024 * 1024]);
    let chunks =
        futures_util::stream::iter((0..65).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    let put = http()
        .put(server.url(&room_path(room, "/files/kept.txt")))
        .body(reqwest::Body::wrap_stream(chunks));
    // The server answers 413 and closes the connection; a client still
    // sending then sees the connection cut (a broken pipe) instead.
    match with_token(&server, put).send().await {
        Ok(res) => {
            assert_eq!(res.status(), 413);
            let body: Value = res.json().await.unwrap();
            assert_eq!(body, json!({"error":"body too large"}));
        }
        Err(cut) => assert!(cut.is_request() && !cut.is_timeout(), "{cut:?}"),
    }
    let res = with_token(
        &server,
        http().get(server.url(&room_path(room, "/files/kept.txt"))),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"old");
    let names: Vec<Value> = list(&server, room, "")
        .await
        .into_iter()
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("big.bin"), json!("kept.txt")]);
}

#[tokio::test]
async fn the_token_in_a_query_opens_no_file_even_one_named_ws() {
    let (server, _dir) = common::access::with_token(&[]).await;
    let room = "files-query-token";
    let (wes, _) = common::access::guest(&server, room, "writer", None).await;
    put_file(&server, room, "sub/ws", b"secret".to_vec()).await;
    let by_query = |method: reqwest::Method, path: &str| {
        let url = server.url(&room_path(
            room,
            &format!("{path}?token={}&userId=eve", wes.token),
        ));
        http().request(method, url)
    };
    for (method, path) in [
        (reqwest::Method::GET, "/files/sub/ws"),
        (reqwest::Method::PUT, "/files/sub/ws"),
        (reqwest::Method::DELETE, "/files/sub/ws"),
        (reqwest::Method::GET, "/files/ws"),
        (reqwest::Method::GET, "/messages"),
    ] {
        let (status, body) = answer(by_query(method.clone(), path).body("overwritten")).await;
        assert_eq!(
            (status, body),
            (401, json!({"error":"unauthorized"})),
            "{method} {path}"
        );
    }
    // Untouched; with the token in its header the same guest gets in.
    assert_eq!(wes.get("/files/sub/").await.0, 200);
    let res = wes
        .request(reqwest::Method::GET, "/files/sub/ws")
        .send()
        .await
        .unwrap();
    assert_eq!(res.bytes().await.unwrap().as_ref(), b"secret");
    // The socket still takes it in the query.
    let joined = wes.joins("user=wes").await;
    assert_eq!(joined.you["role"], "writer");
}

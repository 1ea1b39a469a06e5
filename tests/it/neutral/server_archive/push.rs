//! Pushes and pulls that work: a round trip of thousands of files (binary
//! content, modes, mtimes, symlinks, unicode names), gzip, `delete=1`,
//! the `push` record and its `push-N` checkpoint, roles, the disk quota
//! and a push cut off midway.

use super::*;
use crate::common::access::{assert_forbidden, guest};
use serde_json::json;

/// Thousands of files in nested folders, with binary content, an
/// executable, symlinks (to a file and a folder) and unicode names.
fn big_tree() -> Vec<Member> {
    let mut members = vec![dir("src"), dir("src/deep"), dir("données")];
    for i in 0..3000 {
        let folder = ["src", "src/deep", "données"][i % 3];
        let bytes = format!("file {i}\n").repeat(i % 7 + 1);
        members.push(file(
            &format!("{folder}/f{i:04}.txt"),
            bytes.as_bytes(),
            0o644,
        ));
    }
    let binary: Vec<u8> = (0..70_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    members.push(file("bin/blob.bin", &binary, 0o600));
    members.push(file("run.sh", b"#!/bin/sh\necho ran\n", 0o755));
    members.push(file("données/été ☀.txt", "soleil\n".as_bytes(), 0o644));
    members.push(link("latest", "src/f0000.txt"));
    members.push(link("src/deep/up", "../../données"));
    members
}

#[tokio::test]
async fn a_tree_of_thousands_of_files_goes_in_and_comes_back_out_as_it_was() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-round-trip";
    let sent = big_tree();
    let answer = push(&server, room, "", "?userId=ann", tar_of(&sent)).await;
    let files: Vec<&Member> = sent
        .iter()
        .filter(|m| matches!(m, Member::File { .. }))
        .collect();
    let bytes: usize = files
        .iter()
        .map(|m| match m {
            Member::File { bytes, .. } => bytes.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(answer["files"], files.len(), "{answer}");
    assert_eq!(answer["bytes"], bytes, "{answer}");
    assert_eq!(answer["deleted"], 0, "{answer}");
    // The room runs them: an executable stays executable, links are links.
    let r = exec(
        &server,
        room,
        "./run.sh && readlink latest && cat src/deep/up/'été ☀.txt'",
    )
    .await;
    assert_eq!(r["stdout"], "ran\nsrc/f0000.txt\nsoleil\n", "{r}");
    // They belong to the room: owned by its shell's user, every one.
    let r = exec(&server, room, "find . ! -user \"$(id -u)\" | head -3").await;
    assert_eq!(r["stdout"], "", "{r}");
    // And the pull gives them back: names, kinds, modes, mtimes, bytes.
    let (status, tar) = pull(&server, room, "").await;
    assert_eq!(status, 200);
    let got = members_of(&tar);
    let names: Vec<&str> = got.iter().map(|m| m.0.as_str()).collect();
    for (i, name) in names.iter().enumerate() {
        assert!(!name.starts_with("./") && !name.starts_with('/'), "{name}");
        if let Some((parent, _)) = name.rsplit_once('/') {
            assert!(names[..i].contains(&parent), "{parent} comes before {name}");
        }
    }
    let by_name: BTreeMap<&str, &(String, char, u32, u64, Vec<u8>)> =
        got.iter().map(|m| (m.0.as_str(), m)).collect();
    for m in &sent {
        match m {
            Member::File {
                name,
                bytes,
                mode,
                mtime,
            } => {
                let g = by_name
                    .get(name.as_str())
                    .unwrap_or_else(|| panic!("{name} pulled"));
                assert_eq!((g.1, g.2, g.3), ('f', *mode, *mtime), "{name}");
                assert!(g.4 == *bytes, "{name}: its bytes");
            }
            Member::Dir { name, mode } => {
                let g = by_name[name.as_str()];
                assert_eq!((g.1, g.2, g.3), ('d', *mode, 1_600_000_000), "{name}");
            }
            Member::Link { name, target } => {
                let g = by_name[name.as_str()];
                assert_eq!((g.1, g.4.as_slice()), ('l', target.as_bytes()), "{name}");
            }
        }
    }
    // `bin` came without a member of its own: made, and pulled too.
    assert_eq!(by_name["bin"].1, 'd');
    assert_eq!(got.len(), sent.len() + 1, "nothing else");
    // A folder alone, names relative to it.
    let (status, tar) = pull(&server, room, "src/deep").await;
    assert_eq!(status, 200);
    let got = members_of(&tar);
    assert_eq!(got.len(), 1001, "1000 files and the link");
    assert_eq!(got[0].0, "f0001.txt");
}

#[tokio::test]
async fn a_gzipped_push_lands_in_a_folder_made_for_it_and_pulls_say_404_and_400() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-gzip";
    // A new room's workspace is an empty folder: an empty tar.
    let (status, tar) = pull(&server, room, "").await;
    assert_eq!(status, 200);
    assert!(members_of(&tar).is_empty());
    let tar = tar_of(&[
        file("a.txt", b"alpha\n", 0o640),
        file("b/c.txt", b"c\n", 0o644),
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    let gz = gz.finish().unwrap();
    let url = server.url(&room_path(room, "/archive/new/place?userId=ann"));
    let (status, answer) = crate::common::answer(with_token(
        &server,
        http()
            .put(url)
            .header("content-type", "application/gzip")
            .body(gz),
    ))
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["files"], 2);
    let r = exec(
        &server,
        room,
        "stat -c '%a %n' new/place/a.txt && cat new/place/b/c.txt",
    )
    .await;
    assert_eq!(r["stdout"], "640 new/place/a.txt\nc\n", "{r}");
    assert_eq!(pull(&server, room, "absent").await.0, 404);
    let url = server.url(&room_path(room, "/archive/new/place/a.txt"));
    let (status, body) = crate::common::answer(with_token(&server, http().get(url))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"]["path"][0], "is not a directory", "{body}");
}

#[tokio::test]
async fn a_push_is_a_record_and_a_push_checkpoint_and_delete_1_mirrors_the_archive() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-mirror";
    let first = tar_of(&[
        file("a.txt", b"a\n", 0o644),
        file("old/x.txt", b"x\n", 0o644),
        file("keep/k.txt", b"k1\n", 0o644),
        file("keep/gone.txt", b"g\n", 0o644),
    ]);
    let answer = push(&server, room, "", "?userId=ann", first).await;
    let checkpoint = answer["checkpoint"].clone();
    assert_eq!(checkpoint["by"], "ann", "{answer}");
    assert_eq!(checkpoint["auto"], false, "{answer}");
    let id = checkpoint["id"].as_str().unwrap().to_string();
    assert_eq!(checkpoint["name"], format!("push-{}", &id[1..]), "{answer}");
    assert_eq!(checkpoints(&server, room).await, vec![checkpoint.clone()]);
    let pushes = records(&server, room, "push").await;
    assert_eq!(pushes.len(), 1, "{pushes:?}");
    assert_eq!(
        pushes[0]["event"],
        json!({"kind":"push","by":"ann","path":"","files":4,"bytes":9,"deleted":0,"checkpointId":id})
    );
    assert_eq!(pushes[0]["userId"], "ann");
    // A mirror: what the archive lacks goes (a.txt, old/ and old/x.txt,
    // keep/gone.txt); a folder it holds merges.
    let second = tar_of(&[
        file("keep/k.txt", b"k2\n", 0o644),
        file("b.txt", b"b\n", 0o644),
    ]);
    let answer = push(&server, room, "", "?userId=bob&delete=1", second).await;
    assert_eq!(answer["deleted"], 4, "{answer}");
    assert_eq!(answer["files"], 2, "{answer}");
    assert_eq!(
        listing(&server, room).await,
        "b.txt f 644 2 \nkeep d 755\nkeep/k.txt f 644 3 \n"
    );
    let list = checkpoints(&server, room).await;
    assert_eq!(list.len(), 2);
    assert_eq!(list[1], answer["checkpoint"]);
    let pushes = records(&server, room, "push").await;
    assert_eq!(pushes[1]["event"]["deleted"], 4);
    assert_eq!(pushes[1]["event"]["by"], "bob");
    // Without delete=1 nothing else goes; into a folder, the record says which.
    push(
        &server,
        room,
        "keep/",
        "",
        tar_of(&[file("more.txt", b"m", 0o644)]),
    )
    .await;
    assert!(listing(&server, room).await.contains("b.txt f"));
    let pushes = records(&server, room, "push").await;
    assert_eq!(pushes[2]["event"]["path"], "keep");
    assert_eq!(pushes[2]["event"]["by"], "anonymous");
}

#[tokio::test]
async fn a_viewer_may_pull_and_diff_but_not_push_and_a_writer_may_push() {
    let (server, _dir) = crate::common::access::with_token(&[]).await;
    let room = "archive-roles";
    push(
        &server,
        room,
        "",
        "?userId=owner",
        tar_of(&[file("kept.txt", b"owner's\n", 0o644)]),
    )
    .await;
    let (vera, _) = guest(&server, room, "viewer", None).await;
    let before = listing(&server, room).await;
    let put = |who: &crate::common::access::Guest| {
        let req = who
            .request(reqwest::Method::PUT, "/archive/?userId=vera")
            .body(tar_of(&[file("intruder.txt", b"x", 0o644)]));
        crate::common::answer(req)
    };
    assert_forbidden("a viewer's push", &put(&vera).await, "viewer");
    assert_eq!(listing(&server, room).await, before, "nothing written");
    let res = vera
        .request(reqwest::Method::GET, "/archive/")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let got = members_of(&res.bytes().await.unwrap());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].4, b"owner's\n");
    let res = vera
        .request(reqwest::Method::GET, "/diff")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "", "nothing changed");
    let (wes, _) = guest(&server, room, "writer", Some("wes")).await;
    let (status, answer) = put(&wes).await;
    assert_eq!(status, 200, "{answer}");
    // An invite's fixed name is who pushed.
    assert_eq!(answer["checkpoint"]["by"], "wes", "{answer}");
}

#[tokio::test]
async fn a_push_larger_than_the_room_s_disk_is_a_507_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--disk-mb", "8"]).await;
    let room = "archive-quota";
    push(
        &server,
        room,
        "",
        "",
        tar_of(&[file("small.txt", b"s\n", 0o644)]),
    )
    .await;
    let before = listing(&server, room).await;
    let mib: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    let big: Vec<Member> = (0..12)
        .map(|i| file(&format!("big/{i}.bin"), &mib, 0o644))
        .collect();
    let (status, body) = push_raw(&server, room, "", "", tar_of(&big)).await;
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"], "the room's disk is full", "{body}");
    assert_eq!(listing(&server, room).await, before, "nothing written");
    // The room's disk is free again: a push that fits works.
    push(&server, room, "", "", tar_of(&big[..2])).await;
}

#[tokio::test]
async fn a_push_cut_off_midway_leaves_the_workspace_as_it_was() {
    use tokio::io::AsyncWriteExt;
    let (server, _dir) = Server::fresh().await;
    let room = "archive-cut";
    push(
        &server,
        room,
        "",
        "",
        tar_of(&[file("before.txt", b"b\n", 0o644)]),
    )
    .await;
    let before = listing(&server, room).await;
    let members: Vec<Member> = (0..200)
        .map(|i| file(&format!("half/{i}.txt"), &[b'x'; 4096], 0o644))
        .collect();
    let tar = tar_of(&members);
    // A client that sends half its body, then drops the connection.
    let mut tcp = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let auth = server
        .token
        .as_ref()
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "PUT {} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/x-tar\r\nContent-Length: {}\r\n\r\n",
        room_path(room, "/archive/?userId=cut"),
        tar.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&tar[..tar.len() / 2]).await.unwrap();
    tcp.flush().await.unwrap();
    drop(tcp);
    // The next push waits for the broken one to end; then only it is there.
    push(
        &server,
        room,
        "after",
        "",
        tar_of(&[file("a.txt", b"a", 0o644)]),
    )
    .await;
    let after = listing(&server, room).await;
    assert_eq!(
        after,
        format!("after d 755\nafter/a.txt f 644 1 \n{before}"),
        "nothing of the cut push"
    );
    assert_eq!(records(&server, room, "push").await.len(), 2);
}

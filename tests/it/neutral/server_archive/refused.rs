//! Each member a push may not hold is refused with a 400 naming it, and
//! nothing of the push is written (the workspace listed before and after).

use super::*;
use tar::EntryType;

/// Pushes `ok.txt` followed by `hostile`: a 400 whose `details.member`
/// names `name`, with the workspace unchanged.
async fn refused(server: &Server, room: &str, hostile: Vec<u8>, name: &str, why: &str) {
    let before = listing(server, room).await;
    let body = joined(&tar_of(&[file("ok.txt", b"fine\n", 0o644)]), &hostile);
    let (status, answer) = push_raw(server, room, "", "?userId=eve", body).await;
    assert_eq!(status, 400, "{name}: {answer}");
    assert_eq!(answer["error"], "invalid request", "{answer}");
    let said = answer["details"]["member"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: details.member: {answer}"));
    assert!(
        said.starts_with(&format!("{name}: ")),
        "{said:?} names {name}"
    );
    assert!(said.contains(why), "{said:?} says {why:?}");
    assert_eq!(
        listing(server, room).await,
        before,
        "{name}: nothing written"
    );
}

#[tokio::test]
async fn every_hostile_member_is_a_400_naming_it_and_nothing_is_written() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-hostile";
    // A symlink planted in the workspace (as a command could).
    let r = exec(
        &server,
        room,
        "mkdir real && ln -s /tmp planted && ln -s real inside",
    )
    .await;
    assert_eq!(r["exitCode"], 0, "{r}");
    let regular = |name: &str| raw_member(name, EntryType::Regular, "", b"evil\n");
    refused(
        &server,
        room,
        regular("../evil.txt"),
        "../evil.txt",
        "leaves the folder",
    )
    .await;
    refused(
        &server,
        room,
        regular("a/../../evil.txt"),
        "a/../../evil.txt",
        "leaves the folder",
    )
    .await;
    refused(
        &server,
        room,
        regular("/tmp/evil.txt"),
        "/tmp/evil.txt",
        "absolute",
    )
    .await;
    // Through a symlink of the archive (one that stays inside is fine alone).
    let through = joined(
        &tar_of(&[dir("sub"), link("ln", "sub")]),
        &regular("ln/evil.txt"),
    );
    refused(
        &server,
        room,
        through,
        "ln/evil.txt",
        "passes through a symlink",
    )
    .await;
    // Through a symlink already in the workspace, out or in.
    refused(
        &server,
        room,
        regular("planted/evil.txt"),
        "planted/evil.txt",
        "passes through a symlink",
    )
    .await;
    refused(
        &server,
        room,
        regular("inside/evil.txt"),
        "inside/evil.txt",
        "passes through a symlink",
    )
    .await;
    // Symlinks that point out.
    let out = raw_member("out", EntryType::Symlink, "../../etc/passwd", b"");
    refused(&server, room, out, "out", "out of the folder").await;
    let deep_out = raw_member("a/b/out", EntryType::Symlink, "../../..", b"");
    refused(&server, room, deep_out, "a/b/out", "out of the folder").await;
    let absolute = raw_member("abs", EntryType::Symlink, "/etc/passwd", b"");
    refused(&server, room, absolute, "abs", "absolute").await;
    // Hard links, devices and FIFOs.
    let hard = raw_member("hard", EntryType::Link, "ok.txt", b"");
    refused(&server, room, hard, "hard", "hard link").await;
    let chr = raw_member("null", EntryType::Char, "", b"");
    refused(&server, room, chr, "null", "device").await;
    let blk = raw_member("disk", EntryType::Block, "", b"");
    refused(&server, room, blk, "disk", "device").await;
    let fifo = raw_member("fifo", EntryType::Fifo, "", b"");
    refused(&server, room, fifo, "fifo", "FIFO").await;
    // Nothing reached /tmp through the planted link either.
    let r = exec(&server, room, "ls /tmp/evil.txt 2>&1; true").await;
    assert!(
        r["stdout"].as_str().unwrap().contains("No such file"),
        "{r}"
    );
    // A destination through a symlink is the path's 400.
    let (status, answer) = push_raw(
        &server,
        room,
        "planted/x",
        "",
        tar_of(&[file("a", b"a", 0o644)]),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["details"]["path"][0], "passes through a symlink",
        "{answer}"
    );
    // A symlink that stays inside, and a body that is no tar at all.
    let inside = tar_of(&[dir("d"), link("d/up", "../ok.txt")]);
    push(
        &server,
        room,
        "",
        "",
        joined(&tar_of(&[file("ok.txt", b"ok", 0o644)]), &inside),
    )
    .await;
    let (status, answer) = push_raw(&server, room, "", "", b"not a tar at all".repeat(64)).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["details"]["member"][0].is_string(), "{answer}");
}

#[tokio::test]
async fn a_link_out_through_the_archive_s_own_links_and_a_tar_cut_short_are_refused() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-subtle";
    push(
        &server,
        room,
        "",
        "",
        tar_of(&[file("kept.txt", b"k", 0o644)]),
    )
    .await;
    // `x -> y/..` reads as staying inside, but `y` is the folder itself.
    let through = tar_of(&[link("y", "."), link("x", "y/..")]);
    refused(&server, room, through, "x", "out of the folder").await;
    // A tar cut short at a member's end (no end-of-archive block: its
    // writer died, though the HTTP body ended cleanly) is not taken for a
    // whole one.
    let before = listing(&server, room).await;
    let whole = tar_of(&[
        file("cut-1.txt", b"1", 0o644),
        file("cut-2.txt", b"2", 0o644),
    ]);
    let cut = whole[..whole.len() - 1024 - 1024].to_vec();
    let (status, answer) = push_raw(&server, room, "", "", cut).await;
    assert_eq!(status, 400, "{answer}");
    let said = answer["details"]["member"][0].as_str().unwrap_or_default();
    assert!(said.starts_with("(archive): "), "{answer}");
    assert_eq!(listing(&server, room).await, before, "nothing written");
}

#[tokio::test]
async fn a_tree_nested_too_deep_is_refused_and_the_backend_stays_up() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-deep";
    let deep = format!("{}end.txt", "z/".repeat(300));
    let hostile = tar_of(&[file(&deep, b"x", 0o644)]);
    refused(
        &server,
        room,
        hostile,
        "z/z/z/z/z/z/z/z/…",
        "nests more than 256 folders deep",
    )
    .await;
    // A command may make a tree of any depth: what walks it answers, and
    // the backend serves on (a walk a call deeper per level overflowed it).
    let made = exec(
        &server,
        room,
        "python3 -c \"import os\nos.chdir('/workspace')\nfor _ in range(3000):\n  os.mkdir('d'); os.chdir('d')\"; echo made",
    )
    .await;
    assert_eq!(made["stdout"], "made\n", "{made}");
    let (status, body) = server
        .post(
            &room_path(room, "/checkpoints"),
            serde_json::json!({"name": "deep"}),
        )
        .await;
    assert_ne!(status, 200, "{body}");
    let url = server.url(&room_path(room, "/files/d"));
    let (status, body) = answer(with_token(&server, http().delete(url))).await;
    assert_ne!(status, 200, "{body}");
    // A file's path deeper than that is refused before anything is made.
    let deep = format!("{}f.txt", "e/".repeat(300));
    let url = server.url(&room_path(room, &format!("/files/{deep}")));
    let (status, body) = answer(with_token(&server, http().put(url).body("x"))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["details"]["path"][0], "nests more than 256 folders deep",
        "{body}"
    );
    assert_eq!(
        exec(&server, room, "ls -d e || echo none").await["stdout"],
        "none\n"
    );
    assert_eq!(exec(&server, room, "echo alive").await["stdout"], "alive\n");
    let (status, body) = server
        .post(&room_path(room, "/cleanup"), serde_json::json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(exec(&server, room, "ls -A").await["stdout"], "");
}

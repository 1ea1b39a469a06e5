//! `GET /diff`: the workspace against the last push (or a checkpoint),
//! which the real `git apply` takes in a copy of the pushed folder to give
//! the workspace as it is now; its filters and its 404s.

use super::*;
use std::path::Path;

/// Writes `members` into the local folder `root` as a push's tree.
fn write_tree(root: &Path, members: &[Member]) {
    use std::os::unix::fs::PermissionsExt;
    for m in members {
        match m {
            Member::File {
                name, bytes, mode, ..
            } => {
                let path = root.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, bytes).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).unwrap();
            }
            Member::Dir { name, .. } => std::fs::create_dir_all(root.join(name)).unwrap(),
            Member::Link { name, target } => {
                std::os::unix::fs::symlink(target, root.join(name)).unwrap()
            }
        }
    }
}

/// What a local folder holds: path to (kind, executable, bytes or target).
fn local_tree(root: &Path) -> BTreeMap<String, (char, bool, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(
                    rel,
                    ('l', false, target.into_os_string().into_encoded_bytes()),
                );
            } else if meta.is_dir() {
                todo.push(path);
            } else {
                let exe = meta.permissions().mode() & 0o111 != 0;
                out.insert(rel, ('f', exe, std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

/// The same of a pulled tar (folders left out, as git knows no folders).
fn pulled_tree(tar: &[u8]) -> BTreeMap<String, (char, bool, Vec<u8>)> {
    members_of(tar)
        .into_iter()
        .filter(|m| m.1 != 'd')
        .map(|(name, kind, mode, _, body)| (name, (kind, kind == 'f' && mode & 0o111 != 0, body)))
        .collect()
}

/// `GET …/diff{query}`: status and text.
async fn diff(server: &Server, room: &str, query: &str) -> (u16, String) {
    let url = server.url(&room_path(room, &format!("/diff{query}")));
    let res = with_token(server, http().get(url)).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

fn pushed_tree() -> Vec<Member> {
    let lines: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let binary: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 256) as u8).collect();
    vec![
        file("src/main.rs", lines.as_bytes(), 0o644),
        file("script.sh", b"#!/bin/sh\necho hi\n", 0o644),
        file("gone.txt", b"bye\n", 0o644),
        file("no-newline.txt", b"last", 0o644),
        file("data.bin", &binary, 0o644),
        file("empty.txt", b"", 0o644),
        file("name with space.txt", b"spaced\n", 0o644),
        link("current", "src/main.rs"),
    ]
}

/// Runs `git` with `args` in `dir`; panics with its stderr when it fails.
fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn git_apply_of_the_diff_in_the_pushed_folder_gives_the_workspace() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-diff";
    let tree = pushed_tree();
    push(&server, room, "", "?userId=ann", tar_of(&tree)).await;
    let (status, text) = diff(&server, room, "").await;
    assert_eq!((status, text.as_str()), (200, ""), "nothing changed yet");
    // The room changes things: a text edit, a new file, a deleted one,
    // chmod +x, a binary change, a new binary file, a retargeted link, an
    // unterminated line, a symlink become a file, a file with a space.
    let changes = "set -e; sed -i 's/^line 20$/line twenty/' src/main.rs; \
        echo 'fn new() {}' > src/new.rs; rm gone.txt; chmod +x script.sh; \
        printf 'x\\000y' >> data.bin; head -c 3000 /dev/urandom > fresh.bin; \
        ln -sfn no-newline.txt current; printf 'last, changed' > no-newline.txt; \
        echo more >> 'name with space.txt'; echo filled > empty.txt";
    let r = exec(&server, room, changes).await;
    assert_eq!(r["exitCode"], 0, "{r}");
    let (status, text) = diff(&server, room, "").await;
    assert_eq!(status, 200, "{text}");
    for header in [
        "diff --git a/src/main.rs b/src/main.rs\n",
        "new file mode 100644\n",
        "deleted file mode 100644\n",
        "old mode 100644\nnew mode 100755\n",
        "GIT binary patch\nliteral ",
        "\\ No newline at end of file\n",
        "-line 20\n+line twenty\n",
    ] {
        assert!(text.contains(header), "{header:?} in:\n{text}");
    }
    let files: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted, "files in byte order of path");
    // `git apply` in a copy of the pushed folder gives the workspace.
    let local = tempfile::tempdir().unwrap();
    write_tree(local.path(), &tree);
    let patch = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(patch.path(), &text).unwrap();
    git(
        local.path(),
        &["apply", "--verbose", patch.path().to_str().unwrap()],
    );
    let (status, tar) = pull(&server, room, "").await;
    assert_eq!(status, 200);
    assert_eq!(local_tree(local.path()), pulled_tree(&tar));
    // A filter limits it to a file or a folder, paths still from /workspace.
    let (_, only) = diff(&server, room, "?path=src").await;
    let named: Vec<&str> = only
        .lines()
        .filter(|l| l.starts_with("diff --git"))
        .collect();
    assert_eq!(
        named,
        [
            "diff --git a/src/main.rs b/src/main.rs",
            "diff --git a/src/new.rs b/src/new.rs"
        ]
    );
    let (_, two) = diff(&server, room, "?path=gone.txt&path=src/new.rs").await;
    assert_eq!(two.matches("diff --git").count(), 2, "{two}");
    let (status, bad) = diff(&server, room, "?path=../etc").await;
    assert_eq!(status, 400, "{bad}");
    assert!(bad.contains("\"path\""), "{bad}");
}

#[tokio::test]
async fn a_diff_compares_with_the_newest_push_or_a_named_checkpoint_and_says_404_otherwise() {
    let (server, _dir) = Server::fresh().await;
    let room = "archive-diff-from";
    let (status, body) = diff(&server, room, "").await;
    assert_eq!(status, 404, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "no such checkpoint");
    assert_eq!(
        body["details"]["from"][0],
        "the room has no push to compare with"
    );
    let first = push(
        &server,
        room,
        "",
        "",
        tar_of(&[file("a.txt", b"one\n", 0o644)]),
    )
    .await;
    let second = push(
        &server,
        room,
        "",
        "",
        tar_of(&[file("a.txt", b"two\n", 0o644)]),
    )
    .await;
    exec(&server, room, "echo three > a.txt").await;
    let (_, since_last) = diff(&server, room, "").await;
    assert!(since_last.contains("-two\n+three\n"), "{since_last}");
    let name = first["checkpoint"]["name"].as_str().unwrap();
    let (_, since_first) = diff(&server, room, &format!("?from={name}")).await;
    assert!(since_first.contains("-one\n+three\n"), "{since_first}");
    let id = second["checkpoint"]["id"].as_str().unwrap();
    let (_, by_id) = diff(&server, room, &format!("?from={id}")).await;
    assert_eq!(by_id, since_last);
    let (status, body) = diff(&server, room, "?from=nope").await;
    assert_eq!(status, 404, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "no such checkpoint", "{body}");
    assert!(body["details"]["checkpointId"][0].is_string(), "{body}");
}

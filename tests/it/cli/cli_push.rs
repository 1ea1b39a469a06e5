//! `duet push`, `duet pull`, `duet diff` and `duet push --watch` as a
//! person runs them, against a real `duet serve`: a project folder into
//! the room and back out, what changed, and a watched edit arriving.

use crate::common::Server;
use crate::common::tmux::Tmux;
use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `duet ARGS…` in `cwd`, against `server`'s `room`, its manifests under
/// `state` (never the user's).
fn duet(server: &Server, room: &str, state: &Path, cwd: &Path, args: &[&str]) -> Output {
    command(server, room, state, cwd, args)
        .stdin(Stdio::null())
        .output()
        .expect("duet runs")
}

fn command(server: &Server, room: &str, state: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("DUET_TOKEN")
        .env("DUET_SERVER", server.url(""))
        .env("DUET_ROOM", room)
        .env("DUET_NAME", "ada")
        .env("XDG_STATE_HOME", state)
        .env_remove("NO_COLOR");
    if let Some(token) = &server.token {
        cmd.env("DUET_TOKEN", token);
    }
    cmd
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "duet failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What `duet ARGS…` said when it refused (no terminal to ask on).
fn refused(server: &Server, room: &str, state: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = duet(server, room, state, cwd, args);
    assert!(!out.status.success(), "no terminal to ask on: refused");
    stderr(&out)
}

fn write(root: &Path, rel: &str, content: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Everything under `root` (`.git` and staging folders too): kind,
/// permission bits, content or target, by path.
fn listing(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = path.symlink_metadata().unwrap();
            let mode = meta.permissions().mode() & 0o777;
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                walk(root, &path, out);
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&path).unwrap();
                format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
            };
            out.insert(rel, what);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A project: thousands of files, binary content, modes, symlinks that
/// stay and that leave, unicode names, ignored paths and a `.git`.
fn project(root: &Path) {
    for i in 0..2_000 {
        write(
            root,
            &format!("many/d{:02}/f{i:04}.txt", i % 40),
            format!("file {i}\n").as_bytes(),
        );
    }
    let binary: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    write(root, "bin/blob.bin", &binary);
    write(root, "run.sh", b"#!/bin/sh\necho hi\n");
    chmod(root, "run.sh", 0o755);
    write(root, "private.txt", b"mine\n");
    chmod(root, "private.txt", 0o600);
    write(root, "ünï/cödé 漢字.txt", "naïve\n".as_bytes());
    write(root, ".hidden", b"dot\n");
    write(root, ".gitignore", b"*.log\nbuild/\n");
    write(root, "sub/.gitignore", b"local.txt\n");
    write(root, ".duetignore", b"secrets/\n");
    write(root, "sub/kept.txt", b"kept\n");
    for ignored in [
        "x.log",
        "build/out.o",
        "sub/local.txt",
        "sub/y.log",
        "secrets/key",
    ] {
        write(root, ignored, b"ignored\n");
    }
    write(root, ".git/HEAD", b"ref: refs/heads/main\n");
    std::fs::create_dir_all(root.join("links")).unwrap();
    symlink("../run.sh", root.join("links/in")).unwrap();
    symlink("../many", root.join("links/dir")).unwrap();
    symlink("../../elsewhere", root.join("links/out")).unwrap();
    symlink("/etc/passwd", root.join("links/abs")).unwrap();
}

/// What of `project` a push sends.
fn pushed_part(root: &Path) -> BTreeMap<String, String> {
    let mut all = listing(root);
    all.retain(|rel, _| {
        ![
            ".git",
            "x.log",
            "build",
            "sub/local.txt",
            "sub/y.log",
            "secrets",
            "links/out",
            "links/abs",
        ]
        .iter()
        .any(|gone| rel == gone || rel.starts_with(&format!("{gone}/")))
    });
    all
}

#[tokio::test]
async fn a_project_goes_in_and_comes_back_out_as_it_was() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let (src, back, state) = (
        here.path().join("src"),
        here.path().join("back"),
        here.path().join("state"),
    );
    project(&src);

    let out = duet(&server, "trip", &state, &src, &["push"]);
    let said = ok(&out);
    assert!(
        said.starts_with("pushed 2,009 files, 319.0 KB in "),
        "{said}"
    );
    assert!(
        said.ends_with(" s\n") && said.lines().count() == 1,
        "{said}"
    );
    let warned = stderr(&out);
    assert!(
        warned.contains("links/out: a symlink to ../../elsewhere (outside the folder)"),
        "{warned}"
    );
    assert!(
        warned.contains("links/abs: a symlink to /etc/passwd"),
        "{warned}"
    );
    let (status, _) = server.get("/api/rooms/trip/files/.git/HEAD").await;
    assert_eq!(status, 404, ".git stays home");
    let (status, _) = server.get("/api/rooms/trip/files/secrets/key").await;
    assert_eq!(status, 404, ".duetignore is honoured");

    let said = ok(&duet(
        &server,
        "trip",
        &state,
        here.path(),
        &["pull", ":", "back"],
    ));
    assert!(
        said.starts_with("pulled 2,009 files, 319.0 KB in "),
        "{said}"
    );
    assert_eq!(listing(&back), pushed_part(&src));
    assert!(
        !listing(&back).keys().any(|k| k.contains(".duet-pull-")),
        "no staging left"
    );
}

#[tokio::test]
async fn push_delete_makes_an_exact_mirror() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    write(here.path(), "p/a.txt", b"a\n");
    let dir = here.path().join("p");
    ok(&duet(
        &server,
        "mirror",
        &state,
        &dir,
        &["push", ".", ":app"],
    ));
    let (_, body) = server
        .post(
            "/api/rooms/mirror/sandbox/exec",
            serde_json::json!({"cmd": "echo x > app/extra.txt"}),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");

    let said = ok(&duet(&server, "mirror", &state, &dir, &["push", ":app"]));
    assert!(said.starts_with("pushed 1 file, 2 bytes in "), "{said}");
    let (status, _) = server.get("/api/rooms/mirror/files/app/extra.txt").await;
    assert_eq!(status, 200, "without --delete, the room's own files stay");

    let said = ok(&duet(
        &server,
        "mirror",
        &state,
        &dir,
        &["push", "--delete", ":app"],
    ));
    assert!(said.contains(" s (deleted 1)"), "{said}");
    let (status, _) = server.get("/api/rooms/mirror/files/app/extra.txt").await;
    assert_eq!(status, 404);
    let (_, text) = server.get("/api/rooms/mirror/files/app/a.txt").await;
    assert_eq!(text, "a\n");
}

#[tokio::test]
async fn a_missing_folder_or_a_bad_room_is_refused_before_sending() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let out = duet(
        &server,
        "bad room!",
        &here.path().join("state"),
        here.path(),
        &["push"],
    );
    assert!(!out.status.success());
    let out = duet(
        &server,
        "r",
        &here.path().join("state"),
        here.path(),
        &["push", "nowhere"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot push nowhere"),
        "{}",
        stderr(&out)
    );
}

/// A folder pushed, then the same file changed both in the room and here.
async fn conflict(server: &Server, room: &str, here: &Path) -> std::path::PathBuf {
    let dir = here.join("p");
    write(&dir, "mine.txt", b"pushed\n");
    write(&dir, "theirs.txt", b"pushed\n");
    ok(&duet(server, room, &here.join("state"), &dir, &["push"]));
    let (_, body) = server
        .post(
            &format!("/api/rooms/{room}/sandbox/exec"),
            serde_json::json!({"cmd": "echo room > mine.txt; echo room > theirs.txt"}),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");
    write(&dir, "mine.txt", b"local edit\n");
    dir
}

#[tokio::test]
async fn pull_refuses_to_replace_local_changes_without_a_terminal_and_force_replaces_them() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    let dir = conflict(&server, "clash", here.path()).await;

    let said = refused(&server, "clash", &state, &dir, &["pull"]);
    assert!(said.contains("\n  mine.txt\n"), "{said}");
    assert!(
        !said.contains("theirs.txt"),
        "unchanged here: replaced without asking\n{said}"
    );
    assert!(said.contains("--force"), "{said}");
    assert_eq!(
        std::fs::read(dir.join("mine.txt")).unwrap(),
        b"local edit\n"
    );
    assert_eq!(
        std::fs::read(dir.join("theirs.txt")).unwrap(),
        b"pushed\n",
        "nothing pulled"
    );

    let said = ok(&duet(&server, "clash", &state, &dir, &["pull", "--force"]));
    assert!(said.starts_with("pulled 2 files, "), "{said}");
    assert_eq!(std::fs::read(dir.join("mine.txt")).unwrap(), b"room\n");
    assert_eq!(std::fs::read(dir.join("theirs.txt")).unwrap(), b"room\n");
    // What a pull wrote counts as synced: pulling again asks nothing.
    ok(&duet(&server, "clash", &state, &dir, &["pull"]));
}

#[tokio::test]
async fn pull_delete_deletes_what_the_room_deleted_and_nothing_else() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    let dir = here.path().join("p");
    write(&dir, "keep.txt", b"k\n");
    write(&dir, "old/gone.txt", b"g\n");
    write(&dir, "edited.txt", b"e\n");
    write(&dir, "src/also-gone.txt", b"a\n");
    write(&dir, "src/stays.txt", b"s\n");
    ok(&duet(&server, "del", &state, &dir, &["push", ".", ":p"]));
    // Never synced: a pull never deletes it.
    write(&dir, "local-only.txt", b"mine\n");
    // Bob deletes in the room; Ada edits one of those here meanwhile.
    in_room(
        &server,
        "del",
        "rm -r p/old p/edited.txt p/src/also-gone.txt",
    )
    .await;
    write(&dir, "edited.txt", b"my edit\n");

    // Without --delete nothing is deleted.
    ok(&duet(&server, "del", &state, &dir, &["pull", ":p", "."]));
    assert!(dir.join("old/gone.txt").exists());

    // The edited one is asked about; without a terminal, nothing happens.
    let said = refused(
        &server,
        "del",
        &state,
        &dir,
        &["pull", ":p", ".", "--delete"],
    );
    assert!(
        said.contains("\n  edited.txt (deleted in the room)\n"),
        "{said}"
    );
    assert!(!said.contains("gone.txt"), "unchanged here: {said}");
    assert!(dir.join("old/gone.txt").exists(), "nothing pulled");

    // Put back as it was synced, the edit is no conflict: all three go.
    write(&dir, "edited.txt", b"e\n");
    let said = ok(&duet(
        &server,
        "del",
        &state,
        &dir,
        &["pull", ":p", ".", "--delete"],
    ));
    assert!(said.contains("deleted 3 files"), "{said}");
    assert!(!dir.join("old").exists(), "an emptied folder goes too");
    assert!(!dir.join("edited.txt").exists());
    assert!(!dir.join("src/also-gone.txt").exists());
    assert_eq!(std::fs::read(dir.join("src/stays.txt")).unwrap(), b"s\n");
    assert_eq!(std::fs::read(dir.join("keep.txt")).unwrap(), b"k\n");
    assert_eq!(
        std::fs::read(dir.join("local-only.txt")).unwrap(),
        b"mine\n"
    );
    // Nothing is left to delete: a second pull deletes nothing.
    let said = ok(&duet(
        &server,
        "del",
        &state,
        &dir,
        &["pull", ":p", ".", "--delete"],
    ));
    assert!(said.contains("deleted 0 files"), "{said}");
}

/// What the room's command `cmd` printed (it must succeed).
async fn in_room(server: &Server, room: &str, cmd: &str) -> String {
    let result = crate::common::apps::exec(server, room, cmd).await;
    assert_eq!(result["exitCode"], 0, "{result}");
    result["stdout"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn push_never_replaces_the_rooms_changes_without_asking() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    let dir = here.path().join("p2");
    write(&dir, "a.txt", b"v1\n");
    write(&dir, "b.txt", b"b1\n");
    ok(&duet(&server, "keep", &state, &dir, &["push", ".", ":p2"]));
    // Bob edits b.txt and makes new.txt in the room; Ada edits only a.txt here.
    in_room(
        &server,
        "keep",
        "echo bob-edit >> p2/b.txt; echo new > p2/new.txt",
    )
    .await;
    write(&dir, "a.txt", b"v2\n");

    let said = refused(
        &server,
        "keep",
        &state,
        &dir,
        &["push", ".", ":p2", "--delete"],
    );
    assert!(
        said.contains("changed in the room since the last push"),
        "{said}"
    );
    assert!(said.contains("\n  p2/b.txt\n"), "{said}");
    assert!(
        said.contains("\n  p2/new.txt\n"),
        "a mirror deletes it: {said}"
    );
    assert!(!said.contains("a.txt"), "unchanged in the room: {said}");
    assert!(
        said.contains("nothing pushed") && said.contains("--force"),
        "{said}"
    );
    assert_eq!(
        in_room(&server, "keep", "cat p2/b.txt").await,
        "b1\nbob-edit\n"
    );
    assert_eq!(in_room(&server, "keep", "cat p2/a.txt").await, "v1\n");

    // Once this folder has the room's change, pushing it asks nothing.
    write(&dir, "b.txt", b"b1\nbob-edit\n");
    ok(&duet(&server, "keep", &state, &dir, &["push", ".", ":p2"]));
    assert_eq!(in_room(&server, "keep", "cat p2/a.txt").await, "v2\n");
    assert_eq!(
        in_room(&server, "keep", "cat p2/b.txt").await,
        "b1\nbob-edit\n"
    );

    // --force replaces without asking.
    in_room(&server, "keep", "echo again >> p2/b.txt").await;
    assert!(
        !duet(&server, "keep", &state, &dir, &["push", ".", ":p2"])
            .status
            .success()
    );
    ok(&duet(
        &server,
        "keep",
        &state,
        &dir,
        &["push", ".", ":p2", "--force"],
    ));
    assert_eq!(
        in_room(&server, "keep", "cat p2/b.txt").await,
        "b1\nbob-edit\n"
    );
}

#[tokio::test]
async fn pull_asks_on_a_terminal() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let dir = conflict(&server, "ask", here.path()).await;
    let tmux = Tmux::new(here.path());
    let mut env = vec![
        ("DUET_SERVER", server.url("")),
        ("DUET_ROOM", "ask".to_string()),
        (
            "XDG_STATE_HOME",
            here.path().join("state").display().to_string(),
        ),
    ];
    if let Some(token) = &server.token {
        env.push(("DUET_TOKEN", token.clone()));
    }
    tmux.shell("sh", &env, (100, 20));
    tmux.type_text(
        "sh",
        &format!("cd {} && duet pull; echo EXIT $?", dir.display()),
    );
    tmux.keys("sh", &["Enter"]);
    tmux.wait("sh", "the question", |s| {
        s.contains("mine.txt") && s.contains("[y/N]")
    })
    .await;
    assert_eq!(
        std::fs::read(dir.join("mine.txt")).unwrap(),
        b"local edit\n"
    );
    tmux.type_text("sh", "y");
    tmux.keys("sh", &["Enter"]);
    tmux.wait("sh", "the pull", |s| s.contains("EXIT 0")).await;
    assert_eq!(std::fs::read(dir.join("mine.txt")).unwrap(), b"room\n");
}

#[tokio::test]
async fn pull_dash_writes_the_tar_to_stdout() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    write(here.path(), "p/src/main.rs", b"fn main() {}\n");
    write(here.path(), "p/README", b"hi\n");
    ok(&duet(
        &server,
        "tar",
        &state,
        &here.path().join("p"),
        &["push"],
    ));
    let out = duet(&server, "tar", &state, here.path(), &["pull", ":src", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut archive = tar::Archive::new(&out.stdout[..]);
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["main.rs"]);
    assert!(!here.path().join("main.rs").exists());
}

#[tokio::test]
async fn the_diff_applies_with_git_in_the_pushed_folder() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    let dir = here.path().join("p");
    write(&dir, "a.txt", b"one\ntwo\nthree\n");
    write(&dir, "gone.txt", b"bye\n");
    write(&dir, "bin.dat", &[0, 1, 2, 255]);
    write(&dir, "tool.sh", b"echo\n");
    ok(&duet(&server, "diffs", &state, &dir, &["push"]));
    let snapshot = here.path().join("snapshot");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&dir)
        .arg(&snapshot)
        .status()
        .unwrap();
    assert!(copied.success());

    let cmd = "sed -i s/two/TWO/ a.txt; rm gone.txt; printf '\\x00\\x09' > bin.dat; \
               chmod +x tool.sh; mkdir -p new; echo fresh > new/file.txt";
    let (_, body) = server
        .post(
            "/api/rooms/diffs/sandbox/exec",
            serde_json::json!({ "cmd": cmd }),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");

    let patch = ok(&duet(&server, "diffs", &state, &dir, &["diff"]));
    assert!(!patch.contains('\x1b'), "no colour into a pipe");
    assert!(patch.contains("diff --git a/a.txt b/a.txt\n"), "{patch}");
    assert!(patch.contains("-two\n+TWO\n"), "{patch}");
    let file = here.path().join("room.patch");
    std::fs::write(&file, &patch).unwrap();
    let applied = Command::new("git")
        .args(["apply", "--binary"])
        .arg(&file)
        .current_dir(&snapshot)
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    ok(&duet(
        &server,
        "diffs",
        &state,
        here.path(),
        &["pull", ":", "room"],
    ));
    assert_eq!(listing(&snapshot), listing(&here.path().join("room")));

    let only = ok(&duet(&server, "diffs", &state, &dir, &["diff", "new"]));
    assert!(
        only.starts_with("diff --git a/new/file.txt b/new/file.txt\n"),
        "{only}"
    );
    assert!(!only.contains("a.txt"), "{only}");
    let out = duet(&server, "diffs", &state, &dir, &["diff", "--from", "nope"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_watched_edit_reaches_the_room() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let dir = here.path().join("p");
    write(&dir, "a.txt", b"first\n");
    write(&dir, "old.txt", b"old\n");
    let mut child = command(
        &server,
        "watched",
        &here.path().join("state"),
        &dir,
        &["push", "--watch"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(first.starts_with("pushed 2 files, "), "{first}");
    // The edit is made again now and then until the room has it: no
    // timed assertion, only a generous deadline.
    wait_for(&server, "watched", "a.txt", "second\n", || {
        write(&dir, "a.txt", b"second\n")
    })
    .await;
    std::fs::remove_file(dir.join("old.txt")).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = server.get("/api/rooms/watched/files/old.txt").await;
        if status == 404 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the deletion never reached the room"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let synced: Vec<String> = lines.try_iter().collect();
    assert!(
        synced
            .iter()
            .any(|l| l.starts_with("synced 1 file (7 bytes) in ") && l.ends_with(" ms")),
        "{synced:?}"
    );
    // SAFETY: signalling our own child, as Ctrl+C would.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(status.success(), "Ctrl+C ends the watch: {status}");
}

/// Waits until the room's `path` reads `want`, doing `edit` now and again.
async fn wait_for(server: &Server, room: &str, path: &str, want: &str, edit: impl Fn()) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut tries = 0;
    loop {
        if tries % 20 == 0 {
            edit();
        }
        tries += 1;
        let (_, text) = server.get(&format!("/api/rooms/{room}/files/{path}")).await;
        if text == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} never reached the room: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_pull_never_writes_through_a_symlink() {
    let (server, _data) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let state = here.path().join("state");
    write(here.path(), "p/sub/file.txt", b"in the room\n");
    ok(&duet(
        &server,
        "links",
        &state,
        &here.path().join("p"),
        &["push"],
    ));
    let cmd = "ln -s /etc/passwd abs; ln -s ../../up sub/up; ln -s file.txt sub/ok";
    let (_, body) = server
        .post(
            "/api/rooms/links/sandbox/exec",
            serde_json::json!({ "cmd": cmd }),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");

    // Here, `sub` is a symlink to a folder outside the destination.
    let (outside, dest) = (here.path().join("outside"), here.path().join("dest"));
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&dest).unwrap();
    symlink(&outside, dest.join("sub")).unwrap();
    let out = duet(
        &server,
        "links",
        &state,
        here.path(),
        &["pull", "--force", ":", "dest"],
    );
    ok(&out);
    let warned = stderr(&out);
    assert!(
        warned.contains("skipped abs: a symlink to /etc/passwd (outside the folder)"),
        "{warned}"
    );
    assert!(
        warned.contains("skipped sub/up: a symlink to ../../up"),
        "{warned}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written through"
    );
    let listed = listing(&dest);
    assert_eq!(
        listed.get("sub").map(String::as_str),
        Some("dir 755"),
        "{listed:?}"
    );
    assert_eq!(
        listed.get("sub/file.txt").map(String::as_str),
        Some("file 644 in the room\n")
    );
    assert_eq!(
        listed.get("sub/ok").map(String::as_str),
        Some("link file.txt")
    );
    assert!(!listed.contains_key("abs") && !listed.contains_key("sub/up"));
}

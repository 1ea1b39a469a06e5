//! End to end, a room on a folder of this machine (issue 26, item 5): the
//! real binary in tmux, `duet --workspace DIR` on its embedded backend
//! with the fake model. The status bar says the room works on DIR (with
//! `~` for home); a command run in the room makes a file in DIR itself,
//! owned by DIR's owner; `/undo` brings back a file the agent's turn
//! deleted from DIR; a cleanup keeps DIR and its files, and the next
//! `duet --workspace DIR` is back in the same room on them. Needs tmux.

use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The owner the folder is given when the test runs as root: what the
/// room makes must be theirs, not root's nor the room's own uid.
const OWNER: u32 = 12345;

/// Waits until `path` exists (a command of the room made it).
async fn appears(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn duet_on_a_folder_works_in_it_as_its_owner_and_a_cleanup_keeps_it() {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Deleting it as asked. ".into(),
        "<run>rm notes.txt</run>".into(),
    ])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("app");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "our work").unwrap();
    let root = nix::unistd::geteuid().is_root();
    let owner = if root {
        let (uid, gid) = (
            nix::unistd::Uid::from_raw(OWNER),
            nix::unistd::Gid::from_raw(OWNER),
        );
        nix::unistd::chown(&folder, Some(uid), Some(gid)).unwrap();
        nix::unistd::chown(&folder.join("notes.txt"), Some(uid), Some(gid)).unwrap();
        OWNER
    } else {
        nix::unistd::geteuid().as_raw()
    };
    let tmux = Tmux::new(dir.path());
    let mut env = client_env(dir.path(), "ada");
    env.extend([
        // The status bar writes a folder under home with `~`.
        ("HOME", dir.path().display().to_string()),
        ("DUET_AI_URL", model.url.clone()),
        ("DUET_AI_MODEL", "scripted".into()),
        ("DUET_AI_KEY", "sk-test".into()),
        ("DUET_AGENT_STEPS", "1".into()),
    ]);
    let args = format!("--workspace {}", folder.display());
    tmux.start("ada", &env, &args);
    tmux.wait("ada", "the room on the folder", |s| {
        s.contains("1 here") && s.contains("on ~/app")
    })
    .await;

    // A command of the room makes a file in the folder, the owner's.
    tmux.type_text("ada", "!touch made.txt && echo made-it");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the command's output", |s| {
        s.lines().any(|l| l.contains("│made-it"))
    })
    .await;
    let made = folder.join("made.txt");
    appears(&made).await;
    assert_eq!(std::fs::metadata(&made).unwrap().uid(), owner);

    // The agent's turn deletes a file of the folder; /undo restores it.
    tmux.type_text("ada", "please delete notes.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the agent's command ran", |s| {
        s.contains("╭ $ rm notes.txt") && s.contains("Deleting it as asked.")
    })
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while folder.join("notes.txt").exists() {
        assert!(std::time::Instant::now() < deadline, "the turn deleted it");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tmux.type_text("ada", "/undo");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the question before the undo", |s| {
        s.contains("Undo: restore checkpoint auto-")
    })
    .await;
    tmux.keys("ada", &["y"]);
    tmux.wait("ada", "the restore in the timeline", |s| {
        s.contains("ada restored checkpoint auto-")
    })
    .await;
    let notes = folder.join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "our work");
    assert_eq!(std::fs::metadata(&notes).unwrap().uid(), owner);
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("app"))
        .collect();
    assert_eq!(
        beside,
        ["app"],
        "checkpoints are kept in the data directory"
    );

    // A cleanup says the files stay, and keeps them.
    tmux.type_text("ada", "/cleanup");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the cleanup's question", |s| {
        s.contains("the files in ~/app stay")
    })
    .await;
    tmux.keys("ada", &["y"]);
    tmux.wait("ada", "the cleaned-up room", |s| {
        s.contains("ada cleaned up the room") && !s.contains("made-it")
    })
    .await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "our work");
    assert!(made.exists());
    assert_eq!(std::fs::metadata(&folder).unwrap().uid(), owner);

    // The room goes on in the folder: the same folder, the same room.
    tmux.type_text("ada", "!ls");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the folder's files after the cleanup", |s| {
        s.lines().any(|l| l.contains("│made.txt")) && s.lines().any(|l| l.contains("│notes.txt"))
    })
    .await;
    tmux.keys("ada", &["C-c"]);
    tmux.keys("ada", &["C-c"]);
    let left = tmux
        .wait("ada", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
    let room = left
        .split("Left room ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_default()
        .to_string();
    assert!(room.starts_with("app-"), "{left}");
    tmux.start("again", &env, &args);
    tmux.wait("again", "the same room on the folder", |s| {
        s.contains(&format!(" {room} ")) && s.contains("on ~/app") && s.contains("│made.txt")
    })
    .await;
    tmux.keys("again", &["C-c"]);
    tmux.keys("again", &["C-c"]);
    tmux.wait("again", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
    assert!(folder.join("notes.txt").exists() && made.exists());
}

/// `duet --workspace` where it makes no sense says why and starts nothing.
#[test]
fn duet_on_a_folder_refuses_what_makes_no_sense() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("app");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(dir.path().join("file.txt"), "x").unwrap();
    let duet = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_duet"))
            .args(args)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("DUET_DATA_DIR", dir.path().join("data"))
            .env_remove("DUET_SERVER")
            .env_remove("DUET_ROOM")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let app = folder.display().to_string();
    let said = duet(&["--workspace", &app, "--server", "http://127.0.0.1:9"]);
    assert!(said.contains("does not go with --server"), "{said}");
    let said = duet(&["--workspace", &app, "--room", "other"]);
    assert!(said.contains("does not go with --room"), "{said}");
    let file = dir.path().join("file.txt").display().to_string();
    assert!(duet(&["--workspace", &file]).contains("not a folder"));
    let gone = dir.path().join("gone").display().to_string();
    assert!(duet(&["--workspace", &gone]).contains("No such file"));
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let said = duet(&["--workspace", &dir.path().display().to_string()]);
    assert!(said.contains("hold one another"), "{said}");
    let said = duet(&["--workspace", &app, "ls"]);
    assert!(said.contains("plain `duet` only"), "{said}");
    if nix::unistd::geteuid().is_root() {
        // The folder is root's (a tempdir of root's): a room never runs as root.
        let said = duet(&["--workspace", &app]);
        assert!(said.contains("belongs to root"), "{said}");
    }
    assert!(
        !data.join("folders").exists(),
        "nothing is bound on a refusal"
    );
}

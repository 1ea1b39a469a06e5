//! `duet ls`, `duet rm`, `duet checkpoint(s)`, `duet restore`, `duet undo`
//! and `duet fork` against a real backend: a folder listed (folders
//! marked, `--json` as the protocol's listing), a file and a folder
//! deleted (a folder only with `-r`), a checkpoint taken, a change
//! undone by restoring it, a fork that starts from the same files and
//! then goes its own way, and every refusal said as a sentence.

use crate::common::Server;
use crate::common::cli::{duet, stderr, stdout};
use serde_json::Value;

/// Runs a shell line in the room's sandbox; answers its stdout.
fn sh(server: &Server, room: &str, line: &str) -> String {
    let out = duet(server, room, &["exec", "--", line]);
    assert!(out.status.success(), "{line}: {}", stderr(&out));
    stdout(&out)
}

/// `duet ARGS… --json`, parsed.
fn json(server: &Server, room: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = duet(server, room, &args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("--json prints JSON")
}

fn names(listing: &Value) -> Vec<(String, String)> {
    listing["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn ls_lists_folders_and_rm_deletes_a_folder_only_with_r() {
    let (server, _dir) = Server::fresh().await;
    let room = "files";
    sh(
        &server,
        room,
        "mkdir -p src/deep && printf hello > notes.txt && printf x > src/a.rs && touch .env",
    );

    let listing = json(&server, room, &["ls"]);
    assert_eq!(
        names(&listing),
        [(".env", "file"), ("notes.txt", "file"), ("src", "dir")]
            .map(|(n, t)| (n.to_string(), t.to_string()))
    );
    let notes = &listing["entries"][1];
    assert_eq!(notes["size"], 5);
    assert!(notes["mtime"].as_u64().unwrap() > 1_600_000_000_000, "ms");

    let out = duet(&server, room, &["ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("TYPE  SIZE  MODIFIED"), "{text}");
    assert!(
        text.contains("notes.txt\n") && text.contains("5 B"),
        "{text}"
    );
    assert!(text.contains("src/\n"), "folders are marked: {text}");

    // A folder by a relative or an absolute path.
    let out = duet(&server, room, &["ls", "/workspace/src"]);
    assert!(stdout(&out).contains("a.rs\n") && stdout(&out).contains("deep/\n"));
    let out = duet(&server, room, &["ls", "src/deep"]);
    assert_eq!(stdout(&out), "/workspace/src/deep is empty\n");

    // Refused here, or by the server, in sentences.
    let out = duet(&server, room, &["ls", "/etc"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: /etc is outside /workspace: only the room's /workspace can be reached\n"
    );
    let out = duet(&server, room, &["ls", "nope"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: /workspace/nope: no such folder in the room's workspace (404)\n"
    );
    let out = duet(&server, room, &["ls", "notes.txt"]);
    assert!(stderr(&out).contains("no such folder"), "{}", stderr(&out));

    // A folder needs -r, and nothing is deleted without it.
    let out = duet(&server, room, &["rm", "src"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: /workspace/src is a folder: `duet rm -r src` deletes it with everything in it\n"
    );
    assert_eq!(sh(&server, room, "cat src/a.rs"), "x");
    let out = duet(&server, room, &["rm", "-r", "src", "notes.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "deleted the folder /workspace/src\ndeleted /workspace/notes.txt\n"
    );
    assert_eq!(
        names(&json(&server, room, &["ls"])),
        vec![(".env".to_string(), "file".to_string())]
    );

    let out = duet(&server, room, &["rm", "notes.txt"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: /workspace/notes.txt: no such file or folder in the room's workspace\n"
    );
    let out = duet(&server, room, &["rm", "/workspace"]);
    assert!(stderr(&out).contains("/workspace itself cannot be deleted"));
    let out = duet(&server, room, &["rm", "../x"]);
    assert!(stderr(&out).contains("goes outside /workspace with .."));
}

#[tokio::test]
async fn a_checkpoint_brings_back_what_a_change_lost() {
    let (server, _dir) = Server::fresh().await;
    let room = "undo";
    sh(&server, room, "printf 'first draft' > notes.txt");

    let out = duet(&server, room, &["checkpoints"]);
    assert!(
        stdout(&out).starts_with("no checkpoints yet"),
        "{}",
        stdout(&out)
    );
    let out = duet(&server, room, &["checkpoint", "before"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("saved checkpoint before (c"),
        "{}",
        stdout(&out)
    );

    let list = json(&server, room, &["checkpoints"]);
    let taken = &list["checkpoints"][0];
    assert_eq!(taken["name"], "before");
    assert_eq!(taken["by"], "ada");
    assert_eq!(taken["auto"], false);
    assert_eq!(taken["size"], 11);
    let out = duet(&server, room, &["checkpoints"]);
    let text = stdout(&out);
    assert!(text.starts_with("NAME    ID  WHEN"), "{text}");
    // (the worker adds an EXPIRES column after AUTO)
    assert!(text.contains("  ada  11 B  no"), "{text}");

    // A change, then the restore by name: the file is back.
    sh(
        &server,
        room,
        "printf 'ruined' > notes.txt && rm -f other.txt && touch new.txt",
    );
    let out = duet(&server, room, &["restore", "before"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("restored checkpoint before (c"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).ends_with(": /workspace is as it was then\n"));
    assert_eq!(
        sh(&server, room, "cat notes.txt; ls"),
        "first draftnotes.txt\n"
    );

    // A later write does not touch the checkpoint: it restores again.
    sh(&server, room, "printf 'again' > notes.txt");
    let id = taken["id"].as_str().unwrap();
    let out = duet(&server, room, &["restore", id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sh(&server, room, "cat notes.txt"), "first draft");

    // Refusals, in sentences.
    let out = duet(&server, room, &["checkpoint", "before"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with(
            "duet: The room cannot do that now (409 Conflict: a checkpoint has that name; name: "
        ),
        "{}",
        stderr(&out)
    );
    let out = duet(&server, room, &["checkpoint", ".hidden"]);
    assert_eq!(
        stderr(&out),
        "duet: checkpoint name \".hidden\": it must start with a letter or a digit\n"
    );
    let out = duet(&server, room, &["restore", "nope"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: Not in this room (404 Not Found: no such checkpoint; checkpointId: no checkpoint \
         \"nope\" in this room)\n"
    );
    // No agent turn ran commands: nothing to undo.
    let out = duet(&server, room, &["undo"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with("duet: nothing to undo: no automatic checkpoint"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_fork_starts_from_the_same_files_and_goes_its_own_way() {
    let (server, _dir) = Server::fresh().await;
    sh(&server, "orig", "printf one > a.txt");
    let out = duet(&server, "orig", &["checkpoint", "v1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    sh(&server, "orig", "printf two > a.txt");

    let out = duet(&server, "orig", &["fork", "copy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("forked room orig into room copy; join it with: "),
        "{}",
        stdout(&out)
    );
    assert_eq!(sh(&server, "copy", "cat a.txt"), "two");
    // Separate afterwards, both ways.
    sh(&server, "copy", "printf three > a.txt");
    assert_eq!(sh(&server, "orig", "cat a.txt"), "two");
    sh(&server, "orig", "printf four > b.txt");
    assert_eq!(sh(&server, "copy", "ls"), "a.txt\n");
    assert_eq!(
        json(&server, "copy", &["checkpoints"])["checkpoints"],
        Value::Array(vec![]),
        "a fork has no checkpoints"
    );

    // From a checkpoint, by its name.
    let out = duet(&server, "orig", &["fork", "old", "--from", "v1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sh(&server, "old", "cat a.txt"), "one");

    let out = duet(&server, "orig", &["fork", "copy"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        "duet: The room cannot do that now (409 Conflict: the room exists; to: room \"copy\" \
         exists already)\n"
    );
    let out = duet(&server, "orig", &["fork", "bad-"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a valid room id"),
        "{}",
        stderr(&out)
    );
}

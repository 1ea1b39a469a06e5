//! The TUI's checkpoints, restores, forks and folder listings as a person
//! uses them: `/checkpoint NAME` saves one, `/checkpoints` lists them live
//! (full states and `duet_state` patches), `/restore NAME` and `/undo`
//! ask first and say what is lost, a second `/undo` goes one further back
//! until an agent turn runs, `/fork ROOM` offers to switch rooms, `/ls`
//! shows a folder; and the new records read well in the timeline.

use crate::common::tui_fixtures::*;
use crossterm::event::KeyCode;
use duet::client::http::StatusError;
use duet::client::rpc::{RoomOp, RpcError};
use duet::protocol::*;
use duet::tui::app::{App, Effect, Modal, Msg};
use duet::tui::files::Listing;
use serde_json::json;

fn room_with(checkpoints: Vec<Checkpoint>) -> App {
    let mut app = app();
    app.update(frame(ServerFrame::State {
        state: RoomState {
            checkpoints,
            ..RoomState::default()
        },
    }));
    app
}

fn last_toast(app: &App) -> String {
    app.toasts
        .last()
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// The restore a y would ask for, after the question is shown.
fn restore_asked(app: &App) -> duet::tui::undo::Restore {
    match app.modals.last() {
        Some(Modal::ConfirmRestore(restore)) => restore.clone(),
        other => panic!("no restore question, but {other:?}"),
    }
}

#[test]
fn checkpoint_sends_its_name_and_a_bad_one_is_refused_here() {
    let mut app = room_with(Vec::new());
    let effects = submit(&mut app, "/checkpoint before-refactor");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::CheckpointCreate(Some(
            "before-refactor".into()
        )))]
    );
    assert!(app.composer.is_empty());
    // No name: the server names it.
    let effects = submit(&mut app, "/checkpoint");
    assert_eq!(effects, vec![Effect::Call(RoomOp::CheckpointCreate(None))]);

    let effects = submit(&mut app, "/checkpoint -oops");
    assert!(effects.is_empty());
    assert_eq!(
        last_toast(&app),
        "/checkpoint -oops: a checkpoint name must start with a letter or a digit"
    );
    assert_eq!(app.composer.text(), "/checkpoint -oops", "the line stays");
}

#[test]
fn a_saved_checkpoint_is_said_and_a_refused_one_in_the_servers_words() {
    let mut app = room_with(Vec::new());
    let saved = checkpoint("c1", "before", false, 0);
    app.update(answer(
        RoomOp::CheckpointCreate(Some("before".into())),
        Ok(json!({ "checkpoint": saved })),
    ));
    assert_eq!(
        last_toast(&app),
        "saved checkpoint before (c1, 2.1 KB): /restore before brings this back"
    );
    let full = StatusError::from_body(
        507,
        r#"{"error":"the room's disk is full","details":{"checkpoint":["it needs 10485760 bytes; 4194304 are free"]}}"#,
    );
    app.update(answer(
        RoomOp::CheckpointCreate(Some("big".into())),
        Err(RpcError::Failed(full)),
    ));
    assert_eq!(
        last_toast(&app),
        "the checkpoint big was not saved: The room's disk is full (507 Insufficient Storage: \
         the room's disk is full; checkpoint: it needs 10485760 bytes; 4194304 are free)"
    );
    assert!(app.toasts.last().unwrap().error);
}

#[test]
fn the_list_follows_full_states_and_patches() {
    let mut app = room_with(vec![checkpoint("c1", "auto-1", true, 0)]);
    assert_eq!(app.checkpoints.list.len(), 1);
    submit(&mut app, "/checkpoints");
    assert_eq!(app.modals.last(), Some(&Modal::Checkpoints));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("Checkpoints"), "{screen}");
    assert!(
        screen.contains("NAME    ID  WHEN              BY    SIZE    AUTO"),
        "{screen}"
    );
    assert!(
        screen.contains("auto-1  c1  2026-01-02 10:00  duet  2.1 KB  yes"),
        "{screen}"
    );

    // A patch adds one while the list is open: it shows at once.
    let mut mine = checkpoint("c2", "before", false, 5);
    mine.expires_at = Some((T0 + 86_400_000) as u64);
    app.update(patch(json!({
        "checkpoints": [checkpoint("c1", "auto-1", true, 0), mine]
    })));
    assert_eq!(app.checkpoints.list.len(), 2);
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("EXPIRES"), "{screen}");
    assert!(
        screen.contains("before  c2  2026-01-02 10:05  ada   2.1 KB  no    2026-01-03 10:00"),
        "{screen}"
    );
    // A patch of the wrong shape changes nothing.
    app.update(patch(json!({ "checkpoints": "nope" })));
    assert_eq!(app.checkpoints.list.len(), 2);
    // A patch that empties it.
    app.update(patch(json!({ "checkpoints": [] })));
    assert!(render(&mut app, 120, 40).contains("No checkpoints yet"));
    app.update(key(KeyCode::Esc));
    assert!(app.modals.is_empty());
}

#[test]
fn restore_asks_first_and_says_what_is_lost() {
    let mut app = room_with(vec![
        checkpoint("c1", "before", false, 0),
        checkpoint("c2", "auto-2", true, 10),
    ]);
    app.update(process_frame(ProcessFrame::Start {
        process: process("p1", "npm run dev", "bob", ProcessStatus::Running),
    }));
    app.update(frame(ServerFrame::Term(TermFrame::Open {
        term_id: "t1".into(),
        by: "bob".into(),
        cols: 80,
        rows: 24,
    })));
    app.now_ms = T0 + 30 * 60_000;
    let effects = submit(&mut app, "/restore before");
    assert!(effects.is_empty(), "nothing is sent before the answer");
    let asked = restore_asked(&app);
    assert_eq!(asked.id, "c1");
    assert!(!asked.undo);
    let losses = app.restore_losses(&asked);
    assert_eq!(
        losses,
        vec![
            "every change to /workspace since 2026-01-02 10:00 (30m00s ago), by anyone",
            "the background process that runs: it is stopped",
            "the shared terminal: it ends",
            "the shell's directory and exported variables: the next command runs in /workspace",
        ]
    );
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("Restore checkpoint before (c1)?"),
        "{screen}"
    );
    assert!(screen.contains("the shared terminal: it ends"), "{screen}");

    // n keeps everything.
    let effects = app.update(key(KeyCode::Char('n')));
    assert!(effects.is_empty());
    assert!(app.modals.is_empty());

    // By id too; y restores.
    submit(&mut app, "/restore c1");
    let effects = app.update(key(KeyCode::Char('y')));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::CheckpointRestore("c1".into()))]
    );
    app.update(answer(
        RoomOp::CheckpointRestore("c1".into()),
        Ok(json!({ "restored": true })),
    ));
    assert_eq!(
        last_toast(&app),
        "restored checkpoint before: /workspace is as it was then"
    );

    // An unknown one is refused here, and the line stays.
    let effects = submit(&mut app, "/restore nope");
    assert!(effects.is_empty());
    assert!(
        last_toast(&app).contains("no checkpoint \"nope\" in this room"),
        "{}",
        last_toast(&app)
    );
}

#[test]
fn undo_restores_the_newest_automatic_one_then_goes_further_back() {
    let mut app = room_with(vec![
        checkpoint("c1", "auto-1", true, 0),
        checkpoint("c2", "mine", false, 1),
        checkpoint("c3", "auto-3", true, 2),
    ]);
    submit(&mut app, "/undo");
    let asked = restore_asked(&app);
    assert_eq!((asked.id.as_str(), asked.undo), ("c3", true));
    assert!(render(&mut app, 120, 40).contains("Undo: restore checkpoint auto-3 (c3)?"));
    let effects = app.update(key(KeyCode::Char('y')));
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::CheckpointRestore("c3".into()))]
    );
    app.update(answer(
        RoomOp::CheckpointRestore("c3".into()),
        Ok(json!({ "restored": true })),
    ));

    // No agent turn since: one further back (a person's checkpoint is
    // not an undo step).
    submit(&mut app, "/undo");
    assert_eq!(restore_asked(&app).id, "c1");
    app.update(key(KeyCode::Char('y')));
    app.update(answer(
        RoomOp::CheckpointRestore("c1".into()),
        Ok(json!({ "restored": true })),
    ));
    // Nothing older is kept.
    let effects = submit(&mut app, "/undo");
    assert!(effects.is_empty());
    assert!(app.modals.is_empty());
    assert!(last_toast(&app).starts_with("nothing further to undo: auto-1 is the oldest"));
    assert_eq!(app.composer.text(), "/undo", "a refused line stays");
    app.update(ctrl('c'));

    // An agent turn ran: /undo starts again from the newest.
    app.update(ai(AiPhase::Start, "t9", None));
    app.update(ai(AiPhase::End, "t9", None));
    submit(&mut app, "/undo");
    assert_eq!(restore_asked(&app).id, "c3");
}

#[test]
fn a_failed_undo_does_not_move_the_next_one_back() {
    let mut app = room_with(vec![
        checkpoint("c1", "auto-1", true, 0),
        checkpoint("c2", "auto-2", true, 1),
    ]);
    submit(&mut app, "/undo");
    app.update(key(KeyCode::Char('y')));
    let gone = StatusError::from_body(
        404,
        r#"{"error":"no such checkpoint","details":{"checkpointId":["no checkpoint \"c2\" in this room"]}}"#,
    );
    app.update(answer(
        RoomOp::CheckpointRestore("c2".into()),
        Err(RpcError::Failed(gone)),
    ));
    assert_eq!(
        last_toast(&app),
        "checkpoint auto-2 was not restored: Not in this room (404 Not Found: no such \
         checkpoint; checkpointId: no checkpoint \"c2\" in this room)"
    );
    submit(&mut app, "/undo");
    assert_eq!(restore_asked(&app).id, "c2");
}

#[test]
fn undo_with_nothing_to_undo_says_why() {
    let mut app = room_with(vec![checkpoint("c1", "mine", false, 0)]);
    let effects = submit(&mut app, "/undo");
    assert!(effects.is_empty());
    assert!(app.modals.is_empty());
    assert!(
        last_toast(&app).starts_with("nothing to undo: no automatic checkpoint"),
        "{}",
        last_toast(&app)
    );
}

#[test]
fn fork_offers_to_switch_and_yes_switches() {
    let mut app = room_with(vec![checkpoint("c1", "before", false, 0)]);
    let effects = submit(&mut app, "/fork demo-2");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::Fork {
            to: "demo-2".into(),
            checkpoint_id: None,
        })]
    );
    // From a checkpoint, by its name.
    let effects = submit(&mut app, "/fork demo-3 before");
    assert_eq!(
        effects,
        vec![Effect::Call(RoomOp::Fork {
            to: "demo-3".into(),
            checkpoint_id: Some("c1".into()),
        })]
    );
    // A bad room id is refused here.
    let effects = submit(&mut app, "/fork -bad-");
    assert!(effects.is_empty());
    assert!(last_toast(&app).contains("a room id is 1–63"));

    app.update(answer(
        RoomOp::Fork {
            to: "demo-2".into(),
            checkpoint_id: None,
        },
        Ok(json!({ "roomId": "demo-2" })),
    ));
    assert_eq!(
        app.modals.last(),
        Some(&Modal::ConfirmSwitch("demo-2".into()))
    );
    assert!(render(&mut app, 120, 40).contains("Room demo-2 is ready. Switch to it?"));
    let effects = app.update(key(KeyCode::Char('y')));
    assert_eq!(effects, vec![Effect::SwitchRoom("demo-2".into())]);
    assert!(app.modals.is_empty());
}

#[test]
fn fork_declined_stays_and_a_taken_room_is_said() {
    let mut app = room_with(Vec::new());
    let op = RoomOp::Fork {
        to: "b".into(),
        checkpoint_id: None,
    };
    app.update(answer(op.clone(), Ok(json!({ "roomId": "b" }))));
    let effects = app.update(key(KeyCode::Char('n')));
    assert!(effects.is_empty());
    assert!(app.modals.is_empty());
    assert!(last_toast(&app).starts_with("you stay in room demo-room; room b is ready"));

    // On a remote server the hint names that server and this name: a bare
    // `duet --room b` would open a local embedded backend, as "guest".
    let mut remote = room_with(Vec::new());
    remote.session.server = "https://duet.example.com".into();
    remote.session.name = "alice".into();
    remote.session.backend = duet::client::join::Backend::Server { token: true };
    remote.update(answer(op.clone(), Ok(json!({ "roomId": "b" }))));
    remote.update(key(KeyCode::Char('n')));
    assert!(
        last_toast(&remote)
            .contains("(duet --server https://duet.example.com --room b --name alice"),
        "{}",
        last_toast(&remote)
    );

    let taken = StatusError::from_body(
        409,
        r#"{"error":"the room exists","details":{"to":["room \"b\" exists already"]}}"#,
    );
    app.update(answer(op, Err(RpcError::Failed(taken))));
    assert_eq!(
        last_toast(&app),
        "room b was not forked: The room cannot do that now (409 Conflict: the room exists; \
         to: room \"b\" exists already)"
    );
}

#[test]
fn ls_lists_a_folder_in_a_view_of_its_own() {
    let mut app = room_with(Vec::new());
    assert_eq!(
        submit(&mut app, "/ls"),
        vec![Effect::ListDir(String::new())]
    );
    assert_eq!(
        submit(&mut app, "/ls /workspace/src/"),
        vec![Effect::ListDir("src".into())]
    );
    let effects = submit(&mut app, "/ls /etc");
    assert!(effects.is_empty());
    assert!(last_toast(&app).contains("/etc is outside /workspace"));

    let entry = |name: &str, kind, size| DirEntry {
        name: name.into(),
        kind,
        size,
        mtime: T0 as u64,
    };
    app.update(Msg::Listed(Ok(Listing {
        dir: "src".into(),
        entries: vec![
            entry("lib", EntryType::Dir, 0),
            entry("main.rs", EntryType::File, 2150),
        ],
    })));
    assert_eq!(app.modals.last(), Some(&Modal::Listing));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("/workspace/src"), "{screen}");
    assert!(
        screen.contains("dir   -       2026-01-02 10:00  lib/"),
        "{screen}"
    );
    assert!(
        screen.contains("file  2.1 KB  2026-01-02 10:00  main.rs"),
        "{screen}"
    );
    app.update(key(KeyCode::Char('q')));
    assert!(app.modals.is_empty());

    app.update(Msg::Listed(Err(
        "/ls: /workspace/nope: no such folder in the room's workspace (404)".into(),
    )));
    assert!(app.modals.is_empty());
    assert!(last_toast(&app).contains("no such folder"));
}

#[test]
fn the_new_records_read_well_in_the_timeline() {
    let record = |id: u32, event: Event| DuetMessage {
        id: id.to_string(),
        role: Role::System,
        user_id: event.by().map(str::to_string),
        text: "server text".into(),
        ts: T0 + i64::from(id) * 60_000,
        event: Some(event),
        ..DuetMessage::default()
    };
    let mut app = app();
    app.update(state(
        vec![
            record(
                1,
                Event::Checkpoint {
                    by: "ada".into(),
                    checkpoint_id: "c1".into(),
                    name: "before".into(),
                },
            ),
            record(
                2,
                Event::Delete {
                    by: "bob".into(),
                    path: "notes.txt".into(),
                },
            ),
            record(
                3,
                Event::Restore {
                    by: "bob".into(),
                    checkpoint_id: "c1".into(),
                    name: "before".into(),
                },
            ),
            record(
                4,
                Event::Fork {
                    by: "ada".into(),
                    from: "demo-room".into(),
                    to: "demo-2".into(),
                    checkpoint_id: Some("c1".into()),
                },
            ),
        ],
        Vec::new(),
    ));
    let screen = render(&mut app, 120, 40);
    for line in [
        "ada saved checkpoint before",
        "bob deleted /workspace/notes.txt",
        "bob restored checkpoint before: /workspace is as it was then",
        "ada forked room demo-room into room demo-2 (from checkpoint c1)",
    ] {
        assert!(screen.contains(line), "{line:?} in\n{screen}");
    }
}

#[test]
fn help_lists_the_new_commands_from_the_table() {
    let mut app = app();
    app.update(key(KeyCode::F(1)));
    let screen = render(&mut app, 120, 60);
    for usage in [
        "/undo",
        "/checkpoint [NAME]",
        "/checkpoints",
        "/restore NAME",
        "/fork ROOM [NAME]",
        "/ls [DIR]",
    ] {
        assert!(screen.contains(usage), "{usage} in\n{screen}");
    }
}

#[test]
fn a_cleanup_forgets_the_checkpoints() {
    let mut app = room_with(vec![checkpoint("c1", "auto-1", true, 0)]);
    app.update(frame(ServerFrame::Cleanup { by: "bob".into() }));
    assert!(app.checkpoints.list.is_empty());
}

#[test]
fn the_list_says_which_question_each_automatic_checkpoint_preceded() {
    let mut app = app();
    let to_room = DuetMessage {
        to: Some(Addressee::Room),
        ..user_msg(2, "ada", "lunch?")
    };
    app.update(frame(ServerFrame::State {
        state: RoomState {
            checkpoints: vec![
                checkpoint("c1", "auto-1", true, 3),
                checkpoint("c2", "mine", false, 5),
            ],
            messages: vec![
                user_msg(1, "bob", "fix the build"),
                to_room,
                agent_msg(4, "Fixed.", None),
                user_msg(6, "ada", "now the docs"),
            ],
            ..RoomState::default()
        },
    }));
    submit(&mut app, "/checkpoints");
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("before bob's question: fix the build"),
        "{screen}"
    );
    assert_eq!(screen.matches("question:").count(), 1, "{screen}");
}

//! The store's promises: rows, pages, migrations.

use super::*;
use crate::protocol::{ExecRecord, ExecSource, Run, STATE_EXECS};

fn message(n: u64, runs: Option<Vec<Run>>) -> DuetMessage {
    DuetMessage {
        client_id: None,
        id: format!("{n:012}"),
        role: if runs.is_some() {
            Role::Agent
        } else {
            Role::User
        },
        user_id: runs.is_none().then(|| "ada".to_string()),
        text: format!("m{n}"),
        ts: 1_700_000_000_000 + n as i64,
        runs,
        ..DuetMessage::default()
    }
}

#[tokio::test]
async fn rooms_messages_and_pages_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("duet.db")).await.unwrap();
    assert!(!store.has_room("r".into()).await.unwrap());
    let a = store.load_room("r".into(), "aaaa".into()).await.unwrap();
    let b = store.load_room("s".into(), "bbbb".into()).await.unwrap();
    assert_ne!(a.slot, b.slot);
    let again = store.load_room("r".into(), "cccc".into()).await.unwrap();
    assert_eq!((again.opaque.as_str(), again.slot), ("aaaa", a.slot));
    let run = Run {
        cmd: "ls".into(),
        stdout: "a\n".into(),
        stderr: String::new(),
        exit_code: Some(0),
        error: None,
        truncated: false,
        at: None,
    };
    for n in 1..=5 {
        let runs = (n == 3).then(|| vec![run.clone()]);
        store
            .insert_message("r".into(), message(n, runs), n + 1)
            .await
            .unwrap();
    }
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert_eq!(row.next_message, 6);
    assert_eq!(row.messages[2], message(3, Some(vec![run])));
    let (page, more) = store
        .page("r".into(), Some(format!("{:012}", 4)), 2)
        .await
        .unwrap();
    assert_eq!(
        page.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["m2", "m3"]
    );
    assert!(more);
    let (page, more) = store.page("r".into(), None, 10).await.unwrap();
    assert_eq!((page.len(), more), (5, false));
    store.clear_room("r".into()).await.unwrap();
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert!(row.messages.is_empty());
    assert_eq!(row.next_message, 6);
}

#[tokio::test]
async fn older_databases_keep_their_messages_and_gain_records() {
    use crate::protocol::{Addressee, Event};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("duet.db");
    {
        // A database of version 1: no column added since.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(
            "INSERT INTO rooms (id, opaque, slot) VALUES ('r', 'o', 1);
             INSERT INTO messages (room, id, role, user_id, text, ts) VALUES
             ('r', '000000000001', 'user', 'ada', 'old', 5);",
        )
        .unwrap();
    }
    let store = Store::open(path.clone()).await.unwrap();
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert_eq!(row.messages.len(), 1);
    assert_eq!(
        (row.messages[0].text.as_str(), row.messages[0].to),
        ("old", None)
    );
    let record = DuetMessage {
        id: format!("{:012}", 2),
        role: Role::System,
        user_id: Some("bob".into()),
        text: "bob interrupted `sleep 9`".into(),
        ts: 6,
        event: Some(Event::Interrupt {
            by: "bob".into(),
            exec_id: "x1".into(),
            cmd: "sleep 9".into(),
        }),
        ..DuetMessage::default()
    };
    let to_room = DuetMessage {
        id: format!("{:012}", 3),
        role: Role::User,
        text: "ok thanks".into(),
        client_id: Some("c1".into()),
        to: Some(Addressee::Room),
        ..record.clone()
    };
    let cancelled = DuetMessage {
        id: format!("{:012}", 4),
        role: Role::Agent,
        text: "Let me".into(),
        cancelled_by: Some("bob".into()),
        ..DuetMessage::default()
    };
    for (n, m) in [&record, &to_room, &cancelled].into_iter().enumerate() {
        store
            .insert_message("r".into(), m.clone(), n as u64 + 3)
            .await
            .unwrap();
    }
    drop(store);
    // Opened again (a restart): the migration is not repeated.
    let store = Store::open(path).await.unwrap();
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert_eq!(row.messages[1..], [record, to_room, cancelled]);
    assert_eq!(
        store.client_message("r".into(), "c1".into()).await.unwrap(),
        ClientMessage::Answered {
            reply: None,
            error: None
        }
    );
}

#[tokio::test]
async fn every_exec_is_kept_and_a_room_loads_the_recent_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("duet.db")).await.unwrap();
    store.load_room("r".into(), "o".into()).await.unwrap();
    for n in 1..=25u64 {
        let rec = ExecRecord {
            exec_id: format!("x{n:011}"),
            cmd: "true".into(),
            by: "ada".into(),
            source: ExecSource::Agent,
            stdout: String::new(),
            stderr: "e".into(),
            exit_code: None,
            duration: n,
            ts: 5,
            truncated: n % 2 == 0,
            error: None,
            timed_out: false,
            interrupted: false,
        };
        store.insert_exec("r".into(), rec).await.unwrap();
    }
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert_eq!(row.execs.len(), STATE_EXECS);
    assert_eq!(row.execs[0].exec_id, "x00000000006");
    assert!(row.execs[0].truncated && !row.execs[1].truncated);
    // The older ones are still there for a page (`GET /execs`, `duet export`).
    let (page, more) = store
        .page_execs("r".into(), Some("x00000000006".into()), 100)
        .await
        .unwrap();
    let ids: Vec<&str> = page.iter().map(|e| e.exec_id.as_str()).collect();
    assert_eq!(ids.first(), Some(&"x00000000001"));
    assert_eq!((ids.len(), more), (5, false));
}

#[tokio::test]
async fn a_second_store_of_one_database_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("duet.db");
    let first = Store::open(path.clone()).await.unwrap();
    let second = Store::open_waiting(path.clone(), Duration::ZERO).await;
    assert!(
        matches!(second, Err(StoreError::InUse)),
        "{:?}",
        second.err()
    );
    // Once the first is gone (its thread ends), the next one opens.
    drop(first);
    let again = Store::open(path).await;
    assert!(again.is_ok(), "{:?}", again.err());
}

#[tokio::test]
async fn processes_load_ended_with_their_logs_and_go_with_a_cleanup() {
    use crate::protocol::{Process, ProcessStatus};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("duet.db")).await.unwrap();
    store.load_room("r".into(), String::new()).await.unwrap();
    let process = |n: u64, status| StoredProcess {
        process: Process {
            id: format!("p{n}"),
            name: "sleep".into(),
            cmd: "sleep 9".into(),
            by: "ada".into(),
            status,
            exit_code: None,
            started_at: n,
            ended_at: None,
        },
        stdout: format!("out {n}"),
        stderr: String::new(),
    };
    // p10 sorts after p9: by number, not by text.
    for n in [9, 10, 11] {
        store.save_process("r".into(), process(n, ProcessStatus::Running));
    }
    store.save_process("r".into(), process(9, ProcessStatus::Killed));
    store.forget_processes("r".into(), vec!["p11".into()]);
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    let ids: Vec<_> = row
        .processes
        .iter()
        .map(|p| p.process.id.as_str())
        .collect();
    assert_eq!(ids, ["p9", "p10"]);
    assert_eq!(row.last_process, 11);
    assert_eq!(row.processes[0].process.status, ProcessStatus::Killed);
    // p10 ran when the room last loaded: its sandbox is gone.
    let p10 = &row.processes[1];
    assert_eq!(p10.process.status, ProcessStatus::Exited);
    assert_eq!(p10.process.exit_code, None);
    assert!(p10.process.ended_at.is_some());
    assert_eq!(p10.stdout, "out 10");
    // Marked once: the next load keeps when it was found ended.
    let again = store.load_room("r".into(), String::new()).await.unwrap();
    assert_eq!(again.processes[1], *p10);

    store.clear_room("r".into()).await.unwrap();
    let row = store.load_room("r".into(), String::new()).await.unwrap();
    assert!(row.processes.is_empty());
    assert_eq!(row.last_process, 11, "ids are not used twice");
}

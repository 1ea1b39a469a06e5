//! Automatic checkpoints before a turn: what they undo, how many are kept,
//! `--auto-checkpoints 0`, and one that does not fit.

use super::*;

#[tokio::test]
async fn an_automatic_checkpoint_before_a_turn_undoes_the_file_it_deleted() {
    let model = FakeModel::start(vec![
        Script::chunked("Tidying up.<run>rm notes.txt</run>", 5),
        Script::chunked("Nothing to run.", 5),
    ])
    .await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "cp-auto";
    put_file(&server, room, "notes.txt", b"keep me\n".to_vec()).await;
    let mut ws = server.joined(room, "user=bob").await;
    let (status, body) = server
        .post(
            &room_path(room, "/message"),
            json!({"text": "tidy up", "userId": "ada"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn = ws
        .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
        .await;
    assert_eq!(
        read(&server, room, "notes.txt").await,
        None,
        "the turn deleted it"
    );
    let kept = list(&server, room).await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    let auto = &kept[0];
    check_shape(auto);
    assert_eq!(auto["auto"], true);
    assert_eq!(auto["by"], "duet");
    assert_eq!(auto["turnId"], turn["turnId"], "{auto}");
    assert_eq!(auto["name"], format!("auto-{}", number(&id_of(auto))));
    assert_eq!(auto["size"], 8, "taken before the command: {auto}");
    // Automatic ones store no record.
    assert_eq!(
        records(&messages(&server, room).await, "checkpoint"),
        Vec::<Value>::new()
    );

    // A turn that runs no command takes none.
    let (status, _) = server
        .post(&room_path(room, "/message"), json!({"text": "and now?"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(list(&server, room).await.len(), 1);

    // Undo: restoring it brings the file back.
    let got = restore(&server, room, &id_of(auto), json!({"userId": "ada"})).await;
    assert_eq!(got, (200, json!({"restored": true})));
    assert_eq!(
        read(&server, room, "notes.txt").await.as_deref(),
        Some("keep me\n")
    );
    assert_eq!(
        the_record(&server, room, "restore").await["event"],
        json!({"kind":"restore","by":"ada","checkpointId":id_of(auto),"name":auto["name"]})
    );
}

#[tokio::test]
async fn only_the_last_auto_checkpoints_are_kept_and_people_s_stay() {
    let model = FakeModel::start(Vec::new()).await;
    model.always(Script::chunked(
        "Again.<run>echo $RANDOM >> runs.txt</run>",
        4,
    ));
    let (server, _dir) = with_model(&model, &["--auto-checkpoints", "2"]).await;
    let room = "cp-keep";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let mine = create(&server, room, json!({"name": "mine"})).await;
    let mut ws = server.joined(room, "user=bob").await;
    let mut turns = Vec::new();
    for i in 0..3 {
        let (status, body) = server
            .post(
                &room_path(room, "/message"),
                json!({"text": format!("run {i}")}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let start = ws
            .until(|f| f["type"] == "duet_ai" && f["phase"] == "start")
            .await;
        turns.push(start["turnId"].clone());
    }
    let kept = list(&server, room).await;
    assert_eq!(
        kept.len(),
        3,
        "mine and the last two automatic ones: {kept:?}"
    );
    assert_eq!(kept[0], mine);
    assert_eq!(
        (kept[1]["turnId"].clone(), kept[2]["turnId"].clone()),
        (turns[1].clone(), turns[2].clone()),
        "the last two turns' ones, oldest first: {kept:?}"
    );
    for auto in &kept[1..] {
        assert_eq!(auto["auto"], true);
        assert_eq!(auto["name"], format!("auto-{}", number(&id_of(auto))));
    }
    assert!(number(&id_of(&kept[1])) < number(&id_of(&kept[2])));
}

#[tokio::test]
async fn no_automatic_checkpoint_is_taken_with_auto_checkpoints_0() {
    let model = FakeModel::start(vec![Script::chunked("Sure.<run>rm f.txt</run>", 4)]).await;
    let (server, _dir) = with_model(&model, &["--auto-checkpoints", "0"]).await;
    let room = "cp-none";
    put_file(&server, room, "f.txt", b"x".to_vec()).await;
    let (status, body) = server
        .post(&room_path(room, "/message"), json!({"text": "go"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&server, room, "f.txt").await, None, "the command ran");
    assert_eq!(list(&server, room).await, Vec::<Value>::new());
}

#[tokio::test]
async fn an_automatic_checkpoint_that_does_not_fit_is_skipped_and_the_turn_runs_on() {
    let model = FakeModel::start(vec![Script::chunked(
        "Freeing space.<run>rm big.bin</run>",
        6,
    )])
    .await;
    let (server, _dir) = with_model(&model, &["--disk-mb", "8"]).await;
    let room = "cp-auto-full";
    put_file(&server, room, "big.bin", vec![1u8; 5 * 1024 * 1024]).await;
    let (status, body) = server
        .post(&room_path(room, "/message"), json!({"text": "make room"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["reply"]
            .as_str()
            .is_some_and(|r| r.contains("Output (rm big.bin)")),
        "{body}"
    );
    assert_eq!(
        read(&server, room, "big.bin").await,
        None,
        "the command ran"
    );
    assert_eq!(
        list(&server, room).await,
        Vec::<Value>::new(),
        "none was taken"
    );
}

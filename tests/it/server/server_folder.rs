//! A room of `duet serve` bound to a host folder (what `duet --workspace
//! DIR` writes in the data directory): a push lands in the folder itself,
//! owned by the folder's owner, a pull and a diff read it, and a cleanup
//! keeps it. duet serve only (the binding is a file of its data
//! directory).

use crate::common::apps::{exec, room_path, with_token};
use crate::common::{Server, answer, http};
use std::os::unix::fs::MetadataExt;

/// A tar of (name, bytes) files.
fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_600_000_000);
        tar.append_data(&mut header, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap()
}

#[tokio::test]
async fn a_push_into_a_room_on_a_host_folder_lands_in_it_as_its_owners() {
    let data = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let folder = host.path().join("app");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("kept.txt"), "ours\n").unwrap();
    // As root, the folder's owner and group (not the owner's number).
    let owner = crate::common::folder_of_someone_else(&folder);
    let room = "on-folder";
    duet::sandbox::folder::bind(data.path(), room, &folder).unwrap();
    let server = Server::start(data.path(), &[]).await;

    let url = server.url(&room_path(room, "/archive/?userId=ann"));
    let body = tar_of(&[("pushed.txt", b"pushed\n"), ("sub/deep.txt", b"deep\n")]);
    let req = http()
        .put(url)
        .header("content-type", "application/x-tar")
        .body(body);
    let (status, pushed) = answer(with_token(&server, req)).await;
    assert_eq!(status, 200, "{pushed}");
    for made in ["pushed.txt", "sub", "sub/deep.txt"] {
        let meta = std::fs::metadata(folder.join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), owner, "{made}");
    }
    assert_eq!(
        std::fs::read_to_string(folder.join("sub/deep.txt")).unwrap(),
        "deep\n"
    );
    let listed = exec(&server, room, "ls -R").await;
    assert!(
        listed["stdout"].as_str().unwrap().contains("kept.txt"),
        "{listed}"
    );
    // What changed since the push, in the folder.
    std::fs::write(folder.join("pushed.txt"), "changed\n").unwrap();
    let diff = with_token(&server, http().get(server.url(&room_path(room, "/diff"))))
        .send()
        .await
        .unwrap();
    assert_eq!(diff.status(), 200);
    let diff = diff.text().await.unwrap();
    assert!(diff.contains("+changed"), "{diff}");
    let beside: Vec<_> = std::fs::read_dir(host.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(beside, ["app"], "nothing is made beside the folder");

    let (status, cleaned) = server
        .post(&room_path(room, "/cleanup"), serde_json::json!({}))
        .await;
    assert_eq!(status, 200, "{cleaned}");
    for kept in ["kept.txt", "pushed.txt", "sub/deep.txt"] {
        assert!(folder.join(kept).exists(), "{kept} stays");
    }
}

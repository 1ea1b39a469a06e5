//! Tests of tree.rs.
use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn root(dir: &Path) -> OwnedFd {
    open_root(dir).unwrap()
}

#[test]
fn a_copy_keeps_files_folders_links_modes_and_times_and_shares_nothing() {
    let src = tempfile::tempdir().unwrap();
    let s = src.path();
    std::fs::create_dir_all(s.join("a/b")).unwrap();
    std::fs::write(s.join("a/b/f.txt"), "hello").unwrap();
    std::fs::write(s.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(s.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", s.join("link")).unwrap();
    nix::unistd::mkfifo(&s.join("fifo"), Mode::S_IRWXU).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    File::options()
        .write(true)
        .open(s.join("a/b/f.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let dst = tempfile::tempdir().unwrap();
    let d = dst.path();
    let copied = copy(&root(s), &root(d), Owners::room(None)).unwrap();
    assert_eq!(copied, 5 + 10 + "/etc/passwd".len() as u64);
    assert_eq!(
        std::fs::read_to_string(d.join("a/b/f.txt")).unwrap(),
        "hello"
    );
    let meta = std::fs::metadata(d.join("a/b/f.txt")).unwrap();
    assert_eq!(meta.mtime(), 1_000_000);
    let mode = std::fs::metadata(d.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        std::fs::read_link(d.join("link")).unwrap(),
        Path::new("/etc/passwd")
    );
    assert!(!d.join("fifo").exists(), "a FIFO is left out");
    // Shares nothing: a write to the original leaves the copy alone.
    std::fs::write(s.join("a/b/f.txt"), "changed").unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("a/b/f.txt")).unwrap(),
        "hello"
    );
    assert_eq!(usage(&root(d)).unwrap().bytes, copied);
}

#[test]
fn a_symlinked_folder_is_copied_as_a_link_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    let src = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), src.path().join("evil")).unwrap();
    let dst = tempfile::tempdir().unwrap();
    copy(&root(src.path()), &root(dst.path()), Owners::room(None)).unwrap();
    let meta = std::fs::symlink_metadata(dst.path().join("evil")).unwrap();
    assert!(meta.file_type().is_symlink());
    // Removing the link leaves its target alone.
    remove(&root(dst.path()), OsStr::new("evil")).unwrap();
    assert!(outside.path().join("secret").exists());
}

#[test]
fn removing_takes_whole_folders_even_unreadable_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("x/y")).unwrap();
    std::fs::write(dir.path().join("x/y/z"), "z").unwrap();
    std::fs::set_permissions(dir.path().join("x/y"), std::fs::Permissions::from_mode(0o0)).unwrap();
    remove(&root(dir.path()), OsStr::new("x")).unwrap();
    assert!(!dir.path().join("x").exists());
    std::fs::write(dir.path().join("a"), "a").unwrap();
    remove_children(&root(dir.path())).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let gone = remove(&root(dir.path()), OsStr::new("a")).unwrap_err();
    assert_eq!(gone.errno, Errno::ENOENT);
}

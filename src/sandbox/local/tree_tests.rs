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

/// Makes `depth` folders `z` one in another below `dir`.
fn chain(dir: &Path, depth: usize) {
    let mut at = root(dir);
    for _ in 0..depth {
        nix::sys::stat::mkdirat(Some(at.as_raw_fd()), "z", Mode::S_IRWXU).unwrap();
        at = open_dir(&at, OsStr::new("z")).unwrap();
    }
}

#[test]
fn a_tree_deeper_than_the_limit_is_refused_and_overflows_no_stack() {
    let dir = tempfile::tempdir().unwrap();
    // Deep enough to overflow a thread's stack one call per level.
    chain(dir.path(), 5_000);
    let said = usage(&root(dir.path())).unwrap_err().to_string();
    assert_eq!(said, "z/z/z/z/z/z/z/z/…: folders nest more than 256 deep");
    let removed = remove(&root(dir.path()), OsStr::new("z")).unwrap_err();
    assert!(removed.to_string().ends_with("nest more than 256 deep"));
    assert!(remove_children(&root(dir.path())).is_err());

    // At the limit, all of it goes.
    let fits = tempfile::tempdir().unwrap();
    chain(fits.path(), MAX_DEPTH);
    assert!(usage(&root(fits.path())).is_ok());
    remove(&root(fits.path()), OsStr::new("z")).unwrap();
    assert_eq!(std::fs::read_dir(fits.path()).unwrap().count(), 0);
}

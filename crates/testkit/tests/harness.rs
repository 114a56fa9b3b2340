//! The harness itself: each server starts, does what its own clients ask, and is gone when
//! dropped. Needs `make stores` and moto (tests/stores/README.md); ignored, with
//! the reason, without the `test-stores` feature.

use std::path::PathBuf;
use std::time::Instant;

use sluice_testkit::{MiniDfs, MiniDfsOptions, S3Options, S3Server};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that a FsShell run succeeded, showing what it printed when it did not.
fn check(what: &str, out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "hadoop fs {what} failed ({}):\n{}{}",
        out.status,
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn minidfs_mkdir_put_ls_and_permissions() {
    let started = Instant::now();
    let dfs = MiniDfs::start(MiniDfsOptions::default()).expect("MiniDFS starts");
    eprintln!(
        "MiniDFS {dfs:?} up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(dfs.uri().starts_with("hdfs://127.0.0.1:"), "{}", dfs.uri());
    assert!(dfs.webhdfs().starts_with("127.0.0.1:"), "{}", dfs.webhdfs());
    let base: PathBuf = dfs.base_dir().to_owned();
    assert!(base.join("minidfs.log").exists());

    // A 2.5 MiB file: three blocks of the default 1 MiB.
    let local = tempfile::tempdir().unwrap();
    let file = local.path().join("input.txt");
    let line = b"the quick brown fox jumps over the lazy dog\n";
    let data: Vec<u8> = line.iter().copied().cycle().take(5 << 19).collect();
    std::fs::write(&file, &data).unwrap();

    let timed = Instant::now();
    check("-mkdir", dfs.fs(&["-mkdir", "-p", "/user/test/in"]));
    eprintln!(
        "one FsShell command: {:.1} s",
        timed.elapsed().as_secs_f64()
    );
    check(
        "-put",
        dfs.fs(&["-put", file.to_str().unwrap(), "/user/test/in/input.txt"]),
    );
    let ls = stdout(&check("-ls", dfs.fs(&["-ls", "/user/test/in"])));
    let entry = ls
        .lines()
        .find(|l| l.ends_with("/user/test/in/input.txt"))
        .unwrap_or_else(|| panic!("no input.txt in the listing:\n{ls}"));
    assert!(entry.contains(&format!(" {} ", data.len())), "{entry}");

    // The block size and replication the cluster was started with.
    let stat = stdout(&check(
        "-stat",
        dfs.fs(&["-stat", "%o %r %b", "/user/test/in/input.txt"]),
    ));
    assert_eq!(stat.trim(), format!("{} 1 {}", 1 << 20, data.len()));

    // What was put comes back whole, also through hadoop_fs and a full URI.
    let cat =
        sluice_testkit::hadoop_fs(&["-cat", &format!("{}/user/test/in/input.txt", dfs.uri())]);
    assert_eq!(check("-cat", cat).stdout, data);

    // Permissions are checked: another user cannot write in the superuser's directory.
    check("-chmod", dfs.fs(&["-chmod", "755", "/user/test"]));
    let denied = dfs.fs_as("alice", &["-mkdir", "/user/test/alice"]);
    assert!(!denied.status.success(), "alice could write in /user/test");
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );

    drop(dfs);
    assert!(!base.exists(), "{} is left behind", base.display());
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn minidfs_with_three_datanodes_and_larger_blocks() {
    let started = Instant::now();
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 3,
        block_size: 2 << 20,
    })
    .expect("MiniDFS starts");
    eprintln!(
        "MiniDFS with 3 DataNodes up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let local = tempfile::tempdir().unwrap();
    let file = local.path().join("five-mib");
    std::fs::write(&file, vec![7u8; 5 << 20]).unwrap();
    check("-put", dfs.fs(&["-put", file.to_str().unwrap(), "/f"]));
    let stat = stdout(&check("-stat", dfs.fs(&["-stat", "%o %r", "/f"])));
    assert_eq!(stat.trim(), format!("{} 3", 2 << 20));
}

#[test]
fn minidfs_refuses_blocks_below_one_mib() {
    let err = MiniDfs::start(MiniDfsOptions {
        datanodes: 1,
        block_size: 4096,
    })
    .unwrap_err();
    assert!(err.contains("at least 1 MiB"), "{err}");
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_bucket_objects_and_multipart_uploads() {
    let started = Instant::now();
    let s3 = S3Server::start().expect("moto starts");
    eprintln!("moto {s3:?} up in {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        s3.endpoint().starts_with("http://127.0.0.1:"),
        "{}",
        s3.endpoint()
    );

    s3.create_bucket("sluice-test");
    assert!(s3.list_objects("sluice-test", "").is_empty());
    s3.put_object("sluice-test", "in/a.txt", b"hello\n");
    s3.put_object("sluice-test", "in/b.txt", b"");
    s3.put_object("sluice-test", "other", b"x");
    assert_eq!(
        s3.list_objects("sluice-test", "in/"),
        vec![("in/a.txt".to_owned(), 6), ("in/b.txt".to_owned(), 0)]
    );
    assert_eq!(s3.get_object("sluice-test", "in/a.txt"), b"hello\n");
    assert!(s3.list_multipart_uploads("sluice-test").is_empty());

    // Multipart uploads: S3's 5 MiB minimum part holds, an open upload is listed.
    let big: Vec<u8> = (0..(6u32 << 20)).map(|i| (i % 251) as u8).collect();
    s3.put_object_multipart("sluice-test", "big", &big, 5 << 20);
    assert_eq!(s3.get_object("sluice-test", "big"), big);
    let open = s3.start_multipart_upload("sluice-test", "in/unfinished");
    assert_eq!(
        s3.list_multipart_uploads("sluice-test"),
        vec![("in/unfinished".to_owned(), open)]
    );
    let small = std::panic::catch_unwind(|| {
        s3.put_object_multipart("sluice-test", "small", b"0123456789", 4);
    })
    .expect_err("parts of 4 bytes were accepted");
    assert!(
        panic_message(&small).contains("EntityTooSmall"),
        "{}",
        panic_message(&small)
    );
    assert_eq!(s3.list_multipart_uploads("sluice-test").len(), 1);
    assert!(s3.list_objects("sluice-test", "small").is_empty());
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_servers_are_separate_and_page_listings() {
    let a = S3Server::start_with(S3Options {
        min_part_size: Some(1),
        max_keys: Some(2),
    })
    .expect("moto starts");
    let b = S3Server::start().expect("moto starts");
    assert_ne!(a.endpoint(), b.endpoint());
    a.create_bucket("only-in-a");
    for i in 0..5 {
        a.put_object("only-in-a", &format!("k{i}"), &[b'x'; 3]);
    }
    // Five keys come back although each page holds two.
    assert_eq!(a.list_objects("only-in-a", "k").len(), 5);
    // Parts of 4 bytes are fine on this one.
    a.put_object_multipart("only-in-a", "small", b"0123456789", 4);
    assert_eq!(a.get_object("only-in-a", "small"), b"0123456789");
    b.create_bucket("only-in-b");
    assert!(b.list_objects("only-in-b", "").is_empty());
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn s3_calls_that_fail_panic_with_the_error() {
    let s3 = S3Server::start().expect("moto starts");
    let err = std::panic::catch_unwind(|| s3.list_objects("no-such-bucket", "")).unwrap_err();
    assert!(
        panic_message(&err).contains("NoSuchBucket"),
        "{}",
        panic_message(&err)
    );
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

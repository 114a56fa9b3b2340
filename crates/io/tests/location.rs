//! `Location`: every form a user writes, its canonical text, and clear refusals.

use std::ffi::OsStr;
use std::path::Path;

use sluice_io::{storage_for, IoError, LocalStorage, Location, Scheme, Storage};

fn parse(text: &str) -> Location {
    Location::parse(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

/// The error's variant, its message, and for a refused scheme the scheme.
fn refused(text: &str) -> (String, String) {
    match Location::parse(text) {
        Ok(location) => panic!("{text:?} parsed as {location:?}"),
        Err(IoError::BadLocation { location, reason }) => {
            assert_eq!(location, text);
            let message = IoError::BadLocation { location, reason }.to_string();
            ("bad".to_string(), message)
        }
        Err(e @ IoError::UnsupportedScheme { .. }) => {
            let IoError::UnsupportedScheme { scheme, .. } = &e else {
                unreachable!()
            };
            (format!("scheme {scheme}"), e.to_string())
        }
        Err(other) => panic!("{text:?}: unexpected error {other:?}"),
    }
}

#[test]
fn plain_paths_are_local_and_kept_as_written() {
    for text in [
        "data/in",
        "/abs/out",
        "./file:x",
        "logs:2024/x",
        "a/b:c",
        "in/*.gz",
        ".",
    ] {
        let location = parse(text);
        assert_eq!(location.scheme(), Scheme::File);
        assert_eq!(location.scheme_name(), "file");
        assert_eq!(location.as_local_path(), Some(Path::new(text)));
        assert_eq!(location.authority(), None);
        assert_eq!(location.to_string(), text);
        assert_eq!(location, Location::from_path(text));
    }
    assert!(parse("in/*.gz").is_glob());
    assert!(parse("in/[ab]").is_glob());
    assert!(!parse("in/a.gz").is_glob());
}

#[test]
fn file_uris_name_absolute_local_paths_in_canonical_form() {
    for text in [
        "file:///abs/dir",
        "file:/abs/dir",
        "file://localhost/abs/dir",
        "FILE:///abs/dir",
        "File://LOCALHOST/abs/dir",
    ] {
        let location = parse(text);
        assert_eq!(location.scheme(), Scheme::File, "{text}");
        assert_eq!(
            location.as_local_path(),
            Some(Path::new("/abs/dir")),
            "{text}"
        );
        assert_eq!(location.to_string(), "file:///abs/dir", "{text}");
    }
    assert_eq!(parse("file:///").to_string(), "file:///");
    assert_eq!(parse("file:///").as_local_path(), Some(Path::new("/")));
    // Percent escapes are names, as in Hadoop; globs stay patterns.
    assert_eq!(
        parse("file:///a%20b").as_local_path(),
        Some(Path::new("/a%20b"))
    );
    assert!(parse("file:///logs/*.gz").is_glob());
    // A URI and the plain path name the same file but keep their spelling.
    assert_ne!(parse("file:///abs/dir"), parse("/abs/dir"));
    assert_eq!(
        parse("file:///abs/dir").as_local_path(),
        parse("/abs/dir").as_local_path()
    );
}

#[test]
fn hdfs_locations_parse() {
    let location = parse("hdfs://nn:8020/x");
    assert_eq!(location.scheme(), Scheme::Hdfs);
    assert_eq!(location.scheme_name(), "hdfs");
    assert_eq!(location.authority(), Some("nn:8020"));
    assert_eq!(location.path_str(), Some("/x"));
    assert_eq!(location.as_local_path(), None);
    assert_eq!(location.to_string(), "hdfs://nn:8020/x");

    assert_eq!(
        parse("HDFS://NameNode:8020").to_string(),
        "hdfs://namenode:8020/"
    );
    // A trailing slash goes, as in Hadoop's `Path`.
    assert_eq!(parse("hdfs://nn/a/b/").to_string(), "hdfs://nn/a/b");
    let default_fs = parse("hdfs:///user/me");
    assert_eq!(default_fs.authority(), None);
    assert_eq!(default_fs.path_str(), Some("/user/me"));
    assert_eq!(default_fs.to_string(), "hdfs:///user/me");
}

#[test]
fn s3_locations_parse() {
    let location = parse("s3://b/k");
    assert_eq!(location.scheme(), Scheme::S3);
    assert_eq!(location.scheme_name(), "s3");
    assert_eq!(location.authority(), Some("b"));
    assert_eq!(location.path_str(), Some("k"));
    assert_eq!(location.to_string(), "s3://b/k");

    let s3a = parse("S3A://logs-2024/dir/part-00000.gz");
    assert_eq!(s3a.scheme(), Scheme::S3);
    assert_eq!(s3a.scheme_name(), "s3a");
    assert_eq!(s3a.path_str(), Some("dir/part-00000.gz"));
    assert_eq!(s3a.to_string(), "s3a://logs-2024/dir/part-00000.gz");
    assert_eq!(parse("s3n://b/k").scheme_name(), "s3n");

    let bucket = parse("s3://b");
    assert_eq!(bucket.path_str(), Some(""));
    assert_eq!(bucket.to_string(), "s3://b/");
    assert_eq!(bucket.file_name(), None);
}

#[test]
fn displayed_locations_parse_back_equal() {
    for text in [
        "data/in",
        "/abs",
        "file:/abs/x",
        "file://localhost/abs/x",
        "file:///",
        "HDFS://NN:8020",
        "hdfs:///x",
        "hdfs://nn/a//b",
        "s3://b",
        "s3a://b/dir/",
        "s3://b/k?v=1",
    ] {
        let location = parse(text);
        let shown = location.to_string();
        assert_eq!(parse(&shown), location, "{text} shown as {shown}");
        assert_eq!(parse(&shown).to_string(), shown);
        let via_from_str: Location = shown.parse().expect("FromStr");
        assert_eq!(via_from_str, location);
    }
}

#[test]
fn bad_locations_are_refused_with_the_reason() {
    let cases: &[(&str, &str, &str)] = &[
        ("", "bad", "cannot be empty"),
        ("file:relative/p", "bad", "absolute path"),
        ("file://localhost", "bad", "absolute path"),
        ("file://otherhost/p", "bad", "host 'otherhost'"),
        ("hdfs:/x", "bad", "needs '//'"),
        ("s3:bucket/k", "bad", "needs '//'"),
        ("hdfs://nn:99999/x", "bad", "port '99999'"),
        ("hdfs://nn:http/x", "bad", "port 'http'"),
        ("hdfs://:8020/x", "bad", "without a host"),
        ("hdfs://me@nn/x", "bad", "credentials"),
        ("hdfs://n n/x", "bad", "not a host name"),
        ("s3:///key", "bad", "needs a bucket"),
        ("s3://KEY:SECRET@bucket/k", "bad", "credentials"),
        ("s3://bu cket/k", "bad", "not a bucket name"),
        ("gs://bucket/k", "scheme gs", "does not know gs://"),
        ("FTP://host/x", "scheme ftp", "does not know ftp://"),
    ];
    for &(text, kind, words) in cases {
        let (got_kind, message) = refused(text);
        assert_eq!(got_kind, kind, "{text:?}: {message}");
        assert!(message.contains(words), "{text:?}: {message}");
        assert!(
            message.starts_with(&format!("{text}: ")),
            "{text:?}: {message}"
        );
    }
}

#[test]
fn the_local_storage_refuses_other_stores_naming_the_scheme() {
    let local = LocalStorage::new();
    for (text, scheme) in [("hdfs://nn:8020/x", "hdfs"), ("s3a://b/k", "s3a")] {
        let location = parse(text);
        let errors = [
            local.status(&location).map(drop).unwrap_err(),
            local.list(&location).map(drop).unwrap_err(),
            local.open_range(&location, 0, 1).map(drop).unwrap_err(),
            local.create(&location).map(drop).unwrap_err(),
            local.delete(&location).map(drop).unwrap_err(),
            storage_for(&location).map(drop).unwrap_err(),
            sluice_io::LocalRenameCommitter::new(&location)
                .map(drop)
                .unwrap_err(),
        ];
        for error in errors {
            let message = error.to_string();
            match error {
                IoError::UnsupportedScheme {
                    scheme: got,
                    location: named,
                    ..
                } => {
                    assert_eq!(got, scheme);
                    assert_eq!(named, text);
                }
                other => panic!("{text}: expected UnsupportedScheme, got {other:?}"),
            }
            assert!(message.contains(&format!("{scheme}://")), "{message}");
        }
    }
    assert!(storage_for(&parse("file:///tmp")).is_ok());
    assert!(storage_for(&parse("relative")).is_ok());
}

#[test]
fn join_parent_and_names() {
    let local = parse("file:///data");
    assert_eq!(local.join("a.txt").to_string(), "file:///data/a.txt");
    assert_eq!(
        local.join("a.txt").parent().map(|p| p.to_string()),
        Some("file:///data".to_string())
    );
    assert_eq!(Location::from_path("").join("a").to_string(), "a");
    assert_eq!(parse("rel/dir").join("x").to_string(), "rel/dir/x");

    let hdfs = parse("hdfs://nn:8020/user");
    assert_eq!(
        hdfs.join("part-0").to_string(),
        "hdfs://nn:8020/user/part-0"
    );
    assert_eq!(
        hdfs.parent().map(|p| p.to_string()),
        Some("hdfs://nn:8020/".to_string())
    );
    assert_eq!(parse("hdfs://nn/").parent(), None);
    assert_eq!(parse("hdfs://nn/").join("x").to_string(), "hdfs://nn/x");
    assert_eq!(hdfs.file_name(), Some(OsStr::new("user")));

    let s3 = parse("s3://b/dir/k.gz");
    assert_eq!(s3.file_name(), Some(OsStr::new("k.gz")));
    assert_eq!(
        s3.parent().map(|p| p.to_string()),
        Some("s3://b/dir".to_string())
    );
    assert_eq!(
        parse("s3://b/k").parent().map(|p| p.to_string()),
        Some("s3://b/".to_string())
    );
    assert_eq!(parse("s3://b").join("k").to_string(), "s3://b/k");
    assert_eq!(parse("s3://b/").parent(), None);
}

#[test]
fn error_paths_name_the_location() {
    assert_eq!(parse("file:///a/b").error_path(), Path::new("/a/b"));
    assert_eq!(parse("s3://b/k").error_path(), Path::new("s3://b/k"));
    assert_eq!(parse("hdfs://NN/x").error_path(), Path::new("hdfs://nn/x"));
}

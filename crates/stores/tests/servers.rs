//! The storages against real servers (an in-JVM MiniDFSCluster, moto's S3), as the engine
//! calls them: listings, ranged reads, block locations, writers and both committers. Written
//! by Hadoop's client or boto3 and read back by sluice, and the other way round.
//!
//! With `SLUICE_SKIP_STORES=1` every test here says it is skipped and returns.

use std::io::{Read, Write};

use std::sync::Arc;

use sluice_io::{
    discover, plan_block_splits, IoError, JobCommitter, Location, PartAttempt, Storage,
    StoredInput, Stores,
};
use sluice_stores::{
    HdfsRenameCommitter, HdfsStorage, RemoteConnector, S3MagicCommitter, S3Storage, StoreConfig,
};
use sluice_testkit::{stores_required, MiniDfs, MiniDfsOptions, S3Options, S3Server};

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

fn read_all(storage: &dyn Storage, location: &Location, start: u64, len: u64) -> Vec<u8> {
    let mut out = Vec::new();
    storage
        .open_range(location, start, len)
        .expect("opens")
        .read_to_end(&mut out)
        .expect("reads");
    out
}

#[test]
fn hdfs_blocks_splits_and_ranges() {
    if !stores_required() {
        return;
    }
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 2,
        block_size: 1 << 20,
    })
    .expect("MiniDFS starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let local = dir.path().join("f.bin");
    let bytes = data(3 * (1 << 20) + 12_345);
    std::fs::write(&local, &bytes).expect("written");
    let put = dfs.fs(&["-put", local.to_str().expect("UTF-8"), "/f.bin"]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );

    let config = StoreConfig::from_parts(
        // sluice's own files get one block each, clear of the new-block race hdfs-native
        // does not retry (NotReplicatedYetException; see ARCHITECTURE.md).
        [
            ("dfs.namenode.http-address", dfs.webhdfs()),
            ("dfs.blocksize", "128m"),
        ],
        [("HADOOP_USER_NAME", "tester")],
    );
    let file = Location::parse(&format!("{}/f.bin", dfs.uri())).expect("a location");
    let storage = HdfsStorage::connect(&file, &config).expect("connects");
    let status = storage.status(&file).expect("status").expect("exists");
    assert_eq!(status.len, bytes.len() as u64);
    assert_eq!(status.block_size, Some(1 << 20));

    // Ranged reads: the bytes asked for, whatever the block boundaries.
    for (start, len) in [
        (0, u64::MAX),
        (5, 100),
        ((1 << 20) - 7, 20),
        (3 << 20, 1 << 20),
    ] {
        let s = usize::try_from(start).expect("fits");
        let e = s
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(bytes.len());
        assert_eq!(
            read_all(&storage, &file, start, len),
            bytes[s..e],
            "{start}+{len}"
        );
    }

    // Blocks and their hosts, from WebHDFS; splits along them.
    let blocks = storage.block_locations(&file).expect("block locations");
    assert_eq!(blocks.len(), 4);
    assert_eq!(blocks[1].offset, 1 << 20);
    assert!(blocks.iter().all(|b| !b.hosts.is_empty()), "{blocks:?}");
    let mut found = discover(&storage, std::slice::from_ref(&file)).expect("discovers");
    found[0].status = found[0].status.clone().with_blocks(blocks);
    let files: Vec<StoredInput> = found;
    let splits = plan_block_splits(&files, 32 << 20, 1);
    assert_eq!(splits.len(), 3, "{splits:?}");
    assert!(splits.iter().all(|s| !s.hosts(&files).is_empty()));

    // A file written by sluice is read back by Hadoop's client.
    let written = Location::parse(&format!("{}/by-sluice/x.bin", dfs.uri())).expect("a location");
    let mut writer = storage.create(&written).expect("creates");
    writer.write_all(&bytes).expect("writes");
    assert_eq!(writer.finish().expect("finishes"), bytes.len() as u64);
    let back = dir.path().join("back.bin");
    let get = dfs.fs(&["-get", "/by-sluice/x.bin", back.to_str().expect("UTF-8")]);
    assert!(get.status.success());
    assert_eq!(std::fs::read(&back).expect("read"), bytes);
    // The local storage refuses to create over an existing file; so does this one.
    assert!(storage.create(&written).is_err());
    assert!(storage.delete(&written).expect("deletes"));
    assert!(!storage.delete(&written).expect("nothing to delete"));
}

/// The names in `dir`, sorted.
fn names(storage: &dyn Storage, dir: &Location) -> Vec<String> {
    let mut names: Vec<String> = storage
        .list(dir)
        .expect("lists")
        .iter()
        .map(|s| {
            s.location
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn hdfs_attached_committers_write_the_tasks_the_owner_commits() {
    if !stores_required() {
        return;
    }
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 1,
        block_size: 1 << 20,
    })
    .expect("MiniDFS starts");
    let config = StoreConfig::from_parts(
        [("dfs.blocksize", "128m")],
        [("HADOOP_USER_NAME", "tester")],
    );
    let root = Location::parse(&format!("{}/jobs", dfs.uri())).expect("a location");
    let output = root.join("out");
    let storage = HdfsStorage::connect(&output, &config).expect("connects");
    // The owner and the workers do not share a connection, as processes would not.
    let owner_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config.clone(), "job_1")));
    let worker_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config, "job_1")));

    let mut owner = owner_stores.committer(&output).expect("a committer");
    assert_eq!(owner.staging(), None, "nothing is staged before set-up");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("staged once set up");
    assert_eq!(staging.parent().as_ref(), Some(&root));

    let mut attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    assert_eq!(attached.output(), &output);
    assert_eq!(attached.staging(), Some(staging.clone()));
    let bytes = data(100_000);
    let seventh = PartAttempt::new("part-00000", 7);
    let mut writer = attached.create_part(seventh, 1 << 20).expect("a part");
    writer.write_all(&bytes).expect("writes");
    writer.finish().expect("finishes");
    assert!(storage
        .status(&staging.join("_temporary").join("part-00000.7"))
        .expect("status")
        .is_some());
    attached.commit_task(seventh).expect("task commits");
    let failed = PartAttempt::new("part-00001", 2);
    let mut writer = attached.create_part(failed, 1 << 20).expect("a part");
    writer.write_all(b"failed").expect("writes");
    writer.finish().expect("finishes");
    attached.abort_task(failed).expect("task aborts");
    assert!(names(&storage, &staging.join("_temporary")).is_empty());

    // The job is not the attached committer's to set up, commit or abort.
    for result in [attached.setup_job(), attached.commit_job()] {
        match result {
            Err(e @ IoError::Write { .. }) => assert!(
                std::error::Error::source(&e)
                    .is_some_and(|s| s.to_string().contains("process that set it up")),
                "{e:?}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    attached.abort_job().expect("nothing to do");
    drop(attached);
    assert_eq!(names(&storage, &staging), ["_temporary", "part-00000"]);
    assert!(storage.status(&output).expect("status").is_none());

    owner.commit_job().expect("job commits");
    assert_eq!(names(&storage, &output), ["_SUCCESS", "part-00000"]);
    assert_eq!(
        read_all(&storage, &output.join("part-00000"), 0, u64::MAX),
        bytes
    );
    assert_eq!(names(&storage, &root), ["out"]);

    // An owner's abort discards what attached committers wrote, and a worker late for the
    // aborted job writes nothing: the staging directory is not recreated.
    let output = root.join("aborted");
    let mut owner = HdfsRenameCommitter::new(storage.clone(), &output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("set up");
    let attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let part = PartAttempt::new("part-00000", 0);
    let mut writer = attached.create_part(part, 1 << 20).expect("a part");
    writer.write_all(b"zero").expect("writes");
    writer.finish().expect("finishes");
    attached.commit_task(part).expect("task commits");
    owner.abort_job().expect("job aborts");
    assert!(attached
        .create_part(PartAttempt::new("part-00000", 1), 1 << 20)
        .is_err());
    drop(attached);
    assert_eq!(names(&storage, &root), ["out"]);

    // Only the output's own staging directory is accepted.
    let pid = std::process::id();
    for elsewhere in [
        output.clone(),
        root.join("other")
            .join(format!(".aborted.sluice-tmp-{pid}-1f")),
        root.join(format!(".out.sluice-tmp-{pid}-1f")),
        root.join(format!(".aborted.sluice-tmp-{pid}")),
        Location::from_path(format!("/jobs/.aborted.sluice-tmp-{pid}-1f")),
    ] {
        assert!(
            matches!(
                worker_stores.attach_committer(&output, &elsewhere),
                Err(IoError::Write { .. })
            ),
            "{elsewhere}"
        );
    }
    assert_eq!(names(&storage, &root), ["out"]);
}

#[test]
fn s3_attached_committers_hand_their_tasks_to_the_owner() {
    if !stores_required() {
        return;
    }
    let server = S3Server::start_with(S3Options::default()).expect("S3 server starts");
    server.create_bucket("bkt");
    let config = StoreConfig::from_parts(
        [],
        [
            ("AWS_ACCESS_KEY_ID", server.access_key()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
            ("AWS_REGION", server.region()),
            ("AWS_ENDPOINT_URL", server.endpoint()),
        ],
    );
    // The owner and the workers do not share a connection, as processes would not.
    let owner_stores =
        Stores::with_remote(Arc::new(RemoteConnector::new(config.clone(), "job_1_0001")));
    let worker_stores = Stores::with_remote(Arc::new(RemoteConnector::new(config, "job_1_0001")));
    let output = Location::parse("s3://bkt/jobs/out").expect("a location");
    let mut owner = owner_stores.committer(&output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("staged once set up");
    assert_eq!(
        staging.to_string(),
        "s3://bkt/jobs/.out.sluice-pending-job_1_0001"
    );

    let first = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let second = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let big = data((6 << 20) + 5);
    fn write<'a>(
        committer: &dyn JobCommitter,
        name: &'a str,
        attempt: u32,
        bytes: &[u8],
    ) -> PartAttempt<'a> {
        let part = PartAttempt::new(name, attempt);
        let mut writer = committer.create_part(part, 1 << 20).expect("a part");
        writer.write_all(bytes).expect("writes");
        writer.finish().expect("finishes");
        part
    }
    // part-00000 committed twice (its first worker was thought lost): attempt 1 is kept.
    let p = write(&*first, "part-00000", 3, b"attempt three");
    first.commit_task(p).expect("task commits");
    let p = write(&*second, "part-00000", 1, &big);
    second.commit_task(p).expect("task commits");
    let p = write(&*second, "part-00001", 0, b"one");
    second.commit_task(p).expect("task commits");
    // Written, not committed: aborted by the attached committer's drop.
    write(&*first, "part-00002", 0, b"never committed");
    // The owner's own task.
    let p = write(&*owner, "part-00003", 0, b"three");
    owner.commit_task(p).expect("task commits");

    let mut first = first;
    for result in [first.setup_job(), first.commit_job()] {
        match result {
            Err(e @ IoError::Write { .. }) => assert!(
                std::error::Error::source(&e)
                    .is_some_and(|s| s.to_string().contains("process that set it up")),
                "{e:?}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    drop(first);
    drop(second);
    assert!(
        server.list_objects("bkt", "jobs/out").is_empty(),
        "visible before commit"
    );
    let manifests: Vec<String> = server
        .list_objects("bkt", "jobs/.out.sluice-pending-job_1_0001/")
        .into_iter()
        .map(|(key, _)| key.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        manifests,
        [
            "part-00000.1.pending",
            "part-00000.3.pending",
            "part-00001.0.pending"
        ]
    );

    owner.commit_job().expect("job commits");
    let files: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert_eq!(
        files,
        [
            "jobs/out/_SUCCESS",
            "jobs/out/part-00000",
            "jobs/out/part-00001",
            "jobs/out/part-00003"
        ]
    );
    assert_eq!(server.get_object("bkt", "jobs/out/part-00000"), big);
    assert_eq!(server.get_object("bkt", "jobs/out/part-00001"), b"one");
    assert!(
        server.list_multipart_uploads("bkt").is_empty(),
        "uploads left open: {:?}",
        server.list_multipart_uploads("bkt")
    );

    // An owner's abort aborts what attached committers committed, and removes the manifests.
    let output = Location::parse("s3://bkt/jobs/aborted").expect("a location");
    let mut owner = owner_stores.committer(&output).expect("a committer");
    owner.setup_job().expect("set up");
    let staging = owner.staging().expect("set up");
    let attached = worker_stores
        .attach_committer(&output, &staging)
        .expect("attaches");
    let p = write(&*attached, "part-00000", 0, b"zero");
    attached.commit_task(p).expect("task commits");
    drop(attached);
    owner.abort_job().expect("job aborts");
    let left: Vec<String> = server
        .list_objects("bkt", "jobs/")
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains("aborted"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(server.list_multipart_uploads("bkt").is_empty());
}

#[test]
fn s3_listings_page_and_hide_and_uploads_stay_invisible_until_commit() {
    if !stores_required() {
        return;
    }
    // Two keys per listing page: the client must follow the pages.
    let server = S3Server::start_with(S3Options {
        min_part_size: None,
        max_keys: Some(2),
    })
    .expect("S3 server starts");
    server.create_bucket("bkt");
    for name in [
        "in/a",
        "in/b",
        "in/sub/c",
        "in/_SUCCESS",
        "in/.a.crc",
        "in/_logs/x",
        "in/d",
    ] {
        server.put_object("bkt", name, name.as_bytes());
    }
    let config = StoreConfig::from_parts(
        [],
        [
            ("AWS_ACCESS_KEY_ID", server.access_key()),
            ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
            ("AWS_REGION", server.region()),
            ("AWS_ENDPOINT_URL", server.endpoint()),
        ],
    );
    let dir = Location::parse("s3://bkt/in").expect("a location");
    let storage = S3Storage::connect(&dir, &config).expect("connects");
    let mut found: Vec<String> = discover(&storage, std::slice::from_ref(&dir))
        .expect("discovers")
        .iter()
        .map(|f| f.location().to_string())
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "s3://bkt/in/a",
            "s3://bkt/in/b",
            "s3://bkt/in/d",
            "s3://bkt/in/sub/c"
        ]
    );
    let globbed = storage
        .glob_visible(&Location::parse("s3://bkt/in/?").expect("a pattern"))
        .expect("globs");
    let names: Vec<String> = globbed.iter().map(|s| s.location.to_string()).collect();
    assert_eq!(names, ["s3://bkt/in/a", "s3://bkt/in/b", "s3://bkt/in/d"]);
    let dirs = storage
        .glob_visible(&Location::parse("s3://bkt/in/s*").expect("a pattern"))
        .expect("globs");
    assert!(dirs.len() == 1 && dirs[0].is_dir, "{dirs:?}");

    // A committed job's files appear only at job commit; an aborted one's never.
    let big = data((9 << 20) + 3);
    for commit in [true, false] {
        let out = Location::parse(if commit {
            "s3://bkt/out-ok"
        } else {
            "s3://bkt/out-no"
        })
        .expect("a location");
        let mut committer = S3MagicCommitter::new(storage.clone(), &out, "job_1_0001");
        committer.setup_job().expect("set up");
        for (i, name) in ["part-00000", "part-00001"].into_iter().enumerate() {
            let part = PartAttempt::new(name, 0);
            let mut writer = committer.create_part(part, 1 << 20).expect("a part");
            writer
                .write_all(if i == 0 { &big } else { b"small" })
                .expect("writes");
            writer.finish().expect("finishes");
            committer.commit_task(part).expect("task commits");
        }
        let prefix = if commit { "out-ok" } else { "out-no" };
        let visible = server.list_objects("bkt", prefix);
        assert!(visible.is_empty(), "visible before commit: {visible:?}");
        assert_eq!(server.list_multipart_uploads("bkt").len(), 2);
        if commit {
            committer.commit_job().expect("job commits");
            assert_eq!(server.get_object("bkt", "out-ok/part-00000"), big);
            assert_eq!(server.get_object("bkt", "out-ok/part-00001"), b"small");
            let manifest: serde_json::Value =
                serde_json::from_slice(&server.get_object("bkt", "out-ok/_SUCCESS")).expect("JSON");
            assert_eq!(
                manifest["filenames"],
                serde_json::json!(["/out-ok/part-00000", "/out-ok/part-00001"])
            );
        } else {
            committer.abort_job().expect("job aborts");
            assert!(server.list_objects("bkt", "out-no").is_empty());
        }
        assert!(server.list_multipart_uploads("bkt").is_empty());
    }
}

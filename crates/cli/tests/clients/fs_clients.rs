//! What workflow tools run through `$HADOOP_CMD` besides jobs, pointed at sluice, and parsed
//! as those tools parse it: mrjob's `hadoop version` (the first number of the first line is
//! the Hadoop version it talks to), Luigi's command-line HDFS client (`fs -stat` for whether a
//! path exists, `fs -mv` to rename, `fs -count` split on white space, `fs -cp`, `fs -ls -R`
//! lines of eight fields, `fs -chmod -R` and `fs -chown -R`), `hadoop --config DIR` and
//! `hdfs dfs`.

use super::harness::{finish, Scratch};

/// mrjob's pattern for the version on the first line of `hadoop version`.
fn mrjob_version(stdout: &str) -> Option<String> {
    let first = stdout.lines().next()?;
    let start = first.find(|c: char| c.is_ascii_digit())?;
    let version: String = first[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some(version)
}

#[test]
fn mrjob_reads_a_hadoop_version_it_knows() {
    let scratch = Scratch::new();
    let out = scratch.run(&["version"]);
    out.assert_success();
    let version = mrjob_version(&out.stdout).expect("a version on the first line");
    // mrjob takes anything from 2 on as YARN (`-D` options, `fs -rm -R`).
    let major: u32 = version.split('.').next().unwrap().parse().unwrap();
    assert!(major >= 2, "{version}");
    assert!(out.stdout.starts_with("Hadoop "), "{}", out.stdout);
    assert!(out.stdout.contains("sluice"), "{}", out.stdout);
}

#[test]
fn luigis_command_line_client_works_on_sluice_fs() {
    let scratch = Scratch::new();
    scratch.write("data/part-00000", "alpha\n");
    scratch.write("data/part-00001", "beta gamma\n");
    scratch.write("data/sub/deep.txt", "deep\n");
    let data = format!("file://{}", scratch.arg("data"));

    // exists(): exit 0, or "No such file" on stderr for a path that is not there.
    scratch.run(&["fs", "-stat", &data]).assert_success();
    let missing = scratch.run(&["fs", "-stat", &format!("{data}-missing")]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stderr.contains("No such file"), "{missing:?}");

    // count(): four fields split on white space.
    let count = scratch.run(&["fs", "-count", &data]);
    count.assert_success();
    let fields: Vec<&str> = count.stdout.split_whitespace().collect();
    assert_eq!(fields, ["2", "3", "22", data.as_str()], "{count:?}");

    // copy() and rename(): the copy's contents, then the rename's.
    let copied = format!("{data}-copy");
    scratch.run(&["fs", "-cp", &data, &copied]).assert_success();
    let renamed = format!("{data}-renamed");
    scratch
        .run(&["fs", "-mv", &copied, &renamed])
        .assert_success();
    assert!(!scratch.path("data-copy").exists());
    assert_eq!(
        std::fs::read_to_string(scratch.path("data-renamed/sub/deep.txt")).unwrap(),
        "deep\n"
    );

    // listdir(recursive): lines of eight fields, the path last; a directory's line first.
    let listing = scratch.run(&["fs", "-ls", "-R", &renamed]);
    listing.assert_success();
    let mut paths: Vec<String> = listing
        .stdout
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 8, "{line}");
            fields[7].to_string()
        })
        .collect();
    paths.sort();
    let expected: Vec<String> = ["part-00000", "part-00001", "sub", "sub/deep.txt"]
        .iter()
        .map(|p| format!("{renamed}/{p}"))
        .collect();
    assert_eq!(paths, expected);

    // chmod(recursive) and chown(owner, group, recursive): `fs -chmod -R MODE PATH` and
    // `fs -chown -R OWNER:GROUP PATH` (to the user's own, which needs no privilege).
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    scratch
        .run(&["fs", "-chmod", "-R", "750", &renamed])
        .assert_success();
    for entry in [
        "data-renamed",
        "data-renamed/sub",
        "data-renamed/sub/deep.txt",
    ] {
        let mode = std::fs::metadata(scratch.path(entry))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o750, "{entry}");
    }
    let meta = std::fs::metadata(scratch.path("data-renamed")).unwrap();
    let user = nix::unistd::User::from_uid(meta.uid().into())
        .unwrap()
        .unwrap();
    let group = nix::unistd::Group::from_gid(meta.gid().into())
        .unwrap()
        .unwrap();
    let owner = format!("{}:{}", user.name, group.name);
    scratch
        .run(&["fs", "-chown", "-R", &owner, &renamed])
        .assert_success();
}

#[test]
fn a_configuration_directory_and_the_dfs_spelling_are_taken() {
    let scratch = Scratch::new();
    // A site whose default file system is a name node that does not exist: paths without a
    // scheme go there, so a listing of `/` names it (after a second's wait).
    scratch.write(
        "conf/core-site.xml",
        "<configuration><property><name>fs.defaultFS</name>\
         <value>hdfs://nn.invalid:8020</value></property></configuration>",
    );
    let conf = scratch.arg("conf");
    let listing = scratch.run(&[
        "--config",
        &conf,
        "dfs",
        "-D",
        "sluice.store.timeout=1",
        "-ls",
        "/",
    ]);
    assert_eq!(listing.code, Some(1), "{listing:?}");
    assert!(listing.stderr.contains("nn.invalid"), "{listing:?}");
    // Without it, the same listing is of the local root.
    let mut local = scratch.command(&["dfs", "-ls", "-d", "/"]);
    local.env_remove("HADOOP_CONF_DIR");
    finish(local).assert_success();
    let missing = scratch.run(&["--config", &scratch.arg("no-such-dir"), "fs", "-ls", "/"]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stderr.contains("no-such-dir"), "{missing:?}");
}

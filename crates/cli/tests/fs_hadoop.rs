//! `sluice fs` against Hadoop's own `hadoop fs` shell (`FsShell` 3.4.2, run by
//! `tests/hadoop/FsBatch.java` on the jars `make hadoop` puts in `target/hadoop/lib`): the
//! same commands, one after another, each system in a directory of its own holding the same
//! files. Every command must end with the same exit status, print the same standard output
//! and the same messages, and leave the same files (Hadoop's hidden `.crc` checksum files
//! aside). Some of those files Hadoop wrote first, with their checksum files: sluice must hide
//! those as Hadoop does and keep them in step, so that Hadoop can still read every file
//! afterwards.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_io::seqfile::{SeqFileWriter, SeqWriteOptions};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// What Hadoop writes before either system starts, with its checksum files: a job's output
/// (`made`), a file to merge over (`target.txt`), and a checksum file whose file is then
/// deleted behind Hadoop's back (`made/orphan`).
const SEED: &[&[&str]] = &[
    &["-mkdir", "made"],
    &["-put", "a.txt", "made/part-00000"],
    &["-put", "b.txt", "made/part-00001"],
    &["-put", "tree/sub/wide.dat", "made/part-00002"],
    &["-touchz", "made/_SUCCESS"],
    &["-put", "a.txt", "made/orphan"],
    &["-put", "tree/one.txt", "target.txt"],
    &["-put", "a.txt", "tampered.txt"],
];

/// The commands, in order: what scripts run around their jobs, and the ways each fails.
const COMMANDS: &[&[&str]] = &[
    &["-ls", "made"],
    &["-ls", "-C", "made/*"],
    &["-ls", "-C", "made/.*"],
    &["-du", "made"],
    &["-du", "-s", "made"],
    &["-cat", "made/*"],
    &["-getmerge", "made", "target.txt"],
    &["-put", "-f", "b.txt", "made/part-00000"],
    &["-touchz", "made/orphan"],
    &["-rm", "made/part-0000[1]"],
    &["-put", "made", "copied"],
    &["-get", "made", "got-made"],
    &["-ls", "./tree"],
    &["-du", "./tree"],
    &["-count", "./tree/"],
    &["-ls", "tree//sub"],
    &["-ls", "-C", "tree/../tree"],
    &["-ls", "-C", "./*.txt"],
    &["-cat", "./missing"],
    &["-cp", "a.txt", "./c2.txt"],
    &["-rm", "tree/../c2.txt"],
    &["-mv", "b.txt", "."],
    &["-cat", "globs/a\\[1\\].txt"],
    &["-cat", "globs/a[1].txt"],
    &["-cat", "globs/[^x]ne"],
    &["-cat", "globs/o\\ne"],
    &["-ls", "-C", "globs/[!x]ne"],
    &["-cat", "tampered.txt"],
    &["-tail", "tampered.txt"],
    &["-text", "tampered.txt"],
    &["-cp", "tampered.txt", "tampered-copy.txt"],
    &["-get", "tampered.txt", "tampered-got.txt"],
    &["-ls", "loop"],
    &["-ls", "-R", "loop"],
    &["-du", "loop"],
    &["-count", "loop"],
    &["-cat", "loop/*"],
    &["-cat", "loop/l1"],
    &["-cp", "loop", "loop-copy"],
    &["-ls", "-t", "ties"],
    &["-ls", "-t", "-r", "ties"],
    &["-ls", "-S", "ties"],
    &["-ls", "-S", "-r", "ties"],
    &["-ls", ""],
    &["-cat", "a.txt", ""],
    &["-get", "made/part-00001"],
    &["-text", "empty.gz"],
    &[
        "-stat",
        "%n %b %F %a %A %u %g %r %o",
        "a.txt",
        "tree",
        "missing",
    ],
    &["-stat", "-R", "%n %F %b", "tree"],
    &["-stat"],
    &["-count", "tree", "a.txt", "missing"],
    &["-count", "-v", "-h", "tree"],
    &["-count", "-q", "-v", "tree"],
    &["-count", "-u", "tree"],
    &["-du", "-h", "-v", "tree"],
    &["-du", "-s", "-h", "tree", "tree/sub/wide.dat"],
    &["-ls", "-h", "tree/sub"],
    &["-ls", "-S", "tree/sub"],
    &["-ls", "-S", "-r", "tree/sub"],
    &["-ls", "-r", "-C", "tree"],
    &["-tail", "tree/sub/wide.dat"],
    &["-tail", "tree"],
    &["-tail", "missing"],
    &["-tail", "a.txt", "b.txt"],
    &["-text", "seq.seq", "a.txt", "zipped.txt", "missing", "tree"],
    &["-text", "zipped.txt.gz"],
    &["-cp", "a.txt", "c.txt"],
    &["-cp", "a.txt", "c.txt"],
    &["-cp", "-f", "b.txt", "c.txt"],
    &["-cp", "tree", "tree-copy"],
    &["-cp", "tree", "tree-copy"],
    &["-cp", "tree", "tree/sub"],
    &["-cp", "*.txt", "nodir"],
    &["-cp", "missing", "x"],
    &["-cp", "a.txt"],
    &["-mv", "c.txt", "m.txt"],
    &["-mv", "m.txt", "a.txt"],
    &["-mv", "missing", "x"],
    &["-mv", "m.txt", "tree-copy"],
    &["-mv", "tree-copy", "tree-moved"],
    &["-mv", "tree-moved", "tree-moved/sub"],
    &["-mv", "tree-moved", "nodir/deep"],
    &["-mv", "a.txt", "b.txt", "nodir"],
    &["-mv", "made/part-00002", "moved-part"],
    &["-mv", "a.txt"],
    &["-mkdir", "d"],
    &["-mkdir", "d"],
    &["-mkdir", "x/y"],
    &["-mkdir", "-p", "x/y"],
    &["-mkdir", "-p", "x/y", "p/q/r"],
    &["-put", "a.txt", "d"],
    &["-put", "a.txt", "d"],
    &["-put", "-f", "a.txt", "d/a.txt"],
    &["-put", "a.txt", "b.txt", "nothere"],
    &["-put", "a.txt", "b.txt", "x"],
    &["-put", "missing.txt", "d"],
    &["-put", "a.txt", "nodir/a.txt"],
    &["-copyFromLocal", "tree", "t"],
    &["-put", "tree", "t"],
    &["-ls", "d"],
    &["-ls", "-d", "d", "a.txt"],
    &["-ls", "-C", "t"],
    &["-ls", "-R", "t"],
    &["-ls", "t/*.txt", "missing"],
    &["-ls"],
    &["-du", "t"],
    &["-du", "-s", "t", "a.txt"],
    &["-du", "t/one.txt", "missing"],
    &["-getmerge", "t", "merged.txt"],
    &["-getmerge", "-nl", "t/*.txt", "d/a.txt", "merged-nl.txt"],
    &["-getmerge", "missing", "never.txt"],
    &["-cat", "d/a.txt", "missing", "b.txt"],
    &["-cat", "d"],
    &["-cat", "t/*.txt"],
    &["-touchz", "t/_SUCCESS"],
    &["-ls", "-C", "t/*"],
    &["-rm", "t/_*"],
    &["-mkdir", "-p", "br/a", "br/b", "br/c"],
    &["-ls", "-C", "-d", "br/{a,c,zz}"],
    &["-cat", "{a,b}.txt", "{nothing,none}"],
    &["-rm", "-r", "-f", "br/{a,b}"],
    &["-ls", "-C", "br"],
    &["-rm", "-r", "br/{c,a}"],
    &["-test", "-e", "x"],
    &["-test", "-e", "nothing"],
    &["-test", "-d", "a.txt"],
    &["-test", "-d", "x"],
    &["-test", "-f", "a.txt"],
    &["-test", "-s", "a.txt"],
    &["-test", "-z", "a.txt"],
    &["-touchz", "empty"],
    &["-touchz", "empty"],
    &["-test", "-z", "empty"],
    &["-touchz", "a.txt"],
    &["-get", "d/a.txt", "got.txt"],
    &["-get", "d/a.txt", "got.txt"],
    &["-get", "-f", "b.txt", "got.txt"],
    &["-copyToLocal", "t", "local-t"],
    &["-get", "x/nothing", "here"],
    &["-rm", "d"],
    &["-rm", "missing"],
    &["-rm", "-f", "missing"],
    &["-rm", "-r", "d"],
    &["-rm", "-r", "-skipTrash", "x*"],
    &["-rm", "-R", "p", "t"],
    &["-rm", "empty", "got.txt"],
    &["-mkdir", "gone"],
    &["-rm", "-rf", "gone"],
    &["-rm", "-r", "-f", "gone", "nothing*"],
    &["-cat", "nothing*"],
    &["-lsr", "tree"],
    &["-mkdir", "rmr-me"],
    &["-rmr", "rmr-me", "missing"],
    &["-stat", "a.txt/child"],
    &["-test", "-e", "a.txt/child"],
    &["-ls", "a.txt/child"],
    &["-test", "-x", "a.txt"],
    &["-test", "-e"],
    &["-put", "-x", "a.txt", "d"],
    &["-put", "tree", "tree"],
    &["-put", "a.txt", "a.txt"],
    &["-put", "-f", "a.txt", "a.txt"],
    &["-get", "t/*.txt", "one-file.txt"],
    &["-touchz", "nodir/x"],
    &["-mkdir", "a.txt"],
    &["-rm", "-f"],
    &["-bogus"],
    &["-rm"],
    &["-mkdir"],
    // A destination pattern stands for the one entry it matches, or for itself.
    &["-mkdir", "-p", "dest/only", "dest/other"],
    &["-put", "a.txt", "dest/on*"],
    &["-cp", "b.txt", "dest/o?ly"],
    &["-cp", "a.txt", "dest/{only,x}"],
    &["-mv", "dest/only/b.txt", "dest/oth*"],
    &["-put", "a.txt", "dest/o*"],
    &["-cp", "a.txt", "dest/*"],
    &["-put", "a.txt", "dest/new*"],
    &["-cp", "a.txt", "dest/{x,y}"],
    &["-put", "a.txt", "dest/n\\.w"],
    &["-cp", "dest/n.w", "dest/n\\.w2"],
    &["-ls", "-R", "dest"],
    &["-mkdir", "esc\\.d"],
    &["-touchz", "esc.d/t\\.z"],
    &["-ls", "-C", "-R", "esc\\.d", "esc\\.missing"],
    &["-mv", "a.txt", "dest/x\\y"],
    &["-expunge"],
    &["-expunge", "-immediate"],
    &["-head", "a.txt"],
    &["-head", "dest"],
    &["-head", "missing"],
    &["-head", "a.txt", "b.txt"],
    &["-head"],
    &["-mkdir", "-p", "rd/empty", "rd/full/x"],
    &["-rmdir", "rd/empty"],
    &["-rmdir", "rd/full"],
    &[
        "-rmdir",
        "--ignore-fail-on-non-empty",
        "rd/full",
        "rd/none*",
    ],
    &["-rmdir", "a.txt", "missing"],
    &["-rmdir"],
    &["-setrep", "1", "a.txt"],
    &["-setrep", "-R", "1", "dest/only"],
    &["-setrep", "-w", "1", "a.txt"],
    &["-setrep", "x", "a.txt"],
    &["-setrep", "0", "a.txt"],
    &["-setrep", "1", "missing"],
    &["-setrep", "1"],
    &["-moveFromLocal", "b.txt", "dest/moved-b"],
    &["-moveFromLocal", "b.txt", "dest/again"],
    &["-moveFromLocal", "dest/only", "dest/moved-dir"],
    &["-ls", "-R", "dest"],
];

/// What Hadoop reads afterwards in both directories, checking every checksum file it finds:
/// a stale one fails the read (`ChecksumException`).
const CHECK: &[&[&str]] = &[
    &["-cat", "made/part-00000"],
    &["-cat", "made/orphan"],
    &["-cat", "target.txt"],
    &["-cat", "moved-part"],
    &["-cat", "copied/*"],
    &["-cat", "got-made/*"],
    &["-ls", "-C", "-R", "made"],
];

/// Lays out the files both systems start from in `dir`.
fn prepare(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    fs::write(dir.join("b.txt"), "beta\n").unwrap();
    fs::create_dir_all(dir.join("tree/sub")).unwrap();
    fs::write(dir.join("tree/one.txt"), "one\n").unwrap();
    fs::write(dir.join("tree/two.txt"), "two\n").unwrap();
    fs::write(dir.join("tree/sub/three.dat"), "three\n").unwrap();
    // Lengths of several widths, for the columns of -ls and -du.
    fs::write(dir.join("tree/sub/wide.dat"), "w".repeat(12_345)).unwrap();
    // For -text: a SequenceFile of Text keys and IntWritable values, and gzip files, one
    // named as such and one not.
    let options = SeqWriteOptions::new(
        "org.apache.hadoop.io.Text",
        "org.apache.hadoop.io.IntWritable",
    );
    let mut seq =
        SeqFileWriter::new(fs::File::create(dir.join("seq.seq")).unwrap(), options).unwrap();
    for (word, count) in [("tab\tand space", 3), ("ünïcode", -7), ("", 0)] {
        let mut key = vec![u8::try_from(word.len()).unwrap()];
        key.extend_from_slice(word.as_bytes());
        seq.append(&key, &i32::to_be_bytes(count)).unwrap();
    }
    seq.finish().unwrap();
    for name in ["zipped.txt", "zipped.txt.gz"] {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(
            fs::File::create(dir.join(name)).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(b"zipped\n").unwrap();
        gz.finish().unwrap();
    }
}

/// What a command did: exit status, standard output, and the message lines of its standard
/// error (the first line only when it printed its usage, whose text is each system's own).
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    exit: String,
    out: String,
    messages: Vec<String>,
}

/// `out` with every modification time of a listing (`2026-12-03 09:51`) replaced: the two
/// systems' files are made a moment apart.
fn without_times(out: &str) -> String {
    out.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let at = fields.iter().position(|f| {
                f.len() == 10 && f.as_bytes().get(4) == Some(&b'-') && f.as_bytes()[7] == b'-'
            });
            match at {
                Some(i) if fields.get(i + 1).is_some_and(|t| t.len() == 5) => {
                    let mut fields = fields.clone();
                    fields[i] = "DATE";
                    fields[i + 1] = "TIME";
                    fields.join(" ")
                }
                _ => line.to_string(),
            }
        })
        .map(|line| line + "\n")
        .collect()
}

fn outcome(exit: String, out: String, err: &str) -> Outcome {
    let out = without_times(&out);
    let lines: Vec<&str> = err.lines().collect();
    let usage = lines.iter().any(|l| l.starts_with("Usage: "));
    let messages = if usage {
        lines.into_iter().take(1).map(str::to_string).collect()
    } else {
        lines.into_iter().map(str::to_string).collect()
    };
    Outcome {
        exit: exit.trim().to_string(),
        out,
        messages,
    }
}

/// Every file and directory below `dir` (`.crc` files left out) with a file's contents.
fn tree(dir: &Path) -> BTreeMap<String, Option<String>> {
    let mut found = tree_with_checksums(dir);
    found.retain(|name, _| !name.ends_with(".crc"));
    found
}

/// Every file and directory below `dir` with a file's contents (lossy: checksum files are
/// binary).
fn tree_with_checksums(dir: &Path) -> BTreeMap<String, Option<String>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if entry.file_type().unwrap().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                found.insert(name, Some(format!("-> {}", target.display())));
            } else if path.is_dir() {
                found.insert(name, None);
                pending.push(path);
            } else {
                let bytes = fs::read(&path).unwrap();
                found.insert(name, Some(String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn sluice_fs_does_what_hadoop_fs_does() {
    let root = root();
    let lib = root.join("target/hadoop/lib");
    assert!(
        lib.join(".complete").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop`",
        lib.display()
    );
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();

    let seed = s.join("seed");
    prepare(&seed);
    hadoop_fs(&root, &seed, SEED, &s.join("seeded"));
    fs::remove_file(seed.join("made/orphan")).unwrap();
    assert!(seed.join("made/.orphan.crc").exists());
    let hadoop_dir = s.join("hadoop");
    let sluice_dir = s.join("sluice");
    copy_tree(&seed, &hadoop_dir);
    copy_tree(&seed, &sluice_dir);
    finish(&hadoop_dir);
    finish(&sluice_dir);

    let results = s.join("results");
    hadoop_fs(&root, &hadoop_dir, COMMANDS, &results);
    let mut differences = Vec::new();
    for (i, command) in COMMANDS.iter().enumerate() {
        let hadoop = recorded(&results, i);
        let out = Command::new(SLUICE)
            .arg("fs")
            .args(*command)
            .current_dir(&sluice_dir)
            .env_remove("HADOOP_CONF_DIR")
            .output()
            .unwrap();
        let sluice = outcome(
            out.status.code().unwrap().to_string(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            // Hadoop names a missing parent by its full path, which differs by directory.
            &String::from_utf8(out.stderr)
                .unwrap()
                .replace(&sluice_dir.display().to_string(), "DIR"),
        );
        let hadoop = Outcome {
            messages: hadoop
                .messages
                .iter()
                .map(|m| m.replace(&hadoop_dir.display().to_string(), "DIR"))
                .collect(),
            ..hadoop
        };
        if sluice != hadoop {
            differences.push(format!(
                "fs {}:\n  sluice: {sluice:?}\n  Hadoop: {hadoop:?}",
                command.join(" ")
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert_eq!(tree(&sluice_dir), tree(&hadoop_dir));

    // Hadoop reads what each left as it reads its own: no stale checksum file fails it.
    hadoop_fs(&root, &hadoop_dir, CHECK, &s.join("check-hadoop"));
    hadoop_fs(&root, &sluice_dir, CHECK, &s.join("check-sluice"));
    for (i, command) in CHECK.iter().enumerate() {
        let (hadoop, sluice) = (
            recorded(&s.join("check-hadoop"), i),
            recorded(&s.join("check-sluice"), i),
        );
        assert_eq!(
            hadoop.exit,
            "0",
            "Hadoop's fs {}: {hadoop:?}",
            command.join(" ")
        );
        assert_eq!(
            sluice,
            hadoop,
            "Hadoop's fs {} after sluice",
            command.join(" ")
        );
    }
    // And no checksum file is left without its file.
    for (name, _) in tree_with_checksums(&sluice_dir) {
        let path = Path::new(&name);
        let file = path.file_name().unwrap().to_str().unwrap();
        if let Some(of) = file.strip_prefix('.').and_then(|f| f.strip_suffix(".crc")) {
            assert!(
                sluice_dir.join(path.with_file_name(of)).exists(),
                "{name} is left without its file"
            );
        }
    }
}

/// What [`copy_tree`] would not copy as it is: links in a loop (`loop/l1` and `loop/l2` name
/// each other) beside a file, and files whose times tie (`ties`, made the same second, sizes
/// apart or equal).
fn finish(dir: &Path) {
    fs::create_dir(dir.join("loop")).unwrap();
    fs::write(dir.join("loop/b"), "b\n").unwrap();
    std::os::unix::fs::symlink("l1", dir.join("loop/l2")).unwrap();
    std::os::unix::fs::symlink("l2", dir.join("loop/l1")).unwrap();
    fs::create_dir(dir.join("ties")).unwrap();
    for (name, text) in [
        ("10", "x"),
        ("9", "xx"),
        ("_u", "x"),
        ("a b", "xxx"),
        ("é", "x"),
    ] {
        fs::write(dir.join("ties").join(name), text).unwrap();
    }
    fs::create_dir(dir.join("ties/sub")).unwrap();
    let touched = Command::new("touch")
        .args(["-d", "2026-01-01 00:00:00"])
        .args(["10", "9", "_u", "a b", "é", "sub"])
        .current_dir(dir.join("ties"))
        .status()
        .unwrap();
    assert!(touched.success());
    fs::write(dir.join("empty.gz"), "").unwrap();
    // Changed behind Hadoop's back: its checksums no longer hold.
    fs::write(dir.join("tampered.txt"), "alpha, changed\n").unwrap();
    fs::create_dir(dir.join("globs")).unwrap();
    for name in ["a[1].txt", "a1.txt", "one", "xne"] {
        fs::write(dir.join("globs").join(name), format!("{name}\n")).unwrap();
    }
}

/// Runs `commands` through Hadoop's `FsShell` in `dir`, recording each command's outcome in
/// `results`.
fn hadoop_fs(root: &Path, dir: &Path, commands: &[&[&str]], results: &Path) {
    let script = results.with_extension("commands");
    let lines: Vec<String> = commands.iter().map(|c| c.join("\t")).collect();
    fs::write(&script, lines.join("\n") + "\n").unwrap();
    fs::create_dir(results).unwrap();
    let status = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", root.join("target/hadoop/lib").display()))
        .arg(format!(
            "-Dlog4j.configuration=file:{}",
            root.join("tests/hadoop/log4j.properties").display()
        ))
        .arg(root.join("tests/hadoop/FsBatch.java"))
        .arg(&script)
        .arg(results)
        .current_dir(dir)
        .env_remove("HADOOP_CONF_DIR")
        .status()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(status.success(), "FsBatch.java failed");
}

/// The outcome of command `i` that [`hadoop_fs`] recorded.
fn recorded(results: &Path, i: usize) -> Outcome {
    let read = |ext: &str| fs::read_to_string(results.join(format!("{i}.{ext}"))).unwrap();
    outcome(read("exit"), read("out"), &read("err"))
}

/// Copies directory `from`, everything in it, to a new directory `to`.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// `-chmod` modes as Hadoop's parser reads them (octal, symbolic, its quirks), `-R`, and
/// what each shows afterwards; `-chown` and `-chgrp` too when the tests run as root, the only
/// user who may give files away.
const PERMISSION_COMMANDS: &[&[&str]] = &[
    &["-chmod", "600", "f"],
    &["-chmod", "-R", "go-rx,u+X", "d"],
    &["-ls", "-R", "d"],
    &["-chmod", "1777", "d"],
    &["-ls", "-d", "d"],
    &["-stat", "%a %A", "d"],
    &["-chmod", "o-x", "d"],
    &["-ls", "-d", "d"],
    &["-chmod", "0755", "d"],
    &["-chmod", "a+X", "f"],
    &["-ls", "f"],
    &["-chmod", "u+x", "f"],
    &["-chmod", "a+X", "f"],
    &["-ls", "f"],
    &["-chmod", "=r,+w", "f"],
    &["-ls", "f"],
    &["-chmod", " u=rw , g+r", "f", "d/*"],
    &["-ls", "f", "d"],
    &["-chmod", "+640", "f"],
    &["-ls", "f"],
    &["-chmod", "-w", "f"],
    &["-chmod", "-R", "-x,+r", "d"],
    &["-ls", "-R", "d", "f"],
    &["-chmod", "-Q", "f"],
    &["-chmod", "u+x", "sg"],
    &["-chmod", "g=X", "sg"],
    &["-chmod", "xyz", "f"],
    &["-chmod", "u=rwx,g=,o=", "f"],
    &["-chmod", "2755", "f"],
    &["-chmod", "644", "nope", "f"],
    &["-chmod", "644"],
    &["-chmod"],
    &["-chown", ":", "f"],
    &["-chown", "a b", "f"],
    &["-chgrp", "a:b", "f"],
    &["-chgrp", "staff"],
];

/// Run as root only: giving a file to another user.
const OWNER_COMMANDS: &[&[&str]] = &[
    &["-chown", "nobody", "f"],
    &["-ls", "f"],
    &["-chown", "-R", ":nogroup", "d"],
    &["-ls", "-R", "d"],
    &["-chown", "root:", "f"],
    &["-chgrp", "-R", "root", "d/*"],
    &["-ls", "-R", "d", "f"],
    &["-chown", "nobody:nogroup", "d/e/*", "f"],
    &["-ls", "-R", "d", "f"],
];

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn sluice_fs_changes_permissions_and_owners_as_hadoop_does() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = root();
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    let mut commands: Vec<&[&str]> = PERMISSION_COMMANDS.to_vec();
    if nix::unistd::geteuid().is_root() {
        commands.extend_from_slice(OWNER_COMMANDS);
    } else {
        eprintln!("not root: -chown and -chgrp are compared only for their refusals");
    }
    let make = |dir: &Path| {
        fs::create_dir_all(dir.join("d/e")).unwrap();
        for (file, mode) in [("f", 0o644), ("d/g", 0o644), ("d/e/h", 0o664)] {
            fs::write(dir.join(file), file).unwrap();
            fs::set_permissions(dir.join(file), fs::Permissions::from_mode(mode)).unwrap();
        }
        for d in ["d", "d/e"] {
            fs::set_permissions(dir.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        // A directory whose new files take its group (setgid).
        fs::create_dir(dir.join("sg")).unwrap();
        fs::set_permissions(dir.join("sg"), fs::Permissions::from_mode(0o2755)).unwrap();
    };
    let (hadoop_dir, sluice_dir) = (s.join("hadoop"), s.join("sluice"));
    make(&hadoop_dir);
    make(&sluice_dir);
    let results = s.join("results");
    hadoop_fs(&root, &hadoop_dir, &commands, &results);
    let mut differences = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let hadoop = recorded(&results, i);
        let out = Command::new(SLUICE)
            .arg("fs")
            .args(*command)
            .current_dir(&sluice_dir)
            .env_remove("HADOOP_CONF_DIR")
            .output()
            .unwrap();
        let sluice = outcome(
            out.status.code().unwrap().to_string(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            &String::from_utf8_lossy(&out.stderr),
        );
        if sluice != hadoop {
            differences.push(format!(
                "fs {}:\n  sluice: {sluice:?}\n  Hadoop: {hadoop:?}",
                command.join(" ")
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // Every mode bit as the two left them, the setgid bit too.
    let modes = |dir: &Path| -> Vec<(String, u32)> {
        ["f", "d", "d/g", "d/e", "d/e/h", "sg"]
            .iter()
            .map(|p| {
                let mode = fs::metadata(dir.join(p)).unwrap().permissions().mode();
                (p.to_string(), mode & 0o7777)
            })
            .collect()
    };
    assert_eq!(modes(&sluice_dir), modes(&hadoop_dir));
}

/// `-put -` copies standard input, as scripts pipe generated input into place; `-help` lists
/// the commands; a command `sluice fs` does not have is a usage error (Hadoop's 255).
#[test]
fn sluice_fs_puts_standard_input_and_says_what_it_can_do() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(SLUICE)
        .args(["fs", "-put", "-", "piped.txt"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from a pipe\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        fs::read_to_string(dir.path().join("piped.txt")).unwrap(),
        "from a pipe\n"
    );
    // Missing parents are made, as Hadoop's `-put -` makes them (Luigi's directory targets
    // pipe into `dir-temp/data` without making `dir-temp` first).
    let mut child = Command::new(SLUICE)
        .args(["fs", "-put", "-", "new/deeper/data"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"deep\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        fs::read_to_string(dir.path().join("new/deeper/data")).unwrap(),
        "deep\n"
    );
    let help = Command::new(SLUICE).args(["fs", "-help"]).output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    for command in [
        "-cat", "-ls", "-mkdir", "-put", "-get", "-rm", "-test", "-touchz",
    ] {
        assert!(text.contains(command), "{command} missing from:\n{text}");
    }
    let unknown = Command::new(SLUICE)
        .args(["fs", "-checksum", "."])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&unknown.stderr).starts_with("-checksum: Unknown command"));
}

/// What `sluice fs` never loses: a link is removed, not what it names; a file merged into is
/// not one of its sources; a copy that fails leaves the file it would have replaced.
#[test]
fn sluice_fs_loses_nothing_it_was_not_asked_to_delete() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fs_cmd = |args: &[&str]| {
        Command::new(SLUICE)
            .arg("fs")
            .args(args)
            .current_dir(d)
            .output()
            .unwrap()
    };
    fs::create_dir_all(d.join("kept")).unwrap();
    fs::write(d.join("kept/file.txt"), "kept\n").unwrap();
    std::os::unix::fs::symlink(d.join("kept"), d.join("link")).unwrap();
    // With a trailing slash too: the link goes, what it names stays.
    let out = fs_cmd(&["-rm", "-r", "link/"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(d.join("link").symlink_metadata().is_err());
    assert_eq!(
        fs::read_to_string(d.join("kept/file.txt")).unwrap(),
        "kept\n"
    );
    // (The root's refusal is a unit test of `fs::deletable`: no test may try it for real.)

    // Merging into one of the sources is refused; the source is untouched.
    fs::write(d.join("kept/other.txt"), "x".repeat(200_000)).unwrap();
    let out = fs_cmd(&["-getmerge", "kept", "kept/file.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        fs::read_to_string(d.join("kept/file.txt")).unwrap(),
        "kept\n"
    );

    // A source that cannot be read: -put -f and -get -f keep the file they would replace.
    fs::write(d.join("target.txt"), "old\n").unwrap();
    fs::write(d.join("unreadable.txt"), "new\n").unwrap();
    fs::set_permissions(
        d.join("unreadable.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    let readable = fs::read(d.join("unreadable.txt")).is_ok();
    if !readable {
        for command in ["-put", "-get"] {
            let out = fs_cmd(&[command, "-f", "unreadable.txt", "target.txt"]);
            assert_eq!(out.status.code(), Some(1), "{command}");
            assert_eq!(fs::read_to_string(d.join("target.txt")).unwrap(), "old\n");
            assert!(!d.join("target.txt._COPYING_").exists());
        }
    }
    // (Running as root, every file can be read: what replaces the file is then the check.)
    let out = fs_cmd(&["-put", "-f", "unreadable.txt", "target.txt"]);
    if readable {
        assert!(out.status.success());
        assert_eq!(fs::read_to_string(d.join("target.txt")).unwrap(), "new\n");
    }
}

/// As Hadoop's shell, `-chmod`, `-chown` and `-chgrp` ask nothing of the store for an entry
/// already as asked: a user may run them over a tree holding others' files that are already
/// so. Run as `nobody` over root's files: what would not change succeeds, a change is refused.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "needs root, to run sluice as another user over root's files (the test-root feature)"
)]
fn unchanged_entries_of_other_users_are_left_alone() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir(d.join("tree")).unwrap();
    fs::write(d.join("tree/f"), "f").unwrap();
    fs::set_permissions(d.join("tree"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(d.join("tree/f"), fs::Permissions::from_mode(0o644)).unwrap();
    let as_nobody = |args: &[&str]| {
        let out = Command::new("setpriv")
            .args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                SLUICE,
                "fs",
            ])
            .args(args)
            .current_dir(d)
            .output()
            .expect("setpriv runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for unchanged in [
        &["-chmod", "-R", "u+r,go-w", "tree"][..],
        &["-chmod", "644", "tree/f"],
        &["-chown", "-R", "root", "tree"],
        &["-chgrp", "root", "tree/f"],
        &["-chown", "root:root", "tree/f"],
    ] {
        assert_eq!(
            as_nobody(unchanged),
            (Some(0), String::new()),
            "{unchanged:?}"
        );
    }
    let (code, err) = as_nobody(&["-chmod", "600", "tree/f"]);
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("chmod: changing permissions of 'tree/f': "),
        "{err}"
    );
    let mode = fs::metadata(d.join("tree/f")).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o644);
}

//! `-archives`: a job's archives unpacked for its programs as Hadoop's localiser unpacks them
//! (`FSDownload.unpack`).
//!
//! Hadoop tells an archive by its file name, in any case: `.jar` and `.zip` are zip files,
//! `.tar.gz` and `.tgz` gzipped tar files, `.tar` a plain tar file. Anything else is not
//! unpacked: Hadoop copies it as it is (and warns), and so the task sees a file. An unpacked
//! archive is a directory holding the archive's entries; its files are made `r-xr-xr-x` and its
//! directories `rwxr-xr-x`, as Hadoop's local runner leaves them, so that a script shipped in a
//! zip file runs although zip files seldom keep permissions.
//!
//! Entries are unpacked only inside the directory: an entry named with `..`, or one written
//! through a symbolic link that leads out, fails the unpacking (Hadoop's zip reader refuses
//! such entries too); a tar entry's leading `/` is taken off, as GNU tar takes it off. As in
//! Hadoop, which unpacks tar files with the `tar` command and zip files in Java, a tar file's
//! links and empty directories are made, while a zip or jar file gives only files (a link
//! entry becomes a file holding the link's target) and a jar file's opening manifest is left
//! out.

use std::fs::{self, File};
use std::io::{self, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What Hadoop does with a file given in `-archives`, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArchiveKind {
    /// A zip file (`.zip`), or a jar file (`.jar`, whose manifest is not unpacked).
    Zip {
        /// Whether it is a jar file.
        jar: bool,
    },
    /// A tar file, gzipped (`.tar.gz`, `.tgz`) or not (`.tar`).
    Tar {
        /// Whether it is gzipped.
        gzip: bool,
    },
    /// Not an archive Hadoop knows: given to the tasks as it is.
    Other,
}

impl ArchiveKind {
    /// The kind of the archive file named `name`, as Hadoop reads the name (in any case).
    pub(crate) fn of(name: &str) -> ArchiveKind {
        let name = name.to_ascii_lowercase();
        if name.ends_with(".jar") {
            ArchiveKind::Zip { jar: true }
        } else if name.ends_with(".zip") {
            ArchiveKind::Zip { jar: false }
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            ArchiveKind::Tar { gzip: true }
        } else if name.ends_with(".tar") {
            ArchiveKind::Tar { gzip: false }
        } else {
            ArchiveKind::Other
        }
    }
}

/// Unpacks `archive`, of `kind`, into `into`, which must not exist yet, and gives its entries
/// Hadoop's permissions; a file of [`ArchiveKind::Other`] is copied to `into` as it is, made
/// `r-xr-xr-x`. Returns the number of bytes the files made hold.
///
/// # Errors
/// The archive cannot be read or is not of its kind, an entry would land outside `into`, or
/// writing fails. `into` may then hold part of the archive; the caller removes it.
pub(crate) fn unpack(archive: &Path, kind: ArchiveKind, into: &Path) -> io::Result<u64> {
    let file = File::open(archive)?;
    let reader = || BufReader::with_capacity(1 << 16, file);
    match kind {
        ArchiveKind::Zip { jar } => {
            fs::create_dir(into)?;
            unzip(reader(), jar, into)?;
        }
        ArchiveKind::Tar { gzip } => {
            fs::create_dir(into)?;
            if gzip {
                untar(flate2::read::MultiGzDecoder::new(reader()), into)?;
            } else {
                untar(reader(), into)?;
            }
        }
        ArchiveKind::Other => {
            let mut out = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(into)?;
            let bytes = io::copy(&mut reader(), &mut out)?;
            fs::set_permissions(into, fs::Permissions::from_mode(0o555))?;
            return Ok(bytes);
        }
    }
    set_permissions(into)
}

/// Copies the directory `from` to `into` (new), as Hadoop copies a directory given as an
/// archive: files and directories with Hadoop's permissions, links as links.
pub(crate) fn copy_directory(from: &Path, into: &Path) -> io::Result<u64> {
    let mut pending = vec![(from.to_path_buf(), into.to_path_buf())];
    while let Some((from, into)) = pending.pop() {
        fs::create_dir(&into)?;
        for entry in fs::read_dir(&from)? {
            let entry = entry?;
            let target = into.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.path(), target));
            } else if kind.is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(entry.path())?, &target)?;
            } else {
                fs::copy(entry.path(), &target)?;
            }
        }
    }
    set_permissions(into)
}

/// Writes the files of a zip file as Hadoop's `FileUtil.unZip` and `RunJar.unJar` do: each file
/// entry's bytes (a link entry's too: the link's target as text), with the directories above
/// it; entries for directories alone make nothing. A jar file's manifest, when it opens the
/// file (as Java's `JarInputStream` finds it), is left out.
fn unzip(reader: impl io::Read + io::Seek, jar: bool, into: &Path) -> io::Result<()> {
    let mut zip = zip::ZipArchive::new(reader)?;
    let mut manifest_at = jar.then_some(0);
    for index in 0..zip.len() {
        let mut entry = zip.by_index(index)?;
        let entry_name = entry.name()?.into_owned();
        if manifest_at == Some(index) {
            if entry_name.eq_ignore_ascii_case("META-INF/") {
                manifest_at = Some(index + 1);
                continue;
            }
            if entry_name.eq_ignore_ascii_case("META-INF/MANIFEST.MF") {
                continue;
            }
        }
        if entry.is_dir() {
            continue;
        }
        let Some(name) = entry.enclosed_name() else {
            return Err(outside(&entry_name));
        };
        let path = into.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut out = File::create(&path)?;
        io::copy(&mut entry, &mut out)?;
    }
    Ok(())
}

fn outside(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("entry {name} would be written outside the archive's directory"),
    )
}

fn untar(reader: impl io::Read, into: &Path) -> io::Result<()> {
    let mut tar = tar::Archive::new(reader);
    tar.set_preserve_permissions(false);
    tar.set_preserve_mtime(true);
    tar.set_unpack_xattrs(false);
    tar.set_overwrite(true);
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.into_owned();
        // `unpack_in` checks that the entry lands inside `into` (no `..`, no absolute path,
        // no parent directory that is a link leading out) and says `false` when it would not.
        if !entry.unpack_in(into)? {
            return Err(outside(&name.display().to_string()));
        }
    }
    Ok(())
}

/// Makes every file below `root` `r-xr-xr-x` and every directory `rwxr-xr-x` (links are left
/// alone), as Hadoop's localiser does; returns the bytes the files hold.
fn set_permissions(root: &Path) -> io::Result<u64> {
    let mut bytes = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                bytes = bytes.saturating_add(entry.metadata()?.len());
                fs::set_permissions(entry.path(), fs::Permissions::from_mode(0o555))?;
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    /// Runs a Python script (the standard library's `tarfile` and `zipfile`: an archiver
    /// independent of the crates that unpack) in `dir`.
    fn python(dir: &Path, script: &str) {
        let status = Command::new("python3")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .expect("python3 runs");
        assert!(status.success(), "{script}");
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn tree(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d).unwrap() {
                let entry = entry.unwrap();
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                let kind = entry.file_type().unwrap();
                if kind.is_symlink() {
                    let target = fs::read_link(entry.path()).unwrap();
                    out.push(format!("{rel} -> {}", target.display()));
                } else if kind.is_dir() {
                    out.push(format!("{rel}/ {:o}", mode(&entry.path())));
                    stack.push(entry.path());
                } else {
                    let text = fs::read_to_string(entry.path()).unwrap();
                    out.push(format!("{rel} {:o} {text:?}", mode(&entry.path())));
                }
            }
        }
        out.sort();
        out
    }

    const MAKE: &str = r##"
import io, os, tarfile, zipfile
os.makedirs("src/sub/deeper")
open("src/a.txt", "w").write("hello\n")
open("src/sub/run.sh", "w").write("#!/bin/sh\necho run\n")
open("src/sub/deeper/d.txt", "w").write("deep\n")
os.chmod("src/a.txt", 0o600)
os.symlink("a.txt", "src/link")
for name, mode in [("env.tar.gz", "w:gz"), ("ENV.TGZ", "w:gz"), ("plain.tar", "w")]:
    with tarfile.open(name, mode) as t:
        for entry in ["a.txt", "link", "sub"]:
            t.add("src/" + entry, arcname=entry)
for name in ["z.zip", "j.JAR"]:
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        z.write("src/a.txt", "a.txt")
        z.write("src/sub/run.sh", "sub/run.sh")
        z.write("src/sub/deeper/d.txt", "sub/deeper/d.txt")
"##;

    #[test]
    fn kinds_are_told_by_name_in_any_case() {
        assert_eq!(ArchiveKind::of("x.JAR"), ArchiveKind::Zip { jar: true });
        assert_eq!(ArchiveKind::of("x.zip"), ArchiveKind::Zip { jar: false });
        assert_eq!(ArchiveKind::of("x.Tar.Gz"), ArchiveKind::Tar { gzip: true });
        assert_eq!(ArchiveKind::of("x.tgz"), ArchiveKind::Tar { gzip: true });
        assert_eq!(ArchiveKind::of("x.tar"), ArchiveKind::Tar { gzip: false });
        for other in ["x.gz", "x.tar.bz2", "x.tarx", "zip", "x.7z", ""] {
            assert_eq!(ArchiveKind::of(other), ArchiveKind::Other, "{other}");
        }
    }

    #[test]
    fn tar_files_unpack_with_their_directories_and_links() {
        let dir = tempfile::tempdir().unwrap();
        python(dir.path(), MAKE);
        let expected = vec![
            "a.txt 555 \"hello\\n\"".to_string(),
            "link -> a.txt".to_string(),
            "sub/ 755".to_string(),
            "sub/deeper/ 755".to_string(),
            "sub/deeper/d.txt 555 \"deep\\n\"".to_string(),
            "sub/run.sh 555 \"#!/bin/sh\\necho run\\n\"".to_string(),
        ];
        for name in ["env.tar.gz", "ENV.TGZ", "plain.tar"] {
            let into = dir.path().join(format!("out-{name}"));
            let bytes = unpack(&dir.path().join(name), ArchiveKind::of(name), &into).unwrap();
            assert_eq!(tree(&into), expected, "{name}");
            assert_eq!(mode(&into), 0o755);
            assert_eq!(bytes, 6 + 5 + 19, "{name}");
        }
    }

    #[test]
    fn zip_and_jar_files_unpack_and_their_files_can_run() {
        let dir = tempfile::tempdir().unwrap();
        python(dir.path(), MAKE);
        for name in ["z.zip", "j.JAR"] {
            let into = dir.path().join(format!("out-{name}"));
            unpack(&dir.path().join(name), ArchiveKind::of(name), &into).unwrap();
            assert_eq!(
                tree(&into),
                vec![
                    "a.txt 555 \"hello\\n\"",
                    "sub/ 755",
                    "sub/deeper/ 755",
                    "sub/deeper/d.txt 555 \"deep\\n\"",
                    "sub/run.sh 555 \"#!/bin/sh\\necho run\\n\"",
                ],
                "{name}"
            );
            let out = Command::new(into.join("sub/run.sh")).output().unwrap();
            assert_eq!(out.stdout, b"run\n");
        }
    }

    #[test]
    fn zip_files_give_only_files_and_jar_files_lose_their_opening_manifest() {
        let dir = tempfile::tempdir().unwrap();
        python(
            dir.path(),
            r#"
import stat, zipfile
with zipfile.ZipFile("t.zip", "w") as z:
    z.writestr("emptydir/", "")
    link = zipfile.ZipInfo("lnk"); link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    z.writestr(link, "target.txt")
    z.writestr("target.txt", "T\n")
    z.writestr("META-INF/MANIFEST.MF", "kept in a zip\n")
with zipfile.ZipFile("t.jar", "w") as z:
    z.writestr("META-INF/", "")
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    z.writestr("META-INF/other.txt", "o\n")
    z.writestr("emptydir/", "")
    z.writestr("a.txt", "a\n")
with zipfile.ZipFile("late.jar", "w") as z:
    z.writestr("a.txt", "a\n")
    z.writestr("META-INF/MANIFEST.MF", "late\n")
"#,
        );
        // What Hadoop 3.4's local runner made of the same files.
        let cases: [(&str, &[&str]); 3] = [
            (
                "t.zip",
                &[
                    "META-INF/ 755",
                    "META-INF/MANIFEST.MF 555 \"kept in a zip\\n\"",
                    "lnk 555 \"target.txt\"",
                    "target.txt 555 \"T\\n\"",
                ],
            ),
            (
                "t.jar",
                &[
                    "META-INF/ 755",
                    "META-INF/other.txt 555 \"o\\n\"",
                    "a.txt 555 \"a\\n\"",
                ],
            ),
            (
                "late.jar",
                &[
                    "META-INF/ 755",
                    "META-INF/MANIFEST.MF 555 \"late\\n\"",
                    "a.txt 555 \"a\\n\"",
                ],
            ),
        ];
        for (name, expected) in cases {
            let into = dir.path().join(format!("out-{name}"));
            unpack(&dir.path().join(name), ArchiveKind::of(name), &into).unwrap();
            assert_eq!(tree(&into), expected, "{name}");
        }
    }

    #[test]
    fn entries_that_lead_out_of_the_directory_fail_the_unpacking() {
        let dir = tempfile::tempdir().unwrap();
        python(
            dir.path(),
            r#"
import io, os, tarfile, zipfile
def add(t, name, data=b"x"):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
with tarfile.open("dots.tar", "w") as t:
    add(t, "ok.txt"); add(t, "../escaped.txt")
with tarfile.open("absolute.tar", "w") as t:
    add(t, "/tmp/absolute-escape-test.txt")
with tarfile.open("through-link.tar", "w") as t:
    link = tarfile.TarInfo("out"); link.type = tarfile.SYMTYPE; link.linkname = ".."
    t.addfile(link); add(t, "out/through.txt")
with zipfile.ZipFile("dots.zip", "w") as z:
    z.writestr("ok.txt", "x"); z.writestr("../escaped.txt", "x")
"#,
        );
        for name in ["dots.tar", "through-link.tar", "dots.zip"] {
            let into = dir.path().join("in").join(name);
            fs::create_dir_all(into.parent().unwrap()).unwrap();
            let error = unpack(&dir.path().join(name), ArchiveKind::of(name), &into);
            assert!(error.is_err(), "{name} unpacked");
            assert!(!dir.path().join("in/escaped.txt").exists(), "{name}");
            assert!(!dir.path().join("in/through.txt").exists(), "{name}");
            assert!(!dir.path().join("escaped.txt").exists(), "{name}");
        }
        // A leading `/` is taken off, as GNU tar does: the entry lands inside.
        let into = dir.path().join("abs");
        unpack(
            &dir.path().join("absolute.tar"),
            ArchiveKind::of("a.tar"),
            &into,
        )
        .unwrap();
        assert!(into.join("tmp/absolute-escape-test.txt").is_file());
    }

    #[test]
    fn damaged_archives_fail_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        python(dir.path(), MAKE);
        let whole = fs::read(dir.path().join("env.tar.gz")).unwrap();
        let zip = fs::read(dir.path().join("z.zip")).unwrap();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("cut.tar.gz", whole[..whole.len() / 2].to_vec()),
            ("text.tgz", b"not gzip at all\n".to_vec()),
            ("cut.zip", zip[..zip.len() - 30].to_vec()),
            ("empty.zip", Vec::new()),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join(name);
            File::create(&path).unwrap().write_all(&bytes).unwrap();
            let into = dir.path().join(format!("out-{name}"));
            let error = unpack(&path, ArchiveKind::of(name), &into).unwrap_err();
            assert!(!error.to_string().is_empty(), "{name}");
        }
    }

    #[test]
    fn directories_are_copied_with_hadoops_permissions() {
        let dir = tempfile::tempdir().unwrap();
        python(dir.path(), MAKE);
        let into = dir.path().join("copy");
        assert_eq!(copy_directory(&dir.path().join("src"), &into).unwrap(), 30);
        assert_eq!(
            tree(&into),
            [
                "a.txt 555 \"hello\\n\"",
                "link -> a.txt",
                "sub/ 755",
                "sub/deeper/ 755",
                "sub/deeper/d.txt 555 \"deep\\n\"",
                "sub/run.sh 555 \"#!/bin/sh\\necho run\\n\"",
            ]
        );
        assert_eq!(mode(&dir.path().join("src/a.txt")), 0o600);
    }

    #[test]
    fn other_files_are_copied_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.gz");
        fs::write(&path, b"not unpacked\n").unwrap();
        let into = dir.path().join("copy");
        assert_eq!(
            unpack(&path, ArchiveKind::of("notes.gz"), &into).unwrap(),
            13
        );
        assert_eq!(fs::read(&into).unwrap(), b"not unpacked\n");
        assert_eq!(mode(&into), 0o555);
        assert_eq!(mode(&path), 0o644);
    }
}

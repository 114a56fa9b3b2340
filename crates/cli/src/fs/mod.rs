//! `sluice fs`: the commands of Hadoop's `hadoop fs` shell that scripts and wrappers around
//! MapReduce jobs run before and after them (clear the output, stage the input, read the
//! results), on every store sluice knows, so that `HADOOP_CMD=sluice` serves them too.
//!
//! The commands take Hadoop's options and print Hadoop's messages (`rm: `x': No such file or
//! directory`), and the shell exits as Hadoop's does: 0, 1 when any argument failed, 255 for a
//! command line it cannot run. A test runs the same commands through Hadoop's `FsShell` and
//! compares.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use sluice_io::{FileStatus, IoError, Location, Storage, Stores};

mod info;
mod moving;
mod perms;

/// The commands, as `-help` lists them.
const USAGE: &str = "Usage: sluice fs [generic options]
\t[-cat <src> ...]
\t[-chgrp [-R] GROUP PATH...]
\t[-chmod [-R] <MODE[,MODE]... | OCTALMODE> PATH...]
\t[-chown [-R] [OWNER][:[GROUP]] PATH...]
\t[-copyFromLocal [-f] <localsrc> ... <dst>]
\t[-copyToLocal [-f] <src> ... <localdst>]
\t[-count [-q] [-u] [-h] [-v] <path> ...]
\t[-cp [-f] <src> ... <dst>]
\t[-du [-s] [-h] [-v] <path> ...]
\t[-expunge [-immediate] [-fs <path>]]
\t[-get [-f] <src> ... [<localdst>]]
\t[-getmerge [-nl] [-skip-empty-file] <src> <localdst>]
\t[-head <file>]
\t[-help]
\t[-ls [-C] [-d] [-h] [-q] [-R] [-t] [-S] [-r] [-u] [<path> ...]]
\t[-mkdir [-p] <path> ...]
\t[-moveFromLocal [-f] <localsrc> ... <dst>]
\t[-mv <src> ... <dst>]
\t[-put [-f] <localsrc> ... <dst>]
\t[-rm [-f] [-r|-R] [-skipTrash] <src> ...]
\t[-rmdir [--ignore-fail-on-non-empty] <dir> ...]
\t[-setrep [-R] [-w] <rep> <path> ...]
\t[-stat [-R] [format] <path> ...]
\t[-tail [-f] <file>]
\t[-test -[defsz] <path>]
\t[-text <src> ...]
\t[-touchz <path> ...]

Generic options: -D <property=value>, -fs <file:///|hdfs://namenode:port|s3://bucket>.
Paths are on fs.defaultFS (HADOOP_CONF_DIR's core-site.xml, -D or -fs) unless they name
their store; a local path needs no configuration. There is no trash: -rm deletes at once
(and -expunge has nothing to do).
On S3 a directory exists only while something is in it.
";

/// Exit status of a command line the shell cannot run (Hadoop's -1).
const USAGE_STATUS: u8 = 255;

/// Runs `sluice fs ARGS`; returns the exit status.
pub(crate) fn run(args: &[String]) -> u8 {
    let mut defines: Vec<(String, String)> = Vec::new();
    let mut rest = args;
    // Generic options first, as Hadoop's GenericOptionsParser takes them.
    loop {
        match rest {
            [flag, value, tail @ ..] if flag == "-D" => {
                match crate::stores::parse_define(value) {
                    Ok(define) => defines.push(define),
                    Err(e) => return usage(&format!("-D {value}: {e}")),
                }
                rest = tail;
            }
            [flag, tail @ ..] if flag.len() > 2 && flag.starts_with("-D") => {
                match crate::stores::parse_define(&flag[2..]) {
                    Ok(define) => defines.push(define),
                    Err(e) => return usage(&format!("{flag}: {e}")),
                }
                rest = tail;
            }
            [flag, value, tail @ ..] if flag == "-fs" => {
                defines.push(("fs.defaultFS".to_string(), value.clone()));
                rest = tail;
            }
            _ => break,
        }
    }
    let Some((command, operands)) = rest.split_first() else {
        eprint!("{USAGE}");
        return USAGE_STATUS;
    };
    if command == "-help" || command == "-usage" {
        print!("{USAGE}");
        return 0;
    }
    let shell = match Shell::new(&defines) {
        Ok(shell) => shell,
        Err(e) => {
            eprintln!("sluice fs: {e:#}");
            return 1;
        }
    };
    let name = command.trim_start_matches('-');
    if operands.iter().any(String::is_empty) {
        // Hadoop refuses the whole command line before doing anything.
        return usage(&format!(
            "{command}: Can not create a Path from an empty string"
        ));
    }
    let result = match command.as_str() {
        "-cat" => shell.cat(operands),
        "-ls" => shell.ls("ls", operands),
        // Hadoop 3 still runs its old recursive commands, with a warning; some workflow
        // tools' clients for old Hadoop releases use them.
        "-lsr" => {
            eprintln!("lsr: DEPRECATED: Please use 'ls -R' instead.");
            shell.ls("lsr", &with_flag("-R", operands))
        }
        "-rmr" => {
            eprintln!("rmr: DEPRECATED: Please use '-rm -r' instead.");
            shell.rm("rmr", &with_flag("-r", operands))
        }
        "-du" => shell.du(operands),
        "-getmerge" => shell.getmerge(operands),
        "-mkdir" => shell.mkdir(operands),
        "-rm" => shell.rm("rm", operands),
        "-rmdir" => shell.rmdir(operands),
        "-expunge" => expunge(operands),
        "-head" => shell.head(operands),
        "-setrep" => shell.setrep(operands),
        "-moveFromLocal" => shell.put(name, operands),
        "-test" => shell.test(operands),
        "-put" | "-copyFromLocal" => shell.put(name, operands),
        "-get" | "-copyToLocal" => shell.get(name, operands),
        "-touchz" => shell.touchz(operands),
        "-stat" => shell.stat(operands),
        "-count" => shell.count(operands),
        "-tail" => shell.tail(operands),
        "-text" => shell.text(operands),
        "-chmod" => shell.chmod(operands),
        "-chown" => shell.chown(operands),
        "-chgrp" => shell.chgrp(operands),
        "-cp" => shell.cp(operands),
        "-mv" => shell.mv(operands),
        _ => return usage(&format!("{command}: Unknown command")),
    };
    match result {
        Ok(status) => status,
        Err(Usage(message)) => usage(&format!("-{name}: {message}")),
    }
}

/// `-expunge [-immediate] [-fs PATH]`: empties the trash, and sluice keeps none (`-rm`
/// deletes at once), so there is nothing to do; as Hadoop with its trash turned off (its
/// default), it says nothing and succeeds.
fn expunge(operands: &[String]) -> Result<u8, Usage> {
    let mut rest = operands;
    loop {
        match rest {
            [] => return Ok(0),
            [flag, tail @ ..] if flag == "-immediate" => rest = tail,
            [flag, _, tail @ ..] if flag == "-fs" => rest = tail,
            [flag] if flag == "-fs" => return Err(Usage("-fs needs a path".into())),
            [other, ..] => return Err(Usage(format!("Illegal option {other}"))),
        }
    }
}

/// `operands` with `flag` before them: a deprecated command as the command it stands for.
fn with_flag(flag: &str, operands: &[String]) -> Vec<String> {
    std::iter::once(flag.to_string())
        .chain(operands.iter().cloned())
        .collect()
}

/// A command line the shell cannot run: says why, then how to use it.
fn usage(message: &str) -> u8 {
    eprintln!("{message}");
    eprint!("{USAGE}");
    USAGE_STATUS
}

/// A command's options or operands are wrong.
struct Usage(String);

/// The options of a command (`-f`, `-r`...) split from its operands; an unknown option is a
/// usage error. Options come first; `-` alone is an operand (standard input or output).
fn options<'a>(
    operands: &'a [String],
    known: &[&str],
) -> Result<(Vec<&'a str>, &'a [String]), Usage> {
    let mut flags = Vec::new();
    let mut rest = operands;
    while let Some((first, tail)) = rest.split_first() {
        if !first.starts_with('-') || first == "-" {
            break;
        }
        if !known.contains(&first.as_str()) {
            return Err(Usage(format!("Illegal option {first}")));
        }
        flags.push(first.as_str());
        rest = tail;
    }
    Ok((flags, rest))
}

/// What a file or tree holds ([`Shell::content`]).
#[derive(Debug, Default, Clone, Copy)]
struct Content {
    /// Directories, the tree's own included.
    dirs: u64,
    /// Files.
    files: u64,
    /// Their bytes.
    bytes: u64,
    /// The space those take on the store (times the replication on HDFS).
    space: u64,
}

/// The stores of the shell's paths, and how plain paths are resolved.
struct Shell {
    stores: Stores,
    default_fs: Option<String>,
}

impl Shell {
    fn new(defines: &[(String, String)]) -> anyhow::Result<Shell> {
        let config = crate::stores::store_config(defines)?;
        let default_fs = config.default_fs().map(str::to_string);
        let stores = crate::stores::stores(&config, "fs");
        Ok(Shell { stores, default_fs })
    }

    /// Where `text` (an operand) is.
    fn location(&self, text: &str) -> Result<Location, IoError> {
        Location::resolve(
            text,
            self.default_fs.as_deref(),
            &crate::stores::user_name(),
        )
    }

    /// The location `text` names for a command that makes it (`-mkdir`, `-touchz`): a path
    /// with escapes but no wildcard names the path without them, as in Hadoop (`a\.b` makes
    /// `a.b`).
    fn named_location(&self, text: &str) -> Result<Location, IoError> {
        let location = self.location(text)?;
        if location.is_glob() && !location.has_wildcard() {
            sluice_io::check_escapes(text).map_err(|detail| IoError::BadPattern {
                pattern: text.to_string(),
                detail,
            })?;
            return self.location(&without_escapes(text));
        }
        Ok(location)
    }

    /// The destination `text` names, with the text it is shown by, as Hadoop's shell takes a
    /// destination on a store: a pattern (`out/d*`) stands for the one entry it matches, and a
    /// path with escapes alone (`a\b`) for what it names, or, when that is not there, for the
    /// path without them (to be made). `None`, after saying why as `cmd`, when it is not a
    /// location, or is a pattern matching no entry or more than one.
    fn destination_location(&self, cmd: &str, text: &str) -> Option<(Location, String)> {
        let location = match self.location(text) {
            Ok(location) => location,
            Err(e) => {
                say(cmd, text, &reason(&e));
                return None;
            }
        };
        if !is_pattern(&location) {
            return Some((location, text.to_string()));
        }
        match self.find(text) {
            Ok(found) => match found.as_slice() {
                [] if location.has_wildcard() || !location.is_glob() => {
                    say(cmd, text, "No such file or directory");
                    None
                }
                [] => {
                    let plain = without_escapes(text);
                    Some((self.location(&plain).ok()?, plain))
                }
                [one] => Some((one.location.clone(), shown(text, one))),
                _ => {
                    say(cmd, text, "Too many matches");
                    None
                }
            },
            Err(e) => {
                say(cmd, text, &reason(&e));
                None
            }
        }
    }

    /// The files and directories `text` names: its glob's matches in name order, as Hadoop
    /// lists them, or what is there (nothing: an empty list).
    fn find(&self, text: &str) -> Result<Vec<FileStatus>, IoError> {
        let location = self.location(text)?;
        let Some(alternatives) = sluice_io::brace_alternatives(&location)? else {
            if !location.is_glob() {
                return Ok(self.stores.status(&location)?.into_iter().collect());
            }
            return self.glob(&location);
        };
        // `{a,b}` is a glob too: what each alternative names, once each, in name order.
        let mut found = Vec::new();
        for alternative in alternatives {
            if alternative.is_glob() {
                found.extend(self.glob(&alternative)?);
            } else {
                found.extend(self.stores.status(&alternative)?);
            }
        }
        found.sort_by_key(|s| s.location.to_string());
        found.dedup_by(|a, b| a.location == b.location);
        Ok(found)
    }

    /// A glob's matches in name order, hidden names too (`_SUCCESS`), as Hadoop's shell
    /// matches them.
    fn glob(&self, location: &Location) -> Result<Vec<FileStatus>, IoError> {
        let mut found = sluice_io::glob_all_by_listing(&self.stores, location)?;
        found.sort_by_key(|s| s.location.to_string());
        Ok(found)
    }

    /// The files and directories `text` names ([`Shell::find`]); `None`
    /// (after saying so, as `cmd`) when nothing is.
    fn matches(&self, cmd: &str, text: &str) -> Option<Vec<FileStatus>> {
        match self.find(text) {
            Ok(found) if !found.is_empty() => Some(found),
            Ok(_) => {
                // A path of escapes alone is named as Hadoop names it, without them.
                let escapes_only = self
                    .location(text)
                    .is_ok_and(|l| l.is_glob() && !l.has_wildcard());
                let named = if escapes_only {
                    without_escapes(text)
                } else {
                    text.to_string()
                };
                say(cmd, &named, "No such file or directory");
                None
            }
            Err(e) => {
                say(cmd, text, &reason(&e));
                None
            }
        }
    }

    /// Visits what each of `paths` names (saying so, as `cmd`, for one that names nothing)
    /// with the name it is shown by; `visit` says whether the entry failed. Whether anything
    /// did.
    fn each_match(
        &self,
        cmd: &str,
        paths: &[String],
        mut visit: impl FnMut(FileStatus, String) -> bool,
    ) -> bool {
        let mut failed = false;
        for text in paths {
            let Some(found) = self.matches(cmd, text) else {
                failed = true;
                continue;
            };
            for status in found {
                let name = shown(text, &status);
                failed |= visit(status, name);
            }
        }
        failed
    }

    fn cat(&self, operands: &[String]) -> Result<u8, Usage> {
        let (_, paths) = options(operands, &["-ignoreCrc"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let failed = self.each_match("cat", paths, |status, name| {
            if status.is_dir {
                say("cat", &name, "Is a directory");
                return true;
            }
            let copied = self
                .stores
                .open_range(&status.location, 0, u64::MAX)
                .map_err(|e| reason(&e))
                .and_then(|mut reader| io::copy(&mut reader, &mut out).map_err(|e| e.to_string()));
            if let Err(why) = &copied {
                say("cat", &name, why);
            }
            copied.is_err()
        });
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    /// `-ls`: a directory's entries (a file itself), one line each as Hadoop prints them:
    /// permissions, replication, owner, group, length, modification time and path.
    /// `-ls`, or the deprecated `-lsr` (`cmd` names the command in messages).
    fn ls(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(
            operands,
            &["-C", "-d", "-h", "-q", "-R", "-t", "-S", "-r", "-u"],
        )?;
        let style = Style {
            paths_only: flags.contains(&"-C"),
            human: flags.contains(&"-h"),
            printable: flags.contains(&"-q"),
            access_time: flags.contains(&"-u"),
            order: if flags.contains(&"-t") {
                Order::Time
            } else if flags.contains(&"-S") {
                Order::Size
            } else {
                Order::Name
            },
            reverse: flags.contains(&"-r"),
        };
        let itself = flags.contains(&"-d");
        let recursive = flags.contains(&"-R") && !itself;
        let current = [".".to_string()];
        let paths = if paths.is_empty() {
            &current[..]
        } else {
            paths
        };
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let failed = self.each_match(cmd, paths, |status, name| {
            if status.is_dir && !itself {
                if let Err(e) = self.list_dir(&mut out, &status, &name, recursive, &style) {
                    say(cmd, &name, &reason(&e));
                    return true;
                }
            } else {
                let line = Listing::of(&[(status, name)], &style);
                let _ = out.write_all(line.as_bytes());
            }
            false
        });
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    /// Lists directory `dir` (shown as `name`) into `out`: "Found N items" unless recursive
    /// (or only paths are printed), then its entries in `style`'s order; with `recursive`,
    /// each directory's own entries follow its line.
    fn list_dir(
        &self,
        out: &mut dyn Write,
        dir: &FileStatus,
        name: &str,
        recursive: bool,
        style: &Style,
    ) -> Result<(), IoError> {
        let mut entries = self.stores.list(&dir.location)?;
        // Hadoop sorts a directory's entries (by name, time or size, each stably), but lists
        // recursively in the store's own order (a local directory's, HDFS's by name).
        if !recursive {
            style.sort(&mut entries);
        }
        let named: Vec<(FileStatus, String)> = entries
            .into_iter()
            .map(|e| {
                let child = e.location.file_name().unwrap_or_default().to_string_lossy();
                let shown = child_shown(name, &child);
                (e, shown)
            })
            .collect();
        if !recursive && !style.paths_only && !named.is_empty() {
            let _ = writeln!(out, "Found {} items", named.len());
        }
        if !recursive {
            let _ = out.write_all(Listing::of(&named, style).as_bytes());
            return Ok(());
        }
        // Widths over the whole directory, as Hadoop sets them per listing.
        let widths = Listing::widths(&named, style);
        let mut failed = None;
        for (entry, shown) in &named {
            let _ = out.write_all(widths.line(entry, shown, style).as_bytes());
            if entry.is_dir {
                // A directory that cannot be listed is said, and the listing goes on.
                if let Err(e) = self.list_dir(out, entry, shown, true, style) {
                    let _ = out.flush();
                    say("ls", shown, &reason(&e));
                    failed = Some(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// `-du`: the bytes of each entry of a directory (with `-s`, of the directory itself) and
    /// the space they take on the store (times their replication on HDFS), as Hadoop prints
    /// them: columns left-aligned, two spaces apart.
    fn du(&self, operands: &[String]) -> Result<u8, Usage> {
        // (`-x`, leaving out HDFS snapshots, changes nothing: sluice's listings never show
        // them.)
        let (flags, paths) = options(operands, &["-s", "-h", "-v", "-x"])?;
        let summary = flags.contains(&"-s");
        let size = |bytes: u64| {
            if flags.contains(&"-h") {
                info::human_size(bytes)
            } else {
                bytes.to_string()
            }
        };
        let current = [".".to_string()];
        let paths = if paths.is_empty() {
            &current[..]
        } else {
            paths
        };
        let mut rows: Vec<[String; 3]> = Vec::new();
        if flags.contains(&"-v") {
            // The header counts in the columns' widths, as a row does.
            rows.push([
                "SIZE".into(),
                "DISK_SPACE_CONSUMED_WITH_ALL_REPLICAS".into(),
                "FULL_PATH_NAME".into(),
            ]);
        }
        let failed = self.each_match("du", paths, |status, name| {
            // The store's own order, as Hadoop lists a directory's entries here.
            let entries = if status.is_dir && !summary {
                match self.stores.list(&status.location) {
                    Ok(entries) => entries
                        .into_iter()
                        .map(|e| {
                            let child = e.location.file_name().unwrap_or_default();
                            let shown = child_shown(&name, &child.to_string_lossy());
                            (e, shown)
                        })
                        .collect(),
                    Err(e) => {
                        say("du", &name, &reason(&e));
                        return true;
                    }
                }
            } else {
                vec![(status, name)]
            };
            let mut failed = false;
            for (entry, shown) in entries {
                match self.content(&entry) {
                    Ok(c) => rows.push([size(c.bytes), size(c.space), shown]),
                    Err(e) => {
                        say("du", &shown, &reason(&e));
                        failed = true;
                    }
                }
            }
            failed
        });
        let width = |column: usize| rows.iter().map(|r| r[column].len()).max().unwrap_or(0);
        let (w0, w1) = (width(0), width(1));
        let stdout = io::stdout();
        let mut out = stdout.lock();
        for [len, space, path] in &rows {
            let _ = writeln!(out, "{len:<w0$}  {space:<w1$}  {path}");
        }
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    /// What the file or tree `status` describes holds: `-du`'s bytes and space, `-count`'s
    /// directories, files and bytes.
    fn content(&self, status: &FileStatus) -> Result<Content, IoError> {
        if !status.is_dir {
            let copies = status
                .ownership
                .as_ref()
                .map_or(1, |o| u64::from(o.replication.max(1)));
            return Ok(Content {
                dirs: 0,
                files: 1,
                bytes: status.len,
                space: status.len.saturating_mul(copies),
            });
        }
        let mut total = Content {
            dirs: 1,
            ..Content::default()
        };
        for entry in self.stores.list(&status.location)? {
            let part = self.content(&entry)?;
            total.dirs = total.dirs.saturating_add(part.dirs);
            total.files = total.files.saturating_add(part.files);
            total.bytes = total.bytes.saturating_add(part.bytes);
            total.space = total.space.saturating_add(part.space);
        }
        Ok(total)
    }

    /// `-getmerge`: the files `src` names (a directory's files, by name; not its
    /// subdirectories) one after another into local file `localdst`, each followed by a
    /// newline with `-nl`; empty ones left out with `-skip-empty-file`.
    fn getmerge(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, operands) = options(operands, &["-nl", "-skip-empty-file"])?;
        let newline = flags.contains(&"-nl");
        let skip_empty = flags.contains(&"-skip-empty-file");
        let [sources @ .., dst_text] = operands else {
            return Err(Usage("Not enough arguments: expected 2".into()));
        };
        if sources.is_empty() {
            return Err(Usage("Not enough arguments: expected 2".into()));
        }
        let mut files: Vec<FileStatus> = Vec::new();
        for text in sources {
            let Some(found) = self.matches("getmerge", text) else {
                return Ok(1);
            };
            for status in found {
                if !status.is_dir {
                    files.push(status);
                    continue;
                }
                match self.stores.list(&status.location) {
                    Ok(mut entries) => {
                        entries.retain(|e| !e.is_dir);
                        entries.sort_by_key(|e| e.location.to_string());
                        files.extend(entries);
                    }
                    Err(e) => {
                        say("getmerge", text, &reason(&e));
                        return Ok(1);
                    }
                }
            }
        }
        let dst = Location::parse(dst_text)
            .ok()
            .filter(|l| l.as_local_path().is_some())
            .unwrap_or_else(|| Location::from_path(dst_text));
        // Writing over one of its own sources would lose it, or read its own output forever.
        if files.iter().any(|f| same_local_file(&f.location, &dst)) {
            say("getmerge", dst_text, "is one of the files to merge");
            return Ok(1);
        }
        let temp = copying(&dst);
        let local = Stores::local();
        let merged = local
            .create(&temp)
            .map_err(|e| ("getmerge", dst_text.to_string(), reason(&e)))
            .and_then(|writer| {
                let mut out = io::BufWriter::new(writer);
                let written = files
                    .iter()
                    .filter(|f| !(skip_empty && f.len == 0))
                    .try_for_each(|status| {
                        let source = status.location.to_string();
                        let mut reader = self
                            .stores
                            .open_range(&status.location, 0, u64::MAX)
                            .map_err(|e| ("getmerge", source.clone(), reason(&e)))?;
                        io::copy(&mut reader, &mut out)
                            .map_err(|e| ("getmerge", source.clone(), io_reason(&e)))?;
                        if newline {
                            out.write_all(b"\n")
                                .map_err(|e| ("getmerge", dst_text.to_string(), io_reason(&e)))?;
                        }
                        Ok(())
                    })
                    .and_then(|()| {
                        out.into_inner()
                            .map_err(|e| io_reason(e.error()))
                            .and_then(|w| w.finish().map(drop).map_err(|e| io_reason(&e)))
                            .map_err(|why| ("getmerge", dst_text.to_string(), why))
                    });
                if written.is_err() {
                    let _ = local.delete(&temp);
                }
                written
            })
            .and_then(|()| {
                local.rename(&temp, &dst).map_err(|e| {
                    let _ = local.delete(&temp);
                    ("getmerge", dst_text.to_string(), reason(&e))
                })
            });
        match merged {
            Ok(()) => Ok(0),
            Err((cmd, path, why)) => {
                say(cmd, &path, &why);
                Ok(1)
            }
        }
    }

    fn mkdir(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(operands, &["-p"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let parents = flags.contains(&"-p");
        let mut failed = false;
        for text in paths {
            let outcome = self.named_location(text).and_then(|location| {
                match self.stores.status(&location)? {
                    Some(status) if status.is_dir && parents => return Ok(Outcome::Done),
                    Some(status) if status.is_dir => return Ok(Outcome::Failed("File exists")),
                    Some(_) => return Ok(Outcome::Failed("Is not a directory")),
                    None => {}
                }
                if !parents {
                    if let Some(parent) = missing_parent(&self.stores, &location)? {
                        // Hadoop names the missing parent by its full URI.
                        say("mkdir", &full_name(&parent), "No such file or directory");
                        return Ok(Outcome::Reported);
                    }
                }
                self.stores.make_dirs(&location).map(|()| Outcome::Done)
            });
            failed |= report(outcome, "mkdir", text);
        }
        Ok(u8::from(failed))
    }

    /// `-rm`, or the deprecated `-rmr` (`cmd` names the command in messages).
    fn rm(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        // Options one by one, as Hadoop takes them (`-rf` is refused there too).
        // (`-safely` is refused: Hadoop's asks before deleting many files, sluice cannot.)
        let (flags, paths) = options(operands, &["-f", "-r", "-R", "-skipTrash"])?;
        let force = flags.contains(&"-f");
        let recursive = flags.iter().any(|f| matches!(*f, "-r" | "-R"));
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let mut failed = false;
        for text in paths {
            let found = if force {
                // Nothing there is no failure with -f, and says nothing.
                match self.find(text) {
                    Ok(found) => found,
                    Err(e) => {
                        say(cmd, text, &reason(&e));
                        failed = true;
                        continue;
                    }
                }
            } else {
                let Some(found) = self.matches(cmd, text) else {
                    failed = true;
                    continue;
                };
                found
            };
            for status in found {
                let name = shown(text, &status);
                let Some(target) = deletable(&status.location) else {
                    say(cmd, &name, "Cannot delete the root of a file system");
                    failed = true;
                    continue;
                };
                if status.is_dir && !recursive {
                    say(cmd, &name, "Is a directory");
                    failed = true;
                    continue;
                }
                let deleted = if recursive {
                    self.stores.delete_tree(&target)
                } else {
                    self.stores.delete(&target)
                };
                match deleted {
                    Ok(true) => println!("Deleted {name}"),
                    Ok(false) => {
                        say(cmd, &name, "Input/output error");
                        failed = true;
                    }
                    Err(e) => {
                        say(cmd, &name, &reason(&e));
                        failed = true;
                    }
                }
            }
        }
        Ok(u8::from(failed))
    }

    fn test(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flag, text) = match operands {
            [flag, text] => (flag, text),
            [_] => return Err(Usage("Not enough arguments: expected 1 but got 0".into())),
            [] => return Err(Usage("No test flag given".into())),
            [_, _, extra, ..] => return Err(Usage(format!("Too many arguments: {extra}"))),
        };
        // Lengths as -ls shows them (a local directory's is the file system's).
        let check: fn(&FileStatus) -> bool = match flag.as_str() {
            "-e" => |_| true,
            "-d" => |s| s.is_dir,
            "-f" => |s| !s.is_dir,
            "-s" => |s| owned(s).len > 0,
            "-z" => |s| owned(s).len == 0,
            other => return Err(Usage(format!("Illegal option {other}"))),
        };
        match self.find(text) {
            Ok(found) => Ok(u8::from(!found.first().is_some_and(check))),
            Err(e) => {
                say("test", text, &reason(&e));
                Ok(1)
            }
        }
    }

    fn touchz(&self, operands: &[String]) -> Result<u8, Usage> {
        if operands.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let mut failed = false;
        for text in operands {
            let outcome = self.named_location(text).and_then(|location| {
                match self.stores.status(&location)? {
                    Some(status) if status.is_dir => return Ok(Outcome::Failed("Is a directory")),
                    Some(status) if status.len > 0 => {
                        return Ok(Outcome::Failed("Not a zero-length file"))
                    }
                    Some(_) => return Ok(Outcome::Done),
                    None => {}
                }
                if missing_parent(&self.stores, &location)?.is_some() {
                    // Hadoop adds the file's full name.
                    let why = format!("No such file or directory: `{}'", full_name(&location));
                    say("touchz", text, &why);
                    return Ok(Outcome::Reported);
                }
                self.stores
                    .create(&location)?
                    .finish()
                    .map_err(|e| IoError::Write {
                        path: location.error_path(),
                        source: e,
                    })?;
                Ok(Outcome::Done)
            });
            failed |= report(outcome, "touchz", text);
        }
        Ok(u8::from(failed))
    }

    /// `-put`/`-copyFromLocal`: local files (`-` for standard input) and directories to `dst`.
    fn put(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        // (`-p`, keeping times and permissions, is refused: the stores set no times.)
        let (flags, operands) = options(operands, &["-f", "-l", "-d"])?;
        let overwrite = flags.contains(&"-f");
        let Some((dst_text, sources)) = operands.split_last().filter(|(_, s)| !s.is_empty()) else {
            return Err(Usage("Not enough arguments: expected 2".into()));
        };
        let local = Stores::local();
        let Some((dst, dst_shown)) = self.destination_location(cmd, dst_text) else {
            return Ok(1);
        };
        let dst_text = &dst_shown;
        let Some(dst_is_dir) = self.destination(cmd, &self.stores, &dst, dst_text, sources.len())
        else {
            return Ok(1);
        };
        let mut failed = false;
        for source in sources {
            if source == "-" {
                // Into a directory, as a file named `-`, as Hadoop does.
                let (target, target_text) = if dst_is_dir {
                    (
                        dst.join("-"),
                        format!("{}/-", dst_text.trim_end_matches('/')),
                    )
                } else {
                    (dst.clone(), dst_text.clone())
                };
                if let Err(why) = self.copy_reader(&mut io::stdin().lock(), &target, overwrite) {
                    say(cmd, &target_text, &why);
                    failed = true;
                }
                continue;
            }
            let from = local_location(source);
            let status = match local.status(&from) {
                Ok(Some(status)) => status,
                Ok(None) => {
                    say(cmd, source, "No such file or directory");
                    failed = true;
                    continue;
                }
                Err(e) => {
                    say(cmd, source, &reason(&e));
                    failed = true;
                    continue;
                }
            };
            let (target, target_text) = into(&dst, dst_text, dst_is_dir, &from);
            let copy_failed = self.copy_top(
                cmd,
                (&local, &status, source),
                (&self.stores, &target, &target_text),
                overwrite,
            );
            failed |= copy_failed;
            if cmd == "moveFromLocal" && !copy_failed {
                // Moved: the local source goes once its copy is whole, as in Hadoop.
                if let Err(e) = local.delete_tree(&from) {
                    say(cmd, source, &reason(&e));
                    failed = true;
                }
            }
        }
        Ok(u8::from(failed))
    }

    /// `-rmdir [--ignore-fail-on-non-empty] DIR...`: empty directories removed.
    fn rmdir(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(operands, &["--ignore-fail-on-non-empty"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let ignore_non_empty = !flags.is_empty();
        let failed = self.each_match("rmdir", paths, |status, name| {
            let outcome = if !status.is_dir {
                Ok(Outcome::Failed("Is not a directory"))
            } else {
                self.stores.list(&status.location).and_then(|entries| {
                    if !entries.is_empty() {
                        return Ok(if ignore_non_empty {
                            Outcome::Done
                        } else {
                            Outcome::Failed("Directory is not empty")
                        });
                    }
                    self.stores.delete_tree(&status.location)?;
                    Ok(Outcome::Done)
                })
            };
            report(outcome, "rmdir", &name)
        });
        Ok(u8::from(failed))
    }

    /// `-get`/`-copyToLocal`: files and directories of the stores to local `dst`.
    fn get(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        let (flags, operands) = options(operands, &["-f", "-ignoreCrc", "-crc"])?;
        let overwrite = flags.contains(&"-f");
        let here = [".".to_string()];
        let (dst_text, sources) = match operands {
            [] => return Err(Usage("Not enough arguments: expected 1 but got 0".into())),
            // One source: into the current directory, as Hadoop copies it.
            [source] => (&here[0], std::slice::from_ref(source)),
            [sources @ .., dst] => (dst, sources),
        };
        let dst = local_location(dst_text);
        Ok(self.copy_matches(cmd, sources, (&Stores::local(), &dst, dst_text), overwrite))
    }

    /// Whether `dst` (given as `dst_text`) on `to` is a directory to copy `count` sources
    /// into; `None`, having said why, when it cannot take them (several sources need an
    /// existing directory) or cannot be looked at.
    fn destination(
        &self,
        cmd: &str,
        to: &Stores,
        dst: &Location,
        dst_text: &str,
        count: usize,
    ) -> Option<bool> {
        let status = match to.status(dst) {
            Ok(status) => status,
            Err(e) => {
                say(cmd, dst_text, &reason(&e));
                return None;
            }
        };
        let is_dir = status.as_ref().is_some_and(|s| s.is_dir);
        if count > 1 && !is_dir {
            let why = match status {
                None => "No such file or directory",
                Some(_) => "Is not a directory",
            };
            say(cmd, dst_text, why);
            return None;
        }
        Some(is_dir)
    }

    /// Copies one operand: `source` (what `status` describes on the first store, named as
    /// given) to `target` on the second (named `target_text`), saying what failed; whether
    /// anything did. A directory is not copied into itself.
    fn copy_top(
        &self,
        cmd: &str,
        (from, status, source): (&Stores, &FileStatus, &str),
        (to, target, target_text): (&Stores, &Location, &str),
        overwrite: bool,
    ) -> bool {
        if status.is_dir && inside(target, &status.location) {
            eprintln!("{cmd}: `{source}' to `{target_text}': is a subdirectory of itself");
            return true;
        }
        let copy = Copy {
            from,
            to,
            overwrite,
        };
        let mut errors = Vec::new();
        match missing_parent(to, target) {
            Ok(Some(_)) => {
                // Hadoop adds the target's full name.
                let full = full_name(target);
                errors.push((
                    target_text.to_string(),
                    format!("No such file or directory: `{full}'"),
                ));
            }
            Ok(None) => copy.tree(status, target, target_text, &mut errors),
            Err(e) => errors.push((target_text.to_string(), reason(&e))),
        }
        for (name, why) in &errors {
            say(cmd, name, why);
        }
        !errors.is_empty()
    }

    /// Copies standard input to `target` on the shell's stores.
    fn copy_reader(
        &self,
        reader: &mut dyn Read,
        target: &Location,
        overwrite: bool,
    ) -> Result<(), String> {
        match self.stores.status(target).map_err(|e| reason(&e))? {
            Some(existing) if existing.is_dir => return Err("Is a directory".into()),
            Some(_) if !overwrite => return Err("File exists".into()),
            _ => {}
        }
        // Unlike a copy of a file, Hadoop's copy of standard input makes the missing parents
        // (its stream goes through `FileSystem.create`, which makes them).
        if let Some(parent) = target.parent() {
            if missing_parent(&self.stores, target)
                .map_err(|e| reason(&e))?
                .is_some()
            {
                self.stores.make_dirs(&parent).map_err(|e| reason(&e))?;
            }
        }
        write_whole(&self.stores, reader, target)
    }
}

/// A copy between two stores.
struct Copy<'a> {
    from: &'a Stores,
    to: &'a Stores,
    /// Whether an existing target file is replaced.
    overwrite: bool,
}

impl Copy<'_> {
    /// Copies what `status` describes to `target` (named `target_text`): a file, or a
    /// directory with everything below it, going on past an entry that fails (each failure
    /// added to `errors`, named by the path it concerns).
    fn tree(
        &self,
        status: &FileStatus,
        target: &Location,
        target_text: &str,
        errors: &mut Vec<(String, String)>,
    ) {
        let mut fail = |name: &str, why: String| errors.push((name.to_string(), why));
        if !status.is_dir {
            match self.to.status(target) {
                Err(e) => return fail(target_text, reason(&e)),
                Ok(Some(existing)) if existing.is_dir => {
                    return fail(target_text, "Is a directory".into())
                }
                Ok(Some(_)) if !self.overwrite => return fail(target_text, "File exists".into()),
                _ => {}
            }
            let source = status.location.to_string();
            let mut reader = match self.from.open_range(&status.location, 0, u64::MAX) {
                Ok(reader) => reader,
                Err(e) => return fail(&source, reason(&e)),
            };
            if let Err(why) = write_whole(self.to, &mut reader, target) {
                fail(target_text, why);
            }
            return;
        }
        match self.to.status(target) {
            Err(e) => return fail(target_text, reason(&e)),
            Ok(Some(existing)) if !existing.is_dir => {
                return fail(target_text, "File exists".into())
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                if let Err(e) = self.to.make_dirs(target) {
                    return fail(target_text, reason(&e));
                }
            }
        }
        let mut entries = match self.from.list(&status.location) {
            Ok(entries) => entries,
            Err(e) => return fail(&status.location.to_string(), reason(&e)),
        };
        entries.sort_by_key(|e| e.location.to_string());
        for entry in entries {
            let name = entry.location.file_name().unwrap_or_default().to_owned();
            let child = target.join(&name);
            let child_text = format!("{target_text}/{}", name.to_string_lossy());
            self.tree(&entry, &child, &child_text, errors);
        }
    }
}

/// Writes what `reader` reads to `target` on `to` as Hadoop's shell does: under a temporary
/// name beside it (`NAME._COPYING_`), moved over `target` only once whole, so that a copy
/// cut short leaves the old file, and readers never see half a file.
fn write_whole(to: &Stores, reader: &mut dyn Read, target: &Location) -> Result<(), String> {
    let temp = copying(target);
    // A copy killed before left its temporary file.
    let _ = to.delete(&temp);
    let mut writer = to.create(&temp).map_err(|e| reason(&e))?;
    let copied = io::copy(reader, &mut writer)
        .map_err(|e| io_reason(&e))
        .and_then(|_| writer.finish().map(drop).map_err(|e| io_reason(&e)));
    if let Err(why) = copied {
        let _ = to.delete(&temp);
        return Err(why);
    }
    to.rename(&temp, target).map_err(|e| {
        let _ = to.delete(&temp);
        reason(&e)
    })
}

/// Where a copy to `target` is written before it takes `target`'s place.
fn copying(target: &Location) -> Location {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let temp = format!("{name}._COPYING_");
    match target.parent() {
        Some(parent) => parent.join(temp),
        None => target.join(temp),
    }
}

/// A local operand: a plain path or a `file:` URI.
fn local_location(text: &str) -> Location {
    Location::parse(text)
        .ok()
        .filter(|l| l.as_local_path().is_some())
        .unwrap_or_else(|| Location::from_path(text))
}

/// A local location's path with its parent's links and `..` resolved, its own name kept (so
/// that a link is itself, not what it names); the path itself when it ends in `..`; `None`
/// where nothing can be resolved.
fn real_local(location: &Location) -> Option<PathBuf> {
    let path = std::path::absolute(location.as_local_path()?).ok()?;
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !path.ends_with("..") => {
            parent.canonicalize().ok().map(|parent| parent.join(name))
        }
        _ => path.canonicalize().ok(),
    }
}

/// Whether `target` is `dir` or lies below it (local locations only: elsewhere a copy cannot
/// be its own source).
fn inside(target: &Location, dir: &Location) -> bool {
    let (Some(dir), Some(target)) = (real_local(dir), target.as_local_path()) else {
        return false;
    };
    // The target need not exist: its nearest existing ancestor is resolved.
    let absolute = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while existing.canonicalize().is_err() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return false,
        }
    }
    let Ok(mut resolved) = existing.canonicalize() else {
        return false;
    };
    resolved.extend(rest.iter().rev());
    resolved.starts_with(&dir)
}

/// Whether local locations `a` and `b` are the same file.
fn same_local_file(a: &Location, b: &Location) -> bool {
    matches!((real_local(a), real_local(b)), (Some(a), Some(b)) if a == b)
}

/// What `-rm` deletes for `location`: the entry itself (a link, not what it names), with its
/// parent's links and `..` resolved; `None` for the root of a file system (`/`, `/..`,
/// `hdfs://nn/`, a bucket), which is never deleted.
fn deletable(location: &Location) -> Option<Location> {
    if location.as_local_path().is_some() {
        let real = real_local(location)?;
        return real.parent().is_some().then(|| Location::from_path(real));
    }
    let path = location.path_str().unwrap_or_default();
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    (!parts.is_empty() && !parts.contains(&"..")).then(|| location.clone())
}

/// How a command's outcome for one operand ended.
enum Outcome {
    /// Done.
    Done,
    /// Failed for this reason, to be said with the operand.
    Failed(&'static str),
    /// Failed, and the message is out already.
    Reported,
}

/// Says what failed with operand `text` of `cmd`; whether anything did.
fn report(outcome: Result<Outcome, IoError>, cmd: &str, text: &str) -> bool {
    {
        match outcome {
            Ok(Outcome::Done) => false,
            Ok(Outcome::Failed(why)) => {
                say(cmd, text, why);
                true
            }
            Ok(Outcome::Reported) => true,
            Err(e) => {
                say(cmd, text, &reason(&e));
                true
            }
        }
    }
}

/// The column widths of one listing, as Hadoop's `ls` sets them: at least 3 for the
/// replication and 10 for the length, and the longest owner and group.
struct Listing {
    replication: usize,
    owner: usize,
    group: usize,
    len: usize,
}

/// Owner, group, permission bits, replication and length of an entry to list.
struct Owned {
    owner: String,
    group: String,
    permission: u16,
    replication: u32,
    /// The length shown: a local directory's is the file system's (4096 on most), as
    /// Hadoop shows it.
    len: u64,
}

/// How `-ls` lists: its options.
struct Style {
    /// `-C`: paths only.
    paths_only: bool,
    /// `-h`: lengths as `12.1 K`.
    human: bool,
    /// `-q`: `?` for each character of a path that cannot be printed.
    printable: bool,
    /// `-u`: the last access shown (and, with `-t`, sorted by) instead of the modification.
    access_time: bool,
    /// The order of a directory's entries.
    order: Order,
    /// `-r`: that order reversed.
    reverse: bool,
}

/// The order of a directory's entries in `-ls`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// By path.
    Name,
    /// `-t`: newest first.
    Time,
    /// `-S`: largest first.
    Size,
}

impl Style {
    /// Sorts a directory's entries as Hadoop's `Ls` does: stably, times compared to the
    /// millisecond, and each order reversed whole by `-r`.
    fn sort(&self, entries: &mut [FileStatus]) {
        // By name first: entries equal in time or size keep that order, reversed or not (-r
        // turns Hadoop's comparison around, and equals stay equal).
        entries.sort_by_key(|e| e.location.to_string());
        match (self.order, self.reverse) {
            (Order::Name, false) => {}
            (Order::Name, true) => entries.reverse(),
            (Order::Time, false) => entries.sort_by_key(|e| std::cmp::Reverse(self.millis(e))),
            (Order::Time, true) => entries.sort_by_key(|e| self.millis(e)),
            (Order::Size, false) => entries.sort_by_key(|e| std::cmp::Reverse(owned(e).len)),
            (Order::Size, true) => entries.sort_by_key(|e| owned(e).len),
        }
    }

    /// The time an entry is shown with (and sorted by), if the store has one.
    fn time(&self, entry: &FileStatus) -> Option<std::time::SystemTime> {
        if self.access_time {
            entry.accessed
        } else {
            entry.modified
        }
    }

    /// That time in milliseconds, as Hadoop compares times (0 where there is none).
    fn millis(&self, entry: &FileStatus) -> u128 {
        self.time(entry)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis())
    }

    /// A length as this listing shows it.
    fn length(&self, len: u64) -> String {
        if self.human {
            info::human_size(len)
        } else {
            len.to_string()
        }
    }

    /// A path as this listing shows it.
    fn path(&self, shown: &str) -> String {
        if self.printable {
            shown
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect()
        } else {
            shown.to_string()
        }
    }
}

impl Listing {
    /// The lines of `entries` (each with the path it is shown as).
    fn of(entries: &[(FileStatus, String)], style: &Style) -> String {
        let widths = Listing::widths(entries, style);
        entries
            .iter()
            .map(|(entry, shown)| widths.line(entry, shown, style))
            .collect()
    }

    fn widths(entries: &[(FileStatus, String)], style: &Style) -> Listing {
        let mut widths = Listing {
            replication: 3,
            owner: 0,
            group: 0,
            len: 10,
        };
        for (entry, _) in entries {
            let owned = owned(entry);
            widths.replication = widths.replication.max(owned.replication.to_string().len());
            widths.owner = widths.owner.max(owned.owner.chars().count());
            widths.group = widths.group.max(owned.group.chars().count());
            widths.len = widths.len.max(style.length(owned.len).len());
        }
        widths
    }

    fn line(&self, entry: &FileStatus, shown: &str, style: &Style) -> String {
        let shown = style.path(shown);
        if style.paths_only {
            return format!("{shown}\n");
        }
        let owned = owned(entry);
        let kind = if entry.is_dir { 'd' } else { '-' };
        let replication = if entry.is_dir {
            "-".to_string()
        } else {
            owned.replication.to_string()
        };
        let time = style.time(entry).map_or_else(String::new, |time| {
            chrono::DateTime::<chrono::Local>::from(time)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        });
        format!(
            "{kind}{} {replication:>rw$} {:<ow$} {:<gw$} {:>lw$} {time} {shown}\n",
            permissions(owned.permission),
            owned.owner,
            owned.group,
            style.length(owned.len),
            rw = self.replication,
            ow = self.owner,
            gw = self.group,
            lw = self.len,
        )
    }
}

/// An entry's owner, group, permission and replication: the store's where it reports them
/// (HDFS), the file's own for a local one, and for an object store what Hadoop's S3 client
/// shows (the user, read and write for all, one copy).
fn owned(entry: &FileStatus) -> Owned {
    if let Some(o) = &entry.ownership {
        return Owned {
            owner: o.owner.clone(),
            group: o.group.clone(),
            permission: o.permission,
            replication: o.replication,
            len: entry.len,
        };
    }
    if let Some(meta) = entry
        .location
        .as_local_path()
        .and_then(|path| std::fs::metadata(path).ok())
    {
        use std::os::unix::fs::MetadataExt as _;
        let uid = nix::unistd::Uid::from_raw(meta.uid());
        let gid = nix::unistd::Gid::from_raw(meta.gid());
        return Owned {
            owner: nix::unistd::User::from_uid(uid)
                .ok()
                .flatten()
                .map_or_else(|| meta.uid().to_string(), |u| u.name),
            group: nix::unistd::Group::from_gid(gid)
                .ok()
                .flatten()
                .map_or_else(|| meta.gid().to_string(), |g| g.name),
            // The sticky bit and the low 9 bits, which fit.
            permission: u16::try_from(meta.mode() & 0o1777).unwrap_or(0),
            replication: 1,
            len: meta.len(),
        };
    }
    let user = crate::stores::user_name();
    Owned {
        owner: user.clone(),
        group: user,
        permission: if entry.is_dir { 0o777 } else { 0o666 },
        replication: 1,
        len: entry.len,
    }
}

/// `rwxr-xr-x` for permission bits `0o755`; with the sticky bit the last is `t` (`T` without
/// execute for others), as Hadoop shows it.
fn permissions(bits: u16) -> String {
    (0..9)
        .map(|i| {
            let set = bits & (1 << (8 - i)) != 0;
            match (i, set) {
                (8, set) if bits & 0o1000 != 0 => {
                    if set {
                        't'
                    } else {
                        'T'
                    }
                }
                (_, false) => '-',
                (_, true) => ['r', 'w', 'x'][i % 3],
            }
        })
        .collect()
}

/// The target of copying `source` to `dst` (given as `dst_text`): inside it, under the
/// source's name, when it is a directory; else `dst` itself.
fn into(dst: &Location, dst_text: &str, dst_is_dir: bool, source: &Location) -> (Location, String) {
    match source.file_name().filter(|_| dst_is_dir) {
        Some(name) => (
            dst.join(name),
            child_shown(&normal(dst_text), &name.to_string_lossy()),
        ),
        None => (dst.clone(), normal(dst_text)),
    }
}

/// `location`'s parent directory if it does not exist, where the store has directories that
/// must exist before anything goes in them (not an object store's prefixes). A relative
/// local path's parent may be the working directory, which exists.
fn missing_parent(stores: &Stores, location: &Location) -> Result<Option<Location>, IoError> {
    if !matches!(
        location.scheme(),
        sluice_io::Scheme::File | sluice_io::Scheme::Hdfs
    ) {
        return Ok(None);
    }
    let Some(parent) = location.parent() else {
        return Ok(None);
    };
    if parent.path_str().is_some_and(str::is_empty) {
        return Ok(None);
    }
    let exists = stores.status(&parent)?.is_some_and(|s| s.is_dir);
    Ok((!exists).then_some(parent))
}

/// `text` with each `\` escape replaced by the character it escapes, as Hadoop's shell names
/// a path that holds escapes but no wildcard when nothing is there.
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next().or(Some('\\'))),
            other => out.push(other),
        }
    }
    out
}

/// Whether `location` is a glob or holds `{a,b}` alternatives.
fn is_pattern(location: &Location) -> bool {
    location.is_glob() || sluice_io::brace_alternatives(location).is_ok_and(|a| a.is_some())
}

/// How Hadoop names a match of an operand: as given, unless a glob expanded it.
fn shown(text: &str, status: &FileStatus) -> String {
    if Location::parse(text).is_ok_and(|l| is_pattern(&l)) {
        normal(&status.location.to_string())
    } else {
        normal(text)
    }
}

/// A path as Hadoop's `Path` writes it (`URI.normalize`): `.` segments and doubled slashes
/// gone, `a/..` resolved, no slash at the end; a scheme and authority (`hdfs://nn:8020`,
/// `file:`) kept as they are. `./d` is `d`, `d//e/../f/` is `d/f`, `./` is `.`.
fn normal(text: &str) -> String {
    let (prefix, path) = match text.find("://") {
        Some(at) => {
            let rest = &text[at + 3..];
            let path_at = at + 3 + rest.find('/').unwrap_or(rest.len());
            text.split_at(path_at)
        }
        None if text.starts_with("file:") => text.split_at("file:".len()),
        None => ("", text),
    };
    if path.is_empty() || text == "-" {
        return text.to_string();
    }
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("{prefix}/{joined}"),
        (false, true) => format!("{prefix}."),
        (false, false) => format!("{prefix}{joined}"),
    }
}

/// How a directory's entry `child` is shown under the directory shown as `parent`: `child`
/// alone under `.`, as Hadoop shows the entries of the current directory.
fn child_shown(parent: &str, child: &str) -> String {
    if parent == "." {
        child.to_string()
    } else {
        format!("{}/{child}", parent.trim_end_matches('/'))
    }
}

/// A location by its full name, as Hadoop names a missing parent (`file:/abs/path`).
fn full_name(location: &Location) -> String {
    match location.as_local_path() {
        Some(path) => format!(
            "file:{}",
            std::path::absolute(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
        ),
        None => location.to_string(),
    }
}

/// A store's error as the reason Hadoop's shell gives, without the path (the message names
/// the operand).
fn reason(error: &IoError) -> String {
    if let IoError::BadPattern { detail, .. } = error {
        // Hadoop names no operand here: `ls: Illegal file pattern: ...`.
        return format!("Illegal file pattern: {detail}");
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io_reason(io);
        }
        source = e.source();
    }
    error.to_string()
}

/// An operating system's error as Hadoop words it, without `(os error N)`.
fn io_reason(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "No such file or directory".into(),
        io::ErrorKind::PermissionDenied => "Permission denied".into(),
        io::ErrorKind::AlreadyExists => "File exists".into(),
        io::ErrorKind::IsADirectory => "Is a directory".into(),
        io::ErrorKind::NotADirectory => "Is not a directory".into(),
        _ => {
            let text = error.to_string();
            match text.rfind(" (os error ") {
                Some(cut) if text.ends_with(')') => text[..cut].to_string(),
                _ => text,
            }
        }
    }
}

/// Prints Hadoop's message for an operand: `cmd: `path': why`.
fn say(cmd: &str, path: &str, why: &str) {
    if why.starts_with("Checksum error: ") || why.starts_with("Illegal file pattern: ") {
        // Hadoop's checksum error names the file itself, and a bad pattern nothing.
        eprintln!("{cmd}: {why}");
    } else {
        eprintln!("{cmd}: `{path}': {why}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_of_a_file_system_is_never_deletable() {
        for root in ["/", "/..", "/tmp/..", "/tmp/../..", "file:///", "//"] {
            let location = Location::parse(root).unwrap();
            assert!(deletable(&location).is_none(), "{root}");
        }
        for root in [
            "hdfs://nn:8020/",
            "hdfs://nn:8020/a/..",
            "s3://bucket/",
            "s3://bucket",
        ] {
            let location = Location::parse(root).unwrap();
            assert!(deletable(&location).is_none(), "{root}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let with_dot = format!("{}/./f", dir.path().display());
        let found = deletable(&Location::parse(&with_dot).unwrap()).unwrap();
        assert_eq!(
            found.as_local_path().unwrap(),
            file.canonicalize().unwrap().as_path()
        );
        assert!(deletable(&Location::parse("hdfs://nn:8020/out").unwrap()).is_some());
        assert!(deletable(&Location::parse("s3://bucket/out").unwrap()).is_some());
    }

    #[test]
    fn paths_are_written_as_hadoops_path_writes_them() {
        for (given, written) in [
            ("d", "d"),
            ("./d", "d"),
            ("d/", "d"),
            ("d//sub/", "d/sub"),
            ("d/../d/x", "d/x"),
            ("./", "."),
            (".", "."),
            ("..", ".."),
            ("../x/./y", "../x/y"),
            ("/a//b/../c", "/a/c"),
            ("/", "/"),
            ("file:///tmp//x/./y", "file:///tmp/x/y"),
            ("file:/tmp/x/", "file:/tmp/x"),
            ("hdfs://nn:8020/a/../b", "hdfs://nn:8020/b"),
            ("hdfs://nn:8020", "hdfs://nn:8020"),
            ("-", "-"),
        ] {
            assert_eq!(normal(given), written, "{given}");
        }
    }

    #[test]
    fn listings_sort_as_hadoops_ls_sorts() {
        use std::time::{Duration, UNIX_EPOCH};
        let entry = |name: &str, len: u64, millis: u64| {
            FileStatus::file(
                Location::parse(&format!("hdfs://nn/d/{name}")).unwrap(),
                len,
            )
            .with_modified(UNIX_EPOCH + Duration::from_millis(millis))
        };
        // In the store's order; b and c tie on time (to the millisecond), a and c on size:
        // equals are in name order, reversed or not.
        let listed = || {
            vec![
                entry("c", 5, 2000),
                entry("a", 5, 1000),
                entry("b", 9, 2000),
            ]
        };
        let sorted = |order: Order, reverse: bool| {
            let style = Style {
                paths_only: true,
                human: false,
                printable: false,
                access_time: false,
                order,
                reverse,
            };
            let mut entries = listed();
            style.sort(&mut entries);
            entries
                .iter()
                .map(|e| {
                    e.location
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(sorted(Order::Name, false), ["a", "b", "c"]);
        assert_eq!(sorted(Order::Name, true), ["c", "b", "a"]);
        // Newest first.
        assert_eq!(sorted(Order::Time, false), ["b", "c", "a"]);
        assert_eq!(sorted(Order::Time, true), ["a", "b", "c"]);
        assert_eq!(sorted(Order::Size, false), ["b", "a", "c"]);
        assert_eq!(sorted(Order::Size, true), ["a", "c", "b"]);
    }

    #[test]
    fn permissions_read_as_ls_prints_them() {
        assert_eq!(permissions(0o755), "rwxr-xr-x");
        assert_eq!(permissions(0o640), "rw-r-----");
        assert_eq!(permissions(0), "---------");
    }
}

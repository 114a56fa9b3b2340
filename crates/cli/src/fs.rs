//! `sluice fs`: the commands of Hadoop's `hadoop fs` shell that scripts and wrappers around
//! MapReduce jobs run before and after them (clear the output, stage the input, read the
//! results), on every store sluice knows, so that `HADOOP_CMD=sluice` serves them too.
//!
//! The commands take Hadoop's options and print Hadoop's messages (`rm: `x': No such file or
//! directory`), and the shell exits as Hadoop's does: 0, 1 when any argument failed, 255 for a
//! command line it cannot run. A test runs the same commands through Hadoop's `FsShell` and
//! compares.

use std::io::{self, Read, Write};
use std::path::Path;

use sluice_io::{FileStatus, IoError, Location, Storage, Stores};

/// The commands, as `-help` lists them.
const USAGE: &str = "Usage: sluice fs [generic options]
\t[-cat <src> ...]
\t[-copyFromLocal [-f] <localsrc> ... <dst>]
\t[-copyToLocal [-f] <src> ... <localdst>]
\t[-get [-f] <src> ... <localdst>]
\t[-help]
\t[-mkdir [-p] <path> ...]
\t[-put [-f] <localsrc> ... <dst>]
\t[-rm [-f] [-r|-R] [-skipTrash] <src> ...]
\t[-test -[defsz] <path>]
\t[-touchz <path> ...]

Generic options: -D <property=value>, -fs <file:///|hdfs://namenode:port|s3://bucket>.
Paths are on fs.defaultFS (HADOOP_CONF_DIR's core-site.xml, -D or -fs) unless they name
their store; a local path needs no configuration. There is no trash: -rm deletes at once.
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
    let result = match command.as_str() {
        "-cat" => shell.cat(operands),
        "-mkdir" => shell.mkdir(operands),
        "-rm" => shell.rm(operands),
        "-test" => shell.test(operands),
        "-put" | "-copyFromLocal" => shell.put(name, operands),
        "-get" | "-copyToLocal" => shell.get(name, operands),
        "-touchz" => shell.touchz(operands),
        _ => return usage(&format!("{command}: Unknown command")),
    };
    match result {
        Ok(status) => status,
        Err(Usage(message)) => usage(&format!("-{name}: {message}")),
    }
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

    /// The files and directories `text` names: its glob's matches in name order, as Hadoop
    /// lists them, or what is there (nothing: an empty list).
    fn find(&self, text: &str) -> Result<Vec<FileStatus>, IoError> {
        let location = self.location(text)?;
        if !location.is_glob() {
            return Ok(self.stores.status(&location)?.into_iter().collect());
        }
        let mut found = self.stores.glob_visible(&location)?;
        found.sort_by_key(|s| s.location.to_string());
        Ok(found)
    }

    /// The files and directories `text` names ([`Shell::find`]); `None`
    /// (after saying so, as `cmd`) when nothing is.
    fn matches(&self, cmd: &str, text: &str) -> Option<Vec<FileStatus>> {
        match self.find(text) {
            Ok(found) if !found.is_empty() => Some(found),
            Ok(_) => {
                say(cmd, text, "No such file or directory");
                None
            }
            Err(e) => {
                say(cmd, text, &reason(&e));
                None
            }
        }
    }

    fn cat(&self, operands: &[String]) -> Result<u8, Usage> {
        let (_, paths) = options(operands, &["-ignoreCrc"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let mut failed = false;
        let stdout = io::stdout();
        let mut out = stdout.lock();
        for text in paths {
            let Some(found) = self.matches("cat", text) else {
                failed = true;
                continue;
            };
            for status in found {
                if status.is_dir {
                    say("cat", &shown(text, &status), "Is a directory");
                    failed = true;
                    continue;
                }
                let copied = self
                    .stores
                    .open_range(&status.location, 0, u64::MAX)
                    .map_err(|e| reason(&e))
                    .and_then(|mut reader| {
                        io::copy(&mut reader, &mut out).map_err(|e| e.to_string())
                    });
                if let Err(why) = copied {
                    say("cat", &shown(text, &status), &why);
                    failed = true;
                }
            }
        }
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    fn mkdir(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(operands, &["-p"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let parents = flags.contains(&"-p");
        let mut failed = false;
        for text in paths {
            let outcome = self.location(text).and_then(|location| {
                match self.stores.status(&location)? {
                    Some(status) if status.is_dir && parents => return Ok(Ok(())),
                    Some(status) if status.is_dir => return Ok(Err("File exists".to_string())),
                    Some(_) => return Ok(Err("Not a directory".to_string())),
                    None => {}
                }
                if !parents {
                    if let Some(parent) = missing_parent(&self.stores, &location)? {
                        // Hadoop names the missing parent by its full URI.
                        say("mkdir", &full_name(&parent), "No such file or directory");
                        return Ok(Err(String::new()));
                    }
                }
                self.stores.make_dirs(&location).map(Ok)
            });
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    if !why.is_empty() {
                        say("mkdir", text, &why);
                    }
                    failed = true;
                }
                Err(e) => {
                    say("mkdir", text, &reason(&e));
                    failed = true;
                }
            }
        }
        Ok(u8::from(failed))
    }

    fn rm(&self, operands: &[String]) -> Result<u8, Usage> {
        // Options one by one, as Hadoop takes them (`-rf` is refused there too).
        let (flags, paths) = options(operands, &["-f", "-r", "-R", "-skipTrash", "-safely"])?;
        let force = flags.contains(&"-f");
        let recursive = flags.iter().any(|f| matches!(*f, "-r" | "-R"));
        if paths.is_empty() {
            if force {
                return Ok(0);
            }
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let mut failed = false;
        for text in paths {
            let found = if force {
                // Nothing there is no failure with -f, and says nothing.
                match self.find(text) {
                    Ok(found) => found,
                    Err(e) => {
                        say("rm", text, &reason(&e));
                        failed = true;
                        continue;
                    }
                }
            } else {
                let Some(found) = self.matches("rm", text) else {
                    failed = true;
                    continue;
                };
                found
            };
            for status in found {
                let name = shown(text, &status);
                if status.is_dir && !recursive {
                    say("rm", &name, "Is a directory");
                    failed = true;
                    continue;
                }
                match self.stores.delete_tree(&status.location) {
                    Ok(_) => println!("Deleted {name}"),
                    Err(e) => {
                        say("rm", &name, &reason(&e));
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
        let check: fn(&FileStatus) -> bool = match flag.as_str() {
            "-e" => |_| true,
            "-d" => |s| s.is_dir,
            "-f" => |s| !s.is_dir,
            "-s" => |s| s.len > 0,
            "-z" => |s| s.len == 0,
            other => return Err(Usage(format!("Illegal option {other}"))),
        };
        match self.location(text).and_then(|l| self.stores.status(&l)) {
            Ok(status) => Ok(u8::from(!status.as_ref().is_some_and(check))),
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
            let outcome = self.location(text).and_then(|location| {
                match self.stores.status(&location)? {
                    Some(status) if status.is_dir => return Ok(Err("Is a directory")),
                    Some(status) if status.len > 0 => return Ok(Err("Not a zero-length file")),
                    Some(_) => return Ok(Ok(())),
                    None => {}
                }
                self.stores
                    .create(&location)?
                    .finish()
                    .map_err(|e| IoError::Write {
                        path: location.error_path(),
                        source: e,
                    })?;
                Ok(Ok(()))
            });
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    say("touchz", text, why);
                    failed = true;
                }
                Err(e) => {
                    say("touchz", text, &reason(&e));
                    failed = true;
                }
            }
        }
        Ok(u8::from(failed))
    }

    /// `-put`/`-copyFromLocal`: local files (`-` for standard input) and directories to `dst`.
    fn put(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        let (flags, operands) = options(operands, &["-f", "-p", "-l", "-d"])?;
        let overwrite = flags.contains(&"-f");
        let Some((dst_text, sources)) = operands.split_last().filter(|(_, s)| !s.is_empty()) else {
            return Err(Usage("Not enough arguments: expected 2".into()));
        };
        let local = Stores::local();
        let dst = match self.location(dst_text) {
            Ok(dst) => dst,
            Err(e) => {
                say(cmd, dst_text, &reason(&e));
                return Ok(1);
            }
        };
        let dst_status = self.stores.status(&dst).ok().flatten();
        let dst_is_dir = dst_status.as_ref().is_some_and(|s| s.is_dir);
        if sources.len() > 1 && !dst_is_dir {
            let why = match dst_status {
                None => "No such file or directory",
                Some(_) => "Is not a directory",
            };
            say(cmd, dst_text, why);
            return Ok(1);
        }
        let mut failed = false;
        for source in sources {
            if source == "-" {
                let target = if dst_is_dir {
                    say(cmd, dst_text, "Is a directory");
                    failed = true;
                    continue;
                } else {
                    dst.clone()
                };
                if let Err(why) = self.copy_reader(&mut io::stdin().lock(), &target, overwrite) {
                    say(cmd, dst_text, &why);
                    failed = true;
                }
                continue;
            }
            let from = Location::from_path(Path::new(source));
            let Ok(Some(status)) = local.status(&from) else {
                say(cmd, source, "No such file or directory");
                failed = true;
                continue;
            };
            let (target, target_text) = into(&dst, dst_text, dst_is_dir, &from);
            if let Err((name, why)) = self.copy_tree(
                &local,
                &status,
                &self.stores,
                &target,
                &target_text,
                overwrite,
            ) {
                say(cmd, &name, &why);
                failed = true;
            }
        }
        Ok(u8::from(failed))
    }

    /// `-get`/`-copyToLocal`: files and directories of the stores to local `dst`.
    fn get(&self, cmd: &str, operands: &[String]) -> Result<u8, Usage> {
        let (flags, operands) = options(operands, &["-f", "-p", "-ignoreCrc", "-crc"])?;
        let overwrite = flags.contains(&"-f");
        let Some((dst_text, sources)) = operands.split_last().filter(|(_, s)| !s.is_empty()) else {
            return Err(Usage("Not enough arguments: expected 2".into()));
        };
        let local = Stores::local();
        let dst = Location::from_path(Path::new(dst_text));
        let dst_status = local.status(&dst).ok().flatten();
        let dst_is_dir = dst_status.as_ref().is_some_and(|s| s.is_dir);
        if sources.len() > 1 && !dst_is_dir {
            let why = match dst_status {
                None => "No such file or directory",
                Some(_) => "Is not a directory",
            };
            say(cmd, dst_text, why);
            return Ok(1);
        }
        let mut failed = false;
        for text in sources {
            let Some(found) = self.matches(cmd, text) else {
                failed = true;
                continue;
            };
            for status in found {
                let (target, target_text) = into(&dst, dst_text, dst_is_dir, &status.location);
                if let Err((name, why)) = self.copy_tree(
                    &self.stores,
                    &status,
                    &local,
                    &target,
                    &target_text,
                    overwrite,
                ) {
                    say(cmd, &name, &why);
                    failed = true;
                }
            }
        }
        Ok(u8::from(failed))
    }

    /// Copies what `status` describes on `from` to `target` on `to` (a directory with
    /// everything below it). An existing target file is replaced only if `overwrite`; the
    /// error names the target as `target_text` does.
    fn copy_tree(
        &self,
        from: &Stores,
        status: &FileStatus,
        to: &Stores,
        target: &Location,
        target_text: &str,
        overwrite: bool,
    ) -> Result<(), (String, String)> {
        let fail = |why: String| (target_text.to_string(), why);
        if !status.is_dir {
            if let Some(existing) = to.status(target).map_err(|e| fail(reason(&e)))? {
                if existing.is_dir {
                    return Err(fail("Is a directory".into()));
                }
                if !overwrite {
                    return Err(fail("File exists".into()));
                }
                to.delete(target).map_err(|e| fail(reason(&e)))?;
            }
            if missing_parent(to, target)
                .map_err(|e| fail(reason(&e)))?
                .is_some()
            {
                // Hadoop adds the target's full name.
                let full = full_name(target);
                return Err(fail(format!("No such file or directory: `{full}'")));
            }
            let mut reader = from
                .open_range(&status.location, 0, u64::MAX)
                .map_err(|e| fail(reason(&e)))?;
            return self.copy_with(to, &mut reader, target).map_err(fail);
        }
        match to.status(target).map_err(|e| fail(reason(&e)))? {
            Some(existing) if !existing.is_dir => return Err(fail("File exists".into())),
            Some(_) => {}
            None => to.make_dirs(target).map_err(|e| fail(reason(&e)))?,
        }
        let mut entries = from.list(&status.location).map_err(|e| fail(reason(&e)))?;
        entries.sort_by_key(|e| e.location.to_string());
        for entry in entries {
            let name = entry.location.file_name().unwrap_or_default().to_owned();
            let child = target.join(&name);
            let child_text = format!("{target_text}/{}", name.to_string_lossy());
            self.copy_tree(from, &entry, to, &child, &child_text, overwrite)?;
        }
        Ok(())
    }

    /// Copies standard input to `target` on the shell's stores.
    fn copy_reader(
        &self,
        reader: &mut dyn Read,
        target: &Location,
        overwrite: bool,
    ) -> Result<(), String> {
        if let Some(existing) = self.stores.status(target).map_err(|e| reason(&e))? {
            if !overwrite || existing.is_dir {
                return Err(if existing.is_dir {
                    "Is a directory"
                } else {
                    "File exists"
                }
                .into());
            }
            self.stores.delete(target).map_err(|e| reason(&e))?;
        }
        self.copy_with(&self.stores, reader, target)
    }

    /// Writes what `reader` reads to a new file at `target` on `to`; a copy cut short leaves
    /// no file behind.
    fn copy_with(
        &self,
        to: &Stores,
        reader: &mut dyn Read,
        target: &Location,
    ) -> Result<(), String> {
        let written = to
            .create(target)
            .map_err(|e| reason(&e))
            .and_then(|mut writer| {
                io::copy(reader, &mut writer).map_err(|e| e.to_string())?;
                writer.finish().map(drop).map_err(|e| e.to_string())
            });
        if written.is_err() {
            let _ = to.delete(target);
        }
        written
    }
}

/// The target of copying `source` to `dst` (given as `dst_text`): inside it, under the
/// source's name, when it is a directory; else `dst` itself.
fn into(dst: &Location, dst_text: &str, dst_is_dir: bool, source: &Location) -> (Location, String) {
    match source.file_name().filter(|_| dst_is_dir) {
        Some(name) => (
            dst.join(name),
            format!(
                "{}/{}",
                dst_text.trim_end_matches('/'),
                name.to_string_lossy()
            ),
        ),
        None => (dst.clone(), dst_text.to_string()),
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

/// How Hadoop names a match of an operand: as given, unless a glob expanded it.
fn shown(text: &str, status: &FileStatus) -> String {
    if Location::parse(text).is_ok_and(|l| l.is_glob()) {
        status.location.to_string()
    } else {
        text.to_string()
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
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::NotFound => "No such file or directory".into(),
                io::ErrorKind::PermissionDenied => "Permission denied".into(),
                io::ErrorKind::AlreadyExists => "File exists".into(),
                _ => io.to_string(),
            };
        }
        source = e.source();
    }
    error.to_string()
}

/// Prints Hadoop's message for an operand: `cmd: `path': why`.
fn say(cmd: &str, path: &str, why: &str) {
    eprintln!("{cmd}: `{path}': {why}");
}

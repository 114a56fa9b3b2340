//! The commands of `sluice fs` that describe files without changing them: `-stat`, `-count`
//! and `-tail`, and sizes written as Hadoop's `-h` options write them.

use std::io::{self, Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_io::{FileStatus, IoError, Location, Scheme, Storage};

use super::{options, owned, permissions, reason, say, Shell, Usage};

/// `-stat`'s format when none is given: the modification time.
const DEFAULT_STAT_FORMAT: &str = "%y";

/// The block size Hadoop reports for a file without blocks of its own (a local file, an
/// object): its `fs.local.block.size` and `fs.s3a.block.size`, 32 MiB.
const DEFAULT_BLOCK_SIZE: u64 = 32 << 20;

/// How much of a file's end `-tail` prints.
const TAIL_BYTES: u64 = 1024;

/// How much of a file's start `-head` prints.
const HEAD_BYTES: u64 = 1024;

/// How often `-tail -f` looks for more.
const TAIL_FOLLOW_INTERVAL: Duration = Duration::from_secs(5);

impl Shell {
    /// `-stat [FORMAT] PATH...`: one line per match, FORMAT's `%` conversions replaced as
    /// Hadoop's `Stat` replaces them (an unknown one by its letter).
    pub(super) fn stat(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, operands) = options(operands, &["-R"])?;
        let recursive = flags.contains(&"-R");
        // As Hadoop decides: a first operand with a `%` in it is the format.
        let (format, paths) = match operands.split_first() {
            Some((first, rest)) if first.contains('%') => (first.as_str(), rest),
            _ => (DEFAULT_STAT_FORMAT, operands),
        };
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let failed = self.each_match("stat", paths, |status, name| {
            let _ = writeln!(out, "{}", stat_line(format, &status));
            if recursive && status.is_dir {
                if let Err(e) = self.stat_below(&mut out, format, &status) {
                    say("stat", &name, &reason(&e));
                    return true;
                }
            }
            false
        });
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    /// `-stat -R`: the lines of everything below directory `dir`, each directory's entries
    /// in the store's own order (as `-ls -R` lists them), each followed by its own.
    fn stat_below(
        &self,
        out: &mut dyn Write,
        format: &str,
        dir: &FileStatus,
    ) -> Result<(), IoError> {
        for entry in self.stores.list(&dir.location)? {
            let _ = writeln!(out, "{}", stat_line(format, &entry));
            if entry.is_dir {
                self.stat_below(out, format, &entry)?;
            }
        }
        Ok(())
    }

    /// `-count [-q] [-u] [-h] [-v] PATH...`: directories (the path's own included), files
    /// and bytes below each match, in Hadoop's columns; with `-q` or `-u`, the quotas first.
    /// A store without quotas (local files, S3) has none; HDFS's are not read.
    pub(super) fn count(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(operands, &["-q", "-u", "-h", "-v", "-x"])?;
        let quotas = flags.contains(&"-q");
        let quotas_only = flags.contains(&"-u");
        let human = flags.contains(&"-h");
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let stdout = io::stdout();
        let mut out = stdout.lock();
        if flags.contains(&"-v") {
            let mut header = String::new();
            if quotas || quotas_only {
                header += &quota_columns(["QUOTA", "REM_QUOTA", "SPACE_QUOTA", "REM_SPACE_QUOTA"]);
            }
            if !quotas_only {
                header += &count_columns(["DIR_COUNT", "FILE_COUNT", "CONTENT_SIZE"]);
            }
            let _ = writeln!(out, "{header}PATHNAME");
        }
        let failed = self.each_match("count", paths, |status, name| {
            if (quotas || quotas_only) && status.location.scheme() == Scheme::Hdfs {
                say(
                    "count",
                    &name,
                    "sluice fs does not read HDFS quotas (-q, -u)",
                );
                return true;
            }
            let mut line = String::new();
            if quotas || quotas_only {
                line += &quota_columns(["none", "inf", "none", "inf"]);
            }
            if !quotas_only {
                let content = match self.content(&status) {
                    Ok(content) => content,
                    Err(e) => {
                        say("count", &name, &reason(&e));
                        return true;
                    }
                };
                let number = |n: u64| if human { human_size(n) } else { n.to_string() };
                line += &count_columns([
                    number(content.dirs),
                    number(content.files),
                    number(content.bytes),
                ]);
            }
            let _ = writeln!(out, "{line}{name}");
            false
        });
        let _ = out.flush();
        Ok(u8::from(failed))
    }

    /// `-tail [-f] FILE`: the file's last kilobyte; with `-f`, then what is added to it, as
    /// it comes, until interrupted.
    pub(super) fn tail(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, paths) = options(operands, &["-f"])?;
        let text = match paths {
            [text] => text,
            [] => return Err(Usage("Not enough arguments: expected 1 but got 0".into())),
            _ => {
                return Err(Usage(format!(
                    "Too many arguments: expected 1 but got {}",
                    paths.len()
                )))
            }
        };
        let Some(found) = self.matches("tail", text) else {
            return Ok(1);
        };
        let Some(status) = found.into_iter().next() else {
            return Ok(1);
        };
        if status.is_dir {
            say("tail", text, "Is a directory");
            return Ok(1);
        }
        let mut offset = status.len.saturating_sub(TAIL_BYTES);
        loop {
            match self.print_from(&status.location, offset) {
                Ok(end) => offset = end,
                Err(e) => {
                    say("tail", text, &reason(&e));
                    return Ok(1);
                }
            }
            if !flags.contains(&"-f") {
                return Ok(0);
            }
            std::thread::sleep(TAIL_FOLLOW_INTERVAL);
        }
    }

    /// `-head FILE`: its first kilobyte, as Hadoop prints it.
    pub(super) fn head(&self, operands: &[String]) -> Result<u8, Usage> {
        let (_, paths) = options(operands, &[])?;
        let text = match paths {
            [text] => text,
            [] => return Err(Usage("Not enough arguments: expected 1 but got 0".into())),
            _ => {
                return Err(Usage(format!(
                    "Too many arguments: expected 1 but got {}",
                    paths.len()
                )))
            }
        };
        let Some(status) = self
            .matches("head", text)
            .and_then(|f| f.into_iter().next())
        else {
            return Ok(1);
        };
        if status.is_dir {
            say("head", text, "Is a directory");
            return Ok(1);
        }
        let printed = self
            .stores
            .open_range(&status.location, 0, HEAD_BYTES)
            .and_then(|mut reader| {
                let mut bytes = Vec::new();
                reader
                    .read_to_end(&mut bytes)
                    .map_err(|source| IoError::Read {
                        path: status.location.error_path(),
                        source,
                    })?;
                Ok(bytes)
            });
        match printed {
            Ok(bytes) => {
                let mut out = io::stdout().lock();
                let _ = out.write_all(&bytes);
                let _ = out.flush();
                Ok(0)
            }
            Err(e) => {
                say("head", text, &reason(&e));
                Ok(1)
            }
        }
    }

    /// `-text SRC...`: each file as text: a SequenceFile's records as `key<TAB>value` lines
    /// (each `Writable` as Java's `toString()` writes it), a gzip file (by its first bytes)
    /// or a file compressed with a codec its name gives decompressed, anything else as it is.
    /// Unlike Hadoop, a text file that merely starts with `SEQ` is printed as text.
    pub(super) fn text(&self, operands: &[String]) -> Result<u8, Usage> {
        let (_, paths) = options(operands, &["-ignoreCrc"])?;
        if paths.is_empty() {
            return Err(Usage("Not enough arguments: expected 1 but got 0".into()));
        }
        let failed = self.each_match("text", paths, |status, name| {
            let printed = if status.is_dir {
                Err("Is a directory".to_string())
            } else {
                self.print_text(&status)
            };
            if let Err(why) = &printed {
                say("text", &name, why);
            }
            printed.is_err()
        });
        Ok(u8::from(failed))
    }

    /// Prints one file as `-text` does.
    fn print_text(&self, status: &FileStatus) -> Result<(), String> {
        if status.len == 0 {
            // Nothing to print, whatever its name says (an empty `.gz` too, as in Hadoop).
            return Ok(());
        }
        let location = &status.location;
        let mut head = Vec::with_capacity(sluice_io::seqfile::SNIFF_LEN);
        self.stores
            .open_range(location, 0, sluice_io::seqfile::SNIFF_LEN as u64)
            .and_then(|reader| {
                reader
                    .take(sluice_io::seqfile::SNIFF_LEN as u64)
                    .read_to_end(&mut head)
                    .map_err(|source| IoError::Read {
                        path: location.error_path(),
                        source,
                    })
            })
            .map_err(|e| reason(&e))?;
        let stdout = io::stdout();
        let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
        if sluice_io::seqfile::starts_as_sequence_file(&head) {
            self.print_records(status, &mut out)?;
        } else {
            let mut reader =
                sluice_io::open_decompressed(&self.stores, location).map_err(|e| reason(&e))?;
            io::copy(&mut reader, &mut out).map_err(|e| super::io_reason(&e))?;
        }
        out.flush().map_err(|e| super::io_reason(&e))
    }

    /// Prints a SequenceFile's records as `key<TAB>value` lines.
    fn print_records(&self, status: &FileStatus, out: &mut dyn Write) -> Result<(), String> {
        use sluice_hadoop::writable_type::WritableType;
        let input = sluice_io::StoredInput::new(status.clone());
        let whole = sluice_io::Split {
            file: 0,
            start: 0,
            len: status.len,
        };
        let mut reader = sluice_io::seqfile::SeqFileReader::open_in(&self.stores, &input, &whole)
            .map_err(|e| reason(&e))?;
        let class = |name: &str| {
            WritableType::from_class_name(name).ok_or_else(|| {
                format!("cannot print values of class {name} (sluice knows Hadoop's own Writables)")
            })
        };
        let key_type = class(&reader.header().key_class)?;
        let value_type = class(&reader.header().value_class)?;
        let mut line = Vec::new();
        while let Some((offset, key, value)) = reader.next_record().map_err(|e| reason(&e))? {
            line.clear();
            key_type
                .to_text(key, &mut line)
                .and_then(|()| {
                    line.push(b'\t');
                    value_type.to_text(value, &mut line)
                })
                .map_err(|e| format!("the record at byte {offset}: {e}"))?;
            line.push(b'\n');
            out.write_all(&line).map_err(|e| super::io_reason(&e))?;
        }
        Ok(())
    }

    /// Prints the file at `location` from `offset` to its end; returns where it ended.
    fn print_from(&self, location: &Location, offset: u64) -> Result<u64, IoError> {
        let mut reader = self.stores.open_range(location, offset, u64::MAX)?;
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| IoError::Read {
                path: location.error_path(),
                source,
            })?;
        let stdout = io::stdout();
        let mut out = stdout.lock();
        let _ = out.write_all(&bytes);
        let _ = out.flush();
        Ok(offset.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX)))
    }
}

/// One line of `-stat`: `format` with its conversions replaced for `status`.
fn stat_line(format: &str, status: &FileStatus) -> String {
    let owned = owned(status);
    let mut line = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            line.push(c);
            continue;
        }
        // A `%` at the very end is dropped, as Hadoop drops it.
        let Some(conversion) = chars.next() else {
            break;
        };
        match conversion {
            'a' => line += &format!("{:o}", owned.permission),
            'A' => line += &permissions(owned.permission),
            'b' => line += &owned.len.to_string(),
            'F' => {
                line += if status.is_dir {
                    "directory"
                } else {
                    "regular file"
                }
            }
            'g' => line += &owned.group,
            'n' => {
                line += &status
                    .location
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
            }
            'o' => line += &block_size(status).to_string(),
            'r' => line += &owned.replication.max(u32::from(!status.is_dir)).to_string(),
            'u' => line += &owned.owner,
            'x' => line += &utc_time(status.accessed),
            'X' => line += &millis(status.accessed).to_string(),
            'y' => line += &utc_time(status.modified),
            'Y' => line += &millis(status.modified).to_string(),
            other => line.push(other),
        }
    }
    line
}

/// The block size `-stat` prints: the store's; where it has none, 0 on HDFS (a directory)
/// and Hadoop's default for local files and objects.
fn block_size(status: &FileStatus) -> u64 {
    match status.block_size {
        Some(size) => size,
        None if status.location.scheme() == Scheme::Hdfs => 0,
        None => DEFAULT_BLOCK_SIZE,
    }
}

/// A time as `-stat` prints it, in UTC (the epoch where the store has none).
fn utc_time(time: Option<SystemTime>) -> String {
    chrono::DateTime::<chrono::Utc>::from(time.unwrap_or(UNIX_EPOCH))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// A time in milliseconds since the epoch (0 where the store has none).
fn millis(time: Option<SystemTime>) -> u128 {
    time.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis())
}

/// The quota columns of `-count -q`, as Hadoop pads them.
fn quota_columns(values: [&str; 4]) -> String {
    let [quota, remaining, space, remaining_space] = values;
    format!("{quota:>12} {remaining:>15} {space:>15} {remaining_space:>15} ")
}

/// The directory, file and size columns of `-count`, as Hadoop pads them.
fn count_columns<S: AsRef<str>>(values: [S; 3]) -> String {
    let [dirs, files, bytes] = values.each_ref().map(AsRef::as_ref);
    format!("{dirs:>12} {files:>12} {bytes:>18} ")
}

/// A size as Hadoop's `-h` options write it (`StringUtils.TraditionalBinaryPrefix`): bytes
/// below 1024 as they are, else in the largest binary unit with one decimal rounded half up
/// (`12.1 K`), or none when it divides exactly (`2 K`).
pub(super) fn human_size(bytes: u64) -> String {
    const SYMBOLS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    // The largest unit not above the size: K for 2^10..2^20, M for 2^20..2^30, ...
    let largest = (63 - bytes.leading_zeros()) / 10;
    let value = |unit: u32| u128::from(1u64 << (10 * unit));
    let symbol = |unit: u32| SYMBOLS.get(unit as usize - 1).copied().unwrap_or("E");
    if u128::from(bytes) % value(largest) == 0 {
        return format!("{} {}", bytes >> (10 * largest), symbol(largest));
    }
    let tenths = |unit: u32| (u128::from(bytes) * 10 + value(unit) / 2) / value(unit);
    // 1023.96 K rounds to 1024.0 K: written in the next unit instead, as Hadoop does.
    let unit = if tenths(largest) >= 10_240 && largest < 6 {
        largest + 1
    } else {
        largest
    };
    let tenths = tenths(unit);
    format!("{}.{} {}", tenths / 10, tenths % 10, symbol(unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_as_hadoop_writes_them() {
        // Values from Hadoop 3.4's StringUtils.TraditionalBinaryPrefix.long2String(n, "", 1).
        for (bytes, text) in [
            (0, "0"),
            (1023, "1023"),
            (1024, "1 K"),
            (2048, "2 K"),
            (1280, "1.3 K"),
            (12_345, "12.1 K"),
            (1_048_575, "1.0 M"),
            (1_048_576, "1 M"),
            (1_500_000, "1.4 M"),
            (5 << 30, "5 G"),
            (u64::MAX, "16.0 E"),
        ] {
            assert_eq!(human_size(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn stat_formats_replace_what_hadoop_replaces() {
        let status = FileStatus::file(Location::parse("hdfs://nn/d/part-0").unwrap(), 42)
            .with_block_size(128 << 20)
            .with_modified(UNIX_EPOCH + Duration::from_millis(1_796_337_206_568))
            .with_ownership(sluice_io::Ownership {
                owner: "ann".into(),
                group: "staff".into(),
                permission: 0o640,
                replication: 3,
            });
        assert_eq!(
            stat_line("%n %b %F %a %A %u:%g %r %o %y %Y %x %z %% %", &status),
            "part-0 42 regular file 640 rw-r----- ann:staff 3 134217728 \
             2026-12-03 22:33:26 1796337206568 1970-01-01 00:00:00 z % "
        );
    }
}

//! Turning `--input` arguments into a list of files.
//!
//! Hadoop's `FileInputFormat` decides what a job reads: named files are taken as they are,
//! directories are listed (recursively here) with the hidden-file filter that drops names starting
//! with `_` or `.` (`_SUCCESS`, `_logs`, `.crc` files, editors' swap files), and globs are expanded
//! with that same filter applied to each match. We reproduce those rules so that pointing sluice at
//! the output directory of a previous job reads the part files and nothing else.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{FileStatus, IoError, LocalStorage, Location, Storage};

/// How an input file is compressed, decided by its extension (as Hadoop's codec factory does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes; can be split.
    None,
    /// `.gz` (multi-member gzip streams are read to the end).
    Gzip,
    /// `.zst`.
    Zstd,
    /// `.lz4`: the LZ4 frame format (the `lz4` tool's) or Hadoop's `Lz4Codec` block framing,
    /// told apart by the frame format's magic number.
    Lz4,
    /// `.bz2`.
    Bzip2,
    /// `.deflate`: zlib streams (Hadoop's `DefaultCodec` and `DeflateCodec`).
    Deflate,
    /// `.snappy`: Hadoop's `SnappyCodec` block framing of raw snappy.
    Snappy,
}

/// File-name suffixes and their codecs (lower case). Matching ignores case, as in Hadoop.
const SUFFIXES: &[(&[u8], Compression)] = &[
    (b".gz", Compression::Gzip),
    (b".zst", Compression::Zstd),
    (b".zstd", Compression::Zstd),
    (b".lz4", Compression::Lz4),
    (b".bz2", Compression::Bzip2),
    (b".deflate", Compression::Deflate),
    (b".snappy", Compression::Snappy),
];

impl Compression {
    /// The compression implied by a file name's extension.
    ///
    /// The suffix is matched on the file name whatever its case (`a.gz` and `a.GZ` are both
    /// gzip), as Hadoop's `CompressionCodecFactory` does; `.zst` and `.zstd` are both zstd.
    pub fn from_path(path: &Path) -> Compression {
        path.file_name()
            .map_or(Compression::None, Compression::from_name)
    }

    /// The compression implied by the file name of a location, as [`Compression::from_path`].
    pub fn from_location(location: &Location) -> Compression {
        location
            .file_name()
            .map_or(Compression::None, Compression::from_name)
    }

    fn from_name(name: &OsStr) -> Compression {
        let name = name.as_bytes();
        SUFFIXES
            .iter()
            .find(|(suffix, _)| {
                name.len() >= suffix.len()
                    && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
            })
            .map_or(Compression::None, |&(_, codec)| codec)
    }

    /// Whether a file so compressed can be split into several map tasks: a plain file, and a
    /// bzip2 file (cut at its blocks), as Hadoop's `FileInputFormat` splits the files of its
    /// `SplittableCompressionCodec`s.
    pub fn splittable(self) -> bool {
        matches!(self, Compression::None | Compression::Bzip2)
    }

    /// Short name for messages (`none`, `gzip`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Bzip2 => "bzip2",
            Compression::Deflate => "deflate",
            Compression::Snappy => "snappy",
        }
    }
}

/// One file to read, found by [`discover_inputs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The path, spelled from the user's argument (a directory argument `docs/` yields `docs/a.txt`).
    pub path: PathBuf,
    /// Size on disk in bytes.
    pub len: u64,
    /// Compression implied by the extension.
    pub compression: Compression,
}

/// Expands input arguments into files.
///
/// * A file is taken as it is, and a directory is walked recursively; entries whose names start
///   with `_` or `.` are skipped. A file or directory whose own last name starts with `_` or `.`
///   is refused even when named outright, as Hadoop's input formats refuse it (the names above
///   it do not count: `.cache/a.txt` is read).
/// * An argument containing `*`, `?` or `[` is a glob; each match is treated as above, except that
///   a match whose own name starts with `_` or `.` is skipped (Hadoop applies its hidden-file
///   filter to glob results). `*` and `?` do not match `/`; `[[]` matches a literal `[`.
/// * `{a,b}` groups (nested, and holding `/` too) stand for each alternative, as in Hadoop's
///   globs: `logs/2024-01-{01,02}` reads what either names, and fails only if neither names
///   anything.
///
/// Symbolic links are followed (a directory reached twice through a link cycle is walked once per
/// chain, never forever). Entries that vanish while a directory is listed, and dangling links
/// inside directories, are skipped, as Hadoop's local file system does. Anything that is not a
/// directory (a FIFO, a device) counts as a file. An empty directory contributes no files.
///
/// The result follows the order of `args`, the files each names sorted by path bytes; a file
/// that two arguments name is there twice, as Hadoop reads it twice.
///
/// This is [`discover`] on [`LocalStorage`], for the local paths the engine plans with today.
///
/// # Errors
/// [`IoError::InputNotFound`] for a missing path, [`IoError::PatternMatchesNothing`] for a
/// glob matching nothing, [`IoError::HiddenInput`] for a hidden path named outright, [`IoError::BadPattern`],
/// [`IoError::Read`] when a directory cannot be listed or a file's metadata cannot be read.
pub fn discover_inputs(args: &[PathBuf]) -> Result<Vec<InputFile>, IoError> {
    let locations: Vec<Location> = args.iter().cloned().map(Location::from_path).collect();
    let found = discover(&LocalStorage::new(), &locations)?;
    // Every location the local storage lists is a local path.
    Ok(found
        .iter()
        .filter_map(StoredInput::to_input_file)
        .collect())
}

/// One file to read on a [`Storage`], found by [`discover`]: the [`InputFile`] of any store.
///
/// A type of its own rather than a `location` field added to [`InputFile`]: `InputFile`'s fields
/// are public and other crates build it with struct literals, which a new field would break;
/// and its `path` is what the engine hands to mappers and programs, which a location of another
/// store does not have. `StoredInput` is `#[non_exhaustive]`, so it can grow (HDFS block
/// locations are in its [`FileStatus`] already). [`StoredInput::to_input_file`] and
/// `From<InputFile>` convert between the two for local files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredInput {
    /// Where the file is, its length, and what else the store told.
    pub status: FileStatus,
    /// Compression implied by the file name's extension.
    pub compression: Compression,
}

impl StoredInput {
    /// The input of a file with this status; its compression is decided by its name.
    pub fn new(status: FileStatus) -> StoredInput {
        let compression = Compression::from_location(&status.location);
        StoredInput {
            status,
            compression,
        }
    }

    /// Where the file is.
    pub fn location(&self) -> &Location {
        &self.status.location
    }

    /// The local [`InputFile`] of a file on the local file system; `None` for other stores.
    pub fn to_input_file(&self) -> Option<InputFile> {
        let path = self.status.location.as_local_path()?;
        Some(InputFile {
            path: path.to_path_buf(),
            len: self.status.len,
            compression: self.compression,
        })
    }
}

impl From<InputFile> for StoredInput {
    fn from(file: InputFile) -> StoredInput {
        StoredInput {
            status: FileStatus::file(Location::from_path(file.path), file.len),
            compression: file.compression,
        }
    }
}

/// Expands input locations into the files a job reads, on any [`Storage`]: the rules of
/// [`discover_inputs`] (named files taken as they are unless hidden, directories walked
/// without hidden entries, glob matches with hidden names left out), through [`Storage::status`],
/// [`Storage::walk_visible`] and [`Storage::glob_visible`].
///
/// The result follows the order of `inputs`, as Hadoop's input formats list them (so the
/// first map tasks read the first inputs); the files each input names are sorted by location
/// (a local path's bytes), as Hadoop's globs and HDFS's listings sort them, each once. A file
/// that two inputs name (`-input logs -input logs/a.txt`, overlapping globs) is there for each,
/// as Hadoop's input formats list it for each and its job reads it twice.
///
/// # Errors
/// [`IoError::InputNotFound`] for a missing location, [`IoError::PatternMatchesNothing`] for
/// a glob matching nothing (each `path` is [`Location::error_path`]);
/// [`IoError::HiddenInput`] for a location named outright whose
/// last name starts with `_` or `.`; the storage's errors ([`IoError::BadPattern`],
/// [`IoError::Read`], [`IoError::UnsupportedScheme`]).
pub fn discover(storage: &dyn Storage, inputs: &[Location]) -> Result<Vec<StoredInput>, IoError> {
    discover_with(storage, inputs, NestedDirectories::Read)
}

/// What discovery does with a directory inside an input directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NestedDirectories {
    /// Its files are read, at any depth (Hadoop's
    /// `mapreduce.input.fileinputformat.input.dir.recursive=true`).
    #[default]
    Read,
    /// It is left out with everything in it: an input directory gives its own files only
    /// (Hadoop's `mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs=true`).
    Skip,
}

/// [`discover`], with directories inside input directories read or left out as `nested`
/// says.
///
/// # Errors
/// As for [`discover`].
pub fn discover_with(
    storage: &dyn Storage,
    inputs: &[Location],
    nested: NestedDirectories,
) -> Result<Vec<StoredInput>, IoError> {
    let mut found = Vec::new();
    let not_found = |input: &Location| IoError::InputNotFound {
        path: input.error_path(),
    };
    let matches_nothing = |input: &Location| IoError::PatternMatchesNothing {
        path: input.error_path(),
    };
    for input in inputs {
        let mut named = Vec::new();
        if let Some(alternatives) = brace_alternatives(input)? {
            // Hadoop's `{a,b}`: what any alternative names, hidden names left out as from a
            // glob; an error only if none names anything.
            let mut any = false;
            for alternative in alternatives {
                let matches = if alternative.is_glob() {
                    storage.glob_visible(&alternative)?
                } else {
                    let visible = !alternative.file_name().is_some_and(is_hidden);
                    storage
                        .status(&alternative)?
                        .filter(|_| visible)
                        .into_iter()
                        .collect()
                };
                for status in matches {
                    any = true;
                    add(storage, status, nested, &mut named)?;
                }
            }
            if !any {
                return Err(matches_nothing(input));
            }
        } else if input.is_glob() {
            let matches = storage.glob_visible(input)?;
            if matches.is_empty() {
                // A pattern of escapes alone (`a\b`) is a path to Hadoop, missing as one.
                return Err(if input.has_wildcard() {
                    matches_nothing(input)
                } else {
                    not_found(input)
                });
            }
            for status in matches {
                add(storage, status, nested, &mut named)?;
            }
        } else {
            let status = storage.status(input)?.ok_or_else(|| not_found(input))?;
            // Hadoop's input formats filter even a path named outright: `-input _x`, or a
            // directory `/tmp/.cache`, is refused as missing (only its last name counts).
            if last_name(input).is_some_and(|name| is_hidden(&name)) {
                return Err(IoError::HiddenInput {
                    path: input.error_path(),
                });
            }
            add(storage, status, nested, &mut named)?;
        }
        named.sort_by(|a, b| a.location.sort_key().cmp(&b.location.sort_key()));
        // `{a,a}` names a file once.
        named.dedup_by(|a, b| a.location.sort_key() == b.location.sort_key());
        found.append(&mut named);
    }
    Ok(found.into_iter().map(StoredInput::new).collect())
}

/// The locations a location with `{a,b}` groups stands for (`logs/{a,b}` is `logs/a` and
/// `logs/b`; groups nest and may hold `/`), as Hadoop's globs expand them; `None` for one
/// without such a group.
///
/// # Errors
/// [`IoError::BadPattern`] for a group that is not closed.
pub fn brace_alternatives(input: &Location) -> Result<Option<Vec<Location>>, IoError> {
    let Some(path) = input.path_str().filter(|p| crate::braces::has_group(p)) else {
        return Ok(None);
    };
    let expanded = crate::braces::expand(path).map_err(|detail| IoError::BadPattern {
        pattern: input.error_path().display().to_string(),
        detail,
    })?;
    Ok(Some(
        expanded.iter().map(|p| input.with_path_str(p)).collect(),
    ))
}

/// Adds a file, or every visible file below a directory (only those directly in it when
/// `nested` directories are skipped).
fn add(
    storage: &dyn Storage,
    status: FileStatus,
    nested: NestedDirectories,
    found: &mut Vec<FileStatus>,
) -> Result<(), IoError> {
    if !status.is_dir {
        found.push(status);
    } else if nested == NestedDirectories::Read {
        found.extend(storage.walk_visible(&status.location)?);
    } else {
        found.extend(
            storage.list(&status.location)?.into_iter().filter(|entry| {
                !entry.is_dir && !entry.location.file_name().is_some_and(is_hidden)
            }),
        );
    }
    Ok(())
}

/// The last name of `input`, as Hadoop sees it: a relative local path is taken from the
/// current directory (so `.` is the current directory's own name).
fn last_name(input: &Location) -> Option<std::ffi::OsString> {
    if let Some(name) = input.file_name() {
        return Some(name.to_owned());
    }
    let path = input.as_local_path()?;
    std::path::absolute(path)
        .ok()?
        .file_name()
        .map(OsStr::to_owned)
}

/// Whether Hadoop's hidden-file filter drops this name.
pub(crate) fn is_hidden(name: &OsStr) -> bool {
    is_hidden_name(name.as_bytes())
}

/// Whether Hadoop's hidden-file filter drops a file or directory of this name (one path
/// component): names starting with `_` (`_SUCCESS`, `_logs`) or `.` (`.crc` files).
pub fn is_hidden_name(name: impl AsRef<[u8]>) -> bool {
    matches!(name.as_ref().first(), Some(b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_by_suffix() {
        let c = |p: &str| Compression::from_path(Path::new(p));
        assert_eq!(c("a/b.gz"), Compression::Gzip);
        assert_eq!(c("b.zst"), Compression::Zstd);
        assert_eq!(c("b.zstd"), Compression::Zstd);
        assert_eq!(c("b.lz4"), Compression::Lz4);
        assert_eq!(c("b.tar.bz2"), Compression::Bzip2);
        assert_eq!(c("part-00000.deflate"), Compression::Deflate);
        assert_eq!(c("part-00000.snappy"), Compression::Snappy);
        assert_eq!(c("b.GZ"), Compression::Gzip);
        assert_eq!(c("b.Bz2"), Compression::Bzip2);
        assert_eq!(c("B.DEFLATE"), Compression::Deflate);
        assert_eq!(c("b.gz.txt"), Compression::None);
        assert_eq!(c("gz"), Compression::None);
        assert_eq!(c("/"), Compression::None);
        assert_eq!(Compression::Bzip2.name(), "bzip2");
        assert_eq!(Compression::None.name(), "none");
    }
}

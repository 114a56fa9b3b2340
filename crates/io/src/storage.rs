//! The storage a job reads and writes, behind one trait.
//!
//! The engine programs against [`Storage`] (listing, ranged reads, creating files) and
//! [`JobCommitter`](crate::JobCommitter) (making output visible atomically), so that stores
//! other than the local file system (HDFS, S3) can be added as implementations without
//! touching the readers, the split planning or the engine. [`LocalStorage`](crate::LocalStorage)
//! is the implementation that exists; [`storage_for`] picks the storage of a location.

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::SystemTime;

use crate::input::is_hidden;
use crate::{DirectWriter, IoError, LocalStorage, Location, Scheme, DIRECT_CHUNK};

/// What a [`Storage`] knows of a file or directory.
///
/// `#[non_exhaustive]`: build one with [`FileStatus::file`] or [`FileStatus::directory`] and
/// the `with_` methods; fields may be added (a store's replication, its checksum) without
/// breaking implementations.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileStatus {
    /// Where it is.
    pub location: Location,
    /// Length in bytes (0 for a directory).
    pub len: u64,
    /// Whether it is a directory (on an object store: a prefix other keys are under).
    pub is_dir: bool,
    /// Last modification, where the store reports it without extra cost.
    pub modified: Option<SystemTime>,
    /// Last access, where the store reports it without extra cost (local files, HDFS).
    pub accessed: Option<SystemTime>,
    /// The store's block size (HDFS's `dfs.blocksize` for the file), for planning splits along
    /// blocks; `None` where the store has no blocks.
    pub block_size: Option<u64>,
    /// Where the file's blocks are (HDFS: the data nodes holding each), for placing tasks near
    /// their data; empty where unknown.
    pub blocks: Vec<BlockLocation>,
    /// Who owns it and who may do what, where the store's status carries it at no cost
    /// (HDFS); `None` elsewhere.
    pub ownership: Option<Ownership>,
}

/// A file's owner, group, permission bits and replication, as HDFS reports them (for
/// listings as Hadoop's shell prints them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The owning user.
    pub owner: String,
    /// The owning group.
    pub group: String,
    /// The permission bits (`0o644`).
    pub permission: u16,
    /// How many copies of each block the store keeps (0 for a directory).
    pub replication: u32,
}

impl FileStatus {
    /// A file of `len` bytes at `location`, nothing else known.
    pub fn file(location: Location, len: u64) -> FileStatus {
        FileStatus {
            location,
            len,
            is_dir: false,
            modified: None,
            accessed: None,
            block_size: None,
            blocks: Vec::new(),
            ownership: None,
        }
    }

    /// A directory at `location`.
    pub fn directory(location: Location) -> FileStatus {
        FileStatus {
            is_dir: true,
            ..FileStatus::file(location, 0)
        }
    }

    /// The same status with its owner, group, permission and replication.
    #[must_use]
    pub fn with_ownership(mut self, ownership: Ownership) -> FileStatus {
        self.ownership = Some(ownership);
        self
    }

    /// The same status with its modification time.
    #[must_use]
    pub fn with_modified(mut self, modified: SystemTime) -> FileStatus {
        self.modified = Some(modified);
        self
    }

    /// The same status with its last access time.
    #[must_use]
    pub fn with_accessed(mut self, accessed: SystemTime) -> FileStatus {
        self.accessed = Some(accessed);
        self
    }

    /// The same status with the store's block size.
    #[must_use]
    pub fn with_block_size(mut self, block_size: u64) -> FileStatus {
        self.block_size = Some(block_size);
        self
    }

    /// The same status with the locations of its blocks.
    #[must_use]
    pub fn with_blocks(mut self, blocks: Vec<BlockLocation>) -> FileStatus {
        self.blocks = blocks;
        self
    }
}

/// One block of a file and the hosts holding a copy of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockLocation {
    /// First byte of the block in the file.
    pub offset: u64,
    /// Length of the block in bytes.
    pub len: u64,
    /// Host names of the machines holding it.
    pub hosts: Vec<String>,
}

impl BlockLocation {
    /// The block `offset..offset + len`, held by `hosts`.
    pub fn new(offset: u64, len: u64, hosts: Vec<String>) -> BlockLocation {
        BlockLocation { offset, len, hosts }
    }
}

/// What a reader will do with the bytes it opens, so that a store can keep or drop them from
/// its caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CachePolicy {
    /// Leave caching to the store: the bytes may well be read again (a word count's input).
    #[default]
    Keep,
    /// The bytes are read once and the input is likely larger than memory (a sort's input):
    /// the store may drop what was read from its caches behind the reader (local: the page
    /// cache, every 8 MiB).
    DropBehind,
}

/// A store's writer of one new file: bytes go in through [`Write`], and
/// [`ObjectWriter::finish`] makes the file complete.
///
/// A store's files are only whole once finished: a local [`DirectWriter`] writes its last
/// partial chunk then, an object store completes its multipart upload. A writer dropped
/// without `finish` leaves no complete file (locally: an incomplete one, which the committer
/// removes; on an object store: nothing).
pub trait ObjectWriter: Write + Send {
    /// Writes what is buffered, completes the file and returns its length in bytes.
    ///
    /// # Errors
    /// The first error of any write, or of completing the file.
    fn finish(self: Box<Self>) -> io::Result<u64>;
}

impl ObjectWriter for DirectWriter {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        DirectWriter::finish(*self)
    }
}

/// A file being written through a [`Storage`] or a [`JobCommitter`](crate::JobCommitter).
///
/// The local [`DirectWriter`] is held as itself, not behind a trait object: a part file is
/// written a record (a few `write_all` calls) at a time, and this keeps each call a predicted
/// branch into the writer's own code rather than a dynamic call. Other stores' writers are
/// boxed ([`StorageWriter::new`]).
pub struct StorageWriter {
    inner: WriterRepr,
}

enum WriterRepr {
    Direct(DirectWriter),
    Object(Box<dyn ObjectWriter>),
}

impl StorageWriter {
    /// Wraps another store's writer.
    pub fn new(writer: Box<dyn ObjectWriter>) -> StorageWriter {
        StorageWriter {
            inner: WriterRepr::Object(writer),
        }
    }

    /// Writes what is buffered, completes the file and returns its length in bytes.
    ///
    /// # Errors
    /// The first error of any write, or of completing the file.
    pub fn finish(self) -> io::Result<u64> {
        match self.inner {
            WriterRepr::Direct(writer) => writer.finish(),
            WriterRepr::Object(writer) => writer.finish(),
        }
    }
}

impl From<DirectWriter> for StorageWriter {
    fn from(writer: DirectWriter) -> StorageWriter {
        StorageWriter {
            inner: WriterRepr::Direct(writer),
        }
    }
}

impl fmt::Debug for StorageWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.inner {
            WriterRepr::Direct(_) => "direct",
            WriterRepr::Object(_) => "object",
        };
        f.debug_struct("StorageWriter")
            .field("kind", &kind)
            .finish()
    }
}

impl Write for StorageWriter {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            WriterRepr::Direct(writer) => writer.write(buf),
            WriterRepr::Object(writer) => writer.write(buf),
        }
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            WriterRepr::Direct(writer) => writer.write_all(buf),
            WriterRepr::Object(writer) => writer.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            WriterRepr::Direct(writer) => writer.flush(),
            WriterRepr::Object(writer) => writer.flush(),
        }
    }
}

/// Bytes a writer of [`Storage::create`] may buffer per chunk: [`DIRECT_CHUNK`].
pub const DEFAULT_WRITE_BUFFER: usize = DIRECT_CHUNK;

/// A store of files: what input discovery, the record readers and output need of one.
///
/// Object safe and shared between tasks as `Arc<dyn Storage>`. Every method takes a
/// [`Location`]; a storage refuses a location of another store with
/// [`IoError::UnsupportedScheme`]. Errors name the location (see [`IoError`]).
///
/// Implementations provide [`status`](Storage::status), [`list`](Storage::list),
/// [`open_range`](Storage::open_range), [`create_with`](Storage::create_with) and
/// [`delete`](Storage::delete); discovery's recursive listing and glob expansion have default
/// implementations made of listings ([`walk_by_listing`], [`glob_by_listing`]) that a store
/// with a faster way (a local glob, an object store's flat listing of a prefix) overrides.
///
/// "Hidden" names below are Hadoop's: those starting with `_` or `.` (`_SUCCESS`, `.crc`
/// files), which a job's input leaves out.
pub trait Storage: fmt::Debug + Send + Sync {
    /// The status of the file or directory at `location` (symbolic links followed), or `None`
    /// if nothing is there.
    ///
    /// # Errors
    /// [`IoError::Read`] if the store cannot tell (permissions, the network).
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError>;

    /// The entries of directory `dir`, hidden ones included, in no particular order. Entries
    /// that vanish while they are listed (and dangling links) are left out.
    ///
    /// # Errors
    /// [`IoError::Read`] if `dir` is not a directory or cannot be listed.
    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError>;

    /// Every file below directory `dir`, at any depth, leaving out hidden entries (and
    /// everything below a hidden directory); in no particular order.
    ///
    /// # Errors
    /// As for [`Storage::list`], for `dir` or any directory below it.
    fn walk_visible(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        walk_by_listing(self, dir)
    }

    /// The files and directories that glob `pattern` matches, leaving out matches whose own
    /// name is hidden (Hadoop filters glob results so). `*` and `?` match within one path
    /// component, `[...]` is a character class (`[[]` a literal `[`). Matches that vanish
    /// while the pattern is expanded are left out; no match is an empty list, not an error.
    ///
    /// # Errors
    /// [`IoError::BadPattern`] for a malformed pattern; [`IoError::Read`] if a directory
    /// cannot be listed.
    fn glob_visible(&self, pattern: &Location) -> Result<Vec<FileStatus>, IoError> {
        glob_by_listing(self, pattern)
    }

    /// A sequential reader of the bytes `start..start + len` of the file at `location` (fewer
    /// at the end of the file; `len` of `u64::MAX` reads to its end).
    ///
    /// Readers often stop early (a line reader reads one line past its split and drops the
    /// rest), so a store should fetch lazily, in pieces, rather than all of `len` up front.
    /// The reader is consumed in large reads (64 KiB and up), so one dynamic call per read
    /// costs nothing that shows.
    ///
    /// # Errors
    /// [`IoError::Read`] if the file cannot be opened or positioned.
    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError>;

    /// [`Storage::open_range`] with a caching policy; by default the policy is ignored.
    ///
    /// # Errors
    /// As for [`Storage::open_range`].
    fn open_range_with(
        &self,
        location: &Location,
        start: u64,
        len: u64,
        cache: CachePolicy,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        let _ = cache;
        self.open_range(location, start, len)
    }

    /// Creates a new file at `location` for writing, the writer buffering at most about
    /// `buffer` bytes per chunk (a hint: a store has its own minimum, such as S3's 5 MiB
    /// parts). Missing parent directories are created where the store has directories.
    /// Whether an existing file is refused or replaced is the store's (the local one refuses).
    ///
    /// # Errors
    /// [`IoError::Write`] if the file cannot be created.
    fn create_with(&self, location: &Location, buffer: usize) -> Result<StorageWriter, IoError>;

    /// [`Storage::create_with`] with [`DEFAULT_WRITE_BUFFER`].
    ///
    /// # Errors
    /// As for [`Storage::create_with`].
    fn create(&self, location: &Location) -> Result<StorageWriter, IoError> {
        self.create_with(location, DEFAULT_WRITE_BUFFER)
    }

    /// Where the blocks of the file at `location` are and which hosts hold them, for placing
    /// tasks near their data; empty where the store has no such notion (the default).
    ///
    /// # Errors
    /// [`IoError::Read`] if the store cannot tell.
    fn block_locations(&self, location: &Location) -> Result<Vec<BlockLocation>, IoError> {
        let _ = location;
        Ok(Vec::new())
    }

    /// Deletes the file at `location`; `false` if there was none.
    ///
    /// # Errors
    /// [`IoError::Write`] if it exists and cannot be deleted (or is a directory).
    fn delete(&self, location: &Location) -> Result<bool, IoError>;

    /// Moves the file at `from` to `to` on the same store, replacing a file at `to`: how a
    /// copy written under a temporary name takes its place whole. By default refused.
    ///
    /// # Errors
    /// [`IoError::Write`] naming `to` if the store cannot move it (or does not move files).
    fn rename(&self, from: &Location, to: &Location) -> Result<(), IoError> {
        let _ = from;
        Err(IoError::Write {
            path: to.error_path(),
            source: io::Error::new(io::ErrorKind::Unsupported, "this store does not move files"),
        })
    }

    /// Creates the directory `location` and its missing parents. By default nothing: right
    /// for a store without directories (an object store), where a file's parents need not
    /// exist.
    ///
    /// # Errors
    /// [`IoError::Write`] if the directory cannot be made (a file is in the way).
    fn make_dirs(&self, location: &Location) -> Result<(), IoError> {
        let _ = location;
        Ok(())
    }

    /// Sets the permission bits of the file or directory at `location`: read, write and
    /// execute for its owner, group and others, and the sticky bit (`0o1777` at most). By
    /// default nothing: a store without permissions (an object store) takes none, as Hadoop's
    /// S3 client ignores them.
    ///
    /// # Errors
    /// [`IoError::Write`] if the store refuses (not the owner, or nothing there).
    fn set_permission(&self, location: &Location, bits: u16) -> Result<(), IoError> {
        let _ = (location, bits);
        Ok(())
    }

    /// Sets how many copies of the file at `location` the store keeps. By default nothing: a
    /// store that keeps no copies of its own (local files, an object store) takes the number
    /// and ignores it, as Hadoop's do.
    ///
    /// # Errors
    /// [`IoError::Write`] if the store refuses.
    fn set_replication(&self, location: &Location, replication: u16) -> Result<(), IoError> {
        let _ = (location, replication);
        Ok(())
    }

    /// Gives the file or directory at `location` the owner and/or group named (`None` leaves
    /// that one as it is). By default nothing, as for [`Storage::set_permission`].
    ///
    /// # Errors
    /// [`IoError::Write`] if the store refuses (no such user or group, not allowed).
    fn set_owner(
        &self,
        location: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), IoError> {
        let _ = (location, owner, group);
        Ok(())
    }

    /// Deletes what is at `location`: a file, or a directory with everything below it;
    /// `false` if nothing was there. By default every file below it, one by one, hidden ones
    /// included: right for a store without directories.
    ///
    /// # Errors
    /// [`IoError::Read`] if a directory cannot be listed; [`IoError::Write`] if something
    /// cannot be deleted.
    fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        delete_files_by_listing(self, location)
    }
}

/// [`Storage::delete_tree`] made of listings and file deletions: the file at `location`, or
/// every file below the directory there, hidden ones included. Directories stay (a store
/// without directories has none to remove).
///
/// # Errors
/// As for [`Storage::list`] and [`Storage::delete`].
pub fn delete_files_by_listing<S: Storage + ?Sized>(
    storage: &S,
    location: &Location,
) -> Result<bool, IoError> {
    let Some(status) = storage.status(location)? else {
        return Ok(false);
    };
    if !status.is_dir {
        return storage.delete(location);
    }
    let mut pending = vec![location.clone()];
    while let Some(dir) = pending.pop() {
        for entry in storage.list(&dir)? {
            if entry.is_dir {
                pending.push(entry.location);
            } else {
                storage.delete(&entry.location)?;
            }
        }
    }
    Ok(true)
}

/// The storage serving `location`: the local one for local paths and `file:` URIs.
///
/// # Errors
/// [`IoError::UnsupportedScheme`] for the locations of other stores (no HDFS or S3 storage
/// is built in yet).
pub fn storage_for(location: &Location) -> Result<Arc<dyn Storage>, IoError> {
    match location.scheme() {
        Scheme::File => Ok(Arc::new(LocalStorage::new())),
        _ => Err(LocalStorage::refuse(location)),
    }
}

/// [`Storage::walk_visible`] made of [`Storage::list`] calls, one per directory: the default
/// implementation, public for stores that override it but fall back on it. Symbolic links
/// are not detected (object stores have none), so a store with links that can form cycles
/// overrides the walk.
///
/// # Errors
/// As for [`Storage::list`].
pub fn walk_by_listing<S: Storage + ?Sized>(
    storage: &S,
    dir: &Location,
) -> Result<Vec<FileStatus>, IoError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.clone()];
    while let Some(dir) = pending.pop() {
        for entry in storage.list(&dir)? {
            if entry.location.file_name().is_some_and(is_hidden) {
                continue;
            }
            if entry.is_dir {
                pending.push(entry.location);
            } else {
                files.push(entry);
            }
        }
    }
    Ok(files)
}

/// [`Storage::glob_visible`] made of [`Storage::status`] and [`Storage::list`] calls: the
/// default implementation, public for stores that fall back on it.
///
/// The pattern's leading components without glob characters name the directory to start
/// from; each component with glob characters lists the directories matched so far and keeps
/// the entries whose name matches it; each later plain component is looked up by name. The
/// result is sorted by location. (`**` matches within one component, as in Hadoop.)
///
/// # Errors
/// [`IoError::BadPattern`] for a malformed pattern or one that is not UTF-8; errors of
/// `status` and `list`.
pub fn glob_by_listing<S: Storage + ?Sized>(
    storage: &S,
    pattern: &Location,
) -> Result<Vec<FileStatus>, IoError> {
    glob_listing(storage, pattern, false)
}

/// [`glob_by_listing`] keeping matches whose names are hidden (`_SUCCESS`, `.crc` files), as
/// Hadoop's file system shell expands its operands: `-rm -r 'out/*'` takes `out/_SUCCESS`.
///
/// # Errors
/// As for [`glob_by_listing`].
pub fn glob_all_by_listing<S: Storage + ?Sized>(
    storage: &S,
    pattern: &Location,
) -> Result<Vec<FileStatus>, IoError> {
    glob_listing(storage, pattern, true)
}

fn glob_listing<S: Storage + ?Sized>(
    storage: &S,
    pattern: &Location,
    keep_hidden: bool,
) -> Result<Vec<FileStatus>, IoError> {
    let hidden = |s: &FileStatus| !keep_hidden && s.location.file_name().is_some_and(is_hidden);
    let bad = |detail: String| IoError::BadPattern {
        pattern: pattern.to_string(),
        detail,
    };
    let text = pattern
        .path_str()
        .ok_or_else(|| bad("pattern is not valid UTF-8".to_string()))?;
    check_escapes(text).map_err(bad)?;
    let parts: Vec<&str> = text.split('/').collect();
    let Some(first_glob) = parts.iter().position(|part| has_glob_chars(part)) else {
        let found = storage.status(pattern)?;
        return Ok(found.into_iter().filter(|s| !hidden(s)).collect());
    };
    let mut steps = Vec::new();
    for part in &parts[first_glob..] {
        if part.is_empty() {
            // A doubled or trailing slash.
            continue;
        }
        if has_glob_chars(part) {
            let matcher = glob::Pattern::new(&glob_syntax(part))
                .map_err(|e| bad(format!("{} at character {} of '{part}'", e.msg, e.pos)))?;
            steps.push(Step::Match(matcher));
        } else {
            steps.push(Step::Name(part));
        }
    }
    let base_text = parts[..first_glob].join("/");
    let base = if base_text.is_empty() && text.starts_with('/') {
        pattern.with_path_str("/")
    } else {
        pattern.with_path_str(&base_text)
    };
    // An empty base is the current directory (or a bucket's root): listed, never looked up.
    let mut frontier = if base_text.is_empty() && !text.starts_with('/') {
        vec![FileStatus::directory(base)]
    } else {
        match storage.status(&base)? {
            Some(status) => vec![status],
            None => return Ok(Vec::new()),
        }
    };
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    for step in &steps {
        let mut next = Vec::new();
        for dir in frontier.iter().filter(|s| s.is_dir) {
            match step {
                Step::Match(matcher) => {
                    for entry in storage.list(&dir.location)? {
                        let name = entry.location.file_name().and_then(OsStr::to_str);
                        if name.is_some_and(|name| matcher.matches_with(name, options)) {
                            next.push(entry);
                        }
                    }
                }
                Step::Name(name) => next.extend(storage.status(&dir.location.join(name))?),
            }
        }
        frontier = next;
    }
    frontier.retain(|s| !hidden(s));
    frontier.sort_by(|a, b| a.location.sort_key().cmp(&b.location.sort_key()));
    Ok(frontier)
}

/// One component of a glob after its literal prefix.
enum Step<'a> {
    Match(glob::Pattern),
    Name(&'a str),
}

/// A glob as Hadoop's `GlobPattern` reads it, written in the `glob` crate's syntax: Hadoop's
/// `\` makes the next character itself (`a\[1\].txt` names `a[1].txt`), which the `glob`
/// crate writes as a class of one (`[[]`); Hadoop's `[^...]` is the `glob` crate's `[!...]`.
pub(crate) fn glob_syntax(hadoop: &str) -> String {
    let mut out = String::with_capacity(hadoop.len() + 4);
    let mut chars = hadoop.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('*' | '?' | '[' | ']')) if !in_class => {
                    out.push('[');
                    out.push(e);
                    out.push(']');
                }
                Some(e) => out.push(e),
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('!');
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            // Hadoop's `**` is two `*`s, each within one component; the glob crate's would
            // match across directories.
            '*' if !in_class && out.ends_with('*') && !out.ends_with("[*]") => {}
            other => out.push(other),
        }
    }
    out
}

/// Refuses the `\` escapes Hadoop's glob compiler (Java's re2j, which follows RE2) refuses,
/// so that a path Hadoop would not take is not read in another sense: a `\` before a letter
/// or digit that RE2 gives no meaning (`\y`, `\8`), before a character outside ASCII, or at
/// the end. Escapes RE2 knows (`\.`, `\[`, `\b`, `\d`...) are taken; sluice reads each as the
/// character after the `\`.
///
/// # Errors
/// Hadoop's words (RE2's) for the first escape refused.
pub fn check_escapes(text: &str) -> Result<(), String> {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            continue;
        }
        match chars.next() {
            None => {
                return Err("error parsing regexp: trailing backslash at end of expression".into())
            }
            Some(e)
                if !e.is_ascii()
                    || (e.is_ascii_alphanumeric()
                        && !"aftnrvbBAzdDsSwWpPQEx01234567".contains(e)) =>
            {
                return Err(format!(
                    "error parsing regexp: invalid escape sequence: `\\{e}`"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Whether a component is matched rather than looked up: it holds a wildcard, or a `\` that
/// Hadoop reads as an escape (`a\b` is `ab`).
fn has_glob_chars(text: &str) -> bool {
    text.bytes()
        .any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
}

#[cfg(test)]
mod glob_tests {
    use super::glob_syntax;

    #[test]
    fn hadoop_globs_are_written_for_the_glob_crate() {
        assert_eq!(glob_syntax("a\\[1\\].txt"), "a[[]1[]].txt");
        assert_eq!(glob_syntax("x\\*y\\?"), "x[*]y[?]");
        assert_eq!(glob_syntax("[^x]ne"), "[!x]ne");
        assert_eq!(glob_syntax("[!x]ne"), "[!x]ne");
        assert_eq!(glob_syntax("a^b[a^]"), "a^b[a^]");
        assert_eq!(glob_syntax("\\a"), "a");
        assert_eq!(glob_syntax("in/**/m"), "in/*/m");
        assert_eq!(glob_syntax("a***b"), "a*b");
        assert_eq!(glob_syntax("a\\**"), "a[*]*");
        assert_eq!(glob_syntax("[*]*"), "[*]*");
        let matches = |pattern: &str, name: &str| {
            glob::Pattern::new(&glob_syntax(pattern))
                .unwrap()
                .matches(name)
        };
        assert!(matches("a\\[1\\].txt", "a[1].txt"));
        assert!(!matches("a\\[1\\].txt", "a1.txt"));
        assert!(matches("[^x]ne", "one") && !matches("[^x]ne", "xne"));
    }
}

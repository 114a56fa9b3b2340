//! Where a job's files are, as users name them: plain paths, `file:` URIs as Hadoop's local
//! file system accepts them (tools that drive Hadoop pass those by habit), and the locations of
//! other stores (`hdfs://`, `s3://`) that a [`Storage`](crate::Storage) may serve.
//!
//! Hadoop does not decode percent escapes in a path it is given (`file:///a%20b` names the file
//! `a%20b`), and neither does sluice.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::IoError;

/// The local path a command-line location names.
///
/// * a plain path (`data/in`, `/abs/out`) is returned as it is;
/// * `file:///abs/p`, `file:/abs/p` and `file://localhost/abs/p` name `/abs/p`;
/// * `file:` followed by a relative path, a host other than `localhost`, or any other scheme
///   (`hdfs://nn/p`, `s3a://bucket/p`) is refused.
///
/// Globs are left alone (`file:///logs/*.gz` names the pattern `/logs/*.gz`).
///
/// This is the local-only front of [`Location::parse`]: use that to accept the locations of
/// other stores too, and [`Location::as_local_path`] for the path of a local one.
///
/// # Errors
/// [`IoError::UnsupportedLocation`] naming the location and why it cannot be used.
pub fn local_path(location: &str) -> Result<PathBuf, IoError> {
    let refuse = |reason: &str| IoError::UnsupportedLocation {
        location: location.to_string(),
        reason: reason.to_string(),
    };
    let Some(scheme) = uri_scheme(location) else {
        return Ok(without_dot_dot(Path::new(location)));
    };
    if !scheme.eq_ignore_ascii_case("file") {
        return Err(refuse(&format!(
            "this must be a local path or file:/// URI; {scheme}:// locations are not \
             supported here"
        )));
    }
    file_uri_path(&location[scheme.len() + 1..])
        .map(|path| without_dot_dot(Path::new(path)))
        .map_err(|reason| refuse(&reason))
}

/// `path` with each `..` that follows a name taken away with the name, by the text alone, as
/// Hadoop's `Path` normalises it: `link/../d` is `d`, wherever `link` leads (the system would
/// go to the parent of the link's target). A path without such a `..` is kept as it is
/// spelled but for a trailing `/` (`in/f.txt/` is the file, as in Hadoop); one with it loses
/// its `.` components too. A leading `..` stays, and `/..` is `/`.
fn without_dot_dot(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut after_name = false;
    let resolvable = path.components().any(|c| match c {
        Component::Normal(_) => {
            after_name = true;
            false
        }
        Component::ParentDir => after_name,
        _ => false,
    });
    let at_root = path.has_root() && path.components().any(|c| c == Component::ParentDir);
    if !resolvable && !at_root {
        // A trailing `/` goes too, as in Hadoop: `in/f.txt/` is the file.
        let bytes = path.as_os_str().as_bytes();
        let end = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'/').count();
        return match end {
            0 if bytes.is_empty() => PathBuf::new(),
            0 => PathBuf::from("/"),
            end => PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[..end])),
        };
    }
    let mut kept: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::ParentDir => match kept.last() {
                Some(Component::Normal(_)) => {
                    kept.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => kept.push(component),
            },
            Component::CurDir if !kept.is_empty() => {}
            other => kept.push(other),
        }
    }
    if kept.is_empty() || kept == [Component::CurDir] {
        return PathBuf::from(".");
    }
    kept.iter().collect()
}

/// The path of a `file:` URI, given what follows `file:`; or why it names no local file.
fn file_uri_path(rest: &str) -> Result<&str, String> {
    let path = match rest.strip_prefix("//") {
        Some(after_authority) => {
            let (host, path) = split_authority(after_authority);
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return Err(format!(
                    "a file: URI names a file on this machine; host '{host}' is not this \
                     machine's (write file:///path or file://localhost/path)"
                ));
            }
            path
        }
        None => rest,
    };
    if !path.starts_with('/') {
        return Err(
            "a file: URI needs an absolute path (file:///abs/path or file:/abs/path); \
                    give a relative path without the scheme"
                .to_string(),
        );
    }
    Ok(path)
}

/// `authority/path` split before the path's first `/` (the path keeps it; it may be empty).
fn split_authority(after_slashes: &str) -> (&str, &str) {
    match after_slashes.find('/') {
        Some(at) => after_slashes.split_at(at),
        None => (after_slashes, ""),
    }
}

/// The scheme of `location` if it is a URI: letters, digits, `+`, `-`, `.` starting with a
/// letter, then `:`; for schemes other than `file`, followed by `//` (so that a local name
/// with a colon, such as `logs:2024`, stays a path).
fn uri_scheme(location: &str) -> Option<&str> {
    let colon = location.find(':')?;
    let scheme = &location[..colon];
    let well_formed = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !well_formed {
        return None;
    }
    let is_file = scheme.eq_ignore_ascii_case("file");
    (is_file || location[colon + 1..].starts_with("//")).then_some(scheme)
}

/// Schemes of remote stores that sluice parses (and may serve through a [`Storage`]).
///
/// [`Storage`]: crate::Storage
const HDFS_SCHEMES: &[&str] = &["hdfs"];
/// Hadoop's names for S3: `s3a` is its maintained connector, `s3` and `s3n` older spellings
/// that tools still write.
const S3_SCHEMES: &[&str] = &["s3", "s3a", "s3n"];

/// Which kind of store a [`Location`] is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// The local file system: a plain path or a `file:` URI.
    File,
    /// HDFS: `hdfs://namenode[:port]/path`.
    Hdfs,
    /// Amazon S3 or a store speaking its protocol: `s3://bucket/key` (also `s3a://`, `s3n://`).
    S3,
}

/// A parsed, validated location of a file, directory or glob pattern.
///
/// * a plain path (`data/in`, `/abs/out`, `logs:2024/x`), relative or absolute, taken as it is;
/// * a `file:` URI of an absolute local path: `file:///abs/p`, `file:/abs/p`,
///   `file://localhost/abs/p` (any case of the scheme);
/// * `hdfs://host[:port]/path` (`hdfs:///path` leaves the name node to the configuration);
/// * `s3://bucket/key`, and the same with `s3a://` or `s3n://`.
///
/// Parsing never touches a store, and only [`Scheme::File`] locations are served so far
/// ([`LocalStorage`](crate::LocalStorage) refuses the others with
/// [`IoError::UnsupportedScheme`]). Percent escapes are not decoded, as in Hadoop.
///
/// [`Display`](fmt::Display) gives the location back in canonical form: a plain path as
/// written, a `file:` URI as `file:///abs/p`, a remote one with its scheme and host in lower
/// case and an empty path written `/` (`HDFS://NN:8020` is `hdfs://nn:8020/`). Parsing the
/// displayed form gives an equal location.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A local path; `uri` when it was written as a `file:` URI (then it is absolute).
    Local { path: PathBuf, uri: bool },
    /// `hdfs://authority/path`; `authority` is empty for the configured name node, `path` is
    /// absolute.
    Hdfs { authority: String, path: String },
    /// `scheme://bucket/key`; the key has no leading `/` and may be empty (the bucket's root).
    S3 {
        scheme: &'static str,
        bucket: String,
        key: String,
    },
}

impl Location {
    /// Parses a location as a user wrote it (see the type's documentation for the forms).
    ///
    /// # Errors
    /// [`IoError::BadLocation`] for an empty location, a `file:` URI that names no local file
    /// (relative, or on another host), or a malformed remote one (no bucket, credentials in
    /// the URI, a port that is not a number); [`IoError::UnsupportedScheme`] for a scheme
    /// sluice does not know (`gs://`, `ftp://`).
    pub fn parse(location: &str) -> Result<Location, IoError> {
        let bad = |reason: String| IoError::BadLocation {
            location: location.to_string(),
            reason,
        };
        if location.is_empty() {
            return Err(bad("a location cannot be empty".to_string()));
        }
        let Some(scheme) = uri_scheme(location) else {
            if let Some(known) = remote_scheme_without_slashes(location) {
                return Err(bad(format!(
                    "a {known}: location needs '//' after the scheme ({known}://...)"
                )));
            }
            return Ok(Location::from_path(without_dot_dot(Path::new(location))));
        };
        let lower = scheme.to_ascii_lowercase();
        let rest = &location[scheme.len() + 1..];
        if lower == "file" {
            let path = file_uri_path(rest).map_err(bad)?;
            return Ok(Location {
                repr: Repr::Local {
                    path: without_dot_dot(Path::new(path)),
                    uri: true,
                },
            });
        }
        // `uri_scheme` only accepts other schemes followed by `//`.
        let after_slashes = rest.get(2..).unwrap_or_default();
        if HDFS_SCHEMES.contains(&lower.as_str()) {
            let (authority, path) = split_authority(after_slashes);
            let authority = parse_host_port(authority).map_err(bad)?;
            return Ok(Location {
                repr: Repr::Hdfs {
                    authority,
                    path: normal_hdfs_path(path),
                },
            });
        }
        if let Some(&scheme) = S3_SCHEMES.iter().find(|s| **s == lower) {
            let (bucket, key) = split_authority(after_slashes);
            check_bucket(bucket).map_err(bad)?;
            return Ok(Location {
                repr: Repr::S3 {
                    scheme,
                    bucket: bucket.to_string(),
                    key: key.strip_prefix('/').unwrap_or(key).to_string(),
                },
            });
        }
        Err(IoError::UnsupportedScheme {
            location: location.to_string(),
            scheme: lower.clone(),
            reason: format!(
                "sluice does not know {lower}:// locations (it knows local paths and file:, \
                 hdfs:// and s3:// URIs)"
            ),
        })
    }

    /// The location `text` names on a command line whose plain paths are on the default file
    /// system `default_fs` (Hadoop's `fs.defaultFS`), as Hadoop resolves them: a URI stays as
    /// it is; with no default, or a `file:` one, a plain path is local; otherwise an absolute
    /// path is put on the default store (`/logs` on `hdfs://nn:8020` is
    /// `hdfs://nn:8020/logs`), and a relative one under the user's home directory there
    /// (`/user/USER/...` on HDFS; the bucket's root on S3).
    ///
    /// # Errors
    /// As [`Location::parse`], for `text` or for `default_fs`.
    pub fn resolve(text: &str, default_fs: Option<&str>, user: &str) -> Result<Location, IoError> {
        let location = Location::parse(text)?;
        let is_plain = uri_scheme(text).is_none();
        let default_fs = default_fs.map(str::trim).filter(|fs| {
            !fs.is_empty() && *fs != "local" && !fs.to_ascii_lowercase().starts_with("file:")
        });
        let Some(default_fs) = default_fs.filter(|_| is_plain) else {
            return Ok(location);
        };
        let base = Location::parse(default_fs)?;
        let path = if text.starts_with('/') {
            text.to_string()
        } else if base.scheme() == Scheme::Hdfs {
            format!("/user/{user}/{text}")
        } else {
            format!("/{text}")
        };
        Ok(match base.scheme() {
            Scheme::S3 => base.with_path_str(path.trim_start_matches('/')),
            _ => base.with_path_str(&path),
        })
    }

    /// A local path as it is, without parsing (any bytes; a name like `hdfs:x` stays a path).
    pub fn from_path(path: impl Into<PathBuf>) -> Location {
        Location {
            repr: Repr::Local {
                path: path.into(),
                uri: false,
            },
        }
    }

    /// The kind of store the location is on.
    pub fn scheme(&self) -> Scheme {
        match self.repr {
            Repr::Local { .. } => Scheme::File,
            Repr::Hdfs { .. } => Scheme::Hdfs,
            Repr::S3 { .. } => Scheme::S3,
        }
    }

    /// The scheme as written in lower case (`file` for a plain path too; `s3a` for an `s3a://`
    /// location), for messages and for choosing a store's connector.
    pub fn scheme_name(&self) -> &str {
        match &self.repr {
            Repr::Local { .. } => "file",
            Repr::Hdfs { .. } => "hdfs",
            Repr::S3 { scheme, .. } => scheme,
        }
    }

    /// The local path of a [`Scheme::File`] location, `None` for other stores.
    pub fn as_local_path(&self) -> Option<&Path> {
        match &self.repr {
            Repr::Local { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The host (and `:port`) of an HDFS location, the bucket of an S3 one; `None` for a local
    /// location and for `hdfs:///path` (the configured name node).
    pub fn authority(&self) -> Option<&str> {
        match &self.repr {
            Repr::Local { .. } => None,
            Repr::Hdfs { authority, .. } => (!authority.is_empty()).then_some(authority.as_str()),
            Repr::S3 { bucket, .. } => Some(bucket),
        }
    }

    /// The path inside the store as text: the local path (`None` if it is not UTF-8), the
    /// absolute path of an HDFS location, the key of an S3 one (no leading `/`; empty for the
    /// bucket itself).
    pub fn path_str(&self) -> Option<&str> {
        match &self.repr {
            Repr::Local { path, .. } => path.to_str(),
            Repr::Hdfs { path, .. } => Some(path),
            Repr::S3 { key, .. } => Some(key),
        }
    }

    /// The last component of the path (`None` for a root, or a path ending in `..`).
    pub fn file_name(&self) -> Option<&OsStr> {
        match &self.repr {
            Repr::Local { path, .. } => path.file_name(),
            Repr::Hdfs { path, .. } => last_component(path),
            Repr::S3 { key, .. } => last_component(key),
        }
    }

    /// The location of `name` inside this directory. `name` is one path component; an empty
    /// local path (the current directory) gives `name` itself, as a listing of `.` names its
    /// entries.
    pub fn join(&self, name: impl AsRef<OsStr>) -> Location {
        let name = name.as_ref();
        let text = || String::from_utf8_lossy(name.as_bytes());
        let repr = match &self.repr {
            Repr::Local { path, uri } => Repr::Local {
                path: if path.as_os_str().is_empty() {
                    PathBuf::from(name)
                } else {
                    path.join(name)
                },
                uri: *uri,
            },
            Repr::Hdfs { authority, path } => Repr::Hdfs {
                authority: authority.clone(),
                path: join_text(path, &text()),
            },
            Repr::S3 {
                scheme,
                bucket,
                key,
            } => Repr::S3 {
                scheme,
                bucket: bucket.clone(),
                key: if key.is_empty() {
                    text().into_owned()
                } else {
                    join_text(key, &text())
                },
            },
        };
        Location { repr }
    }

    /// The directory holding this location (`None` at a root).
    pub fn parent(&self) -> Option<Location> {
        let repr = match &self.repr {
            Repr::Local { path, uri } => Repr::Local {
                path: path.parent()?.to_path_buf(),
                uri: *uri,
            },
            Repr::Hdfs { authority, path } => {
                let trimmed = path.trim_end_matches('/');
                let cut = trimmed.rfind('/')?;
                Repr::Hdfs {
                    authority: authority.clone(),
                    path: if cut == 0 { "/" } else { &trimmed[..cut] }.to_string(),
                }
            }
            Repr::S3 {
                scheme,
                bucket,
                key,
            } => {
                let trimmed = key.trim_end_matches('/');
                if trimmed.is_empty() {
                    return None;
                }
                Repr::S3 {
                    scheme,
                    bucket: bucket.clone(),
                    key: trimmed
                        .rfind('/')
                        .map_or("", |cut| &trimmed[..cut])
                        .to_string(),
                }
            }
        };
        Some(Location { repr })
    }

    /// Whether the path is read as a glob: it holds a wildcard (`*`, `?` or `[`) or a `\`,
    /// which Hadoop's globs read as an escape even without a wildcard (`a\b` names `ab`).
    pub fn is_glob(&self) -> bool {
        self.path_bytes()
            .iter()
            .any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
    }

    /// Whether the path holds a wildcard (`*`, `?` or `[`): a glob that matches nothing is then
    /// "matches 0 files" to Hadoop, where one of escapes alone is a path that does not exist.
    pub fn has_wildcard(&self) -> bool {
        self.path_bytes()
            .iter()
            .any(|b| matches!(b, b'*' | b'?' | b'['))
    }

    fn path_bytes(&self) -> &[u8] {
        match &self.repr {
            Repr::Local { path, .. } => path.as_os_str().as_bytes(),
            Repr::Hdfs { path, .. } => path.as_bytes(),
            Repr::S3 { key, .. } => key.as_bytes(),
        }
    }

    /// The same store and authority with another path, in [`Location::path_str`]'s form (an
    /// absolute path on HDFS, a key without a leading `/` on S3): how a store names the
    /// entries it lists.
    pub fn with_path_str(&self, text: &str) -> Location {
        let repr = match &self.repr {
            Repr::Local { uri, .. } => Repr::Local {
                path: PathBuf::from(text),
                uri: *uri,
            },
            Repr::Hdfs { authority, .. } => Repr::Hdfs {
                authority: authority.clone(),
                path: normal_hdfs_path(text),
            },
            Repr::S3 { scheme, bucket, .. } => Repr::S3 {
                scheme,
                bucket: bucket.clone(),
                key: text.to_string(),
            },
        };
        Location { repr }
    }

    /// The same kind of local location (plain path or `file:` URI) with another path.
    pub fn with_local_path(&self, path: PathBuf) -> Location {
        let uri = matches!(self.repr, Repr::Local { uri: true, .. });
        Location {
            repr: Repr::Local { path, uri },
        }
    }

    /// The location as a path for [`IoError`]'s `path` fields: a local location's path itself,
    /// another store's location as its URI text.
    pub fn error_path(&self) -> PathBuf {
        match &self.repr {
            Repr::Local { path, .. } => path.clone(),
            _ => PathBuf::from(self.to_string()),
        }
    }

    /// The bytes input discovery sorts the files of one input by: a local path's bytes (as
    /// [`crate::discover_inputs`] always has), else the canonical text.
    pub(crate) fn sort_key(&self) -> Cow<'_, [u8]> {
        match &self.repr {
            Repr::Local { path, .. } => Cow::Borrowed(path.as_os_str().as_bytes()),
            _ => Cow::Owned(self.to_string().into_bytes()),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Local { path, uri: false } => write!(f, "{}", path.display()),
            Repr::Local { path, uri: true } => write!(f, "file://{}", path.display()),
            Repr::Hdfs { authority, path } => write!(f, "hdfs://{authority}{path}"),
            Repr::S3 {
                scheme,
                bucket,
                key,
            } => write!(f, "{scheme}://{bucket}/{key}"),
        }
    }
}

impl From<PathBuf> for Location {
    /// A local path, as [`Location::from_path`].
    fn from(path: PathBuf) -> Location {
        Location::from_path(path)
    }
}

impl From<&Path> for Location {
    /// A local path, as [`Location::from_path`].
    fn from(path: &Path) -> Location {
        Location::from_path(path)
    }
}

impl FromStr for Location {
    type Err = IoError;

    fn from_str(location: &str) -> Result<Location, IoError> {
        Location::parse(location)
    }
}

/// `hdfs:/x`, `s3:bucket/k`: a remote scheme sluice knows, written without `//` (which
/// [`local_path`] takes for a relative path). Returns the scheme.
fn remote_scheme_without_slashes(location: &str) -> Option<&'static str> {
    let (scheme, _) = location.split_once(':')?;
    let lower = scheme.to_ascii_lowercase();
    HDFS_SCHEMES
        .iter()
        .chain(S3_SCHEMES)
        .find(|known| **known == lower)
        .copied()
}

/// Validates `host[:port]` of an HDFS location; returns it with the host in lower case.
fn parse_host_port(authority: &str) -> Result<String, String> {
    if authority.contains('@') {
        return Err(
            "credentials do not belong in a location (write hdfs://host:port/path)".to_string(),
        );
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if let Some(port) = port {
        if host.is_empty() {
            return Err(format!("port {port} without a host"));
        }
        if port.is_empty()
            || !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u16>().is_err()
        {
            return Err(format!("port '{port}' is not a number from 0 to 65535"));
        }
    }
    let valid_host = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !valid_host {
        return Err(format!("'{host}' is not a host name"));
    }
    Ok(authority.to_ascii_lowercase())
}

/// Validates the bucket of an S3 location.
fn check_bucket(bucket: &str) -> Result<(), String> {
    if bucket.is_empty() {
        return Err("an s3 location needs a bucket (s3://bucket/key)".to_string());
    }
    if bucket.contains('@') || bucket.contains(':') {
        return Err(
            "credentials do not belong in a location (write s3://bucket/key and configure \
             the credentials)"
                .to_string(),
        );
    }
    let valid = bucket
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    if !valid {
        return Err(format!("'{bucket}' is not a bucket name"));
    }
    Ok(())
}

fn last_component(path: &str) -> Option<&OsStr> {
    let trimmed = path.trim_end_matches('/');
    let name = trimmed.rsplit('/').next()?;
    (!name.is_empty() && name != "..").then(|| OsStr::new(name))
}

fn join_text(base: &str, name: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

/// An HDFS path as Hadoop's `Path` normalises it before the name node sees it: repeated
/// slashes collapsed, `.` segments dropped and `..` taken with the segment before it (one
/// above the root stays, for the name node to refuse as it refuses Hadoop's), no trailing
/// slash; the empty path is the root.
fn normal_hdfs_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." if segments.last().is_some_and(|last| *last != "..") => {
                segments.pop();
            }
            _ => segments.push(segment),
        }
    }
    format!("/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {

    /// A `..` after a name takes the name away by the text, as Hadoop's `Path` does, so that
    /// `link/../d` is `d` and not the parent of wherever `link` leads; other spellings stay
    /// but for a trailing `/`.
    #[test]
    fn local_dot_dots_are_resolved_by_the_text_as_hadoop_resolves_them() {
        let path = |text: &str| {
            Location::parse(text)
                .unwrap()
                .as_local_path()
                .unwrap()
                .display()
                .to_string()
        };
        assert_eq!(path("link/../d"), "d");
        assert_eq!(path("a/b/../../c/"), "c");
        assert_eq!(path("./a/../b"), "./b");
        assert_eq!(path("a/.."), ".");
        assert_eq!(path("../x"), "../x");
        assert_eq!(path("../x/../y"), "../y");
        assert_eq!(path("/../x"), "/x");
        assert_eq!(path("/a/./b/../c"), "/a/c");
        assert_eq!(path("file:///t/link/../d"), "/t/d");
        assert_eq!(path("in/./x/"), "in/./x");
        assert_eq!(path("in/f.txt//"), "in/f.txt");
        assert_eq!(path("/"), "/");
        assert_eq!(path("//"), "/");
        assert_eq!(path("in//x"), "in//x");
        assert_eq!(
            crate::local_path("l/../o").unwrap(),
            std::path::PathBuf::from("o")
        );
    }

    /// As Hadoop's `Path` normalises them (`new Path("hdfs://nn//a/./b/../c/")` is
    /// `hdfs://nn/a/c`), so that the name node is asked for what the user meant.
    #[test]
    fn hdfs_paths_are_normalised_as_hadoop_normalises_them() {
        let path = |text: &str| Location::parse(text).unwrap().to_string();
        assert_eq!(path("hdfs://nn:8020//a//b/"), "hdfs://nn:8020/a/b");
        assert_eq!(path("hdfs://nn:8020/a/./b/../c"), "hdfs://nn:8020/a/c");
        assert_eq!(path("hdfs://nn:8020"), "hdfs://nn:8020/");
        assert_eq!(path("hdfs://nn:8020/./"), "hdfs://nn:8020/");
        assert_eq!(path("hdfs://nn:8020/../x"), "hdfs://nn:8020/../x");
        let resolved = |text: &str| {
            Location::resolve(text, Some("hdfs://nn:8020"), "alice")
                .unwrap()
                .to_string()
        };
        assert_eq!(resolved("./out"), "hdfs://nn:8020/user/alice/out");
        assert_eq!(resolved("."), "hdfs://nn:8020/user/alice");
        assert_eq!(resolved("../bob/in"), "hdfs://nn:8020/user/bob/in");
        assert_eq!(resolved("/data//in/"), "hdfs://nn:8020/data/in");
    }

    use super::*;

    fn ok(location: &str) -> String {
        local_path(location).unwrap().display().to_string()
    }

    fn refused(location: &str) -> String {
        local_path(location).unwrap_err().to_string()
    }

    #[test]
    fn plain_paths_are_kept() {
        assert_eq!(ok("data/in"), "data/in");
        assert_eq!(ok("/abs/out"), "/abs/out");
        assert_eq!(ok("logs:2024/x"), "logs:2024/x");
        assert_eq!(ok("a/b:c"), "a/b:c");
        assert_eq!(ok("./file:x"), "./file:x");
    }

    #[test]
    fn file_uris_name_local_paths() {
        assert_eq!(ok("file:///abs/dir"), "/abs/dir");
        assert_eq!(ok("file:/abs/dir"), "/abs/dir");
        assert_eq!(ok("file://localhost/abs/dir"), "/abs/dir");
        assert_eq!(ok("FILE:///abs/dir"), "/abs/dir");
        assert_eq!(ok("file:///logs/*.gz"), "/logs/*.gz");
        assert_eq!(ok("file:///a%20b"), "/a%20b");
        assert_eq!(ok("file:///"), "/");
    }

    #[test]
    fn other_locations_are_refused_with_the_reason() {
        assert!(refused("hdfs://nn:8020/logs").contains("hdfs:// locations are not supported"));
        assert!(refused("s3a://bucket/p").contains("s3a://"));
        assert!(refused("file://otherhost/p").contains("host 'otherhost'"));
        assert!(refused("file:relative/p").contains("absolute path"));
        assert!(refused("file://localhost").contains("absolute path"));
        assert!(refused("hdfs://nn/x").starts_with("hdfs://nn/x: "));
    }
}

//! Where a job's files are, as users name them: plain paths, and `file:` URIs as Hadoop's local
//! file system accepts them (tools that drive Hadoop pass those by habit).
//!
//! Hadoop does not decode percent escapes in a path it is given (`file:///a%20b` names the file
//! `a%20b`), and neither does sluice. Other file systems (`hdfs://`, `s3a://`, ...) are refused
//! with the reason instead of being taken for a relative path.

use std::path::PathBuf;

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
/// # Errors
/// [`IoError::UnsupportedLocation`] naming the location and why it cannot be used.
pub fn local_path(location: &str) -> Result<PathBuf, IoError> {
    let refuse = |reason: &str| IoError::UnsupportedLocation {
        location: location.to_string(),
        reason: reason.to_string(),
    };
    let Some(scheme) = uri_scheme(location) else {
        return Ok(PathBuf::from(location));
    };
    if !scheme.eq_ignore_ascii_case("file") {
        return Err(refuse(&format!(
            "sluice reads and writes local files only; {scheme}:// locations are not \
             supported yet (copy the data to a local path, or give a path or file:/// URI)"
        )));
    }
    let rest = &location[scheme.len() + 1..];
    let path = match rest.strip_prefix("//") {
        Some(after_authority) => {
            let (host, path) = match after_authority.find('/') {
                Some(at) => after_authority.split_at(at),
                None => (after_authority, ""),
            };
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return Err(refuse(&format!(
                    "a file: URI names a file on this machine; host '{host}' is not this \
                     machine's (write file:///path or file://localhost/path)"
                )));
            }
            path
        }
        None => rest,
    };
    if !path.starts_with('/') {
        return Err(refuse(
            "a file: URI needs an absolute path (file:///abs/path or file:/abs/path); \
             give a relative path without the scheme",
        ));
    }
    Ok(PathBuf::from(path))
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

#[cfg(test)]
mod tests {
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

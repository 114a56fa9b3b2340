//! Where a job's data is: the command line's locations, resolved the way Hadoop resolves
//! them, and the stores that serve them.
//!
//! A location is a plain path, a `file:` URI, `hdfs://namenode:port/path` or `s3://bucket/key`.
//! As in Hadoop, a plain path is on the default file system: local files unless
//! `fs.defaultFS` (from `-D`, or `HADOOP_CONF_DIR`'s `core-site.xml`) names another store,
//! and a relative path on HDFS is relative to the user's home directory there
//! (`/user/NAME`).

use anyhow::{Context, Result};
use sluice_io::{Location, Stores};

#[cfg(feature = "remote")]
pub(crate) use sluice_stores::StoreConfig;

/// The store settings of a build without remote stores: only `fs.defaultFS` is looked at.
#[cfg(not(feature = "remote"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreConfig {
    default_fs: Option<String>,
}

#[cfg(not(feature = "remote"))]
impl StoreConfig {
    pub(crate) fn from_env<'a>(
        defines: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<StoreConfig, std::convert::Infallible> {
        let default_fs = defines
            .into_iter()
            .filter(|(k, _)| *k == "fs.defaultFS")
            .map(|(_, v)| v.trim().to_string())
            .last();
        Ok(StoreConfig { default_fs })
    }

    pub(crate) fn default_fs(&self) -> Option<&str> {
        self.default_fs
            .as_deref()
            .filter(|fs| !fs.is_empty() && !fs.to_ascii_lowercase().starts_with("file:"))
    }
}

/// A `-D KEY=VALUE` setting as clap parses it.
pub(crate) fn parse_define(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(format!("expected KEY=VALUE, got '{text}'")),
    }
}

/// Replaces `${name}` in the `-D` values as Hadoop's `Configuration.get` does
/// ([`sluice_hadoop::conf_vars`]): a name is looked up among the `-D` settings (the last one
/// given wins), then in `HADOOP_CONF_DIR`'s site files, the environment for `env.NAME` and
/// the system properties jobs use (`user.name`, ...).
///
/// # Errors
/// A value whose substitution does not end (Hadoop throws), naming its key; a site file
/// that cannot be read.
pub(crate) fn substitute_defines(defines: &mut [(String, String)]) -> Result<()> {
    if !defines.iter().any(|(_, value)| value.contains("${")) {
        return Ok(());
    }
    let given: std::collections::HashMap<String, String> = defines.iter().cloned().collect();
    let site = store_config(&[])?;
    let lookup = |name: &str| given.get(name).cloned().or_else(|| site_value(&site, name));
    for (key, value) in defines.iter_mut() {
        if value.contains("${") {
            *value = sluice_hadoop::conf_vars::substitute(value, &lookup)
                .map_err(|e| anyhow::anyhow!("-D {key}: {e}"))?;
        }
    }
    Ok(())
}

/// `name`'s value in the site files, if this build reads them.
fn site_value(site: &StoreConfig, name: &str) -> Option<String> {
    #[cfg(feature = "remote")]
    {
        site.get(name).map(str::to_string)
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (site, name);
        None
    }
}

/// `HADOOP_CONF_DIR`'s `mapred-site.xml` (by absolute path), when the variable names a
/// directory that has one: the MapReduce settings of the site, which Hadoop's jobs read
/// beneath their own.
pub(crate) fn mapred_site() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("HADOOP_CONF_DIR").filter(|d| !d.is_empty())?;
    let site = std::path::Path::new(&dir).join("mapred-site.xml");
    if !site.is_file() {
        return None;
    }
    Some(std::path::absolute(&site).unwrap_or(site))
}

/// Puts the settings of [`mapred_site`] beneath `defines` (the command line's `-D`), as
/// Hadoop's programs read them: each key of the file that no `-D` sets (under either of its
/// names) goes first, under its current name. Nothing without the file.
///
/// # Errors
/// The file cannot be read or is not a configuration file; the message names it.
pub(crate) fn add_mapred_site(defines: &mut Vec<(String, String)>) -> Result<()> {
    use sluice_streaming::conf::{current_name, JobConf};
    let Some(path) = mapred_site() else {
        return Ok(());
    };
    let shown = path.display();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {shown} (HADOOP_CONF_DIR's site file)"))?;
    let mut site = JobConf::new();
    site.load_xml_text(&text).map_err(|e| {
        anyhow::anyhow!(
            "{shown}: {e} (HADOOP_CONF_DIR's site file: mend it, or unset HADOOP_CONF_DIR)"
        )
    })?;
    let given: std::collections::HashSet<&str> =
        defines.iter().map(|(key, _)| current_name(key)).collect();
    let beneath: Vec<(String, String)> = site
        .entries()
        .filter(|(key, _)| !given.contains(key))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    defines.splice(0..0, beneath);
    Ok(())
}

/// The store settings of a job: `HADOOP_CONF_DIR`'s site files, then the `-D` settings.
pub(crate) fn store_config(defines: &[(String, String)]) -> Result<StoreConfig> {
    StoreConfig::from_env(defines.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .context("cannot read the store configuration")
}

/// The stores a job with `config` may read and write; `job` names it to the stores.
///
/// What the job opens on a remote store (a staging directory, uploads) is written to a
/// journal, and the first entry starts a watcher process (`sluice __cleanup`) that undoes
/// it should this process die before the job finishes (see [`sluice_stores::Journal`]).
pub(crate) fn stores(config: &StoreConfig, job: &str) -> Stores {
    #[cfg(feature = "remote")]
    {
        let path = journal_path();
        let journal = sluice_stores::Journal::new(&path, config, Box::new(watch));
        let remote = sluice_stores::RemoteConnector::new(config.clone(), job)
            .with_journal(std::sync::Arc::new(journal));
        Stores::with_remote(std::sync::Arc::new(remote))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (config, job);
        Stores::local()
    }
}

/// The location `text` names, given as `option`: parsed, and a plain path put on the
/// default file system ([`Location::resolve`]).
pub(crate) fn resolve(option: &str, text: &str, config: &StoreConfig) -> Result<Location> {
    Location::resolve(text, config.default_fs(), &user_name())
        .with_context(|| format!("{option} {text}"))
}

/// The user Hadoop would act as: `HADOOP_USER_NAME`, else the login name.
pub(crate) fn user_name() -> String {
    ["HADOOP_USER_NAME", "USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "root".to_string())
}

/// Every location of `texts`, resolved by [`resolve`].
pub(crate) fn resolve_all(
    option: &str,
    texts: &[String],
    config: &StoreConfig,
) -> Result<Vec<Location>> {
    texts.iter().map(|t| resolve(option, t, config)).collect()
}

/// A new journal's path: in the temporary directory, named by this process and time.
#[cfg(feature = "remote")]
fn journal_path() -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!(
        "sluice-journal-{}-{nanos:09}.jsonl",
        std::process::id()
    ))
}

/// The watcher's end of its pipe, held open for as long as this process lives: the watcher
/// acts when it reads end-of-file.
#[cfg(feature = "remote")]
static WATCHER_PIPE: std::sync::Mutex<Vec<std::process::ChildStdin>> =
    std::sync::Mutex::new(Vec::new());

/// Starts the watcher of `journal`, saying so when it cannot be (the job goes on; only a
/// kill would leave its remote files, which the journal then lists).
#[cfg(feature = "remote")]
fn watch(journal: &std::path::Path) -> std::io::Result<()> {
    start_watcher(journal).inspect_err(|e| {
        eprintln!(
            "sluice: cannot start the clean-up watcher ({e}); should this job be killed, \
             what it left on remote stores is listed in {}",
            journal.display()
        );
    })
}

/// Starts `sluice __cleanup JOURNAL` in a process group of its own (Ctrl-C in a terminal is
/// this process's to handle, not the watcher's), its standard input a pipe from this process.
#[cfg(feature = "remote")]
fn start_watcher(journal: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let mut child = std::process::Command::new(exe)
        .arg("__cleanup")
        .arg(journal)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()?;
    if let Some(pipe) = child.stdin.take() {
        WATCHER_PIPE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pipe);
    }
    Ok(())
}

/// `sluice __cleanup JOURNAL`: waits until the job's process closes the pipe (it ended, one
/// way or another), then undoes what the journal lists unless the job finished.
#[cfg(feature = "remote")]
pub(crate) fn run_watcher(journal: &std::path::Path) -> Result<()> {
    use std::io::Read;
    let mut sink = Vec::new();
    // Nothing is ever written; this returns when the job's process is gone.
    let _ = std::io::stdin().read_to_end(&mut sink);
    let report = sluice_stores::clean_up(journal)
        .with_context(|| format!("cannot read the job's journal {}", journal.display()))?;
    if report.finished {
        return Ok(());
    }
    for dir in &report.deleted_dirs {
        eprintln!("sluice: the job ended without cleaning up; deleted {dir}");
    }
    if report.aborted_uploads > 0 || report.deleted_objects > 0 {
        eprintln!(
            "sluice: the job ended without cleaning up; aborted {} upload(s), deleted {} object(s)",
            report.aborted_uploads, report.deleted_objects
        );
    }
    for failure in &report.failures {
        eprintln!("sluice: cannot clean up after the job: {failure}");
    }
    if report.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "some of what the job left could not be removed; the journal is kept at {}",
            journal.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_are_substituted_with_the_last_value_of_a_key() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        // As in Hadoop: every -D is set before any value is read, so `b` sees a's last value.
        let mut defines = vec![
            pair("a", "1"),
            pair("b", "${a}x ${unbound.name}"),
            pair("a", "2"),
        ];
        substitute_defines(&mut defines).unwrap();
        assert_eq!(defines[1], pair("b", "2x ${unbound.name}"));
        let mut endless = vec![pair("c", &"${d}".repeat(20)), pair("d", "x")];
        let message = format!("{:#}", substitute_defines(&mut endless).unwrap_err());
        assert!(message.starts_with("-D c: "), "{message}");
    }

    fn config(default_fs: &str) -> StoreConfig {
        StoreConfig::from_env([("fs.defaultFS", default_fs)]).unwrap()
    }

    #[test]
    fn plain_paths_follow_the_default_file_system() {
        let hdfs = config("hdfs://nn:8020");
        let r = |t: &str, c: &StoreConfig| resolve("--input", t, c).unwrap().to_string();
        assert_eq!(r("/logs/a", &hdfs), "hdfs://nn:8020/logs/a");
        assert!(r("logs", &hdfs).starts_with("hdfs://nn:8020/user/"));
        assert_eq!(r("file:///tmp/x", &hdfs), "file:///tmp/x");
        assert_eq!(r("s3://b/k", &hdfs), "s3://b/k");
        let local = config("file:///");
        assert_eq!(r("/logs/a", &local), "/logs/a");
        assert_eq!(r("logs", &local), "logs");
        let s3 = config("s3a://bucket");
        assert_eq!(r("/in/x", &s3), "s3a://bucket/in/x");
    }

    #[test]
    fn defines_need_a_key() {
        assert_eq!(
            parse_define("a.b=c=d").unwrap(),
            ("a.b".into(), "c=d".into())
        );
        assert!(parse_define("novalue").is_err());
        assert!(parse_define("=x").is_err());
    }
}

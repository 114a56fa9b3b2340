//! What building a streaming job takes from the process it is submitted from, besides the
//! command line: the working directory, `PATH` and the job id. [`build`](crate::build) reads
//! them from the current process; [`build_with`](crate::job::build_with) takes them as given,
//! so that another process can rebuild the same job.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::StreamingError;

/// The job's surroundings at submission, which its programs and their lookup depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The directory the job was submitted from. Programs are looked for there (after the
    /// task's own directory, before `PATH`), and its entries are linked into the task's working
    /// directory, as Hadoop's local mode runs programs where it was started.
    ///
    /// Relative paths of the command line (`-input`, `-output`, `-files`, `-conf`) are still
    /// opened from the building process's current directory, so a caller building a job
    /// submitted elsewhere runs in this directory first.
    pub working_dir: PathBuf,
    /// `PATH` at submission: where programs that are not in the working directories are found,
    /// when the job is built and when its tasks start them.
    pub path: Option<String>,
    /// The job's id in Hadoop's form, `job_<digits>_<digits>`: its programs see it
    /// (`mapreduce_job_id`, task and attempt ids), and its scratch directory is named by it.
    pub job_id: String,
    /// Local files of the command line that were shipped to this machine from the one the
    /// job was submitted from; the others are opened where the command line names them.
    pub shipped: ShippedFiles,
    /// Where the job's scratch directory goes (its programs' working directories and logs):
    /// the system's temporary directory when `None`; a worker's scratch directory on a worker.
    pub scratch_root: Option<PathBuf>,
    /// Where the programs' stderr logs go, when not in the scratch directory: a worker's log
    /// directory (`sluice worker --log-dir`), beside other files.
    pub log_root: Option<PathBuf>,
}

impl Submission {
    /// This process's working directory and `PATH`, and a new job id.
    pub fn current() -> Submission {
        Submission {
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            path: std::env::var("PATH").ok(),
            job_id: new_job_id(),
            shipped: ShippedFiles::default(),
            scratch_root: None,
            log_root: None,
        }
    }
}

/// Copies, on this machine, of the local files a command line names (`-files`, `-file`,
/// `-conf`; see [`StreamingArgs::local_files`](crate::StreamingArgs::local_files)), made
/// when the job's tasks run on another machine than the one it was submitted from: each path
/// as written on the command line, and where its copy is here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShippedFiles(BTreeMap<String, PathBuf>);

impl ShippedFiles {
    /// Records that the file (or directory) the command line names `given` is at `here`.
    pub fn insert(&mut self, given: impl Into<String>, here: impl Into<PathBuf>) {
        self.0.insert(given.into(), here.into());
    }

    /// Whether nothing was shipped.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Where the file the command line names `given` (as `option`'s value) is opened: its
    /// shipped copy, else the local path it names.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] naming `option` if `given` names no local path.
    pub fn locate(&self, option: &str, given: &str) -> Result<PathBuf, StreamingError> {
        match self.0.get(given) {
            Some(here) => Ok(here.clone()),
            None => crate::options::local_path(option, given),
        }
    }
}

/// A new job id: Hadoop's form on a cluster, `job_<digits>_<4 digits>` (the time in
/// milliseconds and the process id), which tools that parse Hadoop's console accept (its local
/// mode's `job_local<digits>_0001` they do not).
pub fn new_job_id() -> String {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("job_{stamp}{:05}_0001", std::process::id() % 100_000)
}

/// Whether `id` has the form of a job id, `job_<digits>_<digits>` (so that it names a scratch
/// directory and no other path).
pub fn is_job_id(id: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    id.strip_prefix("job_")
        .and_then(|rest| rest.split_once('_'))
        .is_some_and(|(stamp, serial)| digits(stamp) && digits(serial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_copies_are_opened_in_place_of_the_named_files() {
        let mut shipped = ShippedFiles::default();
        assert!(shipped.is_empty());
        shipped.insert("lib/map.py", "/copies/0/map.py");
        assert_eq!(
            shipped.locate("-files", "lib/map.py").unwrap(),
            PathBuf::from("/copies/0/map.py")
        );
        // Not shipped: the path the command line names, URIs made paths.
        assert_eq!(
            shipped.locate("-files", "file:///data/dict.txt").unwrap(),
            PathBuf::from("/data/dict.txt")
        );
        assert!(shipped.locate("-conf", "hdfs://nn/x.xml").is_err());
    }

    #[test]
    fn new_job_ids_have_the_form_of_job_ids() {
        assert!(is_job_id(&new_job_id()));
        assert!(is_job_id("job_1_0001"));
        for bad in [
            "",
            "job_",
            "job_1",
            "job__0001",
            "job_1_",
            "job_1_2_3",
            "job_../x_1",
        ] {
            assert!(!is_job_id(bad), "{bad}");
        }
    }
}

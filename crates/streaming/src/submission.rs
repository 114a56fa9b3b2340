//! What building a streaming job takes from the process it is submitted from, besides the
//! command line: the working directory, `PATH` and the job id. [`build`](crate::build) reads
//! them from the current process; [`build_with`](crate::job::build_with) takes them as given,
//! so that another process can rebuild the same job.

use std::path::PathBuf;

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
}

impl Submission {
    /// This process's working directory and `PATH`, and a new job id.
    pub fn current() -> Submission {
        Submission {
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            path: std::env::var("PATH").ok(),
            job_id: new_job_id(),
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

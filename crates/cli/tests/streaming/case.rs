//! Loading a case directory: its argument list, its expectations, its content hash, and the
//! scratch copy each system runs against.
//!
//! A case is a directory under `tests/streaming/cases/` holding:
//!
//! - `args`: the streaming command line, one argument per line (so no quoting is ever
//!   involved). `{case}` stands for the absolute path of the scratch copy of the case
//!   directory, `{output}` for the job's output directory.
//! - `expect` (optional): `key = value` lines, `#` comments. Keys: `status` (`success`, the
//!   default, or `failure`), `stderr` (text that must appear in the log of both systems: the
//!   failing script's marker), `counters` (comma-separated counter groups whose values must
//!   match), `exit-code` (the exit code both systems must return, for failures whose code
//!   Hadoop fixes: 1 for a failed job or a usage error, 5 for a job that cannot be
//!   launched), `sort-values` (`true` when Hadoop leaves the order of values within equal keys
//!   unspecified: lines are then compared after sorting each run of lines with equal keys),
//!   `decompress` (`true` for compressed output: files are compared after decoding each by its
//!   extension, since the compressed bytes of two implementations differ), `sequencefile`
//!   (`true` for SequenceFile output: part files are compared by their header's classes,
//!   compression and codec and by their records, since sync markers are random).
//! - `setup.py` (optional): run with Python 3 in the scratch copy before the job, to make what
//!   git cannot hold (empty directories) or what is too big to commit (inputs spanning
//!   several local-FS blocks). It must be deterministic: its output is not part of the hash.
//! - anything else: inputs and the streaming programs. `*.py` and `*.sh` are made executable
//!   in the scratch copy.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a case expects of both systems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expect {
    /// The job must succeed (exit 0, `_SUCCESS` written) rather than fail.
    pub(crate) success: bool,
    /// Text both systems' stderr must contain (sluice must quote the failing child's stderr).
    pub(crate) stderr: Option<String>,
    /// User counter groups compared between the two job logs.
    pub(crate) counters: Vec<String>,
    /// Compare each output file after sorting lines within runs of equal keys.
    pub(crate) sort_values: bool,
    /// The exact exit code both systems must return, when the case pins it.
    pub(crate) exit_code: Option<i32>,
    /// Compare what the output files decode to (by extension) rather than their bytes.
    pub(crate) decompress: bool,
    /// The part files are SequenceFiles: compare their headers and records (decoded, since
    /// sync markers are random), not their bytes.
    pub(crate) sequence_file: bool,
}

impl Default for Expect {
    fn default() -> Expect {
        Expect {
            success: true,
            stderr: None,
            counters: Vec::new(),
            sort_values: false,
            exit_code: None,
            decompress: false,
            sequence_file: false,
        }
    }
}

impl Expect {
    /// Parses an `expect` file.
    pub(crate) fn parse(text: &str) -> Result<Expect, String> {
        let mut expect = Expect::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("line {}: expected key = value", n + 1))?;
            let (key, value) = (key.trim(), value.trim());
            match key {
                "status" => {
                    expect.success = match value {
                        "success" => true,
                        "failure" => false,
                        _ => return Err(format!("line {}: status is success or failure", n + 1)),
                    }
                }
                "stderr" => expect.stderr = Some(value.to_string()),
                "counters" => {
                    expect.counters = value
                        .split(',')
                        .map(|g| g.trim().to_string())
                        .filter(|g| !g.is_empty())
                        .collect();
                }
                "sort-values" => expect.sort_values = value == "true",
                "decompress" => expect.decompress = value == "true",
                "sequencefile" => expect.sequence_file = value == "true",
                "exit-code" => {
                    let code = value
                        .parse()
                        .map_err(|_| format!("line {}: exit-code is a number", n + 1))?;
                    expect.exit_code = Some(code);
                }
                _ => return Err(format!("line {}: unknown key {key}", n + 1)),
            }
        }
        Ok(expect)
    }
}

/// One case directory, loaded.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    /// The arguments with placeholders still in.
    pub(crate) args: Vec<String>,
    pub(crate) expect: Expect,
    /// Hash of everything that decides Hadoop's result: the driver, the arguments, and every
    /// file of the case. Names the cache entry.
    pub(crate) hash: String,
}

impl Case {
    /// Loads the case in `dir`; `salt` is mixed into the hash (the driver's sources).
    pub(crate) fn load(dir: &Path, salt: &[u8]) -> Result<Case, String> {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let args_text = fs::read_to_string(dir.join("args"))
            .map_err(|e| format!("case {name}: cannot read args: {e}"))?;
        let args: Vec<String> = args_text.lines().map(str::to_string).collect();
        if args.is_empty() {
            return Err(format!("case {name}: args is empty"));
        }
        let expect = match fs::read_to_string(dir.join("expect")) {
            Ok(text) => Expect::parse(&text).map_err(|e| format!("case {name}: expect: {e}"))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Expect::default(),
            Err(e) => return Err(format!("case {name}: cannot read expect: {e}")),
        };
        let mut hasher = Fnv::new();
        hasher.write(salt);
        hasher.write(name.as_bytes());
        for file in files_under(dir).map_err(|e| format!("case {name}: {e}"))? {
            let rel = file.strip_prefix(dir).unwrap();
            hasher.write(rel.to_string_lossy().as_bytes());
            hasher.write(&[0]);
            let bytes = fs::read(&file).map_err(|e| format!("case {name}: {e}"))?;
            hasher.write(&(bytes.len() as u64).to_le_bytes());
            hasher.write(&bytes);
        }
        Ok(Case {
            name,
            dir: dir.to_path_buf(),
            args,
            expect,
            hash: format!("{:016x}", hasher.finish()),
        })
    }

    /// Copies the case into `dest` (which must not exist), makes its scripts executable, and
    /// runs its `setup.py` there.
    pub(crate) fn materialize(&self, dest: &Path) -> Result<(), String> {
        copy_tree(&self.dir, dest).map_err(|e| format!("copying case {}: {e}", self.name))?;
        for file in files_under(dest).map_err(|e| e.to_string())? {
            let ext = file.extension().and_then(|e| e.to_str());
            if matches!(ext, Some("py") | Some("sh")) {
                fs::set_permissions(&file, fs::Permissions::from_mode(0o755))
                    .map_err(|e| e.to_string())?;
            }
        }
        if dest.join("setup.py").exists() {
            let out = Command::new("python3")
                .arg("setup.py")
                .current_dir(dest)
                .output()
                .map_err(|e| format!("case {}: cannot run python3 setup.py: {e}", self.name))?;
            if !out.status.success() {
                return Err(format!(
                    "case {}: setup.py failed: {}",
                    self.name,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        Ok(())
    }

    /// The arguments with `{case}` and `{output}` replaced.
    pub(crate) fn resolve_args(&self, case_copy: &Path, output: &Path) -> Vec<String> {
        let case_copy = case_copy.to_str().expect("scratch paths are UTF-8");
        let output = output.to_str().expect("scratch paths are UTF-8");
        self.args
            .iter()
            .map(|a| a.replace("{case}", case_copy).replace("{output}", output))
            .collect()
    }
}

/// Every case under `cases_dir`, sorted by name.
pub(crate) fn load_all(cases_dir: &Path, salt: &[u8]) -> Result<Vec<Case>, String> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(cases_dir)
        .map_err(|e| format!("{}: {e}", cases_dir.display()))?
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| Case::load(d, salt)).collect()
}

/// All regular files under `dir`, recursively, sorted (so hashing is stable).
pub(crate) fn files_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// 64-bit FNV-1a: stable across Rust releases and platforms (std's `DefaultHasher` is not
/// promised to be), which is all a cache key needs.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

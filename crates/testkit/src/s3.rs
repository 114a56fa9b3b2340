//! An S3-compatible server: moto's, run by `tests/stores/s3.py serve`, and the few client calls
//! tests check with, run by the same script through boto3.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::process::{server_dir, without_proxies, ServerProcess};
use crate::stores_sources;

/// How long moto may take to start (about a second).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What to do when moto is missing.
const INSTALL_MOTO: &str = "python3 -m pip install 'moto[server]'";

/// How to start an [`S3Server`]. The defaults are S3's own rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Options {
    /// The smallest part but the last of a multipart upload, in bytes (moto's
    /// `S3_UPLOAD_PART_MIN_SIZE`); `None` keeps S3's 5 MiB, below which
    /// CompleteMultipartUpload fails with `EntityTooSmall`.
    pub min_part_size: Option<u64>,
    /// The most keys a listing returns per page when the request asks for more (moto's
    /// `MOTO_S3_DEFAULT_MAX_KEYS`); `None` keeps S3's 1000. Small values exercise a client's
    /// paging.
    pub max_keys: Option<u32>,
}

/// A running S3-compatible server (moto) on 127.0.0.1, empty when started, holding everything
/// in memory. Clients use path-style requests against [`S3Server::endpoint`] with the fixed
/// test credentials; any signature is accepted. Dropping it kills the server.
pub struct S3Server {
    /// Held for its `Drop`, which stops the server.
    _server: ServerProcess,
    endpoint: String,
}

impl S3Server {
    /// Starts a server with S3's own rules and waits until it answers (about a second).
    ///
    /// Fails with a message saying what to install when python3 or moto is missing.
    pub fn start() -> Result<S3Server, String> {
        S3Server::start_with(S3Options::default())
    }

    /// [`S3Server::start`] with other limits.
    pub fn start_with(options: S3Options) -> Result<S3Server, String> {
        let dir = server_dir("s3-")?;
        let mut cmd = Command::new("python3");
        cmd.arg(stores_sources().join("s3.py"))
            .arg("serve")
            .current_dir(dir.path())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("S3_UPLOAD_PART_MIN_SIZE")
            .env_remove("MOTO_S3_DEFAULT_MAX_KEYS");
        if let Some(size) = options.min_part_size {
            cmd.env("S3_UPLOAD_PART_MIN_SIZE", size.to_string());
        }
        if let Some(keys) = options.max_keys {
            cmd.env("MOTO_S3_DEFAULT_MAX_KEYS", keys.to_string());
        }
        let (server, endpoint) =
            ServerProcess::start("moto", cmd, dir, &[], START_TIMEOUT, |line| {
                (line == "MISSING moto").then(|| {
                    format!(
                        "moto (the S3 server of the tests) is not installed for python3: \
                         {INSTALL_MOTO}, or leave out the feature test-stores to ignore the tests that \
                         need S3"
                    )
                })
            })
            .map_err(|e| {
                if e.contains("cannot start python3") {
                    format!("{e} (Python 3 and moto are required: {INSTALL_MOTO})")
                } else {
                    e
                }
            })?;
        Ok(S3Server {
            _server: server,
            endpoint,
        })
    }

    /// The endpoint for path-style requests: `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The access key id of the test credentials.
    pub fn access_key(&self) -> &'static str {
        "sluice-test"
    }

    /// The secret access key of the test credentials.
    pub fn secret_key(&self) -> &'static str {
        "sluice-test-secret"
    }

    /// The region to sign for, where buckets are created.
    pub fn region(&self) -> &'static str {
        "us-east-1"
    }

    /// Creates the bucket `name` (3 to 63 characters: lowercase letters, digits, `-`, `.`).
    ///
    /// # Panics
    ///
    /// When the call fails, with the client's error.
    pub fn create_bucket(&self, name: &str) {
        self.call(&["create-bucket", name], None);
    }

    /// Stores `data` as the object `key` of `bucket` (one PutObject).
    ///
    /// # Panics
    ///
    /// When the call fails, with the client's error.
    pub fn put_object(&self, bucket: &str, key: &str, data: &[u8]) {
        self.call(&["put-object", bucket, key], Some(data));
    }

    /// Stores `data` as the object `key` of `bucket` through a multipart upload of parts of
    /// `part_size` bytes (the last one shorter), as large files are uploaded; the object's
    /// ETag then ends in `-N`. Parts but the last below [`S3Options::min_part_size`] (S3's
    /// 5 MiB by default) make it fail with `EntityTooSmall`, and the upload is aborted.
    ///
    /// # Panics
    ///
    /// When a call fails, with the client's error.
    pub fn put_object_multipart(&self, bucket: &str, key: &str, data: &[u8], part_size: usize) {
        assert!(part_size > 0, "parts of 0 bytes");
        let part_size = part_size.to_string();
        self.call(
            &["put-object-multipart", bucket, key, &part_size],
            Some(data),
        );
    }

    /// Starts a multipart upload of `key` in `bucket` and leaves it open (as a crashed writer
    /// would), returning its upload id: for tests of what cleans such uploads up.
    ///
    /// # Panics
    ///
    /// When the call fails, with the client's error.
    pub fn start_multipart_upload(&self, bucket: &str, key: &str) -> String {
        let out = self.call(&["start-multipart-upload", bucket, key], None);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The objects of `bucket` whose keys start with `prefix`, as `(key, size)` in key order,
    /// every page of ListObjectsV2.
    ///
    /// # Panics
    ///
    /// When the call fails (no such bucket, ...), with the client's error.
    pub fn list_objects(&self, bucket: &str, prefix: &str) -> Vec<(String, u64)> {
        let out = self.call(&["list-objects", bucket, prefix], None);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("S3 list-objects: cannot read the listing: {e}"))
    }

    /// The bytes of the object `key` of `bucket`.
    ///
    /// # Panics
    ///
    /// When the call fails (no such object, ...), with the client's error.
    pub fn get_object(&self, bucket: &str, key: &str) -> Vec<u8> {
        self.call(&["get-object", bucket, key], None).stdout
    }

    /// The multipart uploads of `bucket` that were started and neither completed nor
    /// aborted, as `(key, upload_id)`, every page of ListMultipartUploads.
    ///
    /// # Panics
    ///
    /// When the call fails, with the client's error.
    pub fn list_multipart_uploads(&self, bucket: &str) -> Vec<(String, String)> {
        let out = self.call(&["list-multipart-uploads", bucket], None);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("S3 list-multipart-uploads: cannot read the listing: {e}"))
    }

    /// Runs one client call of `tests/stores/s3.py` (boto3, path-style) against this server,
    /// with `stdin` as its input, and panics unless it succeeds.
    fn call(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = Command::new("python3");
        cmd.arg(stores_sources().join("s3.py"))
            .arg(&self.endpoint)
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("AWS_ACCESS_KEY_ID", self.access_key())
            .env("AWS_SECRET_ACCESS_KEY", self.secret_key())
            .env("AWS_DEFAULT_REGION", self.region())
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = without_proxies(&mut cmd)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start python3 for an S3 call: {e}"));
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // The script reads all of stdin before it writes anything, so this cannot block
            // on a full stdout pipe.
            pipe.write_all(data)
                .unwrap_or_else(|e| panic!("S3 {}: cannot send the data: {e}", args[0]));
        }
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("S3 {}: {e}", args[0]));
        assert!(
            out.status.success(),
            "S3 {} against {} failed ({}): {}",
            args.join(" "),
            self.endpoint,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        out
    }
}

/// The SigV4 signature botocore (boto3's signer) computes for a request to S3 in `region`:
/// `method`, `url` with its query exactly as sent, and `headers`, the request's signed headers
/// (`host` and `x-amz-date` among them; the signing time is `x-amz-date`'s). An independent
/// check of a request a server that accepts any signature (moto) would not refuse.
///
/// # Panics
///
/// When python3 or botocore cannot be run, with the error.
pub fn botocore_signature(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    access_key: &str,
    secret_key: &str,
    region: &str,
) -> String {
    let headers: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let mut child = Command::new("python3")
        .arg(stores_sources().join("s3.py"))
        .args(["sigv4", method, url, region])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("AWS_ACCESS_KEY_ID", access_key)
        .env("AWS_SECRET_ACCESS_KEY", secret_key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start python3 for botocore's signer: {e}"));
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(serde_json::Value::Object(headers).to_string().as_bytes())
            .unwrap_or_else(|e| panic!("sigv4: cannot send the headers: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("sigv4: {e}"));
    assert!(
        out.status.success(),
        "sigv4 {method} {url} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl std::fmt::Debug for S3Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Server")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

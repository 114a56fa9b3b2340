//! HDFS as a [`Storage`], through the pure-Rust `hdfs-native` client (no JVM, no libhdfs).
//!
//! One client per name node (the authority of `hdfs://host:port/...`; `hdfs:///...` is the
//! configured `fs.defaultFS`), shared by every task. Metadata calls are bounded by the
//! configured timeout, so an unreachable name node is reported instead of waited for. Reads
//! stream the range block by block from the data nodes ([`PrefetchReader`]); writes go
//! through the client's pipeline in chunks.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use sluice_io::{
    BlockLocation, FileStatus, IoError, Location, ObjectWriter, Storage, StorageWriter,
};

use crate::error::{io_error, read_error, unavailable, write_error};
use crate::read::{OpenAt, PrefetchReader};
use crate::runtime::{block_on, block_on_timeout, runtime};
use crate::StoreConfig;

/// Bytes a writer gathers before handing them to the client's pipeline.
const WRITE_CHUNK: usize = 4 << 20;

/// One HDFS name node's file system.
#[derive(Debug, Clone)]
pub struct HdfsStorage {
    client: Client,
    /// The name node as the locations name it (`host:port`; empty for `fs.defaultFS`).
    authority: String,
    /// The name node as messages name it.
    name: String,
    timeout: Duration,
    /// The name node's web address (`host:port`), for WebHDFS.
    http: Option<String>,
    /// The block size of new files (`dfs.blocksize`, which the client chooses in HDFS); `None`:
    /// the name node's default.
    block_size: Option<u64>,
    http_client: reqwest::Client,
}

impl HdfsStorage {
    /// Connects (lazily: nothing is sent until the first call) to the name node of
    /// `location`, with `config`'s settings passed to the client as Hadoop configuration.
    ///
    /// # Errors
    /// [`IoError::Store`] if `hdfs:///` is used without `fs.defaultFS` naming a name node, or
    /// the client refuses the configuration.
    pub fn connect(location: &Location, config: &StoreConfig) -> Result<HdfsStorage, IoError> {
        let authority = location.authority().unwrap_or_default().to_string();
        let url = if authority.is_empty() {
            match config.default_fs() {
                Some(fs) if fs.to_ascii_lowercase().starts_with("hdfs://") => fs.to_string(),
                _ => {
                    return Err(unavailable(
                        location,
                        "hdfs:/// names the default file system, but fs.defaultFS is not an \
                         hdfs:// URI (give -D fs.defaultFS=hdfs://namenode:8020, set \
                         HADOOP_CONF_DIR to a directory with core-site.xml, or name the name \
                         node in the location)",
                    ))
                }
            }
        } else {
            format!("hdfs://{authority}")
        };
        let timeout = config
            .timeout()
            .map_err(|e| unavailable(location, e.to_string()))?;
        probe_name_node(&url, config, timeout).map_err(|e| unavailable(location, e))?;
        let handle = runtime()
            .map_err(|e| unavailable(location, e.to_string()))?
            .handle()
            .clone();
        let client = ClientBuilder::new()
            .with_url(url.clone())
            .with_config(
                config
                    .properties()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            )
            .with_io_runtime(handle)
            .build()
            .map_err(|e| unavailable(location, format!("cannot set up a client of {url}: {e}")))?;
        // WebHDFS is on the name node's web port: `dfs.namenode.http-address`, else the
        // default port on the name node's host.
        let http = config
            .get("dfs.namenode.http-address")
            .map(str::to_string)
            .or_else(|| {
                let host = url.trim_start_matches("hdfs://").split([':', '/']).next()?;
                (!host.is_empty()).then(|| format!("{host}:9870"))
            });
        let http_client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(|e| unavailable(location, format!("cannot set up an HTTP client: {e}")))?;
        let block_size = match config.get("dfs.blocksize") {
            None => None,
            Some(text) => Some(parse_hadoop_size(text).ok_or_else(|| {
                unavailable(
                    location,
                    format!("-D dfs.blocksize={text}: expected a size such as 134217728 or 128m"),
                )
            })?),
        };
        Ok(HdfsStorage {
            client,
            authority,
            name: url,
            timeout,
            http,
            http_client,
            block_size,
        })
    }

    /// The absolute path of `location` on this name node.
    fn path<'a>(&self, location: &'a Location) -> Result<&'a str, IoError> {
        let same = location.scheme() == sluice_io::Scheme::Hdfs
            && location.authority().unwrap_or_default() == self.authority;
        match location.path_str() {
            Some(path) if same => Ok(path),
            _ => Err(IoError::UnsupportedScheme {
                location: location.to_string(),
                scheme: location.scheme_name().to_string(),
                reason: format!("not a location of {}", self.name),
            }),
        }
    }

    /// Runs a metadata call within the timeout, its error translated.
    fn call<T>(
        &self,
        what: &str,
        future: impl std::future::Future<Output = Result<T, HdfsError>>,
    ) -> io::Result<T> {
        let what = format!("{what} (name node {})", self.name);
        block_on_timeout(self.timeout, &what, async {
            future.await.map_err(|e| hdfs_io_error(&e))
        })
    }

    /// The status of `path` as a [`FileStatus`] at `location`.
    fn status_of(location: Location, status: &hdfs_native::client::FileStatus) -> FileStatus {
        let mut out = if status.isdir {
            FileStatus::directory(location)
        } else {
            FileStatus::file(location, status.length as u64)
        };
        if let Some(size) = status.blocksize.filter(|&b| b > 0) {
            out = out.with_block_size(size);
        }
        out.with_ownership(sluice_io::Ownership {
            owner: status.owner.clone(),
            group: status.group.clone(),
            permission: status.permission,
            replication: status.replication.unwrap_or(0),
        })
        .with_modified(UNIX_EPOCH + Duration::from_millis(status.modification_time))
        .with_accessed(UNIX_EPOCH + Duration::from_millis(status.access_time))
    }

    /// Creates the directory `location` and its missing parents.
    pub(crate) fn mkdirs(&self, location: &Location) -> Result<(), IoError> {
        let path = self.path(location)?;
        self.call("mkdirs", self.client.mkdirs(path, 0o755, true))
            .map_err(|e| write_error(location, e))
    }

    /// Renames `from` to `to`; an existing `to` is replaced only if `overwrite`.
    pub(crate) fn rename(
        &self,
        from: &Location,
        to: &Location,
        overwrite: bool,
    ) -> Result<(), IoError> {
        let (src, dst) = (self.path(from)?, self.path(to)?);
        self.call("rename", self.client.rename(src, dst, overwrite))
            .map_err(|e| write_error(to, e))
    }

    /// Deletes `location` and, if `recursive`, everything below it; `false` if nothing was
    /// there.
    pub(crate) fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        let path = self.path(location)?;
        match self.call("delete", self.client.delete(path, true)) {
            Ok(deleted) => Ok(deleted),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(write_error(location, e)),
        }
    }

    /// A writer of a new file at `location`, refusing an existing file unless `overwrite`;
    /// missing parent directories are created if `parents`, else refused.
    pub(crate) fn create_file(
        &self,
        location: &Location,
        overwrite: bool,
        parents: bool,
    ) -> Result<StorageWriter, IoError> {
        let path = self.path(location)?;
        let mut options = WriteOptions::default()
            .overwrite(overwrite)
            .create_parent(parents);
        if let Some(size) = self.block_size {
            options = options.block_size(size);
        }
        let writer = self
            .call("create", self.client.create(path, options))
            .map_err(|e| write_error(location, e))?;
        Ok(StorageWriter::new(Box::new(HdfsWriter {
            writer: Some(writer),
            buffer: BytesMut::with_capacity(WRITE_CHUNK),
            written: 0,
        })))
    }
}

impl Storage for HdfsStorage {
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError> {
        let path = self.path(location)?;
        match self.call("status", self.client.get_file_info(path)) {
            Ok(status) => Ok(Some(HdfsStorage::status_of(location.clone(), &status))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(read_error(location, e)),
        }
    }

    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        let path = self.path(dir)?;
        let entries = self
            .call("list", self.client.list_status(path, false))
            .map_err(|e| read_error(dir, e))?;
        Ok(entries
            .iter()
            .map(|entry| HdfsStorage::status_of(dir.with_path_str(&entry.path), entry))
            .collect())
    }

    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        let path = self.path(location)?;
        let reader = self
            .call("open", self.client.read(path))
            .map_err(|e| read_error(location, e))?;
        let file_len = reader.file_length() as u64;
        let end = start.saturating_add(len).min(file_len);
        let reader = Arc::new(reader);
        let open: OpenAt = Box::new(move |at| {
            let reader = Arc::clone(&reader);
            Box::pin(async move {
                let (Ok(at), Ok(end)) = (usize::try_from(at), usize::try_from(end)) else {
                    return Err(io_error(io::ErrorKind::InvalidInput, "offset out of range"));
                };
                let stream = reader
                    .read_range_stream(at.min(end), end - at.min(end))
                    .map_err(|e| hdfs_io_error(&e));
                Ok(stream.boxed())
            })
        });
        let start = start.min(end);
        let reader =
            PrefetchReader::start(start, end - start, open).map_err(|e| read_error(location, e))?;
        Ok(Box::new(reader))
    }

    fn create_with(&self, location: &Location, _buffer: usize) -> Result<StorageWriter, IoError> {
        self.create_file(location, false, true)
    }

    fn block_locations(&self, location: &Location) -> Result<Vec<BlockLocation>, IoError> {
        let path = self.path(location)?;
        let Some(http) = &self.http else {
            return Ok(Vec::new());
        };
        let user = ["HADOOP_USER_NAME", "USER"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
            .unwrap_or_else(|| "root".to_string());
        let url =
            format!("http://{http}/webhdfs/v1{path}?op=GETFILEBLOCKLOCATIONS&user.name={user}");
        let client = self.http_client.clone();
        let what = format!("block locations (WebHDFS at {http})");
        let body = block_on_timeout(self.timeout, &what, async move {
            let response =
                client.get(&url).send().await.map_err(|e| {
                    io_error(io::ErrorKind::ConnectionRefused, format!("{url}: {e}"))
                })?;
            let status = response.status();
            let body = response
                .bytes()
                .await
                .map_err(|e| io_error(io::ErrorKind::Other, format!("{url}: {e}")))?;
            if !status.is_success() {
                let kind = if status.as_u16() == 404 {
                    io::ErrorKind::NotFound
                } else {
                    io::ErrorKind::Other
                };
                let text = String::from_utf8_lossy(&body);
                return Err(io_error(kind, format!("{url}: HTTP {status}: {text}")));
            }
            Ok(body)
        })
        .map_err(|e| read_error(location, e))?;
        parse_block_locations(&body).map_err(|e| read_error(location, e))
    }

    fn delete(&self, location: &Location) -> Result<bool, IoError> {
        let path = self.path(location)?;
        match self.call("delete", self.client.delete(path, false)) {
            Ok(deleted) => Ok(deleted),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(write_error(location, e)),
        }
    }

    fn make_dirs(&self, location: &Location) -> Result<(), IoError> {
        self.mkdirs(location)
    }

    fn rename(&self, from: &Location, to: &Location) -> Result<(), IoError> {
        HdfsStorage::rename(self, from, to, true)
    }

    fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        HdfsStorage::delete_tree(self, location)
    }

    fn set_permission(&self, location: &Location, bits: u16) -> Result<(), IoError> {
        let path = self.path(location)?;
        self.call(
            "setPermission",
            self.client.set_permission(path, u32::from(bits)),
        )
        .map_err(|e| write_error(location, e))
    }

    fn set_replication(&self, location: &Location, replication: u16) -> Result<(), IoError> {
        let path = self.path(location)?;
        let done = self
            .call(
                "setReplication",
                self.client.set_replication(path, u32::from(replication)),
            )
            .map_err(|e| write_error(location, e))?;
        if done {
            Ok(())
        } else {
            Err(write_error(
                location,
                io::Error::other(format!("Could not set replication for: {path}")),
            ))
        }
    }

    fn set_owner(
        &self,
        location: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), IoError> {
        let path = self.path(location)?;
        self.call("setOwner", self.client.set_owner(path, owner, group))
            .map_err(|e| write_error(location, e))
    }
}

/// A size as Hadoop's configuration writes it: digits with an optional binary suffix (`k`,
/// `m`, `g`, `t`, any case); `None` for anything else, zero, or an overflow.
fn parse_hadoop_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last()? {
        (at, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                't' => 40,
                _ => return None,
            };
            (&text[..at], shift)
        }
        _ => (text, 0),
    };
    let value: u64 = digits.parse().ok()?;
    value.checked_mul(1 << shift).filter(|&v| v > 0)
}

/// Connects once to the name node of `url` (`hdfs://host[:port]`, port 8020 by default), so
/// that a name node that refuses connections is reported at once with the reason: the client
/// itself retries such connections for a long time. A host name that does not resolve is an
/// error too, unless it is an HA name service of the configuration (`dfs.ha.namenodes.NAME`),
/// which the client resolves itself: not probed.
fn probe_name_node(url: &str, config: &StoreConfig, timeout: Duration) -> Result<(), String> {
    use std::net::{TcpStream, ToSocketAddrs};
    let authority = url
        .trim_start_matches("hdfs://")
        .split('/')
        .next()
        .unwrap_or_default();
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    let with_port = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:8020")
    };
    let resolved = with_port.to_socket_addrs().map(|mut a| a.next());
    let Ok(Some(address)) = resolved else {
        let host = with_port
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host);
        if config.get(&format!("dfs.ha.namenodes.{host}")).is_some() {
            return Ok(());
        }
        let why = match resolved {
            Err(e) => e.to_string(),
            Ok(_) => "no address".to_string(),
        };
        return Err(format!(
            "cannot resolve the name node's host {host}: {why} (is the name right? an HA name \
             service needs dfs.nameservices and dfs.ha.namenodes.{host} in hdfs-site.xml)"
        ));
    };
    match TcpStream::connect_timeout(&address, timeout.min(Duration::from_secs(10))) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "cannot reach the name node at {with_port}: {e} (is it running, and is this its \
             RPC address?)"
        )),
    }
}

/// The blocks of WebHDFS's `GETFILEBLOCKLOCATIONS` answer.
fn parse_block_locations(body: &[u8]) -> io::Result<Vec<BlockLocation>> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(rename = "BlockLocations")]
        locations: Locations,
    }
    #[derive(serde::Deserialize)]
    struct Locations {
        #[serde(rename = "BlockLocation", default)]
        blocks: Vec<Block>,
    }
    #[derive(serde::Deserialize)]
    struct Block {
        offset: u64,
        length: u64,
        #[serde(default)]
        hosts: Vec<String>,
    }
    let answer: Answer = serde_json::from_slice(body).map_err(|e| {
        io_error(
            io::ErrorKind::InvalidData,
            format!("WebHDFS's block locations do not parse: {e}"),
        )
    })?;
    Ok(answer
        .locations
        .blocks
        .into_iter()
        .map(|b| BlockLocation::new(b.offset, b.length, b.hosts))
        .collect())
}

/// A new HDFS file being written.
struct HdfsWriter {
    writer: Option<hdfs_native::file::FileWriter>,
    buffer: BytesMut,
    written: u64,
}

impl HdfsWriter {
    /// Hands the gathered bytes to the client.
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk: Bytes = self.buffer.split().freeze();
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| io_error(io::ErrorKind::BrokenPipe, "the file is closed"))?;
        let n = chunk.len() as u64;
        block_on(writer.write_bytes(chunk))?.map_err(|e| hdfs_io_error(&e))?;
        self.written += n;
        Ok(())
    }
}

impl Write for HdfsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        if self.buffer.len() >= WRITE_CHUNK {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for HdfsWriter {
    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        self.send()?;
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| io_error(io::ErrorKind::BrokenPipe, "the file is closed"))?;
        block_on(writer.close())?.map_err(|e| hdfs_io_error(&e))?;
        Ok(self.written)
    }
}

/// An `hdfs-native` error as an `io::Error` of the matching kind, its message cut to the
/// Java exception's first line.
pub(crate) fn hdfs_io_error(error: &HdfsError) -> io::Error {
    let kind = match error {
        HdfsError::FileNotFound(_) => io::ErrorKind::NotFound,
        HdfsError::AlreadyExists(_) => io::ErrorKind::AlreadyExists,
        HdfsError::IsADirectoryError(_) => io::ErrorKind::IsADirectory,
        HdfsError::IOError(e) => e.kind(),
        HdfsError::ChecksumError => io::ErrorKind::InvalidData,
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _) => {
            match class.rsplit('.').next().unwrap_or_default() {
                "AccessControlException" => io::ErrorKind::PermissionDenied,
                "FileNotFoundException" => io::ErrorKind::NotFound,
                "FileAlreadyExistsException" => io::ErrorKind::AlreadyExists,
                "DSQuotaExceededException"
                | "NSQuotaExceededException"
                | "QuotaExceededException" => io::ErrorKind::QuotaExceeded,
                "ParentNotDirectoryException" => io::ErrorKind::NotADirectory,
                "PathIsNotEmptyDirectoryException" => io::ErrorKind::DirectoryNotEmpty,
                _ => io::ErrorKind::Other,
            }
        }
        _ => io::ErrorKind::Other,
    };
    let message = match error {
        HdfsError::RPCError(class, message) | HdfsError::FatalRPCError(class, message) => {
            let first = message.lines().next().unwrap_or_default();
            let short = class.rsplit('.').next().unwrap_or(class);
            format!("{short}: {first}")
        }
        HdfsError::IOError(e) => format!("cannot reach HDFS: {e}"),
        other => other.to_string(),
    };
    io_error(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name node host that does not resolve fails at once, naming it, unless the
    /// configuration makes it an HA name service (which the client resolves itself).
    #[test]
    fn an_unknown_name_node_host_is_reported_at_once() {
        let mut config = StoreConfig::from_parts(std::iter::empty(), std::iter::empty());
        let timeout = Duration::from_secs(30);
        let started = std::time::Instant::now();
        let error = probe_name_node("hdfs://nn.invalid:8020", &config, timeout).unwrap_err();
        assert!(
            error.contains("cannot resolve the name node's host nn.invalid"),
            "{error}"
        );
        assert!(started.elapsed() < timeout);
        config.set("dfs.ha.namenodes.nn.invalid", "nn1,nn2");
        assert!(probe_name_node("hdfs://nn.invalid", &config, timeout).is_ok());
    }

    #[test]
    fn block_sizes_parse_as_hadoop_writes_them() {
        assert_eq!(parse_hadoop_size("134217728"), Some(134_217_728));
        assert_eq!(parse_hadoop_size("128m"), Some(128 << 20));
        assert_eq!(parse_hadoop_size(" 1G "), Some(1 << 30));
        for bad in ["", "0", "12x", "m", "-1", "99999999999t"] {
            assert_eq!(parse_hadoop_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn webhdfs_block_locations_parse() {
        let body = br#"{"BlockLocations":{"BlockLocation":[
            {"cachedHosts":[],"corrupt":false,"hosts":["dn1","dn2"],"length":134217728,
             "names":["dn1:9866","dn2:9866"],"offset":0,"storageTypes":["DISK","DISK"],
             "topologyPaths":["/default-rack/dn1:9866"]},
            {"hosts":["dn3"],"length":10,"offset":134217728}]}}"#;
        let blocks = parse_block_locations(body).unwrap();
        assert_eq!(
            blocks,
            vec![
                BlockLocation::new(0, 134_217_728, vec!["dn1".into(), "dn2".into()]),
                BlockLocation::new(134_217_728, 10, vec!["dn3".into()]),
            ]
        );
        assert!(parse_block_locations(b"<html>").is_err());
    }
}

//! The settings of the remote stores, gathered the way Hadoop's users already give them.
//!
//! In increasing precedence: the files of `HADOOP_CONF_DIR` (`core-site.xml`, `hdfs-site.xml`),
//! then the job's `-D key=value` settings. S3 credentials and endpoints also come from the
//! usual AWS variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_PROFILE`) and the shared credentials file
//! (`~/.aws/credentials`); the `fs.s3a.*` keys, where given, win over them, as in Hadoop.
//! `${name}` in values is substituted as Hadoop's `Configuration` does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::StoreError;

/// Hadoop's key for the file system that paths without a scheme are on.
pub const DEFAULT_FS: &str = "fs.defaultFS";
/// The key bounding each metadata call to a store (seconds), sluice's own.
pub const TIMEOUT_KEY: &str = "sluice.store.timeout";
/// Default of [`TIMEOUT_KEY`]: long enough for a loaded name node, short enough that an
/// unreachable one is reported while the user still waits for it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The settings of the remote stores: Hadoop-style properties, and the process environment
/// they were read with. Its `Debug` form leaves out the environment and the values of
/// secret-looking properties (credentials must not reach a log).
#[derive(Clone, Default)]
pub struct StoreConfig {
    properties: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .properties
            .iter()
            .map(|(k, v)| {
                let lower = k.to_ascii_lowercase();
                let secret = ["secret", "password", "token", "access.key"]
                    .iter()
                    .any(|word| lower.contains(word));
                (k.as_str(), if secret { "<hidden>" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("StoreConfig")
            .field("properties", &shown)
            .finish_non_exhaustive()
    }
}

impl StoreConfig {
    /// Settings from the environment: `HADOOP_CONF_DIR`'s site files if the variable is set,
    /// then `defines` (the job's `-D` settings, later ones winning).
    ///
    /// # Errors
    /// [`StoreError::Config`] naming the file if a site file exists but cannot be read or
    /// parsed.
    pub fn from_env<'a>(
        defines: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<StoreConfig, StoreError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let mut config = StoreConfig {
            properties: BTreeMap::new(),
            env,
        };
        if let Some(dir) = config.env.get("HADOOP_CONF_DIR").cloned() {
            for name in ["core-site.xml", "hdfs-site.xml"] {
                let path = Path::new(&dir).join(name);
                if path.exists() {
                    config.load_site_file(&path)?;
                }
            }
        }
        for (key, value) in defines {
            config.set(key, value);
        }
        config.substitute_variables()?;
        Ok(config)
    }

    /// Replaces `${name}` in every value as Hadoop's `Configuration.get` does (a site file's
    /// `hdfs://${env.NN_HOST}:8020`, say): see [`sluice_hadoop::conf_vars`].
    fn substitute_variables(&mut self) -> Result<(), StoreError> {
        let raw = self.properties.clone();
        let lookup = |name: &str| raw.get(name).cloned();
        for (key, value) in &mut self.properties {
            if value.contains("${") {
                *value =
                    sluice_hadoop::conf_vars::substitute(value, &lookup).map_err(|detail| {
                        StoreError::Config {
                            what: key.clone(),
                            detail,
                        }
                    })?;
            }
        }
        Ok(())
    }

    /// Settings from `properties` alone, with `env` as the environment (for tests and for
    /// processes that receive their settings from elsewhere).
    pub fn from_parts<'a>(
        properties: impl IntoIterator<Item = (&'a str, &'a str)>,
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> StoreConfig {
        StoreConfig {
            properties: properties
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            env: env
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// Sets property `key` (a `-D` setting).
    pub fn set(&mut self, key: &str, value: &str) {
        self.properties
            .insert(key.trim().to_string(), value.trim().to_string());
    }

    /// Property `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }

    /// Every property, in key order.
    pub fn properties(&self) -> impl Iterator<Item = (&str, &str)> {
        self.properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Environment variable `name`, if set and not empty.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The file system paths without a scheme are on ([`DEFAULT_FS`]); `None` when unset or
    /// set to the local file system.
    pub fn default_fs(&self) -> Option<&str> {
        self.get(DEFAULT_FS)
            .filter(|fs| !fs.is_empty() && !fs.to_ascii_lowercase().starts_with("file:"))
    }

    /// How long one metadata call to a store may take ([`TIMEOUT_KEY`], in seconds).
    ///
    /// # Errors
    /// [`StoreError::Config`] if the setting is not a positive number of seconds.
    pub fn timeout(&self) -> Result<Duration, StoreError> {
        match self.get(TIMEOUT_KEY) {
            None => Ok(DEFAULT_TIMEOUT),
            Some(text) => text
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| StoreError::Config {
                    what: format!("-D {TIMEOUT_KEY}={text}"),
                    detail: "expected a positive number of seconds".to_string(),
                }),
        }
    }

    /// The user's home directory, for the AWS shared files.
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    pub(crate) fn home(&self) -> Option<PathBuf> {
        self.env("HOME").map(PathBuf::from)
    }

    /// Reads a Hadoop site file's `<property>` elements into the properties.
    fn load_site_file(&mut self, path: &Path) -> Result<(), StoreError> {
        let bad = |detail: String| StoreError::Config {
            what: path.display().to_string(),
            detail,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let doc = roxmltree::Document::parse(&text).map_err(|e| bad(e.to_string()))?;
        let root = doc.root_element();
        if root.tag_name().name() != "configuration" {
            return Err(bad("the root element is not <configuration>".into()));
        }
        for property in root.children().filter(|n| n.has_tag_name("property")) {
            let field = |name: &str| {
                property
                    .children()
                    .find(|n| n.has_tag_name(name))
                    .map(|n| n.text().unwrap_or("").trim().to_string())
            };
            if let (Some(name), Some(value)) = (field("name"), field("value")) {
                if !name.is_empty() {
                    self.properties.insert(name, value);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_files_then_defines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("core-site.xml"),
            "<?xml version=\"1.0\"?><configuration>\
             <property><name>fs.defaultFS</name><value> hdfs://nn:8020 </value></property>\
             <property><name>x</name><value>1</value></property></configuration>",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("hdfs-site.xml"),
            "<configuration><property><name>x</name><value>2</value></property></configuration>",
        )
        .unwrap();
        let mut config = StoreConfig::from_parts([], []);
        config
            .load_site_file(&dir.path().join("core-site.xml"))
            .unwrap();
        config
            .load_site_file(&dir.path().join("hdfs-site.xml"))
            .unwrap();
        assert_eq!(config.default_fs(), Some("hdfs://nn:8020"));
        assert_eq!(config.get("x"), Some("2"));
        config.set("x", "3");
        assert_eq!(config.get("x"), Some("3"));
        config.set(DEFAULT_FS, "file:///");
        assert_eq!(config.default_fs(), None);
    }

    #[test]
    fn variables_in_values_are_substituted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("core-site.xml"),
            "<configuration>\
             <property><name>nn.host</name><value>nn1</value></property>\
             <property><name>fs.defaultFS</name><value>hdfs://${nn.host}:${nn.port}</value></property>\
             <property><name>home</name><value>${env.HOME}/x</value></property>\
             </configuration>",
        )
        .unwrap();
        let mut config = StoreConfig::from_parts([], []);
        config
            .load_site_file(&dir.path().join("core-site.xml"))
            .unwrap();
        config.set("nn.port", "9000");
        config.substitute_variables().unwrap();
        assert_eq!(config.default_fs(), Some("hdfs://nn1:9000"));
        let home = std::env::var("HOME").unwrap();
        assert_eq!(config.get("home"), Some(format!("{home}/x").as_str()));
        let looping: Vec<(String, String)> = (0..25)
            .map(|i| (format!("k{i}"), format!("${{k{}}}", i + 1)))
            .collect();
        let err = StoreConfig::from_env(looping.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap_err();
        assert!(err.to_string().contains("substitution"), "{err}");
    }

    #[test]
    fn a_broken_site_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("core-site.xml");
        std::fs::write(&path, "<configuration><property>").unwrap();
        let err = StoreConfig::from_parts([], [])
            .load_site_file(&path)
            .unwrap_err();
        assert!(err.to_string().contains("core-site.xml"), "{err}");
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let config = StoreConfig::from_parts(
            [
                ("fs.s3a.secret.key", "hunter2"),
                ("fs.s3a.endpoint", "http://h:9000"),
            ],
            [("AWS_SECRET_ACCESS_KEY", "hunter3")],
        );
        let text = format!("{config:?}");
        assert!(!text.contains("hunter"), "{text}");
        assert!(text.contains("http://h:9000"), "{text}");
    }

    #[test]
    fn timeouts_are_checked() {
        let config = StoreConfig::from_parts([(TIMEOUT_KEY, "2.5")], []);
        assert_eq!(config.timeout().unwrap(), Duration::from_millis(2500));
        for bad in ["0", "-1", "soon", "inf"] {
            let config = StoreConfig::from_parts([(TIMEOUT_KEY, bad)], []);
            assert!(config.timeout().is_err(), "{bad}");
        }
    }
}

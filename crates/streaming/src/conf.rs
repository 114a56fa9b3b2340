//! The job configuration of a streaming job: Hadoop's `-D` keys, `-conf` files and the keys the
//! job sets itself, with Hadoop's deprecated key names understood.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::StreamingError;

pub use super::deprecated::{current_name, deprecated_alias};

/// Hadoop's largest `int` (`Integer.MAX_VALUE`): counts it reads with `getInt` stop there.
const JAVA_INT_MAX: usize = 2_147_483_647;

/// Key/value settings of a job, as Hadoop's `JobConf`: keys are kept under their current names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobConf {
    entries: BTreeMap<String, String>,
    /// Keys a configuration file marked `<final>true</final>`: files read later do not change
    /// them; [`JobConf::set`] (a `-D` setting) still does, as in Hadoop.
    finals: BTreeSet<String>,
    /// The file each key's value was read from, for messages; a key set otherwise has none.
    origins: BTreeMap<String, String>,
    /// The old name a key's value was given under, for messages that name what the user
    /// wrote; a key given under its current name has none.
    given_as: BTreeMap<String, String>,
}

impl JobConf {
    /// An empty configuration.
    pub fn new() -> JobConf {
        JobConf::default()
    }

    /// Sets `key` (current or deprecated name) to `value`.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        let current = current_name(key);
        self.origins.remove(current);
        self.note_given_name(current, key);
        self.entries.insert(current.to_string(), value.into());
    }

    fn note_given_name(&mut self, current: &str, given: &str) {
        if current == given {
            self.given_as.remove(current);
        } else {
            self.given_as.insert(current.to_string(), given.to_string());
        }
    }

    /// The name `key`'s value was given under: an old name if the user wrote that, else the
    /// current name.
    pub fn given_name<'a>(&'a self, key: &'a str) -> &'a str {
        let current = current_name(key);
        self.given_as.get(current).map_or(current, String::as_str)
    }

    /// The configuration file `key`'s value was read from, if it was read from one.
    pub fn origin(&self, key: &str) -> Option<&str> {
        self.origins.get(current_name(key)).map(String::as_str)
    }

    /// This configuration (the files' settings) with every setting of `settings` (the
    /// command line's) on top, as Hadoop's `-D` settings override the `-conf` files whatever
    /// their order on the command line, final keys included.
    pub fn overridden_by(mut self, settings: JobConf) -> JobConf {
        for (key, value) in settings.entries {
            self.origins.remove(&key);
            self.given_as.remove(&key);
            self.entries.insert(key, value);
        }
        self.given_as.extend(settings.given_as);
        self
    }

    /// Sets `key` only if it has no value yet.
    pub fn set_default(&mut self, key: &str, value: impl Into<String>) {
        self.entries
            .entry(current_name(key).to_string())
            .or_insert_with(|| value.into());
    }

    /// Removes `key` (current or deprecated name); returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.entries.remove(current_name(key))
    }

    /// The value of `key` (current or deprecated name).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(current_name(key)).map(String::as_str)
    }

    /// The value of `key`, or `default`.
    pub fn get_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get(key).unwrap_or(default)
    }

    /// The value of `key` as a number, or `default` when unset.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] if the value is not a number.
    pub fn get_u64(&self, key: &str, default: u64) -> Result<u64, StreamingError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| {
                StreamingError::Usage(format!("-D {key}={v}: expected a whole number"))
            }),
        }
    }

    /// The value of `key` as a count between `min` and Hadoop's largest `int` (the type Hadoop
    /// reads these settings as), or `default` when unset.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] naming the key, the value and the bounds if the value is not a
    /// whole number or lies outside them.
    pub fn get_count(
        &self,
        key: &str,
        default: usize,
        min: usize,
    ) -> Result<usize, StreamingError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let max = JAVA_INT_MAX;
        v.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                StreamingError::Usage(format!(
                    "-D {key}={v}: expected a whole number from {min} to {max}"
                ))
            })
    }

    /// The value of `key` as a boolean (`true`/`false`, any case), or `default` when unset.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] for any other value.
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool, StreamingError> {
        match self.get(key).map(|v| v.trim().to_ascii_lowercase()) {
            None => Ok(default),
            Some(v) if v == "true" => Ok(true),
            Some(v) if v == "false" => Ok(false),
            Some(v) => Err(StreamingError::Usage(format!(
                "-D {key}={v}: expected true or false"
            ))),
        }
    }

    /// Every setting, as `(name, value)` under its current name, in name order. This is
    /// also how a program's environment has the job's settings: Hadoop's task reads its
    /// configuration back from the job's file, which renames old names, so a key given under
    /// an old name reaches the programs under its current name alone.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `value` with its `${name}` variables substituted as Hadoop does
    /// ([`sluice_hadoop::conf_vars`]), names
    /// looked up in `overlay` (keys set for one task) and then in this configuration.
    ///
    /// # Errors
    /// Why the value cannot be substituted (too many rounds).
    pub fn substitute(&self, value: &str, overlay: &[(&str, String)]) -> Result<String, String> {
        if !value.contains("${") {
            return Ok(value.to_string());
        }
        let lookup = |name: &str| {
            let name = current_name(name);
            overlay
                .iter()
                .find(|(key, _)| current_name(key) == name)
                .map(|(_, v)| v.clone())
                .or_else(|| self.get(name).map(str::to_string))
        };
        sluice_hadoop::conf_vars::substitute(value, &lookup)
    }

    /// This configuration with every value substituted ([`JobConf::substitute`]), as
    /// Hadoop's job reads it. Variables naming what is only known per task (the task's id,
    /// its input file) stay as written, for the task to substitute.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] naming the key whose value cannot be substituted.
    pub fn substituted(&self) -> Result<JobConf, StreamingError> {
        let mut entries = BTreeMap::new();
        for (key, value) in &self.entries {
            let value = self
                .substitute(value, &[])
                .map_err(|e| StreamingError::Usage(format!("setting {key}: {e}")))?;
            entries.insert(key.clone(), value);
        }
        Ok(JobConf {
            entries,
            finals: self.finals.clone(),
            origins: self.origins.clone(),
            given_as: self.given_as.clone(),
        })
    }

    /// Reads a Hadoop configuration file (`<configuration><property><name>..</name>
    /// <value>..</value></property>...`) into this configuration, as `-conf file.xml` does.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] naming the file if it cannot be read or is not such a file.
    pub fn load_xml(&mut self, path: &Path) -> Result<(), StreamingError> {
        let bad =
            |detail: String| StreamingError::Usage(format!("-conf {}: {detail}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        self.load_properties(&text, Some(&path.display().to_string()))
            .map_err(bad)
    }

    /// Reads the text of a Hadoop configuration file into this configuration: what
    /// [`JobConf::load_xml`] does once the file is read. Public so that the fuzz targets can
    /// feed it bytes without a file; the error says what is wrong, without naming a file.
    ///
    /// # Errors
    /// Why the text is not such a file. Properties read before the error are kept.
    pub fn load_xml_text(&mut self, text: &str) -> Result<(), String> {
        self.load_properties(text, None)
    }

    /// Reads the properties of a configuration file's text, as Hadoop's `Configuration` loads
    /// a resource: a key an earlier file marked final keeps its value; `origin` names the
    /// file for messages.
    fn load_properties(&mut self, text: &str, origin: Option<&str>) -> Result<(), String> {
        let doc = roxmltree::Document::parse(text).map_err(|e| e.to_string())?;
        let root = doc.root_element();
        if root.tag_name().name() != "configuration" {
            return Err("the root element is not <configuration>".into());
        }
        for property in root.children().filter(|n| n.has_tag_name("property")) {
            // As Hadoop 3.4's parser: an element's text is all of its text (comments inside
            // it left out); a name is trimmed, a value kept as written, blanks and line
            // breaks included (a separator may be a blank; numeric and boolean getters trim);
            // an empty <value> sets nothing; <final> is final only when its text is exactly
            // `true`, and it makes the key final even without a value.
            let raw = |name: &str| {
                property.children().find(|n| n.has_tag_name(name)).map(|n| {
                    n.children()
                        .filter(|t| t.is_text())
                        .filter_map(|t| t.text())
                        .collect::<String>()
                })
            };
            let name = raw("name").unwrap_or_default();
            let name = name.trim();
            if name.is_empty() {
                return Err("a <property> without a <name>".into());
            }
            let key = current_name(name).to_string();
            if self.finals.contains(&key) {
                continue;
            }
            if let Some(value) = raw("value").filter(|v| !v.is_empty()) {
                let file = origin.unwrap_or("a configuration file");
                self.origins.insert(key.clone(), file.to_string());
                self.note_given_name(&key, name);
                self.entries.insert(key.clone(), value);
            }
            if raw("final").as_deref() == Some("true") {
                self.finals.insert(key);
            }
        }
        Ok(())
    }
}

/// The name of the environment variable a configuration key is exported as: every character
/// that is not an ASCII letter or digit becomes `_` (Hadoop Streaming's rule).
pub fn env_var_name(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_cannot_be_substituted_is_refused_naming_its_key() {
        let mut conf = JobConf::new();
        conf.set("from.conf.file", "${leaf}".repeat(20));
        conf.set("leaf", "x");
        let message = conf.substituted().unwrap_err().to_string();
        // The key may come from a -conf file as well as -D: the message names the key alone.
        assert!(message.contains("setting from.conf.file: "), "{message}");
        assert!(!message.contains("-D"), "{message}");
    }

    #[test]
    fn deprecated_names_are_the_same_setting() {
        let mut conf = JobConf::new();
        conf.set("mapred.reduce.tasks", "3");
        assert_eq!(conf.get("mapreduce.job.reduces"), Some("3"));
        conf.set("mapreduce.job.reduces", "5");
        assert_eq!(conf.get("mapred.reduce.tasks"), Some("5"));
        let entries: Vec<_> = conf.entries().collect();
        assert_eq!(entries, [("mapreduce.job.reduces", "5")]);
    }

    #[test]
    fn defaults_do_not_override() {
        let mut conf = JobConf::new();
        conf.set("a.b", "1");
        conf.set_default("a.b", "2");
        conf.set_default("c", "3");
        assert_eq!(conf.get("a.b"), Some("1"));
        assert_eq!(conf.get("c"), Some("3"));
    }

    #[test]
    fn counts_stay_within_their_bounds() {
        let mut conf = JobConf::new();
        for (value, min, expected) in [
            ("0", 0, Some(0)),
            ("0", 1, None),
            (" 7 ", 1, Some(7)),
            ("2147483647", 0, Some(2_147_483_647)),
            ("2147483648", 0, None),
            ("3000000000", 0, None),
            ("18446744073709551616", 0, None),
            ("-1", 0, None),
            ("1e3", 0, None),
        ] {
            conf.set("n", value);
            let got = conf.get_count("n", 5, min);
            match expected {
                Some(n) => assert_eq!(got.unwrap(), n, "{value}"),
                None => {
                    let err = got.unwrap_err().to_string();
                    assert!(err.contains(&format!("-D n={value}")), "{err}");
                    assert!(err.contains(&format!("from {min} to 2147483647")), "{err}");
                }
            }
        }
        assert_eq!(conf.get_count("missing", 5, 1).unwrap(), 5);
    }

    #[test]
    fn typed_getters_reject_garbage() {
        let mut conf = JobConf::new();
        conf.set("n", "12");
        conf.set("b", "TRUE");
        conf.set("x", "twelve");
        assert_eq!(conf.get_u64("n", 0).unwrap(), 12);
        assert_eq!(conf.get_u64("missing", 7).unwrap(), 7);
        assert!(conf.get_bool("b", false).unwrap());
        assert!(conf.get_u64("x", 0).is_err());
        assert!(conf.get_bool("x", false).is_err());
    }

    #[test]
    fn env_names_replace_punctuation() {
        assert_eq!(env_var_name("mapreduce.task.id"), "mapreduce_task_id");
        assert_eq!(env_var_name("a-b.c_d9"), "a_b_c_d9");
    }

    #[test]
    fn xml_configuration_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf.xml");
        std::fs::write(
            &path,
            "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>mapred.reduce.tasks</name><value> 2 </value></property>\n  <property><name>x.y</name><value>a&amp;b</value><description>d</description></property>\n</configuration>\n",
        )
        .unwrap();
        let mut conf = JobConf::new();
        conf.load_xml(&path).unwrap();
        // Kept as written; read as a number, trimmed.
        assert_eq!(conf.get("mapreduce.job.reduces"), Some(" 2 "));
        assert_eq!(conf.get_count("mapreduce.job.reduces", 1, 0).unwrap(), 2);
        assert_eq!(conf.get("x.y"), Some("a&b"));
        // All of a value's text, a comment inside it left out, CDATA taken as written (as
        // Hadoop 3.4's Configuration reads it, checked in a JVM).
        conf.load_xml_text(
            "<configuration><property><name> spaced.name </name>\
             <value>a<!-- c --><![CDATA[ <b> ]]>\n</value></property></configuration>",
        )
        .unwrap();
        assert_eq!(conf.get("spaced.name"), Some("a <b> \n"));
        std::fs::write(&path, "<other/>").unwrap();
        assert!(conf.load_xml(&path).is_err());
        std::fs::write(&path, "<configuration><property>").unwrap();
        assert!(conf.load_xml(&path).is_err());
    }

    /// What Hadoop 3.4's `JobConf` does with two resources and a `set` (checked with a small
    /// Java program against Hadoop's jars; the differential case
    /// `conf-files-beneath-the-command-line` runs it through Hadoop Streaming).
    #[test]
    fn a_key_a_file_marks_final_keeps_its_value_against_later_files_not_against_settings() {
        let mut conf = JobConf::new();
        conf.load_xml_text(
            "<configuration>\
             <property><name>locked</name><value>first</value><final>true</final></property>\
             <property><name>mapred.job.name</name><value>first</value><final>true</final></property>\
             <property><name>open</name><value>first</value></property>\
             </configuration>",
        )
        .unwrap();
        conf.load_xml_text(
            "<configuration>\
             <property><name>locked</name><value>second</value></property>\
             <property><name>mapreduce.job.name</name><value>second</value></property>\
             <property><name>open</name><value>second</value></property>\
             </configuration>",
        )
        .unwrap();
        assert_eq!(conf.get("locked"), Some("first"));
        assert_eq!(conf.get("mapreduce.job.name"), Some("first"));
        assert_eq!(conf.get("open"), Some("second"));
        let mut settings = JobConf::new();
        settings.set("locked", "set");
        let conf = conf.overridden_by(settings);
        assert_eq!(conf.get("locked"), Some("set"));
        assert_eq!(conf.origin("locked"), None);
        assert_eq!(conf.origin("open"), Some("a configuration file"));
    }

    #[test]
    fn keys_reach_the_programs_under_their_current_name_and_messages_under_the_given_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf.xml");
        std::fs::write(
            &path,
            "<configuration><property><name>mapred.job.name</name><value>j</value></property>\
             </configuration>",
        )
        .unwrap();
        let mut conf = JobConf::new();
        conf.load_xml(&path).unwrap();
        conf.set("mapred.reduce.tasks", "2");
        conf.set("io.sort.mb", "50");
        conf.set("mapreduce.task.io.sort.mb", "60");
        assert_eq!(
            conf.entries().collect::<Vec<_>>(),
            [
                ("mapreduce.job.name", "j"),
                ("mapreduce.job.reduces", "2"),
                ("mapreduce.task.io.sort.mb", "60"),
            ]
        );
        assert_eq!(
            conf.origin("mapred.job.name"),
            Some(path.display().to_string().as_str())
        );
        assert_eq!(conf.given_name("mapreduce.job.name"), "mapred.job.name");
        assert_eq!(
            conf.given_name("mapreduce.job.reduces"),
            "mapred.reduce.tasks"
        );
        assert_eq!(conf.given_name("io.sort.mb"), "mapreduce.task.io.sort.mb");
        assert_eq!(conf.given_name("unset.key"), "unset.key");
    }

    /// Hadoop 3.4's `Configuration` given two resources (checked with its jars in a JVM).
    #[test]
    fn empty_values_set_nothing_and_final_needs_exactly_true() {
        let mut conf = JobConf::new();
        conf.load_xml_text(
            "<configuration>\
             <property><name>k.empty</name><value>first</value></property>\
             <property><name>k.final.no.value</name><final>true</final></property>\
             <property><name>k.spaced.final</name><value>first</value><final> true </final></property>\
             <property><name>k.no.value.after</name><value>first</value></property>\
             </configuration>",
        )
        .unwrap();
        conf.load_xml_text(
            "<configuration>\
             <property><name>k.empty</name><value></value></property>\
             <property><name>k.final.no.value</name><value>second</value></property>\
             <property><name>k.spaced.final</name><value>second</value></property>\
             <property><name>k.no.value.after</name></property>\
             </configuration>",
        )
        .unwrap();
        assert_eq!(conf.get("k.empty"), Some("first"));
        assert_eq!(conf.get("k.final.no.value"), None);
        assert_eq!(conf.get("k.spaced.final"), Some("second"));
        assert_eq!(conf.get("k.no.value.after"), Some("first"));
    }
}

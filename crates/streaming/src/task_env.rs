//! The variables a cluster sets in a task's environment from the job's configuration:
//! `mapreduce.map.env` for map tasks (the mapper and the combiner), `mapreduce.reduce.env` for
//! reduce tasks, each falling back to `mapred.child.env`, after the administrators'
//! `mapreduce.admin.user.env`.
//!
//! Hadoop's application master builds a task container's environment this way
//! (`MapReduceChildJVM.setVMEnv` and `MRApps.setEnvFromInputProperty` of Hadoop 3.4), and the
//! streaming programs inherit it from the task; their own variables (the job's keys,
//! `-cmdenv`) come on top. The rules, for one key `K` (`mapreduce.map.env`, say):
//!
//! - The value of `K` (else of `mapred.child.env`, for the task keys) is cut at commas; each
//!   piece that is `NAME=VALUE`, `NAME` a letter or `_` followed by letters, digits and `_`,
//!   sets `NAME` to everything after the first `=`. A piece that is not (`1=x`, ` B=2` with its
//!   leading blank, `A`) is dropped without a word, as Hadoop drops it. A name set twice gets
//!   both values joined by `:`.
//! - Every key `K.NAME` sets `NAME` to its whole value (commas included), replacing what `K`
//!   gave `NAME`. Only the task key's own form counts: `mapred.child.env.NAME` sets nothing.
//! - In each value, `$NAME` is replaced by the variable's value as it is set so far (the
//!   administrators' variables, then the task key's in the order written, then the `K.NAME`
//!   keys by name), else the task's process environment, else nothing: Hadoop's application
//!   master does this (which of two variables of one key it sets first is not specified).
//!   `${NAME}` is left to the shell that starts the container, which exports the variables a
//!   value refers to before it: it is replaced by the variable's final value, else the
//!   process environment's, else nothing. `PWD` is the task's working directory in both forms
//!   (in Hadoop, `${PWD}` is the container's; `$PWD` the master's own). Any other `$` stays as
//!   written. `${name}` of the job's keys was substituted when the job was built, with the
//!   job's settings alone, as the master reads them (so `${mapreduce.task.id}` stays as written:
//!   the master has no task's keys).
//! - A variable set again by a later key (a task key after the administrators' one) gets the
//!   new value appended after a `:` (`LD_LIBRARY_PATH`, `PATH` grow rather than lose what the
//!   administrators put there).
//! - Before all of them, `LD_LIBRARY_PATH` starts with the task's working directory, as a
//!   container's does (sluice keeps the process's own after it; see [`task_environment`]).
//!
//! Hadoop's local mode starts no process per task and ignores these keys; sluice sets them
//! everywhere, so that a job tried on one machine sees what it will see on a cluster.

use std::path::Path;

use super::conf::JobConf;
use super::StreamingError;

/// The administrators' variables for every task, set before the task's own.
pub(crate) const ADMIN_ENV: &str = "mapreduce.admin.user.env";
/// The variables of map tasks (the mapper and the combiner).
pub(crate) const MAP_ENV: &str = "mapreduce.map.env";
/// The variables of reduce tasks.
pub(crate) const REDUCE_ENV: &str = "mapreduce.reduce.env";
/// The variables of both kinds of task, when their own key is not set.
pub(crate) const CHILD_ENV: &str = "mapred.child.env";

/// The variable a YARN container's directory starts, so that libraries shipped with `-files`
/// are found.
const LIBRARY_PATH: &str = "LD_LIBRARY_PATH";

/// The variables the configuration sets for a map task (`is_map`) or a reduce task, in the
/// order they are set; `process_env` looks up a variable of the environment the task runs in.
///
/// `work_dir`, the program's working directory (it holds the `-files` entries), starts
/// `LD_LIBRARY_PATH`, as a YARN container's directory starts it for Hadoop's task, so that a
/// program linked against a library shipped with `-files` runs as it does on YARN. The task
/// process's own `LD_LIBRARY_PATH` follows it (a container would not have it; Hadoop's local
/// mode has only it), and the configured values are appended after a `:`. It is also `PWD`
/// for the values.
///
/// # Errors
/// [`StreamingError::Usage`] for a `K.NAME` key whose `NAME` is not a variable name (no
/// process could be given it).
pub(crate) fn task_environment(
    conf: &JobConf,
    is_map: bool,
    work_dir: Option<&Path>,
    process_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, StreamingError> {
    let outside = |name: &str| match work_dir {
        Some(dir) if name == "PWD" => Some(dir.display().to_string()),
        _ => process_env(name),
    };
    let mut env = Environment::default();
    if let Some(dir) = work_dir {
        env.append(LIBRARY_PATH, &dir.display().to_string());
        if let Some(own) = process_env(LIBRARY_PATH).filter(|v| !v.is_empty()) {
            env.append(LIBRARY_PATH, &own);
        }
    }
    for (key, fallback) in [
        (ADMIN_ENV, None),
        (if is_map { MAP_ENV } else { REDUCE_ENV }, Some(CHILD_ENV)),
    ] {
        let value = conf.get(key).or_else(|| fallback.and_then(|f| conf.get(f)));
        let mut settings = Environment::default();
        if let Some(value) = value {
            for (name, value) in parse_list(value) {
                settings.append(name, value);
            }
        }
        for (name, value) in named_settings(conf, key)? {
            settings.replace(name, value);
        }
        for (name, value) in settings.vars {
            let value = replace_variables(&value, Form::Plain, &mut |var| {
                env.get(var).or_else(|| outside(var))
            });
            env.append(&name, &value);
        }
    }
    let names: Vec<String> = env.vars.iter().map(|(name, _)| name.clone()).collect();
    let vars = names
        .into_iter()
        .map(|name| {
            let value = final_value(&name, &env, &outside, &mut Vec::new()).unwrap_or_default();
            (name, value)
        })
        .collect();
    Ok(vars)
}

/// The value of `name` once the shell that starts a container has exported it: its
/// `${NAME}` references replaced by their own final values (`visiting` breaks a cycle, whose
/// variable is then taken from `outside`), a name not set here from `outside`.
fn final_value(
    name: &str,
    env: &Environment,
    outside: &dyn Fn(&str) -> Option<String>,
    visiting: &mut Vec<String>,
) -> Option<String> {
    let Some(value) = env.get(name) else {
        return outside(name);
    };
    if visiting.iter().any(|v| v == name) {
        return outside(name);
    }
    visiting.push(name.to_string());
    let resolved = replace_variables(&value, Form::Braced, &mut |var| {
        final_value(var, env, outside, visiting)
    });
    visiting.pop();
    Some(resolved)
}

/// Checks what [`task_environment`] would refuse, for both kinds of task, when the job is
/// built: before any task starts.
///
/// # Errors
/// As [`task_environment`].
pub(crate) fn check(conf: &JobConf) -> Result<(), StreamingError> {
    for is_map in [true, false] {
        task_environment(conf, is_map, None, &|_| None)?;
    }
    Ok(())
}

/// The `PATH` of `env`, if it sets one: where the task's programs are looked for, its
/// relative directories in `work_dir` (Hadoop's task looks in its own directory's).
pub(crate) fn path(env: &[(String, String)], work_dir: &Path) -> Option<String> {
    let (_, value) = env.iter().find(|(name, _)| name == "PATH")?;
    let dirs: Vec<String> = value
        .split(':')
        .map(|dir| match dir {
            "" => String::new(),
            dir if Path::new(dir).is_absolute() => dir.to_string(),
            dir => work_dir.join(dir).display().to_string(),
        })
        .collect();
    Some(dirs.join(":"))
}

/// Variables in the order they were first set.
#[derive(Debug, Default)]
struct Environment {
    vars: Vec<(String, String)>,
}

impl Environment {
    fn get(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Sets `name`, or appends `value` to it after a `:`.
    fn append(&mut self, name: &str, value: &str) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some((_, old)) => {
                old.push(':');
                old.push_str(value);
            }
            None => self.vars.push((name.to_string(), value.to_string())),
        }
    }

    /// Sets `name`, replacing what it had.
    fn replace(&mut self, name: &str, value: &str) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some((_, old)) => value.clone_into(old),
            None => self.vars.push((name.to_string(), value.to_string())),
        }
    }
}

/// Whether `name` is a variable name as Hadoop reads one: a letter or `_`, then letters,
/// digits and `_` (ASCII).
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `NAME=VALUE` pieces of a comma-separated list, in order; other pieces are dropped.
fn parse_list(list: &str) -> impl Iterator<Item = (&str, &str)> {
    list.split(',').filter_map(|piece| {
        let (name, value) = piece.split_once('=')?;
        is_variable_name(name).then_some((name, value))
    })
}

/// The `key.NAME` settings, by name.
fn named_settings<'a>(
    conf: &'a JobConf,
    key: &str,
) -> Result<Vec<(&'a str, &'a str)>, StreamingError> {
    let prefix = format!("{key}.");
    let mut named = Vec::new();
    for (name, value) in conf.entries() {
        let Some(var) = name.strip_prefix(&prefix) else {
            continue;
        };
        if !is_variable_name(var) {
            let setting = match conf.origin(name) {
                Some(file) => format!("{file} sets {name}={value}"),
                None => format!("-D {name}={value}"),
            };
            return Err(StreamingError::Usage(format!(
                "{setting}: '{var}' is not an environment variable's name (a letter or _, then \
                 letters, digits and _)"
            )));
        }
        named.push((var, value));
    }
    named.sort_unstable();
    Ok(named)
}

/// Which references [`replace_variables`] replaces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `$NAME`, as Hadoop's application master does.
    Plain,
    /// `${NAME}`, as the shell that starts a container does.
    Braced,
}

/// `value` with its references of one `form` replaced by what `lookup` gives (nothing when
/// it gives nothing). Every other `$` stays as written.
fn replace_variables(
    value: &str,
    form: Form,
    lookup: &mut dyn FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, consumed) = match (after.strip_prefix('{'), form) {
            (Some(braced), Form::Braced) => match braced.find('}') {
                Some(close) if is_variable_name(&braced[..close]) => (&braced[..close], close + 2),
                _ => ("", 0),
            },
            (Some(_), Form::Plain) | (None, Form::Braced) => ("", 0),
            (None, Form::Plain) => {
                let end = after
                    .char_indices()
                    .find(|&(i, c)| {
                        !(c.is_ascii_alphabetic() || c == '_' || (i > 0 && c.is_ascii_digit()))
                    })
                    .map_or(after.len(), |(i, _)| i);
                (&after[..end], end)
            }
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&lookup(name).unwrap_or_default());
            rest = &after[consumed..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(settings: &[(&str, &str)]) -> JobConf {
        let mut conf = JobConf::new();
        for (k, v) in settings {
            conf.set(k, *v);
        }
        conf
    }

    fn env_of(settings: &[(&str, &str)], is_map: bool) -> Vec<(String, String)> {
        let process = |name: &str| (name == "FROM_PROCESS").then(|| "p".to_string());
        task_environment(&conf(settings), is_map, None, &process).unwrap()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    // The cases of Hadoop 3.4's own test of these rules (`TestApps`), as its assertions state
    // the outcome.
    #[test]
    fn pieces_that_are_not_name_equals_value_are_dropped() {
        let env = env_of(&[(MAP_ENV, "1,,2=a=b,3=a=,4==,5==a,==,c-3=3,=")], true);
        assert_eq!(env, []);
        let env = env_of(&[(MAP_ENV, "b1,e1==,e2=a1=a2,b2")], true);
        assert_eq!(env, pairs(&[("e1", "="), ("e2", "a1=a2")]));
        let env = env_of(
            &[(MAP_ENV, "a1=1,b_2=2,_c=3,d=4,e=,f_win=%JAVA_HOME%")],
            true,
        );
        assert_eq!(
            env,
            pairs(&[
                ("a1", "1"),
                ("b_2", "2"),
                ("_c", "3"),
                ("d", "4"),
                ("e", ""),
                ("f_win", "%JAVA_HOME%")
            ])
        );
    }

    #[test]
    fn named_keys_replace_the_lists_and_the_fallback_is_not_read_when_the_key_is_set() {
        let settings = [
            (MAP_ENV, "env1=env1_val,env2=env2_val,env3=env3_val"),
            ("mapreduce.map.env.env4", "env4_val"),
            ("mapreduce.map.env.env2", "new_env2_val"),
            (CHILD_ENV, "env1=def1_val,env2=def2_val,env3=def3_val"),
            ("mapred.child.env.env4", "def4_val"),
        ];
        let env = env_of(&settings, true);
        assert_eq!(
            env,
            pairs(&[
                ("env1", "env1_val"),
                ("env2", "new_env2_val"),
                ("env3", "env3_val"),
                ("env4", "env4_val")
            ])
        );
        // Reduce tasks: their key is not set, so the fallback's list; its named keys never count.
        let env = env_of(&settings, false);
        assert_eq!(
            env,
            pairs(&[
                ("env1", "def1_val"),
                ("env2", "def2_val"),
                ("env3", "def3_val")
            ])
        );
    }

    #[test]
    fn a_name_set_twice_joins_its_values_and_the_admins_variables_come_first() {
        let settings = [
            (ADMIN_ENV, "LIB=/admin,ADMIN_ONLY=a"),
            (REDUCE_ENV, "LIB=/user,X=1,X=2"),
        ];
        assert_eq!(
            env_of(&settings, false),
            pairs(&[("LIB", "/admin:/user"), ("ADMIN_ONLY", "a"), ("X", "1:2")])
        );
        // The map tasks get only the administrators' variables.
        assert_eq!(
            env_of(&settings, true),
            pairs(&[("LIB", "/admin"), ("ADMIN_ONLY", "a")])
        );
    }

    #[test]
    fn plain_references_expand_from_those_set_before_then_the_process() {
        let settings = [
            (ADMIN_ENV, "BASE=/opt"),
            (
                MAP_ENV,
                "A=$BASE/bin:$UNSET:$FROM_PROCESS,B=$Ax,C=$A-x,D=$LATER,LATER=l,E=$1 ${} $ ${1x}",
            ),
        ];
        assert_eq!(
            env_of(&settings, true),
            pairs(&[
                ("BASE", "/opt"),
                ("A", "/opt/bin::p"),
                // `$Ax` names the variable `Ax`.
                ("B", ""),
                ("C", "/opt/bin::p-x"),
                // Not set yet when the master read it.
                ("D", ""),
                ("LATER", "l"),
                ("E", "$1 ${} $ ${1x}")
            ])
        );
    }

    /// Hadoop's launch script exports a variable before those that refer to it as `${NAME}`
    /// (`ContainerLaunch.orderEnvByDependencies`), so a reference sees the final value.
    #[test]
    fn braced_references_see_the_final_values() {
        let settings = [
            (ADMIN_ENV, "P=/a"),
            (
                MAP_ENV,
                "A=${B}/x,B=1,Q=${P},P=/b,R=${FROM_PROCESS}${UNSET},S=${S}s,T=${U},U=${T}",
            ),
        ];
        assert_eq!(
            env_of(&settings, true),
            pairs(&[
                ("P", "/a:/b"),
                ("A", "1/x"),
                ("B", "1"),
                ("Q", "/a:/b"),
                ("R", "p"),
                // A cycle: the inner reference is taken from outside (unset here).
                ("S", "s"),
                ("T", ""),
                ("U", "")
            ])
        );
    }

    #[test]
    fn pwd_is_the_working_directory() {
        let conf = conf(&[(MAP_ENV, "A=$PWD/lib,B=${PWD}/bin")]);
        let process = |name: &str| (name == "PWD").then(|| "/submitted/here".to_string());
        let env = task_environment(&conf, true, Some(Path::new("/task")), &process).unwrap();
        assert_eq!(
            env,
            pairs(&[
                ("LD_LIBRARY_PATH", "/task"),
                ("A", "/task/lib"),
                ("B", "/task/bin")
            ])
        );
    }

    #[test]
    fn the_tasks_own_keys_are_not_known_to_the_values() {
        // The job was built with the settings substituted; a task's id is not among them,
        // and an unknown name stops the substitution of the rest of the value, as in Hadoop.
        let list = "N=${mapreduce.job.reduces},ID=${mapreduce.task.id},M=${mapreduce.job.reduces}";
        let conf = conf(&[(MAP_ENV, list), ("mapreduce.job.reduces", "3")])
            .substituted()
            .unwrap();
        let env = task_environment(&conf, true, None, &|_| None).unwrap();
        assert_eq!(
            env,
            pairs(&[
                ("N", "3"),
                ("ID", "${mapreduce.task.id}"),
                ("M", "${mapreduce.job.reduces}")
            ])
        );
    }

    #[test]
    fn old_names_of_the_task_keys_are_read() {
        let env = env_of(&[("mapred.map.child.env", "A=1")], true);
        assert_eq!(env, pairs(&[("A", "1")]));
        let env = env_of(&[("mapred.reduce.child.env", "B=2")], false);
        assert_eq!(env, pairs(&[("B", "2")]));
    }

    #[test]
    fn a_named_key_that_is_no_variable_name_is_refused() {
        let err = check(&conf(&[("mapreduce.reduce.env.A.B", "1")])).unwrap_err();
        assert!(
            err.to_string().contains("mapreduce.reduce.env.A.B"),
            "{err}"
        );
        assert!(check(&conf(&[("mapreduce.reduce.env.A_B", "1")])).is_ok());
    }

    #[test]
    fn the_path_is_found_relative_to_the_working_directory() {
        let dir = Path::new("/task");
        assert_eq!(
            path(&pairs(&[("A", "1"), ("PATH", "/x:tools::./bin")]), dir).as_deref(),
            Some("/x:/task/tools::/task/./bin")
        );
        assert_eq!(path(&pairs(&[("A", "1")]), dir), None);
    }

    #[test]
    fn the_working_directory_starts_the_library_path() {
        let dir = Path::new("/scratch/task");
        let conf = conf(&[(MAP_ENV, "LD_LIBRARY_PATH=/opt/lib,A=$LD_LIBRARY_PATH")]);
        let env = task_environment(&conf, true, Some(dir), &|_| None).unwrap();
        assert_eq!(
            env,
            pairs(&[
                ("LD_LIBRARY_PATH", "/scratch/task:/opt/lib"),
                ("A", "/scratch/task:/opt/lib")
            ])
        );
        // The process's own path follows the directory; an empty one is no path.
        let own = |name: &str| (name == "LD_LIBRARY_PATH").then(|| "/own".to_string());
        let env = task_environment(&JobConf::new(), false, Some(dir), &own).unwrap();
        assert_eq!(env, pairs(&[("LD_LIBRARY_PATH", "/scratch/task:/own")]));
        let empty = |name: &str| (name == "LD_LIBRARY_PATH").then(String::new);
        let env = task_environment(&JobConf::new(), false, Some(dir), &empty).unwrap();
        assert_eq!(env, pairs(&[("LD_LIBRARY_PATH", "/scratch/task")]));
    }
}

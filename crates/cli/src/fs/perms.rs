//! `sluice fs -chmod`, `-chown`, `-chgrp` and `-setrep`: what a store keeps with a file
//! besides its bytes, and the arguments as Hadoop's shell reads them.
//!
//! A mode is octal (`755`, or `1777` with the sticky bit) or symbolic: clauses such as
//! `u+x`, `go-w` or `a=rX`, joined by commas. Hadoop's parser differs from `chmod(1)` in ways
//! scripts can see, and sluice follows it: a later clause replaces what an earlier one said of
//! the same class instead of adding to it (`=r,+w` is `+w` for all), each clause needs at least
//! one of `rwxXt`, and `X` gives execute where the entry is a directory or already has an
//! execute bit for anyone.

use sluice_io::{FileStatus, IoError, Storage};

use super::{child_shown, options, owned, reason, Shell, Usage};

/// What one of the three commands sets.
enum Change {
    Mode(Mode),
    Owner(Option<String>, Option<String>),
}

impl Shell {
    /// `-chmod [-R] MODE PATH...`.
    pub(super) fn chmod(&self, operands: &[String]) -> Result<u8, Usage> {
        let (recursive, mode, paths) = Self::change_args(operands)?;
        let mode = Mode::parse(mode).ok_or_else(|| {
            Usage(format!(
                "chmod : mode '{mode}' does not match the expected pattern."
            ))
        })?;
        Ok(self.change_all("chmod", paths, recursive, &Change::Mode(mode)))
    }

    /// `-chown [-R] [OWNER][:[GROUP]] PATH...`.
    pub(super) fn chown(&self, operands: &[String]) -> Result<u8, Usage> {
        let (recursive, spec, paths) = Self::change_args(operands)?;
        let (owner, group) = owner_and_group(spec).map_err(Usage)?;
        Ok(self.change_all("chown", paths, recursive, &Change::Owner(owner, group)))
    }

    /// `-chgrp [-R] GROUP PATH...`.
    pub(super) fn chgrp(&self, operands: &[String]) -> Result<u8, Usage> {
        let (recursive, group, paths) = Self::change_args(operands)?;
        let group = group_only(group).map_err(Usage)?;
        Ok(self.change_all("chgrp", paths, recursive, &Change::Owner(None, Some(group))))
    }

    /// `-setrep [-R] [-w] REP PATH...`: the replication of each file, and of every file below
    /// a directory (with or without `-R`, as in Hadoop); with `-w`, then waits until every
    /// block has that many copies. Only HDFS keeps copies: elsewhere the files are left as
    /// they are and reported set, as Hadoop's local and S3 file systems do.
    pub(super) fn setrep(&self, operands: &[String]) -> Result<u8, Usage> {
        let (flags, rest) = options(operands, &["-R", "-w"])?;
        let [replication, paths @ ..] = rest else {
            return Err(Usage("Not enough arguments: expected 2 but got 0".into()));
        };
        if paths.is_empty() {
            return Err(Usage(format!(
                "Not enough arguments: expected 2 but got {}",
                rest.len()
            )));
        }
        let replication: u16 = match replication.trim().parse::<i16>() {
            Ok(n) if n >= 1 => n.unsigned_abs(),
            Ok(_) => return Err(Usage("replication must be >= 1".into())),
            Err(_) => {
                eprintln!("setrep: Illegal replication, a positive integer expected");
                return Err(Usage(format!("For input string: \"{replication}\"")));
            }
        };
        let mut set = Vec::new();
        let mut failed = self.each_match("setrep", paths, |status, name| {
            self.set_replication_tree(&status, &name, replication, &mut set)
        });
        if flags.contains(&"-w") {
            for (location, name) in &set {
                failed |= !self.wait_for_replication(location, name, replication);
            }
        }
        Ok(u8::from(failed))
    }

    /// Sets the replication of `status` (shown as `name`), or of every file below it;
    /// each file set is added to `set`. Whether anything failed.
    fn set_replication_tree(
        &self,
        status: &FileStatus,
        name: &str,
        replication: u16,
        set: &mut Vec<(sluice_io::Location, String)>,
    ) -> bool {
        if !status.is_dir {
            return match self.stores.set_replication(&status.location, replication) {
                Ok(()) => {
                    println!("Replication {replication} set: {name}");
                    set.push((status.location.clone(), name.to_string()));
                    false
                }
                Err(e) => {
                    super::say("setrep", name, &reason(&e));
                    true
                }
            };
        }
        match self.stores.list(&status.location) {
            Ok(entries) => entries.iter().fold(false, |failed, entry| {
                let child = entry.location.file_name().unwrap_or_default();
                let shown = child_shown(name, &child.to_string_lossy());
                self.set_replication_tree(entry, &shown, replication, set) | failed
            }),
            Err(e) => {
                super::say("setrep", name, &reason(&e));
                true
            }
        }
    }

    /// Waits, as Hadoop's `-setrep -w` does, until each block of the file has `replication`
    /// copies: a dot for every 10 s look that finds fewer or more. Whether it got there (not
    /// when the block locations cannot be had, which is said).
    fn wait_for_replication(
        &self,
        location: &sluice_io::Location,
        name: &str,
        replication: u16,
    ) -> bool {
        use std::io::Write as _;
        print!("Waiting for {name} ...");
        let _ = std::io::stdout().flush();
        let mut warned = false;
        loop {
            let blocks = match self.stores.block_locations(location) {
                Ok(blocks) => blocks,
                Err(e) => {
                    println!();
                    super::say("setrep", name, &reason(&e));
                    return false;
                }
            };
            let short = blocks
                .iter()
                .map(|b| b.hosts.len())
                .find(|&copies| copies != usize::from(replication));
            let Some(copies) = short else {
                break;
            };
            if !warned && usize::from(replication) > copies {
                eprintln!(
                    "\nWARNING: the waiting time may be long for DECREASING the number of \
                     replications."
                );
                warned = true;
            }
            print!(".");
            let _ = std::io::stdout().flush();
            std::thread::sleep(std::time::Duration::from_secs(10));
        }
        println!(" done");
        true
    }

    /// `-R`, the mode or owner, and the paths. Only `-R` is an option: whatever else starts
    /// with `-` is the mode, as Hadoop reads `-chmod -w FILE`.
    fn change_args(operands: &[String]) -> Result<(bool, &str, &[String]), Usage> {
        let given = operands.iter().take_while(|arg| *arg == "-R").count();
        let rest = &operands[given..];
        match rest {
            [what, paths @ ..] if !paths.is_empty() => Ok((given > 0, what.as_str(), paths)),
            _ => Err(Usage(format!(
                "Not enough arguments: expected 2 but got {}",
                rest.len()
            ))),
        }
    }

    /// Applies `change` to what each path names (globs expanded) and, with `recursive`, to
    /// everything below a directory; whether anything failed (exit status 1).
    fn change_all(&self, cmd: &str, paths: &[String], recursive: bool, change: &Change) -> u8 {
        let failed = self.each_match(cmd, paths, |status, name| {
            self.change_tree(cmd, &status, &name, recursive, change)
        });
        u8::from(failed)
    }

    /// Applies `change` to `status` (shown as `name`), then below it; whether anything failed.
    /// A failure is said and the rest goes on, as in Hadoop.
    fn change_tree(
        &self,
        cmd: &str,
        status: &FileStatus,
        name: &str,
        recursive: bool,
        change: &Change,
    ) -> bool {
        let mut failed = false;
        if let Err(e) = self.change_one(status, change) {
            let doing = match change {
                Change::Mode(_) => "changing permissions of",
                Change::Owner(..) => "changing ownership of",
            };
            eprintln!("{cmd}: {doing} '{name}': {}", why(&e));
            failed = true;
        }
        if recursive && status.is_dir {
            match self.stores.list(&status.location) {
                Ok(entries) => {
                    for entry in entries {
                        let child = entry.location.file_name().unwrap_or_default();
                        let shown = child_shown(name, &child.to_string_lossy());
                        failed |= self.change_tree(cmd, &entry, &shown, true, change);
                    }
                }
                Err(e) => {
                    super::say(cmd, name, &reason(&e));
                    failed = true;
                }
            }
        }
        failed
    }

    /// Applies `change` to one entry. As in Hadoop, what would not change is not asked of the
    /// store: a user may run `-chmod -R 755` or `-chown -R` over a tree where some entries
    /// are already so but are not theirs to change.
    fn change_one(&self, status: &FileStatus, change: &Change) -> Result<(), IoError> {
        let now = owned(status);
        match change {
            Change::Mode(mode) => {
                let bits = mode.apply(now.permission, status.is_dir);
                if bits == now.permission & 0o1777 {
                    return Ok(());
                }
                self.stores.set_permission(&status.location, bits)
            }
            Change::Owner(owner, group) => {
                let owner = owner.as_deref().filter(|o| *o != now.owner);
                let group = group.as_deref().filter(|g| *g != now.group);
                if owner.is_none() && group.is_none() {
                    return Ok(());
                }
                self.stores.set_owner(&status.location, owner, group)
            }
        }
    }
}

/// What the store or the system said, without the path Hadoop's message already gives.
fn why(error: &IoError) -> String {
    match error {
        IoError::Write { source, .. } | IoError::Read { source, .. } => source.to_string(),
        other => reason(other),
    }
}

/// Whitespace as Java's `\s` matches it.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// What a mode does to one class of bits: `op` is `+`, `-` or `=`; `bits` holds `r` (4), `w`
/// (2), `x` (1) and `X` (8: execute only where the entry may have it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClassChange {
    op: char,
    bits: u16,
}

/// A class a mode says nothing of is left as it is.
const UNCHANGED: ClassChange = ClassChange { op: '+', bits: 0 };

/// A parsed `-chmod` mode: what it does to the sticky bit and to the user's, the group's and
/// the others' bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mode {
    sticky: ClassChange,
    user: ClassChange,
    group: ClassChange,
    others: ClassChange,
}

impl Mode {
    /// Reads `text` as Hadoop's `ChmodParser` does; `None` if it is neither form.
    pub(super) fn parse(text: &str) -> Option<Mode> {
        match symbolic(text) {
            Symbolic::Parsed(mode) => Some(mode),
            Symbolic::Malformed => None,
            Symbolic::Octal => octal(text),
        }
    }

    /// The permission bits (`0o1777` at most) an entry with bits `existing` gets;
    /// `is_dir` says whether it is a directory (for `X`).
    pub(super) fn apply(&self, existing: u16, is_dir: bool) -> u16 {
        let may_execute = is_dir || existing & 0o111 != 0;
        let sticky = combine(self.sticky, (existing >> 9) & 1, false) & 1;
        let user = combine(self.user, (existing >> 6) & 7, may_execute);
        let group = combine(self.group, (existing >> 3) & 7, may_execute);
        let others = combine(self.others, existing & 7, may_execute);
        (sticky << 9) | ((user & 7) << 6) | ((group & 7) << 3) | (others & 7)
    }
}

/// One class's new bits.
fn combine(change: ClassChange, existing: u16, may_execute: bool) -> u16 {
    let capital_x = change.bits & 8 != 0;
    let bits = if capital_x {
        (change.bits & !8) | 1
    } else {
        change.bits
    };
    let mut new = match change.op {
        '+' => bits | existing,
        '-' => !bits & existing,
        _ => bits,
    };
    if capital_x && !may_execute && new & 1 != 0 && existing & 1 == 0 {
        new &= !1;
    }
    new
}

enum Symbolic {
    Parsed(Mode),
    /// The text does not start with a symbolic clause: it may be an octal mode.
    Octal,
    /// It starts with one but is not a list of them: refused, not tried as octal.
    Malformed,
}

/// Clauses `\s*[ugoa]*[+=-]+[rwxXt]+[,\s]*`, each after the last, each but the first after a
/// comma, to the end of `text`.
fn symbolic(text: &str) -> Symbolic {
    let mut mode = Mode {
        sticky: UNCHANGED,
        user: UNCHANGED,
        group: UNCHANGED,
        others: UNCHANGED,
    };
    let mut rest = text;
    let mut first = true;
    loop {
        let Some((clause, after, comma)) = clause(rest) else {
            return if first {
                Symbolic::Octal
            } else {
                Symbolic::Malformed
            };
        };
        clause.apply_to(&mut mode);
        first = false;
        if after.is_empty() {
            return Symbolic::Parsed(mode);
        }
        if !comma {
            return Symbolic::Malformed;
        }
        rest = after;
    }
}

/// One symbolic clause: the classes it names and the change it makes.
struct Clause {
    user: bool,
    group: bool,
    others: bool,
    change: ClassChange,
    sticky: bool,
}

impl Clause {
    /// A later clause replaces an earlier one's change for each class it names, as in
    /// Hadoop; the sticky bit goes with the others' class.
    fn apply_to(&self, mode: &mut Mode) {
        if self.user {
            mode.user = self.change;
        }
        if self.group {
            mode.group = self.change;
        }
        if self.others {
            mode.others = self.change;
            mode.sticky = ClassChange {
                op: self.change.op,
                bits: u16::from(self.sticky),
            };
        }
    }
}

/// The clause at the start of `text`, the text after it, and whether what separated it from
/// that text held a comma.
fn clause(text: &str) -> Option<(Clause, &str, bool)> {
    let rest = text.trim_start_matches(is_space);
    let classes_end = rest.find(|c| !"ugoa".contains(c)).unwrap_or(rest.len());
    let (classes, rest) = rest.split_at(classes_end);
    let ops_end = rest.find(|c| !"+=-".contains(c)).unwrap_or(rest.len());
    let (ops, rest) = rest.split_at(ops_end);
    let perms_end = rest.find(|c| !"rwxXt".contains(c)).unwrap_or(rest.len());
    let (perms, rest) = rest.split_at(perms_end);
    // The last operator counts (`+-x` is `-x`).
    let op = ops.chars().last()?;
    if perms.is_empty() {
        return None;
    }
    let separator_end = rest
        .find(|c: char| c != ',' && !is_space(c))
        .unwrap_or(rest.len());
    let (separator, rest) = rest.split_at(separator_end);
    let (mut user, mut group, mut others) = (
        classes.contains('u'),
        classes.contains('g'),
        classes.contains('o'),
    );
    if !(user || group || others) {
        // No class, or only `a`: all three.
        (user, group, others) = (true, true, true);
    }
    let mut bits = 0;
    for c in perms.chars() {
        bits |= match c {
            'r' => 4,
            'w' => 2,
            'x' => 1,
            'X' => 8,
            _ => 0,
        };
    }
    let clause = Clause {
        user,
        group,
        others,
        change: ClassChange { op, bits },
        sticky: perms.contains('t'),
    };
    Some((clause, rest, separator.contains(',')))
}

/// `\s*+?[01]?[0-7]{3}\s*`: every class set outright, the sticky bit cleared unless a leading
/// `1` sets it.
fn octal(text: &str) -> Option<Mode> {
    let digits = text.trim_matches(is_space);
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    let sticky = match digits.len() {
        3 => 0,
        4 if digits.starts_with(['0', '1']) => u16::from(digits.starts_with('1')),
        _ => return None,
    };
    let mut classes = digits[digits.len() - 3..].chars().map(|c| {
        c.to_digit(8)
            .and_then(|d| u16::try_from(d).ok())
            .map(|bits| ClassChange { op: '=', bits })
    });
    let (user, group, others) = (classes.next()??, classes.next()??, classes.next()??);
    Some(Mode {
        sticky: ClassChange {
            op: '=',
            bits: sticky,
        },
        user,
        group,
        others,
    })
}

/// Characters Hadoop allows in a user or group name.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./@".contains(c)
}

/// `-chown`'s `[OWNER][:[GROUP]]` as Hadoop reads it: the owner and the group it names (an
/// empty group is none).
///
/// # Errors
/// Hadoop's message for text that is not of that form, or names neither.
pub(super) fn owner_and_group(text: &str) -> Result<(Option<String>, Option<String>), String> {
    let trimmed = text.trim_matches(is_space);
    let (owner, group) = match trimmed.split_once(':') {
        Some((owner, group)) => (owner, Some(group)),
        None => (trimmed, None),
    };
    let valid =
        owner.chars().all(is_name_char) && group.is_none_or(|g| g.chars().all(is_name_char));
    if !valid {
        return Err(format!(
            "'{text}' does not match expected pattern for [owner][:group]."
        ));
    }
    let owner = Some(owner).filter(|o| !o.is_empty()).map(str::to_string);
    let group = group.filter(|g| !g.is_empty()).map(str::to_string);
    if owner.is_none() && group.is_none() {
        return Err(format!("'{text}' does not specify owner or group."));
    }
    Ok((owner, group))
}

/// `-chgrp`'s `GROUP`.
///
/// # Errors
/// Hadoop's message for text that is not a group name.
pub(super) fn group_only(text: &str) -> Result<String, String> {
    let trimmed = text.trim_matches(is_space);
    if trimmed.is_empty() || !trimmed.chars().all(is_name_char) {
        return Err(format!(
            "'{text}' does not match expected pattern for group"
        ));
    }
    Ok(trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chmod(mode: &str, existing: u16, is_dir: bool) -> u16 {
        Mode::parse(mode)
            .unwrap_or_else(|| panic!("{mode}"))
            .apply(existing, is_dir)
    }

    /// Results Hadoop 3.4's shell gave on local files and directories.
    #[test]
    fn modes_do_what_hadoop_does() {
        assert_eq!(chmod("755", 0o644, false), 0o755);
        assert_eq!(chmod("+0640", 0o1777, true), 0o640);
        assert_eq!(chmod("1777", 0o755, true), 0o1777);
        assert_eq!(chmod("go-r,u+x", 0o644, false), 0o700);
        // X: execute for all, since the user has it.
        assert_eq!(chmod("a+X", 0o700, false), 0o711);
        // A later clause replaces an earlier one for the classes it names.
        assert_eq!(chmod("=r,+w", 0o711, false), 0o733);
        assert_eq!(chmod(" u=rw , g+r", 0o000, false), 0o640);
    }

    /// Against an independent reference: `X` as `chmod(1)` applies it, for every starting
    /// mode of a file and of a directory.
    #[test]
    fn capital_x_gives_execute_where_chmod_would() {
        for existing in 0..=0o777u16 {
            for is_dir in [false, true] {
                let any_x = existing & 0o111 != 0;
                let want = if is_dir || any_x {
                    existing | 0o111
                } else {
                    existing
                };
                assert_eq!(chmod("a+X", existing, is_dir), want, "{existing:o}");
                assert_eq!(chmod("a-X", existing, is_dir), existing & !0o111);
            }
        }
    }

    #[test]
    fn the_sticky_bit_goes_with_the_others_class() {
        assert_eq!(chmod("+t", 0o755, true), 0o1755);
        assert_eq!(chmod("o+t", 0o755, true), 0o1755);
        // A clause for the user alone leaves the sticky bit.
        assert_eq!(chmod("u+t", 0o755, true), 0o755);
        assert_eq!(chmod("-t", 0o1777, true), 0o777);
        assert_eq!(chmod("0755", 0o1777, true), 0o755);
    }

    #[test]
    fn malformed_modes_are_refused() {
        for bad in [
            "",
            "xyz",
            "u+rg+w",
            "u=rwx,g=,o=",
            "g=",
            "2755",
            "75",
            "77777",
            "0o755",
            "u+r;g+w",
            "888",
        ] {
            assert_eq!(Mode::parse(bad), None, "{bad:?}");
        }
        assert!(Mode::parse("u+r,").is_some());
        assert!(Mode::parse("u+r,, ").is_some());
    }

    #[test]
    fn owners_and_groups_are_read_as_hadoop_reads_them() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(owner_and_group("ann"), Ok((some("ann"), None)));
        assert_eq!(owner_and_group("ann:"), Ok((some("ann"), None)));
        assert_eq!(owner_and_group(":staff"), Ok((None, some("staff"))));
        assert_eq!(
            owner_and_group("a.b@X-1:g_2"),
            Ok((some("a.b@X-1"), some("g_2")))
        );
        assert!(owner_and_group(":")
            .unwrap_err()
            .ends_with("does not specify owner or group."));
        assert!(owner_and_group("a b")
            .unwrap_err()
            .ends_with("does not match expected pattern for [owner][:group]."));
        assert!(owner_and_group("a:b:c").is_err());
        assert_eq!(group_only("staff"), Ok("staff".to_string()));
        assert!(group_only("a:b")
            .unwrap_err()
            .ends_with("does not match expected pattern for group"));
    }
}

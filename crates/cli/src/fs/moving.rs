//! `sluice fs -cp` and `-mv`: files and directories copied or moved within the stores.

use sluice_io::{FileStatus, IoError, Location, Scheme, Storage, Stores};

use super::{
    full_name, inside, into, missing_parent, options, reason, say, shown, Copy, Shell, Usage,
};

impl Shell {
    /// `-cp [-f] [-d] SRC... DST`: what SRC names (globs expanded) copied to DST on any
    /// store, into it when it is a directory.
    pub(super) fn cp(&self, operands: &[String]) -> Result<u8, Usage> {
        // (`-p`, keeping times and permissions, is refused: the stores set no times.
        // `-d`, writing without a temporary file, is taken and ignored: the copy is still
        // written under one, which costs a rename.)
        let (flags, operands) = options(operands, &["-f", "-d"])?;
        let (dst_text, sources) = two_or_more(operands)?;
        let Some((dst, dst_shown)) = self.destination_location("cp", dst_text) else {
            return Ok(1);
        };
        let dst_text = &dst_shown;
        Ok(self.copy_matches(
            "cp",
            sources,
            (&self.stores, &dst, dst_text),
            flags.contains(&"-f"),
        ))
    }

    /// `-mv SRC... DST`: what SRC names (globs expanded) moved to DST on the same store, into
    /// it when it is a directory. An existing file is never replaced.
    pub(super) fn mv(&self, operands: &[String]) -> Result<u8, Usage> {
        let (_, operands) = options(operands, &[])?;
        let (dst_text, sources) = two_or_more(operands)?;
        let Some((dst, dst_shown)) = self.destination_location("mv", dst_text) else {
            return Ok(1);
        };
        let dst_text = &dst_shown;
        let mut failed = false;
        let mut found: Vec<(String, FileStatus)> = Vec::new();
        for text in sources {
            match self.matches("mv", text) {
                Some(matches) => found.extend(matches.into_iter().map(|s| (shown(text, &s), s))),
                None => failed = true,
            }
        }
        let count = found.len().max(sources.len());
        let Some(dst_is_dir) = self.destination("mv", &self.stores, &dst, dst_text, count) else {
            return Ok(1);
        };
        for (name, status) in found {
            let (target, target_text) = into(&dst, dst_text, dst_is_dir, &status.location);
            if let Err(why) = self.move_one(&status, &name, &target, &target_text) {
                if !why.is_empty() {
                    say("mv", &name, &why);
                }
                failed = true;
            }
        }
        Ok(u8::from(failed))
    }

    /// Moves what `status` describes (named `name`) to `target` (named `target_text`); the
    /// reason it could not, or an empty reason when it said so itself.
    fn move_one(
        &self,
        status: &FileStatus,
        name: &str,
        target: &Location,
        target_text: &str,
    ) -> Result<(), String> {
        let from = &status.location;
        if from.scheme() != target.scheme() || from.authority() != target.authority() {
            return Err("Does not match target filesystem".into());
        }
        if status.is_dir && inside(target, from) {
            eprintln!("mv: `{name}' to `{target_text}': is a subdirectory of itself");
            return Err(String::new());
        }
        if self
            .stores
            .status(target)
            .map_err(|e| reason(&e))?
            .is_some()
        {
            say("mv", target_text, "File exists");
            return Err(String::new());
        }
        if missing_parent(&self.stores, target)
            .map_err(|e| reason(&e))?
            .is_some()
        {
            // Hadoop adds the target's full name.
            let why = format!("No such file or directory: `{}'", full_name(target));
            say("mv", target_text, &why);
            return Err(String::new());
        }
        // An object store has no directories to rename: each object is copied, then the
        // originals deleted, as Hadoop's S3 client moves a prefix.
        let renamed = if status.is_dir && from.scheme() == Scheme::S3 {
            Err(None)
        } else {
            self.stores.rename(from, target).map_err(Some)
        };
        match renamed {
            Ok(()) => Ok(()),
            Err(Some(e)) if !across_devices(&e) => Err(reason(&e)),
            Err(_) => self.copy_then_delete(status, target, target_text),
        }
    }

    /// Moves by copying, then deleting the original once the copy is whole: across local
    /// file systems, and for an object store's directories.
    fn copy_then_delete(
        &self,
        status: &FileStatus,
        target: &Location,
        target_text: &str,
    ) -> Result<(), String> {
        let copy = Copy {
            from: &self.stores,
            to: &self.stores,
            overwrite: false,
        };
        let mut errors = Vec::new();
        copy.tree(status, target, target_text, &mut errors);
        if let Some((name, why)) = errors.first() {
            // The original stays whole; what was copied of it goes.
            let _ = self.stores.delete_tree(target);
            return Err(format!("{why} (copying to `{name}')"));
        }
        self.stores
            .delete_tree(&status.location)
            .map(drop)
            .map_err(|e| reason(&e))
    }

    /// Copies what each of `sources` names (globs expanded) to `dst` (named `dst_text`) on
    /// `to`, saying what failed; the exit status.
    pub(super) fn copy_matches(
        &self,
        cmd: &str,
        sources: &[String],
        (to, dst, dst_text): (&Stores, &Location, &str),
        overwrite: bool,
    ) -> u8 {
        let mut failed = false;
        // Globs first: two matches need a directory to go into, as two operands do.
        let mut found: Vec<(String, FileStatus)> = Vec::new();
        for text in sources {
            match self.matches(cmd, text) {
                Some(matches) => found.extend(matches.into_iter().map(|s| (shown(text, &s), s))),
                None => failed = true,
            }
        }
        let count = found.len().max(sources.len());
        let Some(dst_is_dir) = self.destination(cmd, to, dst, dst_text, count) else {
            return 1;
        };
        for (name, status) in found {
            let (target, target_text) = into(dst, dst_text, dst_is_dir, &status.location);
            failed |= self.copy_top(
                cmd,
                (&self.stores, &status, &name),
                (to, &target, &target_text),
                overwrite,
            );
        }
        u8::from(failed)
    }
}

/// The last operand (the destination) and the others (at least one), or the usage error.
fn two_or_more(operands: &[String]) -> Result<(&String, &[String]), Usage> {
    match operands.split_last() {
        Some((dst, sources)) if !sources.is_empty() => Ok((dst, sources)),
        _ => Err(Usage(format!(
            "Not enough arguments: expected 2 but got {}",
            operands.len()
        ))),
    }
}

/// Whether a rename failed only because its ends are on different local file systems.
fn across_devices(error: &IoError) -> bool {
    matches!(error, IoError::Write { source, .. } if source.raw_os_error() == Some(nix::libc::EXDEV))
}

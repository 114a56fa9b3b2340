use std::fmt;
use std::io::Read;
use std::path::Path;

use crate::NetError;

/// The fewest bytes a secret may have: below 128 bits, guessing becomes thinkable.
const MIN_LEN: usize = 16;
/// The length of a generated secret (the output size of SHA-256, HMAC's natural key size).
const GENERATED_LEN: usize = 32;
/// The largest secret file read: anything bigger is not a secret file, and reading it whole
/// would let a wrong path cost unbounded memory.
const MAX_FILE_LEN: u16 = 4096;

/// A shared secret that every peer of a job proves it knows. 32 random bytes by default.
///
/// It keys the HMAC-SHA256 of the handshake ([crate docs](crate#handshake)); it never crosses
/// the wire. Its `Debug` prints `Secret(..)`, so it cannot leak into a log by accident.
#[derive(Clone)]
pub struct Secret {
    bytes: Box<[u8]>,
}

impl Secret {
    /// A new secret of 32 bytes from the operating system's random number generator.
    ///
    /// # Errors
    ///
    /// [`NetError::Secret`] if the generator is unavailable.
    pub fn generate() -> Result<Secret, NetError> {
        let mut bytes = vec![0u8; GENERATED_LEN];
        getrandom::fill(&mut bytes).map_err(|e| NetError::Secret {
            reason: format!("the system's random number generator failed: {e}"),
        })?;
        Ok(Secret {
            bytes: bytes.into(),
        })
    }

    /// A secret made of `bytes`.
    ///
    /// # Errors
    ///
    /// [`NetError::Secret`] if there are fewer than 16 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Secret, NetError> {
        if bytes.len() < MIN_LEN {
            return Err(NetError::Secret {
                reason: format!(
                    "{} bytes is too short, a secret needs at least {MIN_LEN}",
                    bytes.len()
                ),
            });
        }
        Ok(Secret {
            bytes: bytes.into(),
        })
    }

    /// The secret as lowercase hexadecimal, e.g. to hand it to a worker in its environment.
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(self.bytes.len() * 2);
        for &b in self.bytes.iter() {
            text.push(char::from(DIGITS[usize::from(b >> 4)]));
            text.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
        text
    }

    /// The secret that [`to_hex`](Secret::to_hex) printed (either case; surrounding whitespace
    /// is ignored).
    ///
    /// # Errors
    ///
    /// [`NetError::Secret`] if the text is not hexadecimal or decodes to fewer than 16 bytes.
    /// The message gives the position of a bad character, never the text itself.
    pub fn from_hex(text: &str) -> Result<Secret, NetError> {
        let digits = text.trim().as_bytes();
        if !digits.len().is_multiple_of(2) {
            return Err(NetError::Secret {
                reason: format!("odd number of hex digits ({})", digits.len()),
            });
        }
        let nibble = |i: usize| -> Result<u8, NetError> {
            match digits[i] {
                c @ b'0'..=b'9' => Ok(c - b'0'),
                c @ b'a'..=b'f' => Ok(c - b'a' + 10),
                c @ b'A'..=b'F' => Ok(c - b'A' + 10),
                _ => Err(NetError::Secret {
                    reason: format!("character {} is not a hex digit", i + 1),
                }),
            }
        };
        let bytes = (0..digits.len() / 2)
            .map(|i| Ok((nibble(2 * i)? << 4) | nibble(2 * i + 1)?))
            .collect::<Result<Vec<u8>, NetError>>()?;
        Secret::from_bytes(&bytes)
    }

    /// Reads a secret file: its contents with surrounding whitespace trimmed, at least 16 bytes.
    ///
    /// The contents are the secret as they are (a file holding hex text gives a secret of those
    /// ASCII characters, not of the bytes they spell), so every peer reading the same file
    /// agrees. `openssl rand -hex 32 > secret && chmod 600 secret` makes a good one.
    ///
    /// # Errors
    ///
    /// [`NetError::Secret`], naming the path, if the file cannot be read, is over 4 KiB, holds
    /// fewer than 16 bytes, or (on Unix) may be read by its group or by others
    /// (`mode & 0o077 != 0`): as ssh does for private keys, a secret others could read is
    /// refused rather than trusted.
    pub fn read_file(path: &Path) -> Result<Secret, NetError> {
        let fail = |reason: String| NetError::Secret {
            reason: format!("{}: {reason}", path.display()),
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        // The mode of the open file, not of the path, so that nothing can swap the file
        // between the check and the read.
        let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
        // First: a directory's mode says nothing about a secret.
        if !meta.is_file() {
            return Err(fail("not a regular file".to_string()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 {
                return Err(fail(format!(
                    "mode {:03o} lets others read it; make it private (chmod 600)",
                    mode & 0o777
                )));
            }
        }
        let mut contents = Vec::new();
        file.take(u64::from(MAX_FILE_LEN) + 1)
            .read_to_end(&mut contents)
            .map_err(|e| fail(e.to_string()))?;
        if contents.len() > usize::from(MAX_FILE_LEN) {
            return Err(fail(format!(
                "larger than {MAX_FILE_LEN} bytes, not a secret file"
            )));
        }
        Secret::from_bytes(contents.trim_ascii()).map_err(|e| match e {
            NetError::Secret { reason } => fail(reason),
            other => other,
        })
    }

    /// The key bytes, for the handshake.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_case() {
        let s = Secret::generate().unwrap();
        assert_eq!(s.as_bytes().len(), 32);
        let hex = s.to_hex();
        assert_eq!(hex.len(), 64);
        assert_eq!(Secret::from_hex(&hex).unwrap().as_bytes(), s.as_bytes());
        let upper = format!("  {}\n", hex.to_uppercase());
        assert_eq!(Secret::from_hex(&upper).unwrap().as_bytes(), s.as_bytes());
        // Two generated secrets differ: the generator is really used.
        assert_ne!(Secret::generate().unwrap().as_bytes(), s.as_bytes());
    }

    #[test]
    fn hex_known_value() {
        let s = Secret::from_bytes(&[
            0x00, 0x01, 0xab, 0xff, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
        ])
        .unwrap();
        assert_eq!(s.to_hex(), "0001abff05060708090a0b0c0d0e0f10");
    }

    #[test]
    fn bad_hex_refused_without_echo() {
        let text = "zz".repeat(16);
        let err = Secret::from_hex(&text).unwrap_err().to_string();
        assert!(err.contains("character 1"), "{err}");
        assert!(!err.contains("zz"), "{err}");
        assert!(Secret::from_hex(&"a".repeat(33)).is_err());
    }

    #[test]
    fn too_short_refused() {
        assert!(matches!(
            Secret::from_bytes(&[7; 15]),
            Err(NetError::Secret { .. })
        ));
        assert!(Secret::from_bytes(&[7; 16]).is_ok());
        assert!(Secret::from_hex(&"ab".repeat(15)).is_err());
    }

    #[test]
    fn debug_hides_the_bytes() {
        let s = Secret::from_bytes(b"0123456789abcdefXYZ").unwrap();
        assert_eq!(format!("{s:?}"), "Secret(..)");
        assert_eq!(format!("{:?}", Some(s)), "Some(Secret(..))");
    }

    #[cfg(unix)]
    #[test]
    fn read_file_checks_mode_and_trims() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, b"  0123456789abcdef-job-42\n").unwrap();

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Secret::read_file(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("644"), "{err}");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(Secret::read_file(&path).is_err());

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let s = Secret::read_file(&path).unwrap();
        assert_eq!(s.as_bytes(), b"0123456789abcdef-job-42");
    }

    #[cfg(unix)]
    #[test]
    fn read_file_refuses_short_and_missing() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        std::fs::write(&path, b"   tooshort   \n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = Secret::read_file(&path).unwrap_err().to_string();
        assert!(err.contains("short") && err.contains("too short"), "{err}");

        let missing = dir.path().join("missing");
        let err = Secret::read_file(&missing).unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");

        // A directory is not a secret file, whatever its mode says.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = Secret::read_file(&sub).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}

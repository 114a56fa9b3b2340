//! Block compression codecs and their names.
//!
//! The codec is chosen per run by the user (`--codec lz4`), but each block records the codec it
//! was actually stored with: a block that does not shrink is stored uncompressed (id 0) whatever
//! the run's codec, so readers never need to know the writer's setting.

use std::fmt;

use crate::FormatError;

/// Zstandard level used when none is given (`zstd` alone) and when decoding a header id, where
/// the level does not matter.
const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// Levels accepted by [`Codec::from_str`](std::str::FromStr::from_str) for `zstd:LEVEL`.
const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

/// Compression applied to each block of a run.
///
/// `Lz4` is the default: it costs little CPU and halves typical text spills. `Zstd` trades CPU for
/// smaller files; `None` is best when the disk is faster than the compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Blocks are stored as they are.
    None,
    /// LZ4 block compression.
    #[default]
    Lz4,
    /// Zstandard at the given level (1..=22; 1 and 3 are sensible for spills).
    Zstd {
        /// Compression level passed to zstd.
        level: i32,
    },
}

impl Codec {
    /// The id stored in each block header.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Lz4 => 1,
            Codec::Zstd { .. } => 2,
        }
    }

    /// The codec for a block header id.
    ///
    /// The level is not stored in blocks (decompression does not need it), so id 2 gives
    /// `Zstd { level: 3 }`.
    ///
    /// # Errors
    /// [`FormatError::UnknownCodec`] for an id that no codec has.
    pub fn from_id(id: u8) -> Result<Codec, FormatError> {
        match id {
            0 => Ok(Codec::None),
            1 => Ok(Codec::Lz4),
            2 => Ok(Codec::Zstd {
                level: DEFAULT_ZSTD_LEVEL,
            }),
            _ => Err(FormatError::UnknownCodec(format!("id {id}"))),
        }
    }

    /// Human-readable name (`none`, `lz4`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zstd { .. } => "zstd",
        }
    }
}

/// Formats the codec so that [`str::parse`] gives it back: `none`, `lz4` or `zstd:LEVEL`.
impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Codec::Zstd { level } => write!(f, "zstd:{level}"),
            other => f.write_str(other.name()),
        }
    }
}

impl std::str::FromStr for Codec {
    type Err = FormatError;

    /// Parses `none`, `lz4`, `zstd` or `zstd:LEVEL` (case-insensitive). `zstd` alone means level 3.
    ///
    /// Surrounding whitespace is ignored. A level outside 1..=22 (or not a number) is rejected
    /// with [`FormatError::UnknownCodec`] whose text says so.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        match lower.as_str() {
            "none" => return Ok(Codec::None),
            "lz4" => return Ok(Codec::Lz4),
            "zstd" => {
                return Ok(Codec::Zstd {
                    level: DEFAULT_ZSTD_LEVEL,
                })
            }
            _ => {}
        }
        let Some(level) = lower.strip_prefix("zstd:") else {
            return Err(FormatError::UnknownCodec(s.to_string()));
        };
        match level.parse::<i32>() {
            Ok(level) if ZSTD_LEVELS.contains(&level) => Ok(Codec::Zstd { level }),
            _ => Err(FormatError::UnknownCodec(format!(
                "{s} (zstd level must be an integer in 1..=22)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Codec, FormatError> {
        s.parse()
    }

    #[test]
    fn parses_names_case_insensitively() {
        assert_eq!(parse("none").unwrap(), Codec::None);
        assert_eq!(parse("NONE").unwrap(), Codec::None);
        assert_eq!(parse("lz4").unwrap(), Codec::Lz4);
        assert_eq!(parse("Lz4").unwrap(), Codec::Lz4);
        assert_eq!(parse("zstd").unwrap(), Codec::Zstd { level: 3 });
        assert_eq!(parse("ZSTD").unwrap(), Codec::Zstd { level: 3 });
        assert_eq!(parse(" lz4 ").unwrap(), Codec::Lz4);
    }

    #[test]
    fn parses_zstd_levels_in_range() {
        assert_eq!(parse("zstd:1").unwrap(), Codec::Zstd { level: 1 });
        assert_eq!(parse("Zstd:7").unwrap(), Codec::Zstd { level: 7 });
        assert_eq!(parse("zstd:22").unwrap(), Codec::Zstd { level: 22 });
    }

    #[test]
    fn rejects_bad_names_and_levels() {
        for bad in [
            "", "gzip", "lz4hc", "zstd:", "zstd:0", "zstd:23", "zstd:-1", "zstd:x", "zstd:3:4",
            "none:1", "lz4:1", "zstd 3",
        ] {
            match parse(bad) {
                Err(FormatError::UnknownCodec(text)) => {
                    assert!(text.contains(bad.trim()), "{bad:?} -> {text:?}")
                }
                other => panic!("{bad:?} parsed as {other:?}"),
            }
        }
    }

    #[test]
    fn ids_round_trip_and_unknown_ids_fail() {
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd { level: 3 }] {
            assert_eq!(Codec::from_id(codec.id()).unwrap(), codec);
        }
        assert_eq!(Codec::None.id(), 0);
        assert_eq!(Codec::Lz4.id(), 1);
        assert_eq!(Codec::Zstd { level: 19 }.id(), 2);
        for id in 3..=u8::MAX {
            assert!(matches!(
                Codec::from_id(id),
                Err(FormatError::UnknownCodec(_))
            ));
        }
    }

    #[test]
    fn names_and_display_round_trip() {
        assert_eq!(Codec::None.name(), "none");
        assert_eq!(Codec::Lz4.name(), "lz4");
        assert_eq!(Codec::Zstd { level: 9 }.name(), "zstd");
        assert_eq!(Codec::default(), Codec::Lz4);
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd { level: 9 }] {
            assert_eq!(parse(&codec.to_string()).unwrap(), codec);
        }
    }
}

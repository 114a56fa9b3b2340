use crate::FormatError;

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
        todo!()
    }

    /// The codec for a block header id.
    ///
    /// # Errors
    /// [`FormatError::UnknownCodec`] for an id that no codec has.
    pub fn from_id(id: u8) -> Result<Codec, FormatError> {
        todo!("{id}")
    }

    /// Human-readable name (`none`, `lz4`, `zstd`).
    pub fn name(self) -> &'static str {
        todo!()
    }
}

impl std::str::FromStr for Codec {
    type Err = FormatError;

    /// Parses `none`, `lz4`, `zstd` or `zstd:LEVEL` (case-insensitive). `zstd` alone means level 3.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        todo!("{s}")
    }
}

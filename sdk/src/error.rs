//! The error a plugin returns from its trait methods.

use std::fmt;

use crate::abi::status;

/// What went wrong inside a plugin callback. The export macro turns it into a
/// status code and a message for the host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SdkError {
    /// A parameter is unknown, malformed or out of range.
    InvalidParam(String),
    /// The destination buffer is too small.
    DstTooSmall {
        /// Bytes that were needed, when known (0 otherwise).
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// Compressed input is not a valid stream.
    Corrupt(String),
    /// Anything else.
    Failed(String),
}

impl SdkError {
    /// A generic failure with a message.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }

    /// A corrupt-input failure with a message.
    pub fn corrupt(message: impl fmt::Display) -> Self {
        Self::Corrupt(message.to_string())
    }

    /// The ABI status code for this error.
    pub fn status(&self) -> i32 {
        match self {
            Self::InvalidParam(_) => status::INVALID_PARAM,
            Self::DstTooSmall { .. } => status::DST_TOO_SMALL,
            Self::Corrupt(_) => status::CORRUPT,
            Self::Failed(_) => status::FAILED,
        }
    }
}

impl fmt::Display for SdkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidParam(m) => write!(f, "invalid parameter: {m}"),
            Self::DstTooSmall { needed, available } => {
                write!(f, "output buffer too small: {available} bytes available, {needed} needed")
            }
            Self::Corrupt(m) => write!(f, "corrupt input: {m}"),
            Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SdkError {}

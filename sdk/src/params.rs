//! Plugin parameters: the key/value table of the plugin's section in a profile.

use std::str::FromStr;

use crate::SdkError;

/// The parameters given to a plugin at module init, as text.
///
/// A plugin names the keys it accepts with [`Params::accept_only`] first, so an
/// operator's typo is refused instead of silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    items: Vec<(String, String)>,
}

impl Params {
    /// Parameters from key/value pairs.
    pub fn new<K: Into<String>, V: Into<String>>(items: impl IntoIterator<Item = (K, V)>) -> Self {
        Self { items: items.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// Every pair, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.items.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether no parameter was given.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Refuses any key not in `known`, naming it and the accepted keys.
    ///
    /// # Errors
    /// [`SdkError::InvalidParam`] for the first unknown key.
    pub fn accept_only(&self, known: &[&str]) -> Result<(), SdkError> {
        match self.items.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some((key, _)) if known.is_empty() => {
                Err(SdkError::InvalidParam(format!("unknown key `{key}`: this plugin takes no parameters")))
            }
            Some((key, _)) => {
                Err(SdkError::InvalidParam(format!("unknown key `{key}` (accepted: {})", known.join(", "))))
            }
        }
    }

    /// The raw text of `key`, the last one when it was given twice.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.items.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key` parsed as `T`, or `default` when absent.
    ///
    /// # Errors
    /// [`SdkError::InvalidParam`] when the text does not parse.
    pub fn get_or<T: FromStr>(&self, key: &str, default: T) -> Result<T, SdkError> {
        match self.get_str(key) {
            None => Ok(default),
            Some(text) => text.trim().parse().map_err(|_| {
                SdkError::InvalidParam(format!(
                    "`{key}` = `{text}` is not a valid {}",
                    std::any::type_name::<T>()
                ))
            }),
        }
    }

    /// An integer parameter in `range`, or `default` when absent.
    ///
    /// # Errors
    /// [`SdkError::InvalidParam`] when it does not parse or is out of range.
    pub fn get_in_range(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<i64>,
        default: i64,
    ) -> Result<i64, SdkError> {
        let value = self.get_or(key, default)?;
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(SdkError::InvalidParam(format!(
                "`{key}` = {value} is out of range {}..={}",
                range.start(),
                range.end()
            )))
        }
    }
}

/// An unsigned 64-bit number written in decimal (`1048576`) or in hex with a
/// `0x` prefix (`0x100000`), as plugin parameters write pfns, addresses and
/// patterns; `None` for anything else (signs, blanks, overflow).
pub fn parse_u64(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let p = Params::new([("level", "3"), ("lvl", "4")]);
        let err = p.accept_only(&["level"]).unwrap_err();
        assert!(err.to_string().contains("`lvl`"), "{err}");
        assert!(
            Params::new([("x", "1")]).accept_only(&[]).unwrap_err().to_string().contains("no parameters")
        );
    }

    #[test]
    fn numbers_are_decimal_or_hex() {
        assert_eq!(parse_u64("0x100000"), Some(0x100000));
        assert_eq!(parse_u64("0XfF"), Some(255));
        assert_eq!(parse_u64("4096"), Some(4096));
        assert_eq!(parse_u64("0xffffffffffffffff"), Some(u64::MAX));
        for bad in ["", "0x", "-1", "+1", " 1", "0x1g", "1e3", "0x10000000000000000"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn values_parse_and_range_check() {
        let p = Params::new([("level", "3"), ("level", "5"), ("bad", "x")]);
        assert_eq!(p.get_in_range("level", 1..=9, 1).unwrap(), 5);
        assert_eq!(p.get_in_range("absent", 1..=9, 1).unwrap(), 1);
        assert!(p.get_in_range("level", 1..=4, 1).is_err());
        assert!(p.get_or::<i64>("bad", 0).is_err());
    }
}

//! S3-compatible object stores (issue 42, docs/object-storage.md): a dump
//! written straight into a bucket as it runs ([`ObjectSink`], behind the
//! writers' [`vmdump_format::sink::Sink`]), and dumps read back by ranges
//! ([`ObjectReader`], a [`vmdump_format::ReadAt`]).
//!
//! Everything about a store is here: its address, its key, signing,
//! retries. The rest of vmdump sees a sink and a reader.

mod client;
mod read;
mod settings;
mod sign;
mod upload;
mod xml;

pub use client::{Request, Response, Store, StoreConfig, StoreError, TrafficCounts};
pub use read::ObjectReader;
pub use settings::{Environment, StoreSettings, TargetError, template_key};
pub use sign::Credentials;
pub use upload::{MAX_PARTS, MIN_PART, ObjectSink};

use std::fmt;
use std::path::Path;

/// An object: `s3://BUCKET/KEY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectName {
    /// The bucket.
    pub bucket: String,
    /// The key (may be empty for a prefix of the whole bucket).
    pub key: String,
}

impl ObjectName {
    /// Parses `s3://BUCKET/KEY` (`None` for anything else: a local path).
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix("s3://")?;
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        (!bucket.is_empty()).then(|| Self { bucket: bucket.into(), key: key.into() })
    }

    /// The object a command-line path names, if it is an `s3://` URL.
    pub fn of_path(path: &Path) -> Option<Self> {
        path.to_str().and_then(Self::parse)
    }

    /// The object `suffix` appended to this one's key (`.triage.json`).
    pub fn with_suffix(&self, suffix: &str) -> Self {
        Self { bucket: self.bucket.clone(), key: format!("{}{suffix}", self.key) }
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// Puts `body` whole as object `name`, with `headers` (type, metadata).
///
/// # Errors
/// The store's error.
pub fn put_object(
    store: &Store,
    name: &ObjectName,
    body: &[u8],
    mut headers: Vec<(&'static str, String)>,
) -> Result<(), StoreError> {
    headers.push(("content-md5", upload::content_md5(body)));
    let req = Request { method: "PUT", bucket: &name.bucket, key: &name.key, query: Vec::new(), headers, body };
    store.send(&req).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_urls() {
        let name = ObjectName::parse("s3://dumps/host/a b").unwrap();
        assert_eq!((name.bucket.as_str(), name.key.as_str()), ("dumps", "host/a b"));
        assert_eq!(name.to_string(), "s3://dumps/host/a b");
        assert_eq!(name.with_suffix(".dmesg").key, "host/a b.dmesg");
        assert_eq!(ObjectName::parse("s3://dumps").unwrap().key, "");
        assert!(ObjectName::parse("/var/crash/vmcore").is_none() && ObjectName::parse("s3:///k").is_none());
    }
}

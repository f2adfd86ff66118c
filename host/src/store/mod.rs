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
pub use upload::{MAX_PARTS, MIN_PART, ObjectSink, ObjectStream};

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

/// Opens object `name` to read by ranges, from the store the system
/// profile's `[output]` and the process's environment name.
///
/// # Errors
/// No key, a bad setting, or the store's error (no such object).
pub fn open_object(name: ObjectName) -> anyhow::Result<ObjectReader> {
    let profile = crate::profile::ProfileSource::of_process(None).load()?;
    let settings = StoreSettings::resolve(&profile.output, &|var| std::env::var(var).ok())?;
    let store = std::sync::Arc::new(Store::new(settings.config)?);
    Ok(ObjectReader::open(store, name)?)
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
    let req =
        Request { method: "PUT", bucket: &name.bucket, key: &name.key, query: Vec::new(), headers, body };
    store.send(&req).map(drop)
}

/// An object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
}

/// The objects of `bucket` whose keys start with `prefix`, every page of
/// the listing.
///
/// # Errors
/// The store's error.
pub fn list_objects(store: &Store, bucket: &str, prefix: &str) -> Result<Vec<Listed>, StoreError> {
    let mut listed = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut query = vec![("list-type", "2".to_string()), ("prefix", prefix.to_string())];
        query.extend(token.take().map(|t| ("continuation-token", t)));
        let req = Request { method: "GET", bucket, key: "", query, headers: Vec::new(), body: &[] };
        let response = store.send(&req)?;
        let text = String::from_utf8_lossy(&response.body).into_owned();
        for entry in xml::elements(&text, "Contents") {
            let key = xml::text(entry.as_bytes(), "Key").unwrap_or_default();
            let size = xml::text(entry.as_bytes(), "Size").and_then(|s| s.parse().ok()).unwrap_or(0);
            listed.push(Listed { key, size });
        }
        token = xml::text(&response.body, "NextContinuationToken");
        if token.is_none() || xml::text(&response.body, "IsTruncated").as_deref() != Some("true") {
            return Ok(listed);
        }
    }
}

/// Object `name` whole, or its bytes `range` (`start-end`, inclusive).
///
/// # Errors
/// The store's error (no such object).
pub fn get_object(store: &Store, name: &ObjectName, range: Option<&str>) -> Result<Response, StoreError> {
    let headers = range.map(|r| ("range", format!("bytes={r}"))).into_iter().collect();
    let req = Request {
        method: "GET",
        bucket: &name.bucket,
        key: &name.key,
        query: Vec::new(),
        headers,
        body: &[],
    };
    store.send(&req)
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

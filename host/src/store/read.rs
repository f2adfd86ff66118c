//! A dump read from its object by ranges ([`ObjectReader`]): `vmdump info`,
//! `triage`, `dmesg` and `verify` read what they need, never the whole
//! object. Reads go through a small cache of the ranges fetched: the many
//! small reads of a header, a bitmap or descriptors cost a request of 16 KiB
//! each place, and reads that go on where the last fetch ended (a verify, a
//! copy) fetch ever larger ranges, up to 1 MiB; 32 MiB of them are kept.

use std::io;
use std::sync::{Arc, Mutex};

use vmdump_format::ReadAt;

use super::ObjectName;
use super::client::{Request, Store, StoreError};

/// Bytes fetched by a request that does not continue the last one: the
/// header, a bitmap's window, a page's descriptors.
const SMALL_FETCH: u64 = 16 << 10;
/// The most fetched at once: requests that continue the last one (a
/// verify, a copy) double up to this.
const LARGE_FETCH: u64 = 1 << 20;
/// Bytes of fetched ranges kept (the kernel's map reads some regions twice).
const KEPT_BYTES: usize = 32 << 20;

/// The object `name` of `store`, read by ranges.
pub struct ObjectReader {
    store: Arc<Store>,
    name: ObjectName,
    size: u64,
    /// Ranges fetched lately, most recent last: (start, bytes).
    cache: Mutex<Vec<(u64, Arc<Vec<u8>>)>>,
}

impl ObjectReader {
    /// Opens `name`: asks its size.
    ///
    /// # Errors
    /// The store's error (no such object, no access).
    pub fn open(store: Arc<Store>, name: ObjectName) -> Result<Self, StoreError> {
        let req = Request {
            method: "HEAD",
            bucket: &name.bucket,
            key: &name.key,
            query: vec![],
            headers: vec![],
            body: &[],
        };
        let response = store.send(&req)?;
        let size = response.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(Self { store, name, size, cache: Mutex::new(Vec::new()) })
    }

    /// The object read.
    pub fn name(&self) -> &ObjectName {
        &self.name
    }

    /// The store's client (for its traffic counts).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// A fetched range that holds `at`, from the cache or the store: what
    /// continues a range fetched is fetched twice as large as it, up to
    /// [`LARGE_FETCH`]; anything else [`SMALL_FETCH`].
    fn range_at(&self, at: u64) -> io::Result<(u64, Arc<Vec<u8>>)> {
        let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hit) =
            cache.iter().position(|(start, bytes)| (*start..start + bytes.len() as u64).contains(&at))
        {
            let hit = cache.remove(hit);
            cache.push(hit.clone());
            return Ok(hit);
        }
        let len = match cache.iter().find(|(start, bytes)| start + bytes.len() as u64 == at) {
            Some((_, bytes)) => (2 * bytes.len() as u64).min(LARGE_FETCH),
            None => SMALL_FETCH,
        };
        // Up to the next range already here: no byte is fetched twice.
        let next = cache.iter().map(|(start, _)| *start).filter(|&start| start > at).min();
        let end = (at + len).min(self.size).min(next.unwrap_or(u64::MAX));
        let req = Request {
            method: "GET",
            bucket: &self.name.bucket,
            key: &self.name.key,
            query: vec![],
            headers: vec![("range", format!("bytes={at}-{}", end - 1))],
            body: &[],
        };
        let response = self.store.send(&req).map_err(io::Error::other)?;
        if response.body.len() as u64 != end - at {
            return Err(io::Error::other(format!(
                "{}: {} bytes at {at:#x} asked, {} received (status {})",
                self.name,
                end - at,
                response.body.len(),
                response.status
            )));
        }
        while !cache.is_empty()
            && cache.iter().map(|(_, b)| b.len()).sum::<usize>() + response.body.len() > KEPT_BYTES
        {
            cache.remove(0);
        }
        let fetched = (at, Arc::new(response.body));
        cache.push(fetched.clone());
        Ok(fetched)
    }
}

/// What reading the object cost, on stderr when it is closed: the bytes
/// fetched against its size (a dump is read by ranges, never whole).
impl Drop for ObjectReader {
    fn drop(&mut self) {
        let traffic = self.store.traffic();
        let share = 100.0 * traffic.bytes_received as f64 / self.size.max(1) as f64;
        eprintln!(
            "vmdump: read {} bytes of {} ({share:.2} % of its {} bytes) in {} requests",
            traffic.bytes_received, self.name, self.size, traffic.requests
        );
    }
}

impl ReadAt for ObjectReader {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.size).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {:#x} bytes at {offset:#x} beyond the end of {} ({:#x} bytes)",
                    buf.len(),
                    self.name,
                    self.size
                ),
            )
        })?;
        let mut at = offset;
        while at < end {
            let (start, bytes) = self.range_at(at)?;
            let from = (at - start) as usize;
            let len = (end - at).min(start + bytes.len() as u64 - at) as usize;
            let done = (at - offset) as usize;
            buf[done..done + len].copy_from_slice(&bytes[from..from + len]);
            at += len as u64;
        }
        Ok(())
    }
}

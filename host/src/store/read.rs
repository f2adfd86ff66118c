//! A dump read from its object by ranges ([`ObjectReader`]): `vmdump info`,
//! `triage`, `dmesg` and `verify` read what they need, never the whole
//! object. Reads go through a small cache of aligned blocks, so the many
//! small reads of a header, a bitmap or a descriptor cost one request each
//! block.

use std::io;
use std::sync::{Arc, Mutex};

use vmdump_format::ReadAt;

use super::ObjectName;
use super::client::{Request, Store, StoreError};

/// Bytes fetched in one request, and the unit of the cache.
const BLOCK: u64 = 1 << 20;
/// Blocks kept.
const BLOCKS: usize = 8;

/// The object `name` of `store`, read by ranges.
pub struct ObjectReader {
    store: Arc<Store>,
    name: ObjectName,
    size: u64,
    /// Recently read blocks, most recent last: (index, bytes).
    cache: Mutex<Vec<(u64, Arc<Vec<u8>>)>>,
}

impl ObjectReader {
    /// Opens `name`: asks its size.
    ///
    /// # Errors
    /// The store's error (no such object, no access).
    pub fn open(store: Arc<Store>, name: ObjectName) -> Result<Self, StoreError> {
        let req = Request { method: "HEAD", bucket: &name.bucket, key: &name.key, query: vec![], headers: vec![], body: &[] };
        let response = store.send(&req)?;
        let size = response.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(Self { store, name, size, cache: Mutex::new(Vec::with_capacity(BLOCKS)) })
    }

    /// The object read.
    pub fn name(&self) -> &ObjectName {
        &self.name
    }

    /// The store's client (for its traffic counts).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Block `index`, from the cache or the store.
    fn block(&self, index: u64) -> io::Result<Arc<Vec<u8>>> {
        let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = cache.iter().position(|(i, _)| *i == index) {
            let hit = cache.remove(at);
            cache.push(hit.clone());
            return Ok(hit.1);
        }
        let start = index * BLOCK;
        let end = (start + BLOCK).min(self.size);
        let req = Request {
            method: "GET",
            bucket: &self.name.bucket,
            key: &self.name.key,
            query: vec![],
            headers: vec![("range", format!("bytes={start}-{}", end - 1))],
            body: &[],
        };
        let response = self.store.send(&req).map_err(io::Error::other)?;
        if response.body.len() as u64 != end - start {
            return Err(io::Error::other(format!(
                "{}: {} bytes at {start:#x} asked, {} received (status {})",
                self.name,
                end - start,
                response.body.len(),
                response.status
            )));
        }
        if cache.len() == BLOCKS {
            cache.remove(0);
        }
        let block = Arc::new(response.body);
        cache.push((index, block.clone()));
        Ok(block)
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
                format!("read of {:#x} bytes at {offset:#x} beyond the end of {} ({:#x} bytes)", buf.len(), self.name, self.size),
            )
        })?;
        let mut at = offset;
        while at < end {
            let block = self.block(at / BLOCK)?;
            let from = (at % BLOCK) as usize;
            let len = (end - at).min(BLOCK - at % BLOCK) as usize;
            let done = (at - offset) as usize;
            buf[done..done + len].copy_from_slice(&block[from..from + len]);
            at += len as u64;
        }
        Ok(())
    }
}

//! A dump written into an object by multipart upload while it runs
//! ([`ObjectSink`]): the same positioned writes as a file, gathered into
//! parts of fixed ranges; a part goes up once the writer has settled every
//! byte of it, and part 1 (the header, rewritten at the end) goes up last.
//! The object exists only once the upload is completed, so an object that
//! exists is the whole dump, or one whose header says it is incomplete.

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use md5::{Digest, Md5};
use memmap2::MmapMut;
use vmdump_format::sink::{Sink, SinkError};

use super::ObjectName;
use super::client::{Request, Store, StoreError};
use super::xml;

/// S3's smallest part (all but the last).
pub const MIN_PART: u64 = 5 << 20;
/// S3's largest part.
const MAX_PART: u64 = 5 << 30;
/// S3's most parts in one upload.
pub const MAX_PARTS: u32 = 10_000;
/// Completions asked again when the store says a part does not match after
/// a retry, and the wait before each (docs/object-storage.md, "Faults").
const LATE_PART_WAITS: u32 = 5;
const LATE_PART_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Parts whose upload needed a retry, kept until the completion (the
/// memory of as many parts): an attempt that timed out can reach the store
/// late, cut short, and replace the part (below).
const KEPT_RETRIED_PARTS: usize = 4;
/// How long the cleanup of a failed dump retries a request: the store that
/// failed it is likely still away.
const CLEANUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

/// Parts of `size` bytes from byte `start`, numbered from `first`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    first: u32,
    size: u64,
}

/// Where each part of the object lies: segments of equal parts; a size
/// hint adds a segment of larger parts after the parts already touched.
#[derive(Debug)]
struct PartPlan {
    segments: Vec<Segment>,
}

impl PartPlan {
    fn new(size: u64) -> Self {
        Self { segments: vec![Segment { start: 0, first: 1, size }] }
    }

    /// The number and byte range of the part that holds `offset`.
    fn part_at(&self, offset: u64) -> (u32, Range<u64>) {
        let seg =
            self.segments.iter().rev().find(|s| s.start <= offset).expect("the first segment starts at 0");
        let index = (offset - seg.start) / seg.size;
        let start = seg.start + index * seg.size;
        (seg.first + index as u32, start..start + seg.size)
    }

    /// The byte range of part `number`.
    fn range(&self, number: u32) -> Range<u64> {
        let seg =
            self.segments.iter().rev().find(|s| s.first <= number).expect("part 1 is in the first segment");
        let start = seg.start + u64::from(number - seg.first) * seg.size;
        start..start + seg.size
    }

    /// Parts after byte `from` (a part boundary) big enough that `len`
    /// bytes fit in S3's 10,000 parts.
    fn fit(&mut self, from: u64, len: u64) {
        let (next, _) = self.part_at(from);
        let room = u64::from(MAX_PARTS.saturating_sub(next).max(1));
        let need = len.saturating_sub(from).div_ceil(room).next_multiple_of(1 << 20);
        let current = self.segments.last().expect("one segment").size;
        if need > current {
            self.segments.push(Segment { start: from, first: next, size: need.min(MAX_PART) });
        }
    }
}

/// Byte ranges the writer will not write again, merged.
#[derive(Debug, Default)]
struct Settled(Vec<Range<u64>>);

impl Settled {
    fn add(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let (mut start, mut end) = (range.start, range.end);
        self.0.retain(|r| {
            let apart = r.end < start || r.start > end;
            if !apart {
                (start, end) = (start.min(r.start), end.max(r.end));
            }
            apart
        });
        let at = self.0.partition_point(|r| r.start < start);
        self.0.insert(at, start..end);
    }

    fn covers(&self, range: &Range<u64>) -> bool {
        self.0.iter().any(|r| r.start <= range.start && range.end <= r.end)
    }
}

/// The dump as an object, uploaded in parts while it is written.
pub struct ObjectSink {
    store: Arc<Store>,
    name: ObjectName,
    /// Headers of the object (type, metadata), sent when the upload starts.
    headers: Vec<(&'static str, String)>,
    plan: PartPlan,
    /// Parts being filled, by number.
    open: BTreeMap<u32, MmapMut>,
    settled: Settled,
    /// Parts uploaded: number and ETag.
    uploaded: BTreeMap<u32, String>,
    /// The bytes of parts whose upload needed a retry, to send again if
    /// the completion finds them replaced ([`KEPT_RETRIED_PARTS`] at most).
    retried: BTreeMap<u32, MmapMut>,
    upload_id: Option<String>,
    /// One past the last byte written: the object's length.
    end: u64,
    written: u64,
    finished: bool,
}

impl ObjectSink {
    /// An object `name` in `store`, in parts of `part_size` bytes (at least
    /// [`MIN_PART`]) until a size hint asks for larger ones.
    pub fn new(
        store: Arc<Store>,
        name: ObjectName,
        part_size: u64,
        headers: Vec<(&'static str, String)>,
    ) -> Self {
        Self {
            store,
            name,
            headers,
            plan: PartPlan::new(part_size.clamp(MIN_PART, MAX_PART)),
            open: BTreeMap::new(),
            settled: Settled::default(),
            uploaded: BTreeMap::new(),
            retried: BTreeMap::new(),
            upload_id: None,
            end: 0,
            written: 0,
            finished: false,
        }
    }

    /// Parts held in memory now (for tests of the bound).
    pub fn parts_in_memory(&self) -> usize {
        self.open.len()
    }

    fn request<'a>(
        &'a self,
        method: &'static str,
        query: Vec<(&'static str, String)>,
        body: &'a [u8],
    ) -> Request<'a> {
        Request { method, bucket: &self.name.bucket, key: &self.name.key, query, headers: Vec::new(), body }
    }

    /// The upload id, starting the upload the first time.
    fn upload_id(&mut self) -> Result<String, StoreError> {
        if let Some(id) = &self.upload_id {
            return Ok(id.clone());
        }
        let mut req = self.request("POST", vec![("uploads", String::new())], &[]);
        req.headers = self.headers.clone();
        let response = self.store.send(&req)?;
        let id = xml::text(&response.body, "UploadId").ok_or_else(|| StoreError::Refused {
            endpoint: self.store.endpoint().into(),
            request: format!("POST {}/{}?uploads", self.name.bucket, self.name.key),
            status: response.status,
            code: "NoUploadId".into(),
            message: "the answer names no upload".into(),
        })?;
        self.upload_id = Some(id.clone());
        Ok(id)
    }

    /// The bytes of part `number` up to the object's end.
    fn part_len(&self, number: u32) -> usize {
        let range = self.plan.range(number);
        (range.end.min(self.end) - range.start) as usize
    }

    /// Uploads part `number` (its bytes up to the object's end).
    fn upload_part(&mut self, number: u32) -> Result<(), StoreError> {
        let len = self.part_len(number);
        let buffer = match self.open.remove(&number) {
            Some(buffer) => buffer,
            None => part_buffer(len).map_err(|cause| StoreError::Memory { bytes: len, cause })?,
        };
        let id = self.upload_id()?;
        let retries = self.store.traffic().retries;
        let etag = self.send_part(number, &buffer[..len], &id)?;
        self.uploaded.insert(number, etag);
        if self.store.traffic().retries > retries && self.retried.len() < KEPT_RETRIED_PARTS {
            self.retried.insert(number, buffer);
        }
        Ok(())
    }

    /// Sends `body` as part `number` of upload `id`; its ETag.
    fn send_part(&self, number: u32, body: &[u8], id: &str) -> Result<String, StoreError> {
        let query = vec![("partNumber", number.to_string()), ("uploadId", id.to_owned())];
        let mut req = self.request("PUT", query, body);
        req.headers.push(("content-md5", content_md5(body)));
        let response = self.store.send(&req)?;
        Ok(response.header("etag").unwrap_or_default().to_string())
    }

    /// Sends again the parts kept because their upload needed a retry.
    fn resend_retried(&self, id: &str) -> Result<(), StoreError> {
        for (&number, buffer) in &self.retried {
            self.send_part(number, &buffer[..self.part_len(number)], id)?;
        }
        Ok(())
    }

    /// Uploads every part but the first that is settled whole.
    fn upload_settled(&mut self) -> Result<(), StoreError> {
        let ready: Vec<u32> = self
            .open
            .keys()
            .copied()
            .filter(|&n| n > 1 && self.settled.covers(&self.plan.range(n)))
            .collect();
        // Parts the writer never wrote but zeros into (bitmaps of memory
        // holes) are settled as well; they go up as zeros at the end.
        ready.into_iter().try_for_each(|n| self.upload_part(n))
    }

    /// Uploads what is left, part 1 last, and completes the upload; an
    /// object of one part is put whole.
    fn complete(&mut self) -> Result<(), StoreError> {
        let (last, _) = self.plan.part_at(self.end.saturating_sub(1));
        if last == 1 && self.upload_id.is_none() {
            let len = self.end as usize;
            let buffer = match self.open.remove(&1) {
                Some(buffer) => buffer,
                None => part_buffer(len).map_err(|cause| StoreError::Memory { bytes: len, cause })?,
            };
            let body = &buffer[..len];
            let mut req = self.request("PUT", Vec::new(), body);
            req.headers = self.headers.clone();
            req.headers.push(("content-md5", content_md5(body)));
            self.store.send(&req)?;
            return Ok(());
        }
        for number in (2..=last).chain([1]) {
            if !self.uploaded.contains_key(&number) {
                self.upload_part(number)?;
            }
        }
        let parts: String = self
            .uploaded
            .iter()
            .map(|(n, etag)| {
                format!("<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>", xml::escape(etag))
            })
            .collect();
        let body = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
        let id = self.upload_id()?;
        let complete = self.request("POST", vec![("uploadId", id.clone())], body.as_bytes());
        let mut late = 0;
        let response = loop {
            match self.store.send(&complete) {
                // A retry of a completion whose answer was lost: the object is there.
                Err(StoreError::Refused { code, .. }) if code == "NoSuchUpload" && self.object_is_whole() => {
                    self.upload_id = None;
                    return Ok(());
                }
                // An attempt of a part that timed out can reach the store
                // after its retry (a store that was stopped, a slow path),
                // cut short, and the store takes it as the part's newest
                // copy (Garage does, though it fails that request). The
                // parts that were retried go up again, a little later.
                Err(StoreError::Refused { code, .. })
                    if code == "InvalidPart"
                        && late < LATE_PART_WAITS
                        && self.store.traffic().retries > 0 =>
                {
                    late += 1;
                    std::thread::sleep(LATE_PART_WAIT);
                    self.resend_retried(&id)?;
                }
                other => break other?,
            }
        };
        // An error may come in a 200 answer once the store has started it.
        if let Some(code) = xml::text(&response.body, "Code") {
            let message = xml::text(&response.body, "Message").unwrap_or_default();
            return Err(StoreError::Refused {
                endpoint: self.store.endpoint().into(),
                request: format!("POST {}/{} (complete)", self.name.bucket, self.name.key),
                status: response.status,
                code,
                message,
            });
        }
        self.upload_id = None;
        Ok(())
    }

    /// Whether the object exists with the length written (its upload was
    /// completed).
    fn object_is_whole(&self) -> bool {
        let head = self.request("HEAD", Vec::new(), &[]);
        self.store.send(&head).ok().and_then(|r| r.header("content-length")?.parse::<u64>().ok())
            == Some(self.end)
    }

    /// Aborts the uploads of this key other than `keep`: those a retried
    /// start left when its answer was lost (the store started them, vmdump
    /// never heard of them). Each that cannot be aborted is named.
    fn abort_strays(&self, keep: Option<&str>) {
        let query = vec![("prefix", self.name.key.clone()), ("uploads", String::new())];
        let req = Request {
            method: "GET",
            bucket: &self.name.bucket,
            key: "",
            query,
            headers: Vec::new(),
            body: &[],
        };
        let Ok(listing) = self.store.send_within(&req, CLEANUP_BUDGET) else { return };
        let text = String::from_utf8_lossy(&listing.body).into_owned();
        for upload in xml::elements(&text, "Upload") {
            let (key, id) = (xml::text(upload.as_bytes(), "Key"), xml::text(upload.as_bytes(), "UploadId"));
            let (Some(key), Some(id)) = (key, id) else { continue };
            if key != self.name.key || Some(id.as_str()) == keep {
                continue;
            }
            if let Err(e) = self
                .store
                .send_within(&self.request("DELETE", vec![("uploadId", id.clone())], &[]), CLEANUP_BUDGET)
            {
                eprintln!("vmdump: warning: a stray upload {id} of {} could not be aborted ({e})", self.name);
            }
        }
    }

    /// Aborts the upload, if one was started and not completed.
    fn abort(&mut self) {
        let Some(id) = self.upload_id.take() else { return };
        self.abort_strays(Some(&id));
        if let Err(e) = self
            .store
            .send_within(&self.request("DELETE", vec![("uploadId", id.clone())], &[]), CLEANUP_BUDGET)
        {
            eprintln!(
                "vmdump: warning: the unfinished upload {id} of {} could not be aborted ({e}); \
                 it holds space until the store's lifecycle rule or an operator removes it",
                self.name
            );
        }
    }

    fn failed(&self, offset: u64, len: usize, e: StoreError) -> SinkError {
        SinkError::Io { offset, len, cause: io::Error::other(e) }
    }
}

/// A part's buffer: an anonymous mapping, resident only where it is
/// written and given back to the system whole when dropped (a heap buffer
/// of megabytes would be zeroed whole, and stay with the process once freed).
fn part_buffer(len: usize) -> std::io::Result<MmapMut> {
    MmapMut::map_anon(len.max(1))
}

/// The Content-MD5 header of `body`.
pub(super) fn content_md5(body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(body))
}

impl Sink for ObjectSink {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), SinkError> {
        let end = offset + data.len() as u64;
        let mut at = offset;
        while at < end {
            let (number, range) = self.plan.part_at(at);
            if number > MAX_PARTS {
                let why = format!("the object would need more than {MAX_PARTS} parts: raise part_size");
                return Err(SinkError::Io { offset, len: data.len(), cause: io::Error::other(why) });
            }
            let upto = end.min(range.end);
            let bytes = &data[(at - offset) as usize..(upto - offset) as usize];
            if self.uploaded.contains_key(&number) {
                let why = format!("bytes {at:#x}.. written again after part {number} was uploaded");
                return Err(SinkError::Io { offset, len: data.len(), cause: io::Error::other(why) });
            }
            // Zeros where nothing was written are what a part holds anyway.
            if self.open.contains_key(&number) || bytes.iter().any(|&b| b != 0) {
                let part = match self.open.entry(number) {
                    std::collections::btree_map::Entry::Occupied(part) => part.into_mut(),
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        let len = (range.end - range.start) as usize;
                        let fresh =
                            part_buffer(len).map_err(|cause| SinkError::Io { offset: at, len, cause })?;
                        slot.insert(fresh)
                    }
                };
                let from = (at - range.start) as usize;
                part[from..from + bytes.len()].copy_from_slice(bytes);
            }
            at = upto;
        }
        self.end = self.end.max(end);
        self.written += data.len() as u64;
        Ok(())
    }

    fn settle(&mut self, range: Range<u64>) -> Result<(), SinkError> {
        let (offset, len) = (range.start, (range.end - range.start) as usize);
        self.settled.add(range);
        self.upload_settled().map_err(|e| self.failed(offset, len, e))
    }

    fn expect_at_most(&mut self, len: u64) {
        let (_, touched) = self.plan.part_at(self.end.saturating_sub(1));
        self.plan.fit(touched.end, len);
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        if self.finished {
            return Ok(());
        }
        let retried = self.store.traffic().retries > 0;
        self.complete().map_err(|e| self.failed(0, 0, e))?;
        self.finished = true;
        if retried {
            self.abort_strays(None);
        }
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.written
    }
}

/// A stream (an encrypted dump) written into an [`ObjectSink`] from its
/// start: each byte is final once written, so each part goes up as soon as
/// it is full. The bound of the stream's size comes through `size_hint`
/// (0 until known).
pub struct ObjectStream<'a> {
    object: &'a mut ObjectSink,
    size_hint: Arc<AtomicU64>,
    hinted: u64,
}

impl<'a> ObjectStream<'a> {
    /// Appends to `object`, which has nothing written yet.
    pub fn new(object: &'a mut ObjectSink, size_hint: Arc<AtomicU64>) -> Self {
        Self { object, size_hint, hinted: 0 }
    }
}

impl io::Write for ObjectStream<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let hint = self.size_hint.load(Ordering::Relaxed);
        if hint != self.hinted {
            self.object.expect_at_most(hint);
            self.hinted = hint;
        }
        let at = self.object.end;
        let end = at + buf.len() as u64;
        self.object.write_at(at, buf).and_then(|()| self.object.settle(at..end)).map_err(io::Error::other)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ObjectSink {
    fn drop(&mut self) {
        if !self.finished {
            self.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_object_and_a_hint_makes_later_parts_larger() {
        let mut plan = PartPlan::new(MIN_PART);
        assert_eq!(plan.part_at(0), (1, 0..MIN_PART));
        assert_eq!(plan.part_at(3 * MIN_PART + 1), (4, 3 * MIN_PART..4 * MIN_PART));
        let two_tib = 2u64 << 40;
        plan.fit(4 * MIN_PART, two_tib);
        let (last, range) = plan.part_at(two_tib - 1);
        assert!(last <= MAX_PARTS, "{last}");
        assert_eq!(plan.range(last), range);
        assert_eq!(plan.part_at(4 * MIN_PART).0, 5);
        assert_eq!(plan.range(4), 3 * MIN_PART..4 * MIN_PART);
        let mut small = PartPlan::new(8 << 20);
        small.fit(8 << 20, 1 << 30);
        assert_eq!(small.segments.len(), 1, "a small object keeps its parts");
    }

    #[test]
    fn settled_ranges_merge() {
        let mut settled = Settled::default();
        settled.add(10..20);
        settled.add(30..40);
        assert!(!settled.covers(&(15..35)));
        settled.add(20..30);
        assert!(settled.covers(&(10..40)) && !settled.covers(&(9..40)));
        assert_eq!(settled.0.len(), 1);
    }
}

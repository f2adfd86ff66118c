//! A live system's classification, made once. The struct pages of a
//! running kernel (`/proc/kcore`) change while it is dumped, but the pages
//! a dump's second pass reads must be exactly those its first pass set in
//! the bitmaps: on a live input the first cursor over the whole machine
//! records what it excluded, and every later cursor replays the record
//! (one bit per page: 32 MiB for each TiB of RAM, only for live dumps).

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use super::{ExcludeError, WindowFilter, bit};
use crate::classify::ClassCounts;

/// The excluded pfns of the first complete pass, once there was one.
pub struct Record {
    max_pfn: u64,
    bits: Mutex<Option<Arc<Vec<u64>>>>,
}

impl Record {
    /// An empty record of a machine of `max_pfn` pfns.
    pub fn new(max_pfn: u64) -> Self {
        Self { max_pfn, bits: Mutex::new(None) }
    }

    /// The replay of the record once a pass made it, else `make`'s cursor,
    /// recorded: kept when it has been through every window.
    ///
    /// # Errors
    /// `make`'s.
    pub fn cursor<'a>(
        &'a self,
        make: impl FnOnce() -> Result<Box<dyn WindowFilter + 'a>, ExcludeError>,
    ) -> Result<Box<dyn WindowFilter + 'a>, ExcludeError> {
        if let Some(bits) = self.bits.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            return Ok(Box::new(Replay { bits }));
        }
        let bits = vec![0; self.max_pfn.div_ceil(64) as usize];
        Ok(Box::new(Recording { inner: make()?, bits, next_pfn: 0, record: self }))
    }
}

/// A cursor whose exclusions are recorded.
struct Recording<'a> {
    inner: Box<dyn WindowFilter + 'a>,
    bits: Vec<u64>,
    /// The end of the windows seen one after the other from pfn 0.
    next_pfn: u64,
    record: &'a Record,
}

impl WindowFilter for Recording<'_> {
    fn exclude(
        &mut self,
        window: Range<u64>,
        is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        self.inner.exclude(window.clone(), is_ram, excluded, counts)?;
        copy_bits(excluded, 0, &mut self.bits, window.start, window.end - window.start);
        if window.start == self.next_pfn {
            self.next_pfn = window.end;
        }
        Ok(())
    }

    fn plugin_counts(&self) -> Vec<(String, u64)> {
        self.inner.plugin_counts()
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if self.next_pfn >= self.record.max_pfn {
            let bits = Arc::new(std::mem::take(&mut self.bits));
            *self.record.bits.lock().unwrap_or_else(PoisonError::into_inner) = Some(bits);
        }
    }
}

/// The record played back (it counts no classes: the first pass did).
struct Replay {
    bits: Arc<Vec<u64>>,
}

impl WindowFilter for Replay {
    fn exclude(
        &mut self,
        window: Range<u64>,
        _is_ram: &dyn Fn(u64) -> bool,
        excluded: &mut [u64],
        _counts: &mut ClassCounts,
    ) -> Result<(), ExcludeError> {
        copy_bits(&self.bits, window.start, excluded, 0, window.end - window.start);
        Ok(())
    }
}

/// ORs `n` bits of `from` starting at bit `at` into `to` starting at bit
/// `into`: whole words where both start on one (every window does), then
/// bit by bit.
fn copy_bits(from: &[u64], at: u64, to: &mut [u64], into: u64, n: u64) {
    let mut done = 0;
    if at.is_multiple_of(64) && into.is_multiple_of(64) {
        let words = (n / 64) as usize;
        let (to_words, from_words) = (&mut to[(into / 64) as usize..], &from[(at / 64) as usize..]);
        to_words.iter_mut().zip(from_words).take(words).for_each(|(d, s)| *d |= s);
        done = words as u64 * 64;
    }
    for i in (done..n).filter(|&i| bit(from, at + i)) {
        to[((into + i) / 64) as usize] |= 1 << ((into + i) % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Excludes the pfns its `changes`-th pass is told to, as a running
    /// kernel's struct pages would change between passes.
    struct Moving {
        pass: usize,
    }

    impl WindowFilter for Moving {
        fn exclude(
            &mut self,
            window: Range<u64>,
            _: &dyn Fn(u64) -> bool,
            excluded: &mut [u64],
            _: &mut ClassCounts,
        ) -> Result<(), ExcludeError> {
            for pfn in window.clone().filter(|pfn| (pfn + self.pass as u64).is_multiple_of(3)) {
                excluded[((pfn - window.start) / 64) as usize] |= 1 << ((pfn - window.start) % 64);
            }
            Ok(())
        }
    }

    fn excluded_by(cursor: &mut dyn WindowFilter, windows: &[Range<u64>]) -> Vec<u64> {
        let mut pfns = Vec::new();
        for w in windows {
            let mut bits = vec![0; (w.end - w.start).div_ceil(64) as usize];
            cursor.exclude(w.clone(), &|_| true, &mut bits, &mut ClassCounts::default()).unwrap();
            pfns.extend(
                w.clone().filter(|p| bits[((p - w.start) / 64) as usize] >> ((p - w.start) % 64) & 1 == 1),
            );
        }
        pfns
    }

    #[test]
    fn later_passes_replay_the_first_complete_one_whatever_the_windows() {
        let record = Record::new(1000);
        let mut pass = 0;
        let mut next = || {
            pass += 1;
            let p = pass;
            move || Ok(Box::new(Moving { pass: p }) as Box<dyn WindowFilter>)
        };
        // A partial pass (it stops at 512) records nothing.
        let partial = excluded_by(record.cursor(next()).unwrap().as_mut(), std::slice::from_ref(&(0..512)));
        let first = excluded_by(record.cursor(next()).unwrap().as_mut(), &[0..512, 512..1000]);
        assert_ne!(partial, first[..partial.len()], "the filter moved between passes");
        let again = excluded_by(record.cursor(next()).unwrap().as_mut(), &[0..512, 512..1000]);
        assert_eq!(again, first);
        // Windows of other shapes, skipping some: the same pfns where they look.
        let odd = excluded_by(record.cursor(next()).unwrap().as_mut(), &[3..70, 70..700, 900..1000]);
        let want: Vec<u64> = first.iter().copied().filter(|p| (3..700).contains(p) || *p >= 900).collect();
        assert_eq!(odd, want);
    }
}
